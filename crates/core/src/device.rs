//! The Device contract: the one interface through which the simulation engine, the real-time
//! emulator and the co-simulation controller all drive a model.
//!
//! A device only computes timing. It never reads a clock, sleeps, does I/O or holds data; the
//! driver tells it what time it is. The protocol is the co-simulation thesis' emulator server
//! ("submit request", "get next response") without rollback: the driver never asks about an
//! instant earlier than one it has already passed.

use crate::counter::Described;
use crate::request::{Completion, Request};
use crate::time::SimTime;
use std::fmt;

/// Why a device refused a request. Refusal leaves the device's state unchanged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceError {
    /// The byte range is not inside the device.
    OutOfRange {
        offset_bytes: u64,
        len_bytes: u64,
        capacity_bytes: u64,
    },
    /// The device already holds `queue_depth()` requests; the driver must wait for a completion.
    QueueFull { queue_depth: usize },
    /// The request asked for something the model cannot do (for example a zero-length read).
    Invalid { reason: String },
    /// The device has failed (a flash device worn out past its spare blocks, say) and accepts
    /// no more requests. Requests it accepted before still complete. Drivers end the run
    /// there and report what was done: a failure is a result, not bad input.
    Failed { reason: String },
}

impl fmt::Display for DeviceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceError::OutOfRange {
                offset_bytes,
                len_bytes,
                capacity_bytes,
            } => write!(
                f,
                "request [{offset_bytes}, +{len_bytes}) bytes is past the end of the device \
                 ({capacity_bytes} bytes)"
            ),
            DeviceError::QueueFull { queue_depth } => {
                write!(
                    f,
                    "device queue is full ({queue_depth} requests outstanding)"
                )
            }
            DeviceError::Invalid { reason } => write!(f, "invalid request: {reason}"),
            DeviceError::Failed { reason } => write!(f, "the device has failed: {reason}"),
        }
    }
}

impl std::error::Error for DeviceError {}

/// The most requests any device or closed loop holds at once: NVMe's largest queue (65,536
/// entries). Queues are allocated up front, so every configurable depth is checked against it.
pub const QUEUE_DEPTH_MAX: u32 = 65_536;

/// A named model-specific statistic, reported under `device` in the results. Names are
/// snake_case with their unit as a suffix (`busy_ns`, `sequential_requests`).
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceCounter {
    pub name: String,
    pub value: f64,
}

impl DeviceCounter {
    pub fn new(name: impl Into<String>, value: f64) -> Self {
        DeviceCounter {
            name: name.into(),
            value,
        }
    }
}

/// The wear of one flash array at the end of a run: every block's erase count, for drawing
/// wear histograms at any bin width. Plain data, read once when the results are written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockWear {
    /// Which device in a composite holds the array: empty for the device asked, otherwise
    /// the path of child names from it (`child0`, `flash`, `child1.flash`).
    pub unit: String,
    /// Channels: the outermost level of the array's shape. The product of the five shape
    /// fields (channels, chips, dies, planes, blocks) is `erase_counts.len()`.
    pub channels: u32,
    /// Chips on each channel.
    pub chips_per_channel: u32,
    /// Dies in each chip.
    pub dies_per_chip: u32,
    /// Planes in each die.
    pub planes_per_die: u32,
    /// Blocks in each plane.
    pub blocks_per_plane: u32,
    /// Pages in one block, for turning erases into bytes written.
    pub pages_per_block: u32,
    /// Erases of every block over the array's life (preconditioning included), in flat
    /// block order: block `b` of plane `p` of die `d` ... is at
    /// `((((channel * chips + chip) * dies + die) * planes + plane) * blocks + block)`.
    pub erase_counts: Vec<u32>,
}

impl BlockWear {
    /// The same wear seen from a parent that names this device `child`: `child` is put in
    /// front of the unit path.
    pub fn within(mut self, child: &str) -> BlockWear {
        self.unit = if self.unit.is_empty() {
            child.to_string()
        } else {
            format!("{child}.{}", self.unit)
        };
        self
    }
}

/// One model inside a device, as the device itself declares it: the prefix its counters are
/// listed under and its model's name. A composite's parts are its children (and theirs); an
/// SSD's part is its flash translation layer. Readers (the report's plots and labels) learn a
/// device's composition from these rather than from the shape of its counters' names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DevicePart {
    /// The prefix of the part's counters in the device's (`flash_`, `child0_ssd_`).
    pub prefix: String,
    /// The part's model, as its [`Device::model_name`] says (`ssd`, `hdd`, ...), or, for an
    /// SSD's flash translation layer, the FTL's name as device files write it (`dftl`, ...).
    pub model: &'static str,
}

impl DevicePart {
    /// The same part seen from a parent that lists this device's counters under `prefix`.
    pub fn within(&self, prefix: &str) -> DevicePart {
        DevicePart {
            prefix: format!("{prefix}{}", self.prefix),
            model: self.model,
        }
    }

    /// The parts of a composite's child listed under `prefix`: the child itself, then its own
    /// parts under the same prefix, so that a composite of composites lists every level.
    pub fn child(prefix: String, child: &dyn Device) -> Vec<DevicePart> {
        let mut out: Vec<DevicePart> = child.parts().iter().map(|p| p.within(&prefix)).collect();
        out.insert(
            0,
            DevicePart {
                prefix,
                model: child.model_name(),
            },
        );
        out
    }
}

/// A storage device model.
///
/// Contract, which the conformance kit ([`crate::conformance::check`]) checks on every model:
/// - the driver calls `submit` and `advance` with non-decreasing `now` (it may repeat), and
///   `submit(now, r)` with `now >= r.arrival`;
/// - every accepted request appears in exactly one `advance` output, unchanged, with
///   `arrival <= service_start <= finish` and `finish <= now` of that `advance` call;
///   `advance(now)` reports every request finished by `now` (none turns up in a later call),
///   in finishing order, ties in submission order (except that a request whose service began
///   at the instant another finished may follow it, as on a disk serving one at a time);
/// - `next_deadline()` is the earliest instant at which the device's state changes by itself
///   (a completion, or internal work such as garbage collection), or `None` when idle, and
///   never `None` while accepted requests are outstanding. It is never in the past; nothing
///   completes in `advance(now)` unless the deadline announced before the call was at or
///   before `now` and at or before the completion's finish; after `advance(now)` the deadline
///   is later than `now`, so a driver that advances to each deadline always makes progress;
/// - holding fewer than `queue_depth()` requests, the device accepts a valid request inside
///   its capacity (or refuses it as `Invalid` or `Failed` for a reason of its own); holding
///   that many, it refuses with `QueueFull`; a range past the end is refused with
///   `OutOfRange`. A refusal, like a `prefetch` hint, changes nothing that follows;
/// - the same calls give the same answers: no randomness but a seeded [`crate::Prng`], no
///   iteration order that varies between runs.
///
/// Devices are `Send` so that the emulator can build a replacement on its control thread (an
/// SSD's preconditioning takes seconds) and hand it to the pacing thread without stalling it.
pub trait Device: Send {
    /// The model's name as used in presets and results (`linear`, `table`, ...).
    fn model_name(&self) -> &'static str;

    /// Addressable bytes.
    fn capacity_bytes(&self) -> u64;

    /// How many requests the device accepts before `submit` refuses with `QueueFull`.
    fn queue_depth(&self) -> usize;

    /// Hands a request to the device at instant `now`.
    fn submit(&mut self, now: SimTime, request: Request) -> Result<(), DeviceError>;

    /// The earliest instant at which the device will change state on its own.
    fn next_deadline(&self) -> Option<SimTime>;

    /// Moves the device to `now` and appends every request finished by then to `done`, in
    /// finishing order (ties in submission order).
    fn advance(&mut self, now: SimTime, done: &mut Vec<Completion>);

    /// Model-specific counters for the results, in a fixed order.
    fn counters(&self) -> Vec<DeviceCounter>;

    /// Appends the values of [`Device::counters`], in the same order, to `values`. A reader
    /// that samples the counters many times in a run (the time series, at the end of every
    /// window) reads the names once and then only the values. The default takes them from
    /// `counters()`; a model whose counters are costly to name writes the values alone.
    fn counter_values(&self, values: &mut Vec<f64>) {
        values.extend(self.counters().into_iter().map(|c| c.value));
    }

    /// What each of [`Device::counters`] is: the model's descriptors, and a composite's
    /// children's under the prefixes it names them with. Every counter the device lists
    /// matches exactly one of them (the conformance kit checks it). The default, none, is for
    /// test doubles that count nothing: a model that lists counters without describing them
    /// fails the kit.
    fn counter_descriptors(&self) -> Vec<Described> {
        Vec::new()
    }

    /// The models inside a composite device (an array's children, a hybrid drive's flash and
    /// disk, and theirs in turn), each with the prefix its counters are listed under. A
    /// wrapper that lists its inner device's counters unprefixed (a host interface, a faults
    /// layer) passes the inner device's parts on. The default, none, is a device of one model.
    fn parts(&self) -> Vec<DevicePart> {
        Vec::new()
    }

    /// A hint from the driver that `request` is likely to be submitted next (its `id` and
    /// `arrival` may not be final). A model may start loading what that submission will touch,
    /// such as a mapping-table entry, so that it finds it in the processor's caches. A hint
    /// changes no result and needs no answer; the default ignores it.
    fn prefetch(&self, _request: &Request) {}

    /// Every flash array's per-block erase counts, one entry per array (a composite lists its
    /// children's, their `unit` naming the child). Read once at the end of a run, never per
    /// request; the default, for devices without flash, is none.
    fn block_wear(&self) -> Vec<BlockWear> {
        Vec::new()
    }
}

impl<D: Device + ?Sized> Device for Box<D> {
    fn model_name(&self) -> &'static str {
        (**self).model_name()
    }
    fn capacity_bytes(&self) -> u64 {
        (**self).capacity_bytes()
    }
    fn queue_depth(&self) -> usize {
        (**self).queue_depth()
    }
    fn submit(&mut self, now: SimTime, request: Request) -> Result<(), DeviceError> {
        (**self).submit(now, request)
    }
    fn next_deadline(&self) -> Option<SimTime> {
        (**self).next_deadline()
    }
    fn advance(&mut self, now: SimTime, done: &mut Vec<Completion>) {
        (**self).advance(now, done)
    }
    fn counters(&self) -> Vec<DeviceCounter> {
        (**self).counters()
    }
    fn counter_values(&self, values: &mut Vec<f64>) {
        (**self).counter_values(values)
    }
    fn counter_descriptors(&self) -> Vec<Described> {
        (**self).counter_descriptors()
    }
    fn parts(&self) -> Vec<DevicePart> {
        (**self).parts()
    }
    fn prefetch(&self, request: &Request) {
        (**self).prefetch(request)
    }
    fn block_wear(&self) -> Vec<BlockWear> {
        (**self).block_wear()
    }
}

/// Checks the range part of the contract; models call it first in `submit`.
pub fn check_range(request: &Request, capacity_bytes: u64) -> Result<(), DeviceError> {
    let end = request.offset_bytes.checked_add(request.len_bytes);
    match end {
        Some(end) if end <= capacity_bytes => Ok(()),
        _ => Err(DeviceError::OutOfRange {
            offset_bytes: request.offset_bytes,
            len_bytes: request.len_bytes,
            capacity_bytes,
        }),
    }
}
