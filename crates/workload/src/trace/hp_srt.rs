//! HP Labs SRT disk traces (the 1992 HP-UX workstation and server traces; DiskSim's `hpl` and
//! `hpl2` formats).
//!
//! An `hpl` file starts with an ASCII header (`$$TR_IOREC-1.3 ...`, then `name = value;` lines
//! describing the machine and its disks) ended by a form feed (0x0C); `hpl2` files have no
//! header. Records follow, as big-endian 32-bit words (the traces come from PA-RISC machines):
//!
//! | word | field |
//! |---|---|
//! | 0 | record size in bytes, including this word |
//! | 1 | record id: version (1 to 4) in the high 16 bits, type in the low 16 |
//! | 2, 3 | seconds and microseconds when the request was queued |
//! | 4, 5 | start and stop of the I/O, in microseconds after queueing |
//! | 6 | size in bytes, a multiple of 512 |
//! | 7 | sector number |
//! | 8 | device: bits 8 to 15 are the disk, the low byte the partition |
//! | 9, 10 | driver type, cylinder |
//! | 11 | I/O flags: bit 0 set means read |
//! | 12 | where the I/O came from |
//! | 13 | queue length, in version 4 records only |
//! | last | error flags, in "suspect I/O" records only |
//!
//! Type 1 records (short I/O) are requests. Type 4 records (suspect I/O) are well formed but
//! DiskSim skips them, and so does this parser, counting them as ignored. Other types are
//! malformed. Offsets follow DiskSim, which takes the sector number as a 512-byte block number,
//! so that replays match DiskSim's own; the `ajw` header declares 256-byte sectors, see the
//! format page. The device is the disk byte of word 8.

use super::fields::check_end;
use super::format::{Detect, FormatEntry};
use super::input::read_full;
use super::{ParseContext, Records};
use crate::{Pacing, Record, WorkloadError};
use std::io::BufRead;
use storsim_core::{Op, SECTOR_BYTES};

/// How every `hpl` header begins.
pub(crate) const HEADER_MAGIC: &[u8] = b"$$TR_IOREC";

/// The byte that ends the header.
const HEADER_END: u8 = 0x0C;

/// A header longer than this is not a header: it bounds the search for its end.
const MAX_HEADER_BYTES: u64 = 1 << 20;

const RECORD_SHORT_IO: u32 = 1;
const RECORD_SUSPECT_IO: u32 = 4;

const ID_BYTES: usize = 16;
/// Thirteen words: the id block plus nine data words.
const BASE_RECORD_BYTES: u32 = 52;
/// The largest record: base plus queue length plus suspect flags.
const MAX_RECORD_BYTES: usize = 60;

/// A bad record whose size field is at most this is skipped by its size; a larger size is taken
/// as garbage.
const MAX_SKIP_BYTES: u32 = 4096;

const READ_FLAG: u32 = 0x1;

const NS_PER_S: u64 = 1_000_000_000;
const NS_PER_US: u64 = 1_000;

/// Whether the first 16 bytes look like a headerless (`hpl2`) record: a plausible size and id.
pub(crate) fn looks_like_record(head: &[u8]) -> bool {
    if head.len() < ID_BYTES {
        return false;
    }
    let size = be_u32(head, 0);
    let id = be_u32(head, 4);
    let version = id >> 16;
    let kind = id & 0xFFFF;
    (1..=4).contains(&version)
        && (kind == RECORD_SHORT_IO || kind == RECORD_SUSPECT_IO)
        && expected_size(version, kind) == Some(size)
}

fn be_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn expected_size(version: u32, kind: u32) -> Option<u32> {
    let queue_len = if version == 4 { 4 } else { 0 };
    let suspect = match kind {
        RECORD_SHORT_IO => 0,
        RECORD_SUSPECT_IO => 4,
        _ => return None,
    };
    Some(BASE_RECORD_BYTES + queue_len + suspect)
}

/// The format's entry in the format table.
pub(super) const FORMAT: FormatEntry = FormatEntry {
    name: "hp-srt",
    aliases: &[],
    description: "HP Labs SRT binary ($$TR_IOREC header, or hpl2 without it)",
    detect: Detect::Binary {
        check: |head| head.starts_with(HEADER_MAGIC) || looks_like_record(head),
        signature: "\"$$TR_IOREC\" header or big-endian records",
    },
    binary: true,
    single_device: false,
    device_column: false,
    pacing: Pacing::Open,
    records: |reader, ctx, _| records(reader, ctx),
    measured: None,
};

pub(crate) fn records(reader: Box<dyn BufRead>, ctx: ParseContext) -> Records {
    Box::new(HpRecords {
        reader,
        ctx,
        offset: 0,
        started: false,
        done: false,
    })
}

struct HpRecords {
    reader: Box<dyn BufRead>,
    ctx: ParseContext,
    /// Byte offset of the next record in the file.
    offset: u64,
    /// Whether the header (if any) has been skipped.
    started: bool,
    done: bool,
}

enum Decoded {
    Request(Record),
    Ignored,
}

/// Why a record is bad, and where reading can resume.
struct Bad {
    message: String,
    next: Resume,
}

enum Resume {
    /// The record's size field was believable: the next record starts at this byte offset.
    At(u64),
    /// The file ended inside the record.
    End,
    /// The size field cannot be trusted, so nothing after the record can be found.
    Lost,
}

impl HpRecords {
    fn fail(&mut self, at: u64, message: String) -> Option<Result<Record, WorkloadError>> {
        self.done = true;
        Some(Err(self.ctx.malformed(format!("byte {at}"), message)))
    }

    /// Skips the ASCII header if the file has one, leaving `offset` at the first record.
    fn skip_header(&mut self) -> Result<(), WorkloadError> {
        let head = self.reader.fill_buf().map_err(|e| self.ctx.io(e))?;
        if !head.starts_with(HEADER_MAGIC) {
            return Ok(());
        }
        loop {
            let buf = self.reader.fill_buf().map_err(|e| self.ctx.io(e))?;
            if buf.is_empty() {
                return Err(self.ctx.malformed(
                    format!("byte {}", self.offset),
                    "the $$TR_IOREC header never ends: expected a form feed (0x0C) after it"
                        .to_string(),
                ));
            }
            let (used, found) = match buf.iter().position(|&b| b == HEADER_END) {
                Some(i) => (i + 1, true),
                None => (buf.len(), false),
            };
            self.reader.consume(used);
            self.offset += used as u64;
            if found {
                return Ok(());
            }
            if self.offset > MAX_HEADER_BYTES {
                return Err(self.ctx.malformed(
                    "byte 0".to_string(),
                    format!(
                        "expected the $$TR_IOREC header to end with a form feed (0x0C) within {MAX_HEADER_BYTES} bytes"
                    ),
                ));
            }
        }
    }

    /// Decodes one complete short I/O or suspect I/O record that starts at byte `at`.
    fn decode(rec: &[u8], kind: u32, at: u64) -> Result<Decoded, String> {
        if kind == RECORD_SUSPECT_IO {
            return Ok(Decoded::Ignored);
        }
        let word = |i: usize| be_u32(rec, i * 4);
        // The trace declares these words as signed C ints.
        let seconds = word(2) as i32;
        let micros = word(3) as i32;
        let bytes = word(6) as i32;
        let sector = word(7) as i32;
        let device = word(8);
        let flags = word(11);
        if seconds < 0 || micros < 0 {
            return Err(format!(
                "expected a non-negative queueing time, found {seconds} s {micros} us"
            ));
        }
        // Both parts are below 2^31, so neither product nor sum can overflow 64 bits.
        let timestamp_ns = seconds as u64 * NS_PER_S + micros as u64 * NS_PER_US;
        if bytes <= 0 || bytes as u64 % SECTOR_BYTES != 0 {
            return Err(format!(
                "expected a positive request size that is a multiple of 512 bytes, found {bytes}"
            ));
        }
        if sector < 0 {
            return Err(format!(
                "expected a non-negative sector number, found {sector}"
            ));
        }
        let offset_bytes = sector as u64 * SECTOR_BYTES;
        let len_bytes = bytes as u64;
        check_end(offset_bytes, len_bytes)?;
        let op = if flags & READ_FLAG != 0 {
            Op::Read
        } else {
            Op::Write
        };
        Ok(Decoded::Request(Record {
            timestamp_ns,
            op,
            offset_bytes,
            len_bytes,
            dev: (device >> 8) & 0xFF,
            think_ns: 0,
            origin: at,
        }))
    }

    /// Reads the record at `self.offset`: `Ok(None)` at a clean end of file.
    fn read_record(&mut self) -> Result<Option<Decoded>, Result<Bad, WorkloadError>> {
        let at = self.offset;
        let mut rec = [0u8; MAX_RECORD_BYTES];
        let got = read_full(self.reader.as_mut(), &mut rec[..ID_BYTES])
            .map_err(|e| Err(self.ctx.io(e)))?;
        if got == 0 {
            return Ok(None);
        }
        self.offset += got as u64;
        if got < ID_BYTES {
            return Err(Ok(Bad {
                message: format!(
                    "truncated record: {got} bytes at the end of the file, expected at least {ID_BYTES}"
                ),
                next: Resume::End,
            }));
        }
        let size = be_u32(&rec, 0);
        let id = be_u32(&rec, 4);
        let (version, kind) = (id >> 16, id & 0xFFFF);
        let next = if size as usize >= ID_BYTES && size % 4 == 0 && size <= MAX_SKIP_BYTES {
            Resume::At(at.saturating_add(u64::from(size)))
        } else {
            Resume::Lost
        };
        if !(1..=4).contains(&version) {
            return Err(Ok(Bad {
                message: format!(
                    "expected a record version from 1 to 4 in the id word, found id 0x{id:08x}"
                ),
                next,
            }));
        }
        let Some(expected) = expected_size(version, kind) else {
            return Err(Ok(Bad {
                message: format!(
                    "expected a short I/O (type 1) or suspect I/O (type 4) record, found type {kind}"
                ),
                next,
            }));
        };
        if size != expected {
            return Err(Ok(Bad {
                message: format!(
                    "expected a version {version} type {kind} record of {expected} bytes, found a size of {size}"
                ),
                next,
            }));
        }
        let size = size as usize;
        let more = read_full(self.reader.as_mut(), &mut rec[ID_BYTES..size])
            .map_err(|e| Err(self.ctx.io(e)))?;
        self.offset += more as u64;
        if more < size - ID_BYTES {
            return Err(Ok(Bad {
                message: format!(
                    "truncated record: {} of {size} bytes at the end of the file",
                    ID_BYTES + more
                ),
                next: Resume::End,
            }));
        }
        Self::decode(&rec[..size], kind, at)
            .map(Some)
            .map_err(|message| {
                Ok(Bad {
                    message,
                    next: Resume::At(self.offset),
                })
            })
    }

    /// Reads and drops bytes up to the byte offset `to`.
    fn skip_to(&mut self, to: u64) -> Result<(), WorkloadError> {
        let mut scratch = [0u8; 512];
        while self.offset < to {
            let want = (to - self.offset).min(scratch.len() as u64) as usize;
            let got = read_full(self.reader.as_mut(), &mut scratch[..want])
                .map_err(|e| self.ctx.io(e))?;
            if got == 0 {
                break;
            }
            self.offset += got as u64;
        }
        Ok(())
    }
}

impl Iterator for HpRecords {
    type Item = Result<Record, WorkloadError>;

    fn next(&mut self) -> Option<Self::Item> {
        if !self.started {
            self.started = true;
            if let Err(e) = self.skip_header() {
                self.done = true;
                return Some(Err(e));
            }
        }
        while !self.done {
            let at = self.offset;
            match self.read_record() {
                Ok(None) => {
                    self.done = true;
                    return None;
                }
                Ok(Some(Decoded::Request(record))) => return Some(Ok(record)),
                Ok(Some(Decoded::Ignored)) => self.ctx.ignored.set(self.ctx.ignored.get() + 1),
                Err(Err(io)) => {
                    self.done = true;
                    return Some(Err(io));
                }
                Err(Ok(bad)) => {
                    if !self.ctx.skip_bad {
                        return self.fail(at, bad.message);
                    }
                    self.ctx.skipped.set(self.ctx.skipped.get() + 1);
                    match bad.next {
                        Resume::At(to) => {
                            if let Err(e) = self.skip_to(to) {
                                self.done = true;
                                return Some(Err(e));
                            }
                        }
                        Resume::End => {
                            self.done = true;
                            return None;
                        }
                        Resume::Lost => {
                            return self.fail(
                                at,
                                format!("{} (the record size is not believable, so the next record cannot be found)", bad.message),
                            )
                        }
                    }
                }
            }
        }
        None
    }
}
