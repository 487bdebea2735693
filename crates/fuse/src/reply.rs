//! The answer to one handler request, sendable from any thread at any later time.

use std::fmt;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::Arc;

use crate::abi;
use crate::channel::Channel;

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

/// Where the answer goes: straight to the kernel, or into a request the file system split into
/// several handler requests (a trim longer than `u32::MAX` bytes), which is answered once all
/// parts are.
enum Target {
    Whole { channel: Arc<Channel>, unique: u64 },
    Part(Arc<Joint>),
}

/// One kernel request answered by several handler requests: the first error wins, and the
/// kernel hears back when the last part finishes.
pub(crate) struct Joint {
    channel: Arc<Channel>,
    unique: u64,
    remaining: AtomicUsize,
    errno: AtomicI32,
}

impl Joint {
    pub fn new(channel: Arc<Channel>, unique: u64, parts: usize) -> Arc<Joint> {
        Arc::new(Joint {
            channel,
            unique,
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
            match self.errno.load(Ordering::Acquire) {
                0 => self.channel.reply(self.unique, &[]),
                e => self.channel.reply_error(self.unique, e),
            }
        }
    }
}

/// The answer to one [`Request`](crate::Request).
///
/// Consume it with exactly one of [`data`](Reply::data), [`written`](Reply::written),
/// [`ok`](Reply::ok) or [`error`](Reply::error), from any thread, at any time. Dropping it
/// unanswered sends EIO, so the process waiting in the kernel never hangs.
pub struct Reply {
    target: Option<Target>,
    kind: Kind,
    limit: u32,
}

impl Reply {
    pub(crate) fn new(channel: Arc<Channel>, unique: u64, kind: Kind, limit: u32) -> Reply {
        Reply {
            target: Some(Target::Whole { channel, unique }),
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
    pub fn data(mut self, bytes: &[u8]) {
        if self.kind != Kind::Read {
            return self.mismatch("data");
        }
        let n = bytes.len().min(self.limit as usize);
        self.send(&bytes[..n]);
    }

    /// Answers a write with the number of bytes written (clipped to the requested length).
    pub fn written(mut self, n: u32) {
        if self.kind != Kind::Write {
            return self.mismatch("written");
        }
        let payload = abi::write_out(n.min(self.limit));
        self.send(&payload);
    }

    /// Answers an fsync or trim with success; a write answered with `ok` wrote every byte.
    pub fn ok(mut self) {
        match self.kind {
            Kind::Done => self.send(&[]),
            Kind::Write => {
                let payload = abi::write_out(self.limit);
                self.send(&payload);
            }
            Kind::Read => self.mismatch("ok"),
        }
    }

    /// Answers with an error; `errno` is positive (`libc::EIO`). Values the kernel would refuse
    /// (zero, negative, 512 and above) are sent as EIO.
    pub fn error(mut self, errno: i32) {
        if let Some(target) = self.target.take() {
            match target {
                Target::Whole { channel, unique } => channel.reply_error(unique, errno),
                Target::Part(joint) => joint.finish(if errno > 0 { errno } else { libc::EIO }),
            }
        }
    }

    fn send(&mut self, payload: &[u8]) {
        if let Some(target) = self.target.take() {
            match target {
                Target::Whole { channel, unique } => channel.reply(unique, &[payload]),
                Target::Part(joint) => joint.finish(0),
            }
        }
    }

    /// A reply method that does not fit the request (`data` for a write, say) would make the
    /// kernel misread the payload, so the request fails with EIO and the mistake is logged.
    fn mismatch(mut self, method: &str) {
        if let Some(target) = self.target.take() {
            match target {
                Target::Whole { channel, unique } => {
                    channel.log(&format!(
                        "fuse: handler answered a {:?} request with Reply::{method}; sent EIO",
                        self.kind
                    ));
                    channel.reply_error(unique, libc::EIO);
                }
                Target::Part(joint) => joint.finish(libc::EIO),
            }
        }
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        if let Some(target) = self.target.take() {
            match target {
                Target::Whole { channel, unique } => {
                    channel.log(&format!(
                        "fuse: a {:?} reply was dropped unanswered; sent EIO",
                        self.kind
                    ));
                    channel.reply_error(unique, libc::EIO);
                }
                Target::Part(joint) => joint.finish(libc::EIO),
            }
        }
    }
}

impl fmt::Debug for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unique = match &self.target {
            Some(Target::Whole { unique, .. }) => Some(*unique),
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
