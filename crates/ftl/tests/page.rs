//! The `page` FTL: the conformance suite over geometries, policies, wear-levelling modes,
//! over-provisioning levels and seeds, then hand-computed checks of garbage collection and
//! wear levelling through the public API.

use storsim_flash::{BlockId, FlashOpKind, Geometry, NandArray, Ppa};
use storsim_ftl::conformance::{self, Mix};
use storsim_ftl::gc::GcPolicy;
use storsim_ftl::page::{self, Params};
use storsim_ftl::{Cause, Dep, FlashOp, Ftl, FtlError};

fn geometry(channels: u32, dies: u32, planes: u32, blocks: u32, ppb: u32) -> Geometry {
    Geometry {
        channels,
        chips_per_channel: 1,
        dies_per_chip: dies,
        planes_per_die: planes,
        blocks_per_plane: blocks,
        pages_per_block: ppb,
        page_bytes: 4096,
        oob_bytes: 128,
    }
}

fn build(g: Geometry, params: &Params) -> Box<dyn Ftl> {
    page::new(g, 100_000, params).expect("valid parameters")
}

fn counter(ftl: &dyn Ftl, name: &str) -> f64 {
    ftl.counters()
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no counter {name}"))
        .value
}

const POLICIES: [GcPolicy; 8] = [
    GcPolicy::Greedy,
    GcPolicy::Random,
    GcPolicy::Fifo,
    GcPolicy::CostBenefit,
    GcPolicy::DChoices {
        fraction_searched: 0.0,
    },
    GcPolicy::DChoices {
        fraction_searched: 0.3,
    },
    GcPolicy::DChoices {
        fraction_searched: 1.0,
    },
    GcPolicy::RandomThreshold {
        min_invalid_fraction: 0.5,
    },
];

/// (dynamic, static threshold): both modes alone, together and neither.
const WEAR: [(bool, Option<u32>); 4] = [
    (true, Some(4)),
    (false, None),
    (false, Some(3)),
    (true, None),
];

fn run(g: Geometry, params: &Params, seed: u64, mix: Mix) -> conformance::Report {
    let mut ftl = build(g, params);
    println!(
        "page: seed {seed} geometry {}x{}x{} planes, {} blocks x {} pages, {params:?}",
        g.channels, g.dies_per_chip, g.planes_per_die, g.blocks_per_plane, g.pages_per_block
    );
    let report = conformance::check(ftl.as_mut(), seed, mix).unwrap_or_else(|e| panic!("{e}"));
    assert!(report.write_amplification() >= 1.0);
    report
}

#[test]
fn conformance_single_plane_every_policy_and_wear_mode() {
    // 1 plane of 16 blocks x 4 pages, 25 % spare: garbage collection every few writes.
    let g = geometry(1, 1, 1, 16, 4);
    for (i, policy) in POLICIES.into_iter().enumerate() {
        for (j, (dynamic_wl, static_wl)) in WEAR.into_iter().enumerate() {
            let params = Params {
                over_provisioning_fraction: 0.25,
                gc_policy: policy,
                dynamic_wl,
                static_wl_threshold_erases: static_wl,
                seed: 7 + i as u64,
                ..Params::default()
            };
            let seed = 1000 + (i * 10 + j) as u64;
            let r = run(g, &params, seed, Mix::default());
            assert!(r.total_erases() > 100, "seed {seed}: GC must run often");
        }
    }
}

#[test]
fn conformance_many_planes_every_policy() {
    // 2 channels x 2 dies x 2 planes, tiny blocks.
    let g = geometry(2, 2, 2, 16, 4);
    for (i, policy) in POLICIES.into_iter().enumerate() {
        for seed in [11u64, 12] {
            let params = Params {
                over_provisioning_fraction: 0.2,
                gc_policy: policy,
                seed: seed + i as u64,
                ..Params::default()
            };
            let seed = seed * 100 + i as u64;
            run(g, &params, seed, Mix::default());
            run(
                g,
                &params,
                seed + 1,
                Mix {
                    span_fraction: 0.3,
                    write_percent: 80,
                    read_percent: 15,
                    ..Mix::default()
                },
            );
        }
    }
}

#[test]
fn conformance_low_and_high_over_provisioning() {
    // 2 channels x 2 planes, 64 blocks of 8 pages: 2048 pages; 5 % spare is just above the
    // two blocks per plane that garbage collection needs.
    let g = geometry(2, 1, 2, 64, 8);
    for op in [0.05, 0.07, 0.3, 0.5] {
        for (k, policy) in [GcPolicy::Greedy, GcPolicy::CostBenefit, GcPolicy::Fifo]
            .into_iter()
            .enumerate()
        {
            let params = Params {
                over_provisioning_fraction: op,
                gc_policy: policy,
                static_wl_threshold_erases: Some(8),
                ..Params::default()
            };
            let seed = 5000 + (op * 100.0) as u64 + k as u64;
            let r = run(
                g,
                &params,
                seed,
                Mix {
                    steps: 40_000,
                    write_percent: 85,
                    read_percent: 10,
                    ..Mix::default()
                },
            );
            println!(
                "op {op} {}: WAF {:.3}",
                policy.name(),
                r.write_amplification()
            );
        }
    }
}

/// Runs the FTL's idle work before some writes, so the suite checks what idle emits.
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
        if self.n == 3 {
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
fn conformance_with_background_gc_between_writes() {
    let g = geometry(2, 1, 1, 32, 4);
    for policy in [GcPolicy::Greedy, GcPolicy::Random] {
        let params = Params {
            over_provisioning_fraction: 0.3,
            gc_policy: policy,
            gc_background: true,
            gc_high_watermark_blocks: 6,
            static_wl_threshold_erases: Some(5),
            ..Params::default()
        };
        let mut ftl = IdleFirst {
            inner: build(g, &params),
            n: 0,
        };
        let seed = 77;
        println!("page with background GC: seed {seed}, {params:?}");
        conformance::check(&mut ftl, seed, Mix::default()).unwrap_or_else(|e| panic!("{e}"));
        assert!(counter(ftl.inner.as_ref(), "gc_background_victim_blocks") > 0.0);
    }
}

/// One plane of 8 blocks x 4 pages with 25 % spare: 24 logical pages; blocks are opened in
/// order 0, 1, 2, ... (FIFO free pool).
fn small_fifo_ftl(policy: GcPolicy) -> Box<dyn Ftl> {
    build(
        geometry(1, 1, 1, 8, 4),
        &Params {
            over_provisioning_fraction: 0.25,
            gc_policy: policy,
            dynamic_wl: false,
            static_wl_threshold_erases: None,
            ..Params::default()
        },
    )
}

fn write(ftl: &mut dyn Ftl, lpn: u64) -> Vec<FlashOp> {
    let mut ops = Vec::new();
    ftl.write(lpn, &mut ops).unwrap();
    ops
}

fn erased_blocks(ops: &[FlashOp], ppb: u32) -> Vec<u32> {
    ops.iter()
        .filter(|o| o.kind == FlashOpKind::Erase)
        .map(|o| o.ppa.0 / ppb)
        .collect()
}

#[test]
fn gc_triggers_exactly_at_the_low_watermark() {
    let mut ftl = small_fifo_ftl(GcPolicy::Greedy);
    assert_eq!(ftl.logical_pages(), 24);
    // Filling 24 pages uses blocks 0..=5: 2 of 8 blocks stay free, no collection.
    for lpn in 0..24 {
        let ops = write(ftl.as_mut(), lpn);
        assert_eq!(ops.len(), 1);
        assert_eq!(ops[0].dep, Dep::None);
    }
    assert_eq!(counter(ftl.as_ref(), "free_blocks"), 2.0);
    // Overwriting page 0 opens block 6: 2 free blocks is not below the watermark of 2.
    let ops = write(ftl.as_mut(), 0);
    assert_eq!(ops, [FlashOp::program(Ppa(24), Cause::Host, Dep::None)]);
    assert_eq!(counter(ftl.as_ref(), "free_blocks"), 1.0);
    assert_eq!(counter(ftl.as_ref(), "gc_invocations"), 0.0);
    // Now 1 < 2: the next write collects block 0 (3 valid pages, the fewest) into the rest of
    // block 6, erases it, and the host's program (first page of block 7) waits for all that.
    let ops = write(ftl.as_mut(), 1);
    let expected = vec![
        FlashOp::read(Ppa(1), Cause::Gc, Dep::None),
        FlashOp::copy(Ppa(1), Ppa(25), Cause::Gc, Dep::Previous),
        FlashOp::read(Ppa(2), Cause::Gc, Dep::None),
        FlashOp::copy(Ppa(2), Ppa(26), Cause::Gc, Dep::Previous),
        FlashOp::read(Ppa(3), Cause::Gc, Dep::None),
        FlashOp::copy(Ppa(3), Ppa(27), Cause::Gc, Dep::Previous),
        FlashOp::erase(Ppa(0), Cause::Gc, Dep::All),
        FlashOp::program(Ppa(28), Cause::Host, Dep::All),
    ];
    assert_eq!(ops, expected);
    assert_eq!(counter(ftl.as_ref(), "gc_invocations"), 1.0);
    assert_eq!(counter(ftl.as_ref(), "gc_victim_blocks"), 1.0);
    assert_eq!(counter(ftl.as_ref(), "gc_copied_pages"), 3.0);
    assert_eq!(ftl.lookup(1), Some(Ppa(28)));
    assert_eq!(ftl.lookup(2), Some(Ppa(26)));
    assert_eq!(ftl.valid_data_pages(), 24);
}

/// Fills the small FTL, then trims so that blocks 0..=3 keep 3, 2, 1 and 4 valid pages, then
/// overwrites page 12 (block 3 keeps 3) which opens block 6; returns the next write's ops,
/// which collect one victim.
fn victim_after_shaping(policy: GcPolicy) -> Vec<u32> {
    let mut ftl = small_fifo_ftl(policy);
    for lpn in 0..24 {
        write(ftl.as_mut(), lpn);
    }
    let mut ops = Vec::new();
    for lpn in [0, 4, 5, 8, 9, 10] {
        ftl.trim(lpn, &mut ops).unwrap();
    }
    assert!(ops.is_empty(), "a trim costs no flash operation");
    write(ftl.as_mut(), 12);
    erased_blocks(&write(ftl.as_mut(), 13), 4)
}

#[test]
fn greedy_picks_the_block_with_fewest_valid_pages() {
    // Block 2 has 1 valid page; blocks 0, 1, 3 have 3, 2, 3.
    assert_eq!(victim_after_shaping(GcPolicy::Greedy)[0], 2);
    // FIFO takes the earliest-filled candidate, block 0.
    assert_eq!(victim_after_shaping(GcPolicy::Fifo)[0], 0);
}

/// Drives two FTLs with the same random stream and asserts they emit identical operations.
fn same_behaviour(a: &Params, b: &Params, seed: u64) {
    let g = geometry(2, 1, 2, 16, 4);
    let (mut fa, mut fb) = (build(g, a), build(g, b));
    let mut rng = storsim_core::Prng::new(seed);
    let n = fa.logical_pages();
    let (mut oa, mut ob) = (Vec::new(), Vec::new());
    for step in 0..20_000 {
        let lpn = rng.below(n);
        oa.clear();
        ob.clear();
        fa.write(lpn, &mut oa).unwrap();
        fb.write(lpn, &mut ob).unwrap();
        assert_eq!(oa, ob, "seed {seed} step {step}");
    }
    assert!(counter(fa.as_ref(), "gc_victim_blocks") > 1000.0);
}

#[test]
fn d_choices_one_is_greedy_and_zero_is_random() {
    let with = |policy| Params {
        over_provisioning_fraction: 0.25,
        gc_policy: policy,
        seed: 99,
        ..Params::default()
    };
    let seed = 4242;
    println!("seed {seed}");
    same_behaviour(
        &with(GcPolicy::DChoices {
            fraction_searched: 1.0,
        }),
        &with(GcPolicy::Greedy),
        seed,
    );
    same_behaviour(
        &with(GcPolicy::DChoices {
            fraction_searched: 0.0,
        }),
        &with(GcPolicy::Random),
        seed,
    );
}

#[test]
fn random_threshold_zero_is_random_and_a_threshold_collects_emptier_blocks() {
    let with = |policy| Params {
        over_provisioning_fraction: 0.25,
        gc_policy: policy,
        seed: 99,
        ..Params::default()
    };
    let seed = 4243;
    println!("seed {seed}");
    // Every candidate has an invalid page, so a threshold of none accepts the first draw.
    same_behaviour(
        &with(GcPolicy::RandomThreshold {
            min_invalid_fraction: 0.0,
        }),
        &with(GcPolicy::Random),
        seed,
    );
    // Under uniform random overwrites a victim with half its pages invalid or more costs
    // fewer copies than any candidate: the same writes make less write amplification.
    let waf = |policy| {
        let mut ftl = build(geometry(1, 1, 2, 32, 16), &with(policy));
        let mut rng = storsim_core::Prng::new(seed);
        let logical = ftl.logical_pages();
        let mut ops = Vec::new();
        for _ in 0..20 * logical {
            ops.clear();
            ftl.write(rng.below(logical), &mut ops).unwrap();
        }
        let copied = counter(ftl.as_ref(), "gc_copied_pages");
        (copied + counter(ftl.as_ref(), "host_writes")) / counter(ftl.as_ref(), "host_writes")
    };
    let random = waf(GcPolicy::Random);
    let threshold = waf(GcPolicy::RandomThreshold {
        min_invalid_fraction: 0.5,
    });
    assert!(
        threshold < random * 0.9,
        "random-threshold's write amplification {threshold} against random's {random}"
    );
}

#[test]
fn cost_benefit_prefers_the_old_cold_block_that_greedy_passes_over() {
    // 1 plane of 12 blocks x 16 pages; 16.5 % spare leaves 160 logical pages.
    let victim = |policy| {
        let mut ftl = build(
            geometry(1, 1, 1, 12, 16),
            &Params {
                over_provisioning_fraction: 0.165,
                gc_policy: policy,
                gc_low_watermark_blocks: 3,
                dynamic_wl: false,
                static_wl_threshold_erases: None,
                ..Params::default()
            },
        );
        assert_eq!(ftl.logical_pages(), 160);
        let mut ops = Vec::new();
        // Blocks 0..=7 full at host write 128; block 0 loses 4 pages then (u = 0.75).
        for lpn in 0..128 {
            write(ftl.as_mut(), lpn);
        }
        for lpn in 0..4 {
            ftl.trim(lpn, &mut ops).unwrap();
        }
        // 16 more writes fill block 8; then block 7 loses 8 pages (u = 0.5) at write 144.
        for lpn in 128..144 {
            write(ftl.as_mut(), lpn);
        }
        for lpn in 112..120 {
            ftl.trim(lpn, &mut ops).unwrap();
        }
        // Write 144 opens block 9 (3 free -> 2); write 145 collects. Cost-benefit: block 0
        // scores 17 x 0.25 / 1.5 = 2.8, block 7 scores 1 x 0.5 / 1.0 = 0.5.
        assert!(erased_blocks(&write(ftl.as_mut(), 144), 16).is_empty());
        erased_blocks(&write(ftl.as_mut(), 145), 16)[0]
    };
    assert_eq!(victim(GcPolicy::CostBenefit), 0);
    assert_eq!(victim(GcPolicy::Greedy), 7);
}

/// Replays operations on a per-block mirror: programmed pages and erase counts, checking that
/// no program reaches a retired block and, when asked, that every block opened is the least
/// worn free block of its plane. Returns how many openings were not the least worn.
struct BlockMirror {
    g: Geometry,
    endurance: u32,
    programmed: Vec<u32>,
    erases: Vec<u32>,
    not_least_worn: u64,
    openings: u64,
}

impl BlockMirror {
    fn new(g: Geometry, endurance: u32) -> Self {
        BlockMirror {
            g,
            endurance,
            programmed: vec![0; g.blocks() as usize],
            erases: vec![0; g.blocks() as usize],
            not_least_worn: 0,
            openings: 0,
        }
    }
    fn retired(&self, b: usize) -> bool {
        self.erases[b] >= self.endurance
    }
    fn apply(&mut self, ops: &[FlashOp]) {
        for op in ops {
            let b = self.g.block_of(op.ppa).0 as usize;
            match op.kind {
                FlashOpKind::Program => {
                    assert!(!self.retired(b), "program of retired block {b}: {op:?}");
                    if self.programmed[b] == 0 {
                        self.openings += 1;
                        let plane = self.g.plane_of(BlockId(b as u32));
                        let bpp = self.g.blocks_per_plane as usize;
                        let first = plane as usize * bpp;
                        let least = (first..first + bpp)
                            .filter(|&x| self.programmed[x] == 0 && !self.retired(x))
                            .map(|x| self.erases[x])
                            .min()
                            .unwrap();
                        if self.erases[b] != least {
                            self.not_least_worn += 1;
                        }
                    }
                    self.programmed[b] += 1;
                }
                FlashOpKind::Erase => {
                    assert!(!self.retired(b), "erase of retired block {b}");
                    self.programmed[b] = 0;
                    self.erases[b] += 1;
                }
                _ => {}
            }
        }
    }
}

fn skewed_writes(ftl: &mut dyn Ftl, mirror: &mut BlockMirror, seed: u64, writes: u64) {
    let mut rng = storsim_core::Prng::new(seed);
    let n = ftl.logical_pages();
    let mut ops = Vec::new();
    for lpn in 0..n {
        ops.clear();
        ftl.write(lpn, &mut ops).unwrap();
        mirror.apply(&ops);
    }
    // 95 % of the writes go to the first 10 % of the pages.
    for _ in 0..writes {
        let lpn = if rng.below(100) < 95 {
            rng.below(n / 10)
        } else {
            rng.below(n)
        };
        ops.clear();
        ftl.write(lpn, &mut ops).unwrap();
        mirror.apply(&ops);
    }
}

#[test]
fn dynamic_wear_levelling_opens_the_least_worn_free_block() {
    let g = geometry(2, 1, 1, 32, 4);
    for dynamic_wl in [true, false] {
        let mut ftl = build(
            g,
            &Params {
                over_provisioning_fraction: 0.25,
                dynamic_wl,
                static_wl_threshold_erases: None,
                ..Params::default()
            },
        );
        let mut mirror = BlockMirror::new(g, 100_000);
        let seed = 31;
        println!("dynamic_wl {dynamic_wl}: seed {seed}");
        skewed_writes(ftl.as_mut(), &mut mirror, seed, 20_000);
        assert!(mirror.openings > 1000);
        if dynamic_wl {
            assert_eq!(mirror.not_least_worn, 0);
        } else {
            assert!(
                mirror.not_least_worn > 0,
                "FIFO reuse is not least-worn-first"
            );
        }
    }
}

fn spread(nand: &NandArray) -> u32 {
    let live = (0..nand.geometry().blocks())
        .filter(|&b| !nand.is_retired(BlockId(b)))
        .map(|b| nand.erase_count(BlockId(b)));
    live.clone().max().unwrap() - live.min().unwrap()
}

#[test]
fn static_wear_levelling_moves_cold_data_and_narrows_the_spread() {
    let g = geometry(2, 1, 1, 32, 4);
    let seed = 32;
    // (threshold, erases per move): off, unpaced, and the default pacing.
    let mut spreads = Vec::new();
    for (threshold, per_move) in [(None, 8), (Some(10), 1), (Some(10), 8)] {
        let mut ftl = build(
            g,
            &Params {
                over_provisioning_fraction: 0.25,
                static_wl_threshold_erases: threshold,
                static_wl_erases_per_move: per_move,
                ..Params::default()
            },
        );
        let mut mirror = BlockMirror::new(g, 100_000);
        skewed_writes(ftl.as_mut(), &mut mirror, seed, 60_000);
        let s = spread(ftl.nand());
        let moves = counter(ftl.as_ref(), "wear_level_moves");
        let erases = ftl.nand().total_erases() as f64;
        println!(
            "seed {seed}: threshold {threshold:?}, {per_move} erases per move: spread {s}, \
             {moves} moves in {erases} erases"
        );
        match threshold {
            None => assert_eq!(moves, 0.0),
            Some(t) => {
                assert!(moves > 0.0);
                assert!(moves <= erases / per_move as f64 + 1.0, "pacing");
                if per_move == 1 {
                    assert!(s <= t + 2, "spread {s} with threshold {t}");
                }
            }
        }
        spreads.push(s);
    }
    assert!(
        spreads[1] * 3 < spreads[0] && spreads[2] < spreads[0],
        "static WL must narrow the spread: {spreads:?}"
    );
}

#[test]
fn retired_blocks_get_no_programs_and_the_device_reports_worn_out() {
    let g = geometry(2, 1, 1, 16, 4);
    let endurance = 6;
    for (dynamic_wl, static_wl) in [(true, Some(2)), (false, None)] {
        let mut ftl = page::new(
            g,
            endurance,
            &Params {
                over_provisioning_fraction: 0.3,
                dynamic_wl,
                static_wl_threshold_erases: static_wl,
                ..Params::default()
            },
        )
        .unwrap();
        let mut mirror = BlockMirror::new(g, endurance);
        let mut rng = storsim_core::Prng::new(8);
        let n = ftl.logical_pages();
        let mut ops = Vec::new();
        let mut error = None;
        for _ in 0..1_000_000 {
            ops.clear();
            match ftl.write(rng.below(n), &mut ops) {
                Ok(()) => mirror.apply(&ops),
                Err(e) => {
                    mirror.apply(&ops);
                    error = Some(e);
                    break;
                }
            }
        }
        let retired = ftl.nand().retired_blocks();
        assert!(
            matches!(error, Some(FtlError::WornOut { retired_blocks }) if retired_blocks == retired),
            "{error:?}"
        );
        assert_eq!(counter(ftl.as_ref(), "retired_blocks"), retired as f64);
        assert_eq!(counter(ftl.as_ref(), "worn_out"), 1.0);
        // Reads still work; writes keep failing cleanly.
        for lpn in 0..n {
            ops.clear();
            ftl.read(lpn, &mut ops).unwrap();
        }
        assert!(matches!(
            ftl.write(0, &mut ops),
            Err(FtlError::WornOut { .. })
        ));
    }
}

#[test]
fn bad_requests_and_parameters_are_errors_not_panics() {
    let g = geometry(1, 1, 1, 8, 4);
    let mut ftl = small_fifo_ftl(GcPolicy::Greedy);
    let mut ops = Vec::new();
    for lpn in [24, 1 << 40, u64::MAX] {
        assert!(matches!(
            ftl.write(lpn, &mut ops),
            Err(FtlError::OutOfRange { .. })
        ));
        assert!(matches!(
            ftl.read(lpn, &mut ops),
            Err(FtlError::OutOfRange { .. })
        ));
        assert!(matches!(
            ftl.trim(lpn, &mut ops),
            Err(FtlError::OutOfRange { .. })
        ));
        assert_eq!(ftl.lookup(lpn), None);
    }
    assert!(ops.is_empty());
    let reject = |p: Params| matches!(page::new(g, 10, &p), Err(FtlError::Rejected { .. }));
    // 7 % of 32 pages leaves less than two spare blocks for garbage collection.
    assert!(reject(Params::default()));
    let base = Params {
        over_provisioning_fraction: 0.25,
        ..Params::default()
    };
    assert!(!reject(base.clone()));
    assert!(reject(Params {
        gc_low_watermark_blocks: 1,
        ..base.clone()
    }));
    assert!(reject(Params {
        gc_high_watermark_blocks: 1,
        ..base.clone()
    }));
    assert!(reject(Params {
        over_provisioning_fraction: 1.0,
        ..base.clone()
    }));
    assert!(reject(Params {
        gc_policy: GcPolicy::DChoices {
            fraction_searched: 1.5
        },
        ..base.clone()
    }));
    assert!(reject(Params {
        static_wl_threshold_erases: Some(0),
        ..base
    }));
}

#[test]
fn reads_and_trims_of_unwritten_pages_cost_nothing() {
    let mut ftl = small_fifo_ftl(GcPolicy::Greedy);
    let mut ops = Vec::new();
    ftl.read(3, &mut ops).unwrap();
    ftl.trim(3, &mut ops).unwrap();
    assert!(ops.is_empty());
    write(ftl.as_mut(), 3);
    ftl.read(3, &mut ops).unwrap();
    assert_eq!(ops, [FlashOp::read(Ppa(0), Cause::Host, Dep::None)]);
}

#[test]
fn striping_visits_channels_then_dies_then_planes() {
    // 2 channels x 2 dies x 2 planes, 4 blocks of 4 pages each.
    let g = geometry(2, 2, 2, 8, 4);
    let mut ftl = build(
        g,
        &Params {
            over_provisioning_fraction: 0.3,
            ..Params::default()
        },
    );
    let planes: Vec<u32> = (0..8)
        .map(|lpn| g.plane_of(g.block_of(write(ftl.as_mut(), lpn)[0].ppa)))
        .collect();
    let expected: Vec<u32> = (0..8).map(|n| g.striped_plane(n)).collect();
    assert_eq!(planes, expected);
}

#[test]
fn static_allocation_puts_each_address_on_the_plane_its_order_chooses() {
    use storsim_ftl::page::{Part, PlaneAllocation};
    // 2 channels x 2 dies x 2 planes.
    let g = geometry(2, 2, 2, 8, 4);
    let plane_of = |ops: &[FlashOp]| {
        let program = ops.iter().find(|o| o.kind == FlashOpKind::Program).unwrap();
        g.plane_of(g.block_of(program.ppa))
    };
    // Planes are numbered (channel × 2 + die) × 2 + plane. Under PDWC the plane varies
    // fastest, so the address's position is the geometry's own numbering; under CWDP the
    // channel varies fastest.
    for (order, expected) in [
        (
            [Part::Plane, Part::Die, Part::Way, Part::Channel],
            [0, 1, 2, 3, 4, 5, 6, 7],
        ),
        (
            [Part::Channel, Part::Way, Part::Die, Part::Plane],
            [0, 4, 2, 6, 1, 5, 3, 7],
        ),
    ] {
        let mut ftl = build(
            g,
            &Params {
                over_provisioning_fraction: 0.3,
                plane_allocation: PlaneAllocation::Static(order),
                ..Params::default()
            },
        );
        // Addresses in a scrambled order land where their address says, not in write order,
        // and an address written again stays on its plane (the round-robin would move it).
        for lpn in [5u64, 0, 7, 2, 3, 6, 1, 4, 13, 8] {
            let plane = plane_of(&write(ftl.as_mut(), lpn));
            assert_eq!(plane, expected[(lpn % 8) as usize], "{order:?} lpn {lpn}");
        }
        assert_eq!(plane_of(&write(ftl.as_mut(), 5)), expected[5]);
    }
}

/// Random small geometries and parameters, each drawn from its printed seed.
pub fn random_setup(seed: u64) -> (Geometry, Params) {
    let mut r = storsim_core::Prng::new(seed);
    let g = geometry(
        1 + r.below(2) as u32,
        1 + r.below(2) as u32,
        1 + r.below(2) as u32,
        6 + r.below(40) as u32,
        2 + r.below(9) as u32,
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
    // The least over-provisioning that leaves two blocks per plane, plus up to 30 %.
    let min_op = (2 * g.planes() * g.pages_per_block) as f64 / g.pages() as f64;
    let low = 2 + r.below(3) as u32;
    let params = Params {
        over_provisioning_fraction: (min_op + 0.01 + r.below(30) as f64 / 100.0).min(0.9),
        gc_policy: policy,
        gc_low_watermark_blocks: low,
        gc_background: r.below(2) == 0,
        gc_high_watermark_blocks: low + r.below(4) as u32,
        dynamic_wl: r.below(2) == 0,
        static_wl_threshold_erases: [None, Some(1), Some(3), Some(20)][r.below(4) as usize],
        static_wl_erases_per_move: 1 + r.below(8) as u32,
        seed,
        // One setup in three places pages by their address, in one of MQSim's 24 orders.
        plane_allocation: if r.below(3) == 0 {
            let name = page::PLANE_ALLOCATIONS[1 + r.below(24) as usize];
            page::PlaneAllocation::from_name(name).unwrap()
        } else {
            page::PlaneAllocation::Dynamic
        },
    };
    (g, params)
}

#[test]
fn conformance_on_random_setups() {
    let mut built = 0;
    for seed in 0..300u64 {
        let (g, params) = random_setup(seed);
        let Ok(inner) = page::new(g, 100_000, &params) else {
            continue;
        };
        built += 1;
        let mut ftl = IdleFirst { inner, n: 0 };
        let mix = Mix {
            steps: 4_000,
            span_fraction: [1.0, 0.5, 0.1][seed as usize % 3],
            full_check_every: 500,
            ..Mix::default()
        };
        conformance::check(&mut ftl, seed, mix)
            .unwrap_or_else(|e| panic!("{e}\n{g:?}\n{params:?}"));
    }
    assert!(built > 250, "only {built} setups were accepted");
}

#[test]
fn random_setups_wear_out_cleanly() {
    // Low endurance: run until the device wears out. Every error must be WornOut (never a
    // NAND rule broken, never a panic), and no program may reach a retired block.
    for seed in 0..150u64 {
        let (g, params) = random_setup(seed);
        let endurance = 3 + (seed % 10) as u32;
        let Ok(inner) = page::new(g, endurance, &params) else {
            continue;
        };
        let mut ftl = IdleFirst { inner, n: 0 };
        let mut mirror = BlockMirror::new(g, endurance);
        let mut rng = storsim_core::Prng::new(seed);
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
            mirror.apply(&ops);
            if let Err(e) = r {
                outcome = Some(e);
                break;
            }
        }
        assert!(
            matches!(outcome, Some(FtlError::WornOut { .. })),
            "seed {seed}: {outcome:?}\n{g:?}\n{params:?}"
        );
    }
}

#[test]
fn background_gc_stops_at_the_high_watermark() {
    // 2 planes of 32 blocks x 4 pages; high watermark 6 free blocks per plane.
    let g = geometry(2, 1, 1, 32, 4);
    let mut ftl = build(
        g,
        &Params {
            over_provisioning_fraction: 0.3,
            gc_background: true,
            gc_high_watermark_blocks: 6,
            ..Params::default()
        },
    );
    let mut rng = storsim_core::Prng::new(5);
    let n = ftl.logical_pages();
    let mut ops = Vec::new();
    for _ in 0..5_000 {
        ops.clear();
        ftl.write(rng.below(n), &mut ops).unwrap();
    }
    let free_before = counter(ftl.as_ref(), "free_blocks");
    assert!(free_before < 12.0);
    let mut calls = 0;
    loop {
        ops.clear();
        if !ftl.idle(&mut ops).unwrap() {
            break;
        }
        calls += 1;
        assert!(calls < 64, "idle work must run out");
        // One victim per call: its copies, then its erase, last.
        assert_eq!(
            ops.iter().filter(|o| o.kind == FlashOpKind::Erase).count(),
            1
        );
        assert_eq!(ops.last().unwrap().kind, FlashOpKind::Erase);
        assert!(ops.iter().all(|o| o.cause == Cause::Gc));
    }
    assert!(calls > 0);
    assert_eq!(
        counter(ftl.as_ref(), "gc_background_victim_blocks"),
        calls as f64
    );
    assert_eq!(counter(ftl.as_ref(), "free_blocks"), 12.0);
}

/// A high watermark the spare space cannot give is capped: background collection stops with a
/// low watermark's worth of spare blocks left as invalid pages, rather than collecting
/// nearly-full blocks for ever (64 blocks a plane, 7 % spare: about 4.5 spare blocks).
#[test]
fn background_gc_target_is_capped_by_the_spare_space() {
    let g = geometry(2, 1, 1, 64, 32);
    let mut ftl = build(
        g,
        &Params {
            over_provisioning_fraction: 0.07,
            gc_background: true,
            gc_high_watermark_blocks: 8,
            ..Params::default()
        },
    );
    let mut rng = storsim_core::Prng::new(9);
    let n = ftl.logical_pages();
    let mut ops = Vec::new();
    for _ in 0..20_000 {
        ops.clear();
        ftl.write(rng.below(n), &mut ops).unwrap();
    }
    let spare_per_plane = (g.pages() as u64 - n) / 32 / 2;
    let cap = spare_per_plane - 2;
    let mut calls = 0;
    loop {
        ops.clear();
        if !ftl.idle(&mut ops).unwrap() {
            break;
        }
        calls += 1;
        assert!(calls < 1_000, "idle work must run out");
    }
    let free = counter(ftl.as_ref(), "free_blocks");
    assert!(
        free <= (2 * cap) as f64,
        "{free} free blocks, more than the cap of {cap} a plane"
    );
    // Host writes after the idle period cost no more than they did before it.
    let programs = |ops: &[storsim_ftl::FlashOp]| {
        ops.iter()
            .filter(|o| o.kind == FlashOpKind::Program)
            .count()
    };
    let mut total = 0;
    for _ in 0..5_000 {
        ops.clear();
        ftl.write(rng.below(n), &mut ops).unwrap();
        total += programs(&ops);
    }
    let waf = total as f64 / 5_000.0;
    assert!(waf < 20.0, "write amplification {waf}");
}
