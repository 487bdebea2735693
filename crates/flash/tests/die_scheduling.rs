//! The die scheduling policies timed by hand: a read arriving 100 µs into a 3 ms erase, with a
//! program queued behind the erase, under each policy; the suspension bound; an erase that
//! finishes under a steady stream of reads.

use storsim_core::{SimDuration, SimTime};
use storsim_flash::{
    BlockId, CellType, DieScheduling, FlashOpKind, Geometry, Ppa, Scheduler, SuspendKinds,
    Suspension, Timing,
};

/// One channel, one die. The channel moves 1 byte per ns, so a 1000-byte page crosses it in
/// 1 µs; a command takes 100 ns, tR 50 µs, tPROG 500 µs, tBERS 3 ms.
fn scheduler(policy: DieScheduling) -> (Geometry, Scheduler) {
    let g = Geometry {
        channels: 1,
        chips_per_channel: 1,
        dies_per_chip: 1,
        planes_per_die: 1,
        blocks_per_plane: 4,
        pages_per_block: 4,
        page_bytes: 1000,
        oob_bytes: 0,
    };
    let t = Timing::uniform(
        CellType::Slc,
        SimDuration::from_us(50),
        SimDuration::from_us(500),
        SimDuration::from_us(3_000),
        SimDuration(100),
        1000,
        1,
    );
    (g, Scheduler::new(g, t).with_die_scheduling(policy))
}

/// Suspension with round numbers: 10 µs to suspend an erase, 4 µs a program, 5 µs to resume,
/// at most `max` reads per operation, at least `min_run_us` of work between suspensions.
fn suspension(max: u32, min_run_us: u64) -> Suspension {
    Suspension {
        kinds: SuspendKinds::ProgramErase,
        program_latency: SimDuration::from_us(4),
        erase_latency: SimDuration::from_us(10),
        resume_overhead: SimDuration::from_us(5),
        max_suspensions: max,
        min_run: SimDuration::from_us(min_run_us),
    }
}

fn page(g: &Geometry, block: u32) -> Ppa {
    g.ppa(BlockId(block), 0)
}

/// Erase at 0, a program queued behind it, a read at 100 µs: the read's, the erase's and the
/// program's actual finishes in ns.
fn erase_program_read(policy: DieScheduling) -> (u64, u64, u64, Scheduler) {
    let (g, mut s) = scheduler(policy);
    let erase = s.schedule(FlashOpKind::Erase, page(&g, 1), SimTime::ZERO);
    let erase_ticket = s.last_ticket();
    let program = s.schedule(FlashOpKind::Program, page(&g, 2), SimTime::ZERO);
    let program_ticket = s.last_ticket();
    let arrival = SimTime(100_000);
    s.prune(arrival);
    let (read, _) = s.schedule_priority_read(page(&g, 3), arrival);
    let erase = s.resolve(erase, erase_ticket).as_ns();
    let program = s.resolve(program, program_ticket).as_ns();
    (read.as_ns(), erase, program, s)
}

// The erase holds the die from its command at 0: E = 100 + 3,000,000 = 3,000,100 ns. The
// program's command and data take 1,100 ns and tPROG 500,000: 501,100 ns after its start. A
// read is a command (100), tR (50,000), a command and the data out (1,100): 51,200 ns.
const E: u64 = 3_000_100;
const PROGRAM: u64 = 501_100;
const READ: u64 = 51_200;

#[test]
fn fifo_reads_wait_for_everything_placed_before_them() {
    let (read, erase, program, s) = erase_program_read(DieScheduling::Fifo);
    assert_eq!(erase, E);
    assert_eq!(program, E + PROGRAM);
    // After the program: 3,501,200 + 51,200.
    assert_eq!(read, E + PROGRAM + READ);
    assert!(!s.reorders());
}

#[test]
fn read_priority_goes_before_the_queued_program_but_after_the_erase() {
    let (read, erase, program, s) = erase_program_read(DieScheduling::ReadPriority);
    assert_eq!(erase, E, "the erase in flight runs to its end");
    // The read starts when the erase ends: its transfers go before the queued program's
    // (still reserved at [E, E + 1,100) on the channel, which the read's die work delays
    // anyway), so it ends at 3,000,100 + 51,200 = 3,051,300.
    assert_eq!(read, E + READ);
    // The program, which was to start at E, starts after the read: 3,552,400.
    assert_eq!(program, E + READ + PROGRAM);
    let c = s.die_policy_counts();
    assert_eq!((c.reads_ahead, c.erase_suspensions), (1, 0));
}

#[test]
fn suspend_pauses_the_erase_for_the_read() {
    let (read, erase, program, s) = erase_program_read(DieScheduling::Suspend(suspension(8, 100)));
    // The erase has run 100 µs (its least run), so it suspends: the die is the read's 10 µs
    // after it arrived, at 110,000; the read ends at 110,000 + 51,200 = 161,200.
    assert_eq!(read, 161_200);
    // The erase resumes 5 µs later, at 166,200, with the 3,000,100 - 110,000 = 2,890,100 ns
    // it had left: it ends at 3,056,300, 56,200 ns (read, resume) later than placed.
    assert_eq!(erase, 166_200 + (E - 110_000));
    assert_eq!(erase, E + READ + 5_000);
    // The program behind it moves as much.
    assert_eq!(program, erase + PROGRAM);
    let c = s.die_policy_counts();
    assert_eq!((c.erase_suspensions, c.program_suspensions), (1, 0));
    assert_eq!(c.suspended_ns, READ + 5_000);
}

#[test]
fn an_erase_that_has_not_run_its_least_time_is_not_suspended() {
    // With a least run of 200 µs, the erase 100 µs in runs on: read priority's timing.
    let (read, erase, program, s) = erase_program_read(DieScheduling::Suspend(suspension(8, 200)));
    assert_eq!((read, erase, program), (E + READ, E, E + READ + PROGRAM));
    assert_eq!(s.die_policy_counts().erase_suspensions, 0);
    // Nor when only programs may be suspended.
    let only_programs = Suspension {
        kinds: SuspendKinds::Program,
        ..suspension(8, 0)
    };
    let (read, erase, _, _) = erase_program_read(DieScheduling::Suspend(only_programs));
    assert_eq!((read, erase), (E + READ, E));
}

#[test]
fn a_program_is_suspended_with_its_own_latency() {
    let (g, mut s) = scheduler(DieScheduling::Suspend(suspension(8, 0)));
    let program = s.schedule(FlashOpKind::Program, page(&g, 1), SimTime::ZERO);
    let ticket = s.last_ticket();
    assert_eq!(program.as_ns(), PROGRAM);
    let (read, _) = s.schedule_priority_read(page(&g, 2), SimTime(200_000));
    // 4 µs to suspend: the read runs from 204,000 to 255,200; the program resumes at 260,200.
    assert_eq!(read.as_ns(), 204_000 + READ);
    assert_eq!(s.resolve(program, ticket).as_ns(), PROGRAM + READ + 5_000);
    assert_eq!(s.die_policy_counts().program_suspensions, 1);
}

/// Reads every `gap_us` from `from_us` on, `n` of them, after an erase placed at 0; returns
/// the erase's actual finish and each read's finish, in ns.
fn reads_during_an_erase(
    policy: DieScheduling,
    from_us: u64,
    gap_us: u64,
    n: u64,
) -> (u64, Vec<u64>, Scheduler) {
    let (g, mut s) = scheduler(policy);
    let erase = s.schedule(FlashOpKind::Erase, page(&g, 1), SimTime::ZERO);
    let ticket = s.last_ticket();
    let mut reads = Vec::new();
    for k in 0..n {
        let at = SimTime((from_us + k * gap_us) * 1_000);
        s.prune(at);
        reads.push(s.schedule_priority_read(page(&g, 2), at).0.as_ns());
    }
    (s.resolve(erase, ticket).as_ns(), reads, s)
}

#[test]
fn an_operation_is_never_suspended_more_than_the_bound() {
    // Reads every 200 µs from 100 µs: each finds the erase running its least 50 µs since the
    // last resume, so without a bound every one would suspend it.
    for max in [1, 3, 5] {
        let (erase, reads, s) =
            reads_during_an_erase(DieScheduling::Suspend(suspension(max, 50)), 100, 200, 20);
        let c = s.die_policy_counts();
        assert_eq!(c.erase_suspensions, u64::from(max), "max {max}");
        // Each suspension costs its read and the resume: 56,200 ns.
        assert_eq!(erase, E + u64::from(max) * (READ + 5_000), "max {max}");
        // Past the bound, the reads that arrive during the erase wait for its end.
        let waiting = &reads[max as usize..];
        assert!(waiting[0] >= erase + READ, "max {max}: {waiting:?}");
    }
}

#[test]
fn an_erase_finishes_under_a_steady_stream_of_reads() {
    // A read every 60 µs for 20 ms keeps the die 85 % busy with reads. The erase finishes
    // within its bound of suspensions, each 10 µs + 51.2 µs + 5 µs, and the reads after its
    // end no longer wait for it.
    let policy = DieScheduling::Suspend(suspension(8, 100));
    let (erase, reads, s) = reads_during_an_erase(policy, 100, 60, 333);
    let bound = E + 8 * (10_000 + READ + 5_000);
    assert!(erase <= bound, "erase ends at {erase}, past {bound}");
    let c = s.die_policy_counts();
    assert!(c.erase_suspensions >= 1 && c.erase_suspensions <= 8);
    let last = *reads.last().unwrap();
    assert!(last < 20_100_000 + READ, "the last read ends at {last}");
    // Read priority alone: the erase runs to its end, undisturbed.
    let (erase, _, _) = reads_during_an_erase(DieScheduling::ReadPriority, 100, 60, 333);
    assert_eq!(erase, E);
}

#[test]
fn a_program_queued_behind_reads_still_starts() {
    // Under read priority, a program waiting behind a stream of reads that leave the die idle
    // part of the time starts in a gap and is never pushed again once it has.
    let (g, mut s) = scheduler(DieScheduling::ReadPriority);
    s.schedule_priority_read(page(&g, 2), SimTime::ZERO);
    let program = s.schedule(FlashOpKind::Program, page(&g, 1), SimTime::ZERO);
    let ticket = s.last_ticket();
    for k in 1..200u64 {
        let at = SimTime(k * 100_000);
        s.prune(at);
        s.schedule_priority_read(page(&g, 2), at);
    }
    let finish = s.resolve(program, ticket).as_ns();
    // Placed after the first read, it started at 51,200, before the read at 100 µs arrived,
    // so it runs to its end; the reads wait for it.
    assert_eq!(finish, READ + PROGRAM);
}

#[test]
fn a_die_without_reads_keeps_only_its_backlog() {
    // Programs placed as time passes, never a read: the queue forgets what ended, and the
    // finishes handed out stay exact.
    let (g, mut s) = scheduler(DieScheduling::Suspend(suspension(8, 100)));
    let mut last = (SimTime::ZERO, s.last_ticket());
    for k in 0..10_000u64 {
        let now = SimTime(k * PROGRAM);
        s.prune(now);
        let finish = s.schedule(FlashOpKind::Program, page(&g, 1), now);
        assert_eq!(finish.as_ns(), (k + 1) * PROGRAM);
        last = (finish, s.last_ticket());
    }
    assert_eq!(s.resolve(last.0, last.1), last.0);
    assert!(s.queued_ops() <= 2, "{} operations held", s.queued_ops());
    // A read now still finds the program in flight and suspends it.
    let (read, _) = s.schedule_priority_read(page(&g, 2), SimTime(last.0.as_ns() - 300_000));
    assert_eq!(read.as_ns(), last.0.as_ns() - 300_000 + 4_000 + READ);
    assert_eq!(
        s.resolve(last.0, last.1).as_ns(),
        last.0.as_ns() + READ + 5_000
    );
}
