//! The FUSE kernel protocol as far as this file system speaks it: opcodes, flags and the byte
//! layout of every structure read or written, after `include/uapi/linux/fuse.h` (protocol 7.38).
//!
//! Structures are encoded and decoded field by field in native byte order rather than through
//! `#[repr(C)]` casts, so a short or malformed message from the kernel becomes `None` instead of
//! an out-of-bounds read. The unit tests pin every encoded size to the C header's.

/// The major protocol version this implementation speaks (the kernel's has been 7 since 2006).
pub const KERNEL_VERSION: u32 = 7;
/// The minor version announced in the INIT reply: the one of the header the layouts follow.
pub const KERNEL_MINOR_VERSION: u32 = 38;
/// The oldest kernel minor version accepted. From 7.12 on, every structure used here has its
/// full size; older kernels (before Linux 2.6.29) would need the compat layouts.
pub const MIN_KERNEL_MINOR: u32 = 12;
/// Before 7.23 the kernel expects the 24-byte `fuse_init_out` (FUSE_COMPAT_22_INIT_OUT_SIZE).
pub const INIT_OUT_FULL_SIZE_MINOR: u32 = 23;

/// The node id of the root directory (FUSE_ROOT_ID).
pub const ROOT_ID: u64 = 1;
/// The node id of the one exported file.
pub const FILE_ID: u64 = 2;

pub const IN_HEADER_SIZE: usize = 40;
pub const OUT_HEADER_SIZE: usize = 16;
#[cfg(test)]
pub const ATTR_SIZE: usize = 88;
pub const ENTRY_OUT_SIZE: usize = 128;
pub const ATTR_OUT_SIZE: usize = 104;
pub const OPEN_OUT_SIZE: usize = 16;
pub const WRITE_OUT_SIZE: usize = 8;
pub const STATFS_OUT_SIZE: usize = 80;
pub const INIT_OUT_SIZE: usize = 64;
#[cfg(test)]
pub const INIT_OUT_COMPAT_22_SIZE: usize = 24;
pub const DIRENT_HEADER_SIZE: usize = 24;
pub const READ_IN_SIZE: usize = 40;
pub const WRITE_IN_SIZE: usize = 40;
pub const SETATTR_IN_SIZE: usize = 88;
pub const OPEN_IN_SIZE: usize = 8;
pub const ACCESS_IN_SIZE: usize = 8;
pub const FALLOCATE_IN_SIZE: usize = 32;
pub const INIT_IN_MIN_SIZE: usize = 16;

/// Request opcodes (`enum fuse_opcode`).
pub mod opcode {
    pub const LOOKUP: u32 = 1;
    pub const FORGET: u32 = 2;
    pub const GETATTR: u32 = 3;
    pub const SETATTR: u32 = 4;
    pub const OPEN: u32 = 14;
    pub const READ: u32 = 15;
    pub const WRITE: u32 = 16;
    pub const STATFS: u32 = 17;
    pub const RELEASE: u32 = 18;
    pub const FSYNC: u32 = 20;
    pub const SETXATTR: u32 = 21;
    pub const GETXATTR: u32 = 22;
    pub const LISTXATTR: u32 = 23;
    pub const REMOVEXATTR: u32 = 24;
    pub const FLUSH: u32 = 25;
    pub const INIT: u32 = 26;
    pub const OPENDIR: u32 = 27;
    pub const READDIR: u32 = 28;
    pub const RELEASEDIR: u32 = 29;
    pub const FSYNCDIR: u32 = 30;
    pub const ACCESS: u32 = 34;
    pub const INTERRUPT: u32 = 36;
    pub const DESTROY: u32 = 38;
    pub const BATCH_FORGET: u32 = 42;
    pub const FALLOCATE: u32 = 43;
    pub const STATX: u32 = 52;
}

/// INIT flags (`fuse_init_in.flags` / `fuse_init_out.flags`).
pub mod init_flag {
    pub const ASYNC_READ: u32 = 1 << 0;
    pub const BIG_WRITES: u32 = 1 << 5;
    pub const ASYNC_DIO: u32 = 1 << 15;
    pub const PARALLEL_DIROPS: u32 = 1 << 18;
    pub const MAX_PAGES: u32 = 1 << 22;
    /// `fuse_init_in` / `fuse_init_out` carry `flags2`, the flags from bit 32 up.
    pub const INIT_EXT: u32 = 1 << 30;
}

/// INIT flags above bit 31, as `flags2` carries them (shifted down by 32).
pub mod init_flag2 {
    /// FUSE_OVER_IO_URING (bit 41): requests and replies through an io_uring.
    pub const OVER_IO_URING: u32 = 1 << (41 - 32);
}

/// Flags of the OPEN reply (`fuse_open_out.open_flags`).
pub mod open_flag {
    pub const DIRECT_IO: u32 = 1 << 0;
    pub const PARALLEL_DIRECT_WRITES: u32 = 1 << 6;
}

/// Bits of `fuse_setattr_in.valid`.
pub mod fattr {
    pub const MODE: u32 = 1 << 0;
    pub const UID: u32 = 1 << 1;
    pub const GID: u32 = 1 << 2;
    pub const SIZE: u32 = 1 << 3;
    pub const ATIME: u32 = 1 << 4;
    pub const MTIME: u32 = 1 << 5;
    pub const ATIME_NOW: u32 = 1 << 7;
    pub const MTIME_NOW: u32 = 1 << 8;
    pub const CTIME: u32 = 1 << 10;
}

/// `fallocate(2)` mode bits as the kernel forwards them.
pub mod falloc {
    pub const KEEP_SIZE: u32 = 0x01;
    pub const PUNCH_HOLE: u32 = 0x02;
}

/// A reader over a request body in native byte order; every getter returns `None` past the end.
pub struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Cursor { bytes, at: 0 }
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let slice = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(slice)
    }

    pub fn u32(&mut self) -> Option<u32> {
        Some(u32::from_ne_bytes(self.take(4)?.try_into().ok()?))
    }

    pub fn u64(&mut self) -> Option<u64> {
        Some(u64::from_ne_bytes(self.take(8)?.try_into().ok()?))
    }

    pub fn skip(&mut self, n: usize) -> Option<()> {
        self.take(n).map(|_| ())
    }
}

/// `struct fuse_in_header`.
#[derive(Clone, Copy, Debug)]
pub struct InHeader {
    pub len: u32,
    pub opcode: u32,
    pub unique: u64,
    pub nodeid: u64,
}

impl InHeader {
    pub fn parse(bytes: &[u8]) -> Option<InHeader> {
        let mut c = Cursor::new(bytes);
        let len = c.u32()?;
        let opcode = c.u32()?;
        let unique = c.u64()?;
        let nodeid = c.u64()?;
        // uid, gid, pid, total_extlen and padding are not needed: permissions are checked by
        // the kernel (default_permissions) and no extension is ever requested.
        c.skip(16)?;
        Some(InHeader {
            len,
            opcode,
            unique,
            nodeid,
        })
    }
}

/// `struct fuse_init_in`; `flags2` is present only when the kernel sets FUSE_INIT_EXT (7.36+)
/// and is zero otherwise.
#[derive(Clone, Copy, Debug)]
pub struct InitIn {
    pub major: u32,
    pub minor: u32,
    pub max_readahead: u32,
    pub flags: u32,
    pub flags2: u32,
}

impl InitIn {
    pub fn parse(body: &[u8]) -> Option<InitIn> {
        let mut c = Cursor::new(body);
        let (major, minor, max_readahead, flags) = (c.u32()?, c.u32()?, c.u32()?, c.u32()?);
        let flags2 = if flags & init_flag::INIT_EXT != 0 {
            c.u32().unwrap_or(0)
        } else {
            0
        };
        Some(InitIn {
            major,
            minor,
            max_readahead,
            flags,
            flags2,
        })
    }
}

/// `struct fuse_read_in`, also the body of READDIR.
#[derive(Clone, Copy, Debug)]
pub struct ReadIn {
    pub offset: u64,
    pub size: u32,
}

impl ReadIn {
    pub fn parse(body: &[u8]) -> Option<ReadIn> {
        if body.len() < READ_IN_SIZE {
            return None;
        }
        let mut c = Cursor::new(body);
        c.skip(8)?;
        let offset = c.u64()?;
        let size = c.u32()?;
        Some(ReadIn { offset, size })
    }
}

/// `struct fuse_write_in`; the payload follows it.
#[derive(Clone, Copy, Debug)]
pub struct WriteIn {
    pub offset: u64,
    pub size: u32,
}

impl WriteIn {
    pub fn parse(body: &[u8]) -> Option<WriteIn> {
        if body.len() < WRITE_IN_SIZE {
            return None;
        }
        let mut c = Cursor::new(body);
        c.skip(8)?;
        let offset = c.u64()?;
        let size = c.u32()?;
        Some(WriteIn { offset, size })
    }
}

/// `struct fuse_setattr_in`, the fields this file system looks at.
#[derive(Clone, Copy, Debug)]
pub struct SetattrIn {
    pub valid: u32,
    pub size: u64,
    pub atime: u64,
    pub mtime: u64,
    pub atimensec: u32,
    pub mtimensec: u32,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
}

impl SetattrIn {
    pub fn parse(body: &[u8]) -> Option<SetattrIn> {
        if body.len() < SETATTR_IN_SIZE {
            return None;
        }
        let mut c = Cursor::new(body);
        let valid = c.u32()?;
        c.skip(4 + 8)?;
        let size = c.u64()?;
        c.skip(8)?;
        let atime = c.u64()?;
        let mtime = c.u64()?;
        c.skip(8)?;
        let atimensec = c.u32()?;
        let mtimensec = c.u32()?;
        c.skip(4)?;
        let mode = c.u32()?;
        c.skip(4)?;
        let uid = c.u32()?;
        let gid = c.u32()?;
        Some(SetattrIn {
            valid,
            size,
            atime,
            mtime,
            atimensec,
            mtimensec,
            mode,
            uid,
            gid,
        })
    }
}

/// `struct fuse_fallocate_in`.
#[derive(Clone, Copy, Debug)]
pub struct FallocateIn {
    pub offset: u64,
    pub length: u64,
    pub mode: u32,
}

impl FallocateIn {
    pub fn parse(body: &[u8]) -> Option<FallocateIn> {
        if body.len() < FALLOCATE_IN_SIZE {
            return None;
        }
        let mut c = Cursor::new(body);
        c.skip(8)?;
        Some(FallocateIn {
            offset: c.u64()?,
            length: c.u64()?,
            mode: c.u32()?,
        })
    }
}

/// The first `u32` of a body: `fuse_open_in.flags` and `fuse_access_in.mask` both sit there.
pub fn first_u32(body: &[u8], struct_size: usize) -> Option<u32> {
    if body.len() < struct_size {
        return None;
    }
    Cursor::new(body).u32()
}

/// A growable byte buffer with native-endian field writers.
#[derive(Default)]
pub struct Out(pub Vec<u8>);

impl Out {
    pub fn with_capacity(n: usize) -> Self {
        Out(Vec::with_capacity(n))
    }

    pub fn u16(&mut self, v: u16) -> &mut Self {
        self.0.extend_from_slice(&v.to_ne_bytes());
        self
    }

    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_ne_bytes());
        self
    }

    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_ne_bytes());
        self
    }

    pub fn zeros(&mut self, n: usize) -> &mut Self {
        self.0.resize(self.0.len() + n, 0);
        self
    }
}

/// `struct fuse_out_header`.
pub fn out_header(len: u32, error: i32, unique: u64) -> [u8; OUT_HEADER_SIZE] {
    let mut h = [0u8; OUT_HEADER_SIZE];
    h[0..4].copy_from_slice(&len.to_ne_bytes());
    h[4..8].copy_from_slice(&error.to_ne_bytes());
    h[8..16].copy_from_slice(&unique.to_ne_bytes());
    h
}

/// The attributes of one node, as `struct fuse_attr` carries them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attr {
    pub ino: u64,
    pub size: u64,
    pub blocks: u64,
    pub atime: (u64, u32),
    pub mtime: (u64, u32),
    pub ctime: (u64, u32),
    pub mode: u32,
    pub nlink: u32,
    pub uid: u32,
    pub gid: u32,
    pub blksize: u32,
}

impl Attr {
    /// Appends `struct fuse_attr` (88 bytes). `rdev` and `flags` are zero: neither node is a
    /// device node, a submount or a DAX file.
    pub fn encode(&self, out: &mut Out) {
        out.u64(self.ino)
            .u64(self.size)
            .u64(self.blocks)
            .u64(self.atime.0)
            .u64(self.mtime.0)
            .u64(self.ctime.0)
            .u32(self.atime.1)
            .u32(self.mtime.1)
            .u32(self.ctime.1)
            .u32(self.mode)
            .u32(self.nlink)
            .u32(self.uid)
            .u32(self.gid)
            .u32(0)
            .u32(self.blksize)
            .u32(0);
    }
}

/// Splits a timeout into the seconds and nanoseconds fields the protocol uses.
pub const fn valid(seconds: u64) -> (u64, u32) {
    (seconds, 0)
}

/// `struct fuse_entry_out` (128 bytes). The generation is always zero because node ids are
/// fixed and never reused.
pub fn entry_out(attr: &Attr, entry_valid: (u64, u32), attr_valid: (u64, u32)) -> Vec<u8> {
    let mut out = Out::with_capacity(ENTRY_OUT_SIZE);
    out.u64(attr.ino)
        .u64(0)
        .u64(entry_valid.0)
        .u64(attr_valid.0)
        .u32(entry_valid.1)
        .u32(attr_valid.1);
    attr.encode(&mut out);
    out.0
}

/// `struct fuse_attr_out` (104 bytes).
pub fn attr_out(attr: &Attr, attr_valid: (u64, u32)) -> Vec<u8> {
    let mut out = Out::with_capacity(ATTR_OUT_SIZE);
    out.u64(attr_valid.0).u32(attr_valid.1).u32(0);
    attr.encode(&mut out);
    out.0
}

/// `struct fuse_open_out` (16 bytes).
pub fn open_out(fh: u64, open_flags: u32) -> Vec<u8> {
    let mut out = Out::with_capacity(OPEN_OUT_SIZE);
    out.u64(fh).u32(open_flags).u32(0);
    out.0
}

/// `struct fuse_write_out` (8 bytes).
pub fn write_out(size: u32) -> Vec<u8> {
    let mut out = Out::with_capacity(WRITE_OUT_SIZE);
    out.u32(size).u32(0);
    out.0
}

/// The file-system-wide numbers `struct fuse_kstatfs` carries.
#[derive(Clone, Copy, Debug)]
pub struct Statfs {
    pub blocks: u64,
    pub bfree: u64,
    pub bavail: u64,
    pub files: u64,
    pub ffree: u64,
    pub bsize: u32,
    pub namelen: u32,
    pub frsize: u32,
}

/// `struct fuse_statfs_out` (80 bytes).
pub fn statfs_out(s: &Statfs) -> Vec<u8> {
    let mut out = Out::with_capacity(STATFS_OUT_SIZE);
    out.u64(s.blocks)
        .u64(s.bfree)
        .u64(s.bavail)
        .u64(s.files)
        .u64(s.ffree)
        .u32(s.bsize)
        .u32(s.namelen)
        .u32(s.frsize)
        .u32(0)
        .zeros(6 * 4);
    out.0
}

/// The negotiated values of an INIT reply.
#[derive(Clone, Copy, Debug)]
pub struct InitOut {
    pub minor: u32,
    pub max_readahead: u32,
    pub flags: u32,
    /// Sent only with FUSE_INIT_EXT in `flags`.
    pub flags2: u32,
    pub max_background: u16,
    pub congestion_threshold: u16,
    pub max_write: u32,
    pub max_pages: u16,
}

/// `struct fuse_init_out`: 64 bytes, or the 24-byte 7.22 layout for older kernels.
///
/// The fields after `max_write` are `time_gran` (1: timestamps are kept to the nanosecond),
/// `max_pages`, `map_alignment` (0: it only matters for DAX), `flags2` (FUSE_OVER_IO_URING at
/// most) and seven unused words.
pub fn init_out(init: &InitOut, kernel_minor: u32) -> Vec<u8> {
    let mut out = Out::with_capacity(INIT_OUT_SIZE);
    out.u32(KERNEL_VERSION)
        .u32(init.minor)
        .u32(init.max_readahead)
        .u32(init.flags)
        .u16(init.max_background)
        .u16(init.congestion_threshold)
        .u32(init.max_write);
    if kernel_minor >= INIT_OUT_FULL_SIZE_MINOR {
        out.u32(1)
            .u16(init.max_pages)
            .u16(0)
            .u32(init.flags2)
            .zeros(7 * 4);
    }
    out.0
}

/// Rounds a directory record length up to 8 bytes (FUSE_DIRENT_ALIGN).
pub fn dirent_size(name_len: usize) -> usize {
    (DIRENT_HEADER_SIZE + name_len + 7) & !7
}

/// Appends one `struct fuse_dirent` with its name and zero padding.
pub fn dirent(out: &mut Out, ino: u64, next_offset: u64, kind: u32, name: &[u8]) {
    let start = out.0.len();
    out.u64(ino)
        .u64(next_offset)
        .u32(name.len() as u32)
        .u32(kind);
    out.0.extend_from_slice(name);
    let padded = start + dirent_size(name.len());
    out.0.resize(padded, 0);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr() -> Attr {
        Attr {
            ino: 2,
            size: 4096,
            blocks: 8,
            atime: (1, 2),
            mtime: (3, 4),
            ctime: (5, 6),
            mode: 0o100644,
            nlink: 1,
            uid: 0,
            gid: 0,
            blksize: 4096,
        }
    }

    #[test]
    fn encoded_sizes_match_the_c_header() {
        let mut a = Out::default();
        attr().encode(&mut a);
        assert_eq!(a.0.len(), ATTR_SIZE);
        assert_eq!(entry_out(&attr(), valid(1), valid(1)).len(), ENTRY_OUT_SIZE);
        assert_eq!(attr_out(&attr(), valid(1)).len(), ATTR_OUT_SIZE);
        assert_eq!(open_out(0, 0).len(), OPEN_OUT_SIZE);
        assert_eq!(write_out(0).len(), WRITE_OUT_SIZE);
        let s = Statfs {
            blocks: 1,
            bfree: 0,
            bavail: 0,
            files: 1,
            ffree: 0,
            bsize: 4096,
            namelen: 255,
            frsize: 4096,
        };
        assert_eq!(statfs_out(&s).len(), STATFS_OUT_SIZE);
        let init = InitOut {
            minor: KERNEL_MINOR_VERSION,
            max_readahead: 0,
            flags: 0,
            flags2: 0,
            max_background: 0,
            congestion_threshold: 0,
            max_write: 0,
            max_pages: 0,
        };
        assert_eq!(init_out(&init, 38).len(), INIT_OUT_SIZE);
        assert_eq!(init_out(&init, 22).len(), INIT_OUT_COMPAT_22_SIZE);
        assert_eq!(out_header(0, 0, 0).len(), OUT_HEADER_SIZE);
    }

    #[test]
    fn dirents_are_padded_to_eight_bytes() {
        let mut out = Out::default();
        dirent(&mut out, 1, 1, 4, b".");
        assert_eq!(out.0.len(), 32);
        dirent(&mut out, 2, 2, 8, b"disk-image");
        assert_eq!(out.0.len(), 32 + 40);
        assert_eq!(dirent_size(8), 32);
        assert_eq!(dirent_size(9), 40);
    }

    #[test]
    fn short_bodies_do_not_parse() {
        assert!(InHeader::parse(&[0u8; IN_HEADER_SIZE - 1]).is_none());
        assert!(InHeader::parse(&[0u8; IN_HEADER_SIZE]).is_some());
        assert!(ReadIn::parse(&[0u8; READ_IN_SIZE - 1]).is_none());
        assert!(WriteIn::parse(&[0u8; 24]).is_none());
        assert!(SetattrIn::parse(&[0u8; SETATTR_IN_SIZE - 8]).is_none());
        assert!(FallocateIn::parse(&[0u8; 31]).is_none());
        assert!(InitIn::parse(&[0u8; 12]).is_none());
        let mut ext = Out::default();
        ext.u32(7)
            .u32(45)
            .u32(0)
            .u32(init_flag::INIT_EXT)
            .u32(1 << 9);
        assert_eq!(
            InitIn::parse(&ext.0).unwrap().flags2,
            init_flag2::OVER_IO_URING
        );
        let mut plain = Out::default();
        plain.u32(7).u32(45).u32(0).u32(0).u32(1 << 9);
        assert_eq!(
            InitIn::parse(&plain.0).unwrap().flags2,
            0,
            "flags2 without INIT_EXT"
        );
        assert!(first_u32(&[0u8; 4], OPEN_IN_SIZE).is_none());
    }

    #[test]
    fn read_in_fields_sit_where_the_kernel_puts_them() {
        let mut body = Out::default();
        body.u64(7)
            .u64(0x1234_5000)
            .u32(65536)
            .u32(0)
            .u64(0)
            .u32(0)
            .u32(0);
        let r = ReadIn::parse(&body.0).unwrap();
        assert_eq!(r.offset, 0x1234_5000);
        assert_eq!(r.size, 65536);
    }

    #[test]
    fn setattr_in_fields_sit_where_the_kernel_puts_them() {
        let mut body = Out::default();
        body.u32(fattr::SIZE | fattr::MTIME) // valid
            .u32(0) // padding
            .u64(9) // fh
            .u64(1 << 20) // size
            .u64(0) // lock_owner
            .u64(11) // atime
            .u64(12) // mtime
            .u64(13) // ctime
            .u32(21) // atimensec
            .u32(22) // mtimensec
            .u32(23) // ctimensec
            .u32(0o100600) // mode
            .u32(0) // unused4
            .u32(1000) // uid
            .u32(1001) // gid
            .u32(0); // unused5
        assert_eq!(body.0.len(), SETATTR_IN_SIZE);
        let s = SetattrIn::parse(&body.0).unwrap();
        assert_eq!(s.valid, fattr::SIZE | fattr::MTIME);
        assert_eq!(s.size, 1 << 20);
        assert_eq!((s.atime, s.atimensec), (11, 21));
        assert_eq!((s.mtime, s.mtimensec), (12, 22));
        assert_eq!(s.mode, 0o100600);
        assert_eq!((s.uid, s.gid), (1000, 1001));
    }
}
