//! One module per model: its TOML section, how the section overrides the parameters, and its
//! entry in the model table ([`device_models!`] below). The SSD keeps its per-FTL sections in a
//! module of their own (`ftl`).

pub(crate) mod array;
pub(crate) mod ftl;
pub(crate) mod hdd;
pub(crate) mod hybrid;
pub(crate) mod linear;
pub(crate) mod ssd;
pub(crate) mod step;
pub(crate) mod table;

use crate::{parse_device_toml, ConfigError, DeviceSpec, ModelParams};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use storsim_blackbox::SequentialDetect;
use storsim_core::{SimDuration, QUEUE_DEPTH_MAX};

/// A device model as device files know it: one implementation per model, beside its section.
pub(crate) trait Model {
    /// The `model` key's value, which is also the name of the model's section and of its page,
    /// `docs/models/NAME.md`.
    const NAME: &'static str;
    /// One line saying what the model is, for help text.
    const DESCRIPTION: &'static str;
    /// Whether a file that starts from a preset of this model is laid over the preset's own
    /// device file key by key and read whole (models whose section is read complete), rather
    /// than applied over the preset's parameters.
    const MERGED_OVER_PRESET: bool = false;
    /// For a file merged over a preset: the section's tables that hold one of several variants,
    /// with the key naming the variant; a file naming another variant replaces such a table
    /// whole instead of merging into it (see `merge::assignments`).
    const VARIANT_TABLES: &'static [(&'static str, &'static str)] = &[];
    /// The parameters the section resolves to.
    type Params: ModelParams + Clone + PartialEq;
    /// The section as read from the file.
    type Section: DeserializeOwned;

    /// The parameters a file gives: `base` is its preset's (already checked to be of this
    /// model), `section` the model's section if the file has one. Errors name the file and key.
    fn resolve(
        section: Option<&Self::Section>,
        base: Option<Self::Params>,
        cx: &FileContext,
    ) -> Result<Self::Params, ConfigError>;

    /// Whether the model is made of child devices that its section names (presets or other
    /// device files). A hybrid's children may not be such devices, so that resolving never
    /// loops.
    const HAS_CHILDREN: bool = false;
    /// Whether [`device_toml`](Self::device_toml) writes the model's descriptions.
    const WRITABLE: bool = false;

    /// A complete device file (from scratch) that reads back as `params`, for the models that
    /// [`blackbox_device_toml`] writes ([`WRITABLE`](Self::WRITABLE)); `None` for the others.
    fn device_toml(_params: &Self::Params) -> Option<Result<String, String>> {
        None
    }
}

/// What a model's [`Model::resolve`] gets besides its section: the file's top-level keys and
/// where the file is.
pub(crate) struct FileContext<'a> {
    /// The file's name, for messages.
    pub file: &'a str,
    /// The top-level `capacity_bytes`.
    pub capacity_bytes: Option<u64>,
    /// The top-level `queue_depth`.
    pub queue_depth: Option<usize>,
    /// Where child files named by the file are found.
    pub nesting: &'a array::Nesting,
}

impl FileContext<'_> {
    /// The model's section, which a file without a preset must have.
    pub(crate) fn required<'s, S>(
        &self,
        name: &str,
        section: Option<&'s S>,
    ) -> Result<&'s S, ConfigError> {
        section.ok_or_else(|| {
            invalid(
                self.file,
                name,
                format!("model `{name}` without a preset needs a [{name}] section"),
            )
        })
    }
}

/// How the black-box models (`linear`, `table`, `step`) resolve a file, which they do alike:
/// the preset's parameters or the section's from scratch, then the top-level capacity and queue
/// depth, then the section's keys, then the checks between parameters.
pub(crate) struct BlackBoxResolve<S, P> {
    /// The parameters of a file without a preset, from its section and capacity.
    pub from_scratch: fn(&S, Option<u64>, &str) -> Result<P, ConfigError>,
    /// The section's keys laid over the parameters.
    pub apply: fn(&S, &mut P, &str) -> Result<(), ConfigError>,
    /// The checks between parameters.
    pub validate: fn(&P, &str) -> Result<(), ConfigError>,
    /// The parameters' capacity and queue depth, which the top-level keys set.
    pub top_level: fn(&mut P) -> (&mut u64, &mut usize),
}

impl<S, P> BlackBoxResolve<S, P> {
    /// [`Model::resolve`] for the model called `name`.
    pub(crate) fn resolve(
        &self,
        name: &str,
        section: Option<&S>,
        base: Option<P>,
        cx: &FileContext,
    ) -> Result<P, ConfigError> {
        let mut params = match base {
            Some(params) => params,
            None => (self.from_scratch)(cx.required(name, section)?, cx.capacity_bytes, cx.file)?,
        };
        let (capacity_bytes, queue_depth) = (self.top_level)(&mut params);
        if let Some(c) = cx.capacity_bytes {
            *capacity_bytes = c;
        }
        if let Some(q) = cx.queue_depth {
            *queue_depth = q;
        }
        if let Some(section) = section {
            (self.apply)(section, &mut params, cx.file)?;
        }
        (self.validate)(&params, cx.file)?;
        Ok(params)
    }
}

/// [`Model::resolve`] for a model merged over its presets ([`Model::MERGED_OVER_PRESET`]): a
/// file that starts from such a preset was merged into the preset's own file and arrives
/// without one, so a base comes only from a preset's own parameters and stands unchanged; a
/// file without a preset must have the model's section, which `from_scratch` reads.
pub(crate) fn resolve_merged<M: Model>(
    section: Option<&M::Section>,
    base: Option<M::Params>,
    cx: &FileContext,
    from_scratch: impl FnOnce(&M::Section) -> Result<M::Params, ConfigError>,
) -> Result<M::Params, ConfigError> {
    const { assert!(M::MERGED_OVER_PRESET) };
    match base {
        Some(params) => Ok(params),
        None => from_scratch(cx.required(M::NAME, section)?),
    }
}

/// Declares a black-box model's entry in the model table: the unit struct implementing
/// [`Model`] through [`BlackBoxResolve`] and [`Model::device_toml`], and [`ModelParams`] for its
/// parameters, whose device is built from a copy of them (`Device::new(params)`). The invoking
/// module defines the model's `from_scratch`, `apply`, `validate` and `device_toml`, which the
/// three black-box models (`linear`, `table`, `step`) do alike.
macro_rules! black_box_model {
    (
        $(#[$doc:meta])*
        $model:ident {
            name: $name:literal,
            description: $description:literal,
            params: $params:ty,
            section: $section:ty,
            device: $device:ty $(,)?
        }
    ) => {
        $(#[$doc])*
        pub(crate) struct $model;

        impl $crate::models::Model for $model {
            const NAME: &'static str = $name;
            const DESCRIPTION: &'static str = $description;
            const WRITABLE: bool = true;
            type Params = $params;
            type Section = $section;

            fn resolve(
                section: Option<&$section>,
                base: Option<$params>,
                cx: &$crate::models::FileContext,
            ) -> Result<$params, $crate::ConfigError> {
                $crate::models::BlackBoxResolve {
                    from_scratch,
                    apply,
                    validate,
                    top_level: |p| (&mut p.capacity_bytes, &mut p.queue_depth),
                }
                .resolve(Self::NAME, section, base, cx)
            }

            fn device_toml(params: &$params) -> Option<Result<String, String>> {
                Some(device_toml(params))
            }
        }

        impl $crate::ModelParams for $params {
            fn model_name(&self) -> &'static str {
                <$model as $crate::models::Model>::NAME
            }

            fn build(&self) -> Result<Box<dyn storsim_core::Device>, String> {
                Ok(Box::new(<$device>::new(self.clone())))
            }
        }
    };
}
pub(crate) use black_box_model;

/// One row of the model table, with the model's types erased.
pub(crate) struct ModelEntry {
    pub name: &'static str,
    pub description: &'static str,
    pub merged_over_preset: bool,
    /// [`Model::HAS_CHILDREN`].
    pub has_children: bool,
    /// [`Model::VARIANT_TABLES`].
    pub variant_tables: &'static [(&'static str, &'static str)],
    /// [`Model::WRITABLE`].
    pub writable: bool,
    /// Whether the file has the model's section.
    pub has_section: fn(&DeviceFile) -> bool,
    /// [`Model::resolve`] on the file's section; `base` is of this model.
    pub resolve:
        fn(&DeviceFile, Option<DeviceSpec>, &FileContext) -> Result<DeviceSpec, ConfigError>,
    /// [`Model::device_toml`]; `None` for other models' descriptions too.
    pub device_toml: fn(&DeviceSpec) -> Option<Result<String, String>>,
}

/// [`Model::resolve`] behind [`ModelEntry::resolve`].
fn resolve_erased<M: Model>(
    section: Option<&M::Section>,
    base: Option<DeviceSpec>,
    cx: &FileContext,
) -> Result<DeviceSpec, ConfigError> {
    let base = base.map(|spec| {
        spec.into_params::<M::Params>()
            .unwrap_or_else(|spec| panic!("a `{}` base passed to `{}`", spec.model_name(), M::NAME))
    });
    M::resolve(section, base, cx).map(DeviceSpec::new)
}

/// [`Model::device_toml`] behind [`ModelEntry::device_toml`].
fn device_toml_erased<M: Model>(spec: &DeviceSpec) -> Option<Result<String, String>> {
    spec.params::<M::Params>().and_then(M::device_toml)
}

/// Declares the model table: `section: Type` per model, where `section` is the name of the
/// model's TOML section (and its `model` key) and `Type` implements [`Model`]. It generates the
/// top level of a device file, with one optional section per model, so that serde reads and
/// checks every section with its line numbers, and [`MODELS`], which the rest of the crate
/// iterates.
macro_rules! device_models {
    ($($section:ident: $model:ty,)*) => {
        /// The top level of a device file. Every field is optional because a file may start
        /// from a preset and override only some of it; what is required without a preset is
        /// checked after.
        #[derive(Deserialize, Default)]
        #[serde(deny_unknown_fields)]
        pub(crate) struct DeviceFile {
            pub preset: Option<String>,
            pub model: Option<ModelRef>,
            pub capacity_bytes: Option<u64>,
            pub queue_depth: Option<usize>,
            /// The faults layer's section, read on its own (with its lines) by `faults.rs`;
            /// named here only so that the models' reading accepts it.
            #[serde(rename = "faults")]
            pub _faults: Option<serde::de::IgnoredAny>,
            /// A host interface in front of the model, whatever the model.
            pub host_interface: Option<crate::host_interface::HostInterfaceSection>,
            $(pub $section: Option<<$model as Model>::Section>,)*
        }

        /// Every device model, in the order help text lists them.
        pub(crate) const MODELS: &[ModelEntry] = &[$(ModelEntry {
            name: <$model as Model>::NAME,
            description: <$model as Model>::DESCRIPTION,
            merged_over_preset: <$model as Model>::MERGED_OVER_PRESET,
            writable: <$model as Model>::WRITABLE,
            variant_tables: <$model as Model>::VARIANT_TABLES,
            has_children: <$model as Model>::HAS_CHILDREN,
            has_section: |file| file.$section.is_some(),
            resolve: |file, base, cx| resolve_erased::<$model>(file.$section.as_ref(), base, cx),
            device_toml: device_toml_erased::<$model>,
        },)*];

        /// The models' names, as serde's message for an unknown `model` lists them.
        const MODEL_NAMES: &[&str] = &[$(<$model as Model>::NAME,)*];

        /// The section names the table declares, to check them against the models' names.
        #[cfg(test)]
        const SECTION_NAMES: &[&str] = &[$(stringify!($section),)*];
    };
}

// The model table: adding a device model is its module above plus one line here.
device_models! {
    linear: linear::Linear,
    table: table::Table,
    step: step::Step,
    ssd: ssd::Ssd,
    array: array::Array,
    hybrid: hybrid::Hybrid,
    hdd: hdd::Hdd,
}

/// The model a file's `model` key names.
#[derive(Clone, Copy)]
pub(crate) struct ModelRef(pub &'static ModelEntry);

impl<'de> Deserialize<'de> for ModelRef {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        model(&name)
            .map(ModelRef)
            .ok_or_else(|| serde::de::Error::unknown_variant(&name, MODEL_NAMES))
    }
}

/// The model table's entry for `name`.
pub(crate) fn model(name: &str) -> Option<&'static ModelEntry> {
    MODELS.iter().find(|m| m.name == name)
}

/// A device model a file can name, for listings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelInfo {
    /// The `model` key's value.
    pub name: &'static str,
    /// One line saying what the model is.
    pub description: &'static str,
}

/// Every device model a device file can name, in table order.
pub fn models() -> impl Iterator<Item = ModelInfo> {
    MODELS.iter().map(|m| ModelInfo {
        name: m.name,
        description: m.description,
    })
}

/// The `sequential` key shared by the black-box sections.
#[derive(Deserialize, Serialize, Clone, Copy, Debug)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum SequentialName {
    PreviousRequest,
    PreviousSameDirection,
}

impl SequentialName {
    pub(crate) fn detect(self) -> SequentialDetect {
        match self {
            SequentialName::PreviousRequest => SequentialDetect::PreviousRequest,
            SequentialName::PreviousSameDirection => SequentialDetect::PreviousSameDirection,
        }
    }

    /// The name a file gives `detect`, for writing descriptions.
    pub(crate) fn of(detect: SequentialDetect) -> SequentialName {
        match detect {
            SequentialDetect::PreviousRequest => SequentialName::PreviousRequest,
            SequentialDetect::PreviousSameDirection => SequentialName::PreviousSameDirection,
        }
    }
}

/// A delay as files state it, in µs. Up to the readers' limit of one hour (3.6e12 ns, far below
/// 2^53) the quotient is within a relative 2^-53 of ns / 1000, so [`delay_us`]'s
/// `round(us * 1000)` gives back the same whole ns; TOML writes the `f64` in its shortest form
/// that parses back to the same number.
pub(crate) fn us_of(d: SimDuration) -> f64 {
    d.as_ns() as f64 / 1000.0
}

/// Checks that an integer fits TOML's integers (signed 64-bit), for writing `key`.
pub(crate) fn toml_int(model: &str, key: &str, value: u64) -> Result<(), String> {
    if i64::try_from(value).is_ok() {
        Ok(())
    } else {
        Err(format!(
            "these `{model}` parameters cannot be written as a device file: key `{key}`: {value} \
             is larger than the largest TOML integer, {}",
            i64::MAX
        ))
    }
}

/// A TOML device description (from scratch, no preset) that [`parse_device_toml`] reads back
/// into exactly `spec`, for the models that can be written this way (the black-box ones:
/// `linear`, `table`, `step`). Other models: an error naming the model. Parameters that a device
/// file cannot state (a delay over the readers' one-hour limit, B over 1e6 µs per KiB, a count
/// over what TOML's 64-bit signed integers hold, or anything the readers' checks reject, such as
/// an empty step schedule) are an error too, naming the key: the text is read back before it is
/// returned, so what comes back always loads as `spec`.
pub fn blackbox_device_toml(spec: &DeviceSpec) -> Result<String, String> {
    let model = spec.model_name();
    let text = match MODELS.iter().find_map(|m| (m.device_toml)(spec)) {
        Some(text) => text?,
        None => {
            let writable: Vec<String> = MODELS
                .iter()
                .filter(|m| m.writable)
                .map(|m| format!("`{}`", m.name))
                .collect();
            return Err(format!(
                "the `{model}` model is not a black-box model; only {} descriptions can be \
                 written this way",
                writable.join(", ")
            ));
        }
    };
    match parse_device_toml(&text, &format!("the written `{model}` description")) {
        Ok(read) if read == *spec => Ok(text),
        Ok(read) => Err(format!(
            "the written `{model}` description reads back as different parameters: \
             {read:?} instead of {spec:?}"
        )),
        Err(e) => Err(format!(
            "these `{model}` parameters cannot be written as a device file: {e}"
        )),
    }
}

/// Checks that a time or rate read from a file is a finite, non-negative number.
pub(crate) fn non_negative(file: &str, key: &str, value: f64) -> Result<f64, ConfigError> {
    if value.is_finite() && value >= 0.0 {
        Ok(value)
    } else {
        Err(invalid(
            file,
            key,
            format!("must be a finite number >= 0, got {value}"),
        ))
    }
}

/// A fraction that may be 1, such as a probability or the share of candidates searched. The
/// check is the FTL crate's, which its sections use too.
pub(crate) fn fraction_up_to_one(file: &str, key: &str, value: f64) -> Result<(), ConfigError> {
    storsim_ftl::params::fraction_up_to_one(key, value).map_err(|e| invalid(file, key, e.message))
}

/// The longest single delay a device file may state: one hour. Anything longer is a
/// unit mistake, and bounding it keeps every sum of delays far from overflowing simulated time.
const DELAY_US_MAX: f64 = 3.6e9;

/// A delay in µs from a file: finite, non-negative and at most an hour, rounded to the ns.
pub(crate) fn delay_us(file: &str, key: &str, us: f64) -> Result<SimDuration, ConfigError> {
    if us.is_finite() && (0.0..=DELAY_US_MAX).contains(&us) {
        Ok(SimDuration::from_us_f64(us))
    } else {
        Err(invalid(
            file,
            key,
            format!("must be a number of µs from 0 to {DELAY_US_MAX:.0} (one hour), got {us}"),
        ))
    }
}

pub(crate) fn invalid(file: &str, key: &str, message: String) -> ConfigError {
    ConfigError::Invalid {
        file: file.to_string(),
        key: key.to_string(),
        message,
    }
}

/// The error for a key that a file without a preset must state.
pub(crate) fn missing(file: &str, key: &str) -> ConfigError {
    invalid(
        file,
        key,
        "is required when the file does not start from a preset".to_string(),
    )
}

/// The error for a queue depth stated both in `[section]` and at the file's top level.
pub(crate) fn queue_depth_stated_twice(file: &str, section: &str) -> ConfigError {
    invalid(
        file,
        &format!("{section}.queue_depth"),
        "is also given at the top level as `queue_depth`; state it once".into(),
    )
}

/// The queue depth of a model whose `[section]` may state it where the file's top level
/// may: whichever states it (not both), else `default`; checked against the bound.
pub(crate) fn section_queue_depth(
    file: &str,
    section: &str,
    in_section: Option<usize>,
    top: Option<usize>,
    default: usize,
) -> Result<usize, ConfigError> {
    let queue_depth = match (in_section, top) {
        (Some(_), Some(_)) => return Err(queue_depth_stated_twice(file, section)),
        (Some(q), None) | (None, Some(q)) => q,
        (None, None) => default,
    };
    check_queue_depth(file, queue_depth)?;
    Ok(queue_depth)
}

/// The bound every model puts on `queue_depth`: the queue is allocated up front.
pub(crate) fn check_queue_depth(file: &str, queue_depth: usize) -> Result<(), ConfigError> {
    if queue_depth == 0 || queue_depth > QUEUE_DEPTH_MAX as usize {
        return Err(invalid(
            file,
            "queue_depth",
            format!("must be 1..={QUEUE_DEPTH_MAX}, got {queue_depth}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_section_is_named_after_its_model() {
        let names: Vec<&str> = MODELS.iter().map(|m| m.name).collect();
        assert_eq!(names, SECTION_NAMES);
        assert_eq!(names, MODEL_NAMES);
    }
}
