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

/// The rule `r` states, its keys named with `prefix` before them in errors.
fn rule_from(at: &At, r: &RuleSection, prefix: &str) -> Result<FaultRule, ConfigError> {
    let c = RuleAt { at, r, prefix };
    let mut rule = FaultRule::always(c.kind()?);
    if let Some(op) = &r.op {
        rule.op = Some(c.op(op)?);
    }
    if let Some(rate) = &r.rate_per_million {
        rule.rate_per_million = *rate.get_ref();
    }
    rule.sectors = c.sectors()?;
    if let Some(n) = &r.from_request {
        rule.from_request = *n.get_ref();
    }
    if let Some(t) = &r.from_ms {
        rule.from_ns = c.start_ns(t)?;
    }
    if let Some(d) = &r.duration_ms {
        rule.duration_ns = Some(positive_ns(at, d, &c.key("duration_ms"), 1e6)?);
    }
    rule.delay = c.delay()?;
    c.check(&rule)?;
    Ok(rule)
}

/// A rule section being read: where its errors point, and the prefix naming its keys.
struct RuleAt<'a> {
    at: &'a At<'a>,
    r: &'a RuleSection,
    prefix: &'a str,
}

impl RuleAt<'_> {
    /// The key `name` as errors name it.
    fn key(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    /// An error at `span`, naming the key `name`.
    fn error(&self, span: std::ops::Range<usize>, name: &str, message: String) -> ConfigError {
        self.at.error(span, &self.key(name), message)
    }

    /// The fault kind `kind` names.
    fn kind(&self) -> Result<FaultKind, ConfigError> {
        let kind = &self.r.kind;
        FaultKind::from_name(kind.get_ref()).ok_or_else(|| {
            self.error(
                kind.span(),
                "kind",
                format!(
                    "unknown fault kind '{}'; one of {}",
                    kind.get_ref(),
                    FaultKind::ALL.map(FaultKind::name).join(", ")
                ),
            )
        })
    }

    /// The operation `op` names.
    fn op(&self, op: &Spanned<String>) -> Result<Op, ConfigError> {
        Ok(match op.get_ref().as_str() {
            "read" => Op::Read,
            "write" => Op::Write,
            "trim" => Op::Trim,
            "flush" => Op::Flush,
            other => {
                return Err(self.error(
                    op.span(),
                    "op",
                    format!("unknown operation '{other}'; one of read, write, trim, flush"),
                ))
            }
        })
    }

    /// The sector range `lba_start`..`lba_end`, given both or neither.
    fn sectors(&self) -> Result<Option<(u64, u64)>, ConfigError> {
        match (&self.r.lba_start, &self.r.lba_end) {
            (Some(start), Some(end)) => Ok(Some((*start.get_ref(), *end.get_ref()))),
            (None, None) => Ok(None),
            (Some(s), None) => Err(self.error(
                s.span(),
                "lba_end",
                "lba_start needs lba_end (the first sector past the range)".into(),
            )),
            (None, Some(e)) => Err(self.error(
                e.span(),
                "lba_start",
                "lba_end needs lba_start (the range's first sector)".into(),
            )),
        }
    }

    /// `from_ms` in nanoseconds: 0 or more.
    fn start_ns(&self, t: &Spanned<f64>) -> Result<u64, ConfigError> {
        let v = *t.get_ref();
        if !(v.is_finite() && v >= 0.0) {
            return Err(self.error(t.span(), "from_ms", format!("must be 0 or more, got {v}")));
        }
        Ok((v * 1e6).round() as u64)
    }

    /// The delay `delay` names, with the latencies it needs; an error for a latency without
    /// a delay.
    fn delay(&self) -> Result<Option<Delay>, ConfigError> {
        let r = self.r;
        let us = |v: &Option<Spanned<f64>>, name: &str| -> Result<Option<u64>, ConfigError> {
            v.as_ref()
                .map(|v| positive_ns(self.at, v, &self.key(name), 1e3))
                .transpose()
        };
        let latency = us(&r.latency_us, "latency_us")?;
        let min = us(&r.latency_min_us, "latency_min_us")?;
        let max = us(&r.latency_max_us, "latency_max_us")?;
        let Some(delay) = &r.delay else {
            return match r
                .latency_us
                .as_ref()
                .or(r.latency_min_us.as_ref())
                .or(r.latency_max_us.as_ref())
            {
                Some(v) => Err(self.error(
                    v.span(),
                    "delay",
                    "a latency needs delay = \"fixed\", \"uniform\" or \"exponential\"".into(),
                )),
                None => Ok(None),
            };
        };
        let need = |v: Option<u64>, name: &str| {
            v.ok_or_else(|| {
                self.error(
                    delay.span(),
                    name,
                    format!("delay = \"{}\" needs {name}", delay.get_ref()),
                )
            })
        };
        Ok(Some(match delay.get_ref().as_str() {
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
                return Err(self.error(
                    delay.span(),
                    "delay",
                    format!("unknown delay '{other}'; one of fixed, uniform, exponential"),
                ))
            }
        }))
    }

    /// `rule`'s own check, its error pointing at the key it names (at `kind` when the
    /// section does not state that key).
    fn check(&self, rule: &FaultRule) -> Result<(), ConfigError> {
        let r = self.r;
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
            self.error(span, e.key, e.message)
        })
    }
}

/// The layers a description puts over its model: the faults layer when it has a `[faults]`
/// section (host → host interface → faults → model).
pub(crate) fn with_faults(model: Box<dyn Device>, plan: Option<&FaultPlan>) -> Box<dyn Device> {
    match plan {
        Some(plan) => Box::new(FaultsDevice::new(model, plan)),
        None => model,
    }
}
