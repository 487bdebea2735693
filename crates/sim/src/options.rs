//! A simulation described as plain data ([`SimulateOptions`]: the device, the workload and
//! every run option of `storsim simulate`), run by [`run`], and written back as the canonical
//! `storsim simulate ...` command line that gives the same run ([`SimulateOptions::command_line`]).
//!
//! Every front end describes a run this way: the CLI from its parsed arguments, a sweep from
//! its points, the Python package from keyword arguments. The options' text forms (`closed`,
//! `10ms`, `overlay`) are read here once ([`SimulateOptions::set`]), with the messages the
//! command prints for them, so that a value refused anywhere is refused with the same words.

use crate::{fairness, run_alone, Fairness, Outcome, Session, SimError, WorkloadSource};
use std::fmt;
use std::path::{Path, PathBuf};
use storsim_config::{LoadedDevice, PreconditionMode};
use storsim_core::SimTime;
use storsim_engine::{
    CancelToken, CompletionSink, EngineOptions, OutOfRange, Refused, Replay, Retry,
};
use storsim_stats::{Summary, WindowWidth};
use storsim_workload::synthetic::parse_duration;
use storsim_workload::trace::{
    self, BlkparseEvent, DeviceSelection, TraceFormat, TraceOptions, WorkloadFile,
};
use storsim_workload::{fiojob, flows};
use storsim_workload::{Pacing, Workload};

/// How a run replays its workload, when chosen rather than left to the workload's own pacing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplayChoice {
    /// Arrivals at the recorded (or generated) timestamps.
    Open,
    /// A fixed number of requests outstanding ([`SimulateOptions::iodepth`]).
    Closed,
    /// Timestamps ignored; the device queue kept full.
    Afap,
}

impl ReplayChoice {
    /// Every choice with its name on the command line.
    pub const ALL: [(ReplayChoice, &'static str); 3] = [
        (ReplayChoice::Open, "open"),
        (ReplayChoice::Closed, "closed"),
        (ReplayChoice::Afap, "afap"),
    ];

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        ReplayChoice::ALL
            .iter()
            .find(|(c, _)| *c == self)
            .map(|(_, n)| *n)
            .expect("ALL lists every choice")
    }
}

/// The names `--precondition` gives the device-file modes, in its help's order.
pub const PRECONDITION_NAMES: [(PreconditionMode, &str); 3] = [
    (PreconditionMode::Clean, "clean"),
    (PreconditionMode::SequentialFill, "fill"),
    (PreconditionMode::SteadyState, "steady"),
];

/// `--precondition`'s name for `mode`.
pub fn precondition_name(mode: PreconditionMode) -> &'static str {
    PRECONDITION_NAMES
        .iter()
        .find(|(m, _)| *m == mode)
        .map(|(_, n)| *n)
        .expect("PRECONDITION_NAMES lists every mode")
}

/// The device a run uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceChoice {
    /// A preset name or a device file's path.
    pub name: String,
    /// Device-file keys set on top of it, each `KEY=VALUE` with a TOML value
    /// (`ssd.ftl="dftl"`), as `--set` takes them.
    pub overrides: Vec<String>,
    /// The state every SSD of the device starts in, over what its file says.
    pub precondition: Option<PreconditionMode>,
}

impl DeviceChoice {
    /// The device `name` as it is: no overrides, the file's preconditioning.
    pub fn named(name: impl Into<String>) -> Self {
        DeviceChoice {
            name: name.into(),
            overrides: Vec::new(),
            precondition: None,
        }
    }
}

/// The workload a run replays.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WorkloadChoice {
    /// A trace file, a generator spec (`synthetic:...`, `vdbench:...`) or a flow file, as
    /// `--workload` takes it.
    Named(String),
    /// Several flows sharing the device, each as `--flow` takes it (a trace or a generator
    /// spec, then the flow's keys).
    Flows(Vec<String>),
}

/// Everything that says what `storsim simulate` runs, and how: the device, the workload and
/// the run options. The outputs (JSON, requests CSV, reports) are the caller's.
#[derive(Clone, Debug, PartialEq)]
pub struct SimulateOptions {
    /// The device.
    pub device: DeviceChoice,
    /// The workload.
    pub workload: WorkloadChoice,
    /// How trace files (the workload's or its flows') are read.
    pub trace: TraceOptions,
    /// The seed of everything random in the run.
    pub seed: u64,
    /// The replay chosen, or `None` for the workload's own pacing.
    pub replay: Option<ReplayChoice>,
    /// Outstanding requests of a closed loop.
    pub iodepth: Option<u32>,
    /// Inter-arrival times multiplied by this in an open loop.
    pub time_scale: f64,
    /// Requests past the device's end folded back into it instead of stopping the run.
    pub wrap: bool,
    /// What a request the device refuses as invalid does.
    pub on_refused: Refused,
    /// The run stops after this many requests.
    pub max_requests: Option<u64>,
    /// Resubmissions of a failed request before its failure stands.
    pub retries: u32,
    /// How long after a failure a retry is resubmitted.
    pub retry_delay_ns: u64,
    /// Failed requests counted in the latency statistics.
    pub latency_includes_failed: bool,
    /// The time series' windows, or `None` for no series.
    pub window: Option<WindowWidth>,
    /// Each flow also run alone, for its slowdown and the fairness.
    pub fairness: bool,
    /// Threads for the fairness runs alone (`None`: one per processor); results do not
    /// depend on it.
    pub jobs: Option<usize>,
}

impl SimulateOptions {
    /// `workload` on `device` with every option at the command's default.
    pub fn new(device: DeviceChoice, workload: WorkloadChoice) -> Self {
        SimulateOptions {
            device,
            workload,
            trace: TraceOptions::default(),
            seed: 1,
            replay: None,
            iodepth: None,
            time_scale: 1.0,
            wrap: false,
            on_refused: Refused::Stop,
            max_requests: None,
            retries: 0,
            retry_delay_ns: 0,
            latency_includes_failed: false,
            window: Some(WindowWidth::Auto),
            fairness: false,
            jobs: None,
        }
    }

    /// Sets the option `key` (as the command line names it, with `_` or `-`, without the
    /// dashes) from its text on the command line; a flag takes `true` or `false`. The error
    /// is the command's for the same value. The device (but for `precondition`) and the
    /// workload are not options.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), OptionError> {
        let key = key.replace('-', "_");
        let invalid = |flag, value_name, reason: Option<String>| OptionError::InvalidValue {
            flag,
            value_name,
            value: value.to_string(),
            reason,
        };
        let whole = |flag, value_name| {
            value
                .parse::<u64>()
                .map_err(|e| invalid(flag, value_name, Some(e.to_string())))
        };
        let flag = |flag| match value {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(invalid(flag, "true|false", None)),
        };
        match key.as_str() {
            "seed" => {
                self.seed = value
                    .parse::<u64>()
                    .map_err(|e| invalid("--seed", "SEED", Some(e.to_string())))?;
            }
            "replay" => {
                let found = ReplayChoice::ALL.iter().find(|(_, n)| *n == value);
                self.replay = Some(found.ok_or(invalid("--replay", "REPLAY", None))?.0);
            }
            "iodepth" => {
                let depth = value
                    .parse::<u32>()
                    .map_err(|e| invalid("--iodepth", "IODEPTH", Some(e.to_string())))?;
                self.iodepth = Some(depth);
            }
            "time_scale" => {
                self.time_scale = value
                    .parse::<f64>()
                    .map_err(|e| invalid("--time-scale", "TIME_SCALE", Some(e.to_string())))?;
            }
            "wrap" => self.wrap = flag("--wrap")?,
            "on_refused" => {
                self.on_refused = match value {
                    "stop" => Refused::Stop,
                    "count" => Refused::Count,
                    _ => return Err(invalid("--on-refused", "ON_REFUSED", None)),
                }
            }
            "max_requests" => self.max_requests = Some(whole("--max-requests", "MAX_REQUESTS")?),
            "window" => {
                self.window = match value {
                    "off" => None,
                    _ => Some(parse_window_width(value).map_err(|e| {
                        invalid("--window", "auto|DURATION|off", Some(format!("off, {e}")))
                    })?),
                }
            }
            "format" => self.trace.format = Some(parse_trace_format(value)?),
            "skip_bad" => self.trace.skip_bad = flag("--skip-bad")?,
            "trace_devices" => self.trace.devices = parse_trace_devices(value)?,
            "blkparse_event" => self.trace.blkparse_event = parse_blkparse_event(value)?,
            "parse_thread" => {
                self.trace.parse_thread = match value.to_ascii_lowercase().as_str() {
                    "on" => true,
                    "off" => false,
                    _ => return Err(invalid("--parse-thread", "on|off", None)),
                }
            }
            "precondition" => {
                let found = PRECONDITION_NAMES.iter().find(|(_, n)| *n == value);
                let mode = found.ok_or(invalid("--precondition", "clean|fill|steady", None))?;
                self.device.precondition = Some(mode.0);
            }
            "retries" => {
                self.retries = value
                    .parse::<u32>()
                    .map_err(|e| invalid("--retries", "N", Some(e.to_string())))?;
            }
            "retry_delay" => {
                self.retry_delay_ns = match value {
                    "0" => 0,
                    _ => parse_duration(value)
                        .map_err(|e| invalid("--retry-delay", "DURATION", Some(e)))?,
                }
            }
            "latency_includes_failed" => {
                self.latency_includes_failed = flag("--latency-includes-failed")?;
            }
            "fairness" => self.fairness = flag("--fairness")?,
            "jobs" => {
                let jobs = value
                    .parse::<usize>()
                    .map_err(|e| invalid("--jobs", "JOBS", Some(e.to_string())))?;
                self.jobs = Some(jobs);
            }
            _ => return Err(OptionError::Unknown(key.replace('_', "-"))),
        }
        Ok(())
    }

    /// The canonical command line that runs these options: `storsim simulate`, the device
    /// (`--device`, each `--set`), the workload (`--workload` or each `--flow`), `--seed`,
    /// then every other option that differs from its default, in one fixed order (that of a
    /// sweep point's options, then `--jobs`). Running it gives the same document.
    pub fn command_line(&self) -> Vec<String> {
        let mut line: Vec<String> = vec!["storsim".into(), "simulate".into()];
        fn put(line: &mut Vec<String>, flag: &str, value: Option<String>) {
            line.push(flag.to_string());
            line.extend(value);
        }
        put(&mut line, "--device", Some(self.device.name.clone()));
        for kv in &self.device.overrides {
            put(&mut line, "--set", Some(kv.clone()));
        }
        match &self.workload {
            WorkloadChoice::Named(name) => put(&mut line, "--workload", Some(name.clone())),
            WorkloadChoice::Flows(flows) => {
                for flow in flows {
                    put(&mut line, "--flow", Some(flow.clone()));
                }
            }
        }
        put(&mut line, "--seed", Some(self.seed.to_string()));
        if let Some(replay) = self.replay {
            put(&mut line, "--replay", Some(replay.name().into()));
        }
        if let Some(depth) = self.iodepth {
            put(&mut line, "--iodepth", Some(depth.to_string()));
        }
        if self.time_scale != 1.0 {
            put(&mut line, "--time-scale", Some(self.time_scale.to_string()));
        }
        if self.wrap {
            put(&mut line, "--wrap", None);
        }
        if self.on_refused == Refused::Count {
            put(&mut line, "--on-refused", Some("count".into()));
        }
        if let Some(max) = self.max_requests {
            put(&mut line, "--max-requests", Some(max.to_string()));
        }
        match self.window {
            Some(WindowWidth::Auto) => {}
            Some(WindowWidth::Fixed { width_ns }) => {
                put(&mut line, "--window", Some(duration_text(width_ns)));
            }
            None => put(&mut line, "--window", Some("off".into())),
        }
        line.extend(trace_options_args(&self.trace));
        if let Some(mode) = self.device.precondition {
            put(
                &mut line,
                "--precondition",
                Some(precondition_name(mode).into()),
            );
        }
        if self.retries != 0 {
            put(&mut line, "--retries", Some(self.retries.to_string()));
        }
        if self.retry_delay_ns != 0 {
            put(
                &mut line,
                "--retry-delay",
                Some(duration_text(self.retry_delay_ns)),
            );
        }
        if self.latency_includes_failed {
            put(&mut line, "--latency-includes-failed", None);
        }
        if self.fairness {
            put(&mut line, "--fairness", None);
        }
        if let Some(jobs) = self.jobs {
            put(&mut line, "--jobs", Some(jobs.to_string()));
        }
        line
    }

    /// The workload as a source: its flows (given one by one, or a flow file's), a trace
    /// read with the trace options, or a generator.
    pub fn source(&self) -> Result<WorkloadSource, SimError> {
        let options = self.trace.clone();
        let name = match &self.workload {
            WorkloadChoice::Flows(texts) => {
                if texts.is_empty() {
                    return Err(SimError::Option(OptionError::NoWorkload));
                }
                let specs = texts
                    .iter()
                    .enumerate()
                    .map(|(index, text)| flows::parse_arg(index, text))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(SimError::Workload)?;
                return Ok(WorkloadSource::Flows {
                    name: texts.join(" "),
                    flows: specs,
                    options,
                    notes: Vec::new(),
                });
            }
            WorkloadChoice::Named(name) => name,
        };
        if WorkloadSource::is_synthetic(name) {
            return Ok(WorkloadSource::Synthetic(name.clone()));
        }
        // One look at the file tells a flow file from a trace, and refuses a trace whose
        // format cannot be told before the device is loaded.
        let path = Path::new(name);
        match trace::identify(path, options.format).map_err(SimError::Workload)? {
            WorkloadFile::Flows => {
                let specs = flows::read_file(path).map_err(SimError::Workload)?;
                Ok(WorkloadSource::Flows {
                    name: name.clone(),
                    flows: specs,
                    options,
                    notes: Vec::new(),
                })
            }
            WorkloadFile::FioJob => {
                let job = fiojob::read_file(path).map_err(SimError::Workload)?;
                Ok(WorkloadSource::Flows {
                    name: name.clone(),
                    flows: job.flows,
                    options,
                    notes: job.notes,
                })
            }
            // The format is left as given: when it was not, opening the trace detects it
            // again from the file the run opens anyway (no second open), so that the workload
            // can say what detection saw.
            WorkloadFile::Trace(_) => Ok(WorkloadSource::Trace {
                path: PathBuf::from(name),
                options,
            }),
        }
    }

    /// Checks what can be checked before running: the device (with its overrides) loads,
    /// the workload's generator specs parse and its trace files exist.
    pub fn check(&self) -> Result<(), SimError> {
        storsim_config::load_device_with(&self.device.name, &self.device.overrides)
            .map_err(|e| SimError::Device(e.to_string()))?;
        match &self.workload {
            // A trace is only looked for here, not read: what it holds is read when it runs,
            // so that a sweep's unreadable trace fails its own point, not the whole plan.
            WorkloadChoice::Named(name)
                if !WorkloadSource::is_synthetic(name)
                    && !flows::is_flow_file(Path::new(name))
                    && !fiojob::is_job_file(Path::new(name)) =>
            {
                check_source(&WorkloadSource::Trace {
                    path: PathBuf::from(name),
                    options: self.trace.clone(),
                })
            }
            _ => check_source(&self.source()?),
        }
    }

    /// The engine's options for `workload` (its pacing and duration).
    pub fn engine_options(&self, workload: &Workload) -> Result<EngineOptions, OptionError> {
        Ok(EngineOptions {
            replay: replay(self.replay, self.iodepth, self.time_scale, workload.pacing)?,
            out_of_range: if self.wrap {
                OutOfRange::Wrap
            } else {
                OutOfRange::Error
            },
            on_refused: self.on_refused,
            max_requests: self.max_requests,
            duration_ns: workload.duration_ns,
            retry: Retry {
                attempts: self.retries,
                delay_ns: self.retry_delay_ns,
            },
        })
    }
}

/// Why a run's options are refused; each message is the one `storsim simulate` prints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OptionError {
    /// A value the option does not take, in the words of the command's parser.
    InvalidValue {
        /// The option, `--replay`.
        flag: &'static str,
        /// What it takes, as its help names it (`REPLAY`, `clean|fill|steady`).
        value_name: &'static str,
        /// The value given.
        value: String,
        /// Why, when there is more to say than that it is not one of the choices.
        reason: Option<String>,
    },
    /// A trace option's value, refused with what it takes.
    TraceOption {
        /// The option, `--format`.
        flag: &'static str,
        /// What is wrong.
        message: String,
    },
    /// An option `storsim simulate` does not have.
    Unknown(String),
    /// A workload of no flows.
    NoWorkload,
    /// `--iodepth` with an open loop or as fast as possible.
    IodepthWithoutClosedLoop,
    /// `--replay closed` without a depth.
    ClosedLoopWithoutIodepth,
    /// `--fairness` with a workload of one flow.
    FairnessWithoutFlows,
    /// `--precondition` for a device with no SSD, where it would do nothing.
    NothingToPrecondition {
        /// The device's name.
        device: String,
    },
}

impl fmt::Display for OptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OptionError::InvalidValue {
                flag,
                value_name,
                value,
                reason,
            } => {
                write!(f, "invalid value '{value}' for '{flag} <{value_name}>'")?;
                match reason {
                    Some(reason) => write!(f, ": {reason}"),
                    None => Ok(()),
                }
            }
            OptionError::TraceOption { flag, message } => write!(f, "{flag}: {message}"),
            OptionError::Unknown(name) => write!(f, "unexpected argument '--{name}' found"),
            OptionError::NoWorkload => write!(f, "--workload or --flow is required"),
            OptionError::IodepthWithoutClosedLoop => {
                write!(f, "--iodepth goes with --replay closed only")
            }
            OptionError::ClosedLoopWithoutIodepth => write!(f, "--replay closed needs --iodepth N"),
            OptionError::FairnessWithoutFlows => write!(
                f,
                "--fairness compares flows: give a flow file or --flow arguments"
            ),
            OptionError::NothingToPrecondition { device } => write!(
                f,
                "--precondition: {device} holds no SSD to precondition (it applies to `ssd` \
                 devices, and to arrays and hybrids of them)"
            ),
        }
    }
}

impl std::error::Error for OptionError {}

/// The trace options' command-line arguments, each that differs from its default, in their
/// place in [`SimulateOptions::command_line`] (`inspect`'s too).
pub fn trace_options_args(trace: &TraceOptions) -> Vec<String> {
    let mut args: Vec<String> = Vec::new();
    let mut put = |flag: &str, value: Option<String>| {
        args.push(flag.to_string());
        args.extend(value);
    };
    if let Some(format) = trace.format {
        put("--format", Some(format.name().into()));
    }
    if trace.skip_bad {
        put("--skip-bad", None);
    }
    match &trace.devices {
        DeviceSelection::Concat => {}
        DeviceSelection::Overlay => put("--trace-devices", Some("overlay".into())),
        DeviceSelection::Only(devs) => {
            let listed: Vec<String> = devs.iter().map(u32::to_string).collect();
            put("--trace-devices", Some(listed.join(",")));
        }
    }
    if trace.blkparse_event == BlkparseEvent::Queue {
        put("--blkparse-event", Some("Q".into()));
    }
    if !trace.parse_thread {
        put("--parse-thread", Some("off".into()));
    }
    args
}

/// `--format`'s value: a trace format by name.
pub fn parse_trace_format(name: &str) -> Result<TraceFormat, OptionError> {
    TraceFormat::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = TraceFormat::all().map(TraceFormat::name).collect();
        OptionError::TraceOption {
            flag: "--format",
            message: format!(
                "unknown trace format '{name}' (known: {})",
                known.join(", ")
            ),
        }
    })
}

/// `--trace-devices`' (or `--volume`'s) value: `concat`, `overlay`, or a device number or a
/// comma-separated list of them.
pub fn parse_trace_devices(text: &str) -> Result<DeviceSelection, OptionError> {
    Ok(match text {
        "concat" => DeviceSelection::Concat,
        "overlay" => DeviceSelection::Overlay,
        list => DeviceSelection::only(
            list.split(',')
                .map(|n| {
                    n.trim()
                        .parse::<u32>()
                        .map_err(|_| OptionError::TraceOption {
                            flag: "--trace-devices",
                            message: format!(
                                "expected concat, overlay, or device numbers separated by commas \
                             (0 to {}), got '{list}'",
                                u32::MAX
                            ),
                        })
                })
                .collect::<Result<Vec<u32>, _>>()?,
        ),
    })
}

/// `--blkparse-event`'s value: `D` or `Q`, either case.
pub fn parse_blkparse_event(text: &str) -> Result<BlkparseEvent, OptionError> {
    match text {
        "D" | "d" => Ok(BlkparseEvent::Dispatch),
        "Q" | "q" => Ok(BlkparseEvent::Queue),
        other => Err(OptionError::TraceOption {
            flag: "--blkparse-event",
            message: format!("expected D or Q, got '{other}'"),
        }),
    }
}

/// A window's width: `auto` or a duration longer than 0; the error says what it takes.
pub fn parse_window_width(text: &str) -> Result<WindowWidth, String> {
    match text {
        "auto" => Ok(WindowWidth::Auto),
        _ => match parse_duration(text) {
            Ok(0) => Err("a window must be longer than 0".into()),
            Ok(width_ns) => Ok(WindowWidth::Fixed { width_ns }),
            Err(e) => Err(format!("auto, or {e}")),
        },
    }
}

/// A duration in the largest of s, ms, us and ns that gives it whole, which reads back as
/// the same number of nanoseconds.
pub fn duration_text(ns: u64) -> String {
    for (unit, per) in [("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1_000)] {
        if ns % per == 0 {
            return format!("{}{unit}", ns / per);
        }
    }
    format!("{ns}ns")
}

/// How the workload is replayed: the chosen replay and depth, or else the workload's own
/// pacing; an open-loop replay, chosen or natural, takes `time_scale`.
pub fn replay(
    chosen: Option<ReplayChoice>,
    iodepth: Option<u32>,
    time_scale: f64,
    pacing: Pacing,
) -> Result<Replay, OptionError> {
    let replay = match (chosen, iodepth) {
        (None, None) => Replay::natural(pacing),
        (None | Some(ReplayChoice::Closed), Some(depth)) => Replay::Closed { depth },
        (Some(ReplayChoice::Closed), None) => return Err(OptionError::ClosedLoopWithoutIodepth),
        (Some(ReplayChoice::Open), None) => Replay::Open { time_scale },
        (Some(ReplayChoice::Afap), None) => Replay::AsFastAsPossible,
        (Some(_), Some(_)) => return Err(OptionError::IodepthWithoutClosedLoop),
    };
    Ok(match replay {
        Replay::Open { .. } => Replay::Open { time_scale },
        other => other,
    })
}

/// Sets every SSD of `device` to start as `mode` says, and says so in its name; refuses a
/// device with no SSD, where the option would do nothing.
pub fn precondition(device: &mut LoadedDevice, mode: PreconditionMode) -> Result<(), OptionError> {
    if storsim_config::precondition_ssds(&mut device.spec, mode) == 0 {
        return Err(OptionError::NothingToPrecondition {
            device: device.name.clone(),
        });
    }
    device.name = format!("{} [precondition={}]", device.name, precondition_name(mode));
    Ok(())
}

/// Checks what can be checked of a workload before running it: a generator spec parses, a
/// trace file exists; each flow's, for a workload of several.
pub fn check_source(source: &WorkloadSource) -> Result<(), SimError> {
    let missing = |path: &Path, e: std::io::Error| {
        SimError::Workload(storsim_workload::WorkloadError::Spec {
            message: format!("{}: {e}", path.display()),
        })
    };
    let check_one = |workload: &str| -> Result<(), SimError> {
        if workload.starts_with("synthetic:") {
            storsim_workload::synthetic::parse(workload).map_err(SimError::Workload)?;
        } else if !WorkloadSource::is_synthetic(workload) {
            std::fs::metadata(workload).map_err(|e| missing(Path::new(workload), e))?;
        }
        Ok(())
    };
    match source {
        WorkloadSource::Synthetic(text) => check_one(text),
        WorkloadSource::Trace { path, .. } => {
            std::fs::metadata(path).map_err(|e| missing(path, e))?;
            Ok(())
        }
        WorkloadSource::Flows { flows, .. } => {
            flows.iter().try_for_each(|flow| check_one(&flow.workload))
        }
    }
}

/// A finished run: the session (the device, whose counters stay readable, and the workload),
/// the replay it ran with, what it gave, and with `fairness`, each flow alone.
pub struct Simulated {
    /// The device and the workload after the run.
    pub session: Session,
    /// The replay the run used.
    pub replay: Replay,
    /// The run's statistics, series and facts.
    pub outcome: Outcome,
    /// With `fairness`: each flow's statistics alone on the device, and the fairness.
    pub alone: Option<(Vec<Summary>, Fairness)>,
}

/// A run ready to start: the device built, the workload opened, the engine's options chosen.
pub struct Prepared {
    /// The device and the workload.
    pub session: Session,
    engine: EngineOptions,
    /// The device's description before the run, for the fairness runs alone.
    alone_device: Option<LoadedDevice>,
    source: WorkloadSource,
    seed: u64,
    jobs: Option<usize>,
}

/// Loads the device of `options` (with its overrides and preconditioning), opens the
/// workload and chooses the engine's options: everything that can refuse the input before
/// the run starts.
pub fn prepare(options: &SimulateOptions) -> Result<Prepared, SimError> {
    let source = options.source()?;
    let device = &options.device;
    let mut loaded = crate::load_device(&device.name, &device.overrides)?;
    if let Some(mode) = device.precondition {
        precondition(&mut loaded, mode).map_err(SimError::Option)?;
    }
    let alone_device = options.fairness.then(|| loaded.clone());
    let mut session = Session::new(loaded, &source, options.seed)?;
    let engine = options
        .engine_options(&session.workload)
        .map_err(SimError::Option)?;
    session.window = options.window;
    session.collector.latency_includes_failed = options.latency_includes_failed;
    Ok(Prepared {
        session,
        engine,
        alone_device,
        source,
        seed: options.seed,
        jobs: options.jobs,
    })
}

impl Prepared {
    /// Runs it, with every completion also handed to `sink`, `progress` called as the engine
    /// says, and `cancel` stopping it early; then, with `fairness`, each flow alone.
    pub fn run(
        mut self,
        sink: Option<&mut dyn CompletionSink>,
        progress: &mut dyn FnMut(u64, SimTime),
        cancel: CancelToken,
    ) -> Result<Simulated, SimError> {
        let outcome = self
            .session
            .run(&self.engine, sink, progress, Some(cancel))?;
        let alone = match (self.alone_device, &self.source) {
            (
                Some(device),
                WorkloadSource::Flows {
                    flows,
                    options: trace,
                    ..
                },
            ) => {
                let jobs = self.jobs.unwrap_or_else(|| {
                    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
                });
                let alone = run_alone(&device, flows, trace, self.seed, &self.engine, jobs)?;
                let fairness = fairness(&outcome.flows, &alone);
                Some((alone, fairness))
            }
            (Some(_), _) => return Err(SimError::Option(OptionError::FairnessWithoutFlows)),
            (None, _) => None,
        };
        Ok(Simulated {
            session: self.session,
            replay: self.engine.replay,
            outcome,
            alone,
        })
    }
}

/// Runs `options`: [`prepare`], then [`Prepared::run`].
pub fn run(
    options: &SimulateOptions,
    sink: Option<&mut dyn CompletionSink>,
    progress: &mut dyn FnMut(u64, SimTime),
    cancel: CancelToken,
) -> Result<Simulated, SimError> {
    prepare(options)?.run(sink, progress, cancel)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> SimulateOptions {
        SimulateOptions::new(
            DeviceChoice::named("flashsim-2009"),
            WorkloadChoice::Named("synthetic:rw=randread,requests=100".into()),
        )
    }

    #[test]
    fn a_check_looks_for_a_trace_but_leaves_reading_it_to_the_run() {
        let dir = std::env::temp_dir().join(format!("storsim-check-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bad = dir.join("bad.trace");
        std::fs::write(&bad, "this is not a trace\n").unwrap();
        let mut o = options();
        o.workload = WorkloadChoice::Named(bad.display().to_string());
        // There, so the check passes; the run then refuses what it holds, naming the file.
        assert!(o.check().is_ok(), "{:?}", o.check());
        let e = o.source().expect_err("an unrecognisable trace");
        assert!(e.to_string().contains("bad.trace"), "{e}");
        o.workload = WorkloadChoice::Named(dir.join("missing.trace").display().to_string());
        let e = o.check().expect_err("a missing trace");
        assert!(e.to_string().contains("missing.trace"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn replay_follows_the_options_or_else_the_workload() {
        let open = Pacing::Open;
        let closed = Pacing::Closed { depth: 8 };
        // The workload's own pacing, with the time scale for an open loop.
        assert_eq!(
            replay(None, None, 0.5, open),
            Ok(Replay::Open { time_scale: 0.5 })
        );
        assert_eq!(
            replay(None, None, 0.5, closed),
            Ok(Replay::Closed { depth: 8 })
        );
        // A depth alone means a closed loop at that depth, whatever the workload's pacing.
        assert_eq!(
            replay(None, Some(3), 1.0, open),
            Ok(Replay::Closed { depth: 3 })
        );
        assert_eq!(
            replay(Some(ReplayChoice::Closed), Some(3), 1.0, closed),
            Ok(Replay::Closed { depth: 3 })
        );
        assert_eq!(
            replay(Some(ReplayChoice::Open), None, 2.0, closed),
            Ok(Replay::Open { time_scale: 2.0 })
        );
        assert_eq!(
            replay(Some(ReplayChoice::Afap), None, 2.0, open),
            Ok(Replay::AsFastAsPossible)
        );
    }

    #[test]
    fn replay_refuses_a_depth_without_a_closed_loop_and_a_closed_loop_without_one() {
        let e = replay(Some(ReplayChoice::Closed), None, 1.0, Pacing::Open).unwrap_err();
        assert_eq!(e.to_string(), "--replay closed needs --iodepth N");
        for chosen in [ReplayChoice::Open, ReplayChoice::Afap] {
            let e = replay(Some(chosen), Some(4), 1.0, Pacing::Open).unwrap_err();
            assert_eq!(e.to_string(), "--iodepth goes with --replay closed only");
        }
    }

    #[test]
    fn values_are_refused_in_the_commands_words() {
        let mut o = options();
        let cases = [
            (
                "replay",
                "sideways",
                "invalid value 'sideways' for '--replay <REPLAY>'",
            ),
            (
                "iodepth",
                "x",
                "invalid value 'x' for '--iodepth <IODEPTH>': invalid digit found in string",
            ),
            (
                "precondition",
                "wet",
                "invalid value 'wet' for '--precondition <clean|fill|steady>'",
            ),
            (
                "parse_thread",
                "maybe",
                "invalid value 'maybe' for '--parse-thread <on|off>'",
            ),
            (
                "trace_devices",
                "all",
                "--trace-devices: expected concat, overlay, or device numbers separated by commas (0 to 4294967295), got 'all'",
            ),
            (
                "trace_devices",
                "3,x",
                "--trace-devices: expected concat, overlay, or device numbers separated by commas (0 to 4294967295), got '3,x'",
            ),
            (
                "no_such_option",
                "3",
                "unexpected argument '--no-such-option' found",
            ),
        ];
        for (key, value, message) in cases {
            assert_eq!(o.set(key, value).unwrap_err().to_string(), message);
        }
        assert_eq!(o, options(), "a refused value changes nothing");
    }

    #[test]
    fn the_command_line_gives_each_option_once_in_its_place_and_reads_back() {
        let mut o = options();
        o.device.overrides.push("ssd.ftl=\"dftl\"".into());
        let texts = [
            ("window", "10ms"),
            ("retry_delay", "1500us"),
            ("replay", "closed"),
            ("iodepth", "4"),
            ("time_scale", "0.5"),
            ("precondition", "fill"),
            ("trace_devices", "12, 2,12"),
            ("parse_thread", "off"),
            ("wrap", "true"),
            ("seed", "9"),
        ];
        for (key, value) in texts {
            if key == "seed" {
                o.seed = value.parse().expect("a seed");
            } else {
                o.set(key, value).expect(key);
            }
        }
        let line = o.command_line().join(" ");
        assert_eq!(
            line,
            "storsim simulate --device flashsim-2009 --set ssd.ftl=\"dftl\" \
             --workload synthetic:rw=randread,requests=100 --seed 9 --replay closed \
             --iodepth 4 --time-scale 0.5 --wrap --window 10ms --trace-devices 2,12 \
             --parse-thread off --precondition fill --retry-delay 1500us"
        );
        // Read back option by option, the line gives the same options.
        let mut again = options();
        again.device.overrides = o.device.overrides.clone();
        again.seed = o.seed;
        let words = o.command_line();
        let mut i = 10; // past --seed N
        while i < words.len() {
            let key = words[i].trim_start_matches("--");
            match words.get(i + 1).filter(|w| !w.starts_with("--")) {
                Some(value) => {
                    again.set(key, value).expect(key);
                    i += 2;
                }
                None => {
                    again.set(key, "true").expect(key);
                    i += 1;
                }
            }
        }
        assert_eq!(again, o);
        assert_eq!(
            options().command_line().join(" "),
            "storsim simulate --device flashsim-2009 \
             --workload synthetic:rw=randread,requests=100 --seed 1"
        );
    }

    #[test]
    fn fairness_needs_flows_and_precondition_needs_an_ssd() {
        let mut o = options();
        o.fairness = true;
        let Err(e) = run(&o, None, &mut |_, _| {}, CancelToken::new()) else {
            panic!("fairness of one flow accepted");
        };
        assert!(
            e.to_string().starts_with("--fairness compares flows"),
            "{e}"
        );
        let mut o = options();
        o.device = DeviceChoice::named("stec-zeus");
        o.device.precondition = Some(PreconditionMode::SequentialFill);
        let Err(e) = run(&o, None, &mut |_, _| {}, CancelToken::new()) else {
            panic!("preconditioning a device without an SSD accepted");
        };
        assert!(
            e.to_string()
                .starts_with("--precondition: stec-zeus holds no SSD"),
            "{e}"
        );
    }
}
