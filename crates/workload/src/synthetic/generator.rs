//! Turns a [`SyntheticSpec`] into a [`Workload`]: checks it against the device, resolves the
//! defaults that depend on the device and the caller, and streams the records.
//!
//! Each aspect of a record (operation, size, position, arrival time) draws from its own
//! sub-stream of the seed, so that changing one key (say `rwmixread`) leaves the other aspects of
//! the sequence unchanged and two runs that differ in one key stay comparable.

use super::address::Positions;
use super::spec::{
    block_size_key, format_block_size, format_size, spec_error, split_fractions, AccessPattern,
    Arrival, BlockSize, Limit, Load, OpMix, SizeShare, SyntheticSpec,
};
use crate::{Origin, Pacing, Record, Workload, WorkloadError};
use std::cell::Cell;
use std::rc::Rc;
use storsim_core::{Op, Prng};

/// Sub-stream numbers for [`Prng::fork`].
const OP_STREAM: u64 = 1;
const SIZE_STREAM: u64 = 2;
const PLACEMENT_STREAM: u64 = 3;
const TIME_STREAM: u64 = 4;
const SCATTER_STREAM: u64 = 5;

const NS_PER_S: u64 = 1_000_000_000;

/// The threshold `p * 2^64 / 100`, which a uniform 64-bit draw falls below with probability
/// `p / 100`: comparing a raw draw is cheaper than converting it to a float. `p` must be below
/// 100, because 2^64 itself does not fit.
fn percent_threshold(percent: u8) -> u64 {
    ((u128::from(percent) << 64) / 100) as u64
}

/// Builds the workload a spec describes on a device of `capacity_bytes`. `default_seed` is used
/// when the spec has no `seed`.
pub fn build(
    spec: &SyntheticSpec,
    capacity_bytes: u64,
    default_seed: u64,
) -> Result<Workload, WorkloadError> {
    spec.check()?;
    let layout = Layout::new(spec, capacity_bytes)?;
    let seed = spec.seed.unwrap_or(default_seed);
    let name = canonical_name(spec, &layout, seed);
    let (pacing, think_ns) = match spec.load {
        Load::Closed { iodepth, think_ns } => (Pacing::Closed { depth: iodepth }, think_ns),
        Load::Open { .. } => (Pacing::Open, 0),
    };
    let duration_ns = match spec.limit {
        Limit::Duration { duration_ns } => Some(duration_ns),
        Limit::Requests { .. } | Limit::Bytes { .. } | Limit::Span => None,
    };
    let generator = Generator::new(spec, &layout, seed, think_ns);
    Ok(Workload {
        name,
        records: Box::new(generator),
        pacing,
        origin: Origin::Index,
        duration_ns,
        skipped: Rc::new(Cell::new(0)),
        ignored: Rc::new(Cell::new(0)),
        format: None,
        seed: Some(seed),
        detected_from: None,
    })
}

/// Where requests may go, resolved against the device.
struct Layout {
    span_start: u64,
    span_bytes: u64,
    align_bytes: u64,
    /// Number of random start positions: those where the largest request still fits.
    slots: u64,
}

impl Layout {
    fn new(spec: &SyntheticSpec, capacity_bytes: u64) -> Result<Layout, WorkloadError> {
        let label = "synthetic workload";
        if capacity_bytes == 0 {
            return Err(spec_error(format!(
                "{label}: the device has no capacity (0 bytes)"
            )));
        }
        let capacity = format!("{capacity_bytes} bytes = {}", format_size(capacity_bytes));
        let span_start = spec.offset_bytes;
        if span_start >= capacity_bytes {
            return Err(spec_error(format!(
                "{label}: offset={}: expected an offset inside the device ({capacity})",
                format_size(span_start)
            )));
        }
        let span_bytes = spec.span_bytes.unwrap_or(capacity_bytes - span_start);
        if span_bytes > capacity_bytes - span_start {
            return Err(spec_error(format!(
                "{label}: span={} with offset={}: expected a span that fits the device \
                 ({capacity}); at most {} from this offset",
                format_size(span_bytes),
                format_size(span_start),
                format_size(capacity_bytes - span_start)
            )));
        }
        let max_block_bytes = spec.block_size.max_bytes();
        if max_block_bytes > span_bytes {
            return Err(spec_error(format!(
                "{label}: {}={}: expected requests no larger than the span ({span_bytes} bytes \
                 = {})",
                block_size_key(&spec.block_size),
                format_block_size(&spec.block_size),
                format_size(span_bytes)
            )));
        }
        let align_bytes = match spec.pattern {
            AccessPattern::Random {
                align_bytes: Some(align),
                ..
            } => align,
            _ => spec.block_size.min_bytes(),
        };
        let slots = (span_bytes - max_block_bytes) / align_bytes + 1;
        Ok(Layout {
            span_start,
            span_bytes,
            align_bytes,
            slots,
        })
    }
}

/// The spec with every default resolved, as text. An unmodified vdbench profile keeps its short
/// form, which implies the whole device and the profile's alignment.
fn canonical_name(spec: &SyntheticSpec, layout: &Layout, seed: u64) -> String {
    let mut named = spec.clone();
    named.seed = Some(seed);
    let short = named.to_string();
    if short.starts_with("vdbench:") {
        return short;
    }
    named.vdbench = None;
    named.span_bytes = Some(layout.span_bytes);
    if named.limit == Limit::Span {
        named.limit = Limit::Bytes {
            bytes: layout.span_bytes,
        };
    }
    if let AccessPattern::Random { align_bytes, .. } = &mut named.pattern {
        *align_bytes = Some(layout.align_bytes);
    }
    named.to_string()
}

enum OpChooser {
    Always(Op),
    /// Read when a raw draw is below `read_below`.
    Mixed {
        read_below: u64,
    },
}

enum SizeChooser {
    Fixed(u64),
    /// `min_bytes * (1 + uniform draw below steps)`.
    Steps {
        min_bytes: u64,
        steps: u64,
    },
    /// A `bssplit`: one table for every request.
    Table(SizeTable),
    /// A `bssplit` with a read part and a write part.
    TablePerOp {
        read: SizeTable,
        write: SizeTable,
    },
}

/// A `bssplit` part ready to draw from: the size whose cumulative threshold a raw 64-bit draw
/// first falls below, as [`percent_threshold`] does for one probability.
struct SizeTable {
    /// `(threshold, bytes)` for every size with a share except the last, thresholds rising:
    /// the cumulative share up to and including that size, times 2^64.
    below: Vec<(u64, u64)>,
    /// The last size with a share, drawn when the draw passes every threshold.
    last_bytes: u64,
}

impl SizeTable {
    fn new(shares: &[SizeShare]) -> SizeTable {
        let (numerators, denominator) = split_fractions(shares);
        // Sizes with no share are never drawn; leaving them out keeps the scan short and
        // makes the last size one that has a share.
        let drawn: Vec<(u64, u64)> = shares
            .iter()
            .zip(numerators)
            .filter(|(_, numerator)| *numerator > 0)
            .map(|(share, numerator)| (share.bytes, numerator))
            .collect();
        let (&(last_bytes, _), rest) = drawn
            .split_last()
            .expect("a checked split has a size with a share");
        let mut cumulative = 0u64;
        let below = rest
            .iter()
            .map(|&(bytes, numerator)| {
                cumulative += numerator;
                // Below the denominator, because the last size's share is still to come, so
                // the threshold fits in 64 bits.
                let threshold = ((u128::from(cumulative) << 64) / u128::from(denominator)) as u64;
                (threshold, bytes)
            })
            .collect();
        SizeTable { below, last_bytes }
    }

    #[inline]
    fn draw(&self, rng: &mut Prng) -> u64 {
        let draw = rng.next_u64();
        self.below
            .iter()
            .find(|(threshold, _)| draw < *threshold)
            .map_or(self.last_bytes, |(_, bytes)| *bytes)
    }
}

enum Placement {
    Sequential,
    /// Random positions, except that a raw draw below `sequential_below` continues where the
    /// previous request ended (never when it is 0).
    Random {
        positions: Positions,
        sequential_below: u64,
    },
}

/// Arrival times. Timestamps are whole nanoseconds; the fractions are carried forward so that
/// the sum over millions of requests does not drift from the requested rate.
enum Clock {
    /// Closed loop: the engine issues on completions, so every timestamp is 0.
    Closed,
    /// Inter-arrival `whole_ns + remainder / iops` ns, the carry counting in units of 1 / iops.
    Fixed {
        whole_ns: u64,
        remainder: u64,
        iops: u64,
        carry: u64,
    },
    Poisson {
        mean_ns: f64,
        carry_ns: f64,
    },
}

struct Generator {
    /// Reads and writes generated so far.
    index: u64,
    /// Index of the first request not generated (`u64::MAX`: no count limit).
    end_index: u64,
    /// Bytes of the reads and writes generated so far, and how many end the stream
    /// (`u64::MAX`: no byte limit).
    bytes: u64,
    end_bytes: u64,
    /// A flush after every this many writes (`u64::MAX`: never), the writes since the last
    /// one, and whether a flush is due before the next request.
    fsync_writes: u64,
    writes_since_flush: u64,
    flush_due: bool,
    /// Trim-and-write pairs: each trim's range, written next.
    trim_then_write: bool,
    pending_write: Option<(u64, u64)>,
    /// Records generated so far, flushes included: the next record's position.
    records: u64,
    /// Open loop with a duration: the first timestamp not generated (`u64::MAX`: none).
    end_time_ns: u64,
    now_ns: u64,
    think_ns: u64,
    span_start: u64,
    span_end: u64,
    align_bytes: u64,
    /// Where a sequential request starts: the end of the previous request.
    next_sequential: u64,
    ops: OpChooser,
    sizes: SizeChooser,
    placement: Placement,
    clock: Clock,
    op_rng: Prng,
    size_rng: Prng,
    placement_rng: Prng,
    time_rng: Prng,
}

impl Generator {
    fn new(spec: &SyntheticSpec, layout: &Layout, seed: u64, think_ns: u64) -> Generator {
        let root = Prng::new(seed);
        let ops = match spec.ops {
            OpMix::Read | OpMix::Mixed { read_percent: 100 } => OpChooser::Always(Op::Read),
            OpMix::Write | OpMix::Mixed { read_percent: 0 } => OpChooser::Always(Op::Write),
            OpMix::Trim | OpMix::TrimWrite => OpChooser::Always(Op::Trim),
            OpMix::Mixed { read_percent } => OpChooser::Mixed {
                read_below: percent_threshold(read_percent),
            },
        };
        let sizes = match &spec.block_size {
            &BlockSize::Fixed { bytes } => SizeChooser::Fixed(bytes),
            &BlockSize::Range {
                min_bytes,
                max_bytes,
            } => SizeChooser::Steps {
                min_bytes,
                steps: max_bytes / min_bytes,
            },
            BlockSize::Split { shares } => SizeChooser::Table(SizeTable::new(shares)),
            BlockSize::SplitPerOp { read, write } => SizeChooser::TablePerOp {
                read: SizeTable::new(read),
                write: SizeTable::new(write),
            },
        };
        let placement = match spec.pattern {
            AccessPattern::Sequential
            | AccessPattern::Random {
                random_percent: 0, ..
            } => Placement::Sequential,
            AccessPattern::Random {
                random_percent,
                dist,
                ..
            } => Placement::Random {
                positions: Positions::new(dist, layout.slots, &mut root.fork(SCATTER_STREAM)),
                sequential_below: percent_threshold(100 - random_percent),
            },
        };
        let clock = match spec.load {
            Load::Closed { .. } => Clock::Closed,
            Load::Open {
                iops,
                arrival: Arrival::Fixed,
            } => Clock::Fixed {
                whole_ns: NS_PER_S / iops,
                remainder: NS_PER_S % iops,
                iops,
                carry: 0,
            },
            Load::Open {
                iops,
                arrival: Arrival::Poisson,
            } => Clock::Poisson {
                mean_ns: NS_PER_S as f64 / iops as f64,
                carry_ns: 0.0,
            },
        };
        let (end_index, end_time_ns) = match (spec.limit, spec.load) {
            (Limit::Requests { count }, _) => (count, u64::MAX),
            (Limit::Bytes { .. } | Limit::Span, _) => (u64::MAX, u64::MAX),
            (Limit::Duration { duration_ns }, Load::Open { .. }) => (u64::MAX, duration_ns),
            // A closed loop's pace depends on the device, so only the engine knows when the
            // duration is over; the stream is unbounded.
            (Limit::Duration { .. }, Load::Closed { .. }) => (u64::MAX, u64::MAX),
        };
        let end_bytes = match spec.limit {
            Limit::Bytes { bytes } => bytes,
            Limit::Span => layout.span_bytes,
            _ => u64::MAX,
        };
        Generator {
            index: 0,
            end_index,
            bytes: 0,
            end_bytes,
            fsync_writes: spec.fsync_writes.unwrap_or(u64::MAX),
            writes_since_flush: 0,
            flush_due: false,
            trim_then_write: spec.ops == OpMix::TrimWrite,
            pending_write: None,
            records: 0,
            end_time_ns,
            now_ns: 0,
            think_ns,
            span_start: layout.span_start,
            span_end: layout.span_start + layout.span_bytes,
            align_bytes: layout.align_bytes,
            next_sequential: layout.span_start,
            ops,
            sizes,
            placement,
            clock,
            op_rng: root.fork(OP_STREAM),
            size_rng: root.fork(SIZE_STREAM),
            placement_rng: root.fork(PLACEMENT_STREAM),
            time_rng: root.fork(TIME_STREAM),
        }
    }

    #[inline]
    fn sequential_start(&self, len_bytes: u64) -> u64 {
        // The block size never exceeds the span, so a request that starts over at the span's
        // start always fits.
        // Written as a subtraction so that a span ending near 2^64 cannot overflow;
        // `next_sequential` never passes `span_end`.
        if len_bytes <= self.span_end - self.next_sequential {
            self.next_sequential
        } else {
            self.span_start
        }
    }

    #[inline]
    fn advance_clock(&mut self) {
        match &mut self.clock {
            Clock::Closed => {}
            Clock::Fixed {
                whole_ns,
                remainder,
                iops,
                carry,
            } => {
                // `carry` stays below `iops`, because `remainder` is below `iops`.
                *carry += *remainder;
                let extra = u64::from(*carry >= *iops);
                *carry -= extra * *iops;
                self.now_ns = self.now_ns.saturating_add(*whole_ns + extra);
            }
            Clock::Poisson { mean_ns, carry_ns } => {
                let gap_ns = self.time_rng.exponential(*mean_ns) + *carry_ns;
                // The gap is never negative, so truncation is the floor (and cheaper than
                // `floor`, which is a library call on baseline x86-64). The conversion
                // saturates, so even an absurd gap cannot wrap.
                let whole_ns = gap_ns as u64;
                *carry_ns = gap_ns - whole_ns as f64;
                self.now_ns = self.now_ns.saturating_add(whole_ns);
            }
        }
    }
}

impl Generator {
    /// The record of a request at the current time, counting a write towards the next flush.
    /// The clock moves on after it unless a flush or the write of a trim-and-write pair
    /// follows: those are issued with it, as fio issues them.
    fn emit(&mut self, op: Op, offset_bytes: u64, len_bytes: u64) -> Record {
        let record = Record {
            timestamp_ns: self.now_ns,
            op,
            offset_bytes,
            len_bytes,
            dev: 0,
            think_ns: self.think_ns,
            origin: self.records,
        };
        self.records += 1;
        if op == Op::Write {
            self.writes_since_flush += 1;
            if self.writes_since_flush == self.fsync_writes {
                self.writes_since_flush = 0;
                self.flush_due = true;
            }
        }
        if !self.flush_due && self.pending_write.is_none() {
            self.advance_clock();
        }
        record
    }

    /// The flush due after a write: no bytes, at the write's arrival, with the think time a
    /// request of the workload has.
    fn flush(&mut self) -> Record {
        self.flush_due = false;
        let record = Record {
            timestamp_ns: self.now_ns,
            op: Op::Flush,
            offset_bytes: 0,
            len_bytes: 0,
            dev: 0,
            think_ns: self.think_ns,
            origin: self.records,
        };
        self.records += 1;
        self.advance_clock();
        record
    }
}

impl Iterator for Generator {
    type Item = Result<Record, WorkloadError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        // The write of a trim-and-write pair goes before anything else: the pair counts once.
        if let Some((offset_bytes, len_bytes)) = self.pending_write.take() {
            return Some(Ok(self.emit(Op::Write, offset_bytes, len_bytes)));
        }
        if self.index >= self.end_index
            || self.bytes >= self.end_bytes
            || self.now_ns >= self.end_time_ns
        {
            return None;
        }
        // A flush due goes before the next request, so a stream that ends with the Nth write
        // ends without one, as fio's does.
        if self.flush_due {
            return Some(Ok(self.flush()));
        }
        let op = match self.ops {
            OpChooser::Always(op) => op,
            OpChooser::Mixed { read_below } => {
                if self.op_rng.next_u64() < read_below {
                    Op::Read
                } else {
                    Op::Write
                }
            }
        };
        let len_bytes = match &self.sizes {
            SizeChooser::Fixed(bytes) => *bytes,
            SizeChooser::Steps { min_bytes, steps } => {
                min_bytes * (1 + self.size_rng.below(*steps))
            }
            SizeChooser::Table(table) => table.draw(&mut self.size_rng),
            // A split per operation is for mixed workloads, whose requests are reads and writes.
            SizeChooser::TablePerOp { read, write } => match op {
                Op::Write => write.draw(&mut self.size_rng),
                Op::Read | Op::Trim | Op::Flush => read.draw(&mut self.size_rng),
            },
        };
        let random_offset = match &mut self.placement {
            Placement::Sequential => None,
            Placement::Random {
                positions,
                sequential_below,
            } => {
                if *sequential_below != 0 && self.placement_rng.next_u64() < *sequential_below {
                    None
                } else {
                    Some(
                        self.span_start
                            + positions.slot(&mut self.placement_rng) * self.align_bytes,
                    )
                }
            }
        };
        let offset_bytes = random_offset.unwrap_or_else(|| self.sequential_start(len_bytes));
        self.next_sequential = offset_bytes + len_bytes;
        self.index += 1;
        self.bytes = self.bytes.saturating_add(len_bytes);
        if self.trim_then_write {
            self.pending_write = Some((offset_bytes, len_bytes));
        }
        Some(Ok(self.emit(op, offset_bytes, len_bytes)))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.fsync_writes != u64::MAX || self.end_bytes != u64::MAX || self.trim_then_write {
            // Flushes and a byte limit make the count depend on the draws, and a pair is two
            // records.
            return (0, None);
        }
        let remaining = usize::try_from(self.end_index - self.index).ok();
        match (self.end_time_ns, self.end_index) {
            (u64::MAX, u64::MAX) => (usize::MAX, None),
            (u64::MAX, _) => (remaining.unwrap_or(usize::MAX), remaining),
            _ => (0, remaining),
        }
    }
}
