//! Synthetic workloads from a fio-like spec, and the vdbench profiles of the co-simulation
//! thesis.
//!
//! ```
//! use storsim_workload::synthetic;
//!
//! let spec = synthetic::parse("synthetic:rw=randwrite,bs=4k,iodepth=32,requests=1000,seed=7")?;
//! let workload = synthetic::build(&spec, 1 << 30, 1)?;
//! assert_eq!(
//!     workload.name,
//!     "synthetic:rw=randwrite,percentage_random=100,bs=4k,align=4k,dist=uniform,iodepth=32,\
//!      thinktime=0ns,requests=1000,span=1g,offset=0,seed=7"
//! );
//! assert_eq!(workload.records.count(), 1000);
//! # Ok::<(), storsim_workload::WorkloadError>(())
//! ```
//!
//! `parse` turns text into a [`SyntheticSpec`] (plain data); `build` checks it against the
//! device and returns a [`crate::Workload`] whose records are generated on the fly, in constant
//! memory, at a few nanoseconds per record. The key reference is [`spec_help`] and
//! `docs/workloads/synthetic.md`.

mod address;
mod generator;
mod parse;
mod spec;
mod vdbench;

pub use generator::build;
pub use parse::{parse, parse_duration, parse_size};
pub use spec::{
    AccessPattern, AddressDist, Arrival, BlockSize, Limit, Load, OpMix, SizeShare, SyntheticSpec,
};
pub use vdbench::{vdbench_profiles, VdbenchProfile};

pub(crate) use spec::check_split as check_split_shares;

/// The key reference, for the command line's help text.
pub fn spec_help() -> &'static str {
    SPEC_HELP
}

const SPEC_HELP: &str = "\
Synthetic workloads: synthetic:key=value,key=value,...  (the prefix is optional)
  rw=MODE            read | write | rw (= readwrite: sequential mix) | randread | randwrite |
                     randrw (random mix) | trim | randtrim | trimwrite | randtrimwrite (a
                     trim, then a write of the same range; counted as one). Default read.
  rwmixread=PCT      percent of reads in a mix (rw or randrw), each request drawn
                     independently. Default 50.
  percentage_random=PCT  random modes only: percent of requests placed at random; the others
                     continue where the previous request ended. Default 100.
  bs=SIZE|LOW-HIGH   request size, or sizes drawn uniformly from the multiples of LOW in
                     [LOW, HIGH] (HIGH a multiple of LOW). Default 4k.
  bssplit=SPLIT      instead of bs: sizes drawn with the given percentages, fio's syntax
                     SIZE/PCT:SIZE/PCT..., e.g. 4k/60:64k/40 (they sum to 100; a PCT left out,
                     as in 4k/50:8k/:16k/, is an equal part of the rest). Mixed workloads may
                     give a read part and a write part: READ_SPLIT;WRITE_SPLIT (fio's comma).
  align=SIZE         random modes only: random offsets are offset + a multiple of this.
                     Default bs (the lower bound of a range, the smallest size of a split).
  dist=DIST          random modes only: uniform | permutation (every slot once per pass, in
                     a seeded order: fio's random map) | zipf:THETA (popularity of rank k is
                     proportional to k^-THETA; ranks scattered over the span by a seeded
                     permutation) | hotcold:HOT_SPAN:HOT_ACCESSES (the first HOT_SPAN fraction of
                     the span gets the HOT_ACCESSES fraction of the accesses). Default uniform.
  fsync=N            a flush after every N writes (fio's fsync). Default none.
  iodepth=N          closed loop with N requests outstanding. Default 1 (when iops is absent).
  thinktime=TIME     closed loop: delay between a completion and the next issue. Default 0ns.
  iops=N             open loop at N requests per second on average (excludes iodepth).
  arrival=KIND       open loop: poisson (exponential gaps) | fixed (gaps of 1e9/N ns).
                     Default poisson.
  requests=N         number of reads and writes. Default 100000 when bytes and duration are absent.
  bytes=SIZE|span    instead of requests: requests until their sizes add up to SIZE (fio's
                     size), or to the span's length: one pass over the span.
  duration=TIME      simulated run time instead of a request count.
  span=SIZE          length of the address range. Default: from offset to the device's end.
  offset=SIZE        first byte of the address range. Default 0.
  seed=N             generator seed (decimal or 0x hex). Default: the run's seed.
  SIZE: 512, 4k, 4KiB, 1m, 8g, 1t (binary units, case-insensitive).
  TIME: whole number with a unit: ns, us, ms, s, m (minutes), h, e.g. 500ms, 10s, 2m.
  Sequential requests start at offset and start over there when the next one would cross the
  span's end.

vdbench profiles of the co-simulation thesis: vdbench:ACCESS-RW-SIZE[,key=value...]
  ACCESS random (uniform over the device, 4k aligned) | mixed (80% random, 20% continue where
  the previous request ended); RW read | write | rw (50/50); SIZE small (4k) | large (128k) |
  uniform (4k steps in [4k, 128k]). Closed loop. Only these keys can be given:
  iodepth (default 8, vdbench's default thread count), requests or duration (default 3m, as
  in the thesis), seed.
";
