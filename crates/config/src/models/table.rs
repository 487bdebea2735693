//! `[table]` and `[[table.row]]`: the co-simulation thesis' table model.

use super::{
    black_box_model, check_queue_depth, delay_us, invalid, missing, toml_int, us_of, Model,
    SequentialName,
};
use crate::ConfigError;
use serde::{Deserialize, Serialize};
use storsim_blackbox::table::{TableDevice, TableParams, TableRow};
use storsim_blackbox::{AccessPattern, SequentialDetect};
use storsim_core::SimDuration;

/// More channels than this is a typing error, not a device; the model allocates one slot each.
const CHANNELS_MAX: usize = 65_536;

#[derive(Deserialize, Serialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
struct RowSection {
    size_bytes: Option<u64>,
    sr_us: Option<f64>,
    sw_us: Option<f64>,
    rr_us: Option<f64>,
    rw_us: Option<f64>,
}

impl RowSection {
    fn time_us(&self, pattern: AccessPattern) -> Option<f64> {
        match pattern {
            AccessPattern::SequentialRead => self.sr_us,
            AccessPattern::SequentialWrite => self.sw_us,
            AccessPattern::RandomRead => self.rr_us,
            AccessPattern::RandomWrite => self.rw_us,
        }
    }
}

#[derive(Deserialize, Serialize, Clone, Debug, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct TableSection {
    channels: Option<usize>,
    speedup: Option<f64>,
    sequential: Option<SequentialName>,
    trim_latency_us: Option<f64>,
    flush_latency_us: Option<f64>,
    row: Option<Vec<RowSection>>,
}

/// The speedup factor S as the model keeps it, in thousandths.
pub(crate) fn speedup_milli(speedup: f64) -> Result<u64, String> {
    let milli = speedup * 1000.0;
    if speedup.is_finite() && (1.0..=1e9).contains(&milli.round()) {
        Ok(milli.round() as u64)
    } else {
        Err(format!(
            "must be a number from 0.001 to 1000000 (kept to three decimals), got {speedup}"
        ))
    }
}

pub(crate) fn check_channels(channels: usize) -> Result<usize, String> {
    if (1..=CHANNELS_MAX).contains(&channels) {
        Ok(channels)
    } else {
        Err(format!("must be 1..={CHANNELS_MAX}, got {channels}"))
    }
}

/// The file's rows, each with every key stated. They replace the preset's table as a whole,
/// because merging two tables row by row would silently mix two devices.
fn rows(rows: &[RowSection], file: &str) -> Result<Vec<TableRow>, ConfigError> {
    let mut out = Vec::with_capacity(rows.len());
    for (i, row) in rows.iter().enumerate() {
        let key = |name: &str| format!("table.row[{i}].{name}");
        let required = |name: &str| {
            invalid(
                file,
                &key(name),
                "every [[table.row]] needs size_bytes, sr_us, sw_us, rr_us and rw_us".into(),
            )
        };
        let size_bytes = row.size_bytes.ok_or_else(|| required("size_bytes"))?;
        let mut service = [SimDuration::ZERO; 4];
        for pattern in AccessPattern::ALL {
            let name = format!("{}_us", pattern.short_name());
            let value = row.time_us(pattern).ok_or_else(|| required(&name))?;
            service[pattern.index()] = delay_us(file, &key(&name), value)?;
        }
        out.push(TableRow {
            size_bytes,
            service,
        });
    }
    Ok(out)
}

/// Parameters for a file that states `model = "table"` without a preset: the capacity and at
/// least one row must be given; everything else has a default.
pub(crate) fn from_scratch(
    section: &TableSection,
    capacity_bytes: Option<u64>,
    file: &str,
) -> Result<TableParams, ConfigError> {
    let capacity_bytes = capacity_bytes.ok_or_else(|| missing(file, "capacity_bytes"))?;
    let row_sections = section
        .row
        .as_deref()
        .ok_or_else(|| missing(file, "table.row"))?;
    Ok(TableParams {
        capacity_bytes,
        rows: rows(row_sections, file)?,
        channels: 1,
        speedup_milli: 1000,
        trim: SimDuration::ZERO,
        flush: SimDuration::ZERO,
        sequential_detect: SequentialDetect::PreviousRequest,
        queue_depth: 32,
    })
}

/// Overrides `params` with whatever the section states.
pub(crate) fn apply(
    section: &TableSection,
    params: &mut TableParams,
    file: &str,
) -> Result<(), ConfigError> {
    if let Some(n) = section.channels {
        params.channels = check_channels(n).map_err(|m| invalid(file, "table.channels", m))?;
    }
    if let Some(s) = section.speedup {
        params.speedup_milli = speedup_milli(s).map_err(|m| invalid(file, "table.speedup", m))?;
    }
    if let Some(s) = section.sequential {
        params.sequential_detect = s.detect();
    }
    if let Some(us) = section.trim_latency_us {
        params.trim = delay_us(file, "table.trim_latency_us", us)?;
    }
    if let Some(us) = section.flush_latency_us {
        params.flush = delay_us(file, "table.flush_latency_us", us)?;
    }
    if let Some(row_sections) = &section.row {
        params.rows = rows(row_sections, file)?;
    }
    Ok(())
}

/// Checks the relations between parameters that single keys cannot.
pub(crate) fn validate(params: &TableParams, file: &str) -> Result<(), ConfigError> {
    if params.capacity_bytes == 0 {
        return Err(invalid(
            file,
            "capacity_bytes",
            "must be greater than 0".into(),
        ));
    }
    if params.rows.is_empty() {
        return Err(invalid(
            file,
            "table.row",
            "the table needs at least one [[table.row]]".into(),
        ));
    }
    for (i, pair) in params.rows.windows(2).enumerate() {
        if pair[1].size_bytes <= pair[0].size_bytes {
            return Err(invalid(
                file,
                &format!("table.row[{}].size_bytes", i + 1),
                format!(
                    "sizes must be strictly increasing, but {} follows {}",
                    pair[1].size_bytes, pair[0].size_bytes
                ),
            ));
        }
    }
    check_channels(params.channels).map_err(|m| invalid(file, "table.channels", m))?;
    if params.speedup_milli == 0 {
        return Err(invalid(
            file,
            "table.speedup",
            "must be greater than 0".into(),
        ));
    }
    check_queue_depth(file, params.queue_depth)
}

/// A complete device file for `p`, from scratch: `model = "table"`, the capacity and queue
/// depth, and a `[table]` section stating every key and every row (S as `speedup_milli / 1000`,
/// which [`speedup_milli`] gives back exactly). [`crate::blackbox_device_toml`] checks that it
/// reads back.
pub(crate) fn device_toml(p: &TableParams) -> Result<String, String> {
    #[derive(Serialize)]
    struct File<'a> {
        model: &'static str,
        capacity_bytes: u64,
        queue_depth: usize,
        table: &'a TableSection,
    }
    toml_int("table", "capacity_bytes", p.capacity_bytes)?;
    toml_int("table", "queue_depth", p.queue_depth as u64)?;
    toml_int("table", "table.channels", p.channels as u64)?;
    for (i, r) in p.rows.iter().enumerate() {
        toml_int("table", &format!("table.row[{i}].size_bytes"), r.size_bytes)?;
    }
    let rows = p
        .rows
        .iter()
        .map(|r| RowSection {
            size_bytes: Some(r.size_bytes),
            sr_us: Some(us_of(r.service(AccessPattern::SequentialRead))),
            sw_us: Some(us_of(r.service(AccessPattern::SequentialWrite))),
            rr_us: Some(us_of(r.service(AccessPattern::RandomRead))),
            rw_us: Some(us_of(r.service(AccessPattern::RandomWrite))),
        })
        .collect();
    let section = TableSection {
        channels: Some(p.channels),
        speedup: Some(p.speedup_milli as f64 / 1000.0),
        sequential: Some(SequentialName::of(p.sequential_detect)),
        trim_latency_us: Some(us_of(p.trim)),
        flush_latency_us: Some(us_of(p.flush)),
        row: Some(rows),
    };
    toml::to_string(&File {
        model: Table::NAME,
        capacity_bytes: p.capacity_bytes,
        queue_depth: p.queue_depth,
        table: &section,
    })
    .map_err(|e| format!("cannot write the `table` description as TOML: {e}"))
}

black_box_model! {
    /// The table model's entry in the model table.
    Table {
        name: "table",
        description: "Black-box table model: latency by request size and access pattern, interpolated; N channels and a speedup",
        params: TableParams,
        section: TableSection,
        device: TableDevice,
    }
}
