//! The device file's `[faults]` section (docs/faults.md): the faults layer's rules, read with
//! every key checked and errors naming the file, line and key; and the one function that puts
//! the layer over a built device.

use crate::ConfigError;
use serde::Deserialize;
use storsim_core::{Device, Op};
use storsim_faults::{Delay, FaultKind, FaultPlan, FaultRule, FaultsDevice};
use toml::Spanned;

/// The file's top level as far as faults go: every other key is the models' business.
#[derive(Deserialize)]
struct FaultsFile {
    faults: Option<FaultsSection>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FaultsSection {
    host_timeout_ms: Option<Spanned<f64>>,
    #[serde(default)]
    rule: Vec<RuleSection>,
}

/// One `[[faults.rule]]`, or the keys of a control socket's `fault add`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleSection {
    kind: Spanned<String>,
    op: Option<Spanned<String>>,
    rate_per_million: Option<Spanned<u32>>,
    lba_start: Option<Spanned<u64>>,
    lba_end: Option<Spanned<u64>>,
    from_request: Option<Spanned<u64>>,
    from_ms: Option<Spanned<f64>>,
    duration_ms: Option<Spanned<f64>>,
    delay: Option<Spanned<String>>,
    latency_us: Option<Spanned<f64>>,
    latency_min_us: Option<Spanned<f64>>,
    latency_max_us: Option<Spanned<f64>>,
}

/// Where an error points: the file and the text, to turn a key's span into a line.
struct At<'a> {
    file: &'a str,
    text: &'a str,
}

impl At<'_> {
    fn error(&self, span: std::ops::Range<usize>, key: &str, message: String) -> ConfigError {
        let line = self.text[..span.start.min(self.text.len())]
            .matches('\n')
            .count()
            + 1;
        ConfigError::Invalid {
            file: format!("{}:{line}", self.file),
            key: key.to_string(),
            message,
        }
    }
}

/// The `[faults]` section of device-file `text`, if it has one, as a plan (seed 1 until the
/// driver sets the run's).
pub(crate) fn parse_faults(text: &str, file: &str) -> Result<Option<FaultPlan>, ConfigError> {
    let parsed: FaultsFile = toml::from_str(text).map_err(|e| ConfigError::Syntax {
        file: file.to_string(),
        message: e.to_string(),
    })?;
    let Some(section) = parsed.faults else {
        return Ok(None);
    };
    let at = At { file, text };
    let mut plan = FaultPlan::default();
    if let Some(timeout) = &section.host_timeout_ms {
        plan.host_timeout_ns = positive_ns(&at, timeout, "faults.host_timeout_ms", 1e6)?;
    }
    for rule in &section.rule {
        plan.rules.push(rule_from(&at, rule, "faults.rule.")?);
    }
    Ok(Some(plan))
}

/// A rule from the control socket's `fault add` arguments: `KEY=VALUE` words with the keys of a
/// `[[faults.rule]]` (`kind=read_error lba_start=0 lba_end=2048`); a bare word is a string.
/// Errors name the key (and `source`, the command).
pub fn parse_fault_rule(words: &[&str], source: &str) -> Result<FaultRule, ConfigError> {
    let mut text = String::new();
    for word in words {
        let Some((key, value)) = word.split_once('=') else {
            return Err(ConfigError::Invalid {
                file: source.to_string(),
                key: word.to_string(),
                message: "a fault is KEY=VALUE words, as in kind=read_error rate_per_million=1000"
                    .into(),
            });
        };
        let value = value.trim();
        let quoted = if toml::from_str::<toml::Table>(&format!("v = {value}")).is_ok() {
            value.to_string()
        } else {
            toml::Value::String(value.to_string()).to_string()
        };
        text.push_str(&format!("{} = {quoted}\n", key.trim()));
    }
    let rule: RuleSection = toml::from_str(&text).map_err(|e| ConfigError::Syntax {
        file: source.to_string(),
        message: e.message().to_string(),
    })?;
    rule_from(
        &At {
            file: source,
            text: &text,
        },
        &rule,
        "",
    )
}

fn positive_ns(
    at: &At,
    value: &Spanned<f64>,
    key: &str,
    ns_per_unit: f64,
) -> Result<u64, ConfigError> {
    let v = *value.get_ref();
    if !(v.is_finite() && v > 0.0 && v * ns_per_unit < u64::MAX as f64 / 2.0) {
        return Err(at.error(
            value.span(),
            key,
            format!("must be a positive number, got {v}"),
        ));
    }
    Ok((v * ns_per_unit).round() as u64)
}

fn rule_from(at: &At, r: &RuleSection, prefix: &str) -> Result<FaultRule, ConfigError> {
    let key = |name: &str| format!("{prefix}{name}");
    let kind = FaultKind::from_name(r.kind.get_ref()).ok_or_else(|| {
        at.error(
            r.kind.span(),
            &key("kind"),
            format!(
                "unknown fault kind '{}'; one of {}",
                r.kind.get_ref(),
                FaultKind::ALL.map(FaultKind::name).join(", ")
            ),
        )
    })?;
    let mut rule = FaultRule::always(kind);
    if let Some(op) = &r.op {
        rule.op = Some(match op.get_ref().as_str() {
            "read" => Op::Read,
            "write" => Op::Write,
            "trim" => Op::Trim,
            "flush" => Op::Flush,
            other => {
                return Err(at.error(
                    op.span(),
                    &key("op"),
                    format!("unknown operation '{other}'; one of read, write, trim, flush"),
                ))
            }
        });
    }
    if let Some(rate) = &r.rate_per_million {
        rule.rate_per_million = *rate.get_ref();
    }
    match (&r.lba_start, &r.lba_end) {
        (Some(start), Some(end)) => rule.sectors = Some((*start.get_ref(), *end.get_ref())),
        (None, None) => {}
        (Some(s), None) => {
            return Err(at.error(
                s.span(),
                &key("lba_end"),
                "lba_start needs lba_end (the first sector past the range)".into(),
            ))
        }
        (None, Some(e)) => {
            return Err(at.error(
                e.span(),
                &key("lba_start"),
                "lba_end needs lba_start (the range's first sector)".into(),
            ))
        }
    }
    if let Some(n) = &r.from_request {
        rule.from_request = *n.get_ref();
    }
    if let Some(t) = &r.from_ms {
        let v = *t.get_ref();
        if !(v.is_finite() && v >= 0.0) {
            return Err(at.error(
                t.span(),
                &key("from_ms"),
                format!("must be 0 or more, got {v}"),
            ));
        }
        rule.from_ns = (v * 1e6).round() as u64;
    }
    if let Some(d) = &r.duration_ms {
        rule.duration_ns = Some(positive_ns(at, d, &key("duration_ms"), 1e6)?);
    }
    let us = |v: &Option<Spanned<f64>>, name: &str| -> Result<Option<u64>, ConfigError> {
        v.as_ref()
            .map(|v| positive_ns(at, v, &key(name), 1e3))
            .transpose()
    };
    let latency = us(&r.latency_us, "latency_us")?;
    let min = us(&r.latency_min_us, "latency_min_us")?;
    let max = us(&r.latency_max_us, "latency_max_us")?;
    if let Some(delay) = &r.delay {
        let need = |v: Option<u64>, name: &str| {
            v.ok_or_else(|| {
                at.error(
                    delay.span(),
                    &key(name),
                    format!("delay = \"{}\" needs {name}", delay.get_ref()),
                )
            })
        };
        rule.delay = Some(match delay.get_ref().as_str() {
            "fixed" => Delay::Fixed {
                ns: need(latency, "latency_us")?,
            },
            "exponential" => Delay::Exponential {
                mean_ns: need(latency, "latency_us")?,
            },
            "uniform" => Delay::Uniform {
                min_ns: need(min, "latency_min_us")?,
                max_ns: need(max, "latency_max_us")?,
            },
            other => {
                return Err(at.error(
                    delay.span(),
                    &key("delay"),
                    format!("unknown delay '{other}'; one of fixed, uniform, exponential"),
                ))
            }
        });
    } else if let Some(v) = r
        .latency_us
        .as_ref()
        .or(r.latency_min_us.as_ref())
        .or(r.latency_max_us.as_ref())
    {
        return Err(at.error(
            v.span(),
            &key("delay"),
            "a latency needs delay = \"fixed\", \"uniform\" or \"exponential\"".into(),
        ));
    }
    rule.check().map_err(|e| {
        let span = match e.key {
            "rate_per_million" => r.rate_per_million.as_ref().map(Spanned::span),
            "lba_end" => r.lba_end.as_ref().map(Spanned::span),
            "op" => r.op.as_ref().map(Spanned::span),
            "from_request" => r.from_request.as_ref().map(Spanned::span),
            "delay" => r.delay.as_ref().map(Spanned::span),
            "latency_max_us" => r.latency_max_us.as_ref().map(Spanned::span),
            _ => None,
        }
        .unwrap_or_else(|| r.kind.span());
        at.error(span, &key(e.key), e.message)
    })?;
    Ok(rule)
}

/// The layers a description puts over its model: the faults layer when it has a `[faults]`
/// section (host → host interface → faults → model).
pub(crate) fn with_faults(model: Box<dyn Device>, plan: Option<&FaultPlan>) -> Box<dyn Device> {
    match plan {
        Some(plan) => Box::new(FaultsDevice::new(model, plan)),
        None => model,
    }
}
