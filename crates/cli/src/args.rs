//! The command line, defined once: clap generates the help text from these definitions.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

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

#[derive(Subcommand)]
pub enum Command {
    /// Replay a trace or a synthetic workload on a device model in virtual time.
    Simulate(SimulateArgs),
    /// Characterise a trace: request count, read %, sizes, sequentiality, arrivals, address range.
    Inspect(InspectArgs),
    /// List the built-in devices.
    Presets,
}

/// Options that say how to read a trace file.
#[derive(Args, Clone)]
pub struct TraceArgs {
    /// Trace format, instead of detecting it from the content (msr, spc, disksim-ascii, mqsim,
    /// blkparse, fio-iolog, fiu, validate, hp-srt, vscsi).
    #[arg(long)]
    pub format: Option<String>,
    /// Skip malformed records (counting them) instead of stopping at the first one.
    #[arg(long)]
    pub skip_bad: bool,
    /// Multi-device traces: `concat` lays the devices out one after another in one address
    /// space, `overlay` puts them all at the same addresses, a number keeps only that device.
    #[arg(long, default_value = "concat", value_name = "concat|overlay|N")]
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

#[derive(Args)]
pub struct SimulateArgs {
    /// A preset name (see `storsim presets`) or a device TOML file.
    #[arg(long)]
    pub device: String,
    /// A trace file, or `synthetic:KEY=VALUE,...`, or `vdbench:PROFILE`.
    #[arg(long)]
    pub workload: String,
    #[command(flatten)]
    pub trace: TraceArgs,
    /// Seed for everything random in the run (synthetic workloads, models). Printed with the results.
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
    /// Stop after this many requests.
    #[arg(long)]
    pub max_requests: Option<u64>,
    /// Write the results as JSON to this file (`-` for standard output).
    #[arg(long, value_name = "OUT")]
    pub json: Option<PathBuf>,
    /// Write one CSV line per request (arrival, service start, finish, ...) to this file.
    #[arg(long, value_name = "OUT")]
    pub requests_csv: Option<PathBuf>,
    /// Print nothing but errors on the terminal.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Args)]
pub struct InspectArgs {
    /// The trace file.
    pub trace: PathBuf,
    #[command(flatten)]
    pub options: TraceArgs,
    /// Write the characterisation as JSON to this file (`-` for standard output).
    #[arg(long, value_name = "OUT")]
    pub json: Option<PathBuf>,
}
