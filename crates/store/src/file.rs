//! The file backing: allocation on write into a data file that holds only the blocks written,
//! located through an allocation map kept as a checksummed journal. docs/store.md gives the
//! format and the durability argument; the comments here say which step of it each piece of code
//! carries out.

use crate::format::{
    entry_offset, slot_offset, Entry, EntryError, Header, DATA_HEADER_BYTES, DATA_MAGIC,
    ENTRY_BYTES, HEADER_BYTES, MAP_MAGIC,
};
use crate::layout::{
    block_count, pieces, shard_of, stripe_runs, zero_plan, BlockHasher, BlockMap, Piece, BLOCK,
    SHARDS, STRIPE_BLOCKS,
};
use crate::{lock, read_lock, write_lock, Recovery, StoreError, BLOCK_BYTES};
use rustix::fs::FlockOperation;
use rustix::io::Errno;
use std::collections::HashSet;
use std::fs::{File, OpenOptions};
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

/// The journal is rewritten as a snapshot on open when it holds more entries than this plus
/// twice the live map.
const COMPACT_SLACK_ENTRIES: u64 = 1024;

/// Entries read from the journal per `read_at` during recovery.
const REPLAY_CHUNK_ENTRIES: usize = 1 << 15;

/// Map entries per batch of a compacted journal.
const SNAPSHOT_BATCH_ENTRIES: usize = (1 << 15) - 1;

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

fn new_store_id(path: &Path) -> u64 {
    use std::hash::{BuildHasher, Hash, Hasher};
    // RandomState is seeded from the operating system's randomness, which is all an id needs.
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    path.hash(&mut h);
    std::process::id().hash(&mut h);
    h.finish()
}

fn read_header(
    file: &File,
    path: &Path,
    len: u64,
    magic: [u8; 8],
    what: &str,
) -> Result<Header, StoreError> {
    if len < HEADER_BYTES as u64 {
        let mut start = vec![0u8; len as usize];
        file.read_exact_at(&mut start, 0)
            .map_err(io_err(path, format!("read the {what} header")))?;
        let n = start.len().min(magic.len());
        let problem = if start[..n] == magic[..n] {
            format!("the {what} is truncated inside its header ({len} bytes)")
        } else {
            format!("not a storsim store {what} ({len} bytes, too short for a header)")
        };
        return Err(corrupt(path, problem));
    }
    let mut b = [0u8; HEADER_BYTES];
    file.read_exact_at(&mut b, 0)
        .map_err(io_err(path, format!("read the {what} header")))?;
    Header::decode(&b, magic).map_err(|e| corrupt(path, format!("{what}: {e}")))
}

/// Refuses a map that places a block in a slot beyond the `slots_in_file` the data file holds.
fn check_slots_in_file(
    path: &Path,
    live: &BlockMap<u64>,
    slots_in_file: u64,
) -> Result<(), StoreError> {
    for (&block, &slot) in live {
        if slot >= slots_in_file {
            return Err(corrupt(
                path,
                format!(
                    "the map places block {block} in slot {slot}, but the data file holds only {slots_in_file} slots (was it truncated?)"
                ),
            ));
        }
    }
    Ok(())
}

/// The map as recovered from the journal.
struct Replayed {
    live: BlockMap<u64>,
    used: SlotSet,
    /// Entries up to and including the last commit.
    committed: u64,
}

/// The journal's entries taken in order by `FileStore::replay`: the batches committed so far
/// applied to the map, the batch still open, and what follows a damaged entry.
struct JournalReplay<'a> {
    map_path: &'a Path,
    /// The device's blocks, beyond which no entry may map.
    nblocks: u64,
    live: BlockMap<u64>,
    used: SlotSet,
    /// The entries since the last commit.
    batch: Vec<Entry>,
    /// The index of the open batch's first entry: every entry before it is committed.
    batch_start: u64,
    /// The first entry whose checksum failed.
    first_bad: Option<u64>,
    /// Entries after the first bad one, kept only until the check in `finish`.
    after_bad: Vec<(u64, Entry)>,
}

impl<'a> JournalReplay<'a> {
    fn new(map_path: &'a Path, nblocks: u64) -> Self {
        JournalReplay {
            map_path,
            nblocks,
            live: BlockMap::default(),
            used: SlotSet::default(),
            batch: Vec::new(),
            batch_start: 0,
            first_bad: None,
            after_bad: Vec::new(),
        }
    }

    /// Takes entry `i` as decoded: a map change joins the open batch, a commit applies it;
    /// from the first damaged entry on, entries are only kept for `finish` to judge.
    fn take(&mut self, i: u64, decoded: Result<Entry, EntryError>) -> Result<(), StoreError> {
        let entry = match decoded {
            Ok(e) => e,
            Err(EntryError::Checksum) => {
                self.first_bad.get_or_insert(i);
                return Ok(());
            }
            Err(EntryError::Kind(k)) => {
                return Err(corrupt(
                    self.map_path,
                    format!("journal entry {i} has the unknown kind {k}"),
                ))
            }
        };
        if self.first_bad.is_some() {
            self.after_bad.push((i, entry));
            return Ok(());
        }
        match entry {
            Entry::Map { .. } | Entry::Unmap { .. } => self.batch.push(entry),
            Entry::Commit { count } => self.commit(i, count)?,
        }
        Ok(())
    }

    /// Applies the open batch, which the commit at entry `i` says holds `count` entries.
    fn commit(&mut self, i: u64, count: u64) -> Result<(), StoreError> {
        if count != self.batch.len() as u64 {
            return Err(corrupt(
                self.map_path,
                format!(
                    "journal entry {i} commits {count} entries, but {} precede it since the previous commit",
                    self.batch.len()
                ),
            ));
        }
        for (k, e) in self.batch.drain(..).enumerate() {
            FileStore::apply(
                &mut self.live,
                &mut self.used,
                e,
                self.batch_start + k as u64,
                self.nblocks,
                self.map_path,
            )?;
        }
        self.batch_start = i + 1;
        Ok(())
    }

    /// The map as of the last commit, once whatever follows a damaged entry has been shown
    /// to be a torn append rather than damage to acknowledged batches.
    fn finish(self) -> Result<Replayed, StoreError> {
        if let Some(bad) = self.first_bad {
            // A torn append can leave valid entries after a bad one, but only inside the batch
            // being appended, which began at `batch_start` and ends with its commit. A valid entry
            // from any later batch proves the bad one had been made durable by an earlier flush:
            // that is damage, not a crash, and recovering past it would lose acknowledged data.
            let mut batch_end: Option<u64> = None;
            for &(i, e) in &self.after_bad {
                if let Some(end) = batch_end {
                    return Err(corrupt(
                        self.map_path,
                        format!(
                            "journal entry {bad} is damaged, but entry {i} was written by a later flush (after the commit at entry {end}); the map cannot be trusted"
                        ),
                    ));
                }
                if let Entry::Commit { count } = e {
                    if i.checked_sub(count) != Some(self.batch_start) {
                        return Err(corrupt(
                            self.map_path,
                            format!(
                                "journal entry {bad} is damaged, but the commit at entry {i} shows it belonged to a completed flush; the map cannot be trusted"
                            ),
                        ));
                    }
                    batch_end = Some(i);
                }
            }
        }
        Ok(Replayed {
            live: self.live,
            used: self.used,
            committed: self.batch_start,
        })
    }
}

impl FileStore {
    pub fn open(path: &Path, size: u64) -> Result<FileStore, StoreError> {
        let map_path = with_suffix(path, ".map");
        let data_existed = exists(path)?;
        let map_exists = exists(&map_path)?;
        if !data_existed && map_exists {
            return Err(corrupt(
                &map_path,
                format!(
                    "this map file exists but its data file {} does not; remove the map to create a new store",
                    path.display()
                ),
            ));
        }
        let (data, data_len) = Self::open_data(path)?;
        if data_len == 0 {
            if map_exists {
                return Err(corrupt(
                    path,
                    format!(
                        "the data file is empty but its map {} exists; remove the map to create a new store",
                        map_path.display()
                    ),
                ));
            }
            return Self::create(path, map_path, data, size);
        }
        let store_id = Self::check_data_header(&data, path, data_len, size)?;
        let slots_in_file = (data_len - DATA_HEADER_BYTES) / BLOCK_BYTES;

        let map_len = if map_exists {
            std::fs::metadata(&map_path)
                .map_err(io_err(&map_path, "read the map file's metadata"))?
                .len()
        } else {
            0
        };
        if !map_exists || (slots_in_file == 0 && map_len < HEADER_BYTES as u64) {
            if slots_in_file == 0 {
                // A crash between writing the data header and completing the map's header: no
                // block can have been written yet, so the map is created afresh, empty.
                return Self::start_empty(path, map_path, size, store_id, data);
            }
            return Err(corrupt(
                &map_path,
                format!(
                    "the map file is missing, but the data file {} holds {slots_in_file} blocks that only the map can locate",
                    path.display()
                ),
            ));
        }

        let (journal, journal_len) = Self::open_journal(path, &map_path, store_id, size)?;
        let replayed = Self::replay(&journal, &map_path, store_id, size, journal_len)?;
        check_slots_in_file(path, &replayed.live, slots_in_file)?;
        let (journal, recovery) =
            Self::settle_journal(journal, &map_path, size, store_id, journal_len, &replayed)?;

        // Slots past the last live one hold nothing anyone can reach: give the space back.
        let used_slots = replayed.used.iter().max().map_or(0, |&s| s + 1);
        if used_slots < slots_in_file {
            data.set_len(slot_offset(used_slots))
                .map_err(io_err(path, "shrink the data file"))?;
        }
        Ok(Self::assemble(
            path.to_path_buf(),
            map_path,
            size,
            store_id,
            data,
            journal,
            replayed,
            recovery.journal_entries,
            recovery,
        ))
    }

    /// Opens (or creates, empty) the data file, which must be a regular file, and locks it.
    /// Returns it with its length.
    fn open_data(path: &Path) -> Result<(File, u64), StoreError> {
        let data = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io_err(path, "open the data file"))?;
        let data_meta = data
            .metadata()
            .map_err(io_err(path, "read the data file's metadata"))?;
        if !data_meta.is_file() {
            // A block device reports length 0 and would otherwise be taken for a new store and
            // have a header written over whatever it holds.
            return Err(corrupt(
                path,
                "not a regular file; the file backing keeps its data in a regular file",
            ));
        }
        lock_exclusive(&data, path)?;
        Ok((data, data_meta.len()))
    }

    /// Checks the header of an existing data file of `data_len` bytes against the size asked
    /// for; returns the store's id.
    fn check_data_header(
        data: &File,
        path: &Path,
        data_len: u64,
        size: u64,
    ) -> Result<u64, StoreError> {
        // Whatever a crashed process left in the page cache is made durable before it is read,
        // so that recovery never builds on map entries a later power loss could still undo.
        data.sync_data()
            .map_err(io_err(path, "sync the data file"))?;
        let header = read_header(data, path, data_len, DATA_MAGIC, "data file")?;
        if header.size_bytes != size {
            return Err(StoreError::SizeMismatch {
                path: path.to_path_buf(),
                stored: header.size_bytes,
                requested: size,
            });
        }
        if data_len < DATA_HEADER_BYTES {
            return Err(corrupt(
                path,
                format!("the data file is truncated inside its {DATA_HEADER_BYTES}-byte header ({data_len} bytes)"),
            ));
        }
        Ok(header.store_id)
    }

    /// Opens the map file of the data file `path`, makes what it holds durable, and checks
    /// that its header belongs to the same store and size. Returns it with its length.
    fn open_journal(
        path: &Path,
        map_path: &Path,
        store_id: u64,
        size: u64,
    ) -> Result<(File, u64), StoreError> {
        let journal = OpenOptions::new()
            .read(true)
            .write(true)
            .open(map_path)
            .map_err(io_err(map_path, "open the map file"))?;
        journal
            .sync_data()
            .map_err(io_err(map_path, "sync the map file"))?;
        let journal_len = journal
            .metadata()
            .map_err(io_err(map_path, "read the map file's metadata"))?
            .len();
        let map_header = read_header(&journal, map_path, journal_len, MAP_MAGIC, "map file")?;
        if map_header.store_id != store_id {
            return Err(corrupt(
                map_path,
                format!(
                    "this map belongs to a different store than the data file {} (store id {:#018x}, data file has {:#018x})",
                    path.display(),
                    map_header.store_id,
                    store_id
                ),
            ));
        }
        if map_header.size_bytes != size {
            return Err(corrupt(
                map_path,
                format!(
                    "the map is for a device of {} bytes but its data file {} says {size}",
                    map_header.size_bytes,
                    path.display()
                ),
            ));
        }
        Ok((journal, journal_len))
    }

    /// Leaves the replayed journal ready for appending: compacted into a snapshot when it has
    /// grown much longer than the live map, otherwise with any torn tail cut off. Returns the
    /// journal to append to and what recovery did.
    fn settle_journal(
        journal: File,
        map_path: &Path,
        size: u64,
        store_id: u64,
        journal_len: u64,
        replayed: &Replayed,
    ) -> Result<(File, Recovery), StoreError> {
        let mut recovery = Recovery {
            created: false,
            journal_entries: replayed.committed,
            discarded_bytes: journal_len - entry_offset(replayed.committed),
            compacted: false,
        };
        let live_count = replayed.live.len() as u64;
        let journal = if replayed.committed > 2 * live_count + COMPACT_SLACK_ENTRIES {
            recovery.compacted = true;
            let (journal, entries) = Self::compact(map_path, size, store_id, &replayed.live)?;
            recovery.journal_entries = entries;
            journal
        } else {
            if recovery.discarded_bytes > 0 {
                // The torn batch is cut off so that the next flush appends right after the last
                // commit; leaving it would put garbage between two valid batches.
                journal
                    .set_len(entry_offset(replayed.committed))
                    .and_then(|()| journal.sync_all())
                    .map_err(io_err(map_path, "truncate the map file's torn tail"))?;
            }
            journal
        };
        Ok((journal, recovery))
    }

    fn create(
        path: &Path,
        map_path: PathBuf,
        data: File,
        size: u64,
    ) -> Result<FileStore, StoreError> {
        let store_id = new_store_id(path);
        let mut header = vec![0u8; DATA_HEADER_BYTES as usize];
        header[..HEADER_BYTES].copy_from_slice(&Header::new(DATA_MAGIC, size, store_id).encode());
        data.write_all_at(&header, 0)
            .and_then(|()| data.sync_all())
            .map_err(io_err(path, "write the data file header"))?;
        // The data header is durable before the map exists; see the crash case in `open`.
        Self::start_empty(path, map_path, size, store_id, data)
    }

    /// A store with a durable data header and no blocks: creates its map and makes the
    /// directory entries durable.
    fn start_empty(
        path: &Path,
        map_path: PathBuf,
        size: u64,
        store_id: u64,
        data: File,
    ) -> Result<FileStore, StoreError> {
        let journal = Self::create_journal(&map_path, size, store_id)?;
        // The map sits beside the data file, so this makes both names durable.
        sync_parent(&map_path)?;
        Ok(Self::assemble(
            path.to_path_buf(),
            map_path,
            size,
            store_id,
            data,
            journal,
            Replayed {
                live: BlockMap::default(),
                used: SlotSet::default(),
                committed: 0,
            },
            0,
            Recovery {
                created: true,
                ..Recovery::default()
            },
        ))
    }

    fn create_journal(map_path: &Path, size: u64, store_id: u64) -> Result<File, StoreError> {
        let journal = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(map_path)
            .map_err(io_err(map_path, "create the map file"))?;
        journal
            .write_all_at(&Header::new(MAP_MAGIC, size, store_id).encode(), 0)
            .and_then(|()| journal.sync_all())
            .map_err(io_err(map_path, "write the map file header"))?;
        Ok(journal)
    }

    /// Rewrites the journal as a snapshot of the live map, then atomically replaces the old one
    /// with it. Until the rename is durable the old journal stays in place, and it describes the
    /// same map. Returns the new journal and its number of entries.
    fn compact(
        map_path: &Path,
        size: u64,
        store_id: u64,
        live: &BlockMap<u64>,
    ) -> Result<(File, u64), StoreError> {
        let tmp_path = with_suffix(map_path, ".tmp");
        let tmp = Self::create_journal(&tmp_path, size, store_id)?;
        let mut entries: Vec<(u64, u64)> = live.iter().map(|(&b, &s)| (b, s)).collect();
        entries.sort_unstable();
        let mut index = 0u64;
        let mut buf: Vec<u8> = Vec::with_capacity(REPLAY_CHUNK_ENTRIES * ENTRY_BYTES);
        // Recovery holds a batch in memory until its commit, so the snapshot is cut into batches
        // of modest size. Nothing is lost by that: the file is renamed into place only whole.
        for batch in entries.chunks(SNAPSHOT_BATCH_ENTRIES) {
            let first = index;
            for &(block, slot) in batch {
                buf.extend_from_slice(&Entry::Map { block, slot }.encode(store_id, index));
                index += 1;
            }
            buf.extend_from_slice(
                &Entry::Commit {
                    count: batch.len() as u64,
                }
                .encode(store_id, index),
            );
            index += 1;
            tmp.write_all_at(&buf, entry_offset(first))
                .map_err(io_err(&tmp_path, "write the compacted map"))?;
            buf.clear();
        }
        tmp.sync_all()
            .map_err(io_err(&tmp_path, "sync the compacted map"))?;
        std::fs::rename(&tmp_path, map_path)
            .map_err(io_err(map_path, "replace the map with its compacted copy"))?;
        sync_parent(map_path)?;
        Ok((tmp, index))
    }

    /// Reads the journal and applies every complete batch. A batch that was being appended when
    /// the system went down (bad checksum, or no commit) is discarded: its flush never returned,
    /// so nothing in it was acknowledged. Damage anywhere before the last batch is an error.
    fn replay(
        journal: &File,
        map_path: &Path,
        store_id: u64,
        size: u64,
        journal_len: u64,
    ) -> Result<Replayed, StoreError> {
        let total = (journal_len - HEADER_BYTES as u64) / ENTRY_BYTES as u64;
        let mut replay = JournalReplay::new(map_path, block_count(size));
        let mut buf = vec![0u8; REPLAY_CHUNK_ENTRIES * ENTRY_BYTES];
        let mut index = 0u64;
        while index < total {
            let n = (total - index).min(REPLAY_CHUNK_ENTRIES as u64) as usize;
            let chunk = &mut buf[..n * ENTRY_BYTES];
            journal
                .read_exact_at(chunk, entry_offset(index))
                .map_err(io_err(map_path, "read the map journal"))?;
            for raw in chunk.chunks_exact(ENTRY_BYTES) {
                let raw: &[u8; ENTRY_BYTES] = raw.try_into().expect("chunks_exact");
                replay.take(index, Entry::decode(raw, store_id, index))?;
                index += 1;
            }
        }
        replay.finish()
    }

    /// Applies one committed entry, refusing anything the writer could never have produced.
    fn apply(
        live: &mut BlockMap<u64>,
        used: &mut SlotSet,
        entry: Entry,
        index: u64,
        nblocks: u64,
        map_path: &Path,
    ) -> Result<(), StoreError> {
        match entry {
            Entry::Map { block, slot } => {
                if block >= nblocks {
                    return Err(corrupt(
                        map_path,
                        format!("journal entry {index} maps block {block}, beyond the device's {nblocks} blocks"),
                    ));
                }
                if live.contains_key(&block) {
                    return Err(corrupt(
                        map_path,
                        format!(
                            "journal entry {index} maps block {block}, which is already mapped"
                        ),
                    ));
                }
                if !used.insert(slot) {
                    return Err(corrupt(
                        map_path,
                        format!("journal entry {index} maps block {block} to slot {slot}, which another block already uses"),
                    ));
                }
                live.insert(block, slot);
            }
            Entry::Unmap { block, slot } => {
                if live.get(&block) != Some(&slot) {
                    return Err(corrupt(
                        map_path,
                        format!("journal entry {index} unmaps block {block} from slot {slot}, but the block is not mapped there"),
                    ));
                }
                live.remove(&block);
                used.remove(&slot);
            }
            Entry::Commit { .. } => unreachable!("commits are handled by replay"),
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn assemble(
        path: PathBuf,
        map_path: PathBuf,
        size: u64,
        store_id: u64,
        data: File,
        journal: File,
        replayed: Replayed,
        journal_entries: u64,
        recovery: Recovery,
    ) -> FileStore {
        let next_slot = replayed.used.iter().max().map_or(0, |&s| s + 1);
        // Popping from the end hands out the lowest free slot first, keeping the file dense.
        let free: Vec<u64> = (0..next_slot)
            .rev()
            .filter(|s| !replayed.used.contains(s))
            .collect();
        let shards: Box<[RwLock<BlockMap<u64>>]> = (0..SHARDS).map(|_| RwLock::default()).collect();
        let blocks = replayed.live.len() as u64;
        for (block, slot) in replayed.live {
            write_lock(&shards[shard_of(block / STRIPE_BLOCKS)]).insert(block, slot);
        }
        FileStore {
            path,
            map_path,
            size,
            store_id,
            data,
            journal,
            shards,
            meta: Mutex::new(Meta {
                log: Vec::new(),
                pending_free: Vec::new(),
                free,
                next_slot,
            }),
            journal_entries: Mutex::new(journal_entries),
            blocks: AtomicU64::new(blocks),
            failed: AtomicBool::new(false),
            recovery,
        }
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_of_several_batches_replays_to_the_same_map() {
        let tmp = tempfile::Builder::new()
            .prefix(&format!(
                "storsim-store-unit-compact-{}-",
                std::process::id()
            ))
            .tempdir()
            .unwrap();
        let dir = tmp.path();
        let map_path = dir.join("disk.img.map");
        let size = 1 << 40;
        let mut live = BlockMap::<u64>::default();
        // More live blocks than two snapshot batches hold, scattered over the device.
        let n = 2 * SNAPSHOT_BATCH_ENTRIES as u64 + 5;
        for i in 0..n {
            live.insert(i * 997 % (size / BLOCK_BYTES), n - 1 - i);
        }
        let (journal, entries) = FileStore::compact(&map_path, size, 7, &live).unwrap();
        assert_eq!(entries, n + 3, "three batches, three commits");
        let len = journal.metadata().unwrap().len();
        assert_eq!(len, entry_offset(entries));
        let replayed = FileStore::replay(&journal, &map_path, 7, size, len).unwrap();
        assert_eq!(replayed.committed, entries);
        assert_eq!(replayed.live, live);
        assert!(!with_suffix(&map_path, ".tmp").exists());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
