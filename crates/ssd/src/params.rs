//! The SSD's parameters: plain data the config layer fills in.

use storsim_core::SimDuration;
use storsim_flash::{Geometry, Timing};
use storsim_ftl::FtlConfig;

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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteBuffer {
    pub capacity_bytes: u64,
    /// Time to move a request's data into DRAM, charged once per request.
    pub latency: SimDuration,
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
    pub energy: Energy,
    pub precondition: Precondition,
    /// Garbage-collect in idle time (the FTL decides whether there is anything to do).
    pub background_gc: bool,
    /// How long the device must be idle before background GC starts.
    pub idle_gc_delay: SimDuration,
    /// Controller time per request before any flash operation (command decode, DMA setup).
    pub controller_overhead: SimDuration,
    /// Seed for everything random in preconditioning.
    pub seed: u64,
}
