//! Shared pieces of the mount tests: skip detection, temporary directories, mount guards that
//! always unmount, aligned buffers for O_DIRECT, and two handlers backed by a `Vec<u8>`.

#![allow(dead_code)]

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use storsim_fuse::{Command, FileExport, Handler, Mount, MountOptions, Reply, Request, Transport};

/// Why real FUSE mounts cannot run here, if they cannot.
pub fn fuse_unusable() -> Option<String> {
    if let Err(e) = OpenOptions::new().read(true).write(true).open("/dev/fuse") {
        return Some(format!("/dev/fuse cannot be opened ({e})"));
    }
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if !root && which("fusermount3").is_none() {
        return Some("not root and fusermount3 is not installed".to_string());
    }
    None
}

/// Returns from the calling test with a SKIP line when FUSE is unusable.
#[macro_export]
macro_rules! skip_unless_fuse {
    () => {
        if let Some(reason) = common::fuse_unusable() {
            storsim_testenv::missing(&format!(
                "{reason}; real FUSE mounts are needed for this test"
            ));
            return;
        }
    };
}

/// Whether the io_uring variant of a test must be skipped; prints why when it must.
pub fn skip_io_uring() -> bool {
    if let Some(reason) = fuse_unusable() {
        storsim_testenv::missing(&format!(
            "{reason}; real FUSE mounts are needed for this test"
        ));
        return true;
    }
    if let Some(reason) = storsim_fuse::io_uring_unavailable() {
        storsim_testenv::kernel_lacks(&format!(
            "the io_uring transport cannot be tested: {reason}"
        ));
        return true;
    }
    false
}

/// Runs the test function `$name(transport: Transport)` once per transport, as the tests
/// `$name::dev_fuse` and `$name::io_uring` (which is skipped, saying why, where the kernel has
/// no FUSE over io_uring or it is switched off).
#[macro_export]
macro_rules! over_both_transports {
    ($name:ident) => {
        mod $name {
            #[test]
            fn dev_fuse() {
                super::$name(storsim_fuse::Transport::DevFuse);
            }

            #[test]
            fn io_uring() {
                if super::common::skip_io_uring() {
                    return;
                }
                super::$name(storsim_fuse::Transport::IoUring);
            }
        }
    };
}

pub fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .chain(["/sbin", "/usr/sbin"].iter().map(PathBuf::from))
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

/// A fresh empty directory, removed (only if empty: never recursively, in case something is
/// still mounted on it) when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "storsim-fuse-test-{tag}-{}-{n}",
            std::process::id()
        ));
        std::fs::create_dir_all(&path).expect("create temp dir");
        TempDir(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// A mount that is unmounted when dropped, so a failed assertion never leaves it behind.
pub struct Mounted {
    pub mount: Option<Mount>,
    pub dir: TempDir,
    pub file: PathBuf,
}

impl Mounted {
    pub fn mount(&self) -> &Mount {
        self.mount.as_ref().expect("still mounted")
    }

    pub fn unmount(mut self) {
        self.mount
            .take()
            .expect("still mounted")
            .unmount()
            .expect("unmount");
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        if let Some(mount) = self.mount.take() {
            let _ = mount.unmount();
        }
    }
}

pub fn export(name: &str, size_bytes: u64, read_only: bool) -> FileExport {
    FileExport {
        file_name: name.to_string(),
        size_bytes,
        read_only,
    }
}

/// Mounts `export` with `transport`, which the mount must then use.
pub fn mount(
    tag: &str,
    export: FileExport,
    handler: Arc<dyn Handler>,
    transport: Transport,
) -> Mounted {
    let dir = TempDir::new(tag);
    let file = dir.path().join(&export.file_name);
    let options = MountOptions {
        log: Arc::new(|line| eprintln!("{line}")),
        transport,
        ..MountOptions::default()
    };
    let mount = Mount::mount(dir.path(), export, options, handler).expect("mount");
    if transport != Transport::Auto {
        assert_eq!(
            mount.transport(),
            transport,
            "the mount uses the transport asked for"
        );
    }
    Mounted {
        mount: Some(mount),
        dir,
        file,
    }
}

pub fn open_direct(path: &Path, write: bool) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(libc::O_DIRECT)
        .open(path)
}

/// `threads` threads write and read back `rounds` blocks each of the file at `path`, with
/// direct I/O: thread `t`'s block of round `r` is block `r * threads + t`, so neighbouring
/// blocks are written by different threads at the same time, and block `k` holds
/// `Aligned::filled(block, k * block + seed)`. Panics on a short transfer or a wrong read.
pub fn interleaved_blocks(path: &Path, threads: u64, rounds: u64, block: usize, seed: u64) {
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let path = path.to_path_buf();
            std::thread::spawn(move || {
                use std::os::unix::fs::FileExt;
                let file = open_direct(&path, true).expect("open");
                for round in 0..rounds {
                    let offset = (round * threads + t) * block as u64;
                    let out = Aligned::filled(block, offset + seed);
                    assert_eq!(file.write_at(&out, offset).unwrap(), block);
                    let mut back = Aligned::new(block);
                    assert_eq!(file.read_at(&mut back, offset).unwrap(), block);
                    assert_eq!(&back[..], &out[..], "thread {t} round {round}");
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("worker");
    }
}

/// Checks that `data` holds what [`interleaved_blocks`] wrote in its first `blocks` blocks.
pub fn assert_interleaved_blocks(data: &[u8], blocks: u64, block: usize, seed: u64) {
    for k in 0..blocks {
        let offset = k * block as u64;
        let expected = Aligned::filled(block, offset + seed);
        let start = offset as usize;
        assert_eq!(&data[start..start + block], &expected[..], "block {k}");
    }
}

/// A zeroed heap buffer aligned to 4096 bytes, as O_DIRECT wants.
pub struct Aligned {
    ptr: *mut u8,
    layout: Layout,
}

// SAFETY: the buffer is plain owned memory with no thread affinity.
unsafe impl Send for Aligned {}

impl Aligned {
    pub fn new(len: usize) -> Aligned {
        let layout = Layout::from_size_align(len.max(1), 4096).expect("layout");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        assert!(!ptr.is_null(), "allocation failed");
        Aligned { ptr, layout }
    }

    pub fn filled(len: usize, seed: u64) -> Aligned {
        let mut a = Aligned::new(len);
        fill(&mut a, seed);
        a
    }
}

impl std::ops::Deref for Aligned {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `ptr` holds `layout.size()` initialised bytes owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr, self.layout.size()) }
    }
}

impl std::ops::DerefMut for Aligned {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in deref, and `&mut self` makes the borrow unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }
}

impl Drop for Aligned {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this very layout.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}

/// Fills `buf` with a pattern that differs per seed and per position.
pub fn fill(buf: &mut [u8], seed: u64) {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for chunk in buf.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let bytes = x.to_le_bytes();
        chunk.copy_from_slice(&bytes[..chunk.len()]);
    }
}

/// What a test handler saw: every request (command, offset, length) and whether any of them
/// lay outside the device, which the file system must never let through.
#[derive(Default)]
pub struct Seen {
    pub requests: Mutex<Vec<(Command, u64, u32)>>,
    pub out_of_range: AtomicBool,
}

impl Seen {
    pub fn list(&self) -> Vec<(Command, u64, u32)> {
        self.requests.lock().unwrap().clone()
    }

    pub fn count(&self, command: Command) -> usize {
        self.list().iter().filter(|r| r.0 == command).count()
    }
}

/// Serves one request against `data`, the device's bytes.
fn serve(data: &Mutex<Vec<u8>>, seen: &Seen, request: Request, reply: Reply) {
    seen.requests
        .lock()
        .unwrap()
        .push((request.command, request.offset, request.length));
    let mut data = data.lock().unwrap();
    let start = request.offset as usize;
    let end = start + request.length as usize;
    if end > data.len() || (request.command == Command::Write && request.data.len() != end - start)
    {
        seen.out_of_range.store(true, Ordering::SeqCst);
        return reply.error(libc::EIO);
    }
    match request.command {
        Command::Read => reply.data(&data[start..end]),
        Command::Write => {
            data[start..end].copy_from_slice(&request.data);
            reply.written(request.length);
        }
        Command::Fsync => reply.ok(),
        Command::Trim => {
            data[start..end].fill(0);
            reply.ok();
        }
    }
}

/// Answers every request at once, on the reader thread that delivered it.
pub struct MemHandler {
    pub data: Mutex<Vec<u8>>,
    pub seen: Seen,
}

impl MemHandler {
    pub fn new(size: usize) -> Arc<MemHandler> {
        Arc::new(MemHandler {
            data: Mutex::new(vec![0; size]),
            seen: Seen::default(),
        })
    }
}

impl Handler for MemHandler {
    fn request(&self, request: Request, reply: Reply) {
        serve(&self.data, &self.seen, request, reply);
    }
}

struct Queue {
    pending: Vec<(Request, Reply)>,
    closed: bool,
}

/// Answers from a pool thread after a delay, newest request first, so replies go back out of
/// order whenever several requests are in flight.
pub struct DelayedHandler {
    pub data: Arc<Mutex<Vec<u8>>>,
    pub seen: Arc<Seen>,
    /// The most requests answered in one reversed batch: above 1 means replies really went
    /// back out of order.
    pub max_batch: Arc<AtomicUsize>,
    queue: Arc<(Mutex<Queue>, Condvar)>,
    worker: Mutex<Option<JoinHandle<()>>>,
}

impl DelayedHandler {
    pub fn new(size: usize, delay: Duration) -> Arc<DelayedHandler> {
        let data = Arc::new(Mutex::new(vec![0; size]));
        let seen = Arc::new(Seen::default());
        let max_batch = Arc::new(AtomicUsize::new(0));
        let queue = Arc::new((
            Mutex::new(Queue {
                pending: Vec::new(),
                closed: false,
            }),
            Condvar::new(),
        ));
        let worker = {
            let (data, seen, max_batch, queue) = (
                Arc::clone(&data),
                Arc::clone(&seen),
                Arc::clone(&max_batch),
                Arc::clone(&queue),
            );
            std::thread::spawn(move || loop {
                let batch = {
                    let (lock, cond) = &*queue;
                    let mut q = lock.lock().unwrap();
                    while q.pending.is_empty() && !q.closed {
                        q = cond.wait(q).unwrap();
                    }
                    if q.pending.is_empty() && q.closed {
                        return;
                    }
                    drop(q);
                    // Let more requests pile up, as a device with a queue would.
                    std::thread::sleep(delay);
                    std::mem::take(&mut lock.lock().unwrap().pending)
                };
                max_batch.fetch_max(batch.len(), Ordering::SeqCst);
                for (request, reply) in batch.into_iter().rev() {
                    serve(&data, &seen, request, reply);
                }
            })
        };
        Arc::new(DelayedHandler {
            data,
            seen,
            max_batch,
            queue,
            worker: Mutex::new(Some(worker)),
        })
    }
}

impl Handler for DelayedHandler {
    fn request(&self, request: Request, reply: Reply) {
        let (lock, cond) = &*self.queue;
        lock.lock().unwrap().pending.push((request, reply));
        cond.notify_one();
    }
}

impl Drop for DelayedHandler {
    fn drop(&mut self) {
        let (lock, cond) = &*self.queue;
        lock.lock().unwrap().closed = true;
        cond.notify_all();
        if let Some(worker) = self.worker.lock().unwrap().take() {
            let _ = worker.join();
        }
    }
}

/// Drops every reply unanswered, to show the kernel then gets EIO instead of hanging.
pub struct DroppingHandler;

impl Handler for DroppingHandler {
    fn request(&self, _request: Request, _reply: Reply) {}
}

pub fn errno_of(e: &std::io::Error) -> i32 {
    e.raw_os_error().unwrap_or(0)
}
