//! Starting the program and serving its threads: the controller's socket, the poll loop, and
//! the end of the run.

use crate::controller::{pidfd_open, ConnId, Controller, Recorder};
use crate::layout::{Layout, LayoutError};
use crate::vclock::{mono_ns, VirtualClock};
use crate::{CosimError, CosimReport, Options, ProgramExit};
use rustix::event::{self, PollFd, PollFlags, Timespec};
use rustix::io::Errno;
use rustix::net::{
    self, AddressFamily, RecvFlags, SendFlags, SocketAddrUnix, SocketFlags, SocketType,
};
use rustix::process;
use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
use signal_hook::flag;
use signal_hook::low_level::pipe;
use std::collections::BTreeMap;
use std::ffi::c_int;
use std::ffi::OsString;
use std::io::Read;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use storsim_core::Device;
use storsim_cosim_shim::proto::{env, Msg, MAX_MSG_BYTES};
use storsim_stats::{SeriesRecorder, WindowWidth};
use storsim_workload::trace::RecordWriter;

/// At most this many threads may be connected at once; more are refused (their process runs
/// on in real time), so the controller's tables stay bounded.
const MAX_CONNECTIONS: usize = 4096;

/// How long the controller polls for the next message before it blocks.
const SPIN_NS: u64 = 50_000;

/// The length of `sockaddr_un`'s `sun_path` on Linux.
const SUN_PATH_BYTES: usize = 108;

fn setup(what: &str, e: impl std::fmt::Display) -> CosimError {
    CosimError::Setup(format!("{what}: {e}"))
}

/// The listening socket.
fn listen(path: &Path) -> Result<OwnedFd, CosimError> {
    let fd = net::socket_with(
        AddressFamily::UNIX,
        SocketType::SEQPACKET,
        SocketFlags::CLOEXEC | SocketFlags::NONBLOCK,
        None,
    )
    .map_err(|e| setup("creating the controller's socket", std::io::Error::from(e)))?;
    // The preload library copies the path into a `sockaddr_un` with its terminating NUL, so
    // a path that fills `sun_path` exactly is refused here too.
    let address = SocketAddrUnix::new(path)
        .ok()
        .filter(|_| path.as_os_str().len() < SUN_PATH_BYTES)
        .ok_or_else(|| {
            CosimError::Setup(format!(
                "the socket path {} is too long for a Unix socket; use a shorter TMPDIR",
                path.display()
            ))
        })?;
    net::bind(&fd, &address)
        .and_then(|()| net::listen(&fd, 128))
        .map_err(|e| {
            setup(
                &format!("listening on {}", path.display()),
                std::io::Error::from(e),
            )
        })?;
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

#[derive(Clone, Copy)]
enum Source {
    Listener,
    /// The pipe the signal handlers write to.
    Signal,
    Root,
    Conn(ConnId),
    Proc(i32),
}

/// Runs `program` under cosim on `device` and returns the report and the device (for its
/// counters): checks the options, lays out the files, starts the program with the preload
/// library, serves its threads until it ends, and reports.
pub fn run(
    device: Box<dyn Device>,
    program: &[OsString],
    mut options: Options,
) -> Result<(CosimReport, Box<dyn Device>), CosimError> {
    let name = check_options(program, &options)?;
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
    ctl.series = SeriesRecorder::new(options.window);
    let mut cmd = program_command(program, &options, &socket_path, &dir, &image);

    let started_r = mono_ns();
    ctl.clock.set_real_origin(started_r);
    let signals = Signals::install()?;
    let child = cmd.spawn().map_err(|e| CosimError::Spawn {
        program: name.to_string_lossy().into_owned(),
        reason: e.to_string(),
    })?;
    let mut serving = Serving::new(ctl, listener, child);
    let exit = serving.until_the_program_ends(&signals)?;
    drop(signals);
    finish(serving.ctl, exit)
}

/// The program's name, once the options are known to make sense.
fn check_options<'a>(
    program: &'a [OsString],
    options: &Options,
) -> Result<&'a OsString, CosimError> {
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
    Ok(name)
}

/// The program's command line, with the preload library ahead of any the caller had and the
/// environment that tells it where the controller, the clock and its files are.
fn program_command(
    program: &[OsString],
    options: &Options,
    socket_path: &Path,
    dir: &Option<PathBuf>,
    image: &Option<PathBuf>,
) -> Command {
    let mut preload = OsString::from(&options.shim_library);
    if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|o| !o.is_empty()) {
        preload.push(":");
        preload.push(old);
    }
    let mut cmd = Command::new(&program[0]);
    cmd.args(&program[1..])
        .env("LD_PRELOAD", preload)
        .env(env::SOCKET, socket_path)
        .env(env::CLOCK, options.work_dir.join("clock"))
        .env_remove(env::DIR)
        .env_remove(env::IMAGE)
        .env(env::REAL_SYNC, if options.real_sync { "1" } else { "0" });
    if let Some(d) = dir {
        cmd.env(env::DIR, d);
    }
    if let Some(i) = image {
        cmd.env(env::IMAGE, i);
    }
    cmd
}

/// The controller's poll loop and what it watches: the listening socket, one connection per
/// program thread, and the program's processes through their pidfds.
struct Serving {
    ctl: Controller,
    listener: OwnedFd,
    child: std::process::Child,
    root_pid: i32,
    /// The program's pidfd; without one (old kernels) the loop looks at it every 10 ms.
    root_pidfd: Option<OwnedFd>,
    conns: BTreeMap<ConnId, OwnedFd>,
    next_conn: ConnId,
    buf: Vec<u8>,
}

impl Serving {
    fn new(ctl: Controller, listener: OwnedFd, child: std::process::Child) -> Serving {
        let root_pid = child.id() as i32;
        Serving {
            ctl,
            listener,
            child,
            root_pid,
            root_pidfd: pidfd_open(root_pid),
            conns: BTreeMap::new(),
            next_conn: 0,
            buf: vec![0u8; MAX_MSG_BYTES + 1],
        }
    }

    /// Serves the program's threads until the program (its first process) ends, passing on
    /// the stop signals the controller receives meanwhile.
    fn until_the_program_ends(&mut self, signals: &Signals) -> Result<ProgramExit, CosimError> {
        loop {
            let timeout_ns = self.ctl.settle();
            send_replies(&mut self.ctl, &mut self.conns);
            let Some(sources) = self.wait(timeout_ns, signals)? else {
                continue;
            };
            if self.serve_sources(sources) {
                if let Some(exit) = self.root_exit()? {
                    return Ok(exit);
                }
            }
        }
    }

    /// Waits until a watched descriptor has something to read or the controller's next
    /// deadline (`timeout_ns`), and returns the ready sources; `None` when a signal cut the
    /// wait short. A stop signal received meanwhile is passed on to the program.
    fn wait(
        &mut self,
        timeout_ns: Option<u64>,
        signals: &Signals,
    ) -> Result<Option<Vec<Source>>, CosimError> {
        let watched = std::iter::once((self.listener.as_fd(), Source::Listener))
            .chain(signals.wake_fd().map(|fd| (fd, Source::Signal)))
            .chain(self.root_pidfd.as_ref().map(|p| (p.as_fd(), Source::Root)))
            .chain(
                self.conns
                    .iter()
                    .map(|(&id, fd)| (fd.as_fd(), Source::Conn(id))),
            )
            .chain(
                self.ctl
                    .procs
                    .iter()
                    .filter_map(|(&pid, p)| Some((p.pidfd.as_ref()?.as_fd(), Source::Proc(pid)))),
            );
        let (mut fds, mut sources): (Vec<PollFd>, Vec<Source>) = watched
            .map(|(fd, source)| (PollFd::from_borrowed_fd(fd, PollFlags::IN), source))
            .unzip();
        let fallback = self.root_pidfd.is_none().then_some(10_000_000);
        let timeout = timeout_ns.or(fallback).map(|ns| Timespec {
            tv_sec: (ns / 1_000_000_000) as i64,
            tv_nsec: (ns % 1_000_000_000) as i64,
        });
        // The next message usually follows within microseconds (a thread resuming, the next
        // call): polling briefly before blocking spares the controller a sleep and a wake-up.
        let zero = Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let spin_until = mono_ns() + timeout_ns.map_or(SPIN_NS, |t| t.min(SPIN_NS));
        let mut polled = Ok(0);
        while mono_ns() < spin_until {
            polled = event::poll(&mut fds, Some(&zero));
            if polled != Ok(0) {
                break;
            }
            // Yield rather than spin, so that a program thread sharing this core can run.
            std::thread::yield_now();
        }
        if polled == Ok(0) {
            polled = event::poll(&mut fds, timeout.as_ref());
        }
        if let Some(signal) = signals.take_terminate() {
            // Passed on: the program decides how to end, and the report still comes. An error
            // means the program has ended already, which the pidfd reports next.
            if let Some(pid) = process::Pid::from_raw(self.root_pid) {
                let _ = process::kill_process(pid, signal);
            }
        }
        match polled {
            Ok(_) => {}
            // A signal arrived: looked at above.
            Err(Errno::INTR) => return Ok(None),
            Err(e) => return Err(setup("waiting for the program", std::io::Error::from(e))),
        }
        // Only the sources with something to read are kept; the borrows of the descriptors
        // end here, before serving them changes the tables they live in.
        let mut ready = fds.iter().map(|p| !p.revents().is_empty());
        sources.retain(|_| ready.next() == Some(true));
        Ok(Some(sources))
    }

    /// Serves the ready sources: new connections, messages, ended processes. Returns whether
    /// the program's first process may have ended (always, without a pidfd to say so).
    fn serve_sources(&mut self, sources: Vec<Source>) -> bool {
        let mut ended = Vec::new();
        let mut root_ended = self.root_pidfd.is_none();
        for source in sources {
            match source {
                Source::Listener => {
                    while let Ok(fd) = net::accept_with(
                        &self.listener,
                        SocketFlags::CLOEXEC | SocketFlags::NONBLOCK,
                    ) {
                        if self.conns.len() < MAX_CONNECTIONS {
                            self.conns.insert(self.next_conn, fd);
                            self.next_conn += 1;
                        }
                    }
                }
                // The signal itself was looked at when the wait ended.
                Source::Signal => Signals::drain_wake_pipe(),
                Source::Conn(id) => serve(&mut self.ctl, &mut self.conns, id, &mut self.buf),
                Source::Proc(pid) => ended.push(pid),
                Source::Root => root_ended = true,
            }
        }
        for pid in ended {
            self.ctl.process_ended(pid);
        }
        root_ended
    }

    /// How the program ended, if it has.
    fn root_exit(&mut self) -> Result<Option<ProgramExit>, CosimError> {
        match self.child.try_wait() {
            Ok(Some(status)) => {
                self.ctl.process_ended(self.root_pid);
                Ok(Some(match (status.code(), status.signal()) {
                    (Some(c), _) => ProgramExit::Code(c),
                    (None, Some(s)) => ProgramExit::Signal(s),
                    (None, None) => ProgramExit::Code(-1),
                }))
            }
            Ok(None) => Ok(None),
            Err(e) => Err(setup("waiting for the program", e)),
        }
    }
}

/// Stops the clock, lets the device finish, closes the record and builds the report.
fn finish(
    mut ctl: Controller,
    exit: ProgramExit,
) -> Result<(CosimReport, Box<dyn Device>), CosimError> {
    let intercepted = ctl.clock.started_r().is_some();
    // Real time counts from starting the program (the clock's real origin) to now: the same
    // reading that ends the clock series.
    let end = ctl.clock.finish();
    let (virtual_elapsed_ns, real_elapsed_ns) = (end.virtual_ns, end.real_ns);
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
        series: std::mem::replace(&mut ctl.series, SeriesRecorder::new(WindowWidth::Auto))
            .finish(ctl.last_finish, ctl.device_counters()),
        clock_series: ctl.clock.samples.samples().to_vec(),
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
        let n = match net::recv(fd, &mut *buf, RecvFlags::DONTWAIT) {
            Ok((_, n)) => n,
            Err(Errno::WOULDBLOCK) => return,
            // Any other failure ends the connection, as its end of file does.
            Err(_) => 0,
        };
        let handled = n > 0
            && match Msg::decode(&buf[..n]) {
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
        // A thread waits for its reply with room for it, so a reply that does not leave whole
        // at once means the thread is gone or misbehaves: its connection ends.
        let sent = net::send(fd, &bytes, SendFlags::DONTWAIT | SendFlags::NOSIGNAL);
        if sent != Ok(bytes.len()) {
            conns.remove(&id);
            ctl.connection_closed(id);
        }
    }
}

/// The last of the handled signals received while a program runs, 0 if none.
static PENDING_SIGNAL: AtomicUsize = AtomicUsize::new(0);

/// The read end of the pipe the handlers of the handled signals write a byte to. The controller
/// polls it with the program's descriptors: a signal that arrives after the controller last
/// looked at [`PENDING_SIGNAL`] but before it blocks in `poll` would otherwise wait for the next
/// message or deadline, which for an idle program may never come.
static WAKE_PIPE: OnceLock<UnixStream> = OnceLock::new();

/// Whether no program runs, so that the handled signals have their default effect on storsim
/// (it ends). True until the first program starts.
static SIGNALS_DEFAULT: AtomicBool = AtomicBool::new(true);

/// How many runs are under way in this process; SIGNALS_DEFAULT follows it to and from zero.
static RUNS: Mutex<usize> = Mutex::new(0);

/// While the program runs, storsim behaves like `time`: Ctrl-C and Ctrl-\ reach the program
/// (it is in the same process group) and storsim stays to report; SIGTERM and SIGHUP sent to
/// storsim alone are passed on to the program. Handlers, not `SIG_IGN`, so that the program does
/// not inherit ignored signals across exec. The handlers stay installed for the rest of the
/// process (signal-hook cannot take them out again); outside a run they do what each signal
/// does by default.
struct Signals;

impl Signals {
    const HANDLED: [c_int; 4] = [SIGINT, SIGQUIT, SIGTERM, SIGHUP];

    fn install() -> Result<Signals, CosimError> {
        static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
        INSTALLED
            .get_or_init(|| {
                let (reader, writer) = UnixStream::pair().map_err(|e| e.to_string())?;
                reader.set_nonblocking(true).map_err(|e| e.to_string())?;
                Self::HANDLED.iter().try_for_each(|&signal| {
                    // The default action is registered first, so that it looks at the flag
                    // before the signal is noted; the wake-up comes after the note.
                    flag::register_conditional_default(signal, &SIGNALS_DEFAULT)
                        .and_then(|_| {
                            flag::register_usize(signal, &PENDING_SIGNAL, signal as usize)
                        })
                        .and_then(|_| pipe::register(signal, writer.try_clone()?))
                        .map(drop)
                        .map_err(|e| e.to_string())
                })?;
                // Set once, here, under the OnceLock that runs this closure once.
                let _ = WAKE_PIPE.set(reader);
                Ok(())
            })
            .clone()
            .map_err(|e| setup("installing signal handlers", e))?;
        let mut runs = RUNS.lock().unwrap_or_else(PoisonError::into_inner);
        if *runs == 0 {
            PENDING_SIGNAL.store(0, Ordering::SeqCst);
            SIGNALS_DEFAULT.store(false, Ordering::SeqCst);
        }
        *runs += 1;
        Ok(Signals)
    }

    /// The pipe to poll for a signal's wake-up.
    fn wake_fd(&self) -> Option<BorrowedFd<'static>> {
        WAKE_PIPE.get().map(|reader| reader.as_fd())
    }

    /// Empties the wake-up pipe, so that it wakes the controller again only for a new signal.
    fn drain_wake_pipe() {
        if let Some(mut reader) = WAKE_PIPE.get() {
            let mut bytes = [0u8; 64];
            while reader.read(&mut bytes).is_ok_and(|n| n > 0) {}
        }
    }

    /// A SIGTERM or SIGHUP to pass on (SIGINT and SIGQUIT already reached the program's group).
    fn take_terminate(&self) -> Option<process::Signal> {
        match PENDING_SIGNAL.swap(0, Ordering::Relaxed) {
            s if s == SIGTERM as usize => Some(process::Signal::TERM),
            s if s == SIGHUP as usize => Some(process::Signal::HUP),
            _ => None,
        }
    }
}

impl Drop for Signals {
    fn drop(&mut self) {
        let mut runs = RUNS.lock().unwrap_or_else(PoisonError::into_inner);
        *runs -= 1;
        if *runs == 0 {
            SIGNALS_DEFAULT.store(true, Ordering::SeqCst);
        }
    }
}
