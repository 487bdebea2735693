//! The `block` FTL: block-level mapping. Logical block `b` lives in one physical block and
//! logical page `b * pages_per_block + k` always sits at page `k` of it. A write to a page that
//! is still erased programs it in place; a write to a page already programmed copies the block:
//! every other valid page is read and programmed into a free block, the new data is programmed
//! at its offset there, and the old block is erased. See docs/models/ftl-block.md.
//!
//! Memory: 4 bytes per logical block (its physical block) and 1 bit per logical page (whether it
//! holds data), plus the pool of erased blocks (8 bytes per physical block).

use crate::blockmap::{self, CopyChain, Flash, NONE};
use crate::params::{self, field, fraction_below_one, Field, Key, ParamError};
use crate::{Cause, Dep, FlashOp, Ftl, FtlConfig, FtlEntry, FtlError, FtlParams, Keys};
use storsim_core::{CounterDescriptor, DeviceCounter, Unit};
use storsim_flash::{BlockId, Geometry, NandArray, Ppa};

/// Parameters of the `block` FTL.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    /// Fraction of the physical blocks kept out of the logical space as spare blocks (rounded
    /// up, at least 1: an update copies the block into a spare). Spares give the least-worn
    /// allocation room to spread erases and replace blocks that wear out. Default 0.07.
    pub over_provisioning_fraction: f64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            over_provisioning_fraction: 0.07,
        }
    }
}

/// The `block` FTL's registry entry.
pub const ENTRY: FtlEntry = FtlEntry {
    name: "block",
    description: "block-level mapping: an update copies its block into a spare block",
    keys: Keys(&[&KEYS]),
    defaults: || FtlConfig::new(Params::default()),
    overwrites: true,
    counters: &[COUNTERS],
};

const KEYS: [Key; Params::FIELDS.len()] = params::keys(Params::FIELDS);

impl FtlParams for Params {
    const ENTRY: &'static FtlEntry = &ENTRY;

    /// The keys of `[ssd.block]`, each with the parameter it states.
    const FIELDS: &'static [Field<Self>] = &[field!(over_provisioning_fraction: f64)];

    fn validate(&self, _geometry: &Geometry) -> Result<(), ParamError> {
        fraction_below_one(
            "over_provisioning_fraction",
            self.over_provisioning_fraction,
        )
    }

    fn build(&self, geometry: Geometry, endurance: u32) -> Result<Box<dyn Ftl>, FtlError> {
        new(geometry, endurance, self)
    }
}

/// Builds the FTL over a fresh array.
pub fn new(geometry: Geometry, endurance: u32, params: &Params) -> Result<Box<dyn Ftl>, FtlError> {
    Ok(Box::new(BlockFtl::new(geometry, endurance, params)?))
}

struct BlockFtl {
    flash: Flash,
    logical_pages: u64,
    /// Physical block of each logical block, or [`NONE`] before its first write.
    data_block: Vec<u32>,
    /// One bit per logical page: it holds data (written and not trimmed since).
    valid: Vec<u64>,
    valid_pages: u64,
    block_merges: u64,
    merge_copied_pages: u64,
}

impl BlockFtl {
    fn new(geometry: Geometry, endurance: u32, params: &Params) -> Result<Self, FtlError> {
        blockmap::check_fraction(
            "block",
            "over_provisioning_fraction",
            params.over_provisioning_fraction,
            0.0,
            1.0,
        )?;
        let flash = Flash::new(geometry, endurance)?;
        let blocks = geometry.blocks();
        let spare = blockmap::fraction_of(params.over_provisioning_fraction, blocks).max(1);
        if spare >= blocks {
            return Err(FtlError::Rejected {
                reason: format!(
                    "block: {blocks} blocks leave no logical block after {spare} spare blocks"
                ),
            });
        }
        let data_blocks = blocks - spare;
        let logical_pages = data_blocks as u64 * geometry.pages_per_block as u64;
        Ok(BlockFtl {
            flash,
            logical_pages,
            data_block: vec![NONE; data_blocks as usize],
            valid: vec![0; (logical_pages as usize).div_ceil(64)],
            valid_pages: 0,
            block_merges: 0,
            merge_copied_pages: 0,
        })
    }

    fn is_valid(&self, lpn: u64) -> bool {
        self.valid[(lpn / 64) as usize] >> (lpn % 64) & 1 == 1
    }

    fn set_valid(&mut self, lpn: u64, valid: bool) {
        if self.is_valid(lpn) != valid {
            self.valid[(lpn / 64) as usize] ^= 1 << (lpn % 64);
            if valid {
                self.valid_pages += 1;
            } else {
                self.valid_pages -= 1;
            }
        }
    }

    fn ppa(&self, block: u32, offset: u32) -> Ppa {
        self.flash.geometry.ppa(BlockId(block), offset)
    }

    /// Moves logical block `lbn` out of `old` into a fresh block with the new data of `offset`,
    /// then erases `old`.
    fn copy_block(
        &mut self,
        lbn: u32,
        old: u32,
        offset: u32,
        ops: &mut Vec<FlashOp>,
    ) -> Result<(), FtlError> {
        let fresh = self.flash.take_free()?.0;
        let ppb = self.flash.pages_per_block();
        let first = lbn as u64 * ppb as u64;
        let mut chain = CopyChain::new();
        for o in 0..ppb {
            if o != offset && self.is_valid(first + o as u64) {
                let (from, to) = (self.ppa(old, o), self.ppa(fresh, o));
                chain.copy(&mut self.flash, from, to, ops)?;
                self.merge_copied_pages += 1;
            }
        }
        // The new data depends on nothing read here; it only has to land in the fresh block,
        // which is erased already.
        let target = self.ppa(fresh, offset);
        self.flash.program(target, Cause::Host, Dep::None, ops)?;
        self.flash.erase(BlockId(old), Cause::Merge, ops)?;
        self.data_block[lbn as usize] = fresh;
        self.block_merges += 1;
        Ok(())
    }
}

/// The FTL's counters, in the order `counters` lists them: the SSD reports them as `ftl_NAME`.
pub(crate) const COUNTERS: &[CounterDescriptor] = &[
    CounterDescriptor::new("block_merges", Unit::Count, "Updates that copied a block."),
    CounterDescriptor::new(
        "merge_copied_pages",
        Unit::Pages,
        "Pages copied by those updates.",
    ),
    CounterDescriptor::new(
        "free_blocks",
        Unit::Blocks,
        "Erased blocks in the pool now.",
    ),
];

impl Ftl for BlockFtl {
    fn name(&self) -> &'static str {
        "block"
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
        let block = self.data_block[lbn as usize];
        if block == NONE {
            let fresh = self.flash.take_free()?.0;
            self.data_block[lbn as usize] = fresh;
            let target = self.ppa(fresh, offset);
            self.flash.program(target, Cause::Host, Dep::None, ops)?;
        } else if !self.flash.nand.is_programmed(self.ppa(block, offset)) {
            let target = self.ppa(block, offset);
            self.flash.program(target, Cause::Host, Dep::None, ops)?;
        } else {
            self.copy_block(lbn, block, offset, ops)?;
        }
        self.set_valid(lpn, true);
        Ok(())
    }

    fn trim(&mut self, lpn: u64, _ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        blockmap::split_lpn(lpn, self.logical_pages, self.flash.pages_per_block())?;
        self.set_valid(lpn, false);
        Ok(())
    }

    fn lookup(&self, lpn: u64) -> Option<Ppa> {
        if lpn >= self.logical_pages || !self.is_valid(lpn) {
            return None;
        }
        let ppb = self.flash.pages_per_block() as u64;
        let block = self.data_block[(lpn / ppb) as usize];
        assert_ne!(block, NONE, "a valid page without a data block");
        Some(self.ppa(block, (lpn % ppb) as u32))
    }

    fn valid_data_pages(&self) -> u64 {
        self.valid_pages
    }

    fn reset_counters(&mut self) {
        self.block_merges = 0;
        self.merge_copied_pages = 0;
    }

    fn counters(&self) -> Vec<DeviceCounter> {
        vec![
            DeviceCounter::new("block_merges", self.block_merges as f64),
            DeviceCounter::new("merge_copied_pages", self.merge_copied_pages as f64),
            DeviceCounter::new("free_blocks", self.flash.free_blocks() as f64),
        ]
    }
}
