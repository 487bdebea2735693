//! Handing a connection's receiving side between its reader thread and a thread that polls it.
//!
//! A connection's reader thread blocks in `recv` and wakes once per request that arrives. A
//! thread that spins anyway (the emulator's pacing thread) can instead look at the socket with
//! non-blocking receives and serve what has arrived itself, so that no thread is woken per
//! request. While such a [`ConnectionPoller`] is active, the reader thread parks on a condition
//! variable instead of waiting on the socket; when it goes inactive (its thread is about to
//! sleep, or it is dropped), the reader thread takes over again.
//!
//! Both sides receive and parse under one mutex, through the same [`Intake`], so bytes are
//! consumed in order by exactly one of them, a request whose header one side received is
//! finished by the other, and requests reach the handler in the order they were sent. The
//! handshake, and closing the connection (waiting for its requests in flight, which the poller
//! may be the one to answer), stay on the reader thread: a poller that meets the end of the
//! stream or a protocol violation records why and wakes the reader thread to close.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError, TryLockError};

use crate::connection::{lock, Connection};
use crate::server::Shared;
use crate::stream::Stream;
use crate::transmission::{Context, Counters, End, Intake, Side};

/// Which side serves a connection, and the reader thread's parking place.
pub(crate) struct Handover {
    /// A poller serves the connection: the reader thread does not wait on the socket.
    active: AtomicBool,
    /// A poller ended transmission; the reader thread closes the connection.
    ended: AtomicBool,
    /// Whether the reader thread waits on `unpark`, so that waking it costs a system call only
    /// when it does.
    parked: Mutex<bool>,
    unpark: Condvar,
}

impl Handover {
    pub(crate) fn new() -> Handover {
        Handover {
            active: AtomicBool::new(false),
            ended: AtomicBool::new(false),
            parked: Mutex::new(false),
            unpark: Condvar::new(),
        }
    }

    fn is_active(&self) -> bool {
        self.active.load(Ordering::SeqCst)
    }

    fn set_active(&self, active: bool) {
        let parked = lock(&self.parked);
        self.active.store(active, Ordering::SeqCst);
        if !active && *parked {
            self.unpark.notify_one();
        }
    }

    /// Wakes the reader thread if it is parked. The caller has already set what it should see
    /// (the server's shutdown flag, or `ended`); setting it before taking the lock here means
    /// a reader about to park sees it, and one already parked is woken.
    pub(crate) fn wake_reader(&self) {
        let parked = lock(&self.parked);
        if *parked {
            self.unpark.notify_one();
        }
    }

    /// Parks the reader thread while a poller serves the connection.
    fn park(&self, shutting_down: &AtomicBool) {
        let mut parked = lock(&self.parked);
        while self.is_active()
            && !self.ended.load(Ordering::SeqCst)
            && !shutting_down.load(Ordering::SeqCst)
        {
            *parked = true;
            parked = self
                .unpark
                .wait(parked)
                .unwrap_or_else(PoisonError::into_inner);
            *parked = false;
        }
    }
}

/// The receiving side of a connection, held by whichever side is receiving.
struct Receiving {
    intake: Intake,
    /// What a poller needs from the server to serve requests. Dropped when the connection
    /// finishes, so that a poller the handler keeps holds no reference back to the server (and
    /// through it to the handler) beyond the connection's life.
    server: Option<Arc<Shared>>,
    /// Why a poller ended transmission, for the reader thread to log and close.
    end: Option<End>,
}

/// A connection in transmission as both its reader thread and a poller see it.
pub(crate) struct Link {
    id: u64,
    conn: Arc<Connection>,
    stream: Stream,
    handover: Arc<Handover>,
    receiving: Mutex<Receiving>,
    reader_counters: Counters,
    poller_counters: Counters,
}

impl Link {
    pub(crate) fn new(
        id: u64,
        conn: Arc<Connection>,
        stream: Stream,
        handover: Arc<Handover>,
        intake: Intake,
        server: Arc<Shared>,
    ) -> Link {
        Link {
            id,
            conn,
            stream,
            handover,
            receiving: Mutex::new(Receiving {
                intake,
                server: Some(server),
                end: None,
            }),
            reader_counters: Counters::default(),
            poller_counters: Counters::default(),
        }
    }

    /// The reader thread's part: serves the connection whenever no poller does, and parks
    /// while one does, until transmission ends on either side.
    pub(crate) fn serve_reader(&self, ctx: &Context<'_>) -> End {
        // Once the server shuts down the reader reads on (the socket's read side is shut, so
        // it returns at once) rather than parking, and ends the connection.
        let may_block = || !self.handover.is_active() || ctx.shutting_down.load(Ordering::Acquire);
        loop {
            self.handover.park(ctx.shutting_down);
            let mut receiving = lock(&self.receiving);
            if let Some(end) = receiving.end.take() {
                return end;
            }
            let side = Side {
                ctx,
                conn: &self.conn,
                stream: &self.stream,
                counters: &self.reader_counters,
                may_block: &may_block,
            };
            let mut served = 0;
            if let Some(end) = receiving.intake.run(&side, usize::MAX, &mut served) {
                return end;
            }
            // The intake stopped because a poller took over while more bytes (or room in
            // flight) were needed: the poller goes on from here.
        }
    }

    /// Forgets the server once transmission is over.
    pub(crate) fn detach(&self) {
        lock(&self.receiving).server = None;
    }
}

/// What one side of a connection has received and served.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Served {
    /// Bytes received from the socket.
    pub bytes: u64,
    /// Receive calls that returned bytes.
    pub receives: u64,
    /// Requests served: handed to the handler or answered by the server.
    pub requests: u64,
}

/// How a connection's requests were received so far: by its reader thread and by a poller.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IntakeStats {
    pub reader: Served,
    pub poller: Served,
}

/// What [`ConnectionPoller::poll`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Polled {
    /// The connection is open; this many requests were served (zero when nothing had arrived
    /// or the reader thread was receiving).
    Open { requests: usize },
    /// Transmission on this connection has ended, after this many requests were served in
    /// this call; the poller has nothing more to do and can be dropped. The reader thread
    /// closes the connection.
    Closed { requests: usize },
}

/// Serves one connection's requests from a thread that spins anyway, such as the emulator's
/// pacing thread: [`poll`](ConnectionPoller::poll) receives what has arrived on the socket
/// without blocking and hands the requests to the handler on the calling thread, so a request
/// needs no thread woken to be read.
///
/// Given to [`Handler::connection_poller`](crate::Handler::connection_poller) inactive. While
/// it is active the connection's reader thread does not wait on the socket, so the owner must
/// call [`set_active(false)`](ConnectionPoller::set_active) before its thread sleeps (and
/// `true` when it wakes), or requests wait until it polls again. Dropping the poller makes it
/// inactive. Requests, checks, limits and hostile-input handling are exactly those of the
/// reader thread: both go through one parser, and whichever side receives next goes on where
/// the other stopped, in the middle of a request if need be.
pub struct ConnectionPoller {
    link: Arc<Link>,
}

impl ConnectionPoller {
    pub(crate) fn new(link: Arc<Link>) -> ConnectionPoller {
        ConnectionPoller { link }
    }

    /// The connection's number, as [`Handler::connection_opened`](crate::Handler) saw it.
    pub fn connection(&self) -> u64 {
        self.link.id
    }

    /// Receives whatever has arrived, without blocking, and serves at most `max_requests`
    /// complete requests from it; the rest stays buffered for the next call (or for the reader
    /// thread). The handler runs on the calling thread. Returns at once when the reader thread
    /// is receiving. Never waits for room in flight: a connection at its limits is not read.
    pub fn poll(&mut self, max_requests: usize) -> Polled {
        let mut guard = match self.link.receiving.try_lock() {
            Ok(guard) => guard,
            Err(TryLockError::WouldBlock) => return Polled::Open { requests: 0 },
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
        };
        let Receiving {
            intake,
            server,
            end,
        } = &mut *guard;
        let Some(server) = server.as_ref() else {
            return Polled::Closed { requests: 0 };
        };
        if intake.is_finished() {
            return Polled::Closed { requests: 0 };
        }
        let ctx = server.context(self.link.id);
        let never = || false;
        let side = Side {
            ctx: &ctx,
            conn: &self.link.conn,
            stream: &self.link.stream,
            counters: &self.link.poller_counters,
            may_block: &never,
        };
        let mut served = 0;
        match intake.run(&side, max_requests, &mut served) {
            None => Polled::Open { requests: served },
            Some(reason) => {
                *end = Some(reason);
                drop(guard);
                self.link.handover.ended.store(true, Ordering::SeqCst);
                self.link.handover.wake_reader();
                Polled::Closed { requests: served }
            }
        }
    }

    /// Whether this poller serves the connection (see the type's description). Making it
    /// inactive wakes the reader thread if it is parked.
    pub fn set_active(&self, active: bool) {
        self.link.handover.set_active(active);
    }

    /// What each side has received and served on this connection so far.
    pub fn stats(&self) -> IntakeStats {
        IntakeStats {
            reader: self.link.reader_counters.snapshot(),
            poller: self.link.poller_counters.snapshot(),
        }
    }
}

impl Drop for ConnectionPoller {
    fn drop(&mut self) {
        self.link.handover.set_active(false);
    }
}

impl fmt::Debug for ConnectionPoller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectionPoller")
            .field("connection", &self.link.id)
            .finish_non_exhaustive()
    }
}
