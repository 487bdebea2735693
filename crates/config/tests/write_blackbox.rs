//! Writing black-box descriptions: `blackbox_device_toml` gives a from-scratch device file that
//! `parse_device_toml` reads back into exactly the same parameters, down to the nanosecond and
//! the picosecond, for the presets and for awkward hand-built values; other models and
//! parameters no file can state are errors.

use storsim_blackbox::linear::{LinearCost, LinearParams};
use storsim_blackbox::step::{StepDirection, StepParams};
use storsim_blackbox::table::{TableParams, TableRow};
use storsim_blackbox::{AccessPattern, SequentialDetect};
use storsim_config::{blackbox_device_toml, parse_device_toml, preset_spec, DeviceSpec};
use storsim_core::{SimDuration, QUEUE_DEPTH_MAX};

/// The longest delay a device file may state: one hour.
const HOUR_NS: u64 = 3_600_000_000_000;
/// The largest B a device file may state: 1e6 µs per KiB.
const B_MAX_PS: u64 = 1_000_000_000_000;

fn ns(n: u64) -> SimDuration {
    SimDuration::from_ns(n)
}

/// Writes `spec`, checks the text is a from-scratch file of the right model, and reads it back.
fn round_trip(spec: &DeviceSpec) {
    let text = blackbox_device_toml(spec)
        .unwrap_or_else(|e| panic!("{} does not write: {e}", spec.model_name()));
    let table: toml::Table = toml::from_str(&text).expect("valid TOML on its own");
    assert_eq!(
        table.get("model").and_then(|v| v.as_str()),
        Some(spec.model_name()),
        "{text}"
    );
    assert!(!table.contains_key("preset"), "{text}");
    let read = parse_device_toml(&text, "x.toml").unwrap_or_else(|e| panic!("{text}\n{e}"));
    assert_eq!(read, *spec, "{text}");
}

fn preset(name: &str) -> DeviceSpec {
    preset_spec(name)
        .unwrap_or_else(|| panic!("no preset {name}"))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn linear(costs: [(u64, u64); 4]) -> LinearParams {
    LinearParams {
        capacity_bytes: 70_000_000_000,
        costs: costs.map(|(a_ns, b_ps)| LinearCost {
            fixed: ns(a_ns),
            per_kib_ps: b_ps,
        }),
        trim: ns(999),
        flush: ns(123_456_789_012),
        sequential_detect: SequentialDetect::PreviousSameDirection,
        servers: 3,
        queue_depth: 7,
    }
}

fn table(rows: Vec<TableRow>, speedup_milli: u64) -> TableParams {
    TableParams {
        capacity_bytes: 1 << 30,
        rows,
        channels: 4,
        speedup_milli,
        trim: ns(1),
        flush: ns(HOUR_NS),
        sequential_detect: SequentialDetect::PreviousRequest,
        queue_depth: 16,
    }
}

fn row(size_bytes: u64, service_ns: [u64; 4]) -> TableRow {
    TableRow {
        size_bytes,
        service: service_ns.map(ns),
    }
}

fn direction(times_ns: [u64; 3], schedule: &[u64], compensate: bool) -> StepDirection {
    StepDirection {
        random: ns(times_ns[0]),
        sequential: ns(times_ns[1]),
        spike: ns(times_ns[2]),
        step_interval_requests: schedule.to_vec(),
        compensate_first_request: compensate,
    }
}

fn step(read: StepDirection, write: StepDirection) -> StepParams {
    StepParams {
        capacity_bytes: 33_554_432,
        read,
        write,
        trim: ns(123_456_789_012),
        flush: ns(1),
        sequential_detect: SequentialDetect::PreviousRequest,
        queue_depth: 1,
    }
}

#[test]
fn presets_round_trip() {
    for name in [
        "stec-zeus",
        "uhs1-sd",
        "uhs1-sd:ch4-x2",
        "uhs1-sd:Ch2-x1.5",
        "uhs1-sd:x0.001",
        "wisconsin-usb",
    ] {
        round_trip(&preset(name));
    }
}

#[test]
fn linear_awkward_values_round_trip() {
    let mut p = linear([
        (1, 1),
        (999, 4_005_000),
        (123_456_789_012, B_MAX_PS),
        (HOUR_NS, 999_999_999_999),
    ]);
    round_trip(&DeviceSpec::new(p.clone()));
    p.sequential_detect = SequentialDetect::PreviousRequest;
    p.servers = 65_536;
    p.queue_depth = QUEUE_DEPTH_MAX as usize;
    p.costs = [(0, 0), (HOUR_NS - 1, 1_234_567), (1_001, 3_987_000), (7, 5)].map(|(a_ns, b_ps)| {
        LinearCost {
            fixed: ns(a_ns),
            per_kib_ps: b_ps,
        }
    });
    p.trim = SimDuration::ZERO;
    p.flush = ns(HOUR_NS);
    p.capacity_bytes = i64::MAX as u64;
    round_trip(&DeviceSpec::new(p));
}

#[test]
fn table_awkward_values_round_trip() {
    let rows = vec![
        row(1, [1, 999, 123_456_789_012, HOUR_NS]),
        row(512, [0, 1_001, 5_700, 400_000]),
        row(4096, [HOUR_NS - 1, 2, 3, 4]),
        row(1 << 40, [123_456_789, 987_654_321, 1, 0]),
    ];
    for speedup_milli in [1500, 1, 1000, 1_234_567, 1_000_000_000] {
        let mut p = table(rows.clone(), speedup_milli);
        round_trip(&DeviceSpec::new(p.clone()));
        p.channels = 65_536;
        p.sequential_detect = SequentialDetect::PreviousSameDirection;
        p.rows.truncate(1);
        round_trip(&DeviceSpec::new(p));
    }
}

#[test]
fn step_awkward_values_round_trip() {
    let schedules: [&[u64]; 4] = [
        &[1],
        &[32, 64, 128, 256],
        &[195, 256],
        &[7, 1, 1_000_000, 3],
    ];
    for (i, read_schedule) in schedules.iter().enumerate() {
        let write_schedule = schedules[(i + 1) % schedules.len()];
        for (compensate_read, compensate_write) in [(false, true), (true, false), (true, true)] {
            for detect in [
                SequentialDetect::PreviousRequest,
                SequentialDetect::PreviousSameDirection,
            ] {
                let mut p = step(
                    direction([1, 999, 123_456_789_012], read_schedule, compensate_read),
                    direction([HOUR_NS, 0, 1_001], write_schedule, compensate_write),
                );
                p.sequential_detect = detect;
                round_trip(&DeviceSpec::new(p));
            }
        }
    }
}

/// Many delays and slopes over the whole range a file may state: every one reads back to the
/// same integer. A small linear congruential generator keeps the values reproducible.
#[test]
fn every_representable_value_round_trips() {
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |bound: u64| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 11) % (bound + 1)
    };
    for i in 0..300u64 {
        // Small values exactly, then values spread over the range, then values near its top.
        let delay = |j: u64, next: &mut dyn FnMut(u64) -> u64| match i % 3 {
            0 => i * 8 + j,
            1 => next(HOUR_NS),
            _ => HOUR_NS - next(10_000),
        };
        let b = |next: &mut dyn FnMut(u64) -> u64| match i % 3 {
            0 => i,
            1 => next(B_MAX_PS),
            _ => B_MAX_PS - next(10_000),
        };
        let costs = [0, 1, 2, 3].map(|j| (delay(j, &mut next), b(&mut next)));
        let mut p = linear(costs);
        p.trim = ns(delay(4, &mut next));
        p.flush = ns(delay(5, &mut next));
        round_trip(&DeviceSpec::new(p));
        let times = [0, 1, 2, 3].map(|j| delay(j, &mut next));
        let s = step(
            direction([times[0], times[1], times[2]], &[1], false),
            direction(
                [times[3], delay(6, &mut next), delay(7, &mut next)],
                &[2],
                true,
            ),
        );
        round_trip(&DeviceSpec::new(s));
        let t = table(vec![row(4096, times)], 1 + next(999_999_999));
        round_trip(&DeviceSpec::new(t));
    }
}

#[test]
fn the_file_states_every_key() {
    let linear = blackbox_device_toml(&preset("stec-zeus")).unwrap();
    for key in [
        "model = \"linear\"",
        "capacity_bytes = 70000000000",
        "queue_depth = 32",
        "[linear]",
        "servers = 1",
        "sequential = \"previous-request\"",
        "trim_latency_us = 0.0",
        "flush_latency_us = 0.0",
        "[linear.sr]",
        "a_us = 127.5",
        "b_us_per_kib = 4.005",
        "[linear.rw]",
    ] {
        assert!(linear.contains(key), "{key} missing from\n{linear}");
    }
    let table = blackbox_device_toml(&preset("uhs1-sd:ch4-x1.5")).unwrap();
    for key in [
        "model = \"table\"",
        "[table]",
        "channels = 4",
        "speedup = 1.5",
        "[[table.row]]",
        "size_bytes = ",
        "rr_us = ",
    ] {
        assert!(table.contains(key), "{key} missing from\n{table}");
    }
    let step = blackbox_device_toml(&preset("wisconsin-usb")).unwrap();
    for key in [
        "model = \"step\"",
        "sequential = \"previous-same-direction\"",
        "[step.read]",
        "random_us = 1000.0",
        "step_interval_requests = [32, 64, 128, 256]",
        "compensate_first_request = false",
        "[step.write]",
        "compensate_first_request = true",
    ] {
        assert!(step.contains(key), "{key} missing from\n{step}");
    }
}

#[test]
fn other_models_are_errors_naming_the_model() {
    for (name, model) in [
        ("flashsim-2009", "ssd"),
        ("hdd-momentus-7200", "hdd"),
        ("hybrid-laptop-2007", "hybrid"),
    ] {
        let spec = preset(name);
        assert_eq!(spec.model_name(), model);
        let e = blackbox_device_toml(&spec).expect_err(name);
        assert!(e.contains(&format!("`{model}`")), "{name}: {e}");
    }
}

/// Parameters outside what a device file can state are errors that name the key, never a file
/// that fails to load or loads as something else.
#[test]
fn unwritable_values_are_errors() {
    let good = linear([(1, 1); 4]);
    let cases: Vec<(DeviceSpec, &str)> = vec![
        (
            DeviceSpec::new(LinearParams {
                trim: ns(HOUR_NS + 1),
                ..good.clone()
            }),
            "linear.trim_latency_us",
        ),
        (
            DeviceSpec::new({
                let mut p = good.clone();
                p.costs[AccessPattern::RandomWrite.index()].per_kib_ps = B_MAX_PS + 1;
                p
            }),
            "linear.rw.b_us_per_kib",
        ),
        (
            DeviceSpec::new(LinearParams {
                servers: 0,
                ..good.clone()
            }),
            "linear.servers",
        ),
        (
            DeviceSpec::new(LinearParams {
                capacity_bytes: i64::MAX as u64 + 1,
                ..good.clone()
            }),
            "capacity_bytes",
        ),
        (
            DeviceSpec::new(table(vec![row(1, [1; 4])], 1_000_000_001)),
            "table.speedup",
        ),
        (
            DeviceSpec::new(table(vec![row(1, [1; 4])], 0)),
            "table.speedup",
        ),
        (
            DeviceSpec::new(table(vec![row(2, [1; 4]), row(2, [1; 4])], 1000)),
            "table.row[1].size_bytes",
        ),
        (
            DeviceSpec::new(table(vec![row(1, [1; 4]), row(u64::MAX, [1; 4])], 1000)),
            "table.row[1].size_bytes",
        ),
        (
            DeviceSpec::new(table(vec![row(1, [1, 1, u64::MAX, 1])], 1000)),
            "table.row[0].rr_us",
        ),
        (
            DeviceSpec::new(step(
                direction([1, 1, 1], &[], false),
                direction([1, 1, 1], &[1], false),
            )),
            "step.read.step_interval_requests",
        ),
        (
            DeviceSpec::new(step(
                direction([1, 1, 1], &[1], false),
                direction([1, 1, 1], &[u64::MAX], false),
            )),
            "step.write.step_interval_requests[0]",
        ),
    ];
    for (spec, key) in cases {
        let e = blackbox_device_toml(&spec).expect_err(key);
        assert!(
            e.contains(&format!("key `{key}`")),
            "expected the error to name {key}: {e}"
        );
    }
}
