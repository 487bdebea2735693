//! One simulation from descriptions: a device (a preset name or a device file, read by
//! `storsim_config`), a workload (a trace file or a synthetic spec) and engine options, to the
//! run's statistics ([`Summary`]) and facts ([`RunInfo`]).
//!
//! This is `storsim simulate` without its command line and output formats, for every program
//! that runs simulations from descriptions: the CLI, a sweep runner, a Python package. It lives
//! above `storsim_engine`, which drives any [`Device`] but knows no device files, and
//! `storsim_config`, which builds devices but runs nothing.
//!
//! A [`Session`] holds the built device and the opened workload, so that a caller can choose
//! the options from the workload (its natural pacing) and read the device's counters after the
//! run. [`simulate`] does both steps for callers that need only the numbers. A front end
//! describes a whole `storsim simulate` run as [`SimulateOptions`] and runs it with [`run`].
//!
//! ```
//! use storsim_engine::{EngineOptions, Replay};
//! use storsim_sim::{simulate, WorkloadSource};
//!
//! let workload = WorkloadSource::Synthetic("synthetic:rw=randread,bs=4k,requests=500".into());
//! let options = EngineOptions { replay: Replay::Closed { depth: 4 }, ..Default::default() };
//! let outcome = simulate("stec-zeus", &workload, 7, &options)?;
//! assert_eq!(outcome.info.requests_completed, 500);
//! assert_eq!(outcome.summary.all.requests, 500);
//! # Ok::<(), storsim_sim::SimError>(())
//! ```

mod binding;
mod fairness;
mod options;

pub use fairness::{fairness, run_alone, Fairness};
pub use options::{
    check_source, duration_text, parse_blkparse_event, parse_trace_devices, parse_trace_format,
    parse_window_width, precondition, precondition_name, prepare, replay, run, trace_options_args,
    DeviceChoice, OptionError, Prepared, ReplayChoice, SimulateOptions, Simulated, WorkloadChoice,
    PRECONDITION_NAMES,
};
use std::fmt;
use std::path::PathBuf;
use storsim_config::{DeviceSpec, LoadedDevice};
use storsim_core::{Completion, Described, Device, DeviceCounter, SimTime};
use storsim_engine::{
    CancelToken, CompletionSink, EngineError, EngineOptions, Flow, Replay, RunInfo, Simulation,
};
use storsim_stats::{Collector, CollectorOptions, Series, SeriesRecorder, Summary, WindowWidth};
use storsim_workload::flows::{self, FlowSpec};
use storsim_workload::trace::{self, TraceOptions};
use storsim_workload::{synthetic, Origin, Pacing, Workload, WorkloadError};

/// Where a run's requests come from.
#[derive(Clone, Debug)]
pub enum WorkloadSource {
    /// A trace file, read with these options (format, device selection, ...).
    Trace {
        /// The trace file.
        path: PathBuf,
        /// How to read it.
        options: TraceOptions,
    },
    /// A generator spec as `--workload` takes it: `synthetic:KEY=VALUE,...` or `vdbench:...`
    /// (docs/workloads/).
    Synthetic(String),
    /// Several flows sharing the device (docs/workloads/flows.md), each a trace (read with
    /// `options`) or a generator spec.
    Flows {
        /// The workload's name in results: the flow file's path, or the `--flow` arguments.
        name: String,
        /// The flows, in order: a request's `flow` is its flow's index here.
        flows: Vec<FlowSpec>,
        /// How the flows' traces are read.
        options: TraceOptions,
        /// What the run should say about how the workload was read (an fio job file's
        /// options without effect in simulation); a front end shows them to the user.
        notes: Vec<String>,
    },
}

impl WorkloadSource {
    /// Whether `arg` names a generator rather than a file, as `--workload` tells them apart.
    pub fn is_synthetic(arg: &str) -> bool {
        flows::is_generator(arg)
    }
}

/// Why a simulation could not be set up or run. All but [`SimError::Engine`] with
/// [`EngineError::Model`] are bad input, which the user can fix.
#[derive(Debug)]
pub enum SimError {
    /// The device description could not be read, or the device not built from it.
    Device(String),
    /// The workload could not be opened or generated.
    Workload(WorkloadError),
    /// The run itself failed; [`SimError::is_model_fault`] tells a model's bug from bad input.
    Engine(EngineError),
    /// The run's options are refused ([`SimulateOptions`]).
    Option(OptionError),
}

impl SimError {
    /// Whether the error is a device model's bug ([`EngineError::Model`]) rather than input the
    /// user can fix.
    pub fn is_model_fault(&self) -> bool {
        matches!(self, SimError::Engine(EngineError::Model { .. }))
    }
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Device(message) => write!(f, "{message}"),
            SimError::Workload(e) => write!(f, "{e}"),
            SimError::Engine(e) => write!(f, "{e}"),
            SimError::Option(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for SimError {}

/// What a finished run reports: per-request statistics and facts about the run.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Latency and throughput statistics over every completed request.
    pub summary: Summary,
    /// Requests issued and completed, those wrapped, refused or dropped, a device failure, a
    /// cancellation, the simulated end time.
    pub info: RunInfo,
    /// The run in windows of simulated time, unless [`Session::window`] was `None`.
    pub series: Option<Series>,
    /// Each flow's statistics, in the flows' order, for a workload of several flows
    /// ([`WorkloadSource::Flows`]); empty for a workload of one.
    pub flows: Vec<Summary>,
}

/// A built device and an opened workload, ready to run once.
pub struct Session {
    /// The device's name for the results: the preset's name or the file's path.
    pub device_name: String,
    /// The device model, whose counters stay readable after the run.
    pub device: Box<dyn Device>,
    /// The workload, whose name, pacing and counters of skipped records stay readable. For
    /// a workload of several flows, a stand-in that yields no record: its name is the
    /// workload's, its counters are the flows' summed after the run, and the flows are in
    /// [`Session::flows`].
    pub workload: Workload,
    /// The flows of a workload of several flows ([`WorkloadSource::Flows`]), in order; empty
    /// for a workload of one.
    pub flows: Vec<OpenedFlow>,
    /// The windows of the run's time series ([`Outcome::series`]); `None` records none. An
    /// automatic width unless the caller sets another.
    pub window: Option<WindowWidth>,
    /// How the summary treats failed requests; `errors_counted` is set when the device has a
    /// faults layer (over the model or over a child), so its error counts show even if nothing
    /// failed.
    pub collector: CollectorOptions,
    /// The device's faults layer as it was built (seeded with the run's seed), if it has one.
    pub faults: Option<storsim_config::FaultPlan>,
    /// What the run should say about how its workload was read
    /// ([`WorkloadSource::Flows`]'s notes), for a front end to show.
    pub notes: Vec<String>,
}

impl Session {
    /// Loads the device `device_arg` (a preset name or a device file) and opens `workload` for
    /// it; `seed` seeds a synthetic workload that names no seed of its own.
    pub fn open(device_arg: &str, workload: &WorkloadSource, seed: u64) -> Result<Self, SimError> {
        Session::open_with(device_arg, &[], workload, seed)
    }

    /// As [`Session::open`], with device-file keys set on top of the device
    /// (`ssd.ftl=dftl`, as `storsim_config::load_device_with` reads them). The device's name
    /// then lists them after the base's, so that runs of one base with different overrides
    /// tell apart in results and reports.
    pub fn open_with(
        device_arg: &str,
        overrides: &[String],
        workload: &WorkloadSource,
        seed: u64,
    ) -> Result<Self, SimError> {
        Session::new(load_device(device_arg, overrides)?, workload, seed)
    }

    /// Builds `device` and opens `workload` for it, as [`Session::open`] does after loading.
    /// A device whose model state would not fit in the memory available is refused with a
    /// message that says so, instead of the allocation aborting the process.
    pub fn new(
        mut device: LoadedDevice,
        workload: &WorkloadSource,
        seed: u64,
    ) -> Result<Self, SimError> {
        if let WorkloadSource::Flows { flows, .. } = workload {
            binding::bind_flows(&mut device, flows)?;
        }
        check_memory(&device.name, &device.spec)?;
        device.spec.seed_faults(seed);
        let faults = device.spec.faults().cloned();
        let built = device
            .spec
            .build()
            .map_err(|e| SimError::Device(format!("{}: {e}", device.name)))?;
        let notes = match workload {
            WorkloadSource::Flows { notes, .. } => notes.clone(),
            _ => Vec::new(),
        };
        let (workload, flows) = match workload {
            WorkloadSource::Flows {
                name,
                flows,
                options,
                ..
            } => {
                let opened = open_flows(flows, options, built.capacity_bytes(), seed)?;
                (stand_in(name, seed), opened)
            }
            single => (
                open_workload(single, built.capacity_bytes(), seed)?,
                Vec::new(),
            ),
        };
        Ok(Session {
            device_name: device.name,
            device: built,
            workload,
            flows,
            window: Some(WindowWidth::Auto),
            collector: CollectorOptions {
                latency_includes_failed: false,
                errors_counted: device.spec.has_faults(),
            },
            faults,
            notes,
        })
    }

    /// Runs the workload on the device with `options`, collecting statistics and, unless
    /// [`Session::window`] is `None`, the time series; every completion also goes to `sink` if
    /// there is one, `progress` is called as [`Simulation::progress`] says, and `cancel` stops
    /// the run early (see [`CancelToken`]).
    pub fn run(
        &mut self,
        options: &EngineOptions,
        sink: Option<&mut dyn CompletionSink>,
        progress: &mut dyn FnMut(u64, SimTime),
        cancel: Option<CancelToken>,
    ) -> Result<Outcome, SimError> {
        let mut collector = Collector::with_options(self.collector);
        let include_failed = self.collector.latency_includes_failed;
        let mut recorder = self.window.map(|width| {
            let mut recorder = SeriesRecorder::new(width);
            recorder.include_failed_latencies(include_failed);
            recorder
        });
        let mut per_flow: Vec<Collector> = self
            .flows
            .iter()
            .map(|_| Collector::with_options(self.collector))
            .collect();
        let mut recording = Recording {
            collector: &mut collector,
            recorder: recorder.as_mut(),
            sink,
        };
        let mut flows_recording = FlowsRecording {
            recording: &mut recording,
            per_flow: &mut per_flow,
        };
        // A workload of one flow records through `Recording` alone, whose one call of
        // `Collector::record` the compiler keeps inlined on the fastest runs' path.
        let sink: &mut dyn CompletionSink = if self.flows.is_empty() {
            flows_recording.recording
        } else {
            &mut flows_recording
        };
        let engine_flows = if self.flows.is_empty() {
            vec![Flow::whole(&mut self.workload)]
        } else {
            self.flows.iter_mut().map(OpenedFlow::engine_flow).collect()
        };
        let mut simulation = Simulation::flows(self.device.as_mut(), engine_flows, *options)
            .sink(sink)
            .progress(progress);
        if let Some(token) = cancel {
            simulation = simulation.cancel(token);
        }
        let info = simulation.run().map_err(SimError::Engine)?;
        if !self.flows.is_empty() {
            let sum =
                |count: fn(&Workload) -> u64| self.flows.iter().map(|f| count(&f.workload)).sum();
            self.workload.skipped.set(sum(|w| w.skipped.get()));
            self.workload.ignored.set(sum(|w| w.ignored.get()));
        }
        let series = recorder.map(|r| r.finish(SimTime(info.end_ns), self.device.counters()));
        Ok(Outcome {
            summary: collector.summary(),
            info,
            series,
            flows: per_flow.iter().map(Collector::summary).collect(),
        })
    }
}

/// The engine's sink in a session: every completion into the summary, the series (when one is
/// recorded) and the caller's sink, in one call; the host waits and the device's counters
/// into the series. Hooks in the engine rather than a wrapper around the device, which cost
/// a measurable part of the fastest runs.
struct Recording<'a, 's> {
    collector: &'a mut Collector,
    recorder: Option<&'a mut SeriesRecorder>,
    sink: Option<&'a mut (dyn CompletionSink + 's)>,
}

/// The engine's sink for a workload of several flows: [`Recording`], and each completion in
/// its flow's collector.
struct FlowsRecording<'r, 'a, 's> {
    recording: &'r mut Recording<'a, 's>,
    /// One collector per flow, in the flows' order.
    per_flow: &'r mut [Collector],
}

impl CompletionSink for FlowsRecording<'_, '_, '_> {
    fn completed(&mut self, c: &Completion) {
        self.recording.completed(c);
        if let Some(flow) = self.per_flow.get_mut(usize::from(c.request.flow)) {
            flow.record(c);
        }
    }

    fn waited(&mut self, arrival: SimTime, now: SimTime) {
        self.recording.waited(arrival, now);
    }

    fn counters_due_after(&self) -> SimTime {
        self.recording.counters_due_after()
    }

    fn counters(
        &mut self,
        now: SimTime,
        values: &mut dyn FnMut(&mut Vec<f64>),
        named: &dyn Fn() -> Vec<storsim_core::DeviceCounter>,
    ) {
        self.recording.counters(now, values, named);
    }
}

impl CompletionSink for Recording<'_, '_> {
    #[inline]
    fn completed(&mut self, c: &Completion) {
        self.collector.record(c);
        if let Some(recorder) = self.recorder.as_deref_mut() {
            recorder.completed(c);
        }
        if let Some(sink) = self.sink.as_deref_mut() {
            sink.completed(c);
        }
    }

    fn waited(&mut self, arrival: SimTime, now: SimTime) {
        if let Some(recorder) = self.recorder.as_deref_mut() {
            recorder.submitted(arrival, now);
        }
    }

    fn counters_due_after(&self) -> SimTime {
        self.recorder
            .as_deref()
            .map_or(SimTime::MAX, SeriesRecorder::counters_due_after)
    }

    fn counters(
        &mut self,
        now: SimTime,
        values: &mut dyn FnMut(&mut Vec<f64>),
        named: &dyn Fn() -> Vec<storsim_core::DeviceCounter>,
    ) {
        if let Some(recorder) = self.recorder.as_deref_mut() {
            recorder.sample_with(now, values, named);
        }
    }
}

/// Runs `workload` on the device `device_arg` (a preset name or a device file) with `options`
/// and returns the statistics: [`Session::open`] then [`Session::run`], with no sink, progress
/// or cancellation.
pub fn simulate(
    device_arg: &str,
    workload: &WorkloadSource,
    seed: u64,
    options: &EngineOptions,
) -> Result<Outcome, SimError> {
    let mut session = Session::open(device_arg, workload, seed)?;
    session.run(options, None, &mut |_, _| {}, None)
}

/// Loads the device `device_arg` (a preset name or a device file) with device-file keys set on
/// top (`ssd.ftl=dftl`, as `storsim_config::load_device_with` reads them), without building
/// it, for a caller that changes the description first. With overrides, the device's name
/// lists them after the base's, so that runs of one base with different overrides tell apart
/// in results and reports.
pub fn load_device(device_arg: &str, overrides: &[String]) -> Result<LoadedDevice, SimError> {
    let mut device = storsim_config::load_device_with(device_arg, overrides)
        .map_err(|e| SimError::Device(e.to_string()))?;
    if !overrides.is_empty() {
        device.name = format!("{device_arg} [{}]", overrides.join(", "));
    }
    Ok(device)
}

/// Host reads that found no data on a device's SSDs: pages never written (or trimmed), which
/// cost no flash time, so a run made mostly of them measures nothing of the flash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnmappedReads {
    /// Host pages read that held no data.
    pub unmapped_pages: u64,
    /// Host pages read in all, on the same SSDs.
    pub read_pages: u64,
}

/// The reads of pages without data on every SSD a device holds (itself or its children: each
/// SSD's `host_read_unmapped_pages` descriptor, under the prefix its composite lists it with),
/// or `None` for a device with no SSD.
pub fn unmapped_reads(
    counters: &[DeviceCounter],
    descriptors: &[Described],
) -> Option<UnmappedReads> {
    let value = |name: &str| counters.iter().find(|c| c.name == name).map(|c| c.value);
    let mut total: Option<UnmappedReads> = None;
    for d in descriptors {
        if *d.descriptor != storsim_ssd::HOST_READ_UNMAPPED_PAGES {
            continue;
        }
        let Some(unmapped) = value(&d.full_name()) else {
            continue;
        };
        let reads = value(&format!(
            "{}{}",
            d.prefix,
            storsim_ssd::HOST_READ_PAGES.name
        ))
        .unwrap_or(0.0);
        let t = total.get_or_insert(UnmappedReads {
            unmapped_pages: 0,
            read_pages: 0,
        });
        t.unmapped_pages += unmapped as u64;
        t.read_pages += reads as u64;
    }
    total
}

/// Opens a trace file or builds a synthetic workload for a device of `capacity_bytes`.
pub fn open_workload(
    source: &WorkloadSource,
    capacity_bytes: u64,
    seed: u64,
) -> Result<Workload, SimError> {
    match source {
        WorkloadSource::Synthetic(text) => {
            let spec = synthetic::parse(text).map_err(SimError::Workload)?;
            synthetic::build(&spec, capacity_bytes, seed).map_err(SimError::Workload)
        }
        WorkloadSource::Trace { path, options } => {
            trace::open(path, options).map_err(SimError::Workload)
        }
        WorkloadSource::Flows { name, .. } => Err(SimError::Workload(WorkloadError::Spec {
            message: format!("{name}: a workload of several flows opens with Session::new"),
        })),
    }
}

/// One flow of a session: what the flow file or `--flow` said, and its opened workload.
pub struct OpenedFlow {
    /// The flow as stated.
    pub spec: FlowSpec,
    /// Its records, already moved into its LBA partition if it has one.
    pub workload: Workload,
}

impl OpenedFlow {
    /// The flow as the engine runs it. Its replay: a closed loop at its `iodepth` if it names
    /// one, else its workload's own closed loop (a generator's `iodepth`), else the run's.
    /// It stops at its `stop`, or when its generator's `duration` after its start has passed,
    /// whichever comes first.
    fn engine_flow(&mut self) -> Flow<'_> {
        let replay = match (self.spec.iodepth, self.workload.pacing) {
            (Some(depth), _) | (None, Pacing::Closed { depth }) => Some(Replay::Closed { depth }),
            (None, Pacing::Open) => None,
        };
        let generated_end = self
            .workload
            .duration_ns
            .map(|d| self.spec.start_ns.saturating_add(d));
        let stop_ns = match (self.spec.stop_ns, generated_end) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Flow {
            workload: &mut self.workload,
            replay,
            start_ns: self.spec.start_ns,
            stop_ns,
            phase: self.spec.phase,
        }
    }
}

/// Opens each flow's workload for a device of `capacity_bytes`: a generator over its LBA
/// partition's length (or the whole device), a trace with `options`, then its records moved
/// into the partition. A generator naming no seed of its own gets `seed` plus its flow's
/// index, so that two flows of one spec do not repeat each other.
pub fn open_flows(
    specs: &[FlowSpec],
    options: &TraceOptions,
    capacity_bytes: u64,
    seed: u64,
) -> Result<Vec<OpenedFlow>, SimError> {
    let mut opened = Vec::with_capacity(specs.len());
    for (index, spec) in specs.iter().enumerate() {
        let partition = match &spec.lba {
            Some(lba) => Some(lba.resolve(capacity_bytes).map_err(|message| {
                SimError::Workload(WorkloadError::Spec {
                    message: format!("flow {}: {message}", spec.name),
                })
            })?),
            None => None,
        };
        let space = partition.map_or(capacity_bytes, |(_, len)| len);
        let source = if flows::is_generator(&spec.workload) {
            WorkloadSource::Synthetic(spec.workload.clone())
        } else {
            WorkloadSource::Trace {
                path: PathBuf::from(&spec.workload),
                options: TraceOptions {
                    format: spec.format.or(options.format),
                    ..options.clone()
                },
            }
        };
        let flow_seed = seed.wrapping_add(index as u64);
        let mut workload = open_pass(spec, &source, space, flow_seed)?;
        if spec.repeat > 1 {
            // Each further pass opens the workload again, so that memory stays independent of
            // its length; a pass that cannot be opened ends the flow with the error.
            let (spec, source) = (spec.clone(), source.clone());
            workload = flows::repeat(workload, spec.repeat, move || {
                open_pass(&spec, &source, space, flow_seed).map_err(|e| match e {
                    SimError::Workload(e) => e,
                    other => WorkloadError::Spec {
                        message: other.to_string(),
                    },
                })
            });
        }
        if let Some((offset, len)) = partition {
            workload = flows::map_into(workload, offset, len);
        }
        opened.push(OpenedFlow {
            spec: spec.clone(),
            workload,
        });
    }
    Ok(opened)
}

/// One pass of a flow's workload: opened, cut to its `head`, its clock scaled by its
/// `time_scale`.
fn open_pass(
    spec: &FlowSpec,
    source: &WorkloadSource,
    space: u64,
    seed: u64,
) -> Result<Workload, SimError> {
    let mut workload = open_workload(source, space, seed)?;
    if let Some(n) = spec.head {
        workload = flows::head(workload, n);
    }
    if let Some(factor) = spec.time_scale {
        workload = flows::scale_time(workload, factor);
    }
    Ok(workload)
}

/// The [`Session::workload`] of a workload of several flows: named as the workload, with no
/// record of its own.
fn stand_in(name: &str, seed: u64) -> Workload {
    Workload {
        name: name.to_string(),
        records: Box::new(std::iter::empty()),
        pacing: Pacing::Open,
        origin: Origin::Index,
        duration_ns: None,
        skipped: Default::default(),
        ignored: Default::default(),
        format: None,
        seed: Some(seed),
        detected_from: None,
    }
}

/// Refuses a device whose model state would not fit in the memory available, with a message
/// that says so, instead of letting the allocation abort the process. Every front end that
/// builds a device from a description calls it first.
pub fn check_memory(name: &str, spec: &DeviceSpec) -> Result<(), SimError> {
    let (Some(need), Some(available)) = (spec.state_bytes_bound(), mem_available_bytes()) else {
        return Ok(());
    };
    if need <= available {
        return Ok(());
    }
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    Err(SimError::Device(format!(
        "{name}: the model's state may need up to {:.1} GiB ({} bytes for each physical page) \
         but {:.1} GiB of memory is available; use fewer blocks or larger pages",
        gib(need),
        storsim_config::SSD_STATE_BYTES_PER_PAGE,
        gib(available)
    )))
}

/// `MemAvailable` from /proc/meminfo, where there is one.
fn mem_available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
