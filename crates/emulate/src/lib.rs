//! The real-time emulator: a device model driven by the wall clock, bytes in a block store,
//! replies sent at the instants the model gives.
//!
//! A host I/O arrives from a front end (the NBD server or the FUSE file) on that front end's
//! thread, which stamps its arrival, does the data part at once in the [`Store`] (so a reply
//! never waits for bytes, and file-backed data is made durable before a FLUSH or FUA write is
//! acknowledged), and hands the request to the pacing thread. (The pacing thread also receives
//! requests itself while it spins, and does the same for them, but for the `fdatasync` of a
//! FLUSH or FUA write with file backing, which it leaves to store threads.) The pacing thread
//! owns the device model: it submits each request with the wall clock as "now", sleeps until
//! a margin before the model's next deadline and spins the rest, advances the model and sends
//! each reply as its completion falls due, measuring how late it left.
//!
//! ```text
//!  NBD / FUSE threads ── stamp, store op ──> inbox (bounded) ──> pacing thread ── Device
//!         ^                                                       │ sleep, spin, advance
//!         └──────────────────── reply at the model's instant ─────┘
//! ```
//!
//! The device model stays ignorant of all of this: it is told the time and answers when
//! things finish, as in simulation.

mod clock;
pub mod control;
pub mod cpus;
mod lateness;
mod pacer;
pub mod power;
pub mod signals;

pub use lateness::{Lateness, LatenessSummary, PercentDistribution, PercentPoint};
pub use storsim_store::{Backing, Store, StoreError};

use clock::WallClock;
use pacer::{Message, Pacer, Snapshot, Submission};
use std::any::{Any, TypeId};
use std::cell::Cell;
use std::collections::{BTreeMap, VecDeque};
use std::io::Write;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::{mpsc, Arc, Condvar, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;
use storsim_core::{Described, Device, DeviceCounter, DevicePart, Op, SimTime, Status};
use storsim_stats::{
    Collector, Distribution, Histogram, Series, SeriesRecorder, Summary, WindowWidth,
};

/// What a front end asks of the emulated disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostOp {
    Read,
    Write,
    /// Write zeros over the range: the store zeroes it, the model sees a write.
    WriteZeroes,
    Trim,
    Flush,
}

impl HostOp {
    /// The operation the device model is given.
    fn device_op(self) -> Op {
        match self {
            HostOp::Read => Op::Read,
            HostOp::Write | HostOp::WriteZeroes => Op::Write,
            HostOp::Trim => Op::Trim,
            HostOp::Flush => Op::Flush,
        }
    }
}

/// One host I/O. `data` is the payload of a write and empty otherwise.
#[derive(Debug)]
pub struct HostIo {
    pub op: HostOp,
    pub offset_bytes: u64,
    pub len_bytes: u64,
    /// Force unit access: the write is durable, in the store and in the model, before it is
    /// acknowledged. The model sees the write followed by a flush.
    pub fua: bool,
    pub data: Vec<u8>,
}

impl HostIo {
    /// Whether its store part ends in making the store durable (`Store::flush`).
    fn syncs(&self) -> bool {
        self.op == HostOp::Flush || self.fua
    }
}

/// Why a host I/O failed. Front ends map these to their protocol's error codes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IoFailure {
    /// Outside the export (front ends check first; this is the emulator's own check).
    OutOfRange,
    /// The block store could not do it (a full or failing backing file).
    Store(String),
    /// The device model has failed (a worn-out flash device, say) and takes no more requests.
    DeviceFailed(String),
    /// A faults layer (`[faults]`, or the control socket's `fault add`) failed the request
    /// with this error, at the instant the model's timing says.
    Injected(Status),
    /// The emulator is shutting down.
    ShuttingDown,
}

/// How a host I/O ended.
#[derive(Debug)]
pub enum Outcome {
    /// A read's bytes.
    Data(Vec<u8>),
    /// Any other operation succeeded.
    Done,
    Failed(IoFailure),
}

/// Sends a reply back through the front end that received the request. Called on the pacing
/// thread at the model's instant, so it must not block for long.
pub trait Responder: Send {
    fn respond(self: Box<Self>, outcome: Outcome);

    /// Answers as one of the replies falling due together. A front end that can write several
    /// replies with one system call adds this one to `batch` and says which of the batch's
    /// writes will carry it; the pacing thread sends the batch once every due reply is in it,
    /// and times each reply's departure at its write. The default sends the reply at once.
    fn respond_batched(self: Box<Self>, outcome: Outcome, batch: &mut ReplyBatch) -> Departure {
        let _ = batch;
        self.respond(outcome);
        Departure::Sent
    }
}

/// Where [`Responder::respond_batched`] left a reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Departure {
    /// Already written.
    Sent,
    /// In the batch, to leave with this write.
    Batched(BatchWrite),
}

/// One system call of a [`ReplyBatch`]: which front end's batch, and the index its adding
/// method returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchWrite {
    kind: usize,
    write: usize,
}

/// A front end's own batch of replies due together, written with one system call per
/// connection or ring (a vectored write to an NBD socket, one `io_uring_enter` for a FUSE
/// mount). The front end fills it in [`Responder::respond_batched`] through
/// [`ReplyBatch::add`]; the pacing thread sends it once every due reply is in.
pub trait FrontendBatch: Any + Send {
    fn is_empty(&self) -> bool;

    /// Writes what the batch holds, calling `before_write` with each write's index just
    /// before it, and leaves the batch empty.
    fn send(&mut self, before_write: &mut dyn FnMut(usize));
}

/// The replies the pacing thread has due at one moment, gathered so that each front end can
/// send them with as few system calls as it knows how: one batch per front-end type, made on
/// its first use. The pacing thread knows none of them by name.
#[derive(Default)]
pub struct ReplyBatch {
    // A handful of front-end types at most, so a list searched by type beats a map.
    kinds: Vec<Box<dyn FrontendBatch>>,
}

impl ReplyBatch {
    /// Adds a reply to the front end's batch of type `B` with `add`, which returns the index of
    /// the write that will carry it, or `None` when it sent the reply at once.
    pub fn add<B: FrontendBatch + Default>(
        &mut self,
        add: impl FnOnce(&mut B) -> Option<usize>,
    ) -> Departure {
        let kind = match self
            .kinds
            .iter()
            .position(|b| (**b).type_id() == TypeId::of::<B>())
        {
            Some(kind) => kind,
            None => {
                self.kinds.push(Box::<B>::default());
                self.kinds.len() - 1
            }
        };
        let any: &mut dyn Any = &mut *self.kinds[kind];
        let batch = any
            .downcast_mut::<B>()
            .expect("the batch at this index has the type it was found by");
        match add(batch) {
            Some(write) => Departure::Batched(BatchWrite { kind, write }),
            None => Departure::Sent,
        }
    }

    fn is_empty(&self) -> bool {
        self.kinds.iter().all(|b| b.is_empty())
    }

    /// Writes what the batch holds, calling `before_write` with each write just before it.
    fn send(&mut self, mut before_write: impl FnMut(BatchWrite)) {
        for (kind, batch) in self.kinds.iter_mut().enumerate() {
            batch.send(&mut |write| before_write(BatchWrite { kind, write }));
        }
    }
}

impl std::fmt::Debug for ReplyBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplyBatch")
            .field("kinds", &self.kinds.len())
            .finish_non_exhaustive()
    }
}

/// A source of requests that the pacing thread polls itself while it spins, such as a FUSE
/// mount's io_uring or an NBD connection's socket: a request found that way reaches the model
/// without waking any thread. The front end's own thread serves the source while the pacing
/// thread sleeps; [`Poller::set_active`] says which of the two does.
pub trait Poller: Send {
    /// The front end, as the report names it (`nbd`, `fuse`, ...).
    fn frontend(&self) -> &'static str;

    /// Serves a bounded amount of what is waiting, handing each request to the front end's
    /// handler on this thread, without blocking.
    fn poll(&mut self) -> Polled;

    /// Whether the pacing thread serves the source (true) or the front end's own thread does
    /// (false, while the pacing thread sleeps). Set true when the poller is attached.
    fn set_active(&self, active: bool);
}

/// What one [`Poller::poll`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Polled {
    /// Requests received in this call.
    pub requests: usize,
    /// Whether the source may have more; a closed one is dropped.
    pub open: bool,
}

thread_local! {
    /// Set on the pacing thread, which hands requests from a polled FUSE ring or NBD socket to
    /// its own inbox and so must never wait for room there.
    static ON_PACER: Cell<bool> = const { Cell::new(false) };
}

/// Tuning of the pacing loop and the emulator's own limits.
#[derive(Clone, Debug)]
pub struct EmulatorOptions {
    /// The export's size; requests are checked against it. At most the device's capacity.
    pub export_bytes: u64,
    /// The pacing thread sleeps until this long before a deadline and spins the rest: a timed
    /// wait wakes tens of microseconds late, a spin to the nanosecond.
    pub spin_margin_ns: u64,
    /// When idle, the pacing thread polls for new work this long before it sleeps.
    pub idle_spin_ns: u64,
    /// Replies leaving more than this after their instant count as late. The co-simulation
    /// thesis held 99.995 % of its responses within 20 µs.
    pub late_threshold_ns: u64,
    /// Host I/Os waiting for the pacing thread at most; front ends block beyond it.
    pub inbox_capacity: usize,
    /// The processor the pacing thread is restricted to, if any. Keeping the emulator's other
    /// threads off it is the caller's part (see [`cpus`]): they are the caller's threads.
    pub pacing_cpu: Option<usize>,
    /// The windows of the report's time series, in wall-clock time since the start.
    pub window: WindowWidth,
}

impl EmulatorOptions {
    pub fn new(export_bytes: u64) -> Self {
        EmulatorOptions {
            export_bytes,
            spin_margin_ns: 100_000,
            idle_spin_ns: 50_000,
            late_threshold_ns: 20_000,
            inbox_capacity: 4096,
            pacing_cpu: None,
            window: WindowWidth::Auto,
        }
    }
}

/// Where `--record` goes: a writer and the header pairs written at its top.
pub struct RecordTarget {
    pub out: Box<dyn Write + Send>,
    pub header: Vec<(String, String)>,
}

/// Errors starting or running the emulator.
#[derive(Debug)]
pub enum EmulateError {
    /// The export is larger than the device model.
    ExportTooLarge {
        export_bytes: u64,
        capacity_bytes: u64,
    },
    /// A replacement device cannot serve the export.
    Replacement(String),
    /// The pacing thread stopped with an error (writing the record, say).
    Pacer(String),
    /// Power loss was asked for in a way that cannot be done.
    PowerLoss(String),
    /// The pacing thread cannot be restricted to the processor asked for.
    PacingCpu {
        cpu: usize,
        error: std::io::Error,
    },
    Io(std::io::Error),
}

impl std::fmt::Display for EmulateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EmulateError::ExportTooLarge {
                export_bytes,
                capacity_bytes,
            } => write!(
                f,
                "the export ({export_bytes} bytes) is larger than the device ({capacity_bytes} \
                 bytes)"
            ),
            EmulateError::Replacement(m) => write!(f, "cannot switch devices: {m}"),
            EmulateError::Pacer(m) => write!(f, "pacing thread: {m}"),
            EmulateError::PowerLoss(m) => write!(f, "power loss: {m}"),
            EmulateError::PacingCpu { cpu, error } => {
                write!(f, "cannot run the pacing thread on CPU {cpu}: {error}")
            }
            EmulateError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for EmulateError {}

/// What the emulator has done so far, as plain data.
#[derive(Clone, Debug)]
pub struct EmulatorReport {
    pub device_name: String,
    pub export_bytes: u64,
    pub backing: Backing,
    pub allocated_bytes: u64,
    /// Wall time since the start.
    pub elapsed_ns: u64,
    pub lateness: LatenessSummary,
    /// Response times as the model gave them (intended completion − arrival at the model),
    /// per operation.
    pub model: Summary,
    /// From a front end receiving a request to the model being offered it: the store's work
    /// and the hand-over to the pacing thread, which a host sees on top of the model's time.
    pub intake_ns: Distribution,
    /// Requests refused or failed (bounds, store errors, a failed device).
    pub failed: u64,
    /// Requests the pacing thread received itself by polling while it spun ([`Poller`]), by
    /// front end, rather than from a front end's own thread (requests a front end answered
    /// itself, such as refused ones, included).
    pub polled: BTreeMap<&'static str, u64>,
    /// FLUSHes and FUA writes the pacing thread received itself and handed to the store
    /// threads for their `fdatasync` (file backing only).
    pub store_thread_jobs: u64,
    /// Empty transfers, answered at once without the model (devices refuse them).
    pub answered_at_once: u64,
    /// Requests in the emulator now.
    pub in_flight: u64,
    /// Devices switched to at run time, in order.
    pub switches: Vec<String>,
    /// Device models that broke the `Device` contract (`storsim_core::contract`), each with
    /// what it did, in order. The requests such a device held failed with EIO, and while it
    /// was the current device so did every new request; the emulator went on serving.
    pub model_failures: Vec<String>,
    /// The current device's model (at the end: the last device's), `None` when the pacing
    /// thread left no snapshot.
    pub device_model: Option<&'static str>,
    /// The models inside the current device, if it is a composite, each with its counters'
    /// prefix.
    pub device_parts: Vec<DevicePart>,
    /// The current device model's counters (at the end: the last device's).
    pub device_counters: Vec<DeviceCounter>,
    /// What each of those counters is.
    pub device_descriptors: Vec<Described>,
    /// The run so far in windows of the emulator's time (wall clock since the start, which is
    /// the model's time): the replies as the model timed them, the queues, the device's
    /// counters, and a channel named `lateness_ns` with each window's replies' lateness.
    pub series: Series,
    /// Power loss's options, cache and crashes, when it is on
    /// ([`Emulator::enable_power_loss`]).
    pub power_loss: Option<power::PowerLossReport>,
}

/// State shared between the front ends, the control socket and the pacing thread.
struct Shared {
    clock: WallClock,
    store: Arc<Store>,
    options: EmulatorOptions,
    inbox: Mutex<Inbox>,
    /// Signals the pacing thread: something is in the inbox.
    work: Condvar,
    /// Signals front ends blocked on a full inbox.
    space: Condvar,
    /// The inbox length, readable without the lock so the pacing thread's spin can notice new
    /// work and submit it before the deadline it spins towards.
    waiting: AtomicUsize,
    /// See [`EmulatorReport::polled`]; counted by the pacing thread when a poll received some.
    polled: Mutex<BTreeMap<&'static str, u64>>,
    /// See [`EmulatorReport::store_thread_jobs`].
    store_thread_jobs: AtomicU64,
    /// Stamps arrivals and sequence numbers together, so that sequence order is arrival order
    /// and the recorded trace comes out sorted.
    stamp: Mutex<u64>,
    tally: Mutex<Tally>,
    /// Power loss, once enabled: every change to the store then goes through it.
    power: OnceLock<power::PowerLoss>,
}

/// The counters the pacing thread keeps and reports read.
struct Tally {
    device_name: String,
    switches: Vec<String>,
    lateness: Lateness,
    model: Collector,
    /// From a front end receiving a request to the model being offered it.
    intake: Histogram,
    failed: u64,
    /// Of `failed`, those answered at the model's instant (injected errors, replies falling due
    /// after a crash left the disk off), which the lateness counts as replies too.
    failed_replies: u64,
    /// See [`EmulatorReport::model_failures`].
    model_failures: Vec<String>,
    answered_at_once: u64,
    /// The model's counters and the series when the pacing thread stopped.
    final_snapshot: Option<Snapshot>,
}

impl Shared {
    fn tally(&self) -> std::sync::MutexGuard<'_, Tally> {
        // A panic elsewhere leaves counters that are still counters.
        self.tally.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stamps a host I/O's arrival: its sequence number and the instant.
    fn stamp_arrival(&self) -> (u64, SimTime) {
        let mut next = self.stamp.lock().unwrap_or_else(|p| p.into_inner());
        let seq = *next;
        *next += 1;
        (seq, self.clock.now())
    }

    /// Everything of [`Emulator::submit`] after the stamp: checks, the store part, the inbox.
    fn take(&self, job: StoreJob) {
        let StoreJob {
            seq,
            received,
            io,
            responder,
        } = job;
        let fail = |failure: IoFailure, responder: Box<dyn Responder>| {
            self.skip(seq);
            self.count_failed();
            responder.respond(Outcome::Failed(failure));
        };
        let in_range = io.op == HostOp::Flush
            || io
                .offset_bytes
                .checked_add(io.len_bytes)
                .is_some_and(|end| end <= self.options.export_bytes);
        if !in_range {
            return fail(IoFailure::OutOfRange, responder);
        }
        if self.powered_off() {
            return fail(powered_off(), responder);
        }
        let read_data = match self.store_part(&io) {
            Ok(data) => data,
            Err(e) => return fail(IoFailure::Store(e.to_string()), responder),
        };
        // A write that set a crash off is never acknowledged by a disk left off.
        if self.powered_off() {
            return fail(powered_off(), responder);
        }
        if io.len_bytes == 0 && io.op != HostOp::Flush {
            // Nothing for the model to time: devices refuse empty transfers.
            self.skip(seq);
            self.tally().answered_at_once += 1;
            return responder.respond(match read_data {
                Some(d) => Outcome::Data(d),
                None => Outcome::Done,
            });
        }
        let accepted = self.push(Message::Io(Submission {
            seq,
            received,
            op: io.op.device_op(),
            offset_bytes: io.offset_bytes,
            len_bytes: io.len_bytes,
            fua: io.fua,
            read_data,
            responder,
        }));
        if let Err(Message::Io(s)) = accepted {
            self.count_failed();
            s.responder
                .respond(Outcome::Failed(IoFailure::ShuttingDown));
        }
    }

    /// Whether a crash left the disk off (power loss's `--after-crash stop`): it answers
    /// nothing more, neither requests arriving now nor those it held at the crash.
    fn powered_off(&self) -> bool {
        self.power.get().is_some_and(|p| p.powered_off())
    }

    /// The data part of a host I/O, done on the caller's thread before the model sees it.
    fn store_part(&self, io: &HostIo) -> Result<Option<Vec<u8>>, StoreError> {
        let store = &self.store;
        if let Some(power) = self.power.get().filter(|_| io.op != HostOp::Read) {
            power.store_part(store, io, self.clock.now())?;
            // The model of the cache decides what a crash loses; the backing file is still
            // made durable where the host asked, for a crash of the machine itself.
            if io.syncs() {
                store.flush()?;
            }
            return Ok(None);
        }
        match io.op {
            HostOp::Read => {
                let mut buf = vec![0u8; io.len_bytes as usize];
                store.read(io.offset_bytes, &mut buf)?;
                return Ok(Some(buf));
            }
            HostOp::Write => store.write(io.offset_bytes, &io.data)?,
            HostOp::WriteZeroes => store.write_zeroes(io.offset_bytes, io.len_bytes)?,
            HostOp::Trim => store.trim(io.offset_bytes, io.len_bytes)?,
            HostOp::Flush => store.flush()?,
        }
        if io.fua && io.op != HostOp::Flush {
            store.flush()?;
        }
        Ok(None)
    }

    /// Queues a message for the pacing thread, waiting while the inbox is full. Gives the
    /// message back when the emulator is shutting down.
    fn push(&self, message: Message) -> Result<(), Message> {
        let mut inbox = self.inbox.lock().unwrap_or_else(|p| p.into_inner());
        // After shutdown began only skips get through: they settle the record's order.
        if inbox.closed && !matches!(message, Message::Skip { .. }) {
            return Err(message);
        }
        // Skips and control messages never wait: they free, rather than take, a slot. Nor
        // does the pacing thread, which would wait for itself: it adds at most what the FUSE
        // rings and NBD connections it polls hold in flight (their entries, and each
        // connection's in-flight limit) beyond the capacity.
        let waits = matches!(message, Message::Io(_)) && !ON_PACER.with(|p| p.get());
        while waits && inbox.items.len() >= self.options.inbox_capacity && !inbox.closed {
            inbox.blocked += 1;
            inbox = self.space.wait(inbox).unwrap_or_else(|p| p.into_inner());
            inbox.blocked -= 1;
        }
        inbox.items.push_back(message);
        self.waiting.store(inbox.items.len(), Ordering::Release);
        let wake = inbox.pacer_asleep;
        drop(inbox);
        if wake {
            self.work.notify_one();
        }
        Ok(())
    }

    /// Tells the pacing thread that `seq` will never reach it.
    fn skip(&self, seq: u64) {
        // Skips are accepted even during shutdown; there is no error to handle.
        let _ = self.push(Message::Skip { seq });
    }

    fn count_failed(&self) {
        self.tally().failed += 1;
    }
}

/// How a request fails once a crash has left the disk off (power loss's `--after-crash stop`).
fn powered_off() -> IoFailure {
    IoFailure::DeviceFailed("the disk is powered off after a crash (--after-crash stop)".into())
}

/// Most store jobs waiting for the store threads; beyond them the pacing thread does the work
/// itself. Far more than the requests a few NBD connections and FUSE rings hold in flight.
const STORE_THREAD_QUEUE: usize = 1024;

/// Threads doing the store work the pacing thread hands over: FLUSHes and FUA writes, each
/// waiting in `fdatasync`. More than one, so that a FUA write need not wait for another's
/// sync (a FLUSH need only cover writes already answered, and those are done).
const STORE_THREADS: usize = 4;

/// Starts the threads that do the store work of FLUSHes and FUA writes the pacing thread
/// received itself, with file backing (see [`Emulator::submit`]). They end when the sender is
/// dropped.
fn spawn_store_threads(shared: Arc<Shared>) -> Result<SyncSender<StoreJob>, EmulateError> {
    let (jobs_tx, jobs_rx) = mpsc::sync_channel::<StoreJob>(STORE_THREAD_QUEUE);
    let jobs_rx = Arc::new(Mutex::new(jobs_rx));
    for index in 0..STORE_THREADS {
        let shared = Arc::clone(&shared);
        let jobs_rx = Arc::clone(&jobs_rx);
        std::thread::Builder::new()
            .name(format!("storsim-store-{index}"))
            .spawn(move || loop {
                // One thread waits for the next job while holding the lock, the others for the
                // lock; a job taken, the lock passes on.
                let job = jobs_rx.lock().unwrap_or_else(|p| p.into_inner()).recv();
                match job {
                    Ok(job) => shared.take(job),
                    Err(mpsc::RecvError) => break,
                }
            })
            .map_err(EmulateError::Io)?;
    }
    Ok(jobs_tx)
}

/// A host I/O stamped on arrival whose store part and hand-over to the model are still to do.
struct StoreJob {
    seq: u64,
    received: SimTime,
    io: HostIo,
    responder: Box<dyn Responder>,
}

struct Inbox {
    items: VecDeque<Message>,
    /// No new host I/O is accepted once shutdown has begun.
    closed: bool,
    /// The pacing thread is waiting on `work`. Front ends wake it only then: a condition
    /// variable's notification is a system call even when nobody waits, and the pacing thread
    /// mostly spins rather than waits.
    pacer_asleep: bool,
    /// Front ends waiting on `space` for a full inbox to drain.
    blocked: usize,
}

/// A running emulator. Front ends call [`Emulator::submit`] from their own threads.
pub struct Emulator {
    shared: Arc<Shared>,
    pacer: Mutex<Option<JoinHandle<Result<(), String>>>>,
    /// With file backing: where the pacing thread sends the FLUSHes and FUA writes it received
    /// itself (see [`Emulator::submit`]). The threads end when this is dropped.
    store_threads: Option<SyncSender<StoreJob>>,
}

impl Emulator {
    /// Starts the pacing thread with `device`. The clock's epoch is now.
    pub fn start(
        device: Box<dyn Device>,
        device_name: &str,
        store: Arc<Store>,
        options: EmulatorOptions,
        record: Option<RecordTarget>,
    ) -> Result<Emulator, EmulateError> {
        let capacity_bytes = device.capacity_bytes();
        if options.export_bytes > capacity_bytes {
            return Err(EmulateError::ExportTooLarge {
                export_bytes: options.export_bytes,
                capacity_bytes,
            });
        }
        let tally = Tally {
            device_name: device_name.to_string(),
            switches: Vec::new(),
            lateness: Lateness::new(options.late_threshold_ns),
            model: Collector::new(),
            intake: Histogram::new(),
            failed: 0,
            failed_replies: 0,
            model_failures: Vec::new(),
            answered_at_once: 0,
            final_snapshot: None,
        };
        let shared = Arc::new(Shared {
            clock: WallClock::start(),
            store,
            inbox: Mutex::new(Inbox {
                items: VecDeque::with_capacity(options.inbox_capacity),
                closed: false,
                pacer_asleep: false,
                blocked: 0,
            }),
            options,
            work: Condvar::new(),
            space: Condvar::new(),
            waiting: AtomicUsize::new(0),
            polled: Mutex::new(BTreeMap::new()),
            store_thread_jobs: AtomicU64::new(0),
            stamp: Mutex::new(0),
            tally: Mutex::new(tally),
            power: OnceLock::new(),
        });
        let pacer = Pacer::new(Arc::clone(&shared), device, record).map_err(EmulateError::Io)?;
        let pacing_cpu = shared.options.pacing_cpu;
        // The thread restricts itself (a thread's processors can only be set once it exists)
        // and says how that went before it serves anything.
        let (pinned_tx, pinned_rx) = mpsc::sync_channel(1);
        let thread = std::thread::Builder::new()
            .name("storsim-pacer".into())
            .spawn(move || {
                if let Some(cpu) = pacing_cpu {
                    let pinned = cpus::restrict_current_thread(&[cpu]);
                    let refused = pinned.is_err();
                    // `start` waits for this answer, so the receiver is there.
                    let _ = pinned_tx.send(pinned);
                    if refused {
                        return Ok(());
                    }
                }
                drop(pinned_tx);
                pacer.run()
            })
            .map_err(EmulateError::Io)?;
        if let Some(cpu) = pacing_cpu {
            let pinned = pinned_rx.recv().unwrap_or_else(|_| {
                Err(std::io::Error::other(
                    "the pacing thread ended before it started",
                ))
            });
            if let Err(error) = pinned {
                // It returned at once without serving anything.
                let _ = thread.join();
                return Err(EmulateError::PacingCpu { cpu, error });
            }
        }
        let store_threads = match shared.store.backing() {
            Backing::File(_) => Some(spawn_store_threads(Arc::clone(&shared))?),
            Backing::Memory | Backing::None => None,
        };
        Ok(Emulator {
            shared,
            pacer: Mutex::new(Some(thread)),
            store_threads,
        })
    }

    pub fn store(&self) -> &Arc<Store> {
        &self.shared.store
    }

    /// Takes one host I/O: stamps its arrival, does its data part in the store and queues it
    /// for the model. The reply comes through `responder` at the model's instant, or at once
    /// when the request fails here. Blocks while the inbox is full.
    ///
    /// On the pacing thread (a request it received itself from a polled NBD socket or FUSE
    /// ring) with file backing, the store part of a FLUSH or FUA write goes to the store
    /// threads instead: its `fdatasync` takes milliseconds, during which every other reply
    /// falling due would wait. Reads and writes stay on the pacing thread, where they cost a
    /// copy to or from the page cache; handing each over would cost a thread wake-up, which on
    /// a busy machine is tens of microseconds.
    pub fn submit(&self, io: HostIo, responder: Box<dyn Responder>) {
        let (seq, received) = self.shared.stamp_arrival();
        let job = StoreJob {
            seq,
            received,
            io,
            responder,
        };
        let job = match &self.store_threads {
            Some(store_threads) if ON_PACER.with(|p| p.get()) && job.io.syncs() => {
                match store_threads.try_send(job) {
                    Ok(()) => {
                        self.shared
                            .store_thread_jobs
                            .fetch_add(1, Ordering::Relaxed);
                        return;
                    }
                    // A full queue (the store threads are that far behind) or threads gone:
                    // the work is done here rather than waited for or lost.
                    Err(TrySendError::Full(job) | TrySendError::Disconnected(job)) => job,
                }
            }
            _ => job,
        };
        self.shared.take(job);
    }

    /// Turns power loss on (docs/faults.md, "Power loss"): from now on the emulator tracks which writes
    /// are not yet durable, so that a crash can lose them, and logs writes if asked. Call it
    /// before the front ends start: writes taken earlier count as durable. Refused when
    /// already on.
    pub fn enable_power_loss(&self, options: power::PowerLossOptions) -> Result<(), EmulateError> {
        self.shared
            .power
            .set(power::PowerLoss::new(options))
            .map_err(|_| EmulateError::PowerLoss("power loss is already on".into()))
    }

    /// Cuts the power now: the store goes back to what the disk's medium holds, losing or
    /// tearing every write not yet durable; afterwards the disk serves that image or stays
    /// off, as the options said. Refused when power loss is off.
    pub fn crash(&self, trigger: power::CrashTrigger) -> Result<power::Crash, EmulateError> {
        let Some(power) = self.shared.power.get() else {
            return Err(EmulateError::PowerLoss(
                "power loss is off: start the emulator with it on to crash".into(),
            ));
        };
        power
            .crash(&self.shared.store, trigger, self.shared.clock.now())
            .map_err(|e| EmulateError::PowerLoss(format!("crashing: {e}")))
    }

    /// Lets the pacing thread serve a front end's source of requests while it spins (see
    /// [`Poller`]): requests then reach the model without a thread wake-up. The NBD front end
    /// does this for every connection, the FUSE one for a mount over io_uring.
    pub fn attach_poller(&self, poller: Box<dyn Poller>) {
        // Refused only during shutdown, when there is nothing left to serve; the dropped
        // poller leaves its source to the front end's own thread.
        let _ = self.shared.push(Message::Poller(poller));
    }

    /// Switches to another device model without dropping requests: requests already with the
    /// old model finish there, new ones go to `device`. Refused when `device` is smaller than
    /// the export.
    pub fn replace_device(&self, device: Box<dyn Device>, name: &str) -> Result<(), EmulateError> {
        let capacity_bytes = device.capacity_bytes();
        if capacity_bytes < self.shared.options.export_bytes {
            return Err(EmulateError::Replacement(format!(
                "{name} holds {capacity_bytes} bytes, less than the export's {}",
                self.shared.options.export_bytes
            )));
        }
        let (done, switched) = mpsc::channel();
        self.shared
            .push(Message::Replace {
                device,
                name: name.to_string(),
                done,
            })
            .map_err(|_| EmulateError::Replacement("the emulator is shutting down".into()))?;
        switched
            .recv()
            .map_err(|_| EmulateError::Replacement("the pacing thread has stopped".into()))
    }

    /// What has happened so far.
    pub fn report(&self) -> EmulatorReport {
        let (device_model, device_parts, device_counters, device_descriptors, series) =
            match self.snapshot() {
                Some(Snapshot {
                    model,
                    parts,
                    counters,
                    descriptors,
                    series,
                    now,
                }) => (
                    Some(model),
                    parts,
                    counters.clone(),
                    descriptors,
                    series.finish(now, counters),
                ),
                None => (
                    None,
                    Vec::new(),
                    Vec::new(),
                    Vec::new(),
                    SeriesRecorder::new(WindowWidth::Auto).finish(SimTime::ZERO, Vec::new()),
                ),
            };
        let submitted = *self.shared.stamp.lock().unwrap_or_else(|p| p.into_inner());
        let tally = self.shared.tally();
        let lateness = tally.lateness.summary();
        EmulatorReport {
            device_name: tally.device_name.clone(),
            export_bytes: self.shared.options.export_bytes,
            backing: self.shared.store.backing().clone(),
            allocated_bytes: self.shared.store.allocated_bytes(),
            elapsed_ns: self.shared.clock.now().as_ns(),
            model: tally.model.summary(),
            intake_ns: Distribution::of(&tally.intake),
            failed: tally.failed,
            polled: self
                .shared
                .polled
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
            store_thread_jobs: self.shared.store_thread_jobs.load(Ordering::Relaxed),
            answered_at_once: tally.answered_at_once,
            in_flight: submitted.saturating_sub(
                lateness.replies + tally.failed - tally.failed_replies + tally.answered_at_once,
            ),
            switches: tally.switches.clone(),
            model_failures: tally.model_failures.clone(),
            lateness,
            device_model,
            device_parts,
            device_counters,
            device_descriptors,
            series,
            power_loss: self.shared.power.get().map(power::PowerLoss::report),
        }
    }

    /// Asks the pacing thread for the model's counters and a copy of the series (both live
    /// there); after shutdown, what it left. `None` only when the pacing thread neither
    /// answers nor has stopped.
    fn snapshot(&self) -> Option<Snapshot> {
        let (reply, snapshot) = mpsc::channel();
        if self.shared.push(Message::Snapshot { reply }).is_ok() {
            // A second is generous: the pacing thread answers between two deadlines.
            if let Ok(snapshot) = snapshot.recv_timeout(Duration::from_secs(1)) {
                return Some(snapshot);
            }
        }
        self.shared.tally().final_snapshot.clone()
    }

    /// Stops taking host I/O, lets every accepted request complete at its instant, flushes the
    /// store and the record, and returns the final report. Front ends should stop first so
    /// that no request is refused as shutting down.
    pub fn shutdown(&self) -> Result<EmulatorReport, EmulateError> {
        self.stop()?;
        if let Some(power) = self.shared.power.get() {
            power.finish().map_err(|e| {
                EmulateError::Io(std::io::Error::other(format!("writing the write log: {e}")))
            })?;
        }
        self.shared.store.flush().map_err(|e| {
            EmulateError::Io(std::io::Error::other(format!("flushing the store: {e}")))
        })?;
        Ok(self.report())
    }

    fn stop(&self) -> Result<(), EmulateError> {
        let thread = self.pacer.lock().unwrap_or_else(|p| p.into_inner()).take();
        let Some(thread) = thread else {
            return Ok(());
        };
        {
            let mut inbox = self.shared.inbox.lock().unwrap_or_else(|p| p.into_inner());
            inbox.closed = true;
            inbox.items.push_back(Message::Shutdown);
            self.shared
                .waiting
                .store(inbox.items.len(), Ordering::Release);
        }
        self.shared.work.notify_one();
        self.shared.space.notify_all();
        match thread.join() {
            Ok(result) => result.map_err(EmulateError::Pacer),
            Err(_) => Err(EmulateError::Pacer("panicked".into())),
        }
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        // A dropped emulator still answers what it accepted; errors have nowhere to go here.
        let _ = self.stop();
    }
}

#[cfg(test)]
mod tests;
