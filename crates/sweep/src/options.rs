//! The simulate options a spec may set (`[options]`, a point's `options`), named as
//! `storsim simulate`'s long flags with `_` for `-`. The sweep owns the outputs, the device,
//! the workload and the seed, so those are not among them.

/// What a value of an option is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A flag: `true` gives it, `false` leaves it out.
    Flag,
    /// A whole number.
    Integer,
    /// A number.
    Number,
    /// A word or a number (`window = "10ms"`, `trace_devices = 2`).
    Word,
}

/// The options, in the order a point's command line gives them.
const OPTIONS: [(&str, Kind); 17] = [
    ("replay", Kind::Word),
    ("iodepth", Kind::Integer),
    ("time_scale", Kind::Number),
    ("wrap", Kind::Flag),
    ("on_refused", Kind::Word),
    ("max_requests", Kind::Integer),
    ("window", Kind::Word),
    ("format", Kind::Word),
    ("skip_bad", Kind::Flag),
    ("trace_devices", Kind::Word),
    ("blkparse_event", Kind::Word),
    ("parse_thread", Kind::Word),
    ("precondition", Kind::Word),
    ("retries", Kind::Integer),
    ("retry_delay", Kind::Word),
    ("latency_includes_failed", Kind::Flag),
    ("fairness", Kind::Flag),
];

/// A checked option value.
#[derive(Clone, Debug, PartialEq)]
pub enum OptionValue {
    /// A flag given or not.
    Flag(bool),
    /// Anything else, as the command line writes it.
    Text(String),
}

/// Checks the options of a table named `table` in the spec; `Err((key, message))` names the
/// first one refused.
pub(crate) fn check_all(
    entries: &[(String, toml::Value)],
    table: &str,
) -> Result<Vec<(String, OptionValue)>, (String, String)> {
    entries
        .iter()
        .map(|(key, value)| {
            let name = format!("{table}.{key}");
            let Some(&(_, kind)) = OPTIONS.iter().find(|(n, _)| n == key) else {
                let known: Vec<&str> = OPTIONS.iter().map(|(n, _)| *n).collect();
                return Err((
                    name,
                    format!(
                        "not an option a sweep sets (known: {}; the device, workload, seed and \
                         outputs are the sweep's own)",
                        known.join(", ")
                    ),
                ));
            };
            let text = match (kind, value) {
                (Kind::Flag, toml::Value::Boolean(b)) => {
                    return Ok((key.clone(), OptionValue::Flag(*b)))
                }
                (Kind::Integer, toml::Value::Integer(i)) if *i >= 0 => i.to_string(),
                (Kind::Number, toml::Value::Integer(i)) => i.to_string(),
                (Kind::Number, toml::Value::Float(f)) if f.is_finite() => f.to_string(),
                (Kind::Word, toml::Value::String(s)) => s.clone(),
                (Kind::Word, toml::Value::Integer(i)) => i.to_string(),
                _ => {
                    let expected = match kind {
                        Kind::Flag => "true or false",
                        Kind::Integer => "a whole number >= 0",
                        Kind::Number => "a number",
                        Kind::Word => "a string",
                    };
                    return Err((name, format!("expected {expected}, got {value}")));
                }
            };
            Ok((key.clone(), OptionValue::Text(text)))
        })
        .collect()
}

/// Options `over` laid on `base`: a key in both takes `over`'s value, in `base`'s place.
pub(crate) fn merged(
    base: &[(String, OptionValue)],
    over: &[(String, OptionValue)],
) -> Vec<(String, OptionValue)> {
    let mut out = base.to_vec();
    for (key, value) in over {
        match out.iter_mut().find(|(k, _)| k == key) {
            Some(entry) => entry.1 = value.clone(),
            None => out.push((key.clone(), value.clone())),
        }
    }
    // In the table's order, so that the same options give the same command line (and point
    // identity) however the spec orders them.
    out.sort_by_key(|(key, _)| OPTIONS.iter().position(|(n, _)| n == key));
    out
}

/// The command-line arguments of `options`.
pub(crate) fn arguments(options: &[(String, OptionValue)]) -> Vec<String> {
    let mut args = Vec::new();
    for (key, value) in options {
        let flag = format!("--{}", key.replace('_', "-"));
        match value {
            OptionValue::Flag(true) => args.push(flag),
            OptionValue::Flag(false) => {}
            OptionValue::Text(text) => {
                args.push(flag);
                args.push(text.clone());
            }
        }
    }
    args
}
