//! Pages on the core: allocation on the data and metadata frontiers, commits into the maps,
//! invalidation (now or deferred), and metadata pages' reads and rewrites.

use super::{BlockState, Core, Hooks, PageKind, SlcRole, NONE, PENDING_MAX};
use crate::{Cause, Dep, FlashOp, FtlError};
use storsim_flash::Ppa;

impl Core {
    /// The next page of plane `p`'s data frontier, opening a free block when the frontier is
    /// full and at least `min_free_to_open` blocks are free.
    #[inline]
    pub(super) fn alloc_data_page(&mut self, p: u32, min_free_to_open: usize) -> Option<u32> {
        let pl = &mut self.plane[p as usize];
        if pl.open != NONE && pl.wp < self.ppb {
            let ppa = pl.open * self.ppb + pl.wp;
            pl.wp += 1;
            return Some(ppa);
        }
        if pl.free.len() < min_free_to_open {
            return None;
        }
        let b = pl.free.pop()?;
        pl.open = b;
        pl.wp = 1;
        self.blocks[b as usize].state = BlockState::Open;
        self.blocks[b as usize].kind = PageKind::Data;
        Some(b * self.ppb)
    }

    /// Where a copy out of a data block of plane `p` goes: that plane's frontier (it may use
    /// the plane's last free block, which the victim's erase gives back), else another
    /// plane's frontier or spare block, so that a plane left without free blocks (by a
    /// retirement) can still be collected.
    pub(super) fn alloc_gc_data_page(&mut self, p: u32) -> Option<u32> {
        if let Some(ppa) = self.alloc_data_page(p, 1) {
            return Some(ppa);
        }
        (1..self.planes).find_map(|k| self.alloc_data_page((p + k) % self.planes, 2))
    }

    /// The plane a new metadata block would come from: the one with the most free blocks
    /// (ties: round robin from the last one used), so metadata never drains one plane.
    fn meta_plane(&self) -> Option<(u32, usize)> {
        let mut best: Option<(u32, usize)> = None;
        for k in 0..self.planes {
            let q = (self.meta_cursor + k) % self.planes;
            let n = self.plane[q as usize].free.len();
            let better = match best {
                None => true,
                Some((_, m)) => n > m,
            };
            if better {
                best = Some((q, n));
            }
        }
        best
    }

    /// The next page of the metadata frontier. A new metadata block comes from
    /// [`Core::meta_plane`] if that leaves it a free block, else from `own` (the plane being
    /// collected, whose victim's erase gives the block back) if it has one.
    pub(super) fn alloc_meta_page(&mut self, own: Option<u32>) -> Option<u32> {
        if self.meta_open != NONE && self.meta_wp < self.ppb {
            let ppa = self.meta_open * self.ppb + self.meta_wp;
            self.meta_wp += 1;
            return Some(ppa);
        }
        let q = match (self.meta_plane(), own) {
            (Some((q, n)), _) if n >= 2 => q,
            (_, Some(o)) if !self.plane[o as usize].free.is_empty() => o,
            _ => return None,
        };
        self.meta_cursor = (q + 1) % self.planes;
        let b = self.plane[q as usize].free.pop()?;
        self.meta_open = b;
        self.meta_wp = 1;
        self.blocks[b as usize].state = BlockState::Open;
        self.blocks[b as usize].kind = PageKind::Meta;
        Some(b * self.ppb)
    }

    /// Makes sure the next metadata page can be allocated without taking any plane's last
    /// free block: when the metadata frontier is full and no plane has two free blocks, it
    /// collects garbage (as before a host write) in the planes with the most free blocks
    /// first. Call it before each metadata write outside a collection.
    pub(crate) fn ensure_meta_room<H: Hooks>(
        &mut self,
        ops: &mut Vec<FlashOp>,
        hooks: &mut H,
    ) -> Result<(), FtlError> {
        if self.meta_open_room() > 0 {
            return Ok(());
        }
        let mut order: Vec<(usize, u32)> = (0..self.planes)
            .map(|q| (self.plane[q as usize].free.len(), q))
            .collect();
        if order.iter().any(|&(n, _)| n >= 2) {
            return Ok(());
        }
        order.sort_by_key(|&(n, q)| (std::cmp::Reverse(n), q));
        for (_, q) in order {
            self.foreground_gc(q, ops, hooks)?;
            // The collection may have opened a metadata block itself (copying translation
            // pages), which is room enough.
            if self.plane[q as usize].free.len() >= 2 || self.meta_open_room() > 0 {
                return Ok(());
            }
        }
        Err(self.out_of_space())
    }

    /// Records that physical page `ppa` (just programmed) holds `owner`; seals its block when
    /// it was the block's last page.
    #[inline]
    pub(super) fn commit(&mut self, ppa: u32, owner: u32, kind: PageKind) {
        self.p2l[ppa as usize] = owner;
        let b = self.ppb_div.quotient(ppa);
        self.blocks[b as usize].valid += 1;
        self.blocks[b as usize].modified = self.counters.host_writes;
        if ppa - b * self.ppb == self.ppb - 1 {
            // The block joins the victim index with its count: earlier invalidations first.
            self.apply_invalidations();
            self.blocks[b as usize].state = BlockState::Sealed;
            match kind {
                PageKind::Data => {
                    let pl = &mut self.plane[(b / self.blocks_per_plane) as usize];
                    assert!(
                        pl.open == b,
                        "sealed block {b} was not its plane's frontier"
                    );
                    pl.open = NONE;
                }
                PageKind::Meta => {
                    assert!(
                        self.meta_open == b,
                        "sealed block {b} was not the metadata frontier"
                    );
                    self.meta_open = NONE;
                }
            }
            self.seal_seq += 1;
            self.victims
                .sealed(b, self.blocks[b as usize].valid, self.seal_seq);
        }
    }

    /// Physical page `ppa` no longer holds current data. Its reverse-map entry stays: a page
    /// is valid only while its owner's map points at it, so the caller's map update is what
    /// invalidates it, and the host path saves a cache miss on the reverse map.
    pub(super) fn invalidate(&mut self, ppa: u32) {
        self.apply_invalidations();
        self.apply_invalidation(ppa, self.counters.host_writes);
    }

    /// [`Core::invalidate`] for a host write, deferred. The block's count lives in a table
    /// too large for the cache, and the block is known only once the map's old entry is read,
    /// itself a cache miss: done at once, the two misses come one after the other on every
    /// host write. Deferred, the counts of a few dozen writes are updated together and their
    /// misses overlap. Nothing observes the difference: every reader of block counts or of
    /// the victim index, and every other change to them (sealing a block, another
    /// invalidation, collecting), applies the pending invalidations first, in order.
    #[inline]
    pub(super) fn invalidate_later(&mut self, ppa: u32) {
        self.pending.push((ppa, self.counters.host_writes));
        if self.pending.len() == PENDING_MAX {
            self.apply_invalidations();
        }
    }

    /// Applies the invalidations [`Core::invalidate_later`] held back, in order.
    pub(super) fn apply_invalidations(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let pending = std::mem::take(&mut self.pending);
        // Reading every block's record first starts all their cache misses at once; the
        // updates then find them cached.
        let mut touched = 0;
        for &(ppa, _) in &pending {
            let b = self.ppb_div.quotient(ppa);
            touched ^= self.blocks[b as usize].valid ^ self.victims.touch(b);
        }
        std::hint::black_box(touched);
        for &(ppa, stamp) in &pending {
            self.apply_invalidation(ppa, stamp);
        }
        self.pending = pending;
        self.pending.clear();
    }

    /// Invalidates `ppa` as of host-write count `stamp`.
    #[inline]
    fn apply_invalidation(&mut self, ppa: u32, stamp: u64) {
        let b = self.ppb_div.quotient(ppa);
        let meta = &mut self.blocks[b as usize];
        assert!(
            meta.valid > 0,
            "invalidating a page of block {b}, which has no valid page"
        );
        meta.valid -= 1;
        if meta.slc != SlcRole::Native {
            self.slc
                .as_deref_mut()
                .expect("a cache block needs the cache")
                .valid_pages -= 1;
        }
        // Later changes to the block (a program) may have been recorded already: the last
        // change is the latest.
        meta.modified = meta.modified.max(stamp);
        if meta.state == BlockState::Sealed {
            let v = meta.valid;
            self.victims.invalidated(b, v);
        }
    }

    /// Where metadata page `m` lives, if it was ever written.
    pub(crate) fn meta_location(&self, m: u32) -> Option<Ppa> {
        match self.meta_l2p[m as usize] {
            NONE => None,
            p => Some(Ppa(p)),
        }
    }

    /// Reads metadata page `m` (cause Mapping) if it exists; returns whether it did.
    pub(crate) fn read_meta(&mut self, m: u32, ops: &mut Vec<FlashOp>) -> Result<bool, FtlError> {
        let Some(ppa) = self.meta_location(m) else {
            return Ok(false);
        };
        self.nand.check_read(ppa)?;
        ops.push(FlashOp::read(ppa, Cause::Mapping, Dep::None));
        Ok(true)
    }

    /// Rewrites metadata page `m` out of place (cause Mapping): a read of its old copy, if it
    /// has one, then a program that waits for the read. Returns the number of reads (0 or 1).
    /// Call [`Core::ensure_meta_room`] first.
    pub(crate) fn rewrite_meta(&mut self, m: u32, ops: &mut Vec<FlashOp>) -> Result<u64, FtlError> {
        let old = self.meta_l2p[m as usize];
        let read = self.read_meta(m, ops)?;
        let ppa = self
            .alloc_meta_page(None)
            .ok_or_else(|| self.out_of_space())?;
        self.nand.program(Ppa(ppa))?;
        let dep = if read { Dep::Previous } else { Dep::None };
        ops.push(FlashOp::program(Ppa(ppa), Cause::Mapping, dep));
        self.commit(ppa, m, PageKind::Meta);
        if old != NONE {
            self.invalidate(old);
        }
        self.meta_l2p[m as usize] = ppa;
        Ok(read as u64)
    }
}
