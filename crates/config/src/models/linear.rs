//! `[linear]`: the IBM linear model's parameters.

use super::{black_box_model, delay_us, non_negative, toml_int, us_of, Model, SequentialName};
use crate::ConfigError;
use serde::{Deserialize, Serialize};
use storsim_blackbox::linear::{LinearCost, LinearDevice, LinearParams};
use storsim_blackbox::{AccessPattern, SequentialDetect};
use storsim_core::SimDuration;

#[derive(Deserialize, Serialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub(crate) struct CostSection {
    a_us: Option<f64>,
    b_us_per_kib: Option<f64>,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct LinearSection {
    servers: Option<usize>,
    sequential: Option<SequentialName>,
    trim_latency_us: Option<f64>,
    flush_latency_us: Option<f64>,
    sr: Option<CostSection>,
    sw: Option<CostSection>,
    rr: Option<CostSection>,
    rw: Option<CostSection>,
}

impl LinearSection {
    fn cost_section(&self, pattern: AccessPattern) -> Option<&CostSection> {
        match pattern {
            AccessPattern::SequentialRead => self.sr.as_ref(),
            AccessPattern::SequentialWrite => self.sw.as_ref(),
            AccessPattern::RandomRead => self.rr.as_ref(),
            AccessPattern::RandomWrite => self.rw.as_ref(),
        }
    }
}

/// Parameters for a file that states `model = "linear"` without a preset: all four patterns and
/// the capacity must be given.
pub(crate) fn from_scratch(
    section: &LinearSection,
    capacity_bytes: Option<u64>,
    file: &str,
) -> Result<LinearParams, ConfigError> {
    let missing = |key: String| ConfigError::Invalid {
        file: file.to_string(),
        key,
        message: "is required when the file does not start from a preset".to_string(),
    };
    let capacity_bytes = capacity_bytes.ok_or_else(|| missing("capacity_bytes".into()))?;
    let mut costs = [LinearCost {
        fixed: SimDuration::ZERO,
        per_kib_ps: 0,
    }; 4];
    for pattern in AccessPattern::ALL {
        let name = pattern.short_name();
        let c = section
            .cost_section(pattern)
            .ok_or_else(|| missing(format!("linear.{name}")))?;
        let a = c
            .a_us
            .ok_or_else(|| missing(format!("linear.{name}.a_us")))?;
        let b = c
            .b_us_per_kib
            .ok_or_else(|| missing(format!("linear.{name}.b_us_per_kib")))?;
        costs[pattern.index()] = LinearCost {
            fixed: delay_us(file, &format!("linear.{name}.a_us"), a)?,
            per_kib_ps: per_kib_ps(file, &format!("linear.{name}.b_us_per_kib"), b)?,
        };
    }
    Ok(LinearParams {
        capacity_bytes,
        costs,
        trim: SimDuration::ZERO,
        flush: SimDuration::ZERO,
        sequential_detect: SequentialDetect::PreviousRequest,
        servers: 1,
        queue_depth: 32,
    })
}

/// Overrides `params` with whatever the section states.
pub(crate) fn apply(
    section: &LinearSection,
    params: &mut LinearParams,
    file: &str,
) -> Result<(), ConfigError> {
    if let Some(s) = section.servers {
        params.servers = s;
    }
    if let Some(s) = section.sequential {
        params.sequential_detect = s.detect();
    }
    if let Some(us) = section.trim_latency_us {
        params.trim = delay_us(file, "linear.trim_latency_us", us)?;
    }
    if let Some(us) = section.flush_latency_us {
        params.flush = delay_us(file, "linear.flush_latency_us", us)?;
    }
    for pattern in AccessPattern::ALL {
        let Some(c) = section.cost_section(pattern) else {
            continue;
        };
        let name = pattern.short_name();
        let cost = &mut params.costs[pattern.index()];
        if let Some(a) = c.a_us {
            cost.fixed = delay_us(file, &format!("linear.{name}.a_us"), a)?;
        }
        if let Some(b) = c.b_us_per_kib {
            cost.per_kib_ps = per_kib_ps(file, &format!("linear.{name}.b_us_per_kib"), b)?;
        }
    }
    Ok(())
}

/// Checks the relations between parameters that single keys cannot.
pub(crate) fn validate(params: &LinearParams, file: &str) -> Result<(), ConfigError> {
    let invalid = |key: &str, message: String| {
        Err(ConfigError::Invalid {
            file: file.to_string(),
            key: key.to_string(),
            message,
        })
    };
    if params.capacity_bytes == 0 {
        return invalid("capacity_bytes", "must be greater than 0".into());
    }
    if params.servers == 0 || params.servers > 65_536 {
        return invalid(
            "linear.servers",
            format!("must be 1..=65536, got {}", params.servers),
        );
    }
    super::check_queue_depth(file, params.queue_depth)
}

/// B from a file, in µs per KiB: at most one second per KiB, which is already far slower than
/// any device and keeps A + n·B of the largest request inside simulated time.
fn per_kib_ps(file: &str, key: &str, b_us_per_kib: f64) -> Result<u64, ConfigError> {
    let b = non_negative(file, key, b_us_per_kib)?;
    if b > 1e6 {
        return Err(super::invalid(
            file,
            key,
            format!("must be at most 1e6 µs per KiB, got {b}"),
        ));
    }
    Ok(LinearCost::from_us(0.0, b).per_kib_ps)
}

/// A complete device file for `p`, from scratch: `model = "linear"`, the capacity and queue
/// depth, and a `[linear]` section stating every key (B as `per_kib_ps / 1e6` µs per KiB, which
/// [`per_kib_ps`]'s `round(b * 1e6)` gives back exactly up to its limit of 1e12 ps).
/// [`crate::blackbox_device_toml`] checks that it reads back.
pub(crate) fn device_toml(p: &LinearParams) -> Result<String, String> {
    #[derive(Serialize)]
    struct File<'a> {
        model: &'static str,
        capacity_bytes: u64,
        queue_depth: usize,
        linear: &'a LinearSection,
    }
    toml_int("linear", "capacity_bytes", p.capacity_bytes)?;
    toml_int("linear", "queue_depth", p.queue_depth as u64)?;
    toml_int("linear", "linear.servers", p.servers as u64)?;
    let cost = |pattern: AccessPattern| {
        let c = p.cost(pattern);
        Some(CostSection {
            a_us: Some(us_of(c.fixed)),
            b_us_per_kib: Some(c.per_kib_ps as f64 / 1e6),
        })
    };
    let section = LinearSection {
        servers: Some(p.servers),
        sequential: Some(SequentialName::of(p.sequential_detect)),
        trim_latency_us: Some(us_of(p.trim)),
        flush_latency_us: Some(us_of(p.flush)),
        sr: cost(AccessPattern::SequentialRead),
        sw: cost(AccessPattern::SequentialWrite),
        rr: cost(AccessPattern::RandomRead),
        rw: cost(AccessPattern::RandomWrite),
    };
    toml::to_string(&File {
        model: Linear::NAME,
        capacity_bytes: p.capacity_bytes,
        queue_depth: p.queue_depth,
        linear: &section,
    })
    .map_err(|e| format!("cannot write the `linear` description as TOML: {e}"))
}

black_box_model! {
    /// The linear model's entry in the model table.
    Linear {
        name: "linear",
        description: "IBM black-box model: latency A + n·B per access pattern (sequential or random, read or write), N servers",
        params: LinearParams,
        section: LinearSection,
        device: LinearDevice,
    }
}
