//! The physical layout: channels × chips × dies × planes × blocks × pages.
//!
//! Blocks are numbered plane by plane: block `b` of plane `p` (planes numbered across the whole
//! device, channel-major) is `p * blocks_per_plane + b`. Pages are numbered block by block. Both
//! fit a u32, which bounds a device at 2^32 pages (16 TiB of 4 KiB pages) and keeps per-page
//! tables at 4 bytes an entry.

use std::fmt;

/// A block, numbered across the whole device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BlockId(pub u32);

/// A physical page, numbered across the whole device (`block * pages_per_block + page`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ppa(pub u32);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub channels: u32,
    pub chips_per_channel: u32,
    pub dies_per_chip: u32,
    pub planes_per_die: u32,
    pub blocks_per_plane: u32,
    pub pages_per_block: u32,
    pub page_bytes: u32,
    pub oob_bytes: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GeometryError {
    Zero { field: &'static str },
    TooLarge { pages: u64 },
}

impl fmt::Display for GeometryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GeometryError::Zero { field } => write!(f, "{field} must be at least 1"),
            GeometryError::TooLarge { pages } => write!(
                f,
                "{pages} physical pages is more than the 2^32 storsim addresses: channels × \
                 chips_per_channel × dies_per_chip × planes_per_die × blocks_per_plane × \
                 pages_per_block must be below 2^32"
            ),
        }
    }
}

impl std::error::Error for GeometryError {}

impl Geometry {
    pub fn validate(&self) -> Result<(), GeometryError> {
        let fields = [
            ("channels", self.channels),
            ("chips_per_channel", self.chips_per_channel),
            ("dies_per_chip", self.dies_per_chip),
            ("planes_per_die", self.planes_per_die),
            ("blocks_per_plane", self.blocks_per_plane),
            ("pages_per_block", self.pages_per_block),
            ("page_bytes", self.page_bytes),
        ];
        for (field, v) in fields {
            if v == 0 {
                return Err(GeometryError::Zero { field });
            }
        }
        // u128: six u32 factors can overflow u64.
        let pages = self.channels as u128
            * self.chips_per_channel as u128
            * self.dies_per_chip as u128
            * self.planes_per_die as u128
            * self.blocks_per_plane as u128
            * self.pages_per_block as u128;
        if pages > u32::MAX as u128 {
            return Err(GeometryError::TooLarge {
                pages: u64::try_from(pages).unwrap_or(u64::MAX),
            });
        }
        Ok(())
    }

    pub fn dies(&self) -> u32 {
        self.channels * self.chips_per_channel * self.dies_per_chip
    }
    pub fn planes(&self) -> u32 {
        self.dies() * self.planes_per_die
    }
    pub fn blocks(&self) -> u32 {
        self.planes() * self.blocks_per_plane
    }
    pub fn pages(&self) -> u32 {
        self.blocks() * self.pages_per_block
    }
    pub fn raw_bytes(&self) -> u64 {
        self.pages() as u64 * self.page_bytes as u64
    }

    pub fn ppa(&self, block: BlockId, page: u32) -> Ppa {
        // A page past the block's end would name a page of the next block: a wrong answer, not
        // a crash, so the check stays on in release builds (one comparison).
        assert!(
            page < self.pages_per_block,
            "page {page} of a block of {} pages",
            self.pages_per_block
        );
        Ppa(block.0 * self.pages_per_block + page)
    }
    pub fn block_of(&self, ppa: Ppa) -> BlockId {
        BlockId(ppa.0 / self.pages_per_block)
    }
    pub fn page_in_block(&self, ppa: Ppa) -> u32 {
        ppa.0 % self.pages_per_block
    }
    /// The plane a block belongs to, numbered across the device.
    pub fn plane_of(&self, block: BlockId) -> u32 {
        block.0 / self.blocks_per_plane
    }
    /// The die a block belongs to, numbered across the device (channel-major).
    pub fn die_of(&self, block: BlockId) -> u32 {
        self.plane_of(block) / self.planes_per_die
    }
    /// The channel a block is reached through.
    pub fn channel_of(&self, block: BlockId) -> u32 {
        self.die_of(block) / (self.chips_per_channel * self.dies_per_chip)
    }
    /// Block `index` of plane `plane`.
    pub fn block_in_plane(&self, plane: u32, index: u32) -> BlockId {
        BlockId(plane * self.blocks_per_plane + index)
    }
    /// The plane that the `n`-th unit of a striped allocation goes to, so that consecutive
    /// units land on different channels first, then different dies, then different planes:
    /// the order that lets the most operations overlap.
    pub fn striped_plane(&self, n: u64) -> u32 {
        let channels = self.channels as u64;
        let dies_per_channel = (self.chips_per_channel * self.dies_per_chip) as u64;
        let planes = self.planes_per_die as u64;
        let channel = n % channels;
        let die_in_channel = (n / channels) % dies_per_channel;
        let plane_in_die = (n / (channels * dies_per_channel)) % planes;
        let die = channel * dies_per_channel + die_in_channel;
        (die * planes + plane_in_die) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g() -> Geometry {
        Geometry {
            channels: 2,
            chips_per_channel: 2,
            dies_per_chip: 1,
            planes_per_die: 2,
            blocks_per_plane: 4,
            pages_per_block: 8,
            page_bytes: 4096,
            oob_bytes: 128,
        }
    }

    #[test]
    fn hierarchy_counts_multiply() {
        let g = g();
        assert_eq!(g.dies(), 4);
        assert_eq!(g.planes(), 8);
        assert_eq!(g.blocks(), 32);
        assert_eq!(g.pages(), 256);
        assert_eq!(g.raw_bytes(), 256 * 4096);
    }

    #[test]
    fn addresses_decompose_by_hand() {
        let g = g();
        // Block 13 = plane 3 (blocks 12..16), die 1 (planes 2,3), channel 0 (dies 0,1).
        let b = BlockId(13);
        assert_eq!((g.plane_of(b), g.die_of(b), g.channel_of(b)), (3, 1, 0));
        // Block 20 = plane 5, die 2, channel 1.
        assert_eq!(g.channel_of(BlockId(20)), 1);
        let p = g.ppa(b, 5);
        assert_eq!(p, Ppa(13 * 8 + 5));
        assert_eq!((g.block_of(p), g.page_in_block(p)), (b, 5));
    }

    #[test]
    fn striping_visits_channels_then_dies_then_planes() {
        let g = g();
        let planes: Vec<u32> = (0..8).map(|n| g.striped_plane(n)).collect();
        let channels: Vec<u32> = planes
            .iter()
            .map(|&p| g.channel_of(g.block_in_plane(p, 0)))
            .collect();
        assert_eq!(channels, [0, 1, 0, 1, 0, 1, 0, 1]);
        let mut sorted = planes.clone();
        sorted.sort_unstable();
        assert_eq!(
            sorted,
            (0..8).collect::<Vec<_>>(),
            "every plane once per round"
        );
    }

    #[test]
    fn validation_names_the_zero_field_and_caps_size() {
        let mut bad = g();
        bad.pages_per_block = 0;
        assert_eq!(
            bad.validate(),
            Err(GeometryError::Zero {
                field: "pages_per_block"
            })
        );
        let mut huge = g();
        huge.blocks_per_plane = 1 << 30;
        assert!(matches!(
            huge.validate(),
            Err(GeometryError::TooLarge { .. })
        ));
    }
}
