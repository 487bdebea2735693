//! The messages between a program's threads and the cosim controller.
//!
//! Each thread of a program under `storsim cosim` opens its own `SOCK_SEQPACKET` connection to
//! the controller's Unix socket, so one packet is one message and a thread that waits for a reply
//! reads only its own. A message is a fixed header ([`HEADER_BYTES`], native byte order: both
//! ends run on the same machine) and, for some kinds, a payload of path bytes. Messages whose
//! [`Kind::wants_reply`] is true are answered with a [`Reply`]; the others are one-way, which
//! keeps the calls that merely report a state change cheap.

/// Environment variables through which the controller configures the library in every process
/// it starts (children inherit them).
pub mod env {
    /// Path of the controller's Unix socket.
    pub const SOCKET: &str = "STORSIM_COSIM_SOCKET";
    /// Path of the file holding the shared clock page.
    pub const CLOCK: &str = "STORSIM_COSIM_CLOCK";
    /// Canonical directory whose files are on the simulated device (may be absent).
    pub const DIR: &str = "STORSIM_COSIM_DIR";
    /// Canonical path of the image file mapped one to one onto the device (may be absent).
    pub const IMAGE: &str = "STORSIM_COSIM_IMAGE";
    /// `1` to pass fsync and friends through to the real file system as well.
    pub const REAL_SYNC: &str = "STORSIM_COSIM_REAL_SYNC";
}

/// What a message says. The fields of [`Msg`] that each kind uses are listed with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Kind {
    /// A program image started (the library's constructor ran): `a` = parent pid.
    ProcStart = 1,
    /// A process was forked (the child's fork handler): `a` = parent pid.
    ForkChild = 2,
    /// The sender is about to create a thread, which counts as running from now on.
    ThreadStart = 3,
    /// The sending thread ends (or a thread announced by `ThreadStart` was not created);
    /// `r_ns` = real time.
    ThreadExit = 4,
    /// A file under the device was opened: payload = its canonical path. Reply: the file id.
    Open = 5,
    /// A device request: `a` = [`IoOp`], `b` = file id, `c` = byte offset in the file,
    /// `d` = length in bytes, `r_ns` = real time at which the call entered the library.
    /// Replied to when the device has completed it.
    Io = 6,
    /// Sleep: `a` = 1 if `b` is an absolute virtual time, 0 if it is a duration (ns).
    /// `r_ns` = real time of entry. Replied to when the virtual clock reaches the wake-up.
    Sleep = 7,
    /// The thread blocks in waitpid and friends (`a` = 0) or in pthread_join (`a` = 1): it no
    /// longer runs until a child of its process ends, or a thread of its process ends;
    /// `r_ns` = real time of entry.
    WaitEnter = 8,
    /// The thread returned from the wait.
    WaitLeave = 9,
    /// The thread got its reply and runs again from `r_ns` (real time).
    Resumed = 10,
    /// A file under the device was unlinked: payload = its canonical path.
    Unlink = 11,
    /// A file under the device was renamed: payload = old path, NUL, new path.
    Rename = 12,
    /// File `b` was truncated to `c` bytes.
    Truncate = 13,
    /// Space for bytes [`c`, `c` + `d`) of file `b` was allocated (fallocate).
    Allocate = 14,
    /// Bytes [`c`, `c` + `d`) of file `b` were punched out (fallocate with PUNCH_HOLE).
    Punch = 15,
    /// The library saw something it cannot model: payload = the text, printed once.
    Warn = 16,
}

impl Kind {
    pub fn from_u32(v: u32) -> Option<Kind> {
        use Kind::*;
        Some(match v {
            1 => ProcStart,
            2 => ForkChild,
            3 => ThreadStart,
            4 => ThreadExit,
            5 => Open,
            6 => Io,
            7 => Sleep,
            8 => WaitEnter,
            9 => WaitLeave,
            10 => Resumed,
            11 => Unlink,
            12 => Rename,
            13 => Truncate,
            14 => Allocate,
            15 => Punch,
            16 => Warn,
            _ => return None,
        })
    }

    /// Whether the sender waits for a [`Reply`]. Registrations and thread starts are answered
    /// so that the controller has counted the new runner before the program goes on; opens
    /// return the file id; I/O and sleeps return when their virtual instant comes.
    pub fn wants_reply(self) -> bool {
        matches!(
            self,
            Kind::ProcStart
                | Kind::ForkChild
                | Kind::ThreadStart
                | Kind::Open
                | Kind::Io
                | Kind::Sleep
        )
    }
}

/// The operation of an [`Kind::Io`] message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u64)]
pub enum IoOp {
    Read = 0,
    Write = 1,
    /// fsync, fdatasync or sync_file_range: flush the device's write cache.
    Flush = 2,
}

impl IoOp {
    pub fn from_u64(v: u64) -> Option<IoOp> {
        match v {
            0 => Some(IoOp::Read),
            1 => Some(IoOp::Write),
            2 => Some(IoOp::Flush),
            _ => None,
        }
    }
}

/// A message header. `pid` and `tid` name the sending thread; `a` to `d` depend on the kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Msg {
    pub kind: Kind,
    pub pid: i32,
    pub tid: i32,
    pub r_ns: u64,
    pub a: u64,
    pub b: u64,
    pub c: u64,
    pub d: u64,
}

/// Bytes of an encoded header.
pub const HEADER_BYTES: usize = 56;
/// The longest payload: two paths of PATH_MAX bytes and their separator.
pub const MAX_PAYLOAD_BYTES: usize = 2 * 4096 + 1;
/// The longest message.
pub const MAX_MSG_BYTES: usize = HEADER_BYTES + MAX_PAYLOAD_BYTES;
/// Bytes of an encoded reply.
pub const REPLY_BYTES: usize = 16;

impl Msg {
    pub fn new(kind: Kind, pid: i32, tid: i32) -> Msg {
        Msg {
            kind,
            pid,
            tid,
            r_ns: 0,
            a: 0,
            b: 0,
            c: 0,
            d: 0,
        }
    }

    /// Writes the header and `payload` into `out` and returns the message's length, or `None`
    /// when they do not fit (the payload is longer than [`MAX_PAYLOAD_BYTES`] or `out` is short).
    pub fn encode(&self, payload: &[u8], out: &mut [u8]) -> Option<usize> {
        let len = HEADER_BYTES + payload.len();
        if payload.len() > MAX_PAYLOAD_BYTES || out.len() < len {
            return None;
        }
        out[0..4].copy_from_slice(&(self.kind as u32).to_ne_bytes());
        out[4..8].copy_from_slice(&self.pid.to_ne_bytes());
        out[8..12].copy_from_slice(&self.tid.to_ne_bytes());
        out[12..16].copy_from_slice(&0u32.to_ne_bytes());
        for (i, v) in [self.r_ns, self.a, self.b, self.c, self.d]
            .iter()
            .enumerate()
        {
            out[16 + 8 * i..24 + 8 * i].copy_from_slice(&v.to_ne_bytes());
        }
        out[HEADER_BYTES..len].copy_from_slice(payload);
        Some(len)
    }

    /// Reads a message; `None` for a short packet or an unknown kind (the controller closes
    /// such a connection).
    pub fn decode(buf: &[u8]) -> Option<(Msg, &[u8])> {
        if buf.len() < HEADER_BYTES || buf.len() > MAX_MSG_BYTES {
            return None;
        }
        let u32_at = |i: usize| u32::from_ne_bytes(buf[i..i + 4].try_into().unwrap());
        let u64_at = |i: usize| u64::from_ne_bytes(buf[i..i + 8].try_into().unwrap());
        let kind = Kind::from_u32(u32_at(0))?;
        let msg = Msg {
            kind,
            pid: u32_at(4) as i32,
            tid: u32_at(8) as i32,
            r_ns: u64_at(16),
            a: u64_at(24),
            b: u64_at(32),
            c: u64_at(40),
            d: u64_at(48),
        };
        Some((msg, &buf[HEADER_BYTES..]))
    }
}

/// The answer to a message that wants one: `status` is 0 or a negative errno the library
/// returns to the program; `value` is the file id of an `Open`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reply {
    pub status: i64,
    pub value: u64,
}

impl Reply {
    pub fn encode(&self) -> [u8; REPLY_BYTES] {
        let mut out = [0u8; REPLY_BYTES];
        out[0..8].copy_from_slice(&self.status.to_ne_bytes());
        out[8..16].copy_from_slice(&self.value.to_ne_bytes());
        out
    }

    pub fn decode(buf: &[u8]) -> Option<Reply> {
        if buf.len() != REPLY_BYTES {
            return None;
        }
        Some(Reply {
            status: i64::from_ne_bytes(buf[0..8].try_into().unwrap()),
            value: u64::from_ne_bytes(buf[8..16].try_into().unwrap()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_read_back_as_written() {
        let mut m = Msg::new(Kind::Io, 1234, 1240);
        m.r_ns = 99;
        m.a = IoOp::Write as u64;
        m.b = 7;
        m.c = 1 << 40;
        m.d = 4096;
        let mut buf = [0u8; MAX_MSG_BYTES];
        let n = m.encode(b"/x/y", &mut buf).unwrap();
        let (back, payload) = Msg::decode(&buf[..n]).unwrap();
        assert_eq!(back, m);
        assert_eq!(payload, b"/x/y");
        let r = Reply {
            status: -28,
            value: 5,
        };
        assert_eq!(Reply::decode(&r.encode()), Some(r));
    }

    #[test]
    fn bad_packets_are_refused() {
        let mut buf = [0u8; MAX_MSG_BYTES];
        let n = Msg::new(Kind::Sleep, 1, 1).encode(&[], &mut buf).unwrap();
        assert!(Msg::decode(&buf[..n - 1]).is_none());
        buf[0..4].copy_from_slice(&999u32.to_ne_bytes());
        assert!(Msg::decode(&buf[..n]).is_none());
        let long = vec![0u8; MAX_PAYLOAD_BYTES + 1];
        assert!(Msg::new(Kind::Warn, 1, 1).encode(&long, &mut buf).is_none());
        assert!(Reply::decode(&[0u8; 15]).is_none());
    }
}
