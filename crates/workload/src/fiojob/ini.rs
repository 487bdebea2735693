//! fio's ini dialect: `[section]` headers, `key=value` lines and bare flags, comments from `;`
//! or `#` to the end of a line (fio strips them anywhere on a line), spaces around keys and
//! values ignored.
//!
//! Hand-written rather than an ini crate: fio's comments, bare flags and repeated sections
//! (two jobs may share a name, a later `[global]` adds to the earlier ones) are its own, and
//! every error must name the line.

/// One `key=value` line or bare flag, with its line number from 1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Entry {
    pub line: usize,
    /// The option's name, in lower case.
    pub key: String,
    /// Its value; `None` for a bare flag (`time_based`).
    pub value: Option<String>,
}

/// A `[name]` section and its lines, in the file's order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Section {
    pub line: usize,
    pub name: String,
    pub entries: Vec<Entry>,
}

impl Section {
    /// Whether this is a `[global]` section, whose options every later job inherits.
    pub fn is_global(&self) -> bool {
        self.name.eq_ignore_ascii_case("global")
    }
}

/// Splits a job file into its sections. The error is a line number and what is wrong there.
pub(super) fn sections(text: &str) -> Result<Vec<Section>, (usize, String)> {
    let mut sections: Vec<Section> = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let content = raw
            .find([';', '#'])
            .map_or(raw, |comment| &raw[..comment])
            .trim();
        if content.is_empty() {
            continue;
        }
        if let Some(inner) = content.strip_prefix('[') {
            let Some(name) = inner.strip_suffix(']') else {
                return Err((
                    line,
                    format!("`{content}`: expected a section header [NAME]"),
                ));
            };
            let name = name.trim();
            if name.is_empty() || name.contains(['[', ']']) {
                return Err((
                    line,
                    format!("`{content}`: expected a section header [NAME]"),
                ));
            }
            sections.push(Section {
                line,
                name: name.to_string(),
                entries: Vec::new(),
            });
            continue;
        }
        let (key, value) = match content.split_once('=') {
            Some((key, value)) => (key.trim(), Some(value.trim().to_string())),
            None => (content, None),
        };
        if key.is_empty() || key.contains(char::is_whitespace) {
            return Err((
                line,
                format!("`{content}`: expected OPTION=VALUE or OPTION"),
            ));
        }
        if let Some(value) = &value {
            refuse_expansion(value).map_err(|why| (line, format!("{key}={value}: {why}")))?;
        }
        let Some(section) = sections.last_mut() else {
            return Err((
                line,
                format!(
                    "`{content}` comes before any section: options belong to [global] or a job"
                ),
            ));
        };
        section.entries.push(Entry {
            line,
            key: key.to_ascii_lowercase(),
            value,
        });
    }
    Ok(sections)
}

/// Refuses what fio would expand at run time (environment variables, its reserved keywords,
/// arithmetic), which would make the run depend on the machine.
fn refuse_expansion(value: &str) -> Result<(), String> {
    if value.contains("${") {
        return Err(
            "environment variables are not expanded: write the value itself, so that the run \
             does not depend on the environment"
                .into(),
        );
    }
    if value.contains('$') {
        return Err(
            "fio's reserved keywords ($pagesize, $mb_memory, $ncpus) depend on the machine: \
             write the value itself"
                .into(),
        );
    }
    if value.starts_with('(') {
        return Err("arithmetic expressions are not evaluated: write the value itself".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_keep_their_lines_and_comments_go() {
        let text = "; a job file\n\
                    [global]\n\
                    ioengine=null  # inline\n\
                    \n\
                    [seq-read]\n\
                    rw = read ; trailing\n\
                    time_based\n";
        let sections = sections(text).unwrap();
        assert_eq!(sections.len(), 2);
        assert!(sections[0].is_global());
        assert_eq!(sections[0].entries[0].line, 3);
        assert_eq!(sections[0].entries[0].value.as_deref(), Some("null"));
        assert_eq!(sections[1].name, "seq-read");
        assert_eq!(sections[1].line, 5);
        assert_eq!(sections[1].entries[0].key, "rw");
        assert_eq!(sections[1].entries[0].value.as_deref(), Some("read"));
        assert_eq!(sections[1].entries[1].value, None);
    }

    #[test]
    fn malformed_lines_are_refused_with_their_line() {
        for (text, line, wanted) in [
            ("rw=read\n", 1, "before any section"),
            ("[job\n", 1, "section header"),
            ("[job]\nrw read\n", 2, "OPTION=VALUE"),
            ("[job]\nsize=${SIZE}\n", 2, "environment variables"),
            ("[job]\nsize=8*$mb_memory\n", 2, "reserved keywords"),
            ("[job]\nsize=(1+2)\n", 2, "arithmetic"),
        ] {
            let (at, message) = sections(text).unwrap_err();
            assert_eq!(at, line, "{text:?}");
            assert!(message.contains(wanted), "{text:?}: {message}");
        }
    }
}
