//! LinnOS, Heimdall and FlashNet replayer traces: `ts_ms dev offset_bytes size_bytes op`.
//!
//! The input of the trace replayer that LinnOS (OSDI '20), Heimdall and FlashNet share: one
//! request per line, five whitespace-separated fields, the arrival time in milliseconds with a
//! decimal fraction, the disk number, the offset and size in bytes, and the type, 1 for a read
//! and 0 for a write. This is DiskSim's and MQSim's column order with other units, so detection
//! looks at the values (docs/formats/linnos.md): byte offsets and sizes of a block device are
//! multiples of 512, which rules this format out when a line's are not.

use super::fields::{
    bad_field, check_end, parse_decimal_scaled, parse_u32, parse_u64, split_whitespace,
};
use super::format::{Detect, FormatEntry};
use super::input::{text_records, LineParser, Parsed};
use super::{ParseContext, Records};
use crate::{Pacing, Record};
use std::io::BufRead;
use storsim_core::{Op, SECTOR_BYTES};

const LAYOUT: &str = "ts_ms dev offset_bytes size_bytes op";

/// The format's entry in the format table.
pub(super) const FORMAT: FormatEntry = FormatEntry {
    name: "linnos",
    aliases: &["heimdall", "flashnet"],
    description:
        "LinnOS / Heimdall / FlashNet replayer: time(ms) dev offset(B) size(B) op(1 = read, 0 = write)",
    // DiskSim's, MQSim's and LinnOS's layouts share a grammar: the values decide.
    detect: Detect::Text {
        header: None,
        first: is_linnos,
        rule_out: Some(rule_out),
    },
    binary: false,
    single_device: false,
    device_column: true,
    pacing: Pacing::Open,
    records: |reader, ctx, _| records(reader, ctx),
    measured: None,
};

/// Whether a line fits the five columns with a 0 or 1 type.
fn is_linnos(line: &[u8]) -> bool {
    let mut f = [&b""[..]; 5];
    split_whitespace(line, &mut f) == 5
        && parse_decimal_scaled(f[0], 6).is_some()
        && parse_u32(f[1]).is_some()
        && parse_u64(f[2]).is_some()
        && parse_u64(f[3]).is_some_and(|size| size > 0)
        && matches!(f[4], b"0" | b"1")
}

/// Byte offsets and sizes of a block device are whole sectors: a line whose offset or size is
/// not a multiple of 512 counts something else (sectors, as DiskSim and MQSim do).
fn rule_out(sample: &[&[u8]]) -> Option<String> {
    for line in sample {
        let mut f = [&b""[..]; 5];
        if split_whitespace(line, &mut f) != 5 {
            continue;
        }
        for (value, name) in [(f[2], "offset"), (f[3], "size")] {
            if let Some(v) = parse_u64(value) {
                if v % SECTOR_BYTES != 0 {
                    return Some(format!(
                        "a {name} of {v}, which is not a multiple of 512 as a block device's byte {name}s are"
                    ));
                }
            }
        }
    }
    None
}

pub(crate) fn records(reader: Box<dyn BufRead>, ctx: ParseContext) -> Records {
    text_records(reader, LinnosParser, ctx)
}

struct LinnosParser;

impl LineParser for LinnosParser {
    type Item = Record;

    fn parse_line(&mut self, line: &[u8], line_no: u64) -> Result<Parsed<Record>, String> {
        let mut f = [&b""[..]; 5];
        let n = split_whitespace(line, &mut f);
        if n != 5 {
            return Err(format!(
                "expected 5 whitespace-separated fields ({LAYOUT}), found {n}"
            ));
        }
        let timestamp_ns = parse_decimal_scaled(f[0], 6)
            .ok_or_else(|| bad_field(1, "ts_ms", "a non-negative number of milliseconds", f[0]))?;
        let dev = parse_u32(f[1]).ok_or_else(|| bad_field(2, "dev", "a device number", f[1]))?;
        let offset_bytes =
            parse_u64(f[2]).ok_or_else(|| bad_field(3, "offset_bytes", "a byte offset", f[2]))?;
        let len_bytes = match parse_u64(f[3]) {
            Some(0) | None => {
                return Err(bad_field(
                    4,
                    "size_bytes",
                    "a positive number of bytes",
                    f[3],
                ))
            }
            Some(len) => len,
        };
        check_end(offset_bytes, len_bytes)?;
        let op = match f[4] {
            b"1" => Op::Read,
            b"0" => Op::Write,
            other => return Err(bad_field(5, "op", "1 (read) or 0 (write)", other)),
        };
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
