//! Running a sweep's points: those whose result exists are read back, the rest run on `jobs`
//! threads, each written whole or not at all, and everything lands in one results table.

use crate::point::{Point, LEADING_COLUMNS};
use crate::table::{flatten, Cell, Table};
use crate::{SweepError, POINTS_DIR};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;
use storsim_engine::CancelToken;

/// What runs a point: the caller's simulation (the CLI runs `storsim simulate`'s code).
pub trait PointRunner: Sync {
    /// Whether the point can run: its device with its overrides, its workload, its options.
    /// Called for every point before any runs; the message says what is wrong.
    fn check(&self, point: &Point) -> Result<(), String>;

    /// Runs the point and returns its JSON document's text (with the point's entry, which
    /// `storsim-output` makes, as `point`: [`read_point`] checks its `id`), or `None` when
    /// `cancel` stopped it before the end.
    fn run(&self, point: &Point, cancel: &CancelToken) -> Result<Option<String>, String>;
}

/// What became of a point.
#[derive(Clone, Debug, PartialEq)]
pub enum Status {
    /// Run now; its document is written.
    Ran,
    /// Its document was there from an earlier run and was read back.
    Reused,
    /// It failed with this message; no document is written, so the next run tries again.
    Failed(String),
    /// Not run: the sweep stopped first (Ctrl-C, `--fail-fast`).
    Pending,
}

impl Status {
    /// The status column's value.
    pub fn column(&self) -> &'static str {
        match self {
            Status::Ran | Status::Reused => "ok",
            Status::Failed(_) => "failed",
            Status::Pending => "pending",
        }
    }
}

/// Hears how the sweep goes, on the thread that called [`run`].
pub trait Observer {
    /// Before any point runs: how many will (those not found from an earlier run).
    fn planned(&mut self, to_run: usize);
    /// Point `index` started running.
    fn started(&mut self, index: usize);
    /// Point `index` ended (`Ran`, `Failed` or `Pending` if it was stopped).
    fn finished(&mut self, index: usize, status: &Status);
    /// Called every quarter of a second or so while points run.
    fn tick(&mut self);
}

/// How to run a sweep.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Points run at once.
    pub jobs: usize,
    /// Stop at the first failure (the points running are stopped too).
    pub fail_fast: bool,
}

/// A finished (or stopped) sweep.
#[derive(Debug)]
pub struct Outcome {
    /// Each point's status, in point order.
    pub statuses: Vec<Status>,
    /// The results table, one row per point in point order.
    pub table: Table,
}

/// Checks every point with `runner` before anything runs; the first refusal names the point.
pub fn check(points: &[Point], runner: &dyn PointRunner) -> Result<(), SweepError> {
    // Replicates differ by their seed alone, which nothing checked depends on: each
    // device, workload and options are checked once (a large device file is read once, not
    // once per seed).
    let mut checked = std::collections::HashSet::new();
    for (i, point) in points.iter().enumerate() {
        let mut unseeded = point.clone();
        unseeded.seed = 0;
        if !checked.insert(unseeded.simulate_args(Path::new("")).join("\0")) {
            continue;
        }
        runner.check(point).map_err(|message| SweepError::Point {
            index: i + 1,
            label: point.label.clone(),
            message,
        })?;
    }
    Ok(())
}

/// The document file of `point` in the output folder `out`.
pub fn point_file(out: &Path, point: &Point) -> PathBuf {
    out.join(POINTS_DIR).join(format!("{}.json", point.id))
}

/// Runs the points of a sweep into the folder `out`: reads back those already there, runs the
/// rest on `options.jobs` threads, and returns every point's status and the results table
/// (`parameter_columns` first). `stop` stops the sweep: points running are cancelled and
/// left `Pending`, as are those not started.
pub fn run(
    points: &[Point],
    out: &Path,
    runner: &dyn PointRunner,
    options: &RunOptions,
    stop: &CancelToken,
    observer: &mut dyn Observer,
) -> Result<Outcome, SweepError> {
    let dir = out.join(POINTS_DIR);
    std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
    remove_partial_files(&dir)?;
    let mut statuses = vec![Status::Pending; points.len()];
    let mut rows: Vec<Option<Vec<(String, Cell)>>> = vec![None; points.len()];
    let mut todo = Vec::new();
    for (i, point) in points.iter().enumerate() {
        match read_point(out, point) {
            Some(row) => {
                statuses[i] = Status::Reused;
                rows[i] = Some(row);
            }
            None => todo.push(i),
        }
    }

    observer.planned(todo.len());
    // The sweep's own token, so that --fail-fast can stop the points running without
    // touching the caller's; the caller's `stop` is passed on at every tick.
    let halt = CancelToken::new();
    let next = AtomicUsize::new(0);
    let (send, receive) = mpsc::channel::<Message>();
    std::thread::scope(|scope| {
        for _ in 0..options.jobs.clamp(1, todo.len().max(1)) {
            let send = send.clone();
            let (todo, next, halt) = (&todo, &next, &halt);
            let fail_fast = options.fail_fast;
            scope.spawn(move || loop {
                if halt.is_cancelled() {
                    break;
                }
                let Some(&index) = todo.get(next.fetch_add(1, Ordering::Relaxed)) else {
                    break;
                };
                if send.send(Message::Started(index)).is_err() {
                    break;
                }
                let result = run_one(&points[index], out, runner, halt);
                // Here rather than when the message arrives, so that this thread does not
                // take another point first.
                if result.is_err() && fail_fast {
                    halt.cancel();
                }
                if send.send(Message::Finished(index, result)).is_err() {
                    break;
                }
            });
        }
        drop(send);
        loop {
            match receive.recv_timeout(Duration::from_millis(250)) {
                Ok(Message::Started(index)) => observer.started(index),
                Ok(Message::Finished(index, result)) => {
                    let status = match result {
                        Ok(Some(row)) => {
                            rows[index] = Some(row);
                            Status::Ran
                        }
                        Ok(None) => Status::Pending,
                        Err(message) => Status::Failed(message),
                    };
                    observer.finished(index, &status);
                    statuses[index] = status;
                }
                Err(mpsc::RecvTimeoutError::Timeout) => observer.tick(),
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
            if stop.is_cancelled() {
                halt.cancel();
            }
        }
    });

    let table = results_table(points, &statuses, rows);
    Ok(Outcome { statuses, table })
}

/// The results table of `points` whose statuses are `statuses` and whose results (a document
/// [`flatten`]ed, for those that ran or were read back) are `rows`, all in point order: the
/// leading columns, the parameters, then the results. [`run`] makes its table so; a caller
/// that runs the points elsewhere (on a cluster) makes the same table with it.
pub fn results_table(
    points: &[Point],
    statuses: &[Status],
    rows: Vec<Option<Vec<(String, Cell)>>>,
) -> Table {
    assert_eq!(points.len(), statuses.len(), "a status for every point");
    assert_eq!(points.len(), rows.len(), "a row for every point");
    let named: Vec<Vec<(String, Cell)>> = points
        .iter()
        .zip(statuses)
        .zip(rows)
        .map(|((point, status), results)| {
            let error = match status {
                Status::Failed(message) => Cell::Text(message.clone()),
                _ => Cell::Empty,
            };
            let leading = [
                Cell::Text(point.id.clone()),
                Cell::Text(point.label.clone()),
                Cell::Text(status.column().to_string()),
                error,
            ];
            let mut row: Vec<(String, Cell)> = LEADING_COLUMNS
                .iter()
                .map(|c| c.to_string())
                .zip(leading)
                .collect();
            row.extend(point.parameters.iter().cloned());
            row.extend(results.unwrap_or_default());
            row
        })
        .collect();
    let mut leading: Vec<String> = LEADING_COLUMNS.iter().map(|s| s.to_string()).collect();
    if let Some(first) = points.first() {
        leading.extend(first.parameters.iter().map(|(c, _)| c.clone()));
    }
    Table::from_named(&leading, &named)
}

enum Message {
    Started(usize),
    Finished(usize, Result<Option<Vec<(String, Cell)>>, String>),
}

/// Runs one point and writes its document, whole or not at all; returns its results, `None`
/// when stopped.
fn run_one(
    point: &Point,
    out: &Path,
    runner: &dyn PointRunner,
    halt: &CancelToken,
) -> Result<Option<Vec<(String, Cell)>>, String> {
    let Some(text) = runner.run(point, halt)? else {
        return Ok(None);
    };
    // The results come from the text, as a later run reads them back from the file, and not
    // from the runner's own values: JSON's decimal floats do not always parse back to the
    // last bit, and the table must be the same whether a point ran now or before.
    let doc: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("the point's document is not JSON: {e}"))?;
    let path = point_file(out, point);
    write_whole(&path, text.as_bytes()).map_err(|e| e.to_string())?;
    Ok(Some(flatten(&doc)))
}

/// The results of `point` if its document is in the output folder `out` from an earlier run
/// and is that point's (a document is written whole or not at all, so one that does not
/// parse was put there by something else, and the point runs again).
pub fn read_point(out: &Path, point: &Point) -> Option<Vec<(String, Cell)>> {
    let text = std::fs::read_to_string(point_file(out, point)).ok()?;
    let doc: serde_json::Value = serde_json::from_str(&text).ok()?;
    (doc.get("point")?.get("id")?.as_str()? == point.id).then(|| flatten(&doc))
}

/// The prefix of files being written; a crash leaves them behind, and the next run removes them.
const PARTIAL_PREFIX: &str = ".partial-";

/// Writes `bytes` to `path` through a file beside it renamed into place, so that a reader, or
/// a sweep killed half-way, never sees a partial document.
pub fn write_whole(path: &Path, bytes: &[u8]) -> Result<(), SweepError> {
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let partial = path.with_file_name(format!("{PARTIAL_PREFIX}{}-{name}", std::process::id()));
    std::fs::write(&partial, bytes).map_err(|e| io(&partial, e))?;
    std::fs::rename(&partial, path).map_err(|e| io(path, e))
}

fn remove_partial_files(dir: &Path) -> Result<(), SweepError> {
    for entry in std::fs::read_dir(dir).map_err(|e| io(dir, e))? {
        let entry = entry.map_err(|e| io(dir, e))?;
        if entry
            .file_name()
            .to_string_lossy()
            .starts_with(PARTIAL_PREFIX)
        {
            std::fs::remove_file(entry.path()).map_err(|e| io(&entry.path(), e))?;
        }
    }
    Ok(())
}

fn io(path: &Path, e: std::io::Error) -> SweepError {
    SweepError::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}
