//! Built-in devices. Each preset is a complete description that a device file may start from.

use crate::DeviceSpec;
use storsim_blackbox::linear;

/// One line of `storsim presets`.
#[derive(Clone, Copy, Debug)]
pub struct PresetInfo {
    pub name: &'static str,
    pub model: &'static str,
    pub summary: &'static str,
    build: fn() -> DeviceSpec,
}

impl PresetInfo {
    pub fn spec(&self) -> DeviceSpec {
        (self.build)()
    }
}

const PRESETS: &[PresetInfo] = &[PresetInfo {
    name: "stec-zeus",
    model: "linear",
    summary:
        "STEC Zeus 70 GB SSD, IBM linear fit A + n*B (El Maghraoui et al.), one request at a time",
    build: || DeviceSpec::Linear(linear::stec_zeus()),
}];

/// Every preset, in the order `storsim presets` lists them.
pub fn presets() -> &'static [PresetInfo] {
    PRESETS
}

pub fn preset(name: &str) -> Option<&'static PresetInfo> {
    PRESETS.iter().find(|p| p.name == name)
}
