//! Clocks and sleeps in virtual time.
//!
//! Every clock a program reads as wall or elapsed time reads the shared clock page: the clock's
//! reading at the start of the run plus the virtual time since. CPU-time clocks keep counting
//! the real CPU time, divided by the CPU speed when it is finite. A sleep becomes a message: the
//! controller answers it when the virtual clock reaches the wake-up instant, at once (a skip)
//! when nothing else in the program runs.

use super::sys::{self, real, ClockId, Timespec, Timeval};
use super::{active, clock_page, conn, io::resumed, Inside};
use crate::clock::ClockPage;
use crate::proto::{Kind, Msg};
use std::cell::Cell;
use std::ffi::{c_int, c_long, c_uint, c_void};
use std::sync::atomic::Ordering;

thread_local! {
    /// The last virtual time this thread was given: a thread never sees its clock go back,
    /// even across the few nanoseconds in which a real-clock reading and a change of the clock
    /// page can pass each other.
    static LAST_V: Cell<u64> = const { Cell::new(0) };
}

fn virtual_now(page: &ClockPage) -> u64 {
    let v = page.read(sys::mono_ns);
    LAST_V.with(|last| {
        let v = v.max(last.get());
        last.set(v);
        v
    })
}

/// Which reading of the page a clock gets: its base at virtual time 0, or `None` for a clock
/// that is not virtualised (CPU time).
fn base_ns(page: &ClockPage, clock: ClockId) -> Option<u64> {
    let realtime = || page.realtime_base_ns.load(Ordering::Relaxed);
    match clock {
        sys::CLOCK_REALTIME | sys::CLOCK_REALTIME_COARSE | sys::CLOCK_REALTIME_ALARM => {
            Some(realtime())
        }
        // TAI runs a fixed number of leap seconds ahead of UTC: keep that offset.
        sys::CLOCK_TAI => Some(
            realtime()
                + sys::read_clock(sys::CLOCK_TAI)
                    .saturating_sub(sys::read_clock(sys::CLOCK_REALTIME)),
        ),
        sys::CLOCK_MONOTONIC | sys::CLOCK_MONOTONIC_RAW | sys::CLOCK_MONOTONIC_COARSE => {
            Some(page.monotonic_base_ns.load(Ordering::Relaxed))
        }
        sys::CLOCK_BOOTTIME | sys::CLOCK_BOOTTIME_ALARM => {
            Some(page.boottime_base_ns.load(Ordering::Relaxed))
        }
        _ => None,
    }
}

fn to_timespec(ns: u64) -> Timespec {
    Timespec {
        tv_sec: (ns / 1_000_000_000) as i64,
        tv_nsec: (ns % 1_000_000_000) as i64,
    }
}

fn from_timespec(ts: &Timespec) -> Option<u64> {
    if ts.tv_sec < 0 || !(0..1_000_000_000).contains(&ts.tv_nsec) {
        return None;
    }
    Some(
        (ts.tv_sec as u64)
            .saturating_mul(1_000_000_000)
            .saturating_add(ts.tv_nsec as u64),
    )
}

#[no_mangle]
pub unsafe extern "C" fn clock_gettime(clock: ClockId, ts: *mut Timespec) -> c_int {
    let Some(page) = clock_page() else {
        return real::clock_gettime()(clock, ts);
    };
    let Some(base) = base_ns(page, clock) else {
        let r = real::clock_gettime()(clock, ts);
        let speed = page.cpu_speed();
        if r == 0 && !ts.is_null() && speed.is_finite() && speed != 1.0 {
            if let Some(ns) = from_timespec(&*ts) {
                *ts = to_timespec((ns as f64 / speed) as u64);
            }
        }
        return r;
    };
    if ts.is_null() {
        sys::set_errno(sys::EFAULT);
        return -1;
    }
    *ts = to_timespec(base + virtual_now(page));
    0
}

#[no_mangle]
pub unsafe extern "C" fn gettimeofday(tv: *mut Timeval, tz: *mut c_void) -> c_int {
    let Some(page) = clock_page() else {
        return real::gettimeofday()(tv, tz);
    };
    if !tz.is_null() {
        real::gettimeofday()(std::ptr::null_mut(), tz);
    }
    if !tv.is_null() {
        let ns = page.realtime_base_ns.load(Ordering::Relaxed) + virtual_now(page);
        *tv = Timeval {
            tv_sec: (ns / 1_000_000_000) as i64,
            tv_usec: ((ns % 1_000_000_000) / 1000) as i64,
        };
    }
    0
}

#[no_mangle]
pub unsafe extern "C" fn time(t: *mut i64) -> i64 {
    let secs = match clock_page() {
        Some(page) => {
            ((page.realtime_base_ns.load(Ordering::Relaxed) + virtual_now(page)) / 1_000_000_000)
                as i64
        }
        None => (sys::read_clock(sys::CLOCK_REALTIME) / 1_000_000_000) as i64,
    };
    if !t.is_null() {
        *t = secs;
    }
    secs
}

#[no_mangle]
pub unsafe extern "C" fn timespec_get(ts: *mut Timespec, base: c_int) -> c_int {
    if base != sys::TIME_UTC || ts.is_null() {
        return 0;
    }
    if clock_gettime(sys::CLOCK_REALTIME, ts) != 0 {
        return 0;
    }
    base
}

#[no_mangle]
pub unsafe extern "C" fn clock() -> c_long {
    let r = real::clock()();
    match clock_page() {
        Some(page) if r >= 0 && page.cpu_speed().is_finite() => {
            (r as f64 / page.cpu_speed()) as c_long
        }
        _ => r,
    }
}

/// Sleeps in virtual time: until the absolute virtual instant `until_v`, or for `duration_ns`.
/// Returns false when the library is not active (the caller then sleeps for real).
fn sleep_virtual(until_v: Option<u64>, duration_ns: u64) -> bool {
    let Some(shim) = active() else {
        return false;
    };
    let r_entry = sys::mono_ns();
    let _inside = Inside::enter();
    let saved = sys::errno();
    let mut m = Msg::new(Kind::Sleep, 0, 0);
    m.r_ns = r_entry;
    match until_v {
        Some(v) => {
            m.a = 1;
            m.b = v;
        }
        None => m.b = duration_ns,
    }
    let done = conn::call(shim, &m, &[]).is_some();
    if done {
        resumed(shim);
    }
    sys::set_errno(saved);
    done
}

#[no_mangle]
pub unsafe extern "C" fn nanosleep(req: *const Timespec, rem: *mut Timespec) -> c_int {
    if clock_page().is_none() || req.is_null() {
        return real::nanosleep()(req, rem);
    }
    let Some(ns) = from_timespec(&*req) else {
        sys::set_errno(sys::EINVAL);
        return -1;
    };
    if !sleep_virtual(None, ns) {
        return real::nanosleep()(req, rem);
    }
    if !rem.is_null() {
        *rem = to_timespec(0);
    }
    0
}

#[no_mangle]
pub unsafe extern "C" fn clock_nanosleep(
    clock: ClockId,
    flags: c_int,
    req: *const Timespec,
    rem: *mut Timespec,
) -> c_int {
    let Some(page) = clock_page() else {
        return real::clock_nanosleep()(clock, flags, req, rem);
    };
    let Some(base) = base_ns(page, clock) else {
        return real::clock_nanosleep()(clock, flags, req, rem);
    };
    if req.is_null() {
        return sys::EFAULT;
    }
    let Some(ns) = from_timespec(&*req) else {
        return sys::EINVAL;
    };
    let slept = if flags & sys::TIMER_ABSTIME != 0 {
        sleep_virtual(Some(ns.saturating_sub(base)), 0)
    } else {
        sleep_virtual(None, ns)
    };
    if !slept {
        return real::clock_nanosleep()(clock, flags, req, rem);
    }
    if !rem.is_null() && flags & sys::TIMER_ABSTIME == 0 {
        *rem = to_timespec(0);
    }
    0
}

#[no_mangle]
pub unsafe extern "C" fn usleep(us: c_uint) -> c_int {
    if sleep_virtual(None, u64::from(us) * 1000) {
        0
    } else {
        real::usleep()(us)
    }
}

#[no_mangle]
pub unsafe extern "C" fn sleep(secs: c_uint) -> c_uint {
    if sleep_virtual(None, u64::from(secs) * 1_000_000_000) {
        0
    } else {
        real::sleep()(secs)
    }
}

/// `select` with no descriptors is a sleep (an old idiom); anything else waits for real.
#[no_mangle]
pub unsafe extern "C" fn select(
    n: c_int,
    r: *mut c_void,
    w: *mut c_void,
    e: *mut c_void,
    tv: *mut Timeval,
) -> c_int {
    if n == 0 && r.is_null() && w.is_null() && e.is_null() && !tv.is_null() {
        let t = &*tv;
        if t.tv_sec >= 0 && (0..1_000_000).contains(&t.tv_usec) {
            let ns = t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
            if sleep_virtual(None, ns) {
                *tv = Timeval {
                    tv_sec: 0,
                    tv_usec: 0,
                };
                return 0;
            }
        }
    }
    real::select()(n, r, w, e, tv)
}

/// `poll` with no descriptors and a timeout is a sleep; anything else waits for real.
#[no_mangle]
pub unsafe extern "C" fn poll(fds: *mut c_void, n: u64, timeout_ms: c_int) -> c_int {
    if n == 0 && timeout_ms > 0 && sleep_virtual(None, timeout_ms as u64 * 1_000_000) {
        return 0;
    }
    real::poll()(fds, n, timeout_ms)
}
