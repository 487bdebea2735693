//! `storsim report` and `simulate --report`/`--plots`: reading run documents, and writing the
//! page (to a file through `storsim-api`, or to standard output for `-`) and the plot files
//! that `storsim-report` renders.

use crate::args::ReportArgs;
use crate::CliError;
use serde_json::Value;
use std::path::Path;
use storsim_report::{Report, Run};

/// `storsim report RUN.json ... -o OUT.html [--plots DIR]`.
pub fn run(args: ReportArgs) -> Result<(), CliError> {
    let runs = args
        .runs
        .iter()
        .map(|path| Run::read(path).map_err(CliError::input))
        .collect::<Result<Vec<_>, _>>()?;
    write(
        &storsim_report::render(&runs),
        Some(&args.out),
        args.plots.as_deref(),
    )
}

/// `simulate --report`/`--plots`: the page of the document the run has just produced, named
/// `name` in the page's header (the JSON file it was also written to; empty for none).
pub fn write_simulation(
    name: &Path,
    doc: Value,
    out: Option<&Path>,
    plots: Option<&Path>,
) -> Result<(), CliError> {
    if out.is_none() && plots.is_none() {
        return Ok(());
    }
    // The document comes from this storsim, so refusing it would be a bug, not bad input.
    let run = Run::from_value(&name.display().to_string(), doc).map_err(CliError::failure)?;
    write(&storsim_report::render(&[run]), out, plots)
}

fn write(report: &Report, out: Option<&Path>, plots: Option<&Path>) -> Result<(), CliError> {
    let out = match out {
        Some(path) if path == Path::new("-") => {
            print!("{}", report.html);
            None
        }
        other => other,
    };
    Ok(storsim_api::write_report(report, out, plots)?)
}
