//! Device descriptions: presets and TOML files, validated into the plain parameter structs the
//! models take. This is the only crate that knows the device-file format; models never see it.
//!
//! A device file names a `model` (or starts from a `preset`) and overrides what it needs:
//!
//! ```toml
//! preset = "stec-zeus"
//! capacity_bytes = 1_000_000_000
//! [linear.sr]
//! a_us = 100.0
//! ```
//!
//! or, for a flash SSD:
//!
//! ```toml
//! preset = "flashsim-2009"
//! [ssd]
//! ftl = "page"
//! [ssd.page]
//! gc_policy = "cost-benefit"
//! ```
//! See docs/config.md; each model's section is described in docs/models/NAME.md.

pub mod disksim;
mod error;
mod file;
mod merge;
mod models;
mod presets;

pub use error::ConfigError;
pub use file::{load_device, load_device_with, parse_device_toml};
pub use models::array::ArraySpec;
pub use models::blackbox_device_toml;
pub use models::ftl::ftl_section_toml;
pub use models::hybrid::{HybridConfiguration, HybridSpec};
pub use presets::{preset, preset_spec, presets, PresetInfo};

use storsim_blackbox::linear::{LinearDevice, LinearParams};
use storsim_blackbox::step::{StepDevice, StepParams};
use storsim_blackbox::table::{TableDevice, TableParams};
use storsim_core::Device;
use storsim_ssd::{Precondition, SsdDevice, SsdParams};

/// See [`DeviceSpec::state_bytes_bound`].
pub const SSD_STATE_BYTES_PER_PAGE: u64 = 16;

/// A fully resolved device description: which model, with every parameter set.
// A description is built once per run and moved a handful of times, so the size of its largest
// variant (a disk's parameters) costs nothing worth an indirection.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum DeviceSpec {
    Linear(LinearParams),
    Table(TableParams),
    Step(StepParams),
    Ssd(SsdParams),
    /// RAID-0 / RAID-1 over child devices, each resolved in full.
    Array(ArraySpec),
    /// A hybrid flash + disk drive over two children, each resolved in full.
    Hybrid(HybridSpec),
    Hdd(storsim_hdd::HddParams),
}

impl DeviceSpec {
    pub fn model_name(&self) -> &'static str {
        match self {
            DeviceSpec::Linear(_) => "linear",
            DeviceSpec::Table(_) => "table",
            DeviceSpec::Step(_) => "step",
            DeviceSpec::Ssd(_) => "ssd",
            DeviceSpec::Array(_) => "array",
            DeviceSpec::Hybrid(_) => "hybrid",
            DeviceSpec::Hdd(_) => "hdd",
        }
    }

    /// An upper bound on the memory the built model holds, in bytes. Only models whose state
    /// grows with the device report one: an SSD's FTL keeps maps and per-page state, at most
    /// [`SSD_STATE_BYTES_PER_PAGE`] bytes a physical page (the page FTL measures under 8).
    /// Drivers compare it with the memory they have before building, so that an oversized
    /// geometry is an error rather than an allocation failure.
    pub fn state_bytes_bound(&self) -> Option<u64> {
        match self {
            DeviceSpec::Ssd(p) => Some(p.geometry.pages() as u64 * SSD_STATE_BYTES_PER_PAGE),
            DeviceSpec::Linear(_) | DeviceSpec::Table(_) | DeviceSpec::Step(_) => None,
            // A hybrid holds its two children: the sum of the bounds they report.
            // A disk's state is its cache segments and queue, independent of its size.
            DeviceSpec::Hdd(_) => None,
            DeviceSpec::Hybrid(h) => [&h.flash, &h.disk]
                .iter()
                .filter_map(|c| c.spec.state_bytes_bound())
                .reduce(u64::saturating_add),
            // An array holds its children: the sum of the bounds they report.
            DeviceSpec::Array(a) => a
                .children
                .iter()
                .filter_map(|c| c.spec.state_bytes_bound())
                .reduce(u64::saturating_add),
        }
    }

    /// Instantiates the model in its initial state. Building can fail for models that do work
    /// up front: an SSD's FTL may find too little spare space in the geometry, and
    /// preconditioning can wear the device out; the message says which and why.
    ///
    /// There is deliberately no capacity query on a description: an SSD's capacity is what its
    /// FTL leaves of the geometry, known only once the FTL is built. Ask the built device.
    pub fn build(&self) -> Result<Box<dyn Device>, String> {
        Ok(match self {
            DeviceSpec::Linear(p) => Box::new(LinearDevice::new(p.clone())),
            DeviceSpec::Table(p) => Box::new(TableDevice::new(p.clone())),
            DeviceSpec::Step(p) => Box::new(StepDevice::new(p.clone())),
            DeviceSpec::Ssd(p) => Box::new(SsdDevice::new(p.clone()).map_err(|e| {
                format!(
                    "ssd with the `{}` FTL and {} preconditioning: {e}",
                    p.ftl.name(),
                    precondition_name(p)
                )
            })?),
            DeviceSpec::Array(a) => Box::new(build_array(a)?),
            DeviceSpec::Hybrid(h) => build_hybrid(h)?,
            DeviceSpec::Hdd(p) => {
                Box::new(storsim_hdd::HddDevice::new(p.clone()).map_err(|e| format!("hdd: {e}"))?)
            }
        })
    }
}

/// Builds a hybrid's flash and disk, then the hybrid over them.
fn build_hybrid(h: &HybridSpec) -> Result<Box<dyn Device>, String> {
    let flash = h
        .flash
        .spec
        .build()
        .map_err(|e| format!("hybrid flash ({}): {e}", h.flash.name))?;
    let disk = h
        .disk
        .spec
        .build()
        .map_err(|e| format!("hybrid disk ({}): {e}", h.disk.name))?;
    Ok(match &h.configuration {
        HybridConfiguration::Controller(p) => Box::new(
            storsim_hybrid::HybridDevice::new(p.clone(), flash, disk)
                .map_err(|e| format!("hybrid: {e}"))?,
        ),
        HybridConfiguration::Host(p) => Box::new(
            storsim_hybrid::HostTieredDevice::new(p.clone(), flash, disk)
                .map_err(|e| format!("hybrid: {e}"))?,
        ),
    })
}

/// Builds an array's children in order, then the array over them.
fn build_array(a: &ArraySpec) -> Result<storsim_array::ArrayDevice, String> {
    let children = a
        .children
        .iter()
        .enumerate()
        .map(|(i, c)| {
            c.spec
                .build()
                .map_err(|e| format!("array child {i} ({}): {e}", c.name))
        })
        .collect::<Result<Vec<_>, _>>()?;
    storsim_array::ArrayDevice::new(a.params, children).map_err(|e| format!("array: {e}"))
}

/// The preconditioning mode as files write it, for build errors.
fn precondition_name(p: &SsdParams) -> &'static str {
    match p.precondition {
        Precondition::Clean => "clean",
        Precondition::SequentialFill { .. } => "sequential-fill",
        Precondition::SteadyState { .. } => "steady-state",
    }
}

/// A device description with the name the user knows it by (preset name or file path).
#[derive(Clone, Debug, PartialEq)]
pub struct LoadedDevice {
    pub name: String,
    pub spec: DeviceSpec,
}
