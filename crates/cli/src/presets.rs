//! `storsim presets`: the built-in devices, one line each, as `storsim-api` lists them.

use crate::args::PresetsArgs;
use crate::CliError;

/// `storsim presets`.
pub fn run(_: PresetsArgs) -> Result<(), CliError> {
    for p in storsim_api::presets() {
        crate::stdout::sayln!("{:<18} {:<8} {}", p.name, p.model, p.summary);
    }
    Ok(())
}
