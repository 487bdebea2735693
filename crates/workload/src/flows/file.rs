//! The flow file: `[[flow]]` tables read with every key checked, errors naming the file, the
//! line and the key.

use super::arg::{check, set_key};
use super::{is_generator, FlowSpec, FLOW_KEYS};
use crate::WorkloadError;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use toml::Spanned;

/// The file as written: nothing but `[[flow]]` tables.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Document {
    #[serde(default)]
    flow: Vec<Spanned<BTreeMap<Spanned<String>, Spanned<toml::Value>>>>,
}

/// Whether `path` is a flow file rather than a trace: its name ends in `.toml`, or its first
/// line that is neither blank nor a comment is `[[flow]]`. No trace format starts so.
/// `crate::trace::identify` asks the same and detects a trace's format with the same look.
pub fn is_flow_file(path: &Path) -> bool {
    if has_flow_file_name(path) {
        return true;
    }
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    // The first 4 KiB are enough for a few comment lines; a binary trace stops the search.
    let mut head = Vec::new();
    if file.take(4096).read_to_end(&mut head).is_err() {
        return false;
    }
    starts_as_flow_file(&head)
}

/// Whether `path`'s name says it is a flow file: it ends in `.toml`.
pub(crate) fn has_flow_file_name(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("toml"))
}

/// Whether a file starting with `head` is a flow file: its first line that is neither blank
/// nor a comment, within the first 4 KiB, is `[[flow]]`.
pub(crate) fn starts_as_flow_file(head: &[u8]) -> bool {
    let head = &head[..head.len().min(4096)];
    for line in head.split(|&b| b == b'\n') {
        let Ok(line) = std::str::from_utf8(line) else {
            return false;
        };
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        return line.replace(' ', "") == "[[flow]]";
    }
    false
}

/// Reads the flow file `path`: one [`FlowSpec`] per `[[flow]]` table, in the file's order, a
/// relative trace path taken from the file's folder. Errors name the file, the line and the
/// key: an unknown key, a value of the wrong kind, a flow without a workload, a file with no
/// flow.
pub fn read_file(path: &Path) -> Result<Vec<FlowSpec>, WorkloadError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|error| WorkloadError::Io {
        source: name.clone(),
        error,
    })?;
    let folder = path.parent().unwrap_or(Path::new(""));
    parse(&text, &name, folder)
}

/// Reads a flow file's `text`; `name` stands for the file in messages and `folder` is where
/// relative trace paths start.
fn parse(text: &str, name: &str, folder: &Path) -> Result<Vec<FlowSpec>, WorkloadError> {
    let error = |message: String| WorkloadError::Spec {
        message: format!("{name}: {message}"),
    };
    let document: Document = toml::from_str(text).map_err(|e| {
        let line = e.span().map_or(String::new(), |s| {
            format!("line {}: ", line_of(text, s.start))
        });
        error(format!("{line}{}", e.message()))
    })?;
    if document.flow.is_empty() {
        return Err(error(
            "no flow: a flow file lists its flows as [[flow]] tables, each with a workload".into(),
        ));
    }
    let mut flows = Vec::with_capacity(document.flow.len());
    for (index, table) in document.flow.iter().enumerate() {
        let at = |offset: usize| format!("line {}", line_of(text, offset));
        let Some((_, workload)) = table
            .get_ref()
            .iter()
            .find(|(k, _)| k.get_ref() == "workload")
        else {
            return Err(error(format!(
                "{}: flow {index} has no workload (a trace file or a generator spec)",
                at(table.span().start)
            )));
        };
        let Some(workload_text) = workload.get_ref().as_str() else {
            return Err(error(format!(
                "{}: workload: expected a trace file or a generator spec as a string",
                at(workload.span().start)
            )));
        };
        let workload_text = if is_generator(workload_text) {
            workload_text.to_string()
        } else {
            folder.join(workload_text).display().to_string()
        };
        let mut spec = FlowSpec::new(index, &workload_text);
        for (key, value) in table.get_ref() {
            let key_name = key.get_ref().as_str();
            if key_name == "workload" {
                continue;
            }
            if !FLOW_KEYS.contains(&key_name) {
                return Err(error(format!(
                    "{}: unknown key `{key_name}` in flow {index}: expected workload or one of {}",
                    at(key.span().start),
                    FLOW_KEYS.join(", ")
                )));
            }
            let value_text = as_text(value.get_ref()).ok_or_else(|| {
                error(format!(
                    "{}: {key_name}: expected a string, a number or a list of numbers",
                    at(value.span().start)
                ))
            })?;
            set_key(&mut spec, key_name, &value_text).map_err(|e| {
                error(format!(
                    "{}: {key_name}: expected {e}",
                    at(value.span().start)
                ))
            })?;
        }
        check(&spec).map_err(|e| error(format!("{}: {e}", at(table.span().start))))?;
        if flows.iter().any(|f: &FlowSpec| f.name == spec.name) {
            return Err(error(format!(
                "{}: two flows are named {}",
                at(table.span().start),
                spec.name
            )));
        }
        flows.push(spec);
    }
    Ok(flows)
}

/// A value in the text form `--flow` takes: a string as it is, a number in decimal, a list
/// of numbers (or `a-b` strings) joined by `:`.
fn as_text(value: &toml::Value) -> Option<String> {
    match value {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Float(f) => Some(f.to_string()),
        toml::Value::Array(items) => {
            let parts: Option<Vec<String>> = items
                .iter()
                .map(|item| match item {
                    toml::Value::Integer(i) => Some(i.to_string()),
                    toml::Value::String(s) => Some(s.clone()),
                    _ => None,
                })
                .collect();
            parts.map(|p| p.join(":"))
        }
        _ => None,
    }
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flows::{Extent, PriorityClass};

    fn read(text: &str) -> Result<Vec<FlowSpec>, String> {
        parse(text, "f.toml", Path::new("dir")).map_err(|e| e.to_string())
    }

    #[test]
    fn a_flow_file_gives_its_flows_in_order() {
        let flows = read(
            "# two tenants\n\
             [[flow]]\n\
             name = \"reads\"\n\
             workload = \"synthetic:rw=randread,bs=4k,requests=10\"\n\
             class = \"urgent\"\n\
             queues = [2, 3]\n\
             channels = [0, 1]\n\
             \n\
             [[flow]]\n\
             workload = \"w100.csv\"\n\
             start = \"1ms\"\n\
             stop = \"1s\"\n\
             phase = 2\n\
             lba_offset = \"50%\"\n\
             lba_size = \"1g\"\n\
             iodepth = 8\n",
        )
        .unwrap();
        assert_eq!(flows.len(), 2);
        assert_eq!(flows[0].name, "reads");
        assert_eq!(flows[0].class, PriorityClass::Urgent);
        assert_eq!(flows[0].queues, vec![2, 3]);
        assert_eq!(flows[0].resources.as_ref().unwrap().channels, vec![0, 1]);
        assert_eq!(flows[1].name, "flow1");
        assert_eq!(
            flows[1].workload,
            Path::new("dir").join("w100.csv").display().to_string()
        );
        assert_eq!(flows[1].start_ns, 1_000_000);
        assert_eq!(flows[1].stop_ns, Some(1_000_000_000));
        assert_eq!((flows[0].phase, flows[1].phase), (0, 2));
        assert_eq!(flows[1].iodepth, Some(8));
        let lba = flows[1].lba.unwrap();
        assert_eq!(
            (lba.offset, lba.size),
            (Extent::Percent(50.0), Some(Extent::Bytes(1 << 30)))
        );
    }

    #[test]
    fn refused_flow_files_name_the_line_and_the_key() {
        for (text, wanted) in [
            (
                "[[flow]]\nworkload = \"a\"\nspeed = 3\n",
                "line 3: unknown key `speed`",
            ),
            (
                "[[flow]]\nworkload = \"a\"\nclass = \"top\"\n",
                "line 3: class: expected one of",
            ),
            ("[[flow]]\nname = \"x\"\n", "line 1: flow 0 has no workload"),
            ("[[flow]]\nworkload = 3\n", "line 2: workload"),
            ("[[flow]]\nworkload = \"a\"\nstart = 5\n", "line 3: start"),
            ("[[flow]]\nworkload = \"a\"\nphase = -1\n", "line 3: phase"),
            (
                "[[flow]]\nworkload = \"a\"\nqueues = [1.5]\n",
                "line 3: queues",
            ),
            ("[flows]\n", "unknown field"),
            ("", "no flow"),
            (
                "[[flow]]\nworkload = \"a\"\n[[flow]]\nworkload = \"b\"\nname = \"flow0\"\n",
                "two flows are named flow0",
            ),
            (
                "[[flow]]\nworkload = \"a\"\nstart = \"2s\"\nstop = \"1s\"\n",
                "stop must come after start",
            ),
        ] {
            let e = read(text).unwrap_err();
            assert!(e.starts_with("f.toml: "), "{e}");
            assert!(e.contains(wanted), "{text:?}: {e}");
        }
    }

    #[test]
    fn a_flow_file_is_recognised_by_its_name_or_its_first_table() {
        let dir = tempfile::tempdir().unwrap();
        let named = dir.path().join("x.toml");
        std::fs::write(&named, "anything").unwrap();
        let headed = dir.path().join("flows");
        std::fs::write(&headed, "# comment\n\n[[flow]]\nworkload = \"a\"\n").unwrap();
        let trace = dir.path().join("t.csv");
        std::fs::write(&trace, "128166372003061629,hm,0,Read,0,4096,100\n").unwrap();
        assert!(is_flow_file(&named));
        assert!(is_flow_file(&headed));
        assert!(!is_flow_file(&trace));
    }
}
