//! `storsim import disksim`: the arguments as `storsim-api`'s import options, and the device
//! file it returns written where `--out` says.

use crate::args::ImportDisksimArgs;
use crate::CliError;
use std::path::Path;

/// `storsim import disksim PARV --out OUT`.
pub fn disksim(args: ImportDisksimArgs) -> Result<(), CliError> {
    let imported = storsim_api::import_disksim(&storsim_api::ImportDisksimOptions {
        parv: args.parv,
        disksim_overrides: args.set,
    })?;
    if args.out == Path::new("-") {
        crate::stdout::say!("{}", imported.device_toml);
        return Ok(());
    }
    std::fs::write(&args.out, &imported.device_toml)
        .map_err(|e| CliError::failure(format!("writing {}: {e}", args.out.display())))?;
    eprintln!("storsim: wrote {} ({})", args.out.display(), imported.name);
    Ok(())
}
