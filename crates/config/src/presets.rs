//! Built-in devices. Each preset is a complete description that a device file may start from.
//! Some presets also take a variant after a colon (`uhs1-sd:ch4-x2`), for parameter sweeps
//! without writing a file.

use crate::models::table::{check_channels, speedup_milli};
use crate::DeviceSpec;
use storsim_blackbox::{linear, step, table};

/// Turns a preset's spec into the variant named after the colon, or says why it cannot.
type ApplyVariant = fn(DeviceSpec, &str) -> Result<DeviceSpec, String>;

/// One line of `storsim presets`.
#[derive(Clone, Copy, Debug)]
pub struct PresetInfo {
    pub name: &'static str,
    pub model: &'static str,
    pub summary: &'static str,
    build: fn() -> DeviceSpec,
    /// Applies the text after `name:`; `None` for presets without variants.
    variant: Option<ApplyVariant>,
}

impl PresetInfo {
    pub fn spec(&self) -> DeviceSpec {
        (self.build)()
    }
}

const PRESETS: &[PresetInfo] = &[
    PresetInfo {
        name: "stec-zeus",
        model: "linear",
        summary: "STEC Zeus 70 GB SSD, IBM linear fit A + n*B (El Maghraoui et al.), one request \
                  at a time",
        build: || DeviceSpec::Linear(linear::stec_zeus()),
        variant: None,
    },
    PresetInfo {
        name: "uhs1-sd",
        model: "table",
        summary: "Baseline device of the co-simulation thesis (Wu, Table 5.3: Transcend UHS-I SD \
                  card), 400 MiB, Ch1-x1; `uhs1-sd:chN-xS` gives N channels and speedup S",
        build: || DeviceSpec::Table(table::uhs1_sd()),
        variant: Some(channels_and_speedup),
    },
    PresetInfo {
        name: "wisconsin-usb",
        model: "step",
        summary: "32 MiB USB stick of the Wisconsin RAM-disk emulator (Aderhold & Field): the \
                  seed's step schedules and write compensation, illustrative delays",
        build: || DeviceSpec::Step(step::wisconsin_usb()),
        variant: None,
    },
];

/// Every preset, in the order `storsim presets` lists them.
pub fn presets() -> &'static [PresetInfo] {
    PRESETS
}

/// The preset with exactly this name (no variant).
pub fn preset(name: &str) -> Option<&'static PresetInfo> {
    PRESETS.iter().find(|p| p.name == name)
}

/// Resolves a preset name with an optional variant (`uhs1-sd`, `uhs1-sd:ch4-x2`). `None` when
/// the part before any colon names no preset; an error when the variant is not understood.
pub fn preset_spec(name: &str) -> Option<Result<DeviceSpec, String>> {
    let (base, variant) = match name.split_once(':') {
        Some((base, variant)) => (base, Some(variant)),
        None => (name, None),
    };
    let info = preset(base)?;
    Some(match (variant, info.variant) {
        (None, _) => Ok(info.spec()),
        (Some(v), Some(apply)) => apply(info.spec(), v),
        (Some(_), None) => Err(format!("preset '{base}' has no variants")),
    })
}

/// The thesis' ChN-xS notation: `chN`, `xS` or both joined by `-`, case-insensitive.
fn channels_and_speedup(spec: DeviceSpec, variant: &str) -> Result<DeviceSpec, String> {
    let DeviceSpec::Table(mut params) = spec else {
        return Err("ChN-xS variants apply to table devices only".to_string());
    };
    let usage =
        || format!("variant '{variant}' is not of the form chN-xS (e.g. ch4-x2, ch2, x1.5)");
    let (mut channels, mut speedup) = (None, None);
    for part in variant.to_ascii_lowercase().split('-') {
        if let Some(n) = part.strip_prefix("ch") {
            let n: usize = n.parse().map_err(|_| usage())?;
            let n = check_channels(n).map_err(|m| format!("channels {m}"))?;
            if channels.replace(n).is_some() {
                return Err(usage());
            }
        } else if let Some(s) = part.strip_prefix('x') {
            let s: f64 = s.parse().map_err(|_| usage())?;
            let s = speedup_milli(s).map_err(|m| format!("speedup {m}"))?;
            if speedup.replace(s).is_some() {
                return Err(usage());
            }
        } else {
            return Err(usage());
        }
    }
    if let Some(n) = channels {
        params.channels = n;
    }
    if let Some(s) = speedup {
        params.speedup_milli = s;
    }
    Ok(DeviceSpec::Table(params))
}
