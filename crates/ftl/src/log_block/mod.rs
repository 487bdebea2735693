//! The `log-block` FTL (BAST, block-associative sector translation), as in Figs. 4.2 and 4.3 of
//! the hybrid-disk thesis (seed 002). Data blocks are mapped at block level; a few log blocks
//! are mapped at page level, each one associated with one logical block. Every write of a page
//! is appended to its logical block's log block. A log block is merged when it is full, or when
//! a logical block needs a log block and none is left: a *switch merge* when the log holds the
//! block's pages in order from the first to the last (the log becomes the data block), a
//! *partial merge* (optional) when it holds them in order but not all of them (the rest are
//! copied in from the data block), and a *full merge* otherwise (the latest copy of every page
//! is gathered into a free block, and the data and log blocks are erased).
//! See docs/models/ftl-log-block.md.
//!
//! Memory: 4 bytes per logical page (where its latest copy is), 8 bytes per logical block (data
//! block, log slot) and about 24 bytes per log block, plus the pool of erased blocks (8 bytes
//! per physical block).

use crate::blockmap::{self, CopyChain, Flash, NONE};
use crate::params::{self, field, Field, Key, Kind, ParamError, Value};
use crate::{Cause, Dep, FlashOp, Ftl, FtlConfig, FtlEntry, FtlError, FtlParams, Keys};
use storsim_core::{CounterDescriptor, DeviceCounter, Unit};
use storsim_flash::{BlockId, Geometry, NandArray, Ppa};

/// The log space when [`Params::log_blocks`] is `None`: this fraction of the data blocks,
/// rounded up, the same share FlashSim's evaluation gave FAST.
pub const DEFAULT_LOG_FRACTION: f64 = 0.03;

/// Parameters of the `log-block` FTL. The default is 3 % log space without partial merges.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Params {
    /// How many log blocks may be in use at once. `None` (the default) takes 3 % of the data
    /// blocks, rounded up, at least 1 (the thesis leaves the number open). One more block is
    /// kept spare for full merges; the rest of the device is data blocks.
    pub log_blocks: Option<u32>,
    /// Whether a log block written in order but not to the end is merged by copying the missing
    /// pages into it (partial merge) instead of a full merge. Off by default: Fig. 4.3 knows
    /// only switch and full merges.
    pub partial_merge: bool,
}

/// The `log-block` FTL's registry entry.
pub const ENTRY: FtlEntry = FtlEntry {
    name: "log-block",
    description:
        "BAST (the hybrid-disk thesis, Figs. 4.2-4.3): block mapping with one page-mapped log \
         block per updated logical block, switch and full merges",
    keys: Keys(&[&KEYS]),
    defaults: || FtlConfig::new(Params::default()),
    overwrites: true,
    counters: &[COUNTERS],
};

const KEYS: [Key; Params::FIELDS.len()] = params::keys(Params::FIELDS);

impl FtlParams for Params {
    const ENTRY: &'static FtlEntry = &ENTRY;

    /// The keys of `[ssd.log-block]`, each with the parameter it states.
    const FIELDS: &'static [Field<Self>] = &[
        Field {
            key: Key::new("log_blocks", Kind::U32),
            set: |p, v| {
                p.log_blocks = Some(params::scalar(v));
                Ok(())
            },
            // Without `log_blocks` the FTL takes 3 % of the data blocks; only a stated number is
            // written.
            get: |p| p.log_blocks.map(Value::U32),
        },
        field!(partial_merge: bool),
    ];

    fn validate(&self, _geometry: &Geometry) -> Result<(), ParamError> {
        match self.log_blocks {
            Some(0) => Err(ParamError::key(
                "log_blocks",
                "must be at least 1 (leave it out for 3 % of the data blocks)".into(),
            )),
            _ => Ok(()),
        }
    }

    fn build(&self, geometry: Geometry, endurance: u32) -> Result<Box<dyn Ftl>, FtlError> {
        new(geometry, endurance, self)
    }
}

/// Builds the FTL over a fresh array.
pub fn new(geometry: Geometry, endurance: u32, params: &Params) -> Result<Box<dyn Ftl>, FtlError> {
    Ok(Box::new(LogBlockFtl::new(geometry, endurance, params)?))
}

/// Which merge a log block gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Merge {
    Switch,
    Partial,
    Full,
}

struct LogBlockFtl {
    flash: Flash,
    partial_merge: bool,
    logical_pages: u64,
    /// Where the latest copy of each logical page is (a page of its data block or of its log
    /// block), or [`NONE`] when it has no data.
    loc: Vec<u32>,
    valid_pages: u64,
    /// Physical block of each logical block, or [`NONE`] before its first merge.
    data_block: Vec<u32>,
    /// Log slot of each logical block, or [`NONE`].
    log_of: Vec<u32>,
    /// Per log slot: its physical block, its logical block, the next clean page, and whether
    /// every page so far was written at its own offset (page i holds offset i).
    log_block: Vec<u32>,
    log_lbn: Vec<u32>,
    log_fill: Vec<u32>,
    log_in_order: Vec<bool>,
    /// Unused log slots.
    free_slots: Vec<u32>,
    /// Slots in use, least recently written first: the merge victim when none is left.
    lru: Lru,
    switch_merges: u64,
    partial_merges: u64,
    full_merges: u64,
    merge_copied_pages: u64,
}

impl LogBlockFtl {
    fn new(geometry: Geometry, endurance: u32, params: &Params) -> Result<Self, FtlError> {
        if params.log_blocks == Some(0) {
            return Err(FtlError::Rejected {
                reason: "log-block: log_blocks must be at least 1".into(),
            });
        }
        let flash = Flash::new(geometry, endurance)?;
        let logs = |data: u32| match params.log_blocks {
            Some(n) => n,
            None => blockmap::fraction_of(DEFAULT_LOG_FRACTION, data).max(1),
        };
        let data_blocks = blockmap::data_blocks(geometry.blocks(), logs, "log-block")?;
        let log_blocks = logs(data_blocks);
        let logical_pages = data_blocks as u64 * geometry.pages_per_block as u64;
        let n = log_blocks as usize;
        Ok(LogBlockFtl {
            flash,
            partial_merge: params.partial_merge,
            logical_pages,
            loc: vec![NONE; logical_pages as usize],
            valid_pages: 0,
            data_block: vec![NONE; data_blocks as usize],
            log_of: vec![NONE; data_blocks as usize],
            log_block: vec![NONE; n],
            log_lbn: vec![NONE; n],
            log_fill: vec![0; n],
            log_in_order: vec![true; n],
            free_slots: (0..log_blocks).rev().collect(),
            lru: Lru::new(n),
            switch_merges: 0,
            partial_merges: 0,
            full_merges: 0,
            merge_copied_pages: 0,
        })
    }

    fn ppa(&self, block: u32, offset: u32) -> Ppa {
        self.flash.geometry.ppa(BlockId(block), offset)
    }

    fn in_block(&self, ppa: u32, block: u32) -> bool {
        block != NONE && ppa / self.flash.pages_per_block() == block
    }

    /// Makes sure a new log block can be taken and still leave one erased block for a full
    /// merge (Fig. 4.2: "if there are less than 2 free blocks then merge"), merging the least
    /// recently written log blocks as needed.
    fn make_room_for_log(&mut self, ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        while let Some(victim) = self.lru.front() {
            if !self.free_slots.is_empty() && self.flash.free_blocks() >= 2 {
                break;
            }
            self.merge(victim, ops)?;
        }
        if self.free_slots.is_empty() || self.flash.free_blocks() < 2 {
            return Err(self.flash.exhausted());
        }
        Ok(())
    }

    /// Merges the log block in `slot` with its data block (Fig. 4.3) and frees the slot.
    fn merge(&mut self, slot: u32, ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        let s = slot as usize;
        let (log, lbn, fill) = (self.log_block[s], self.log_lbn[s], self.log_fill[s]);
        let data = self.data_block[lbn as usize];
        let ppb = self.flash.pages_per_block();
        let first = lbn as usize * ppb as usize;
        let kind = if self.log_in_order[s] && fill == ppb {
            Merge::Switch
        } else if self.log_in_order[s] && self.partial_merge {
            Merge::Partial
        } else {
            Merge::Full
        };
        match kind {
            Merge::Switch | Merge::Partial => {
                // In order means page o of the log holds offset o for every o < fill, written
                // after anything in the data block, so only offsets from `fill` on can still
                // have their latest copy in the data block: those move into the log.
                let mut chain = CopyChain::new();
                for o in 0..ppb {
                    let at = self.loc[first + o as usize];
                    if at == NONE {
                        continue;
                    }
                    if o < fill {
                        assert!(
                            self.in_block(at, log),
                            "an in-order log lost a page to its data block"
                        );
                    } else {
                        assert!(self.in_block(at, data), "a page outside its blocks");
                        let to = self.ppa(log, o);
                        chain.copy(&mut self.flash, Ppa(at), to, ops)?;
                        self.loc[first + o as usize] = to.0;
                        self.merge_copied_pages += 1;
                    }
                }
                self.data_block[lbn as usize] = log;
                if data != NONE {
                    self.flash.erase(BlockId(data), Cause::Merge, ops)?;
                }
                if kind == Merge::Switch {
                    self.switch_merges += 1;
                } else {
                    self.partial_merges += 1;
                }
            }
            Merge::Full => {
                let has_data = (0..ppb as usize).any(|o| self.loc[first + o] != NONE);
                let fresh = if has_data {
                    self.flash.take_free()?.0
                } else {
                    NONE
                };
                let mut chain = CopyChain::new();
                for o in 0..ppb {
                    let at = self.loc[first + o as usize];
                    if at != NONE {
                        let to = self.ppa(fresh, o);
                        chain.copy(&mut self.flash, Ppa(at), to, ops)?;
                        self.loc[first + o as usize] = to.0;
                        self.merge_copied_pages += 1;
                    }
                }
                self.data_block[lbn as usize] = fresh;
                if data != NONE {
                    self.flash.erase(BlockId(data), Cause::Merge, ops)?;
                }
                self.flash.erase(BlockId(log), Cause::Merge, ops)?;
                self.full_merges += 1;
            }
        }
        self.log_of[lbn as usize] = NONE;
        self.log_block[s] = NONE;
        self.log_lbn[s] = NONE;
        self.lru.remove(slot);
        self.free_slots.push(slot);
        Ok(())
    }
}

/// The FTL's counters, in the order `counters` lists them: the SSD reports them as `ftl_NAME`.
pub(crate) const COUNTERS: &[CounterDescriptor] = &[
    CounterDescriptor::new(
        "switch_merges",
        Unit::Count,
        "Log blocks that became data blocks without copies.",
    ),
    CounterDescriptor::new(
        "partial_merges",
        Unit::Count,
        "Log blocks completed from their data block (only with `partial_merge`).",
    ),
    CounterDescriptor::new(
        "full_merges",
        Unit::Count,
        "Logical blocks gathered into a fresh block.",
    ),
    CounterDescriptor::new(
        "merge_copied_pages",
        Unit::Pages,
        "Pages copied by all merges.",
    ),
    CounterDescriptor::new("log_blocks", Unit::Blocks, "Log blocks available."),
    CounterDescriptor::new(
        "log_blocks_in_use",
        Unit::Blocks,
        "Log blocks holding pages now.",
    ),
    CounterDescriptor::new(
        "free_blocks",
        Unit::Blocks,
        "Erased blocks in the pool now.",
    ),
];

impl Ftl for LogBlockFtl {
    fn name(&self) -> &'static str {
        "log-block"
    }

    fn logical_pages(&self) -> u64 {
        self.logical_pages
    }

    fn nand(&self) -> &NandArray {
        &self.flash.nand
    }

    fn read(&mut self, lpn: u64, ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        blockmap::split_lpn(lpn, self.logical_pages, self.flash.pages_per_block())?;
        if let Some(ppa) = self.lookup(lpn) {
            self.flash.read(ppa, Cause::Host, Dep::None, ops)?;
        }
        Ok(())
    }

    fn write(&mut self, lpn: u64, ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        let ppb = self.flash.pages_per_block();
        let (lbn, offset) = blockmap::split_lpn(lpn, self.logical_pages, ppb)?;
        let call_start = ops.len();
        let mut slot = self.log_of[lbn as usize];
        if slot != NONE && self.log_fill[slot as usize] == ppb {
            // The merge that should have followed the write that filled this log block failed
            // (no erased block left); it is retried before anything else.
            self.merge(slot, ops)?;
            slot = NONE;
        }
        if slot == NONE {
            self.make_room_for_log(ops)?;
            let block = self.flash.take_free()?.0;
            slot = self
                .free_slots
                .pop()
                .expect("make_room_for_log left a slot");
            let s = slot as usize;
            self.log_block[s] = block;
            self.log_lbn[s] = lbn;
            self.log_fill[s] = 0;
            self.log_in_order[s] = true;
            self.log_of[lbn as usize] = slot;
        }
        let s = slot as usize;
        let target = self.ppa(self.log_block[s], self.log_fill[s]);
        let dep = blockmap::host_dep(ops, call_start);
        self.flash.program(target, Cause::Host, dep, ops)?;
        if self.loc[lpn as usize] == NONE {
            self.valid_pages += 1;
        }
        self.loc[lpn as usize] = target.0;
        if offset != self.log_fill[s] {
            self.log_in_order[s] = false;
        }
        self.log_fill[s] += 1;
        self.lru.touch(slot);
        if self.log_fill[s] == ppb {
            self.merge(slot, ops)?;
        }
        Ok(())
    }

    fn trim(&mut self, lpn: u64, _ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        blockmap::split_lpn(lpn, self.logical_pages, self.flash.pages_per_block())?;
        if self.loc[lpn as usize] != NONE {
            self.loc[lpn as usize] = NONE;
            self.valid_pages -= 1;
        }
        Ok(())
    }

    fn lookup(&self, lpn: u64) -> Option<Ppa> {
        match self.loc.get(lpn as usize) {
            Some(&at) if at != NONE => Some(Ppa(at)),
            _ => None,
        }
    }

    fn valid_data_pages(&self) -> u64 {
        self.valid_pages
    }

    fn reset_counters(&mut self) {
        self.switch_merges = 0;
        self.partial_merges = 0;
        self.full_merges = 0;
        self.merge_copied_pages = 0;
    }

    fn counters(&self) -> Vec<DeviceCounter> {
        let in_use = self.log_block.len() - self.free_slots.len();
        vec![
            DeviceCounter::new("switch_merges", self.switch_merges as f64),
            DeviceCounter::new("partial_merges", self.partial_merges as f64),
            DeviceCounter::new("full_merges", self.full_merges as f64),
            DeviceCounter::new("merge_copied_pages", self.merge_copied_pages as f64),
            DeviceCounter::new("log_blocks", self.log_block.len() as f64),
            DeviceCounter::new("log_blocks_in_use", in_use as f64),
            DeviceCounter::new("free_blocks", self.flash.free_blocks() as f64),
        ]
    }
}

/// A recency list over slots `0..n` (doubly linked through two flat arrays, so moving a slot
/// to the back or out of the list never allocates).
struct Lru {
    prev: Vec<u32>,
    next: Vec<u32>,
    linked: Vec<bool>,
    head: u32,
    tail: u32,
}

impl Lru {
    fn new(n: usize) -> Self {
        Lru {
            prev: vec![NONE; n],
            next: vec![NONE; n],
            linked: vec![false; n],
            head: NONE,
            tail: NONE,
        }
    }

    fn front(&self) -> Option<u32> {
        (self.head != NONE).then_some(self.head)
    }

    fn remove(&mut self, slot: u32) {
        let s = slot as usize;
        if !self.linked[s] {
            return;
        }
        let (p, n) = (self.prev[s], self.next[s]);
        if p == NONE {
            self.head = n;
        } else {
            self.next[p as usize] = n;
        }
        if n == NONE {
            self.tail = p;
        } else {
            self.prev[n as usize] = p;
        }
        self.prev[s] = NONE;
        self.next[s] = NONE;
        self.linked[s] = false;
    }

    /// Moves `slot` to the back (most recently used), linking it if it was not in the list.
    fn touch(&mut self, slot: u32) {
        self.remove(slot);
        let s = slot as usize;
        self.prev[s] = self.tail;
        if self.tail == NONE {
            self.head = slot;
        } else {
            self.next[self.tail as usize] = slot;
        }
        self.tail = slot;
        self.linked[s] = true;
    }
}
