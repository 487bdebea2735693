//! SNIA SYSTOR '17 traces: `Timestamp,Response,IOType,LUN,Offset,Size`, after a header line.
//!
//! The enterprise virtual-desktop traces of Lee et al. (SYSTOR '17), one gzipped CSV per hour
//! and LUN: the Unix time the request was issued in seconds with a nine-digit fraction (good
//! to the microsecond), the time it took to complete in seconds, `R`, `W` or nothing, the LUN,
//! and the offset and size in bytes. A line with no type is well formed but not a request it
//! can replay: it is ignored and counted. The response time, measured on the traced system,
//! is not part of a record; a validation reads it through [`measured`].

use super::fields::{
    bad_field, check_end, parse_decimal_scaled, parse_u32, parse_u64, split_on, trim,
};
use super::format::{Detect, FormatEntry};
use super::input::{text_records, LineParser, Parsed, TextRecords};
use super::measured::{self, MeasuredTimes};
use super::{ParseContext, Records, TraceOptions};
use crate::{Pacing, Record, WorkloadError};
use std::io::BufRead;
use storsim_core::Op;

const LAYOUT: &str = "Timestamp,Response,IOType,LUN,Offset,Size";

/// The format's entry in the format table.
pub(super) const FORMAT: FormatEntry = FormatEntry {
    name: "systor",
    aliases: &["systor17"],
    description: "SNIA SYSTOR '17 CSV: Timestamp(s),Response(s),IOType(R|W),LUN,Offset(B),Size(B)",
    detect: Detect::Text {
        header: Some(is_header),
        first: is_systor,
        rule_out: None,
    },
    binary: false,
    single_device: false,
    device_column: false,
    pacing: Pacing::Open,
    records: |reader, ctx, _| records(reader, ctx),
    measured: Some(measured),
};

/// Whether a line fits the six columns with `R`, `W` or nothing third.
fn is_systor(line: &[u8]) -> bool {
    let mut f = [&b""[..]; 6];
    split_on(line, b',', &mut f) == 6
        && parse_decimal_scaled(f[0], 9).is_some()
        && parse_decimal_scaled(f[1], 9).is_some()
        && matches!(f[2], b"R" | b"W" | b"")
        && parse_u32(f[3]).is_some()
        && parse_u64(f[4]).is_some()
        && parse_u64(f[5]).is_some()
}

/// Whether a line is the header (`Timestamp,Response,...`).
fn is_header(line: &[u8]) -> bool {
    let mut f = [&b""[..]; 2];
    split_on(line, b',', &mut f) >= 2
        && trim(f[0]).eq_ignore_ascii_case(b"timestamp")
        && trim(f[1]).eq_ignore_ascii_case(b"response")
}

pub(crate) fn records(reader: Box<dyn BufRead>, ctx: ParseContext) -> Records {
    text_records(reader, SystorParser { seen_data: false }, ctx)
}

/// Every request's `Response`, in nanoseconds, keyed by its line.
fn measured(
    reader: Box<dyn BufRead>,
    ctx: ParseContext,
    _: &TraceOptions,
) -> Result<MeasuredTimes, WorkloadError> {
    let parser = ResponseParser(SystorParser { seen_data: false });
    measured::collect(TextRecords::new(reader, parser, ctx))
}

/// Yields `(line, response time in ns)` for each request line, checking it as the record
/// parser does.
struct ResponseParser(SystorParser);

impl LineParser for ResponseParser {
    type Item = (u64, u64);

    fn parse_line(&mut self, line: &[u8], line_no: u64) -> Result<Parsed<(u64, u64)>, String> {
        Ok(self
            .0
            .parse(line, line_no)?
            .map(|(_, response_ns)| (line_no, response_ns)))
    }
}

struct SystorParser {
    /// A header is only recognised before the first record.
    seen_data: bool,
}

impl LineParser for SystorParser {
    type Item = Record;

    fn parse_line(&mut self, line: &[u8], line_no: u64) -> Result<Parsed<Record>, String> {
        Ok(self.parse(line, line_no)?.map(|(record, _)| record))
    }
}

impl SystorParser {
    /// One line: its record and its response time in nanoseconds.
    fn parse(&mut self, line: &[u8], line_no: u64) -> Result<Parsed<(Record, u64)>, String> {
        if !self.seen_data && is_header(line) {
            return Ok(Parsed::Skip);
        }
        self.seen_data = true;
        let mut f = [&b""[..]; 6];
        let n = split_on(line, b',', &mut f);
        if n != 6 {
            return Err(format!(
                "expected 6 comma-separated fields ({LAYOUT}), found {n}"
            ));
        }
        let timestamp_ns = parse_decimal_scaled(f[0], 9)
            .ok_or_else(|| bad_field(1, "Timestamp", "a non-negative number of seconds", f[0]))?;
        let response_ns = parse_decimal_scaled(f[1], 9)
            .ok_or_else(|| bad_field(2, "Response", "a non-negative number of seconds", f[1]))?;
        let op = match f[2] {
            b"R" => Some(Op::Read),
            b"W" => Some(Op::Write),
            b"" => None,
            other => return Err(bad_field(3, "IOType", "R, W or nothing", other)),
        };
        let dev = parse_u32(f[3]).ok_or_else(|| bad_field(4, "LUN", "a LUN number", f[3]))?;
        let offset_bytes =
            parse_u64(f[4]).ok_or_else(|| bad_field(5, "Offset", "a byte offset", f[4]))?;
        let len_bytes =
            parse_u64(f[5]).ok_or_else(|| bad_field(6, "Size", "a number of bytes", f[5]))?;
        // A line without a type is checked as every other, then left out: the trace does not
        // say what the device did.
        let Some(op) = op else {
            return Ok(Parsed::Ignore);
        };
        if len_bytes == 0 {
            return Err(bad_field(6, "Size", "a positive number of bytes", f[5]));
        }
        check_end(offset_bytes, len_bytes)?;
        let record = Record {
            timestamp_ns,
            op,
            offset_bytes,
            len_bytes,
            dev,
            think_ns: 0,
            origin: line_no,
        };
        Ok(Parsed::Item((record, response_ns)))
    }
}
