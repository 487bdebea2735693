//! Random unaligned operations checked against a shadow `Vec<u8>` model, for every backing.

mod common;

use common::{seed, Rng, TempDir};
use std::collections::BTreeSet;
use storsim_store::{Backing, Store, BLOCK_BYTES};

/// A device size that is not a multiple of the block size and spans several 64 KiB stripes.
const SIZE: u64 = 5 * 64 * 1024 + 3 * BLOCK_BYTES + 777;

/// What the store should hold: the bytes, and which blocks hold storage.
struct Shadow {
    bytes: Vec<u8>,
    allocated: BTreeSet<u64>,
}

impl Shadow {
    fn write(&mut self, offset: u64, data: &[u8]) {
        self.bytes[offset as usize..offset as usize + data.len()].copy_from_slice(data);
        if !data.is_empty() {
            let last = (offset + data.len() as u64 - 1) / BLOCK_BYTES;
            self.allocated.extend(offset / BLOCK_BYTES..=last);
        }
    }

    /// Whole blocks (the partial last block of the device counts as whole when covered to the
    /// device end) are released; partial ones keep their storage.
    fn zero(&mut self, offset: u64, len: u64) {
        self.bytes[offset as usize..(offset + len) as usize].fill(0);
        let end = offset + len;
        let first_whole = offset.div_ceil(BLOCK_BYTES);
        let end_whole = if end == SIZE {
            SIZE.div_ceil(BLOCK_BYTES)
        } else {
            end / BLOCK_BYTES
        };
        for b in first_whole..end_whole {
            self.allocated.remove(&b);
        }
    }
}

/// A random range: mostly small and unaligned, sometimes 512-aligned, sometimes large.
fn range(rng: &mut Rng) -> (u64, u64) {
    let len = match rng.below(4) {
        0 => 1 + rng.below(64),
        1 => 512 * (1 + rng.below(16)),
        2 => 1 + rng.below(3 * BLOCK_BYTES),
        _ => 1 + rng.below(20 * BLOCK_BYTES),
    }
    .min(SIZE);
    let mut offset = rng.below(SIZE - len + 1);
    match rng.below(12) {
        0..=3 => offset -= offset % 512,
        // The device's edges, where the partial last block lives, get their share of ranges.
        4 => offset = SIZE - len,
        5 => offset = 0,
        _ => {}
    }
    (offset, len)
}

fn check_all(store: &Store, shadow: &Shadow, none: bool, what: &str) {
    let mut buf = vec![0xa5u8; SIZE as usize];
    store.read(0, &mut buf).unwrap();
    if none {
        assert!(
            buf.iter().all(|&b| b == 0),
            "{what}: none backing read non-zero"
        );
    } else {
        let first = buf.iter().zip(&shadow.bytes).position(|(a, b)| a != b);
        assert_eq!(first, None, "{what}: first differing byte");
    }
}

fn run(backing: &Backing, seed: u64, ops: usize) {
    let none = *backing == Backing::None;
    let mut rng = Rng::new(seed);
    let mut store = Some(Store::open(backing, SIZE).unwrap());
    let mut shadow = Shadow {
        bytes: vec![0; SIZE as usize],
        allocated: BTreeSet::new(),
    };
    for step in 0..ops {
        let s = store.as_ref().unwrap();
        let what = format!("{backing:?} seed {seed} step {step}");
        let (offset, len) = range(&mut rng);
        match rng.below(20) {
            0..=7 => {
                let mut data = vec![0u8; len as usize];
                rng.fill(&mut data);
                s.write(offset, &data).unwrap();
                shadow.write(offset, &data);
            }
            8..=12 => {
                let mut buf = vec![0x5au8; len as usize];
                s.read(offset, &mut buf).unwrap();
                let want = if none {
                    vec![0; len as usize]
                } else {
                    shadow.bytes[offset as usize..(offset + len) as usize].to_vec()
                };
                assert!(buf == want, "{what}: read {len} bytes at {offset} differs");
            }
            13..=14 => {
                s.write_zeroes(offset, len).unwrap();
                shadow.zero(offset, len);
            }
            15..=16 => {
                s.trim(offset, len).unwrap();
                shadow.zero(offset, len);
            }
            17 => s.flush().unwrap(),
            18 => check_all(s, &shadow, none, &what),
            _ => {
                // Reopening a file store must find everything again; for the others a reopen
                // starts empty, so only files are reopened.
                if matches!(backing, Backing::File(_)) {
                    if rng.below(2) == 0 {
                        s.flush().unwrap();
                    }
                    drop(store.take());
                    store = Some(Store::open(backing, SIZE).unwrap());
                    check_all(store.as_ref().unwrap(), &shadow, none, &what);
                }
            }
        }
        let want_alloc = if none {
            0
        } else {
            shadow.allocated.len() as u64 * BLOCK_BYTES
        };
        assert_eq!(
            store.as_ref().unwrap().allocated_bytes(),
            want_alloc,
            "{what}: allocated bytes"
        );
    }
    check_all(store.as_ref().unwrap(), &shadow, none, "final");
}

#[test]
fn memory_matches_the_shadow_model() {
    let seed = seed("memory_matches_the_shadow_model", 0x5eed_0001);
    run(&Backing::Memory, seed, 3000);
}

#[test]
fn none_reads_zeros_and_holds_nothing() {
    let seed = seed("none_reads_zeros_and_holds_nothing", 0x5eed_0002);
    run(&Backing::None, seed, 1000);
}

#[test]
fn file_matches_the_shadow_model_across_reopens() {
    let seed = seed("file_matches_the_shadow_model_across_reopens", 0x5eed_0003);
    let dir = TempDir::new("model");
    run(&Backing::File(dir.join("disk.img")), seed, 2000);
}

#[test]
fn several_seeds_on_memory_and_file() {
    let base = seed("several_seeds_on_memory_and_file", 0x5eed_1000);
    for i in 0..4 {
        run(&Backing::Memory, base + i, 500);
        let dir = TempDir::new("model-seeds");
        run(&Backing::File(dir.join("disk.img")), base + i, 500);
    }
}
