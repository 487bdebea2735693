//! The `page-static` FTL: the hybrid-disk thesis' page-level FTL without wear levelling
//! (Konanki, Fig. 4.1). Logical page `i` lives at physical page `i` forever. A write to an erased
//! page programs it; a write to a programmed page reads the block's other live pages, erases the
//! block and programs them back together with the new data. Nothing moves, so a hot page wears
//! its block out while the rest of the device stays new: the baseline the thesis compares the
//! other FTLs against. See docs/models/ftl-page-static.md.

use crate::params::{self, field, fraction_up_to_one, Field, Key, ParamError};
use crate::rewrite::{erase_retires, rewrite_pages, Waits};
use crate::{Cause, Dep, FlashOp, Ftl, FtlConfig, FtlEntry, FtlError, FtlParams, Keys};
use storsim_core::{CounterDescriptor, DeviceCounter, Prng, Unit};
use storsim_flash::{BlockId, Geometry, NandArray, Ppa};

/// Parameters of the `page-static` FTL.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    /// Fraction of pages (0.0 ..= 1.0) that start out programmed, for the thesis' "non-clean"
    /// start: each page is programmed independently with this probability when the FTL is
    /// built. Those pages hold data that predates the simulation, so the FTL keeps them across
    /// erases like live data, but they are no host data (`lookup` gives `None`).
    pub prewrite_probability: f64,
    /// Seed of the draw that picks the prewritten pages.
    pub prewrite_seed: u64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            prewrite_probability: 0.0,
            prewrite_seed: 1,
        }
    }
}

/// What a physical page holds, beyond NAND's own programmed bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Content {
    /// Nothing worth keeping: the page is erased, or it was trimmed and waits for its block's
    /// next erase.
    Nothing,
    /// The host's data.
    Host,
    /// Data from before the simulation (prewrite): kept, never looked up.
    Prewritten,
}

struct PageStatic {
    nand: NandArray,
    content: Vec<Content>,
    valid_pages: u64,
    prewritten_pages: u64,
    block_rewrites: u64,
    rewrite_copied_pages: u64,
}

/// The `page-static` FTL's registry entry.
pub const ENTRY: FtlEntry = FtlEntry {
    name: "page-static",
    description:
        "the hybrid-disk thesis' page-level FTL without wear levelling (Konanki, Fig. 4.1): \
         logical page i at physical page i, an update rewrites its block",
    keys: Keys(&[&KEYS]),
    defaults: || FtlConfig::new(Params::default()),
    overwrites: true,
    counters: &[COUNTERS],
};

const KEYS: [Key; Params::FIELDS.len()] = params::keys(Params::FIELDS);

impl FtlParams for Params {
    const ENTRY: &'static FtlEntry = &ENTRY;

    /// The keys of `[ssd.page-static]`, each with the parameter it states.
    const FIELDS: &'static [Field<Self>] = &[
        field!(prewrite_probability: f64),
        field!(prewrite_seed: u64),
    ];

    fn validate(&self, _geometry: &Geometry) -> Result<(), ParamError> {
        fraction_up_to_one("prewrite_probability", self.prewrite_probability)
    }

    fn build(&self, geometry: Geometry, endurance: u32) -> Result<Box<dyn Ftl>, FtlError> {
        new(geometry, endurance, self)
    }
}

/// Builds the FTL over a fresh array, prewriting pages if the parameters ask for it.
pub fn new(geometry: Geometry, endurance: u32, params: &Params) -> Result<Box<dyn Ftl>, FtlError> {
    geometry.validate().map_err(|e| FtlError::Rejected {
        reason: format!("page-static: {e}"),
    })?;
    let p = params.prewrite_probability;
    if !(0.0..=1.0).contains(&p) {
        return Err(FtlError::Rejected {
            reason: format!("page-static: prewrite_probability {p} is outside 0.0 ..= 1.0"),
        });
    }
    let mut nand = NandArray::new(geometry, endurance);
    let pages = geometry.pages() as usize;
    let mut content = vec![Content::Nothing; pages];
    let mut prewritten_pages = 0;
    if p > 0.0 {
        let mut rng = Prng::new(params.prewrite_seed);
        for (i, c) in content.iter_mut().enumerate() {
            if rng.next_f64() < p {
                nand.program(Ppa(i as u32))?;
                *c = Content::Prewritten;
                prewritten_pages += 1;
            }
        }
    }
    Ok(Box::new(PageStatic {
        nand,
        content,
        valid_pages: 0,
        prewritten_pages,
        block_rewrites: 0,
        rewrite_copied_pages: 0,
    }))
}

impl PageStatic {
    fn check(&self, lpn: u64) -> Result<usize, FtlError> {
        let logical_pages = self.logical_pages();
        if lpn >= logical_pages {
            return Err(FtlError::OutOfRange { lpn, logical_pages });
        }
        Ok(lpn as usize)
    }

    /// Checks that the request's pages exist; returns the page after its last.
    fn check_request(&self, first_lpn: u64, pages: u64) -> Result<u64, FtlError> {
        let logical_pages = self.logical_pages();
        match first_lpn.checked_add(pages) {
            Some(end) if end <= logical_pages => Ok(end),
            // Name the first page past the end.
            _ => Err(FtlError::OutOfRange {
                lpn: first_lpn.max(logical_pages),
                logical_pages,
            }),
        }
    }
}

/// The FTL's counters, in the order `counters` lists them: the SSD reports them as `ftl_NAME`.
pub(crate) const COUNTERS: &[CounterDescriptor] = &[
    CounterDescriptor::new(
        "block_rewrites",
        Unit::Count,
        "Read-erase-write cycles (one erase each).",
    ),
    CounterDescriptor::new(
        "rewrite_copied_pages",
        Unit::Pages,
        "Pages read and programmed back by those cycles.",
    ),
    CounterDescriptor::new(
        "prewritten_pages",
        Unit::Pages,
        "Prewritten pages still neither overwritten nor trimmed.",
    ),
];

impl Ftl for PageStatic {
    fn name(&self) -> &'static str {
        "page-static"
    }

    fn logical_pages(&self) -> u64 {
        self.content.len() as u64
    }

    fn nand(&self) -> &NandArray {
        &self.nand
    }

    fn read(&mut self, lpn: u64, ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        let i = self.check(lpn)?;
        // A prewritten page is read too: on a non-clean device it holds data a real host would
        // get back, and the thesis charges the read.
        if self.content[i] != Content::Nothing {
            ops.push(FlashOp::read(Ppa(i as u32), Cause::Host, Dep::None));
        }
        Ok(())
    }

    fn write(&mut self, lpn: u64, ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        // A request of one page: a program, or one rewrite of its block whose erase and
        // programs wait with `Dep::All` for everything before them, as the rewrite is all the
        // call does.
        self.write_request(lpn, 1, ops)
    }

    fn takes_whole_requests(&self) -> bool {
        // Fig. 4.1 erases a block at most once per request.
        true
    }

    fn write_request(
        &mut self,
        first_lpn: u64,
        pages: u64,
        ops: &mut Vec<FlashOp>,
    ) -> Result<(), FtlError> {
        let end = self.check_request(first_lpn, pages)?;
        let geometry = *self.nand.geometry();
        let ppb = geometry.pages_per_block as u64;
        // The request's pages block by block: (block, first page, end page), physical = logical.
        let chunks: Vec<(BlockId, u64, u64)> = {
            let mut chunks = Vec::new();
            let mut lpn = first_lpn;
            while lpn < end {
                let block = geometry.block_of(Ppa(lpn as u32));
                let chunk_end = end.min((lpn / ppb + 1) * ppb);
                chunks.push((block, lpn, chunk_end));
                lpn = chunk_end;
            }
            chunks
        };
        let dirty = |nand: &NandArray, (_, from, to): (BlockId, u64, u64)| {
            (from..to).any(|p| nand.is_programmed(Ppa(p as u32)))
        };
        // Refuse before changing anything, so that a refused request leaves no page half done.
        for &chunk in &chunks {
            if dirty(&self.nand, chunk) && erase_retires(&self.nand, chunk.0) {
                // This erase would retire the block, and its pages have nowhere else to go:
                // refusing keeps the data readable. The count includes the block refused.
                return Err(FtlError::WornOut {
                    retired_blocks: self.nand.retired_blocks() + 1,
                });
            }
        }
        let call_start = ops.len();
        for chunk in chunks {
            let (block, from, to) = chunk;
            if !dirty(&self.nand, chunk) {
                // Every target page is erased: program them, each waiting for nothing.
                for p in from..to {
                    let ppa = Ppa(p as u32);
                    self.nand.program(ppa)?;
                    ops.push(FlashOp::program(ppa, Cause::Host, Dep::None));
                }
            } else {
                // Read the block's other live pages, erase it, program them back with the new
                // data: once for all of this request's pages in the block. The first rewrite of
                // the call waits with `Dep::All` (nothing else precedes it); a later one is a
                // chain of its own, so it does not wait for other blocks' work.
                let waits = if ops.len() == call_start {
                    Waits::All
                } else {
                    Waits::Chain
                };
                let first = geometry.ppa(block, 0).0 as u64;
                let content = &self.content;
                let target = |page: u32| (from..to).contains(&(first + page as u64));
                let copied = rewrite_pages(
                    &mut self.nand,
                    ops,
                    block,
                    block,
                    |page| content[(first + page as u64) as usize] != Content::Nothing,
                    target,
                    Cause::Merge,
                    waits,
                )?;
                // The erase dropped the trimmed pages (their content is already `Nothing`);
                // the live and prewritten ones were programmed back and keep their content.
                self.block_rewrites += 1;
                self.rewrite_copied_pages += copied;
            }
            for p in from..to {
                let c = &mut self.content[p as usize];
                if *c != Content::Host {
                    if *c == Content::Prewritten {
                        self.prewritten_pages -= 1;
                    }
                    *c = Content::Host;
                    self.valid_pages += 1;
                }
            }
        }
        Ok(())
    }

    fn trim(&mut self, lpn: u64, _ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        let i = self.check(lpn)?;
        // The page stays programmed until its block is next erased; the rewrite then drops it
        // instead of copying it back.
        match self.content[i] {
            Content::Host => self.valid_pages -= 1,
            Content::Prewritten => self.prewritten_pages -= 1,
            Content::Nothing => {}
        }
        self.content[i] = Content::Nothing;
        Ok(())
    }

    fn lookup(&self, lpn: u64) -> Option<Ppa> {
        match self.content.get(lpn as usize) {
            Some(Content::Host) => Some(Ppa(lpn as u32)),
            _ => None,
        }
    }

    fn valid_data_pages(&self) -> u64 {
        self.valid_pages
    }

    fn reset_counters(&mut self) {
        self.block_rewrites = 0;
        self.rewrite_copied_pages = 0;
    }

    fn counters(&self) -> Vec<DeviceCounter> {
        vec![
            DeviceCounter::new("block_rewrites", self.block_rewrites as f64),
            DeviceCounter::new("rewrite_copied_pages", self.rewrite_copied_pages as f64),
            DeviceCounter::new("prewritten_pages", self.prewritten_pages as f64),
        ]
    }
}
