//! Power loss: which acknowledged writes a device has not yet made durable, and what a crash
//! leaves of them.
//!
//! A disk with a volatile write cache acknowledges a write before the data is on the medium; a
//! FLUSH makes every earlier write durable and a FUA write makes itself durable. A power cut
//! loses what was still in the cache. [`VolatileWrites`] sits beside a [`Store`] and does every
//! change to it, remembering, for the blocks that volatile writes touched, what the block held
//! when it was last durable (its *before image*) and the writes since, in order. A crash
//! ([`VolatileWrites::crash`]) rebuilds those blocks from their before images and the writes
//! that survive: none in [`CrashMode::DropAll`], a seeded subset of their atomic units in
//! [`CrashMode::Torn`].
//!
//! The cache has a size ([`VolatileWrites::new`]): when the writes it holds exceed it, the
//! oldest become durable, as a device's cache destages them. That also bounds the memory this
//! takes: the writes' data plus one before image per block they touch.

use crate::{Store, StoreError, BLOCK_BYTES};
use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::str::FromStr;
use storsim_core::Prng;

const BLOCK: usize = BLOCK_BYTES as usize;

/// The smallest unit a write takes of the cache.
const SECTOR_BYTES: u64 = 512;

/// The write cache size used when none is given: a few tens of megabytes, the order of a
/// consumer SSD's DRAM cache, and enough to hold the writes between an ext4 journal's commits.
pub const DEFAULT_WRITE_CACHE_BYTES: u64 = 32 << 20;

/// The unit a torn write keeps or drops whole: what the device writes atomically.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Atomicity {
    /// 512-byte sectors.
    Sector,
    /// 4 KiB pages.
    Page,
}

impl Atomicity {
    /// The unit's size in bytes.
    pub fn unit_bytes(self) -> u64 {
        match self {
            Atomicity::Sector => 512,
            Atomicity::Page => 4096,
        }
    }
}

impl FromStr for Atomicity {
    type Err = String;

    /// Accepts `sector` and `page`.
    fn from_str(s: &str) -> Result<Atomicity, String> {
        match s {
            "sector" => Ok(Atomicity::Sector),
            "page" => Ok(Atomicity::Page),
            _ => Err(format!(
                "unknown atomicity {s:?}: expected \"sector\" or \"page\""
            )),
        }
    }
}

impl fmt::Display for Atomicity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Atomicity::Sector => "sector",
            Atomicity::Page => "page",
        })
    }
}

/// What a crash does to the writes that were not durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrashMode {
    /// Every one is lost.
    DropAll,
    /// Each atomic unit of each one survives or not, by a coin toss from a generator seeded
    /// with `seed`: the same seed and the same writes drop the same units.
    Torn { atomicity: Atomicity, seed: u64 },
}

impl fmt::Display for CrashMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CrashMode::DropAll => f.write_str("drop-all"),
            CrashMode::Torn { atomicity, seed } => write!(f, "torn-{atomicity} seed {seed}"),
        }
    }
}

/// One volatile write and what a crash dropped of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LostWrite {
    /// The write's number: the host's writes (writes, write-zeroes, trims) counted from 1.
    pub index: u64,
    pub offset_bytes: u64,
    pub len_bytes: u64,
    /// The byte ranges `(offset, len)` lost, in order, adjacent ones merged: the whole write
    /// in [`CrashMode::DropAll`], possibly none in [`CrashMode::Torn`].
    pub dropped: Vec<(u64, u64)>,
}

/// What a crash did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrashReport {
    /// The host writes seen before the crash.
    pub writes: u64,
    pub mode: CrashMode,
    /// Every write that was not durable at the crash, in the order written.
    pub volatile: Vec<LostWrite>,
}

impl CrashReport {
    /// Bytes lost over all writes.
    pub fn dropped_bytes(&self) -> u64 {
        self.volatile
            .iter()
            .flat_map(|w| w.dropped.iter().map(|&(_, len)| len))
            .sum()
    }

    /// Bytes the writes not durable held: what the crash could have lost.
    pub fn volatile_bytes(&self) -> u64 {
        self.volatile.iter().map(|w| w.len_bytes).sum()
    }

    /// The writes not durable of which the crash lost something.
    pub fn dropped_writes(&self) -> u64 {
        self.volatile
            .iter()
            .filter(|w| !w.dropped.is_empty())
            .count() as u64
    }
}

/// One write still in the cache, or a durable write after one (kept so that a crash replays
/// the durable ones over the same blocks in their order).
struct Entry {
    index: u64,
    offset: u64,
    len: u64,
    /// The bytes written; `None` for zeros (write-zeroes and trim).
    data: Option<Vec<u8>>,
    durable: bool,
    /// What it takes of the cache: its length in whole sectors.
    cost: u64,
}

impl Entry {
    /// Whether it writes any byte of block `block`.
    fn touches(&self, block: u64) -> bool {
        self.offset < (block + 1) * BLOCK_BYTES && block * BLOCK_BYTES < self.offset + self.len
    }

    fn blocks(&self) -> std::ops::Range<u64> {
        self.offset / BLOCK_BYTES..(self.offset + self.len).div_ceil(BLOCK_BYTES)
    }

    /// Copies its bytes in `[from, from + len)` of the device into `block`'s image.
    fn apply(&self, block: u64, image: &mut [u8; BLOCK], from: u64, len: u64) {
        let start = from.max(self.offset).max(block * BLOCK_BYTES);
        let end = (from + len)
            .min(self.offset + self.len)
            .min((block + 1) * BLOCK_BYTES);
        if start >= end {
            return;
        }
        let dst = &mut image
            [(start - block * BLOCK_BYTES) as usize..(end - block * BLOCK_BYTES) as usize];
        match &self.data {
            Some(d) => dst
                .copy_from_slice(&d[(start - self.offset) as usize..(end - self.offset) as usize]),
            None => dst.fill(0),
        }
    }
}

/// A block some volatile write touched.
struct Before {
    /// Its contents when last durable; `None` for zeros.
    image: Option<Box<[u8; BLOCK]>>,
    /// Volatile writes in the cache that touch it; at zero the store's contents are durable.
    volatile: u32,
}

/// The writes a store holds that are not yet durable, and the means to lose them.
///
/// Every change to the store goes through this while it is in use; reads go to the store.
pub struct VolatileWrites {
    capacity_bytes: u64,
    entries: VecDeque<Entry>,
    /// The entries' costs, durable ones included (they hold memory too).
    cached_bytes: u64,
    before: BTreeMap<u64, Before>,
    writes: u64,
}

impl fmt::Debug for VolatileWrites {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VolatileWrites")
            .field("capacity_bytes", &self.capacity_bytes)
            .field("entries", &self.entries.len())
            .field("cached_bytes", &self.cached_bytes)
            .field("writes", &self.writes)
            .finish()
    }
}

impl VolatileWrites {
    /// A write cache of `capacity_bytes` (at least one byte: a cache of none would make every
    /// write durable, which is the store without this).
    pub fn new(capacity_bytes: u64) -> VolatileWrites {
        VolatileWrites {
            capacity_bytes: capacity_bytes.max(1),
            entries: VecDeque::new(),
            cached_bytes: 0,
            before: BTreeMap::new(),
            writes: 0,
        }
    }

    pub fn capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }

    /// Host writes so far (writes, write-zeroes and trims).
    pub fn writes(&self) -> u64 {
        self.writes
    }

    /// Writes not yet durable.
    pub fn volatile_writes(&self) -> usize {
        self.entries.iter().filter(|e| !e.durable).count()
    }

    /// Writes `data` at `offset`; `durable` for a FUA write. Returns the write's number.
    pub fn write(
        &mut self,
        store: &Store,
        offset: u64,
        data: &[u8],
        durable: bool,
    ) -> Result<u64, StoreError> {
        store.check(offset, data.len() as u64)?;
        let index = self.track(store, offset, data.len() as u64, Some(data), durable)?;
        store.write(offset, data)?;
        Ok(index)
    }

    /// Zeroes `[offset, offset + len)` (write-zeroes or trim; the store does not tell them
    /// apart). Returns the write's number.
    pub fn zero(
        &mut self,
        store: &Store,
        offset: u64,
        len: u64,
        durable: bool,
    ) -> Result<u64, StoreError> {
        store.check(offset, len)?;
        let index = self.track(store, offset, len, None, durable)?;
        store.write_zeroes(offset, len)?;
        Ok(index)
    }

    /// A FLUSH: every write so far is durable.
    pub fn flush(&mut self) {
        self.entries.clear();
        self.before.clear();
        self.cached_bytes = 0;
    }

    /// Records a write about to be done to the store.
    fn track(
        &mut self,
        store: &Store,
        offset: u64,
        len: u64,
        data: Option<&[u8]>,
        durable: bool,
    ) -> Result<u64, StoreError> {
        self.writes += 1;
        let index = self.writes;
        // A write the cache cannot hold pushes everything before it out and goes to the
        // medium itself, as the cache's destaging would.
        if len > self.capacity_bytes {
            self.flush();
            return Ok(index);
        }
        // A durable write matters to a crash only over blocks it must be replayed on: those
        // with a before image. A block imaged later is imaged with it already in.
        let blocks = offset / BLOCK_BYTES..(offset + len).div_ceil(BLOCK_BYTES);
        if durable && self.before.range(blocks).next().is_none() {
            return Ok(index);
        }
        let entry = Entry {
            index,
            offset,
            len,
            data: data.map(<[u8]>::to_vec),
            durable,
            cost: len.div_ceil(SECTOR_BYTES) * SECTOR_BYTES,
        };
        if !durable {
            for block in entry.blocks() {
                if let Some(b) = self.before.get_mut(&block) {
                    b.volatile += 1;
                    continue;
                }
                // Untouched by any cached write, the block's stored contents are durable.
                let mut image = Box::new([0u8; BLOCK]);
                let start = block * BLOCK_BYTES;
                let end = (start + BLOCK_BYTES).min(store.size_bytes());
                store.read(start, &mut image[..(end - start) as usize])?;
                let image = image.iter().any(|&b| b != 0).then_some(image);
                self.before.insert(block, Before { image, volatile: 1 });
            }
        }
        self.cached_bytes += entry.cost;
        self.entries.push_back(entry);
        // The cache holds whole sectors of data and whole pages of the blocks they touch: a
        // stream of small writes to scattered places fills it by its pages, as a device's
        // cache of 4 KiB slots fills, and the memory held stays within twice its size.
        while (self.cached_bytes > self.capacity_bytes
            || self.before.len() as u64 * BLOCK_BYTES > self.capacity_bytes)
            && !self.entries.is_empty()
        {
            self.destage_oldest();
        }
        Ok(index)
    }

    /// The oldest cached write reaches the medium: it joins its blocks' before images. Durable
    /// writes that then lead the cache have nothing left to be replayed over and follow it.
    fn destage_oldest(&mut self) {
        let Some(entry) = self.entries.pop_front() else {
            return;
        };
        self.cached_bytes -= entry.cost;
        for block in entry.blocks() {
            let Some(before) = self.before.get_mut(&block) else {
                continue;
            };
            let image = before.image.get_or_insert_with(|| Box::new([0u8; BLOCK]));
            entry.apply(block, image, entry.offset, entry.len);
            if !entry.durable {
                before.volatile -= 1;
                if before.volatile == 0 {
                    self.before.remove(&block);
                }
            }
        }
        while self.entries.front().is_some_and(|e| e.durable) {
            self.destage_oldest();
        }
    }

    /// Power is cut: the store is left as the medium would be, every write not durable lost
    /// or torn as `mode` says. Afterwards every write is durable (the cache is empty).
    pub fn crash(&mut self, store: &Store, mode: CrashMode) -> Result<CrashReport, StoreError> {
        // Decide first, in write order, so that the outcome depends on the seed and the writes
        // alone, never on the order blocks are rebuilt in.
        let mut prng = match mode {
            CrashMode::Torn { seed, .. } => Some(Prng::new(seed)),
            CrashMode::DropAll => None,
        };
        let unit = match mode {
            CrashMode::Torn { atomicity, .. } => atomicity.unit_bytes(),
            CrashMode::DropAll => 1,
        };
        // Per entry, the byte ranges that survive (durable ones whole).
        let mut kept: Vec<Vec<(u64, u64)>> = Vec::with_capacity(self.entries.len());
        let mut volatile = Vec::new();
        for entry in &self.entries {
            if entry.durable {
                kept.push(vec![(entry.offset, entry.len)]);
                continue;
            }
            let mut keep = Vec::new();
            let mut drop = Vec::new();
            let end = entry.offset + entry.len;
            let mut at = entry.offset;
            while at < end {
                let piece_end = ((at / unit + 1) * unit).min(end);
                let survives = match prng.as_mut() {
                    Some(p) => p.next_u64() >> 63 == 1,
                    None => false,
                };
                let list = if survives { &mut keep } else { &mut drop };
                push_merged(list, at, piece_end - at);
                at = piece_end;
            }
            kept.push(keep);
            volatile.push(LostWrite {
                index: entry.index,
                offset_bytes: entry.offset,
                len_bytes: entry.len,
                dropped: drop,
            });
        }
        for (&block, before) in &self.before {
            let mut image = before.image.as_deref().copied().unwrap_or([0u8; BLOCK]);
            for (entry, ranges) in self.entries.iter().zip(&kept) {
                if !entry.touches(block) {
                    continue;
                }
                for &(from, len) in ranges {
                    entry.apply(block, &mut image, from, len);
                }
            }
            let start = block * BLOCK_BYTES;
            let end = (start + BLOCK_BYTES).min(store.size_bytes());
            let bytes = &image[..(end - start) as usize];
            if bytes.iter().all(|&b| b == 0) {
                store.write_zeroes(start, end - start)?;
            } else {
                store.write(start, bytes)?;
            }
        }
        self.flush();
        store.flush()?;
        Ok(CrashReport {
            writes: self.writes,
            mode,
            volatile,
        })
    }
}

/// Appends `(offset, len)` to `list`, merged with the last range when adjacent.
fn push_merged(list: &mut Vec<(u64, u64)>, offset: u64, len: u64) {
    match list.last_mut() {
        Some((o, l)) if *o + *l == offset => *l += len,
        _ => list.push((offset, len)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Backing;

    const SIZE: u64 = 1 << 20;

    fn store() -> Store {
        Store::open(&Backing::Memory, SIZE).unwrap()
    }

    fn read(store: &Store, offset: u64, len: usize) -> Vec<u8> {
        let mut buf = vec![0u8; len];
        store.read(offset, &mut buf).unwrap();
        buf
    }

    #[test]
    fn a_crash_loses_the_writes_after_the_last_flush_and_keeps_those_before() {
        let s = store();
        let mut v = VolatileWrites::new(DEFAULT_WRITE_CACHE_BYTES);
        v.write(&s, 0, &[1; 4096], false).unwrap();
        v.flush();
        v.write(&s, 0, &[2; 512], false).unwrap();
        v.write(&s, 8192, &[3; 100], false).unwrap();
        assert_eq!(v.volatile_writes(), 2);
        let report = v.crash(&s, CrashMode::DropAll).unwrap();
        assert_eq!(read(&s, 0, 4096), vec![1; 4096]);
        assert_eq!(read(&s, 8192, 100), vec![0; 100]);
        assert_eq!(report.volatile.len(), 2);
        assert_eq!(report.volatile[0].dropped, vec![(0, 512)]);
        assert_eq!(report.volatile[1].dropped, vec![(8192, 100)]);
        assert_eq!(report.dropped_bytes(), 612);
        assert_eq!(report.volatile_bytes(), 612);
        assert_eq!(report.dropped_writes(), 2);
        assert_eq!(v.volatile_writes(), 0);
    }

    #[test]
    fn a_fua_write_survives_even_between_volatile_writes_to_the_same_bytes() {
        let s = store();
        let mut v = VolatileWrites::new(DEFAULT_WRITE_CACHE_BYTES);
        v.write(&s, 0, &[1; 1024], false).unwrap();
        v.write(&s, 512, &[2; 512], true).unwrap();
        v.write(&s, 0, &[3; 256], false).unwrap();
        let report = v.crash(&s, CrashMode::DropAll).unwrap();
        let mut want = vec![0u8; 1024];
        want[512..].fill(2);
        assert_eq!(read(&s, 0, 1024), want);
        let lost: Vec<u64> = report.volatile.iter().map(|w| w.index).collect();
        assert_eq!(lost, vec![1, 3]);
    }

    #[test]
    fn durable_writes_away_from_the_cached_ones_hold_no_memory() {
        let s = store();
        let mut v = VolatileWrites::new(DEFAULT_WRITE_CACHE_BYTES);
        v.write(&s, 0, &[1; 4096], false).unwrap();
        for i in 1..100 {
            v.write(&s, i * 4096, &[2; 4096], true).unwrap();
        }
        assert_eq!(v.entries.len(), 1);
        // One over a cached block is kept, to be replayed over its before image.
        v.write(&s, 512, &[3; 512], true).unwrap();
        assert_eq!(v.entries.len(), 2);
        v.crash(&s, CrashMode::DropAll).unwrap();
        let mut want = vec![0u8; 4096];
        want[512..1024].fill(3);
        assert_eq!(read(&s, 0, 4096), want);
        assert_eq!(read(&s, 4096, 4096), vec![2; 4096]);
    }

    #[test]
    fn zeroing_is_lost_like_a_write() {
        let s = store();
        let mut v = VolatileWrites::new(DEFAULT_WRITE_CACHE_BYTES);
        v.write(&s, 4096, &[9; 8192], true).unwrap();
        v.zero(&s, 4096, 8192, false).unwrap();
        assert_eq!(read(&s, 4096, 8192), vec![0; 8192]);
        v.crash(&s, CrashMode::DropAll).unwrap();
        assert_eq!(read(&s, 4096, 8192), vec![9; 8192]);
    }

    #[test]
    fn a_full_cache_makes_its_oldest_writes_durable() {
        let s = store();
        let mut v = VolatileWrites::new(8192);
        v.write(&s, 0, &[1; 4096], false).unwrap();
        v.write(&s, 4096, &[2; 4096], false).unwrap();
        // The third write overfills the cache: the first reaches the medium.
        v.write(&s, 8192, &[3; 4096], false).unwrap();
        assert_eq!(v.volatile_writes(), 2);
        let report = v.crash(&s, CrashMode::DropAll).unwrap();
        assert_eq!(read(&s, 0, 4096), vec![1; 4096]);
        assert_eq!(read(&s, 4096, 8192), vec![0; 8192]);
        let lost: Vec<u64> = report.volatile.iter().map(|w| w.index).collect();
        assert_eq!(lost, vec![2, 3]);
        // The memory held stays within the cache: nothing is left after the crash either.
        assert!(v.before.is_empty() && v.entries.is_empty());
    }

    #[test]
    fn memory_stays_within_the_cache_over_many_writes() {
        let s = Store::open(&Backing::Memory, 64 << 20).unwrap();
        let capacity = 256 << 10;
        let mut v = VolatileWrites::new(capacity);
        let mut prng = Prng::new(1);
        for i in 0..5000u64 {
            let offset = prng.below((64 << 20) / 512 - 16) * 512;
            let len = (1 + prng.below(16)) * 512;
            v.write(&s, offset, &vec![i as u8; len as usize], i % 7 == 0)
                .unwrap();
            assert!(v.cached_bytes <= capacity);
            assert!(v.before.len() as u64 * BLOCK_BYTES <= capacity);
            assert!(v.entries.iter().map(|e| e.cost).sum::<u64>() == v.cached_bytes);
        }
        assert!(v.volatile_writes() > 0);
    }

    #[test]
    fn tiny_scattered_writes_fill_the_cache_by_the_pages_they_touch() {
        let s = Store::open(&Backing::Memory, 64 << 20).unwrap();
        let mut v = VolatileWrites::new(64 << 10);
        for i in 0..1000u64 {
            v.write(&s, i * 8192 + 100, &[7], false).unwrap();
        }
        // Sixteen 4 KiB pages make 64 KiB: the cache holds the sixteen newest one-byte writes.
        assert_eq!(v.volatile_writes(), 16);
        assert_eq!(v.cached_bytes, 16 * 512);
        let report = v.crash(&s, CrashMode::DropAll).unwrap();
        assert_eq!(report.volatile[0].index, 985);
        assert_eq!(read(&s, 984 * 8192 + 100, 1), vec![0]);
        assert_eq!(read(&s, 983 * 8192 + 100, 1), vec![7]);
    }

    #[test]
    fn a_write_larger_than_the_cache_is_durable_with_everything_before_it() {
        let s = store();
        let mut v = VolatileWrites::new(4096);
        v.write(&s, 0, &[1; 512], false).unwrap();
        v.write(&s, 8192, &[2; 8192], false).unwrap();
        let report = v.crash(&s, CrashMode::DropAll).unwrap();
        assert!(report.volatile.is_empty());
        assert_eq!(read(&s, 0, 512), vec![1; 512]);
        assert_eq!(read(&s, 8192, 8192), vec![2; 8192]);
    }

    /// Sixty-four 4 KiB volatile writes to distinct places, torn by `mode`: returns the report
    /// and the image.
    fn torn(mode: CrashMode) -> (CrashReport, Vec<u8>) {
        let s = store();
        let mut v = VolatileWrites::new(DEFAULT_WRITE_CACHE_BYTES);
        for i in 0..64u64 {
            v.write(&s, i * 4096, &[i as u8 + 1; 4096], false).unwrap();
        }
        let report = v.crash(&s, mode).unwrap();
        (report, read(&s, 0, 64 * 4096))
    }

    #[test]
    fn the_same_seed_tears_the_same_units_and_another_seed_others() {
        let mode = |seed| CrashMode::Torn {
            atomicity: Atomicity::Sector,
            seed,
        };
        let (a, image_a) = torn(mode(7));
        let (b, image_b) = torn(mode(7));
        assert_eq!(a, b);
        assert_eq!(image_a, image_b);
        let (c, _) = torn(mode(8));
        assert_ne!(a.volatile, c.volatile);
        // Some units survive and some do not, and the image agrees with the report unit by unit.
        let dropped = a.dropped_bytes();
        assert!(dropped > 0 && dropped < 64 * 4096, "{dropped}");
        for w in &a.volatile {
            for &(offset, len) in &w.dropped {
                assert_eq!(offset % 512, 0);
                assert_eq!(len % 512, 0);
                let o = offset as usize;
                assert!(image_a[o..o + len as usize].iter().all(|&b| b == 0));
            }
        }
        let survived = image_a.iter().filter(|&&b| b != 0).count() as u64;
        assert_eq!(survived + dropped, 64 * 4096);
        assert_eq!(a.volatile_bytes(), 64 * 4096);
    }

    #[test]
    fn page_atomicity_keeps_or_drops_whole_pages() {
        let (report, image) = torn(CrashMode::Torn {
            atomicity: Atomicity::Page,
            seed: 3,
        });
        for (i, page) in image.chunks(4096).enumerate() {
            let whole = page.iter().all(|&b| b == i as u8 + 1);
            let gone = page.iter().all(|&b| b == 0);
            assert!(whole || gone, "page {i} is torn within itself");
            assert_eq!(gone, !report.volatile[i].dropped.is_empty());
        }
    }

    #[test]
    fn a_torn_crash_keeps_each_sector_from_one_of_its_writes_in_order() {
        // Two volatile writes over the same sector: whatever survives is the durable contents,
        // the first or the second, never a mixture within the sector.
        for seed in 0..32 {
            let s = store();
            let mut v = VolatileWrites::new(DEFAULT_WRITE_CACHE_BYTES);
            v.write(&s, 0, &[1; 512], true).unwrap();
            v.write(&s, 0, &[2; 512], false).unwrap();
            v.write(&s, 0, &[3; 512], false).unwrap();
            let report = v
                .crash(
                    &s,
                    CrashMode::Torn {
                        atomicity: Atomicity::Sector,
                        seed,
                    },
                )
                .unwrap();
            let got = read(&s, 0, 512);
            let kept = |i: usize| report.volatile[i].dropped.is_empty();
            let want = if kept(1) {
                3
            } else if kept(0) {
                2
            } else {
                1
            };
            assert_eq!(got, vec![want; 512], "seed {seed}");
        }
    }

    #[test]
    fn a_crash_at_the_device_end_handles_its_last_partial_block() {
        let s = Store::open(&Backing::Memory, 4096 + 512).unwrap();
        let mut v = VolatileWrites::new(DEFAULT_WRITE_CACHE_BYTES);
        v.write(&s, 4096, &[5; 512], true).unwrap();
        v.write(&s, 4096, &[6; 512], false).unwrap();
        v.crash(&s, CrashMode::DropAll).unwrap();
        assert_eq!(read(&s, 4096, 512), vec![5; 512]);
        assert!(v.write(&s, 4096, &[1; 1024], false).is_err());
    }
}
