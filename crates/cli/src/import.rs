//! `storsim import disksim`: DiskSim's drives as storsim device files.

use crate::args::ImportDisksimArgs;
use crate::CliError;
use std::path::Path;
use storsim_config::disksim::import::{device_toml, import_parv};

pub fn disksim(args: ImportDisksimArgs) -> Result<(), CliError> {
    let drive = import_parv(&args.parv).map_err(CliError::input)?;
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
