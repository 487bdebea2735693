//! A device wrapper that logs the traffic through it, for tests that check what a composite
//! device (an array, a hybrid drive) handed its children.

use crate::counter::Described;
use crate::device::{BlockWear, Device, DeviceCounter, DeviceError, DevicePart};
use crate::request::{Completion, Op, Request};
use crate::time::SimTime;
use std::sync::{Arc, Mutex};

/// What a [`Recorder`] saw, in call order.
#[derive(Clone, Debug, Default)]
pub struct Log {
    /// Each accepted submission with the instant it was made.
    pub submitted: Vec<(SimTime, Request)>,
    /// Each refused submission with its instant and the device's answer.
    pub refused: Vec<(SimTime, Request, DeviceError)>,
    /// Each completion, as `advance` reported it.
    pub completed: Vec<Completion>,
}

impl Log {
    /// How many accepted submissions were of `op`.
    pub fn submitted_count(&self, op: Op) -> usize {
        self.submitted.iter().filter(|(_, r)| r.op == op).count()
    }
}

/// The log a [`Recorder`] writes, shared with the test that reads it after the wrapped device
/// has been handed to its parent. A mutex rather than a cell because devices are `Send`.
pub type SharedLog = Arc<Mutex<Log>>;

/// Wraps a device and logs every submission (accepted or refused) and every completion; it
/// passes every call through unchanged, prefetch hints included.
pub struct Recorder<D: Device = Box<dyn Device>> {
    inner: D,
    log: SharedLog,
}

impl<D: Device> Recorder<D> {
    /// The wrapper and a handle on its log.
    pub fn new(inner: D) -> (Self, SharedLog) {
        let log = SharedLog::default();
        (
            Recorder {
                inner,
                log: log.clone(),
            },
            log,
        )
    }

    /// The wrapper, boxed for a parent that takes `Box<dyn Device>` children, and its log.
    pub fn boxed(inner: D) -> (Box<dyn Device>, SharedLog)
    where
        D: 'static,
    {
        let (recorder, log) = Recorder::new(inner);
        (Box::new(recorder), log)
    }
}

impl<D: Device> Device for Recorder<D> {
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
        let answer = self.inner.submit(now, request);
        let mut log = self.log.lock().expect("a recorder's log is never poisoned");
        match &answer {
            Ok(()) => log.submitted.push((now, request)),
            Err(e) => log.refused.push((now, request, e.clone())),
        }
        answer
    }
    fn next_deadline(&self) -> Option<SimTime> {
        self.inner.next_deadline()
    }
    fn advance(&mut self, now: SimTime, done: &mut Vec<Completion>) {
        let from = done.len();
        self.inner.advance(now, done);
        self.log
            .lock()
            .expect("a recorder's log is never poisoned")
            .completed
            .extend_from_slice(&done[from..]);
    }
    fn counters(&self) -> Vec<DeviceCounter> {
        self.inner.counters()
    }
    fn counter_values(&self, values: &mut Vec<f64>) {
        self.inner.counter_values(values)
    }
    fn counter_descriptors(&self) -> Vec<Described> {
        self.inner.counter_descriptors()
    }
    fn parts(&self) -> Vec<DevicePart> {
        self.inner.parts()
    }
    fn prefetch(&self, request: &Request) {
        self.inner.prefetch(request)
    }
    fn block_wear(&self) -> Vec<BlockWear> {
        self.inner.block_wear()
    }
}
