//! The `fast` FTL: conformance on several geometries, seeds and mixes, hand-computed switch,
//! partial and full merges, and its cost on random writes.

use storsim_core::Prng;
use storsim_flash::{FlashOpKind, Geometry};
use storsim_ftl::conformance::{self, Mix};
use storsim_ftl::{block, fast, log_block, Cause, FlashOp, Ftl, FtlConfig, FtlError};

fn geometry(channels: u32, blocks_per_plane: u32, pages_per_block: u32) -> Geometry {
    Geometry {
        channels,
        chips_per_channel: 1,
        dies_per_chip: 2,
        planes_per_die: 1,
        blocks_per_plane,
        pages_per_block,
        page_bytes: 4096,
        oob_bytes: 128,
    }
}

fn build(g: Geometry, log_fraction: f64) -> Box<dyn Ftl> {
    FtlConfig::new(fast::Params { log_fraction })
        .build(g, 1_000_000)
        .unwrap()
}

fn counter(ftl: &dyn Ftl, name: &str) -> f64 {
    ftl.counters()
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no counter {name}"))
        .value
}

fn count(ops: &[FlashOp], kind: FlashOpKind, cause: Cause) -> usize {
    ops.iter()
        .filter(|o| o.kind == kind && o.cause == cause)
        .count()
}

fn write_all(ftl: &mut dyn Ftl, lpns: impl IntoIterator<Item = u64>) -> Vec<FlashOp> {
    let mut all = Vec::new();
    let mut ops = Vec::new();
    for lpn in lpns {
        ops.clear();
        ftl.write(lpn, &mut ops).unwrap();
        all.extend_from_slice(&ops);
    }
    all
}

fn mixes() -> [Mix; 3] {
    let base = Mix {
        steps: 15_000,
        ..Mix::default()
    };
    [
        Mix {
            sequential_percent: 90,
            ..base
        },
        Mix {
            sequential_percent: 5,
            span_fraction: 0.3,
            ..base
        },
        Mix {
            sequential_percent: 50,
            write_percent: 50,
            read_percent: 30,
            span_fraction: 0.7,
            ..base
        },
    ]
}

#[test]
fn fast_passes_conformance() {
    let geometries = [
        geometry(1, 8, 1),
        geometry(1, 10, 2),
        geometry(1, 16, 4),
        geometry(2, 12, 8),
        geometry(2, 16, 16),
    ];
    for g in geometries {
        for log_fraction in [0.03, 0.25] {
            for seed in [1, 2, 3] {
                for mix in mixes() {
                    let mut ftl = build(g, log_fraction);
                    conformance::check(ftl.as_mut(), seed, mix).unwrap_or_else(|e| {
                        panic!("{e} (geometry {g:?}, log_fraction {log_fraction}, mix {mix:?})")
                    });
                }
            }
        }
    }
}

#[test]
fn default_log_space_is_three_percent_of_the_active_region() {
    // 2 x 2 x 128 = 512 blocks: 496 data blocks take ceil(14.88) = 15 log blocks (1 SW + 14
    // RW) and one spare, 512 in all; 497 data blocks would need 15 + 1 more than there are.
    let ftl = build(geometry(2, 128, 8), 0.03);
    assert_eq!(ftl.logical_pages(), 496 * 8);
    assert_eq!(counter(ftl.as_ref(), "log_blocks"), 15.0);
    // Small devices still get the SW log block and one RW log block.
    let ftl = build(geometry(1, 8, 4), 0.03);
    assert_eq!(counter(ftl.as_ref(), "log_blocks"), 2.0);
    assert_eq!(ftl.logical_pages(), (16 - 3) * 4);
    for bad in [-0.1, 1.5, f64::NAN] {
        let r = FtlConfig::new(fast::Params { log_fraction: bad }).build(geometry(1, 8, 4), 10);
        assert!(matches!(r, Err(FtlError::Rejected { .. })), "{bad}");
    }
}

#[test]
fn sequential_rewrites_are_switch_merges() {
    let ppb = 8u64;
    let mut ftl = build(geometry(1, 16, ppb as u32), 0.03);
    let pages = ftl.logical_pages();
    // The first pass finds every page erased: all in place, no log block, no erase.
    let ops = write_all(ftl.as_mut(), 0..pages);
    assert_eq!(ops.len() as u64, pages);
    assert_eq!(ftl.nand().total_erases(), 0);
    // The second pass collides at offset 0 of every block: the SW log block takes the run and
    // becomes the data block when full; the old data block is erased, nothing is copied.
    write_all(ftl.as_mut(), 0..pages);
    let blocks = pages / ppb;
    assert_eq!(counter(ftl.as_ref(), "switch_merges"), blocks as f64);
    assert_eq!(counter(ftl.as_ref(), "partial_merges"), 0.0);
    assert_eq!(counter(ftl.as_ref(), "full_merges"), 0.0);
    assert_eq!(counter(ftl.as_ref(), "merge_copied_pages"), 0.0);
    assert_eq!(ftl.nand().total_erases(), blocks);
}

#[test]
fn a_broken_sequential_run_gets_a_partial_merge() {
    let mut ftl = build(geometry(1, 8, 4), 0.03);
    // Block 0 in place, then offsets 0 and 1 again: the SW log block holds them in order.
    write_all(ftl.as_mut(), [0, 1, 2, 3, 0, 1]);
    assert_eq!(ftl.nand().total_erases(), 0);
    // A new run at offset 0 of block 1 (after filling it in place) closes the SW log block of
    // block 0: offsets 2 and 3 are copied into it from the data block, which is erased.
    write_all(ftl.as_mut(), [4, 5, 6, 7]);
    let ops = write_all(ftl.as_mut(), [4]);
    assert_eq!(counter(ftl.as_ref(), "partial_merges"), 1.0);
    assert_eq!(counter(ftl.as_ref(), "merge_copied_pages"), 2.0);
    assert_eq!(count(&ops, FlashOpKind::Program, Cause::Merge), 2);
    assert_eq!(count(&ops, FlashOpKind::Erase, Cause::Merge), 1);
    assert_eq!(ftl.nand().total_erases(), 1);
    assert_eq!(ftl.valid_data_pages(), 8);
}

#[test]
fn reclaiming_a_random_log_block_full_merges_every_block_in_it() {
    // 16 blocks of 4 pages: 13 data blocks, the SW log block, one RW log block, one spare.
    let mut ftl = build(geometry(1, 8, 4), 0.03);
    write_all(ftl.as_mut(), 0..8);
    // Non-sequential overwrites of blocks 0 and 1 fill the RW log block: 0:1, 1:2, 0:3, 1:1.
    write_all(ftl.as_mut(), [1, 6, 3, 5]);
    assert_eq!(ftl.nand().total_erases(), 0);
    // The next one needs a fresh RW log block, so the full one is reclaimed: block 0 gets a
    // full merge (4 copies: offsets 0 and 2 from the data block, 1 and 3 from the log), then
    // block 1 (4 copies); each old data block is erased, then the log block: 8 copies, 3
    // erases. The RW log's later pages of blocks 0 and 1 were moved by those merges already.
    let ops = write_all(ftl.as_mut(), [2]);
    assert_eq!(counter(ftl.as_ref(), "full_merges"), 2.0);
    assert_eq!(counter(ftl.as_ref(), "rw_log_merges"), 1.0);
    assert_eq!(counter(ftl.as_ref(), "merge_copied_pages"), 8.0);
    assert_eq!(count(&ops, FlashOpKind::Read, Cause::Merge), 8);
    assert_eq!(count(&ops, FlashOpKind::Program, Cause::Merge), 8);
    assert_eq!(count(&ops, FlashOpKind::Erase, Cause::Merge), 3);
    assert_eq!(count(&ops, FlashOpKind::Program, Cause::Host), 1);
    assert_eq!(ops.last().unwrap().kind, FlashOpKind::Program);
    assert_eq!(ftl.nand().total_erases(), 3);
    assert_eq!(ftl.valid_data_pages(), 8);
}

/// Writes `n` uniformly random pages over the whole logical space after a sequential fill;
/// returns the erases and host writes of the random phase.
fn random_phase(ftl: &mut dyn Ftl, seed: u64, n: u64) -> (u64, u64) {
    let pages = ftl.logical_pages();
    write_all(ftl, 0..pages);
    let before = ftl.nand().total_erases();
    let mut rng = Prng::new(seed);
    let mut ops = Vec::new();
    for _ in 0..n {
        ops.clear();
        ftl.write(rng.below(pages), &mut ops)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    }
    (ftl.nand().total_erases() - before, n)
}

#[test]
fn random_writes_erase_more_than_sequential_writes() {
    let g = geometry(2, 32, 16);
    let mut seq = build(g, 0.03);
    let pages = seq.logical_pages();
    write_all(seq.as_mut(), 0..pages);
    let before = seq.nand().total_erases();
    write_all(seq.as_mut(), (0..4 * pages).map(|i| i % pages));
    let sequential = seq.nand().total_erases() - before;
    let mut rnd = build(g, 0.03);
    let (random, _) = random_phase(rnd.as_mut(), 7, 4 * pages);
    // Sequential rewrites: one switch merge (one erase) per block written.
    assert_eq!(sequential, 4 * pages / 16);
    assert!(
        random > 4 * sequential,
        "random {random}, sequential {sequential}"
    );
}

#[test]
fn random_4k_writes_cost_fast_far_more_erases_than_the_block_level_minimum() {
    // 2 channels x 2 dies x 256 blocks of 64 pages of 4 KiB (256 MiB raw), default log space.
    let ppb = 64u64;
    let g = geometry(2, 256, ppb as u32);
    for seed in [1u64, 2] {
        let mut ftl = build(g, 0.03);
        let writes = 2 * ftl.logical_pages();
        let (erases, host) = random_phase(ftl.as_mut(), seed, writes);
        // No FTL can program more pages than it erased plus what was erased to begin with, so
        // any FTL, even an ideal page-mapped one, needs at least this many erases for the
        // random phase (every page programmed once per host write, none copied).
        let minimum = host / ppb;
        let full = counter(ftl.as_ref(), "full_merges");
        let copied = counter(ftl.as_ref(), "merge_copied_pages");
        println!(
            "seed {seed}: {host} random writes: {erases} erases ({:.1} x the minimum {minimum}), \
             {full} full merges, {copied} pages copied (WAF {:.1})",
            erases as f64 / minimum as f64,
            (host as f64 + copied) / host as f64
        );
        assert!(
            erases > 20 * minimum,
            "seed {seed}: FAST erased {erases}, the minimum is {minimum}"
        );
    }
    // The other block-mapped FTLs on the same input, for the record.
    for config in [
        FtlConfig::new(log_block::Params::default()),
        FtlConfig::new(block::Params::default()),
    ] {
        let mut ftl = config.build(g, 1_000_000).unwrap();
        let writes = 2 * ftl.logical_pages();
        let (erases, host) = random_phase(ftl.as_mut(), 1, writes);
        println!(
            "{}, seed 1: {host} random writes: {erases} erases, {} pages copied",
            ftl.name(),
            counter(ftl.as_ref(), "merge_copied_pages")
        );
    }
}

#[test]
fn no_call_sequence_panics_or_breaks_an_invariant() {
    let tiny = conformance::TinyDevices {
        built: &GEOMETRIES_BUILT,
        refused: &GEOMETRIES_REFUSED,
        refusal: &REFUSAL,
    };
    conformance::check_tiny_devices(
        &|blocks_per_plane, pages_per_block| geometry(1, blocks_per_plane, pages_per_block),
        &|g, endurance| config().build(g, endurance),
        tiny,
    )
    .unwrap_or_else(|e| panic!("{e}"));
}

/// The tiny geometries (blocks per plane, pages per block) the FTL builds on.
const GEOMETRIES_BUILT: [(u32, u32); 3] = [(2, 1), (3, 2), (8, 4)];
/// Geometries too small for the FTL (two blocks in all), and words its refusal must say.
const GEOMETRIES_REFUSED: [(u32, u32); 1] = [(1, 1)];
const REFUSAL: [&str; 2] = ["2 blocks cannot hold one data block", "a spare"];

fn config() -> FtlConfig {
    FtlConfig::new(fast::Params { log_fraction: 0.03 })
}
