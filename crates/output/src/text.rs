//! The pieces every text report shares: numbers in readable units, the latency table, the
//! device's counters, and tables whose columns fit their values.

use storsim_core::{describe, Described, DeviceCounter, Scope};
use storsim_engine::Replay;
use storsim_stats::{Distribution, Summary};

/// Nanoseconds as microseconds, to three significant figures or more.
pub(crate) fn us(ns: f64) -> String {
    let v = ns / 1000.0;
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// A byte count in decimal units, one decimal.
pub(crate) fn human_bytes(b: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    let mut v = b;
    let mut i = 0;
    while v >= 1000.0 && i + 1 < UNITS.len() {
        v /= 1000.0;
        i += 1;
    }
    format!("{v:.1} {}", UNITS[i])
}

/// How a run was replayed, in words.
pub(crate) fn replay(replay: Replay) -> String {
    match replay {
        Replay::Open { time_scale: 1.0 } => "open loop".to_string(),
        Replay::Open { time_scale } => format!("open loop, time scale {time_scale}"),
        Replay::Closed { depth } => format!("closed loop, depth {depth}"),
        Replay::AsFastAsPossible => "as fast as possible".to_string(),
    }
}

/// A table whose columns are as wide as their widest cell (header included) plus a gap, so
/// that no two numbers ever run together, however large. The first column is the rows' labels,
/// left-aligned; the others are right-aligned.
pub(crate) struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with this header row.
    pub(crate) fn new(header: &[&str]) -> Table {
        Table {
            rows: vec![header.iter().map(|h| h.to_string()).collect()],
        }
    }

    /// Adds a row; it must have as many cells as the header.
    pub(crate) fn row(&mut self, cells: Vec<String>) {
        assert_eq!(
            cells.len(),
            self.rows[0].len(),
            "a table's rows have the header's number of cells"
        );
        self.rows.push(cells);
    }

    /// The table's lines, each ending in a newline. A column is at least `min_width` wide,
    /// so that tables that have always had fixed columns keep them for ordinary values.
    pub(crate) fn render(&self, min_width: &[usize]) -> String {
        let columns = self.rows[0].len();
        let width: Vec<usize> = (0..columns)
            .map(|c| {
                let widest = self.rows.iter().map(|r| r[c].chars().count()).max();
                // One space between columns at least; the label column has its own.
                let gap = usize::from(c > 0);
                (widest.unwrap_or(0) + gap).max(min_width.get(c).copied().unwrap_or(0))
            })
            .collect();
        let mut out = String::new();
        for row in &self.rows {
            for (c, cell) in row.iter().enumerate() {
                let w = width[c];
                if c == 0 {
                    out += &format!("{cell:<w$}");
                } else {
                    out += &format!("{cell:>w$}");
                }
            }
            out.push('\n');
        }
        out
    }
}

/// The latency table of a summary: one row per operation that occurred, then queueing and
/// service, in microseconds.
pub(crate) fn latency_table(s: &Summary) -> String {
    let mut out = format!(
        "{:<16}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}\n",
        "latency (us)", "requests", "mean", "p50", "p90", "p99", "p99.9", "max"
    );
    let mut row = |name: &str, d: &Distribution, n: u64| {
        if n == 0 {
            return;
        }
        out += &format!(
            "{:<16}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}\n",
            name,
            n,
            us(d.mean),
            us(d.p50 as f64),
            us(d.p90 as f64),
            us(d.p99 as f64),
            us(d.p999 as f64),
            us(d.max as f64)
        );
    };
    row("all", &s.all.latency_ns, s.all.requests);
    row("  read", &s.read.latency_ns, s.read.requests);
    row("  write", &s.write.latency_ns, s.write.requests);
    row("  trim", &s.trim.latency_ns, s.trim.requests);
    row("  flush", &s.flush.latency_ns, s.flush.requests);
    row("queueing", &s.all.queueing_ns, s.all.requests);
    row("service", &s.all.service_ns, s.all.requests);
    if s.errors_counted {
        out += &errors(s);
    }
    out
}

/// The failed requests by operation and kind, and whether the latencies above count them.
fn errors(s: &Summary) -> String {
    let mut out = format!(
        "errors          {} failed ({} the latencies above)\n",
        s.all.errors.total(),
        if s.latency_includes_failed {
            "counted in"
        } else {
            "left out of"
        }
    );
    for (name, op) in [
        ("read", &s.read),
        ("write", &s.write),
        ("trim", &s.trim),
        ("flush", &s.flush),
    ] {
        let kinds: Vec<String> = op
            .errors
            .iter()
            .filter(|&(_, n)| n > 0)
            .map(|(kind, n)| format!("{n} {kind}"))
            .collect();
        if !kinds.is_empty() {
            out += &format!("  {name:<14}{}\n", kinds.join(", "));
        }
    }
    out
}

/// The counters as aligned `name value` lines. Families of per-unit counters (a descriptor of
/// scope per channel or per die: `channel_3_utilisation`, `die_17_utilisation`) would bury
/// the rest on a large device, so each family becomes one line with its mean, minimum and
/// maximum; the JSON keeps them all.
pub(crate) fn counter_lines(counters: &[DeviceCounter], descriptors: &[Described]) -> String {
    let mut rows: Vec<(String, String)> = Vec::new();
    let mut families: Vec<(String, Vec<f64>)> = Vec::new();
    for c in counters {
        match per_unit_family(&c.name, descriptors) {
            Some(family) => match families.iter_mut().find(|(f, _)| *f == family) {
                Some((_, values)) => values.push(c.value),
                None => {
                    // The family's row stands where its first member stood.
                    rows.push((family.clone(), String::new()));
                    families.push((family, vec![c.value]));
                }
            },
            None => rows.push((c.name.clone(), counter_value(c.value))),
        }
    }
    for (family, values) in &families {
        let row = rows.iter_mut().find(|(n, _)| n == family).expect("pushed");
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        row.1 = format!(
            "mean {} min {} max {} ({} units)",
            counter_value(mean),
            counter_value(min),
            counter_value(max),
            values.len()
        );
    }
    let width = rows.iter().map(|(n, _)| n.len()).max().unwrap_or(0) + 2;
    rows.iter()
        .map(|(name, value)| format!("  {name:<width$}{value}\n"))
        .collect()
}

/// The family of a per-channel or per-die counter, named by its descriptor's pattern without
/// the index: `die_17_utilisation` belongs to `die_utilisation`.
fn per_unit_family(name: &str, descriptors: &[Described]) -> Option<String> {
    let d = describe(descriptors, name)?;
    if !matches!(d.descriptor.scope, Scope::PerChannel | Scope::PerDie) {
        return None;
    }
    let (before, after) = d.descriptor.pattern_parts();
    Some(format!(
        "{}{}_{}",
        d.prefix,
        before.trim_end_matches('_'),
        after.trim_start_matches('_')
    ))
}

/// Whole numbers as integers, others with at least six significant digits.
fn counter_value(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else if v.abs() < 1e-3 {
        format!("{v:.5e}")
    } else {
        let digits = (5 - v.abs().log10().floor() as i32).clamp(0, 8);
        format!("{v:.*}", digits as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storsim_core::{CounterDescriptor, Unit};

    #[test]
    fn per_unit_counters_fold_into_one_aligned_line() {
        let counters = [
            DeviceCounter::new("flash_reads", 12.0),
            DeviceCounter::new("channel_0_utilisation", 0.25),
            DeviceCounter::new("channel_1_utilisation", 0.75),
            DeviceCounter::new("precondition_steady_state_waf", 7.3140358),
            DeviceCounter::new("die_10_count", 3.0),
        ];
        static DESCRIPTORS: [CounterDescriptor; 3] = [
            CounterDescriptor::new("flash_reads", Unit::Count, "Reads."),
            CounterDescriptor::family(
                "channel_{}_utilisation",
                Unit::Ratio,
                Scope::PerChannel,
                "A channel's busy share.",
            ),
            CounterDescriptor::family("die_{}_count", Unit::Count, Scope::PerDie, "Per die."),
        ];
        let descriptors: Vec<Described> = Described::all(&DESCRIPTORS).collect();
        let text = counter_lines(&counters, &descriptors);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert_eq!(
            lines[0].split_whitespace().collect::<Vec<_>>(),
            ["flash_reads", "12"]
        );
        assert!(lines[1].starts_with("  channel_utilisation "), "{text}");
        assert!(
            lines[1].contains("mean 0.500000 min 0.250000 max 0.750000 (2 units)"),
            "{text}"
        );
        assert!(lines[2].ends_with(" 7.31404"), "{text}");
        assert!(lines[3].starts_with("  die_count "), "{text}");
        // Every value starts in the same column, past the longest name.
        let value_column = |l: &str| {
            let name_end = 2 + l[2..].find(' ').unwrap();
            name_end + l[name_end..].find(|c| c != ' ').unwrap()
        };
        let first = value_column(lines[0]);
        assert!(lines.iter().all(|l| value_column(l) == first), "{text}");
        assert_eq!(first, 2 + "precondition_steady_state_waf".len() + 2);
    }

    #[test]
    fn counter_values_are_readable() {
        assert_eq!(counter_value(440736.0), "440736");
        assert_eq!(counter_value(0.0), "0");
        assert_eq!(counter_value(1.5), "1.50000");
        assert_eq!(counter_value(8162666.56), "8162667");
        assert_eq!(counter_value(0.0001), "1.00000e-4");
    }

    #[test]
    fn a_tables_columns_fit_their_widest_value_and_keep_their_minimum() {
        let mut t = Table::new(&["what", "mean", "p99"]);
        t.row(vec!["small".into(), "1.000".into(), "2.000".into()]);
        t.row(vec!["large".into(), "2820.332".into(), "15112.618".into()]);
        let text = t.render(&[8, 9, 9]);
        let lines: Vec<&str> = text.lines().collect();
        // Ordinary values keep the fixed widths.
        assert_eq!(lines[1], "small       1.000     2.000");
        // Large ones widen their column instead of running into the next value.
        assert_eq!(lines[2], "large    2820.332 15112.618");
        assert_eq!(lines[0], "what         mean       p99");
        for line in &lines[1..] {
            let cells: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(cells.len(), 3, "{line}");
        }
    }
}
