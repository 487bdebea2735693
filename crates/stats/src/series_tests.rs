use super::*;
use std::collections::VecDeque;
use storsim_core::conformance::{self, mixed_requests, Mix};
use storsim_core::{Prng, SimDuration, Status};

/// One server taking `service_ns` per request, first come first served, with counters of
/// what it accepted and completed.
struct Fifo {
    service_ns: u64,
    depth: usize,
    queue: VecDeque<(Request, SimTime)>,
    busy_until: SimTime,
    submitted: u64,
    completed: u64,
}

impl Fifo {
    fn new(service_ns: u64, depth: usize) -> Self {
        Fifo {
            service_ns,
            depth,
            queue: VecDeque::new(),
            busy_until: SimTime::ZERO,
            submitted: 0,
            completed: 0,
        }
    }
}

impl Device for Fifo {
    fn model_name(&self) -> &'static str {
        "fifo"
    }
    fn capacity_bytes(&self) -> u64 {
        1 << 30
    }
    fn queue_depth(&self) -> usize {
        self.depth
    }
    fn submit(&mut self, now: SimTime, request: Request) -> Result<(), DeviceError> {
        storsim_core::check_range(&request, self.capacity_bytes())?;
        if self.queue.len() >= self.depth {
            return Err(DeviceError::QueueFull {
                queue_depth: self.depth,
            });
        }
        let start = self.busy_until.max(now);
        self.busy_until = start + SimDuration(self.service_ns);
        self.queue.push_back((request, start));
        self.submitted += 1;
        Ok(())
    }
    fn next_deadline(&self) -> Option<SimTime> {
        self.queue
            .front()
            .map(|(_, start)| *start + SimDuration(self.service_ns))
    }
    fn advance(&mut self, now: SimTime, done: &mut Vec<Completion>) {
        while let Some(&(request, start)) = self.queue.front() {
            let finish = start + SimDuration(self.service_ns);
            if finish > now {
                break;
            }
            self.queue.pop_front();
            self.completed += 1;
            done.push(Completion {
                request,
                service_start: start,
                finish,
                status: Status::Ok,
            });
        }
    }
    fn counters(&self) -> Vec<DeviceCounter> {
        vec![
            DeviceCounter::new("submitted", self.submitted as f64),
            DeviceCounter::new("completed", self.completed as f64),
        ]
    }
}

fn completion(op: Op, arrival: u64, finish: u64, len_bytes: u64) -> Completion {
    Completion {
        request: Request {
            id: 0,
            op,
            offset_bytes: 0,
            len_bytes,
            arrival: SimTime(arrival),
            flow: 0,
        },
        service_start: SimTime(arrival),
        finish: SimTime(finish),
        status: Status::Ok,
    }
}

fn requests(seed: u64, count: usize) -> Vec<Request> {
    mixed_requests(
        seed,
        &Mix {
            count,
            capacity_bytes: 1 << 30,
            queue_depth: 8,
            max_request_bytes: 64 * 1024,
        },
    )
}

#[test]
fn long_waits_count_in_every_window_they_span_as_one_by_one() {
    // Requests that wait at the host and in the device across many windows, through
    // merges of the windows: each window's queue times are exactly those of the intervals
    // cut at the final width, as adding them window by window gives.
    let mut prng = Prng::new(11);
    let mut events = Vec::new();
    let mut intervals = Vec::new();
    let mut arrival = 0u64;
    for _ in 0..2_000 {
        arrival += prng.below(50_000);
        let submitted = arrival + prng.below(3) * prng.below(2_000_000);
        let finish = submitted + prng.below(4) * prng.below(1_000_000);
        // Submissions first on a tie: the recorder is told of instants in order.
        events.push((submitted, 0, arrival));
        events.push((finish, 1, arrival));
        intervals.push((arrival, submitted, finish));
    }
    events.sort_unstable();
    let end = events.last().expect("events").0;
    for width in [
        WindowWidth::Auto,
        WindowWidth::Fixed { width_ns: 1_000 },
        WindowWidth::Fixed { width_ns: 333_333 },
    ] {
        let mut recorder = SeriesRecorder::new(width);
        for &(at, kind, arrival) in &events {
            if kind == 0 {
                recorder.submitted(SimTime(arrival), SimTime(at));
            } else {
                recorder.completed(&completion(Op::Read, arrival, at, 4096));
            }
        }
        recorder.reach(end);
        recorder.settle_queues();
        let w = recorder.width_ns;
        let n = recorder.windows.len();
        assert!(n > 100, "{width:?}: the waits span many windows ({n})");
        let cut = |from: u64, to: u64, i: usize| {
            let (start, end) = (i as u64 * w, (i as u64 + 1) * w);
            u128::from(to.min(end).saturating_sub(from.max(start)))
        };
        for (i, window) in recorder.windows.iter().enumerate() {
            let host: u128 = intervals.iter().map(|&(a, s, _)| cut(a, s, i)).sum();
            let system: u128 = intervals.iter().map(|&(a, _, f)| cut(a, f, i)).sum();
            assert_eq!(window.host_queue_ns, host, "{width:?}: window {i}");
            assert_eq!(window.system_queue_ns, system, "{width:?}: window {i}");
        }
    }
}

#[test]
fn windows_add_up_to_the_runs_totals_whatever_the_width() {
    let seed = 5;
    let reqs = requests(seed, 3_000);
    for width in [
        WindowWidth::Auto,
        WindowWidth::Fixed { width_ns: 1 },
        WindowWidth::Fixed { width_ns: 77_777 },
        WindowWidth::Fixed {
            width_ns: u64::MAX / 4,
        },
    ] {
        let mut device = Fifo::new(20_000, 8);
        let mut recorder = SeriesRecorder::new(width);
        let run = conformance::drive(&mut Observed::new(&mut device, &mut recorder), &reqs)
            .expect("the FIFO keeps the contract");
        let end = run.completions.iter().map(|c| c.finish).max().unwrap();
        let series = recorder.finish(end, device.counters());
        let n = series.windows();
        assert!(
            (1..=FIXED_WINDOWS_MAX).contains(&n),
            "{width:?}: {n} windows"
        );
        // The windows cover the run and no more.
        assert!(series.window_ns * n as u64 >= end.as_ns(), "{width:?}");
        assert!(series.window_ns * (n as u64 - 1) < end.as_ns(), "{width:?}");
        let all = &series.ops[0];
        assert_eq!(all.op, None);
        assert_eq!(
            all.requests.iter().sum::<u64>(),
            reqs.len() as u64,
            "{width:?}"
        );
        for op in &series.ops[1..] {
            let op_name = op.op.expect("ops after the first are single ops");
            let expected: Vec<&Completion> = run
                .completions
                .iter()
                .filter(|c| c.request.op == op_name)
                .collect();
            assert_eq!(op.requests.iter().sum::<u64>(), expected.len() as u64);
            assert_eq!(
                op.bytes.iter().sum::<u64>(),
                expected.iter().map(|c| c.request.len_bytes).sum::<u64>()
            );
            let max = expected.iter().map(|c| c.latency().as_ns()).max();
            assert_eq!(op.latency_max_ns.iter().flatten().max().copied(), max);
        }
        // The mean queue depth integrates to the time the requests spent in the system.
        let in_system_ns: u64 = run.completions.iter().map(|c| c.latency().as_ns()).sum();
        let integral: f64 = series
            .host_queue_mean
            .iter()
            .zip(&series.device_queue_mean)
            .enumerate()
            .map(|(i, (h, d))| {
                let start = i as u64 * series.window_ns;
                let len = if i + 1 == n {
                    end.as_ns() - start
                } else {
                    series.window_ns
                };
                (h + d) * len as f64
            })
            .sum();
        let err = (integral - in_system_ns as f64).abs() / in_system_ns as f64;
        assert!(err < 1e-6, "{width:?}: {integral} vs {in_system_ns}");
    }
}

#[test]
fn automatic_windows_stay_a_few_hundred_and_merging_keeps_totals() {
    let mut recorder = SeriesRecorder::new(WindowWidth::Auto);
    let mut rng = Prng::new(9);
    let mut t = 0u64;
    let mut total_bytes = 0;
    for i in 0..100_000u64 {
        t += 1 + rng.below(2_000_000);
        let latency = 1 + rng.below(5_000_000);
        let len = 512 * (1 + rng.below(64));
        total_bytes += len;
        recorder.completed(&completion(Op::Write, t.saturating_sub(latency), t, len));
        assert!(
            recorder.windows.len() <= AUTO_WINDOWS_MAX,
            "at completion {i}"
        );
    }
    let series = recorder.finish(SimTime(t), Vec::new());
    assert!(
        (AUTO_WINDOWS_MAX / 2..=AUTO_WINDOWS_MAX).contains(&series.windows()),
        "{} windows",
        series.windows()
    );
    assert_eq!(series.ops[0].requests.iter().sum::<u64>(), 100_000);
    assert_eq!(series.ops[0].bytes.iter().sum::<u64>(), total_bytes);
    assert_eq!(series.ops.len(), 2, "all and write");
}

#[test]
fn quantiles_per_window_are_within_the_bucket_precision() {
    let mut recorder = SeriesRecorder::new(WindowWidth::Fixed {
        width_ns: 1_000_000_000,
    });
    let mut rng = Prng::new(4);
    let mut latencies: [Vec<u64>; 2] = Default::default();
    for i in 0..20_000u64 {
        // Two windows with different latency ranges.
        let window = (i % 2) as usize;
        let latency = 1_000 + rng.below(if window == 0 { 100_000 } else { 10_000_000 });
        let finish = window as u64 * 1_000_000_000 + 500_000_000 + i;
        recorder.completed(&completion(Op::Read, finish - latency, finish, 4096));
        latencies[window].push(latency);
    }
    let series = recorder.finish(SimTime(2_000_000_000), Vec::new());
    assert_eq!(series.windows(), 2);
    for (w, values) in latencies.iter_mut().enumerate() {
        values.sort_unstable();
        for (q, got) in [
            (0.5, series.ops[0].latency_p50_ns[w]),
            (0.99, series.ops[0].latency_p99_ns[w]),
            (0.999, series.ops[0].latency_p999_ns[w]),
        ] {
            let exact = values[(q * values.len() as f64).ceil() as usize - 1];
            let got = got.expect("the window had completions");
            let err = (got as f64 - exact as f64).abs() / exact as f64;
            assert!(err <= 1.0 / 32.0, "window {w} q {q}: {got} vs {exact}");
        }
        assert_eq!(series.ops[0].latency_max_ns[w], values.last().copied());
    }
}

#[test]
fn counters_are_the_devices_at_each_windows_end() {
    let reqs = requests(13, 2_000);
    let mut device = Fifo::new(50_000, 4);
    let mut recorder = SeriesRecorder::new(WindowWidth::Fixed {
        width_ns: 1_000_000,
    });
    let run = conformance::drive(&mut Observed::new(&mut device, &mut recorder), &reqs)
        .expect("the FIFO keeps the contract");
    let end = run.end.max(run.completions.last().unwrap().finish);
    let series = recorder.finish(run.completions.last().unwrap().finish, device.counters());
    assert!(end.as_ns() > 0);
    let completed = &series
        .counters
        .iter()
        .find(|(n, _)| n == "completed")
        .unwrap()
        .1;
    assert_eq!(completed.len(), series.windows());
    for (i, value) in completed.iter().enumerate() {
        let window_end = (i as u64 + 1) * series.window_ns;
        let expected = run
            .completions
            .iter()
            .filter(|c| c.finish.as_ns() <= window_end)
            .count();
        assert_eq!(*value, Some(expected as f64), "window {i}");
    }
    // And what each window completed is the difference of neighbouring counter values.
    let mut previous = 0.0;
    for (i, value) in completed.iter().enumerate() {
        let value = value.unwrap();
        assert_eq!(
            value - previous,
            series.ops[0].requests[i] as f64,
            "window {i}"
        );
        previous = value;
    }
}

#[test]
fn observing_changes_nothing_the_device_does() {
    let reqs = requests(21, 2_000);
    let plain = conformance::drive(&mut Fifo::new(30_000, 8), &reqs).unwrap();
    let mut device = Fifo::new(30_000, 8);
    let mut recorder = SeriesRecorder::new(WindowWidth::Auto);
    let observed =
        conformance::drive(&mut Observed::new(&mut device, &mut recorder), &reqs).unwrap();
    assert_eq!(plain.completions, observed.completions);
}

#[test]
fn host_and_device_queues_are_told_apart() {
    // One request arrives at 0, reaches the device at 10 µs and completes at 30 µs, in
    // windows of 10 µs: it waits at the host through window 0 and is in the device after.
    let mut recorder = SeriesRecorder::new(WindowWidth::Fixed { width_ns: 10_000 });
    recorder.submitted(SimTime::ZERO, SimTime(10_000));
    recorder.completed(&completion(Op::Read, 0, 30_000, 4096));
    let series = recorder.finish(SimTime(30_000), Vec::new());
    assert_eq!(series.host_queue_mean, vec![1.0, 0.0, 0.0]);
    assert_eq!(series.device_queue_mean, vec![0.0, 1.0, 1.0]);
    assert_eq!(series.ops[0].requests, vec![0, 0, 1]);
    assert_eq!(
        series.ops[0].latency_mean_ns,
        vec![None, None, Some(30_000.0)]
    );
}

#[test]
fn failed_requests_count_in_the_windows_only_as_the_summary_counts_them() {
    // One ok read of 10 ns and one failed read of 1000 ns in the same window.
    let failed = Completion {
        status: Status::Timeout,
        ..completion(Op::Read, 0, 1_000, 4096)
    };
    let window = |include: bool| {
        let mut recorder = SeriesRecorder::new(WindowWidth::Fixed { width_ns: 10_000 });
        recorder.include_failed_latencies(include);
        recorder.completed(&completion(Op::Read, 0, 10, 4096));
        recorder.completed(&failed);
        let series = recorder.finish(SimTime(1_000), Vec::new());
        let all = &series.ops[0];
        (all.requests[0], all.bytes[0], all.latency_mean_ns[0])
    };
    // Left out by default: one request, its bytes, its latency.
    assert_eq!(window(false), (1, 4096, Some(10.0)));
    // Counted when asked, but a failed request's bytes never are.
    assert_eq!(window(true), (2, 4096, Some(505.0)));
}

#[test]
fn a_counter_that_appears_late_is_none_before() {
    let mut recorder = SeriesRecorder::new(WindowWidth::Fixed { width_ns: 10 });
    recorder.completed(&completion(Op::Read, 0, 5, 512));
    recorder.sample(SimTime(15), vec![DeviceCounter::new("a", 1.0)]);
    recorder.completed(&completion(Op::Read, 10, 15, 512));
    let series = recorder.finish(
        SimTime(15),
        vec![DeviceCounter::new("a", 2.0), DeviceCounter::new("b", 7.0)],
    );
    assert_eq!(
        series.counters,
        vec![
            ("a".to_string(), vec![Some(1.0), Some(2.0)]),
            ("b".to_string(), vec![None, Some(7.0)]),
        ]
    );
}

/// A device whose counters are `a`, then also `b` in the middle once it has completed
/// `grow_after` requests, as an SSD adds an erase-count bucket as it wears.
struct Growing {
    fifo: Fifo,
    grow_after: u64,
}

impl Device for Growing {
    fn model_name(&self) -> &'static str {
        "growing"
    }
    fn capacity_bytes(&self) -> u64 {
        self.fifo.capacity_bytes()
    }
    fn queue_depth(&self) -> usize {
        self.fifo.queue_depth()
    }
    fn submit(&mut self, now: SimTime, request: Request) -> Result<(), DeviceError> {
        self.fifo.submit(now, request)
    }
    fn next_deadline(&self) -> Option<SimTime> {
        self.fifo.next_deadline()
    }
    fn advance(&mut self, now: SimTime, done: &mut Vec<Completion>) {
        self.fifo.advance(now, done)
    }
    fn counters(&self) -> Vec<DeviceCounter> {
        let done = self.fifo.completed as f64;
        let mut list = vec![DeviceCounter::new("a", done)];
        if self.fifo.completed > self.grow_after {
            list.push(DeviceCounter::new("b", -done));
        }
        list.push(DeviceCounter::new("c", 2.0 * done));
        list
    }
}

#[test]
fn counters_read_as_values_stay_with_their_names_when_the_list_grows() {
    let reqs = requests(17, 1_000);
    let mut device = Growing {
        fifo: Fifo::new(40_000, 4),
        grow_after: 400,
    };
    let mut recorder = SeriesRecorder::new(WindowWidth::Fixed { width_ns: 500_000 });
    let run = conformance::drive(&mut Observed::new(&mut device, &mut recorder), &reqs)
        .expect("the device keeps the contract");
    let end = run.completions.last().unwrap().finish;
    let series = recorder.finish(end, device.counters());
    let column = |name: &str| &series.counters.iter().find(|(n, _)| n == name).unwrap().1;
    let (a, b, c) = (column("a"), column("b"), column("c"));
    let mut saw_b = false;
    for i in 0..series.windows() {
        let a = a[i].expect("a is always there");
        assert_eq!(c[i], Some(2.0 * a), "window {i}");
        match b[i] {
            Some(b) => {
                assert_eq!(b, -a, "window {i}");
                assert!(a > 400.0);
                saw_b = true;
            }
            None => assert!(a <= 400.0 && !saw_b, "window {i}: b vanished"),
        }
    }
    assert!(saw_b);
}

#[test]
fn channels_hold_their_values_per_window_through_merges() {
    let mut recorder = SeriesRecorder::new(WindowWidth::Auto);
    let a = recorder.add_channel("a");
    let b = recorder.add_channel("b");
    let mut rng = Prng::new(17);
    let mut t = 0u64;
    let (mut count_a, mut sum_a, mut max_a) = (0u64, 0u128, 0u64);
    for _ in 0..50_000 {
        t += 1 + rng.below(100_000);
        let v = rng.below(1_000_000);
        recorder.record(a, SimTime(t), v);
        (count_a, sum_a, max_a) = (count_a + 1, sum_a + u128::from(v), max_a.max(v));
        // Channel b only in the second half of the run, and out of order.
        if t > 1_250_000_000 {
            recorder.record(b, SimTime(t - rng.below(t / 2)), 7);
        }
    }
    let series = recorder.finish(SimTime(t), Vec::new());
    assert!(series.windows() <= AUTO_WINDOWS_MAX);
    assert_eq!(series.channels.len(), 2);
    let (ca, cb) = (&series.channels[0], &series.channels[1]);
    assert_eq!((ca.name.as_str(), cb.name.as_str()), ("a", "b"));
    assert_eq!(ca.count.iter().sum::<u64>(), count_a);
    assert_eq!(ca.max.iter().flatten().max().copied(), Some(max_a));
    let weighted: f64 = ca
        .mean
        .iter()
        .zip(&ca.count)
        .map(|(m, &n)| m.unwrap_or(0.0) * n as f64)
        .sum();
    assert!((weighted - sum_a as f64).abs() / (sum_a as f64) < 1e-9);
    for i in 0..series.windows() {
        let present = ca.count[i] > 0;
        assert_eq!(ca.p50[i].is_some(), present, "window {i}");
        if let (Some(p50), Some(p99), Some(max)) = (ca.p50[i], ca.p99[i], ca.max[i]) {
            assert!(p50 <= p99 && p99 <= max, "window {i}");
        }
        assert_eq!(cb.p99[i], (cb.count[i] > 0).then_some(7), "window {i}");
    }
    assert!(cb.count.iter().sum::<u64>() > 0);
    assert_eq!(cb.count[0], 0, "b had nothing early in the run");
}

#[test]
fn a_snapshot_leaves_the_recording_as_it_was() {
    let reqs = requests(33, 2_000);
    let (first, second) = reqs.split_at(1_000);
    let mut device = Fifo::new(40_000, 8);
    let mut recorder = SeriesRecorder::new(WindowWidth::Auto);
    let channel = recorder.add_channel("x");
    let mut plain = recorder.clone();
    let drive = |recorder: &mut SeriesRecorder, device: &mut Fifo, part: &[Request]| {
        let run = conformance::drive(&mut Observed::new(device, recorder), part).unwrap();
        for c in &run.completions {
            recorder.record(channel, c.finish, c.latency().as_ns());
        }
        run.completions.last().unwrap().finish
    };
    let mut device_plain = Fifo::new(40_000, 8);
    let mid = drive(&mut recorder, &mut device, first);
    drive(&mut plain, &mut device_plain, first);
    let snap = recorder.snapshot(mid, device.counters());
    assert_eq!(snap.ops[0].requests.iter().sum::<u64>(), 1_000);
    assert_eq!(snap.channels[0].count.iter().sum::<u64>(), 1_000);
    // The second part starts after the first's end, as time goes on in a live run.
    let later: Vec<Request> = second
        .iter()
        .map(|r| Request {
            arrival: r.arrival + SimDuration(mid.as_ns()),
            ..*r
        })
        .collect();
    let end = drive(&mut recorder, &mut device, &later);
    drive(&mut plain, &mut device_plain, &later);
    assert_eq!(
        recorder.finish(end, device.counters()),
        plain.finish(end, device_plain.counters())
    );
}

#[test]
fn an_empty_run_has_no_windows() {
    let series = SeriesRecorder::new(WindowWidth::Auto).finish(SimTime::ZERO, Vec::new());
    assert_eq!(series.windows(), 0);
    assert_eq!(series.ops.len(), 1);
    assert!(series.ops[0].requests.is_empty());
}
