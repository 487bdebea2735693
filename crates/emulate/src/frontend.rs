//! The front ends' side of the emulator: the NBD server's and the FUSE file's handlers turn
//! protocol requests into [`HostIo`]s and outcomes back into protocol replies.

use crate::{
    BatchWrite, Departure, Emulator, HostIo, HostOp, IoFailure, Outcome, ReplyBatch, Responder,
};
use std::sync::Arc;

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
        self.emulator.attach_nbd_poller(poller);
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
        let batch = batch.nbd();
        Departure::Batched(BatchWrite::Nbd(match outcome {
            Outcome::Data(bytes) => batch.data(self.0, bytes),
            Outcome::Done => batch.ok(self.0),
            Outcome::Failed(failure) => batch.error(self.0, nbd_errno(failure)),
        }))
    }
}

fn nbd_errno(failure: IoFailure) -> storsim_nbd::Errno {
    match failure {
        IoFailure::OutOfRange => storsim_nbd::Errno::Inval,
        IoFailure::Store(_) | IoFailure::DeviceFailed(_) => storsim_nbd::Errno::Io,
        IoFailure::ShuttingDown => storsim_nbd::Errno::Shutdown,
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
        let batch = batch.fuse();
        let write = match (outcome, self.written) {
            (Outcome::Data(bytes), _) => batch.data(self.reply, &bytes),
            (Outcome::Done, Some(n)) => batch.written(self.reply, n),
            (Outcome::Done, None) => batch.ok(self.reply),
            (Outcome::Failed(failure), _) => batch.error(self.reply, fuse_errno(failure)),
        };
        match write {
            Some(index) => Departure::Batched(BatchWrite::Fuse(index)),
            None => Departure::Sent,
        }
    }
}

fn fuse_errno(failure: IoFailure) -> i32 {
    match failure {
        IoFailure::OutOfRange => libc::EINVAL,
        IoFailure::Store(_) | IoFailure::DeviceFailed(_) => libc::EIO,
        IoFailure::ShuttingDown => libc::ESHUTDOWN,
    }
}
