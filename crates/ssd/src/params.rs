//! The SSD's parameters: plain data the config layer fills in.

use storsim_core::{SimDuration, QUEUE_DEPTH_MAX};
use storsim_flash::{DieScheduling, Geometry, MultiPlane, Timing};
use storsim_ftl::{FtlConfig, SlcCache, WhenFull};

/// Energy per NAND operation and the device's idle power. Defaults are FlashSim's Table 2
/// (read 4.72 µJ, program 38.04 µJ, erase 527.68 µJ per operation); FlashSim gives no idle
/// power, so it defaults to 0 and is meant to come from a datasheet.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Energy {
    pub read_uj: f64,
    pub program_uj: f64,
    pub erase_uj: f64,
    pub idle_power_w: f64,
}

impl Default for Energy {
    fn default() -> Self {
        Energy {
            read_uj: 4.72,
            program_uj: 38.04,
            erase_uj: 527.68,
            idle_power_w: 0.0,
        }
    }
}

/// A DRAM write buffer in the controller: a write completes once its data is in DRAM; the
/// buffer holds its pages until their programs finish, and a write that finds it full waits.
/// When the programs start is [`SsdParams::write_buffer_policy`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteBuffer {
    pub capacity_bytes: u64,
    /// Time to move a request's data into DRAM, charged once per request.
    pub latency: SimDuration,
}

/// When the write buffer's pages go to flash.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum FlushPolicy {
    /// Every write's programs are scheduled at once; the buffer acknowledges the write early
    /// and bounds the pages not yet programmed.
    #[default]
    Eager,
    /// Write-back: written pages stay dirty in DRAM (rewrites coalesce, reads hit) until the
    /// watermark, a flush or idle time destages them.
    Watermark(WriteBack),
}

/// Which dirty pages a watermark destages first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DestageOrder {
    /// The oldest by first write: a rewrite absorbed in DRAM keeps the page's place.
    #[default]
    Fifo,
    /// The least recently written: a rewrite moves the page to the back.
    Lru,
}

/// The write-back policy's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WriteBack {
    /// Destaging starts when dirty pages exceed this fraction of the buffer's pages ...
    pub high_watermark_fraction: f64,
    /// ... and stops once they are at or below this one. `0 <= low < high <= 1`.
    pub low_watermark_fraction: f64,
    pub order: DestageOrder,
    /// Destage dirty pages in the background once the device has been idle for the idle delay.
    pub destage_when_idle: bool,
}

impl Default for WriteBack {
    fn default() -> Self {
        WriteBack {
            high_watermark_fraction: 0.9,
            low_watermark_fraction: 0.8,
            order: DestageOrder::Fifo,
            destage_when_idle: true,
        }
    }
}

impl WriteBack {
    /// The watermarks in pages of a buffer of `capacity_pages`: destaging starts above the
    /// first and stops at or below the second.
    pub fn watermark_pages(&self, capacity_pages: u64) -> (u64, u64) {
        let pages = |f: f64| ((f * capacity_pages as f64).floor() as u64).min(capacity_pages);
        (
            pages(self.high_watermark_fraction),
            pages(self.low_watermark_fraction),
        )
    }
}

/// The state the device starts the measured run in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Precondition {
    /// Every block erased, nothing mapped.
    Clean,
    /// The first `fraction` of the logical space written once, in order.
    SequentialFill { fraction: f64 },
    /// Fill, then random overwrites until write amplification settles (two consecutive
    /// windows within 1 % of each other) or `max_overwrite_factor` × capacity was overwritten.
    SteadyState { max_overwrite_factor: f64 },
}

/// An SLC write cache as a device file states it, in bytes of data it holds; the device turns
/// it into blocks of its geometry ([`SlcCacheSpec::blocks`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlcCacheSpec {
    /// Data the static cache holds: blocks of each plane kept in SLC mode for good, out of the
    /// spare space, rounded up to whole blocks per plane.
    pub static_bytes: u64,
    /// The most data the dynamic cache holds (free blocks used in SLC mode), rounded up to
    /// whole blocks; less while the logical space is full.
    pub dynamic_max_bytes: u64,
    /// What a host write does when the cache has no room.
    pub when_full: WhenFull,
    /// Erase cycles a static block survives.
    pub static_endurance_erases: u32,
}

impl SlcCacheSpec {
    /// The cache in blocks of `geometry` with cells of `bits`: a block in SLC mode holds
    /// `pages_per_block / bits` pages.
    pub fn blocks(&self, geometry: &Geometry, bits: u32) -> SlcCache {
        let slc_pages_per_block = geometry.pages_per_block / bits;
        let block_bytes = (slc_pages_per_block as u64 * geometry.page_bytes as u64).max(1);
        let planes = geometry.planes() as u64;
        let static_blocks = self.static_bytes.div_ceil(block_bytes);
        SlcCache {
            slc_pages_per_block,
            static_blocks_per_plane: u32::try_from(static_blocks.div_ceil(planes))
                .unwrap_or(u32::MAX),
            dynamic_max_blocks: self.dynamic_max_bytes.div_ceil(block_bytes),
            when_full: self.when_full,
            static_endurance_erases: self.static_endurance_erases,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct SsdParams {
    pub geometry: Geometry,
    pub timing: Timing,
    /// Erase cycles a block survives; at the limit it is retired.
    pub endurance: u32,
    pub ftl: FtlConfig,
    /// Host requests the device accepts at once (NCQ / NVMe queue depth).
    pub queue_depth: usize,
    pub write_buffer: Option<WriteBuffer>,
    /// How the write buffer destages (meaningless without a buffer).
    pub write_buffer_policy: FlushPolicy,
    pub energy: Energy,
    pub precondition: Precondition,
    /// Garbage-collect in idle time (the FTL decides whether there is anything to do).
    pub background_gc: bool,
    /// How long the device must be idle before background GC starts.
    pub idle_gc_delay: SimDuration,
    /// Controller time per request before any flash operation (command decode, DMA setup).
    pub controller_overhead: SimDuration,
    /// Run a garbage-collection or merge copy whose source and destination share a plane as
    /// a copy-back (FlashSim's Algorithm 2): the data stays in the plane's page register, so
    /// the channel carries two commands instead of the page twice.
    pub copyback: bool,
    /// Which operations of one request may share a multi-plane command on a die.
    pub multi_plane: MultiPlane,
    /// How each die orders its operations: first come first served, host reads first, or host
    /// reads first with program and erase suspension (docs/models/die-scheduling.md).
    pub die_scheduling: DieScheduling,
    /// Under a policy other than FIFO, garbage collection's reads go first as host reads do.
    pub gc_reads_priority: bool,
    /// An SLC write cache (docs/models/slc-cache.md): host writes into blocks run one bit a
    /// cell, folded into native blocks in idle time or when the cache is full. Its blocks'
    /// times are the timing's SLC-mode ones (`Timing::slc_read`, `Timing::slc_program`).
    pub slc_cache: Option<SlcCacheSpec>,
    /// Seed for everything random in preconditioning.
    pub seed: u64,
    /// Resource partitions by flow (`Request::flow` f uses `partitions[f]`; flows past the end,
    /// and every flow when this is empty, write anywhere). Only for FTLs that place pages
    /// freely (page, dftl), with the eager write buffer or none. Not a device-file key: a
    /// multi-flow workload sets it.
    pub partitions: Vec<FlowPartition>,
    /// What the DRAM buffer does for each flow's requests (`Request::flow` f uses
    /// `flow_data_cache[f]`; flows past the end, and every flow when this is empty, have their
    /// writes cached, as without flows). The one buffer is shared by the flows that use it.
    /// Not a device-file key: a multi-flow workload sets it.
    pub flow_data_cache: Vec<DataCacheMode>,
}

/// What the device's data cache does for one flow, as MQSim's per-flow
/// `Device_Level_Data_Caching_Mode` states it. The SSD's buffer caches writes only, so the
/// modes that cache reads are refused (`SsdParams::validate`); they are named so that a
/// workload stating one gets that error rather than its own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DataCacheMode {
    /// Writes complete once in the buffer (the device's behaviour without flows).
    #[default]
    Write,
    /// Reads cached: not modelled by the SSD's buffer.
    Read,
    /// Both: not modelled by the SSD's buffer.
    ReadWrite,
    /// Neither: the flow's writes complete when their programs finish, as writes larger than
    /// the buffer always do. Reads still find pages other flows left dirty in a write-back
    /// buffer, as the data is there.
    Off,
}

/// The part of the flash one flow's writes (and the garbage collection they cause) are pinned
/// to, as MQSim's `Channel_IDs`, `Chip_IDs`, `Die_IDs` and `Plane_IDs` state it: the planes whose
/// channel, chip (within its channel), die (within its chip) and plane (within its die) are all
/// listed. An empty list means every one. Reads go wherever the data is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FlowPartition {
    pub channels: Vec<u32>,
    pub chips: Vec<u32>,
    pub dies: Vec<u32>,
    pub planes: Vec<u32>,
}

impl FlowPartition {
    /// The partition's planes, numbered across the device as `Geometry::plane_of` numbers them,
    /// in increasing order; an error names an id past the geometry or an empty partition.
    pub fn planes_in(&self, g: &Geometry) -> Result<Vec<u32>, String> {
        let levels = [
            ("channel", &self.channels, g.channels),
            ("chip", &self.chips, g.chips_per_channel),
            ("die", &self.dies, g.dies_per_chip),
            ("plane", &self.planes, g.planes_per_die),
        ];
        for (name, ids, count) in levels {
            if let Some(id) = ids.iter().find(|&&id| id >= count) {
                return Err(format!(
                    "{name} {id} does not exist (there are {count}, numbered from 0)"
                ));
            }
        }
        let has = |ids: &Vec<u32>, id: u32| ids.is_empty() || ids.contains(&id);
        let mut planes = Vec::new();
        for channel in (0..g.channels).filter(|&c| has(&self.channels, c)) {
            for chip in (0..g.chips_per_channel).filter(|&c| has(&self.chips, c)) {
                for die in (0..g.dies_per_chip).filter(|&d| has(&self.dies, d)) {
                    for plane in (0..g.planes_per_die).filter(|&p| has(&self.planes, p)) {
                        let die_index =
                            (channel * g.chips_per_channel + chip) * g.dies_per_chip + die;
                        planes.push(die_index * g.planes_per_die + plane);
                    }
                }
            }
        }
        Ok(planes)
    }
}

impl SsdParams {
    /// Checks what the model relies on, so that bad parameters are an error rather than a
    /// panic deep inside the scheduler. The config layer checks the same with key names.
    pub fn validate(&self) -> Result<(), String> {
        self.geometry
            .validate()
            .map_err(|e| format!("geometry: {e}"))?;
        if self
            .geometry
            .page_bytes
            .checked_add(self.geometry.oob_bytes)
            .is_none()
        {
            return Err("geometry: page_bytes + oob_bytes overflows".into());
        }
        if self.queue_depth == 0 || self.queue_depth > QUEUE_DEPTH_MAX as usize {
            return Err(format!(
                "queue depth must be 1..={QUEUE_DEPTH_MAX}, got {}",
                self.queue_depth
            ));
        }
        if self.timing.channel_mts == 0 || self.timing.channel_width_bytes == 0 {
            return Err("timing: the channel rate and width must be positive".into());
        }
        if self.endurance == 0 {
            return Err("endurance must be at least one erase".into());
        }
        if let FlushPolicy::Watermark(w) = self.write_buffer_policy {
            let (high, low) = (w.high_watermark_fraction, w.low_watermark_fraction);
            if !(high.is_finite() && low.is_finite() && 0.0 <= low && low < high && high <= 1.0) {
                return Err(format!(
                    "write buffer watermarks must satisfy 0 <= low < high <= 1, got low {low}, \
                     high {high}"
                ));
            }
        }
        if self.slc_cache.is_some() {
            let bits = self.timing.cell.bits();
            if bits == 1 {
                return Err(
                    "an SLC cache needs cells of more than one bit (ssd.timing.cell)".into(),
                );
            }
            if self.geometry.pages_per_block < bits {
                return Err(format!(
                    "an SLC cache needs blocks of at least {bits} pages: a block in SLC mode \
                     holds pages_per_block / {bits} of them"
                ));
            }
        }
        if !self.partitions.is_empty()
            && matches!(self.write_buffer_policy, FlushPolicy::Watermark(_))
        {
            // Destaging writes pages long after their request, when the flow is not known.
            return Err(
                "resource partitions need the eager write buffer (or none), not write-back".into(),
            );
        }
        for (flow, mode) in self.flow_data_cache.iter().enumerate() {
            match mode {
                DataCacheMode::Write => {}
                DataCacheMode::Read | DataCacheMode::ReadWrite => {
                    return Err(format!(
                        "flow {flow}'s data cache mode {mode:?}: the SSD's buffer caches writes \
                         only"
                    ))
                }
                DataCacheMode::Off
                    if matches!(self.write_buffer_policy, FlushPolicy::Watermark(_)) =>
                {
                    // A write past a write-back buffer would leave an older dirty copy there.
                    return Err(format!(
                        "flow {flow}'s data cache mode Off needs the eager write buffer (or \
                         none), not write-back"
                    ));
                }
                DataCacheMode::Off => {}
            }
        }
        for (flow, partition) in self.partitions.iter().enumerate() {
            partition
                .planes_in(&self.geometry)
                .map_err(|e| format!("resource partition of flow {flow}: {e}"))?;
        }
        match self.precondition {
            Precondition::Clean => {}
            Precondition::SequentialFill { fraction } => {
                if !(0.0..=1.0).contains(&fraction) {
                    return Err(format!("fill fraction must be in [0, 1], got {fraction}"));
                }
            }
            Precondition::SteadyState {
                max_overwrite_factor,
            } => {
                if !(max_overwrite_factor.is_finite() && max_overwrite_factor >= 0.0) {
                    return Err(format!(
                        "max overwrite factor must be a finite number >= 0, got {max_overwrite_factor}"
                    ));
                }
            }
        }
        Ok(())
    }
}
