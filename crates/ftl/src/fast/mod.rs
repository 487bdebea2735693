//! The `fast` FTL (Lee et al. 2007, fully-associative sector translation), as FlashSim
//! evaluated it (seed 004) with log space of about 3 % of the active region. Data blocks are
//! mapped at block level; a write whose page in the data block is still erased goes there in
//! place. Other writes go to log blocks, which come in two kinds:
//!
//! - one *sequential* (SW) log block: a write to offset 0 of a logical block starts it (merging
//!   the previous one), writes that continue it in order are appended, and it is merged by a
//!   *switch merge* once full or a *partial merge* (the missing pages copied in) when the next
//!   sequential run starts;
//! - *random* (RW) log blocks, shared by all logical blocks (fully associative): any other page
//!   is appended to the current one. When every RW log block is full, the oldest is reclaimed:
//!   every logical block with a live page in it gets a *full merge* (the latest copy of each of
//!   its pages gathered into a free block). This is FAST's known high merge cost on random
//!   writes: one victim log block can cost a full merge per page it holds.
//!
//! See docs/models/ftl-fast.md.
//!
//! Memory: 4 bytes per logical page (where its latest copy is), 4 bytes per logical block (its
//! data block), 4 bytes per page of the RW log blocks (which logical page each holds), plus the
//! pool of erased blocks (8 bytes per physical block).

use crate::blockmap::{self, CopyChain, Flash, NONE};
use crate::params::{self, field, fraction_up_to_one, Field, Key, ParamError};
use crate::{Cause, Dep, FlashOp, Ftl, FtlConfig, FtlEntry, FtlError, FtlParams, Keys};
use storsim_core::{CounterDescriptor, DeviceCounter, Unit};
use storsim_flash::{BlockId, Geometry, NandArray, Ppa};

/// Parameters of the `fast` FTL.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    /// Log space as a fraction of the data blocks (the active region), rounded up to whole
    /// blocks and at least 2 (the SW log block and one RW log block). FlashSim gave FAST about
    /// 3 % of the active region. One more block is kept spare for merges. Default 0.03.
    pub log_fraction: f64,
}

impl Default for Params {
    fn default() -> Self {
        Params { log_fraction: 0.03 }
    }
}

/// The `fast` FTL's registry entry.
pub const ENTRY: FtlEntry = FtlEntry {
    name: "fast",
    description: "FAST (Lee et al. 2007): block mapping with one sequential log block and \
                  fully associative random log blocks",
    keys: Keys(&[&KEYS]),
    defaults: || FtlConfig::new(Params::default()),
    overwrites: true,
    counters: &[COUNTERS],
};

const KEYS: [Key; Params::FIELDS.len()] = params::keys(Params::FIELDS);

impl FtlParams for Params {
    const ENTRY: &'static FtlEntry = &ENTRY;

    /// The keys of `[ssd.fast]`, each with the parameter it states.
    const FIELDS: &'static [Field<Self>] = &[field!(log_fraction: f64)];

    fn validate(&self, _geometry: &Geometry) -> Result<(), ParamError> {
        fraction_up_to_one("log_fraction", self.log_fraction)
    }

    fn build(&self, geometry: Geometry, endurance: u32) -> Result<Box<dyn Ftl>, FtlError> {
        new(geometry, endurance, self)
    }
}

/// Builds the FTL over a fresh array.
pub fn new(geometry: Geometry, endurance: u32, params: &Params) -> Result<Box<dyn Ftl>, FtlError> {
    Ok(Box::new(FastFtl::new(geometry, endurance, params)?))
}

struct FastFtl {
    flash: Flash,
    logical_pages: u64,
    /// Where the latest copy of each logical page is, or [`NONE`] when it has no data.
    loc: Vec<u32>,
    valid_pages: u64,
    /// Physical block of each logical block, or [`NONE`] before its first write.
    data_block: Vec<u32>,
    /// The SW log block and its logical block, or [`NONE`]; the next offset it takes.
    sw_block: u32,
    sw_lbn: u32,
    sw_fill: u32,
    /// RW log slots form a ring: `rw_live` slots from `rw_head` (the oldest) are in use, and
    /// only the newest of them has clean pages (`rw_fill` is its next one).
    rw_block: Vec<u32>,
    /// The logical page written at each page of each RW slot.
    rw_lpn: Vec<u32>,
    rw_head: usize,
    rw_live: usize,
    rw_fill: u32,
    switch_merges: u64,
    partial_merges: u64,
    full_merges: u64,
    rw_log_merges: u64,
    merge_copied_pages: u64,
}

impl FastFtl {
    fn new(geometry: Geometry, endurance: u32, params: &Params) -> Result<Self, FtlError> {
        blockmap::check_fraction("fast", "log_fraction", params.log_fraction, 0.0, 1.0)?;
        let flash = Flash::new(geometry, endurance)?;
        let logs = |data: u32| blockmap::fraction_of(params.log_fraction, data).max(2);
        let data_blocks = blockmap::data_blocks(geometry.blocks(), logs, "fast")?;
        let rw_logs = (logs(data_blocks) - 1) as usize;
        let ppb = geometry.pages_per_block as usize;
        let logical_pages = data_blocks as u64 * ppb as u64;
        Ok(FastFtl {
            flash,
            logical_pages,
            loc: vec![NONE; logical_pages as usize],
            valid_pages: 0,
            data_block: vec![NONE; data_blocks as usize],
            sw_block: NONE,
            sw_lbn: NONE,
            sw_fill: 0,
            rw_block: vec![NONE; rw_logs],
            rw_lpn: vec![NONE; rw_logs * ppb],
            rw_head: 0,
            rw_live: 0,
            rw_fill: 0,
            switch_merges: 0,
            partial_merges: 0,
            full_merges: 0,
            rw_log_merges: 0,
            merge_copied_pages: 0,
        })
    }

    fn ppa(&self, block: u32, offset: u32) -> Ppa {
        self.flash.geometry.ppa(BlockId(block), offset)
    }

    fn in_block(&self, ppa: u32, block: u32) -> bool {
        block != NONE && ppa / self.flash.pages_per_block() == block
    }

    /// Programs the host's data of `lpn` into `target` and makes it the page's latest copy.
    fn program_host(
        &mut self,
        lpn: u64,
        target: Ppa,
        dep: Dep,
        ops: &mut Vec<FlashOp>,
    ) -> Result<(), FtlError> {
        self.flash.program(target, Cause::Host, dep, ops)?;
        if self.loc[lpn as usize] == NONE {
            self.valid_pages += 1;
        }
        self.loc[lpn as usize] = target.0;
        Ok(())
    }

    /// Turns the SW log block into its logical block's data block: a switch merge when it is
    /// full, otherwise a partial merge that first copies in the pages it lacks.
    fn merge_sw(&mut self, ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        let (sw, lbn, fill) = (self.sw_block, self.sw_lbn, self.sw_fill);
        assert_ne!(sw, NONE, "merging a missing SW log block");
        let ppb = self.flash.pages_per_block();
        let data = self.data_block[lbn as usize];
        let first = lbn as usize * ppb as usize;
        // The SW log holds offsets 0..fill in order, all written after anything in the data
        // block (in-place writes stop while the SW log serves the block). So the data block
        // can hold the latest copy only of offsets from `fill` on; those, and any kept in RW
        // log blocks, move into the SW log.
        let mut chain = CopyChain::new();
        for o in 0..ppb {
            let at = self.loc[first + o as usize];
            if at == NONE {
                continue;
            }
            if o < fill {
                assert!(
                    !self.in_block(at, data),
                    "the data block holds a page newer than the SW log"
                );
            } else {
                let to = self.ppa(sw, o);
                chain.copy(&mut self.flash, Ppa(at), to, ops)?;
                self.loc[first + o as usize] = to.0;
                self.merge_copied_pages += 1;
            }
        }
        self.data_block[lbn as usize] = sw;
        if data != NONE {
            self.flash.erase(BlockId(data), Cause::Merge, ops)?;
        }
        if fill == ppb {
            self.switch_merges += 1;
        } else {
            self.partial_merges += 1;
        }
        self.sw_block = NONE;
        self.sw_lbn = NONE;
        self.sw_fill = 0;
        Ok(())
    }

    /// Gathers the latest copy of every page of `lbn` (from its data block, the SW log and any
    /// RW log) into a free block, which becomes the data block; erases the old data block, and
    /// the SW log block if it served `lbn`.
    fn full_merge(&mut self, lbn: u32, ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        let fresh = self.flash.take_free()?.0;
        let ppb = self.flash.pages_per_block();
        let first = lbn as usize * ppb as usize;
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
        let data = self.data_block[lbn as usize];
        self.data_block[lbn as usize] = fresh;
        if data != NONE {
            self.flash.erase(BlockId(data), Cause::Merge, ops)?;
        }
        if self.sw_lbn == lbn {
            let sw = self.sw_block;
            self.sw_block = NONE;
            self.sw_lbn = NONE;
            self.sw_fill = 0;
            self.flash.erase(BlockId(sw), Cause::Merge, ops)?;
        }
        self.full_merges += 1;
        Ok(())
    }

    /// Reclaims the oldest RW log block: a full merge for every logical block that still has
    /// its latest copy of some page there, then an erase.
    fn merge_oldest_rw(&mut self, ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        let slot = self.rw_head;
        let block = self.rw_block[slot];
        let ppb = self.flash.pages_per_block();
        for i in 0..ppb {
            let lpn = self.rw_lpn[slot * ppb as usize + i as usize];
            // A full merge moves every page of its logical block, so later pages of the same
            // block in this log are no longer live and are skipped.
            if lpn != NONE && self.loc[lpn as usize] == self.ppa(block, i).0 {
                self.full_merge(lpn / ppb, ops)?;
            }
        }
        self.flash.erase(BlockId(block), Cause::Merge, ops)?;
        self.rw_block[slot] = NONE;
        self.rw_head = (slot + 1) % self.rw_block.len();
        self.rw_live -= 1;
        self.rw_log_merges += 1;
        Ok(())
    }

    /// The next clean page of the RW log, taking a new RW log block (after reclaiming the
    /// oldest when all are in use) when the current one is full.
    fn rw_target(&mut self, ops: &mut Vec<FlashOp>) -> Result<(usize, u32), FtlError> {
        let ppb = self.flash.pages_per_block();
        let slots = self.rw_block.len();
        if self.rw_live == 0 || self.rw_fill == ppb {
            if self.rw_live == slots {
                self.merge_oldest_rw(ops)?;
            }
            let block = self.flash.take_free()?.0;
            let slot = (self.rw_head + self.rw_live) % slots;
            self.rw_block[slot] = block;
            let lpns = &mut self.rw_lpn[slot * ppb as usize..(slot + 1) * ppb as usize];
            lpns.fill(NONE);
            self.rw_live += 1;
            self.rw_fill = 0;
        }
        let slot = (self.rw_head + self.rw_live - 1) % slots;
        let page = self.rw_fill;
        self.rw_fill += 1;
        Ok((slot, page))
    }
}

/// The FTL's counters, in the order `counters` lists them: the SSD reports them as `ftl_NAME`.
pub(crate) const COUNTERS: &[CounterDescriptor] = &[
    CounterDescriptor::new(
        "switch_merges",
        Unit::Count,
        "Full SW log blocks that became data blocks without copies.",
    ),
    CounterDescriptor::new(
        "partial_merges",
        Unit::Count,
        "SW log blocks completed from elsewhere when a new run started.",
    ),
    CounterDescriptor::new(
        "full_merges",
        Unit::Count,
        "Logical blocks gathered into a fresh block (while reclaiming RW log blocks).",
    ),
    CounterDescriptor::new("rw_log_merges", Unit::Count, "RW log blocks reclaimed."),
    CounterDescriptor::new(
        "merge_copied_pages",
        Unit::Pages,
        "Pages copied by all merges.",
    ),
    CounterDescriptor::new("log_blocks", Unit::Blocks, "Log blocks (SW + RW)."),
    CounterDescriptor::new(
        "free_blocks",
        Unit::Blocks,
        "Erased blocks in the pool now.",
    ),
];

impl Ftl for FastFtl {
    fn name(&self) -> &'static str {
        "fast"
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
        let sw_serves = self.sw_lbn == lbn;

        // A write that continues the sequential run goes to the SW log block.
        if sw_serves && offset == self.sw_fill {
            let target = self.ppa(self.sw_block, offset);
            self.program_host(lpn, target, Dep::None, ops)?;
            self.sw_fill += 1;
            if self.sw_fill == ppb {
                self.merge_sw(ops)?;
            }
            return Ok(());
        }

        // No collision: the page of the data block is still erased, so write it in place
        // (unless the SW log serves this block, whose merge relies on the data block staying
        // older than the log).
        if !sw_serves {
            let mut data = self.data_block[lbn as usize];
            if data == NONE {
                data = self.flash.take_free()?.0;
                self.data_block[lbn as usize] = data;
            }
            let target = self.ppa(data, offset);
            if !self.flash.nand.is_programmed(target) {
                return self.program_host(lpn, target, Dep::None, ops);
            }
        }

        // A collision at offset 0 starts a new sequential run in a fresh SW log block.
        if offset == 0 {
            if self.sw_block != NONE {
                self.merge_sw(ops)?;
            }
            let block = self.flash.take_free()?.0;
            self.sw_block = block;
            self.sw_lbn = lbn;
            self.sw_fill = 1;
            let target = self.ppa(block, 0);
            let dep = blockmap::host_dep(ops, call_start);
            self.program_host(lpn, target, dep, ops)?;
            if self.sw_fill == ppb {
                self.merge_sw(ops)?;
            }
            return Ok(());
        }

        // Anything else is appended to the RW log.
        let (slot, page) = self.rw_target(ops)?;
        self.rw_lpn[slot * ppb as usize + page as usize] = lpn as u32;
        let target = self.ppa(self.rw_block[slot], page);
        let dep = blockmap::host_dep(ops, call_start);
        self.program_host(lpn, target, dep, ops)
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
        self.rw_log_merges = 0;
        self.merge_copied_pages = 0;
    }

    fn counters(&self) -> Vec<DeviceCounter> {
        vec![
            DeviceCounter::new("switch_merges", self.switch_merges as f64),
            DeviceCounter::new("partial_merges", self.partial_merges as f64),
            DeviceCounter::new("full_merges", self.full_merges as f64),
            DeviceCounter::new("rw_log_merges", self.rw_log_merges as f64),
            DeviceCounter::new("merge_copied_pages", self.merge_copied_pages as f64),
            DeviceCounter::new("log_blocks", (self.rw_block.len() + 1) as f64),
            DeviceCounter::new("free_blocks", self.flash.free_blocks() as f64),
        ]
    }
}
