//! Real NBD clients at depth through the emulator, whose pacing thread receives the
//! connections' requests itself while it spins (`storsim_nbd::ConnectionPoller`): fio writes
//! and verifies over TCP, nbdcopy copies in and out over four connections of a Unix socket.
//! The data must come back as written, every request must be replied to and recorded once, no
//! reply may leave before its instant, and the pacing thread must have received requests
//! itself. The pacing thread stays awake through each test (`spinning_emulator_on`), so that
//! the last holds on a busy machine too; the hand-over to a connection's reader thread while
//! the pacing thread sleeps is tested in crates/nbd/tests/handover.rs. Each test skips, saying so, when its client is not installed (and fails instead under
//! .ci/run, which installs them: see storsim-testenv).

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use storsim_core::Op;
use storsim_emulate::{Backing, Emulator, EmulatorReport};
use support::{assert_record, serve_nbd, spinning_emulator_on};

const EXPORT_BYTES: u64 = 8 << 20;
const SERVICE_US: u64 = 100;

fn tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    let found = std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file());
    if found.is_none() {
        storsim_testenv::missing(&format!("`{name}` is not installed"));
    }
    found
}

/// Runs a client with a generous timeout, so that a server bug shows as a failure, not a hang.
fn run(program: &Path, args: &[&str]) -> Output {
    let out = Command::new("timeout")
        .arg("120")
        .arg(program)
        .args(args)
        .output()
        .expect("run the client");
    eprintln!(
        "$ {} {}\n--- status {:?}\n--- stderr\n{}",
        program.display(),
        args.join(" "),
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Stops the server and the emulator; checks that every request settled and that the pacing
/// thread received some of them itself, and returns the report.
fn shut_down(server: storsim_nbd::ServerHandle, emulator: &Emulator) -> EmulatorReport {
    server.shutdown();
    let report = emulator.shutdown().unwrap();
    let polled = report.polled.get("nbd").copied().unwrap_or(0);
    eprintln!("polled {polled} of {} replies", report.lateness.replies);
    assert_eq!(report.failed, 0);
    assert_eq!(report.in_flight, 0);
    assert!(polled > 0, "the pacing thread received no request itself");
    report
}

/// The number after `"key":` at its first occurrence after `from` in fio's JSON.
fn json_number(text: &str, from: usize, key: &str) -> u64 {
    let at = from + text[from..].find(&format!("\"{key}\"")).unwrap();
    let rest = &text[at + key.len() + 2..];
    let rest = rest.trim_start_matches([':', ' ']);
    let end = rest.find(|c: char| !c.is_ascii_digit()).unwrap();
    rest[..end].parse().unwrap()
}

/// fio's 4 KiB random writes at depth 16 over the whole 4 MiB export, each block read back and
/// checked (crc32c), plus `extra` options. Returns the reads and writes fio did, or None when
/// fio has no nbd engine.
fn fio_verify(
    fio: &Path,
    server: &storsim_nbd::ServerHandle,
    extra: &[&str],
) -> Option<(u64, u64)> {
    let uri = format!("--uri=nbd://{}/storsim", server.local_addr());
    let mut args = vec![
        "--name=polled",
        "--ioengine=nbd",
        &uri,
        "--rw=randwrite",
        "--bs=4k",
        "--iodepth=16",
        "--size=4m",
        "--verify=crc32c",
        "--do_verify=1",
        "--verify_fatal=1",
        "--verify_state_save=0",
        "--output-format=json",
    ];
    args.extend_from_slice(extra);
    let out = run(fio, &args);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() && text.contains("engine nbd not loadable") {
        storsim_testenv::missing("fio has no nbd engine");
        return None;
    }
    assert!(out.status.success(), "fio failed (verification included)");
    let jobs = text.find("\"jobs\"").unwrap();
    let read_ios = json_number(
        &text,
        text[jobs..].find("\"read\"").unwrap() + jobs,
        "total_ios",
    );
    let write_ios = json_number(
        &text,
        text[jobs..].find("\"write\"").unwrap() + jobs,
        "total_ios",
    );
    assert_eq!(write_ios, 1024, "fio wrote the whole 4 MiB");
    assert_eq!(read_ios, 1024, "and read all of it back to verify");
    Some((read_ios, write_ios))
}

#[test]
fn fio_writes_and_verifies_at_depth_through_the_polled_path() {
    let Some(fio) = tool("fio") else { return };
    let (emulator, record) = spinning_emulator_on(&Backing::Memory, EXPORT_BYTES, SERVICE_US);
    let server = serve_nbd(
        &emulator,
        EXPORT_BYTES,
        storsim_nbd::Listen::Tcp("127.0.0.1:0".parse().unwrap()),
    );
    let Some((read_ios, write_ios)) = fio_verify(&fio, &server, &[]) else {
        return;
    };
    let report = shut_down(server, &emulator);
    assert_eq!(report.lateness.replies, read_ios + write_ios);
    // With memory backing the pacing thread keeps all store work.
    assert_eq!(report.store_thread_jobs, 0);
    assert_record(&record, (read_ios + write_ios) as usize, SERVICE_US);
}

/// With file backing, the FLUSHes the pacing thread receives itself go to the store threads
/// for their `fdatasync`; the data still verifies and every request is answered and recorded.
#[test]
fn fio_flushing_file_backing_leaves_the_syncs_to_the_store_threads() {
    let Some(fio) = tool("fio") else { return };
    let tmp = tempfile::Builder::new()
        .prefix(&format!("storsim-emulate-syncs-{}-", std::process::id()))
        .tempdir()
        .unwrap();
    let backing = Backing::File(tmp.path().join("disk"));
    let (emulator, record) = spinning_emulator_on(&backing, EXPORT_BYTES, SERVICE_US);
    let server = serve_nbd(
        &emulator,
        EXPORT_BYTES,
        storsim_nbd::Listen::Tcp("127.0.0.1:0".parse().unwrap()),
    );
    let Some((read_ios, write_ios)) = fio_verify(&fio, &server, &["--fsync=4"]) else {
        return;
    };
    let report = shut_down(server, &emulator);
    let flushes = report.lateness.replies_by_op[Op::Flush.index()];
    assert!(
        flushes >= write_ios / 4,
        "{flushes} flushes for {write_ios} writes"
    );
    assert_eq!(report.lateness.replies, read_ios + write_ios + flushes);
    assert!(
        report.store_thread_jobs > 0 && report.store_thread_jobs <= flushes,
        "{} of {flushes} flushes went to the store threads",
        report.store_thread_jobs
    );
    assert_record(&record, report.lateness.replies as usize, SERVICE_US);
}

#[test]
fn nbdcopy_round_trip_over_four_polled_unix_connections() {
    let Some(nbdcopy) = tool("nbdcopy") else {
        return;
    };
    let tmp = tempfile::Builder::new()
        .prefix(&format!("storsim-emulate-polled-{}-", std::process::id()))
        .tempdir()
        .unwrap();
    let dir = tmp.path();
    let socket = dir.join("nbd.sock");
    let (emulator, record) = spinning_emulator_on(&Backing::Memory, EXPORT_BYTES, SERVICE_US);
    let server = serve_nbd(
        &emulator,
        EXPORT_BYTES,
        storsim_nbd::Listen::Unix(socket.clone()),
    );
    let uri = format!("nbd+unix:///storsim?socket={}", socket.display());

    let input = dir.join("in.img");
    let output = dir.join("out.img");
    let mut state = 0x1234_5678_9abc_def0u64;
    let data: Vec<u8> = (0..EXPORT_BYTES)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    std::fs::write(&input, &data).unwrap();
    let copy = |from: &str, to: &str| {
        let out = run(
            &nbdcopy,
            &[
                "--connections=4",
                "--requests=16",
                "--request-size=65536",
                from,
                to,
            ],
        );
        assert!(out.status.success(), "nbdcopy {from} {to}");
    };
    copy(input.to_str().unwrap(), &uri);
    copy(&uri, output.to_str().unwrap());
    let back = std::fs::read(&output).unwrap();
    assert!(back == data, "the data came back as written");
    let stored = {
        let mut buf = vec![0u8; EXPORT_BYTES as usize];
        emulator.store().read(0, &mut buf).unwrap();
        buf
    };
    assert!(stored == data, "the store holds what was written");

    let report = shut_down(server, &emulator);
    // At least the 128 writes and 128 reads of 64 KiB; nbdcopy may add flushes.
    assert!(
        report.lateness.replies >= 256,
        "{}",
        report.lateness.replies
    );
    assert_record(&record, report.lateness.replies as usize, SERVICE_US);
    let _ = std::fs::remove_dir_all(dir);
}
