//! What several SSD test files share: a small device whose timing is easy to work out by
//! hand, and reading a counter.

use storsim_core::{Device, SimDuration};
use storsim_flash::{CellType, Geometry, Timing};
use storsim_ftl::FtlConfig;
use storsim_ssd::{presets, Precondition, SsdDevice, SsdParams};

pub const PAGE: u64 = 4096;
pub const CMD_NS: u64 = 1_000;
pub const TR_NS: u64 = 50_000;
pub const TPROG_NS: u64 = 500_000;
/// 4096 bytes at 400 MT/s × 1 byte.
pub const XFER_NS: u64 = 10_240;

/// `channels` × `dies_per_channel` dies of `planes` planes, each of `blocks` blocks of
/// `pages` pages of 4 KiB; uniform SLC timing from the constants above (tBERS 2 ms), a
/// 400 MT/s × 8-bit channel; page FTL, clean, no write buffer, no controller overhead.
pub fn hand_timed(
    channels: u32,
    dies_per_channel: u32,
    planes: u32,
    blocks: u32,
    pages: u32,
) -> SsdParams {
    let mut p = presets::flashsim_2009(FtlConfig::default_for("page").unwrap());
    p.geometry = Geometry {
        channels,
        chips_per_channel: dies_per_channel,
        dies_per_chip: 1,
        planes_per_die: planes,
        blocks_per_plane: blocks,
        pages_per_block: pages,
        page_bytes: PAGE as u32,
        oob_bytes: 0,
    };
    p.timing = Timing::uniform(
        CellType::Slc,
        SimDuration(TR_NS),
        SimDuration(TPROG_NS),
        SimDuration(2_000_000),
        SimDuration(CMD_NS),
        400,
        1,
    );
    p.write_buffer = None;
    p.controller_overhead = SimDuration::ZERO;
    p.precondition = Precondition::Clean;
    p
}

pub fn counter(d: &SsdDevice, name: &str) -> f64 {
    d.counters()
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no counter {name}"))
        .value
}

/// The records given, replayed open loop at their own timestamps, as a workload.
pub fn workload(records: Vec<storsim_workload::Record>) -> storsim_workload::Workload {
    storsim_workload::Workload::from_records(
        "test",
        records,
        storsim_workload::Pacing::Open,
        storsim_workload::Origin::Index,
    )
}
