//! The SLC write cache on the core (docs/models/slc-cache.md): host writes into blocks run one
//! bit a cell, a static region of blocks kept so and a dynamic one taken from the free pools
//! while the logical space has room, and folding, which moves a cache block's valid pages into
//! the plane's native write frontier and erases it.
//!
//! A cache block programs its first `slc_pages_per_block` pages only; it is never a garbage
//! collection or wear-levelling candidate (its state is [`BlockState::Cached`] once full), and
//! its operations carry [`storsim_flash::CellMode::Slc`] so that the SSD times them at SLC speed.

use super::{BlockState, Core, Hooks, HostTarget, PageKind, NONE};
use crate::{Cause, Dep, FlashOp, FtlError, SlcCache, WhenFull};
use std::collections::VecDeque;
use storsim_flash::{BlockId, Ppa};

/// Which cache a block belongs to, if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SlcRole {
    /// A block at the cells' native density (or free).
    Native,
    /// One of the static region's blocks: always in SLC mode, free or not.
    Static,
    /// A free block taken into SLC mode; it returns to the free pool when folded.
    Dynamic,
}

/// Where a fold puts the pages it moves ([`Core::alloc_fold_page`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Spread {
    OwnPlane,
    Striped,
}

/// One plane's cache.
#[derive(Default)]
struct SlcPlane {
    /// Erased static blocks.
    static_free: Vec<u32>,
    /// The open cache block, or [`NONE`], and its next page.
    open: u32,
    wp: u32,
    /// Full cache blocks, oldest first: the folding order.
    full: VecDeque<u32>,
}

#[derive(Clone, Debug, Default)]
struct SlcCounters {
    host_pages: u64,
    direct_pages: u64,
    folded_pages: u64,
    folded_blocks: u64,
    inline_folds: u64,
    budget_folds: u64,
}

/// The cache's state.
pub(crate) struct Slc {
    params: SlcCache,
    planes: Vec<SlcPlane>,
    /// Static blocks still alive (not retired), device-wide.
    static_blocks: u64,
    /// Static blocks holding data or open.
    static_used: u64,
    /// Dynamic blocks holding data or open.
    dynamic_used: u64,
    /// Host pages whose current copy is in a cache block.
    pub(super) valid_pages: u64,
    fold_cursor: u32,
    /// The position in striped order of the plane the next folded page goes to.
    fold_stripe: u32,
    counters: SlcCounters,
}

impl Core {
    /// Sets the cache up on a core that has written nothing yet: takes each plane's static
    /// blocks out of its free pool. Refuses a cache that leaves garbage collection too little
    /// spare space, or one that does not fit the geometry.
    pub(crate) fn set_slc_cache(&mut self, cache: &SlcCache) -> Result<(), FtlError> {
        let rejected = |reason: String| FtlError::Rejected { reason };
        if self.slc.is_some() {
            return Err(rejected("the SLC cache is already set".into()));
        }
        if cache.slc_pages_per_block == 0 || cache.slc_pages_per_block > self.ppb {
            return Err(rejected(format!(
                "an SLC-mode block of {} pages does not fit a block of {} pages",
                cache.slc_pages_per_block, self.ppb
            )));
        }
        if self.data_valid > 0 || self.counters.host_writes > 0 {
            return Err(rejected(
                "the SLC cache must be set before anything is written".into(),
            ));
        }
        let static_pages =
            cache.static_blocks_per_plane as u64 * self.planes as u64 * self.ppb as u64;
        let pages = self.p2l.len() as u64;
        let needed = self.logical_pages as u64
            + self.meta_l2p.len() as u64
            + 2 * self.planes as u64 * self.ppb as u64
            + static_pages;
        if needed > pages || cache.static_blocks_per_plane >= self.blocks_per_plane {
            return Err(rejected(format!(
                "{} static SLC blocks per plane leave too little spare space: {} logical pages \
                 and garbage collection's two blocks per plane need {} of the {pages} physical \
                 pages; shrink the static cache or raise over-provisioning",
                cache.static_blocks_per_plane,
                self.logical_pages,
                needed - static_pages
            )));
        }
        let mut planes: Vec<SlcPlane> = (0..self.planes)
            .map(|_| SlcPlane {
                open: NONE,
                ..SlcPlane::default()
            })
            .collect();
        for (p, sp) in planes.iter_mut().enumerate() {
            for _ in 0..cache.static_blocks_per_plane {
                let b = self.plane[p]
                    .free
                    .pop()
                    .expect("a fresh plane has every block free");
                self.blocks[b as usize].slc = SlcRole::Static;
                self.nand
                    .set_endurance(BlockId(b), cache.static_endurance_erases);
                self.wear.leave(self.nand.erase_count(BlockId(b)));
                sp.static_free.push(b);
            }
            // Popped in the pool's order, used in it too.
            sp.static_free.reverse();
        }
        // The static blocks came out of the spare space: the device wears out that much sooner.
        self.min_live_blocks += cache.static_blocks_per_plane * self.planes;
        self.slc = Some(Box::new(Slc {
            params: *cache,
            static_blocks: cache.static_blocks_per_plane as u64 * self.planes as u64,
            planes,
            static_used: 0,
            dynamic_used: 0,
            valid_pages: 0,
            fold_cursor: 0,
            fold_stripe: 0,
            counters: SlcCounters::default(),
        }));
        Ok(())
    }

    /// Dynamic cache blocks allowed now: the configured most, and no more blocks than the free
    /// logical space fills, so that the cache holds at most that space over the cells' bits
    /// and shrinks as the drive fills.
    fn dynamic_allowed(&self, slc: &Slc) -> u64 {
        let free_logical = (self.logical_pages as u64).saturating_sub(self.data_valid);
        slc.params
            .dynamic_max_blocks
            .min(free_logical / self.ppb as u64)
    }

    /// Where a host write of `lpn` goes with the cache on: plane `p`'s open cache block, a new
    /// one (static first, then dynamic), or, when the cache has no room, what `when_full`
    /// says.
    pub(super) fn slc_target<H: Hooks>(
        &mut self,
        lpn: u32,
        ops: &mut Vec<FlashOp>,
        hooks: &mut H,
    ) -> Result<HostTarget, FtlError> {
        let p = self.first_host_plane(lpn);
        if self.plane[p as usize].free.len() < self.low_watermark {
            self.foreground_gc(p, ops, hooks)?;
        }
        if self.slc_room(p) || self.open_slc_block(p) {
            return Ok(HostTarget {
                plane: p,
                slc: true,
            });
        }
        let fold = self.slc.as_ref().expect("the cache is on").params.when_full == WhenFull::Fold;
        if fold && self.fold_oldest(p, ops, hooks)? {
            self.slc
                .as_mut()
                .expect("the cache is on")
                .counters
                .inline_folds += 1;
            if self.open_slc_block(p) {
                return Ok(HostTarget {
                    plane: p,
                    slc: true,
                });
            }
        }
        let plane = self.host_plane_from(p, ops, hooks)?;
        Ok(HostTarget { plane, slc: false })
    }

    /// Folds dynamic cache blocks while the dynamic cache holds more blocks than the free
    /// logical space allows (writes straight to native blocks filled it), at most one per
    /// plane: the blocks must go back to the free pools before the native data runs out of
    /// room. Returns whether it folded any.
    pub(crate) fn fold_for_budget<H: Hooks>(
        &mut self,
        ops: &mut Vec<FlashOp>,
        hooks: &mut H,
    ) -> Result<bool, FtlError> {
        let mut folded = 0;
        while folded < self.planes && self.dynamic_over_budget() {
            let slc = self.slc.as_deref_mut().expect("over budget means a cache");
            let p = slc.fold_cursor;
            slc.fold_cursor = (p + 1) % self.planes;
            if !self.fold_for_space(p, ops, hooks)? {
                break;
            }
            folded += 1;
        }
        let slc = self.slc.as_deref_mut();
        if let Some(slc) = slc {
            slc.counters.budget_folds += folded as u64;
        }
        Ok(folded > 0)
    }

    /// Whether the dynamic cache holds more blocks than the free logical space allows.
    fn dynamic_over_budget(&self) -> bool {
        self.slc
            .as_deref()
            .is_some_and(|s| s.dynamic_used > self.dynamic_allowed(s))
    }

    /// Folds the oldest dynamic cache block of plane `p`, or of the next plane that has one,
    /// full blocks before open ones, to give its block back to the free pool. Returns whether
    /// it did.
    fn fold_for_space<H: Hooks>(
        &mut self,
        p: u32,
        ops: &mut Vec<FlashOp>,
        hooks: &mut H,
    ) -> Result<bool, FtlError> {
        for k in 0..self.planes {
            let q = ((p + k) % self.planes) as usize;
            let slc = self.slc.as_deref().expect("the cache is on");
            let full = slc.planes[q]
                .full
                .iter()
                .position(|&b| self.blocks[b as usize].slc == SlcRole::Dynamic);
            if let Some(i) = full {
                let b = slc.planes[q].full[i];
                if self.fold_fits(b) {
                    let sp = &mut self.slc.as_mut().expect("the cache is on").planes[q];
                    sp.full.remove(i);
                    self.fold(b, ops, hooks)?;
                    return Ok(true);
                }
            }
            let open = slc.planes[q].open;
            if open != NONE
                && self.blocks[open as usize].slc == SlcRole::Dynamic
                && self.fold_fits(open)
            {
                self.slc.as_mut().expect("the cache is on").planes[q].open = NONE;
                self.fold(open, ops, hooks)?;
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Whether plane `p`'s open cache block has room.
    pub(super) fn slc_room(&self, p: u32) -> bool {
        let Some(slc) = &self.slc else {
            return false;
        };
        let sp = &slc.planes[p as usize];
        sp.open != NONE && sp.wp < slc.params.slc_pages_per_block
    }

    /// Opens a cache block in plane `p`: a free static one, else a free block of the plane if
    /// the dynamic cache may grow and the plane keeps more free blocks than garbage
    /// collection's low watermark. Returns whether it did.
    fn open_slc_block(&mut self, p: u32) -> bool {
        let low_watermark = self.low_watermark;
        let allowed = self.slc.as_deref().map(|s| self.dynamic_allowed(s));
        let Some(slc) = self.slc.as_deref_mut() else {
            return false;
        };
        let sp = &mut slc.planes[p as usize];
        let b = if let Some(b) = sp.static_free.pop() {
            slc.static_used += 1;
            b
        } else if slc.dynamic_used < allowed.unwrap_or(0)
            && self.plane[p as usize].free.len() > low_watermark
        {
            let b = self.plane[p as usize]
                .free
                .pop()
                .expect("the plane has free blocks");
            self.blocks[b as usize].slc = SlcRole::Dynamic;
            slc.dynamic_used += 1;
            b
        } else {
            return false;
        };
        sp.open = b;
        sp.wp = 0;
        self.blocks[b as usize].state = BlockState::Open;
        self.blocks[b as usize].kind = PageKind::Data;
        true
    }

    /// The host's program of `lpn` into plane `p`'s open cache block (which has room).
    pub(super) fn program_slc(
        &mut self,
        p: u32,
        lpn: u32,
        ops: &mut Vec<FlashOp>,
        dep: Dep,
    ) -> Result<u32, FtlError> {
        let slc = self.slc.as_deref_mut().expect("the cache is on");
        let sp = &mut slc.planes[p as usize];
        let b = sp.open;
        let ppa = b * self.ppb + sp.wp;
        sp.wp += 1;
        let full = sp.wp == slc.params.slc_pages_per_block;
        if full {
            sp.open = NONE;
            sp.full.push_back(b);
        }
        slc.valid_pages += 1;
        slc.counters.host_pages += 1;
        self.nand.program(Ppa(ppa))?;
        ops.push(FlashOp::program(Ppa(ppa), Cause::Host, dep).in_slc_mode());
        self.p2l[ppa as usize] = lpn;
        let meta = &mut self.blocks[b as usize];
        meta.valid += 1;
        meta.modified = self.counters.host_writes;
        if full {
            meta.state = BlockState::Cached;
        }
        Ok(ppa)
    }

    /// Counts a host page written to a native block while the cache is on.
    pub(super) fn count_direct_write(&mut self) {
        if let Some(slc) = self.slc.as_deref_mut() {
            slc.counters.direct_pages += 1;
        }
    }

    /// Folds plane `p`'s oldest full cache block, if there is one and its valid pages fit the
    /// plane's native space. Returns whether it did.
    fn fold_oldest<H: Hooks>(
        &mut self,
        p: u32,
        ops: &mut Vec<FlashOp>,
        hooks: &mut H,
    ) -> Result<bool, FtlError> {
        let Some(b) = self.take_oldest(p) else {
            return Ok(false);
        };
        self.fold(b, ops, hooks)?;
        Ok(true)
    }

    /// Plane `p`'s oldest full cache block, taken off its list, if there is one and its valid
    /// pages fit ([`Core::fold_fits`]).
    fn take_oldest(&mut self, p: u32) -> Option<u32> {
        let &b = self.slc.as_ref()?.planes[p as usize].full.front()?;
        if !self.fold_fits(b) {
            return None;
        }
        self.slc.as_mut()?.planes[p as usize].full.pop_front()
    }

    /// One unit of folding: in each plane, from the one after the last unit's, the oldest full
    /// cache block, or the open one when none is full. Returns whether it folded anything.
    ///
    /// Every block's copies come first and the erases last: an erase waits for everything its
    /// call placed before it, so an erase between two blocks' copies would hold the second
    /// block's reads on a shared die until the first block's programs, striped over every
    /// die, were all done, and the blocks of a unit would fold one after the other. The
    /// blocks stay out of the free pools until their erases, so no copy lands in one.
    pub(crate) fn fold_unit<H: Hooks>(
        &mut self,
        ops: &mut Vec<FlashOp>,
        hooks: &mut H,
    ) -> Result<bool, FtlError> {
        let Some(cursor) = self.slc.as_ref().map(|s| s.fold_cursor) else {
            return Ok(false);
        };
        self.apply_invalidations();
        let mut folded = Vec::new();
        for k in 0..self.planes {
            let p = (cursor + k) % self.planes;
            let b = match self.take_oldest(p) {
                Some(b) => b,
                None => {
                    let sp = &self.slc.as_ref().expect("the cache is on").planes[p as usize];
                    let (b, wp) = (sp.open, sp.wp);
                    if b == NONE || wp == 0 || !self.fold_fits(b) {
                        continue;
                    }
                    self.slc.as_mut().expect("the cache is on").planes[p as usize].open = NONE;
                    b
                }
            };
            self.fold_copies(b, Spread::OwnPlane, ops, hooks)?;
            folded.push(b);
        }
        for &b in &folded {
            self.fold_erase(b, ops)?;
        }
        if !folded.is_empty() {
            self.slc.as_mut().expect("the cache is on").fold_cursor = (cursor + 1) % self.planes;
        }
        Ok(!folded.is_empty())
    }

    /// Whether the valid pages of cache block `b` fit where folding puts them
    /// ([`Core::alloc_fold_page`]): native frontiers and free blocks, every plane keeping one
    /// free block for garbage collection.
    fn fold_fits(&self, b: u32) -> bool {
        let need = self.blocks[b as usize].valid as u64;
        let mut room = 0;
        for k in 0..self.planes {
            let pl = &self.plane[((b / self.blocks_per_plane + k) % self.planes) as usize];
            let open = if pl.open != NONE { self.ppb - pl.wp } else { 0 } as u64;
            room += open + pl.free.len().saturating_sub(1) as u64 * self.ppb as u64;
            if room >= need {
                return true;
            }
        }
        false
    }

    /// Where the next page folded out of a block of plane `from` goes: with `Spread::Striped`,
    /// the native frontier of the next plane in striped order that has room, as host writes
    /// are striped: a single block folded alone then uses every die, where its own plane would
    /// hold one die for the whole block (tens of milliseconds of TLC programs) while the
    /// others wait. With `Spread::OwnPlane` (a unit folding a block in every plane), the
    /// block's own plane, then the next ones: each die then reads and programs its own blocks'
    /// pages without waiting for another die's reads, which would leave gaps in its timeline.
    fn alloc_fold_page(&mut self, from: u32, spread: Spread) -> Option<u32> {
        match spread {
            Spread::OwnPlane => {
                (0..self.planes).find_map(|k| self.alloc_data_page((from + k) % self.planes, 2))
            }
            Spread::Striped => {
                let slc = self.slc.as_deref_mut().expect("the cache is on");
                let start = slc.fold_stripe;
                slc.fold_stripe = (start + 1) % self.planes;
                (0..self.planes).find_map(|k| {
                    let p = self.stripe[((start + k) % self.planes) as usize];
                    self.alloc_data_page(p, 2)
                })
            }
        }
    }

    /// Folds cache block `b` (taken off its plane's lists): its copies, then its erase.
    fn fold<H: Hooks>(
        &mut self,
        b: u32,
        ops: &mut Vec<FlashOp>,
        hooks: &mut H,
    ) -> Result<(), FtlError> {
        self.fold_copies(b, Spread::Striped, ops, hooks)?;
        self.fold_erase(b, ops)
    }

    /// Each valid page of cache block `b` (taken off its plane's lists) read in SLC mode and
    /// programmed into a native frontier ([`Core::alloc_fold_page`]); the block then waits,
    /// empty, for [`Core::fold_erase`].
    fn fold_copies<H: Hooks>(
        &mut self,
        b: u32,
        spread: Spread,
        ops: &mut Vec<FlashOp>,
        hooks: &mut H,
    ) -> Result<(), FtlError> {
        self.apply_invalidations();
        let slc_ppb = self
            .slc
            .as_ref()
            .expect("the cache is on")
            .params
            .slc_pages_per_block;
        self.blocks[b as usize].state = BlockState::Victim;
        let first = b * self.ppb;
        let mut moved = std::mem::take(&mut self.moved);
        moved.clear();
        let mut n = 0;
        for src in first..first + slc_ppb {
            let owner = self.p2l[src as usize];
            if self.l2p.get(owner as usize) != Some(&src) {
                continue;
            }
            self.nand.check_read(Ppa(src))?;
            ops.push(FlashOp::read(Ppa(src), Cause::Fold, Dep::None).in_slc_mode());
            let dst = self
                .alloc_fold_page(b / self.blocks_per_plane, spread)
                .expect("fold_fits found room for the block's pages");
            self.nand.program(Ppa(dst))?;
            ops.push(FlashOp::copy(
                Ppa(src),
                Ppa(dst),
                Cause::Fold,
                Dep::Previous,
            ));
            self.commit(dst, owner, PageKind::Data);
            self.l2p[owner as usize] = dst;
            if H::WANTS_MOVES {
                moved.push(owner);
            }
            n += 1;
        }
        assert!(
            n == self.blocks[b as usize].valid,
            "cache block {b}: {n} pages mapped, {} counted valid",
            self.blocks[b as usize].valid
        );
        self.blocks[b as usize].valid = 0;
        let slc = self.slc.as_deref_mut().expect("the cache is on");
        slc.valid_pages -= n as u64;
        slc.counters.folded_pages += n as u64;
        if H::WANTS_MOVES && !moved.is_empty() {
            hooks.data_moved(&moved);
        }
        self.moved = moved;
        Ok(())
    }

    /// Erases folded cache block `b` after everything before it in this call; a static block
    /// goes back to its plane's static free list, a dynamic one to the free pool.
    fn fold_erase(&mut self, b: u32, ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        let p = b / self.blocks_per_plane;
        ops.push(FlashOp::erase(Ppa(b * self.ppb), Cause::Fold, Dep::All).in_slc_mode());
        let retired = self.nand.erase(BlockId(b))?;
        let slc = self.slc.as_deref_mut().expect("the cache is on");
        slc.counters.folded_blocks += 1;
        match self.blocks[b as usize].slc {
            SlcRole::Static => {
                slc.static_used -= 1;
                if retired {
                    // A worn-out static block shrinks the cache, not the device: the blocks
                    // the device needs to stay alive counted it, and no longer do.
                    slc.static_blocks -= 1;
                    self.blocks[b as usize].state = BlockState::Retired;
                    self.live_blocks -= 1;
                    self.min_live_blocks -= 1;
                } else {
                    self.blocks[b as usize].state = BlockState::Free;
                    slc.planes[p as usize].static_free.push(b);
                }
            }
            SlcRole::Dynamic => {
                slc.dynamic_used -= 1;
                self.blocks[b as usize].slc = SlcRole::Native;
                let before = self.nand.erase_count(BlockId(b)) - 1;
                self.wear.erased(before, retired);
                self.release_erased(b, before, retired);
            }
            SlcRole::Native => unreachable!("block {b} was folded but is not a cache block"),
        }
        Ok(())
    }

    /// The cache's counters, appended in [`crate::slc_cache::COUNTERS`]' order, when there is
    /// a cache.
    pub(super) fn each_slc_counter(&self, mut f: impl FnMut(&'static str, f64)) {
        let Some(slc) = &self.slc else {
            return;
        };
        let c = &slc.counters;
        let capacity_blocks = slc.static_blocks + self.dynamic_allowed(slc);
        for (name, value) in [
            ("slc_host_pages", c.host_pages as f64),
            ("slc_direct_pages", c.direct_pages as f64),
            ("slc_folded_pages", c.folded_pages as f64),
            ("slc_folded_blocks", c.folded_blocks as f64),
            ("slc_inline_folds", c.inline_folds as f64),
            ("slc_budget_folds", c.budget_folds as f64),
            ("slc_cache_pages", slc.valid_pages as f64),
            (
                "slc_cache_blocks",
                (slc.static_used + slc.dynamic_used) as f64,
            ),
            (
                "slc_cache_capacity_pages",
                (capacity_blocks * slc.params.slc_pages_per_block as u64) as f64,
            ),
        ] {
            f(name, value);
        }
    }

    /// Starts the cache's event counters from zero again.
    pub(super) fn reset_slc_counters(&mut self) {
        if let Some(slc) = self.slc.as_deref_mut() {
            slc.counters = SlcCounters::default();
        }
    }
}
