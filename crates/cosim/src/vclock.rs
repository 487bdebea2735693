//! The controller's side of the virtual clock: the shared page it alone writes, the count of
//! running threads that decides whether the clock advances, and the accounting of paused and
//! skipped time for the report.

use rustix::mm::{self, MapFlags, ProtFlags};
use rustix::time::{clock_gettime, ClockId};
use std::fs::OpenOptions;
use std::io;
use std::path::Path;
use std::ptr::NonNull;
use storsim_cosim_shim::clock::{ClockPage, ClockState, PAGE_BYTES};

/// A real clock in ns.
pub fn clock_ns(clock: ClockId) -> u64 {
    let ts = clock_gettime(clock);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub fn mono_ns() -> u64 {
    clock_ns(ClockId::Monotonic)
}

pub struct VirtualClock {
    /// The start of this value's own shared mapping of the page file, unmapped on drop.
    map: NonNull<ClockPage>,
    cpu_speed: f64,
    running: i64,
    /// The latest real instant after which a thread other than the current runners may have
    /// read the clock while it advanced: a call may stop the clock at its entry instant only
    /// if that instant is not earlier, because only then did no other thread see the clock
    /// move past it. A thread that stops gave up reading at its own entry instant; one that
    /// starts may have read the clock until the controller counted it.
    last_change_r: u64,
    /// Real time since which the clock stands still, while nothing runs.
    frozen_since_r: Option<u64>,
    /// Real time at which the first thread started running.
    started_r: Option<u64>,
    pub paused_real_ns: u64,
    pub skipped_ns: u64,
    /// Readings of virtual against real time over the run, for the report's `clock_series`.
    pub samples: ClockSamples,
    /// The real instant the samples' real time counts from (the program's start).
    origin_r: u64,
}

/// One reading of the clocks: real time since the program was started, the virtual clock,
/// and the paused and skipped time so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockSample {
    pub real_ns: u64,
    pub virtual_ns: u64,
    pub paused_real_ns: u64,
    pub skipped_virtual_ns: u64,
}

/// The most clock readings a run keeps (`CosimReport::clock_series`): enough points for a
/// plot of any run.
pub const CLOCK_SAMPLES_MAX: usize = 1024;
/// The real time between two kept readings at first: 100 µs, doubled at every decimation.
const FIRST_SAMPLE_GAP_NS: u64 = 100_000;

/// Readings of the clocks over a run in bounded memory: a reading is kept when at least the
/// current gap of real time has passed since the last one kept, or when it must be (a jump's
/// ends, the run's end); when [`CLOCK_SAMPLES_MAX`] are held, every other one goes and the gap
/// doubles, so that the readings stay spread over the whole run.
///
/// The controller reads the clocks where their course changes (the clock starts, stops or
/// jumps), never while it advances: a reading then could be taken back, as a call that
/// entered earlier stops the clock at its entry. Between two readings the virtual clock is
/// therefore a straight line, or a stretch of a few of them when readings were left out.
#[derive(Clone, Debug)]
pub struct ClockSamples {
    samples: Vec<ClockSample>,
    gap_ns: u64,
}

impl Default for ClockSamples {
    fn default() -> Self {
        ClockSamples {
            samples: Vec::new(),
            gap_ns: FIRST_SAMPLE_GAP_NS,
        }
    }
}

impl ClockSamples {
    /// Whether a reading at real time `real_ns` would be kept without being forced.
    pub fn wants(&self, real_ns: u64) -> bool {
        self.samples
            .last()
            .is_none_or(|last| real_ns >= last.real_ns.saturating_add(self.gap_ns))
    }

    /// Keeps `sample` if it is due, or whatever the gap if `forced`. Each figure is kept
    /// non-decreasing: a clock restarted from an instant before the last reading (the thread
    /// that starts it says when it began to run, which may be before the controller's last
    /// look) is read as starting at that reading.
    pub fn offer(&mut self, mut sample: ClockSample, forced: bool) {
        if !forced && !self.wants(sample.real_ns) {
            return;
        }
        if let Some(last) = self.samples.last() {
            sample.real_ns = sample.real_ns.max(last.real_ns);
            sample.virtual_ns = sample.virtual_ns.max(last.virtual_ns);
            sample.paused_real_ns = sample.paused_real_ns.max(last.paused_real_ns);
            sample.skipped_virtual_ns = sample.skipped_virtual_ns.max(last.skipped_virtual_ns);
        }
        self.samples.push(sample);
        if self.samples.len() >= CLOCK_SAMPLES_MAX {
            let mut index = 0;
            self.samples.retain(|_| {
                index += 1;
                index % 2 == 1
            });
            self.gap_ns = self.gap_ns.saturating_mul(2);
        }
    }

    /// The readings kept, oldest first.
    pub fn samples(&self) -> &[ClockSample] {
        &self.samples
    }
}

// SAFETY: the only thing that ties a VirtualClock to a thread is its raw pointer to the
// mapping, which it owns; the page is made of atomics, so any thread may use it, and a mapping
// may be unmapped from any thread of the process.
unsafe impl Send for VirtualClock {}

impl VirtualClock {
    /// Creates the page file at `path` and maps it.
    pub fn create(path: &Path, cpu_speed: f64) -> io::Result<VirtualClock> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)?;
        file.set_len(PAGE_BYTES as u64)?;
        // SAFETY: a new mapping at an address the kernel chooses, so no memory of this process
        // changes; the file is PAGE_BYTES long, so the whole mapping is backed.
        let map = unsafe {
            mm::mmap(
                std::ptr::null_mut(),
                PAGE_BYTES,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED,
                &file,
                0,
            )
        }?;
        let map = NonNull::new(map.cast::<ClockPage>())
            .ok_or_else(|| io::Error::other("mmap returned a null address"))?;
        let clock = VirtualClock {
            map,
            cpu_speed,
            running: 0,
            last_change_r: 0,
            frozen_since_r: None,
            started_r: None,
            paused_real_ns: 0,
            skipped_ns: 0,
            samples: ClockSamples::default(),
            origin_r: mono_ns(),
        };
        clock.page().init(
            cpu_speed,
            clock_ns(ClockId::Realtime),
            mono_ns(),
            clock_ns(ClockId::Boottime),
        );
        Ok(clock)
    }

    /// The shared page.
    fn page(&self) -> &ClockPage {
        // SAFETY: the mapping is page-aligned and PAGE_BYTES long, enough for a ClockPage (see
        // the assertion below), and stays mapped until `self` is dropped, which cannot happen
        // while the returned borrow of `self` lives. Every field is an atomic, so the other
        // processes' concurrent reads of the same memory are no data race, and the file's
        // initial zeros are a valid value for each of them.
        unsafe { self.map.as_ref() }
    }
    pub fn running(&self) -> i64 {
        self.running
    }

    pub fn cpu_speed(&self) -> f64 {
        self.cpu_speed
    }

    /// Virtual time now.
    pub fn now_v(&self) -> u64 {
        self.page().read(mono_ns)
    }

    /// Real time at which the program started running, if it has.
    pub fn started_r(&self) -> Option<u64> {
        self.started_r
    }

    /// How long in real time until the clock reaches `v` (`None` if it will not by itself:
    /// nothing runs, or the CPU is infinitely fast).
    pub fn real_until(&self, v: u64) -> Option<u64> {
        if self.running <= 0 || self.cpu_speed.is_infinite() {
            return None;
        }
        let gap = v.saturating_sub(self.now_v());
        Some((gap as f64 * self.cpu_speed).ceil() as u64)
    }

    /// `n` threads start running at real time `r` (later if the clock changed since).
    pub fn add(&mut self, n: i64, r: u64) {
        if n <= 0 {
            return;
        }
        let now = mono_ns();
        let was = self.running;
        self.running += n;
        if was <= 0 {
            let r = r
                .max(self.last_change_r)
                .max(self.frozen_since_r.unwrap_or(0))
                .min(now);
            self.page().write(|old| ClockState {
                v_anchor_ns: old.v_anchor_ns,
                r_anchor_ns: r,
                advancing: true,
            });
            if let Some(f) = self.frozen_since_r.take() {
                self.paused_real_ns += r.saturating_sub(f);
            }
            self.started_r.get_or_insert(r);
            let v = self.page().load_state().v_anchor_ns;
            self.sample_at(r, v, false);
            // Until this write every reader saw the clock stand still, and from it the clock
            // advances from `r`: whatever anyone read is at most its value at any instant
            // after `r`. So when the thread that started it is still the only runner at its
            // next call, that call may stop the clock at its entry, however late the
            // controller read either message (on a busy machine, milliseconds).
            self.last_change_r = r;
        } else {
            // The new runners may have read the advancing clock before they were counted.
            self.last_change_r = now;
        }
    }

    /// One thread stops running because it entered a call at real time `r_entry`. Returns the
    /// virtual instant the call arrives at: the clock at `r_entry`, but never before
    /// `floor_v` (the device's own clock). When this was the only runner and nothing changed
    /// since `r_entry`, the clock stops at that instant, so the time the call spent in the
    /// library and the controller is not the program's.
    ///
    /// `unseen` says that no thread outside the running count can have read the clock since
    /// `r_entry` (the caller knows: a thread that was sent its reply reads the clock before
    /// its next message says it runs). Without it the clock stops now instead: stopping it at
    /// `r_entry` would move it back under that thread, which then measured a call shorter
    /// than its device's latency and saw its clock go back.
    pub fn stop(&mut self, r_entry: u64, floor_v: u64, unseen: bool) -> u64 {
        let now = mono_ns();
        let state = self.page().load_state();
        let at_entry = if r_entry >= state.r_anchor_ns {
            state.virtual_at(self.cpu_speed, r_entry.min(now))
        } else {
            state.v_anchor_ns
        };
        let stamp = at_entry.max(floor_v);
        let backdate =
            unseen && self.running == 1 && self.last_change_r <= r_entry && r_entry <= now;
        self.running -= 1;
        if self.running == 0 {
            if backdate {
                self.freeze(Some((stamp, r_entry)));
            } else {
                self.freeze(None);
            }
            self.last_change_r = now;
        } else {
            // The clock runs on unchanged, and this thread read it last before `r_entry`.
            self.last_change_r = self.last_change_r.max(r_entry.min(now));
        }
        stamp
    }

    /// A thread outside the running count may have read the clock until now (one that was
    /// woken ended before it said it runs again): no call entered before now may stop the
    /// clock at its entry.
    pub fn seen_now(&mut self) {
        self.last_change_r = self.last_change_r.max(mono_ns());
    }

    /// `n` threads stop running now (their process ended, or exec replaced them).
    pub fn remove(&mut self, n: i64) {
        if n <= 0 {
            return;
        }
        let was = self.running;
        self.running -= n;
        if was > 0 && self.running <= 0 {
            self.running = 0;
            self.freeze(None);
        }
        self.last_change_r = mono_ns();
    }

    /// Stops the clock: at `(v, r)` when given, else at its reading now (taken inside the
    /// write, so no reader saw a later value).
    fn freeze(&mut self, at: Option<(u64, u64)>) {
        let speed = self.cpu_speed;
        let (mut frozen_r, mut frozen_v) = (0, 0);
        self.page().write(|old| {
            let (v, r) = at.unwrap_or_else(|| {
                let r = mono_ns();
                (old.virtual_at(speed, r), r)
            });
            frozen_r = r;
            frozen_v = v.max(old.v_anchor_ns);
            ClockState {
                v_anchor_ns: frozen_v,
                r_anchor_ns: r,
                advancing: false,
            }
        });
        self.frozen_since_r = Some(frozen_r);
        self.sample_at(frozen_r, frozen_v, false);
    }

    /// Counts the samples' real time from `r`: the instant the program was started.
    pub fn set_real_origin(&mut self, r: u64) {
        self.origin_r = r;
    }

    /// Offers the reading of a stopped clock at real instant `r`, reading `v`, to the samples.
    fn sample_at(&mut self, r: u64, v: u64, forced: bool) {
        let sample = ClockSample {
            real_ns: r.saturating_sub(self.origin_r),
            virtual_ns: v,
            paused_real_ns: self.paused_real_ns,
            skipped_virtual_ns: self.skipped_ns,
        };
        self.samples.offer(sample, forced);
    }

    /// The clocks now, as a sample.
    fn reading_now(&self) -> ClockSample {
        let now = mono_ns();
        // The stretch the clock has stood still so far counts as paused once the program
        // has started, as `finish` counts it.
        let frozen_ns = match (self.frozen_since_r, self.started_r) {
            (Some(f), Some(_)) => now.saturating_sub(f),
            _ => 0,
        };
        ClockSample {
            real_ns: now.saturating_sub(self.origin_r),
            virtual_ns: self.now_v(),
            paused_real_ns: self.paused_real_ns + frozen_ns,
            skipped_virtual_ns: self.skipped_ns,
        }
    }

    /// Moves the stopped clock forward to `v` (time-skipping).
    pub fn jump(&mut self, v: u64) {
        assert!(self.running == 0, "the clock jumped while a thread ran");
        let mut skipped = 0;
        self.page().write(|old| {
            skipped = v.saturating_sub(old.v_anchor_ns);
            ClockState {
                v_anchor_ns: v.max(old.v_anchor_ns),
                ..old
            }
        });
        self.skipped_ns += skipped;
        // The readings show the jump as a step: where the clock stood, and where it went.
        if skipped > 0 {
            let after = self.reading_now();
            let before = ClockSample {
                skipped_virtual_ns: after.skipped_virtual_ns - skipped,
                virtual_ns: after.virtual_ns.saturating_sub(skipped),
                ..after
            };
            self.samples.offer(before, true);
            self.samples.offer(after, true);
        }
    }

    /// Ends the accounting at real time now and returns the last reading: the virtual time,
    /// and the real time since the origin ([`VirtualClock::set_real_origin`]).
    pub fn finish(&mut self) -> ClockSample {
        let now = mono_ns();
        if let Some(f) = self.frozen_since_r.take() {
            if self.started_r.is_some() {
                self.paused_real_ns += now.saturating_sub(f);
            }
        }
        // The last reading ends the samples with the report's times.
        let last = self.reading_now();
        self.samples.offer(last, true);
        last
    }
}

const _: () = assert!(std::mem::size_of::<ClockPage>() <= PAGE_BYTES);

impl Drop for VirtualClock {
    fn drop(&mut self) {
        // SAFETY: the mapping is this value's own, of PAGE_BYTES, and no borrow of the page
        // outlives `self`. An error would leave the page mapped, which costs only memory.
        let _ = unsafe { mm::munmap(self.map.as_ptr().cast(), PAGE_BYTES) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(real_ns: u64) -> ClockSample {
        ClockSample {
            real_ns,
            virtual_ns: real_ns / 2,
            paused_real_ns: 0,
            skipped_virtual_ns: 0,
        }
    }

    #[test]
    fn samples_stay_bounded_and_spread_over_the_whole_run() {
        let mut samples = ClockSamples::default();
        // An hour of readings offered every microsecond of real time, some forced.
        let hour_ns = 3_600_000_000_000u64;
        let mut t = 0;
        while t <= hour_ns {
            samples.offer(at(t), t % 1_000_000_000 == 0);
            assert!(samples.samples().len() < CLOCK_SAMPLES_MAX);
            t += if t < 1_000_000 { 1_000 } else { 1_000_000 };
        }
        let kept = samples.samples();
        assert!(kept.len() >= CLOCK_SAMPLES_MAX / 4, "{} kept", kept.len());
        assert!(kept.windows(2).all(|w| w[0].real_ns <= w[1].real_ns));
        assert_eq!(kept[0].real_ns, 0, "the first reading stays");
        // No stretch of the run lacks readings: the largest gap is a small part of it.
        let widest = kept
            .windows(2)
            .map(|w| w[1].real_ns - w[0].real_ns)
            .max()
            .unwrap();
        assert!(widest <= hour_ns / 64, "a gap of {widest} ns");
        assert!(kept.last().unwrap().real_ns >= hour_ns - widest);
    }

    #[test]
    fn a_forced_reading_is_kept_however_close() {
        let mut samples = ClockSamples::default();
        samples.offer(at(0), false);
        samples.offer(at(1), false);
        samples.offer(at(1), true);
        assert_eq!(samples.samples(), &[at(0), at(1)]);
    }
}
