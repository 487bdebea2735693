//! Collecting completions into the run summary.

use crate::Histogram;
use storsim_core::{Completion, Op};

/// A distribution of nanosecond values: exact mean, minimum and maximum, and quantiles to within
/// 0.4 % (see [`Histogram`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Distribution {
    pub mean: f64,
    pub min: u64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
}

impl Distribution {
    pub fn of(h: &Histogram) -> Self {
        let q = h.quantiles(&[0.5, 0.9, 0.99, 0.999]);
        Distribution {
            mean: h.mean(),
            min: h.min(),
            p50: q[0],
            p90: q[1],
            p99: q[2],
            p999: q[3],
            max: h.max(),
        }
    }
}

/// The results for one operation type (or for all of them).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OpSummary {
    pub requests: u64,
    pub bytes: u64,
    pub iops: f64,
    pub bandwidth_bytes_per_s: f64,
    /// Response time: completion minus arrival.
    pub latency_ns: Distribution,
    /// Waiting before service began, at the host and inside the device.
    pub queueing_ns: Distribution,
    /// Service: from the start of service to completion.
    pub service_ns: Distribution,
}

/// One point of the response-time CDF: `fraction` of the requests completed within `latency_ns`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CdfPoint {
    pub latency_ns: u64,
    pub fraction: f64,
}

/// The CDF of the values `h` holds at fractions 0.00, 0.01, ..., 0.99, 0.999, 0.9999 and 1
/// (each point's `latency_ns` is the value at its fraction); empty when `h` is.
pub fn cdf(h: &Histogram) -> Vec<CdfPoint> {
    if h.count() == 0 {
        return Vec::new();
    }
    let mut fractions: Vec<f64> = (0..100).map(|i| i as f64 / 100.0).collect();
    fractions.extend([0.999, 0.9999, 1.0]);
    fractions
        .iter()
        .map(|&f| CdfPoint {
            latency_ns: h.quantile(f),
            fraction: f,
        })
        .collect()
}

/// Everything a run reports about its requests.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    /// From the first arrival to the last completion, in simulated time.
    pub elapsed_ns: u64,
    pub all: OpSummary,
    pub read: OpSummary,
    pub write: OpSummary,
    pub trim: OpSummary,
    pub flush: OpSummary,
    /// The response-time CDF at fractions 0.00, 0.01, ..., 0.99, 0.999, 0.9999 and 1.
    pub latency_cdf: Vec<CdfPoint>,
}

#[derive(Clone, Default)]
struct OpHistograms {
    latency: Histogram,
    queueing: Histogram,
    service: Histogram,
    bytes: u64,
}

impl OpHistograms {
    fn merge(&mut self, other: &OpHistograms) {
        self.latency.merge(&other.latency);
        self.queueing.merge(&other.queueing);
        self.service.merge(&other.service);
        self.bytes += other.bytes;
    }

    fn summary(&self, elapsed_ns: u64) -> OpSummary {
        let requests = self.latency.count();
        let secs = elapsed_ns as f64 / 1e9;
        let rate = |x: f64| if elapsed_ns == 0 { 0.0 } else { x / secs };
        OpSummary {
            requests,
            bytes: self.bytes,
            iops: rate(requests as f64),
            bandwidth_bytes_per_s: rate(self.bytes as f64),
            latency_ns: Distribution::of(&self.latency),
            queueing_ns: Distribution::of(&self.queueing),
            service_ns: Distribution::of(&self.service),
        }
    }
}

/// Accumulates completions; memory is fixed (a few histograms) whatever the run length.
pub struct Collector {
    per_op: [OpHistograms; 4],
    first_arrival_ns: u64,
    last_finish_ns: u64,
}

impl Default for Collector {
    fn default() -> Self {
        Self::new()
    }
}

impl Collector {
    pub fn new() -> Self {
        Collector {
            per_op: Default::default(),
            first_arrival_ns: u64::MAX,
            last_finish_ns: 0,
        }
    }

    #[inline]
    pub fn record(&mut self, c: &Completion) {
        let h = &mut self.per_op[c.request.op.index()];
        h.latency.record(c.latency().as_ns());
        h.queueing.record(c.queueing().as_ns());
        h.service.record(c.service().as_ns());
        h.bytes += c.request.len_bytes;
        self.first_arrival_ns = self.first_arrival_ns.min(c.request.arrival.as_ns());
        self.last_finish_ns = self.last_finish_ns.max(c.finish.as_ns());
    }

    pub fn completed(&self) -> u64 {
        self.per_op.iter().map(|h| h.latency.count()).sum()
    }

    pub fn summary(&self) -> Summary {
        let elapsed_ns = self.last_finish_ns.saturating_sub(self.first_arrival_ns);
        let mut all = OpHistograms::default();
        for h in &self.per_op {
            all.merge(h);
        }
        // Bandwidth counts the data that crossed the interface: a trim's or flush's range
        // moves no bytes.
        all.bytes = self.per_op[Op::Read.index()].bytes + self.per_op[Op::Write.index()].bytes;
        let latency_cdf = cdf(&all.latency);
        Summary {
            elapsed_ns,
            all: all.summary(elapsed_ns),
            read: self.per_op[Op::Read.index()].summary(elapsed_ns),
            write: self.per_op[Op::Write.index()].summary(elapsed_ns),
            trim: self.per_op[Op::Trim.index()].summary(elapsed_ns),
            flush: self.per_op[Op::Flush.index()].summary(elapsed_ns),
            latency_cdf,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storsim_core::{Request, SimTime};

    fn completion(op: Op, arrival: u64, start: u64, finish: u64) -> Completion {
        Completion {
            request: Request {
                id: 0,
                op,
                offset_bytes: 0,
                len_bytes: 4096,
                arrival: SimTime(arrival),
                flow: 0,
            },
            service_start: SimTime(start),
            finish: SimTime(finish),
        }
    }

    #[test]
    fn splits_latency_into_queueing_and_service_per_op() {
        let mut c = Collector::new();
        c.record(&completion(Op::Read, 0, 10, 110));
        c.record(&completion(Op::Write, 0, 110, 1_000_000_000));
        let s = c.summary();
        assert_eq!(s.elapsed_ns, 1_000_000_000);
        assert_eq!(s.all.requests, 2);
        assert_eq!(s.read.requests, 1);
        assert_eq!(s.read.latency_ns.max, 110);
        assert_eq!(s.read.queueing_ns.max, 10);
        assert_eq!(s.read.service_ns.max, 100);
        assert_eq!(s.write.queueing_ns.max, 110);
        assert_eq!(s.all.iops, 2.0);
        assert_eq!(s.all.bandwidth_bytes_per_s, 8192.0);
        assert_eq!(s.trim.requests, 0);
        assert_eq!(s.latency_cdf.last().unwrap().latency_ns, 1_000_000_000);
        assert_eq!(s.latency_cdf.first().unwrap().latency_ns, 110);
    }

    #[test]
    fn trimmed_bytes_are_not_bandwidth() {
        let mut c = Collector::new();
        c.record(&completion(Op::Write, 0, 0, 500_000_000));
        let mut trim = completion(Op::Trim, 0, 0, 1_000_000_000);
        trim.request.len_bytes = 1 << 30;
        c.record(&trim);
        let s = c.summary();
        assert_eq!(s.all.requests, 2);
        assert_eq!(s.all.bandwidth_bytes_per_s, 4096.0);
        assert_eq!(s.trim.bytes, 1 << 30);
    }

    #[test]
    fn empty_run_has_zero_rates_not_nan() {
        let s = Collector::new().summary();
        assert_eq!(s.all.iops, 0.0);
        assert_eq!(s.all.latency_ns.mean, 0.0);
        assert!(s.latency_cdf.is_empty());
    }
}
