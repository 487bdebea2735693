//! The `dftl` FTL: the conformance suite over geometries, mapping-cache sizes, GC policies and
//! wear-levelling modes, then the costs of the cached mapping table checked by hand.

use storsim_core::Prng;
use storsim_flash::{FlashOpKind, Geometry, NandArray, Ppa};
use storsim_ftl::conformance::{self, Mix};
use storsim_ftl::gc::GcPolicy;
use storsim_ftl::{dftl, page, Cause, Dep, FlashOp, Ftl, FtlError};

fn geometry(
    channels: u32,
    dies: u32,
    planes: u32,
    blocks: u32,
    ppb: u32,
    page_bytes: u32,
) -> Geometry {
    Geometry {
        channels,
        chips_per_channel: 1,
        dies_per_chip: dies,
        planes_per_die: planes,
        blocks_per_plane: blocks,
        pages_per_block: ppb,
        page_bytes,
        oob_bytes: 16,
    }
}

fn params(op: f64, cmt_entries: u32) -> dftl::Params {
    dftl::Params {
        page: page::Params {
            over_provisioning_fraction: op,
            ..page::Params::default()
        },
        cmt_entries,
    }
}

fn build(g: Geometry, p: &dftl::Params) -> Box<dyn Ftl> {
    dftl::new(g, 100_000, p).expect("valid parameters")
}

fn counter(ftl: &dyn Ftl, name: &str) -> f64 {
    ftl.counters()
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no counter {name}"))
        .value
}

fn run(g: Geometry, p: &dftl::Params, seed: u64, mix: Mix) -> conformance::Report {
    let mut ftl = build(g, p);
    println!(
        "dftl: seed {seed}, {} planes x {} blocks x {} pages of {} B, {p:?}",
        g.planes(),
        g.blocks_per_plane,
        g.pages_per_block,
        g.page_bytes
    );
    let r = conformance::check(ftl.as_mut(), seed, mix).unwrap_or_else(|e| panic!("{e}"));
    assert!(r.write_amplification() >= 1.0);
    r
}

#[test]
fn conformance_small_cache_many_translation_pages() {
    // 64-byte pages hold 16 mapping entries: many translation pages, rewritten often.
    let geometries = [
        (geometry(1, 1, 1, 24, 4, 64), 0.3),
        (geometry(2, 2, 2, 16, 4, 64), 0.3),
        (geometry(2, 1, 2, 64, 8, 64), 0.07),
    ];
    for (gi, (g, op)) in geometries.into_iter().enumerate() {
        for (ci, cmt) in [1u32, 8, 64, 100_000].into_iter().enumerate() {
            let seed = 100 * gi as u64 + ci as u64;
            let r = run(g, &params(op, cmt), seed, Mix::default());
            if cmt < 64 {
                assert!(r.programs[Cause::Mapping.index()] > 0, "seed {seed}");
                assert!(r.reads[Cause::Mapping.index()] > 0, "seed {seed}");
            }
        }
    }
}

#[test]
fn conformance_every_policy_and_wear_mode() {
    let g = geometry(2, 1, 1, 24, 4, 64);
    let policies = [
        GcPolicy::Greedy,
        GcPolicy::Random,
        GcPolicy::Fifo,
        GcPolicy::CostBenefit,
        GcPolicy::DChoices {
            fraction_searched: 0.5,
        },
    ];
    let wear = [
        (true, Some(3)),
        (false, None),
        (false, Some(5)),
        (true, None),
    ];
    for (i, policy) in policies.into_iter().enumerate() {
        for (j, (dynamic_wl, static_wl)) in wear.into_iter().enumerate() {
            let p = dftl::Params {
                page: page::Params {
                    over_provisioning_fraction: 0.3,
                    gc_policy: policy,
                    dynamic_wl,
                    static_wl_threshold_erases: static_wl,
                    seed: i as u64,
                    ..page::Params::default()
                },
                cmt_entries: 6,
            };
            let seed = 7000 + (10 * i + j) as u64;
            run(
                g,
                &p,
                seed,
                Mix {
                    write_percent: 75,
                    read_percent: 20,
                    ..Mix::default()
                },
            );
        }
    }
}

#[test]
fn conformance_with_background_gc_between_writes() {
    struct IdleFirst {
        inner: Box<dyn Ftl>,
        n: u64,
    }
    impl Ftl for IdleFirst {
        fn name(&self) -> &'static str {
            self.inner.name()
        }
        fn logical_pages(&self) -> u64 {
            self.inner.logical_pages()
        }
        fn nand(&self) -> &NandArray {
            self.inner.nand()
        }
        fn read(&mut self, lpn: u64, ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
            self.inner.read(lpn, ops)
        }
        fn write(&mut self, lpn: u64, ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
            self.n += 1;
            if self.n == 4 {
                self.n = 0;
                while self.inner.idle(ops)? {}
            }
            self.inner.write(lpn, ops)
        }
        fn trim(&mut self, lpn: u64, ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
            self.inner.trim(lpn, ops)
        }
        fn lookup(&self, lpn: u64) -> Option<Ppa> {
            self.inner.lookup(lpn)
        }
        fn valid_data_pages(&self) -> u64 {
            self.inner.valid_data_pages()
        }
        fn counters(&self) -> Vec<storsim_core::DeviceCounter> {
            self.inner.counters()
        }
        fn counter_descriptors(&self) -> Vec<&'static storsim_core::CounterDescriptor> {
            self.inner.counter_descriptors()
        }
        fn reset_counters(&mut self) {
            self.inner.reset_counters()
        }
    }
    let g = geometry(2, 1, 1, 32, 4, 64);
    let mut p = params(0.3, 8);
    p.page.gc_background = true;
    p.page.gc_high_watermark_blocks = 6;
    p.page.static_wl_threshold_erases = Some(4);
    let mut ftl = IdleFirst {
        inner: build(g, &p),
        n: 0,
    };
    let seed = 91;
    println!("dftl with background GC: seed {seed}, {p:?}");
    conformance::check(&mut ftl, seed, Mix::default()).unwrap_or_else(|e| panic!("{e}"));
    assert!(counter(ftl.inner.as_ref(), "gc_background_victim_blocks") > 0.0);
}

fn write(ftl: &mut dyn Ftl, lpn: u64) -> Vec<FlashOp> {
    let mut ops = Vec::new();
    ftl.write(lpn, &mut ops).unwrap();
    ops
}

fn mapping_ops(ops: &[FlashOp]) -> usize {
    ops.iter().filter(|o| o.cause == Cause::Mapping).count()
}

#[test]
fn dirty_evictions_write_translation_pages_in_batches() {
    // 64-byte pages: 16 entries per translation page; a 16-entry cache; no GC in 100 writes.
    let g = geometry(2, 1, 1, 64, 8, 64);
    let mut ftl = build(g, &params(0.3, 16));
    let mut all = Vec::new();
    for lpn in 0..100 {
        let ops = write(ftl.as_mut(), lpn);
        let host = ops.last().unwrap();
        assert_eq!((host.cause, host.kind), (Cause::Host, FlashOpKind::Program));
        // The host program waits for the translation traffic before it, if any.
        let expected = if ops.len() > 1 { Dep::All } else { Dep::None };
        assert_eq!(host.dep, expected);
        all.extend(ops);
    }
    // Writing page 16 evicts page 0, the least recently used and dirty: translation page 0
    // is written, with pages 1..=15 in the same program (they become clean, and their own
    // evictions cost nothing). The same happens at pages 32, 48, 64, 80 and 96 evicting
    // 16, 32, 48, 64 and 80. No translation page existed before, so nothing is read.
    assert_eq!(counter(ftl.as_ref(), "cmt_dirty_evictions"), 6.0);
    assert_eq!(counter(ftl.as_ref(), "translation_page_writes"), 6.0);
    assert_eq!(counter(ftl.as_ref(), "translation_page_reads"), 0.0);
    assert_eq!(counter(ftl.as_ref(), "cmt_misses"), 100.0);
    let programs = all
        .iter()
        .filter(|o| o.cause == Cause::Mapping && o.kind == FlashOpKind::Program)
        .count();
    assert_eq!(programs, 6);
    assert_eq!(
        ftl.valid_data_pages(),
        100,
        "translation pages are not data"
    );
    assert_eq!(counter(ftl.as_ref(), "translation_pages_on_flash"), 6.0);
    // Reading page 0 again misses and reads translation page 0 before the data.
    let mut ops = Vec::new();
    ftl.read(0, &mut ops).unwrap();
    let reads: Vec<_> = ops.iter().filter(|o| o.kind == FlashOpKind::Read).collect();
    assert_eq!(reads.len(), 2);
    assert_eq!(reads[0].cause, Cause::Mapping);
    assert_eq!(
        (reads[1].cause, reads[1].dep, Some(reads[1].ppa)),
        (Cause::Host, Dep::All, ftl.lookup(0))
    );
    assert_eq!(counter(ftl.as_ref(), "translation_page_reads"), 1.0);
}

#[test]
fn a_working_set_that_fits_the_cache_stops_missing_after_warm_up() {
    let g = geometry(2, 1, 2, 32, 8, 64);
    let mut ftl = build(g, &params(0.3, 64));
    let n = ftl.logical_pages();
    // Fill the whole device: the cache turns over and translation pages are written.
    for lpn in 0..n {
        write(ftl.as_mut(), lpn);
    }
    let seed = 12;
    println!("seed {seed}");
    let mut rng = Prng::new(seed);
    let hot = 50;
    let mut ops = Vec::new();
    // Warm-up: touch every hot page once.
    for lpn in 0..hot {
        ops.clear();
        ftl.read(lpn, &mut ops).unwrap();
    }
    let misses = counter(ftl.as_ref(), "cmt_misses");
    let mut mapping = 0;
    for _ in 0..20_000 {
        let lpn = rng.below(hot);
        ops.clear();
        if rng.below(2) == 0 {
            ftl.write(lpn, &mut ops).unwrap();
        } else {
            ftl.read(lpn, &mut ops).unwrap();
        }
        mapping += mapping_ops(&ops);
    }
    assert!(counter(ftl.as_ref(), "gc_victim_blocks") > 100.0, "GC ran");
    assert_eq!(counter(ftl.as_ref(), "cmt_misses"), misses);
    assert_eq!(mapping, 0, "collection updates cached entries in the cache");
    assert!(counter(ftl.as_ref(), "cmt_hit_rate") > 0.5);
}

#[test]
fn random_reads_cost_translation_reads_that_page_does_not_pay() {
    let g = geometry(2, 1, 2, 64, 64, 4096);
    let mut d = build(g, &params(0.1, 256));
    let mut p = page::new(
        g,
        100_000,
        &page::Params {
            over_provisioning_fraction: 0.1,
            ..page::Params::default()
        },
    )
    .unwrap();
    for ftl in [&mut d, &mut p] {
        for lpn in 0..ftl.logical_pages() {
            write(ftl.as_mut(), lpn);
        }
    }
    let n = d.logical_pages().min(p.logical_pages());
    let seed = 3;
    println!("seed {seed}");
    let mut rng = Prng::new(seed);
    let (mut dm, mut pm, mut ops) = (0, 0, Vec::new());
    let misses = counter(d.as_ref(), "cmt_misses");
    let translation_reads = counter(d.as_ref(), "translation_page_reads");
    for _ in 0..10_000 {
        let lpn = rng.below(n);
        ops.clear();
        d.read(lpn, &mut ops).unwrap();
        dm += ops
            .iter()
            .filter(|o| o.cause == Cause::Mapping && o.kind == FlashOpKind::Read)
            .count();
        ops.clear();
        p.read(lpn, &mut ops).unwrap();
        pm += mapping_ops(&ops);
    }
    let new_misses = counter(d.as_ref(), "cmt_misses") - misses;
    println!("dftl: {dm} translation reads for 10000 reads ({new_misses} misses)");
    assert_eq!(pm, 0);
    assert!(new_misses > 9_000.0, "256 of {n} entries cached");
    // Misses read translation pages; so do the read-modify-writes of the dirty entries the
    // fill left in the cache as they are evicted.
    assert!(dm as f64 >= new_misses - 256.0, "{dm} translation reads");
    assert_eq!(
        dm as f64,
        counter(d.as_ref(), "translation_page_reads") - translation_reads
    );
}

#[test]
fn collection_updates_translation_pages_and_collects_translation_blocks() {
    let g = geometry(2, 1, 1, 32, 4, 64);
    let mut ftl = build(g, &params(0.3, 4));
    let n = ftl.logical_pages();
    let seed = 21;
    println!("seed {seed}");
    let mut rng = Prng::new(seed);
    // Replay which pages hold translation data (programmed for mapping, or copied from such).
    let mut translation = vec![false; g.pages() as usize];
    let mut gc_translation_reads = 0;
    let mut ops = Vec::new();
    for _ in 0..30_000 {
        ops.clear();
        ftl.write(rng.below(n), &mut ops).unwrap();
        for op in &ops {
            let i = op.ppa.0 as usize;
            match op.kind {
                FlashOpKind::Read if op.cause == Cause::Gc && translation[i] => {
                    gc_translation_reads += 1
                }
                FlashOpKind::Program => {
                    translation[i] = op.cause == Cause::Mapping
                        || op.data_from.is_some_and(|f| translation[f.0 as usize]);
                }
                FlashOpKind::Erase => {
                    let first = (op.ppa.0 / g.pages_per_block * g.pages_per_block) as usize;
                    translation[first..first + g.pages_per_block as usize].fill(false);
                }
                _ => {}
            }
        }
    }
    assert!(counter(ftl.as_ref(), "gc_translation_page_writes") > 0.0);
    assert!(
        gc_translation_reads > 0,
        "translation blocks are collected too"
    );
}

#[test]
fn bad_parameters_are_rejected() {
    let g = geometry(1, 1, 1, 24, 4, 64);
    assert!(matches!(
        dftl::new(g, 10, &params(0.3, 0)),
        Err(FtlError::Rejected { .. })
    ));
    assert!(matches!(
        dftl::new(geometry(1, 1, 1, 24, 4, 2), 10, &params(0.3, 4)),
        Err(FtlError::Rejected { .. })
    ));
    let mut ftl = build(g, &params(0.3, 4));
    let mut ops = Vec::new();
    let n = ftl.logical_pages();
    assert!(matches!(
        ftl.read(n, &mut ops),
        Err(FtlError::OutOfRange { .. })
    ));
    assert!(matches!(
        ftl.write(u64::MAX, &mut ops),
        Err(FtlError::OutOfRange { .. })
    ));
    assert!(ops.is_empty());
}

/// Random small geometries (pages of 16 to 256 bytes: 4 to 64 entries per translation page)
/// and parameters, each drawn from its printed seed.
fn random_setup(seed: u64) -> (Geometry, dftl::Params) {
    let mut r = Prng::new(seed);
    let g = geometry(
        1 + r.below(2) as u32,
        1 + r.below(2) as u32,
        1 + r.below(2) as u32,
        8 + r.below(40) as u32,
        2 + r.below(9) as u32,
        16 << r.below(5),
    );
    let policy = match r.below(6) {
        0 => GcPolicy::Greedy,
        1 => GcPolicy::Random,
        2 => GcPolicy::Fifo,
        3 => GcPolicy::CostBenefit,
        _ => GcPolicy::DChoices {
            fraction_searched: r.below(5) as f64 / 4.0,
        },
    };
    let min_op = (2 * g.planes() * g.pages_per_block) as f64 / g.pages() as f64;
    let low = 2 + r.below(3) as u32;
    let p = dftl::Params {
        page: page::Params {
            over_provisioning_fraction: (min_op + 0.03 + r.below(30) as f64 / 100.0).min(0.9),
            gc_policy: policy,
            gc_low_watermark_blocks: low,
            gc_background: r.below(2) == 0,
            gc_high_watermark_blocks: low + r.below(4) as u32,
            dynamic_wl: r.below(2) == 0,
            static_wl_threshold_erases: [None, Some(1), Some(3), Some(20)][r.below(4) as usize],
            static_wl_erases_per_move: 1 + r.below(8) as u32,
            seed,
            // Every third seed places pages by their address, in one of MQSim's 24 orders.
            plane_allocation: if seed % 3 == 0 {
                let name = page::PLANE_ALLOCATIONS[1 + (seed / 3 % 24) as usize];
                page::PlaneAllocation::from_name(name).unwrap()
            } else {
                page::PlaneAllocation::Dynamic
            },
        },
        cmt_entries: [1, 3, 16, 100, 100_000][r.below(5) as usize],
    };
    (g, p)
}

/// Runs the FTL's idle work before some writes, so the suite checks what idle emits.
struct IdleSometimes {
    inner: Box<dyn Ftl>,
    n: u64,
}

impl Ftl for IdleSometimes {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn logical_pages(&self) -> u64 {
        self.inner.logical_pages()
    }
    fn nand(&self) -> &NandArray {
        self.inner.nand()
    }
    fn read(&mut self, lpn: u64, ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        self.inner.read(lpn, ops)
    }
    fn write(&mut self, lpn: u64, ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        self.n += 1;
        if self.n == 5 {
            self.n = 0;
            while self.inner.idle(ops)? {}
        }
        self.inner.write(lpn, ops)
    }
    fn trim(&mut self, lpn: u64, ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        self.inner.trim(lpn, ops)
    }
    fn lookup(&self, lpn: u64) -> Option<Ppa> {
        self.inner.lookup(lpn)
    }
    fn valid_data_pages(&self) -> u64 {
        self.inner.valid_data_pages()
    }
    fn counters(&self) -> Vec<storsim_core::DeviceCounter> {
        self.inner.counters()
    }
    fn counter_descriptors(&self) -> Vec<&'static storsim_core::CounterDescriptor> {
        self.inner.counter_descriptors()
    }
    fn reset_counters(&mut self) {
        self.inner.reset_counters()
    }
}

#[test]
fn conformance_on_random_setups() {
    let mut built = 0;
    for seed in 0..300u64 {
        let (g, p) = random_setup(seed);
        let Ok(inner) = dftl::new(g, 100_000, &p) else {
            continue;
        };
        built += 1;
        let mut ftl = IdleSometimes { inner, n: 0 };
        let mix = Mix {
            steps: 4_000,
            span_fraction: [1.0, 0.5, 0.1][seed as usize % 3],
            full_check_every: 500,
            ..Mix::default()
        };
        conformance::check(&mut ftl, seed, mix).unwrap_or_else(|e| panic!("{e}\n{g:?}\n{p:?}"));
    }
    assert!(built > 250, "only {built} setups were accepted");
}

#[test]
fn random_setups_wear_out_cleanly() {
    for seed in 0..150u64 {
        let (g, p) = random_setup(seed);
        let endurance = 3 + (seed % 10) as u32;
        let Ok(inner) = dftl::new(g, endurance, &p) else {
            continue;
        };
        let mut ftl = IdleSometimes { inner, n: 0 };
        let mut erases = vec![0u32; g.blocks() as usize];
        let mut rng = Prng::new(seed);
        let n = ftl.logical_pages();
        let mut ops = Vec::new();
        let mut outcome = None;
        for _ in 0..200_000 {
            ops.clear();
            let lpn = rng.below(n);
            let r = match rng.below(10) {
                0 => ftl.trim(lpn, &mut ops),
                1 => ftl.read(lpn, &mut ops),
                _ => ftl.write(lpn, &mut ops),
            };
            for op in &ops {
                let b = g.block_of(op.ppa).0 as usize;
                assert!(
                    erases[b] < endurance,
                    "seed {seed}: {op:?} on a retired block"
                );
                if op.kind == FlashOpKind::Erase {
                    erases[b] += 1;
                }
            }
            if let Err(e) = r {
                outcome = Some(e);
                break;
            }
        }
        assert!(
            matches!(outcome, Some(FtlError::WornOut { .. })),
            "seed {seed}: {outcome:?}\n{g:?}\n{p:?}"
        );
    }
}
