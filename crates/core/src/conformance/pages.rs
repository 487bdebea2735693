//! The Counters tables of the model pages (`docs/models/NAME.md`), made from the models'
//! descriptors so that a page lists exactly what its model counts (each model's test checks
//! its page with `storsim_testenv::check_generated_block`).

use crate::counter::{CounterDescriptor, Scope};

/// The Markdown table of `descriptors`: one row each, with unit, scope and meaning.
pub fn counter_table(descriptors: &[&CounterDescriptor]) -> String {
    let mut out = String::from("| counter | unit | scope | meaning |\n|---|---|---|---|\n");
    for d in descriptors {
        let scope = match d.scope {
            Scope::PerKey(keys) => format!("per key: {}", keys.join(", ")),
            other => other.label().to_string(),
        };
        out += &format!(
            "| `{}` | {} | {} | {} |\n",
            d.name,
            d.unit.symbol(),
            scope,
            d.doc.replace('|', "\\|")
        );
    }
    out
}

/// The Counters table of each of `tables` (a page block's key and its descriptors), as a
/// model's page test checks them (`storsim_testenv::check_counter_tables`).
pub fn counter_tables<'a>(tables: &[(&'a str, &[CounterDescriptor])]) -> Vec<(&'a str, String)> {
    tables
        .iter()
        .map(|(key, descriptors)| {
            let all: Vec<&CounterDescriptor> = descriptors.iter().collect();
            (*key, counter_table(&all))
        })
        .collect()
}
