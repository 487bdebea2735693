//! The fio options a job file may give, each with what storsim does with it: mapped to the
//! flows, accepted and named in the run's note (no meaning in simulation), or refused with
//! the reason. docs/workloads/fio-jobs.md has a row for every one (a test checks it).

/// What storsim does with an option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Treatment {
    /// It shapes the flows (docs/workloads/fio-jobs.md says how).
    Mapped,
    /// It has no meaning in simulation (which engine, which file, buffering, logging): it is
    /// accepted and named in the one note a run prints.
    Noted,
    /// It means something storsim does not simulate: the job file is refused, naming the
    /// option and saying why.
    Refused(&'static str),
}

/// One option: its name and its aliases, and its treatment.
#[derive(Clone, Copy, Debug)]
pub struct FioOption {
    /// fio's name, then its aliases.
    pub names: &'static [&'static str],
    /// What storsim does with it.
    pub treatment: Treatment,
}

impl FioOption {
    /// fio's name for it.
    pub fn name(&self) -> &'static str {
        self.names[0]
    }
}

const fn mapped(names: &'static [&'static str]) -> FioOption {
    FioOption {
        names,
        treatment: Treatment::Mapped,
    }
}

const fn noted(names: &'static [&'static str]) -> FioOption {
    FioOption {
        names,
        treatment: Treatment::Noted,
    }
}

const fn refused(names: &'static [&'static str], why: &'static str) -> FioOption {
    FioOption {
        names,
        treatment: Treatment::Refused(why),
    }
}

const NO_RAMP: &str = "a ramp's requests would count in the results: storsim has no \
                       warm-up period that is left out of them";
const VERIFY: &str = "storsim's models hold no data, so there is nothing to verify";
const FILES: &str = "storsim runs each job on one region of one device; several files per job \
                     are not laid out";

/// Every option storsim knows, in the order docs/workloads/fio-jobs.md lists them.
pub const OPTIONS: &[FioOption] = &[
    // What the job does.
    mapped(&["name"]),
    mapped(&["rw", "readwrite"]),
    mapped(&["rwmixread"]),
    mapped(&["rwmixwrite"]),
    mapped(&["bs", "blocksize"]),
    mapped(&["bsrange", "blocksize_range"]),
    mapped(&["bssplit"]),
    mapped(&["blockalign", "ba"]),
    mapped(&["iodepth"]),
    mapped(&["numjobs"]),
    mapped(&["size"]),
    mapped(&["filesize"]),
    mapped(&["io_size", "io_limit"]),
    mapped(&["offset"]),
    mapped(&["offset_increment"]),
    mapped(&["number_ios"]),
    mapped(&["runtime", "timeout"]),
    mapped(&["time_based"]),
    mapped(&["loops"]),
    mapped(&["startdelay"]),
    mapped(&["rate"]),
    mapped(&["rate_iops"]),
    mapped(&["rate_process"]),
    mapped(&["thinktime"]),
    mapped(&["thinktime_blocks"]),
    mapped(&["random_distribution"]),
    mapped(&["randrepeat"]),
    mapped(&["randseed"]),
    mapped(&["percentage_random"]),
    mapped(&["norandommap"]),
    mapped(&["stonewall", "wait_for_previous"]),
    mapped(&["new_group"]),
    mapped(&["fsync"]),
    mapped(&["fdatasync"]),
    mapped(&["kb_base"]),
    mapped(&["zonemode"]),
    // No meaning in simulation.
    noted(&["ioengine"]),
    noted(&["direct"]),
    noted(&["buffered"]),
    noted(&["filename"]),
    noted(&["directory"]),
    noted(&["filename_format"]),
    noted(&["thread"]),
    noted(&["group_reporting"]),
    noted(&["description"]),
    noted(&["iodepth_batch", "iodepth_batch_submit"]),
    noted(&["iodepth_batch_complete", "iodepth_batch_complete_min"]),
    noted(&["iodepth_batch_complete_max"]),
    noted(&["iodepth_low"]),
    noted(&["invalidate"]),
    noted(&["overwrite"]),
    noted(&["create_on_open"]),
    noted(&["fallocate"]),
    noted(&["unlink"]),
    noted(&["refill_buffers"]),
    noted(&["scramble_buffers"]),
    noted(&["zero_buffers"]),
    noted(&["buffer_pattern"]),
    noted(&["buffer_compress_percentage"]),
    noted(&["dedupe_percentage"]),
    noted(&["random_generator"]),
    noted(&["allrandrepeat"]),
    noted(&["unit_base"]),
    noted(&["lat_percentiles"]),
    noted(&["clat_percentiles"]),
    noted(&["slat_percentiles"]),
    noted(&["percentile_list"]),
    noted(&["disable_lat"]),
    noted(&["disable_clat"]),
    noted(&["disable_slat"]),
    noted(&["disable_bw_measurement", "disable_bw"]),
    noted(&["gtod_reduce"]),
    noted(&["write_bw_log"]),
    noted(&["write_lat_log"]),
    noted(&["write_iops_log"]),
    noted(&["write_iolog"]),
    noted(&["log_avg_msec"]),
    noted(&["per_job_logs"]),
    noted(&["cpus_allowed"]),
    noted(&["cpumask"]),
    noted(&["numa_cpu_nodes"]),
    noted(&["numa_mem_policy"]),
    noted(&["nice"]),
    noted(&["prio"]),
    noted(&["prioclass"]),
    noted(&["mem", "iomem"]),
    noted(&["hugepage-size"]),
    noted(&["lockmem"]),
    noted(&["hipri"]),
    noted(&["fixedbufs"]),
    noted(&["registerfiles"]),
    noted(&["sqthread_poll"]),
    noted(&["userspace_reap"]),
    noted(&["exitall"]),
    noted(&["stats"]),
    // Meaningful, not simulated.
    refused(&["ramp_time"], NO_RAMP),
    refused(&["verify"], VERIFY),
    refused(&["do_verify"], VERIFY),
    refused(&["nrfiles"], FILES),
    refused(&["file_service_type"], FILES),
    refused(
        &["end_fsync"],
        "a flush when the job ends is not generated; use fsync=N",
    ),
    refused(
        &["fsync_on_close"],
        "a flush when the job ends is not generated; use fsync=N",
    ),
    refused(
        &["sync"],
        "synchronous writes (O_SYNC) are not simulated; use fsync=1 for a flush after every write",
    ),
    refused(
        &["thinktime_spin"],
        "storsim's think time is a wait; spinning is not simulated",
    ),
    refused(
        &["thinktime_iotime"],
        "storsim's think time follows every request; an I/O time between thinks is not simulated",
    ),
    refused(
        &["rate_min", "ratemin"],
        "storsim runs at the rate given; a minimum rate that ends a job is not simulated",
    ),
    refused(
        &["rate_cycle", "ratecycle"],
        "storsim paces a rated job exactly; a measuring window is not simulated",
    ),
    refused(
        &["rw_sequencer"],
        "offset modifiers (rw=randread:8) are not simulated, so neither is their sequencer",
    ),
    refused(
        &["trim_percentage", "trim_verify_zero", "trim_backlog"],
        "verified trims are not simulated",
    ),
    refused(
        &["zonesize", "zonerange", "zoneskip", "zonecapacity"],
        "zones are not simulated: storsim has no zoned device model yet",
    ),
    refused(
        &["flow", "flow_id", "flow_sleep", "flow_watermark"],
        "fio's flow weights are not simulated; storsim's flows share the device as its model says",
    ),
];

/// The option named `name` (fio's name or an alias, any case), if storsim knows it.
pub fn find(name: &str) -> Option<&'static FioOption> {
    OPTIONS
        .iter()
        .find(|o| o.names.iter().any(|n| n.eq_ignore_ascii_case(name)))
}
