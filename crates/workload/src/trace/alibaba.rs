//! Alibaba Cloud block traces (2020): `device_id,opcode,offset,length,timestamp`.
//!
//! One request per line of `io_traces.csv`: the virtual disk's number (0 to 999), `R` or `W`,
//! the offset and length in bytes, and the time the storage server received the request in
//! microseconds since the Unix epoch. Every virtual disk of the collection is in the one file,
//! so a run usually selects some (`--volume`). An optional header line naming the columns is
//! skipped.

use super::fields::{bad_field, check_end, parse_u32, parse_u64, split_on, trim};
use super::format::{Detect, FormatEntry};
use super::input::{text_records, LineParser, Parsed};
use super::{ParseContext, Records};
use crate::{Pacing, Record};
use std::io::BufRead;
use storsim_core::Op;

const LAYOUT: &str = "device_id,opcode,offset,length,timestamp";

/// Nanoseconds per microsecond of the timestamp column.
const NS_PER_US: u64 = 1_000;

/// The format's entry in the format table.
pub(super) const FORMAT: FormatEntry = FormatEntry {
    name: "alibaba",
    aliases: &[],
    description:
        "Alibaba Cloud block traces (2020) CSV: device_id,opcode(R|W),offset(B),length(B),timestamp(us)",
    detect: Detect::Text {
        header: Some(is_header),
        first: is_alibaba,
        rule_out: None,
    },
    binary: false,
    single_device: false,
    device_column: false,
    pacing: Pacing::Open,
    records: |reader, ctx, _| records(reader, ctx),
    measured: None,
};

/// Whether a line fits the five columns with `R` or `W` second.
fn is_alibaba(line: &[u8]) -> bool {
    let mut f = [&b""[..]; 5];
    split_on(line, b',', &mut f) == 5
        && parse_u32(f[0]).is_some()
        && matches!(f[1], b"R" | b"W")
        && parse_u64(f[2]).is_some()
        && parse_u64(f[3]).is_some()
        && parse_u64(f[4]).is_some()
}

/// Whether a line is the optional column header (its first field names the device column).
fn is_header(line: &[u8]) -> bool {
    let first = line.split(|&b| b == b',').next().unwrap_or(&[]);
    trim(first).eq_ignore_ascii_case(b"device_id")
}

pub(crate) fn records(reader: Box<dyn BufRead>, ctx: ParseContext) -> Records {
    text_records(reader, AlibabaParser { seen_data: false }, ctx)
}

struct AlibabaParser {
    /// A header is only recognised before the first record.
    seen_data: bool,
}

impl LineParser for AlibabaParser {
    type Item = Record;

    fn parse_line(&mut self, line: &[u8], line_no: u64) -> Result<Parsed<Record>, String> {
        if !self.seen_data && is_header(line) {
            return Ok(Parsed::Skip);
        }
        self.seen_data = true;
        let mut f = [&b""[..]; 5];
        let n = split_on(line, b',', &mut f);
        if n != 5 {
            return Err(format!(
                "expected 5 comma-separated fields ({LAYOUT}), found {n}"
            ));
        }
        let dev = parse_u32(f[0])
            .ok_or_else(|| bad_field(1, "device_id", "a virtual disk number", f[0]))?;
        let op = match f[1] {
            b"R" => Op::Read,
            b"W" => Op::Write,
            other => return Err(bad_field(2, "opcode", "R or W", other)),
        };
        let offset_bytes =
            parse_u64(f[2]).ok_or_else(|| bad_field(3, "offset", "a byte offset", f[2]))?;
        let len_bytes = match parse_u64(f[3]) {
            Some(0) | None => {
                return Err(bad_field(4, "length", "a positive number of bytes", f[3]))
            }
            Some(len) => len,
        };
        check_end(offset_bytes, len_bytes)?;
        let us = parse_u64(f[4])
            .ok_or_else(|| bad_field(5, "timestamp", "an integer number of microseconds", f[4]))?;
        let timestamp_ns = us.checked_mul(NS_PER_US).ok_or_else(|| {
            format!("field 5 (timestamp): {us} microseconds overflow a 64-bit nanosecond clock")
        })?;
        Ok(Parsed::Item(Record {
            timestamp_ns,
            op,
            offset_bytes,
            len_bytes,
            dev,
            think_ns: 0,
            origin: line_no,
        }))
    }
}
