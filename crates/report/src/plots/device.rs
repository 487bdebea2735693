//! The plots of a device's own counters, per model found in them: an SSD's write
//! amplification, traffic, energy and utilisation; a disk's cache, seeks and time; a hybrid
//! drive's routes and flushing.

use super::{
    array, line, spans_decades, unit_title, value_axis, CounterBars, Plots, Timeline, CAUSES,
};
use crate::chart::{self, Axis, Bars, Heat, Legend, Line, Style, XyChart};
use serde_json::Value;

/// A device's counters at the end, and their series when the document has one.
pub(super) struct Device<'a> {
    pub(super) counters: &'a serde_json::Map<String, Value>,
    pub(super) series: Option<(&'a Value, &'a Timeline)>,
}

impl Device<'_> {
    /// The counter `name` at the end, 0 when the device has none.
    pub(super) fn counter(&self, name: &str) -> f64 {
        self.counters
            .get(name)
            .and_then(Value::as_f64)
            .unwrap_or(0.0)
    }
    /// The series of the counter `name`, with its time axis.
    fn series(&self, name: &str) -> Option<(Vec<Option<f64>>, &Timeline)> {
        let (s, t) = self.series?;
        Some((array(s, &[name])?, t))
    }
    /// Counters named `<prefix><family>_<n><suffix>`, by n.
    fn numbered(&self, prefix: &str, family: &str, suffix: &str) -> Vec<(usize, String)> {
        let head = format!("{prefix}{family}_");
        let mut found: Vec<(usize, String)> = self
            .counters
            .keys()
            .filter_map(|k| {
                let n = k.strip_prefix(&head)?.strip_suffix(suffix)?.parse().ok()?;
                Some((n, k.clone()))
            })
            .collect();
        found.sort();
        found
    }
}

/// The counters of one model in a device's: under the prefix `p`, named in titles by
/// `title` and in plot ids by `tag`.
struct Unit<'p> {
    p: &'p str,
    title: String,
    tag: String,
}

impl<'p> Unit<'p> {
    /// The unit whose counters are under the prefix `p` (`""` for the device itself).
    fn of(p: &'p str) -> Unit<'p> {
        Unit {
            p,
            title: unit_title(p),
            tag: p.trim_end_matches('_').replace('_', "-"),
        }
    }

    /// The id of the plot `n` of this unit: `n`, followed by the unit's tag for a child.
    fn name(&self, n: &str) -> String {
        if self.tag.is_empty() {
            n.to_string()
        } else {
            format!("{n}-{}", self.tag)
        }
    }
}

/// The plots of the SSD whose counters are under the prefix `p`.
pub(super) fn ssd(plots: &mut Plots, dev: &Device, p: &str) {
    let u = Unit::of(p);
    ssd_over_time(plots, dev, &u);
    ssd_traffic(plots, dev, &u);
    for (family, label) in [("die", "Die"), ("channel", "Channel")] {
        utilisation(
            plots,
            dev,
            p,
            family,
            label,
            &u.name(&format!("{family}-utilisation")),
        );
    }
}

/// An SSD's write amplification and its flash programs by cause over time.
fn ssd_over_time(plots: &mut Plots, dev: &Device, u: &Unit) {
    let (p, unit) = (u.p, &u.title);
    let Some((waf, t)) = dev.series(&format!("{p}write_amplification")) else {
        return;
    };
    plots.xy(
        &u.name("waf-over-time"),
        &format!("series.device.{p}write_amplification"),
        XyChart {
            title: format!("Write amplification over time{unit}"),
            x: Axis::linear(&t.title),
            y: Axis::linear("WAF so far (flash programs / host page writes)"),
            lines: vec![line("WAF", t.points(&waf, 1.0), 0, Style::Solid)],
            legend: Legend::LowerRight,
        },
    );
    let lines: Vec<Line> = CAUSES
        .iter()
        .enumerate()
        .filter_map(|(i, (cause, label))| {
            let (v, t) = dev.series(&format!("{p}flash_programs_{cause}"))?;
            let rate = t.rate(&v);
            let points = t.points(&rate, 1.0);
            points
                .iter()
                .any(|q| q.1 > 0.0)
                .then(|| line(*label, points, i, Style::Solid))
        })
        .collect();
    let y = value_axis("page programs/s", &lines);
    plots.xy(
        &u.name("gc-traffic-over-time"),
        &format!("series.device.{p}flash_programs_<cause>, per window"),
        XyChart {
            title: format!("Flash programs by cause over time{unit}"),
            x: Axis::linear(&t.title),
            y,
            lines,
            legend: Legend::UpperLeft,
        },
    );
}

/// An SSD's flash operations and energy by cause, over the whole run.
fn ssd_traffic(plots: &mut Plots, dev: &Device, u: &Unit) {
    let (p, unit) = (u.p, &u.title);
    let by = |op: &str| -> Vec<f64> {
        CAUSES
            .iter()
            .map(|(cause, _)| dev.counter(&format!("{p}flash_{op}_{cause}")))
            .collect()
    };
    let series = vec![
        ("reads".to_string(), by("reads")),
        ("programs".to_string(), by("programs")),
        ("erases".to_string(), by("erases")),
    ];
    let all: Vec<f64> = series.iter().flat_map(|s| s.1.clone()).collect();
    let y_title = "flash operations";
    plots.bars(
        &u.name("traffic-by-cause"),
        &format!("device.counters.{p}flash_{{reads,programs,erases}}_<cause>"),
        Bars {
            title: format!("Flash traffic by cause{unit}"),
            x_title: "cause".into(),
            y: if spans_decades(all.into_iter()) {
                Axis::log(y_title)
            } else {
                Axis::linear(y_title)
            },
            categories: CAUSES.iter().map(|c| c.1.to_string()).collect(),
            series,
            ranges: Vec::new(),
        },
    );
    let mut causes: Vec<(&str, &str)> = CAUSES.to_vec();
    causes.push(("idle", "idle"));
    plots.counter_bars(
        &u.name("energy-by-cause"),
        &format!("device.counters.{p}energy_<cause>_uj"),
        dev,
        CounterBars {
            title: format!("Flash energy by cause{unit}"),
            x_title: "cause",
            y: Axis::linear("energy (mJ)"),
            series: "energy",
            per_unit: 1e3,
            bars: causes
                .iter()
                .map(|(c, l)| (format!("{p}energy_{c}_uj"), *l))
                .collect(),
        },
    );
}

/// A family of utilisation counters (dies, channels): a heat map over time when there are
/// many, lines when few, bars of the whole run without a series.
fn utilisation(plots: &mut Plots, dev: &Device, p: &str, family: &str, label: &str, id: &str) {
    let units = dev.numbered(p, family, "_utilisation");
    if units.is_empty() {
        return;
    }
    let unit = unit_title(p);
    let title = format!("{label} utilisation{unit}");
    let source = format!("series.device.{p}{family}_<n>_utilisation");
    let elapsed = dev
        .series(&format!("{p}utilisation_elapsed_ns"))
        .map(|s| s.0);
    let per_window: Option<Vec<Vec<Option<f64>>>> = units
        .iter()
        .map(|(_, k)| {
            dev.series(k)
                .map(|(v, t)| t.window_fraction(&v, elapsed.as_deref()))
        })
        .collect();
    let t = dev.series.map(|s| s.1);
    match (per_window, t) {
        (Some(rows), Some(t)) if units.len() > 8 => {
            // At most about 100 columns, averaging neighbouring windows, to keep the page light.
            let windows = t.ends.len();
            let group = windows.div_ceil(100).max(1);
            let mut edges = vec![0.0];
            let mut cells = vec![Vec::new(); rows.len()];
            for start in (0..windows).step_by(group) {
                let stop = (start + group).min(windows);
                edges.push(t.ends[stop - 1]);
                for (r, row) in rows.iter().enumerate() {
                    let vals: Vec<f64> = row[start..stop].iter().filter_map(|v| *v).collect();
                    cells[r].push(
                        (!vals.is_empty()).then(|| vals.iter().sum::<f64>() / vals.len() as f64),
                    );
                }
            }
            let svg = chart::heat(&Heat {
                title: title.clone(),
                x_title: t.title.clone(),
                y_title: format!("{family} number"),
                x_edges: edges,
                rows: cells,
                value_title: "busy".into(),
            });
            plots.push(id, &title, &source, svg);
        }
        (Some(rows), Some(t)) => {
            let lines = units
                .iter()
                .zip(&rows)
                .enumerate()
                .map(|(i, ((n, _), row))| {
                    line(format!("{family} {n}"), t.points(row, 1.0), i, Style::Solid)
                })
                .collect();
            plots.xy(
                id,
                &source,
                XyChart {
                    title,
                    x: Axis::linear(&t.title),
                    y: Axis::linear("busy fraction in the window"),
                    lines,
                    legend: Legend::UpperRight,
                },
            );
        }
        _ => plots.bars(
            id,
            &format!("device.counters.{p}{family}_<n>_utilisation"),
            Bars {
                title: format!("{title}, whole run"),
                x_title: format!("{family} number"),
                y: Axis::linear("busy fraction of the run"),
                categories: units.iter().map(|(n, _)| n.to_string()).collect(),
                series: vec![(
                    "utilisation".into(),
                    units.iter().map(|(_, k)| dev.counter(k)).collect(),
                )],
                ranges: Vec::new(),
            },
        ),
    }
}

/// The plots of the disk whose counters are under the prefix `p`.
pub(super) fn hdd(plots: &mut Plots, dev: &Device, p: &str) {
    let u = Unit::of(p);
    hdd_cache(plots, dev, &u);
    hdd_seeks(plots, dev, &u);
    hdd_time(plots, dev, &u);
}

/// A disk's reads by cache outcome, and its hit rate over time.
fn hdd_cache(plots: &mut Plots, dev: &Device, u: &Unit) {
    let (p, unit) = (u.p, &u.title);
    let outcomes = [
        ("cache_read_hits", "hit"),
        ("cache_read_partial_hits", "partial hit"),
        ("read_ahead_hits", "read-ahead hit"),
        ("cache_read_misses", "miss"),
    ];
    plots.counter_bars(
        &u.name("hdd-cache"),
        &format!("device.counters.{p}{{cache_read_hits,cache_read_partial_hits,read_ahead_hits,cache_read_misses}}"),
        dev,
        CounterBars {
            title: format!("Disk cache: reads by outcome{unit}"),
            x_title: "outcome",
            y: Axis::linear("reads"),
            series: "reads",
            per_unit: 1.0,
            bars: outcomes.iter().map(|(k, l)| (format!("{p}{k}"), *l)).collect(),
        },
    );
    if let Some((hits, t)) = dev.series(&format!("{p}cache_read_hits")) {
        let rate = |k: &str| dev.series(&format!("{p}{k}")).map(|(v, t)| t.rate(&v));
        let (h, partial, miss) = (
            t.rate(&hits),
            rate("cache_read_partial_hits").unwrap_or_default(),
            rate("cache_read_misses").unwrap_or_default(),
        );
        let ratio: Vec<Option<f64>> = (0..h.len())
            .map(|i| {
                let hit = h[i]?;
                let total = hit
                    + partial.get(i).copied().flatten().unwrap_or(0.0)
                    + miss.get(i).copied().flatten().unwrap_or(0.0);
                (total > 0.0).then(|| hit / total)
            })
            .collect();
        plots.xy(
            &u.name("hdd-cache-over-time"),
            &format!("series.device.{p}cache_read_{{hits,partial_hits,misses}}, per window"),
            XyChart {
                title: format!("Disk cache hit rate over time{unit}"),
                x: Axis::linear(&t.title),
                y: Axis::linear("read hits / reads in the window"),
                lines: vec![line("hit rate", t.points(&ratio, 1.0), 0, Style::Solid)],
                legend: Legend::UpperRight,
            },
        );
    }
}

/// A disk's mean seek distance over time and its histogram of seek distances.
fn hdd_seeks(plots: &mut Plots, dev: &Device, u: &Unit) {
    let (p, unit) = (u.p, &u.title);
    if let Some((seek, t)) = dev.series(&format!("{p}mean_seek_cylinders")) {
        plots.xy(
            &u.name("hdd-seek-over-time"),
            &format!("series.device.{p}mean_seek_cylinders"),
            XyChart {
                title: format!("Mean seek distance so far{unit}"),
                x: Axis::linear(&t.title),
                y: Axis::linear("mean seek distance (cylinders)"),
                lines: vec![line("mean seek", t.points(&seek, 1.0), 2, Style::Solid)],
                legend: Legend::UpperRight,
            },
        );
    }
    // The seek-distance histogram's buckets are named by their bounds
    // (`seek_cylinders_hist_4_7`, `..._524288_up`); the JSON sorts them as text.
    let head = format!("{p}seek_cylinders_hist_");
    let mut buckets: Vec<(u64, String, f64)> = dev
        .counters
        .iter()
        .filter_map(|(k, v)| {
            let bounds = k.strip_prefix(&head)?;
            let low: u64 = bounds.split('_').next()?.parse().ok()?;
            // Each bucket by its lower bound, short enough for twenty of them side by side.
            let label = if low >= 1024 {
                format!("{}k", low / 1024)
            } else {
                low.to_string()
            };
            let label = if bounds.ends_with("_up") {
                format!("{label}+")
            } else {
                label
            };
            Some((low, label, v.as_f64()?))
        })
        .collect();
    buckets.sort_by_key(|b| b.0);
    if !buckets.is_empty() {
        plots.bars(
            &u.name("hdd-seek-distance"),
            &format!("device.counters.{p}seek_cylinders_hist_*"),
            Bars {
                title: format!("Seek distances{unit}"),
                x_title: "distance (cylinders, each bucket from its lower bound; k = 1024)".into(),
                y: Axis::linear("seeks"),
                categories: buckets.iter().map(|b| b.1.clone()).collect(),
                series: vec![("seeks".into(), buckets.iter().map(|b| b.2).collect())],
                ranges: Vec::new(),
            },
        );
    }
}

/// A disk's media time split into seek, rotation and transfer, and its time by power state.
fn hdd_time(plots: &mut Plots, dev: &Device, u: &Unit) {
    let (p, unit) = (u.p, &u.title);
    let media = [
        ("seek_ns", "seek"),
        ("rotation_ns", "rotation"),
        ("transfer_ns", "transfer"),
    ];
    if media
        .iter()
        .any(|(k, _)| dev.counters.contains_key(&format!("{p}{k}")))
    {
        plots.counter_bars(
            &u.name("hdd-service-split"),
            &format!("device.counters.{p}{{seek_ns,rotation_ns,transfer_ns}}"),
            dev,
            CounterBars {
                title: format!("Disk media time: seek, rotation, transfer{unit}"),
                x_title: "part of the media time",
                y: Axis::linear("time (s)"),
                series: "time",
                per_unit: 1e9,
                bars: media.iter().map(|(k, l)| (format!("{p}{k}"), *l)).collect(),
            },
        );
    }
    let states = [
        ("busy_ns", "busy"),
        ("idle_ns", "idle"),
        ("standby_ns", "standby"),
    ];
    plots.counter_bars(
        &u.name("hdd-time-split"),
        &format!("device.counters.{p}{{busy_ns,idle_ns,standby_ns}}"),
        dev,
        CounterBars {
            title: format!("Disk time by state{unit}"),
            x_title: "state",
            y: Axis::linear("time (s)"),
            series: "time",
            per_unit: 1e9,
            bars: states
                .iter()
                .map(|(k, l)| (format!("{p}{k}"), *l))
                .collect(),
        },
    );
}

/// The plots of the hybrid drive whose counters are under the prefix `p`: where host
/// requests went, and its flushing to disk.
pub(super) fn hybrid(plots: &mut Plots, dev: &Device, p: &str) {
    let unit = unit_title(p);
    let routes = [
        ("flash", "to flash"),
        ("disk", "to disk"),
        ("split", "split"),
    ];
    plots.bars(
        "hybrid-route-split",
        &format!("device.counters.{p}host_{{reads,writes}}_{{flash,disk,split}}"),
        Bars {
            title: format!("Hybrid: where host requests went{unit}"),
            x_title: "operation".into(),
            y: Axis::linear("requests"),
            categories: vec!["reads".into(), "writes".into()],
            series: routes
                .iter()
                .map(|(r, label)| {
                    (
                        label.to_string(),
                        vec![
                            dev.counter(&format!("{p}host_reads_{r}")),
                            dev.counter(&format!("{p}host_writes_{r}")),
                        ],
                    )
                })
                .collect(),
            ranges: Vec::new(),
        },
    );
    let triggers = [
        ("on_demand", "on demand"),
        ("space", "space"),
        ("low_watermark", "low watermark"),
        ("idle", "idle"),
    ];
    let over_time: Vec<Line> = triggers
        .iter()
        .enumerate()
        .filter_map(|(i, (k, label))| {
            let (v, t) = dev.series(&format!("{p}flush_{k}_bytes"))?;
            Some(line(*label, t.points(&t.rate(&v), 1e-6), i, Style::Solid))
        })
        .collect();
    if let (false, Some((_, t))) = (over_time.is_empty(), dev.series) {
        if over_time.iter().any(|l| l.points.iter().any(|q| q.1 > 0.0)) {
            plots.xy(
                "hybrid-flush",
                &format!("series.device.{p}flush_<trigger>_bytes, per window"),
                XyChart {
                    title: format!("Hybrid: flushing to disk over time{unit}"),
                    x: Axis::linear(&t.title),
                    y: Axis::linear("flushed (MB/s)"),
                    lines: over_time,
                    legend: Legend::UpperRight,
                },
            );
            return;
        }
    }
    plots.counter_bars(
        "hybrid-flush",
        &format!("device.counters.{p}flush_<trigger>_bytes"),
        dev,
        CounterBars {
            title: format!("Hybrid: bytes flushed to disk by trigger{unit}"),
            x_title: "trigger",
            y: Axis::linear("flushed (MiB)"),
            series: "flushed",
            per_unit: 1048576.0,
            bars: triggers
                .iter()
                .map(|(k, l)| (format!("{p}flush_{k}_bytes"), *l))
                .collect(),
        },
    );
}
