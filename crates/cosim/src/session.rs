//! Starting the program and serving its threads: the controller's socket, the poll loop, and
//! the end of the run.

use crate::controller::{pidfd_open, ConnId, Controller, Recorder};
use crate::layout::{Layout, LayoutError};
use crate::vclock::{mono_ns, VirtualClock};
use crate::{CosimError, CosimReport, Options, ProgramExit};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use storsim_core::Device;
use storsim_cosim_shim::proto::{env, Msg, MAX_MSG_BYTES};
use storsim_workload::trace::RecordWriter;

/// At most this many threads may be connected at once; more are refused (their process runs
/// on in real time), so the controller's tables stay bounded.
const MAX_CONNECTIONS: usize = 4096;

/// How long the controller polls for the next message before it blocks.
const SPIN_NS: u64 = 50_000;

fn setup(what: &str, e: impl std::fmt::Display) -> CosimError {
    CosimError::Setup(format!("{what}: {e}"))
}

/// The listening socket.
fn listen(path: &Path) -> Result<OwnedFd, CosimError> {
    let fd = unsafe {
        libc::socket(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            0,
        )
    };
    if fd < 0 {
        return Err(setup(
            "creating the controller's socket",
            std::io::Error::last_os_error(),
        ));
    }
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = path.as_os_str().as_bytes();
    if bytes.len() >= addr.sun_path.len() {
        return Err(CosimError::Setup(format!(
            "the socket path {} is too long for a Unix socket; use a shorter TMPDIR",
            path.display()
        )));
    }
    for (d, s) in addr.sun_path.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    let len = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
    unsafe {
        if libc::bind(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_un).cast(),
            len,
        ) != 0
            || libc::listen(fd.as_raw_fd(), 128) != 0
        {
            return Err(setup(
                &format!("listening on {}", path.display()),
                std::io::Error::last_os_error(),
            ));
        }
    }
    Ok(fd)
}

/// The layout at the start: the image, then the directory's files in path order.
fn initial_layout(
    options: &Options,
    capacity_bytes: u64,
) -> Result<(Layout, Option<PathBuf>, Option<PathBuf>), CosimError> {
    if options.extent_bytes == 0 || options.extent_bytes & 511 != 0 {
        return Err(CosimError::Input(format!(
            "--extent-size {} is not a positive multiple of 512 bytes",
            options.extent_bytes
        )));
    }
    let mut layout = Layout::new(capacity_bytes, options.extent_bytes);
    let canon = |p: &Path, what: &str| {
        std::fs::canonicalize(p)
            .map_err(|e| CosimError::Input(format!("{what} {}: {e}", p.display())))
    };
    let image = match &options.image {
        Some(p) => {
            let c = canon(p, "--image")?;
            let meta = std::fs::metadata(&c)
                .map_err(|e| CosimError::Input(format!("--image {}: {e}", p.display())))?;
            if !meta.is_file() {
                return Err(CosimError::Input(format!(
                    "--image {}: not a regular file",
                    p.display()
                )));
            }
            layout
                .add_image(c.as_os_str().as_bytes(), meta.len())
                .map_err(|_| {
                    CosimError::Input(format!(
                        "--image {}: {} bytes do not fit on the device ({capacity_bytes} bytes)",
                        p.display(),
                        meta.len()
                    ))
                })?;
            Some(c)
        }
        None => None,
    };
    let dir = match &options.dir {
        Some(p) => {
            let c = canon(p, "--dir")?;
            if !c.is_dir() {
                return Err(CosimError::Input(format!(
                    "--dir {}: not a directory",
                    p.display()
                )));
            }
            let mut files = Vec::new();
            collect_files(&c, &mut files);
            files.sort();
            for (path, size) in files {
                if Some(&path) == image.as_ref() {
                    continue;
                }
                match layout.add_existing(path.as_os_str().as_bytes(), size) {
                    Ok(_) => {}
                    Err(LayoutError::Full) => {
                        return Err(CosimError::Input(format!(
                            "--dir {}: its files do not fit on the device ({capacity_bytes} bytes)",
                            p.display()
                        )))
                    }
                    Err(e) => {
                        return Err(CosimError::Input(format!("--dir {}: {e:?}", p.display())))
                    }
                }
            }
            Some(c)
        }
        None => None,
    };
    Ok((layout, dir, image))
}

/// Regular files below `dir` with their sizes; symbolic links are not followed.
fn collect_files(dir: &Path, out: &mut Vec<(PathBuf, u64)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let Ok(meta) = e.path().symlink_metadata() else {
            continue;
        };
        if meta.is_dir() {
            collect_files(&e.path(), out);
        } else if meta.is_file() {
            out.push((e.path(), meta.len()));
        }
    }
}

enum Source {
    Listener,
    Root,
    Conn(ConnId),
    Proc(i32),
}

/// Runs `program` under cosim on `device` and returns the report and the device (for its
/// counters).
pub fn run(
    device: Box<dyn Device>,
    program: &[OsString],
    mut options: Options,
) -> Result<(CosimReport, Box<dyn Device>), CosimError> {
    let Some(name) = program.first() else {
        return Err(CosimError::Input("no program to run".into()));
    };
    if options.cpu_speed.is_nan() || options.cpu_speed <= 0.0 {
        return Err(CosimError::Input(format!(
            "--cpu-speed {} is not a positive number",
            options.cpu_speed
        )));
    }
    if options.dir.is_none() && options.image.is_none() {
        return Err(CosimError::Input(
            "give --dir DIR or --image FILE (or both)".into(),
        ));
    }
    let (layout, dir, image) = initial_layout(&options, device.capacity_bytes())?;
    let clock = VirtualClock::create(&options.work_dir.join("clock"), options.cpu_speed)
        .map_err(|e| setup("creating the clock page", e))?;
    let socket_path = options.work_dir.join("ctl.sock");
    let listener = listen(&socket_path)?;
    let recorder = match options.record.take() {
        Some(target) => Some(Recorder::new(
            RecordWriter::new(target.out, &target.header)
                .map_err(|e| setup("writing the record", e))?,
        )),
        None => None,
    };
    let mut ctl = Controller::new(device, layout, clock, recorder);

    let mut preload = OsString::from(&options.shim_library);
    if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|o| !o.is_empty()) {
        preload.push(":");
        preload.push(old);
    }
    let mut cmd = Command::new(name);
    cmd.args(&program[1..])
        .env("LD_PRELOAD", preload)
        .env(env::SOCKET, &socket_path)
        .env(env::CLOCK, options.work_dir.join("clock"))
        .env_remove(env::DIR)
        .env_remove(env::IMAGE)
        .env(env::REAL_SYNC, if options.real_sync { "1" } else { "0" });
    if let Some(d) = &dir {
        cmd.env(env::DIR, d);
    }
    if let Some(i) = &image {
        cmd.env(env::IMAGE, i);
    }
    let started_r = mono_ns();
    let signals = Signals::install();
    let mut child = cmd.spawn().map_err(|e| CosimError::Spawn {
        program: name.to_string_lossy().into_owned(),
        reason: e.to_string(),
    })?;
    let root_pid = child.id() as i32;
    let root_pidfd = pidfd_open(root_pid);

    let mut conns: BTreeMap<ConnId, OwnedFd> = BTreeMap::new();
    let mut next_conn: ConnId = 0;
    let mut buf = vec![0u8; MAX_MSG_BYTES + 1];
    let exit = loop {
        let timeout_ns = ctl.settle();
        send_replies(&mut ctl, &mut conns);
        let mut fds: Vec<libc::pollfd> = Vec::new();
        let mut sources = Vec::new();
        let mut watch = |fd: RawFd, s: Source| {
            fds.push(libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            });
            sources.push(s);
        };
        watch(listener.as_raw_fd(), Source::Listener);
        if let Some(p) = &root_pidfd {
            watch(p.as_raw_fd(), Source::Root);
        }
        for (&id, fd) in &conns {
            watch(fd.as_raw_fd(), Source::Conn(id));
        }
        for (&pid, p) in &ctl.procs {
            if let Some(fd) = &p.pidfd {
                watch(fd.as_raw_fd(), Source::Proc(pid));
            }
        }
        // Without a pidfd for the program (old kernels), look at it every 10 ms.
        let fallback = root_pidfd.is_none().then_some(10_000_000);
        let timeout = timeout_ns.or(fallback).map(|ns| libc::timespec {
            tv_sec: (ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (ns % 1_000_000_000) as libc::c_long,
        });
        // The next message usually follows within microseconds (a thread resuming, the next
        // call): polling briefly before blocking spares the controller a sleep and a wake-up.
        let zero = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let spin_until = mono_ns() + timeout_ns.map_or(SPIN_NS, |t| t.min(SPIN_NS));
        let mut n = 0;
        while mono_ns() < spin_until {
            n = unsafe {
                libc::ppoll(
                    fds.as_mut_ptr(),
                    fds.len() as libc::nfds_t,
                    &zero,
                    std::ptr::null(),
                )
            };
            if n != 0 {
                break;
            }
            // Yield rather than spin, so that a program thread sharing this core can run.
            unsafe { libc::sched_yield() };
        }
        if n == 0 {
            n = unsafe {
                libc::ppoll(
                    fds.as_mut_ptr(),
                    fds.len() as libc::nfds_t,
                    timeout
                        .as_ref()
                        .map_or(std::ptr::null(), |t| t as *const libc::timespec),
                    std::ptr::null(),
                )
            };
        }
        if let Some(signal) = signals.take_terminate() {
            // Passed on: the program decides how to end, and the report still comes.
            unsafe { libc::kill(root_pid, signal) };
        }
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(setup("waiting for the program", e));
            }
            continue;
        }
        let mut ended = Vec::new();
        let mut root_ended = root_pidfd.is_none();
        for (pfd, source) in fds.iter().zip(&sources) {
            if pfd.revents == 0 {
                continue;
            }
            match *source {
                Source::Listener => loop {
                    let fd = unsafe {
                        libc::accept4(
                            listener.as_raw_fd(),
                            std::ptr::null_mut(),
                            std::ptr::null_mut(),
                            libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
                        )
                    };
                    if fd < 0 {
                        break;
                    }
                    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
                    if conns.len() < MAX_CONNECTIONS {
                        conns.insert(next_conn, fd);
                        next_conn += 1;
                    }
                },
                Source::Conn(id) => serve(&mut ctl, &mut conns, id, &mut buf),
                Source::Proc(pid) => ended.push(pid),
                Source::Root => root_ended = true,
            }
        }
        for pid in ended {
            ctl.process_ended(pid);
        }
        if root_ended {
            match child.try_wait() {
                Ok(Some(status)) => {
                    ctl.process_ended(root_pid);
                    break match (status.code(), status.signal()) {
                        (Some(c), _) => ProgramExit::Code(c),
                        (None, Some(s)) => ProgramExit::Signal(s),
                        (None, None) => ProgramExit::Code(-1),
                    };
                }
                Ok(None) => {}
                Err(e) => return Err(setup("waiting for the program", e)),
            }
        }
    };
    drop(signals);
    let real_elapsed_ns = mono_ns() - started_r;
    let intercepted = ctl.clock.started_r().is_some();
    let virtual_elapsed_ns = ctl.clock.finish();
    ctl.drain();
    if let Some(r) = ctl.recorder.take() {
        r.finish().map_err(|e| setup("writing the record", e))?;
    }
    let report = CosimReport {
        exit,
        virtual_elapsed_ns,
        real_elapsed_ns,
        paused_real_ns: ctl.clock.paused_real_ns,
        skipped_virtual_ns: ctl.clock.skipped_ns,
        cpu_speed: ctl.clock.cpu_speed(),
        calls: ctl.stats.clone(),
        files: ctl.layout.files() as u64,
        allocated_bytes: ctl.layout.allocated_bytes(),
        summary: ctl.collector.summary(),
        warnings: ctl.warnings.iter().cloned().collect(),
        intercepted,
    };
    Ok((report, ctl.into_device()))
}

/// Reads every message waiting on connection `id`.
fn serve(ctl: &mut Controller, conns: &mut BTreeMap<ConnId, OwnedFd>, id: ConnId, buf: &mut [u8]) {
    loop {
        let Some(fd) = conns.get(&id) else {
            return;
        };
        let n = unsafe {
            libc::recv(
                fd.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::WouldBlock {
            return;
        }
        let handled = n > 0
            && match Msg::decode(&buf[..n as usize]) {
                Some((msg, payload)) => ctl.handle(id, &msg, payload).is_ok(),
                None => false,
            };
        if !handled {
            conns.remove(&id);
            ctl.connection_closed(id);
            return;
        }
    }
}

fn send_replies(ctl: &mut Controller, conns: &mut BTreeMap<ConnId, OwnedFd>) {
    for (id, reply) in std::mem::take(&mut ctl.outbox) {
        let Some(fd) = conns.get(&id) else {
            continue;
        };
        let bytes = reply.encode();
        let n = unsafe {
            libc::send(
                fd.as_raw_fd(),
                bytes.as_ptr().cast(),
                bytes.len(),
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
            )
        };
        if n != bytes.len() as isize {
            conns.remove(&id);
            ctl.connection_closed(id);
        }
    }
}

/// The last terminating signal received, 0 if none.
static PENDING_SIGNAL: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

extern "C" fn note_signal(signal: libc::c_int) {
    PENDING_SIGNAL.store(signal, std::sync::atomic::Ordering::Relaxed);
}

/// While the program runs, storsim behaves like `time`: Ctrl-C and Ctrl-\ reach the program
/// (it is in the same process group) and storsim stays to report; SIGTERM and SIGHUP sent to
/// storsim alone are passed on to the program. Handlers, not `SIG_IGN`, so that the program does
/// not inherit ignored signals across exec.
struct Signals {
    old: Vec<(libc::c_int, libc::sigaction)>,
}

impl Signals {
    const HANDLED: [libc::c_int; 4] = [libc::SIGINT, libc::SIGQUIT, libc::SIGTERM, libc::SIGHUP];

    fn install() -> Signals {
        let mut old = Vec::new();
        for signal in Self::HANDLED {
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = note_signal as extern "C" fn(libc::c_int) as usize;
                libc::sigemptyset(&mut action.sa_mask);
                let mut previous: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(signal, &action, &mut previous) == 0 {
                    old.push((signal, previous));
                }
            }
        }
        Signals { old }
    }

    /// A SIGTERM or SIGHUP to pass on (SIGINT and SIGQUIT already reached the program's group).
    fn take_terminate(&self) -> Option<libc::c_int> {
        match PENDING_SIGNAL.swap(0, std::sync::atomic::Ordering::Relaxed) {
            s if s == libc::SIGTERM || s == libc::SIGHUP => Some(s),
            _ => None,
        }
    }
}

impl Drop for Signals {
    fn drop(&mut self) {
        for (signal, previous) in &self.old {
            unsafe { libc::sigaction(*signal, previous, std::ptr::null_mut()) };
        }
    }
}
