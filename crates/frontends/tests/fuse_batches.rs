//! The emulator behind its FUSE front end, over both transports. Over io_uring the pacing
//! thread commits the replies due in a round with one `io_uring_enter` and finds new requests
//! by polling the ring; concurrent direct reads finishing close together must all come back
//! with the right data, none before its instant, each counted and recorded once. Timing checks
//! are lower bounds only. Each test skips, saying why, where FUSE cannot be used (failing instead
//! under .ci/run, which promises it: see storsim-testenv), and the io_uring variant where the
//! kernel has no FUSE over io_uring.

mod support;

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use storsim_frontends::FuseFrontend;
use storsim_fuse::{FileExport, Mount, MountOptions, Transport};
use support::{assert_record, recorded_emulator};

const EXPORT_BYTES: u64 = 4 << 20;
const SERVICE_US: u64 = 2000;
const READERS: u64 = 12;
const BLOCK: usize = 4096;

fn skip(transport: Transport) -> bool {
    if let Err(e) = OpenOptions::new().read(true).write(true).open("/dev/fuse") {
        storsim_testenv::missing(&format!("/dev/fuse cannot be opened ({e})"));
        return true;
    }
    if !rustix::process::geteuid().is_root() {
        storsim_testenv::missing("mounting from this test needs root");
        return true;
    }
    if transport == Transport::IoUring {
        if let Some(reason) = storsim_fuse::io_uring_unavailable() {
            storsim_testenv::kernel_lacks(&format!(
                "the io_uring transport cannot be tested: {reason}"
            ));
            return true;
        }
    }
    false
}

/// A 4 KiB-aligned buffer for O_DIRECT, as a Vec of 4 KiB blocks.
#[repr(C, align(4096))]
#[derive(Clone, Copy)]
struct Page([u8; BLOCK]);

fn pattern(offset: u64) -> Page {
    let mut page = Page([0; BLOCK]);
    for (i, b) in page.0.iter_mut().enumerate() {
        *b = ((offset / BLOCK as u64) as usize * 31 + i * 7) as u8;
    }
    page
}

fn open_direct(path: &PathBuf) -> File {
    OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .expect("open O_DIRECT")
}

fn concurrent_reads_finishing_together(transport: Transport) {
    if skip(transport) {
        return;
    }
    let (emulator, record) = recorded_emulator(EXPORT_BYTES, SERVICE_US);
    // Removed when this guard drops, after the mount (declared later) is gone.
    let tmp = tempfile::Builder::new()
        .prefix(&format!(
            "storsim-emulate-fuse-{}-{transport}-",
            std::process::id()
        ))
        .tempdir()
        .unwrap();
    let dir = tmp.path();
    let options = MountOptions {
        transport,
        log: Arc::new(|line| eprintln!("{line}")),
        ..MountOptions::default()
    };
    let handler = Arc::new(FuseFrontend {
        emulator: Arc::clone(&emulator),
    });
    let export = FileExport {
        file_name: "disk".into(),
        size_bytes: EXPORT_BYTES,
        read_only: false,
    };
    let mount = Mount::mount(dir, export, options, handler).expect("mount");
    assert_eq!(mount.transport(), transport);
    if let Some(poller) = mount.ring_poller() {
        emulator.attach_poller(Box::new(storsim_frontends::FuseRingPoller(poller)));
    }
    let path = mount.file_path();

    // A block's write and its read follow each other, so the whole takes at least two service
    // times; the reads alone overlap on the sixteen servers and may take just one.
    let started = Instant::now();
    let file = open_direct(&path);
    for block in 0..READERS {
        let offset = block * BLOCK as u64;
        file.write_at(&pattern(offset).0, offset).expect("write");
    }
    // Twelve readers released together reach the model within a short while of each other,
    // and sixteen servers finish them close together: their replies share rounds.
    let barrier = Arc::new(std::sync::Barrier::new(READERS as usize));
    let readers: Vec<_> = (0..READERS)
        .map(|block| {
            let (path, barrier) = (path.clone(), Arc::clone(&barrier));
            std::thread::spawn(move || {
                let file = open_direct(&path);
                let mut page = Page([0; BLOCK]);
                barrier.wait();
                let offset = block * BLOCK as u64;
                assert_eq!(file.read_at(&mut page.0, offset).expect("read"), BLOCK);
                assert!(page.0 == pattern(offset).0, "data of block {block}");
            })
        })
        .collect();
    for r in readers {
        r.join().expect("reader");
    }
    assert!(
        started.elapsed() >= Duration::from_micros(2 * SERVICE_US),
        "a write and a read took {:?}",
        started.elapsed()
    );
    drop(file);
    mount.unmount().expect("unmount");
    let report = emulator.shutdown().unwrap();
    assert_eq!(report.lateness.replies, 2 * READERS, "{report:?}");
    assert_eq!(report.failed, 0);
    assert_eq!(report.in_flight, 0);
    let _ = std::fs::remove_dir(dir);

    assert_record(&record, 2 * READERS as usize, SERVICE_US);
}

#[test]
fn concurrent_reads_finishing_together_over_dev_fuse() {
    concurrent_reads_finishing_together(Transport::DevFuse);
}

#[test]
fn concurrent_reads_finishing_together_over_io_uring() {
    concurrent_reads_finishing_together(Transport::IoUring);
}
