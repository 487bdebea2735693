//! The conformance suite every FTL passes: a seeded random mix of writes, reads and trims,
//! checked after every call against a shadow map of what the host wrote and a mirror of what
//! the emitted operations did to the flash.
//!
//! What it checks:
//! - a read maps to the location of the latest write of that page, and that location holds the
//!   data of that write, as moved by the FTL's own copy operations (GC, merges);
//! - trimmed and never-written pages have no location;
//! - the operations obey NAND (no program of a programmed page, no read of an erased one) and
//!   their dependencies (a copy follows the read of its source; an erase follows the reads out
//!   of its block);
//! - valid data pages equal the pages with data, erase counts add up to the erases emitted,
//!   the NAND array the FTL kept matches the mirror, and write amplification is at least 1.
//!
//! It is public so that each FTL's own test file runs it on its own configurations, and so that
//! users who write an FTL can run it too. [`check_calls`] makes the same checks under a hostile
//! host (pages past the end, tiny devices that run out of space or wear out).
//!
//! Every run prints its seed to stderr as it starts (`conformance <ftl>: seed N`), so that a
//! failure can be reproduced; setting the environment variable `STORSIM_TEST_SEED` to a number
//! makes every run use that seed instead of the caller's (to replay a printed seed, or to try
//! new ones).
//!
//! FTLs that expose the flash ([`crate::raw`]) refuse to program a page twice: run them with
//! [`check_with`] and [`Writes::ErasedOnly`], which writes only pages whose flash is erased.

use crate::{Cause, Dep, FlashOp, Ftl, FtlError};
use std::collections::HashMap;
use storsim_core::Prng;
use storsim_flash::{FlashOpKind, Geometry, Ppa};

/// How the random workload is drawn.
#[derive(Clone, Copy, Debug)]
pub struct Mix {
    pub steps: u64,
    /// Percentages of writes, reads and trims (the rest of 100 after writes and reads is trims).
    pub write_percent: u32,
    pub read_percent: u32,
    /// Fraction of the logical space used: smaller spans stress overwrites and GC more.
    pub span_fraction: f64,
    /// Percentage of requests that continue sequentially from the previous one (merge paths of
    /// the block-mapped FTLs).
    pub sequential_percent: u32,
    /// Run the full consistency check every this many steps (and at the end).
    pub full_check_every: u64,
    /// Percentage of steps after which the device is idle: the FTL's idle work
    /// ([`Ftl::idle`]) runs until it has none left. Its busy-time work
    /// ([`Ftl::housekeeping`]) runs after every write whatever this says.
    pub idle_percent: u32,
}

impl Default for Mix {
    fn default() -> Self {
        Mix {
            steps: 20_000,
            write_percent: 60,
            read_percent: 30,
            span_fraction: 1.0,
            sequential_percent: 30,
            full_check_every: 1_000,
            idle_percent: 0,
        }
    }
}

/// Which logical pages the workload may write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Writes {
    /// Any page, any number of times: the FTL hides erase-before-write.
    #[default]
    Overwrite,
    /// Only a page whose physical page of the same number is erased, for FTLs where logical
    /// page `i` is physical page `i` and programming a programmed page is refused (`raw`). A
    /// write drawn on a programmed page goes to the next erased page of the span instead, and
    /// becomes a trim of the drawn page when the span has no erased page (trims are how such
    /// an FTL gets its blocks erased).
    ErasedOnly,
}

/// The seed override is the device conformance kit's, so that one `STORSIM_TEST_SEED` replays
/// both suites.
pub use storsim_core::conformance::{seed_from_env, SEED_ENV};

/// What a passing run did, for the caller's own assertions.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    pub host_writes: u64,
    pub host_reads: u64,
    pub trims: u64,
    /// Programs by cause, indexed by [`Cause::index`].
    pub programs: [u64; Cause::ALL.len()],
    pub reads: [u64; Cause::ALL.len()],
    pub erases: [u64; Cause::ALL.len()],
}

impl Report {
    pub fn total_programs(&self) -> u64 {
        self.programs.iter().sum()
    }
    pub fn total_erases(&self) -> u64 {
        self.erases.iter().sum()
    }
    /// Flash programs per host page written.
    pub fn write_amplification(&self) -> f64 {
        if self.host_writes == 0 {
            0.0
        } else {
            self.total_programs() as f64 / self.host_writes as f64
        }
    }
}

/// Data identity: (logical page, version of the write that produced it).
type Content = (u64, u64);

struct Mirror {
    pages_per_block: u32,
    programmed: Vec<bool>,
    content: Vec<Option<Content>>,
}

impl Mirror {
    fn erase_block(&mut self, ppa: Ppa) {
        let first = (ppa.0 / self.pages_per_block * self.pages_per_block) as usize;
        for i in first..first + self.pages_per_block as usize {
            self.programmed[i] = false;
            self.content[i] = None;
        }
    }
}

/// Runs the suite with overwrites allowed; the error names the seed, the step and what broke.
pub fn check(ftl: &mut dyn Ftl, seed: u64, mix: Mix) -> Result<Report, String> {
    check_with(ftl, seed, mix, Writes::Overwrite)
}

/// Runs the suite with the given write rule; the error names the seed, the step and what broke.
/// `STORSIM_TEST_SEED`, if set, replaces `seed`.
pub fn check_with(
    ftl: &mut dyn Ftl,
    seed: u64,
    mix: Mix,
    writes: Writes,
) -> Result<Report, String> {
    let name = ftl.name();
    let seed = announce_seed(name, seed)?;
    let mut checker = Checker::new(ftl)?;
    let logical = checker.logical;
    let span = ((logical as f64 * mix.span_fraction) as u64).clamp(1, logical);
    let mut rng = Prng::new(seed);
    let mut last_lpn = 0u64;

    for step in 0..mix.steps {
        let fail = |what: String| format!("{name}: seed {seed}, step {step}: {what}");
        let mut lpn = if rng.below(100) < mix.sequential_percent as u64 {
            (last_lpn + 1) % span
        } else {
            rng.below(span)
        };
        last_lpn = lpn;
        let mut dice = rng.below(100) as u32;
        if writes == Writes::ErasedOnly && dice < mix.write_percent {
            // The first erased page at or after the drawn one; none: trim the drawn page.
            match (0..span)
                .map(|k| (lpn + k) % span)
                .find(|&l| !checker.mirror.programmed[l as usize])
            {
                Some(l) => lpn = l,
                None => dice = 100,
            }
            last_lpn = lpn;
        }
        let call = if dice < mix.write_percent {
            Call::Write
        } else if dice < mix.write_percent + mix.read_percent {
            Call::Read
        } else {
            Call::Trim
        };
        if let Err(e) = checker.call(ftl, call, lpn).map_err(&fail)? {
            return Err(fail(format!("{} of page {lpn}: {e}", call.name())));
        }
        if call == Call::Write {
            checker
                .background(ftl, |f, ops| f.housekeeping(ops))
                .map_err(&fail)?;
        }
        if mix.idle_percent > 0 && rng.below(100) < mix.idle_percent as u64 {
            // Idle work ends by itself (nothing left to fold or collect); the bound only
            // turns an FTL that never stops into a failure instead of a hang.
            let mut units = 0;
            while checker
                .background(ftl, |f, ops| f.idle(ops))
                .map_err(&fail)?
            {
                units += 1;
                if units > 1_000_000 {
                    return Err(fail("idle work never ends".into()));
                }
            }
        }
        if (step + 1) % mix.full_check_every == 0 || step + 1 == mix.steps {
            checker.full_check(ftl).map_err(&fail)?;
        }
    }
    counters_described(ftl).map_err(|e| format!("{name}: seed {seed}: {e}"))?;
    checker
        .finish()
        .map_err(|e| format!("{name}: seed {seed}: {e}"))
}

/// Every counter the FTL lists is exactly one of its descriptors, each with a doc line, and
/// every descriptor is listed: an FTL's counters are all there from the start.
fn counters_described(ftl: &dyn Ftl) -> Result<(), String> {
    let descriptors = ftl.counter_descriptors();
    let names: Vec<String> = ftl.counters().into_iter().map(|c| c.name).collect();
    for d in &descriptors {
        if d.doc.trim().is_empty() {
            return Err(format!("the counter {} has no doc line", d.name));
        }
        if !names.iter().any(|n| d.matches(n).is_some()) {
            return Err(format!(
                "the counter {} is described but not listed",
                d.name
            ));
        }
    }
    for name in &names {
        let matching = descriptors.iter().filter(|d| d.matches(name).is_some());
        if matching.count() != 1 {
            return Err(format!(
                "the counter {name} matches no descriptor, or several"
            ));
        }
    }
    Ok(())
}

/// What [`check_calls`] did: how many calls it checked, and how the FTL ended.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CallsReport {
    /// Calls on pages past the last one, each refused with [`FtlError::OutOfRange`] and no
    /// operation.
    pub refused_out_of_range: u64,
    /// Calls on pages in range whose results were checked: every one before the FTL ran out of
    /// space or wore out.
    pub checked: u64,
    /// The error with which the FTL ran out of space or wore out, if it did. The SSD uses an
    /// FTL no more after such an error, so later calls are checked only for their refusals.
    pub spent: Option<FtlError>,
    /// The operations of the checked calls.
    pub report: Report,
}

/// Drives `ftl` with `steps` random calls (writes 60 %, reads 20 %, trims 20 %) on pages
/// drawn from its whole logical range and two pages past it, as a hostile host would, and
/// checks everything [`check`] does after every call: a page past the end is refused, every
/// call in range is checked against the shadow map and the mirror of the flash, with the full
/// consistency check (valid pages, erase counts) after each, until the FTL runs out of space
/// or wears out, which is no bug on a tiny or short-lived device; write amplification is at
/// least 1 at the end. The error names the seed and the step. `STORSIM_TEST_SEED`, if set,
/// replaces `seed`.
pub fn check_calls(ftl: &mut dyn Ftl, seed: u64, steps: u64) -> Result<CallsReport, String> {
    let name = ftl.name();
    let seed = announce_seed(name, seed)?;
    let mut checker = Checker::new(ftl)?;
    let mut rng = Prng::new(seed);
    let mut calls = CallsReport::default();
    for step in 0..steps {
        let fail = |what: String| format!("{name}: seed {seed}, step {step}: {what}");
        let lpn = rng.below(checker.logical + 2);
        let call = match rng.below(10) {
            0..=5 => Call::Write,
            6..=7 => Call::Read,
            _ => Call::Trim,
        };
        let was_spent = checker.spent.is_some();
        let result = checker.call(ftl, call, lpn).map_err(&fail)?;
        if lpn >= checker.logical {
            calls.refused_out_of_range += 1;
        } else if !was_spent {
            calls.checked += 1;
        }
        if checker.spent.is_none() {
            checker.full_check(ftl).map_err(&fail)?;
        } else if let (false, Err(e)) = (was_spent, result) {
            calls.spent = Some(e);
        }
    }
    // Whatever state the FTL was left in, it still answers these.
    let _ = (ftl.valid_data_pages(), ftl.counters());
    calls.report = checker
        .finish()
        .map_err(|e| format!("{name}: seed {seed}: {e}"))?;
    Ok(calls)
}

/// One host call of the suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    Write,
    Read,
    Trim,
}

impl Call {
    fn name(self) -> &'static str {
        match self {
            Call::Write => "write",
            Call::Read => "read",
            Call::Trim => "trim",
        }
    }

    /// The letter [`apply`] and [`check_mapping`] know the call by.
    fn letter(self) -> char {
        match self {
            Call::Write => 'w',
            Call::Read => 'r',
            Call::Trim => 't',
        }
    }
}

/// The suite's state between calls: a shadow map of the version of every logical page the
/// host wrote last, a mirror of what the emitted operations did to the flash, and the
/// operations counted by cause. [`check_with`] and [`check_calls`] drive one each.
struct Checker {
    logical: u64,
    shadow: Vec<Option<u64>>,
    mirror: Mirror,
    report: Report,
    initial_erases: u64,
    version: u64,
    ops: Vec<FlashOp>,
    /// Set when the FTL ran out of space or wore out: what it does afterwards is not checked.
    spent: Option<FtlError>,
}

impl Checker {
    fn new(ftl: &dyn Ftl) -> Result<Checker, String> {
        let geometry = *ftl.nand().geometry();
        let pages = geometry.pages() as usize;
        let logical = ftl.logical_pages();
        if logical == 0 {
            return Err(format!("{}: no logical pages", ftl.name()));
        }
        Ok(Checker {
            logical,
            shadow: vec![None; logical as usize],
            mirror: Mirror {
                pages_per_block: geometry.pages_per_block,
                programmed: (0..pages)
                    .map(|i| ftl.nand().is_programmed(Ppa(i as u32)))
                    .collect(),
                content: vec![None; pages],
            },
            report: Report::default(),
            initial_erases: ftl.nand().total_erases(),
            version: 0,
            ops: Vec::new(),
            spent: None,
        })
    }

    /// Makes `call` on `lpn` and checks what it did. The FTL's own error, when the rules allow
    /// it, is handed back for the caller to judge; an `Err` is a broken rule.
    ///
    /// A page past the end must be refused with `OutOfRange` and no operation. In range, a
    /// call that succeeds is checked against the shadow map and the mirror; running out of
    /// space or wearing out ends the checking ([`Checker::spent`]); a refusal (raw flash's)
    /// must leave everything as it was; `OutOfRange` or a broken NAND rule is a bug.
    fn call(
        &mut self,
        ftl: &mut dyn Ftl,
        call: Call,
        lpn: u64,
    ) -> Result<Result<(), FtlError>, String> {
        self.ops.clear();
        let result = match call {
            Call::Write => ftl.write(lpn, &mut self.ops),
            Call::Read => ftl.read(lpn, &mut self.ops),
            Call::Trim => ftl.trim(lpn, &mut self.ops),
        };
        let what = call.name();
        let target = ftl.lookup(lpn);
        if lpn >= self.logical {
            return match result {
                Err(FtlError::OutOfRange {
                    lpn: l,
                    logical_pages,
                }) if l == lpn && logical_pages == self.logical && self.ops.is_empty() => {
                    Ok(result)
                }
                other => Err(format!(
                    "{what} of page {lpn}, past the last of {} pages, answered {other:?} with {} \
                     operations instead of refusing it",
                    self.logical,
                    self.ops.len()
                )),
            };
        }
        match &result {
            Err(e @ (FtlError::OutOfRange { .. } | FtlError::Nand(_))) => {
                return Err(format!("{what} of page {lpn}: {e}"))
            }
            Err(_) if self.spent.is_some() => return Ok(result),
            Err(e @ (FtlError::NoSpace | FtlError::WornOut { .. })) => {
                self.spent = Some(e.clone());
                return Ok(result);
            }
            Err(FtlError::Rejected { .. }) => {
                if !self.ops.is_empty() {
                    return Err(format!(
                        "{what} of page {lpn} was refused after {} operations",
                        self.ops.len()
                    ));
                }
                return Ok(result);
            }
            Ok(()) if self.spent.is_some() => return Ok(result),
            Ok(()) => {}
        }
        match call {
            Call::Write => {
                self.version += 1;
                self.report.host_writes += 1;
                self.shadow[lpn as usize] = Some(self.version);
            }
            Call::Read => self.report.host_reads += 1,
            Call::Trim => {
                self.report.trims += 1;
                self.shadow[lpn as usize] = None;
            }
        }
        apply(
            &self.ops,
            &mut self.mirror,
            &mut self.report,
            call.letter(),
            lpn,
            self.version,
            target,
        )?;
        check_mapping(
            lpn,
            self.shadow[lpn as usize],
            target,
            &self.mirror,
            call.letter(),
            &self.ops,
        )?;
        Ok(result)
    }

    /// Runs one unit of the FTL's own work (`work`: [`Ftl::housekeeping`] or [`Ftl::idle`]) and
    /// checks its operations against the mirror, as a call that moves data but writes none:
    /// afterwards every page the host wrote must still be where the FTL says, with its data.
    /// Returns whether the FTL did anything.
    fn background(
        &mut self,
        ftl: &mut dyn Ftl,
        work: fn(&mut dyn Ftl, &mut Vec<FlashOp>) -> Result<bool, FtlError>,
    ) -> Result<bool, String> {
        if self.spent.is_some() {
            return Ok(false);
        }
        self.ops.clear();
        let did = match work(ftl, &mut self.ops) {
            Ok(did) => did,
            Err(e @ (FtlError::NoSpace | FtlError::WornOut { .. })) => {
                self.spent = Some(e);
                return Ok(false);
            }
            Err(e) => return Err(format!("the FTL's own work failed: {e}")),
        };
        if !did && !self.ops.is_empty() {
            return Err(format!(
                "the FTL's own work said it did nothing but emitted {} operations",
                self.ops.len()
            ));
        }
        apply(
            &self.ops,
            &mut self.mirror,
            &mut self.report,
            'b',
            0,
            0,
            None,
        )?;
        Ok(did)
    }

    /// The whole map, the valid-page count, the erase counts and the programmed pages against
    /// the shadow and the mirror.
    fn full_check(&self, ftl: &dyn Ftl) -> Result<(), String> {
        full_check(
            ftl,
            &self.shadow,
            &self.mirror,
            &self.report,
            self.initial_erases,
        )
    }

    /// The report, once write amplification is checked to be at least 1.
    fn finish(self) -> Result<Report, String> {
        let report = self.report;
        if report.host_writes > 0 && report.write_amplification() < 1.0 {
            return Err(format!(
                "write amplification {} < 1",
                report.write_amplification()
            ));
        }
        Ok(report)
    }
}

/// The seed to run with: the environment's (`SEED_ENV`) if set, else the test's; printed so
/// that a failure can be replayed.
fn announce_seed(name: &str, seed: u64) -> Result<u64, String> {
    Ok(match seed_from_env()? {
        Some(s) => {
            eprintln!("conformance {name}: seed {s} (from {SEED_ENV}; the test's seed is {seed})");
            s
        }
        None => {
            eprintln!("conformance {name}: seed {seed}");
            seed
        }
    })
}

/// After a host call of `kind` (`'w'`, `'r'` or `'t'`) on page `lpn`, whose latest version
/// is `version` (`None`: no data), the FTL's map points at `target`: the page a mapped
/// version must be found in, and the page a read must have read.
fn check_mapping(
    lpn: u64,
    version: Option<u64>,
    target: Option<Ppa>,
    mirror: &Mirror,
    kind: char,
    ops: &[FlashOp],
) -> Result<(), String> {
    match (version, target) {
        (Some(v), Some(p)) => {
            let held = mirror.content.get(p.0 as usize).copied().flatten();
            if held != Some((lpn, v)) {
                return Err(format!(
                    "page {lpn} maps to {p:?}, which holds {held:?}, not version {v}"
                ));
            }
            if kind == 'r'
                && !ops
                    .iter()
                    .any(|o| o.kind == FlashOpKind::Read && o.ppa == p && o.cause == Cause::Host)
            {
                return Err(format!("read of page {lpn} did not read {p:?}"));
            }
        }
        (None, Some(p)) => return Err(format!("page {lpn} has no data but maps to {p:?}")),
        (Some(v), None) => return Err(format!("page {lpn} (version {v}) has no location")),
        (None, None) => {}
    }
    Ok(())
}

/// Replays one call's operations on the mirror, checking NAND rules and dependencies.
fn apply(
    ops: &[FlashOp],
    mirror: &mut Mirror,
    report: &mut Report,
    kind: char,
    lpn: u64,
    version: u64,
    target: Option<Ppa>,
) -> Result<(), String> {
    let mut buffer: HashMap<Ppa, Option<Content>> = HashMap::new();
    let mut host_programs = 0;
    for (i, op) in ops.iter().enumerate() {
        let p = op.ppa.0 as usize;
        if p >= mirror.programmed.len() {
            return Err(format!("op {i} {op:?} is outside the array"));
        }
        let c = op.cause.index();
        match op.kind {
            FlashOpKind::Read => {
                if !mirror.programmed[p] {
                    return Err(format!("op {i} reads erased page {:?}", op.ppa));
                }
                buffer.insert(op.ppa, mirror.content[p]);
                report.reads[c] += 1;
            }
            FlashOpKind::Program => {
                if mirror.programmed[p] {
                    return Err(format!("op {i} programs page {:?} twice", op.ppa));
                }
                let content = match op.data_from {
                    Some(src) => {
                        let Some(data) = buffer.get(&src) else {
                            return Err(format!(
                                "op {i} copies from {src:?}, which this call did not read"
                            ));
                        };
                        if op.dep == Dep::None {
                            return Err(format!("op {i} copies without waiting for its read"));
                        }
                        *data
                    }
                    // The host's new data need not land where the page ends up: an FTL may
                    // move it later in the same call (program the last page of a log block, then
                    // merge that block). The check after the call
                    // follows the data through the copies to the page's final location.
                    None if kind == 'w' && op.cause == Cause::Host => {
                        host_programs += 1;
                        Some((lpn, version))
                    }
                    None => None,
                };
                mirror.programmed[p] = true;
                mirror.content[p] = content;
                report.programs[c] += 1;
            }
            FlashOpKind::Erase => {
                let block = op.ppa.0 / mirror.pages_per_block;
                let read_from_block = ops[..i].iter().any(|o| {
                    o.kind == FlashOpKind::Read && o.ppa.0 / mirror.pages_per_block == block
                });
                if read_from_block && op.dep != Dep::All {
                    return Err(format!(
                        "op {i} erases block {block} before its reads finish"
                    ));
                }
                mirror.erase_block(op.ppa);
                report.erases[c] += 1;
            }
            FlashOpKind::CopyBack => {
                return Err(format!(
                    "op {i}: FTLs emit copies as read + program, not copy-back"
                ));
            }
        }
    }
    if kind == 'w' && host_programs != 1 {
        return Err(format!(
            "write of page {lpn} made {host_programs} host programs of its data at {target:?}"
        ));
    }
    Ok(())
}

fn full_check(
    ftl: &dyn Ftl,
    shadow: &[Option<u64>],
    mirror: &Mirror,
    report: &Report,
    initial_erases: u64,
) -> Result<(), String> {
    let mut seen: HashMap<Ppa, u64> = HashMap::new();
    let mut with_data = 0u64;
    for (lpn, v) in shadow.iter().enumerate() {
        let lpn = lpn as u64;
        match (v, ftl.lookup(lpn)) {
            (Some(v), Some(p)) => {
                with_data += 1;
                if let Some(other) = seen.insert(p, lpn) {
                    return Err(format!("pages {other} and {lpn} both map to {p:?}"));
                }
                if mirror.content[p.0 as usize] != Some((lpn, *v)) {
                    return Err(format!("page {lpn} at {p:?} lost version {v}"));
                }
            }
            (None, None) => {}
            (v, p) => return Err(format!("page {lpn}: shadow {v:?} but location {p:?}")),
        }
    }
    if ftl.valid_data_pages() != with_data {
        return Err(format!(
            "{} valid data pages reported, {with_data} logical pages have data",
            ftl.valid_data_pages()
        ));
    }
    let nand = ftl.nand();
    if nand.total_erases() - initial_erases != report.total_erases() {
        return Err(format!(
            "the array counts {} erases, the operations {}",
            nand.total_erases() - initial_erases,
            report.total_erases()
        ));
    }
    for (i, &m) in mirror.programmed.iter().enumerate() {
        if nand.is_programmed(Ppa(i as u32)) != m {
            return Err(format!(
                "page {i}: the FTL's array and its operations disagree"
            ));
        }
    }
    Ok(())
}

/// The tiny devices [`check_tiny_devices`] builds an FTL on, and those it must refuse.
#[derive(Clone, Copy, Debug)]
pub struct TinyDevices<'a> {
    /// (blocks per plane, pages per block) the FTL builds on.
    pub built: &'a [(u32, u32)],
    /// (blocks per plane, pages per block) too small for the FTL.
    pub refused: &'a [(u32, u32)],
    /// Words the refusal of each `refused` geometry must say.
    pub refusal: &'a [&'a str],
}

/// Tiny devices (blocks of one or two pages, blocks that wear out after 1 to 3 erases) under a
/// hostile host ([`check_calls`], 20 seeds each): every geometry in `tiny.built` must build and
/// keep the suite's invariants until it runs out of space or wears out, with pages past the end
/// refused; a roomy one (8 blocks a plane, endurance 1,000) must not give out; and every
/// geometry in `tiny.refused` must be refused with the words of `tiny.refusal`. `geometry`
/// makes a device of (blocks per plane, pages per block); `build` builds the FTL on it with an
/// endurance. The error names the geometry, the endurance and the seed.
pub fn check_tiny_devices(
    geometry: &dyn Fn(u32, u32) -> Geometry,
    build: &dyn Fn(Geometry, u32) -> Result<Box<dyn Ftl>, FtlError>,
    tiny: TinyDevices,
) -> Result<(), String> {
    const ENDURANCES: [u32; 4] = [1, 2, 3, 1_000];
    const SEEDS: u64 = 20;
    let mut checked_calls = 0;
    for &(blocks_per_plane, pages_per_block) in tiny.built {
        for endurance in ENDURANCES {
            for seed in 0..SEEDS {
                let what = format!(
                    "{blocks_per_plane} blocks of {pages_per_block} pages per plane, \
                     endurance {endurance}, seed {seed}"
                );
                let mut ftl = build(geometry(blocks_per_plane, pages_per_block), endurance)
                    .map_err(|e| format!("{what}: {e}"))?;
                let calls =
                    check_calls(&mut *ftl, seed, 2_000).map_err(|e| format!("{what}: {e}"))?;
                if calls.refused_out_of_range == 0 || calls.checked == 0 {
                    return Err(format!("{what}: nothing was checked: {calls:?}"));
                }
                if endurance == 1_000 && blocks_per_plane >= 8 && calls.spent.is_some() {
                    return Err(format!("{what}: a roomy device gave out: {calls:?}"));
                }
                checked_calls += calls.checked;
            }
        }
    }
    if checked_calls <= 10_000 {
        return Err(format!("only {checked_calls} calls checked"));
    }
    for &(blocks_per_plane, pages_per_block) in tiny.refused {
        let what = format!("{blocks_per_plane} blocks of {pages_per_block} pages");
        match build(geometry(blocks_per_plane, pages_per_block), 1_000) {
            Ok(_) => return Err(format!("{what}: built, but it is too small")),
            Err(e) if tiny.refusal.iter().all(|part| e.to_string().contains(part)) => {}
            Err(e) => return Err(format!("{what}: refused, but not as expected: {e}")),
        }
    }
    Ok(())
}
