//! The `dftl` FTL: demand-based page mapping (Gupta, Kim and Urgaonkar, ASPLOS 2009). See
//! docs/models/ftl-dftl.md.
//!
//! The full page map lives on flash in *translation pages* (each holds `page_bytes / 4`
//! entries), located through the global translation directory (GTD) kept in controller memory.
//! Only a cached mapping table (CMT) of recently used entries is in memory, with LRU
//! replacement. A CMT miss reads the entry's translation page before the data operation;
//! evicting a dirty entry rewrites its translation page (read, modify, program) and with it
//! every other dirty cached entry of that page (DFTL's batch update).
//!
//! The data side is the `page` FTL's core (striped allocation, garbage collection, wear
//! levelling); translation pages live in blocks of their own in the same pools and are
//! collected by the same garbage collector. When collecting a data block moves pages, their
//! entries are updated in the CMT (made dirty) if cached, otherwise in their translation
//! pages, one rewrite per translation page touched. Those rewrites are emitted right after
//! the garbage collection of the call is complete (after the host's program in a write), so
//! that a collection never has to open a translation block half-way.
//!
//! What is modelled and what is kept: the simulator keeps the authoritative logical→physical
//! map in memory (the core's map) to answer [`Ftl::lookup`] and to know where moved data
//! went; the CMT and GTD decide only what each request *costs* in flash operations. The CMT
//! therefore stores which entries are cached and dirty, not their values.

use crate::page::core::{base_logical_pages, Core, Hooks, HostTarget, NONE};
use crate::page::{self};
use crate::params::{self, field, Field, Key, Kind, ParamError, ParamKey, Section, Value};
use crate::{FlashOp, Ftl, FtlConfig, FtlEntry, FtlError, FtlParams, Keys, SlcCache};
use std::collections::BTreeSet;
use storsim_core::{CounterDescriptor, DeviceCounter, Unit};
use storsim_flash::{Geometry, NandArray, Ppa};

/// Parameters of the `dftl` FTL.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    /// The data side: over-provisioning, garbage collection and wear levelling, as in `page`.
    pub page: page::Params,
    /// Mapping entries the cached mapping table holds. At 8 bytes an entry (logical and
    /// physical page number) the default 4096 entries is 32 KiB of controller SRAM.
    pub cmt_entries: u32,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            page: page::Params::default(),
            cmt_entries: 4096,
        }
    }
}

/// The `dftl` FTL's registry entry.
pub const ENTRY: FtlEntry = FtlEntry {
    name: "dftl",
    description: "demand-based page mapping (Gupta et al. 2009): the page map on flash, a cached \
                  mapping table in SRAM",
    keys: Keys(&[&KEYS]),
    defaults: || FtlConfig::new(Params::default()),
    overwrites: true,
    counters: &[
        crate::page::core::COUNTERS,
        crate::page::core::SLC_COUNTERS,
        COUNTERS,
    ],
};

/// The key of the data side's section.
const PAGE: &str = "page";

/// The key that sizes the CMT as controller SRAM.
const CMT_BYTES: &str = "cmt_bytes";

/// Bytes of SRAM one cached mapping entry takes: a 4-byte logical and a 4-byte physical page
/// number, as in the DFTL paper.
const CMT_ENTRY_BYTES: u64 = 8;

/// The CMT entries that `bytes` of SRAM hold (`cmt_bytes`).
fn cmt_entries_in(bytes: u64) -> Result<u32, ParamError> {
    u32::try_from(bytes / CMT_ENTRY_BYTES)
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| {
            ParamError::key(
                CMT_BYTES,
                format!(
                    "must hold 1 to {} entries of {CMT_ENTRY_BYTES} bytes, got {bytes} bytes",
                    u32::MAX
                ),
            )
        })
}

const KEYS: [Key; Params::FIELDS.len()] = params::keys(Params::FIELDS);

impl FtlParams for Params {
    const ENTRY: &'static FtlEntry = &ENTRY;

    /// The keys of `[ssd.dftl]`, each with the parameter it states.
    const FIELDS: &'static [Field<Self>] = &[
        field!(cmt_entries: u32),
        Field {
            key: Key::new(CMT_BYTES, Kind::U64),
            set: |p, v| {
                p.cmt_entries = cmt_entries_in(params::scalar(v))?;
                Ok(())
            },
            // Another way to state `cmt_entries`, which is written instead.
            get: |_| None,
        },
        // The data side nests, mirroring `Params`, so that it shares the `page` FTL's keys and
        // checks instead of repeating them.
        Field {
            key: Key::new(PAGE, Kind::Section(page::KEYS)),
            set: |p, v| {
                let Value::Section(page) = v else {
                    unreachable!("params::apply hands a field only values of its key's kind")
                };
                p.page.apply(page).map_err(|e| e.within(PAGE))
            },
            get: |p| Some(Value::Section(p.page.section())),
        },
    ];

    fn apply(&mut self, s: &Section) -> Result<(), ParamError> {
        if s.get("cmt_entries").is_some() && s.get(CMT_BYTES).is_some() {
            return Err(ParamError::key(
                CMT_BYTES,
                "give cmt_entries or cmt_bytes, not both".into(),
            ));
        }
        params::apply(Self::FIELDS, self, s)
    }

    fn validate(&self, geometry: &Geometry) -> Result<(), ParamError> {
        if self.cmt_entries == 0 {
            return Err(ParamError::key("cmt_entries", "must be at least 1".into()));
        }
        if geometry.page_bytes < 4 {
            return Err(ParamError {
                key: ParamKey::Geometry("page_bytes"),
                message: format!(
                    "is {}, but DFTL's translation pages need room for a 4-byte entry",
                    geometry.page_bytes
                ),
            });
        }
        self.page.validate(geometry).map_err(|e| e.within(PAGE))
    }

    fn build(&self, geometry: Geometry, endurance: u32) -> Result<Box<dyn Ftl>, FtlError> {
        new(geometry, endurance, self)
    }

    fn set_background_gc(&mut self, on: bool) {
        self.page.set_background_gc(on);
    }
}

/// Builds the FTL over a fresh array.
pub fn new(geometry: Geometry, endurance: u32, params: &Params) -> Result<Box<dyn Ftl>, FtlError> {
    if params.cmt_entries == 0 {
        return Err(FtlError::Rejected {
            reason: "cmt_entries must be at least 1".into(),
        });
    }
    let per_page = geometry.page_bytes / 4;
    if per_page == 0 {
        return Err(FtlError::Rejected {
            reason: format!(
                "page_bytes {} cannot hold one 4-byte mapping entry",
                geometry.page_bytes
            ),
        });
    }
    // The translation pages take physical space too: take them out of the logical capacity
    // so that data plus translation pages fit what over-provisioning leaves.
    let base = base_logical_pages(&geometry, &params.page);
    let logical = base - base.div_ceil(per_page as u64);
    let translation_pages = logical.div_ceil(per_page as u64);
    let core = Core::new(
        geometry,
        endurance,
        &params.page,
        logical,
        translation_pages,
    )?;
    let cmt = Cmt::new(
        params.cmt_entries,
        per_page,
        logical as u32,
        translation_pages as u32,
    );
    Ok(Box::new(Dftl { core, cmt }))
}

struct Dftl {
    core: Core,
    cmt: Cmt,
}

/// One cached entry, in an LRU list threaded through the slot array.
#[derive(Clone, Copy)]
struct Slot {
    lpn: u32,
    prev: u32,
    next: u32,
    dirty: bool,
}

#[derive(Clone, Debug, Default)]
struct CmtCounters {
    hits: u64,
    misses: u64,
    translation_page_reads: u64,
    translation_page_writes: u64,
    dirty_evictions: u64,
    gc_translation_page_writes: u64,
}

/// The cached mapping table and the bookkeeping that prices translation traffic.
struct Cmt {
    capacity: u32,
    entries_per_page: u32,
    logical_pages: u32,
    /// Logical page → its slot, or [`NONE`] when not cached.
    slot_of: Vec<u32>,
    slots: Vec<Slot>,
    /// Most recently used slot.
    head: u32,
    /// Least recently used slot: the next eviction.
    tail: u32,
    /// Per translation page, how many of its entries are cached and dirty.
    dirty_in_page: Vec<u32>,
    /// Translation pages that collections made stale (entries of moved data that were not
    /// cached), to rewrite before the call returns; ordered, so rewrites are deterministic.
    pending: BTreeSet<u32>,
    counters: CmtCounters,
}

impl Cmt {
    fn new(
        capacity: u32,
        entries_per_page: u32,
        logical_pages: u32,
        translation_pages: u32,
    ) -> Self {
        Cmt {
            capacity,
            entries_per_page,
            logical_pages,
            slot_of: crate::table::filled(logical_pages as usize, NONE),
            slots: Vec::with_capacity(capacity.min(logical_pages) as usize),
            head: NONE,
            tail: NONE,
            dirty_in_page: vec![0; translation_pages as usize],
            pending: BTreeSet::new(),
            counters: CmtCounters::default(),
        }
    }

    fn unlink(&mut self, s: u32) {
        let Slot { prev, next, .. } = self.slots[s as usize];
        if prev == NONE {
            self.head = next;
        } else {
            self.slots[prev as usize].next = next;
        }
        if next == NONE {
            self.tail = prev;
        } else {
            self.slots[next as usize].prev = prev;
        }
    }

    fn push_front(&mut self, s: u32) {
        self.slots[s as usize].prev = NONE;
        self.slots[s as usize].next = self.head;
        if self.head != NONE {
            self.slots[self.head as usize].prev = s;
        } else {
            self.tail = s;
        }
        self.head = s;
    }

    /// Makes `lpn`'s entry resident and most recently used: a hit costs nothing; a miss first
    /// evicts the least recently used entry (rewriting its translation page if dirty), then
    /// reads the translation page of `lpn` (if that page was ever written, and unless the
    /// eviction just rewrote that same page).
    fn ensure_cached(
        &mut self,
        core: &mut Core,
        lpn: u32,
        ops: &mut Vec<FlashOp>,
    ) -> Result<(), FtlError> {
        let s = self.slot_of[lpn as usize];
        if s != NONE {
            self.counters.hits += 1;
            if self.head != s {
                self.unlink(s);
                self.push_front(s);
            }
            return Ok(());
        }
        self.counters.misses += 1;
        let t = lpn / self.entries_per_page;
        // A translation page just rewritten for the eviction is in the controller already.
        let mut fetched = false;
        let slot = if (self.slots.len() as u32) < self.capacity {
            self.slots.push(Slot {
                lpn,
                prev: NONE,
                next: NONE,
                dirty: false,
            });
            self.slots.len() as u32 - 1
        } else {
            let victim = self.tail;
            self.unlink(victim);
            let old = self.slots[victim as usize];
            self.slot_of[old.lpn as usize] = NONE;
            if old.dirty {
                let old_t = old.lpn / self.entries_per_page;
                self.dirty_in_page[old_t as usize] -= 1;
                self.counters.dirty_evictions += 1;
                core.ensure_meta_room(ops, self)?;
                self.write_back(core, old_t, ops)?;
                fetched = old_t == t;
            }
            self.slots[victim as usize] = Slot {
                lpn,
                prev: NONE,
                next: NONE,
                dirty: false,
            };
            victim
        };
        if !fetched && core.read_meta(t, ops)? {
            self.counters.translation_page_reads += 1;
        }
        self.slot_of[lpn as usize] = slot;
        self.push_front(slot);
        Ok(())
    }

    /// Marks `lpn`'s cached entry as changed since its translation page was written.
    fn mark_dirty(&mut self, lpn: u32) {
        let s = self.slot_of[lpn as usize];
        assert!(s != NONE, "marking an uncached entry dirty (page {lpn})");
        let slot = &mut self.slots[s as usize];
        if !slot.dirty {
            slot.dirty = true;
            self.dirty_in_page[(lpn / self.entries_per_page) as usize] += 1;
        }
    }

    /// Rewrites translation page `t` and, since it now holds their current values, marks every
    /// cached entry of `t` clean (the batch update).
    fn write_back(
        &mut self,
        core: &mut Core,
        t: u32,
        ops: &mut Vec<FlashOp>,
    ) -> Result<(), FtlError> {
        let reads = core.rewrite_meta(t, ops)?;
        self.counters.translation_page_reads += reads;
        self.counters.translation_page_writes += 1;
        if self.dirty_in_page[t as usize] > 0 {
            let first = t * self.entries_per_page;
            let end = (first + self.entries_per_page).min(self.logical_pages);
            for lpn in first..end {
                let s = self.slot_of[lpn as usize];
                if s != NONE {
                    self.slots[s as usize].dirty = false;
                }
            }
            self.dirty_in_page[t as usize] = 0;
        }
        Ok(())
    }
}

impl Hooks for Cmt {
    const WANTS_MOVES: bool = true;

    /// Collection moved data pages: cached entries become dirty; the translation pages of the
    /// others are noted for a rewrite, one per page however many of its entries moved.
    fn data_moved(&mut self, lpns: &[u32]) {
        for &lpn in lpns {
            if self.slot_of[lpn as usize] != NONE {
                self.mark_dirty(lpn);
            } else {
                self.pending.insert(lpn / self.entries_per_page);
            }
        }
    }
}

/// Rewrites the translation pages that were pending when it was called. Making room for a
/// rewrite may collect garbage and make more pages pending: those wait for the next call, so
/// one call's work stays bounded (by the number of translation pages) even on a device so
/// full that collections keep moving data whose entries are not cached.
fn flush(core: &mut Core, cmt: &mut Cmt, ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
    for _ in 0..cmt.pending.len() {
        let Some(t) = cmt.pending.pop_first() else {
            break;
        };
        core.ensure_meta_room(ops, cmt)?;
        cmt.write_back(core, t, ops)?;
        cmt.counters.gc_translation_page_writes += 1;
    }
    Ok(())
}

/// DFTL's own counters, listed after the page-mapping core's, in `counters`' order.
pub(crate) const COUNTERS: &[CounterDescriptor] = &[
    CounterDescriptor::new("cmt_entries", Unit::Count, "CMT capacity, in entries."),
    CounterDescriptor::new("cmt_hits", Unit::Count, "Lookups served from the CMT."),
    CounterDescriptor::new("cmt_misses", Unit::Count, "Lookups the CMT missed."),
    CounterDescriptor::new(
        "cmt_hit_rate",
        Unit::Ratio,
        "Hits over lookups; 0 before any lookup.",
    ),
    CounterDescriptor::new(
        "cmt_dirty_evictions",
        Unit::Count,
        "Evictions that rewrote a translation page.",
    ),
    CounterDescriptor::new(
        "translation_page_reads",
        Unit::Pages,
        "Translation-page reads of cause `mapping` (misses and read-modify-writes).",
    ),
    CounterDescriptor::new(
        "translation_page_writes",
        Unit::Pages,
        "Translation-page programs of cause `mapping`.",
    ),
    CounterDescriptor::new(
        "gc_translation_page_writes",
        Unit::Pages,
        "Those of them caused by GC or wear levelling moving uncached entries.",
    ),
    CounterDescriptor::new(
        "translation_pages_on_flash",
        Unit::Pages,
        "Translation pages that exist on flash.",
    ),
];

impl Ftl for Dftl {
    fn name(&self) -> &'static str {
        "dftl"
    }

    fn logical_pages(&self) -> u64 {
        self.core.logical_pages()
    }

    fn nand(&self) -> &NandArray {
        &self.core.nand
    }

    fn read(&mut self, lpn: u64, ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        let lpn = self.core.check_lpn(lpn)?;
        let start = ops.len();
        self.cmt.ensure_cached(&mut self.core, lpn, ops)?;
        // Collections this call caused may move data: their translation updates come before
        // the host's read, which then reads the data where it finally is.
        flush(&mut self.core, &mut self.cmt, ops)?;
        self.core.host_read(lpn, ops, start)
    }

    fn write(&mut self, lpn: u64, ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        let lpn = self.core.check_lpn(lpn)?;
        self.core.check_not_worn_out()?;
        let start = ops.len();
        self.cmt.ensure_cached(&mut self.core, lpn, ops)?;
        // The translation updates of this call's collections come before the host's program,
        // which waits for them. When writing them took the chosen plane's room, the plane is
        // chosen again (collecting as needed); the translation updates of those collections
        // wait for the next call.
        let core = &mut self.core;
        let cmt = &mut self.cmt;
        flush(core, cmt, ops)?;
        let mut target = core.prepare_host_write(lpn, ops, cmt)?;
        flush(core, cmt, ops)?;
        if !core.can_host_target(target) {
            target = HostTarget {
                plane: core.host_plane(lpn, ops, cmt)?,
                slc: false,
            };
        }
        core.finish_host_write(target, lpn, ops, start)?;
        cmt.mark_dirty(lpn);
        Ok(())
    }

    fn trim(&mut self, lpn: u64, ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        let lpn = self.core.check_lpn(lpn)?;
        self.cmt.ensure_cached(&mut self.core, lpn, ops)?;
        if self.core.host_trim(lpn) {
            self.cmt.mark_dirty(lpn);
        }
        flush(&mut self.core, &mut self.cmt, ops)
    }

    fn lookup(&self, lpn: u64) -> Option<Ppa> {
        self.core.lookup(lpn)
    }

    fn valid_data_pages(&self) -> u64 {
        self.core.valid_data_pages()
    }

    fn idle(&mut self, ops: &mut Vec<FlashOp>) -> Result<bool, FtlError> {
        let worked = self.core.idle(ops, &mut self.cmt)?;
        flush(&mut self.core, &mut self.cmt, ops)?;
        Ok(worked)
    }

    /// Partitions pin the data pages; the translation pages stay where the core keeps them.
    fn set_write_partitions(&mut self, partitions: &[Vec<u32>]) -> Result<(), FtlError> {
        self.core.set_write_partitions(partitions)
    }

    fn select_write_partition(&mut self, partition: Option<usize>) {
        self.core.select_write_partition(partition);
    }

    fn set_slc_cache(&mut self, cache: &SlcCache) -> Result<(), FtlError> {
        self.core.set_slc_cache(cache)
    }

    fn fold_slc_cache(&mut self, ops: &mut Vec<FlashOp>) -> Result<bool, FtlError> {
        // Only work that moved data has translation updates to write.
        let worked = self.core.fold_unit(ops, &mut self.cmt)?;
        if worked {
            flush(&mut self.core, &mut self.cmt, ops)?;
        }
        Ok(worked)
    }

    fn housekeeping(&mut self, ops: &mut Vec<FlashOp>) -> Result<bool, FtlError> {
        // Only work that moved data has translation updates to write.
        let worked = self.core.fold_for_budget(ops, &mut self.cmt)?;
        if worked {
            flush(&mut self.core, &mut self.cmt, ops)?;
        }
        Ok(worked)
    }

    fn counter_descriptors(&self) -> Vec<&'static CounterDescriptor> {
        self.core.counter_descriptors().chain(COUNTERS).collect()
    }

    fn reset_counters(&mut self) {
        self.core.reset_counters();
        self.cmt.counters = CmtCounters::default();
    }

    fn counters(&self) -> Vec<DeviceCounter> {
        let mut out = Vec::with_capacity(20);
        self.core.push_counters(&mut out);
        let c = &self.cmt.counters;
        let lookups = c.hits + c.misses;
        let hit_rate = if lookups == 0 {
            0.0
        } else {
            c.hits as f64 / lookups as f64
        };
        let on_flash = (0..self.cmt.dirty_in_page.len() as u32)
            .filter(|&t| self.core.meta_location(t).is_some())
            .count();
        for (name, value) in [
            ("cmt_entries", self.cmt.capacity as f64),
            ("cmt_hits", c.hits as f64),
            ("cmt_misses", c.misses as f64),
            ("cmt_hit_rate", hit_rate),
            ("cmt_dirty_evictions", c.dirty_evictions as f64),
            ("translation_page_reads", c.translation_page_reads as f64),
            ("translation_page_writes", c.translation_page_writes as f64),
            (
                "gc_translation_page_writes",
                c.gc_translation_page_writes as f64,
            ),
            ("translation_pages_on_flash", on_flash as f64),
        ] {
            out.push(DeviceCounter::new(name, value));
        }
        out
    }
}
