use std::fmt;
use std::io;
use std::path::PathBuf;

/// Why mounting or unmounting failed.
#[derive(Debug)]
pub enum FuseError {
    /// The export cannot be presented as a file (empty name, a name with `/` or NUL, `.`/`..`,
    /// or longer than 255 bytes).
    InvalidExport { reason: String },
    /// The mount point does not exist or is not a directory.
    NotADirectory { path: PathBuf },
    /// `/dev/fuse` could not be opened: the FUSE module is missing or access is denied.
    DeviceUnavailable { source: io::Error },
    /// The `mount(2)` system call refused the mount.
    Mount { path: PathBuf, source: io::Error },
    /// `fusermount3` (used when not root) was missing or failed; `reason` holds its message.
    Fusermount { reason: String },
    /// The kernel never completed the INIT handshake, or offered an unsupported protocol.
    Init { reason: String },
    /// FUSE over io_uring was required ([`Transport::IoUring`](crate::Transport)) but is not
    /// available; `reason` names what is missing. Nothing stays mounted.
    IoUringUnavailable { reason: String },
    /// Unmounting failed; the session was stopped anyway, so the mount point now answers
    /// ENOTCONN until someone unmounts it.
    Unmount { path: PathBuf, source: io::Error },
    /// Any other system call failed (creating threads, pipes or epoll instances).
    Io {
        context: &'static str,
        source: io::Error,
    },
}

impl fmt::Display for FuseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FuseError::InvalidExport { reason } => write!(f, "invalid FUSE export: {reason}"),
            FuseError::NotADirectory { path } => {
                write!(f, "mount point {} is not a directory", path.display())
            }
            FuseError::DeviceUnavailable { source } => {
                write!(f, "cannot open /dev/fuse: {source}")
            }
            FuseError::Mount { path, source } => {
                write!(f, "cannot mount FUSE on {}: {source}", path.display())
            }
            FuseError::Fusermount { reason } => write!(f, "fusermount3 failed: {reason}"),
            FuseError::Init { reason } => write!(f, "FUSE INIT handshake failed: {reason}"),
            FuseError::IoUringUnavailable { reason } => {
                write!(f, "FUSE over io_uring is unavailable: {reason}")
            }
            FuseError::Unmount { path, source } => {
                write!(f, "cannot unmount {}: {source}", path.display())
            }
            FuseError::Io { context, source } => write!(f, "{context}: {source}"),
        }
    }
}

impl std::error::Error for FuseError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FuseError::DeviceUnavailable { source }
            | FuseError::Mount { source, .. }
            | FuseError::Unmount { source, .. }
            | FuseError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
