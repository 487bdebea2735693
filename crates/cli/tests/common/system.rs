//! Real system parts the end-to-end tests drive: external tools (skipped with a message when
//! missing), a running `storsim emulate`, loop devices and mounts that clean up after
//! themselves.

use super::repo_root;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub fn have(tool: &str) -> bool {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .env("PATH", path_with_sbin())
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        storsim_testenv::missing(&format!("`{tool}` is not installed (.ci/run installs it)"));
    }
    found
}

/// Debian keeps mkfs.ext4, losetup and e2fsck in /sbin and /usr/sbin.
pub fn path_with_sbin() -> String {
    format!(
        "{}:/usr/sbin:/sbin",
        std::env::var("PATH").unwrap_or_default()
    )
}

pub fn run(program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .env("PATH", path_with_sbin())
        .output()
        .unwrap_or_else(|e| panic!("running {program}: {e}"))
}

pub fn run_ok(program: &str, args: &[&str]) -> String {
    let out = run(program, args);
    assert!(
        out.status.success(),
        "{program} {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Serves the `stec-zeus` model as a 16 MiB disk over NBD on a Unix socket in `dir`, with
/// `extra` emulate options, runs qemu-io's `commands` against it, stops it, and returns where
/// it wrote its final JSON report. The caller checks first that qemu-io is there.
pub fn emulate_with_qemu_io(dir: &Path, extra: &[&str], commands: &[&str]) -> PathBuf {
    let socket = dir.join("nbd.sock");
    let out = dir.join("emulate.json");
    let mut args = vec!["--device", "stec-zeus", "--size", "16m"];
    args.extend_from_slice(extra);
    args.extend(["--nbd-unix", socket.to_str().unwrap()]);
    args.extend(["--json", out.to_str().unwrap()]);
    let emu = Emulator::start(&args);
    let mut io = vec!["-f", "raw", emu.nbd()];
    for c in commands {
        io.extend(["-c", c]);
    }
    run_ok("qemu-io", &io);
    let (status, _, err) = emu.stop();
    assert!(status.success(), "{err}");
    out
}

/// A running `storsim emulate`, stopped with SIGTERM when dropped.
pub struct Emulator {
    child: Option<Child>,
    stdout: BufReader<ChildStdout>,
    nbd: Option<String>,
    pub fuse_file: Option<PathBuf>,
}

impl Emulator {
    /// Starts the emulator serving the `stec-zeus` model of `size` over NBD on the Unix
    /// socket `socket`, with `extra` arguments after those.
    pub fn over_nbd(socket: &Path, size: &str, extra: &[&str]) -> Emulator {
        Emulator::device_over_nbd("stec-zeus", socket, size, extra)
    }

    /// Starts the emulator serving `device` (a preset or a device file) over NBD on the Unix
    /// socket `socket`, as a disk of `size`, with `extra` arguments after those.
    pub fn device_over_nbd(device: &str, socket: &Path, size: &str, extra: &[&str]) -> Emulator {
        let mut args = vec![
            "--device",
            device,
            "--size",
            size,
            "--nbd-unix",
            socket.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        Emulator::start(&args)
    }

    /// Starts the emulator serving the `stec-zeus` model as a FUSE file of `size` at
    /// `dir/fuse` (made here), with `extra` arguments after those.
    pub fn over_fuse(dir: &Path, size: &str, extra: &[&str]) -> Emulator {
        let mountpoint = dir.join("fuse");
        std::fs::create_dir_all(&mountpoint).unwrap();
        let mut args = vec![
            "--device",
            "stec-zeus",
            "--size",
            size,
            "--fuse",
            mountpoint.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        Emulator::start(&args)
    }

    /// Starts the emulator and reads the addresses it prints (one line per front end).
    pub fn start(args: &[&str]) -> Emulator {
        let mut child = Command::new(env!("CARGO_BIN_EXE_storsim"))
            .arg("emulate")
            .args(args)
            .current_dir(repo_root())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("storsim runs");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let wanted = ["--nbd", "--nbd-unix", "--fuse", "--control"]
            .iter()
            .filter(|flag| args.contains(flag))
            .count();
        let (mut nbd, mut fuse_file) = (None, None);
        for _ in 0..wanted {
            let mut line = String::new();
            if stdout.read_line(&mut line).unwrap() == 0 {
                let mut err = String::new();
                child
                    .stderr
                    .take()
                    .unwrap()
                    .read_to_string(&mut err)
                    .unwrap();
                panic!("storsim emulate {args:?} stopped early: {err}");
            }
            let line = line.trim();
            if let Some(uri) = line.strip_prefix("nbd: ") {
                nbd = Some(uri.to_string());
            } else if let Some(file) = line.strip_prefix("fuse: ") {
                fuse_file = Some(PathBuf::from(file));
            }
        }
        Emulator {
            child: Some(child),
            stdout,
            nbd,
            fuse_file,
        }
    }

    pub fn nbd(&self) -> &str {
        self.nbd.as_deref().expect("started with --nbd")
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    pub fn signal(&self, signal: &str) {
        run_ok("kill", &[&format!("-{signal}"), &self.pid().to_string()]);
    }

    /// Stops with SIGINT and returns the exit status, standard output and standard error.
    pub fn stop(mut self) -> (std::process::ExitStatus, String, String) {
        self.signal("INT");
        let mut child = self.child.take().unwrap();
        let mut out = String::new();
        self.stdout.read_to_string(&mut out).unwrap();
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        (child.wait().unwrap(), out, err)
    }

    pub fn kill_9(mut self) {
        let mut child = self.child.take().unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            let deadline = Instant::now() + Duration::from_secs(20);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Sends one command to an emulator's control socket and returns its JSON answer.
pub fn control(socket: &Path, command: &str) -> serde_json::Value {
    use std::io::Write;
    let mut stream = std::os::unix::net::UnixStream::connect(socket).unwrap();
    stream.write_all(format!("{command}\n").as_bytes()).unwrap();
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line).unwrap();
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

/// Attaches `file` to a loop device with direct I/O, detached on drop.
pub struct Loop(pub String);

impl Loop {
    pub fn attach(file: &Path) -> Option<Loop> {
        let out = run(
            "losetup",
            &["--direct-io=on", "-f", "--show", file.to_str().unwrap()],
        );
        if !out.status.success() {
            storsim_testenv::missing(&format!(
                "no loop device: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
            return None;
        }
        Some(Loop(
            String::from_utf8_lossy(&out.stdout).trim().to_string(),
        ))
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = run("losetup", &["-d", &self.0]);
    }
}

/// Mounts `dev` at `dir`, unmounted on drop.
pub struct Mounted(pub PathBuf);

impl Mounted {
    pub fn new(dev: &str, dir: &Path) -> Mounted {
        std::fs::create_dir_all(dir).unwrap();
        run_ok("mount", &[dev, dir.to_str().unwrap()]);
        Mounted(dir.to_path_buf())
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let out = run("umount", &[self.0.to_str().unwrap()]);
        if !out.status.success() {
            let _ = run("umount", &["-l", self.0.to_str().unwrap()]);
        }
    }
}
