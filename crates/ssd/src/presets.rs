//! Built-in SSDs. Each function returns complete parameters; the config layer lists them as
//! presets and lets device files override any part. Sources are in docs/models/ssd.md.

use crate::{Energy, FlushPolicy, Precondition, SsdParams, WriteBuffer};
use storsim_core::SimDuration;
use storsim_flash::{CellType, DieScheduling, Geometry, MultiPlane, Timing};
use storsim_ftl::{page, FtlConfig};

fn us(x: f64) -> SimDuration {
    SimDuration::from_us_f64(x)
}

/// FlashSim's simulated device (Kim et al. 2009, Table 2): large-block SLC, 2 KiB pages with
/// 64 B OOB, 64 pages (128 KiB) per block, page read 130.9 µs, page write 405.9 µs, block erase
/// 1.5 ms, FlashSim's per-operation energies. Table 2 gives no geometry beyond the block, so
/// storsim assumes 4 channels × 2 chips × 2 dies × 1 plane × 4096 blocks (8 GiB raw), an ONFI
/// 1.0 bus (40 MT/s × 8 bit) and takes the table's times as array times (tR, tPROG).
pub fn flashsim_2009(ftl: FtlConfig) -> SsdParams {
    let geometry = Geometry {
        channels: 4,
        chips_per_channel: 2,
        dies_per_chip: 2,
        planes_per_die: 1,
        blocks_per_plane: 4096,
        pages_per_block: 64,
        page_bytes: 2048,
        oob_bytes: 64,
    };
    let timing = Timing::uniform(
        CellType::Slc,
        us(130.9),
        us(405.9),
        us(1500.0),
        us(0.2),
        40,
        1,
    );
    SsdParams {
        geometry,
        timing,
        endurance: CellType::Slc.default_endurance(),
        ftl,
        queue_depth: 32,
        write_buffer: None,
        write_buffer_policy: FlushPolicy::Eager,
        energy: Energy::default(),
        precondition: Precondition::Clean,
        background_gc: false,
        idle_gc_delay: us(1000.0),
        controller_overhead: SimDuration::ZERO,
        copyback: true,
        multi_plane: MultiPlane::Off,
        die_scheduling: DieScheduling::Fifo,
        gc_reads_priority: false,
        slc_cache: None,
        seed: 1,
        partitions: Vec::new(),
        flow_data_cache: Vec::new(),
    }
}

/// The comparison device of `../shared/bench/` ("bench2g"): 2 GiB raw, 8 channels × 2 chips ×
/// 1 die × 2 planes × 128 blocks × 128 pages of 4 KiB; tR 75 µs, tPROG 750 µs, tBERS 3.8 ms
/// (MQSim's MLC defaults, taken as the same for every page); 333 MT/s × 8 bit channels;
/// 7 % over-provisioning; page-level FTL collecting garbage when a plane has under 5 % free
/// blocks (for whole blocks, fewer than ceil(5 % × 128) = 7); 256 MiB DRAM write cache.
pub fn bench2g() -> SsdParams {
    let geometry = Geometry {
        channels: 8,
        chips_per_channel: 2,
        dies_per_chip: 1,
        planes_per_die: 2,
        blocks_per_plane: 128,
        pages_per_block: 128,
        page_bytes: 4096,
        oob_bytes: 224,
    };
    let timing = Timing::uniform(
        CellType::Mlc,
        us(75.0),
        us(750.0),
        us(3800.0),
        us(0.2),
        333,
        1,
    );
    SsdParams {
        geometry,
        timing,
        endurance: CellType::Mlc.default_endurance(),
        ftl: FtlConfig::new(page::Params {
            over_provisioning_fraction: 0.07,
            gc_low_watermark_blocks: 7,
            gc_high_watermark_blocks: 8,
            ..page::Params::default()
        }),
        queue_depth: 64,
        write_buffer: Some(WriteBuffer {
            capacity_bytes: 256 << 20,
            latency: us(1.0),
        }),
        write_buffer_policy: FlushPolicy::Eager,
        energy: Energy::default(),
        precondition: Precondition::Clean,
        background_gc: false,
        idle_gc_delay: us(1000.0),
        controller_overhead: SimDuration::ZERO,
        copyback: false,
        multi_plane: MultiPlane::Off,
        die_scheduling: DieScheduling::Fifo,
        gc_reads_priority: false,
        slc_cache: None,
        seed: 1,
        partitions: Vec::new(),
        flow_data_cache: Vec::new(),
    }
}

/// The 1 GB SanDisk USB stick of the hybrid-disk thesis (Konanki, §5), under the ANAND FTL
/// that the thesis found to model it best. The thesis gives neither the geometry nor the
/// timings, so storsim assumes what its own reasoning implies (2 KiB pages, since requests
/// that are not page-aligned cause its page-static erases; 64-page blocks; one chip) and takes
/// the timings from typical 1 Gbit large-block SLC datasheets of the time: tR 25 µs, tPROG
/// 200 µs, tBERS 2 ms, a 40 MT/s 8-bit bus. Calibrate against a real stick for better numbers.
pub fn sandisk_usb_anand() -> SsdParams {
    let geometry = Geometry {
        channels: 1,
        chips_per_channel: 1,
        dies_per_chip: 1,
        planes_per_die: 1,
        blocks_per_plane: 8192,
        pages_per_block: 64,
        page_bytes: 2048,
        oob_bytes: 64,
    };
    let timing = Timing::uniform(
        CellType::Slc,
        us(25.0),
        us(200.0),
        us(2000.0),
        us(0.2),
        40,
        1,
    );
    SsdParams {
        geometry,
        timing,
        endurance: CellType::Slc.default_endurance(),
        ftl: FtlConfig::default_for("anand").expect("anand FTL exists"),
        queue_depth: 1,
        write_buffer: None,
        write_buffer_policy: FlushPolicy::Eager,
        energy: Energy::default(),
        precondition: Precondition::Clean,
        background_gc: false,
        idle_gc_delay: us(1000.0),
        controller_overhead: SimDuration::ZERO,
        copyback: false,
        multi_plane: MultiPlane::Off,
        die_scheduling: DieScheduling::Fifo,
        gc_reads_priority: false,
        slc_cache: None,
        seed: 1,
        partitions: Vec::new(),
        flow_data_cache: Vec::new(),
    }
}

/// A representative modern TLC NVMe drive, about 600 GB raw: 8 channels × 4 chips × 2 dies × 4
/// planes × 256 blocks × 576 pages of 16 KiB. Timings are typical of published 64- to 96-layer
/// 3D TLC parts (ISSCC 2018–2020): tR 50 / 60 / 70 µs for lower / middle / upper pages,
/// tPROG 600 µs per page on average, tBERS 3.5 ms, an ONFI 4 bus at 1200 MT/s × 8 bit, endurance
/// 3,000 cycles; 1 GiB of DRAM write buffer, queue depth 1024, background GC on; multi-plane
/// reads, programs and erases with the same page address in every plane, as such parts offer
/// (without them, 64 dies of 600 µs programs could not sustain the multi-GB/s sequential
/// writes of drives of this class). 3D TLC programs
/// a word line's three pages in one pass (about 1.8 ms), so unlike reads the program time is the
/// same for every page level: a third of the pass each. Operation energies are FlashSim's SLC
/// figures (no TLC figures are published with these timings); override `[ssd.energy]` for
/// energy studies. It is not a specific product; it gives a realistic order of magnitude for
/// "what if" studies.
pub fn tlc_nvme() -> SsdParams {
    let geometry = Geometry {
        channels: 8,
        chips_per_channel: 4,
        dies_per_chip: 2,
        planes_per_die: 4,
        blocks_per_plane: 256,
        pages_per_block: 576,
        page_bytes: 16384,
        oob_bytes: 1952,
    };
    let mut timing = Timing::uniform(
        CellType::Tlc,
        us(50.0),
        us(600.0),
        us(3500.0),
        us(0.1),
        1200,
        1,
    );
    // Lower, middle and upper page; a TLC cell has no fourth level, which repeats the last as
    // a device file's per-level list does.
    timing.read = [us(50.0), us(60.0), us(70.0), us(70.0)];
    SsdParams {
        geometry,
        timing,
        endurance: CellType::Tlc.default_endurance(),
        // The SSD decides when the device is idle; the FTL must agree to collect then.
        ftl: FtlConfig::new(page::Params {
            gc_background: true,
            ..page::Params::default()
        }),
        queue_depth: 1024,
        write_buffer: Some(WriteBuffer {
            capacity_bytes: 1 << 30,
            latency: us(2.0),
        }),
        write_buffer_policy: FlushPolicy::Eager,
        energy: Energy::default(),
        precondition: Precondition::Clean,
        background_gc: true,
        idle_gc_delay: us(1000.0),
        controller_overhead: us(5.0),
        copyback: false,
        multi_plane: MultiPlane::SamePage,
        die_scheduling: DieScheduling::Fifo,
        gc_reads_priority: false,
        slc_cache: None,
        seed: 1,
        partitions: Vec::new(),
        flow_data_cache: Vec::new(),
    }
}
