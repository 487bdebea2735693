//! The simulation engine: drives a [`Device`] with a [`Workload`] in virtual time, as fast as
//! the CPU allows, and hands every completion to a sink.
//!
//! The engine jumps from event to event: the next arrival or the device's next deadline,
//! whichever comes first. It holds at most one pending record per free slot, so memory does not
//! grow with the workload; requests that arrive while the device queue is full wait at the host
//! and their wait counts as queueing.
//!
//! # As a library
//!
//! A run is a [`Simulation`]: a device (any [`Device`], such as one `storsim_config` built from
//! a device file), a [`Workload`] (a trace opened by `storsim_workload::trace::open` or a
//! synthetic one), [`EngineOptions`], and optionally a [`CompletionSink`] that sees every
//! completion, a progress callback, and a [`CancelToken`] another thread may use to stop it.
//! The result is a [`RunInfo`]; per-request statistics are the sink's business (the CLI's sink
//! is a `storsim_stats::Collector`).
//!
//! ```
//! use storsim_blackbox::linear::{LinearCost, LinearDevice, LinearParams};
//! use storsim_blackbox::SequentialDetect;
//! use storsim_core::{Completion, Device, SimDuration, SimTime};
//! use storsim_engine::{CancelToken, EngineOptions, Replay, Simulation};
//! use storsim_workload::synthetic;
//!
//! // A device whose every request takes 100 µs, one at a time.
//! let cost = LinearCost { fixed: SimDuration(100_000), per_kib_ps: 0 };
//! let mut device = LinearDevice::new(LinearParams {
//!     capacity_bytes: 1 << 30,
//!     costs: [cost; 4],
//!     trim: SimDuration(0),
//!     flush: SimDuration(0),
//!     sequential_detect: SequentialDetect::PreviousRequest,
//!     servers: 1,
//!     queue_depth: 32,
//! });
//! let spec = synthetic::parse("synthetic:rw=randread,bs=4k,requests=1000").unwrap();
//! let mut workload = synthetic::build(&spec, device.capacity_bytes(), 7).unwrap();
//! let options = EngineOptions { replay: Replay::Closed { depth: 4 }, ..Default::default() };
//!
//! let mut total_latency_ns = 0u64;
//! let mut sink = |c: &Completion| total_latency_ns += c.latency().as_ns();
//! let mut progress = |completed: u64, now: SimTime| eprintln!("{completed} done at {now}");
//! let cancel = CancelToken::new(); // cancel.cancel() from another thread stops the run
//! let info = Simulation::new(&mut device, &mut workload, options)
//!     .sink(&mut sink)
//!     .progress(&mut progress)
//!     .cancel(cancel.clone())
//!     .run()?;
//!
//! assert_eq!(info.requests_completed, 1000);
//! assert!(!info.cancelled);
//! // Four requests wait for one server: each takes its 100 µs and waits for three others.
//! assert_eq!(info.end_ns, 1000 * 100_000);
//! assert!(total_latency_ns > 1000 * 100_000);
//! # Ok::<(), storsim_engine::EngineError>(())
//! ```
//!
//! Errors ([`EngineError`]) separate bad input (options, workload records, requests the device
//! refuses) from a device model that breaks its contract ([`EngineError::Model`]): the first
//! is the user's to fix, the second a bug in the model.

mod lookahead;
mod run;

use lookahead::Lookahead;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use storsim_core::{Completion, Device, DeviceError, SimTime};
use storsim_workload::{Pacing, Workload, WorkloadError};

/// How records become requests.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Replay {
    /// Each record arrives at its timestamp, rebased so the first arrives at 0 and multiplied by
    /// `time_scale` (0.5 replays twice as fast, 2 half as fast).
    Open { time_scale: f64 },
    /// `depth` requests outstanding; each completion admits the next record after its think time.
    Closed { depth: u32 },
    /// Timestamps ignored; the device's queue is kept full (closed loop at its queue depth).
    AsFastAsPossible,
}

impl Replay {
    /// The replay a workload asks for when the user does not choose one.
    pub fn natural(pacing: Pacing) -> Replay {
        match pacing {
            Pacing::Open => Replay::Open { time_scale: 1.0 },
            Pacing::Closed { depth } => Replay::Closed { depth },
        }
    }
}

/// What to do with a request that reaches past the end of the device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OutOfRange {
    /// Stop with an error naming the record.
    #[default]
    Error,
    /// Fold the offset into the device (offset modulo capacity, pulled back to fit), counting it.
    Wrap,
}

/// What to do with a request the device refuses as invalid ([`DeviceError::Invalid`]), such as
/// a program of a page that is not erased on raw flash.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Refused {
    /// Stop with an error naming the record.
    #[default]
    Stop,
    /// Count the request and go on without it, keeping the first [`REFUSED_KEPT`] reasons
    /// ([`RunInfo::refused_requests`], [`RunInfo::first_refused`]). The request is never
    /// issued and never completes; in a closed loop its slot frees at once, as if it had
    /// completed when it was refused.
    Count,
}

/// How many refused requests [`RunInfo::first_refused`] describes; the rest are only counted,
/// so that a trace refused throughout does not grow memory.
pub const REFUSED_KEPT: usize = 10;

/// How the host answers a request that failed ([`storsim_core::Status`] not `Ok`): resubmit it
/// up to `attempts` more times, each `delay_ns` after the failure, as an operating system's
/// block layer retries a failed command. The default, no attempts, hands every failure to the
/// sink as it comes.
///
/// A retried request keeps its id and its arrival, so its latency is what the host waited in
/// all: the failed attempts, the delays and the last attempt. Only its last attempt reaches the
/// sink; [`RunInfo::retries`] counts the resubmissions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Retry {
    /// How many times a failed request is resubmitted before its failure stands.
    pub attempts: u32,
    /// How long after a failure the request is resubmitted, in nanoseconds.
    pub delay_ns: u64,
}

/// How a run replays its workload; the default is open loop at the trace's own pace, stopping
/// at the first request that does not fit or that the device refuses.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EngineOptions {
    /// How records become requests: their arrival times and how many are outstanding.
    pub replay: Replay,
    /// What to do with a request that reaches past the end of the device.
    pub out_of_range: OutOfRange,
    /// What to do when the device refuses a request as invalid. [`DeviceError::OutOfRange`]
    /// follows `out_of_range` instead, and a full queue or a failed device is handled as
    /// always.
    pub on_refused: Refused,
    /// Stop issuing after this many records.
    pub max_requests: Option<u64>,
    /// Stop issuing requests that would arrive at or after this simulated instant.
    pub duration_ns: Option<u64>,
    /// Whether and how failed requests are resubmitted.
    pub retry: Retry,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            replay: Replay::Open { time_scale: 1.0 },
            out_of_range: OutOfRange::Error,
            on_refused: Refused::Stop,
            max_requests: None,
            duration_ns: None,
            retry: Retry::default(),
        }
    }
}

/// Receives every completion, in completion order, and, if it asks, what a time series needs
/// besides: host waits and the device's counters as time passes given instants.
pub trait CompletionSink {
    /// Called once for each completed request, as the engine collects it from the device.
    fn completed(&mut self, completion: &Completion);

    /// A request that arrived at `arrival` waited at the host until `now`, when the device
    /// took it. Called only for requests that waited.
    fn waited(&mut self, _arrival: SimTime, _now: SimTime) {}

    /// The instant after which the sink next wants the device's counters; `SimTime::MAX`, the
    /// default, never.
    fn counters_due_after(&self) -> SimTime {
        SimTime::MAX
    }

    /// The device's counters before anything happens at `now`, the first event after
    /// [`CompletionSink::counters_due_after`]: `values` appends
    /// [`Device::counter_values`], `named` returns [`Device::counters`].
    fn counters(
        &mut self,
        _now: SimTime,
        _values: &mut dyn FnMut(&mut Vec<f64>),
        _named: &dyn Fn() -> Vec<storsim_core::DeviceCounter>,
    ) {
    }
}

impl<F: FnMut(&Completion)> CompletionSink for F {
    fn completed(&mut self, completion: &Completion) {
        self(completion)
    }
}

/// Facts about the run that are not per-request statistics.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunInfo {
    /// Requests the device accepted.
    pub requests_issued: u64,
    /// Requests the device completed and the sink received (failed ones included; a retried
    /// request once, with its last attempt).
    pub requests_completed: u64,
    /// Resubmissions of failed requests under [`EngineOptions::retry`].
    pub retries: u64,
    /// Open-loop records whose timestamp was earlier than the previous record's; they were issued
    /// at the previous record's time, since arrivals cannot go back in time.
    pub out_of_order_records: u64,
    /// Requests folded into the device by [`OutOfRange::Wrap`].
    pub wrapped_requests: u64,
    /// The highest end (offset plus length, before folding) of those requests, in bytes; 0
    /// when none was folded. Against the capacity, it says by what factor the trace's addresses
    /// exceed the device, which points at a unit mistake.
    pub highest_wrapped_end_bytes: u64,
    /// Zero-length reads and writes, which were dropped.
    pub empty_requests: u64,
    /// Requests the device refused as invalid under [`Refused::Count`]: not issued, not
    /// completed, not in the statistics.
    pub refused_requests: u64,
    /// The first [`REFUSED_KEPT`] of them, in the order they were refused.
    pub first_refused: Vec<RefusedRequest>,
    /// The device failed ([`DeviceError::Failed`]) at this record: issuing stopped there, the
    /// requests it had accepted completed, and the run ended early. Says where and why.
    pub device_failed: Option<String>,
    /// The run's [`CancelToken`] was cancelled: it stopped admitting requests there and ended
    /// when the ones the device held completed.
    pub cancelled: bool,
    /// The simulated instant of the last completion.
    pub end_ns: u64,
}

/// A request the device refused, as [`RunInfo::first_refused`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefusedRequest {
    /// The request's record in the workload, such as "line 17" or "request 3".
    pub position: String,
    /// The device's reason, which names what was wrong (for raw flash, the page and its block).
    pub reason: String,
}

/// Says by what factor an address (the end of a request, in bytes) exceeds the device's
/// capacity ("3.000 times the device's capacity"), and what a large factor usually means: a
/// trace read with other units than it was written in (bytes read as 512-byte sectors multiply
/// every address by 512). The messages of [`EngineError::Device`] and of a run that folded
/// requests (`--wrap`) share it.
pub fn exceeds_by(end_bytes: u128, capacity_bytes: u64) -> String {
    let factor = end_bytes as f64 / capacity_bytes.max(1) as f64;
    let mut text = format!("{factor:.3} times the device's capacity");
    if factor >= 2.0 {
        text += " (a factor near 512 often means the trace's addresses are read in other \
                 units than they were written in: check its format with storsim inspect, or \
                 name it with --format)";
    }
    text
}

/// Why a run stopped without results. [`EngineError::Model`] is a bug in a device model; the
/// others are bad input the user can fix.
#[derive(Debug)]
pub enum EngineError {
    /// The workload could not be read (a malformed trace line, say).
    Workload(WorkloadError),
    /// The device refused a request: which record (`position`, e.g. "line 17") of `source`.
    Device {
        source: String,
        position: String,
        error: DeviceError,
        /// Whether [`OutOfRange::Wrap`] would have accepted the request, for the message.
        wrap_would_help: bool,
        /// Whether [`Refused::Count`] would have gone on past the request, for the message.
        count_would_help: bool,
    },
    /// A record arrives later than [`SimTime::ARRIVAL_LIMIT`] (after time scaling or think
    /// time).
    ArrivalTooLate {
        source: String,
        position: String,
        arrival_ns: u128,
    },
    /// The options do not make sense (a time scale of zero, a queue depth of 0).
    Options { message: String },
    /// The device model broke the [`Device`] contract: it stalled (requests outstanding and no
    /// deadline, or a deadline it never gets past), named a deadline before the present,
    /// completed a request it was not given, altered, or out of time order, accepted more than
    /// its queue depth, or refused a request as full below its queue depth in a way the engine
    /// cannot wait out. No input causes this; the model has a bug. The rules are
    /// `storsim_core::contract`'s, which the emulator applies too.
    Model {
        /// The model's name ([`Device::model_name`]).
        device: String,
        /// When in the run it happened: the simulated instant and the completions so far.
        at: String,
        /// What the model did wrong.
        message: String,
    },
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EngineError::Workload(e) => write!(f, "{e}"),
            EngineError::Device {
                source,
                position,
                error,
                wrap_would_help,
                count_would_help,
            } => {
                write!(f, "{source}: {position}: {error}")?;
                if let DeviceError::OutOfRange {
                    offset_bytes,
                    len_bytes,
                    capacity_bytes,
                } = error
                {
                    let end = u128::from(*offset_bytes) + u128::from(*len_bytes);
                    write!(f, "; it ends at {}", exceeds_by(end, *capacity_bytes))?;
                }
                if *wrap_would_help {
                    write!(f, " (use --wrap to fold such requests into the device)")?;
                }
                if *count_would_help {
                    write!(
                        f,
                        " (use --on-refused count to count such requests and go on without them)"
                    )?;
                }
                Ok(())
            }
            EngineError::ArrivalTooLate {
                source,
                position,
                arrival_ns,
            } => write!(
                f,
                "{source}: {position}: the request would arrive {:.3e} s into the run, past the \
                 simulated clock's limit of {:.3e} s (about 146 years); check the timestamps, \
                 --time-scale or the think time",
                *arrival_ns as f64 / 1e9,
                SimTime::ARRIVAL_LIMIT.as_ns() as f64 / 1e9
            ),
            EngineError::Options { message } => write!(f, "{message}"),
            EngineError::Model {
                device,
                at,
                message,
            } => write!(f, "the device model '{device}' failed at {at}: {message}"),
        }
    }
}

impl std::error::Error for EngineError {}

impl From<WorkloadError> for EngineError {
    fn from(e: WorkloadError) -> Self {
        EngineError::Workload(e)
    }
}

/// How often (in completions) the progress callback is called.
pub const PROGRESS_INTERVAL: u64 = 1 << 16;

/// How often (in completions) a run looks at its [`CancelToken`]. A power of two that divides
/// [`PROGRESS_INTERVAL`], so that one test per completion serves both.
pub const CHECK_INTERVAL: u64 = 1 << 10;

/// Asks a running [`Simulation`] to stop, from any thread.
///
/// Clones share one flag. The run looks at it when it starts and every [`CHECK_INTERVAL`]
/// completions; once it sees it set, it admits nothing more, lets the requests the device
/// already accepted complete (at most the device's queue depth of them), and returns `Ok` with
/// [`RunInfo::cancelled`] set. Everything it reports up to there (completions delivered to the
/// sink, the counters in [`RunInfo`]) is what an uncancelled run reports for those requests.
#[derive(Clone, Debug, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    /// A token not yet cancelled.
    pub fn new() -> Self {
        CancelToken::default()
    }

    /// A token cancelled when `flag` becomes true: a flag a signal handler sets, say, since a
    /// handler may store to an atomic but must not call into the run.
    pub fn from_flag(flag: Arc<AtomicBool>) -> Self {
        CancelToken(flag)
    }

    /// Asks every run holding a clone of this token to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether [`CancelToken::cancel`] was called on this token or a clone.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// One flow of a multi-flow run ([`Simulation::flows`]): its workload and when and how its
/// records become requests. Its requests carry its index in the run's list as
/// [`storsim_core::Request::flow`].
pub struct Flow<'a> {
    /// The flow's records.
    pub workload: &'a mut Workload,
    /// How the flow's records become requests; `None` takes [`EngineOptions::replay`]. Each
    /// closed-loop flow keeps its own number of requests outstanding.
    pub replay: Option<Replay>,
    /// The instant the flow starts, counted from the start of its phase: an open-loop flow's
    /// first record arrives then (its later ones keep their distance from it), a closed-loop
    /// flow issues nothing before it.
    pub start_ns: u64,
    /// The flow issues no request that would arrive at or after this instant, counted from
    /// the start of its phase.
    pub stop_ns: Option<u64>,
    /// The flow's phase: the flows of the lowest phase start at instant 0, and those of each
    /// later phase when every flow of the phases before it has ended and its last request
    /// completed (fio's `stonewall`). A run whose flows all share one phase is unaffected.
    pub phase: u32,
}

impl<'a> Flow<'a> {
    /// A flow that starts at instant 0, never stops early and replays as the options say: a
    /// workload of one flow, as [`Simulation::new`] runs it.
    pub fn whole(workload: &'a mut Workload) -> Self {
        Flow {
            workload,
            replay: None,
            start_ns: 0,
            stop_ns: None,
            phase: 0,
        }
    }
}

/// The most flows a run may have: [`storsim_core::Request::flow`] numbers them in a `u16`.
pub const FLOWS_MAX: usize = u16::MAX as usize + 1;

/// One simulation run, set up step by step: a device, a workload (or several flows) and
/// options, then optionally a sink for the completions, a progress callback and a cancel
/// token. The crate documentation has an example.
pub struct Simulation<'a, D: Device + ?Sized> {
    device: &'a mut D,
    flows: Vec<Flow<'a>>,
    options: EngineOptions,
    sink: Option<&'a mut dyn CompletionSink>,
    progress: Option<&'a mut dyn FnMut(u64, SimTime)>,
    cancel: Option<CancelToken>,
}

impl<'a, D: Device + ?Sized> Simulation<'a, D> {
    /// A run of `workload` on `device` with `options`, whose completions go nowhere until
    /// [`Simulation::sink`] says where.
    pub fn new(device: &'a mut D, workload: &'a mut Workload, options: EngineOptions) -> Self {
        Simulation::flows(device, vec![Flow::whole(workload)], options)
    }

    /// A run of several flows on `device`: each flow's records become requests as its own
    /// [`Flow`] says, and the open-loop flows' requests arrive merged by arrival time, ties
    /// going to the flow listed first. The options' limits (request count, duration) hold for
    /// the run as a whole. A run of one [`Flow::whole`] is [`Simulation::new`]'s.
    pub fn flows(device: &'a mut D, flows: Vec<Flow<'a>>, options: EngineOptions) -> Self {
        Simulation {
            device,
            flows,
            options,
            sink: None,
            progress: None,
            cancel: None,
        }
    }

    /// Every completion goes to `sink`, in completion order.
    pub fn sink(mut self, sink: &'a mut dyn CompletionSink) -> Self {
        self.sink = Some(sink);
        self
    }

    /// `progress(completed, now)` is called every [`PROGRESS_INTERVAL`] completions, with the
    /// number completed so far and the simulated instant.
    pub fn progress(mut self, progress: &'a mut dyn FnMut(u64, SimTime)) -> Self {
        self.progress = Some(progress);
        self
    }

    /// The run stops early once `token` is cancelled (see [`CancelToken`]).
    pub fn cancel(mut self, token: CancelToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// Runs the workload to its end (or a limit in the options, a device failure or a
    /// cancellation) and says how it went. The workload is consumed as far as the run got.
    ///
    /// The engine reads one record ahead of the one it admits and passes it to
    /// [`Device::prefetch`]; the run's results are what they would be without it.
    ///
    /// Errors: [`EngineError::Options`] before anything runs; [`EngineError::Workload`],
    /// [`EngineError::Device`] and [`EngineError::ArrivalTooLate`] for bad input, naming the
    /// record; [`EngineError::Model`] when the device model breaks its contract.
    pub fn run(self) -> Result<RunInfo, EngineError> {
        let mut no_sink = |_: &Completion| {};
        let mut no_progress = |_: u64, _: SimTime| {};
        let sink: &mut dyn CompletionSink = match self.sink {
            Some(sink) => sink,
            None => &mut no_sink,
        };
        let progress: &mut dyn FnMut(u64, SimTime) = match self.progress {
            Some(progress) => progress,
            None => &mut no_progress,
        };
        let mut flows = self.flows;
        // The first flow's lookahead stays on the stack, where the compiler can see that no one
        // else reaches it (see `run::Sources`).
        let mut first_lookahead = Lookahead::new();
        let mut other_lookaheads: Vec<Lookahead> =
            flows.iter().skip(1).map(|_| Lookahead::new()).collect();
        // One loop in the source, compiled twice; the run picks its copy once.
        let run_loop = if run::is_simple(flows.len(), &self.options) {
            run::set_up_and_run::<D, true>
        } else {
            run::set_up_and_run::<D, false>
        };
        let result = run_loop(
            self.device,
            &mut flows,
            &self.options,
            sink,
            progress,
            self.cancel.as_ref(),
            &mut std::iter::once(&mut first_lookahead).chain(&mut other_lookaheads),
        );
        let lookaheads = std::iter::once(&mut first_lookahead).chain(&mut other_lookaheads);
        for (flow, lookahead) in flows.iter_mut().zip(lookaheads) {
            lookahead.finish(flow.workload);
        }
        result
    }
}

/// Runs `workload` on `device` to completion: [`Simulation`] with a sink and a progress
/// callback, for callers that need neither cancellation nor the builder.
pub fn run<D: Device + ?Sized>(
    device: &mut D,
    workload: &mut Workload,
    options: &EngineOptions,
    sink: &mut dyn CompletionSink,
    progress: &mut dyn FnMut(u64, SimTime),
) -> Result<RunInfo, EngineError> {
    Simulation::new(device, workload, *options)
        .sink(sink)
        .progress(progress)
        .run()
}
