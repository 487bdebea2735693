//! A block device or regular file measured with O_DIRECT reads and writes and the wall clock.

use super::{block_device_users, loop_devices_backed_by, SweepPoint, Target, TargetError};
use super::{TargetInfo, TargetKind};
use crate::plan::PlannedIo;
use std::alloc::Layout;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

/// Whether the target may be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    ReadOnly,
    /// The user passed `--allow-writes`; the target must still not be in use.
    ReadWrite,
}

/// Buffers are aligned for direct I/O on any device (4 KiB-sector drives included).
const BUFFER_ALIGN: usize = 4096;

pub struct FileTarget {
    path: PathBuf,
    file: File,
    flags: i32,
    info: TargetInfo,
    buffer: AlignedBuffer,
    /// Counts writes so that every written block differs (see [`AlignedBuffer::stamp`]).
    writes: u64,
    writable: bool,
}

impl FileTarget {
    /// Opens `path` for measurement with requests of at most `max_len` bytes. Refuses what is
    /// neither a block device nor a regular file, and (for writes) a target something else is
    /// using. Falls back to buffered I/O, with a note, where the file system refuses O_DIRECT.
    pub fn open(path: &Path, access: Access, max_len: u64) -> Result<FileTarget, TargetError> {
        let open_err = |error| TargetError::Open {
            path: path.to_path_buf(),
            error,
        };
        let meta = std::fs::metadata(path).map_err(open_err)?;
        let ft = meta.file_type();
        let kind = if ft.is_block_device() {
            TargetKind::BlockDevice
        } else if ft.is_file() {
            TargetKind::RegularFile
        } else {
            return Err(TargetError::NotBlockOrFile {
                path: path.to_path_buf(),
                what: if ft.is_dir() {
                    "a directory"
                } else if ft.is_char_device() {
                    "a character device"
                } else {
                    "neither a file nor a device"
                },
            });
        };
        if access == Access::ReadWrite {
            let users = match kind {
                TargetKind::BlockDevice => block_device_users(meta.rdev()),
                _ => loop_devices_backed_by(path),
            };
            if !users.is_empty() {
                return Err(TargetError::InUse {
                    path: path.to_path_buf(),
                    users,
                });
            }
        }
        let mut notes = Vec::new();
        let mut flags = libc::O_DIRECT;
        // An exclusive open of a block device fails while the kernel has it mounted or held,
        // which closes the window between the check above and the first write.
        if access == Access::ReadWrite && kind == TargetKind::BlockDevice {
            flags |= libc::O_EXCL;
        }
        let file = match open_with(path, access, flags) {
            Ok(f) => f,
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                flags &= !libc::O_DIRECT;
                notes.push(
                    "the file system refused O_DIRECT: measured through the page cache, so \
                     reads may be answered from memory"
                        .to_string(),
                );
                open_with(path, access, flags).map_err(open_err)?
            }
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                return Err(TargetError::InUse {
                    path: path.to_path_buf(),
                    users: vec!["the kernel reports it busy (mounted or held)".to_string()],
                })
            }
            Err(e) => return Err(open_err(e)),
        };
        let size_bytes = match kind {
            TargetKind::BlockDevice => block_device_size(&file).map_err(open_err)?,
            _ => meta.len(),
        };
        if kind == TargetKind::RegularFile && meta.blocks() * 512 < meta.len() {
            notes.push(format!(
                "the file is sparse ({} of {} bytes allocated): reads of holes never reach \
                 the device{}",
                meta.blocks() * 512,
                meta.len(),
                if access == Access::ReadWrite {
                    "; the zones are written once before reads are measured"
                } else {
                    ""
                }
            ));
        }
        let buffer_len = (max_len as usize).max(BUFFER_ALIGN);
        let mut target = FileTarget {
            path: path.to_path_buf(),
            file,
            flags,
            info: TargetInfo {
                name: path.display().to_string(),
                kind,
                size_bytes,
                block_bytes: 512,
                direct_io: flags & libc::O_DIRECT != 0,
                notes,
            },
            buffer: AlignedBuffer::new(buffer_len),
            writes: 0,
            writable: access == Access::ReadWrite,
        };
        target.info.block_bytes = target.probe_block_bytes();
        Ok(target)
    }

    /// The smallest request direct I/O accepts: 512 bytes unless a 512-byte read is refused,
    /// then 4096 (drives and file systems with 4 KiB logical blocks).
    fn probe_block_bytes(&mut self) -> u64 {
        if !self.info.direct_io || self.info.size_bytes < 4096 {
            return 512;
        }
        let r = unsafe {
            libc::pread(
                self.file.as_raw_fd(),
                self.buffer.ptr as *mut libc::c_void,
                512,
                0,
            )
        };
        if r == 512 {
            512
        } else {
            4096
        }
    }
}

fn open_with(path: &Path, access: Access, flags: i32) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(access == Access::ReadWrite)
        .custom_flags(flags)
        .open(path)
}

/// A block device's size from the end of the device.
fn block_device_size(file: &File) -> std::io::Result<u64> {
    let end = unsafe { libc::lseek(file.as_raw_fd(), 0, libc::SEEK_END) };
    if end < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(end as u64)
}

/// One request on `fd`, timed; retried when a signal interrupted it before any transfer.
fn timed_io(fd: i32, buffer: &AlignedBuffer, io: &PlannedIo) -> std::io::Result<u64> {
    assert!(
        io.len_bytes as usize <= buffer.len,
        "request larger than the buffer"
    );
    loop {
        let started = Instant::now();
        let r = unsafe {
            if io.write {
                libc::pwrite(
                    fd,
                    buffer.ptr as *const libc::c_void,
                    io.len_bytes as usize,
                    io.offset_bytes as libc::off_t,
                )
            } else {
                libc::pread(
                    fd,
                    buffer.ptr as *mut libc::c_void,
                    io.len_bytes as usize,
                    io.offset_bytes as libc::off_t,
                )
            }
        };
        let elapsed = started.elapsed().as_nanos() as u64;
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if r as u64 != io.len_bytes {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("transferred {r} bytes instead of {}", io.len_bytes),
            ));
        }
        return Ok(elapsed);
    }
}

impl Target for FileTarget {
    fn info(&self) -> &TargetInfo {
        &self.info
    }

    fn wants_fill(&self) -> bool {
        self.writable
            && self.info.kind == TargetKind::RegularFile
            && std::fs::metadata(&self.path).is_ok_and(|m| m.blocks() * 512 < m.len())
    }

    fn io(&mut self, io: &PlannedIo) -> Result<u64, TargetError> {
        if io.write {
            self.writes += 1;
            self.buffer.stamp(self.writes);
        }
        timed_io(self.file.as_raw_fd(), &self.buffer, io).map_err(|error| TargetError::Io {
            path: self.path.clone(),
            write: io.write,
            offset_bytes: io.offset_bytes,
            len_bytes: io.len_bytes,
            error,
        })
    }

    fn sweep(
        &mut self,
        write: bool,
        size_bytes: u64,
        depth: u32,
        offsets: &[u64],
        stop: &AtomicBool,
    ) -> Result<SweepPoint, TargetError> {
        let next = AtomicU64::new(0);
        let latency_sum_ns = AtomicU64::new(0);
        let done = AtomicU64::new(0);
        let (path, flags) = (&self.path, self.flags & !libc::O_EXCL);
        let started = Instant::now();
        let result: Result<(), TargetError> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..depth)
                .map(|worker| {
                    let (next, done, latency_sum_ns) = (&next, &done, &latency_sum_ns);
                    scope.spawn(move || -> Result<(), TargetError> {
                        let access = if write {
                            Access::ReadWrite
                        } else {
                            Access::ReadOnly
                        };
                        // Each worker has its own descriptor and buffer, as fio's threads do.
                        let file =
                            open_with(path, access, flags).map_err(|error| TargetError::Open {
                                path: path.clone(),
                                error,
                            })?;
                        let mut buffer = AlignedBuffer::new(size_bytes as usize);
                        let mut count = 0u64;
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            if i >= offsets.len() as u64 || stop.load(Ordering::Relaxed) {
                                return Ok(());
                            }
                            if write {
                                count += 1;
                                buffer.stamp((worker as u64) << 40 | count);
                            }
                            let io = PlannedIo {
                                write,
                                offset_bytes: offsets[i as usize],
                                len_bytes: size_bytes,
                                sample: None,
                            };
                            let ns = timed_io(file.as_raw_fd(), &buffer, &io).map_err(|error| {
                                TargetError::Io {
                                    path: path.clone(),
                                    write,
                                    offset_bytes: io.offset_bytes,
                                    len_bytes: size_bytes,
                                    error,
                                }
                            })?;
                            latency_sum_ns.fetch_add(ns, Ordering::Relaxed);
                            done.fetch_add(1, Ordering::Relaxed);
                        }
                    })
                })
                .collect();
            workers
                .into_iter()
                .try_for_each(|w| w.join().expect("sweep worker panicked"))
        });
        result?;
        let elapsed_ns = started.elapsed().as_nanos() as u64;
        Ok(sweep_point(
            write,
            size_bytes,
            depth,
            done.into_inner(),
            elapsed_ns,
            latency_sum_ns.into_inner(),
        ))
    }
}

/// A sweep point from its totals.
pub(super) fn sweep_point(
    write: bool,
    size_bytes: u64,
    iodepth: u32,
    requests: u64,
    elapsed_ns: u64,
    latency_sum_ns: u64,
) -> SweepPoint {
    SweepPoint {
        write,
        size_bytes,
        iodepth,
        requests,
        elapsed_ns,
        iops: requests as f64 / (elapsed_ns.max(1) as f64 / 1e9),
        mean_latency_us: latency_sum_ns as f64 / requests.max(1) as f64 / 1e3,
    }
}

/// A heap buffer aligned for O_DIRECT, filled with pseudo-random bytes so that drives which
/// compress or deduplicate cannot make the measured writes cheaper than real data.
struct AlignedBuffer {
    ptr: *mut u8,
    len: usize,
}

// The buffer is owned memory; only its owner touches it.
unsafe impl Send for AlignedBuffer {}

impl AlignedBuffer {
    fn new(len: usize) -> Self {
        let len = len.max(BUFFER_ALIGN).next_multiple_of(BUFFER_ALIGN);
        let layout = Layout::from_size_align(len, BUFFER_ALIGN).expect("buffer layout");
        let ptr = unsafe { std::alloc::alloc(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for i in (0..len).step_by(8) {
            // SplitMix64: cheap, and every 8 bytes differ.
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            unsafe { std::ptr::copy_nonoverlapping(z.to_le_bytes().as_ptr(), ptr.add(i), 8) };
        }
        AlignedBuffer { ptr, len }
    }

    /// Writes `n` into the first 8 bytes of every 4 KiB block, so that no two written blocks
    /// are identical and a deduplicating device still stores each one.
    fn stamp(&mut self, n: u64) {
        for block in (0..self.len).step_by(BUFFER_ALIGN) {
            unsafe {
                std::ptr::copy_nonoverlapping(n.to_le_bytes().as_ptr(), self.ptr.add(block), 8)
            };
        }
    }
}

impl Drop for AlignedBuffer {
    fn drop(&mut self) {
        let layout = Layout::from_size_align(self.len, BUFFER_ALIGN).expect("buffer layout");
        unsafe { std::alloc::dealloc(self.ptr, layout) };
    }
}
