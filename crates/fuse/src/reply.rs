//! The answer to one handler request, sendable from any thread at any later time, and the
//! batch that sends several answers with one system call.

use std::fmt;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::abi;
use crate::channel::Channel;
use crate::uring::{RingBatch, RingReply};

/// What the kernel expects back, which decides the payload of a successful reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// READ: the data itself, at most `limit` bytes.
    Read,
    /// WRITE: `struct fuse_write_out` with the number of bytes written, at most `limit`.
    Write,
    /// FSYNC and FALLOCATE: no payload.
    Done,
}

/// Where the answer to one kernel request goes: a write to `/dev/fuse`, or a commit of the
/// ring entry the request arrived in.
pub(crate) enum Route {
    Dev { channel: Arc<Channel>, unique: u64 },
    Ring(RingReply),
}

impl Route {
    pub fn unique(&self) -> u64 {
        match self {
            Route::Dev { unique, .. } => *unique,
            Route::Ring(r) => r.unique(),
        }
    }

    pub fn is_ring(&self) -> bool {
        matches!(self, Route::Ring(_))
    }

    pub fn log(&self, message: &str) {
        match self {
            Route::Dev { channel, .. } => channel.log(message),
            Route::Ring(r) => r.log(message),
        }
    }

    /// Sends a successful reply whose payload is the concatenation of `parts`.
    pub fn reply(self, parts: &[&[u8]]) {
        self.answer(0, parts, None);
    }

    /// Sends an error reply; `errno` is positive (`libc::EIO`, ...).
    pub fn reply_error(self, errno: i32) {
        self.answer(errno, &[], None);
    }

    /// Sends the reply (`errno` 0: success with `parts`), through `batch` when given and the
    /// route can wait for it. Returns the batch submission that will carry it, or `None` when
    /// it has been sent already.
    fn answer(self, errno: i32, parts: &[&[u8]], batch: Option<&mut RingBatch>) -> Option<usize> {
        match self {
            Route::Dev { channel, unique } => {
                if errno == 0 {
                    channel.reply(unique, parts);
                } else {
                    channel.reply_error(unique, errno);
                }
                None
            }
            Route::Ring(r) => match batch {
                Some(batch) => r.batch(errno, parts, batch),
                None => {
                    r.send(errno, parts);
                    None
                }
            },
        }
    }
}

/// Where a [`Reply`] goes: straight back for its request, or into a request the file system
/// split into several handler requests (a trim longer than `u32::MAX` bytes), which is
/// answered once all parts are.
enum Target {
    Whole(Route),
    Part(Arc<Joint>),
}

/// One kernel request answered by several handler requests: the first error wins, and the
/// kernel hears back when the last part finishes.
pub(crate) struct Joint {
    route: Mutex<Option<Route>>,
    unique: u64,
    remaining: AtomicUsize,
    errno: AtomicI32,
}

impl Joint {
    pub fn new(route: Route, parts: usize) -> Arc<Joint> {
        Arc::new(Joint {
            unique: route.unique(),
            route: Mutex::new(Some(route)),
            remaining: AtomicUsize::new(parts),
            errno: AtomicI32::new(0),
        })
    }

    fn finish(&self, errno: i32) {
        if errno != 0 {
            let _ = self
                .errno
                .compare_exchange(0, errno, Ordering::AcqRel, Ordering::Acquire);
        }
        if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            let route = self.route.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(route) = route {
                match self.errno.load(Ordering::Acquire) {
                    0 => route.reply(&[]),
                    e => route.reply_error(e),
                }
            }
        }
    }
}

/// The answer to one [`Request`](crate::Request).
///
/// Consume it with exactly one of [`data`](Reply::data), [`written`](Reply::written),
/// [`ok`](Reply::ok) or [`error`](Reply::error), from any thread, at any time, or add it to a
/// [`ReplyBatch`]. Dropping it unanswered sends EIO, so the process waiting in the kernel
/// never hangs.
pub struct Reply {
    target: Option<Target>,
    kind: Kind,
    limit: u32,
}

/// What a reply says: success with a payload, or an errno.
enum Answer<'a> {
    Payload(&'a [u8]),
    Error(i32),
}

impl Reply {
    pub(crate) fn new(route: Route, kind: Kind, limit: u32) -> Reply {
        Reply {
            target: Some(Target::Whole(route)),
            kind,
            limit,
        }
    }

    pub(crate) fn part(joint: Arc<Joint>) -> Reply {
        Reply {
            target: Some(Target::Part(joint)),
            kind: Kind::Done,
            limit: 0,
        }
    }

    /// Answers a read with its data. At most the requested length is sent; fewer bytes make a
    /// short read.
    pub fn data(self, bytes: &[u8]) {
        self.data_via(bytes, None);
    }

    /// Answers a write with the number of bytes written (clipped to the requested length).
    pub fn written(self, n: u32) {
        self.written_via(n, None);
    }

    /// Answers an fsync or trim with success; a write answered with `ok` wrote every byte.
    pub fn ok(self) {
        self.ok_via(None);
    }

    /// Answers with an error; `errno` is positive (`libc::EIO`). Values the kernel would refuse
    /// (zero, negative, 512 and above) are sent as EIO.
    pub fn error(self, errno: i32) {
        self.error_via(errno, None);
    }

    fn data_via(self, bytes: &[u8], batch: Option<&mut RingBatch>) -> Option<usize> {
        if self.kind != Kind::Read {
            return self.mismatch("data", batch);
        }
        let n = bytes.len().min(self.limit as usize);
        self.answer(Answer::Payload(&bytes[..n]), batch)
    }

    fn written_via(self, n: u32, batch: Option<&mut RingBatch>) -> Option<usize> {
        if self.kind != Kind::Write {
            return self.mismatch("written", batch);
        }
        let payload = abi::write_out(n.min(self.limit));
        self.answer(Answer::Payload(&payload), batch)
    }

    fn ok_via(self, batch: Option<&mut RingBatch>) -> Option<usize> {
        match self.kind {
            Kind::Done => self.answer(Answer::Payload(&[]), batch),
            Kind::Write => {
                let payload = abi::write_out(self.limit);
                self.answer(Answer::Payload(&payload), batch)
            }
            Kind::Read => self.mismatch("ok", batch),
        }
    }

    fn error_via(self, errno: i32, batch: Option<&mut RingBatch>) -> Option<usize> {
        // Zero would read as success; the route turns other out-of-range values into EIO.
        let errno = if errno == 0 { libc::EIO } else { errno };
        self.answer(Answer::Error(errno), batch)
    }

    fn answer(mut self, answer: Answer<'_>, batch: Option<&mut RingBatch>) -> Option<usize> {
        match self.target.take()? {
            Target::Whole(route) => match answer {
                Answer::Payload(p) => route.answer(0, &[p], batch),
                Answer::Error(e) => route.answer(e, &[], batch),
            },
            Target::Part(joint) => {
                joint.finish(match answer {
                    Answer::Payload(_) => 0,
                    Answer::Error(e) if e > 0 => e,
                    Answer::Error(_) => libc::EIO,
                });
                None
            }
        }
    }

    /// A reply method that does not fit the request (`data` for a write, say) would make the
    /// kernel misread the payload, so the request fails with EIO and the mistake is logged.
    fn mismatch(self, method: &str, batch: Option<&mut RingBatch>) -> Option<usize> {
        if let Some(Target::Whole(route)) = &self.target {
            route.log(&format!(
                "fuse: handler answered a {:?} request with Reply::{method}; sent EIO",
                self.kind
            ));
        }
        self.answer(Answer::Error(libc::EIO), batch)
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        if let Some(target) = self.target.take() {
            match target {
                Target::Whole(route) => {
                    route.log(&format!(
                        "fuse: a {:?} reply was dropped unanswered; sent EIO",
                        self.kind
                    ));
                    route.reply_error(libc::EIO);
                }
                Target::Part(joint) => joint.finish(libc::EIO),
            }
        }
    }
}

impl fmt::Debug for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unique = match &self.target {
            Some(Target::Whole(route)) => Some(route.unique()),
            Some(Target::Part(joint)) => Some(joint.unique),
            None => None,
        };
        f.debug_struct("Reply")
            .field("kind", &self.kind)
            .field("limit", &self.limit)
            .field("unique", &unique)
            .finish()
    }
}

/// Replies gathered to leave together: with the io_uring transport, all replies of one mount
/// added before [`send`](ReplyBatch::send) are committed with one `io_uring_enter`. Replies
/// that came through `/dev/fuse` cannot wait for company (each is one `writev` anyway) and
/// are sent as they are added.
///
/// The thread that calls `send` submits the ring commands, and the kernel then delivers the
/// next requests of those ring entries through that thread (see `docs/fuse.md`): send batches
/// from a thread that lives as long as the mount, such as the emulator's pacing thread.
#[derive(Default)]
pub struct ReplyBatch {
    ring: RingBatch,
}

impl ReplyBatch {
    pub fn new() -> ReplyBatch {
        ReplyBatch::default()
    }

    /// Whether nothing waits to be sent.
    pub fn is_empty(&self) -> bool {
        self.ring.is_empty()
    }

    /// Adds the answer to a read, as [`Reply::data`] does. Returns the index of the
    /// submission that will carry it (see [`send`](ReplyBatch::send)), or `None` when the
    /// reply has already been sent.
    pub fn data(&mut self, reply: Reply, bytes: &[u8]) -> Option<usize> {
        reply.data_via(bytes, Some(&mut self.ring))
    }

    /// Adds the answer to a write, as [`Reply::written`] does.
    pub fn written(&mut self, reply: Reply, n: u32) -> Option<usize> {
        reply.written_via(n, Some(&mut self.ring))
    }

    /// Adds a success, as [`Reply::ok`] does.
    pub fn ok(&mut self, reply: Reply) -> Option<usize> {
        reply.ok_via(Some(&mut self.ring))
    }

    /// Adds an error, as [`Reply::error`] does.
    pub fn error(&mut self, reply: Reply, errno: i32) -> Option<usize> {
        reply.error_via(errno, Some(&mut self.ring))
    }

    /// Sends everything added since the last send: one `io_uring_enter` per mount, in the
    /// order the mounts were first added. `before_write` is called with each submission's
    /// index just before it, so a caller can note when each reply left.
    pub fn send(&mut self, before_write: impl FnMut(usize)) {
        self.ring.send(before_write);
    }
}

impl fmt::Debug for ReplyBatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReplyBatch")
            .field("writes", &self.ring.writes())
            .field("replies", &self.ring.replies())
            .finish()
    }
}
