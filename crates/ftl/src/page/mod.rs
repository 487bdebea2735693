//! The `page` FTL: page-level mapping with log-structured allocation striped over channels,
//! dies and planes, garbage collection and wear levelling. See docs/models/ftl-page.md.
//!
//! Every logical page maps to any physical page. Writes go to the write frontier (one open
//! block per plane) of the next plane in striped order ([`Geometry::striped_plane`]), so
//! consecutive writes land on different channels, then dies, then planes. When a plane's free
//! blocks fall below the low watermark, the garbage collector (policy in [`crate::gc`])
//! collects victims in that plane before the host's program, which waits for it.

pub(crate) mod core;

use self::core::{base_logical_pages, Core, NoHooks};
use crate::gc::GcPolicy;
use crate::{FlashOp, Ftl, FtlError};
use storsim_core::DeviceCounter;
use storsim_flash::{Geometry, NandArray, Ppa};

/// Parameters of the `page` FTL (and of the page-mapped data side of `dftl`).
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    /// Fraction of the physical pages hidden from the host:
    /// `logical_pages = floor(physical_pages × (1 − fraction))`. Default 0.07.
    pub over_provisioning_fraction: f64,
    /// How garbage collection picks a victim block. Default greedy.
    pub gc_policy: GcPolicy,
    /// Foreground garbage collection runs in a plane, before a host write to it, while that
    /// plane has fewer free blocks than this. At least 2 (one block for the copies, one for
    /// the host). Default 2.
    pub gc_low_watermark_blocks: u32,
    /// Collect garbage in idle time ([`Ftl::idle`], one victim per call). Default off.
    pub gc_background: bool,
    /// Background garbage collection works on planes with fewer free blocks than this.
    /// Default 8.
    pub gc_high_watermark_blocks: u32,
    /// Dynamic wear levelling: open the least-worn free block of a plane rather than the one
    /// erased longest ago. Default on.
    pub dynamic_wl: bool,
    /// Static wear levelling: when the most- and least-worn live blocks differ by more than
    /// this many erases, move the data out of a cold block. `None` is off. Default 100.
    pub static_wl_threshold_erases: Option<u32>,
    /// Static wear levelling moves at most one block per this many erases (of any cause), so
    /// that it costs at most about 1 / this of the erases. Default 8.
    pub static_wl_erases_per_move: u32,
    /// Seed of the random choices (the random and d-choices victim policies).
    pub seed: u64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            over_provisioning_fraction: 0.07,
            gc_policy: GcPolicy::Greedy,
            gc_low_watermark_blocks: 2,
            gc_background: false,
            gc_high_watermark_blocks: 8,
            dynamic_wl: true,
            static_wl_threshold_erases: Some(100),
            static_wl_erases_per_move: 8,
            seed: 0,
        }
    }
}

/// Builds the FTL over a fresh array.
pub fn new(geometry: Geometry, endurance: u32, params: &Params) -> Result<Box<dyn Ftl>, FtlError> {
    let logical = base_logical_pages(&geometry, params);
    let core = Core::new(geometry, endurance, params, logical, 0)?;
    Ok(Box::new(PageFtl { core }))
}

struct PageFtl {
    core: Core,
}

impl Ftl for PageFtl {
    fn name(&self) -> &'static str {
        "page"
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
        self.core.host_read(lpn, ops, start)
    }

    #[inline]
    fn write(&mut self, lpn: u64, ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        let lpn = self.core.check_lpn(lpn)?;
        let start = ops.len();
        self.core.host_write(lpn, ops, start, &mut NoHooks)
    }

    fn trim(&mut self, lpn: u64, _ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        let lpn = self.core.check_lpn(lpn)?;
        self.core.host_trim(lpn);
        Ok(())
    }

    fn lookup(&self, lpn: u64) -> Option<Ppa> {
        self.core.lookup(lpn)
    }

    fn prefetch(&self, lpn: u64) {
        self.core.prefetch(lpn);
    }

    fn valid_data_pages(&self) -> u64 {
        self.core.valid_data_pages()
    }

    fn idle(&mut self, ops: &mut Vec<FlashOp>) -> Result<bool, FtlError> {
        self.core.idle(ops, &mut NoHooks)
    }

    fn counters(&self) -> Vec<DeviceCounter> {
        let mut out = Vec::with_capacity(12);
        self.core.push_counters(&mut out);
        out
    }
}
