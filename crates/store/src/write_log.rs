//! The write log: every write and flush a disk received, with the data, in order, so that the
//! disk can be rebuilt afterwards as a crash at any point would have left it (as Linux's
//! dm-log-writes does).
//!
//! The file is a 32-byte header and then records, all integers little-endian:
//!
//! ```text
//! header  "STORSIM-WRITELOG" (16 bytes)  version u32 = 1  reserved u32 = 0
//!         device size u64  (bytes)       write cache u64 (bytes, the cache the emulator modelled)
//! record  tag u8, then by tag:
//!         1 write         offset u64, len u64, fua u8, len bytes of data
//!         2 zero          offset u64, len u64, fua u8   (write-zeroes or trim)
//!         3 flush
//!         4 crash         mode u8 (0 drop-all, 1 torn sectors, 2 torn pages), seed u64
//! ```
//!
//! A crash record says the emulator crashed there; replaying past it crashes the same way, so
//! that the image goes on from the same post-crash contents the emulator served.

use crate::power::{Atomicity, CrashMode, CrashReport, VolatileWrites};
use crate::{Backing, Store, StoreError};
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 16] = b"STORSIM-WRITELOG";
const VERSION: u32 = 1;

const TAG_WRITE: u8 = 1;
const TAG_ZERO: u8 = 2;
const TAG_FLUSH: u8 = 3;
const TAG_CRASH: u8 = 4;

/// One record of a write log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogRecord {
    Write {
        offset_bytes: u64,
        data: Vec<u8>,
        fua: bool,
    },
    /// Write-zeroes or trim.
    Zero {
        offset_bytes: u64,
        len_bytes: u64,
        fua: bool,
    },
    Flush,
    Crash(CrashMode),
}

/// Writes a log. Records go through a buffer, pushed to the file at each flush record and when
/// the writer is finished or dropped.
pub struct WriteLogWriter {
    path: PathBuf,
    out: BufWriter<File>,
}

impl WriteLogWriter {
    /// Creates (or truncates) the log at `path` for a device of `size_bytes` whose write cache
    /// holds `cache_bytes`.
    pub fn create(path: &Path, size_bytes: u64, cache_bytes: u64) -> Result<Self, StoreError> {
        let io = |action: &str, source| StoreError::Io {
            path: path.to_path_buf(),
            action: action.to_string(),
            source,
        };
        let file = File::create(path).map_err(|e| io("create the write log", e))?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        let mut header = Vec::with_capacity(40);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&VERSION.to_le_bytes());
        header.extend_from_slice(&0u32.to_le_bytes());
        header.extend_from_slice(&size_bytes.to_le_bytes());
        header.extend_from_slice(&cache_bytes.to_le_bytes());
        out.write_all(&header)
            .map_err(|e| io("write the write log's header", e))?;
        Ok(WriteLogWriter {
            path: path.to_path_buf(),
            out,
        })
    }

    /// Appends a record.
    pub fn append(&mut self, record: &LogRecord) -> Result<(), StoreError> {
        match record {
            LogRecord::Write {
                offset_bytes,
                data,
                fua,
            } => self.write(*offset_bytes, data, *fua),
            LogRecord::Zero {
                offset_bytes,
                len_bytes,
                fua,
            } => self.zero(*offset_bytes, *len_bytes, *fua),
            LogRecord::Flush => self.flush(),
            LogRecord::Crash(mode) => self.crash(*mode),
        }
    }

    /// Appends a write of `data` at `offset`, without copying it first.
    pub fn write(&mut self, offset: u64, data: &[u8], fua: bool) -> Result<(), StoreError> {
        let result = self
            .range(TAG_WRITE, offset, data.len() as u64, fua)
            .and_then(|()| self.out.write_all(data));
        self.checked(result)
    }

    /// Appends a write-zeroes or trim.
    pub fn zero(&mut self, offset: u64, len: u64, fua: bool) -> Result<(), StoreError> {
        let result = self.range(TAG_ZERO, offset, len, fua);
        self.checked(result)
    }

    /// Appends a flush, and pushes the buffer to the file.
    pub fn flush(&mut self) -> Result<(), StoreError> {
        let result = self
            .out
            .write_all(&[TAG_FLUSH])
            .and_then(|()| self.out.flush());
        self.checked(result)
    }

    /// Appends a crash, and pushes the buffer to the file.
    pub fn crash(&mut self, mode: CrashMode) -> Result<(), StoreError> {
        let (kind, seed) = match mode {
            CrashMode::DropAll => (0u8, 0u64),
            CrashMode::Torn {
                atomicity: Atomicity::Sector,
                seed,
            } => (1, seed),
            CrashMode::Torn {
                atomicity: Atomicity::Page,
                seed,
            } => (2, seed),
        };
        let result = self
            .out
            .write_all(&[TAG_CRASH, kind])
            .and_then(|()| self.out.write_all(&seed.to_le_bytes()))
            .and_then(|()| self.out.flush());
        self.checked(result)
    }

    fn checked(&self, result: io::Result<()>) -> Result<(), StoreError> {
        result.map_err(|source| StoreError::Io {
            path: self.path.clone(),
            action: "append to the write log".into(),
            source,
        })
    }

    fn range(&mut self, tag: u8, offset: u64, len: u64, fua: bool) -> io::Result<()> {
        let mut head = [0u8; 18];
        head[0] = tag;
        head[1..9].copy_from_slice(&offset.to_le_bytes());
        head[9..17].copy_from_slice(&len.to_le_bytes());
        head[17] = u8::from(fua);
        self.out.write_all(&head)
    }

    /// Pushes what is buffered to the file.
    pub fn finish(&mut self) -> Result<(), StoreError> {
        self.out.flush().map_err(|source| StoreError::Io {
            path: self.path.clone(),
            action: "write the write log".into(),
            source,
        })
    }
}

/// Reads a log record by record.
pub struct WriteLogReader {
    path: PathBuf,
    input: BufReader<File>,
    /// The byte offset of the next record, for error messages.
    at: u64,
    /// The device's size, from the header.
    pub size_bytes: u64,
    /// The write cache the emulator modelled, from the header.
    pub cache_bytes: u64,
}

impl WriteLogReader {
    /// Opens the log at `path` and reads its header.
    pub fn open(path: &Path) -> Result<WriteLogReader, StoreError> {
        let file = File::open(path).map_err(|source| StoreError::Io {
            path: path.to_path_buf(),
            action: "open the write log".into(),
            source,
        })?;
        let mut reader = WriteLogReader {
            path: path.to_path_buf(),
            input: BufReader::with_capacity(1 << 20, file),
            at: 0,
            size_bytes: 0,
            cache_bytes: 0,
        };
        let mut header = [0u8; 40];
        let whole = matches!(reader.fill(&mut header), Ok(true));
        if !whole || &header[..16] != MAGIC {
            return Err(reader.corrupt("not a storsim write log (no STORSIM-WRITELOG header)"));
        }
        reader.at = header.len() as u64;
        let version = u32::from_le_bytes(header[16..20].try_into().expect("4 bytes"));
        if version != VERSION {
            return Err(reader.corrupt(&format!(
                "write log version {version}; this storsim reads version {VERSION}"
            )));
        }
        reader.size_bytes = u64::from_le_bytes(header[24..32].try_into().expect("8 bytes"));
        reader.cache_bytes = u64::from_le_bytes(header[32..40].try_into().expect("8 bytes"));
        if reader.size_bytes == 0 {
            return Err(reader.corrupt("the header gives a device of 0 bytes"));
        }
        Ok(reader)
    }

    fn corrupt(&self, problem: &str) -> StoreError {
        StoreError::Corrupt {
            path: self.path.clone(),
            problem: format!("at byte {}: {problem}", self.at),
        }
    }

    /// Fills `buf`; false at a clean end of file before its first byte.
    fn fill(&mut self, buf: &mut [u8]) -> Result<bool, StoreError> {
        let mut got = 0;
        while got < buf.len() {
            match self.input.read(&mut buf[got..]) {
                Ok(0) if got == 0 => return Ok(false),
                Ok(0) => return Err(self.corrupt("the log ends inside a record")),
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(source) => {
                    return Err(StoreError::Io {
                        path: self.path.clone(),
                        action: "read the write log".into(),
                        source,
                    })
                }
            }
        }
        Ok(true)
    }

    fn need(&mut self, buf: &mut [u8]) -> Result<(), StoreError> {
        if self.fill(buf)? {
            Ok(())
        } else {
            Err(self.corrupt("the log ends inside a record"))
        }
    }

    /// The next record, or `None` at the end of the log.
    pub fn next_record(&mut self) -> Result<Option<LogRecord>, StoreError> {
        let start = self.at;
        let mut tag = [0u8; 1];
        if !self.fill(&mut tag)? {
            return Ok(None);
        }
        let record = match tag[0] {
            TAG_WRITE | TAG_ZERO => {
                let mut head = [0u8; 17];
                self.need(&mut head)?;
                let offset_bytes = u64::from_le_bytes(head[..8].try_into().expect("8 bytes"));
                let len_bytes = u64::from_le_bytes(head[8..16].try_into().expect("8 bytes"));
                let fua = head[16] != 0;
                let in_range = offset_bytes
                    .checked_add(len_bytes)
                    .is_some_and(|end| end <= self.size_bytes);
                if !in_range {
                    return Err(self.corrupt(&format!(
                        "a write of {len_bytes} bytes at {offset_bytes} outside the device of {} bytes",
                        self.size_bytes
                    )));
                }
                if tag[0] == TAG_WRITE {
                    let mut data = vec![0u8; len_bytes as usize];
                    self.need(&mut data)?;
                    LogRecord::Write {
                        offset_bytes,
                        data,
                        fua,
                    }
                } else {
                    LogRecord::Zero {
                        offset_bytes,
                        len_bytes,
                        fua,
                    }
                }
            }
            TAG_FLUSH => LogRecord::Flush,
            TAG_CRASH => {
                let mut body = [0u8; 9];
                self.need(&mut body)?;
                let seed = u64::from_le_bytes(body[1..].try_into().expect("8 bytes"));
                LogRecord::Crash(match body[0] {
                    0 => CrashMode::DropAll,
                    1 => CrashMode::Torn {
                        atomicity: Atomicity::Sector,
                        seed,
                    },
                    2 => CrashMode::Torn {
                        atomicity: Atomicity::Page,
                        seed,
                    },
                    other => return Err(self.corrupt(&format!("unknown crash mode {other}"))),
                })
            }
            other => return Err(self.corrupt(&format!("unknown record tag {other}"))),
        };
        self.at = start + record_bytes(&record);
        Ok(Some(record))
    }
}

/// A record's size in the file.
fn record_bytes(record: &LogRecord) -> u64 {
    match record {
        LogRecord::Write { data, .. } => 18 + data.len() as u64,
        LogRecord::Zero { .. } => 18,
        LogRecord::Flush => 1,
        LogRecord::Crash(_) => 10,
    }
}

/// Where a replay stops and crashes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplayTo {
    /// Right after the host's `n`-th write (writes, write-zeroes and trims counted from 1),
    /// before anything that followed it: where `emulate --crash-after-writes n` crashes.
    Write(u64),
    /// Right after the `k`-th flush (from 1): a crash there loses nothing.
    Flush(u64),
    /// At the end of the log.
    End,
}

/// What a replay did.
#[derive(Debug)]
pub struct Replay {
    /// The rebuilt disk, in memory.
    pub store: Store,
    /// The host writes replayed.
    pub writes: u64,
    /// The crash at the stopping point: what it lost.
    pub crash: CrashReport,
}

/// Rebuilds the disk a log describes as a crash at `to` would have left it, tearing the writes
/// not yet durable as `mode` says. Crashes the log recorded on the way are replayed as they
/// happened.
pub fn replay(path: &Path, to: ReplayTo, mode: CrashMode) -> Result<Replay, StoreError> {
    let mut log = WriteLogReader::open(path)?;
    let store = Store::open(&Backing::Memory, log.size_bytes)?;
    let mut volatile = VolatileWrites::new(log.cache_bytes);
    let mut flushes = 0u64;
    let reached = |volatile: &VolatileWrites, flushes: u64| match to {
        ReplayTo::Write(n) => volatile.writes() >= n,
        ReplayTo::Flush(k) => flushes >= k,
        ReplayTo::End => false,
    };
    while !reached(&volatile, flushes) {
        let Some(record) = log.next_record()? else {
            break;
        };
        match record {
            LogRecord::Write {
                offset_bytes,
                data,
                fua,
            } => {
                volatile.write(&store, offset_bytes, &data, fua)?;
            }
            LogRecord::Zero {
                offset_bytes,
                len_bytes,
                fua,
            } => {
                volatile.zero(&store, offset_bytes, len_bytes, fua)?;
            }
            LogRecord::Flush => {
                volatile.flush();
                flushes += 1;
            }
            LogRecord::Crash(recorded) => {
                volatile.crash(&store, recorded)?;
            }
        }
    }
    let short = match to {
        ReplayTo::Write(n) if volatile.writes() < n => Some(format!(
            "write {n}, but the log holds {} writes",
            volatile.writes()
        )),
        ReplayTo::Flush(k) if flushes < k => {
            Some(format!("flush {k}, but the log holds {flushes} flushes"))
        }
        _ => None,
    };
    if let Some(problem) = short {
        return Err(StoreError::Corrupt {
            path: path.to_path_buf(),
            problem: format!("asked to replay to {problem}"),
        });
    }
    let crash = volatile.crash(&store, mode)?;
    Ok(Replay {
        writes: volatile.writes(),
        store,
        crash,
    })
}

/// Lists a log's flush points and counts its writes without rebuilding anything.
pub fn flush_points(path: &Path) -> Result<(u64, Vec<u64>), StoreError> {
    let mut log = WriteLogReader::open(path)?;
    let (mut writes, mut points) = (0, Vec::new());
    while let Some(record) = log.next_record()? {
        match record {
            LogRecord::Write { .. } | LogRecord::Zero { .. } => writes += 1,
            LogRecord::Flush => points.push(writes),
            LogRecord::Crash(_) => {}
        }
    }
    Ok((writes, points))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::power::DEFAULT_WRITE_CACHE_BYTES;

    const SIZE: u64 = 1 << 20;

    fn image(store: &Store) -> Vec<u8> {
        let mut buf = vec![0u8; store.size_bytes() as usize];
        store.read(0, &mut buf).unwrap();
        buf
    }

    /// A workload of writes, zeroes, FUA writes and flushes, as records.
    fn workload() -> Vec<LogRecord> {
        let mut records = Vec::new();
        for i in 0..40u64 {
            let offset_bytes = (i * 7 % 50) * 2048;
            records.push(match i % 9 {
                4 => LogRecord::Zero {
                    offset_bytes,
                    len_bytes: 4096,
                    fua: false,
                },
                6 => LogRecord::Write {
                    offset_bytes,
                    data: vec![i as u8; 1536],
                    fua: true,
                },
                _ => LogRecord::Write {
                    offset_bytes,
                    data: vec![i as u8 + 100; 3000],
                    fua: false,
                },
            });
            if i % 10 == 9 {
                records.push(LogRecord::Flush);
            }
        }
        records
    }

    /// Applies `records` as the emulator does, crashing after write `crash_after` with `mode`.
    fn live(records: &[LogRecord], crash_after: u64, mode: CrashMode) -> (Vec<u8>, CrashReport) {
        let store = Store::open(&Backing::Memory, SIZE).unwrap();
        let mut v = VolatileWrites::new(DEFAULT_WRITE_CACHE_BYTES);
        for r in records {
            match r {
                LogRecord::Write {
                    offset_bytes,
                    data,
                    fua,
                } => {
                    v.write(&store, *offset_bytes, data, *fua).unwrap();
                }
                LogRecord::Zero {
                    offset_bytes,
                    len_bytes,
                    fua,
                } => {
                    v.zero(&store, *offset_bytes, *len_bytes, *fua).unwrap();
                }
                LogRecord::Flush => v.flush(),
                LogRecord::Crash(m) => {
                    v.crash(&store, *m).unwrap();
                }
            }
            if v.writes() == crash_after {
                break;
            }
        }
        let report = v.crash(&store, mode).unwrap();
        (image(&store), report)
    }

    fn write_log(path: &Path, records: &[LogRecord]) {
        let mut w = WriteLogWriter::create(path, SIZE, DEFAULT_WRITE_CACHE_BYTES).unwrap();
        for r in records {
            w.append(r).unwrap();
        }
        w.finish().unwrap();
    }

    #[test]
    fn records_read_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let mut records = workload();
        records.push(LogRecord::Crash(CrashMode::Torn {
            atomicity: Atomicity::Page,
            seed: 99,
        }));
        write_log(&path, &records);
        let mut r = WriteLogReader::open(&path).unwrap();
        assert_eq!(
            (r.size_bytes, r.cache_bytes),
            (SIZE, DEFAULT_WRITE_CACHE_BYTES)
        );
        let mut back = Vec::new();
        while let Some(record) = r.next_record().unwrap() {
            back.push(record);
        }
        assert_eq!(back, records);
    }

    #[test]
    fn replaying_to_each_write_gives_the_image_a_crash_there_would() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let records = workload();
        write_log(&path, &records);
        let (writes, points) = flush_points(&path).unwrap();
        assert_eq!(writes, 40);
        assert_eq!(points, vec![10, 20, 30, 40]);
        for mode in [
            CrashMode::DropAll,
            CrashMode::Torn {
                atomicity: Atomicity::Sector,
                seed: 5,
            },
        ] {
            for n in 1..=writes {
                let (want, want_report) = live(&records, n, mode);
                let replayed = replay(&path, ReplayTo::Write(n), mode).unwrap();
                assert_eq!(replayed.writes, n);
                assert_eq!(image(&replayed.store), want, "write {n}, {mode}");
                assert_eq!(replayed.crash, want_report, "write {n}, {mode}");
            }
        }
    }

    #[test]
    fn at_each_flush_point_nothing_is_lost_and_the_image_holds_every_write_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let records = workload();
        write_log(&path, &records);
        for k in 1..=4u64 {
            // Every write before the k-th flush, applied to a plain store, is the image.
            let plain = Store::open(&Backing::Memory, SIZE).unwrap();
            let mut flushes = 0;
            for r in &records {
                match r {
                    LogRecord::Write {
                        offset_bytes, data, ..
                    } => plain.write(*offset_bytes, data).unwrap(),
                    LogRecord::Zero {
                        offset_bytes,
                        len_bytes,
                        ..
                    } => plain.write_zeroes(*offset_bytes, *len_bytes).unwrap(),
                    LogRecord::Flush => flushes += 1,
                    LogRecord::Crash(_) => unreachable!("the workload has no crash"),
                }
                if flushes == k {
                    break;
                }
            }
            let replayed = replay(&path, ReplayTo::Flush(k), CrashMode::DropAll).unwrap();
            assert!(replayed.crash.volatile.is_empty(), "flush {k}");
            assert_eq!(replayed.writes, k * 10);
            assert_eq!(image(&replayed.store), image(&plain), "flush {k}");
            // Just before the flush, the writes since the one before it are at risk.
            let before = replay(&path, ReplayTo::Write(k * 10), CrashMode::DropAll).unwrap();
            let lost: Vec<u64> = before.crash.volatile.iter().map(|w| w.index).collect();
            assert!(!lost.is_empty(), "flush {k}");
            assert!(
                lost.iter().all(|&i| i > (k - 1) * 10 && i <= k * 10),
                "{lost:?}"
            );
        }
    }

    #[test]
    fn a_truncated_or_foreign_log_is_refused_naming_the_file_and_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        write_log(&path, &workload());
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 5]).unwrap();
        let e = replay(&path, ReplayTo::End, CrashMode::DropAll)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("log") && e.contains("ends inside a record") && e.contains("at byte"),
            "{e}"
        );
        std::fs::write(&path, b"not a log at all, not at all, no no no").unwrap();
        let e = replay(&path, ReplayTo::End, CrashMode::DropAll)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a storsim write log"), "{e}");
        write_log(&path, &workload());
        let e = replay(&path, ReplayTo::Write(41), CrashMode::DropAll)
            .unwrap_err()
            .to_string();
        assert!(e.contains("holds 40 writes"), "{e}");
        let e = replay(&path, ReplayTo::Flush(5), CrashMode::DropAll)
            .unwrap_err()
            .to_string();
        assert!(e.contains("holds 4 flushes"), "{e}");
    }
}
