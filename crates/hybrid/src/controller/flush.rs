//! Write admission's flushing: when dirty blocks move from the flash to the disk (on demand,
//! for space, at the low watermark, when idle) and the flush jobs that move them, each one
//! flash read followed by one disk write.

use super::cache_map::BlockRun;
use super::counters::ChildCause;
use super::places::Places;
use super::{HybridDevice, Tag, FLUSH_JOBS_MAX, FLUSH_RUN_BLOCKS_MAX, HOST_PENDING_MAX};
use crate::fanout::{Route, RouteCause, Side};
use crate::params::FlushPolicy;
use storsim_core::{Op, SimTime};

/// Why a flush ran, for the counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FlushCause {
    /// The on-demand policy's full flush.
    OnDemand,
    /// A write found no space under the watermark or idle policies and flushed what it needed.
    Space,
    LowWatermark,
    Idle,
}

impl FlushCause {
    pub(super) const ALL: [FlushCause; 4] = [
        FlushCause::OnDemand,
        FlushCause::Space,
        FlushCause::LowWatermark,
        FlushCause::Idle,
    ];

    pub(super) fn index(self) -> usize {
        self as usize
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            FlushCause::OnDemand => "on_demand",
            FlushCause::Space => "space",
            FlushCause::LowWatermark => "low_watermark",
            FlushCause::Idle => "idle",
        }
    }
}

/// One flush job: a run of dirty blocks on its way to the disk.
#[derive(Clone, Copy)]
pub(super) struct Job {
    run: BlockRun,
    cause: FlushCause,
}

/// The flush policy's state: the jobs in flight, what started them, and the counters.
pub(super) struct Flushing {
    policy: FlushPolicy,
    jobs: Places<Job>,
    on_demand_jobs: usize,
    full_flush_remaining: u64,
    watermark_active: bool,
    high_blocks: u64,
    low_blocks: u64,
    /// Blocks the head write still lacks, under the watermark and idle policies.
    space_shortfall: Option<u64>,
    idle_since: Option<SimTime>,
    idle_active: bool,
    /// Flushes started, by cause.
    cleanups: [u64; 4],
    /// Bytes flushed, by cause.
    flushed_bytes: [u64; 4],
    /// Flush jobs whose flash read or disk write failed, and the blocks they carried.
    failed_jobs: u64,
    failed_blocks: u64,
    /// Blocks whose flushes failed `DESTAGE_ATTEMPTS_MAX` times (each counted once).
    given_up_blocks: u64,
}

impl Flushing {
    /// The state of `policy` over a cache of `unpinned_slots` blocks that may become dirty;
    /// the host counts as idle from time zero.
    pub(super) fn new(policy: FlushPolicy, unpinned_slots: u64) -> Self {
        let (high_blocks, low_blocks) = match policy {
            FlushPolicy::LowWatermark {
                high_fraction,
                low_fraction,
            } => (
                ((high_fraction * unpinned_slots as f64).ceil() as u64).max(1),
                (low_fraction * unpinned_slots as f64).floor() as u64,
            ),
            FlushPolicy::OnDemand | FlushPolicy::Idle { .. } => (u64::MAX, 0),
        };
        Flushing {
            policy,
            jobs: Places::new(FLUSH_JOBS_MAX),
            on_demand_jobs: 0,
            full_flush_remaining: 0,
            watermark_active: false,
            high_blocks,
            low_blocks,
            space_shortfall: None,
            idle_since: Some(SimTime::ZERO),
            idle_active: false,
            cleanups: [0; 4],
            flushed_bytes: [0; 4],
            failed_jobs: 0,
            failed_blocks: 0,
            given_up_blocks: 0,
        }
    }

    /// Flush jobs that failed.
    pub(super) fn failed_jobs(&self) -> u64 {
        self.failed_jobs
    }

    /// Blocks the failed flush jobs carried (a block counts at each failed attempt).
    pub(super) fn failed_blocks(&self) -> u64 {
        self.failed_blocks
    }

    /// Blocks the controller stopped flushing after their last allowed attempt failed.
    pub(super) fn given_up_blocks(&self) -> u64 {
        self.given_up_blocks
    }

    /// Flushes started for `cause`.
    pub(super) fn cleanups(&self, cause: FlushCause) -> u64 {
        self.cleanups[cause.index()]
    }

    /// Bytes flushed for `cause`.
    pub(super) fn flushed_bytes(&self, cause: FlushCause) -> u64 {
        self.flushed_bytes[cause.index()]
    }

    /// Whether an on-demand full flush is still to run or running: the head write waits.
    pub(super) fn full_flush_pending(&self) -> bool {
        self.full_flush_remaining > 0 || self.on_demand_jobs > 0
    }

    /// The head write found the space it needs.
    pub(super) fn space_found(&mut self) {
        self.space_shortfall = None;
    }

    /// The head write lacks `shortfall` blocks even after eviction, and `idle_dirty` dirty
    /// blocks are not being flushed yet: the on-demand policy flushes them all (the thesis'
    /// cleanup), the others just what the write needs.
    pub(super) fn space_needed(&mut self, shortfall: u64, idle_dirty: u64) {
        match self.policy {
            FlushPolicy::OnDemand => {
                self.full_flush_remaining = idle_dirty;
                self.cleanups[FlushCause::OnDemand.index()] += 1;
            }
            FlushPolicy::LowWatermark { .. } | FlushPolicy::Idle { .. } => {
                if self.space_shortfall.is_none() {
                    self.cleanups[FlushCause::Space.index()] += 1;
                }
                self.space_shortfall = Some(shortfall);
            }
        }
    }

    /// A host write made a block dirty; `dirty` unpinned blocks are dirty now.
    pub(super) fn dirtied(&mut self, dirty: u64) {
        if dirty >= self.high_blocks && !self.watermark_active {
            self.watermark_active = true;
            self.cleanups[FlushCause::LowWatermark.index()] += 1;
        }
    }

    /// How many more blocks should start flushing now, and why, with `dirty` dirty blocks of
    /// which `flushing` are being flushed.
    pub(super) fn demand(&mut self, dirty: u64, flushing: u64) -> Option<(FlushCause, u64)> {
        let idle_dirty = dirty - flushing;
        if self.full_flush_remaining > 0 {
            return Some((FlushCause::OnDemand, self.full_flush_remaining));
        }
        if let Some(short) = self.space_shortfall {
            let more = short.saturating_sub(flushing);
            if more > 0 {
                return Some((FlushCause::Space, more));
            }
        }
        if self.watermark_active {
            let excess = idle_dirty.saturating_sub(self.low_blocks);
            if excess > 0 {
                return Some((FlushCause::LowWatermark, excess));
            }
            self.watermark_active = false;
        }
        if self.idle_active && idle_dirty > 0 {
            return Some((FlushCause::Idle, idle_dirty));
        }
        None
    }

    /// A job for `cause` started with `started` blocks (0: none could start).
    fn started(&mut self, cause: FlushCause, started: u64) {
        if cause == FlushCause::OnDemand {
            self.full_flush_remaining = self.full_flush_remaining.saturating_sub(started);
            if started == 0 {
                self.full_flush_remaining = 0;
            }
        }
    }

    /// A host request arrived: idle flushing in flight finishes, no more starts.
    pub(super) fn host_arrived(&mut self) {
        self.idle_since = None;
        self.idle_active = false;
    }

    /// The host has had nothing outstanding since `now`.
    pub(super) fn host_idle(&mut self, now: SimTime) {
        self.idle_since = Some(now);
    }

    /// When idle flushing starts, if the policy flushes when idle and there is something to
    /// flush (`dirty` dirty blocks, `flushing` of them being flushed).
    pub(super) fn idle_deadline(&self, dirty: u64, flushing: u64) -> Option<SimTime> {
        let FlushPolicy::Idle { idle } = self.policy else {
            return None;
        };
        if self.idle_active || dirty == flushing {
            return None;
        }
        self.idle_since.map(|t| t + idle)
    }

    /// The idle deadline passed: flushing when idle starts.
    pub(super) fn idle_reached(&mut self) {
        self.idle_active = true;
        self.cleanups[FlushCause::Idle.index()] += 1;
    }

    fn job_started(&mut self, job: Job) -> usize {
        if job.cause == FlushCause::OnDemand {
            self.on_demand_jobs += 1;
        }
        self.jobs.insert(job)
    }

    fn job_finished(&mut self, i: usize, block_bytes: u64) -> Job {
        let job = self.job_ended(i);
        self.flushed_bytes[job.cause.index()] += job.run.count as u64 * block_bytes;
        job
    }

    /// Job `i` failed: it flushed nothing.
    fn job_failed(&mut self, i: usize) -> Job {
        let job = self.job_ended(i);
        self.failed_jobs += 1;
        self.failed_blocks += job.run.count as u64;
        job
    }

    fn job_ended(&mut self, i: usize) -> Job {
        let job = self.jobs.take(i);
        if job.cause == FlushCause::OnDemand {
            self.on_demand_jobs -= 1;
        }
        job
    }
}

impl HybridDevice {
    /// Starts flush jobs while there is demand and a free job place.
    pub(super) fn start_flushes(&mut self, now: SimTime) {
        while !self.flush.jobs.is_full() {
            let Some((cause, want)) = self.flush.demand(
                self.cache.flushable_dirty_blocks(),
                self.cache.flushing_blocks(),
            ) else {
                return;
            };
            let started = self.start_job(now, cause, want);
            self.flush.started(cause, started);
            if started == 0 {
                return;
            }
        }
    }

    /// Starts one flush job for up to `want` blocks and issues its flash read. Returns the
    /// number of blocks in the job.
    fn start_job(&mut self, now: SimTime, cause: FlushCause, want: u64) -> u64 {
        let Some(run) = self
            .cache
            .start_flush_run(want.clamp(1, FLUSH_RUN_BLOCKS_MAX))
        else {
            return 0;
        };
        let job = self.flush.job_started(Job { run, cause });
        let b = self.cache.block_bytes();
        let len = run.count as u64 * b;
        self.log.record(Route {
            cause: RouteCause::FlushRead,
            op: Op::Read,
            side: Side::Flash,
            host_offset_bytes: run.first_block * b,
            device_offset_bytes: run.first_slot as u64 * b,
            len_bytes: len,
        });
        self.counts
            .child_request(Side::Flash, ChildCause::Flush, len);
        self.fanout.push(
            Side::Flash,
            now,
            Op::Read,
            run.first_slot as u64 * b,
            len,
            Tag::FlushRead { job },
        );
        run.count as u64
    }

    /// A flush job's flash read finished: its blocks go to the disk.
    pub(super) fn flush_read_done(&mut self, now: SimTime, job: usize) {
        let run = self.flush.jobs.get(job).run;
        assert!(
            self.fanout.pending_len(Side::Disk) < HOST_PENDING_MAX + FLUSH_JOBS_MAX,
            "a flush write found no room in the disk's queue"
        );
        let b = self.cache.block_bytes();
        let offset = run.first_block * b;
        let len = run.count as u64 * b;
        self.log.record(Route {
            cause: RouteCause::FlushWrite,
            op: Op::Write,
            side: Side::Disk,
            host_offset_bytes: offset,
            device_offset_bytes: offset,
            len_bytes: len,
        });
        self.counts
            .child_request(Side::Disk, ChildCause::Flush, len);
        self.fanout.push(
            Side::Disk,
            now,
            Op::Write,
            offset,
            len,
            Tag::FlushWrite { job },
        );
    }

    /// A flush job's disk write finished: the job is done.
    pub(super) fn flush_write_done(&mut self, job: usize) {
        let job = self.flush.job_finished(job, self.cache.block_bytes());
        self.cache.flushed(job.run);
    }

    /// A flush job's flash read or disk write failed: its blocks stay dirty, to be flushed
    /// again later (`CacheMap::flush_failed`), and the job is done.
    pub(super) fn flush_failed(&mut self, job: usize) {
        let job = self.flush.job_failed(job);
        self.flush.given_up_blocks += self.cache.flush_failed(job.run);
    }

    /// When idle flushing starts, if ever.
    pub(super) fn idle_deadline(&self) -> Option<SimTime> {
        self.flush.idle_deadline(
            self.cache.flushable_dirty_blocks(),
            self.cache.flushing_blocks(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storsim_core::SimDuration;

    fn watermark(high: f64, low: f64, slots: u64) -> Flushing {
        Flushing::new(
            FlushPolicy::LowWatermark {
                high_fraction: high,
                low_fraction: low,
            },
            slots,
        )
    }

    #[test]
    fn the_watermarks_are_rounded_towards_flushing_less_often() {
        let f = watermark(0.55, 0.25, 10);
        assert_eq!((f.high_blocks, f.low_blocks), (6, 2));
        // A tiny cache still has a high watermark of at least one block.
        let f = watermark(0.01, 0.0, 10);
        assert_eq!((f.high_blocks, f.low_blocks), (1, 0));
    }

    #[test]
    fn the_low_watermark_flushes_down_to_the_low_mark_then_stops() {
        let mut f = watermark(0.5, 0.2, 10);
        f.dirtied(4);
        assert_eq!(f.demand(4, 0), None);
        f.dirtied(5);
        f.dirtied(6);
        assert_eq!(f.cleanups(FlushCause::LowWatermark), 1);
        assert_eq!(f.demand(6, 0), Some((FlushCause::LowWatermark, 4)));
        // Blocks being flushed are not asked for again.
        assert_eq!(f.demand(6, 3), Some((FlushCause::LowWatermark, 1)));
        assert_eq!(f.demand(6, 4), None);
        // Below the high mark again, nothing starts until it is reached anew.
        assert_eq!(f.demand(4, 0), None);
        f.dirtied(5);
        assert_eq!(f.cleanups(FlushCause::LowWatermark), 2);
    }

    #[test]
    fn an_on_demand_full_flush_comes_before_everything_and_holds_the_head() {
        let mut f = Flushing::new(FlushPolicy::OnDemand, 10);
        f.dirtied(10);
        assert_eq!(f.cleanups(FlushCause::LowWatermark), 0, "no watermark");
        assert!(!f.full_flush_pending());
        f.space_needed(1, 7);
        assert!(f.full_flush_pending());
        assert_eq!(f.demand(7, 0), Some((FlushCause::OnDemand, 7)));
        f.started(FlushCause::OnDemand, 4);
        assert_eq!(f.demand(7, 4), Some((FlushCause::OnDemand, 3)));
        f.started(FlushCause::OnDemand, 0);
        assert!(!f.full_flush_pending());
    }

    #[test]
    fn a_space_shortfall_counts_once_and_asks_only_for_what_is_missing() {
        let mut f = Flushing::new(
            FlushPolicy::Idle {
                idle: SimDuration::from_ms(5),
            },
            10,
        );
        f.space_needed(3, 8);
        f.space_needed(2, 8);
        assert_eq!(f.cleanups(FlushCause::Space), 1);
        assert_eq!(f.demand(8, 1), Some((FlushCause::Space, 1)));
        assert_eq!(f.demand(8, 2), None, "idle flushing has not started");
        f.space_found();
        assert_eq!(f.demand(8, 0), None);
    }

    #[test]
    fn idle_flushing_starts_after_the_idle_time_and_stops_on_arrival() {
        let mut f = Flushing::new(
            FlushPolicy::Idle {
                idle: SimDuration::from_ms(5),
            },
            10,
        );
        assert_eq!(f.idle_deadline(0, 0), None, "nothing to flush");
        assert_eq!(f.idle_deadline(2, 0), Some(SimTime::from_ns(5_000_000)));
        f.host_arrived();
        assert_eq!(f.idle_deadline(2, 0), None);
        f.host_idle(SimTime::from_ns(20_000_000));
        assert_eq!(f.idle_deadline(2, 0), Some(SimTime::from_ns(25_000_000)));
        f.idle_reached();
        assert_eq!(f.idle_deadline(2, 0), None);
        assert_eq!(f.demand(2, 0), Some((FlushCause::Idle, 2)));
        f.host_arrived();
        assert_eq!(f.demand(2, 0), None);
        assert_eq!(f.cleanups(FlushCause::Idle), 1);
    }

    #[test]
    fn only_the_idle_policy_has_an_idle_deadline() {
        let f = Flushing::new(FlushPolicy::OnDemand, 10);
        assert_eq!(f.idle_deadline(5, 0), None);
    }
}
