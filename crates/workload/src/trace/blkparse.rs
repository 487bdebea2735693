//! The default text output of `blkparse`:
//! `maj,min cpu sequence seconds.nanoseconds pid action rwbs [sector + sectors] [process]`.
//!
//! Only one action becomes requests: `D` (issued to the driver) by default, or `Q` (queued by
//! the submitter). Every other action, the `m` message lines and the summary block that blkparse
//! prints at the end (from the first `CPU<n> (...)` or `Total (...)` line on) are skipped.
//!
//! The rwbs column decides the operation: `D` discard is a trim, else `W` a write, else `R` a
//! read. An event without a sector range whose rwbs starts with `F` (a pre-flush, such as `FWS`
//! or `FN`) is a flush. A pre-flush attached to data (`FWS 2048 + 8`) is replayed as the write
//! alone. Events without a range that are not flushes (and SCSI pass-through events, which carry
//! a byte count instead of a range) are counted as ignored. Devices are numbered in order of
//! first appearance of their `maj,min` pair in any event line, starting at 0.

use super::devices::DeviceIds;
use super::fields::{
    bad_field, blocks_to_bytes, check_end, parse_decimal_scaled, parse_u32, parse_u64, show,
    split_whitespace,
};
use super::format::{Detect, FormatEntry};
use super::input::{text_records, LineParser, Parsed};
use super::{BlkparseEvent, ParseContext, Records};
use crate::{Pacing, Record};
use std::io::BufRead;
use storsim_core::{Op, SECTOR_BYTES};

const EXAMPLE: &str = "8,16 5 6 0.000031865 18615 D R 1444645666 + 256 [java]";

/// First words of the lines that open blkparse's closing summary.
const SUMMARY_OPENERS: [&[u8]; 5] = [b"CPU", b"Total", b"Throughput", b"Events", b"Skips"];

/// The format's entry in the format table.
pub(super) const FORMAT: FormatEntry = FormatEntry {
    name: "blkparse",
    aliases: &[],
    description: "blkparse default text output; D (dispatch) or Q (queue) events become requests",
    // blkparse interleaves message lines with events and ends with a summary, so only its
    // first line has to be an event; blkparse never writes anything else first.
    detect: Detect::Text {
        header: None,
        first: is_event,
        sample: None,
    },
    binary: false,
    single_device: false,
    device_column: false,
    pacing: Pacing::Open,
    records: |reader, ctx, opts| records(reader, ctx, opts.blkparse_event),
};

/// Whether a line is an event: `major,minor cpu sequence seconds.fraction pid ...`.
fn is_event(line: &[u8]) -> bool {
    let mut f = [&b""[..]; 7];
    split_whitespace(line, &mut f) >= 7
        && parse_device(f[0]).is_some()
        && parse_u64(f[1]).is_some()
        && parse_u64(f[2]).is_some()
        && f[3].contains(&b'.')
        && parse_decimal_scaled(f[3], 9).is_some()
}

pub(crate) fn records(
    reader: Box<dyn BufRead>,
    ctx: ParseContext,
    event: BlkparseEvent,
) -> Records {
    let action: &'static [u8] = match event {
        BlkparseEvent::Dispatch => b"D",
        BlkparseEvent::Queue => b"Q",
    };
    text_records(
        reader,
        BlkparseParser {
            action,
            devices: DeviceIds::default(),
            in_summary: false,
        },
        ctx,
    )
}

struct BlkparseParser {
    action: &'static [u8],
    devices: DeviceIds,
    in_summary: bool,
}

/// Parses blkparse's `maj,min` device column.
fn parse_device(s: &[u8]) -> Option<(u32, u32)> {
    let comma = s.iter().position(|&b| b == b',')?;
    Some((parse_u32(&s[..comma])?, parse_u32(&s[comma + 1..])?))
}

impl LineParser for BlkparseParser {
    type Item = Record;

    fn parse_line(&mut self, line: &[u8], line_no: u64) -> Result<Parsed<Record>, String> {
        let mut f = [&b""[..]; 10];
        let n = split_whitespace(line, &mut f);
        let Some((major, minor)) = parse_device(f[0]) else {
            if self.in_summary {
                return Ok(Parsed::Skip);
            }
            if SUMMARY_OPENERS.iter().any(|w| f[0].starts_with(w)) {
                self.in_summary = true;
                return Ok(Parsed::Skip);
            }
            return Err(format!(
                "expected an event line starting with the device as major,minor (like `{EXAMPLE}`), found {}",
                show(f[0])
            ));
        };
        if n < 7 {
            return Err(format!(
                "expected at least 7 whitespace-separated fields (maj,min cpu sequence time pid action rwbs), found {n}"
            ));
        }
        // Numbering every event's device, not just the selected ones, keeps the numbers the
        // same whichever event is selected.
        let dev = self.devices.id(major, minor)?;
        if f[5] != self.action {
            return Ok(Parsed::Skip);
        }
        let timestamp_ns = parse_decimal_scaled(f[3], 9).ok_or_else(|| {
            bad_field(
                4,
                "time",
                "seconds with a fraction such as 0.000031865",
                f[3],
            )
        })?;
        let rwbs = f[6];
        let range = if n >= 10 && f[8] == b"+" {
            let sector =
                parse_u64(f[7]).ok_or_else(|| bad_field(8, "sector", "a sector number", f[7]))?;
            let count = parse_u64(f[9])
                .ok_or_else(|| bad_field(10, "sectors", "a number of sectors", f[9]))?;
            Some((sector, count)).filter(|&(_, count)| count > 0)
        } else {
            None
        };
        let has = |c: u8| rwbs.contains(&c);
        let op = match range {
            Some(_) if has(b'D') => Op::Trim,
            Some(_) if has(b'W') => Op::Write,
            Some(_) if has(b'R') => Op::Read,
            Some(_) => {
                return Err(bad_field(
                    7,
                    "rwbs",
                    "a type containing R, W or D for an event with sectors",
                    rwbs,
                ))
            }
            None if rwbs.first() == Some(&b'F') => Op::Flush,
            None => return Ok(Parsed::Ignore),
        };
        let (offset_bytes, len_bytes) = match range {
            Some((sector, count)) => {
                let offset = blocks_to_bytes(sector, SECTOR_BYTES, 8, "sector")?;
                let len = blocks_to_bytes(count, SECTOR_BYTES, 10, "sectors")?;
                check_end(offset, len)?;
                (offset, len)
            }
            None => (0, 0),
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
