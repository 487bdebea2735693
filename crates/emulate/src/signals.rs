//! SIGINT / SIGTERM (shut down cleanly) and SIGUSR1 (print the lateness report), taken
//! synchronously on one thread with `sigwait` rather than in a handler, so that what they
//! trigger may lock, allocate and write.

use std::io;
use std::thread::JoinHandle;

/// A signal the emulator acts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// SIGINT or SIGTERM: stop and shut down cleanly.
    Stop,
    /// SIGUSR1: print the report so far.
    Report,
}

fn watched_set() -> libc::sigset_t {
    // SAFETY: sigemptyset and sigaddset initialise and fill a local set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGUSR1] {
            libc::sigaddset(&mut set, signal);
        }
        set
    }
}

/// Blocks the watched signals in the calling thread and in every thread it starts afterwards,
/// so that only the watcher receives them. Call it before starting any thread.
pub fn block() -> io::Result<()> {
    let set = watched_set();
    // SAFETY: the set is initialised; the old mask is not wanted.
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(())
}

/// Starts the thread that waits for the watched signals and calls `on_signal` for each. A
/// second SIGINT or SIGTERM while the first is being handled ends the process at once (exit
/// status 130), for a user whose clean shutdown is stuck.
pub fn watch(on_signal: impl Fn(Signal) + Send + 'static) -> io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("storsim-signals".into())
        .spawn(move || {
            let set = watched_set();
            let mut stopping = false;
            loop {
                let mut signal: libc::c_int = 0;
                // SAFETY: the set is initialised and `signal` is a valid out pointer.
                if unsafe { libc::sigwait(&set, &mut signal) } != 0 {
                    continue;
                }
                if signal == libc::SIGUSR1 {
                    on_signal(Signal::Report);
                } else if stopping {
                    eprintln!("storsim: second stop signal, exiting without a clean shutdown");
                    std::process::exit(130);
                } else {
                    stopping = true;
                    on_signal(Signal::Stop);
                }
            }
        })
}
