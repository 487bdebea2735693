//! The `raw` FTL: logical page = physical page, programming a page that is not erased is
//! rejected (and counted), and discarding every programmed page of a block erases it.

use storsim_core::Prng;
use storsim_flash::{BlockId, FlashOpKind, Geometry, Ppa};
use storsim_ftl::conformance::{self, Mix, Writes};
use storsim_ftl::{raw, Cause, Ftl, FtlConfig, FtlError};

fn geometry() -> Geometry {
    Geometry {
        channels: 1,
        chips_per_channel: 1,
        dies_per_chip: 1,
        planes_per_die: 2,
        blocks_per_plane: 4,
        pages_per_block: 4,
        page_bytes: 2048,
        oob_bytes: 64,
    }
}

fn build(endurance: u32) -> Box<dyn Ftl> {
    FtlConfig::new(raw::Params::default())
        .build(geometry(), endurance)
        .expect("valid parameters")
}

fn counter(ftl: &dyn Ftl, name: &str) -> f64 {
    ftl.counters()
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no counter {name}"))
        .value
}

fn programmed(ftl: &dyn Ftl) -> Vec<bool> {
    (0..ftl.nand().geometry().pages())
        .map(|i| ftl.nand().is_programmed(Ppa(i)))
        .collect()
}

#[test]
fn programming_an_erased_page_programs_that_physical_page() {
    let mut ftl = build(100);
    assert_eq!(ftl.logical_pages(), 32);
    let mut ops = Vec::new();
    ftl.write(13, &mut ops).unwrap();
    assert_eq!(ops.len(), 1);
    assert_eq!(
        (ops[0].kind, ops[0].ppa, ops[0].cause, ops[0].data_from),
        (FlashOpKind::Program, Ppa(13), Cause::Host, None)
    );
    assert!(ftl.nand().is_programmed(Ppa(13)));
    assert_eq!(ftl.lookup(13), Some(Ppa(13)));
    assert_eq!(ftl.valid_data_pages(), 1);
    ops.clear();
    ftl.read(13, &mut ops).unwrap();
    assert_eq!(
        (ops.len(), ops[0].kind, ops[0].ppa),
        (1, FlashOpKind::Read, Ppa(13))
    );
}

#[test]
fn a_second_program_of_a_page_is_rejected_and_changes_nothing() {
    let mut ftl = build(100);
    let mut ops = Vec::new();
    ftl.write(5, &mut ops).unwrap();
    let before = programmed(ftl.as_ref());
    ops.clear();
    let err = ftl.write(5, &mut ops).unwrap_err();
    let FtlError::Rejected { reason } = &err else {
        panic!("expected a rejection, got {err:?}");
    };
    assert!(
        reason.contains("page 5") && reason.contains("not erased"),
        "{reason}"
    );
    assert!(ops.is_empty(), "a rejected program issues no operation");
    assert_eq!(programmed(ftl.as_ref()), before);
    assert_eq!(ftl.nand().total_erases(), 0);
    assert_eq!(ftl.lookup(5), Some(Ppa(5)));
    assert_eq!(counter(ftl.as_ref(), "rejected_programs"), 1.0);
}

#[test]
fn discarding_a_whole_block_erases_it_and_the_pages_take_programs_again() {
    let mut ftl = build(100);
    let mut ops = Vec::new();
    // Block 1 = pages 4..8; program three of them.
    for lpn in [4, 5, 7] {
        ftl.write(lpn, &mut ops).unwrap();
    }
    ops.clear();
    // Discarding some of the pages erases nothing: the block still holds page 7.
    ftl.trim(4, &mut ops).unwrap();
    ftl.trim(5, &mut ops).unwrap();
    ftl.trim(6, &mut ops).unwrap();
    assert!(ops.is_empty());
    assert_eq!(ftl.lookup(4), None);
    assert_eq!(ftl.valid_data_pages(), 1);
    // The page is gone for reads, but still not erased for programs.
    ftl.read(4, &mut ops).unwrap();
    assert!(ops.is_empty());
    let err = ftl.write(4, &mut ops).unwrap_err();
    assert!(matches!(&err, FtlError::Rejected { reason } if reason.contains("discarded")));
    // The last live page goes: one erase of block 1.
    ftl.trim(7, &mut ops).unwrap();
    assert_eq!(ops.len(), 1);
    assert_eq!(
        (ops[0].kind, ops[0].ppa, ops[0].cause),
        (FlashOpKind::Erase, Ppa(4), Cause::Host)
    );
    assert_eq!(ftl.nand().erase_count(BlockId(1)), 1);
    assert!((4..8).all(|p| !ftl.nand().is_programmed(Ppa(p))));
    ops.clear();
    ftl.write(4, &mut ops).unwrap();
    assert_eq!(ops.len(), 1);
    assert_eq!(ftl.lookup(4), Some(Ppa(4)));
    assert_eq!(counter(ftl.as_ref(), "trim_erases"), 1.0);
}

#[test]
fn reads_and_trims_of_erased_pages_touch_no_flash() {
    let mut ftl = build(100);
    let mut ops = Vec::new();
    for lpn in 0..ftl.logical_pages() {
        ftl.read(lpn, &mut ops).unwrap();
        ftl.trim(lpn, &mut ops).unwrap();
        assert_eq!(ftl.lookup(lpn), None);
    }
    assert!(ops.is_empty());
    assert_eq!(ftl.nand().total_erases(), 0);
}

#[test]
fn out_of_range_pages_are_errors() {
    let mut ftl = build(100);
    let mut ops = Vec::new();
    let expected = FtlError::OutOfRange {
        lpn: 32,
        logical_pages: 32,
    };
    assert_eq!(ftl.write(32, &mut ops), Err(expected.clone()));
    assert_eq!(ftl.read(32, &mut ops), Err(expected.clone()));
    assert_eq!(ftl.trim(32, &mut ops), Err(expected));
    assert_eq!(ftl.lookup(32), None);
}

#[test]
fn a_worn_out_block_rejects_programs() {
    let mut ftl = build(2);
    let mut ops = Vec::new();
    for _ in 0..2 {
        ftl.write(0, &mut ops).unwrap();
        ftl.trim(0, &mut ops).unwrap();
    }
    assert!(ftl.nand().is_retired(BlockId(0)));
    let err = ftl.write(1, &mut ops).unwrap_err();
    assert!(matches!(&err, FtlError::Rejected { reason } if reason.contains("worn out")));
    assert_eq!(counter(ftl.as_ref(), "rejected_programs"), 1.0);
    ftl.write(4, &mut ops).unwrap();
}

#[test]
fn erase_counts_add_up_under_a_random_flash_file_system_workload() {
    let mut ftl = build(1_000_000);
    let g = geometry();
    let mut rng = Prng::new(5);
    let mut ops = Vec::new();
    let (mut programs, mut erases, mut rejected) = (0u64, 0u64, 0u64);
    for _ in 0..20_000 {
        let lpn = rng.below(ftl.logical_pages());
        ops.clear();
        match rng.below(3) {
            0 => match ftl.write(lpn, &mut ops) {
                Ok(()) => programs += 1,
                Err(FtlError::Rejected { .. }) => rejected += 1,
                Err(e) => panic!("{e}"),
            },
            1 => ftl.read(lpn, &mut ops).unwrap(),
            _ => ftl.trim(lpn, &mut ops).unwrap(),
        }
        erases += ops.iter().filter(|o| o.kind == FlashOpKind::Erase).count() as u64;
        assert!(ops
            .iter()
            .all(|o| o.kind != FlashOpKind::Program || o.ppa.0 as u64 == lpn));
    }
    assert!(erases > 0 && rejected > 0);
    assert_eq!(ftl.nand().total_erases(), erases);
    assert_eq!(counter(ftl.as_ref(), "trim_erases"), erases as f64);
    assert_eq!(counter(ftl.as_ref(), "rejected_programs"), rejected as f64);
    // Every program not yet erased is still programmed.
    let live: u64 = (0..g.blocks())
        .map(|b| ftl.nand().programmed_pages(BlockId(b)) as u64)
        .sum();
    assert!(live <= programs);
    let mapped = (0..ftl.logical_pages())
        .filter(|&l| ftl.lookup(l).is_some())
        .count() as u64;
    assert_eq!(ftl.valid_data_pages(), mapped);
}

fn geometry_of(planes: u32, blocks_per_plane: u32, pages_per_block: u32) -> Geometry {
    Geometry {
        planes_per_die: planes,
        blocks_per_plane,
        pages_per_block,
        ..geometry()
    }
}

#[test]
fn raw_passes_conformance_with_a_write_once_workload() {
    let mixes = [
        // Write-heavy: the array fills, writes turn into trims, whole blocks get discarded.
        Mix {
            steps: 6_000,
            write_percent: 60,
            read_percent: 25,
            span_fraction: 1.0,
            sequential_percent: 30,
            full_check_every: 200,
            idle_percent: 0,
        },
        // Trim-heavy over half the array, mostly sequential: blocks erase soon after filling.
        Mix {
            steps: 6_000,
            write_percent: 40,
            read_percent: 20,
            span_fraction: 0.5,
            sequential_percent: 80,
            full_check_every: 200,
            idle_percent: 0,
        },
    ];
    for (gi, g) in [
        geometry_of(2, 4, 4),
        geometry_of(1, 8, 8),
        geometry_of(2, 16, 16),
    ]
    .into_iter()
    .enumerate()
    {
        for (m, mix) in mixes.iter().enumerate() {
            for seed in [1u64, 2, 3] {
                let seed = 1000 * gi as u64 + 100 * m as u64 + seed;
                let mut ftl = FtlConfig::new(raw::Params::default())
                    .build(g, 1_000_000)
                    .unwrap();
                let report = conformance::check_with(ftl.as_mut(), seed, *mix, Writes::ErasedOnly)
                    .unwrap_or_else(|e| panic!("{e}\n{g:?}"));
                // No translation: one program per host write, nothing else.
                assert_eq!(report.total_programs(), report.host_writes, "seed {seed}");
                assert_eq!(report.write_amplification(), 1.0, "seed {seed}");
                assert_eq!(
                    report.total_erases(),
                    report.erases[Cause::Host.index()],
                    "seed {seed}: raw erases only on the host's discards"
                );
                assert!(
                    report.total_erases() > 10,
                    "seed {seed}: the workload must erase blocks and reprogram them, erased {}",
                    report.total_erases()
                );
                assert!(report.host_writes > g.pages() as u64, "seed {seed}");
                assert_eq!(
                    counter(ftl.as_ref(), "rejected_programs"),
                    0.0,
                    "seed {seed}"
                );
                assert_eq!(
                    counter(ftl.as_ref(), "trim_erases"),
                    report.total_erases() as f64,
                    "seed {seed}"
                );
            }
        }
    }
}

#[test]
fn the_generic_overwrite_workload_is_refused_by_raw() {
    // The plain suite overwrites pages, which raw flash must refuse: the suite reports it as a
    // failure rather than raw silently accepting a second program.
    let mut ftl = build(1_000_000);
    let err = conformance::check(ftl.as_mut(), 3, Mix::default()).unwrap_err();
    assert!(err.contains("not erased"), "{err}");
}
