//! The `page-static` FTL: conformance on small geometries, the read-erase-write cycle of the
//! thesis' Fig. 4.1, the prewrite probability, and refusal (not panic) when a block wears out.

use storsim_core::Prng;
use storsim_flash::{BlockId, FlashOpKind, Geometry, Ppa};
use storsim_ftl::conformance::{check, Mix};
use storsim_ftl::{page_static, Cause, FlashOp, Ftl, FtlConfig, FtlError};

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

fn build(g: Geometry, endurance: u32, params: page_static::Params) -> Box<dyn Ftl> {
    FtlConfig::PageStatic(params)
        .build(g, endurance)
        .expect("valid parameters")
}

fn count(ops: &[FlashOp], kind: FlashOpKind) -> usize {
    ops.iter().filter(|o| o.kind == kind).count()
}

#[test]
fn conformance_on_small_geometries_and_mixes() {
    let mixes = [
        // Sequential-heavy: mostly whole-block rewrites.
        Mix {
            steps: 3_000,
            write_percent: 70,
            read_percent: 20,
            span_fraction: 1.0,
            sequential_percent: 80,
            full_check_every: 250,
        },
        // Random over a small span: the same blocks rewritten again and again.
        Mix {
            steps: 3_000,
            write_percent: 60,
            read_percent: 25,
            span_fraction: 0.3,
            sequential_percent: 10,
            full_check_every: 250,
        },
    ];
    let geometries = [geometry(1, 8, 4), geometry(2, 4, 8), geometry(1, 16, 16)];
    for g in geometries {
        for (m, mix) in mixes.iter().enumerate() {
            for seed in [1, 2, 3] {
                let seed = seed * 100 + m as u64;
                let mut ftl = build(g, 1_000_000, page_static::Params::default());
                let report = check(ftl.as_mut(), seed, *mix)
                    .unwrap_or_else(|e| panic!("{e} (geometry {g:?})"));
                assert!(
                    report.total_erases() > 0,
                    "seed {seed}: overwrites must erase"
                );
                assert_eq!(report.erases[Cause::Merge.index()], report.total_erases());
            }
        }
    }
}

#[test]
fn conformance_with_prewritten_pages() {
    for (seed, p) in [(7, 0.3), (8, 0.7), (9, 1.0)] {
        let params = page_static::Params {
            prewrite_probability: p,
            prewrite_seed: seed,
        };
        let mut ftl = build(geometry(1, 8, 8), 1_000_000, params);
        let mix = Mix {
            steps: 2_000,
            full_check_every: 200,
            ..Mix::default()
        };
        check(ftl.as_mut(), seed, mix).unwrap_or_else(|e| panic!("prewrite {p}: {e}"));
    }
}

#[test]
fn logical_page_i_is_physical_page_i() {
    let mut ftl = build(geometry(1, 4, 4), 100, page_static::Params::default());
    assert_eq!(ftl.logical_pages(), 16);
    let mut ops = Vec::new();
    for lpn in [0, 5, 15] {
        ftl.write(lpn, &mut ops).unwrap();
        assert_eq!(ftl.lookup(lpn), Some(Ppa(lpn as u32)));
    }
    assert_eq!(ftl.valid_data_pages(), 3);
    assert_eq!(
        ftl.write(16, &mut ops),
        Err(FtlError::OutOfRange {
            lpn: 16,
            logical_pages: 16
        })
    );
}

#[test]
fn overwrite_reads_erases_and_writes_back_the_block() {
    let mut ftl = build(geometry(1, 4, 4), 100, page_static::Params::default());
    let mut ops = Vec::new();
    // Block 1 holds logical pages 4..8; fill three of them, trim one.
    for lpn in [4, 5, 6] {
        ftl.write(lpn, &mut ops).unwrap();
    }
    ftl.trim(6, &mut ops).unwrap();
    ops.clear();
    ftl.write(5, &mut ops).unwrap();
    // Page 4 is read and copied back; trimmed page 6 is dropped; page 5 is the host's program.
    let expected = [
        (FlashOpKind::Read, 4, Cause::Merge),
        (FlashOpKind::Erase, 4, Cause::Merge),
        (FlashOpKind::Program, 4, Cause::Merge),
        (FlashOpKind::Program, 5, Cause::Host),
    ];
    let got: Vec<_> = ops.iter().map(|o| (o.kind, o.ppa.0, o.cause)).collect();
    assert_eq!(got, expected);
    assert_eq!(ops[2].data_from, Some(Ppa(4)));
    assert!(
        !ftl.nand().is_programmed(Ppa(6)),
        "the erase dropped the trimmed page"
    );
    assert_eq!(ftl.nand().erase_count(BlockId(1)), 1);
    assert_eq!(ftl.valid_data_pages(), 2);
    // A write to the erased page 6 now needs no erase.
    ops.clear();
    ftl.write(6, &mut ops).unwrap();
    assert_eq!(count(&ops, FlashOpKind::Erase), 0);
    let counters = ftl.counters();
    assert_eq!(counters[0].name, "block_rewrites");
    assert_eq!(counters[0].value, 1.0);
    assert_eq!(counters[1].value, 1.0, "one page copied");
}

#[test]
fn reads_of_unwritten_and_trimmed_pages_touch_no_flash() {
    let mut ftl = build(geometry(1, 4, 4), 100, page_static::Params::default());
    let mut ops = Vec::new();
    ftl.read(3, &mut ops).unwrap();
    ftl.write(3, &mut ops).unwrap();
    ftl.trim(3, &mut ops).unwrap();
    ops.clear();
    ftl.read(3, &mut ops).unwrap();
    assert!(ops.is_empty());
    assert_eq!(ftl.lookup(3), None);
    assert_eq!(ftl.valid_data_pages(), 0);
}

#[test]
fn prewrite_dirties_about_the_requested_fraction_deterministically() {
    let g = geometry(1, 64, 64);
    let params = page_static::Params {
        prewrite_probability: 0.25,
        prewrite_seed: 42,
    };
    let a = build(g, 100, params.clone());
    let b = build(g, 100, params);
    let programmed = |f: &dyn Ftl| {
        (0..g.pages())
            .filter(|&i| f.nand().is_programmed(Ppa(i)))
            .collect::<Vec<_>>()
    };
    let pa = programmed(a.as_ref());
    assert_eq!(pa, programmed(b.as_ref()), "same seed, same pages");
    let fraction = pa.len() as f64 / g.pages() as f64;
    assert!((0.23..0.27).contains(&fraction), "fraction {fraction}");
    // Prewritten pages are no host data.
    assert_eq!(a.valid_data_pages(), 0);
    assert!((0..a.logical_pages()).all(|l| a.lookup(l).is_none()));
    assert_eq!(a.counters()[2].value, pa.len() as f64);
    assert_eq!(a.nand().total_erases(), 0);
}

#[test]
fn full_prewrite_makes_every_write_a_block_rewrite() {
    let g = geometry(1, 4, 8);
    let params = page_static::Params {
        prewrite_probability: 1.0,
        prewrite_seed: 1,
    };
    let mut ftl = build(g, 100, params);
    let mut ops = Vec::new();
    ftl.write(9, &mut ops).unwrap();
    // The thesis: read the entire block, erase it, rewrite it (prewritten pages are kept).
    assert_eq!(count(&ops, FlashOpKind::Read), 7);
    assert_eq!(count(&ops, FlashOpKind::Erase), 1);
    assert_eq!(count(&ops, FlashOpKind::Program), 8);
    assert!((8..16).all(|p| ftl.nand().is_programmed(Ppa(p))));
    assert_eq!(ftl.lookup(9), Some(Ppa(9)));
    assert_eq!(ftl.lookup(10), None);
    // Reading a prewritten page reads the flash: the device is not clean.
    ops.clear();
    ftl.read(10, &mut ops).unwrap();
    assert_eq!(count(&ops, FlashOpKind::Read), 1);
}

#[test]
fn bad_prewrite_probability_is_rejected() {
    for p in [-0.1, 1.5, f64::NAN] {
        let params = page_static::Params {
            prewrite_probability: p,
            prewrite_seed: 1,
        };
        let err = FtlConfig::PageStatic(params)
            .build(geometry(1, 4, 4), 100)
            .err()
            .expect("rejected");
        assert!(matches!(err, FtlError::Rejected { .. }), "{err:?}");
    }
}

#[test]
fn a_block_at_its_endurance_limit_refuses_the_rewrite_and_keeps_its_data() {
    let mut ftl = build(geometry(1, 2, 4), 3, page_static::Params::default());
    let mut ops = Vec::new();
    ftl.write(0, &mut ops).unwrap();
    ftl.write(1, &mut ops).unwrap();
    ftl.write(0, &mut ops).unwrap();
    ftl.write(0, &mut ops).unwrap();
    assert_eq!(ftl.nand().erase_count(BlockId(0)), 2);
    ops.clear();
    let err = ftl.write(0, &mut ops).unwrap_err();
    assert!(matches!(err, FtlError::WornOut { .. }), "{err:?}");
    assert!(ops.is_empty());
    assert_eq!(ftl.lookup(1), Some(Ppa(1)));
    assert_eq!(ftl.nand().retired_blocks(), 0);
    // The erased pages of the block still take writes.
    ftl.write(2, &mut ops).unwrap();
}

#[test]
fn random_calls_on_a_wearing_device_never_panic() {
    let g = geometry(1, 4, 4);
    let mut ftl = build(g, 5, page_static::Params::default());
    let mut rng = Prng::new(11);
    let mut ops = Vec::new();
    let mut errors = 0;
    for _ in 0..5_000 {
        let lpn = rng.below(ftl.logical_pages() + 2);
        ops.clear();
        let r = match rng.below(3) {
            0 => ftl.write(lpn, &mut ops),
            1 => ftl.read(lpn, &mut ops),
            _ => ftl.trim(lpn, &mut ops),
        };
        errors += r.is_err() as u32;
    }
    assert!(errors > 0);
    let mapped = (0..ftl.logical_pages())
        .filter(|&l| ftl.lookup(l).is_some())
        .count() as u64;
    assert_eq!(ftl.valid_data_pages(), mapped);
}
