//! A one-line progress display on stderr for long runs (simulations, calibrations), silent when
//! stderr is not a terminal.

use rustix::time::{clock_gettime, ClockId};
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};
use storsim_core::SimTime;

pub struct Progress {
    enabled: bool,
    total: Option<u64>,
    started: Instant,
    /// The process's CPU time when the run started, if the system tells it.
    cpu_started: Option<Duration>,
    last_draw: Instant,
    drawn: bool,
}

impl Progress {
    pub fn new(quiet: bool, total: Option<u64>) -> Self {
        let now = Instant::now();
        Progress {
            enabled: !quiet && std::io::stderr().is_terminal(),
            total,
            started: now,
            cpu_started: process_cpu_time(),
            last_draw: now,
            drawn: false,
        }
    }

    pub fn update(&mut self, completed: u64, sim_now: SimTime) {
        let total = self.total;
        self.draw(|elapsed| {
            let rate = completed as f64 / elapsed.as_secs_f64().max(1e-9);
            let share = match total {
                Some(t) if t > 0 => format!(" ({:.0} %)", 100.0 * completed as f64 / t as f64),
                _ => String::new(),
            };
            format!(
                "{completed} requests{share}, simulated {:.3} s, {:.2} M requests/s",
                sim_now.as_ns() as f64 / 1e9,
                rate / 1e6
            )
        });
    }

    /// Redraws the line with `text(time since start)`, at most five times a second; `text` is
    /// not called in between or when the display is off.
    pub fn draw(&mut self, text: impl FnOnce(Duration) -> String) {
        if !self.enabled || self.last_draw.elapsed() < Duration::from_millis(200) {
            return;
        }
        self.last_draw = Instant::now();
        self.drawn = true;
        let line = text(self.started.elapsed());
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r  {line}   ");
        let _ = err.flush();
    }

    /// Clears the line so the summary starts on a clean one; returns the wall time of the run.
    pub fn finish(&self) -> Duration {
        if self.drawn {
            eprint!("\r{:80}\r", "");
        }
        self.started.elapsed()
    }

    /// The CPU time the process (all its threads) used since the run started. Unlike the wall
    /// time it does not grow while other programs hold the processor, which makes it the
    /// steadier figure for benchmarks on a shared machine.
    pub fn cpu_time(&self) -> Option<Duration> {
        Some(process_cpu_time()?.saturating_sub(self.cpu_started?))
    }
}

fn process_cpu_time() -> Option<Duration> {
    let t = clock_gettime(ClockId::ProcessCPUTime);
    Some(Duration::new(
        u64::try_from(t.tv_sec).ok()?,
        u32::try_from(t.tv_nsec).ok()?,
    ))
}
