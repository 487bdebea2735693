//! The plots of a device's own counters, per model the document declares (`device.model`
//! and `device.parts`): an SSD's write amplification, traffic, energy and utilisation; a
//! disk's cache, seeks and time; a hybrid drive's routes and flushing. Each recipe names the
//! counters it draws by their models' descriptors, and finds a family's members (per cause,
//! per die, per bucket) through the descriptor rather than by taking names apart.

use super::{array, line, spans_decades, unit_title, value_axis, CounterBars, Plots, Timeline};
use crate::chart::{self, Axis, Bars, Heat, Legend, Line, Style, XyChart};
use crate::quantity::{Quantity, Scale};
use serde_json::Value;
use storsim_core::{CounterDescriptor, Described, Member, Scope, Unit};

/// A device's counters at the end, and their series when the document has one.
pub(super) struct Device<'a> {
    pub(super) counters: &'a serde_json::Map<String, Value>,
    pub(super) series: Option<(&'a Value, &'a Timeline)>,
}

impl<'a> Device<'a> {
    /// Every counter of the descriptor `d` under the prefix `p`, with the member of its
    /// family it is, in the document's order.
    fn members(&self, p: &str, d: &'static CounterDescriptor) -> Vec<(Member<'a>, &'a str, f64)> {
        let described = Described {
            prefix: p.to_string(),
            descriptor: d,
        };
        self.counters
            .iter()
            .filter_map(|(k, v)| Some((described.matches(k)?, k.as_str(), v.as_f64()?)))
            .collect()
    }

    /// The counter of the device-wide descriptor `d` under `p`: its name and value.
    fn find(&self, p: &str, d: &'static CounterDescriptor) -> Option<(&'a str, f64)> {
        self.members(p, d)
            .into_iter()
            .find(|m| m.0 == Member::Only)
            .map(|m| (m.1, m.2))
    }

    /// The member `key` of the keyed family `d` under `p`: its name and value.
    fn member(&self, p: &str, d: &'static CounterDescriptor, key: &str) -> Option<(&'a str, f64)> {
        self.members(p, d)
            .into_iter()
            .find(|m| m.0 == Member::Key(key))
            .map(|m| (m.1, m.2))
    }

    /// The value of the device-wide descriptor `d` under `p`, 0 when the device has none.
    fn value(&self, p: &str, d: &'static CounterDescriptor) -> f64 {
        self.find(p, d).map_or(0.0, |c| c.1)
    }

    /// The series of the counter named `name` in the document, with its time axis.
    fn series(&self, name: &str) -> Option<(Vec<Option<f64>>, &'a Timeline)> {
        let (s, t) = self.series?;
        Some((array(s, &[name])?, t))
    }

    /// The series of the device-wide descriptor `d` under `p`.
    fn series_of(
        &self,
        p: &str,
        d: &'static CounterDescriptor,
    ) -> Option<(&'a str, Vec<Option<f64>>, &'a Timeline)> {
        let (name, _) = self.find(p, d)?;
        let (v, t) = self.series(name)?;
        Some((name, v, t))
    }
}

/// The keys of a keyed family, in the order its model declares them.
fn keys(d: &CounterDescriptor) -> &'static [&'static str] {
    match d.scope {
        Scope::PerKey(keys) => keys,
        _ => &[],
    }
}

/// A key as a plot's category or legend writes it.
fn key_label(key: &str) -> String {
    key.replace('_', " ")
}

/// One model's part of a device's counters: under the prefix `p`, named in titles by `title`
/// and in plot ids by `tag`.
struct Part<'p> {
    p: &'p str,
    title: String,
    tag: String,
}

impl<'p> Part<'p> {
    /// The unit whose counters are under the prefix `p` (`""` for the device itself).
    fn of(p: &'p str) -> Part<'p> {
        Part {
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
    let u = Part::of(p);
    ssd_over_time(plots, dev, &u);
    ssd_traffic(plots, dev, &u);
    for (family, label, d) in [
        ("die", "Die", &storsim_ssd::DIE_UTILISATION),
        ("channel", "Channel", &storsim_ssd::CHANNEL_UTILISATION),
    ] {
        utilisation(
            plots,
            dev,
            &u,
            Family {
                name: family,
                label,
                descriptor: d,
            },
        );
    }
}

/// An SSD's write amplification and its flash programs by cause over time.
fn ssd_over_time(plots: &mut Plots, dev: &Device, u: &Part) {
    let (p, unit) = (u.p, &u.title);
    let Some((waf_name, waf, t)) = dev.series_of(p, &storsim_ssd::WRITE_AMPLIFICATION) else {
        return;
    };
    plots.xy(
        &u.name("waf-over-time"),
        &format!("series.device.{waf_name}"),
        XyChart {
            title: format!("Write amplification over time{unit}"),
            x: Axis::linear(&t.title),
            y: Axis::linear("WAF so far (flash programs / host page writes)"),
            lines: vec![line("WAF", t.points(&waf, 1.0), 0, Style::Solid)],
            legend: Legend::LowerRight,
        },
    );
    let programs = &storsim_ssd::FLASH_PROGRAMS_BY_CAUSE;
    let lines: Vec<Line> = keys(programs)
        .iter()
        .enumerate()
        .filter_map(|(i, cause)| {
            let (name, _) = dev.member(p, programs, cause)?;
            let (v, t) = dev.series(name)?;
            let rate = t.rate(&v);
            let points = t.points(&rate, 1.0);
            points
                .iter()
                .any(|q| q.1 > 0.0)
                .then(|| line(key_label(cause), points, i, Style::Solid))
        })
        .collect();
    let y = value_axis("flash page programs per second", &lines);
    plots.xy(
        &u.name("gc-traffic-over-time"),
        &format!("series.device.{p}{}, per window", programs.name),
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
fn ssd_traffic(plots: &mut Plots, dev: &Device, u: &Part) {
    let (p, unit) = (u.p, &u.title);
    let families = [
        ("reads", &storsim_ssd::FLASH_READS_BY_CAUSE),
        ("programs", &storsim_ssd::FLASH_PROGRAMS_BY_CAUSE),
        ("erases", &storsim_ssd::FLASH_ERASES_BY_CAUSE),
    ];
    let causes = keys(&storsim_ssd::FLASH_PROGRAMS_BY_CAUSE);
    let series: Vec<(String, Vec<f64>)> = families
        .iter()
        .map(|(label, d)| {
            let values = causes
                .iter()
                .map(|c| dev.member(p, d, c).map_or(0.0, |m| m.1))
                .collect();
            (label.to_string(), values)
        })
        .collect();
    let all: Vec<f64> = series.iter().flat_map(|s| s.1.clone()).collect();
    let y_title = "flash operations";
    plots.bars(
        &u.name("traffic-by-cause"),
        &counters_source(p, &families.map(|f| f.1)),
        Bars {
            title: format!("Flash traffic by cause{unit}"),
            x_title: "cause".into(),
            y: if spans_decades(all.into_iter()) {
                Axis::log(y_title)
            } else {
                Axis::linear(y_title)
            },
            categories: causes.iter().map(|c| key_label(c)).collect(),
            series,
            ranges: Vec::new(),
        },
    );
    let energy = &storsim_ssd::ENERGY_BY_CAUSE;
    let idle = &storsim_ssd::ENERGY_IDLE;
    let mut bars: Vec<(String, f64)> = keys(energy)
        .iter()
        .map(|c| (key_label(c), dev.member(p, energy, c).map_or(0.0, |m| m.1)))
        .collect();
    bars.push(("idle".into(), dev.value(p, idle)));
    plots.counter_bars(
        &u.name("energy-by-cause"),
        &format!("device.counters.{p}{{{},{}}}", energy.name, idle.name),
        CounterBars {
            title: format!("Flash energy by cause{unit}"),
            x_title: "cause",
            y_label: "energy",
            series: "energy",
            unit: energy.unit,
            bars,
        },
    );
}

/// A family of utilisation counters (per die, per channel) as a plot names it.
struct Family {
    /// What one member is, for axis titles (`die`).
    name: &'static str,
    /// The same for titles (`Die`).
    label: &'static str,
    descriptor: &'static CounterDescriptor,
}

/// The members of an indexed family under `p`, by index: each's index and counter name.
fn indexed<'a>(dev: &Device<'a>, p: &str, d: &'static CounterDescriptor) -> Vec<(u32, &'a str)> {
    let mut found: Vec<(u32, &str)> = dev
        .members(p, d)
        .into_iter()
        .filter_map(|(m, name, _)| match m {
            Member::Index(i) => Some((i, name)),
            _ => None,
        })
        .collect();
    found.sort_unstable();
    found
}

/// A family of utilisation counters (dies, channels): a heat map over time when there are
/// many, lines when few, bars of the whole run without a series.
fn utilisation(plots: &mut Plots, dev: &Device, u: &Part, f: Family) {
    let p = u.p;
    let id = u.name(&format!("{}-utilisation", f.name));
    let units = indexed(dev, p, f.descriptor);
    if units.is_empty() {
        return;
    }
    let title = format!("{} utilisation{}", f.label, u.title);
    let source = format!("series.device.{p}{}", f.descriptor.name);
    let elapsed = dev
        .series_of(p, &storsim_ssd::UTILISATION_ELAPSED)
        .map(|s| s.1);
    let per_window: Option<Vec<Vec<Option<f64>>>> = units
        .iter()
        .map(|(_, k)| {
            dev.series(k)
                .map(|(v, t)| t.window_fraction(&v, elapsed.as_deref()))
        })
        .collect();
    // Fractions are drawn as percentages, the unit the descriptor's ratio reads best in.
    let percent = Scale::of(Quantity::Of(f.descriptor.unit), 1.0);
    match (per_window, dev.series.map(|s| s.1)) {
        (Some(rows), Some(t)) if units.len() > 8 => {
            let svg = chart::heat(&heat_of(&rows, t, &title, f.name));
            plots.push(&id, &title, &source, svg);
        }
        (Some(rows), Some(t)) => {
            let lines = units
                .iter()
                .zip(&rows)
                .enumerate()
                .map(|(i, ((n, _), row))| {
                    let points = t.points(row, 1.0 / percent.divisor);
                    line(format!("{} {n}", f.name), points, i, Style::Solid)
                })
                .collect();
            plots.xy(
                &id,
                &source,
                XyChart {
                    title,
                    x: Axis::linear(&t.title),
                    y: Axis::linear(percent.title("busy share of the window")),
                    lines,
                    legend: Legend::UpperRight,
                },
            );
        }
        _ => plots.bars(
            &id,
            &format!("device.counters.{p}{}", f.descriptor.name),
            Bars {
                title: format!("{title}, whole run"),
                x_title: format!("{} number", f.name),
                y: Axis::linear(percent.title("busy share of the run")),
                categories: units.iter().map(|(n, _)| n.to_string()).collect(),
                series: vec![(
                    "utilisation".into(),
                    units
                        .iter()
                        .map(|(_, k)| {
                            percent
                                .apply(dev.counters.get(*k).and_then(Value::as_f64).unwrap_or(0.0))
                        })
                        .collect(),
                )],
                ranges: Vec::new(),
            },
        ),
    }
}

/// The heat map of many units' per-window busy fractions: at most about 100 columns,
/// averaging neighbouring windows, to keep the page light.
fn heat_of(rows: &[Vec<Option<f64>>], t: &Timeline, title: &str, family: &str) -> Heat {
    let windows = t.ends.len();
    let group = windows.div_ceil(100).max(1);
    let mut edges = vec![0.0];
    let mut cells = vec![Vec::new(); rows.len()];
    for start in (0..windows).step_by(group) {
        let stop = (start + group).min(windows);
        edges.push(t.ends[stop - 1]);
        for (r, row) in rows.iter().enumerate() {
            let vals: Vec<f64> = row[start..stop].iter().filter_map(|v| *v).collect();
            cells[r].push((!vals.is_empty()).then(|| vals.iter().sum::<f64>() / vals.len() as f64));
        }
    }
    Heat {
        title: title.to_string(),
        x_title: t.title.clone(),
        y_title: format!("{family} number"),
        x_edges: edges,
        rows: cells,
        value_title: "busy share (0 to 1)".into(),
    }
}

/// The plots of the disk whose counters are under the prefix `p`.
pub(super) fn hdd(plots: &mut Plots, dev: &Device, p: &str) {
    let u = Part::of(p);
    hdd_cache(plots, dev, &u);
    hdd_seeks(plots, dev, &u);
    hdd_time(plots, dev, &u);
}

/// The source of a plot of several counters under `p`: `device.counters.<p>{a,b,c}`.
fn counters_source(p: &str, ds: &[&CounterDescriptor]) -> String {
    format!("device.counters.{}", names(p, ds))
}

/// Several counters under `p` as a caption names them: `<p>{a,b,c}`.
fn names(p: &str, ds: &[&CounterDescriptor]) -> String {
    let names: Vec<&str> = ds.iter().map(|d| d.name).collect();
    format!("{p}{{{}}}", names.join(","))
}

/// A disk's reads by cache outcome, and its hit rate over time.
fn hdd_cache(plots: &mut Plots, dev: &Device, u: &Part) {
    use storsim_hdd::{
        CACHE_READ_HITS, CACHE_READ_MISSES, CACHE_READ_PARTIAL_HITS, READ_AHEAD_HITS,
    };
    let (p, unit) = (u.p, &u.title);
    let outcomes = [
        (&CACHE_READ_HITS, "hit"),
        (&CACHE_READ_PARTIAL_HITS, "partial hit"),
        (&READ_AHEAD_HITS, "read-ahead hit"),
        (&CACHE_READ_MISSES, "miss"),
    ];
    plots.counter_bars(
        &u.name("hdd-cache"),
        &counters_source(p, &outcomes.map(|o| o.0)),
        CounterBars {
            title: format!("Disk cache: reads by outcome{unit}"),
            x_title: "outcome",
            y_label: "reads",
            series: "reads",
            unit: CACHE_READ_HITS.unit,
            bars: outcomes
                .iter()
                .map(|(d, l)| (l.to_string(), dev.value(p, d)))
                .collect(),
        },
    );
    let Some((_, hits, t)) = dev.series_of(p, &CACHE_READ_HITS) else {
        return;
    };
    let rate = |d: &'static CounterDescriptor| {
        dev.series_of(p, d)
            .map(|(_, v, t)| t.rate(&v))
            .unwrap_or_default()
    };
    let (h, partial, miss) = (
        t.rate(&hits),
        rate(&CACHE_READ_PARTIAL_HITS),
        rate(&CACHE_READ_MISSES),
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
    let percent = Scale::of(Quantity::Of(Unit::Ratio), 1.0);
    plots.xy(
        &u.name("hdd-cache-over-time"),
        &format!(
            "series.device.{}, per window",
            names(
                p,
                &[
                    &CACHE_READ_HITS,
                    &CACHE_READ_PARTIAL_HITS,
                    &CACHE_READ_MISSES
                ]
            )
        ),
        XyChart {
            title: format!("Disk cache hit rate over time{unit}"),
            x: Axis::linear(&t.title),
            y: Axis::linear(percent.title("read hits among the window's reads")),
            lines: vec![line(
                "hit rate",
                t.points(&ratio, 1.0 / percent.divisor),
                0,
                Style::Solid,
            )],
            legend: Legend::UpperRight,
        },
    );
}

/// A disk's mean seek distance over time and its histogram of seek distances.
fn hdd_seeks(plots: &mut Plots, dev: &Device, u: &Part) {
    let (p, unit) = (u.p, &u.title);
    let mean = &storsim_hdd::MEAN_SEEK;
    if let Some((name, seek, t)) = dev.series_of(p, mean) {
        plots.xy(
            &u.name("hdd-seek-over-time"),
            &format!("series.device.{name}"),
            XyChart {
                title: format!("Mean seek distance so far{unit}"),
                x: Axis::linear(&t.title),
                y: Axis::linear(format!("mean seek distance ({})", mean.unit.symbol())),
                lines: vec![line("mean seek", t.points(&seek, 1.0), 2, Style::Solid)],
                legend: Legend::UpperRight,
            },
        );
    }
    let hist = &storsim_hdd::SEEK_HISTOGRAM;
    let mut buckets: Vec<(u64, String, f64)> = dev
        .members(p, hist)
        .into_iter()
        .filter_map(|(m, _, v)| match m {
            Member::Key(bounds) => {
                let (low, label) = bucket_label(bounds)?;
                Some((low, label, v))
            }
            _ => None,
        })
        .collect();
    buckets.sort_by_key(|b| b.0);
    if !buckets.is_empty() {
        plots.bars(
            &u.name("hdd-seek-distance"),
            &format!("device.counters.{p}{}", hist.name),
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

/// A histogram bucket's lower bound and its label, short enough for twenty side by side:
/// the bucket `4_7` is `4`, `2048_4095` is `2k`, the open `524288_up` is `512k+`. The
/// descriptor's [`Scope::PerBucket`] says a member is `low`, `low_high` or `low_up`.
fn bucket_label(bounds: &str) -> Option<(u64, String)> {
    let (low, high) = bounds.split_once('_').unwrap_or((bounds, ""));
    let low: u64 = low.parse().ok()?;
    let label = if low >= 1024 {
        format!("{}k", low / 1024)
    } else {
        low.to_string()
    };
    Some((
        low,
        if high == "up" {
            format!("{label}+")
        } else {
            label
        },
    ))
}

/// A disk's media time split into seek, rotation and transfer, and its time by power state.
fn hdd_time(plots: &mut Plots, dev: &Device, u: &Part) {
    use storsim_hdd::{
        BUSY_TIME, IDLE_TIME, ROTATION_TIME, SEEK_TIME, STANDBY_TIME, TRANSFER_TIME,
    };
    let (p, unit) = (u.p, &u.title);
    let media = [
        (&SEEK_TIME, "seek"),
        (&ROTATION_TIME, "rotation"),
        (&TRANSFER_TIME, "transfer"),
    ];
    if media.iter().any(|(d, _)| dev.find(p, d).is_some()) {
        plots.counter_bars(
            &u.name("hdd-service-split"),
            &counters_source(p, &media.map(|m| m.0)),
            CounterBars {
                title: format!("Disk media time: seek, rotation, transfer{unit}"),
                x_title: "part of the media time",
                y_label: "time",
                series: "time",
                unit: SEEK_TIME.unit,
                bars: media
                    .iter()
                    .map(|(d, l)| (l.to_string(), dev.value(p, d)))
                    .collect(),
            },
        );
    }
    let states = [
        (&BUSY_TIME, "busy"),
        (&IDLE_TIME, "idle"),
        (&STANDBY_TIME, "standby"),
    ];
    plots.counter_bars(
        &u.name("hdd-time-split"),
        &counters_source(p, &states.map(|s| s.0)),
        CounterBars {
            title: format!("Disk time by state{unit}"),
            x_title: "state",
            y_label: "time",
            series: "time",
            unit: BUSY_TIME.unit,
            bars: states
                .iter()
                .map(|(d, l)| (l.to_string(), dev.value(p, d)))
                .collect(),
        },
    );
}

/// The plots of the hybrid drive whose counters are under the prefix `p`: where host
/// requests went, and its flushing to disk.
pub(super) fn hybrid(plots: &mut Plots, dev: &Device, p: &str) {
    use storsim_hybrid::{
        HOST_READS_DISK, HOST_READS_FLASH, HOST_READS_SPLIT, HOST_WRITES_DISK, HOST_WRITES_FLASH,
        HOST_WRITES_SPLIT,
    };
    let u = Part::of(p);
    let unit = &u.title;
    let routes = [
        ("to flash", &HOST_READS_FLASH, &HOST_WRITES_FLASH),
        ("to disk", &HOST_READS_DISK, &HOST_WRITES_DISK),
        ("split", &HOST_READS_SPLIT, &HOST_WRITES_SPLIT),
    ];
    let all: Vec<&CounterDescriptor> = routes.iter().flat_map(|r| [r.1, r.2]).collect();
    plots.bars(
        &u.name("hybrid-route-split"),
        &counters_source(p, &all),
        Bars {
            title: format!("Hybrid: where host requests went{unit}"),
            x_title: "operation".into(),
            y: Axis::linear("requests"),
            categories: vec!["reads".into(), "writes".into()],
            series: routes
                .iter()
                .map(|(label, reads, writes)| {
                    (
                        label.to_string(),
                        vec![dev.value(p, reads), dev.value(p, writes)],
                    )
                })
                .collect(),
            ranges: Vec::new(),
        },
    );
    hybrid_flush(plots, dev, &u);
}

/// A hybrid drive's flushing to disk by trigger: over time when the document has a series,
/// over the whole run otherwise.
fn hybrid_flush(plots: &mut Plots, dev: &Device, u: &Part) {
    let (p, unit) = (u.p, &u.title);
    let flush = &storsim_hybrid::FLUSH_BYTES;
    let triggers = keys(flush);
    let rates: Vec<(usize, &str, Vec<Option<f64>>)> = triggers
        .iter()
        .enumerate()
        .filter_map(|(i, k)| {
            let (name, _) = dev.member(p, flush, k)?;
            let (v, t) = dev.series(name)?;
            Some((i, *k, t.rate(&v)))
        })
        .collect();
    let busy = rates
        .iter()
        .any(|r| r.2.iter().any(|v| v.is_some_and(|v| v > 0.0)));
    if let (true, Some((_, t))) = (busy, dev.series) {
        let scale = Scale::fitting(
            Quantity::BytesPerSecond,
            rates.iter().flat_map(|r| r.2.iter().flatten().copied()),
        );
        let lines = rates
            .iter()
            .map(|(i, k, rate)| {
                line(
                    key_label(k),
                    t.points(rate, 1.0 / scale.divisor),
                    *i,
                    Style::Solid,
                )
            })
            .collect();
        plots.xy(
            &u.name("hybrid-flush"),
            &format!("series.device.{p}{}, per window", flush.name),
            XyChart {
                title: format!("Hybrid: flushing to disk over time{unit}"),
                x: Axis::linear(&t.title),
                y: Axis::linear(scale.title("flushed")),
                lines,
                legend: Legend::UpperRight,
            },
        );
        return;
    }
    plots.counter_bars(
        &u.name("hybrid-flush"),
        &format!("device.counters.{p}{}", flush.name),
        CounterBars {
            title: format!("Hybrid: bytes flushed to disk by trigger{unit}"),
            x_title: "trigger",
            y_label: "flushed",
            series: "flushed",
            unit: flush.unit,
            bars: triggers
                .iter()
                .map(|k| (key_label(k), dev.member(p, flush, k).map_or(0.0, |m| m.1)))
                .collect(),
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_labelled_by_their_lower_bound() {
        assert_eq!(bucket_label("1"), Some((1, "1".to_string())));
        assert_eq!(bucket_label("4_7"), Some((4, "4".to_string())));
        assert_eq!(bucket_label("2048_4095"), Some((2048, "2k".to_string())));
        assert_eq!(
            bucket_label("524288_up"),
            Some((524288, "512k+".to_string()))
        );
        assert_eq!(bucket_label("x_7"), None);
    }
}
