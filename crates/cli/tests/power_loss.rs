//! Power loss end to end (docs/faults.md, "Power loss"): a crash over NBD that `replay-log` rebuilds
//! byte for byte and that the same seed tears the same way; ext4 and sqlite on the emulated
//! disk (FUSE, a loop device) surviving a crash with every fsync'd file and committed row; bad
//! arguments refused. The ext4 test needs root, /dev/fuse and the tools, as the emulate tests do.

// Some tests here walk a real client through one scenario step by step (a mount, a crash, a
// browser page); split, the steps would read out of order. The limit holds for production code.
#![allow(clippy::too_many_lines)]

mod common;

use common::system::{control, have, run, run_ok, Emulator, Loop, Mounted};
use common::{stderr, storsim, temp_dir};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;

/// Serves stec-zeus over NBD with power loss, crashing torn after the third write with `seed`,
/// while qemu-io writes, flushes and writes twice more through a write-back cache (so that no
/// write is FUA); then copies the post-crash disk out. Returns the crash log's line and the
/// image, having checked the crash's summary in emulate's JSON against the line.
fn crash_over_nbd(dir: &Path, seed: u64) -> (serde_json::Value, Vec<u8>) {
    let socket = dir.join("nbd.sock");
    let crash_log = dir.join("crash.jsonl");
    let write_log = dir.join("writes.log");
    let json = dir.join("emulate.json");
    let seed = seed.to_string();
    let emu = Emulator::over_nbd(
        &socket,
        "16m",
        &[
            "--crash-after-writes",
            "3",
            "--torn",
            "sector",
            "--crash-seed",
            &seed,
            "--crash-log",
            crash_log.to_str().unwrap(),
            "--write-log",
            write_log.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
    );
    let uri = emu.nbd().to_string();
    run_ok(
        "qemu-io",
        &[
            "-t",
            "writeback",
            "-f",
            "raw",
            &uri,
            "-c",
            "write -P 1 0 64k",
            "-c",
            "flush",
            "-c",
            "write -P 2 4k 8k",
            "-c",
            "write -P 3 1M 64k",
        ],
    );
    let image = dir.join("live.img");
    run_ok(
        "qemu-img",
        &[
            "convert",
            "-f",
            "raw",
            "-O",
            "raw",
            &uri,
            image.to_str().unwrap(),
        ],
    );
    let (status, _, err) = emu.stop();
    assert!(status.success(), "{err}");
    assert!(err.contains("crash 1 (writes) after 3 writes"), "{err}");
    let log = std::fs::read_to_string(&crash_log).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 1, "{log}");
    let crash: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    // Emulate's JSON has the options in force and the crash in a few numbers: the crash log's
    // line without its writes one by one.
    let document: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let power = &document["power_loss"];
    assert_eq!(power["mode"], "torn", "{power}");
    assert_eq!(power["atomicity"], "sector");
    assert_eq!(power["seed"], seed.parse::<u64>().unwrap());
    assert_eq!(power["crash_after_writes"], 3);
    assert_eq!(power["after_crash"], "serve");
    assert_eq!(power["crash_log"], crash_log.to_str().unwrap());
    assert_eq!(power["write_log"], write_log.to_str().unwrap());
    // The crash came after the third write and qemu-img only read after it: nothing is at risk.
    assert_eq!(power["writes"], 3);
    assert_eq!(power["volatile_writes"], 0);
    assert_eq!(power["powered_off"], false);
    let crashes = power["crashes"].as_array().unwrap();
    assert_eq!(crashes.len(), lines.len(), "{power}");
    assert_eq!(crashes[0]["dropped_writes"], crash["dropped_writes"]);
    assert_eq!(crashes[0]["dropped_bytes"], crash["dropped_bytes"]);
    let mut summary = crash.clone();
    summary.as_object_mut().unwrap().remove("volatile");
    assert_eq!(crashes[0], summary);
    (crash, std::fs::read(&image).unwrap())
}

#[test]
fn a_torn_crash_over_nbd_is_the_same_for_the_same_seed_and_replay_log_rebuilds_it() {
    if !(have("qemu-io") && have("qemu-img")) {
        return;
    }
    let tmp = temp_dir("power-nbd");
    let (a, b, c) = (
        tmp.path().join("a"),
        tmp.path().join("b"),
        tmp.path().join("c"),
    );
    for d in [&a, &b, &c] {
        std::fs::create_dir_all(d).unwrap();
    }
    let (crash, image) = crash_over_nbd(&a, 5);
    // The flush made the first write durable; the next two were in the cache.
    assert_eq!(crash["trigger"], "writes");
    assert_eq!(crash["volatile_writes"], 2);
    let written: Vec<u64> = crash["volatile"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["write"].as_u64().unwrap())
        .collect();
    assert_eq!(written, vec![2, 3]);
    let dropped = crash["dropped_bytes"].as_u64().unwrap();
    assert!(dropped > 0 && dropped < 8192 + 65536, "{crash}");
    assert_eq!(crash["volatile_bytes"], 8192 + 65536);
    // The durable write is whole; each sector of the others holds its write or the old zeros.
    assert!(image[..4096].iter().all(|&b| b == 1));
    for sector in image[4096..12288].chunks(512) {
        assert!(sector.iter().all(|&b| b == 2) || sector.iter().all(|&b| b == 1));
    }
    for sector in image[1 << 20..(1 << 20) + 65536].chunks(512) {
        assert!(sector.iter().all(|&b| b == 3) || sector.iter().all(|&b| b == 0));
    }

    // The same seed drops the same writes, another seed others.
    let (again, image_again) = crash_over_nbd(&b, 5);
    assert_eq!(again["volatile"], crash["volatile"]);
    assert_eq!(image_again, image);
    let (other, _) = crash_over_nbd(&c, 6);
    assert_ne!(other["volatile"], crash["volatile"]);

    // The write log rebuilds the post-crash disk, and lists the crash points.
    let log = a.join("writes.log");
    let log = log.to_str().unwrap();
    let listed = storsim(&["replay-log", log, "--list"]);
    assert!(listed.status.success(), "{}", stderr(&listed));
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.contains("writes: 3"), "{listed}");
    assert!(listed.contains("flushes after writes: 1"), "{listed}");
    let rebuilt = a.join("rebuilt.img");
    let json = a.join("replay.json");
    let out = storsim(&[
        "replay-log",
        log,
        "--to-write",
        "3",
        "--torn",
        "sector",
        "--seed",
        "5",
        "--out",
        rebuilt.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        std::fs::read(&rebuilt).unwrap() == image,
        "replay-log's image differs from the crash's"
    );
    let replayed: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(replayed["crash"]["volatile"], crash["volatile"]);
    // At the first flush point nothing is lost: only the first write is there.
    let at_flush = a.join("flush1.img");
    let out = storsim(&[
        "replay-log",
        log,
        "--to-flush",
        "1",
        "--out",
        at_flush.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let at_flush = std::fs::read(&at_flush).unwrap();
    assert_eq!(at_flush.len(), 16 << 20);
    assert!(at_flush[..65536].iter().all(|&b| b == 1));
    assert!(at_flush[65536..].iter().all(|&b| b == 0));
}

#[test]
fn bad_power_loss_arguments_are_refused_naming_the_option() {
    let tmp = temp_dir("power-bad");
    let dir = tmp.path();
    let socket = dir.join("nbd.sock");
    let socket = socket.to_str().unwrap();
    for (extra, names) in [
        (["--write-cache", "0"], "--write-cache"),
        (["--write-cache", "lots"], "--write-cache"),
        (["--crash-after-writes", "0"], "--crash-after-writes"),
        (["--torn", "byte"], "--torn"),
        (["--crash-at", "soon"], "--crash-at"),
    ] {
        let mut args = vec!["emulate", "--device", "stec-zeus", "--size", "1m"];
        args.extend(["--nbd-unix", socket]);
        args.extend(extra);
        let out = storsim(&args);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(names), "{extra:?}: {}", stderr(&out));
    }
    let not_a_log = dir.join("not.log");
    std::fs::write(&not_a_log, "hello").unwrap();
    let out = storsim(&["replay-log", not_a_log.to_str().unwrap(), "--list"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("not a storsim write log"),
        "{}",
        stderr(&out)
    );
    let out = storsim(&["replay-log", not_a_log.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--out"), "{}", stderr(&out));
}

#[test]
fn a_crash_at_a_time_happens_then_and_is_logged_with_its_trigger() {
    let tmp = temp_dir("power-at");
    let dir = tmp.path();
    let socket = dir.join("nbd.sock");
    let crash_log = dir.join("crash.jsonl");
    let json = dir.join("emulate.json");
    let emu = Emulator::over_nbd(
        &socket,
        "1m",
        &[
            "--crash-at",
            "200ms",
            "--crash-log",
            crash_log.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
    );
    // The crash log's line is written and flushed at the crash.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let line = loop {
        let log = std::fs::read_to_string(&crash_log).unwrap_or_default();
        if log.ends_with('\n') {
            break log;
        }
        assert!(std::time::Instant::now() < deadline, "no crash within 30 s");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let crash: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
    assert_eq!(crash["trigger"], "time");
    assert_eq!(crash["crash"], 1);
    assert!(crash["at_ns"].as_u64().unwrap() >= 200_000_000, "{crash}");
    let (status, _, err) = emu.stop();
    assert!(status.success(), "{err}");
    assert!(err.contains("crash 1 (time)"), "{err}");
    let document: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let power = &document["power_loss"];
    assert_eq!(power["crash_at_ns"], 200_000_000, "{power}");
    assert_eq!(power["mode"], "drop-all");
    assert_eq!(power["crashes"][0]["trigger"], "time");
    assert_eq!(power["crashes"][0]["at_ns"], crash["at_ns"]);
}

/// ext4's mount options for the crash tests: no background work flushes the disk, so that
/// only the host's fsyncs (and the unmount) make writes durable. A 60 s commit interval keeps
/// the journal's timer away; `noinit_itable` keeps the `ext4lazyinit` thread from zeroing the
/// inode tables mkfs left uninitialised, which it starts at a random moment within 5 s of the
/// mount and whose first group ends with a FLUSH: landing between the unsynced writes and the
/// crash, that made them durable (the test failed so on a loaded machine, which stretched the
/// test past that moment).
const NO_BACKGROUND_FLUSH: &str = "commit=60,noinit_itable";

/// The flushes the emulator behind `control_socket` has answered so far.
fn flushes(control_socket: &Path) -> u64 {
    let report = control(control_socket, "report");
    assert_eq!(report["ok"], true, "{report}");
    report["report"]["requests"]["flush"].as_u64().unwrap()
}

/// Where `file`'s bytes are on its device: `(offset, len)` in bytes, as `filefrag` reads them
/// from the file system's extents.
fn extents(file: &Path) -> Vec<(u64, u64)> {
    let listed = run_ok("filefrag", &["-e", "-b1", file.to_str().unwrap()]);
    // Rows such as `   0:        0..   65535:   26498048..  26563583:  65536:   ...`.
    listed
        .lines()
        .filter_map(|row| {
            let cells: Vec<&str> = row.split(':').map(str::trim).collect();
            cells[0].parse::<u64>().ok()?;
            let physical = cells[2].split("..").next()?.trim().parse().ok()?;
            Some((physical, cells[3].parse().ok()?))
        })
        .collect()
}

/// Whether the byte ranges `ranges` (`(offset, len)`, in any order) cover every byte of
/// `[offset, offset + len)`.
fn covers(ranges: &[(u64, u64)], offset: u64, len: u64) -> bool {
    let mut sorted = ranges.to_vec();
    sorted.sort_unstable();
    let mut covered_to = offset;
    for (start, n) in sorted {
        if start > covered_to {
            break;
        }
        covered_to = covered_to.max(start + n);
    }
    covered_to >= offset + len
}

/// Bytes of the file an fsync'd file `i` holds.
fn synced_contents(i: usize) -> Vec<u8> {
    (0..(i + 1) * 7919)
        .map(|j| (j * 31 + i * 17) as u8)
        .collect()
}

fn sqlite(db: &Path, sql: &str) -> String {
    run_ok("sqlite3", &[db.to_str().unwrap(), sql])
}

/// ext4 on the emulated disk (FUSE file, loop device), mounted so that only fsyncs flush the
/// disk (see [`NO_BACKGROUND_FLUSH`]): files written and fsync'd, sqlite transactions committed
/// in WAL mode with synchronous=FULL, then writes with no fsync after them (O_DIRECT, so they
/// reach the disk), then a crash that loses what the disk had not made durable, the disk
/// staying off. A second emulator on the same backing file is the disk powered on again: the mount
/// replays ext4's journal, every fsync'd file and committed row is there, sqlite's
/// integrity_check is ok and e2fsck -fn, after the unmount, finds nothing to fix.
#[test]
fn ext4_and_sqlite_keep_every_fsynced_file_and_committed_row_across_a_crash() {
    ext4_and_sqlite_across_a_crash("power-ext4", &[]);
}

/// The same with the writes not durable torn by sector rather than all lost: what was fsync'd
/// is untouched whatever part of the rest survives.
#[test]
fn ext4_and_sqlite_keep_every_fsynced_file_and_committed_row_across_a_torn_crash() {
    ext4_and_sqlite_across_a_crash(
        "power-ext4-torn",
        &["--torn", "sector", "--crash-seed", "3"],
    );
}

fn ext4_and_sqlite_across_a_crash(name: &str, crash_options: &[&str]) {
    let fuse = Path::new("/dev/fuse").exists();
    if !fuse {
        storsim_testenv::missing("no /dev/fuse");
    }
    let tools = [
        "losetup",
        "mkfs.ext4",
        "e2fsck",
        "filefrag",
        "sqlite3",
        "dd",
        "mount",
    ];
    if !(fuse && tools.iter().all(|t| have(t))) {
        return;
    }
    let tmp = temp_dir(name);
    let dir = tmp.path();
    let backing = format!("file:{}", dir.join("disk.store").display());
    let mountpoint = dir.join("fuse");
    std::fs::create_dir_all(&mountpoint).unwrap();
    let control_socket = dir.join("control.sock");
    let crash_log = dir.join("crash.jsonl");
    let fs = dir.join("ext4");
    let rows = 40;
    {
        let mut args = vec![
            "--device",
            "stec-zeus",
            "--size",
            "128m",
            "--backing",
            &backing,
            "--fuse",
            mountpoint.to_str().unwrap(),
            "--control",
            control_socket.to_str().unwrap(),
            "--power-loss",
            "--after-crash",
            "stop",
            "--crash-log",
            crash_log.to_str().unwrap(),
        ];
        args.extend_from_slice(crash_options);
        let emu = Emulator::start(&args);
        let disk = emu.fuse_file.clone().unwrap();
        let Some(lo) = Loop::attach(&disk) else {
            return;
        };
        run_ok("mkfs.ext4", &["-q", "-F", &lo.0]);
        std::fs::create_dir_all(&fs).unwrap();
        run_ok(
            "mount",
            &["-o", NO_BACKGROUND_FLUSH, &lo.0, fs.to_str().unwrap()],
        );
        let mounted = Mounted(fs.clone());
        // A directory fsync'd after its files, so that their names are durable too.
        let files = fs.join("synced");
        std::fs::create_dir(&files).unwrap();
        for i in 0..20 {
            let path = files.join(format!("f{i}"));
            std::fs::write(&path, synced_contents(i)).unwrap();
            std::fs::File::open(&path).unwrap().sync_all().unwrap();
        }
        std::fs::File::open(&files).unwrap().sync_all().unwrap();
        std::fs::File::open(&fs).unwrap().sync_all().unwrap();
        let db = fs.join("app.db");
        let wal = sqlite(
            &db,
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; \
             CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT NOT NULL);",
        );
        assert_eq!(wal.trim(), "wal");
        // One transaction per row, each committed (and so fsync'd) before the next begins, by
        // a connection that stays open through the crash, so that the committed rows are in
        // the WAL, not checkpointed into the database.
        let mut open = std::process::Command::new("sqlite3")
            .arg(&db)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut statements = String::from("PRAGMA synchronous=FULL;\n");
        for id in 1..=rows {
            statements.push_str(&format!("INSERT INTO t VALUES({id}, 'row {id}');\n"));
        }
        statements.push_str("SELECT 'committed ' || count(*) FROM t;\n");
        open.stdin
            .as_mut()
            .unwrap()
            .write_all(statements.as_bytes())
            .unwrap();
        let mut committed = String::new();
        BufReader::new(open.stdout.take().unwrap())
            .read_line(&mut committed)
            .unwrap();
        assert_eq!(committed.trim(), format!("committed {rows}"));
        assert!(
            fs.join("app.db-wal").exists(),
            "no WAL while the connection is open"
        );
        // Writes that reach the disk with no flush after them: the disk may lose them.
        let flushes_before = flushes(&control_socket);
        let unsynced = ["unsynced-a", "unsynced-b"].map(|name| fs.join(name));
        for path in &unsynced {
            run_ok(
                "dd",
                &[
                    "if=/dev/urandom",
                    &format!("of={}", path.display()),
                    "bs=64k",
                    "count=16",
                    "oflag=direct",
                ],
            );
        }
        let extents: Vec<(u64, u64)> = unsynced.iter().flat_map(|p| extents(p)).collect();
        assert_eq!(
            extents.iter().map(|&(_, len)| len).sum::<u64>(),
            2 * 16 * 65536,
            "{extents:?}"
        );
        // Nothing but the host's fsyncs flushes the disk, so that the unsynced files are
        // still in its cache at the crash, however long the host took to get here.
        assert_eq!(
            flushes(&control_socket),
            flushes_before,
            "a flush reached the disk between the unsynced writes and the crash"
        );
        let crash = control(&control_socket, "crash");
        assert_eq!(crash["ok"], true, "{crash}");
        let volatile = crash["report"]["volatile"].as_array().unwrap();
        let range = |w: &serde_json::Value| {
            let (offset, len) = (&w["offset_bytes"], &w["len_bytes"]);
            (offset.as_u64().unwrap(), len.as_u64().unwrap())
        };
        let at_risk: Vec<(u64, u64)> = volatile.iter().map(range).collect();
        let dropped: Vec<(u64, u64)> = volatile
            .iter()
            .flat_map(|w| w["dropped"].as_array().unwrap())
            .map(|r| (r[0].as_u64().unwrap(), r[1].as_u64().unwrap()))
            .collect();
        // Every byte of the unsynced files was among the writes at risk; a crash that drops
        // all loses every one of them, a torn one about half of what was at risk.
        for &(offset, len) in &extents {
            assert!(
                covers(&at_risk, offset, len),
                "the unsynced files' bytes {offset}+{len} were not at risk: {crash}"
            );
        }
        let lost: u64 = dropped.iter().map(|&(_, len)| len).sum();
        let risked: u64 = at_risk.iter().map(|&(_, len)| len).sum();
        assert_eq!(crash["report"]["dropped_bytes"], lost, "{crash}");
        if crash_options.is_empty() {
            for &(offset, len) in &extents {
                assert!(covers(&dropped, offset, len), "{offset}+{len}: {crash}");
            }
            assert_eq!(lost, risked, "{crash}");
        } else {
            assert!(lost > 0 && lost < risked, "{crash}");
        }
        // The control socket's report says the same, and that the disk is off.
        let so_far = control(&control_socket, "report");
        let power = &so_far["report"]["power_loss"];
        assert_eq!(power["powered_off"], true, "{power}");
        assert_eq!(power["after_crash"], "stop");
        assert_eq!(power["crashes"][0]["trigger"], "command");
        assert_eq!(power["crashes"][0]["dropped_bytes"], lost);
        assert_eq!(power["crashes"][0]["volatile_bytes"], risked);
        // The host is still up: its sqlite connection ends and its unmount writes; the disk,
        // off, takes none of it.
        open.kill().unwrap();
        open.wait().unwrap();
        drop(mounted);
        drop(lo);
        let (status, _, err) = emu.stop();
        assert!(status.success(), "{err}");
        assert!(err.contains("crash 1 (command)"), "{err}");
        let logged = std::fs::read_to_string(&crash_log).unwrap();
        let logged: serde_json::Value = serde_json::from_str(logged.trim()).unwrap();
        assert_eq!(logged["dropped_bytes"], crash["report"]["dropped_bytes"]);
    }
    // Power on again: the same backing file holds what the crash left.
    let emu = Emulator::start(&[
        "--device",
        "stec-zeus",
        "--size",
        "128m",
        "--backing",
        &backing,
        "--fuse",
        mountpoint.to_str().unwrap(),
    ]);
    let disk = emu.fuse_file.clone().unwrap();
    let Some(lo) = Loop::attach(&disk) else {
        return;
    };
    {
        let _m = Mounted::new(&lo.0, &fs);
        for i in 0..20 {
            let got = std::fs::read(fs.join("synced").join(format!("f{i}"))).unwrap();
            assert!(
                got == synced_contents(i),
                "fsync'd file f{i} changed across the crash"
            );
        }
        let db = fs.join("app.db");
        assert_eq!(sqlite(&db, "PRAGMA integrity_check;").trim(), "ok");
        assert_eq!(
            sqlite(
                &db,
                "SELECT count(*), sum(id), min(v = 'row ' || id) FROM t;"
            )
            .trim(),
            format!("{rows}|{}|1", rows * (rows + 1) / 2)
        );
    }
    let fsck = run("e2fsck", &["-fn", &lo.0]);
    assert!(
        fsck.status.success(),
        "e2fsck found problems after the crash and journal replay:\n{}{}",
        String::from_utf8_lossy(&fsck.stdout),
        String::from_utf8_lossy(&fsck.stderr)
    );
    drop(lo);
    let (status, _, err) = emu.stop();
    assert!(status.success(), "{err}");
}

/// The last flush point in `log` so far (the log reaches its file at every flush).
fn last_flush_point(log: &Path) -> u64 {
    let out = storsim(&["replay-log", log.to_str().unwrap(), "--list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let listed = String::from_utf8_lossy(&out.stdout).into_owned();
    listed
        .lines()
        .find_map(|l| l.strip_prefix("flushes after writes:"))
        .and_then(|points| points.split_whitespace().last())
        .map(|p| p.parse().unwrap())
        .unwrap_or_else(|| panic!("no flush in the log: {listed}"))
}

/// A CrashMonkey-style check from one write log: ext4 is made, mounted and worked on (files
/// fsync'd one by one, renames, deletes, unsynced writes) under `--write-log`; then the disk is
/// rebuilt at every flush point after mkfs and, torn by 4 KiB page with several seeds, halfway
/// between each two. At every point e2fsck's journal replay (`-p`: only the fixes it may make
/// unattended) leaves a file system `e2fsck -fn` finds clean, and every file whose fsync had
/// returned holds its bytes. Pages, not sectors: ext4 with 4 KiB blocks counts on a block
/// write being atomic, and torn by sector its superblock (1 KiB over two sectors) can be left
/// half old, half new, which e2fsck -p refuses (its checksum fails) until pointed at a backup.
#[test]
fn ext4_is_consistent_at_every_crash_point_of_a_write_log() {
    let fuse = Path::new("/dev/fuse").exists();
    if !fuse {
        storsim_testenv::missing("no /dev/fuse");
    }
    let tools = ["losetup", "mkfs.ext4", "e2fsck", "debugfs", "mount"];
    if !(fuse && tools.iter().all(|t| have(t))) {
        return;
    }
    let tmp = temp_dir("power-log-ext4");
    let dir = tmp.path();
    let log = dir.join("writes.log");
    let fs = dir.join("ext4");
    // (file, the flush point its fsync made) for every fsync'd file.
    let mut synced = Vec::new();
    let made;
    {
        let emu = Emulator::over_fuse(dir, "64m", &["--write-log", log.to_str().unwrap()]);
        let disk = emu.fuse_file.clone().unwrap();
        let Some(lo) = Loop::attach(&disk) else {
            return;
        };
        run_ok("mkfs.ext4", &["-q", "-F", &lo.0]);
        made = last_flush_point(&log);
        std::fs::create_dir_all(&fs).unwrap();
        run_ok("mount", &["-o", "commit=60", &lo.0, fs.to_str().unwrap()]);
        let mounted = Mounted(fs.clone());
        std::fs::create_dir(fs.join("d")).unwrap();
        for i in 0..6 {
            let name = format!("d/f{i}");
            std::fs::write(fs.join(&name), synced_contents(i)).unwrap();
            std::fs::File::open(fs.join(&name))
                .unwrap()
                .sync_all()
                .unwrap();
            std::fs::File::open(fs.join("d"))
                .unwrap()
                .sync_all()
                .unwrap();
            synced.push((name, last_flush_point(&log)));
            // Between fsyncs: a file written and renamed, one deleted, none of it synced.
            std::fs::write(fs.join(format!("tmp{i}")), vec![i as u8; 20000]).unwrap();
            std::fs::rename(fs.join(format!("tmp{i}")), fs.join(format!("moved{i}"))).unwrap();
            if i > 0 {
                std::fs::remove_file(fs.join(format!("moved{}", i - 1))).unwrap();
            }
        }
        drop(mounted);
        drop(lo);
        let (status, _, err) = emu.stop();
        assert!(status.success(), "{err}");
    }
    let out = storsim(&["replay-log", log.to_str().unwrap(), "--list"]);
    let listed = String::from_utf8_lossy(&out.stdout).into_owned();
    let flushes: Vec<u64> = listed
        .lines()
        .find_map(|l| l.strip_prefix("flushes after writes:"))
        .unwrap()
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .filter(|&p| p >= made)
        .collect();
    assert!(flushes.len() >= 6, "{listed}");
    // Flush points by their number in the log, and torn points halfway between two.
    let all: Vec<u64> = listed
        .lines()
        .find_map(|l| l.strip_prefix("flushes after writes:"))
        .unwrap()
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    let mut points: Vec<(Vec<String>, u64)> = Vec::new();
    for (k, &at) in all.iter().enumerate().filter(|(_, &at)| at >= made) {
        points.push((vec!["--to-flush".into(), (k + 1).to_string()], at));
        if let Some(&next) = all.get(k + 1) {
            if next > at + 1 {
                let mid = (at + next) / 2;
                points.push((
                    vec![
                        "--to-write".into(),
                        mid.to_string(),
                        "--torn".into(),
                        "page".into(),
                        "--seed".into(),
                        k.to_string(),
                    ],
                    mid,
                ));
            }
        }
    }
    eprintln!(
        "checking {} crash points from write {made} on",
        points.len()
    );
    let image = dir.join("point.img");
    let image_str = image.to_str().unwrap();
    let mut files_checked = 0;
    for (how, at) in &points {
        let mut args = vec!["replay-log", log.to_str().unwrap(), "--out", image_str];
        args.extend(how.iter().map(String::as_str));
        let out = storsim(&args);
        assert!(out.status.success(), "{how:?}: {}", stderr(&out));
        let preen = run("e2fsck", &["-p", image_str]);
        assert!(
            matches!(preen.status.code(), Some(0 | 1)),
            "{how:?}: e2fsck -p could not recover:\n{}{}",
            String::from_utf8_lossy(&preen.stdout),
            String::from_utf8_lossy(&preen.stderr)
        );
        let check = run("e2fsck", &["-fn", image_str]);
        assert!(
            check.status.success(),
            "{how:?}: inconsistent after journal replay:\n{}{}",
            String::from_utf8_lossy(&check.stdout),
            String::from_utf8_lossy(&check.stderr)
        );
        for (i, (name, durable_at)) in synced.iter().enumerate() {
            if durable_at > at {
                continue;
            }
            let dumped = dir.join("dumped");
            let _ = std::fs::remove_file(&dumped);
            run_ok(
                "debugfs",
                &[
                    "-R",
                    &format!("dump /{name} {}", dumped.display()),
                    image_str,
                ],
            );
            let got = std::fs::read(&dumped).unwrap_or_default();
            assert!(
                got == synced_contents(i),
                "{how:?}: {name}, fsync'd, changed"
            );
            files_checked += 1;
        }
    }
    // The last point, the unmount's flush, comes after every fsync.
    assert!(files_checked >= synced.len(), "{files_checked}");
}
