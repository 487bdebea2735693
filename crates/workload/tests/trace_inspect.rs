//! The streaming characterisation, checked against numbers worked out by hand.

use std::collections::BTreeMap;
mod common;

use common::{data, temp_path};
use storsim_core::Op;
use storsim_workload::trace::{
    inspect, open, DeviceSelection, TraceOptions, SIZE_BUCKET_UPPER_BOUNDS,
};

#[test]
fn small_trace_is_characterised_exactly() {
    // MQSim: time_ns dev sector sectors type(1 = read).
    let text = "0 0 0 8 1\n1000 0 8 8 0\n3000 1 0 16 1\n6000 0 100 2048 0\n10000 1 16 4096 1\n";
    let path = temp_path("inspect", "");
    std::fs::write(&path, text).unwrap();
    let opts = TraceOptions {
        devices: DeviceSelection::Overlay,
        ..TraceOptions::default()
    };
    let c = inspect(open(&path, &opts).unwrap()).unwrap();
    std::fs::remove_file(&path).unwrap();

    assert_eq!(c.requests, 5);
    assert_eq!(c.per_op, [3, 2, 0, 0]);
    assert_eq!((c.count(Op::Read), c.count(Op::Write)), (3, 2));
    assert_eq!(c.read_percent, Some(60.0));
    let mut histogram: Vec<(u64, u64)> = SIZE_BUCKET_UPPER_BOUNDS.iter().map(|&b| (b, 0)).collect();
    histogram[3].1 = 2; // two 4 KiB requests
    histogram[4].1 = 1; // 8 KiB
    histogram[11].1 = 1; // exactly 1 MiB
    histogram[12].1 = 1; // 2 MiB, beyond the last power of two
    assert_eq!(c.size_histogram, histogram);
    // Per device: the second request on device 0 follows the first, the second on device 1
    // follows its first; the third on device 0 does not. Three requests have a predecessor.
    assert_eq!(c.sequential_fraction, Some(2.0 / 3.0));
    // Both writes are on device 0: the first continues no earlier write, and the second does
    // not continue the first.
    assert_eq!(c.random_write_fraction, Some(1.0));
    assert_eq!(c.mean_interarrival_ns, Some(2500.0));
    assert_eq!(c.span_ns, 10_000);
    assert_eq!(c.address_range, Some((0, 8192 + 2 * 1024 * 1024)));
    assert_eq!(c.bytes_read, 4096 + 8192 + 2 * 1024 * 1024);
    assert_eq!(c.bytes_written, 4096 + 1024 * 1024);
    assert_eq!(c.per_device, BTreeMap::from([(0, 3), (1, 2)]));
    // Each volume: its requests, bytes, smallest and largest request and time span.
    let v0 = &c.volumes[&0];
    assert_eq!(
        (v0.requests, v0.bytes_read, v0.bytes_written),
        (3, 4096, 4096 + (1 << 20))
    );
    assert_eq!(v0.size_range_bytes, Some((4096, 1 << 20)));
    assert_eq!((v0.first_ns, v0.span_ns()), (0, 6000));
    let v1 = &c.volumes[&1];
    assert_eq!(
        (v1.requests, v1.bytes_read, v1.bytes_written),
        (2, 8192 + (2 << 20), 0)
    );
    assert_eq!(v1.size_range_bytes, Some((8192, 2 << 20)));
    assert_eq!((v1.first_ns, v1.span_ns()), (3000, 7000));
    // The format was detected, and what decided it is kept.
    assert_eq!(c.format, Some("mqsim"));
    let evidence = c.detected_from.unwrap();
    assert!(
        evidence.starts_with("line 1 fits the layout of disksim-ascii, mqsim")
            && evidence.contains("not disksim-ascii: integer times advancing by"),
        "{evidence}"
    );
}

#[test]
fn a_named_format_says_nothing_was_detected() {
    let opts = TraceOptions {
        format: Some(storsim_workload::trace::TraceFormat::named("tencent")),
        ..TraceOptions::default()
    };
    let c = inspect(open(&data("tencent_sample.csv"), &opts).unwrap()).unwrap();
    assert_eq!((c.format, c.detected_from), (Some("tencent"), None));
    let volumes: Vec<(u32, u64)> = c.volumes.iter().map(|(&d, v)| (d, v.requests)).collect();
    assert_eq!(volumes, vec![(77, 2), (1283, 3)]);
    assert_eq!(c.volumes[&77].span_ns(), 2_000_000_000);
}

#[test]
fn flushes_and_trims_are_counted_but_carry_no_size() {
    let c =
        inspect(open(&data("fio_iolog_v2_sample.log"), &TraceOptions::default()).unwrap()).unwrap();
    assert_eq!(c.per_op, [2, 1, 1, 1]);
    assert_eq!(c.read_percent, Some(200.0 / 3.0));
    // The flush is not in the histogram; the trim is.
    assert_eq!(c.size_histogram.iter().map(|&(_, n)| n).sum::<u64>(), 4);
    assert_eq!(c.bytes_read, 4096 + 512);
    assert_eq!(c.bytes_written, 4096);
    assert_eq!(c.span_ns, 5_000_000);
}

#[test]
fn an_empty_trace_has_no_means() {
    let path = temp_path("inspect-empty", "");
    std::fs::write(&path, "# nothing here\n").unwrap();
    let opts = TraceOptions {
        format: Some(storsim_workload::trace::TraceFormat::named("mqsim")),
        ..TraceOptions::default()
    };
    let c = inspect(open(&path, &opts).unwrap()).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(c.requests, 0);
    assert_eq!(
        (
            c.read_percent,
            c.sequential_fraction,
            c.random_write_fraction,
            c.mean_interarrival_ns
        ),
        (None, None, None, None)
    );
    assert_eq!((c.span_ns, c.address_range), (0, None));
}

#[test]
fn too_many_devices_to_count_is_an_error() {
    let mut text = String::new();
    for dev in 0..=65_536u32 {
        text.push_str(&format!("0 {dev} 0 1 0\n"));
    }
    let path = temp_path("inspect-devices", "");
    std::fs::write(&path, text).unwrap();
    let opts = TraceOptions {
        format: Some(storsim_workload::trace::TraceFormat::named("mqsim")),
        devices: DeviceSelection::Overlay,
        ..TraceOptions::default()
    };
    let err = inspect(open(&path, &opts).unwrap())
        .unwrap_err()
        .to_string();
    std::fs::remove_file(&path).unwrap();
    assert!(
        err.contains("line 65537: device 65536 is more than the 65536 devices"),
        "{err}"
    );
}

#[test]
fn random_writes_are_those_that_do_not_continue_the_previous_write() {
    // MQSim: time_ns dev sector sectors type(1 = read, 0 = write). Ten writes, five random:
    let text = "\
0 0 0 8 0
1 0 8 8 0
2 0 5000 8 1
3 0 16 16 0
4 1 32 8 0
5 0 32 8 0
6 1 40 8 0
7 0 48 8 0
8 0 48 8 0
9 0 1000 8 0
10 0 1008 8 0
";
    // 0: device 0's first write: random (it continues nothing). 1: continues it. 2: a read elsewhere, which does not
    // break the run of writes, so 3 continues write 1. 4: device 1's first write: random.
    // 5: continues write 3 on device 0, though device 1 wrote in between. 6: continues 4 on
    // device 1. 7: skips sectors 40-47: random. 8: rewrites 7's place: random. 9: random.
    // 10: continues 9.
    let path = temp_path("inspect-random-writes", "");
    std::fs::write(&path, text).unwrap();
    let opts = TraceOptions {
        devices: DeviceSelection::Overlay,
        ..TraceOptions::default()
    };
    let c = inspect(open(&path, &opts).unwrap()).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(c.count(Op::Write), 10);
    assert_eq!(c.random_write_fraction, Some(0.5));
    // The request-level figure counts the read, which breaks device 0's run there: of the nine
    // requests with a predecessor on their device, 1, 5, 6 and 10 continue it.
    assert_eq!(c.sequential_fraction, Some(4.0 / 9.0));
}

#[test]
fn a_trace_without_writes_has_no_random_write_fraction() {
    let path = temp_path("inspect-reads", "");
    std::fs::write(&path, "0 0 0 8 1\n1 0 800 8 1\n").unwrap();
    let c = inspect(open(&path, &TraceOptions::default()).unwrap()).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(c.random_write_fraction, None);
    assert_eq!(c.sequential_fraction, Some(0.0));
}
