//! `ssd.ftl` and the per-FTL sections `[ssd.NAME]`: which flash translation layer an SSD runs
//! and its parameters. Every FTL comes from the FTL crate's
//! registry ([`storsim_ftl::FTLS`]), which declares each section's keys; this module only turns
//! TOML into those keys' values (reporting a wrong key or type at its line, as serde does for the
//! other sections) and the FTL's [`ParamError`]s into errors naming the file and the full key.

use super::invalid;
use crate::ConfigError;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use std::fmt;
use storsim_flash::Geometry;
use storsim_ftl::params::{Kind, ParamError, ParamKey, Section, Value};
use storsim_ftl::{FtlConfig, FtlEntry, Keys, FTLS};

/// The FTL named `name`, ignoring case (for preset variants, which are not parsed by serde).
pub(crate) fn parse(name: &str) -> Option<&'static FtlEntry> {
    FTLS.iter()
        .copied()
        .find(|e| e.name.eq_ignore_ascii_case(name))
}

/// Every name, for messages, comma-separated in the registry's order.
pub(crate) fn list() -> String {
    FTLS.iter().map(|e| e.name).collect::<Vec<_>>().join(", ")
}

/// The per-FTL sections a file states, each with its FTL.
pub(crate) type Sections = Vec<(&'static FtlEntry, Section)>;

/// Overrides the FTL's parameters with the file's per-FTL sections, which must belong to that
/// FTL: a section for another FTL would otherwise be ignored silently (a copied block, a
/// forgotten `ssd.ftl`). Sections are taken in the registry's order, so that the error for a
/// file with several wrong ones does not depend on where it writes them.
pub(crate) fn apply(
    sections: &Sections,
    config: &mut FtlConfig,
    file: &str,
) -> Result<(), ConfigError> {
    for entry in FTLS {
        let Some((_, section)) = sections.iter().find(|(e, _)| e.name == entry.name) else {
            continue;
        };
        let name = entry.name;
        if name != config.name() {
            // A section the chosen FTL nests under its own name is the one likely mix-up, and
            // gets its own hint (an FTL whose data side takes another FTL's keys).
            let nested = config
                .entry()
                .keys
                .find(name)
                .is_some_and(|k| matches!(k.kind, Kind::Section(_)));
            let hint = if nested {
                format!(
                    "; {}'s {name} keys go in [ssd.{}.{name}]",
                    config.name().to_uppercase(),
                    config.name()
                )
            } else {
                String::new()
            };
            return Err(invalid(
                file,
                &format!("ssd.{name}"),
                format!(
                    "a [ssd.{name}] section does not apply to the `{}` FTL (set \
                     `ftl = \"{name}\"` in [ssd] to use that FTL{hint})",
                    config.name()
                ),
            ));
        }
        config
            .apply(section)
            .map_err(|e| param_error(e, config, file))?;
    }
    Ok(())
}

/// Checks the FTL's parameters the way the FTL would when it is built, but naming the key.
/// What depends on the whole geometry (whether the spare space suffices) is left to the FTL,
/// whose message `DeviceSpec::build` passes on.
pub(crate) fn validate(
    config: &FtlConfig,
    geometry: &Geometry,
    file: &str,
) -> Result<(), ConfigError> {
    config
        .validate(geometry)
        .map_err(|e| param_error(e, config, file))
}

/// An FTL's complaint as a file's error: its keys live in `[ssd.NAME]`.
fn param_error(e: ParamError, config: &FtlConfig, file: &str) -> ConfigError {
    let key = match e.key {
        ParamKey::Own(key) => format!("ssd.{}.{key}", config.name()),
        ParamKey::Geometry(field) => format!("ssd.geometry.{field}"),
    };
    invalid(file, &key, e.message)
}

/// The `[ssd.NAME]` section stating every parameter of `config`, as device-file text: a file
/// that names the FTL and holds this section reads back exactly `config` (with the device's
/// `background_gc`, which the page-mapped FTLs follow). Fails for a number TOML cannot hold.
pub fn ftl_section_toml(config: &FtlConfig) -> Result<String, String> {
    let mut ssd = toml::Table::new();
    ssd.insert(
        config.name().to_string(),
        toml::Value::Table(table(&config.section())?),
    );
    let mut top = toml::Table::new();
    top.insert("ssd".into(), toml::Value::Table(ssd));
    Ok(top.to_string())
}

fn table(section: &Section) -> Result<toml::Table, String> {
    let mut t = toml::Table::new();
    for (key, value) in section.iter() {
        let v = match value {
            Value::F64(x) => toml::Value::Float(*x),
            Value::U32(n) => toml::Value::Integer((*n).into()),
            Value::U64(n) => toml::Value::Integer(i64::try_from(*n).map_err(|_| {
                format!("key `{key}`: {n} is larger than the largest TOML integer")
            })?),
            Value::Bool(b) => toml::Value::Boolean(*b),
            Value::Name(name) => toml::Value::String((*name).into()),
            Value::Section(s) => toml::Value::Table(table(s)?),
        };
        t.insert(key.into(), v);
    }
    Ok(t)
}

/// Reads a section by its declared keys: an unknown key or a value of the wrong type is a
/// deserialisation error, which the TOML reader places at its line.
#[derive(Clone, Copy)]
pub(crate) struct SectionSeed(pub(crate) Keys);

impl<'de> DeserializeSeed<'de> for SectionSeed {
    type Value = Section;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Section, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for SectionSeed {
    type Value = Section;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a table of parameters")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Section, A::Error> {
        let mut section = Section::new();
        while let Some(key) = map.next_key_seed(Choice {
            what: "field",
            names: self.0.all().map(|k| (k.name, k)).collect(),
        })? {
            let value = match key.kind {
                Kind::F64 => Value::F64(map.next_value()?),
                Kind::U32 => Value::U32(map.next_value()?),
                Kind::U64 => Value::U64(map.next_value()?),
                Kind::Bool => Value::Bool(map.next_value()?),
                Kind::Name(names) => Value::Name(map.next_value_seed(Choice {
                    what: "variant",
                    names: names.iter().map(|&n| (n, n)).collect(),
                })?),
                Kind::Section(keys) => Value::Section(map.next_value_seed(SectionSeed(keys))?),
            };
            section.insert(key.name, value);
        }
        Ok(section)
    }
}

/// One of a list of names (a key of a section, a value of a [`Kind::Name`], an FTL), read as
/// what it stands for. The messages are serde's for unknown fields and variants.
pub(crate) struct Choice<T> {
    /// "field" or "variant".
    pub(crate) what: &'static str,
    pub(crate) names: Vec<(&'static str, T)>,
}

impl<'de, T> DeserializeSeed<'de> for Choice<T> {
    type Value = T;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de, T> Visitor<'de> for Choice<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a {} name", self.what)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        let names: Vec<&str> = self.names.iter().map(|(n, _)| *n).collect();
        match self.names.into_iter().find(|(n, _)| *n == v) {
            Some((_, t)) => Ok(t),
            None => Err(E::custom(format!(
                "unknown {} `{v}`, {}",
                self.what,
                expected(self.what, &names)
            ))),
        }
    }
}

/// serde's wording for what was expected instead of an unknown name.
fn expected(what: &str, names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.as_slice() {
        [] => format!("there are no {what}s"),
        [one] => format!("expected {one}"),
        [a, b] => format!("expected {a} or {b}"),
        all => format!("expected one of {}", all.join(", ")),
    }
}

/// `ssd.ftl`: a name from the registry.
pub(crate) fn ftl_name_seed() -> Choice<&'static FtlEntry> {
    Choice {
        what: "variant",
        names: FTLS.iter().map(|&e| (e.name, e)).collect(),
    }
}
