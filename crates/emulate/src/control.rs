//! The control socket: a Unix socket taking one command per line and answering each with one
//! line, the emulator's equivalent of the Wisconsin RAM disk's ioctl. What the commands mean is
//! the caller's (the CLI knows device files and output formats); this is only the transport.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Longest command line accepted; a longer one closes the connection.
pub const MAX_LINE_BYTES: usize = 64 * 1024;
/// Control connections served at once; more are closed on arrival.
pub const MAX_CONNECTIONS: usize = 8;

/// Answers one command line (without its newline) with one line (without its newline).
pub type CommandHandler = Arc<dyn Fn(&str) -> String + Send + Sync>;

/// A listening control socket. Dropping it stops accepting and removes the socket file.
pub struct ControlSocket {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl ControlSocket {
    /// Listens on `path`. A stale socket file there is replaced; any other file is an error,
    /// so a typo cannot delete a user's file.
    pub fn bind(path: &Path, handler: CommandHandler) -> io::Result<ControlSocket> {
        if let Ok(meta) = std::fs::symlink_metadata(path) {
            if !meta.file_type().is_socket() {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} exists and is not a socket", path.display()),
                ));
            }
            std::fs::remove_file(path)?;
        }
        let listener = UnixListener::bind(path)?;
        listener.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("storsim-control".into())
                .spawn(move || accept_loop(listener, handler, stop))?
        };
        Ok(ControlSocket {
            path: path.to_path_buf(),
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for ControlSocket {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            // A panicked accept loop has nothing left to clean up.
            let _ = thread.join();
        }
        // The socket may already be gone; nothing else to do then.
        let _ = std::fs::remove_file(&self.path);
    }
}

fn accept_loop(listener: UnixListener, handler: CommandHandler, stop: Arc<AtomicBool>) {
    let active = Arc::new(AtomicUsize::new(0));
    while !stop.load(Ordering::Acquire) {
        match listener.accept() {
            Ok((stream, _)) => {
                if active.load(Ordering::Acquire) >= MAX_CONNECTIONS {
                    continue;
                }
                active.fetch_add(1, Ordering::AcqRel);
                let (handler, counted, stop) =
                    (Arc::clone(&handler), Arc::clone(&active), Arc::clone(&stop));
                let spawned = std::thread::Builder::new()
                    .name("storsim-control-conn".into())
                    .spawn(move || {
                        // A client that goes away mid-command is not an error worth reporting.
                        let _ = serve(stream, &handler, &stop);
                        counted.fetch_sub(1, Ordering::AcqRel);
                    });
                if spawned.is_err() {
                    active.fetch_sub(1, Ordering::AcqRel);
                }
            }
            // Polling lets the loop notice `stop` without a wake-up connection.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

fn serve(stream: UnixStream, handler: &CommandHandler, stop: &AtomicBool) -> io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_millis(200)))?;
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    let mut line = Vec::new();
    while !stop.load(Ordering::Acquire) {
        match (&mut reader)
            .take((MAX_LINE_BYTES + 1 - line.len()) as u64)
            .read_until(b'\n', &mut line)
        {
            Ok(0) => return Ok(()),
            Ok(_) => {}
            Err(e)
                if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::TimedOut =>
            {
                continue
            }
            Err(e) => return Err(e),
        }
        if line.last() != Some(&b'\n') {
            if line.len() > MAX_LINE_BYTES {
                writer.write_all(b"error: command line too long\n")?;
                return Ok(());
            }
            continue;
        }
        let answer = match std::str::from_utf8(&line) {
            Ok(text) => handler(text.trim()),
            Err(_) => "error: the command is not UTF-8".to_string(),
        };
        line.clear();
        writer.write_all(answer.replace('\n', " ").as_bytes())?;
        writer.write_all(b"\n")?;
    }
    Ok(())
}
