//! The flash SSD model: a bounded host queue, an optional DRAM write buffer, an FTL and the
//! NAND array's channel and die timelines, behind the [`Device`] contract.
//!
//! A host request becomes one FTL call per logical page it touches (one call for the whole
//! write, for FTLs that must see requests whole: `Ftl::takes_whole_requests`); the request's flash
//! operations are placed on the timelines at once (respecting each call's dependencies, and
//! joining pages of different planes into multi-plane commands when the device allows), so
//! the request's completion time is known at submission. With a write-back buffer
//! (`FlushPolicy::Watermark`) a write's pages stay in DRAM and reach the FTL later, when a
//! watermark, a flush or idle time destages them. Nothing here reads a clock: time only
//! arrives through `submit` and `advance`. See docs/models/ssd.md.

mod batch;
mod params;
mod precondition;
pub mod presets;
mod release;
mod stats;
mod write_back;

pub use params::{
    DataCacheMode, DestageOrder, Energy, FlowPartition, FlushPolicy, Precondition, SlcCacheSpec,
    SsdParams, WriteBack, WriteBuffer,
};
pub use precondition::PreconditionReport;
pub use stats::{
    BUFFER_COUNTERS, CAUSES, CHANNEL_UTILISATION, COUNTERS, DIE_SCHEDULING_COUNTERS,
    DIE_UTILISATION, ENERGY_BY_CAUSE, ENERGY_IDLE, FLASH_ERASES_BY_CAUSE, FLASH_PROGRAMS_BY_CAUSE,
    FLASH_READS_BY_CAUSE, HOST_READ_PAGES, HOST_READ_UNMAPPED_PAGES, STEADY_STATE_COUNTERS,
    UTILISATION_ELAPSED, WRITE_AMPLIFICATION,
};
pub use storsim_ftl::WhenFull;

use batch::{GcReads, OpBatch, Placement};
use release::{ReleaseQueue, Releases};
use stats::{BufferCounts, OpCounts};
use storsim_core::{
    check_range, BlockWear, Completion, Described, Device, DeviceCounter, DeviceError, DevicePart,
    EventQueue, Op, Request, SimDuration, SimTime, Status,
};
use storsim_flash::{DieScheduling, Scheduler, Ticket};
use storsim_ftl::{Ftl, FtlError};
use write_back::DirtyPages;

/// The pages of a request a prefetch hint covers: enough for the small requests whose map
/// misses dominate, few enough that a large request's hint does not flush the caches.
const PREFETCH_PAGES: usize = 4;

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

/// A write-back buffer's dirty pages and thresholds, in pages.
struct WriteBackState {
    dirty: DirtyPages,
    /// Destaging starts when dirty pages exceed this ...
    high_pages: u64,
    /// ... and stops at or below this.
    low_pages: u64,
    destage_when_idle: bool,
    /// Pages destaged per unit of idle work: one per die.
    idle_batch: u64,
}

pub struct SsdDevice {
    params: SsdParams,
    ftl: Box<dyn Ftl>,
    scheduler: Scheduler,
    /// Host completions by finish, each with the ticket its finish resolves by when the dies
    /// reorder operations (a priority read placed later may delay it; it is re-checked when
    /// it comes due).
    completions: EventQueue<(Completion, Ticket)>,
    /// The ticket of the request being submitted's finish.
    finish_ticket: Ticket,
    /// Which reads go first (`None` under FIFO).
    priority_reads: Option<GcReads>,
    /// The flash operations of the request (or destage, or idle work) being placed.
    batch: OpBatch,
    /// Pages per call of the destage being placed.
    destage_calls: Vec<u64>,
    counts: OpCounts,
    page_bytes: u64,
    capacity_bytes: u64,
    /// Write buffer: pages held until their program finishes, by release time. Under the
    /// watermark policy it holds destaged pages only; dirty pages are in `write_back`.
    buffer: Releases,
    buffer_pages_held: u64,
    buffer_capacity_pages: u64,
    /// Buffer admission is FIFO: no write is admitted before an earlier one.
    buffer_admit_floor: SimTime,
    /// The dirty pages of a write-back buffer (`FlushPolicy::Watermark`); `None` when eager.
    write_back: Option<WriteBackState>,
    buffer_counts: BufferCounts,
    last_program_finish: SimTime,
    last_program_ticket: Ticket,
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
        if let Some(cache) = &params.slc_cache {
            ftl.set_slc_cache(&cache.blocks(&params.geometry, params.timing.cell.bits()))?;
        }
        let precondition = precondition::run(ftl.as_mut(), &params.precondition, params.seed)?;
        if !params.partitions.is_empty() {
            // Preconditioning wrote anywhere; the flows' own writes keep to their partitions.
            let planes = params
                .partitions
                .iter()
                .map(|p| p.planes_in(&params.geometry))
                .collect::<Result<Vec<_>, _>>()
                .map_err(SsdError::Params)?;
            ftl.set_write_partitions(&planes)?;
        }
        let page_bytes = params.geometry.page_bytes as u64;
        let capacity_bytes = ftl.logical_pages() * page_bytes;
        let buffer_capacity_pages = params
            .write_buffer
            .map_or(0, |b| b.capacity_bytes / page_bytes);
        let write_back = match params.write_buffer_policy {
            FlushPolicy::Watermark(w) if buffer_capacity_pages > 0 => {
                let (high_pages, low_pages) = w.watermark_pages(buffer_capacity_pages);
                Some(WriteBackState {
                    dirty: DirtyPages::new(w.order, buffer_capacity_pages),
                    high_pages,
                    low_pages,
                    destage_when_idle: w.destage_when_idle,
                    idle_batch: params.geometry.dies() as u64,
                })
            }
            _ => None,
        };
        Ok(SsdDevice {
            scheduler: Scheduler::new(params.geometry, params.timing.clone())
                .with_multi_plane(params.multi_plane)
                .with_die_scheduling(params.die_scheduling),
            completions: EventQueue::with_capacity(params.queue_depth),
            finish_ticket: Ticket::FIXED,
            priority_reads: match (params.die_scheduling, params.gc_reads_priority) {
                (DieScheduling::Fifo, _) => None,
                (_, false) => Some(GcReads::Queued),
                (_, true) => Some(GcReads::First),
            },
            buffer: if params.die_scheduling == DieScheduling::Fifo {
                Releases::Final(ReleaseQueue::new(
                    buffer_capacity_pages,
                    params.geometry.dies() as usize,
                ))
            } else {
                Releases::Moving(Default::default())
            },
            batch: OpBatch::default(),
            destage_calls: Vec::new(),
            counts: OpCounts::default(),
            page_bytes,
            capacity_bytes,
            buffer_pages_held: 0,
            buffer_capacity_pages,
            buffer_admit_floor: SimTime::ZERO,
            write_back,
            buffer_counts: BufferCounts::default(),
            last_program_finish: SimTime::ZERO,
            last_program_ticket: Ticket::FIXED,
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

    /// Places the FTL's busy-time work ([`Ftl::housekeeping`]) from `start`, holding no
    /// request: the host sees it only where it occupies a die or a channel.
    fn housekeeping(&mut self, start: SimTime) {
        if self.params.slc_cache.is_none() || self.failed.is_some() {
            return;
        }
        self.batch.clear();
        match self.ftl.housekeeping(self.batch.begin_call()) {
            Ok(true) => {
                self.place_batch(start);
            }
            Ok(false) => {}
            Err(e) => self.failed = Some(e),
        }
    }

    pub fn ftl(&self) -> &dyn Ftl {
        self.ftl.as_ref()
    }

    pub fn params(&self) -> &SsdParams {
        &self.params
    }

    /// Places the batch's operations (one request's FTL calls) no earlier than `start`;
    /// returns when the last finishes (`start` if there were none).
    fn place_batch(&mut self, start: SimTime) -> SimTime {
        let mut placement = Placement {
            scheduler: &mut self.scheduler,
            counts: &mut self.counts,
            copyback: self.params.copyback,
            last_program_finish: &mut self.last_program_finish,
            last_program_ticket: &mut self.last_program_ticket,
            priority_reads: self.priority_reads,
        };
        self.batch.place(start, &mut placement)
    }

    /// Places what the batch's calls before the failed last one asked for (their work is
    /// done and stays counted), then reports the failure as [`SsdDevice::ftl_failure`] does.
    fn failed_call(&mut self, start: SimTime, e: FtlError) -> DeviceError {
        self.batch.abandon_last_call();
        self.place_batch(start);
        self.ftl_failure(e)
    }

    /// A host request the FTL refused (a raw-flash misuse, a page out of range) is invalid;
    /// any other FTL error fails the device.
    fn ftl_failure(&mut self, e: FtlError) -> DeviceError {
        if matches!(e, FtlError::Rejected { .. } | FtlError::OutOfRange { .. }) {
            return DeviceError::Invalid {
                reason: format!("flash translation layer: {e}"),
            };
        }
        self.fail(e)
    }

    /// Marks the device failed: it accepts no more requests.
    fn fail(&mut self, e: FtlError) -> DeviceError {
        let reason = format!("flash translation layer: {e}");
        self.failed = Some(e);
        DeviceError::Failed { reason }
    }

    /// Admits `pages` into the write buffer no earlier than `now`; returns the admission time.
    fn admit_to_buffer(&mut self, now: SimTime, pages: u64) -> SimTime {
        let mut at = now.max(self.buffer_admit_floor);
        self.release_due(at);
        while self.buffer_pages_held + pages > self.buffer_capacity_pages {
            let (release, held) = self
                .buffer
                .pop(&self.scheduler)
                .expect("a full buffer holds pages");
            self.buffer_pages_held -= held;
            at = at.max(release);
        }
        self.buffer_admit_floor = at;
        at
    }

    /// Hands the pages of a write to the FTL and schedules their operations from `start`;
    /// returns when the last finishes.
    fn program_pages(
        &mut self,
        pages: std::ops::Range<u64>,
        start: SimTime,
    ) -> Result<SimTime, DeviceError> {
        self.batch.clear();
        if self.ftl.takes_whole_requests() {
            // The FTL's algorithm works on whole requests (it erases a block at most once per
            // request, say): one call.
            let n = pages.end - pages.start;
            if let Err(e) = self
                .ftl
                .write_request(pages.start, n, self.batch.begin_call())
            {
                return Err(self.failed_call(start, e));
            }
            self.counts.host_write_pages += n;
        } else {
            for lpn in pages {
                if let Err(e) = self.ftl.write(lpn, self.batch.begin_call()) {
                    return Err(self.failed_call(start, e));
                }
                self.counts.host_write_pages += 1;
            }
        }
        self.idle_work_possible = true;
        Ok(self.place_batch(start))
    }

    /// How long the write buffer takes to accept or return a page (none without a buffer).
    fn buffer_latency(&self) -> SimDuration {
        self.params
            .write_buffer
            .map_or(SimDuration::ZERO, |b| b.latency)
    }

    /// The write buffer's lane for the release of the last placed batch's call `k` (or of the
    /// whole batch): the die of its last flash operation. A die runs its operations in order,
    /// so releases that end with one of its programs come in order.
    fn release_lane(&self, call: Option<usize>) -> usize {
        match self.batch.last_page(call) {
            Some(ppa) => self.scheduler.die_of(ppa) as usize,
            None => 0,
        }
    }

    /// Frees the slots of destaged pages whose programs have finished by `at`.
    fn release_due(&mut self, at: SimTime) {
        while let Some((_, held)) = self.buffer.pop_due(at, &self.scheduler) {
            self.buffer_pages_held -= held;
        }
    }

    fn dirty_pages(&self) -> u64 {
        self.write_back.as_ref().map_or(0, |w| w.dirty.len())
    }

    /// Destages up to `count` dirty pages, oldest first, their operations starting no earlier
    /// than `start`; each page keeps its slot until its program finishes. Returns when the
    /// last finishes (`start` if none) and how many pages went. An FTL error here fails the
    /// device: the host was told these pages were written.
    fn destage(&mut self, start: SimTime, count: u64) -> Result<(SimTime, u64), DeviceError> {
        let whole = self.ftl.takes_whole_requests();
        let mut sent = 0;
        let mut failure = None;
        self.batch.clear();
        self.destage_calls.clear();
        while sent < count {
            let wb = self
                .write_back
                .as_mut()
                .expect("destage needs a write-back buffer");
            let Some(first) = wb.dirty.pop_oldest() else {
                break;
            };
            let mut n = 1;
            if whole {
                // Consecutive pages leaving together make one request for the FTL.
                while sent + n < count && wb.dirty.peek_oldest() == Some(first + n) {
                    wb.dirty.pop_oldest();
                    n += 1;
                }
            }
            let ops = self.batch.begin_call();
            let written = if whole {
                self.ftl.write_request(first, n, ops)
            } else {
                self.ftl.write(first, ops)
            };
            if let Err(e) = written {
                self.batch.abandon_last_call();
                failure = Some(e);
                break;
            }
            self.destage_calls.push(n);
            sent += n;
        }
        let finish = self.place_batch(start);
        for (k, &n) in self.destage_calls.iter().enumerate() {
            // Dirty and destaging pages together never exceed the capacity, nor do the
            // entries here (one per destage call, of at least one page).
            self.buffer_pages_held += n;
            let lane = self.release_lane(Some(k));
            assert!(
                self.buffer
                    .push(
                        self.batch.call_finish(k),
                        n,
                        lane,
                        self.batch.call_ticket(k)
                    )
                    .is_ok(),
                "write buffer: more destaging pages than slots"
            );
        }
        self.buffer_counts.destaged_pages += sent;
        if sent > 0 {
            self.idle_work_possible = true;
        }
        match failure {
            Some(e) => Err(self.fail(e)),
            None => Ok((finish, sent)),
        }
    }

    /// Destages dirty pages down to the low watermark if they are above the high one.
    fn destage_above_watermark(&mut self, start: SimTime) -> Result<(), DeviceError> {
        let Some(wb) = &self.write_back else {
            return Ok(());
        };
        let dirty = wb.dirty.len();
        if dirty > wb.high_pages {
            let (_, sent) = self.destage(start, dirty - wb.low_pages)?;
            self.buffer_counts.watermark_destaged_pages += sent;
        }
        Ok(())
    }

    /// A write under the watermark policy: each page not already dirty takes a free slot,
    /// waiting in FIFO order for the earliest destage program to finish if there is none.
    /// Returns when the write is admitted (all its pages are in DRAM).
    fn write_back_admit(
        &mut self,
        now: SimTime,
        pages: std::ops::Range<u64>,
    ) -> Result<SimTime, DeviceError> {
        let overhead = self.params.controller_overhead;
        let mut at = now.max(self.buffer_admit_floor);
        self.release_due(at);
        let mut waited = false;
        for lpn in pages {
            let wb = self.write_back.as_mut().expect("write-back buffer");
            if wb.dirty.contains(lpn) {
                wb.dirty.write(lpn);
                self.buffer_counts.write_hit_pages += 1;
                continue;
            }
            while self.dirty_pages() + self.buffer_pages_held >= self.buffer_capacity_pages {
                if self.buffer_pages_held == 0 {
                    // Every slot holds a dirty page (a high watermark of 1): destage down to
                    // the low watermark, at least one page.
                    let wb = self.write_back.as_ref().expect("write-back buffer");
                    let count = (wb.dirty.len() - wb.low_pages).max(1);
                    let (_, sent) = self.destage(at + overhead, count)?;
                    self.buffer_counts.watermark_destaged_pages += sent;
                } else {
                    let (release, held) = self
                        .buffer
                        .pop(&self.scheduler)
                        .expect("pages are destaging");
                    self.buffer_pages_held -= held;
                    at = at.max(release);
                    waited = true;
                    self.release_due(at);
                }
            }
            let wb = self.write_back.as_mut().expect("write-back buffer");
            wb.dirty.write(lpn);
            self.destage_above_watermark(at + overhead)?;
            let dirty = self.dirty_pages();
            let max = &mut self.buffer_counts.dirty_pages_max;
            *max = (*max).max(dirty);
        }
        if waited {
            self.buffer_counts.full_waits += 1;
        }
        self.buffer_admit_floor = at;
        Ok(at)
    }

    /// Whether idle time has dirty pages to destage.
    fn idle_destage_pending(&self) -> bool {
        self.failed.is_none()
            && self
                .write_back
                .as_ref()
                .is_some_and(|w| w.destage_when_idle && !w.dirty.is_empty())
    }

    // The request paths below are `submit`'s, one per kind of request, each called from it
    // alone; `#[inline]` keeps the hot path one function, as it was before they were split.

    /// A read of `pages` from `start`: pages dirty in the write-back buffer come from DRAM,
    /// the others from flash. Returns when the last is read.
    #[inline]
    fn serve_read(
        &mut self,
        start: SimTime,
        pages: std::ops::Range<u64>,
    ) -> Result<SimTime, DeviceError> {
        let mut finish = start;
        let latency = self.buffer_latency();
        self.batch.clear();
        for lpn in pages {
            if self
                .write_back
                .as_ref()
                .is_some_and(|w| w.dirty.contains(lpn))
            {
                // A read hit: the page is served from DRAM.
                finish = finish.max(start + latency);
                self.buffer_counts.read_hit_pages += 1;
                self.counts.host_read_pages += 1;
                continue;
            }
            if let Err(e) = self.ftl.read(lpn, self.batch.begin_call()) {
                return Err(self.failed_call(start, e));
            }
            self.counts.host_read_pages += 1;
            if !self.batch.last_call_read_host_data() {
                self.counts.host_read_unmapped_pages += 1;
            }
        }
        let finish = finish.max(self.place_batch(start));
        self.finish_ticket = self.batch.ticket();
        Ok(finish)
    }

    /// A write of `pages` with the write-back buffer, arrived at `now`, its flash work
    /// starting no earlier than `start`. Returns when its service starts and ends.
    #[inline]
    fn serve_write_back(
        &mut self,
        now: SimTime,
        start: SimTime,
        pages: std::ops::Range<u64>,
    ) -> Result<(SimTime, SimTime), DeviceError> {
        let n = pages.end - pages.start;
        if n > self.buffer_capacity_pages {
            // Too big for DRAM: programmed directly, like a write without a buffer;
            // dirty copies of its pages are stale now.
            let wb = self.write_back.as_mut().expect("write-back buffer");
            for lpn in pages.clone() {
                wb.dirty.remove(lpn);
            }
            self.buffer_counts.write_through_pages += n;
            let programmed = self.program_pages(pages, start)?;
            self.finish_ticket = self.batch.ticket();
            Ok((now, start.max(programmed)))
        } else {
            // Write-back: the write is done once its data is in DRAM.
            let admitted = self.write_back_admit(now, pages)?;
            let latency = self.buffer_latency();
            self.counts.host_write_pages += n;
            Ok((
                admitted,
                admitted + self.params.controller_overhead + latency,
            ))
        }
    }

    /// A write of `pages` without the write-back buffer, arrived at `now`: programmed from
    /// `start` at once, through the eager buffer if it fits and its flow's writes are
    /// `cached`. Returns when its service starts and ends.
    #[inline]
    fn serve_write_eager(
        &mut self,
        now: SimTime,
        start: SimTime,
        pages: std::ops::Range<u64>,
        cached: bool,
    ) -> Result<(SimTime, SimTime), DeviceError> {
        let n = pages.end - pages.start;
        let buffered = cached && n <= self.buffer_capacity_pages;
        let programmed = start.max(self.program_pages(pages, start)?);
        if !buffered {
            self.finish_ticket = self.batch.ticket();
            return Ok((now, programmed));
        }
        // The host sees the write done once its data sits in DRAM; the buffer holds the
        // pages until their programs finish.
        let admitted = self.admit_to_buffer(now, n);
        let release = programmed;
        let latency = self.buffer_latency();
        let finish = admitted + self.params.controller_overhead + latency;
        self.buffer_pages_held += n;
        let lane = self.release_lane(None);
        self.buffer
            .push(release.max(finish), n, lane, self.batch.ticket())
            .map_err(|_| DeviceError::Invalid {
                reason: "write buffer overflow".into(),
            })?;
        Ok((admitted, finish))
    }

    /// A trim of `pages` from `start`, dirty copies in the write-back buffer dropped.
    /// Returns when the FTL's work for it ends.
    #[inline]
    fn serve_trim(
        &mut self,
        start: SimTime,
        pages: std::ops::Range<u64>,
    ) -> Result<SimTime, DeviceError> {
        self.batch.clear();
        for lpn in pages {
            if let Some(wb) = self.write_back.as_mut() {
                if wb.dirty.remove(lpn) {
                    self.buffer_counts.trimmed_pages += 1;
                }
            }
            if let Err(e) = self.ftl.trim(lpn, self.batch.begin_call()) {
                return Err(self.failed_call(start, e));
            }
            self.counts.trim_pages += 1;
        }
        let finish = start.max(self.place_batch(start));
        self.finish_ticket = self.batch.ticket();
        Ok(finish)
    }

    /// A flush at `start`: with the write-back buffer, its dirty pages are destaged; the
    /// flush ends with the last program.
    #[inline]
    fn serve_flush(&mut self, start: SimTime) -> Result<SimTime, DeviceError> {
        if self.write_back.is_some() {
            // Every dirty page goes to flash, once the writes before the flush are in
            // DRAM (a write waiting for a slot is admitted later than `now`).
            let from = start.max(self.buffer_admit_floor);
            let (_, sent) = self.destage(from, u64::MAX)?;
            self.buffer_counts.flush_destaged_pages += sent;
        }
        self.finish_ticket = self.last_program_ticket;
        Ok(start.max(self.last_program_finish))
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
            return Err(DeviceError::Failed {
                reason: format!("flash translation layer: {e}"),
            });
        }
        self.idle_work_at = None;
        self.finish_ticket = Ticket::FIXED;
        self.scheduler.prune(now);
        let start = now + self.params.controller_overhead;
        let pages = self.page_range(&request);
        if request.op == Op::Write && !self.params.partitions.is_empty() {
            let flow = usize::from(request.flow);
            self.ftl
                .select_write_partition((flow < self.params.partitions.len()).then_some(flow));
        }
        let (service_start, finish) = match request.op {
            Op::Read => (now, self.serve_read(start, pages)?),
            Op::Write if self.write_back.is_some() => self.serve_write_back(now, start, pages)?,
            Op::Write => {
                let cached = self.params.flow_data_cache.get(usize::from(request.flow))
                    != Some(&DataCacheMode::Off);
                self.serve_write_eager(now, start, pages, cached)?
            }
            Op::Trim => (now, self.serve_trim(start, pages)?),
            Op::Flush => (now, self.serve_flush(start)?),
        };
        self.last_host_finish = self.last_host_finish.max(finish);
        if request.op == Op::Write {
            self.housekeeping(start);
        }
        let completion = Completion {
            request,
            service_start,
            finish,
            status: Status::Ok,
        };
        self.completions
            .push(finish, (completion, self.finish_ticket))
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
        while let Some((at, (mut c, ticket))) = self.completions.pop_due(now) {
            if self.scheduler.reorders() {
                // A priority read placed since may have delayed the operation it waits for.
                let actual = self.scheduler.resolve(at, ticket);
                if actual > at {
                    c.finish = actual;
                    self.last_host_finish = self.last_host_finish.max(actual);
                    // The queue had room for the entry just popped.
                    let _ = self.completions.push(actual, (c, ticket));
                    continue;
                }
            }
            done.push(c);
        }
        // The FTL's idle work: background garbage collection, and folding the SLC cache.
        let background_gc = self.params.background_gc || self.params.slc_cache.is_some();
        if !self.completions.is_empty() {
            return;
        }
        if !(background_gc || self.idle_destage_pending()) {
            // Nothing to do in idle time (the last dirty page may just have left): no deadline.
            self.idle_work_at = None;
            return;
        }
        // The device is idle: destage dirty pages (with `destage_when_idle`), then
        // garbage-collect in the background, one unit at a time, until there is nothing left
        // to do or a host request arrives (submit cancels the next unit).
        if self.idle_work_at.is_none()
            && ((background_gc && self.idle_work_possible) || self.idle_destage_pending())
            && self.failed.is_none()
        {
            self.idle_work_at = Some(self.last_host_finish.max(now) + self.params.idle_gc_delay);
        }
        while let Some(at) = self.idle_work_at {
            if at > now {
                break;
            }
            if self.idle_destage_pending() {
                self.release_due(at);
                let batch = self.write_back.as_ref().map_or(1, |w| w.idle_batch);
                match self.destage(at, batch) {
                    Ok((finish, sent)) => {
                        self.buffer_counts.idle_destaged_pages += sent;
                        self.idle_work_at = Some(finish.max(at + SimDuration(1)));
                    }
                    // `destage` recorded the failure.
                    Err(_) => self.idle_work_at = None,
                }
                continue;
            }
            if !background_gc {
                self.idle_work_at = None;
                break;
            }
            self.batch.clear();
            match self.ftl.idle(self.batch.begin_call()) {
                Ok(true) => {
                    self.idle_gc_units += 1;
                    let finish = self.place_batch(at);
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

    fn counter_values(&self, values: &mut Vec<f64>) {
        stats::counter_values(self, values)
    }

    fn counter_descriptors(&self) -> Vec<Described> {
        stats::counter_descriptors(self)
    }

    /// The flash translation layer, under the prefixes its counters are listed with, so that a
    /// document says which FTL an SSD runs (a preset's name does not: `--set ssd.ftl=` changes
    /// it) and its readers can describe the FTL's counters.
    fn parts(&self) -> Vec<DevicePart> {
        let ftl = |prefix: &str| DevicePart {
            prefix: prefix.to_string(),
            model: self.ftl.name(),
        };
        let mut parts = vec![ftl(stats::FTL_PREFIX)];
        if !self.precondition.ftl_counters.is_empty() {
            parts.push(ftl(stats::PRECONDITION_FTL_PREFIX));
        }
        parts
    }

    fn block_wear(&self) -> Vec<BlockWear> {
        vec![stats::block_wear(self.ftl.nand())]
    }

    /// Passes the hint on to the FTL for the request's first pages: with a large device a
    /// host page's map entry is a cache miss, one per request that the prefetch overlaps with
    /// the work before it.
    fn prefetch(&self, request: &Request) {
        if !matches!(request.op, Op::Read | Op::Write)
            || check_range(request, self.capacity_bytes).is_err()
        {
            return;
        }
        for lpn in self.page_range(request).take(PREFETCH_PAGES) {
            self.ftl.prefetch(lpn);
        }
    }
}
