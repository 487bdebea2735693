//! The transmission phase: receiving requests, checking them, and handing the valid ones to the
//! handler together with a `Reply`.
//!
//! The receiving side of a connection is an [`Intake`]: the bytes received and not yet parsed,
//! and how far the request being received has come. Either the connection's reader thread or a
//! thread polling the connection (see `handover.rs`) drives it, whichever holds it, so a request
//! whose header one of them received is finished by the other, and both go through the same
//! checks.

use std::io;
use std::ops::ControlFlow;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use crate::connection::{Connection, Reply};
use crate::error::ConnError;
use crate::proto::*;
use crate::stream::Stream;
use crate::{Command, Errno, Handler, Request, ServerConfig, MAX_PAYLOAD};

/// Size of a connection's receive buffer: large enough to take many request headers (and small
/// payloads) per system call, small enough not to matter per connection.
pub(crate) const RECEIVE_BUFFER: usize = 64 * 1024;

/// How the transmission phase ended.
#[derive(Debug)]
pub(crate) enum End {
    /// The client sent `NBD_CMD_DISC`.
    Disconnect,
    /// The client closed the connection between requests without `NBD_CMD_DISC`.
    Eof,
    /// The server is shutting down.
    Shutdown,
    /// Writing a reply failed and shut the socket down; that failure was already logged.
    WriteFailed,
    /// The handler panicked; the connection is closed because its state is unknown.
    HandlerPanicked,
    /// The client broke the protocol or the socket failed.
    Error(ConnError),
}

/// A decoded request header.
#[derive(Debug, Clone, Copy)]
struct Header {
    magic: u32,
    flags: u16,
    kind: u16,
    cookie: u64,
    offset: u64,
    length: u32,
}

impl Header {
    fn parse(buf: &[u8; REQUEST_HEADER_LEN]) -> Header {
        Header {
            magic: u32_at(buf, 0),
            flags: u16_at(buf, 4),
            kind: u16_at(buf, 6),
            cookie: u64_at(buf, 8),
            offset: u64_at(buf, 16),
            length: u32_at(buf, 24),
        }
    }
}

/// Everything the request loop needs from the server.
pub(crate) struct Context<'a> {
    pub(crate) id: u64,
    pub(crate) config: &'a ServerConfig,
    pub(crate) handler: &'a dyn Handler,
    pub(crate) shutting_down: &'a AtomicBool,
}

/// What one side of a connection has received and served, counted as it goes.
#[derive(Default)]
pub(crate) struct Counters {
    bytes: AtomicU64,
    receives: AtomicU64,
    requests: AtomicU64,
}

impl Counters {
    pub(crate) fn snapshot(&self) -> crate::Served {
        crate::Served {
            bytes: self.bytes.load(Ordering::Relaxed),
            receives: self.receives.load(Ordering::Relaxed),
            requests: self.requests.load(Ordering::Relaxed),
        }
    }
}

/// The side driving an [`Intake`]: its socket and connection, where it counts, and whether it
/// may block (the reader thread while no poller serves the connection) or must return instead
/// of waiting (a poller, and the reader thread once a poller has taken over).
pub(crate) struct Side<'a> {
    pub(crate) ctx: &'a Context<'a>,
    pub(crate) conn: &'a Arc<Connection>,
    pub(crate) stream: &'a Stream,
    pub(crate) counters: &'a Counters,
    pub(crate) may_block: &'a dyn Fn() -> bool,
}

/// A request that passed the checks, with the bytes it holds in the in-flight budget.
#[derive(Clone, Copy)]
struct Checked {
    header: Header,
    command: Command,
    budget: u64,
}

/// How far the request being received has come.
enum Pending {
    /// Between requests: the next bytes are a request header.
    Header,
    /// A checked request waiting for room in the connection's in-flight byte budget.
    Admission(Checked),
    /// An admitted write whose payload is being received.
    Payload(Checked, Vec<u8>),
    /// A refused write whose payload is being read and dropped, to stay in step with the
    /// stream; its error reply goes out once the payload is gone.
    Discard {
        cookie: u64,
        errno: Errno,
        got: u32,
        length: u32,
    },
}

/// What a receive gave.
enum Fill {
    Bytes,
    /// Nothing has arrived, and the side may not wait.
    Nothing,
    /// The stream ended.
    Closed,
    Failed(io::Error),
}

/// The receiving side of a connection in transmission: bytes received and not yet parsed, and
/// the request being received. At most [`RECEIVE_BUFFER`] bytes are buffered, plus one write's
/// payload (at most [`MAX_PAYLOAD`], checked before anything is allocated).
pub(crate) struct Intake {
    buf: Box<[u8]>,
    /// The unparsed bytes are `buf[start..end]`.
    start: usize,
    end: usize,
    pending: Pending,
    /// Transmission has ended; nothing more is received.
    finished: bool,
}

impl Intake {
    /// An intake starting with `early`, the bytes the handshake's reader had already taken
    /// from the socket (a client may send requests before it has read the handshake's end).
    pub(crate) fn new(early: &[u8]) -> Intake {
        let mut buf = vec![0u8; RECEIVE_BUFFER.max(early.len())].into_boxed_slice();
        buf[..early.len()].copy_from_slice(early);
        Intake {
            buf,
            start: 0,
            end: early.len(),
            pending: Pending::Header,
            finished: false,
        }
    }

    pub(crate) fn is_finished(&self) -> bool {
        self.finished
    }

    fn buffered(&self) -> usize {
        self.end - self.start
    }

    /// Serves requests from the buffer and the socket until transmission ends (the reason is
    /// returned, and the intake is finished), or until the side would have to wait and may
    /// not, or has served `max_requests` (`None`; the next call, from either side, goes on
    /// where this one stopped). `served` counts the requests served, including those the
    /// server answered itself.
    pub(crate) fn run(
        &mut self,
        side: &Side<'_>,
        max_requests: usize,
        served: &mut usize,
    ) -> Option<End> {
        if self.finished {
            return None;
        }
        let end = self.serve(side, max_requests, served);
        if end.is_some() {
            self.finished = true;
        }
        end
    }

    /// Receives and acts on requests until `max_requests` are served, the side would have to
    /// wait, or the connection ends (returned).
    fn serve(&mut self, side: &Side<'_>, max_requests: usize, served: &mut usize) -> Option<End> {
        while *served < max_requests {
            let step = match std::mem::replace(&mut self.pending, Pending::Header) {
                Pending::Header => self.take_header(side, served),
                Pending::Admission(checked) => self.take_admission(side, checked, served),
                Pending::Payload(checked, data) => self.take_payload(side, checked, data, served),
                Pending::Discard {
                    cookie,
                    errno,
                    got,
                    length,
                } => self.take_discard(side, cookie, errno, got, length, served),
            };
            if let ControlFlow::Break(end) = step {
                return end;
            }
        }
        None
    }

    // The steps below are `serve`'s, one per state of `pending`, each called from it alone.
    // Each goes on (`Continue`) with `pending` set to where the request has come, or stops
    // `serve` with what it returns (`None`: nothing more can be done without waiting).

    /// Between requests: waits for room for another request in flight (if the side may
    /// wait), then receives and acts on the next request header.
    #[inline]
    fn take_header(&mut self, side: &Side<'_>, served: &mut usize) -> ControlFlow<Option<End>> {
        let config = side.ctx.config;
        // Backpressure: while the handler holds the maximum number of requests, the socket
        // is not read, so the client's sends block instead of our memory growing.
        if !side.conn.has_slot(config.max_in_flight) {
            if !(side.may_block)() {
                return ControlFlow::Break(None);
            }
            side.conn.wait_for_slot(config.max_in_flight);
        }
        if side.ctx.shutting_down.load(Ordering::Acquire) {
            return ControlFlow::Break(Some(End::Shutdown));
        }
        if self.buffered() < REQUEST_HEADER_LEN {
            return match self.fill(side) {
                Fill::Bytes => ControlFlow::Continue(()),
                Fill::Nothing => ControlFlow::Break(None),
                Fill::Closed => ControlFlow::Break(Some(self.header_end(side, None))),
                Fill::Failed(e) => ControlFlow::Break(Some(self.header_end(side, Some(e)))),
            };
        }
        let mut raw = [0u8; REQUEST_HEADER_LEN];
        raw.copy_from_slice(&self.buf[self.start..self.start + REQUEST_HEADER_LEN]);
        self.start += REQUEST_HEADER_LEN;
        match self.begin(side, Header::parse(&raw), served) {
            Some(end) => ControlFlow::Break(Some(end)),
            None => ControlFlow::Continue(()),
        }
    }

    /// A checked request waiting for room in the in-flight byte budget: once admitted, a
    /// write goes on to its payload and anything else to the handler.
    #[inline]
    fn take_admission(
        &mut self,
        side: &Side<'_>,
        checked: Checked,
        served: &mut usize,
    ) -> ControlFlow<Option<End>> {
        let max_bytes = side.ctx.config.max_in_flight_bytes;
        if !side.conn.try_admit(checked.budget, max_bytes) {
            if !(side.may_block)() {
                self.pending = Pending::Admission(checked);
                return ControlFlow::Break(None);
            }
            side.conn.admit(checked.budget, max_bytes);
        }
        if checked.command == Command::Write {
            let data = Vec::with_capacity(checked.header.length as usize);
            self.pending = Pending::Payload(checked, data);
        } else if let Some(end) = self.dispatch(side, checked, Vec::new(), served) {
            return ControlFlow::Break(Some(end));
        }
        ControlFlow::Continue(())
    }

    /// An admitted write's payload, `data` so far: takes what is buffered and receives the
    /// rest; the whole payload goes to the handler.
    #[inline]
    fn take_payload(
        &mut self,
        side: &Side<'_>,
        checked: Checked,
        mut data: Vec<u8>,
        served: &mut usize,
    ) -> ControlFlow<Option<End>> {
        let length = checked.header.length as usize;
        let take = self.buffered().min(length - data.len());
        data.extend_from_slice(&self.buf[self.start..self.start + take]);
        self.start += take;
        if data.len() < length {
            let fill = self.fill_payload(side, &mut data, length);
            let got = data.len() as u64;
            self.pending = Pending::Payload(checked, data);
            let error = match fill {
                Fill::Bytes => return ControlFlow::Continue(()),
                Fill::Nothing => return ControlFlow::Break(None),
                Fill::Closed => ConnError::Truncated {
                    what: "a write payload",
                    got,
                    expected: length as u64,
                },
                Fill::Failed(e) => ConnError::from_io(e, "a write payload"),
            };
            side.conn.release(checked.budget);
            return ControlFlow::Break(Some(End::Error(error)));
        }
        match self.dispatch(side, checked, data, served) {
            Some(end) => ControlFlow::Break(Some(end)),
            None => ControlFlow::Continue(()),
        }
    }

    /// A refused write's payload, `got` of its `length` bytes read so far: reads and drops
    /// the rest, then sends the refusal.
    #[inline]
    fn take_discard(
        &mut self,
        side: &Side<'_>,
        cookie: u64,
        errno: Errno,
        mut got: u32,
        length: u32,
        served: &mut usize,
    ) -> ControlFlow<Option<End>> {
        let take = self.buffered().min((length - got) as usize);
        self.start += take;
        got += take as u32;
        if got < length {
            let fill = self.fill(side);
            self.pending = Pending::Discard {
                cookie,
                errno,
                got,
                length,
            };
            let what = "a refused write's payload";
            let error = match fill {
                Fill::Bytes => return ControlFlow::Continue(()),
                Fill::Nothing => return ControlFlow::Break(None),
                Fill::Closed => ConnError::Truncated {
                    what,
                    got: u64::from(got),
                    expected: u64::from(length),
                },
                Fill::Failed(e) => ConnError::from_io(e, what),
            };
            return ControlFlow::Break(Some(End::Error(error)));
        }
        side.conn.send(cookie, errno.code(), &[]);
        count(side, served);
        ControlFlow::Continue(())
    }

    /// Acts on a request header: refuses what must be refused, answers what the server
    /// answers itself, and sets up the rest to be admitted.
    fn begin(&mut self, side: &Side<'_>, header: Header, served: &mut usize) -> Option<End> {
        if header.magic != REQUEST_MAGIC {
            return Some(End::Error(ConnError::BadRequestMagic(header.magic)));
        }
        let command = match header.kind {
            CMD_READ => Command::Read,
            CMD_WRITE => Command::Write,
            CMD_FLUSH => Command::Flush,
            CMD_TRIM => Command::Trim,
            CMD_WRITE_ZEROES => Command::WriteZeroes,
            CMD_DISC => return Some(End::Disconnect),
            CMD_CACHE | CMD_BLOCK_STATUS | CMD_RESIZE => {
                // Commands the protocol defines but we do not advertise. None of them carries
                // a payload without extended headers (which we refuse), so the stream stays in
                // step and the protocol's answer is EINVAL.
                side.conn.send(header.cookie, Errno::Inval.code(), &[]);
                count(side, served);
                return None;
            }
            other => return Some(End::Error(ConnError::UnknownCommand(other))),
        };
        if command == Command::Write && header.length > MAX_PAYLOAD {
            return Some(End::Error(ConnError::PayloadTooLarge(header.length)));
        }
        let config = side.ctx.config;
        if let Err(errno) = check(config, command, header.flags, header.offset, header.length) {
            if command == Command::Write {
                self.pending = Pending::Discard {
                    cookie: header.cookie,
                    errno,
                    got: 0,
                    length: header.length,
                };
            } else {
                side.conn.send(header.cookie, errno.code(), &[]);
                count(side, served);
            }
            return None;
        }
        if header.length == 0 && command != Command::Flush {
            // A zero-length read, write, trim or zero touches nothing; answering it here spares
            // every handler that corner case.
            side.conn.send(header.cookie, 0, &[]);
            count(side, served);
            return None;
        }
        let budget = match command {
            Command::Read | Command::Write => u64::from(header.length),
            _ => 0,
        };
        self.pending = Pending::Admission(Checked {
            header,
            command,
            budget,
        });
        None
    }

    /// Hands an admitted request to the handler.
    fn dispatch(
        &mut self,
        side: &Side<'_>,
        checked: Checked,
        data: Vec<u8>,
        served: &mut usize,
    ) -> Option<End> {
        let Checked {
            header,
            command,
            budget,
        } = checked;
        let request = Request {
            connection: side.ctx.id,
            cookie: header.cookie,
            command,
            offset: header.offset,
            length: header.length,
            fua: header.flags & CMD_FLAG_FUA != 0,
            no_hole: header.flags & CMD_FLAG_NO_HOLE != 0,
            data,
        };
        let reply = Reply::new(
            Arc::clone(side.conn),
            header.cookie,
            command,
            header.length,
            budget,
        );
        count(side, served);
        let handler = side.ctx.handler;
        let handled = catch_unwind(AssertUnwindSafe(|| handler.request(request, reply)));
        match handled {
            Ok(()) => None,
            Err(_) => Some(End::HandlerPanicked),
        }
    }

    /// Why transmission ended when the stream stopped (`failure` is `None` for an end of
    /// stream) where a request header was due.
    fn header_end(&self, side: &Side<'_>, failure: Option<io::Error>) -> End {
        // A failed reply write shuts the socket down, which ends this read too; and a shutdown
        // wakes this read on purpose. Neither is the client's doing.
        if side.conn.is_closed() {
            return End::WriteFailed;
        }
        if side.ctx.shutting_down.load(Ordering::Acquire) {
            return End::Shutdown;
        }
        match failure {
            None if self.buffered() == 0 => End::Eof,
            None => End::Error(ConnError::Truncated {
                what: "a request header",
                got: self.buffered() as u64,
                expected: REQUEST_HEADER_LEN as u64,
            }),
            Some(e) => End::Error(ConnError::from_io(e, "a request header")),
        }
    }

    /// Receives into the buffer, after moving what is left of it to the front. Callers fill
    /// only when fewer bytes are buffered than a header, so there is always room.
    fn fill(&mut self, side: &Side<'_>) -> Fill {
        self.buf.copy_within(self.start..self.end, 0);
        self.end -= self.start;
        self.start = 0;
        let wait = (side.may_block)();
        let received = side.stream.recv(&mut self.buf[self.end..], wait);
        if let Ok(n) = &received {
            self.end += n;
        }
        Self::fill_of(received, wait, side.counters)
    }

    /// Receives more of a write's payload: straight into `data` when the rest is larger than
    /// the buffer, else into the buffer, where requests following it may arrive in the same
    /// call.
    fn fill_payload(&mut self, side: &Side<'_>, data: &mut Vec<u8>, length: usize) -> Fill {
        let left = length - data.len();
        if left < RECEIVE_BUFFER {
            return self.fill(side);
        }
        let wait = (side.may_block)();
        let received = side.stream.recv_append(data, left, wait);
        Self::fill_of(received, wait, side.counters)
    }

    fn fill_of(received: io::Result<usize>, wait: bool, counters: &Counters) -> Fill {
        match received {
            Ok(0) => Fill::Closed,
            Ok(n) => {
                counters.bytes.fetch_add(n as u64, Ordering::Relaxed);
                counters.receives.fetch_add(1, Ordering::Relaxed);
                Fill::Bytes
            }
            Err(e) if !wait && e.kind() == io::ErrorKind::WouldBlock => Fill::Nothing,
            Err(e) => Fill::Failed(e),
        }
    }
}

/// Counts one request served, in the caller's count and in the side's.
fn count(side: &Side<'_>, served: &mut usize) {
    *served += 1;
    side.counters.requests.fetch_add(1, Ordering::Relaxed);
}

/// Checks a request against the protocol and the export. Returns the error to reply with when
/// the request must not reach the handler.
pub(crate) fn check(
    config: &ServerConfig,
    command: Command,
    flags: u16,
    offset: u64,
    length: u32,
) -> Result<(), Errno> {
    // FUA is valid on every command; NO_HOLE only on write-zeroes. Every other flag is either
    // unknown or belongs to a feature we did not advertise.
    let allowed = match command {
        Command::WriteZeroes => CMD_FLAG_FUA | CMD_FLAG_NO_HOLE,
        _ => CMD_FLAG_FUA,
    };
    if flags & !allowed != 0 {
        return Err(Errno::Inval);
    }
    let writes = matches!(
        command,
        Command::Write | Command::Trim | Command::WriteZeroes
    );
    if writes && config.export.read_only {
        return Err(Errno::Perm);
    }
    if command == Command::Flush {
        // Offset and length of a flush are reserved and must be zero.
        return if offset == 0 && length == 0 {
            Ok(())
        } else {
            Err(Errno::Inval)
        };
    }
    // Trim is the one data command the protocol lets exceed the maximum block size: it
    // carries no payload, and clients such as qemu send discards of up to 2 GiB.
    if command != Command::Trim && length > config.block_size.maximum {
        return Err(Errno::Inval);
    }
    let past_end = match offset.checked_add(u64::from(length)) {
        Some(end) => end > config.export.size_bytes,
        None => true,
    };
    if past_end {
        // The protocol document asks for ENOSPC on writes (and write-zeroes) beyond the end
        // and EINVAL on reads and trims beyond the end.
        return Err(match command {
            Command::Write | Command::WriteZeroes => Errno::NoSpc,
            _ => Errno::Inval,
        });
    }
    let minimum = u64::from(config.block_size.minimum);
    if !aligned(offset, minimum) || !aligned(u64::from(length), minimum) {
        return Err(Errno::Inval);
    }
    Ok(())
}

fn aligned(value: u64, to: u64) -> bool {
    value % to == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BlockSize, Export};

    fn config(read_only: bool, minimum: u32) -> ServerConfig {
        let mut c = ServerConfig::new(Export {
            name: "d".into(),
            description: String::new(),
            size_bytes: 1 << 20,
            read_only,
        });
        c.block_size = BlockSize {
            minimum,
            ..BlockSize::default()
        };
        c
    }

    #[test]
    fn bounds_and_flags() {
        let c = config(false, 1);
        let end = 1u64 << 20;
        assert_eq!(check(&c, Command::Read, 0, 0, 4096), Ok(()));
        assert_eq!(check(&c, Command::Read, 0, end - 1, 1), Ok(()));
        assert_eq!(check(&c, Command::Read, 0, end, 1), Err(Errno::Inval));
        assert_eq!(check(&c, Command::Write, 0, end, 1), Err(Errno::NoSpc));
        assert_eq!(
            check(&c, Command::WriteZeroes, 0, end, 1),
            Err(Errno::NoSpc)
        );
        assert_eq!(check(&c, Command::Trim, 0, end, 1), Err(Errno::Inval));
        assert_eq!(
            check(&c, Command::Write, 0, u64::MAX, 2),
            Err(Errno::NoSpc),
            "offset + length overflowing is past the end"
        );
        assert_eq!(check(&c, Command::Read, 0, u64::MAX, 2), Err(Errno::Inval));
        assert_eq!(
            check(&c, Command::Read, 0, 0, MAX_PAYLOAD + 1),
            Err(Errno::Inval)
        );
        assert_eq!(
            check(&c, Command::WriteZeroes, 0, 0, MAX_PAYLOAD + 1),
            Err(Errno::Inval)
        );
        assert_eq!(check(&c, Command::Write, CMD_FLAG_FUA, 0, 1), Ok(()));
        assert_eq!(
            check(&c, Command::Write, CMD_FLAG_NO_HOLE, 0, 1),
            Err(Errno::Inval)
        );
        assert_eq!(
            check(
                &c,
                Command::WriteZeroes,
                CMD_FLAG_NO_HOLE | CMD_FLAG_FUA,
                0,
                1
            ),
            Ok(())
        );
        assert_eq!(check(&c, Command::Read, 1 << 2, 0, 1), Err(Errno::Inval));
        assert_eq!(check(&c, Command::Flush, 0, 0, 0), Ok(()));
        assert_eq!(check(&c, Command::Flush, 0, 0, 1), Err(Errno::Inval));
    }

    #[test]
    fn long_trims_are_allowed_within_the_export() {
        let mut c = config(false, 1);
        c.export.size_bytes = 1 << 40;
        assert_eq!(check(&c, Command::Trim, 0, 0, u32::MAX), Ok(()));
    }

    #[test]
    fn read_only_refuses_writes_with_eperm() {
        let c = config(true, 1);
        assert_eq!(check(&c, Command::Write, 0, 0, 1), Err(Errno::Perm));
        assert_eq!(check(&c, Command::Trim, 0, 0, 1), Err(Errno::Perm));
        assert_eq!(check(&c, Command::WriteZeroes, 0, 0, 1), Err(Errno::Perm));
        assert_eq!(check(&c, Command::Read, 0, 0, 1), Ok(()));
        assert_eq!(check(&c, Command::Flush, 0, 0, 0), Ok(()));
    }

    #[test]
    fn alignment_is_enforced_when_advertised() {
        let c = config(false, 512);
        assert_eq!(check(&c, Command::Read, 0, 512, 1024), Ok(()));
        assert_eq!(check(&c, Command::Read, 0, 1, 512), Err(Errno::Inval));
        assert_eq!(check(&c, Command::Write, 0, 0, 100), Err(Errno::Inval));
    }
}
