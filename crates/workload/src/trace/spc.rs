//! UMass Trace Repository / Storage Performance Council traces: `ASU,LBA,Size,Opcode,Timestamp`.
//!
//! The LBA is in 512-byte sectors, the size in bytes, the opcode `r` or `w` in either case and the
//! timestamp in seconds with a decimal fraction. Fields after the fifth (some files carry an
//! extra one) are ignored. The device is the ASU (application specific unit).

use super::fields::{
    bad_field, blocks_to_bytes, check_end, parse_decimal_scaled, parse_u32, parse_u64, split_on,
};
use super::format::{Detect, FormatEntry};
use super::input::{text_records, LineParser, Parsed};
use super::{ParseContext, Records};
use crate::{Pacing, Record};
use std::io::BufRead;
use storsim_core::{Op, SECTOR_BYTES};

const LAYOUT: &str = "ASU,LBA,Size,Opcode,Timestamp";

/// The format's entry in the format table.
pub(super) const FORMAT: FormatEntry = FormatEntry {
    name: "spc",
    aliases: &[],
    description: "UMass / SPC CSV: ASU,LBA(512 B),Size(B),Opcode(r|w),Timestamp(s)",
    detect: Detect::Text {
        header: None,
        first: is_spc,
        rule_out: None,
    },
    binary: false,
    single_device: false,
    device_column: false,
    pacing: Pacing::Open,
    records: |reader, ctx, _| records(reader, ctx),
    measured: None,
};

/// Whether a line starts with the five comma-separated SPC columns.
fn is_spc(line: &[u8]) -> bool {
    let mut f = [&b""[..]; 5];
    split_on(line, b',', &mut f) >= 5
        && parse_u64(f[0]).is_some()
        && parse_u64(f[1]).is_some()
        && parse_u64(f[2]).is_some()
        && matches!(f[3], b"r" | b"R" | b"w" | b"W")
        && parse_decimal_scaled(f[4], 9).is_some()
}

pub(crate) fn records(reader: Box<dyn BufRead>, ctx: ParseContext) -> Records {
    text_records(reader, SpcParser, ctx)
}

struct SpcParser;

impl LineParser for SpcParser {
    type Item = Record;

    fn parse_line(&mut self, line: &[u8], line_no: u64) -> Result<Parsed<Record>, String> {
        let mut f = [&b""[..]; 5];
        let n = split_on(line, b',', &mut f);
        if n < 5 {
            return Err(format!(
                "expected at least 5 comma-separated fields ({LAYOUT}), found {n}"
            ));
        }
        let dev = parse_u32(f[0]).ok_or_else(|| bad_field(1, "ASU", "a device number", f[0]))?;
        let lba = parse_u64(f[1]).ok_or_else(|| bad_field(2, "LBA", "a sector number", f[1]))?;
        let offset_bytes = blocks_to_bytes(lba, SECTOR_BYTES, 2, "LBA")?;
        let len_bytes = match parse_u64(f[2]) {
            Some(0) | None => return Err(bad_field(3, "Size", "a positive number of bytes", f[2])),
            Some(len) => len,
        };
        check_end(offset_bytes, len_bytes)?;
        let op = match f[3] {
            b"r" | b"R" => Op::Read,
            b"w" | b"W" => Op::Write,
            other => return Err(bad_field(4, "Opcode", "r or w", other)),
        };
        let timestamp_ns = parse_decimal_scaled(f[4], 9).ok_or_else(|| {
            bad_field(
                5,
                "Timestamp",
                "a non-negative number of seconds such as 0.026214",
                f[4],
            )
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
