//! Real kernel mounts of the one-file export: what `stat`, `readdir`, O_DIRECT reads and writes,
//! hole punching and unmounting look like from the outside.

mod common;

use std::os::unix::fs::{FileExt, MetadataExt};
use std::process::Command as Process;
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use common::{
    assert_interleaved_blocks, errno_of, export, interleaved_blocks, mount, open_direct, Aligned,
    DelayedHandler, MemHandler,
};
use storsim_fuse::{
    Command, FileExport, FuseError, Handler, Mount, MountOptions, Reply, ReplyBatch, Request,
    Transport,
};

const MIB: u64 = 1 << 20;

fn stat_and_readdir_show_one_file_of_the_exact_size(transport: Transport) {
    skip_unless_fuse!();
    // Deliberately not a power of two, so a size taken from anywhere else would show.
    let size = 3 * MIB + 3 * 4096;
    let handler = MemHandler::new(size as usize);
    let m = mount(
        "stat",
        export("disk", size, false),
        handler.clone(),
        transport,
    );

    let meta = std::fs::metadata(&m.file).expect("stat the file");
    assert!(meta.is_file());
    assert_eq!(meta.len(), size);
    assert_eq!(meta.blocks(), size / 512);
    assert_eq!(meta.ino(), 2);

    let dir_meta = std::fs::metadata(m.dir.path()).expect("stat the mount point");
    assert!(dir_meta.is_dir());
    assert_eq!(dir_meta.ino(), 1, "the mount point is the FUSE root");

    let names: Vec<String> = std::fs::read_dir(m.dir.path())
        .expect("readdir")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["disk".to_string()]);

    let missing = std::fs::metadata(m.dir.path().join("other")).unwrap_err();
    assert_eq!(errno_of(&missing), libc::ENOENT);
    assert!(
        handler.seen.list().is_empty(),
        "metadata must not reach the handler"
    );
    m.unmount();
}
over_both_transports!(stat_and_readdir_show_one_file_of_the_exact_size);

fn direct_io_round_trip_reaches_the_handler(transport: Transport) {
    skip_unless_fuse!();
    let size = 8 * MIB;
    let handler = MemHandler::new(size as usize);
    let m = mount(
        "rw",
        export("disk", size, false),
        handler.clone(),
        transport,
    );

    let file = open_direct(&m.file, true).expect("open O_RDWR|O_DIRECT");
    let offset = MIB + 4096;
    let out = Aligned::filled(128 * 1024, 7);
    assert_eq!(file.write_at(&out, offset).expect("pwrite"), out.len());
    let mut back = Aligned::new(out.len());
    assert_eq!(file.read_at(&mut back, offset).expect("pread"), out.len());
    assert_eq!(
        &back[..],
        &out[..],
        "read back differs from what was written"
    );

    {
        let data = handler.data.lock().unwrap();
        let start = offset as usize;
        assert_eq!(&data[start..start + out.len()], &out[..]);
        assert!(
            data[..start].iter().all(|&b| b == 0),
            "bytes before changed"
        );
        assert!(
            data[start + out.len()..].iter().all(|&b| b == 0),
            "bytes after changed"
        );
    }
    file.sync_all().expect("fsync");
    assert!(
        handler.seen.count(Command::Fsync) >= 1,
        "fsync reached the handler"
    );
    assert!(handler.seen.count(Command::Write) >= 1);
    assert!(handler.seen.count(Command::Read) >= 1);
    assert!(!handler.seen.out_of_range.load(Ordering::SeqCst));
    drop(file);
    m.unmount();
}
over_both_transports!(direct_io_round_trip_reaches_the_handler);

fn large_requests_arrive_whole(transport: Transport) {
    skip_unless_fuse!();
    let size = 16 * MIB;
    let handler = MemHandler::new(size as usize);
    let m = mount(
        "large",
        export("disk", size, false),
        handler.clone(),
        transport,
    );
    let file = open_direct(&m.file, true).expect("open");
    let out = Aligned::filled(4 * MIB as usize, 3);
    assert_eq!(file.write_at(&out, 0).unwrap(), out.len());
    let mut back = Aligned::new(out.len());
    assert_eq!(file.read_at(&mut back, 0).unwrap(), out.len());
    assert_eq!(&back[..], &out[..]);
    let largest = handler
        .seen
        .list()
        .iter()
        .filter(|r| r.0 == Command::Write)
        .map(|r| r.2)
        .max()
        .unwrap();
    // 1 MiB needs FUSE_MAX_PAGES; without it the kernel splits at 128 KiB.
    assert_eq!(
        largest, MIB as u32,
        "the negotiated 1 MiB max_write is used"
    );
    drop(file);
    m.unmount();
}
over_both_transports!(large_requests_arrive_whole);

fn reads_past_the_end_are_short(transport: Transport) {
    skip_unless_fuse!();
    let size = 2 * MIB + 8192;
    let handler = MemHandler::new(size as usize);
    handler.data.lock().unwrap()[size as usize - 1] = 0xAB;
    let m = mount(
        "eof",
        export("disk", size, false),
        handler.clone(),
        transport,
    );
    let file = open_direct(&m.file, false).expect("open");

    let mut buf = Aligned::new(16384);
    let n = file
        .read_at(&mut buf, size - 4096)
        .expect("read across the end");
    assert_eq!(n, 4096, "a read across the end stops at the end");
    assert_eq!(buf[4095], 0xAB);
    assert_eq!(file.read_at(&mut buf, size).expect("read at the end"), 0);
    assert_eq!(file.read_at(&mut buf, size + MIB).expect("read beyond"), 0);
    assert!(
        !handler.seen.out_of_range.load(Ordering::SeqCst),
        "the handler saw a request outside the device"
    );
    drop(file);
    m.unmount();
}
over_both_transports!(reads_past_the_end_are_short);

fn writes_past_the_end_fail(transport: Transport) {
    skip_unless_fuse!();
    let size = 2 * MIB;
    let handler = MemHandler::new(size as usize);
    let m = mount(
        "enospc",
        export("disk", size, false),
        handler.clone(),
        transport,
    );
    let file = open_direct(&m.file, true).expect("open");
    let buf = Aligned::filled(8192, 1);

    let err = file.write_at(&buf, size).unwrap_err();
    assert_eq!(errno_of(&err), libc::ENOSPC, "write at the end: {err}");
    let n = file
        .write_at(&buf, size - 4096)
        .expect("write across the end");
    assert_eq!(n, 4096, "a write across the end writes what fits");
    assert_eq!(
        &handler.data.lock().unwrap()[size as usize - 4096..],
        &buf[..4096]
    );
    assert!(!handler.seen.out_of_range.load(Ordering::SeqCst));
    assert_eq!(std::fs::metadata(&m.file).unwrap().len(), size, "no growth");
    drop(file);
    m.unmount();
}
over_both_transports!(writes_past_the_end_fail);

fn read_only_export_refuses_writers(transport: Transport) {
    skip_unless_fuse!();
    let size = MIB;
    let handler = MemHandler::new(size as usize);
    common::fill(&mut handler.data.lock().unwrap(), 11);
    let m = mount("ro", export("disk", size, true), handler.clone(), transport);

    for write_only in [true, false] {
        let err = std::fs::OpenOptions::new()
            .read(!write_only)
            .write(true)
            .open(&m.file)
            .unwrap_err();
        assert_eq!(errno_of(&err), libc::EROFS, "opening for writing: {err}");
    }
    let file = open_direct(&m.file, false).expect("read-only open works");
    let mut buf = Aligned::new(4096);
    assert_eq!(file.read_at(&mut buf, 4096).unwrap(), 4096);
    assert_eq!(&buf[..], &handler.data.lock().unwrap()[4096..8192]);
    assert_eq!(handler.seen.count(Command::Write), 0);
    drop(file);
    m.unmount();
}
over_both_transports!(read_only_export_refuses_writers);

fn the_size_cannot_change(transport: Transport) {
    skip_unless_fuse!();
    let size = 4 * MIB;
    let handler = MemHandler::new(size as usize);
    let m = mount(
        "resize",
        export("disk", size, false),
        handler.clone(),
        transport,
    );
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&m.file)
        .unwrap();

    let err = file.set_len(size / 2).unwrap_err();
    assert_eq!(errno_of(&err), libc::EPERM, "shrinking: {err}");
    let err = file.set_len(size * 2).unwrap_err();
    assert_eq!(errno_of(&err), libc::EPERM, "growing: {err}");
    file.set_len(size)
        .expect("setting the same size is a no-op");
    let err = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&m.file)
        .unwrap_err();
    assert_eq!(errno_of(&err), libc::EPERM, "O_TRUNC: {err}");
    assert_eq!(std::fs::metadata(&m.file).unwrap().len(), size);
    drop(file);
    m.unmount();
}
over_both_transports!(the_size_cannot_change);

fn punching_a_hole_trims_the_device(transport: Transport) {
    skip_unless_fuse!();
    let size = 4 * MIB;
    let handler = MemHandler::new(size as usize);
    handler.data.lock().unwrap().fill(0x5A);
    let m = mount(
        "trim",
        export("disk", size, false),
        handler.clone(),
        transport,
    );
    let file = open_direct(&m.file, true).expect("open");

    // SAFETY: fallocate on a descriptor owned by `file`.
    let rc = unsafe {
        libc::fallocate(
            std::os::fd::AsRawFd::as_raw_fd(&file),
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            MIB as i64,
            (2 * MIB) as i64,
        )
    };
    assert_eq!(rc, 0, "punch hole: {}", std::io::Error::last_os_error());
    let trims: Vec<_> = handler
        .seen
        .list()
        .into_iter()
        .filter(|r| r.0 == Command::Trim)
        .collect();
    assert_eq!(trims, vec![(Command::Trim, MIB, 2 * MIB as u32)]);
    let mut buf = Aligned::new(4096);
    file.read_at(&mut buf, MIB).unwrap();
    assert!(buf.iter().all(|&b| b == 0), "the hole reads as zeros");
    file.read_at(&mut buf, MIB - 4096).unwrap();
    assert!(buf.iter().all(|&b| b == 0x5A), "bytes before the hole stay");
    assert_eq!(std::fs::metadata(&m.file).unwrap().len(), size);
    drop(file);
    m.unmount();
}
over_both_transports!(punching_a_hole_trims_the_device);

fn concurrent_io_with_out_of_order_replies(transport: Transport) {
    skip_unless_fuse!();
    const THREADS: u64 = 4;
    const ROUNDS: u64 = 24;
    const BLOCK: usize = 64 * 1024;
    let size = THREADS * ROUNDS * BLOCK as u64;
    let handler = DelayedHandler::new(size as usize, Duration::from_millis(2));
    let m = mount(
        "concurrent",
        export("disk", size, false),
        handler.clone(),
        transport,
    );

    interleaved_blocks(&m.file, THREADS, ROUNDS, BLOCK, 1);
    let data = handler.data.lock().unwrap();
    assert_interleaved_blocks(&data, THREADS * ROUNDS, BLOCK, 1);
    drop(data);
    assert!(!handler.seen.out_of_range.load(Ordering::SeqCst));
    let batch = handler.max_batch.load(Ordering::SeqCst);
    assert!(
        batch >= 2,
        "requests from 4 threads never overlapped (largest batch {batch}), so no reply went \
         back out of order"
    );
    m.unmount();
}
over_both_transports!(concurrent_io_with_out_of_order_replies);

fn an_unanswered_reply_becomes_eio(transport: Transport) {
    skip_unless_fuse!();
    let m = mount(
        "drop",
        export("disk", MIB, false),
        Arc::new(common::DroppingHandler),
        transport,
    );
    let file = open_direct(&m.file, false).expect("open");
    let mut buf = Aligned::new(4096);
    let err = file.read_at(&mut buf, 0).unwrap_err();
    assert_eq!(errno_of(&err), libc::EIO);
    drop(file);
    m.unmount();
}
over_both_transports!(an_unanswered_reply_becomes_eio);

fn unmount_from_outside_ends_wait(transport: Transport) {
    skip_unless_fuse!();
    if common::which("umount").is_none() {
        storsim_testenv::missing("umount is not installed");
        return;
    }
    let m = mount(
        "external",
        export("disk", MIB, false),
        MemHandler::new(MIB as usize),
        transport,
    );
    let mount = m.mount.as_ref().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|s| {
        s.spawn(|| {
            mount.wait();
            let _ = tx.send(());
        });
        std::thread::sleep(Duration::from_millis(100));
        assert!(
            rx.try_recv().is_err(),
            "wait() returned while still mounted"
        );
        let status = Process::new("umount")
            .arg(m.dir.path())
            .status()
            .expect("run umount");
        assert!(status.success(), "umount {status}");
        let ended = rx.recv_timeout(Duration::from_secs(10));
        if ended.is_err() {
            // Release the waiting thread so the scope can end and the failure be reported.
            let _ = Process::new("umount").arg("-l").arg(m.dir.path()).status();
        }
        assert!(ended.is_ok(), "wait() did not return after umount");
    });
    assert!(mount.has_ended());
    m.unmount();
}
over_both_transports!(unmount_from_outside_ends_wait);

fn unmount_leaves_an_empty_directory(transport: Transport) {
    skip_unless_fuse!();
    let m = mount(
        "unmount",
        export("disk", MIB, false),
        MemHandler::new(MIB as usize),
        transport,
    );
    let dir = m.dir.path().to_path_buf();
    let file = std::fs::File::open(&m.file).expect("open");
    let mount = m.mount.as_ref().unwrap();
    assert_eq!(mount.file_path(), std::fs::canonicalize(&m.file).unwrap());
    // Unmounting while the file is still open must not block: the mount is detached at once.
    let mut m = m;
    m.mount.take().unwrap().unmount().expect("unmount");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    drop(file);
}
over_both_transports!(unmount_leaves_an_empty_directory);

#[test]
fn bad_exports_and_mount_points_are_refused() {
    let handler = MemHandler::new(0);
    let dir = common::TempDir::new("bad");
    for name in ["", ".", "..", "a/b"] {
        let result = Mount::mount(
            dir.path(),
            FileExport {
                file_name: name.to_string(),
                size_bytes: MIB,
                read_only: false,
            },
            MountOptions::default(),
            handler.clone(),
        );
        assert!(
            matches!(result, Err(FuseError::InvalidExport { .. })),
            "{name:?}: {result:?}"
        );
    }
    let result = Mount::mount(
        &dir.path().join("missing"),
        export("disk", MIB, false),
        MountOptions::default(),
        handler,
    );
    assert!(matches!(result, Err(FuseError::NotADirectory { .. })));
}

#[test]
fn auto_prefers_io_uring_where_the_kernel_offers_it() {
    skip_unless_fuse!();
    let m = mount(
        "auto",
        export("disk", MIB, false),
        MemHandler::new(MIB as usize),
        Transport::Auto,
    );
    // `mount` asserts the transport asked for; Auto resolves to one of the two.
    let expected = match storsim_fuse::io_uring_unavailable() {
        None => Transport::IoUring,
        Some(reason) => {
            eprintln!("io_uring unavailable ({reason}); Auto must fall back to /dev/fuse");
            Transport::DevFuse
        }
    };
    assert_eq!(m.mount().transport(), expected);
    assert_eq!(
        m.mount().ring_poller().is_some(),
        expected == Transport::IoUring,
        "a ring poller exists exactly for io_uring mounts"
    );
    let file = open_direct(&m.file, true).expect("open");
    let out = Aligned::filled(8192, 5);
    assert_eq!(file.write_at(&out, 4096).unwrap(), 8192);
    let mut back = Aligned::new(8192);
    assert_eq!(file.read_at(&mut back, 4096).unwrap(), 8192);
    assert_eq!(&back[..], &out[..]);
    drop(file);
    m.unmount();
}

/// Requests handed to a long-lived answering thread, as the emulator hands them to its pacing
/// thread.
struct ToAnswerer(Mutex<mpsc::Sender<(Request, Reply)>>);

impl Handler for ToAnswerer {
    fn request(&self, request: Request, reply: Reply) {
        // The answerer only goes away at the end of the test; a reply sent nowhere is
        // dropped, which answers EIO.
        let _ = self.0.lock().unwrap().send((request, reply));
    }
}

/// What the answering thread saw of its batches.
#[derive(Default, Debug)]
struct BatchStats {
    /// Replies per batch that had any.
    sizes: Vec<usize>,
    /// `before_write` calls per send.
    writes: Vec<usize>,
    /// Adds that returned a submission index, and adds sent at once.
    batched: usize,
    sent_at_once: usize,
}

/// Gathers whatever requests are pending, waits a little for more, then answers them newest
/// first through one ReplyBatch, until the channel closes.
fn answer_in_batches(
    requests: mpsc::Receiver<(Request, Reply)>,
    data: Arc<Mutex<Vec<u8>>>,
) -> BatchStats {
    let mut stats = BatchStats::default();
    let mut batch = ReplyBatch::new();
    while let Ok(first) = requests.recv() {
        let mut pending = vec![first];
        std::thread::sleep(Duration::from_micros(300));
        pending.extend(requests.try_iter());
        stats.sizes.push(pending.len());
        for (request, reply) in pending.into_iter().rev() {
            let start = request.offset as usize;
            let end = start + request.length as usize;
            let mut data = data.lock().unwrap();
            let index = match request.command {
                Command::Read => batch.data(reply, &data[start..end]),
                Command::Write => {
                    data[start..end].copy_from_slice(&request.data);
                    batch.written(reply, request.length)
                }
                Command::Fsync | Command::Trim => batch.ok(reply),
            };
            match index {
                Some(i) => {
                    assert_eq!(i, 0, "one mount, one submission per batch");
                    stats.batched += 1;
                }
                None => stats.sent_at_once += 1,
            }
        }
        let mut writes = 0;
        batch.send(|_| writes += 1);
        stats.writes.push(writes);
        assert!(batch.is_empty());
    }
    stats
}

fn batched_replies_leave_together_out_of_order(transport: Transport) {
    skip_unless_fuse!();
    const THREADS: u64 = 6;
    const ROUNDS: u64 = 16;
    const BLOCK: usize = 16 * 1024;
    let size = THREADS * ROUNDS * BLOCK as u64;
    let data = Arc::new(Mutex::new(vec![0u8; size as usize]));
    let (tx, rx) = mpsc::channel();
    let answerer = {
        let data = Arc::clone(&data);
        std::thread::spawn(move || answer_in_batches(rx, data))
    };
    let m = mount(
        "batch",
        export("disk", size, false),
        Arc::new(ToAnswerer(Mutex::new(tx))),
        transport,
    );
    interleaved_blocks(&m.file, THREADS, ROUNDS, BLOCK, 7);
    assert_interleaved_blocks(&data.lock().unwrap(), THREADS * ROUNDS, BLOCK, 7);
    // Unmounting drops the handler, closing the channel, so the answerer returns.
    m.unmount();
    let stats = answerer.join().expect("answerer");
    eprintln!("{transport}: {stats:?}");
    assert!(
        stats.sizes.iter().any(|&n| n >= 2),
        "requests from {THREADS} threads never overlapped, so nothing went out of order"
    );
    match transport {
        Transport::IoUring => {
            assert_eq!(stats.sent_at_once, 0, "ring replies wait for the batch");
            assert!(stats.batched >= (THREADS * ROUNDS * 2) as usize);
            assert!(
                stats.writes.iter().all(|&w| w == 1),
                "one io_uring_enter per batch: {:?}",
                stats.writes
            );
        }
        _ => {
            assert_eq!(stats.batched, 0, "/dev/fuse replies go at once");
            assert!(stats.writes.iter().all(|&w| w == 0));
        }
    }
}
over_both_transports!(batched_replies_leave_together_out_of_order);

/// Keeps every request unanswered until the test lets go of them.
struct Holding {
    held: Mutex<Vec<(Request, Reply)>>,
}

impl Handler for Holding {
    fn request(&self, request: Request, reply: Reply) {
        self.held.lock().unwrap().push((request, reply));
    }
}

fn unmounting_with_requests_in_flight_neither_hangs_nor_panics(transport: Transport) {
    skip_unless_fuse!();
    let handler = Arc::new(Holding {
        held: Mutex::new(Vec::new()),
    });
    let m = mount(
        "inflight",
        export("disk", 4 * MIB, false),
        handler.clone(),
        transport,
    );
    const READERS: u64 = 4;
    let (done_tx, done_rx) = mpsc::channel();
    for t in 0..READERS {
        let path = m.file.clone();
        let done = done_tx.clone();
        std::thread::spawn(move || {
            let file = open_direct(&path, false).expect("open");
            let mut buf = Aligned::new(4096);
            // Answered later, or failed once the session is gone: either way it returns.
            let result = file.read_at(&mut buf, t * 4096).map(|_| ());
            let _ = done.send(result.map_err(|e| errno_of(&e)));
        });
    }
    drop(done_tx);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while handler.held.lock().unwrap().len() < READERS as usize {
        assert!(
            std::time::Instant::now() < deadline,
            "the reads never arrived"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // Unmount from another thread, so a hang shows as a timeout rather than a stuck test.
    let mounted = m;
    let (unmounted_tx, unmounted_rx) = mpsc::channel();
    std::thread::spawn(move || {
        mounted.unmount();
        let _ = unmounted_tx.send(());
    });
    assert!(
        unmounted_rx.recv_timeout(Duration::from_secs(10)).is_ok(),
        "unmount hung with requests in flight"
    );
    // Half the requests are answered (through a batch from a long-lived thread), half dropped.
    let held = std::mem::take(&mut *handler.held.lock().unwrap());
    std::thread::spawn(move || {
        let mut batch = ReplyBatch::new();
        for (i, (request, reply)) in held.into_iter().enumerate() {
            if i % 2 == 0 {
                batch.data(reply, &vec![1u8; request.length as usize]);
            } else {
                drop(reply);
            }
        }
        batch.send(|_| {});
    })
    .join()
    .expect("answering after unmount must not panic");
    for _ in 0..READERS {
        let result = done_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("a read in flight at unmount never returned");
        if let Err(errno) = result {
            assert!(
                [libc::EIO, libc::ENOTCONN, libc::ECONNABORTED].contains(&errno),
                "unexpected errno {errno}"
            );
        }
    }
}
over_both_transports!(unmounting_with_requests_in_flight_neither_hangs_nor_panics);

#[test]
fn a_ring_poller_finds_requests_without_the_ring_thread() {
    if common::skip_io_uring() {
        return;
    }
    let size = 8 * MIB;
    let handler = MemHandler::new(size as usize);
    let m = mount(
        "poller",
        export("disk", size, false),
        handler.clone(),
        Transport::IoUring,
    );
    let mut poller = m
        .mount()
        .ring_poller()
        .expect("an io_uring mount has a poller");
    // 0: poll; 1: inactive, the ring thread serves; 2: done.
    let phase = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let polling = {
        let phase = Arc::clone(&phase);
        // The polling thread lives until after the unmount, as the emulator's pacing thread
        // does: the kernel delivers requests through the thread that last committed an entry,
        // and fails them if that thread is gone.
        std::thread::spawn(move || {
            let mut polled = 0;
            while phase.load(Ordering::SeqCst) == 0 {
                polled += poller.poll();
                std::hint::spin_loop();
            }
            poller.set_active(false);
            let after = polled;
            while phase.load(Ordering::SeqCst) == 1 {
                std::thread::sleep(Duration::from_millis(1));
            }
            (after, poller.poll())
        })
    };
    let file = open_direct(&m.file, true).expect("open");
    for i in 0..64u64 {
        let out = Aligned::filled(4096, i + 1);
        assert_eq!(file.write_at(&out, i * 4096).unwrap(), 4096);
        let mut back = Aligned::new(4096);
        assert_eq!(file.read_at(&mut back, i * 4096).unwrap(), 4096);
        assert_eq!(&back[..], &out[..], "block {i}");
    }
    phase.store(1, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(20));
    // Inactive, the poller leaves the ring to the ring thread again.
    for i in 0..8u64 {
        let mut back = Aligned::new(4096);
        assert_eq!(file.read_at(&mut back, i * 4096).unwrap(), 4096);
        assert_eq!(&back[..], &Aligned::filled(4096, i + 1)[..], "block {i}");
    }
    drop(file);
    m.unmount();
    phase.store(2, Ordering::SeqCst);
    let (polled, after_unmount) = polling.join().expect("poller thread");
    assert!(
        polled >= 100,
        "the poller found only {polled} of at least 128 requests"
    );
    assert_eq!(after_unmount, 0, "a poller serves nothing once unmounted");
}
