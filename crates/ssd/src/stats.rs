//! The SSD's counters: host and flash traffic by cause, write amplification, erase-count
//! distribution, energy, utilisation, wear-out projection.

use crate::{Energy, SsdDevice};
use std::fmt;
use storsim_core::{
    BlockWear, CounterDescriptor, Described, DeviceCounter, Scope, SimDuration, Unit,
};
use storsim_flash::{FlashOpKind, NandArray, Utilisation};
use storsim_ftl::Cause;

/// Host pages read: with [`HOST_READ_UNMAPPED_PAGES`], what tells a run that measured no
/// flash reads (`storsim_sim::unmapped_reads`).
pub const HOST_READ_PAGES: CounterDescriptor =
    CounterDescriptor::new("host_read_pages", Unit::Pages, "Pages the host read.");

/// Host pages read that found no data.
pub const HOST_READ_UNMAPPED_PAGES: CounterDescriptor = CounterDescriptor::new(
    "host_read_unmapped_pages",
    Unit::Pages,
    "Host pages read that held no data (never written, or trimmed): no flash time; simulate warns above half the pages read.",
);

/// The causes of flash operations, as the per-cause counters name them (`Cause::name`).
pub const CAUSES: &[&str] = &["host", "gc", "merge", "mapping", "wear_level", "fold"];

/// The causes a device lists counters for: folding only with an SLC cache, the one thing that
/// folds.
fn causes(d: &SsdDevice) -> impl Iterator<Item = Cause> + Clone {
    let folds = d.params.slc_cache.is_some();
    Cause::ALL
        .into_iter()
        .filter(move |&c| c != Cause::Fold || folds)
}

/// Flash page reads by cause (host, garbage collection, ...).
pub const FLASH_READS_BY_CAUSE: CounterDescriptor = CounterDescriptor::family(
    "flash_reads_{}",
    Unit::Count,
    Scope::PerKey(CAUSES),
    "NAND page reads by cause.",
);

/// Flash page programs by cause.
pub const FLASH_PROGRAMS_BY_CAUSE: CounterDescriptor = CounterDescriptor::family(
    "flash_programs_{}",
    Unit::Count,
    Scope::PerKey(CAUSES),
    "NAND page programs by cause.",
);

/// Flash block erases by cause.
pub const FLASH_ERASES_BY_CAUSE: CounterDescriptor = CounterDescriptor::family(
    "flash_erases_{}",
    Unit::Count,
    Scope::PerKey(CAUSES),
    "NAND block erases by cause.",
);

/// Flash programs over host page writes.
pub const WRITE_AMPLIFICATION: CounterDescriptor = CounterDescriptor::new(
    "write_amplification",
    Unit::Factor,
    "Flash programs over host page writes.",
);

/// The flash array's idle energy.
pub const ENERGY_IDLE: CounterDescriptor = CounterDescriptor::new(
    "energy_idle_uj",
    Unit::Microjoules,
    "Idle energy: idle power times the mean fraction of dies idle over the run.",
);

/// Flash energy by the cause of the operations.
pub const ENERGY_BY_CAUSE: CounterDescriptor = CounterDescriptor::family(
    "energy_{}_uj",
    Unit::Microjoules,
    Scope::PerKey(CAUSES),
    "Energy of the cause's flash operations.",
);

/// The time the utilisations are over.
pub const UTILISATION_ELAPSED: CounterDescriptor = CounterDescriptor::new(
    "utilisation_elapsed_ns",
    Unit::Nanoseconds,
    "The time the utilisations are over: the last host completion so far.",
);

/// Each channel's busy fraction.
pub const CHANNEL_UTILISATION: CounterDescriptor = CounterDescriptor::family(
    "channel_{}_utilisation",
    Unit::Ratio,
    Scope::PerChannel,
    "The channel's busy fraction over the run.",
);

/// Each die's busy fraction.
pub const DIE_UTILISATION: CounterDescriptor = CounterDescriptor::family(
    "die_{}_utilisation",
    Unit::Ratio,
    Scope::PerDie,
    "The die's busy fraction over the run.",
);

/// The SSD's own counters; the FTL's follow them under `ftl_` (and, after preconditioning,
/// `precondition_ftl_`), described by the FTL.
pub const COUNTERS: &[CounterDescriptor] = &[
    HOST_READ_PAGES,
    HOST_READ_UNMAPPED_PAGES,
    CounterDescriptor::new(
        "host_write_pages",
        Unit::Pages,
        "Pages the host wrote.",
    ),
    CounterDescriptor::new(
        "host_trim_pages",
        Unit::Pages,
        "Pages the host trimmed.",
    ),
    FLASH_READS_BY_CAUSE,
    FLASH_PROGRAMS_BY_CAUSE,
    FLASH_ERASES_BY_CAUSE,
    CounterDescriptor::family(
        "die_time_{}_ns",
        Unit::Nanoseconds,
        Scope::PerKey(CAUSES),
        "Die time taken by the cause's operations (command to last byte out).",
    ),
    CounterDescriptor::new(
        "flash_reads",
        Unit::Count,
        "NAND page reads of every cause.",
    ),
    CounterDescriptor::new(
        "flash_programs",
        Unit::Count,
        "NAND page programs of every cause.",
    ),
    CounterDescriptor::new(
        "flash_erases",
        Unit::Count,
        "NAND block erases of every cause.",
    ),
    CounterDescriptor::new(
        "multi_plane_commands",
        Unit::Count,
        "Multi-plane commands placed; their pages are counted in the totals.",
    ),
    WRITE_AMPLIFICATION,
    CounterDescriptor::new(
        "erase_count_min",
        Unit::Count,
        "Fewest erases of a block over the array's life, preconditioning included.",
    ),
    CounterDescriptor::new(
        "erase_count_mean",
        Unit::Count,
        "Mean erases per block over the array's life, preconditioning included.",
    ),
    CounterDescriptor::new(
        "erase_count_max",
        Unit::Count,
        "Most erases of a block over the array's life, preconditioning included.",
    ),
    CounterDescriptor::new(
        "erase_count_stddev",
        Unit::Count,
        "Standard deviation of the blocks' erase counts.",
    ),
    CounterDescriptor::family(
        "erase_count_hist_{}",
        Unit::Blocks,
        Scope::PerBucket,
        "Blocks whose erase count falls in the bucket (0, 1, 2-3, 4-7, ...).",
    ),
    CounterDescriptor::new(
        "retired_blocks",
        Unit::Blocks,
        "Blocks past their endurance over the array's life.",
    ),
    CounterDescriptor::new(
        "energy_read_uj",
        Unit::Microjoules,
        "Energy of flash reads.",
    ),
    CounterDescriptor::new(
        "energy_program_uj",
        Unit::Microjoules,
        "Energy of flash programs.",
    ),
    CounterDescriptor::new(
        "energy_erase_uj",
        Unit::Microjoules,
        "Energy of flash erases.",
    ),
    ENERGY_IDLE,
    ENERGY_BY_CAUSE,
    CounterDescriptor::new(
        "energy_total_uj",
        Unit::Microjoules,
        "Energy of operations and idling together.",
    ),
    CounterDescriptor::new(
        "projected_wearout_s",
        Unit::Seconds,
        "Time until the erase budget runs out at this run's erase rate (only once the run erased).",
    ).sometimes(),
    CounterDescriptor::new(
        "projected_wearout_host_bytes",
        Unit::Bytes,
        "Host bytes written until the erase budget runs out at this run's rate (only once the run erased).",
    ).sometimes(),
    CounterDescriptor::new(
        "precondition_host_writes",
        Unit::Pages,
        "Logical pages preconditioning wrote.",
    ),
    CounterDescriptor::new(
        "precondition_flash_reads",
        Unit::Count,
        "Flash reads preconditioning caused.",
    ),
    CounterDescriptor::new(
        "precondition_flash_programs",
        Unit::Count,
        "Flash programs preconditioning caused.",
    ),
    CounterDescriptor::new(
        "precondition_erases",
        Unit::Count,
        "Block erases preconditioning caused.",
    ),
    CounterDescriptor::new(
        "background_gc_units",
        Unit::Count,
        "Units of the FTL's idle work done (garbage collection, folding the SLC cache).",
    ),
    UTILISATION_ELAPSED,
    CHANNEL_UTILISATION,
    DIE_UTILISATION,
];

/// The write-back buffer's counters (`flush_policy = "watermark"` only).
pub const BUFFER_COUNTERS: &[CounterDescriptor] = &[
    CounterDescriptor::new(
        "buffer_read_hit_pages",
        Unit::Pages,
        "Host pages read from the write-back buffer (`watermark` only).",
    ),
    CounterDescriptor::new(
        "buffer_write_hit_pages",
        Unit::Pages,
        "Host pages written over a dirty buffered page: coalesced, no program (`watermark` only).",
    ),
    CounterDescriptor::new(
        "buffer_destaged_pages",
        Unit::Pages,
        "Pages sent from the buffer to the FTL, for any reason (`watermark` only).",
    ),
    CounterDescriptor::new(
        "buffer_watermark_destaged_pages",
        Unit::Pages,
        "Pages destaged for crossing the high watermark or finding every slot dirty (`watermark` only).",
    ),
    CounterDescriptor::new(
        "buffer_flush_destaged_pages",
        Unit::Pages,
        "Pages destaged for Flush requests (`watermark` only).",
    ),
    CounterDescriptor::new(
        "buffer_idle_destaged_pages",
        Unit::Pages,
        "Pages destaged in idle time (`watermark` only).",
    ),
    CounterDescriptor::new(
        "buffer_trimmed_pages",
        Unit::Pages,
        "Dirty buffered pages dropped by a trim (`watermark` only).",
    ),
    CounterDescriptor::new(
        "buffer_write_through_pages",
        Unit::Pages,
        "Pages of writes larger than the buffer, programmed directly (`watermark` only).",
    ),
    CounterDescriptor::new(
        "buffer_full_waits",
        Unit::Count,
        "Write requests that found no free slot and waited for a program (`watermark` only).",
    ),
    CounterDescriptor::new(
        "buffer_dirty_pages_max",
        Unit::Pages,
        "The most dirty pages at once, after each write's destaging (`watermark` only).",
    ),
    CounterDescriptor::new(
        "buffer_dirty_pages",
        Unit::Pages,
        "Dirty pages left at the end (`watermark` only).",
    ),
];

/// The die scheduling policy's counters (any policy but `fifo`).
pub const DIE_SCHEDULING_COUNTERS: &[CounterDescriptor] = &[
    CounterDescriptor::new(
        "die_reads_ahead",
        Unit::Count,
        "Priority reads that went before queued flash work or suspended it (`die_scheduling` other than `fifo` only).",
    ),
    CounterDescriptor::new(
        "die_program_suspensions",
        Unit::Count,
        "Suspensions of in-flight programs opened for reads (`suspend` only; 0 otherwise).",
    ),
    CounterDescriptor::new(
        "die_erase_suspensions",
        Unit::Count,
        "Suspensions of in-flight erases opened for reads (`suspend` only; 0 otherwise).",
    ),
    CounterDescriptor::new(
        "die_suspended_ns",
        Unit::Nanoseconds,
        "Time added to suspended operations: the reads and the resume overhead (`suspend` only; 0 otherwise).",
    ),
];

/// Steady-state preconditioning's own figure.
pub const STEADY_STATE_COUNTERS: &[CounterDescriptor] = &[CounterDescriptor::new(
    "precondition_steady_state_waf",
    Unit::Factor,
    "Write amplification of steady-state preconditioning's last window (`steady-state` only).",
)];

/// Flash operations by kind (read, program, erase) and cause.
#[derive(Clone, Debug, Default)]
pub(crate) struct OpCounts {
    pub reads: [u64; Cause::ALL.len()],
    pub programs: [u64; Cause::ALL.len()],
    pub erases: [u64; Cause::ALL.len()],
    /// Die time taken by each cause's operations: the `gc` entry is the time garbage
    /// collection kept dies from host work.
    pub die_busy_ns: [u64; Cause::ALL.len()],
    pub host_read_pages: u64,
    /// Host pages read that held no data (never written, or trimmed): no flash time.
    pub host_read_unmapped_pages: u64,
    pub host_write_pages: u64,
    pub trim_pages: u64,
    /// Multi-plane commands placed (each also counts its pages' operations above).
    pub multi_plane_commands: u64,
}

impl OpCounts {
    #[inline]
    pub fn add(&mut self, kind: FlashOpKind, cause: Cause, die_busy: SimDuration) {
        let c = cause.index();
        self.die_busy_ns[c] += die_busy.as_ns();
        match kind {
            FlashOpKind::Read => self.reads[c] += 1,
            FlashOpKind::Program => self.programs[c] += 1,
            FlashOpKind::Erase => self.erases[c] += 1,
            // A copy-back reads and programs inside the die.
            FlashOpKind::CopyBack => {
                self.reads[c] += 1;
                self.programs[c] += 1;
            }
        }
    }
}

/// What a write-back buffer (`flush_policy = "watermark"`) did, in pages unless named otherwise.
#[derive(Clone, Debug, Default)]
pub(crate) struct BufferCounts {
    /// Host reads served from DRAM.
    pub read_hit_pages: u64,
    /// Host writes absorbed by a page already dirty in DRAM (coalesced: no program).
    pub write_hit_pages: u64,
    /// Pages sent to flash, for any reason.
    pub destaged_pages: u64,
    /// ... because dirty pages crossed the high watermark (or filled the buffer).
    pub watermark_destaged_pages: u64,
    /// ... because of a Flush request.
    pub flush_destaged_pages: u64,
    /// ... in idle time.
    pub idle_destaged_pages: u64,
    /// Dirty pages dropped by a trim.
    pub trimmed_pages: u64,
    /// Pages of writes larger than the buffer, programmed directly.
    pub write_through_pages: u64,
    /// Write requests that found no free slot and waited for a program to finish.
    pub full_waits: u64,
    /// The most dirty pages at once, after each write's destaging.
    pub dirty_pages_max: u64,
}

/// The name of an erase-count histogram bucket: 0, 1, 2-3, 4-7, ... powers of two.
struct EraseBucketLabel(usize);

impl fmt::Display for EraseBucketLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            i @ (0 | 1) => write!(f, "erase_count_hist_{i}"),
            i => write!(
                f,
                "erase_count_hist_{}_{}",
                1u64 << (i - 1),
                (1u64 << i) - 1
            ),
        }
    }
}

/// The counters as they are listed, in the order the report shows them: with their names, or
/// their values alone. A name is anything that formats (a `format_args!`), so that the values
/// alone, read at the end of every window of a time series, cost no formatting or allocation.
enum List<'v> {
    Named(&'v mut Vec<DeviceCounter>),
    Values(&'v mut Vec<f64>),
}

impl List<'_> {
    fn push(&mut self, name: impl fmt::Display, value: f64) {
        match self {
            List::Named(list) => list.push(DeviceCounter::new(name.to_string(), value)),
            List::Values(values) => values.push(value),
        }
    }
}

/// Flash operations of every cause together.
struct Totals {
    reads: u64,
    programs: u64,
    erases: u64,
}

/// The SSD's counters, section by section.
pub(crate) fn counters(d: &SsdDevice) -> Vec<DeviceCounter> {
    let mut counters = Vec::new();
    list(d, &mut List::Named(&mut counters));
    counters
}

/// The prefix of the FTL's counters among the SSD's, and of their values at the end of
/// preconditioning (listed when it wrote anything).
pub(crate) const FTL_PREFIX: &str = "ftl_";
pub(crate) const PRECONDITION_FTL_PREFIX: &str = "precondition_ftl_";

/// What each counter is: the SSD's own, then the FTL's under the prefixes the SSD lists them
/// with.
pub(crate) fn counter_descriptors(d: &SsdDevice) -> Vec<Described> {
    let ftl = d.ftl.counter_descriptors();
    let mut out: Vec<Described> = Described::all(COUNTERS).collect();
    if d.precondition.steady_state_waf.is_some() {
        out.extend(Described::all(STEADY_STATE_COUNTERS));
    }
    if d.scheduler.reorders() {
        out.extend(Described::all(DIE_SCHEDULING_COUNTERS));
    }
    if d.write_back.is_some() {
        out.extend(Described::all(BUFFER_COUNTERS));
    }
    // Preconditioning's FTL counters are listed when it wrote anything.
    let preconditioned = !d.precondition.ftl_counters.is_empty();
    for prefix in [PRECONDITION_FTL_PREFIX, FTL_PREFIX] {
        if prefix == FTL_PREFIX || preconditioned {
            out.extend(ftl.iter().map(|&f| Described::own(f).within(prefix)));
        }
    }
    out
}

/// The values of [`counters`], in their order, appended to `values`.
pub(crate) fn counter_values(d: &SsdDevice, values: &mut Vec<f64>) {
    list(d, &mut List::Values(values));
}

fn list(d: &SsdDevice, out: &mut List) {
    let c = &d.counts;
    let totals = traffic(out, c, causes(d));
    let nand = d.ftl.nand();
    erase_distribution(out, nand);
    let elapsed = d.last_host_finish.as_ns();
    let utilisation = d.scheduler.utilisation(SimDuration(elapsed));
    energy(
        out,
        &d.params.energy,
        c,
        causes(d),
        (&totals, &utilisation),
        elapsed,
    );
    projected_wearout(out, nand, c, &totals, elapsed, d.page_bytes);

    let p = &d.precondition;
    out.push("precondition_host_writes", p.host_writes as f64);
    out.push("precondition_flash_reads", p.flash_reads as f64);
    out.push("precondition_flash_programs", p.flash_programs as f64);
    out.push("precondition_erases", p.erases as f64);
    if let Some(w) = p.steady_state_waf {
        out.push("precondition_steady_state_waf", w);
    }
    for fc in &p.ftl_counters {
        out.push(
            format_args!("{PRECONDITION_FTL_PREFIX}{}", fc.name),
            fc.value,
        );
    }
    out.push("background_gc_units", d.idle_gc_units as f64);
    if d.scheduler.reorders() {
        let p = d.scheduler.die_policy_counts();
        out.push("die_reads_ahead", p.reads_ahead as f64);
        out.push("die_program_suspensions", p.program_suspensions as f64);
        out.push("die_erase_suspensions", p.erase_suspensions as f64);
        out.push("die_suspended_ns", p.suspended_ns as f64);
    }
    if let Some(wb) = &d.write_back {
        write_buffer(out, &d.buffer_counts, wb.dirty.len());
    }

    // The utilisations' common denominator, so that a reader of counters sampled over time
    // (the time series) can turn each back into busy time and take differences per window.
    out.push("utilisation_elapsed_ns", elapsed as f64);
    for (i, x) in utilisation.channel.iter().enumerate() {
        out.push(format_args!("channel_{i}_utilisation"), *x);
    }
    for (i, x) in utilisation.die.iter().enumerate() {
        out.push(format_args!("die_{i}_utilisation"), *x);
    }
    match out {
        List::Named(_) => {
            for fc in d.ftl.counters() {
                out.push(format_args!("{FTL_PREFIX}{}", fc.name), fc.value);
            }
        }
        List::Values(values) => d.ftl.counter_values(values),
    }
}

/// Host and flash traffic, flash operations and die time by cause, and write amplification.
fn traffic(out: &mut List, c: &OpCounts, causes: impl Iterator<Item = Cause>) -> Totals {
    out.push("host_read_pages", c.host_read_pages as f64);
    out.push(
        "host_read_unmapped_pages",
        c.host_read_unmapped_pages as f64,
    );
    out.push("host_write_pages", c.host_write_pages as f64);
    out.push("host_trim_pages", c.trim_pages as f64);
    for cause in causes {
        let i = cause.index();
        out.push(
            format_args!("flash_reads_{}", cause.name()),
            c.reads[i] as f64,
        );
        out.push(
            format_args!("flash_programs_{}", cause.name()),
            c.programs[i] as f64,
        );
        out.push(
            format_args!("flash_erases_{}", cause.name()),
            c.erases[i] as f64,
        );
        out.push(
            format_args!("die_time_{}_ns", cause.name()),
            c.die_busy_ns[i] as f64,
        );
    }
    let totals = Totals {
        reads: c.reads.iter().sum(),
        programs: c.programs.iter().sum(),
        erases: c.erases.iter().sum(),
    };
    out.push("flash_reads", totals.reads as f64);
    out.push("flash_programs", totals.programs as f64);
    out.push("flash_erases", totals.erases as f64);
    out.push("multi_plane_commands", c.multi_plane_commands as f64);
    let waf = if c.host_write_pages == 0 {
        0.0
    } else {
        totals.programs as f64 / c.host_write_pages as f64
    };
    out.push("write_amplification", waf);
    totals
}

/// Erase counts over the whole life of the array, preconditioning included: their
/// spread, a histogram in powers of two, and the blocks retired.
fn erase_distribution(out: &mut List, nand: &NandArray) {
    // Kept erase by erase in the array: reading them costs nothing per block, which matters
    // when the counters are read at the end of every window of a time series.
    let stats = nand.erase_stats();
    out.push("erase_count_min", stats.min() as f64);
    out.push("erase_count_mean", stats.mean());
    out.push("erase_count_max", stats.max() as f64);
    out.push("erase_count_stddev", stats.stddev());
    let hist = stats.power_of_two_histogram();
    let top = hist.iter().rposition(|&h| h > 0).unwrap_or(0);
    for (i, &h) in hist.iter().enumerate().take(top + 1) {
        out.push(EraseBucketLabel(i), h as f64);
    }
    out.push("retired_blocks", nand.retired_blocks() as f64);
}

/// Every block's erase count with the array's shape (the same counts as the erase
/// distribution above, unbinned).
pub(crate) fn block_wear(nand: &NandArray) -> BlockWear {
    let g = nand.geometry();
    BlockWear {
        unit: String::new(),
        channels: g.channels,
        chips_per_channel: g.chips_per_channel,
        dies_per_chip: g.dies_per_chip,
        planes_per_die: g.planes_per_die,
        blocks_per_plane: g.blocks_per_plane,
        pages_per_block: g.pages_per_block,
        erase_counts: nand.erase_counts().to_vec(),
    }
}

/// Energy by operation type, idle, by cause, and in total, over the `elapsed_ns` the host's
/// requests took.
fn energy(
    out: &mut List,
    e: &Energy,
    c: &OpCounts,
    causes: impl Iterator<Item = Cause>,
    (totals, utilisation): (&Totals, &Utilisation),
    elapsed_ns: u64,
) {
    let read_uj = totals.reads as f64 * e.read_uj;
    let program_uj = totals.programs as f64 * e.program_uj;
    let erase_uj = totals.erases as f64 * e.erase_uj;
    // Idle power is drawn by each die while it runs no operation: the device's idle power
    // times the mean fraction of dies idle, over the run.
    let dies = utilisation.die.len().max(1) as f64;
    let idle_fraction = utilisation.die.iter().map(|u| 1.0 - u).sum::<f64>() / dies;
    let idle_uj = e.idle_power_w * idle_fraction * elapsed_ns as f64 / 1e9 * 1e6;
    out.push("energy_read_uj", read_uj);
    out.push("energy_program_uj", program_uj);
    out.push("energy_erase_uj", erase_uj);
    out.push("energy_idle_uj", idle_uj);
    for cause in causes {
        let i = cause.index();
        let uj = c.reads[i] as f64 * e.read_uj
            + c.programs[i] as f64 * e.program_uj
            + c.erases[i] as f64 * e.erase_uj;
        out.push(format_args!("energy_{}_uj", cause.name()), uj);
    }
    out.push("energy_total_uj", read_uj + program_uj + erase_uj + idle_uj);
}

/// When the device would wear out at this workload's erase rate, in time and in host bytes
/// written; nothing when the run erased nothing or took no time.
fn projected_wearout(
    out: &mut List,
    nand: &NandArray,
    c: &OpCounts,
    totals: &Totals,
    elapsed_ns: u64,
    page_bytes: u64,
) {
    let budget = nand.endurance() as f64 * nand.erase_counts().len() as f64;
    let used = nand.total_erases() as f64;
    if totals.erases > 0 && elapsed_ns > 0 {
        let rate_per_s = totals.erases as f64 / (elapsed_ns as f64 / 1e9);
        out.push("projected_wearout_s", (budget - used).max(0.0) / rate_per_s);
        let host_bytes = c.host_write_pages as f64 * page_bytes as f64;
        out.push(
            "projected_wearout_host_bytes",
            (budget - used).max(0.0) / totals.erases as f64 * host_bytes,
        );
    }
}

/// What the write-back buffer did, and the `dirty_pages` it holds at the end.
fn write_buffer(out: &mut List, b: &BufferCounts, dirty_pages: u64) {
    for (name, value) in [
        ("buffer_read_hit_pages", b.read_hit_pages),
        ("buffer_write_hit_pages", b.write_hit_pages),
        ("buffer_destaged_pages", b.destaged_pages),
        (
            "buffer_watermark_destaged_pages",
            b.watermark_destaged_pages,
        ),
        ("buffer_flush_destaged_pages", b.flush_destaged_pages),
        ("buffer_idle_destaged_pages", b.idle_destaged_pages),
        ("buffer_trimmed_pages", b.trimmed_pages),
        ("buffer_write_through_pages", b.write_through_pages),
        ("buffer_full_waits", b.full_waits),
        ("buffer_dirty_pages_max", b.dirty_pages_max),
        ("buffer_dirty_pages", dirty_pages),
    ] {
        out.push(name, value as f64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_per_cause_families_name_every_cause() {
        let names: Vec<&str> = Cause::ALL.iter().map(|c| c.name()).collect();
        assert_eq!(names, CAUSES);
    }
}

#[cfg(test)]
mod counter_docs {
    /// The model's page lists exactly these counters (`STORSIM_BLESS_DOCS=1` rewrites it).
    #[test]
    fn the_page_lists_exactly_the_descriptors() {
        let tables = storsim_core::conformance::counter_tables(&[
            ("ssd", super::COUNTERS),
            ("ssd-steady-state", super::STEADY_STATE_COUNTERS),
            ("ssd-buffer", super::BUFFER_COUNTERS),
        ]);
        storsim_testenv::check_counter_tables("docs/models/ssd.md", &tables).unwrap();
        let tables = storsim_core::conformance::counter_tables(&[(
            "ssd-die-scheduling",
            super::DIE_SCHEDULING_COUNTERS,
        )]);
        storsim_testenv::check_counter_tables("docs/models/die-scheduling.md", &tables).unwrap();
    }
}
