//! What the counters count: the measured run alone, with preconditioning's own traffic under
//! `precondition_*` names (issue 25, part 5).

#[allow(dead_code)]
mod support;

use storsim_core::{Completion, Device, Op, Prng};
use storsim_engine::{run, EngineOptions, Replay};
use storsim_flash::Geometry;
use storsim_ftl::FtlConfig;
use storsim_ssd::{presets, Precondition, SsdDevice, SsdParams};
use storsim_workload::Record;
use support::{counter, workload};

fn small(ftl: &str) -> SsdParams {
    let mut p = presets::flashsim_2009(FtlConfig::default_for(ftl).unwrap());
    p.geometry = Geometry {
        channels: 2,
        chips_per_channel: 1,
        dies_per_chip: 2,
        planes_per_die: 1,
        blocks_per_plane: 32,
        pages_per_block: 16,
        page_bytes: 2048,
        oob_bytes: 64,
    };
    p
}

/// The FTL counters that count events (as opposed to state such as free blocks), by the
/// words their names use.
fn is_event_counter(name: &str) -> bool {
    [
        "merges",
        "copied_pages",
        "folds",
        "host_writes",
        "invocations",
        "victim_blocks",
        "moves",
        "fallbacks",
        "rewrites",
        "cmt_hits",
        "cmt_misses",
        "evictions",
        "translation_page_",
        "replacement_units",
        "chain_scan_reads",
        "rejected_programs",
        "trim_erases",
    ]
    .iter()
    .any(|w| name.contains(w))
}

#[test]
fn every_ftl_starts_its_event_counters_after_preconditioning() {
    for entry in storsim_ftl::FTLS {
        let mut p = small(entry.name);
        p.precondition = if entry.overwrites {
            Precondition::SteadyState {
                max_overwrite_factor: 3.0,
            }
        } else {
            Precondition::SequentialFill { fraction: 1.0 }
        };
        let d = SsdDevice::new(p).unwrap();
        let counters = d.counters();
        let ftl: Vec<_> = counters
            .iter()
            .filter(|c| c.name.starts_with("ftl_"))
            .collect();
        let mut events = 0;
        for c in &ftl {
            if is_event_counter(&c.name) {
                events += 1;
                assert_eq!(
                    c.value, 0.0,
                    "{}: {} after preconditioning",
                    entry.name, c.name
                );
            }
            // Preconditioning's own value of every FTL counter is kept beside it.
            let own = format!("precondition_{}", c.name);
            assert!(
                counters.iter().any(|x| x.name == own),
                "{}: no {own}",
                entry.name
            );
        }
        assert!(events > 0, "{}: no event counter recognised", entry.name);
        assert!(
            counter(&d, "precondition_host_writes") > 0.0,
            "{}",
            entry.name
        );
        assert_eq!(counter(&d, "flash_programs"), 0.0, "{}", entry.name);
    }
}

#[test]
fn a_clean_device_reports_no_precondition_ftl_counters() {
    let d = SsdDevice::new(small("page")).unwrap();
    assert!(d
        .counters()
        .iter()
        .all(|c| !c.name.starts_with("precondition_ftl_")));
    assert_eq!(counter(&d, "precondition_host_writes"), 0.0);
}

#[test]
fn page_ftl_counters_agree_with_the_ssds_in_the_run_and_in_preconditioning() {
    let mut p = small("page");
    p.precondition = Precondition::SteadyState {
        max_overwrite_factor: 3.0,
    };
    let mut d = SsdDevice::new(p).unwrap();

    // Preconditioning: every program is a host write or a copy.
    let host = counter(&d, "precondition_ftl_host_writes");
    let gc = counter(&d, "precondition_ftl_gc_copied_pages");
    let wl = counter(&d, "precondition_ftl_wear_level_copied_pages");
    assert_eq!(host, counter(&d, "precondition_host_writes"));
    assert!(gc > 0.0, "a steady state needs garbage collection");
    assert_eq!(counter(&d, "precondition_flash_programs"), host + gc + wl);
    assert_eq!(counter(&d, "precondition_flash_reads"), gc + wl);

    // The run: random one-page overwrites.
    let logical = d.capacity_bytes() / 2048;
    let mut rng = Prng::new(11);
    let records: Vec<Record> = (0..3_000u64)
        .map(|i| Record {
            timestamp_ns: 0,
            op: Op::Write,
            offset_bytes: rng.below(logical) * 2048,
            len_bytes: 2048,
            dev: 0,
            think_ns: 0,
            origin: i,
        })
        .collect();
    let opts = EngineOptions {
        replay: Replay::Closed { depth: 4 },
        ..Default::default()
    };
    run(
        &mut d,
        &mut workload(records),
        &opts,
        &mut |_: &Completion| {},
        &mut |_, _| {},
    )
    .unwrap();
    assert_eq!(
        counter(&d, "ftl_host_writes"),
        counter(&d, "host_write_pages")
    );
    assert!(counter(&d, "ftl_gc_copied_pages") > 0.0);
    assert_eq!(
        counter(&d, "ftl_gc_copied_pages"),
        counter(&d, "flash_programs_gc")
    );
    assert_eq!(
        counter(&d, "ftl_wear_level_copied_pages"),
        counter(&d, "flash_programs_wear_level")
    );
    // Preconditioning's values stay as they were.
    assert_eq!(counter(&d, "precondition_ftl_gc_copied_pages"), gc);
}

#[test]
fn reads_of_pages_that_hold_no_data_are_counted_for_every_ftl() {
    for entry in storsim_ftl::FTLS {
        let mut p = small(entry.name);
        p.precondition = Precondition::SequentialFill { fraction: 0.5 };
        let mut d = SsdDevice::new(p).unwrap();
        let logical = d.capacity_bytes() / 2048;
        let filled = (0..logical)
            .filter(|&lpn| d.ftl().lookup(lpn).is_some())
            .count() as u64;
        assert!(filled > 0 && filled < logical, "{}", entry.name);
        let reads: Vec<Record> = (0..logical)
            .map(|lpn| Record {
                timestamp_ns: 0,
                op: Op::Read,
                offset_bytes: lpn * 2048,
                len_bytes: 2048,
                dev: 0,
                think_ns: 0,
                origin: lpn,
            })
            .collect();
        let opts = EngineOptions {
            replay: Replay::Closed { depth: 2 },
            ..Default::default()
        };
        run(
            &mut d,
            &mut workload(reads),
            &opts,
            &mut |_: &Completion| {},
            &mut |_, _| {},
        )
        .unwrap();
        assert_eq!(
            counter(&d, "host_read_pages"),
            logical as f64,
            "{}",
            entry.name
        );
        assert_eq!(
            counter(&d, "host_read_unmapped_pages"),
            (logical - filled) as f64,
            "{}",
            entry.name
        );
    }
}
