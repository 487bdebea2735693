//! DiskSim's validation traces: `R|W Hit|Miss|Doub|Trip blkno bcount access_us think_us`.
//!
//! Each line is one request measured on a real disk with one request outstanding: the block
//! number and count are 512-byte sectors, then the measured access time and the think time that
//! followed, both in microseconds with a fraction. DiskSim replays them closed loop: request i+1
//! is issued `think_us` of line i after request i completes. So record i+1 carries line i's think
//! time in `think_ns` (the first record 0), and the workload's pacing is closed with depth 1.
//!
//! `timestamp_ns` is the measured timeline: 0 for the first request, then the previous request's
//! timestamp plus its access time plus its think time. A closed-loop replay does not use it, but
//! it gives a characterisation real inter-arrival times. The second field (how the disk's buffer
//! served the request; Doub and Trip mark double and triple bus disconnects) is checked, not
//! used. The measured access times, which a validation compares against, are available through
//! [`validate_measured_access_us`].

use super::fields::{
    bad_field, blocks_to_bytes, check_end, parse_decimal_scaled, parse_u64, split_whitespace,
};
use super::format::{Detect, FormatEntry};
use super::input::{open_input, text_records, LineParser, Parsed, TextRecords};
use super::measured::{self, MeasuredTimes};
use super::{ParseContext, Records, TraceOptions};
use crate::{Pacing, Record, WorkloadError};
use std::io::BufRead;
use std::path::Path;
use storsim_core::{Op, SECTOR_BYTES};

const LAYOUT: &str = "R|W Hit|Miss|Doub|Trip blkno bcount access_us think_us";

/// The buffer actions DiskSim's validation traces use.
const BUFFER_ACTIONS: [&[u8]; 4] = [b"Hit", b"Miss", b"Doub", b"Trip"];

/// The format's entry in the format table.
pub(super) const FORMAT: FormatEntry = FormatEntry {
    name: "validate",
    aliases: &[],
    description:
        "DiskSim validate: R|W Hit|Miss|Doub|Trip blkno bcount access(us) think(us), closed loop",
    detect: Detect::Text {
        header: None,
        first: is_validate,
        rule_out: None,
    },
    binary: false,
    single_device: true,
    device_column: false,
    // Each request is issued its think time after the previous one completes.
    pacing: Pacing::Closed { depth: 1 },
    records: |reader, ctx, _| records(reader, ctx),
    measured: Some(measured),
};

/// Whether a line fits the six columns of a validation trace.
fn is_validate(line: &[u8]) -> bool {
    let mut f = [&b""[..]; 6];
    split_whitespace(line, &mut f) == 6
        && (f[0] == b"R" || f[0] == b"W")
        && BUFFER_ACTIONS.contains(&f[1])
        && parse_u64(f[2]).is_some()
        && parse_u64(f[3]).is_some()
        && parse_decimal_scaled(f[4], 3).is_some()
        && parse_decimal_scaled(f[5], 3).is_some()
}

pub(crate) fn records(reader: Box<dyn BufRead>, ctx: ParseContext) -> Records {
    text_records(reader, RecordParser(ValidateParser::default()), ctx)
}

/// Reads column 5, the access time measured on the real disk, of every record of a validate
/// trace, in microseconds and in record order. A malformed line ends the stream with an error,
/// exactly where [`open`](super::open) would report it.
pub fn validate_measured_access_us(
    path: &Path,
) -> Result<impl Iterator<Item = Result<f64, WorkloadError>>, WorkloadError> {
    let ctx = ParseContext::new(path, false);
    let reader = open_input(path, &ctx)?;
    Ok(TextRecords::new(
        reader,
        AccessParser(ValidateParser::default()),
        ctx,
    ))
}

/// Every record's measured access time, in nanoseconds, keyed by its line.
fn measured(
    reader: Box<dyn BufRead>,
    ctx: ParseContext,
    _: &TraceOptions,
) -> Result<MeasuredTimes, WorkloadError> {
    let parser = AccessNsParser(ValidateParser::default());
    measured::collect(TextRecords::new(reader, parser, ctx))
}

/// One parsed line: the record and the measured access time as written and in nanoseconds.
struct ValidateLine {
    record: Record,
    access_us: f64,
    access_ns: u64,
}

#[derive(Default)]
struct ValidateParser {
    /// The think time of the previous line, which belongs to this line's request.
    think_ns: u64,
    /// This line's timestamp on the measured timeline.
    timestamp_ns: u64,
}

impl ValidateParser {
    fn parse(&mut self, line: &[u8], line_no: u64) -> Result<ValidateLine, String> {
        let mut f = [&b""[..]; 6];
        let n = split_whitespace(line, &mut f);
        if n != 6 {
            return Err(format!(
                "expected 6 whitespace-separated fields ({LAYOUT}), found {n}"
            ));
        }
        let op = match f[0] {
            b"R" => Op::Read,
            b"W" => Op::Write,
            other => return Err(bad_field(1, "R|W", "R or W", other)),
        };
        if !BUFFER_ACTIONS.contains(&f[1]) {
            return Err(bad_field(
                2,
                "buffer action",
                "Hit, Miss, Doub or Trip",
                f[1],
            ));
        }
        let blkno =
            parse_u64(f[2]).ok_or_else(|| bad_field(3, "blkno", "a sector number", f[2]))?;
        let bcount = match parse_u64(f[3]) {
            Some(0) | None => {
                return Err(bad_field(4, "bcount", "a positive number of sectors", f[3]))
            }
            Some(count) => count,
        };
        let access_ns = parse_decimal_scaled(f[4], 3).ok_or_else(|| {
            bad_field(
                5,
                "access_us",
                "a non-negative number of microseconds",
                f[4],
            )
        })?;
        let think_ns = parse_decimal_scaled(f[5], 3).ok_or_else(|| {
            bad_field(6, "think_us", "a non-negative number of microseconds", f[5])
        })?;
        let offset_bytes = blocks_to_bytes(blkno, SECTOR_BYTES, 3, "blkno")?;
        let len_bytes = blocks_to_bytes(bcount, SECTOR_BYTES, 4, "bcount")?;
        check_end(offset_bytes, len_bytes)?;
        // Both time fields passed the decimal grammar, so they are plain ASCII numbers.
        let access_us = std::str::from_utf8(f[4])
            .ok()
            .and_then(|s| s.parse::<f64>().ok())
            .ok_or_else(|| bad_field(5, "access_us", "a number of microseconds", f[4]))?;
        let next_timestamp_ns = self
            .timestamp_ns
            .checked_add(access_ns)
            .and_then(|t| t.checked_add(think_ns))
            .ok_or_else(|| {
                "the measured timeline overflows a 64-bit nanosecond clock".to_string()
            })?;
        let record = Record {
            timestamp_ns: self.timestamp_ns,
            op,
            offset_bytes,
            len_bytes,
            dev: 0,
            think_ns: self.think_ns,
            origin: line_no,
        };
        self.timestamp_ns = next_timestamp_ns;
        self.think_ns = think_ns;
        Ok(ValidateLine {
            record,
            access_us,
            access_ns,
        })
    }
}

struct RecordParser(ValidateParser);

impl LineParser for RecordParser {
    type Item = Record;

    fn parse_line(&mut self, line: &[u8], line_no: u64) -> Result<Parsed<Record>, String> {
        self.0.parse(line, line_no).map(|l| Parsed::Item(l.record))
    }
}

struct AccessParser(ValidateParser);

impl LineParser for AccessParser {
    type Item = f64;

    fn parse_line(&mut self, line: &[u8], line_no: u64) -> Result<Parsed<f64>, String> {
        self.0
            .parse(line, line_no)
            .map(|l| Parsed::Item(l.access_us))
    }
}

/// Yields `(line, measured access time in ns)` for each record line.
struct AccessNsParser(ValidateParser);

impl LineParser for AccessNsParser {
    type Item = (u64, u64);

    fn parse_line(&mut self, line: &[u8], line_no: u64) -> Result<Parsed<(u64, u64)>, String> {
        self.0
            .parse(line, line_no)
            .map(|l| Parsed::Item((line_no, l.access_ns)))
    }
}
