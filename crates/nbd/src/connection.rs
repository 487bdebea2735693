//! The shared half of a connection in the transmission phase: the write side of the socket, the
//! count of requests in flight, and the `Reply` handle a handler answers through.

use std::fmt;
use std::io::{self, IoSlice, Write};
use std::net::Shutdown;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use crate::proto::{simple_reply, SIMPLE_REPLY_LEN};
use crate::stream::Stream;
use crate::{Command, Errno, LogFn};

/// Replies with at most this much data are copied behind their header and sent in one write;
/// larger ones are sent as two writes rather than copying megabytes.
const COALESCE_LIMIT: usize = 64 * 1024;

/// Locks a mutex even if a thread panicked while holding it. Every critical section in this
/// crate leaves its data consistent at each step, so a poisoned lock is still usable.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Most buffers one vectored write is given (Linux's IOV_MAX); more are written in later calls.
const MAX_IOVECS: usize = 1024;

/// Writes every part, in order, with as few vectored writes as the socket accepts, resuming
/// after a partial write where it stopped.
fn write_all_parts(writer: &mut impl Write, parts: &[&[u8]]) -> io::Result<()> {
    // The first part not yet completely written, and how much of it was.
    let (mut index, mut offset) = (0, 0);
    let mut slices = Vec::with_capacity(parts.len().min(MAX_IOVECS));
    while index < parts.len() {
        slices.clear();
        slices.push(IoSlice::new(&parts[index][offset..]));
        let end = parts.len().min(index + MAX_IOVECS);
        slices.extend(parts[index + 1..end].iter().map(|p| IoSlice::new(p)));
        let mut written = match writer.write_vectored(&slices) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        while index < parts.len() && written >= parts[index].len() - offset {
            written -= parts[index].len() - offset;
            index += 1;
            offset = 0;
        }
        offset += written;
    }
    Ok(())
}

/// A log sink with the connection's identity prepended to every line.
#[derive(Clone)]
pub(crate) struct Logger {
    sink: LogFn,
    prefix: String,
}

impl Logger {
    pub(crate) fn new(sink: LogFn, prefix: String) -> Logger {
        Logger { sink, prefix }
    }

    pub(crate) fn line(&self, message: &str) {
        (self.sink)(&format!("{}{message}", self.prefix));
    }
}

/// Requests admitted to the handler and not yet answered.
#[derive(Default)]
struct Flight {
    requests: usize,
    /// Sum of the lengths of admitted reads and writes: the memory the handler may be holding
    /// (write payloads) or about to allocate (read buffers) for this connection.
    bytes: u64,
    /// Threads waiting for `flight_changed`: releasing a request wakes them only when there
    /// are some, which spares the thread answering a system call per reply.
    waiters: usize,
}

impl Flight {
    /// Waits once on `changed`, counted in `waiters`.
    fn wait<'a>(mut guard: MutexGuard<'a, Flight>, changed: &Condvar) -> MutexGuard<'a, Flight> {
        guard.waiters += 1;
        let mut guard = changed.wait(guard).unwrap_or_else(PoisonError::into_inner);
        guard.waiters -= 1;
        guard
    }
}

pub(crate) struct Connection {
    id: u64,
    writer: Mutex<Stream>,
    flight: Mutex<Flight>,
    flight_changed: Condvar,
    /// Set once the connection is finished or its socket failed; replies after that are
    /// discarded instead of written.
    closed: AtomicBool,
    log: Logger,
}

impl Connection {
    pub(crate) fn new(id: u64, writer: Stream, log: Logger) -> Connection {
        Connection {
            id,
            writer: Mutex::new(writer),
            flight: Mutex::new(Flight::default()),
            flight_changed: Condvar::new(),
            closed: AtomicBool::new(false),
            log,
        }
    }

    pub(crate) fn log(&self, message: &str) {
        self.log.line(message);
    }

    /// Writes one simple reply.
    pub(crate) fn send(&self, cookie: u64, error: u32, data: &[u8]) {
        let header = simple_reply(cookie, error);
        self.write_or_close(
            || format!("the reply to cookie {cookie:#x}"),
            |writer| {
                if data.is_empty() {
                    writer.write_all(&header)
                } else if data.len() <= COALESCE_LIMIT {
                    let mut frame = Vec::with_capacity(SIMPLE_REPLY_LEN + data.len());
                    frame.extend_from_slice(&header);
                    frame.extend_from_slice(data);
                    writer.write_all(&frame)
                } else {
                    writer
                        .write_all(&header)
                        .and_then(|()| writer.write_all(data))
                }
            },
        );
    }

    /// Writes replies gathered by a [`ReplyBatch`], in order, with vectored writes: the
    /// payloads go from the buffers they came in, without being copied together first.
    fn send_gathered(&self, replies: &[Gathered]) {
        self.write_or_close(
            || format!("{} replies", replies.len()),
            |writer| {
                let mut parts: Vec<&[u8]> = Vec::with_capacity(2 * replies.len());
                for reply in replies {
                    parts.push(&reply.header);
                    if !reply.data.is_empty() {
                        parts.push(&reply.data);
                    }
                }
                write_all_parts(writer, &parts)
            },
        );
    }

    /// Runs `write` on the socket unless the connection is closed. A write failure means the
    /// client is gone or stuck past the write timeout, and a partly written reply leaves the
    /// stream unusable, so the connection is shut down and every later reply is discarded.
    fn write_or_close(
        &self,
        what: impl FnOnce() -> String,
        write: impl FnOnce(&mut Stream) -> io::Result<()>,
    ) {
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        let mut writer = lock(&self.writer);
        // Checked again under the lock: another thread may have failed while we waited.
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        let result = write(&mut writer);
        if let Err(e) = result.and_then(|()| writer.flush()) {
            self.closed.store(true, Ordering::Release);
            writer.shutdown(Shutdown::Both);
            drop(writer);
            let why = match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
                    "timed out: the client is not reading replies".to_string()
                }
                _ => e.to_string(),
            };
            self.log(&format!(
                "writing {} failed ({why}); closing the connection",
                what()
            ));
        }
    }

    /// Whether the connection is finished or its socket failed.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Blocks while `max` requests are in flight. Only the thread holding the connection's
    /// receiving side admits requests, so a free slot found here stays free until it admits the
    /// next one.
    pub(crate) fn wait_for_slot(&self, max: usize) {
        let mut flight = lock(&self.flight);
        while flight.requests >= max {
            flight = Flight::wait(flight, &self.flight_changed);
        }
    }

    /// Whether fewer than `max` requests are in flight: [`Connection::wait_for_slot`] for a
    /// thread that must not block.
    pub(crate) fn has_slot(&self, max: usize) -> bool {
        lock(&self.flight).requests < max
    }

    /// Admits one request carrying `bytes` of read or write data, first waiting until the byte
    /// budget has room. A request larger than the whole budget is admitted when nothing else is
    /// in flight, so it cannot wait forever.
    pub(crate) fn admit(&self, bytes: u64, max_bytes: u64) {
        let mut flight = lock(&self.flight);
        while !Self::fits(&flight, bytes, max_bytes) {
            flight = Flight::wait(flight, &self.flight_changed);
        }
        flight.requests += 1;
        flight.bytes += bytes;
    }

    /// Admits one request like [`Connection::admit`] if the budget has room now; returns
    /// whether it did.
    pub(crate) fn try_admit(&self, bytes: u64, max_bytes: u64) -> bool {
        let mut flight = lock(&self.flight);
        if !Self::fits(&flight, bytes, max_bytes) {
            return false;
        }
        flight.requests += 1;
        flight.bytes += bytes;
        true
    }

    fn fits(flight: &Flight, bytes: u64, max_bytes: u64) -> bool {
        flight.bytes == 0 || flight.bytes.saturating_add(bytes) <= max_bytes
    }

    /// Returns the slot and the bytes of one admitted request.
    pub(crate) fn release(&self, bytes: u64) {
        self.release_many(1, bytes);
    }

    /// Returns the slots and the bytes of `requests` admitted requests.
    fn release_many(&self, requests: usize, bytes: u64) {
        let mut flight = lock(&self.flight);
        flight.requests = flight.requests.saturating_sub(requests);
        flight.bytes = flight.bytes.saturating_sub(bytes);
        let wake = flight.waiters > 0;
        drop(flight);
        if wake {
            self.flight_changed.notify_all();
        }
    }

    /// Blocks until every admitted request has been answered or its `Reply` dropped.
    pub(crate) fn wait_idle(&self) {
        let mut flight = lock(&self.flight);
        while flight.requests > 0 {
            flight = Flight::wait(flight, &self.flight_changed);
        }
    }

    /// Marks the connection finished and shuts the socket down in both directions, which
    /// closes it for the client even while other handles to the socket still exist.
    pub(crate) fn close(&self) {
        let writer = lock(&self.writer);
        self.closed.store(true, Ordering::Release);
        writer.shutdown(Shutdown::Both);
    }
}

/// The way to answer one request. It may be moved to any thread and used at any later time;
/// replies to one connection can be sent in any order.
///
/// Answering consumes it. **Dropping a `Reply` without answering sends an `EIO` error reply**
/// (and logs it), so a client never waits forever for a request the handler lost. If the
/// connection is already gone when the answer comes, the answer is silently discarded.
pub struct Reply {
    conn: Arc<Connection>,
    cookie: u64,
    command: Command,
    length: u32,
    /// Bytes this request holds in the connection's in-flight budget.
    budget: u64,
    answered: bool,
}

impl Reply {
    pub(crate) fn new(
        conn: Arc<Connection>,
        cookie: u64,
        command: Command,
        length: u32,
        budget: u64,
    ) -> Reply {
        Reply {
            conn,
            cookie,
            command,
            length,
            budget,
            answered: false,
        }
    }

    /// Reports success for a command other than `Read`. A read needs its data, so calling this
    /// for a read sends `EIO` instead (and logs the misuse).
    pub fn ok(mut self) {
        let error = self.ok_error();
        self.finish(error, &[]);
    }

    /// Answers a `Read` with its data, which must be exactly the requested length. Any other
    /// length, or calling this for another command, sends `EIO` instead (and logs the misuse),
    /// because a simple reply with the wrong amount of data would desynchronise the client.
    pub fn data(mut self, bytes: &[u8]) {
        match self.data_error(bytes.len()) {
            0 => self.finish(0, bytes),
            error => self.finish(error, &[]),
        }
    }

    /// Reports a failure with the given error.
    pub fn error(mut self, error: Errno) {
        self.finish(error.code(), &[]);
    }

    /// The error value an `ok()` answer carries: zero, or `EIO` for a read (logged).
    fn ok_error(&self) -> u32 {
        if self.command == Command::Read {
            self.conn.log(&format!(
                "handler answered read cookie {:#x} with ok() instead of data(); sending EIO",
                self.cookie
            ));
            Errno::Io.code()
        } else {
            0
        }
    }

    /// The error value a `data()` answer of `len` bytes carries: zero when it fits the
    /// request, else `EIO` (logged).
    fn data_error(&self, len: usize) -> u32 {
        if self.command != Command::Read {
            self.conn.log(&format!(
                "handler answered {:?} cookie {:#x} with data(); sending EIO",
                self.command, self.cookie
            ));
            Errno::Io.code()
        } else if len as u64 != u64::from(self.length) {
            self.conn.log(&format!(
                "handler answered read cookie {:#x} of {} bytes with {} bytes; sending EIO",
                self.cookie, self.length, len
            ));
            Errno::Io.code()
        } else {
            0
        }
    }

    /// The connection the request arrived on.
    pub fn connection(&self) -> u64 {
        self.conn.id
    }

    /// The client's cookie (called "handle" in older protocol versions).
    pub fn cookie(&self) -> u64 {
        self.cookie
    }

    /// The command being answered.
    pub fn command(&self) -> Command {
        self.command
    }

    /// The request's length in bytes.
    pub fn length(&self) -> u32 {
        self.length
    }

    fn finish(&mut self, error: u32, data: &[u8]) {
        self.answered = true;
        self.conn.send(self.cookie, error, data);
        self.conn.release(self.budget);
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        if !self.answered {
            self.conn.log(&format!(
                "handler dropped the reply to {:?} cookie {:#x} unanswered; sending EIO",
                self.command, self.cookie
            ));
            self.finish(Errno::Io.code(), &[]);
        }
    }
}

impl fmt::Debug for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reply")
            .field("connection", &self.conn.id)
            .field("cookie", &self.cookie)
            .field("command", &self.command)
            .field("length", &self.length)
            .finish_non_exhaustive()
    }
}

/// Replies answered together and written together: one write per connection carries every
/// reply added for it, instead of one write (and one trip through the network stack) per
/// reply. A thread with many replies due at once, such as the emulator's pacing thread, adds
/// them here and then calls [`ReplyBatch::send`].
///
/// A reply added to a batch counts as answered; its bytes leave at `send`. Dropping a batch
/// sends what it holds, so no reply is ever lost in one. A batch holds at most the replies its
/// owner adds between two sends, and those are requests the connections already admitted, so
/// its memory is bounded by the connections' in-flight limits.
#[derive(Default)]
pub struct ReplyBatch {
    groups: Vec<Group>,
    /// Reply lists of earlier sends, emptied, kept for reuse.
    spare: Vec<Vec<Gathered>>,
}

/// The replies of one batch bound for one connection.
struct Group {
    conn: Arc<Connection>,
    replies: Vec<Gathered>,
    budget: u64,
}

/// One reply in a batch: its header, and a read's data (empty otherwise).
struct Gathered {
    header: [u8; SIMPLE_REPLY_LEN],
    data: Vec<u8>,
}

/// Spare lists a batch keeps for its next sends, so that a steady stream of batches does not
/// allocate them again.
const SPARE_LISTS: usize = 4;

impl ReplyBatch {
    pub fn new() -> ReplyBatch {
        ReplyBatch::default()
    }

    /// Whether the batch holds no reply.
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Adds the answer to a `Read`, as [`Reply::data`] does (a wrong length or command sends
    /// `EIO`). Returns the index of the write that will carry it (see [`ReplyBatch::send`]).
    pub fn data(&mut self, mut reply: Reply, bytes: Vec<u8>) -> usize {
        match reply.data_error(bytes.len()) {
            0 => self.add(&mut reply, 0, bytes),
            error => self.add(&mut reply, error, Vec::new()),
        }
    }

    /// Adds a success, as [`Reply::ok`] does. Returns the index of the write that will carry
    /// it.
    pub fn ok(&mut self, mut reply: Reply) -> usize {
        let error = reply.ok_error();
        self.add(&mut reply, error, Vec::new())
    }

    /// Adds a failure, as [`Reply::error`] does. Returns the index of the write that will
    /// carry it.
    pub fn error(&mut self, mut reply: Reply, error: Errno) -> usize {
        self.add(&mut reply, error.code(), Vec::new())
    }

    fn add(&mut self, reply: &mut Reply, error: u32, data: Vec<u8>) -> usize {
        reply.answered = true;
        let index = match self
            .groups
            .iter()
            .position(|g| Arc::ptr_eq(&g.conn, &reply.conn))
        {
            Some(index) => index,
            None => {
                self.groups.push(Group {
                    conn: Arc::clone(&reply.conn),
                    replies: self.spare.pop().unwrap_or_default(),
                    budget: 0,
                });
                self.groups.len() - 1
            }
        };
        let group = &mut self.groups[index];
        group.replies.push(Gathered {
            header: simple_reply(reply.cookie, error),
            data,
        });
        group.budget += reply.budget;
        index
    }

    /// Writes every reply added since the last send: one vectored write per connection (more
    /// only if the socket takes part of it), in the order the connections were first added.
    /// `before_write` is called with each write's index (as the adding methods returned it)
    /// just before that write, so a caller can note when each reply left. A connection whose
    /// socket failed discards its replies, as [`Reply`] does. Read buffers are freed after
    /// their write, not before it.
    pub fn send(&mut self, mut before_write: impl FnMut(usize)) {
        for (index, mut group) in self.groups.drain(..).enumerate() {
            before_write(index);
            group.conn.send_gathered(&group.replies);
            group.conn.release_many(group.replies.len(), group.budget);
            if self.spare.len() < SPARE_LISTS {
                group.replies.clear();
                self.spare.push(group.replies);
            }
        }
    }
}

impl Drop for ReplyBatch {
    fn drop(&mut self) {
        self.send(|_| {});
    }
}

impl fmt::Debug for ReplyBatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReplyBatch")
            .field("writes", &self.groups.len())
            .field(
                "replies",
                &self.groups.iter().map(|g| g.replies.len()).sum::<usize>(),
            )
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Takes at most `step` bytes per call, from as many buffers as they span, and fails once
    /// with `Interrupted` first: the ways a socket may cut a vectored write short.
    struct Trickle {
        step: usize,
        interrupted: bool,
        out: Vec<u8>,
    }

    impl Write for Trickle {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.write_vectored(&[IoSlice::new(buf)])
        }

        fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
            if !self.interrupted {
                self.interrupted = true;
                return Err(io::ErrorKind::Interrupted.into());
            }
            let mut taken = 0;
            for buf in bufs {
                let n = buf.len().min(self.step - taken);
                self.out.extend_from_slice(&buf[..n]);
                taken += n;
                if taken == self.step {
                    break;
                }
            }
            Ok(taken)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn partial_vectored_writes_resume_where_they_stopped() {
        let parts: Vec<Vec<u8>> = (0..40u8).map(|i| vec![i; 1 + (i as usize % 7)]).collect();
        let slices: Vec<&[u8]> = parts.iter().map(|p| p.as_slice()).collect();
        let expected = parts.concat();
        for step in [1, 3, 7, 16, 1000] {
            let mut w = Trickle {
                step,
                interrupted: false,
                out: Vec::new(),
            };
            write_all_parts(&mut w, &slices).unwrap();
            assert_eq!(w.out, expected, "step {step}");
        }
        // More parts than one call may be given.
        let many: Vec<&[u8]> = (0..MAX_IOVECS * 2 + 5).map(|_| &b"ab"[..]).collect();
        let mut w = Trickle {
            step: usize::MAX,
            interrupted: true,
            out: Vec::new(),
        };
        write_all_parts(&mut w, &many).unwrap();
        assert_eq!(w.out.len(), many.len() * 2);
    }
}
