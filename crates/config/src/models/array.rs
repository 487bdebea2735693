//! `[array]`: RAID-0 / RAID-1 / RAID-5 / RAID-6 over child devices, each a preset or another
//! device file, with a spare for RAID-5 and RAID-6. A child file's path is relative to the
//! file that names it, so an array and its children move together; a file that leads back to
//! itself is an error naming the chain.

use super::{invalid, resolve_merged, section_queue_depth, FileContext, Model};
use crate::{preset_spec, ConfigError, DeviceSpec, LoadedDevice, ModelParams};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use storsim_array::{
    ArrayParams, MemberFailure, ParityParams, RaidLevel, ReadPolicy,
    DEFAULT_REBUILD_RATE_BYTES_PER_S,
};
use storsim_core::{SimTime, SECTOR_BYTES};

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
    Raid5,
    Raid6,
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
    spare: Option<String>,
    rebuild_rate_mb_per_s: Option<f64>,
    failed_member: Option<usize>,
    failed_at_ms: Option<f64>,
}

/// An array as a device file describes it: its own parameters and its children, each resolved
/// to a full description under the name the file gave it.
#[derive(Clone, Debug, PartialEq)]
pub struct ArraySpec {
    pub params: ArrayParams,
    pub children: Vec<LoadedDevice>,
    /// The RAID-5 or RAID-6 array's spare, if it has one.
    pub spare: Option<LoadedDevice>,
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
        .map(|(i, entry)| load_child(Some(i), entry, file, nesting))
        .collect::<Result<Vec<_>, _>>()?;
    check_members(&level, children.len(), file)?;
    let spare = section
        .spare
        .as_deref()
        .map(|entry| load_child(None, entry, file, nesting))
        .transpose()?;
    Ok(ArraySpec {
        params: ArrayParams { level, queue_depth },
        children,
        spare,
    })
}

/// The RAID level `[array]` states (required), with its own key, refusing the other
/// level's.
fn raid_level(section: &ArraySection, file: &str) -> Result<RaidLevel, ConfigError> {
    let level_name = section.level.ok_or_else(|| {
        invalid(
            file,
            "array.level",
            "is required: \"raid0\", \"raid1\", \"raid5\" or \"raid6\"".into(),
        )
    })?;
    if matches!(level_name, LevelName::Raid0 | LevelName::Raid1) {
        refuse_parity_keys(section, file)?;
    }
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
            RaidLevel::Raid0 {
                stripe_unit_bytes: stripe_unit(section, "raid0", file)?,
            }
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
        LevelName::Raid5 => RaidLevel::Raid5(parity_params(section, "raid5", file)?),
        LevelName::Raid6 => RaidLevel::Raid6(parity_params(section, "raid6", file)?),
    })
}

/// The stripe unit a striped level (`level`) requires.
fn stripe_unit(section: &ArraySection, level: &str, file: &str) -> Result<u64, ConfigError> {
    let stripe_unit_bytes = section.stripe_unit_bytes.ok_or_else(|| {
        invalid(
            file,
            "array.stripe_unit_bytes",
            format!("is required for {level} (a multiple of 512, such as 65536)"),
        )
    })?;
    if stripe_unit_bytes == 0 || stripe_unit_bytes % SECTOR_BYTES != 0 {
        return Err(invalid(
            file,
            "array.stripe_unit_bytes",
            format!("must be a positive multiple of {SECTOR_BYTES}, got {stripe_unit_bytes}"),
        ));
    }
    Ok(stripe_unit_bytes)
}

/// RAID-0 and RAID-1 have no parity to rebuild: the keys of RAID-5 and RAID-6 are errors.
fn refuse_parity_keys(section: &ArraySection, file: &str) -> Result<(), ConfigError> {
    let stated = [
        ("array.spare", section.spare.is_some()),
        (
            "array.rebuild_rate_mb_per_s",
            section.rebuild_rate_mb_per_s.is_some(),
        ),
        ("array.failed_member", section.failed_member.is_some()),
        ("array.failed_at_ms", section.failed_at_ms.is_some()),
    ];
    match stated.iter().find(|(_, given)| *given) {
        Some((key, _)) => Err(invalid(
            file,
            key,
            "applies to raid5 and raid6 only: they rebuild a failed member from parity".into(),
        )),
        None => Ok(()),
    }
}

/// The parameters of a RAID-5 or RAID-6 (`level`): stripe unit, rebuild rate, failed member.
fn parity_params(
    section: &ArraySection,
    level: &str,
    file: &str,
) -> Result<ParityParams, ConfigError> {
    if section.read_policy.is_some() {
        return Err(invalid(
            file,
            "array.read_policy",
            format!("applies to raid1 only: a {level} read goes to the members holding its range"),
        ));
    }
    let stripe_unit_bytes = stripe_unit(section, level, file)?;
    let rebuild_rate_bytes_per_s = match section.rebuild_rate_mb_per_s {
        None => DEFAULT_REBUILD_RATE_BYTES_PER_S,
        // Below 1 byte/s the rate rounds to nothing; above 10^12 MB/s it is no limit anyone
        // means, and the product could leave a u64.
        Some(mb) if mb.is_finite() && (1e-6..=1e12).contains(&mb) => (mb * 1e6).round() as u64,
        Some(mb) => {
            return Err(invalid(
                file,
                "array.rebuild_rate_mb_per_s",
                format!("must be from 0.000001 to 1e12 MB/s, got {mb}"),
            ))
        }
    };
    let at = match section.failed_at_ms {
        Some(_) if section.failed_member.is_none() => {
            return Err(invalid(
                file,
                "array.failed_at_ms",
                "needs array.failed_member: the member that fails then".into(),
            ))
        }
        None => SimTime::ZERO,
        Some(ms) if ms.is_finite() && (0.0..=1e12).contains(&ms) => {
            SimTime((ms * 1e6).round() as u64)
        }
        Some(ms) => {
            return Err(invalid(
                file,
                "array.failed_at_ms",
                format!("must be from 0 to 1e12 ms, got {ms}"),
            ))
        }
    };
    Ok(ParityParams {
        stripe_unit_bytes,
        failed_member: section
            .failed_member
            .map(|member| MemberFailure { member, at }),
        rebuild_rate_bytes_per_s,
    })
}

/// Checks what the members' number allows: md's minimum for the level, and a failed member
/// that is one of them.
fn check_members(level: &RaidLevel, members: usize, file: &str) -> Result<(), ConfigError> {
    let (minimum, parity) = match level {
        RaidLevel::Raid5(p) => (2, p),
        RaidLevel::Raid6(p) => (4, p),
        _ => return Ok(()),
    };
    if members < minimum {
        return Err(invalid(
            file,
            "array.children",
            format!(
                "{} needs at least {minimum} members, got {members}",
                level.name()
            ),
        ));
    }
    match parity.failed_member {
        Some(f) if f.member >= members => Err(invalid(
            file,
            "array.failed_member",
            format!(
                "must name one of the {members} members (0 to {}), got {}",
                members - 1,
                f.member
            ),
        )),
        _ => Ok(()),
    }
}

/// Resolves one entry of `children` (`index`) or the spare (`None`): a preset name, or a file
/// relative to the naming file.
fn load_child(
    index: Option<usize>,
    entry: &str,
    file: &str,
    nesting: &Nesting,
) -> Result<LoadedDevice, ConfigError> {
    // A child is named by its index under `children`; the spare by its own key.
    let (key, index) = match index {
        Some(i) => ("array.children", format!("child {i}")),
        None => ("array.spare", "the spare".to_string()),
    };
    if let Some(spec) = preset_spec(entry) {
        let spec = spec.map_err(|message| {
            invalid(file, key, format!("{index} (preset '{entry}'): {message}"))
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
                "{index} '{entry}' is neither a preset (see `storsim presets`) nor a \
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
            format!("{index} '{entry}' contains itself: {}", cycle.join(" -> ")),
        ));
    }
    if nesting.chain.len() >= NESTING_MAX {
        return Err(invalid(
            file,
            key,
            format!("{index} '{entry}': arrays nest at most {NESTING_MAX} files deep"),
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
        "RAID-0 striping, RAID-1 mirroring or RAID-5/6 parity with rebuild over child devices, arrays included";
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

    /// Builds the children in order (then the spare), then the array over them.
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
        let faults = self.children_have_faults();
        if let RaidLevel::Raid5(_) | RaidLevel::Raid6(_) = self.params.level {
            let spare = self
                .spare
                .as_ref()
                .map(|c| {
                    c.spec
                        .build()
                        .map_err(|e| format!("array spare ({}): {e}", c.name))
                })
                .transpose()?;
            let mut array = storsim_array::ParityArray::new(self.params, children, spare)
                .map_err(|e| format!("array: {e}"))?;
            if faults {
                array.enable_fault_counters();
            }
            return Ok(Box::new(array));
        }
        let mut array = storsim_array::ArrayDevice::new(self.params, children)
            .map_err(|e| format!("array: {e}"))?;
        if faults {
            array.enable_fault_counters();
        }
        Ok(Box::new(array))
    }

    fn children_have_faults(&self) -> bool {
        self.children
            .iter()
            .chain(&self.spare)
            .any(|c| c.spec.has_faults())
    }

    /// The children in order, then the spare.
    fn children_mut(&mut self) -> Vec<&mut DeviceSpec> {
        self.children
            .iter_mut()
            .chain(&mut self.spare)
            .map(|c| &mut c.spec)
            .collect()
    }

    /// An array holds its children and spare: the sum of the bounds they report.
    fn state_bytes_bound(&self) -> Option<u64> {
        self.children
            .iter()
            .chain(&self.spare)
            .filter_map(|c| c.spec.state_bytes_bound())
            .reduce(u64::saturating_add)
    }
}
