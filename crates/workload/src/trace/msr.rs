//! MSR Cambridge / SNIA block traces:
//! `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`.
//!
//! Timestamps are Windows FILETIME values (100 ns ticks since 1601), offsets and sizes are
//! bytes, the response time is in ticks too. The device is the disk number. An optional header
//! line naming the columns is skipped. The response time, measured on the traced disk, is not
//! part of a record; a validation reads it through [`measured`].

use super::fields::{bad_field, check_end, parse_u32, parse_u64, split_on};
use super::format::{Detect, FormatEntry};
use super::input::{text_records, LineParser, Parsed, TextRecords};
use super::measured::{self, MeasuredTimes};
use super::{ParseContext, Records, TraceOptions};
use crate::{Pacing, Record, WorkloadError};
use std::io::BufRead;
use storsim_core::Op;

const LAYOUT: &str = "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime";

/// Nanoseconds per FILETIME tick.
const TICK_NS: u64 = 100;

/// The format's entry in the format table.
pub(super) const FORMAT: FormatEntry = FormatEntry {
    name: "msr",
    aliases: &[],
    description: "MSR Cambridge / SNIA CSV: Timestamp(100 ns ticks),Hostname,DiskNumber,Type,Offset(B),Size(B),ResponseTime",
    detect: Detect::Text {
        header: Some(is_header),
        first: is_msr,
        rule_out: None,
    },
    binary: false,
    single_device: false,
    device_column: false,
    pacing: Pacing::Open,
    records: |reader, ctx, _| records(reader, ctx),
    measured: Some(measured),
};

/// Whether a line fits the seven comma-separated columns with a read or write type.
fn is_msr(line: &[u8]) -> bool {
    let mut f = [&b""[..]; 7];
    split_on(line, b',', &mut f) == 7
        && parse_u64(f[0]).is_some()
        && parse_u64(f[2]).is_some()
        && (f[3].eq_ignore_ascii_case(b"read") || f[3].eq_ignore_ascii_case(b"write"))
        && parse_u64(f[4]).is_some()
        && parse_u64(f[5]).is_some()
}

pub(crate) fn records(reader: Box<dyn BufRead>, ctx: ParseContext) -> Records {
    text_records(reader, MsrParser { seen_data: false }, ctx)
}

/// Every record's `ResponseTime`, in nanoseconds, keyed by its line.
fn measured(
    reader: Box<dyn BufRead>,
    ctx: ParseContext,
    _: &TraceOptions,
) -> Result<MeasuredTimes, WorkloadError> {
    let parser = ResponseParser(MsrParser { seen_data: false });
    measured::collect(TextRecords::new(reader, parser, ctx))
}

/// Yields `(line, response time in ns)` for each record line, checking it as the record parser
/// does.
struct ResponseParser(MsrParser);

impl LineParser for ResponseParser {
    type Item = (u64, u64);

    fn parse_line(&mut self, line: &[u8], line_no: u64) -> Result<Parsed<(u64, u64)>, String> {
        self.0.parse(line, line_no)?.try_map(|(_, ticks)| {
            let ns = ticks.checked_mul(TICK_NS).ok_or_else(|| {
                format!(
                    "field 7 (ResponseTime): {ticks} ticks of 100 ns overflow a 64-bit nanosecond clock"
                )
            })?;
            Ok((line_no, ns))
        })
    }
}

struct MsrParser {
    /// A header is only recognised before the first record.
    seen_data: bool,
}

/// Whether a line is the optional column header (its first field names the timestamp column).
fn is_header(line: &[u8]) -> bool {
    let first = line.split(|&b| b == b',').next().unwrap_or(&[]);
    super::fields::trim(first).eq_ignore_ascii_case(b"timestamp")
}

impl LineParser for MsrParser {
    type Item = Record;

    #[inline]
    fn parse_line(&mut self, line: &[u8], line_no: u64) -> Result<Parsed<Record>, String> {
        Ok(self.parse(line, line_no)?.map(|(record, _)| record))
    }
}

impl MsrParser {
    /// One line: its record and its response time in ticks.
    #[inline]
    fn parse(&mut self, line: &[u8], line_no: u64) -> Result<Parsed<(Record, u64)>, String> {
        if !self.seen_data && is_header(line) {
            return Ok(Parsed::Skip);
        }
        self.seen_data = true;
        let mut f = [&b""[..]; 7];
        let n = split_on(line, b',', &mut f);
        if n != 7 {
            return Err(format!(
                "expected 7 comma-separated fields ({LAYOUT}), found {n}"
            ));
        }
        let ticks = parse_u64(f[0])
            .ok_or_else(|| bad_field(1, "Timestamp", "an integer count of 100 ns ticks", f[0]))?;
        let timestamp_ns = ticks.checked_mul(TICK_NS).ok_or_else(|| {
            format!(
                "field 1 (Timestamp): {ticks} ticks of 100 ns overflow a 64-bit nanosecond clock"
            )
        })?;
        if f[1].is_empty() {
            return Err(bad_field(2, "Hostname", "a host name", f[1]));
        }
        let dev =
            parse_u32(f[2]).ok_or_else(|| bad_field(3, "DiskNumber", "a disk number", f[2]))?;
        let op = if f[3].eq_ignore_ascii_case(b"read") {
            Op::Read
        } else if f[3].eq_ignore_ascii_case(b"write") {
            Op::Write
        } else {
            return Err(bad_field(4, "Type", "Read or Write", f[3]));
        };
        let offset_bytes =
            parse_u64(f[4]).ok_or_else(|| bad_field(5, "Offset", "a byte offset", f[4]))?;
        let len_bytes = match parse_u64(f[5]) {
            Some(0) | None => {
                return Err(bad_field(6, "Size", "a positive number of bytes", f[5]));
            }
            Some(len) => len,
        };
        check_end(offset_bytes, len_bytes)?;
        let response_ticks = parse_u64(f[6]).ok_or_else(|| {
            bad_field(7, "ResponseTime", "an integer count of 100 ns ticks", f[6])
        })?;
        let record = Record {
            timestamp_ns,
            op,
            offset_bytes,
            len_bytes,
            dev,
            think_ns: 0,
            origin: line_no,
        };
        Ok(Parsed::Item((record, response_ticks)))
    }
}
