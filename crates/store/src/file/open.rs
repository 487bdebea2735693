//! Opening a store: a new one created empty, or an existing one recovered (the data file's
//! header checked, the journal replayed batch by batch up to its last commit, compacted into
//! a snapshot when it has grown), as docs/store.md ("How writes, flushes and recovery keep the
//! files consistent") says.

use super::{
    corrupt, exists, io_err, lock_exclusive, sync_parent, with_suffix, FileStore, Meta, SlotSet,
};
use crate::format::{
    entry_offset, slot_offset, Entry, EntryError, Header, DATA_HEADER_BYTES, DATA_MAGIC,
    ENTRY_BYTES, HEADER_BYTES, MAP_MAGIC,
};
use crate::layout::{block_count, shard_of, BlockMap, SHARDS, STRIPE_BLOCKS};
use crate::{write_lock, Recovery, StoreError, BLOCK_BYTES};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Mutex, RwLock};

/// The journal is rewritten as a snapshot on open when it holds more entries than this plus
/// twice the live map.
const COMPACT_SLACK_ENTRIES: u64 = 1024;

/// Entries read from the journal per `read_at` during recovery.
const REPLAY_CHUNK_ENTRIES: usize = 1 << 15;

/// Map entries per batch of a compacted journal.
const SNAPSHOT_BATCH_ENTRIES: usize = (1 << 15) - 1;

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
