//! `[array]` device files: children as presets and as files relative to the array file,
//! nesting, RAID-5 and RAID-6 with a spare, and the errors (unknown key, bad level, missing
//! stripe unit, a cycle of files, a missing child file, the parity levels' keys), each naming
//! the file and the key.

use std::path::Path;
use storsim_array::{ArrayParams, MemberFailure, ParityParams, RaidLevel, ReadPolicy};
use storsim_config::{load_device, ConfigError};
use storsim_core::SimTime;

/// A scratch directory per test, with a `sub/` directory for children named by path, removed
/// when the returned guard drops.
fn scratch(tag: &str) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix(&format!("storsim-array-{tag}-{}-", std::process::id()))
        .tempdir()
        .unwrap();
    std::fs::create_dir_all(dir.path().join("sub")).unwrap();
    dir
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

const LINEAR_CHILD: &str = r#"
model = "linear"
capacity_bytes = 1_000_000_000
[linear]
sr = { a_us = 10.0, b_us_per_kib = 1.0 }
sw = { a_us = 10.0, b_us_per_kib = 1.0 }
rr = { a_us = 10.0, b_us_per_kib = 1.0 }
rw = { a_us = 10.0, b_us_per_kib = 1.0 }
"#;

fn invalid_key(e: &ConfigError) -> (&str, &str, &str) {
    match e {
        ConfigError::Invalid { file, key, message } => (file, key, message),
        other => panic!("expected an invalid key, got {other:?}"),
    }
}

#[test]
fn raid0_of_a_preset_and_a_relative_file_resolves_and_builds() {
    let tmp = scratch("raid0");
    let dir = tmp.path();
    write(dir, "sub/lin.toml", LINEAR_CHILD);
    let array = write(
        dir,
        "raid0.toml",
        r#"
model = "array"
[array]
level = "raid0"
stripe_unit_bytes = 65536
queue_depth = 16
children = ["stec-zeus", "sub/lin.toml"]
"#,
    );
    let loaded = load_device(&array).unwrap();
    let Some(spec) = loaded.spec.params::<storsim_config::ArraySpec>() else {
        panic!("not an array: {:?}", loaded.spec.model_name())
    };
    assert_eq!(
        spec.params,
        ArrayParams {
            level: RaidLevel::Raid0 {
                stripe_unit_bytes: 65536
            },
            queue_depth: 16
        }
    );
    assert_eq!(spec.children.len(), 2);
    assert_eq!(spec.children[0].name, "stec-zeus");
    assert_eq!(spec.children[0].spec.model_name(), "linear");
    assert!(spec.children[1].name.ends_with("lin.toml"));
    let device = loaded.spec.build().unwrap();
    assert_eq!(device.model_name(), "array");
    assert_eq!(device.queue_depth(), 16);
    // Two children, the smaller (1 GB) in whole 64 KiB rows.
    assert_eq!(device.capacity_bytes(), 2 * (1_000_000_000 / 65536 * 65536));
    // Neither linear child grows with its size, so neither does the array.
    assert_eq!(loaded.spec.state_bytes_bound(), None);
}

#[test]
fn raid1_nests_an_array_file_and_sums_the_ssd_state_bounds() {
    let tmp = scratch("nested");
    let dir = tmp.path();
    write(
        dir,
        "sub/stripe.toml",
        r#"
model = "array"
[array]
level = "raid0"
stripe_unit_bytes = 4096
children = ["lin.toml", "lin.toml"]
"#,
    );
    write(dir, "sub/lin.toml", LINEAR_CHILD);
    let mirror = write(
        dir,
        "mirror.toml",
        r#"
model = "array"
queue_depth = 8
[array]
level = "raid1"
read_policy = "round-robin"
children = ["sub/stripe.toml", "flashsim-2009", "flashsim-2009:page"]
"#,
    );
    let loaded = load_device(&mirror).unwrap();
    let Some(spec) = loaded.spec.params::<storsim_config::ArraySpec>() else {
        panic!("not an array")
    };
    assert_eq!(
        spec.params.level,
        RaidLevel::Raid1 {
            read_policy: ReadPolicy::RoundRobin
        }
    );
    assert_eq!(spec.params.queue_depth, 8);
    // The nested file's children resolve relative to it (sub/), not to the mirror.
    let Some(inner) = spec.children[0].spec.params::<storsim_config::ArraySpec>() else {
        panic!("child 0 is not an array")
    };
    assert_eq!(inner.children.len(), 2);
    let ssd_bound = |i: usize| spec.children[i].spec.state_bytes_bound().unwrap();
    assert_eq!(
        loaded.spec.state_bytes_bound(),
        Some(ssd_bound(1) + ssd_bound(2))
    );
}

#[test]
fn unknown_key_in_the_array_section_names_it_and_the_file() {
    let tmp = scratch("unknown");
    let dir = tmp.path();
    let f = write(
        dir,
        "a.toml",
        "model = \"array\"\n[array]\nlevel = \"raid1\"\nstripe_size = 4096\nchildren = [\"stec-zeus\"]\n",
    );
    let e = load_device(&f).unwrap_err();
    let ConfigError::Syntax { file, message } = &e else {
        panic!("expected a syntax error, got {e:?}")
    };
    assert_eq!(file, &f);
    assert!(message.contains("stripe_size"), "{message}");
}

#[test]
fn bad_level_names_the_key_and_the_file() {
    let tmp = scratch("level");
    let dir = tmp.path();
    let f = write(
        dir,
        "a.toml",
        "model = \"array\"\n[array]\nlevel = \"raid7\"\nchildren = [\"stec-zeus\"]\n",
    );
    let e = load_device(&f).unwrap_err();
    let text = e.to_string();
    assert!(text.starts_with(&f), "{text}");
    assert!(text.contains("level") && text.contains("raid7"), "{text}");
    assert!(text.contains("raid0") && text.contains("raid6"), "{text}");
}

#[test]
fn raid0_without_a_stripe_unit_names_the_key() {
    let tmp = scratch("stripe");
    let dir = tmp.path();
    let f = write(
        dir,
        "a.toml",
        "model = \"array\"\n[array]\nlevel = \"raid0\"\nchildren = [\"stec-zeus\", \"stec-zeus\"]\n",
    );
    let e = load_device(&f).unwrap_err();
    let (file, key, _) = invalid_key(&e);
    assert_eq!((file, key), (f.as_str(), "array.stripe_unit_bytes"));

    let odd = write(
        dir,
        "b.toml",
        "model = \"array\"\n[array]\nlevel = \"raid0\"\nstripe_unit_bytes = 1000\nchildren = [\"stec-zeus\"]\n",
    );
    let e = load_device(&odd).unwrap_err();
    let (_, key, message) = invalid_key(&e);
    assert_eq!(key, "array.stripe_unit_bytes");
    assert!(message.contains("512"), "{message}");
}

#[test]
fn keys_for_the_other_level_and_a_capacity_are_refused() {
    let tmp = scratch("mismatch");
    let dir = tmp.path();
    let cases = [
        (
            "level = \"raid1\"\nstripe_unit_bytes = 4096",
            "array.stripe_unit_bytes",
        ),
        (
            "level = \"raid0\"\nstripe_unit_bytes = 4096\nread_policy = \"round-robin\"",
            "array.read_policy",
        ),
        ("level = \"raid1\"\nqueue_depth = 0", "queue_depth"),
        ("level = \"raid1\"\nchildren = []", "array.children"),
    ];
    for (i, (keys, expected_key)) in cases.iter().enumerate() {
        let children = if keys.contains("children") {
            ""
        } else {
            "\nchildren = [\"stec-zeus\"]"
        };
        let f = write(
            dir,
            &format!("{i}.toml"),
            &format!("model = \"array\"\n[array]\n{keys}{children}\n"),
        );
        let e = load_device(&f).unwrap_err();
        let (file, key, _) = invalid_key(&e);
        assert_eq!((file, key), (f.as_str(), *expected_key), "case {i}");
    }
    let f = write(
        dir,
        "cap.toml",
        "model = \"array\"\ncapacity_bytes = 1000000\n[array]\nlevel = \"raid1\"\nchildren = [\"stec-zeus\"]\n",
    );
    let e = load_device(&f).unwrap_err();
    assert_eq!(invalid_key(&e).1, "capacity_bytes");
    // A queue depth in [array] and at the top level: one of them must go.
    let f = write(
        dir,
        "twice.toml",
        "model = \"array\"\nqueue_depth = 8\n[array]\nlevel = \"raid1\"\nqueue_depth = 8\n\
         children = [\"stec-zeus\"]\n",
    );
    let e = load_device(&f).unwrap_err();
    let (_, key, message) = invalid_key(&e);
    assert_eq!(key, "array.queue_depth");
    assert!(message.contains("state it once"), "{message}");
}

#[test]
fn a_cycle_of_array_files_is_reported_with_the_chain() {
    let tmp = scratch("cycle");
    let dir = tmp.path();
    let a = write(
        dir,
        "a.toml",
        "model = \"array\"\n[array]\nlevel = \"raid1\"\nchildren = [\"stec-zeus\", \"sub/b.toml\"]\n",
    );
    write(
        dir,
        "sub/b.toml",
        "model = \"array\"\n[array]\nlevel = \"raid1\"\nchildren = [\"../a.toml\"]\n",
    );
    let e = load_device(&a).unwrap_err();
    let (file, key, message) = invalid_key(&e);
    // The file that closes the cycle is named, with the chain of files.
    assert!(file.ends_with("b.toml"), "{file}");
    assert_eq!(key, "array.children");
    assert!(
        message.contains("a.toml -> ") && message.contains("b.toml -> "),
        "{message}"
    );

    let own = write(
        dir,
        "self.toml",
        "model = \"array\"\n[array]\nlevel = \"raid1\"\nchildren = [\"self.toml\"]\n",
    );
    let e = load_device(&own).unwrap_err();
    let (file, key, message) = invalid_key(&e);
    assert_eq!((file, key), (own.as_str(), "array.children"));
    assert!(message.contains("contains itself"), "{message}");
}

#[test]
fn a_missing_child_file_names_the_entry_and_the_array_file() {
    let tmp = scratch("missing");
    let dir = tmp.path();
    let f = write(
        dir,
        "a.toml",
        "model = \"array\"\n[array]\nlevel = \"raid1\"\nchildren = [\"stec-zeus\", \"nowhere.toml\"]\n",
    );
    let e = load_device(&f).unwrap_err();
    let (file, key, message) = invalid_key(&e);
    assert_eq!((file, key), (f.as_str(), "array.children"));
    assert!(message.contains("child 1 'nowhere.toml'"), "{message}");
    assert!(message.contains("neither a preset"), "{message}");
}

#[test]
fn an_error_inside_a_child_file_names_the_child_file() {
    let tmp = scratch("childerr");
    let dir = tmp.path();
    write(
        dir,
        "sub/bad.toml",
        "model = \"linear\"\ncapacity_bytes = 0\n[linear]\n",
    );
    let f = write(
        dir,
        "a.toml",
        "model = \"array\"\n[array]\nlevel = \"raid1\"\nchildren = [\"sub/bad.toml\"]\n",
    );
    let e = load_device(&f).unwrap_err();
    let (file, _, _) = invalid_key(&e);
    assert!(file.ends_with("bad.toml"), "{file}");
}

#[test]
fn raid6_with_a_spare_a_rate_and_a_failed_member_resolves_and_builds() {
    let tmp = scratch("raid6");
    let dir = tmp.path();
    write(dir, "sub/lin.toml", LINEAR_CHILD);
    let f = write(
        dir,
        "raid6.toml",
        r#"
model = "array"
[array]
level = "raid6"
stripe_unit_bytes = 65536
children = ["sub/lin.toml", "sub/lin.toml", "sub/lin.toml", "sub/lin.toml", "sub/lin.toml"]
spare = "sub/lin.toml"
rebuild_rate_mb_per_s = 50
failed_member = 3
failed_at_ms = 2.5
"#,
    );
    let loaded = load_device(&f).unwrap();
    let spec = loaded.spec.params::<storsim_config::ArraySpec>().unwrap();
    assert_eq!(
        spec.params.level,
        RaidLevel::Raid6(ParityParams {
            stripe_unit_bytes: 65536,
            failed_member: Some(MemberFailure {
                member: 3,
                at: SimTime(2_500_000)
            }),
            rebuild_rate_bytes_per_s: 50_000_000,
        })
    );
    assert!(spec.spare.as_ref().unwrap().name.ends_with("lin.toml"));
    let device = loaded.spec.build().unwrap();
    // Three data members of 1 GB each, in whole 64 KiB rows.
    assert_eq!(device.capacity_bytes(), 3 * (1_000_000_000 / 65536 * 65536));
    let names: Vec<String> = device.counters().into_iter().map(|c| c.name).collect();
    assert!(names.iter().any(|n| n == "rebuild_progress"), "{names:?}");
    assert!(
        names.iter().any(|n| n.starts_with("spare_linear_")),
        "{names:?}"
    );
}

#[test]
fn raid5_defaults_to_md_s_rebuild_rate_and_no_spare() {
    let tmp = scratch("raid5");
    let f = write(
        tmp.path(),
        "raid5.toml",
        "model = \"array\"\n[array]\nlevel = \"raid5\"\nstripe_unit_bytes = 4096\n\
         children = [\"stec-zeus\", \"stec-zeus\", \"stec-zeus\"]\n",
    );
    let loaded = load_device(&f).unwrap();
    let spec = loaded.spec.params::<storsim_config::ArraySpec>().unwrap();
    let RaidLevel::Raid5(p) = spec.params.level else {
        panic!("{:?}", spec.params.level)
    };
    // md's speed_limit_max: 200,000 KiB/s.
    assert_eq!(p.rebuild_rate_bytes_per_s, 200_000 * 1024);
    assert_eq!(p.failed_member, None);
    assert!(spec.spare.is_none());
}

/// Each bad parity setting is an error naming the file and its key.
#[test]
fn the_parity_levels_keys_are_checked() {
    let tmp = scratch("parity-errors");
    let dir = tmp.path();
    let three = "children = [\"stec-zeus\", \"stec-zeus\", \"stec-zeus\"]";
    let cases = [
        ("level = \"raid1\"\nspare = \"stec-zeus\"\n".to_string() + three, "array.spare", "raid5"),
        (format!("level = \"raid0\"\nstripe_unit_bytes = 4096\nfailed_member = 0\n{three}"), "array.failed_member", "raid5"),
        (format!("level = \"raid5\"\n{three}"), "array.stripe_unit_bytes", "raid5"),
        (format!("level = \"raid5\"\nstripe_unit_bytes = 4096\nread_policy = \"round-robin\"\n{three}"), "array.read_policy", "raid1"),
        (format!("level = \"raid6\"\nstripe_unit_bytes = 4096\n{three}"), "array.children", "at least 4"),
        (format!("level = \"raid5\"\nstripe_unit_bytes = 4096\nfailed_member = 3\n{three}"), "array.failed_member", "got 3"),
        (format!("level = \"raid5\"\nstripe_unit_bytes = 4096\nfailed_at_ms = 3\n{three}"), "array.failed_at_ms", "failed_member"),
        (format!("level = \"raid5\"\nstripe_unit_bytes = 4096\nrebuild_rate_mb_per_s = 0\n{three}"), "array.rebuild_rate_mb_per_s", "got 0"),
        (format!("level = \"raid5\"\nstripe_unit_bytes = 4096\nspare = \"no-such\"\n{three}"), "array.spare", "the spare 'no-such'"),
    ];
    for (i, (body, key, says)) in cases.iter().enumerate() {
        let f = write(
            dir,
            &format!("e{i}.toml"),
            &format!("model = \"array\"\n[array]\n{body}\n"),
        );
        let e = load_device(&f).unwrap_err();
        let (file, k, message) = invalid_key(&e);
        assert_eq!((file, k), (f.as_str(), *key), "case {i}: {e}");
        assert!(message.contains(says), "case {i}: {message}");
    }
}
