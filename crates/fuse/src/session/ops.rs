//! The opcode table and the opcodes answered inline, without the handler: names, attributes,
//! opening, access checks, the directory listing and STATFS.

use std::sync::atomic::Ordering;

use super::{now, Session};
use crate::abi::{self, opcode, Attr, Out};
use crate::reply::{Kind, Route};
use crate::Command;

/// How long the kernel may cache names and attributes. They change only through this file
/// system's own SETATTR replies, which refresh the kernel's copy, so a long timeout is safe.
const TTL: (u64, u32) = abi::valid(3600);
/// The block size reported by GETATTR and STATFS; the loop driver takes STATFS's as its
/// discard granularity.
const BLOCK_BYTES: u32 = 4096;

/// The directory entry type field is the file type bits of the mode shifted down, which is what
/// `DT_DIR` and `DT_REG` are.
const DT_DIR: u32 = libc::S_IFDIR >> 12;
const DT_REG: u32 = libc::S_IFREG >> 12;

impl Session {
    /// Answers one request. `body` follows the fuse_in_header; a WRITE's data is either the
    /// tail of `body` or, from the ring, `write_data`.
    pub(super) fn handle(
        &self,
        h: abi::InHeader,
        body: &[u8],
        write_data: Option<Vec<u8>>,
        route: Route,
    ) {
        if h.opcode == opcode::INIT {
            return self.init(route, body);
        }
        if self.kernel_minor.load(Ordering::Acquire) == 0 {
            return route.reply_error(libc::EIO);
        }
        let result = match h.opcode {
            opcode::LOOKUP => self.lookup(h.nodeid, body),
            opcode::GETATTR => match self.attr(h.nodeid) {
                Some(a) => Ok(abi::attr_out(&a, TTL)),
                None => Err(libc::ENOENT),
            },
            opcode::SETATTR => self.setattr(h.nodeid, body),
            opcode::OPEN => self.open(h.nodeid, body),
            opcode::READ => return self.read(route, h.nodeid, body),
            opcode::WRITE => return self.write(route, h.nodeid, body, write_data),
            opcode::FSYNC => {
                if h.nodeid == abi::FILE_ID {
                    return self.submit(route, Command::Fsync, 0, 0, Vec::new(), Kind::Done);
                }
                Ok(Vec::new())
            }
            opcode::FLUSH | opcode::RELEASE | opcode::RELEASEDIR | opcode::FSYNCDIR => {
                Ok(Vec::new())
            }
            opcode::OPENDIR => match h.nodeid {
                abi::ROOT_ID => Ok(abi::open_out(0, 0)),
                abi::FILE_ID => Err(libc::ENOTDIR),
                _ => Err(libc::ENOENT),
            },
            opcode::READDIR => self.readdir(h.nodeid, body),
            opcode::STATFS => Ok(abi::statfs_out(&abi::Statfs {
                blocks: self.export.size_bytes / BLOCK_BYTES as u64,
                bfree: 0,
                bavail: 0,
                files: 2,
                ffree: 0,
                bsize: BLOCK_BYTES,
                namelen: 255,
                frsize: BLOCK_BYTES,
            })),
            opcode::ACCESS => self.access(h.nodeid, body),
            // ENOSYS makes the kernel remember that extended attributes are unsupported and
            // stop asking.
            opcode::GETXATTR | opcode::LISTXATTR | opcode::SETXATTR | opcode::REMOVEXATTR => {
                Err(libc::ENOSYS)
            }
            opcode::FALLOCATE => return self.fallocate(route, h.nodeid, body),
            // Linux 6.6 and later try STATX first; ENOSYS makes them use GETATTR from then on.
            opcode::STATX => Err(libc::ENOSYS),
            // Over /dev/fuse these need no reply: requests are answered when the handler
            // answers (an interrupt cannot hurry the device model), and node ids are fixed, so
            // lookup counts need no bookkeeping. The kernel sends them only there; one arriving
            // in a ring entry anyway must still be committed for the entry to serve again.
            opcode::INTERRUPT | opcode::FORGET | opcode::BATCH_FORGET => {
                if !route.is_ring() {
                    return;
                }
                self.log_once(
                    h.opcode,
                    &format!(
                        "fuse: opcode {} arrived over the ring; answered ENOSYS",
                        h.opcode
                    ),
                );
                Err(libc::ENOSYS)
            }
            opcode::DESTROY => Ok(Vec::new()),
            other => {
                self.log_once(
                    other,
                    &format!("fuse: unsupported opcode {other}; answered ENOSYS"),
                );
                Err(libc::ENOSYS)
            }
        };
        match result {
            Ok(payload) => route.reply(&[&payload]),
            Err(errno) => route.reply_error(errno),
        }
    }

    fn root_attr(&self) -> Attr {
        Attr {
            ino: abi::ROOT_ID,
            size: 0,
            blocks: 0,
            atime: self.mounted_at,
            mtime: self.mounted_at,
            ctime: self.mounted_at,
            mode: libc::S_IFDIR | 0o755,
            nlink: 2,
            uid: self.uid,
            gid: self.gid,
            blksize: BLOCK_BYTES,
        }
    }

    fn file_attr(&self) -> Attr {
        let times = *self.file_times.lock().unwrap_or_else(|e| e.into_inner());
        let permissions = if self.export.read_only { 0o444 } else { 0o644 };
        Attr {
            ino: abi::FILE_ID,
            size: self.export.size_bytes,
            blocks: self.export.size_bytes.div_ceil(512),
            atime: times.atime,
            mtime: times.mtime,
            ctime: times.ctime,
            mode: libc::S_IFREG | permissions,
            nlink: 1,
            uid: self.uid,
            gid: self.gid,
            blksize: BLOCK_BYTES,
        }
    }

    fn attr(&self, node: u64) -> Option<Attr> {
        match node {
            abi::ROOT_ID => Some(self.root_attr()),
            abi::FILE_ID => Some(self.file_attr()),
            _ => None,
        }
    }

    fn lookup(&self, node: u64, body: &[u8]) -> Result<Vec<u8>, i32> {
        if node != abi::ROOT_ID {
            return Err(if node == abi::FILE_ID {
                libc::ENOTDIR
            } else {
                libc::ENOENT
            });
        }
        let name = body.split(|&b| b == 0).next().unwrap_or(&[]);
        if name == self.export.file_name.as_bytes() {
            Ok(abi::entry_out(&self.file_attr(), TTL, TTL))
        } else {
            Err(libc::ENOENT)
        }
    }

    fn setattr(&self, node: u64, body: &[u8]) -> Result<Vec<u8>, i32> {
        use abi::fattr as fa;
        let s = abi::SetattrIn::parse(body).ok_or(libc::EINVAL)?;
        let current = self.attr(node).ok_or(libc::ENOENT)?;
        if s.valid & fa::MODE != 0 && s.mode & 0o7777 != current.mode & 0o7777 {
            return Err(libc::EPERM);
        }
        if s.valid & fa::UID != 0 && s.uid != current.uid {
            return Err(libc::EPERM);
        }
        if s.valid & fa::GID != 0 && s.gid != current.gid {
            return Err(libc::EPERM);
        }
        if s.valid & fa::SIZE != 0 {
            if node == abi::ROOT_ID {
                return Err(libc::EISDIR);
            }
            // The file is the device: its size is the device's capacity and cannot change.
            if s.size != self.export.size_bytes {
                return Err(libc::EPERM);
            }
        }
        let time_bits = fa::ATIME | fa::MTIME | fa::ATIME_NOW | fa::MTIME_NOW | fa::CTIME;
        if node == abi::FILE_ID && s.valid & time_bits != 0 {
            if self.export.read_only {
                return Err(libc::EROFS);
            }
            let now = now();
            let mut times = self.file_times.lock().unwrap_or_else(|e| e.into_inner());
            if s.valid & fa::ATIME_NOW != 0 {
                times.atime = now;
            } else if s.valid & fa::ATIME != 0 {
                times.atime = (s.atime, s.atimensec);
            }
            if s.valid & fa::MTIME_NOW != 0 {
                times.mtime = now;
            } else if s.valid & fa::MTIME != 0 {
                times.mtime = (s.mtime, s.mtimensec);
            }
            times.ctime = now;
        }
        let attr = self.attr(node).ok_or(libc::ENOENT)?;
        Ok(abi::attr_out(&attr, TTL))
    }

    fn open(&self, node: u64, body: &[u8]) -> Result<Vec<u8>, i32> {
        let flags = abi::first_u32(body, abi::OPEN_IN_SIZE).ok_or(libc::EINVAL)?;
        match node {
            abi::FILE_ID => {
                let access = flags as i32 & libc::O_ACCMODE;
                if self.export.read_only && access != libc::O_RDONLY {
                    return Err(libc::EROFS);
                }
                // Direct I/O sends every read and write to this file system, so the page cache
                // never answers for the device and every I/O reaches the device model. Parallel
                // direct writes drop the kernel's per-inode write lock: the file never grows,
                // so concurrent writes cannot race on its size.
                Ok(abi::open_out(
                    0,
                    abi::open_flag::DIRECT_IO | abi::open_flag::PARALLEL_DIRECT_WRITES,
                ))
            }
            abi::ROOT_ID => Err(libc::EISDIR),
            _ => Err(libc::ENOENT),
        }
    }

    fn access(&self, node: u64, body: &[u8]) -> Result<Vec<u8>, i32> {
        let mask = abi::first_u32(body, abi::ACCESS_IN_SIZE).ok_or(libc::EINVAL)?;
        match node {
            abi::FILE_ID if self.export.read_only && mask & libc::W_OK as u32 != 0 => {
                Err(libc::EROFS)
            }
            abi::FILE_ID | abi::ROOT_ID => Ok(Vec::new()),
            _ => Err(libc::ENOENT),
        }
    }

    fn readdir(&self, node: u64, body: &[u8]) -> Result<Vec<u8>, i32> {
        match node {
            abi::ROOT_ID => {}
            abi::FILE_ID => return Err(libc::ENOTDIR),
            _ => return Err(libc::ENOENT),
        }
        let r = abi::ReadIn::parse(body).ok_or(libc::EINVAL)?;
        let entries: [(u64, &[u8], u32); 3] = [
            (abi::ROOT_ID, b".", DT_DIR),
            (abi::ROOT_ID, b"..", DT_DIR),
            (abi::FILE_ID, self.export.file_name.as_bytes(), DT_REG),
        ];
        let mut out = Out::default();
        // The offset the kernel passes back is the `off` of the last entry it consumed, which is
        // the index of the next entry to send.
        let start = usize::try_from(r.offset).unwrap_or(usize::MAX);
        for (index, (ino, name, kind)) in entries.iter().enumerate().skip(start) {
            if out.0.len() + abi::dirent_size(name.len()) > r.size as usize {
                break;
            }
            abi::dirent(&mut out, *ino, index as u64 + 1, *kind, name);
        }
        Ok(out.0)
    }

    /// Logs `message` about opcode `op`, once per opcode below 64, so that a kernel that keeps
    /// sending an unsupported request does not flood the log.
    fn log_once(&self, op: u32, message: &str) {
        if op < 64 {
            let bit = 1u64 << op;
            if self.logged_opcodes.fetch_or(bit, Ordering::Relaxed) & bit != 0 {
                return;
            }
        }
        self.channel.log(message);
    }
}
