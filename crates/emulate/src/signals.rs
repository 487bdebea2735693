//! SIGINT / SIGTERM (shut down cleanly) and SIGUSR1 (print the lateness report), acted on by
//! one thread of their own rather than in a signal handler, so that what they trigger may lock,
//! allocate and write. signal-hook's handler only wakes that thread.

use signal_hook::consts::{SIGINT, SIGTERM, SIGUSR1};
use signal_hook::iterator::Signals;
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

/// The emulator's signals, caught from the moment this is installed: those that arrive before
/// [`Watcher::spawn`] wait for it, so a stop during start-up is still a clean one.
pub struct Watcher {
    signals: Signals,
}

impl Watcher {
    /// Installs the handlers.
    pub fn install() -> io::Result<Watcher> {
        Ok(Watcher {
            signals: Signals::new([SIGINT, SIGTERM, SIGUSR1])?,
        })
    }

    /// Starts the thread that calls `on_signal` for each signal. A second SIGINT or SIGTERM
    /// while the first is being handled ends the process at once (exit status 130), for a user
    /// whose clean shutdown is stuck.
    ///
    /// The kernel hands a signal sent to the process to its main thread unless that thread
    /// blocks it, so the pacing thread's waits are not cut short; were a signal to land on
    /// another thread, the handler runs there for a moment and the interrupted system call is
    /// restarted.
    pub fn spawn(self, on_signal: impl Fn(Signal) + Send + 'static) -> io::Result<JoinHandle<()>> {
        let mut signals = self.signals;
        std::thread::Builder::new()
            .name("storsim-signals".into())
            .spawn(move || {
                let mut stopping = false;
                for signal in signals.forever() {
                    if signal == SIGUSR1 {
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
}
