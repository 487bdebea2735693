//! `storsim validate`: the arguments as `storsim-api`'s validate options (DiskSim's validation
//! traces, `validate disksim`, or any trace that carries measured times, `validate trace`),
//! and the validation's documents written where the arguments say.

use crate::args::{ValidateDisksimArgs, ValidateTraceArgs};
use crate::{destination, CliError};
use std::path::Path;
use storsim_api::{ValidateDisksimOptions, ValidateTraceOptions, Validation};

/// `storsim validate disksim`.
pub fn disksim(args: ValidateDisksimArgs) -> Result<(), CliError> {
    let validation = storsim_api::validate_disksim(&ValidateDisksimOptions {
        device: args.device,
        disksim_overrides: args.set,
        trace: args.trace,
    })?;
    write_results(
        &validation,
        args.requests_csv.as_deref(),
        args.json.as_deref(),
        None,
    )
}

/// `storsim validate trace`: replays a trace with measured response times and compares.
pub fn trace(args: ValidateTraceArgs) -> Result<(), CliError> {
    let validation = storsim_api::validate_trace(&ValidateTraceOptions {
        device: args.device,
        overrides: args.set,
        trace: args.trace,
        trace_options: crate::workload_arg::trace_options(&args.trace_options)?,
        replay: args.replay.map(crate::args::ReplayArg::choice),
        iodepth: args.iodepth,
        wrap: args.wrap,
    })?;
    write_results(
        &validation,
        args.requests_csv.as_deref(),
        args.json.as_deref(),
        args.report.as_deref(),
    )
}

/// Writes a validation's outputs where its options say: the per-request CSV, the JSON, the
/// HTML page, and the text unless the JSON goes to standard output.
fn write_results(
    validation: &Validation,
    csv: Option<&Path>,
    json: Option<&Path>,
    page: Option<&Path>,
) -> Result<(), CliError> {
    let command_line = destination::command_line();
    let results = validation.results(&command_line);
    if let Some(path) = csv {
        let failed = |e| CliError::failure(format!("writing {}: {e}", path.display()));
        storsim_output::write_validation_csv(&mut destination::create(path)?, &results)
            .map_err(failed)?;
    }
    if json.is_some() || page.is_some() {
        let doc = storsim_output::validation_json(&results);
        if let Some(path) = json {
            destination::write_json(path, &doc)?;
        }
        if let Some(out) = page {
            let name = json.unwrap_or(Path::new(""));
            crate::report_html::write_simulation(name, doc, Some(out), None)?;
        }
    }
    if json != Some(Path::new("-")) {
        crate::stdout::say!("{}", storsim_output::validation_text(&results));
    }
    Ok(())
}
