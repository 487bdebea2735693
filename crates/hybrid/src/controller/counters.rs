//! The controller's counters: what the host asked for and who served it, and the child
//! requests by side and cause; `HybridDevice::counters` lists them with those the cache map,
//! the flushing and the promotions keep.

use super::flush::FlushCause;
use super::HybridDevice;
use crate::fanout::Side;
use storsim_core::{CounterDescriptor, DeviceCounter, Op, Scope, Unit};

/// The flush causes as the per-cause counters name them (`FlushCause::name`).
pub const FLUSH_CAUSES: &[&str] = &["on_demand", "space", "low_watermark", "idle"];

/// Host reads the flash served whole.
pub const HOST_READS_FLASH: CounterDescriptor = CounterDescriptor::new(
    "host_reads_flash",
    Unit::Count,
    "Host reads the flash served whole.",
);

/// Host reads the disk served whole.
pub const HOST_READS_DISK: CounterDescriptor = CounterDescriptor::new(
    "host_reads_disk",
    Unit::Count,
    "Host reads the disk served whole.",
);

/// Host reads served by both.
pub const HOST_READS_SPLIT: CounterDescriptor = CounterDescriptor::new(
    "host_reads_split",
    Unit::Count,
    "Host reads served by both.",
);

/// Host writes the flash took whole.
pub const HOST_WRITES_FLASH: CounterDescriptor = CounterDescriptor::new(
    "host_writes_flash",
    Unit::Count,
    "Host writes the flash took whole.",
);

/// Host writes the disk took whole.
pub const HOST_WRITES_DISK: CounterDescriptor = CounterDescriptor::new(
    "host_writes_disk",
    Unit::Count,
    "Host writes the disk took whole.",
);

/// Host writes split between both.
pub const HOST_WRITES_SPLIT: CounterDescriptor = CounterDescriptor::new(
    "host_writes_split",
    Unit::Count,
    "Host writes split between both.",
);

/// Bytes flushed to the disk, by the flush's cause.
pub const FLUSH_BYTES: CounterDescriptor = CounterDescriptor::family(
    "flush_{}_bytes",
    Unit::Bytes,
    Scope::PerKey(FLUSH_CAUSES),
    "Bytes flushed to the disk for the cause.",
);

/// The controller's own counters, in `counter_list`'s order; each child's follow under
/// `flash_` and `disk_`, described by the child.
pub const COUNTERS: &[CounterDescriptor] = &[
    HOST_READS_FLASH,
    HOST_READS_DISK,
    HOST_READS_SPLIT,
    HOST_WRITES_FLASH,
    HOST_WRITES_DISK,
    HOST_WRITES_SPLIT,
    CounterDescriptor::new("host_trims", Unit::Count, "Host trims."),
    CounterDescriptor::new("host_flushes", Unit::Count, "Host flushes."),
    CounterDescriptor::new(
        "read_blocks",
        Unit::Blocks,
        "Cache blocks host reads touched.",
    ),
    CounterDescriptor::new(
        "read_blocks_hit",
        Unit::Blocks,
        "Of those, blocks the flash served whole.",
    ),
    CounterDescriptor::new(
        "read_hit_ratio",
        Unit::Ratio,
        "Read blocks hit over read blocks; 0 before any read.",
    ),
    CounterDescriptor::new(
        "write_blocks_flash",
        Unit::Blocks,
        "Cache blocks host writes put on the flash.",
    ),
    CounterDescriptor::family(
        "flush_{}_cleanups",
        Unit::Count,
        Scope::PerKey(FLUSH_CAUSES),
        "Flushes started for the cause.",
    ),
    FLUSH_BYTES,
    CounterDescriptor::new("evicted_blocks", Unit::Blocks, "Cache blocks evicted."),
    CounterDescriptor::new(
        "promoted_blocks",
        Unit::Blocks,
        "Blocks promoted to the flash.",
    ),
    CounterDescriptor::new(
        "promotion_dropped_blocks",
        Unit::Blocks,
        "Promotions dropped before they were made.",
    ),
    CounterDescriptor::new(
        "invalidated_blocks",
        Unit::Blocks,
        "Cache blocks invalidated by writes around the cache or trims.",
    ),
    CounterDescriptor::new("cache_blocks", Unit::Blocks, "Cache slots on the flash."),
    CounterDescriptor::new(
        "dirty_blocks",
        Unit::Blocks,
        "Cache blocks not yet flushed to the disk, at the end.",
    ),
    CounterDescriptor::family(
        "to_flash_{}_requests",
        Unit::Count,
        Scope::PerKey(&["host", "flush", "promote"]),
        "Child requests sent to the flash for the cause.",
    ),
    CounterDescriptor::family(
        "to_flash_{}_bytes",
        Unit::Bytes,
        Scope::PerKey(&["host", "flush", "promote"]),
        "Child bytes sent to the flash for the cause.",
    ),
    CounterDescriptor::family(
        "to_disk_{}_requests",
        Unit::Count,
        Scope::PerKey(&["host", "flush"]),
        "Child requests sent to the disk for the cause.",
    ),
    CounterDescriptor::family(
        "to_disk_{}_bytes",
        Unit::Bytes,
        Scope::PerKey(&["host", "flush"]),
        "Child bytes sent to the disk for the cause.",
    ),
    CounterDescriptor::new(
        "child_refusals",
        Unit::Count,
        "Child requests a child refused with an error other than a full queue (a failed child).",
    ),
];

/// The counters of children's errors in background work, listed when a child has a faults
/// layer.
pub const FAULT_COUNTERS: &[CounterDescriptor] = &[
    CounterDescriptor::new(
        "flush_failed_jobs",
        Unit::Count,
        "Flushes (a flash read, then a disk write) whose read or write failed (with faults under a child only).",
    ),
    CounterDescriptor::new(
        "flush_failed_blocks",
        Unit::Blocks,
        "The blocks those flushes carried, at each failed attempt (with faults under a child only).",
    ),
    CounterDescriptor::new(
        "flush_given_up_blocks",
        Unit::Blocks,
        "Blocks whose third flush attempt failed (with faults under a child only).",
    ),
    CounterDescriptor::new(
        "unflushable_blocks",
        Unit::Blocks,
        "Dirty blocks no longer flushed, at the end (with faults under a child only).",
    ),
    CounterDescriptor::new(
        "bypassed_writes",
        Unit::Count,
        "Host writes sent around a cache that unflushable blocks filled (with faults under a child only).",
    ),
    CounterDescriptor::new(
        "promotion_failed_blocks",
        Unit::Blocks,
        "Blocks not cached because fetching or copying them failed (with faults under a child only).",
    ),
];

/// Why the controller sent a child request, for the per-cause traffic counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ChildCause {
    /// Part of a host request.
    Host,
    /// A flush job's read or write.
    Flush,
    /// A promotion's flash write.
    Promote,
}

impl ChildCause {
    const ALL: [ChildCause; 3] = [ChildCause::Host, ChildCause::Flush, ChildCause::Promote];

    fn index(self) -> usize {
        self as usize
    }

    fn name(self) -> &'static str {
        match self {
            ChildCause::Host => "host",
            ChildCause::Flush => "flush",
            ChildCause::Promote => "promote",
        }
    }
}

#[derive(Default)]
pub(super) struct Counts {
    /// Host requests by op (read, write) and by who served them: flash, disk, both.
    served: [[u64; 3]; 2],
    trims: u64,
    flushes: u64,
    pub(super) read_blocks: u64,
    pub(super) read_blocks_hit: u64,
    pub(super) write_blocks_flash: u64,
    /// Child requests and bytes: [side][cause].
    child_requests: [[u64; 3]; 2],
    child_bytes: [[u64; 3]; 2],
    /// Host writes sent around a cache whose space unflushable blocks hold.
    pub(super) bypassed_writes: u64,
}

impl Counts {
    /// A host request of `op` completed; `served` is `Parent::served_index`.
    pub(super) fn host_done(&mut self, op: Op, served: usize) {
        match op {
            Op::Read => self.served[0][served] += 1,
            Op::Write => self.served[1][served] += 1,
            Op::Trim => self.trims += 1,
            Op::Flush => self.flushes += 1,
        }
    }

    /// A child request of `len_bytes` went to `side` for `cause`.
    pub(super) fn child_request(&mut self, side: Side, cause: ChildCause, len_bytes: u64) {
        self.child_requests[side.index()][cause.index()] += 1;
        self.child_bytes[side.index()][cause.index()] += len_bytes;
    }

    /// The share of read blocks the flash served whole; 0 before any read.
    fn read_hit_ratio(&self) -> f64 {
        if self.read_blocks == 0 {
            0.0
        } else {
            self.read_blocks_hit as f64 / self.read_blocks as f64
        }
    }
}

impl HybridDevice {
    /// Every counter, in the order results list them.
    pub(super) fn counter_list(&self) -> Vec<DeviceCounter> {
        let c = &self.counts;
        let mut out = Vec::new();
        let mut push = |name: &str, value: f64| out.push(DeviceCounter::new(name, value));
        for (op, row) in ["read", "write"].iter().zip(c.served.iter()) {
            push(&format!("host_{op}s_flash"), row[0] as f64);
            push(&format!("host_{op}s_disk"), row[1] as f64);
            push(&format!("host_{op}s_split"), row[2] as f64);
        }
        push("host_trims", c.trims as f64);
        push("host_flushes", c.flushes as f64);
        push("read_blocks", c.read_blocks as f64);
        push("read_blocks_hit", c.read_blocks_hit as f64);
        push("read_hit_ratio", c.read_hit_ratio());
        push("write_blocks_flash", c.write_blocks_flash as f64);
        for cause in FlushCause::ALL {
            push(
                &format!("flush_{}_cleanups", cause.name()),
                self.flush.cleanups(cause) as f64,
            );
            push(
                &format!("flush_{}_bytes", cause.name()),
                self.flush.flushed_bytes(cause) as f64,
            );
        }
        push("evicted_blocks", self.cache.evicted_blocks() as f64);
        push("promoted_blocks", self.promotions.promoted_blocks() as f64);
        push(
            "promotion_dropped_blocks",
            self.promotions.dropped_blocks() as f64,
        );
        push("invalidated_blocks", self.cache.invalidated_blocks() as f64);
        push("cache_blocks", self.cache.slot_count() as f64);
        push("dirty_blocks", self.cache.dirty_blocks() as f64);
        for side in [Side::Flash, Side::Disk] {
            for cause in ChildCause::ALL {
                // Only the flash receives promotions.
                if cause == ChildCause::Promote && side == Side::Disk {
                    continue;
                }
                let (s, k) = (side.index(), cause.index());
                push(
                    &format!("to_{}_{}_requests", side.name(), cause.name()),
                    c.child_requests[s][k] as f64,
                );
                push(
                    &format!("to_{}_{}_bytes", side.name(), cause.name()),
                    c.child_bytes[s][k] as f64,
                );
            }
        }
        push("child_refusals", self.fanout.refusals() as f64);
        if self.fault_counters {
            push("flush_failed_jobs", self.flush.failed_jobs() as f64);
            push("flush_failed_blocks", self.flush.failed_blocks() as f64);
            push("flush_given_up_blocks", self.flush.given_up_blocks() as f64);
            push("unflushable_blocks", self.cache.unflushable_blocks() as f64);
            push("bypassed_writes", c.bypassed_writes as f64);
            push(
                "promotion_failed_blocks",
                self.promotions.failed_blocks() as f64,
            );
        }
        self.fanout.child_counters(&mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_requests_count_by_op_and_by_who_served_them() {
        let mut c = Counts::default();
        c.host_done(Op::Read, 0);
        c.host_done(Op::Read, 2);
        c.host_done(Op::Write, 1);
        c.host_done(Op::Trim, 2);
        c.host_done(Op::Flush, 2);
        assert_eq!(c.served, [[1, 0, 1], [0, 1, 0]]);
        assert_eq!((c.trims, c.flushes), (1, 1));
    }

    #[test]
    fn child_requests_count_by_side_and_cause() {
        let mut c = Counts::default();
        c.child_request(Side::Disk, ChildCause::Flush, 4096);
        c.child_request(Side::Disk, ChildCause::Flush, 8192);
        c.child_request(Side::Flash, ChildCause::Promote, 512);
        assert_eq!(c.child_requests, [[0, 0, 1], [0, 2, 0]]);
        assert_eq!(c.child_bytes, [[0, 0, 512], [0, 12288, 0]]);
    }

    #[test]
    fn the_hit_ratio_is_zero_before_any_read() {
        let mut c = Counts::default();
        assert_eq!(c.read_hit_ratio(), 0.0);
        c.read_blocks = 4;
        c.read_blocks_hit = 1;
        assert_eq!(c.read_hit_ratio(), 0.25);
    }
}

#[cfg(test)]
mod counter_docs {
    /// The model's page lists exactly these counters (`STORSIM_BLESS_DOCS=1` rewrites it).
    #[test]
    fn the_page_lists_exactly_the_descriptors() {
        let tables = storsim_core::conformance::counter_tables(&[
            ("hybrid", super::COUNTERS),
            ("hybrid-faults", super::FAULT_COUNTERS),
        ]);
        storsim_testenv::check_counter_tables("docs/models/hybrid.md", &tables).unwrap();
    }
}
