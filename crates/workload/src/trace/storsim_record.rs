//! storsim's own recordings: the request stream an emulated disk actually received, written by
//! the real-time emulator (`storsim emulate --record FILE`) so that a simulation can replay it
//! on other devices.
//!
//! ```text
//! # storsim-record v1
//! # device=tlc-nvme export_bytes=1073741824
//! arrival_ns,op,offset_bytes,len_bytes,intended_finish_ns,actual_finish_ns
//! 0,W,0,4096,35000,35012
//! ```
//!
//! The first line is the magic line naming the version; further `#` lines are free-form
//! metadata that the reader skips; then comes the column header, which is required, and one
//! request per line. All numbers are integers: times in nanoseconds since the emulator started,
//! offsets and lengths in bytes. The op is `R`, `W`, `T` (trim) or `F` (flush, whose offset and
//! length are 0). The two finish times say when the model meant the request to complete and when
//! the emulator's reply actually left; they are not part of a [`Record`], so [`recorded_ios`]
//! streams them for analysis.
//!
//! Both the writer ([`RecordWriter`]) and the reader live here, because only `workload::trace`
//! knows trace formats. Everything the writer accepts reads back as the same requests.

use super::fields::{bad_field, check_end, parse_u64, show, split_on, trim};
use super::format::{Detect, FormatEntry};
use super::input::{open_input, text_records, LineParser, Parsed, TextRecords};
use super::measured::{self, MeasuredTimes};
use super::{ParseContext, Records, TraceOptions};
use crate::{Pacing, Record, WorkloadError};
use std::io::{BufRead, Write};
use std::path::Path;
use storsim_core::Op;

/// The start of the magic line; the version follows after a space.
const MAGIC_PREFIX: &[u8] = b"# storsim-record";

/// The only version this reader understands, and the one the writer writes.
const VERSION: &[u8] = b"v1";

/// The magic line the writer writes, without its newline.
const MAGIC_LINE: &str = "# storsim-record v1";

/// The required column header, field by field.
const COLUMNS: [&[u8]; 6] = [
    b"arrival_ns",
    b"op",
    b"offset_bytes",
    b"len_bytes",
    b"intended_finish_ns",
    b"actual_finish_ns",
];

/// The column header as one line, for the writer and for messages.
const COLUMN_HEADER: &str =
    "arrival_ns,op,offset_bytes,len_bytes,intended_finish_ns,actual_finish_ns";

/// One request as the emulated disk received and answered it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordedIo {
    /// When the request arrived, in nanoseconds since the emulator started.
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
}

/// The longest row the writer can produce: five 20-digit numbers, the op, five commas and a
/// newline, rounded up.
const ROW_BYTES: usize = 128;

/// Writes a `storsim-record` file: the magic line, one metadata line and the column header on
/// creation, then one line per request.
///
/// Each row is formatted into a buffer on the stack and handed to `out` with one `write_all`,
/// so writing allocates nothing; wrap a file in a [`std::io::BufWriter`] so that rows do not
/// cost a system call each.
pub struct RecordWriter<W: Write> {
    out: W,
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
        Ok(RecordWriter { out })
    }

    /// Writes one request. A flush is written with offset and length 0, since it has no range.
    /// A request that the reader would refuse (a finish time before the arrival, or a range that
    /// ends beyond 2^64 bytes) is an [`InvalidInput`](std::io::ErrorKind::InvalidInput) error
    /// and nothing is written, so that every file this writes can be replayed.
    pub fn write(&mut self, io: &RecordedIo) -> std::io::Result<()> {
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
        let mut at = push_u64(&mut row, 0, io.arrival_ns);
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
        self.out.write_all(&row[..at + 1])
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
fn check_version(version: &[u8]) -> Result<(), String> {
    if version == VERSION {
        Ok(())
    } else if version.is_empty() {
        Err(format!(
            "the magic line names no version; expected `{MAGIC_LINE}`"
        ))
    } else {
        Err(format!(
            "unsupported storsim-record version {}: this storsim reads version v1 only",
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
    Some(check_version(version))
}

/// The format's entry in the format table.
pub(super) const FORMAT: FormatEntry = FormatEntry {
    name: "storsim-record",
    aliases: &[],
    description: "storsim emulator recording: arrival(ns),op(R|W|T|F),offset(B),len(B),intended_finish(ns),actual_finish(ns)",
    detect: Detect::Magic(detect_head),
    binary: false,
    single_device: true,
    device_column: false,
    pacing: Pacing::Open,
    records: |reader, ctx, _| records(reader, ctx),
    measured: Some(measured),
};

pub(crate) fn records(reader: Box<dyn BufRead>, ctx: ParseContext) -> Records {
    text_records(reader, RecordParser(RecordedParser::default()), ctx)
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
    /// The magic line has been read: metadata comments, then the column header.
    ColumnHeader,
    /// The column header has been read: one request per line.
    Rows,
}

#[derive(Default)]
struct RecordedParser {
    state: State,
    /// A line has already been refused for not being the column header, so the end of the file
    /// need not say again that the header is missing.
    header_refused: bool,
}

impl LineParser for RecordedParser {
    type Item = RecordedIo;

    fn parse_line(&mut self, line: &[u8], _line_no: u64) -> Result<Parsed<RecordedIo>, String> {
        match self.state {
            State::Rows => parse_row(line).map(Parsed::Item),
            State::ColumnHeader => {
                if !is_column_header(line) {
                    self.header_refused = true;
                    return Err(format!(
                        "expected the column header `{COLUMN_HEADER}`, found {}",
                        show(trim(line))
                    ));
                }
                self.state = State::Rows;
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
        check_version(version)?;
        self.state = State::ColumnHeader;
        Ok(())
    }

    fn finish(&mut self) -> Result<(), String> {
        // A file that ends in `Magic` is empty or has already been reported; one that ends
        // before its column header was cut short, and saying so beats an empty replay.
        if self.state == State::ColumnHeader && !self.header_refused {
            return Err(format!(
                "the file ends before the column header `{COLUMN_HEADER}`"
            ));
        }
        Ok(())
    }
}

fn expected_magic(line: &[u8]) -> String {
    format!(
        "expected the magic line `{MAGIC_LINE}` first, found {}",
        show(trim(line))
    )
}

fn is_column_header(line: &[u8]) -> bool {
    let mut f = [&b""[..]; 7];
    split_on(line, b',', &mut f) == COLUMNS.len() && f[..COLUMNS.len()] == COLUMNS
}

/// Parses one request line, checking everything the format promises.
fn parse_row(line: &[u8]) -> Result<RecordedIo, String> {
    let mut f = [&b""[..]; 6];
    let n = split_on(line, b',', &mut f);
    if n != 6 {
        return Err(format!(
            "expected 6 comma-separated fields ({COLUMN_HEADER}), found {n}"
        ));
    }
    let arrival_ns = parse_u64(f[0])
        .ok_or_else(|| bad_field(1, "arrival_ns", "an integer number of nanoseconds", f[0]))?;
    let op = match f[1] {
        b"R" => Op::Read,
        b"W" => Op::Write,
        b"T" => Op::Trim,
        b"F" => Op::Flush,
        other => {
            return Err(bad_field(
                2,
                "op",
                "R (read), W (write), T (trim) or F (flush)",
                other,
            ))
        }
    };
    let offset_bytes =
        parse_u64(f[2]).ok_or_else(|| bad_field(3, "offset_bytes", "a byte offset", f[2]))?;
    let len_bytes =
        parse_u64(f[3]).ok_or_else(|| bad_field(4, "len_bytes", "a number of bytes", f[3]))?;
    if op == Op::Flush {
        if offset_bytes != 0 {
            return Err(bad_field(3, "offset_bytes", "0 for a flush", f[2]));
        }
        if len_bytes != 0 {
            return Err(bad_field(4, "len_bytes", "0 for a flush", f[3]));
        }
    } else {
        check_end(offset_bytes, len_bytes)?;
    }
    let intended_finish_ns = finish_time(f[4], 5, "intended_finish_ns", arrival_ns)?;
    let actual_finish_ns = finish_time(f[5], 6, "actual_finish_ns", arrival_ns)?;
    Ok(RecordedIo {
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

/// Turns recorded requests into the workload's records. A read, write or trim of zero bytes is
/// a faithful record of what the disk received but has nothing to replay, so it is ignored
/// (and counted) as in the other formats that record transfers without data.
struct RecordParser(RecordedParser);

impl LineParser for RecordParser {
    type Item = Record;

    fn parse_line(&mut self, line: &[u8], line_no: u64) -> Result<Parsed<Record>, String> {
        Ok(match self.0.parse_line(line, line_no)? {
            Parsed::Item(io) if io.op != Op::Flush && io.len_bytes == 0 => Parsed::Ignore,
            Parsed::Item(io) => Parsed::Item(Record {
                timestamp_ns: io.arrival_ns,
                op: io.op,
                offset_bytes: io.offset_bytes,
                len_bytes: io.len_bytes,
                dev: 0,
                think_ns: 0,
                origin: line_no,
            }),
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
        assert_eq!(parse_row(row.as_bytes()), Ok(io));
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
        let err = detect_head(b"# storsim-record v2\n").unwrap().unwrap_err();
        assert!(err.contains("\"v2\""), "{err}");
        assert_eq!(detect_head(b"\n# storsim-record v1\n"), None);
    }
}
