//! The response times a trace measured on the real device, read beside its records.
//!
//! Some traces say how long each request took on the device they were recorded on: MSR
//! Cambridge's `ResponseTime` column, blkparse's completion (`C`) events paired with their
//! dispatches (`D`), a storsim recording's finish times, DiskSim's validation traces. A
//! validation replays the records and compares the simulated times with these.
//!
//! The times are read in a pass of their own ([`measured_response_times`]) and keyed by the
//! record's position (its line), so that the records a workload yields stay as they are: the
//! simulation path neither carries nor parses anything more, and every device selection or
//! skipping of bad records applies to the records as it always does. A record's measured time is
//! then looked up by its [`Record::origin`](crate::Record::origin).

use super::{detect, ParseContext, TraceOptions};
use crate::WorkloadError;
use std::path::Path;

/// What a format's measuring pass returns: every measured response time in its input, keyed by
/// the position of the record it belongs to.
pub(crate) type MeasuredFn = fn(
    Box<dyn std::io::BufRead>,
    ParseContext,
    &TraceOptions,
) -> Result<MeasuredTimes, WorkloadError>;

/// The measured response times of a trace's records.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MeasuredTimes {
    /// `(record origin, response time in ns)`, ascending by origin, one per measured record.
    times: Vec<(u64, u64)>,
    /// Completion events that matched no request issued earlier in the trace (a blkparse `C`
    /// without its `D`, as for requests already in flight when tracing started); left out.
    pub unmatched_completions: u64,
}

impl MeasuredTimes {
    /// Builds the set from `(origin, response_ns)` pairs in any order. A position given twice
    /// keeps its first time.
    pub(crate) fn from_pairs(mut times: Vec<(u64, u64)>, unmatched_completions: u64) -> Self {
        times.sort_by_key(|&(origin, _)| origin);
        times.dedup_by_key(|&mut (origin, _)| origin);
        MeasuredTimes {
            times,
            unmatched_completions,
        }
    }

    /// The response time measured for the record at `origin`, in nanoseconds, or `None` when
    /// the trace measured none for it (a blkparse dispatch whose completion the trace lacks).
    pub fn response_ns(&self, origin: u64) -> Option<u64> {
        self.times
            .binary_search_by_key(&origin, |&(o, _)| o)
            .ok()
            .map(|i| self.times[i].1)
    }

    /// How many records have a measured time.
    pub fn len(&self) -> usize {
        self.times.len()
    }

    /// Whether no record has a measured time.
    pub fn is_empty(&self) -> bool {
        self.times.is_empty()
    }
}

/// Reads the response times the trace at `path` measured, keyed by record position, with the
/// format, bad-record policy and blkparse event of `opts` (device selection does not matter: the
/// positions are the file's). Formats that measure nothing are refused with a message naming
/// those that do; so is a blkparse trace read by its queue (`Q`) events, whose times would not
/// be the device's.
pub fn measured_response_times(
    path: &Path,
    opts: &TraceOptions,
) -> Result<MeasuredTimes, WorkloadError> {
    let format = match opts.format {
        Some(format) => format,
        None => detect(path)?,
    };
    let Some(measured) = format.entry().measured else {
        let measuring: Vec<&str> = super::TraceFormat::all()
            .filter(|f| f.measures_response_times())
            .map(|f| f.name())
            .collect();
        return Err(WorkloadError::Spec {
            message: format!(
                "{}: a {format} trace carries no measured response times; the formats that do are {}",
                path.display(),
                measuring.join(", ")
            ),
        });
    };
    let ctx = ParseContext::new(path, opts.skip_bad);
    let reader = super::input::open_input(path, &ctx)?;
    measured(reader, ctx, opts)
}

/// Collects the `(origin, response_ns)` items of a measuring line parser.
pub(crate) fn collect<I>(items: I) -> Result<MeasuredTimes, WorkloadError>
where
    I: Iterator<Item = Result<(u64, u64), WorkloadError>>,
{
    let times = items.collect::<Result<Vec<_>, _>>()?;
    Ok(MeasuredTimes::from_pairs(times, 0))
}
