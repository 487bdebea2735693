//! One module per model: its TOML section and how the section overrides the parameters. The
//! SSD keeps its per-FTL sections in a module of their own (`ftl`).

pub(crate) mod array;
pub(crate) mod ftl;
pub(crate) mod hdd;
pub(crate) mod hybrid;
pub(crate) mod linear;
pub(crate) mod ssd;
pub(crate) mod step;
pub(crate) mod table;

use crate::{parse_device_toml, ConfigError, DeviceSpec};
use serde::{Deserialize, Serialize};
use storsim_blackbox::SequentialDetect;
use storsim_core::{SimDuration, QUEUE_DEPTH_MAX};

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

/// A TOML device description (`model = "linear" | "table" | "step"`, from scratch, no preset)
/// that [`parse_device_toml`] reads back into exactly `spec`. Other models: an error naming the
/// model. Parameters that a device file cannot state (a delay over the readers' one-hour limit,
/// B over 1e6 µs per KiB, a count over what TOML's 64-bit signed integers hold, or anything the
/// readers' checks reject, such as an empty step schedule) are an error too, naming the key: the
/// text is read back before it is returned, so what comes back always loads as `spec`.
pub fn blackbox_device_toml(spec: &DeviceSpec) -> Result<String, String> {
    let text = match spec {
        DeviceSpec::Linear(p) => linear::device_toml(p)?,
        DeviceSpec::Table(p) => table::device_toml(p)?,
        DeviceSpec::Step(p) => step::device_toml(p)?,
        other => {
            return Err(format!(
                "the `{}` model is not a black-box model; only `linear`, `table` and `step` \
                 descriptions can be written this way",
                other.model_name()
            ))
        }
    };
    let model = spec.model_name();
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
