use std::fmt;

/// Why a device description was rejected. Every variant names where the problem is.
#[derive(Debug, Clone, PartialEq)]
pub enum ConfigError {
    /// Neither a preset name nor a readable file.
    NotFound { name: String, reason: String },
    /// The file is not valid TOML for a device description (unknown key, wrong type, ...); the
    /// message comes from the TOML parser and shows the line.
    Syntax { file: String, message: String },
    /// A key has a value outside what the model accepts.
    Invalid {
        file: String,
        key: String,
        message: String,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::NotFound { name, reason } => write!(
                f,
                "'{name}' is neither a preset (see `storsim presets`) nor a readable device file: {reason}"
            ),
            ConfigError::Syntax { file, message } => write!(f, "{file}: {}", message.trim_end()),
            ConfigError::Invalid { file, key, message } => write!(f, "{file}: key `{key}`: {message}"),
        }
    }
}

impl std::error::Error for ConfigError {}
