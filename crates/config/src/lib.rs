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
mod host_interface;
mod merge;
mod models;
pub mod mqsim;
mod presets;

pub use error::ConfigError;
pub use faults::parse_fault_rule;
pub use file::{load_device, load_device_with, parse_device_toml};
pub use host_interface::host_interface_toml;
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
use storsim_hostif::HostInterfaceParams;

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

    /// Whether a faults layer sits over one of the model's children (at any depth); a model
    /// without children has none.
    fn children_have_faults(&self) -> bool {
        false
    }

    /// The model's children's descriptions, in the order [`child_fault_seed`] numbers them
    /// (an array's in its order, a hybrid drive's flash then disk); none for a model without
    /// children.
    fn children_mut(&mut self) -> Vec<&mut DeviceSpec> {
        Vec::new()
    }
}

/// The seed of child `index`'s faults layers in a composite device seeded with `seed`: the
/// first draw of the project's generator seeded with `seed`, forked for the child's index, so
/// that two children with the same rules draw differently, a nested child's seed differs from
/// its parent's siblings', and the same seed always draws the same.
pub fn child_fault_seed(seed: u64, index: usize) -> u64 {
    storsim_core::Prng::new(seed).fork(index as u64).next_u64()
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
/// layers over it: the host interface in front of it (`[host_interface]`) and the faults layer
/// between the two (`[faults]`), if any. It holds one model's [`ModelParams`];
/// [`params`](Self::params) looks at them as their concrete type.
pub struct DeviceSpec {
    model: Box<dyn AnyParams>,
    // The layers are boxed so that a description without them stays small: `into_params`
    // hands the whole description back as its error.
    host_interface: Option<Box<HostInterfaceParams>>,
    faults: Option<Box<FaultPlan>>,
}

impl DeviceSpec {
    /// A description holding `params`, with no host interface and no faults layer.
    pub fn new<P: ModelParams + Clone + PartialEq>(params: P) -> DeviceSpec {
        DeviceSpec {
            model: Box::new(params),
            host_interface: None,
            faults: None,
        }
    }

    /// The faults layer's plan, if the description has one (`[faults]`).
    pub fn faults(&self) -> Option<&FaultPlan> {
        self.faults.as_deref()
    }

    /// Whether a faults layer sits anywhere in the description: over the model, or over a
    /// child of an array or hybrid drive at any depth.
    pub fn has_faults(&self) -> bool {
        self.faults.is_some() || self.model.children_have_faults()
    }

    /// Puts a faults layer with `plan` over the model, or takes it away.
    pub fn set_faults(&mut self, plan: Option<FaultPlan>) {
        self.faults = plan.map(Box::new);
    }

    /// Seeds the faults layer's draws with the run's seed, and those of the layers over the
    /// children of an array or hybrid drive with seeds derived from it
    /// ([`child_fault_seed`]); says whether the description has a layer over its model.
    pub fn seed_faults(&mut self, seed: u64) -> bool {
        for (index, child) in self.children_mut().into_iter().enumerate() {
            child.seed_faults(child_fault_seed(seed, index));
        }
        match &mut self.faults {
            Some(plan) => {
                plan.seed = seed;
                true
            }
            None => false,
        }
    }

    /// The descriptions of the model's children (an array's, a hybrid drive's), numbered as
    /// [`child_fault_seed`] numbers them; empty for a model without children.
    pub fn children_mut(&mut self) -> Vec<&mut DeviceSpec> {
        self.model.children_mut()
    }

    /// The host interface in front of the model (a `[host_interface]` section), if any.
    pub fn host_interface(&self) -> Option<&HostInterfaceParams> {
        self.host_interface.as_deref()
    }

    /// The host interface for changing: a multi-flow workload sets its flows' bindings here
    /// (`HostInterfaceParams::flows`) before the device is built.
    pub fn host_interface_mut(&mut self) -> Option<&mut HostInterfaceParams> {
        self.host_interface.as_deref_mut()
    }

    /// Puts `host_interface` in front of the model (or takes the interface away with `None`).
    pub fn set_host_interface(&mut self, host_interface: Option<HostInterfaceParams>) {
        self.host_interface = host_interface.map(Box::new);
    }

    /// The model's name, as a device file's `model` key writes it.
    pub fn model_name(&self) -> &'static str {
        self.model.model_name()
    }

    /// The parameters, if they are of type `P` (that is, if the model is `P`'s).
    pub fn params<P: ModelParams>(&self) -> Option<&P> {
        self.model.as_any().downcast_ref()
    }

    /// The parameters for changing, if they are of type `P`.
    pub fn params_mut<P: ModelParams>(&mut self) -> Option<&mut P> {
        self.model.as_any_mut().downcast_mut()
    }

    /// The parameters by value, if they are of type `P`; the description itself otherwise. The
    /// layers (host interface, faults), if any, are not part of them.
    pub fn into_params<P: ModelParams>(self) -> Result<P, DeviceSpec> {
        if self.params::<P>().is_some() {
            Ok(*self
                .model
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
        self.model.state_bytes_bound()
    }

    /// Instantiates the model in its initial state. Building can fail for models that do work
    /// up front: an SSD's FTL may find too little spare space in the geometry, and
    /// preconditioning can wear the device out; the message says which and why.
    ///
    /// There is deliberately no capacity query on a description: an SSD's capacity is what its
    /// FTL leaves of the geometry, known only once the FTL is built. Ask the built device.
    pub fn build(&self) -> Result<Box<dyn Device>, String> {
        // The layers from the inside out: faults over the model, the host interface over both,
        // so that injected errors and delays happen at the device, behind the host's queues.
        let model = faults::with_faults(self.model.build()?, self.faults.as_deref());
        host_interface::wrap(model, self.host_interface.as_deref())
    }
}

impl Clone for DeviceSpec {
    fn clone(&self) -> Self {
        DeviceSpec {
            model: self.model.clone_box(),
            host_interface: self.host_interface.clone(),
            faults: self.faults.clone(),
        }
    }
}

impl PartialEq for DeviceSpec {
    fn eq(&self, other: &Self) -> bool {
        self.model.eq_dyn(other.model.as_ref())
            && self.host_interface == other.host_interface
            && self.faults == other.faults
    }
}

impl fmt::Debug for DeviceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.model.fmt(f)?;
        if let Some(faults) = &self.faults {
            write!(f, " with {faults:?}")?;
        }
        match &self.host_interface {
            Some(host_interface) => write!(f, " behind {host_interface:?}"),
            None => Ok(()),
        }
    }
}

/// A device description with the name the user knows it by (preset name or file path).
#[derive(Clone, Debug, PartialEq)]
pub struct LoadedDevice {
    pub name: String,
    pub spec: DeviceSpec,
}
