//! Real kernel mounts of the one-file export: what `stat`, `readdir`, O_DIRECT reads and writes,
//! hole punching and unmounting look like from the outside.

mod common;

use std::os::unix::fs::{FileExt, MetadataExt};
use std::process::Command as Process;
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::time::Duration;

use common::{errno_of, export, mount, open_direct, Aligned, DelayedHandler, MemHandler};
use storsim_fuse::{Command, FileExport, FuseError, Mount, MountOptions};

const MIB: u64 = 1 << 20;

#[test]
fn stat_and_readdir_show_one_file_of_the_exact_size() {
    skip_unless_fuse!();
    // Deliberately not a power of two, so a size taken from anywhere else would show.
    let size = 3 * MIB + 3 * 4096;
    let handler = MemHandler::new(size as usize);
    let m = mount("stat", export("disk", size, false), handler.clone());

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

#[test]
fn direct_io_round_trip_reaches_the_handler() {
    skip_unless_fuse!();
    let size = 8 * MIB;
    let handler = MemHandler::new(size as usize);
    let m = mount("rw", export("disk", size, false), handler.clone());

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

#[test]
fn large_requests_arrive_whole() {
    skip_unless_fuse!();
    let size = 16 * MIB;
    let handler = MemHandler::new(size as usize);
    let m = mount("large", export("disk", size, false), handler.clone());
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

#[test]
fn reads_past_the_end_are_short() {
    skip_unless_fuse!();
    let size = 2 * MIB + 8192;
    let handler = MemHandler::new(size as usize);
    handler.data.lock().unwrap()[size as usize - 1] = 0xAB;
    let m = mount("eof", export("disk", size, false), handler.clone());
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

#[test]
fn writes_past_the_end_fail() {
    skip_unless_fuse!();
    let size = 2 * MIB;
    let handler = MemHandler::new(size as usize);
    let m = mount("enospc", export("disk", size, false), handler.clone());
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

#[test]
fn read_only_export_refuses_writers() {
    skip_unless_fuse!();
    let size = MIB;
    let handler = MemHandler::new(size as usize);
    common::fill(&mut handler.data.lock().unwrap(), 11);
    let m = mount("ro", export("disk", size, true), handler.clone());

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

#[test]
fn the_size_cannot_change() {
    skip_unless_fuse!();
    let size = 4 * MIB;
    let handler = MemHandler::new(size as usize);
    let m = mount("resize", export("disk", size, false), handler.clone());
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

#[test]
fn punching_a_hole_trims_the_device() {
    skip_unless_fuse!();
    let size = 4 * MIB;
    let handler = MemHandler::new(size as usize);
    handler.data.lock().unwrap().fill(0x5A);
    let m = mount("trim", export("disk", size, false), handler.clone());
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

#[test]
fn concurrent_io_with_out_of_order_replies() {
    skip_unless_fuse!();
    const THREADS: u64 = 4;
    const ROUNDS: u64 = 24;
    const BLOCK: usize = 64 * 1024;
    let size = THREADS * ROUNDS * BLOCK as u64;
    let handler = DelayedHandler::new(size as usize, Duration::from_millis(2));
    let m = mount("concurrent", export("disk", size, false), handler.clone());

    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let path = m.file.clone();
            std::thread::spawn(move || {
                let file = open_direct(&path, true).expect("open");
                for round in 0..ROUNDS {
                    // Threads interleave their blocks, so neighbouring blocks are written by
                    // different threads at the same time.
                    let offset = (round * THREADS + t) * BLOCK as u64;
                    let out = Aligned::filled(BLOCK, offset + 1);
                    assert_eq!(file.write_at(&out, offset).unwrap(), BLOCK);
                    let mut back = Aligned::new(BLOCK);
                    assert_eq!(file.read_at(&mut back, offset).unwrap(), BLOCK);
                    assert_eq!(&back[..], &out[..], "thread {t} round {round}");
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("worker");
    }

    let data = handler.data.lock().unwrap();
    for block in 0..(THREADS * ROUNDS) {
        let offset = block * BLOCK as u64;
        let expected = Aligned::filled(BLOCK, offset + 1);
        let start = offset as usize;
        assert_eq!(&data[start..start + BLOCK], &expected[..], "block {block}");
    }
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

#[test]
fn an_unanswered_reply_becomes_eio() {
    skip_unless_fuse!();
    let m = mount(
        "drop",
        export("disk", MIB, false),
        Arc::new(common::DroppingHandler),
    );
    let file = open_direct(&m.file, false).expect("open");
    let mut buf = Aligned::new(4096);
    let err = file.read_at(&mut buf, 0).unwrap_err();
    assert_eq!(errno_of(&err), libc::EIO);
    drop(file);
    m.unmount();
}

#[test]
fn unmount_from_outside_ends_wait() {
    skip_unless_fuse!();
    if common::which("umount").is_none() {
        eprintln!("SKIP: umount is not installed");
        return;
    }
    let m = mount(
        "external",
        export("disk", MIB, false),
        MemHandler::new(MIB as usize),
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

#[test]
fn unmount_leaves_an_empty_directory() {
    skip_unless_fuse!();
    let m = mount(
        "unmount",
        export("disk", MIB, false),
        MemHandler::new(MIB as usize),
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
