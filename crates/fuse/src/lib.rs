//! A minimal FUSE file system that exports one regular file the size of an emulated device.
//!
//! It speaks the kernel protocol over `/dev/fuse` directly (no libfuse). Reads, writes, fsyncs
//! and hole punches of the file become [`Request`]s handed to a [`Handler`], which answers
//! through a [`Reply`] whenever it likes, from any thread: the emulator answers at the instant
//! its device model says the I/O completes. Several requests are in flight at once and their
//! replies go back in any order; the kernel matches them by the request's unique id.
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

use std::fmt;
use std::sync::Arc;

pub use error::FuseError;
pub use mount::Mount;
pub use reply::Reply;

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

/// Receives every I/O request. Called on the reader threads, several at a time, it should
/// hand the request on and return quickly; the answer goes through the [`Reply`], from
/// whichever thread, whenever.
pub trait Handler: Send + Sync + 'static {
    fn request(&self, request: Request, reply: Reply);
}

/// How to run the mount.
#[derive(Clone)]
pub struct MountOptions {
    /// Reader threads on `/dev/fuse` (1 to 64), so requests from several kernel threads are
    /// read concurrently. Default 4.
    pub threads: usize,
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
            allow_other: false,
            log: Arc::new(|_| {}),
        }
    }
}

impl fmt::Debug for MountOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MountOptions")
            .field("threads", &self.threads)
            .field("allow_other", &self.allow_other)
            .finish_non_exhaustive()
    }
}
