//! RAID-5 and RAID-6: where data and parity live (md's left-symmetric layout, worked out by
//! hand), which member I/Os each kind of write makes, a small case's timing from the members'
//! cost formula, and degraded reads and writes with a member missing.

mod support;

use storsim_array::DEFAULT_REBUILD_RATE_BYTES_PER_S as RATE;
use storsim_core::conformance::counter;
use storsim_core::{Device, Op, SimTime};
use support::*;

const KIB: u64 = 1024;
const CHUNK: u64 = 4 * KIB;
const MEMBER_BYTES: u64 = 1 << 20;

/// `n` recorded linear members of 1 MiB costing 100 µs + 1 µs/KiB per piece.
fn members(n: usize) -> (Vec<Box<dyn Device>>, Vec<SharedLog>) {
    (0..n)
        .map(|_| recorded(linear(MEMBER_BYTES, 100.0, 1.0, 16)))
        .unzip()
}

/// What each member was handed: (op, member offset, length), in order.
fn handed(logs: &[SharedLog]) -> Vec<Vec<(Op, u64, u64)>> {
    logs.iter()
        .map(|log| {
            log.lock()
                .unwrap()
                .submitted
                .iter()
                .map(|(_, r)| (r.op, r.offset_bytes, r.len_bytes))
                .collect()
        })
        .collect()
}

fn clear(logs: &[SharedLog]) {
    for log in logs {
        log.lock().unwrap().submitted.clear();
    }
}

fn count(logs: &[SharedLog], op: Op) -> usize {
    logs.iter()
        .map(|log| log.lock().unwrap().submitted_count(op))
        .sum()
}

/// Drives one request on an idle array and returns its completion.
fn one(
    array: &mut dyn Device,
    op: Op,
    offset_bytes: u64,
    len_bytes: u64,
) -> storsim_core::Completion {
    let r = req(0, op, offset_bytes, len_bytes, 0);
    let run = drive(array, &[r]);
    assert_eq!(run.completions.len(), 1);
    run.completions[0]
}

/// Reading array chunk k (one chunk at byte k·S) reaches exactly the member md's drawing puts
/// data chunk k on, at row·S. RAID-5 over 4 members (3 data chunks a row):
///
/// ```text
/// row 0:  D0  D1  D2  P        row 2:  D8  P   D6  D7
/// row 1:  D4  D5  P   D3       row 3:  P   D9  D10 D11
/// ```
#[test]
fn raid5_data_chunks_sit_where_md_puts_them() {
    let member_of = [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3];
    let (children, logs) = members(4);
    let mut array = parity_array(1, CHUNK, 8, children, None, None, RATE);
    assert_eq!(array.capacity_bytes(), 3 * MEMBER_BYTES, "3 data members");
    for (k, &m) in member_of.iter().enumerate() {
        clear(&logs);
        one(&mut array, Op::Read, k as u64 * CHUNK, CHUNK);
        let got = handed(&logs);
        let row = k as u64 / 3;
        for (i, pieces) in got.iter().enumerate() {
            if i == m {
                assert_eq!(pieces, &[(Op::Read, row * CHUNK, CHUNK)], "chunk {k}");
            } else {
                assert!(
                    pieces.is_empty(),
                    "chunk {k} touched member {i}: {pieces:?}"
                );
            }
        }
    }
}

/// RAID-6 over 5 members, P at 4 − r mod 5, Q after it, data after Q:
///
/// ```text
/// row 0:  Q   D0  D1  D2  P
/// row 1:  D3  D4  D5  P   Q
/// row 2:  D7  D8  P   Q   D6
/// row 3:  D10 P   Q   D9  D11  (P at 1, Q at 2, data at 3, 4, 0)
/// ```
#[test]
fn raid6_data_chunks_sit_where_md_puts_them() {
    let member_of = [1, 2, 3, 0, 1, 2, 4, 0, 1, 3, 4, 0];
    let (children, logs) = members(5);
    let mut array = parity_array(2, CHUNK, 8, children, None, None, RATE);
    assert_eq!(array.capacity_bytes(), 3 * MEMBER_BYTES);
    for (k, &m) in member_of.iter().enumerate() {
        clear(&logs);
        one(&mut array, Op::Read, k as u64 * CHUNK, CHUNK);
        let got = handed(&logs);
        assert_eq!(
            got[m],
            [(Op::Read, k as u64 / 3 * CHUNK, CHUNK)],
            "chunk {k}"
        );
        assert_eq!(count(&logs, Op::Read), 1);
    }
}

/// A full row's write reads nothing and writes every data chunk and the parity; RAID-5 over
/// 5 members (4 data chunks a row).
#[test]
fn a_full_stripe_write_reads_nothing() {
    let (children, logs) = members(5);
    let mut array = parity_array(1, CHUNK, 8, children, None, None, RATE);
    // Row 1: P on member 3, data 0..4 on members 4, 0, 1, 2.
    one(&mut array, Op::Write, 4 * CHUNK, 4 * CHUNK);
    assert_eq!(count(&logs, Op::Read), 0);
    let got = handed(&logs);
    for pieces in &got {
        assert_eq!(pieces, &[(Op::Write, CHUNK, CHUNK)]);
    }
    assert_eq!(counter(&array, "full_stripe_writes"), 1.0);
    assert_eq!(counter(&array, "parity_writes"), 1.0);
    assert_eq!(
        counter(&array, "rmw_writes") + counter(&array, "reconstruct_writes"),
        0.0
    );
}

/// Small writes to a RAID-5 of 5 members (4 data chunks a row) pick the method with fewer
/// reads: one chunk — read-modify-write reads it and P (2), reconstruct-write the other three
/// (3); three chunks — read-modify-write 4, reconstruct-write 1; two chunks — 3 against 2.
#[test]
fn small_writes_choose_the_method_with_fewer_reads() {
    // (chunks written from chunk 0 of row 0, reads, writes, method)
    let cases = [
        (1, 2, 2, "rmw_writes"),
        (3, 1, 4, "reconstruct_writes"),
        (2, 2, 3, "reconstruct_writes"),
    ];
    for (chunks, reads, writes, method) in cases {
        let (children, logs) = members(5);
        let mut array = parity_array(1, CHUNK, 8, children, None, None, RATE);
        one(&mut array, Op::Write, 0, chunks * CHUNK);
        assert_eq!(count(&logs, Op::Read), reads, "{chunks} chunks");
        assert_eq!(count(&logs, Op::Write), writes, "{chunks} chunks");
        assert_eq!(counter(&array, method), 1.0, "{chunks} chunks");
        // Row 0: P on member 4, which is written (and read by read-modify-write) over the
        // chunk range the write spans.
        let p = &handed(&logs)[4];
        assert_eq!(p.last(), Some(&(Op::Write, 0, CHUNK)));
        if method == "rmw_writes" {
            assert_eq!(p[0], (Op::Read, 0, CHUNK));
        } else {
            assert!(p.iter().all(|&(op, _, _)| op == Op::Write));
        }
    }
}

/// A tie goes to reconstruct-write, as in md: a one-chunk write to a RAID-5 of 4 members
/// reads 2 either way (the chunk and P, or the two other data chunks); a RAID-6 of 6 members
/// reads 3 either way (the chunk, P and Q, or the three other data chunks).
#[test]
fn a_tie_goes_to_reconstruct_write() {
    for (parities, n) in [(1, 4), (2, 6)] {
        let (children, logs) = members(n);
        let mut array = parity_array(parities, CHUNK, 8, children, None, None, RATE);
        one(&mut array, Op::Write, 0, CHUNK);
        assert_eq!(counter(&array, "reconstruct_writes"), 1.0, "{n} members");
        assert_eq!(count(&logs, Op::Read), n - parities - 1);
        assert_eq!(count(&logs, Op::Write), 1 + parities);
        assert_eq!(counter(&array, "parity_writes"), parities as f64);
    }
}

/// A write inside one chunk reads and writes only the bytes it covers, the parity over the
/// same range: 1 KiB at byte 1 KiB of chunk 0 on a RAID-5 of 5 (read-modify-write).
#[test]
fn a_partial_chunk_write_touches_only_its_range() {
    let (children, logs) = members(5);
    let mut array = parity_array(1, CHUNK, 8, children, None, None, RATE);
    one(&mut array, Op::Write, KIB, KIB);
    let got = handed(&logs);
    // Row 0: data chunk 0 on member 0, P on member 4.
    assert_eq!(got[0], [(Op::Read, KIB, KIB), (Op::Write, KIB, KIB)]);
    assert_eq!(got[4], [(Op::Read, KIB, KIB), (Op::Write, KIB, KIB)]);
    assert!(got[1..4].iter().all(Vec::is_empty));
}

/// Timing from the members' cost (100 µs + 1 µs/KiB, one piece at a time each): a 4 KiB
/// read-modify-write reads data and P in parallel (104 µs), then writes both (104 µs more):
/// done at 208 µs. A full-row write is one round of writes: 104 µs. A read of two chunks on
/// two members: 104 µs.
#[test]
fn a_small_write_takes_a_read_then_a_write() {
    for (offset, len, finish_us) in [(0, CHUNK, 208), (4 * CHUNK, 4 * CHUNK, 104)] {
        let (children, _) = members(5);
        let mut array = parity_array(1, CHUNK, 8, children, None, None, RATE);
        let c = one(&mut array, Op::Write, offset, len);
        assert_eq!(
            c.finish,
            SimTime(finish_us * 1000),
            "write of {len} at {offset}"
        );
        assert_eq!(c.service_start, SimTime::ZERO);
    }
    let (children, _) = members(5);
    let mut array = parity_array(1, CHUNK, 8, children, None, None, RATE);
    let c = one(&mut array, Op::Read, 0, 2 * CHUNK);
    assert_eq!(c.finish, SimTime(104_000));
}

/// With member 1 failed from the start (RAID-5 of 5), a read of its chunk (row 0, data
/// chunk 1) reads the same range from the four other members and finishes with them
/// (104 µs); a read of a surviving member's chunk reads that member alone.
#[test]
fn a_degraded_read_reads_every_survivor_of_the_row() {
    let (children, logs) = members(5);
    let mut array = parity_array(1, CHUNK, 8, children, None, Some((1, 0)), RATE);
    let c = one(&mut array, Op::Read, CHUNK, CHUNK);
    assert_eq!(c.finish, SimTime(104_000));
    let got = handed(&logs);
    for m in [0, 2, 3, 4] {
        assert_eq!(got[m], [(Op::Read, 0, CHUNK)], "member {m}");
    }
    assert!(got[1].is_empty());
    assert_eq!(counter(&array, "degraded_reads"), 1.0);
    assert_eq!(counter(&array, "failed_children"), 1.0);
    clear(&logs);
    one(&mut array, Op::Read, 2 * CHUNK, CHUNK);
    assert_eq!(count(&logs, Op::Read), 1);
    assert_eq!(counter(&array, "degraded_reads"), 1.0);
}

/// Degraded writes on a RAID-5 of 5 with member 1 missing (row 0: data 0..4 on members 0..4
/// minus P on 4, so data chunk 1 is member 1's):
/// - to the missing chunk: read-modify-write cannot read its old data, so reconstruct-write
///   reads the other three data chunks and writes P only (the data piece is dropped);
/// - to chunk 0: reconstruct-write would need member 1, so read-modify-write reads chunk 0
///   and P and writes both.
#[test]
fn degraded_writes_avoid_the_missing_member() {
    let (children, logs) = members(5);
    let mut array = parity_array(1, CHUNK, 8, children, None, Some((1, 0)), RATE);
    one(&mut array, Op::Write, CHUNK, CHUNK);
    let got = handed(&logs);
    assert_eq!(got[0], [(Op::Read, 0, CHUNK)]);
    assert_eq!(got[2], [(Op::Read, 0, CHUNK)]);
    assert_eq!(got[3], [(Op::Read, 0, CHUNK)]);
    assert_eq!(got[4], [(Op::Write, 0, CHUNK)]);
    assert_eq!(counter(&array, "reconstruct_writes"), 1.0);
    assert_eq!(counter(&array, "degraded_pieces"), 1.0);
    clear(&logs);
    one(&mut array, Op::Write, 0, CHUNK);
    let got = handed(&logs);
    assert_eq!(got[0], [(Op::Read, 0, CHUNK), (Op::Write, 0, CHUNK)]);
    assert_eq!(got[4], [(Op::Read, 0, CHUNK), (Op::Write, 0, CHUNK)]);
    assert_eq!(count(&logs, Op::Read), 2);
    assert_eq!(counter(&array, "rmw_writes"), 1.0);
    assert_eq!(counter(&array, "degraded_row_writes"), 2.0);
}

/// A RAID-6 runs with two members missing (reads of both missing chunks reconstruct from the
/// three survivors); a RAID-5 with two missing has failed and refuses requests.
#[test]
fn raid6_tolerates_two_missing_members_and_raid5_one() {
    let (children, logs) = members(5);
    let failing: Vec<Box<dyn Device>> = children
        .into_iter()
        .enumerate()
        .map(|(i, c)| if i == 2 { fails_after(c, 0) } else { c })
        .collect();
    let mut array = parity_array(2, CHUNK, 8, failing, None, Some((1, 0)), RATE);
    // Row 0: Q on 0, data on 1, 2, 3, P on 4. Chunks 0 and 1 are on members 1 and 2.
    let c = one(&mut array, Op::Read, 0, 2 * CHUNK);
    assert!(c.status.is_ok());
    assert_eq!(counter(&array, "degraded_reads"), 2.0);
    assert_eq!(counter(&array, "failed_children"), 2.0);
    // Each missing chunk is read from the three survivors: members 0, 3 and 4, twice each.
    for m in [0, 3, 4] {
        assert_eq!(handed(&logs)[m], [(Op::Read, 0, CHUNK); 2], "member {m}");
    }

    let (children, _) = members(4);
    let failing: Vec<Box<dyn Device>> = children
        .into_iter()
        .enumerate()
        .map(|(i, c)| if i == 2 { fails_after(c, 0) } else { c })
        .collect();
    let mut array = parity_array(1, CHUNK, 8, failing, None, Some((1, 0)), RATE);
    let r = [
        req(0, Op::Read, 0, 3 * CHUNK, 0),
        req(1, Op::Read, 0, CHUNK, 1_000_000),
    ];
    let run = drive(&mut array, &r);
    assert_eq!(run.completions.len(), 1);
    assert!(
        !run.completions[0].status.is_ok(),
        "a row with two members missing is lost"
    );
    assert_eq!(run.failed_at, Some(1), "the array has failed");
}

/// Trims reach members for whole rows only (parity included), as md discards whole stripes;
/// a flush reaches every member.
#[test]
fn trims_cover_whole_rows_and_flushes_every_member() {
    let (children, logs) = members(4);
    let mut array = parity_array(1, CHUNK, 8, children, None, None, RATE);
    one(&mut array, Op::Trim, 0, 4 * CHUNK);
    assert_eq!(
        handed(&logs).iter().map(Vec::len).collect::<Vec<_>>(),
        [1, 1, 1, 1]
    );
    assert_eq!(handed(&logs)[3], [(Op::Trim, 0, CHUNK)]);
    clear(&logs);
    let c = one(&mut array, Op::Trim, CHUNK, CHUNK);
    assert_eq!(count(&logs, Op::Trim), 0);
    assert_eq!(c.finish, SimTime::ZERO);
    one(&mut array, Op::Flush, 0, 0);
    assert_eq!(count(&logs, Op::Flush), 4);
}
