//! A minimal FUSE file system that exports one regular file the size of an emulated device.
//!
//! It speaks the kernel protocol directly (no libfuse), over `/dev/fuse` or, on Linux 6.14 and
//! later, over io_uring (see [`Transport`]). Reads, writes, fsyncs and hole punches of the file
//! become [`Request`]s handed to a [`Handler`], which answers through a [`Reply`] whenever it
//! likes, from any thread: the emulator answers at the instant its device model says the I/O
//! completes. Several requests are in flight at once and their replies go back in any order;
//! the kernel matches them by the request's unique id. Replies due together can leave together
//! through a [`ReplyBatch`]: over io_uring, one system call commits them all.
//!
//! The file is opened with direct I/O, so the page cache never answers for the device, and
//! `losetup --direct-io=on -f --show MOUNT/FILE` turns it into a block device on which
//! `mkfs.ext4` and `mount` work. See `docs/fuse.md`.
//!
//! Every request is bounds-checked before the handler sees it: reads past the end are clipped
//! (or answered with zero bytes), writes past the end fail with ENOSPC, writes to a read-only
//! export fail with EROFS. The handler only ever sees in-range requests.

mod abi;
mod channel;
mod error;
mod mount;
mod reply;
mod session;
mod uring;

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

pub use error::FuseError;
pub use mount::{Mount, RingPoller};
pub use reply::{Reply, ReplyBatch};
pub use uring::ENABLE_URING_PATH;

/// Why FUSE over io_uring cannot be used here (`None` when it can): the kernel lacks it, or
/// [`ENABLE_URING_PATH`] is not Y.
pub fn io_uring_unavailable() -> Option<String> {
    uring::unavailable()
}

/// How requests and replies travel between the kernel and this file system.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Transport {
    /// io_uring when the kernel offers it (Linux 6.14+ with [`ENABLE_URING_PATH`] Y, granted in
    /// INIT and registered), else `/dev/fuse`.
    #[default]
    Auto,
    /// `read(2)` and `writev(2)` on `/dev/fuse`, one system call per request and per reply.
    DevFuse,
    /// FUSE over io_uring; mounting fails (with [`FuseError::IoUringUnavailable`]) when the
    /// kernel does not offer it.
    IoUring,
}

impl Transport {
    pub fn name(self) -> &'static str {
        match self {
            Transport::Auto => "auto",
            Transport::DevFuse => "dev-fuse",
            Transport::IoUring => "io-uring",
        }
    }
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Transport {
    type Err = String;

    fn from_str(s: &str) -> Result<Transport, String> {
        match s {
            "auto" => Ok(Transport::Auto),
            "dev-fuse" => Ok(Transport::DevFuse),
            "io-uring" => Ok(Transport::IoUring),
            other => Err(format!(
                "unknown FUSE transport {other:?} (auto, dev-fuse or io-uring)"
            )),
        }
    }
}

/// The one file the mount point holds.
#[derive(Clone, Debug)]
pub struct FileExport {
    /// The file's name inside the mount point (no `/`, at most 255 bytes).
    pub file_name: String,
    /// The file's size: the device capacity. It never changes.
    pub size_bytes: u64,
    /// Refuse opening for writing (EROFS) and every write.
    pub read_only: bool,
}

/// What a [`Request`] asks of the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// Read `length` bytes at `offset`; answer with [`Reply::data`].
    Read,
    /// Write `data` (exactly `length` bytes) at `offset`; answer with [`Reply::written`] or
    /// [`Reply::ok`].
    Write,
    /// Make everything written so far durable (`offset` and `length` are zero); answer with
    /// [`Reply::ok`].
    Fsync,
    /// Discard `length` bytes at `offset` (a hole punched in the file, a discard on the loop
    /// device above it); answer with [`Reply::ok`]. Reads of the range must return zeros
    /// afterwards, which is what hole punching promises.
    Trim,
}

/// One I/O for the device, always inside the file: `offset + length <= size_bytes`.
#[derive(Debug)]
pub struct Request {
    pub command: Command,
    pub offset: u64,
    pub length: u32,
    /// The bytes to write (empty for every other command).
    pub data: Vec<u8>,
}

/// Receives every I/O request. Called on the reader threads (or the ring thread), several at a
/// time, it should hand the request on and return quickly; the answer goes through the
/// [`Reply`], from whichever thread, whenever.
pub trait Handler: Send + Sync + 'static {
    fn request(&self, request: Request, reply: Reply);
}

/// How to run the mount.
#[derive(Clone)]
pub struct MountOptions {
    /// Reader threads on `/dev/fuse` (1 to 64), so requests from several kernel threads are
    /// read concurrently. Default 4. With the io_uring transport they only see INIT and the
    /// rare FORGET and INTERRUPT.
    pub threads: usize,
    /// `/dev/fuse`, io_uring, or whichever the kernel offers. Default [`Transport::Auto`].
    pub transport: Transport,
    /// Ring entries per queue with the io_uring transport (1 to 512; one queue per possible
    /// CPU): the most requests from one CPU the file system holds at once. Each entry has a
    /// 1 MiB payload buffer, mapped but only backed by memory where requests touch it.
    /// Default 64.
    pub ring_entries: usize,
    /// Let users other than the one mounting use the file (`allow_other`; for non-root users
    /// it needs `user_allow_other` in `/etc/fuse.conf`). Default false.
    pub allow_other: bool,
    /// Receives one line per notable event: mount, unmount, protocol trouble, handler
    /// mistakes. Default: discarded.
    pub log: Arc<dyn Fn(&str) + Send + Sync>,
}

impl Default for MountOptions {
    fn default() -> Self {
        MountOptions {
            threads: 4,
            transport: Transport::Auto,
            ring_entries: 64,
            allow_other: false,
            log: Arc::new(|_| {}),
        }
    }
}

impl fmt::Debug for MountOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MountOptions")
            .field("threads", &self.threads)
            .field("transport", &self.transport)
            .field("ring_entries", &self.ring_entries)
            .field("allow_other", &self.allow_other)
            .finish_non_exhaustive()
    }
}
