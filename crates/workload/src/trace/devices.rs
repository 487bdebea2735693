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

/// Keeps the records of one device (and every error, so that none is lost). A device that
/// never appears is an error at the end of the trace, naming the devices that did, rather
/// than an empty run that looks like a result.
pub(crate) fn only(records: Records, dev: u32, source: Rc<str>) -> Only {
    Only {
        records,
        dev,
        source,
        matched: false,
        seen: BTreeSet::new(),
        seen_more: false,
    }
}

/// The devices a "not in the trace" message lists at most.
const SEEN_LISTED: usize = 16;

pub(crate) struct Only {
    records: Records,
    dev: u32,
    source: Rc<str>,
    matched: bool,
    seen: BTreeSet<u32>,
    seen_more: bool,
}

impl Iterator for Only {
    type Item = Result<Record, WorkloadError>;

    fn next(&mut self) -> Option<Self::Item> {
        for item in self.records.by_ref() {
            match &item {
                Ok(record) if record.dev == self.dev => {
                    self.matched = true;
                    return Some(item);
                }
                Ok(record) => {
                    if self.matched {
                        continue;
                    }
                    if self.seen.len() < SEEN_LISTED {
                        self.seen.insert(record.dev);
                    } else if !self.seen.contains(&record.dev) {
                        self.seen_more = true;
                    }
                }
                Err(_) => return Some(item),
            }
        }
        if self.matched {
            return None;
        }
        // Report once: the next call finds `matched` set and ends the stream.
        self.matched = true;
        let listed: Vec<String> = self.seen.iter().map(u32::to_string).collect();
        let devices = match (listed.is_empty(), self.seen_more) {
            (true, _) => "it has no records".to_string(),
            (false, false) => format!("its devices are {}", listed.join(", ")),
            (false, true) => format!("its devices include {}", listed.join(", ")),
        };
        Some(Err(WorkloadError::Spec {
            message: format!(
                "{}: device {} does not appear in the trace; {devices}",
                self.source, self.dev
            ),
        }))
    }
}

/// Where each device starts when the devices are laid out one after another.
pub(crate) struct ConcatLayout {
    base_bytes: BTreeMap<u32, u64>,
    source: Rc<str>,
}

impl ConcatLayout {
    /// Reads a whole pass of records and sizes each device's region: its highest end offset,
    /// rounded up to [`REGION_ALIGN_BYTES`] (and at least one such unit, so that a device that
    /// only saw flushes still has a region of its own). Regions follow each other in device
    /// number order, which makes the layout independent of record order.
    pub fn measure(
        records: Records,
        origin: Origin,
        source: Rc<str>,
    ) -> Result<Self, WorkloadError> {
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
        Ok(ConcatLayout { base_bytes, source })
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
                    source: self.source.to_string(),
                    position: origin.describe(record.origin),
                    message: format!(
                    "device {} did not appear when the file was first read; did the file change?",
                    record.dev
                ),
                })?;
            record.offset_bytes =
                base.checked_add(record.offset_bytes)
                    .ok_or_else(|| WorkloadError::Malformed {
                        source: self.source.to_string(),
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
