//! The emulator's block store: the bytes of an emulated disk, kept apart from any timing model.
//!
//! A [`Store`] is opened on one of three [`Backing`]s:
//!
//! - **memory**: sparse; a 4 KiB block is allocated on its first write, unwritten blocks read as
//!   zeros, so memory follows the data written, not the device size.
//! - **none**: timing-only emulation; writes are discarded and reads return zeros.
//! - **file:PATH**: allocation on write into `PATH`, which holds only the blocks written, packed
//!   in allocation order, with an allocation map journalled in `PATH.map`. The emulated disk may
//!   be much larger than the space behind it. [`Store::flush`] makes every earlier write durable
//!   and a later [`Store::open`] of the same path finds it again.
//!
//! Offsets and lengths are in bytes and need no alignment. Every range is checked against the
//! device size before anything is touched. All methods take `&self` and may be called from many
//! threads at once: blocks are guarded by locks sharded by 64 KiB stripe, so I/O to unrelated
//! places does not serialise.
//!
//! docs/store.md describes the file format and the durability guarantees. [`power`] models a
//! volatile write cache over a store and what a power cut leaves of it; [`write_log`] records
//! every write and flush so a disk can be rebuilt as a crash at any point would leave it
//! (docs/faults.md, "Power loss").

mod file;
mod format;
mod layout;
mod memory;
pub mod power;
pub mod write_log;

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// The store's block size: the unit of allocation and of freeing.
pub const BLOCK_BYTES: u64 = 4096;

/// The largest device a store accepts (4 EiB). It keeps every byte offset of the file backing,
/// including slots freed but not yet reusable, within what `pread`/`pwrite` accept (2^63).
pub const MAX_SIZE_BYTES: u64 = 1 << 62;

/// Where a store keeps its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Backing {
    /// Sparse memory; the bytes are gone when the store is dropped.
    Memory,
    /// A data file at this path plus its allocation map at the path with `.map` appended.
    File(PathBuf),
    /// No bytes at all: writes are discarded, reads return zeros.
    None,
}

impl FromStr for Backing {
    type Err = StoreError;

    /// Accepts `memory`, `none` and `file:PATH` (PATH not empty).
    fn from_str(s: &str) -> Result<Backing, StoreError> {
        match s {
            "memory" => Ok(Backing::Memory),
            "none" => Ok(Backing::None),
            _ => match s.strip_prefix("file:") {
                Some(path) if !path.is_empty() => Ok(Backing::File(PathBuf::from(path))),
                _ => Err(StoreError::InvalidBacking {
                    input: s.to_string(),
                }),
            },
        }
    }
}

impl fmt::Display for Backing {
    /// The form `from_str` accepts.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Backing::Memory => write!(f, "memory"),
            Backing::None => write!(f, "none"),
            Backing::File(p) => write!(f, "file:{}", p.display()),
        }
    }
}

/// Why a store operation failed. Every variant names the offending offset, size or path.
#[derive(Debug)]
pub enum StoreError {
    /// `[offset, offset + len)` does not lie inside the device (or `offset + len` overflows).
    OutOfRange { offset: u64, len: u64, size: u64 },
    /// A device size of zero or above [`MAX_SIZE_BYTES`].
    InvalidSize { size: u64 },
    /// A backing string that is not `memory`, `none` or `file:PATH`.
    InvalidBacking { input: String },
    /// An operating-system error on one of the backing files.
    Io {
        path: PathBuf,
        /// What the store was doing, e.g. "read 4096 bytes at data-file offset 8192".
        action: String,
        source: std::io::Error,
    },
    /// A backing file that is not a store, belongs to another store, or is damaged.
    Corrupt { path: PathBuf, problem: String },
    /// The store at `path` was created for a device of `stored` bytes.
    SizeMismatch {
        path: PathBuf,
        stored: u64,
        requested: u64,
    },
    /// Another open `Store`, in this process or another, holds the file.
    InUse { path: PathBuf },
    /// An earlier write to the map or sync of the files failed; the store takes no more changes.
    Failed { path: PathBuf },
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::OutOfRange { offset, len, size } => match offset.checked_add(*len) {
                Some(end) => write!(
                    f,
                    "range of {len} bytes at offset {offset} (ending at {end}) lies outside the device of {size} bytes"
                ),
                None => write!(
                    f,
                    "range of {len} bytes at offset {offset} overflows a 64-bit offset (device of {size} bytes)"
                ),
            },
            StoreError::InvalidSize { size } => write!(
                f,
                "device size of {size} bytes is not supported: it must be between 1 and {MAX_SIZE_BYTES} bytes"
            ),
            StoreError::InvalidBacking { input } => write!(
                f,
                "unknown backing {input:?}: expected \"memory\", \"none\" or \"file:PATH\""
            ),
            StoreError::Io {
                path,
                action,
                source,
            } => write!(f, "{}: cannot {action}: {source}", path.display()),
            StoreError::Corrupt { path, problem } => write!(f, "{}: {problem}", path.display()),
            StoreError::SizeMismatch {
                path,
                stored,
                requested,
            } => write!(
                f,
                "{}: the store was created for a device of {stored} bytes, not {requested}; open it with size {stored} or use another path",
                path.display()
            ),
            StoreError::InUse { path } => write!(
                f,
                "{}: the store is already open (by this or another process)",
                path.display()
            ),
            StoreError::Failed { path } => write!(
                f,
                "{}: an earlier write or sync of the store's files failed, so it accepts no more changes; reopen it to recover the last flushed state",
                path.display()
            ),
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// What opening a file-backed store found. Memory and none stores have none.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recovery {
    /// The store was created by this open (no earlier data).
    pub created: bool,
    /// Entries in the map journal after opening.
    pub journal_entries: u64,
    /// Bytes at the end of the journal that were discarded: a batch being appended when the
    /// system went down, which no flush had acknowledged. Zero after a clean shutdown.
    pub discarded_bytes: u64,
    /// The journal was rewritten as a snapshot of the live map because it had grown much longer.
    pub compacted: bool,
}

enum Inner {
    Memory(memory::MemoryStore),
    File(file::FileStore),
    None,
}

/// The bytes of one emulated disk. `Send + Sync`; every method takes `&self`.
pub struct Store {
    backing: Backing,
    size: u64,
    inner: Inner,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("backing", &self.backing)
            .field("size_bytes", &self.size)
            .field("allocated_bytes", &self.allocated_bytes())
            .finish()
    }
}

impl Store {
    /// Opens a store of `size_bytes` bytes. For a file backing: creates `PATH` and `PATH.map`
    /// when `PATH` does not exist (or is empty), otherwise recovers the last flushed state and
    /// refuses files that are not a store of exactly this size.
    pub fn open(backing: &Backing, size_bytes: u64) -> Result<Store, StoreError> {
        if size_bytes == 0 || size_bytes > MAX_SIZE_BYTES {
            return Err(StoreError::InvalidSize { size: size_bytes });
        }
        let inner = match backing {
            Backing::Memory => Inner::Memory(memory::MemoryStore::new(size_bytes)),
            Backing::File(path) => Inner::File(file::FileStore::open(path, size_bytes)?),
            Backing::None => Inner::None,
        };
        Ok(Store {
            backing: backing.clone(),
            size: size_bytes,
            inner,
        })
    }

    pub fn size_bytes(&self) -> u64 {
        self.size
    }

    pub fn backing(&self) -> &Backing {
        &self.backing
    }

    /// The path of the allocation map of a file backing at `path`.
    pub fn map_path(path: &Path) -> PathBuf {
        file::with_suffix(path, ".map")
    }

    /// What opening found, for a file backing.
    pub fn recovery(&self) -> Option<&Recovery> {
        match &self.inner {
            Inner::File(f) => Some(f.recovery()),
            _ => None,
        }
    }

    fn check(&self, offset: u64, len: u64) -> Result<(), StoreError> {
        match offset.checked_add(len) {
            Some(end) if end <= self.size => Ok(()),
            _ => Err(StoreError::OutOfRange {
                offset,
                len,
                size: self.size,
            }),
        }
    }

    /// Fills `buf` with the bytes at `offset`. Unwritten bytes read as zeros.
    pub fn read(&self, offset: u64, buf: &mut [u8]) -> Result<(), StoreError> {
        self.check(offset, buf.len() as u64)?;
        match &self.inner {
            Inner::Memory(m) => {
                m.read(offset, buf);
                Ok(())
            }
            Inner::File(f) => f.read(offset, buf),
            Inner::None => {
                buf.fill(0);
                Ok(())
            }
        }
    }

    /// Writes `data` at `offset`.
    pub fn write(&self, offset: u64, data: &[u8]) -> Result<(), StoreError> {
        self.check(offset, data.len() as u64)?;
        match &self.inner {
            Inner::Memory(m) => {
                m.write(offset, data);
                Ok(())
            }
            Inner::File(f) => f.write(offset, data),
            Inner::None => Ok(()),
        }
    }

    /// Makes `[offset, offset + len)` read as zeros. Whole blocks are released (their memory or
    /// file slot is freed); the parts of blocks at the edges are zeroed in place.
    pub fn write_zeroes(&self, offset: u64, len: u64) -> Result<(), StoreError> {
        self.zero(offset, len)
    }

    /// Discards `[offset, offset + len)`; afterwards it reads as zeros. The store keeps no
    /// distinction between discarded and zeroed bytes, so this does what `write_zeroes` does.
    pub fn trim(&self, offset: u64, len: u64) -> Result<(), StoreError> {
        self.zero(offset, len)
    }

    fn zero(&self, offset: u64, len: u64) -> Result<(), StoreError> {
        self.check(offset, len)?;
        match &self.inner {
            Inner::Memory(m) => {
                m.zero(offset, len);
                Ok(())
            }
            Inner::File(f) => f.zero(offset, len),
            Inner::None => Ok(()),
        }
    }

    /// File backing: when this returns, every write, write-zeroes and trim that returned before
    /// it was called is durable (data and map synced with `fdatasync`). A no-op otherwise.
    pub fn flush(&self) -> Result<(), StoreError> {
        match &self.inner {
            Inner::File(f) => f.flush(),
            Inner::Memory(_) | Inner::None => Ok(()),
        }
    }

    /// Bytes of storage the store holds for data: allocated blocks × 4096. Zero for `none`.
    pub fn allocated_bytes(&self) -> u64 {
        match &self.inner {
            Inner::Memory(m) => m.allocated_bytes(),
            Inner::File(f) => f.allocated_bytes(),
            Inner::None => 0,
        }
    }
}

/// Lock helpers that ignore poisoning. A panic while a lock is held can only come from a broken
/// internal invariant, and every structure these locks guard stays consistent between
/// statements, so carrying on is safer for an emulator than failing every later request.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub(crate) fn read_lock<T>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|e| e.into_inner())
}

pub(crate) fn write_lock<T>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Store>();
    }

    #[test]
    fn backing_parses_the_three_forms_and_round_trips() {
        assert_eq!("memory".parse::<Backing>().unwrap(), Backing::Memory);
        assert_eq!("none".parse::<Backing>().unwrap(), Backing::None);
        assert_eq!(
            "file:/tmp/x.img".parse::<Backing>().unwrap(),
            Backing::File(PathBuf::from("/tmp/x.img"))
        );
        for b in [
            Backing::Memory,
            Backing::None,
            Backing::File("a b/c".into()),
        ] {
            assert_eq!(b.to_string().parse::<Backing>().unwrap(), b);
        }
    }

    #[test]
    fn backing_errors_list_the_accepted_forms() {
        for bad in ["", "file:", "mem", "Memory", "file", "disk:/x"] {
            let e = bad.parse::<Backing>().unwrap_err();
            let msg = e.to_string();
            assert!(matches!(e, StoreError::InvalidBacking { .. }), "{bad}");
            for form in ["memory", "none", "file:PATH"] {
                assert!(msg.contains(form), "{msg}");
            }
        }
    }

    #[test]
    fn sizes_outside_the_limits_are_refused() {
        for size in [0, MAX_SIZE_BYTES + 1, u64::MAX] {
            let e = Store::open(&Backing::Memory, size).unwrap_err();
            assert!(matches!(e, StoreError::InvalidSize { size: s } if s == size));
        }
        assert!(Store::open(&Backing::None, MAX_SIZE_BYTES).is_ok());
    }

    #[test]
    fn out_of_range_message_names_offset_length_and_size() {
        let s = Store::open(&Backing::None, 1000).unwrap();
        let e = s.read(999, &mut [0u8; 2]).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("999") && msg.contains("1000") && msg.contains("2 bytes"),
            "{msg}"
        );
        let e = s.trim(u64::MAX, 2).unwrap_err();
        assert!(e.to_string().contains("overflows"), "{e}");
    }
}
