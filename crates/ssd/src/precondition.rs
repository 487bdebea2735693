//! Bringing a fresh device into the state a measurement should start from. Preconditioning
//! drives the FTL directly, without timing: only the FTL's and the array's state matter, so it
//! runs at the FTL's own speed (users of other simulators wait hours for this).

use crate::Precondition;
use storsim_core::{DeviceCounter, Prng};
use storsim_flash::FlashOpKind;
use storsim_ftl::{FlashOp, Ftl, FtlError};

/// What preconditioning did, reported with the run's results under `precondition_*` names,
/// apart from the measured run's counters (which start at zero after it).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PreconditionReport {
    /// Logical pages written.
    pub host_writes: u64,
    /// Flash page reads the writes caused (garbage collection's and merges' copies, mapping
    /// reads).
    pub flash_reads: u64,
    /// Flash page programs the writes caused, the host's own included.
    pub flash_programs: u64,
    pub erases: u64,
    /// Write amplification of the last random-overwrite window (steady state only).
    pub steady_state_waf: Option<f64>,
    /// The FTL's own counters as preconditioning left them, before they were started from
    /// zero for the measured run; empty when preconditioning wrote nothing.
    pub ftl_counters: Vec<DeviceCounter>,
}

/// Flash operations one call caused, by kind.
#[derive(Clone, Copy, Default)]
struct Traffic {
    reads: u64,
    programs: u64,
}

/// Writes with the operations discarded; returns the reads and programs they caused.
fn write(ftl: &mut dyn Ftl, lpn: u64, ops: &mut Vec<FlashOp>) -> Result<Traffic, FtlError> {
    ops.clear();
    ftl.write(lpn, ops)?;
    Ok(traffic(ops))
}

/// The reads and programs among `ops`.
fn traffic(ops: &[FlashOp]) -> Traffic {
    let mut t = Traffic::default();
    for o in ops.iter() {
        match o.kind {
            FlashOpKind::Read => t.reads += 1,
            FlashOpKind::Program => t.programs += 1,
            // A copy-back reads and programs inside the die, as the run's counters count it.
            FlashOpKind::CopyBack => {
                t.reads += 1;
                t.programs += 1;
            }
            FlashOpKind::Erase => {}
        }
    }
    t
}

pub fn run(
    ftl: &mut dyn Ftl,
    how: &Precondition,
    seed: u64,
) -> Result<PreconditionReport, FtlError> {
    let logical = ftl.logical_pages();
    let erases_before = ftl.nand().total_erases();
    let mut report = PreconditionReport::default();
    let mut ops = Vec::with_capacity(1024);
    let fill = match *how {
        Precondition::Clean => 0,
        Precondition::SequentialFill { fraction } => {
            assert!(
                (0.0..=1.0).contains(&fraction),
                "fill fraction {fraction} outside [0, 1]"
            );
            (logical as f64 * fraction) as u64
        }
        Precondition::SteadyState { .. } => logical,
    };
    for lpn in 0..fill {
        let t = write(ftl, lpn, &mut ops)?;
        report.flash_reads += t.reads;
        report.flash_programs += t.programs;
        report.host_writes += 1;
    }
    if let Precondition::SteadyState {
        max_overwrite_factor,
    } = *how
    {
        let mut rng = Prng::new(seed ^ 0x5354_4541_4459); // "STEADY": its own stream
        let window = (logical / 4).max(1_000);
        let budget = (logical as f64 * max_overwrite_factor) as u64;
        let mut written = 0u64;
        let mut previous: Option<f64> = None;
        while written < budget {
            let mut programs = 0u64;
            let n = window.min(budget - written);
            for _ in 0..n {
                let t = write(ftl, rng.below(logical), &mut ops)?;
                report.flash_reads += t.reads;
                programs += t.programs;
            }
            written += n;
            report.host_writes += n;
            report.flash_programs += programs;
            let waf = programs as f64 / n as f64;
            report.steady_state_waf = Some(waf);
            if previous.is_some_and(|p: f64| (waf - p).abs() <= 0.01 * p) {
                break;
            }
            previous = Some(waf);
        }
    }
    // A drive is preconditioned and then left idle: its SLC cache, if it has one, is folded
    // empty, so a run starts with the whole cache free.
    loop {
        ops.clear();
        if !ftl.fold_slc_cache(&mut ops)? {
            break;
        }
        let t = traffic(&ops);
        report.flash_reads += t.reads;
        report.flash_programs += t.programs;
    }
    report.erases = ftl.nand().total_erases() - erases_before;
    if report.host_writes > 0 {
        report.ftl_counters = ftl.counters();
    }
    // From here on the FTL's event counters describe the measured run alone, as the SSD's own
    // do; what preconditioning did stays in the report.
    ftl.reset_counters();
    Ok(report)
}
