//! storsim-record: the writer and the reader agree, detection is certain, and every way a
//! recording can be malformed is reported at its line.

mod common;

use common::{data, error_for, expect_malformed, options, read_all, record, write_temp};
use storsim_core::{Op, Prng};
use storsim_workload::trace::{
    detect, inspect, open, open_reader, recorded_ios, RecordWriter, RecordedIo, TraceFormat,
    TraceOptions,
};
use storsim_workload::{Origin, Pacing, Record, WorkloadError};

const FORMAT: TraceFormat = TraceFormat::named("storsim-record");

const SEED: u64 = 0x5eed_12ec;

/// The three lines every version 1 recording starts with.
const PREAMBLE: &str = "# storsim-record v1\n# device=test\narrival_ns,op,offset_bytes,len_bytes,intended_finish_ns,actual_finish_ns\n";

/// The three lines every version 2 recording (the one the writer writes) starts with.
const PREAMBLE_V2: &str = "# storsim-record v2\n# device=test\nreceived_ns,arrival_ns,op,offset_bytes,len_bytes,intended_finish_ns,actual_finish_ns\n";

fn sample_records() -> Vec<Record> {
    vec![
        record(0, Op::Write, 0, 4096, 0, 4),
        record(120_000, Op::Read, 8192, 65_536, 0, 5),
        record(250_000, Op::Flush, 0, 0, 0, 6),
        record(300_000, Op::Trim, 0, 1_048_576, 0, 7),
    ]
}

/// The records the reader makes of `io` at line `origin`.
fn as_record(io: &RecordedIo, origin: u64) -> Record {
    record(
        io.arrival_ns,
        io.op,
        io.offset_bytes,
        io.len_bytes,
        0,
        origin,
    )
}

/// A random request: receptions mostly advance and sometimes stand still; the offer to the
/// model follows after an intake that is now and then long enough to pass later receptions
/// (as a FLUSH's `fdatasync` does), so arrivals go back in file order. Flushes get random
/// ranges, which the writer must drop.
fn random_io(rng: &mut Prng, clock: &mut u64) -> RecordedIo {
    if rng.below(10) != 0 {
        *clock += rng.below(200_000);
    }
    let intake_ns = match rng.below(10) {
        0 => rng.below(2_000_000),
        1 => 0,
        _ => rng.below(5_000),
    };
    let arrival_ns = *clock + intake_ns;
    let op = Op::ALL[rng.below(4) as usize];
    let intended_finish_ns = arrival_ns + rng.below(5_000_000);
    RecordedIo {
        received_ns: *clock,
        arrival_ns,
        op,
        offset_bytes: rng.below(1 << 40) & !511,
        len_bytes: 1 + rng.below(2 << 20),
        intended_finish_ns,
        actual_finish_ns: intended_finish_ns + rng.below(100_000),
    }
}

/// What reading back a written request gives: a flush loses its range.
fn normalised(io: RecordedIo) -> RecordedIo {
    if io.op == Op::Flush {
        RecordedIo {
            offset_bytes: 0,
            len_bytes: 0,
            ..io
        }
    } else {
        io
    }
}

fn write_recording(header: &[(String, String)], ios: &[RecordedIo]) -> Vec<u8> {
    let mut writer = RecordWriter::new(Vec::new(), header).unwrap();
    for io in ios {
        writer.write(io).unwrap();
    }
    writer.finish().unwrap()
}

#[test]
fn sample_parses_to_exact_records() {
    let path = data("storsim_record_sample.rec");
    assert_eq!(detect(&path).unwrap(), FORMAT);
    // The default options: detection, a parse thread and concatenated devices, of which a
    // recording has one.
    let workload = open(&path, &TraceOptions::default()).unwrap();
    assert_eq!(
        (workload.pacing, workload.origin, workload.format),
        (Pacing::Open, Origin::Line, Some("storsim-record"))
    );
    let records: Vec<Record> = workload.records.map(Result::unwrap).collect();
    assert_eq!(records, sample_records());
}

#[test]
fn sample_keeps_its_finish_times_for_analysis() {
    let ios: Vec<RecordedIo> = recorded_ios(&data("storsim_record_sample.rec"))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(ios.len(), 4);
    assert_eq!(
        ios[1],
        RecordedIo {
            received_ns: 120_000,
            arrival_ns: 120_000,
            op: Op::Read,
            offset_bytes: 8192,
            len_bytes: 65_536,
            intended_finish_ns: 180_000,
            actual_finish_ns: 180_004,
        }
    );
    let lateness: Vec<u64> = ios.iter().map(RecordedIo::lateness_ns).collect();
    assert_eq!(lateness, vec![12, 4, 1, 3]);
}

#[test]
fn writer_and_reader_round_trip() {
    eprintln!("seed {SEED:#x}");
    let mut rng = Prng::new(SEED);
    let mut clock = 0;
    let ios: Vec<RecordedIo> = (0..5000).map(|_| random_io(&mut rng, &mut clock)).collect();
    let header = vec![
        ("device".to_string(), "tlc-nvme".to_string()),
        ("note".to_string(), "two\nlines\r\n".to_string()),
        ("seed".to_string(), SEED.to_string()),
    ];
    let bytes = write_recording(&header, &ios);
    let text = String::from_utf8(bytes.clone()).unwrap();
    let lines: Vec<&str> = text.lines().take(3).collect();
    assert_eq!(
        lines,
        vec![
            "# storsim-record v2",
            "# device=tlc-nvme note=two lines   seed=1592595180",
            "received_ns,arrival_ns,op,offset_bytes,len_bytes,intended_finish_ns,actual_finish_ns",
        ]
    );
    let path = write_temp("record-round-trip", ".rec", &bytes);
    assert_eq!(detect(&path).unwrap(), FORMAT);
    // Rows start at line 4, after the magic, metadata and column header lines. The records
    // come in the order the model was offered them, rows in file order among equal offers.
    let mut expected: Vec<Record> = ios
        .iter()
        .enumerate()
        .map(|(i, io)| as_record(&normalised(*io), i as u64 + 4))
        .collect();
    expected.sort_by_key(|r| (r.timestamp_ns, r.origin));
    let file_order: Vec<u64> = ios.iter().map(|io| io.arrival_ns).collect();
    assert!(
        file_order.windows(2).filter(|w| w[1] < w[0]).count() > 100,
        "the test needs rows whose offers go back in file order"
    );
    for parse_thread in [true, false] {
        let opts = TraceOptions {
            parse_thread,
            ..TraceOptions::default()
        };
        let records: Vec<Record> = open(&path, &opts)
            .unwrap()
            .records
            .map(Result::unwrap)
            .collect();
        assert_eq!(records, expected, "parse thread {parse_thread}");
    }
    let read_back: Vec<RecordedIo> = recorded_ios(&path).unwrap().map(Result::unwrap).collect();
    let written: Vec<RecordedIo> = ios.into_iter().map(normalised).collect();
    assert_eq!(read_back, written);
    std::fs::remove_file(path).unwrap();
}

#[test]
fn an_empty_header_writes_no_metadata_line() {
    let bytes = write_recording(&[], &[]);
    assert_eq!(
        String::from_utf8(bytes.clone()).unwrap(),
        "# storsim-record v2\nreceived_ns,arrival_ns,op,offset_bytes,len_bytes,intended_finish_ns,actual_finish_ns\n"
    );
    // A recording of nothing is an empty workload, not an error.
    let path = write_temp("record-empty", ".rec", &bytes);
    assert_eq!(detect(&path).unwrap(), FORMAT);
    assert_eq!(
        open(&path, &TraceOptions::default())
            .unwrap()
            .records
            .count(),
        0
    );
    std::fs::remove_file(path).unwrap();
}

#[test]
fn the_writer_refuses_what_the_reader_would() {
    let good = RecordedIo {
        received_ns: 900,
        arrival_ns: 1_000,
        op: Op::Write,
        offset_bytes: 0,
        len_bytes: 4096,
        intended_finish_ns: 2_000,
        actual_finish_ns: 2_001,
    };
    for bad in [
        RecordedIo {
            intended_finish_ns: 999,
            ..good
        },
        RecordedIo {
            actual_finish_ns: 999,
            ..good
        },
        RecordedIo {
            offset_bytes: u64::MAX,
            ..good
        },
        RecordedIo {
            received_ns: 1_001,
            ..good
        },
    ] {
        let mut writer = RecordWriter::new(Vec::new(), &[]).unwrap();
        let err = writer.write(&bad).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{bad:?}");
        // Nothing of the refused row reached the output.
        let text = String::from_utf8(writer.finish().unwrap()).unwrap();
        assert_eq!(text.lines().count(), 2, "{text}");
    }
    // Rows go in the order received: a row received before the previous one is refused.
    let mut writer = RecordWriter::new(Vec::new(), &[]).unwrap();
    writer.write(&good).unwrap();
    let earlier = RecordedIo {
        received_ns: 899,
        ..good
    };
    let err = writer.write(&earlier).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    writer.write(&good).unwrap();
    let text = String::from_utf8(writer.finish().unwrap()).unwrap();
    assert_eq!(text.lines().count(), 4, "{text}");
}

#[test]
fn detection_is_certain_and_names_other_versions() {
    // Rows that would also pass for another format's do not matter: the magic decides.
    let path = write_temp(
        "record-detect",
        "",
        format!("{PREAMBLE}0,W,0,4096,1,1\n").as_bytes(),
    );
    assert_eq!(detect(&path).unwrap(), FORMAT);
    std::fs::remove_file(path).unwrap();

    let v3 = "# storsim-record v3\narrival_ns,op,offset_bytes,len_bytes,intended_finish_ns,actual_finish_ns\n0,W,0,4096,1,1\n";
    let path = write_temp("record-v3", "", v3.as_bytes());
    match detect(&path) {
        Err(WorkloadError::Malformed {
            position, message, ..
        }) => {
            assert_eq!(position, "line 1");
            assert_eq!(
                message,
                "unsupported storsim-record version \"v3\": this storsim reads versions v1 and v2"
            );
        }
        other => panic!("expected a malformed-record error, got {other:?}"),
    }
    std::fs::remove_file(path).unwrap();
    // Naming the format does not get past the version either.
    assert_eq!(
        error_for(FORMAT, v3),
        "line 1: unsupported storsim-record version \"v3\": this storsim reads versions v1 and v2"
    );
}

#[test]
fn structural_errors_name_the_line() {
    assert_eq!(
        error_for(FORMAT, "# storsim-record v1\n# device=x\n0,W,0,4096,1,1\n"),
        "line 3: expected the column header `arrival_ns,op,offset_bytes,len_bytes,intended_finish_ns,actual_finish_ns`, found \"0,W,0,4096,1,1\""
    );
    assert_eq!(
        error_for(FORMAT, "# storsim-record v1\n# device=x\n"),
        "line 2: the file ends before the column header `arrival_ns,op,offset_bytes,len_bytes,intended_finish_ns,actual_finish_ns`"
    );
    assert_eq!(
        error_for(FORMAT, "# device=x\n# storsim-record v1\n"),
        "line 1: expected the magic line `# storsim-record v2` first, found \"# device=x\""
    );
    assert_eq!(
        error_for(
            FORMAT,
            "arrival_ns,op,offset_bytes,len_bytes,intended_finish_ns,actual_finish_ns\n"
        ),
        "line 1: expected the magic line `# storsim-record v2` first, found \"arrival_ns,op,offset_bytes,len_bytes,int...\""
    );
    assert_eq!(
        error_for(FORMAT, "# storsim-record\n"),
        "line 1: the magic line names no version; expected `# storsim-record v2`"
    );
}

#[test]
fn row_errors_say_what_was_expected_and_found() {
    let row_error = |row: &str| error_for(FORMAT, &format!("{PREAMBLE}0,W,0,512,1,1\n{row}\n"));
    assert_eq!(
        row_error("120000,R,8192,65536,180000"),
        "line 5: expected 6 comma-separated fields (arrival_ns,op,offset_bytes,len_bytes,intended_finish_ns,actual_finish_ns), found 5"
    );
    assert_eq!(
        row_error("1.5,R,8192,65536,180000,180004"),
        "line 5: field 1 (arrival_ns): expected an integer number of nanoseconds, found \"1.5\""
    );
    assert_eq!(
        row_error("120000,R,8k,65536,180000,180004"),
        "line 5: field 3 (offset_bytes): expected a byte offset, found \"8k\""
    );
    assert_eq!(
        row_error("120000,R,8192,-1,180000,180004"),
        "line 5: field 4 (len_bytes): expected a number of bytes, found \"-1\""
    );
    assert_eq!(
        row_error("120000,X,8192,65536,180000,180004"),
        "line 5: field 2 (op): expected R (read), W (write), T (trim) or F (flush), found \"X\""
    );
    assert_eq!(
        row_error("120000,R,8192,65536,119999,180004"),
        "line 5: field 5 (intended_finish_ns): expected an integer number of nanoseconds no earlier than arrival_ns (120000), found \"119999\""
    );
    assert_eq!(
        row_error("120000,R,8192,65536,180000,100"),
        "line 5: field 6 (actual_finish_ns): expected an integer number of nanoseconds no earlier than arrival_ns (120000), found \"100\""
    );
    assert_eq!(
        row_error("120000,R,8192,65536,180000,soon"),
        "line 5: field 6 (actual_finish_ns): expected an integer number of nanoseconds no earlier than arrival_ns (120000), found \"soon\""
    );
    assert_eq!(
        row_error("250000,F,0,512,260000,260001"),
        "line 5: field 4 (len_bytes): expected 0 for a flush, found \"512\""
    );
    assert_eq!(
        row_error("250000,F,4096,0,260000,260001"),
        "line 5: field 3 (offset_bytes): expected 0 for a flush, found \"4096\""
    );
    assert_eq!(
        row_error("0,W,18446744073709551615,1,1,1"),
        "line 5: the request at byte offset 18446744073709551615 with length 1 ends beyond 2^64 bytes"
    );
}

#[test]
fn malformed_sample_names_file_line_and_expectation() {
    let path = data("storsim_record_bad.rec");
    assert_eq!(detect(&path).unwrap(), FORMAT);
    let (items, _) = read_all(&path, &options(FORMAT, false));
    assert_eq!(items.len(), 2);
    expect_malformed(
        &items[1],
        &path,
        "line 5",
        "field 2 (op): expected R (read), W (write), T (trim) or F (flush), found \"X\"",
    );
    // The analysis stream stops at the same place with the same error.
    let ios: Vec<Result<RecordedIo, WorkloadError>> = recorded_ios(&path).unwrap().collect();
    assert_eq!(ios.len(), 2);
    assert_eq!(
        ios[1].as_ref().unwrap_err().to_string(),
        items[1].as_ref().unwrap_err().to_string()
    );
}

#[test]
fn skip_bad_counts_every_bad_row() {
    let (items, skipped) = read_all(&data("storsim_record_bad.rec"), &options(FORMAT, true));
    let origins: Vec<u64> = items.into_iter().map(|r| r.unwrap().origin).collect();
    assert_eq!(origins, vec![4, 9]);
    assert_eq!(skipped, 4);
}

#[test]
fn skip_bad_without_a_column_header_skips_each_row_once() {
    let text = "# storsim-record v1\n0,W,0,4096,1,1\n# a comment\n5,R,0,4096,6,6\n";
    let path = write_temp("record-no-header", ".rec", text.as_bytes());
    let (items, skipped) = read_all(&path, &options(FORMAT, true));
    assert!(items.is_empty());
    assert_eq!(skipped, 2);
    // Cut short before the column header: the end of the file is the one bad place.
    std::fs::write(&path, "# storsim-record v1\n# device=x\n").unwrap();
    let (items, skipped) = read_all(&path, &options(FORMAT, true));
    assert!(items.is_empty());
    assert_eq!(skipped, 1);
    std::fs::remove_file(path).unwrap();
}

#[test]
fn zero_length_transfers_are_ignored_but_kept_for_analysis() {
    let text = format!("{PREAMBLE}0,W,0,4096,10,11\n5,R,4096,0,10,12\n6,T,0,0,10,13\n");
    let path = write_temp("record-zero", ".rec", text.as_bytes());
    let workload = open(&path, &TraceOptions::default()).unwrap();
    let ignored = workload.ignored.clone();
    let records: Vec<Record> = workload.records.map(Result::unwrap).collect();
    assert_eq!(records, vec![record(0, Op::Write, 0, 4096, 0, 4)]);
    assert_eq!(ignored.get(), 2);
    assert_eq!(recorded_ios(&path).unwrap().count(), 3);
    std::fs::remove_file(path).unwrap();
}

#[test]
fn version_1_rows_out_of_arrival_order_are_passed_on_as_written() {
    // Version 1 has no reception instants to order by: as in every format, the reader keeps
    // the file's order, and the engine counts and clamps arrivals that go back in time.
    let text = format!("{PREAMBLE}500,W,0,4096,600,601\n400,R,0,4096,450,451\n");
    let path = write_temp("record-order", ".rec", text.as_bytes());
    let records: Vec<Record> = open(&path, &TraceOptions::default())
        .unwrap()
        .records
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        records,
        vec![
            record(500, Op::Write, 0, 4096, 0, 4),
            record(400, Op::Read, 0, 4096, 0, 5),
        ]
    );
    std::fs::remove_file(path).unwrap();
}

#[test]
fn version_2_rows_in_reception_order_replay_in_the_order_the_model_was_offered_them() {
    // Line 4's flush waited in `fdatasync` for 1 ms before the model saw it; the read and the
    // write received after it reached the model first. Line 7 ties with line 6's offer and
    // keeps its place after it.
    let text = format!(
        "{PREAMBLE_V2}100,1100,F,0,0,1200,1201\n200,210,R,0,4096,300,301\n\
         300,305,W,4096,4096,400,401\n1100,1100,R,8192,4096,1300,1301\n1100,1100,R,0,512,1310,1311\n\
         1150,1160,R,0,4096,1400,1401\n"
    );
    let path = write_temp("record-v2-order", ".rec", text.as_bytes());
    for parse_thread in [true, false] {
        let opts = TraceOptions {
            parse_thread,
            ..TraceOptions::default()
        };
        let records: Vec<Record> = open(&path, &opts)
            .unwrap()
            .records
            .map(Result::unwrap)
            .collect();
        assert_eq!(
            records,
            vec![
                record(210, Op::Read, 0, 4096, 0, 5),
                record(305, Op::Write, 4096, 4096, 0, 6),
                record(1100, Op::Flush, 0, 0, 0, 4),
                record(1100, Op::Read, 8192, 4096, 0, 7),
                record(1100, Op::Read, 0, 512, 0, 8),
                record(1160, Op::Read, 0, 4096, 0, 9),
            ]
        );
    }
    // Analysis sees the file as written, each row with both instants.
    let ios: Vec<RecordedIo> = recorded_ios(&path).unwrap().map(Result::unwrap).collect();
    let instants: Vec<(u64, u64, u64)> = ios
        .iter()
        .map(|io| (io.received_ns, io.arrival_ns, io.intake_ns()))
        .collect();
    assert_eq!(instants[..2], [(100, 1100, 1000), (200, 210, 10)]);
    std::fs::remove_file(path).unwrap();
}

#[test]
fn version_2_rows_must_keep_reception_order_and_arrive_after_reception() {
    let row_error = |row: &str| {
        error_for(
            FORMAT,
            &format!("{PREAMBLE_V2}500,500,W,0,512,600,600\n{row}\n"),
        )
    };
    assert_eq!(
        row_error("499,600,R,0,512,700,700"),
        "line 5: received_ns 499 is earlier than the previous row's (500): rows are in the order the requests were received"
    );
    assert_eq!(
        row_error("700,600,R,0,512,700,700"),
        "line 5: field 1 (received_ns): expected an integer number of nanoseconds no later than arrival_ns (600), found \"700\""
    );
    assert_eq!(
        row_error("600,600,R,0,512,700"),
        "line 5: expected 7 comma-separated fields (received_ns,arrival_ns,op,offset_bytes,len_bytes,intended_finish_ns,actual_finish_ns), found 6"
    );
    assert_eq!(
        row_error("600,600,X,0,512,700,700"),
        "line 5: field 3 (op): expected R (read), W (write), T (trim) or F (flush), found \"X\""
    );
    assert_eq!(
        row_error("600,600,R,0,512,700,599"),
        "line 5: field 7 (actual_finish_ns): expected an integer number of nanoseconds no earlier than arrival_ns (600), found \"599\""
    );
    // A version 2 file needs its own column header.
    assert_eq!(
        error_for(FORMAT, &PREAMBLE.replace("v1", "v2")),
        "line 3: expected the column header `received_ns,arrival_ns,op,offset_bytes,len_bytes,intended_finish_ns,actual_finish_ns`, found \"arrival_ns,op,offset_bytes,len_bytes,int...\""
    );
}

#[test]
fn a_malformed_version_2_row_ends_the_stream_after_every_record_before_it() {
    // The flush is held (its offer is after the next reception) when line 6 turns out bad:
    // it is still handed over, before the error, as a file-order reader would.
    let text = format!("{PREAMBLE_V2}100,1100,F,0,0,1200,1201\n200,210,R,0,4096,300,301\nbad\n");
    let path = write_temp("record-v2-bad", ".rec", text.as_bytes());
    let (items, _) = read_all(&path, &options(FORMAT, false));
    assert_eq!(items.len(), 3, "{items:?}");
    assert_eq!(items[0].as_ref().unwrap().origin, 5);
    assert_eq!(items[1].as_ref().unwrap().origin, 4);
    expect_malformed(
        &items[2],
        &path,
        "line 6",
        "expected 7 comma-separated fields (received_ns,arrival_ns,op,offset_bytes,len_bytes,intended_finish_ns,actual_finish_ns), found 1",
    );
    std::fs::remove_file(path).unwrap();
}

#[test]
fn crlf_line_ends_are_accepted() {
    let text = std::fs::read_to_string(data("storsim_record_sample.rec"))
        .unwrap()
        .replace('\n', "\r\n");
    let path = write_temp("record-crlf", ".rec", text.as_bytes());
    assert_eq!(detect(&path).unwrap(), FORMAT);
    let records: Vec<Record> = open(&path, &TraceOptions::default())
        .unwrap()
        .records
        .map(Result::unwrap)
        .collect();
    assert_eq!(records, sample_records());
    std::fs::remove_file(path).unwrap();
}

#[test]
fn a_stream_reads_with_the_default_device_selection() {
    // A recording has one device, so concatenation needs no second pass.
    let bytes = std::fs::read(data("storsim_record_sample.rec")).unwrap();
    let opts = TraceOptions {
        format: Some(FORMAT),
        ..TraceOptions::default()
    };
    let workload = open_reader(Box::new(std::io::Cursor::new(bytes)), "stdin", &opts).unwrap();
    let records: Vec<Record> = workload.records.map(Result::unwrap).collect();
    assert_eq!(records, sample_records());
}

#[test]
fn inspect_characterises_a_recording() {
    let workload = open(&data("storsim_record_sample.rec"), &TraceOptions::default()).unwrap();
    let c = inspect(workload).unwrap();
    assert_eq!(c.requests, 4);
    assert_eq!(c.per_op, [1, 1, 1, 1]);
    assert_eq!(c.span_ns, 300_000);
    assert_eq!(c.bytes_read, 65_536);
    assert_eq!(c.bytes_written, 4096);
    assert_eq!(c.address_range, Some((0, 1_048_576)));
}

#[test]
fn the_format_is_listed_and_named() {
    assert!(TraceFormat::all().any(|f| f == FORMAT));
    assert_eq!(FORMAT.name(), "storsim-record");
    assert_eq!(TraceFormat::from_name("storsim-record"), Some(FORMAT));
}
