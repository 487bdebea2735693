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
mod faults;
mod file;
mod merge;
mod models;
mod presets;

pub use error::ConfigError;
pub use faults::parse_fault_rule;
pub use file::{load_device, load_device_with, parse_device_toml};
pub use models::array::ArraySpec;
pub use models::blackbox_device_toml;
pub use models::ftl::ftl_section_toml;
pub use models::hybrid::{HybridConfiguration, HybridSpec};
pub use models::ssd::{precondition_ssds, PreconditionMode};
pub use presets::{preset, preset_spec, presets, PresetInfo};
pub use storsim_faults::{FaultControl, FaultPlan};

pub use models::{models, ModelInfo};

use std::any::Any;
use std::fmt;
use storsim_core::Device;

/// See [`DeviceSpec::state_bytes_bound`].
pub const SSD_STATE_BYTES_PER_PAGE: u64 = 16;

/// A model's fully resolved parameters: what a [`DeviceSpec`] holds. Each device model
/// implements it for its parameter struct, next to its TOML section in `models/`, and has one
/// entry in the model table there.
pub trait ModelParams: fmt::Debug + Send + Sync + 'static {
    /// The model's name, as a device file's `model` key writes it.
    fn model_name(&self) -> &'static str;

    /// Instantiates the model in its initial state; the message says why it cannot be built.
    fn build(&self) -> Result<Box<dyn Device>, String>;

    /// See [`DeviceSpec::state_bytes_bound`]; `None` for models whose state does not grow with
    /// the device.
    fn state_bytes_bound(&self) -> Option<u64> {
        None
    }
}

/// What [`DeviceSpec`] needs of its parameters beyond [`ModelParams`]: copying, comparing and
/// looking at the concrete type, which a trait object cannot derive.
trait AnyParams: ModelParams {
    fn clone_box(&self) -> Box<dyn AnyParams>;
    fn eq_dyn(&self, other: &dyn AnyParams) -> bool;
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
}

impl<P: ModelParams + Clone + PartialEq> AnyParams for P {
    fn clone_box(&self) -> Box<dyn AnyParams> {
        Box::new(self.clone())
    }

    fn eq_dyn(&self, other: &dyn AnyParams) -> bool {
        other.as_any().downcast_ref::<P>() == Some(self)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

/// A fully resolved device description: which model, with every parameter set, and the
/// layers over it (a `[faults]` section's plan). It holds one model's [`ModelParams`];
/// [`params`](Self::params) looks at them as their concrete type.
pub struct DeviceSpec(Box<dyn AnyParams>, Option<FaultPlan>);

impl DeviceSpec {
    /// A description holding `params`.
    pub fn new<P: ModelParams + Clone + PartialEq>(params: P) -> DeviceSpec {
        DeviceSpec(Box::new(params), None)
    }

    /// The faults layer's plan, if the description has one (`[faults]`).
    pub fn faults(&self) -> Option<&FaultPlan> {
        self.1.as_ref()
    }

    /// Puts a faults layer with `plan` over the model, or takes it away.
    pub fn set_faults(&mut self, plan: Option<FaultPlan>) {
        self.1 = plan;
    }

    /// Seeds the faults layer's draws with the run's seed; says whether there is a layer.
    pub fn seed_faults(&mut self, seed: u64) -> bool {
        match &mut self.1 {
            Some(plan) => {
                plan.seed = seed;
                true
            }
            None => false,
        }
    }

    /// The model's name, as a device file's `model` key writes it.
    pub fn model_name(&self) -> &'static str {
        self.0.model_name()
    }

    /// The parameters, if they are of type `P` (that is, if the model is `P`'s).
    pub fn params<P: ModelParams>(&self) -> Option<&P> {
        self.0.as_any().downcast_ref()
    }

    /// The parameters for changing, if they are of type `P`.
    pub fn params_mut<P: ModelParams>(&mut self) -> Option<&mut P> {
        self.0.as_any_mut().downcast_mut()
    }

    /// The parameters by value, if they are of type `P`; the description itself otherwise.
    pub fn into_params<P: ModelParams>(self) -> Result<P, DeviceSpec> {
        if self.params::<P>().is_some() {
            Ok(*self
                .0
                .into_any()
                .downcast::<P>()
                .expect("the type was checked just before"))
        } else {
            Err(self)
        }
    }

    /// An upper bound on the memory the built model holds, in bytes. Only models whose state
    /// grows with the device report one: an SSD's FTL keeps maps and per-page state, at most
    /// [`SSD_STATE_BYTES_PER_PAGE`] bytes a physical page (the page FTL measures under 8); a
    /// composite device reports the sum of its children's bounds.
    /// Drivers compare it with the memory they have before building, so that an oversized
    /// geometry is an error rather than an allocation failure.
    pub fn state_bytes_bound(&self) -> Option<u64> {
        self.0.state_bytes_bound()
    }

    /// Instantiates the model in its initial state. Building can fail for models that do work
    /// up front: an SSD's FTL may find too little spare space in the geometry, and
    /// preconditioning can wear the device out; the message says which and why.
    ///
    /// There is deliberately no capacity query on a description: an SSD's capacity is what its
    /// FTL leaves of the geometry, known only once the FTL is built. Ask the built device.
    pub fn build(&self) -> Result<Box<dyn Device>, String> {
        Ok(faults::with_faults(self.0.build()?, self.1.as_ref()))
    }
}

impl Clone for DeviceSpec {
    fn clone(&self) -> Self {
        DeviceSpec(self.0.clone_box(), self.1.clone())
    }
}

impl PartialEq for DeviceSpec {
    fn eq(&self, other: &Self) -> bool {
        self.0.eq_dyn(other.0.as_ref()) && self.1 == other.1
    }
}

impl fmt::Debug for DeviceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A device description with the name the user knows it by (preset name or file path).
#[derive(Clone, Debug, PartialEq)]
pub struct LoadedDevice {
    pub name: String,
    pub spec: DeviceSpec,
}
