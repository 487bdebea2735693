//! `[hybrid]`: a hybrid flash + disk drive over two child devices, each a preset or another
//! device file (relative to the file that names it). `configuration = "controller"` is the
//! thesis' configuration 2 (the drive manages the flash as a cache); `"host"` is
//! configuration 1 (the OS sees both devices and places data itself).

use super::{
    delay_us, fraction_up_to_one, invalid, resolve_merged, section_queue_depth, FileContext, Model,
};
use crate::{preset_spec, ConfigError, DeviceSpec, LoadedDevice, ModelParams};
use serde::Deserialize;
use std::path::Path;
use storsim_core::{Device, SimDuration};
use storsim_hybrid::{
    Admission, ByteRange, FlushPolicy, HostPlacement, HostTieredParams, HybridParams, Replacement,
};

#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum ConfigurationName {
    Controller,
    Host,
}

#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum AdmissionName {
    Writes,
    Reads,
}

#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum FlushName {
    OnDemand,
    LowWatermark,
    Idle,
}

#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum ReplacementName {
    Lru,
    Fifo,
}

#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum PlacementName {
    Separate,
    FlashRanges,
    SmallWrites,
}

#[derive(Deserialize, Clone, Debug, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct HybridSection {
    configuration: Option<ConfigurationName>,
    flash: Option<String>,
    disk: Option<String>,
    queue_depth: Option<usize>,
    admission: Option<AdmissionName>,
    small_write_threshold_bytes: Option<u64>,
    cache_block_bytes: Option<u64>,
    flush: Option<FlushName>,
    high_watermark: Option<f64>,
    low_watermark: Option<f64>,
    idle_time_us: Option<f64>,
    replacement: Option<ReplacementName>,
    pinned: Option<Vec<[u64; 2]>>,
    placement: Option<PlacementName>,
    flash_ranges: Option<Vec<[u64; 2]>>,
    remap_block_bytes: Option<u64>,
}

/// Which configuration, with its parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum HybridConfiguration {
    /// Configuration 2: the controller manages the flash.
    Controller(HybridParams),
    /// Configuration 1: the host manages the flash.
    Host(HostTieredParams),
}

/// A hybrid drive as a device file describes it: the configuration and both children,
/// resolved in full under the names the file gave them.
#[derive(Clone, Debug, PartialEq)]
pub struct HybridSpec {
    pub configuration: HybridConfiguration,
    pub flash: Box<LoadedDevice>,
    pub disk: Box<LoadedDevice>,
}

const DEFAULT_QUEUE_DEPTH: usize = 32;
const DEFAULT_HIGH_WATERMARK: f64 = 0.8;
const DEFAULT_LOW_WATERMARK: f64 = 0.5;
const DEFAULT_IDLE_TIME_US: f64 = 100_000.0;

/// The description of a file with `model = "hybrid"`: everything comes from the section (the
/// hybrid presets are such files, embedded), and the capacity follows from the children.
pub(crate) fn from_scratch(
    section: &HybridSection,
    capacity_bytes: Option<u64>,
    top_queue_depth: Option<usize>,
    file: &str,
) -> Result<HybridSpec, ConfigError> {
    if capacity_bytes.is_some() {
        return Err(invalid(
            file,
            "capacity_bytes",
            "does not apply to a `hybrid` device: its capacity follows from its children (the \
             disk's, or with placement = \"separate\" the disk's plus the flash's)"
                .into(),
        ));
    }
    let queue_depth = section_queue_depth(
        file,
        "hybrid",
        section.queue_depth,
        top_queue_depth,
        DEFAULT_QUEUE_DEPTH,
    )?;
    let flash = load_child(section.flash.as_deref(), "hybrid.flash", file)?;
    let disk = load_child(section.disk.as_deref(), "hybrid.disk", file)?;
    let configuration = match section
        .configuration
        .unwrap_or(ConfigurationName::Controller)
    {
        ConfigurationName::Controller => {
            HybridConfiguration::Controller(controller(section, queue_depth, file)?)
        }
        ConfigurationName::Host => HybridConfiguration::Host(host(section, queue_depth, file)?),
    };
    Ok(HybridSpec {
        configuration,
        flash: Box::new(flash),
        disk: Box::new(disk),
    })
}

/// Rejects a key that belongs to another configuration or flush policy, naming where it does.
fn not_here(file: &str, present: bool, key: &str, applies_to: &str) -> Result<(), ConfigError> {
    if present {
        return Err(invalid(
            file,
            &format!("hybrid.{key}"),
            format!("applies only to {applies_to}"),
        ));
    }
    Ok(())
}

/// Rejects the first of `keys` (each `(stated, key)`) that the section states: they all apply
/// only to `applies_to`.
fn none_stated(file: &str, keys: &[(bool, &str)], applies_to: &str) -> Result<(), ConfigError> {
    for &(present, key) in keys {
        not_here(file, present, key, applies_to)?;
    }
    Ok(())
}

fn ranges(list: &[[u64; 2]], key: &str, file: &str) -> Result<Vec<ByteRange>, ConfigError> {
    let mut out: Vec<ByteRange> = Vec::with_capacity(list.len());
    for (i, &[start_bytes, end_bytes]) in list.iter().enumerate() {
        if start_bytes >= end_bytes {
            return Err(invalid(
                file,
                &format!("hybrid.{key}[{i}]"),
                format!("must be [start_bytes, end_bytes] with start < end, got [{start_bytes}, {end_bytes}]"),
            ));
        }
        out.push(ByteRange {
            start_bytes,
            end_bytes,
        });
    }
    let mut sorted = out.clone();
    sorted.sort();
    if let Some(w) = sorted
        .windows(2)
        .find(|w| w[0].end_bytes > w[1].start_bytes)
    {
        return Err(invalid(
            file,
            &format!("hybrid.{key}"),
            format!(
                "ranges [{}, {}) and [{}, {}) overlap",
                w[0].start_bytes, w[0].end_bytes, w[1].start_bytes, w[1].end_bytes
            ),
        ));
    }
    Ok(out)
}

fn block_bytes(value: u64, key: &str, file: &str) -> Result<u64, ConfigError> {
    if value == 0 || value % 512 != 0 {
        return Err(invalid(
            file,
            &format!("hybrid.{key}"),
            format!("must be a positive multiple of 512, got {value}"),
        ));
    }
    Ok(value)
}

/// Configuration 2's parameters, refusing the keys of configuration 1.
fn controller(
    s: &HybridSection,
    queue_depth: usize,
    file: &str,
) -> Result<HybridParams, ConfigError> {
    none_stated(
        file,
        &[
            (s.placement.is_some(), "placement"),
            (s.flash_ranges.is_some(), "flash_ranges"),
            (s.remap_block_bytes.is_some(), "remap_block_bytes"),
        ],
        "configuration = \"host\"",
    )?;
    let defaults = HybridParams::thesis_defaults();
    let admission = match s.admission.unwrap_or(AdmissionName::Writes) {
        AdmissionName::Writes => Admission::Writes,
        AdmissionName::Reads => {
            // A read cache never holds dirty data, so what decides writes' placement and
            // when dirty data is flushed has nothing to act on: stating it is a mistake.
            none_stated(
                file,
                &[
                    (
                        s.small_write_threshold_bytes.is_some(),
                        "small_write_threshold_bytes",
                    ),
                    (s.flush.is_some(), "flush"),
                ],
                "admission = \"writes\"",
            )?;
            Admission::Reads
        }
    };
    let flush = flush_policy(s, file)?;
    let params = HybridParams {
        admission,
        small_write_threshold_bytes: s
            .small_write_threshold_bytes
            .unwrap_or(defaults.small_write_threshold_bytes),
        cache_block_bytes: match s.cache_block_bytes {
            Some(b) => block_bytes(b, "cache_block_bytes", file)?,
            None => defaults.cache_block_bytes,
        },
        flush,
        replacement: match s.replacement.unwrap_or(ReplacementName::Lru) {
            ReplacementName::Lru => Replacement::Lru,
            ReplacementName::Fifo => Replacement::Fifo,
        },
        pinned: ranges(s.pinned.as_deref().unwrap_or_default(), "pinned", file)?,
        queue_depth,
    };
    params.validate().map_err(|m| invalid(file, "hybrid", m))?;
    Ok(params)
}

/// Configuration 2's flush policy (on demand unless stated), refusing the keys of the
/// other policies.
fn flush_policy(s: &HybridSection, file: &str) -> Result<FlushPolicy, ConfigError> {
    let name = s.flush.unwrap_or(FlushName::OnDemand);
    if name != FlushName::LowWatermark {
        none_stated(
            file,
            &[
                (s.high_watermark.is_some(), "high_watermark"),
                (s.low_watermark.is_some(), "low_watermark"),
            ],
            "flush = \"low-watermark\"",
        )?;
    }
    if name != FlushName::Idle {
        not_here(
            file,
            s.idle_time_us.is_some(),
            "idle_time_us",
            "flush = \"idle\"",
        )?;
    }
    Ok(match name {
        FlushName::OnDemand => FlushPolicy::OnDemand,
        FlushName::LowWatermark => {
            let high = s.high_watermark.unwrap_or(DEFAULT_HIGH_WATERMARK);
            let low = s.low_watermark.unwrap_or(DEFAULT_LOW_WATERMARK);
            fraction_up_to_one(file, "hybrid.high_watermark", high)?;
            fraction_up_to_one(file, "hybrid.low_watermark", low)?;
            if low >= high {
                return Err(invalid(
                    file,
                    "hybrid.low_watermark",
                    format!("must be below high_watermark ({high}), got {low}"),
                ));
            }
            FlushPolicy::LowWatermark {
                high_fraction: high,
                low_fraction: low,
            }
        }
        FlushName::Idle => FlushPolicy::Idle {
            idle: delay_us(
                file,
                "hybrid.idle_time_us",
                s.idle_time_us.unwrap_or(DEFAULT_IDLE_TIME_US),
            )?
            .max(SimDuration(1)),
        },
    })
}

/// Configuration 1's parameters, refusing the keys of configuration 2.
fn host(
    s: &HybridSection,
    queue_depth: usize,
    file: &str,
) -> Result<HostTieredParams, ConfigError> {
    none_stated(
        file,
        &[
            (s.cache_block_bytes.is_some(), "cache_block_bytes"),
            (s.flush.is_some(), "flush"),
            (s.admission.is_some(), "admission"),
            (s.high_watermark.is_some(), "high_watermark"),
            (s.low_watermark.is_some(), "low_watermark"),
            (s.idle_time_us.is_some(), "idle_time_us"),
            (s.replacement.is_some(), "replacement"),
            (s.pinned.is_some(), "pinned"),
        ],
        "configuration = \"controller\"",
    )?;
    let params = HostTieredParams {
        placement: host_placement(s, file)?,
        queue_depth,
    };
    params.validate().map_err(|m| invalid(file, "hybrid", m))?;
    Ok(params)
}

/// Configuration 1's placement, which a file must state, refusing the keys of the other
/// placements.
fn host_placement(s: &HybridSection, file: &str) -> Result<HostPlacement, ConfigError> {
    let name = s.placement.ok_or_else(|| {
        invalid(
            file,
            "hybrid.placement",
            "is required with configuration = \"host\": \"separate\", \"flash-ranges\" or \
             \"small-writes\""
                .into(),
        )
    })?;
    if name != PlacementName::FlashRanges {
        not_here(
            file,
            s.flash_ranges.is_some(),
            "flash_ranges",
            "placement = \"flash-ranges\"",
        )?;
    }
    if name != PlacementName::SmallWrites {
        none_stated(
            file,
            &[
                (s.remap_block_bytes.is_some(), "remap_block_bytes"),
                (
                    s.small_write_threshold_bytes.is_some(),
                    "small_write_threshold_bytes",
                ),
            ],
            "placement = \"small-writes\"",
        )?;
    }
    Ok(match name {
        PlacementName::Separate => HostPlacement::Separate,
        PlacementName::FlashRanges => {
            let list = s.flash_ranges.as_deref().unwrap_or_default();
            if list.is_empty() {
                return Err(invalid(
                    file,
                    "hybrid.flash_ranges",
                    "needs at least one [start_bytes, end_bytes] range".into(),
                ));
            }
            HostPlacement::FlashRanges(ranges(list, "flash_ranges", file)?)
        }
        PlacementName::SmallWrites => HostPlacement::SmallWrites {
            threshold_bytes: s.small_write_threshold_bytes.unwrap_or(64 << 10),
            block_bytes: block_bytes(
                s.remap_block_bytes.unwrap_or(4096),
                "remap_block_bytes",
                file,
            )?,
        },
    })
}

/// Resolves `flash` or `disk`: a preset name, or a device file relative to this file. A
/// child may not itself be a hybrid or an array, so that resolving never loops.
fn load_child(entry: Option<&str>, key: &str, file: &str) -> Result<LoadedDevice, ConfigError> {
    let entry = entry.ok_or_else(|| {
        invalid(
            file,
            key,
            "is required: a preset name or a device file relative to this file".into(),
        )
    })?;
    let (name, spec) = match preset_spec(entry) {
        Some(spec) => (
            entry.to_string(),
            spec.map_err(|m| invalid(file, key, format!("preset '{entry}': {m}")))?,
        ),
        None => {
            let dir = Path::new(file).parent().unwrap_or(Path::new(""));
            let path = dir.join(entry);
            let text = std::fs::read_to_string(&path).map_err(|e| {
                invalid(
                    file,
                    key,
                    format!(
                        "'{entry}' is neither a preset (see `storsim presets`) nor a readable \
                         device file ({}): {e}",
                        path.display()
                    ),
                )
            })?;
            // Look at the child's model before resolving it: a child that names files of its
            // own could lead back here.
            let model = toml::from_str::<toml::Table>(&text)
                .ok()
                .and_then(|t| t.get("model").and_then(|m| m.as_str().map(str::to_string)));
            if let Some(model) = model.filter(|m| super::model(m).is_some_and(|m| m.has_children)) {
                return Err(invalid(
                    file,
                    key,
                    format!("'{entry}' is a `{model}` device; a hybrid's children must be single devices"),
                ));
            }
            let name = path.display().to_string();
            let spec = crate::parse_device_toml(&text, &name)?;
            (name, spec)
        }
    };
    if super::model(spec.model_name()).is_some_and(|m| m.has_children) {
        return Err(invalid(
            file,
            key,
            format!(
                "'{entry}' is a `{}` device; a hybrid's children must be single devices",
                spec.model_name()
            ),
        ));
    }
    Ok(LoadedDevice { name, spec })
}

/// The hybrid drive's entry in the model table.
pub(crate) struct Hybrid;

impl Model for Hybrid {
    const NAME: &'static str = "hybrid";
    const DESCRIPTION: &'static str =
        "Hybrid flash + disk drive over two child devices: a controller's flash cache, or host tiering";
    const MERGED_OVER_PRESET: bool = true;
    const HAS_CHILDREN: bool = true;
    type Params = HybridSpec;
    type Section = HybridSection;

    fn resolve(
        section: Option<&HybridSection>,
        base: Option<HybridSpec>,
        cx: &FileContext,
    ) -> Result<HybridSpec, ConfigError> {
        resolve_merged::<Self>(section, base, cx, |section| {
            from_scratch(section, cx.capacity_bytes, cx.queue_depth, cx.file)
        })
    }
}

impl ModelParams for HybridSpec {
    fn model_name(&self) -> &'static str {
        Hybrid::NAME
    }

    /// Builds the flash and the disk, then the hybrid over them.
    fn build(&self) -> Result<Box<dyn Device>, String> {
        let flash = self
            .flash
            .spec
            .build()
            .map_err(|e| format!("hybrid flash ({}): {e}", self.flash.name))?;
        let disk = self
            .disk
            .spec
            .build()
            .map_err(|e| format!("hybrid disk ({}): {e}", self.disk.name))?;
        Ok(match &self.configuration {
            HybridConfiguration::Controller(p) => {
                let mut hybrid = storsim_hybrid::HybridDevice::new(p.clone(), flash, disk)
                    .map_err(|e| format!("hybrid: {e}"))?;
                if self.children_have_faults() {
                    hybrid.enable_fault_counters();
                }
                Box::new(hybrid)
            }
            HybridConfiguration::Host(p) => Box::new(
                storsim_hybrid::HostTieredDevice::new(p.clone(), flash, disk)
                    .map_err(|e| format!("hybrid: {e}"))?,
            ),
        })
    }

    fn children_have_faults(&self) -> bool {
        self.flash.spec.has_faults() || self.disk.spec.has_faults()
    }

    /// The flash is child 0, the disk child 1.
    fn children_mut(&mut self) -> Vec<&mut DeviceSpec> {
        vec![&mut self.flash.spec, &mut self.disk.spec]
    }

    /// A hybrid holds its two children: the sum of the bounds they report.
    fn state_bytes_bound(&self) -> Option<u64> {
        [&self.flash, &self.disk]
            .iter()
            .filter_map(|c| c.spec.state_bytes_bound())
            .reduce(u64::saturating_add)
    }
}
