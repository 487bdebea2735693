//! The emulator's front ends: the NBD server's and the FUSE file's handlers turn protocol
//! requests into [`HostIo`]s and outcomes back into protocol replies, and each front end's
//! batches and polled sources take part in the pacing thread's rounds through
//! [`FrontendBatch`] and [`Poller`]. They live apart from `storsim-emulate`, which names no
//! front end, so that a program that only simulates (the Python package) links no server. A
//! new front end (ublk, vhost-user-blk) is a handler, a responder and, if it has them, a batch
//! and a poller here.

use std::sync::Arc;
use storsim_core::Status;
use storsim_emulate::{
    Departure, Emulator, FrontendBatch, HostIo, HostOp, IoFailure, Outcome, Polled, Poller,
    ReplyBatch, Responder,
};

/// Most requests one poll of an NBD connection serves: the spin checks its deadline between
/// polls, so a burst that arrived at once (32 requests in one receive at queue depth 32) is
/// taken a few at a time rather than all before a reply that falls due meanwhile.
const NBD_POLL_REQUESTS: usize = 4;

/// Serves NBD requests from the emulator.
pub struct NbdFrontend {
    pub emulator: Arc<Emulator>,
}

impl storsim_nbd::Handler for NbdFrontend {
    fn request(&self, request: storsim_nbd::Request, reply: storsim_nbd::Reply) {
        let op = match request.command {
            storsim_nbd::Command::Read => HostOp::Read,
            storsim_nbd::Command::Write => HostOp::Write,
            storsim_nbd::Command::Flush => HostOp::Flush,
            storsim_nbd::Command::Trim => HostOp::Trim,
            storsim_nbd::Command::WriteZeroes => HostOp::WriteZeroes,
        };
        let io = HostIo {
            op,
            offset_bytes: request.offset,
            len_bytes: u64::from(request.length),
            fua: request.fua,
            data: request.data,
        };
        self.emulator.submit(io, Box::new(NbdResponder(reply)));
    }

    /// The pacing thread receives the connection's requests itself while it spins: the
    /// connection's reader thread then stops waking once per request (at queue depth 32 it
    /// took a quarter to a third of a core, mostly waking up, on a machine where the pacing
    /// thread already waited for a core).
    fn connection_poller(&self, poller: storsim_nbd::ConnectionPoller) {
        self.emulator.attach_poller(Box::new(NbdPoller(poller)));
    }
}

/// An NBD connection the pacing thread receives from itself: its reader thread parks while
/// the pacing thread receives its requests, instead of waking once per request, and takes
/// over while the pacing thread sleeps. (The emulator's trait on the protocol's type needs a
/// type of this crate's.)
struct NbdPoller(storsim_nbd::ConnectionPoller);

impl Poller for NbdPoller {
    fn frontend(&self) -> &'static str {
        "nbd"
    }

    fn poll(&mut self) -> Polled {
        match self.0.poll(NBD_POLL_REQUESTS) {
            storsim_nbd::Polled::Open { requests } => Polled {
                requests,
                open: true,
            },
            storsim_nbd::Polled::Closed { requests } => Polled {
                requests,
                open: false,
            },
        }
    }

    fn set_active(&self, active: bool) {
        self.0.set_active(active);
    }
}

/// Replies due together on one connection, which leave in one vectored write.
#[derive(Default)]
struct NbdBatch(storsim_nbd::ReplyBatch);

impl FrontendBatch for NbdBatch {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn send(&mut self, before_write: &mut dyn FnMut(usize)) {
        self.0.send(before_write);
    }
}

struct NbdResponder(storsim_nbd::Reply);

impl Responder for NbdResponder {
    fn respond(self: Box<Self>, outcome: Outcome) {
        match outcome {
            Outcome::Data(bytes) => self.0.data(&bytes),
            Outcome::Done => self.0.ok(),
            Outcome::Failed(failure) => self.0.error(nbd_errno(failure)),
        }
    }

    /// Replies due together on one connection leave in one write: on a loopback TCP socket
    /// each write costs several microseconds of the pacing thread's time, which at a high
    /// request rate made it fall behind the model's instants.
    fn respond_batched(self: Box<Self>, outcome: Outcome, batch: &mut ReplyBatch) -> Departure {
        batch.add(|NbdBatch(batch): &mut NbdBatch| {
            Some(match outcome {
                Outcome::Data(bytes) => batch.data(self.0, bytes),
                Outcome::Done => batch.ok(self.0),
                Outcome::Failed(failure) => batch.error(self.0, nbd_errno(failure)),
            })
        })
    }
}

fn nbd_errno(failure: IoFailure) -> storsim_nbd::Errno {
    match failure {
        IoFailure::OutOfRange => storsim_nbd::Errno::Inval,
        IoFailure::Store(_) | IoFailure::DeviceFailed(_) => storsim_nbd::Errno::Io,
        IoFailure::ShuttingDown => storsim_nbd::Errno::Shutdown,
        // NBD has few error codes: a full device is its ENOSPC, a read-only one its EPERM
        // (what a server answers a write to a read-only export), every other failure EIO.
        IoFailure::Injected(status) => match status {
            Status::NoSpace => storsim_nbd::Errno::NoSpc,
            Status::ReadOnly => storsim_nbd::Errno::Perm,
            _ => storsim_nbd::Errno::Io,
        },
    }
}

/// Serves the FUSE file's reads and writes from the emulator.
pub struct FuseFrontend {
    pub emulator: Arc<Emulator>,
}

impl storsim_fuse::Handler for FuseFrontend {
    fn request(&self, request: storsim_fuse::Request, reply: storsim_fuse::Reply) {
        let op = match request.command {
            storsim_fuse::Command::Read => HostOp::Read,
            storsim_fuse::Command::Write => HostOp::Write,
            storsim_fuse::Command::Fsync => HostOp::Flush,
            storsim_fuse::Command::Trim => HostOp::Trim,
        };
        let io = HostIo {
            op,
            offset_bytes: request.offset,
            len_bytes: u64::from(request.length),
            fua: false,
            data: request.data,
        };
        let responder = FuseResponder {
            reply,
            written: (op == HostOp::Write).then_some(request.length),
        };
        self.emulator.submit(io, Box::new(responder));
    }
}

struct FuseResponder {
    reply: storsim_fuse::Reply,
    /// A write's length, which its reply reports.
    written: Option<u32>,
}

impl Responder for FuseResponder {
    fn respond(self: Box<Self>, outcome: Outcome) {
        match (outcome, self.written) {
            (Outcome::Data(bytes), _) => self.reply.data(&bytes),
            (Outcome::Done, Some(n)) => self.reply.written(n),
            (Outcome::Done, None) => self.reply.ok(),
            (Outcome::Failed(failure), _) => self.reply.error(fuse_errno(failure)),
        }
    }

    /// Over io_uring, replies due together are committed with one `io_uring_enter`: written
    /// one by one to /dev/fuse, each reply also ran the loop device's completion on the pacing
    /// thread, and at queue depth 32 the replies queued behind one another. Replies through
    /// /dev/fuse are written at once, as before.
    fn respond_batched(self: Box<Self>, outcome: Outcome, batch: &mut ReplyBatch) -> Departure {
        batch.add(
            |FuseBatch(batch): &mut FuseBatch| match (outcome, self.written) {
                (Outcome::Data(bytes), _) => batch.data(self.reply, &bytes),
                (Outcome::Done, Some(n)) => batch.written(self.reply, n),
                (Outcome::Done, None) => batch.ok(self.reply),
                (Outcome::Failed(failure), _) => batch.error(self.reply, fuse_errno(failure)),
            },
        )
    }
}

/// Replies due together on one mount over io_uring, which are committed with one
/// `io_uring_enter`.
#[derive(Default)]
struct FuseBatch(storsim_fuse::ReplyBatch);

impl FrontendBatch for FuseBatch {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn send(&mut self, before_write: &mut dyn FnMut(usize)) {
        self.0.send(before_write);
    }
}

/// A FUSE mount's io_uring ring, which the pacing thread looks in for requests itself, so that
/// none needs a thread woken to reach the model; hand it over with
/// `Emulator::attach_poller(Box::new(FuseRingPoller(poller)))`.
pub struct FuseRingPoller(pub storsim_fuse::RingPoller);

impl Poller for FuseRingPoller {
    fn frontend(&self) -> &'static str {
        "fuse"
    }

    fn poll(&mut self) -> Polled {
        Polled {
            requests: self.0.poll(),
            open: true,
        }
    }

    fn set_active(&self, active: bool) {
        self.0.set_active(active);
    }
}

fn fuse_errno(failure: IoFailure) -> i32 {
    match failure {
        IoFailure::OutOfRange => libc::EINVAL,
        IoFailure::Store(_) | IoFailure::DeviceFailed(_) => libc::EIO,
        IoFailure::ShuttingDown => libc::ESHUTDOWN,
        IoFailure::Injected(status) => status.errno(),
    }
}
