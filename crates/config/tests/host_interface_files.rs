//! The `[host_interface]` section: any model may have one, it reads back from what
//! `host_interface_toml` writes with every key changed, its errors name the file, the key (and
//! the line, for unknown keys and wrong types), and the presets' `:nvme` variants carry one
//! while the presets themselves do not.

use storsim_config::{host_interface_toml, load_device, load_device_with, parse_device_toml};
use storsim_config::{ConfigError, DeviceSpec};
use storsim_core::{Device, SimDuration};
use storsim_hostif::{
    Arbitration, Encoding, HostInterfaceParams, LinkParams, Protocol, SATA_NCQ_DEPTH,
};
use storsim_ssd::SsdParams;

fn parse(text: &str) -> Result<DeviceSpec, ConfigError> {
    parse_device_toml(text, "dev.toml")
}

/// The key an `Invalid` error names; panics on any other result.
fn invalid_key(result: Result<DeviceSpec, ConfigError>) -> String {
    match result {
        Err(ConfigError::Invalid { file, key, .. }) => {
            assert_eq!(file, "dev.toml");
            key
        }
        other => panic!("expected an invalid key, got {other:?}"),
    }
}

#[test]
fn a_section_puts_an_interface_in_front_of_any_model() {
    let spec = parse("preset = \"bench2g\"\n[host_interface]\nprotocol = \"nvme\"\n").unwrap();
    assert_eq!(
        spec.host_interface(),
        Some(&HostInterfaceParams::defaults(Protocol::Nvme))
    );
    // The model's parameters are still the preset's, reachable as before.
    assert!(spec.params::<SsdParams>().is_some());
    for preset in ["stec-zeus", "hdd-laptop-2007", "hybrid-laptop-2007"] {
        let text = format!("preset = \"{preset}\"\n[host_interface]\nprotocol = \"sata\"\n");
        let spec = parse(&text).unwrap_or_else(|e| panic!("{preset}: {e}"));
        let interface = spec.host_interface().expect("an interface");
        assert_eq!(interface.protocol, Protocol::Sata, "{preset}");
        let device = spec.build().unwrap_or_else(|e| panic!("{preset}: {e}"));
        assert_eq!(device.queue_depth(), SATA_NCQ_DEPTH as usize, "{preset}");
    }
}

#[test]
fn every_key_round_trips() {
    let params = HostInterfaceParams {
        protocol: Protocol::Nvme,
        queues: 3,
        queue_depth: 77,
        fetch_per_round: 5,
        queue_fetch_size: 3,
        arbitration: Arbitration::WeightedRoundRobin {
            high: 9,
            medium: 5,
            low: 2,
        },
        link: LinkParams {
            lanes: 8,
            gigatransfers_per_s: 16.0,
            encoding: Encoding::E8b10b,
            full_duplex: false,
        },
        command_bytes: 72,
        completion_bytes: 24,
        command_processing: SimDuration::from_ns(1_234),
        flows: Vec::new(),
    };
    // Every value differs from the defaults, so a key that did not reach its parameter fails.
    let defaults = HostInterfaceParams::defaults(Protocol::Nvme);
    assert_ne!(params.queues, defaults.queues);
    assert_ne!(params.link.lanes, defaults.link.lanes);
    assert_ne!(params.link.full_duplex, defaults.link.full_duplex);
    let text = format!("preset = \"stec-zeus\"\n{}", host_interface_toml(&params));
    let spec = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(spec.host_interface(), Some(&params));
    for protocol in Protocol::ALL {
        let params = HostInterfaceParams::defaults(protocol);
        let text = format!("preset = \"stec-zeus\"\n{}", host_interface_toml(&params));
        assert_eq!(parse(&text).unwrap().host_interface(), Some(&params));
    }
}

#[test]
fn errors_name_the_file_the_key_and_the_line() {
    let unknown =
        parse("preset = \"stec-zeus\"\n[host_interface]\nprotocol = \"nvme\"\nqueus = 2\n");
    match unknown {
        Err(ConfigError::Syntax { file, message }) => {
            assert_eq!(file, "dev.toml");
            assert!(message.contains("line 4"), "{message}");
            assert!(message.contains("queus"), "{message}");
        }
        other => panic!("expected a syntax error, got {other:?}"),
    }
    let cases = [
        ("queues = 0", "host_interface.queues"),
        ("queue_depth = 70000", "host_interface.queue_depth"),
        ("weight_high = 2", "host_interface.weight_high"),
        (
            "arbitration = \"weighted-round-robin\"\nweight_low = 257",
            "host_interface.weight_low",
        ),
        (
            "gigatransfers_per_s = -1.0",
            "host_interface.gigatransfers_per_s",
        ),
        (
            "command_processing_us = -1.0",
            "host_interface.command_processing_us",
        ),
        ("lanes = 64", "host_interface.lanes"),
    ];
    for (keys, key) in cases {
        let text =
            format!("preset = \"stec-zeus\"\n[host_interface]\nprotocol = \"nvme\"\n{keys}\n");
        assert_eq!(invalid_key(parse(&text)), key, "{keys}");
    }
    let sata = "preset = \"stec-zeus\"\n[host_interface]\nprotocol = \"sata\"\nqueue_depth = 33\n";
    assert_eq!(invalid_key(parse(sata)), "host_interface.queue_depth");
    let no_protocol = "preset = \"stec-zeus\"\n[host_interface]\nqueues = 2\n";
    assert_eq!(invalid_key(parse(no_protocol)), "host_interface.protocol");
    let none = "preset = \"stec-zeus\"\n[host_interface]\nprotocol = \"none\"\nlanes = 2\n";
    assert_eq!(invalid_key(parse(none)), "host_interface.lanes");
}

#[test]
fn presets_have_no_interface_but_their_nvme_variants_do() {
    for name in ["bench2g", "tlc-nvme"] {
        let plain = load_device(name).unwrap().spec;
        assert_eq!(plain.host_interface(), None, "{name}");
        let variant = load_device(&format!("{name}:nvme")).unwrap().spec;
        let interface = variant.host_interface().expect("the variant has one");
        assert_eq!(interface.protocol, Protocol::Nvme);
        // The model behind it is the preset's own.
        assert_eq!(
            variant.params::<SsdParams>(),
            plain.params::<SsdParams>(),
            "{name}"
        );
    }
    let bench = load_device("bench2g:nvme").unwrap().spec;
    let interface = bench.host_interface().unwrap();
    assert_eq!(interface.queue_fetch_size, 512);
    assert_eq!(
        interface.link.transfer_ns(4_000),
        1_000,
        "4 lanes of 1 GB/s"
    );
    assert!(load_device("bench2g:sata").is_err());
}

#[test]
fn a_file_over_a_variant_changes_its_interface_key_by_key_or_removes_it() {
    let over = parse("preset = \"tlc-nvme:nvme\"\n[host_interface]\nqueues = 2\n").unwrap();
    let base = load_device("tlc-nvme:nvme").unwrap().spec;
    let mut expected = base.host_interface().unwrap().clone();
    expected.queues = 2;
    assert_eq!(over.host_interface(), Some(&expected));
    let off = parse("preset = \"tlc-nvme:nvme\"\n[host_interface]\nprotocol = \"none\"\n").unwrap();
    assert_eq!(off.host_interface(), None);
    // Naming the other protocol starts from its defaults.
    let sata =
        parse("preset = \"tlc-nvme:nvme\"\n[host_interface]\nprotocol = \"sata\"\n").unwrap();
    assert_eq!(
        sata.host_interface(),
        Some(&HostInterfaceParams::defaults(Protocol::Sata))
    );
    // Overrides, as `--set` and the control socket give them.
    let set = load_device_with(
        "tlc-nvme",
        &[
            "host_interface.protocol=\"nvme\"".into(),
            "host_interface.fetch_per_round=4".into(),
        ],
    )
    .unwrap()
    .spec;
    assert_eq!(set.host_interface().unwrap().fetch_per_round, 4);
}

#[test]
fn the_built_device_reports_the_interface_counters_after_the_model_s() {
    let spec = load_device("stec-zeus").unwrap().spec;
    let plain = spec.build().unwrap().counters();
    let mut with = spec.clone();
    with.set_host_interface(Some(HostInterfaceParams::defaults(Protocol::Nvme)));
    assert_ne!(with, spec);
    let device = with.build().unwrap();
    assert_eq!(device.model_name(), "linear");
    let names: Vec<String> = device.counters().into_iter().map(|c| c.name).collect();
    assert_eq!(names.len(), plain.len() + 7);
    assert!(names[..plain.len()]
        .iter()
        .zip(&plain)
        .all(|(a, b)| *a == b.name));
    assert_eq!(names[plain.len()], "hostif_arbitration_rounds");
}
