//! VMware vscsiStats traces, as in the CloudPhysics block traces.
//!
//! The file is a sequence of fixed-size little-endian records with no header. Version 1
//! records are 32 bytes: `u32 serial, u32 length_bytes, u32 sg_count, u16 scsi_opcode,
//! u16 version (0x01xx), u64 lbn (512-byte blocks), u64 timestamp_us`. Version 2 records are
//! 40 bytes: `u16 scsi_opcode, u16 version (0x02xx), u32 serial, u32 length_bytes, u32 sg_count,
//! u64 lbn, u64 timestamp_us, u64 response_time`, the layout libCacheSim's reader uses. The
//! version of the first record decides the record size for the whole file.
//!
//! READ(6/10/12/16) and WRITE(6/10/12/16) become reads and writes. Any other SCSI command
//! (INQUIRY, SYNCHRONIZE CACHE, UNMAP and so on) and zero-length transfers are well formed but
//! not replayed: they are counted as ignored. The device is always 0.

use super::detect::is_text;
use super::fields::check_end;
use super::format::{Detect, FormatEntry};
use super::input::read_full;
use super::{ParseContext, Records};
use crate::{Pacing, Record, WorkloadError};
use std::io::BufRead;
use storsim_core::{Op, SECTOR_BYTES};

pub(crate) const V1_RECORD_BYTES: usize = 32;
pub(crate) const V2_RECORD_BYTES: usize = 40;

const READ_OPCODES: [u16; 4] = [0x08, 0x28, 0xa8, 0x88];
const WRITE_OPCODES: [u16; 4] = [0x0a, 0x2a, 0xaa, 0x8a];

const NS_PER_US: u64 = 1_000;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Version {
    V1,
    V2,
}

impl Version {
    fn record_bytes(self) -> usize {
        match self {
            Version::V1 => V1_RECORD_BYTES,
            Version::V2 => V2_RECORD_BYTES,
        }
    }

    fn number(self) -> u8 {
        match self {
            Version::V1 => 1,
            Version::V2 => 2,
        }
    }
}

/// Reads the record version from the start of a record: a version 1 record has its version's
/// high byte (1) at byte 15, a version 2 record (2) at byte 3. Byte 15 of a version 2 record is
/// the top byte of its scatter-gather count, which is 1 only beyond 16 million elements, so
/// version 1 is tried first.
pub(crate) fn record_version(head: &[u8]) -> Option<Version> {
    if head.len() >= V1_RECORD_BYTES && head[15] == 1 {
        Some(Version::V1)
    } else if head.len() >= V2_RECORD_BYTES && head[3] == 2 {
        Some(Version::V2)
    } else {
        None
    }
}

/// The format's entry in the format table.
pub(super) const FORMAT: FormatEntry = FormatEntry {
    name: "vscsi",
    aliases: &[],
    description: "VMware vscsiStats binary records (v1 32 B, v2 40 B), CloudPhysics",
    detect: Detect::Binary {
        // Text can have these bytes where a version byte would be; it is left to the text
        // formats.
        check: |head| record_version(head).is_some() && !is_text(head),
        signature: "version byte 0x01 at offset 15 or 0x02 at offset 3",
    },
    binary: true,
    single_device: true,
    device_column: false,
    pacing: Pacing::Open,
    records: |reader, ctx, _| records(reader, ctx),
    measured: None,
};

pub(crate) fn records(reader: Box<dyn BufRead>, ctx: ParseContext) -> Records {
    Box::new(VscsiRecords {
        reader,
        ctx,
        offset: 0,
        version: None,
        done: false,
    })
}

struct VscsiRecords {
    reader: Box<dyn BufRead>,
    ctx: ParseContext,
    /// Byte offset of the next record.
    offset: u64,
    version: Option<Version>,
    done: bool,
}

/// What one record turned out to be.
enum Decoded {
    Request(Record),
    Ignored,
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(bytes)
}

fn decode(rec: &[u8], version: Version, origin: u64) -> Result<Decoded, String> {
    let (opcode, ver, len_bytes) = match version {
        Version::V1 => (u16_at(rec, 12), u16_at(rec, 14), u32_at(rec, 4)),
        Version::V2 => (u16_at(rec, 0), u16_at(rec, 2), u32_at(rec, 8)),
    };
    if (ver >> 8) as u8 != version.number() {
        return Err(format!(
            "expected a version {} record (version field 0x{:02x}xx) like the first record, found version field 0x{ver:04x}",
            version.number(),
            version.number()
        ));
    }
    let lbn = u64_at(rec, 16);
    let timestamp_us = u64_at(rec, 24);
    let op = if READ_OPCODES.contains(&opcode) {
        Op::Read
    } else if WRITE_OPCODES.contains(&opcode) {
        Op::Write
    } else {
        return Ok(Decoded::Ignored);
    };
    if len_bytes == 0 {
        return Ok(Decoded::Ignored);
    }
    let timestamp_ns = timestamp_us.checked_mul(NS_PER_US).ok_or_else(|| {
        format!("timestamp {timestamp_us} us overflows a 64-bit nanosecond clock")
    })?;
    let offset_bytes = lbn
        .checked_mul(SECTOR_BYTES)
        .ok_or_else(|| format!("block number {lbn} overflows a 64-bit byte offset"))?;
    let len_bytes = u64::from(len_bytes);
    check_end(offset_bytes, len_bytes)?;
    Ok(Decoded::Request(Record {
        timestamp_ns,
        op,
        offset_bytes,
        len_bytes,
        dev: 0,
        think_ns: 0,
        origin,
    }))
}

impl VscsiRecords {
    fn error(&mut self, at: u64, message: String) -> Option<Result<Record, WorkloadError>> {
        self.done = true;
        Some(Err(self.ctx.malformed(format!("byte {at}"), message)))
    }

    /// Reads the first record, which decides the version, into `buf`. Returns the version and
    /// the number of bytes read (short only at a truncated end), or the item to return instead.
    fn first_record(
        &mut self,
        buf: &mut [u8; V2_RECORD_BYTES],
    ) -> Result<(Version, usize), Option<Result<Record, WorkloadError>>> {
        let got = read_full(self.reader.as_mut(), &mut buf[..V1_RECORD_BYTES]).map_err(|e| {
            self.done = true;
            Some(Err(self.ctx.io(e)))
        })?;
        if got == 0 {
            self.done = true;
            return Err(None);
        }
        if got < V1_RECORD_BYTES || buf[15] == 1 {
            return Ok((Version::V1, got));
        }
        if buf[3] != 2 {
            return Err(self.error(
                0,
                format!(
                    "expected a vscsi record with version 0x01xx at byte 14 (version 1) or 0x02xx at byte 2 (version 2), found the bytes {:02x?}",
                    &buf[..16]
                ),
            ));
        }
        let more = read_full(self.reader.as_mut(), &mut buf[V1_RECORD_BYTES..]).map_err(|e| {
            self.done = true;
            Some(Err(self.ctx.io(e)))
        })?;
        Ok((Version::V2, got + more))
    }
}

impl Iterator for VscsiRecords {
    type Item = Result<Record, WorkloadError>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut buf = [0u8; V2_RECORD_BYTES];
        while !self.done {
            let at = self.offset;
            let (version, got) = match self.version {
                Some(version) => {
                    match read_full(self.reader.as_mut(), &mut buf[..version.record_bytes()]) {
                        Ok(0) => {
                            self.done = true;
                            return None;
                        }
                        Ok(got) => (version, got),
                        Err(e) => {
                            self.done = true;
                            return Some(Err(self.ctx.io(e)));
                        }
                    }
                }
                None => match self.first_record(&mut buf) {
                    Ok((version, got)) => {
                        self.version = Some(version);
                        (version, got)
                    }
                    Err(item) => return item,
                },
            };
            let size = version.record_bytes();
            self.offset = at.saturating_add(got as u64);
            if got < size {
                // Only the end of the file can cut a record short, so nothing follows it.
                let message =
                    format!("truncated record: {got} of {size} bytes at the end of the file");
                if self.ctx.skip_bad {
                    self.ctx.skipped.set(self.ctx.skipped.get() + 1);
                    self.done = true;
                    return None;
                }
                return self.error(at, message);
            }
            match decode(&buf[..size], version, at) {
                Ok(Decoded::Request(record)) => return Some(Ok(record)),
                Ok(Decoded::Ignored) => self.ctx.ignored.set(self.ctx.ignored.get() + 1),
                Err(message) => {
                    if self.ctx.skip_bad {
                        self.ctx.skipped.set(self.ctx.skipped.get() + 1);
                    } else {
                        return self.error(at, message);
                    }
                }
            }
        }
        None
    }
}
