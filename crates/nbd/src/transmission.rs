//! The transmission phase: reading requests, checking them, and handing the valid ones to the
//! handler together with a `Reply`.

use std::io::Read;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::connection::{Connection, Reply};
use crate::error::ConnError;
use crate::frame::{read_frame, read_payload, skip_payload};
use crate::proto::*;
use crate::{Command, Errno, Handler, Request, ServerConfig, MAX_PAYLOAD};

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

// `u64::is_multiple_of` would need Rust 1.87; the workspace supports 1.80.
#[allow(clippy::manual_is_multiple_of)]
fn aligned(value: u64, to: u64) -> bool {
    value % to == 0
}

/// Reads requests until the client disconnects, breaks the protocol, or the server shuts down.
/// Valid requests go to the handler; invalid ones are answered here.
pub(crate) fn serve<R: Read>(ctx: &Context<'_>, reader: &mut R, conn: &Arc<Connection>) -> End {
    let config = ctx.config;
    loop {
        // Backpressure: while the handler holds the maximum number of requests, the socket is
        // not read, so the client's sends block instead of our memory growing.
        conn.wait_for_slot(config.max_in_flight);
        if ctx.shutting_down.load(Ordering::Acquire) {
            return End::Shutdown;
        }
        let mut buf = [0u8; REQUEST_HEADER_LEN];
        match read_frame(reader, &mut buf, "a request header") {
            Ok(true) => {}
            // A failed reply write shuts the socket down, which ends this read too; and a
            // shutdown wakes this read on purpose. Neither is the client's doing.
            Ok(false) | Err(_) if conn.is_closed() => return End::WriteFailed,
            Ok(false) | Err(_) if ctx.shutting_down.load(Ordering::Acquire) => {
                return End::Shutdown
            }
            Ok(false) => return End::Eof,
            Err(e) => return End::Error(e),
        }
        let header = Header::parse(&buf);
        if header.magic != REQUEST_MAGIC {
            return End::Error(ConnError::BadRequestMagic(header.magic));
        }
        let command = match header.kind {
            CMD_READ => Command::Read,
            CMD_WRITE => Command::Write,
            CMD_FLUSH => Command::Flush,
            CMD_TRIM => Command::Trim,
            CMD_WRITE_ZEROES => Command::WriteZeroes,
            CMD_DISC => return End::Disconnect,
            CMD_CACHE | CMD_BLOCK_STATUS | CMD_RESIZE => {
                // Commands the protocol defines but we do not advertise. None of them carries
                // a payload without extended headers (which we refuse), so the stream stays in
                // step and the protocol's answer is EINVAL.
                conn.send(header.cookie, Errno::Inval.code(), &[]);
                continue;
            }
            other => return End::Error(ConnError::UnknownCommand(other)),
        };
        if command == Command::Write && header.length > MAX_PAYLOAD {
            return End::Error(ConnError::PayloadTooLarge(header.length));
        }

        if let Err(errno) = check(config, command, header.flags, header.offset, header.length) {
            if command == Command::Write {
                if let Err(e) = skip_payload(reader, header.length, "a refused write's payload") {
                    return End::Error(e);
                }
            }
            conn.send(header.cookie, errno.code(), &[]);
            continue;
        }
        if header.length == 0 && command != Command::Flush {
            // A zero-length read, write, trim or zero touches nothing; answering it here spares
            // every handler that corner case.
            conn.send(header.cookie, 0, &[]);
            continue;
        }

        let budget = match command {
            Command::Read | Command::Write => u64::from(header.length),
            _ => 0,
        };
        conn.admit(budget, config.max_in_flight_bytes);
        let data = if command == Command::Write {
            match read_payload(reader, header.length, "a write payload") {
                Ok(data) => data,
                Err(e) => {
                    conn.release(budget);
                    return End::Error(e);
                }
            }
        } else {
            Vec::new()
        };
        let request = Request {
            connection: ctx.id,
            cookie: header.cookie,
            command,
            offset: header.offset,
            length: header.length,
            fua: header.flags & CMD_FLAG_FUA != 0,
            no_hole: header.flags & CMD_FLAG_NO_HOLE != 0,
            data,
        };
        let reply = Reply::new(
            Arc::clone(conn),
            header.cookie,
            command,
            header.length,
            budget,
        );
        let handled = catch_unwind(AssertUnwindSafe(|| ctx.handler.request(request, reply)));
        if handled.is_err() {
            return End::HandlerPanicked;
        }
    }
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
