//! `[step]`, `[step.read]` and `[step.write]`: the Wisconsin emulator's step model.

use super::{
    black_box_model, check_queue_depth, delay_us, invalid, missing, toml_int, us_of, Model,
    SequentialName,
};
use crate::ConfigError;
use serde::{Deserialize, Serialize};
use storsim_blackbox::step::{StepDevice, StepDirection, StepParams};
use storsim_blackbox::SequentialDetect;
use storsim_core::SimDuration;

#[derive(Deserialize, Serialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
struct DirectionSection {
    random_us: Option<f64>,
    sequential_us: Option<f64>,
    spike_us: Option<f64>,
    step_interval_requests: Option<Vec<u64>>,
    compensate_first_request: Option<bool>,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct StepSection {
    sequential: Option<SequentialName>,
    trim_latency_us: Option<f64>,
    flush_latency_us: Option<f64>,
    read: Option<DirectionSection>,
    write: Option<DirectionSection>,
}

/// Both directions, with their key prefixes.
fn directions<'a>(
    section: &'a StepSection,
    params: &'a mut StepParams,
) -> [(
    &'static str,
    Option<&'a DirectionSection>,
    &'a mut StepDirection,
); 2] {
    [
        ("step.read", section.read.as_ref(), &mut params.read),
        ("step.write", section.write.as_ref(), &mut params.write),
    ]
}

/// Parameters for a file that states `model = "step"` without a preset: the capacity and every
/// delay and schedule of both directions must be given. Compensation defaults to off, and
/// sequential detection to each direction's own previous request, as in the seed.
pub(crate) fn from_scratch(
    section: &StepSection,
    capacity_bytes: Option<u64>,
    file: &str,
) -> Result<StepParams, ConfigError> {
    let capacity_bytes = capacity_bytes.ok_or_else(|| missing(file, "capacity_bytes"))?;
    for (prefix, direction) in [("step.read", &section.read), ("step.write", &section.write)] {
        let d = direction.as_ref().ok_or_else(|| missing(file, prefix))?;
        let required = [
            ("random_us", d.random_us.is_some()),
            ("sequential_us", d.sequential_us.is_some()),
            ("spike_us", d.spike_us.is_some()),
            ("step_interval_requests", d.step_interval_requests.is_some()),
        ];
        if let Some((name, _)) = required.iter().find(|(_, present)| !present) {
            return Err(missing(file, &format!("{prefix}.{name}")));
        }
    }
    // Every value is overwritten by `apply` from the section checked above.
    let placeholder = StepDirection {
        random: SimDuration::ZERO,
        sequential: SimDuration::ZERO,
        spike: SimDuration::ZERO,
        step_interval_requests: Vec::new(),
        compensate_first_request: false,
    };
    Ok(StepParams {
        capacity_bytes,
        read: placeholder.clone(),
        write: placeholder,
        trim: SimDuration::ZERO,
        flush: SimDuration::ZERO,
        sequential_detect: SequentialDetect::PreviousSameDirection,
        queue_depth: 32,
    })
}

/// Overrides `params` with whatever the section states.
pub(crate) fn apply(
    section: &StepSection,
    params: &mut StepParams,
    file: &str,
) -> Result<(), ConfigError> {
    if let Some(s) = section.sequential {
        params.sequential_detect = s.detect();
    }
    if let Some(us) = section.trim_latency_us {
        params.trim = delay_us(file, "step.trim_latency_us", us)?;
    }
    if let Some(us) = section.flush_latency_us {
        params.flush = delay_us(file, "step.flush_latency_us", us)?;
    }
    for (prefix, d, target) in directions(section, params) {
        let Some(d) = d else { continue };
        let time = |name: &str, us: f64| delay_us(file, &format!("{prefix}.{name}"), us);
        if let Some(us) = d.random_us {
            target.random = time("random_us", us)?;
        }
        if let Some(us) = d.sequential_us {
            target.sequential = time("sequential_us", us)?;
        }
        if let Some(us) = d.spike_us {
            target.spike = time("spike_us", us)?;
        }
        if let Some(schedule) = &d.step_interval_requests {
            target.step_interval_requests = schedule.clone();
        }
        if let Some(c) = d.compensate_first_request {
            target.compensate_first_request = c;
        }
    }
    Ok(())
}

/// Checks the relations between parameters that single keys cannot.
pub(crate) fn validate(params: &StepParams, file: &str) -> Result<(), ConfigError> {
    if params.capacity_bytes == 0 {
        return Err(invalid(
            file,
            "capacity_bytes",
            "must be greater than 0".into(),
        ));
    }
    for (prefix, d) in [("step.read", &params.read), ("step.write", &params.write)] {
        let key = format!("{prefix}.step_interval_requests");
        if d.step_interval_requests.is_empty() {
            return Err(invalid(
                file,
                &key,
                "needs at least one interval (the last one repeats)".into(),
            ));
        }
        if let Some(i) = d.step_interval_requests.iter().position(|&k| k == 0) {
            return Err(invalid(
                file,
                &format!("{key}[{i}]"),
                "must be at least 1 request".into(),
            ));
        }
    }
    check_queue_depth(file, params.queue_depth)
}

/// A complete device file for `p`, from scratch: `model = "step"`, the capacity and queue depth,
/// and a `[step]` section stating every key of both directions, compensation included.
/// [`crate::blackbox_device_toml`] checks that it reads back.
pub(crate) fn device_toml(p: &StepParams) -> Result<String, String> {
    #[derive(Serialize)]
    struct File<'a> {
        model: &'static str,
        capacity_bytes: u64,
        queue_depth: usize,
        step: &'a StepSection,
    }
    toml_int("step", "capacity_bytes", p.capacity_bytes)?;
    toml_int("step", "queue_depth", p.queue_depth as u64)?;
    for (prefix, d) in [("step.read", &p.read), ("step.write", &p.write)] {
        for (i, &k) in d.step_interval_requests.iter().enumerate() {
            toml_int("step", &format!("{prefix}.step_interval_requests[{i}]"), k)?;
        }
    }
    let direction = |d: &StepDirection| {
        Some(DirectionSection {
            random_us: Some(us_of(d.random)),
            sequential_us: Some(us_of(d.sequential)),
            spike_us: Some(us_of(d.spike)),
            step_interval_requests: Some(d.step_interval_requests.clone()),
            compensate_first_request: Some(d.compensate_first_request),
        })
    };
    let section = StepSection {
        sequential: Some(SequentialName::of(p.sequential_detect)),
        trim_latency_us: Some(us_of(p.trim)),
        flush_latency_us: Some(us_of(p.flush)),
        read: direction(&p.read),
        write: direction(&p.write),
    };
    toml::to_string(&File {
        model: Step::NAME,
        capacity_bytes: p.capacity_bytes,
        queue_depth: p.queue_depth,
        step: &section,
    })
    .map_err(|e| format!("cannot write the `step` description as TOML: {e}"))
}

black_box_model! {
    /// The step model's entry in the model table.
    Step {
        name: "step",
        description: "Wisconsin step model: read and write delays that step up with the run of sequential requests",
        params: StepParams,
        section: StepSection,
        device: StepDevice,
    }
}
