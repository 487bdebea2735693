//! Garbage collection and wear levelling on the core: foreground collection down to the
//! low watermark, idle-time collection and static wear levelling, the room a plane has, a
//! victim's collection and its erase.

use super::{BlockState, Core, Hooks, PageKind, NONE};
use crate::{Cause, Dep, FlashOp, FtlError};
use storsim_flash::{BlockId, Ppa};

impl Core {
    /// Collects victims in `plane` until it is back at the low watermark or no victim can be
    /// collected.
    pub(super) fn foreground_gc<H: Hooks>(
        &mut self,
        p: u32,
        ops: &mut Vec<FlashOp>,
        hooks: &mut H,
    ) -> Result<(), FtlError> {
        self.apply_invalidations();
        let mut victims = 0;
        while self.plane[p as usize].free.len() < self.low_watermark {
            let now = self.counters.host_writes;
            let Some(mut b) = self.victims.select(p, &self.blocks[..], now, &mut self.rng) else {
                break;
            };
            if !self.room_for(b) {
                match self.victims.fewest_valid(p, &self.blocks[..]) {
                    Some(f) if self.room_for(f) => b = f,
                    _ => break,
                }
            }
            self.collect(b, Cause::Gc, ops, hooks)?;
            victims += 1;
        }
        if victims > 0 {
            self.counters.gc_invocations += 1;
        }
        Ok(())
    }

    /// Background work for an idle device: one victim in the first plane (round robin) below
    /// the high watermark. Returns whether it did any. Static wear levelling is deliberately
    /// not done here: it is paced by host writes (at most one move per write), whereas idle
    /// work is repeated for as long as the device stays idle and would wear blocks out for
    /// nothing; garbage collection, by contrast, runs out of candidates.
    pub(crate) fn idle<H: Hooks>(
        &mut self,
        ops: &mut Vec<FlashOp>,
        hooks: &mut H,
    ) -> Result<bool, FtlError> {
        if self.worn_out {
            return Ok(false);
        }
        if self.fold_unit(ops, hooks)? {
            return Ok(true);
        }
        self.apply_invalidations();
        if self.background_gc {
            for k in 0..self.planes {
                let p = (self.background_cursor + k) % self.planes;
                if self.plane[p as usize].free.len() >= self.high_watermark {
                    continue;
                }
                let now = self.counters.host_writes;
                let Some(b) = self.victims.select(p, &self.blocks[..], now, &mut self.rng) else {
                    continue;
                };
                if !self.room_for(b) {
                    continue;
                }
                self.background_cursor = (p + 1) % self.planes;
                self.collect(b, Cause::Gc, ops, hooks)?;
                self.counters.gc_background_victim_blocks += 1;
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Moves the data out of one cold full block, if one can be found and moved.
    pub(super) fn static_wl_step<H: Hooks>(
        &mut self,
        ops: &mut Vec<FlashOp>,
        hooks: &mut H,
    ) -> Result<bool, FtlError> {
        self.apply_invalidations();
        let blocks = &self.blocks;
        let Some(b) = self.wear.find(self.nand.erase_counts(), |b| {
            blocks[b as usize].state == BlockState::Sealed
        }) else {
            return Ok(false);
        };
        if !self.room_for(b) {
            return Ok(false);
        }
        // Reset the pacing first, so that the move's own erase counts towards the next move.
        self.wear.moved();
        self.collect(b, Cause::WearLevel, ops, hooks)?;
        self.counters.wear_level_moves += 1;
        Ok(true)
    }

    /// Whether the valid pages of block `b` fit where collecting it would copy them: the
    /// same places, in the same order of preference, as the allocation during the copies.
    fn room_for(&self, b: u32) -> bool {
        let need = self.blocks[b as usize].valid as u64;
        let ppb = self.ppb as u64;
        let p = b / self.blocks_per_plane;
        // Blocks other planes can give without going below their one-block reserve.
        let spare_blocks = |q: u32| self.plane[q as usize].free.len().saturating_sub(1) as u64;
        let own_blocks = self.plane[p as usize].free.len() as u64;
        match self.blocks[b as usize].kind {
            PageKind::Data => {
                let mut room = self.plane_room(p);
                if room >= need {
                    return true;
                }
                for q in (0..self.planes).filter(|&q| q != p) {
                    room += self.open_room(q) + spare_blocks(q) * ppb;
                    if room >= need {
                        return true;
                    }
                }
                false
            }
            PageKind::Meta => {
                let mut room = self.meta_open_room() + own_blocks * ppb;
                for q in (0..self.planes).filter(|&q| q != p) {
                    room += spare_blocks(q) * ppb;
                }
                room >= need
            }
        }
    }

    /// Pages left in plane `p`'s data frontier.
    fn open_room(&self, p: u32) -> u64 {
        let pl = &self.plane[p as usize];
        if pl.open != NONE {
            (self.ppb - pl.wp) as u64
        } else {
            0
        }
    }

    /// Pages left in the metadata frontier.
    pub(super) fn meta_open_room(&self) -> u64 {
        if self.meta_open != NONE {
            (self.ppb - self.meta_wp) as u64
        } else {
            0
        }
    }

    /// Data pages plane `p` can still take: its frontier's rest and its free blocks.
    fn plane_room(&self, p: u32) -> u64 {
        self.open_room(p) + self.plane[p as usize].free.len() as u64 * self.ppb as u64
    }

    /// Copies the valid pages out of block `b` (read, then a program that waits for it),
    /// erases it once every copy is done, and tells the hooks which data moved.
    fn collect<H: Hooks>(
        &mut self,
        b: u32,
        cause: Cause,
        ops: &mut Vec<FlashOp>,
        hooks: &mut H,
    ) -> Result<(), FtlError> {
        self.apply_invalidations();
        assert!(
            self.blocks[b as usize].state == BlockState::Sealed,
            "only full blocks are collected (block {b})"
        );
        self.victims.remove(b, self.blocks[b as usize].valid);
        self.blocks[b as usize].state = BlockState::Victim;
        let kind = self.blocks[b as usize].kind;
        let plane = b / self.blocks_per_plane;
        let track = H::WANTS_MOVES && kind == PageKind::Data;

        // First pass: find the valid pages. A page is valid when the map of its owner still
        // points at it. These map reads are independent of each other, so their cache misses
        // overlap, the more so as nothing else in their loop waits for them (the valid pages
        // are gathered afterwards); the copies then find the lines they update cached.
        let mut batch = std::mem::take(&mut self.batch);
        let mut valid = std::mem::take(&mut self.valid);
        let first = b * self.ppb;
        batch.clear();
        batch.extend((first..first + self.ppb).map(|src| (src, self.p2l[src as usize])));
        let map = match kind {
            PageKind::Data => &self.l2p,
            PageKind::Meta => &self.meta_l2p,
        };
        valid.clear();
        valid.extend(
            batch
                .iter()
                .map(|&(src, owner)| map.get(owner as usize) == Some(&src)),
        );
        let mut n = 0;
        for k in 0..batch.len() {
            batch[n] = batch[k];
            n += valid[k] as usize;
        }
        batch.truncate(n);
        self.valid = valid;
        assert!(
            n == self.blocks[b as usize].valid as usize,
            "block {b}: {n} pages mapped, {} counted valid",
            self.blocks[b as usize].valid
        );

        let mut moved = std::mem::take(&mut self.moved);
        moved.clear();
        ops.reserve(2 * n + 1);
        for &(src, owner) in &batch {
            self.nand.check_read(Ppa(src))?;
            ops.push(FlashOp::read(Ppa(src), cause, Dep::None));
            let dst = match kind {
                PageKind::Data => self.alloc_gc_data_page(plane),
                PageKind::Meta => self.alloc_meta_page(Some(plane)),
            }
            .ok_or(FtlError::NoSpace)?;
            self.nand.program(Ppa(dst))?;
            ops.push(FlashOp::copy(Ppa(src), Ppa(dst), cause, Dep::Previous));
            self.commit(dst, owner, kind);
            match kind {
                PageKind::Data => self.l2p[owner as usize] = dst,
                PageKind::Meta => self.meta_l2p[owner as usize] = dst,
            }
            if track {
                moved.push(owner);
            }
        }
        self.blocks[b as usize].valid = 0;
        self.batch = batch;
        match cause {
            Cause::WearLevel => self.counters.wear_level_copied_pages += n as u64,
            _ => {
                self.counters.gc_copied_pages += n as u64;
                self.counters.gc_victim_blocks += 1;
            }
        }
        self.erase(b, cause, ops)?;
        if track && !moved.is_empty() {
            hooks.data_moved(&moved);
        }
        self.moved = moved;
        Ok(())
    }

    /// Erases block `b` after everything before it in this call, then frees or retires it.
    fn erase(&mut self, b: u32, cause: Cause, ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        ops.push(FlashOp::erase(Ppa(b * self.ppb), cause, Dep::All));
        let before = self.nand.erase_count(BlockId(b));
        let retired = self.nand.erase(BlockId(b))?;
        self.wear.erased(before, retired);
        self.release_erased(b, before, retired);
        Ok(())
    }

    /// Block `b`, just erased from `before` erases, goes back to its plane's free pool, or is
    /// retired.
    pub(super) fn release_erased(&mut self, b: u32, before: u32, retired: bool) {
        if retired {
            self.blocks[b as usize].state = BlockState::Retired;
            self.live_blocks -= 1;
            if self.live_blocks < self.min_live_blocks {
                self.worn_out = true;
            }
        } else {
            self.blocks[b as usize].state = BlockState::Free;
            self.plane[(b / self.blocks_per_plane) as usize]
                .free
                .push(b, before + 1);
        }
    }
}
