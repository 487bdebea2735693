//! Collecting completions into the run summary.

use crate::Histogram;
use storsim_core::{Completion, Op, Status};

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

/// Failed requests by error kind, in the order of [`Status::ERRORS`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ErrorCounts {
    pub by_kind: [u64; Status::ERRORS.len()],
}

impl ErrorCounts {
    /// Failed requests of every kind.
    pub fn total(&self) -> u64 {
        self.by_kind.iter().sum()
    }

    /// How many failed with `status` (0 for [`Status::Ok`]).
    pub fn of(&self, status: Status) -> u64 {
        status.error_index().map_or(0, |i| self.by_kind[i])
    }

    /// Each error kind with its count, in the order of [`Status::ERRORS`].
    pub fn iter(&self) -> impl Iterator<Item = (Status, u64)> + '_ {
        Status::ERRORS
            .iter()
            .copied()
            .zip(self.by_kind.iter().copied())
    }

    fn add(&mut self, other: &ErrorCounts) {
        for (a, b) in self.by_kind.iter_mut().zip(other.by_kind) {
            *a += b;
        }
    }
}

/// The results for one operation type (or for all of them).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OpSummary {
    /// Completed requests, failed ones included.
    pub requests: u64,
    /// Bytes of the requests that succeeded: a failed read or write moved no data the host
    /// can use.
    pub bytes: u64,
    /// The requests that completed with an error, by kind.
    pub errors: ErrorCounts,
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
    /// Whether failed requests count in the latency, queueing and service distributions and
    /// the CDF; by default they do not (see [`CollectorOptions`]).
    pub latency_includes_failed: bool,
    /// Whether requests could fail in this run (a faults layer was in force) or any did: the
    /// reports show the error counts and `latency_includes_failed` only then, so a run that
    /// cannot fail reads exactly as before errors were counted.
    pub errors_counted: bool,
}

#[derive(Clone, Default)]
struct OpHistograms {
    latency: Histogram,
    queueing: Histogram,
    service: Histogram,
    bytes: u64,
    errors: ErrorCounts,
    /// Failed requests left out of the histograms.
    excluded: u64,
}

impl OpHistograms {
    fn merge(&mut self, other: &OpHistograms) {
        self.latency.merge(&other.latency);
        self.queueing.merge(&other.queueing);
        self.service.merge(&other.service);
        self.bytes += other.bytes;
        self.errors.add(&other.errors);
        self.excluded += other.excluded;
    }

    /// Counts `c`'s latency, queueing and service times.
    #[inline]
    fn record_times(&mut self, c: &Completion) {
        self.latency.record(c.latency().as_ns());
        self.queueing.record(c.queueing().as_ns());
        self.service.record(c.service().as_ns());
    }

    fn summary(&self, elapsed_ns: u64) -> OpSummary {
        let requests = self.latency.count() + self.excluded;
        let secs = elapsed_ns as f64 / 1e9;
        let rate = |x: f64| if elapsed_ns == 0 { 0.0 } else { x / secs };
        OpSummary {
            requests,
            bytes: self.bytes,
            errors: self.errors,
            iops: rate(requests as f64),
            bandwidth_bytes_per_s: rate(self.bytes as f64),
            latency_ns: Distribution::of(&self.latency),
            queueing_ns: Distribution::of(&self.queueing),
            service_ns: Distribution::of(&self.service),
        }
    }
}

/// How a [`Collector`] treats failed requests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CollectorOptions {
    /// Count failed requests in the latency, queueing and service distributions. Off by
    /// default: a request that failed at once (a read-only device) or after the host's
    /// timeout (30 s) says nothing about how fast the device serves, and would pull the
    /// percentiles towards either end; failures are counted apart, in `errors`.
    pub latency_includes_failed: bool,
    /// Report the error counts even if no request fails (a faults layer is in force).
    pub errors_counted: bool,
}

/// Accumulates completions; memory is fixed (a few histograms) whatever the run length.
pub struct Collector {
    per_op: [OpHistograms; 4],
    first_arrival_ns: u64,
    last_finish_ns: u64,
    options: CollectorOptions,
}

impl Default for Collector {
    fn default() -> Self {
        Self::new()
    }
}

impl Collector {
    pub fn new() -> Self {
        Self::with_options(CollectorOptions::default())
    }

    /// A collector that treats failed requests as `options` says.
    pub fn with_options(options: CollectorOptions) -> Self {
        Collector {
            per_op: Default::default(),
            first_arrival_ns: u64::MAX,
            last_finish_ns: 0,
            options,
        }
    }

    /// Counts one completion. A failed one takes a path of its own, out of line: the requests
    /// that succeed (every request of a run without a faults layer) pass one test of their
    /// status, and none of the options or the error counts.
    #[inline]
    pub fn record(&mut self, c: &Completion) {
        if !c.status.is_ok() {
            self.record_failed(c);
            return;
        }
        let h = &mut self.per_op[c.request.op.index()];
        h.bytes += c.request.len_bytes;
        h.record_times(c);
        self.record_span(c);
    }

    /// [`Collector::record`] for a failed request: counted by kind, and in the distributions
    /// only if the options say so; it moved no bytes.
    #[cold]
    fn record_failed(&mut self, c: &Completion) {
        let h = &mut self.per_op[c.request.op.index()];
        if let Some(kind) = c.status.error_index() {
            h.errors.by_kind[kind] += 1;
        }
        if self.options.latency_includes_failed {
            h.record_times(c);
        } else {
            h.excluded += 1;
        }
        self.record_span(c);
    }

    /// Stretches the run's span from the first arrival to the last finish over `c`.
    #[inline]
    fn record_span(&mut self, c: &Completion) {
        self.first_arrival_ns = self.first_arrival_ns.min(c.request.arrival.as_ns());
        self.last_finish_ns = self.last_finish_ns.max(c.finish.as_ns());
    }

    /// Requests recorded, failed ones included.
    pub fn completed(&self) -> u64 {
        self.per_op
            .iter()
            .map(|h| h.latency.count() + h.excluded)
            .sum()
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
        let errors_counted = self.options.errors_counted || all.errors.total() > 0;
        Summary {
            elapsed_ns,
            all: all.summary(elapsed_ns),
            read: self.per_op[Op::Read.index()].summary(elapsed_ns),
            write: self.per_op[Op::Write.index()].summary(elapsed_ns),
            trim: self.per_op[Op::Trim.index()].summary(elapsed_ns),
            flush: self.per_op[Op::Flush.index()].summary(elapsed_ns),
            latency_cdf,
            latency_includes_failed: self.options.latency_includes_failed,
            errors_counted,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storsim_core::{Request, SimTime, Status};

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
            status: Status::Ok,
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
    fn failed_requests_are_counted_by_kind_and_left_out_of_latency_by_default() {
        let failed = |status| Completion {
            status,
            ..completion(Op::Read, 0, 0, 30_000_000_000)
        };
        let mut c = Collector::new();
        c.record(&completion(Op::Read, 0, 0, 100));
        c.record(&failed(Status::MediaError));
        c.record(&failed(Status::Timeout));
        c.record(&Completion {
            status: Status::NoSpace,
            ..completion(Op::Write, 0, 0, 50)
        });
        let s = c.summary();
        assert!(s.errors_counted);
        assert!(!s.latency_includes_failed);
        assert_eq!(s.read.requests, 3);
        assert_eq!(s.read.errors.of(Status::MediaError), 1);
        assert_eq!(s.read.errors.of(Status::Timeout), 1);
        assert_eq!(s.read.errors.total(), 2);
        assert_eq!(s.write.errors.of(Status::NoSpace), 1);
        assert_eq!(s.all.errors.total(), 3);
        // Only the one read that succeeded is in the distribution and moved bytes.
        assert_eq!(s.read.latency_ns.max, 100);
        assert_eq!(s.read.bytes, 4096);
        assert_eq!(s.write.bytes, 0);
        // The run still lasted until the timeout.
        assert_eq!(s.elapsed_ns, 30_000_000_000);

        let mut c = Collector::with_options(CollectorOptions {
            latency_includes_failed: true,
            errors_counted: false,
        });
        c.record(&completion(Op::Read, 0, 0, 100));
        c.record(&failed(Status::Timeout));
        let s = c.summary();
        assert!(s.latency_includes_failed);
        assert_eq!(s.read.requests, 2);
        assert_eq!(s.read.latency_ns.max, 30_000_000_000);
        assert_eq!(s.read.bytes, 4096);
    }

    #[test]
    fn a_run_without_failures_does_not_count_errors_unless_asked() {
        let mut c = Collector::new();
        c.record(&completion(Op::Read, 0, 0, 100));
        assert!(!c.summary().errors_counted);
        let mut c = Collector::with_options(CollectorOptions {
            errors_counted: true,
            ..Default::default()
        });
        c.record(&completion(Op::Read, 0, 0, 100));
        assert!(c.summary().errors_counted);
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
