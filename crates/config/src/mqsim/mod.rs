//! MQSim's configuration files read as storsim's: `ssdconfig.xml` as an SSD device file and
//! `workload.xml` as one flow file per scenario (`storsim import mqsim`, docs/formats/mqsim-xml.md).
//!
//! storsim never silently drops a setting: every element MQSim reads is mapped to a key (the
//! written files name the element each value came from) or named in one [`Note`] saying why it
//! has no effect; an element MQSim does not read is an error naming the file, the line and the
//! element.

mod device;
mod toml_out;
mod workload;
mod xml;

use crate::ConfigError;
use std::fmt;
use std::path::Path;

/// A setting that has no effect in storsim, or a different one than in MQSim, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Note {
    pub file: String,
    pub line: u32,
    pub element: String,
    pub text: String,
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: <{}>: {}",
            self.file, self.line, self.element, self.text
        )
    }
}

/// What an import produced: the device file, one flow file per scenario (with its own device
/// file when MQSim preconditions, since the fill depends on the scenario), and the notes.
#[derive(Clone, Debug)]
pub struct MqsimImport {
    pub device_toml: String,
    pub scenarios: Vec<ImportedScenario>,
    pub notes: Vec<Note>,
}

/// One `<IO_Scenario>`: its flows, and the device to run them on when that differs from the
/// plain import (preconditioned to the flows' initial occupancy).
#[derive(Clone, Debug)]
pub struct ImportedScenario {
    pub flows_toml: String,
    pub device_toml: Option<String>,
}

fn read_file(path: &Path) -> Result<String, ConfigError> {
    std::fs::read_to_string(path).map_err(|e| ConfigError::NotFound {
        name: path.display().to_string(),
        reason: e.to_string(),
    })
}

/// Reads MQSim's SSD configuration `ssdconfig` and, if given, its workload definition.
pub fn import(ssdconfig: &Path, workload: Option<&Path>) -> Result<MqsimImport, ConfigError> {
    let mut notes = Vec::new();
    let config_name = ssdconfig.display().to_string();
    let device = device::read(&read_file(ssdconfig)?, &config_name, &mut notes)?;
    let mut scenarios = Vec::new();
    if let Some(path) = workload {
        let name = path.display().to_string();
        // Trace paths are relative to the workload file; the flow files may be written anywhere,
        // so they name traces by absolute paths.
        let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
        let dir = std::fs::canonicalize(parent.unwrap_or(Path::new(".")))
            .unwrap_or_else(|_| parent.unwrap_or(Path::new(".")).to_path_buf());
        for s in workload::read(&read_file(path)?, &name, &dir, &device.shape, &mut notes)? {
            let shape = &device.shape;
            let own_device = shape.preconditioning || shape.random_pp_section.is_some();
            let device_toml = own_device.then(|| {
                let mut d = device.toml.clone();
                if shape.preconditioning {
                    precondition(&mut d, &s.occupancy_percent);
                }
                if let Some(section) = shape.random_pp_section {
                    // MQSim's GC unit takes RANDOM_PP's threshold from the highest initial
                    // occupancy of the scenario's flows (`max_rho`).
                    let highest = s.occupancy_percent.iter().copied().fold(0.0, f64::max);
                    d.put(
                        section,
                        "gc_min_invalid_fraction",
                        (highest / 100.0).clamp(0.0, 1.0),
                        "RANDOM_PP's threshold: the scenario's highest Initial_Occupancy_Percentage",
                    );
                }
                d.text()
            });
            scenarios.push(ImportedScenario {
                flows_toml: s.flows.text(),
                device_toml,
            });
        }
    }
    let import = MqsimImport {
        device_toml: device.toml.text(),
        scenarios,
        notes,
    };
    // What was written must be a device storsim takes: a mapping that produced something the
    // device file's own checks refuse is reported as the import's error, naming the key.
    crate::parse_device_toml(&import.device_toml, &config_name)?;
    Ok(import)
}

/// MQSim's preconditioning fills each flow's share of the logical space to its initial
/// occupancy; storsim fills the device's logical space from its start, to the flows' mean
/// occupancy (each flow has an equal share).
fn precondition(device: &mut toml_out::TomlOut, occupancy_percent: &[f64]) {
    let mean = occupancy_percent.iter().sum::<f64>() / occupancy_percent.len().max(1) as f64;
    let section = "ssd.precondition";
    device.put(
        section,
        "mode",
        "sequential-fill",
        "Enabled_Preconditioning: true",
    );
    device.put(
        section,
        "fill_fraction",
        (mean / 100.0).clamp(0.0, 1.0),
        "the mean of the scenario's flows' Initial_Occupancy_Percentage",
    );
}

#[cfg(test)]
mod tests;
