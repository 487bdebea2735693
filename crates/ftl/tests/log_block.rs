//! The `log-block` (BAST) FTL: conformance on several geometries, seeds and mixes, and
//! hand-computed merges (thesis Figs. 4.2 and 4.3).

use storsim_flash::{FlashOpKind, Geometry};
use storsim_ftl::conformance::{self, Mix};
use storsim_ftl::{log_block, Cause, FlashOp, Ftl, FtlConfig, FtlError};

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

fn build(g: Geometry, params: log_block::Params) -> Box<dyn Ftl> {
    FtlConfig::new(params).build(g, 1_000_000).unwrap()
}

fn with_logs(log_blocks: u32, partial_merge: bool) -> log_block::Params {
    log_block::Params {
        log_blocks: Some(log_blocks),
        partial_merge,
    }
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

fn write_all(ftl: &mut dyn Ftl, lpns: &[u64]) -> Vec<FlashOp> {
    let mut all = Vec::new();
    let mut ops = Vec::new();
    for &lpn in lpns {
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
fn log_block_passes_conformance() {
    let geometries = [
        geometry(1, 8, 1),
        geometry(1, 10, 2),
        geometry(1, 16, 4),
        geometry(2, 12, 8),
        geometry(2, 16, 16),
    ];
    let params = [
        log_block::Params::default(),
        with_logs(1, false),
        with_logs(4, true),
    ];
    for g in geometries {
        for p in &params {
            for seed in [1, 2, 3] {
                for mix in mixes() {
                    let mut ftl = build(g, p.clone());
                    conformance::check(ftl.as_mut(), seed, mix)
                        .unwrap_or_else(|e| panic!("{e} (geometry {g:?}, {p:?}, mix {mix:?})"));
                }
            }
        }
    }
}

#[test]
fn default_log_space_is_three_percent_of_the_data_blocks() {
    // 2 channels x 2 dies x 64 blocks = 256 blocks: 247 data blocks need ceil(7.41) = 8 log
    // blocks, and 247 + 8 + 1 spare = 256.
    let ftl = build(geometry(2, 64, 8), log_block::Params::default());
    assert_eq!(ftl.logical_pages(), 247 * 8);
    assert_eq!(counter(ftl.as_ref(), "log_blocks"), 8.0);
    // An explicit count: 32 blocks - 3 logs - 1 spare.
    let ftl = build(geometry(1, 16, 8), with_logs(3, false));
    assert_eq!(ftl.logical_pages(), 28 * 8);
    for bad in [Some(0), Some(31)] {
        let r = FtlConfig::new(log_block::Params {
            log_blocks: bad,
            partial_merge: false,
        })
        .build(geometry(1, 16, 8), 100);
        assert!(matches!(r, Err(FtlError::Rejected { .. })), "{bad:?}");
    }
}

#[test]
fn a_sequential_fill_of_one_block_ends_in_a_switch_merge() {
    let ppb = 8u64;
    let mut ftl = build(geometry(1, 16, ppb as u32), with_logs(2, false));
    // Logical block 2, pages in order: every write goes to its log block; the last one fills
    // it, and the log block becomes the data block with nothing copied or erased (the logical
    // block had no data block yet).
    let ops = write_all(ftl.as_mut(), &(2 * ppb..3 * ppb).collect::<Vec<_>>());
    assert_eq!(ops.len(), ppb as usize);
    assert_eq!(count(&ops, FlashOpKind::Program, Cause::Host), ppb as usize);
    assert_eq!(counter(ftl.as_ref(), "switch_merges"), 1.0);
    assert_eq!(counter(ftl.as_ref(), "full_merges"), 0.0);
    assert_eq!(counter(ftl.as_ref(), "merge_copied_pages"), 0.0);
    assert_eq!(counter(ftl.as_ref(), "log_blocks_in_use"), 0.0);
    assert_eq!(ftl.nand().total_erases(), 0);
    // The data stayed where the host wrote it.
    let first = ftl.lookup(2 * ppb).unwrap();
    for k in 0..ppb {
        assert_eq!(ftl.lookup(2 * ppb + k).unwrap().0, first.0 + k as u32);
    }
    // Rewriting it in order: another switch merge, which now erases the old data block.
    let ops = write_all(ftl.as_mut(), &(2 * ppb..3 * ppb).collect::<Vec<_>>());
    assert_eq!(counter(ftl.as_ref(), "switch_merges"), 2.0);
    assert_eq!(counter(ftl.as_ref(), "merge_copied_pages"), 0.0);
    assert_eq!(count(&ops, FlashOpKind::Erase, Cause::Merge), 1);
    assert_eq!(ftl.nand().total_erases(), 1);
}

#[test]
fn random_overwrites_cost_full_merges_with_hand_counted_copies() {
    // Four pages per block, one log block.
    let mut ftl = build(geometry(1, 16, 4), with_logs(1, false));
    // Offsets 2, 0, 2, 1 of block 0 fill the log out of order: a full merge copies the latest
    // copies of offsets 0, 1 and 2 (3 pages) and erases only the log block (no data block yet).
    write_all(ftl.as_mut(), &[2, 0, 2, 1]);
    assert_eq!(counter(ftl.as_ref(), "full_merges"), 1.0);
    assert_eq!(counter(ftl.as_ref(), "merge_copied_pages"), 3.0);
    assert_eq!(ftl.nand().total_erases(), 1);
    // Offsets 3, 3, 0, 1: the next full merge copies offsets 0, 1, 3 from the log and 2 from
    // the data block (4 pages), then erases the data block and the log block.
    let ops = write_all(ftl.as_mut(), &[3, 3, 0, 1]);
    assert_eq!(counter(ftl.as_ref(), "full_merges"), 2.0);
    assert_eq!(counter(ftl.as_ref(), "merge_copied_pages"), 7.0);
    assert_eq!(count(&ops, FlashOpKind::Program, Cause::Merge), 4);
    assert_eq!(count(&ops, FlashOpKind::Read, Cause::Merge), 4);
    assert_eq!(count(&ops, FlashOpKind::Erase, Cause::Merge), 2);
    assert_eq!(ftl.nand().total_erases(), 3);
    assert_eq!(counter(ftl.as_ref(), "switch_merges"), 0.0);
    assert_eq!(ftl.valid_data_pages(), 4);

    // Block 1 needs a log block while block 0's holds one page: that log is merged first.
    // Offset 0 of block 0 alone is "in order" but short, so without partial merges it is a
    // full merge: 4 copies, 2 erases.
    write_all(ftl.as_mut(), &[0, 5]);
    assert_eq!(counter(ftl.as_ref(), "full_merges"), 3.0);
    assert_eq!(counter(ftl.as_ref(), "merge_copied_pages"), 11.0);
    assert_eq!(ftl.nand().total_erases(), 5);
}

#[test]
fn a_short_in_order_log_gets_a_partial_merge_when_enabled() {
    let mut ftl = build(geometry(1, 16, 4), with_logs(1, true));
    // Block 0 gets a data block through a switch merge, then offsets 0 and 1 are rewritten in
    // order. Block 1's first write takes the only log block: block 0's log is merged by
    // copying offsets 2 and 3 into it from the data block (2 copies), erasing the data block.
    write_all(ftl.as_mut(), &[0, 1, 2, 3, 0, 1]);
    let ops = write_all(ftl.as_mut(), &[4]);
    assert_eq!(counter(ftl.as_ref(), "switch_merges"), 1.0);
    assert_eq!(counter(ftl.as_ref(), "partial_merges"), 1.0);
    assert_eq!(counter(ftl.as_ref(), "full_merges"), 0.0);
    assert_eq!(counter(ftl.as_ref(), "merge_copied_pages"), 2.0);
    assert_eq!(count(&ops, FlashOpKind::Erase, Cause::Merge), 1);
    assert_eq!(ftl.nand().total_erases(), 1);
    assert_eq!(ftl.valid_data_pages(), 5);
}

#[test]
fn trimmed_pages_are_not_copied_by_merges() {
    let mut ftl = build(geometry(1, 16, 4), with_logs(1, false));
    let mut ops = Vec::new();
    write_all(ftl.as_mut(), &[1, 0, 2]);
    ftl.trim(0, &mut ops).unwrap();
    ftl.trim(1, &mut ops).unwrap();
    assert!(ops.is_empty());
    assert_eq!(ftl.lookup(0), None);
    // The fourth write fills the log out of order: only offsets 2 and 3 are live.
    write_all(ftl.as_mut(), &[3]);
    assert_eq!(counter(ftl.as_ref(), "merge_copied_pages"), 2.0);
    assert_eq!(ftl.valid_data_pages(), 2);
    ops.clear();
    ftl.read(1, &mut ops).unwrap();
    assert!(ops.is_empty(), "a trimmed page needs no flash read");
}

#[test]
fn wearing_out_is_an_error_not_a_panic() {
    let mut ftl = FtlConfig::new(with_logs(2, true))
        .build(geometry(1, 8, 4), 4)
        .unwrap();
    let mut ops = Vec::new();
    let mut rng = storsim_core::Prng::new(5);
    let pages = ftl.logical_pages();
    let error = (0..100_000)
        .find_map(|_| {
            ops.clear();
            ftl.write(rng.below(pages), &mut ops).err()
        })
        .expect("a 16-block device with endurance 4 wears out");
    assert!(matches!(error, FtlError::WornOut { .. }), "{error}");
    for lpn in 0..pages {
        let _ = ftl.write(lpn, &mut ops);
        let _ = ftl.read(lpn, &mut ops);
        let _ = ftl.trim(lpn, &mut ops);
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
    FtlConfig::new(log_block::Params {
        log_blocks: None,
        partial_merge: true,
    })
}
