//! `storsim._storsim`: the extension module under the Python package `storsim`, a thin layer
//! over [`storsim::api`]. It hands Python plain data (document texts, numeric columns as
//! bytes that numpy reads without a Python object per value); the package's Python code
//! (`python/storsim/`) builds the `Run`, the DataFrames and the Dask sweep from it.
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
use storsim::api::{self, CancelToken, PointResult};
use storsim::CliError;

create_exception!(
    _storsim,
    StorsimError,
    PyValueError,
    "Bad input (an unknown device or option, a malformed trace or spec) or a failed run, with \
     the message the storsim command prints."
);

fn error(e: CliError) -> PyErr {
    StorsimError::new_err(e.message)
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

/// simulate(args, requests) -> dict
///
/// Runs `storsim simulate ARGS...` in process. Returns a dict: `document` (the JSON text,
/// byte-identical to `simulate --json`), `series` (a list of `(name, float64 bytes)`),
/// `requests` (a dict of column name to `(numpy dtype, bytes)`, or None), `op_names`,
/// `device_failed` (a message or None) and `cancelled`.
#[pyfunction]
fn simulate<'py>(
    py: Python<'py>,
    args: Vec<String>,
    requests: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let cancel = CancelToken::new();
    let run =
        interruptible(py, &cancel, || api::simulate(&args, requests, &cancel))?.map_err(error)?;
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

/// inspect(args) -> str
///
/// Runs `storsim inspect ARGS...` and returns the characterisation's JSON text.
#[pyfunction]
fn inspect(py: Python<'_>, args: Vec<String>) -> PyResult<String> {
    interruptible(py, &CancelToken::new(), || api::inspect(&args))?.map_err(error)
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

/// run_point(command_line, point_json, original=None, local=None) -> str | None
///
/// Runs one sweep point from its `storsim simulate ...` command line and returns its
/// document's text as `storsim sweep` writes it (None if interrupted). With `original` and
/// `local`, the trace `original` is read from its copy `local`, and the document is the one
/// the original gives.
#[pyfunction]
#[pyo3(signature = (command_line, point_json, original=None, local=None))]
fn run_point(
    py: Python<'_>,
    command_line: Vec<String>,
    point_json: String,
    original: Option<String>,
    local: Option<String>,
) -> PyResult<Option<String>> {
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
        api::run_point(&command_line, &point_json, copy, &cancel)
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

    /// The points as dicts (id, label, command_line, point_json), in table order.
    fn points<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for p in self.plan.points() {
            let d = PyDict::new(py);
            d.set_item("id", p.id)?;
            d.set_item("label", p.label)?;
            d.set_item("command_line", p.command_line)?;
            d.set_item("point_json", p.point_json)?;
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
