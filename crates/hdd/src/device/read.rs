//! A read's three paths through the cache (`read_hit`, `read_stream` into the read-ahead,
//! `read_media`), chosen by `read_path`.

use super::{ns, HddDevice, ReadPath, ReadRequest};
use crate::mech::Cursor;

impl HddDevice {
    /// Serves a read dispatched at `t0`; returns its finish instant.
    pub(super) fn read(&mut self, t0: f64, lbn: u64, n: u64) -> f64 {
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
}
