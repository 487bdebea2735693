//! DiskSim's ASCII trace input: `arrival_ms devno blkno bcount flags`, one request per line.
//!
//! Times are milliseconds with a decimal fraction, block numbers and counts are 512-byte sectors
//! and the flags are hexadecimal (DiskSim reads them with `%x`); bit 0 set means read, clear
//! means write. Fields may be separated by spaces or tabs.

use super::detect::{five_column_times, is_five_column, sizes_look_like_bytes, FiveColumnTimes};
use super::fields::{
    bad_field, blocks_to_bytes, check_end, parse_decimal_scaled, parse_hex_u64, parse_u32,
    parse_u64, split_whitespace,
};
use super::format::{Detect, FormatEntry};
use super::input::{text_records, LineParser, Parsed};
use super::{ParseContext, Records};
use crate::{Pacing, Record};
use std::io::BufRead;
use storsim_core::{Op, SECTOR_BYTES};

const LAYOUT: &str = "arrival_ms devno blkno bcount flags";

/// DiskSim's READ flag.
const READ_FLAG: u64 = 0x1;

/// The format's entry in the format table.
pub(super) const FORMAT: FormatEntry = FormatEntry {
    name: "disksim-ascii",
    aliases: &[],
    description:
        "DiskSim ASCII: time(ms) devno blkno(512 B) bcount(512 B) flags(hex, bit 0 = read)",
    // DiskSim's, MQSim's and LinnOS's layouts share a grammar: the values decide.
    detect: Detect::Text {
        header: None,
        first: is_five_column,
        rule_out: Some(rule_out),
    },
    binary: false,
    single_device: false,
    device_column: true,
    pacing: Pacing::Open,
    records: |reader, ctx, _| records(reader, ctx),
    measured: None,
};

/// DiskSim's milliseconds and sector counts are ruled out by MQSim's nanosecond times or by
/// sizes that all read as byte counts.
fn rule_out(sample: &[&[u8]]) -> Option<String> {
    match five_column_times(sample) {
        FiveColumnTimes::Nanoseconds(reason) => Some(reason),
        FiveColumnTimes::Milliseconds(_) => sizes_look_like_bytes(sample),
    }
}

pub(crate) fn records(reader: Box<dyn BufRead>, ctx: ParseContext) -> Records {
    text_records(reader, DiskSimAsciiParser, ctx)
}

struct DiskSimAsciiParser;

impl LineParser for DiskSimAsciiParser {
    type Item = Record;

    fn parse_line(&mut self, line: &[u8], line_no: u64) -> Result<Parsed<Record>, String> {
        let mut f = [&b""[..]; 5];
        let n = split_whitespace(line, &mut f);
        if n != 5 {
            return Err(format!(
                "expected 5 whitespace-separated fields ({LAYOUT}), found {n}"
            ));
        }
        let timestamp_ns = parse_decimal_scaled(f[0], 6).ok_or_else(|| {
            bad_field(
                1,
                "arrival_ms",
                "a non-negative number of milliseconds",
                f[0],
            )
        })?;
        let dev = parse_u32(f[1]).ok_or_else(|| bad_field(2, "devno", "a device number", f[1]))?;
        let blkno =
            parse_u64(f[2]).ok_or_else(|| bad_field(3, "blkno", "a sector number", f[2]))?;
        let bcount = match parse_u64(f[3]) {
            Some(0) | None => {
                return Err(bad_field(4, "bcount", "a positive number of sectors", f[3]))
            }
            Some(count) => count,
        };
        let flags = parse_hex_u64(f[4])
            .ok_or_else(|| bad_field(5, "flags", "hexadecimal flags (bit 0 = read)", f[4]))?;
        let offset_bytes = blocks_to_bytes(blkno, SECTOR_BYTES, 3, "blkno")?;
        let len_bytes = blocks_to_bytes(bcount, SECTOR_BYTES, 4, "bcount")?;
        check_end(offset_bytes, len_bytes)?;
        let op = if flags & READ_FLAG != 0 {
            Op::Read
        } else {
            Op::Write
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
