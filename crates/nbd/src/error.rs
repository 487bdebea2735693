//! Why a connection was closed by the server.

use std::fmt;
use std::io;

/// A reason to end a connection. Each one is logged with the peer address; none of them affects
/// other connections.
#[derive(Debug)]
pub(crate) enum ConnError {
    /// The socket failed.
    Io(io::Error),
    /// A read or write did not make progress within its timeout.
    TimedOut(&'static str),
    /// The peer closed the connection in the middle of a message.
    Truncated {
        what: &'static str,
        got: u64,
        expected: u64,
    },
    /// The peer closed the connection before finishing the handshake.
    ClosedDuringHandshake,
    /// The client set flags we do not know; the protocol requires closing.
    UnknownClientFlags(u32),
    /// An option header did not start with `IHAVEOPT`.
    BadOptionMagic(u64),
    /// An option announced more data than we are willing to buffer.
    OptionTooLong { option: u32, length: u32 },
    /// `NBD_OPT_EXPORT_NAME` named an export we do not have; that option cannot return an
    /// error, so the protocol requires closing.
    UnknownExport(String),
    /// A request header did not start with the request magic.
    BadRequestMagic(u32),
    /// A command type the protocol document does not define; we cannot tell whether data
    /// follows it, so the stream can no longer be trusted.
    UnknownCommand(u16),
    /// A write announced a payload larger than the protocol's denial-of-service threshold;
    /// skipping it would mean reading that much garbage, so we close instead.
    PayloadTooLarge(u32),
}

impl ConnError {
    /// Classifies a socket error: timeouts get their own variant so the log says what stalled.
    pub(crate) fn from_io(error: io::Error, during: &'static str) -> ConnError {
        match error.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => ConnError::TimedOut(during),
            _ => ConnError::Io(error),
        }
    }
}

impl fmt::Display for ConnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnError::Io(e) => write!(f, "socket error: {e}"),
            ConnError::TimedOut(during) => write!(f, "timed out during {during}"),
            ConnError::Truncated {
                what,
                got,
                expected,
            } => write!(
                f,
                "connection closed in the middle of {what} ({got} of {expected} bytes received)"
            ),
            ConnError::ClosedDuringHandshake => {
                write!(f, "client closed the connection during the handshake")
            }
            ConnError::UnknownClientFlags(flags) => {
                write!(f, "client sent unknown handshake flags {flags:#010x}")
            }
            ConnError::BadOptionMagic(magic) => {
                write!(f, "option header has bad magic {magic:#018x}")
            }
            ConnError::OptionTooLong { option, length } => write!(
                f,
                "option {option} announces {length} bytes of data, more than the limit of {} bytes",
                crate::MAX_OPTION_LENGTH
            ),
            ConnError::UnknownExport(name) => {
                write!(f, "NBD_OPT_EXPORT_NAME asked for unknown export {name:?}")
            }
            ConnError::BadRequestMagic(magic) => {
                write!(f, "request header has bad magic {magic:#010x}")
            }
            ConnError::UnknownCommand(kind) => write!(f, "unknown command type {kind}"),
            ConnError::PayloadTooLarge(length) => write!(
                f,
                "write announces a {length}-byte payload, more than the limit of {} bytes",
                crate::MAX_PAYLOAD
            ),
        }
    }
}

impl std::error::Error for ConnError {}

/// Shows an untrusted name in a log line: lossily decoded, escaped by `{:?}` later, and cut to a
/// length that keeps the line readable.
pub(crate) fn printable_name(bytes: &[u8]) -> String {
    const SHOWN: usize = 64;
    let cut = &bytes[..bytes.len().min(SHOWN)];
    let mut name = String::from_utf8_lossy(cut).into_owned();
    if bytes.len() > SHOWN {
        name.push_str("...");
    }
    name
}
