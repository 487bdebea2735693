//! The file backing: allocation on write into a data file that holds only the blocks written,
//! located through an allocation map kept as a checksummed journal. docs/store.md gives the
//! format and the durability argument; the comments here say which step of it each piece of code
//! carries out.

mod open;

use crate::format::{entry_offset, slot_offset, Entry, ENTRY_BYTES};
use crate::layout::{
    pieces, shard_of, stripe_runs, zero_plan, BlockHasher, BlockMap, Piece, BLOCK, SHARDS,
    STRIPE_BLOCKS,
};
use crate::{lock, read_lock, write_lock, Recovery, StoreError, BLOCK_BYTES};
use rustix::fs::FlockOperation;
use rustix::io::Errno;
use std::collections::HashSet;
use std::fs::File;
use std::hash::BuildHasherDefault;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, RwLock};

/// Unjournalled entries that make a write flush on its own. Each costs 32 bytes of memory until
/// the next flush, and 2^18 of them stand for up to 1 GiB of newly allocated data.
const LOG_FLUSH_ENTRIES: usize = 1 << 18;

/// Freed-but-not-yet-reusable slots that make a write flush on its own, so that a host which
/// writes and trims without ever flushing cannot grow the data file without bound (64 MiB).
const PENDING_FREE_FLUSH_SLOTS: usize = 1 << 14;

static ZEROS: [u8; BLOCK] = [0; BLOCK];

type SlotSet = HashSet<u64, BuildHasherDefault<BlockHasher>>;

/// Allocation state shared by all shards, behind one short-held mutex.
struct Meta {
    /// Map entries not yet in the journal, in the order their changes were made to the shards.
    /// They reach the journal at the next flush, after the data they point to is durable.
    log: Vec<Entry>,
    /// Slots released by Unmap entries still in `log`. Until those entries are durable a crash
    /// would bring the old mapping back, so the slots must keep their old bytes until then.
    pending_free: Vec<u64>,
    /// Slots that no durable entry points to: reusable at once.
    free: Vec<u64>,
    /// The first slot never used: the data file ends at or before it.
    next_slot: u64,
}

pub(crate) struct FileStore {
    path: PathBuf,
    map_path: PathBuf,
    size: u64,
    store_id: u64,
    data: File,
    journal: File,
    /// Device block -> slot, sharded by stripe. A shard's read lock is enough to read or to
    /// overwrite blocks already mapped; mapping and unmapping take its write lock. Holding the
    /// lock across the data I/O means a slot cannot change owner under a reader.
    shards: Box<[RwLock<BlockMap<u64>>]>,
    meta: Mutex<Meta>,
    /// Entries in the journal. Held for a whole flush, so batches reach the journal in the order
    /// they were taken from the log.
    journal_entries: Mutex<u64>,
    /// Mapped blocks, for `allocated_bytes` without a lock.
    blocks: AtomicU64,
    /// Set when a write to the map or a sync failed: the files may no longer match what was
    /// acknowledged, so the store refuses further changes rather than build on that.
    failed: AtomicBool,
    recovery: Recovery,
}

fn io_err(path: &Path, action: impl Into<String>) -> impl FnOnce(io::Error) -> StoreError {
    let path = path.to_path_buf();
    let action = action.into();
    move |source| StoreError::Io {
        path,
        action,
        source,
    }
}

fn corrupt(path: &Path, problem: impl Into<String>) -> StoreError {
    StoreError::Corrupt {
        path: path.to_path_buf(),
        problem: problem.into(),
    }
}

/// `PATH` with `suffix` appended to its last component (`disk.img` -> `disk.img.map`).
pub(crate) fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

fn exists(path: &Path) -> Result<bool, StoreError> {
    match std::fs::symlink_metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io_err(path, "look up")(e)),
    }
}

/// Makes a file creation or rename durable: on Linux the new name is only on disk once its
/// directory has been synced.
fn sync_parent(path: &Path) -> Result<(), StoreError> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    File::open(parent)
        .and_then(|d| d.sync_all())
        .map_err(io_err(parent, "sync the directory"))
}

/// Takes an exclusive advisory lock so that a second `Store` on the same file, in this process or
/// another, is refused instead of interleaving journals.
fn lock_exclusive(file: &File, path: &Path) -> Result<(), StoreError> {
    match rustix::fs::flock(file, FlockOperation::NonBlockingLockExclusive) {
        Err(Errno::WOULDBLOCK) => Err(StoreError::InUse {
            path: path.to_path_buf(),
        }),
        // A filesystem without flock support still works; the lock only guards against
        // mistakes.
        Ok(()) | Err(_) => Ok(()),
    }
}

impl FileStore {
    pub fn recovery(&self) -> &Recovery {
        &self.recovery
    }

    pub fn allocated_bytes(&self) -> u64 {
        self.blocks.load(Ordering::Relaxed) * BLOCK_BYTES
    }

    fn check_usable(&self) -> Result<(), StoreError> {
        if self.failed.load(Ordering::Acquire) {
            return Err(StoreError::Failed {
                path: self.path.clone(),
            });
        }
        Ok(())
    }

    /// Marks the store failed and passes the error on.
    fn fail(&self, err: StoreError) -> StoreError {
        self.failed.store(true, Ordering::Release);
        err
    }

    fn data_io_err(
        &self,
        action: &str,
        file_offset: u64,
        len: usize,
    ) -> impl FnOnce(io::Error) -> StoreError {
        io_err(
            &self.path,
            format!("{action} {len} bytes at data-file offset {file_offset}"),
        )
    }

    pub fn read(&self, offset: u64, buf: &mut [u8]) -> Result<(), StoreError> {
        let mut mapped: Vec<(u64, Piece)> = Vec::new();
        for run in stripe_runs(offset, buf.len() as u64) {
            let shard = read_lock(&self.shards[shard_of(run.stripe)]);
            mapped.clear();
            for p in pieces(offset, run.start, run.end, self.size) {
                match shard.get(&p.block) {
                    Some(&slot) => mapped.push((slot, p)),
                    // Unallocated blocks read as zeros without touching the file.
                    None => buf[p.buf_off..p.buf_off + p.len].fill(0),
                }
            }
            for r in coalesce(&mapped) {
                let dst = &mut buf[r.buf_off..r.buf_off + r.len];
                self.data
                    .read_exact_at(dst, r.file_off)
                    .map_err(self.data_io_err("read", r.file_off, r.len))?;
            }
        }
        Ok(())
    }

    pub fn write(&self, offset: u64, data: &[u8]) -> Result<(), StoreError> {
        self.check_usable()?;
        let mut need_flush = false;
        let mut mapped: Vec<(u64, Piece)> = Vec::new();
        let mut fresh: Vec<Piece> = Vec::new();
        for run in stripe_runs(offset, data.len() as u64) {
            let shard_lock = &self.shards[shard_of(run.stripe)];
            mapped.clear();
            fresh.clear();
            {
                // Overwriting blocks that are already mapped changes no mapping, so the read lock
                // suffices and other I/O to the stripe can proceed.
                let shard = read_lock(shard_lock);
                for p in pieces(offset, run.start, run.end, self.size) {
                    match shard.get(&p.block) {
                        Some(&slot) => mapped.push((slot, p)),
                        None => fresh.push(p),
                    }
                }
                if fresh.is_empty() {
                    self.write_pieces(&mapped, data)?;
                    continue;
                }
            }
            let mut shard = write_lock(shard_lock);
            // The mapping may have changed between the two locks, so it is looked up again.
            mapped.clear();
            fresh.clear();
            for p in pieces(offset, run.start, run.end, self.size) {
                match shard.get(&p.block) {
                    Some(&slot) => mapped.push((slot, p)),
                    None => fresh.push(p),
                }
            }
            self.write_pieces(&mapped, data)?;
            if fresh.is_empty() {
                continue;
            }
            let slots = self.take_slots(fresh.len());
            // A new slot may hold an old block's bytes, so every fresh block is written whole:
            // the bytes of the request, zeros around them.
            let mut buf = vec![0u8; fresh.len() * BLOCK];
            for (i, p) in fresh.iter().enumerate() {
                buf[i * BLOCK + p.in_off..i * BLOCK + p.in_off + p.len]
                    .copy_from_slice(&data[p.buf_off..p.buf_off + p.len]);
            }
            if let Err(e) = self.write_slots(&slots, &buf) {
                // Nothing refers to the slots yet, so they are free again at once.
                lock(&self.meta).free.extend(slots);
                return Err(e);
            }
            // The entries are logged only after the data is written, so that the flush which
            // takes them from the log syncs the data before journalling them.
            {
                let mut meta = lock(&self.meta);
                meta.log
                    .extend(fresh.iter().zip(&slots).map(|(p, &slot)| Entry::Map {
                        block: p.block,
                        slot,
                    }));
                need_flush |= meta.log.len() >= LOG_FLUSH_ENTRIES;
            }
            for (p, &slot) in fresh.iter().zip(&slots) {
                shard.insert(p.block, slot);
            }
            self.blocks.fetch_add(fresh.len() as u64, Ordering::Relaxed);
        }
        if need_flush {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes pieces of the request into the slots of blocks already mapped.
    fn write_pieces(&self, mapped: &[(u64, Piece)], data: &[u8]) -> Result<(), StoreError> {
        for r in coalesce(mapped) {
            self.data
                .write_all_at(&data[r.buf_off..r.buf_off + r.len], r.file_off)
                .map_err(self.data_io_err("write", r.file_off, r.len))?;
        }
        Ok(())
    }

    /// Writes whole blocks into `slots`, one `write_at` per run of consecutive slots.
    fn write_slots(&self, slots: &[u64], buf: &[u8]) -> Result<(), StoreError> {
        let mut i = 0;
        while i < slots.len() {
            let mut j = i + 1;
            while j < slots.len() && slots[j] == slots[j - 1] + 1 {
                j += 1;
            }
            let file_off = slot_offset(slots[i]);
            self.data
                .write_all_at(&buf[i * BLOCK..j * BLOCK], file_off)
                .map_err(self.data_io_err("write", file_off, (j - i) * BLOCK))?;
            i = j;
        }
        Ok(())
    }

    fn take_slots(&self, n: usize) -> Vec<u64> {
        let mut meta = lock(&self.meta);
        let mut slots = Vec::with_capacity(n);
        while slots.len() < n {
            let slot = match meta.free.pop() {
                Some(s) => s,
                None => {
                    let s = meta.next_slot;
                    meta.next_slot += 1;
                    s
                }
            };
            slots.push(slot);
        }
        slots
    }

    /// Trim and write-zeroes: whole blocks are unmapped (their slots freed once the unmapping is
    /// durable), partial ones zeroed in place.
    pub fn zero(&self, offset: u64, len: u64) -> Result<(), StoreError> {
        self.check_usable()?;
        let plan = zero_plan(offset, len, self.size);
        for p in &plan.partial {
            let shard = read_lock(&self.shards[shard_of(p.block / STRIPE_BLOCKS)]);
            if let Some(&slot) = shard.get(&p.block) {
                let file_off = slot_offset(slot) + p.in_off as u64;
                self.data
                    .write_all_at(&ZEROS[..p.len], file_off)
                    .map_err(self.data_io_err("zero", file_off, p.len))?;
            }
        }
        let (first, end) = (plan.whole_first, plan.whole_end);
        let mut need_flush = false;
        if first < end {
            let held = self.blocks.load(Ordering::Relaxed);
            // As in the memory backing: a discard far larger than the map sweeps the map instead
            // of looking up every block of the range.
            if end - first > 4 * held + 4 * SHARDS as u64 * STRIPE_BLOCKS {
                for shard_lock in self.shards.iter() {
                    let mut shard = write_lock(shard_lock);
                    let gone: Vec<(u64, u64)> = shard
                        .iter()
                        .filter(|(b, _)| (first..end).contains(*b))
                        .map(|(&b, &s)| (b, s))
                        .collect();
                    need_flush |= self.unmap(&mut shard, &gone);
                }
            } else {
                let mut block = first;
                let mut gone = Vec::new();
                while block < end {
                    let stripe = block / STRIPE_BLOCKS;
                    let stripe_end = ((stripe + 1) * STRIPE_BLOCKS).min(end);
                    let mut shard = write_lock(&self.shards[shard_of(stripe)]);
                    gone.clear();
                    gone.extend((block..stripe_end).filter_map(|b| shard.get(&b).map(|&s| (b, s))));
                    need_flush |= self.unmap(&mut shard, &gone);
                    block = stripe_end;
                }
            }
        }
        if need_flush {
            self.flush()?;
        }
        Ok(())
    }

    /// Unmaps `gone` (block, slot) pairs from a locked shard; returns whether a flush is due.
    fn unmap(&self, shard: &mut BlockMap<u64>, gone: &[(u64, u64)]) -> bool {
        if gone.is_empty() {
            return false;
        }
        let need_flush = {
            let mut meta = lock(&self.meta);
            meta.log.extend(
                gone.iter()
                    .map(|&(block, slot)| Entry::Unmap { block, slot }),
            );
            meta.pending_free.extend(gone.iter().map(|&(_, s)| s));
            meta.log.len() >= LOG_FLUSH_ENTRIES
                || meta.pending_free.len() >= PENDING_FREE_FLUSH_SLOTS
        };
        for (block, _) in gone {
            shard.remove(block);
        }
        self.blocks.fetch_sub(gone.len() as u64, Ordering::Relaxed);
        need_flush
    }

    /// Makes every write acknowledged before the call durable: syncs the data, then appends the
    /// logged map entries followed by a commit and syncs the journal.
    pub fn flush(&self) -> Result<(), StoreError> {
        self.check_usable()?;
        let mut journal_entries = lock(&self.journal_entries);
        // A flush that failed while this one waited for the lock has left the files in doubt.
        self.check_usable()?;
        let (batch, freed) = {
            let mut meta = lock(&self.meta);
            (
                std::mem::take(&mut meta.log),
                std::mem::take(&mut meta.pending_free),
            )
        };
        // Data first: a Map entry must never be durable before the bytes it points to.
        self.data
            .sync_data()
            .map_err(|e| self.fail(io_err(&self.path, "sync the data file")(e)))?;
        if !batch.is_empty() {
            let start = *journal_entries;
            let n = batch.len() as u64;
            let mut bytes = Vec::with_capacity((batch.len() + 1) * ENTRY_BYTES);
            for (i, e) in batch.iter().enumerate() {
                bytes.extend_from_slice(&e.encode(self.store_id, start + i as u64));
            }
            bytes.extend_from_slice(&Entry::Commit { count: n }.encode(self.store_id, start + n));
            let at = entry_offset(start);
            self.journal
                .write_all_at(&bytes, at)
                .and_then(|()| self.journal.sync_data())
                .map_err(|e| {
                    self.fail(io_err(
                        &self.map_path,
                        format!(
                            "append {} bytes to the map journal at offset {at}",
                            bytes.len()
                        ),
                    )(e))
                })?;
            *journal_entries = start + n + 1;
        }
        // The Unmap entries of these slots are durable now, so their old contents may go.
        lock(&self.meta).free.extend(freed);
        Ok(())
    }
}

impl Drop for FileStore {
    fn drop(&mut self) {
        // Blocks allocated since the last flush are only in the in-memory log; a clean shutdown
        // should not lose them, so dropping flushes. Errors have no one to go to here: callers
        // who care call `flush` first.
        if !self.failed.load(Ordering::Acquire) {
            let _ = self.flush();
        }
    }
}

/// A contiguous span of the request that is also contiguous in the data file.
struct Span {
    file_off: u64,
    buf_off: usize,
    len: usize,
}

/// Merges pieces of consecutive blocks that sit in consecutive slots into one file I/O.
fn coalesce(mapped: &[(u64, Piece)]) -> Vec<Span> {
    let mut spans: Vec<Span> = Vec::new();
    let mut prev: Option<(u64, Piece)> = None;
    for &(slot, p) in mapped {
        let joins = prev.is_some_and(|(ps, pp)| {
            slot == ps + 1
                && pp.in_off + pp.len == BLOCK
                && p.in_off == 0
                && p.buf_off == pp.buf_off + pp.len
        });
        if joins {
            spans.last_mut().expect("a previous span").len += p.len;
        } else {
            spans.push(Span {
                file_off: slot_offset(slot) + p.in_off as u64,
                buf_off: p.buf_off,
                len: p.len,
            });
        }
        prev = Some((slot, p));
    }
    spans
}
