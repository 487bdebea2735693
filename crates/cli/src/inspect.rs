//! `storsim inspect`.

use crate::args::InspectArgs;
use crate::{destination, workload_arg, CliError};
use storsim_workload::Workload;

pub fn run(args: InspectArgs) -> Result<(), CliError> {
    let workload = open(&args)?;
    let name = workload.name.clone();
    let c = storsim_workload::trace::inspect(workload).map_err(CliError::input)?;
    if let Some(path) = &args.json {
        let doc = storsim_output::inspect_json(&name, &c, &destination::command_line());
        destination::write_json(path, &doc)?;
        if path.as_os_str() == "-" {
            return Ok(());
        }
    }
    crate::stdout::say!("{}", storsim_output::inspect_text(&name, &c));
    Ok(())
}

/// The trace file, or the requests a generator spec describes, as the library opens it.
pub(crate) fn open(args: &InspectArgs) -> Result<Workload, CliError> {
    let trace = args.trace.to_string_lossy();
    // A generator spec reads no file, so the trace options are not read either.
    let options = match storsim_sim::WorkloadSource::is_synthetic(&trace) {
        true => Default::default(),
        false => workload_arg::trace_options(&args.options)?,
    };
    Ok(storsim_api::open_for_inspect(&trace, &options)?)
}
