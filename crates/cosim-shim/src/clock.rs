//! The shared clock page: the virtual clock of every process under one `storsim cosim` run.
//!
//! The controller is the only writer; the preload library in every process reads it on each
//! `clock_gettime`, without a message. The clock is piecewise linear in the real monotonic
//! clock: while some thread of the program runs, virtual time advances from `v_anchor_ns` at
//! `1 / cpu_speed` of the real rate since `r_anchor_ns`; while nothing runs it stands still at
//! `v_anchor_ns`, and the controller moves it forward in jumps (time-skipping). Readers use the
//! sequence-lock discipline: an odd `seq` means a write is in progress, a changed `seq` means
//! the values read may be torn, and either way the reader retries.

use std::sync::atomic::{fence, AtomicU64, Ordering};

/// "storsimC" in ASCII: a page that does not start with it was not written by the controller.
pub const MAGIC: u64 = 0x7374_6f72_7369_6d43;

/// Bytes the controller reserves for the page (one memory page).
pub const PAGE_BYTES: usize = 4096;

/// The clock's state between two changes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClockState {
    /// Virtual time at the anchor, in ns since the program started.
    pub v_anchor_ns: u64,
    /// Real monotonic time of the anchor, in ns.
    pub r_anchor_ns: u64,
    /// Whether some thread runs, so that virtual time advances with real time.
    pub advancing: bool,
}

impl ClockState {
    /// Virtual time at real time `r_ns`. `cpu_speed` is how many times faster than this machine
    /// the simulated CPU is; infinity means the program's own computation takes no virtual time.
    pub fn virtual_at(&self, cpu_speed: f64, r_ns: u64) -> u64 {
        if !self.advancing || r_ns <= self.r_anchor_ns || cpu_speed.is_infinite() {
            return self.v_anchor_ns;
        }
        let real = r_ns - self.r_anchor_ns;
        if cpu_speed == 1.0 {
            self.v_anchor_ns + real
        } else {
            self.v_anchor_ns + (real as f64 / cpu_speed) as u64
        }
    }
}

/// The page's layout. Every field is an atomic so that the page can be shared between
/// processes without a lock.
#[repr(C)]
pub struct ClockPage {
    pub magic: AtomicU64,
    seq: AtomicU64,
    v_anchor_ns: AtomicU64,
    r_anchor_ns: AtomicU64,
    advancing: AtomicU64,
    cpu_speed_bits: AtomicU64,
    /// `CLOCK_REALTIME` at virtual time 0, in ns since the epoch.
    pub realtime_base_ns: AtomicU64,
    /// `CLOCK_MONOTONIC` at virtual time 0, in ns.
    pub monotonic_base_ns: AtomicU64,
    /// `CLOCK_BOOTTIME` at virtual time 0, in ns.
    pub boottime_base_ns: AtomicU64,
}

impl ClockPage {
    /// Fills a fresh page: the clock stands at 0 until the first thread runs.
    pub fn init(&self, cpu_speed: f64, realtime_ns: u64, monotonic_ns: u64, boottime_ns: u64) {
        self.seq.store(0, Ordering::Relaxed);
        self.v_anchor_ns.store(0, Ordering::Relaxed);
        self.r_anchor_ns.store(0, Ordering::Relaxed);
        self.advancing.store(0, Ordering::Relaxed);
        self.cpu_speed_bits
            .store(cpu_speed.to_bits(), Ordering::Relaxed);
        self.realtime_base_ns.store(realtime_ns, Ordering::Relaxed);
        self.monotonic_base_ns
            .store(monotonic_ns, Ordering::Relaxed);
        self.boottime_base_ns.store(boottime_ns, Ordering::Relaxed);
        self.magic.store(MAGIC, Ordering::Release);
    }

    pub fn cpu_speed(&self) -> f64 {
        f64::from_bits(self.cpu_speed_bits.load(Ordering::Relaxed))
    }

    /// Virtual time now, with `real_now` reading the real monotonic clock. The real clock is
    /// read inside the sequence-locked section, so a reading that overlaps a change is retried.
    pub fn read(&self, real_now: impl Fn() -> u64) -> u64 {
        let speed = self.cpu_speed();
        loop {
            let s1 = self.seq.load(Ordering::Acquire);
            if s1 & 1 == 1 {
                std::hint::spin_loop();
                continue;
            }
            let state = self.load_state();
            let r = real_now();
            fence(Ordering::SeqCst);
            if self.seq.load(Ordering::Relaxed) == s1 {
                return state.virtual_at(speed, r);
            }
        }
    }

    /// The state as last written (for the writer, which needs no lock to read its own values).
    pub fn load_state(&self) -> ClockState {
        ClockState {
            v_anchor_ns: self.v_anchor_ns.load(Ordering::Relaxed),
            r_anchor_ns: self.r_anchor_ns.load(Ordering::Relaxed),
            advancing: self.advancing.load(Ordering::Relaxed) != 0,
        }
    }

    /// Changes the state; `compute` gets the old state and returns the new one. It runs after
    /// the sequence number went odd, so that a reader whose real-clock reading is later than
    /// any reading `compute` takes retries instead of using the old anchors. Only the
    /// controller writes.
    pub fn write(&self, compute: impl FnOnce(ClockState) -> ClockState) -> ClockState {
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s + 1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        let new = compute(self.load_state());
        self.v_anchor_ns.store(new.v_anchor_ns, Ordering::Relaxed);
        self.r_anchor_ns.store(new.r_anchor_ns, Ordering::Relaxed);
        self.advancing
            .store(u64::from(new.advancing), Ordering::Relaxed);
        self.seq.store(s + 2, Ordering::Release);
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page() -> Box<ClockPage> {
        let p = Box::new(ClockPage {
            magic: AtomicU64::new(0),
            seq: AtomicU64::new(0),
            v_anchor_ns: AtomicU64::new(0),
            r_anchor_ns: AtomicU64::new(0),
            advancing: AtomicU64::new(0),
            cpu_speed_bits: AtomicU64::new(0),
            realtime_base_ns: AtomicU64::new(0),
            monotonic_base_ns: AtomicU64::new(0),
            boottime_base_ns: AtomicU64::new(0),
        });
        p.init(2.0, 1, 2, 3);
        p
    }

    #[test]
    fn the_clock_stands_still_until_something_runs_and_then_scales_by_cpu_speed() {
        let p = page();
        assert_eq!(p.read(|| 5_000), 0);
        p.write(|_| ClockState {
            v_anchor_ns: 100,
            r_anchor_ns: 1_000,
            advancing: true,
        });
        // Twice as fast a CPU: 2 000 ns of real running are 1 000 ns of virtual time.
        assert_eq!(p.read(|| 3_000), 1_100);
        // A real reading from before the anchor never goes below it.
        assert_eq!(p.read(|| 500), 100);
        p.write(|old| ClockState {
            v_anchor_ns: old.virtual_at(2.0, 3_000),
            r_anchor_ns: 3_000,
            advancing: false,
        });
        assert_eq!(p.read(|| 1_000_000), 1_100);
    }

    #[test]
    fn infinite_speed_counts_only_jumps() {
        let s = ClockState {
            v_anchor_ns: 7,
            r_anchor_ns: 0,
            advancing: true,
        };
        assert_eq!(s.virtual_at(f64::INFINITY, 1 << 40), 7);
        assert_eq!(s.virtual_at(1.0, 10), 17);
        assert_eq!(s.virtual_at(0.5, 10), 27);
    }
}
