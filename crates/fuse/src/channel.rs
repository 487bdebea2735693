//! The `/dev/fuse` descriptor shared by the reader threads and every outstanding [`Reply`]
//! that came through it.
//!
//! [`Reply`]: crate::Reply

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;

use crate::abi;

/// The log sink of [`MountOptions`](crate::MountOptions).
pub(crate) type LogFn = Arc<dyn Fn(&str) + Send + Sync>;

/// The kernel refuses a reply whose error is positive or at or below -512 (`-ERESTARTSYS`), so
/// errnos outside 1..512 are sent as EIO instead of making the reply itself fail.
const ERRNO_LIMIT: i32 = 512;

/// A positive errno the kernel accepts in a reply: `errno` itself when it lies in 1..512,
/// else EIO.
pub(crate) fn clamp_errno(errno: i32) -> i32 {
    if errno > 0 && errno < ERRNO_LIMIT {
        errno
    } else {
        libc::EIO
    }
}

pub(crate) struct Channel {
    fd: OwnedFd,
    log: LogFn,
}

impl Channel {
    pub fn new(fd: OwnedFd, log: LogFn) -> Self {
        Channel { fd, log }
    }

    pub fn raw_fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    pub fn log(&self, message: &str) {
        (self.log)(message);
    }

    /// Sends a successful reply whose payload is the concatenation of `parts`.
    pub fn reply(&self, unique: u64, parts: &[&[u8]]) {
        self.send(unique, 0, parts);
    }

    /// Sends an error reply; `errno` is positive (`libc::EIO`, ...).
    pub fn reply_error(&self, unique: u64, errno: i32) {
        self.send(unique, -clamp_errno(errno), &[]);
    }

    /// Writes header and payload with one `writev`, which the kernel takes as one whole reply;
    /// that is what makes replying from any thread at any time safe.
    fn send(&self, unique: u64, error: i32, parts: &[&[u8]]) {
        let payload: usize = parts.iter().map(|p| p.len()).sum();
        let total = abi::OUT_HEADER_SIZE + payload;
        let Ok(total_u32) = u32::try_from(total) else {
            self.log(&format!(
                "fuse: reply to request {unique} is too large ({total} bytes)"
            ));
            return self.send(unique, -libc::EIO, &[]);
        };
        let header = abi::out_header(total_u32, error, unique);
        let mut iov = Vec::with_capacity(1 + parts.len());
        iov.push(libc::iovec {
            iov_base: header.as_ptr() as *mut libc::c_void,
            iov_len: header.len(),
        });
        for part in parts.iter().filter(|p| !p.is_empty()) {
            iov.push(libc::iovec {
                iov_base: part.as_ptr() as *mut libc::c_void,
                iov_len: part.len(),
            });
        }
        loop {
            // SAFETY: every iovec points into a live slice borrowed for the duration of the call,
            // and the kernel only reads from them.
            let n = unsafe { libc::writev(self.raw_fd(), iov.as_ptr(), iov.len() as libc::c_int) };
            if n >= 0 {
                if n as usize != total {
                    self.log(&format!(
                        "fuse: short reply write to request {unique}: {n} of {total} bytes"
                    ));
                }
                return;
            }
            let err = io::Error::last_os_error();
            match err.raw_os_error() {
                Some(libc::EINTR) => continue,
                // ENOENT: the request is gone (it was interrupted and already answered, or the
                // connection was aborted); ENODEV: the session has ended. Neither is an error
                // of this reply, and there is nobody left to tell.
                Some(libc::ENOENT) | Some(libc::ENODEV) | Some(libc::ECONNABORTED) => return,
                _ => {
                    self.log(&format!(
                        "fuse: writing the reply to request {unique} failed: {err}"
                    ));
                    return;
                }
            }
        }
    }
}
