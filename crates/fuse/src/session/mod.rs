//! One FUSE session: the reader threads' loop and the answer to every request the kernel sends,
//! whether it came through `/dev/fuse` or through a ring entry.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::abi::{self, opcode, Attr, Out};
use crate::channel::Channel;
use crate::reply::{Joint, Kind, Reply, Route};
use crate::uring::{Entry, FuseRing, RingReply, OP_IN_BYTES};
use crate::{Command, FileExport, Handler, Request};

/// The largest WRITE payload negotiated, and the `max_read` mount option. 1 MiB is the most
/// the kernel sends in one request (256 pages, FUSE_MAX_MAX_PAGES).
pub(crate) const MAX_IO_BYTES: u32 = 1 << 20;
const MAX_PAGES: u16 = (MAX_IO_BYTES / 4096) as u16;
/// A read buffer must hold the largest request: a WRITE of `MAX_IO_BYTES` behind its 80 bytes
/// of headers. The kernel refuses reads into anything smaller.
const BUFFER_BYTES: usize = MAX_IO_BYTES as usize + 4096;
/// Background requests (asynchronous reads and direct I/O from the loop driver or io_uring) the
/// kernel keeps in flight before it makes submitters wait. The default of 12 would cap the
/// queue depth a device model sees; 512 is above the loop driver's own 128 and deep enough for
/// NVMe-like workloads. The kernel lowers it for unprivileged mounts (`max_user_bgreq`).
const MAX_BACKGROUND: u16 = 512;
const CONGESTION_THRESHOLD: u16 = 384;
/// How long the kernel may cache names and attributes. They change only through this file
/// system's own SETATTR replies, which refresh the kernel's copy, so a long timeout is safe.
const TTL: (u64, u32) = abi::valid(3600);
/// The block size reported by GETATTR and STATFS; the loop driver takes STATFS's as its
/// discard granularity.
const BLOCK_BYTES: u32 = 4096;
/// A trim longer than a handler request can carry is split into parts of at most this many
/// bytes (the largest multiple of 4 KiB that fits in a `u32`).
const TRIM_CHUNK_BYTES: u64 = 0xFFFF_F000;

/// The directory entry type field is the file type bits of the mode shifted down, which is what
/// `DT_DIR` and `DT_REG` are.
const DT_DIR: u32 = libc::S_IFDIR >> 12;
const DT_REG: u32 = libc::S_IFREG >> 12;

#[derive(Clone, Debug, PartialEq, Eq)]
enum InitState {
    Pending,
    Done,
    Failed(String),
}

/// What INIT settled about the io_uring transport.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum RingGrant {
    /// The kernel offered FUSE_OVER_IO_URING and the reply took it: the ring must be
    /// registered now, since the kernel holds new requests until it is.
    Granted,
    /// No ring was prepared, or the kernel did not offer the flag (the reason says which).
    NotUsed(String),
}

struct State {
    init: InitState,
    /// The kernel ended the session (ENODEV on read), or a reader hit an unrecoverable error.
    ended: bool,
    /// `Mount::unmount` (or drop) stopped the readers.
    stopped: bool,
}

#[derive(Clone, Copy)]
struct Times {
    atime: (u64, u32),
    mtime: (u64, u32),
    ctime: (u64, u32),
}

pub(crate) struct Session {
    channel: Arc<Channel>,
    export: FileExport,
    handler: Arc<dyn Handler>,
    uid: u32,
    gid: u32,
    mounted_at: (u64, u32),
    file_times: Mutex<Times>,
    /// The protocol minor version the kernel speaks; zero until INIT has been answered.
    kernel_minor: AtomicU32,
    /// The ring prepared for the io_uring transport, offered to the kernel in INIT.
    ring: Option<Arc<FuseRing>>,
    /// What INIT decided about the ring; `None` until INIT has been answered.
    ring_grant: Mutex<Option<RingGrant>>,
    /// Opcodes below 64 already logged as unsupported, so an unknown request is logged once.
    logged_opcodes: AtomicU64,
    state: Mutex<State>,
    changed: Condvar,
    stop_flag: AtomicBool,
    stop_read: OwnedFd,
    stop_write: OwnedFd,
}

fn now() -> (u64, u32) {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    (d.as_secs(), d.subsec_nanos())
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a valid array of two descriptors for pipe2 to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 succeeded, so both descriptors are open and owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

impl Session {
    /// A session answering through `channel`; `ring`, when given, is offered to the kernel in
    /// INIT for the io_uring transport.
    pub fn new(
        channel: Arc<Channel>,
        export: FileExport,
        handler: Arc<dyn Handler>,
        ring: Option<Arc<FuseRing>>,
    ) -> io::Result<Session> {
        let (stop_read, stop_write) = pipe()?;
        let mounted_at = now();
        // SAFETY: geteuid and getegid cannot fail.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        Ok(Session {
            channel,
            export,
            handler,
            uid,
            gid,
            mounted_at,
            file_times: Mutex::new(Times {
                atime: mounted_at,
                mtime: mounted_at,
                ctime: mounted_at,
            }),
            kernel_minor: AtomicU32::new(0),
            ring,
            ring_grant: Mutex::new(None),
            logged_opcodes: AtomicU64::new(0),
            state: Mutex::new(State {
                init: InitState::Pending,
                ended: false,
                stopped: false,
            }),
            changed: Condvar::new(),
            stop_flag: AtomicBool::new(false),
            stop_read,
            stop_write,
        })
    }

    pub fn channel(&self) -> &Arc<Channel> {
        &self.channel
    }

    pub fn stop_fd(&self) -> i32 {
        self.stop_read.as_raw_fd()
    }

    fn lock_state(&self) -> std::sync::MutexGuard<'_, State> {
        // A reader that panicked while holding the lock leaves the state consistent (it only
        // flips flags), so a poisoned lock is used as is.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Blocks until the kernel's INIT has been answered, or fails after `timeout`.
    pub fn wait_init(&self, timeout: Duration) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        let mut state = self.lock_state();
        loop {
            match &state.init {
                InitState::Done => return Ok(()),
                InitState::Failed(reason) => return Err(reason.clone()),
                InitState::Pending => {}
            }
            if state.ended || state.stopped {
                return Err("the session ended before INIT".to_string());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!("no INIT request within {timeout:?}"));
            }
            state = self
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Blocks until the session ends or the readers are stopped.
    pub fn wait_end(&self) {
        let mut state = self.lock_state();
        while !state.ended && !state.stopped {
            state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    pub fn has_ended(&self) -> bool {
        self.lock_state().ended
    }

    /// Whether the readers should go on: neither ended by the kernel nor stopped.
    pub fn is_live(&self) -> bool {
        let state = self.lock_state();
        !state.ended && !state.stopped
    }

    /// What INIT decided about the ring (`None` before INIT).
    pub fn ring_grant(&self) -> Option<RingGrant> {
        self.ring_grant
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn ring(&self) -> Option<&Arc<FuseRing>> {
        self.ring.as_ref()
    }

    /// Marks the session ended by the kernel and wakes every reader so they all exit.
    fn end(&self) {
        self.lock_state().ended = true;
        self.changed.notify_all();
        self.wake_readers();
    }

    /// Stops the readers (used by unmount); replies still outstanding can be sent afterwards.
    pub fn stop(&self) {
        self.lock_state().stopped = true;
        self.changed.notify_all();
        self.wake_readers();
    }

    fn wake_readers(&self) {
        self.stop_flag.store(true, Ordering::SeqCst);
        if let Some(ring) = &self.ring {
            ring.stop();
        }
        // The byte is never read back, so the pipe stays readable and every reader's epoll_wait
        // returns at once, now and later. A full pipe (EAGAIN) is just as readable.
        let byte = 1u8;
        // SAFETY: writes one byte from a live local into a descriptor this session owns.
        let _ = unsafe {
            libc::write(
                self.stop_write.as_raw_fd(),
                &byte as *const u8 as *const libc::c_void,
                1,
            )
        };
    }

    fn log_once(&self, op: u32, message: &str) {
        if op < 64 {
            let bit = 1u64 << op;
            if self.logged_opcodes.fetch_or(bit, Ordering::Relaxed) & bit != 0 {
                return;
            }
        }
        self.channel.log(message);
    }

    /// The reader loop: one request per `read`, answered inline or handed to the handler.
    pub fn run(&self, poller: Poller) {
        let fd = self.channel.raw_fd();
        let mut buf = vec![0u8; BUFFER_BYTES];
        while !self.stop_flag.load(Ordering::SeqCst) {
            // SAFETY: `buf` is a live, writable buffer of `buf.len()` bytes.
            let n = unsafe { libc::read(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
            if n > 0 {
                self.dispatch(&buf[..n as usize]);
                continue;
            }
            if n == 0 {
                self.channel
                    .log("fuse: /dev/fuse returned end of file; ending the session");
                self.end();
                break;
            }
            let err = io::Error::last_os_error();
            match err.raw_os_error() {
                Some(libc::EAGAIN) => {
                    if let Err(e) = poller.wait() {
                        self.channel
                            .log(&format!("fuse: epoll_wait failed: {e}; ending the session"));
                        self.end();
                        break;
                    }
                }
                // EINTR: a signal; ENOENT: the request was interrupted while being read.
                Some(libc::EINTR) | Some(libc::ENOENT) => {}
                // The file system was unmounted or the connection aborted.
                Some(libc::ENODEV) | Some(libc::ECONNABORTED) => {
                    self.end();
                    break;
                }
                _ => {
                    self.channel.log(&format!(
                        "fuse: reading /dev/fuse failed: {err}; ending the session"
                    ));
                    self.end();
                    break;
                }
            }
        }
    }

    fn root_attr(&self) -> Attr {
        Attr {
            ino: abi::ROOT_ID,
            size: 0,
            blocks: 0,
            atime: self.mounted_at,
            mtime: self.mounted_at,
            ctime: self.mounted_at,
            mode: libc::S_IFDIR | 0o755,
            nlink: 2,
            uid: self.uid,
            gid: self.gid,
            blksize: BLOCK_BYTES,
        }
    }

    fn file_attr(&self) -> Attr {
        let times = *self.file_times.lock().unwrap_or_else(|e| e.into_inner());
        let permissions = if self.export.read_only { 0o444 } else { 0o644 };
        Attr {
            ino: abi::FILE_ID,
            size: self.export.size_bytes,
            blocks: self.export.size_bytes.div_ceil(512),
            atime: times.atime,
            mtime: times.mtime,
            ctime: times.ctime,
            mode: libc::S_IFREG | permissions,
            nlink: 1,
            uid: self.uid,
            gid: self.gid,
            blksize: BLOCK_BYTES,
        }
    }

    fn attr(&self, node: u64) -> Option<Attr> {
        match node {
            abi::ROOT_ID => Some(self.root_attr()),
            abi::FILE_ID => Some(self.file_attr()),
            _ => None,
        }
    }

    /// Answers one message read from `/dev/fuse`.
    fn dispatch(&self, msg: &[u8]) {
        let Some(h) = abi::InHeader::parse(msg) else {
            self.channel.log(&format!(
                "fuse: ignored a {}-byte message shorter than a request header",
                msg.len()
            ));
            return;
        };
        let route = Route::Dev {
            channel: Arc::clone(&self.channel),
            unique: h.unique,
        };
        if h.len as usize != msg.len() {
            self.channel.log(&format!(
                "fuse: request {} (opcode {}) says {} bytes but {} arrived",
                h.unique,
                h.opcode,
                h.len,
                msg.len()
            ));
            return route.reply_error(libc::EINVAL);
        }
        self.handle(h, &msg[abi::IN_HEADER_SIZE..], None, route);
    }

    /// Answers the request a ring entry holds. The kernel puts the fuse_in_header and the
    /// opcode's own header in the entry's header buffer and the rest (a write's data, a name)
    /// in its payload buffer; the header's `len` covers all three, which is how the length of
    /// the opcode's header, never transmitted, is known.
    pub(crate) fn dispatch_ring(&self, ring: &Arc<FuseRing>, entry: Entry) {
        let header = ring.header(&entry);
        let Some(h) = abi::InHeader::parse(&header.in_header) else {
            unreachable!("a ring entry's in/out part is longer than a request header");
        };
        let payload_bytes = header.payload_bytes as usize;
        let op_bytes = (h.len as usize)
            .checked_sub(abi::IN_HEADER_SIZE)
            .and_then(|n| n.checked_sub(payload_bytes))
            .filter(|&n| n <= OP_IN_BYTES);
        let payload = ring
            .payload(&entry, payload_bytes)
            .map(|p| p.to_vec())
            .filter(|_| op_bytes.is_some());
        let route = Route::Ring(RingReply::new(
            Arc::clone(ring),
            entry,
            h.unique,
            header.commit_id,
        ));
        let (Some(op_bytes), Some(payload)) = (op_bytes, payload) else {
            ring.log(&format!(
                "fuse: ring request {} (opcode {}) says {} bytes, with a {payload_bytes}-byte \
                 payload in a {}-byte buffer; refused",
                h.unique,
                h.opcode,
                h.len,
                ring.payload_capacity()
            ));
            return route.reply_error(libc::EINVAL);
        };
        let op = &header.op_in[..op_bytes];
        if h.opcode == opcode::WRITE {
            // The data goes to the handler as it is, without another copy.
            self.handle(h, op, Some(payload), route);
        } else if payload.is_empty() {
            self.handle(h, op, None, route);
        } else {
            // Everything but WRITE reads its body as one piece, as /dev/fuse delivers it.
            let mut body = op.to_vec();
            body.extend_from_slice(&payload);
            self.handle(h, &body, None, route);
        }
    }

    /// Answers one request. `body` follows the fuse_in_header; a WRITE's data is either the
    /// tail of `body` or, from the ring, `write_data`.
    fn handle(&self, h: abi::InHeader, body: &[u8], write_data: Option<Vec<u8>>, route: Route) {
        if h.opcode == opcode::INIT {
            return self.init(route, body);
        }
        if self.kernel_minor.load(Ordering::Acquire) == 0 {
            return route.reply_error(libc::EIO);
        }
        let result = match h.opcode {
            opcode::LOOKUP => self.lookup(h.nodeid, body),
            opcode::GETATTR => match self.attr(h.nodeid) {
                Some(a) => Ok(abi::attr_out(&a, TTL)),
                None => Err(libc::ENOENT),
            },
            opcode::SETATTR => self.setattr(h.nodeid, body),
            opcode::OPEN => self.open(h.nodeid, body),
            opcode::READ => return self.read(route, h.nodeid, body),
            opcode::WRITE => return self.write(route, h.nodeid, body, write_data),
            opcode::FSYNC => {
                if h.nodeid == abi::FILE_ID {
                    return self.submit(route, Command::Fsync, 0, 0, Vec::new(), Kind::Done);
                }
                Ok(Vec::new())
            }
            opcode::FLUSH | opcode::RELEASE | opcode::RELEASEDIR | opcode::FSYNCDIR => {
                Ok(Vec::new())
            }
            opcode::OPENDIR => match h.nodeid {
                abi::ROOT_ID => Ok(abi::open_out(0, 0)),
                abi::FILE_ID => Err(libc::ENOTDIR),
                _ => Err(libc::ENOENT),
            },
            opcode::READDIR => self.readdir(h.nodeid, body),
            opcode::STATFS => Ok(abi::statfs_out(&abi::Statfs {
                blocks: self.export.size_bytes / BLOCK_BYTES as u64,
                bfree: 0,
                bavail: 0,
                files: 2,
                ffree: 0,
                bsize: BLOCK_BYTES,
                namelen: 255,
                frsize: BLOCK_BYTES,
            })),
            opcode::ACCESS => self.access(h.nodeid, body),
            // ENOSYS makes the kernel remember that extended attributes are unsupported and
            // stop asking.
            opcode::GETXATTR | opcode::LISTXATTR | opcode::SETXATTR | opcode::REMOVEXATTR => {
                Err(libc::ENOSYS)
            }
            opcode::FALLOCATE => return self.fallocate(route, h.nodeid, body),
            // Linux 6.6 and later try STATX first; ENOSYS makes them use GETATTR from then on.
            opcode::STATX => Err(libc::ENOSYS),
            // Over /dev/fuse these need no reply: requests are answered when the handler
            // answers (an interrupt cannot hurry the device model), and node ids are fixed, so
            // lookup counts need no bookkeeping. The kernel sends them only there; one arriving
            // in a ring entry anyway must still be committed for the entry to serve again.
            opcode::INTERRUPT | opcode::FORGET | opcode::BATCH_FORGET => {
                if !route.is_ring() {
                    return;
                }
                self.log_once(
                    h.opcode,
                    &format!(
                        "fuse: opcode {} arrived over the ring; answered ENOSYS",
                        h.opcode
                    ),
                );
                Err(libc::ENOSYS)
            }
            opcode::DESTROY => Ok(Vec::new()),
            other => {
                self.log_once(
                    other,
                    &format!("fuse: unsupported opcode {other}; answered ENOSYS"),
                );
                Err(libc::ENOSYS)
            }
        };
        match result {
            Ok(payload) => route.reply(&[&payload]),
            Err(errno) => route.reply_error(errno),
        }
    }

    fn fail_init(&self, route: Route, reason: String) {
        self.channel.log(&format!("fuse: {reason}"));
        route.reply_error(libc::EPROTO);
        self.lock_state().init = InitState::Failed(reason);
        self.changed.notify_all();
    }

    fn init(&self, route: Route, body: &[u8]) {
        // A second INIT, or one through a ring entry, is not the handshake.
        if self.kernel_minor.load(Ordering::Acquire) != 0 || route.is_ring() {
            return route.reply_error(libc::EIO);
        }
        if body.len() < abi::INIT_IN_MIN_SIZE {
            return self.fail_init(route, format!("INIT body of {} bytes", body.len()));
        }
        let Some(init) = abi::InitIn::parse(body) else {
            return self.fail_init(route, "malformed INIT".to_string());
        };
        if init.major != abi::KERNEL_VERSION || init.minor < abi::MIN_KERNEL_MINOR {
            return self.fail_init(
                route,
                format!(
                    "kernel speaks FUSE {}.{}; need {}.{} or later",
                    init.major,
                    init.minor,
                    abi::KERNEL_VERSION,
                    abi::MIN_KERNEL_MINOR
                ),
            );
        }
        use abi::init_flag as f;
        // Asynchronous reads and direct I/O let the kernel keep several requests in flight;
        // big writes and max_pages let one request carry up to 1 MiB. The writeback cache is
        // deliberately not asked for: the page cache must never answer for the device.
        // Neither is atomic O_TRUNC: with it the kernel sets its cached size of the file to
        // zero on every open with O_TRUNC, and direct I/O through other descriptors (a loop
        // device's) would then be clipped at that wrong end of file. Without it, O_TRUNC
        // arrives as a SETATTR of the size, which fails like any other resize.
        let wanted =
            f::ASYNC_READ | f::BIG_WRITES | f::ASYNC_DIO | f::PARALLEL_DIROPS | f::MAX_PAGES;
        let mut flags = wanted & init.flags;
        // FUSE_OVER_IO_URING lives in flags2, which counts only with FUSE_INIT_EXT set on
        // both sides. Granting it is a promise to register the ring right after this reply:
        // the kernel holds every new request until each queue has an entry.
        let offered =
            init.flags & f::INIT_EXT != 0 && init.flags2 & abi::init_flag2::OVER_IO_URING != 0;
        let (flags2, grant) = match (&self.ring, offered) {
            (Some(_), true) => {
                flags |= f::INIT_EXT;
                (abi::init_flag2::OVER_IO_URING, RingGrant::Granted)
            }
            (Some(_), false) => (
                0,
                RingGrant::NotUsed(format!(
                    "the kernel did not offer FUSE_OVER_IO_URING in INIT (flags {:#x}, flags2 \
                     {:#x})",
                    init.flags, init.flags2
                )),
            ),
            (None, _) => (0, RingGrant::NotUsed("no ring was prepared".to_string())),
        };
        let out = abi::InitOut {
            minor: abi::KERNEL_MINOR_VERSION,
            max_readahead: init.max_readahead.min(MAX_IO_BYTES),
            flags,
            flags2,
            max_background: MAX_BACKGROUND,
            congestion_threshold: CONGESTION_THRESHOLD,
            max_write: MAX_IO_BYTES,
            max_pages: MAX_PAGES,
        };
        let payload = abi::init_out(&out, init.minor);
        // The kernel releases queued requests the moment it reads this reply, and another
        // reader may pick one up at once, so the session must count as initialised first.
        self.kernel_minor.store(init.minor, Ordering::Release);
        *self.ring_grant.lock().unwrap_or_else(|e| e.into_inner()) = Some(grant);
        route.reply(&[&payload]);
        self.channel.log(&format!(
            "fuse: INIT kernel {}.{}, answered {}.{}, flags {:#x}, flags2 {:#x}, max_write {}",
            init.major,
            init.minor,
            abi::KERNEL_VERSION,
            abi::KERNEL_MINOR_VERSION,
            flags,
            flags2,
            MAX_IO_BYTES
        ));
        self.lock_state().init = InitState::Done;
        self.changed.notify_all();
    }

    fn lookup(&self, node: u64, body: &[u8]) -> Result<Vec<u8>, i32> {
        if node != abi::ROOT_ID {
            return Err(if node == abi::FILE_ID {
                libc::ENOTDIR
            } else {
                libc::ENOENT
            });
        }
        let name = body.split(|&b| b == 0).next().unwrap_or(&[]);
        if name == self.export.file_name.as_bytes() {
            Ok(abi::entry_out(&self.file_attr(), TTL, TTL))
        } else {
            Err(libc::ENOENT)
        }
    }

    fn setattr(&self, node: u64, body: &[u8]) -> Result<Vec<u8>, i32> {
        use abi::fattr as fa;
        let s = abi::SetattrIn::parse(body).ok_or(libc::EINVAL)?;
        let current = self.attr(node).ok_or(libc::ENOENT)?;
        if s.valid & fa::MODE != 0 && s.mode & 0o7777 != current.mode & 0o7777 {
            return Err(libc::EPERM);
        }
        if s.valid & fa::UID != 0 && s.uid != current.uid {
            return Err(libc::EPERM);
        }
        if s.valid & fa::GID != 0 && s.gid != current.gid {
            return Err(libc::EPERM);
        }
        if s.valid & fa::SIZE != 0 {
            if node == abi::ROOT_ID {
                return Err(libc::EISDIR);
            }
            // The file is the device: its size is the device's capacity and cannot change.
            if s.size != self.export.size_bytes {
                return Err(libc::EPERM);
            }
        }
        let time_bits = fa::ATIME | fa::MTIME | fa::ATIME_NOW | fa::MTIME_NOW | fa::CTIME;
        if node == abi::FILE_ID && s.valid & time_bits != 0 {
            if self.export.read_only {
                return Err(libc::EROFS);
            }
            let now = now();
            let mut times = self.file_times.lock().unwrap_or_else(|e| e.into_inner());
            if s.valid & fa::ATIME_NOW != 0 {
                times.atime = now;
            } else if s.valid & fa::ATIME != 0 {
                times.atime = (s.atime, s.atimensec);
            }
            if s.valid & fa::MTIME_NOW != 0 {
                times.mtime = now;
            } else if s.valid & fa::MTIME != 0 {
                times.mtime = (s.mtime, s.mtimensec);
            }
            times.ctime = now;
        }
        let attr = self.attr(node).ok_or(libc::ENOENT)?;
        Ok(abi::attr_out(&attr, TTL))
    }

    fn open(&self, node: u64, body: &[u8]) -> Result<Vec<u8>, i32> {
        let flags = abi::first_u32(body, abi::OPEN_IN_SIZE).ok_or(libc::EINVAL)?;
        match node {
            abi::FILE_ID => {
                let access = flags as i32 & libc::O_ACCMODE;
                if self.export.read_only && access != libc::O_RDONLY {
                    return Err(libc::EROFS);
                }
                // Direct I/O sends every read and write to this file system, so the page cache
                // never answers for the device and every I/O reaches the device model. Parallel
                // direct writes drop the kernel's per-inode write lock: the file never grows,
                // so concurrent writes cannot race on its size.
                Ok(abi::open_out(
                    0,
                    abi::open_flag::DIRECT_IO | abi::open_flag::PARALLEL_DIRECT_WRITES,
                ))
            }
            abi::ROOT_ID => Err(libc::EISDIR),
            _ => Err(libc::ENOENT),
        }
    }

    fn access(&self, node: u64, body: &[u8]) -> Result<Vec<u8>, i32> {
        let mask = abi::first_u32(body, abi::ACCESS_IN_SIZE).ok_or(libc::EINVAL)?;
        match node {
            abi::FILE_ID if self.export.read_only && mask & libc::W_OK as u32 != 0 => {
                Err(libc::EROFS)
            }
            abi::FILE_ID | abi::ROOT_ID => Ok(Vec::new()),
            _ => Err(libc::ENOENT),
        }
    }

    fn readdir(&self, node: u64, body: &[u8]) -> Result<Vec<u8>, i32> {
        match node {
            abi::ROOT_ID => {}
            abi::FILE_ID => return Err(libc::ENOTDIR),
            _ => return Err(libc::ENOENT),
        }
        let r = abi::ReadIn::parse(body).ok_or(libc::EINVAL)?;
        let entries: [(u64, &[u8], u32); 3] = [
            (abi::ROOT_ID, b".", DT_DIR),
            (abi::ROOT_ID, b"..", DT_DIR),
            (abi::FILE_ID, self.export.file_name.as_bytes(), DT_REG),
        ];
        let mut out = Out::default();
        // The offset the kernel passes back is the `off` of the last entry it consumed, which is
        // the index of the next entry to send.
        let start = usize::try_from(r.offset).unwrap_or(usize::MAX);
        for (index, (ino, name, kind)) in entries.iter().enumerate().skip(start) {
            if out.0.len() + abi::dirent_size(name.len()) > r.size as usize {
                break;
            }
            abi::dirent(&mut out, *ino, index as u64 + 1, *kind, name);
        }
        Ok(out.0)
    }

    fn not_the_file(&self, route: Route, node: u64) {
        let errno = if node == abi::ROOT_ID {
            libc::EISDIR
        } else {
            libc::EBADF
        };
        route.reply_error(errno);
    }

    fn submit(
        &self,
        route: Route,
        command: Command,
        offset: u64,
        length: u32,
        data: Vec<u8>,
        kind: Kind,
    ) {
        let reply = Reply::new(route, kind, length);
        self.handler.request(
            Request {
                command,
                offset,
                length,
                data,
            },
            reply,
        );
    }

    fn read(&self, route: Route, node: u64, body: &[u8]) {
        if node != abi::FILE_ID {
            return self.not_the_file(route, node);
        }
        let Some(r) = abi::ReadIn::parse(body) else {
            return route.reply_error(libc::EINVAL);
        };
        let size = self.export.size_bytes;
        if r.offset >= size || r.size == 0 {
            return route.reply(&[]);
        }
        // A read running past the end is clipped to it, as a regular file's would be.
        let length = (r.size as u64).min(size - r.offset) as u32;
        self.submit(
            route,
            Command::Read,
            r.offset,
            length,
            Vec::new(),
            Kind::Read,
        );
    }

    fn write(&self, route: Route, node: u64, body: &[u8], data: Option<Vec<u8>>) {
        if node != abi::FILE_ID {
            return self.not_the_file(route, node);
        }
        let Some(w) = abi::WriteIn::parse(body) else {
            return route.reply_error(libc::EINVAL);
        };
        let payload_len = match &data {
            Some(data) => data.len(),
            None => body.len() - abi::WRITE_IN_SIZE,
        };
        if payload_len != w.size as usize {
            return route.reply_error(libc::EINVAL);
        }
        if self.export.read_only {
            return route.reply_error(libc::EROFS);
        }
        if w.size == 0 {
            return route.reply(&[&abi::write_out(0)]);
        }
        let size = self.export.size_bytes;
        if w.offset >= size {
            return route.reply_error(libc::ENOSPC);
        }
        // A write straddling the end writes what fits and reports a short count, as writing
        // past the end of a block device does; the caller's retry of the rest gets ENOSPC.
        let length = (w.size as u64).min(size - w.offset) as u32;
        let data = match data {
            Some(mut data) => {
                data.truncate(length as usize);
                data
            }
            None => body[abi::WRITE_IN_SIZE..][..length as usize].to_vec(),
        };
        self.submit(route, Command::Write, w.offset, length, data, Kind::Write);
    }

    fn fallocate(&self, route: Route, node: u64, body: &[u8]) {
        use abi::falloc;
        if node != abi::FILE_ID {
            return self.not_the_file(route, node);
        }
        let Some(f) = abi::FallocateIn::parse(body) else {
            return route.reply_error(libc::EINVAL);
        };
        let Some(end) = f.offset.checked_add(f.length) else {
            return route.reply_error(libc::EFBIG);
        };
        if f.length == 0 {
            return route.reply_error(libc::EINVAL);
        }
        if self.export.read_only {
            return route.reply_error(libc::EROFS);
        }
        let size = self.export.size_bytes;
        match f.mode {
            m if m == falloc::PUNCH_HOLE | falloc::KEEP_SIZE => {
                if f.offset >= size {
                    return route.reply(&[]);
                }
                self.trim(route, f.offset, end.min(size));
            }
            // Allocating space in a fixed-size file is a no-op: every byte already exists.
            // Growing it is not possible.
            0 | falloc::KEEP_SIZE => {
                if f.mode & falloc::KEEP_SIZE == 0 && end > size {
                    route.reply_error(libc::ENOSPC);
                } else {
                    route.reply(&[]);
                }
            }
            // EOPNOTSUPP rather than ENOSYS: ENOSYS would make the kernel stop sending
            // FALLOCATE altogether, punch-hole included. ZERO_RANGE lands here, which makes the
            // loop driver and mkfs fall back to writing zeros.
            _ => route.reply_error(libc::EOPNOTSUPP),
        }
    }

    fn trim(&self, route: Route, start: u64, end: u64) {
        let parts = (end - start).div_ceil(TRIM_CHUNK_BYTES);
        if parts == 1 {
            let length = (end - start) as u32;
            return self.submit(route, Command::Trim, start, length, Vec::new(), Kind::Done);
        }
        let joint = Joint::new(route, parts as usize);
        let mut offset = start;
        while offset < end {
            let length = (end - offset).min(TRIM_CHUNK_BYTES) as u32;
            self.handler.request(
                Request {
                    command: Command::Trim,
                    offset,
                    length,
                    data: Vec::new(),
                },
                Reply::part(Arc::clone(&joint)),
            );
            offset += length as u64;
        }
    }
}

/// One reader thread's wait for "a request is ready or the session is stopping".
///
/// Each reader has its own epoll instance. The `/dev/fuse` descriptor is registered with
/// EPOLLEXCLUSIVE so a new request wakes one idle reader rather than all of them; the stop
/// pipe is registered normally so stopping wakes every reader.
pub(crate) struct Poller {
    epoll: OwnedFd,
}

impl Poller {
    pub fn new(fuse_fd: i32, stop_fd: i32) -> io::Result<Poller> {
        // SAFETY: epoll_create1 has no memory arguments.
        let raw = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: epoll_create1 returned a new descriptor that nothing else owns.
        let epoll = unsafe { OwnedFd::from_raw_fd(raw) };
        let add = |fd: i32, events: u32| -> io::Result<()> {
            let mut event = libc::epoll_event {
                events,
                u64: fd as u64,
            };
            // SAFETY: `event` is a valid epoll_event for the duration of the call.
            let rc =
                unsafe { libc::epoll_ctl(epoll.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut event) };
            if rc != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        };
        let exclusive = (libc::EPOLLIN | libc::EPOLLEXCLUSIVE) as u32;
        if let Err(e) = add(fuse_fd, exclusive) {
            // Kernels before 4.5 do not know EPOLLEXCLUSIVE; all readers waking is merely slower.
            if e.raw_os_error() != Some(libc::EINVAL) {
                return Err(e);
            }
            add(fuse_fd, libc::EPOLLIN as u32)?;
        }
        add(stop_fd, libc::EPOLLIN as u32)?;
        Ok(Poller { epoll })
    }

    fn wait(&self) -> io::Result<()> {
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; 2];
        loop {
            // SAFETY: `events` has room for the 2 events passed as the maximum.
            let n = unsafe { libc::epoll_wait(self.epoll.as_raw_fd(), events.as_mut_ptr(), 2, -1) };
            if n >= 0 {
                return Ok(());
            }
            let err = io::Error::last_os_error();
            if err.raw_os_error() != Some(libc::EINTR) {
                return Err(err);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! The dispatcher fed with hand-made messages over a socket pair instead of `/dev/fuse`: a
    //! `SOCK_SEQPACKET` socket keeps each reply one message, as the kernel device does.

    use super::*;
    use crate::abi::init_flag;

    struct Recorder {
        held: Mutex<Vec<(Request, Reply)>>,
    }

    impl Handler for Recorder {
        fn request(&self, request: Request, reply: Reply) {
            self.held.lock().unwrap().push((request, reply));
        }
    }

    struct Rig {
        session: Session,
        peer: OwnedFd,
        recorder: Arc<Recorder>,
    }

    fn rig(size_bytes: u64, read_only: bool) -> Rig {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: `fds` is a valid array of two descriptors for socketpair to fill.
        let rc = unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        };
        assert_eq!(rc, 0);
        // SAFETY: socketpair succeeded; both descriptors are new and unowned.
        let (ours, peer) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let recorder = Arc::new(Recorder {
            held: Mutex::new(Vec::new()),
        });
        let export = FileExport {
            file_name: "disk".to_string(),
            size_bytes,
            read_only,
        };
        let channel = Arc::new(Channel::new(ours, Arc::new(|_| {})));
        let session = Session::new(channel, export, recorder.clone(), None).unwrap();
        Rig {
            session,
            peer,
            recorder,
        }
    }

    fn message(opcode: u32, unique: u64, nodeid: u64, body: &[u8]) -> Vec<u8> {
        let mut out = Out::default();
        out.u32((abi::IN_HEADER_SIZE + body.len()) as u32)
            .u32(opcode)
            .u64(unique)
            .u64(nodeid)
            .zeros(16);
        out.0.extend_from_slice(body);
        out.0
    }

    fn init_body(minor: u32) -> Vec<u8> {
        let mut b = Out::default();
        b.u32(7)
            .u32(minor)
            .u32(128 * 1024)
            .u32(0xFFFF_FFFF)
            .zeros(48);
        b.0
    }

    impl Rig {
        /// The next reply as (error, unique, payload), or None if nothing was sent.
        fn reply(&self) -> Option<(i32, u64, Vec<u8>)> {
            let mut buf = vec![0u8; 1 << 16];
            // SAFETY: `buf` is live and writable for its length.
            let n = unsafe {
                libc::recv(
                    self.peer.as_raw_fd(),
                    buf.as_mut_ptr() as *mut libc::c_void,
                    buf.len(),
                    libc::MSG_DONTWAIT,
                )
            };
            if n < 0 {
                return None;
            }
            let n = n as usize;
            assert!(n >= abi::OUT_HEADER_SIZE, "reply shorter than its header");
            let len = u32::from_ne_bytes(buf[0..4].try_into().unwrap()) as usize;
            assert_eq!(len, n, "out header length differs from the bytes sent");
            let error = i32::from_ne_bytes(buf[4..8].try_into().unwrap());
            let unique = u64::from_ne_bytes(buf[8..16].try_into().unwrap());
            Some((error, unique, buf[16..n].to_vec()))
        }

        fn send(&self, opcode: u32, unique: u64, nodeid: u64, body: &[u8]) {
            self.session
                .dispatch(&message(opcode, unique, nodeid, body));
        }

        fn init(&self) {
            self.send(opcode::INIT, 1, 0, &init_body(45));
            let (error, unique, payload) = self.reply().expect("INIT reply");
            assert_eq!((error, unique, payload.len()), (0, 1, abi::INIT_OUT_SIZE));
        }

        fn take_held(&self) -> Vec<(Request, Reply)> {
            std::mem::take(&mut *self.recorder.held.lock().unwrap())
        }
    }

    fn u32_at(bytes: &[u8], at: usize) -> u32 {
        u32::from_ne_bytes(bytes[at..at + 4].try_into().unwrap())
    }

    #[test]
    fn init_negotiates_only_offered_flags_and_big_requests() {
        let r = rig(1 << 30, false);
        let mut body = Out::default();
        body.u32(7)
            .u32(45)
            .u32(1 << 30)
            .u32(init_flag::ASYNC_READ | init_flag::MAX_PAGES | (1 << 16));
        r.send(opcode::INIT, 5, 0, &body.0);
        let (error, unique, p) = r.reply().unwrap();
        assert_eq!((error, unique), (0, 5));
        assert_eq!(p.len(), abi::INIT_OUT_SIZE);
        assert_eq!(u32_at(&p, 0), 7);
        assert_eq!(u32_at(&p, 4), abi::KERNEL_MINOR_VERSION);
        assert_eq!(u32_at(&p, 8), MAX_IO_BYTES, "readahead capped");
        assert_eq!(
            u32_at(&p, 12),
            init_flag::ASYNC_READ | init_flag::MAX_PAGES,
            "the writeback cache (bit 16) is never taken"
        );
        assert_eq!(u32_at(&p, 20), MAX_IO_BYTES, "max_write");
        assert_eq!(u16::from_ne_bytes([p[28], p[29]]), 256, "max_pages");
    }

    #[test]
    fn old_kernels_get_the_short_init_reply_and_ancient_ones_eproto() {
        let r = rig(1 << 20, false);
        r.send(opcode::INIT, 1, 0, &init_body(22));
        assert_eq!(r.reply().unwrap().2.len(), 24);
        let r = rig(1 << 20, false);
        r.send(opcode::INIT, 1, 0, &init_body(8));
        assert_eq!(r.reply().unwrap().0, -libc::EPROTO);
        assert!(r.session.wait_init(Duration::ZERO).is_err());
        let r = rig(1 << 20, false);
        r.send(opcode::INIT, 1, 0, &[0u8; 12]);
        assert_eq!(r.reply().unwrap().0, -libc::EPROTO);
    }

    #[test]
    fn requests_before_init_and_malformed_requests_fail_cleanly() {
        let r = rig(1 << 20, false);
        r.send(opcode::GETATTR, 2, abi::ROOT_ID, &[0u8; 16]);
        assert_eq!(r.reply().unwrap().0, -libc::EIO);
        r.init();
        // The header claims more bytes than arrived.
        let mut m = message(opcode::GETATTR, 3, abi::ROOT_ID, &[0u8; 16]);
        m[0] = m[0].wrapping_add(8);
        r.session.dispatch(&m);
        assert_eq!(r.reply().unwrap(), (-libc::EINVAL, 3, vec![]));
        r.send(opcode::READ, 4, abi::FILE_ID, &[0u8; 20]);
        assert_eq!(r.reply().unwrap().0, -libc::EINVAL);
        r.send(opcode::SETATTR, 5, abi::FILE_ID, &[0u8; 30]);
        assert_eq!(r.reply().unwrap().0, -libc::EINVAL);
        let mut w = Out::default();
        w.u64(0).u64(0).u32(4096).u32(0).u64(0).u32(0).u32(0);
        w.0.extend_from_slice(&[1u8; 100]);
        r.send(opcode::WRITE, 6, abi::FILE_ID, &w.0);
        assert_eq!(
            r.reply().unwrap().0,
            -libc::EINVAL,
            "payload shorter than size"
        );
        r.send(9999, 7, abi::ROOT_ID, &[]);
        assert_eq!(r.reply().unwrap(), (-libc::ENOSYS, 7, vec![]));
        r.session.dispatch(&[0u8; 10]);
        assert!(r.reply().is_none(), "a headerless scrap cannot be answered");
        r.send(opcode::FORGET, 8, abi::FILE_ID, &[0u8; 8]);
        r.send(opcode::INTERRUPT, 9, 0, &[0u8; 8]);
        assert!(r.reply().is_none(), "FORGET and INTERRUPT get no reply");
        assert!(
            r.take_held().is_empty(),
            "nothing malformed reached the handler"
        );
    }

    #[test]
    fn random_messages_never_panic_and_every_reply_is_well_formed() {
        let r = rig(1 << 20, false);
        r.init();
        let mut x: u64 = 0x1234_5678_9ABC_DEF1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for i in 0..20_000u64 {
            let op = (next() % 60) as u32;
            let node = next() % 4;
            let len = (next() % 200) as usize;
            let body: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            let mut m = message(op, 100 + i, node, &body);
            if next() % 16 == 0 {
                let cut = (next() as usize) % m.len();
                m.truncate(cut);
            }
            r.session.dispatch(&m);
            while let Some((error, _, payload)) = r.reply() {
                assert!(error <= 0 && error > -512, "errno {error}");
                assert!(error == 0 || payload.is_empty());
            }
            for (request, reply) in r.take_held() {
                let end = request.offset + request.length as u64;
                assert!(end <= 1 << 20, "{request:?} is outside the device");
                drop(reply);
                while r.reply().is_some() {}
            }
        }
    }

    #[test]
    fn reads_and_writes_are_clipped_before_the_handler() {
        let size = 10_000u64;
        let r = rig(size, false);
        r.init();
        let read = |offset: u64, len: u32| {
            let mut b = Out::default();
            b.u64(0).u64(offset).u32(len).u32(0).u64(0).u32(0).u32(0);
            b.0
        };
        r.send(opcode::READ, 10, abi::FILE_ID, &read(size, 4096));
        assert_eq!(
            r.reply().unwrap(),
            (0, 10, vec![]),
            "read at the end: 0 bytes"
        );
        r.send(opcode::READ, 11, abi::FILE_ID, &read(8192, 4096));
        let held = r.take_held();
        assert_eq!(held.len(), 1);
        assert_eq!((held[0].0.offset, held[0].0.length), (8192, 1808));
        let (_, reply) = held.into_iter().next().unwrap();
        reply.data(&[7u8; 4096]);
        let (error, unique, payload) = r.reply().unwrap();
        assert_eq!(
            (error, unique, payload.len()),
            (0, 11, 1808),
            "extra bytes cut"
        );

        let write = |offset: u64, len: usize| {
            let mut b = Out::default();
            b.u64(0)
                .u64(offset)
                .u32(len as u32)
                .u32(0)
                .u64(0)
                .u32(0)
                .u32(0);
            b.0.extend_from_slice(&vec![9u8; len]);
            b.0
        };
        r.send(opcode::WRITE, 12, abi::FILE_ID, &write(size, 10));
        assert_eq!(r.reply().unwrap().0, -libc::ENOSPC);
        r.send(opcode::WRITE, 13, abi::FILE_ID, &write(size - 4, 10));
        let (request, reply) = r.take_held().pop().unwrap();
        assert_eq!(
            (request.offset, request.length, request.data.len()),
            (size - 4, 4, 4)
        );
        reply.ok();
        let (error, unique, payload) = r.reply().unwrap();
        assert_eq!((error, unique, u32_at(&payload, 0)), (0, 13, 4));
    }

    #[test]
    fn replies_may_go_back_in_any_order() {
        let r = rig(1 << 20, false);
        r.init();
        for unique in 20..24u64 {
            let mut b = Out::default();
            b.u64(0)
                .u64(unique * 4096)
                .u32(4096)
                .u32(0)
                .u64(0)
                .u32(0)
                .u32(0);
            r.send(opcode::READ, unique, abi::FILE_ID, &b.0);
        }
        let held = r.take_held();
        assert_eq!(held.len(), 4);
        let mut order = Vec::new();
        for (request, reply) in held.into_iter().rev() {
            std::thread::spawn(move || reply.data(&vec![0u8; request.length as usize]))
                .join()
                .unwrap();
            order.push(r.reply().unwrap().1);
        }
        assert_eq!(order, vec![23, 22, 21, 20]);
    }

    #[test]
    fn a_huge_punch_is_split_and_answered_once_all_parts_are() {
        let size = 16u64 << 30;
        let r = rig(size, false);
        r.init();
        let mut b = Out::default();
        b.u64(0)
            .u64(4096)
            .u64(10 << 30)
            .u32(abi::falloc::PUNCH_HOLE | abi::falloc::KEEP_SIZE)
            .u32(0);
        r.send(opcode::FALLOCATE, 30, abi::FILE_ID, &b.0);
        let held = r.take_held();
        assert_eq!(held.len(), 3);
        let total: u64 = held.iter().map(|(q, _)| q.length as u64).sum();
        assert_eq!(total, 10 << 30);
        assert!(held.iter().all(|(q, _)| q.command == Command::Trim));
        let mut parts = held.into_iter();
        parts.next().unwrap().1.ok();
        parts.next().unwrap().1.error(libc::EIO);
        assert!(r.reply().is_none(), "answered before the last part");
        drop(parts);
        assert_eq!(r.reply().unwrap(), (-libc::EIO, 30, vec![]));

        b = Out::default();
        b.u64(0).u64(0).u64(4096).u32(0x10).u32(0);
        r.send(opcode::FALLOCATE, 31, abi::FILE_ID, &b.0);
        assert_eq!(r.reply().unwrap().0, -libc::EOPNOTSUPP, "zero range");
    }

    #[test]
    fn a_read_only_export_refuses_every_write_path() {
        let r = rig(1 << 20, true);
        r.init();
        let mut open = Out::default();
        open.u32(libc::O_RDWR as u32).u32(0);
        r.send(opcode::OPEN, 40, abi::FILE_ID, &open.0);
        assert_eq!(r.reply().unwrap().0, -libc::EROFS);
        let mut open = Out::default();
        open.u32(libc::O_RDONLY as u32).u32(0);
        r.send(opcode::OPEN, 41, abi::FILE_ID, &open.0);
        let (error, _, payload) = r.reply().unwrap();
        assert_eq!(error, 0);
        assert_eq!(u32_at(&payload, 8) & abi::open_flag::DIRECT_IO, 1);
        let mut w = Out::default();
        w.u64(0).u64(0).u32(1).u32(0).u64(0).u32(0).u32(0);
        w.0.push(1);
        r.send(opcode::WRITE, 42, abi::FILE_ID, &w.0);
        assert_eq!(r.reply().unwrap().0, -libc::EROFS);
        let mut access = Out::default();
        access.u32(libc::W_OK as u32).u32(0);
        r.send(opcode::ACCESS, 43, abi::FILE_ID, &access.0);
        assert_eq!(r.reply().unwrap().0, -libc::EROFS);
        assert!(r.take_held().is_empty());
    }

    /// A ring beside the socket-pair rig. Its commands go to /dev/null, which has no ring
    /// commands and fails each with EOPNOTSUPP: a reply left in an entry stays there to be
    /// read, and each commit shows up as one completion for its entry.
    struct RingRig {
        rig: Rig,
        ring: Arc<FuseRing>,
    }

    const RING_PAYLOAD: usize = 64 * 1024;

    fn ring_rig(entries: u32) -> Option<RingRig> {
        let rig = rig(1 << 20, false);
        rig.init();
        let null = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/null")
            .unwrap();
        let channel = Arc::new(Channel::new(OwnedFd::from(null), Arc::new(|_| {})));
        match FuseRing::new(channel, 1, entries, RING_PAYLOAD) {
            Ok(ring) => Some(RingRig { rig, ring }),
            Err(e) => {
                eprintln!("SKIP: io_uring_setup failed ({e}); the ring dispatch is not tested");
                None
            }
        }
    }

    /// A ring request's parts: the header's `len` field (None: the consistent value), opcode,
    /// node, the opcode's header and the payload.
    struct RingMsg<'a> {
        len: Option<u32>,
        opcode: u32,
        nodeid: u64,
        op: &'a [u8],
        payload: &'a [u8],
    }

    impl RingRig {
        /// Puts `msg` into entry `index` as request `unique` and dispatches it. Returns the
        /// reply if the request was answered at once, after checking its commit was
        /// submitted exactly once.
        fn send(&self, index: u64, unique: u64, msg: RingMsg<'_>) -> Option<(i32, u64, Vec<u8>)> {
            let len = msg
                .len
                .unwrap_or((abi::IN_HEADER_SIZE + msg.op.len() + msg.payload.len()) as u32);
            let mut header = message(msg.opcode, unique, msg.nodeid, &[]);
            header[0..4].copy_from_slice(&len.to_ne_bytes());
            let entry = self
                .ring
                .fake_request(index, &header, msg.op, msg.payload, unique, None);
            self.rig.session.dispatch_ring(&self.ring, entry);
            self.reply(index)
        }

        /// The reply committed for entry `index`, if one was.
        fn reply(&self, index: u64) -> Option<(i32, u64, Vec<u8>)> {
            let done = self.ring.completions();
            if done.is_empty() {
                return None;
            }
            assert_eq!(done.len(), 1, "one commit per request: {done:?}");
            assert_eq!(done[0].user_data, index, "the commit names its entry");
            let (out, payload) = self.ring.reply_in(index as u32);
            let len = u32::from_ne_bytes(out[0..4].try_into().unwrap()) as usize;
            assert_eq!(
                len,
                abi::OUT_HEADER_SIZE + payload.len(),
                "out header length"
            );
            let error = i32::from_ne_bytes(out[4..8].try_into().unwrap());
            let unique = u64::from_ne_bytes(out[8..16].try_into().unwrap());
            Some((error, unique, payload))
        }
    }

    fn read_in(offset: u64, size: u32) -> Vec<u8> {
        let mut b = Out::default();
        b.u64(0).u64(offset).u32(size).u32(0).u64(0).u32(0).u32(0);
        b.0
    }

    fn write_in(offset: u64, size: u32) -> Vec<u8> {
        read_in(offset, size)
    }

    fn msg<'a>(opcode: u32, nodeid: u64, op: &'a [u8], payload: &'a [u8]) -> RingMsg<'a> {
        RingMsg {
            len: None,
            opcode,
            nodeid,
            op,
            payload,
        }
    }

    #[test]
    fn ring_requests_are_answered_in_their_entry() {
        let Some(r) = ring_rig(4) else { return };
        let (error, unique, payload) = r
            .send(0, 70, msg(opcode::GETATTR, abi::ROOT_ID, &[0u8; 16], &[]))
            .expect("GETATTR is answered at once");
        assert_eq!((error, unique, payload.len()), (0, 70, abi::ATTR_OUT_SIZE));
        // LOOKUP's name travels in the payload behind an empty opcode header.
        let (error, _, payload) = r
            .send(1, 71, msg(opcode::LOOKUP, abi::ROOT_ID, &[], b"disk\0"))
            .unwrap();
        assert_eq!((error, payload.len()), (0, abi::ENTRY_OUT_SIZE));
        assert_eq!(
            r.send(2, 72, msg(opcode::LOOKUP, abi::ROOT_ID, &[], b"nope\0"))
                .unwrap()
                .0,
            -libc::ENOENT
        );
        assert!(r.rig.reply().is_none(), "nothing went to /dev/fuse");
    }

    #[test]
    fn ring_reads_and_writes_reach_the_handler_and_commit_their_replies() {
        let Some(r) = ring_rig(4) else { return };
        assert!(r
            .send(
                0,
                80,
                msg(opcode::READ, abi::FILE_ID, &read_in(8192, 4096), &[])
            )
            .is_none());
        let data = vec![0x5Au8; 4096];
        assert!(r
            .send(
                1,
                81,
                msg(opcode::WRITE, abi::FILE_ID, &write_in(0, 4096), &data)
            )
            .is_none());
        let mut held = r.rig.take_held();
        assert_eq!(held.len(), 2);
        let (write, write_reply) = held.pop().unwrap();
        let (read, read_reply) = held.pop().unwrap();
        assert_eq!(
            (read.command, read.offset, read.length),
            (Command::Read, 8192, 4096)
        );
        assert_eq!(
            (write.command, write.offset, write.length),
            (Command::Write, 0, 4096)
        );
        assert_eq!(write.data, data, "the payload reaches the handler");
        assert!(
            r.ring.completions().is_empty(),
            "nothing committed before the replies"
        );

        // Batched replies leave with one submission, answered out of order.
        let mut batch = crate::ReplyBatch::new();
        assert_eq!(batch.ok(write_reply), Some(0));
        assert_eq!(
            batch.data(read_reply, &[7u8; 5000]),
            Some(0),
            "one ring, one write"
        );
        assert!(r.ring.completions().is_empty(), "a batch waits for send");
        let mut writes = Vec::new();
        batch.send(|w| writes.push(w));
        assert_eq!(writes, vec![0]);
        let mut done: Vec<u64> = r.ring.completions().iter().map(|c| c.user_data).collect();
        done.sort();
        assert_eq!(done, vec![0, 1], "both entries committed");
        let (out, payload) = r.ring.reply_in(0);
        assert_eq!(u64::from_ne_bytes(out[8..16].try_into().unwrap()), 80);
        assert_eq!(
            payload,
            vec![7u8; 4096],
            "a read reply is cut to the length asked"
        );
        let (out, payload) = r.ring.reply_in(1);
        assert_eq!(u64::from_ne_bytes(out[8..16].try_into().unwrap()), 81);
        assert_eq!(u32_at(&payload, 0), 4096, "fuse_write_out.size");
    }

    #[test]
    fn hostile_ring_requests_are_refused_and_never_lose_their_entry() {
        let Some(r) = ring_rig(2) else { return };
        let init = init_body(45);
        let (w64, w100, read) = (write_in(0, 64), write_in(0, 100), read_in(0, 4096));
        let cases: Vec<(&str, RingMsg<'_>, i32)> = vec![
            (
                "an unknown opcode",
                msg(9999, abi::ROOT_ID, &[], &[]),
                -libc::ENOSYS,
            ),
            (
                "FORGET",
                msg(opcode::FORGET, abi::FILE_ID, &[0u8; 8], &[]),
                -libc::ENOSYS,
            ),
            (
                "INTERRUPT",
                msg(opcode::INTERRUPT, 0, &[0u8; 8], &[]),
                -libc::ENOSYS,
            ),
            (
                "BATCH_FORGET",
                msg(opcode::BATCH_FORGET, 0, &[0u8; 8], &[]),
                -libc::ENOSYS,
            ),
            (
                "a second INIT",
                msg(opcode::INIT, 0, &init, &[]),
                -libc::EIO,
            ),
            (
                "a length shorter than header and payload",
                RingMsg {
                    len: Some(abi::IN_HEADER_SIZE as u32 + 10),
                    ..msg(opcode::WRITE, abi::FILE_ID, &w64, &[1u8; 64])
                },
                -libc::EINVAL,
            ),
            (
                "an opcode header longer than the ring's 128 bytes",
                RingMsg {
                    len: Some(abi::IN_HEADER_SIZE as u32 + 200 + 64),
                    ..msg(opcode::WRITE, abi::FILE_ID, &w64, &[1u8; 64])
                },
                -libc::EINVAL,
            ),
            (
                "a write whose payload differs from its size",
                msg(opcode::WRITE, abi::FILE_ID, &w100, &[1u8; 64]),
                -libc::EINVAL,
            ),
            (
                "a truncated read header",
                msg(opcode::READ, abi::FILE_ID, &read[..20], &[]),
                -libc::EINVAL,
            ),
        ];
        for (i, (what, m, expected)) in cases.into_iter().enumerate() {
            let unique = 100 + i as u64;
            let (error, got_unique, payload) = r
                .send(i as u64 % 2, unique, m)
                .unwrap_or_else(|| panic!("{what}: not answered"));
            assert_eq!((error, got_unique), (expected, unique), "{what}");
            assert!(payload.is_empty(), "{what}: an error carries no payload");
        }
        // A payload size beyond the entry's buffer.
        let mut header = message(opcode::WRITE, 200, abi::FILE_ID, &[]);
        let len = (abi::IN_HEADER_SIZE + 40 + RING_PAYLOAD + 1) as u32;
        header[0..4].copy_from_slice(&len.to_ne_bytes());
        let entry = r.ring.fake_request(
            0,
            &header,
            &write_in(0, RING_PAYLOAD as u32 + 1),
            &[],
            200,
            Some(RING_PAYLOAD as u32 + 1),
        );
        r.rig.session.dispatch_ring(&r.ring, entry);
        assert_eq!(r.reply(0).unwrap().0, -libc::EINVAL, "oversized payload");
        assert!(
            r.rig.take_held().is_empty(),
            "nothing hostile reached the handler"
        );
    }

    #[test]
    fn random_ring_requests_never_panic_and_each_entry_is_committed_once() {
        let Some(r) = ring_rig(8) else { return };
        let mut x: u64 = 0x0DDB_1A5E_5BAD_5EED;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for i in 0..5_000u64 {
            let index = i % 8;
            let opcode = (next() % 60) as u32;
            let node = next() % 4;
            let op: Vec<u8> = (0..(next() % 129) as usize).map(|_| next() as u8).collect();
            let payload: Vec<u8> = (0..(next() % 300) as usize).map(|_| next() as u8).collect();
            let len = match next() % 8 {
                0 => Some(next() as u32),
                1 => Some((abi::IN_HEADER_SIZE + op.len()) as u32),
                _ => None,
            };
            let m = RingMsg {
                len,
                opcode,
                nodeid: node,
                op: &op,
                payload: &payload,
            };
            let answered = r.send(index, 1000 + i, m);
            if let Some((error, unique, payload)) = &answered {
                let (error, unique) = (*error, *unique);
                assert!(error <= 0 && error > -512, "errno {error}");
                assert!(error == 0 || payload.is_empty());
                assert_eq!(unique, 1000 + i);
            }
            for (request, reply) in r.rig.take_held() {
                assert!(answered.is_none(), "answered and held at once");
                let end = request.offset + request.length as u64;
                assert!(end <= 1 << 20, "{request:?} is outside the device");
                drop(reply);
                let (error, _, _) = r.reply(index).expect("a dropped reply commits EIO");
                assert_eq!(error, -libc::EIO);
            }
        }
        assert!(r.rig.reply().is_none(), "nothing went to /dev/fuse");
    }

    #[test]
    fn init_grants_io_uring_only_when_a_ring_exists_and_the_kernel_offers_it() {
        let offer = |flags: u32, flags2: u32| {
            let mut b = Out::default();
            b.u32(7)
                .u32(45)
                .u32(1 << 20)
                .u32(flags)
                .u32(flags2)
                .zeros(44);
            b.0
        };
        let ext = init_flag::INIT_EXT;
        let io_uring = abi::init_flag2::OVER_IO_URING;
        // No ring prepared: never granted, whatever the kernel offers.
        let r = rig(1 << 20, false);
        r.send(opcode::INIT, 1, 0, &offer(ext, io_uring));
        let (_, _, p) = r.reply().unwrap();
        assert_eq!(u32_at(&p, 12) & ext, 0);
        assert_eq!(u32_at(&p, 32), 0, "flags2");
        assert!(matches!(
            r.session.ring_grant(),
            Some(RingGrant::NotUsed(_))
        ));

        let Some(rr) = ring_rig(1) else { return };
        let null = rr.ring;
        for (flags, flags2, granted) in
            [(ext, io_uring, true), (ext, 0, false), (0, io_uring, false)]
        {
            let r = rig(1 << 20, false);
            let session = Session::new(
                Arc::clone(r.session.channel()),
                r.session.export.clone(),
                r.recorder.clone(),
                Some(Arc::clone(&null)),
            )
            .unwrap();
            session.dispatch(&message(opcode::INIT, 1, 0, &offer(flags, flags2)));
            let (error, _, p) = r.reply().unwrap();
            assert_eq!(error, 0);
            assert_eq!(
                u32_at(&p, 12) & ext != 0,
                granted,
                "INIT_EXT for {flags:#x}/{flags2:#x}"
            );
            assert_eq!(u32_at(&p, 32), if granted { io_uring } else { 0 }, "flags2");
            assert_eq!(session.ring_grant() == Some(RingGrant::Granted), granted);
        }
    }
}
