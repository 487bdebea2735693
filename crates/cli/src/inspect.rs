//! `storsim inspect`.

use crate::args::InspectArgs;
use crate::{report, workload_arg, CliError};

pub fn run(args: InspectArgs) -> Result<(), CliError> {
    let options = workload_arg::trace_options(&args.options)?;
    let workload = storsim_workload::trace::open(&args.trace, &options).map_err(CliError::input)?;
    let name = workload.name.clone();
    let c = storsim_workload::trace::inspect(workload).map_err(CliError::input)?;
    if let Some(path) = &args.json {
        report::write_json(path, &report::inspect_json(&name, &c))?;
        if path.as_os_str() == "-" {
            return Ok(());
        }
    }
    crate::stdout::say!("{}", report::inspect_text(&name, &c));
    Ok(())
}
