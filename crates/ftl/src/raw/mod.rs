//! The `raw` FTL: no translation at all, for flash-aware file systems (YAFFS, JFFS2, UBIFS)
//! that manage the flash themselves, as the hybrid-disk thesis' flash module allows (Konanki,
//! §3.1). Logical page `i` is physical page `i`. A write programs that page and is rejected if
//! the page is not erased; a trim discards a page, and once every programmed page of a block is
//! discarded the block is erased, which is how a raw user asks for an erase. See
//! docs/models/ftl-raw.md.

use crate::params::{Field, ParamError};
use crate::{Cause, Dep, FlashOp, Ftl, FtlConfig, FtlEntry, FtlError, FtlParams, Keys};
use storsim_core::{CounterDescriptor, DeviceCounter, Unit};
use storsim_flash::{Geometry, NandArray, Ppa};

/// Parameters of the `raw` FTL: there are none, the host decides everything.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Params {}

struct Raw {
    nand: NandArray,
    /// Programmed pages the host has discarded since their block's last erase.
    discarded: Vec<bool>,
    discarded_in_block: Vec<u32>,
    valid_pages: u64,
    rejected_programs: u64,
    trim_erases: u64,
}

/// The `raw` FTL's registry entry.
pub const ENTRY: FtlEntry = FtlEntry {
    name: "raw",
    description:
        "no translation, for flash-aware file systems: logical page i is physical page i, \
         discarding every page of a block erases it",
    keys: Keys(&[]),
    defaults: || FtlConfig::new(Params::default()),
    overwrites: false,
    counters: &[COUNTERS],
};

impl FtlParams for Params {
    const ENTRY: &'static FtlEntry = &ENTRY;
    const FIELDS: &'static [Field<Self>] = &[];

    fn validate(&self, _geometry: &Geometry) -> Result<(), ParamError> {
        Ok(())
    }

    fn build(&self, geometry: Geometry, endurance: u32) -> Result<Box<dyn Ftl>, FtlError> {
        new(geometry, endurance, self)
    }
}

/// Builds the FTL over a fresh array.
pub fn new(geometry: Geometry, endurance: u32, _params: &Params) -> Result<Box<dyn Ftl>, FtlError> {
    geometry.validate().map_err(|e| FtlError::Rejected {
        reason: format!("raw: {e}"),
    })?;
    Ok(Box::new(Raw {
        nand: NandArray::new(geometry, endurance),
        discarded: vec![false; geometry.pages() as usize],
        discarded_in_block: vec![0; geometry.blocks() as usize],
        valid_pages: 0,
        rejected_programs: 0,
        trim_erases: 0,
    }))
}

impl Raw {
    fn check(&self, lpn: u64) -> Result<Ppa, FtlError> {
        let logical_pages = self.logical_pages();
        if lpn >= logical_pages {
            return Err(FtlError::OutOfRange { lpn, logical_pages });
        }
        Ok(Ppa(lpn as u32))
    }

    /// Whether the page holds data the host has not discarded.
    fn live(&self, ppa: Ppa) -> bool {
        self.nand.is_programmed(ppa) && !self.discarded[ppa.0 as usize]
    }
}

/// The FTL's counters, in the order `counters` lists them: the SSD reports them as `ftl_NAME`.
pub(crate) const COUNTERS: &[CounterDescriptor] = &[
    CounterDescriptor::new(
        "rejected_programs",
        Unit::Count,
        "Writes refused because the page was not erased or its block is retired.",
    ),
    CounterDescriptor::new(
        "trim_erases",
        Unit::Count,
        "Block erases caused by discards.",
    ),
];

impl Ftl for Raw {
    fn name(&self) -> &'static str {
        "raw"
    }

    fn logical_pages(&self) -> u64 {
        self.discarded.len() as u64
    }

    fn nand(&self) -> &NandArray {
        &self.nand
    }

    fn read(&mut self, lpn: u64, ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        let ppa = self.check(lpn)?;
        if self.live(ppa) {
            ops.push(FlashOp::read(ppa, Cause::Host, Dep::None));
        }
        Ok(())
    }

    fn write(&mut self, lpn: u64, ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        let ppa = self.check(lpn)?;
        let geometry = *self.nand.geometry();
        let block = geometry.block_of(ppa);
        let page = geometry.page_in_block(ppa);
        let reason = if self.nand.is_retired(block) {
            Some(format!(
                "raw flash: page {lpn} is in block {} (page {page}), which is worn out and retired",
                block.0
            ))
        } else if self.nand.is_programmed(ppa) {
            let state = if self.discarded[ppa.0 as usize] {
                "was discarded but its block still holds other data"
            } else {
                "holds data"
            };
            Some(format!(
                "raw flash: page {lpn} (block {}, page {page}) is not erased: it {state}; \
                 trim every programmed page of the block to erase it before programming again",
                block.0
            ))
        } else {
            None
        };
        if let Some(reason) = reason {
            self.rejected_programs += 1;
            return Err(FtlError::Rejected { reason });
        }
        self.nand.program(ppa)?;
        ops.push(FlashOp::program(ppa, Cause::Host, Dep::None));
        self.valid_pages += 1;
        Ok(())
    }

    fn trim(&mut self, lpn: u64, ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        let ppa = self.check(lpn)?;
        if !self.live(ppa) {
            return Ok(());
        }
        let geometry = *self.nand.geometry();
        let block = geometry.block_of(ppa);
        self.discarded[ppa.0 as usize] = true;
        self.discarded_in_block[block.0 as usize] += 1;
        self.valid_pages -= 1;
        // The last live page of the block is gone: erase it, as a flash file system erases a
        // block once it holds nothing but obsolete pages.
        if self.discarded_in_block[block.0 as usize] == self.nand.programmed_pages(block) {
            self.nand.erase(block)?;
            ops.push(FlashOp::erase(
                geometry.ppa(block, 0),
                Cause::Host,
                Dep::None,
            ));
            let first = geometry.ppa(block, 0).0 as usize;
            self.discarded[first..first + geometry.pages_per_block as usize].fill(false);
            self.discarded_in_block[block.0 as usize] = 0;
            self.trim_erases += 1;
        }
        Ok(())
    }

    fn lookup(&self, lpn: u64) -> Option<Ppa> {
        let ppa = self.check(lpn).ok()?;
        self.live(ppa).then_some(ppa)
    }

    fn valid_data_pages(&self) -> u64 {
        self.valid_pages
    }

    fn reset_counters(&mut self) {
        self.rejected_programs = 0;
        self.trim_erases = 0;
    }

    fn counters(&self) -> Vec<DeviceCounter> {
        vec![
            DeviceCounter::new("rejected_programs", self.rejected_programs as f64),
            DeviceCounter::new("trim_erases", self.trim_erases as f64),
        ]
    }
}
