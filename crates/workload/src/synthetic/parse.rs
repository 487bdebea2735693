//! Turns the command-line text of a synthetic or vdbench spec into a [`SyntheticSpec`].
//!
//! Every failure is a [`WorkloadError::Spec`] whose message names the key, repeats the value and
//! says what was expected, because the user typed the spec by hand and needs to find the typo.

use super::spec::{
    check_dist, format_block_size, format_dist, format_duration, format_size, spec_error,
    AccessPattern, AddressDist, Arrival, BlockSize, Limit, Load, OpMix, SizeShare, SyntheticSpec,
    DEFAULT_BLOCK_BYTES, DEFAULT_REQUESTS,
};
use super::vdbench::VdbenchProfile;
use crate::WorkloadError;
use storsim_core::QUEUE_DEPTH_MAX;

/// Every key, in the order the help text and the canonical name list them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Key {
    Rw,
    RwMixRead,
    PercentageRandom,
    Bs,
    BsSplit,
    Align,
    Dist,
    Fsync,
    IoDepth,
    ThinkTime,
    Iops,
    Arrival,
    Requests,
    Bytes,
    Duration,
    Span,
    Offset,
    Seed,
}

const KEYS: [(Key, &str); 18] = [
    (Key::Rw, "rw"),
    (Key::RwMixRead, "rwmixread"),
    (Key::PercentageRandom, "percentage_random"),
    (Key::Bs, "bs"),
    (Key::BsSplit, "bssplit"),
    (Key::Align, "align"),
    (Key::Dist, "dist"),
    (Key::Fsync, "fsync"),
    (Key::IoDepth, "iodepth"),
    (Key::ThinkTime, "thinktime"),
    (Key::Iops, "iops"),
    (Key::Arrival, "arrival"),
    (Key::Requests, "requests"),
    (Key::Bytes, "bytes"),
    (Key::Duration, "duration"),
    (Key::Span, "span"),
    (Key::Offset, "offset"),
    (Key::Seed, "seed"),
];

/// The keys a vdbench profile lets the user change; the rest define the profile.
const VDBENCH_KEYS: [Key; 4] = [Key::IoDepth, Key::Requests, Key::Duration, Key::Seed];

impl Key {
    fn lookup(name: &str) -> Option<Key> {
        if name.eq_ignore_ascii_case("readwrite") {
            // fio's long name for rw.
            return Some(Key::Rw);
        }
        KEYS.iter()
            .find(|(_, n)| n.eq_ignore_ascii_case(name))
            .map(|(k, _)| *k)
    }

    fn name(self) -> &'static str {
        KEYS[self as usize].1
    }
}

/// The value of `rw`: an access pattern combined with an operation mix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rw {
    Read,
    Write,
    Mix,
    RandRead,
    RandWrite,
    RandMix,
    Trim,
    RandTrim,
    TrimWrite,
    RandTrimWrite,
}

impl Rw {
    fn is_random(self) -> bool {
        matches!(
            self,
            Rw::RandRead | Rw::RandWrite | Rw::RandMix | Rw::RandTrim | Rw::RandTrimWrite
        )
    }

    fn is_mixed(self) -> bool {
        matches!(self, Rw::Mix | Rw::RandMix)
    }

    fn name(self) -> &'static str {
        match self {
            Rw::Read => "read",
            Rw::Write => "write",
            Rw::Mix => "rw",
            Rw::RandRead => "randread",
            Rw::RandWrite => "randwrite",
            Rw::RandMix => "randrw",
            Rw::Trim => "trim",
            Rw::RandTrim => "randtrim",
            Rw::TrimWrite => "trimwrite",
            Rw::RandTrimWrite => "randtrimwrite",
        }
    }
}

/// The values given so far, one slot per key, in the order of [`KEYS`].
#[derive(Default)]
struct Given {
    rw: Option<Rw>,
    rwmixread: Option<u8>,
    percentage_random: Option<u8>,
    bs: Option<BlockSize>,
    bssplit: Option<BlockSize>,
    align: Option<u64>,
    dist: Option<AddressDist>,
    fsync: Option<u64>,
    iodepth: Option<u32>,
    thinktime: Option<u64>,
    iops: Option<u64>,
    arrival: Option<Arrival>,
    requests: Option<u64>,
    bytes: Option<Limit>,
    duration: Option<u64>,
    span: Option<u64>,
    offset: Option<u64>,
    seed: Option<u64>,
}

/// Which kind of spec is being read, so that messages say which one is wrong.
#[derive(Clone, Copy)]
enum Dialect {
    Synthetic,
    Vdbench,
}

impl Dialect {
    fn label(self) -> &'static str {
        match self {
            Dialect::Synthetic => "synthetic workload",
            Dialect::Vdbench => "vdbench workload",
        }
    }
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

/// Parses a spec: `synthetic:key=value,...` (the prefix is optional) or
/// `vdbench:<profile>[,key=value...]`.
pub fn parse(spec: &str) -> Result<SyntheticSpec, WorkloadError> {
    let text = spec.trim();
    if let Some(rest) = strip_prefix_ignore_case(text, "vdbench:") {
        return parse_vdbench(rest);
    }
    let body = strip_prefix_ignore_case(text, "synthetic:").unwrap_or(text);
    let given = collect(body, Dialect::Synthetic, None)?;
    assemble(given)
}

fn parse_vdbench(body: &str) -> Result<SyntheticSpec, WorkloadError> {
    let (name, overrides) = match body.split_once(',') {
        Some((name, overrides)) => (name.trim(), Some(overrides)),
        None => (body.trim(), None),
    };
    let Some(profile) = VdbenchProfile::by_name(name) else {
        return Err(spec_error(format!(
            "vdbench workload: unknown profile `{name}`: expected <access>-<rw>-<size> with \
             access random|mixed, rw read|write|rw and size small|large|uniform, \
             e.g. vdbench:mixed-rw-uniform"
        )));
    };
    let given = match overrides {
        Some(text) if text.trim().is_empty() => {
            return Err(spec_error(format!(
                "vdbench workload: `{body}`: expected key=value after the comma, e.g. iodepth=16"
            )));
        }
        Some(text) => collect(text, Dialect::Vdbench, Some(&VDBENCH_KEYS))?,
        None => Given::default(),
    };
    let mut spec = profile.spec();
    if let Some(iodepth) = given.iodepth {
        spec.load = Load::Closed {
            iodepth,
            think_ns: 0,
        };
    }
    spec.limit = limit(&given, Dialect::Vdbench)?.unwrap_or(spec.limit);
    spec.seed = given.seed;
    spec.check()?;
    Ok(spec)
}

/// Reads comma-separated `key=value` items into their slots, refusing unknown, repeated or
/// (when `allowed` is given) disallowed keys. Empty text means "all defaults".
fn collect(text: &str, dialect: Dialect, allowed: Option<&[Key]>) -> Result<Given, WorkloadError> {
    let label = dialect.label();
    let mut given = Given::default();
    let mut seen = [false; KEYS.len()];
    if text.trim().is_empty() {
        return Ok(given);
    }
    for item in text.split(',') {
        let item = item.trim();
        if item.is_empty() {
            return Err(spec_error(format!(
                "{label}: empty item (two commas in a row or a trailing comma)"
            )));
        }
        let Some((raw_key, raw_value)) = item.split_once('=') else {
            return Err(spec_error(format!(
                "{label}: `{item}`: expected key=value, e.g. bs=4k"
            )));
        };
        let (raw_key, value) = (raw_key.trim(), raw_value.trim());
        let Some(key) = Key::lookup(raw_key) else {
            let known: Vec<&str> = match allowed {
                Some(keys) => keys.iter().map(|k| k.name()).collect(),
                None => KEYS.iter().map(|(_, n)| *n).collect(),
            };
            return Err(spec_error(format!(
                "{label}: unknown key `{raw_key}` in `{item}`: expected one of {}",
                known.join(", ")
            )));
        };
        if let Some(keys) = allowed {
            if !keys.contains(&key) {
                return Err(spec_error(format!(
                    "{label}: `{item}`: {} is fixed by the profile; only iodepth, requests, \
                     duration and seed can be changed (use a synthetic: spec for anything else)",
                    key.name()
                )));
            }
        }
        if std::mem::replace(&mut seen[key as usize], true) {
            return Err(spec_error(format!(
                "{label}: key {} is given twice",
                key.name()
            )));
        }
        store(&mut given, key, value).map_err(|expected| {
            spec_error(format!("{label}: {raw_key}={value}: expected {expected}"))
        })?;
    }
    Ok(given)
}

/// Parses one value into its slot; the error is the "expected ..." part of the message.
fn store(given: &mut Given, key: Key, value: &str) -> Result<(), String> {
    match key {
        Key::Rw => given.rw = Some(parse_rw(value)?),
        Key::RwMixRead => given.rwmixread = Some(parse_percent(value)?),
        Key::PercentageRandom => given.percentage_random = Some(parse_percent(value)?),
        Key::Bs => given.bs = Some(parse_block_size(value)?),
        Key::BsSplit => given.bssplit = Some(parse_bssplit(value)?),
        Key::Align => given.align = Some(parse_positive_size(value)?),
        Key::Dist => given.dist = Some(parse_dist(value)?),
        Key::Fsync => given.fsync = Some(parse_positive_count(value)?),
        Key::IoDepth => {
            let depth = parse_count(value)?;
            given.iodepth = Some(
                u32::try_from(depth)
                    .ok()
                    .filter(|d| (1..=QUEUE_DEPTH_MAX).contains(d))
                    .ok_or_else(|| format!("a queue depth from 1 to {QUEUE_DEPTH_MAX}"))?,
            );
        }
        Key::ThinkTime => given.thinktime = Some(parse_duration(value)?),
        Key::Iops => given.iops = Some(parse_positive_count(value)?),
        Key::Arrival => {
            given.arrival = Some(if value.eq_ignore_ascii_case("poisson") {
                Arrival::Poisson
            } else if value.eq_ignore_ascii_case("fixed") {
                Arrival::Fixed
            } else {
                return Err("poisson or fixed".into());
            })
        }
        Key::Requests => given.requests = Some(parse_positive_count(value)?),
        Key::Bytes => {
            given.bytes = Some(if value.eq_ignore_ascii_case("span") {
                Limit::Span
            } else {
                Limit::Bytes {
                    bytes: parse_positive_size(value)
                        .map_err(|e| format!("{e}, or span (one pass over the span)"))?,
                }
            })
        }
        Key::Duration => {
            let ns = parse_duration(value)?;
            if ns == 0 {
                return Err("a positive duration, e.g. 10s".into());
            }
            given.duration = Some(ns);
        }
        Key::Span => given.span = Some(parse_positive_size(value)?),
        Key::Offset => given.offset = Some(parse_size(value)?),
        Key::Seed => given.seed = Some(parse_seed(value)?),
    }
    Ok(())
}

/// Combines the given values with the defaults, refusing keys that do not apply.
fn assemble(given: Given) -> Result<SyntheticSpec, WorkloadError> {
    let label = Dialect::Synthetic.label();
    let rw = given.rw.unwrap_or(Rw::Read);
    let misplaced = |key: Key, value: String, applies_to: &str| {
        Err(spec_error(format!(
            "{label}: {}={value}: only applies to {applies_to}, not to rw={}",
            key.name(),
            rw.name()
        )))
    };
    let ops = match rw {
        Rw::Read | Rw::RandRead => OpMix::Read,
        Rw::Write | Rw::RandWrite => OpMix::Write,
        Rw::Mix | Rw::RandMix => OpMix::Mixed {
            read_percent: given.rwmixread.unwrap_or(50),
        },
        Rw::Trim | Rw::RandTrim => OpMix::Trim,
        Rw::TrimWrite | Rw::RandTrimWrite => OpMix::TrimWrite,
    };
    if let (Some(percent), false) = (given.rwmixread, rw.is_mixed()) {
        return misplaced(
            Key::RwMixRead,
            percent.to_string(),
            "mixed workloads (rw=randrw or rw=rw)",
        );
    }
    let pattern = if rw.is_random() {
        AccessPattern::Random {
            random_percent: given.percentage_random.unwrap_or(100),
            dist: given.dist.unwrap_or(AddressDist::Uniform),
            align_bytes: given.align,
        }
    } else {
        let random_only = "random workloads (rw=randread, randwrite or randrw)";
        if let Some(percent) = given.percentage_random {
            return misplaced(Key::PercentageRandom, percent.to_string(), random_only);
        }
        if let Some(dist) = given.dist {
            return misplaced(Key::Dist, format_dist(dist), random_only);
        }
        if let Some(align) = given.align {
            return misplaced(Key::Align, format_size(align), random_only);
        }
        AccessPattern::Sequential
    };
    let block_size = block_size(&given, label)?;
    let load = load(&given, label)?;
    let spec = SyntheticSpec {
        ops,
        pattern,
        block_size,
        fsync_writes: given.fsync,
        load,
        limit: limit(&given, Dialect::Synthetic)?.unwrap_or(Limit::Requests {
            count: DEFAULT_REQUESTS,
        }),
        span_bytes: given.span,
        offset_bytes: given.offset.unwrap_or(0),
        seed: given.seed,
        vdbench: None,
    };
    spec.check()?;
    Ok(spec)
}

/// The block size `bs` or `bssplit` gives (not both), 4 KiB when neither does; `label` names
/// the dialect in errors.
fn block_size(given: &Given, label: &str) -> Result<BlockSize, WorkloadError> {
    Ok(match (given.bs.clone(), given.bssplit.clone()) {
        (Some(bs), Some(split)) => {
            return Err(spec_error(format!(
                "{label}: bs={} and bssplit={} exclude each other: bs gives one size or a \
                 range, bssplit a list of sizes with their percentages",
                format_block_size(&bs),
                format_block_size(&split)
            )));
        }
        (Some(sizes), None) | (None, Some(sizes)) => sizes,
        (None, None) => BlockSize::Fixed {
            bytes: DEFAULT_BLOCK_BYTES,
        },
    })
}

/// The load `iodepth` (a closed loop, with `thinktime`) or `iops` (an open loop, with
/// `arrival`) gives, not both; one request outstanding when neither does.
fn load(given: &Given, label: &str) -> Result<Load, WorkloadError> {
    Ok(match (given.iodepth, given.iops) {
        (Some(iodepth), Some(iops)) => {
            return Err(spec_error(format!(
                "{label}: iodepth={iodepth} and iops={iops} exclude each other: iodepth runs a \
                 closed loop with that many requests outstanding, iops an open loop at that rate"
            )));
        }
        (_, Some(iops)) => {
            if let Some(think_ns) = given.thinktime {
                return Err(spec_error(format!(
                    "{label}: thinktime={}: only applies to closed-loop workloads (iodepth), not \
                     to iops={iops}",
                    format_duration(think_ns)
                )));
            }
            Load::Open {
                iops,
                arrival: given.arrival.unwrap_or(Arrival::Poisson),
            }
        }
        (iodepth, None) => {
            if given.arrival.is_some() {
                return Err(spec_error(format!(
                    "{label}: arrival: only applies to open-loop workloads; give iops=N as well"
                )));
            }
            Load::Closed {
                iodepth: iodepth.unwrap_or(1),
                think_ns: given.thinktime.unwrap_or(0),
            }
        }
    })
}

fn limit(given: &Given, dialect: Dialect) -> Result<Option<Limit>, WorkloadError> {
    let mut limits = Vec::new();
    if let Some(count) = given.requests {
        limits.push((format!("requests={count}"), Limit::Requests { count }));
    }
    match given.bytes {
        Some(Limit::Bytes { bytes }) => {
            limits.push((
                format!("bytes={}", format_size(bytes)),
                Limit::Bytes { bytes },
            ));
        }
        Some(limit) => limits.push(("bytes=span".into(), limit)),
        None => {}
    }
    if let Some(duration_ns) = given.duration {
        limits.push((
            format!("duration={}", format_duration(duration_ns)),
            Limit::Duration { duration_ns },
        ));
    }
    match &limits[..] {
        [] => Ok(None),
        [(_, limit)] => Ok(Some(*limit)),
        [(a, _), (b, _), ..] => Err(spec_error(format!(
            "{}: {a} and {b} exclude each other: give one of requests, bytes and duration",
            dialect.label()
        ))),
    }
}

fn parse_rw(value: &str) -> Result<Rw, String> {
    const NAMES: [(&str, Rw); 11] = [
        ("read", Rw::Read),
        ("write", Rw::Write),
        ("rw", Rw::Mix),
        ("readwrite", Rw::Mix),
        ("randread", Rw::RandRead),
        ("randwrite", Rw::RandWrite),
        ("randrw", Rw::RandMix),
        ("trim", Rw::Trim),
        ("randtrim", Rw::RandTrim),
        ("trimwrite", Rw::TrimWrite),
        ("randtrimwrite", Rw::RandTrimWrite),
    ];
    NAMES
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(value))
        .map(|(_, rw)| *rw)
        .ok_or_else(|| {
            "read, write, randread, randwrite, randrw, rw (readwrite), trim, randtrim, trimwrite \
             or randtrimwrite"
                .into()
        })
}

/// Splits `123abc` into the number and the rest; the number must be non-empty ASCII digits.
fn split_number(value: &str) -> Option<(u64, &str)> {
    let digits = value.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let number = value[..digits].parse::<u64>().ok()?;
    Some((number, &value[digits..]))
}

const SIZE_EXPECTED: &str =
    "a size such as 512, 4k, 1m or 8g (suffixes k, m, g, t are KiB, MiB, GiB, TiB; 4KiB also works)";

/// Parses a size as the synthetic syntax writes it (`512`, `4k`, `64m`, `8g`, `1t`, `4KiB`); the
/// emulator's `--size` takes the same.
pub fn parse_size(value: &str) -> Result<u64, String> {
    let (number, suffix) = split_number(value).ok_or_else(|| SIZE_EXPECTED.to_string())?;
    let shift = match suffix.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(SIZE_EXPECTED.into()),
    };
    number
        .checked_mul(1u64 << shift)
        .ok_or_else(|| format!("{SIZE_EXPECTED}, below 16 EiB"))
}

fn parse_positive_size(value: &str) -> Result<u64, String> {
    match parse_size(value)? {
        0 => Err(format!("{SIZE_EXPECTED}, not zero")),
        bytes => Ok(bytes),
    }
}

fn parse_block_size(value: &str) -> Result<BlockSize, String> {
    let Some((low, high)) = value.split_once('-') else {
        return Ok(BlockSize::Fixed {
            bytes: parse_positive_size(value)?,
        });
    };
    let range_expected = "a size or a range LOW-HIGH such as 4k-128k, HIGH a multiple of LOW";
    let min_bytes = parse_positive_size(low.trim()).map_err(|_| range_expected.to_string())?;
    let max_bytes = parse_positive_size(high.trim()).map_err(|_| range_expected.to_string())?;
    if max_bytes < min_bytes || max_bytes % min_bytes != 0 {
        return Err(range_expected.into());
    }
    if max_bytes == min_bytes {
        return Ok(BlockSize::Fixed { bytes: min_bytes });
    }
    Ok(BlockSize::Range {
        min_bytes,
        max_bytes,
    })
}

const BSSPLIT_EXPECTED: &str = "SIZE/PERCENT entries joined by `:`, e.g. 4k/60:64k/40 \
     (a PERCENT left out, as in 4k/50:8k/:16k/, is an equal part of the rest), or a READ;WRITE \
     pair of such lists";

/// Parses `bssplit`: fio's `SIZE/PERCENT:SIZE/PERCENT...`, or a read part and a write part.
/// fio separates the parts with a comma, which a spec uses between keys, so here it is `;`.
/// The percentages' sums are checked with the rest of the spec (`SyntheticSpec::check`).
fn parse_bssplit(value: &str) -> Result<BlockSize, String> {
    let parts: Vec<&str> = value.split(';').collect();
    match parts[..] {
        [all] => Ok(BlockSize::Split {
            shares: parse_split_part(all)?,
        }),
        [read, write] => Ok(BlockSize::SplitPerOp {
            read: parse_split_part(read)?,
            write: parse_split_part(write)?,
        }),
        _ => Err(BSSPLIT_EXPECTED.into()),
    }
}

fn parse_split_part(part: &str) -> Result<Vec<SizeShare>, String> {
    part.split(':')
        .map(|entry| {
            let (size, percent) = match entry.split_once('/') {
                Some((size, percent)) => (size.trim(), percent.trim()),
                None => (entry.trim(), ""),
            };
            let bytes = parse_positive_size(size).map_err(|_| BSSPLIT_EXPECTED.to_string())?;
            let percent = match percent {
                "" => None,
                text => Some(parse_percent(text).map_err(|_| BSSPLIT_EXPECTED.to_string())?),
            };
            Ok(SizeShare { bytes, percent })
        })
        .collect()
}

fn parse_count(value: &str) -> Result<u64, String> {
    match split_number(value) {
        Some((number, "")) => Ok(number),
        _ => Err("a whole number".into()),
    }
}

fn parse_positive_count(value: &str) -> Result<u64, String> {
    match parse_count(value) {
        Ok(number) if number > 0 => Ok(number),
        _ => Err("a whole number of at least 1".into()),
    }
}

fn parse_percent(value: &str) -> Result<u8, String> {
    match parse_count(value) {
        Ok(number) if number <= 100 => Ok(number as u8),
        _ => Err("a whole percentage from 0 to 100".into()),
    }
}

fn parse_seed(value: &str) -> Result<u64, String> {
    let expected = "a whole number below 2^64, decimal or 0x-prefixed hexadecimal";
    match strip_prefix_ignore_case(value, "0x") {
        Some(hex) => u64::from_str_radix(hex, 16)
            .ok()
            .filter(|_| !hex.starts_with('+'))
            .ok_or_else(|| expected.into()),
        None => parse_count(value).map_err(|_| expected.into()),
    }
}

const DURATION_EXPECTED: &str =
    "a whole number with a unit ns, us, ms, s, m (minutes) or h, e.g. 500ms or 10s";

/// Parses a duration into nanoseconds. A unit is required: fio's default unit differs between
/// keys (seconds for runtime, microseconds for thinktime), so a bare number would be a trap.
pub fn parse_duration(value: &str) -> Result<u64, String> {
    let (number, unit) = split_number(value).ok_or_else(|| DURATION_EXPECTED.to_string())?;
    let ns_per_unit: u64 = match unit.to_ascii_lowercase().as_str() {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" | "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        _ => return Err(DURATION_EXPECTED.into()),
    };
    number
        .checked_mul(ns_per_unit)
        .ok_or_else(|| format!("{DURATION_EXPECTED}, below 584 years"))
}

fn parse_fraction(text: &str) -> Option<f64> {
    text.parse::<f64>().ok().filter(|f| f.is_finite())
}

fn parse_dist(value: &str) -> Result<AddressDist, String> {
    let expected = "uniform, permutation, zipf:THETA (THETA > 0, e.g. zipf:1.2) or \
                    hotcold:HOT_SPAN_FRACTION:HOT_ACCESS_FRACTION (each strictly between 0 and \
                    1, e.g. hotcold:0.2:0.8)";
    let mut parts = value.split(':');
    let kind = parts.next().unwrap_or("");
    let args: Vec<&str> = parts.collect();
    let dist = if kind.eq_ignore_ascii_case("uniform") && args.is_empty() {
        AddressDist::Uniform
    } else if kind.eq_ignore_ascii_case("permutation") && args.is_empty() {
        AddressDist::Permutation
    } else if kind.eq_ignore_ascii_case("zipf") && args.len() == 1 {
        let theta = parse_fraction(args[0]).ok_or_else(|| expected.to_string())?;
        AddressDist::Zipf { theta }
    } else if kind.eq_ignore_ascii_case("hotcold") && args.len() == 2 {
        let hot_span_fraction = parse_fraction(args[0]).ok_or_else(|| expected.to_string())?;
        let hot_access_fraction = parse_fraction(args[1]).ok_or_else(|| expected.to_string())?;
        AddressDist::HotCold {
            hot_span_fraction,
            hot_access_fraction,
        }
    } else {
        return Err(expected.into());
    };
    check_dist(dist).map_err(|_| expected.to_string())?;
    Ok(dist)
}
