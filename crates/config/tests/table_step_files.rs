//! Device files and presets for the table and step models: overrides, ChN-xS variants, files
//! written from scratch, and errors that name the offending key.

use storsim_blackbox::step::StepParams;
use storsim_blackbox::table::TableParams;
use storsim_blackbox::{AccessPattern, SequentialDetect};
use storsim_config::{load_device, parse_device_toml, ConfigError, DeviceSpec};
use storsim_core::SimDuration;

fn table(spec: DeviceSpec) -> TableParams {
    spec.into_params::<storsim_blackbox::table::TableParams>()
        .unwrap_or_else(|other| panic!("expected a table device, got {}", other.model_name()))
}

fn step(spec: DeviceSpec) -> StepParams {
    spec.into_params::<storsim_blackbox::step::StepParams>()
        .unwrap_or_else(|other| panic!("expected a step device, got {}", other.model_name()))
}

fn invalid_key(text: &str) -> String {
    match parse_device_toml(text, "f.toml") {
        Err(ConfigError::Invalid { key, .. }) => key,
        other => panic!("{text}: expected an Invalid error, got {other:?}"),
    }
}

#[test]
fn uhs1_sd_loads_by_name_and_builds() {
    let loaded = load_device("uhs1-sd").unwrap();
    assert_eq!(loaded.spec.model_name(), "table");
    assert_eq!(loaded.spec.build().unwrap().model_name(), "table");
    let p = table(loaded.spec);
    assert_eq!(p.capacity_bytes, 400 << 20);
    assert_eq!((p.channels, p.speedup_milli), (1, 1000));
    assert_eq!(p.rows.len(), 8);
    assert_eq!(p.service(AccessPattern::RandomRead, 4096).as_ns(), 5_700);
}

#[test]
fn chn_xs_variants_select_channels_and_speedup() {
    for (name, channels, speedup_milli) in [
        ("uhs1-sd:ch4-x2", 4, 2000),
        ("uhs1-sd:Ch3-x1.5", 3, 1500),
        ("uhs1-sd:x2-ch4", 4, 2000),
        ("uhs1-sd:ch2", 2, 1000),
        ("uhs1-sd:x0.5", 1, 500),
    ] {
        let loaded = load_device(name).unwrap();
        assert_eq!(loaded.name, name);
        let p = table(loaded.spec);
        assert_eq!(
            (p.channels, p.speedup_milli),
            (channels, speedup_milli),
            "{name}"
        );
    }
    // Also as a file's preset, with the file overriding the variant.
    let p = table(
        parse_device_toml(
            "preset = \"uhs1-sd:ch4-x2\"\n[table]\nspeedup = 3\n",
            "v.toml",
        )
        .unwrap(),
    );
    assert_eq!((p.channels, p.speedup_milli), (4, 3000));
}

#[test]
fn bad_variants_are_refused_with_a_reason() {
    for (name, needle) in [
        ("uhs1-sd:ch0-x2", "channels"),
        ("uhs1-sd:ch4-x0", "speedup"),
        ("uhs1-sd:ch4-x-1", "chN-xS"),
        ("uhs1-sd:chfour", "chN-xS"),
        ("uhs1-sd:ch2-ch3", "chN-xS"),
        ("uhs1-sd:", "chN-xS"),
        ("stec-zeus:ch2", "no variants"),
    ] {
        let err = load_device(name).unwrap_err();
        match &err {
            ConfigError::Invalid { key, .. } => assert_eq!(key, "preset", "{name}"),
            other => panic!("{name}: expected Invalid, got {other:?}"),
        }
        assert!(err.to_string().contains(needle), "{name}: {err}");
    }
    let err = parse_device_toml("preset = \"uhs1-sd:ch0\"\n", "p.toml").unwrap_err();
    assert!(matches!(err, ConfigError::Invalid { ref key, .. } if key == "preset"));
    // Not a preset at all: then it is a file name, and there is no such file.
    assert!(matches!(
        load_device("no-such-device:ch2"),
        Err(ConfigError::NotFound { .. })
    ));
}

#[test]
fn a_file_overrides_the_uhs1_sd_preset() {
    let text = r#"
preset = "uhs1-sd"
queue_depth = 8
[table]
channels = 4
speedup = 2
sequential = "previous-same-direction"
trim_latency_us = 10
flush_latency_us = 250.5
"#;
    let p = table(parse_device_toml(text, "sd.toml").unwrap());
    assert_eq!((p.channels, p.speedup_milli, p.queue_depth), (4, 2000, 8));
    assert_eq!(p.sequential_detect, SequentialDetect::PreviousSameDirection);
    assert_eq!(p.trim, SimDuration::from_us(10));
    assert_eq!(p.flush.as_ns(), 250_500);
    // The preset's table is kept.
    assert_eq!(p.rows.len(), 8);
    assert_eq!(p.service(AccessPattern::RandomRead, 4096).as_ns(), 2_850);
}

#[test]
fn rows_in_a_file_replace_the_preset_table() {
    let text = r#"
preset = "uhs1-sd"
[[table.row]]
size_bytes = 4096
rr_us = 100
rw_us = 200
sr_us = 50
sw_us = 80
"#;
    let p = table(parse_device_toml(text, "rows.toml").unwrap());
    assert_eq!(p.rows.len(), 1);
    assert_eq!(p.service(AccessPattern::RandomWrite, 512).as_ns(), 200_000);
    assert_eq!(p.capacity_bytes, 400 << 20);
}

#[test]
fn a_table_device_from_scratch() {
    let text = r#"
model = "table"
capacity_bytes = 1073741824
[table]
channels = 2
[[table.row]]
size_bytes = 512
rr_us = 5.1
rw_us = 1113.6
sr_us = 1.9
sw_us = 9.2
[[table.row]]
size_bytes = 4096
rr_us = 5.7
rw_us = 1160.1
sr_us = 2.7
sw_us = 11.5
"#;
    let spec = parse_device_toml(text, "scratch.toml").unwrap();
    assert_eq!(spec.build().unwrap().model_name(), "table");
    let p = table(spec);
    assert_eq!((p.channels, p.speedup_milli, p.queue_depth), (2, 1000, 32));
    assert_eq!(p.sequential_detect, SequentialDetect::PreviousRequest);
    assert_eq!((p.trim, p.flush), (SimDuration::ZERO, SimDuration::ZERO));
    // Halfway from 512 to 4096 bytes: (5100 + 5700) / 2.
    assert_eq!(p.service(AccessPattern::RandomRead, 2304).as_ns(), 5_400);
}

#[test]
fn invalid_table_values_name_the_key() {
    let row = |size: u64| {
        format!("[[table.row]]\nsize_bytes = {size}\nrr_us = 1\nrw_us = 1\nsr_us = 1\nsw_us = 1\n")
    };
    let scratch = "model = \"table\"\ncapacity_bytes = 1048576\n";
    let cases = [
        (
            format!("{scratch}{}{}{}", row(512), row(1024), row(1024)),
            "table.row[2].size_bytes",
        ),
        (
            format!("{scratch}{}{}", row(4096), row(512)),
            "table.row[1].size_bytes",
        ),
        (
            format!("{scratch}[[table.row]]\nsize_bytes = 512\nrw_us = 1\nsr_us = 1\nsw_us = 1\n"),
            "table.row[0].rr_us",
        ),
        (
            format!("{scratch}[[table.row]]\nrr_us = 1\nrw_us = 1\nsr_us = 1\nsw_us = 1\n"),
            "table.row[0].size_bytes",
        ),
        (
            format!("{scratch}{}[[table.row]]\nsize_bytes = 1024\nrr_us = 1\nrw_us = 1\nsr_us = 1\nsw_us = -3\n", row(512)),
            "table.row[1].sw_us",
        ),
        (
            format!("{scratch}[[table.row]]\nsize_bytes = 512\nrr_us = 1e10\nrw_us = 1\nsr_us = 1\nsw_us = 1\n"),
            "table.row[0].rr_us",
        ),
        (format!("{scratch}[table]\nchannels = 1\n"), "table.row"),
        (format!("{scratch}[table]\nrow = []\n"), "table.row"),
        (format!("model = \"table\"\n{}", row(512)), "capacity_bytes"),
        ("model = \"table\"\ncapacity_bytes = 5\n".to_string(), "table"),
        ("preset = \"uhs1-sd\"\n[table]\nchannels = 0\n".to_string(), "table.channels"),
        ("preset = \"uhs1-sd\"\n[table]\nchannels = 100000\n".to_string(), "table.channels"),
        ("preset = \"uhs1-sd\"\n[table]\nspeedup = 0\n".to_string(), "table.speedup"),
        ("preset = \"uhs1-sd\"\n[table]\nspeedup = -2\n".to_string(), "table.speedup"),
        ("preset = \"uhs1-sd\"\n[table]\nspeedup = 0.0001\n".to_string(), "table.speedup"),
        ("preset = \"uhs1-sd\"\n[table]\nspeedup = nan\n".to_string(), "table.speedup"),
        ("preset = \"uhs1-sd\"\n[table]\ntrim_latency_us = -1\n".to_string(), "table.trim_latency_us"),
        ("preset = \"uhs1-sd\"\nqueue_depth = 0\n".to_string(), "queue_depth"),
        ("preset = \"uhs1-sd\"\ncapacity_bytes = 0\n".to_string(), "capacity_bytes"),
    ];
    for (text, key) in cases {
        assert_eq!(invalid_key(&text), key, "{text}");
        let err = parse_device_toml(&text, "f.toml").unwrap_err();
        assert!(err.to_string().contains(key), "{err}");
    }
}

#[test]
fn a_section_for_another_model_is_refused_by_name() {
    let cases = [
        (
            "model = \"linear\"\ncapacity_bytes = 10\n[table]\nchannels = 2\n",
            "table",
        ),
        ("preset = \"stec-zeus\"\n[table]\nchannels = 2\n", "table"),
        ("preset = \"uhs1-sd\"\n[linear]\nservers = 2\n", "linear"),
        ("preset = \"uhs1-sd\"\n[step.read]\nrandom_us = 2\n", "step"),
        (
            "preset = \"wisconsin-usb\"\n[[table.row]]\nsize_bytes = 1\n",
            "table",
        ),
        ("model = \"step\"\npreset = \"uhs1-sd\"\n", "model"),
        ("model = \"linear\"\npreset = \"wisconsin-usb\"\n", "model"),
    ];
    for (text, key) in cases {
        assert_eq!(invalid_key(text), key, "{text}");
    }
    let msg = parse_device_toml(cases[0].0, "mixed.toml")
        .unwrap_err()
        .to_string();
    assert!(msg.contains("[table]") && msg.contains("linear"), "{msg}");
}

#[test]
fn unknown_keys_in_the_new_sections_are_syntax_errors() {
    for text in [
        "preset = \"uhs1-sd\"\n[table]\nchanels = 2\n",
        "preset = \"uhs1-sd\"\n[[table.row]]\nsize_bytes = 512\nrr_ms = 1\n",
        "preset = \"wisconsin-usb\"\n[step.read]\nspike_ms = 2\n",
        "preset = \"wisconsin-usb\"\n[step]\nsequential = \"often\"\n",
        "preset = \"wisconsin-usb\"\n[step.write]\nstep_interval_requests = 195\n",
    ] {
        let err = parse_device_toml(text, "t.toml").unwrap_err();
        assert!(matches!(err, ConfigError::Syntax { .. }), "{text}: {err:?}");
    }
}

#[test]
fn wisconsin_usb_loads_by_name_and_a_file_overrides_it() {
    let loaded = load_device("wisconsin-usb").unwrap();
    assert_eq!(loaded.spec.build().unwrap().model_name(), "step");
    let p = step(loaded.spec);
    assert_eq!(p.capacity_bytes, 32 << 20);
    assert_eq!(p.read.step_interval_requests, [32, 64, 128, 256]);
    assert_eq!(p.write.step_interval_requests, [195, 256]);

    let text = r#"
preset = "wisconsin-usb"
[step]
sequential = "previous-request"
flush_latency_us = 12
[step.write]
spike_us = 100
step_interval_requests = [10, 20]
compensate_first_request = false
"#;
    let p = step(parse_device_toml(text, "usb.toml").unwrap());
    assert_eq!(p.sequential_detect, SequentialDetect::PreviousRequest);
    assert_eq!(p.flush, SimDuration::from_us(12));
    assert_eq!(p.write.spike, SimDuration::from_us(100));
    assert_eq!(p.write.step_interval_requests, [10, 20]);
    assert!(!p.write.compensate_first_request);
    // Untouched keys keep the preset's values.
    assert_eq!(
        p.read,
        step(load_device("wisconsin-usb").unwrap().spec).read
    );
}

#[test]
fn a_step_device_from_scratch() {
    let text = r#"
model = "step"
capacity_bytes = 33554432
queue_depth = 1
[step.read]
random_us = 800
sequential_us = 0
spike_us = 4000
step_interval_requests = [32, 64, 128, 256]
[step.write]
random_us = 2500.5
sequential_us = 200
spike_us = 15000
step_interval_requests = [195, 256]
compensate_first_request = true
"#;
    let spec = parse_device_toml(text, "scratch.toml").unwrap();
    assert_eq!(spec.build().unwrap().model_name(), "step");
    let p = step(spec);
    assert_eq!(p.queue_depth, 1);
    assert_eq!(p.sequential_detect, SequentialDetect::PreviousSameDirection);
    assert_eq!(p.write.random.as_ns(), 2_500_500);
    assert!(p.write.compensate_first_request);
    assert!(!p.read.compensate_first_request);
    assert_eq!((p.trim, p.flush), (SimDuration::ZERO, SimDuration::ZERO));
}

#[test]
fn invalid_step_values_name_the_key() {
    let full = |dir: &str| {
        format!("[step.{dir}]\nrandom_us = 1\nsequential_us = 1\nspike_us = 1\nstep_interval_requests = [4]\n")
    };
    let scratch = "model = \"step\"\ncapacity_bytes = 1048576\n";
    let cases = [
        (format!("{scratch}{}", full("write")), "step.read".to_string()),
        (
            format!("{scratch}{}[step.write]\nrandom_us = 1\nsequential_us = 1\nstep_interval_requests = [4]\n", full("read")),
            "step.write.spike_us".to_string(),
        ),
        (format!("model = \"step\"\n{}{}", full("read"), full("write")), "capacity_bytes".to_string()),
        ("model = \"step\"\ncapacity_bytes = 5\n".to_string(), "step".to_string()),
        (
            "preset = \"wisconsin-usb\"\n[step.read]\nstep_interval_requests = []\n".to_string(),
            "step.read.step_interval_requests".to_string(),
        ),
        (
            "preset = \"wisconsin-usb\"\n[step.write]\nstep_interval_requests = [195, 0]\n".to_string(),
            "step.write.step_interval_requests[1]".to_string(),
        ),
        (
            "preset = \"wisconsin-usb\"\n[step.write]\nrandom_us = -1\n".to_string(),
            "step.write.random_us".to_string(),
        ),
        (
            "preset = \"wisconsin-usb\"\n[step.read]\nspike_us = inf\n".to_string(),
            "step.read.spike_us".to_string(),
        ),
        (
            "preset = \"wisconsin-usb\"\n[step.write]\nspike_us = 1e12\n".to_string(),
            "step.write.spike_us".to_string(),
        ),
        (
            "preset = \"wisconsin-usb\"\n[step]\nflush_latency_us = -1\n".to_string(),
            "step.flush_latency_us".to_string(),
        ),
        ("preset = \"wisconsin-usb\"\nqueue_depth = 70000\n".to_string(), "queue_depth".to_string()),
    ];
    for (text, key) in cases {
        assert_eq!(invalid_key(&text), key, "{text}");
    }
}

/// Every TOML example on the black-box model pages parses, so the pages cannot drift from the
/// format.
#[test]
fn the_model_pages_examples_parse() {
    let docs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/models");
    for page in ["linear.md", "table.md", "step.md"] {
        let path = docs.join(page);
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let blocks: Vec<&str> = text
            .split("```toml\n")
            .skip(1)
            .map(|rest| rest.split("```").next().unwrap())
            .collect();
        assert!(!blocks.is_empty(), "{page} has no TOML example");
        for block in blocks {
            if let Err(e) = parse_device_toml(block, page) {
                panic!("{page}: example does not parse: {e}\n{block}");
            }
        }
    }
}
