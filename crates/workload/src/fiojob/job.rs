//! One fio job (its options after `[global]` inheritance) as storsim flows: a synthetic
//! generator spec for what it issues, and the flow keys for where and when (its region as an
//! LBA partition, its start delay, runtime, phase, loops), one flow per `numjobs` clone.

use super::value;
use crate::flows::{Extent, FlowSpec, LbaPartition};
use crate::synthetic::{
    AccessPattern, AddressDist, Arrival, BlockSize, Limit, Load, OpMix, SizeShare, SyntheticSpec,
};
use std::collections::BTreeMap;
use storsim_core::QUEUE_DEPTH_MAX;

/// An option as a job ended up with it: its value (`None` for a bare flag) and the line that
/// set it, so that an error points at the line to fix.
#[derive(Clone, Debug)]
pub(super) struct Given {
    pub line: usize,
    pub value: Option<String>,
}

/// A job: its section's name and line, and its options by fio's name for them.
#[derive(Clone, Debug)]
pub(super) struct Job {
    pub name: String,
    pub line: usize,
    pub options: BTreeMap<&'static str, Given>,
}

/// What is wrong with a job, and the line to look at.
#[derive(Debug)]
pub(super) struct Fault {
    pub line: usize,
    pub message: String,
}

/// Which directions a job issues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Directions {
    Read,
    Write,
    Mixed,
    Trim,
    /// A trim, then a write of the same range.
    TrimWrite,
}

impl Directions {
    /// Which parts of a per-direction value (read, write, trim) apply: a trim-and-write job's
    /// sizes and rates are its trims'.
    fn parts(self) -> &'static [usize] {
        match self {
            Directions::Read => &[0],
            Directions::Write => &[1],
            Directions::Mixed => &[0, 1],
            Directions::Trim | Directions::TrimWrite => &[2],
        }
    }
}

/// A direction's request sizes before they become a [`BlockSize`].
#[derive(Clone, Debug, PartialEq, Eq)]
enum Sizes {
    Fixed(u64),
    Range(u64, u64),
    Split(Vec<SizeShare>),
}

/// How much a job does.
enum Amount {
    Bytes(u64),
    /// One pass over its region, whose size is known only on the device.
    Region,
}

impl Job {
    fn get(&self, name: &str) -> Option<&Given> {
        self.options.get(name)
    }

    /// The option's value, refusing a bare flag where a value is needed.
    fn text(&self, name: &str) -> Result<Option<(&str, usize)>, Fault> {
        match self.get(name) {
            None => Ok(None),
            Some(Given {
                line,
                value: Some(value),
            }) => Ok(Some((value.as_str(), *line))),
            Some(Given { line, value: None }) => Err(Fault {
                line: *line,
                message: format!("{name}: expected {name}=VALUE"),
            }),
        }
    }

    /// Reads option `name` with `read`, the error naming the option, its value and its line.
    fn read<T>(
        &self,
        name: &str,
        read: impl FnOnce(&str) -> Result<T, String>,
    ) -> Result<Option<T>, Fault> {
        let Some((text, line)) = self.text(name)? else {
            return Ok(None);
        };
        read(text).map(Some).map_err(|expected| Fault {
            line,
            message: format!("{name}={text}: expected {expected}"),
        })
    }

    fn line_of(&self, name: &str) -> usize {
        self.get(name).map_or(self.line, |g| g.line)
    }

    fn fault(&self, name: &str, message: String) -> Fault {
        Fault {
            line: self.line_of(name),
            message,
        }
    }

    fn flag(&self, name: &str) -> Result<bool, Fault> {
        match self.get(name) {
            None => Ok(false),
            Some(given) => value::boolean(given.value.as_deref()).map_err(|expected| Fault {
                line: given.line,
                message: format!("{name}: expected {expected} or no value"),
            }),
        }
    }
}

/// What a job issues, as a generator spec without its seed, and the flow keys every clone
/// shares.
struct Shape {
    spec: SyntheticSpec,
    start_ns: u64,
    stop_ns: Option<u64>,
    head: Option<u64>,
    repeat: u32,
    region_offset: Extent,
    region_size: Option<Extent>,
}

/// The job's flows, in phase `phase`: one per clone. Also says whether the job asked for
/// something that has no effect here (`randrepeat=0`: storsim's runs are always repeatable).
pub(super) fn flows(job: &Job, phase: u32) -> Result<(Vec<FlowSpec>, bool), Fault> {
    let kb_base = job
        .read("kb_base", |t| match t.trim() {
            "1024" => Ok(1024),
            "1000" => Ok(1000),
            _ => Err("1024 or 1000".to_string()),
        })?
        .unwrap_or(1024);
    zone_mode(job)?;
    let shape = shape(job, kb_base)?;
    let clones = match job.read("numjobs", value::count)? {
        None => 1,
        Some(n) if (1..=4096).contains(&n) => n,
        Some(_) => {
            return Err(job.fault("numjobs", "numjobs: expected from 1 to 4096 clones".into()))
        }
    };
    let increment = job.read("offset_increment", |t| value::extent(t, kb_base))?;
    let seed = job.read("randseed", value::count)?;
    let mut flows = Vec::new();
    for clone in 0..clones {
        let mut spec = shape.spec.clone();
        spec.seed = seed.map(|s| s.wrapping_add(clone));
        spec.check().map_err(|e| Fault {
            line: job.line,
            message: format!("job {}: {e}", job.name),
        })?;
        let mut flow = FlowSpec::new(0, &spec.to_string());
        flow.name = if clones == 1 {
            job.name.clone()
        } else {
            format!("{}.{clone}", job.name)
        };
        flow.start_ns = shape.start_ns;
        flow.stop_ns = shape.stop_ns;
        flow.phase = phase;
        flow.head = shape.head;
        flow.repeat = shape.repeat;
        let offset = clone_offset(job, shape.region_offset, increment, clone)?;
        if offset != Extent::Bytes(0) || shape.region_size.is_some() {
            flow.lba = Some(LbaPartition {
                offset,
                size: shape.region_size,
            });
        }
        flows.push(flow);
    }
    let unrepeatable = job.get("randrepeat").is_some() && !job.flag("randrepeat")?;
    Ok((flows, unrepeatable))
}

/// The job's [`Shape`]: its generator spec and the flow keys of its timing and region.
fn shape(job: &Job, kb_base: u64) -> Result<Shape, Fault> {
    let (random, directions) = rw(job)?;
    let ops = match directions {
        Directions::Read => OpMix::Read,
        Directions::Write => OpMix::Write,
        Directions::Mixed => OpMix::Mixed {
            read_percent: read_percent(job)?,
        },
        Directions::Trim => OpMix::Trim,
        Directions::TrimWrite => OpMix::TrimWrite,
    };
    let block_size = block_size(job, directions, kb_base)?;
    let pattern = if random {
        pattern(job, directions, &block_size, kb_base)?
    } else {
        AccessPattern::Sequential
    };
    let load = load(job, directions, &block_size, kb_base)?;
    let fsync_writes = match directions {
        // fio syncs only after writes, and (fio 3.33, checked against it) not in a
        // trim-and-write job either.
        Directions::Read | Directions::Trim | Directions::TrimWrite => None,
        _ => {
            let fsync = job.read("fsync", value::count)?.filter(|&n| n > 0);
            let fdatasync = job.read("fdatasync", value::count)?.filter(|&n| n > 0);
            match (fsync, fdatasync) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            }
        }
    };
    let (region_offset, region_size, amount) = region(job, kb_base)?;
    let (limit, start_ns, stop_ns, head) = extent_in_time(job, amount, &block_size)?;
    let repeat = match job.read("loops", value::count)? {
        None => 1,
        Some(n) if n >= 1 && n <= u64::from(u32::MAX) => n as u32,
        Some(_) => return Err(job.fault("loops", "loops: expected at least 1".into())),
    };
    Ok(Shape {
        spec: SyntheticSpec {
            ops,
            pattern,
            block_size,
            fsync_writes,
            load,
            limit,
            span_bytes: None,
            offset_bytes: 0,
            seed: None,
            vdbench: None,
        },
        start_ns,
        stop_ns,
        head,
        repeat,
        region_offset,
        region_size,
    })
}

/// A random job's placement: `percentage_random`, `random_distribution`, `blockalign`, and
/// fio's random map: a uniform job of one size visits each block of its region once per pass
/// unless it says `norandommap` (fio turns the map off for other distributions and with
/// `blockalign`; with several sizes its map does not keep blocks apart, so storsim draws
/// those uniformly).
fn pattern(
    job: &Job,
    directions: Directions,
    block_size: &BlockSize,
    kb_base: u64,
) -> Result<AccessPattern, Fault> {
    let mut dist = distribution(job)?;
    let random_map = !job.flag("norandommap")?
        && job.get("blockalign").is_none()
        && matches!(block_size, BlockSize::Fixed { .. });
    if dist == AddressDist::Uniform && random_map {
        dist = AddressDist::Permutation;
    }
    Ok(AccessPattern::Random {
        random_percent: one_for_both(job, "percentage_random", directions, value::percent)?
            .unwrap_or(100),
        dist,
        align_bytes: one_for_both(job, "blockalign", directions, |t| {
            value::int(t, kb_base).and_then(|b| {
                if b == 0 {
                    Err("a size of at least 1 byte".into())
                } else {
                    Ok(b)
                }
            })
        })?,
    })
}

/// When the job ends and starts: the generator's limit (its amount, or with `time_based` its
/// runtime), its start delay, the stop its `runtime` puts, and a head for `number_ios` where
/// a count of requests cannot say it.
fn extent_in_time(
    job: &Job,
    amount: Amount,
    block_size: &BlockSize,
) -> Result<(Limit, u64, Option<u64>, Option<u64>), Fault> {
    let runtime_ns = job.read("runtime", |t| value::time_ns(t, 1_000_000_000))?;
    let time_based = job.flag("time_based")?;
    let limit =
        match (time_based, runtime_ns) {
            (true, Some(duration_ns)) if duration_ns > 0 => Limit::Duration { duration_ns },
            (true, _) => return Err(job.fault(
                "time_based",
                "time_based: expected a runtime as well (time_based runs the job for its runtime)"
                    .into(),
            )),
            (false, _) => match amount {
                Amount::Bytes(bytes) => Limit::Bytes { bytes },
                Amount::Region => Limit::Span,
            },
        };
    let start_ns = job
        .read("startdelay", |t| {
            if t.contains(['-', ':']) {
                return Err("one time: a range of start delays is not simulated".into());
            }
            value::time_ns(t, 1_000_000_000)
        })?
        .unwrap_or(0);
    let stop_ns = match (time_based, runtime_ns) {
        (false, Some(runtime)) if runtime > 0 => Some(start_ns.saturating_add(runtime)),
        _ => None,
    };
    let number_ios = job.read("number_ios", value::count)?.filter(|&n| n > 0);
    // fio's number_ios counts reads and writes, not syncs, and ends the job if it comes before
    // the amount. With one size and an amount in bytes, that is a count of requests; otherwise
    // the flow's head cuts the stream, which counts flushes too (only with fsync does it
    // differ).
    let (limit, head) = match (number_ios, limit, block_size) {
        (Some(n), Limit::Bytes { bytes }, BlockSize::Fixed { bytes: size }) => (
            Limit::Requests {
                count: n.min(bytes.div_ceil(*size)),
            },
            None,
        ),
        (n, limit, _) => (limit, n),
    };
    Ok((limit, start_ns, stop_ns, head))
}

fn zone_mode(job: &Job) -> Result<(), Fault> {
    match job.text("zonemode")? {
        None => Ok(()),
        Some((mode, _)) if mode.eq_ignore_ascii_case("none") => Ok(()),
        Some((mode, _)) if mode.eq_ignore_ascii_case("zbd") => Err(job.fault(
            "zonemode",
            "zonemode=zbd needs a zoned device: storsim has no zoned device model yet".into(),
        )),
        Some((mode, _)) => Err(job.fault(
            "zonemode",
            format!("zonemode={mode}: zones are not simulated (only zonemode=none is accepted)"),
        )),
    }
}

/// `rw`: whether the job is random, and which directions it issues.
fn rw(job: &Job) -> Result<(bool, Directions), Fault> {
    let Some((text, _)) = job.text("rw")? else {
        return Ok((false, Directions::Read));
    };
    let (mode, modifier) = match text.split_once(':') {
        Some((mode, modifier)) => (mode.trim(), Some(modifier.trim())),
        None => (text.trim(), None),
    };
    if let Some(modifier) = modifier {
        return Err(job.fault(
            "rw",
            format!(
                "rw={text}: the offset modifier `:{modifier}` is not simulated; give rw={mode}"
            ),
        ));
    }
    Ok(match mode.to_ascii_lowercase().as_str() {
        "read" => (false, Directions::Read),
        "write" => (false, Directions::Write),
        "rw" | "readwrite" => (false, Directions::Mixed),
        "randread" => (true, Directions::Read),
        "randwrite" => (true, Directions::Write),
        "randrw" => (true, Directions::Mixed),
        "trim" => (false, Directions::Trim),
        "randtrim" => (true, Directions::Trim),
        "trimwrite" => (false, Directions::TrimWrite),
        "randtrimwrite" => (true, Directions::TrimWrite),
        _ => {
            return Err(job.fault(
                "rw",
                format!(
                    "rw={mode}: expected read, write, rw (readwrite), randread, randwrite, randrw, \
                     trim, randtrim, trimwrite or randtrimwrite"
                ),
            ))
        }
    })
}

/// The read percentage of a mixed job: `rwmixread`, or 100 minus `rwmixwrite`; when both are
/// given the later line wins, as in fio.
fn read_percent(job: &Job) -> Result<u8, Fault> {
    let read = job.read("rwmixread", value::percent)?;
    let write = job.read("rwmixwrite", value::percent)?;
    Ok(match (read, write) {
        (Some(r), Some(w)) => {
            if job.line_of("rwmixread") > job.line_of("rwmixwrite") {
                r
            } else {
                100 - w
            }
        }
        (Some(r), None) => r,
        (None, Some(w)) => 100 - w,
        (None, None) => 50,
    })
}

/// A per-direction option's one value for the job: its direction's part, or for a mixed job
/// the part both directions share (refused if they differ).
fn one_for_both<T: PartialEq>(
    job: &Job,
    name: &str,
    directions: Directions,
    read: impl Fn(&str) -> Result<T, String>,
) -> Result<Option<T>, Fault> {
    let Some((text, line)) = job.text(name)? else {
        return Ok(None);
    };
    let parse = |part: Option<&str>| -> Result<Option<T>, Fault> {
        part.map(|p| {
            read(p).map_err(|expected| Fault {
                line,
                message: format!("{name}={text}: expected {expected}"),
            })
        })
        .transpose()
    };
    let parts = value::per_direction(text);
    let mut values = Vec::new();
    for &part in directions.parts() {
        values.push(parse(parts[part])?);
    }
    if values.windows(2).any(|pair| pair[0] != pair[1]) {
        return Err(Fault {
            line,
            message: format!(
                "{name}={text}: different values for reads and writes are not simulated; give one"
            ),
        });
    }
    Ok(values.into_iter().next().flatten())
}

/// The request sizes of one direction (0 reads, 1 writes, 2 trims): its `bssplit` part if it has one,
/// else the later of `bs` and `bsrange`, else 4 KiB.
fn sizes(job: &Job, direction: usize, kb_base: u64) -> Result<Sizes, Fault> {
    let size = |text: &str| -> Result<u64, String> {
        match value::int(text, kb_base)? {
            0 => Err("a size of at least 1 byte".into()),
            bytes => Ok(bytes),
        }
    };
    if let Some((text, line)) = job.text("bssplit")? {
        if let Some(part) = value::per_direction(text)[direction] {
            return split(part, &size)
                .map(Sizes::Split)
                .map_err(|expected| Fault {
                    line,
                    message: format!("bssplit={text}: expected {expected}"),
                });
        }
    }
    let bs = job.text("bs")?;
    let range = job.text("bsrange")?;
    let later_is_range = match (bs, range) {
        (Some((_, a)), Some((_, b))) => b > a,
        (None, Some(_)) => true,
        _ => false,
    };
    if later_is_range {
        let (text, line) = range.expect("chosen because it is given");
        if let Some(part) = value::per_direction(text)[direction] {
            let bad = |expected: String| Fault {
                line,
                message: format!("bsrange={text}: expected {expected}"),
            };
            let (low, high) = part
                .split_once(['-', ':'])
                .ok_or_else(|| bad("a range LOW-HIGH such as 4k-64k".into()))?;
            let (mut low, mut high) = (size(low).map_err(bad)?, size(high).map_err(bad)?);
            if low > high {
                // fio swaps a range given high first.
                std::mem::swap(&mut low, &mut high);
            }
            if high % low != 0 {
                return Err(bad(
                    "a high size that is a multiple of the low one: fio issues multiples of the \
                     low size, and storsim draws them uniformly up to the high one"
                        .into(),
                ));
            }
            return Ok(if low == high {
                Sizes::Fixed(low)
            } else {
                Sizes::Range(low, high)
            });
        }
    } else if let Some((text, line)) = bs {
        if let Some(part) = value::per_direction(text)[direction] {
            return size(part).map(Sizes::Fixed).map_err(|expected| Fault {
                line,
                message: format!("bs={text}: expected {expected}"),
            });
        }
    }
    Ok(Sizes::Fixed(4096))
}

/// One direction's `bssplit` part: `SIZE/PERCENT` entries joined by `:`.
fn split(part: &str, size: &dyn Fn(&str) -> Result<u64, String>) -> Result<Vec<SizeShare>, String> {
    let expected = "SIZE/PERCENT entries joined by `:`, e.g. 4k/10:64k/90";
    let shares = part
        .split(':')
        .map(|entry| {
            let (bytes, percent) = match entry.split_once('/') {
                Some((bytes, percent)) => (bytes.trim(), percent.trim()),
                None => (entry.trim(), ""),
            };
            Ok(SizeShare {
                bytes: size(bytes).map_err(|_| expected.to_string())?,
                percent: match percent {
                    "" => None,
                    p => Some(value::percent(p).map_err(|_| expected.to_string())?),
                },
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    crate::synthetic::check_split_shares(&shares)?;
    Ok(shares)
}

fn block_size(job: &Job, directions: Directions, kb_base: u64) -> Result<BlockSize, Fault> {
    let as_block = |sizes: Sizes| match sizes {
        Sizes::Fixed(bytes) => BlockSize::Fixed { bytes },
        Sizes::Range(min_bytes, max_bytes) => BlockSize::Range {
            min_bytes,
            max_bytes,
        },
        Sizes::Split(shares) => BlockSize::Split { shares },
    };
    let as_shares = |sizes: Sizes| match sizes {
        Sizes::Fixed(bytes) => Some(vec![SizeShare {
            bytes,
            percent: Some(100),
        }]),
        Sizes::Split(shares) => Some(shares),
        Sizes::Range(..) => None,
    };
    Ok(match directions {
        Directions::Read => as_block(sizes(job, 0, kb_base)?),
        Directions::Write => as_block(sizes(job, 1, kb_base)?),
        Directions::Trim | Directions::TrimWrite => as_block(sizes(job, 2, kb_base)?),
        Directions::Mixed => {
            let (read, write) = (sizes(job, 0, kb_base)?, sizes(job, 1, kb_base)?);
            if read == write {
                as_block(read)
            } else {
                match (as_shares(read), as_shares(write)) {
                    (Some(read), Some(write)) => BlockSize::SplitPerOp { read, write },
                    _ => {
                        return Err(job.fault(
                            "bsrange",
                            "bsrange: different ranges for reads and writes are not simulated; \
                             give one range, or bssplit parts"
                                .into(),
                        ))
                    }
                }
            }
        }
    })
}

/// `random_distribution`: uniform (`random`), `zipf:THETA`, or a `zoned` distribution of two
/// zones (a hot region at the start and the rest).
fn distribution(job: &Job) -> Result<AddressDist, Fault> {
    let Some((text, line)) = job.text("random_distribution")? else {
        return Ok(AddressDist::Uniform);
    };
    let bad = |why: &str| Fault {
        line,
        message: format!("random_distribution={text}: {why}"),
    };
    if text.contains(',') {
        return Err(bad(
            "different distributions for reads and writes are not simulated; give one",
        ));
    }
    let mut parts = text.split(':');
    let kind = parts.next().unwrap_or("").trim().to_ascii_lowercase();
    let args: Vec<&str> = parts.map(str::trim).collect();
    match (kind.as_str(), &args[..]) {
        ("random", []) => Ok(AddressDist::Uniform),
        ("zipf", [theta]) => match theta.parse::<f64>() {
            Ok(theta) if theta.is_finite() && theta > 0.0 => Ok(AddressDist::Zipf { theta }),
            _ => Err(bad("expected zipf:THETA with THETA > 0, e.g. zipf:1.2")),
        },
        ("zipf", [_, _]) => Err(bad(
            "a zipf distribution centred elsewhere than at random is not simulated",
        )),
        ("zoned", [hot, cold]) => {
            let zone = |z: &str| -> Option<(f64, f64)> {
                let (access, span) = z.split_once('/')?;
                Some((access.trim().parse().ok()?, span.trim().parse().ok()?))
            };
            match (zone(hot), zone(cold)) {
                (Some((hot_access, hot_span)), Some((cold_access, cold_span)))
                    if hot_access + cold_access == 100.0
                        && hot_span + cold_span == 100.0
                        && hot_access > 0.0
                        && cold_access > 0.0
                        && hot_span > 0.0
                        && cold_span > 0.0 =>
                {
                    Ok(AddressDist::HotCold {
                        hot_span_fraction: hot_span / 100.0,
                        hot_access_fraction: hot_access / 100.0,
                    })
                }
                _ => Err(bad(
                    "expected zoned:ACCESS/SPAN:ACCESS/SPAN with each pair's percentages summing \
                     to 100, e.g. zoned:80/20:20/80",
                )),
            }
        }
        ("zoned", _) => Err(bad(
            "storsim simulates zoned distributions of two zones (a hot region at the start and \
             the rest), e.g. zoned:80/20:20/80",
        )),
        ("pareto" | "normal" | "gauss" | "zoned_abs", _) => Err(bad(
            "this distribution is not simulated yet; storsim draws random (uniform), zipf:THETA \
             and two-zone zoned distributions",
        )),
        _ => Err(bad(
            "expected random, zipf:THETA, pareto:H, normal:DEV, zoned:... or zoned_abs:...",
        )),
    }
}

/// The job's pacing: a closed loop of `iodepth` with its `thinktime`, or, rated, an open loop
/// at its `rate_iops` (or its `rate` over its request size).
fn load(
    job: &Job,
    directions: Directions,
    block_size: &BlockSize,
    kb_base: u64,
) -> Result<Load, Fault> {
    let iops = one_for_both(job, "rate_iops", directions, |t| {
        value::int(t, kb_base).and_then(|n| {
            if n == 0 {
                Err("at least 1 request per second".into())
            } else {
                Ok(n)
            }
        })
    })?;
    let bandwidth = one_for_both(job, "rate", directions, |t| value::int(t, kb_base))?;
    let rated = match (iops, bandwidth) {
        (Some(_), Some(_)) => {
            return Err(job.fault("rate", "rate and rate_iops: give one of them".into()))
        }
        (Some(iops), None) => Some(iops),
        (None, Some(bytes_per_s)) => {
            let BlockSize::Fixed { bytes } = block_size else {
                return Err(job.fault(
                    "rate",
                    "rate: a bandwidth is simulated for one request size; give rate_iops for a \
                     job of several sizes"
                        .into(),
                ));
            };
            // The nearest whole rate: storsim's open loops take whole requests per second.
            let iops = ((bytes_per_s + bytes / 2) / bytes).max(1);
            Some(iops)
        }
        (None, None) => None,
    };
    let think_ns = job
        .read("thinktime", |t| value::time_ns(t, 1_000))?
        .unwrap_or(0);
    match job.read("thinktime_blocks", value::count)? {
        None | Some(1) => {}
        Some(_) => {
            return Err(job.fault(
                "thinktime_blocks",
                "thinktime_blocks: storsim thinks after every request; only 1 is simulated".into(),
            ))
        }
    }
    if let Some(iops) = rated {
        if think_ns > 0 {
            return Err(job.fault(
                "thinktime",
                "thinktime with a rate: a rated job is an open loop, which does not think".into(),
            ));
        }
        let arrival = match job.text("rate_process")? {
            None => Arrival::Fixed,
            Some((p, _)) if p.eq_ignore_ascii_case("linear") => Arrival::Fixed,
            Some((p, _)) if p.eq_ignore_ascii_case("poisson") => Arrival::Poisson,
            Some((p, _)) => {
                return Err(job.fault(
                    "rate_process",
                    format!("rate_process={p}: expected linear or poisson"),
                ))
            }
        };
        return Ok(Load::Open { iops, arrival });
    }
    let iodepth = match job.read("iodepth", value::count)? {
        None => 1,
        Some(n) if n >= 1 && n <= u64::from(QUEUE_DEPTH_MAX) => n as u32,
        Some(_) => {
            return Err(job.fault(
                "iodepth",
                format!("iodepth: expected from 1 to {QUEUE_DEPTH_MAX}"),
            ))
        }
    };
    Ok(Load::Closed { iodepth, think_ns })
}

/// The job's region (its first byte, and its size if it gives one) and how much it does.
/// `filesize` sets the region's size over `size`, which then only sets the amount; `io_size`
/// sets the amount over both.
fn region(job: &Job, kb_base: u64) -> Result<(Extent, Option<Extent>, Amount), Fault> {
    let offset = job
        .read("offset", |t| value::extent(t, kb_base))?
        .unwrap_or(Extent::Bytes(0));
    let filesize = job.read("filesize", |t| {
        if t.contains(['-', ':']) {
            return Err("one size: a range of file sizes is not simulated".into());
        }
        value::extent(t, kb_base)
    })?;
    let size = job.read("size", |t| value::extent(t, kb_base))?;
    let io_size = job.read("io_size", |t| {
        let bytes = value::int(t, kb_base)?;
        if bytes == 0 {
            return Err("a size of at least 1 byte".into());
        }
        Ok(bytes)
    })?;
    let region_size = filesize.or(size);
    let amount = match (io_size, size.or(filesize)) {
        (Some(bytes), _) | (None, Some(Extent::Bytes(bytes))) => Amount::Bytes(bytes),
        (None, Some(Extent::Percent(_))) | (None, None) => Amount::Region,
    };
    Ok((offset, region_size, amount))
}

/// Clone `clone`'s first byte: the job's `offset` plus `offset_increment` times its number.
fn clone_offset(
    job: &Job,
    offset: Extent,
    increment: Option<Extent>,
    clone: u64,
) -> Result<Extent, Fault> {
    let Some(increment) = increment else {
        return Ok(offset);
    };
    let k = clone as f64;
    match (offset, increment) {
        (Extent::Bytes(o), Extent::Bytes(i)) => i
            .checked_mul(clone)
            .and_then(|step| o.checked_add(step))
            .map(Extent::Bytes)
            .ok_or_else(|| {
                job.fault(
                    "offset_increment",
                    "offset_increment: the clones' offsets pass 16 EiB".into(),
                )
            }),
        (Extent::Percent(o), Extent::Percent(i)) => Ok(Extent::Percent(o + k * i)),
        (Extent::Bytes(0), Extent::Percent(i)) => Ok(Extent::Percent(k * i)),
        (Extent::Percent(o), Extent::Bytes(0)) => Ok(Extent::Percent(o)),
        _ => Err(job.fault(
            "offset_increment",
            "offset_increment: give offset and offset_increment both in bytes or both as \
             percentages"
                .into(),
        )),
    }
}
