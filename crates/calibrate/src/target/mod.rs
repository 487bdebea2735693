//! What is measured: a block device or regular file (real I/O, wall-clock latencies), or a
//! device model driven at queue depth 1 in virtual time (deterministic latencies).

mod file;
mod inuse;
mod model;

pub use file::{Access, FileTarget};
pub use inuse::{block_device_users, loop_devices_backed_by};
pub use model::ModelTarget;

use crate::plan::PlannedIo;
use serde::Serialize;
use std::path::PathBuf;

/// What kind of thing the target is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TargetKind {
    BlockDevice,
    RegularFile,
    /// A storsim device model in virtual time.
    Model,
}

/// Facts about a target, for the report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TargetInfo {
    /// The path, or the device description's name for a model.
    pub name: String,
    pub kind: TargetKind,
    pub size_bytes: u64,
    /// The smallest size and alignment direct I/O accepts.
    pub block_bytes: u64,
    /// Whether the page cache is bypassed (O_DIRECT). Always true for a model.
    pub direct_io: bool,
    /// Things the user should know about the measurement (for example that O_DIRECT was
    /// refused and the page cache is in the path).
    pub notes: Vec<String>,
}

/// One point of the queue-depth sweep.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SweepPoint {
    pub write: bool,
    pub size_bytes: u64,
    pub iodepth: u32,
    pub requests: u64,
    pub elapsed_ns: u64,
    pub iops: f64,
    pub mean_latency_us: f64,
}

/// Why a target could not be opened or measured.
#[derive(Debug)]
pub enum TargetError {
    Open {
        path: PathBuf,
        error: std::io::Error,
    },
    NotBlockOrFile {
        path: PathBuf,
        what: &'static str,
    },
    /// Writes were asked for on a target something else is using.
    InUse {
        path: PathBuf,
        users: Vec<String>,
    },
    Io {
        path: PathBuf,
        write: bool,
        offset_bytes: u64,
        len_bytes: u64,
        error: std::io::Error,
    },
    /// The model refused a request or failed.
    Model {
        name: String,
        message: String,
    },
}

impl std::fmt::Display for TargetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TargetError::Open { path, error } => {
                write!(f, "cannot open {}: {error}", path.display())
            }
            TargetError::NotBlockOrFile { path, what } => write!(
                f,
                "{} is {what}; calibrate measures a block device or a regular file",
                path.display()
            ),
            TargetError::InUse { path, users } => write!(
                f,
                "refusing to write to {}: it is in use ({}); writing would destroy that data. \
                 Unmount it first, or measure reads only with --patterns sr,rr",
                path.display(),
                users.join("; ")
            ),
            TargetError::Io {
                path,
                write,
                offset_bytes,
                len_bytes,
                error,
            } => write!(
                f,
                "{} of {len_bytes} bytes at offset {offset_bytes} of {} failed: {error}",
                if *write { "write" } else { "read" },
                path.display()
            ),
            TargetError::Model { name, message } => write!(f, "device {name}: {message}"),
        }
    }
}

impl std::error::Error for TargetError {}

/// Something calibrate can measure.
pub trait Target {
    fn info(&self) -> &TargetInfo;
    /// Whether the target should be written once, untimed, before it is measured: a sparse
    /// file whose holes reads would otherwise never take to the device.
    fn wants_fill(&self) -> bool {
        false
    }
    /// Issues one request and waits for it (queue depth 1); returns its latency in ns.
    fn io(&mut self, io: &PlannedIo) -> Result<u64, TargetError>;
    /// Keeps `depth` requests of `size_bytes` in flight over `offsets` until all are done.
    /// Stops early (with what completed) once `stop` is set.
    fn sweep(
        &mut self,
        write: bool,
        size_bytes: u64,
        depth: u32,
        offsets: &[u64],
        stop: &std::sync::atomic::AtomicBool,
    ) -> Result<SweepPoint, TargetError>;
}
