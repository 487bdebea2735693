//! `import disksim`: a DiskSim 4.0 drive (a `.parv` file and the files it sources) as a
//! storsim device file; `import mqsim`: MQSim's SSD configuration and workload definition as a
//! device file and flow files. The files' text is written by `storsim-config`, beside the
//! readers that read them back.

use crate::ApiError;
use std::path::{Path, PathBuf};
use storsim_config::disksim::import::{device_toml, import_parv_with, Override};
pub use storsim_config::mqsim::{ImportedScenario, MqsimImport, Note};

/// `storsim import disksim`: what to import.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportDisksimOptions {
    /// The DiskSim `.parv` file.
    pub parv: PathBuf,
    /// DiskSim parameter overrides applied before importing, each
    /// `COMPONENT:PARAMETER=VALUE` as DiskSim's command line gives them.
    pub disksim_overrides: Vec<String>,
}

/// An imported drive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportedDisksim {
    /// The drive's name in the DiskSim files.
    pub name: String,
    /// The storsim device file (an `hdd` device) that states it.
    pub device_toml: String,
    /// The overrides applied, as DiskSim names them.
    pub overrides: Vec<String>,
}

/// DiskSim parameter overrides, parsed; the message names `--set`, as the command takes
/// them.
fn parse_overrides(texts: &[String]) -> Result<Vec<Override>, ApiError> {
    texts
        .iter()
        .map(|s| {
            s.parse()
                .map_err(|e: String| ApiError::Input(format!("--set {e}")))
        })
        .collect()
}

/// `storsim import disksim`: reads the `.parv` file with its overrides and states the drive
/// it instantiates as a storsim device file.
pub fn import_disksim(options: &ImportDisksimOptions) -> Result<ImportedDisksim, ApiError> {
    import(&options.parv, &options.disksim_overrides)
}

/// The import of `parv` with the overrides `texts`; errors name the file.
pub(crate) fn import(parv: &Path, texts: &[String]) -> Result<ImportedDisksim, ApiError> {
    let overrides = parse_overrides(texts)?;
    let drive = import_parv_with(parv, &overrides).map_err(|e| ApiError::Input(e.to_string()))?;
    let text =
        device_toml(&drive).map_err(|e| ApiError::Input(format!("{}: {e}", parv.display())))?;
    Ok(ImportedDisksim {
        name: drive.name,
        device_toml: text,
        overrides: overrides.iter().map(ToString::to_string).collect(),
    })
}

/// `storsim import mqsim`: MQSim's `ssdconfig.xml` and, if given, its `workload.xml`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportMqsimOptions {
    pub ssdconfig: PathBuf,
    pub workload: Option<PathBuf>,
}

/// `storsim import mqsim`: the device file, a flow file per scenario and the notes on what has
/// no effect. Errors name the file, the line and the element.
pub fn import_mqsim(options: &ImportMqsimOptions) -> Result<MqsimImport, ApiError> {
    storsim_config::mqsim::import(&options.ssdconfig, options.workload.as_deref())
        .map_err(|e| ApiError::Input(e.to_string()))
}
