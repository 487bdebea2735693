//! Turning the trace options' arguments into the library's [`TraceOptions`].

use crate::args::{Switch, TraceArgs};
use crate::CliError;
use storsim_workload::trace::TraceOptions;

/// The trace options `args` give, each value read as the library reads it.
pub fn trace_options(args: &TraceArgs) -> Result<TraceOptions, CliError> {
    let format = match &args.format {
        None => None,
        Some(name) => Some(storsim_sim::parse_trace_format(name).map_err(CliError::input)?),
    };
    Ok(TraceOptions {
        format,
        skip_bad: args.skip_bad,
        devices: storsim_sim::parse_trace_devices(&args.trace_devices).map_err(CliError::input)?,
        blkparse_event: storsim_sim::parse_blkparse_event(&args.blkparse_event)
            .map_err(CliError::input)?,
        parse_thread: args.parse_thread == Switch::On,
    })
}
