//! `storsim validate disksim`: a device model against DiskSim's measured validation traces.

use crate::args::ValidateDisksimArgs;
use crate::report::{self, ValidationResults};
use crate::CliError;
use storsim_config::disksim::import::{device_toml, import_parv_with};
use storsim_config::LoadedDevice;
use storsim_core::Completion;
use storsim_engine::{EngineOptions, Replay};
use storsim_sim::{Session, WorkloadSource};
use storsim_workload::trace::{validate_measured_access_us, TraceFormat, TraceOptions};

/// The device to validate: a preset or device file, or a DiskSim `.parv` file imported with
/// the `--set` overrides (which only a `.parv` file takes: they name DiskSim's parameters).
fn load_device(args: &ValidateDisksimArgs) -> Result<LoadedDevice, CliError> {
    let parv = std::path::Path::new(&args.device);
    if parv.extension().is_none_or(|e| e != "parv") {
        if !args.set.is_empty() {
            return Err(CliError::input(format!(
                "--set names DiskSim parameters, which only a .parv device takes; {} is a \
                 storsim device (import it with `storsim import disksim --set ...` instead)",
                args.device
            )));
        }
        return storsim_config::load_device(&args.device).map_err(CliError::input);
    }
    let overrides = crate::import::overrides(&args.set)?;
    let drive = import_parv_with(parv, &overrides).map_err(CliError::input)?;
    let text = device_toml(&drive).map_err(|e| CliError::input(format!("{}: {e}", args.device)))?;
    let mut name = args.device.clone();
    if !overrides.is_empty() {
        let listed: Vec<String> = overrides.iter().map(ToString::to_string).collect();
        name = format!("{name} [{}]", listed.join(", "));
    }
    let spec = storsim_config::parse_device_toml(&text, &name).map_err(CliError::input)?;
    Ok(LoadedDevice { name, spec })
}

pub fn disksim(args: ValidateDisksimArgs) -> Result<(), CliError> {
    let source = WorkloadSource::Trace {
        path: args.trace.clone(),
        options: TraceOptions {
            format: Some(TraceFormat::named("validate")),
            ..TraceOptions::default()
        },
    };
    // The trace names no seed and the models draw no random numbers of their own.
    let Session {
        device_name,
        mut device,
        mut workload,
        ..
    } = Session::new(load_device(&args)?, &source, 0).map_err(|e| CliError::sim(e, None))?;
    let measured_ms: Vec<f64> = validate_measured_access_us(&args.trace)
        .map_err(CliError::input)?
        .map(|us| us.map(|us| us / 1000.0))
        .collect::<Result<_, _>>()
        .map_err(CliError::input)?;

    // The trace's own pacing: closed loop, one request outstanding, think times from the file.
    let engine_options = EngineOptions {
        replay: Replay::natural(workload.pacing),
        ..EngineOptions::default()
    };
    let mut completions: Vec<(u64, f64)> = Vec::with_capacity(measured_ms.len());
    let mut sink = |c: &Completion| {
        completions.push((c.request.id, c.latency().as_ns() as f64 / 1e6));
    };
    let info = storsim_engine::run(
        &mut device,
        &mut workload,
        &engine_options,
        &mut sink,
        &mut |_, _| {},
    )
    .map_err(|e| CliError::engine(e, None))?;
    if let Some(failure) = &info.device_failed {
        return Err(CliError::input(format!(
            "{}: the device failed during validation: {failure}",
            device_name
        )));
    }
    // One request outstanding means completions come in trace order already; sorting by id
    // keeps that true whatever the engine's numbering.
    completions.sort_unstable_by_key(|&(id, _)| id);
    let simulated_ms: Vec<f64> = completions.into_iter().map(|(_, ms)| ms).collect();
    if simulated_ms.len() != measured_ms.len() {
        return Err(CliError::input(format!(
            "{}: {} requests were simulated but the trace measured {} (empty requests are \
             dropped: {})",
            args.trace.display(),
            simulated_ms.len(),
            measured_ms.len(),
            info.empty_requests
        )));
    }
    let Some(demerit) = storsim_stats::disksim_demerit(&simulated_ms, &measured_ms) else {
        return Err(CliError::input(format!(
            "{}: the trace holds no requests",
            args.trace.display()
        )));
    };
    let results = ValidationResults {
        device_name: &device_name,
        device: device.as_ref(),
        trace: &args.trace,
        simulated_ms: &simulated_ms,
        measured_ms: &measured_ms,
        demerit,
    };
    if let Some(path) = &args.requests_csv {
        report::write_validation_csv(path, &results)?;
    }
    if let Some(path) = &args.json {
        report::write_json(path, &report::validation_json(&results))?;
    }
    if args.json.as_deref() != Some(std::path::Path::new("-")) {
        crate::stdout::say!("{}", report::validation_text(&results));
    }
    Ok(())
}
