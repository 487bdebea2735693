//! `replay-log`: a disk rebuilt from an emulator's write log as a crash at a chosen point would
//! have left it (docs/faults.md, "Power loss").

use crate::ApiError;
use serde_json::Value;
use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use storsim_store::power::{CrashMode, CrashReport};
use storsim_store::write_log::{self, ReplayTo};
use storsim_store::Store;

/// An emulator's write log (`emulate --write-log`) and the points a crash can be replayed
/// at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteLog {
    /// The log file.
    pub path: PathBuf,
    /// The host writes it holds (writes, write-zeroes and trims).
    pub writes: u64,
    /// After how many writes each flush came, in order.
    pub flushes_after_writes: Vec<u64>,
}

/// Where a replay crashes and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplayLogOptions {
    /// The crash point.
    pub to: ReplayTo,
    /// What the crash does to the writes not yet durable.
    pub mode: CrashMode,
}

/// A finished replay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayedLog {
    /// The log replayed.
    pub log: PathBuf,
    /// The host writes the log holds.
    pub log_writes: u64,
    /// The host writes replayed.
    pub writes: u64,
    /// What the crash at the stopping point lost.
    pub crash: CrashReport,
}

impl WriteLog {
    /// Reads the log at `path` through once for its writes and flush points; the error
    /// names the file.
    pub fn open(path: &Path) -> Result<WriteLog, ApiError> {
        let (writes, flushes_after_writes) =
            write_log::flush_points(path).map_err(|e| ApiError::Input(e.to_string()))?;
        Ok(WriteLog {
            path: path.to_path_buf(),
            writes,
            flushes_after_writes,
        })
    }

    /// `storsim replay-log --out IMAGE`: replays the log to the crash `options` name and
    /// writes the disk it leaves into the raw image `image` (zeros as holes).
    pub fn replay(
        &self,
        options: &ReplayLogOptions,
        image: &Path,
    ) -> Result<ReplayedLog, ApiError> {
        let replayed = write_log::replay(&self.path, options.to, options.mode)
            .map_err(|e| ApiError::Input(e.to_string()))?;
        write_image(&replayed.store, image)?;
        Ok(ReplayedLog {
            log: self.path.clone(),
            log_writes: self.writes,
            writes: replayed.writes,
            crash: replayed.crash,
        })
    }
}

impl ReplayedLog {
    /// The JSON document `--json` writes.
    pub fn document(&self, command_line: &[String]) -> Value {
        storsim_output::replay_log_json(
            command_line,
            &self.log,
            self.log_writes,
            self.writes,
            &self.crash,
        )
    }
}

/// Writes the store as a raw image: the device's bytes from offset 0, with runs of zeros left
/// as holes.
fn write_image(store: &Store, out: &Path) -> Result<(), ApiError> {
    const CHUNK: u64 = 1 << 20;
    let failed = |e: std::io::Error| ApiError::Failure(format!("--out {}: {e}", out.display()));
    let mut file = File::create(out).map_err(failed)?;
    let size = store.size_bytes();
    let mut buf = vec![0u8; CHUNK as usize];
    let mut at = 0;
    while at < size {
        let len = CHUNK.min(size - at) as usize;
        store
            .read(at, &mut buf[..len])
            .map_err(|e| ApiError::Failure(e.to_string()))?;
        if buf[..len].iter().any(|&b| b != 0) {
            file.seek(SeekFrom::Start(at)).map_err(failed)?;
            file.write_all(&buf[..len]).map_err(failed)?;
        }
        at += len as u64;
    }
    file.set_len(size).map_err(failed)?;
    file.sync_all().map_err(failed)
}
