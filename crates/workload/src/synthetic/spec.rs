//! The parsed form of a synthetic workload spec, as plain data, and its canonical text form.

use super::vdbench::VdbenchProfile;
use crate::WorkloadError;
use std::fmt;

/// A synthetic workload, fully described by plain data.
///
/// `parse` produces it from text and `build` turns it into a [`crate::Workload`]. The three
/// `Option` fields are the only values that depend on the device or the caller: `None` means
/// "the default", which `build` resolves from the device capacity and the caller's seed.
#[derive(Clone, Debug, PartialEq)]
pub struct SyntheticSpec {
    /// Which operations are issued (fio's `rw` and `rwmixread`).
    pub ops: OpMix,
    /// How request offsets are chosen (fio's `rw`, `percentage_random`, `random_distribution`
    /// and `blockalign`).
    pub pattern: AccessPattern,
    /// Request sizes (fio's `bs` or `bssplit`).
    pub block_size: BlockSize,
    /// A flush after every this many writes (fio's `fsync` and `fdatasync`); `None`, none.
    pub fsync_writes: Option<u64>,
    /// Closed loop (`iodepth`, `thinktime`) or open loop (`iops`, `arrival`).
    pub load: Load,
    /// When the workload ends (`requests` or `duration`).
    pub limit: Limit,
    /// Length of the address range requests fall in; `None` means from `offset_bytes` to the
    /// end of the device.
    pub span_bytes: Option<u64>,
    /// First byte of the address range.
    pub offset_bytes: u64,
    /// Seed of the generator; `None` means the seed the caller passes to `build`.
    pub seed: Option<u64>,
    /// The vdbench profile this spec was expanded from, so that the canonical name can keep
    /// the profile's short form. It never changes what is generated.
    pub vdbench: Option<VdbenchProfile>,
}

/// Which operations a workload issues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpMix {
    Read,
    Write,
    /// Each request independently is a read with probability `read_percent` / 100.
    Mixed {
        read_percent: u8,
    },
    /// Every request is a trim (fio's `trim` and `randtrim`).
    Trim,
    /// Each trim is followed by a write of the same range (fio's `trimwrite` and
    /// `randtrimwrite`); `requests` and `bytes` count the pairs, as fio's `size` counts the
    /// trimmed bytes.
    TrimWrite,
}

/// How each request's offset is chosen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AccessPattern {
    /// Each request starts where the previous one ended; a request that would cross the end of
    /// the span starts over at the span's first byte.
    Sequential,
    /// Each request is, with probability `random_percent` / 100, placed at a random position
    /// drawn from `dist`; otherwise it continues where the previous request ended, as a
    /// sequential request would.
    Random {
        random_percent: u8,
        dist: AddressDist,
        /// Random positions are multiples of this many bytes from the span's start; `None`
        /// means the (smallest) block size.
        align_bytes: Option<u64>,
    },
}

/// Request sizes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlockSize {
    Fixed {
        bytes: u64,
    },
    /// Uniform over the multiples of `min_bytes` in `[min_bytes, max_bytes]`, as fio's bsrange
    /// does. `max_bytes` is a multiple of `min_bytes`.
    Range {
        min_bytes: u64,
        max_bytes: u64,
    },
    /// fio's `bssplit`: every request's size is drawn from `shares`, in their order.
    Split {
        shares: Vec<SizeShare>,
    },
    /// fio's `bssplit` with a read part and a write part: reads draw their sizes from `read`,
    /// writes from `write`. Only mixed workloads have both kinds of request.
    SplitPerOp {
        read: Vec<SizeShare>,
        write: Vec<SizeShare>,
    },
}

/// One size of a `bssplit` and how often it is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SizeShare {
    /// The request size.
    pub bytes: u64,
    /// The percentage of requests of this size; `None` means an equal part of what the
    /// entries with a percentage leave over (fio's `4k/50:8k/:16k/`: 25 % each for 8k and 16k).
    pub percent: Option<u8>,
}

impl BlockSize {
    /// The smallest size a request can have.
    pub fn min_bytes(&self) -> u64 {
        match self {
            BlockSize::Fixed { bytes } => *bytes,
            BlockSize::Range { min_bytes, .. } => *min_bytes,
            BlockSize::Split { shares } => smallest(shares),
            BlockSize::SplitPerOp { read, write } => smallest(read).min(smallest(write)),
        }
    }

    /// The largest size a request can have.
    pub fn max_bytes(&self) -> u64 {
        match self {
            BlockSize::Fixed { bytes } => *bytes,
            BlockSize::Range { max_bytes, .. } => *max_bytes,
            BlockSize::Split { shares } => largest(shares),
            BlockSize::SplitPerOp { read, write } => largest(read).max(largest(write)),
        }
    }
}

// An empty split has no sizes; `check` refuses it, and these answers keep the layout's
// arithmetic away from a division by zero until it does.
fn smallest(shares: &[SizeShare]) -> u64 {
    shares.iter().map(|s| s.bytes).min().unwrap_or(1)
}

fn largest(shares: &[SizeShare]) -> u64 {
    shares.iter().map(|s| s.bytes).max().unwrap_or(1)
}

/// Each share of a split as a fraction `numerator / denominator` of the requests, in the
/// split's order. The shares without a percentage divide what the others leave equally, so the
/// common denominator is 100 times their number (100 when every share has one); the
/// numerators sum to the denominator exactly, so no rounding drifts a size's frequency.
pub(crate) fn split_fractions(shares: &[SizeShare]) -> (Vec<u64>, u64) {
    let unstated = shares.iter().filter(|s| s.percent.is_none()).count() as u64;
    let stated: u64 = shares.iter().filter_map(|s| s.percent).map(u64::from).sum();
    let denominator = 100 * unstated.max(1);
    let numerators = shares
        .iter()
        .map(|s| match s.percent {
            Some(p) => u64::from(p) * unstated.max(1),
            None => 100u64.saturating_sub(stated),
        })
        .collect();
    (numerators, denominator)
}

/// Checks one part of a `bssplit`; the error is the "expected ..." part of the message.
pub(crate) fn check_split(shares: &[SizeShare]) -> Result<(), String> {
    if shares.is_empty() {
        return Err("at least one SIZE/PERCENT entry, e.g. 4k/60:64k/40".into());
    }
    for (i, share) in shares.iter().enumerate() {
        if share.bytes == 0 {
            return Err("sizes of at least 1 byte".into());
        }
        if share.percent.is_some_and(|p| p > 100) {
            return Err("percentages from 0 to 100".into());
        }
        if shares[..i].iter().any(|s| s.bytes == share.bytes) {
            return Err(format!(
                "each size once ({} is listed twice)",
                format_size(share.bytes)
            ));
        }
    }
    let stated: u64 = shares.iter().filter_map(|s| s.percent).map(u64::from).sum();
    let unstated = shares.iter().filter(|s| s.percent.is_none()).count();
    if unstated == 0 && stated != 100 {
        return Err(format!(
            "percentages that sum to 100 (these sum to {stated})"
        ));
    }
    if unstated > 0 && stated >= 100 {
        return Err(format!(
            "stated percentages that sum to less than 100, so that the sizes without one get a \
             part of the rest (these sum to {stated})"
        ));
    }
    Ok(())
}

/// Where random positions fall inside the span.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AddressDist {
    /// Every position equally likely.
    Uniform,
    /// Every position once per pass over the positions, in the order of a seeded permutation
    /// (a new one each pass): uniform without repeats, as fio's random map makes a random job.
    Permutation,
    /// The position of popularity rank `k` (1-based) is drawn with probability proportional
    /// to `k^-theta`; ranks are scattered over the span by a seeded bijection.
    Zipf { theta: f64 },
    /// The first `hot_span_fraction` of the span receives `hot_access_fraction` of the random
    /// accesses, uniformly; the rest of the span receives the rest, uniformly.
    HotCold {
        hot_span_fraction: f64,
        hot_access_fraction: f64,
    },
}

/// How the engine issues the records by default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Load {
    /// `iodepth` requests outstanding; each completion admits the next request after
    /// `think_ns`.
    Closed { iodepth: u32, think_ns: u64 },
    /// Requests arrive on their own at `iops` per second on average.
    Open { iops: u64, arrival: Arrival },
}

/// Inter-arrival times of an open-loop workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// Exponentially distributed inter-arrival times (a Poisson process).
    Poisson,
    /// Every inter-arrival time is 1e9 / iops ns (fractions are carried, so there is no drift).
    Fixed,
}

/// When a workload ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    Requests {
        count: u64,
    },
    /// The reads and writes issued add up to at least `bytes` (fio's `size` and `io_size`):
    /// a request is generated while they add up to less. Flushes count no bytes.
    Bytes {
        bytes: u64,
    },
    /// As `Bytes`, with the span's length in bytes: one pass over the span (fio's default
    /// when a job gives no `size`, or a percentage). `build` resolves it, so a canonical name
    /// states the bytes.
    Span,
    /// Simulated time; the engine stops the run at this instant.
    Duration {
        duration_ns: u64,
    },
}

/// The default of `requests` when neither `requests` nor `duration` is given.
pub const DEFAULT_REQUESTS: u64 = 100_000;
/// The default of `bs`, as in fio.
pub const DEFAULT_BLOCK_BYTES: u64 = 4096;

pub(crate) fn spec_error(message: String) -> WorkloadError {
    WorkloadError::Spec { message }
}

impl SyntheticSpec {
    /// Checks the values that do not depend on the device. `parse` only produces valid specs,
    /// but the fields are public, so `build` checks again before it relies on them.
    pub(crate) fn check(&self) -> Result<(), WorkloadError> {
        let bad = |key: &str, value: String, expected: &str| {
            Err(spec_error(format!(
                "synthetic workload: {key}={value}: expected {expected}"
            )))
        };
        if let OpMix::Mixed { read_percent } = self.ops {
            if read_percent > 100 {
                return bad(
                    "rwmixread",
                    read_percent.to_string(),
                    "a percentage from 0 to 100",
                );
            }
        }
        if let AccessPattern::Random {
            random_percent,
            dist,
            align_bytes,
        } = self.pattern
        {
            if random_percent > 100 {
                return bad(
                    "percentage_random",
                    random_percent.to_string(),
                    "a percentage from 0 to 100",
                );
            }
            if align_bytes == Some(0) {
                return bad("align", "0".into(), "a size of at least 1 byte");
            }
            check_dist(dist)?;
        }
        match &self.block_size {
            BlockSize::Fixed { bytes: 0 } => {
                return bad("bs", "0".into(), "a size of at least 1 byte");
            }
            BlockSize::Fixed { .. } => {}
            &BlockSize::Range {
                min_bytes,
                max_bytes,
            } => {
                let value = format_block_size(&self.block_size);
                if min_bytes == 0 {
                    return bad("bs", value, "a lower bound of at least 1 byte");
                }
                if max_bytes < min_bytes || max_bytes % min_bytes != 0 {
                    return bad(
                        "bs",
                        value,
                        "an upper bound that is a multiple of the lower bound",
                    );
                }
            }
            BlockSize::Split { shares } => {
                if let Err(expected) = check_split(shares) {
                    return bad("bssplit", format_block_size(&self.block_size), &expected);
                }
            }
            BlockSize::SplitPerOp { read, write } => {
                if let Err(expected) = check_split(read).and_then(|()| check_split(write)) {
                    return bad("bssplit", format_block_size(&self.block_size), &expected);
                }
                if !matches!(self.ops, OpMix::Mixed { .. }) {
                    return bad(
                        "bssplit",
                        format_block_size(&self.block_size),
                        "one part for every request: a READ;WRITE pair only applies to mixed \
                         workloads (rw=randrw or rw=rw)",
                    );
                }
            }
        }
        match self.load {
            Load::Closed { iodepth: 0, .. } => {
                return bad("iodepth", "0".into(), "at least 1 outstanding request");
            }
            Load::Open { iops: 0, .. } => {
                return bad("iops", "0".into(), "at least 1 request per second");
            }
            _ => {}
        }
        self.check_fsync()?;
        match self.limit {
            Limit::Requests { count: 0 } => return bad("requests", "0".into(), "at least 1"),
            Limit::Bytes { bytes: 0 } => return bad("bytes", "0".into(), "at least 1 byte"),
            Limit::Duration { duration_ns: 0 } => {
                return bad("duration", "0ns".into(), "a positive duration");
            }
            _ => {}
        }
        if self.span_bytes == Some(0) {
            return bad("span", "0".into(), "a size of at least 1 byte");
        }
        Ok(())
    }

    /// Checks `fsync`: at least one write between flushes, and writes to flush.
    fn check_fsync(&self) -> Result<(), WorkloadError> {
        let Some(writes) = self.fsync_writes else {
            return Ok(());
        };
        let expected = if writes == 0 {
            "a whole number of writes, at least 1"
        } else if matches!(self.ops, OpMix::Read | OpMix::Trim) {
            "a workload that writes: a read-only workload has nothing to flush"
        } else {
            return Ok(());
        };
        Err(spec_error(format!(
            "synthetic workload: fsync={writes}: expected {expected}"
        )))
    }

    /// True when the spec is exactly its vdbench profile with only the overridable keys
    /// changed, so that the short vdbench form describes it completely.
    fn is_plain_vdbench(&self) -> Option<VdbenchProfile> {
        let profile = self.vdbench?;
        let Load::Closed {
            iodepth,
            think_ns: 0,
        } = self.load
        else {
            return None;
        };
        let mut expected = profile.spec();
        expected.load = Load::Closed {
            iodepth,
            think_ns: 0,
        };
        expected.limit = self.limit;
        expected.seed = self.seed;
        (expected == *self).then_some(profile)
    }
}

pub(crate) fn check_dist(dist: AddressDist) -> Result<(), WorkloadError> {
    match dist {
        AddressDist::Uniform | AddressDist::Permutation => Ok(()),
        AddressDist::Zipf { theta } => {
            if theta.is_finite() && theta > 0.0 {
                Ok(())
            } else {
                Err(spec_error(format!(
                    "synthetic workload: dist=zipf:{theta}: expected a finite exponent > 0, \
                     e.g. zipf:1.2"
                )))
            }
        }
        AddressDist::HotCold {
            hot_span_fraction,
            hot_access_fraction,
        } => {
            let inside = |f: f64| f > 0.0 && f < 1.0;
            if inside(hot_span_fraction) && inside(hot_access_fraction) {
                Ok(())
            } else {
                Err(spec_error(format!(
                    "synthetic workload: dist=hotcold:{hot_span_fraction}:{hot_access_fraction}: \
                     expected two fractions strictly between 0 and 1, e.g. hotcold:0.2:0.8"
                )))
            }
        }
    }
}

/// Writes a size with the largest binary suffix that divides it exactly (`4k`, `8g`, `1000`).
pub(crate) fn format_size(bytes: u64) -> String {
    const UNITS: [(u32, &str); 4] = [(40, "t"), (30, "g"), (20, "m"), (10, "k")];
    for (shift, suffix) in UNITS {
        if bytes != 0 && bytes.trailing_zeros() >= shift {
            return format!("{}{suffix}", bytes >> shift);
        }
    }
    bytes.to_string()
}

/// Writes a block size as its key takes it: `4k` or `4k-128k` (`bs`), `4k/60:64k/` or
/// `4k/100;64k/100` (`bssplit`).
pub(crate) fn format_block_size(block_size: &BlockSize) -> String {
    match block_size {
        BlockSize::Fixed { bytes } => format_size(*bytes),
        BlockSize::Range {
            min_bytes,
            max_bytes,
        } => {
            format!("{}-{}", format_size(*min_bytes), format_size(*max_bytes))
        }
        BlockSize::Split { shares } => format_split(shares),
        BlockSize::SplitPerOp { read, write } => {
            format!("{};{}", format_split(read), format_split(write))
        }
    }
}

/// The key a block size is written with.
pub(crate) fn block_size_key(block_size: &BlockSize) -> &'static str {
    match block_size {
        BlockSize::Fixed { .. } | BlockSize::Range { .. } => "bs",
        BlockSize::Split { .. } | BlockSize::SplitPerOp { .. } => "bssplit",
    }
}

fn format_split(shares: &[SizeShare]) -> String {
    let entries: Vec<String> = shares
        .iter()
        .map(|share| match share.percent {
            Some(percent) => format!("{}/{percent}", format_size(share.bytes)),
            None => format!("{}/", format_size(share.bytes)),
        })
        .collect();
    entries.join(":")
}

/// Writes an address distribution as `dist` takes it. Rust prints the shortest decimal that
/// reads back as the same f64, so the canonical name round-trips exactly.
pub(crate) fn format_dist(dist: AddressDist) -> String {
    match dist {
        AddressDist::Uniform => "uniform".into(),
        AddressDist::Permutation => "permutation".into(),
        AddressDist::Zipf { theta } => format!("zipf:{theta}"),
        AddressDist::HotCold {
            hot_span_fraction,
            hot_access_fraction,
        } => {
            format!("hotcold:{hot_span_fraction}:{hot_access_fraction}")
        }
    }
}

/// Writes a duration with the largest unit that divides it exactly. Minutes and hours are
/// avoided so that `m` in a canonical name always means MiB.
pub(crate) fn format_duration(ns: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")];
    for (unit, suffix) in UNITS {
        if ns != 0 && ns % unit == 0 {
            return format!("{}{suffix}", ns / unit);
        }
    }
    format!("{ns}ns")
}

/// The text form `parse` accepts: `synthetic:` followed by every key that applies, in a fixed
/// order, or the short `vdbench:` form for an unmodified vdbench profile. Keys whose value is
/// still `None` (span, align, seed) are left out; `build` names workloads after the resolved
/// spec, which has them all.
impl fmt::Display for SyntheticSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(profile) = self.is_plain_vdbench() {
            write!(f, "vdbench:{}", profile.name())?;
            self.write_load(f, true)?;
            self.write_limit(f)?;
            if let Some(seed) = self.seed {
                write!(f, ",seed={seed}")?;
            }
            return Ok(());
        }
        let rw = match (self.pattern, self.ops) {
            (AccessPattern::Sequential, OpMix::Read) => "read",
            (AccessPattern::Sequential, OpMix::Write) => "write",
            (AccessPattern::Sequential, OpMix::Mixed { .. }) => "rw",
            (AccessPattern::Random { .. }, OpMix::Read) => "randread",
            (AccessPattern::Random { .. }, OpMix::Write) => "randwrite",
            (AccessPattern::Random { .. }, OpMix::Mixed { .. }) => "randrw",
            (AccessPattern::Sequential, OpMix::Trim) => "trim",
            (AccessPattern::Random { .. }, OpMix::Trim) => "randtrim",
            (AccessPattern::Sequential, OpMix::TrimWrite) => "trimwrite",
            (AccessPattern::Random { .. }, OpMix::TrimWrite) => "randtrimwrite",
        };
        write!(f, "synthetic:rw={rw}")?;
        if let OpMix::Mixed { read_percent } = self.ops {
            write!(f, ",rwmixread={read_percent}")?;
        }
        if let AccessPattern::Random { random_percent, .. } = self.pattern {
            write!(f, ",percentage_random={random_percent}")?;
        }
        write!(
            f,
            ",{}={}",
            block_size_key(&self.block_size),
            format_block_size(&self.block_size)
        )?;
        if let AccessPattern::Random {
            dist, align_bytes, ..
        } = self.pattern
        {
            if let Some(align) = align_bytes {
                write!(f, ",align={}", format_size(align))?;
            }
            write!(f, ",dist={}", format_dist(dist))?;
        }
        if let Some(writes) = self.fsync_writes {
            write!(f, ",fsync={writes}")?;
        }
        self.write_load(f, false)?;
        self.write_limit(f)?;
        if let Some(span) = self.span_bytes {
            write!(f, ",span={}", format_size(span))?;
        }
        write!(f, ",offset={}", format_size(self.offset_bytes))?;
        if let Some(seed) = self.seed {
            write!(f, ",seed={seed}")?;
        }
        Ok(())
    }
}

impl SyntheticSpec {
    /// Writes the pacing keys. The vdbench short form has no think time (vdbench profiles
    /// never have one), so `short` leaves it out.
    fn write_load(&self, f: &mut fmt::Formatter<'_>, short: bool) -> fmt::Result {
        match self.load {
            Load::Closed { iodepth, think_ns } => {
                write!(f, ",iodepth={iodepth}")?;
                if !short {
                    write!(f, ",thinktime={}", format_duration(think_ns))?;
                }
                Ok(())
            }
            Load::Open { iops, arrival } => {
                let arrival = match arrival {
                    Arrival::Poisson => "poisson",
                    Arrival::Fixed => "fixed",
                };
                write!(f, ",iops={iops},arrival={arrival}")
            }
        }
    }

    fn write_limit(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.limit {
            Limit::Requests { count } => write!(f, ",requests={count}"),
            Limit::Bytes { bytes } => write!(f, ",bytes={}", format_size(bytes)),
            Limit::Span => write!(f, ",bytes=span"),
            Limit::Duration { duration_ns } => {
                write!(f, ",duration={}", format_duration(duration_ns))
            }
        }
    }
}
