//! Opening a trace file (transparently gunzipping it) and the line-by-line driver that all text
//! formats share.
//!
//! The driver owns one line buffer that it reuses for every line, counts lines, drops blank and
//! comment lines, applies the bad-record policy and stops after the first error it returns. A
//! format only supplies a [`LineParser`] that turns one line into a record.

use super::ParseContext;
use crate::{Record, WorkloadError};
use flate2::bufread::MultiGzDecoder;
use std::cell::Cell;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

/// Read buffer size: large enough that the per-read overhead disappears, small enough to be
/// irrelevant next to anything else in memory.
const BUFFER_BYTES: usize = 256 * 1024;

/// Longest line accepted. Real records are under 200 bytes; the bound stops a file without
/// newlines from growing the line buffer without limit.
pub(crate) const MAX_LINE_BYTES: usize = 64 * 1024;

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

thread_local! {
    /// See [`files_opened`].
    static FILES_OPENED: Cell<u64> = const { Cell::new(0) };
}

/// How many times this thread has opened a workload file: a trace, or a file looked at to tell
/// a flow file from a trace ([`super::identify`]). A run opens its trace once to look at it and
/// once for the run, whatever passes the run makes; tests hold it to that with this count,
/// which costs one addition per open.
pub fn files_opened() -> u64 {
    FILES_OPENED.with(Cell::get)
}

/// Opens `path`, counting it in [`files_opened`].
fn open_file(path: &Path, ctx: &ParseContext) -> Result<File, WorkloadError> {
    FILES_OPENED.with(|n| n.set(n.get() + 1));
    File::open(path).map_err(|e| ctx.io(e))
}

/// A trace file opened once and read from its start by every pass a run makes over it
/// (detection, the one-device scan, the sizing pass, the records): each pass after the first
/// rewinds the same open file rather than opening the path again. The first pass reads the
/// file as opened, so a single pass works on a pipe too.
pub(crate) struct TraceFile {
    file: File,
    passes: Cell<u32>,
}

impl TraceFile {
    pub(crate) fn open(path: &Path, ctx: &ParseContext) -> Result<TraceFile, WorkloadError> {
        Ok(TraceFile {
            file: open_file(path, ctx)?,
            passes: Cell::new(0),
        })
    }

    /// A reader from the start of the file, decompressed if it is gzip. The passes share the
    /// file's offset: a pass must be over (its reader dropped) before the next one starts.
    pub(crate) fn pass(
        &self,
        ctx: &ParseContext,
    ) -> Result<Box<dyn BufRead + Send>, WorkloadError> {
        let mut file = self.file.try_clone().map_err(|e| ctx.io(e))?;
        if self.passes.get() > 0 {
            file.seek(SeekFrom::Start(0)).map_err(|e| ctx.io(e))?;
        }
        self.passes.set(self.passes.get() + 1);
        buffered(file, ctx)
    }
}

/// Opens `path` for buffered reading, decompressing it when it starts with the gzip magic bytes.
/// The reader can be handed to another thread (see `parse_thread`).
pub(crate) fn open_input(
    path: &Path,
    ctx: &ParseContext,
) -> Result<Box<dyn BufRead + Send>, WorkloadError> {
    buffered(open_file(path, ctx)?, ctx)
}

/// `file` read through a large buffer, and through a gzip decoder when it starts with the
/// gzip magic bytes.
fn buffered(file: File, ctx: &ParseContext) -> Result<Box<dyn BufRead + Send>, WorkloadError> {
    let mut reader = BufReader::with_capacity(BUFFER_BYTES, file);
    if starts_compressed(&mut reader).map_err(|e| ctx.io(e))? {
        Ok(Box::new(BufReader::with_capacity(
            BUFFER_BYTES,
            MultiGzDecoder::new(reader),
        )))
    } else {
        Ok(Box::new(reader))
    }
}

/// Wraps `reader` in a gzip decoder when its first bytes are the gzip magic. Concatenated gzip
/// members (as `cat a.gz b.gz` makes) are read one after another.
pub(crate) fn gunzip_if_compressed(
    mut reader: Box<dyn BufRead>,
    ctx: &ParseContext,
) -> Result<Box<dyn BufRead>, WorkloadError> {
    if starts_compressed(&mut reader).map_err(|e| ctx.io(e))? {
        Ok(Box::new(BufReader::with_capacity(
            BUFFER_BYTES,
            MultiGzDecoder::new(reader),
        )))
    } else {
        Ok(reader)
    }
}

/// Whether the input starts with the gzip magic bytes (without consuming them).
fn starts_compressed(reader: &mut dyn BufRead) -> std::io::Result<bool> {
    let head = reader.fill_buf()?;
    // A first read may return a single byte; the magic needs two.
    Ok(if head.len() >= GZIP_MAGIC.len() {
        head.starts_with(&GZIP_MAGIC)
    } else {
        head.first() == Some(&GZIP_MAGIC[0])
    })
}

/// Reads up to `limit` bytes from the start of the (decompressed) file, for format detection.
pub(crate) fn read_head(
    path: &Path,
    ctx: &ParseContext,
    limit: usize,
) -> Result<Vec<u8>, WorkloadError> {
    read_head_of(open_input(path, ctx)?, ctx, limit)
}

/// Reads up to `limit` bytes from `reader`.
pub(crate) fn read_head_of(
    reader: Box<dyn BufRead + Send>,
    ctx: &ParseContext,
    limit: usize,
) -> Result<Vec<u8>, WorkloadError> {
    let mut head = Vec::with_capacity(limit);
    reader
        .take(limit as u64)
        .read_to_end(&mut head)
        .map_err(|e| ctx.io(e))?;
    Ok(head)
}

/// What one line of a text trace turned out to be.
pub(crate) enum Parsed<T> {
    /// A request (or, for helpers, whatever the parser extracts).
    Item(T),
    /// A header, metadata or an event the caller did not ask for: dropped silently.
    Skip,
    /// A well-formed record that is not a replayable request: dropped and counted.
    Ignore,
}

impl<T> Parsed<T> {
    /// The same outcome with its item turned into another.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Parsed<U> {
        match self {
            Parsed::Item(item) => Parsed::Item(f(item)),
            Parsed::Skip => Parsed::Skip,
            Parsed::Ignore => Parsed::Ignore,
        }
    }

    /// As [`map`](Self::map), with a conversion that can fail.
    pub fn try_map<U, E>(self, f: impl FnOnce(T) -> Result<U, E>) -> Result<Parsed<U>, E> {
        Ok(match self {
            Parsed::Item(item) => Parsed::Item(f(item)?),
            Parsed::Skip => Parsed::Skip,
            Parsed::Ignore => Parsed::Ignore,
        })
    }
}

/// Turns one line into a record. `line` has no line terminator and is neither blank nor a
/// comment. An `Err` carries the message of a [`WorkloadError::Malformed`].
pub(crate) trait LineParser {
    type Item;
    fn parse_line(&mut self, line: &[u8], line_no: u64) -> Result<Parsed<Self::Item>, String>;

    /// Sees a comment line (its first non-blank character is `#`), which is otherwise skipped.
    /// Most formats ignore comments; a format whose first line is a `#` magic line checks it
    /// here. An `Err` is reported at that line like a malformed record.
    fn comment(&mut self, _line: &[u8], _line_no: u64) -> Result<(), String> {
        Ok(())
    }

    /// Called once when the input ends cleanly, so that a format can report a file that stops
    /// before something it requires (such as a header). An `Err` is reported at the last line.
    fn finish(&mut self) -> Result<(), String> {
        Ok(())
    }
}

/// Streams the items of a text trace, one line at a time.
pub(crate) struct TextRecords<P> {
    reader: Box<dyn BufRead>,
    line: Vec<u8>,
    line_no: u64,
    parser: P,
    ctx: ParseContext,
    done: bool,
}

impl<P: LineParser> TextRecords<P> {
    pub fn new(reader: Box<dyn BufRead>, parser: P, ctx: ParseContext) -> Self {
        TextRecords {
            reader,
            line: Vec::with_capacity(256),
            line_no: 0,
            parser,
            ctx,
            done: false,
        }
    }

    /// Reads the next line into `self.line` without its terminator. Returns `None` at the end of
    /// the file, otherwise whether the line exceeded [`MAX_LINE_BYTES`] (its remainder has then
    /// been discarded so that reading resumes at the next line).
    fn read_line(&mut self) -> std::io::Result<Option<bool>> {
        self.line.clear();
        // Fast path: the whole line already sits in the reader's buffer, as nearly every line
        // does; one search and one copy, without `read_until`'s per-call machinery.
        let buf = self.reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(None);
        }
        if let Some(end) = memchr::memchr(b'\n', buf) {
            if end <= MAX_LINE_BYTES {
                let line = &buf[..end];
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                self.line.extend_from_slice(line);
                self.reader.consume(end + 1);
                return Ok(Some(false));
            }
        }
        let limit = MAX_LINE_BYTES as u64 + 1;
        let n = (&mut self.reader)
            .take(limit)
            .read_until(b'\n', &mut self.line)?;
        if n == 0 {
            return Ok(None);
        }
        let ended = self.line.last() == Some(&b'\n');
        if ended {
            self.line.pop();
        }
        if self.line.last() == Some(&b'\r') {
            self.line.pop();
        }
        if self.line.len() > MAX_LINE_BYTES {
            if !ended {
                self.discard_rest_of_line()?;
            }
            return Ok(Some(true));
        }
        Ok(Some(false))
    }

    fn discard_rest_of_line(&mut self) -> std::io::Result<()> {
        loop {
            let buf = self.reader.fill_buf()?;
            if buf.is_empty() {
                return Ok(());
            }
            match buf.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    self.reader.consume(i + 1);
                    return Ok(());
                }
                None => {
                    let len = buf.len();
                    self.reader.consume(len);
                }
            }
        }
    }
}

impl<P: LineParser> Iterator for TextRecords<P> {
    type Item = Result<P::Item, WorkloadError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            let too_long = match self.read_line() {
                Ok(Some(too_long)) => too_long,
                Ok(None) => {
                    self.done = true;
                    match self.parser.finish() {
                        Ok(()) => return None,
                        Err(message) => {
                            if self.ctx.skip_bad {
                                self.ctx.skipped.set(self.ctx.skipped.get() + 1);
                                return None;
                            }
                            let position = format!("line {}", self.line_no);
                            return Some(Err(self.ctx.malformed(position, message)));
                        }
                    }
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(self.ctx.io(e)));
                }
            };
            self.line_no += 1;
            let outcome = if too_long {
                Err(format!("line is longer than {MAX_LINE_BYTES} bytes"))
            } else {
                let mut line = &self.line[..];
                // A UTF-8 byte order mark, as spreadsheet exports write, is not part of the data.
                if self.line_no == 1 {
                    line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
                }
                let content = super::fields::trim(line);
                if content.is_empty() {
                    continue;
                }
                if content[0] == b'#' {
                    self.parser
                        .comment(line, self.line_no)
                        .map(|()| Parsed::Skip)
                } else {
                    self.parser.parse_line(line, self.line_no)
                }
            };
            match outcome {
                Ok(Parsed::Item(item)) => return Some(Ok(item)),
                Ok(Parsed::Skip) => {}
                Ok(Parsed::Ignore) => self.ctx.ignored.set(self.ctx.ignored.get() + 1),
                Err(message) => {
                    if self.ctx.skip_bad {
                        self.ctx.skipped.set(self.ctx.skipped.get() + 1);
                    } else {
                        self.done = true;
                        let position = format!("line {}", self.line_no);
                        return Some(Err(self.ctx.malformed(position, message)));
                    }
                }
            }
        }
        None
    }
}

/// Shorthand for the common case: a parser of records boxed as the workload's iterator.
pub(crate) fn text_records<P>(
    reader: Box<dyn BufRead>,
    parser: P,
    ctx: ParseContext,
) -> super::Records
where
    P: LineParser<Item = Record> + 'static,
{
    Box::new(TextRecords::new(reader, parser, ctx))
}

/// Reads exactly `buf.len()` bytes, or reports how many were available before the end of the
/// input. Binary parsers use it to tell a clean end from a truncated record.
pub(crate) fn read_full(reader: &mut dyn BufRead, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}
