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
//! Planes of a die share the die's timeline: one operation at a time, unless several are
//! issued as one multi-plane command ([`Scheduler::schedule_multi_plane`]). Such a command
//! carries each plane's command and data on the channel back to back and runs the array work
//! of all its planes at once, so `n` pages cost one tR or tPROG (the slowest of their page
//! levels) or one tBERS instead of `n`. Whether pages may join is [`MultiPlane`]'s rule:
//! NAND parts commonly require the same page address in every plane.

use crate::die_queue::{DiePolicyCounts, DieQueue, DieScheduling, Ticket};
use crate::divisor::Divisor;
use crate::timeline::Timeline;
use crate::timing::{CellMode, LEVELS_MAX};
use crate::{Geometry, Ppa, Timing};
use storsim_core::{SimDuration, SimTime};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlashOpKind {
    Read,
    Program,
    Erase,
    CopyBack,
}

/// Which operations of one die may run as a multi-plane command: same kind (read, program
/// or erase), one per plane, at most one per plane of the die.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MultiPlane {
    /// Every operation runs alone.
    #[default]
    Off,
    /// Reads and programs must address the same page within their blocks in every plane
    /// (the common NAND restriction); erases may name any block of each plane.
    SamePage,
    /// Any page of each plane (NAND with independent plane addressing).
    AnyPage,
}

/// A page and the mode its block runs in, which decides its tR and tPROG: what each scheduling
/// call takes. A bare [`Ppa`] is a page of a block in its native mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageRef {
    pub ppa: Ppa,
    pub mode: CellMode,
}

impl From<Ppa> for PageRef {
    fn from(ppa: Ppa) -> PageRef {
        PageRef {
            ppa,
            mode: CellMode::Native,
        }
    }
}

/// The index of SLC mode's times in the scheduler's tables, after the native levels.
const SLC_LEVEL: usize = LEVELS_MAX;

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
    /// tR and tPROG in ns by page level, as in [`Timing::read_of`] and [`Timing::program_of`],
    /// then SLC mode's ([`SLC_LEVEL`]).
    read_ns: [u64; LEVELS_MAX + 1],
    program_ns: [u64; LEVELS_MAX + 1],
    /// Per channel, its dies' reservations; a die is its channel's stream number
    /// `die mod dies per channel`.
    channels: Vec<Timeline>,
    /// The driver's present: channel reservations that ended by then can be forgotten.
    horizon: u64,
    die_free_at: Vec<u64>,
    channel_busy_ns: Vec<u64>,
    die_busy_ns: Vec<u64>,
    transfer: SimDuration,
    multi_plane: MultiPlane,
    /// How dies order their operations; with anything but FIFO, `queues` holds each die's
    /// placed operations and each channel has a second stream per die for priority reads.
    policy: DieScheduling,
    queues: Vec<DieQueue>,
    /// The ticket of the operation placed last (FIFO: always fixed).
    last_ticket: Ticket,
    policy_counts: DiePolicyCounts,
}

/// A time table in ns: the native levels', then SLC mode's.
fn level_table(native: &[SimDuration; LEVELS_MAX], slc: SimDuration) -> [u64; LEVELS_MAX + 1] {
    let mut table = [slc.as_ns(); LEVELS_MAX + 1];
    for (t, n) in table.iter_mut().zip(native) {
        *t = n.as_ns();
    }
    table
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
            read_ns: level_table(&timing.read, timing.slc_read_time()),
            program_ns: level_table(&timing.program, timing.slc_program_time()),
            channels: vec![Timeline::new(dies_per_channel as usize); geometry.channels as usize],
            horizon: 0,
            die_free_at: vec![0; geometry.dies() as usize],
            channel_busy_ns: vec![0; geometry.channels as usize],
            die_busy_ns: vec![0; geometry.dies() as usize],
            geometry,
            timing,
            transfer,
            multi_plane: MultiPlane::Off,
            policy: DieScheduling::Fifo,
            queues: Vec::new(),
            last_ticket: Ticket::FIXED,
            policy_counts: DiePolicyCounts::default(),
        }
    }

    /// The same scheduler, its dies ordering operations by `policy`. Under any policy but
    /// FIFO a channel's timeline has a second stream per die, for priority reads, so that
    /// each stream's reservations stay in time order.
    pub fn with_die_scheduling(mut self, policy: DieScheduling) -> Self {
        self.policy = policy;
        if policy != DieScheduling::Fifo {
            let dies_per_channel = self.geometry.chips_per_channel * self.geometry.dies_per_chip;
            self.channels =
                vec![Timeline::new(2 * dies_per_channel as usize); self.geometry.channels as usize];
            self.queues = vec![DieQueue::default(); self.geometry.dies() as usize];
        }
        self
    }

    /// Whether dies reorder operations (any policy but FIFO): finishes handed out may move
    /// later, and holders resolve their tickets ([`Scheduler::resolve`]).
    #[inline]
    pub fn reorders(&self) -> bool {
        !self.queues.is_empty()
    }

    /// The ticket of the operation placed last.
    #[inline]
    pub fn last_ticket(&self) -> Ticket {
        self.last_ticket
    }

    /// When an operation placed to finish at `placed`, with ticket `ticket`, actually
    /// finishes: later than placed when priority reads went before it since. Exact for every
    /// finish at or after the present; a finish before the present comes out before it too.
    pub fn resolve(&self, placed: SimTime, ticket: Ticket) -> SimTime {
        match ticket.die() {
            Some(die) => {
                let actual = self.queues[die].actual_finish(ticket.virtual_ns());
                placed.max(SimTime(actual))
            }
            None => placed,
        }
    }

    /// Operations the dies hold for the policy (none under FIFO): what a priority read may
    /// still pass or suspend, and what ended since it last looked.
    pub fn queued_ops(&self) -> usize {
        self.queues.iter().map(DieQueue::len).sum()
    }

    /// What the die scheduling policy did so far.
    pub fn die_policy_counts(&self) -> DiePolicyCounts {
        self.policy_counts
    }

    /// Places a priority read of `ppa` arriving at `earliest`: before the die's queued
    /// operations that have not started, after earlier priority reads, and after the operation
    /// in flight unless the policy suspends it. Under FIFO, an ordinary read. Returns its
    /// finish and die time; its finish never moves ([`Ticket::FIXED`]).
    pub fn schedule_priority_read(
        &mut self,
        page: impl Into<PageRef>,
        earliest: SimTime,
    ) -> (SimTime, SimDuration) {
        let page = page.into();
        let suspension = match self.policy {
            DieScheduling::Fifo => return self.schedule_busy(FlashOpKind::Read, page, earliest),
            DieScheduling::ReadPriority => None,
            DieScheduling::Suspend(s) => Some(s),
        };
        let (die, ch, in_block) = self.locate(page.ppa);
        let read_ns = self.read_ns[self.level(in_block, page.mode)];
        let (cmd, xfer) = (self.timing.command.as_ns(), self.transfer.as_ns());
        let slot = self.queues[die].slot(earliest.as_ns(), self.horizon, suspension.as_ref());
        let dies_per_channel =
            (self.geometry.chips_per_channel * self.geometry.dies_per_chip) as usize;
        let (horizon, lane) = (self.horizon, self.lane(die) + dies_per_channel);
        let channel = &mut self.channels[ch];
        let first = dies_per_channel;
        let c = channel.reserve_among(lane, first, slot.earliest, cmd, horizon);
        let out = channel.reserve_among(lane, first, c + cmd + read_ns, cmd + xfer, horizon);
        let finish = out + cmd + xfer;
        let resume = suspension.map_or(0, |s| s.resume_overhead.as_ns());
        let by = self.queues[die].make_room(&slot, c, finish, resume, &mut self.policy_counts);
        self.die_free_at[die] = (self.die_free_at[die] + by).max(finish);
        self.die_busy_ns[die] += finish - c;
        self.channel_busy_ns[ch] += 2 * cmd + xfer;
        self.last_ticket = Ticket::FIXED;
        (SimTime(finish), SimDuration(finish - c))
    }

    /// The same scheduler, allowing multi-plane commands by `rule`.
    pub fn with_multi_plane(mut self, rule: MultiPlane) -> Self {
        self.multi_plane = rule;
        self
    }

    /// Whether multi-plane commands are possible at all: a rule other than off, and more than
    /// one plane per die.
    pub fn multi_plane_possible(&self) -> bool {
        self.multi_plane != MultiPlane::Off && self.geometry.planes_per_die > 1
    }

    /// The die (numbered across the device) that `ppa` is on.
    #[inline]
    pub fn die_of(&self, ppa: Ppa) -> u32 {
        self.pages_per_die.quotient(ppa.0)
    }

    /// Whether `a` and `b`, operations of kind `kind`, may be parts of one multi-plane
    /// command: same die, different planes, blocks in the same mode, and the page rule of
    /// [`MultiPlane`].
    pub fn multi_plane_compatible(
        &self,
        kind: FlashOpKind,
        a: impl Into<PageRef>,
        b: impl Into<PageRef>,
    ) -> bool {
        let (a, b) = (a.into(), b.into());
        if a.mode != b.mode {
            return false;
        }
        let (a, b) = (a.ppa, b.ppa);
        let g = &self.geometry;
        let (block_a, block_b) = (g.block_of(a), g.block_of(b));
        let pages_agree = match (self.multi_plane, kind) {
            (MultiPlane::Off, _) | (_, FlashOpKind::CopyBack) => return false,
            (MultiPlane::SamePage, FlashOpKind::Read | FlashOpKind::Program) => {
                g.page_in_block(a) == g.page_in_block(b)
            }
            (MultiPlane::SamePage, FlashOpKind::Erase) | (MultiPlane::AnyPage, _) => true,
        };
        pages_agree
            && g.die_of(block_a) == g.die_of(block_b)
            && g.plane_of(block_a) != g.plane_of(block_b)
    }

    pub fn geometry(&self) -> &Geometry {
        &self.geometry
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
    pub fn schedule(
        &mut self,
        kind: FlashOpKind,
        page: impl Into<PageRef>,
        earliest: SimTime,
    ) -> SimTime {
        self.schedule_busy(kind, page, earliest).0
    }

    /// As [`Scheduler::schedule`], and also how long the operation holds its die (from its
    /// command to its last byte out), which callers add up per cause (GC time, ...).
    pub fn schedule_busy(
        &mut self,
        kind: FlashOpKind,
        page: impl Into<PageRef>,
        earliest: SimTime,
    ) -> (SimTime, SimDuration) {
        let page = page.into();
        if kind == FlashOpKind::CopyBack {
            // Without the source page, the read is timed at the destination's page level.
            return self.schedule_copyback(page, page, earliest);
        }
        let (die, ch, in_block) = self.locate(page.ppa);
        let level = self.level(in_block, page.mode);
        let (read_ns, program_ns) = (self.read_ns[level], self.program_ns[level]);
        self.place(kind, die, ch, 1, (read_ns, program_ns), earliest)
    }

    /// Places a command of kind `kind` over `planes` pages of die `die` on channel `ch`, with
    /// array times `(tR, tPROG)`: every plane's command (and data) on the channel back to back
    /// and the array work once. One plane is an ordinary operation.
    #[inline]
    fn place(
        &mut self,
        kind: FlashOpKind,
        die: usize,
        ch: usize,
        planes: u64,
        (read_ns, program_ns): (u64, u64),
        earliest: SimTime,
    ) -> (SimTime, SimDuration) {
        let n = planes;
        let cmd = self.timing.command.as_ns();
        let xfer = self.transfer.as_ns();
        let t0 = earliest.as_ns().max(self.die_free_at[die]);
        let horizon = self.horizon;
        let lane = self.lane(die);
        let channel = &mut self.channels[ch];
        let (die_start, finish, channel_ns) = match kind {
            FlashOpKind::Read => {
                let c = channel.reserve(lane, t0, n * cmd, horizon);
                let ready = c + n * cmd + read_ns;
                let out = channel.reserve(lane, ready, n * (cmd + xfer), horizon);
                (c, out + n * (cmd + xfer), n * (2 * cmd + xfer))
            }
            FlashOpKind::Program => {
                let c = channel.reserve(lane, t0, n * (cmd + xfer), horizon);
                (c, c + n * (cmd + xfer) + program_ns, n * (cmd + xfer))
            }
            FlashOpKind::Erase => {
                let c = channel.reserve(lane, t0, n * cmd, horizon);
                (c, c + n * cmd + self.timing.erase.as_ns(), n * cmd)
            }
            FlashOpKind::CopyBack => unreachable!("copy-backs are placed on their own"),
        };
        self.occupy(kind, die, ch, die_start, finish, channel_ns)
    }

    /// Records an operation of die `die` on channel `ch` that holds the die from `die_start`
    /// to `finish` and the channel for `channel_ns`; returns its finish and die time.
    #[inline]
    fn occupy(
        &mut self,
        kind: FlashOpKind,
        die: usize,
        ch: usize,
        die_start: u64,
        finish: u64,
        channel_ns: u64,
    ) -> (SimTime, SimDuration) {
        if !self.queues.is_empty() {
            let horizon = self.horizon;
            self.last_ticket = self.queues[die].push(die, kind, (die_start, finish), horizon);
        }
        self.die_free_at[die] = finish;
        self.die_busy_ns[die] += finish - die_start;
        self.channel_busy_ns[ch] += channel_ns;
        (SimTime(finish), SimDuration(finish - die_start))
    }

    /// Places a read of `read` no earlier than `earliest` and then a program of `program` that
    /// waits for it (a copy through the controller, as garbage collection makes), exactly as
    /// [`Scheduler::schedule_busy`] for each in turn would; returns both placements.
    ///
    /// On one die the program's command and data would go on the channel right where the
    /// read's data out ends whenever the channel is free then, so the two transfers are first
    /// tried as one reservation: one search of the channel instead of two, the common case
    /// when garbage collection copies inside a die.
    pub fn schedule_read_then_program(
        &mut self,
        read: impl Into<PageRef>,
        program: impl Into<PageRef>,
        earliest: SimTime,
    ) -> [(SimTime, SimDuration); 2] {
        let (read, program) = (read.into(), program.into());
        let (die, ch, read_page) = self.locate(read.ppa);
        let (program_die, _, program_page) = self.locate(program.ppa);
        let cmd = self.timing.command.as_ns();
        let out = cmd + self.transfer.as_ns();
        if program_die != die || out == 0 {
            let r = self.schedule_busy(FlashOpKind::Read, read, earliest);
            return [r, self.schedule_busy(FlashOpKind::Program, program, r.0)];
        }
        let (read_ns, program_ns) = (
            self.read_ns[self.level(read_page, read.mode)],
            self.program_ns[self.level(program_page, program.mode)],
        );
        let t0 = earliest.as_ns().max(self.die_free_at[die]);
        let (horizon, lane) = (self.horizon, self.lane(die));
        let c = self.channels[ch].reserve(lane, t0, cmd, horizon);
        let ready = c + cmd + read_ns;
        if self.channels[ch].reserve_exactly(lane, ready, 2 * out, horizon) {
            let r = self.occupy(FlashOpKind::Read, die, ch, c, ready + out, cmd + out);
            let p = ready + out;
            [
                r,
                self.occupy(FlashOpKind::Program, die, ch, p, p + out + program_ns, out),
            ]
        } else {
            let at = self.channels[ch].reserve(lane, ready, out, horizon);
            let r = self.occupy(FlashOpKind::Read, die, ch, c, at + out, cmd + out);
            let p = self.place(FlashOpKind::Program, die, ch, 1, (read_ns, program_ns), r.0);
            [r, p]
        }
    }

    /// Whether a copy from `from` to `to` can stay inside the chip as a copy-back: both pages
    /// in one plane, whose page register carries the data (FlashSim's Algorithm 2).
    pub fn can_copy_back(&self, from: impl Into<PageRef>, to: impl Into<PageRef>) -> bool {
        let (from, to) = (from.into().ppa, to.into().ppa);
        let g = &self.geometry;
        g.plane_of(g.block_of(from)) == g.plane_of(g.block_of(to))
    }

    /// Places a copy-back of `from` into `to` (same plane: see [`Scheduler::can_copy_back`]):
    /// two commands on the channel, and the die busy for the source's tR and the
    /// destination's tPROG, with no data on the channel. Returns its finish and die time.
    pub fn schedule_copyback(
        &mut self,
        from: impl Into<PageRef>,
        to: impl Into<PageRef>,
        earliest: SimTime,
    ) -> (SimTime, SimDuration) {
        let (from, to) = (from.into(), to.into());
        assert!(
            self.can_copy_back(from, to),
            "copy-back from {from:?} to {to:?} crosses planes"
        );
        let (die, ch, to_page) = self.locate(to.ppa);
        let from_page = self.pages_per_block.remainder(from.ppa.0) as usize;
        let cmd = self.timing.command.as_ns();
        let array = self.read_ns[self.level(from_page, from.mode)]
            + self.program_ns[self.level(to_page, to.mode)];
        let t0 = earliest.as_ns().max(self.die_free_at[die]);
        let horizon = self.horizon;
        let lane = self.lane(die);
        let c = self.channels[ch].reserve(lane, t0, 2 * cmd, horizon);
        self.occupy(
            FlashOpKind::CopyBack,
            die,
            ch,
            c,
            c + 2 * cmd + array,
            2 * cmd,
        )
    }

    /// Places one multi-plane command of kind `kind` over `ppas` (two or more pages, pairwise
    /// [`Scheduler::multi_plane_compatible`]) no earlier than `earliest`. The channel carries
    /// every plane's command (and data) back to back; the array work is the slowest plane's.
    /// Returns when the command finishes (every page at once) and how long it holds the die.
    pub fn schedule_multi_plane<P: Copy + Into<PageRef> + std::fmt::Debug>(
        &mut self,
        kind: FlashOpKind,
        ppas: &[P],
        earliest: SimTime,
    ) -> (SimTime, SimDuration) {
        assert!(
            ppas.len() >= 2 && ppas.len() <= self.geometry.planes_per_die as usize,
            "a multi-plane command spans 2..=planes per die pages, got {}",
            ppas.len()
        );
        for (i, &a) in ppas.iter().enumerate() {
            for &b in &ppas[i + 1..] {
                assert!(
                    self.multi_plane_compatible(kind, a, b),
                    "{a:?} and {b:?} cannot share a multi-plane {kind:?} under {:?}",
                    self.multi_plane
                );
            }
        }
        let n = ppas.len() as u64;
        let (die, ch, _) = self.locate(ppas[0].into().ppa);
        let slowest = |times: &[u64; LEVELS_MAX + 1]| {
            ppas.iter()
                .map(|&p| {
                    let p = p.into();
                    times[self.level(self.locate(p.ppa).2, p.mode)]
                })
                .max()
                .expect("at least two pages")
        };
        let array = (slowest(&self.read_ns), slowest(&self.program_ns));
        self.place(kind, die, ch, n, array, earliest)
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

    /// The index in the time tables of page `page` of a block in mode `mode`: its level, as
    /// [`Timing`] defines it, or SLC mode's.
    #[inline]
    fn level(&self, page: usize, mode: CellMode) -> usize {
        match mode {
            CellMode::Native => self.levels.remainder(page as u32) as usize,
            CellMode::Slc => SLC_LEVEL,
        }
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
            // A TLC cell has no fourth level: its time must never be taken.
            read: [
                SimDuration(1_000),
                SimDuration(2_000),
                SimDuration(3_000),
                SimDuration(999_000),
            ],
            program: [
                SimDuration(10_000),
                SimDuration(20_000),
                SimDuration(30_000),
                SimDuration(999_000),
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
    fn a_read_and_its_program_placed_together_are_placed_as_in_turn() {
        // Two channels of three TLC dies, with array times short enough next to transfers
        // that the channel is often taken where a program would go.
        let g = Geometry {
            channels: 2,
            chips_per_channel: 3,
            dies_per_chip: 1,
            planes_per_die: 1,
            blocks_per_plane: 4,
            pages_per_block: 6,
            page_bytes: 1000,
            oob_bytes: 0,
        };
        let t = Timing {
            read: [
                SimDuration(1_500),
                SimDuration(2_500),
                SimDuration(4_000),
                SimDuration(999_000),
            ],
            program: [
                SimDuration(3_000),
                SimDuration(6_000),
                SimDuration(9_000),
                SimDuration(999_000),
            ],
            ..Timing::uniform(
                CellType::Tlc,
                SimDuration(0),
                SimDuration(0),
                SimDuration(20_000),
                SimDuration(100),
                1000,
                1,
            )
        };
        let (mut together, mut in_turn) = (Scheduler::new(g, t.clone()), Scheduler::new(g, t));
        let mut rng = storsim_core::Prng::new(7);
        let page = |rng: &mut storsim_core::Prng, die: u32| {
            let block = die * g.blocks_per_plane + rng.below(g.blocks_per_plane as u64) as u32;
            g.ppa(BlockId(block), rng.below(g.pages_per_block as u64) as u32)
        };
        let (mut now, mut waited, mut went_on) = (0u64, 0, 0);
        for step in 0..20_000 {
            now += rng.below(3_000);
            together.prune(SimTime(now));
            in_turn.prune(SimTime(now));
            let die = rng.below(u64::from(g.dies())) as u32;
            let earliest = SimTime(now + rng.below(2_000));
            let read = page(&mut rng, die);
            if rng.below(3) == 0 {
                // Another kind of operation in between.
                let kind = [FlashOpKind::Read, FlashOpKind::Program, FlashOpKind::Erase]
                    [rng.below(3) as usize];
                let a = together.schedule_busy(kind, read, earliest);
                assert_eq!(
                    a,
                    in_turn.schedule_busy(kind, read, earliest),
                    "step {step}"
                );
                continue;
            }
            // Mostly a copy inside the die, as garbage collection makes, sometimes to another.
            let to_die = if rng.below(5) == 0 {
                rng.below(u64::from(g.dies())) as u32
            } else {
                die
            };
            let program = page(&mut rng, to_die);
            let [r, p] = together.schedule_read_then_program(read, program, earliest);
            let r2 = in_turn.schedule_busy(FlashOpKind::Read, read, earliest);
            let p2 = in_turn.schedule_busy(FlashOpKind::Program, program, r2.0);
            assert_eq!((r, p), (r2, p2), "step {step}");
            if to_die == die {
                // The program's command went right after the read's data out, or waited.
                if p.0.as_ns() - p.1.as_ns() == r.0.as_ns() {
                    went_on += 1;
                } else {
                    waited += 1;
                }
            }
        }
        assert!(
            went_on > 1_000 && waited > 500,
            "{went_on} went on, {waited} waited"
        );
        let span = SimDuration(now);
        assert_eq!(together.utilisation(span), in_turn.utilisation(span));
        assert_eq!(together.all_idle_at(), in_turn.all_idle_at());
    }

    /// One channel, one die of two planes (blocks 0..4 in plane 0, 4..8 in plane 1), with the
    /// same times as [`setup`].
    fn two_planes(rule: MultiPlane) -> (Geometry, Scheduler) {
        let (one_plane, s) = setup(1, 1);
        let g = Geometry {
            planes_per_die: 2,
            ..one_plane
        };
        (
            g,
            Scheduler::new(g, s.timing.clone()).with_multi_plane(rule),
        )
    }

    #[test]
    fn multi_plane_program_pays_one_tprog() {
        let (g, mut s) = two_planes(MultiPlane::SamePage);
        let pages = [g.ppa(BlockId(0), 1), g.ppa(BlockId(5), 1)];
        let (f, busy) = s.schedule_multi_plane(FlashOpKind::Program, &pages, SimTime(0));
        // Both planes' command + data in back to back, then one tPROG.
        assert_eq!(f.as_ns(), 2 * (100 + 1_000) + 20_000);
        assert_eq!(busy, SimDuration(f.as_ns()));
        // Alone, the two programs take two tPROGs on the die.
        let (_, mut alone) = two_planes(MultiPlane::Off);
        alone.schedule(FlashOpKind::Program, pages[0], SimTime(0));
        let second = alone.schedule(FlashOpKind::Program, pages[1], SimTime(0));
        assert_eq!(second.as_ns(), 2 * (100 + 1_000 + 20_000));
        let u = s.utilisation(SimDuration(f.as_ns()));
        assert!((u.channel[0] - 2_200.0 / f.as_ns() as f64).abs() < 1e-12);
    }

    #[test]
    fn multi_plane_read_and_erase_by_hand() {
        let (g, mut s) = two_planes(MultiPlane::SamePage);
        let pages = [g.ppa(BlockId(1), 3), g.ppa(BlockId(4), 3)];
        let (r, _) = s.schedule_multi_plane(FlashOpKind::Read, &pages, SimTime(0));
        // Two commands, one tR, then each plane's command and data out.
        assert_eq!(r.as_ns(), 2 * 100 + 5_000 + 2 * (100 + 1_000));
        // Erases may name different pages (any block of each plane); the die waits for the read.
        let blocks = [g.ppa(BlockId(2), 0), g.ppa(BlockId(7), 3)];
        let (e, busy) = s.schedule_multi_plane(FlashOpKind::Erase, &blocks, SimTime(0));
        assert_eq!(e.as_ns(), r.as_ns() + 2 * 100 + 100_000);
        assert_eq!(busy.as_ns(), 2 * 100 + 100_000);
    }

    #[test]
    fn multi_plane_rules() {
        let (g, same) = two_planes(MultiPlane::SamePage);
        let (_, any) = two_planes(MultiPlane::AnyPage);
        let (_, off) = two_planes(MultiPlane::Off);
        let p = FlashOpKind::Program;
        let a = g.ppa(BlockId(0), 1);
        // Same page address in the other plane: both rules allow it; off never does.
        assert!(same.multi_plane_compatible(p, a, g.ppa(BlockId(6), 1)));
        assert!(any.multi_plane_compatible(p, a, g.ppa(BlockId(6), 1)));
        assert!(!off.multi_plane_compatible(p, a, g.ppa(BlockId(6), 1)));
        // Another page address: only independent plane addressing allows it.
        assert!(!same.multi_plane_compatible(p, a, g.ppa(BlockId(6), 2)));
        assert!(any.multi_plane_compatible(p, a, g.ppa(BlockId(6), 2)));
        assert!(same.multi_plane_compatible(FlashOpKind::Erase, a, g.ppa(BlockId(6), 2)));
        // The same plane, or copy-backs, never.
        assert!(!any.multi_plane_compatible(p, a, g.ppa(BlockId(3), 1)));
        assert!(!any.multi_plane_compatible(FlashOpKind::CopyBack, a, g.ppa(BlockId(6), 1)));
        // Another die, never: with two dies of two planes, blocks 0..8 are die 0's.
        let (one_plane, two_dies) = setup(1, 2);
        let g2 = Geometry {
            planes_per_die: 2,
            ..one_plane
        };
        let s2 = Scheduler::new(g2, two_dies.timing.clone()).with_multi_plane(MultiPlane::AnyPage);
        assert!(!s2.multi_plane_compatible(p, g2.ppa(BlockId(4), 0), g2.ppa(BlockId(8), 0)));
        assert!(s2.multi_plane_compatible(p, g2.ppa(BlockId(0), 0), g2.ppa(BlockId(4), 0)));
    }

    #[test]
    #[should_panic(expected = "cannot share a multi-plane")]
    fn multi_plane_rejects_one_plane_twice() {
        let (g, mut s) = two_planes(MultiPlane::AnyPage);
        let pages = [g.ppa(BlockId(0), 1), g.ppa(BlockId(1), 1)];
        s.schedule_multi_plane(FlashOpKind::Program, &pages, SimTime(0));
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
