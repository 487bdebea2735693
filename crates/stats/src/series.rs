//! A run's time series: what happened in each window of time, in memory bounded whatever the
//! run's length.
//!
//! A [`SeriesRecorder`] is told of every submission and completion and, at the end of each
//! window, of the device's counters; [`SeriesRecorder::finish`] turns it into a plain-data
//! [`Series`]. [`Observed`] wraps a [`Device`] so that a driver (the engine, the emulator's
//! pacing thread, the co-simulation controller) records the series without knowing it.
//!
//! Windows are right-closed: window `i` holds what happened in `(i·w, (i+1)·w]` (window 0 also
//! holds the instant 0), so that a run ending at `end` fills `ceil(end / w)` windows and the last
//! one is never empty. A request counts in the window of its completion. When the windows
//! would grow past their limit, neighbouring pairs merge and the width doubles; a merged window
//! holds exactly what its two halves held, so totals never change.

use crate::histogram::{bucket_middle, bucket_of, buckets};
use storsim_core::{
    BlockWear, Completion, Described, Device, DeviceCounter, DeviceError, DevicePart, Op, Request,
    SimTime,
};

/// Buckets per power of two of a window's latency histogram, as a power of two: 32 buckets,
/// so a window's quantiles are within 1.6 % (half a bucket) of a recorded value. Finer would
/// multiply the memory each window holds for a precision no plot shows.
const SUB_BITS: u32 = 5;
const BUCKETS: usize = buckets(SUB_BITS);

/// The first window's width when the width is chosen automatically: 2^16 ns (65.5 µs), doubled
/// as the run grows, so a run of any length ends with between [`AUTO_WINDOWS_MAX`]/2 and
/// [`AUTO_WINDOWS_MAX`] windows (fewer only when it is shorter than 16.8 ms). Each doubling
/// costs [`AUTO_WINDOWS_MAX`]/2 readings of the device's counters, so the first width is not
/// finer than the shortest runs worth plotting need.
pub const AUTO_FIRST_WINDOW_NS: u64 = 1 << 16;
/// The most windows an automatic width keeps: a few hundred points per plot.
pub const AUTO_WINDOWS_MAX: usize = 512;
/// The most windows a width the user chose keeps; past it, the width doubles as an automatic
/// one does, so that memory stays bounded.
pub const FIXED_WINDOWS_MAX: usize = 8_192;

/// How wide the windows are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowWidth {
    /// Chosen as the run goes, for a few hundred windows.
    Auto,
    /// This many nanoseconds, doubled only if the run would need more than
    /// [`FIXED_WINDOWS_MAX`] windows.
    Fixed { width_ns: u64 },
}

/// A window's latencies as sorted (bucket, count) pairs: only the buckets used.
#[derive(Clone, Debug, Default, PartialEq)]
struct SparseHistogram(Vec<(u16, u32)>);

impl SparseHistogram {
    /// Counts one value in `bucket`, keeping the pairs sorted.
    fn add(&mut self, bucket: u16) {
        match self.0.binary_search_by_key(&bucket, |&(b, _)| b) {
            Ok(i) => self.0[i].1 = self.0[i].1.saturating_add(1),
            Err(i) => self.0.insert(i, (bucket, 1)),
        }
    }

    /// Adds `other`'s counts, keeping the pairs sorted.
    fn merge(&mut self, other: &SparseHistogram) {
        if other.0.is_empty() {
            return;
        }
        if self.0.is_empty() {
            self.0.clone_from(&other.0);
            return;
        }
        let mut merged = Vec::with_capacity(self.0.len() + other.0.len());
        let (mut a, mut b) = (self.0.iter().peekable(), other.0.iter().peekable());
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(&&x), Some(&&y)) if x.0 == y.0 => {
                    a.next();
                    b.next();
                    (x.0, x.1 + y.1)
                }
                (Some(&&x), Some(&&y)) if x.0 < y.0 => *a.next().expect("peeked"),
                (_, Some(_)) => *b.next().expect("peeked"),
                (Some(_), None) => *a.next().expect("peeked"),
                (None, None) => break,
            };
            merged.push(next);
        }
        self.0 = merged;
    }

    /// The value at quantile `q` by nearest rank among `total` samples: its bucket's middle,
    /// at most `max`.
    fn quantile(&self, q: f64, total: u64, max: u64) -> u64 {
        let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
        if rank == total {
            return max;
        }
        let mut seen = 0u64;
        for &(bucket, count) in &self.0 {
            seen += u64::from(count);
            if seen >= rank {
                return bucket_middle::<SUB_BITS>(usize::from(bucket)).min(max);
            }
        }
        max
    }
}

/// One operation's completions in one window.
#[derive(Clone, Debug, Default, PartialEq)]
struct OpWindow {
    requests: u64,
    bytes: u64,
    latency_sum_ns: u128,
    latency_max_ns: u64,
    latency: SparseHistogram,
}

impl OpWindow {
    fn merge(&mut self, other: &OpWindow) {
        self.requests += other.requests;
        self.bytes += other.bytes;
        self.latency_sum_ns += other.latency_sum_ns;
        self.latency_max_ns = self.latency_max_ns.max(other.latency_max_ns);
        self.latency.merge(&other.latency);
    }
}

/// One channel's values in one window (see [`SeriesRecorder::add_channel`]).
#[derive(Clone, Debug, Default, PartialEq)]
struct ValueWindow {
    count: u64,
    sum: u128,
    max: u64,
    histogram: SparseHistogram,
}

impl ValueWindow {
    fn merge(&mut self, other: &ValueWindow) {
        self.count += other.count;
        self.sum += other.sum;
        self.max = self.max.max(other.max);
        self.histogram.merge(&other.histogram);
    }
}

/// Everything recorded about one window.
#[derive(Clone, Debug, Default, PartialEq)]
struct Window {
    ops: [OpWindow; 4],
    /// Request-nanoseconds spent waiting at the host (arrived, not yet submitted) inside the
    /// window: the integral of the host queue's depth.
    host_queue_ns: u128,
    /// Request-nanoseconds spent in the system (arrived, not yet completed) inside the window.
    system_queue_ns: u128,
    /// The device's counters at the window's end, in the order of
    /// [`SeriesRecorder::counter_names`]; `None` until time passes the end.
    counters: Option<Vec<f64>>,
    /// The extra channels' values, by channel; shorter when the later channels had none here.
    channels: Vec<ValueWindow>,
}

/// The two queues whose depth each window integrates over time.
#[derive(Clone, Copy)]
enum Queue {
    /// Requests that arrived and were not yet given to the device.
    Host = 0,
    /// Requests that arrived and were not yet completed.
    System = 1,
}

impl Window {
    /// The request-nanoseconds `queue` spent inside this window.
    #[inline]
    fn queue_ns(&mut self, queue: Queue) -> &mut u128 {
        match queue {
            Queue::Host => &mut self.host_queue_ns,
            Queue::System => &mut self.system_queue_ns,
        }
    }

    /// This window and the one after it as one window.
    fn merge(&mut self, later: &Window) {
        for (a, b) in self.ops.iter_mut().zip(&later.ops) {
            a.merge(b);
        }
        self.host_queue_ns += later.host_queue_ns;
        self.system_queue_ns += later.system_queue_ns;
        if self.channels.len() < later.channels.len() {
            self.channels
                .resize_with(later.channels.len(), ValueWindow::default);
        }
        for (a, b) in self.channels.iter_mut().zip(&later.channels) {
            a.merge(b);
        }
        // The merged window ends where the later half did.
        self.counters.clone_from(&later.counters);
    }
}

/// The latencies of completions not yet folded into their window: a dense histogram per op,
/// cheap to record into, emptied into the window's sparse one when time moves to another
/// window (or the windows merge, or the run ends).
#[derive(Clone)]
struct Pending {
    window: usize,
    /// Op `o`'s bucket `b` at `o * BUCKETS + b`: each op's counts together, so that the few
    /// buckets a run's latencies fall in share cache lines.
    counts: Box<[u32]>,
    /// The lowest and highest bucket touched, so that folding scans only those.
    low: usize,
    high: usize,
}

impl Pending {
    fn new() -> Self {
        Pending {
            window: 0,
            counts: vec![0; 4 * BUCKETS].into_boxed_slice(),
            low: usize::MAX,
            high: 0,
        }
    }

    #[inline]
    fn record(&mut self, op: usize, latency_ns: u64) {
        let b = bucket_of::<SUB_BITS>(latency_ns);
        let slot = &mut self.counts[op * BUCKETS + b];
        // A window holds fewer than 2^32 completions of one latency bucket unless a run
        // completes four billion requests in one window; saturate rather than wrap.
        *slot = slot.saturating_add(1);
        self.low = self.low.min(b);
        self.high = self.high.max(b);
    }

    /// Moves the pending counts into `window`'s histograms.
    fn fold_into(&mut self, window: &mut Window) {
        if self.low > self.high {
            return;
        }
        for (op, counts) in self.counts.chunks_exact_mut(BUCKETS).enumerate() {
            let mut added = Vec::new();
            for (b, count) in counts
                .iter_mut()
                .enumerate()
                .take(self.high + 1)
                .skip(self.low)
            {
                if *count != 0 {
                    added.push((b as u16, *count));
                    *count = 0;
                }
            }
            window.ops[op].latency.merge(&SparseHistogram(added));
        }
        self.low = usize::MAX;
        self.high = 0;
    }
}

/// Records a run's time series. Feed it with [`SeriesRecorder::submitted`],
/// [`SeriesRecorder::completed`] and [`SeriesRecorder::counters_due`] /
/// [`SeriesRecorder::sample`] with non-decreasing times (or wrap the device in [`Observed`],
/// which does all three), then call [`SeriesRecorder::finish`]. A driver that has more to say
/// per window (the emulator's lateness) adds a channel of values with
/// [`SeriesRecorder::add_channel`]. A clone is a snapshot: [`SeriesRecorder::snapshot`] gives
/// the series so far and leaves the recording going.
#[derive(Clone)]
pub struct SeriesRecorder {
    width_ns: u64,
    max_windows: usize,
    /// Windows 0 up to the latest instant seen.
    windows: Vec<Window>,
    pending: Pending,
    counter_names: Vec<String>,
    /// The first window whose counters are not yet known.
    unsampled: usize,
    /// The last window's instants `(last_from_ns, last_to_ns]`: almost every instant the
    /// recorder is told of falls there, and comparing saves a division.
    last_from_ns: u64,
    last_to_ns: u64,
    /// The end of window `unsampled`: counters are due once time passes it.
    sample_after_ns: u64,
    /// Where each of the device's counters, in the order it lists them, is in
    /// `counter_names`, as its names were last read; `None` until they are read, or after the
    /// device changed. With it the values alone can be read ([`Device::counter_values`]).
    device_order: Option<Vec<usize>>,
    /// The values read at the last window's end, reused so that reading allocates nothing.
    scratch: Vec<f64>,
    /// The extra channels' names, in the order of their ids.
    channel_names: Vec<String>,
    /// Whether failed requests count in the windows' requests and latencies, as in the
    /// summary ([`crate::CollectorOptions::latency_includes_failed`]); they never count in
    /// the bytes.
    latency_includes_failed: bool,
    /// For each [`Queue`], the windows requests spent whole in it that are not yet added to
    /// the windows, as a difference array (one entry per window): entry `i` is how many more
    /// requests spanned window `i` whole than window `i - 1`. An overloaded run's requests
    /// wait across many windows, and adding a width to each of them one by one cost as much
    /// as the rest of the run; this way a request costs two additions whatever its wait.
    /// [`SeriesRecorder::settle_queues`] adds them in before the windows merge or are read.
    spanned: [Vec<i64>; 2],
    /// Whether `spanned` holds anything not yet added in.
    spanned_pending: bool,
}

/// Names a channel of values added with [`SeriesRecorder::add_channel`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChannelId(usize);

impl SeriesRecorder {
    /// An empty series with windows of `width`.
    pub fn new(width: WindowWidth) -> Self {
        let (width_ns, max_windows) = match width {
            WindowWidth::Auto => (AUTO_FIRST_WINDOW_NS, AUTO_WINDOWS_MAX),
            WindowWidth::Fixed { width_ns } => (width_ns.max(1), FIXED_WINDOWS_MAX),
        };
        SeriesRecorder {
            width_ns,
            max_windows,
            windows: Vec::new(),
            pending: Pending::new(),
            counter_names: Vec::new(),
            unsampled: 0,
            last_from_ns: 0,
            last_to_ns: 0,
            sample_after_ns: width_ns,
            device_order: None,
            scratch: Vec::new(),
            channel_names: Vec::new(),
            latency_includes_failed: false,
            spanned: [Vec::new(), Vec::new()],
            spanned_pending: false,
        }
    }

    /// Counts failed requests in the windows' requests and latencies too, as
    /// [`crate::CollectorOptions::latency_includes_failed`] does in the summary. By default,
    /// as there, they are left out: a request that timed out after 30 s says nothing of how
    /// fast the device serves.
    pub fn include_failed_latencies(&mut self, include: bool) {
        self.latency_includes_failed = include;
    }

    /// Adds a channel of values beside the requests' figures: each window then also holds the
    /// count, mean, quantiles (to within 1.6 %) and maximum of the values recorded in it with
    /// [`SeriesRecorder::record`], in [`Series::channels`] under `name`.
    pub fn add_channel(&mut self, name: &str) -> ChannelId {
        self.channel_names.push(name.to_string());
        ChannelId(self.channel_names.len() - 1)
    }

    /// Records `value` in `channel`, in the window that holds instant `at` (instants need not
    /// come in order).
    #[inline]
    pub fn record(&mut self, channel: ChannelId, at: SimTime, value: u64) {
        let i = self.reach(at.as_ns());
        let channels = &mut self.windows[i].channels;
        if channels.len() <= channel.0 {
            channels.resize_with(channel.0 + 1, ValueWindow::default);
        }
        let w = &mut channels[channel.0];
        w.count += 1;
        w.sum += u128::from(value);
        w.max = w.max.max(value);
        w.histogram.add(bucket_of::<SUB_BITS>(value) as u16);
    }

    /// The series so far, as [`SeriesRecorder::finish`] would give it for a run ending at
    /// `end`, leaving this recorder as it was. Costs a copy of the windows: a few hundred
    /// (at most [`FIXED_WINDOWS_MAX`]), whatever the run's length.
    pub fn snapshot(&self, end: SimTime, counters: Vec<DeviceCounter>) -> Series {
        self.clone().finish(end, counters)
    }

    /// The current width of a window, in nanoseconds.
    pub fn window_ns(&self) -> u64 {
        self.width_ns
    }

    /// The window that holds instant `t`, with windows right-closed.
    #[inline]
    fn index_of(&self, t: u64) -> usize {
        (t.saturating_sub(1) / self.width_ns) as usize
    }

    /// Makes sure the window holding `t` exists, merging pairs while it would be past the
    /// limit, and returns its index.
    #[inline]
    fn reach(&mut self, t: u64) -> usize {
        if t > self.last_from_ns && t <= self.last_to_ns {
            return self.windows.len() - 1;
        }
        self.reach_slowly(t)
    }

    #[cold]
    fn reach_slowly(&mut self, t: u64) -> usize {
        let mut i = self.index_of(t);
        if i >= self.windows.len() {
            while i >= self.max_windows {
                self.merge_pairs();
                i = self.index_of(t);
            }
            self.windows.resize_with(i + 1, Window::default);
            for spanned in &mut self.spanned {
                spanned.resize(i + 1, 0);
            }
            self.bounds_changed();
        }
        i
    }

    /// Recomputes what the fast paths compare against after the windows or their width
    /// changed.
    fn bounds_changed(&mut self) {
        let w = self.width_ns;
        let last = self.windows.len().saturating_sub(1) as u64;
        self.last_from_ns = last.saturating_mul(w);
        self.last_to_ns = self.last_from_ns.saturating_add(w);
        if self.windows.is_empty() {
            self.last_to_ns = 0;
        }
        self.sample_after_ns = (self.unsampled as u64 + 1).saturating_mul(w);
    }

    /// Halves the number of windows: each pair becomes one window of twice the width.
    #[cold]
    fn merge_pairs(&mut self) {
        self.fold_pending();
        // The windows spanned whole are a width's worth each, at the width before it doubles.
        self.settle_queues();
        let old = std::mem::take(&mut self.windows);
        let mut merged = Vec::with_capacity(old.len().div_ceil(2));
        let mut pairs = old.into_iter();
        while let Some(mut first) = pairs.next() {
            match pairs.next() {
                Some(second) => first.merge(&second),
                // A lone last window now ends a whole width later, which time has not passed.
                None => first.counters = None,
            }
            merged.push(first);
        }
        self.windows = merged;
        for spanned in &mut self.spanned {
            spanned.truncate(self.windows.len());
        }
        self.width_ns = self.width_ns.saturating_mul(2);
        self.unsampled = self
            .windows
            .iter()
            .take_while(|w| w.counters.is_some())
            .count();
        self.bounds_changed();
        self.pending.window = self.windows.len().saturating_sub(1);
    }

    fn fold_pending(&mut self) {
        if let Some(window) = self.windows.get_mut(self.pending.window) {
            self.pending.fold_into(window);
        }
    }

    /// A request that arrived at `arrival` was given to the device at `now`: it waited at the
    /// host in between.
    #[inline]
    pub fn submitted(&mut self, arrival: SimTime, now: SimTime) {
        let (from, to) = (arrival.as_ns(), now.as_ns());
        if to > from {
            self.reach(to);
            self.add_interval(Queue::Host, from, to);
        }
    }

    /// A request completed.
    #[inline]
    pub fn completed(&mut self, c: &Completion) {
        let finish = c.finish.as_ns();
        let i = self.reach(finish);
        if i != self.pending.window {
            self.fold_pending();
            self.pending.window = i;
        }
        // As in the summary, a failed request moved no data the host can use, and its latency
        // counts only when asked; it held its place in the queues either way.
        if c.status.is_ok() || self.latency_includes_failed {
            let latency_ns = c.latency().as_ns();
            let op = c.request.op.index();
            self.pending.record(op, latency_ns);
            let w = &mut self.windows[i].ops[op];
            w.requests += 1;
            if c.status.is_ok() {
                w.bytes += c.request.len_bytes;
            }
            w.latency_sum_ns += u128::from(latency_ns);
            w.latency_max_ns = w.latency_max_ns.max(latency_ns);
        }
        let arrival = c.request.arrival.as_ns();
        if finish > arrival {
            self.add_interval(Queue::System, arrival, finish);
        }
    }

    /// Adds the length of `[from, to)` (`from < to`) that falls in each window to its time in
    /// `queue`; every window the interval touches exists.
    #[inline]
    fn add_interval(&mut self, queue: Queue, from: u64, to: u64) {
        if from >= self.last_from_ns && to <= self.last_to_ns {
            let last = self.windows.len() - 1;
            *self.windows[last].queue_ns(queue) += u128::from(to - from);
            return;
        }
        self.add_spanning_interval(queue, from, to);
    }

    /// [`SeriesRecorder::add_interval`] for an interval that is not inside the last window:
    /// its first and last windows get their parts now, the windows in between a whole width
    /// each through `spanned`.
    fn add_spanning_interval(&mut self, queue: Queue, from: u64, to: u64) {
        let w = self.width_ns;
        let first = (from / w) as usize;
        let last = (((to - 1) / w) as usize).min(self.windows.len() - 1);
        if first > last {
            return;
        }
        let part = |i: usize| {
            let start = (i as u64).saturating_mul(w);
            let end = start.saturating_add(w);
            u128::from(to.min(end) - from.max(start))
        };
        *self.windows[first].queue_ns(queue) += part(first);
        if last > first {
            *self.windows[last].queue_ns(queue) += part(last);
        }
        // The windows in between lie inside the interval, which ends at `to` without
        // overflowing, so each holds exactly a width of it.
        if last > first + 1 {
            let spanned = &mut self.spanned[queue as usize];
            spanned[first + 1] += 1;
            spanned[last] -= 1;
            self.spanned_pending = true;
        }
    }

    /// Adds the windows spanned whole ([`SeriesRecorder::spanned`]) to the windows' queue
    /// times, a width each, and clears them.
    fn settle_queues(&mut self) {
        if !self.spanned_pending {
            return;
        }
        let w = u128::from(self.width_ns);
        for (queue, spanned) in [Queue::Host, Queue::System]
            .into_iter()
            .zip(&mut self.spanned)
        {
            let mut spanning: i64 = 0;
            for (window, change) in self.windows.iter_mut().zip(spanned.iter_mut()) {
                spanning += std::mem::take(change);
                // A running sum of +1s, each followed by its -1 further on: never negative.
                *window.queue_ns(queue) += spanning as u128 * w;
            }
        }
        self.spanned_pending = false;
    }

    /// Whether the device's counters are wanted before anything happens at `now`: time has
    /// passed the end of a window whose counters are not known.
    #[inline]
    pub fn counters_due(&self, now: SimTime) -> bool {
        now.as_ns() > self.sample_after_ns
    }

    /// The device's counters before anything happens at `now`: the values at the end of every
    /// window that ended before `now` and has none yet (the device did not change in between).
    pub fn sample(&mut self, now: SimTime, counters: Vec<DeviceCounter>) {
        let values = self.align(counters);
        self.set_counters(now, &values);
    }

    /// [`SeriesRecorder::sample`] read from `device`: the values alone once the names are
    /// known, and the names again when the number of values changes.
    pub fn sample_device<D: Device + ?Sized>(&mut self, now: SimTime, device: &D) {
        self.sample_with(now, &mut |v| device.counter_values(v), &|| {
            device.counters()
        });
    }

    /// [`SeriesRecorder::sample_device`] for a driver that holds the device where a closure
    /// can reach it: `values` appends what [`Device::counter_values`] would, `named` returns
    /// what [`Device::counters`] would.
    pub fn sample_with(
        &mut self,
        now: SimTime,
        values: &mut dyn FnMut(&mut Vec<f64>),
        named: &dyn Fn() -> Vec<DeviceCounter>,
    ) {
        if let Some(order) = &self.device_order {
            let mut read = std::mem::take(&mut self.scratch);
            read.clear();
            values(&mut read);
            // The same number of counters as when their names were read: the same counters
            // (a device that adds one, such as a new erase-count bucket, adds to the number).
            if read.len() == order.len() {
                let mut values = vec![f64::NAN; self.counter_names.len()];
                for (&i, &v) in order.iter().zip(&read) {
                    values[i] = v;
                }
                self.scratch = read;
                self.set_counters(now, &values);
                return;
            }
            self.scratch = read;
        }
        self.sample(now, named());
    }

    /// The instant after which the counters are next due ([`SeriesRecorder::counters_due`]).
    pub fn counters_due_after(&self) -> SimTime {
        SimTime(self.sample_after_ns)
    }

    /// The device was replaced by another (the emulator can switch models while it runs): its
    /// counters are read by name again, as the new device names them.
    pub fn device_changed(&mut self) {
        self.device_order = None;
    }

    /// `values` (in the order of `counter_names`) are the counters at the end of every window
    /// that ended before `now` and has none yet (the device did not change in between).
    fn set_counters(&mut self, now: SimTime, values: &[f64]) {
        let current = self.reach(now.as_ns());
        if self.unsampled >= current {
            return;
        }
        for w in &mut self.windows[self.unsampled..current] {
            w.counters = Some(values.to_vec());
        }
        self.unsampled = current;
        self.bounds_changed();
    }

    /// The counters' values in the order of `counter_names`, adding names not seen before, and
    /// where each of the device's counters goes ([`SeriesRecorder::device_order`]).
    fn align(&mut self, counters: Vec<DeviceCounter>) -> Vec<f64> {
        let mut order = Vec::with_capacity(counters.len());
        let mut values = vec![f64::NAN; self.counter_names.len()];
        for (k, c) in counters.into_iter().enumerate() {
            // Usually every name is where it was: look there first.
            let i = match self.counter_names.get(k) {
                Some(n) if *n == c.name => k,
                _ => match self.counter_names.iter().position(|n| *n == c.name) {
                    Some(i) => i,
                    None => {
                        self.counter_names.push(c.name);
                        values.push(f64::NAN);
                        self.counter_names.len() - 1
                    }
                },
            };
            values[i] = c.value;
            order.push(i);
        }
        self.device_order = Some(order);
        values
    }

    /// The series of a run that ended at `end` (its last completion), with the device's
    /// counters then.
    pub fn finish(mut self, end: SimTime, counters: Vec<DeviceCounter>) -> Series {
        let end_ns = end.as_ns();
        if end_ns > 0 || !self.windows.is_empty() {
            self.reach(end_ns);
        }
        self.fold_pending();
        self.settle_queues();
        let values = self.align(counters);
        let n = self.windows.len();
        for w in &mut self.windows[self.unsampled.min(n)..] {
            w.counters = Some(values.clone());
        }
        self.build(end_ns)
    }

    fn build(self, end_ns: u64) -> Series {
        let w = self.width_ns;
        let n = self.windows.len();
        // Each window's length in seconds: the last one ends with the run.
        let seconds: Vec<f64> = (0..n)
            .map(|i| {
                let start = (i as u64).saturating_mul(w);
                let end = if i + 1 == n {
                    end_ns.max(start + 1)
                } else {
                    start + w
                };
                (end - start) as f64 / 1e9
            })
            .collect();
        let all: Vec<OpWindow> = self
            .windows
            .iter()
            .map(|win| {
                let mut all = OpWindow::default();
                win.ops.iter().for_each(|o| all.merge(o));
                // Bytes that crossed the interface, as the run's summary counts them: a
                // trim's or flush's range moves no data.
                all.bytes = win.ops[Op::Read.index()].bytes + win.ops[Op::Write.index()].bytes;
                all
            })
            .collect();
        let mut ops = vec![OpSeries::of(None, &all, &seconds)];
        for op in Op::ALL {
            let windows: Vec<OpWindow> = self
                .windows
                .iter()
                .map(|w| w.ops[op.index()].clone())
                .collect();
            if windows.iter().any(|o| o.requests > 0) {
                ops.push(OpSeries::of(Some(op), &windows, &seconds));
            }
        }
        let mean = |ns: u128, s: f64| ns as f64 / (s * 1e9);
        let channels = self
            .channel_names
            .iter()
            .enumerate()
            .map(|(c, name)| {
                let empty = ValueWindow::default();
                let windows: Vec<&ValueWindow> = self
                    .windows
                    .iter()
                    .map(|win| win.channels.get(c).unwrap_or(&empty))
                    .collect();
                ChannelSeries::of(name, &windows)
            })
            .collect();
        let counters = self
            .counter_names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let values = self
                    .windows
                    .iter()
                    .map(|win| {
                        win.counters
                            .as_ref()
                            .and_then(|v| v.get(i).copied())
                            .filter(|x| !x.is_nan())
                    })
                    .collect();
                (name.clone(), values)
            })
            .collect();
        Series {
            window_ns: w,
            end_ns,
            ops,
            host_queue_mean: self
                .windows
                .iter()
                .zip(&seconds)
                .map(|(win, &s)| mean(win.host_queue_ns, s))
                .collect(),
            device_queue_mean: self
                .windows
                .iter()
                .zip(&seconds)
                .map(|(win, &s)| mean(win.system_queue_ns.saturating_sub(win.host_queue_ns), s))
                .collect(),
            counters,
            channels,
        }
    }
}

/// One operation's figures in each window (or every operation's, `op` = `None`).
#[derive(Clone, Debug, PartialEq)]
pub struct OpSeries {
    /// The operation, or `None` for all of them together.
    pub op: Option<Op>,
    /// Completions in each window.
    pub requests: Vec<u64>,
    /// Bytes of those completions (for all ops together, reads' and writes' only: a trim's
    /// or flush's range moves no data), as the run's summary counts them.
    pub bytes: Vec<u64>,
    /// Completions per second of the window.
    pub iops: Vec<f64>,
    /// Bytes per second of the window.
    pub bandwidth_bytes_per_s: Vec<f64>,
    /// Mean latency of the window's completions; `None` for a window without any.
    pub latency_mean_ns: Vec<Option<f64>>,
    /// Median latency, to within 1.6 %.
    pub latency_p50_ns: Vec<Option<u64>>,
    /// 99th percentile.
    pub latency_p99_ns: Vec<Option<u64>>,
    /// 99.9th percentile.
    pub latency_p999_ns: Vec<Option<u64>>,
    /// The longest, exact.
    pub latency_max_ns: Vec<Option<u64>>,
}

impl OpSeries {
    fn of(op: Option<Op>, windows: &[OpWindow], seconds: &[f64]) -> Self {
        let per_window = |f: &dyn Fn(&OpWindow) -> Option<u64>| -> Vec<Option<u64>> {
            windows.iter().map(f).collect()
        };
        let quantile = |q: f64| {
            per_window(&|o: &OpWindow| {
                (o.requests > 0).then(|| o.latency.quantile(q, o.requests, o.latency_max_ns))
            })
        };
        OpSeries {
            op,
            requests: windows.iter().map(|o| o.requests).collect(),
            iops: windows
                .iter()
                .zip(seconds)
                .map(|(o, s)| o.requests as f64 / s)
                .collect(),
            bytes: windows.iter().map(|o| o.bytes).collect(),
            bandwidth_bytes_per_s: windows
                .iter()
                .zip(seconds)
                .map(|(o, s)| o.bytes as f64 / s)
                .collect(),
            latency_mean_ns: windows
                .iter()
                .map(|o| (o.requests > 0).then(|| o.latency_sum_ns as f64 / o.requests as f64))
                .collect(),
            latency_p50_ns: quantile(0.5),
            latency_p99_ns: quantile(0.99),
            latency_p999_ns: quantile(0.999),
            latency_max_ns: per_window(&|o: &OpWindow| {
                (o.requests > 0).then_some(o.latency_max_ns)
            }),
        }
    }
}

/// A channel's values in each window (see [`SeriesRecorder::add_channel`]); the figures are
/// `None` in a window without values.
#[derive(Clone, Debug, PartialEq)]
pub struct ChannelSeries {
    /// The name the channel was added with.
    pub name: String,
    /// Values recorded in each window.
    pub count: Vec<u64>,
    /// Their mean (exact).
    pub mean: Vec<Option<f64>>,
    /// Their median, to within 1.6 %.
    pub p50: Vec<Option<u64>>,
    /// Their 99th percentile, to within 1.6 %.
    pub p99: Vec<Option<u64>>,
    /// The largest (exact).
    pub max: Vec<Option<u64>>,
}

impl ChannelSeries {
    fn of(name: &str, windows: &[&ValueWindow]) -> Self {
        let figure = |f: &dyn Fn(&ValueWindow) -> u64| -> Vec<Option<u64>> {
            windows
                .iter()
                .map(|w| (w.count > 0).then(|| f(w)))
                .collect()
        };
        let quantile = |q: f64| figure(&|w| w.histogram.quantile(q, w.count, w.max));
        ChannelSeries {
            name: name.to_string(),
            count: windows.iter().map(|w| w.count).collect(),
            mean: windows
                .iter()
                .map(|w| (w.count > 0).then(|| w.sum as f64 / w.count as f64))
                .collect(),
            p50: quantile(0.5),
            p99: quantile(0.99),
            max: figure(&|w| w.max),
        }
    }
}

/// A run's time series as plain data: every vector has one entry per window.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// The width of every window; window `i` covers `(i·window_ns, (i+1)·window_ns]`.
    pub window_ns: u64,
    /// The run's end, where the last window is cut.
    pub end_ns: u64,
    /// All operations together first, then each operation the run had.
    pub ops: Vec<OpSeries>,
    /// Time-weighted mean number of requests that had arrived and were not yet given to the
    /// device.
    pub host_queue_mean: Vec<f64>,
    /// Time-weighted mean number of requests given to the device and not yet completed.
    pub device_queue_mean: Vec<f64>,
    /// Each device counter's value at the end of each window (`None` before the counter
    /// existed), in the device's order.
    pub counters: Vec<(String, Vec<Option<f64>>)>,
    /// The extra channels, in the order they were added (none unless a driver added some).
    pub channels: Vec<ChannelSeries>,
}

impl Series {
    /// How many windows the series has.
    pub fn windows(&self) -> usize {
        self.host_queue_mean.len()
    }
}

/// A device whose driver's calls also feed a [`SeriesRecorder`]: submissions, completions, and
/// the counters at each window's end (read before the device moves past it). Everything else
/// passes through unchanged, so a run's results are those of the device alone.
pub struct Observed<'a, D: Device + ?Sized> {
    device: &'a mut D,
    recorder: &'a mut SeriesRecorder,
}

impl<'a, D: Device + ?Sized> Observed<'a, D> {
    /// `device`, recording into `recorder`.
    pub fn new(device: &'a mut D, recorder: &'a mut SeriesRecorder) -> Self {
        Observed { device, recorder }
    }

    #[inline]
    fn sample_if_due(&mut self, now: SimTime) {
        if self.recorder.counters_due(now) {
            self.recorder.sample_device(now, &*self.device);
        }
    }
}

impl<D: Device + ?Sized> Device for Observed<'_, D> {
    fn model_name(&self) -> &'static str {
        self.device.model_name()
    }
    fn capacity_bytes(&self) -> u64 {
        self.device.capacity_bytes()
    }
    fn queue_depth(&self) -> usize {
        self.device.queue_depth()
    }
    #[inline]
    fn submit(&mut self, now: SimTime, request: Request) -> Result<(), DeviceError> {
        self.sample_if_due(now);
        let arrival = request.arrival;
        self.device.submit(now, request)?;
        self.recorder.submitted(arrival, now);
        Ok(())
    }
    fn next_deadline(&self) -> Option<SimTime> {
        self.device.next_deadline()
    }
    #[inline]
    fn advance(&mut self, now: SimTime, done: &mut Vec<Completion>) {
        self.sample_if_due(now);
        let before = done.len();
        self.device.advance(now, done);
        for c in &done[before..] {
            self.recorder.completed(c);
        }
    }
    fn counters(&self) -> Vec<DeviceCounter> {
        self.device.counters()
    }
    fn counter_values(&self, values: &mut Vec<f64>) {
        self.device.counter_values(values)
    }
    fn counter_descriptors(&self) -> Vec<Described> {
        self.device.counter_descriptors()
    }
    fn prefetch(&self, request: &Request) {
        self.device.prefetch(request)
    }
    fn parts(&self) -> Vec<DevicePart> {
        self.device.parts()
    }
    fn block_wear(&self) -> Vec<BlockWear> {
        self.device.block_wear()
    }
}

#[cfg(test)]
#[path = "series_tests.rs"]
mod tests;
