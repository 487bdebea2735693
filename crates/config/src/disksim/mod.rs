//! DiskSim 4.0 parameter files (`.parv`, `.diskspecs`, `.model`, `.specs`), read into a plain
//! tree so that `storsim import disksim` can turn DiskSim's validated drives into storsim device
//! descriptions.
//!
//! The syntax, as DiskSim's own files use it:
//!
//! ```text
//! # a comment runs to the end of the line
//! source other.diskspecs                       (include: its definitions join this file's)
//! disksim_disk NAME {                          (a named block of `key = value` pairs)
//!    Model = source drive.model,               (a value may be a block read from a file)
//!    Scheduler = disksim_ioqueue { ... },      (or an anonymous inline block)
//!    Zones = [ dm_layout_g1_zone { ... }, ... ], (or a list)
//!    Read hit over. after read = 0.066         (keys are words up to `=`, spaces included)
//! }
//! instantiate [ disk0 .. disk2 ] as NAME
//! topology disksim_iodriver driver0 [ disksim_bus bus0 [ ... ] ]
//! ```
//!
//! Keys are compared with their words joined by single spaces, exactly as written otherwise
//! (DiskSim's own parser is case-sensitive too). Every error names the file and the line.

mod syntax;

pub mod import;

use crate::ConfigError;
use std::path::{Path, PathBuf};

/// The most nested `source` includes followed before the reader assumes a cycle.
pub const SOURCE_DEPTH_MAX: usize = 16;

/// A parsed parameter file with every `source` include resolved.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Document {
    /// Named top-level blocks in file order, included files' blocks where the `source` stood.
    pub blocks: Vec<Block>,
    /// `instantiate [names] as TYPE` lines: the instance names (ranges kept as written) and the
    /// block name they instantiate.
    pub instantiations: Vec<Instantiation>,
    /// `topology` statements.
    pub topologies: Vec<TopologyNode>,
}

/// One `instantiate [ ... ] as NAME` line.
#[derive(Clone, Debug, PartialEq)]
pub struct Instantiation {
    pub names: Vec<Value>,
    pub block_name: String,
    pub file: PathBuf,
    pub line: u32,
}

/// One component in a `topology` tree: `TYPE NAME [ children ]`.
#[derive(Clone, Debug, PartialEq)]
pub struct TopologyNode {
    pub type_name: String,
    pub name: String,
    pub children: Vec<TopologyNode>,
}

/// `TYPE [NAME] { key = value, ... }`.
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    pub type_name: String,
    pub name: Option<String>,
    pub params: Vec<Param>,
    /// Where the block was defined.
    pub file: PathBuf,
    pub line: u32,
}

/// One `key = value` pair.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub key: String,
    pub value: Value,
    pub line: u32,
}

/// A parameter value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Int(i64),
    Float(f64),
    /// Anything else written as one word: a name, a file name, an enumerated keyword.
    Word(String),
    Block(Block),
    List(Vec<Value>),
    /// `first .. last` inside a list, as in `[ disk0 .. disk17 ]`.
    Range(String, String),
}

impl Value {
    /// What kind of value this is, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Int(_) => "an integer",
            Value::Float(_) => "a number",
            Value::Word(_) => "a word",
            Value::Block(_) => "a block",
            Value::List(_) => "a list",
            Value::Range(..) => "a range",
        }
    }

    /// The value as a number, integers included.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::Int(i) => Some(i as f64),
            Value::Float(f) => Some(f),
            _ => None,
        }
    }
}

/// Reads a parameter file and every file it sources.
pub fn parse_file(path: &Path) -> Result<Document, ConfigError> {
    syntax::parse_document(path, 0)
}

impl Document {
    /// The top-level block with this name.
    pub fn block_named(&self, name: &str) -> Option<&Block> {
        self.blocks.iter().find(|b| b.name.as_deref() == Some(name))
    }

    /// Top-level blocks of one type (`disksim_disk`, `disksim_bus`, ...), in file order.
    pub fn blocks_of_type<'a>(&'a self, type_name: &'a str) -> impl Iterator<Item = &'a Block> {
        self.blocks.iter().filter(move |b| b.type_name == type_name)
    }

    /// The block instantiated as the component called `instance` (`disk0`), following the
    /// `instantiate` lines, ranges included.
    pub fn instance(&self, instance: &str) -> Option<&Block> {
        self.instantiations
            .iter()
            .find(|i| i.names.iter().any(|n| name_matches(n, instance)))
            .and_then(|i| self.block_named(&i.block_name))
    }
}

/// Whether an instantiated name (a word, or a range such as `disk0 .. disk17`) covers `name`.
fn name_matches(pattern: &Value, name: &str) -> bool {
    match pattern {
        Value::Word(w) => w == name,
        Value::Range(first, last) => {
            let (Some((p1, n1)), Some((p2, n2)), Some((p, n))) =
                (split_index(first), split_index(last), split_index(name))
            else {
                return false;
            };
            p1 == p2 && p == p1 && (n1..=n2).contains(&n)
        }
        _ => false,
    }
}

/// `disk17` -> (`disk`, 17).
fn split_index(word: &str) -> Option<(&str, u64)> {
    let digits = word.len() - word.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 {
        return None;
    }
    let (prefix, number) = word.split_at(word.len() - digits);
    number.parse().ok().map(|n| (prefix, n))
}

impl Block {
    /// The parameter with this key, if present.
    pub fn get(&self, key: &str) -> Option<&Param> {
        self.params.iter().find(|p| p.key == key)
    }

    /// The parameter's value, or an error naming the block and the key when it is missing.
    pub fn value(&self, key: &str) -> Result<&Value, ConfigError> {
        self.get(key)
            .map(|p| &p.value)
            .ok_or_else(|| self.error_at(self.line, key, "is missing".to_string()))
    }

    /// A numeric parameter.
    pub fn f64(&self, key: &str) -> Result<f64, ConfigError> {
        let param = self.required(key)?;
        param
            .value
            .as_f64()
            .ok_or_else(|| self.wrong_kind(param, "a number"))
    }

    /// An integer parameter.
    pub fn i64(&self, key: &str) -> Result<i64, ConfigError> {
        let param = self.required(key)?;
        match param.value {
            Value::Int(i) => Ok(i),
            // DiskSim writes some integers with a fraction (`Skew for track switch = 97.0`).
            Value::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Ok(f as i64),
            _ => Err(self.wrong_kind(param, "an integer")),
        }
    }

    /// A one-word parameter (a name, a file name, a keyword).
    pub fn word(&self, key: &str) -> Result<&str, ConfigError> {
        let param = self.required(key)?;
        match &param.value {
            Value::Word(w) => Ok(w),
            _ => Err(self.wrong_kind(param, "a word")),
        }
    }

    /// A block-valued parameter (inline or sourced).
    pub fn block(&self, key: &str) -> Result<&Block, ConfigError> {
        let param = self.required(key)?;
        match &param.value {
            Value::Block(b) => Ok(b),
            _ => Err(self.wrong_kind(param, "a block")),
        }
    }

    /// A list-valued parameter.
    pub fn list(&self, key: &str) -> Result<&[Value], ConfigError> {
        let param = self.required(key)?;
        match &param.value {
            Value::List(l) => Ok(l),
            _ => Err(self.wrong_kind(param, "a list")),
        }
    }

    /// An error about this block's parameter `key` at `line`.
    pub fn error_at(&self, line: u32, key: &str, message: String) -> ConfigError {
        let what = match &self.name {
            Some(name) => format!("{} {name}", self.type_name),
            None => self.type_name.clone(),
        };
        ConfigError::Invalid {
            file: format!("{}:{line}", self.file.display()),
            key: key.to_string(),
            message: format!("{message} (in {what})"),
        }
    }

    fn required(&self, key: &str) -> Result<&Param, ConfigError> {
        self.get(key)
            .ok_or_else(|| self.error_at(self.line, key, "is missing".to_string()))
    }

    fn wrong_kind(&self, param: &Param, wanted: &str) -> ConfigError {
        self.error_at(
            param.line,
            &param.key,
            format!("must be {wanted}, found {}", param.value.kind()),
        )
    }
}
