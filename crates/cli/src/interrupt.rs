//! Ctrl-C for the commands that stop cleanly and report what they did (`calibrate`,
//! `simulate`): the first SIGINT or SIGTERM asks the work to stop, a second one ends the
//! process at once.

use crate::CliError;
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::flag;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Exit status after Ctrl-C: the outputs hold what was done up to it.
pub const EXIT_INTERRUPTED: u8 = 130;

/// Makes SIGINT and SIGTERM set the returned flag, at which the work stops at its next check.
/// The first signal only sets it; a second one, arriving while the flag is already set, gets
/// the signal's default action (the process ends as if no handler were installed), for a user
/// whose clean stop is stuck.
pub fn stop_flag() -> Result<Arc<AtomicBool>, CliError> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [SIGINT, SIGTERM] {
        // Registered before the flag's own action, so that it sees the flag as the earlier
        // signal left it: set only from the second signal on.
        flag::register_conditional_default(signal, Arc::clone(&stop))
            .and_then(|_| flag::register(signal, Arc::clone(&stop)))
            .map_err(|e| CliError::failure(format!("installing the Ctrl-C handler: {e}")))?;
    }
    Ok(stop)
}
