//! A one-pass summary of a workload: how many requests of which kinds and sizes, how sequential,
//! how fast, over which addresses. Memory is constant apart from a few numbers per device.

use super::devices::MAX_DEVICES;
use crate::{Workload, WorkloadError};
use std::collections::BTreeMap;
use storsim_core::Op;

/// Upper bounds (inclusive) of the request-size histogram buckets: powers of two from 512 bytes
/// to 1 MiB, then everything larger (`u64::MAX`).
pub const SIZE_BUCKET_UPPER_BOUNDS: [u64; 13] = [
    512,
    1 << 10,
    2 << 10,
    4 << 10,
    8 << 10,
    16 << 10,
    32 << 10,
    64 << 10,
    128 << 10,
    256 << 10,
    512 << 10,
    1 << 20,
    u64::MAX,
];

/// What [`inspect`] found. Quantities that are undefined for the workload (a mean of nothing)
/// are `None`.
#[derive(Clone, Debug, PartialEq)]
pub struct Characterisation {
    pub requests: u64,
    /// Requests per operation, indexed by [`Op::index`].
    pub per_op: [u64; 4],
    /// Reads as a percentage of reads plus writes.
    pub read_percent: Option<f64>,
    /// `(upper_bound_bytes, count)` for each bucket of [`SIZE_BUCKET_UPPER_BOUNDS`], counting
    /// the requests that carry data (flushes have no size and are left out).
    pub size_histogram: Vec<(u64, u64)>,
    /// Of the requests that follow an earlier request on the same device, the fraction that
    /// start exactly where that device's previous request ended, whatever the operations.
    /// Tracking each device separately keeps interleaved devices from hiding each other's
    /// sequential runs. Flushes carry no range: they are neither counted nor move the end.
    pub sequential_fraction: Option<f64>,
    /// Of the writes, the fraction that are random: that do not start where the same device's
    /// previous write ended (the first write of a device continues nothing, so it is random).
    /// This is the hybrid-disk thesis' rule (Konanki, §5.2: a write to page n is sequential
    /// when the previous write went to page n - 1), at byte granularity, and the rule of the
    /// black-box models' sequential detection with `previous-same-direction`: reads, trims and
    /// flushes in between neither break nor continue a run of writes.
    pub random_write_fraction: Option<f64>,
    /// Mean time between consecutive requests' timestamps: the span over one less than the
    /// number of requests.
    pub mean_interarrival_ns: Option<f64>,
    /// Last timestamp minus first (0 if the last is earlier).
    pub span_ns: u64,
    /// Lowest offset and highest end over the requests that carry data.
    pub address_range: Option<(u64, u64)>,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Requests per device number as the records give it. With
    /// [`DeviceSelection::Concat`](super::DeviceSelection::Concat) offsets are moved but device
    /// numbers are not, so this still counts the original devices.
    pub per_device: BTreeMap<u32, u64>,
    /// Each device (volume, disk, LUN) as the records give it: requests, bytes, sizes and time
    /// span, keyed by device number.
    pub volumes: BTreeMap<u32, Volume>,
    /// The trace format's name, or `None` for a generated workload.
    pub format: Option<&'static str>,
    /// What detection saw when it chose the format; `None` when the format was named or the
    /// workload was generated.
    pub detected_from: Option<String>,
    /// Malformed records skipped (with `skip_bad`), which the counts above leave out.
    pub skipped_records: u64,
    /// Well-formed records that are not block requests, also left out.
    pub ignored_records: u64,
}

/// One device's share of a workload, as [`Characterisation::volumes`] lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Volume {
    pub requests: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// The smallest and largest request that carries data, in bytes (`None` if only flushes).
    pub size_range_bytes: Option<(u64, u64)>,
    /// The first and last timestamp of its requests.
    pub first_ns: u64,
    pub last_ns: u64,
}

impl Volume {
    fn new(timestamp_ns: u64) -> Self {
        Volume {
            requests: 0,
            bytes_read: 0,
            bytes_written: 0,
            size_range_bytes: None,
            first_ns: timestamp_ns,
            last_ns: timestamp_ns,
        }
    }

    fn count(&mut self, record: &crate::Record) {
        self.requests += 1;
        self.last_ns = record.timestamp_ns;
        match record.op {
            Op::Read => self.bytes_read = self.bytes_read.saturating_add(record.len_bytes),
            Op::Write => self.bytes_written = self.bytes_written.saturating_add(record.len_bytes),
            Op::Trim | Op::Flush => {}
        }
        if record.op != Op::Flush {
            let len = record.len_bytes;
            self.size_range_bytes = Some(match self.size_range_bytes {
                None => (len, len),
                Some((low, high)) => (low.min(len), high.max(len)),
            });
        }
    }

    /// Last timestamp minus first (0 if the last is earlier).
    pub fn span_ns(&self) -> u64 {
        self.last_ns.saturating_sub(self.first_ns)
    }
}

impl Characterisation {
    /// The number of requests of one operation.
    pub fn count(&self, op: Op) -> u64 {
        self.per_op[op.index()]
    }
}

/// Reads every record of `workload` once and summarises them. Stops at the first error, and
/// refuses workloads with more than 65,536 distinct devices, since it keeps numbers per device.
pub fn inspect(mut workload: Workload) -> Result<Characterisation, WorkloadError> {
    let mut requests: u64 = 0;
    let mut per_op = [0u64; 4];
    let mut buckets = [0u64; SIZE_BUCKET_UPPER_BOUNDS.len()];
    let mut sequential: u64 = 0;
    let mut with_predecessor: u64 = 0;
    let mut previous_end: BTreeMap<u32, u64> = BTreeMap::new();
    let mut previous_write_end: BTreeMap<u32, u64> = BTreeMap::new();
    let mut random_writes: u64 = 0;
    let mut first_ts: Option<u64> = None;
    let mut last_ts: u64 = 0;
    let mut range: Option<(u64, u64)> = None;
    let mut bytes_read: u64 = 0;
    let mut bytes_written: u64 = 0;
    let mut volumes: BTreeMap<u32, Volume> = BTreeMap::new();

    for item in workload.records.by_ref() {
        let record = item?;
        requests += 1;
        per_op[record.op.index()] += 1;
        if !volumes.contains_key(&record.dev) && volumes.len() >= MAX_DEVICES {
            return Err(WorkloadError::Spec {
                message: format!(
                    "{}: {}: device {} is more than the {MAX_DEVICES} devices a characterisation counts separately",
                    workload.name,
                    workload.origin.describe(record.origin),
                    record.dev
                ),
            });
        }
        volumes
            .entry(record.dev)
            .or_insert_with(|| Volume::new(record.timestamp_ns))
            .count(&record);
        first_ts.get_or_insert(record.timestamp_ns);
        last_ts = record.timestamp_ns;
        match record.op {
            Op::Read => bytes_read = bytes_read.saturating_add(record.len_bytes),
            Op::Write => bytes_written = bytes_written.saturating_add(record.len_bytes),
            Op::Trim | Op::Flush => {}
        }
        if record.op == Op::Flush {
            continue;
        }
        let end = record.offset_bytes.saturating_add(record.len_bytes);
        if record.op == Op::Write
            && previous_write_end.insert(record.dev, end) != Some(record.offset_bytes)
        {
            random_writes += 1;
        }
        if let Some(previous) = previous_end.insert(record.dev, end) {
            with_predecessor += 1;
            if previous == record.offset_bytes {
                sequential += 1;
            }
        }
        let bucket = SIZE_BUCKET_UPPER_BOUNDS
            .iter()
            .position(|&bound| record.len_bytes <= bound)
            .unwrap_or(SIZE_BUCKET_UPPER_BOUNDS.len() - 1);
        buckets[bucket] += 1;
        range = Some(match range {
            None => (record.offset_bytes, end),
            Some((low, high)) => (low.min(record.offset_bytes), high.max(end)),
        });
    }

    let reads = per_op[Op::Read.index()];
    let writes = per_op[Op::Write.index()];
    let span_ns = first_ts.map_or(0, |first| last_ts.saturating_sub(first));
    Ok(Characterisation {
        requests,
        per_op,
        read_percent: (reads + writes > 0).then(|| 100.0 * reads as f64 / (reads + writes) as f64),
        size_histogram: SIZE_BUCKET_UPPER_BOUNDS
            .iter()
            .copied()
            .zip(buckets)
            .collect(),
        sequential_fraction: (with_predecessor > 0)
            .then(|| sequential as f64 / with_predecessor as f64),
        random_write_fraction: (writes > 0).then(|| random_writes as f64 / writes as f64),
        mean_interarrival_ns: (requests > 1).then(|| span_ns as f64 / (requests - 1) as f64),
        span_ns,
        address_range: range,
        bytes_read,
        bytes_written,
        per_device: volumes.iter().map(|(&d, v)| (d, v.requests)).collect(),
        volumes,
        format: workload.format,
        detected_from: workload.detected_from.clone(),
        skipped_records: workload.skipped.get(),
        ignored_records: workload.ignored.get(),
    })
}
