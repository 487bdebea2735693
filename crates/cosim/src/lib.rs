//! `storsim cosim`: runs an unmodified, dynamically linked program against a simulated device
//! in virtual time (seed 003's OS-state pausing, done from user space).
//!
//! The program runs with storsim's preload library (`storsim-cosim-shim`), which turns its
//! file I/O under a directory (or on an image file) into device requests, its clocks into
//! readings of one virtual clock shared by all its processes, and its sleeps into waits on that
//! clock. This crate is the other end: the controller that owns the clock and the device model
//! (`controller.rs`), the deterministic extent layout that places file bytes on the device
//! (`layout.rs`), the clock page and its accounting (`vclock.rs`), and the session that starts
//! the program and serves its threads' connections (`session.rs`). Models are driven through
//! the same `Device` contract as everywhere else; nothing here reaches them but the controller.

mod controller;
pub mod layout;
mod session;
mod vclock;

pub use session::run;
use std::fmt;
use std::io::Write;
use std::path::PathBuf;
use storsim_stats::{Series, Summary, WindowWidth};
pub use vclock::{ClockSample, CLOCK_SAMPLES_MAX};

/// What a cosim run is asked to do, besides the device and the program.
pub struct Options {
    /// Files under this directory are on the device.
    pub dir: Option<PathBuf>,
    /// This file is the device's first bytes, one to one.
    pub image: Option<PathBuf>,
    /// How many times faster than this machine the simulated CPU is; infinity makes the
    /// program's computation free, so only device time and sleeps pass (and runs repeat
    /// exactly).
    pub cpu_speed: f64,
    /// Granule of the extent layout, a positive multiple of 512 bytes.
    pub extent_bytes: u64,
    /// Also run the real fsync/fdatasync (off: they cost real time only).
    pub real_sync: bool,
    /// A directory for the controller's socket and clock page (the caller creates and removes
    /// it) and where the preload library already is.
    pub work_dir: PathBuf,
    pub shim_library: PathBuf,
    /// Where to write the device requests as a `storsim-record` trace.
    pub record: Option<RecordTarget>,
    /// The windows of the report's time series, in the model's virtual time.
    pub window: WindowWidth,
}

/// A record's destination and the `key=value` pairs of its header line.
pub struct RecordTarget {
    pub out: Box<dyn Write + Send>,
    pub header: Vec<(String, String)>,
}

/// Intercepted calls by kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallStats {
    pub reads: u64,
    pub writes: u64,
    pub flushes: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub opens: u64,
    pub sleeps: u64,
    /// Virtual time the sleeps asked for.
    pub sleep_requested_ns: u64,
    /// I/O calls the device refused (full, or out of range).
    pub failed: u64,
    pub processes: u64,
    /// Threads created besides each process's first.
    pub threads: u64,
}

/// How the program ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProgramExit {
    Code(i32),
    Signal(i32),
}

/// What a run measured. Everything but the `real_*` fields is virtual time or a count; with
/// an infinite CPU speed and a single-threaded program those repeat exactly.
pub struct CosimReport {
    pub exit: ProgramExit,
    /// Virtual time from the program's start to its end.
    pub virtual_elapsed_ns: u64,
    /// Real time from starting the program to its end.
    pub real_elapsed_ns: u64,
    /// Real time during which the virtual clock stood still (the program paused while the
    /// library, the real I/O and the controller worked, and while it waited on skipped time).
    pub paused_real_ns: u64,
    /// Virtual time jumped over because nothing in the program ran.
    pub skipped_virtual_ns: u64,
    pub cpu_speed: f64,
    pub calls: CallStats,
    pub files: u64,
    pub allocated_bytes: u64,
    /// The device requests' latencies, as `simulate` reports them.
    pub summary: Summary,
    /// The device requests in windows of the model's time, as `simulate` reports them: the
    /// model's clock starts at the program's first device request.
    pub series: Series,
    /// Virtual against real time over the run, at most [`CLOCK_SAMPLES_MAX`] readings spread
    /// over it (wall clock: they differ from run to run).
    pub clock_series: Vec<ClockSample>,
    /// Things the preload library saw and could not model, each once.
    pub warnings: Vec<String>,
    /// Whether the program ever loaded the preload library (a static or setuid binary does not).
    pub intercepted: bool,
}

impl CosimReport {
    /// Virtual over real elapsed time.
    pub fn speedup(&self) -> f64 {
        if self.real_elapsed_ns == 0 {
            0.0
        } else {
            self.virtual_elapsed_ns as f64 / self.real_elapsed_ns as f64
        }
    }
}

#[derive(Debug)]
pub enum CosimError {
    /// A directory or image the run cannot use.
    Input(String),
    /// Setting up the socket, clock page or record failed.
    Setup(String),
    /// The program could not be started.
    Spawn { program: String, reason: String },
}

impl fmt::Display for CosimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CosimError::Input(m) | CosimError::Setup(m) => f.write_str(m),
            CosimError::Spawn { program, reason } => write!(f, "cannot start {program}: {reason}"),
        }
    }
}

impl std::error::Error for CosimError {}
