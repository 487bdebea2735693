//! What the array tests share: linear children with one cost for every pattern, a child that
//! fails on demand, and the conformance kit's recorder (what the array handed each child) and
//! open-loop driver (which checks the Device contract on every call).

#![allow(dead_code)]

use storsim_array::{ArrayDevice, ArrayParams, RaidLevel};
use storsim_blackbox::linear::{LinearCost, LinearDevice, LinearParams};
use storsim_blackbox::SequentialDetect;
use storsim_core::conformance::{self, Recorder};
pub use storsim_core::conformance::{Run, SharedLog};
use storsim_core::{
    Completion, Device, DeviceCounter, DeviceError, Op, Request, SimDuration, SimTime,
};

/// Parameters of a linear child whose four patterns all cost A + n·B, so that its service
/// times do not depend on how it classifies a piece.
pub fn linear_params(
    capacity_bytes: u64,
    a_us: f64,
    b_us_per_kib: f64,
    queue_depth: usize,
) -> LinearParams {
    let cost = LinearCost::from_us(a_us, b_us_per_kib);
    LinearParams {
        capacity_bytes,
        costs: [cost; 4],
        trim: SimDuration::from_us(7),
        flush: SimDuration::from_us(11),
        sequential_detect: SequentialDetect::PreviousRequest,
        servers: 1,
        queue_depth,
    }
}

pub fn linear(
    capacity_bytes: u64,
    a_us: f64,
    b_us_per_kib: f64,
    queue_depth: usize,
) -> Box<dyn Device> {
    Box::new(LinearDevice::new(linear_params(
        capacity_bytes,
        a_us,
        b_us_per_kib,
        queue_depth,
    )))
}

/// Wraps a child in the conformance kit's recorder, which logs the traffic between it and the
/// array.
pub fn recorded(inner: Box<dyn Device>) -> (Box<dyn Device>, SharedLog) {
    Recorder::boxed(inner)
}

/// A child that accepts `accept` requests and then fails, as a worn-out SSD does: it refuses
/// everything with `Failed` but still completes what it accepted.
pub struct FailsAfter {
    inner: Box<dyn Device>,
    accept: usize,
}

pub fn fails_after(inner: Box<dyn Device>, accept: usize) -> Box<dyn Device> {
    Box::new(FailsAfter { inner, accept })
}

impl Device for FailsAfter {
    fn model_name(&self) -> &'static str {
        self.inner.model_name()
    }
    fn capacity_bytes(&self) -> u64 {
        self.inner.capacity_bytes()
    }
    fn queue_depth(&self) -> usize {
        self.inner.queue_depth()
    }
    fn submit(&mut self, now: SimTime, request: Request) -> Result<(), DeviceError> {
        if self.accept == 0 {
            return Err(DeviceError::Failed {
                reason: "worn out".into(),
            });
        }
        self.inner.submit(now, request)?;
        self.accept -= 1;
        Ok(())
    }
    fn next_deadline(&self) -> Option<SimTime> {
        self.inner.next_deadline()
    }
    fn advance(&mut self, now: SimTime, done: &mut Vec<Completion>) {
        self.inner.advance(now, done)
    }
    fn counters(&self) -> Vec<DeviceCounter> {
        self.inner.counters()
    }
    fn counter_descriptors(&self) -> Vec<storsim_core::Described> {
        self.inner.counter_descriptors()
    }
    fn parts(&self) -> Vec<storsim_core::DevicePart> {
        self.inner.parts()
    }
}

pub fn raid0(
    stripe_unit_bytes: u64,
    queue_depth: usize,
    children: Vec<Box<dyn Device>>,
) -> ArrayDevice {
    ArrayDevice::new(
        ArrayParams {
            level: RaidLevel::Raid0 { stripe_unit_bytes },
            queue_depth,
        },
        children,
    )
    .expect("a valid array")
}

pub fn req(id: u64, op: Op, offset_bytes: u64, len_bytes: u64, arrival_ns: u64) -> Request {
    Request {
        id,
        op,
        offset_bytes,
        len_bytes,
        arrival: SimTime(arrival_ns),
        flow: 0,
    }
}

/// Drives `device` open loop with the conformance kit's driver, which submits as the engine
/// does and checks the Device contract on every call.
pub fn drive(device: &mut dyn Device, requests: &[Request]) -> Run {
    conformance::drive(device, requests).unwrap_or_else(|violation| panic!("{violation}"))
}

/// Asserts that each of `requests` (up to the first refused one) completed exactly once.
pub fn assert_each_completed_once(requests: &[Request], run: &Run) {
    let issued: Vec<u64> = requests
        .iter()
        .map(|r| r.id)
        .take_while(|&id| Some(id) != run.failed_at)
        .collect();
    let mut seen: Vec<u64> = run.completions.iter().map(|c| c.request.id).collect();
    seen.sort_unstable();
    let mut expected = issued.clone();
    expected.sort_unstable();
    assert_eq!(
        seen, expected,
        "every accepted request completes exactly once"
    );
    for c in &run.completions {
        let original = requests.iter().find(|r| r.id == c.request.id).unwrap();
        assert_eq!(&c.request, original, "a completion echoes its request");
    }
}

/// A RAID-5 (`parities` 1) or RAID-6 (2) array with chunks of `stripe_unit_bytes`, a member
/// failed at `failed` (member, ns) if given, and the rebuild rate `rate` in bytes/s.
pub fn parity_array(
    parities: usize,
    stripe_unit_bytes: u64,
    queue_depth: usize,
    members: Vec<Box<dyn Device>>,
    spare: Option<Box<dyn Device>>,
    failed: Option<(usize, u64)>,
    rebuild_rate_bytes_per_s: u64,
) -> storsim_array::ParityArray {
    use storsim_array::{MemberFailure, ParityArray, ParityParams};
    let p = ParityParams {
        stripe_unit_bytes,
        failed_member: failed.map(|(member, at_ns)| MemberFailure {
            member,
            at: SimTime(at_ns),
        }),
        rebuild_rate_bytes_per_s,
    };
    let level = if parities == 1 {
        RaidLevel::Raid5(p)
    } else {
        RaidLevel::Raid6(p)
    };
    ParityArray::new(ArrayParams { level, queue_depth }, members, spare).expect("a valid array")
}
