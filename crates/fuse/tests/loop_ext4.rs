//! The end-to-end goal: the exported file, attached to a loop device with direct I/O, carries a
//! real ext4 file system that survives unmount, fsck and remount.

mod common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command as Process;
use std::sync::atomic::Ordering;
use std::time::Duration;

use common::{export, mount, DelayedHandler, TempDir};
use storsim_fuse::{Command, Transport};

const MIB: u64 = 1 << 20;

fn run(program: &str, args: &[&str]) -> String {
    let output = Process::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    assert!(
        output.status.success(),
        "{program} {args:?}: {}\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A loop device attached to the exported file; detached when dropped if the test did not.
struct LoopDevice {
    path: String,
    attached: bool,
}

impl LoopDevice {
    fn attach(file: &Path) -> LoopDevice {
        let path = run(
            "losetup",
            &["--direct-io=on", "-f", "--show", file.to_str().unwrap()],
        )
        .trim()
        .to_string();
        assert!(path.starts_with("/dev/loop"), "losetup printed {path:?}");
        LoopDevice {
            path,
            attached: true,
        }
    }

    fn detach(mut self) {
        self.attached = false;
        run("losetup", &["-d", &self.path]);
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        if self.attached {
            let _ = Process::new("losetup").arg("-d").arg(&self.path).status();
        }
    }
}

/// Unmounts the ext4 file system when dropped (unless already unmounted).
struct ExtMount {
    dir: PathBuf,
    mounted: bool,
}

impl ExtMount {
    fn new(device: &str, dir: &Path, read_only: bool) -> ExtMount {
        let dir_str = dir.to_str().unwrap();
        let mut args = vec![];
        if read_only {
            args.extend(["-o", "ro"]);
        }
        args.extend(["-t", "ext4", device, dir_str]);
        run("mount", &args);
        ExtMount {
            dir: dir.to_path_buf(),
            mounted: true,
        }
    }

    fn unmount(mut self) {
        self.mounted = false;
        // The tests of this file run in parallel threads of one process, and a child another
        // thread forks (mount, e2fsck, sync) holds a copy of this thread's open files until it
        // execs: a file of this mount open at that moment makes umount fail as busy for an
        // instant. Try again for a while before calling that a failure.
        let dir = self.dir.to_str().unwrap();
        for _ in 0..50 {
            let o = Process::new("umount")
                .arg(dir)
                .output()
                .expect("umount runs");
            if o.status.success() || !String::from_utf8_lossy(&o.stderr).contains("busy") {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let still_mounted = std::fs::read_to_string("/proc/self/mounts")
            .map(|m| m.lines().any(|l| l.split(' ').nth(1) == Some(dir)))
            .unwrap_or(false);
        if still_mounted {
            run("umount", &[dir]);
        }
    }
}

impl Drop for ExtMount {
    fn drop(&mut self) {
        if self.mounted {
            let _ = Process::new("umount").arg("-l").arg(&self.dir).status();
        }
    }
}

fn loop_device_carries_ext4(transport: Transport) {
    skip_unless_fuse!();
    for tool in ["losetup", "mkfs.ext4", "e2fsck", "mount", "umount"] {
        if common::which(tool).is_none() {
            storsim_testenv::missing(&format!("{tool} is not installed"));
            return;
        }
    }
    let size = 128 * MIB;
    // Replies come from another thread, newest first, as from a device model.
    let handler = DelayedHandler::new(size as usize, Duration::from_micros(200));
    let fuse = mount(
        "loop",
        export("disk", size, false),
        handler.clone(),
        transport,
    );
    let device = LoopDevice::attach(&fuse.file);
    let name = device.path.trim_start_matches("/dev/");
    let dio = std::fs::read_to_string(format!("/sys/block/{name}/loop/dio"))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "1".to_string());
    assert_eq!(dio, "1", "the loop driver fell back to buffered I/O");

    run("mkfs.ext4", &["-q", &device.path]);
    assert!(
        handler.seen.count(Command::Trim) > 0,
        "mkfs.ext4's discard reached the handler as trims"
    );

    let inner = TempDir::new("ext4");
    let payload: Vec<u8> = {
        let mut v = vec![0u8; 12 * MIB as usize + 12345];
        common::fill(&mut v, 99);
        v
    };
    {
        let ext = ExtMount::new(&device.path, inner.path(), false);
        let mut f = std::fs::File::create(inner.path().join("payload")).expect("create");
        f.write_all(&payload).expect("write payload");
        f.sync_all().expect("fsync payload");
        drop(f);
        run("sync", &[]);
        ext.unmount();
    }
    run("e2fsck", &["-fn", &device.path]);
    {
        let ext = ExtMount::new(&device.path, inner.path(), true);
        let mut back = Vec::new();
        std::fs::File::open(inner.path().join("payload"))
            .expect("open payload")
            .read_to_end(&mut back)
            .expect("read payload");
        assert!(back == payload, "the payload read back differs");
        ext.unmount();
    }
    let seen = handler.seen.list();
    for command in [Command::Read, Command::Write, Command::Fsync, Command::Trim] {
        let of_kind: Vec<_> = seen.iter().filter(|r| r.0 == command).collect();
        let bytes: u64 = of_kind.iter().map(|r| r.2 as u64).sum();
        let largest = of_kind.iter().map(|r| r.2).max().unwrap_or(0);
        eprintln!(
            "{command:?}: {} requests, {bytes} bytes, largest {largest}",
            of_kind.len()
        );
    }
    eprintln!(
        "largest batch answered out of order: {}",
        handler.max_batch.load(Ordering::SeqCst)
    );
    assert!(!handler.seen.out_of_range.load(Ordering::SeqCst));
    assert!(
        handler.max_batch.load(Ordering::SeqCst) >= 2,
        "the loop device never had two requests in flight"
    );
    device.detach();
    fuse.unmount();
}
over_both_transports!(loop_device_carries_ext4);

fn unmounting_under_an_attached_loop_device_fails_its_io_without_hanging(transport: Transport) {
    skip_unless_fuse!();
    if common::which("losetup").is_none() {
        storsim_testenv::missing("losetup is not installed");
        return;
    }
    let size = 16 * MIB;
    let handler = common::MemHandler::new(size as usize);
    let fuse = mount(
        "loop-abort",
        export("disk", size, false),
        handler.clone(),
        transport,
    );
    let device = LoopDevice::attach(&fuse.file);

    let mut buf = common::Aligned::new(4096);
    let loop_file = common::open_direct(Path::new(&device.path), false).expect("open loop device");
    use std::os::unix::fs::FileExt;
    loop_file
        .read_at(&mut buf, 0)
        .expect("read through the loop device");

    // The loop device keeps the file open, so this can only detach lazily; it must not block.
    fuse.unmount();
    let err = loop_file
        .read_at(&mut buf, 4096)
        .expect_err("I/O after the session is gone must fail");
    assert_eq!(common::errno_of(&err), libc::EIO, "{err}");
    drop(loop_file);
    device.detach();
}
over_both_transports!(unmounting_under_an_attached_loop_device_fails_its_io_without_hanging);
