//! What the array tests share: linear children with one cost for every pattern, a recording
//! wrapper that shows what the array handed each child, a child that fails on demand, and an
//! open-loop driver that follows the Device contract the way the engine does.

#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use storsim_array::{ArrayDevice, ArrayParams, RaidLevel};
use storsim_blackbox::linear::{LinearCost, LinearDevice, LinearParams};
use storsim_blackbox::SequentialDetect;
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

/// What a recorded child saw: each accepted submission with its instant, each completion.
#[derive(Default, Debug)]
pub struct Log {
    pub submitted: Vec<(SimTime, Request)>,
    pub refused: Vec<(SimTime, Request)>,
    pub completed: Vec<Completion>,
}

pub type SharedLog = Arc<Mutex<Log>>;

/// Wraps a child and logs the traffic between it and the array.
pub struct Recorded {
    inner: Box<dyn Device>,
    log: SharedLog,
}

pub fn recorded(inner: Box<dyn Device>) -> (Box<dyn Device>, SharedLog) {
    let log = SharedLog::default();
    (
        Box::new(Recorded {
            inner,
            log: log.clone(),
        }),
        log,
    )
}

impl Device for Recorded {
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
        let result = self.inner.submit(now, request);
        let mut log = self.log.lock().unwrap();
        match result {
            Ok(()) => log.submitted.push((now, request)),
            Err(_) => log.refused.push((now, request)),
        }
        result
    }
    fn next_deadline(&self) -> Option<SimTime> {
        self.inner.next_deadline()
    }
    fn advance(&mut self, now: SimTime, done: &mut Vec<Completion>) {
        let from = done.len();
        self.inner.advance(now, done);
        self.log
            .lock()
            .unwrap()
            .completed
            .extend_from_slice(&done[from..]);
    }
    fn counters(&self) -> Vec<DeviceCounter> {
        self.inner.counters()
    }
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
    }
}

/// How a driven run ended.
pub struct Run {
    pub completions: Vec<Completion>,
    /// The id of the request the device refused with `Failed`, if it did; issuing stops there.
    pub failed_at: Option<u64>,
}

/// Drives `device` open loop as the engine does: requests (sorted by arrival) are submitted at
/// their arrival or, when the device is full, at the next completion; between arrivals the
/// device is advanced to its deadlines. Checks the contract on every completion.
pub fn drive(device: &mut dyn Device, requests: &[Request]) -> Run {
    let mut completions = Vec::new();
    let mut next = 0;
    let mut now = SimTime::ZERO;
    let mut outstanding = 0usize;
    let mut failed_at = None;
    let mut done = Vec::new();
    loop {
        let arrival = requests.get(next).map(|r| r.arrival.max(now));
        let can_submit = outstanding < device.queue_depth() && failed_at.is_none();
        let at = match (arrival.filter(|_| can_submit), device.next_deadline()) {
            (Some(a), Some(d)) => a.min(d),
            (Some(a), None) => a,
            (None, Some(d)) => d,
            (None, None) => break,
        };
        assert!(at >= now, "the device's deadline went back in time");
        now = at;
        device.advance(now, &mut done);
        for c in done.drain(..) {
            assert!(
                c.finish <= now,
                "completion {} reported early",
                c.request.id
            );
            assert!(c.request.arrival <= c.service_start && c.service_start <= c.finish);
            outstanding -= 1;
            completions.push(c);
        }
        while failed_at.is_none()
            && next < requests.len()
            && requests[next].arrival <= now
            && outstanding < device.queue_depth()
        {
            match device.submit(now, requests[next]) {
                Ok(()) => {
                    outstanding += 1;
                    next += 1;
                }
                Err(DeviceError::QueueFull { .. }) => break,
                Err(DeviceError::Failed { .. }) => failed_at = Some(requests[next].id),
                Err(e) => panic!("request {} refused: {e}", requests[next].id),
            }
        }
        if (next == requests.len() || failed_at.is_some()) && outstanding == 0 {
            break;
        }
    }
    assert_eq!(outstanding, 0, "requests left in the device");
    Run {
        completions,
        failed_at,
    }
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
