//! Device files that start from a disk or hybrid preset and override single keys: the preset's
//! device file is the base, the file's keys replace single keys (tables merged key by key), and
//! the result is checked like a file written in full, with unknown keys and wrong types named
//! with their line.

use storsim_config::{
    load_device, load_device_with, parse_device_toml, ConfigError, DeviceSpec, HybridConfiguration,
    HybridSpec,
};
use storsim_hdd::{HddParams, SeekCurve, WriteBack};
use storsim_hybrid::{HybridParams, Replacement};

fn hdd(spec: DeviceSpec) -> HddParams {
    spec.into_params::<storsim_hdd::HddParams>()
        .unwrap_or_else(|other| panic!("expected an hdd, got a {}", other.model_name()))
}

fn preset_hdd(name: &str) -> HddParams {
    hdd(load_device(name).unwrap().spec)
}

fn hybrid(spec: DeviceSpec) -> HybridSpec {
    spec.into_params::<storsim_config::HybridSpec>()
        .unwrap_or_else(|other| panic!("expected a hybrid, got a {}", other.model_name()))
}

fn controller(h: &HybridSpec) -> &HybridParams {
    match &h.configuration {
        HybridConfiguration::Controller(p) => p,
        HybridConfiguration::Host(_) => panic!("expected configuration 2"),
    }
}

/// The file, key and message of an `Invalid` error.
fn invalid(e: ConfigError) -> (String, String, String) {
    match e {
        ConfigError::Invalid { file, key, message } => (file, key, message),
        other => panic!("expected an invalid key, got {other}"),
    }
}

/// The message of a `Syntax` error, which names the file.
fn syntax(e: ConfigError, file: &str) -> String {
    let text = e.to_string();
    match e {
        ConfigError::Syntax { file: f, .. } => assert_eq!(f, file),
        other => panic!("expected a syntax error, got {other}"),
    }
    assert!(text.starts_with(file), "{text}");
    text
}

#[test]
fn one_disk_key_changes_exactly_that_field() {
    let preset = preset_hdd("disksim-cheetah9lp");

    let spec = parse_device_toml(
        "preset = \"disksim-cheetah9lp\"\n[hdd.mechanics]\nrpm = 7200.0\n",
        "rpm.toml",
    )
    .unwrap();
    let mut want = preset.clone();
    want.mechanics.rpm = 7200.0;
    assert_ne!(want, preset);
    assert_eq!(hdd(spec), want);

    // A cache key, written as a dotted key under [hdd], and the scheduler beside it.
    let spec = parse_device_toml(
        "preset = \"disksim-cheetah9lp\"\n[hdd]\nscheduler = \"sptf\"\ncache.write_back = \"none\"\n",
        "cache.toml",
    )
    .unwrap();
    let mut want = preset.clone();
    want.scheduler = storsim_hdd::SchedulerKind::Sptf;
    want.cache.write_back = WriteBack::None;
    assert_ne!(preset.cache.write_back, WriteBack::None);
    assert_eq!(hdd(spec), want);

    // An inline table is a table too: merged key by key, not replacing [hdd.cache].
    let spec = parse_device_toml(
        "preset = \"hdd-laptop-2007\"\n[hdd]\ncache = { segments = 2 }\n",
        "inline.toml",
    )
    .unwrap();
    let mut want = preset_hdd("hdd-laptop-2007");
    want.cache.segments = 2;
    assert_eq!(hdd(spec), want);
}

#[test]
fn a_disk_preset_alone_is_the_preset() {
    for name in ["hdd-laptop-2007", "disksim-hp-c2247a"] {
        let spec = parse_device_toml(&format!("preset = \"{name}\"\n"), "plain.toml").unwrap();
        assert_eq!(hdd(spec), preset_hdd(name));
        // Naming the model it has changes nothing either.
        let spec = parse_device_toml(
            &format!("preset = \"{name}\"\nmodel = \"hdd\"\n"),
            "plain.toml",
        )
        .unwrap();
        assert_eq!(hdd(spec), preset_hdd(name));
    }
}

#[test]
fn the_seek_curve_merges_its_keys_and_a_new_curve_replaces_it() {
    let preset = preset_hdd("hdd-laptop-2007");
    let SeekCurve::ThreePointCurve {
        single_ns, full_ns, ..
    } = preset.mechanics.seek
    else {
        panic!(
            "hdd-laptop-2007's seek curve changed: {:?}",
            preset.mechanics.seek
        )
    };
    // The same curve: one of its keys.
    let spec = parse_device_toml(
        "preset = \"hdd-laptop-2007\"\n[hdd.mechanics.seek]\naverage_ns = 11000000\n",
        "seek.toml",
    )
    .unwrap();
    let mut want = preset.clone();
    want.mechanics.seek = SeekCurve::ThreePointCurve {
        single_ns,
        average_ns: 11_000_000,
        full_ns,
    };
    assert_eq!(hdd(spec), want);
    // Another curve: the preset's curve keys mean nothing to it, so the table is the file's.
    let spec = parse_device_toml(
        "preset = \"hdd-laptop-2007\"\n[hdd.mechanics.seek]\ncurve = \"constant\"\ntime_ns = 4000000\n",
        "seek.toml",
    )
    .unwrap();
    let mut want = preset.clone();
    want.mechanics.seek = SeekCurve::Constant { time_ns: 4_000_000 };
    assert_eq!(hdd(spec), want);
}

/// Seek-curve lists that the model's types cannot hold are refused naming their key.
#[test]
fn seek_lists_that_do_not_fit_the_curve_name_their_key() {
    let e = parse_device_toml(
        "preset = \"hdd-laptop-2007\"\n[hdd.mechanics.seek]\ncurve = \"hpl-plus10\"\n\
         first_ten_ns = [1, 2, 3]\n[hdd.mechanics.seek.hpl]\nboundary_cylinders = 300\n\
         a_ns = 1.0\nb_ns_per_sqrt_cylinder = 1.0\nc_ns = 1.0\ne_ns_per_cylinder = 1.0\n",
        "ten.toml",
    )
    .unwrap_err();
    let (file, key, message) = invalid(e);
    assert_eq!(
        (file.as_str(), key.as_str()),
        ("ten.toml", "hdd.mechanics.seek.first_ten_ns")
    );
    assert!(message.contains("ten"), "{message}");

    let e = parse_device_toml(
        "preset = \"hdd-laptop-2007\"\n[hdd.mechanics.seek]\ncurve = \"extracted\"\n\
         points = [[1, 1000000], [5000000000, 9000000]]\n",
        "far.toml",
    )
    .unwrap_err();
    let (file, key, message) = invalid(e);
    assert_eq!(
        (file.as_str(), key.as_str()),
        ("far.toml", "hdd.mechanics.seek.points")
    );
    assert!(message.contains("5000000000"), "{message}");
}

#[test]
fn a_top_level_queue_depth_is_the_disk_s_and_capacity_does_not_apply() {
    let spec =
        parse_device_toml("preset = \"hdd-laptop-2007\"\nqueue_depth = 4\n", "q.toml").unwrap();
    let mut want = preset_hdd("hdd-laptop-2007");
    want.queue_depth = 4;
    assert_eq!(hdd(spec), want);

    for (text, key) in [
        (
            "preset = \"hdd-laptop-2007\"\nqueue_depth = 4\n[hdd]\nqueue_depth = 8\n",
            "hdd.queue_depth",
        ),
        (
            "preset = \"hdd-laptop-2007\"\ncapacity_bytes = 4096\n",
            "capacity_bytes",
        ),
        (
            "preset = \"hdd-laptop-2007\"\n[hdd]\nqueue_depth = 0\n",
            "hdd.queue_depth",
        ),
        ("preset = \"hdd-laptop-2007\"\nmodel = \"ssd\"\n", "model"),
        (
            "preset = \"hdd-laptop-2007\"\n[ssd]\nftl = \"page\"\n",
            "ssd",
        ),
    ] {
        let (file, k, message) = invalid(parse_device_toml(text, "over.toml").unwrap_err());
        assert_eq!(
            (file.as_str(), k.as_str()),
            ("over.toml", key),
            "{text}: {message}"
        );
    }
}

#[test]
fn unknown_disk_keys_are_named_with_their_line() {
    let cases = [
        (
            "preset = \"disksim-cheetah9lp\"\n\n[hdd.mechanics]\nrpm = 7200.0\nrpmx = 1\n",
            "hdd.mechanics.rpmx",
            5,
        ),
        (
            "preset = \"hdd-laptop-2007\"\n[hdd]\nscheduler = \"fcfs\"\ncache = { segmentz = 2 }\n",
            "hdd.cache.segmentz",
            4,
        ),
        (
            "preset = \"hdd-laptop-2007\"\n[hdd.bogus]\nx = 1\n",
            "hdd.bogus",
            2,
        ),
        ("preset = \"hdd-laptop-2007\"\nspeed = 3\n", "speed", 2),
        (
            "# a comment\npreset = \"momentus-xt\"\n[hybrid]\nreplacment = \"fifo\"\n",
            "hybrid.replacment",
            4,
        ),
    ];
    for (text, key, line) in cases {
        let msg = syntax(parse_device_toml(text, "bad.toml").unwrap_err(), "bad.toml");
        let name = key.rsplit('.').next().unwrap();
        assert!(msg.contains(&format!("key `{key}`")), "{text}: {msg}");
        assert!(
            msg.contains(&format!("unknown field `{name}`")),
            "{text}: {msg}"
        );
        assert!(msg.contains(&format!("line {line}")), "{text}: {msg}");
    }
}

#[test]
fn wrong_types_name_the_key_and_line() {
    let cases = [
        (
            "preset = \"disksim-cheetah9lp\"\n[hdd.mechanics]\nrpm = \"fast\"\n",
            "hdd.mechanics.rpm",
            3,
        ),
        (
            "preset = \"hdd-laptop-2007\"\n[hdd]\nscheduler = \"elevator\"\n",
            "hdd.scheduler",
            3,
        ),
        (
            "preset = \"hdd-laptop-2007\"\n[hdd]\nmechanics = 5\n",
            "hdd.mechanics",
            3,
        ),
        (
            "preset = \"hdd-laptop-2007\"\nqueue_depth = \"deep\"\n",
            "queue_depth",
            2,
        ),
        (
            "preset = \"hybrid-laptop-2007\"\n[hybrid]\nsmall_write_threshold_bytes = \"64k\"\n",
            "hybrid.small_write_threshold_bytes",
            3,
        ),
    ];
    for (text, key, line) in cases {
        let msg = syntax(
            parse_device_toml(text, "type.toml").unwrap_err(),
            "type.toml",
        );
        assert!(msg.contains(&format!("key `{key}`")), "{text}: {msg}");
        assert!(msg.contains(&format!("line {line}")), "{text}: {msg}");
    }
}

#[test]
fn one_hybrid_key_changes_exactly_that_field() {
    let preset = hybrid(load_device("hybrid-laptop-2007").unwrap().spec);
    let spec = hybrid(
        parse_device_toml(
            "preset = \"hybrid-laptop-2007\"\n[hybrid]\nsmall_write_threshold_bytes = 16384\n",
            "threshold.toml",
        )
        .unwrap(),
    );
    let mut want = controller(&preset).clone();
    assert_ne!(want.small_write_threshold_bytes, 16384);
    want.small_write_threshold_bytes = 16384;
    assert_eq!(controller(&spec), &want);
    assert_eq!((&spec.flash, &spec.disk), (&preset.flash, &preset.disk));

    // The Momentus XT with FIFO replacement and a shallower queue, stated at the top level.
    let preset = hybrid(load_device("momentus-xt").unwrap().spec);
    let spec = hybrid(
        parse_device_toml(
            "preset = \"momentus-xt\"\nqueue_depth = 8\n[hybrid]\nreplacement = \"fifo\"\n",
            "fifo.toml",
        )
        .unwrap(),
    );
    let mut want = controller(&preset).clone();
    want.replacement = Replacement::Fifo;
    want.queue_depth = 8;
    assert_eq!(controller(&spec), &want);
    assert_eq!((&spec.flash, &spec.disk), (&preset.flash, &preset.disk));
}

#[test]
fn a_merged_hybrid_is_checked_like_a_whole_file() {
    for (text, key) in [
        // The Momentus XT caches reads: the write threshold does not apply to it.
        (
            "preset = \"momentus-xt\"\n[hybrid]\nsmall_write_threshold_bytes = 16384\n",
            "hybrid.small_write_threshold_bytes",
        ),
        (
            "preset = \"momentus-xt\"\ncapacity_bytes = 4096\n",
            "capacity_bytes",
        ),
        (
            "preset = \"momentus-xt\"\nqueue_depth = 8\n[hybrid]\nqueue_depth = 16\n",
            "hybrid.queue_depth",
        ),
        (
            "preset = \"hybrid-laptop-2007\"\n[hybrid]\ncache_block_bytes = 1000\n",
            "hybrid.cache_block_bytes",
        ),
        (
            "preset = \"hybrid-laptop-2007\"\n[hybrid]\ndisk = \"no-such-disk.toml\"\n",
            "hybrid.disk",
        ),
    ] {
        let (file, k, message) = invalid(parse_device_toml(text, "h.toml").unwrap_err());
        assert_eq!(
            (file.as_str(), k.as_str()),
            ("h.toml", key),
            "{text}: {message}"
        );
        assert!(!message.contains("comes from preset"), "{text}: {message}");
    }
    // A key the file cannot remove: the 2007 drive's write threshold, once it caches reads.
    let (_, key, message) = invalid(
        parse_device_toml(
            "preset = \"hybrid-laptop-2007\"\n[hybrid]\nadmission = \"reads\"\n",
            "h.toml",
        )
        .unwrap_err(),
    );
    assert_eq!(key, "hybrid.small_write_threshold_bytes");
    assert!(
        message.contains("comes from preset 'hybrid-laptop-2007'"),
        "{message}"
    );
}

#[test]
fn a_hybrid_override_file_may_name_a_child_file_that_overrides_a_disk_preset() {
    let tmp = tempfile::Builder::new()
        .prefix(&format!("storsim-preset-overrides-{}-", std::process::id()))
        .tempdir()
        .unwrap();
    let dir = tmp.path();
    std::fs::write(
        dir.join("fast-disk.toml"),
        "preset = \"hdd-laptop-2007\"\n[hdd.mechanics]\nrpm = 7200.0\n",
    )
    .unwrap();
    let path = dir.join("hybrid.toml");
    std::fs::write(
        &path,
        "preset = \"hybrid-laptop-2007\"\n[hybrid]\ndisk = \"fast-disk.toml\"\n",
    )
    .unwrap();
    let loaded = load_device(path.to_str().unwrap());
    std::fs::remove_dir_all(dir).unwrap();
    let h = hybrid(loaded.unwrap().spec);
    let mut want = preset_hdd("hdd-laptop-2007");
    want.mechanics.rpm = 7200.0;
    assert_eq!(hdd(h.disk.spec.clone()), want);
    assert!(h.disk.name.ends_with("fast-disk.toml"), "{}", h.disk.name);
    assert!(DeviceSpec::new(h).build().is_ok());
}

#[test]
fn control_socket_overrides_reach_disk_and_hybrid_presets() {
    let changed =
        load_device_with("hdd-laptop-2007", &["hdd.mechanics.rpm=7200".to_string()]).unwrap();
    let mut want = preset_hdd("hdd-laptop-2007");
    want.mechanics.rpm = 7200.0;
    assert_eq!(hdd(changed.spec), want);

    let changed =
        load_device_with("momentus-xt", &["hybrid.replacement=fifo".to_string()]).unwrap();
    assert_eq!(
        controller(&hybrid(changed.spec)).replacement,
        Replacement::Fifo
    );

    let e = load_device_with("hdd-laptop-2007", &["hdd.cache.bogus=1".to_string()]).unwrap_err();
    assert!(e.to_string().contains("key `hdd.cache.bogus`"), "{e}");
}
