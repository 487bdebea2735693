//! Shared pieces of the host interface's tests: a device behind it whose timing is known.

#![allow(dead_code)]

use storsim_blackbox::linear::{LinearCost, LinearDevice, LinearParams};
use storsim_blackbox::SequentialDetect;
use storsim_core::{Device, Op, Request, SimDuration, SimTime};
use storsim_hostif::{HostInterfaceDevice, HostInterfaceParams};

/// A device that serves every request in `service_us` (any size, any pattern), `servers` at
/// a time in arrival order, holding `queue_depth`.
pub fn fixed(service_us: f64, servers: usize, queue_depth: usize) -> Box<dyn Device> {
    let cost = LinearCost::from_us(service_us, 0.0);
    Box::new(LinearDevice::new(LinearParams {
        capacity_bytes: 1 << 30,
        costs: [cost; 4],
        trim: SimDuration::from_us_f64(service_us),
        flush: SimDuration::from_us_f64(service_us),
        sequential_detect: SequentialDetect::PreviousRequest,
        servers,
        queue_depth,
    }))
}

/// The interface `params` describes in front of `inner`.
pub fn hostif(params: HostInterfaceParams, inner: Box<dyn Device>) -> HostInterfaceDevice {
    HostInterfaceDevice::new(params, inner).expect("valid parameters")
}

/// A request of `flow` arriving at `arrival_ns`.
pub fn request(id: u64, op: Op, len_bytes: u64, arrival_ns: u64, flow: u16) -> Request {
    Request {
        id,
        op,
        offset_bytes: id * 4096,
        len_bytes,
        arrival: SimTime::from_ns(arrival_ns),
        flow,
    }
}
