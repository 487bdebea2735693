//! Binding, the accept loop, one reader thread per connection, and shutdown.

use std::collections::BTreeMap;
use std::io::{self, BufReader, Read};
use std::net::Shutdown;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::connection::{lock, Connection, Logger};
use crate::handover::{ConnectionPoller, Handover, Link};
use crate::handshake::{negotiate, Negotiated};
use crate::stream::{Listener, Stream};
use crate::transmission::{Context, End, Intake, RECEIVE_BUFFER};
use crate::{Handler, Listen, ServerConfig};

/// A connection as the registry sees it: a handle to shut its socket down, the place its
/// reader thread parks while a poller serves it, and its thread.
struct Entry {
    control: Stream,
    handover: Arc<Handover>,
    thread: Option<JoinHandle<()>>,
}

pub(crate) struct Shared {
    config: ServerConfig,
    handler: Arc<dyn Handler>,
    shutting_down: AtomicBool,
    next_id: AtomicU64,
    connections: Mutex<BTreeMap<u64, Entry>>,
}

impl Shared {
    fn log(&self, message: &str) {
        (self.config.log)(&format!("nbd: {message}"));
    }

    /// What serving connection `id`'s requests needs from the server.
    pub(crate) fn context(&self, id: u64) -> Context<'_> {
        Context {
            id,
            config: &self.config,
            handler: &*self.handler,
            shutting_down: &self.shutting_down,
        }
    }
}

/// A bound but not yet serving NBD server.
pub struct Server {
    shared: Arc<Shared>,
    listener: Arc<Listener>,
}

impl Server {
    /// Binds the listening socket. For a Unix path, a leftover socket file is removed first,
    /// but only if it is a socket and nobody is listening on it. Fails with `InvalidInput` if
    /// the configuration is inconsistent (see [`ServerConfig::validate`]).
    pub fn bind(
        listen: &Listen,
        config: ServerConfig,
        handler: Arc<dyn Handler>,
    ) -> io::Result<Server> {
        config.validate()?;
        let listener = Listener::bind(listen)?;
        Ok(Server {
            shared: Arc::new(Shared {
                config,
                handler,
                shutting_down: AtomicBool::new(false),
                next_id: AtomicU64::new(1),
                connections: Mutex::new(BTreeMap::new()),
            }),
            listener: Arc::new(listener),
        })
    }

    /// The bound address: "127.0.0.1:PORT" for TCP (with the real port when bound to port 0),
    /// or the socket path for Unix.
    pub fn local_addr(&self) -> String {
        self.listener.local_addr()
    }

    /// Starts the accept loop on its own thread and returns the handle that stops it.
    pub fn spawn(self) -> ServerHandle {
        let local_addr = self.listener.local_addr();
        let shared = Arc::clone(&self.shared);
        let listener = Arc::clone(&self.listener);
        let accept = thread::Builder::new()
            .name("nbd-accept".into())
            .spawn(move || accept_loop(&shared, &listener));
        let accept = match accept {
            Ok(handle) => Some(handle),
            Err(e) => {
                self.shared.log(&format!(
                    "cannot start the accept thread ({e}); not serving"
                ));
                None
            }
        };
        ServerHandle {
            shared: self.shared,
            listener: self.listener,
            accept,
            local_addr,
            stopped: false,
        }
    }
}

/// A running server. Dropping it shuts the server down like [`ServerHandle::shutdown`].
pub struct ServerHandle {
    shared: Arc<Shared>,
    listener: Arc<Listener>,
    accept: Option<JoinHandle<()>>,
    local_addr: String,
    stopped: bool,
}

impl ServerHandle {
    /// Stops accepting, lets every connection finish the requests it already handed to the
    /// handler (their replies are still sent), closes all connections and joins all threads.
    ///
    /// This waits for the handler to answer (or drop) every outstanding `Reply`; a handler
    /// that holds one forever makes this wait forever.
    pub fn shutdown(mut self) {
        self.stop();
    }

    /// Open client connections, counting those still in the handshake.
    pub fn connections(&self) -> usize {
        lock(&self.shared.connections).len()
    }

    /// The bound address, as [`Server::local_addr`] reported it.
    pub fn local_addr(&self) -> &str {
        &self.local_addr
    }

    fn stop(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        self.shared.shutting_down.store(true, Ordering::Release);
        self.listener.wake();
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
        // The accept thread is gone, so the registry only shrinks from here. Shutting down the
        // read side wakes every reader blocked on its socket, and the hand-over wakes those
        // parked while a poller serves their connection; each then waits for its requests in
        // flight, closes, and removes itself.
        let threads: Vec<JoinHandle<()>> = {
            let mut connections = lock(&self.shared.connections);
            connections
                .values_mut()
                .filter_map(|entry| {
                    entry.control.shutdown(Shutdown::Read);
                    entry.handover.wake_reader();
                    entry.thread.take()
                })
                .collect()
        };
        for thread in threads {
            let _ = thread.join();
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop();
    }
}

fn accept_loop(shared: &Arc<Shared>, listener: &Listener) {
    loop {
        let accepted = listener.accept();
        if shared.shutting_down.load(Ordering::Acquire) {
            return;
        }
        match accepted {
            Ok((stream, peer)) => start_connection(shared, stream, peer),
            Err(e) => {
                shared.log(&format!("accept failed: {e}"));
                // Errors such as running out of file descriptors persist for a while; pausing
                // keeps the loop from spinning on them.
                thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

fn start_connection(shared: &Arc<Shared>, stream: Stream, peer: String) {
    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
    let handover = Arc::new(Handover::new());
    let control = match stream.try_clone() {
        Ok(control) => control,
        Err(e) => {
            shared.log(&format!(
                "connection {id} from {peer}: cannot clone socket: {e}"
            ));
            return;
        }
    };
    {
        let mut connections = lock(&shared.connections);
        if connections.len() >= shared.config.max_connections {
            shared.log(&format!(
                "connection {id} from {peer}: refused, {} connections already open",
                connections.len()
            ));
            return;
        }
        connections.insert(
            id,
            Entry {
                control,
                handover: Arc::clone(&handover),
                thread: None,
            },
        );
    }
    let thread_shared = Arc::clone(shared);
    let spawned = thread::Builder::new()
        .name(format!("nbd-conn-{id}"))
        .spawn(move || connection_main(&thread_shared, id, stream, &peer, handover));
    let mut connections = lock(&shared.connections);
    match spawned {
        // If the thread already finished, it removed its entry and the handle is not needed.
        Ok(handle) => {
            if let Some(entry) = connections.get_mut(&id) {
                entry.thread = Some(handle);
            }
        }
        Err(e) => {
            if let Some(entry) = connections.remove(&id) {
                entry.control.shutdown(Shutdown::Both);
            }
            drop(connections);
            shared.log(&format!("connection {id}: cannot start a thread: {e}"));
        }
    }
}

/// The body of a connection's thread: serve it, then make sure the socket is closed and the
/// registry forgets it, whatever happened.
fn connection_main(
    shared: &Arc<Shared>,
    id: u64,
    stream: Stream,
    peer: &str,
    handover: Arc<Handover>,
) {
    let log = Logger::new(
        Arc::clone(&shared.config.log),
        format!("nbd: connection {id} from {peer}: "),
    );
    if catch_unwind(AssertUnwindSafe(|| {
        serve_connection(shared, id, stream, peer, handover, &log)
    }))
    .is_err()
    {
        log.line("internal error: the connection thread panicked");
    }
    let entry = lock(&shared.connections).remove(&id);
    if let Some(entry) = entry {
        entry.control.shutdown(Shutdown::Both);
    }
}

/// A reader that fails with `TimedOut` once a deadline has passed, however the bytes trickle
/// in. A per-read timeout alone would let a client hold a handshake open forever by sending
/// one byte just before each timeout.
struct Deadline<'a> {
    inner: &'a mut BufReader<Stream>,
    deadline: Instant,
}

impl Read for Deadline<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        // Buffered bytes need no waiting, so they are served even after the deadline.
        if !self.inner.buffer().is_empty() {
            return self.inner.read(buf);
        }
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "handshake deadline",
            ));
        }
        self.inner.get_ref().set_read_timeout(Some(left))?;
        self.inner.read(buf)
    }
}

fn serve_connection(
    shared: &Arc<Shared>,
    id: u64,
    stream: Stream,
    peer: &str,
    handover: Arc<Handover>,
    log: &Logger,
) {
    let config = &shared.config;
    let setup = stream
        .set_write_timeout(Some(config.write_timeout))
        .and_then(|()| stream.try_clone());
    let mut writer = match setup {
        Ok(writer) => writer,
        Err(e) => {
            log.line(&format!("closing: cannot set up the socket: {e}"));
            return;
        }
    };
    let mut reader = BufReader::with_capacity(RECEIVE_BUFFER, stream);

    let mut timed = Deadline {
        inner: &mut reader,
        deadline: Instant::now() + config.handshake_timeout,
    };
    match negotiate(&mut timed, &mut writer, config, &shared.shutting_down, log) {
        Ok(Negotiated::Transmission) => {}
        Ok(Negotiated::Ended) => return,
        Err(e) => {
            log.line(&format!("closing: {e}"));
            return;
        }
    }
    // Requests may legitimately be minutes apart; only the handshake is timed.
    if let Err(e) = reader.get_ref().set_read_timeout(None) {
        log.line(&format!("closing: cannot clear the read timeout: {e}"));
        return;
    }

    let conn = Arc::new(Connection::new(id, writer, log.clone()));
    let handler = &*shared.handler;
    if catch_unwind(AssertUnwindSafe(|| handler.connection_opened(id, peer))).is_err() {
        log.line("closing: the handler panicked in connection_opened");
        conn.close();
        return;
    }
    // Bytes the handshake's reader took beyond the handshake are the first requests.
    let intake = Intake::new(reader.buffer());
    let link = Arc::new(Link::new(
        id,
        Arc::clone(&conn),
        reader.into_inner(),
        handover,
        intake,
        Arc::clone(shared),
    ));
    let poller = ConnectionPoller::new(Arc::clone(&link));
    let end = if catch_unwind(AssertUnwindSafe(|| handler.connection_poller(poller))).is_err() {
        End::HandlerPanicked
    } else {
        link.serve_reader(&shared.context(id))
    };
    link.detach();
    match &end {
        End::Disconnect | End::Shutdown | End::WriteFailed => {}
        // A failed reply write already logged why it shut the socket, which broke this read.
        End::Error(_) if conn.is_closed() => {}
        // Shutting down wakes a reader that may be in the middle of a payload.
        End::Error(_) if shared.shutting_down.load(Ordering::Acquire) => {
            log.line("closing: the server is shutting down")
        }
        End::Eof => log.line("client closed the connection without NBD_CMD_DISC"),
        End::HandlerPanicked => log.line("closing: the handler panicked"),
        End::Error(e) => log.line(&format!("closing: {e}")),
    }
    // The protocol asks the server to finish outstanding requests before closing, and the
    // handler is promised connection_closed only after the last of its replies.
    conn.wait_idle();
    conn.close();
    if catch_unwind(AssertUnwindSafe(|| handler.connection_closed(id))).is_err() {
        log.line("the handler panicked in connection_closed");
    }
}
