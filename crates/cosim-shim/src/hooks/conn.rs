//! Each thread's connection to the controller.
//!
//! A thread opens its connection the first time it needs one and keeps it in thread-local
//! storage with the pid that opened it: after a fork the child sees its parent thread's socket
//! with a pid that is not its own, closes its copy and opens its own, so replies never go to
//! the wrong process. The library's descriptors are remembered in a bitmap so that a program
//! closing "every descriptor" does not close them (see `io::close`).

use super::{detach, sys, Shim};
use crate::proto::{Msg, Reply, MAX_MSG_BYTES, REPLY_BYTES};
use std::cell::Cell;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

thread_local! {
    /// (descriptor, pid that opened it, thread id).
    static CONN: Cell<(i32, i32, i32)> = const { Cell::new((-1, 0, 0)) };
}

/// How long a thread polls for a reply before it blocks.
const SPIN_NS: u64 = 50_000;

const OURS_WORDS: usize = 1024;
static OURS: [AtomicU64; OURS_WORDS] = [const { AtomicU64::new(0) }; OURS_WORDS];

pub fn is_ours(fd: i32) -> bool {
    let fd = fd as usize;
    fd < OURS_WORDS * 64 && OURS[fd / 64].load(Ordering::Relaxed) & (1 << (fd % 64)) != 0
}

fn mark(fd: i32, ours: bool) {
    let fd = fd as usize;
    if fd < OURS_WORDS * 64 {
        let bit = 1u64 << (fd % 64);
        if ours {
            OURS[fd / 64].fetch_or(bit, Ordering::Relaxed);
        } else {
            OURS[fd / 64].fetch_and(!bit, Ordering::Relaxed);
        }
    }
}

/// Forgets descriptors in [first, last] that the program closed with close_range.
pub fn forget_range(first: u32, last: u32) {
    let end = (last as usize).min(OURS_WORDS * 64 - 1);
    for fd in first as usize..=end {
        mark(fd as i32, false);
    }
}

fn open(shim: &Shim) -> Option<i32> {
    // SAFETY: socket takes no pointers; connect reads the Shim's address, which lives for the
    // rest of the process, with its own size; the descriptor closed on failure is the one
    // socket just returned, which nothing else knows.
    unsafe {
        let fd = sys::socket(sys::AF_UNIX, sys::SOCK_SEQPACKET | sys::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return None;
        }
        let len = std::mem::size_of::<sys::SockaddrUn>() as u32;
        if sys::connect(fd, &shim.socket, len) != 0 {
            sys::real::close()(fd);
            return None;
        }
        mark(fd, true);
        Some(fd)
    }
}

/// This process's pid, kept here rather than asked of the kernel on every message: set by the
/// constructor and by the fork handler in the child. (A `vfork` child, which runs no fork
/// handler and shares its parent's memory, thus speaks as its parent until it execs, instead
/// of replacing its parent's connection under it.)
static PID: AtomicI32 = AtomicI32::new(0);

pub fn set_pid() {
    // SAFETY: getpid takes nothing and cannot fail.
    PID.store(unsafe { sys::getpid() }, Ordering::Relaxed);
}

pub fn pid() -> i32 {
    PID.load(Ordering::Relaxed)
}

/// This thread's connection, opened if needed: (descriptor, pid, tid).
fn current(shim: &Shim) -> Option<(i32, i32, i32)> {
    let (fd, pid, _) = CONN.with(Cell::get);
    let me = self::pid();
    if fd >= 0 && pid == me {
        return Some(CONN.with(Cell::get));
    }
    if fd >= 0 {
        // Inherited across fork: the parent still has its own copy.
        // SAFETY: closing touches no memory. The number is this thread's inherited copy of
        // its parent's connection, which only this thread-local names (the `close` hook keeps
        // the program from closing it under us), so nothing else still uses it.
        unsafe { sys::real::close()(fd) };
        mark(fd, false);
    }
    let fd = open(shim)?;
    let conn = (fd, me, sys::gettid());
    CONN.with(|c| c.set(conn));
    Some(conn)
}

/// Closes this thread's connection (the thread is ending).
pub fn close_current() {
    let (fd, pid, _) = CONN.with(Cell::get);
    if fd >= 0 && pid == self::pid() {
        // SAFETY: closing touches no memory; the descriptor is this thread's own connection,
        // forgotten just below.
        unsafe { sys::real::close()(fd) };
        mark(fd, false);
    }
    CONN.with(|c| c.set((-1, 0, 0)));
}

/// Sends a message; false (and the library detaches) if the controller cannot be reached.
/// A descriptor the program closed or replaced under the library is reopened once.
pub fn send(shim: &Shim, msg: &Msg, payload: &[u8]) -> bool {
    let mut buf = [0u8; MAX_MSG_BYTES];
    for attempt in 0..2 {
        let Some((fd, pid, tid)) = current(shim) else {
            detach();
            return false;
        };
        let mut m = *msg;
        m.pid = pid;
        m.tid = tid;
        let Some(len) = m.encode(payload, &mut buf) else {
            return false;
        };
        // SAFETY: send reads `len` bytes of `buf`, and encode returned a `len` within it.
        let n = unsafe { sys::send(fd, buf.as_ptr().cast(), len, sys::MSG_NOSIGNAL) };
        if n == len as isize {
            return true;
        }
        let e = sys::errno();
        if attempt == 0 && (e == sys::EBADF || e == sys::ENOTSOCK) {
            mark(fd, false);
            CONN.with(|c| c.set((-1, 0, 0)));
            continue;
        }
        break;
    }
    detach();
    false
}

/// Sends a message that wants a reply and waits for it; `None` if the library detached.
/// Signals do not interrupt the wait: a sleep under cosim ends at its virtual instant.
pub fn call(shim: &Shim, msg: &Msg, payload: &[u8]) -> Option<Reply> {
    if !send(shim, msg, payload) {
        return None;
    }
    let (fd, _, _) = CONN.with(Cell::get);
    let mut buf = [0u8; REPLY_BYTES];
    // Most replies come within microseconds; polling for them briefly spares the thread a
    // sleep and a wake-up, which on a virtual machine cost tens of microseconds each.
    let spin_until = sys::mono_ns() + SPIN_NS;
    loop {
        // SAFETY: recv writes at most REPLY_BYTES bytes, the length of the live `buf`.
        let n = unsafe { sys::recv(fd, buf.as_mut_ptr().cast(), REPLY_BYTES, sys::MSG_DONTWAIT) };
        if n == REPLY_BYTES as isize {
            return Reply::decode(&buf);
        }
        if n == 0 || (n < 0 && sys::errno() != sys::EAGAIN && sys::errno() != sys::EINTR) {
            detach();
            return None;
        }
        if sys::mono_ns() > spin_until {
            break;
        }
        // Yield rather than spin: when the controller waits for this very core, spinning
        // would keep it from answering.
        // SAFETY: sched_yield takes nothing and cannot fail.
        unsafe { sys::sched_yield() };
    }
    loop {
        // SAFETY: as above.
        let n = unsafe { sys::recv(fd, buf.as_mut_ptr().cast(), REPLY_BYTES, 0) };
        if n == REPLY_BYTES as isize {
            return Reply::decode(&buf);
        }
        if n < 0 && sys::errno() == sys::EINTR {
            continue;
        }
        detach();
        return None;
    }
}
