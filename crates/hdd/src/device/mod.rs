//! `HddDevice`: the host queue, the controller (command overheads, bus transfers), the
//! segmented cache with read-ahead and write-back, and the mechanism, composed as DiskSim
//! composes them for one request at a time:
//!
//! - a read that the cache holds costs the read-hit overhead, the data preparation and the bus
//!   transfer; a read that continues the segment being read ahead waits for the read-ahead;
//! - a read miss stops any read-ahead, starts the mechanism after the read-miss overhead (and
//!   after any committed destage), reconnects once the watermark is in the cache, and sends
//!   the data as the media delivers it; read-ahead then continues from the request's end;
//! - with write-back a write costs the write-hit overhead and the bus transfer and completes;
//!   its destage takes the mechanism afterwards, and a write finding every write segment
//!   dirty waits for the oldest destage; without write-back it completes after the media;
//! - the completion overhead ends every request; the previous operation picks the overhead.
//!
//! The interface serves one command at a time; queued requests wait for it and are ordered by
//! the scheduler when it frees.
//!
//! Here: the device's state, mapping, dispatch and the `Device` contract; `cache.rs` the
//! segments, read-ahead and destages; `read.rs` and `write.rs` the two kinds of request.

use crate::layout::Pbn;
use crate::mech::{seek_bucket, Cursor, Mech, SEEK_BUCKETS};
use crate::params::SchedulerKind;
use crate::params::{HddParams, Overheads};
use crate::power::PowerTracker;
use crate::sched::{pick, pick_sptf, Candidate};
use crate::{layout::Layout, HddError};
use std::cell::Cell;
use std::collections::VecDeque;
mod cache;
mod read;
mod write;

use storsim_core::{
    check_range, Completion, CounterDescriptor, Described, Device, DeviceCounter, DeviceError, Op,
    Request, Scope, SimTime, Status, Unit, QUEUE_DEPTH_MAX, SECTOR_BYTES,
};

/// Blocks that follow one another on one track: block `first + i` is sector
/// `pbn.sector + i` of `pbn`'s track, for `i < len`.
#[derive(Clone, Copy, Debug)]
struct MapRun {
    first: u64,
    len: u64,
    pbn: Pbn,
}

/// Where a queued request's first block is, worked out once at submission for the
/// schedulers that look at it (C-LOOK and SSTF the cylinder, SPTF all of it).
#[derive(Clone, Copy, Debug)]
struct Target {
    cylinder: u32,
    head: u32,
    /// The angle at which the first block's sector starts (`Layout::sector_angle`).
    angle: f64,
    write: bool,
}

#[derive(Clone, Debug)]
struct Queued {
    request: Request,
    target: Target,
}

/// A cache segment: the blocks `[start, end)` it holds.
#[derive(Clone, Debug, Default)]
struct Segment {
    start: u64,
    end: u64,
    last_use: u64,
    /// Only writes use it (the dedicated write segment).
    write_only: bool,
}

impl Segment {
    fn holds(&self, lbn: u64, end: u64) -> bool {
        self.start < self.end && lbn >= self.start && end <= self.end
    }
}

/// Reading ahead into a segment after a read, until stopped or at `limit`.
#[derive(Clone, Debug)]
struct Prefetch {
    seg: usize,
    cursor: Cursor,
    next: u64,
    limit: u64,
    /// The read-ahead may not be stopped before this block (minimum read-ahead).
    min_end: u64,
    /// Tracks the read-ahead may use, for the track- and cylinder-bounded modes.
    bound: (u32, u32),
}

/// A destage on the mechanism's timeline.
#[derive(Clone, Debug)]
struct Destage {
    done_ns: f64,
    end_lbn: u64,
    cursor: Cursor,
}

#[derive(Clone, Debug)]
struct InService {
    request: Request,
    start: SimTime,
    finish: SimTime,
}

#[derive(Clone, Debug, Default)]
struct Stats {
    reads: u64,
    writes: u64,
    read_hits: u64,
    read_partial_hits: u64,
    read_misses: u64,
    read_ahead_hits: u64,
    write_appends: u64,
    write_buffer_waits: u64,
    seeks: u64,
    seek_cylinders: u64,
    seek_histogram: [u64; SEEK_BUCKETS],
    media_sectors: u64,
    /// The media time split: repositioning, waiting for sectors to come round, sectors
    /// passing under the heads.
    seek_ns: f64,
    rotation_ns: f64,
    transfer_ns: f64,
}

impl Stats {
    /// Adds what a cursor did on the media.
    fn add_cursor(&mut self, c: &Cursor) {
        self.seeks += c.seeks;
        self.seek_cylinders += c.seek_cylinders;
        for (total, &n) in self.seek_histogram.iter_mut().zip(&c.seek_histogram) {
            *total += u64::from(n);
        }
        self.seek_ns += c.seek_ns;
        self.transfer_ns += c.transfer_ns;
        self.rotation_ns += (c.t_ns - c.started_ns - c.seek_ns - c.transfer_ns).max(0.0);
    }
}

/// Which of its paths a read takes through the segmented cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ReadPath {
    /// The segment holds every block, and the read-ahead, if it fills that segment, has
    /// passed the request's end.
    Hit(usize),
    /// The request starts in the segment the read-ahead is filling, at or before the block
    /// it reads next.
    Stream,
    /// A miss, or a partial hit on a segment nobody reads into.
    Media,
}

/// A read's blocks and the overheads that serve it, which depend on whether the drive's
/// previous request was a read; worked out once for whichever path serves it.
struct ReadRequest {
    t0: f64,
    lbn: u64,
    n: u64,
    end: u64,
    per_request: f64,
    hit: f64,
    miss: f64,
    disconnect: f64,
    first_reselect: f64,
    data_preparation: f64,
    completion: f64,
}

impl ReadRequest {
    fn new(o: &Overheads, after_read: bool, t0: f64, lbn: u64, n: u64) -> Self {
        let (hit, miss, disconnect) = if after_read {
            (
                o.read_hit_after_read_ns,
                o.read_miss_after_read_ns,
                o.read_disconnect_after_read_ns,
            )
        } else {
            (
                o.read_hit_after_write_ns,
                o.read_miss_after_write_ns,
                o.read_disconnect_after_write_ns,
            )
        };
        ReadRequest {
            t0,
            lbn,
            n,
            end: lbn + n,
            per_request: ns(o.per_request_ns),
            hit: ns(hit),
            miss: ns(miss),
            disconnect: ns(disconnect),
            first_reselect: ns(o.first_reselect_ns),
            data_preparation: ns(o.data_preparation_ns),
            completion: ns(o.read_completion_ns),
        }
    }

    /// When the drive has taken the command at the read-miss overhead.
    fn command_at_miss(&self) -> f64 {
        self.t0 + self.per_request + self.miss
    }

    /// When the drive starts sending data it holds, without disconnecting.
    fn connect_at_hit(&self) -> f64 {
        self.t0 + self.per_request + self.hit + self.data_preparation
    }
}

/// A write's blocks, how it meets the write-back buffer, and when its data moves over the
/// bus and may go to the media; worked out once (`HddDevice::write_request`) for the media,
/// cache and completion steps that follow.
struct WriteRequest {
    t0: f64,
    lbn: u64,
    n: u64,
    end: u64,
    /// The cache holds the write and destages it later (the write completes with its data).
    write_back: bool,
    /// The write continues the last destage, which is still in progress, and joins it.
    append: bool,
    /// When the write-back buffer has space for the write: `t0` unless every write segment
    /// is waiting for its destage.
    space_ns: f64,
    /// The write takes the extra write disconnect (a write-through after another write).
    extra_disconnect: bool,
    /// When the first block starts over the bus.
    xfer_start: f64,
    /// One block's bus transfer.
    xfer: f64,
    /// When the mechanism may start on the write, before spin-up and buffer space.
    mech_after: f64,
    /// The block that must be in the buffer before any block goes to the media (0: none).
    gate: u64,
}

impl WriteRequest {
    /// When block `i` of the write is in the buffer.
    #[inline]
    fn arrival(&self, i: u64) -> f64 {
        self.xfer_start + (i + 1) as f64 * self.xfer
    }

    /// When block `i` may go to the media: once it and the gate block are in the buffer.
    #[inline]
    fn media_ready(&self, i: u64) -> f64 {
        self.arrival(i.max(self.gate))
    }

    /// When the last block is in the buffer.
    fn data_done(&self) -> f64 {
        self.arrival(self.n - 1)
    }
}

/// The disk model. Build it with [`HddDevice::new`].
pub struct HddDevice {
    p: HddParams,
    mech: Mech,
    capacity_bytes: u64,
    queue: Vec<Queued>,
    /// The scheduler's working space, one entry per queued request (bounded by the queue
    /// depth); kept between decisions so that choosing allocates nothing.
    candidates: Vec<Candidate>,
    moves_ns: Vec<f64>,
    /// When each block of the read in progress is in the buffer; reused from read to read.
    avail: Vec<f64>,
    /// The sectors a zero-latency read wants on one track (at most a track's worth); reused.
    track_sectors: Vec<Pbn>,
    /// The run of blocks the last mapping found: requests, read-ahead and destages walk
    /// blocks in order, and a run answers for every block of a track's stretch at once.
    map_run: Cell<MapRun>,
    in_service: Option<InService>,
    /// Where the heads are once the committed work ends.
    head: (u32, u32),
    /// When the committed mechanical work (reads and destages) ends.
    hda_free_ns: f64,
    prefetch: Option<Prefetch>,
    segs: Vec<Segment>,
    /// Whether a segment is reserved for writes (then reads never use it, nor writes others).
    write_only_segment: bool,
    use_clock: u64,
    last_was_read: bool,
    last_write_end: Option<u64>,
    destages: VecDeque<Destage>,
    power: PowerTracker,
    stats: Stats,
}

fn ns(v: u64) -> f64 {
    v as f64
}

/// The index of the block a write of `n` blocks must have in the buffer before a drive with
/// the extra write disconnect writes any of its sectors (DiskSim's threshold: 10 blocks, or
/// 15 for requests of 45 blocks or more, never more than the request).
fn extra_disconnect_write_gate(n: u64) -> u64 {
    let blocks = if n < 45 { n.min(10) } else { 15 };
    blocks.saturating_sub(1)
}

impl HddDevice {
    pub fn new(p: HddParams) -> Result<HddDevice, HddError> {
        let layout = Layout::new(&p.geometry)?;
        if layout.blocks() == 0 {
            return Err(HddError::Geometry("the layout holds no blocks".into()));
        }
        if !(p.mechanics.rpm.is_finite() && p.mechanics.rpm > 0.0) {
            return Err(HddError::Parameter {
                name: "rpm",
                message: "must be positive".into(),
            });
        }
        if p.queue_depth == 0 || p.queue_depth > QUEUE_DEPTH_MAX {
            return Err(HddError::Parameter {
                name: "queue_depth",
                message: format!("must be in 1..={QUEUE_DEPTH_MAX}"),
            });
        }
        if p.cache.segments == 0 || p.cache.segment_sectors == 0 {
            return Err(HddError::Parameter {
                name: "cache.segments",
                message: "at least one segment of at least one sector is required".into(),
            });
        }
        if !(0.0..=1.0).contains(&p.cache.read_watermark) {
            return Err(HddError::Parameter {
                name: "cache.read_watermark",
                message: "must be within 0..=1".into(),
            });
        }
        if let crate::params::SeekCurve::Extracted { points } = &p.mechanics.seek {
            if points.is_empty() || points.windows(2).any(|w| w[0].0 >= w[1].0) {
                return Err(HddError::Parameter {
                    name: "seek.points",
                    message: "need at least one point, in increasing distance".into(),
                });
            }
        }
        let mut segs = vec![Segment::default(); p.cache.segments as usize];
        if p.cache.dedicated_write_segment && segs.len() > 1 {
            segs[0].write_only = true;
        }
        let capacity_bytes = layout.blocks() * SECTOR_BYTES;
        let depth = p.queue_depth as usize;
        Ok(HddDevice {
            mech: Mech::new(layout, &p.mechanics),
            p,
            capacity_bytes,
            queue: Vec::with_capacity(depth),
            candidates: Vec::with_capacity(depth),
            moves_ns: Vec::with_capacity(depth),
            avail: Vec::new(),
            track_sectors: Vec::new(),
            map_run: Cell::new(MapRun {
                first: 0,
                len: 0,
                pbn: Pbn {
                    cylinder: 0,
                    head: 0,
                    sector: 0,
                },
            }),
            in_service: None,
            head: (0, 0),
            hda_free_ns: 0.0,
            prefetch: None,
            write_only_segment: segs.iter().any(|s| s.write_only),
            segs,
            use_clock: 0,
            last_was_read: true,
            last_write_end: None,
            destages: VecDeque::new(),
            power: PowerTracker::default(),
            stats: Stats::default(),
        })
    }

    /// Blocks the drive holds.
    pub fn blocks(&self) -> u64 {
        self.mech.layout.blocks()
    }

    /// The layout, for tools that want the physical location of a block.
    pub fn layout(&self) -> &Layout {
        &self.mech.layout
    }

    fn pbn(&self, lbn: u64) -> Pbn {
        self.pbn_run(lbn).0
    }

    /// Where `lbn` is, and how many blocks from it on follow it sector by sector on its
    /// track (see [`Layout::lbn_to_pbn_run`]).
    fn pbn_run(&self, lbn: u64) -> (Pbn, u64) {
        // Requests are range-checked on submission and read-ahead stops at the last block,
        // so every block asked for here exists.
        self.try_pbn_run(lbn)
            .expect("block inside the checked range")
    }

    /// [`HddDevice::pbn_run`], `None` for a block the layout does not map.
    fn try_pbn_run(&self, lbn: u64) -> Option<(Pbn, u64)> {
        let run = self.map_run.get();
        if lbn >= run.first && lbn - run.first < run.len {
            let into = lbn - run.first;
            let pbn = Pbn {
                sector: run.pbn.sector + into as u32,
                ..run.pbn
            };
            return Some((pbn, run.len - into));
        }
        let (pbn, len) = self.mech.layout.lbn_to_pbn_run(lbn)?;
        self.map_run.set(MapRun {
            first: lbn,
            len,
            pbn,
        });
        Some((pbn, len))
    }

    /// Computes the service of `r` starting at `t`; returns its finish instant.
    fn serve(&mut self, t: SimTime, r: &Request) -> SimTime {
        let t0 = t.as_ns() as f64;
        self.power.account_to(&self.p.power, t0);
        let lbn = r.offset_bytes / SECTOR_BYTES;
        let end = r.end_bytes().div_ceil(SECTOR_BYTES);
        let n = end - lbn;
        let finish = match r.op {
            Op::Read => {
                let f = self.read(t0, lbn, n);
                self.last_was_read = true;
                f
            }
            Op::Write => {
                let f = self.write(t0, lbn, n);
                self.last_was_read = false;
                self.last_write_end = Some(end);
                f
            }
            Op::Trim => t0 + ns(self.p.overheads.per_request_ns),
            Op::Flush => {
                let done = self.destages.back().map_or(t0, |d| d.done_ns);
                done.max(t0) + ns(self.p.overheads.per_request_ns)
            }
        };
        self.power.busy_until_ns = self.power.busy_until_ns.max(finish).max(self.hda_free_ns);
        let f = crate::float::ceil(finish).max(t0);
        SimTime::from_ns((f as u64).max(t.as_ns()))
    }

    /// Where `r`'s first block is, for the scheduler. A zero-length request may start at
    /// the disk's end; the last block stands for it.
    fn target(&self, r: &Request) -> Target {
        if self.p.scheduler == SchedulerKind::Fcfs {
            // First come first served looks at nothing.
            return Target {
                cylinder: 0,
                head: 0,
                angle: 0.0,
                write: false,
            };
        }
        let p = self.pbn((r.offset_bytes / SECTOR_BYTES).min(self.blocks() - 1));
        Target {
            cylinder: p.cylinder,
            head: p.head,
            angle: if self.p.scheduler == SchedulerKind::Sptf {
                self.mech.layout.sector_angle(p)
            } else {
                0.0
            },
            write: r.op == Op::Write,
        }
    }

    /// SPTF's choice at `t`: the least seek plus rotational latency to the first block
    /// from where the heads will be. The move alone bounds each request's time from below,
    /// so a request whose move already loses is not priced further.
    fn pick_sptf(&mut self, t: f64) -> usize {
        let start = t.max(self.hda_free_ns);
        self.moves_ns.clear();
        for q in &self.queue {
            let to = (q.target.cylinder, q.target.head);
            self.moves_ns
                .push(self.mech.reposition_ns(self.head, to, q.target.write));
        }
        let (mech, queue, moves) = (&self.mech, &self.queue, &self.moves_ns);
        pick_sptf(moves, |i| {
            moves[i] + mech.latency_to_angle_ns(start + moves[i], queue[i].target.angle)
        })
        .unwrap_or(0)
    }

    fn dispatch(&mut self, t: SimTime) {
        if self.in_service.is_some() || self.queue.is_empty() {
            return;
        }
        let i = match self.p.scheduler {
            SchedulerKind::Fcfs => 0,
            SchedulerKind::Sptf => self.pick_sptf(t.as_ns() as f64),
            kind => {
                self.candidates.clear();
                self.candidates.extend(self.queue.iter().map(|q| Candidate {
                    cylinder: q.target.cylinder,
                    positioning_ns: 0.0,
                }));
                pick(kind, self.head.0, &self.candidates).unwrap_or(0)
            }
        };
        let r = self.queue.remove(i).request;
        let start = if t < r.arrival { r.arrival } else { t };
        let finish = self.serve(start, &r);
        self.in_service = Some(InService {
            request: r,
            start,
            finish,
        });
    }
}

/// Reads the cache served whole.
pub const CACHE_READ_HITS: CounterDescriptor = CounterDescriptor::new(
    "cache_read_hits",
    Unit::Count,
    "Reads served wholly from the cache.",
);

/// Reads the cache served in part.
pub const CACHE_READ_PARTIAL_HITS: CounterDescriptor = CounterDescriptor::new(
    "cache_read_partial_hits",
    Unit::Count,
    "Reads served partly from the cache.",
);

/// Reads the cache could not serve.
pub const CACHE_READ_MISSES: CounterDescriptor = CounterDescriptor::new(
    "cache_read_misses",
    Unit::Count,
    "Reads the cache could not serve.",
);

/// Reads served from data read ahead.
pub const READ_AHEAD_HITS: CounterDescriptor = CounterDescriptor::new(
    "read_ahead_hits",
    Unit::Count,
    "Reads served from data read ahead.",
);

/// The mean seek distance.
pub const MEAN_SEEK: CounterDescriptor = CounterDescriptor::new(
    "mean_seek_cylinders",
    Unit::Cylinders,
    "Mean seek distance.",
);

/// Time spent seeking.
pub const SEEK_TIME: CounterDescriptor =
    CounterDescriptor::new("seek_ns", Unit::Nanoseconds, "Time spent seeking.");

/// Time spent waiting for rotation.
pub const ROTATION_TIME: CounterDescriptor = CounterDescriptor::new(
    "rotation_ns",
    Unit::Nanoseconds,
    "Time spent waiting for rotation.",
);

/// Time spent on the media transfer.
pub const TRANSFER_TIME: CounterDescriptor = CounterDescriptor::new(
    "transfer_ns",
    Unit::Nanoseconds,
    "Time spent transferring to or from the media.",
);

/// Time the drive was active.
pub const BUSY_TIME: CounterDescriptor =
    CounterDescriptor::new("busy_ns", Unit::Nanoseconds, "Time the drive was active.");

/// Time the drive was spinning and idle.
pub const IDLE_TIME: CounterDescriptor = CounterDescriptor::new(
    "idle_ns",
    Unit::Nanoseconds,
    "Time the drive was spinning and idle.",
);

/// Time the drive was spun down.
pub const STANDBY_TIME: CounterDescriptor = CounterDescriptor::new(
    "standby_ns",
    Unit::Nanoseconds,
    "Time the drive was spun down.",
);

/// Seeks by distance, one counter per bucket.
pub const SEEK_HISTOGRAM: CounterDescriptor = CounterDescriptor::family(
    "seek_cylinders_hist_{}",
    Unit::Count,
    Scope::PerBucket,
    "Seeks whose distance in cylinders falls in the bucket (1, 2-3, 4-7, ..., the last open).",
);

/// The drive's counters, in the order `counters` lists them.
pub const COUNTERS: &[CounterDescriptor] = &[
    CounterDescriptor::new("reads", Unit::Count, "Read requests served."),
    CounterDescriptor::new("writes", Unit::Count, "Write requests served."),
    CACHE_READ_HITS,
    CACHE_READ_PARTIAL_HITS,
    CACHE_READ_MISSES,
    READ_AHEAD_HITS,
    CounterDescriptor::new(
        "write_appends",
        Unit::Count,
        "Writes appended to a cache segment's dirty data.",
    ),
    CounterDescriptor::new(
        "write_buffer_waits",
        Unit::Count,
        "Writes that waited for room in the write-back cache.",
    ),
    CounterDescriptor::new(
        "seeks",
        Unit::Count,
        "Seeks made (moves to another cylinder).",
    ),
    MEAN_SEEK,
    SEEK_TIME,
    ROTATION_TIME,
    TRANSFER_TIME,
    CounterDescriptor::new(
        "media_sectors",
        Unit::Sectors,
        "Sectors read from or written to the media.",
    ),
    BUSY_TIME,
    IDLE_TIME,
    STANDBY_TIME,
    CounterDescriptor::new("spin_ups", Unit::Count, "Spin-ups from standby."),
    CounterDescriptor::new(
        "energy_active_mj",
        Unit::Millijoules,
        "Energy while active.",
    ),
    CounterDescriptor::new("energy_idle_mj", Unit::Millijoules, "Energy while idle."),
    CounterDescriptor::new(
        "energy_standby_mj",
        Unit::Millijoules,
        "Energy while spun down.",
    ),
    CounterDescriptor::new(
        "energy_spin_up_mj",
        Unit::Millijoules,
        "Energy of the spin-ups.",
    ),
    CounterDescriptor::new("energy_total_mj", Unit::Millijoules, "Energy in all."),
    SEEK_HISTOGRAM,
];

impl Device for HddDevice {
    fn counter_descriptors(&self) -> Vec<Described> {
        Described::all(COUNTERS).collect()
    }

    fn model_name(&self) -> &'static str {
        "hdd"
    }

    fn capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }

    fn queue_depth(&self) -> usize {
        self.p.queue_depth as usize
    }

    fn submit(&mut self, now: SimTime, request: Request) -> Result<(), DeviceError> {
        check_range(&request, self.capacity_bytes)?;
        if request.len_bytes == 0 && matches!(request.op, Op::Read | Op::Write) {
            return Err(DeviceError::Invalid {
                reason: "zero-length read or write".into(),
            });
        }
        let outstanding = self.queue.len() + usize::from(self.in_service.is_some());
        if outstanding >= self.queue_depth() {
            return Err(DeviceError::QueueFull {
                queue_depth: self.queue_depth(),
            });
        }
        let target = self.target(&request);
        self.queue.push(Queued { request, target });
        self.dispatch(now);
        Ok(())
    }

    fn next_deadline(&self) -> Option<SimTime> {
        self.in_service.as_ref().map(|s| s.finish)
    }

    fn advance(&mut self, now: SimTime, done: &mut Vec<Completion>) {
        while let Some(s) = self.in_service.as_ref() {
            if s.finish > now {
                break;
            }
            let s = self.in_service.take().expect("checked above");
            assert!(s.finish >= s.request.arrival, "completion before arrival");
            done.push(Completion {
                request: s.request,
                service_start: s.start,
                finish: s.finish,
                status: Status::Ok,
            });
            self.dispatch(s.finish);
        }
    }

    fn counters(&self) -> Vec<DeviceCounter> {
        let s = &self.stats;
        let (ea, ei, es, eu) = self.power.energy_mj(&self.p.power);
        let mean_seek = if s.seeks == 0 {
            0.0
        } else {
            s.seek_cylinders as f64 / s.seeks as f64
        };
        let mut counters = vec![
            DeviceCounter::new("reads", s.reads as f64),
            DeviceCounter::new("writes", s.writes as f64),
            DeviceCounter::new("cache_read_hits", s.read_hits as f64),
            DeviceCounter::new("cache_read_partial_hits", s.read_partial_hits as f64),
            DeviceCounter::new("cache_read_misses", s.read_misses as f64),
            DeviceCounter::new("read_ahead_hits", s.read_ahead_hits as f64),
            DeviceCounter::new("write_appends", s.write_appends as f64),
            DeviceCounter::new("write_buffer_waits", s.write_buffer_waits as f64),
            DeviceCounter::new("seeks", s.seeks as f64),
            DeviceCounter::new("mean_seek_cylinders", mean_seek),
            DeviceCounter::new("seek_ns", s.seek_ns.round()),
            DeviceCounter::new("rotation_ns", s.rotation_ns.round()),
            DeviceCounter::new("transfer_ns", s.transfer_ns.round()),
            DeviceCounter::new("media_sectors", s.media_sectors as f64),
            DeviceCounter::new("busy_ns", self.power.active_ns),
            DeviceCounter::new("idle_ns", self.power.idle_ns),
            DeviceCounter::new("standby_ns", self.power.standby_ns),
            DeviceCounter::new("spin_ups", self.power.spin_ups as f64),
            DeviceCounter::new("energy_active_mj", ea),
            DeviceCounter::new("energy_idle_mj", ei),
            DeviceCounter::new("energy_standby_mj", es),
            DeviceCounter::new("energy_spin_up_mj", eu),
            DeviceCounter::new("energy_total_mj", ea + ei + es + eu),
        ];
        // Seeks by distance, up to the drive's longest: the same list for the whole run.
        let longest = seek_bucket(self.p.geometry.cylinders.saturating_sub(1));
        for (i, &n) in s.seek_histogram.iter().enumerate().take(longest + 1) {
            let name = match i {
                0 => "seek_cylinders_hist_1".to_string(),
                _ if i == SEEK_BUCKETS - 1 => format!("seek_cylinders_hist_{}_up", 1u64 << i),
                _ => format!(
                    "seek_cylinders_hist_{}_{}",
                    1u64 << i,
                    (1u64 << (i + 1)) - 1
                ),
            };
            counters.push(DeviceCounter::new(name, n as f64));
        }
        counters
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod counter_docs {
    /// The model's page lists exactly these counters (`STORSIM_BLESS_DOCS=1` rewrites it).
    #[test]
    fn the_page_lists_exactly_the_descriptors() {
        let tables = storsim_core::conformance::counter_tables(&[("hdd", super::COUNTERS)]);
        storsim_testenv::check_counter_tables("docs/models/hdd.md", &tables).unwrap();
    }
}
