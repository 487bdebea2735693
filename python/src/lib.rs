//! `storsim._storsim`: the extension module under the Python package `storsim`, a thin layer
//! over [`storsim_api`], the typed library: keyword arguments become a
//! [`SimulateOptions`] without any command line in between. It hands Python plain data
//! (document texts, numeric columns as bytes that numpy reads without a Python object per
//! value); the package's Python code (`python/storsim/`) builds the `Run`, the DataFrames and
//! the Dask sweep from it.
//!
//! Every call that simulates runs on a thread of its own with the GIL released, while the
//! calling thread wakes ten times a second to let Python handle signals: Ctrl-C cancels the
//! run's token, waits for the run to stop, and raises `KeyboardInterrupt`.

use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;
use storsim_api::{
    self as api, CancelToken, DeviceChoice, PointResult, SimulateOptions, TraceOptions,
    WorkloadChoice,
};

create_exception!(
    _storsim,
    StorsimError,
    PyValueError,
    "Bad input (an unknown device or option, a malformed trace or spec) or a failed run, with \
     the message the storsim command prints."
);

fn error(e: impl std::fmt::Display) -> PyErr {
    StorsimError::new_err(e.to_string())
}

/// How often the calling thread looks for a signal while a run goes on.
const SIGNAL_POLL: Duration = Duration::from_millis(100);

/// Runs `work` on a thread of its own with the GIL released, handling Python's signals on
/// this thread meanwhile; a signal handler's exception (`KeyboardInterrupt`) cancels `cancel`,
/// waits for `work` to stop, and is raised.
fn interruptible<T: Send>(
    py: Python<'_>,
    cancel: &CancelToken,
    work: impl FnOnce() -> T + Send,
) -> PyResult<T> {
    let (send, mut receive) = mpsc::channel();
    std::thread::scope(|scope| {
        scope.spawn(move || {
            // The receiver is gone only once this function returned, which it does after
            // the result arrived or the thread ended.
            let _ = send.send(work());
        });
        loop {
            // The receiver moves into the GIL-free closure and back: a borrowed one is not
            // `Send`.
            let (got, back) = py.detach(move || (receive.recv_timeout(SIGNAL_POLL), receive));
            receive = back;
            match got {
                Ok(value) => return Ok(value),
                Err(RecvTimeoutError::Disconnected) => {
                    // The thread panicked; leaving the scope raises its panic in Python.
                    return Err(PyRuntimeError::new_err("the run ended without a result"));
                }
                Err(RecvTimeoutError::Timeout) => {
                    if let Err(e) = py.check_signals() {
                        cancel.cancel();
                        let _ = py.detach(move || receive.recv());
                        return Err(e);
                    }
                }
            }
        }
    })
}

fn bytes<'py, T: bytemuck::Pod>(py: Python<'py>, values: &[T]) -> Bound<'py, PyBytes> {
    PyBytes::new(py, bytemuck::cast_slice(values))
}

/// An option given as a word or a number (`replay="closed"`, `trace_devices=2`,
/// `window="10ms"`), set from its text as the library reads it.
fn set_text(
    options: &mut SimulateOptions,
    key: &str,
    value: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    if let Some(value) = value {
        let text = value.str()?.to_string();
        options.set(key, &text).map_err(error)?;
    }
    Ok(())
}

/// The trace options from keyword arguments (`format`, `skip_bad`, `trace_devices`,
/// `blkparse_event`, `parse_thread`), read as a run's are, so that a value refused or an
/// unknown name has the command's message.
fn trace_options(options: Option<&Bound<'_, PyDict>>) -> PyResult<TraceOptions> {
    const TRACE_OPTIONS: [&str; 5] = [
        "format",
        "skip_bad",
        "trace_devices",
        "blkparse_event",
        "parse_thread",
    ];
    let mut run = SimulateOptions::new(DeviceChoice::named(""), WorkloadChoice::Flows(Vec::new()));
    for (key, value) in options.into_iter().flatten() {
        let key: String = key.extract()?;
        if value.is_none() {
            continue;
        }
        if !TRACE_OPTIONS.contains(&key.as_str()) {
            return Err(error(api::OptionError::Unknown(key.replace('_', "-"))));
        }
        match (key.as_str(), value.extract::<bool>()) {
            ("skip_bad", Ok(skip)) => run.trace.skip_bad = skip,
            _ => set_text(&mut run, &key, Some(&value))?,
        }
    }
    Ok(run.trace)
}

/// The run the keyword arguments of `storsim.simulate` describe: `device` and `workload` (or
/// `flow`, a list of flows), `set` (a list of `KEY=VALUE` device-file keys), and each run
/// option by its name, a number as a number and a choice or a duration as its word
/// (`replay="closed"`, `window="10ms"`). A `None` leaves an option at its default. An
/// unknown name or a value refused is an error with the command's message.
fn simulate_options(
    device: String,
    workload: Option<String>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<SimulateOptions> {
    let mut flows = None;
    let mut overrides = Vec::new();
    let mut given = Vec::new();
    for (key, value) in options.into_iter().flatten() {
        let key: String = key.extract()?;
        match key.as_str() {
            _ if value.is_none() => {}
            "flow" => flows = Some(value.extract::<Vec<String>>()?),
            "set" => overrides = value.extract::<Vec<String>>()?,
            _ => given.push((key, value)),
        }
    }
    let workload = match (workload, flows) {
        (_, Some(flows)) if !flows.is_empty() => WorkloadChoice::Flows(flows),
        (Some(name), _) => WorkloadChoice::Named(name),
        (None, _) => return Err(error(api::OptionError::NoWorkload)),
    };
    let mut run = SimulateOptions::new(
        DeviceChoice {
            name: device,
            overrides,
            precondition: None,
        },
        workload,
    );
    for (key, value) in given {
        // Numbers and flags are taken as Python gives them; anything else (a word, or a
        // number given as text) is read as the command reads its text, with the command's
        // message if refused.
        let taken = match key.as_str() {
            "seed" => value.extract().map(|v| run.seed = v).is_ok(),
            "iodepth" => value.extract().map(|v| run.iodepth = Some(v)).is_ok(),
            "time_scale" => value.extract().map(|v| run.time_scale = v).is_ok(),
            "max_requests" => value.extract().map(|v| run.max_requests = Some(v)).is_ok(),
            "retries" => value.extract().map(|v| run.retries = v).is_ok(),
            "jobs" => value.extract().map(|v| run.jobs = Some(v)).is_ok(),
            "wrap" => value.extract().map(|v| run.wrap = v).is_ok(),
            "skip_bad" => value.extract().map(|v| run.trace.skip_bad = v).is_ok(),
            "latency_includes_failed" => value
                .extract()
                .map(|v| run.latency_includes_failed = v)
                .is_ok(),
            "fairness" => value.extract().map(|v| run.fairness = v).is_ok(),
            _ => false,
        };
        if !taken {
            let text = value.str()?.to_string();
            run.set(&key, &text).map_err(error)?;
        }
    }
    Ok(run)
}

/// The keyword arguments of `storsim.simulate` that describe `options` (its options that
/// differ from their defaults, with `device`, `workload` or `flow`, `set` and `seed`): what
/// [`simulate_options`] reads back into the same options.
fn simulate_kwargs<'py>(
    py: Python<'py>,
    options: &SimulateOptions,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("device", &options.device.name)?;
    if !options.device.overrides.is_empty() {
        d.set_item("set", &options.device.overrides)?;
    }
    match &options.workload {
        WorkloadChoice::Named(name) => d.set_item("workload", name)?,
        WorkloadChoice::Flows(flows) => d.set_item("flow", flows)?,
    }
    d.set_item("seed", options.seed)?;
    // Every other option that differs from its default, in the word or number the Python
    // package takes for it.
    if let Some(mode) = options.device.precondition {
        d.set_item("precondition", api::precondition_name(mode))?;
    }
    if let Some(replay) = options.replay {
        d.set_item("replay", replay.name())?;
    }
    d.set_item("iodepth", options.iodepth)?;
    d.set_item("time_scale", options.time_scale)?;
    d.set_item("wrap", options.wrap)?;
    if options.on_refused == api::Refused::Count {
        d.set_item("on_refused", "count")?;
    }
    d.set_item("max_requests", options.max_requests)?;
    match options.window {
        Some(api::WindowWidth::Auto) => {}
        Some(api::WindowWidth::Fixed { width_ns }) => {
            d.set_item("window", api::duration_text(width_ns))?;
        }
        None => d.set_item("window", "off")?,
    }
    let trace = &options.trace;
    d.set_item("format", trace.format.map(|f| f.name()))?;
    d.set_item("skip_bad", trace.skip_bad)?;
    match &trace.devices {
        api::DeviceSelection::Concat => {}
        api::DeviceSelection::Overlay => d.set_item("trace_devices", "overlay")?,
        api::DeviceSelection::Only(devs) => match devs[..] {
            [n] => d.set_item("trace_devices", n)?,
            _ => {
                let listed: Vec<String> = devs.iter().map(u32::to_string).collect();
                d.set_item("trace_devices", listed.join(","))?
            }
        },
    }
    if trace.blkparse_event == api::BlkparseEvent::Queue {
        d.set_item("blkparse_event", "Q")?;
    }
    if !trace.parse_thread {
        d.set_item("parse_thread", "off")?;
    }
    d.set_item("retries", options.retries)?;
    if options.retry_delay_ns != 0 {
        d.set_item("retry_delay", api::duration_text(options.retry_delay_ns))?;
    }
    d.set_item("latency_includes_failed", options.latency_includes_failed)?;
    d.set_item("fairness", options.fairness)?;
    d.set_item("jobs", options.jobs)?;
    Ok(d)
}

/// simulate(device, workload=None, *, requests=False, requests_csv=None, **options) -> dict
///
/// Runs a simulation in process: `device` a preset name or a device file's path, `workload`
/// a trace path, a generator spec or a flow file, and the options as [`simulate_options`]
/// reads them. Returns a dict: `document` (the JSON text, byte-identical to `simulate --json`
/// given the options' canonical command line, which it records), `series` (a list of
/// `(name, float64 bytes)`), `requests` (a dict of column name to `(numpy dtype, bytes)`, or
/// None), `op_names`, `device_failed` (a message or None) and `cancelled`.
#[pyfunction]
#[pyo3(signature = (device, workload=None, *, requests=false, requests_csv=None, **options))]
fn simulate<'py>(
    py: Python<'py>,
    device: String,
    workload: Option<String>,
    requests: bool,
    requests_csv: Option<PathBuf>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyDict>> {
    let options = simulate_options(device, workload, options)?;
    let cancel = CancelToken::new();
    let run = interruptible(py, &cancel, || {
        api::simulate(&options, requests, requests_csv.as_deref(), &cancel)
    })?
    .map_err(error)?;
    let out = PyDict::new(py);
    out.set_item("document", &run.document)?;
    out.set_item("device_failed", &run.device_failed)?;
    out.set_item("cancelled", run.cancelled)?;
    out.set_item("op_names", api::OP_NAMES.to_vec())?;
    let series = PyList::empty(py);
    for (name, values) in run.series.iter().flatten() {
        series.append((name, bytes(py, values)))?;
    }
    out.set_item("series", series)?;
    match &run.requests {
        None => out.set_item("requests", py.None())?,
        Some(r) => {
            let columns = PyDict::new(py);
            columns.set_item("id", ("<u8", bytes(py, &r.id)))?;
            columns.set_item("op", ("u1", bytes(py, &r.op)))?;
            columns.set_item("flow", ("<u2", bytes(py, &r.flow)))?;
            columns.set_item("offset_bytes", ("<u8", bytes(py, &r.offset_bytes)))?;
            columns.set_item("len_bytes", ("<u8", bytes(py, &r.len_bytes)))?;
            columns.set_item("arrival_ns", ("<u8", bytes(py, &r.arrival_ns)))?;
            columns.set_item("service_start_ns", ("<u8", bytes(py, &r.service_start_ns)))?;
            columns.set_item("finish_ns", ("<u8", bytes(py, &r.finish_ns)))?;
            out.set_item("requests", columns)?;
        }
    }
    Ok(out)
}

/// inspect(trace, **options) -> str
///
/// Characterises a trace (or a generator spec that gives `span`) read with the trace options
/// (`format`, `skip_bad`, `trace_devices`, `blkparse_event`, `parse_thread`) and returns the
/// JSON text `storsim inspect --json` writes, recording the canonical command line.
#[pyfunction]
#[pyo3(signature = (trace, **options))]
fn inspect(py: Python<'_>, trace: String, options: Option<&Bound<'_, PyDict>>) -> PyResult<String> {
    let options = trace_options(options)?;
    interruptible(py, &CancelToken::new(), || api::inspect(&trace, &options))?.map_err(error)
}

/// presets() -> list[tuple[str, str, str]]
///
/// The built-in devices as (name, model, summary), in `storsim presets`' order.
#[pyfunction]
fn presets() -> Vec<(&'static str, &'static str, &'static str)> {
    api::presets()
        .into_iter()
        .map(|p| (p.name, p.model, p.summary))
        .collect()
}

/// report(runs, out, plots=None)
///
/// Runs `storsim report RUNS... --out OUT [--plots PLOTS]`.
#[pyfunction]
#[pyo3(signature = (runs, out, plots=None))]
fn report(
    py: Python<'_>,
    runs: Vec<PathBuf>,
    out: PathBuf,
    plots: Option<PathBuf>,
) -> PyResult<()> {
    interruptible(py, &CancelToken::new(), || {
        api::report(&runs, &out, plots.as_deref())
    })?
    .map_err(error)
}

/// run_point(options, command_line, point_json, original=None, local=None) -> str | None
///
/// Runs one sweep point (its `options`, the keyword arguments of `simulate` its dict from
/// `SweepPlan.points` gives, its `command_line` and `point_json`) and returns its document's
/// text as `storsim sweep` writes it (None if interrupted). With `original` and `local`, the
/// trace `original` is read from its copy `local`, and the document is the one the original
/// gives.
#[pyfunction]
#[pyo3(signature = (options, command_line, point_json, original=None, local=None))]
fn run_point(
    py: Python<'_>,
    options: &Bound<'_, PyDict>,
    command_line: Vec<String>,
    point_json: String,
    original: Option<String>,
    local: Option<String>,
) -> PyResult<Option<String>> {
    let rest = options.copy()?;
    let device: String = match rest.get_item("device")? {
        Some(device) => device.extract()?,
        None => return Err(PyValueError::new_err("the point's options name no device")),
    };
    let workload: Option<String> = match rest.get_item("workload")? {
        Some(workload) => workload.extract()?,
        None => None,
    };
    rest.del_item("device")?;
    if workload.is_some() {
        rest.del_item("workload")?;
    }
    let options = simulate_options(device, workload, Some(&rest))?;
    let copy = match (&original, &local) {
        (Some(original), Some(local)) => Some(api::TraceCopy { original, local }),
        (None, None) => None,
        _ => {
            return Err(PyValueError::new_err(
                "give both original and local, or neither",
            ))
        }
    };
    let cancel = CancelToken::new();
    interruptible(py, &cancel, || {
        api::run_point(&options, &command_line, &point_json, copy, &cancel)
    })?
    .map_err(error)
}

/// SweepPlan(spec, size=None)
///
/// A sweep spec read, expanded into points and checked, as `storsim sweep` does first.
#[pyclass(frozen)]
struct SweepPlan {
    plan: api::SweepPlan,
}

fn point_result(status: &str, text: String) -> PyResult<PointResult> {
    Ok(match status {
        "ran" => PointResult::Ran(text),
        "reused" => PointResult::Reused(text),
        "failed" => PointResult::Failed(text),
        "pending" => PointResult::Pending,
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown point status {other:?} (ran, reused, failed or pending)"
            )))
        }
    })
}

/// A point's result for Python: its status (ran, reused, failed, pending) and its document or
/// error message.
type PointPair = (&'static str, String);

fn result_pair(result: PointResult) -> PointPair {
    match result {
        PointResult::Ran(text) => ("ran", text),
        PointResult::Reused(text) => ("reused", text),
        PointResult::Failed(message) => ("failed", message),
        PointResult::Pending => ("pending", String::new()),
    }
}

#[pymethods]
impl SweepPlan {
    /// SweepPlan(spec, size=None, text=None): the spec file `spec`, or, with `text`, that
    /// text as if read from `spec` (whose folder relative paths start from).
    #[new]
    #[pyo3(signature = (spec, size=None, text=None))]
    fn new(
        py: Python<'_>,
        spec: PathBuf,
        size: Option<String>,
        text: Option<String>,
    ) -> PyResult<Self> {
        let plan = interruptible(py, &CancelToken::new(), || match &text {
            Some(text) => api::SweepPlan::parse(text, &spec, size.as_deref()),
            None => api::SweepPlan::load(&spec, size.as_deref()),
        })?
        .map_err(error)?;
        Ok(SweepPlan { plan })
    }

    /// The spec's name.
    #[getter]
    fn name(&self) -> &str {
        self.plan.name()
    }

    /// The points as dicts (id, label, command_line, point_json, options: the keyword
    /// arguments of `simulate` that run it, trace: the trace file it reads or None), in
    /// table order.
    fn points<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for p in self.plan.points() {
            let d = PyDict::new(py);
            d.set_item("id", p.id)?;
            d.set_item("label", p.label)?;
            d.set_item("command_line", p.command_line)?;
            d.set_item("point_json", p.point_json)?;
            d.set_item("options", simulate_kwargs(py, &p.options)?)?;
            d.set_item("trace", p.trace)?;
            list.append(d)?;
        }
        Ok(list)
    }

    /// run(out, jobs) -> (csv bytes, [(status, text)])
    ///
    /// Runs the sweep on `jobs` threads into `out` as `storsim sweep --out OUT` does.
    fn run<'py>(
        &self,
        py: Python<'py>,
        out: PathBuf,
        jobs: usize,
    ) -> PyResult<(Bound<'py, PyBytes>, Vec<PointPair>)> {
        let cancel = CancelToken::new();
        let (csv, results) =
            interruptible(py, &cancel, || self.plan.run(&out, jobs, &cancel))?.map_err(error)?;
        let results = results.into_iter().map(result_pair).collect();
        Ok((PyBytes::new(py, &csv), results))
    }

    /// The document of point `index` found in `out` from an earlier run, or None.
    fn existing(&self, out: PathBuf, index: usize) -> Option<String> {
        self.plan.existing(&out, index)
    }

    /// Writes point `index`'s document into `out`, whole or not at all.
    fn write_point(&self, out: PathBuf, index: usize, document: &str) -> PyResult<()> {
        self.plan.write_point(&out, index, document).map_err(error)
    }

    /// table_csv(results, out=None) -> bytes
    ///
    /// `results.csv`'s bytes from each point's (status, text), status one of ran, reused,
    /// failed (text: the message) or pending; with `out`, results.csv and report.html are
    /// written there too.
    #[pyo3(signature = (results, out=None))]
    fn table_csv<'py>(
        &self,
        py: Python<'py>,
        results: Vec<(String, String)>,
        out: Option<PathBuf>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let results = results
            .into_iter()
            .map(|(status, text)| point_result(&status, text))
            .collect::<PyResult<Vec<_>>>()?;
        let csv = self
            .plan
            .table_csv(&results, out.as_deref().map(Path::new))
            .map_err(error)?;
        Ok(PyBytes::new(py, &csv))
    }
}

/// The storsim simulator, in process (the Python package's compiled part).
#[pymodule]
fn _storsim(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("StorsimError", m.py().get_type::<StorsimError>())?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(inspect, m)?)?;
    m.add_function(wrap_pyfunction!(presets, m)?)?;
    m.add_function(wrap_pyfunction!(report, m)?)?;
    m.add_function(wrap_pyfunction!(run_point, m)?)?;
    m.add_class::<SweepPlan>()?;
    Ok(())
}
