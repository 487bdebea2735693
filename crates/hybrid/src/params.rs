//! The hybrid models' parameters: plain data that the config layer fills in.

use storsim_core::{SimDuration, QUEUE_DEPTH_MAX};

/// A half-open byte range `[start_bytes, end_bytes)` of the host's address space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ByteRange {
    pub start_bytes: u64,
    pub end_bytes: u64,
}

impl ByteRange {
    pub fn len_bytes(&self) -> u64 {
        self.end_bytes.saturating_sub(self.start_bytes)
    }
}

/// When the controller moves dirty cache blocks from the flash to the disk.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FlushPolicy {
    /// The thesis' policy (§3.3): when a write needs flash space and there is none, flush every
    /// dirty block, and let the write (and everything behind it) wait until the flush is done.
    OnDemand,
    /// When the dirty blocks reach `high_fraction` of the cache, flush (in replacement order)
    /// until they are at or below `low_fraction`. A write that still finds the cache full
    /// flushes just the blocks it needs.
    LowWatermark {
        high_fraction: f64,
        low_fraction: f64,
    },
    /// After the host has had nothing outstanding for `idle`, flush dirty blocks in the
    /// background until a host request arrives (in-flight flushes finish; no new ones start).
    /// A write that finds the cache full flushes just the blocks it needs.
    Idle { idle: SimDuration },
}

/// The built-in replacement orders for choosing flush and eviction victims.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replacement {
    /// Least recently read or written first.
    Lru,
    /// Oldest insertion first; hits do not refresh a block.
    Fifo,
}

/// What the controller lets into the flash (outside pinned ranges, which behave the same in
/// both modes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// The thesis' write-offload cache: small writes enter the flash dirty and are flushed to
    /// the disk later; reads never bring blocks in.
    Writes,
    /// A read cache, as in Seagate's first-generation Momentus XT: a read that misses copies
    /// the whole cache blocks it read from the disk into the flash as clean blocks, once the
    /// disk has answered; writes go to the disk and drop any flash copy of what they overwrite,
    /// so nothing is ever dirty and nothing is ever flushed.
    Reads,
}

/// Configuration 2: the controller manages the flash as a cache in front of the disk (seed
/// 002, §3.3 and Figs. 4.8–4.9), caching writes (the thesis) or reads.
#[derive(Clone, Debug, PartialEq)]
pub struct HybridParams {
    pub admission: Admission,
    /// Writes shorter than this go to the flash; longer or equal ones go to the disk unless
    /// one of their blocks is already on the flash. Unused with [`Admission::Reads`].
    pub small_write_threshold_bytes: u64,
    /// The cache's granularity: the flash holds host blocks of this size, each in one slot.
    pub cache_block_bytes: u64,
    /// Unused with [`Admission::Reads`]: only pinned blocks are ever dirty there, and they
    /// are never flushed.
    pub flush: FlushPolicy,
    pub replacement: Replacement,
    /// Host ranges whose blocks are written to the flash whatever their size, and never
    /// flushed or evicted: the flash is their home (the thesis' §3.5 extension).
    pub pinned: Vec<ByteRange>,
    pub queue_depth: usize,
}

impl HybridParams {
    /// The thesis' defaults: write admission, 4 KiB cache blocks, writes under 64 KiB to
    /// flash, on-demand full flush, LRU.
    pub fn thesis_defaults() -> Self {
        HybridParams {
            admission: Admission::Writes,
            small_write_threshold_bytes: 64 << 10,
            cache_block_bytes: 4096,
            flush: FlushPolicy::OnDemand,
            replacement: Replacement::Lru,
            pinned: Vec::new(),
            queue_depth: 32,
        }
    }

    /// Checks what does not depend on the children; `HybridDevice::new` checks the rest.
    pub fn validate(&self) -> Result<(), String> {
        if !positive_sector_multiple(self.cache_block_bytes) {
            return Err(format!(
                "cache_block_bytes must be a positive multiple of 512, got {}",
                self.cache_block_bytes
            ));
        }
        check_queue_depth(self.queue_depth)?;
        match self.flush {
            FlushPolicy::LowWatermark {
                high_fraction,
                low_fraction,
            } => {
                let ok = |x: f64| x.is_finite() && (0.0..=1.0).contains(&x);
                if !ok(high_fraction) || !ok(low_fraction) || low_fraction >= high_fraction {
                    return Err(format!(
                        "watermarks must satisfy 0 <= low < high <= 1, got low {low_fraction}, \
                         high {high_fraction}"
                    ));
                }
            }
            FlushPolicy::OnDemand | FlushPolicy::Idle { .. } => {}
        }
        check_ranges(&self.pinned, "pinned")
    }
}

/// How the host (configuration 1) places data on the two devices it sees.
#[derive(Clone, Debug, PartialEq)]
pub enum HostPlacement {
    /// Both devices side by side: bytes `[0, disk)` are the disk, `[disk, disk + flash)` the
    /// flash. The workload addresses each device itself; the capacities add.
    Separate,
    /// The listed host ranges (file-system metadata, boot files) live on the flash, packed
    /// from flash byte 0 in the order given; everything else on the disk. The host sees the
    /// disk's capacity.
    FlashRanges(Vec<ByteRange>),
    /// The host driver's remap table: whole blocks of writes shorter than `threshold_bytes`
    /// go to free flash blocks while there are any; a longer write moves the blocks it covers
    /// back to the disk (the host may drop its flash copy, unlike a controller). The host sees
    /// the disk's capacity.
    SmallWrites {
        threshold_bytes: u64,
        block_bytes: u64,
    },
}

/// Configuration 1: the OS manages the flash.
#[derive(Clone, Debug, PartialEq)]
pub struct HostTieredParams {
    pub placement: HostPlacement,
    pub queue_depth: usize,
}

impl HostTieredParams {
    pub fn validate(&self) -> Result<(), String> {
        check_queue_depth(self.queue_depth)?;
        match &self.placement {
            HostPlacement::Separate => Ok(()),
            HostPlacement::FlashRanges(ranges) => check_ranges(ranges, "flash ranges"),
            HostPlacement::SmallWrites { block_bytes, .. } => {
                if !positive_sector_multiple(*block_bytes) {
                    return Err(format!(
                        "the remap block must be a positive multiple of 512 bytes, got \
                         {block_bytes}"
                    ));
                }
                Ok(())
            }
        }
    }
}

/// Whether `bytes` is a positive whole number of 512-byte sectors.
fn positive_sector_multiple(bytes: u64) -> bool {
    bytes > 0 && bytes % 512 == 0
}

fn check_queue_depth(queue_depth: usize) -> Result<(), String> {
    if queue_depth == 0 || queue_depth > QUEUE_DEPTH_MAX as usize {
        return Err(format!(
            "queue_depth must be 1..={QUEUE_DEPTH_MAX}, got {queue_depth}"
        ));
    }
    Ok(())
}

/// Ranges must be non-empty and must not overlap (they may come in any order).
fn check_ranges(ranges: &[ByteRange], what: &str) -> Result<(), String> {
    let mut sorted = ranges.to_vec();
    sorted.sort();
    for (i, r) in sorted.iter().enumerate() {
        if r.start_bytes >= r.end_bytes {
            return Err(format!(
                "{what}: range [{}, {}) is empty",
                r.start_bytes, r.end_bytes
            ));
        }
        if i > 0 && sorted[i - 1].end_bytes > r.start_bytes {
            return Err(format!(
                "{what}: ranges [{}, {}) and [{}, {}) overlap",
                sorted[i - 1].start_bytes,
                sorted[i - 1].end_bytes,
                r.start_bytes,
                r.end_bytes
            ));
        }
    }
    Ok(())
}
