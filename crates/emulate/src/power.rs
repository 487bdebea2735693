//! Power loss in the emulator: the writes not yet durable, crash points, the write log.
//!
//! With power loss on ([`crate::Emulator::enable_power_loss`]), every change a host makes goes
//! through one [`VolatileWrites`] (the model of the disk's write cache, in the store crate)
//! under one lock, in the order the store sees them, and is appended to the write log if there
//! is one. A FLUSH makes every earlier write durable, a FUA write itself. A crash (a control
//! command, the N-th write, or a timer the caller sets) puts the store back to what the medium
//! held, losing or tearing the rest, and tells the caller what it dropped.
//!
//! Reads do not take the lock: a read racing a crash may see either side of it, as a read
//! racing a power cut would see nothing at all.

use crate::{HostIo, HostOp};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use storsim_core::SimTime;
use storsim_store::power::VolatileWrites;
use storsim_store::write_log::WriteLogWriter;
use storsim_store::{Store, StoreError};

pub use storsim_store::power::{
    Atomicity, CrashMode, CrashReport, LostWrite, DEFAULT_WRITE_CACHE_BYTES,
};
/// The write log and its replay, so that a caller of the emulator needs no other crate.
pub use storsim_store::write_log;

/// What the emulator does after a crash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterCrash {
    /// Serve the post-crash image, as a disk powered on again would.
    Serve,
    /// Stay powered off: every later request fails with an I/O error until the emulator is
    /// stopped, so that a host still running cannot write over the post-crash image.
    Stop,
}

/// What set a crash off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrashTrigger {
    /// The control socket's `crash` command (or a caller's [`crate::Emulator::crash`]).
    Command,
    /// The write count given as [`PowerLossOptions::crash_after_writes`].
    Writes,
    /// A time the caller set.
    Time,
}

impl CrashTrigger {
    /// The name logs use.
    pub fn name(self) -> &'static str {
        match self {
            CrashTrigger::Command => "command",
            CrashTrigger::Writes => "writes",
            CrashTrigger::Time => "time",
        }
    }
}

/// One crash, as [`PowerLossOptions::on_crash`] is told of it.
#[derive(Clone, Debug)]
pub struct Crash {
    /// The emulator's crashes counted from 1.
    pub number: u64,
    pub trigger: CrashTrigger,
    /// Emulator time (wall clock since the start) of the crash.
    pub at: SimTime,
    /// What was lost.
    pub report: CrashReport,
}

impl Crash {
    /// The crash without its list of writes: what [`PowerLossReport::crashes`] keeps.
    pub fn summary(&self) -> CrashSummary {
        CrashSummary {
            number: self.number,
            trigger: self.trigger,
            at: self.at,
            writes: self.report.writes,
            mode: self.report.mode,
            volatile_writes: self.report.volatile.len() as u64,
            volatile_bytes: self.report.volatile_bytes(),
            dropped_writes: self.report.dropped_writes(),
            dropped_bytes: self.report.dropped_bytes(),
        }
    }
}

/// One crash in a few numbers, without the writes it lost one by one (those can be many: the
/// crash log and the control socket's `crash` answer list them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrashSummary {
    /// The emulator's crashes counted from 1.
    pub number: u64,
    pub trigger: CrashTrigger,
    /// Emulator time (wall clock since the start) of the crash.
    pub at: SimTime,
    /// The host's writes seen before the crash.
    pub writes: u64,
    pub mode: CrashMode,
    /// Writes not durable at the crash.
    pub volatile_writes: u64,
    /// The bytes they held.
    pub volatile_bytes: u64,
    /// Those of which the crash lost something.
    pub dropped_writes: u64,
    /// Bytes lost over all of them.
    pub dropped_bytes: u64,
}

/// Power loss so far: the options in force, where the cache stands and every crash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PowerLossReport {
    /// [`PowerLossOptions::write_cache_bytes`].
    pub write_cache_bytes: u64,
    /// [`PowerLossOptions::mode`].
    pub mode: CrashMode,
    /// [`PowerLossOptions::crash_after_writes`].
    pub crash_after_writes: Option<u64>,
    /// [`PowerLossOptions::after_crash`].
    pub after_crash: AfterCrash,
    /// Whether writes and flushes are recorded in a write log.
    pub write_log: bool,
    /// The host's writes so far (writes, write-zeroes and trims), crashes or not.
    pub writes: u64,
    /// Writes not durable now: what a crash now would put at risk.
    pub volatile_writes: u64,
    /// Whether a crash left the disk off ([`AfterCrash::Stop`]).
    pub powered_off: bool,
    /// Every crash so far, in order.
    pub crashes: Vec<CrashSummary>,
}

/// What [`PowerLossOptions::on_crash`] holds.
pub type OnCrash = Box<dyn Fn(&Crash) + Send + Sync>;

/// How power loss is modelled.
pub struct PowerLossOptions {
    /// The write cache's size: beyond it the oldest writes become durable.
    pub write_cache_bytes: u64,
    /// What a crash keeps of the writes not durable.
    pub mode: CrashMode,
    /// Crash right after the host's N-th write (writes, write-zeroes and trims, from 1), once.
    pub crash_after_writes: Option<u64>,
    pub after_crash: AfterCrash,
    /// Where to record every write and flush, if anywhere.
    pub write_log: Option<WriteLogWriter>,
    /// Told of each crash, on the thread that caused it, with the power-loss lock held (so
    /// crashes are reported in order).
    pub on_crash: Option<OnCrash>,
}

impl PowerLossOptions {
    /// Every write not durable is lost at a crash; a cache of the default size; no crash point,
    /// no log; the post-crash image is served.
    pub fn new() -> PowerLossOptions {
        PowerLossOptions {
            write_cache_bytes: DEFAULT_WRITE_CACHE_BYTES,
            mode: CrashMode::DropAll,
            crash_after_writes: None,
            after_crash: AfterCrash::Serve,
            write_log: None,
            on_crash: None,
        }
    }
}

impl Default for PowerLossOptions {
    fn default() -> Self {
        PowerLossOptions::new()
    }
}

/// The state behind the lock.
struct State {
    volatile: VolatileWrites,
    options: PowerLossOptions,
    crashes: Vec<CrashSummary>,
}

/// Power loss for one emulator.
pub(crate) struct PowerLoss {
    state: Mutex<State>,
    powered_off: AtomicBool,
}

impl PowerLoss {
    pub fn new(options: PowerLossOptions) -> PowerLoss {
        PowerLoss {
            state: Mutex::new(State {
                volatile: VolatileWrites::new(options.write_cache_bytes),
                options,
                crashes: Vec::new(),
            }),
            powered_off: AtomicBool::new(false),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether a crash left the disk off ([`AfterCrash::Stop`]).
    pub fn powered_off(&self) -> bool {
        self.powered_off.load(Ordering::Acquire)
    }

    /// The store part of a write, write-zeroes, trim or flush (not a read): done through the
    /// cache model and logged, then crashing if this was the write to crash after.
    pub fn store_part(&self, store: &Store, io: &HostIo, now: SimTime) -> Result<(), StoreError> {
        let mut state = self.state();
        let state = &mut *state;
        let log = state.options.write_log.as_mut();
        match io.op {
            HostOp::Read => return Ok(()),
            HostOp::Write => {
                state
                    .volatile
                    .write(store, io.offset_bytes, &io.data, io.fua)?;
                if let Some(log) = log {
                    log.write(io.offset_bytes, &io.data, io.fua)?;
                }
            }
            HostOp::WriteZeroes | HostOp::Trim => {
                state
                    .volatile
                    .zero(store, io.offset_bytes, io.len_bytes, io.fua)?;
                if let Some(log) = log {
                    log.zero(io.offset_bytes, io.len_bytes, io.fua)?;
                }
            }
            HostOp::Flush => {
                state.volatile.flush();
                if let Some(log) = log {
                    log.flush()?;
                }
            }
        }
        if io.op != HostOp::Flush
            && state.options.crash_after_writes == Some(state.volatile.writes())
        {
            self.crash_locked(state, store, CrashTrigger::Writes, now)?;
        }
        Ok(())
    }

    /// Crashes now.
    pub fn crash(
        &self,
        store: &Store,
        trigger: CrashTrigger,
        now: SimTime,
    ) -> Result<Crash, StoreError> {
        let mut state = self.state();
        self.crash_locked(&mut state, store, trigger, now)
    }

    fn crash_locked(
        &self,
        state: &mut State,
        store: &Store,
        trigger: CrashTrigger,
        now: SimTime,
    ) -> Result<Crash, StoreError> {
        let mode = state.options.mode;
        let report = state.volatile.crash(store, mode)?;
        if let Some(log) = state.options.write_log.as_mut() {
            log.crash(mode)?;
        }
        if state.options.after_crash == AfterCrash::Stop {
            self.powered_off.store(true, Ordering::Release);
        }
        let crash = Crash {
            number: state.crashes.len() as u64 + 1,
            trigger,
            at: now,
            report,
        };
        state.crashes.push(crash.summary());
        if let Some(on_crash) = &state.options.on_crash {
            on_crash(&crash);
        }
        Ok(crash)
    }

    /// The options in force, the cache now and every crash so far.
    pub fn report(&self) -> PowerLossReport {
        let state = self.state();
        let options = &state.options;
        PowerLossReport {
            write_cache_bytes: state.volatile.capacity_bytes(),
            mode: options.mode,
            crash_after_writes: options.crash_after_writes,
            after_crash: options.after_crash,
            write_log: options.write_log.is_some(),
            writes: state.volatile.writes(),
            volatile_writes: state.volatile.volatile_writes() as u64,
            powered_off: self.powered_off(),
            crashes: state.crashes.clone(),
        }
    }

    /// Pushes the write log's buffer to its file.
    pub fn finish(&self) -> Result<(), StoreError> {
        match self.state().options.write_log.as_mut() {
            Some(log) => log.finish(),
            None => Ok(()),
        }
    }
}
