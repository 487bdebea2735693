//! `storsim emulate`.

use crate::args::{EmulateArgs, FuseTransportArg};
use crate::destination;
use crate::CliError;
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::{mpsc, Arc, Mutex};
use storsim_config::FaultControl;
use storsim_emulate::control::ControlSocket;
use storsim_emulate::cpus;
use storsim_emulate::signals::{self, Signal};
use storsim_emulate::{Backing, Emulator, EmulatorOptions, RecordTarget, Store};
use storsim_frontends::{FuseFrontend, NbdFrontend};
use storsim_output::{control_line, ControlAnswer, FaultRules};

/// The file the FUSE mount holds.
const FUSE_FILE_NAME: &str = "disk";

/// Why the emulator stops.
enum StopReason {
    Signal,
    /// The FUSE file system was unmounted from outside.
    Unmounted,
}

/// Runs the emulator until a signal stops it or its FUSE mount is unmounted from outside:
/// checks the arguments, starts the emulator and its front ends, waits, then stops them in
/// order and prints the report.
pub fn run(args: EmulateArgs) -> Result<(), CliError> {
    // First of all, so that a stop signal during start-up waits for the watcher.
    let signal_watcher = signals::Watcher::install()
        .map_err(|e| CliError::failure(format!("installing signal handlers: {e}")))?;

    let checked = check_args(&args)?;
    // Before any thread starts, so that every thread this one starts inherits the rest.
    if let Some(cpu) = args.pacing_cpu {
        keep_off_pacing_cpu(cpu)?;
    }
    let (emulator, export_bytes) = start_emulator(&args, &checked)?;
    crate::power_loss::setup(&args, &emulator, export_bytes)?;

    let (stop_tx, stop_rx) = mpsc::channel::<StopReason>();
    {
        let emulator = Arc::clone(&emulator);
        let faults = checked.faults.clone();
        let power_loss = checked.power_loss.clone();
        // SIGUSR1 also rewrites `--json FILE` with the document so far (the exit replaces it),
        // so that a long run can be plotted while it goes; standard output is left to the
        // final document.
        let json_file = args
            .json
            .clone()
            .filter(|p| p.as_path() != std::path::Path::new("-"));
        signal_watcher
            .spawn(move |signal| match signal {
                Signal::Report => {
                    let so_far = emulator.report();
                    eprint!("{}", storsim_output::emulation_text(&so_far));
                    if let Some(path) = &json_file {
                        let doc = emulation_document(&so_far, &faults, &power_loss);
                        if let Err(e) = destination::write_json(path, &doc) {
                            eprintln!("storsim: {}", e.message);
                        }
                    }
                }
                // The receiver only goes away once shutdown has begun.
                Signal::Stop => drop(stop_tx.send(StopReason::Signal)),
            })
            .map_err(|e| CliError::failure(format!("starting the signal thread: {e}")))?;
    }

    let front_ends = FrontEnds::start(&args, &checked, &emulator, export_bytes)?;
    let pacing = match args.pacing_cpu {
        Some(cpu) => format!(", pacing thread on CPU {cpu}"),
        None => String::new(),
    };
    eprintln!(
        "storsim: emulating {} ({} bytes, backing {}{pacing}); Ctrl-C stops, SIGUSR1 prints the \
         report",
        checked.loaded.name, export_bytes, args.backing
    );
    // Tests and scripts read the addresses the front ends printed from a pipe.
    use std::io::Write;
    let _ = std::io::stdout().flush();

    let reason = wait_for_stop(&stop_rx, front_ends.mount.as_ref());
    front_ends.stop(reason)?;
    let final_report = emulator.shutdown().map_err(CliError::failure)?;
    if let Some(path) = &args.json {
        let document = emulation_document(&final_report, &checked.faults, &checked.power_loss);
        destination::write_json(path, &document)?;
    }
    if args.json.as_deref() != Some(std::path::Path::new("-")) {
        crate::stdout::say!("{}", storsim_output::emulation_text(&final_report));
    }
    Ok(())
}

/// What the arguments say, checked before anything starts.
struct CheckedArgs {
    loaded: storsim_config::LoadedDevice,
    nbd_addr: Option<SocketAddr>,
    backing: Backing,
    late_threshold_ns: u64,
    spin_margin_ns: u64,
    fuse_transport: storsim_fuse::Transport,
    /// The faults layers' rules as the control socket changes them.
    faults: FaultControls,
    /// What the JSON says of power loss beyond the emulator's report.
    power_loss: storsim_output::PowerLossSettings,
}

/// Loads the device and checks every argument that can be checked before anything starts, in
/// the order the user is told about them.
fn check_args(args: &EmulateArgs) -> Result<CheckedArgs, CliError> {
    let loaded = storsim_config::load_device(&args.device).map_err(CliError::input)?;
    crate::simulate::check_memory(&loaded.name, &loaded.spec)?;
    let nbd_addr = match &args.nbd {
        Some(text) => Some(nbd_address(text, args.allow_remote)?),
        None => None,
    };
    let backing: Backing = args
        .backing
        .parse()
        .map_err(|e| CliError::input(format!("--backing: {e}")))?;
    let late_threshold_ns = microseconds_arg("--late-threshold-us", args.late_threshold_us)?;
    let fuse_transport = match args.fuse_transport {
        FuseTransportArg::Auto => storsim_fuse::Transport::Auto,
        FuseTransportArg::DevFuse => storsim_fuse::Transport::DevFuse,
        FuseTransportArg::IoUring => storsim_fuse::Transport::IoUring,
    };
    // Asked for by name, io_uring is checked before anything starts, so that the refusal says
    // what to change rather than failing halfway through mounting.
    if fuse_transport == storsim_fuse::Transport::IoUring {
        if let Some(reason) = storsim_fuse::io_uring_unavailable() {
            return Err(CliError::failure(format!(
                "--fuse-transport io-uring: FUSE over io_uring is unavailable: {reason}"
            )));
        }
    }
    let spin_margin_ns = microseconds_arg("--spin-margin-us", args.spin_margin_us)?;
    Ok(CheckedArgs {
        loaded,
        nbd_addr,
        backing,
        late_threshold_ns,
        spin_margin_ns,
        fuse_transport,
        faults: FaultControls::default(),
        power_loss: crate::power_loss::settings(args),
    })
}

/// Builds the device model, opens the store and the record, and starts the emulator's
/// threads; returns the emulator and the size of the export.
fn start_emulator(
    args: &EmulateArgs,
    checked: &CheckedArgs,
) -> Result<(Arc<Emulator>, u64), CliError> {
    let loaded = &checked.loaded;
    let mut spec = loaded.spec.clone();
    let children = with_fault_control(&mut spec, &checked.faults, args.seed);
    let device = spec
        .build()
        .map_err(|e| CliError::input(format!("{}: {e}", loaded.name)))?;
    *checked.faults.children() = children;
    let export_bytes = export_bytes(args, &loaded.name, device.capacity_bytes())?;
    let store = Store::open(&checked.backing, export_bytes)
        .map_err(|e| CliError::input(format!("--backing {}: {e}", args.backing)))?;
    let record = record_target(args, &loaded.name, export_bytes)?;
    let options = EmulatorOptions {
        late_threshold_ns: checked.late_threshold_ns,
        spin_margin_ns: checked.spin_margin_ns,
        pacing_cpu: args.pacing_cpu,
        window: args.window,
        ..EmulatorOptions::new(export_bytes)
    };
    let emulator = Arc::new(
        Emulator::start(device, &loaded.name, Arc::new(store), options, record)
            .map_err(CliError::input)?,
    );
    Ok((emulator, export_bytes))
}

/// The size of the export: `--size`, or the whole of device `name` (`capacity_bytes`).
fn export_bytes(args: &EmulateArgs, name: &str, capacity_bytes: u64) -> Result<u64, CliError> {
    let export_bytes = match &args.size {
        Some(text) => storsim_workload::synthetic::parse_size(text)
            .map_err(|e| CliError::input(format!("--size {text}: {e}")))?,
        None => capacity_bytes,
    };
    if export_bytes == 0 || export_bytes % 512 != 0 {
        return Err(CliError::input(format!(
            "--size: {export_bytes} bytes is not a positive multiple of 512 (block devices and \
             NBD clients address 512-byte sectors)"
        )));
    }
    if export_bytes > capacity_bytes {
        return Err(CliError::input(format!(
            "--size: {export_bytes} bytes is more than {name} holds ({capacity_bytes} bytes)"
        )));
    }
    Ok(export_bytes)
}

/// The `--record` file, created now, with the header that says what it records.
fn record_target(
    args: &EmulateArgs,
    name: &str,
    export_bytes: u64,
) -> Result<Option<RecordTarget>, CliError> {
    let Some(path) = &args.record else {
        return Ok(None);
    };
    let file = std::fs::File::create(path)
        .map_err(|e| CliError::failure(format!("--record {}: {e}", path.display())))?;
    Ok(Some(RecordTarget {
        out: Box::new(std::io::BufWriter::with_capacity(1 << 20, file)),
        header: vec![
            ("device".to_string(), name.to_string()),
            ("export_bytes".to_string(), export_bytes.to_string()),
            ("backing".to_string(), args.backing.clone()),
        ],
    }))
}

/// The front ends serving the emulated device, and the control socket.
struct FrontEnds {
    servers: Vec<storsim_nbd::ServerHandle>,
    mount: Option<storsim_fuse::Mount>,
    control: Option<ControlSocket>,
}

impl FrontEnds {
    /// Starts the NBD servers, the FUSE mount and the control socket that the arguments ask
    /// for, printing the address of each.
    fn start(
        args: &EmulateArgs,
        checked: &CheckedArgs,
        emulator: &Arc<Emulator>,
        export_bytes: u64,
    ) -> Result<FrontEnds, CliError> {
        let log: Arc<dyn Fn(&str) + Send + Sync> =
            Arc::new(|line: &str| eprintln!("storsim: {line}"));
        let servers = start_nbd(args, checked, emulator, export_bytes, &log)?;
        let mount = match &args.fuse {
            Some(dir) => Some(mount_fuse(
                dir,
                checked.fuse_transport,
                args.read_only,
                emulator,
                export_bytes,
                &log,
            )?),
            None => None,
        };
        let control = match &args.control {
            Some(path) => {
                let handler = control_handler(
                    Arc::clone(emulator),
                    &args.device,
                    checked.faults.clone(),
                    checked.power_loss.clone(),
                    args.seed,
                );
                let socket = ControlSocket::bind(path, handler)
                    .map_err(|e| CliError::failure(format!("--control {}: {e}", path.display())))?;
                crate::stdout::sayln!("control: {}", path.display());
                Some(socket)
            }
            None => None,
        };
        Ok(FrontEnds {
            servers,
            mount,
            control,
        })
    }

    /// Stops the control socket, then the front ends: they answer what they hold, and the
    /// emulator drains the model afterwards. A mount that ended from outside is not
    /// unmounted again.
    fn stop(self, reason: StopReason) -> Result<(), CliError> {
        drop(self.control);
        for server in self.servers {
            server.shutdown();
        }
        if let Some(mount) = self.mount {
            if let StopReason::Signal = reason {
                mount
                    .unmount()
                    .map_err(|e| CliError::failure(format!("unmounting: {e}")))?;
            }
        }
        Ok(())
    }
}

/// Starts an NBD server on each address asked for (`--nbd`, `--nbd-unix`).
fn start_nbd(
    args: &EmulateArgs,
    checked: &CheckedArgs,
    emulator: &Arc<Emulator>,
    export_bytes: u64,
    log: &Arc<dyn Fn(&str) + Send + Sync>,
) -> Result<Vec<storsim_nbd::ServerHandle>, CliError> {
    let mut servers = Vec::new();
    let nbd_export = storsim_nbd::Export {
        name: args.export_name.clone(),
        description: format!("storsim emulating {}", checked.loaded.name),
        size_bytes: export_bytes,
        read_only: args.read_only,
    };
    let listens = checked
        .nbd_addr
        .map(storsim_nbd::Listen::Tcp)
        .into_iter()
        .chain(args.nbd_unix.clone().map(storsim_nbd::Listen::Unix));
    for listen in listens {
        let config = storsim_nbd::ServerConfig {
            log: Arc::clone(log),
            ..storsim_nbd::ServerConfig::new(nbd_export.clone())
        };
        let handler = Arc::new(NbdFrontend {
            emulator: Arc::clone(emulator),
        });
        let server = storsim_nbd::Server::bind(&listen, config, handler)
            .map_err(|e| CliError::failure(format!("NBD: {e}")))?;
        let address = server.local_addr();
        crate::stdout::sayln!("nbd: {}", nbd_uri(&address, &listen, &args.export_name));
        servers.push(server.spawn());
    }
    Ok(servers)
}

/// Mounts the FUSE file system on `dir`, holding one file of `export_bytes`.
fn mount_fuse(
    dir: &std::path::Path,
    transport: storsim_fuse::Transport,
    read_only: bool,
    emulator: &Arc<Emulator>,
    export_bytes: u64,
    log: &Arc<dyn Fn(&str) + Send + Sync>,
) -> Result<storsim_fuse::Mount, CliError> {
    let export = storsim_fuse::FileExport {
        file_name: FUSE_FILE_NAME.to_string(),
        size_bytes: export_bytes,
        read_only,
    };
    let options = storsim_fuse::MountOptions {
        log: Arc::clone(log),
        transport,
        ..storsim_fuse::MountOptions::default()
    };
    let handler = Arc::new(FuseFrontend {
        emulator: Arc::clone(emulator),
    });
    let mount = storsim_fuse::Mount::mount(dir, export, options, handler)
        .map_err(|e| CliError::failure(format!("--fuse {}: {e}", dir.display())))?;
    // Over io_uring the pacing thread, which spins anyway, looks for requests in the
    // ring itself, so none needs a thread woken to reach the model.
    if let Some(poller) = mount.ring_poller() {
        emulator.attach_poller(Box::new(storsim_frontends::FuseRingPoller(poller)));
    }
    crate::stdout::sayln!("fuse: {}", dir.join(FUSE_FILE_NAME).display());
    Ok(mount)
}

/// Waits for a stop signal. The FUSE session can also end from outside (someone ran umount):
/// look now and then.
fn wait_for_stop(
    stop_rx: &mpsc::Receiver<StopReason>,
    mount: Option<&storsim_fuse::Mount>,
) -> StopReason {
    loop {
        match stop_rx.recv_timeout(std::time::Duration::from_millis(200)) {
            Ok(reason) => return reason,
            Err(mpsc::RecvTimeoutError::Disconnected) => return StopReason::Signal,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if mount.is_some_and(|m| m.has_ended()) {
                    return StopReason::Unmounted;
                }
            }
        }
    }
}

/// Checks that `--pacing-cpu` names a processor this process may use, and keeps the calling
/// thread (and so every thread it starts later) on the others, when there are others.
fn keep_off_pacing_cpu(cpu: usize) -> Result<(), CliError> {
    let allowed = cpus::allowed_cpus()
        .map_err(|e| CliError::failure(format!("--pacing-cpu: reading the allowed CPUs: {e}")))?;
    if !allowed.contains(&cpu) {
        return Err(CliError::input(format!(
            "--pacing-cpu {cpu}: this process may run only on CPUs {}",
            cpus::cpu_list_text(&allowed)
        )));
    }
    let others: Vec<usize> = allowed.into_iter().filter(|&c| c != cpu).collect();
    if others.is_empty() {
        return Ok(());
    }
    cpus::restrict_current_thread(&others).map_err(|e| {
        CliError::failure(format!(
            "--pacing-cpu {cpu}: keeping the other threads on CPUs {}: {e}",
            cpus::cpu_list_text(&others)
        ))
    })
}

fn microseconds_arg(flag: &str, us: f64) -> Result<u64, CliError> {
    if !(us.is_finite() && (0.0..=1e9).contains(&us)) {
        return Err(CliError::input(format!(
            "{flag}: {us} is not a number of microseconds between 0 and 1e9"
        )));
    }
    Ok((us * 1000.0).round() as u64)
}

/// Resolves `--nbd ADDR:PORT`, refusing non-loopback addresses without `--allow-remote`.
fn nbd_address(text: &str, allow_remote: bool) -> Result<SocketAddr, CliError> {
    let addr = text
        .to_socket_addrs()
        .map_err(|e| CliError::input(format!("--nbd {text}: not an ADDR:PORT ({e})")))?
        .next()
        .ok_or_else(|| CliError::input(format!("--nbd {text}: resolves to no address")))?;
    let loopback = match addr.ip() {
        IpAddr::V4(ip) => ip.is_loopback(),
        IpAddr::V6(ip) => ip.is_loopback(),
    };
    if !loopback && !allow_remote {
        return Err(CliError::input(format!(
            "--nbd {text}: {} is not a loopback address; anyone who can reach it could read and \
             write the disk. Add --allow-remote if that is what you want",
            addr.ip()
        )));
    }
    Ok(addr)
}

/// The URI clients (qemu, nbdinfo) take for an export.
fn nbd_uri(address: &str, listen: &storsim_nbd::Listen, export: &str) -> String {
    match listen {
        storsim_nbd::Listen::Tcp(_) => format!("nbd://{address}/{export}"),
        storsim_nbd::Listen::Unix(path) => {
            format!("nbd+unix:///{export}?socket={}", path.display())
        }
    }
}

/// What `set` and `device` build on: the device argument and the overrides given so far.
struct DeviceChoice {
    base: String,
    overrides: Vec<String>,
}

/// The control socket's commands. Each answer is one JSON line with `ok`.
fn control_handler(
    emulator: Arc<Emulator>,
    device: &str,
    faults: FaultControls,
    power_loss: storsim_output::PowerLossSettings,
    seed: u64,
) -> storsim_emulate::control::CommandHandler {
    let choice = Mutex::new(DeviceChoice {
        base: device.to_string(),
        overrides: Vec::new(),
    });
    Arc::new(move |line: &str| {
        let (command, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let rest = rest.trim();
        let answer = match command {
            "report" | "stats" => Ok(control_line(&ControlAnswer::Report(emulation_document(
                &emulator.report(),
                &faults,
                &power_loss,
            )))),
            "device" | "set" => {
                let mut choice = choice.lock().unwrap_or_else(|p| p.into_inner());
                let (base, overrides) = if command == "device" {
                    (rest.to_string(), Vec::new())
                } else {
                    let mut all = choice.overrides.clone();
                    all.extend(rest.split_whitespace().map(str::to_string));
                    (choice.base.clone(), all)
                };
                switch_device(&emulator, &base, &overrides, &faults, seed).map(|name| {
                    choice.base = base;
                    choice.overrides = overrides;
                    control_line(&ControlAnswer::Device(name))
                })
            }
            "crash" => crate::power_loss::crash_command(&emulator),
            "fault" => fault_command(&faults, rest),
            "help" | "" => Ok(control_line(&ControlAnswer::Help(&[
                    "report: the emulator's report so far (JSON)",
                    "set KEY=VALUE ...: rebuild the device with these device-file keys changed",
                    "device PRESET|FILE: switch to another device description",
                    "crash: cut the power now (needs power loss on, docs/faults.md)",
                    "fault add [child=PATH] KEY=VALUE ...: inject a fault, keys as a [[faults.rule]]'s (child=1, 0.1: into that child of an array or hybrid drive)",
                    "fault clear [child=PATH]: remove every fault, or that child's (hung requests still time out)",
                    "fault list: the faults in force",
            ]))),
            other => Err(format!("unknown command `{other}` (try `help`)")),
        };
        answer.unwrap_or_else(|e| control_line(&ControlAnswer::Error(e)))
    })
}

/// The control socket's handles on the device's faults layers: the one over the whole device,
/// and one over each child of an array or hybrid drive at every depth, named by its path of
/// child numbers (`1` is the top device's second child, `0.1` the second child of its first;
/// a hybrid drive's flash is 0, its disk 1). Clones share the handles.
#[derive(Clone, Default)]
struct FaultControls {
    device: FaultControl,
    /// Rebuilt with the device at each switch: a new device has new children.
    children: Arc<Mutex<BTreeMap<String, FaultControl>>>,
}

impl FaultControls {
    fn children(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, FaultControl>> {
        self.children.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The handle on the layer `child` names, or on the whole device's for `None`.
    fn layer(&self, child: Option<&str>) -> Result<FaultControl, String> {
        let Some(path) = child else {
            return Ok(self.device.clone());
        };
        let children = self.children();
        if let Some(control) = children.get(path) {
            return Ok(control.clone());
        }
        let known: Vec<&str> = children.keys().map(String::as_str).collect();
        Err(if known.is_empty() {
            format!("`child={path}`: the device has no children (only an array or a hybrid has)")
        } else {
            format!(
                "`child={path}`: no such child (the device's: {})",
                known.join(", ")
            )
        })
    }

    /// The rules in force now, over the whole device and over each child.
    fn rules(&self) -> FaultRules {
        FaultRules {
            device: self.device.rules(),
            children: self
                .children()
                .iter()
                .map(|(path, control)| (path.clone(), control.rules()))
                .collect(),
        }
    }
}

/// Puts the emulator's faults layers into the device: over the whole device and over each
/// child of an array or hybrid drive, at every depth; each is the description's `[faults]`
/// there if it has one, an empty one otherwise, with a handle attached so that the control
/// socket's `fault` commands reach it, its draws seeded from `--seed`. The whole device's is
/// `controls.device`; the children's are new, returned by path for the caller to put into
/// `controls` once the device is built. The description's rules replace those the socket
/// added before.
fn with_fault_control(
    spec: &mut storsim_config::DeviceSpec,
    controls: &FaultControls,
    seed: u64,
) -> BTreeMap<String, FaultControl> {
    fn attach(spec: &mut storsim_config::DeviceSpec, control: FaultControl) {
        let mut plan = spec.faults().cloned().unwrap_or_default();
        plan.control = Some(control);
        spec.set_faults(Some(plan));
    }
    fn attach_children(
        spec: &mut storsim_config::DeviceSpec,
        prefix: &str,
        children: &mut BTreeMap<String, FaultControl>,
    ) {
        for (index, child) in spec.children_mut().into_iter().enumerate() {
            let path = if prefix.is_empty() {
                index.to_string()
            } else {
                format!("{prefix}.{index}")
            };
            let control = FaultControl::new();
            attach(child, control.clone());
            attach_children(child, &path, children);
            children.insert(path, control);
        }
    }
    attach(spec, controls.device.clone());
    let mut children = BTreeMap::new();
    attach_children(spec, "", &mut children);
    // Every layer's draws, the children's from seeds derived from the run's.
    spec.seed_faults(seed);
    children
}

/// The emulate document with the faults in force as the device's `faults` and, when power loss
/// is on, its `power_loss` (left out when it is off).
fn emulation_document(
    r: &storsim_emulate::EmulatorReport,
    faults: &FaultControls,
    power_loss: &storsim_output::PowerLossSettings,
) -> serde_json::Value {
    let mut doc = storsim_output::emulation_json(r, &destination::command_line());
    doc["device"]["faults"] = faults.rules().json();
    if let Some(power) = &r.power_loss {
        doc["power_loss"] = storsim_output::power_loss_json(power, power_loss);
    }
    doc
}

/// `fault add [child=PATH] KEY=VALUE ...`, `fault clear [child=PATH]` and `fault list`: the
/// layer over the whole device, or with `child=` the one over that child of an array or
/// hybrid drive. A plain `clear` clears every layer.
fn fault_command(faults: &FaultControls, rest: &str) -> Result<String, String> {
    let mut words = rest.split_whitespace();
    let command = words.next();
    let (children, args): (Vec<&str>, Vec<&str>) = words.partition(|w| w.starts_with("child="));
    let child = match children[..] {
        [] => None,
        [one] => Some(&one["child=".len()..]),
        _ => return Err("`child=` is given more than once".into()),
    };
    let answer = |faults: &FaultControls| Ok(control_line(&ControlAnswer::Faults(&faults.rules())));
    match command {
        Some("add") => {
            let layer = faults.layer(child)?;
            let rule =
                storsim_config::parse_fault_rule(&args, "fault add").map_err(|e| e.to_string())?;
            layer.add(rule);
            answer(faults)
        }
        Some("clear") if args.is_empty() => {
            match child {
                Some(_) => faults.layer(child)?.clear(),
                None => {
                    faults.device.clear();
                    faults.children().values().for_each(FaultControl::clear);
                }
            }
            answer(faults)
        }
        Some("list") if args.is_empty() && child.is_none() => answer(faults),
        _ => Err("`fault` takes add [child=PATH] KEY=VALUE ..., clear [child=PATH] or list".into()),
    }
}

/// Builds a device from an argument and overrides and hands it to the emulator; the old model
/// finishes the requests it holds.
fn switch_device(
    emulator: &Emulator,
    base: &str,
    overrides: &[String],
    faults: &FaultControls,
    seed: u64,
) -> Result<String, String> {
    if base.is_empty() {
        return Err("`device` needs a preset name or a device file".into());
    }
    let loaded = storsim_config::load_device_with(base, overrides).map_err(|e| e.to_string())?;
    crate::simulate::check_memory(&loaded.name, &loaded.spec).map_err(|e| e.message)?;
    let mut spec = loaded.spec;
    let children = with_fault_control(&mut spec, faults, seed);
    let device = spec.build().map_err(|e| format!("{}: {e}", loaded.name))?;
    emulator
        .replace_device(device, &loaded.name)
        .map_err(|e| e.to_string())?;
    // Only now do the children's handles reach the device in use: a switch that fails
    // leaves the old device, and its children's handles, in place.
    *faults.children() = children;
    Ok(loaded.name)
}
