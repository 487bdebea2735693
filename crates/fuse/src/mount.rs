//! Mounting (by `mount(2)` as root, else through `fusermount3`), the reader threads, the
//! choice of transport and the ring thread, and unmounting.

use rustix::fs::{fcntl_getfl, fcntl_setfl, Mode, OFlags};
use rustix::io::Errno;
use rustix::mount::{unmount, MountFlags, UnmountFlags};
use rustix::net::{
    recvmsg, socketpair, AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags,
    SocketFlags, SocketType,
};
use rustix::process::{getegid, geteuid};
use std::ffi::{CStr, CString};
use std::fs;
use std::io::{self, IoSliceMut, Read};
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command as Process, Stdio};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::channel::Channel;
use crate::session::{Poller, RingGrant, Session, MAX_IO_BYTES};
use crate::uring::{self, FuseRing, RegisterError};
use crate::{FileExport, FuseError, Handler, MountOptions, Transport};

/// How long `Mount::mount` waits for the kernel's INIT request, which it sends as soon as the
/// mount exists; only a wedged kernel takes longer.
const INIT_TIMEOUT: Duration = Duration::from_secs(10);
/// More readers than this only add idle threads: the kernel hands each request to one reader,
/// and readers never wait for the handler.
const MAX_THREADS: usize = 64;
/// Ring entries per queue at most: more only reserves address space that 128 requests in
/// flight (the loop driver's limit) could never use.
const MAX_RING_ENTRIES: usize = 512;
const FUSERMOUNT: &str = "fusermount3";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Method {
    /// `mount(2)` by this process (root); undone with `umount2(MNT_DETACH)`.
    Syscall,
    /// `fusermount3`, which passes the descriptor back over a socket; undone with
    /// `fusermount3 -u -z`.
    Fusermount,
}

/// A mounted export. Unmounts on [`unmount`](Mount::unmount) or, best effort, on drop.
pub struct Mount {
    dir: PathBuf,
    file_name: String,
    session: Arc<Session>,
    threads: Vec<JoinHandle<()>>,
    method: Method,
    /// The transport in use: `DevFuse` or `IoUring`, never `Auto`.
    transport: Transport,
    /// The device number the mount point showed once mounted, to recognise it at unmount time.
    st_dev: Option<u64>,
    finished: bool,
}

impl std::fmt::Debug for Mount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mount")
            .field("dir", &self.dir)
            .field("file_name", &self.file_name)
            .field("method", &self.method)
            .field("transport", &self.transport)
            .field("threads", &self.threads.len())
            .finish()
    }
}

fn validate(export: &FileExport) -> Result<(), FuseError> {
    let name = &export.file_name;
    let reason = if name.is_empty() {
        Some("the file name is empty".to_string())
    } else if name == "." || name == ".." {
        Some(format!("the file name {name:?} is reserved"))
    } else if name.contains('/') || name.contains('\0') {
        Some(format!("the file name {name:?} contains '/' or NUL"))
    } else if name.len() > 255 {
        Some(format!(
            "the file name is {} bytes long (at most 255)",
            name.len()
        ))
    } else {
        None
    };
    match reason {
        Some(reason) => Err(FuseError::InvalidExport { reason }),
        None => Ok(()),
    }
}

fn open_dev_fuse() -> Result<OwnedFd, FuseError> {
    rustix::fs::open(
        "/dev/fuse",
        OFlags::RDWR | OFlags::CLOEXEC | OFlags::NONBLOCK,
        Mode::empty(),
    )
    .map_err(|e| FuseError::DeviceUnavailable { source: e.into() })
}

/// The mount options both mount paths share. `default_permissions` makes the kernel check the
/// mode bits itself; `max_read` lets one READ carry as much as one WRITE.
fn common_options(options: &MountOptions) -> String {
    let mut s = format!("max_read={MAX_IO_BYTES},default_permissions");
    if options.allow_other {
        s.push_str(",allow_other");
    }
    s
}

fn mount_syscall(dir: &Path, fd: &OwnedFd, options: &MountOptions) -> io::Result<()> {
    let (uid, gid) = (geteuid().as_raw(), getegid().as_raw());
    let data = format!(
        "fd={},rootmode=40000,user_id={uid},group_id={gid},{}",
        fd.as_raw_fd(),
        common_options(options)
    );
    let data = CString::new(data).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let attempt = |fstype: &CStr| {
        rustix::mount::mount(
            c"storsim",
            dir,
            fstype,
            MountFlags::NOSUID | MountFlags::NODEV,
            data.as_c_str(),
        )
    };
    match attempt(c"fuse.storsim") {
        // A kernel without file system subtypes knows only "fuse".
        Err(Errno::NODEV) => attempt(c"fuse"),
        other => other,
    }
    .map_err(io::Error::from)
}

/// Receives the descriptor `fusermount3` sends as SCM_RIGHTS ancillary data over `socket`.
fn receive_fd(socket: &OwnedFd) -> io::Result<Option<OwnedFd>> {
    let mut byte = [0u8; 1];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let received = loop {
        match recvmsg(
            socket,
            &mut [IoSliceMut::new(&mut byte)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        ) {
            Err(Errno::INTR) => continue,
            other => break other?,
        }
    };
    if received.bytes == 0 {
        return Ok(None);
    }
    Ok(control.drain().find_map(|message| match message {
        RecvAncillaryMessage::ScmRights(mut fds) => fds.next(),
        _ => None,
    }))
}

/// Mounts through `fusermount3`, the set-uid helper unprivileged users need. It opens
/// `/dev/fuse`, mounts, and passes the descriptor back over the socket named by `_FUSE_COMMFD`.
fn mount_fusermount(dir: &Path, options: &MountOptions) -> Result<OwnedFd, FuseError> {
    let (ours, theirs) = socketpair(
        AddressFamily::UNIX,
        SocketType::STREAM,
        SocketFlags::CLOEXEC,
        None,
    )
    .map_err(|e| FuseError::Io {
        context: "socketpair for fusermount3",
        source: e.into(),
    })?;
    let theirs_raw = theirs.as_raw_fd();
    let mut command = Process::new(FUSERMOUNT);
    command
        .arg("-o")
        .arg(format!(
            "fsname=storsim,subtype=storsim,{}",
            common_options(options)
        ))
        .arg("--")
        .arg(dir)
        .env("_FUSE_COMMFD", theirs_raw.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // The socket is close-on-exec so no other child inherits it; only fusermount3 may, so the
    // flag is cleared in the child between fork and exec.
    // SAFETY: pre_exec's closure runs in the forked child, where only async-signal-safe
    // calls are allowed: fcntl is one, touches only the child's copy of the descriptor, and
    // the closure allocates nothing.
    unsafe {
        command.pre_exec(move || {
            if libc::fcntl(theirs_raw, libc::F_SETFD, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = command.spawn().map_err(|e| FuseError::Fusermount {
        reason: format!("cannot run {FUSERMOUNT}: {e}"),
    })?;
    // Our copy of the child's end must be closed, or recvmsg would wait forever if fusermount3
    // exits without sending anything.
    drop(theirs);
    let received = receive_fd(&ours);
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = pipe.read_to_string(&mut stderr);
    }
    let status = child.wait().map_err(|e| FuseError::Fusermount {
        reason: format!("waiting for {FUSERMOUNT}: {e}"),
    })?;
    match received {
        Ok(Some(fd)) if status.success() => Ok(fd),
        Ok(_) => Err(FuseError::Fusermount {
            reason: format!("{status}: {}", stderr.trim()),
        }),
        Err(e) => Err(FuseError::Fusermount {
            reason: format!("receiving the descriptor: {e}; {}", stderr.trim()),
        }),
    }
}

fn set_nonblocking(fd: &OwnedFd) -> io::Result<()> {
    let flags = fcntl_getfl(fd)?;
    fcntl_setfl(fd, flags | OFlags::NONBLOCK)?;
    Ok(())
}

/// The directory to mount on, made absolute so that unmounting stays right even if the
/// working directory changes.
fn mount_point(dir: &Path) -> Result<PathBuf, FuseError> {
    let not_a_dir = || FuseError::NotADirectory {
        path: dir.to_path_buf(),
    };
    if !fs::metadata(dir).map_err(|_| not_a_dir())?.is_dir() {
        return Err(not_a_dir());
    }
    fs::canonicalize(dir).map_err(|_| not_a_dir())
}

/// Whether to prepare an io_uring for `transport`: `Auto` takes it where the kernel offers
/// it; `IoUring` on a kernel without it is an error before anything is mounted.
fn wants_ring(transport: Transport) -> Result<bool, FuseError> {
    Ok(match transport {
        Transport::DevFuse => false,
        Transport::Auto => uring::unavailable().is_none(),
        Transport::IoUring => match uring::unavailable() {
            None => true,
            Some(reason) => return Err(FuseError::IoUringUnavailable { reason }),
        },
    })
}

/// Mounts on `dir` and returns the `/dev/fuse` descriptor that serves the mount: with
/// `mount(2)` as root, through `fusermount3` otherwise or when root may not mount FUSE.
fn mount_device(
    dir: &Path,
    options: &MountOptions,
    log: &dyn Fn(&str),
) -> Result<(OwnedFd, Method), FuseError> {
    if geteuid().is_root() {
        let fd = open_dev_fuse()?;
        match mount_syscall(dir, &fd, options) {
            Ok(()) => return Ok((fd, Method::Syscall)),
            // Root inside a user namespace may not mount FUSE directly.
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
                log(&format!(
                    "fuse: mount(2) refused ({e}); trying {FUSERMOUNT}"
                ));
            }
            Err(source) => {
                return Err(FuseError::Mount {
                    path: dir.to_path_buf(),
                    source,
                })
            }
        }
    }
    let fd = mount_fusermount(dir, options)?;
    Ok((fd, Method::Fusermount))
}

/// The io_uring for a mount over `channel`, one queue per possible CPU. Failing to set it
/// up is an error only if the ring is required; otherwise the mount uses /dev/fuse.
fn prepare_ring(
    channel: &Arc<Channel>,
    options: &MountOptions,
    ring_required: bool,
    log: &dyn Fn(&str),
) -> Result<Option<Arc<FuseRing>>, FuseError> {
    let per_queue = options.ring_entries.clamp(1, MAX_RING_ENTRIES) as u32;
    match uring::possible_cpus().and_then(|queues| {
        FuseRing::new(
            Arc::clone(channel),
            queues,
            per_queue,
            MAX_IO_BYTES as usize,
        )
    }) {
        Ok(ring) => Ok(Some(ring)),
        Err(e) if ring_required => Err(FuseError::IoUringUnavailable {
            reason: format!("setting up the io_uring: {e}"),
        }),
        Err(e) => {
            log(&format!(
                "fuse: cannot set up an io_uring ({e}); using /dev/fuse"
            ));
            Ok(None)
        }
    }
}

impl Mount {
    /// Mounts `export` on the directory `dir` and starts `options.threads` reader threads.
    ///
    /// Returns once the kernel's INIT handshake is done, so the file can be used at once. As
    /// root the mount is made with `mount(2)`; otherwise (or if that is refused with EPERM)
    /// through `fusermount3`.
    // `Mount::mount` is the name the emulator is written against, and reads as what it does.
    #[allow(clippy::self_named_constructors)]
    pub fn mount(
        dir: &Path,
        export: FileExport,
        options: MountOptions,
        handler: Arc<dyn Handler>,
    ) -> Result<Mount, FuseError> {
        validate(&export)?;
        let dir = mount_point(dir)?;
        let log = Arc::clone(&options.log);
        let want_ring = wants_ring(options.transport)?;
        let ring_required = options.transport == Transport::IoUring;
        let (fd, method) = mount_device(&dir, &options, &*log)?;

        // Readers wait in epoll and read without blocking, so that stopping them never depends
        // on a request arriving. The descriptor from fusermount3 comes without the flag.
        if let Err(source) = set_nonblocking(&fd) {
            let _ = detach(&dir, method);
            return Err(FuseError::Io {
                context: "making /dev/fuse non-blocking",
                source,
            });
        }
        let channel = Arc::new(Channel::new(fd, Arc::clone(&log)));
        // The ring is set up before INIT so that INIT can offer it knowing it exists: once
        // granted, the kernel holds every request until the ring is registered.
        let ring = if want_ring {
            prepare_ring(&channel, &options, ring_required, &*log).inspect_err(|_| {
                let _ = detach(&dir, method);
            })?
        } else {
            None
        };
        let session = match Session::new(channel, export.clone(), handler, ring) {
            Ok(s) => Arc::new(s),
            Err(source) => {
                let _ = detach(&dir, method);
                return Err(FuseError::Io {
                    context: "creating the stop pipe",
                    source,
                });
            }
        };
        // From here on, dropping `mount` unmounts, so every early return below cleans up.
        let mut mount = Mount {
            dir,
            file_name: export.file_name,
            session,
            threads: Vec::new(),
            method,
            transport: Transport::DevFuse,
            st_dev: None,
            finished: false,
        };
        let threads = options.threads.clamp(1, MAX_THREADS);
        mount.start_readers(threads)?;
        mount
            .session
            .wait_init(INIT_TIMEOUT)
            .map_err(|reason| FuseError::Init { reason })?;
        mount.take_ring_grant(want_ring, ring_required, &*log)?;
        mount.st_dev = fs::metadata(&mount.dir).ok().map(|m| m.dev());
        let how = match (mount.transport, mount.session.ring()) {
            (Transport::IoUring, Some(ring)) => format!("over io_uring ({})", ring.describe()),
            _ => format!("over /dev/fuse with {threads} reader threads"),
        };
        log(&format!(
            "fuse: mounted {} ({} bytes{}) on {} {how}",
            mount.file_name,
            export.size_bytes,
            if export.read_only { ", read-only" } else { "" },
            mount.dir.display()
        ));
        Ok(mount)
    }

    /// Starts `threads` reader threads, each waiting on the session's descriptors with its
    /// own epoll instance.
    fn start_readers(&mut self, threads: usize) -> Result<(), FuseError> {
        for i in 0..threads {
            let poller = Poller::new(self.session.channel().raw_fd(), self.session.stop_fd())
                .map_err(|source| FuseError::Io {
                    context: "creating an epoll instance",
                    source,
                })?;
            let session = Arc::clone(&self.session);
            let handle = std::thread::Builder::new()
                .name(format!("storsim-fuse-{i}"))
                .spawn(move || session.run(poller))
                .map_err(|source| FuseError::Io {
                    context: "spawning a FUSE reader thread",
                    source,
                })?;
            self.threads.push(handle);
        }
        Ok(())
    }

    /// After INIT: puts the ring in service if the kernel granted it, or says why requests
    /// go through /dev/fuse; an error if the ring was required and is not in service.
    fn take_ring_grant(
        &mut self,
        want_ring: bool,
        ring_required: bool,
        log: &dyn Fn(&str),
    ) -> Result<(), FuseError> {
        match self.session.ring_grant() {
            Some(RingGrant::Granted) => match self.start_ring() {
                Ok(()) => self.transport = Transport::IoUring,
                Err(RingFailure::KernelFellBack(reason)) if !ring_required => log(&format!(
                    "fuse: {reason}; the kernel went back to /dev/fuse, and so do we"
                )),
                Err(RingFailure::KernelFellBack(reason) | RingFailure::Stuck(reason)) => {
                    return Err(FuseError::IoUringUnavailable { reason })
                }
            },
            Some(RingGrant::NotUsed(reason)) if ring_required => {
                return Err(FuseError::IoUringUnavailable { reason })
            }
            Some(RingGrant::NotUsed(reason)) if want_ring => {
                log(&format!("fuse: {reason}; using /dev/fuse"));
            }
            _ => {}
        }
        Ok(())
    }

    /// Starts the ring thread, which registers every entry and then serves the ring; returns
    /// once registration is done.
    fn start_ring(&mut self) -> Result<(), RingFailure> {
        let ring = Arc::clone(
            self.session
                .ring()
                .expect("a ring is granted only when one was prepared"),
        );
        let session = Arc::clone(&self.session);
        let (done, registered) = mpsc::channel();
        let handle = std::thread::Builder::new()
            .name("storsim-fuse-ring".to_string())
            .spawn(move || {
                ring.run(
                    |outcome| {
                        // The mount may have given up waiting; the ring thread goes on anyway.
                        let _ = done.send(outcome);
                    },
                    |ring, entry| session.dispatch_ring(ring, entry),
                    || session.is_live(),
                )
            })
            .map_err(|e| RingFailure::Stuck(format!("spawning the ring thread: {e}")))?;
        self.threads.push(handle);
        match registered.recv_timeout(INIT_TIMEOUT) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(RegisterError::Refused(reason))) => Err(RingFailure::KernelFellBack(reason)),
            Ok(Err(RegisterError::NotSubmitted(reason))) => Err(RingFailure::Stuck(reason)),
            Err(_) => Err(RingFailure::Stuck(
                "the ring thread did not finish registering".to_string(),
            )),
        }
    }

    /// The transport in use: [`Transport::IoUring`] or [`Transport::DevFuse`].
    pub fn transport(&self) -> Transport {
        self.transport
    }

    /// A [`RingPoller`] for this mount's ring, if it uses io_uring (`None` over /dev/fuse).
    /// While the poller is active, requests are found by [`RingPoller::poll`] instead of
    /// waking the ring thread.
    pub fn ring_poller(&self) -> Option<RingPoller> {
        if self.transport != Transport::IoUring {
            return None;
        }
        let ring = Arc::clone(self.session.ring()?);
        Some(RingPoller {
            poller: uring::Poller::new(ring),
            session: Arc::clone(&self.session),
        })
    }

    /// The mount point.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The path of the exported file inside the mount point.
    pub fn file_path(&self) -> PathBuf {
        self.dir.join(&self.file_name)
    }

    /// Whether the kernel has ended the session (someone unmounted the file system).
    pub fn has_ended(&self) -> bool {
        self.session.has_ended()
    }

    /// Blocks until the kernel ends the session, which happens when someone unmounts the
    /// directory (`umount DIR`, `fusermount3 -u DIR`) and nothing holds the file open any more.
    pub fn wait(&self) {
        self.session.wait_end();
    }

    /// Unmounts (lazily: a file system still in use, such as a file still attached to a loop
    /// device, is detached from the directory at once) and stops the reader threads.
    ///
    /// Once the readers are gone and the handler has answered or dropped every outstanding
    /// [`Reply`](crate::Reply), the `/dev/fuse` descriptor closes, which aborts the connection:
    /// anything still using the file then gets errors (ENOTCONN, or EIO through a loop device)
    /// instead of hanging.
    pub fn unmount(mut self) -> Result<(), FuseError> {
        self.shutdown()
    }

    /// Whether the directory still holds this file system. A live session says yes. An ended
    /// one was usually unmounted, but the kernel also ends a session that is aborted while
    /// mounted (through `/sys/fs/fuse/connections`), which leaves a mount answering ENOTCONN
    /// that still needs unmounting; and after an unmount, whatever is mounted there now
    /// belongs to someone else and must be left alone.
    fn still_mounted(&self) -> bool {
        if !self.session.has_ended() {
            return true;
        }
        match fs::metadata(&self.dir) {
            Ok(m) => Some(m.dev()) == self.st_dev,
            Err(e) => e.raw_os_error() == Some(libc::ENOTCONN),
        }
    }

    fn shutdown(&mut self) -> Result<(), FuseError> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        let result = if self.still_mounted() {
            detach(&self.dir, self.method)
        } else {
            Ok(())
        };
        self.session.stop();
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
        let log = |m: &str| self.session.channel().log(m);
        match result {
            Ok(()) => {
                log(&format!("fuse: unmounted {}", self.dir.display()));
                Ok(())
            }
            Err(source) => Err(FuseError::Unmount {
                path: self.dir.clone(),
                source,
            }),
        }
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if let Err(e) = self.shutdown() {
            self.session.channel().log(&format!("fuse: {e}"));
        }
    }
}

/// Serves a mount's io_uring from a thread that spins anyway, such as the emulator's pacing
/// thread: [`poll`](RingPoller::poll) looks at the completion ring in memory and hands the
/// requests it finds to the handler on the calling thread, so a request needs no thread woken
/// to be read. Created active; the ring thread stops waiting on the ring while a poller is
/// active, so the owner must call [`set_active(false)`](RingPoller::set_active) before its
/// thread sleeps (and `true` when it wakes), or requests wait until it polls again.
/// Dropping the poller makes it inactive.
///
/// The handler runs on the polling thread; replies the polling thread sends make it the thread
/// the kernel delivers those entries' next requests through, so it must outlive the mount.
pub struct RingPoller {
    poller: uring::Poller,
    session: Arc<Session>,
}

impl RingPoller {
    /// Serves every request waiting in the ring; returns how many completions it took.
    pub fn poll(&mut self) -> usize {
        let session = &self.session;
        self.poller
            .poll(|ring, entry| session.dispatch_ring(ring, entry))
    }

    /// Whether this poller serves the ring (see the type's description).
    pub fn set_active(&self, active: bool) {
        self.poller.set_active(active);
    }
}

impl std::fmt::Debug for RingPoller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RingPoller").finish_non_exhaustive()
    }
}

/// Why the ring could not be put in service.
enum RingFailure {
    /// The kernel refused a registration, and on that stopped waiting for the ring: requests
    /// flow through /dev/fuse.
    KernelFellBack(String),
    /// The registrations never reached the kernel, which therefore holds every request until
    /// the ring is ready: the mount is unusable.
    Stuck(String),
}

/// Detaches the mount from `dir`. "Not mounted" counts as success: someone else unmounted it
/// first.
fn detach(dir: &Path, method: Method) -> io::Result<()> {
    match method {
        Method::Syscall => match unmount(dir, UnmountFlags::DETACH) {
            Ok(()) | Err(Errno::INVAL) | Err(Errno::NOENT) => Ok(()),
            Err(e) => Err(e.into()),
        },
        Method::Fusermount => {
            let output = Process::new(FUSERMOUNT)
                .arg("-u")
                .arg("-z")
                .arg("--")
                .arg(dir)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .output()?;
            if output.status.success() {
                return Ok(());
            }
            let stderr = String::from_utf8_lossy(&output.stderr);
            if stderr.contains("not mounted") || stderr.contains("not found in") {
                return Ok(());
            }
            Err(io::Error::other(format!(
                "{FUSERMOUNT} -u: {}: {}",
                output.status,
                stderr.trim()
            )))
        }
    }
}
