//! MQSim and SSDsim ASCII traces: `arrival_ns device start_sector size_sectors type`.
//!
//! All five fields are integers: the arrival time in nanoseconds, the device number, the start
//! and size in 512-byte sectors, and the type, 1 for a read and 0 for a write. This is DiskSim's
//! column order with different units, which is why detection has to look at the values.

use super::detect::{five_column_times, is_five_column, sizes_look_like_bytes, FiveColumnTimes};
use super::fields::{
    bad_field, blocks_to_bytes, check_end, parse_u32, parse_u64, parse_uints, split_whitespace,
};
use super::format::{Detect, FormatEntry};
use super::input::{text_records, LineParser, Parsed};
use super::{ParseContext, Records};
use crate::{Pacing, Record};
use std::io::BufRead;
use storsim_core::{Op, SECTOR_BYTES};

const LAYOUT: &str = "arrival_ns device start_sector size_sectors type";

/// The format's entry in the format table.
pub(super) const FORMAT: FormatEntry = FormatEntry {
    name: "mqsim",
    // SSDsim reads the same layout.
    aliases: &["ssdsim"],
    description:
        "MQSim / SSDsim ASCII: time(ns) device lsn(512 B) size(512 B) type(1 = read, 0 = write)",
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

/// MQSim's nanoseconds and sector counts are ruled out by DiskSim's millisecond times or flags,
/// or by sizes that all read as byte counts.
fn rule_out(sample: &[&[u8]]) -> Option<String> {
    match five_column_times(sample) {
        FiveColumnTimes::Milliseconds(reason) => Some(reason),
        FiveColumnTimes::Nanoseconds(_) => sizes_look_like_bytes(sample),
    }
}

pub(crate) fn records(reader: Box<dyn BufRead>, ctx: ParseContext) -> Records {
    text_records(reader, MqsimParser, ctx)
}

struct MqsimParser;

impl LineParser for MqsimParser {
    type Item = Record;

    fn parse_line(&mut self, line: &[u8], line_no: u64) -> Result<Parsed<Record>, String> {
        // Nearly every line is five plain, valid integers: take them in one pass. Anything
        // else goes through the field-by-field path, which names what is wrong.
        let (timestamp_ns, dev, start, size, op) = match quick_fields(line) {
            Some(fields) => fields,
            None => checked_fields(line)?,
        };
        let offset_bytes = blocks_to_bytes(start, SECTOR_BYTES, 3, "start_sector")?;
        let len_bytes = blocks_to_bytes(size, SECTOR_BYTES, 4, "size_sectors")?;
        check_end(offset_bytes, len_bytes)?;
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

type Fields = (u64, u32, u64, u64, Op);

/// The fields of a line of five plain integers that are all in range, or `None`.
#[inline]
fn quick_fields(line: &[u8]) -> Option<Fields> {
    let [timestamp_ns, dev, start, size, kind] = parse_uints::<5>(line)?;
    let op = match kind {
        1 => Op::Read,
        0 => Op::Write,
        _ => return None,
    };
    let dev = u32::try_from(dev).ok()?;
    (size > 0).then_some((timestamp_ns, dev, start, size, op))
}

/// The fields of any line, or a message naming the first one that is wrong.
fn checked_fields(line: &[u8]) -> Result<Fields, String> {
    let mut f = [&b""[..]; 5];
    let n = split_whitespace(line, &mut f);
    if n != 5 {
        return Err(format!(
            "expected 5 whitespace-separated fields ({LAYOUT}), found {n}"
        ));
    }
    let timestamp_ns = parse_u64(f[0])
        .ok_or_else(|| bad_field(1, "arrival_ns", "an integer number of nanoseconds", f[0]))?;
    let dev = parse_u32(f[1]).ok_or_else(|| bad_field(2, "device", "a device number", f[1]))?;
    let start =
        parse_u64(f[2]).ok_or_else(|| bad_field(3, "start_sector", "a sector number", f[2]))?;
    let size = match parse_u64(f[3]) {
        Some(0) | None => {
            return Err(bad_field(
                4,
                "size_sectors",
                "a positive number of sectors",
                f[3],
            ))
        }
        Some(size) => size,
    };
    let op = match f[4] {
        b"1" => Op::Read,
        b"0" => Op::Write,
        other => return Err(bad_field(5, "type", "1 (read) or 0 (write)", other)),
    };
    Ok((timestamp_ns, dev, start, size, op))
}
