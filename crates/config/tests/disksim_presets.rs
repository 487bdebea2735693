//! The DiskSim drives bundled as presets are exactly what `storsim import disksim` makes of
//! DiskSim's files today, so an importer change cannot leave stale presets behind.

use storsim_config::disksim::import::import_parv;
use storsim_config::{load_device, presets};

/// (preset, DiskSim parameter file).
const DRIVES: [(&str, &str); 11] = [
    ("disksim-cheetah9lp", "cheetah9LP.parv"),
    ("disksim-ibm18es", "ibm18es.parv"),
    ("disksim-hp-c2247a", "hp_c2247a.parv"),
    ("disksim-atlas10k", "atlas10k.parv"),
    ("disksim-atlas3", "atlas_III.parv"),
    ("disksim-barracuda", "barracuda.parv"),
    ("disksim-cheetah4lp", "cheetah4LP.parv"),
    ("disksim-hp-c3323a", "hp_c3323a.parv"),
    ("disksim-hp-c2490a", "hp_c2490a.parv"),
    ("disksim-dec-rz26", "dec_rz26.parv"),
    (
        "disksim-cheetah15k5",
        "cheetah15k5/Seagate-Cheetah15k5.parv",
    ),
];

#[test]
fn every_disksim_preset_is_listed_and_builds() {
    for (name, _) in DRIVES {
        assert!(
            presets()
                .iter()
                .any(|p| p.name == name && p.model() == "hdd"),
            "{name} is not a preset"
        );
        let device = load_device(name).unwrap().spec.build().unwrap();
        assert!(device.capacity_bytes() > 1_000_000_000, "{name}");
    }
}

#[test]
fn disksim_presets_equal_a_fresh_import() {
    let Some(dir) = storsim_testenv::shared("disksim-valid") else {
        return;
    };
    for (name, parv) in DRIVES {
        let imported = import_parv(&dir.join(parv)).unwrap();
        let Ok(preset) = load_device(name)
            .unwrap()
            .spec
            .into_params::<storsim_hdd::HddParams>()
        else {
            panic!("{name} is not an hdd")
        };
        assert!(
            preset == imported.params,
            "{name} differs from a fresh import of {parv}: regenerate it with \
             `storsim import disksim`"
        );
    }
}
