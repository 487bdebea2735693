//! The FTL and victim-policy registries, entry by entry: every FTL builds from its defaults
//! under the name it is registered with, passes the conformance suite, describes its
//! parameters with keys it declares, reads each key into its parameter and refuses bad values
//! naming the key, and has its page in docs/models/; every victim policy is
//! described in docs/models/gc.md and keeps the page FTL's contract.

use std::path::PathBuf;
use storsim_flash::Geometry;
use storsim_ftl::conformance::{check_with, Mix, Writes};
use storsim_ftl::gc::{GcPolicy, POLICIES};
use storsim_ftl::params::{Kind, ParamKey, Section, Value};
use storsim_ftl::{page, FtlConfig, Keys, FTLS};

/// Small enough for a quick run, large enough for every FTL's defaults (spare blocks, log
/// blocks, translation pages).
fn geometry() -> Geometry {
    Geometry {
        channels: 2,
        chips_per_channel: 1,
        dies_per_chip: 1,
        planes_per_die: 2,
        blocks_per_plane: 32,
        pages_per_block: 16,
        page_bytes: 2048,
        oob_bytes: 64,
    }
}

fn docs() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/models")
}

fn mix() -> Mix {
    Mix {
        steps: 6_000,
        span_fraction: 0.8,
        ..Mix::default()
    }
}

#[test]
fn names_are_unique_and_every_entry_builds_under_its_name() {
    for (i, entry) in FTLS.iter().enumerate() {
        assert!(
            FTLS[..i].iter().all(|e| e.name != entry.name),
            "{} is registered twice",
            entry.name
        );
        assert!(!entry.description.is_empty(), "{}", entry.name);
        let config = (entry.defaults)();
        assert_eq!(config.name(), entry.name);
        assert_eq!(FtlConfig::default_for(entry.name), Some(config.clone()));
        config.validate(&geometry()).unwrap();
        let ftl = config.build(geometry(), 1_000).unwrap();
        assert_eq!(ftl.name(), entry.name);
    }
    assert_eq!(FtlConfig::default_for("no-such-ftl"), None);
}

#[test]
fn every_ftl_passes_the_conformance_suite() {
    for (k, entry) in FTLS.iter().enumerate() {
        let mut ftl = (entry.defaults)().build(geometry(), 1_000).unwrap();
        let writes = if entry.overwrites {
            Writes::Overwrite
        } else {
            Writes::ErasedOnly
        };
        let report = check_with(ftl.as_mut(), 0x5EED + k as u64, mix(), writes)
            .unwrap_or_else(|e| panic!("{}: {e}", entry.name));
        assert!(report.host_writes > 0, "{}", entry.name);
    }
}

/// Every key a section holds is declared, with a value of its declared kind.
fn assert_declared(section: &Section, keys: Keys, ftl: &str) {
    for (key, value) in section.iter() {
        let kind = keys
            .find(key)
            .unwrap_or_else(|| panic!("{ftl}: key {key} is written but not declared"))
            .kind;
        assert!(
            kind.holds(value),
            "{ftl}: key {key} is declared {kind:?} but holds {value:?}"
        );
        if let (Kind::Section(inner), Value::Section(s)) = (kind, value) {
            assert_declared(s, inner, ftl);
        }
    }
}

#[test]
fn every_ftl_writes_its_parameters_with_declared_keys_and_reads_them_back() {
    for entry in FTLS {
        let defaults = (entry.defaults)();
        let section = defaults.section();
        assert_declared(&section, entry.keys, entry.name);
        let mut read = defaults.clone();
        read.apply(&section).unwrap();
        assert_eq!(read, defaults, "{}", entry.name);
    }
}

/// A key stated alone reaches its parameter: the parameters change, and they state the key
/// with the value given. The round trip with every key changed at once is the device-file
/// reader's test (config/tests/ssd_files.rs); this one catches a key whose value is lost.
#[test]
fn each_key_stated_alone_reaches_its_parameter() {
    for (ftl, key, value) in [
        ("block", "over_provisioning_fraction", Value::F64(0.2)),
        ("fast", "log_fraction", Value::F64(0.1)),
        ("fmax", "over_provisioning", Value::F64(0.15)),
        ("anand", "over_provisioning", Value::F64(0.1)),
        ("anand", "max_chain_length", Value::U32(3)),
        ("anand", "scan_chain", Value::Bool(false)),
        ("log-block", "log_blocks", Value::U32(12)),
        ("log-block", "partial_merge", Value::Bool(true)),
        ("page-static", "prewrite_probability", Value::F64(0.5)),
        ("page-static", "prewrite_seed", Value::U64(7)),
        ("page", "plane_allocation", Value::Name("CWDP")),
    ] {
        let defaults = FtlConfig::default_for(ftl).unwrap();
        let mut section = Section::new();
        section.insert(key, value.clone());
        let mut config = defaults.clone();
        config.apply(&section).unwrap();
        assert_ne!(config, defaults, "{ftl}: {key}");
        assert_eq!(config.section().get(key), Some(&value), "{ftl}: {key}");
    }
}

/// A value an FTL refuses is refused naming its key (which the device-file reader turns into
/// `ssd.NAME.KEY`).
#[test]
fn bad_values_are_refused_naming_their_key() {
    for (ftl, key, value) in [
        ("block", "over_provisioning_fraction", Value::F64(1.0)),
        ("fast", "log_fraction", Value::F64(1.5)),
        ("fmax", "over_provisioning", Value::F64(-1.0)),
        ("anand", "over_provisioning", Value::F64(1.0)),
        ("anand", "max_chain_length", Value::U32(0)),
        ("anand", "max_chain_length", Value::U32(256)),
        ("log-block", "log_blocks", Value::U32(0)),
        ("page-static", "prewrite_probability", Value::F64(2.0)),
    ] {
        let mut section = Section::new();
        section.insert(key, value);
        let mut config = FtlConfig::default_for(ftl).unwrap();
        config.apply(&section).unwrap();
        let err = config.validate(&geometry()).unwrap_err();
        assert_eq!(err.key, ParamKey::Own(key.to_string()), "{ftl}: {err}");
    }
}

/// Each FTL's page lists exactly its counters (`STORSIM_BLESS_DOCS=1` rewrites the table).
#[test]
fn every_ftl_page_lists_exactly_its_counters() {
    for entry in FTLS {
        let ftl = (entry.defaults)().build(geometry(), 1_000).unwrap();
        let key = format!("ftl-{}", entry.name);
        let text = storsim_core::conformance::counter_table(&ftl.counter_descriptors());
        storsim_testenv::check_counter_tables(&format!("docs/models/{key}.md"), &[(&key, text)])
            .unwrap_or_else(|e| panic!("{}: {e}", entry.name));
    }
}

#[test]
fn every_ftl_has_a_docs_page_that_names_its_keys() {
    for entry in FTLS {
        let path = docs().join(format!("ftl-{}.md", entry.name));
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for key in entry.keys.all() {
            assert!(
                text.contains(key.name),
                "{} does not describe key {}",
                path.display(),
                key.name
            );
        }
    }
}

#[test]
fn background_gc_is_a_capability_some_ftls_take() {
    let mut takers = 0;
    for entry in FTLS {
        let mut config = (entry.defaults)();
        config.set_background_gc(true);
        if config != (entry.defaults)() {
            takers += 1;
        }
        // A fresh FTL has no garbage to collect, whether or not it collects in idle time.
        let mut ftl = config.build(geometry(), 1_000).unwrap();
        assert!(!ftl.idle(&mut Vec::new()).unwrap(), "{}", entry.name);
    }
    assert!(takers > 0, "no FTL takes the device's background_gc");
}

#[test]
fn every_victim_policy_is_documented_and_keeps_the_contract() {
    assert_eq!(
        POLICIES.iter().map(|e| e.name).collect::<Vec<_>>(),
        GcPolicy::NAMES,
        "the names files use follow the table"
    );
    let gc_doc = std::fs::read_to_string(docs().join("gc.md")).unwrap();
    for (k, entry) in POLICIES.iter().enumerate() {
        assert!(gc_doc.contains(entry.name), "gc.md: {}", entry.name);
        let mut section = Section::new();
        section.insert("gc_policy", Value::Name(entry.name));
        for key in entry.keys {
            section.insert(key.name, Value::F64(0.5));
        }
        let mut params = page::Params::default();
        storsim_ftl::gc::apply(&section, &mut params.gc_policy).unwrap();
        assert_eq!(params.gc_policy.name(), entry.name);
        let mut ftl = FtlConfig::new(params).build(geometry(), 1_000).unwrap();
        check_with(ftl.as_mut(), 0x6C + k as u64, mix(), Writes::Overwrite)
            .unwrap_or_else(|e| panic!("{}: {e}", entry.name));
    }
}
