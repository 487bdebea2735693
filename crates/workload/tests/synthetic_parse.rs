//! Parsing of synthetic and vdbench specs: every key, units, defaults, canonical names and the
//! error messages for bad input.

use storsim_core::Prng;
use storsim_workload::synthetic::{
    self, AccessPattern, AddressDist, Arrival, BlockSize, Limit, Load, OpMix, SizeShare,
    SyntheticSpec,
};
use storsim_workload::{Pacing, Record, WorkloadError};

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;
const KIB: u64 = 1 << 10;

fn parse_ok(text: &str) -> SyntheticSpec {
    match synthetic::parse(text) {
        Ok(spec) => spec,
        Err(e) => panic!("`{text}` should parse: {e}"),
    }
}

#[test]
fn empty_spec_means_all_defaults() {
    for text in ["", "synthetic:", "  synthetic:  "] {
        let spec = parse_ok(text);
        assert_eq!(spec.ops, OpMix::Read, "{text:?}");
        assert_eq!(spec.pattern, AccessPattern::Sequential, "{text:?}");
        assert_eq!(spec.block_size, BlockSize::Fixed { bytes: 4096 });
        assert_eq!(
            spec.load,
            Load::Closed {
                iodepth: 1,
                think_ns: 0
            }
        );
        assert_eq!(spec.limit, Limit::Requests { count: 100_000 });
        assert_eq!(spec.span_bytes, None);
        assert_eq!(spec.offset_bytes, 0);
        assert_eq!(spec.seed, None);
        assert_eq!(spec.vdbench, None);
    }
}

#[test]
fn prefix_is_optional_and_case_insensitive() {
    let plain = parse_ok("rw=randwrite,bs=8k");
    assert_eq!(parse_ok("synthetic:rw=randwrite,bs=8k"), plain);
    assert_eq!(parse_ok("SYNTHETIC:rw=randwrite,bs=8k"), plain);
    assert_eq!(parse_ok("  rw = RandWrite , BS = 8K  "), plain);
}

#[test]
fn rw_values_map_to_pattern_and_ops() {
    let random = AccessPattern::Random {
        random_percent: 100,
        dist: AddressDist::Uniform,
        align_bytes: None,
    };
    let cases = [
        ("read", AccessPattern::Sequential, OpMix::Read),
        ("write", AccessPattern::Sequential, OpMix::Write),
        (
            "rw",
            AccessPattern::Sequential,
            OpMix::Mixed { read_percent: 50 },
        ),
        (
            "readwrite",
            AccessPattern::Sequential,
            OpMix::Mixed { read_percent: 50 },
        ),
        ("randread", random, OpMix::Read),
        ("randwrite", random, OpMix::Write),
        ("randrw", random, OpMix::Mixed { read_percent: 50 }),
    ];
    for (value, pattern, ops) in cases {
        let spec = parse_ok(&format!("rw={value}"));
        assert_eq!((spec.pattern, spec.ops), (pattern, ops), "rw={value}");
    }
    // fio's long key name.
    assert_eq!(parse_ok("readwrite=randrw"), parse_ok("rw=randrw"));
}

#[test]
fn mix_and_randomness_keys() {
    let spec = parse_ok("rw=randrw,rwmixread=70,percentage_random=80");
    assert_eq!(spec.ops, OpMix::Mixed { read_percent: 70 });
    assert_eq!(
        spec.pattern,
        AccessPattern::Random {
            random_percent: 80,
            dist: AddressDist::Uniform,
            align_bytes: None
        }
    );
    assert_eq!(
        parse_ok("rw=rw,rwmixread=0").ops,
        OpMix::Mixed { read_percent: 0 }
    );
    assert_eq!(
        parse_ok("rw=rw,rwmixread=100").ops,
        OpMix::Mixed { read_percent: 100 }
    );
}

#[test]
fn size_suffixes() {
    let cases = [
        ("512", 512),
        ("4096", 4096),
        ("4k", 4 * KIB),
        ("4K", 4 * KIB),
        ("4kb", 4 * KIB),
        ("4KiB", 4 * KIB),
        ("4kib", 4 * KIB),
        ("1m", MIB),
        ("1MiB", MIB),
        ("3M", 3 * MIB),
        ("2g", 2 * GIB),
        ("2GiB", 2 * GIB),
        ("1t", 1 << 40),
        ("100b", 100),
    ];
    for (text, bytes) in cases {
        assert_eq!(
            parse_ok(&format!("bs={text}")).block_size,
            BlockSize::Fixed { bytes },
            "bs={text}"
        );
        assert_eq!(
            parse_ok(&format!("span={text}")).span_bytes,
            Some(bytes),
            "span={text}"
        );
        assert_eq!(
            parse_ok(&format!("offset={text}")).offset_bytes,
            bytes,
            "offset={text}"
        );
    }
    assert_eq!(parse_ok("offset=0").offset_bytes, 0);
}

#[test]
fn block_size_ranges() {
    assert_eq!(
        parse_ok("bs=4k-128k").block_size,
        BlockSize::Range {
            min_bytes: 4 * KIB,
            max_bytes: 128 * KIB
        }
    );
    assert_eq!(
        parse_ok("bs=512-4KiB").block_size,
        BlockSize::Range {
            min_bytes: 512,
            max_bytes: 4096
        }
    );
    assert_eq!(
        parse_ok("bs=8k-8k").block_size,
        BlockSize::Fixed { bytes: 8 * KIB }
    );
}

fn shares(entries: &[(u64, Option<u8>)]) -> Vec<SizeShare> {
    entries
        .iter()
        .map(|&(bytes, percent)| SizeShare { bytes, percent })
        .collect()
}

#[test]
fn bssplit_lists_sizes_with_percentages() {
    assert_eq!(
        parse_ok("bssplit=4k/10:64k/50:32k/40").block_size,
        BlockSize::Split {
            shares: shares(&[
                (4 * KIB, Some(10)),
                (64 * KIB, Some(50)),
                (32 * KIB, Some(40))
            ])
        }
    );
    // A size without a percentage (with or without the slash) gets an equal part of the rest.
    assert_eq!(
        parse_ok("BSSPLIT = 4k/50:8k/:16K").block_size,
        BlockSize::Split {
            shares: shares(&[(4 * KIB, Some(50)), (8 * KIB, None), (16 * KIB, None)])
        }
    );
    assert_eq!(
        parse_ok("bssplit=1m").block_size,
        BlockSize::Split {
            shares: shares(&[(MIB, None)])
        }
    );
    assert_eq!(
        parse_ok("rw=randrw,bssplit=4k/50:8k/50;64k/100").block_size,
        BlockSize::SplitPerOp {
            read: shares(&[(4 * KIB, Some(50)), (8 * KIB, Some(50))]),
            write: shares(&[(64 * KIB, Some(100))]),
        }
    );
    let spec = parse_ok("bssplit=512/25:128k/75");
    assert_eq!(spec.block_size.min_bytes(), 512);
    assert_eq!(spec.block_size.max_bytes(), 128 * KIB);
}

#[test]
fn align_and_dist() {
    let spec = parse_ok("rw=randread,align=512,dist=zipf:1.2");
    assert_eq!(
        spec.pattern,
        AccessPattern::Random {
            random_percent: 100,
            dist: AddressDist::Zipf { theta: 1.2 },
            align_bytes: Some(512)
        }
    );
    let AccessPattern::Random { dist, .. } = parse_ok("rw=randread,dist=hotcold:0.2:0.8").pattern
    else {
        panic!("random pattern expected");
    };
    assert_eq!(
        dist,
        AddressDist::HotCold {
            hot_span_fraction: 0.2,
            hot_access_fraction: 0.8
        }
    );
    let AccessPattern::Random { dist, .. } = parse_ok("rw=randread,dist=UNIFORM").pattern else {
        panic!("random pattern expected");
    };
    assert_eq!(dist, AddressDist::Uniform);
}

#[test]
fn pacing_keys() {
    assert_eq!(
        parse_ok("iodepth=32").load,
        Load::Closed {
            iodepth: 32,
            think_ns: 0
        }
    );
    assert_eq!(
        parse_ok("iodepth=4,thinktime=50us").load,
        Load::Closed {
            iodepth: 4,
            think_ns: 50_000
        }
    );
    assert_eq!(
        parse_ok("thinktime=2ms").load,
        Load::Closed {
            iodepth: 1,
            think_ns: 2_000_000
        }
    );
    assert_eq!(
        parse_ok("iops=1000").load,
        Load::Open {
            iops: 1000,
            arrival: Arrival::Poisson
        }
    );
    assert_eq!(
        parse_ok("iops=1000,arrival=fixed").load,
        Load::Open {
            iops: 1000,
            arrival: Arrival::Fixed
        }
    );
    assert_eq!(
        parse_ok("iops=5,arrival=Poisson").load,
        Load::Open {
            iops: 5,
            arrival: Arrival::Poisson
        }
    );
}

#[test]
fn limit_keys_and_duration_units() {
    assert_eq!(parse_ok("requests=5").limit, Limit::Requests { count: 5 });
    let cases = [
        ("7ns", 7),
        ("100us", 100_000),
        ("100µs", 100_000),
        ("500ms", 500_000_000),
        ("10s", 10_000_000_000),
        ("2m", 120_000_000_000),
        ("2min", 120_000_000_000),
        ("1h", 3_600_000_000_000),
    ];
    for (text, duration_ns) in cases {
        assert_eq!(
            parse_ok(&format!("duration={text}")).limit,
            Limit::Duration { duration_ns },
            "{text}"
        );
    }
}

#[test]
fn seed_key() {
    assert_eq!(parse_ok("seed=7").seed, Some(7));
    assert_eq!(parse_ok("seed=0xff").seed, Some(255));
    assert_eq!(parse_ok("seed=18446744073709551615").seed, Some(u64::MAX));
}

#[test]
fn canonical_name_resolves_every_default() {
    let cases = [
        (
            "rw=randwrite",
            "synthetic:rw=randwrite,percentage_random=100,bs=4k,align=4k,dist=uniform,iodepth=1,\
             thinktime=0ns,requests=100000,span=1g,offset=0,seed=42",
        ),
        (
            "",
            "synthetic:rw=read,bs=4k,iodepth=1,thinktime=0ns,requests=100000,span=1g,offset=0,seed=42",
        ),
        (
            "rw=randrw,bs=4k-128k,offset=1m,iops=500,duration=2m",
            "synthetic:rw=randrw,rwmixread=50,percentage_random=100,bs=4k-128k,align=4k,\
             dist=uniform,iops=500,arrival=poisson,duration=120s,span=1023m,offset=1m,seed=42",
        ),
        (
            "rw=rw,rwmixread=30,bs=1000,thinktime=1500us,requests=9,seed=3",
            "synthetic:rw=rw,rwmixread=30,bs=1000,iodepth=1,thinktime=1500us,requests=9,span=1g,\
             offset=0,seed=3",
        ),
        (
            "rw=randread,dist=zipf:1.2,align=512,span=8m,iodepth=32",
            "synthetic:rw=randread,percentage_random=100,bs=4k,align=512,dist=zipf:1.2,\
             iodepth=32,thinktime=0ns,requests=100000,span=8m,offset=0,seed=42",
        ),
        (
            "rw=randwrite,bssplit=64k/50:4k:8k/",
            "synthetic:rw=randwrite,percentage_random=100,bssplit=64k/50:4k/:8k/,align=4k,\
             dist=uniform,iodepth=1,thinktime=0ns,requests=100000,span=1g,offset=0,seed=42",
        ),
        (
            "rw=rw,bssplit=4k/100;1m/100",
            "synthetic:rw=rw,rwmixread=50,bssplit=4k/100;1m/100,iodepth=1,thinktime=0ns,\
             requests=100000,span=1g,offset=0,seed=42",
        ),
    ];
    for (text, expected) in cases {
        let workload = synthetic::build(&parse_ok(text), GIB, 42).expect("build");
        assert_eq!(workload.name, expected, "name of `{text}`");
    }
}

#[test]
fn canonical_name_round_trips_to_the_same_records() {
    let specs = [
        "rw=randrw,rwmixread=70,bs=4k-64k,dist=hotcold:0.1:0.9,iops=1234,arrival=fixed,requests=2000",
        "rw=randwrite,dist=zipf:0.9,percentage_random=60,span=32m,offset=4m,iodepth=8",
        "rw=rw,bs=8k,thinktime=10us,duration=3s",
        "vdbench:mixed-rw-uniform,iodepth=3",
        "vdbench:random-write-large,requests=1000",
        "rw=randrw,bssplit=4k/62:16k/:64k/;128k/30:512k/70,iops=300",
        "rw=randwrite,bs=8k,fsync=16,bytes=3m,iodepth=4",
        "rw=randtrimwrite,bs=8k,fsync=3,requests=100",
        "rw=trim,bs=64k,bytes=span",
        "rw=randread,dist=permutation,bs=16k,requests=3000,span=16m",
    ];
    for text in specs {
        let first = synthetic::build(&parse_ok(text), 4 * GIB, 11).expect("build");
        let reparsed = parse_ok(&first.name);
        // A different default seed must not matter: the name carries the seed.
        let second = synthetic::build(&reparsed, 4 * GIB, 99).expect("rebuild");
        assert_eq!(second.name, first.name, "`{text}`");
        assert_eq!(second.pacing, first.pacing, "`{text}`");
        assert_eq!(second.duration_ns, first.duration_ns, "`{text}`");
        let a: Vec<Record> = first.records.take(1000).map(|r| r.unwrap()).collect();
        let b: Vec<Record> = second.records.take(1000).map(|r| r.unwrap()).collect();
        assert_eq!(
            a, b,
            "`{text}` and its canonical name generate different records"
        );
    }
}

#[test]
fn display_round_trips_unresolved_specs() {
    for text in [
        "rw=randrw,rwmixread=10,bs=512-8k,dist=zipf:1.05,iops=77",
        "rw=write,bs=1m,offset=1g,duration=250ms",
        "rw=randread,dist=hotcold:0.25:0.75,align=8k",
        "vdbench:random-rw-small",
        "vdbench:mixed-read-large,iodepth=1,requests=5,seed=9",
        "rw=write,bssplit=8k/39:16k/24:32k/20:64k/10:128k/4:256k/3",
        "rw=randrw,bssplit=4k/:8k;16k/0:32k/",
    ] {
        let spec = parse_ok(text);
        assert_eq!(parse_ok(&spec.to_string()), spec, "`{text}` -> `{spec}`");
    }
}

#[test]
fn build_reports_pacing_and_workload_fields() {
    let workload = synthetic::build(&parse_ok("iodepth=16,requests=3"), GIB, 5).unwrap();
    assert_eq!(workload.pacing, Pacing::Closed { depth: 16 });
    assert_eq!(workload.origin, storsim_workload::Origin::Index);
    assert_eq!(workload.seed, Some(5));
    assert_eq!(workload.duration_ns, None);
    let workload = synthetic::build(&parse_ok("iops=10,duration=1s,seed=8"), GIB, 5).unwrap();
    assert_eq!(workload.pacing, Pacing::Open);
    assert_eq!(workload.seed, Some(8));
    assert_eq!(workload.duration_ns, Some(1_000_000_000));
}

fn spec_error(result: Result<impl std::fmt::Debug, WorkloadError>, what: &str) -> String {
    match result {
        Err(WorkloadError::Spec { message }) => message,
        other => panic!("{what}: expected a Spec error, got {other:?}"),
    }
}

/// Bad workload specs, and the fragments each one's error must contain: the key and value,
/// and what would be right.
const BAD_SPECS: &[(&str, &[&str])] = &[
    ("rw=randomwrite", &["rw=randomwrite", "randwrite"]),
    ("rw=", &["rw=", "randread"]),
    ("bs=4x", &["bs=4x", "size"]),
    ("bs=k", &["bs=k", "size"]),
    ("bs=0", &["bs=0", "not zero"]),
    ("bs=4.5k", &["bs=4.5k"]),
    ("bs=4k-6k", &["bs=4k-6k", "multiple"]),
    ("bs=128k-4k", &["bs=128k-4k", "LOW-HIGH"]),
    ("bs=0-4k", &["bs=0-4k"]),
    ("bs=-4k", &["bs=-4k"]),
    ("bs=99999999999t", &["bs=99999999999t", "16 EiB"]),
    ("iodepth=0", &["iodepth=0", "1"]),
    ("iodepth=abc", &["iodepth=abc", "whole number"]),
    (
        "iodepth=99999999999",
        &["iodepth=99999999999", "queue depth"],
    ),
    ("rw=randrw,rwmixread=101", &["rwmixread=101", "0 to 100"]),
    (
        "rw=randread,rwmixread=50",
        &["rwmixread=50", "rw=randread", "mixed"],
    ),
    (
        "rw=randread,percentage_random=150",
        &["percentage_random=150", "0 to 100"],
    ),
    (
        "rw=read,percentage_random=50",
        &["percentage_random=50", "random", "rw=read"],
    ),
    (
        "rw=read,dist=zipf:1.2",
        &["dist=zipf:1.2", "random", "rw=read"],
    ),
    ("rw=write,align=4k", &["align=4k", "random", "rw=write"]),
    ("rw=randread,align=0", &["align=0", "not zero"]),
    ("rw=randread,dist=zipf", &["dist=zipf", "zipf:THETA"]),
    ("rw=randread,dist=zipf:0", &["dist=zipf:0", "THETA > 0"]),
    ("rw=randread,dist=zipf:-1", &["dist=zipf:-1"]),
    ("rw=randread,dist=zipf:nan", &["dist=zipf:nan"]),
    ("rw=randread,dist=zipf:inf", &["dist=zipf:inf"]),
    (
        "rw=randread,dist=hotcold:0.2",
        &["dist=hotcold:0.2", "HOT_SPAN_FRACTION"],
    ),
    (
        "rw=randread,dist=hotcold:1.5:0.8",
        &["dist=hotcold:1.5:0.8", "between 0 and 1"],
    ),
    ("rw=randread,dist=hotcold:0.2:0", &["dist=hotcold:0.2:0"]),
    (
        "rw=randread,dist=pareto:0.5",
        &["dist=pareto:0.5", "uniform"],
    ),
    ("iops=0", &["iops=0", "at least 1"]),
    ("iodepth=4,iops=100", &["iodepth=4", "iops=100", "exclude"]),
    ("iops=100,thinktime=5us", &["thinktime=5us", "closed-loop"]),
    ("arrival=fixed", &["arrival", "iops"]),
    (
        "iops=10,arrival=burst",
        &["arrival=burst", "poisson or fixed"],
    ),
    ("requests=0", &["requests=0", "at least 1"]),
    ("requests=1e6", &["requests=1e6", "whole number"]),
    (
        "requests=10,duration=1s",
        &[
            "requests=10",
            "duration=1s",
            "give one of requests, bytes and duration",
        ],
    ),
    (
        "bytes=1m,requests=10",
        &["requests=10", "bytes=1m", "exclude each other"],
    ),
    ("bytes=0", &["bytes=0", "not zero"]),
    ("rw=read,fsync=4", &["fsync=4", "a workload that writes"]),
    ("rw=write,fsync=0", &["fsync=0", "at least 1"]),
    ("duration=10", &["duration=10", "unit"]),
    ("duration=0s", &["duration=0s", "positive"]),
    ("duration=5parsecs", &["duration=5parsecs", "ns, us, ms, s"]),
    ("duration=999999999999h", &["duration=999999999999h"]),
    ("thinktime=5", &["thinktime=5", "unit"]),
    ("span=0", &["span=0", "not zero"]),
    ("span=8q", &["span=8q", "size"]),
    ("offset=-1", &["offset=-1", "size"]),
    ("seed=abc", &["seed=abc", "whole number"]),
    ("seed=0xZZ", &["seed=0xZZ", "hexadecimal"]),
    (
        "seed=99999999999999999999",
        &["seed=99999999999999999999", "2^64"],
    ),
    ("foo=1", &["unknown key `foo`", "rw, rwmixread"]),
    ("bs", &["`bs`", "key=value"]),
    ("bs=4k,,rw=read", &["empty item"]),
    ("bs=4k,", &["empty item"]),
    (",bs=4k", &["empty item"]),
    ("bs=4k,bs=8k", &["bs", "twice"]),
    (
        "bssplit=4k/50:8k/40",
        &["bssplit=4k/50:8k/40", "sum to 100", "sum to 90"],
    ),
    (
        "bssplit=4k/60:8k/50",
        &["bssplit=4k/60:8k/50", "sum to 100", "sum to 110"],
    ),
    (
        "bssplit=4k/100:8k/",
        &["bssplit=4k/100:8k/", "less than 100"],
    ),
    (
        "bssplit=4k/50:4k/50",
        &["bssplit=4k/50:4k/50", "4k is listed twice"],
    ),
    ("bssplit=4k/101", &["bssplit=4k/101", "SIZE/PERCENT"]),
    (
        "bssplit=4k/50.5:8k/49.5",
        &["bssplit=4k/50.5:8k/49.5", "SIZE/PERCENT"],
    ),
    ("bssplit=0/100", &["bssplit=0/100", "SIZE/PERCENT"]),
    ("bssplit=4q/100", &["bssplit=4q/100", "SIZE/PERCENT"]),
    ("bssplit=", &["bssplit=", "SIZE/PERCENT"]),
    (
        "bssplit=4k/50::8k/50",
        &["bssplit=4k/50::8k/50", "SIZE/PERCENT"],
    ),
    ("bssplit=4k;8k;16k", &["bssplit=4k;8k;16k", "READ;WRITE"]),
    (
        "rw=randrw,bssplit=4k/50:8k/50;16k/90",
        &["bssplit=4k/50:8k/50;16k/90", "sum to 90"],
    ),
    (
        "rw=randwrite,bssplit=4k/100;8k/100",
        &["bssplit=4k/100;8k/100", "mixed"],
    ),
    (
        "bs=4k,bssplit=4k/50:8k/50",
        &["bs=4k", "bssplit=4k/50:8k/50", "exclude each other"],
    ),
    ("rw=read,readwrite=write", &["rw", "twice"]),
    (
        "vdbench:random-read-tiny",
        &["random-read-tiny", "small|large|uniform"],
    ),
    ("vdbench:", &["unknown profile", "random|mixed"]),
    (
        "vdbench:random-read-small,bs=8k",
        &["bs=8k", "fixed by the profile", "iodepth"],
    ),
    (
        "vdbench:random-read-small,requests=5,duration=1s",
        &["requests=5", "duration=1s"],
    ),
    ("vdbench:random-read-small,", &["key=value"]),
    (
        "vdbench:random-read-small,iodepth=0",
        &["vdbench workload", "iodepth=0"],
    ),
    (
        "vdbench:random-read-small,wat=1",
        &["unknown key `wat`", "iodepth, requests, duration, seed"],
    ),
];

#[test]
fn bad_specs_name_the_key_and_value() {
    for (text, fragments) in BAD_SPECS {
        let message = spec_error(synthetic::parse(text), text);
        for fragment in *fragments {
            assert!(
                message.contains(fragment),
                "error for `{text}` is `{message}`, which does not contain `{fragment}`"
            );
        }
    }
}

#[test]
fn device_dependent_errors_name_the_key() {
    let cases: &[(&str, u64, &[&str])] = &[
        (
            "span=2g",
            GIB,
            &["span=2g", "fits the device", "1073741824 bytes"],
        ),
        ("offset=1g", GIB, &["offset=1g", "inside the device"]),
        ("offset=2g", GIB, &["offset=2g", "inside the device"]),
        (
            "offset=512m,span=768m",
            GIB,
            &["span=768m", "offset=512m", "at most 512m"],
        ),
        ("bs=8m,span=4m", GIB, &["bs=8m", "span", "4m"]),
        ("rw=randrw,bs=4k-2m", MIB, &["bs=4k-2m", "span", "1m"]),
        (
            "rw=randrw,bssplit=4k/50:2m/50",
            MIB,
            &["bssplit=4k/50:2m/50", "span", "1m"],
        ),
        ("rw=read", 0, &["capacity", "0 bytes"]),
    ];
    for (text, capacity, fragments) in cases {
        let spec = parse_ok(text);
        let message = spec_error(synthetic::build(&spec, *capacity, 1).map(|w| w.name), text);
        for fragment in *fragments {
            assert!(
                message.contains(fragment),
                "error for `{text}` on {capacity} bytes is `{message}`, missing `{fragment}`"
            );
        }
    }
}

#[test]
fn hand_built_invalid_specs_are_refused_by_build() {
    let valid = parse_ok("rw=randrw");
    let mut zero_bs = valid.clone();
    zero_bs.block_size = BlockSize::Fixed { bytes: 0 };
    let mut bad_range = valid.clone();
    bad_range.block_size = BlockSize::Range {
        min_bytes: 3000,
        max_bytes: 4096,
    };
    let mut bad_percent = valid.clone();
    bad_percent.ops = OpMix::Mixed { read_percent: 200 };
    let mut bad_theta = valid.clone();
    bad_theta.pattern = AccessPattern::Random {
        random_percent: 100,
        dist: AddressDist::Zipf { theta: -2.0 },
        align_bytes: None,
    };
    let mut zero_align = valid.clone();
    zero_align.pattern = AccessPattern::Random {
        random_percent: 100,
        dist: AddressDist::Uniform,
        align_bytes: Some(0),
    };
    let mut zero_depth = valid.clone();
    zero_depth.load = Load::Closed {
        iodepth: 0,
        think_ns: 0,
    };
    let mut zero_iops = valid.clone();
    zero_iops.load = Load::Open {
        iops: 0,
        arrival: Arrival::Fixed,
    };
    let mut zero_span = valid.clone();
    zero_span.span_bytes = Some(0);
    let share = |bytes: u64, percent: Option<u8>| SizeShare { bytes, percent };
    let mut short_split = valid.clone();
    short_split.block_size = BlockSize::Split {
        shares: vec![share(4096, Some(50)), share(8192, Some(40))],
    };
    let mut empty_split = valid.clone();
    empty_split.block_size = BlockSize::Split { shares: vec![] };
    let mut zero_split = valid.clone();
    zero_split.block_size = BlockSize::Split {
        shares: vec![share(0, Some(100))],
    };
    let mut write_only_per_op = parse_ok("rw=randwrite");
    write_only_per_op.block_size = BlockSize::SplitPerOp {
        read: vec![share(4096, Some(100))],
        write: vec![share(8192, Some(100))],
    };
    let cases = [
        (zero_bs, "bs=0"),
        (bad_range, "bs="),
        (bad_percent, "rwmixread=200"),
        (bad_theta, "zipf:-2"),
        (zero_align, "align=0"),
        (zero_depth, "iodepth=0"),
        (zero_iops, "iops=0"),
        (zero_span, "span=0"),
        (short_split, "bssplit=4k/50:8k/40"),
        (empty_split, "bssplit="),
        (zero_split, "bssplit=0/100"),
        (write_only_per_op, "bssplit=4k/100;8k/100"),
    ];
    for (spec, fragment) in cases {
        let message = spec_error(synthetic::build(&spec, GIB, 1).map(|w| w.name), fragment);
        assert!(
            message.contains(fragment),
            "`{message}` should mention `{fragment}`"
        );
    }
}

/// Random mutations of valid specs must produce a result or a Spec error, never a panic, and
/// whatever builds must generate records inside the device.
#[test]
fn no_spec_string_panics() {
    const PIECES: [&str; 44] = [
        "rw=",
        "randrw",
        "read",
        "rw",
        "bs=",
        "4k",
        "-",
        "128k",
        "0",
        "iodepth=",
        "iops=",
        "arrival=",
        "fixed",
        "poisson",
        "requests=",
        "duration=",
        "10ms",
        "span=",
        "offset=",
        "seed=",
        "dist=",
        "zipf:",
        "hotcold:",
        "0.5",
        ":",
        "1.2",
        "align=",
        "512",
        "percentage_random=",
        "50",
        "rwmixread=",
        ",",
        ",",
        "=",
        "thinktime=",
        "5us",
        "18446744073709551615",
        "µ",
        "vdbench:",
        "mixed-rw-uniform",
        "bssplit=",
        "/",
        ";",
        "4k/50",
    ];
    let seed = 2024;
    let mut rng = Prng::new(seed);
    let mut built = 0;
    for case in 0..20_000 {
        // A small device exercises the size checks, the largest one the arithmetic's limits.
        let capacity = if case % 2 == 0 { 1 << 20 } else { u64::MAX };
        let mut text = String::new();
        for _ in 0..rng.below(12) {
            text.push_str(PIECES[rng.below(PIECES.len() as u64) as usize]);
        }
        let Ok(spec) = synthetic::parse(&text) else {
            continue;
        };
        let Ok(workload) = synthetic::build(&spec, capacity, case) else {
            continue;
        };
        built += 1;
        for record in workload.records.take(20) {
            let record = record.expect("synthetic records never fail");
            assert!(
                record.len_bytes > 0 && record.len_bytes <= capacity - record.offset_bytes,
                "`{text}` (seed {seed}, case {case}) generated {record:?}"
            );
        }
    }
    assert!(
        built > 100,
        "only {built} random specs built; the fuzzer is not exercising build"
    );
}

/// The examples of docs/workloads/synthetic.md are specs that parse, so the page cannot drift
/// from the parser.
#[test]
fn the_documented_examples_parse() {
    let page = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/workloads/synthetic.md"
    );
    let text = std::fs::read_to_string(page).expect("docs/workloads/synthetic.md");
    let examples: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|line| line.starts_with("synthetic:"))
        .collect();
    assert!(examples.len() >= 8, "found only {examples:?}");
    for example in examples {
        let spec = parse_ok(example);
        synthetic::build(&spec, 64 * GIB, 1)
            .unwrap_or_else(|e| panic!("documented example `{example}` does not build: {e}"));
    }
}
