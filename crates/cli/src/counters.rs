//! `storsim counters`: what a device's counters are, from the descriptors its models declare.

use crate::args::CountersArgs;
use crate::{destination, CliError};

pub fn run(args: CountersArgs) -> Result<(), CliError> {
    let loaded =
        storsim_sim::load_device(&args.device, &args.set).map_err(|e| CliError::sim(e, None))?;
    // The device is built as simulate builds it (its layers, its FTL, its children), since
    // what its counters are depends on all of them; it runs nothing.
    let device = loaded
        .spec
        .build()
        .map_err(|e| CliError::input(format!("building the device {}: {e}", loaded.name)))?;
    let descriptors = device.counter_descriptors();
    let model = device.model_name();
    if let Some(path) = &args.json {
        let doc = storsim_output::counters_json(
            &loaded.name,
            model,
            &descriptors,
            &destination::command_line(),
        );
        destination::write_json(path, &doc)?;
        if path.as_os_str() == "-" {
            return Ok(());
        }
    }
    crate::stdout::say!(
        "{}",
        storsim_output::counters_text(&loaded.name, model, &descriptors)
    );
    Ok(())
}
