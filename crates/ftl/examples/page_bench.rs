//! Speed and memory of the `page` FTL alone (no timing): a sequential fill of a whole device,
//! random 4 KiB overwrites until write amplification settles (steady-state preconditioning),
//! then a measured steady-state phase with garbage collection active.
//!
//! ```sh
//! cargo run --release -p storsim-ftl --example page_bench            # 256 GiB
//! cargo run --release -p storsim-ftl --example page_bench -- 32      # 32 GiB
//! cargo run --release -p storsim-ftl --example page_bench -- 256 dftl
//! ```
//!
//! The loop is what an SSD's preconditioning does: call `write` with the ops discarded (the
//! vector is cleared and reused). Peak memory comes from VmHWM in /proc/self/status.

use std::time::Instant;
use storsim_core::Prng;
use storsim_flash::{FlashOpKind, Geometry};
use storsim_ftl::{dftl, page, FlashOp, Ftl};

fn vm_hwm_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Host writes `lpns` in order; returns (programs of any cause, seconds).
fn write_all(
    ftl: &mut dyn Ftl,
    lpns: impl Iterator<Item = u64>,
    ops: &mut Vec<FlashOp>,
) -> (u64, f64) {
    let t = Instant::now();
    let mut programs = 0u64;
    for lpn in lpns {
        ops.clear();
        ftl.write(lpn, ops).expect("write");
        programs += ops
            .iter()
            .filter(|o| o.kind == FlashOpKind::Program)
            .count() as u64;
    }
    (programs, t.elapsed().as_secs_f64())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let gib: u64 = args
        .get(1)
        .map(|s| s.parse().expect("size in GiB"))
        .unwrap_or(256);
    let which = args.get(2).map(String::as_str).unwrap_or("page");
    // 8 channels x 4 dies x 2 planes, 512 pages of 4 KiB per block; blocks per plane scale
    // with the size (2048 for 256 GiB).
    let blocks_per_plane = (gib << 30) / (64 * 512 * 4096);
    let g = Geometry {
        channels: 8,
        chips_per_channel: 1,
        dies_per_chip: 4,
        planes_per_die: 2,
        blocks_per_plane: blocks_per_plane as u32,
        pages_per_block: 512,
        page_bytes: 4096,
        oob_bytes: 224,
    };
    let before_kib = vm_hwm_kib().unwrap_or(0);
    let t_build = Instant::now();
    let mut ftl = match which {
        "page" => page::new(g, 3000, &page::Params::default()),
        "dftl" => dftl::new(g, 3000, &dftl::Params::default()),
        other => panic!("unknown FTL {other}: page or dftl"),
    }
    .expect("build");
    let build_s = t_build.elapsed().as_secs_f64();
    let physical = g.pages() as u64;
    let logical = ftl.logical_pages();
    println!(
        "{which}: {gib} GiB raw, {physical} physical pages, {logical} logical pages, \
         {} blocks of {} pages (built in {build_s:.2} s)",
        g.blocks(),
        g.pages_per_block
    );

    let mut ops = Vec::with_capacity(4096);
    let (_, fill_s) = write_all(ftl.as_mut(), 0..logical, &mut ops);
    println!(
        "sequential fill: {logical} writes in {fill_s:.2} s = {:.2} M writes/s",
        logical as f64 / fill_s / 1e6
    );

    // Random overwrites in windows of a tenth of the logical space, until the window's write
    // amplification moves less than 1 % three times in a row (at most 4 capacities).
    let mut rng = Prng::new(1);
    let window = logical / 10;
    let mut precondition_s = fill_s;
    let mut written = 0u64;
    let mut last_waf = 0.0f64;
    let mut calm = 0;
    while calm < 3 && written < 4 * logical {
        let (programs, s) = write_all(
            ftl.as_mut(),
            (0..window).map(|_| rng.below(logical)),
            &mut ops,
        );
        precondition_s += s;
        written += window;
        let waf = programs as f64 / window as f64;
        calm = if (waf - last_waf).abs() < 0.01 * waf {
            calm + 1
        } else {
            0
        };
        last_waf = waf;
        println!(
            "  random window: {:.1} capacities written, WAF {waf:.3}, {:.2} M writes/s",
            written as f64 / logical as f64,
            window as f64 / s / 1e6
        );
    }
    println!(
        "steady-state precondition (fill + {:.1} capacities random): {precondition_s:.1} s",
        written as f64 / logical as f64
    );

    // The measured steady phase: half a capacity of random overwrites.
    let n = logical / 2;
    let (programs, s) = write_all(ftl.as_mut(), (0..n).map(|_| rng.below(logical)), &mut ops);
    println!(
        "steady state: {n} random 4 KiB writes in {s:.2} s = {:.2} M host writes/s, WAF {:.3}",
        n as f64 / s / 1e6,
        programs as f64 / n as f64
    );
    for c in ftl.counters() {
        println!("  {} = {}", c.name, c.value);
    }
    if let Some(hwm) = vm_hwm_kib() {
        let bytes = (hwm - before_kib) * 1024;
        println!(
            "peak memory (VmHWM): {hwm} KiB, {:.2} bytes per physical page (target <= 16)",
            bytes as f64 / physical as f64
        );
    }
}
