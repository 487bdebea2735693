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
//!
//! The completion (`C`) events say when the device finished each request. They are not part of
//! the records; a validation reads them through [`measured`], which pairs each `D` with the
//! next `C` of the same device and sector.

use super::devices::DeviceIds;
use super::fields::{
    bad_field, blocks_to_bytes, check_end, parse_decimal_scaled, parse_u32, parse_u64, show,
    split_whitespace,
};
use super::format::{Detect, FormatEntry};
use super::input::{text_records, LineParser, Parsed, TextRecords};
use super::measured::MeasuredTimes;
use super::{BlkparseEvent, ParseContext, Records, TraceOptions};
use crate::{Pacing, Record, WorkloadError};
use std::collections::{BTreeMap, VecDeque};
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
        rule_out: None,
    },
    binary: false,
    single_device: false,
    device_column: false,
    pacing: Pacing::Open,
    records: |reader, ctx, opts| records(reader, ctx, opts.blkparse_event),
    measured: Some(measured),
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

/// Every dispatched request's response time, from its `D` event to the `C` event that
/// completes it, keyed by the `D` event's line. A `D` is paired with the first later `C` of the
/// same device and start sector (several requests to one sector complete in the order they were
/// dispatched). A `C` that matches no earlier `D` (its request was in flight when tracing
/// started) is counted and left out; a `D` whose `C` the trace lacks gets no time. Flushes,
/// which have no sector, get none either.
fn measured(
    reader: Box<dyn BufRead>,
    ctx: ParseContext,
    opts: &TraceOptions,
) -> Result<MeasuredTimes, WorkloadError> {
    if opts.blkparse_event == BlkparseEvent::Queue {
        return Err(WorkloadError::Spec {
            message: format!(
                "{}: a blkparse trace measures response times from dispatch (D) to completion (C); \
                 read it by its D events, not its Q events",
                ctx.source
            ),
        });
    }
    let events = TextRecords::new(
        reader,
        PairingParser(BlkparseParser {
            action: b"D",
            devices: DeviceIds::default(),
            in_summary: false,
        }),
        ctx.clone(),
    );
    // Keyed by (device, sector); a BTreeMap so that nothing depends on hashing.
    let mut pending: BTreeMap<(u32, u64), VecDeque<(u64, u64)>> = BTreeMap::new();
    let mut times = Vec::new();
    let mut unmatched = 0u64;
    for event in events {
        match event? {
            Event::Dispatch {
                line,
                timestamp_ns,
                key,
            } => pending
                .entry(key)
                .or_default()
                .push_back((line, timestamp_ns)),
            Event::Completion {
                line,
                timestamp_ns,
                key,
            } => {
                let Some(queue) = pending.get_mut(&key) else {
                    unmatched += 1;
                    continue;
                };
                let (d_line, d_ns) = queue.pop_front().expect("queues are removed when empty");
                if queue.is_empty() {
                    pending.remove(&key);
                }
                let Some(response_ns) = timestamp_ns.checked_sub(d_ns) else {
                    return Err(ctx.malformed(
                        format!("line {line}"),
                        format!(
                            "this completion is earlier than the dispatch it completes (line {d_line})"
                        ),
                    ));
                };
                times.push((d_line, response_ns));
            }
        }
    }
    Ok(MeasuredTimes::from_pairs(times, unmatched))
}

/// A dispatch or a completion of a range of sectors.
enum Event {
    Dispatch {
        line: u64,
        timestamp_ns: u64,
        /// (device number, start sector)
        key: (u32, u64),
    },
    Completion {
        line: u64,
        timestamp_ns: u64,
        key: (u32, u64),
    },
}

/// The `D` events as the record parser reads them (so that their lines, devices and errors are
/// the same) and the `C` events with a sector range.
struct PairingParser(BlkparseParser);

impl LineParser for PairingParser {
    type Item = Event;

    fn parse_line(&mut self, line: &[u8], line_no: u64) -> Result<Parsed<Event>, String> {
        match self.0.parse_line(line, line_no)? {
            Parsed::Item(r) if r.op == Op::Flush => Ok(Parsed::Skip),
            Parsed::Item(r) => Ok(Parsed::Item(Event::Dispatch {
                line: line_no,
                timestamp_ns: r.timestamp_ns,
                key: (r.dev, r.offset_bytes / SECTOR_BYTES),
            })),
            Parsed::Ignore => Ok(Parsed::Ignore),
            Parsed::Skip => {
                let mut f = [&b""[..]; 10];
                let n = split_whitespace(line, &mut f);
                if n < 10 || f[5] != b"C" || f[8] != b"+" {
                    return Ok(Parsed::Skip);
                }
                let Some((major, minor)) = parse_device(f[0]) else {
                    return Ok(Parsed::Skip);
                };
                let dev = self.0.devices.id(major, minor)?;
                let timestamp_ns = parse_decimal_scaled(f[3], 9).ok_or_else(|| {
                    bad_field(
                        4,
                        "time",
                        "seconds with a fraction such as 0.000031865",
                        f[3],
                    )
                })?;
                let sector = parse_u64(f[7])
                    .ok_or_else(|| bad_field(8, "sector", "a sector number", f[7]))?;
                Ok(Parsed::Item(Event::Completion {
                    line: line_no,
                    timestamp_ns,
                    key: (dev, sector),
                }))
            }
        }
    }
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
