//! SSD presets and device files: every preset builds, variants pick the FTL, every key of a file
//! reaches `SsdParams`, every bad value is reported with its key, and no file content panics.

use storsim_config::{load_device, parse_device_toml, presets, ConfigError, DeviceSpec};
use storsim_core::conformance::{self, Mix, ViolationKind};
use storsim_core::{Device, Prng, SimDuration};
use storsim_flash::{CellType, DieScheduling, MultiPlane, SuspendKinds, Suspension};
use storsim_ftl::gc::{GcPolicy, POLICIES};
use storsim_ftl::params::{Kind, Section, Value};
use storsim_ftl::{anand, dftl, fast, page, FtlConfig, FTLS};
use storsim_ssd::{Precondition, SsdParams, WriteBuffer};

/// A small device written from scratch, with only the keys a file without a preset must give:
/// 2 channels × 2 dies × 64 blocks × 32 pages of 4 KiB (32 MiB raw).
const SCRATCH: &str = r#"
model = "ssd"

[ssd]
ftl = "page"

[ssd.geometry]
channels = 2
chips_per_channel = 1
dies_per_chip = 2
planes_per_die = 1
blocks_per_plane = 64
pages_per_block = 32
page_bytes = 4096

[ssd.timing]
cell = "mlc"
read_us_by_level = [40, 60]
program_us_by_level = [300, 900]
erase_us = 3000
channel_mts = 400
"#;

fn ssd(spec: DeviceSpec) -> SsdParams {
    spec.into_params::<storsim_ssd::SsdParams>()
        .unwrap_or_else(|other| panic!("expected an ssd device, got {}", other.model_name()))
}

fn parse(text: &str) -> SsdParams {
    ssd(parse_device_toml(text, "f.toml").unwrap_or_else(|e| panic!("{text}\n{e}")))
}

fn us(x: f64) -> SimDuration {
    SimDuration::from_us_f64(x)
}

/// The key an invalid file is rejected for; the message must name it too.
fn invalid_key(text: &str) -> String {
    let err = match parse_device_toml(text, "f.toml") {
        Err(e) => e,
        Ok(_) => panic!("{text}\nexpected an error"),
    };
    let ConfigError::Invalid { key, .. } = &err else {
        panic!("{text}\nexpected an Invalid error, got {err:?}")
    };
    assert!(err.to_string().contains(key.as_str()), "{err}");
    key.clone()
}

fn page_params(p: &SsdParams) -> &page::Params {
    p.ftl
        .params::<page::Params>()
        .or_else(|| p.ftl.params::<dftl::Params>().map(|d| &d.page))
        .unwrap_or_else(|| panic!("expected a page-mapped FTL, got {}", p.ftl.name()))
}

#[test]
fn every_ssd_preset_loads_and_builds() {
    let names: Vec<&str> = presets()
        .iter()
        .filter(|p| p.model() == "ssd")
        .map(|p| p.name)
        .collect();
    assert_eq!(
        names,
        [
            "flashsim-2009",
            "bench2g",
            "sandisk-usb-anand",
            "tlc-nvme",
            "hybrid-2007-flash",
            "momentus-xt-flash"
        ]
    );
    // tlc-nvme is the heavy one: 37.7 M pages of 16 KiB, about 0.3 s and 300 MB to build in a
    // debug build (the page FTL's forward and reverse maps), light enough to build here.
    let raw_bytes = [
        8 << 30,
        2 << 30,
        1 << 30,
        8 * 4 * 2 * 4 * 256 * 576 * 16384,
        256 << 20,
        4 << 30,
    ];
    for (name, raw) in names.into_iter().zip(raw_bytes) {
        let loaded = load_device(name).unwrap();
        assert_eq!(loaded.spec.model_name(), "ssd");
        assert_eq!(ssd(loaded.spec.clone()).geometry.raw_bytes(), raw, "{name}");
        let device = loaded
            .spec
            .build()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(device.model_name(), "ssd");
        let capacity = device.capacity_bytes();
        assert!(
            capacity > 0 && capacity < raw,
            "{name}: {capacity} of {raw}"
        );
    }
}

#[test]
fn flashsim_2009_runs_dftl_and_variants_pick_the_ftl() {
    let default = ssd(load_device("flashsim-2009").unwrap().spec);
    assert_eq!(default.ftl.name(), "dftl");
    assert_eq!(default.geometry.page_bytes, 2048);
    assert_eq!(default.timing.read, [us(130.9); 4]);

    let fast = ssd(load_device("flashsim-2009:fast").unwrap().spec);
    assert_eq!(fast.ftl, FtlConfig::new(fast::Params::default()));
    // Only the FTL changes.
    assert_eq!(
        SsdParams {
            ftl: default.ftl.clone(),
            ..fast
        },
        default
    );

    // `storsim presets` lists the variants: every registered FTL.
    let summary = presets()
        .iter()
        .find(|p| p.name == "flashsim-2009")
        .unwrap()
        .summary;
    for name in FTLS.iter().map(|e| e.name) {
        assert!(
            summary.split([' ', ',', ':']).any(|word| word == name),
            "the flashsim-2009 summary does not list {name}: {summary}"
        );
        let spec = load_device(&format!("flashsim-2009:{name}")).unwrap().spec;
        assert_eq!(ssd(spec.clone()).ftl.name(), name);
        spec.build()
            .unwrap_or_else(|e| panic!("flashsim-2009:{name}: {e}"));
    }
    // Variants ignore case.
    let last = FTLS[FTLS.len() - 1].name;
    let upper = format!("flashsim-2009:{}", last.to_uppercase());
    assert_eq!(ssd(load_device(&upper).unwrap().spec).ftl.name(), last);

    let err = load_device("flashsim-2009:ssd9").unwrap_err();
    assert!(matches!(err, ConfigError::Invalid { ref key, .. } if key == "preset"));
    assert!(err.to_string().contains("page, page-static"), "{err}");
    let err = load_device("sandisk-usb-anand:fast").unwrap_err();
    assert!(err.to_string().contains("no variants"), "{err}");
    // bench2g's one variant is its host interface.
    let err = load_device("bench2g:fast").unwrap_err();
    assert!(err.to_string().contains("`nvme`"), "{err}");
    // A file can start from a variant.
    let p = parse("preset = \"flashsim-2009:anand\"\n[ssd.anand]\nmax_chain_length = 2\n");
    assert_eq!(
        p.ftl.params::<anand::Params>().map(|a| a.max_chain_length),
        Some(2)
    );
}

#[test]
fn bench2g_collects_below_five_percent_free_blocks_per_plane() {
    let p = ssd(load_device("bench2g").unwrap().spec);
    assert_eq!(p.geometry.blocks_per_plane, 128);
    let page = page_params(&p);
    // 5 % of 128 blocks is 6.4: "fewer than 6.4 free" is "fewer than 7 free" for whole blocks.
    assert_eq!(page.gc_low_watermark_blocks, 7);
    assert_eq!(page.gc_high_watermark_blocks, 8);
    assert_eq!(page.over_provisioning_fraction, 0.07);
    assert_eq!(
        p.write_buffer.map(|b| b.capacity_bytes),
        Some(256 << 20),
        "256 MiB DRAM cache"
    );
    // The page FTL's capacity: floor(524,288 × 0.93) pages.
    let device = load_device("bench2g").unwrap().spec.build().unwrap();
    assert_eq!(device.capacity_bytes(), 487_587 * 4096);
}

#[test]
fn background_gc_reaches_the_page_mapped_ftls() {
    let p = ssd(load_device("tlc-nvme").unwrap().spec);
    assert!(p.background_gc && page_params(&p).gc_background);
    assert_eq!(
        p.timing.read,
        [us(50.0), us(60.0), us(70.0), us(70.0)],
        "read times by page level (a TLC cell's three, the last repeated)"
    );

    let off = parse("preset = \"tlc-nvme\"\n[ssd]\nbackground_gc = false\n");
    assert!(!off.background_gc && !page_params(&off).gc_background);
    let on = parse("preset = \"flashsim-2009\"\n[ssd]\nbackground_gc = true\n");
    assert!(on.background_gc && page_params(&on).gc_background);
    // Switching FTL keeps the device's setting in the new FTL.
    let switched = parse("preset = \"tlc-nvme\"\n[ssd]\nftl = \"dftl\"\n");
    assert!(page_params(&switched).gc_background);
}

/// A device file over `flashsim-2009` that states a key of every part of an SSD.
const EVERY_PART: &str = r#"
preset = "flashsim-2009"
queue_depth = 8

[ssd]
endurance_erases = 5000
controller_overhead_us = 2.5
background_gc = true
idle_gc_delay_us = 500
seed = 9

[ssd.geometry]
channels = 2
blocks_per_plane = 512
oob_bytes = 128

[ssd.timing]
cell = "mlc"
read_us_by_level = [40, 70.5]
program_us_by_level = [300, 900]
erase_us = 2500
command_us = 0.1
channel_mts = 200
channel_width_bytes = 2

[ssd.write_buffer]
capacity_bytes = 1048576
latency_us = 1.5

[ssd.energy]
read_uj = 1
program_uj = 2.5
erase_uj = 3
idle_power_w = 0.5

[ssd.precondition]
mode = "sequential-fill"
fill_fraction = 0.25

[ssd.dftl]
cmt_entries = 1024

[ssd.dftl.page]
over_provisioning_fraction = 0.1
gc_policy = "d-choices"
gc_fraction_searched = 0.25
gc_low_watermark_blocks = 3
gc_high_watermark_blocks = 6
dynamic_wl = false
static_wl_threshold_erases = 0
static_wl_erases_per_move = 16
seed = 4
plane_allocation = "WDPC"
"#;

#[test]
fn a_file_overrides_every_part_of_a_preset() {
    let text = EVERY_PART;
    let p = parse(text);
    assert_eq!(p.queue_depth, 8);
    assert_eq!(p.endurance, 5000);
    assert_eq!(p.controller_overhead, us(2.5));
    assert!(p.background_gc);
    assert_eq!(p.idle_gc_delay, us(500.0));
    assert_eq!(p.seed, 9);
    let g = p.geometry;
    assert_eq!(
        (
            g.channels,
            g.chips_per_channel,
            g.blocks_per_plane,
            g.oob_bytes
        ),
        (2, 2, 512, 128),
        "stated keys change, the rest is the preset's"
    );
    let t = &p.timing;
    assert_eq!(t.cell, CellType::Mlc);
    assert_eq!(t.read_of(0), us(40.0));
    assert_eq!(t.read_of(1), us(70.5));
    assert_eq!(t.program_of(2), us(300.0));
    assert_eq!(t.program_of(3), us(900.0));
    assert_eq!(
        (t.erase, t.command, t.channel_mts, t.channel_width_bytes),
        (us(2500.0), us(0.1), 200, 2)
    );
    assert_eq!(
        p.write_buffer,
        Some(WriteBuffer {
            capacity_bytes: 1 << 20,
            latency: us(1.5)
        })
    );
    assert_eq!(
        (
            p.energy.read_uj,
            p.energy.program_uj,
            p.energy.erase_uj,
            p.energy.idle_power_w
        ),
        (1.0, 2.5, 3.0, 0.5)
    );
    assert_eq!(
        p.precondition,
        Precondition::SequentialFill { fraction: 0.25 }
    );
    let d = p
        .ftl
        .params::<dftl::Params>()
        .unwrap_or_else(|| panic!("expected dftl, got {}", p.ftl.name()));
    assert_eq!(d.cmt_entries, 1024);
    assert_eq!(
        d.page,
        page::Params {
            over_provisioning_fraction: 0.1,
            gc_policy: GcPolicy::DChoices {
                fraction_searched: 0.25
            },
            gc_low_watermark_blocks: 3,
            gc_background: true,
            gc_high_watermark_blocks: 6,
            dynamic_wl: false,
            static_wl_threshold_erases: None,
            static_wl_erases_per_move: 16,
            seed: 4,
            plane_allocation: page::PlaneAllocation::from_name("WDPC").unwrap(),
        }
    );

    let device = parse_device_toml(text, "f.toml").unwrap().build().unwrap();
    assert_eq!(device.queue_depth(), 8);
    let filled = device
        .counters()
        .into_iter()
        .find(|c| c.name == "precondition_host_writes")
        .unwrap()
        .value;
    assert_eq!(filled, (device.capacity_bytes() / 2048 / 4) as f64);
}

#[test]
fn keys_left_out_keep_what_is_there() {
    // A single time for every level, then a change of cell keeps the times.
    let p = parse("preset = \"tlc-nvme\"\n[ssd.timing]\nread_us = 55\n");
    assert_eq!(p.timing.read, [us(55.0); 4]);
    let p = parse("preset = \"flashsim-2009\"\n[ssd.timing]\ncell = \"tlc\"\n");
    assert_eq!(p.timing.program_of(2), us(405.9));

    // The buffer: removed with 0, resized keeping its latency.
    assert_eq!(
        parse("preset = \"tlc-nvme\"\n[ssd.write_buffer]\ncapacity_bytes = 0\n").write_buffer,
        None
    );
    let b = parse("preset = \"tlc-nvme\"\n[ssd.write_buffer]\ncapacity_bytes = 65536\n")
        .write_buffer
        .unwrap();
    assert_eq!((b.capacity_bytes, b.latency), (65536, us(2.0)));

    // Preconditioning: defaults per mode, and a parameter alone changes the current mode.
    let steady = "preset = \"bench2g\"\n[ssd.precondition]\nmode = \"steady-state\"\n";
    assert_eq!(
        parse(steady).precondition,
        Precondition::SteadyState {
            max_overwrite_factor: 4.0
        }
    );
    assert_eq!(
        parse("preset = \"bench2g\"\n[ssd.precondition]\nmode = \"sequential-fill\"\n")
            .precondition,
        Precondition::SequentialFill { fraction: 1.0 }
    );
    // The d-choices fraction alone, when the policy already is d-choices.
    let text = "preset = \"bench2g\"\n[ssd.page]\ngc_policy = \"d-choices\"\n\
                gc_fraction_searched = 0.5\n";
    let p = parse(text);
    assert_eq!(
        page_params(&p).gc_policy,
        GcPolicy::DChoices {
            fraction_searched: 0.5
        }
    );
    // Naming the FTL the preset already runs keeps its parameters; another FTL starts from
    // that FTL's defaults.
    let same = parse("preset = \"bench2g\"\n[ssd]\nftl = \"page\"\n[ssd.page]\nseed = 3\n");
    assert_eq!(page_params(&same).gc_low_watermark_blocks, 7);
    assert_eq!(page_params(&same).seed, 3);
    let other = parse("preset = \"bench2g\"\n[ssd]\nftl = \"dftl\"\n");
    assert_eq!(page_params(&other).gc_low_watermark_blocks, 2);
    for (policy, expected) in [
        ("greedy", GcPolicy::Greedy),
        ("random", GcPolicy::Random),
        ("fifo", GcPolicy::Fifo),
        ("cost-benefit", GcPolicy::CostBenefit),
    ] {
        let p = parse(&format!(
            "preset = \"flashsim-2009:page\"\n[ssd.page]\ngc_policy = \"{policy}\"\n"
        ));
        assert_eq!(page_params(&p).gc_policy, expected);
    }
    let p =
        parse("preset = \"flashsim-2009:page\"\n[ssd.page]\nstatic_wl_threshold_erases = 250\n");
    assert_eq!(page_params(&p).static_wl_threshold_erases, Some(250));
}

/// Every value of a section changed to another valid one of its kind: numbers grow a little
/// (fractions halve), flags flip, names move to the next name (the next victim policy, say).
fn changed(section: &Section, keys: storsim_ftl::Keys) -> Section {
    let mut out = Section::new();
    for (key, value) in section.iter() {
        let new = match value {
            Value::F64(x) => Value::F64(x / 2.0),
            Value::U32(n) => Value::U32(n + 1),
            Value::U64(n) => Value::U64(n + 1),
            Value::Bool(b) => Value::Bool(!b),
            Value::Name(name) => {
                let Some(Kind::Name(names)) = keys.find(key).map(|k| k.kind) else {
                    panic!("key {key} is not declared as a name");
                };
                let i = names.iter().position(|n| n == name).unwrap();
                Value::Name(names[(i + 1) % names.len()])
            }
            Value::Section(inner) => {
                let Some(Kind::Section(inner_keys)) = keys.find(key).map(|k| k.kind) else {
                    panic!("key {key} is not declared as a section");
                };
                Value::Section(changed(inner, inner_keys))
            }
        };
        out.insert(key, new);
    }
    out
}

/// Every registered FTL round-trips through a device file: its defaults written as a
/// `[ssd.NAME]` section read back equal, and so does every key changed at once, which shows that
/// each key reaches the parameters and comes back out.
#[test]
fn every_ftl_section_round_trips_through_a_device_file() {
    for entry in FTLS {
        let name = entry.name;
        let defaults = (entry.defaults)();
        assert_eq!(defaults.name(), name);
        let read_back = |ftl: &FtlConfig| {
            let section = storsim_config::ftl_section_toml(ftl).unwrap();
            let text = format!("preset = \"flashsim-2009\"\n[ssd]\nftl = \"{name}\"\n{section}");
            let p = parse(&text);
            parse_device_toml(&text, "f.toml")
                .unwrap()
                .build()
                .unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
            p.ftl
        };
        assert_eq!(read_back(&defaults), defaults, "{name}");

        let mut other = defaults.clone();
        other
            .apply(&changed(&defaults.section(), entry.keys))
            .unwrap();
        if !defaults.section().is_empty() {
            assert_ne!(other, defaults, "{name}: the changed keys change nothing");
        }
        assert_eq!(read_back(&other), other, "{name}");
    }
}

/// Every victim policy is a name `gc_policy` takes, and reads back as itself.
#[test]
fn every_gc_policy_reaches_the_page_params() {
    assert_eq!(
        POLICIES.iter().map(|e| e.name).collect::<Vec<_>>(),
        GcPolicy::NAMES
    );
    for entry in POLICIES {
        let keys: String = entry
            .keys
            .iter()
            .map(|k| format!("{} = 0.5\n", k.name))
            .collect();
        let p = parse(&format!(
            "preset = \"flashsim-2009:page\"\n[ssd.page]\ngc_policy = \"{}\"\n{keys}",
            entry.name
        ));
        assert_eq!(page_params(&p).gc_policy.name(), entry.name);
    }
}

#[test]
fn a_file_describes_an_ssd_from_scratch() {
    let p = parse(SCRATCH);
    assert_eq!(p.ftl, FtlConfig::new(page::Params::default()));
    assert_eq!(p.geometry.pages(), 8192);
    assert_eq!(p.geometry.oob_bytes, 0);
    assert_eq!(p.timing.read_of(1), us(60.0));
    assert_eq!(p.timing.command, SimDuration::ZERO);
    assert_eq!(p.timing.channel_width_bytes, 1);
    assert_eq!(p.endurance, CellType::Mlc.default_endurance());
    assert_eq!(p.queue_depth, 32);
    assert_eq!(p.write_buffer, None);
    assert_eq!(p.precondition, Precondition::Clean);
    assert!(!p.background_gc);
    let device = parse_device_toml(SCRATCH, "f.toml")
        .unwrap()
        .build()
        .unwrap();
    // floor(8192 × 0.93) pages of 4 KiB.
    assert_eq!(device.capacity_bytes(), 7618 * 4096);
}

#[test]
fn a_file_without_a_preset_names_the_first_missing_key() {
    let without = |line: &str| {
        assert!(SCRATCH.contains(line), "{line}");
        SCRATCH.replacen(line, "", 1)
    };
    let cases = [
        (without("ftl = \"page\"\n"), "ssd.ftl"),
        (without("page_bytes = 4096\n"), "ssd.geometry.page_bytes"),
        (without("channels = 2\n"), "ssd.geometry.channels"),
        (without("cell = \"mlc\"\n"), "ssd.timing.cell"),
        (
            without("read_us_by_level = [40, 60]\n"),
            "ssd.timing.read_us",
        ),
        (
            without("program_us_by_level = [300, 900]\n"),
            "ssd.timing.program_us",
        ),
        (without("erase_us = 3000\n"), "ssd.timing.erase_us"),
        (without("channel_mts = 400\n"), "ssd.timing.channel_mts"),
        (
            SCRATCH[..SCRATCH.find("[ssd.geometry]").unwrap()].to_string(),
            "ssd.geometry",
        ),
        (
            SCRATCH[..SCRATCH.find("[ssd.timing]").unwrap()].to_string(),
            "ssd.timing",
        ),
        ("model = \"ssd\"\n".to_string(), "ssd"),
    ];
    for (text, key) in cases {
        assert_eq!(invalid_key(&text), key, "{text}");
    }
}

/// Device-file bodies (laid over `flashsim-2009`) with one bad value, and the key each
/// error must name.
const BAD_VALUES: &[(&str, &str)] = &[
    (
        "[ssd.geometry]\npages_per_block = 0",
        "ssd.geometry.pages_per_block",
    ),
    ("[ssd.geometry]\nchannels = 0", "ssd.geometry.channels"),
    (
        "[ssd.geometry]\ndies_per_chip = 0",
        "ssd.geometry.dies_per_chip",
    ),
    (
        "[ssd.geometry]\nblocks_per_plane = 4294967295",
        "ssd.geometry",
    ),
    // The product of these overflows even a u64.
    (
        "[ssd.geometry]\nchannels = 4294967295\nchips_per_channel = 4294967295\n\
         dies_per_chip = 4294967295",
        "ssd.geometry",
    ),
    (
        "[ssd.geometry]\npage_bytes = 2000000",
        "ssd.geometry.page_bytes",
    ),
    ("[ssd.geometry]\noob_bytes = 4096", "ssd.geometry.oob_bytes"),
    (
        "[ssd.geometry]\npage_bytes = 2\noob_bytes = 0",
        "ssd.geometry.page_bytes",
    ),
    (
        "[ssd.timing]\nread_us_by_level = [1, 2]",
        "ssd.timing.read_us_by_level",
    ),
    (
        "[ssd.timing]\ncell = \"tlc\"\nprogram_us_by_level = [1, 2]",
        "ssd.timing.program_us_by_level",
    ),
    (
        "[ssd.timing]\nread_us = 1\nread_us_by_level = [1]",
        "ssd.timing.read_us_by_level",
    ),
    (
        "[ssd.timing]\ncell = \"mlc\"\nprogram_us_by_level = [100, nan]",
        "ssd.timing.program_us_by_level[1]",
    ),
    ("[ssd.timing]\nerase_us = 4e9", "ssd.timing.erase_us"),
    ("[ssd.timing]\nread_us = -1", "ssd.timing.read_us"),
    ("[ssd.timing]\nprogram_us = inf", "ssd.timing.program_us"),
    ("[ssd.timing]\ncommand_us = 3.7e9", "ssd.timing.command_us"),
    ("[ssd.timing]\nchannel_mts = 0", "ssd.timing.channel_mts"),
    (
        "[ssd.timing]\nchannel_width_bytes = 0",
        "ssd.timing.channel_width_bytes",
    ),
    ("[ssd]\nendurance_erases = 0", "ssd.endurance_erases"),
    (
        "[ssd]\ncontroller_overhead_us = 3.7e9",
        "ssd.controller_overhead_us",
    ),
    ("[ssd]\nidle_gc_delay_us = -5", "ssd.idle_gc_delay_us"),
    ("queue_depth = 0", "queue_depth"),
    ("queue_depth = 100000", "queue_depth"),
    ("capacity_bytes = 1000000", "capacity_bytes"),
    (
        "[ssd.write_buffer]\ncapacity_bytes = 100\nlatency_us = 1",
        "ssd.write_buffer.capacity_bytes",
    ),
    (
        "[ssd.write_buffer]\ncapacity_bytes = 1099511627776\nlatency_us = 1",
        "ssd.write_buffer.capacity_bytes",
    ),
    (
        "[ssd.write_buffer]\ncapacity_bytes = 1048576",
        "ssd.write_buffer.latency_us",
    ),
    (
        "[ssd.write_buffer]\nlatency_us = 1",
        "ssd.write_buffer.capacity_bytes",
    ),
    (
        "[ssd.write_buffer]\ncapacity_bytes = 0\nlatency_us = 1",
        "ssd.write_buffer.latency_us",
    ),
    (
        "[ssd.write_buffer]\ncapacity_bytes = 4096\nlatency_us = -1",
        "ssd.write_buffer.latency_us",
    ),
    ("[ssd.energy]\nerase_uj = -1", "ssd.energy.erase_uj"),
    (
        "[ssd.energy]\nidle_power_w = nan",
        "ssd.energy.idle_power_w",
    ),
    (
        "[ssd.precondition]\nmode = \"sequential-fill\"\nfill_fraction = 1.5",
        "ssd.precondition.fill_fraction",
    ),
    (
        "[ssd.precondition]\nfill_fraction = 0.5",
        "ssd.precondition.fill_fraction",
    ),
    (
        "[ssd.precondition]\nmode = \"steady-state\"\nmax_overwrite_factor = 1000",
        "ssd.precondition.max_overwrite_factor",
    ),
    (
        "[ssd.precondition]\nmode = \"steady-state\"\nmax_overwrite_factor = -1",
        "ssd.precondition.max_overwrite_factor",
    ),
    (
        "[ssd.precondition]\nmode = \"clean\"\nmax_overwrite_factor = 2",
        "ssd.precondition.max_overwrite_factor",
    ),
    ("[ssd.dftl]\ncmt_entries = 0", "ssd.dftl.cmt_entries"),
    ("[ssd.dftl]\ncmt_bytes = 7", "ssd.dftl.cmt_bytes"),
    (
        "[ssd.dftl]\ncmt_bytes = 8192\ncmt_entries = 16",
        "ssd.dftl.cmt_bytes",
    ),
    (
        "[ssd.dftl.page]\nover_provisioning_fraction = 1.0",
        "ssd.dftl.page.over_provisioning_fraction",
    ),
    (
        "[ssd.dftl.page]\ngc_low_watermark_blocks = 1",
        "ssd.dftl.page.gc_low_watermark_blocks",
    ),
    (
        "[ssd]\nftl = \"page\"\n[ssd.page]\nover_provisioning_fraction = -0.1",
        "ssd.page.over_provisioning_fraction",
    ),
    (
        "[ssd]\nftl = \"page\"\n[ssd.page]\nover_provisioning_fraction = nan",
        "ssd.page.over_provisioning_fraction",
    ),
    (
        "[ssd]\nftl = \"page\"\n[ssd.page]\ngc_low_watermark_blocks = 1",
        "ssd.page.gc_low_watermark_blocks",
    ),
    (
        "[ssd]\nftl = \"page\"\n[ssd.page]\ngc_low_watermark_blocks = 10\n\
         gc_high_watermark_blocks = 9",
        "ssd.page.gc_high_watermark_blocks",
    ),
    (
        "[ssd]\nftl = \"page\"\n[ssd.page]\ngc_low_watermark_blocks = 5000\n\
         gc_high_watermark_blocks = 5000",
        "ssd.page.gc_low_watermark_blocks",
    ),
    (
        "[ssd]\nftl = \"page\"\n[ssd.page]\nstatic_wl_erases_per_move = 0",
        "ssd.page.static_wl_erases_per_move",
    ),
    (
        "[ssd]\nftl = \"page\"\n[ssd.page]\ngc_policy = \"d-choices\"",
        "ssd.page.gc_fraction_searched",
    ),
    (
        "[ssd]\nftl = \"page\"\n[ssd.page]\ngc_policy = \"d-choices\"\n\
         gc_fraction_searched = 1.5",
        "ssd.page.gc_fraction_searched",
    ),
    (
        "[ssd]\nftl = \"page\"\n[ssd.page]\ngc_policy = \"greedy\"\n\
         gc_fraction_searched = 0.5",
        "ssd.page.gc_fraction_searched",
    ),
    (
        "[ssd]\nftl = \"page\"\n[ssd.page]\ngc_fraction_searched = 0.5",
        "ssd.page.gc_fraction_searched",
    ),
    // Each FTL's own checks are tested with the FTL (crates/ftl/tests/NAME.rs); these show
    // how its keys are named: in its section, nested sections included.
    // Sections of another FTL or model.
    ("[ssd.fast]\nlog_fraction = 0.1", "ssd.fast"),
    ("[ssd.page]\nseed = 1", "ssd.page"),
    (
        "[ssd]\nftl = \"fast\"\n[ssd.dftl]\ncmt_entries = 5",
        "ssd.dftl",
    ),
    ("[ssd]\nftl = \"page\"\n[ssd.raw]", "ssd.raw"),
    ("[linear]\nservers = 1", "linear"),
    ("model = \"linear\"", "model"),
];

#[test]
fn bad_values_name_their_key() {
    for (body, key) in BAD_VALUES {
        let text = format!("preset = \"flashsim-2009\"\n{body}\n");
        assert_eq!(invalid_key(&text), *key, "{text}");
    }
    // Capacity without a preset too, and a bad variant as a file's preset.
    assert_eq!(
        invalid_key(&format!("capacity_bytes = 4096\n{SCRATCH}")),
        "capacity_bytes"
    );
    assert_eq!(invalid_key("preset = \"flashsim-2009:nope\"\n"), "preset");
}

#[test]
fn messages_say_what_to_do() {
    let msg = |text: &str| parse_device_toml(text, "dev.toml").unwrap_err().to_string();
    let m = msg("preset = \"bench2g\"\ncapacity_bytes = 1000000\n");
    assert!(
        m.contains("geometry") && m.contains("over-provisioning"),
        "{m}"
    );
    let m = msg("preset = \"flashsim-2009\"\n[ssd.fast]\nlog_fraction = 0.1\n");
    assert!(
        m.contains("[ssd.fast]") && m.contains("`dftl`") && m.contains("ftl = \"fast\""),
        "{m}"
    );
    let m = msg("preset = \"flashsim-2009\"\n[ssd.timing]\nread_us_by_level = [1, 2]\n");
    assert!(m.contains("cell = \"slc\" has 1 page level"), "{m}");
    let m = msg("preset = \"flashsim-2009\"\n[ssd.page]\nseed = 2\n");
    assert!(m.contains("[ssd.dftl.page]"), "{m}");
}

#[test]
fn unknown_keys_and_bad_names_are_syntax_errors_with_the_line() {
    for (text, needle, line) in [
        (
            "preset = \"bench2g\"\n[ssd.geometry]\nchanels = 4\n",
            "chanels",
            3,
        ),
        (
            "preset = \"bench2g\"\n[ssd]\nftl = \"page\"\ngc = 1\n",
            "gc",
            4,
        ),
        (
            "preset = \"flashsim-2009\"\n\n[ssd.dftl.page]\ngc_background = true\n",
            "gc_background",
            4,
        ),
        ("preset = \"bench2g\"\n[ssd.raw]\nx = 1\n", "x", 3),
        (
            "preset = \"bench2g\"\n[ssd.page_static]\n",
            "page_static",
            2,
        ),
        ("preset = \"bench2g\"\n[ssd]\nftl = \"ftl9\"\n", "ftl9", 3),
        (
            "preset = \"bench2g\"\n[ssd.timing]\ncell = \"plc\"\n",
            "plc",
            3,
        ),
        (
            "preset = \"bench2g\"\n[ssd.page]\ngc_policy = \"lru\"\n",
            "lru",
            3,
        ),
        (
            "preset = \"bench2g\"\n[ssd.geometry]\nchannels = -1\n",
            "channels",
            3,
        ),
        (
            "preset = \"bench2g\"\n[ssd.precondition]\nmode = \"dirty\"\n",
            "dirty",
            3,
        ),
    ] {
        let err = parse_device_toml(text, "bad.toml").unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, ConfigError::Syntax { .. }), "{text}: {err:?}");
        assert!(msg.starts_with("bad.toml"), "{msg}");
        assert!(msg.contains(needle), "{text}: {msg}");
        assert!(msg.contains(&format!("line {line}")), "{text}: {msg}");
    }
}

#[test]
fn build_failures_name_the_ftl_and_its_reason() {
    let build_err = |text: String| match parse_device_toml(&text, "f.toml").unwrap().build() {
        Err(e) => e,
        Ok(_) => panic!("{text}: expected the build to fail"),
    };
    // The FTL finds no spare space for garbage collection.
    let e = build_err(format!(
        "{SCRATCH}[ssd.page]\nover_provisioning_fraction = 0.0\n"
    ));
    assert!(e.contains("`page` FTL") && e.contains("spare space"), "{e}");
    // Preconditioning wears the device out.
    let e = build_err(SCRATCH.replace(
        "ftl = \"page\"\n",
        "ftl = \"page\"\nendurance_erases = 1\n[ssd.precondition]\nmode = \"steady-state\"\n",
    ));
    assert!(e.contains("steady-state") && e.contains("wore out"), "{e}");
    // Raw flash cannot be overwritten, which steady-state preconditioning does.
    let e = build_err(
        SCRATCH.replace("ftl = \"page\"", "ftl = \"raw\"")
            + "[ssd.precondition]\nmode = \"steady-state\"\n",
    );
    assert!(e.contains("`raw` FTL") && e.contains("not erased"), "{e}");
}

#[test]
fn the_documented_examples_parse_and_build() {
    let docs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs");
    let mut pages = vec![docs.join("config.md"), docs.join("models/ssd.md")];
    for entry in std::fs::read_dir(docs.join("models")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("ftl-") && name.ends_with(".md") {
            pages.push(path);
        }
    }
    let mut ssd_examples = 0;
    for path in pages {
        let text = std::fs::read_to_string(&path).unwrap();
        let page = path.display().to_string();
        for block in text.split("```toml\n").skip(1) {
            let block = block.split("```").next().unwrap();
            let spec = parse_device_toml(block, &page)
                .unwrap_or_else(|e| panic!("{page}: example does not parse: {e}\n{block}"));
            let Some(p) = spec.params::<SsdParams>() else {
                continue;
            };
            ssd_examples += 1;
            // Steady-state preconditioning of a multi-GiB device is too slow for a test.
            if !matches!(p.precondition, Precondition::SteadyState { .. }) {
                spec.build()
                    .unwrap_or_else(|e| panic!("{page}: example does not build: {e}\n{block}"));
            }
        }
    }
    assert!(ssd_examples >= 13, "only {ssd_examples} SSD examples found");
}

/// A valid file with every section and key, to mutate.
const FULL: &str = r#"
model = "ssd"
queue_depth = 4
[ssd]
ftl = "dftl"
endurance_erases = 50
controller_overhead_us = 1
background_gc = true
idle_gc_delay_us = 100
seed = 3
[ssd.geometry]
channels = 2
chips_per_channel = 1
dies_per_chip = 1
planes_per_die = 2
blocks_per_plane = 32
pages_per_block = 16
page_bytes = 2048
oob_bytes = 64
[ssd.timing]
cell = "tlc"
read_us_by_level = [40, 50, 60]
program_us = 500
erase_us = 2000
command_us = 0.2
channel_mts = 100
channel_width_bytes = 1
[ssd.write_buffer]
capacity_bytes = 65536
latency_us = 1
[ssd.energy]
read_uj = 4.72
program_uj = 38.04
erase_uj = 527.68
idle_power_w = 0.1
[ssd.precondition]
mode = "steady-state"
max_overwrite_factor = 1.5
[ssd.dftl]
cmt_entries = 64
[ssd.dftl.page]
over_provisioning_fraction = 0.2
gc_policy = "d-choices"
gc_fraction_searched = 0.5
gc_low_watermark_blocks = 2
gc_high_watermark_blocks = 4
dynamic_wl = true
static_wl_threshold_erases = 10
static_wl_erases_per_move = 4
seed = 5
"#;

/// Replacement values by the kind of value they replace, so that most mutations get past the
/// TOML parser and reach validation: zeros, integer limits, odd floats, every enum name.
const INTEGERS: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "7",
    "255",
    "256",
    "65536",
    "4294967295",
    "4294967296",
    "-1",
    "9223372036854775807",
];
const FLOATS: &[&str] = &[
    "0", "0.0", "0.5", "0.999", "1.0", "1.5", "100", "101", "-0.5", "3.6e9", "3.7e9", "1e300",
    "-1e300", "nan", "inf", "-inf", "5e-324",
];
/// Names for string values; every FTL and victim policy name is added from the registries.
const STRINGS: &[&str] = &[
    "\"slc\"",
    "\"mlc\"",
    "\"tlc\"",
    "\"clean\"",
    "\"sequential-fill\"",
    "\"steady-state\"",
    "\"ssd\"",
    "\"linear\"",
    "\"\"",
];
const ARRAYS: &[&str] = &[
    "[]",
    "[1]",
    "[1, 2]",
    "[1e9, 2, 3]",
    "[0, 0, 0]",
    "[1, 2, 3, 4]",
];
const ANY: &[&str] = &["true", "false", "{}", "[]", "0", "\"x\"", "1.5"];

fn mutate(text: &str, rng: &mut Prng) -> String {
    let names: Vec<String> = FTLS
        .iter()
        .map(|e| e.name)
        .chain(GcPolicy::NAMES)
        .map(|n| format!("\"{n}\""))
        .collect();
    let strings: Vec<&str> = STRINGS
        .iter()
        .copied()
        .chain(names.iter().map(String::as_str))
        .collect();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let pick = |rng: &mut Prng, n: usize| rng.below(n as u64) as usize;
    for _ in 0..1 + pick(rng, 2) {
        let i = pick(rng, lines.len());
        match pick(rng, 10) {
            // Replace a value with one of its kind (the most productive: it reaches validation).
            0..=5 => {
                if let Some(eq) = lines[i].find(" = ") {
                    let old = &lines[i][eq + 3..];
                    let pool = if pick(rng, 8) == 0 {
                        ANY
                    } else if old.starts_with('"') {
                        &strings
                    } else if old.starts_with('[') {
                        ARRAYS
                    } else if old == "true" || old == "false" {
                        ANY
                    } else if old.contains('.') {
                        FLOATS
                    } else {
                        INTEGERS
                    };
                    lines[i] = format!("{} = {}", &lines[i][..eq], pool[pick(rng, pool.len())]);
                }
            }
            6 => {
                lines.remove(i);
            }
            7 => {
                let line = lines[i].clone();
                let j = pick(rng, lines.len());
                lines.insert(j, line);
            }
            8 => {
                let j = pick(rng, lines.len());
                lines.swap(i, j);
            }
            _ => {
                let mut chars: Vec<char> = lines[i].chars().collect();
                if !chars.is_empty() {
                    let at = pick(rng, chars.len());
                    chars[at] =
                        ['=', '[', ']', '"', '.', ' ', '0', '9', '-', '#', 'x'][pick(rng, 11)];
                }
                lines[i] = chars.into_iter().collect();
            }
        }
        if lines.is_empty() {
            break;
        }
    }
    lines.join("\n")
}

#[test]
fn random_mutations_of_a_valid_file_never_panic() {
    parse_device_toml(FULL, "full.toml")
        .unwrap()
        .build()
        .unwrap();
    let preset_based = FULL.replace("model = \"ssd\"", "preset = \"bench2g\"");
    let mut rng = Prng::new(2024);
    let (mut ok, mut built) = (0, 0);
    for i in 0..800 {
        let base = if i % 2 == 0 { FULL } else { &preset_based };
        let text = mutate(base, &mut rng);
        let Ok(spec) = parse_device_toml(&text, "m.toml") else {
            continue;
        };
        ok += 1;
        // Building and running must not panic either. Mutations can ask for devices of
        // billions of pages, which are valid but too large to build in a test; small ones are
        // built and given a few requests.
        let p = ssd(spec.clone());
        let long_precondition = match p.precondition {
            Precondition::SteadyState {
                max_overwrite_factor,
            } => max_overwrite_factor > 4.0,
            _ => false,
        };
        let small = p.geometry.pages() <= 1 << 16
            && p.write_buffer.map_or(0, |b| b.capacity_bytes) <= 1 << 24
            && !long_precondition;
        if small {
            if let Ok(mut device) = spec.build() {
                drive(device.as_mut(), &mut rng);
            }
            built += 1;
        }
    }
    assert!(
        ok > 50 && built > 50,
        "too few valid mutations: {ok} parsed, {built} built"
    );
}

/// The conformance kit's random mix of reads, writes, trims and flushes, driven through the
/// kit's checked driver. A mutated device may refuse a request as invalid (a raw-flash FTL, a
/// full write buffer); any other broken promise of the contract fails the test.
fn drive(device: &mut dyn Device, rng: &mut Prng) {
    let mix = Mix {
        count: 100,
        capacity_bytes: device.capacity_bytes(),
        queue_depth: device.queue_depth(),
        max_request_bytes: 16 * 512,
    };
    let requests = conformance::mixed_requests(rng.next_u64(), &mix);
    match conformance::drive(device, &requests) {
        Ok(_) => {}
        Err(v) if v.kind == ViolationKind::WrongRefusal => {}
        Err(v) => panic!("{v}"),
    }
    device.counters();
}

#[test]
fn dftl_cache_can_be_sized_in_bytes() {
    let p = parse("preset = \"flashsim-2009\"\n[ssd.dftl]\ncmt_bytes = 65536\n");
    assert_eq!(
        p.ftl.params::<dftl::Params>().map(|d| d.cmt_entries),
        Some(8192)
    );
}

#[test]
fn a_new_cell_type_brings_its_endurance_unless_one_is_given() {
    let slc = parse("preset = \"flashsim-2009\"\n");
    assert_eq!(slc.endurance, CellType::Slc.default_endurance());
    let tlc = parse("preset = \"flashsim-2009\"\n[ssd.timing]\ncell = \"tlc\"\n");
    assert_eq!(tlc.timing.cell, CellType::Tlc);
    assert_eq!(tlc.endurance, CellType::Tlc.default_endurance());
    let stated = parse(
        "preset = \"flashsim-2009\"\n[ssd]\nendurance_erases = 777\n[ssd.timing]\ncell = \"tlc\"\n",
    );
    assert_eq!(stated.endurance, 777);
    let same = parse(
        "preset = \"flashsim-2009\"\n[ssd]\nendurance_erases = 777\n[ssd.timing]\ncell = \"slc\"\n",
    );
    assert_eq!(same.endurance, 777);
}

#[test]
fn write_buffer_flush_policy_keys_reach_the_params() {
    use storsim_ssd::{DestageOrder, FlushPolicy, WriteBack};
    // Presets keep the eager policy, so their results do not change.
    for name in ["bench2g", "tlc-nvme", "flashsim-2009"] {
        let p = parse(&format!("preset = \"{name}\"\n"));
        assert_eq!(p.write_buffer_policy, FlushPolicy::Eager, "{name}");
    }
    // `watermark` alone takes the documented defaults.
    let p = parse("preset = \"bench2g\"\n[ssd.write_buffer]\nflush_policy = \"watermark\"\n");
    assert_eq!(
        p.write_buffer_policy,
        FlushPolicy::Watermark(WriteBack {
            high_watermark_fraction: 0.9,
            low_watermark_fraction: 0.8,
            order: DestageOrder::Fifo,
            destage_when_idle: true,
        })
    );
    // The buffer itself is unchanged.
    assert_eq!(p.write_buffer.map(|b| b.capacity_bytes), Some(256 << 20));
    let text = "preset = \"bench2g\"\n[ssd.write_buffer]\nflush_policy = \"watermark\"\n\
                high_watermark_fraction = 0.5\nlow_watermark_fraction = 0.0\n\
                destage_order = \"lru\"\ndestage_when_idle = false\n";
    let w = WriteBack {
        high_watermark_fraction: 0.5,
        low_watermark_fraction: 0.0,
        order: DestageOrder::Lru,
        destage_when_idle: false,
    };
    assert_eq!(parse(text).write_buffer_policy, FlushPolicy::Watermark(w));
    // From scratch, with a new buffer.
    let p = parse(&format!(
        "{SCRATCH}\n[ssd.write_buffer]\ncapacity_bytes = 65536\nlatency_us = 1\n\
         flush_policy = \"watermark\"\nhigh_watermark_fraction = 1\n"
    ));
    match p.write_buffer_policy {
        FlushPolicy::Watermark(w) => assert_eq!(w.high_watermark_fraction, 1.0),
        other => panic!("expected watermark, got {other:?}"),
    }
    // Explicitly eager; and removing the buffer resets the policy.
    let p = parse("preset = \"tlc-nvme\"\n[ssd.write_buffer]\nflush_policy = \"eager\"\n");
    assert_eq!(p.write_buffer_policy, FlushPolicy::Eager);
    let p = parse("preset = \"tlc-nvme\"\n[ssd.write_buffer]\ncapacity_bytes = 0\n");
    assert_eq!(
        (p.write_buffer, p.write_buffer_policy),
        (None, FlushPolicy::Eager)
    );
    // The built device reports the write-back counters.
    let spec = parse_device_toml(text, "f.toml").unwrap();
    let device = spec.build().unwrap();
    let names: Vec<String> = device.counters().into_iter().map(|c| c.name).collect();
    for name in [
        "buffer_read_hit_pages",
        "buffer_write_hit_pages",
        "buffer_destaged_pages",
        "buffer_flush_destaged_pages",
        "buffer_idle_destaged_pages",
    ] {
        assert!(names.iter().any(|n| n == name), "{name}");
    }
}

#[test]
fn bad_write_buffer_policy_values_name_their_key() {
    let cases = [
        (
            "[ssd.write_buffer]\nflush_policy = \"watermark\"\nhigh_watermark_fraction = 1.5",
            "ssd.write_buffer.high_watermark_fraction",
        ),
        (
            "[ssd.write_buffer]\nflush_policy = \"watermark\"\nhigh_watermark_fraction = 0",
            "ssd.write_buffer.high_watermark_fraction",
        ),
        (
            "[ssd.write_buffer]\nflush_policy = \"watermark\"\nhigh_watermark_fraction = nan",
            "ssd.write_buffer.high_watermark_fraction",
        ),
        (
            "[ssd.write_buffer]\nflush_policy = \"watermark\"\nlow_watermark_fraction = -0.1",
            "ssd.write_buffer.low_watermark_fraction",
        ),
        // low must be below high: equal is refused, and so is the default high (0.9) under 0.95.
        (
            "[ssd.write_buffer]\nflush_policy = \"watermark\"\nhigh_watermark_fraction = 0.5\n\
             low_watermark_fraction = 0.5",
            "ssd.write_buffer.low_watermark_fraction",
        ),
        (
            "[ssd.write_buffer]\nflush_policy = \"watermark\"\nlow_watermark_fraction = 0.95",
            "ssd.write_buffer.low_watermark_fraction",
        ),
        // The watermark keys belong to the watermark policy.
        (
            "[ssd.write_buffer]\nhigh_watermark_fraction = 0.5",
            "ssd.write_buffer.high_watermark_fraction",
        ),
        (
            "[ssd.write_buffer]\nflush_policy = \"eager\"\ndestage_when_idle = true",
            "ssd.write_buffer.destage_when_idle",
        ),
        (
            "[ssd.write_buffer]\nflush_policy = \"eager\"\ndestage_order = \"lru\"",
            "ssd.write_buffer.destage_order",
        ),
        // Removing the buffer leaves no policy to set.
        (
            "[ssd.write_buffer]\ncapacity_bytes = 0\nflush_policy = \"watermark\"",
            "ssd.write_buffer.flush_policy",
        ),
    ];
    for (body, key) in cases {
        let text = format!("preset = \"bench2g\"\n{body}\n");
        assert_eq!(invalid_key(&text), key, "{text}");
    }
    // A watermark policy kept from the file's own earlier keys still checks the relation.
    let text = "preset = \"bench2g\"\n[ssd.write_buffer]\nflush_policy = \"watermark\"\n\
                high_watermark_fraction = 0.3\n";
    assert_eq!(
        invalid_key(text),
        "ssd.write_buffer.low_watermark_fraction",
        "the default low (0.8) is above 0.3"
    );
    // Unknown keys and bad names are syntax errors with the line.
    for (text, needle, line) in [
        (
            "preset = \"bench2g\"\n[ssd.write_buffer]\nflush = \"watermark\"\n",
            "flush",
            3,
        ),
        (
            "preset = \"bench2g\"\n[ssd.write_buffer]\nflush_policy = \"lazy\"\n",
            "lazy",
            3,
        ),
        (
            "preset = \"bench2g\"\n[ssd.write_buffer]\nflush_policy = \"watermark\"\n\
             destage_order = \"random\"\n",
            "random",
            4,
        ),
    ] {
        let err = parse_device_toml(text, "bad.toml").unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, ConfigError::Syntax { .. }), "{text}: {err:?}");
        assert!(msg.contains(needle), "{text}: {msg}");
        assert!(msg.contains(&format!("line {line}")), "{text}: {msg}");
    }
}

#[test]
fn copy_back_is_a_device_key() {
    assert!(parse("preset = \"flashsim-2009\"\n").copyback);
    assert!(!parse("preset = \"bench2g\"\n").copyback);
    assert!(parse("preset = \"bench2g\"\n[ssd]\ncopyback = true\n").copyback);
    assert!(!parse("preset = \"flashsim-2009\"\n[ssd]\ncopyback = false\n").copyback);
}

#[test]
fn multi_plane_is_a_device_key() {
    assert_eq!(parse("preset = \"bench2g\"\n").multi_plane, MultiPlane::Off);
    for (value, rule) in [
        ("off", MultiPlane::Off),
        ("same-page", MultiPlane::SamePage),
        ("any-page", MultiPlane::AnyPage),
    ] {
        let text = format!("preset = \"bench2g\"\n[ssd]\nmulti_plane = \"{value}\"\n");
        assert_eq!(parse(&text).multi_plane, rule, "{value}");
    }
    let text = "preset = \"bench2g\"\n[ssd]\nmulti_plane = \"yes\"\n";
    let msg = parse_device_toml(text, "bad.toml").unwrap_err().to_string();
    assert!(msg.contains("bad.toml") && msg.contains("line 3"), "{msg}");
    assert!(msg.contains("same-page"), "{msg}");
}

#[test]
fn die_scheduling_keys_reach_the_params() {
    // Every preset stays first come, first served unless a file says otherwise.
    let plain = parse("preset = \"bench2g\"\n");
    assert_eq!(plain.die_scheduling, DieScheduling::Fifo);
    assert!(!plain.gc_reads_priority);
    let p = parse(
        "preset = \"bench2g\"\n[ssd]\ndie_scheduling = \"read-priority\"\ngc_reads_priority = true\n",
    );
    assert_eq!(p.die_scheduling, DieScheduling::ReadPriority);
    assert!(p.gc_reads_priority);
    // `suspend` alone takes the documented defaults ...
    let p = parse("preset = \"bench2g\"\n[ssd]\ndie_scheduling = \"suspend\"\n");
    assert_eq!(
        p.die_scheduling,
        DieScheduling::Suspend(Suspension::default())
    );
    // ... and every key of [ssd.suspend] reaches its parameter.
    let text = "preset = \"bench2g\"\n[ssd]\ndie_scheduling = \"suspend\"\n[ssd.suspend]\n\
                support = \"erase\"\nprogram_us = 3\nerase_us = 20.5\nresume_us = 7\n\
                max_suspensions = 2\nmin_run_us = 250\n";
    let expected = Suspension {
        kinds: SuspendKinds::Erase,
        program_latency: us(3.0),
        erase_latency: us(20.5),
        resume_overhead: us(7.0),
        max_suspensions: 2,
        min_run: us(250.0),
    };
    assert_eq!(parse(text).die_scheduling, DieScheduling::Suspend(expected));
    for (support, kinds) in [
        ("none", SuspendKinds::None),
        ("program", SuspendKinds::Program),
        ("program-erase", SuspendKinds::ProgramErase),
    ] {
        let text = format!(
            "preset = \"bench2g\"\n[ssd]\ndie_scheduling = \"suspend\"\n[ssd.suspend]\nsupport = \"{support}\"\n"
        );
        let DieScheduling::Suspend(s) = parse(&text).die_scheduling else {
            panic!("{support}: not suspend");
        };
        assert_eq!(s.kinds, kinds, "{support}");
    }
}

#[test]
fn bad_die_scheduling_values_name_their_key() {
    // [ssd.suspend] belongs to the suspend policy.
    let key = invalid_key("preset = \"bench2g\"\n[ssd.suspend]\nerase_us = 10\n");
    assert_eq!(key, "ssd.suspend.erase_us");
    let key = invalid_key(
        "preset = \"bench2g\"\n[ssd]\ndie_scheduling = \"read-priority\"\n[ssd.suspend]\nsupport = \"erase\"\n",
    );
    assert_eq!(key, "ssd.suspend.support");
    let key = invalid_key(
        "preset = \"bench2g\"\n[ssd]\ndie_scheduling = \"suspend\"\n[ssd.suspend]\nmax_suspensions = 0\n",
    );
    assert_eq!(key, "ssd.suspend.max_suspensions");
    let key = invalid_key(
        "preset = \"bench2g\"\n[ssd]\ndie_scheduling = \"suspend\"\n[ssd.suspend]\nresume_us = -1\n",
    );
    assert_eq!(key, "ssd.suspend.resume_us");
    // Unknown keys and names are syntax errors naming the line and what is allowed.
    for (text, line, hint) in [
        ("preset = \"bench2g\"\n[ssd]\ndie_scheduling = \"lifo\"\n", "line 3", "read-priority"),
        (
            "preset = \"bench2g\"\n[ssd]\ndie_scheduling = \"suspend\"\n[ssd.suspend]\nsuspend_us = 3\n",
            "line 5",
            "program_us",
        ),
    ] {
        let msg = parse_device_toml(text, "bad.toml").unwrap_err().to_string();
        assert!(msg.contains("bad.toml") && msg.contains(line), "{msg}");
        assert!(msg.contains(hint), "{msg}");
    }
}

#[test]
fn a_qlc_device_takes_four_page_levels_and_refuses_three() {
    let qlc = SCRATCH
        .replace("cell = \"mlc\"", "cell = \"qlc\"")
        .replace(
            "read_us_by_level = [40, 60]",
            "read_us_by_level = [80, 110, 140, 170]",
        )
        .replace(
            "program_us_by_level = [300, 900]",
            "program_us_by_level = [600, 1500, 2500, 3000]",
        );
    let p = parse(&qlc);
    assert_eq!(p.timing.cell, CellType::Qlc);
    assert_eq!(
        p.timing.read,
        [us(80.0), us(110.0), us(140.0), us(170.0)],
        "LSB page first"
    );
    assert_eq!(p.timing.program_of(3), us(3000.0));
    assert_eq!(p.endurance, CellType::Qlc.default_endurance());
    let three = qlc.replace("[80, 110, 140, 170]", "[80, 110, 140]");
    assert_eq!(invalid_key(&three), "ssd.timing.read_us_by_level");
    let message = parse_device_toml(&three, "f.toml").unwrap_err().to_string();
    assert!(
        message.contains("cell = \"qlc\" has 4 page levels"),
        "{message}"
    );
}
