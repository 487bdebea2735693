//! Device files: presets, overrides, and the errors users see for bad files.

use storsim_blackbox::AccessPattern;
use storsim_config::{load_device, parse_device_toml, presets, ConfigError};

#[test]
fn every_preset_loads_by_name() {
    assert!(!presets().is_empty());
    for p in presets() {
        let loaded = load_device(p.name).unwrap();
        assert!(storsim_config::models().any(|m| m.name == loaded.spec.model_name()));
    }
}

#[test]
fn a_file_overrides_a_preset() {
    let spec = parse_device_toml(
        "preset = \"stec-zeus\"\ncapacity_bytes = 4096000\n[linear.sr]\na_us = 10.0\n",
        "dev.toml",
    )
    .unwrap();
    let Ok(p) = spec.into_params::<storsim_blackbox::linear::LinearParams>() else {
        panic!("expected a linear device")
    };
    assert_eq!(p.capacity_bytes, 4_096_000);
    assert_eq!(p.cost(AccessPattern::SequentialRead).fixed.as_ns(), 10_000);
    // Untouched keys keep the preset's values.
    assert_eq!(p.cost(AccessPattern::SequentialRead).per_kib_ps, 4_005_000);
    assert_eq!(p.cost(AccessPattern::RandomWrite).fixed.as_ns(), 770_000);
}

#[test]
fn a_file_can_describe_a_linear_device_from_scratch() {
    let text = r#"
model = "linear"
capacity_bytes = 1048576
queue_depth = 4
[linear]
servers = 2
sequential = "previous-same-direction"
sr = { a_us = 1, b_us_per_kib = 0.5 }
sw = { a_us = 2, b_us_per_kib = 0.5 }
rr = { a_us = 3, b_us_per_kib = 0.5 }
rw = { a_us = 4, b_us_per_kib = 0.5 }
"#;
    let Ok(p) = parse_device_toml(text, "scratch.toml")
        .unwrap()
        .into_params::<storsim_blackbox::linear::LinearParams>()
    else {
        panic!("expected a linear device")
    };
    assert_eq!(p.servers, 2);
    assert_eq!(p.queue_depth, 4);
    assert_eq!(
        p.cost(AccessPattern::RandomWrite).service(1024).as_ns(),
        4_500
    );
}

#[test]
fn unknown_keys_are_named_with_the_file_and_line() {
    let err = parse_device_toml(
        "preset = \"stec-zeus\"\n[linear]\nserverz = 2\n",
        "bad.toml",
    )
    .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, ConfigError::Syntax { .. }));
    assert!(msg.starts_with("bad.toml"), "{msg}");
    assert!(msg.contains("serverz"), "{msg}");
    assert!(msg.contains("line 3"), "{msg}");

    let top = parse_device_toml("preset = \"stec-zeus\"\nspeed = 3\n", "top.toml").unwrap_err();
    assert!(top.to_string().contains("speed"), "{top}");
}

#[test]
fn missing_and_invalid_values_name_the_key() {
    let cases = [
        (
            "model = \"linear\"\n[linear]\nservers = 1\n",
            "capacity_bytes",
        ),
        (
            "model = \"linear\"\ncapacity_bytes = 10\n[linear.sr]\na_us = 1\n",
            "linear.sr.b_us_per_kib",
        ),
        (
            "preset = \"stec-zeus\"\n[linear.rw]\na_us = -1\n",
            "linear.rw.a_us",
        ),
        (
            "preset = \"stec-zeus\"\n[linear]\nservers = 0\n",
            "linear.servers",
        ),
        ("preset = \"stec-zeus\"\nqueue_depth = 0\n", "queue_depth"),
        ("preset = \"no-such\"\n", "preset"),
        ("capacity_bytes = 5\n", "model"),
    ];
    for (text, key) in cases {
        let err = parse_device_toml(text, "f.toml").unwrap_err();
        match &err {
            ConfigError::Invalid { key: k, .. } => assert_eq!(k, key, "{text}"),
            other => panic!("{text}: expected Invalid for {key}, got {other:?}"),
        }
        assert!(err.to_string().contains(key));
    }
}

#[test]
fn wrong_types_and_bad_enum_values_are_syntax_errors() {
    for text in [
        "preset = \"stec-zeus\"\nqueue_depth = \"deep\"\n",
        "preset = \"stec-zeus\"\n[linear]\nsequential = \"sometimes\"\n",
        "model = \"quantum\"\n",
        "this is not toml",
    ] {
        let err = parse_device_toml(text, "t.toml").unwrap_err();
        assert!(matches!(err, ConfigError::Syntax { .. }), "{text}: {err:?}");
    }
}

#[test]
fn a_missing_file_is_reported_with_its_name() {
    let err = load_device("/nonexistent/dev.toml").unwrap_err();
    assert!(err.to_string().contains("/nonexistent/dev.toml"));
}

#[test]
fn overrides_apply_on_top_of_a_preset_and_name_bad_keys() {
    let base = storsim_config::load_device("stec-zeus").unwrap();
    let changed = storsim_config::load_device_with(
        "stec-zeus",
        &[
            "capacity_bytes=1000000000".to_string(),
            "queue_depth = 4".to_string(),
        ],
    )
    .unwrap();
    assert_eq!(changed.name, "stec-zeus with overrides");
    type Linear = storsim_blackbox::linear::LinearParams;
    match (
        base.spec.params::<Linear>(),
        changed.spec.params::<Linear>(),
    ) {
        (Some(b), Some(c)) => {
            assert_eq!(c.capacity_bytes, 1_000_000_000);
            assert_eq!(c.queue_depth, 4);
            assert_ne!(b.capacity_bytes, c.capacity_bytes);
        }
        other => panic!("expected two linear specs, got {other:?}"),
    }
    // A key the model does not know is refused with its name, as in a file, and the message
    // names the override that brought it rather than a line of the merged document (which is
    // not the user's text); so does a value of the wrong type, among several overrides.
    let err = storsim_config::load_device_with("stec-zeus", &["linear.bogus=1".to_string()])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("key `linear.bogus`: unknown field `bogus`"),
        "{err}"
    );
    assert!(
        err.contains("(set as `linear.bogus=1`)") && !err.contains("at line"),
        "{err}"
    );
    let err = storsim_config::load_device_with(
        "stec-zeus",
        &[
            "linear.servers=2".to_string(),
            "linear.sequential=\"sometimes\"".to_string(),
            "capacity_bytes=1000000000".to_string(),
        ],
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("key `linear.sequential`"), "{err}");
    assert!(!err.contains("at line"), "{err}");
    // Not KEY=VALUE at all.
    let err = storsim_config::load_device_with("stec-zeus", &["capacity_bytes".to_string()])
        .unwrap_err()
        .to_string();
    assert!(err.contains("KEY=VALUE"), "{err}");
    // A path through a value.
    let err = storsim_config::load_device_with(
        "stec-zeus",
        &[
            "capacity_bytes=1".to_string(),
            "capacity_bytes.x=1".to_string(),
        ],
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("not a section"), "{err}");
}

#[test]
fn overrides_apply_on_top_of_a_file_and_reach_nested_sections() {
    let tmp = tempfile::Builder::new()
        .prefix(&format!("storsim-overrides-{}-", std::process::id()))
        .tempdir()
        .unwrap();
    let dir = tmp.path();
    let path = dir.join("d.toml");
    std::fs::write(&path, "preset = \"flashsim-2009\"\n[ssd]\nftl = \"page\"\n").unwrap();
    let arg = path.to_str().unwrap();
    let changed = storsim_config::load_device_with(arg, &["ssd.page.gc_policy=random".to_string()]);
    let plain = storsim_config::load_device(arg).unwrap();
    std::fs::remove_dir_all(dir).unwrap();
    let changed = changed.unwrap();
    assert_ne!(changed.spec, plain.spec, "the override changed nothing");
}
