//! The device file's `[faults]` section: read into the layer's plan, and every bad key refused
//! with the file, the line and the key.

use storsim_config::{parse_device_toml, parse_fault_rule, ConfigError};
use storsim_core::conformance::counter;
use storsim_core::Op;
use storsim_faults::{Delay, FaultKind};

const BASE: &str = "preset = \"stec-zeus\"\n";

fn error(text: &str) -> (String, String) {
    match parse_device_toml(&format!("{BASE}{text}"), "dev.toml") {
        Err(ConfigError::Invalid { file, key, .. }) => (file, key),
        Err(ConfigError::Syntax { file, message }) => (file, message),
        other => panic!("expected an error, got {other:?}"),
    }
}

#[test]
fn a_faults_section_becomes_the_plan_and_the_device_is_wrapped() {
    let spec = parse_device_toml(
        &format!(
            "{BASE}[faults]\nhost_timeout_ms = 5\n\n[[faults.rule]]\nkind = \"read_error\"\n\
             rate_per_million = 200\nlba_start = 8\nlba_end = 16\nfrom_request = 3\n\
             from_ms = 1.5\nduration_ms = 2\n\n[[faults.rule]]\nkind = \"latency_spike\"\n\
             op = \"write\"\ndelay = \"uniform\"\nlatency_min_us = 10\nlatency_max_us = 20\n"
        ),
        "dev.toml",
    )
    .unwrap();
    let plan = spec.faults().unwrap();
    assert_eq!(plan.host_timeout_ns, 5_000_000);
    let r = &plan.rules[0];
    assert_eq!(r.kind, FaultKind::ReadError);
    assert_eq!(r.rate_per_million, 200);
    assert_eq!(r.sectors, Some((8, 16)));
    assert_eq!(r.from_request, 3);
    assert_eq!(r.from_ns, 1_500_000);
    assert_eq!(r.duration_ns, Some(2_000_000));
    let s = &plan.rules[1];
    assert_eq!(s.op, Some(Op::Write));
    assert_eq!(
        s.delay,
        Some(Delay::Uniform {
            min_ns: 10_000,
            max_ns: 20_000
        })
    );
    let device = spec.build().unwrap();
    assert!(device
        .counters()
        .iter()
        .any(|c| c.name == "faults_injected_read_error"));
}

#[test]
fn a_file_without_faults_builds_the_model_alone() {
    let spec = parse_device_toml(BASE, "dev.toml").unwrap();
    assert!(spec.faults().is_none());
    let device = spec.build().unwrap();
    assert!(!device
        .counters()
        .iter()
        .any(|c| c.name.starts_with("faults_")));
}

#[test]
fn bad_fault_keys_are_refused_naming_file_line_and_key() {
    let rule = "[[faults.rule]]\n";
    for (text, line, key) in [
        ("kind = \"melt\"\n", 3, "faults.rule.kind"),
        (
            "kind = \"read_error\"\nrate_per_million = 0\n",
            4,
            "faults.rule.rate_per_million",
        ),
        (
            "kind = \"read_error\"\nop = \"write\"\n",
            4,
            "faults.rule.op",
        ),
        (
            "kind = \"read_error\"\nlba_start = 5\n",
            4,
            "faults.rule.lba_end",
        ),
        (
            "kind = \"read_error\"\nlba_start = 5\nlba_end = 5\n",
            5,
            "faults.rule.lba_end",
        ),
        ("kind = \"latency_spike\"\n", 3, "faults.rule.delay"),
        (
            "kind = \"latency_spike\"\ndelay = \"fixed\"\n",
            4,
            "faults.rule.latency_us",
        ),
        (
            "kind = \"hang\"\nduration_ms = -1\n",
            4,
            "faults.rule.duration_ms",
        ),
        (
            "kind = \"hang\"\nfrom_request = 0\n",
            4,
            "faults.rule.from_request",
        ),
    ] {
        let (file, key_seen) = error(&format!("{rule}{text}"));
        assert_eq!(file, format!("dev.toml:{line}"), "{text}");
        assert_eq!(key_seen, key, "{text}");
    }
    let (file, message) = error("[faults]\nhost_timeout_ms = 0\n");
    assert_eq!(
        (file.as_str(), message.as_str()),
        ("dev.toml:3", "faults.host_timeout_ms")
    );
    // An unknown key is the TOML reader's error, which names the key and shows the line.
    let (file, message) = error("[[faults.rule]]\nkind = \"hang\"\nrate = 5\n");
    assert_eq!(file, "dev.toml");
    assert!(
        message.contains("rate") && message.contains("line 4"),
        "{message}"
    );
}

#[test]
fn the_control_sockets_words_make_the_same_rules() {
    let rule = parse_fault_rule(
        &["kind=read_error", "lba_start=0", "lba_end=2048"],
        "fault add",
    )
    .unwrap();
    assert_eq!(rule.kind, FaultKind::ReadError);
    assert_eq!(rule.sectors, Some((0, 2048)));
    match parse_fault_rule(&["kind=read_error", "rate_per_million=0"], "fault add") {
        Err(ConfigError::Invalid { key, .. }) => assert_eq!(key, "rate_per_million"),
        other => panic!("{other:?}"),
    }
    assert!(parse_fault_rule(&["kind"], "fault add").is_err());
}

#[test]
fn a_childs_faults_fail_the_array_requests_that_reach_it_and_no_others() {
    use storsim_core::Status;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(
        dir.join("bad.toml"),
        format!("{BASE}[faults]\n[[faults.rule]]\nkind = \"read_error\"\n"),
    )
    .unwrap();
    let array = dir.join("array.toml");
    std::fs::write(
        &array,
        "model = \"array\"\n[array]\nlevel = \"raid0\"\nstripe_unit_bytes = 65536\n\
         children = [\"bad.toml\", \"stec-zeus\"]\n",
    )
    .unwrap();
    let spec = storsim_config::load_device(array.to_str().unwrap())
        .unwrap()
        .spec;
    let mut device = spec.build().unwrap();
    let done = drive_mixed(device.as_mut(), 3, 2_000);
    // Stripe units alternate between the children: a read fails exactly when it touches one
    // of child 0's units.
    let on_child0 = |c: &storsim_core::Completion| {
        let r = &c.request;
        (r.offset_bytes / 65536..r.end_bytes().div_ceil(65536)).any(|unit| unit % 2 == 0)
    };
    let reads: Vec<_> = done.iter().filter(|c| c.request.op == Op::Read).collect();
    assert!(
        reads.iter().any(|c| !on_child0(c)),
        "some reads miss child 0"
    );
    for c in reads {
        let expected = if on_child0(c) {
            Status::MediaError
        } else {
            Status::Ok
        };
        assert_eq!(c.status, expected, "{:?}", c.request);
    }
    assert!(done
        .iter()
        .filter(|c| c.request.op != Op::Read)
        .all(|c| c.status.is_ok()));
}

/// A RAID-1 device file over `children` (a TOML array of device files and presets) in `dir`.
fn mirror(dir: &std::path::Path, children: &str) -> storsim_config::DeviceSpec {
    let path = dir.join("mirror.toml");
    std::fs::write(
        &path,
        format!("model = \"array\"\n[array]\nlevel = \"raid1\"\nchildren = {children}\n"),
    )
    .unwrap();
    storsim_config::load_device(path.to_str().unwrap())
        .unwrap()
        .spec
}

/// The conformance kit's mixed workload of `count` requests from `seed`, driven through
/// `device`.
fn drive_mixed(
    device: &mut dyn storsim_core::Device,
    seed: u64,
    count: usize,
) -> Vec<storsim_core::Completion> {
    use storsim_core::conformance::{drive, mixed_requests, Mix};
    let requests = mixed_requests(
        seed,
        &Mix {
            count,
            capacity_bytes: device.capacity_bytes(),
            queue_depth: device.queue_depth(),
            max_request_bytes: 32 * 1024,
        },
    );
    drive(device, &requests).unwrap().completions
}

#[test]
fn a_mirror_reads_the_other_copy_when_one_has_a_media_error() {
    use storsim_core::Status;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(
        dir.join("bad.toml"),
        format!("{BASE}[faults]\n[[faults.rule]]\nkind = \"read_error\"\n"),
    )
    .unwrap();
    let run = |children: &str| {
        let mut device = mirror(dir, children).build().unwrap();
        let done = drive_mixed(device.as_mut(), 4, 1_000);
        (done, counter(device.as_ref(), "redirected_reads"))
    };
    // One bad copy: every read succeeds from the other, those sent to the bad one redirected.
    let (done, redirected) = run("[\"bad.toml\", \"stec-zeus\"]");
    assert!(done.iter().all(|c| c.status.is_ok()));
    assert!(redirected > 0.0);
    // Both bad: the read fails once every copy was tried.
    let (done, redirected) = run("[\"bad.toml\", \"bad.toml\"]");
    let reads: Vec<_> = done.iter().filter(|c| c.request.op == Op::Read).collect();
    assert!(reads.iter().all(|c| c.status == Status::MediaError));
    assert_eq!(redirected, reads.len() as f64);
}

#[test]
fn a_mirror_drops_a_member_that_fails_writes_and_lists_the_error_counters() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(
        dir.join("bad.toml"),
        format!("{BASE}[faults]\n[[faults.rule]]\nkind = \"write_error\"\n"),
    )
    .unwrap();
    // The faulty disk sits one level down, inside a stripe: the mirror still knows.
    std::fs::write(
        dir.join("stripe.toml"),
        "model = \"array\"\n[array]\nlevel = \"raid0\"\nstripe_unit_bytes = 65536\n\
         children = [\"bad.toml\", \"stec-zeus\"]\n",
    )
    .unwrap();
    let spec = mirror(dir, "[\"stripe.toml\", \"stec-zeus\"]");
    assert!(spec.has_faults() && spec.faults().is_none());
    let mut device = spec.build().unwrap();
    let done = drive_mixed(device.as_mut(), 5, 1_000);
    assert!(done.iter().all(|c| c.status.is_ok()));
    let value = |name: &str| counter(device.as_ref(), name);
    assert_eq!(value("member_failures"), 1.0);
    assert!(value("degraded_writes") > 0.0);
    // The stripe itself has no second copy: its own counters show the error it passed up.
    assert!(value("child0_array_member_errors") >= 1.0);
    assert_eq!(value("child0_array_member_failures"), 0.0);

    // Without a faults layer anywhere, the counters are those of before faults existed.
    let spec = mirror(dir, "[\"stec-zeus\", \"stec-zeus\"]");
    assert!(!spec.has_faults());
    let device = spec.build().unwrap();
    assert!(!device
        .counters()
        .iter()
        .any(|c| c.name.ends_with("member_errors")));
}

#[test]
fn the_runs_seed_reaches_the_childrens_faults_each_child_its_own() {
    use storsim_config::{child_fault_seed, ArraySpec};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(
        dir.join("flaky.toml"),
        format!(
            "{BASE}[faults]\n[[faults.rule]]\nkind = \"write_error\"\nrate_per_million = 500000\n"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("stripe.toml"),
        "model = \"array\"\n[array]\nlevel = \"raid0\"\nstripe_unit_bytes = 65536\n\
         children = [\"flaky.toml\", \"flaky.toml\"]\n",
    )
    .unwrap();
    let path = dir.join("mirror.toml");
    std::fs::write(
        &path,
        "model = \"array\"\n[array]\nlevel = \"raid1\"\nchildren = [\"stripe.toml\", \"flaky.toml\"]\n",
    )
    .unwrap();
    let mut spec = storsim_config::load_device(path.to_str().unwrap())
        .unwrap()
        .spec;
    assert!(!spec.seed_faults(7), "no layer over the mirror itself");
    let seed_of = |spec: &storsim_config::DeviceSpec| spec.faults().unwrap().seed;
    let mirror = spec.params::<ArraySpec>().unwrap();
    let stripe = mirror.children[0].spec.params::<ArraySpec>().unwrap();
    let seeds = [
        seed_of(&stripe.children[0].spec),
        seed_of(&stripe.children[1].spec),
        seed_of(&mirror.children[1].spec),
    ];
    let s0 = child_fault_seed(7, 0);
    assert_eq!(
        seeds,
        [
            child_fault_seed(s0, 0),
            child_fault_seed(s0, 1),
            child_fault_seed(7, 1)
        ]
    );
    assert!(seeds[0] != seeds[1] && seeds[1] != seeds[2] && seeds[0] != seeds[2]);
    // The same rules over two children, seeded apart, strike different writes: in a stripe
    // whose 64 KiB units alternate between them, which of each child's writes failed.
    let stripe = storsim_config::load_device(dir.join("stripe.toml").to_str().unwrap())
        .unwrap()
        .spec;
    let struck = |seed: u64| {
        let mut spec = stripe.clone();
        spec.seed_faults(seed);
        let mut device = spec.build().unwrap();
        let requests: Vec<storsim_core::Request> = (0..128u64)
            .map(|i| storsim_core::Request {
                id: i,
                op: Op::Write,
                offset_bytes: i * 65536,
                len_bytes: 4096,
                arrival: storsim_core::SimTime(i * 10_000_000),
                flow: 0,
            })
            .collect();
        let mut done = storsim_core::conformance::drive(device.as_mut(), &requests)
            .unwrap()
            .completions;
        done.sort_by_key(|c| c.request.id);
        let failed = |child: u64| -> Vec<bool> {
            done.iter()
                .filter(|c| c.request.id % 2 == child)
                .map(|c| !c.status.is_ok())
                .collect()
        };
        (failed(0), failed(1))
    };
    let (a, b) = struck(7);
    assert!(a.contains(&true) && a.contains(&false));
    assert_ne!(a, b, "each child draws its own");
    assert_eq!(
        struck(7),
        (a.clone(), b),
        "the same seed strikes the same writes"
    );
    assert_ne!(struck(8).0, a, "another seed strikes others");
}

#[test]
fn a_hybrid_drive_over_a_faulty_child_lists_the_error_counters() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/hybrid");
    for file in ["disk.toml", "flash.toml", "controller.toml"] {
        std::fs::copy(examples.join(file), dir.join(file)).unwrap();
    }
    let has_counter = || {
        let spec = storsim_config::load_device(dir.join("controller.toml").to_str().unwrap())
            .unwrap()
            .spec;
        let counters = spec.build().unwrap().counters();
        (
            spec.has_faults(),
            counters.iter().any(|c| c.name == "flush_failed_jobs"),
        )
    };
    assert_eq!(has_counter(), (false, false));
    let disk = std::fs::read_to_string(examples.join("disk.toml")).unwrap();
    std::fs::write(
        dir.join("disk.toml"),
        format!("{disk}\n[faults]\n[[faults.rule]]\nkind = \"write_error\"\n"),
    )
    .unwrap();
    assert_eq!(has_counter(), (true, true));
}

#[test]
fn a_hybrid_drive_fails_the_host_reads_its_faulty_disk_serves() {
    use storsim_core::conformance::drive;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/hybrid");
    let disk = std::fs::read_to_string(examples.join("disk.toml")).unwrap();
    std::fs::write(
        dir.join("disk.toml"),
        format!("{disk}\n[faults]\n[[faults.rule]]\nkind = \"read_error\"\n"),
    )
    .unwrap();
    std::fs::copy(examples.join("flash.toml"), dir.join("flash.toml")).unwrap();
    std::fs::copy(
        examples.join("controller.toml"),
        dir.join("controller.toml"),
    )
    .unwrap();
    let spec = storsim_config::load_device(dir.join("controller.toml").to_str().unwrap())
        .unwrap()
        .spec;
    let mut device = spec.build().unwrap();
    // Small writes go to the flash; reading them back hits it, reading elsewhere reaches the
    // disk.
    let at = |id: u64, op, offset_bytes, ms: u64| storsim_core::Request {
        id,
        op,
        offset_bytes,
        len_bytes: 4096,
        arrival: storsim_core::SimTime(ms * 1_000_000),
        flow: 0,
    };
    let mut requests = Vec::new();
    for i in 0..32u64 {
        requests.push(at(i, Op::Write, (64 << 20) + i * 4096, i));
    }
    for i in 0..32u64 {
        requests.push(at(32 + i, Op::Read, (64 << 20) + i * 4096, 100 + i));
    }
    for i in 0..32u64 {
        requests.push(at(64 + i, Op::Read, (512 << 20) + i * 4096, 200 + i));
    }
    let done = drive(device.as_mut(), &requests).unwrap().completions;
    for c in &done {
        let from_disk = c.request.op == Op::Read && c.request.offset_bytes >= 512 << 20;
        assert_eq!(c.status.is_ok(), !from_disk, "{:?}", c.request);
    }
}

#[test]
fn behind_a_host_interface_the_faults_layer_s_errors_reach_the_host() {
    use storsim_core::conformance::drive;
    use storsim_core::Status;
    // The layers stack host -> host interface -> faults -> model: the error is the device's,
    // and the host sees it through the interface, which counts the command as fetched.
    let spec = parse_device_toml(
        &format!(
            "{BASE}[host_interface]\nprotocol = \"nvme\"\n\n[faults]\n[[faults.rule]]\n\
             kind = \"read_error\"\nlba_start = 0\nlba_end = 64\n"
        ),
        "dev.toml",
    )
    .unwrap();
    assert!(spec.host_interface().is_some() && spec.faults().is_some());
    let mut device = spec.build().unwrap();
    let requests: Vec<_> = (0..16u64)
        .map(|i| storsim_core::Request {
            id: i,
            op: Op::Read,
            // Even requests read inside the bad sectors (the first 32 KiB), odd ones far away.
            offset_bytes: if i % 2 == 0 { i * 1024 } else { 1 << 30 },
            len_bytes: 1024,
            arrival: storsim_core::SimTime(i * 100_000),
            flow: 0,
        })
        .collect();
    let done = drive(device.as_mut(), &requests).unwrap().completions;
    assert_eq!(done.len(), 16);
    for c in &done {
        let expected = if c.request.id % 2 == 0 {
            Status::MediaError
        } else {
            Status::Ok
        };
        assert_eq!(c.status, expected, "{:?}", c.request);
    }
    let counters = device.counters();
    let value = |name: &str| {
        counters
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no counter {name}"))
            .value
    };
    assert_eq!(value("hostif_fetched_commands"), 16.0);
    assert_eq!(value("faults_injected_read_error"), 8.0);
}
