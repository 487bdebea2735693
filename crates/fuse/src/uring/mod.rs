//! FUSE over io_uring (Linux 6.14 and later): the kernel hands requests to entries of a ring
//! instead of to `read(2)` on `/dev/fuse`, and replies go back as
//! `FUSE_IO_URING_CMD_COMMIT_AND_FETCH` commands, as many per `io_uring_enter` as are ready.
//!
//! See `Documentation/filesystems/fuse-io-uring.rst` and `include/uapi/linux/fuse.h`. The
//! protocol, as this module follows it:
//!
//! - INIT still travels over `/dev/fuse`. The kernel offers `FUSE_OVER_IO_URING` (flags2 bit
//!   9) when `/sys/module/fuse/parameters/enable_uring` is Y; granting it makes the kernel hold
//!   every new request until the ring is ready.
//! - Each entry is a header buffer (`struct fuse_uring_req_header`) and a payload buffer of at
//!   least the negotiated maximum request size, registered with FUSE_IO_URING_CMD_REGISTER on
//!   a queue. There is one queue per possible CPU; a request goes to the queue of the CPU that
//!   issued it, and the kernel switches to the ring only once every queue has an entry.
//! - A registered entry's command completes when a request has been copied into it. The reply
//!   is written into the same buffers and committed with COMMIT_AND_FETCH, which also puts the
//!   entry back in service. FORGET and INTERRUPT still come through `/dev/fuse`.
//! - The kernel copies a request into an entry in the context of the thread that submitted the
//!   entry's last command (as io_uring task work), and cancels an entry's command when that
//!   thread exits. So commands are only ever submitted by threads that live as long as the
//!   mount: the ring thread here, and whoever sends a [`ReplyBatch`](crate::ReplyBatch) (the
//!   emulator's pacing thread). A reply sent any other way is handed to the ring thread.
//!
//! `sys` holds the raw ring, `buffers` the entries' memory; all unsafe code of the transport
//! is in those two files.

mod buffers;
mod sys;

use std::cell::Cell;
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use crate::abi;
use crate::channel::{clamp_errno, Channel};

use buffers::Buffers;
pub(crate) use buffers::{Entry, RingHeader, OP_IN_BYTES};
pub(crate) use sys::Cqe;
use sys::{CqToken, IoUring, SqToken, Sqe};

/// The module parameter that lets the kernel offer FUSE over io_uring.
pub const ENABLE_URING_PATH: &str = "/sys/module/fuse/parameters/enable_uring";
/// `FUSE_IO_URING_CMD_REGISTER`.
const CMD_REGISTER: u32 = 1;
/// `FUSE_IO_URING_CMD_COMMIT_AND_FETCH`.
const CMD_COMMIT_AND_FETCH: u32 = 2;
/// The `user_data` of the NOP that wakes the ring thread; entries use their index.
const WAKE: u64 = u64::MAX;
/// Consecutive failures of one entry's command after which it is given up.
const MAX_ENTRY_FAILURES: u8 = 2;
/// How long the ring thread sleeps between looks while a poller serves the ring. It is woken
/// when the poller stops; the timeout only bounds the damage of a lost wake-up.
const PARKED_LOOK: Duration = Duration::from_millis(100);

/// Why FUSE over io_uring cannot be used on this machine, if it cannot.
pub fn unavailable() -> Option<String> {
    unavailable_at(ENABLE_URING_PATH)
}

/// [`unavailable`], reading the module parameter at `path`.
fn unavailable_at(path: &str) -> Option<String> {
    match std::fs::read_to_string(path) {
        Ok(text) if text.trim() == "Y" || text.trim() == "1" => None,
        Ok(text) => Some(format!(
            "{path} is {} (FUSE over io_uring is off; `echo 1 > {path}` as root turns it on)",
            text.trim()
        )),
        Err(e) => Some(format!(
            "{path} cannot be read ({e}): the kernel has no FUSE over io_uring (it needs Linux \
             6.14 or later with CONFIG_FUSE_IO_URING)"
        )),
    }
}

/// The number of possible CPUs, which is the kernel's number of ring queues
/// (`num_possible_cpus()`): every one must have an entry before the kernel uses the ring.
pub(crate) fn possible_cpus() -> io::Result<u32> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/possible")?;
    parse_cpu_list(text.trim()).ok_or_else(|| {
        io::Error::other(format!(
            "cannot parse /sys/devices/system/cpu/possible: {text:?}"
        ))
    })
}

/// Counts the CPUs of a list such as `0-3,8,10-11`.
fn parse_cpu_list(text: &str) -> Option<u32> {
    let mut count = 0u32;
    for part in text.split(',') {
        let (first, last) = match part.split_once('-') {
            Some((a, b)) => (a.parse::<u32>().ok()?, b.parse::<u32>().ok()?),
            None => {
                let n = part.parse::<u32>().ok()?;
                (n, n)
            }
        };
        if last < first {
            return None;
        }
        count = count.checked_add(last - first + 1)?;
    }
    (count > 0).then_some(count)
}

thread_local! {
    /// The id of the ring (ids start at 1) whose ring thread this is, or which this thread is
    /// polling right now; zero on every other thread.
    static RING_THREAD: Cell<usize> = const { Cell::new(0) };
}

/// Why the entries could not be registered.
#[derive(Debug)]
pub(crate) enum RegisterError {
    /// The kernel refused a registration. It then stops waiting for the ring and goes on
    /// through /dev/fuse.
    Refused(String),
    /// The registrations never reached the kernel, which keeps holding every request for the
    /// ring.
    NotSubmitted(String),
}

/// A filled entry whose commit is ready to submit.
pub(crate) struct Commit {
    entry: Entry,
    commit_id: u64,
}

/// Commits other threads handed to the ring thread.
struct Handoff {
    commits: Vec<Commit>,
    /// The ring thread is running and will submit what is handed over.
    serving: bool,
}

/// One FUSE connection's ring, its entries and the commits waiting to go.
pub(crate) struct FuseRing {
    // Declared first so that the ring closes (cancelling every command, which releases the
    // commands' hold on /dev/fuse) before the channel below can close /dev/fuse.
    io: IoUring,
    sq: Mutex<SqToken>,
    cq: Mutex<CqToken>,
    buffers: Buffers,
    queues: u32,
    per_queue: u32,
    handoff: Mutex<Handoff>,
    stopping: AtomicBool,
    /// A thread polls the completion ring (see [`Poller`]), so the ring thread need not wait
    /// on it; `parked` wakes the ring thread when that changes.
    poller_active: AtomicBool,
    park: Mutex<()>,
    parked: Condvar,
    /// Consecutive failures per entry.
    failures: Mutex<Vec<u8>>,
    ring_id: usize,
    channel: Arc<Channel>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section leaves its data consistent (a token, a list), so a panic while
    // holding the lock does not make the data unusable.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The 24 bytes of `struct fuse_uring_cmd_req`: flags, commit_id, qid, padding.
fn cmd_req(commit_id: u64, qid: u16) -> [u8; 24] {
    let mut b = [0u8; 24];
    b[8..16].copy_from_slice(&commit_id.to_ne_bytes());
    b[16..18].copy_from_slice(&qid.to_ne_bytes());
    b
}

impl FuseRing {
    /// Sets up the ring and the entries' memory: `queues` queues of `per_queue` entries, each
    /// with a payload buffer of `payload_bytes`. Nothing is registered yet (the kernel accepts
    /// registrations only after INIT).
    pub fn new(
        channel: Arc<Channel>,
        queues: u32,
        per_queue: u32,
        payload_bytes: usize,
    ) -> io::Result<Arc<FuseRing>> {
        let entries = queues
            .checked_mul(per_queue)
            .filter(|&n| n > 0 && n < WAKE as u32)
            .ok_or_else(|| io::Error::other("bad number of ring entries"))?;
        // Room for every entry's command at once plus wake-ups; completions likewise, so the
        // completion ring cannot overflow (each entry has at most one command outstanding).
        let sq_entries = (entries + 16).next_power_of_two();
        let (io, sq, cq) = IoUring::setup(sq_entries, sq_entries * 2)?;
        let buffers = Buffers::new(entries, payload_bytes)?;
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);
        Ok(Arc::new(FuseRing {
            io,
            sq: Mutex::new(sq),
            cq: Mutex::new(cq),
            buffers,
            queues,
            per_queue,
            handoff: Mutex::new(Handoff {
                commits: Vec::new(),
                serving: false,
            }),
            stopping: AtomicBool::new(false),
            poller_active: AtomicBool::new(false),
            park: Mutex::new(()),
            parked: Condvar::new(),
            failures: Mutex::new(vec![0; entries as usize]),
            ring_id: NEXT.fetch_add(1, Ordering::Relaxed),
            channel,
        }))
    }

    pub fn describe(&self) -> String {
        format!(
            "{} queue{} x {} entries",
            self.queues,
            if self.queues == 1 { "" } else { "s" },
            self.per_queue
        )
    }

    pub fn log(&self, message: &str) {
        self.channel.log(message);
    }

    fn fuse_fd(&self) -> RawFd {
        self.channel.raw_fd()
    }

    fn qid(&self, index: u32) -> u16 {
        (index / self.per_queue) as u16
    }

    pub fn header(&self, entry: &Entry) -> RingHeader {
        self.buffers.header(entry)
    }

    pub fn payload_capacity(&self) -> usize {
        self.buffers.payload_capacity()
    }

    pub fn payload<'a>(&'a self, entry: &'a Entry, len: usize) -> Option<&'a [u8]> {
        self.buffers.payload(entry, len)
    }

    fn register_sqe(&self, index: u32) -> Sqe {
        Sqe::uring_cmd(
            self.fuse_fd(),
            CMD_REGISTER,
            self.buffers.iovec_addr(index),
            2,
            &cmd_req(0, self.qid(index)),
            index as u64,
        )
    }

    fn commit_sqe(&self, index: u32, commit_id: u64) -> Sqe {
        Sqe::uring_cmd(
            self.fuse_fd(),
            CMD_COMMIT_AND_FETCH,
            0,
            0,
            &cmd_req(commit_id, self.qid(index)),
            index as u64,
        )
    }

    /// Pushes `sqe`, submitting first if the submission ring is full.
    fn push(&self, sq: &mut SqToken, sqe: &Sqe) {
        while !self.io.push(sq, sqe) {
            if let Err(e) = self.io.submit(sq) {
                self.log(&format!("fuse: io_uring_enter failed: {e}"));
                // The ring only fills if the kernel stops consuming; give the kernel a moment.
                std::thread::yield_now();
            }
        }
    }

    fn submit(&self, sq: &mut SqToken) {
        if let Err(e) = self.io.submit(sq) {
            // The entries stay in the ring; the next submission takes them along.
            self.log(&format!("fuse: io_uring_enter failed: {e}"));
        }
    }

    /// Submits `commits` with one `io_uring_enter`; the calling thread becomes the one the
    /// kernel delivers these entries' next requests through, so it must outlive the mount.
    pub fn commit_many(&self, commits: impl IntoIterator<Item = Commit>) {
        let mut sq = lock(&self.sq);
        for c in commits {
            let index = self.buffers.release(c.entry);
            self.push(&mut sq, &self.commit_sqe(index, c.commit_id));
        }
        if self.io.pending(&sq) > 0 {
            self.submit(&mut sq);
        }
    }

    /// Commits one entry from whatever thread: the ring thread collects it for its next
    /// submission, other threads hand it over (a thread that may exit must not submit it).
    fn commit_now(&self, commit: Commit) {
        let on_ring_thread = RING_THREAD.with(|t| t.get()) == self.ring_id;
        let mut handoff = lock(&self.handoff);
        if !handoff.serving {
            drop(handoff);
            return self.commit_many([commit]);
        }
        let was_empty = handoff.commits.is_empty();
        handoff.commits.push(commit);
        drop(handoff);
        if was_empty && !on_ring_thread {
            self.wake();
        }
    }

    /// Wakes the ring thread with a NOP, which completes at once.
    fn wake(&self) {
        let mut sq = lock(&self.sq);
        self.push(&mut sq, &Sqe::nop(WAKE));
        self.submit(&mut sq);
    }

    /// Makes the ring thread return.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        {
            let _guard = lock(&self.park);
            self.parked.notify_all();
        }
        self.wake();
    }

    /// Says whether a [`Poller`] serves the ring. While one does, the ring thread does not wait
    /// on the ring, so a request wakes nobody: the poller finds it in memory.
    fn set_poller_active(&self, active: bool) {
        let _guard = lock(&self.park);
        self.poller_active.store(active, Ordering::SeqCst);
        if !active {
            self.parked.notify_all();
        }
    }

    fn flush_handoff(&self) {
        let commits = std::mem::take(&mut lock(&self.handoff).commits);
        if !commits.is_empty() {
            self.commit_many(commits);
        }
    }

    /// Registers every entry, the first of each queue first, so that the kernel switches to
    /// the ring as early as possible. Returns the completions that arrived meanwhile (requests
    /// for entries already registered), or why registration failed.
    fn register_all(&self) -> Result<Vec<Cqe>, RegisterError> {
        let entries = self.buffers.entries();
        {
            let mut sq = lock(&self.sq);
            for round in 0..self.per_queue {
                for q in 0..self.queues {
                    self.push(&mut sq, &self.register_sqe(q * self.per_queue + round));
                }
            }
            self.io.submit(&mut sq).map_err(|e| {
                RegisterError::NotSubmitted(format!("submitting the registrations: {e}"))
            })?;
        }
        // Failed registrations complete during the submission; successful ones stay pending
        // until a request arrives.
        let mut cqes = Vec::new();
        self.io.reap(&mut lock(&self.cq), &mut cqes);
        let failed: Vec<&Cqe> = cqes
            .iter()
            .filter(|c| c.res < 0 && c.user_data < entries as u64)
            .collect();
        if let Some(first) = failed.first() {
            let err = io::Error::from_raw_os_error(-first.res);
            let first_round_failed = failed
                .iter()
                .any(|c| (c.user_data as u32) % self.per_queue == 0);
            if first_round_failed {
                return Err(RegisterError::Refused(format!(
                    "FUSE_IO_URING_CMD_REGISTER failed: {err} (queue {})",
                    self.qid(first.user_data as u32)
                )));
            }
            // Every queue has an entry, so the kernel already uses the ring: serve with the
            // entries that did register.
            self.log(&format!(
                "fuse: {} of {entries} ring entries could not be registered ({err}); serving \
                 with the rest",
                failed.len()
            ));
        }
        Ok(cqes
            .into_iter()
            .filter(|c| c.res >= 0 || c.user_data >= entries as u64)
            .collect())
    }

    /// The ring thread: registers every entry, reports the outcome through `registered`, then
    /// waits for requests and hands each to `dispatch` until stopped or until `keep_going`
    /// says the session is over. Returns at once if registration failed.
    pub fn run(
        self: &Arc<Self>,
        registered: impl FnOnce(Result<(), RegisterError>),
        mut dispatch: impl FnMut(&Arc<FuseRing>, Entry),
        keep_going: impl Fn() -> bool,
    ) {
        RING_THREAD.with(|t| t.set(self.ring_id));
        lock(&self.handoff).serving = true;
        let mut cqes = match self.register_all() {
            Ok(early) => {
                registered(Ok(()));
                early
            }
            Err(reason) => {
                registered(Err(reason));
                self.finish_serving();
                return;
            }
        };
        loop {
            for cqe in cqes.drain(..) {
                self.completion(cqe, &mut dispatch, &keep_going);
            }
            self.flush_handoff();
            if self.stopping.load(Ordering::SeqCst) || !keep_going() {
                break;
            }
            if self.poller_active.load(Ordering::SeqCst) {
                let guard = lock(&self.park);
                if self.poller_active.load(Ordering::SeqCst)
                    && !self.stopping.load(Ordering::SeqCst)
                {
                    drop(self.parked.wait_timeout(guard, PARKED_LOOK));
                }
                continue;
            }
            self.reap_into(&mut cqes);
            if cqes.is_empty() {
                if let Err(e) = self.io.wait(1) {
                    self.log(&format!("fuse: waiting on the ring failed: {e}"));
                    break;
                }
                self.reap_into(&mut cqes);
            }
        }
        self.finish_serving();
    }

    /// Takes the waiting completions, unless a poller is taking them right now.
    fn reap_into(&self, cqes: &mut Vec<Cqe>) {
        if let Ok(mut cq) = self.cq.try_lock() {
            self.io.reap(&mut cq, cqes);
        }
    }

    /// Serves whatever completions are waiting, on the calling thread; returns how many.
    fn poll(
        self: &Arc<Self>,
        poller: &mut Poller,
        dispatch: &mut impl FnMut(&Arc<FuseRing>, Entry),
    ) -> usize {
        // After unmounting, requests wait for the ring to close, as they would over /dev/fuse
        // once the readers have stopped.
        if self.stopping.load(Ordering::SeqCst) {
            return 0;
        }
        let Ok(mut cq) = self.cq.try_lock() else {
            return 0;
        };
        self.io.reap(&mut cq, &mut poller.cqes);
        drop(cq);
        let n = poller.cqes.len();
        let previous = RING_THREAD.with(|t| t.replace(self.ring_id));
        let keep_going = || !self.stopping.load(Ordering::SeqCst);
        for cqe in poller.cqes.drain(..) {
            self.completion(cqe, dispatch, &keep_going);
        }
        RING_THREAD.with(|t| t.set(previous));
        self.flush_handoff();
        n
    }

    /// Stops taking hand-overs and submits what was handed over.
    fn finish_serving(&self) {
        let commits = {
            let mut handoff = lock(&self.handoff);
            handoff.serving = false;
            std::mem::take(&mut handoff.commits)
        };
        self.commit_many(commits);
    }

    fn completion(
        self: &Arc<Self>,
        cqe: Cqe,
        dispatch: &mut impl FnMut(&Arc<FuseRing>, Entry),
        keep_going: &impl Fn() -> bool,
    ) {
        if cqe.user_data == WAKE {
            return;
        }
        let mut failures = lock(&self.failures);
        let Some(fails) = usize::try_from(cqe.user_data)
            .ok()
            .and_then(|i| failures.get_mut(i))
        else {
            return self.log(&format!(
                "fuse: ignored a ring completion for unknown entry {}",
                cqe.user_data
            ));
        };
        if cqe.res >= 0 {
            *fails = 0;
            drop(failures);
            match self.buffers.claim(cqe.user_data) {
                Some(entry) => dispatch(self, entry),
                None => self.log(&format!(
                    "fuse: ring entry {} completed while already held; ignored",
                    cqe.user_data
                )),
            }
            return;
        }
        // The kernel ended this entry's command: the connection is going away, or the thread
        // that submitted the command exited (io_uring then cancels it), or a commit named a
        // request the kernel no longer knows. While the session lives, the entry is registered
        // again so the queue keeps its depth.
        *fails = fails.saturating_add(1);
        let err = io::Error::from_raw_os_error(-cqe.res);
        if self.stopping.load(Ordering::SeqCst) || !keep_going() {
            return;
        }
        if *fails > MAX_ENTRY_FAILURES {
            if *fails == MAX_ENTRY_FAILURES + 1 {
                self.log(&format!(
                    "fuse: ring entry {} failed {} times in a row ({err}); giving it up",
                    cqe.user_data, *fails
                ));
            }
            return;
        }
        drop(failures);
        let mut sq = lock(&self.sq);
        self.push(&mut sq, &self.register_sqe(cqe.user_data as u32));
        self.submit(&mut sq);
    }
}

/// Test support: a request put into entry `index` as the kernel would, and what came back.
#[cfg(test)]
impl FuseRing {
    pub fn fake_request(
        &self,
        index: u64,
        in_header: &[u8],
        op_in: &[u8],
        payload: &[u8],
        commit_id: u64,
        claimed_payload: Option<u32>,
    ) -> Entry {
        let mut entry = self.buffers.claim(index).expect("entry free");
        self.buffers.fake_request(
            &mut entry,
            in_header,
            op_in,
            payload,
            commit_id,
            claimed_payload,
        );
        entry
    }

    /// The reply left in entry `index` (out header, payload) once it is no longer held.
    pub fn reply_in(&self, index: u32) -> (Vec<u8>, Vec<u8>) {
        self.buffers.read_reply(index)
    }

    /// Every completion so far.
    pub fn completions(&self) -> Vec<Cqe> {
        let mut out = Vec::new();
        self.io.reap(&mut lock(&self.cq), &mut out);
        out
    }
}

/// Serves a ring from a thread that spins anyway (the emulator's pacing thread): it finds
/// requests by looking at the completion ring in memory, so none needs a thread woken. While a
/// poller is active the ring thread does not wait on the ring; when it goes inactive (its
/// thread is about to sleep) the ring thread takes over.
pub(crate) struct Poller {
    ring: Arc<FuseRing>,
    cqes: Vec<Cqe>,
}

impl Poller {
    pub fn new(ring: Arc<FuseRing>) -> Poller {
        ring.set_poller_active(true);
        Poller {
            ring,
            cqes: Vec::new(),
        }
    }

    /// Serves the completions waiting now; returns how many. Costs three loads from memory
    /// when there are none and no request waits to be copied into an entry this thread
    /// committed; one system call when one does.
    pub fn poll(&mut self, mut dispatch: impl FnMut(&Arc<FuseRing>, Entry)) -> usize {
        if !self.ring.io.has_completions() {
            // A request for an entry this thread committed waits as completion work of this
            // thread (the ring does not interrupt it for that); one system call runs it.
            if !self.ring.io.task_work_pending() || self.ring.io.run_task_work().is_err() {
                return 0;
            }
            if !self.ring.io.has_completions() {
                return 0;
            }
        }
        let ring = Arc::clone(&self.ring);
        ring.poll(self, &mut dispatch)
    }

    pub fn set_active(&self, active: bool) {
        self.ring.set_poller_active(active);
    }
}

impl Drop for Poller {
    fn drop(&mut self) {
        self.ring.set_poller_active(false);
    }
}

/// The answer to a request that came through the ring: it owns the request's entry until the
/// reply is written into it and committed. Dropped unanswered, it commits EIO, so the entry
/// always returns to service and the kernel's caller never hangs.
pub(crate) struct RingReply {
    ring: Arc<FuseRing>,
    entry: Option<Entry>,
    unique: u64,
    commit_id: u64,
}

impl RingReply {
    pub fn new(ring: Arc<FuseRing>, entry: Entry, unique: u64, commit_id: u64) -> RingReply {
        RingReply {
            ring,
            entry: Some(entry),
            unique,
            commit_id,
        }
    }

    pub fn unique(&self) -> u64 {
        self.unique
    }

    pub fn log(&self, message: &str) {
        self.ring.log(message);
    }

    /// Writes the reply into the entry: success with `parts` as the payload when `errno` is
    /// zero, else the error (errnos the kernel would refuse become EIO, as over /dev/fuse).
    fn fill(&mut self, errno: i32, parts: &[&[u8]]) -> Option<Commit> {
        let mut entry = self.entry.take()?;
        let (error, parts) = if errno == 0 {
            (0, parts)
        } else {
            (-clamp_errno(errno), &[][..])
        };
        let payload: usize = parts.iter().map(|p| p.len()).sum();
        let fits = u32::try_from(abi::OUT_HEADER_SIZE + payload)
            .ok()
            .filter(|_| payload <= self.ring.payload_capacity());
        let written = match fits {
            Some(len) => {
                let header = abi::out_header(len, error, self.unique);
                self.ring.buffers.write_reply(&mut entry, &header, parts)
            }
            None => false,
        };
        if !written {
            self.ring.log(&format!(
                "fuse: reply to request {} is too large ({payload} bytes); sent EIO",
                self.unique
            ));
            let header = abi::out_header(abi::OUT_HEADER_SIZE as u32, -libc::EIO, self.unique);
            self.ring.buffers.write_reply(&mut entry, &header, &[]);
        }
        Some(Commit {
            entry,
            commit_id: self.commit_id,
        })
    }

    /// Sends the reply on its own (see [`FuseRing::commit_now`] for which thread submits it).
    pub fn send(mut self, errno: i32, parts: &[&[u8]]) {
        if let Some(commit) = self.fill(errno, parts) {
            self.ring.commit_now(commit);
        }
    }

    /// Adds the reply to `batch`; returns the index of the submission that will carry it.
    pub fn batch(mut self, errno: i32, parts: &[&[u8]], batch: &mut RingBatch) -> Option<usize> {
        let commit = self.fill(errno, parts)?;
        Some(batch.add(&self.ring, commit))
    }
}

impl Drop for RingReply {
    fn drop(&mut self) {
        if let Some(commit) = self.fill(libc::EIO, &[]) {
            self.ring.commit_now(commit);
        }
    }
}

/// Commits gathered for one `io_uring_enter` per ring.
#[derive(Default)]
pub(crate) struct RingBatch {
    groups: Vec<(Arc<FuseRing>, Vec<Commit>)>,
    /// Commit lists of earlier sends, emptied, kept for reuse.
    spare: Vec<Vec<Commit>>,
}

/// Spare lists kept between sends: one per ring is plenty.
const SPARE_LISTS: usize = 4;

impl RingBatch {
    fn add(&mut self, ring: &Arc<FuseRing>, commit: Commit) -> usize {
        let index = match self.groups.iter().position(|(r, _)| Arc::ptr_eq(r, ring)) {
            Some(i) => i,
            None => {
                let list = self.spare.pop().unwrap_or_default();
                self.groups.push((Arc::clone(ring), list));
                self.groups.len() - 1
            }
        };
        self.groups[index].1.push(commit);
        index
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    pub fn replies(&self) -> usize {
        self.groups.iter().map(|(_, c)| c.len()).sum()
    }

    pub fn writes(&self) -> usize {
        self.groups.len()
    }

    /// Submits each ring's commits with one `io_uring_enter`, calling `before_write` with the
    /// submission's index just before it.
    pub fn send(&mut self, mut before_write: impl FnMut(usize)) {
        for (index, (ring, mut commits)) in self.groups.drain(..).enumerate() {
            before_write(index);
            ring.commit_many(commits.drain(..));
            if self.spare.len() < SPARE_LISTS {
                self.spare.push(commits);
            }
        }
    }
}

impl Drop for RingBatch {
    fn drop(&mut self) {
        self.send(|_| {});
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_module_parameter_decides_availability_and_is_named_when_off() {
        let tmp = tempfile::Builder::new()
            .prefix(&format!("storsim-uring-param-{}-", std::process::id()))
            .tempdir()
            .unwrap();
        let dir = tmp.path();
        let param = dir.join("enable_uring");
        let path = param.to_str().unwrap();
        std::fs::write(&param, "Y\n").unwrap();
        assert_eq!(unavailable_at(path), None);
        std::fs::write(&param, "N\n").unwrap();
        let why = unavailable_at(path).unwrap();
        assert!(why.contains(path) && why.contains("is N"), "{why}");
        std::fs::remove_file(&param).unwrap();
        let why = unavailable_at(path).unwrap();
        assert!(why.contains(path) && why.contains("6.14"), "{why}");
        std::fs::remove_dir(dir).unwrap();
    }

    #[test]
    fn cpu_lists_count_like_the_kernel() {
        assert_eq!(parse_cpu_list("0"), Some(1));
        assert_eq!(parse_cpu_list("0-1"), Some(2));
        assert_eq!(parse_cpu_list("0-3,8,10-11"), Some(7));
        assert_eq!(parse_cpu_list(""), None);
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
    }

    #[test]
    fn command_data_is_fuse_uring_cmd_req() {
        let b = cmd_req(0x0102_0304_0506_0708, 3);
        assert_eq!(u64::from_ne_bytes(b[0..8].try_into().unwrap()), 0, "flags");
        assert_eq!(
            u64::from_ne_bytes(b[8..16].try_into().unwrap()),
            0x0102_0304_0506_0708
        );
        assert_eq!(u16::from_ne_bytes(b[16..18].try_into().unwrap()), 3, "qid");
        assert!(b[18..].iter().all(|&x| x == 0));
    }
}
