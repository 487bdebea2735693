//! SSD-level conformance, for every FTL in [`storsim_ftl::FTLS`]: a small FlashSim-like device
//! driven directly through the [`Device`] contract by a seeded random workload (reads, writes,
//! trims, flushes, multi-page and unaligned requests, random arrival gaps and idle periods,
//! several queue depths, with and without a write buffer and background GC).
//!
//! Checked for every request: it completes exactly once, at the instant the device announced
//! (`next_deadline`), with `arrival <= service_start <= finish`, and never before the physical
//! minimum worked out here from the [`Timing`] alone (a die does one operation at a time; a
//! channel moves one thing at a time). Checked at the end: the counters add up (per-cause sums,
//! write amplification, host pages, erase-count histogram, the array's erase total) and the
//! FTL's mapping matches a shadow of what the workload wrote.
//!
//! Seeds are property-test style: `SEEDS_PER_FTL` consecutive seeds from a base, each printed
//! before it runs. `STORSIM_TEST_SEED=N` sets the base, so a printed seed replays first.
//!
//! `raw` exposes the flash: it refuses to program a page that is not erased, so its workload
//! writes only erased pages and erases blocks by discarding every programmed page of them (see
//! docs/models/ftl-raw.md); the shadow follows those rules and checks the FTL agrees.

use std::collections::VecDeque;
use storsim_core::{Completion, Device, DeviceError, Op, Prng, Request, SimDuration, SimTime};
use storsim_flash::{CellType, DieScheduling, Geometry, MultiPlane, Ppa, Suspension, Timing};
use storsim_ftl::{Cause, FtlConfig};
use storsim_ssd::{
    presets, Precondition, SlcCacheSpec, SsdDevice, SsdParams, WhenFull, WriteBuffer,
};

const SEEDS_PER_FTL: u64 = 8;
const DEFAULT_BASE_SEED: u64 = 20_240_601;

/// The first seed: `STORSIM_TEST_SEED` if set (the same variable the FTL suite reads).
fn base_seed() -> u64 {
    storsim_ftl::conformance::seed_from_env()
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or(DEFAULT_BASE_SEED)
}

fn us(x: f64) -> SimDuration {
    SimDuration::from_us_f64(x)
}

/// The device for one seed: FlashSim 2009's timing on a shrunk geometry, with the seed's
/// choice of cell type, queue depth, write buffer, overhead, precondition and background GC.
fn params(name: &str, rng: &mut Prng) -> SsdParams {
    let mut ftl = FtlConfig::default_for(name).expect("a listed FTL has defaults");
    let background_gc = rng.below(3) == 0;
    // The SSD decides when the device is idle; the page-mapped FTLs must agree to collect then
    // (the config layer sets both from one key).
    ftl.set_background_gc(background_gc);
    let mut p = presets::flashsim_2009(ftl);
    p.geometry = Geometry {
        channels: 2,
        chips_per_channel: 1,
        dies_per_chip: 2,
        planes_per_die: 1 + rng.below(2) as u32,
        blocks_per_plane: 32,
        pages_per_block: [8, 16][rng.below(2) as usize],
        page_bytes: 2048,
        oob_bytes: 64,
    };
    if rng.below(3) == 0 {
        // MLC, or QLC on the larger blocks: page levels differ, so the minima must take the
        // fastest level.
        if p.geometry.pages_per_block == 16 {
            p.timing.cell = CellType::Qlc;
            p.timing.read = [us(80.0), us(110.0), us(140.0), us(170.0)];
            p.timing.program = [us(600.0), us(1500.0), us(2500.0), us(3000.0)];
        } else {
            p.timing.cell = CellType::Mlc;
            p.timing.read = [us(130.9), us(190.0), us(130.9), us(130.9)];
            p.timing.program = [us(405.9), us(900.0), us(405.9), us(405.9)];
        }
    }
    p.queue_depth = [1, 2, 4, 8, 32][rng.below(5) as usize];
    p.write_buffer = match rng.below(3) {
        0 => Some(WriteBuffer {
            capacity_bytes: (4 + rng.below(28)) * 2048,
            latency: us(1.0 + rng.below(5) as f64),
        }),
        _ => None,
    };
    p.controller_overhead = [SimDuration::ZERO, us(3.0)][rng.below(2) as usize];
    p.precondition = match rng.below(3) {
        0 => Precondition::Clean,
        _ => Precondition::SequentialFill {
            fraction: [0.3, 0.6, 0.9][rng.below(3) as usize],
        },
    };
    p.background_gc = background_gc;
    p.idle_gc_delay = us(200.0);
    p.seed = rng.next_u64();
    p.multi_plane =
        [MultiPlane::Off, MultiPlane::SamePage, MultiPlane::AnyPage][rng.below(3) as usize];
    // Drawn last, so that the draws above stay what they were before the policies existed.
    p.die_scheduling = [
        DieScheduling::Fifo,
        DieScheduling::ReadPriority,
        DieScheduling::Suspend(Suspension {
            min_run: us(rng.below(200) as f64),
            max_suspensions: 1 + rng.below(8) as u32,
            ..Suspension::default()
        }),
    ][rng.below(3) as usize];
    p.gc_reads_priority = rng.below(2) == 0;
    // A dynamic SLC cache on half the multi-level devices whose FTL can have one (the static
    // cache needs more spare space than these small devices have), with SLC-mode times faster
    // than any level's, which the minima must then take.
    let bits = p.timing.cell.bits();
    if matches!(name, "page" | "dftl") && bits > 1 && rng.below(2) == 0 {
        let block_bytes = (p.geometry.pages_per_block / bits) as u64 * 2048;
        p.slc_cache = Some(SlcCacheSpec {
            static_bytes: 0,
            dynamic_max_bytes: (1 + rng.below(16)) * block_bytes,
            when_full: [WhenFull::Direct, WhenFull::Fold][rng.below(2) as usize],
            static_endurance_erases: 100_000,
        });
        p.timing.slc_read = Some(SimDuration(p.timing.read[0].as_ns() / 2));
        p.timing.slc_program = Some(SimDuration(p.timing.program[0].as_ns() / 4));
    }
    p
}

/// Physical minima, from the timing alone.
struct Minima {
    overhead: u64,
    command: u64,
    transfer: u64,
    read: u64,
    program: u64,
    erase: u64,
    /// Pages a die can take through the array at once: its planes with multi-plane commands,
    /// else one.
    planes: u64,
}

impl Minima {
    fn new(p: &SsdParams) -> Self {
        let t: &Timing = &p.timing;
        let levels = t.cell.bits() as usize;
        let bytes = p.geometry.page_bytes as u64 + p.geometry.oob_bytes as u64;
        let per_us = t.channel_mts as u64 * t.channel_width_bytes as u64;
        Minima {
            overhead: p.controller_overhead.as_ns(),
            command: t.command.as_ns(),
            // Page and spare bytes cross the channel, rounded up to the ns.
            transfer: (bytes * 1000).div_ceil(per_us),
            read: t.read[..levels]
                .iter()
                .chain(p.slc_cache.map(|_| t.slc_read_time()).as_ref())
                .map(|d| d.as_ns())
                .min()
                .unwrap(),
            program: t.program[..levels]
                .iter()
                .chain(p.slc_cache.map(|_| t.slc_program_time()).as_ref())
                .map(|d| d.as_ns())
                .min()
                .unwrap(),
            erase: t.erase.as_ns(),
            planes: match p.multi_plane {
                MultiPlane::Off => 1,
                MultiPlane::SamePage | MultiPlane::AnyPage => p.geometry.planes_per_die as u64,
            },
        }
    }

    /// Reading pages that sit `per_die` to a die and `per_channel` to a channel: each read
    /// holds its die for two commands and the transfer, and one tR per command (which
    /// multi-plane commands share among planes), and its channel for two commands and the
    /// transfer.
    fn read(&self, per_die: u64, per_channel: u64) -> u64 {
        let io = 2 * self.command + self.transfer;
        let die = per_die * io + per_die.div_ceil(self.planes) * self.read;
        self.overhead + die.max(per_channel * io)
    }

    /// Programming pages `per_die` / `per_channel`: command + transfer on the channel, then
    /// tPROG on the die (shared by the planes of a multi-plane command).
    fn program(&self, per_die: u64, per_channel: u64) -> u64 {
        let io = self.command + self.transfer;
        let die = per_die * io + per_die.div_ceil(self.planes) * self.program;
        self.overhead + die.max(per_channel * io)
    }
}

/// Pages per die and per channel (the busiest of each) of a set of physical pages.
fn busiest(g: &Geometry, ppas: &[Ppa]) -> (u64, u64) {
    let mut dies = vec![0u64; g.dies() as usize];
    let mut channels = vec![0u64; g.channels as usize];
    for &p in ppas {
        let b = g.block_of(p);
        dies[g.die_of(b) as usize] += 1;
        channels[g.channel_of(b) as usize] += 1;
    }
    (
        dies.into_iter().max().unwrap_or(0),
        channels.into_iter().max().unwrap_or(0),
    )
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RawPage {
    Erased,
    Live,
    Discarded,
}

/// What the host believes the device holds.
enum Shadow {
    /// Translating FTLs: whether each logical page has data.
    Mapped(Vec<bool>),
    /// `raw`: the state of each physical page (= logical page).
    Raw {
        pages: Vec<RawPage>,
        pages_per_block: u64,
    },
}

impl Shadow {
    fn has_data(&self, lpn: u64) -> bool {
        match self {
            Shadow::Mapped(m) => m[lpn as usize],
            Shadow::Raw { pages, .. } => pages[lpn as usize] == RawPage::Live,
        }
    }

    fn write(&mut self, lpn: u64) {
        match self {
            Shadow::Mapped(m) => m[lpn as usize] = true,
            Shadow::Raw { pages, .. } => {
                assert_eq!(pages[lpn as usize], RawPage::Erased, "workload bug");
                pages[lpn as usize] = RawPage::Live;
            }
        }
    }

    /// Trims a page; returns whether that erased a block (raw only).
    fn trim(&mut self, lpn: u64) -> bool {
        match self {
            Shadow::Mapped(m) => {
                m[lpn as usize] = false;
                false
            }
            Shadow::Raw {
                pages,
                pages_per_block,
            } => {
                if pages[lpn as usize] != RawPage::Live {
                    return false;
                }
                pages[lpn as usize] = RawPage::Discarded;
                let first = (lpn / *pages_per_block * *pages_per_block) as usize;
                let block = &mut pages[first..first + *pages_per_block as usize];
                if block.iter().all(|&s| s != RawPage::Live) {
                    block.fill(RawPage::Erased);
                    true
                } else {
                    false
                }
            }
        }
    }

    /// Raw: the longest run of erased pages, at most `n`, starting at the first erased page
    /// at or after `from` (wrapping within `span`).
    fn erased_run(&self, from: u64, n: u64, span: u64) -> Option<(u64, u64)> {
        let Shadow::Raw { pages, .. } = self else {
            return Some((from, n));
        };
        let start = (0..span)
            .map(|k| (from + k) % span)
            .find(|&l| pages[l as usize] == RawPage::Erased)?;
        let len = (start..(start + n).min(span))
            .take_while(|&l| pages[l as usize] == RawPage::Erased)
            .count() as u64;
        Some((start, len))
    }
}

/// One generated request and what the host expects of it.
struct Planned {
    request: Request,
    /// Logical pages touched.
    first: u64,
    pages: u64,
}

struct Workload {
    rng: Prng,
    page_bytes: u64,
    pages_per_block: u64,
    logical: u64,
    span: u64,
    write_percent: u64,
    read_percent: u64,
    raw: bool,
    last_end: u64,
    clock: u64,
    next_id: u64,
}

impl Workload {
    /// The next request. The shadow is consulted only for raw (to write erased pages); it is
    /// updated when the request is submitted.
    fn next(&mut self, shadow: &Shadow) -> Planned {
        let rng = &mut self.rng;
        // Arrival gaps: bursts, busy traffic, and idle periods long enough for background GC.
        self.clock += match rng.below(20) {
            0..=7 => 0,
            8..=18 => rng.exponential(300_000.0) as u64,
            _ => rng.exponential(5_000_000.0) as u64,
        };
        let id = self.next_id;
        self.next_id += 1;
        let dice = rng.below(100);
        let mut op = if dice < 2 {
            Op::Flush
        } else if dice < 2 + self.write_percent {
            Op::Write
        } else if dice < 2 + self.write_percent + self.read_percent {
            Op::Read
        } else {
            Op::Trim
        };
        let mut pages = match rng.below(10) {
            0..=5 => 1,
            6..=8 => 2 + rng.below(3),
            _ => 5 + rng.below(12),
        };
        let mut first = if rng.below(100) < 30 {
            self.last_end % self.span
        } else {
            rng.below(self.span)
        };
        if op == Op::Trim && rng.below(3) == 0 {
            // Whole aligned blocks, as a flash file system discards them.
            first = first / self.pages_per_block * self.pages_per_block;
            pages = self.pages_per_block * (1 + rng.below(2));
        }
        pages = pages
            .min(self.span - first)
            .min(self.logical - first)
            .max(1);
        if op == Op::Write && self.raw {
            match shadow.erased_run(first, pages, self.span) {
                Some((f, n)) => (first, pages) = (f, n),
                None => op = Op::Trim,
            }
        }
        self.last_end = first + pages;
        let request = if op == Op::Flush {
            Request {
                id,
                op,
                offset_bytes: 0,
                len_bytes: 0,
                arrival: SimTime(self.clock),
                flow: 0,
            }
        } else {
            // One request in five is not page-aligned: it still touches pages first..first+pages.
            let p = self.page_bytes;
            let sectors = p / 512;
            let (mut head, mut tail) = (0, 0);
            if rng.below(5) == 0 {
                head = 512 * rng.below(sectors);
                tail = 512 * rng.below(sectors);
                if pages == 1 && head + tail >= p {
                    tail = 0;
                }
            }
            Request {
                id,
                op,
                offset_bytes: first * p + head,
                len_bytes: pages * p - head - tail,
                arrival: SimTime(self.clock),
                flow: 0,
            }
        };
        Planned {
            request,
            first,
            pages: if op == Op::Flush { 0 } else { pages },
        }
    }
}

#[derive(Default)]
struct Totals {
    read_pages: u64,
    write_pages: u64,
    trim_pages: u64,
    requests: u64,
}

fn counter(counters: &[storsim_core::DeviceCounter], name: &str) -> f64 {
    counters
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no counter {name}"))
        .value
}

/// One seed's device and what the checks know of it: the context every message names, its
/// geometry, its physical minima, its write buffer, and the shadow of the host's data.
struct Checked {
    d: SsdDevice,
    ctx: String,
    g: Geometry,
    minima: Minima,
    buffer_pages: u64,
    buffer_latency: u64,
    background_gc: bool,
    raw: bool,
    logical: u64,
    shadow: Shadow,
    totals: Totals,
}

impl Checked {
    /// The device for `seed` of FTL `name`, built from `p`, with its precondition worked out
    /// independently in the shadow and checked against the FTL's mapping.
    fn new(name: &str, seed: u64, p: SsdParams) -> Checked {
        let g = p.geometry;
        let ctx = format!(
            "{name}: seed {seed} (queue depth {}, buffer {:?}, {:?}, {:?}, background GC {}, {} planes/die, {} pages/block)",
            p.queue_depth,
            p.write_buffer,
            p.precondition,
            p.timing.cell,
            p.background_gc,
            g.planes_per_die,
            g.pages_per_block
        );
        let d = SsdDevice::new(p.clone()).unwrap_or_else(|e| panic!("{ctx}: {e}"));
        let logical = d.ftl().logical_pages();
        assert_eq!(d.capacity_bytes(), logical * 2048, "{ctx}");
        let raw = name == "raw";
        let filled = match p.precondition {
            Precondition::SequentialFill { fraction } => (logical as f64 * fraction) as u64,
            _ => 0,
        };
        let shadow = if raw {
            let mut pages = vec![RawPage::Erased; logical as usize];
            pages[..filled as usize].fill(RawPage::Live);
            Shadow::Raw {
                pages,
                pages_per_block: g.pages_per_block as u64,
            }
        } else {
            let mut m = vec![false; logical as usize];
            m[..filled as usize].fill(true);
            Shadow::Mapped(m)
        };
        let checked = Checked {
            minima: Minima::new(&p),
            buffer_pages: p.write_buffer.map_or(0, |b| b.capacity_bytes / 2048),
            buffer_latency: p.write_buffer.map_or(0, |b| b.latency.as_ns()),
            background_gc: p.background_gc,
            d,
            ctx,
            g,
            raw,
            logical,
            shadow,
            totals: Totals::default(),
        };
        checked.check_mapping(0..logical, "after preconditioning, ");
        checked
    }

    /// Checks that the FTL maps exactly the pages of `range` the shadow says hold data.
    fn check_mapping(&self, range: std::ops::Range<u64>, when: &str) {
        let ctx = &self.ctx;
        for lpn in range {
            assert_eq!(
                self.d.ftl().lookup(lpn).is_some(),
                self.shadow.has_data(lpn),
                "{ctx}: {when}page {lpn}"
            );
        }
    }

    /// Submits `planned` at `now`, follows it in the shadow, and returns its minimum finish
    /// in ns: from what the host knows before submitting (for a read, where its pages are)
    /// and what the request did (for a write, where its pages went).
    fn submit(&mut self, now: SimTime, planned: &Planned) -> u64 {
        let r = planned.request;
        let ctx = self.ctx.clone();
        let range = planned.first..planned.first + planned.pages;
        let min_ns = match r.op {
            Op::Read => self.read_minimum(&planned.request, range.clone()),
            _ => 0,
        };
        self.d
            .submit(now, r)
            .unwrap_or_else(|e| panic!("{ctx}: request {} {r:?} refused: {e}", r.id));
        self.totals.requests += 1;
        let min_ns = match r.op {
            Op::Read => {
                self.totals.read_pages += planned.pages;
                min_ns
            }
            Op::Write => self.write_minimum(planned),
            Op::Trim => {
                self.totals.trim_pages += planned.pages;
                let mut erased = false;
                for l in range.clone() {
                    erased |= self.shadow.trim(l);
                }
                // Raw erases the block whose last programmed page was discarded.
                if erased {
                    self.minima.overhead + self.minima.command + self.minima.erase
                } else {
                    0
                }
            }
            Op::Flush => 0,
        };
        self.check_mapping(
            range,
            &format!("request {} ({:?}): afterwards, ", r.id, r.op),
        );
        min_ns
    }

    /// A read's minimum from where its pages are before it is submitted (0 when none has data).
    fn read_minimum(&self, r: &Request, range: std::ops::Range<u64>) -> u64 {
        let ctx = &self.ctx;
        let mapped: Vec<Ppa> = range
            .filter_map(|l| {
                let loc = self.d.ftl().lookup(l);
                assert_eq!(
                    loc.is_some(),
                    self.shadow.has_data(l),
                    "{ctx}: request {}: page {l} before its read",
                    r.id
                );
                loc
            })
            .collect();
        if mapped.is_empty() {
            0
        } else {
            let (per_die, per_channel) = busiest(&self.g, &mapped);
            self.minima.read(per_die, per_channel)
        }
    }

    /// A submitted write's minimum: the buffer's latency when the buffer takes it, else the
    /// programs of the pages where the FTL put them; the shadow follows the write.
    fn write_minimum(&mut self, planned: &Planned) -> u64 {
        let ctx = &self.ctx;
        let r = planned.request;
        self.totals.write_pages += planned.pages;
        let mut at = Vec::new();
        for l in planned.first..planned.first + planned.pages {
            self.shadow.write(l);
            // The new data was programmed where it now is, after the submission.
            match self.d.ftl().lookup(l) {
                Some(ppa) => at.push(ppa),
                None => {
                    panic!("{ctx}: request {}: page {l} written, no location", r.id)
                }
            }
            if self.raw {
                assert_eq!(at.last(), Some(&Ppa(l as u32)), "{ctx}");
            }
        }
        if planned.pages <= self.buffer_pages {
            self.minima.overhead + self.buffer_latency
        } else {
            let (per_die, per_channel) = busiest(&self.g, &at);
            self.minima.program(per_die, per_channel)
        }
    }

    /// Checks at the end of the run of `requests` requests that the counters add up and that
    /// the mapping matches the shadow everywhere; returns the counters.
    fn finish(&self, requests: u64, tight: u64) -> Vec<storsim_core::DeviceCounter> {
        let (ctx, totals, g) = (&self.ctx, &self.totals, &self.g);
        assert_eq!(totals.requests, requests, "{ctx}");
        let c = self.d.counters();
        let get = |n: &str| counter(&c, n);
        for kind in ["reads", "programs", "erases"] {
            let folds = self.d.params().slc_cache.is_some();
            let by_cause: f64 = Cause::ALL
                .iter()
                .filter(|&&cause| cause != Cause::Fold || folds)
                .map(|cause| get(&format!("flash_{kind}_{}", cause.name())))
                .sum();
            assert_eq!(get(&format!("flash_{kind}")), by_cause, "{ctx}: {kind}");
        }
        assert_eq!(get("host_write_pages"), totals.write_pages as f64, "{ctx}");
        assert_eq!(get("host_read_pages"), totals.read_pages as f64, "{ctx}");
        assert_eq!(get("host_trim_pages"), totals.trim_pages as f64, "{ctx}");
        // Every page written is programmed once as the host's data (copies are other causes).
        assert_eq!(
            get("flash_programs_host"),
            totals.write_pages as f64,
            "{ctx}"
        );
        let programs = get("flash_programs");
        if programs > 0.0 {
            let waf = get("write_amplification");
            assert!(waf >= 1.0, "{ctx}: write amplification {waf}");
            assert!(
                (waf - programs / totals.write_pages as f64).abs() < 1e-9,
                "{ctx}: write amplification {waf}"
            );
        }
        let hist: f64 = c
            .iter()
            .filter(|x| x.name.starts_with("erase_count_hist_"))
            .map(|x| x.value)
            .sum();
        assert_eq!(hist, g.blocks() as f64, "{ctx}: erase-count histogram");
        let nand = self.d.ftl().nand();
        assert_eq!(
            nand.total_erases() as f64,
            get("precondition_erases") + get("flash_erases"),
            "{ctx}: the array's erases are the preconditioning's plus the run's"
        );
        assert!(
            (get("erase_count_mean") * g.blocks() as f64 - nand.total_erases() as f64).abs() < 1e-6,
            "{ctx}: mean erase count"
        );
        if !self.background_gc {
            assert_eq!(get("background_gc_units"), 0.0, "{ctx}");
        }

        // The mapping matches the shadow everywhere, not only where the workload looked last.
        self.check_mapping(0..self.logical, "at the end, ");
        let with_data = (0..self.logical)
            .filter(|&lpn| self.shadow.has_data(lpn))
            .count() as u64;
        assert_eq!(self.d.ftl().valid_data_pages(), with_data, "{ctx}");

        eprintln!(
            "  {} requests, {} pages written, write amplification {:.2}, erases {} (host {}, gc {}, merge {}), background GC units {}, {tight} requests at their minimum exactly",
            totals.requests,
            totals.write_pages,
            get("write_amplification"),
            get("flash_erases"),
            get("flash_erases_host"),
            get("flash_erases_gc"),
            get("flash_erases_merge"),
            get("background_gc_units"),
        );
        if self.raw {
            assert_eq!(
                programs, totals.write_pages as f64,
                "{ctx}: raw copies nothing"
            );
            assert_eq!(get("flash_erases"), get("flash_erases_host"), "{ctx}");
            assert_eq!(get("ftl_rejected_programs"), 0.0, "{ctx}");
            assert_eq!(get("ftl_trim_erases"), get("flash_erases"), "{ctx}");
        }
        c
    }
}

/// Checks the completions `done` delivered at `now`: each of a request submitted (at, minimum
/// finish in `submitted`), once, in order, at its finish and not before its minimum. Returns
/// how many finished at their minimum exactly.
fn check_completions(
    ctx: &str,
    now: SimTime,
    done: &mut Vec<Completion>,
    submitted: &[Option<(u64, u64)>],
    completed: &mut [bool],
) -> u64 {
    let mut tight = 0;
    let mut last_finish = SimTime::ZERO;
    for c in done.drain(..) {
        let id = c.request.id as usize;
        let Some((at, min_finish)) = submitted.get(id).copied().flatten() else {
            panic!("{ctx}: completion of request {id}, never submitted");
        };
        assert!(!completed[id], "{ctx}: request {id} completed twice");
        completed[id] = true;
        assert!(
            c.request.arrival <= c.service_start && c.service_start <= c.finish,
            "{ctx}: request {id}: arrival {} service start {} finish {}",
            c.request.arrival,
            c.service_start,
            c.finish
        );
        assert_eq!(
            c.finish, now,
            "{ctx}: request {id} delivered at {now}, not at its finish"
        );
        assert!(c.finish >= last_finish, "{ctx}: completions out of order");
        last_finish = c.finish;
        tight += (c.finish.as_ns() == min_finish && min_finish > at) as u64;
        assert!(
            c.finish.as_ns() >= min_finish,
            "{ctx}: request {id} ({:?}, {} bytes) submitted at {at} finished at {}, \
             before its physical minimum {min_finish}",
            c.request.op,
            c.request.len_bytes,
            c.finish
        );
    }
    tight
}

/// Runs one seed on one FTL; returns the device's counters.
fn run_one(name: &str, seed: u64, requests: u64) -> Vec<storsim_core::DeviceCounter> {
    let mut rng = Prng::new(seed);
    let p = params(name, &mut rng);
    let mut run = Checked::new(name, seed, p);
    let (logical, g) = (run.logical, run.g);
    let span = ((logical as f64 * [0.25, 0.5, 1.0][rng.below(3) as usize]) as u64).max(1);
    let write_percent = 35 + rng.below(30);
    let mut workload = Workload {
        rng: rng.fork(1),
        page_bytes: 2048,
        pages_per_block: g.pages_per_block as u64,
        logical,
        span,
        write_percent,
        read_percent: (98 - write_percent) * 2 / 3,
        raw: run.raw,
        last_end: 0,
        clock: 0,
        next_id: 0,
    };

    let ctx = run.ctx.clone();
    let queue_depth = run.d.queue_depth();
    let mut waiting: VecDeque<Planned> = VecDeque::new();
    let mut generated = 0u64;
    // Per request: (submitted at, minimum finish).
    let mut submitted: Vec<Option<(u64, u64)>> = Vec::new();
    let mut completed: Vec<bool> = Vec::new();
    let mut outstanding = 0usize;
    let mut now = SimTime::ZERO;
    let mut done: Vec<Completion> = Vec::new();
    let mut steps = 0u64;
    let mut tight = 0u64;
    loop {
        steps += 1;
        assert!(
            steps < 50 * requests + 1_000_000,
            "{ctx}: the run does not end"
        );
        if waiting.is_empty() && generated < requests {
            waiting.push_back(workload.next(&run.shadow));
            generated += 1;
            submitted.push(None);
            completed.push(false);
        }
        // Submit whatever has arrived while the device has room.
        while let Some(next) = waiting.front() {
            if next.request.arrival > now {
                break;
            }
            if outstanding >= queue_depth {
                // A full device refuses, and the refusal changes nothing.
                if workload.rng.below(4) == 0 {
                    assert!(
                        matches!(
                            run.d.submit(now, next.request),
                            Err(DeviceError::QueueFull { queue_depth: q }) if q == queue_depth
                        ),
                        "{ctx}: request {} was not refused by a full queue",
                        next.request.id
                    );
                }
                break;
            }
            let planned = waiting.pop_front().unwrap();
            let min_ns = run.submit(now, &planned);
            outstanding += 1;
            submitted[planned.request.id as usize] = Some((now.as_ns(), now.as_ns() + min_ns));
        }

        let next_arrival = match waiting.front() {
            Some(w) if outstanding < queue_depth => Some(w.request.arrival),
            _ => None,
        };
        let next = match (next_arrival, run.d.next_deadline()) {
            (Some(a), Some(dl)) => a.min(dl),
            (Some(a), None) => a,
            (None, Some(dl)) => dl,
            (None, None) => {
                assert_eq!(outstanding, 0, "{ctx}: requests outstanding, no deadline");
                if generated == requests && waiting.is_empty() {
                    break;
                }
                continue;
            }
        };
        assert!(next >= now, "{ctx}: deadline {next} before now {now}");
        now = next;
        run.d.advance(now, &mut done);
        let delivered = done.len();
        tight += check_completions(&ctx, now, &mut done, &submitted, &mut completed);
        outstanding -= delivered;
    }
    assert!(
        completed.iter().all(|&c| c),
        "{ctx}: some request never completed"
    );
    run.finish(requests, tight)
}

#[test]
fn every_ftl_keeps_the_device_contract_and_its_physical_minima() {
    let base = base_seed();
    let requests = 4_000;
    for name in storsim_ftl::FTLS.iter().map(|e| e.name) {
        let mut erases = 0.0;
        let mut not_host = 0.0;
        let mut with_slc_cache = 0;
        for k in 0..SEEDS_PER_FTL {
            let seed = base.wrapping_add(k);
            eprintln!("ssd conformance {name}: seed {seed}");
            let c = run_one(name, seed, requests);
            erases += counter(&c, "flash_erases");
            not_host += counter(&c, "flash_programs") - counter(&c, "flash_programs_host");
            with_slc_cache += c.iter().any(|c| c.name == "ftl_slc_host_pages") as u32;
        }
        if matches!(name, "page" | "dftl") {
            assert!(
                with_slc_cache > 0,
                "{name}: seeds {base}..+{SEEDS_PER_FTL} never drew an SLC cache"
            );
        }
        // The workload is meant to reach garbage collection, merges and (raw) discards.
        assert!(
            erases > 0.0,
            "{name}: seeds {base}..+{SEEDS_PER_FTL} erased nothing"
        );
        if name != "raw" {
            assert!(
                not_host > 0.0,
                "{name}: seeds {base}..+{SEEDS_PER_FTL} copied nothing"
            );
        }
    }
}
