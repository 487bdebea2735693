//! `[array]`: RAID-0 / RAID-1 over child devices, each a preset or another device file. A
//! child file's path is relative to the file that names it, so an array and its children
//! move together; a file that leads back to itself is an error naming the chain.

use super::{invalid, resolve_merged, section_queue_depth, FileContext, Model};
use crate::{preset_spec, ConfigError, DeviceSpec, LoadedDevice, ModelParams};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use storsim_array::{ArrayParams, RaidLevel, ReadPolicy};
use storsim_core::SECTOR_BYTES;

/// How deep arrays may nest (an array of arrays of ...). Real layouts use two levels; the bound
/// keeps a file that names itself under other names from building an absurd tree.
const NESTING_MAX: usize = 8;

/// The queue depth of an array whose file states none.
const DEFAULT_QUEUE_DEPTH: usize = 32;

#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum LevelName {
    Raid0,
    Raid1,
}

#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum ReadPolicyName {
    LeastOutstanding,
    RoundRobin,
}

#[derive(Deserialize, Clone, Debug, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct ArraySection {
    level: Option<LevelName>,
    stripe_unit_bytes: Option<u64>,
    queue_depth: Option<usize>,
    read_policy: Option<ReadPolicyName>,
    children: Option<Vec<String>>,
}

/// An array as a device file describes it: its own parameters and its children, each resolved
/// to a full description under the name the file gave it.
#[derive(Clone, Debug, PartialEq)]
pub struct ArraySpec {
    pub params: ArrayParams,
    pub children: Vec<LoadedDevice>,
}

/// Where a device file sits among the files being read: the directory its child paths are
/// relative to, and the files that (transitively) named it, outermost first.
pub(crate) struct Nesting {
    dir: PathBuf,
    chain: Vec<PathBuf>,
}

impl Nesting {
    /// For a file read on its own; `file` is its path as the user gave it.
    pub(crate) fn top(file: &str) -> Nesting {
        let path = Path::new(file);
        Nesting {
            dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
            chain: path.canonicalize().ok().into_iter().collect(),
        }
    }
}

/// The description of a file with `model = "array"`. Arrays have no presets, so everything
/// comes from the section; `capacity_bytes` follows from the children and may not be given.
pub(crate) fn from_scratch(
    section: &ArraySection,
    capacity_bytes: Option<u64>,
    top_queue_depth: Option<usize>,
    file: &str,
    nesting: &Nesting,
) -> Result<ArraySpec, ConfigError> {
    if capacity_bytes.is_some() {
        return Err(invalid(
            file,
            "capacity_bytes",
            "does not apply to an `array` device: its capacity follows from its children \
             (RAID-0: their number times the smallest, in whole stripe rows; RAID-1: the \
             smallest)"
                .to_string(),
        ));
    }
    let level = raid_level(section, file)?;
    let queue_depth = section_queue_depth(
        file,
        "array",
        section.queue_depth,
        top_queue_depth,
        DEFAULT_QUEUE_DEPTH,
    )?;

    let entries = section.children.as_deref().unwrap_or_default();
    if entries.is_empty() {
        return Err(invalid(
            file,
            "array.children",
            "needs at least one child: a preset name or a device file relative to this file".into(),
        ));
    }
    let children = entries
        .iter()
        .enumerate()
        .map(|(i, entry)| load_child(i, entry, file, nesting))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ArraySpec {
        params: ArrayParams { level, queue_depth },
        children,
    })
}

/// The RAID level `[array]` states (required), with its own key, refusing the other
/// level's.
fn raid_level(section: &ArraySection, file: &str) -> Result<RaidLevel, ConfigError> {
    let level_name = section.level.ok_or_else(|| {
        invalid(
            file,
            "array.level",
            "is required: \"raid0\" or \"raid1\"".into(),
        )
    })?;
    Ok(match level_name {
        LevelName::Raid0 => {
            if section.read_policy.is_some() {
                return Err(invalid(
                    file,
                    "array.read_policy",
                    "applies to raid1 only: a raid0 read goes to the children holding its range"
                        .into(),
                ));
            }
            let stripe_unit_bytes = section.stripe_unit_bytes.ok_or_else(|| {
                invalid(
                    file,
                    "array.stripe_unit_bytes",
                    "is required for raid0 (a multiple of 512, such as 65536)".into(),
                )
            })?;
            if stripe_unit_bytes == 0 || stripe_unit_bytes % SECTOR_BYTES != 0 {
                return Err(invalid(
                    file,
                    "array.stripe_unit_bytes",
                    format!(
                        "must be a positive multiple of {SECTOR_BYTES}, got {stripe_unit_bytes}"
                    ),
                ));
            }
            RaidLevel::Raid0 { stripe_unit_bytes }
        }
        LevelName::Raid1 => {
            if section.stripe_unit_bytes.is_some() {
                return Err(invalid(
                    file,
                    "array.stripe_unit_bytes",
                    "applies to raid0 only: every raid1 child holds the whole range".into(),
                ));
            }
            RaidLevel::Raid1 {
                read_policy: match section.read_policy {
                    None | Some(ReadPolicyName::LeastOutstanding) => ReadPolicy::LeastOutstanding,
                    Some(ReadPolicyName::RoundRobin) => ReadPolicy::RoundRobin,
                },
            }
        }
    })
}

/// Resolves one entry of `children`: a preset name, or a file relative to the naming file.
fn load_child(
    index: usize,
    entry: &str,
    file: &str,
    nesting: &Nesting,
) -> Result<LoadedDevice, ConfigError> {
    let key = "array.children";
    if let Some(spec) = preset_spec(entry) {
        let spec = spec.map_err(|message| {
            invalid(
                file,
                key,
                format!("child {index} (preset '{entry}'): {message}"),
            )
        })?;
        return Ok(LoadedDevice {
            name: entry.to_string(),
            spec,
        });
    }
    let path = nesting.dir.join(entry);
    let unreadable = |reason: String| {
        invalid(
            file,
            key,
            format!(
                "child {index} '{entry}' is neither a preset (see `storsim presets`) nor a \
                 readable device file ({}): {reason}",
                path.display()
            ),
        )
    };
    let canonical = path.canonicalize().map_err(|e| unreadable(e.to_string()))?;
    if let Some(start) = nesting.chain.iter().position(|p| *p == canonical) {
        let cycle: Vec<String> = nesting.chain[start..]
            .iter()
            .chain(std::iter::once(&canonical))
            .map(|p| p.display().to_string())
            .collect();
        return Err(invalid(
            file,
            key,
            format!(
                "child {index} '{entry}' contains itself: {}",
                cycle.join(" -> ")
            ),
        ));
    }
    if nesting.chain.len() >= NESTING_MAX {
        return Err(invalid(
            file,
            key,
            format!("child {index} '{entry}': arrays nest at most {NESTING_MAX} files deep"),
        ));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| unreadable(e.to_string()))?;
    let name = path.display().to_string();
    let mut chain = nesting.chain.clone();
    chain.push(canonical);
    let child_nesting = Nesting {
        dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
        chain,
    };
    let spec: DeviceSpec = crate::file::parse_nested(&text, &name, &child_nesting)?;
    Ok(LoadedDevice { name, spec })
}

/// The array's entry in the model table.
pub(crate) struct Array;

impl Model for Array {
    const NAME: &'static str = "array";
    const DESCRIPTION: &'static str =
        "RAID-0 striping or RAID-1 mirroring over child devices, arrays included";
    const MERGED_OVER_PRESET: bool = true;
    const HAS_CHILDREN: bool = true;
    type Params = ArraySpec;
    type Section = ArraySection;

    fn resolve(
        section: Option<&ArraySection>,
        base: Option<ArraySpec>,
        cx: &FileContext,
    ) -> Result<ArraySpec, ConfigError> {
        resolve_merged::<Self>(section, base, cx, |section| {
            from_scratch(
                section,
                cx.capacity_bytes,
                cx.queue_depth,
                cx.file,
                cx.nesting,
            )
        })
    }
}

impl ModelParams for ArraySpec {
    fn model_name(&self) -> &'static str {
        Array::NAME
    }

    /// Builds the children in order, then the array over them.
    fn build(&self) -> Result<Box<dyn storsim_core::Device>, String> {
        let children = self
            .children
            .iter()
            .enumerate()
            .map(|(i, c)| {
                c.spec
                    .build()
                    .map_err(|e| format!("array child {i} ({}): {e}", c.name))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut array = storsim_array::ArrayDevice::new(self.params, children)
            .map_err(|e| format!("array: {e}"))?;
        if self.children_have_faults() {
            array.enable_fault_counters();
        }
        Ok(Box::new(array))
    }

    fn children_have_faults(&self) -> bool {
        self.children.iter().any(|c| c.spec.has_faults())
    }

    fn children_mut(&mut self) -> Vec<&mut DeviceSpec> {
        self.children.iter_mut().map(|c| &mut c.spec).collect()
    }

    /// An array holds its children: the sum of the bounds they report.
    fn state_bytes_bound(&self) -> Option<u64> {
        self.children
            .iter()
            .filter_map(|c| c.spec.state_bytes_bound())
            .reduce(u64::saturating_add)
    }
}
