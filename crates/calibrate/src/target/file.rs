//! A block device or regular file measured with O_DIRECT reads and writes and the wall clock.

use super::{block_device_users, loop_devices_backed_by, SweepPoint, Target, TargetError};
use super::{TargetInfo, TargetKind};
use crate::plan::PlannedIo;
use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom};
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt, OpenOptionsExt};
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
        let r = self.file.read_at(&mut self.buffer.bytes_mut()[..512], 0);
        if matches!(r, Ok(512)) {
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
fn block_device_size(mut file: &File) -> std::io::Result<u64> {
    file.seek(SeekFrom::End(0))
}

/// One request on `file` (one pread or pwrite), timed; retried when a signal interrupted it
/// before any transfer.
fn timed_io(file: &File, buffer: &mut AlignedBuffer, io: &PlannedIo) -> std::io::Result<u64> {
    let bytes = buffer
        .bytes_mut()
        .get_mut(..io.len_bytes as usize)
        .expect("request larger than the buffer");
    loop {
        let started = Instant::now();
        let r = if io.write {
            file.write_at(bytes, io.offset_bytes)
        } else {
            file.read_at(bytes, io.offset_bytes)
        };
        let elapsed = started.elapsed().as_nanos() as u64;
        let r = match r {
            Ok(r) => r,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
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
        timed_io(&self.file, &mut self.buffer, io).map_err(|error| TargetError::Io {
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
                            let ns = timed_io(&file, &mut buffer, &io).map_err(|error| {
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
    /// One alignment longer than the buffer, so that an aligned start lies within it.
    storage: Vec<u8>,
    /// Where the aligned buffer starts in `storage`.
    start: usize,
    /// The buffer's length in bytes, a multiple of the alignment.
    len: usize,
}

impl AlignedBuffer {
    fn new(len: usize) -> Self {
        let len = len.max(BUFFER_ALIGN).next_multiple_of(BUFFER_ALIGN);
        let storage = vec![0u8; len + BUFFER_ALIGN];
        let start = storage.as_ptr().align_offset(BUFFER_ALIGN);
        assert!(start < BUFFER_ALIGN, "no aligned start in the buffer");
        let mut buffer = AlignedBuffer {
            storage,
            start,
            len,
        };
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for word in buffer.bytes_mut().chunks_exact_mut(8) {
            // SplitMix64: cheap, and every 8 bytes differ.
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            word.copy_from_slice(&z.to_le_bytes());
        }
        buffer
    }

    /// The aligned bytes. (The vector never grows, so they stay where they are.)
    fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.storage[self.start..self.start + self.len]
    }

    /// Writes `n` into the first 8 bytes of every 4 KiB block, so that no two written blocks
    /// are identical and a deduplicating device still stores each one.
    fn stamp(&mut self, n: u64) {
        for block in self.bytes_mut().chunks_exact_mut(BUFFER_ALIGN) {
            block[..8].copy_from_slice(&n.to_le_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_aligned_for_direct_io_whatever_their_length() {
        for (asked, expected) in [(1, 4096), (4096, 4096), (4097, 8192), (65536, 65536)] {
            let mut buffer = AlignedBuffer::new(asked);
            let bytes = buffer.bytes_mut();
            assert_eq!(bytes.as_ptr() as usize % BUFFER_ALIGN, 0, "{asked}");
            assert_eq!(bytes.len(), expected, "{asked}");
        }
    }

    #[test]
    fn a_stamp_marks_every_block_and_leaves_the_rest_of_the_data() {
        let mut buffer = AlignedBuffer::new(3 * BUFFER_ALIGN);
        let before = buffer.bytes_mut().to_vec();
        // The fill differs from word to word, so a block of zeros would show a broken fill.
        assert_ne!(before[8..16], before[16..24]);
        buffer.stamp(0x0123_4567_89ab_cdef);
        let after = buffer.bytes_mut();
        for (block, (new, old)) in after
            .chunks_exact(BUFFER_ALIGN)
            .zip(before.chunks_exact(BUFFER_ALIGN))
            .enumerate()
        {
            assert_eq!(
                new[..8],
                0x0123_4567_89ab_cdefu64.to_le_bytes(),
                "block {block}"
            );
            assert_eq!(new[8..], old[8..], "block {block}");
        }
    }
}
