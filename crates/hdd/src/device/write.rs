//! A write: worked out by `write_request` (the write-back buffer, the extra disconnect, the
//! bus), put on the media by `write_media`, kept for read hits by `keep_write_data`, and
//! completed by `write_back_done` or `write_through_done`.

use super::{extra_disconnect_write_gate, ns, Destage, HddDevice, WriteRequest};
use crate::mech::Cursor;
use crate::params::WriteBack;

impl HddDevice {
    /// Serves a write dispatched at `t0`; returns its finish instant.
    pub(super) fn write(&mut self, t0: f64, lbn: u64, n: u64) -> f64 {
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
    pub(super) fn write_request(&mut self, t0: f64, lbn: u64, n: u64) -> WriteRequest {
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
}
