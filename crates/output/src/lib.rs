//! storsim's output layer: every document a front end writes, from the typed results of a
//! run. The front ends (the command, the Python package, the sweep runner) choose only the
//! format and the destination; this crate knows the formats: the JSON documents (one module
//! per kind, docs/json.md), their text reports, the CSVs, and a sweep's results table as CSV
//! and Parquet. HTML pages and plots are drawn by `storsim-report` from the JSON documents;
//! device files (TOML), which `storsim-config` reads back, are written beside their reader
//! there.
//!
//! Nothing here reads the process's arguments, prints, or reads a device during formatting:
//! a device's facts are read once, into [`DeviceFacts`], and every document of the run is
//! made from them.

mod calibrate;
mod control;
mod cosim;
mod counters;
mod csv;
mod emulate;
mod fio_json;
mod inspect;
pub mod json;
mod mqsim_xml;
mod power_loss;
mod simulate;
mod sweep;
mod text;
mod validate;

pub use calibrate::{
    calibration_csv, calibration_json, calibration_model_header, calibration_text,
    CalibrationResults,
};
pub use control::{control_line, ControlAnswer, FaultRules};
pub use cosim::{cosim_json, cosim_text, CosimResults};
pub use counters::{counters_json, counters_text};
pub use csv::RequestsCsv;
pub use emulate::{emulation_json, emulation_text};
pub use fio_json::fio_json;
pub use inspect::{inspect_json, inspect_text};
pub use mqsim_xml::mqsim_results_xml;
pub use power_loss::{
    crash_json, crash_summary_json, power_loss_json, replay_log_json, replay_log_points_text,
    replay_log_text, PowerLossSettings,
};
pub use simulate::{
    simulation_json, simulation_text, wrapped_warning, DeviceFacts, FlowResult, SimulationResults,
};
pub use sweep::{sweep_parquet, sweep_point_json, write_sweep_csv};
pub use validate::{
    validation_json, validation_text, write_validation_csv, TraceDetail, ValidationResults,
};

/// The version of the shape of every JSON document storsim writes (docs/json.md); defined
/// beside the reader that refuses newer documents (`storsim report`), so that there is one.
pub use storsim_report::SCHEMA;

/// storsim's version, as every document records it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The options that name where results go, each with a value; [`document_command_line`]
/// leaves them out.
const OUTPUT_OPTIONS: [&str; 6] = [
    "--json",
    "--requests-csv",
    "--report",
    "--plots",
    "--out",
    "-o",
];

/// A document's `command_line` from a command's arguments (after the program's name): the
/// program as `storsim`, then its arguments without the output options, so that the document
/// is byte-identical whichever file it is written to.
pub fn document_command_line(args: impl Iterator<Item = String>) -> Vec<String> {
    let mut out = vec!["storsim".to_string()];
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        if OUTPUT_OPTIONS.contains(&arg.as_str()) {
            args.next();
        } else if !OUTPUT_OPTIONS
            .iter()
            .any(|o| o.starts_with("--") && arg.starts_with(&format!("{o}=")))
        {
            out.push(arg);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_leaves_out_where_results_go() {
        let args = [
            "simulate",
            "--device",
            "bench2g",
            "--json",
            "out.json",
            "--report=r.html",
            "--window",
            "1ms",
            "--plots",
            "dir",
            "-o",
            "x",
            "--requests-csv",
            "c.csv",
        ];
        assert_eq!(
            document_command_line(args.iter().map(|a| a.to_string())),
            ["storsim", "simulate", "--device", "bench2g", "--window", "1ms"]
        );
    }
}
