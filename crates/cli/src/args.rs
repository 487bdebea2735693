//! The command line, defined once: clap generates the help text from these definitions.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use storsim_workload::trace::TraceFormat;

#[derive(Parser)]
#[command(
    name = "storsim",
    version,
    about = "Storage-device simulator: SSDs, disks and black-box devices in virtual time"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The one table of subcommands: each entry is a variant (its doc comment is its help), its
/// arguments, and the function that runs it. clap's derive needs an enum to generate the
/// parser and the help from, so the table is that enum, written through `subcommands!`,
/// which also generates the `run` that dispatches on it: adding a subcommand is one entry
/// here plus its module.
macro_rules! subcommands {
    (
        $(#[$outer:meta])*
        pub enum $name:ident {
            $( $(#[$meta:meta])* $variant:ident($args:ty) => $run:path, )*
        }
    ) => {
        $(#[$outer])*
        pub enum $name {
            $( $(#[$meta])* $variant($args), )*
        }

        impl $name {
            /// Runs the subcommand these arguments name.
            pub fn run(self) -> Result<(), crate::CliError> {
                match self {
                    $( $name::$variant(args) => $run(args), )*
                }
            }
        }
    };
}

subcommands! {
    #[derive(Subcommand)]
    pub enum Command {
        /// Replay a trace or a synthetic workload on a device model in virtual time.
        Simulate(SimulateArgs) => crate::simulate::run,
        /// Characterise a trace: request count, read %, sizes, sequentiality, arrivals, address range.
        Inspect(InspectArgs) => crate::inspect::run,
        /// Serve a device model as a real disk (NBD server and/or FUSE file) whose I/Os complete
        /// when the model says, with the bytes kept in a block store.
        Emulate(EmulateArgs) => crate::emulate::run,
        /// Turn another simulator's device description into a storsim device file.
        #[command(subcommand)]
        Import(ImportCommand) => ImportCommand::run,
        /// Compare a device model with measurements of a real device.
        #[command(subcommand)]
        Validate(ValidateCommand) => ValidateCommand::run,
        /// Measure a real device or file (or a device model) with microbenchmarks, fit the IBM
        /// linear, table and step models, and report how well they predict it.
        Calibrate(CalibrateArgs) => crate::calibrate::run,
        /// Run an unmodified program against a device model in virtual time: its file I/O under
        /// --dir (or on --image) takes the model's time, its clocks and sleeps are virtual, and
        /// time it only waits is skipped.
        Cosim(CosimArgs) => crate::cosim::run,
        /// Draw run documents (the JSON of simulate, cosim, emulate, calibrate and validate) as one
        /// self-contained HTML page of plots; several runs are compared.
        Report(ReportArgs) => crate::report_html::run,
        /// Run a sweep: every point of a spec's grid of devices, device-file overrides, workloads
        /// and seeds, in parallel, into one results table and a report (docs/sweep.md).
        Sweep(SweepArgs) => crate::sweep::run,
        /// Rebuild a disk from `emulate --write-log` as a crash at a chosen point would have left
        /// it: every write not yet made durable by a flush or FUA lost, or torn with --torn
        /// (docs/faults.md, "Power loss").
        ReplayLog(ReplayLogArgs) => crate::power_loss::replay_log,
        /// List the built-in devices.
        Presets(PresetsArgs) => crate::presets::run,
        /// List what a device's counters are: each counter or family of counters (`die_{}_...`)
        /// with its unit, scope and meaning, as its model declares them.
        Counters(CountersArgs) => crate::counters::run,
    }
}

/// `storsim presets` takes no arguments.
#[derive(Args)]
pub struct PresetsArgs {}

#[derive(Args)]
pub struct CountersArgs {
    /// A preset name (see `storsim presets`) or a device TOML file; the list of models comes
    /// from the model table.
    #[arg(long, help = device_help())]
    pub device: String,
    /// Set a device-file key on top of the device, as `simulate --set` does; repeatable.
    #[arg(long, value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Write the list as JSON to this file (`-` for standard output).
    #[arg(long, value_name = "OUT")]
    pub json: Option<PathBuf>,
}

subcommands! {
    #[derive(Subcommand)]
    pub enum ImportCommand {
        /// Read a DiskSim 4.0 parameter file (`.parv` with the `.diskspecs`, `.model` and `.seek`
        /// files it sources) and write the disk it instantiates as a storsim `hdd` device file.
        Disksim(ImportDisksimArgs) => crate::import::disksim,
        /// Read MQSim's SSD configuration (`ssdconfig.xml`) and, if given, its workload
        /// definition (`workload.xml`), and write a storsim device file and one flow file per
        /// scenario; every MQSim setting storsim has no equivalent for is named in one note.
        Mqsim(ImportMqsimArgs) => crate::import::mqsim,
    }
}

#[derive(Args)]
pub struct ImportMqsimArgs {
    /// MQSim's SSD configuration (`-i` of MQSim).
    pub ssdconfig: PathBuf,
    /// MQSim's workload definition (`-w` of MQSim).
    pub workload: Option<PathBuf>,
    /// The folder to write `device.toml` and `scenario-N.toml` into (made if missing).
    #[arg(long, short)]
    pub out: PathBuf,
}

#[derive(Args)]
pub struct ImportDisksimArgs {
    /// The DiskSim `.parv` file.
    pub parv: PathBuf,
    /// Where to write the device file (`-` for standard output).
    #[arg(long, short)]
    pub out: PathBuf,
    /// Override a DiskSim parameter before importing, as DiskSim's command line does
    /// (`disk0 "Enable caching in buffer" 0`): `--set 'disk0:Enable caching in buffer=0'`,
    /// the instance, the parameter as the files write it, and the value; repeatable.
    #[arg(long = "set", value_name = "COMPONENT:PARAMETER=VALUE")]
    pub set: Vec<String>,
}

subcommands! {
    #[derive(Subcommand)]
    pub enum ValidateCommand {
        /// Replay a DiskSim validate trace closed loop (one request outstanding, each next request
        /// issued its think time after the previous completes) and print DiskSim's demerit: the RMS
        /// horizontal distance between the simulated and the measured access-time CDFs.
        Disksim(ValidateDisksimArgs) => crate::validate::disksim,
        /// Replay a trace that carries measured response times (MSR Cambridge's ResponseTime,
        /// SYSTOR '17's Response, blkparse D->C pairs, a storsim recording, a DiskSim validate
        /// trace) on a device, with the
        /// trace's own arrivals or closed loop, and compare the simulated response times with the
        /// measured ones: DiskSim's demerit, mean and percentile errors per operation, both CDFs.
        Trace(ValidateTraceArgs) => crate::validate::trace,
    }
}

#[derive(Args)]
pub struct ValidateDisksimArgs {
    /// A preset name, a device TOML file (for example one written by `storsim import disksim`)
    /// or a DiskSim `.parv` file, imported on the way.
    #[arg(long)]
    pub device: String,
    /// With a `.parv` device: override a DiskSim parameter, as DiskSim's command line does
    /// (`--set 'disk0:Enable caching in buffer=0'`); repeatable.
    #[arg(long = "set", value_name = "COMPONENT:PARAMETER=VALUE")]
    pub set: Vec<String>,
    /// A trace in DiskSim's validate format (`R|W Hit|Miss blkno bcount access_us think_us`).
    #[arg(long)]
    pub trace: PathBuf,
    /// Write the comparison as JSON to this file (`-` for standard output).
    #[arg(long, value_name = "OUT")]
    pub json: Option<PathBuf>,
    /// Write the simulated and measured access time of every request, in trace order, as CSV.
    #[arg(long, value_name = "OUT")]
    pub requests_csv: Option<PathBuf>,
}

#[derive(Args)]
pub struct ValidateTraceArgs {
    /// A preset name or a device TOML file.
    #[arg(long, help = device_help())]
    pub device: String,
    /// Set a device-file key on top of the device, as `simulate --set` does
    /// (`--set linear.rw.a_us=650`); repeatable.
    #[arg(long, value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// A trace with measured response times (the list comes from the format table).
    #[arg(long, help = measured_trace_help())]
    pub trace: PathBuf,
    #[command(flatten)]
    pub trace_options: TraceArgs,
    /// How to replay: the trace's own arrivals (`open`, the default for timed traces) or a
    /// fixed number of requests outstanding (`closed`, with --iodepth), as DiskSim's validate
    /// mode does with one.
    #[arg(long, value_enum)]
    pub replay: Option<ReplayArg>,
    /// Outstanding requests for `--replay closed`.
    #[arg(long)]
    pub iodepth: Option<u32>,
    /// Fold requests past the end of the device back into it instead of stopping.
    #[arg(long)]
    pub wrap: bool,
    /// Write the comparison as JSON to this file (`-` for standard output).
    #[arg(long, value_name = "OUT")]
    pub json: Option<PathBuf>,
    /// Write every compared request (its trace position, operation, simulated and measured
    /// response time) as CSV, in trace order.
    #[arg(long, value_name = "OUT")]
    pub requests_csv: Option<PathBuf>,
    /// Write the comparison as a self-contained HTML page with the two CDFs overlaid.
    #[arg(long, value_name = "OUT.html")]
    pub report: Option<PathBuf>,
}

/// Options that say how to read a trace file.
#[derive(Args, Clone)]
pub struct TraceArgs {
    /// Trace format, instead of detecting it from the content (the list comes from the
    /// format table).
    #[arg(long, value_name = "FORMAT", help = format_help())]
    pub format: Option<String>,
    /// Skip malformed records (counting them) instead of stopping at the first one.
    #[arg(long)]
    pub skip_bad: bool,
    /// Multi-device traces: `concat` lays the devices out one after another in one address
    /// space, `overlay` puts them all at the same addresses, a number or a comma-separated
    /// list of them (`--volume 7,12`) keeps only those devices (volumes, disks, LUNs), laid out
    /// as `concat` does.
    #[arg(
        long,
        visible_alias = "volume",
        default_value = "concat",
        value_name = "concat|overlay|N[,N...]"
    )]
    pub trace_devices: String,
    /// blkparse traces: which events are requests (D = dispatched to the device, Q = queued).
    #[arg(long, default_value = "D", value_name = "D|Q")]
    pub blkparse_event: String,
    /// Parse a trace file on a second thread, overlapping the simulation (`on`), or on the
    /// simulation's own thread (`off`). The results are the same either way.
    #[arg(
        long,
        value_enum,
        default_value = "on",
        ignore_case = true,
        value_name = "on|off"
    )]
    pub parse_thread: Switch,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Switch {
    On,
    Off,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ReplayArg {
    /// Arrivals at the recorded (or generated) timestamps.
    Open,
    /// A fixed number of requests outstanding (--iodepth); the next is issued on a completion.
    Closed,
    /// Timestamps ignored; the device queue is kept full.
    Afap,
}

impl ReplayArg {
    /// The library's replay choice it stands for.
    pub fn choice(self) -> storsim_sim::ReplayChoice {
        match self {
            ReplayArg::Open => storsim_sim::ReplayChoice::Open,
            ReplayArg::Closed => storsim_sim::ReplayChoice::Closed,
            ReplayArg::Afap => storsim_sim::ReplayChoice::Afap,
        }
    }
}

/// The state every SSD of a device starts in, chosen on the command line over what its file
/// says (`[ssd.precondition]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PreconditionArg {
    /// Every block erased, nothing written: reads of it cost no flash time.
    Clean,
    /// The whole logical space written once, in order (`sequential-fill`).
    Fill,
    /// A fill, then random overwrites until write amplification settles (`steady-state`).
    Steady,
}

impl PreconditionArg {
    /// The device-file mode it stands for.
    pub fn mode(self) -> storsim_config::PreconditionMode {
        match self {
            PreconditionArg::Clean => storsim_config::PreconditionMode::Clean,
            PreconditionArg::Fill => storsim_config::PreconditionMode::SequentialFill,
            PreconditionArg::Steady => storsim_config::PreconditionMode::SteadyState,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub enum RefusedArg {
    /// End the run with an error naming the record.
    Stop,
    /// Count the request, report the first ones, and go on without it.
    Count,
}

#[derive(Args)]
pub struct SimulateArgs {
    /// A preset name (see `storsim presets`) or a device TOML file; the list of models comes
    /// from the model table.
    #[arg(long, help = device_help())]
    pub device: String,
    /// Set a device-file key on top of the device, as a device file starting from it would
    /// (`--set ssd.ftl=dftl --set ssd.page.over_provisioning_fraction=0.15`); repeatable.
    #[arg(long, value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Start every SSD of the device clean, filled once in order, or in steady state, whatever
    /// its file says (`[ssd.precondition]`, with each mode's default parameter). Without it,
    /// the file decides.
    #[arg(long, value_enum, value_name = "clean|fill|steady")]
    pub precondition: Option<PreconditionArg>,
    /// A trace file, or `synthetic:KEY=VALUE,...`, or `vdbench:PROFILE`, or a flow file
    /// (`[[flow]]` tables: several flows sharing the device, docs/workloads/flows.md), or an
    /// fio job file (`*.fio`, or a file starting with a `[JOB]` section: each job a flow,
    /// docs/workloads/fio-jobs.md).
    #[arg(long, required_unless_present = "flow", conflicts_with = "flow")]
    pub workload: Option<String>,
    /// One flow of a workload of several (repeat for each): a trace or a generator spec, then
    /// the flow's keys, e.g. `synthetic:rw=randread,bs=4k,iodepth=8,start=1s,class=high`
    /// (docs/workloads/flows.md).
    #[arg(long, value_name = "SPEC,KEY=VALUE...")]
    pub flow: Vec<String>,
    /// Also run each flow alone on the same device with the same seed, and report each flow's
    /// slowdown (shared over alone mean response time) and the fairness (smallest slowdown
    /// over largest).
    #[arg(long)]
    pub fairness: bool,
    /// Threads for `--fairness`'s alone runs (default: one per processor); the results do
    /// not depend on it.
    #[arg(long)]
    pub jobs: Option<usize>,
    #[command(flatten)]
    pub trace: TraceArgs,
    /// Seed of the run's random draws: synthetic workloads that name no seed of their own and a
    /// faults layer's draws. Not an SSD's preconditioning, which keeps the device file's own
    /// `[ssd] seed` (1 by default), so a device starts in the same state whatever the run's
    /// seed. Printed with the results.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// How to replay; the default is the workload's own (open loop for timed traces, closed loop
    /// for synthetic workloads with iodepth and for DiskSim validate traces).
    #[arg(long, value_enum)]
    pub replay: Option<ReplayArg>,
    /// Outstanding requests for `--replay closed`.
    #[arg(long)]
    pub iodepth: Option<u32>,
    /// Multiply inter-arrival times by this factor in open-loop replay (0.5 = twice as fast).
    #[arg(long, default_value_t = 1.0)]
    pub time_scale: f64,
    /// Fold requests past the end of the device back into it instead of stopping.
    #[arg(long)]
    pub wrap: bool,
    /// What to do with a request the device refuses as invalid, such as a write of a page that
    /// is not erased on raw flash (`ftl = "raw"`).
    #[arg(long, value_enum, default_value = "stop")]
    pub on_refused: RefusedArg,
    /// Resubmit a request that failed (an error from the device's `[faults]`) up to this many
    /// times before its failure stands, as a host's block layer retries (docs/faults.md).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub retries: u32,
    /// How long after a failure `--retries` resubmits the request, such as `10ms`.
    #[arg(long, default_value = "0", value_name = "DURATION", value_parser = parse_delay)]
    pub retry_delay: u64,
    /// Count failed requests in the latency, queueing and service statistics; by default they
    /// are left out (and counted under `errors`), so that a timeout does not pass for service.
    #[arg(long)]
    pub latency_includes_failed: bool,
    /// Stop after this many requests.
    #[arg(long)]
    pub max_requests: Option<u64>,
    /// The windows of the time series in the JSON (`series`): `auto` (a few hundred over the
    /// run), a width such as `10ms` (doubled if the run would need more than 8,192 windows), or
    /// `off`.
    #[arg(long, default_value = "auto", value_name = "auto|DURATION|off", value_parser = parse_window)]
    pub window: Window,
    /// Write the results as JSON to this file (`-` for standard output).
    #[arg(long, value_name = "OUT")]
    pub json: Option<PathBuf>,
    /// Also write the results in the shape of MQSim's result file (`workload_scenario_N.xml`:
    /// per-flow counts, IOPS, bandwidth and response times; the SSD's FTL statistics), for
    /// scripts written for MQSim (docs/formats/mqsim-xml.md).
    #[arg(long, value_name = "OUT.xml")]
    pub mqsim_xml: Option<PathBuf>,
    /// Also write the results in the shape of fio's `--output-format=json` (`jobs[]` with
    /// `read`, `write` and `sync`: `iops`, `bw`, `clat_ns` and its percentiles; one job per
    /// flow), for scripts written for fio (docs/workloads/fio-jobs.md).
    #[arg(long, value_name = "OUT.json")]
    pub fio_json: Option<PathBuf>,
    /// Write one CSV line per request (arrival, service start, finish, ...) to this file; a
    /// workload of several flows adds a last column, `flow`, the request's flow's index.
    #[arg(long, value_name = "OUT")]
    pub requests_csv: Option<PathBuf>,
    /// Write the results as a self-contained HTML page of plots (as `storsim report` draws).
    #[arg(long, value_name = "OUT.html")]
    pub report: Option<PathBuf>,
    /// Also write each plot as SVG and PNG into this directory.
    #[arg(long, value_name = "DIR")]
    pub plots: Option<PathBuf>,
    /// Print nothing but errors on the terminal.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Args)]
pub struct ReportArgs {
    /// Run documents: `simulate --json`, `cosim --report`, `emulate --json`, `calibrate
    /// --report` or `validate --json`. The first is the reference the others are compared with.
    #[arg(required = true, value_name = "RUN.json")]
    pub runs: Vec<PathBuf>,
    /// Where to write the page (`-` for standard output).
    #[arg(long, short, value_name = "OUT.html")]
    pub out: PathBuf,
    /// Also write each plot as SVG and PNG into this directory.
    #[arg(long, value_name = "DIR")]
    pub plots: Option<PathBuf>,
}

#[derive(Args)]
pub struct SweepArgs {
    /// The sweep spec (TOML; docs/sweep.md).
    #[arg(value_name = "SPEC.toml")]
    pub spec: PathBuf,
    /// The output folder: each point's JSON in `points/`, `results.csv`, `report.html`. A
    /// point whose JSON is already there is not run again.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Points run at once (default: one per processor).
    #[arg(long, short)]
    pub jobs: Option<usize>,
    /// Lay the spec's `[size.NAME]` table over it first (the experiments' `quick` and `full`).
    #[arg(long, value_name = "NAME")]
    pub size: Option<String>,
    /// Stop at the first point that fails (by default the others run on).
    #[arg(long)]
    pub fail_fast: bool,
    /// Also write the results table as `results.parquet`.
    #[arg(long)]
    pub parquet: bool,
    /// Also write each plot of `report.html` as SVG and PNG into this directory.
    #[arg(long, value_name = "DIR")]
    pub plots: Option<PathBuf>,
    /// Print nothing but errors on the terminal.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Args)]
pub struct InspectArgs {
    /// The trace file, or a `synthetic:` spec that gives `span` (the requests it generates).
    pub trace: PathBuf,
    #[command(flatten)]
    pub options: TraceArgs,
    /// Write the characterisation as JSON to this file (`-` for standard output).
    #[arg(long, value_name = "OUT")]
    pub json: Option<PathBuf>,
}

#[derive(Args)]
#[command(group(clap::ArgGroup::new("frontend").required(true).multiple(true).args(["nbd", "nbd_unix", "fuse"])))]
pub struct EmulateArgs {
    /// A preset name (see `storsim presets`) or a device TOML file; the list of models comes
    /// from the model table.
    #[arg(long, help = device_help())]
    pub device: String,
    /// The seed of the faults layer's draws (a device file's `[faults]`, docs/faults.md): the
    /// same seed and the same requests fail the same way.
    #[arg(long, default_value_t = 1, value_name = "SEED")]
    pub seed: u64,
    /// The emulated disk's size (512, 4k, 64m, 8g, ...); at most the device's capacity, which
    /// is the default.
    #[arg(long)]
    pub size: Option<String>,
    /// The windows of the report's time series (`series`), in wall-clock time: `auto` (a few
    /// hundred over the run) or a width such as `100ms`.
    #[arg(long, default_value = "auto", value_name = "auto|DURATION", value_parser = parse_window_width)]
    pub window: storsim_stats::WindowWidth,
    /// Serve NBD over TCP on ADDR:PORT (port 0 picks a free one; the address is printed).
    #[arg(long, value_name = "ADDR:PORT")]
    pub nbd: Option<String>,
    /// Serve NBD on a Unix socket at this path.
    #[arg(long, value_name = "PATH")]
    pub nbd_unix: Option<PathBuf>,
    /// Mount a FUSE file system at this directory holding one file, `disk`, the size of the
    /// export (use `losetup --direct-io=on` on it for a block device).
    #[arg(long, value_name = "DIR")]
    pub fuse: Option<PathBuf>,
    /// How the FUSE mount talks to the kernel: `io-uring` (FUSE over io_uring, Linux 6.14+
    /// with /sys/module/fuse/parameters/enable_uring set to Y: replies due together leave with
    /// one system call), `dev-fuse` (read and write on /dev/fuse), or `auto` (io-uring when the
    /// kernel offers it).
    #[arg(long, value_enum, default_value = "auto", requires = "fuse")]
    pub fuse_transport: FuseTransportArg,
    /// Where the bytes live: `memory` (sparse), `file:PATH` (sparse backing file with an
    /// allocation map, kept across runs) or `none` (timing only, reads return zeros).
    #[arg(long, default_value = "memory")]
    pub backing: String,
    /// Write the request stream the disk received (arrival, intended and actual completion) to
    /// this file, in the storsim-record trace format that `storsim simulate` replays.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Take commands on this Unix socket (`help` lists them): report, change parameters, switch
    /// devices at run time.
    #[arg(long, value_name = "PATH")]
    pub control: Option<PathBuf>,
    /// The NBD export's name.
    #[arg(long, default_value = "storsim")]
    pub export_name: String,
    /// Refuse writes.
    #[arg(long)]
    pub read_only: bool,
    /// Let --nbd listen on an address other than loopback: anyone who can reach it can read and
    /// write the disk.
    #[arg(long)]
    pub allow_remote: bool,
    /// Replies more than this many microseconds after their instant count as late.
    #[arg(long, default_value_t = 20.0)]
    pub late_threshold_us: f64,
    /// Sleep until this many microseconds before a completion, then spin.
    #[arg(long, default_value_t = 100.0)]
    pub spin_margin_us: f64,
    /// Run the pacing thread on this CPU only, and storsim's other threads on the others. For
    /// the shortest lateness tail, boot with that CPU isolated (isolcpus=, nohz_full=).
    #[arg(long, value_name = "CPU")]
    pub pacing_cpu: Option<usize>,
    /// Write the final report as JSON to this file (`-` for standard output).
    #[arg(long, value_name = "OUT")]
    pub json: Option<PathBuf>,
    /// Model the disk's volatile write cache, so that a crash (`crash` on the control socket,
    /// --crash-after-writes, --crash-at) loses every write not made durable by a flush or FUA
    /// (docs/faults.md, "Power loss"). The other power-loss options imply it.
    #[arg(long)]
    pub power_loss: bool,
    /// The write cache's size (512, 4k, 64m, ...): when the writes not yet durable exceed it,
    /// the oldest become durable, as a disk's cache destages them.
    #[arg(long, default_value = "32m", value_name = "SIZE")]
    pub write_cache: String,
    /// Crash right after the host's N-th write (writes, write-zeroes and trims, counted from 1).
    #[arg(long, value_name = "N")]
    pub crash_after_writes: Option<u64>,
    /// Crash this long after the start (`500ms`, `10s`, ...).
    #[arg(long, value_name = "DURATION", value_parser = parse_crash_at)]
    pub crash_at: Option<u64>,
    /// At a crash, keep a seeded subset of the writes not durable, whole 512-byte sectors or
    /// 4 KiB pages of them, rather than losing them all.
    #[arg(long, value_enum, value_name = "sector|page")]
    pub torn: Option<TornArg>,
    /// The seed of --torn: the same seed and the same writes tear the same way.
    #[arg(long, default_value_t = 1, value_name = "SEED")]
    pub crash_seed: u64,
    /// After a crash, `serve` the post-crash image (a disk powered on again) or `stop`: fail
    /// every request until the emulator is stopped, so a host still running writes nothing over
    /// the post-crash image.
    #[arg(long, value_enum, default_value = "serve")]
    pub after_crash: AfterCrashArg,
    /// Append one JSON line per crash to this file: every write not durable, and what of it was
    /// lost.
    #[arg(long, value_name = "FILE")]
    pub crash_log: Option<PathBuf>,
    /// Record every write (with its data), flush and crash to this file, for
    /// `storsim replay-log`.
    #[arg(long, value_name = "FILE")]
    pub write_log: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TornArg {
    Sector,
    Page,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum AfterCrashArg {
    Serve,
    Stop,
}

#[derive(Args)]
pub struct ReplayLogArgs {
    /// The log `emulate --write-log` wrote.
    pub log: PathBuf,
    /// Crash right after the log's N-th write (as `emulate --crash-after-writes N` would).
    #[arg(long, value_name = "N", conflicts_with = "to_flush")]
    pub to_write: Option<u64>,
    /// Crash right after the log's K-th flush (from 1): nothing is lost there.
    #[arg(long, value_name = "K")]
    pub to_flush: Option<u64>,
    /// Keep a seeded subset of the writes not durable at the crash, by sector or page.
    #[arg(long, value_enum, value_name = "sector|page")]
    pub torn: Option<TornArg>,
    /// The seed of --torn.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Write the rebuilt disk here as a raw image (sparse).
    #[arg(long, value_name = "IMAGE", required_unless_present = "list")]
    pub out: Option<PathBuf>,
    /// Print the log's write count and the writes after which flushes came, and stop.
    #[arg(long)]
    pub list: bool,
    /// Write what the crash lost as JSON to this file (`-` for standard output).
    #[arg(long, value_name = "OUT")]
    pub json: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FuseTransportArg {
    Auto,
    DevFuse,
    IoUring,
}

/// The model `storsim calibrate` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CalibratedModel {
    /// IBM's A + n·B per access pattern.
    Linear,
    /// Measured times by size and pattern, interpolated.
    Table,
    /// The Wisconsin step model (needs --step-run).
    Step,
}

impl From<CalibratedModel> for storsim_calibrate::FittedModel {
    fn from(m: CalibratedModel) -> Self {
        match m {
            CalibratedModel::Linear => storsim_calibrate::FittedModel::Linear,
            CalibratedModel::Table => storsim_calibrate::FittedModel::Table,
            CalibratedModel::Step => storsim_calibrate::FittedModel::Step,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CalibrateStatistic {
    Median,
    Min,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CalibrateHoldout {
    Alternate,
    None,
}

#[derive(Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["target", "simulate"])))]
pub struct CalibrateArgs {
    /// The block device or regular file to measure (O_DIRECT, queue depth 1).
    #[arg(long, value_name = "PATH")]
    pub target: Option<PathBuf>,
    /// Measure a device model (preset or TOML file) in virtual time instead: deterministic, for
    /// fitting a black-box model to a detailed one.
    #[arg(long, value_name = "DEVICE")]
    pub simulate: Option<String>,
    /// With --simulate: the state the model's SSDs start in before measuring (default fill: a
    /// clean SSD holds no data, and its reads cost no flash time). `clean` is refused for
    /// reads for that reason.
    #[arg(
        long,
        value_enum,
        value_name = "clean|fill|steady",
        requires = "simulate"
    )]
    pub precondition: Option<PreconditionArg>,
    /// Where to write the fitted device description.
    #[arg(long, value_name = "MODEL.toml")]
    pub out: PathBuf,
    /// Which model to write.
    #[arg(long, value_enum, default_value = "linear")]
    pub model: CalibratedModel,
    /// Write the full report as JSON to this file (`-` for standard output).
    #[arg(long, value_name = "REPORT.json")]
    pub report: Option<PathBuf>,
    /// Write measured vs predicted per pattern and size as CSV (plot-ready).
    #[arg(long, value_name = "OUT.csv")]
    pub csv: Option<PathBuf>,
    /// Allow writes to the target (they destroy its contents). Refused anyway when the target
    /// is mounted or otherwise in use.
    #[arg(long)]
    pub allow_writes: bool,
    /// Access patterns to measure (sr, rr, sw, rw); writes to a --target need --allow-writes.
    #[arg(long, value_delimiter = ',', default_value = "sr,rr,sw,rw")]
    pub patterns: Vec<String>,
    /// Zones spread over the target (odd).
    #[arg(long, default_value_t = 5)]
    pub zones: u32,
    /// Request sizes (512, 4k, 1m, ...), comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "512,1k,2k,4k,8k,16k,32k,64k,128k,256k,512k,1m"
    )]
    pub sizes: Vec<String>,
    /// Runs per pattern, size and zone.
    #[arg(long, default_value_t = 3)]
    pub repeats: u32,
    /// Requests per run (a sequential run's first request is not counted).
    #[arg(long, default_value_t = 8)]
    pub requests_per_run: u32,
    /// Requests issued and discarded before each pattern.
    #[arg(long, default_value_t = 16)]
    pub warmup: u32,
    /// The per-size statistic the fits use.
    #[arg(long, value_enum, default_value = "median")]
    pub statistic: CalibrateStatistic,
    /// Sizes kept out of the fit to validate it: every second size, or none.
    #[arg(long, value_enum, default_value = "alternate")]
    pub holdout: CalibrateHoldout,
    /// Queue depths for a throughput sweep of random requests (for example 1,4,16,32); the
    /// models' servers/channels come from it.
    #[arg(long, value_delimiter = ',')]
    pub iodepth: Vec<u32>,
    /// Request size of the sweep.
    #[arg(long, default_value = "4k")]
    pub sweep_size: String,
    /// Requests per sweep point.
    #[arg(long, default_value_t = 2000)]
    pub sweep_requests: u32,
    /// Length of one long sequential run per direction for step detection (default 1024 with
    /// --model step, else none).
    #[arg(long, value_name = "REQUESTS")]
    pub step_run: Option<u32>,
    /// Request size of the step runs.
    #[arg(long, default_value = "4k")]
    pub step_size: String,
    /// Measure this path first with the same plan, serving a device that takes no time (for
    /// example `storsim emulate` with a zero-latency linear device): its cost is the path's own
    /// floor, reported and taken off the fits.
    #[arg(long, value_name = "PATH")]
    pub baseline: Option<PathBuf>,
    /// The flash erase latency EL of the thesis' erase correction (published figures; 1500 is
    /// FlashSim's SLC block erase).
    #[arg(long, default_value_t = 1500.0)]
    pub erase_latency_us: f64,
    /// The queue depth written into the model.
    #[arg(long, default_value_t = 32)]
    pub queue_depth: u32,
    /// Seed of the random offsets (printed).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// No progress line.
    #[arg(long)]
    pub quiet: bool,
}

#[derive(Args)]
pub struct CosimArgs {
    /// A preset name (see `storsim presets`) or a device TOML file; the list of models comes
    /// from the model table.
    #[arg(long, help = device_help())]
    pub device: String,
    /// The seed of the faults layer's draws (a device file's `[faults]`, docs/faults.md): the
    /// same seed and the same requests fail the same way.
    #[arg(long, default_value_t = 1, value_name = "SEED")]
    pub seed: u64,
    /// The windows of the report's time series (`series`), in the model's virtual time:
    /// `auto` (a few hundred over the run) or a width such as `10ms`.
    #[arg(long, default_value = "auto", value_name = "auto|DURATION", value_parser = parse_window_width)]
    pub window: storsim_stats::WindowWidth,
    /// Files under this directory are on the simulated device.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// This file is the device's first bytes, one to one (a file-system image, say).
    #[arg(long, value_name = "FILE")]
    pub image: Option<PathBuf>,
    /// How many times faster than this machine the simulated CPU is; `inf` makes the program's
    /// own computation take no virtual time, so that runs repeat exactly.
    #[arg(long, default_value = "1")]
    pub cpu_speed: String,
    /// Granule of the layout of files on the device (docs/cosim.md).
    #[arg(long, default_value = "1m")]
    pub extent_size: String,
    /// Also run the real fsync and fdatasync (by default only the model's flush happens).
    #[arg(long)]
    pub real_sync: bool,
    /// Write the report as JSON to this file (`-` for standard output).
    #[arg(long, value_name = "OUT.json")]
    pub report: Option<PathBuf>,
    /// Write the device requests as a storsim-record trace that `storsim simulate` replays.
    #[arg(long, value_name = "TRACE")]
    pub record: Option<PathBuf>,
    /// No text report on standard error.
    #[arg(long)]
    pub quiet: bool,
    /// The program and its arguments (after `--`).
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "PROGRAM"
    )]
    pub program: Vec<std::ffi::OsString>,
}

/// `--format`'s help: every trace format's name, from the format table, so that a new format
/// appears without an edit here.
fn format_help() -> String {
    let names: Vec<&str> = TraceFormat::all().map(TraceFormat::name).collect();
    format!(
        "Trace format, instead of detecting it from the content ({})",
        names.join(", ")
    )
}

/// `validate trace --trace`'s help: the formats whose traces carry measured response times.
fn measured_trace_help() -> String {
    let names: Vec<&str> = TraceFormat::all()
        .filter(|f| f.measures_response_times())
        .map(TraceFormat::name)
        .collect();
    format!(
        "A trace with measured response times ({})",
        names.join(", ")
    )
}

/// `--device`'s help: the device models a file can name, from the model table, so that a new
/// model appears without an edit here.
fn device_help() -> String {
    let names: Vec<&str> = storsim_config::models().map(|m| m.name).collect();
    format!(
        "A preset name (see `storsim presets`), a device TOML file (model: {}), or MQSim's SSD \
         configuration (`ssdconfig.xml`, read as `storsim import mqsim` reads it)",
        names.join(", ")
    )
}

/// `--window`: the time series' windows, or none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window(pub Option<storsim_stats::WindowWidth>);

fn parse_window(text: &str) -> Result<Window, String> {
    match text {
        "off" => Ok(Window(None)),
        _ => parse_window_width(text)
            .map(|w| Window(Some(w)))
            .map_err(|e| format!("off, {e}")),
    }
}

/// `--crash-at`: a duration from the start, in nanoseconds.
fn parse_crash_at(text: &str) -> Result<u64, String> {
    storsim_workload::synthetic::parse_duration(text)
}

/// `--retry-delay`: a duration in nanoseconds (`0`, `500us`, `10ms`).
fn parse_delay(text: &str) -> Result<u64, String> {
    match text {
        "0" => Ok(0),
        _ => storsim_workload::synthetic::parse_duration(text).map_err(|e| e.to_string()),
    }
}

/// `--window` of `emulate` and `cosim`, whose reports always hold a series.
fn parse_window_width(text: &str) -> Result<storsim_stats::WindowWidth, String> {
    storsim_sim::parse_window_width(text)
}
