//! Several threads at once: disjoint ranges that share edge blocks, with flushes and readers
//! running alongside, must all end up exactly as each thread wrote them.

mod common;

use common::{seed, Rng, TempDir};
use std::sync::Arc;
use std::thread;
use storsim_store::{Backing, Store, BLOCK_BYTES};

const THREADS: u64 = 4;
/// Each thread's range is not block-aligned, so neighbouring threads write different bytes of
/// the same blocks and may race to allocate them.
const RANGE: u64 = 300 * 1024 + 123;
const SIZE: u64 = THREADS * RANGE + 1000;

fn run(backing: &Backing, seed: u64) {
    let store = Arc::new(Store::open(backing, SIZE).unwrap());
    let mut handles = Vec::new();
    for t in 0..THREADS {
        let store = Arc::clone(&store);
        handles.push(thread::spawn(move || {
            let base = 500 + t * RANGE;
            let mut rng = Rng::new(seed ^ (t + 1).wrapping_mul(0x9e37_79b9));
            let mut shadow = vec![0u8; RANGE as usize];
            for step in 0..400 {
                let len = 1 + rng.below(3 * BLOCK_BYTES);
                let off = rng.below(RANGE - len + 1);
                match rng.below(10) {
                    0..=5 => {
                        let mut data = vec![0u8; len as usize];
                        rng.fill(&mut data);
                        store.write(base + off, &data).unwrap();
                        shadow[off as usize..(off + len) as usize].copy_from_slice(&data);
                    }
                    6 => {
                        store.trim(base + off, len).unwrap();
                        shadow[off as usize..(off + len) as usize].fill(0);
                    }
                    7 => {
                        store.write_zeroes(base + off, len).unwrap();
                        shadow[off as usize..(off + len) as usize].fill(0);
                    }
                    8 => store.flush().unwrap(),
                    _ => {
                        let mut buf = vec![0u8; len as usize];
                        store.read(base + off, &mut buf).unwrap();
                        assert!(
                            buf[..] == shadow[off as usize..(off + len) as usize],
                            "thread {t} step {step}: read differs"
                        );
                    }
                }
            }
            (base, shadow)
        }));
    }
    // A reader sweeping the whole device meanwhile must never fail or see torn bookkeeping.
    let sweeper = {
        let store = Arc::clone(&store);
        thread::spawn(move || {
            let mut buf = vec![0u8; SIZE as usize];
            for _ in 0..20 {
                store.read(0, &mut buf).unwrap();
            }
        })
    };
    let results: Vec<(u64, Vec<u8>)> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    sweeper.join().unwrap();

    let check = |store: &Store, what: &str| {
        let mut all = vec![0u8; SIZE as usize];
        store.read(0, &mut all).unwrap();
        assert!(
            all[..500].iter().all(|&b| b == 0),
            "{what}: bytes before the ranges"
        );
        for (t, (base, shadow)) in results.iter().enumerate() {
            let got = &all[*base as usize..*base as usize + RANGE as usize];
            let first = got.iter().zip(shadow).position(|(a, b)| a != b);
            assert_eq!(
                first, None,
                "{what}: thread {t}'s range, first differing byte"
            );
        }
        assert!(
            all[(500 + THREADS * RANGE) as usize..]
                .iter()
                .all(|&b| b == 0),
            "{what}: bytes after the ranges"
        );
    };
    check(&store, &format!("{backing:?} seed {seed}"));
    if let Backing::File(_) = backing {
        store.flush().unwrap();
        drop(store);
        let store = Store::open(backing, SIZE).unwrap();
        check(&store, &format!("{backing:?} seed {seed} after reopen"));
    }
}

#[test]
fn four_memory_writers_on_disjoint_ranges() {
    let seed = seed("four_memory_writers_on_disjoint_ranges", 0xc0c0_0001);
    for i in 0..3 {
        run(&Backing::Memory, seed + i);
    }
}

#[test]
fn four_file_writers_on_disjoint_ranges() {
    let seed = seed("four_file_writers_on_disjoint_ranges", 0xc0c0_0002);
    for i in 0..3 {
        let dir = TempDir::new("concurrent");
        run(&Backing::File(dir.join("disk.img")), seed + i);
    }
}

#[test]
fn four_threads_on_the_none_backing() {
    let store = Arc::new(Store::open(&Backing::None, SIZE).unwrap());
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let store = Arc::clone(&store);
            thread::spawn(move || {
                let base = t * RANGE;
                store.write(base, &[1u8; 9000]).unwrap();
                let mut buf = [9u8; 9000];
                store.read(base, &mut buf).unwrap();
                assert!(buf.iter().all(|&b| b == 0));
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(store.allocated_bytes(), 0);
}

/// Four threads each write their own quarter of the same, not yet allocated blocks, starting
/// together, so they race to allocate every block. A block allocated twice would lose the
/// quarters written into the first allocation.
fn race_to_allocate(backing: &Backing) {
    const ROUNDS: u64 = 1000;
    const BLOCKS_PER_ROUND: u64 = 8;
    let quarter = BLOCK_BYTES / 4;
    let size = ROUNDS * BLOCKS_PER_ROUND * BLOCK_BYTES;
    let store = Arc::new(Store::open(backing, size).unwrap());
    let barrier = Arc::new(std::sync::Barrier::new(4));
    let handles: Vec<_> = (0..4u64)
        .map(|t| {
            let store = Arc::clone(&store);
            let barrier = Arc::clone(&barrier);
            thread::spawn(move || {
                for round in 0..ROUNDS {
                    barrier.wait();
                    for i in 0..BLOCKS_PER_ROUND {
                        // Threads walk the round's blocks in different orders to vary the races.
                        let b = round * BLOCKS_PER_ROUND + (i + t * 3) % BLOCKS_PER_ROUND;
                        let off = b * BLOCK_BYTES + t * quarter;
                        store
                            .write(off, &vec![t as u8 + 1; quarter as usize])
                            .unwrap();
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let mut buf = vec![0u8; BLOCK_BYTES as usize];
    for b in 0..ROUNDS * BLOCKS_PER_ROUND {
        store.read(b * BLOCK_BYTES, &mut buf).unwrap();
        for t in 0..4u64 {
            let q = &buf[(t * quarter) as usize..((t + 1) * quarter) as usize];
            assert!(
                q.iter().all(|&x| x == t as u8 + 1),
                "{backing:?}: block {b} lost thread {t}'s quarter"
            );
        }
    }
    assert_eq!(store.allocated_bytes(), size);
}

#[test]
fn racing_allocations_of_the_same_memory_blocks() {
    race_to_allocate(&Backing::Memory);
}

#[test]
fn racing_allocations_of_the_same_file_blocks() {
    let dir = TempDir::new("race");
    race_to_allocate(&Backing::File(dir.join("disk.img")));
}
