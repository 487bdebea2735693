//! Hybrid flash + disk drives (seed 002): two child devices, a flash side and a disk side,
//! behind the [`Device`](storsim_core::Device) contract, in the thesis' two configurations.
//!
//! - [`HybridDevice`], configuration 2: the drive's controller manages the flash as a cache;
//!   the host sees one disk. With write admission (the thesis), small writes go to the flash,
//!   large ones to the disk unless they touch cached blocks, and dirty blocks are flushed on
//!   demand, at a watermark or when idle; with read admission (a Momentus XT), read misses
//!   are copied into the flash and writes go to the disk. Reads are split by where each
//!   block's newest copy is; victims come from a pluggable [`CachePolicy`] (LRU and FIFO
//!   built in); pinned ranges stay on flash.
//! - [`HostTieredDevice`], configuration 1: the OS sees both devices and decides placement
//!   itself ([`HostPlacement`]); there is no cache, no flush and no eviction.
//!
//! Either child can be any model: an SSD with any FTL, a disk, a black-box device. Nothing
//! here reads a clock or holds data. See docs/models/hybrid.md.

mod controller;
mod fanout;
mod host;
mod params;
mod parents;
mod policy;

pub use controller::counters::{
    COUNTERS as CACHE_COUNTERS, FAULT_COUNTERS as CACHE_FAULT_COUNTERS, FLUSH_BYTES, FLUSH_CAUSES,
    HOST_READS_DISK, HOST_READS_FLASH, HOST_READS_SPLIT, HOST_WRITES_DISK, HOST_WRITES_FLASH,
    HOST_WRITES_SPLIT,
};
pub use controller::{HybridDevice, Location};
pub use fanout::{Route, RouteCause, Side};
pub use host::{
    HostTieredDevice, COUNTERS as HOST_TIERED_COUNTERS,
    REMAP_COUNTERS as HOST_TIERED_REMAP_COUNTERS,
};
pub use params::{
    Admission, ByteRange, FlushPolicy, HostPlacement, HostTieredParams, HybridParams, Replacement,
};
pub use policy::{CacheEvent, CachePolicy, StampOrder, Victims};
