//! The SLC write cache's parameters, as the SSD hands them to its FTL
//! ([`crate::Ftl::set_slc_cache`]), and its counters; docs/models/slc-cache.md has the rules.

use storsim_core::{CounterDescriptor, Unit};

/// What a host write does when the SLC cache has no room for it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WhenFull {
    /// It goes straight to a block at the cells' native density; folding waits for idle time.
    #[default]
    Direct,
    /// The oldest SLC block of the write's plane is folded first, before the write, which then
    /// goes into the room that made; straight to a native block only when nothing can be
    /// folded.
    Fold,
}

impl WhenFull {
    pub const NAMES: [&'static str; 2] = ["direct", "fold"];

    pub fn name(self) -> &'static str {
        match self {
            WhenFull::Direct => "direct",
            WhenFull::Fold => "fold",
        }
    }

    pub fn from_name(name: &str) -> Option<WhenFull> {
        match name {
            "direct" => Some(WhenFull::Direct),
            "fold" => Some(WhenFull::Fold),
            _ => None,
        }
    }
}

/// An SLC write cache: host writes go into blocks run one bit a cell, which program fast and
/// hold a `bits`-th of their pages, and are folded into native blocks later.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlcCache {
    /// Pages a block holds in SLC mode: its pages over the cells' bits.
    pub slc_pages_per_block: u32,
    /// Blocks of each plane kept in SLC mode for good (the static cache), out of the spare
    /// space.
    pub static_blocks_per_plane: u32,
    /// Free blocks that may be used in SLC mode at once, over the whole device (the dynamic
    /// cache); fewer while the logical space is full (see [`SlcCache`]'s page).
    pub dynamic_max_blocks: u64,
    /// What a host write does when the cache has no room.
    pub when_full: WhenFull,
    /// Erase cycles a static SLC block survives.
    pub static_endurance_erases: u32,
}

/// The cache's counters, listed when the device has one.
pub const COUNTERS: &[CounterDescriptor] = &[
    CounterDescriptor::new(
        "slc_host_pages",
        Unit::Pages,
        "Host pages written into SLC-mode blocks.",
    ),
    CounterDescriptor::new(
        "slc_direct_pages",
        Unit::Pages,
        "Host pages written straight to native blocks because the SLC cache had no room.",
    ),
    CounterDescriptor::new(
        "slc_folded_pages",
        Unit::Pages,
        "Valid pages folded from SLC-mode blocks into native blocks.",
    ),
    CounterDescriptor::new(
        "slc_folded_blocks",
        Unit::Blocks,
        "SLC-mode blocks folded and erased.",
    ),
    CounterDescriptor::new(
        "slc_inline_folds",
        Unit::Blocks,
        "SLC-mode blocks folded before a host write that found the cache full (`when_full = \"fold\"`).",
    ),
    CounterDescriptor::new(
        "slc_budget_folds",
        Unit::Blocks,
        "Dynamic SLC blocks folded beside host writes because the logical space filled up under the dynamic cache.",
    ),
    CounterDescriptor::new(
        "slc_cache_pages",
        Unit::Pages,
        "Host pages whose current copy is in the SLC cache now.",
    ),
    CounterDescriptor::new(
        "slc_cache_blocks",
        Unit::Blocks,
        "Blocks in SLC mode holding data or open now.",
    ),
    CounterDescriptor::new(
        "slc_cache_capacity_pages",
        Unit::Pages,
        "Pages the SLC cache could hold now: the static blocks and the dynamic blocks the free logical space allows.",
    ),
];
