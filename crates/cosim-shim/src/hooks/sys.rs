//! The C interface the library needs, declared by hand (the crate has no dependencies), and the
//! real versions of the functions it interposes, looked up with `dlsym(RTLD_NEXT, ...)`.
//!
//! The library's own code never calls an interposed function by name: inside a preloaded
//! library that name resolves to the library itself. It calls `real::NAME()` instead.

use std::ffi::{c_char, c_int, c_long, c_uint, c_void};

pub type PidT = i32;
pub type ClockId = c_int;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct Timespec {
    pub tv_sec: i64,
    pub tv_nsec: i64,
}

#[repr(C)]
pub struct Timeval {
    pub tv_sec: i64,
    pub tv_usec: i64,
}

#[repr(C)]
pub struct Iovec {
    pub iov_base: *mut c_void,
    pub iov_len: usize,
}

#[repr(C)]
pub struct SockaddrUn {
    pub sun_family: u16,
    pub sun_path: [u8; 108],
}

pub const AF_UNIX: c_int = 1;
pub const SOCK_SEQPACKET: c_int = 5;
pub const SOCK_CLOEXEC: c_int = 0o2000000;
pub const MSG_NOSIGNAL: c_int = 0x4000;
pub const MSG_DONTWAIT: c_int = 0x40;
pub const O_RDONLY: c_int = 0;
pub const O_CLOEXEC: c_int = 0o2000000;
pub const O_PATH: c_int = 0o10000000;
#[cfg(target_arch = "aarch64")]
pub const O_DIRECT: c_int = 0o200000;
#[cfg(target_arch = "aarch64")]
pub const O_NOFOLLOW: c_int = 0o100000;
#[cfg(not(target_arch = "aarch64"))]
pub const O_NOFOLLOW: c_int = 0o400000;
#[cfg(not(target_arch = "aarch64"))]
pub const O_DIRECT: c_int = 0o40000;
pub const PROT_READ: c_int = 1;
pub const MAP_SHARED: c_int = 1;
pub const SEEK_CUR: c_int = 1;
pub const AT_FDCWD: c_int = -100;
pub const WNOHANG: c_int = 1;
pub const F_DUPFD: c_int = 0;
pub const F_DUPFD_CLOEXEC: c_int = 1030;
pub const FALLOC_FL_PUNCH_HOLE: c_int = 2;
pub const TIMER_ABSTIME: c_int = 1;
pub const TIME_UTC: c_int = 1;

pub const EINTR: c_int = 4;
pub const EAGAIN: c_int = 11;
pub const EBADF: c_int = 9;
pub const EFAULT: c_int = 14;
pub const EINVAL: c_int = 22;
pub const ENOTSOCK: c_int = 88;

pub const CLOCK_REALTIME: ClockId = 0;
pub const CLOCK_MONOTONIC: ClockId = 1;
pub const CLOCK_MONOTONIC_RAW: ClockId = 4;
pub const CLOCK_REALTIME_COARSE: ClockId = 5;
pub const CLOCK_MONOTONIC_COARSE: ClockId = 6;
pub const CLOCK_BOOTTIME: ClockId = 7;
pub const CLOCK_REALTIME_ALARM: ClockId = 8;
pub const CLOCK_BOOTTIME_ALARM: ClockId = 9;
pub const CLOCK_TAI: ClockId = 11;

#[cfg(target_arch = "aarch64")]
pub const SYS_GETTID: c_long = 178;
#[cfg(not(target_arch = "aarch64"))]
pub const SYS_GETTID: c_long = 186;
/// The same number on every Linux architecture (the unified syscall table).
pub const SYS_IO_URING_SETUP: c_long = 425;

pub const RTLD_NEXT: *mut c_void = -1isize as *mut c_void;

extern "C" {
    pub fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    pub fn __errno_location() -> *mut c_int;
    pub fn getenv(name: *const c_char) -> *const c_char;
    pub fn getpid() -> PidT;
    pub fn sched_yield() -> c_int;
    pub fn getppid() -> PidT;
    pub fn socket(domain: c_int, ty: c_int, protocol: c_int) -> c_int;
    pub fn connect(fd: c_int, addr: *const SockaddrUn, len: u32) -> c_int;
    pub fn send(fd: c_int, buf: *const c_void, len: usize, flags: c_int) -> isize;
    pub fn recv(fd: c_int, buf: *mut c_void, len: usize, flags: c_int) -> isize;
    pub fn readlink(path: *const c_char, buf: *mut c_char, len: usize) -> isize;
    pub fn lseek(fd: c_int, offset: i64, whence: c_int) -> i64;
    pub fn fileno(stream: *mut c_void) -> c_int;
    pub fn pthread_atfork(
        prepare: Option<unsafe extern "C" fn()>,
        parent: Option<unsafe extern "C" fn()>,
        child: Option<unsafe extern "C" fn()>,
    ) -> c_int;
}

pub fn errno() -> c_int {
    // SAFETY: __errno_location returns the calling thread's errno, valid for the thread's
    // whole life and touched by no other thread.
    unsafe { *__errno_location() }
}

pub fn set_errno(e: c_int) {
    // SAFETY: as in `errno`.
    unsafe { *__errno_location() = e }
}

/// Writes a line to standard error without going through anything the library interposes.
pub fn stderr_line(text: &str) {
    let mut line = Vec::with_capacity(text.len() + 17);
    line.extend_from_slice(b"storsim cosim: ");
    line.extend_from_slice(text.as_bytes());
    line.push(b'\n');
    // SAFETY: write only reads `line.len()` bytes of the live vector.
    unsafe {
        real::write()(2, line.as_ptr().cast(), line.len());
    }
}

/// Defines `real::NAME()`, returning the next definition of NAME after this library's, looked
/// up once and cached.
macro_rules! real_fns {
    ($($name:ident : fn($($arg:ty),*) -> $ret:ty;)*) => {
        pub mod real {
            #[allow(unused_imports)]
            use super::*;
            use std::sync::atomic::{AtomicUsize, Ordering};
            $(
                #[allow(clippy::missing_safety_doc)]
                pub fn $name() -> unsafe extern "C" fn($($arg),*) -> $ret {
                    static PTR: AtomicUsize = AtomicUsize::new(0);
                    let mut p = PTR.load(Ordering::Relaxed);
                    if p == 0 {
                        // SAFETY: RTLD_NEXT is a pseudo-handle dlsym accepts, and the name
                        // is a NUL-terminated literal.
                        p = unsafe {
                            dlsym(RTLD_NEXT, concat!(stringify!($name), "\0").as_ptr().cast())
                        } as usize;
                        if p == 0 {
                            // Only reachable if libc lacks a function a program just called
                            // through this library, which cannot be answered at all.
                            std::process::abort();
                        }
                        PTR.store(p, Ordering::Relaxed);
                    }
                    // SAFETY: `p` is non-null, the address dlsym found for this function
                    // in the next object (libc), and the table below declares each function
                    // with its C prototype, so calling through this type is calling it.
                    unsafe { std::mem::transmute::<usize, unsafe extern "C" fn($($arg),*) -> $ret>(p) }
                }
            )*
        }
    };
}

real_fns! {
    open: fn(*const c_char, c_int, c_uint) -> c_int;
    open64: fn(*const c_char, c_int, c_uint) -> c_int;
    openat: fn(c_int, *const c_char, c_int, c_uint) -> c_int;
    openat64: fn(c_int, *const c_char, c_int, c_uint) -> c_int;
    __open_2: fn(*const c_char, c_int) -> c_int;
    __open64_2: fn(*const c_char, c_int) -> c_int;
    __openat_2: fn(c_int, *const c_char, c_int) -> c_int;
    __openat64_2: fn(c_int, *const c_char, c_int) -> c_int;
    creat: fn(*const c_char, c_uint) -> c_int;
    creat64: fn(*const c_char, c_uint) -> c_int;
    fopen: fn(*const c_char, *const c_char) -> *mut c_void;
    fopen64: fn(*const c_char, *const c_char) -> *mut c_void;
    close: fn(c_int) -> c_int;
    close_range: fn(c_uint, c_uint, c_int) -> c_int;
    dup: fn(c_int) -> c_int;
    dup2: fn(c_int, c_int) -> c_int;
    dup3: fn(c_int, c_int, c_int) -> c_int;
    fcntl: fn(c_int, c_int, c_long) -> c_int;
    fcntl64: fn(c_int, c_int, c_long) -> c_int;
    read: fn(c_int, *mut c_void, usize) -> isize;
    __read_chk: fn(c_int, *mut c_void, usize, usize) -> isize;
    write: fn(c_int, *const c_void, usize) -> isize;
    pread: fn(c_int, *mut c_void, usize, i64) -> isize;
    pread64: fn(c_int, *mut c_void, usize, i64) -> isize;
    __pread_chk: fn(c_int, *mut c_void, usize, i64, usize) -> isize;
    __pread64_chk: fn(c_int, *mut c_void, usize, i64, usize) -> isize;
    pwrite: fn(c_int, *const c_void, usize, i64) -> isize;
    pwrite64: fn(c_int, *const c_void, usize, i64) -> isize;
    readv: fn(c_int, *const Iovec, c_int) -> isize;
    writev: fn(c_int, *const Iovec, c_int) -> isize;
    preadv: fn(c_int, *const Iovec, c_int, i64) -> isize;
    preadv64: fn(c_int, *const Iovec, c_int, i64) -> isize;
    pwritev: fn(c_int, *const Iovec, c_int, i64) -> isize;
    pwritev64: fn(c_int, *const Iovec, c_int, i64) -> isize;
    preadv2: fn(c_int, *const Iovec, c_int, i64, c_int) -> isize;
    pwritev2: fn(c_int, *const Iovec, c_int, i64, c_int) -> isize;
    fsync: fn(c_int) -> c_int;
    fdatasync: fn(c_int) -> c_int;
    sync_file_range: fn(c_int, i64, i64, c_uint) -> c_int;
    ftruncate: fn(c_int, i64) -> c_int;
    ftruncate64: fn(c_int, i64) -> c_int;
    truncate: fn(*const c_char, i64) -> c_int;
    truncate64: fn(*const c_char, i64) -> c_int;
    fallocate: fn(c_int, c_int, i64, i64) -> c_int;
    fallocate64: fn(c_int, c_int, i64, i64) -> c_int;
    posix_fallocate: fn(c_int, i64, i64) -> c_int;
    posix_fallocate64: fn(c_int, i64, i64) -> c_int;
    unlink: fn(*const c_char) -> c_int;
    unlinkat: fn(c_int, *const c_char, c_int) -> c_int;
    rename: fn(*const c_char, *const c_char) -> c_int;
    renameat: fn(c_int, *const c_char, c_int, *const c_char) -> c_int;
    renameat2: fn(c_int, *const c_char, c_int, *const c_char, c_uint) -> c_int;
    mmap: fn(*mut c_void, usize, c_int, c_int, c_int, i64) -> *mut c_void;
    mmap64: fn(*mut c_void, usize, c_int, c_int, c_int, i64) -> *mut c_void;
    copy_file_range: fn(c_int, *mut i64, c_int, *mut i64, usize, c_uint) -> isize;
    sendfile: fn(c_int, c_int, *mut i64, usize) -> isize;
    sendfile64: fn(c_int, c_int, *mut i64, usize) -> isize;
    syscall: fn(c_long, c_long, c_long, c_long, c_long, c_long, c_long) -> c_long;
    clock_gettime: fn(ClockId, *mut Timespec) -> c_int;
    gettimeofday: fn(*mut Timeval, *mut c_void) -> c_int;
    clock: fn() -> c_long;
    nanosleep: fn(*const Timespec, *mut Timespec) -> c_int;
    clock_nanosleep: fn(ClockId, c_int, *const Timespec, *mut Timespec) -> c_int;
    usleep: fn(c_uint) -> c_int;
    sleep: fn(c_uint) -> c_uint;
    select: fn(c_int, *mut c_void, *mut c_void, *mut c_void, *mut Timeval) -> c_int;
    poll: fn(*mut c_void, u64, c_int) -> c_int;
    pthread_create: fn(*mut u64, *const c_void, extern "C" fn(*mut c_void) -> *mut c_void, *mut c_void) -> c_int;
    pthread_exit: fn(*mut c_void) -> ();
    pthread_join: fn(u64, *mut *mut c_void) -> c_int;
    wait: fn(*mut c_int) -> PidT;
    waitpid: fn(PidT, *mut c_int, c_int) -> PidT;
    wait3: fn(*mut c_int, c_int, *mut c_void) -> PidT;
    wait4: fn(PidT, *mut c_int, c_int, *mut c_void) -> PidT;
    waitid: fn(c_int, u32, *mut c_void, c_int) -> c_int;
}

/// The real monotonic clock in ns.
pub fn mono_ns() -> u64 {
    read_clock(CLOCK_MONOTONIC)
}

/// A real clock in ns.
pub fn read_clock(clock: ClockId) -> u64 {
    let mut ts = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a live Timespec for the call to fill in; an unknown clock is an error
    // return, which leaves the zeros.
    unsafe {
        real::clock_gettime()(clock, &mut ts);
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub fn gettid() -> i32 {
    // SAFETY: gettid takes no arguments (the kernel ignores the zeros) and cannot fail.
    unsafe { real::syscall()(SYS_GETTID, 0, 0, 0, 0, 0, 0) as i32 }
}
