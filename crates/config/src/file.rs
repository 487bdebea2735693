//! Reading a device argument: a preset name or the path of a TOML device file.

use crate::models::{self, DeviceFile, FileContext, ModelEntry, MODELS};
use crate::{merge, preset, preset_spec, ConfigError, DeviceSpec, LoadedDevice};
use std::path::Path;

/// Resolves a `--device` argument: a preset name (optionally with a variant, as in
/// `uhs1-sd:ch4-x2`), or a device file.
pub fn load_device(arg: &str) -> Result<LoadedDevice, ConfigError> {
    if let Some(spec) = preset_spec(arg) {
        let spec = spec.map_err(|message| ConfigError::Invalid {
            file: arg.to_string(),
            key: "preset".to_string(),
            message,
        })?;
        return Ok(LoadedDevice {
            name: arg.to_string(),
            spec,
        });
    }
    let text = device_text(arg)?;
    let spec = parse_device_toml(&text, arg)?;
    Ok(LoadedDevice {
        name: arg.to_string(),
        spec,
    })
}

/// A device file's text. MQSim's SSD configuration (an XML file, `ssdconfig.xml`) is taken as
/// `storsim import mqsim` reads it, so `--device` takes MQSim's file unchanged; the import's
/// notes on what has no equivalent are `import mqsim`'s to print.
fn device_text(arg: &str) -> Result<String, ConfigError> {
    let text = std::fs::read_to_string(arg).map_err(|e| ConfigError::NotFound {
        name: arg.to_string(),
        reason: e.to_string(),
    })?;
    if text.trim_start().starts_with('<') {
        return Ok(crate::mqsim::import(Path::new(arg), None)?.device_toml);
    }
    Ok(text)
}

/// Resolves a `--device` argument with `KEY=VALUE` overrides on top, as the emulator's control
/// socket sends them (`set ssd.timing.read_us=50`). Keys are dotted paths into the device file;
/// values are TOML values (`50`, `"greedy"`, `true`). The result is what a device file holding
/// the base plus those keys would give, with the same checks and messages (which name the
/// argument and say "with overrides").
pub fn load_device_with(arg: &str, overrides: &[String]) -> Result<LoadedDevice, ConfigError> {
    if overrides.is_empty() {
        return load_device(arg);
    }
    let name = format!("{arg} with overrides");
    let base_text = if preset_spec(arg).is_some() {
        format!("preset = {}", toml::Value::String(arg.to_string()))
    } else {
        device_text(arg)?
    };
    let mut table: toml::Table = toml::from_str(&base_text).map_err(|e| ConfigError::Syntax {
        file: arg.to_string(),
        message: e.to_string(),
    })?;
    let base = table.clone();
    for entry in overrides {
        apply_override(&mut table, entry, &name)?;
    }
    match parse_device_toml(&table.to_string(), &name) {
        Ok(spec) => Ok(LoadedDevice { name, spec }),
        Err(ConfigError::Syntax { file, message }) => {
            Err(blame_override(base, overrides, &name)
                .unwrap_or(ConfigError::Syntax { file, message }))
        }
        Err(e) => Err(e),
    }
}

/// The override that makes `base` fail to parse, as an error naming its key: the TOML parser's
/// message names a line of the merged document, which is not the user's text, so the overrides
/// are laid on one at a time until the document breaks, and the parser's own words (its last
/// line: `unknown field ...`, `invalid type ...`) go with the key. `None` when the base alone
/// fails, or no single step does (the caller keeps the parser's message).
fn blame_override(mut base: toml::Table, overrides: &[String], name: &str) -> Option<ConfigError> {
    if matches!(
        parse_device_toml(&base.to_string(), name),
        Err(ConfigError::Syntax { .. })
    ) {
        return None;
    }
    for entry in overrides {
        apply_override(&mut base, entry, name).ok()?;
        if let Err(ConfigError::Syntax { message, .. }) = parse_device_toml(&base.to_string(), name)
        {
            let reason = message
                .lines()
                .rev()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .unwrap_or("not a valid value here")
                .to_string();
            return Some(ConfigError::Invalid {
                file: name.to_string(),
                key: entry.split('=').next().unwrap_or(entry).trim().to_string(),
                message: format!("{reason} (set as `{}`)", entry.trim()),
            });
        }
    }
    None
}

/// Sets one `dotted.key=value` in a device file's table, creating the tables on its path.
fn apply_override(table: &mut toml::Table, entry: &str, file: &str) -> Result<(), ConfigError> {
    let bad = |message: String| ConfigError::Invalid {
        file: file.to_string(),
        key: entry.split('=').next().unwrap_or(entry).trim().to_string(),
        message,
    };
    let (key, value) = entry.split_once('=').ok_or_else(|| {
        bad("an override is KEY=VALUE, as in ssd.page.gc_policy=\"greedy\"".into())
    })?;
    let path: Vec<&str> = key.trim().split('.').map(str::trim).collect();
    if path.iter().any(|part| part.is_empty()) {
        return Err(bad("the key has an empty part".into()));
    }
    // A value is parsed as TOML; a bare word that is not TOML (greedy) is taken as a string.
    let value = match toml::from_str::<toml::Table>(&format!("v = {}", value.trim())) {
        Ok(mut parsed) => parsed.remove("v").expect("the document holds v"),
        Err(_) => toml::Value::String(value.trim().to_string()),
    };
    merge::set(table, &path, value)
        .map_err(|i| bad(format!("`{}` is a value, not a section", path[i])))
}

/// Parses device-file text; `file` names it in error messages, and an array's child files are
/// found relative to its directory.
pub fn parse_device_toml(text: &str, file: &str) -> Result<DeviceSpec, ConfigError> {
    parse_nested(text, file, &models::array::Nesting::top(file))
}

/// Parses device-file text that may name other files (an array's children), which `nesting`
/// places: their directory and the files that led here.
pub(crate) fn parse_nested(
    text: &str,
    file: &str,
    nesting: &models::array::Nesting,
) -> Result<DeviceSpec, ConfigError> {
    let mut spec = if let Some((parsed, merged)) = merged_over_preset_file(text, file)? {
        resolve(parsed, file, nesting).map_err(|e| merged.explain(e, file))?
    } else {
        let parsed: DeviceFile = toml::from_str(text).map_err(|e| syntax(file, e.to_string()))?;
        resolve(parsed, file, nesting)?
    };
    spec.set_faults(crate::faults::parse_faults(text, file)?);
    Ok(spec)
}

fn syntax(file: &str, message: String) -> ConfigError {
    ConfigError::Syntax {
        file: file.to_string(),
        message,
    }
}

/// What a file merged into its preset's device file needs to explain errors.
struct Merged {
    preset: String,
    /// The keys the file states, as dotted paths both where it wrote them and where they went.
    written: Vec<String>,
}

impl Merged {
    /// Notes on an error about a key the file does not state that the key is the preset's:
    /// a file can replace a preset's keys but not remove them, which matters when the file
    /// switches to a mode in which one of them does not apply.
    fn explain(&self, e: ConfigError, file: &str) -> ConfigError {
        match e {
            ConfigError::Invalid {
                file: f,
                key,
                message,
            } if f == file && !self.states(&key) => ConfigError::Invalid {
                message: format!(
                    "{message} (the key comes from preset '{}'; a file can replace a preset's \
                     keys but not remove them, so write this section in full instead)",
                    self.preset
                ),
                file: f,
                key,
            },
            other => other,
        }
    }

    /// Whether the file states `key`, a table holding it, or a key inside it.
    fn states(&self, key: &str) -> bool {
        let within = |inner: &str, outer: &str| {
            inner
                .strip_prefix(outer)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
        };
        self.written
            .iter()
            .any(|w| within(key, w) || within(w, key))
    }
}

/// A file that starts from a disk or hybrid preset, merged into the preset's own device file;
/// `None` for any other file. Those models' sections are read whole, as a file without a preset
/// states them, so the preset's TOML is the base, each key the file states replaces the base's
/// value (tables merged key by key, `merge`), and the result is read and checked like a file
/// written in full. Unknown keys and wrong types are reported with the line the file writes them
/// on. A top-level `queue_depth` stands for the section's, which the presets state.
fn merged_over_preset_file(
    text: &str,
    file: &str,
) -> Result<Option<(DeviceFile, Merged)>, ConfigError> {
    let mut over: toml::Table = toml::from_str(text).map_err(|e| syntax(file, e.to_string()))?;
    // Anything but a known preset's name is left to the general path, which reports it.
    let Some(name) = over.get("preset").and_then(toml::Value::as_str) else {
        return Ok(None);
    };
    let spec = match preset_spec(name) {
        None => return Ok(None),
        Some(spec) => spec.map_err(|message| models::invalid(file, "preset", message))?,
    };
    let model =
        models::model(spec.model_name()).expect("every description's model is in the table");
    if !model.merged_over_preset {
        return Ok(None);
    }
    let name = name.to_string();
    let base_text = preset(&name)
        .and_then(|info| info.file_text())
        .ok_or_else(|| {
            models::invalid(
                file,
                "preset",
                format!(
                    "preset '{name}' is not kept as a device file, so its keys cannot be \
                     overridden one by one"
                ),
            )
        })?;
    let base: toml::Table = toml::from_str(base_text).map_err(|e| syntax(&name, e.to_string()))?;
    over.remove("preset");

    let section = model.name;
    let mut list = merge::assignments(&base, &over, model.variant_tables);
    if let Some(top) = list.iter().position(|a| a.path == ["queue_depth"]) {
        if list.iter().any(|a| a.path == [section, "queue_depth"]) {
            return Err(models::queue_depth_stated_twice(file, section));
        }
        list[top].path = vec![section.to_string(), "queue_depth".to_string()];
    }
    let parsed: DeviceFile = merge::parse_merged(&base, &list, text, |merged| {
        toml::Value::Table(merged).try_into()
    })
    .map_err(|message| syntax(file, format!("{message} (over preset '{name}')")))?;
    if let Some(stated) = parsed.model.filter(|m| m.0.name != model.name) {
        return Err(models::invalid(
            file,
            "model",
            format!(
                "model `{}` does not match preset '{name}', which is a `{}` device",
                stated.0.name, model.name
            ),
        ));
    }
    let written = list
        .iter()
        .flat_map(|a| [a.path.join("."), a.written.join(".")])
        .collect();
    Ok(Some((
        parsed,
        Merged {
            preset: name,
            written,
        },
    )))
}

/// The description a parsed file gives: its preset's parameters with the file's keys applied,
/// or, without a preset, the parameters its sections state.
fn resolve(
    parsed: DeviceFile,
    file: &str,
    nesting: &models::array::Nesting,
) -> Result<DeviceSpec, ConfigError> {
    let invalid = |key: &str, message: String| models::invalid(file, key, message);

    let base = match &parsed.preset {
        Some(name) => Some(
            preset_spec(name)
                .ok_or_else(|| {
                    invalid(
                        "preset",
                        format!("unknown preset '{name}' (see `storsim presets`)"),
                    )
                })?
                .map_err(|message| invalid("preset", message))?,
        ),
        None => None,
    };
    let model: &ModelEntry = match (parsed.model, &base) {
        (Some(m), _) => m.0,
        (None, Some(spec)) => {
            models::model(spec.model_name()).expect("every description's model is in the table")
        }
        (None, None) => {
            return Err(invalid(
                "model",
                "a device file needs `model` or `preset`".to_string(),
            ))
        }
    };
    // A section for another model is a mistake (a copied block, a wrong preset), and applying
    // nothing from it silently would hide that.
    if let Some(other) = MODELS
        .iter()
        .find(|m| m.name != model.name && (m.has_section)(&parsed))
    {
        return Err(invalid(
            other.name,
            format!(
                "a [{}] section does not apply to a `{}` device",
                other.name, model.name
            ),
        ));
    }
    if let Some(spec) = base.as_ref().filter(|spec| spec.model_name() != model.name) {
        return Err(invalid(
            "model",
            format!(
                "model `{}` does not match preset '{}', which is a `{}` device",
                model.name,
                parsed.preset.as_deref().unwrap_or_default(),
                spec.model_name()
            ),
        ));
    }
    let cx = FileContext {
        file,
        capacity_bytes: parsed.capacity_bytes,
        queue_depth: parsed.queue_depth,
        nesting,
    };
    let base_interface = base.as_ref().and_then(|b| b.host_interface().cloned());
    let mut spec = (model.resolve)(&parsed, base, &cx)?;
    spec.set_host_interface(crate::host_interface::resolve(
        parsed.host_interface.as_ref(),
        base_interface,
        file,
    )?);
    Ok(spec)
}
