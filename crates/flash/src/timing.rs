//! How long each NAND operation takes.

use storsim_core::SimDuration;

/// Bits per cell. Multi-level cells store several logical pages per word line; their pages
/// differ in speed (LSB pages program fast, MSB pages slowly).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CellType {
    Slc,
    Mlc,
    Tlc,
    /// Four bits a cell, sixteen levels: the densest and slowest to program.
    Qlc,
}

/// The most page levels a cell has (QLC's four): the length of [`Timing`]'s per-level tables.
pub const LEVELS_MAX: usize = 4;

impl CellType {
    pub fn bits(self) -> u32 {
        match self {
            CellType::Slc => 1,
            CellType::Mlc => 2,
            CellType::Tlc => 3,
            CellType::Qlc => 4,
        }
    }
    /// Erase cycles a block of this type survives by default.
    pub fn default_endurance(self) -> u32 {
        match self {
            CellType::Slc => 100_000,
            CellType::Mlc => 10_000,
            CellType::Tlc => 3_000,
            // The first 64-layer 3D QLC parts were rated for about 1,000 cycles (Toshiba's and
            // Micron's 2018 announcements); later generations claim more.
            CellType::Qlc => 1_000,
        }
    }
}

/// How a block's cells are programmed. TLC and QLC drives run some blocks one bit a cell (SLC
/// mode) as a write cache: such a block holds a `bits`-th of its pages but programs and reads
/// them at SLC speed ([`Timing::slc_read`], [`Timing::slc_program`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CellMode {
    /// The part's own bits per cell; page `p` is of level `p % bits`.
    #[default]
    Native,
    /// One bit a cell, whatever the part's type.
    Slc,
}

/// Operation latencies. Page `p` of a block is of level `p % bits` (0 = LSB), a simple and
/// common approximation of the real LSB/CSB/MSB word-line pairing; SLC has level 0 only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timing {
    pub cell: CellType,
    /// Array read time (tR) per page level.
    pub read: [SimDuration; LEVELS_MAX],
    /// Array program time (tPROG) per page level.
    pub program: [SimDuration; LEVELS_MAX],
    /// Array read time of a page in a block run in SLC mode; `None` is the level-0 (LSB) time.
    pub slc_read: Option<SimDuration>,
    /// Array program time of a page in a block run in SLC mode; `None` is the level-0 time.
    pub slc_program: Option<SimDuration>,
    /// Block erase time (tBERS).
    pub erase: SimDuration,
    /// Command and address cycles on the channel, per operation.
    pub command: SimDuration,
    /// Channel data rate in mega-transfers per second.
    pub channel_mts: u32,
    /// Bytes per transfer (bus width).
    pub channel_width_bytes: u32,
}

impl Timing {
    /// One latency for every page level.
    pub fn uniform(
        cell: CellType,
        read: SimDuration,
        program: SimDuration,
        erase: SimDuration,
        command: SimDuration,
        channel_mts: u32,
        channel_width_bytes: u32,
    ) -> Self {
        Timing {
            cell,
            read: [read; LEVELS_MAX],
            program: [program; LEVELS_MAX],
            slc_read: None,
            slc_program: None,
            erase,
            command,
            channel_mts,
            channel_width_bytes,
        }
    }

    fn level(&self, page_in_block: u32) -> usize {
        (page_in_block % self.cell.bits()) as usize
    }

    pub fn read_of(&self, page_in_block: u32) -> SimDuration {
        self.read[self.level(page_in_block)]
    }

    pub fn program_of(&self, page_in_block: u32) -> SimDuration {
        self.program[self.level(page_in_block)]
    }

    /// tR of a page of a block run in SLC mode.
    pub fn slc_read_time(&self) -> SimDuration {
        self.slc_read.unwrap_or(self.read[0])
    }

    /// tPROG of a page of a block run in SLC mode.
    pub fn slc_program_time(&self) -> SimDuration {
        self.slc_program.unwrap_or(self.program[0])
    }

    /// Time to move `bytes` over the channel, rounded up to the nanosecond.
    pub fn transfer(&self, bytes: u32) -> SimDuration {
        // channel_mts × width bytes move per microsecond.
        let per_us = self.channel_mts as u64 * self.channel_width_bytes as u64;
        assert!(per_us > 0, "channel rate must be positive");
        SimDuration((bytes as u64 * 1000).div_ceil(per_us))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transfer_time_follows_the_channel_rate() {
        let t = Timing::uniform(
            CellType::Slc,
            SimDuration(1),
            SimDuration(1),
            SimDuration(1),
            SimDuration(0),
            333,
            1,
        );
        // 4096 bytes at 333 bytes/µs = 12.3003 µs, rounded up.
        assert_eq!(t.transfer(4096).as_ns(), 12_301);
    }

    #[test]
    fn mlc_pages_alternate_levels() {
        let mut t = Timing::uniform(
            CellType::Mlc,
            SimDuration(50),
            SimDuration(500),
            SimDuration(3000),
            SimDuration(0),
            100,
            1,
        );
        t.program = [
            SimDuration(300),
            SimDuration(900),
            SimDuration(0),
            SimDuration(0),
        ];
        assert_eq!(t.program_of(0).as_ns(), 300);
        assert_eq!(t.program_of(1).as_ns(), 900);
        assert_eq!(t.program_of(2).as_ns(), 300);
    }

    #[test]
    fn qlc_pages_cycle_through_four_levels() {
        let mut t = Timing::uniform(
            CellType::Qlc,
            SimDuration(0),
            SimDuration(0),
            SimDuration(3000),
            SimDuration(0),
            100,
            1,
        );
        t.read = [80, 110, 140, 170].map(|us| SimDuration(us * 1000));
        t.program = [600, 1500, 2500, 3000].map(|us| SimDuration(us * 1000));
        let reads: Vec<u64> = (0..8).map(|p| t.read_of(p).as_ns() / 1000).collect();
        assert_eq!(reads, [80, 110, 140, 170, 80, 110, 140, 170]);
        assert_eq!(t.program_of(7).as_ns(), 3_000_000);
        assert_eq!(CellType::Qlc.bits(), 4);
        assert!(CellType::Qlc.default_endurance() < CellType::Tlc.default_endurance());
    }
}
