//! The state of the cells: which pages hold data, how often each block was erased, which blocks
//! are worn out. It enforces NAND's rules (a page is programmed once between erases, a worn-out
//! block accepts nothing) so that an FTL bug shows up as an error instead of silent corruption.
//!
//! Memory: one bit per page plus 12 bytes per block.

use crate::divisor::Divisor;
use crate::erase_stats::EraseStats;
use crate::{BlockId, Geometry, Ppa};
use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NandError {
    /// Programming a page that was already programmed since its block's last erase.
    ProgramNotErased {
        ppa: Ppa,
    },
    /// Reading a page that holds no data.
    ReadErased {
        ppa: Ppa,
    },
    /// The block reached its endurance limit and was retired.
    BlockRetired {
        block: BlockId,
    },
    OutOfRange {
        ppa: Ppa,
    },
}

impl fmt::Display for NandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NandError::ProgramNotErased { ppa } => {
                write!(f, "page {} programmed twice without an erase", ppa.0)
            }
            NandError::ReadErased { ppa } => write!(f, "page {} read while erased", ppa.0),
            NandError::BlockRetired { block } => write!(f, "block {} is retired", block.0),
            NandError::OutOfRange { ppa } => write!(f, "page {} is outside the array", ppa.0),
        }
    }
}

impl std::error::Error for NandError {}

#[derive(Clone, Debug)]
pub struct NandArray {
    geometry: Geometry,
    /// The geometry's page count, and its pages per block prepared for division: checking
    /// and locating a page is on the path of every program and read.
    pages: u32,
    pages_per_block: Divisor,
    programmed: Vec<u64>,
    erase_counts: Vec<u32>,
    /// The erase counts' distribution, kept as they change.
    erase_stats: EraseStats,
    programmed_in_block: Vec<u32>,
    retired: Vec<bool>,
    endurance: u32,
    /// Blocks whose endurance differs from `endurance` (blocks kept in SLC mode), by block;
    /// empty while there are none, so that other arrays pay nothing for it.
    endurance_of: Vec<u32>,
    retired_blocks: u32,
}

impl NandArray {
    /// A fresh array: every page erased, every erase count 0. `endurance` erase cycles retire a
    /// block.
    pub fn new(geometry: Geometry, endurance: u32) -> Self {
        let pages = geometry.pages() as usize;
        let blocks = geometry.blocks() as usize;
        NandArray {
            geometry,
            pages: geometry.pages(),
            pages_per_block: Divisor::new(geometry.pages_per_block),
            programmed: vec![0; pages.div_ceil(64)],
            erase_counts: vec![0; blocks],
            erase_stats: EraseStats::new(blocks as u64),
            programmed_in_block: vec![0; blocks],
            retired: vec![false; blocks],
            endurance,
            endurance_of: Vec::new(),
            retired_blocks: 0,
        }
    }

    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    pub fn is_programmed(&self, ppa: Ppa) -> bool {
        let i = ppa.0 as usize;
        self.programmed[i / 64] >> (i % 64) & 1 == 1
    }

    pub fn program(&mut self, ppa: Ppa) -> Result<(), NandError> {
        if ppa.0 >= self.pages {
            return Err(NandError::OutOfRange { ppa });
        }
        let block = BlockId(self.pages_per_block.quotient(ppa.0));
        if self.retired[block.0 as usize] {
            return Err(NandError::BlockRetired { block });
        }
        if self.is_programmed(ppa) {
            return Err(NandError::ProgramNotErased { ppa });
        }
        let i = ppa.0 as usize;
        self.programmed[i / 64] |= 1 << (i % 64);
        self.programmed_in_block[block.0 as usize] += 1;
        Ok(())
    }

    pub fn check_read(&self, ppa: Ppa) -> Result<(), NandError> {
        if ppa.0 >= self.pages {
            return Err(NandError::OutOfRange { ppa });
        }
        if !self.is_programmed(ppa) {
            return Err(NandError::ReadErased { ppa });
        }
        Ok(())
    }

    /// Erases a block; when this erase reaches the endurance limit the block is retired and
    /// accepts no more programs. Returns whether it was retired.
    pub fn erase(&mut self, block: BlockId) -> Result<bool, NandError> {
        let b = block.0 as usize;
        if b >= self.erase_counts.len() {
            return Err(NandError::OutOfRange {
                ppa: self.geometry.ppa(BlockId(0), 0),
            });
        }
        if self.retired[b] {
            return Err(NandError::BlockRetired { block });
        }
        let first = self.geometry.ppa(block, 0).0 as usize;
        let end = first + self.geometry.pages_per_block as usize;
        // Whole words at a time: a mask for each word the block's bits touch.
        let mut i = first;
        while i < end {
            let bits = (end - i).min(64 - i % 64);
            let mask = if bits == 64 {
                u64::MAX
            } else {
                ((1u64 << bits) - 1) << (i % 64)
            };
            self.programmed[i / 64] &= !mask;
            i += bits;
        }
        self.programmed_in_block[b] = 0;
        self.erase_stats.erased(self.erase_counts[b]);
        self.erase_counts[b] += 1;
        let endurance = match self.endurance_of.get(b) {
            Some(&e) => e,
            None => self.endurance,
        };
        if self.erase_counts[b] >= endurance {
            self.retired[b] = true;
            self.retired_blocks += 1;
            return Ok(true);
        }
        Ok(false)
    }

    /// Lets `block` survive `erases` erase cycles instead of the array's endurance: a block the
    /// FTL keeps in SLC mode endures more, as its one bit a cell has the widest margins.
    pub fn set_endurance(&mut self, block: BlockId, erases: u32) {
        if self.endurance_of.is_empty() {
            self.endurance_of = vec![self.endurance; self.erase_counts.len()];
        }
        self.endurance_of[block.0 as usize] = erases;
    }

    pub fn erase_count(&self, block: BlockId) -> u32 {
        self.erase_counts[block.0 as usize]
    }
    pub fn erase_counts(&self) -> &[u32] {
        &self.erase_counts
    }
    pub fn programmed_pages(&self, block: BlockId) -> u32 {
        self.programmed_in_block[block.0 as usize]
    }
    pub fn is_retired(&self, block: BlockId) -> bool {
        self.retired[block.0 as usize]
    }
    pub fn retired_blocks(&self) -> u32 {
        self.retired_blocks
    }
    pub fn endurance(&self) -> u32 {
        self.endurance
    }
    pub fn total_erases(&self) -> u64 {
        self.erase_stats.total()
    }
    /// The erase counts' distribution (min, max, mean, spread, histogram), without a pass over
    /// the blocks.
    pub fn erase_stats(&self) -> &EraseStats {
        &self.erase_stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn array(endurance: u32) -> NandArray {
        NandArray::new(
            Geometry {
                channels: 1,
                chips_per_channel: 1,
                dies_per_chip: 1,
                planes_per_die: 1,
                blocks_per_plane: 4,
                pages_per_block: 4,
                page_bytes: 2048,
                oob_bytes: 64,
            },
            endurance,
        )
    }

    #[test]
    fn program_once_then_erase() {
        let mut a = array(10);
        a.program(Ppa(5)).unwrap();
        assert_eq!(
            a.program(Ppa(5)),
            Err(NandError::ProgramNotErased { ppa: Ppa(5) })
        );
        assert_eq!(
            a.check_read(Ppa(6)),
            Err(NandError::ReadErased { ppa: Ppa(6) })
        );
        assert_eq!(a.programmed_pages(BlockId(1)), 1);
        a.erase(BlockId(1)).unwrap();
        assert!(!a.is_programmed(Ppa(5)));
        a.program(Ppa(5)).unwrap();
        assert_eq!(a.erase_count(BlockId(1)), 1);
        assert_eq!(a.total_erases(), 1);
    }

    #[test]
    fn an_erase_clears_exactly_its_block() {
        // 37 pages a block: blocks straddle the bitmap's words.
        let g = Geometry {
            channels: 1,
            chips_per_channel: 1,
            dies_per_chip: 1,
            planes_per_die: 1,
            blocks_per_plane: 9,
            pages_per_block: 37,
            page_bytes: 2048,
            oob_bytes: 0,
        };
        for victim in 0..9 {
            let mut a = NandArray::new(g, 10);
            for p in 0..g.pages() {
                a.program(Ppa(p)).unwrap();
            }
            a.erase(BlockId(victim)).unwrap();
            for p in 0..g.pages() {
                assert_eq!(a.is_programmed(Ppa(p)), p / 37 != victim, "page {p}");
            }
        }
    }

    #[test]
    fn a_block_may_have_an_endurance_of_its_own() {
        let mut a = array(2);
        a.set_endurance(BlockId(1), 4);
        for _ in 0..2 {
            a.erase(BlockId(0)).unwrap();
        }
        assert!(a.is_retired(BlockId(0)));
        for n in 1..=4 {
            assert_eq!(a.erase(BlockId(1)), Ok(n == 4), "erase {n}");
        }
        assert_eq!(a.retired_blocks(), 2);
    }

    #[test]
    fn blocks_retire_at_the_endurance_limit() {
        let mut a = array(2);
        assert_eq!(a.erase(BlockId(0)), Ok(false));
        assert_eq!(a.erase(BlockId(0)), Ok(true));
        assert!(a.is_retired(BlockId(0)));
        assert_eq!(
            a.program(Ppa(0)),
            Err(NandError::BlockRetired { block: BlockId(0) })
        );
        assert_eq!(a.retired_blocks(), 1);
    }
}
