//! Fairness between flows, as MQSim's paper defines it (Tavakkol et al., FAST'18, §5): each
//! flow's slowdown is its mean response time when it shares the device over its mean response
//! time when it runs alone on it, and fairness is the smallest slowdown over the largest (1 is
//! perfectly fair, near 0 one flow pays for the others).

use crate::{open_flows, SimError};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use storsim_config::LoadedDevice;
use storsim_engine::{EngineOptions, Simulation};
use storsim_stats::{Collector, CollectorOptions, Summary};
use storsim_workload::flows::FlowSpec;
use storsim_workload::trace::TraceOptions;

/// The flows' slowdowns and the fairness over them.
#[derive(Clone, Debug, PartialEq)]
pub struct Fairness {
    /// Each flow's shared mean response time over its alone one, in the flows' order; `None`
    /// for a flow that completed no request in one of the runs.
    pub slowdowns: Vec<Option<f64>>,
    /// The smallest slowdown over the largest, over the flows that have one; `None` when no
    /// flow has one.
    pub fairness: Option<f64>,
}

/// The slowdowns and fairness of flows whose shared-run statistics are `shared` and whose
/// alone-run statistics are `alone`, both in the flows' order.
pub fn fairness(shared: &[Summary], alone: &[Summary]) -> Fairness {
    let slowdowns: Vec<Option<f64>> = shared
        .iter()
        .zip(alone)
        .map(|(s, a)| {
            let (s, a) = (&s.all, &a.all);
            (s.requests > 0 && a.requests > 0 && a.latency_ns.mean > 0.0)
                .then(|| s.latency_ns.mean / a.latency_ns.mean)
        })
        .collect();
    let known: Vec<f64> = slowdowns.iter().flatten().copied().collect();
    let fairness = (!known.is_empty()).then(|| {
        let min = known.iter().copied().fold(f64::INFINITY, f64::min);
        let max = known.iter().copied().fold(0.0, f64::max);
        min / max
    });
    Fairness {
        slowdowns,
        fairness,
    }
}

/// Runs each flow of `flows` alone on a device built afresh from `device`, with the seed it
/// has in the shared run (`seed` plus its index) and the same engine `options`, on up to
/// `jobs` threads; returns each run's statistics in the flows' order. The results do not
/// depend on `jobs`: every run is independent and deterministic.
pub fn run_alone(
    device: &LoadedDevice,
    flows: &[FlowSpec],
    trace_options: &TraceOptions,
    seed: u64,
    options: &EngineOptions,
    jobs: usize,
) -> Result<Vec<Summary>, SimError> {
    let jobs = jobs.clamp(1, flows.len().max(1));
    // Each thread takes the next flow not yet taken and leaves its result in the flow's slot.
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<Result<Summary, SimError>>>> =
        (0..flows.len()).map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= flows.len() {
                    break;
                }
                let result =
                    run_one_alone(device, &flows[index], trace_options, seed, index, options);
                *slots[index]
                    .lock()
                    .expect("no thread panics holding a slot") = Some(result);
            });
        }
    });
    slots
        .into_iter()
        .map(|slot| {
            slot.into_inner()
                .expect("no thread panics holding a slot")
                .expect("every flow was run")
        })
        .collect()
}

/// Flow `index` of a shared run, alone on a fresh device.
fn run_one_alone(
    device: &LoadedDevice,
    flow: &FlowSpec,
    trace_options: &TraceOptions,
    seed: u64,
    index: usize,
    options: &EngineOptions,
) -> Result<Summary, SimError> {
    // Alone, the flow is flow 0: its queues, class and partitions go with it.
    let mut device = device.clone();
    crate::binding::bind_flows(&mut device, std::slice::from_ref(flow))?;
    // As the shared run's session does: the faults draw from the run's seed.
    device.spec.seed_faults(seed);
    let collector_options = CollectorOptions {
        latency_includes_failed: false,
        errors_counted: device.spec.has_faults(),
    };
    let mut built = device
        .spec
        .build()
        .map_err(|e| SimError::Device(format!("{}: {e}", device.name)))?;
    let seed = seed.wrapping_add(index as u64);
    let mut opened = open_flows(
        std::slice::from_ref(flow),
        trace_options,
        built.capacity_bytes(),
        seed,
    )?;
    let mut collector = Collector::with_options(collector_options);
    let mut sink = |c: &storsim_core::Completion| collector.record(c);
    let engine_flows = opened
        .iter_mut()
        .map(crate::OpenedFlow::engine_flow)
        .collect();
    Simulation::flows(built.as_mut(), engine_flows, *options)
        .sink(&mut sink)
        .run()
        .map_err(SimError::Engine)?;
    Ok(collector.summary())
}

#[cfg(test)]
mod tests {
    use super::*;
    use storsim_core::{Completion, Op, Request, SimTime};

    fn summary(latencies_ns: &[u64]) -> Summary {
        let mut collector = Collector::new();
        for (i, &l) in latencies_ns.iter().enumerate() {
            let request = Request {
                id: i as u64,
                op: Op::Read,
                offset_bytes: 0,
                len_bytes: 4096,
                arrival: SimTime(0),
                flow: 0,
            };
            collector.record(&Completion {
                request,
                service_start: SimTime(0),
                finish: SimTime(l),
                status: storsim_core::Status::Ok,
            });
        }
        collector.summary()
    }

    #[test]
    fn slowdown_is_shared_over_alone_and_fairness_min_over_max() {
        let shared = [summary(&[200_000, 200_000]), summary(&[300_000])];
        let alone = [summary(&[100_000]), summary(&[300_000])];
        let f = fairness(&shared, &alone);
        let s: Vec<f64> = f.slowdowns.iter().map(|s| s.unwrap()).collect();
        assert!(
            (s[0] - 2.0).abs() < 0.02 && (s[1] - 1.0).abs() < 0.01,
            "{s:?}"
        );
        assert!((f.fairness.unwrap() - s[1] / s[0]).abs() < 1e-12);
        let empty = fairness(&[summary(&[])], &[summary(&[100])]);
        assert_eq!(empty.slowdowns, vec![None]);
        assert_eq!(empty.fairness, None);
    }
}
