//! The wear-levelling experiment of the hybrid-disk thesis (Konanki, §5.4, Fig. 5.7): an 85 MB
//! file written sequentially over a 100 MB partition of a clean 1 GB USB flash stick. The thesis
//! reports that ANAND and FMAX erase no block (both use every unused block before reclaiming
//! one) and that the page-level FTL without wear levelling erases blocks 0, 1 or 2 times,
//! "because the I/O requests do not fall on flash page boundaries": a page that two requests
//! share is written twice, and the second write finds it programmed.
//!
//! The figure's trace is not available, so this test rebuilds the write stream from what the
//! thesis says and what the tools of its day did:
//! - the device: a 1 GiB stick of large-block SLC NAND, 2 KiB pages, 64 pages (128 KiB) per
//!   block, 8192 blocks (the thesis gives no geometry; a 2 KiB page is the smallest that makes
//!   512-byte-sector requests miss page boundaries, and 64 pages a block goes with it);
//! - the partition: 100 MiB starting at sector 63, the DOS partitioning default, so file-system
//!   blocks (4 KiB) are 3 sectors off the 2 KiB flash pages;
//! - the file: 85 MiB laid out the way ext2 lays out a large file (12 direct blocks, then an
//!   indirect block ahead of every 1024 data blocks, the double-indirect block ahead of the
//!   second indirect one), written in file order; data goes in requests of at most 256 sectors
//!   (128 KiB, the largest request in the thesis' Table 5.1), each run of data blocks split from
//!   its own start, and each run of metadata blocks as one request.
//!
//! Every request becomes one write request of the flash pages it touches (`Ftl::write_request`),
//! as the thesis' flash module gets a request of `n` pages starting at page `p`: the page-level
//! FTL erases a block at most once per request (Fig. 4.1), the others write page by page. A
//! block is erased once per request that finds one of its pages programmed: with these
//! sequential requests, only a request's first page can be one the previous request wrote. A
//! control run writes the same 85 MiB in aligned 128 KiB requests: then even the page-level FTL
//! erases nothing.
//!
//! The figure itself, for all four of the thesis' FTLs and through the whole SSD model, is the
//! sweep `experiments/konanki/fig5-7-wear.toml` (docs/experiments.md (Konanki)), which draws the
//! request sizes from the thesis' Table 5.1 instead of an ext2 layout; this test keeps the
//! FTL-level reconstruction.

use storsim_flash::{BlockId, FlashOpKind, Geometry};
use storsim_ftl::{Ftl, FtlConfig};

const SECTOR_BYTES: u64 = 512;
const PAGE_BYTES: u64 = 2048;
const SECTORS_PER_PAGE: u64 = PAGE_BYTES / SECTOR_BYTES;
const PAGES_PER_BLOCK: u32 = 64;
const MIB: u64 = 1 << 20;
const PARTITION_START_SECTOR: u64 = 63;
const PARTITION_BYTES: u64 = 100 * MIB;
const FILE_BYTES: u64 = 85 * MIB;
const FS_BLOCK_SECTORS: u64 = 8;
const MAX_REQUEST_SECTORS: u64 = 256;
/// Where the file's first block sits in the partition: after 1 MiB of file-system metadata,
/// which this trace does not write.
const FILE_FIRST_FS_BLOCK: u64 = MIB / (FS_BLOCK_SECTORS * SECTOR_BYTES);

fn usb_stick() -> Geometry {
    Geometry {
        channels: 1,
        chips_per_channel: 1,
        dies_per_chip: 1,
        planes_per_die: 1,
        blocks_per_plane: 8192,
        pages_per_block: PAGES_PER_BLOCK,
        page_bytes: PAGE_BYTES as u32,
        oob_bytes: 64,
    }
}

/// The write requests (first sector, sectors) of the 85 MiB file, in the order they are issued.
fn file_requests() -> Vec<(u64, u64)> {
    // Runs of file-system blocks, in disk order: (blocks, is metadata).
    let mut data_left = FILE_BYTES / (FS_BLOCK_SECTORS * SECTOR_BYTES);
    let mut runs = Vec::new();
    let direct = data_left.min(12);
    runs.push((direct, false));
    data_left -= direct;
    let mut indirect_blocks = 0;
    while data_left > 0 {
        // The second indirect block hangs off the double-indirect block, written just before it.
        let meta = if indirect_blocks == 1 { 2 } else { 1 };
        runs.push((meta, true));
        indirect_blocks += 1;
        let data = data_left.min(1024);
        runs.push((data, false));
        data_left -= data;
    }
    let mut requests = Vec::new();
    let mut sector = PARTITION_START_SECTOR + FILE_FIRST_FS_BLOCK * FS_BLOCK_SECTORS;
    for (blocks, metadata) in runs {
        let mut left = blocks * FS_BLOCK_SECTORS;
        while left > 0 {
            let n = if metadata {
                left
            } else {
                left.min(MAX_REQUEST_SECTORS)
            };
            requests.push((sector, n));
            sector += n;
            left -= n;
        }
    }
    let end = PARTITION_START_SECTOR + PARTITION_BYTES / SECTOR_BYTES;
    assert!(sector <= end, "the file overflows the partition");
    requests
}

/// Writes the flash pages each request touches as one request; returns the pages written.
fn replay(ftl: &mut dyn Ftl, requests: &[(u64, u64)]) -> u64 {
    let mut ops = Vec::new();
    let mut page_writes = 0;
    for &(sector, n) in requests {
        let first = sector / SECTORS_PER_PAGE;
        let pages = (sector + n - 1) / SECTORS_PER_PAGE + 1 - first;
        ops.clear();
        ftl.write_request(first, pages, &mut ops)
            .unwrap_or_else(|e| panic!("{}: write of {pages} pages at {first}: {e}", ftl.name()));
        // The page-level FTL erases a block at most once per request (ANAND and FMAX erase
        // nothing here at all).
        let mut erased: Vec<_> = ops
            .iter()
            .filter(|o| o.kind == FlashOpKind::Erase)
            .map(|o| o.ppa.0 / PAGES_PER_BLOCK)
            .collect();
        let erases = erased.len();
        erased.sort_unstable();
        erased.dedup();
        assert_eq!(erased.len(), erases, "{}: a block erased twice", ftl.name());
        page_writes += pages;
    }
    page_writes
}

/// Blocks by erase count (index = erases), over the blocks `range` covers.
fn histogram(ftl: &dyn Ftl, blocks: std::ops::Range<u32>) -> Vec<u32> {
    let mut h = Vec::new();
    for b in blocks {
        let e = ftl.nand().erase_count(BlockId(b)) as usize;
        if h.len() <= e {
            h.resize(e + 1, 0);
        }
        h[e] += 1;
    }
    h
}

fn print_histogram(what: &str, h: &[u32]) {
    let total: u32 = h.iter().sum();
    let cells: Vec<String> = h
        .iter()
        .enumerate()
        .map(|(erases, &n)| format!("{erases}x: {n} ({:.3})", n as f64 / total as f64))
        .collect();
    println!("{what}: {}", cells.join(", "));
}

fn partition_blocks(g: &Geometry) -> std::ops::Range<u32> {
    let block_sectors = g.pages_per_block as u64 * SECTORS_PER_PAGE;
    let first = PARTITION_START_SECTOR / block_sectors;
    let last = (PARTITION_START_SECTOR + PARTITION_BYTES / SECTOR_BYTES - 1) / block_sectors;
    first as u32..last as u32 + 1
}

fn ftls() -> Vec<FtlConfig> {
    ["page-static", "anand", "fmax"]
        .iter()
        .map(|name| FtlConfig::default_for(name).expect("known FTL"))
        .collect()
}

#[test]
fn fig_5_7_unaligned_file_write_over_a_clean_stick() {
    let g = usb_stick();
    let requests = file_requests();
    let sectors: u64 = requests.iter().map(|r| r.1).sum();
    println!(
        "Fig. 5.7: {} requests, {} sectors ({:.2} MiB incl. indirect blocks), partition at \
         sector {PARTITION_START_SECTOR}, 2 KiB pages, 128 KiB blocks, {} blocks",
        requests.len(),
        sectors,
        (sectors * SECTOR_BYTES) as f64 / MIB as f64,
        g.blocks()
    );
    for config in ftls() {
        let mut ftl = config.build(g, 100_000).expect("builds");
        let page_writes = replay(ftl.as_mut(), &requests);
        let partition = histogram(ftl.as_ref(), partition_blocks(&g));
        let device = histogram(ftl.as_ref(), 0..g.blocks());
        println!(
            "{:<12} page writes {page_writes}, erases {}",
            ftl.name(),
            ftl.nand().total_erases()
        );
        print_histogram("  partition blocks", &partition);
        print_histogram("  device blocks   ", &device);
        match ftl.name() {
            "page-static" => {
                assert!(
                    device.len() <= 3,
                    "a block erased more than twice: {device:?}"
                );
                assert!(
                    device.len() == 3 && device[1] > 0 && device[2] > 0,
                    "the thesis shows blocks erased once and twice: {device:?}"
                );
                assert_eq!(
                    partition[1..],
                    device[1..],
                    "only partition blocks are erased"
                );
            }
            _ => assert_eq!(ftl.nand().total_erases(), 0, "{} erased blocks", ftl.name()),
        }
    }
}

#[test]
fn fig_5_7_control_aligned_requests_erase_nothing() {
    let g = usb_stick();
    // The file's first sector rounded up to a block: aligned 128 KiB requests.
    let block_sectors = PAGES_PER_BLOCK as u64 * SECTORS_PER_PAGE;
    let first = (PARTITION_START_SECTOR + FILE_FIRST_FS_BLOCK * FS_BLOCK_SECTORS)
        .div_ceil(block_sectors)
        * block_sectors;
    let requests: Vec<(u64, u64)> = (0..FILE_BYTES / SECTOR_BYTES / MAX_REQUEST_SECTORS)
        .map(|i| (first + i * MAX_REQUEST_SECTORS, MAX_REQUEST_SECTORS))
        .collect();
    for config in ftls() {
        let mut ftl = config.build(g, 100_000).expect("builds");
        assert_eq!(replay(ftl.as_mut(), &requests), FILE_BYTES / PAGE_BYTES);
        let device = histogram(ftl.as_ref(), 0..g.blocks());
        println!("aligned {:<12}", ftl.name());
        print_histogram("  device blocks   ", &device);
        assert_eq!(ftl.nand().total_erases(), 0, "{}", ftl.name());
    }
}
