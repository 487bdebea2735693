//! The functions the preload library interposes, and its per-process state.
//!
//! A process under `storsim cosim` loads this library before libc. Its constructor reads the
//! controller's socket, clock page and device paths from the environment, registers the process
//! and installs a fork handler. From then on the hooks in `io`, `time` and `procs` either pass a
//! call straight to libc (files outside the device, clocks when the library is inactive) or
//! turn it into messages to the controller. When anything about the controller fails the
//! library detaches: every call then goes straight to libc, so a program never stops because
//! its simulator went away.

mod conn;
mod fds;
mod io;
mod procs;
mod sys;
mod time;

use crate::clock::{ClockPage, MAGIC, PAGE_BYTES};
use crate::proto::{env, Kind, Msg};
use std::cell::Cell;
use std::ffi::CStr;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

/// What the constructor read from the environment; never freed, since every thread of the
/// process may use it until the process ends.
struct Shim {
    socket: sys::SockaddrUn,
    clock: &'static ClockPage,
    /// The directory whose files are on the device, canonical, with a trailing slash.
    dir: Option<Vec<u8>>,
    image: Option<Vec<u8>>,
    real_sync: bool,
}

static SHIM: AtomicPtr<Shim> = AtomicPtr::new(std::ptr::null_mut());
static DETACHED: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// Set while the library itself runs on this thread, so that a libc call made on its behalf
    /// (by Rust's standard library, say) is passed straight through.
    static INSIDE: Cell<bool> = const { Cell::new(false) };
}

/// The library's state when a hook should act: initialised, not detached, and not already
/// inside the library on this thread.
fn active() -> Option<&'static Shim> {
    if DETACHED.load(Ordering::Relaxed) || INSIDE.with(Cell::get) {
        return None;
    }
    let p = SHIM.load(Ordering::Acquire);
    if p.is_null() {
        None
    } else {
        // SAFETY: SHIM is only ever set, by `init`, to a leaked Box (never freed nor written
        // through afterwards), and the Acquire load sees it fully built: a live Shim for the
        // rest of the process, only ever shared.
        Some(unsafe { &*p })
    }
}

/// The clock page, for the clock hooks: they keep working inside the library too.
fn clock_page() -> Option<&'static ClockPage> {
    if DETACHED.load(Ordering::Relaxed) {
        return None;
    }
    let p = SHIM.load(Ordering::Acquire);
    if p.is_null() {
        None
    } else {
        // SAFETY: as in `active`: a non-null SHIM is a leaked, never-freed Shim.
        Some(unsafe { (*p).clock })
    }
}

/// Marks this thread as inside the library until dropped.
struct Inside;

impl Inside {
    fn enter() -> Inside {
        INSIDE.with(|c| c.set(true));
        Inside
    }
}

impl Drop for Inside {
    fn drop(&mut self) {
        INSIDE.with(|c| c.set(false));
    }
}

/// Gives up on the controller: from now on every call goes straight to libc.
fn detach() {
    DETACHED.store(true, Ordering::Relaxed);
}

impl Shim {
    /// Whether a canonical path is on the device: the image file, the directory itself or
    /// anything below it.
    fn covers(&self, path: &[u8]) -> bool {
        if self.image.as_deref() == Some(path) {
            return true;
        }
        match &self.dir {
            Some(dir) => path.starts_with(dir) || path == &dir[..dir.len() - 1],
            None => false,
        }
    }
}

fn env_bytes(name: &str) -> Option<Vec<u8>> {
    let mut key = name.as_bytes().to_vec();
    key.push(0);
    // SAFETY: `key` is NUL-terminated; getenv only reads it.
    let p = unsafe { sys::getenv(key.as_ptr().cast()) };
    if p.is_null() {
        return None;
    }
    // SAFETY: a non-null getenv result is a NUL-terminated string in the environment. It is
    // copied at once, and the only caller is the constructor, which runs before the program's
    // `main` and so before anything could change the environment under it.
    Some(unsafe { CStr::from_ptr(p) }.to_bytes().to_vec())
}

/// Maps the clock page read-only; `None` if the file is missing or not a clock page.
fn map_clock(path: &[u8]) -> Option<&'static ClockPage> {
    let mut c = path.to_vec();
    c.push(0);
    // SAFETY: open gets a NUL-terminated path; mmap makes a new mapping at an address the
    // kernel chooses, so no memory of the process changes; the descriptor closed is the one
    // just opened. The page reference: the mapping is page-aligned, PAGE_BYTES long (more
    // than a ClockPage) and never unmapped, so it is valid for 'static; every field is an
    // atomic, so the controller's concurrent writes are no data race; and the controller
    // sizes the file to PAGE_BYTES before it starts the program, so no access faults.
    unsafe {
        let fd = sys::real::open()(c.as_ptr().cast(), sys::O_RDONLY | sys::O_CLOEXEC, 0);
        if fd < 0 {
            return None;
        }
        let p = sys::real::mmap()(
            std::ptr::null_mut(),
            PAGE_BYTES,
            sys::PROT_READ,
            sys::MAP_SHARED,
            fd,
            0,
        );
        sys::real::close()(fd);
        if p as isize == -1 {
            return None;
        }
        let page = &*(p as *const ClockPage);
        if page.magic.load(Ordering::Acquire) != MAGIC {
            return None;
        }
        Some(page)
    }
}

extern "C" fn init() {
    let _inside = Inside::enter();
    let (Some(socket_path), Some(clock_path)) = (env_bytes(env::SOCKET), env_bytes(env::CLOCK))
    else {
        return;
    };
    let mut socket = sys::SockaddrUn {
        sun_family: sys::AF_UNIX as u16,
        sun_path: [0; 108],
    };
    if socket_path.len() >= socket.sun_path.len() {
        sys::stderr_line("the controller's socket path is too long; running without cosim");
        return;
    }
    socket.sun_path[..socket_path.len()].copy_from_slice(&socket_path);
    let Some(clock) = map_clock(&clock_path) else {
        sys::stderr_line("cannot map the clock page; running without cosim");
        return;
    };
    let dir = env_bytes(env::DIR).map(|mut d| {
        d.push(b'/');
        d
    });
    let shim = Box::new(Shim {
        socket,
        clock,
        dir,
        image: env_bytes(env::IMAGE),
        real_sync: env_bytes(env::REAL_SYNC).as_deref() == Some(b"1"),
    });
    conn::set_pid();
    SHIM.store(Box::into_raw(shim), Ordering::Release);
    // SAFETY: the handler is an `unsafe extern "C" fn()` as pthread_atfork expects, and it
    // lives as long as the library, which is never unloaded.
    unsafe {
        sys::pthread_atfork(None, None, Some(procs::after_fork_in_child));
    }
    let mut m = Msg::new(Kind::ProcStart, conn::pid(), sys::gettid());
    // SAFETY: getppid takes nothing and cannot fail.
    m.a = unsafe { sys::getppid() } as u64;
    m.r_ns = sys::mono_ns();
    // SAFETY: stored just above from a leaked Box, never freed.
    let shim = unsafe { &*SHIM.load(Ordering::Acquire) };
    conn::call(shim, &m, &[]);
}

/// Runs `init` when the library is loaded, before the program's `main`.
#[used]
#[link_section = ".init_array"]
static INIT: extern "C" fn() = init;

/// Sends a warning to the controller, which prints each distinct text once at the end.
fn warn(shim: &Shim, text: &str) {
    let _inside = Inside::enter();
    let m = Msg::new(Kind::Warn, 0, 0);
    conn::send(shim, &m, text.as_bytes());
}
