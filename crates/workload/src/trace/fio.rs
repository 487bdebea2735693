//! fio I/O logs (`write_iolog` / `read_iolog`), versions 2 and 3.
//!
//! The first line is `fio version 2 iolog` or `fio version 3 iolog`. Then each line is either a
//! file action, `[timestamp] filename add|open|close`, or an I/O action,
//! `[timestamp] filename read|write|trim|sync|datasync|wait offset length`; only version 3 has
//! the timestamp, in microseconds since the job started (what current fio writes and reads;
//! see the format page for logs from older versions). Offsets and lengths are bytes.
//!
//! The device is the file's index in order of its `add` line. Version 2 has no timestamps: I/O
//! gets the time of the latest `wait`, whose offset field is, as fio replays it, a point in time
//! in milliseconds since the start of the job (so the clock only moves forward). Version 3 does
//! not allow `wait`; fio ignores such lines and so does this parser, counting them as ignored.
//! `sync` and `datasync` become flushes; `open` and `close` are skipped.

use super::devices::MAX_DEVICES;
use super::fields::{bad_field, check_end, parse_u64, show, split_whitespace, trim};
use super::format::{Detect, FormatEntry};
use super::input::{text_records, LineParser, Parsed};
use super::{ParseContext, Records};
use crate::{Pacing, Record};
use std::collections::HashMap;
use std::io::BufRead;
use storsim_core::Op;

pub(crate) const HEADER_V2: &[u8] = b"fio version 2 iolog";
pub(crate) const HEADER_V3: &[u8] = b"fio version 3 iolog";

const NS_PER_US: u64 = 1_000;
const NS_PER_MS: u64 = 1_000_000;

/// The format's entry in the format table.
pub(super) const FORMAT: FormatEntry = FormatEntry {
    name: "fio-iolog",
    aliases: &[],
    description: "fio iolog version 2 or 3 (write_iolog / read_iolog)",
    detect: Detect::Text {
        header: None,
        first: is_header_line,
        rule_out: None,
    },
    binary: false,
    single_device: false,
    device_column: false,
    pacing: Pacing::Open,
    records: |reader, ctx, _| records(reader, ctx),
    measured: None,
};

/// Whether a line is the header fio writes first.
fn is_header_line(line: &[u8]) -> bool {
    let line = trim(line);
    line.starts_with(HEADER_V2) || line.starts_with(HEADER_V3)
}

pub(crate) fn records(reader: Box<dyn BufRead>, ctx: ParseContext) -> Records {
    text_records(
        reader,
        FioParser {
            version: None,
            files: HashMap::new(),
            clock_ns: 0,
        },
        ctx,
    )
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Version {
    V2,
    V3,
}

struct FioParser {
    /// Set by the header line.
    version: Option<Version>,
    /// File name to device number, assigned by `add` lines.
    files: HashMap<Vec<u8>, u32>,
    /// Version 2's clock, advanced by `wait`.
    clock_ns: u64,
}

impl FioParser {
    fn add_file(&mut self, name: &[u8]) -> Result<(), String> {
        if self.files.contains_key(name) {
            return Ok(());
        }
        if self.files.len() >= MAX_DEVICES {
            return Err(format!("more than {MAX_DEVICES} files are added"));
        }
        let id = self.files.len() as u32;
        self.files.insert(name.to_vec(), id);
        Ok(())
    }

    fn file_action(
        &mut self,
        name: &[u8],
        action: &[u8],
        field: usize,
    ) -> Result<Parsed<Record>, String> {
        match action {
            b"add" => self.add_file(name).map(|()| Parsed::Skip),
            b"open" | b"close" => Ok(Parsed::Skip),
            other => Err(bad_field(field, "action", "add, open or close", other)),
        }
    }

    /// Parses an I/O action whose fields start at `first` (1-based position of the file name).
    fn io_action(
        &mut self,
        fields: &[&[u8]],
        first: usize,
        timestamp_ns: u64,
        line_no: u64,
    ) -> Result<Parsed<Record>, String> {
        let [name, action, offset, length] = fields else {
            return Err("internal: an I/O action has four fields after the timestamp".to_string());
        };
        enum Kind {
            Io(Op),
            Wait,
        }
        let kind = match *action {
            b"read" => Kind::Io(Op::Read),
            b"write" => Kind::Io(Op::Write),
            b"trim" => Kind::Io(Op::Trim),
            b"sync" | b"datasync" => Kind::Io(Op::Flush),
            b"wait" => Kind::Wait,
            other => {
                return Err(bad_field(
                    first + 1,
                    "action",
                    "read, write, trim, sync, datasync or wait",
                    other,
                ))
            }
        };
        let offset = parse_u64(offset)
            .ok_or_else(|| bad_field(first + 2, "offset", "a byte offset", offset))?;
        let length = parse_u64(length)
            .ok_or_else(|| bad_field(first + 3, "length", "a number of bytes", length))?;
        let op = match kind {
            Kind::Io(op) => op,
            Kind::Wait if self.version == Some(Version::V2) => {
                let until_ns = offset.checked_mul(NS_PER_MS).ok_or_else(|| {
                    format!(
                        "field {} (offset): a wait until {offset} ms overflows a 64-bit nanosecond clock",
                        first + 2
                    )
                })?;
                self.clock_ns = self.clock_ns.max(until_ns);
                return Ok(Parsed::Skip);
            }
            Kind::Wait => return Ok(Parsed::Ignore),
        };
        let dev = *self
            .files
            .get(*name)
            .ok_or_else(|| format!("file {} is used before a line adds it", show(name)))?;
        let (offset_bytes, len_bytes) = if op == Op::Flush {
            (0, 0)
        } else if length == 0 {
            return Err(bad_field(
                first + 3,
                "length",
                "a positive number of bytes",
                b"0",
            ));
        } else {
            check_end(offset, length)?;
            (offset, length)
        };
        Ok(Parsed::Item(Record {
            timestamp_ns,
            op,
            offset_bytes,
            len_bytes,
            dev,
            think_ns: 0,
            origin: line_no,
        }))
    }
}

impl LineParser for FioParser {
    type Item = Record;

    fn parse_line(&mut self, line: &[u8], line_no: u64) -> Result<Parsed<Record>, String> {
        let Some(version) = self.version else {
            let line = super::fields::trim(line);
            self.version = if line.starts_with(HEADER_V2) {
                Some(Version::V2)
            } else if line.starts_with(HEADER_V3) {
                Some(Version::V3)
            } else {
                return Err(format!(
                    "expected the header line `fio version 2 iolog` or `fio version 3 iolog`, found {}",
                    show(line)
                ));
            };
            return Ok(Parsed::Skip);
        };
        let mut f = [&b""[..]; 5];
        let n = split_whitespace(line, &mut f);
        match (version, n) {
            (Version::V2, 2) => self.file_action(f[0], f[1], 2),
            (Version::V2, 4) => {
                let clock_ns = self.clock_ns;
                self.io_action(&f[..4], 1, clock_ns, line_no)
            }
            (Version::V2, _) => Err(format!(
                "expected `filename action` or `filename action offset length`, found {n} fields"
            )),
            (Version::V3, 3 | 5) => {
                let us = parse_u64(f[0]).ok_or_else(|| {
                    bad_field(1, "timestamp", "an integer number of microseconds", f[0])
                })?;
                let timestamp_ns = us.checked_mul(NS_PER_US).ok_or_else(|| {
                    format!("field 1 (timestamp): {us} us overflows a 64-bit nanosecond clock")
                })?;
                if n == 3 {
                    self.file_action(f[1], f[2], 3)
                } else {
                    self.io_action(&f[1..5], 2, timestamp_ns, line_no)
                }
            }
            (Version::V3, _) => Err(format!(
                "expected `timestamp filename action` or `timestamp filename action offset length`, found {n} fields"
            )),
        }
    }
}
