//! FIU traces (the SRCMap and IODedup sets from Florida International University, distributed
//! by SNIA IOTTA): `ts_ns pid process lba size R|W major minor md5`.
//!
//! The timestamp is in nanoseconds, the LBA and size in 512-byte sectors, and the last field is
//! the MD5 of the data (the dedup traces have one record per 4 KiB page). Process names may
//! contain spaces, so the fields after the name are located from the end of the line. Devices are
//! numbered in order of first appearance of their major,minor pair, starting at 0.

use super::devices::DeviceIds;
use super::fields::{
    bad_field, blocks_to_bytes, check_end, parse_u32, parse_u64, split_whitespace,
};
use super::format::{Detect, FormatEntry};
use super::input::{text_records, LineParser, Parsed};
use super::{ParseContext, Records};
use crate::{Pacing, Record};
use std::io::BufRead;
use storsim_core::{Op, SECTOR_BYTES};

const LAYOUT: &str = "ts_ns pid process lba size R|W major minor md5";

/// Most fields a line may have: nine, plus room for a process name with spaces.
const MAX_FIELDS: usize = 24;

/// The format's entry in the format table.
pub(super) const FORMAT: FormatEntry = FormatEntry {
    name: "fiu",
    aliases: &[],
    description: "FIU trace: ts(ns) pid process lba(512 B) size(512 B) R|W major minor md5",
    detect: Detect::Text {
        header: None,
        first: is_fiu,
        rule_out: None,
    },
    binary: false,
    single_device: false,
    device_column: false,
    pacing: Pacing::Open,
    records: |reader, ctx, _| records(reader, ctx),
    measured: None,
};

/// Whether a line fits FIU's columns; the process name may hold spaces, so the fields after it
/// are counted from the end.
fn is_fiu(line: &[u8]) -> bool {
    let mut f = [&b""[..]; 24];
    let n = split_whitespace(line, &mut f);
    (9..=24).contains(&n)
        && parse_u64(f[0]).is_some()
        && parse_u64(f[1]).is_some()
        && parse_u64(f[n - 6]).is_some()
        && parse_u64(f[n - 5]).is_some()
        && matches!(f[n - 4], b"R" | b"W" | b"r" | b"w")
        && parse_u64(f[n - 3]).is_some()
        && parse_u64(f[n - 2]).is_some()
        && f[n - 1].len() == 32
        && f[n - 1].iter().all(u8::is_ascii_hexdigit)
}

pub(crate) fn records(reader: Box<dyn BufRead>, ctx: ParseContext) -> Records {
    text_records(
        reader,
        FiuParser {
            devices: DeviceIds::default(),
        },
        ctx,
    )
}

struct FiuParser {
    devices: DeviceIds,
}

impl LineParser for FiuParser {
    type Item = Record;

    fn parse_line(&mut self, line: &[u8], line_no: u64) -> Result<Parsed<Record>, String> {
        let mut f = [&b""[..]; MAX_FIELDS];
        let n = split_whitespace(line, &mut f);
        if !(9..=MAX_FIELDS).contains(&n) {
            return Err(format!(
                "expected 9 whitespace-separated fields ({LAYOUT}), found {n}"
            ));
        }
        let timestamp_ns = parse_u64(f[0])
            .ok_or_else(|| bad_field(1, "ts", "an integer number of nanoseconds", f[0]))?;
        parse_u64(f[1]).ok_or_else(|| bad_field(2, "pid", "a process id", f[1]))?;
        // Positions (1-based) of the fields after the process name.
        let (lba_at, size_at, rw_at, major_at, minor_at) = (n - 5, n - 4, n - 3, n - 2, n - 1);
        let lba = parse_u64(f[lba_at - 1])
            .ok_or_else(|| bad_field(lba_at, "lba", "a sector number", f[lba_at - 1]))?;
        let size = match parse_u64(f[size_at - 1]) {
            Some(0) | None => {
                return Err(bad_field(
                    size_at,
                    "size",
                    "a positive number of sectors",
                    f[size_at - 1],
                ))
            }
            Some(size) => size,
        };
        let op = match f[rw_at - 1] {
            b"R" | b"r" => Op::Read,
            b"W" | b"w" => Op::Write,
            other => return Err(bad_field(rw_at, "R|W", "R or W", other)),
        };
        let major = parse_u32(f[major_at - 1]).ok_or_else(|| {
            bad_field(major_at, "major", "a device major number", f[major_at - 1])
        })?;
        let minor = parse_u32(f[minor_at - 1]).ok_or_else(|| {
            bad_field(minor_at, "minor", "a device minor number", f[minor_at - 1])
        })?;
        let offset_bytes = blocks_to_bytes(lba, SECTOR_BYTES, lba_at, "lba")?;
        let len_bytes = blocks_to_bytes(size, SECTOR_BYTES, size_at, "size")?;
        check_end(offset_bytes, len_bytes)?;
        let dev = self.devices.id(major, minor)?;
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
