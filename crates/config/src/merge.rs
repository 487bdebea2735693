//! Keys of one TOML document set on top of another. A device file that starts from a preset kept
//! as a device file (a disk, a hybrid) is merged this way: the preset's TOML is the base, each key
//! the file states replaces the base's value, and tables both have are merged key by key. The
//! control socket's `KEY=VALUE` overrides set their keys with [`set`] too.

use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use std::fmt;
use toml::{Spanned, Table, Value};

/// One value an override file sets: where it goes in the merged document, and the key as the
/// file wrote it (the two differ when the caller moves a key, as a top-level `queue_depth` into
/// the model's section).
pub(crate) struct Assignment {
    pub(crate) path: Vec<String>,
    pub(crate) written: Vec<String>,
    pub(crate) value: Value,
}

/// The values `over` sets on top of `base`. A table both have is descended into; anything else
/// (a value, an array, an array of tables, a table the base lacks) replaces the base's entry
/// whole. `variant_tables` lists tables (dotted path, tag key) that hold one of several variants,
/// named by the tag: when `over` names another variant than the base, its table replaces the
/// base's whole, because the base's keys belong to the base's variant.
pub(crate) fn assignments(
    base: &Table,
    over: &Table,
    variant_tables: &[(&str, &str)],
) -> Vec<Assignment> {
    let mut out = Vec::new();
    collect(base, over, variant_tables, &mut Vec::new(), &mut out);
    out
}

fn collect(
    base: &Table,
    over: &Table,
    variant_tables: &[(&str, &str)],
    prefix: &mut Vec<String>,
    out: &mut Vec<Assignment>,
) {
    for (key, value) in over {
        prefix.push(key.clone());
        match (value, base.get(key)) {
            (Value::Table(o), Some(Value::Table(b)))
                if !names_another_variant(&prefix.join("."), o, b, variant_tables) =>
            {
                collect(b, o, variant_tables, prefix, out);
            }
            _ => out.push(Assignment {
                path: prefix.clone(),
                written: prefix.clone(),
                value: value.clone(),
            }),
        }
        prefix.pop();
    }
}

fn names_another_variant(
    path: &str,
    over: &Table,
    base: &Table,
    variant_tables: &[(&str, &str)],
) -> bool {
    variant_tables.iter().any(|&(table, tag)| {
        table == path
            && over
                .get(tag)
                .is_some_and(|named| base.get(tag) != Some(named))
    })
}

/// Sets `value` at `path` in `table`, creating the tables on the way. `Err(i)` when `path[i]`
/// holds a value rather than a table, so nothing can be set below it.
pub(crate) fn set<S: AsRef<str>>(table: &mut Table, path: &[S], value: Value) -> Result<(), usize> {
    let (last, parents) = path.split_last().expect("a key path has at least one part");
    let mut node = table;
    for (i, part) in parents.iter().enumerate() {
        node = node
            .entry(part.as_ref())
            .or_insert_with(|| Value::Table(Table::new()))
            .as_table_mut()
            .ok_or(i)?;
    }
    node.insert(last.as_ref().to_string(), value);
    Ok(())
}

/// Parses `base` with every assignment applied. When that fails, each assignment is tried alone
/// on the base, and the first that fails by itself is reported with the key and the line and
/// column at which `text` writes it: the merged document is not the user's text, so its own
/// positions would point nowhere. Keys that fail only together are reported with the parser's
/// message, which names where in the merged document the problem is.
pub(crate) fn parse_merged<T>(
    base: &Table,
    assignments: &[Assignment],
    text: &str,
    parse: impl Fn(Table) -> Result<T, toml::de::Error>,
) -> Result<T, String> {
    let mut merged = base.clone();
    for a in assignments {
        // Only a key moved by the caller can meet a value here, when the file also replaced
        // the table it was moved into.
        set(&mut merged, &a.path, a.value.clone()).map_err(|i| {
            locate(
                text,
                a,
                &format!("`{}` is a value, not a section", a.path[i]),
            )
        })?;
    }
    let together = match parse(merged) {
        Ok(parsed) => return Ok(parsed),
        Err(e) => e,
    };
    for a in assignments {
        let mut alone = base.clone();
        if set(&mut alone, &a.path, a.value.clone()).is_err() {
            continue;
        }
        if let Err(e) = parse(alone) {
            return Err(locate(text, a, &about(&e, &a.written.join("."))));
        }
    }
    Err(one_line(&together))
}

/// The parser's message about `key`. The parser appends the path of the table it was reading
/// (`` in `hdd.mechanics` ``); that is said already when it is `key` or a table holding it, and
/// kept when it points inside `key` (a table the file replaced whole).
fn about(e: &toml::de::Error, key: &str) -> String {
    let full = one_line(e);
    let said = full
        .rsplit_once(" in `")
        .and_then(|(_, path)| path.strip_suffix('`'))
        .is_some_and(|path| key == path || key.starts_with(&format!("{path}.")));
    if said {
        e.message().trim_end().to_string()
    } else {
        full
    }
}

/// `message` about assignment `a`, naming its key and where `text` writes it.
fn locate(text: &str, a: &Assignment, message: &str) -> String {
    let key = a.written.join(".");
    match key_position(text, &a.written) {
        Some((line, column)) => format!("line {line}, column {column}: key `{key}`: {message}"),
        None => format!("key `{key}`: {message}"),
    }
}

/// The parser's message with the key path it appends on a line of its own (`in `a.b``) kept on
/// the same line, so the error stays one line like the others.
fn one_line(e: &toml::de::Error) -> String {
    e.to_string().trim_end().replace('\n', " ")
}

/// The line and column (from 1) at which `text` writes the key `path`, or the deepest enclosing
/// key it writes (a key inside an array of tables is found as the array's key).
pub(crate) fn key_position(text: &str, path: &[String]) -> Option<(usize, usize)> {
    let Node::Table(mut entries) = toml::from_str::<Node>(text).ok()? else {
        return None;
    };
    let mut found = None;
    for part in path {
        let Some((key, node)) = entries.into_iter().find(|(k, _)| k.get_ref() == part) else {
            break;
        };
        found = Some(key.span().start);
        match node {
            Node::Table(inner) => entries = inner,
            Node::Leaf => break,
        }
    }
    let offset = found?;
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    Some((line, column))
}

/// A TOML document's keys, each with the span at which it is written; values are not kept.
/// The TOML parser reports spans for keys in headers, dotted keys and inline tables alike.
enum Node {
    Table(Vec<(Spanned<String>, Node)>),
    Leaf,
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a TOML value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Spanned<String>>()? {
            entries.push((key, map.next_value::<Node>()?));
        }
        Ok(Node::Table(entries))
    }

    // An array's elements, even tables, are not descended into: an override replaces an array
    // whole, so its key is where any problem inside it is reported.
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Node::Leaf)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Node, E> {
        Ok(Node::Leaf)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Node, E> {
        Ok(Node::Leaf)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Node, E> {
        Ok(Node::Leaf)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Node, E> {
        Ok(Node::Leaf)
    }

    fn visit_str<E>(self, _: &str) -> Result<Node, E> {
        Ok(Node::Leaf)
    }
}
