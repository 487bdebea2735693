//! The device and flow files an import writes: TOML text whose every value carries a comment
//! naming where it came from, so that a reader can check the mapping line by line.

use std::fmt::Write;

/// Sections in the order they were first given keys, the top level first.
#[derive(Clone, Debug, Default)]
pub(crate) struct TomlOut {
    header: Vec<String>,
    sections: Vec<(String, Vec<Entry>)>,
}

#[derive(Clone, Debug)]
struct Entry {
    key: String,
    value: toml::Value,
    origin: String,
}

impl TomlOut {
    /// A comment line at the top of the file.
    pub fn comment(&mut self, text: &str) {
        self.header.push(text.to_string());
    }

    /// Sets `key` of `section` (`""` for the top level, `ssd.timing`, or `[[flow]]`'s index
    /// as `flow.N`) to `value`, with `origin` as its comment. Setting a key again replaces it.
    pub fn put(&mut self, section: &str, key: &str, value: impl Into<toml::Value>, origin: &str) {
        let entry = Entry {
            key: key.to_string(),
            value: value.into(),
            origin: origin.to_string(),
        };
        let entries = match self.sections.iter().position(|(s, _)| s == section) {
            Some(i) => &mut self.sections[i].1,
            None => {
                // The top level goes first wherever it is first given a key.
                let at = if section.is_empty() {
                    0
                } else {
                    self.sections.len()
                };
                self.sections.insert(at, (section.to_string(), Vec::new()));
                &mut self.sections[at].1
            }
        };
        match entries.iter_mut().find(|e| e.key == key) {
            Some(e) => *e = entry,
            None => entries.push(entry),
        }
    }

    /// Places `sections` in this order, before any not yet given a key; a section left without
    /// keys is not written.
    pub fn order(&mut self, sections: &[&str]) {
        for section in sections {
            if !self.sections.iter().any(|(s, _)| s == section) {
                self.sections.push((section.to_string(), Vec::new()));
            }
        }
    }

    /// The file's text. Sections named `flow.N` are written as `[[flow]]` tables in order.
    pub fn text(&self) -> String {
        let mut s = String::new();
        for line in &self.header {
            let _ = writeln!(s, "# {line}");
        }
        for (section, entries) in self.sections.iter().filter(|(_, e)| !e.is_empty()) {
            if !section.is_empty() {
                let header = if section.starts_with("flow.") {
                    "[[flow]]".to_string()
                } else {
                    format!("[{section}]")
                };
                let _ = writeln!(s, "\n{header}");
            } else if !self.header.is_empty() {
                s.push('\n');
            }
            let width = entries
                .iter()
                .map(|e| e.key.len() + 3 + e.value.to_string().len())
                .max()
                .unwrap_or(0);
            for e in entries {
                let line = format!("{} = {}", e.key, e.value);
                if e.origin.is_empty() {
                    let _ = writeln!(s, "{line}");
                } else {
                    let _ = writeln!(s, "{line:width$}  # {}", e.origin);
                }
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_keep_their_order_and_values_their_origins() {
        let mut t = TomlOut::default();
        t.comment("made by a test");
        t.put("ssd.timing", "cell", "mlc", "Flash_Technology (line 3)");
        t.put("", "model", "ssd", "");
        t.put("ssd", "seed", 7, "Seed (line 2)");
        t.put(
            "ssd.timing",
            "erase_us",
            3800.0,
            "Block_Erase_Latency (line 9)",
        );
        t.put("ssd.timing", "cell", "tlc", "again");
        let text = t.text();
        let parsed: toml::Table = text.parse().unwrap();
        assert_eq!(parsed["model"].as_str(), Some("ssd"));
        assert_eq!(parsed["ssd"]["timing"]["cell"].as_str(), Some("tlc"));
        assert_eq!(parsed["ssd"]["seed"].as_integer(), Some(7));
        assert!(
            text.starts_with("# made by a test\n\nmodel = \"ssd\"\n"),
            "{text}"
        );
        assert!(
            text.contains("erase_us = 3800.0  # Block_Erase_Latency (line 9)"),
            "{text}"
        );
    }

    #[test]
    fn an_ordered_section_without_keys_is_left_out() {
        let mut t = TomlOut::default();
        t.order(&["", "ssd", "ssd.dftl", "ssd.timing"]);
        t.put("ssd.timing", "cell", "mlc", "");
        t.put("ssd", "seed", 1, "");
        let text = t.text();
        assert!(!text.contains("[ssd.dftl]"), "{text}");
        assert!(
            text.find("[ssd]").unwrap() < text.find("[ssd.timing]").unwrap(),
            "{text}"
        );
    }

    #[test]
    fn flow_sections_become_an_array_of_tables() {
        let mut t = TomlOut::default();
        t.put("flow.0", "name", "a", "");
        t.put("flow.1", "name", "b", "");
        let parsed: toml::Table = t.text().parse().unwrap();
        let flows = parsed["flow"].as_array().unwrap();
        assert_eq!(flows.len(), 2);
        assert_eq!(flows[1]["name"].as_str(), Some("b"));
    }
}
