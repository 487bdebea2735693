//! An FTL's parameters as a device description states them, without any file format: each FTL
//! declares the keys of its section ([`Key`]), and reads a [`Section`] of typed values into its
//! `Params`. The reader of device files (the `config` crate) turns its format into a `Section`
//! by these declarations, so that it can report a wrong key or type where the file has it, and
//! turns a [`ParamError`] into a message naming the file and the full key.

use std::fmt;

/// One key an FTL's section may state.
#[derive(Clone, Copy, Debug)]
pub struct Key {
    /// The key as files write it.
    pub name: &'static str,
    /// What its value must be.
    pub kind: Kind,
}

impl Key {
    /// A key of the given kind.
    pub const fn new(name: &'static str, kind: Kind) -> Key {
        Key { name, kind }
    }
}

/// The keys a section may state, in groups (an FTL's own keys and the victim policies'
/// keys), so that a section can take in another module's keys without copying them.
#[derive(Clone, Copy, Debug)]
pub struct Keys(pub &'static [&'static [Key]]);

impl Keys {
    /// The key named `name`.
    pub fn find(&self, name: &str) -> Option<&'static Key> {
        self.all().find(|k| k.name == name)
    }

    /// Every key, group by group.
    pub fn all(&self) -> impl Iterator<Item = &'static Key> {
        self.0.iter().flat_map(|group| group.iter())
    }
}

/// The type of a key's value.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// A number (files may write it as an integer).
    F64,
    /// A whole number that fits 32 bits, not negative.
    U32,
    /// A whole number that fits 64 bits, not negative.
    U64,
    /// `true` or `false`.
    Bool,
    /// One of these names.
    Name(&'static [&'static str]),
    /// A nested section with these keys (an FTL whose data side is another FTL takes that
    /// FTL's keys under its name).
    Section(Keys),
}

/// A value of one of the [`Kind`]s.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    F64(f64),
    U32(u32),
    U64(u64),
    Bool(bool),
    /// One of the names of its [`Kind::Name`].
    Name(&'static str),
    Section(Section),
}

/// The keys a section states, with their values, in the order they were inserted.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Section {
    values: Vec<(&'static str, Value)>,
}

impl Section {
    /// An empty section.
    pub fn new() -> Section {
        Section::default()
    }

    /// Sets `key`, replacing an earlier value of the same key.
    pub fn insert(&mut self, key: &'static str, value: Value) {
        match self.values.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => *v = value,
            None => self.values.push((key, value)),
        }
    }

    /// The value of `key`, if the section states it.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.values.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// Every key with its value, in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &Value)> {
        self.values.iter().map(|(k, v)| (*k, v))
    }

    /// Whether the section states no key.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// A number key's value. The reader checked the type against the FTL's [`Key`]s, so a
    /// value of another kind is a defect in the FTL's declarations (its tests catch it).
    pub fn f64(&self, key: &str) -> Option<f64> {
        self.typed(key, |v| match v {
            Value::F64(x) => Some(*x),
            _ => None,
        })
    }

    /// A [`Kind::U32`] key's value; see [`Section::f64`].
    pub fn u32(&self, key: &str) -> Option<u32> {
        self.typed(key, |v| match v {
            Value::U32(x) => Some(*x),
            _ => None,
        })
    }

    /// A [`Kind::U64`] key's value; see [`Section::f64`].
    pub fn u64(&self, key: &str) -> Option<u64> {
        self.typed(key, |v| match v {
            Value::U64(x) => Some(*x),
            _ => None,
        })
    }

    /// A [`Kind::Bool`] key's value; see [`Section::f64`].
    pub fn bool(&self, key: &str) -> Option<bool> {
        self.typed(key, |v| match v {
            Value::Bool(x) => Some(*x),
            _ => None,
        })
    }

    /// A [`Kind::Name`] key's value; see [`Section::f64`].
    pub fn name(&self, key: &str) -> Option<&'static str> {
        self.typed(key, |v| match v {
            Value::Name(x) => Some(*x),
            _ => None,
        })
    }

    /// A [`Kind::Section`] key's value; see [`Section::f64`].
    pub fn section(&self, key: &str) -> Option<&Section> {
        self.typed(key, |v| match v {
            Value::Section(x) => Some(x),
            _ => None,
        })
    }

    fn typed<'a, T>(&'a self, key: &str, of: impl Fn(&'a Value) -> Option<T>) -> Option<T> {
        let value = self.get(key)?;
        let typed = of(value);
        assert!(
            typed.is_some(),
            "key `{key}` holds {value:?}, not the kind its FTL reads: the FTL's keys and its \
             reading of them disagree"
        );
        typed
    }
}

/// Where a parameter error is.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamKey {
    /// A key of the FTL's own section, as a dotted path within it (`page.seed` for the key
    /// `seed` of a nested section `page`).
    Own(String),
    /// A field of the device's geometry, which the FTL cannot work with.
    Geometry(&'static str),
}

/// A parameter an FTL refuses, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamError {
    pub key: ParamKey,
    /// What is wrong, phrased to follow the key ("must be at least 1").
    pub message: String,
}

impl ParamError {
    /// An error about `key` of the FTL's own section.
    pub fn key(key: &str, message: String) -> ParamError {
        ParamError {
            key: ParamKey::Own(key.to_string()),
            message,
        }
    }

    /// The same error seen from the section that holds the nested section `section`.
    pub fn within(self, section: &str) -> ParamError {
        let key = match self.key {
            ParamKey::Own(key) => ParamKey::Own(format!("{section}.{key}")),
            geometry => geometry,
        };
        ParamError { key, ..self }
    }
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.key {
            ParamKey::Own(key) => write!(f, "key `{key}`: {}", self.message),
            ParamKey::Geometry(field) => write!(f, "geometry `{field}`: {}", self.message),
        }
    }
}

impl std::error::Error for ParamError {}

/// Checks a fraction that cannot be 1, such as over-provisioning: all of the device would be
/// spare.
pub fn fraction_below_one(key: &str, value: f64) -> Result<(), ParamError> {
    if value.is_finite() && (0.0..1.0).contains(&value) {
        Ok(())
    } else {
        Err(ParamError::key(
            key,
            format!("must be a fraction from 0 up to (not including) 1, got {value}"),
        ))
    }
}

/// Checks a fraction that may be 1, such as a probability or the share of candidates searched.
pub fn fraction_up_to_one(key: &str, value: f64) -> Result<(), ParamError> {
    if value.is_finite() && (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(ParamError::key(
            key,
            format!("must be a fraction from 0 to 1, got {value}"),
        ))
    }
}

/// Sets `target` to the value of `key` if the section states it; `read` is one of
/// [`Section`]'s typed getters.
pub fn set<T>(target: &mut T, section: &Section, key: &str, read: fn(&Section, &str) -> Option<T>) {
    if let Some(v) = read(section, key) {
        *target = v;
    }
}
