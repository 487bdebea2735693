//! The shared half of a connection in the transmission phase: the write side of the socket, the
//! count of requests in flight, and the `Reply` handle a handler answers through.

use std::fmt;
use std::io::{self, Write};
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

    /// Writes one simple reply. A write failure means the client is gone or stuck past the
    /// write timeout, and a partly written reply leaves the stream unusable, so the connection
    /// is shut down and every later reply is discarded.
    pub(crate) fn send(&self, cookie: u64, error: u32, data: &[u8]) {
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        let mut writer = lock(&self.writer);
        // Checked again under the lock: another thread may have failed while we waited.
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        let header = simple_reply(cookie, error);
        let result = if data.is_empty() {
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
        };
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
                "writing the reply to cookie {cookie:#x} failed ({why}); closing the connection"
            ));
        }
    }

    /// Whether the connection is finished or its socket failed.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Blocks while `max` requests are in flight. Only the reader thread admits requests, so a
    /// free slot found here stays free until that thread admits the next one.
    pub(crate) fn wait_for_slot(&self, max: usize) {
        let mut flight = lock(&self.flight);
        while flight.requests >= max {
            flight = self
                .flight_changed
                .wait(flight)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Admits one request carrying `bytes` of read or write data, first waiting until the byte
    /// budget has room. A request larger than the whole budget is admitted when nothing else is
    /// in flight, so it cannot wait forever.
    pub(crate) fn admit(&self, bytes: u64, max_bytes: u64) {
        let mut flight = lock(&self.flight);
        while flight.bytes > 0 && flight.bytes.saturating_add(bytes) > max_bytes {
            flight = self
                .flight_changed
                .wait(flight)
                .unwrap_or_else(PoisonError::into_inner);
        }
        flight.requests += 1;
        flight.bytes += bytes;
    }

    /// Returns the slot and the bytes of one admitted request.
    pub(crate) fn release(&self, bytes: u64) {
        let mut flight = lock(&self.flight);
        flight.requests = flight.requests.saturating_sub(1);
        flight.bytes = flight.bytes.saturating_sub(bytes);
        drop(flight);
        self.flight_changed.notify_all();
    }

    /// Blocks until every admitted request has been answered or its `Reply` dropped.
    pub(crate) fn wait_idle(&self) {
        let mut flight = lock(&self.flight);
        while flight.requests > 0 {
            flight = self
                .flight_changed
                .wait(flight)
                .unwrap_or_else(PoisonError::into_inner);
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
        if self.command == Command::Read {
            self.conn.log(&format!(
                "handler answered read cookie {:#x} with ok() instead of data(); sending EIO",
                self.cookie
            ));
            self.finish(Errno::Io.code(), &[]);
        } else {
            self.finish(0, &[]);
        }
    }

    /// Answers a `Read` with its data, which must be exactly the requested length. Any other
    /// length, or calling this for another command, sends `EIO` instead (and logs the misuse),
    /// because a simple reply with the wrong amount of data would desynchronise the client.
    pub fn data(mut self, bytes: &[u8]) {
        if self.command != Command::Read {
            self.conn.log(&format!(
                "handler answered {:?} cookie {:#x} with data(); sending EIO",
                self.command, self.cookie
            ));
            self.finish(Errno::Io.code(), &[]);
        } else if bytes.len() as u64 != u64::from(self.length) {
            self.conn.log(&format!(
                "handler answered read cookie {:#x} of {} bytes with {} bytes; sending EIO",
                self.cookie,
                self.length,
                bytes.len()
            ));
            self.finish(Errno::Io.code(), &[]);
        } else {
            self.finish(0, bytes);
        }
    }

    /// Reports a failure with the given error.
    pub fn error(mut self, error: Errno) {
        self.finish(error.code(), &[]);
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
