//! Host interface models in front of any device: NVMe submission/completion queue pairs with
//! doorbells, fetch rounds and (weighted) round-robin arbitration over a PCIe link, and SATA
//! with native command queueing over its half-duplex link. See docs/models/host-interface.md.
//!
//! [`HostInterfaceDevice`] wraps any `Box<dyn Device>` and keeps the Device contract itself.
//! A host request enters the submission queue its flow is bound to ([`FlowBinding`], keyed by
//! `Request::flow`) and rings the doorbell. The controller runs arbitration rounds: each
//! fetches up to `fetch_per_round` commands, at most `queue_fetch_size` from one queue, chosen
//! by the arbitration, and only as many as the device behind it has room for. A fetched
//! command crosses the link (its submission entry), is processed by the controller (one at a
//! time), has its data cross the link if it is a write, and is handed to the inner device;
//! when the inner device finishes it, its data (a read's) and its completion entry cross the
//! link back, and the host sees it complete. Each direction of the link carries one transfer
//! at a time, in the order they become ready (a half-duplex link carries one for both).
//!
//! The model is deterministic and reads no clock: ties between events are broken by the order
//! they were scheduled, and completions at one instant are reported in submission order.

mod arbiter;
mod device;
mod params;

pub use device::{HostInterfaceDevice, COUNTERS, QUEUE_COUNTERS};
pub use params::{
    Arbitration, Encoding, FlowBinding, HostInterfaceParams, LinkParams, Priority, Protocol,
    QUEUES_MAX, SATA_NCQ_DEPTH,
};

use std::fmt;

/// Why host interface parameters were refused: the parameter (named as a `[host_interface]`
/// key, or `flows` for the bindings) and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostIfError {
    /// The parameter, as a device file's `[host_interface]` section names it.
    pub param: &'static str,
    /// What is wrong, in a sentence.
    pub message: String,
}

impl HostIfError {
    pub(crate) fn new(param: &'static str, message: String) -> HostIfError {
        HostIfError { param, message }
    }
}

impl fmt::Display for HostIfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "host interface `{}`: {}", self.param, self.message)
    }
}

impl std::error::Error for HostIfError {}
