//! Reading run documents: which kind each is, and refusing what the report cannot draw.

use crate::SCHEMA;
use serde_json::Value;
use std::fmt;
use std::path::Path;

/// The kinds of document a report draws.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `storsim simulate --json`.
    Simulate,
    /// `storsim cosim --report`.
    Cosim,
    /// `storsim emulate --json`.
    Emulate,
    /// `storsim calibrate --report`.
    Calibrate,
    /// `storsim validate trace --json` or `validate disksim --json`: simulated response times
    /// beside measured ones.
    Validate,
}

impl Kind {
    /// The name documents give the kind in their `kind` key.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Simulate => "simulate",
            Kind::Cosim => "cosim",
            Kind::Emulate => "emulate",
            Kind::Calibrate => "calibrate",
            Kind::Validate => "validate",
        }
    }
}

/// Why a file cannot be drawn. Each names the file; every one is the user's input to fix.
#[derive(Debug, Clone, PartialEq)]
pub enum ReportError {
    /// The file could not be read.
    Read { file: String, message: String },
    /// The file is not JSON.
    NotJson { file: String, message: String },
    /// The file is JSON but no storsim run document (`what` says what it looks like).
    NotARun { file: String, what: String },
    /// The document is of a newer shape than this storsim knows.
    NewerSchema { file: String, schema: u64 },
    /// A rendered plot could not be turned into a PNG.
    Png { plot: String, message: String },
}

impl fmt::Display for ReportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReportError::Read { file, message } => write!(f, "{file}: cannot read it: {message}"),
            ReportError::NotJson { file, message } => {
                write!(f, "{file}: not a JSON document: {message}")
            }
            ReportError::NotARun { file, what } => write!(
                f,
                "{file}: not a storsim run document ({what}); storsim report draws the JSON of \
                 simulate --json, cosim --report, emulate --json, calibrate --report and \
                 validate --json"
            ),
            ReportError::NewerSchema { file, schema } => write!(
                f,
                "{file}: written with schema {schema}, newer than this storsim's {SCHEMA}: \
                 draw it with the storsim that wrote it, or a newer one"
            ),
            ReportError::Png { plot, message } => {
                write!(f, "plot {plot}: cannot render it as PNG: {message}")
            }
        }
    }
}

impl std::error::Error for ReportError {}

/// One run document, checked: its kind is known and its schema is one this code reads.
#[derive(Clone, Debug)]
pub struct Run {
    /// The file it came from, as the user named it.
    pub file: String,
    /// What kind of document it is.
    pub kind: Kind,
    /// The document itself.
    pub doc: Value,
}

impl Run {
    /// Reads and checks the document at `path`.
    pub fn read(path: &Path) -> Result<Run, ReportError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ReportError::Read {
            file: file.clone(),
            message: e.to_string(),
        })?;
        Run::parse(&file, &text)
    }

    /// Checks the document `text`, read from `file`.
    pub fn parse(file: &str, text: &str) -> Result<Run, ReportError> {
        let doc: Value = serde_json::from_str(text).map_err(|e| ReportError::NotJson {
            file: file.to_string(),
            message: e.to_string(),
        })?;
        Run::from_value(file, doc)
    }

    /// Checks an already parsed document (as `simulate --report` has it in memory).
    pub fn from_value(file: &str, doc: Value) -> Result<Run, ReportError> {
        let not_a_run = |what: &str| ReportError::NotARun {
            file: file.to_string(),
            what: what.to_string(),
        };
        let Some(object) = doc.as_object() else {
            return Err(not_a_run("not a JSON object"));
        };
        let Some(schema) = object.get("schema").and_then(Value::as_u64) else {
            return Err(not_a_run("no \"schema\" number"));
        };
        if schema > u64::from(SCHEMA) {
            return Err(ReportError::NewerSchema {
                file: file.to_string(),
                schema,
            });
        }
        let kind = match object.get("kind").and_then(Value::as_str) {
            Some("simulate") => Kind::Simulate,
            Some("cosim") => Kind::Cosim,
            Some("emulate") => Kind::Emulate,
            Some("calibrate") => Kind::Calibrate,
            Some("validate") => Kind::Validate,
            Some(other) => {
                return Err(not_a_run(&format!(
                    "a \"{other}\" document, which holds no run to draw"
                )))
            }
            None => infer_kind(object).map_err(not_a_run)?,
        };
        if let Some(series) = object.get("series").filter(|s| !s.is_null()) {
            check_series(series).map_err(|what| not_a_run(&what))?;
        }
        Ok(Run {
            file: file.to_string(),
            kind,
            doc,
        })
    }
}

/// The most windows a series may have: storsim writes at most 8,192; more would only make the
/// page (and its drawing) as large as the document asks.
const SERIES_WINDOWS_MAX: u64 = 1 << 20;

/// A `series` is drawn only if it is what storsim writes: a positive window width, a sane
/// number of windows, and every array in it one entry per window.
fn check_series(series: &Value) -> Result<(), String> {
    let windows = series
        .get("windows")
        .and_then(Value::as_u64)
        .filter(|&n| n <= SERIES_WINDOWS_MAX)
        .ok_or_else(|| {
            format!("series.windows is not a number of windows up to {SERIES_WINDOWS_MAX}")
        })?;
    if series
        .get("window_ns")
        .and_then(Value::as_u64)
        .is_none_or(|w| w == 0)
    {
        return Err("series.window_ns is not a positive whole number of nanoseconds".into());
    }
    fn arrays(v: &Value, path: &str, windows: u64) -> Result<(), String> {
        match v {
            Value::Array(a) if a.len() as u64 != windows => Err(format!(
                "{path} has {} entries for {windows} windows",
                a.len()
            )),
            Value::Object(o) => o
                .iter()
                .try_for_each(|(k, v)| arrays(v, &format!("{path}.{k}"), windows)),
            _ => Ok(()),
        }
    }
    arrays(series, "series", windows)
}

/// A document written before `kind` existed (the first documents of schema 1): its kind from
/// the keys only it has. This is the fallback for those files alone: every document storsim
/// writes today declares its `kind`, which [`Run::from_value`] reads first
/// (`crates/cli/tests/json_schema.rs` checks that each kind's current document is read by its
/// declaration), so no current document's kind is guessed.
fn infer_kind(object: &serde_json::Map<String, Value>) -> Result<Kind, &'static str> {
    // Only the first validate documents had no kind; they compared measured access times.
    let has = |key: &str| object.contains_key(key);
    if has("calibration") && has("plan") {
        Ok(Kind::Calibrate)
    } else if has("lateness") && has("model") {
        Ok(Kind::Emulate)
    } else if has("program") && has("summary") {
        Ok(Kind::Cosim)
    } else if has("summary") && has("device") && has("workload") {
        Ok(Kind::Simulate)
    } else if has("demerit_ms") && has("measured") {
        Ok(Kind::Validate)
    } else if has("size_histogram") {
        Err("an inspect document, which holds no run to draw")
    } else {
        Err("none of the keys of a simulate, cosim, emulate, calibrate or validate document")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kinds_are_inferred_from_keys_when_kind_is_missing() {
        let cases = [
            (
                json!({"schema": 1, "summary": {}, "device": {}, "workload": {}}),
                Kind::Simulate,
            ),
            (
                json!({"schema": 1, "summary": {}, "device": {}, "program": {}}),
                Kind::Cosim,
            ),
            (
                json!({"schema": 1, "model": {}, "device": {}, "lateness": {}}),
                Kind::Emulate,
            ),
            (
                json!({"schema": 1, "plan": {}, "calibration": {}}),
                Kind::Calibrate,
            ),
            (
                json!({"schema": 1, "demerit_ms": 1.0, "simulated": {}, "measured": {}}),
                Kind::Validate,
            ),
        ];
        for (doc, kind) in cases {
            assert_eq!(Run::from_value("x.json", doc).unwrap().kind, kind);
        }
        // An explicit kind wins over the keys.
        let doc =
            json!({"schema": 1, "kind": "cosim", "summary": {}, "device": {}, "workload": {}});
        assert_eq!(Run::from_value("x.json", doc).unwrap().kind, Kind::Cosim);
    }

    #[test]
    fn bad_input_is_an_error_naming_the_file_and_the_fault() {
        let e = Run::parse("a.json", "not json").unwrap_err();
        assert!(matches!(&e, ReportError::NotJson { file, .. } if file == "a.json"));
        assert!(
            e.to_string().starts_with("a.json: not a JSON document"),
            "{e}"
        );

        let e = Run::parse("b.json", "[1, 2]").unwrap_err();
        assert!(matches!(e, ReportError::NotARun { .. }), "{e}");

        let e = Run::parse("c.json", r#"{"summary": {}}"#).unwrap_err();
        assert!(e.to_string().contains("no \"schema\""), "{e}");

        let e = Run::parse("d.json", r#"{"schema": 1, "demerit_ms": 1.0}"#).unwrap_err();
        assert!(matches!(e, ReportError::NotARun { .. }), "{e}");

        let e = Run::parse("e.json", r#"{"schema": 1, "kind": "inspect"}"#).unwrap_err();
        assert!(e.to_string().contains("\"inspect\""), "{e}");

        let e = Run::parse("f.json", r#"{"schema": 1, "hello": 2}"#).unwrap_err();
        assert!(matches!(e, ReportError::NotARun { .. }), "{e}");

        let newer = format!(
            r#"{{"schema": {}, "summary": {{}}, "device": {{}}, "workload": {{}}}}"#,
            SCHEMA + 1
        );
        let e = Run::parse("g.json", &newer).unwrap_err();
        assert_eq!(
            e,
            ReportError::NewerSchema {
                file: "g.json".into(),
                schema: u64::from(SCHEMA) + 1
            }
        );
        assert!(e.to_string().contains("newer"), "{e}");

        let e = Run::read(Path::new("/nonexistent/h.json")).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("/nonexistent/h.json: cannot read"),
            "{e}"
        );
    }

    #[test]
    fn a_series_not_of_storsim_shape_is_refused_naming_the_field() {
        let doc = |series: Value| {
            json!({"schema": 1, "kind": "simulate", "summary": {}, "device": {},
                "workload": {}, "series": series})
        };
        let good = json!({"windows": 2, "window_ns": 10, "ops": {"all": {"iops": [1.0, 2.0]}}});
        assert!(Run::from_value("ok.json", doc(good)).is_ok());
        assert!(Run::from_value("off.json", doc(Value::Null)).is_ok());
        for (series, fault) in [
            (
                json!({"windows": 2, "window_ns": 10, "ops": {"all": {"iops": [1.0]}}}),
                "series.ops.all.iops has 1 entries for 2 windows",
            ),
            (json!({"windows": 1e12, "window_ns": 10}), "series.windows"),
            (json!({"windows": 2, "window_ns": 0}), "series.window_ns"),
            (json!({"window_ns": 10}), "series.windows"),
        ] {
            let e = Run::from_value("s.json", doc(series)).unwrap_err();
            assert!(e.to_string().starts_with("s.json: "), "{e}");
            assert!(e.to_string().contains(fault), "{e}");
        }
    }
}
