//! storsim's own recordings: the request stream an emulated disk actually received, written by
//! the real-time emulator (`storsim emulate --record FILE`) so that a simulation can replay it
//! on other devices.
//!
//! ```text
//! # storsim-record v2
//! # device=tlc-nvme export_bytes=1073741824
//! received_ns,arrival_ns,op,offset_bytes,len_bytes,intended_finish_ns,actual_finish_ns
//! 0,3100,W,0,4096,35000,35012
//! ```
//!
//! The first line is the magic line naming the version; further `#` lines are free-form
//! metadata that the reader skips; then comes the column header, which is required, and one
//! request per line, in the order the emulator received them. All numbers are integers: times
//! in nanoseconds since the emulator started, offsets and lengths in bytes. `received_ns` is
//! when a front end received the request, `arrival_ns` when the device model was offered it
//! (later by the store's work and the hand-over, so rows are not always in `arrival_ns`
//! order). The op is `R`, `W`, `T` (trim) or `F` (flush, whose offset and length are 0). The
//! two finish times say when the model meant the request to complete and when the emulator's
//! reply actually left; they are not part of a [`Record`], so [`recorded_ios`] streams them for
//! analysis.
//!
//! A replay is the model's view: each request arrives at `arrival_ns`, and the reader hands the
//! records over in `arrival_ns` order (file order among equal instants), holding back the few
//! rows that a slower request's intake let the model see first, so that the engine meets the
//! requests in the order and at the instants the emulated model did. Version 1 files, which
//! have no `received_ns` column (their `arrival_ns` is the offer too), still read, row by row.
//!
//! Both the writer ([`RecordWriter`]) and the reader live here, because only `workload::trace`
//! knows trace formats. Everything the writer accepts reads back as the same requests.

use super::fields::{bad_field, check_end, parse_u64, show, split_on, trim};
use super::format::{Detect, FormatEntry};
use super::input::{open_input, LineParser, Parsed, TextRecords};
use super::measured::{self, MeasuredTimes};
use super::{ParseContext, Records, TraceOptions};
use crate::{Pacing, Record, WorkloadError};
use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::Path;
use storsim_core::Op;

/// The start of the magic line; the version follows after a space.
const MAGIC_PREFIX: &[u8] = b"# storsim-record";

/// The versions of the format, as magic lines name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Version {
    /// `arrival_ns` (the offer to the model) only; rows in the order the emulator numbered them.
    V1,
    /// `received_ns` first, rows in its order, then `arrival_ns` and the rest as in v1.
    V2,
}

impl Version {
    fn parse(name: &[u8]) -> Option<Version> {
        match name {
            b"v1" => Some(Version::V1),
            b"v2" => Some(Version::V2),
            _ => None,
        }
    }

    /// The required column header, field by field.
    fn columns(self) -> &'static [&'static [u8]] {
        match self {
            Version::V1 => &V1_COLUMNS,
            Version::V2 => &V2_COLUMNS,
        }
    }

    /// The column header as one line, for messages.
    fn column_header(self) -> &'static str {
        match self {
            Version::V1 => V1_COLUMN_HEADER,
            Version::V2 => COLUMN_HEADER,
        }
    }
}

/// The magic line the writer writes (the current version), without its newline.
const MAGIC_LINE: &str = "# storsim-record v2";

const V1_COLUMNS: [&[u8]; 6] = [
    b"arrival_ns",
    b"op",
    b"offset_bytes",
    b"len_bytes",
    b"intended_finish_ns",
    b"actual_finish_ns",
];

const V1_COLUMN_HEADER: &str =
    "arrival_ns,op,offset_bytes,len_bytes,intended_finish_ns,actual_finish_ns";

const V2_COLUMNS: [&[u8]; 7] = [
    b"received_ns",
    b"arrival_ns",
    b"op",
    b"offset_bytes",
    b"len_bytes",
    b"intended_finish_ns",
    b"actual_finish_ns",
];

/// The column header the writer writes, as one line.
const COLUMN_HEADER: &str =
    "received_ns,arrival_ns,op,offset_bytes,len_bytes,intended_finish_ns,actual_finish_ns";

/// One request as the emulated disk received and answered it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordedIo {
    /// When a front end received the request, in nanoseconds since the emulator started. Rows
    /// are written in this order. Version 1 files do not say; it reads as `arrival_ns` there.
    pub received_ns: u64,
    /// When the device model was offered the request, on the same clock: its arrival as the
    /// model saw it, which a replay uses. No earlier than `received_ns`.
    pub arrival_ns: u64,
    pub op: Op,
    /// Byte offset of the range; 0 for a flush, which has no range.
    pub offset_bytes: u64,
    /// Length of the range in bytes; 0 for a flush.
    pub len_bytes: u64,
    /// When the device model said the request completes, on the same clock.
    pub intended_finish_ns: u64,
    /// When the emulator's reply actually left, on the same clock.
    pub actual_finish_ns: u64,
}

impl RecordedIo {
    /// How long after its intended instant the reply left (0 if it left on time or early).
    pub fn lateness_ns(&self) -> u64 {
        self.actual_finish_ns
            .saturating_sub(self.intended_finish_ns)
    }

    /// From the front end receiving the request to the model being offered it: the store's
    /// work and the hand-over to the pacing thread (0 in version 1 files).
    pub fn intake_ns(&self) -> u64 {
        self.arrival_ns - self.received_ns
    }
}

/// The longest row the writer can produce: six 20-digit numbers, the op, six commas and a
/// newline, rounded up.
const ROW_BYTES: usize = 160;

/// Writes a `storsim-record` file: the magic line, one metadata line and the column header on
/// creation, then one line per request.
///
/// Each row is formatted into a buffer on the stack and handed to `out` with one `write_all`,
/// so writing allocates nothing; wrap a file in a [`std::io::BufWriter`] so that rows do not
/// cost a system call each.
pub struct RecordWriter<W: Write> {
    out: W,
    /// The previous row's `received_ns`: rows go in the order requests were received.
    last_received_ns: u64,
}

impl<W: Write> RecordWriter<W> {
    /// Writes the magic line, one `# key=value ...` line holding `header` in the given order
    /// (left out when `header` is empty) and the column header. Line breaks in keys and values
    /// are replaced by spaces, since a line break would end the comment line early.
    pub fn new(mut out: W, header: &[(String, String)]) -> std::io::Result<Self> {
        out.write_all(MAGIC_LINE.as_bytes())?;
        out.write_all(b"\n")?;
        if !header.is_empty() {
            let mut line = String::from("#");
            for (key, value) in header {
                line.push(' ');
                push_one_line(&mut line, key);
                line.push('=');
                push_one_line(&mut line, value);
            }
            line.push('\n');
            out.write_all(line.as_bytes())?;
        }
        out.write_all(COLUMN_HEADER.as_bytes())?;
        out.write_all(b"\n")?;
        Ok(RecordWriter {
            out,
            last_received_ns: 0,
        })
    }

    /// Writes one request. A flush is written with offset and length 0, since it has no range.
    /// A request that the reader would refuse (received before the previous row or after its
    /// arrival, a finish time before the arrival, or a range that ends beyond 2^64 bytes) is an
    /// [`InvalidInput`](std::io::ErrorKind::InvalidInput) error and nothing is written, so that
    /// every file this writes can be replayed.
    pub fn write(&mut self, io: &RecordedIo) -> std::io::Result<()> {
        if io.received_ns < self.last_received_ns || io.received_ns > io.arrival_ns {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "a recorded request received at {} ns is out of order (the previous row was received at {} ns) or after its arrival ({} ns)",
                    io.received_ns, self.last_received_ns, io.arrival_ns
                ),
            ));
        }
        if io.intended_finish_ns < io.arrival_ns || io.actual_finish_ns < io.arrival_ns {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "a recorded request finishes before it arrives (arrival {} ns, intended finish {} ns, actual finish {} ns)",
                    io.arrival_ns, io.intended_finish_ns, io.actual_finish_ns
                ),
            ));
        }
        let (offset_bytes, len_bytes) = match io.op {
            Op::Flush => (0, 0),
            _ => (io.offset_bytes, io.len_bytes),
        };
        if offset_bytes.checked_add(len_bytes).is_none() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "a recorded request at byte offset {offset_bytes} with length {len_bytes} ends beyond 2^64 bytes"
                ),
            ));
        }
        let mut row = [0u8; ROW_BYTES];
        let mut at = push_u64(&mut row, 0, io.received_ns);
        row[at] = b',';
        at = push_u64(&mut row, at + 1, io.arrival_ns);
        row[at] = b',';
        row[at + 1] = op_letter(io.op);
        row[at + 2] = b',';
        at = push_u64(&mut row, at + 3, offset_bytes);
        row[at] = b',';
        at = push_u64(&mut row, at + 1, len_bytes);
        row[at] = b',';
        at = push_u64(&mut row, at + 1, io.intended_finish_ns);
        row[at] = b',';
        at = push_u64(&mut row, at + 1, io.actual_finish_ns);
        row[at] = b'\n';
        self.out.write_all(&row[..at + 1])?;
        self.last_received_ns = io.received_ns;
        Ok(())
    }

    /// Flushes and returns the output.
    pub fn finish(mut self) -> std::io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Appends `text` with its line breaks replaced by spaces.
fn push_one_line(line: &mut String, text: &str) {
    line.extend(
        text.chars()
            .map(|c| if c == '\n' || c == '\r' { ' ' } else { c }),
    );
}

/// Writes the decimal digits of `value` into `row` at `at` and returns where they end.
fn push_u64(row: &mut [u8; ROW_BYTES], at: usize, mut value: u64) -> usize {
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    let end = at + (digits.len() - start);
    row[at..end].copy_from_slice(&digits[start..]);
    end
}

fn op_letter(op: Op) -> u8 {
    match op {
        Op::Read => b'R',
        Op::Write => b'W',
        Op::Trim => b'T',
        Op::Flush => b'F',
    }
}

/// The version named by a magic line (possibly empty), or `None` if `line` is not a magic line.
fn magic_version(line: &[u8]) -> Option<&[u8]> {
    let rest = trim(line).strip_prefix(MAGIC_PREFIX)?;
    match rest.first() {
        None | Some(b' ' | b'\t') => Some(trim(rest)),
        Some(_) => None,
    }
}

/// Checks the version a magic line names.
fn check_version(version: &[u8]) -> Result<Version, String> {
    if let Some(v) = Version::parse(version) {
        Ok(v)
    } else if version.is_empty() {
        Err(format!(
            "the magic line names no version; expected `{MAGIC_LINE}`"
        ))
    } else {
        Err(format!(
            "unsupported storsim-record version {}: this storsim reads versions v1 and v2",
            show(version)
        ))
    }
}

/// Detection's view: `Some` when the content starts with the magic line, which settles the
/// format (or, for another version, says why it cannot be read); `None` otherwise.
fn detect_head(head: &[u8]) -> Option<Result<(), String>> {
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    if !head.starts_with(MAGIC_PREFIX) {
        return None;
    }
    let first = head.split(|&b| b == b'\n').next().unwrap_or(head);
    let first = first.strip_suffix(b"\r").unwrap_or(first);
    let version = magic_version(first)?;
    Some(check_version(version).map(|_| ()))
}

/// The format's entry in the format table.
pub(super) const FORMAT: FormatEntry = FormatEntry {
    name: "storsim-record",
    aliases: &[],
    description: "storsim emulator recording: received(ns),arrival(ns),op(R|W|T|F),offset(B),len(B),intended_finish(ns),actual_finish(ns)",
    detect: Detect::Magic(detect_head),
    binary: false,
    single_device: true,
    device_column: false,
    pacing: Pacing::Open,
    records: |reader, ctx, _| records(reader, ctx),
    measured: Some(measured),
};

pub(crate) fn records(reader: Box<dyn BufRead>, ctx: ParseContext) -> Records {
    Box::new(InArrivalOrder::new(TextRecords::new(
        reader,
        RecordParser(RecordedParser::default()),
        ctx,
    )))
}

/// Every request's response time as the host saw it, from its arrival to when the emulator's
/// reply actually left, keyed by its line.
fn measured(
    reader: Box<dyn BufRead>,
    ctx: ParseContext,
    _: &TraceOptions,
) -> Result<MeasuredTimes, WorkloadError> {
    measured::collect(TextRecords::new(reader, ResponseParser::default(), ctx))
}

/// Yields `(line, actual finish - arrival in ns)` for each request line.
#[derive(Default)]
struct ResponseParser(RecordedParser);

impl LineParser for ResponseParser {
    type Item = (u64, u64);

    fn parse_line(&mut self, line: &[u8], line_no: u64) -> Result<Parsed<(u64, u64)>, String> {
        // The reader refuses a finish before the arrival, so the difference cannot wrap.
        Ok(self
            .0
            .parse_line(line, line_no)?
            .map(|io| (line_no, io.actual_finish_ns - io.arrival_ns)))
    }

    fn comment(&mut self, line: &[u8], line_no: u64) -> Result<(), String> {
        self.0.comment(line, line_no)
    }

    fn finish(&mut self) -> Result<(), String> {
        self.0.finish()
    }
}

/// Streams every request of a `storsim-record` file with its intended and actual finish times,
/// in file order, for analysis such as the lateness of the recorded replies. Unlike the records
/// of [`open`](super::open), requests of zero length are included. A malformed line ends the
/// stream with an error, exactly where `open` would report it.
pub fn recorded_ios(
    path: &Path,
) -> Result<impl Iterator<Item = Result<RecordedIo, WorkloadError>>, WorkloadError> {
    let ctx = ParseContext::new(path, false);
    let reader = open_input(path, &ctx)?;
    Ok(TextRecords::new(reader, RecordedParser::default(), ctx))
}

/// Where in the file the parser is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum State {
    /// Nothing read yet: the magic line must come first.
    #[default]
    Magic,
    /// The magic line naming this version has been read: metadata comments, then the column
    /// header.
    ColumnHeader(Version),
    /// The column header has been read: one request per line.
    Rows(Version),
}

#[derive(Default)]
struct RecordedParser {
    state: State,
    /// A line has already been refused for not being the column header, so the end of the file
    /// need not say again that the header is missing.
    header_refused: bool,
    /// The last good row's `received_ns`, which a version 2 row may not go below.
    last_received_ns: u64,
}

impl LineParser for RecordedParser {
    type Item = RecordedIo;

    fn parse_line(&mut self, line: &[u8], _line_no: u64) -> Result<Parsed<RecordedIo>, String> {
        match self.state {
            State::Rows(version) => {
                let io = parse_row(line, version)?;
                if version == Version::V2 && io.received_ns < self.last_received_ns {
                    return Err(format!(
                        "received_ns {} is earlier than the previous row's ({}): rows are in \
                         the order the requests were received",
                        io.received_ns, self.last_received_ns
                    ));
                }
                self.last_received_ns = io.received_ns;
                Ok(Parsed::Item(io))
            }
            State::ColumnHeader(version) => {
                if !is_column_header(line, version) {
                    self.header_refused = true;
                    return Err(format!(
                        "expected the column header `{}`, found {}",
                        version.column_header(),
                        show(trim(line))
                    ));
                }
                self.state = State::Rows(version);
                Ok(Parsed::Skip)
            }
            State::Magic => Err(expected_magic(line)),
        }
    }

    fn comment(&mut self, line: &[u8], _line_no: u64) -> Result<(), String> {
        if self.state != State::Magic {
            return Ok(());
        }
        let version = magic_version(line).ok_or_else(|| expected_magic(line))?;
        self.state = State::ColumnHeader(check_version(version)?);
        Ok(())
    }

    fn finish(&mut self) -> Result<(), String> {
        // A file that ends in `Magic` is empty or has already been reported; one that ends
        // before its column header was cut short, and saying so beats an empty replay.
        match self.state {
            State::ColumnHeader(version) if !self.header_refused => Err(format!(
                "the file ends before the column header `{}`",
                version.column_header()
            )),
            _ => Ok(()),
        }
    }
}

fn expected_magic(line: &[u8]) -> String {
    format!(
        "expected the magic line `{MAGIC_LINE}` first, found {}",
        show(trim(line))
    )
}

fn is_column_header(line: &[u8], version: Version) -> bool {
    let columns = version.columns();
    let mut f = [&b""[..]; 8];
    split_on(line, b',', &mut f) == columns.len() && f[..columns.len()] == *columns
}

/// Parses one request line of `version`, checking everything the format promises but the
/// order of rows.
fn parse_row(line: &[u8], version: Version) -> Result<RecordedIo, String> {
    let columns = version.columns().len();
    let mut all = [&b""[..]; 7];
    let n = split_on(line, b',', &mut all);
    if n != columns {
        return Err(format!(
            "expected {columns} comma-separated fields ({}), found {n}",
            version.column_header()
        ));
    }
    // `f` holds the fields from `arrival_ns` on, numbered from `first` (1-based) in messages.
    let (received, f, first) = match version {
        Version::V1 => (None, &all[..6], 1),
        Version::V2 => (Some(all[0]), &all[1..7], 2),
    };
    let arrival_ns = parse_u64(f[0]).ok_or_else(|| {
        bad_field(
            first,
            "arrival_ns",
            "an integer number of nanoseconds",
            f[0],
        )
    })?;
    let received_ns = match received {
        None => arrival_ns,
        Some(field) => match parse_u64(field) {
            Some(t) if t <= arrival_ns => t,
            _ => {
                return Err(bad_field(
                    1,
                    "received_ns",
                    &format!(
                        "an integer number of nanoseconds no later than arrival_ns ({arrival_ns})"
                    ),
                    field,
                ))
            }
        },
    };
    let op = match f[1] {
        b"R" => Op::Read,
        b"W" => Op::Write,
        b"T" => Op::Trim,
        b"F" => Op::Flush,
        other => {
            return Err(bad_field(
                first + 1,
                "op",
                "R (read), W (write), T (trim) or F (flush)",
                other,
            ))
        }
    };
    let offset_bytes = parse_u64(f[2])
        .ok_or_else(|| bad_field(first + 2, "offset_bytes", "a byte offset", f[2]))?;
    let len_bytes = parse_u64(f[3])
        .ok_or_else(|| bad_field(first + 3, "len_bytes", "a number of bytes", f[3]))?;
    if op == Op::Flush {
        if offset_bytes != 0 {
            return Err(bad_field(first + 2, "offset_bytes", "0 for a flush", f[2]));
        }
        if len_bytes != 0 {
            return Err(bad_field(first + 3, "len_bytes", "0 for a flush", f[3]));
        }
    } else {
        check_end(offset_bytes, len_bytes)?;
    }
    let intended_finish_ns = finish_time(f[4], first + 4, "intended_finish_ns", arrival_ns)?;
    let actual_finish_ns = finish_time(f[5], first + 5, "actual_finish_ns", arrival_ns)?;
    Ok(RecordedIo {
        received_ns,
        arrival_ns,
        op,
        offset_bytes,
        len_bytes,
        intended_finish_ns,
        actual_finish_ns,
    })
}

/// A finish time, which cannot be earlier than the request's arrival.
fn finish_time(field: &[u8], position: usize, name: &str, arrival_ns: u64) -> Result<u64, String> {
    match parse_u64(field) {
        Some(t) if t >= arrival_ns => Ok(t),
        _ => Err(bad_field(
            position,
            name,
            &format!("an integer number of nanoseconds no earlier than arrival_ns ({arrival_ns})"),
            field,
        )),
    }
}

/// Turns recorded requests into the workload's records, each with its `received_ns` for
/// [`InArrivalOrder`] (`None` in version 1 files, which do not record it). A read, write or trim of zero bytes is a faithful record of what the
/// disk received but has nothing to replay, so it is ignored (and counted) as in the other
/// formats that record transfers without data.
struct RecordParser(RecordedParser);

impl LineParser for RecordParser {
    type Item = (Record, Option<u64>);

    fn parse_line(
        &mut self,
        line: &[u8],
        line_no: u64,
    ) -> Result<Parsed<(Record, Option<u64>)>, String> {
        Ok(match self.0.parse_line(line, line_no)? {
            Parsed::Item(io) if io.op != Op::Flush && io.len_bytes == 0 => Parsed::Ignore,
            Parsed::Item(io) => Parsed::Item((
                Record {
                    timestamp_ns: io.arrival_ns,
                    op: io.op,
                    offset_bytes: io.offset_bytes,
                    len_bytes: io.len_bytes,
                    dev: 0,
                    think_ns: 0,
                    origin: line_no,
                },
                match self.0.state {
                    State::Rows(Version::V1) => None,
                    _ => Some(io.received_ns),
                },
            )),
            Parsed::Skip => Parsed::Skip,
            Parsed::Ignore => Parsed::Ignore,
        })
    }

    fn comment(&mut self, line: &[u8], line_no: u64) -> Result<(), String> {
        self.0.comment(line, line_no)
    }

    fn finish(&mut self) -> Result<(), String> {
        self.0.finish()
    }
}

/// Hands the records over in `arrival_ns` order (file order among equal instants) although
/// rows come in `received_ns` order: the emulator offers a request to its model a little after
/// receiving it, and a request whose intake took longer (a FLUSH waiting in `fdatasync`, say)
/// reaches the model after requests received later. Since every row's arrival is no earlier
/// than its reception, and receptions never go back, a held record whose arrival is before the
/// latest reception read can be followed by no earlier one: it goes. So this holds only the
/// records whose intake overlaps the latest row's, a handful, and a replay meets the requests
/// in the order the model did, with no record out of order. Version 1 rows have no reception,
/// so they pass in file order, as written.
struct InArrivalOrder<I> {
    rows: I,
    /// Records read but not handed over, by (arrival, line).
    held: BTreeMap<(u64, u64), Record>,
    /// The latest `received_ns` read.
    received_ns: u64,
    /// An error from the rows, handed over after every record read before it.
    error: Option<WorkloadError>,
    done: bool,
}

impl<I> InArrivalOrder<I> {
    fn new(rows: I) -> Self {
        InArrivalOrder {
            rows,
            held: BTreeMap::new(),
            received_ns: 0,
            error: None,
            done: false,
        }
    }

    /// The earliest held record, if nothing still to be read can come before it.
    fn ready(&mut self) -> Option<Record> {
        let entry = self.held.first_entry()?;
        if self.done || entry.key().0 < self.received_ns {
            Some(entry.remove())
        } else {
            None
        }
    }
}

impl<I> Iterator for InArrivalOrder<I>
where
    I: Iterator<Item = Result<(Record, Option<u64>), WorkloadError>>,
{
    type Item = Result<Record, WorkloadError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(record) = self.ready() {
                return Some(Ok(record));
            }
            if self.done {
                return self.error.take().map(Err);
            }
            match self.rows.next() {
                // A version 1 row: nothing is ever held, so it goes as it comes.
                Some(Ok((record, None))) => return Some(Ok(record)),
                Some(Ok((record, Some(received_ns)))) => {
                    self.received_ns = received_ns;
                    self.held
                        .insert((record.timestamp_ns, record.origin), record);
                }
                Some(Err(e)) => {
                    self.error = Some(e);
                    self.done = true;
                }
                None => self.done = true,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_are_written_exactly() {
        for value in [0, 7, 10, 999, 1_000_000, u64::MAX] {
            let mut row = [0u8; ROW_BYTES];
            let end = push_u64(&mut row, 3, value);
            assert_eq!(&row[3..end], value.to_string().as_bytes());
        }
    }

    #[test]
    fn the_longest_row_fits() {
        let io = RecordedIo {
            received_ns: u64::MAX - 2,
            arrival_ns: u64::MAX - 1,
            op: Op::Write,
            offset_bytes: u64::MAX / 2,
            len_bytes: u64::MAX / 2,
            intended_finish_ns: u64::MAX,
            actual_finish_ns: u64::MAX,
        };
        let mut writer = RecordWriter::new(Vec::new(), &[]).unwrap();
        writer.write(&io).unwrap();
        let text = String::from_utf8(writer.finish().unwrap()).unwrap();
        let row = text.lines().last().unwrap();
        assert!(row.len() < ROW_BYTES);
        assert_eq!(parse_row(row.as_bytes(), Version::V2), Ok(io));
    }

    #[test]
    fn magic_lines_are_told_from_lookalikes() {
        assert_eq!(magic_version(b"# storsim-record v1"), Some(&b"v1"[..]));
        assert_eq!(magic_version(b"# storsim-record  v2 "), Some(&b"v2"[..]));
        assert_eq!(magic_version(b"# storsim-record"), Some(&b""[..]));
        assert_eq!(magic_version(b"# storsim-recorder v1"), None);
        assert_eq!(magic_version(b"# device=x"), None);
    }

    #[test]
    fn detection_needs_the_magic_at_the_start() {
        assert_eq!(
            detect_head(b"# storsim-record v1\r\narrival_ns"),
            Some(Ok(()))
        );
        let err = detect_head(b"# storsim-record v3\n").unwrap().unwrap_err();
        assert!(err.contains("\"v3\""), "{err}");
        assert_eq!(detect_head(b"\n# storsim-record v1\n"), None);
    }
}
