//! Multi-device traces: numbering devices that a trace names by a pair (blkparse and FIU's
//! major,minor), and the [`DeviceSelection`](super::DeviceSelection) policies that put several
//! devices into one address space.
//!
//! Memory here grows with the number of devices, never with the number of records, and the
//! device count is bounded so that a hostile trace cannot grow it without limit either.

use super::Records;
use crate::{Origin, Record, WorkloadError};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::rc::Rc;

/// The most devices one trace may name. Real traces have at most a few dozen.
pub(crate) const MAX_DEVICES: usize = 65_536;

/// Each device's region in a concatenated layout is a multiple of this.
pub(crate) const REGION_ALIGN_BYTES: u64 = 1 << 20;

/// Gives each distinct (major, minor) pair a small device number in order of first appearance.
#[derive(Default)]
pub(crate) struct DeviceIds {
    ids: HashMap<(u32, u32), u32>,
}

impl DeviceIds {
    pub fn id(&mut self, major: u32, minor: u32) -> Result<u32, String> {
        if let Some(&id) = self.ids.get(&(major, minor)) {
            return Ok(id);
        }
        if self.ids.len() >= MAX_DEVICES {
            return Err(format!(
                "device {major},{minor} would be the trace's {}th device; at most {MAX_DEVICES} are supported",
                MAX_DEVICES + 1
            ));
        }
        let id = self.ids.len() as u32;
        self.ids.insert((major, minor), id);
        Ok(id)
    }
}

/// Keeps the records of the devices `devs` (ascending, without repeats), and every error, so
/// that none is lost. A device that never appears is an error at the end of the trace, naming
/// the devices that did, rather than a run without it that looks like a result.
pub(crate) fn only(records: Records, devs: Vec<u32>, source: Rc<str>) -> Only {
    let found = vec![false; devs.len()];
    Only {
        records,
        devs,
        found,
        missing: usize::MAX,
        source,
        seen: BTreeSet::new(),
        seen_more: false,
        done: false,
    }
}

/// The devices a "not in the trace" message lists at most.
const SEEN_LISTED: usize = 16;

pub(crate) struct Only {
    records: Records,
    devs: Vec<u32>,
    /// Whether each of `devs` has had a record.
    found: Vec<bool>,
    /// How many of `devs` have had none yet (`usize::MAX` until the first record is counted).
    missing: usize,
    source: Rc<str>,
    /// Other devices seen while some selected one was still missing, for the message.
    seen: BTreeSet<u32>,
    seen_more: bool,
    /// The end (or the missing devices' error) has been reported.
    done: bool,
}

impl Only {
    /// The index in `devs` of `dev`, if it is selected. One device, the common case, is a
    /// comparison.
    #[inline]
    fn selected(&self, dev: u32) -> Option<usize> {
        match self.devs[..] {
            [only] => (only == dev).then_some(0),
            _ => self.devs.binary_search(&dev).ok(),
        }
    }

    /// The error for selected devices that never appeared.
    fn missing_error(&self) -> WorkloadError {
        let missing: Vec<String> = self
            .devs
            .iter()
            .zip(&self.found)
            .filter(|(_, found)| !**found)
            .map(|(dev, _)| dev.to_string())
            .collect();
        let listed: Vec<String> = self.seen.iter().map(u32::to_string).collect();
        // Once a selected device has appeared the others seen are listed as "other" devices.
        let other = if self.found.iter().any(|f| *f) {
            "other "
        } else {
            ""
        };
        let devices = match (listed.is_empty(), self.seen_more) {
            (true, _) if other.is_empty() => "it has no records".to_string(),
            (true, _) => "no other device has records".to_string(),
            (false, false) => format!("its {other}devices are {}", listed.join(", ")),
            (false, true) => format!("its {other}devices include {}", listed.join(", ")),
        };
        let (noun, verb) = if missing.len() == 1 {
            ("device", "does")
        } else {
            ("devices", "do")
        };
        WorkloadError::Spec {
            message: format!(
                "{}: {noun} {} {verb} not appear in the trace; {devices}",
                self.source,
                missing.join(", ")
            ),
        }
    }
}

impl Iterator for Only {
    type Item = Result<Record, WorkloadError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.missing == usize::MAX {
            self.missing = self.devs.len();
        }
        while let Some(item) = self.records.next() {
            let record = match &item {
                Ok(record) => record,
                Err(_) => return Some(item),
            };
            match self.selected(record.dev) {
                Some(i) => {
                    if !self.found[i] {
                        self.found[i] = true;
                        self.missing -= 1;
                    }
                    return Some(item);
                }
                None if self.missing == 0 => {}
                None => {
                    if self.seen.len() < SEEN_LISTED {
                        self.seen.insert(record.dev);
                    } else if !self.seen.contains(&record.dev) {
                        self.seen_more = true;
                    }
                }
            }
        }
        if self.done || self.missing == 0 {
            return None;
        }
        // Report once: the next call ends the stream.
        self.done = true;
        Some(Err(self.missing_error()))
    }
}

/// Whether a quick scan shows that the file names a single device, so that laying devices out
/// one after another is the identity and the sizing pass (a full parse) can be skipped. Only
/// the whitespace-separated `time device ...` family is scanned, by comparing the bytes of the
/// device column of every line; any other format, or any doubt (a line with one field), says
/// no and the sizing pass runs as usual. Malformed lines are left to the parse that follows.
pub(crate) fn names_one_device(
    mut reader: Box<dyn std::io::BufRead + Send>,
    format: super::TraceFormat,
    ctx: &super::ParseContext,
) -> Result<bool, WorkloadError> {
    if !format.entry().device_column {
        return Ok(false);
    }
    let mut device: Vec<u8> = Vec::new();
    let mut carry: Vec<u8> = Vec::new();
    loop {
        let buf = reader.fill_buf().map_err(|e| ctx.io(e))?;
        if buf.is_empty() {
            break;
        }
        let mut start = 0;
        while let Some(end) = memchr::memchr(b'\n', &buf[start..]) {
            let line = if carry.is_empty() {
                &buf[start..start + end]
            } else {
                carry.extend_from_slice(&buf[start..start + end]);
                &carry[..]
            };
            if !same_device(line, &mut device) {
                return Ok(false);
            }
            carry.clear();
            start += end + 1;
        }
        // A line split across two buffer fills: keep its first part (bounded by the line
        // length limit, past which the scan gives up).
        carry.extend_from_slice(&buf[start..]);
        if carry.len() > super::input::MAX_LINE_BYTES {
            return Ok(false);
        }
        let consumed = buf.len();
        reader.consume(consumed);
    }
    Ok(same_device(&carry, &mut device))
}

/// Checks one line's second field against the device seen so far (recording the first). A
/// plain byte walk: this runs once per line of the largest traces.
fn same_device(line: &[u8], device: &mut Vec<u8>) -> bool {
    let blank = |b: u8| b == b' ' || b == b'\t' || b == b'\r';
    let len = line.len();
    let mut i = 0;
    while i < len && blank(line[i]) {
        i += 1;
    }
    if i == len || line[i] == b'#' {
        return true;
    }
    // The first field (the timestamp) is the longest: find its end with a vector search.
    i += memchr::memchr2(b' ', b'\t', &line[i..]).unwrap_or(len - i);
    while i < len && blank(line[i]) {
        i += 1;
    }
    let start = i;
    while i < len && !blank(line[i]) {
        i += 1;
    }
    let dev = &line[start..i];
    if dev.is_empty() {
        return false;
    }
    if device.is_empty() {
        device.extend_from_slice(dev);
        true
    } else {
        device.as_slice() == dev
    }
}

/// Where each device starts when the devices are laid out one after another. It holds no `Rc`,
/// so that it can be measured on the calling thread and applied on the parse thread.
pub(crate) struct ConcatLayout {
    base_bytes: BTreeMap<u32, u64>,
    source: String,
}

impl ConcatLayout {
    /// Reads a whole pass of records and sizes each device's region: its highest end offset,
    /// rounded up to [`REGION_ALIGN_BYTES`] (and at least one such unit, so that a device that
    /// only saw flushes still has a region of its own). Regions follow each other in device
    /// number order, which makes the layout independent of record order.
    pub fn measure(records: Records, origin: Origin, source: &str) -> Result<Self, WorkloadError> {
        let mut end_bytes: BTreeMap<u32, u64> = BTreeMap::new();
        for item in records {
            let record = item?;
            let end = record.offset_bytes.saturating_add(record.len_bytes);
            if !end_bytes.contains_key(&record.dev) && end_bytes.len() >= MAX_DEVICES {
                return Err(WorkloadError::Malformed {
                    source: source.to_string(),
                    position: origin.describe(record.origin),
                    message: format!(
                        "device {} is more than the {MAX_DEVICES} devices that a concatenated layout supports; select one device or overlay them",
                        record.dev
                    ),
                });
            }
            let slot = end_bytes.entry(record.dev).or_insert(0);
            *slot = (*slot).max(end);
        }
        let mut base_bytes = BTreeMap::new();
        let mut next: u64 = 0;
        for (dev, end) in end_bytes {
            base_bytes.insert(dev, next);
            let region = round_up(end, REGION_ALIGN_BYTES)
                .map(|r| r.max(REGION_ALIGN_BYTES))
                .and_then(|r| next.checked_add(r));
            next = region.ok_or_else(|| WorkloadError::Spec {
                message: format!(
                    "{source}: the devices' regions together exceed 2^64 bytes; select one device or overlay them"
                ),
            })?;
        }
        Ok(ConcatLayout {
            base_bytes,
            source: source.to_string(),
        })
    }

    /// The byte offset at which `dev`'s region starts.
    pub fn base_bytes(&self, dev: u32) -> Option<u64> {
        self.base_bytes.get(&dev).copied()
    }

    /// Moves each record into its device's region. Flushes carry no range and stay at 0.
    pub fn apply(
        self,
        records: Records,
        origin: Origin,
    ) -> impl Iterator<Item = Result<Record, WorkloadError>> {
        records.map(move |item| {
            let mut record = item?;
            if record.op == storsim_core::Op::Flush {
                return Ok(record);
            }
            // The sizing pass saw the same records, so a device is only missing if the file
            // changed between the two passes.
            let base = self
                .base_bytes(record.dev)
                .ok_or_else(|| WorkloadError::Malformed {
                    source: self.source.clone(),
                    position: origin.describe(record.origin),
                    message: format!(
                    "device {} did not appear when the file was first read; did the file change?",
                    record.dev
                ),
                })?;
            record.offset_bytes =
                base.checked_add(record.offset_bytes)
                    .ok_or_else(|| WorkloadError::Malformed {
                        source: self.source.clone(),
                        position: origin.describe(record.origin),
                        message: "the record's offset overflows the concatenated address space"
                            .to_string(),
                    })?;
            Ok(record)
        })
    }
}

fn round_up(value: u64, align: u64) -> Option<u64> {
    value.checked_add(align - 1).map(|v| v / align * align)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{ParseContext, TraceFormat};

    fn scan(name: &str, text: &[u8], format: TraceFormat) -> bool {
        let ctx = ParseContext::named(name, false);
        names_one_device(Box::new(std::io::Cursor::new(text.to_vec())), format, &ctx).unwrap()
    }

    #[test]
    fn the_device_scan_says_one_only_when_every_line_agrees() {
        let mq = TraceFormat::named("mqsim");
        assert!(scan(
            "one",
            b"# c\n0 7 0 8 1\n\n10 7 8 8 0\r\n20 7 16 8 1",
            mq
        ));
        assert!(!scan("two", b"0 7 0 8 1\n10 3 8 8 0\n", mq));
        // Textually different spellings are treated as different: the sizing pass decides.
        assert!(!scan("spelling", b"0 7 0 8 1\n10 07 8 8 0\n", mq));
        assert!(!scan("short", b"0 7 0 8 1\n10\n", mq));
        // A long trace crosses many buffer fills, and a line may straddle two of them.
        let mut long = Vec::new();
        for i in 0..100_000u64 {
            long.extend_from_slice(format!("{i} 4 {i} 8 1\n").as_bytes());
        }
        assert!(scan("long", &long, mq));
        long.extend_from_slice(b"100000 5 0 8 1\n");
        assert!(!scan("long-tail", &long, mq));
        assert!(!scan(
            "msr",
            b"0,h,0,Read,0,4096,1\n",
            TraceFormat::named("msr")
        ));
    }
}
