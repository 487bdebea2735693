//! What the block-mapped FTLs (`block`, `log-block`, `fast`) share: the NAND array with its
//! pool of erased blocks, the operations that change both together, and the split of the
//! physical blocks into data blocks, log blocks and the spare block that merges need.
//!
//! The pool hands out the least-worn erased block first (dynamic wear levelling). Among blocks
//! worn equally it follows the striped order of [`Geometry::striped_plane`], so that a fresh
//! device spreads consecutive allocations over channels, then dies, then planes.

use crate::{Cause, Dep, FlashOp, FtlError};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use storsim_flash::{BlockId, Geometry, NandArray, Ppa};

/// "No block" / "no page" / "no slot" in the flat `u32` tables of these FTLs.
pub(crate) const NONE: u32 = u32::MAX;

/// The NAND array together with its erased blocks.
pub(crate) struct Flash {
    pub(crate) nand: NandArray,
    pub(crate) geometry: Geometry,
    /// Erased blocks keyed by (erase count, striped rank), smallest first. Its capacity is the
    /// block count, so pushing never allocates.
    free: BinaryHeap<Reverse<(u32, u32)>>,
    /// Position of each plane in the striped order, and the plane at each position.
    plane_rank: Vec<u32>,
    rank_plane: Vec<u32>,
}

impl Flash {
    /// A fresh array with every block erased and in the pool.
    pub(crate) fn new(geometry: Geometry, endurance: u32) -> Result<Self, FtlError> {
        geometry.validate().map_err(|e| FtlError::Rejected {
            reason: format!("bad geometry: {e}"),
        })?;
        if endurance == 0 {
            return Err(FtlError::Rejected {
                reason: "endurance must be at least 1 erase".into(),
            });
        }
        let planes = geometry.planes();
        let mut plane_rank = vec![0u32; planes as usize];
        let mut rank_plane = vec![0u32; planes as usize];
        for n in 0..planes {
            let p = geometry.striped_plane(n as u64);
            plane_rank[p as usize] = n;
            rank_plane[n as usize] = p;
        }
        let blocks = geometry.blocks();
        let mut free = BinaryHeap::with_capacity(blocks as usize);
        for rank in 0..blocks {
            free.push(Reverse((0, rank)));
        }
        Ok(Flash {
            nand: NandArray::new(geometry, endurance),
            geometry,
            free,
            plane_rank,
            rank_plane,
        })
    }

    pub(crate) fn pages_per_block(&self) -> u32 {
        self.geometry.pages_per_block
    }

    pub(crate) fn free_blocks(&self) -> usize {
        self.free.len()
    }

    fn rank_of(&self, block: BlockId) -> u32 {
        let g = &self.geometry;
        let plane = g.plane_of(block);
        let index = block.0 % g.blocks_per_plane;
        index * g.planes() + self.plane_rank[plane as usize]
    }

    fn block_of_rank(&self, rank: u32) -> BlockId {
        let planes = self.geometry.planes();
        let plane = self.rank_plane[(rank % planes) as usize];
        self.geometry.block_in_plane(plane, rank / planes)
    }

    /// The error for "no erased block left": worn out if blocks retired, otherwise out of
    /// space (which the block accounting of these FTLs rules out).
    pub(crate) fn exhausted(&self) -> FtlError {
        match self.nand.retired_blocks() {
            0 => FtlError::NoSpace,
            retired_blocks => FtlError::WornOut { retired_blocks },
        }
    }

    /// Takes the least-worn erased block out of the pool.
    pub(crate) fn take_free(&mut self) -> Result<BlockId, FtlError> {
        match self.free.pop() {
            Some(Reverse((_, rank))) => {
                let block = self.block_of_rank(rank);
                assert_eq!(
                    self.nand.programmed_pages(block),
                    0,
                    "a block in the free pool holds data"
                );
                Ok(block)
            }
            None => Err(self.exhausted()),
        }
    }

    /// Erases `block` after every operation before it, and returns it to the pool unless the
    /// erase wore it out.
    pub(crate) fn erase(
        &mut self,
        block: BlockId,
        cause: Cause,
        ops: &mut Vec<FlashOp>,
    ) -> Result<(), FtlError> {
        let retired = self.nand.erase(block)?;
        ops.push(FlashOp::erase(self.geometry.ppa(block, 0), cause, Dep::All));
        if !retired {
            let key = (self.nand.erase_count(block), self.rank_of(block));
            self.free.push(Reverse(key));
        }
        Ok(())
    }

    /// Programs new data (the host's) into `ppa`.
    pub(crate) fn program(
        &mut self,
        ppa: Ppa,
        cause: Cause,
        dep: Dep,
        ops: &mut Vec<FlashOp>,
    ) -> Result<(), FtlError> {
        self.nand.program(ppa)?;
        ops.push(FlashOp::program(ppa, cause, dep));
        Ok(())
    }

    pub(crate) fn read(
        &mut self,
        ppa: Ppa,
        cause: Cause,
        dep: Dep,
        ops: &mut Vec<FlashOp>,
    ) -> Result<(), FtlError> {
        self.nand.check_read(ppa)?;
        ops.push(FlashOp::read(ppa, cause, dep));
        Ok(())
    }

    /// Copies one page: a read of `from` waiting for `read_dep`, then a program of its data into
    /// `to` waiting for that read.
    pub(crate) fn copy(
        &mut self,
        from: Ppa,
        to: Ppa,
        cause: Cause,
        read_dep: Dep,
        ops: &mut Vec<FlashOp>,
    ) -> Result<(), FtlError> {
        self.read(from, cause, read_dep, ops)?;
        self.nand.program(to)?;
        ops.push(FlashOp::copy(from, to, cause, Dep::Previous));
        Ok(())
    }
}

/// The dependencies of the copies of one merge. The first read waits for everything before it
/// in the call (an erase that freed the target block, a host program whose page it moves);
/// each later read waits for the copy before it, so the copies run one after another, as they
/// do through a plane's single page register, and all of them after that first barrier.
pub(crate) struct CopyChain {
    next: Dep,
}

impl CopyChain {
    pub(crate) fn new() -> Self {
        CopyChain { next: Dep::All }
    }

    pub(crate) fn copy(
        &mut self,
        flash: &mut Flash,
        from: Ppa,
        to: Ppa,
        ops: &mut Vec<FlashOp>,
    ) -> Result<(), FtlError> {
        flash.copy(from, to, Cause::Merge, self.next, ops)?;
        self.next = Dep::Previous;
        Ok(())
    }
}

/// How the host's program waits: for nothing when it is the call's first operation, for
/// everything before it when a merge made room for it.
pub(crate) fn host_dep(ops: &[FlashOp], call_start: usize) -> Dep {
    if ops.len() > call_start {
        Dep::All
    } else {
        Dep::None
    }
}

/// The largest number of data blocks `data` with `data + log_blocks(data) + 1 <= blocks`: the
/// log blocks a layout asks for plus the one spare block a full merge copies into. Fails when
/// not even one data block fits.
pub(crate) fn data_blocks(
    blocks: u32,
    log_blocks: impl Fn(u32) -> u32,
    ftl: &str,
) -> Result<u32, FtlError> {
    let fits = |data: u32| (data as u64 + log_blocks(data) as u64) < blocks as u64;
    if !fits(1) {
        return Err(FtlError::Rejected {
            reason: format!(
                "{ftl}: {blocks} blocks cannot hold one data block, its log blocks and a spare"
            ),
        });
    }
    // `fits` holds at 1 and fails at `blocks`; the log-block count never shrinks as data
    // grows, so a binary search finds the boundary.
    let (mut lo, mut hi) = (1u32, blocks);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(lo)
}

/// `fraction` of `count`, rounded up: how the log-space and over-provisioning fractions become
/// block counts.
pub(crate) fn fraction_of(fraction: f64, count: u32) -> u32 {
    (fraction * count as f64).ceil() as u32
}

/// Checks that a fraction parameter is a finite number in `[min, max]`.
pub(crate) fn check_fraction(
    ftl: &str,
    name: &str,
    value: f64,
    min: f64,
    max: f64,
) -> Result<(), FtlError> {
    if value.is_finite() && value >= min && value <= max {
        Ok(())
    } else {
        Err(FtlError::Rejected {
            reason: format!("{ftl}: {name} is {value}, it must be between {min} and {max}"),
        })
    }
}

/// The logical page's block and offset, or the range error.
pub(crate) fn split_lpn(lpn: u64, logical_pages: u64, ppb: u32) -> Result<(u32, u32), FtlError> {
    if lpn >= logical_pages {
        return Err(FtlError::OutOfRange { lpn, logical_pages });
    }
    Ok(((lpn / ppb as u64) as u32, (lpn % ppb as u64) as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geometry() -> Geometry {
        Geometry {
            channels: 2,
            chips_per_channel: 1,
            dies_per_chip: 1,
            planes_per_die: 2,
            blocks_per_plane: 3,
            pages_per_block: 4,
            page_bytes: 4096,
            oob_bytes: 128,
        }
    }

    #[test]
    fn fresh_pool_stripes_then_prefers_the_least_worn() {
        let mut f = Flash::new(geometry(), 100).unwrap();
        let g = geometry();
        let first: Vec<u32> = (0..4)
            .map(|_| g.channel_of(f.take_free().unwrap()))
            .collect();
        assert_eq!(first, [0, 1, 0, 1]);
        let mut ops = Vec::new();
        let b = f.take_free().unwrap();
        f.erase(b, Cause::Merge, &mut ops).unwrap();
        // Seven unworn blocks come out before the one erased once.
        for _ in 0..7 {
            assert_ne!(f.take_free().unwrap(), b);
        }
        assert_eq!(f.take_free().unwrap(), b);
        assert_eq!(f.take_free(), Err(FtlError::NoSpace));
    }

    #[test]
    fn data_blocks_leave_room_for_logs_and_a_spare() {
        assert_eq!(data_blocks(100, |_| 3, "t").unwrap(), 96);
        let logs = |d: u32| fraction_of(0.03, d).max(2);
        let d = data_blocks(1000, logs, "t").unwrap();
        assert_eq!((d, logs(d)), (969, 30));
        assert!(d + 1 + logs(d + 1) + 1 > 1000);
        assert!(data_blocks(3, |_| 2, "t").is_err());
        assert_eq!(data_blocks(4, |_| 2, "t").unwrap(), 1);
    }
}
