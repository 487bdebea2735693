//! A minimal io_uring over raw system calls: `io_uring_setup`, the three shared mappings (the
//! submission ring, the completion ring and the array of 128-byte submission entries) and
//! `io_uring_enter`. Only what FUSE over io_uring needs is here: NOP and URING_CMD entries,
//! submitting, reaping completions and waiting for them.
//!
//! The submission queue has one producer at a time and the completion queue one consumer at a
//! time; the kernel is the other side of each. Callers prove exclusive access by holding the
//! [`SqToken`] or [`CqToken`] that [`IoUring::setup`] hands out once (they keep them in
//! mutexes), so the ring itself can be shared between threads.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

// The constants below are those of `include/uapi/linux/io_uring.h`; the libc crate does not
// carry io_uring's structures or flags.
const IORING_SETUP_CQSIZE: u32 = 1 << 3;
/// Keep submitting the rest of a batch after one entry fails to be prepared, so one bad commit
/// never strands the others in the submission ring.
const IORING_SETUP_SUBMIT_ALL: u32 = 1 << 7;
/// Completion work for a thread (FUSE copies each request into its entry this way) does not
/// interrupt that thread while it runs: it is done at the thread's next system call, or by
/// one made for the purpose when [`IoUring::task_work_pending`] says so. A sleeping thread is
/// still woken for it. Without this flag every request interrupted the polling thread with an
/// inter-processor interrupt, which in a virtual machine costs an exit to the hypervisor.
const IORING_SETUP_COOP_TASKRUN: u32 = 1 << 8;
/// Flags pending completion work in the submission ring's flags (IORING_SQ_TASKRUN).
const IORING_SETUP_TASKRUN_FLAG: u32 = 1 << 9;
const IORING_SQ_TASKRUN: u32 = 1 << 2;
/// 128-byte entries: FUSE's `struct fuse_uring_cmd_req` travels in the extra 64 bytes.
const IORING_SETUP_SQE128: u32 = 1 << 10;
const IORING_FEAT_SINGLE_MMAP: u32 = 1 << 0;
const IORING_OFF_SQ_RING: libc::off_t = 0;
const IORING_OFF_CQ_RING: libc::off_t = 0x800_0000;
const IORING_OFF_SQES: libc::off_t = 0x1000_0000;
const IORING_ENTER_GETEVENTS: u32 = 1 << 0;
const IORING_OP_NOP: u8 = 0;
pub(crate) const IORING_OP_URING_CMD: u8 = 46;

/// The size of one submission entry with IORING_SETUP_SQE128.
pub(crate) const SQE_BYTES: usize = 128;
/// Where the 80 bytes of command data start in a 128-byte entry (`sqe->cmd`).
const SQE_CMD_OFFSET: usize = 48;
pub(crate) const SQE_CMD_BYTES: usize = SQE_BYTES - SQE_CMD_OFFSET;
const CQE_BYTES: usize = 16;

#[repr(C)]
#[derive(Default)]
struct SqringOffsets {
    head: u32,
    tail: u32,
    ring_mask: u32,
    ring_entries: u32,
    flags: u32,
    dropped: u32,
    array: u32,
    resv1: u32,
    user_addr: u64,
}

#[repr(C)]
#[derive(Default)]
struct CqringOffsets {
    head: u32,
    tail: u32,
    ring_mask: u32,
    ring_entries: u32,
    overflow: u32,
    cqes: u32,
    flags: u32,
    resv1: u32,
    user_addr: u64,
}

#[repr(C)]
#[derive(Default)]
struct Params {
    sq_entries: u32,
    cq_entries: u32,
    flags: u32,
    sq_thread_cpu: u32,
    sq_thread_idle: u32,
    features: u32,
    wq_fd: u32,
    resv: [u32; 3],
    sq_off: SqringOffsets,
    cq_off: CqringOffsets,
}

/// One submission entry, built in ordinary memory and copied into the ring by
/// [`IoUring::push`].
#[derive(Clone)]
pub(crate) struct Sqe([u8; SQE_BYTES]);

impl Sqe {
    /// A NOP: completes at once with result 0. Used to wake a thread waiting for completions.
    pub fn nop(user_data: u64) -> Sqe {
        let mut sqe = Sqe([0; SQE_BYTES]);
        sqe.0[0] = IORING_OP_NOP;
        sqe.set_user_data(user_data);
        sqe
    }

    /// IORING_OP_URING_CMD on `fd`: the driver's command `cmd_op`, an optional buffer address
    /// and length (for FUSE: an array of iovecs and its length), and up to 80 bytes of command
    /// data.
    pub fn uring_cmd(
        fd: RawFd,
        cmd_op: u32,
        addr: u64,
        len: u32,
        cmd: &[u8],
        user_data: u64,
    ) -> Sqe {
        let mut sqe = Sqe([0; SQE_BYTES]);
        sqe.0[0] = IORING_OP_URING_CMD;
        sqe.0[4..8].copy_from_slice(&fd.to_ne_bytes());
        sqe.0[8..12].copy_from_slice(&cmd_op.to_ne_bytes());
        sqe.0[16..24].copy_from_slice(&addr.to_ne_bytes());
        sqe.0[24..28].copy_from_slice(&len.to_ne_bytes());
        sqe.set_user_data(user_data);
        let n = cmd.len().min(SQE_CMD_BYTES);
        sqe.0[SQE_CMD_OFFSET..SQE_CMD_OFFSET + n].copy_from_slice(&cmd[..n]);
        sqe
    }

    fn set_user_data(&mut self, user_data: u64) {
        self.0[32..40].copy_from_slice(&user_data.to_ne_bytes());
    }

    #[cfg(test)]
    pub fn bytes(&self) -> &[u8; SQE_BYTES] {
        &self.0
    }
}

/// One completion: the submission's `user_data` and its result (a negative errno on failure).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cqe {
    pub user_data: u64,
    pub res: i32,
}

/// An anonymous or ring mapping, unmapped when dropped.
struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

impl Mapping {
    fn ring(fd: RawFd, len: usize, offset: libc::off_t) -> io::Result<Mapping> {
        // SAFETY: a fresh shared mapping of the ring descriptor at the offset io_uring defines;
        // no existing memory is touched.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd,
                offset,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(ptr as *mut u8).ok_or_else(|| io::Error::other("mmap gave null"))?;
        Ok(Mapping { ptr, len })
    }

    /// A pointer `offset` bytes into the mapping; `None` when `offset + size` runs past it, so
    /// offsets the kernel hands back are checked before use.
    fn at(&self, offset: u32, size: usize) -> Option<*mut u8> {
        let end = (offset as usize).checked_add(size)?;
        if end > self.len {
            return None;
        }
        // SAFETY: `offset + size` is within the mapping, checked above.
        Some(unsafe { self.ptr.as_ptr().add(offset as usize) })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping was created by mmap with this length and is unmapped once.
        unsafe {
            libc::munmap(self.ptr.as_ptr() as *mut libc::c_void, self.len);
        }
    }
}

/// Proof of being the submission queue's only producer; [`IoUring::setup`] makes one.
pub(crate) struct SqToken {
    ring_id: usize,
    /// The tail as this producer has written it, ahead of the shared tail until submitted.
    tail: u32,
}

/// Proof of being the completion queue's only consumer; [`IoUring::setup`] makes one.
pub(crate) struct CqToken {
    ring_id: usize,
}

/// An io_uring instance with 128-byte submission entries.
pub(crate) struct IoUring {
    // The mappings are declared before the descriptor so they are unmapped before it closes.
    _sq_ring: Mapping,
    _cq_ring: Option<Mapping>,
    sqes: Mapping,
    sq_head: *const AtomicU32,
    sq_tail: *const AtomicU32,
    sq_flags: *const AtomicU32,
    sq_mask: u32,
    sq_entries: u32,
    sq_array: *mut u32,
    cq_head: *const AtomicU32,
    cq_tail: *const AtomicU32,
    cq_mask: u32,
    cqes: *const u8,
    /// Distinguishes rings, so a token is never used with a ring it was not made for.
    id: usize,
    fd: OwnedFd,
}

// SAFETY: the raw pointers point into mappings this value owns, and every access through them
// is either atomic (the ring indices) or to a slot that the SqToken or CqToken holder alone
// may touch, as the kernel's ring protocol prescribes.
unsafe impl Send for IoUring {}
// SAFETY: as for Send: shared use goes through atomics or token-guarded slots.
unsafe impl Sync for IoUring {}

impl IoUring {
    /// Creates a ring with at least `sq_entries` submission and `cq_entries` completion slots.
    pub fn setup(sq_entries: u32, cq_entries: u32) -> io::Result<(IoUring, SqToken, CqToken)> {
        let mut params = Params {
            flags: IORING_SETUP_SQE128
                | IORING_SETUP_CQSIZE
                | IORING_SETUP_SUBMIT_ALL
                | IORING_SETUP_COOP_TASKRUN
                | IORING_SETUP_TASKRUN_FLAG,
            cq_entries,
            ..Params::default()
        };
        // SAFETY: `params` is a valid io_uring_params the kernel reads and fills in.
        let raw = unsafe {
            libc::syscall(
                libc::SYS_io_uring_setup,
                sq_entries as libc::c_long,
                &mut params as *mut Params,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: io_uring_setup returned a new descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw as RawFd) };
        let bad = |what: &str| io::Error::other(format!("io_uring_setup: {what} out of range"));
        let sq_len = params.sq_off.array as usize + params.sq_entries as usize * 4;
        let cq_len = params.cq_off.cqes as usize + params.cq_entries as usize * CQE_BYTES;
        let single = params.features & IORING_FEAT_SINGLE_MMAP != 0;
        let sq_ring = Mapping::ring(
            fd.as_raw_fd(),
            if single { sq_len.max(cq_len) } else { sq_len },
            IORING_OFF_SQ_RING,
        )?;
        let cq_ring = if single {
            None
        } else {
            Some(Mapping::ring(fd.as_raw_fd(), cq_len, IORING_OFF_CQ_RING)?)
        };
        let sqes = Mapping::ring(
            fd.as_raw_fd(),
            params.sq_entries as usize * SQE_BYTES,
            IORING_OFF_SQES,
        )?;
        let cq_map = cq_ring.as_ref().unwrap_or(&sq_ring);
        let u32_at = |map: &Mapping, offset: u32, what: &str| -> io::Result<*mut u8> {
            map.at(offset, 4).ok_or_else(|| bad(what))
        };
        let sq_head = u32_at(&sq_ring, params.sq_off.head, "sq head")? as *const AtomicU32;
        let sq_tail = u32_at(&sq_ring, params.sq_off.tail, "sq tail")? as *const AtomicU32;
        let sq_flags = u32_at(&sq_ring, params.sq_off.flags, "sq flags")? as *const AtomicU32;
        let sq_mask_ptr = u32_at(&sq_ring, params.sq_off.ring_mask, "sq mask")?;
        let sq_array = sq_ring
            .at(params.sq_off.array, params.sq_entries as usize * 4)
            .ok_or_else(|| bad("sq array"))? as *mut u32;
        let cq_head = u32_at(cq_map, params.cq_off.head, "cq head")? as *const AtomicU32;
        let cq_tail = u32_at(cq_map, params.cq_off.tail, "cq tail")? as *const AtomicU32;
        let cq_mask_ptr = u32_at(cq_map, params.cq_off.ring_mask, "cq mask")?;
        let cqes = cq_map
            .at(params.cq_off.cqes, params.cq_entries as usize * CQE_BYTES)
            .ok_or_else(|| bad("cqes"))? as *const u8;
        // SAFETY: both masks lie inside their mappings (checked above) and are written by the
        // kernel once, before io_uring_setup returned.
        let (sq_mask, cq_mask) = unsafe {
            (
                std::ptr::read_volatile(sq_mask_ptr as *const u32),
                std::ptr::read_volatile(cq_mask_ptr as *const u32),
            )
        };
        if sq_mask.wrapping_add(1) != params.sq_entries
            || cq_mask.wrapping_add(1) != params.cq_entries
        {
            return Err(bad("ring mask"));
        }
        // SAFETY: the tail lies inside the mapping and is only ever accessed atomically.
        let tail = unsafe { (*sq_tail).load(Ordering::Acquire) };
        static NEXT_ID: AtomicUsize = AtomicUsize::new(0);
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let ring = IoUring {
            _sq_ring: sq_ring,
            _cq_ring: cq_ring,
            sqes,
            sq_head,
            sq_tail,
            sq_flags,
            sq_mask,
            sq_entries: params.sq_entries,
            sq_array,
            cq_head,
            cq_tail,
            cq_mask,
            cqes,
            id,
            fd,
        };
        Ok((ring, SqToken { ring_id: id, tail }, CqToken { ring_id: id }))
    }

    #[cfg(test)]
    pub fn sq_entries(&self) -> u32 {
        self.sq_entries
    }

    fn check(&self, id: usize) {
        assert_eq!(id, self.id, "an io_uring token used with another ring");
    }

    /// Copies `sqe` into the next free submission slot. Returns false when the ring is full
    /// (nothing submitted yet has been consumed by the kernel).
    pub fn push(&self, sq: &mut SqToken, sqe: &Sqe) -> bool {
        self.check(sq.ring_id);
        // SAFETY: the head lies inside the mapping and is only ever accessed atomically.
        let head = unsafe { (*self.sq_head).load(Ordering::Acquire) };
        if sq.tail.wrapping_sub(head) >= self.sq_entries {
            return false;
        }
        let index = sq.tail & self.sq_mask;
        let slot = index as usize * SQE_BYTES;
        let dst = self
            .sqes
            .at(slot as u32, SQE_BYTES)
            .expect("the slot index is masked to the ring size");
        // SAFETY: the slot lies between the kernel's head and the shared tail's next value, so
        // the kernel does not read it until the tail is published; only the SqToken holder
        // writes slots; `dst` has SQE_BYTES bytes (checked by `at`).
        unsafe {
            std::ptr::copy_nonoverlapping(sqe.0.as_ptr(), dst, SQE_BYTES);
            std::ptr::write_volatile(self.sq_array.add(index as usize), index);
        }
        sq.tail = sq.tail.wrapping_add(1);
        true
    }

    /// Entries pushed but not yet handed to the kernel.
    pub fn pending(&self, sq: &SqToken) -> u32 {
        // SAFETY: the tail lies inside the mapping and is only ever accessed atomically.
        let shared = unsafe { (*self.sq_tail).load(Ordering::Relaxed) };
        sq.tail.wrapping_sub(shared)
    }

    /// Publishes every pushed entry and submits them with one `io_uring_enter`. Returns how
    /// many the kernel took. Interrupted or busy calls are retried a few times; entries the
    /// kernel did not take stay in the ring for the next call.
    pub fn submit(&self, sq: &mut SqToken) -> io::Result<u32> {
        self.check(sq.ring_id);
        // SAFETY: the tail lies inside the mapping; Release publishes the slots written above.
        unsafe { (*self.sq_tail).store(sq.tail, Ordering::Release) };
        let mut to_submit = self.pending_unconsumed();
        let mut taken = 0;
        let mut attempts = 0;
        while to_submit > 0 {
            match self.enter(to_submit, 0, 0) {
                Ok(n) => {
                    taken += n;
                    if n == 0 {
                        break;
                    }
                }
                Err(e) => {
                    let retry = matches!(
                        e.raw_os_error(),
                        Some(libc::EINTR) | Some(libc::EAGAIN) | Some(libc::EBUSY)
                    );
                    attempts += 1;
                    if !retry || attempts > 100 {
                        return Err(e);
                    }
                    std::thread::yield_now();
                }
            }
            to_submit = self.pending_unconsumed();
        }
        Ok(taken)
    }

    /// Published entries the kernel has not consumed yet.
    fn pending_unconsumed(&self) -> u32 {
        // SAFETY: both indices lie inside the mapping and are only ever accessed atomically.
        unsafe {
            let tail = (*self.sq_tail).load(Ordering::Acquire);
            let head = (*self.sq_head).load(Ordering::Acquire);
            tail.wrapping_sub(head)
        }
    }

    /// Blocks until at least `min` completions are waiting (returns early on a signal).
    pub fn wait(&self, min: u32) -> io::Result<()> {
        match self.enter(0, min, IORING_ENTER_GETEVENTS) {
            Ok(_) => Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => Ok(()),
            Err(e) => Err(e),
        }
    }

    fn enter(&self, to_submit: u32, min_complete: u32, flags: u32) -> io::Result<u32> {
        // SAFETY: io_uring_enter with no signal mask reads and writes only the ring's own
        // mappings.
        let n = unsafe {
            libc::syscall(
                libc::SYS_io_uring_enter,
                self.fd.as_raw_fd() as libc::c_long,
                to_submit as libc::c_long,
                min_complete as libc::c_long,
                flags as libc::c_long,
                std::ptr::null::<libc::c_void>(),
                0 as libc::c_long,
            )
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as u32)
        }
    }

    /// Whether completion work for the calling thread waits to be run (see
    /// IORING_SETUP_COOP_TASKRUN), without a system call. The flag is per ring, not per thread:
    /// running the work from a thread that has none is merely a wasted system call.
    pub fn task_work_pending(&self) -> bool {
        // SAFETY: the flags lie inside the mapping and are only ever accessed atomically.
        unsafe { (*self.sq_flags).load(Ordering::Acquire) & IORING_SQ_TASKRUN != 0 }
    }

    /// Runs the calling thread's pending completion work, which posts its completions.
    pub fn run_task_work(&self) -> io::Result<()> {
        self.wait(0)
    }

    /// Whether completions are waiting, without a system call.
    pub fn has_completions(&self) -> bool {
        // SAFETY: both indices lie inside the mapping and are only ever accessed atomically.
        unsafe {
            (*self.cq_tail).load(Ordering::Acquire) != (*self.cq_head).load(Ordering::Relaxed)
        }
    }

    /// Moves every waiting completion into `out` and frees their slots.
    pub fn reap(&self, cq: &mut CqToken, out: &mut Vec<Cqe>) {
        self.check(cq.ring_id);
        // SAFETY: the indices lie inside the mapping and are only ever accessed atomically;
        // slots between head and tail were written by the kernel before it published the tail
        // (Acquire), and only the CqToken holder reads them and moves the head.
        unsafe {
            let tail = (*self.cq_tail).load(Ordering::Acquire);
            let mut head = (*self.cq_head).load(Ordering::Relaxed);
            while head != tail {
                let slot = self.cqes.add((head & self.cq_mask) as usize * CQE_BYTES);
                let mut raw = [0u8; CQE_BYTES];
                std::ptr::copy_nonoverlapping(slot, raw.as_mut_ptr(), CQE_BYTES);
                out.push(Cqe {
                    user_data: u64::from_ne_bytes(raw[0..8].try_into().expect("8 bytes")),
                    res: i32::from_ne_bytes(raw[8..12].try_into().expect("4 bytes")),
                });
                head = head.wrapping_add(1);
            }
            (*self.cq_head).store(head, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqe_fields_sit_where_the_kernel_reads_them() {
        let sqe = Sqe::uring_cmd(7, 2, 0x1122_3344_5566_7788, 2, &[0xAB; 24], 99);
        let b = sqe.bytes();
        assert_eq!(b[0], IORING_OP_URING_CMD);
        assert_eq!(i32::from_ne_bytes(b[4..8].try_into().unwrap()), 7);
        assert_eq!(
            u32::from_ne_bytes(b[8..12].try_into().unwrap()),
            2,
            "cmd_op"
        );
        assert_eq!(
            u64::from_ne_bytes(b[16..24].try_into().unwrap()),
            0x1122_3344_5566_7788
        );
        assert_eq!(u32::from_ne_bytes(b[24..28].try_into().unwrap()), 2, "len");
        assert_eq!(
            u64::from_ne_bytes(b[32..40].try_into().unwrap()),
            99,
            "user_data"
        );
        assert_eq!(&b[48..72], &[0xAB; 24], "command data at sqe->cmd");
        assert!(b[72..].iter().all(|&x| x == 0));
        assert_eq!(std::mem::size_of::<Params>(), 120, "struct io_uring_params");
    }

    /// A NOP goes through the real kernel ring and comes back with its user data. Skipped
    /// where io_uring is unavailable (kernel.io_uring_disabled, seccomp, old kernels).
    #[test]
    fn a_nop_round_trips_through_the_kernel() {
        let (ring, mut sq, mut cq) = match IoUring::setup(8, 16) {
            Ok(r) => r,
            Err(e) => {
                storsim_testenv::kernel_lacks(&format!("io_uring_setup failed ({e})"));
                return;
            }
        };
        for i in 0..3 {
            assert!(ring.push(&mut sq, &Sqe::nop(100 + i)));
        }
        assert_eq!(ring.pending(&sq), 3);
        assert_eq!(ring.submit(&mut sq).unwrap(), 3);
        ring.wait(3).unwrap();
        assert!(ring.has_completions());
        let mut out = Vec::new();
        ring.reap(&mut cq, &mut out);
        let mut got: Vec<u64> = out.iter().map(|c| c.user_data).collect();
        got.sort();
        assert_eq!(got, vec![100, 101, 102]);
        assert!(out.iter().all(|c| c.res == 0));
        assert!(!ring.has_completions());
        for i in 0..ring.sq_entries() {
            assert!(ring.push(&mut sq, &Sqe::nop(i as u64)), "slot {i}");
        }
        assert!(!ring.push(&mut sq, &Sqe::nop(0)), "a full ring refuses");
        ring.submit(&mut sq).unwrap();
    }
}
