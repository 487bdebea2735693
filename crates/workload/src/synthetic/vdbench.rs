//! The 18 vdbench access profiles of the co-simulation thesis' evaluation, expressed as
//! synthetic specs.
//!
//! Each profile combines an access type (random, or mixed: 80 % random and 20 % sequential),
//! a read/write type (read, write, or 50/50) and a request size (4 KiB, 128 KiB, or uniform over
//! 4 KiB steps in [4 KiB, 128 KiB]). Random positions are uniform over the whole device. The
//! thesis runs every profile "at the maximal speed the device sustains" for three minutes,
//! which is a closed loop; its outstanding-request count is not stated, so the default is
//! vdbench's default thread count, 8.

use super::spec::{AccessPattern, AddressDist, BlockSize, Limit, Load, OpMix, SyntheticSpec};

/// One of the 18 vdbench profiles. Obtained from [`super::parse`] with a `vdbench:` spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VdbenchProfile {
    index: u8,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Access {
    Random,
    Mixed,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mix {
    Read,
    Write,
    ReadWrite,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Size {
    Small,
    Large,
    Uniform,
}

const ACCESSES: [(Access, &str); 2] = [(Access::Random, "random"), (Access::Mixed, "mixed")];
const MIXES: [(Mix, &str); 3] = [
    (Mix::Read, "read"),
    (Mix::Write, "write"),
    (Mix::ReadWrite, "rw"),
];
const SIZES: [(Size, &str); 3] = [
    (Size::Small, "small"),
    (Size::Large, "large"),
    (Size::Uniform, "uniform"),
];

/// The profile names, in the order of the thesis' tables (access, then read/write type, then
/// size). Index `i` is `ACCESSES[i / 9]`, `MIXES[i / 3 % 3]`, `SIZES[i % 3]`.
const NAMES: [&str; 18] = [
    "random-read-small",
    "random-read-large",
    "random-read-uniform",
    "random-write-small",
    "random-write-large",
    "random-write-uniform",
    "random-rw-small",
    "random-rw-large",
    "random-rw-uniform",
    "mixed-read-small",
    "mixed-read-large",
    "mixed-read-uniform",
    "mixed-write-small",
    "mixed-write-large",
    "mixed-write-uniform",
    "mixed-rw-small",
    "mixed-rw-large",
    "mixed-rw-uniform",
];

/// vdbench's default number of threads, used as the closed-loop depth.
const VDBENCH_DEFAULT_IODEPTH: u32 = 8;
/// The thesis runs each profile for three minutes.
const VDBENCH_DEFAULT_DURATION_NS: u64 = 180 * 1_000_000_000;
/// Share of mixed-profile requests that are placed at random; the rest continue sequentially.
const MIXED_RANDOM_PERCENT: u8 = 80;
const SMALL_BYTES: u64 = 4 << 10;
const LARGE_BYTES: u64 = 128 << 10;

/// The names of the 18 profiles, as accepted after `vdbench:`.
pub fn vdbench_profiles() -> Vec<&'static str> {
    NAMES.to_vec()
}

impl VdbenchProfile {
    /// Looks a profile up by name (`mixed-rw-uniform`), ignoring ASCII case.
    pub(crate) fn by_name(name: &str) -> Option<VdbenchProfile> {
        let position = NAMES
            .iter()
            .position(|candidate| candidate.eq_ignore_ascii_case(name))?;
        Some(VdbenchProfile {
            index: position as u8,
        })
    }

    /// The profile's name, e.g. `random-read-small`.
    pub fn name(self) -> &'static str {
        NAMES[self.index as usize]
    }

    fn parts(self) -> (Access, Mix, Size) {
        let i = self.index as usize;
        (ACCESSES[i / 9].0, MIXES[i / 3 % 3].0, SIZES[i % 3].0)
    }

    /// The synthetic spec the profile stands for, with the vdbench defaults for the keys a
    /// user may override (iodepth, requests or duration, seed).
    pub fn spec(self) -> SyntheticSpec {
        let (access, mix, size) = self.parts();
        let random_percent = match access {
            Access::Random => 100,
            Access::Mixed => MIXED_RANDOM_PERCENT,
        };
        let ops = match mix {
            Mix::Read => OpMix::Read,
            Mix::Write => OpMix::Write,
            Mix::ReadWrite => OpMix::Mixed { read_percent: 50 },
        };
        let block_size = match size {
            Size::Small => BlockSize::Fixed { bytes: SMALL_BYTES },
            Size::Large => BlockSize::Fixed { bytes: LARGE_BYTES },
            Size::Uniform => BlockSize::Range {
                min_bytes: SMALL_BYTES,
                max_bytes: LARGE_BYTES,
            },
        };
        SyntheticSpec {
            fsync_writes: None,
            ops,
            pattern: AccessPattern::Random {
                random_percent,
                dist: AddressDist::Uniform,
                align_bytes: Some(SMALL_BYTES),
            },
            block_size,
            load: Load::Closed {
                iodepth: VDBENCH_DEFAULT_IODEPTH,
                think_ns: 0,
            },
            limit: Limit::Duration {
                duration_ns: VDBENCH_DEFAULT_DURATION_NS,
            },
            span_bytes: None,
            offset_bytes: 0,
            seed: None,
            vdbench: Some(self),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_index_layout() {
        for (i, name) in NAMES.iter().enumerate() {
            let expected = format!(
                "{}-{}-{}",
                ACCESSES[i / 9].1,
                MIXES[i / 3 % 3].1,
                SIZES[i % 3].1
            );
            assert_eq!(*name, expected);
        }
    }
}
