//! Die scheduling policies: host reads ahead of a die's queued work, and program and erase
//! suspension (docs/models/die-scheduling.md).
//!
//! The scheduler places every operation when it is submitted, so its finish is known at once.
//! A priority read that arrives later and goes ahead of operations already placed moves them
//! later. Walking the queued operations on every read would cost as much as the backlog
//! (10^5 operations under a deep write buffer), so the move is recorded once, as a
//! *breakpoint* of the die: every operation placed before it whose *virtual* start (its
//! start when placed, less the die's shift at that moment) is at or after the breakpoint is
//! later by the breakpoint's amount. An operation's actual times follow from its virtual
//! ones and the breakpoints, whenever someone asks ([`DieQueue::actual_finish`]); the
//! operations' order on the die never changes, so the breakpoints come in order of virtual
//! time and one binary search answers.
//!
//! Suspension splits the operation in progress: the breakpoint sits inside it, at the
//! instant it pauses, so its start stays and its finish moves.

use crate::scheduler::FlashOpKind;
use std::collections::VecDeque;
use storsim_core::SimDuration;

/// Which in-flight operations a read may suspend, as MQSim's `CMD_Suspension_Support` names
/// them (NONE, PROGRAM, ERASE, PROGRAM_ERASE).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SuspendKinds {
    None,
    Program,
    Erase,
    #[default]
    ProgramErase,
}

impl SuspendKinds {
    fn allows(self, kind: FlashOpKind) -> bool {
        matches!(
            (self, kind),
            (
                SuspendKinds::Program | SuspendKinds::ProgramErase,
                FlashOpKind::Program
            ) | (
                SuspendKinds::Erase | SuspendKinds::ProgramErase,
                FlashOpKind::Erase
            )
        )
    }
}

/// Program and erase suspension's parameters (Wu and He, FAST '12; MQSim's
/// `Suspend_Program_Time` and `Suspend_Erase_Time`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Suspension {
    pub kinds: SuspendKinds,
    /// From a read's arrival to the die being free for it, a program's ...
    pub program_latency: SimDuration,
    /// ... and an erase's (the current pulse finishes first).
    pub erase_latency: SimDuration,
    /// Die time to resume the suspended operation once the reads are done.
    pub resume_overhead: SimDuration,
    /// The most reads that may go ahead of one in-flight operation, each opening a suspension
    /// or joining the open one: past it, the operation runs to its end.
    pub max_suspensions: u32,
    /// The least time an operation runs after its start or its last resume before it may be
    /// suspended again.
    pub min_run: SimDuration,
}

impl Default for Suspension {
    /// Latencies from flash datasheets: a program suspends within 5 µs typically, an erase
    /// within at most 20 µs (the suspend point is the end of the current program-verify step or
    /// erase pulse; docs/models/die-scheduling.md names the sources). MQSim's defaults (100 µs
    /// and 700 µs) are far more pessimistic. The resume overhead, the bound and the least run
    /// are this model's choices, stated in the same page.
    fn default() -> Self {
        Suspension {
            kinds: SuspendKinds::ProgramErase,
            program_latency: SimDuration::from_us(5),
            erase_latency: SimDuration::from_us(20),
            resume_overhead: SimDuration::from_us(5),
            max_suspensions: 8,
            min_run: SimDuration::from_us(100),
        }
    }
}

/// How a die orders its operations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DieScheduling {
    /// In the order they were placed (first come, first served): the seed-era model.
    #[default]
    Fifo,
    /// A priority read goes before the die's queued operations that have not started.
    ReadPriority,
    /// Read priority, and an in-flight program or erase is suspended for a priority read.
    Suspend(Suspension),
}

/// A handle on a placed operation's finish, to resolve later: the die and the virtual finish,
/// or a time no later read can move (a priority read's). Ordered only so that holders can
/// keep it in ordered collections.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Ticket {
    die: u32,
    virtual_ns: u64,
}

impl Default for Ticket {
    fn default() -> Self {
        Ticket::FIXED
    }
}

impl Ticket {
    /// A finish nothing can move.
    pub const FIXED: Ticket = Ticket {
        die: u32::MAX,
        virtual_ns: 0,
    };

    pub(crate) fn new(die: usize, virtual_ns: u64) -> Ticket {
        Ticket {
            die: die as u32,
            virtual_ns,
        }
    }

    pub(crate) fn die(self) -> Option<usize> {
        (self.die != u32::MAX).then_some(self.die as usize)
    }

    pub(crate) fn virtual_ns(self) -> u64 {
        self.virtual_ns
    }
}

/// What the policies did, over the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiePolicyCounts {
    /// Suspensions opened, of programs and of erases.
    pub program_suspensions: u64,
    pub erase_suspensions: u64,
    /// Priority reads that went before queued work that had not started.
    pub reads_ahead: u64,
    /// Die time added to suspended operations (suspend latency, reads, resume overhead).
    pub suspended_ns: u64,
}

/// A non-priority operation placed on the die and not yet known to be finished.
#[derive(Clone, Copy, Debug)]
struct QueuedOp {
    virtual_start: u64,
    virtual_finish: u64,
    kind: FlashOpKind,
    /// Reads that went ahead while it was in flight.
    suspensions: u32,
    /// While suspended or after a resume: the virtual instant it paused at and the actual
    /// instant it resumes (or resumed).
    paused: Option<(u64, u64)>,
}

/// One die's queue of placed operations and its breakpoints.
#[derive(Clone, Debug, Default)]
pub(crate) struct DieQueue {
    ops: VecDeque<QueuedOp>,
    /// `(virtual instant, shift from the die's first breakpoint to this one, inclusive)`.
    breaks: VecDeque<(u64, u64)>,
    /// The shift of breakpoints forgotten (those the present has passed).
    forgotten_shift: u64,
    /// Every breakpoint's shift together: what an operation placed now is later by.
    pub shift: u64,
    /// When the last priority read ends, and the latest priority read's arrival.
    pub priority_free_at: u64,
    last_arrival: u64,
}

/// Where a priority read goes on its die, and what it does to the queued operations.
pub(crate) struct ReadSlot {
    /// The read's die work may start no earlier than this.
    pub earliest: u64,
    /// Whether it suspends the operation in flight (which then resumes after it).
    pub suspends: Option<FlashOpKind>,
}

impl DieQueue {
    /// The shift of an instant `v` of virtual time: strictly after a breakpoint for a finish
    /// (`inclusive` false), at or after for a start.
    fn shift_at(&self, v: u64, inclusive: bool) -> u64 {
        let n = self
            .breaks
            .partition_point(|&(b, _)| if inclusive { b <= v } else { b < v });
        match n {
            0 => self.forgotten_shift,
            n => self.breaks[n - 1].1,
        }
    }

    /// When an operation whose virtual finish is `v` actually finishes. Exact for every
    /// finish at or after the present the breakpoints were last pruned to; earlier ones come
    /// out earlier than that present too.
    pub fn actual_finish(&self, v: u64) -> u64 {
        v + self.shift_at(v, false)
    }

    fn actual_start(&self, v: u64) -> u64 {
        v + self.shift_at(v, true)
    }

    /// Records an operation placed from `start` to `finish` (actual times) while the present is
    /// `horizon`; returns its ticket. Operations that ended by the present leave the queue
    /// first: no read can arrive before the present, so none of them can move or be passed
    /// again, and a die that sees no reads keeps only its backlog.
    pub fn push(
        &mut self,
        die: usize,
        kind: FlashOpKind,
        (start, finish): (u64, u64),
        horizon: u64,
    ) -> Ticket {
        while let Some(front) = self.ops.front() {
            if self.actual_finish(front.virtual_finish) > horizon {
                break;
            }
            self.ops.pop_front();
        }
        let op = QueuedOp {
            virtual_start: start - self.shift,
            virtual_finish: finish - self.shift,
            kind,
            suspensions: 0,
            paused: None,
        };
        self.ops.push_back(op);
        Ticket::new(die, op.virtual_finish)
    }

    /// Operations held.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Forgets the breakpoints whose moved instant came before `horizon`: no finish still to
    /// come needs them (see [`DieQueue::actual_finish`]).
    fn prune(&mut self, horizon: u64) {
        while let Some(&(v, shift)) = self.breaks.front() {
            if v + shift >= horizon {
                break;
            }
            self.forgotten_shift = shift;
            self.breaks.pop_front();
        }
    }

    /// Adds a breakpoint: operations from virtual instant `v` on move by `by` ns.
    fn add_break(&mut self, v: u64, by: u64) {
        if by == 0 {
            return;
        }
        self.shift += by;
        match self.breaks.back_mut() {
            Some(last) if last.0 == v => last.1 = self.shift,
            _ => self.breaks.push_back((v, self.shift)),
        }
    }

    /// Decides where a priority read arriving at `arrival` goes (the present is `horizon`):
    /// after the operation in flight, or suspending it under `suspension`.
    pub fn slot(
        &mut self,
        arrival: u64,
        horizon: u64,
        suspension: Option<&Suspension>,
    ) -> ReadSlot {
        let t = arrival.max(self.last_arrival);
        self.last_arrival = t;
        self.prune(horizon);
        while let Some(op) = self.ops.front() {
            if self.actual_finish(op.virtual_finish) > t {
                break;
            }
            self.ops.pop_front();
        }
        let free = t.max(self.priority_free_at);
        let Some(front) = self.ops.front().copied() else {
            return ReadSlot {
                earliest: free,
                suspends: None,
            };
        };
        let start = self.actual_start(front.virtual_start);
        if start > t {
            return ReadSlot {
                earliest: free,
                suspends: None,
            };
        }
        let finish = self.actual_finish(front.virtual_finish);
        if let Some(s) = suspension.filter(|s| s.kinds.allows(front.kind)) {
            if front.suspensions < s.max_suspensions {
                if front.paused.is_some_and(|(_, resume)| t < resume) {
                    // Suspended already: the read joins the open suspension.
                    return ReadSlot {
                        earliest: free,
                        suspends: Some(front.kind),
                    };
                }
                let latency = match front.kind {
                    FlashOpKind::Erase => s.erase_latency,
                    _ => s.program_latency,
                }
                .as_ns();
                let ran_since = front.paused.map_or(start, |(_, resume)| resume);
                if t >= ran_since + s.min_run.as_ns() && t + latency < finish {
                    return ReadSlot {
                        earliest: (t + latency).max(self.priority_free_at),
                        suspends: Some(front.kind),
                    };
                }
            }
        }
        ReadSlot {
            earliest: free.max(finish),
            suspends: None,
        }
    }

    /// Moves the queued operations for a priority read that `slot` placed from `read_start`
    /// to `read_end`; returns how much later the die's last operation now ends.
    pub fn make_room(
        &mut self,
        slot: &ReadSlot,
        read_start: u64,
        read_end: u64,
        resume_overhead: u64,
        counts: &mut DiePolicyCounts,
    ) -> u64 {
        self.priority_free_at = read_end;
        let front = self.ops.front().copied();
        let suspended = slot.suspends.is_some()
            && front.is_some_and(|f| read_start < self.actual_finish(f.virtual_finish));
        if suspended {
            let shift = self.shift;
            let front = self.ops.front_mut().expect("a suspended operation");
            front.suspensions += 1;
            let resume = read_end + resume_overhead;
            let (v, by) = match front.paused {
                Some((v, old_resume)) if old_resume > read_start => {
                    // Joining the open suspension: the resume moves.
                    front.paused = Some((v, resume.max(old_resume)));
                    (v, resume.saturating_sub(old_resume))
                }
                _ => {
                    // The operation pauses where the read's die work starts.
                    let v = read_start - shift;
                    front.paused = Some((v, resume));
                    match front.kind {
                        FlashOpKind::Erase => counts.erase_suspensions += 1,
                        _ => counts.program_suspensions += 1,
                    }
                    (v, resume - read_start)
                }
            };
            self.add_break(v, by);
            counts.suspended_ns += by;
            counts.reads_ahead += 1;
            return by;
        }
        // The first operation that had not started when the read could start moves behind
        // the read (the one in flight, if any, is passed over: it runs to its end).
        let next = self
            .ops
            .iter()
            .find(|op| self.actual_start(op.virtual_start) >= slot.earliest)
            .copied();
        let Some(next) = next else {
            return 0;
        };
        let by = read_end.saturating_sub(self.actual_start(next.virtual_start));
        if by > 0 {
            counts.reads_ahead += 1;
        }
        self.add_break(next.virtual_start, by);
        by
    }
}
