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

use crate::layout::Pbn;
use crate::mech::{seek_bucket, Cursor, Mech, SEEK_BUCKETS};
use crate::params::SchedulerKind;
use crate::params::{HddParams, Overheads, ReadAhead, WriteBack};
use crate::power::PowerTracker;
use crate::sched::{pick, pick_sptf, Candidate};
use crate::{layout::Layout, HddError};
use std::cell::Cell;
use std::collections::VecDeque;
use storsim_core::{
    check_range, Completion, Device, DeviceCounter, DeviceError, Op, Request, SimTime, Status,
    QUEUE_DEPTH_MAX, SECTOR_BYTES,
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

    fn touch(&mut self, seg: usize) {
        self.use_clock += 1;
        self.segs[seg].last_use = self.use_clock;
    }

    fn write_segments(&self) -> usize {
        (self.p.cache.write_segments.max(1) as usize).min(self.segs.len())
    }

    /// Runs the read-ahead up to instant `t` (blocks done by then stay in the segment) and
    /// stops it, unless the minimum read-ahead is not reached yet. Returns when the heads
    /// end their move to the read-ahead's next track, if the read-ahead had begun one.
    ///
    /// DiskSim moves the heads to the next track as soon as the last sector of a track is
    /// read (`disk_buffer_sector_done` initiates the seek), so a read-ahead stopped after that
    /// leaves its heads on the new track, or on their way there: stopping it mid-move,
    /// `disk_buffer_stopable_access` puts the heads on the new track and records the move's
    /// end as `disk_seek_stoptime`, before which the next request's own seek cannot start.
    fn stop_prefetch(&mut self, t: f64) -> Option<f64> {
        self.run_prefetch(t);
        let mut move_end_ns = None;
        if let Some(pf) = self.prefetch.take() {
            let mut pf = pf;
            let stop = pf.min_end.min(pf.limit);
            while pf.next < stop {
                let (p, run) = self.pbn_run(pf.next);
                pf.cursor.transfer(&self.mech, p, false, 0.0, 0.0);
                let more = (run - 1).min(stop - pf.next - 1);
                pf.cursor.read_on(more, f64::INFINITY);
                pf.next += 1 + more;
                self.extend_segment(pf.seg, pf.next);
            }
            self.head = pf.cursor.position();
            if pf.cursor.t_ns <= t && self.prefetch_allows(&pf, pf.next) {
                let p = self.pbn(pf.next);
                let next_track = (p.cylinder, p.head);
                if next_track != self.head {
                    let move_ns = self.mech.reposition_ns(self.head, next_track, false);
                    move_end_ns = Some(pf.cursor.t_ns + move_ns);
                    self.head = next_track;
                }
            }
            self.hda_free_ns = self
                .hda_free_ns
                .max(pf.cursor.t_ns.min(t.max(self.hda_free_ns)));
            if pf.next < pf.min_end {
                self.hda_free_ns = self.hda_free_ns.max(pf.cursor.t_ns);
            }
        }
        move_end_ns
    }

    fn extend_segment(&mut self, seg: usize, end: u64) {
        let size = u64::from(self.p.cache.segment_sectors);
        let s = &mut self.segs[seg];
        s.end = end;
        if s.end - s.start > size {
            s.start = s.end - size;
        }
    }

    /// Whether the read-ahead may take block `lbn`, given the mode's track bounds. DEC's
    /// scheme is bounded by its limit alone, which already ends on a track boundary.
    fn prefetch_allows(&self, pf: &Prefetch, lbn: u64) -> bool {
        if lbn >= pf.limit || lbn >= self.blocks() {
            return false;
        }
        let p = self.pbn(lbn);
        match self.p.cache.read_ahead {
            ReadAhead::None => false,
            ReadAhead::SegmentEnd | ReadAhead::DecTracks => true,
            ReadAhead::TrackEnd => (p.cylinder, p.head) == pf.bound,
            ReadAhead::CylinderEnd => p.cylinder == pf.bound.0,
        }
    }

    /// Advances the read-ahead over every block it finishes by `t`.
    fn run_prefetch(&mut self, t: f64) {
        let Some(mut pf) = self.prefetch.take() else {
            return;
        };
        while self.prefetch_allows(&pf, pf.next) {
            let (p, run) = self.pbn_run(pf.next);
            if pf.cursor.follows(p) {
                // The blocks on the sectors right after the one just read go a run at a
                // time: they are all on one track (so the mode's track bound holds for all
                // if for the first), and each takes one sector time.
                let count = run.min(pf.limit - pf.next);
                let n = pf.cursor.read_on(count, t);
                if n > 0 {
                    self.extend_segment(pf.seg, pf.next + n);
                    pf.next += n;
                    self.stats.media_sectors += n;
                }
                if n < count {
                    break;
                }
                continue;
            }
            let mut c = pf.cursor;
            let done = c.transfer(&self.mech, p, false, 0.0, 0.0);
            if done > t {
                break;
            }
            pf.cursor = c;
            self.extend_segment(pf.seg, pf.next + 1);
            pf.next += 1;
            self.stats.media_sectors += 1;
        }
        if !self.prefetch_allows(&pf, pf.next) && pf.cursor.t_ns <= t {
            // The read-ahead reached its limit by `t` and released the mechanism where it
            // stopped. A later hit may raise a limit, but it does not restart a finished
            // read-ahead (DiskSim restarts one only with read-ahead on idle hits).
            self.head = pf.cursor.position();
            self.hda_free_ns = self.hda_free_ns.max(pf.cursor.t_ns);
            return;
        }
        self.prefetch = Some(pf);
    }

    /// Runs the read-ahead through block `end - 1` whatever the time, returning when each
    /// block from `from` is in the cache.
    fn prefetch_through(&mut self, from: u64, end: u64, avail: &mut Vec<f64>, t0: f64) {
        let Some(mut pf) = self.prefetch.take() else {
            return;
        };
        // The blocks before the read-ahead's next one are in the cache already.
        let media_from = end.min(pf.next).max(from);
        avail.resize(avail.len() + (media_from - from) as usize, t0);
        if media_from < end {
            self.read_blocks(&mut pf.cursor, media_from, end, avail);
            self.extend_segment(pf.seg, end);
            pf.next = end;
            self.stats.media_sectors += end - media_from;
        }
        self.prefetch = Some(pf);
    }

    /// Reads blocks `from..end` with `c`, appending when each is done to `done`: the first
    /// block of each run as [`Cursor::transfer`] takes it, the rest of the run sector after
    /// sector.
    fn read_blocks(&self, c: &mut Cursor, from: u64, end: u64, done: &mut Vec<f64>) {
        let mut b = from;
        while b < end {
            let (p, run) = self.pbn_run(b);
            done.push(c.transfer(&self.mech, p, false, 0.0, 0.0));
            let more = (run - 1).min(end - b - 1);
            c.read_on_into(more, done);
            b += 1 + more;
        }
    }

    /// The block before which the read-ahead after a read of `[lbn, req_end)` stops, for a
    /// segment that starts at `seg_start`.
    ///
    /// DEC's scheme (DiskSim's "buffer continuous read" 4) ignores the maximum read-ahead:
    /// it reads to the end of the track holding the block after the request, and one track
    /// further (a track's worth of blocks) when the segment already started before that
    /// track, so that a sequential stream keeps a track ahead of the host.
    fn read_ahead_limit(&self, seg_start: u64, lbn: u64, req_end: u64) -> u64 {
        let c = &self.p.cache;
        if !c.enabled || c.read_ahead == ReadAhead::None {
            return req_end;
        }
        if c.read_ahead == ReadAhead::DecTracks {
            let bounds = self
                .try_pbn_run(req_end)
                .and_then(|(p, run)| self.mech.layout.track_bounds_at(req_end, p, run));
            let Some((first, end)) = bounds else {
                return req_end.min(self.blocks());
            };
            let limit = if seg_start < first {
                end + u64::from(self.mech.layout.sectors_per_track(self.pbn(lbn).cylinder))
            } else {
                end
            };
            return limit.min(self.blocks());
        }
        let max = u64::from(c.max_read_ahead_sectors.max(c.min_read_ahead_sectors));
        (req_end + max).min(self.blocks())
    }

    fn start_prefetch(&mut self, seg: usize, cursor: Cursor, req_lbn: u64, req_end: u64) {
        let limit = self.read_ahead_limit(self.segs[seg].start, req_lbn, req_end);
        if limit <= req_end {
            return;
        }
        let last = self.pbn(req_end - 1);
        let bound = (last.cylinder, last.head);
        let min_end = (req_end + u64::from(self.p.cache.min_read_ahead_sectors)).min(limit);
        self.prefetch = Some(Prefetch {
            seg,
            cursor,
            next: req_end,
            limit,
            min_end,
            bound,
        });
    }

    /// Mechanism earliest start for foreground work at `t`, after spin-up when stopped.
    fn mech_ready(&mut self, t: f64) -> f64 {
        let mut ready = t.max(self.hda_free_ns);
        if self.power.in_standby(&self.p.power, t) {
            self.power.spin_ups += 1;
            ready = ready.max(t + ns(self.p.power.spin_up_ns));
            self.power.busy_until_ns = self.power.busy_until_ns.max(ready);
            // The cache does not survive a spin-down in this model: the drive re-reads.
            for s in &mut self.segs {
                s.end = s.start;
            }
        }
        ready
    }

    /// When the destage holding the mechanism at `t` ends, if one does.
    fn destage_busy_until(&self, t: f64) -> Option<f64> {
        self.destages
            .iter()
            .map(|d| d.done_ns)
            .filter(|&d| d > t)
            .fold(None, |a: Option<f64>, d| Some(a.map_or(d, |a| a.max(d))))
    }

    fn retire_destages(&mut self, t: f64) {
        while self.destages.front().is_some_and(|d| d.done_ns <= t) {
            self.destages.pop_front();
        }
    }

    /// The least recently used segment a read may fill.
    fn victim_segment(&self, for_write: bool) -> usize {
        let mut best: Option<usize> = None;
        for (i, s) in self.segs.iter().enumerate() {
            if s.write_only != for_write && self.write_only_segment {
                continue;
            }
            if self.prefetch.as_ref().is_some_and(|pf| pf.seg == i) && !for_write {
                continue;
            }
            let older = match best {
                None => true,
                Some(b) => s.last_use < self.segs[b].last_use,
            };
            if older {
                best = Some(i);
            }
        }
        best.unwrap_or(0)
    }

    fn watermark(&self, n: u64) -> u64 {
        let c = &self.p.cache;
        let w = if c.watermark_by_request_size {
            ((n.min(u64::from(c.segment_sectors)) as f64 * c.read_watermark) as u64).max(1)
        } else {
            crate::float::ceil(u64::from(c.segment_sectors) as f64 * c.read_watermark) as u64
        };
        w.clamp(1, n)
    }

    /// Serves a read dispatched at `t0`; returns its finish instant.
    fn read(&mut self, t0: f64, lbn: u64, n: u64) -> f64 {
        let r = ReadRequest::new(&self.p.overheads, self.last_was_read, t0, lbn, n);
        let xfer = ns(self.p.interface.read_transfer_ns_per_sector);
        self.stats.reads += 1;
        self.run_prefetch(t0);
        self.retire_destages(t0);
        let mut avail = std::mem::take(&mut self.avail);
        avail.clear();
        let connect = match self.read_path(lbn, r.end) {
            ReadPath::Hit(seg) => self.read_hit(&r, seg, &mut avail),
            ReadPath::Stream => self.read_stream(&r, &mut avail),
            ReadPath::Media => self.read_media(&r, &mut avail),
        };
        let mut bus = connect;
        for &a in &avail {
            bus = bus.max(a) + xfer;
        }
        self.avail = avail;
        bus + r.completion
    }

    /// Which path serves a read of `[lbn, end)`, with the read-ahead brought up to now.
    fn read_path(&self, lbn: u64, end: u64) -> ReadPath {
        let cache_on = self.p.cache.enabled;
        let in_stream = self.prefetch.as_ref().is_some_and(|pf| {
            let s = &self.segs[pf.seg];
            cache_on && lbn >= s.start && lbn <= pf.next && s.start < s.end
        });
        let whole = if cache_on {
            (0..self.segs.len()).find(|&i| self.segs[i].holds(lbn, end))
        } else {
            None
        };
        if let Some(seg) =
            whole.filter(|_| !in_stream || end <= self.prefetch.as_ref().map_or(0, |pf| pf.next))
        {
            ReadPath::Hit(seg)
        } else if in_stream {
            ReadPath::Stream
        } else {
            ReadPath::Media
        }
    }

    /// A read that segment `seg` holds whole: every block is in the buffer at `t0`. Returns
    /// when the drive reconnects to send them.
    fn read_hit(&mut self, r: &ReadRequest, seg: usize, avail: &mut Vec<f64>) -> f64 {
        self.stats.read_hits += 1;
        if self.prefetch.as_ref().is_some_and(|pf| pf.seg == seg) {
            self.stats.read_ahead_hits += 1;
            self.extend_read_ahead(seg, r.lbn, r.end);
        } else if self.p.cache.read_ahead_on_idle_hit && self.prefetch.is_none() {
            let start = self.mech_ready(r.command_at_miss());
            let c = Cursor::new(start, self.head);
            let seg_end = self.segs[seg].end;
            if seg_end < self.blocks() {
                self.start_prefetch(seg, c, r.lbn, seg_end);
            }
        }
        self.touch(seg);
        avail.resize(r.n as usize, r.t0);
        match self.destage_busy_until(r.t0) {
            // The mechanism is destaging, which cannot be stopped: the drive takes the
            // command at the read-miss overhead, disconnects, and reconnects once the
            // destage has released the mechanism (DiskSim's hit-while-busy path).
            Some(busy) => {
                busy.max(r.command_at_miss() + r.disconnect) + r.first_reselect + r.data_preparation
            }
            None => r.connect_at_hit(),
        }
    }

    /// A read that starts in the segment the read-ahead is filling, at or before the block it
    /// reads next: its blocks are in the buffer as the read-ahead reaches them, which it now
    /// does without stopping. Returns when the drive starts sending them.
    fn read_stream(&mut self, r: &ReadRequest, avail: &mut Vec<f64>) -> f64 {
        self.stats.read_partial_hits += 1;
        self.stats.read_ahead_hits += 1;
        let seg = self.prefetch.as_ref().map_or(0, |pf| pf.seg);
        self.extend_read_ahead(seg, r.lbn, r.end);
        self.touch(seg);
        self.prefetch_through(r.lbn, r.end, avail, r.t0);
        if let Some(pf) = &self.prefetch {
            self.head = pf.cursor.position();
            self.hda_free_ns = self.hda_free_ns.max(pf.cursor.t_ns);
        }
        r.connect_at_hit()
    }

    /// A miss, or a partial hit on a segment nobody reads into: the cached head of the
    /// request goes at once, the rest comes from the media, and the read-ahead starts after
    /// it. Returns when the drive reconnects to send the blocks.
    fn read_media(&mut self, r: &ReadRequest, avail: &mut Vec<f64>) -> f64 {
        // A read waits for an interrupted move on top of its command overhead: DiskSim's
        // `disk_check_hda` starts the seek at the read's arrival after both
        // `overhead_done - simtime` and `disk_seek_stoptime - simtime`, added together.
        let move_left_ns = self
            .stop_prefetch(r.t0)
            .map_or(0.0, |end| (end - r.t0).max(0.0));
        let cache_on = self.p.cache.enabled;
        let partial = if cache_on {
            (0..self.segs.len()).find(|&i| {
                let s = &self.segs[i];
                !s.write_only && s.start < s.end && r.lbn >= s.start && r.lbn < s.end
            })
        } else {
            None
        };
        let (seg, media_from) = match partial {
            Some(seg) => {
                self.stats.read_partial_hits += 1;
                let e = self.segs[seg].end;
                avail.resize((e - r.lbn) as usize, r.t0);
                (seg, e)
            }
            None => {
                self.stats.read_misses += 1;
                let seg = self.victim_segment(false);
                self.segs[seg].start = r.lbn;
                self.segs[seg].end = r.lbn;
                (seg, r.lbn)
            }
        };
        self.touch(seg);
        let start = self.mech_ready(r.command_at_miss() + move_left_ns);
        let mut c = Cursor::new(start, self.head);
        if self.p.cache.immediate_read {
            self.read_track_order(&mut c, media_from, r.end, avail);
        } else {
            self.read_blocks(&mut c, media_from, r.end, avail);
        }
        self.segs[seg].end = r.end;
        let size = u64::from(self.p.cache.segment_sectors);
        if self.segs[seg].end - self.segs[seg].start > size {
            self.segs[seg].start = self.segs[seg].end - size;
        }
        self.stats.media_sectors += r.end - media_from;
        self.stats.add_cursor(&c);
        self.head = c.position();
        self.hda_free_ns = c.t_ns;
        let connect = if partial.is_some() {
            r.connect_at_hit()
        } else {
            // The watermark is reached when the first `w` blocks are all in the buffer,
            // which with zero-latency reads is not always when the w-th arrives.
            let w = self.watermark(r.n) as usize;
            let ready = avail[..w]
                .iter()
                .fold(r.command_at_miss() + r.disconnect, |a, &b| a.max(b));
            ready + r.first_reselect + r.data_preparation
        };
        if cache_on {
            self.start_prefetch(seg, c, r.lbn, r.end);
        }
        connect
    }

    /// Zero-latency reads (DiskSim's immediate buffer read) of blocks `from..end` with `c`:
    /// on each track the heads take the request's sectors in the order they pass under them,
    /// from the first sector boundary after they arrive, so a block may be in the buffer
    /// before the ones ahead of it. The bus still sends them in order.
    fn read_track_order(&mut self, c: &mut Cursor, from: u64, end: u64, avail: &mut Vec<f64>) {
        let mut sectors = std::mem::take(&mut self.track_sectors);
        let mut b = from;
        while b < end {
            let first = self.pbn(b);
            sectors.clear();
            sectors.push(first);
            while b + (sectors.len() as u64) < end {
                let p = self.pbn(b + sectors.len() as u64);
                if (p.cylinder, p.head) != (first.cylinder, first.head) {
                    break;
                }
                sectors.push(p);
            }
            c.read_any_order(&self.mech, &sectors, avail);
            b += sectors.len() as u64;
        }
        self.track_sectors = sectors;
    }

    /// A read of `[lbn, end)` found its blocks in segment `seg`, which the read-ahead fills:
    /// the read-ahead goes on at least as far as it would after a read of those blocks.
    fn extend_read_ahead(&mut self, seg: usize, lbn: u64, end: u64) {
        let limit = self.read_ahead_limit(self.segs[seg].start, lbn, end);
        if let Some(pf) = self.prefetch.as_mut() {
            pf.limit = pf.limit.max(limit);
        }
    }

    /// Serves a write dispatched at `t0`; returns its finish instant.
    fn write(&mut self, t0: f64, lbn: u64, n: u64) -> f64 {
        self.stats.writes += 1;
        let move_end_ns = self.stop_prefetch(t0);
        self.retire_destages(t0);
        // Invalidate what the cache holds of these blocks elsewhere.
        for s in &mut self.segs {
            if s.start < lbn + n && lbn < s.end {
                s.end = s.start;
            }
        }
        let mut w = self.write_request(t0, lbn, n);
        // A write's seek waits for an interrupted move only until the move ends, not on top
        // of its command overhead as a read's does: that is what DiskSim's histograms show
        // (added to the overhead, HP C2247A's writes drift from DiskSim's, 0.018 to 0.021 ms
        // RMS between the two simulated CDFs; overlapping it, 0.019, while HP C3323A's reads
        // come to 0.006 from 0.012).
        if let Some(end) = move_end_ns {
            w.mech_after = w.mech_after.max(end);
        }
        let c = self.write_media(&w);
        if self.p.cache.enabled && self.p.cache.read_hits_on_write_data {
            self.keep_write_data(&w);
        }
        if w.write_back {
            self.write_back_done(&w, c)
        } else {
            self.write_through_done(&w, &c)
        }
    }

    /// How the write at `t0` meets the write-back buffer and the bus: whether it continues
    /// the last destage, when buffer space is free for it, whether it takes the extra write
    /// disconnect, and so when its data moves and when the mechanism may start.
    fn write_request(&mut self, t0: f64, lbn: u64, n: u64) -> WriteRequest {
        let o = &self.p.overheads;
        let after_read = self.last_was_read;
        let write_back = self.p.cache.write_back != WriteBack::None && self.p.cache.enabled;
        let cmd = ns(o.per_request_ns)
            + ns(match (write_back, after_read) {
                (true, true) => o.write_hit_after_read_ns,
                (true, false) => o.write_hit_after_write_ns,
                (false, true) => o.write_miss_after_read_ns,
                (false, false) => o.write_miss_after_write_ns,
            });
        let append = write_back
            && self.p.cache.combine_sequential_writes
            && self
                .destages
                .back()
                .is_some_and(|d| d.end_lbn == lbn && d.done_ns > t0);
        let mut space_ns = t0;
        if write_back && !append && self.destages.len() >= self.write_segments() {
            self.stats.write_buffer_waits += 1;
            space_ns = self.destages.front().map_or(t0, |d| d.done_ns);
        }
        // DiskSim gives a write the extra disconnect only when the write segment is the one
        // the previous request used and the write does not continue it: a write after a
        // read, or a sequential write, takes its data at once (the HP C2247A's trace shows
        // the same: triple disconnects only for writes after other writes).
        let follows_other_write = !after_read && self.last_write_end.is_some_and(|e| e != lbn);
        let extra = o
            .extra_write_disconnect
            .as_ref()
            .filter(|_| !write_back && follows_other_write);
        let (xfer_start, mech_after) = match extra {
            // The drive disconnects after the command, reconnects after a delay to take the
            // data, and lets the mechanism start a little after the command.
            Some(x) => (
                t0 + ns(o.per_request_ns)
                    + ns(x.command_ns)
                    + ns(x.disconnect_ns)
                    + ns(x.inter_disconnect_ns)
                    + ns(o.first_reselect_ns)
                    + ns(o.data_preparation_ns),
                t0 + ns(o.per_request_ns) + ns(x.command_ns) + ns(x.seek_delta_ns),
            ),
            None => (
                (t0 + cmd + ns(o.data_preparation_ns)).max(space_ns),
                t0 + cmd,
            ),
        };
        // A drive with the extra write disconnect writes no sector of a request until its
        // segment holds the first min(n, 10) blocks (15 for requests of 45 blocks or more),
        // as DiskSim's block-availability check has it: block i is ready only once block
        // `gate` has arrived.
        let gate = if o.extra_write_disconnect.is_some() && !append {
            extra_disconnect_write_gate(n)
        } else {
            0
        };
        WriteRequest {
            t0,
            lbn,
            n,
            end: lbn + n,
            write_back,
            append,
            space_ns,
            extra_disconnect: extra.is_some(),
            xfer_start,
            xfer: ns(self.p.interface.write_transfer_ns_per_sector),
            mech_after,
            gate,
        }
    }

    /// Writes the blocks to the media: on from the last destage when the write continues
    /// it, otherwise from where the heads are once the mechanism is ready and the buffer
    /// has space; each block once its data is in the buffer. Returns the heads at the end.
    fn write_media(&mut self, w: &WriteRequest) -> Cursor {
        let mut c = if w.append {
            self.stats.write_appends += 1;
            self.destages
                .back()
                .map(|d| d.cursor)
                .unwrap_or_else(|| Cursor::new(w.t0, self.head))
        } else {
            let ready = self.mech_ready(w.mech_after);
            Cursor::new(ready.max(w.space_ns), self.head)
        };
        let min_seek = if w.append {
            0.0
        } else {
            ns(self.p.overheads.minimum_seek_ns)
        };
        // A run's first block as `transfer` takes it (a move, a rotation), the rest of the
        // run sector after sector.
        let mut i = 0;
        while i < w.n {
            let (p, run) = self.pbn_run(w.lbn + i);
            c.transfer(
                &self.mech,
                p,
                true,
                w.media_ready(i),
                if i == 0 { min_seek } else { 0.0 },
            );
            let more = (run - 1).min(w.n - i - 1);
            c.write_on(&self.mech, more, |k| w.media_ready(i + 1 + k));
            i += 1 + more;
        }
        self.stats.media_sectors += w.n;
        self.stats.add_cursor(&c);
        self.head = c.position();
        self.hda_free_ns = self.hda_free_ns.max(c.t_ns);
        c
    }

    /// With read hits on write data, the written blocks stay in the cache: in the segment
    /// the write continues, or in the least recently used one writes may fill.
    fn keep_write_data(&mut self, w: &WriteRequest) {
        let seg = if w.append {
            self.segs
                .iter()
                .position(|s| s.end == w.lbn && s.start < s.end)
        } else {
            None
        };
        let seg = seg.unwrap_or_else(|| {
            let v = self.victim_segment(true);
            self.segs[v].start = w.lbn;
            self.segs[v].end = w.lbn;
            v
        });
        self.extend_segment(seg, w.end);
        self.touch(seg);
    }

    /// With write-back, the media work `c` ended becomes (or extends) a destage, and the
    /// write completes once its data is in the buffer.
    fn write_back_done(&mut self, w: &WriteRequest, c: Cursor) -> f64 {
        if w.append {
            if let Some(d) = self.destages.back_mut() {
                d.done_ns = c.t_ns;
                d.end_lbn = w.end;
                d.cursor = c;
            }
        } else {
            self.destages.push_back(Destage {
                done_ns: c.t_ns,
                end_lbn: w.end,
                cursor: c,
            });
        }
        w.data_done() + ns(self.p.overheads.write_completion_ns)
    }

    /// Without write-back, the drive disconnects once it has the data and reconnects to
    /// complete the write when the media work `c` ended.
    fn write_through_done(&self, w: &WriteRequest, c: &Cursor) -> f64 {
        let o = &self.p.overheads;
        let extra = o
            .extra_write_disconnect
            .as_ref()
            .filter(|_| w.extra_disconnect);
        let (disconnect, reselect) = match extra {
            Some(x) => (x.second_disconnect_ns, o.other_reselect_ns),
            None => (o.write_disconnect_ns, o.first_reselect_ns),
        };
        let reconnect = c.t_ns.max(w.data_done() + ns(disconnect));
        reconnect + ns(reselect) + ns(o.write_completion_ns)
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

impl Device for HddDevice {
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
mod tests {
    //! The scheduler's cached view of the queue against the direct computation, and the
    //! read and write paths' overheads.

    use super::*;
    use crate::params::{
        CacheParams, Geometry, Interface, Mechanics, Overheads, PowerParams, SeekCurve,
        SparingScheme, SurfaceOrder, Zone,
    };
    use crate::seek::seek_ns;
    use storsim_core::Prng;

    fn zone(first: u32, last: u32, spt: u32, slips: Vec<u64>) -> Zone {
        Zone {
            first_cylinder: first,
            last_cylinder: last,
            sectors_per_track: spt,
            first_block_offset_sectors: 3.0,
            empty_front_sectors: 0,
            track_skew_sectors: 7.0,
            cylinder_skew_sectors: 11.0,
            spares: 40,
            slips,
            defects: vec![],
        }
    }

    /// A drive with slips, two zones and a gap between them, a non-monotone extracted seek
    /// curve, a head switch and a negative write settle, and the given scheduler.
    fn params(scheduler: SchedulerKind, order: SurfaceOrder) -> HddParams {
        HddParams {
            geometry: Geometry {
                surfaces: 3,
                cylinders: 400,
                surface_order: order,
                sparing: SparingScheme::SectorsPerZone,
                sparing_range_cylinders: 1,
                zones: vec![
                    zone(0, 199, 50, vec![5, 6, 7, 900, 20_000]),
                    zone(201, 399, 37, vec![0, 1000]),
                ],
                block_count: None,
                g4: None,
            },
            mechanics: Mechanics {
                rpm: 7200.0,
                head_switch_ns: 400_000,
                write_settle_ns: -100_000,
                seek: SeekCurve::Extracted {
                    points: vec![
                        (1, 800_000),
                        (5, 1_300_000),
                        (6, 1_250_000),
                        (100, 4_000_000),
                        (399, 9_000_000),
                    ],
                },
            },
            overheads: Overheads {
                read_miss_after_read_ns: 200_000,
                write_hit_after_read_ns: 100_000,
                ..Overheads::default()
            },
            interface: Interface {
                read_transfer_ns_per_sector: 20_000,
                write_transfer_ns_per_sector: 20_000,
            },
            cache: CacheParams {
                enabled: true,
                segments: 4,
                segment_sectors: 128,
                write_segments: 2,
                dedicated_write_segment: false,
                read_ahead: crate::params::ReadAhead::SegmentEnd,
                min_read_ahead_sectors: 0,
                max_read_ahead_sectors: 64,
                read_ahead_on_idle_hit: false,
                read_hits_on_write_data: true,
                write_back: crate::params::WriteBack::Full,
                combine_sequential_writes: true,
                read_watermark: 0.0,
                watermark_by_request_size: true,
                immediate_read: false,
            },
            queue_depth: 24,
            scheduler,
            power: PowerParams::default(),
        }
    }

    /// SPTF's choice as the scheduler made it before it cached anything: every queued
    /// request mapped afresh, its seek from the curve, its latency from its sector, and
    /// every one of them priced.
    fn sptf_direct(d: &HddDevice, t: f64) -> usize {
        let start = t.max(d.hda_free_ns);
        let cylinders = d.mech.layout.cylinders();
        let cands: Vec<Candidate> = d
            .queue
            .iter()
            .map(|q| {
                let r = &q.request;
                let p = d
                    .mech
                    .layout
                    .lbn_to_pbn(r.offset_bytes / SECTOR_BYTES)
                    .unwrap();
                let seek = seek_ns(
                    &d.p.mechanics.seek,
                    d.head.0.abs_diff(p.cylinder),
                    cylinders,
                );
                let switch = if d.head.1 != p.head {
                    d.p.mechanics.head_switch_ns as f64
                } else {
                    0.0
                };
                let mut mv = seek.max(switch);
                if mv > 0.0 && r.op == Op::Write {
                    mv = (mv + d.p.mechanics.write_settle_ns as f64).max(0.0);
                }
                Candidate {
                    cylinder: p.cylinder,
                    positioning_ns: mv + d.mech.latency_ns(start + mv, p),
                }
            })
            .collect();
        pick(SchedulerKind::Sptf, d.head.0, &cands).unwrap()
    }

    /// Random reads and writes, some sequential, kept up to the queue depth: at every
    /// decision SPTF picks what pricing every request directly picks, and the cached
    /// cylinder is the mapped one (which C-LOOK and SSTF use).
    #[test]
    fn sptf_with_cached_targets_and_bounds_picks_as_pricing_everything() {
        let seed = 0x5b7f_0002_u64;
        println!("seed {seed:#x}");
        let mut r = Prng::new(seed);
        for order in [SurfaceOrder::Normal, SurfaceOrder::ReverseOnOddCylinder] {
            let mut d = HddDevice::new(params(SchedulerKind::Sptf, order)).unwrap();
            let blocks = d.blocks();
            let mut now = 0u64;
            let mut done = Vec::new();
            let mut next_lbn = 0u64;
            let mut decisions = 0;
            for id in 0..4000u64 {
                let n = 1 + r.next_u64() % 16;
                // One request in four continues the previous one.
                let lbn = if r.next_u64() % 4 == 3 {
                    next_lbn.min(blocks - n)
                } else {
                    r.next_u64() % (blocks - n)
                };
                next_lbn = lbn + n;
                let op = if r.next_u64() % 2 == 1 {
                    Op::Read
                } else {
                    Op::Write
                };
                let request = Request {
                    id,
                    op,
                    offset_bytes: lbn * SECTOR_BYTES,
                    len_bytes: n * SECTOR_BYTES,
                    arrival: SimTime::from_ns(now),
                    flow: 0,
                };
                while d.submit(SimTime::from_ns(now), request).is_err() {
                    let f = d.next_deadline().unwrap();
                    now = now.max(f.as_ns());
                    // The decision the completion is about to make.
                    for q in &d.queue {
                        let p = d
                            .mech
                            .layout
                            .lbn_to_pbn(q.request.offset_bytes / SECTOR_BYTES)
                            .unwrap();
                        assert_eq!((q.target.cylinder, q.target.head), (p.cylinder, p.head));
                        assert_eq!(q.target.angle, d.mech.layout.sector_angle(p));
                    }
                    let t = f.as_ns() as f64;
                    assert_eq!(d.pick_sptf(t), sptf_direct(&d, t));
                    decisions += 1;
                    d.advance(f, &mut done);
                }
                now += r.next_u64() % 2_000_000;
            }
            assert!(decisions > 1000, "only {decisions} decisions with a queue");
        }
    }

    #[test]
    fn a_read_takes_the_overheads_of_what_the_drive_did_last() {
        let o = Overheads {
            per_request_ns: 1,
            read_hit_after_read_ns: 10,
            read_hit_after_write_ns: 20,
            read_miss_after_read_ns: 100,
            read_miss_after_write_ns: 200,
            read_disconnect_after_read_ns: 1000,
            read_disconnect_after_write_ns: 2000,
            data_preparation_ns: 10_000,
            ..Overheads::default()
        };
        let after_read = ReadRequest::new(&o, true, 5.0, 8, 4);
        assert_eq!(after_read.end, 12);
        assert_eq!(after_read.command_at_miss(), 106.0);
        assert_eq!(after_read.connect_at_hit(), 10_016.0);
        assert_eq!(after_read.disconnect, 1000.0);
        let after_write = ReadRequest::new(&o, false, 5.0, 8, 4);
        assert_eq!(after_write.command_at_miss(), 206.0);
        assert_eq!(after_write.connect_at_hit(), 10_026.0);
        assert_eq!(after_write.disconnect, 2000.0);
    }

    /// A write-through drive with HP's extra write disconnect: it takes the extra
    /// disconnect only after a write that ended elsewhere, and holds every block back until
    /// the gate block is in the buffer either way.
    #[test]
    fn a_write_takes_the_extra_disconnect_only_after_a_write_elsewhere() {
        let mut p = params(SchedulerKind::Fcfs, SurfaceOrder::Normal);
        p.cache.write_back = crate::params::WriteBack::None;
        p.interface.write_transfer_ns_per_sector = 1000;
        p.overheads = Overheads {
            per_request_ns: 1,
            write_miss_after_read_ns: 10,
            write_miss_after_write_ns: 20,
            data_preparation_ns: 100,
            first_reselect_ns: 10_000,
            extra_write_disconnect: Some(crate::params::ExtraWriteDisconnect {
                command_ns: 200,
                disconnect_ns: 400,
                inter_disconnect_ns: 800,
                second_disconnect_ns: 1600,
                seek_delta_ns: 3200,
            }),
            ..Overheads::default()
        };
        let mut d = HddDevice::new(p).unwrap();

        d.last_was_read = true;
        let after_read = d.write_request(5.0, 100, 12);
        assert!(!after_read.extra_disconnect && !after_read.write_back);
        assert_eq!(after_read.xfer_start, 5.0 + 1.0 + 10.0 + 100.0);
        assert_eq!(after_read.mech_after, 16.0);
        assert_eq!(after_read.gate, 9);
        assert_eq!(after_read.media_ready(0), after_read.arrival(9));
        assert_eq!(after_read.media_ready(11), after_read.arrival(11));
        assert_eq!(after_read.data_done(), 116.0 + 12_000.0);

        d.last_was_read = false;
        d.last_write_end = Some(50);
        let elsewhere = d.write_request(5.0, 100, 50);
        assert!(elsewhere.extra_disconnect);
        assert_eq!(
            elsewhere.xfer_start,
            5.0 + 1.0 + 200.0 + 400.0 + 800.0 + 10_000.0 + 100.0
        );
        assert_eq!(elsewhere.mech_after, 5.0 + 1.0 + 200.0 + 3200.0);
        assert_eq!(elsewhere.gate, 14);

        d.last_write_end = Some(100);
        let sequential = d.write_request(5.0, 100, 3);
        assert!(!sequential.extra_disconnect);
        assert_eq!(sequential.xfer_start, 5.0 + 1.0 + 20.0 + 100.0);
        assert_eq!(sequential.gate, 2);
    }
}
