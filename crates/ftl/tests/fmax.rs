//! The `fmax` FTL: conformance on small geometries, and the primary/replacement behaviour of the
//! thesis' Figs. 4.6–4.7 (updates anywhere in the replacement unit starting at the page's offset,
//! fold into a new primary when it is full, in-place rewrite when fewer than two units are free).

use storsim_core::Prng;
use storsim_flash::{BlockId, FlashOpKind, Geometry, Ppa};
use storsim_ftl::conformance::{check, Mix};
use storsim_ftl::{fmax, Cause, FlashOp, Ftl, FtlConfig, FtlError};

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

fn build(g: Geometry, endurance: u32, over_provisioning: f64) -> Box<dyn Ftl> {
    FtlConfig::new(fmax::Params { over_provisioning })
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
    for g in geometries {
        for over_provisioning in [0.0, 0.07, 0.3] {
            for (m, mix) in mixes.iter().enumerate() {
                for seed in [1, 2] {
                    let seed = seed * 100 + m as u64;
                    let mut ftl = build(g, 1_000_000, over_provisioning);
                    let report = check(ftl.as_mut(), seed, *mix).unwrap_or_else(|e| {
                        panic!("{e} (geometry {g:?}, over-provisioning {over_provisioning})")
                    });
                    assert!(
                        report.total_erases() > 0,
                        "seed {seed}: overwrites must erase"
                    );
                }
            }
        }
    }
}

#[test]
fn updates_go_to_the_replacement_unit_from_their_offset_on() {
    let mut ftl = build(geometry(1, 16, 4), 100, 0.07);
    let mut ops = Vec::new();
    // Virtual unit 0 gets block 0 as its primary unit.
    for lpn in [0, 1, 2, 3] {
        ftl.write(lpn, &mut ops).unwrap();
        assert_eq!(ftl.lookup(lpn), Some(Ppa(lpn as u32)));
    }
    // Page 2 again: block 1 becomes the replacement unit, the copy lands at offset 2.
    ftl.write(2, &mut ops).unwrap();
    assert_eq!(ftl.lookup(2), Some(Ppa(4 + 2)));
    // Page 2 once more: offset 2 is taken, so the search moves on to offset 3.
    ftl.write(2, &mut ops).unwrap();
    assert_eq!(ftl.lookup(2), Some(Ppa(4 + 3)));
    // Page 3: offsets 3 is taken; the search wraps around to offset 0.
    ftl.write(3, &mut ops).unwrap();
    assert_eq!(ftl.lookup(3), Some(Ppa(4)));
    ftl.write(1, &mut ops).unwrap();
    assert_eq!(ftl.lookup(1), Some(Ppa(4 + 1)));
    assert_eq!(ftl.nand().total_erases(), 0);
    assert_eq!(counter(ftl.as_ref(), "replacement_units"), 1.0);
    // Fig. 4.7: a read reads the one page that holds the latest copy.
    ops.clear();
    ftl.read(2, &mut ops).unwrap();
    assert_eq!(ops.len(), 1);
    assert_eq!((ops[0].ppa, ops[0].cause), (Ppa(7), Cause::Host));
    // The replacement unit is full: the next update folds both units into a new primary (block
    // 2), with the host's page written there directly and the others copied.
    ops.clear();
    ftl.write(0, &mut ops).unwrap();
    assert_eq!(count(&ops, FlashOpKind::Program, Cause::Host), 1);
    assert_eq!(count(&ops, FlashOpKind::Program, Cause::Merge), 3);
    assert_eq!(count(&ops, FlashOpKind::Erase, Cause::Merge), 2);
    for lpn in 0..4 {
        assert_eq!(ftl.lookup(lpn), Some(Ppa(8 + lpn as u32)));
    }
    assert_eq!(counter(ftl.as_ref(), "folds"), 1.0);
    assert_eq!(counter(ftl.as_ref(), "fold_copied_pages"), 3.0);
    assert_eq!(ftl.nand().erase_count(BlockId(0)), 1);
    assert_eq!(ftl.nand().erase_count(BlockId(1)), 1);
}

#[test]
fn with_fewer_than_two_free_units_the_primary_is_rewritten_in_place() {
    // Four blocks, three virtual units: one spare unit, kept for folds.
    let mut ftl = build(geometry(1, 4, 4), 100, 0.0);
    assert_eq!(ftl.logical_pages(), 12);
    let mut ops = Vec::new();
    for lpn in [0, 1, 4, 8] {
        ftl.write(lpn, &mut ops).unwrap();
    }
    ops.clear();
    ftl.write(0, &mut ops).unwrap();
    let got: Vec<_> = ops.iter().map(|o| (o.kind, o.ppa.0, o.cause)).collect();
    assert_eq!(
        got,
        [
            (FlashOpKind::Read, 1, Cause::Merge),
            (FlashOpKind::Erase, 0, Cause::Merge),
            (FlashOpKind::Program, 0, Cause::Host),
            (FlashOpKind::Program, 1, Cause::Merge),
        ]
    );
    assert_eq!(counter(ftl.as_ref(), "in_place_rewrites"), 1.0);
    assert_eq!(counter(ftl.as_ref(), "replacement_units"), 0.0);
}

#[test]
fn a_new_chain_folds_the_first_chain_with_a_replacement_when_units_run_low() {
    // Five blocks, four virtual units (over-provisioning 0.2 keeps one spare).
    let mut ftl = build(geometry(1, 5, 2), 100, 0.2);
    assert_eq!(ftl.logical_pages(), 8);
    let mut ops = Vec::new();
    ftl.write(0, &mut ops).unwrap(); // unit 0 primary: block 0
    ftl.write(0, &mut ops).unwrap(); // unit 0 replacement: block 1
    ftl.write(2, &mut ops).unwrap(); // unit 1 primary: block 2
    ftl.write(4, &mut ops).unwrap(); // unit 2 primary: block 3; one unit left
    ops.clear();
    ftl.write(6, &mut ops).unwrap(); // unit 3: fold unit 0 first (into block 4)
    assert_eq!(counter(ftl.as_ref(), "folds"), 1.0);
    assert_eq!(ftl.lookup(0), Some(Ppa(8)));
    assert_eq!(ftl.lookup(6), Some(Ppa(0)), "block 0 came back first");
    assert_eq!(counter(ftl.as_ref(), "free_units"), 1.0);
}

#[test]
fn sequential_writes_on_a_clean_device_erase_nothing() {
    let mut ftl = build(geometry(1, 64, 16), 100, 0.07);
    let mut ops = Vec::new();
    for lpn in 0..ftl.logical_pages() {
        ftl.write(lpn, &mut ops).unwrap();
    }
    assert_eq!(ftl.nand().total_erases(), 0);
}

#[test]
fn bad_parameters_are_rejected() {
    for over_provisioning in [-0.1, 1.0, f64::NAN] {
        let err = FtlConfig::new(fmax::Params { over_provisioning })
            .build(geometry(1, 8, 4), 100)
            .err()
            .expect("rejected");
        assert!(matches!(err, FtlError::Rejected { .. }));
    }
}

#[test]
fn random_calls_on_a_wearing_device_never_panic() {
    for seed in [1, 2, 3] {
        let mut ftl = build(geometry(1, 8, 4), 6, 0.2);
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
