//! One host request's flash operations, gathered from all its FTL calls and placed on the
//! timelines together, so that pages of one request on different planes of a die can share a
//! multi-plane command.
//!
//! Each call's [`Dep`]s are relative to that call's own operations. Calls are placed in the
//! order they were made and, within a call, operations in list order; an operation may be
//! taken ahead into an earlier operation's multi-plane command only if it could have started
//! with the request anyway (no dependency) and no operation of its die still waits between
//! the two, so no die ever runs operations out of the order the FTL emitted them in.

use crate::stats::OpCounts;
use storsim_core::{SimDuration, SimTime};
use storsim_flash::{FlashOpKind, PageRef, Ppa, Scheduler, Ticket};
use storsim_ftl::{Cause, Dep, FlashOp};

/// How far ahead in the list a multi-plane command looks for partners, in operations per
/// plane of the device: a striped request comes back to a die once per round of planes.
const SCAN_PER_PLANE: usize = 2;

#[derive(Default)]
pub(crate) struct OpBatch {
    ops: Vec<FlashOp>,
    /// Where each FTL call's operations begin in `ops`.
    calls: Vec<usize>,
    /// Operations placed ahead of their turn, in another's multi-plane command, with their
    /// finish and ticket; each leaves the list when the walk reaches it.
    taken: Vec<(usize, SimTime, Ticket)>,
    /// Each call's finish (its last operation's, the batch's start if it had none) ...
    call_finish: Vec<SimTime>,
    /// ... and the ticket of the operation that finished last: when the dies reorder
    /// operations, the call's finish moves as that operation's does.
    call_ticket: Vec<Ticket>,
    /// The same for the whole batch.
    ticket: Ticket,
    /// Scratch for one multi-plane command: operation indices and their pages.
    group: Vec<usize>,
    pages: Vec<PageRef>,
}

/// What placing operations changes besides the timelines.
pub(crate) struct Placement<'a> {
    pub scheduler: &'a mut Scheduler,
    pub counts: &'a mut OpCounts,
    /// Copy-back is on (see `SsdParams::copyback`).
    pub copyback: bool,
    /// The latest program finish so far, raised by the programs placed, and its ticket.
    pub last_program_finish: &'a mut SimTime,
    pub last_program_ticket: &'a mut Ticket,
    /// Which reads go before queued work: `None` under FIFO; otherwise host (and mapping)
    /// reads, and garbage collection's too when it says so.
    pub priority_reads: Option<GcReads>,
}

/// Whether garbage collection's reads go first, as host reads do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GcReads {
    Queued,
    First,
}

impl Placement<'_> {
    /// Whether `op` is a read that goes before its die's queued work.
    #[inline]
    fn priority(&self, op: &FlashOp) -> bool {
        match self.priority_reads {
            None => false,
            Some(gc) => {
                op.kind == FlashOpKind::Read
                    && match op.cause {
                        Cause::Host | Cause::Mapping => true,
                        Cause::Gc => gc == GcReads::First,
                        _ => false,
                    }
            }
        }
    }

    /// Raises the last program's finish to `finish` (of the operation placed last).
    #[inline]
    fn program_finished(&mut self, finish: SimTime) {
        if finish > *self.last_program_finish {
            *self.last_program_finish = finish;
            *self.last_program_ticket = self.scheduler.last_ticket();
        }
    }
}

impl OpBatch {
    /// Forgets the previous batch.
    pub fn clear(&mut self) {
        self.ops.clear();
        self.calls.clear();
    }

    /// Starts an FTL call: the operations appended to the list returned belong to it.
    pub fn begin_call(&mut self) -> &mut Vec<FlashOp> {
        self.calls.push(self.ops.len());
        &mut self.ops
    }

    /// Whether the last call read host data from flash: a read of a page that holds none
    /// (never written, or trimmed) reads nothing and costs no flash time.
    pub fn last_call_read_host_data(&self) -> bool {
        let begin = self.calls.last().copied().unwrap_or(0);
        self.ops[begin..]
            .iter()
            .any(|o| o.cause == Cause::Host && o.kind == FlashOpKind::Read)
    }

    /// Drops the last call's operations (a call that failed: its work never reaches flash).
    pub fn abandon_last_call(&mut self) {
        if let Some(begin) = self.calls.pop() {
            self.ops.truncate(begin);
        }
    }

    /// When call `k` (in the order of [`OpBatch::begin_call`]) of the last placed batch finished.
    pub fn call_finish(&self, k: usize) -> SimTime {
        self.call_finish[k]
    }

    /// The ticket of call `k`'s finish (fixed unless the dies reorder operations).
    pub fn call_ticket(&self, k: usize) -> Ticket {
        self.call_ticket.get(k).copied().unwrap_or(Ticket::FIXED)
    }

    /// The ticket of the last placed batch's finish (meaningful when the dies reorder
    /// operations).
    pub fn ticket(&self) -> Ticket {
        self.ticket
    }

    /// The page of call `k`'s last operation, if it had any (of the whole batch's last
    /// operation for `None`).
    pub fn last_page(&self, k: Option<usize>) -> Option<Ppa> {
        let end = match k {
            Some(k) => self.calls.get(k + 1).copied().unwrap_or(self.ops.len()),
            None => self.ops.len(),
        };
        let begin = k.map_or(0, |k| self.calls[k]);
        self.ops[begin..end].last().map(|op| op.ppa)
    }

    /// Places every operation no earlier than `start`; returns when the last finishes
    /// (`start` if there were none).
    pub fn place(&mut self, start: SimTime, at: &mut Placement<'_>) -> SimTime {
        let n = self.ops.len();
        self.call_finish.clear();
        self.call_ticket.clear();
        self.taken.clear();
        self.ticket = Ticket::FIXED;
        // A batch of one call (a single-page request, a unit of idle work) is not searched:
        // its operations are one page's chain of dependent steps and garbage collection
        // inside one plane, which never pair, and most requests are such batches.
        let multi_plane = self.calls.len() > 1 && at.scheduler.multi_plane_possible();
        // Tickets matter only when dies reorder operations; under FIFO they are not kept.
        let reorders = at.scheduler.reorders();
        let mut overall = start;
        for c in 0..self.calls.len() {
            let begin = self.calls[c];
            let end = self.calls.get(c + 1).copied().unwrap_or(n);
            let (mut previous, mut all) = (start, start);
            let mut call_ticket = Ticket::FIXED;
            let mut i = begin;
            while i < end {
                let (finish, ticket) = match self.take(i) {
                    Some(taken) => taken,
                    None => {
                        let op = self.ops[i];
                        let earliest = match op.dep {
                            Dep::None => start,
                            Dep::Previous => previous,
                            Dep::All => all,
                        };
                        let finish = if let Some(to) = self.copy_back_pair(i, end, at) {
                            // The read and the program that follows it become one copy-back.
                            let placed = at.scheduler.schedule_copyback(op.page(), to, earliest);
                            at.counts.add(FlashOpKind::CopyBack, op.cause, placed.1);
                            at.program_finished(placed.0);
                            i += 1;
                            placed.0
                        } else if at.priority(&op) {
                            let placed = at.scheduler.schedule_priority_read(op.page(), earliest);
                            at.counts.add(op.kind, op.cause, placed.1);
                            placed.0
                        } else if multi_plane && earliest == start && self.gather(i, at) {
                            self.place_group(earliest, at)
                        } else if let Some(to) = self.copy_through_controller(i, end, at) {
                            // The read and the program that waits for it, placed as one.
                            let [read, program] =
                                at.scheduler
                                    .schedule_read_then_program(op.page(), to, earliest);
                            at.counts.add(FlashOpKind::Read, op.cause, read.1);
                            at.counts
                                .add(FlashOpKind::Program, self.ops[i + 1].cause, program.1);
                            at.program_finished(program.0);
                            i += 1;
                            program.0
                        } else {
                            let placed = at.scheduler.schedule_busy(op.kind, op.page(), earliest);
                            at.counts.add(op.kind, op.cause, placed.1);
                            if op.kind == FlashOpKind::Program {
                                at.program_finished(placed.0);
                            }
                            placed.0
                        };
                        (finish, at.scheduler.last_ticket())
                    }
                };
                // Dependencies follow list order, whichever command placed the operation.
                previous = finish;
                if reorders && finish > all {
                    call_ticket = ticket;
                }
                all = all.max(finish);
                i += 1;
            }
            self.call_finish.push(all);
            if reorders {
                self.call_ticket.push(call_ticket);
                if all > overall {
                    self.ticket = call_ticket;
                }
            }
            overall = overall.max(all);
        }
        overall
    }

    /// If operation `i` was placed ahead of its turn, its finish (and it leaves the list).
    #[inline]
    fn take(&mut self, i: usize) -> Option<(SimTime, Ticket)> {
        if self.taken.is_empty() {
            return None;
        }
        let k = self.taken.iter().position(|&(j, _, _)| j == i)?;
        let (_, finish, ticket) = self.taken.swap_remove(k);
        Some((finish, ticket))
    }

    /// With copy-back on: when `ops[i]` reads a page that `ops[i + 1]`, in the same call (which
    /// ends before `end`), programs right after it (`Dep::Previous`) into the same plane, for
    /// the FTL's own bookkeeping (not the host's data, which must reach the controller), the
    /// destination page.
    fn copy_back_pair(&self, i: usize, end: usize, at: &Placement<'_>) -> Option<PageRef> {
        if !at.copyback || i + 1 >= end {
            return None;
        }
        let (read, program) = (self.ops[i], self.ops[i + 1]);
        let pair = read.kind == FlashOpKind::Read
            && read.cause != Cause::Host
            && program.kind == FlashOpKind::Program
            && program.dep == Dep::Previous
            && program.data_from == Some(read.ppa)
            && at.scheduler.can_copy_back(read.ppa, program.ppa);
        pair.then_some(program.page())
    }

    /// When `ops[i]` is a read and `ops[i + 1]`, in the same call (which ends before `end`) and
    /// not placed yet, a program that waits for it (`Dep::Previous`): the program's page. Placed
    /// in turn, the program would start from the read's finish, which is what
    /// [`Scheduler::schedule_read_then_program`] does for both at once.
    #[inline]
    fn copy_through_controller(&self, i: usize, end: usize, at: &Placement<'_>) -> Option<PageRef> {
        if i + 1 >= end {
            return None;
        }
        let (read, program) = (self.ops[i], self.ops[i + 1]);
        let pair = read.kind == FlashOpKind::Read
            && program.kind == FlashOpKind::Program
            && program.dep == Dep::Previous
            && !self.taken.iter().any(|&(j, _, _)| j == i + 1)
            && !at.priority(&read);
        pair.then_some(program.page())
    }

    /// Collects into `group` operation `i` and the operations after it, not placed yet, that
    /// may join it in one multi-plane command: same kind, free to start with the request (no
    /// dependency, or the first of their call), compatible with every member, on the same die
    /// with no other waiting operation of that die between them. Returns whether a partner
    /// was found.
    #[inline]
    fn gather(&mut self, i: usize, at: &Placement<'_>) -> bool {
        let op = self.ops[i];
        let scheduler = &*at.scheduler;
        let die = scheduler.die_of(op.ppa);
        // Most often the next operation is the same die's next step (the copy after a garbage
        // collection read): nothing can join, and that is settled without a scan.
        if let Some(next) = self.ops.get(i + 1) {
            if next.kind != op.kind && self.taken.is_empty() && scheduler.die_of(next.ppa) == die {
                return false;
            }
        }
        self.gather_scan(i, die, at)
    }

    fn gather_scan(&mut self, i: usize, die: u32, at: &Placement<'_>) -> bool {
        let op = self.ops[i];
        let scheduler = &*at.scheduler;
        let max = scheduler.geometry().planes_per_die as usize;
        let limit = self
            .ops
            .len()
            .min(i + 1 + SCAN_PER_PLANE * scheduler.geometry().planes() as usize);
        self.group.clear();
        self.group.push(i);
        for j in i + 1..limit {
            let other = self.ops[j];
            if scheduler.die_of(other.ppa) != die || self.taken.iter().any(|&(k, _, _)| k == j) {
                continue;
            }
            // A read whose data a copy-back keeps in the plane stays with its program.
            let paired = at.copyback
                && self.ops.get(j + 1).is_some_and(|p| {
                    p.data_from == Some(other.ppa) && scheduler.can_copy_back(other.ppa, p.ppa)
                });
            let joins = other.kind == op.kind
                && (other.dep == Dep::None || self.calls.binary_search(&j).is_ok())
                && !paired
                && self.group.iter().all(|&k| {
                    scheduler.multi_plane_compatible(op.kind, self.ops[k].page(), other.page())
                });
            if !joins {
                break;
            }
            self.group.push(j);
            if self.group.len() == max {
                break;
            }
        }
        self.group.len() > 1
    }

    /// Places the operations in `group` as one multi-plane command and returns its finish.
    /// The die time is shared out among them so that per-cause totals still add up to the
    /// die's.
    fn place_group(&mut self, earliest: SimTime, at: &mut Placement<'_>) -> SimTime {
        let kind = self.ops[self.group[0]].kind;
        self.pages.clear();
        self.pages
            .extend(self.group.iter().map(|&k| self.ops[k].page()));
        let (finish, busy) = at
            .scheduler
            .schedule_multi_plane(kind, &self.pages, earliest);
        let members = self.group.len() as u64;
        let ticket = at.scheduler.last_ticket();
        for (m, &k) in self.group.iter().enumerate() {
            let share = busy.as_ns() / members + u64::from(m == 0) * (busy.as_ns() % members);
            at.counts.add(kind, self.ops[k].cause, SimDuration(share));
            if m > 0 {
                self.taken.push((k, finish, ticket));
            }
        }
        at.counts.multi_plane_commands += 1;
        if kind == FlashOpKind::Program {
            at.program_finished(finish);
        }
        finish
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storsim_flash::{BlockId, CellType, Geometry, MultiPlane, Timing};

    /// One channel, two dies of two planes, four blocks of four pages per plane: blocks 0..4
    /// are die 0's plane 0, 4..8 its plane 1, 8..16 die 1's. A page crosses the channel in
    /// 1000 ns, commands take 100 ns, tR 5 µs, tPROG 20 µs, tBERS 100 µs.
    fn geometry() -> Geometry {
        Geometry {
            channels: 1,
            chips_per_channel: 2,
            dies_per_chip: 1,
            planes_per_die: 2,
            blocks_per_plane: 4,
            pages_per_block: 4,
            page_bytes: 1000,
            oob_bytes: 0,
        }
    }

    fn scheduler(rule: MultiPlane) -> Scheduler {
        let t = Timing::uniform(
            CellType::Slc,
            SimDuration(5_000),
            SimDuration(20_000),
            SimDuration(100_000),
            SimDuration(100),
            1000,
            1,
        );
        Scheduler::new(geometry(), t).with_multi_plane(rule)
    }

    fn page(block: u32, page: u32) -> Ppa {
        geometry().ppa(BlockId(block), page)
    }

    /// Places `calls` (each a list of operations) under `rule` from time 0; returns each
    /// call's finish in ns and the multi-plane commands placed.
    fn place(rule: MultiPlane, copyback: bool, calls: &[&[FlashOp]]) -> (Vec<u64>, u64) {
        let mut scheduler = scheduler(rule);
        let mut counts = OpCounts::default();
        let mut last = SimTime::ZERO;
        let mut last_ticket = Ticket::FIXED;
        let mut batch = OpBatch::default();
        for call in calls {
            batch.begin_call().extend_from_slice(call);
        }
        let mut at = Placement {
            scheduler: &mut scheduler,
            counts: &mut counts,
            copyback,
            last_program_finish: &mut last,
            last_program_ticket: &mut last_ticket,
            priority_reads: None,
        };
        batch.place(SimTime::ZERO, &mut at);
        let finish = (0..calls.len()).map(|k| batch.call_finish(k).as_ns());
        (finish.collect(), counts.multi_plane_commands)
    }

    fn host_program(ppa: Ppa) -> FlashOp {
        FlashOp::program(ppa, Cause::Host, Dep::All)
    }

    const PROGRAM_ALONE: u64 = 100 + 1_000 + 20_000;
    const PROGRAM_PAIR: u64 = 2 * (100 + 1_000) + 20_000;

    #[test]
    fn pages_of_two_calls_on_two_planes_share_one_program() {
        let calls: &[&[FlashOp]] = &[&[host_program(page(0, 0))], &[host_program(page(5, 0))]];
        let (finish, commands) = place(MultiPlane::SamePage, false, calls);
        assert_eq!(finish, vec![PROGRAM_PAIR; 2]);
        assert_eq!(commands, 1);
        // Off, or under the same-page rule with another page, they take turns on the die.
        let (off, commands) = place(MultiPlane::Off, false, calls);
        assert_eq!(off, vec![PROGRAM_ALONE, 2 * PROGRAM_ALONE]);
        assert_eq!(commands, 0);
        let other_page: &[&[FlashOp]] = &[&[host_program(page(0, 0))], &[host_program(page(5, 1))]];
        let (same, _) = place(MultiPlane::SamePage, false, other_page);
        assert_eq!(same, vec![PROGRAM_ALONE, 2 * PROGRAM_ALONE]);
        let (any, _) = place(MultiPlane::AnyPage, false, other_page);
        assert_eq!(any, vec![PROGRAM_PAIR; 2]);
    }

    #[test]
    fn an_operation_of_the_die_in_between_keeps_the_order() {
        // The second call erases a block of plane 1 before the third programs plane 1: taking
        // the program ahead of the erase would run the die's work out of order.
        let calls: &[&[FlashOp]] = &[
            &[host_program(page(0, 0))],
            &[FlashOp::erase(page(6, 0), Cause::Gc, Dep::None)],
            &[host_program(page(5, 0))],
        ];
        let (finish, commands) = place(MultiPlane::AnyPage, false, calls);
        assert_eq!(commands, 0);
        assert_eq!(finish[0], PROGRAM_ALONE);
        assert_eq!(finish[1], PROGRAM_ALONE + 100 + 100_000);
        assert_eq!(finish[2], finish[1] + PROGRAM_ALONE);
        // Another die's work in between is no obstacle.
        let calls: &[&[FlashOp]] = &[
            &[host_program(page(0, 0))],
            &[FlashOp::erase(page(8, 0), Cause::Gc, Dep::None)],
            &[host_program(page(5, 0))],
        ];
        let (finish, commands) = place(MultiPlane::AnyPage, false, calls);
        assert_eq!(commands, 1);
        assert_eq!(finish[0], PROGRAM_PAIR);
        assert_eq!(finish[2], PROGRAM_PAIR);
    }

    #[test]
    fn a_dependent_operation_is_not_taken_ahead() {
        // The host program after garbage collection in its call waits for that work: it cannot
        // join a command that starts with the request.
        let gc_then_host: &[FlashOp] = &[
            FlashOp::erase(page(12, 0), Cause::Gc, Dep::None),
            host_program(page(5, 0)),
        ];
        let calls: &[&[FlashOp]] = &[&[host_program(page(0, 0))], gc_then_host];
        let (finish, commands) = place(MultiPlane::SamePage, false, calls);
        assert_eq!(commands, 0);
        // The erase's command waits for the first program's data on the shared channel; the
        // host program waits for the erase.
        let erase_done = (100 + 1_000) + 100 + 100_000;
        assert_eq!(finish[1], erase_done + PROGRAM_ALONE);
    }

    #[test]
    fn reads_join_and_the_later_dependencies_follow() {
        // Two single-page reads on the two planes of die 0, each followed in its call by a
        // program that depends on it: the reads share one tR, and each program waits for it.
        let read_then_copy = |from: Ppa, to: Ppa| {
            [
                FlashOp::read(from, Cause::Host, Dep::None),
                FlashOp::copy(from, to, Cause::Host, Dep::Previous),
            ]
        };
        let a = read_then_copy(page(1, 2), page(9, 0));
        let b = read_then_copy(page(6, 2), page(13, 0));
        let (finish, commands) = place(MultiPlane::SamePage, false, &[&a, &b]);
        let read_pair = 2 * 100 + 5_000 + 2 * (100 + 1_000);
        // Both programs go to die 1, in turn, from the reads' finish: one multi-plane program
        // would need both free to start, and they are not.
        assert_eq!(commands, 1);
        assert_eq!(finish[0], read_pair + PROGRAM_ALONE);
        assert_eq!(finish[1], finish[0] + PROGRAM_ALONE);
    }

    #[test]
    fn a_copy_back_read_stays_with_its_program() {
        // Garbage collection in plane 1 copies inside the plane; the host read of plane 0
        // must not take that read away from its copy-back.
        let gc: &[FlashOp] = &[
            FlashOp::read(page(5, 1), Cause::Gc, Dep::None),
            FlashOp::copy(page(5, 1), page(6, 0), Cause::Gc, Dep::Previous),
        ];
        let host: &[FlashOp] = &[FlashOp::read(page(0, 1), Cause::Host, Dep::None)];
        let (_, commands) = place(MultiPlane::SamePage, true, &[host, gc]);
        assert_eq!(commands, 0);
        let (_, without_copy_back) = place(MultiPlane::SamePage, false, &[host, gc]);
        assert_eq!(without_copy_back, 1);
    }
}
