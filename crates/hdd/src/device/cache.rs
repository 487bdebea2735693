//! The segmented cache's bookkeeping: segments and their use, the read-ahead (started,
//! run, stopped), the committed destages, and when the mechanism is free for foreground work.

use super::{ns, HddDevice, Prefetch};
use crate::mech::Cursor;
use crate::params::ReadAhead;

impl HddDevice {
    /// Marks segment `seg` as the most recently used.
    pub(super) fn touch(&mut self, seg: usize) {
        self.use_clock += 1;
        self.segs[seg].last_use = self.use_clock;
    }

    /// How many segments writes may use.
    pub(super) fn write_segments(&self) -> usize {
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
    pub(super) fn stop_prefetch(&mut self, t: f64) -> Option<f64> {
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

    /// Extends segment `seg` to end at block `end`, dropping its oldest blocks beyond the
    /// segment size.
    pub(super) fn extend_segment(&mut self, seg: usize, end: u64) {
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
    pub(super) fn run_prefetch(&mut self, t: f64) {
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
    pub(super) fn prefetch_through(&mut self, from: u64, end: u64, avail: &mut Vec<f64>, t0: f64) {
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
    pub(super) fn read_blocks(&self, c: &mut Cursor, from: u64, end: u64, done: &mut Vec<f64>) {
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
    pub(super) fn read_ahead_limit(&self, seg_start: u64, lbn: u64, req_end: u64) -> u64 {
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

    /// Starts the read-ahead into segment `seg` after a read of `[req_lbn, req_end)` left the
    /// heads at `cursor`, when the read-ahead limit lies past the read.
    pub(super) fn start_prefetch(
        &mut self,
        seg: usize,
        cursor: Cursor,
        req_lbn: u64,
        req_end: u64,
    ) {
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
    pub(super) fn mech_ready(&mut self, t: f64) -> f64 {
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
    pub(super) fn destage_busy_until(&self, t: f64) -> Option<f64> {
        self.destages
            .iter()
            .map(|d| d.done_ns)
            .filter(|&d| d > t)
            .fold(None, |a: Option<f64>, d| Some(a.map_or(d, |a| a.max(d))))
    }

    /// Forgets the destages done by `t`.
    pub(super) fn retire_destages(&mut self, t: f64) {
        while self.destages.front().is_some_and(|d| d.done_ns <= t) {
            self.destages.pop_front();
        }
    }

    /// The least recently used segment a read may fill.
    pub(super) fn victim_segment(&self, for_write: bool) -> usize {
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

    /// How many blocks of a read of `n` must be in the cache before the drive reconnects.
    pub(super) fn watermark(&self, n: u64) -> u64 {
        let c = &self.p.cache;
        let w = if c.watermark_by_request_size {
            ((n.min(u64::from(c.segment_sectors)) as f64 * c.read_watermark) as u64).max(1)
        } else {
            crate::float::ceil(u64::from(c.segment_sectors) as f64 * c.read_watermark) as u64
        };
        w.clamp(1, n)
    }
}
