//! Placing flash operations on channel and die timelines (FlashSim's bus-channel interleaving).
//!
//! - A page read holds the channel for the command, then the die for tR while the channel is
//!   free for others, then the channel again for the command and the data out. The die's page
//!   register holds the data until it is out, so the die stays busy until then.
//! - A page program holds the channel for command + data in, then the die for tPROG with the
//!   channel free.
//! - An erase holds the channel for the command and the die for tBERS.
//! - A copy-back (plane-internal move, FlashSim's merge in a plane register) holds the channel
//!   for two commands and the die for tR + tPROG; no data crosses the channel.
//!
//! The channel is a timeline with gaps: a short command may be placed in an idle gap between
//! earlier reservations, as in FlashSim's Fig. 4. A die runs one operation at a time, in the
//! order operations are scheduled. Times are reserved when an operation is scheduled, so the
//! finish of every operation is known at once and nothing is simulated twice.
//!
//! Planes of a die share the die's timeline (no multi-plane commands yet).

use crate::divisor::Divisor;
use crate::timeline::Timeline;
use crate::{Geometry, Ppa, Timing};
use storsim_core::{SimDuration, SimTime};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlashOpKind {
    Read,
    Program,
    Erase,
    CopyBack,
}

/// Busy fractions over a span of time.
#[derive(Clone, Debug, PartialEq)]
pub struct Utilisation {
    pub channel: Vec<f64>,
    pub die: Vec<f64>,
}

pub struct Scheduler {
    geometry: Geometry,
    timing: Timing,
    /// Where a page is, from its address: die (pages per die), channel (dies per channel),
    /// page in its block and its level (bits per cell), by multiplication rather than hardware
    /// division.
    pages_per_die: Divisor,
    dies_per_channel: Divisor,
    pages_per_block: Divisor,
    levels: Divisor,
    /// tR and tPROG in ns by page level, as in [`Timing::read_of`] and [`Timing::program_of`].
    read_ns: [u64; 3],
    program_ns: [u64; 3],
    /// Per channel, its dies' reservations; a die is its channel's stream number
    /// `die mod dies per channel`.
    channels: Vec<Timeline>,
    /// The driver's present: channel reservations that ended by then can be forgotten.
    horizon: u64,
    die_free_at: Vec<u64>,
    channel_busy_ns: Vec<u64>,
    die_busy_ns: Vec<u64>,
    transfer: SimDuration,
}

impl Scheduler {
    pub fn new(geometry: Geometry, timing: Timing) -> Self {
        let transfer = timing.transfer(geometry.page_bytes + geometry.oob_bytes);
        let dies_per_channel = geometry.chips_per_channel * geometry.dies_per_chip;
        Scheduler {
            pages_per_die: Divisor::new(
                geometry.pages_per_block * geometry.blocks_per_plane * geometry.planes_per_die,
            ),
            dies_per_channel: Divisor::new(dies_per_channel),
            pages_per_block: Divisor::new(geometry.pages_per_block),
            levels: Divisor::new(timing.cell.bits()),
            read_ns: timing.read.map(|t| t.as_ns()),
            program_ns: timing.program.map(|t| t.as_ns()),
            channels: vec![Timeline::new(dies_per_channel as usize); geometry.channels as usize],
            horizon: 0,
            die_free_at: vec![0; geometry.dies() as usize],
            channel_busy_ns: vec![0; geometry.channels as usize],
            die_busy_ns: vec![0; geometry.dies() as usize],
            geometry,
            timing,
            transfer,
        }
    }

    pub fn timing(&self) -> &Timing {
        &self.timing
    }

    /// Time one page takes on the channel (page + OOB).
    pub fn page_transfer(&self) -> SimDuration {
        self.transfer
    }

    /// Places an operation on `ppa` (any page of the block, for an erase) no earlier than
    /// `earliest`, and returns when it finishes.
    pub fn schedule(&mut self, kind: FlashOpKind, ppa: Ppa, earliest: SimTime) -> SimTime {
        self.schedule_busy(kind, ppa, earliest).0
    }

    /// As [`Scheduler::schedule`], and also how long the operation holds its die (from its
    /// command to its last byte out), which callers add up per cause (GC time, ...).
    pub fn schedule_busy(
        &mut self,
        kind: FlashOpKind,
        ppa: Ppa,
        earliest: SimTime,
    ) -> (SimTime, SimDuration) {
        if kind == FlashOpKind::CopyBack {
            // Without the source page, the read is timed at the destination's page level.
            return self.schedule_copyback(ppa, ppa, earliest);
        }
        let (die, ch, page) = self.locate(ppa);
        let level = self.level(page);
        let (read_ns, program_ns) = (self.read_ns[level], self.program_ns[level]);
        let cmd = self.timing.command.as_ns();
        let xfer = self.transfer.as_ns();
        let t0 = earliest.as_ns().max(self.die_free_at[die]);
        let horizon = self.horizon;
        let lane = self.lane(die);
        let channel = &mut self.channels[ch];
        let (die_start, finish, channel_ns) = match kind {
            FlashOpKind::Read => {
                let c = channel.reserve(lane, t0, cmd, horizon);
                let ready = c + cmd + read_ns;
                let out = channel.reserve(lane, ready, cmd + xfer, horizon);
                (c, out + cmd + xfer, 2 * cmd + xfer)
            }
            FlashOpKind::Program => {
                let c = channel.reserve(lane, t0, cmd + xfer, horizon);
                (c, c + cmd + xfer + program_ns, cmd + xfer)
            }
            FlashOpKind::Erase => {
                let c = channel.reserve(lane, t0, cmd, horizon);
                (c, c + cmd + self.timing.erase.as_ns(), cmd)
            }
            FlashOpKind::CopyBack => unreachable!("handled above"),
        };
        self.die_free_at[die] = finish;
        self.die_busy_ns[die] += finish - die_start;
        self.channel_busy_ns[ch] += channel_ns;
        (SimTime(finish), SimDuration(finish - die_start))
    }

    /// Whether a copy from `from` to `to` can stay inside the chip as a copy-back: both pages
    /// in one plane, whose page register carries the data (FlashSim's Algorithm 2).
    pub fn can_copy_back(&self, from: Ppa, to: Ppa) -> bool {
        let g = &self.geometry;
        g.plane_of(g.block_of(from)) == g.plane_of(g.block_of(to))
    }

    /// Places a copy-back of `from` into `to` (same plane: see [`Scheduler::can_copy_back`]):
    /// two commands on the channel, and the die busy for the source's tR and the
    /// destination's tPROG, with no data on the channel. Returns its finish and die time.
    pub fn schedule_copyback(
        &mut self,
        from: Ppa,
        to: Ppa,
        earliest: SimTime,
    ) -> (SimTime, SimDuration) {
        assert!(
            self.can_copy_back(from, to),
            "copy-back from {from:?} to {to:?} crosses planes"
        );
        let (die, ch, to_page) = self.locate(to);
        let from_page = self.pages_per_block.remainder(from.0) as usize;
        let cmd = self.timing.command.as_ns();
        let array = self.read_ns[self.level(from_page)] + self.program_ns[self.level(to_page)];
        let t0 = earliest.as_ns().max(self.die_free_at[die]);
        let horizon = self.horizon;
        let lane = self.lane(die);
        let c = self.channels[ch].reserve(lane, t0, 2 * cmd, horizon);
        let finish = c + 2 * cmd + array;
        self.die_free_at[die] = finish;
        self.die_busy_ns[die] += finish - c;
        self.channel_busy_ns[ch] += 2 * cmd;
        (SimTime(finish), SimDuration(finish - c))
    }

    /// The die, the channel and the page in its block of `ppa`, as indices.
    #[inline]
    fn locate(&self, ppa: Ppa) -> (usize, usize, usize) {
        let die = self.pages_per_die.quotient(ppa.0);
        let ch = self.dies_per_channel.quotient(die);
        let page = self.pages_per_block.remainder(ppa.0);
        (die as usize, ch as usize, page as usize)
    }

    /// A die's stream number on its channel's timeline.
    #[inline]
    fn lane(&self, die: usize) -> usize {
        self.dies_per_channel.remainder(die as u32) as usize
    }

    /// The level of page `page` of a block, as [`Timing`] defines it.
    #[inline]
    fn level(&self, page: usize) -> usize {
        self.levels.remainder(page as u32) as usize
    }

    /// Tells the scheduler that simulated time has reached `now`, as the driver does on every
    /// submission: channel reservations that ended by then are forgotten, each channel's when
    /// it is next used, so the timelines stay short at no cost to channels left alone.
    pub fn prune(&mut self, now: SimTime) {
        self.horizon = self.horizon.max(now.as_ns());
    }

    /// The time every die and channel is idle from.
    pub fn all_idle_at(&self) -> SimTime {
        let dies = self.die_free_at.iter().copied().max().unwrap_or(0);
        let chans = self.channels.iter().filter_map(Timeline::last_end).max();
        SimTime(dies.max(chans.unwrap_or(0)))
    }

    /// Busy fraction of each channel and die over `elapsed`.
    pub fn utilisation(&self, elapsed: SimDuration) -> Utilisation {
        let frac = |busy: &u64| {
            if elapsed.as_ns() == 0 {
                0.0
            } else {
                (*busy as f64 / elapsed.as_ns() as f64).min(1.0)
            }
        };
        Utilisation {
            channel: self.channel_busy_ns.iter().map(frac).collect(),
            die: self.die_busy_ns.iter().map(frac).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BlockId, CellType};

    fn setup(channels: u32, dies_per_channel: u32) -> (Geometry, Scheduler) {
        let g = Geometry {
            channels,
            chips_per_channel: dies_per_channel,
            dies_per_chip: 1,
            planes_per_die: 1,
            blocks_per_plane: 4,
            pages_per_block: 4,
            page_bytes: 1000,
            oob_bytes: 0,
        };
        // Channel moves 1 byte per ns: a page transfer is 1000 ns.
        let t = Timing::uniform(
            CellType::Slc,
            SimDuration(5_000),
            SimDuration(20_000),
            SimDuration(100_000),
            SimDuration(100),
            1000,
            1,
        );
        (g, Scheduler::new(g, t))
    }

    fn page_on_die(g: &Geometry, die: u32) -> Ppa {
        g.ppa(BlockId(die * g.blocks_per_plane), 0)
    }

    #[test]
    fn single_read_is_cmd_tr_cmd_transfer() {
        let (g, mut s) = setup(1, 1);
        let f = s.schedule(FlashOpKind::Read, page_on_die(&g, 0), SimTime(0));
        assert_eq!(f.as_ns(), 100 + 5_000 + 100 + 1_000);
    }

    #[test]
    fn program_and_erase_by_hand() {
        let (g, mut s) = setup(1, 1);
        let f = s.schedule(FlashOpKind::Program, page_on_die(&g, 0), SimTime(0));
        assert_eq!(f.as_ns(), 100 + 1_000 + 20_000);
        // The die is busy until then; the erase waits for it.
        let e = s.schedule(FlashOpKind::Erase, page_on_die(&g, 0), SimTime(0));
        assert_eq!(e.as_ns(), f.as_ns() + 100 + 100_000);
    }

    #[test]
    fn reads_on_two_dies_of_one_channel_interleave() {
        let (g, mut s) = setup(1, 2);
        let a = s.schedule(FlashOpKind::Read, page_on_die(&g, 0), SimTime(0));
        let b = s.schedule(FlashOpKind::Read, page_on_die(&g, 1), SimTime(0));
        // Die 1's command goes right after die 0's; both array reads overlap; die 1's data out
        // waits for die 0's on the shared channel.
        assert_eq!(a.as_ns(), 6_200);
        // Die 1: command [100, 200), tR until 5200, data out after die 0's [5100, 6200).
        assert_eq!(b.as_ns(), 6_200 + 1_100);
        assert!(
            b.as_ns() < 2 * a.as_ns(),
            "interleaving must beat serial execution"
        );
    }

    #[test]
    fn a_command_fits_in_a_channel_gap() {
        let (g, mut s) = setup(1, 3);
        // Die 0 read: channel busy [0,100) and [5100,6200).
        s.schedule(FlashOpKind::Read, page_on_die(&g, 0), SimTime(0));
        // Die 1 erase at t=1000 needs only a 100 ns command: it fits in the gap at 1000.
        let e = s.schedule(FlashOpKind::Erase, page_on_die(&g, 1), SimTime(1_000));
        assert_eq!(e.as_ns(), 1_000 + 100 + 100_000);
        // Die 2 program needs 1100 ns of channel at 4500: the gap [4500,5100) is too short, so
        // it goes after die 0's data out.
        let p = s.schedule(FlashOpKind::Program, page_on_die(&g, 2), SimTime(4_500));
        assert_eq!(p.as_ns(), 6_200 + 1_100 + 20_000);
    }

    #[test]
    fn copy_back_keeps_data_off_the_channel() {
        let (g, mut s) = setup(1, 2);
        let from = page_on_die(&g, 0);
        let to = g.ppa(BlockId(1), 2);
        assert!(s.can_copy_back(from, to));
        assert!(!s.can_copy_back(from, page_on_die(&g, 1)));
        let (f, busy) = s.schedule_copyback(from, to, SimTime(0));
        // Two commands, tR and tPROG; no transfer.
        assert_eq!(f.as_ns(), 2 * 100 + 5_000 + 20_000);
        assert_eq!(busy.as_ns(), f.as_ns());
        // The channel was free during the array work: the other die's program goes at once.
        let p = s.schedule(FlashOpKind::Program, page_on_die(&g, 1), SimTime(200));
        assert_eq!(p.as_ns(), 200 + 100 + 1_000 + 20_000);
        // A read-then-program copy of the same page through the controller takes longer.
        let (g2, mut s2) = setup(1, 1);
        let r = s2.schedule(FlashOpKind::Read, page_on_die(&g2, 0), SimTime(0));
        let w = s2.schedule(FlashOpKind::Program, g2.ppa(BlockId(1), 2), r);
        assert!(w > f);
    }

    #[test]
    fn channels_are_independent() {
        let (g, mut s) = setup(2, 1);
        let a = s.schedule(FlashOpKind::Program, page_on_die(&g, 0), SimTime(0));
        let b = s.schedule(FlashOpKind::Program, page_on_die(&g, 1), SimTime(0));
        assert_eq!(a, b);
    }

    #[test]
    fn page_levels_take_their_own_times() {
        let (g, _) = setup(1, 1);
        // TLC: pages 0, 1, 2 of a block are levels 0, 1, 2; page 4 is level 1 again.
        let t = Timing {
            cell: CellType::Tlc,
            read: [SimDuration(1_000), SimDuration(2_000), SimDuration(3_000)],
            program: [
                SimDuration(10_000),
                SimDuration(20_000),
                SimDuration(30_000),
            ],
            ..Timing::uniform(
                CellType::Tlc,
                SimDuration(0),
                SimDuration(0),
                SimDuration(100_000),
                SimDuration(100),
                1000,
                1,
            )
        };
        for page in 0..g.pages_per_block {
            let mut s = Scheduler::new(g, t.clone());
            let ppa = g.ppa(BlockId(1), page);
            let r = s.schedule(FlashOpKind::Read, ppa, SimTime(0));
            assert_eq!(r.as_ns(), 100 + t.read_of(page).as_ns() + 100 + 1_000);
            let w = s.schedule(FlashOpKind::Program, ppa, r);
            assert_eq!(
                w.as_ns(),
                r.as_ns() + 100 + 1_000 + t.program_of(page).as_ns()
            );
        }
    }

    #[test]
    fn utilisation_counts_busy_time() {
        let (g, mut s) = setup(1, 1);
        let f = s.schedule(FlashOpKind::Program, page_on_die(&g, 0), SimTime(0));
        let u = s.utilisation(SimDuration(f.as_ns() * 2));
        assert!((u.die[0] - 0.5).abs() < 1e-12);
        assert!((u.channel[0] - 1_100.0 / (2.0 * f.as_ns() as f64)).abs() < 1e-12);
    }

    #[test]
    fn timelines_stay_bounded() {
        let (g, mut s) = setup(1, 1);
        for i in 0..10_000u64 {
            s.schedule(FlashOpKind::Read, page_on_die(&g, 0), SimTime(i));
        }
        // Reads of one die: each leaves a command and, tR later, its data out, apart.
        assert!(s.channels[0].len() <= 20_000);
        // Once time has passed them, reservations on the channel forget them all (now and
        // then: pruning is only about memory).
        let last_end = s.channels[0].last_end().unwrap();
        let mut now = SimTime(last_end);
        for _ in 0..1000 {
            s.prune(now);
            now = s.schedule(FlashOpKind::Erase, page_on_die(&g, 0), now);
        }
        assert!(s.channels[0].len() <= 256, "{}", s.channels[0].len());
    }
}
