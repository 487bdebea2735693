//! File I/O: opens, reads, writes, syncs and the calls that change a file's layout.
//!
//! The real call always runs, so the program's files hold what it wrote and it reads what it
//! would read anywhere. When the descriptor is on the device, the library then sends the
//! controller the byte range the call actually transferred (after the real call, so a short
//! read at the end of a file asks the device for what was read) with the real time at which
//! the call entered, and waits for the device's completion. The time spent in the real call and
//! in the library does not count as the program's running time: the controller stamps the
//! request at the entry instant when no other thread ran meanwhile.

use super::sys::{self, real, Iovec};
use super::{active, conn, fds, warn, Inside, Shim};
use crate::proto::{IoOp, Kind, Msg};
use std::ffi::{c_char, c_int, c_long, c_uint, c_void};

/// Tells the controller the thread runs again from now.
pub(super) fn resumed(shim: &Shim) {
    let mut m = Msg::new(Kind::Resumed, 0, 0);
    m.r_ns = sys::mono_ns();
    conn::send(shim, &m, &[]);
}

/// Submits one request to the device and waits for its completion; `Err(errno)` when the
/// controller refuses it (the device is full, say).
fn device(
    shim: &Shim,
    op: IoOp,
    id: u64,
    offset: u64,
    len: u64,
    r_entry: u64,
) -> Result<(), c_int> {
    let _inside = Inside::enter();
    let saved = sys::errno();
    let mut m = Msg::new(Kind::Io, 0, 0);
    m.r_ns = r_entry;
    m.a = op as u64;
    m.b = id;
    m.c = offset;
    m.d = len;
    let reply = conn::call(shim, &m, &[]);
    if reply.is_some() {
        resumed(shim);
    }
    sys::set_errno(saved);
    match reply {
        Some(r) if r.status < 0 => Err((-r.status) as c_int),
        _ => Ok(()),
    }
}

/// A read or write at `at` (or at the file position when `None`): the real call, then the
/// device request for the bytes it moved.
fn data_io(fd: c_int, op: IoOp, at: Option<i64>, call: impl FnOnce() -> isize) -> isize {
    let Some(shim) = active() else {
        return call();
    };
    let Some(id) = fds::classify(shim, fd) else {
        return call();
    };
    let r_entry = sys::mono_ns();
    let res = call();
    if res <= 0 {
        return res;
    }
    let offset = match at {
        Some(o) if o >= 0 => o as u64,
        _ => {
            // SAFETY: lseek takes no pointers, and SEEK_CUR by 0 only reads the position.
            let end = unsafe { sys::lseek(fd, 0, sys::SEEK_CUR) };
            if end < 0 {
                return res;
            }
            (end as u64).saturating_sub(res as u64)
        }
    };
    match device(shim, op, id, offset, res as u64, r_entry) {
        Ok(()) => res,
        Err(e) => {
            sys::set_errno(e);
            -1
        }
    }
}

/// fsync and friends: a flush request to the device. The real sync is skipped unless asked
/// for (it would cost real time the program does not see and protects nothing the run needs).
fn flush(fd: c_int, call: impl FnOnce() -> c_int) -> c_int {
    let Some(shim) = active() else {
        return call();
    };
    let Some(id) = fds::classify(shim, fd) else {
        return call();
    };
    let r_entry = sys::mono_ns();
    if shim.real_sync {
        let r = call();
        if r != 0 {
            return r;
        }
    }
    match device(shim, IoOp::Flush, id, 0, 0, r_entry) {
        Ok(()) => 0,
        Err(e) => {
            sys::set_errno(e);
            -1
        }
    }
}

/// After an open: classify the new descriptor. A file system that refuses O_DIRECT (tmpfs) is
/// asked again without it for files on the device, whose timing comes from the model anyway.
fn opened(fd: c_int, flags: c_int, retry: impl FnOnce(c_int) -> c_int) -> c_int {
    let Some(shim) = active() else {
        return fd;
    };
    let saved = sys::errno();
    if fd < 0 {
        if flags & sys::O_DIRECT != 0 && saved == sys::EINVAL {
            let fd2 = retry(flags & !sys::O_DIRECT);
            if fd2 >= 0 {
                fds::forget(fd2);
                if fds::classify(shim, fd2).is_some() {
                    sys::set_errno(saved);
                    return fd2;
                }
                // SAFETY: closing touches no memory; `fd2` is the library's own retry, which
                // the program never saw.
                unsafe { real::close()(fd2) };
                fds::forget(fd2);
            }
            sys::set_errno(saved);
        }
        return fd;
    }
    fds::forget(fd);
    fds::classify(shim, fd);
    sys::set_errno(saved);
    fd
}

#[no_mangle]
pub unsafe extern "C" fn open(path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    let f = |fl| real::open()(path, fl, mode);
    opened(f(flags), flags, f)
}

#[no_mangle]
pub unsafe extern "C" fn open64(path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    let f = |fl| real::open64()(path, fl, mode);
    opened(f(flags), flags, f)
}

#[no_mangle]
pub unsafe extern "C" fn openat(
    dir: c_int,
    path: *const c_char,
    flags: c_int,
    mode: c_uint,
) -> c_int {
    let f = |fl| real::openat()(dir, path, fl, mode);
    opened(f(flags), flags, f)
}

#[no_mangle]
pub unsafe extern "C" fn openat64(
    dir: c_int,
    path: *const c_char,
    flags: c_int,
    mode: c_uint,
) -> c_int {
    let f = |fl| real::openat64()(dir, path, fl, mode);
    opened(f(flags), flags, f)
}

#[no_mangle]
pub unsafe extern "C" fn __open_2(path: *const c_char, flags: c_int) -> c_int {
    let f = |fl| real::__open_2()(path, fl);
    opened(f(flags), flags, f)
}

#[no_mangle]
pub unsafe extern "C" fn __open64_2(path: *const c_char, flags: c_int) -> c_int {
    let f = |fl| real::__open64_2()(path, fl);
    opened(f(flags), flags, f)
}

#[no_mangle]
pub unsafe extern "C" fn __openat_2(dir: c_int, path: *const c_char, flags: c_int) -> c_int {
    let f = |fl| real::__openat_2()(dir, path, fl);
    opened(f(flags), flags, f)
}

#[no_mangle]
pub unsafe extern "C" fn __openat64_2(dir: c_int, path: *const c_char, flags: c_int) -> c_int {
    let f = |fl| real::__openat64_2()(dir, path, fl);
    opened(f(flags), flags, f)
}

#[no_mangle]
pub unsafe extern "C" fn creat(path: *const c_char, mode: c_uint) -> c_int {
    opened(real::creat()(path, mode), 0, |_| -1)
}

#[no_mangle]
pub unsafe extern "C" fn creat64(path: *const c_char, mode: c_uint) -> c_int {
    opened(real::creat64()(path, mode), 0, |_| -1)
}

/// Streams opened with fopen read and write through libc's internal calls, which no preload
/// library sees: warn instead of silently leaving them out.
///
/// # Safety
/// `stream` is null or an open `FILE *`, as the real fopen returns.
unsafe fn stream_opened(stream: *mut c_void) -> *mut c_void {
    if let Some(shim) = active() {
        if !stream.is_null() {
            // SAFETY: non-null, so an open stream by this function's contract.
            let fd = unsafe { sys::fileno(stream) };
            if fds::classify(shim, fd).is_some() {
                let path = fds::fd_path(fd).unwrap_or_default();
                warn(
                    shim,
                    &format!(
                        "{} was opened with fopen: stdio reads and writes bypass the device model (only its fsync reaches it)",
                        String::from_utf8_lossy(&path)
                    ),
                );
            }
        }
    }
    stream
}

#[no_mangle]
pub unsafe extern "C" fn fopen(path: *const c_char, mode: *const c_char) -> *mut c_void {
    stream_opened(real::fopen()(path, mode))
}

#[no_mangle]
pub unsafe extern "C" fn fopen64(path: *const c_char, mode: *const c_char) -> *mut c_void {
    stream_opened(real::fopen64()(path, mode))
}

/// The library's own sockets survive a program that closes every descriptor it did not open.
#[no_mangle]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    if conn::is_ours(fd) && active().is_some() {
        return 0;
    }
    fds::forget(fd);
    real::close()(fd)
}

#[no_mangle]
pub unsafe extern "C" fn close_range(first: c_uint, last: c_uint, flags: c_int) -> c_int {
    conn::forget_range(first, last);
    for fd in first..=last.min(65535) {
        fds::forget(fd as c_int);
    }
    real::close_range()(first, last, flags)
}

#[no_mangle]
pub unsafe extern "C" fn dup(fd: c_int) -> c_int {
    let r = real::dup()(fd);
    fds::forget(r);
    r
}

#[no_mangle]
pub unsafe extern "C" fn dup2(fd: c_int, new: c_int) -> c_int {
    let r = real::dup2()(fd, new);
    fds::forget(new);
    r
}

#[no_mangle]
pub unsafe extern "C" fn dup3(fd: c_int, new: c_int, flags: c_int) -> c_int {
    let r = real::dup3()(fd, new, flags);
    fds::forget(new);
    r
}

#[no_mangle]
pub unsafe extern "C" fn fcntl(fd: c_int, cmd: c_int, arg: c_long) -> c_int {
    let r = real::fcntl()(fd, cmd, arg);
    if cmd == sys::F_DUPFD || cmd == sys::F_DUPFD_CLOEXEC {
        fds::forget(r);
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn fcntl64(fd: c_int, cmd: c_int, arg: c_long) -> c_int {
    let r = real::fcntl64()(fd, cmd, arg);
    if cmd == sys::F_DUPFD || cmd == sys::F_DUPFD_CLOEXEC {
        fds::forget(r);
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn read(fd: c_int, buf: *mut c_void, n: usize) -> isize {
    data_io(fd, IoOp::Read, None, || real::read()(fd, buf, n))
}

#[no_mangle]
pub unsafe extern "C" fn __read_chk(fd: c_int, buf: *mut c_void, n: usize, size: usize) -> isize {
    data_io(fd, IoOp::Read, None, || {
        real::__read_chk()(fd, buf, n, size)
    })
}

#[no_mangle]
pub unsafe extern "C" fn write(fd: c_int, buf: *const c_void, n: usize) -> isize {
    data_io(fd, IoOp::Write, None, || real::write()(fd, buf, n))
}

#[no_mangle]
pub unsafe extern "C" fn pread(fd: c_int, buf: *mut c_void, n: usize, off: i64) -> isize {
    data_io(fd, IoOp::Read, Some(off), || real::pread()(fd, buf, n, off))
}

#[no_mangle]
pub unsafe extern "C" fn pread64(fd: c_int, buf: *mut c_void, n: usize, off: i64) -> isize {
    data_io(fd, IoOp::Read, Some(off), || {
        real::pread64()(fd, buf, n, off)
    })
}

#[no_mangle]
pub unsafe extern "C" fn __pread_chk(
    fd: c_int,
    buf: *mut c_void,
    n: usize,
    off: i64,
    size: usize,
) -> isize {
    data_io(fd, IoOp::Read, Some(off), || {
        real::__pread_chk()(fd, buf, n, off, size)
    })
}

#[no_mangle]
pub unsafe extern "C" fn __pread64_chk(
    fd: c_int,
    buf: *mut c_void,
    n: usize,
    off: i64,
    size: usize,
) -> isize {
    data_io(fd, IoOp::Read, Some(off), || {
        real::__pread64_chk()(fd, buf, n, off, size)
    })
}

#[no_mangle]
pub unsafe extern "C" fn pwrite(fd: c_int, buf: *const c_void, n: usize, off: i64) -> isize {
    data_io(fd, IoOp::Write, Some(off), || {
        real::pwrite()(fd, buf, n, off)
    })
}

#[no_mangle]
pub unsafe extern "C" fn pwrite64(fd: c_int, buf: *const c_void, n: usize, off: i64) -> isize {
    data_io(fd, IoOp::Write, Some(off), || {
        real::pwrite64()(fd, buf, n, off)
    })
}

#[no_mangle]
pub unsafe extern "C" fn readv(fd: c_int, iov: *const Iovec, n: c_int) -> isize {
    data_io(fd, IoOp::Read, None, || real::readv()(fd, iov, n))
}

#[no_mangle]
pub unsafe extern "C" fn writev(fd: c_int, iov: *const Iovec, n: c_int) -> isize {
    data_io(fd, IoOp::Write, None, || real::writev()(fd, iov, n))
}

#[no_mangle]
pub unsafe extern "C" fn preadv(fd: c_int, iov: *const Iovec, n: c_int, off: i64) -> isize {
    data_io(fd, IoOp::Read, Some(off), || {
        real::preadv()(fd, iov, n, off)
    })
}

#[no_mangle]
pub unsafe extern "C" fn preadv64(fd: c_int, iov: *const Iovec, n: c_int, off: i64) -> isize {
    data_io(fd, IoOp::Read, Some(off), || {
        real::preadv64()(fd, iov, n, off)
    })
}

#[no_mangle]
pub unsafe extern "C" fn pwritev(fd: c_int, iov: *const Iovec, n: c_int, off: i64) -> isize {
    data_io(fd, IoOp::Write, Some(off), || {
        real::pwritev()(fd, iov, n, off)
    })
}

#[no_mangle]
pub unsafe extern "C" fn pwritev64(fd: c_int, iov: *const Iovec, n: c_int, off: i64) -> isize {
    data_io(fd, IoOp::Write, Some(off), || {
        real::pwritev64()(fd, iov, n, off)
    })
}

/// An offset of -1 means the file position, as with readv.
#[no_mangle]
pub unsafe extern "C" fn preadv2(
    fd: c_int,
    iov: *const Iovec,
    n: c_int,
    off: i64,
    flags: c_int,
) -> isize {
    data_io(fd, IoOp::Read, Some(off), || {
        real::preadv2()(fd, iov, n, off, flags)
    })
}

#[no_mangle]
pub unsafe extern "C" fn pwritev2(
    fd: c_int,
    iov: *const Iovec,
    n: c_int,
    off: i64,
    flags: c_int,
) -> isize {
    data_io(fd, IoOp::Write, Some(off), || {
        real::pwritev2()(fd, iov, n, off, flags)
    })
}

#[no_mangle]
pub unsafe extern "C" fn fsync(fd: c_int) -> c_int {
    flush(fd, || real::fsync()(fd))
}

#[no_mangle]
pub unsafe extern "C" fn fdatasync(fd: c_int) -> c_int {
    flush(fd, || real::fdatasync()(fd))
}

#[no_mangle]
pub unsafe extern "C" fn sync_file_range(fd: c_int, off: i64, n: i64, flags: c_uint) -> c_int {
    flush(fd, || real::sync_file_range()(fd, off, n, flags))
}

/// Tells the controller about a layout change of the file behind `fd` (one-way).
fn layout_change(fd: c_int, kind: Kind, c: u64, d: u64) {
    if let Some(shim) = active() {
        if let Some(id) = fds::classify(shim, fd) {
            let _inside = Inside::enter();
            let mut m = Msg::new(kind, 0, 0);
            m.b = id;
            m.c = c;
            m.d = d;
            conn::send(shim, &m, &[]);
        }
    }
}

/// After a successful ftruncate: the file's extents beyond `len` are free.
fn ftruncated(fd: c_int, len: i64, r: c_int) -> c_int {
    if r == 0 {
        layout_change(fd, Kind::Truncate, len as u64, 0);
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn ftruncate(fd: c_int, len: i64) -> c_int {
    ftruncated(fd, len, real::ftruncate()(fd, len))
}

#[no_mangle]
pub unsafe extern "C" fn ftruncate64(fd: c_int, len: i64) -> c_int {
    ftruncated(fd, len, real::ftruncate64()(fd, len))
}

/// The canonical path of `path` (relative to `dir`) without following a final symlink.
///
/// # Safety
/// `path` is a NUL-terminated string, or a pointer the real calls reject (null, unmapped)
/// with EFAULT, as for the program's own call it comes from.
unsafe fn canonical(dir: c_int, path: *const c_char) -> Option<Vec<u8>> {
    // SAFETY: `path` as this function's contract says; the kernel copies it in and reports a
    // bad pointer as EFAULT rather than faulting. An O_PATH open reads nothing of the file.
    let fd =
        unsafe { real::openat()(dir, path, sys::O_PATH | sys::O_CLOEXEC | sys::O_NOFOLLOW, 0) };
    if fd < 0 {
        return None;
    }
    let p = fds::fd_path(fd);
    // SAFETY: closing touches no memory; `fd` is the library's own, opened just above.
    unsafe { real::close()(fd) };
    p
}

/// After a successful truncate by path: the same, for the file the path names.
///
/// # Safety
/// As for [`canonical`].
unsafe fn truncated_path(path: *const c_char, len: i64, r: c_int) -> c_int {
    if r != 0 {
        return r;
    }
    if let Some(shim) = active() {
        let saved = sys::errno();
        let _inside = Inside::enter();
        if let Some(p) = canonical(sys::AT_FDCWD, path).filter(|p| shim.covers(p)) {
            if let Some(id) = fds::file_id(shim, &p) {
                let mut m = Msg::new(Kind::Truncate, 0, 0);
                m.b = id;
                m.c = len as u64;
                conn::send(shim, &m, &[]);
            }
        }
        sys::set_errno(saved);
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn truncate(path: *const c_char, len: i64) -> c_int {
    truncated_path(path, len, real::truncate()(path, len))
}

#[no_mangle]
pub unsafe extern "C" fn truncate64(path: *const c_char, len: i64) -> c_int {
    truncated_path(path, len, real::truncate64()(path, len))
}

/// After a successful fallocate: extents taken, or (PUNCH_HOLE) given back.
fn allocated(fd: c_int, mode: c_int, off: i64, len: i64, r: c_int) -> c_int {
    if r == 0 {
        let kind = if mode & sys::FALLOC_FL_PUNCH_HOLE != 0 {
            Kind::Punch
        } else {
            Kind::Allocate
        };
        layout_change(fd, kind, off as u64, len as u64);
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn fallocate(fd: c_int, mode: c_int, off: i64, len: i64) -> c_int {
    allocated(fd, mode, off, len, real::fallocate()(fd, mode, off, len))
}

#[no_mangle]
pub unsafe extern "C" fn fallocate64(fd: c_int, mode: c_int, off: i64, len: i64) -> c_int {
    allocated(fd, mode, off, len, real::fallocate64()(fd, mode, off, len))
}

#[no_mangle]
pub unsafe extern "C" fn posix_fallocate(fd: c_int, off: i64, len: i64) -> c_int {
    allocated(fd, 0, off, len, real::posix_fallocate()(fd, off, len))
}

#[no_mangle]
pub unsafe extern "C" fn posix_fallocate64(fd: c_int, off: i64, len: i64) -> c_int {
    allocated(fd, 0, off, len, real::posix_fallocate64()(fd, off, len))
}

/// Runs an unlink and tells the controller when it removed a name on the device.
///
/// # Safety
/// As for [`canonical`].
unsafe fn unlinked(dir: c_int, path: *const c_char, call: impl FnOnce() -> c_int) -> c_int {
    let Some(shim) = active() else {
        return call();
    };
    let before = {
        let _inside = Inside::enter();
        canonical(dir, path).filter(|p| shim.covers(p))
    };
    let r = call();
    if let (0, Some(p)) = (r, before) {
        let saved = sys::errno();
        let _inside = Inside::enter();
        conn::send(shim, &Msg::new(Kind::Unlink, 0, 0), &p);
        sys::set_errno(saved);
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn unlink(path: *const c_char) -> c_int {
    unlinked(sys::AT_FDCWD, path, || real::unlink()(path))
}

#[no_mangle]
pub unsafe extern "C" fn unlinkat(dir: c_int, path: *const c_char, flags: c_int) -> c_int {
    unlinked(dir, path, || real::unlinkat()(dir, path, flags))
}

/// Runs a rename and tells the controller when a name on the device moved.
///
/// # Safety
/// `old` and `new` as `path` for [`canonical`].
unsafe fn renamed(
    old_dir: c_int,
    old: *const c_char,
    new_dir: c_int,
    new: *const c_char,
    call: impl FnOnce() -> c_int,
) -> c_int {
    let Some(shim) = active() else {
        return call();
    };
    let from = {
        let _inside = Inside::enter();
        canonical(old_dir, old)
    };
    let r = call();
    if r != 0 {
        return r;
    }
    let saved = sys::errno();
    let _inside = Inside::enter();
    if let (Some(from), Some(to)) = (from, canonical(new_dir, new)) {
        if shim.covers(&from) || shim.covers(&to) {
            let mut payload = from;
            payload.push(0);
            payload.extend_from_slice(&to);
            conn::send(shim, &Msg::new(Kind::Rename, 0, 0), &payload);
        }
    }
    sys::set_errno(saved);
    r
}

#[no_mangle]
pub unsafe extern "C" fn rename(old: *const c_char, new: *const c_char) -> c_int {
    renamed(sys::AT_FDCWD, old, sys::AT_FDCWD, new, || {
        real::rename()(old, new)
    })
}

#[no_mangle]
pub unsafe extern "C" fn renameat(
    od: c_int,
    old: *const c_char,
    nd: c_int,
    new: *const c_char,
) -> c_int {
    renamed(od, old, nd, new, || real::renameat()(od, old, nd, new))
}

#[no_mangle]
pub unsafe extern "C" fn renameat2(
    od: c_int,
    old: *const c_char,
    nd: c_int,
    new: *const c_char,
    flags: c_uint,
) -> c_int {
    renamed(od, old, nd, new, || {
        real::renameat2()(od, old, nd, new, flags)
    })
}

/// Warns when a descriptor on the device is used by a call the library cannot model.
fn unmodelled(fds_used: &[c_int], what: &str) {
    if let Some(shim) = active() {
        for &fd in fds_used {
            if fd >= 0 && fds::classify(shim, fd).is_some() {
                let path = fds::fd_path(fd).unwrap_or_default();
                warn(
                    shim,
                    &format!(
                        "{}: {what} bypasses the device model",
                        String::from_utf8_lossy(&path)
                    ),
                );
                return;
            }
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn mmap(
    addr: *mut c_void,
    len: usize,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: i64,
) -> *mut c_void {
    if fd >= 0 {
        unmodelled(&[fd], "memory-mapped I/O (mmap)");
    }
    real::mmap()(addr, len, prot, flags, fd, off)
}

#[no_mangle]
pub unsafe extern "C" fn mmap64(
    addr: *mut c_void,
    len: usize,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: i64,
) -> *mut c_void {
    if fd >= 0 {
        unmodelled(&[fd], "memory-mapped I/O (mmap)");
    }
    real::mmap64()(addr, len, prot, flags, fd, off)
}

#[no_mangle]
pub unsafe extern "C" fn copy_file_range(
    fd_in: c_int,
    off_in: *mut i64,
    fd_out: c_int,
    off_out: *mut i64,
    len: usize,
    flags: c_uint,
) -> isize {
    unmodelled(&[fd_in, fd_out], "copy_file_range");
    real::copy_file_range()(fd_in, off_in, fd_out, off_out, len, flags)
}

#[no_mangle]
pub unsafe extern "C" fn sendfile(out: c_int, fd_in: c_int, off: *mut i64, n: usize) -> isize {
    unmodelled(&[out, fd_in], "sendfile");
    real::sendfile()(out, fd_in, off, n)
}

#[no_mangle]
pub unsafe extern "C" fn sendfile64(out: c_int, fd_in: c_int, off: *mut i64, n: usize) -> isize {
    unmodelled(&[out, fd_in], "sendfile");
    real::sendfile64()(out, fd_in, off, n)
}

/// Only watched for io_uring, which moves I/O out of reach of any preload library. The
/// arguments are passed on as they came: with the System V calling convention a variadic
/// caller's integer arguments sit where a fixed-argument callee reads them.
#[no_mangle]
pub unsafe extern "C" fn syscall(
    n: c_long,
    a: c_long,
    b: c_long,
    c: c_long,
    d: c_long,
    e: c_long,
    f: c_long,
) -> c_long {
    if n == sys::SYS_IO_URING_SETUP {
        if let Some(shim) = active() {
            warn(
                shim,
                "the program set up io_uring: requests through io_uring bypass the device model",
            );
        }
    }
    real::syscall()(n, a, b, c, d, e, f)
}
