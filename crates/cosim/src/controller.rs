//! The controller's state machine: who runs, who waits for what, and the device model.
//!
//! Every thread of the program is running, waiting for the device, sleeping, blocked in a wait
//! for a child, or resuming (its reply is on the way). The virtual clock advances only while
//! some thread runs; when none runs and none is resuming, the controller jumps the clock to the
//! next event (a device completion or a sleep's end) and wakes whoever it concerns: the
//! thesis' time-skipping, done per program instead of per operating system. Requests reach the
//! model in non-decreasing virtual time because each is stamped with the clock, floored at the
//! model's own latest instant.

use crate::layout::{Layout, LayoutError};
use crate::vclock::{mono_ns, VirtualClock};
use crate::CallStats;
use rustix::process::PidfdFlags;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::io::Write;
use std::os::fd::OwnedFd;
use storsim_core::{Completion, Device, DeviceCounter, DeviceError, Op, Request, SimTime};
use storsim_cosim_shim::proto::{IoOp, Kind, Msg, Reply};
use storsim_stats::{Collector, Observed, SeriesRecorder, WindowWidth};
use storsim_workload::trace::{RecordWriter, RecordedIo};

pub type ConnId = usize;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ThreadState {
    Running,
    Io { call: u64 },
    Sleeping { until_v: u64, seq: u64 },
    InWait,
    Resuming,
}

struct Thread {
    pid: i32,
    state: ThreadState,
}

pub struct Proc {
    running: i64,
    ppid: i32,
    /// Counted before it announced itself (found as a child of a waiting process).
    placeholder: bool,
    /// Threads of this process blocked in waitpid.
    waiters: Vec<Waiter>,
    /// Threads of this process blocked in pthread_join.
    joiners: Vec<Waiter>,
    pub pidfd: Option<OwnedFd>,
}

/// A thread blocked in a wait, and what may end it.
struct Waiter {
    conn: ConnId,
    /// Real time at which it entered the wait: a thread that ended before cannot be what a
    /// join waits for (its exit may be read after the joiner's next join).
    since_r: u64,
    /// The process's children when it entered the wait (`None` if /proc does not say): the
    /// end of another child, read late, is not what this wait waits for.
    children: Option<BTreeSet<i32>>,
}

/// What may end a wait.
enum WaitEnd {
    ChildEnded(i32),
    ThreadEnded { r_ns: u64 },
}

/// One intercepted I/O call: the device requests it became and the status to return.
struct Call {
    conn: Option<ConnId>,
    pending: u32,
    status: i64,
}

/// Writes the record in arrival order although completions come in finish order.
pub struct Recorder {
    writer: RecordWriter<Box<dyn Write + Send>>,
    /// Completed rows waiting for an earlier one; `None` for a request that never ran.
    done: BTreeMap<u64, Option<RecordedIo>>,
    next: u64,
    pub error: Option<std::io::Error>,
}

impl Recorder {
    pub fn new(writer: RecordWriter<Box<dyn Write + Send>>) -> Recorder {
        Recorder {
            writer,
            done: BTreeMap::new(),
            next: 0,
            error: None,
        }
    }

    fn completed(&mut self, id: u64, io: Option<RecordedIo>) {
        self.done.insert(id, io);
        while let Some(io) = self.done.remove(&self.next) {
            if let (Some(io), None) = (io, &self.error) {
                if let Err(e) = self.writer.write(&io) {
                    self.error = Some(e);
                }
            }
            self.next += 1;
        }
    }

    pub fn finish(mut self) -> std::io::Result<()> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.writer.finish().map(|_| ())
    }
}

const ENOSPC: i64 = 28;
const EBADF: i64 = 9;
const EIO: i64 = 5;

pub struct Controller {
    device: Box<dyn Device>,
    pub layout: Layout,
    pub clock: VirtualClock,
    pub procs: BTreeMap<i32, Proc>,
    threads: BTreeMap<ConnId, Thread>,
    resuming: usize,
    sleepers: BTreeSet<(u64, u64, ConnId)>,
    sleep_seq: u64,
    calls: BTreeMap<u64, Call>,
    next_call: u64,
    requests: BTreeMap<u64, u64>,
    next_request: u64,
    queued: VecDeque<(u64, Request)>,
    /// The latest virtual instant the model was told about.
    model_now: u64,
    /// The latest virtual instant a request arrived at, told to the model or still waiting
    /// for queue space: the floor of the next call's stamp, so that requests arrive in order
    /// although a call's message may be read after one that entered later.
    latest_arrival_v: u64,
    /// Virtual time of the first request: the model's own clock starts there, as it does when
    /// `simulate` replays the recorded stream (which rebases the first arrival to 0), so that
    /// a disk's rotational position is the same in both.
    origin_v: Option<u64>,
    done: Vec<Completion>,
    pub collector: Collector,
    /// The device's requests in windows of the model's time (which starts at the first
    /// request, as `origin_v` says), fed through [`Observed`] on every call to the model.
    pub series: SeriesRecorder,
    /// The model's time of the latest completion: where the series ends.
    pub last_finish: SimTime,
    pub recorder: Option<Recorder>,
    /// Replies the session must send.
    pub outbox: Vec<(ConnId, Reply)>,
    pub stats: CallStats,
    pub warnings: BTreeSet<String>,
}

impl Controller {
    pub fn new(
        device: Box<dyn Device>,
        layout: Layout,
        clock: VirtualClock,
        recorder: Option<Recorder>,
    ) -> Controller {
        Controller {
            device,
            layout,
            clock,
            procs: BTreeMap::new(),
            threads: BTreeMap::new(),
            resuming: 0,
            sleepers: BTreeSet::new(),
            sleep_seq: 0,
            calls: BTreeMap::new(),
            next_call: 0,
            requests: BTreeMap::new(),
            next_request: 0,
            queued: VecDeque::new(),
            model_now: 0,
            latest_arrival_v: 0,
            origin_v: None,
            done: Vec::new(),
            collector: Collector::new(),
            series: SeriesRecorder::new(WindowWidth::Auto),
            last_finish: SimTime::ZERO,
            recorder,
            outbox: Vec::new(),
            stats: CallStats::default(),
            warnings: BTreeSet::new(),
        }
    }

    /// The model's counters now.
    pub fn device_counters(&self) -> Vec<DeviceCounter> {
        self.device.counters()
    }

    pub fn into_device(self) -> Box<dyn Device> {
        self.device
    }

    fn add_running(&mut self, pid: i32, n: i64, r: u64) {
        if let Some(p) = self.procs.get_mut(&pid) {
            p.running += n;
            self.clock.add(n, r);
        }
    }

    fn remove_running(&mut self, pid: i32, n: i64) {
        if let Some(p) = self.procs.get_mut(&pid) {
            let n = n.min(p.running);
            p.running -= n;
            self.clock.remove(n);
        }
    }

    /// The thread on `conn` stops running at `r_entry`; returns its call's virtual instant,
    /// never before the model's clock or an earlier call's requests.
    fn stop_running(&mut self, pid: i32, r_entry: u64) -> u64 {
        let floor_v = self.model_now.max(self.latest_arrival_v);
        match self.procs.get_mut(&pid) {
            Some(p) if p.running > 0 => {
                p.running -= 1;
                // A thread that was woken and has not said it runs again may have read the
                // clock at any moment since: it is not counted, so the clock cannot stop
                // behind its back.
                self.clock.stop(r_entry, floor_v, self.resuming == 0)
            }
            _ => self.clock.now_v().max(floor_v),
        }
    }

    fn register_process(&mut self, pid: i32, ppid: i32, r: u64) {
        match self.procs.get_mut(&pid) {
            Some(p) if p.placeholder => {
                p.placeholder = false;
                p.ppid = ppid;
                self.stats.processes += 1;
            }
            Some(p) => {
                // A new image of a process already counted (exec): one thread runs now.
                let n = p.running;
                if n > 1 {
                    self.remove_running(pid, n - 1);
                } else if n < 1 {
                    self.add_running(pid, 1 - n, r);
                }
            }
            None => {
                self.stats.processes += 1;
                // A short-lived process may be gone (and reaped) before its announcement is
                // read; counting it would keep the clock from ever skipping again.
                let Some(pidfd) = pidfd_open(pid) else {
                    return;
                };
                self.procs.insert(
                    pid,
                    Proc {
                        running: 0,
                        ppid,
                        placeholder: false,
                        waiters: Vec::new(),
                        joiners: Vec::new(),
                        pidfd: Some(pidfd),
                    },
                );
                self.add_running(pid, 1, r);
            }
        }
    }

    /// The children of `pid`, as /proc lists them (`None` when it cannot say).
    fn children_of(pid: i32) -> Option<BTreeSet<i32>> {
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
        let mut children = BTreeSet::new();
        let mut listed = false;
        for task in tasks.flatten() {
            if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
                listed = true;
                children.extend(
                    text.split_whitespace()
                        .filter_map(|c| c.parse::<i32>().ok()),
                );
            }
        }
        listed.then_some(children)
    }

    /// Children of `pid` that have not announced themselves yet (a vfork'd child, a static
    /// binary) count as running until they do or end, so a parent waiting for them never lets
    /// the clock skip past their work.
    fn adopt_children(&mut self, pid: i32, children: &BTreeSet<i32>) {
        for &child in children {
            if self.procs.contains_key(&child) {
                continue;
            }
            let Some(pidfd) = pidfd_open(child) else {
                continue;
            };
            self.procs.insert(
                child,
                Proc {
                    running: 0,
                    ppid: pid,
                    placeholder: true,
                    waiters: Vec::new(),
                    joiners: Vec::new(),
                    pidfd: Some(pidfd),
                },
            );
            self.add_running(child, 1, mono_ns());
        }
    }

    /// Threads of `pid` blocked in a wait that `end` may finish run again: counting them as
    /// running before they can say so keeps the clock from skipping past them. A wait that
    /// `end` cannot finish (it began after, or concerns other children) stays.
    fn release_waits(&mut self, pid: i32, end: WaitEnd) {
        let Some(p) = self.procs.get_mut(&pid) else {
            return;
        };
        let list = match end {
            WaitEnd::ChildEnded(_) => &mut p.waiters,
            WaitEnd::ThreadEnded { .. } => &mut p.joiners,
        };
        let mut released = Vec::new();
        list.retain(|w| {
            let ends = match end {
                WaitEnd::ChildEnded(child) => match &w.children {
                    None => true,
                    Some(c) => c.contains(&child),
                },
                WaitEnd::ThreadEnded { r_ns } => w.since_r <= r_ns,
            };
            if ends {
                released.push(w.conn);
            }
            !ends
        });
        for w in released {
            if let Some(t) = self.threads.get_mut(&w) {
                if t.state == ThreadState::InWait {
                    t.state = ThreadState::Running;
                    self.add_running(pid, 1, mono_ns());
                }
            }
        }
    }

    /// Process `pid` ended: its parent's waiting threads run again, its own runners are gone.
    pub fn process_ended(&mut self, pid: i32) {
        let Some(ppid) = self.procs.get(&pid).map(|p| p.ppid) else {
            return;
        };
        self.release_waits(ppid, WaitEnd::ChildEnded(pid));
        let n = self.procs.get(&pid).map_or(0, |p| p.running);
        self.remove_running(pid, n);
        self.procs.remove(&pid);
    }

    /// The connection closed: the thread ended or its process did.
    pub fn connection_closed(&mut self, conn: ConnId) {
        let Some(t) = self.threads.remove(&conn) else {
            return;
        };
        match t.state {
            ThreadState::Sleeping { until_v, seq } => {
                self.sleepers.remove(&(until_v, seq, conn));
            }
            ThreadState::Resuming => {
                self.resuming -= 1;
                self.clock.seen_now();
            }
            ThreadState::Io { call } => {
                if let Some(c) = self.calls.get_mut(&call) {
                    c.conn = None;
                }
            }
            ThreadState::InWait => {
                if let Some(p) = self.procs.get_mut(&t.pid) {
                    p.waiters.retain(|w| w.conn != conn);
                    p.joiners.retain(|w| w.conn != conn);
                }
            }
            ThreadState::Running => {}
        }
    }

    fn reply(&mut self, conn: ConnId, status: i64, value: u64) {
        self.outbox.push((conn, Reply { status, value }));
    }

    fn wake(&mut self, conn: ConnId, status: i64) {
        if let Some(t) = self.threads.get_mut(&conn) {
            t.state = ThreadState::Resuming;
            self.resuming += 1;
            self.reply(conn, status, 0);
        }
    }

    /// Handles one message. `Err` names a protocol violation; the session then closes the
    /// connection.
    pub fn handle(&mut self, conn: ConnId, msg: &Msg, payload: &[u8]) -> Result<(), &'static str> {
        let pid = self
            .threads
            .entry(conn)
            .or_insert_with(|| Thread {
                pid: msg.pid,
                state: ThreadState::Running,
            })
            .pid;
        if pid != msg.pid {
            return Err("a message named another process than its connection's");
        }
        let state = self.threads[&conn].state;
        let running = state == ThreadState::Running;
        match msg.kind {
            Kind::ProcStart | Kind::ForkChild => {
                self.register_process(pid, msg.a as i32, msg.r_ns);
                self.reply(conn, 0, 0);
            }
            Kind::ThreadStart => {
                self.stats.threads += 1;
                self.add_running(pid, 1, mono_ns());
                self.reply(conn, 0, 0);
            }
            Kind::ThreadExit => {
                if running {
                    self.remove_running(pid, 1);
                }
                self.release_waits(pid, WaitEnd::ThreadEnded { r_ns: msg.r_ns });
            }
            Kind::Open => {
                self.stats.opens += 1;
                let id = self.layout.file(payload);
                self.reply(conn, 0, id);
            }
            Kind::Io => {
                if !running {
                    return Err("I/O from a thread that was not running");
                }
                let op = IoOp::from_u64(msg.a).ok_or("unknown I/O operation")?;
                self.io(conn, pid, op, msg);
            }
            Kind::Sleep => {
                if !running {
                    return Err("a sleep from a thread that was not running");
                }
                self.sleep(conn, pid, msg);
            }
            Kind::WaitEnter => {
                if running {
                    self.wait_enter(conn, pid, msg);
                }
            }
            Kind::WaitLeave => {
                if state == ThreadState::InWait {
                    self.wait_leave(conn, pid, msg);
                }
            }
            Kind::Resumed => {
                if state == ThreadState::Resuming {
                    self.resuming -= 1;
                    self.threads.get_mut(&conn).unwrap().state = ThreadState::Running;
                    self.add_running(pid, 1, msg.r_ns);
                }
            }
            Kind::Unlink => self.layout.unlink(payload),
            Kind::Rename => {
                let split = payload
                    .iter()
                    .position(|&b| b == 0)
                    .ok_or("a rename without two paths")?;
                self.layout.rename(&payload[..split], &payload[split + 1..]);
            }
            Kind::Truncate => self.layout.truncate(msg.b, msg.c),
            Kind::Punch => self.layout.punch(msg.b, msg.c, msg.d),
            Kind::Allocate => {
                // Space that cannot be had is simply not reserved; the writes will say so.
                let _ = self.layout.map(msg.b, msg.c, msg.d);
            }
            Kind::Warn => {
                if self.warnings.len() < 64 {
                    self.warnings
                        .insert(String::from_utf8_lossy(payload).into_owned());
                }
            }
        }
        Ok(())
    }

    /// A running thread goes to sleep until a virtual instant (`msg.a` 1: `msg.b` is that
    /// instant; otherwise `msg.b` is a duration from the thread's stop).
    fn sleep(&mut self, conn: ConnId, pid: i32, msg: &Msg) {
        let stamp = self.stop_running(pid, msg.r_ns);
        let until_v = if msg.a == 1 {
            msg.b
        } else {
            stamp.saturating_add(msg.b)
        };
        self.stats.sleeps += 1;
        self.stats.sleep_requested_ns += until_v.saturating_sub(stamp);
        self.sleep_seq += 1;
        let seq = self.sleep_seq;
        self.sleepers.insert((until_v, seq, conn));
        self.threads.get_mut(&conn).unwrap().state = ThreadState::Sleeping { until_v, seq };
    }

    /// A running thread starts waiting: for a thread to end (`msg.a` 1, a join) or for its
    /// process's children; it stops running until the wait ends.
    fn wait_enter(&mut self, conn: ConnId, pid: i32, msg: &Msg) {
        self.stop_running(pid, msg.r_ns);
        self.threads.get_mut(&conn).unwrap().state = ThreadState::InWait;
        let join = msg.a == 1;
        let children = if join { None } else { Self::children_of(pid) };
        if let Some(c) = &children {
            self.adopt_children(pid, c);
        }
        let waiter = Waiter {
            conn,
            since_r: msg.r_ns,
            children,
        };
        if let Some(p) = self.procs.get_mut(&pid) {
            if join {
                p.joiners.push(waiter);
            } else {
                p.waiters.push(waiter);
            }
        }
    }

    /// A waiting thread's wait ended: it runs again.
    fn wait_leave(&mut self, conn: ConnId, pid: i32, msg: &Msg) {
        self.threads.get_mut(&conn).unwrap().state = ThreadState::Running;
        if let Some(p) = self.procs.get_mut(&pid) {
            p.waiters.retain(|w| w.conn != conn);
            p.joiners.retain(|w| w.conn != conn);
        }
        self.add_running(pid, 1, msg.r_ns);
    }

    fn io(&mut self, conn: ConnId, pid: i32, op: IoOp, msg: &Msg) {
        let stamp = self.stop_running(pid, msg.r_ns);
        let (device_op, pieces) = match op {
            IoOp::Flush => {
                self.stats.flushes += 1;
                (Op::Flush, Ok(vec![(0, 0)]))
            }
            IoOp::Read => {
                self.stats.reads += 1;
                self.stats.read_bytes += msg.d;
                (Op::Read, self.layout.map(msg.b, msg.c, msg.d))
            }
            IoOp::Write => {
                self.stats.writes += 1;
                self.stats.write_bytes += msg.d;
                (Op::Write, self.layout.map(msg.b, msg.c, msg.d))
            }
        };
        let call = self.next_call;
        self.next_call += 1;
        self.threads.get_mut(&conn).unwrap().state = ThreadState::Io { call };
        let pieces = match pieces {
            Ok(p) if !p.is_empty() => p,
            Ok(_) => {
                self.wake(conn, 0);
                return;
            }
            Err(e) => {
                self.stats.failed += 1;
                let errno = match e {
                    LayoutError::Full | LayoutError::BeyondDevice => ENOSPC,
                    LayoutError::UnknownFile => EBADF,
                };
                self.wake(conn, -errno);
                return;
            }
        };
        self.calls.insert(
            call,
            Call {
                conn: Some(conn),
                pending: pieces.len() as u32,
                status: 0,
            },
        );
        let origin = *self.origin_v.get_or_insert(stamp);
        self.latest_arrival_v = stamp;
        for (offset_bytes, len_bytes) in pieces {
            let id = self.next_request;
            self.next_request += 1;
            let request = Request {
                id,
                op: device_op,
                offset_bytes,
                len_bytes,
                arrival: SimTime::from_ns(stamp - origin),
                flow: 0,
            };
            self.requests.insert(id, call);
            if self.queued.is_empty() {
                self.submit(request);
            } else {
                self.queued.push_back((id, request));
            }
        }
    }

    /// The model's clock reading for virtual time `v`.
    fn model_time(&self, v: u64) -> SimTime {
        SimTime::from_ns(v.saturating_sub(self.origin_v.unwrap_or(0)))
    }

    /// The model's next deadline in virtual time.
    fn model_deadline(&self) -> Option<u64> {
        let origin = self.origin_v.unwrap_or(0);
        self.device.next_deadline().map(|t| t.as_ns() + origin)
    }

    /// Hands a request to the model at its arrival (or now, if it waited for queue space).
    fn submit(&mut self, request: Request) {
        let origin = self.origin_v.unwrap_or(0);
        let now = self.model_now.max(request.arrival.as_ns() + origin);
        let at = self.model_time(now);
        match Observed::new(self.device.as_mut(), &mut self.series).submit(at, request) {
            Ok(()) => self.model_now = now,
            Err(DeviceError::QueueFull { .. }) => self.queued.push_back((request.id, request)),
            Err(_) => {
                self.stats.failed += 1;
                if let Some(r) = self.recorder.as_mut() {
                    r.completed(request.id, None);
                }
                self.piece_done(request.id, -EIO);
            }
        }
    }

    fn piece_done(&mut self, id: u64, status: i64) {
        let Some(call) = self.requests.remove(&id) else {
            return;
        };
        let Some(c) = self.calls.get_mut(&call) else {
            return;
        };
        c.pending -= 1;
        if status < 0 {
            c.status = status;
        }
        if c.pending == 0 {
            let c = self.calls.remove(&call).unwrap();
            if let Some(conn) = c.conn {
                self.wake(conn, c.status);
            }
        }
    }

    /// Completes everything the model finishes by virtual time `v` and wakes sleepers due.
    fn deliver(&mut self, v: u64) {
        let origin = self.origin_v.unwrap_or(0);
        while let Some(t) = self.model_deadline() {
            if t > v {
                break;
            }
            self.model_now = self.model_now.max(t);
            let mut done = std::mem::take(&mut self.done);
            let at = self.model_time(self.model_now);
            Observed::new(self.device.as_mut(), &mut self.series).advance(at, &mut done);
            for c in done.drain(..) {
                self.collector.record(&c);
                self.last_finish = self.last_finish.max(c.finish);
                if let Some(r) = self.recorder.as_mut() {
                    r.completed(
                        c.request.id,
                        Some(RecordedIo {
                            // The controller stamps a request in virtual time as the model
                            // receives it: there is no intake between the two.
                            received_ns: c.request.arrival.as_ns() + origin,
                            arrival_ns: c.request.arrival.as_ns() + origin,
                            op: c.request.op,
                            offset_bytes: c.request.offset_bytes,
                            len_bytes: c.request.len_bytes,
                            intended_finish_ns: c.finish.as_ns() + origin,
                            actual_finish_ns: c.finish.as_ns() + origin,
                        }),
                    );
                }
                // A faults layer's error reaches the program as its call's errno, in virtual
                // time like any completion.
                self.piece_done(c.request.id, -i64::from(c.status.errno()));
            }
            self.done = done;
            let waiting = std::mem::take(&mut self.queued);
            for (_, r) in waiting {
                if self.queued.is_empty() {
                    self.submit(r);
                } else {
                    self.queued.push_back((r.id, r));
                }
            }
        }
        while let Some(&(until_v, seq, conn)) = self.sleepers.first() {
            if until_v > v {
                break;
            }
            self.sleepers.remove(&(until_v, seq, conn));
            self.wake(conn, 0);
        }
    }

    fn next_event(&self) -> Option<u64> {
        let device = self.model_deadline();
        let sleep = self.sleepers.first().map(|s| s.0);
        match (device, sleep) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Delivers what is due, skips idle time while nothing runs, and returns how long the
    /// session may wait for messages (in real ns; `None` = until one comes).
    pub fn settle(&mut self) -> Option<u64> {
        loop {
            let v = self.clock.now_v();
            self.deliver(v);
            if self.clock.running() > 0 {
                return self.next_event().and_then(|t| self.clock.real_until(t));
            }
            if self.resuming > 0 || !self.outbox.is_empty() {
                return None;
            }
            match self.next_event() {
                Some(t) if t > v => self.clock.jump(t),
                _ => return None,
            }
        }
    }

    /// After the program ended: lets the model finish what it still holds (requests of threads
    /// that died mid-call), so that the statistics and the record are complete.
    pub fn drain(&mut self) {
        let mut guard = 0;
        while !self.queued.is_empty() || self.device.next_deadline().is_some() {
            let Some(t) = self.model_deadline() else {
                break;
            };
            self.deliver(t);
            guard += 1;
            if guard > 10_000_000 {
                break;
            }
        }
    }
}

/// A descriptor that becomes readable when process `pid` ends; `None` when the process is gone
/// already or the kernel has no pidfds (before 5.3).
pub(crate) fn pidfd_open(pid: i32) -> Option<OwnedFd> {
    rustix::process::pidfd_open(rustix::process::Pid::from_raw(pid)?, PidfdFlags::empty()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::Layout;
    use storsim_blackbox::linear::{stec_zeus, LinearDevice, LinearParams};

    const MIB: u64 = 1 << 20;

    /// A controller whose clock file is in a scratch directory, removed when the returned
    /// guard drops: keep it alive as long as the controller.
    fn controller(name: &str) -> (tempfile::TempDir, Controller) {
        controller_at(name, f64::INFINITY)
    }

    /// As `controller`, with the program's computation at `cpu_speed`.
    fn controller_at(name: &str, cpu_speed: f64) -> (tempfile::TempDir, Controller) {
        controller_on(name, cpu_speed, stec_zeus())
    }

    /// As `controller_at`, on a linear model with parameters `params`.
    fn controller_on(
        name: &str,
        cpu_speed: f64,
        params: LinearParams,
    ) -> (tempfile::TempDir, Controller) {
        let dir = tempfile::Builder::new()
            .prefix(&format!("storsim-cosim-ctl-{}-{name}-", std::process::id()))
            .tempdir()
            .unwrap();
        let clock = VirtualClock::create(&dir.path().join("clock"), cpu_speed).unwrap();
        let device = Box::new(LinearDevice::new(params));
        let ctl = Controller::new(device, Layout::new(64 * MIB, MIB), clock, None);
        (dir, ctl)
    }

    fn msg(kind: Kind, pid: i32) -> Msg {
        let mut m = Msg::new(kind, pid, pid);
        m.r_ns = mono_ns();
        m
    }

    fn me() -> i32 {
        std::process::id() as i32
    }

    #[test]
    fn an_io_call_is_stamped_skipped_to_its_completion_and_resumed() {
        let (_dir, mut ctl) = controller("io");
        let mut start = msg(Kind::ProcStart, me());
        start.a = 1;
        ctl.handle(0, &start, &[]).unwrap();
        ctl.handle(0, &msg(Kind::Open, me()), b"/d/f").unwrap();
        assert_eq!(ctl.clock.running(), 1);
        let opened: Vec<_> = ctl.outbox.drain(..).collect();
        assert_eq!(opened.len(), 2);
        assert_eq!(opened[1].1.value, 0, "the first file gets id 0");

        let mut io = msg(Kind::Io, me());
        io.a = IoOp::Write as u64;
        io.b = 0;
        io.c = 0;
        io.d = 8192;
        ctl.handle(0, &io, &[]).unwrap();
        assert_eq!(ctl.clock.running(), 0);
        assert!(
            ctl.outbox.is_empty(),
            "no reply before the device completes"
        );
        assert_eq!(ctl.settle(), None);
        // The Zeus writes 8 KiB at random in 770 + 8 × 5.382 µs; with computation free, the
        // clock is exactly there, and all of it was skipped.
        let latency_ns = 770_000 + 43_056;
        assert_eq!(ctl.clock.now_v(), latency_ns);
        assert_eq!(ctl.clock.skipped_ns, latency_ns);
        assert_eq!(
            ctl.outbox.drain(..).collect::<Vec<_>>(),
            vec![(
                0,
                Reply {
                    status: 0,
                    value: 0
                }
            )]
        );
        assert_eq!(ctl.collector.completed(), 1);
        ctl.handle(0, &msg(Kind::Resumed, me()), &[]).unwrap();
        assert_eq!(ctl.clock.running(), 1);

        // A call from a thread that is not running is a protocol error.
        ctl.handle(1, &msg(Kind::Sleep, me()), &[]).unwrap();
        assert!(ctl.handle(1, &io, &[]).is_err());
    }

    #[test]
    fn a_call_read_late_does_not_move_the_clock_back_under_a_woken_thread() {
        // The order of events that made a thread of cosim_probe measure a write shorter than
        // its device's latency on a busy machine.
        let (_dir, mut ctl) = controller_at("woken", 1.0);
        ctl.handle(0, &msg(Kind::ProcStart, me()), &[]).unwrap();
        ctl.handle(1, &msg(Kind::ThreadStart, me()), &[]).unwrap();
        ctl.outbox.clear();
        let f = ctl.layout.file(b"/d/f");
        let mut io = msg(Kind::Io, me());
        io.a = IoOp::Write as u64;
        io.b = f;
        io.d = 8192;
        // Thread 0 waits for the device while thread 1 runs alone and, a moment later, enters
        // a call of its own, whose message the controller reads only much later.
        ctl.handle(0, &io, &[]).unwrap();
        let late_entry_r = mono_ns();
        // Thread 1's running time brings the clock to thread 0's completion (0.8 ms).
        while ctl.outbox.is_empty() {
            std::thread::sleep(std::time::Duration::from_millis(1));
            ctl.settle();
        }
        let completion_v = ctl.clock.now_v();
        // Thread 0 got its reply and reads its clock before it says it runs again.
        std::thread::sleep(std::time::Duration::from_millis(2));
        let seen_v = ctl.clock.now_v();
        assert!(seen_v > completion_v);
        let mut late = io;
        late.r_ns = late_entry_r;
        late.c = 1 << 20;
        ctl.handle(1, &late, &[]).unwrap();
        // Stopping the clock at thread 1's entry instant would take it back to before thread
        // 0's completion, under thread 0's eyes.
        assert!(
            ctl.clock.now_v() >= seen_v,
            "the clock went back from {seen_v} to {} ns",
            ctl.clock.now_v()
        );
        ctl.handle(0, &msg(Kind::Resumed, me()), &[]).unwrap();
        assert!(ctl.clock.now_v() >= seen_v);
    }

    #[test]
    fn a_call_entered_by_the_only_runner_stops_the_clock_at_its_entry_however_late_it_is_read() {
        // On a busy machine the controller reads a thread's "resumed" and its next call
        // milliseconds after they were sent: that delay is not the program's running time.
        let (_dir, mut ctl) = controller_at("late", 1.0);
        ctl.handle(0, &msg(Kind::ProcStart, me()), &[]).unwrap();
        ctl.outbox.clear();
        let f = ctl.layout.file(b"/d/f");
        let mut io = msg(Kind::Io, me());
        io.a = IoOp::Write as u64;
        io.b = f;
        io.d = 8192;
        ctl.handle(0, &io, &[]).unwrap();
        assert_eq!(ctl.settle(), None);
        assert_eq!(ctl.outbox.len(), 1, "the write's completion");
        ctl.outbox.clear();
        let resumed_r = mono_ns();
        let entry_r = resumed_r + 100_000;
        let mut resumed = msg(Kind::Resumed, me());
        resumed.r_ns = resumed_r;
        let mut next = io;
        next.r_ns = entry_r;
        next.c = 1 << 20;
        // The thread ran 100 us between the two; the controller reads both 5 ms later.
        while mono_ns() < entry_r + 5_000_000 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let before_v = ctl.clock.now_v();
        ctl.handle(0, &resumed, &[]).unwrap();
        ctl.handle(0, &next, &[]).unwrap();
        assert_eq!(ctl.clock.running(), 0);
        assert_eq!(ctl.clock.now_v(), before_v + 100_000);
    }

    #[test]
    fn a_call_read_after_a_later_one_still_arrives_after_it_while_that_one_waits_for_the_queue() {
        // A disk that takes one request at a time, and three threads: the order of events that
        // put a request of cosim_probe's writers before an earlier one on a busy machine.
        let mut params = stec_zeus();
        params.queue_depth = 1;
        let (_dir, mut ctl) = controller_on("order", 1.0, params);
        ctl.handle(0, &msg(Kind::ProcStart, me()), &[]).unwrap();
        ctl.handle(1, &msg(Kind::ThreadStart, me()), &[]).unwrap();
        ctl.handle(2, &msg(Kind::ThreadStart, me()), &[]).unwrap();
        let f = ctl.layout.file(b"/d/f");
        let entry = |ctl: &mut Controller, conn: ConnId, r_ns: u64| {
            let mut io = msg(Kind::Io, me());
            io.a = IoOp::Write as u64;
            io.b = f;
            io.c = conn as u64 * MIB;
            io.d = 4096;
            io.r_ns = r_ns;
            ctl.handle(conn, &io, &[]).unwrap();
        };
        let first_r = mono_ns();
        let second_r = first_r + 100_000;
        let third_r = first_r + 200_000;
        while mono_ns() < third_r {
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
        // Thread 0's write occupies the disk; thread 2's, entered last, is read next and
        // waits for queue space; thread 1's, entered in between, is read last.
        entry(&mut ctl, 0, first_r);
        entry(&mut ctl, 2, third_r);
        entry(&mut ctl, 1, second_r);
        let arrivals: Vec<u64> = ctl.queued.iter().map(|(_, r)| r.arrival.as_ns()).collect();
        assert_eq!(arrivals.len(), 2, "two writes wait for the disk");
        assert!(
            arrivals[0] <= arrivals[1],
            "requests reach the model out of order: {arrivals:?}"
        );
    }

    #[test]
    fn sleeps_wake_in_order_and_a_full_device_fails_the_call() {
        let (_dir, mut ctl) = controller("sleep");
        ctl.handle(0, &msg(Kind::ProcStart, me()), &[]).unwrap();
        ctl.handle(1, &msg(Kind::ThreadStart, me()), &[]).unwrap();
        ctl.outbox.clear();
        let mut long = msg(Kind::Sleep, me());
        long.b = 5_000;
        let mut short = msg(Kind::Sleep, me());
        short.b = 2_000;
        ctl.handle(0, &long, &[]).unwrap();
        ctl.handle(1, &short, &[]).unwrap();
        // Both threads sleep and nothing else runs: the clock jumps to the earlier wake-up
        // and stays there until that thread has resumed.
        assert_eq!(ctl.settle(), None);
        assert_eq!(ctl.clock.now_v(), 2_000);
        assert_eq!(
            ctl.outbox.drain(..).map(|(c, _)| c).collect::<Vec<_>>(),
            vec![1]
        );
        assert_eq!(ctl.settle(), None);
        assert_eq!(
            ctl.clock.now_v(),
            2_000,
            "no skip while a thread is resuming"
        );
        ctl.handle(1, &msg(Kind::Resumed, me()), &[]).unwrap();
        // Thread 1 runs, so thread 0's wake-up comes in real time (never, with free computation).
        assert_eq!(ctl.settle(), None);
        assert!(ctl.outbox.is_empty());
        ctl.handle(1, &msg(Kind::ThreadExit, me()), &[]).unwrap();
        assert_eq!(ctl.settle(), None);
        assert_eq!(ctl.clock.now_v(), 5_000);
        assert_eq!(
            ctl.outbox.drain(..).map(|(c, _)| c).collect::<Vec<_>>(),
            vec![0]
        );
        ctl.handle(0, &msg(Kind::Resumed, me()), &[]).unwrap();

        let f = ctl.layout.file(b"/d/big");
        let mut io = msg(Kind::Io, me());
        io.a = IoOp::Write as u64;
        io.b = f;
        io.d = 65 * MIB;
        ctl.handle(0, &io, &[]).unwrap();
        assert_eq!(
            ctl.outbox.drain(..).collect::<Vec<_>>(),
            vec![(
                0,
                Reply {
                    status: -ENOSPC,
                    value: 0
                }
            )]
        );
        assert_eq!(ctl.stats.failed, 1);
    }

    #[test]
    fn a_childs_end_read_late_does_not_release_the_parents_next_wait() {
        let (_dir, mut ctl) = controller("wait");
        ctl.handle(0, &msg(Kind::ProcStart, me()), &[]).unwrap();
        let mut first = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let mut fork = msg(Kind::ForkChild, first.id() as i32);
        fork.a = me() as u64;
        ctl.handle(1, &fork, &[]).unwrap();
        assert_eq!(ctl.clock.running(), 2);
        // The parent now waits for a second child, while the first's end has not been read.
        let mut second = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let mut fork = msg(Kind::ForkChild, second.id() as i32);
        fork.a = me() as u64;
        ctl.handle(2, &fork, &[]).unwrap();
        ctl.handle(0, &msg(Kind::WaitEnter, me()), &[]).unwrap();
        assert_eq!(
            ctl.clock.running(),
            2,
            "the parent waits, both children run"
        );
        // A child that was not the parent's when the wait began (here: made up after it) ends:
        // its end must not count the waiting parent as running again.
        let mut third = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let mut fork = msg(Kind::ForkChild, third.id() as i32);
        fork.a = me() as u64;
        ctl.handle(3, &fork, &[]).unwrap();
        third.kill().unwrap();
        third.wait().unwrap();
        ctl.process_ended(third.id() as i32);
        assert_eq!(ctl.clock.running(), 2, "only the two children run");
        // One of the children the wait concerns ends: the parent counts as running at once.
        first.kill().unwrap();
        first.wait().unwrap();
        ctl.process_ended(first.id() as i32);
        assert_eq!(
            ctl.clock.running(),
            2,
            "the second child and the released parent"
        );
        second.kill().unwrap();
        second.wait().unwrap();
        ctl.process_ended(second.id() as i32);
        assert_eq!(ctl.clock.running(), 1);
    }
}
