//! Tencent Cloud Block Storage traces (2018): `Timestamp,Offset,Size,IOType,VolumeID`.
//!
//! One request per line: the Unix time in seconds, the offset and size in 512-byte sectors,
//! the type, 0 for a read and 1 for a write (the opposite of MQSim's and LinnOS's), and the
//! cloud virtual volume's number. A file holds thousands of volumes, so a run usually selects
//! some (`--volume`). The times are whole seconds, so the requests of one second arrive
//! together; a fraction, where a rendering adds one, is kept. An optional header line naming
//! the columns is skipped.

use super::fields::{
    bad_field, blocks_to_bytes, check_end, parse_decimal_scaled, parse_u32, parse_u64, split_on,
    trim,
};
use super::format::{Detect, FormatEntry};
use super::input::{text_records, LineParser, Parsed};
use super::{ParseContext, Records};
use crate::{Pacing, Record};
use std::io::BufRead;
use storsim_core::{Op, SECTOR_BYTES};

const LAYOUT: &str = "Timestamp,Offset,Size,IOType,VolumeID";

/// The format's entry in the format table.
pub(super) const FORMAT: FormatEntry = FormatEntry {
    name: "tencent",
    aliases: &["tencent-cbs"],
    description:
        "Tencent CBS (2018) CSV: Timestamp(s),Offset(512 B),Size(512 B),IOType(0 = read, 1 = write),VolumeID",
    detect: Detect::Text {
        header: Some(is_header),
        first: is_tencent,
        rule_out: None,
    },
    binary: false,
    single_device: false,
    device_column: false,
    pacing: Pacing::Open,
    records: |reader, ctx, _| records(reader, ctx),
    measured: None,
};

/// Whether a line fits the five numeric columns with a 0 or 1 type.
fn is_tencent(line: &[u8]) -> bool {
    let mut f = [&b""[..]; 5];
    split_on(line, b',', &mut f) == 5
        && parse_decimal_scaled(f[0], 9).is_some()
        && parse_u64(f[1]).is_some()
        && parse_u64(f[2]).is_some()
        && matches!(f[3], b"0" | b"1")
        && parse_u32(f[4]).is_some()
}

/// Whether a line is the optional column header (`Timestamp,Offset,...`).
fn is_header(line: &[u8]) -> bool {
    let mut f = [&b""[..]; 2];
    split_on(line, b',', &mut f) >= 2
        && trim(f[0]).eq_ignore_ascii_case(b"timestamp")
        && trim(f[1]).eq_ignore_ascii_case(b"offset")
}

pub(crate) fn records(reader: Box<dyn BufRead>, ctx: ParseContext) -> Records {
    text_records(reader, TencentParser { seen_data: false }, ctx)
}

struct TencentParser {
    /// A header is only recognised before the first record.
    seen_data: bool,
}

impl LineParser for TencentParser {
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
        let timestamp_ns = parse_decimal_scaled(f[0], 9)
            .ok_or_else(|| bad_field(1, "Timestamp", "a non-negative number of seconds", f[0]))?;
        let offset =
            parse_u64(f[1]).ok_or_else(|| bad_field(2, "Offset", "a sector number", f[1]))?;
        let size = match parse_u64(f[2]) {
            Some(0) | None => {
                return Err(bad_field(3, "Size", "a positive number of sectors", f[2]))
            }
            Some(size) => size,
        };
        let op = match f[3] {
            b"0" => Op::Read,
            b"1" => Op::Write,
            other => return Err(bad_field(4, "IOType", "0 (read) or 1 (write)", other)),
        };
        let dev =
            parse_u32(f[4]).ok_or_else(|| bad_field(5, "VolumeID", "a volume number", f[4]))?;
        let offset_bytes = blocks_to_bytes(offset, SECTOR_BYTES, 2, "Offset")?;
        let len_bytes = blocks_to_bytes(size, SECTOR_BYTES, 3, "Size")?;
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
