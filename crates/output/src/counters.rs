//! The `counters` document and its text: what a device's counters are, from its descriptors.

use serde_json::{json, Value};
use storsim_core::{Described, Kind, Scope};

/// How the JSON names a kind of quantity.
fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Count => "count",
        Kind::Bytes => "bytes",
        Kind::Time => "time",
        Kind::Energy => "energy",
        Kind::Ratio => "ratio",
        Kind::Flag => "flag",
    }
}

/// The scope with the keys a keyed family takes, as the text and the JSON write it.
fn scope_text(scope: Scope) -> String {
    match scope {
        Scope::PerKey(keys) => format!("per key: {}", keys.join(", ")),
        other => other.label().to_string(),
    }
}

/// The JSON document of `storsim counters` for the device `name` of model `model`.
pub fn counters_json(
    name: &str,
    model: &str,
    descriptors: &[Described],
    command_line: &[String],
) -> Value {
    let counters: Vec<Value> = descriptors
        .iter()
        .map(|d| {
            let c = d.descriptor;
            json!({
                "name": d.full_name(),
                "unit": c.unit.symbol(),
                "kind": kind_name(c.unit.kind()),
                "scope": c.scope.label(),
                "keys": match c.scope {
                    Scope::PerKey(keys) => json!(keys),
                    _ => Value::Null,
                },
                "doc": c.doc,
            })
        })
        .collect();
    json!({
        "schema": crate::SCHEMA,
        "kind": "counters",
        "command_line": command_line,
        "version": crate::VERSION,
        "device": {"name": name, "model": model},
        "counters": counters,
    })
}

/// The text of `storsim counters`: one line per counter or family, with its unit, scope and
/// doc line, the columns as wide as their widest cell.
pub fn counters_text(name: &str, model: &str, descriptors: &[Described]) -> String {
    let rows: Vec<[String; 4]> = descriptors
        .iter()
        .map(|d| {
            [
                d.full_name(),
                d.descriptor.unit.symbol().to_string(),
                scope_text(d.descriptor.scope),
                d.descriptor.doc.to_string(),
            ]
        })
        .collect();
    let header = ["counter", "unit", "scope", "meaning"].map(String::from);
    let width = |c: usize| {
        std::iter::once(&header)
            .chain(&rows)
            .map(|r| r[c].chars().count())
            .max()
            .unwrap_or(0)
    };
    let (w0, w1, w2) = (width(0), width(1), width(2));
    let mut out = format!("{name} ({model}): {} counters\n", descriptors.len());
    for r in std::iter::once(&header).chain(&rows) {
        out += &format!("  {:<w0$}  {:<w1$}  {:<w2$}  {}\n", r[0], r[1], r[2], r[3]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use storsim_core::{CounterDescriptor, Unit};

    static DESCRIPTORS: [CounterDescriptor; 2] = [
        CounterDescriptor::new("busy_ns", Unit::Nanoseconds, "Time busy."),
        CounterDescriptor::family(
            "energy_{}_uj",
            Unit::Microjoules,
            Scope::PerKey(&["host", "gc"]),
            "Energy by cause.",
        ),
    ];

    #[test]
    fn every_descriptor_is_a_row_with_its_prefix_unit_and_scope() {
        let listed: Vec<Described> = Described::all(&DESCRIPTORS)
            .map(|d| d.within("flash_"))
            .collect();
        let text = counters_text("h", "hybrid", &listed);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(lines[2].starts_with("  flash_busy_ns "), "{text}");
        assert!(lines[3].contains("µJ") && lines[3].contains("per key: host, gc"));
        let doc = counters_json("h", "hybrid", &listed, &[]);
        assert_eq!(doc["counters"][1]["name"], "flash_energy_{}_uj");
        assert_eq!(doc["counters"][1]["kind"], "energy");
        assert_eq!(doc["counters"][0]["keys"], Value::Null);
    }
}
