//! An NBD (Network Block Device) server library.
//!
//! It accepts clients over TCP or a Unix socket, runs the fixed newstyle handshake, parses
//! transmission-phase requests, checks them against the protocol and the export, and hands every
//! valid request to a [`Handler`] together with a [`Reply`]. The handler may answer at once or
//! later from any thread, so many requests can be in flight on one connection and their replies
//! go out in whatever order the handler answers them. This is what the emulator needs: it
//! replies at the instant a device model says the I/O completes.
//!
//! Threads: one accept thread, and one reader thread per connection that does the handshake and
//! then reads requests. Replies are written by whichever thread answers, under a mutex on the
//! connection's write half; a thread answering many at once can gather them in a
//! [`ReplyBatch`] and write each connection's replies with one system call. A thread that spins
//! anyway can also receive a connection's requests itself, without blocking, through the
//! [`ConnectionPoller`] the handler is offered; the reader thread then parks until the poller
//! goes inactive, so that no thread is woken per request.
//!
//! Limits keep memory bounded whatever a client sends: option data is capped at
//! [`MAX_OPTION_LENGTH`], write payloads at [`MAX_PAYLOAD`], each connection holds at most
//! [`ServerConfig::max_in_flight`] requests and [`ServerConfig::max_in_flight_bytes`] bytes of
//! read/write data in the handler (the reader stops reading the socket until replies free room),
//! and at most [`ServerConfig::max_connections`] connections are open.
//!
//! Only simple replies are implemented: structured replies, block status, metadata contexts,
//! extended headers and TLS are refused during the handshake, which real clients (qemu,
//! libnbd) handle by falling back. See `docs/nbd.md` for the full list.

mod connection;
mod error;
mod frame;
mod handover;
mod handshake;
mod proto;
mod server;
mod stream;
mod transmission;

use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use connection::{Reply, ReplyBatch};
pub use handover::{ConnectionPoller, IntakeStats, Polled, Served};
pub use server::{Server, ServerHandle};

/// Largest write payload (and read length) the server ever accepts: 32 MiB, the size the
/// protocol says must never be treated as a denial of service.
pub const MAX_PAYLOAD: u32 = 32 * 1024 * 1024;
/// Largest option data accepted during the handshake. Real options are a few hundred bytes at
/// most (names are limited to 4096); a longer one closes the connection.
pub const MAX_OPTION_LENGTH: u32 = 64 * 1024;
/// Default for [`ServerConfig::max_in_flight`].
pub const DEFAULT_MAX_IN_FLIGHT: usize = 128;
/// Upper limit for [`ServerConfig::max_in_flight`], the project's queue depth limit.
pub const MAX_IN_FLIGHT_LIMIT: usize = 65_536;
/// Default for [`ServerConfig::max_in_flight_bytes`].
pub const DEFAULT_MAX_IN_FLIGHT_BYTES: u64 = 128 * 1024 * 1024;
/// Default for [`ServerConfig::max_connections`].
pub const DEFAULT_MAX_CONNECTIONS: usize = 64;
/// Longest export name or description, from the protocol's limit on strings.
pub const MAX_STRING: usize = 4096;

/// The one export a server offers.
#[derive(Clone, Debug)]
pub struct Export {
    /// The name clients ask for. The empty name (the protocol's "default export") also selects
    /// this export.
    pub name: String,
    /// Free text shown by `nbdinfo` and `NBD_OPT_LIST`.
    pub description: String,
    pub size_bytes: u64,
    /// Advertised with `NBD_FLAG_READ_ONLY`; writes, trims and write-zeroes get `EPERM`
    /// without reaching the handler.
    pub read_only: bool,
}

/// A transmission-phase command that reaches the handler. Disconnects are handled by the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    Read,
    Write,
    Flush,
    Trim,
    WriteZeroes,
}

/// One request that passed every protocol and bounds check: `offset + length` lies within the
/// export, `length` is nonzero (zero-length data commands are answered by the server), a read or
/// write or write-zeroes is at most the maximum block size, and the export is writable if the
/// command writes. A flush has offset and length zero.
#[derive(Debug)]
pub struct Request {
    /// Server-assigned connection number, the same one [`Handler::connection_opened`] saw.
    pub connection: u64,
    /// The client's cookie; [`Reply`] carries it back.
    pub cookie: u64,
    pub command: Command,
    pub offset: u64,
    pub length: u32,
    /// `NBD_CMD_FLAG_FUA`: reply only once the data is durable.
    pub fua: bool,
    /// `NBD_CMD_FLAG_NO_HOLE` (write-zeroes only): do not deallocate the range.
    pub no_hole: bool,
    /// The write payload, exactly `length` bytes; empty for other commands.
    pub data: Vec<u8>,
}

/// Error values a reply can carry, with the numbers the NBD protocol defines for them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Errno {
    Perm,
    Io,
    NoMem,
    Inval,
    NoSpc,
    Overflow,
    NotSup,
    Shutdown,
}

impl Errno {
    /// The value sent on the wire.
    pub fn code(self) -> u32 {
        match self {
            Errno::Perm => 1,
            Errno::Io => 5,
            Errno::NoMem => 12,
            Errno::Inval => 22,
            Errno::NoSpc => 28,
            Errno::Overflow => 75,
            Errno::NotSup => 95,
            Errno::Shutdown => 108,
        }
    }

    /// The error for a wire value, if it is one the protocol defines.
    pub fn from_code(code: u32) -> Option<Errno> {
        Some(match code {
            1 => Errno::Perm,
            5 => Errno::Io,
            12 => Errno::NoMem,
            22 => Errno::Inval,
            28 => Errno::NoSpc,
            75 => Errno::Overflow,
            95 => Errno::NotSup,
            108 => Errno::Shutdown,
            _ => return None,
        })
    }
}

/// What the server calls for requests and connection events.
pub trait Handler: Send + Sync + 'static {
    /// Called for every well-formed, bounds-checked request, in the order the client sent
    /// them: on the connection's reader thread, or on the thread polling the connection (see
    /// [`Handler::connection_poller`]).
    ///
    /// It should return quickly: the connection reads nothing more until it returns. On a
    /// polling thread it must not wait for anything that thread provides. The `reply` may be
    /// answered now or later from any thread; dropping it unanswered sends `EIO`. A panic here
    /// closes the connection (the dropped `reply` sends `EIO`).
    fn request(&self, request: Request, reply: Reply);

    /// Called on the reader thread when a connection enters the transmission phase, before
    /// its first request. `peer` is "ADDR:PORT" for TCP or "unix:PATH" for Unix sockets.
    fn connection_opened(&self, _connection: u64, _peer: &str) {}

    /// Called on the reader thread right after [`Handler::connection_opened`], with a poller
    /// through which a thread that spins anyway can receive this connection's requests itself
    /// (it starts inactive). The default drops it: the reader thread then receives everything.
    fn connection_poller(&self, _poller: ConnectionPoller) {}

    /// Called once per opened connection, after its last reply has been sent (or discarded)
    /// and the socket is closed.
    fn connection_closed(&self, _connection: u64) {}
}

/// Where to listen.
#[derive(Clone, Debug)]
pub enum Listen {
    /// A TCP address; port 0 picks a free port (see [`Server::local_addr`]).
    Tcp(std::net::SocketAddr),
    /// A Unix-domain socket path.
    Unix(PathBuf),
}

/// Block size constraints, advertised with `NBD_INFO_BLOCK_SIZE` and enforced with `EINVAL`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockSize {
    /// Offsets and lengths must be multiples of this (a power of two, at most 64 KiB).
    pub minimum: u32,
    /// Requests of this size and alignment are efficient (a power of two, at least 512 and at
    /// least `minimum`).
    pub preferred: u32,
    /// Longest read, write or write-zeroes (a multiple of `minimum`, at least `preferred`, at
    /// most [`MAX_PAYLOAD`]). Trims may be longer, as the protocol allows.
    pub maximum: u32,
}

impl Default for BlockSize {
    /// Byte granularity, 4 KiB preferred, 32 MiB maximum.
    fn default() -> Self {
        BlockSize {
            minimum: 1,
            preferred: 4096,
            maximum: MAX_PAYLOAD,
        }
    }
}

/// A log sink. It receives one line per event, without a trailing newline.
pub type LogFn = Arc<dyn Fn(&str) + Send + Sync>;

/// Server settings. [`ServerConfig::new`] fills in the defaults.
#[derive(Clone)]
pub struct ServerConfig {
    pub export: Export,
    /// Most requests one connection may have in the handler at once (1 to
    /// [`MAX_IN_FLIGHT_LIMIT`]); at the limit the connection stops reading its socket.
    pub max_in_flight: usize,
    /// Most read/write bytes one connection may have in the handler at once; a single request
    /// larger than this is still admitted when nothing else is in flight.
    pub max_in_flight_bytes: u64,
    pub block_size: BlockSize,
    /// Most open connections; further ones are closed at once with a log line.
    pub max_connections: usize,
    /// A client must complete the whole handshake (up to entering transmission) within this
    /// time.
    pub handshake_timeout: Duration,
    /// A reply write that makes no progress for this long closes the connection, so a client
    /// that stops reading cannot block the threads that answer requests.
    pub write_timeout: Duration,
    /// Where log lines go: connection errors, refused connections, handler misuse of `Reply`.
    pub log: LogFn,
}

impl ServerConfig {
    /// Defaults: 128 requests and 128 MiB in flight per connection, default block sizes,
    /// 64 connections, 30 s handshake and write timeouts, logging to standard error.
    pub fn new(export: Export) -> ServerConfig {
        ServerConfig {
            export,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            max_in_flight_bytes: DEFAULT_MAX_IN_FLIGHT_BYTES,
            block_size: BlockSize::default(),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            handshake_timeout: Duration::from_secs(30),
            write_timeout: Duration::from_secs(30),
            log: Arc::new(|line: &str| eprintln!("{line}")),
        }
    }

    /// Checks the settings for consistency; [`Server::bind`] calls this.
    pub fn validate(&self) -> io::Result<()> {
        let invalid = |message: String| Err(io::Error::new(io::ErrorKind::InvalidInput, message));
        if self.export.name.len() > MAX_STRING {
            return invalid(format!("export name longer than {MAX_STRING} bytes"));
        }
        if self.export.description.len() > MAX_STRING {
            return invalid(format!("export description longer than {MAX_STRING} bytes"));
        }
        if self.export.name.contains('\0') || self.export.description.contains('\0') {
            return invalid("export name and description must not contain NUL".into());
        }
        if !(1..=MAX_IN_FLIGHT_LIMIT).contains(&self.max_in_flight) {
            return invalid(format!(
                "max_in_flight must be between 1 and {MAX_IN_FLIGHT_LIMIT}, not {}",
                self.max_in_flight
            ));
        }
        if self.max_in_flight_bytes == 0 {
            return invalid("max_in_flight_bytes must be positive".into());
        }
        if self.max_connections == 0 {
            return invalid("max_connections must be positive".into());
        }
        if self.handshake_timeout.is_zero() || self.write_timeout.is_zero() {
            return invalid("timeouts must be positive".into());
        }
        let BlockSize {
            minimum,
            preferred,
            maximum,
        } = self.block_size;
        if !minimum.is_power_of_two() || minimum > 65_536 {
            return invalid(format!(
                "minimum block size {minimum} must be a power of two of at most 65536"
            ));
        }
        if !preferred.is_power_of_two() || preferred < minimum.max(512) {
            return invalid(format!(
                "preferred block size {preferred} must be a power of two of at least 512 and \
                 at least the minimum"
            ));
        }
        if maximum % minimum != 0 || maximum < preferred || maximum > MAX_PAYLOAD {
            return invalid(format!(
                "maximum block size {maximum} must be a multiple of the minimum, at least the \
                 preferred size and at most {MAX_PAYLOAD}"
            ));
        }
        Ok(())
    }
}

impl std::fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConfig")
            .field("export", &self.export)
            .field("max_in_flight", &self.max_in_flight)
            .field("max_in_flight_bytes", &self.max_in_flight_bytes)
            .field("block_size", &self.block_size)
            .field("max_connections", &self.max_connections)
            .field("handshake_timeout", &self.handshake_timeout)
            .field("write_timeout", &self.write_timeout)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn export() -> Export {
        Export {
            name: "x".into(),
            description: String::new(),
            size_bytes: 4096,
            read_only: false,
        }
    }

    #[test]
    fn errno_codes_round_trip() {
        for e in [
            Errno::Perm,
            Errno::Io,
            Errno::NoMem,
            Errno::Inval,
            Errno::NoSpc,
            Errno::Overflow,
            Errno::NotSup,
            Errno::Shutdown,
        ] {
            assert_eq!(Errno::from_code(e.code()), Some(e));
        }
        assert_eq!(Errno::from_code(0), None);
    }

    #[test]
    fn validation_rejects_inconsistent_settings() {
        assert!(ServerConfig::new(export()).validate().is_ok());
        let mut c = ServerConfig::new(export());
        c.max_in_flight = 0;
        assert!(c.validate().is_err());
        let mut c = ServerConfig::new(export());
        c.block_size.minimum = 3;
        assert!(c.validate().is_err());
        let mut c = ServerConfig::new(export());
        c.block_size.maximum = MAX_PAYLOAD + 1;
        assert!(c.validate().is_err());
        let mut c = ServerConfig::new(export());
        c.block_size.preferred = 256;
        assert!(c.validate().is_err());
        let mut c = ServerConfig::new(export());
        c.export.name = "n".repeat(MAX_STRING + 1);
        assert!(c.validate().is_err());
    }
}
