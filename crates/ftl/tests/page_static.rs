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
    FtlConfig::new(params)
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
            idle_percent: 0,
        },
        // Random over a small span: the same blocks rewritten again and again.
        Mix {
            steps: 3_000,
            write_percent: 60,
            read_percent: 25,
            span_fraction: 0.3,
            sequential_percent: 10,
            full_check_every: 250,
            idle_percent: 0,
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
        let err = FtlConfig::new(params)
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

// Whole requests (Fig. 4.1 per request: "a block is not erased more than once for servicing a
// single request").

fn prewritten(g: Geometry) -> Box<dyn Ftl> {
    build(
        g,
        100,
        page_static::Params {
            prewrite_probability: 1.0,
            prewrite_seed: 1,
        },
    )
}

#[test]
fn page_static_takes_whole_requests_and_other_ftls_do_not() {
    for name in storsim_ftl::FTLS.iter().map(|e| e.name) {
        let ftl = FtlConfig::default_for(name)
            .unwrap()
            .build(geometry(1, 64, 16), 100);
        let ftl = ftl.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(ftl.takes_whole_requests(), name == "page-static", "{name}");
    }
}

#[test]
fn a_request_filling_a_dirty_block_erases_it_once_and_programs_each_page_once() {
    let g = geometry(1, 4, 8);
    let mut ftl = prewritten(g);
    let mut ops = Vec::new();
    ftl.write_request(8, 8, &mut ops).unwrap();
    // The whole of block 1 is new data: nothing to read, one erase, eight host programs.
    assert_eq!(count(&ops, FlashOpKind::Read), 0);
    assert_eq!(count(&ops, FlashOpKind::Erase), 1);
    let programs: Vec<_> = ops
        .iter()
        .filter(|o| o.kind == FlashOpKind::Program)
        .map(|o| (o.ppa.0, o.cause))
        .collect();
    assert_eq!(
        programs,
        (8..16).map(|p| (p, Cause::Host)).collect::<Vec<_>>()
    );
    assert_eq!(ftl.nand().erase_count(BlockId(1)), 1);
    assert_eq!(ftl.nand().total_erases(), 1);
    assert!((8..16).all(|l| ftl.lookup(l) == Some(Ppa(l as u32))));
    assert_eq!(ftl.valid_data_pages(), 8);
    assert_eq!(ftl.counters()[0].value, 1.0, "one block rewrite");
    assert_eq!(ftl.counters()[2].value, 24.0, "prewritten pages left");

    // The same request page by page: every page finds its block programmed again.
    let mut per_page = prewritten(g);
    for lpn in 8..16 {
        per_page.write(lpn, &mut ops).unwrap();
    }
    assert_eq!(per_page.nand().erase_count(BlockId(1)), 8);
}

#[test]
fn a_request_across_two_dirty_blocks_rewrites_each_once_with_its_own_chain() {
    let g = geometry(1, 4, 8);
    let mut ftl = prewritten(g);
    let mut ops = Vec::new();
    ftl.write_request(4, 8, &mut ops).unwrap();
    use storsim_ftl::Dep::{All, None, Previous};
    use FlashOpKind::{Erase, Program, Read};
    let m = Cause::Merge;
    let h = Cause::Host;
    let mut expected = Vec::new();
    // Block 0 (pages 0..8, new 4..8): the call's first rewrite, waiting with `All`.
    for p in 0..4 {
        expected.push((Read, p, m, None));
    }
    expected.push((Erase, 0, m, All));
    for p in 0..4 {
        expected.push((Program, p, m, All));
    }
    for p in 4..8 {
        expected.push((Program, p, h, All));
    }
    // Block 1 (pages 8..16, new 8..12): a chain that waits for nothing of block 0.
    expected.push((Read, 12, m, None));
    for p in 13..16 {
        expected.push((Read, p, m, Previous));
    }
    expected.push((Erase, 8, m, Previous));
    for p in 8..12 {
        expected.push((Program, p, h, Previous));
    }
    for p in 12..16 {
        expected.push((Program, p, m, Previous));
    }
    let got: Vec<_> = ops
        .iter()
        .map(|o| (o.kind, o.ppa.0, o.cause, o.dep))
        .collect();
    assert_eq!(got, expected);
    for o in ops
        .iter()
        .filter(|o| o.cause == Cause::Merge && o.kind == Program)
    {
        assert_eq!(o.data_from, Some(o.ppa), "copied back in place");
    }
    assert_eq!(ftl.nand().erase_count(BlockId(0)), 1);
    assert_eq!(ftl.nand().erase_count(BlockId(1)), 1);
    assert_eq!(ftl.nand().total_erases(), 2);
    assert_eq!(ftl.counters()[0].value, 2.0);
    assert_eq!(
        ftl.counters()[1].value,
        8.0,
        "four pages copied in each block"
    );
}

#[test]
fn clean_pages_of_a_request_are_just_programmed_and_a_dirty_one_rewrites_its_block_once() {
    let g = geometry(1, 4, 8);
    let mut ftl = build(g, 100, page_static::Params::default());
    let mut ops = Vec::new();
    for lpn in [2, 9, 14] {
        ftl.write(lpn, &mut ops).unwrap();
    }
    ops.clear();
    // Pages 4..8 of block 0 are erased; page 9 of block 1 holds data.
    ftl.write_request(4, 8, &mut ops).unwrap();
    use storsim_ftl::Dep::{None, Previous};
    use FlashOpKind::{Erase, Program, Read};
    let mut expected = Vec::new();
    for p in 4..8 {
        expected.push((Program, p, Cause::Host, None));
    }
    // Block 1 keeps page 14: read it, erase, program the new pages and page 14 back.
    expected.push((Read, 14, Cause::Merge, None));
    expected.push((Erase, 8, Cause::Merge, Previous));
    for p in 8..12 {
        expected.push((Program, p, Cause::Host, Previous));
    }
    expected.push((Program, 14, Cause::Merge, Previous));
    let got: Vec<_> = ops
        .iter()
        .map(|o| (o.kind, o.ppa.0, o.cause, o.dep))
        .collect();
    assert_eq!(got, expected);
    assert_eq!(ftl.nand().erase_count(BlockId(0)), 0);
    assert_eq!(ftl.nand().erase_count(BlockId(1)), 1);
    assert_eq!(ftl.valid_data_pages(), 10);
}

#[test]
fn a_refused_request_changes_nothing() {
    // Endurance 2: a block's first rewrite is its last allowed erase short of retiring it.
    let g = geometry(1, 4, 4);
    let mut ftl = build(g, 2, page_static::Params::default());
    let mut ops = Vec::new();
    ftl.write_request(0, 8, &mut ops).unwrap();
    ops.clear();
    ftl.write(6, &mut ops).unwrap(); // block 1 rewritten once: its next erase would retire it
    assert_eq!(ftl.nand().erase_count(BlockId(1)), 1);
    ops.clear();
    // Pages 2..3 of block 0 could be rewritten, but block 1 refuses: nothing happens.
    let before: Vec<bool> = (0..g.pages())
        .map(|p| ftl.nand().is_programmed(Ppa(p)))
        .collect();
    let err = ftl.write_request(2, 4, &mut ops).unwrap_err();
    assert!(matches!(err, FtlError::WornOut { .. }), "{err:?}");
    assert!(ops.is_empty());
    let after: Vec<bool> = (0..g.pages())
        .map(|p| ftl.nand().is_programmed(Ppa(p)))
        .collect();
    assert_eq!(before, after);
    assert_eq!(ftl.nand().total_erases(), 1);
    assert_eq!(ftl.valid_data_pages(), 8);
    // Past the end is refused too, naming the first missing page.
    assert_eq!(
        ftl.write_request(14, 4, &mut ops),
        Err(FtlError::OutOfRange {
            lpn: 16,
            logical_pages: 16
        })
    );
    assert!(ftl.write_request(16, 0, &mut ops).is_ok());
    assert!(ops.is_empty());
}

/// Which operations each operation of one call waits for, directly or through others.
fn waits_for(ops: &[FlashOp]) -> Vec<Vec<bool>> {
    let mut w: Vec<Vec<bool>> = Vec::with_capacity(ops.len());
    for (i, op) in ops.iter().enumerate() {
        let mut mine = vec![false; ops.len()];
        match op.dep {
            storsim_ftl::Dep::None => {}
            storsim_ftl::Dep::Previous if i > 0 => {
                mine[..i].copy_from_slice(&w[i - 1][..i]);
                mine[i - 1] = true;
            }
            storsim_ftl::Dep::Previous => {}
            storsim_ftl::Dep::All => mine[..i].iter_mut().for_each(|x| *x = true),
        }
        w.push(mine);
    }
    w
}

/// Replays one call's `ops` (at `step`, the host writing `version`) on the mirror of the
/// flash: `programmed` and `content` per physical page, checking NAND's rules, the data each
/// page receives and what waits for what. Returns the pages the host programmed and the
/// blocks erased.
fn replay_on_mirror(
    step: usize,
    ops: &[FlashOp],
    ppb: u64,
    version: u64,
    programmed: &mut [bool],
    content: &mut [Option<(u64, u64)>],
) -> (
    std::collections::HashSet<Ppa>,
    std::collections::HashSet<u64>,
) {
    let w = waits_for(ops);
    let mut buffer = std::collections::HashMap::new();
    let mut erased = std::collections::HashSet::new();
    let mut host_programs = std::collections::HashSet::new();
    for (i, op) in ops.iter().enumerate() {
        let p = op.ppa.0 as usize;
        let block = op.ppa.0 as u64 / ppb;
        for (j, &waits) in w[i].iter().enumerate() {
            assert!(
                !waits || ops[j].ppa.0 as u64 / ppb == block,
                "step {step}: op {i} {op:?} waits for op {j} {:?} of another block",
                ops[j]
            );
        }
        match op.kind {
            FlashOpKind::Read => {
                assert!(programmed[p], "step {step}: op {i} reads erased page {p}");
                buffer.insert(op.ppa, (i, content[p]));
            }
            FlashOpKind::Erase => {
                assert!(
                    erased.insert(block),
                    "step {step}: block {block} erased twice"
                );
                for (j, o) in ops[..i].iter().enumerate() {
                    if o.kind == FlashOpKind::Read && o.ppa.0 as u64 / ppb == block {
                        assert!(w[i][j], "step {step}: erase {i} does not wait for read {j}");
                    }
                }
                let start = (block * ppb) as usize;
                for q in start..start + ppb as usize {
                    programmed[q] = false;
                    content[q] = Option::None;
                }
            }
            FlashOpKind::Program => {
                assert!(
                    !programmed[p],
                    "step {step}: op {i} programs page {p} twice"
                );
                if erased.contains(&block) {
                    let e = ops[..i]
                        .iter()
                        .position(|o| o.kind == FlashOpKind::Erase && o.ppa.0 as u64 / ppb == block)
                        .unwrap();
                    assert!(
                        w[i][e],
                        "step {step}: program {i} does not wait for the erase"
                    );
                }
                programmed[p] = true;
                content[p] = match op.data_from {
                    Some(src) => {
                        let (r, data) = buffer[&src];
                        assert!(w[i][r], "step {step}: copy {i} does not wait for its read");
                        data
                    }
                    Option::None => {
                        assert_eq!(op.cause, Cause::Host);
                        assert!(host_programs.insert(op.ppa), "step {step}: {op:?} twice");
                        Some((op.ppa.0 as u64, version))
                    }
                };
            }
            FlashOpKind::CopyBack => panic!("no copy-back"),
        }
    }
    (host_programs, erased)
}

/// Random requests, reads and trims, checked after every call against a shadow of the host's
/// writes and a mirror of the flash, as the conformance suite does page by page; and a twin FTL
/// given the same writes page by page ends in the same state with at least as many erases.
fn check_requests(g: Geometry, prewrite_probability: f64, seed: u64) {
    let params = page_static::Params {
        prewrite_probability,
        prewrite_seed: seed,
    };
    let mut ftl = build(g, 1_000_000, params.clone());
    let mut twin = build(g, 1_000_000, params);
    let pages = g.pages() as usize;
    let ppb = g.pages_per_block as u64;
    let logical = ftl.logical_pages();
    let mut programmed: Vec<bool> = (0..pages)
        .map(|p| ftl.nand().is_programmed(Ppa(p as u32)))
        .collect();
    // What each physical page holds: (logical page, version), or `None`.
    let mut content: Vec<Option<(u64, u64)>> = vec![Option::None; pages];
    let mut shadow: Vec<Option<u64>> = vec![Option::None; logical as usize];
    let mut rng = Prng::new(seed);
    let mut ops = Vec::new();
    let mut twin_ops = Vec::new();
    let mut version = 0;
    let mut multi_block_rewrites = 0;
    for step in 0..1_500 {
        let first = rng.below(logical);
        let n = (1 + rng.below(3 * ppb)).min(logical - first);
        ops.clear();
        match rng.below(10) {
            0..=5 => {
                version += 1;
                ftl.write_request(first, n, &mut ops).unwrap();
                for lpn in first..first + n {
                    twin.write(lpn, &mut twin_ops).unwrap();
                    shadow[lpn as usize] = Some(version);
                }
            }
            6..=7 => {
                for lpn in first..first + n {
                    ftl.trim(lpn, &mut ops).unwrap();
                    twin.trim(lpn, &mut twin_ops).unwrap();
                    shadow[lpn as usize] = Option::None;
                }
            }
            _ => {
                for lpn in first..first + n {
                    ftl.read(lpn, &mut ops).unwrap();
                }
            }
        }
        // Replay the call on the mirror: NAND rules, data, and what waits for what.
        let (host_programs, erased) =
            replay_on_mirror(step, &ops, ppb, version, &mut programmed, &mut content);
        if !host_programs.is_empty() {
            let expected: std::collections::HashSet<_> =
                (first..first + n).map(|l| Ppa(l as u32)).collect();
            assert_eq!(
                host_programs, expected,
                "step {step}: one host program per page"
            );
            if erased.len() > 1 {
                multi_block_rewrites += 1;
            }
        }
        // The host's data is where the FTL says, and nowhere else.
        for lpn in 0..logical {
            match shadow[lpn as usize] {
                Some(v) => {
                    assert_eq!(ftl.lookup(lpn), Some(Ppa(lpn as u32)), "step {step}");
                    assert_eq!(
                        content[lpn as usize],
                        Some((lpn, v)),
                        "step {step}: page {lpn}"
                    );
                }
                Option::None => assert_eq!(ftl.lookup(lpn), Option::None, "step {step}"),
            }
            assert_eq!(ftl.lookup(lpn), twin.lookup(lpn), "step {step}");
        }
        for (q, &m) in programmed.iter().enumerate() {
            assert_eq!(
                ftl.nand().is_programmed(Ppa(q as u32)),
                m,
                "step {step}: page {q}"
            );
            assert_eq!(
                twin.nand().is_programmed(Ppa(q as u32)),
                m,
                "step {step}: twin page {q}"
            );
        }
        let with_data = shadow.iter().filter(|s| s.is_some()).count() as u64;
        assert_eq!(ftl.valid_data_pages(), with_data);
        assert_eq!(ftl.counters()[2].value, twin.counters()[2].value);
        for b in 0..g.blocks() {
            assert!(ftl.nand().erase_count(BlockId(b)) <= twin.nand().erase_count(BlockId(b)));
        }
    }
    assert!(
        multi_block_rewrites > 0,
        "the mix never rewrote two blocks in one request"
    );
    assert!(ftl.nand().total_erases() < twin.nand().total_erases());
}

#[test]
fn random_requests_keep_the_data_and_erase_no_more_than_page_by_page() {
    for (g, p, seed) in [
        (geometry(1, 8, 4), 0.0, 1),
        (geometry(2, 4, 8), 0.0, 2),
        (geometry(1, 16, 16), 0.0, 3),
        (geometry(1, 8, 8), 0.5, 4),
        (geometry(1, 8, 8), 1.0, 5),
    ] {
        check_requests(g, p, seed);
    }
}
