//! Wire constants of the NBD protocol and small big-endian helpers.
//!
//! Names follow `doc/proto.md` of the NBD project so that a reader can look each one up there.

/// `NBDMAGIC`, the first eight bytes the server sends.
pub(crate) const NBD_MAGIC: u64 = 0x4e42_444d_4147_4943;
/// `IHAVEOPT`, sent by the server after `NBDMAGIC` and by the client before every option.
pub(crate) const IHAVEOPT: u64 = 0x4948_4156_454f_5054;
/// Magic number at the start of every option reply.
pub(crate) const OPTION_REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
/// Magic number at the start of every transmission request.
pub(crate) const REQUEST_MAGIC: u32 = 0x2560_9513;
/// Magic number at the start of every simple reply.
pub(crate) const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;

/// Handshake flag: the server speaks fixed newstyle.
pub(crate) const FLAG_FIXED_NEWSTYLE: u16 = 1 << 0;
/// Handshake flag: the server can omit the 124 zero bytes after `NBD_OPT_EXPORT_NAME`.
pub(crate) const FLAG_NO_ZEROES: u16 = 1 << 1;
/// Client flag: the client speaks fixed newstyle.
pub(crate) const FLAG_C_FIXED_NEWSTYLE: u32 = 1 << 0;
/// Client flag: the client does not want the 124 zero bytes.
pub(crate) const FLAG_C_NO_ZEROES: u32 = 1 << 1;

pub(crate) const OPT_EXPORT_NAME: u32 = 1;
pub(crate) const OPT_ABORT: u32 = 2;
pub(crate) const OPT_LIST: u32 = 3;
pub(crate) const OPT_STARTTLS: u32 = 5;
pub(crate) const OPT_INFO: u32 = 6;
pub(crate) const OPT_GO: u32 = 7;
pub(crate) const OPT_STRUCTURED_REPLY: u32 = 8;
pub(crate) const OPT_LIST_META_CONTEXT: u32 = 9;
pub(crate) const OPT_SET_META_CONTEXT: u32 = 10;
pub(crate) const OPT_EXTENDED_HEADERS: u32 = 11;

pub(crate) const REP_ACK: u32 = 1;
pub(crate) const REP_SERVER: u32 = 2;
pub(crate) const REP_INFO: u32 = 3;
pub(crate) const REP_ERR_UNSUP: u32 = 0x8000_0001;
pub(crate) const REP_ERR_INVALID: u32 = 0x8000_0003;
pub(crate) const REP_ERR_UNKNOWN: u32 = 0x8000_0006;
pub(crate) const REP_ERR_SHUTDOWN: u32 = 0x8000_0007;

pub(crate) const INFO_EXPORT: u16 = 0;
pub(crate) const INFO_NAME: u16 = 1;
pub(crate) const INFO_DESCRIPTION: u16 = 2;
pub(crate) const INFO_BLOCK_SIZE: u16 = 3;

pub(crate) const TFLAG_HAS_FLAGS: u16 = 1 << 0;
pub(crate) const TFLAG_READ_ONLY: u16 = 1 << 1;
pub(crate) const TFLAG_SEND_FLUSH: u16 = 1 << 2;
pub(crate) const TFLAG_SEND_FUA: u16 = 1 << 3;
pub(crate) const TFLAG_SEND_TRIM: u16 = 1 << 5;
pub(crate) const TFLAG_SEND_WRITE_ZEROES: u16 = 1 << 6;
pub(crate) const TFLAG_CAN_MULTI_CONN: u16 = 1 << 8;

pub(crate) const CMD_READ: u16 = 0;
pub(crate) const CMD_WRITE: u16 = 1;
pub(crate) const CMD_DISC: u16 = 2;
pub(crate) const CMD_FLUSH: u16 = 3;
pub(crate) const CMD_TRIM: u16 = 4;
pub(crate) const CMD_CACHE: u16 = 5;
pub(crate) const CMD_WRITE_ZEROES: u16 = 6;
pub(crate) const CMD_BLOCK_STATUS: u16 = 7;
pub(crate) const CMD_RESIZE: u16 = 8;

pub(crate) const CMD_FLAG_FUA: u16 = 1 << 0;
pub(crate) const CMD_FLAG_NO_HOLE: u16 = 1 << 1;

/// Length of a request header in the compact (non-extended) form, the only one we accept.
pub(crate) const REQUEST_HEADER_LEN: usize = 28;
/// Length of an option header: magic, option and data length.
pub(crate) const OPTION_HEADER_LEN: usize = 16;
/// Length of a simple reply header.
pub(crate) const SIMPLE_REPLY_LEN: usize = 16;

pub(crate) fn u16_at<const N: usize>(buf: &[u8; N], at: usize) -> u16 {
    u16::from_be_bytes([buf[at], buf[at + 1]])
}

pub(crate) fn u32_at<const N: usize>(buf: &[u8; N], at: usize) -> u32 {
    u32::from_be_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]])
}

pub(crate) fn u64_at<const N: usize>(buf: &[u8; N], at: usize) -> u64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&buf[at..at + 8]);
    u64::from_be_bytes(bytes)
}

/// Reads big-endian fields from untrusted option data; every read is checked and yields `None`
/// past the end instead of panicking.
pub(crate) struct Cursor<'a> {
    rest: &'a [u8],
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Cursor { rest: bytes }
    }

    pub(crate) fn u16(&mut self) -> Option<u16> {
        let (head, rest) = self.rest.split_first_chunk::<2>()?;
        self.rest = rest;
        Some(u16::from_be_bytes(*head))
    }

    pub(crate) fn u32(&mut self) -> Option<u32> {
        let (head, rest) = self.rest.split_first_chunk::<4>()?;
        self.rest = rest;
        Some(u32::from_be_bytes(*head))
    }

    pub(crate) fn bytes(&mut self, len: usize) -> Option<&'a [u8]> {
        if len > self.rest.len() {
            return None;
        }
        let (head, rest) = self.rest.split_at(len);
        self.rest = rest;
        Some(head)
    }

    pub(crate) fn remaining(&self) -> usize {
        self.rest.len()
    }
}

/// Appends one fixed-newstyle option reply (header and data) to `out`.
pub(crate) fn push_option_reply(out: &mut Vec<u8>, option: u32, reply: u32, data: &[u8]) {
    out.extend_from_slice(&OPTION_REPLY_MAGIC.to_be_bytes());
    out.extend_from_slice(&option.to_be_bytes());
    out.extend_from_slice(&reply.to_be_bytes());
    // Data is bounded by the callers (names and descriptions are at most 4096 bytes, checked at
    // bind time), so the length always fits in 32 bits; saturating keeps this total anyway.
    let len = u32::try_from(data.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(data);
}

/// Encodes a simple reply header.
pub(crate) fn simple_reply(cookie: u64, error: u32) -> [u8; SIMPLE_REPLY_LEN] {
    let mut header = [0u8; SIMPLE_REPLY_LEN];
    header[0..4].copy_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    header[4..8].copy_from_slice(&error.to_be_bytes());
    header[8..16].copy_from_slice(&cookie.to_be_bytes());
    header
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_refuses_reads_past_the_end() {
        let mut c = Cursor::new(&[0, 0, 0, 3, b'a', b'b']);
        assert_eq!(c.u32(), Some(3));
        assert_eq!(c.bytes(3), None);
        assert_eq!(c.remaining(), 2);
        assert_eq!(c.u16(), Some(0x6162));
        assert_eq!(c.u16(), None);
        assert_eq!(c.u32(), None);
    }

    #[test]
    fn simple_reply_layout() {
        let h = simple_reply(0x0102_0304_0506_0708, 22);
        assert_eq!(u32_at(&h, 0), SIMPLE_REPLY_MAGIC);
        assert_eq!(u32_at(&h, 4), 22);
        assert_eq!(u64_at(&h, 8), 0x0102_0304_0506_0708);
    }
}
