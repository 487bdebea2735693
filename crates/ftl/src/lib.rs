//! Flash translation layers. An FTL turns host page reads, writes and trims into NAND
//! operations (page read, page program, block erase) including the garbage-collection, merge,
//! mapping-table and wear-levelling traffic they cause. It decides *what* happens, never *when*:
//! no FTL sees a clock; the SSD model places the operations on channel and die timelines.
//!
//! Every FTL keeps a [`NandArray`] and applies its own operations to it, so NAND's rules (one
//! program per page between erases, worn-out blocks retired) are enforced for every FTL alike,
//! and one conformance suite ([`conformance`]) checks them all.

pub mod anand;
pub mod block;
mod blockmap;
pub mod conformance;
pub mod dftl;
pub mod fast;
pub mod fmax;
pub mod gc;
pub mod log_block;
mod op;
pub mod page;
pub mod page_static;
pub mod raw;
mod table;
pub mod wear;

pub use op::{Cause, Dep, FlashOp, FtlError};

use storsim_core::DeviceCounter;
use storsim_flash::{Geometry, NandArray, Ppa};

/// Which FTL, with its parameters: what a device description chooses.
#[derive(Clone, Debug, PartialEq)]
pub enum FtlConfig {
    Page(page::Params),
    PageStatic(page_static::Params),
    Block(block::Params),
    LogBlock(log_block::Params),
    Fast(fast::Params),
    Dftl(dftl::Params),
    Anand(anand::Params),
    Fmax(fmax::Params),
    Raw(raw::Params),
}

impl FtlConfig {
    /// The names device files use, in the order of this enum.
    pub const NAMES: [&'static str; 9] = [
        "page",
        "page-static",
        "block",
        "log-block",
        "fast",
        "dftl",
        "anand",
        "fmax",
        "raw",
    ];

    pub fn name(&self) -> &'static str {
        let i = match self {
            FtlConfig::Page(_) => 0,
            FtlConfig::PageStatic(_) => 1,
            FtlConfig::Block(_) => 2,
            FtlConfig::LogBlock(_) => 3,
            FtlConfig::Fast(_) => 4,
            FtlConfig::Dftl(_) => 5,
            FtlConfig::Anand(_) => 6,
            FtlConfig::Fmax(_) => 7,
            FtlConfig::Raw(_) => 8,
        };
        Self::NAMES[i]
    }

    /// The FTL with default parameters, by name.
    pub fn default_for(name: &str) -> Option<FtlConfig> {
        Some(match name {
            "page" => FtlConfig::Page(Default::default()),
            "page-static" => FtlConfig::PageStatic(Default::default()),
            "block" => FtlConfig::Block(Default::default()),
            "log-block" => FtlConfig::LogBlock(Default::default()),
            "fast" => FtlConfig::Fast(Default::default()),
            "dftl" => FtlConfig::Dftl(Default::default()),
            "anand" => FtlConfig::Anand(Default::default()),
            "fmax" => FtlConfig::Fmax(Default::default()),
            "raw" => FtlConfig::Raw(Default::default()),
            _ => return None,
        })
    }

    /// Builds the FTL over a fresh NAND array of `geometry` whose blocks survive `endurance`
    /// erases.
    pub fn build(&self, geometry: Geometry, endurance: u32) -> Result<Box<dyn Ftl>, FtlError> {
        match self {
            FtlConfig::Page(p) => page::new(geometry, endurance, p),
            FtlConfig::PageStatic(p) => page_static::new(geometry, endurance, p),
            FtlConfig::Block(p) => block::new(geometry, endurance, p),
            FtlConfig::LogBlock(p) => log_block::new(geometry, endurance, p),
            FtlConfig::Fast(p) => fast::new(geometry, endurance, p),
            FtlConfig::Dftl(p) => dftl::new(geometry, endurance, p),
            FtlConfig::Anand(p) => anand::new(geometry, endurance, p),
            FtlConfig::Fmax(p) => fmax::new(geometry, endurance, p),
            FtlConfig::Raw(p) => raw::new(geometry, endurance, p),
        }
    }
}

/// A flash translation layer over one NAND array.
///
/// Logical pages are numbered `0..logical_pages()`; each is one flash page of data. Operations
/// are appended to `ops` in an order the SSD can execute: see [`Dep`]. FTLs are `Send` because
/// the devices holding them are (see `storsim_core::Device`).
pub trait Ftl: Send {
    /// The FTL's name as used in device files (`page`, `dftl`, ...).
    fn name(&self) -> &'static str;

    /// Logical pages the host can address (physical pages minus over-provisioning and whatever
    /// the FTL reserves for itself).
    fn logical_pages(&self) -> u64;

    /// The NAND array as the FTL has left it.
    fn nand(&self) -> &NandArray;

    /// Reads logical page `lpn`. A page never written (or trimmed) needs no flash read.
    fn read(&mut self, lpn: u64, ops: &mut Vec<FlashOp>) -> Result<(), FtlError>;

    /// Writes logical page `lpn`, including any garbage collection or merge it forces first.
    fn write(&mut self, lpn: u64, ops: &mut Vec<FlashOp>) -> Result<(), FtlError>;

    /// A hint that logical page `lpn` is about to be read or written: the FTL may start
    /// loading the mapping state that access will touch, so that it finds it in the
    /// processor's caches. It changes nothing the FTL computes. The default does nothing.
    fn prefetch(&self, _lpn: u64) {}

    /// Whether the SSD should hand this FTL each host write whole, through
    /// [`Ftl::write_request`], instead of calling [`Ftl::write`] once per page.
    ///
    /// Most FTLs decide page by page, and the SSD schedules each page's operations as a call of
    /// its own, so that a [`Dep::All`] in one page's operations waits only for that page's work.
    /// An FTL whose algorithm is defined on whole requests says yes here: the hybrid-disk
    /// thesis' page-level FTL (`page-static`, Fig. 4.1) reads, erases and rewrites a block at
    /// most once per request, which it cannot know when it sees one page at a time (a request
    /// of `n` pages into a programmed block would erase that block `n` times). The default
    /// keeps the page-by-page calls, and with them every other FTL's operations and timing.
    fn takes_whole_requests(&self) -> bool {
        false
    }

    /// Writes the `pages` logical pages from `first_lpn` on as one host request, appending the
    /// operations of the whole request to `ops` as one call: their [`Dep`]s are relative to
    /// this list, and the SSD schedules it at once.
    ///
    /// The default writes page by page with [`Ftl::write`] and stops at the first error (the
    /// pages before it stay written). Its operations are what the per-page calls would emit,
    /// but scheduled as one list a [`Dep::All`] would also wait for the earlier pages' work,
    /// so the SSD only calls this when [`Ftl::takes_whole_requests`] says so; tests and tools
    /// that count operations may call it on any FTL.
    fn write_request(
        &mut self,
        first_lpn: u64,
        pages: u64,
        ops: &mut Vec<FlashOp>,
    ) -> Result<(), FtlError> {
        for lpn in first_lpn..first_lpn.saturating_add(pages) {
            self.write(lpn, ops)?;
        }
        Ok(())
    }

    /// Forgets logical page `lpn`: later reads need no flash access and its physical page is
    /// no longer valid. FTLs that cannot unmap cheaply may keep the data; reads of a trimmed
    /// page must still not return a location (see [`Ftl::lookup`]).
    fn trim(&mut self, lpn: u64, ops: &mut Vec<FlashOp>) -> Result<(), FtlError>;

    /// Where the current data of `lpn` lives, or `None` if it has none. The conformance suite
    /// checks this against a shadow map of every write.
    fn lookup(&self, lpn: u64) -> Option<Ppa>;

    /// Physical pages holding current data. With the FTL's own metadata pages excluded, this
    /// equals the number of logical pages that have data.
    fn valid_data_pages(&self) -> u64;

    /// Work the FTL wants to do while the device is idle (background garbage collection).
    /// Appends at most one unit of work (for example one victim block) and returns whether it
    /// did anything; the SSD calls it again while the device stays idle.
    fn idle(&mut self, _ops: &mut Vec<FlashOp>) -> Result<bool, FtlError> {
        Ok(false)
    }

    /// FTL-specific counters (GC invocations, merges by kind, mapping-cache hits, ...), with
    /// units in their names, in a fixed order.
    fn counters(&self) -> Vec<DeviceCounter>;
}
