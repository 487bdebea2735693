//! The `page-static` FTL takes whole host requests (the hybrid-disk thesis' Fig. 4.1: "a block is
//! not erased more than once for servicing a single request"). On FlashSim's device (2 KiB pages,
//! 64-page blocks) with every page prewritten, 100 aligned 128 KiB sequential writes erase each
//! of their 100 blocks once and program 6400 pages, not once per page (6400 erases and 409,600
//! programs when the SSD made one FTL call per page).

use storsim_core::conformance;
use storsim_core::{Completion, Op, SimTime};
use storsim_flash::{FlashOpKind, Scheduler};
use storsim_ftl::{page_static, FtlConfig};
use storsim_ssd::{presets, SsdDevice};
#[allow(dead_code)]
mod support;
use support::counter;

const KIB: u64 = 1024;

fn device(prewrite_probability: f64) -> SsdDevice {
    let ftl = FtlConfig::new(page_static::Params {
        prewrite_probability,
        prewrite_seed: 1,
    });
    SsdDevice::new(presets::flashsim_2009(ftl)).expect("device builds")
}

/// Submits each write (offset, length in bytes) alone, once the device is idle, through the
/// conformance kit's checked driver; returns the completions.
fn write_one_at_a_time(d: &mut SsdDevice, writes: &[(u64, u64)]) -> Vec<Completion> {
    let requests: Vec<(Op, u64, u64)> = writes
        .iter()
        .map(|&(offset_bytes, len_bytes)| (Op::Write, offset_bytes, len_bytes))
        .collect();
    let done = conformance::drive_one_at_a_time(d, &requests).unwrap_or_else(|v| panic!("{v}"));
    assert_eq!(done.len(), writes.len(), "every write completes");
    done
}

fn sequential(first_byte: u64, len: u64, n: u64) -> Vec<(u64, u64)> {
    (0..n).map(|i| (first_byte + i * len, len)).collect()
}

#[test]
fn aligned_128k_writes_on_a_fully_prewritten_device_erase_each_block_once() {
    let mut d = device(1.0);
    let done = write_one_at_a_time(&mut d, &sequential(0, 128 * KIB, 100));
    let erases = counter(&d, "flash_erases");
    let programs = counter(&d, "flash_programs");
    let reads = counter(&d, "flash_reads");
    println!(
        "prewrite 1.0, 100 x 128 KiB aligned: {erases} erases, {programs} programs, {reads} reads"
    );
    assert_eq!(erases, 100.0);
    assert_eq!(programs, 6400.0);
    // Every page of each block is the host's: nothing to read back.
    assert_eq!(reads, 0.0);
    assert_eq!(counter(&d, "flash_programs_host"), 6400.0);
    assert_eq!(counter(&d, "host_write_pages"), 6400.0);
    assert_eq!(counter(&d, "write_amplification"), 1.0);
    for b in 0..100 {
        assert_eq!(d.ftl().nand().erase_count(storsim_flash::BlockId(b)), 1);
    }
    assert_eq!(d.ftl().nand().total_erases(), 100);

    // Each write's latency is one erase followed by 64 programs on its block's die, scheduled on
    // an idle device.
    let params = presets::flashsim_2009(FtlConfig::default_for("page-static").unwrap());
    let mut s = Scheduler::new(params.geometry, params.timing.clone());
    let mut t = s.schedule(FlashOpKind::Erase, storsim_flash::Ppa(0), SimTime::ZERO);
    for page in 0..64 {
        t = s.schedule(FlashOpKind::Program, storsim_flash::Ppa(page), t);
    }
    for c in &done {
        assert_eq!(c.finish - c.request.arrival, t - SimTime::ZERO, "{c:?}");
    }
}

#[test]
fn unaligned_128k_writes_erase_the_two_blocks_they_touch_once_each() {
    let mut d = device(1.0);
    // Half a block off: each write covers the second half of one block and the first half of
    // the next, 32 pages of each.
    write_one_at_a_time(&mut d, &sequential(64 * KIB, 128 * KIB, 10));
    // Block 0's second half, blocks 1..=9 twice (once per write touching each half), and
    // block 10's first half.
    assert_eq!(counter(&d, "flash_erases"), 20.0);
    // Per block rewrite: 32 pages kept (read and programmed back) and 32 of the host's.
    assert_eq!(counter(&d, "flash_reads"), 20.0 * 32.0);
    assert_eq!(counter(&d, "flash_programs_merge"), 20.0 * 32.0);
    assert_eq!(counter(&d, "flash_programs_host"), 640.0);
    assert_eq!(d.ftl().nand().erase_count(storsim_flash::BlockId(0)), 1);
    for b in 1..10 {
        assert_eq!(d.ftl().nand().erase_count(storsim_flash::BlockId(b)), 2);
    }
    assert_eq!(d.ftl().nand().erase_count(storsim_flash::BlockId(10)), 1);
}

#[test]
fn a_clean_device_programs_without_erasing() {
    let mut d = device(0.0);
    let done = write_one_at_a_time(&mut d, &sequential(0, 128 * KIB, 100));
    assert_eq!(counter(&d, "flash_erases"), 0.0);
    assert_eq!(counter(&d, "flash_programs"), 6400.0);
    // 64 programs back to back on one die.
    let params = presets::flashsim_2009(FtlConfig::default_for("page-static").unwrap());
    let mut s = Scheduler::new(params.geometry, params.timing.clone());
    let mut t = SimTime::ZERO;
    for page in 0..64 {
        t = t.max(s.schedule(
            FlashOpKind::Program,
            storsim_flash::Ppa(page),
            SimTime::ZERO,
        ));
    }
    for c in &done {
        assert_eq!(c.finish - c.request.arrival, t - SimTime::ZERO, "{c:?}");
    }
    // Rewriting the same range now finds every page programmed: one erase per block again.
    write_one_at_a_time(&mut d, &sequential(0, 128 * KIB, 100));
    assert_eq!(counter(&d, "flash_erases"), 100.0);
    assert_eq!(counter(&d, "flash_programs"), 12_800.0);
}
