//! One socket type for TCP and Unix-domain connections, and the listener that produces them.

use std::fs;
use std::io::{self, IoSlice, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::io::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::Listen;

/// A connected client socket of either family.
#[derive(Debug)]
pub(crate) enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    /// Another handle to the same socket, so that reading, writing and shutting down can happen
    /// on different threads.
    pub(crate) fn try_clone(&self) -> io::Result<Stream> {
        Ok(match self {
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
        })
    }

    /// Shuts down one or both directions. Errors are ignored because the only one possible
    /// here is "not connected", which means the goal is already reached.
    pub(crate) fn shutdown(&self, how: Shutdown) {
        let _ = match self {
            Stream::Tcp(s) => s.shutdown(how),
            Stream::Unix(s) => s.shutdown(how),
        };
    }

    pub(crate) fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_read_timeout(timeout),
            Stream::Unix(s) => s.set_read_timeout(timeout),
        }
    }

    pub(crate) fn set_write_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_write_timeout(timeout),
            Stream::Unix(s) => s.set_write_timeout(timeout),
        }
    }

    fn raw_fd(&self) -> std::os::unix::io::RawFd {
        match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
        }
    }

    /// Receives into `buf`. With `wait` false the call never blocks: it fails with
    /// `WouldBlock` when nothing has arrived, whatever the socket's own mode, so one thread may
    /// poll a socket that another reads with blocking calls. Interrupted calls are retried.
    pub(crate) fn recv(&self, buf: &mut [u8], wait: bool) -> io::Result<usize> {
        // SAFETY: `buf` is valid for writes of `buf.len()` bytes for the whole call.
        unsafe { self.recv_raw(buf.as_mut_ptr(), buf.len(), wait) }
    }

    /// Receives at most `max` bytes into the spare capacity of `data`, appending them, so that
    /// a large payload goes from the socket into its own buffer without a copy in between.
    pub(crate) fn recv_append(
        &self,
        data: &mut Vec<u8>,
        max: usize,
        wait: bool,
    ) -> io::Result<usize> {
        let spare = data.spare_capacity_mut();
        let len = spare.len().min(max);
        // SAFETY: the spare capacity is valid for writes of `len` bytes; `recv` writes at most
        // that many, and exactly the `n` it reports, which are then initialised.
        unsafe {
            let n = self.recv_raw(spare.as_mut_ptr().cast::<u8>(), len, wait)?;
            data.set_len(data.len() + n);
            Ok(n)
        }
    }

    /// # Safety
    /// `ptr` must be valid for writes of `len` bytes.
    unsafe fn recv_raw(&self, ptr: *mut u8, len: usize, wait: bool) -> io::Result<usize> {
        let flags = if wait { 0 } else { libc::MSG_DONTWAIT };
        loop {
            let n = libc::recv(self.raw_fd(), ptr.cast(), len, flags);
            if n >= 0 {
                return Ok(n as usize);
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }

    /// One `writev` for all the buffers (the default would write only the first).
    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write_vectored(bufs),
            Stream::Unix(s) => s.write_vectored(bufs),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.flush(),
            Stream::Unix(s) => s.flush(),
        }
    }
}

/// A bound listening socket.
#[derive(Debug)]
pub(crate) enum Listener {
    Tcp(TcpListener),
    Unix {
        listener: UnixListener,
        path: PathBuf,
        /// Device and inode of the socket file we created, so that dropping the listener
        /// removes our file and never one that somebody else put at the same path later.
        identity: (u64, u64),
    },
}

impl Listener {
    pub(crate) fn bind(listen: &Listen) -> io::Result<Listener> {
        match listen {
            Listen::Tcp(addr) => Ok(Listener::Tcp(TcpListener::bind(addr)?)),
            Listen::Unix(path) => {
                remove_stale_socket(path)?;
                let listener = UnixListener::bind(path)?;
                let meta = fs::symlink_metadata(path)?;
                Ok(Listener::Unix {
                    listener,
                    path: path.clone(),
                    identity: (meta.dev(), meta.ino()),
                })
            }
        }
    }

    /// Accepts one connection and names its peer for logs.
    pub(crate) fn accept(&self) -> io::Result<(Stream, String)> {
        match self {
            Listener::Tcp(l) => {
                let (s, peer) = l.accept()?;
                // NBD replies are small headers often followed by data in a second write;
                // Nagle's algorithm would hold the header back waiting for an ACK.
                s.set_nodelay(true)?;
                Ok((Stream::Tcp(s), peer.to_string()))
            }
            Listener::Unix { listener, path, .. } => {
                let (s, _) = listener.accept()?;
                // Unix-domain clients are almost always unnamed, so the socket path is the most
                // useful thing to show.
                Ok((Stream::Unix(s), format!("unix:{}", path.display())))
            }
        }
    }

    /// "127.0.0.1:PORT" for TCP, the socket path for Unix.
    pub(crate) fn local_addr(&self) -> String {
        match self {
            Listener::Tcp(l) => match l.local_addr() {
                Ok(addr) => addr.to_string(),
                Err(e) => format!("<unknown address: {e}>"),
            },
            Listener::Unix { path, .. } => path.display().to_string(),
        }
    }

    /// Unblocks a thread sitting in `accept`. The caller has already set the shutdown flag, so
    /// whatever `accept` returns next is discarded.
    pub(crate) fn wake(&self) {
        match self {
            Listener::Tcp(l) => {
                if let Ok(addr) = l.local_addr() {
                    let _ = TcpStream::connect_timeout(&loopback_for(addr), Duration::from_secs(1));
                }
                shutdown_listener(l);
            }
            Listener::Unix { listener, path, .. } => {
                let _ = UnixStream::connect(path);
                shutdown_listener(listener);
            }
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Listener::Unix { path, identity, .. } = self {
            if let Ok(meta) = fs::symlink_metadata(&*path) {
                if meta.file_type().is_socket() && (meta.dev(), meta.ino()) == *identity {
                    let _ = fs::remove_file(&*path);
                }
            }
        }
    }
}

/// A wildcard listening address cannot be connected to, so wake-up connections go to the
/// loopback address of the same family instead.
fn loopback_for(addr: SocketAddr) -> SocketAddr {
    let ip = match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, addr.port())
}

/// On Linux, shutting down a listening socket makes a blocked `accept` return at once. It backs
/// up the wake-up connection, which can fail (for example when the socket file was deleted).
fn shutdown_listener(listener: impl AsFd) {
    // A failure leaves only the wake-up connection to unblock `accept`.
    let _ = rustix::net::shutdown(listener, rustix::net::Shutdown::Both);
}

/// Removes a socket file left behind by an earlier server, refusing to touch anything that is
/// not a socket or that still has a server listening on it.
fn remove_stale_socket(path: &Path) -> io::Result<()> {
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    if !meta.file_type().is_socket() {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("{} exists and is not a socket", path.display()),
        ));
    }
    if UnixStream::connect(path).is_ok() {
        return Err(io::Error::new(
            io::ErrorKind::AddrInUse,
            format!("a server is already listening on {}", path.display()),
        ));
    }
    fs::remove_file(path)
}
