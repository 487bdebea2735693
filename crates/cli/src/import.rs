//! `storsim import disksim` and `storsim import mqsim`: the arguments as `storsim-api`'s
//! import options, and the files it returns written where `--out` says.

use crate::args::{ImportDisksimArgs, ImportMqsimArgs};
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

/// `storsim import mqsim SSDCONFIG [WORKLOAD] --out DIR`: `DIR/device.toml`, and per scenario
/// `DIR/scenario-N.toml` (its flows) with `DIR/scenario-N.device.toml` when MQSim would
/// precondition the device for it. Each note goes to standard error on a line of its own.
pub fn mqsim(args: ImportMqsimArgs) -> Result<(), CliError> {
    let imported = storsim_api::import_mqsim(&storsim_api::ImportMqsimOptions {
        ssdconfig: args.ssdconfig,
        workload: args.workload,
    })?;
    for note in &imported.notes {
        eprintln!("storsim: note: {note}");
    }
    let dir = &args.out;
    std::fs::create_dir_all(dir)
        .map_err(|e| CliError::failure(format!("creating {}: {e}", dir.display())))?;
    let mut files = vec![(dir.join("device.toml"), imported.device_toml.clone())];
    for (k, scenario) in imported.scenarios.iter().enumerate() {
        let n = k + 1;
        files.push((
            dir.join(format!("scenario-{n}.toml")),
            scenario.flows_toml.clone(),
        ));
        if let Some(device) = &scenario.device_toml {
            files.push((
                dir.join(format!("scenario-{n}.device.toml")),
                device.clone(),
            ));
        }
    }
    for (path, text) in &files {
        std::fs::write(path, text)
            .map_err(|e| CliError::failure(format!("writing {}: {e}", path.display())))?;
        eprintln!("storsim: wrote {}", path.display());
    }
    Ok(())
}
