//! Reading a device argument: a preset name or the path of a TOML device file.

use crate::models;
use crate::{preset, ConfigError, DeviceSpec, LoadedDevice};
use serde::Deserialize;
use std::path::Path;

/// Which model a file describes, as written in its `model` key.
#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum ModelName {
    Linear,
}

/// The top level of a device file. Every field is optional because a file may start from a
/// preset and override only some of it; what is required without a preset is checked after.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct DeviceFile {
    preset: Option<String>,
    model: Option<ModelName>,
    capacity_bytes: Option<u64>,
    queue_depth: Option<usize>,
    linear: Option<models::linear::LinearSection>,
}

/// Resolves a `--device` argument: a preset name, or a device file.
pub fn load_device(arg: &str) -> Result<LoadedDevice, ConfigError> {
    if let Some(p) = preset(arg) {
        return Ok(LoadedDevice {
            name: p.name.to_string(),
            spec: p.spec(),
        });
    }
    let path = Path::new(arg);
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::NotFound {
        name: arg.to_string(),
        reason: e.to_string(),
    })?;
    let spec = parse_device_toml(&text, arg)?;
    Ok(LoadedDevice {
        name: arg.to_string(),
        spec,
    })
}

/// Parses device-file text; `file` names it in error messages.
pub fn parse_device_toml(text: &str, file: &str) -> Result<DeviceSpec, ConfigError> {
    let parsed: DeviceFile = toml::from_str(text).map_err(|e| ConfigError::Syntax {
        file: file.to_string(),
        message: e.to_string(),
    })?;
    let invalid = |key: &str, message: String| ConfigError::Invalid {
        file: file.to_string(),
        key: key.to_string(),
        message,
    };

    let base = match &parsed.preset {
        Some(name) => Some(
            preset(name)
                .ok_or_else(|| {
                    invalid(
                        "preset",
                        format!("unknown preset '{name}' (see `storsim presets`)"),
                    )
                })?
                .spec(),
        ),
        None => None,
    };
    let model = match (parsed.model, &base) {
        (Some(m), _) => m,
        (None, Some(DeviceSpec::Linear(_))) => ModelName::Linear,
        (None, None) => {
            return Err(invalid(
                "model",
                "a device file needs `model` or `preset`".to_string(),
            ))
        }
    };

    let mut spec = match (model, base) {
        (ModelName::Linear, Some(DeviceSpec::Linear(p))) => DeviceSpec::Linear(p),
        (ModelName::Linear, None) => {
            let section = parsed.linear.as_ref().ok_or_else(|| {
                invalid(
                    "linear",
                    "model `linear` without a preset needs a [linear] section".into(),
                )
            })?;
            DeviceSpec::Linear(models::linear::from_scratch(
                section,
                parsed.capacity_bytes,
                file,
            )?)
        }
    };

    match &mut spec {
        DeviceSpec::Linear(p) => {
            if let Some(c) = parsed.capacity_bytes {
                p.capacity_bytes = c;
            }
            if let Some(q) = parsed.queue_depth {
                p.queue_depth = q;
            }
            if let Some(section) = &parsed.linear {
                models::linear::apply(section, p, file)?;
            }
            models::linear::validate(p, file)?;
        }
    }
    Ok(spec)
}
