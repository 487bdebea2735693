//! The flash SSD model: a bounded host queue, an optional DRAM write buffer, an FTL and the
//! NAND array's channel and die timelines, behind the [`Device`] contract.
//!
//! A host request becomes one FTL call per logical page it touches; each call's flash
//! operations are placed on the timelines at once (respecting their dependencies), so the
//! request's completion time is known at submission. Nothing here reads a clock: time only
//! arrives through `submit` and `advance`. See docs/models/ssd.md.

mod params;
mod precondition;
pub mod presets;
mod stats;

pub use params::{Energy, Precondition, SsdParams, WriteBuffer};
pub use precondition::PreconditionReport;

use stats::OpCounts;
use storsim_core::{
    check_range, Completion, Device, DeviceCounter, DeviceError, EventQueue, Op, Request,
    SimDuration, SimTime,
};
use storsim_flash::{FlashOpKind, Scheduler};
use storsim_ftl::{Dep, FlashOp, Ftl, FtlError};

/// Why a device could not be built.
#[derive(Debug)]
pub enum SsdError {
    /// The parameters are inconsistent (see [`SsdParams::validate`]).
    Params(String),
    /// The FTL refused its parameters, or preconditioning failed (for example wore the device out).
    Ftl(FtlError),
}

impl std::fmt::Display for SsdError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SsdError::Params(m) => write!(f, "{m}"),
            SsdError::Ftl(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for SsdError {}

impl From<FtlError> for SsdError {
    fn from(e: FtlError) -> Self {
        SsdError::Ftl(e)
    }
}

pub struct SsdDevice {
    params: SsdParams,
    ftl: Box<dyn Ftl>,
    scheduler: Scheduler,
    completions: EventQueue<Completion>,
    ops: Vec<FlashOp>,
    counts: OpCounts,
    page_bytes: u64,
    capacity_bytes: u64,
    /// Write buffer: pages held until their program finishes, by release time.
    buffer: EventQueue<u64>,
    buffer_pages_held: u64,
    buffer_capacity_pages: u64,
    /// Buffer admission is FIFO: no write is admitted before an earlier one.
    buffer_admit_floor: SimTime,
    last_program_finish: SimTime,
    last_host_finish: SimTime,
    /// When the next unit of background garbage collection runs, if the device is idle.
    idle_work_at: Option<SimTime>,
    idle_work_possible: bool,
    idle_gc_units: u64,
    /// The first FTL failure (a worn-out device, an FTL bug). Once set, every request fails.
    failed: Option<FtlError>,
    precondition: PreconditionReport,
}

impl SsdDevice {
    /// Builds the device, preconditions it as its parameters say, and starts the statistics
    /// after the preconditioning.
    pub fn new(params: SsdParams) -> Result<Self, SsdError> {
        params.validate().map_err(SsdError::Params)?;
        let mut ftl = params.ftl.build(params.geometry, params.endurance)?;
        let precondition = precondition::run(ftl.as_mut(), &params.precondition, params.seed)?;
        let page_bytes = params.geometry.page_bytes as u64;
        let capacity_bytes = ftl.logical_pages() * page_bytes;
        let buffer_capacity_pages = params
            .write_buffer
            .map_or(0, |b| b.capacity_bytes / page_bytes);
        Ok(SsdDevice {
            scheduler: Scheduler::new(params.geometry, params.timing.clone()),
            completions: EventQueue::with_capacity(params.queue_depth),
            buffer: EventQueue::with_capacity(buffer_capacity_pages.max(1) as usize),
            ops: Vec::with_capacity(256),
            counts: OpCounts::default(),
            page_bytes,
            capacity_bytes,
            buffer_pages_held: 0,
            buffer_capacity_pages,
            buffer_admit_floor: SimTime::ZERO,
            last_program_finish: SimTime::ZERO,
            last_host_finish: SimTime::ZERO,
            idle_work_at: None,
            idle_work_possible: false,
            idle_gc_units: 0,
            failed: None,
            precondition,
            ftl,
            params,
        })
    }

    pub fn ftl(&self) -> &dyn Ftl {
        self.ftl.as_ref()
    }

    pub fn params(&self) -> &SsdParams {
        &self.params
    }

    /// Places one FTL call's operations on the timelines, no earlier than `start`; returns when
    /// the last of them finishes (`start` if there were none).
    fn schedule_ops(&mut self, start: SimTime) -> SimTime {
        let mut previous = start;
        let mut all = start;
        for op in &self.ops {
            let earliest = match op.dep {
                Dep::None => start,
                Dep::Previous => previous,
                Dep::All => all,
            };
            let finish = self.scheduler.schedule(op.kind, op.ppa, earliest);
            self.counts.add(op.kind, op.cause);
            if op.kind == FlashOpKind::Program {
                self.last_program_finish = self.last_program_finish.max(finish);
            }
            previous = finish;
            all = all.max(finish);
        }
        all
    }

    fn ftl_failure(&mut self, e: FtlError) -> DeviceError {
        let reason = format!("flash translation layer: {e}");
        if !matches!(e, FtlError::Rejected { .. } | FtlError::OutOfRange { .. }) {
            self.failed = Some(e);
        }
        DeviceError::Invalid { reason }
    }

    /// Admits `pages` into the write buffer no earlier than `now`; returns the admission time.
    fn admit_to_buffer(&mut self, now: SimTime, pages: u64) -> SimTime {
        let mut at = now.max(self.buffer_admit_floor);
        while let Some((release, held)) = self.buffer.pop_due(at) {
            debug_assert!(release <= at);
            self.buffer_pages_held -= held;
        }
        while self.buffer_pages_held + pages > self.buffer_capacity_pages {
            let (release, held) = self.buffer.pop().expect("a full buffer holds pages");
            self.buffer_pages_held -= held;
            at = at.max(release);
        }
        self.buffer_admit_floor = at;
        at
    }

    fn page_range(&self, request: &Request) -> std::ops::Range<u64> {
        let first = request.offset_bytes / self.page_bytes;
        let end = request.end_bytes().div_ceil(self.page_bytes);
        first..end
    }
}

impl Device for SsdDevice {
    fn model_name(&self) -> &'static str {
        "ssd"
    }

    fn capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }

    fn queue_depth(&self) -> usize {
        self.completions.capacity()
    }

    fn submit(&mut self, now: SimTime, request: Request) -> Result<(), DeviceError> {
        check_range(&request, self.capacity_bytes)?;
        if self.completions.len() >= self.completions.capacity() {
            return Err(DeviceError::QueueFull {
                queue_depth: self.completions.capacity(),
            });
        }
        if let Some(e) = &self.failed {
            return Err(DeviceError::Invalid {
                reason: format!("the device has failed: {e}"),
            });
        }
        self.idle_work_at = None;
        self.scheduler.prune(now);
        let overhead = self.params.controller_overhead;
        let start = now + overhead;
        let pages = self.page_range(&request);
        let mut service_start = now;
        let mut finish = start;
        match request.op {
            Op::Read => {
                for lpn in pages {
                    self.ops.clear();
                    if let Err(e) = self.ftl.read(lpn, &mut self.ops) {
                        return Err(self.ftl_failure(e));
                    }
                    finish = finish.max(self.schedule_ops(start));
                    self.counts.host_read_pages += 1;
                }
            }
            Op::Write => {
                let n = pages.end - pages.start;
                let buffered = n <= self.buffer_capacity_pages;
                for lpn in pages {
                    self.ops.clear();
                    if let Err(e) = self.ftl.write(lpn, &mut self.ops) {
                        return Err(self.ftl_failure(e));
                    }
                    finish = finish.max(self.schedule_ops(start));
                    self.counts.host_write_pages += 1;
                }
                self.idle_work_possible = true;
                if buffered {
                    // The host sees the write done once its data sits in DRAM; the buffer
                    // holds the pages until their programs finish.
                    let admitted = self.admit_to_buffer(now, n);
                    let release = finish;
                    let latency = self
                        .params
                        .write_buffer
                        .map_or(SimDuration::ZERO, |b| b.latency);
                    service_start = admitted;
                    finish = admitted + overhead + latency;
                    self.buffer_pages_held += n;
                    self.buffer
                        .push(release.max(finish), n)
                        .map_err(|_| DeviceError::Invalid {
                            reason: "write buffer overflow".into(),
                        })?;
                }
            }
            Op::Trim => {
                for lpn in pages {
                    self.ops.clear();
                    if let Err(e) = self.ftl.trim(lpn, &mut self.ops) {
                        return Err(self.ftl_failure(e));
                    }
                    finish = finish.max(self.schedule_ops(start));
                    self.counts.trim_pages += 1;
                }
            }
            Op::Flush => {
                finish = finish.max(self.last_program_finish);
            }
        }
        self.last_host_finish = self.last_host_finish.max(finish);
        let completion = Completion {
            request,
            service_start,
            finish,
        };
        self.completions
            .push(finish, completion)
            .map_err(|_| DeviceError::QueueFull {
                queue_depth: self.completions.capacity(),
            })
    }

    fn next_deadline(&self) -> Option<SimTime> {
        match (self.completions.peek_time(), self.idle_work_at) {
            (Some(c), _) => Some(c),
            (None, idle) => idle,
        }
    }

    fn advance(&mut self, now: SimTime, done: &mut Vec<Completion>) {
        while let Some((_, c)) = self.completions.pop_due(now) {
            done.push(c);
        }
        if !self.completions.is_empty() || !self.params.background_gc {
            return;
        }
        // The device is idle: garbage-collect in the background, one unit at a time, until the
        // FTL has nothing to do or a host request arrives (submit cancels the next unit).
        if self.idle_work_at.is_none() && self.idle_work_possible && self.failed.is_none() {
            self.idle_work_at = Some(self.last_host_finish.max(now) + self.params.idle_gc_delay);
        }
        while let Some(at) = self.idle_work_at {
            if at > now {
                break;
            }
            self.ops.clear();
            match self.ftl.idle(&mut self.ops) {
                Ok(true) => {
                    self.idle_gc_units += 1;
                    let finish = self.schedule_ops(at);
                    // Never schedule the next unit at the same instant: progress is guaranteed
                    // because every unit takes flash time.
                    self.idle_work_at = Some(finish.max(at + SimDuration(1)));
                }
                Ok(false) => {
                    self.idle_work_possible = false;
                    self.idle_work_at = None;
                }
                Err(e) => {
                    self.failed = Some(e);
                    self.idle_work_at = None;
                }
            }
        }
    }

    fn counters(&self) -> Vec<DeviceCounter> {
        stats::counters(self)
    }
}
