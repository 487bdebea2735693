//! The `anand` FTL: conformance on small geometries, and the chain behaviour of the thesis'
//! Figs. 4.4–4.5 (write to the first unit with the offset erased, grow the chain, fold into the
//! last unit, fold the longest chain when the pool is empty, scan the chain on reads).

use storsim_core::Prng;
use storsim_flash::{BlockId, FlashOpKind, Geometry, Ppa};
use storsim_ftl::conformance::{check, Mix};
use storsim_ftl::{anand, Cause, FlashOp, Ftl, FtlConfig, FtlError};

fn geometry(planes: u32, blocks_per_plane: u32, pages_per_block: u32) -> Geometry {
    Geometry {
        channels: 1,
        chips_per_channel: 1,
        dies_per_chip: 1,
        planes_per_die: planes,
        blocks_per_plane,
        pages_per_block,
        page_bytes: 2048,
        oob_bytes: 64,
    }
}

fn build(g: Geometry, endurance: u32, params: anand::Params) -> Box<dyn Ftl> {
    FtlConfig::new(params)
        .build(g, endurance)
        .expect("valid parameters")
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

#[test]
fn conformance_on_small_geometries_and_mixes() {
    let mixes = [
        Mix {
            steps: 10_000,
            write_percent: 70,
            read_percent: 20,
            span_fraction: 1.0,
            sequential_percent: 80,
            full_check_every: 500,
            idle_percent: 0,
        },
        Mix {
            steps: 10_000,
            write_percent: 60,
            read_percent: 25,
            span_fraction: 0.5,
            sequential_percent: 10,
            full_check_every: 500,
            idle_percent: 0,
        },
    ];
    let geometries = [geometry(1, 8, 4), geometry(2, 8, 8), geometry(1, 32, 16)];
    let variants = [
        anand::Params::default(),
        anand::Params {
            max_chain_length: 2,
            scan_chain: false,
            over_provisioning: 0.25,
        },
        anand::Params {
            max_chain_length: 1,
            ..anand::Params::default()
        },
        anand::Params {
            max_chain_length: 8,
            over_provisioning: 0.0,
            scan_chain: true,
        },
    ];
    for g in geometries {
        for params in &variants {
            for (m, mix) in mixes.iter().enumerate() {
                for seed in [1, 2] {
                    let seed = seed * 100 + m as u64;
                    let mut ftl = build(g, 1_000_000, params.clone());
                    let report = check(ftl.as_mut(), seed, *mix)
                        .unwrap_or_else(|e| panic!("{e} (geometry {g:?}, {params:?})"));
                    assert!(
                        report.total_erases() > 0,
                        "seed {seed}: overwrites must erase"
                    );
                    assert!(
                        counter(ftl.as_ref(), "max_chain_length_seen")
                            <= params.max_chain_length as f64
                    );
                }
            }
        }
    }
}

#[test]
fn logical_space_leaves_spare_units() {
    let ftl = build(geometry(1, 100, 8), 100, anand::Params::default());
    assert_eq!(ftl.logical_pages(), 93 * 8);
    // Even with no over-provisioning one unit stays spare, so folds can free units.
    let params = anand::Params {
        over_provisioning: 0.0,
        ..anand::Params::default()
    };
    let ftl = build(geometry(1, 4, 8), 100, params);
    assert_eq!(ftl.logical_pages(), 3 * 8);
}

#[test]
fn rewrites_grow_the_chain_and_reads_find_the_latest_copy() {
    let mut ftl = build(geometry(1, 16, 4), 100, anand::Params::default());
    let mut ops = Vec::new();
    // Virtual unit 1 (pages 4..8) takes the first free unit, block 0.
    ftl.write(5, &mut ops).unwrap();
    assert_eq!(ftl.lookup(5), Some(Ppa(1)));
    ftl.write(6, &mut ops).unwrap();
    assert_eq!(ftl.lookup(6), Some(Ppa(2)));
    // Rewriting page 5 appends block 1 to the chain and writes at the same offset.
    ops.clear();
    ftl.write(5, &mut ops).unwrap();
    assert_eq!(ftl.lookup(5), Some(Ppa(4 + 1)));
    assert_eq!(count(&ops, FlashOpKind::Program, Cause::Host), 1);
    // Page 7 has never been written: it goes to the first unit whose offset is erased.
    ftl.write(7, &mut ops).unwrap();
    assert_eq!(ftl.lookup(7), Some(Ppa(3)));
    // Page 6 again: its first erased slot is in block 1.
    ftl.write(6, &mut ops).unwrap();
    assert_eq!(ftl.lookup(6), Some(Ppa(4 + 2)));
    // Page 5 a third time: block 2 joins the chain.
    ftl.write(5, &mut ops).unwrap();
    assert_eq!(ftl.lookup(5), Some(Ppa(8 + 1)));
    assert_eq!(counter(ftl.as_ref(), "max_chain_length_seen"), 3.0);
    assert_eq!(ftl.nand().total_erases(), 0);
    // Fig. 4.5's scan: reading page 5 passes its two older copies, then reads the latest.
    ops.clear();
    ftl.read(5, &mut ops).unwrap();
    let got: Vec<_> = ops.iter().map(|o| (o.kind, o.ppa.0, o.cause)).collect();
    assert_eq!(
        got,
        [
            (FlashOpKind::Read, 1, Cause::Mapping),
            (FlashOpKind::Read, 5, Cause::Mapping),
            (FlashOpKind::Read, 9, Cause::Host),
        ]
    );
    // Without the scan, a read is one flash read.
    let mut table = build(
        geometry(1, 16, 4),
        100,
        anand::Params {
            scan_chain: false,
            ..anand::Params::default()
        },
    );
    table.write(5, &mut ops).unwrap();
    table.write(5, &mut ops).unwrap();
    ops.clear();
    table.read(5, &mut ops).unwrap();
    assert_eq!(ops.len(), 1);
}

#[test]
fn a_too_long_chain_folds_into_its_last_unit() {
    let params = anand::Params {
        max_chain_length: 2,
        scan_chain: false,
        ..anand::Params::default()
    };
    let mut ftl = build(geometry(1, 16, 4), 100, params);
    let mut ops = Vec::new();
    // Virtual unit 0: pages 0, 1, 2 in block 0; page 0 again in block 1.
    for lpn in [0, 1, 2, 0] {
        ftl.write(lpn, &mut ops).unwrap();
    }
    assert_eq!(ftl.lookup(0), Some(Ppa(4)));
    // Page 0 a third time: no unit has offset 0 erased and the chain is at its limit, so it
    // folds: pages 1 and 2 move into block 1 (the last unit), block 0 is erased, and page 0
    // goes to a newly appended unit.
    ops.clear();
    ftl.write(0, &mut ops).unwrap();
    assert_eq!(count(&ops, FlashOpKind::Read, Cause::Merge), 2);
    assert_eq!(count(&ops, FlashOpKind::Program, Cause::Merge), 2);
    assert_eq!(count(&ops, FlashOpKind::Erase, Cause::Merge), 1);
    assert_eq!(
        ops.iter()
            .find(|o| o.kind == FlashOpKind::Erase)
            .unwrap()
            .ppa,
        Ppa(0)
    );
    assert_eq!(ftl.lookup(1), Some(Ppa(5)));
    assert_eq!(ftl.lookup(2), Some(Ppa(6)));
    assert_eq!(ftl.lookup(0), Some(Ppa(8)), "block 2 is the next free unit");
    assert_eq!(counter(ftl.as_ref(), "folds"), 1.0);
    assert_eq!(counter(ftl.as_ref(), "fold_copied_pages"), 2.0);
    assert_eq!(ftl.nand().erase_count(BlockId(0)), 1);
}

#[test]
fn an_empty_pool_folds_the_longest_chain() {
    // Four blocks, three virtual units: one spare.
    let params = anand::Params {
        over_provisioning: 0.0,
        scan_chain: false,
        ..anand::Params::default()
    };
    let mut ftl = build(geometry(1, 4, 4), 100, params);
    let mut ops = Vec::new();
    ftl.write(0, &mut ops).unwrap(); // unit 0 -> block 0
    ftl.write(0, &mut ops).unwrap(); // unit 0 grows -> block 1
    ftl.write(4, &mut ops).unwrap(); // unit 1 -> block 2
    ftl.write(8, &mut ops).unwrap(); // unit 2 -> block 3: the pool is empty
    assert_eq!(counter(ftl.as_ref(), "free_units"), 0.0);
    // Unit 1 needs another unit: none is free, so (Fig. 4.4) its single unit is rewritten.
    ops.clear();
    ftl.write(4, &mut ops).unwrap();
    assert_eq!(counter(ftl.as_ref(), "in_place_rewrites"), 1.0);
    assert_eq!(ftl.nand().erase_count(BlockId(2)), 1);
    assert_eq!(ftl.lookup(4), Some(Ppa(8)));
    // Trimming every page of unit 2 keeps its chain; a write to it stays in place.
    ftl.trim(8, &mut ops).unwrap();
    assert_eq!(ftl.valid_data_pages(), 2);
    // Folding the longest chain (unit 0) frees block 0 when a chain needs a unit.
    let mut ftl = build(
        geometry(1, 4, 4),
        100,
        anand::Params {
            over_provisioning: 0.0,
            scan_chain: false,
            ..anand::Params::default()
        },
    );
    ftl.write(0, &mut ops).unwrap(); // unit 0 -> block 0
    ftl.write(0, &mut ops).unwrap(); // -> block 1
    ftl.write(0, &mut ops).unwrap(); // -> block 2
    ftl.write(4, &mut ops).unwrap(); // unit 1 -> block 3
    ops.clear();
    ftl.write(8, &mut ops).unwrap(); // unit 2: pool empty, fold unit 0 (length 3)
    assert_eq!(counter(ftl.as_ref(), "folds"), 1.0);
    assert_eq!(count(&ops, FlashOpKind::Erase, Cause::Merge), 2);
    assert_eq!(
        ftl.lookup(0),
        Some(Ppa(8)),
        "the latest copy stayed in the last unit"
    );
    assert_eq!(
        ftl.lookup(8),
        Some(Ppa(0)),
        "the first freed unit serves unit 2"
    );
}

#[test]
fn sequential_writes_on_a_clean_device_erase_nothing() {
    let mut ftl = build(geometry(1, 64, 16), 100, anand::Params::default());
    let mut ops = Vec::new();
    for lpn in 0..ftl.logical_pages() {
        ftl.write(lpn, &mut ops).unwrap();
    }
    assert_eq!(ftl.nand().total_erases(), 0);
    assert_eq!(ftl.valid_data_pages(), ftl.logical_pages());
}

#[test]
fn bad_parameters_are_rejected() {
    let bad = [
        anand::Params {
            max_chain_length: 0,
            ..anand::Params::default()
        },
        anand::Params {
            max_chain_length: 256,
            ..anand::Params::default()
        },
        anand::Params {
            over_provisioning: 1.0,
            ..anand::Params::default()
        },
        anand::Params {
            over_provisioning: f64::NAN,
            ..anand::Params::default()
        },
    ];
    for params in bad {
        let err = FtlConfig::new(params.clone())
            .build(geometry(1, 8, 4), 100)
            .err()
            .unwrap_or_else(|| panic!("{params:?} accepted"));
        assert!(matches!(err, FtlError::Rejected { .. }));
    }
    assert!(FtlConfig::new(anand::Params::default())
        .build(geometry(1, 1, 4), 100)
        .is_err());
}

#[test]
fn random_calls_on_a_wearing_device_never_panic() {
    for (seed, max_chain_length) in [(1, 1), (2, 2), (3, 4)] {
        let params = anand::Params {
            max_chain_length,
            over_provisioning: 0.2,
            ..anand::Params::default()
        };
        let mut ftl = build(geometry(1, 8, 4), 6, params);
        let mut rng = Prng::new(seed);
        let mut ops = Vec::new();
        let mut errors = 0;
        for _ in 0..20_000 {
            let lpn = rng.below(ftl.logical_pages() + 2);
            ops.clear();
            let r = match rng.below(4) {
                0 | 1 => ftl.write(lpn, &mut ops),
                2 => ftl.read(lpn, &mut ops),
                _ => ftl.trim(lpn, &mut ops),
            };
            if let Err(e) = r {
                assert!(
                    matches!(e, FtlError::WornOut { .. } | FtlError::OutOfRange { .. }),
                    "seed {seed}: {e}"
                );
                errors += 1;
            }
        }
        assert!(errors > 0 && ftl.nand().retired_blocks() > 0);
        let mapped = (0..ftl.logical_pages())
            .filter(|&l| ftl.lookup(l).is_some())
            .count() as u64;
        assert_eq!(ftl.valid_data_pages(), mapped);
    }
}
