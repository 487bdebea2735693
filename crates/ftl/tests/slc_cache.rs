//! The SLC write cache on the page-mapped FTLs (docs/models/slc-cache.md): the conformance
//! suite with the cache on (idle folding, busy-time folding and inline folds included), then
//! hand-counted checks of where writes go, how big the cache may be, and what folding does.

use storsim_flash::{CellMode, FlashOpKind, Geometry};
use storsim_ftl::conformance::{self, Mix};
use storsim_ftl::{dftl, page, Cause, FlashOp, Ftl, FtlError, SlcCache, WhenFull};

/// 2 channels × 2 planes of 16 blocks × 12 pages: TLC-like blocks that hold 4 pages in SLC
/// mode.
fn geometry() -> Geometry {
    Geometry {
        channels: 2,
        chips_per_channel: 1,
        dies_per_chip: 1,
        planes_per_die: 2,
        blocks_per_plane: 16,
        pages_per_block: 12,
        page_bytes: 4096,
        oob_bytes: 0,
    }
}

const PLANES: u64 = 4;
const PPB: u64 = 12;
const SLC_PPB: u64 = 4;

fn cache(static_blocks_per_plane: u32, dynamic_max_blocks: u64, when_full: WhenFull) -> SlcCache {
    SlcCache {
        slc_pages_per_block: SLC_PPB as u32,
        static_blocks_per_plane,
        dynamic_max_blocks,
        when_full,
        static_endurance_erases: 100_000,
    }
}

fn page_params() -> page::Params {
    page::Params {
        over_provisioning_fraction: 0.25,
        ..page::Params::default()
    }
}

fn page_ftl(c: &SlcCache) -> Box<dyn Ftl> {
    let mut ftl = page::new(geometry(), 100_000, &page_params()).expect("valid parameters");
    ftl.set_slc_cache(c).expect("the cache fits");
    ftl
}

fn counter(ftl: &dyn Ftl, name: &str) -> f64 {
    ftl.counters()
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no counter {name}"))
        .value
}

fn write(ftl: &mut dyn Ftl, lpn: u64) -> Vec<FlashOp> {
    let mut ops = Vec::new();
    ftl.write(lpn, &mut ops).unwrap();
    ops
}

fn host_program(ops: &[FlashOp]) -> FlashOp {
    *ops.iter()
        .find(|o| o.kind == FlashOpKind::Program && o.cause == Cause::Host)
        .expect("a write programs the host's page")
}

#[test]
fn conformance_with_the_cache_on() {
    let mixes = [
        Mix {
            idle_percent: 2,
            ..Mix::default()
        },
        // A small span rewritten over and over, rarely idle: folding competes with garbage
        // collection for the free blocks.
        Mix {
            span_fraction: 0.4,
            write_percent: 80,
            read_percent: 15,
            idle_percent: 1,
            ..Mix::default()
        },
        // Mostly sequential writes over the whole space: the logical space fills under the
        // dynamic cache, which busy-time folding must give back.
        Mix {
            write_percent: 90,
            read_percent: 5,
            sequential_percent: 90,
            idle_percent: 0,
            ..Mix::default()
        },
    ];
    for (i, mix) in mixes.into_iter().enumerate() {
        for when_full in [WhenFull::Direct, WhenFull::Fold] {
            for (s, d) in [(1, 0), (0, 8), (1, 6)] {
                let c = cache(s, d, when_full);
                let seed = 500 + i as u64 * 10 + s as u64 + d;
                let mut ftl = page_ftl(&c);
                let r = conformance::check(ftl.as_mut(), seed, mix)
                    .unwrap_or_else(|e| panic!("{e}\n{c:?}"));
                assert!(r.programs[Cause::Host.index()] > 0);
                let mut dftl = dftl::new(
                    geometry(),
                    100_000,
                    &dftl::Params {
                        page: page_params(),
                        ..dftl::Params::default()
                    },
                )
                .expect("valid parameters");
                dftl.set_slc_cache(&c).expect("the cache fits");
                conformance::check(dftl.as_mut(), seed, mix)
                    .unwrap_or_else(|e| panic!("{e}\n{c:?}"));
            }
        }
    }
}

#[test]
fn writes_fill_the_static_blocks_then_the_dynamic_ones_then_go_direct() {
    // One static block a plane (4 SLC pages each) and four dynamic blocks: writes stripe over
    // the planes, so each plane opens one.
    let mut ftl = page_ftl(&cache(1, 4, WhenFull::Direct));
    let cached = PLANES * SLC_PPB + 4 * SLC_PPB;
    for lpn in 0..cached {
        let p = host_program(&write(ftl.as_mut(), lpn));
        assert_eq!(p.mode, CellMode::Slc, "page {lpn}");
        // A block in SLC mode programs its first pages only.
        assert!(
            u64::from(p.ppa.0) % PPB < SLC_PPB,
            "page {lpn} at {:?}",
            p.ppa
        );
    }
    assert_eq!(counter(ftl.as_ref(), "slc_host_pages"), cached as f64);
    assert_eq!(counter(ftl.as_ref(), "slc_cache_pages"), cached as f64);
    assert_eq!(
        counter(ftl.as_ref(), "slc_cache_blocks"),
        (PLANES + 4) as f64
    );
    let p = host_program(&write(ftl.as_mut(), cached));
    assert_eq!(p.mode, CellMode::Native);
    assert_eq!(counter(ftl.as_ref(), "slc_direct_pages"), 1.0);
    // A read of cached data is an SLC-mode read, of the direct page a native one.
    let mut ops = Vec::new();
    ftl.read(0, &mut ops).unwrap();
    assert_eq!(ops[0].mode, CellMode::Slc);
    ops.clear();
    ftl.read(cached, &mut ops).unwrap();
    assert_eq!(ops[0].mode, CellMode::Native);
}

#[test]
fn the_dynamic_cache_shrinks_as_the_logical_space_fills() {
    // No static cache; the dynamic one may take up to 40 blocks but never more blocks than the
    // free logical space fills.
    let mut ftl = page_ftl(&cache(0, 40, WhenFull::Direct));
    let logical = ftl.logical_pages();
    let allowed = |written: u64| (40u64.min((logical - written) / PPB) * SLC_PPB) as f64;
    assert_eq!(
        counter(ftl.as_ref(), "slc_cache_capacity_pages"),
        allowed(0)
    );
    let mut written = 0;
    while written < logical {
        write(ftl.as_mut(), written);
        written += 1;
        assert_eq!(
            counter(ftl.as_ref(), "slc_cache_capacity_pages"),
            allowed(written),
            "after {written} pages"
        );
        let blocks = counter(ftl.as_ref(), "slc_cache_blocks");
        // Busy-time folding keeps the blocks within what the free space allows; the open
        // block may be one more, as the allowance drops while it fills.
        let mut ops = Vec::new();
        ftl.housekeeping(&mut ops).unwrap();
        let blocks_after = counter(ftl.as_ref(), "slc_cache_blocks");
        assert!(
            blocks_after * SLC_PPB as f64 <= allowed(written) + SLC_PPB as f64,
            "after {written} pages: {blocks} cache blocks, {blocks_after} after folding, \
             {} pages allowed",
            allowed(written)
        );
    }
    // A full logical space leaves no dynamic cache; everything written is still there.
    assert_eq!(counter(ftl.as_ref(), "slc_cache_capacity_pages"), 0.0);
    assert_eq!(ftl.valid_data_pages(), logical);
    assert!(counter(ftl.as_ref(), "slc_budget_folds") > 0.0);
}

#[test]
fn idle_folding_empties_the_cache_into_native_blocks() {
    let mut ftl = page_ftl(&cache(1, 4, WhenFull::Direct));
    for lpn in 0..20 {
        write(ftl.as_mut(), lpn);
    }
    assert_eq!(counter(ftl.as_ref(), "slc_cache_pages"), 20.0);
    let mut units = 0;
    let mut ops = Vec::new();
    let (mut reads, mut programs, mut erases) = (0, 0, 0);
    loop {
        ops.clear();
        if !ftl.idle(&mut ops).unwrap() {
            break;
        }
        units += 1;
        for o in &ops {
            assert_eq!(o.cause, Cause::Fold);
            match o.kind {
                // Folding reads in SLC mode and programs native pages.
                FlashOpKind::Read => {
                    assert_eq!(o.mode, CellMode::Slc);
                    reads += 1;
                }
                FlashOpKind::Program => {
                    assert_eq!(o.mode, CellMode::Native);
                    programs += 1;
                }
                FlashOpKind::Erase => erases += 1,
                FlashOpKind::CopyBack => unreachable!("FTLs emit no copy-backs"),
            }
        }
    }
    // 16 pages in the four full static blocks, then 4 in four open dynamic blocks (writes
    // stripe over the planes): a unit folds one block a plane, the full ones first.
    assert_eq!((reads, programs, erases), (20, 20, 8));
    assert_eq!(units, 2);
    assert_eq!(counter(ftl.as_ref(), "slc_cache_pages"), 0.0);
    assert_eq!(counter(ftl.as_ref(), "slc_cache_blocks"), 0.0);
    assert_eq!(counter(ftl.as_ref(), "slc_folded_pages"), 20.0);
    for lpn in 0..20 {
        let mut ops = Vec::new();
        ftl.read(lpn, &mut ops).unwrap();
        assert_eq!(ops[0].mode, CellMode::Native, "page {lpn}");
    }
    // The cache takes writes again.
    assert_eq!(host_program(&write(ftl.as_mut(), 100)).mode, CellMode::Slc);
}

#[test]
fn a_full_cache_folds_before_the_write_when_told_to() {
    // Only the static blocks: 16 pages of cache.
    let mut ftl = page_ftl(&cache(1, 0, WhenFull::Fold));
    for lpn in 0..PLANES * SLC_PPB {
        write(ftl.as_mut(), lpn);
    }
    let ops = write(ftl.as_mut(), 50);
    // The write's plane folded its block (four reads, four programs, an erase) and the write
    // went into the block that freed.
    let folds = ops.iter().filter(|o| o.cause == Cause::Fold).count();
    assert_eq!(folds, 2 * SLC_PPB as usize + 1);
    assert_eq!(host_program(&ops).mode, CellMode::Slc);
    assert_eq!(counter(ftl.as_ref(), "slc_inline_folds"), 1.0);
    assert_eq!(counter(ftl.as_ref(), "slc_direct_pages"), 0.0);
}

#[test]
fn a_cache_that_leaves_too_little_spare_space_or_comes_late_is_refused() {
    let mut ftl = page::new(geometry(), 100_000, &page_params()).unwrap();
    // 576 logical pages and 2 blocks a plane for garbage collection leave 96 spare pages:
    // three static blocks a plane (144 pages) do not fit beside them.
    let e = ftl
        .set_slc_cache(&cache(3, 0, WhenFull::Direct))
        .unwrap_err();
    assert!(matches!(e, FtlError::Rejected { .. }), "{e}");
    write(ftl.as_mut(), 0);
    let e = ftl
        .set_slc_cache(&cache(1, 0, WhenFull::Direct))
        .unwrap_err();
    assert!(e.to_string().contains("before anything is written"), "{e}");
    // FTLs that do not place pages freely have no cache.
    let mut block = storsim_ftl::FtlConfig::default_for("block")
        .unwrap()
        .build(geometry(), 100)
        .unwrap();
    assert!(block.set_slc_cache(&cache(1, 0, WhenFull::Direct)).is_err());
}

#[test]
fn the_cache_counters_are_listed_only_with_a_cache() {
    let plain = page::new(geometry(), 100_000, &page_params()).unwrap();
    assert!(!plain.counters().iter().any(|c| c.name.starts_with("slc_")));
    assert!(!plain
        .counter_descriptors()
        .iter()
        .any(|d| d.name.starts_with("slc_")));
    let cached = page_ftl(&cache(1, 0, WhenFull::Direct));
    let names: Vec<String> = cached.counters().into_iter().map(|c| c.name).collect();
    for d in cached.counter_descriptors() {
        assert!(names.iter().any(|n| d.matches(n).is_some()), "{}", d.name);
    }
    assert!(names.iter().any(|n| n == "slc_folded_pages"));
}

/// The cache's page lists exactly its counters (`STORSIM_BLESS_DOCS=1` rewrites the table).
#[test]
fn the_cache_page_lists_exactly_its_counters() {
    let descriptors: Vec<_> = storsim_ftl::slc_cache::COUNTERS.iter().collect();
    let text = storsim_core::conformance::counter_table(&descriptors);
    storsim_testenv::check_counter_tables("docs/models/slc-cache.md", &[("slc-cache", text)])
        .unwrap();
}
