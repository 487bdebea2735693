//! Who runs: forks, threads and waits for children.
//!
//! The controller may skip virtual time only when no thread of the program runs, so it must
//! know every runner. Processes announce themselves (the constructor, the fork handler); a
//! thread is announced by its creator before it exists, and says when it ends. A thread blocked
//! in waitpid (or pthread_join) does not run; the controller counts it as running again as soon
//! as a child of its process (or a thread of its process) ends, before the thread itself could
//! tell.

use super::sys::{self, real, PidT};
use super::{active, conn, Inside, SHIM};
use crate::proto::{Kind, Msg};
use std::ffi::{c_int, c_void};
use std::sync::atomic::Ordering;

/// The child's side of fork: a new process with one running thread.
pub unsafe extern "C" fn after_fork_in_child() {
    let p = SHIM.load(Ordering::Acquire);
    if p.is_null() || super::DETACHED.load(Ordering::Relaxed) {
        return;
    }
    let shim = &*p;
    conn::set_pid();
    let _inside = Inside::enter();
    let saved = sys::errno();
    let mut m = Msg::new(Kind::ForkChild, 0, 0);
    m.a = sys::getppid() as u64;
    m.r_ns = sys::mono_ns();
    conn::call(shim, &m, &[]);
    sys::set_errno(saved);
}

fn thread_ends() {
    if let Some(shim) = active() {
        let _inside = Inside::enter();
        let mut m = Msg::new(Kind::ThreadExit, 0, 0);
        m.r_ns = sys::mono_ns();
        conn::send(shim, &m, &[]);
        conn::close_current();
    }
}

struct Start {
    routine: extern "C" fn(*mut c_void) -> *mut c_void,
    arg: *mut c_void,
}

extern "C" fn trampoline(p: *mut c_void) -> *mut c_void {
    // SAFETY: `trampoline` is only ever started by the `pthread_create` hook below, with a
    // Box<Start> it leaked for this thread alone; taking it back here is its only release.
    let start = unsafe { Box::from_raw(p as *mut Start) };
    let r = (start.routine)(start.arg);
    thread_ends();
    r
}

#[no_mangle]
pub unsafe extern "C" fn pthread_create(
    thread: *mut u64,
    attr: *const c_void,
    routine: extern "C" fn(*mut c_void) -> *mut c_void,
    arg: *mut c_void,
) -> c_int {
    let Some(shim) = active() else {
        return real::pthread_create()(thread, attr, routine, arg);
    };
    {
        let _inside = Inside::enter();
        conn::call(shim, &Msg::new(Kind::ThreadStart, 0, 0), &[]);
    }
    let start = Box::into_raw(Box::new(Start { routine, arg }));
    let r = real::pthread_create()(thread, attr, trampoline, start.cast());
    if r != 0 {
        drop(Box::from_raw(start));
        let _inside = Inside::enter();
        let mut m = Msg::new(Kind::ThreadExit, 0, 0);
        m.r_ns = sys::mono_ns();
        conn::send(shim, &m, &[]);
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn pthread_exit(value: *mut c_void) -> ! {
    thread_ends();
    real::pthread_exit()(value);
    // pthread_exit does not return.
    std::process::abort()
}

/// A blocking wait for a child (`join` false) or a thread: the thread stops running for its
/// duration.
fn blocking_wait<T>(join: bool, call: impl FnOnce() -> T) -> T {
    let Some(shim) = active() else {
        return call();
    };
    {
        let _inside = Inside::enter();
        let mut m = Msg::new(Kind::WaitEnter, 0, 0);
        m.r_ns = sys::mono_ns();
        m.a = u64::from(join);
        conn::send(shim, &m, &[]);
    }
    let r = call();
    let saved = sys::errno();
    {
        let _inside = Inside::enter();
        let mut m = Msg::new(Kind::WaitLeave, 0, 0);
        m.r_ns = sys::mono_ns();
        conn::send(shim, &m, &[]);
    }
    sys::set_errno(saved);
    r
}

fn child_wait<T>(options: c_int, call: impl FnOnce() -> T) -> T {
    if options & sys::WNOHANG != 0 {
        return call();
    }
    blocking_wait(false, call)
}

#[no_mangle]
pub unsafe extern "C" fn pthread_join(thread: u64, value: *mut *mut c_void) -> c_int {
    blocking_wait(true, || real::pthread_join()(thread, value))
}

#[no_mangle]
pub unsafe extern "C" fn wait(status: *mut c_int) -> PidT {
    child_wait(0, || real::wait()(status))
}

#[no_mangle]
pub unsafe extern "C" fn waitpid(pid: PidT, status: *mut c_int, options: c_int) -> PidT {
    child_wait(options, || real::waitpid()(pid, status, options))
}

#[no_mangle]
pub unsafe extern "C" fn wait3(status: *mut c_int, options: c_int, usage: *mut c_void) -> PidT {
    child_wait(options, || real::wait3()(status, options, usage))
}

#[no_mangle]
pub unsafe extern "C" fn wait4(
    pid: PidT,
    status: *mut c_int,
    options: c_int,
    usage: *mut c_void,
) -> PidT {
    child_wait(options, || real::wait4()(pid, status, options, usage))
}

#[no_mangle]
pub unsafe extern "C" fn waitid(
    idtype: c_int,
    id: u32,
    info: *mut c_void,
    options: c_int,
) -> c_int {
    child_wait(options, || real::waitid()(idtype, id, info, options))
}
