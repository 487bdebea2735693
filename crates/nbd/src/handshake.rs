//! The fixed newstyle handshake: greeting, client flags and option haggling, up to the moment
//! the connection enters the transmission phase.

use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::connection::Logger;
use crate::error::{printable_name, ConnError};
use crate::frame::{read_frame, read_payload};
use crate::proto::*;
use crate::{ServerConfig, MAX_OPTION_LENGTH};

/// How the handshake ended without an error.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Negotiated {
    /// The client chose our export; requests follow.
    Transmission,
    /// The client aborted (`NBD_OPT_ABORT`) or the server is shutting down.
    Ended,
}

/// What follows an option's reply.
enum Step {
    NextOption,
    Transmission,
    /// The handshake ends (an abort, or the server is shutting down); the reply is sent
    /// without caring whether the client still reads it.
    Ended,
}

/// The transmission flags advertised for `config`'s export.
pub(crate) fn transmission_flags(config: &ServerConfig) -> u16 {
    let mut flags = TFLAG_HAS_FLAGS | TFLAG_SEND_FLUSH | TFLAG_CAN_MULTI_CONN;
    if config.export.read_only {
        flags |= TFLAG_READ_ONLY;
    } else {
        flags |= TFLAG_SEND_FUA | TFLAG_SEND_TRIM | TFLAG_SEND_WRITE_ZEROES;
    }
    flags
}

/// Whether a requested name selects our export. The empty name is the protocol's "default
/// export", which is our only one.
fn selects_export(config: &ServerConfig, name: &[u8]) -> bool {
    name.is_empty() || name == config.export.name.as_bytes()
}

/// Runs the handshake on `reader`/`writer`. Everything the client sends is bounded and checked
/// before it is used; an error means the connection must be closed.
pub(crate) fn negotiate<R: Read, W: Write>(
    reader: &mut R,
    writer: &mut W,
    config: &ServerConfig,
    shutting_down: &AtomicBool,
    log: &Logger,
) -> Result<Negotiated, ConnError> {
    let no_zeroes = greet(reader, writer)?;
    let haggling = Haggling {
        config,
        tflags: transmission_flags(config),
        no_zeroes,
        log,
    };
    loop {
        let (option, data) = read_option(reader)?;
        let mut out = Vec::new();
        let next = if shutting_down.load(Ordering::Acquire) {
            // The protocol asks for NBD_REP_ERR_SHUTDOWN, after which the client must
            // disconnect; acknowledging an abort is the polite exception.
            let reply = if option == OPT_ABORT {
                REP_ACK
            } else {
                REP_ERR_SHUTDOWN
            };
            push_option_reply(&mut out, option, reply, &[]);
            Step::Ended
        } else {
            haggling.answer(&mut out, option, &data)?
        };
        match next {
            Step::NextOption => send(writer, &out)?,
            Step::Transmission => {
                send(writer, &out)?;
                return Ok(Negotiated::Transmission);
            }
            Step::Ended => {
                // The client may already have closed its end; the reply is a courtesy.
                let _ = send(writer, &out);
                return Ok(Negotiated::Ended);
            }
        }
    }
}

/// Writes `bytes` and flushes them.
fn send<W: Write>(writer: &mut W, bytes: &[u8]) -> Result<(), ConnError> {
    writer
        .write_all(bytes)
        .and_then(|()| writer.flush())
        .map_err(|e| ConnError::from_io(e, "the handshake"))
}

/// Sends the server's greeting and reads the client's flags, refusing flags it does not
/// know. Returns whether the client asked for no zeroes after `NBD_OPT_EXPORT_NAME`'s reply.
fn greet<R: Read, W: Write>(reader: &mut R, writer: &mut W) -> Result<bool, ConnError> {
    let mut greeting = Vec::with_capacity(18);
    greeting.extend_from_slice(&NBD_MAGIC.to_be_bytes());
    greeting.extend_from_slice(&IHAVEOPT.to_be_bytes());
    greeting.extend_from_slice(&(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES).to_be_bytes());
    send(writer, &greeting)?;

    let mut client_flags = [0u8; 4];
    if !read_frame(reader, &mut client_flags, "the client flags")? {
        return Err(ConnError::ClosedDuringHandshake);
    }
    let client_flags = u32::from_be_bytes(client_flags);
    if client_flags & !(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES) != 0 {
        return Err(ConnError::UnknownClientFlags(client_flags));
    }
    Ok(client_flags & FLAG_C_NO_ZEROES != 0)
}

/// Reads an option's header and its data, at most `MAX_OPTION_LENGTH` bytes of it.
fn read_option<R: Read>(reader: &mut R) -> Result<(u32, Vec<u8>), ConnError> {
    let mut header = [0u8; OPTION_HEADER_LEN];
    if !read_frame(reader, &mut header, "an option header")? {
        return Err(ConnError::ClosedDuringHandshake);
    }
    let magic = u64_at(&header, 0);
    let option = u32_at(&header, 8);
    let length = u32_at(&header, 12);
    if magic != IHAVEOPT {
        return Err(ConnError::BadOptionMagic(magic));
    }
    if length > MAX_OPTION_LENGTH {
        return Err(ConnError::OptionTooLong { option, length });
    }
    let data = read_payload(reader, length, "option data")?;
    Ok((option, data))
}

/// What the answers to the client's options depend on: our export and its transmission
/// flags, and whether the client asked for no zeroes.
struct Haggling<'a> {
    config: &'a ServerConfig,
    tflags: u16,
    no_zeroes: bool,
    log: &'a Logger,
}

impl Haggling<'_> {
    /// Appends the answer to `option` with `data` to `out`; says what follows it. An
    /// `NBD_OPT_EXPORT_NAME` for another export is an error: that option has no error reply.
    fn answer(&self, out: &mut Vec<u8>, option: u32, data: &[u8]) -> Result<Step, ConnError> {
        Ok(match option {
            OPT_EXPORT_NAME => {
                if !selects_export(self.config, data) {
                    return Err(ConnError::UnknownExport(printable_name(data)));
                }
                out.extend_from_slice(&self.config.export.size_bytes.to_be_bytes());
                out.extend_from_slice(&self.tflags.to_be_bytes());
                if !self.no_zeroes {
                    out.extend_from_slice(&[0u8; 124]);
                }
                Step::Transmission
            }
            OPT_ABORT => {
                push_option_reply(out, option, REP_ACK, &[]);
                Step::Ended
            }
            OPT_LIST => {
                self.list(out, option, data);
                Step::NextOption
            }
            OPT_INFO | OPT_GO => self.info(out, option, data),
            OPT_STARTTLS => {
                push_option_reply(out, option, REP_ERR_UNSUP, b"TLS is not supported");
                Step::NextOption
            }
            OPT_STRUCTURED_REPLY | OPT_EXTENDED_HEADERS => {
                push_option_reply(
                    out,
                    option,
                    REP_ERR_UNSUP,
                    b"this server sends simple replies only",
                );
                Step::NextOption
            }
            OPT_LIST_META_CONTEXT | OPT_SET_META_CONTEXT => {
                push_option_reply(
                    out,
                    option,
                    REP_ERR_UNSUP,
                    b"metadata contexts are not supported",
                );
                Step::NextOption
            }
            _ => {
                push_option_reply(out, option, REP_ERR_UNSUP, b"unknown option");
                Step::NextOption
            }
        })
    }

    /// `NBD_OPT_LIST`: our one export, with its description.
    fn list(&self, out: &mut Vec<u8>, option: u32, data: &[u8]) {
        if data.is_empty() {
            let name = self.config.export.name.as_bytes();
            let mut server = Vec::with_capacity(4 + name.len());
            server.extend_from_slice(&(name.len() as u32).to_be_bytes());
            server.extend_from_slice(name);
            server.extend_from_slice(self.config.export.description.as_bytes());
            push_option_reply(out, option, REP_SERVER, &server);
            push_option_reply(out, option, REP_ACK, &[]);
        } else {
            push_option_reply(out, option, REP_ERR_INVALID, b"NBD_OPT_LIST takes no data");
        }
    }

    /// `NBD_OPT_INFO` and `NBD_OPT_GO`: the export's information, then transmission for GO;
    /// an error reply for malformed data or another export.
    fn info(&self, out: &mut Vec<u8>, option: u32, data: &[u8]) -> Step {
        match parse_info_request(data) {
            None => {
                push_option_reply(
                    out,
                    option,
                    REP_ERR_INVALID,
                    b"malformed NBD_OPT_INFO/NBD_OPT_GO data",
                );
                Step::NextOption
            }
            Some((name, _)) if !selects_export(self.config, name) => {
                self.log.line(&format!(
                    "client asked for unknown export {:?}",
                    printable_name(name)
                ));
                push_option_reply(out, option, REP_ERR_UNKNOWN, b"unknown export");
                Step::NextOption
            }
            Some((_, requested)) => {
                push_export_info(out, option, self.config, self.tflags, &requested);
                if option == OPT_GO {
                    Step::Transmission
                } else {
                    Step::NextOption
                }
            }
        }
    }
}

/// Parses the data of `NBD_OPT_INFO`/`NBD_OPT_GO`: a name and a list of information requests.
/// Returns `None` when the lengths inside do not add up to the option's length.
fn parse_info_request(data: &[u8]) -> Option<(&[u8], Vec<u16>)> {
    let mut cursor = Cursor::new(data);
    let name_len = cursor.u32()?;
    let name = cursor.bytes(usize::try_from(name_len).ok()?)?;
    let count = cursor.u16()?;
    if cursor.remaining() != usize::from(count) * 2 {
        return None;
    }
    let mut requests = Vec::with_capacity(usize::from(count));
    for _ in 0..count {
        requests.push(cursor.u16()?);
    }
    Some((name, requests))
}

/// Appends the information replies and the final acknowledgement for a successful
/// `NBD_OPT_INFO`/`NBD_OPT_GO`.
fn push_export_info(
    out: &mut Vec<u8>,
    option: u32,
    config: &ServerConfig,
    tflags: u16,
    requested: &[u16],
) {
    let mut export = Vec::with_capacity(12);
    export.extend_from_slice(&INFO_EXPORT.to_be_bytes());
    export.extend_from_slice(&config.export.size_bytes.to_be_bytes());
    export.extend_from_slice(&tflags.to_be_bytes());
    push_option_reply(out, option, REP_INFO, &export);

    if requested.contains(&INFO_NAME) {
        let mut name = INFO_NAME.to_be_bytes().to_vec();
        name.extend_from_slice(config.export.name.as_bytes());
        push_option_reply(out, option, REP_INFO, &name);
    }
    if requested.contains(&INFO_DESCRIPTION) {
        let mut description = INFO_DESCRIPTION.to_be_bytes().to_vec();
        description.extend_from_slice(config.export.description.as_bytes());
        push_option_reply(out, option, REP_INFO, &description);
    }
    // Sent even when not requested (the protocol allows it): clients that understand it learn
    // the limits, and the server enforces them either way.
    let sizes = config.block_size;
    let mut block = Vec::with_capacity(14);
    block.extend_from_slice(&INFO_BLOCK_SIZE.to_be_bytes());
    block.extend_from_slice(&sizes.minimum.to_be_bytes());
    block.extend_from_slice(&sizes.preferred.to_be_bytes());
    block.extend_from_slice(&sizes.maximum.to_be_bytes());
    push_option_reply(out, option, REP_INFO, &block);

    push_option_reply(out, option, REP_ACK, &[]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Export;
    use std::sync::Arc;

    fn config(read_only: bool) -> ServerConfig {
        let mut c = ServerConfig::new(Export {
            name: "disk".into(),
            description: "a test disk".into(),
            size_bytes: 1 << 20,
            read_only,
        });
        c.log = Arc::new(|_| {});
        c
    }

    fn option(out: &mut Vec<u8>, option: u32, data: &[u8]) {
        out.extend_from_slice(&IHAVEOPT.to_be_bytes());
        out.extend_from_slice(&option.to_be_bytes());
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        out.extend_from_slice(data);
    }

    fn run(input: &[u8], read_only: bool) -> (Result<Negotiated, ConnError>, Vec<u8>) {
        run_with(input, read_only, false)
    }

    fn run_with(
        input: &[u8],
        read_only: bool,
        shutting_down: bool,
    ) -> (Result<Negotiated, ConnError>, Vec<u8>) {
        let mut reader = input;
        let mut written = Vec::new();
        let log = Logger::new(Arc::new(|_| {}), String::new());
        let result = negotiate(
            &mut reader,
            &mut written,
            &config(read_only),
            &AtomicBool::new(shutting_down),
            &log,
        );
        (result, written)
    }

    /// Splits option replies after the 18-byte greeting into (option, type, data).
    fn replies(written: &[u8]) -> Vec<(u32, u32, Vec<u8>)> {
        let mut c = Cursor::new(&written[18..]);
        let mut out = Vec::new();
        while c.remaining() > 0 {
            let magic = (u64::from(c.u32().unwrap()) << 32) | u64::from(c.u32().unwrap());
            assert_eq!(magic, OPTION_REPLY_MAGIC);
            let option = c.u32().unwrap();
            let kind = c.u32().unwrap();
            let len = c.u32().unwrap() as usize;
            out.push((option, kind, c.bytes(len).unwrap().to_vec()));
        }
        out
    }

    #[test]
    fn go_sends_export_info_and_enters_transmission() {
        let mut input = 3u32.to_be_bytes().to_vec();
        let mut data = 4u32.to_be_bytes().to_vec();
        data.extend_from_slice(b"disk");
        data.extend_from_slice(&2u16.to_be_bytes());
        data.extend_from_slice(&INFO_NAME.to_be_bytes());
        data.extend_from_slice(&INFO_DESCRIPTION.to_be_bytes());
        option(&mut input, OPT_STRUCTURED_REPLY, &[]);
        option(&mut input, OPT_GO, &data);
        let (result, written) = run(&input, false);
        assert_eq!(result.ok(), Some(Negotiated::Transmission));
        let r = replies(&written);
        assert_eq!(r[0].1, REP_ERR_UNSUP);
        assert_eq!(r[1].1, REP_INFO);
        let mut export = INFO_EXPORT.to_be_bytes().to_vec();
        export.extend_from_slice(&(1u64 << 20).to_be_bytes());
        let flags = TFLAG_HAS_FLAGS
            | TFLAG_SEND_FLUSH
            | TFLAG_SEND_FUA
            | TFLAG_SEND_TRIM
            | TFLAG_SEND_WRITE_ZEROES
            | TFLAG_CAN_MULTI_CONN;
        export.extend_from_slice(&flags.to_be_bytes());
        assert_eq!(r[1].2, export);
        assert_eq!(&r[2].2[2..], b"disk");
        assert_eq!(&r[3].2[2..], b"a test disk");
        assert_eq!(r[4].2.len(), 14);
        assert_eq!(r.last().unwrap().1, REP_ACK);
    }

    #[test]
    fn unknown_export_in_go_is_an_error_reply_not_a_close() {
        let mut input = 1u32.to_be_bytes().to_vec();
        let mut data = 5u32.to_be_bytes().to_vec();
        data.extend_from_slice(b"other");
        data.extend_from_slice(&0u16.to_be_bytes());
        option(&mut input, OPT_GO, &data);
        option(&mut input, OPT_ABORT, &[]);
        let (result, written) = run(&input, false);
        assert_eq!(result.ok(), Some(Negotiated::Ended));
        let r = replies(&written);
        assert_eq!(r[0].1, REP_ERR_UNKNOWN);
        assert_eq!(r[1].1, REP_ACK);
    }

    #[test]
    fn malformed_info_lengths_are_invalid() {
        let mut input = 1u32.to_be_bytes().to_vec();
        // Name length claims more bytes than the option holds.
        option(&mut input, OPT_INFO, &[0, 0, 1, 0, b'd', 0, 0]);
        // Request count does not match the remaining bytes.
        option(&mut input, OPT_INFO, &[0, 0, 0, 0, 0, 2, 0, 1]);
        option(&mut input, OPT_LIST, b"x");
        option(&mut input, 0x1234, b"whatever");
        option(&mut input, OPT_ABORT, &[]);
        let (result, written) = run(&input, false);
        assert_eq!(result.ok(), Some(Negotiated::Ended));
        let kinds: Vec<u32> = replies(&written).iter().map(|r| r.1).collect();
        assert_eq!(
            kinds,
            [
                REP_ERR_INVALID,
                REP_ERR_INVALID,
                REP_ERR_INVALID,
                REP_ERR_UNSUP,
                REP_ACK
            ]
        );
    }

    #[test]
    fn export_name_honours_no_zeroes() {
        for (flags, expected_len) in [(1u32, 18 + 10 + 124), (3u32, 18 + 10)] {
            let mut input = flags.to_be_bytes().to_vec();
            option(&mut input, OPT_EXPORT_NAME, b"disk");
            let (result, written) = run(&input, true);
            assert_eq!(result.ok(), Some(Negotiated::Transmission));
            assert_eq!(written.len(), expected_len);
            let flags = u16::from_be_bytes([written[26], written[27]]);
            assert_ne!(flags & TFLAG_READ_ONLY, 0);
        }
    }

    #[test]
    fn hostile_handshakes_are_errors() {
        let (r, _) = run(&[0, 0, 0, 4], false);
        assert!(matches!(r, Err(ConnError::UnknownClientFlags(4))));
        let mut input = 1u32.to_be_bytes().to_vec();
        input.extend_from_slice(&[0u8; 16]);
        assert!(matches!(
            run(&input, false).0,
            Err(ConnError::BadOptionMagic(0))
        ));
        let mut input = 1u32.to_be_bytes().to_vec();
        input.extend_from_slice(&IHAVEOPT.to_be_bytes());
        input.extend_from_slice(&OPT_LIST.to_be_bytes());
        input.extend_from_slice(&u32::MAX.to_be_bytes());
        assert!(matches!(
            run(&input, false).0,
            Err(ConnError::OptionTooLong { .. })
        ));
        let mut input = 1u32.to_be_bytes().to_vec();
        option(&mut input, OPT_EXPORT_NAME, b"nope");
        assert!(matches!(
            run(&input, false).0,
            Err(ConnError::UnknownExport(_))
        ));
        let (r, _) = run(&[0, 0], false);
        assert!(matches!(r, Err(ConnError::Truncated { .. })));
    }

    #[test]
    fn list_names_the_export_and_refuses_data() {
        let mut input = 3u32.to_be_bytes().to_vec();
        option(&mut input, OPT_LIST, &[]);
        option(&mut input, OPT_LIST, b"x");
        option(&mut input, OPT_ABORT, &[]);
        let (result, written) = run(&input, false);
        assert_eq!(result.unwrap(), Negotiated::Ended);
        let r = replies(&written);
        let mut server = 4u32.to_be_bytes().to_vec();
        server.extend_from_slice(b"diska test disk");
        assert_eq!(r[0], (OPT_LIST, REP_SERVER, server));
        assert_eq!(r[1], (OPT_LIST, REP_ACK, vec![]));
        assert_eq!((r[2].0, r[2].1), (OPT_LIST, REP_ERR_INVALID));
        assert_eq!(r[3], (OPT_ABORT, REP_ACK, vec![]));
        assert_eq!(r.len(), 4);
    }

    #[test]
    fn a_server_shutting_down_refuses_options_but_acknowledges_an_abort() {
        let mut go = 0u32.to_be_bytes().to_vec();
        go.extend_from_slice(&0u16.to_be_bytes());
        for (opt, data, reply) in [
            (OPT_GO, go.as_slice(), REP_ERR_SHUTDOWN),
            (OPT_ABORT, &[][..], REP_ACK),
        ] {
            let mut input = 3u32.to_be_bytes().to_vec();
            option(&mut input, opt, data);
            // Never read: the first answer ends the handshake.
            option(&mut input, OPT_LIST, &[]);
            let (result, written) = run_with(&input, false, true);
            assert_eq!(result.unwrap(), Negotiated::Ended);
            assert_eq!(replies(&written), vec![(opt, reply, vec![])]);
        }
    }
}
