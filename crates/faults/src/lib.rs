//! A faults layer over any device model: a [`Device`](storsim_core::Device) wrapper that fails,
//! delays or loses the requests a [`FaultPlan`] picks, deterministically from the run's seed
//! (docs/faults.md).
//!
//! The plan is plain data: rules, each naming a kind of fault and where and when it strikes
//! (a rate per million requests, a range of sectors, from the Nth request or from an instant,
//! for a duration or for good). The device file's `[faults]` section (read by `storsim-config`)
//! and the emulator's control socket (`fault add`, through a [`FaultControl`]) both produce
//! rules. The layer sits between the host (or host interface) and the model:
//!
//! ```text
//! host ─> host interface ─> FaultsDevice ─> model
//! ```
//!
//! Read, write and flush errors go through the model, so they take its time, and come back
//! with an error [`Status`]; a read-only or failed device and a full one
//! answer at once without the model; a request that hangs never reaches the model and the host
//! sees a timeout after the plan's `host_timeout_ns`; a latency spike holds a completion back.

mod device;

pub use device::{FaultControl, FaultsDevice, COUNTERS};

use storsim_core::{Op, Status};

/// The kinds' names in [`FaultKind::ALL`]'s order (the enum's): what device files write and
/// the keys of the `faults_injected_{}` counter family.
pub const FAULT_KINDS: &[&str] = &[
    "read_error",
    "write_error",
    "flush_error",
    "no_space",
    "hang",
    "latency_spike",
    "read_only",
    "fail",
];

/// What a rule does to the requests it strikes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FaultKind {
    /// A read fails with an unrecoverable media error (EIO) after the model's time.
    ReadError,
    /// A write fails (EIO) after the model's time.
    WriteError,
    /// A flush fails (EIO) after the model's time: the writes it covers may not be durable.
    FlushError,
    /// A write fails at once with no space left (ENOSPC).
    NoSpace,
    /// The request never completes: the host gives up after the plan's timeout (ETIMEDOUT).
    Hang,
    /// The request completes late by a delay drawn from the rule's distribution.
    LatencySpike,
    /// Writes, trims and flushes fail at once: the device has gone read-only (EROFS).
    ReadOnly,
    /// Every request fails at once: the device has failed (EIO).
    Fail,
}

impl FaultKind {
    /// Every kind, in the order counters list them.
    pub const ALL: [FaultKind; 8] = [
        FaultKind::ReadError,
        FaultKind::WriteError,
        FaultKind::FlushError,
        FaultKind::NoSpace,
        FaultKind::Hang,
        FaultKind::LatencySpike,
        FaultKind::ReadOnly,
        FaultKind::Fail,
    ];

    /// The kind's name as device files and counters write it.
    pub fn name(self) -> &'static str {
        FAULT_KINDS[self as usize]
    }

    /// The kind named `name`.
    pub fn from_name(name: &str) -> Option<FaultKind> {
        FaultKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether the kind can strike a request of `op` at all.
    pub fn applies_to(self, op: Op) -> bool {
        match self {
            FaultKind::ReadError => op == Op::Read,
            FaultKind::WriteError | FaultKind::NoSpace => op == Op::Write,
            FaultKind::FlushError => op == Op::Flush,
            FaultKind::ReadOnly => op != Op::Read,
            FaultKind::Hang | FaultKind::LatencySpike | FaultKind::Fail => true,
        }
    }

    /// The status a struck request completes with (`Ok` for a latency spike).
    pub fn status(self) -> Status {
        match self {
            FaultKind::ReadError => Status::MediaError,
            FaultKind::WriteError | FaultKind::FlushError => Status::WriteError,
            FaultKind::NoSpace => Status::NoSpace,
            FaultKind::Hang => Status::Timeout,
            FaultKind::LatencySpike => Status::Ok,
            FaultKind::ReadOnly => Status::ReadOnly,
            FaultKind::Fail => Status::DeviceFailed,
        }
    }
}

/// How a latency spike's delay is drawn, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Delay {
    /// Always this long.
    Fixed { ns: u64 },
    /// Uniform between the two bounds, inclusive.
    Uniform { min_ns: u64, max_ns: u64 },
    /// Exponential with this mean (a heavy-ish tail of occasional very long stalls).
    Exponential { mean_ns: u64 },
}

/// One fault and where and when it strikes. A rule is *active* from the first request that is
/// both at or past request number `from_request` (counting from 1, every request the layer is
/// given) and at or past instant `from_ns`, for `duration_ns` from that request's arrival, or
/// for good. While active, each request it applies to (its kind's operations, `op` if set, and
/// the sector range if set) is struck with probability `rate_per_million` / 1,000,000.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultRule {
    pub kind: FaultKind,
    /// Only requests of this operation; `None` for every operation the kind applies to.
    pub op: Option<Op>,
    /// Requests struck per million that it applies to; 1,000,000 strikes every one.
    pub rate_per_million: u32,
    /// Only requests overlapping these 512-byte sectors, `[start, end)`.
    pub sectors: Option<(u64, u64)>,
    /// The first request (counting from 1) the rule may strike.
    pub from_request: u64,
    /// The first instant (from the start of the run) the rule may strike at.
    pub from_ns: u64,
    /// How long the rule stays active once it starts; `None` for good.
    pub duration_ns: Option<u64>,
    /// A latency spike's delay (only for [`FaultKind::LatencySpike`]).
    pub delay: Option<Delay>,
}

impl FaultRule {
    /// A rule of `kind` that strikes every request it applies to, from the first, for good.
    pub fn always(kind: FaultKind) -> FaultRule {
        FaultRule {
            kind,
            op: None,
            rate_per_million: 1_000_000,
            sectors: None,
            from_request: 1,
            from_ns: 0,
            duration_ns: None,
            delay: None,
        }
    }
}

/// How long a host waits for a request before giving up, unless the plan says otherwise:
/// Linux's default for SCSI and NVMe commands (30 s).
pub const DEFAULT_HOST_TIMEOUT_NS: u64 = 30_000_000_000;

/// Everything the faults layer does: its rules, in order, the host's timeout and the seed of
/// its draws.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultPlan {
    pub rules: Vec<FaultRule>,
    /// How long after submitting a request that hangs the host sees it time out.
    pub host_timeout_ns: u64,
    /// The seed of the layer's draws; the run's seed (drivers set it before building).
    pub seed: u64,
    /// Where the emulator's control socket sends rules at run time; `None` outside it.
    pub control: Option<FaultControl>,
}

impl Default for FaultPlan {
    fn default() -> Self {
        FaultPlan {
            rules: Vec::new(),
            host_timeout_ns: DEFAULT_HOST_TIMEOUT_NS,
            seed: 1,
            control: None,
        }
    }
}

/// A fault rule that does not make sense: which key and why. `storsim-config` names the file
/// and line around it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultError {
    pub key: &'static str,
    pub message: String,
}

impl std::fmt::Display for FaultError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.key, self.message)
    }
}

impl std::error::Error for FaultError {}

impl FaultRule {
    /// Checks the rule's values together: the rate, the range, the operation against the
    /// kind, and the delay for a spike only.
    pub fn check(&self) -> Result<(), FaultError> {
        let bad = |key, message: String| Err(FaultError { key, message });
        if self.rate_per_million == 0 || self.rate_per_million > 1_000_000 {
            return bad(
                "rate_per_million",
                format!(
                    "must be from 1 to 1000000 (every request), got {}",
                    self.rate_per_million
                ),
            );
        }
        if let Some((start, end)) = self.sectors {
            if end <= start {
                return bad(
                    "lba_end",
                    format!("must be past lba_start ({start}), got {end}"),
                );
            }
        }
        if let Some(op) = self.op {
            if !self.kind.applies_to(op) {
                return bad(
                    "op",
                    format!("a {} fault never strikes a {op}", self.kind.name()),
                );
            }
        }
        if self.from_request == 0 {
            return bad(
                "from_request",
                "requests count from 1; leave the key out to start with the first".into(),
            );
        }
        if self.duration_ns == Some(0) {
            return bad(
                "duration_ms",
                "must be more than 0; leave the key out for good".into(),
            );
        }
        match (self.kind, self.delay) {
            (FaultKind::LatencySpike, None) => bad(
                "delay",
                "a latency_spike needs a delay (delay = \"fixed\" with latency_us, ...)".into(),
            ),
            (FaultKind::LatencySpike, Some(Delay::Uniform { min_ns, max_ns }))
                if max_ns < min_ns =>
            {
                bad(
                    "latency_max_us",
                    "must be at least latency_min_us".to_string(),
                )
            }
            (FaultKind::LatencySpike, Some(_)) => Ok(()),
            (kind, Some(_)) => bad(
                "delay",
                format!("only a latency_spike takes a delay, not a {}", kind.name()),
            ),
            (_, None) => Ok(()),
        }
    }
}
