//! `storsim import disksim`: DiskSim's drives as storsim device files.

use crate::args::ImportDisksimArgs;
use crate::CliError;
use std::path::Path;
use storsim_config::disksim::import::{device_toml, import_parv_with, Override};

/// The `--set` overrides, parsed.
pub fn overrides(set: &[String]) -> Result<Vec<Override>, CliError> {
    set.iter()
        .map(|s| {
            s.parse()
                .map_err(|e: String| CliError::input(format!("--set {e}")))
        })
        .collect()
}

pub fn disksim(args: ImportDisksimArgs) -> Result<(), CliError> {
    let drive = import_parv_with(&args.parv, &overrides(&args.set)?).map_err(CliError::input)?;
    let text = device_toml(&drive)
        .map_err(|e| CliError::input(format!("{}: {e}", args.parv.display())))?;
    if args.out == Path::new("-") {
        crate::stdout::say!("{text}");
        return Ok(());
    }
    std::fs::write(&args.out, text)
        .map_err(|e| CliError::failure(format!("writing {}: {e}", args.out.display())))?;
    eprintln!("storsim: wrote {} ({})", args.out.display(), drive.name);
    Ok(())
}
