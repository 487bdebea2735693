//! The plain data a workload yields, and the error type of the whole crate.

use std::fmt;
use storsim_core::Op;

/// One request as a trace or generator states it, before the engine turns it into a
/// [`storsim_core::Request`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    /// When the request was issued, in nanoseconds on the workload's own clock (traces keep
    /// their original epoch; the engine rebases to the first record).
    pub timestamp_ns: u64,
    pub op: Op,
    pub offset_bytes: u64,
    pub len_bytes: u64,
    /// Device, disk or ASU number in multi-device traces; 0 elsewhere.
    pub dev: u32,
    /// In closed-loop replay, how long after a slot frees up this request is issued (DiskSim's
    /// validate traces record this "think time"); 0 elsewhere.
    pub think_ns: u64,
    /// Where the record came from: a line number, a byte offset or a sequence number, as the
    /// workload's [`Origin`] says. Used to name the record in error messages.
    pub origin: u64,
}

/// What a record's `origin` counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// 1-based line number in a text file.
    Line,
    /// Byte offset in a binary file.
    ByteOffset,
    /// 0-based index of a generated request.
    Index,
}

impl Origin {
    /// Names a position for an error message: `line 17`, `byte 4096`, `request 3`.
    pub fn describe(self, value: u64) -> String {
        match self {
            Origin::Line => format!("line {value}"),
            Origin::ByteOffset => format!("byte {value}"),
            Origin::Index => format!("request {value}"),
        }
    }
}

/// How the engine should issue a workload's records unless the user says otherwise.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pacing {
    /// Each record arrives at its timestamp (rebased so the first arrives at 0).
    Open,
    /// `depth` requests are kept outstanding; each completion lets the next record in after
    /// its `think_ns`.
    Closed { depth: u32 },
}

/// Any failure while reading or generating a workload. Every variant names its source.
#[derive(Debug)]
pub enum WorkloadError {
    /// A record could not be parsed: `source` (file name), where in it, and what was expected.
    Malformed {
        source: String,
        position: String,
        message: String,
    },
    /// The file could not be opened or read.
    Io {
        source: String,
        error: std::io::Error,
    },
    /// A synthetic workload spec or a workload option is wrong.
    Spec { message: String },
}

impl fmt::Display for WorkloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkloadError::Malformed {
                source,
                position,
                message,
            } => {
                write!(f, "{source}: {position}: {message}")
            }
            WorkloadError::Io { source, error } => write!(f, "{source}: {error}"),
            WorkloadError::Spec { message } => write!(f, "{message}"),
        }
    }
}

impl std::error::Error for WorkloadError {}

impl Workload {
    /// A workload of records already in memory (a test's, or a program's that builds its own),
    /// replayed with `pacing`; its records' `origin` fields count in `origin`'s unit. It has
    /// no duration limit, format or seed, and skips or ignores nothing.
    pub fn from_records(
        name: impl Into<String>,
        records: Vec<Record>,
        pacing: Pacing,
        origin: Origin,
    ) -> Workload {
        Workload {
            name: name.into(),
            records: Box::new(records.into_iter().map(Ok)),
            pacing,
            origin,
            duration_ns: None,
            skipped: Default::default(),
            ignored: Default::default(),
            format: None,
            seed: None,
            detected_from: None,
        }
    }
}

/// A workload ready to run: a stream of records plus what the engine needs to know about it.
pub struct Workload {
    /// A short human-readable name: the file name or the synthetic spec.
    pub name: String,
    /// The records, in issue order. For traces, memory does not grow with trace length.
    pub records: Box<dyn Iterator<Item = Result<Record, WorkloadError>>>,
    pub pacing: Pacing,
    pub origin: Origin,
    /// A synthetic workload's duration limit in simulated nanoseconds, if it has one.
    pub duration_ns: Option<u64>,
    /// Filled in by parsers run with `skip_bad`: how many malformed records were skipped. It is
    /// shared so that the caller can read it after the iterator has been consumed.
    pub skipped: std::rc::Rc<std::cell::Cell<u64>>,
    /// Well-formed records that are not replayable block requests (SCSI commands other than
    /// reads and writes, blkparse events without a range, ...), counted as they are consumed.
    pub ignored: std::rc::Rc<std::cell::Cell<u64>>,
    /// The trace format's name, or `None` for a generated workload.
    pub format: Option<&'static str>,
    /// The seed that generated the workload, for synthetic workloads.
    pub seed: Option<u64>,
    /// What detection saw when it chose a trace's format (a sentence without a final period,
    /// see [`trace::Detection`](crate::trace::Detection)); `None` when the format was named, or
    /// for a generated workload.
    pub detected_from: Option<String>,
}
