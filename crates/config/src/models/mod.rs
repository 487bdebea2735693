//! One module per model: its TOML section and how the section overrides the parameters.

pub(crate) mod linear;

use crate::ConfigError;

/// Checks that a time or rate read from a file is a finite, non-negative number.
pub(crate) fn non_negative(file: &str, key: &str, value: f64) -> Result<f64, ConfigError> {
    if value.is_finite() && value >= 0.0 {
        Ok(value)
    } else {
        Err(ConfigError::Invalid {
            file: file.to_string(),
            key: key.to_string(),
            message: format!("must be a finite number >= 0, got {value}"),
        })
    }
}
