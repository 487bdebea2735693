//! FlashSim's FTL comparison (Kim et al. 2009, §4) on the real traces in ../shared/traces:
//! on the random-write-heavy Financial1 trace FAST erases more than DFTL and DFTL's erase count
//! is close to the page FTL's; on the read-only WebSearch trace DFTL adds mapping-table reads
//! that the page FTL does not.
//!
//! The device is FlashSim's (2 KiB pages, 64-page blocks, Table 2 timings) shrunk to 512 MiB and
//! filled sequentially first, so that the traces' writes keep garbage collection and merges
//! busy; the traces' devices are overlaid and wrapped into it.

use std::path::{Path, PathBuf};
use storsim_core::{Completion, Device};
use storsim_engine::{run, EngineOptions, OutOfRange, Replay};
use storsim_ftl::FtlConfig;
use storsim_ssd::{presets, Precondition, SsdDevice};
use storsim_workload::trace::{self, DeviceSelection, TraceOptions};

fn shared_trace(rel: &str) -> Option<PathBuf> {
    storsim_testenv::shared(&format!("traces/{rel}"))
}

/// Replays `trace` on a FlashSim-like device with `ftl` and returns its counters.
fn replay(path: &Path, ftl: &str) -> Vec<(String, f64)> {
    let mut params = presets::flashsim_2009(FtlConfig::default_for(ftl).unwrap());
    params.geometry.blocks_per_plane = 256;
    params.precondition = Precondition::SequentialFill { fraction: 1.0 };
    let mut device = SsdDevice::new(params).unwrap();
    let opts = TraceOptions {
        devices: DeviceSelection::Overlay,
        ..TraceOptions::default()
    };
    let mut workload = trace::open(path, &opts).unwrap();
    let engine = EngineOptions {
        replay: Replay::Open { time_scale: 1.0 },
        out_of_range: OutOfRange::Wrap,
        ..Default::default()
    };
    let mut completed = 0u64;
    let info = run(
        &mut device,
        &mut workload,
        &engine,
        &mut |_: &Completion| completed += 1,
        &mut |_, _| {},
    )
    .unwrap_or_else(|e| panic!("{ftl}: {e}"));
    assert_eq!(
        completed, info.requests_issued,
        "{ftl}: every request completes once"
    );
    device
        .counters()
        .into_iter()
        .map(|c| (c.name, c.value))
        .collect()
}

fn get(counters: &[(String, f64)], name: &str) -> f64 {
    counters
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| *v)
        .unwrap_or_else(|| panic!("no counter {name}"))
}

#[test]
fn financial1_fast_erases_more_than_dftl_and_dftl_is_close_to_page() {
    let Some(path) = shared_trace("financial1_ssdsim/Financial1_first10k.ssdsim.ascii") else {
        return;
    };
    let page = replay(&path, "page");
    let dftl = replay(&path, "dftl");
    let fast = replay(&path, "fast");
    let erases = |c: &[(String, f64)]| get(c, "flash_erases");
    let (p, d, f) = (erases(&page), erases(&dftl), erases(&fast));
    eprintln!("Financial1 erases: page {p}, dftl {d}, fast {f}");
    assert!(
        p > 0.0,
        "the trace must drive garbage collection on the page FTL"
    );
    assert!(f > d, "FAST ({f}) must erase more than DFTL ({d})");
    assert!(
        d >= p,
        "DFTL's translation pages add to the page FTL's erases ({d} < {p})"
    );
    assert!(
        d <= 1.25 * p,
        "DFTL's erases ({d}) must stay close to the page FTL's ({p})"
    );
    assert!(get(&dftl, "flash_programs_mapping") > 0.0);
}

#[test]
fn websearch_dftl_adds_mapping_reads_that_page_does_not() {
    let Some(path) = shared_trace("websearch_mqsim/wsrch-small.trace") else {
        return;
    };
    let page = replay(&path, "page");
    let dftl = replay(&path, "dftl");
    let host_reads = get(&page, "flash_reads_host");
    assert!(host_reads > 20_000.0, "the trace reads mapped data");
    assert_eq!(get(&page, "flash_reads_mapping"), 0.0);
    let mapping = get(&dftl, "flash_reads_mapping");
    eprintln!("WebSearch: host reads {host_reads}, DFTL mapping reads {mapping}");
    assert!(
        mapping > 0.0,
        "DFTL must read translation pages on cache misses"
    );
    assert_eq!(
        get(&dftl, "flash_reads_host"),
        host_reads,
        "same data reads either way"
    );
}
