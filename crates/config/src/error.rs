use std::fmt;

/// Why a device description was rejected. Every variant names where the problem is.
#[derive(Debug, Clone, PartialEq)]
pub enum ConfigError {
    /// Neither a preset name nor a readable file.
    NotFound { name: String, reason: String },
    /// The file is not valid TOML for a device description (unknown key, wrong type, ...); the
    /// message comes from the TOML parser and shows the line.
    Syntax { file: String, message: String },
    /// An element of an XML file (MQSim's configurations) that storsim cannot take: malformed,
    /// unknown, or with a value out of range.
    Xml {
        file: String,
        line: u32,
        element: String,
        message: String,
    },
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
            ConfigError::Xml { file, line, element, message } if element.is_empty() => {
                write!(f, "{file}:{line}: {message}")
            }
            ConfigError::Xml { file, line, element, message } => {
                write!(f, "{file}:{line}: <{element}>: {message}")
            }
        }
    }
}

impl std::error::Error for ConfigError {}
