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

impl Kind {
    /// Whether `value` is of this kind.
    pub fn holds(&self, value: &Value) -> bool {
        match (self, value) {
            (Kind::F64, Value::F64(_))
            | (Kind::U32, Value::U32(_))
            | (Kind::U64, Value::U64(_))
            | (Kind::Bool, Value::Bool(_))
            | (Kind::Section(_), Value::Section(_)) => true,
            (Kind::Name(names), Value::Name(name)) => names.contains(name),
            _ => false,
        }
    }
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

    /// A [`Scalar`] key's value. The reader checked the type against the FTL's [`Key`]s, so a
    /// value of another kind is a defect in the FTL's declarations (its tests catch it).
    pub fn scalar<T: Scalar>(&self, key: &str) -> Option<T> {
        self.typed(key, T::of)
    }

    /// A [`Kind::Name`] key's value; see [`Section::scalar`].
    pub fn name(&self, key: &str) -> Option<&'static str> {
        self.typed(key, |v| match v {
            Value::Name(x) => Some(*x),
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

/// A Rust type that a key's value maps to one to one, so that a [`Field`] of this type needs
/// no conversion of its own.
pub trait Scalar: Copy {
    /// The kind of key that holds it.
    const KIND: Kind;
    /// It as a section's value.
    fn into_value(self) -> Value;
    /// It from a value of [`Scalar::KIND`]; `None` for a value of another kind.
    fn of(value: &Value) -> Option<Self>;
}

/// Implements [`Scalar`] for a type and the [`Kind`] and [`Value`] variant of the same name.
macro_rules! scalar {
    ($($ty:ty => $variant:ident),* $(,)?) => {$(
        impl Scalar for $ty {
            const KIND: Kind = Kind::$variant;
            fn into_value(self) -> Value {
                Value::$variant(self)
            }
            fn of(value: &Value) -> Option<Self> {
                match value {
                    Value::$variant(x) => Some(*x),
                    _ => None,
                }
            }
        }
    )*};
}

scalar!(f64 => F64, u32 => U32, u64 => U64, bool => Bool);

/// The value of a [`Field`]'s key as the field's type. [`apply`] hands a field only values of
/// its key's kind, so another kind is a defect in the field's declaration.
pub fn scalar<T: Scalar>(value: &Value) -> T {
    T::of(value).unwrap_or_else(|| {
        panic!("{value:?} is not the kind of its key: a field's key and its reading disagree")
    })
}

/// One key of an FTL's section together with the field of the FTL's parameters `P` that it
/// states. An FTL lists its keys once, as fields; its declared [`Key`]s ([`keys`]), its reading
/// of a section ([`apply`]) and its writing of one ([`section`]) all come from that list.
/// Most fields are a parameter of the same name (the crate's `field!` macro); a field
/// with a rule of its own (a value meaning "off", a key only read, a nested section) states
/// `set` and `get` itself.
pub struct Field<P> {
    /// The key as files write it, and its kind.
    pub key: Key,
    /// Sets the parameters from the key's value, which is of the key's kind; a value they
    /// cannot take is an error naming the key.
    pub set: fn(&mut P, &Value) -> Result<(), ParamError>,
    /// The value that states the parameters, or `None` where the section leaves the key out
    /// (a default the FTL computes, a key that is only another way to set a field).
    pub get: fn(&P) -> Option<Value>,
}

/// The [`Field`] of a parameter whose key is its name and whose type is a [`Scalar`]:
/// `field!(seed: u64)` sets `seed` from the key `seed`, of kind [`Kind::U64`].
macro_rules! field {
    ($name:ident: $ty:ty) => {
        $crate::params::Field {
            key: $crate::params::Key::new(stringify!($name), <$ty as $crate::params::Scalar>::KIND),
            set: |p, v| {
                p.$name = $crate::params::scalar::<$ty>(v);
                Ok(())
            },
            get: |p| Some($crate::params::Scalar::into_value(p.$name)),
        }
    };
}
pub(crate) use field;

/// The keys of `fields`, in their order, for an FTL's [`Keys`]. `N` is the number of fields
/// (`const KEYS: [Key; FIELDS.len()] = keys(FIELDS);`).
pub const fn keys<P, const N: usize>(fields: &[Field<P>]) -> [Key; N] {
    assert!(fields.len() == N, "N is the number of fields");
    let mut keys = [Key::new("", Kind::Bool); N];
    let mut i = 0;
    while i < N {
        keys[i] = fields[i].key;
        i += 1;
    }
    keys
}

/// Sets `params` from the keys of `section` that `fields` declare, in the fields' order.
pub fn apply<P>(fields: &[Field<P>], params: &mut P, section: &Section) -> Result<(), ParamError> {
    for field in fields {
        if let Some(value) = section.get(field.key.name) {
            assert!(
                field.key.kind.holds(value),
                "key `{}` holds {value:?}, not its declared kind: the reader of the section and \
                 the FTL's keys disagree",
                field.key.name
            );
            (field.set)(params, value)?;
        }
    }
    Ok(())
}

/// The section stating `params` by `fields`, in the fields' order.
pub fn section<P>(fields: &[Field<P>], params: &P) -> Section {
    let mut section = Section::new();
    for field in fields {
        if let Some(value) = (field.get)(params) {
            section.insert(field.key.name, value);
        }
    }
    section
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, PartialEq)]
    struct Toy {
        fraction: f64,
        on: bool,
        limit: Option<u32>,
    }

    const FIELDS: &[Field<Toy>] = &[
        field!(fraction: f64),
        field!(on: bool),
        Field {
            key: Key::new("limit", Kind::U32),
            set: |p, v| match scalar(v) {
                0 => Err(ParamError::key("limit", "must be at least 1".into())),
                n => {
                    p.limit = Some(n);
                    Ok(())
                }
            },
            get: |p| p.limit.map(Value::U32),
        },
    ];

    #[test]
    fn the_keys_are_the_fields_in_order_with_their_kinds() {
        const KEYS: [Key; FIELDS.len()] = keys(FIELDS);
        let names: Vec<_> = KEYS.iter().map(|k| k.name).collect();
        assert_eq!(names, ["fraction", "on", "limit"]);
        assert!(KEYS[0].kind.holds(&Value::F64(0.5)));
        assert!(!KEYS[0].kind.holds(&Value::U32(1)));
        assert!(KEYS[1].kind.holds(&Value::Bool(true)));
        assert!(KEYS[2].kind.holds(&Value::U32(1)));
    }

    #[test]
    fn apply_sets_only_the_stated_keys_and_section_writes_them_back() {
        let mut toy = Toy {
            fraction: 0.25,
            ..Toy::default()
        };
        let mut s = Section::new();
        s.insert("on", Value::Bool(true));
        apply(FIELDS, &mut toy, &s).unwrap();
        assert_eq!(
            toy,
            Toy {
                fraction: 0.25,
                on: true,
                limit: None
            }
        );
        // A field whose `get` gives nothing is left out of the section.
        let written = section(FIELDS, &toy);
        assert_eq!(written.get("limit"), None);
        assert_eq!(written.get("fraction"), Some(&Value::F64(0.25)));
        let mut read = Toy::default();
        apply(FIELDS, &mut read, &written).unwrap();
        assert_eq!(read, toy);
    }

    #[test]
    fn a_fields_refusal_names_its_key() {
        let mut s = Section::new();
        s.insert("limit", Value::U32(0));
        let e = apply(FIELDS, &mut Toy::default(), &s).unwrap_err();
        assert_eq!(e.to_string(), "key `limit`: must be at least 1");
    }
}
