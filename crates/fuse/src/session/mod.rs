//! One FUSE session: the reader threads' loop and the answer to every request the kernel sends,
//! whether it came through `/dev/fuse` or through a ring entry. This file holds the session's
//! state, the reader loop and the two ways a request arrives; the answers are apart:
//! `init.rs` (the INIT handshake), `ops.rs` (the opcode table and the opcodes answered
//! inline) and `data.rs` (the opcodes that reach the handler: reads, writes, fsync, trims).

mod data;
mod init;
mod ops;
#[cfg(test)]
mod tests;

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::abi::{self, opcode};
use crate::channel::Channel;
use crate::reply::Route;
use crate::uring::{Entry, FuseRing, RingReply, OP_IN_BYTES};
use crate::{FileExport, Handler};

/// The largest WRITE payload negotiated, and the `max_read` mount option. 1 MiB is the most
/// the kernel sends in one request (256 pages, FUSE_MAX_MAX_PAGES).
pub(crate) const MAX_IO_BYTES: u32 = 1 << 20;
/// A read buffer must hold the largest request: a WRITE of `MAX_IO_BYTES` behind its 80 bytes
/// of headers. The kernel refuses reads into anything smaller.
const BUFFER_BYTES: usize = MAX_IO_BYTES as usize + 4096;
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
