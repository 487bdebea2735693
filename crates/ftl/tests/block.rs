//! The `block` FTL: conformance on several geometries, seeds and mixes, and hand-computed
//! operation counts.

use storsim_flash::{FlashOpKind, Geometry};
use storsim_ftl::conformance::{self, Mix};
use storsim_ftl::{block, Cause, FlashOp, Ftl, FtlConfig, FtlError};

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

fn build(g: Geometry, params: block::Params) -> Box<dyn Ftl> {
    FtlConfig::new(params).build(g, 1_000_000).unwrap()
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
            sequential_percent: 30,
            write_percent: 50,
            read_percent: 30,
            ..base
        },
    ]
}

#[test]
fn block_passes_conformance() {
    let geometries = [
        geometry(1, 8, 1),
        geometry(1, 10, 2),
        geometry(1, 16, 4),
        geometry(2, 12, 8),
        geometry(2, 8, 16),
    ];
    for g in geometries {
        for seed in [1, 2, 3] {
            for mix in mixes() {
                let mut ftl = build(g, block::Params::default());
                let report = conformance::check(ftl.as_mut(), seed, mix)
                    .unwrap_or_else(|e| panic!("{e} (geometry {g:?}, mix {mix:?})"));
                assert!(
                    report.total_erases() > 0,
                    "seed {seed}: no update copied a block"
                );
            }
        }
    }
}

#[test]
fn over_provisioning_sets_the_logical_space() {
    // 32 blocks of 8 pages; 7 % of 32 is 2.24, rounded up to 3 spare blocks.
    let ftl = build(geometry(1, 16, 8), block::Params::default());
    assert_eq!(ftl.logical_pages(), (32 - 3) * 8);
    let ftl = build(
        geometry(1, 16, 8),
        block::Params {
            over_provisioning_fraction: 0.0,
        },
    );
    assert_eq!(
        ftl.logical_pages(),
        (32 - 1) * 8,
        "one spare block at least"
    );
    for bad in [1.0, -0.1, f64::NAN] {
        let r = FtlConfig::new(block::Params {
            over_provisioning_fraction: bad,
        })
        .build(geometry(1, 16, 8), 100);
        assert!(matches!(r, Err(FtlError::Rejected { .. })), "{bad}");
    }
}

#[test]
fn an_update_of_a_full_block_copies_the_other_pages() {
    let ppb = 8;
    let mut ftl = build(geometry(1, 16, ppb), block::Params::default());
    let mut ops = Vec::new();
    // Filling logical block 1 programs its pages in place: one host program each, nothing else.
    for lpn in ppb as u64..2 * ppb as u64 {
        ops.clear();
        ftl.write(lpn, &mut ops).unwrap();
        assert_eq!(ops.len(), 1);
        assert_eq!(count(&ops, FlashOpKind::Program, Cause::Host), 1);
    }
    // Rewriting page 3 of it: 7 reads + 7 copies of the other pages, the new page, one erase.
    ops.clear();
    ftl.write(ppb as u64 + 3, &mut ops).unwrap();
    let copies = (ppb - 1) as usize;
    assert_eq!(count(&ops, FlashOpKind::Read, Cause::Merge), copies);
    assert_eq!(count(&ops, FlashOpKind::Program, Cause::Merge), copies);
    assert_eq!(count(&ops, FlashOpKind::Program, Cause::Host), 1);
    assert_eq!(count(&ops, FlashOpKind::Erase, Cause::Merge), 1);
    assert_eq!(ops.len(), 2 * copies + 2);
    assert_eq!(ops.last().unwrap().kind, FlashOpKind::Erase);
    assert_eq!(counter(ftl.as_ref(), "block_merges"), 1.0);
    assert_eq!(counter(ftl.as_ref(), "merge_copied_pages"), copies as f64);
    assert_eq!(ftl.nand().total_erases(), 1);

    // With two pages trimmed, the next update copies only the five other valid pages.
    ftl.trim(ppb as u64, &mut ops).unwrap();
    ftl.trim(ppb as u64 + 1, &mut ops).unwrap();
    ops.clear();
    ftl.write(ppb as u64 + 3, &mut ops).unwrap();
    assert_eq!(count(&ops, FlashOpKind::Program, Cause::Merge), copies - 2);
    assert_eq!(ftl.valid_data_pages(), ppb as u64 - 2);
}

#[test]
fn trimmed_and_unwritten_pages_need_no_flash_read() {
    let mut ftl = build(geometry(1, 16, 4), block::Params::default());
    let mut ops = Vec::new();
    ftl.read(5, &mut ops).unwrap();
    ftl.write(5, &mut ops).unwrap();
    ftl.trim(5, &mut ops).unwrap();
    ops.clear();
    ftl.read(5, &mut ops).unwrap();
    assert!(ops.is_empty());
    assert_eq!(ftl.lookup(5), None);
    assert_eq!(ftl.valid_data_pages(), 0);
    let past = ftl.logical_pages();
    assert!(matches!(
        ftl.write(past, &mut ops),
        Err(FtlError::OutOfRange { .. })
    ));
    assert!(matches!(
        ftl.read(past, &mut ops),
        Err(FtlError::OutOfRange { .. })
    ));
    assert!(matches!(
        ftl.trim(past, &mut ops),
        Err(FtlError::OutOfRange { .. })
    ));
}

#[test]
fn least_worn_allocation_spreads_the_erases() {
    // Rewriting one page over and over copies its block each time; the least-worn free block
    // takes the data, so the erases go round all 32 blocks evenly.
    let mut ftl = build(geometry(1, 16, 4), block::Params::default());
    let mut ops = Vec::new();
    for _ in 0..32 * 10 + 1 {
        ops.clear();
        ftl.write(0, &mut ops).unwrap();
    }
    let counts = ftl.nand().erase_counts();
    assert_eq!(counts.iter().map(|&c| c as u64).sum::<u64>(), 320);
    assert!(counts.iter().all(|&c| c == 10), "{counts:?}");
}

#[test]
fn wearing_out_is_an_error_not_a_panic() {
    let g = geometry(1, 8, 4);
    let mut ftl = FtlConfig::new(block::Params::default())
        .build(g, 5)
        .unwrap();
    let mut ops = Vec::new();
    let mut rng = storsim_core::Prng::new(11);
    let pages = ftl.logical_pages();
    let error = (0..100_000)
        .find_map(|_| {
            ops.clear();
            ftl.write(rng.below(pages), &mut ops).err()
        })
        .expect("a 16-block device with endurance 5 wears out");
    assert!(matches!(error, FtlError::WornOut { .. }), "{error}");
    // Later calls keep failing cleanly (or succeed where no free block is needed).
    for lpn in 0..pages {
        let _ = ftl.write(lpn, &mut ops);
        let _ = ftl.read(lpn, &mut ops);
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
const GEOMETRIES_BUILT: [(u32, u32); 4] = [(1, 1), (2, 1), (3, 2), (8, 4)];
/// Geometries too small for the FTL, and words its refusal must say: none, the FTL builds on a
/// single block per plane.
const GEOMETRIES_REFUSED: [(u32, u32); 0] = [];
const REFUSAL: [&str; 0] = [];

fn config() -> FtlConfig {
    FtlConfig::new(block::Params {
        over_provisioning_fraction: 0.07,
    })
}
