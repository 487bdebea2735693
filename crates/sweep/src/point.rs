//! A spec's points: the grid expanded (devices × grid × workloads × workload grid × seeds,
//! then the explicit points), each with its identity, its label, its parameter columns and the
//! `storsim simulate` command that runs it.

use crate::options::{self, OptionValue};
use crate::spec::{PlotSpec, Spec};
use crate::table::Cell;
use crate::SweepError;
use std::path::Path;

/// One run of a sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// 16 hex digits from the point's parameters: its file's name, stable across runs,
    /// builds and `--jobs`.
    pub id: String,
    /// Its name in plots and the CSV.
    pub label: String,
    /// A preset or a device file, as the spec writes it.
    pub device: String,
    /// Device-file keys set on top of the device.
    pub set: Vec<(String, toml::Value)>,
    /// A generator spec (with the workload grid's keys) or a trace file, as the spec writes it.
    pub workload: String,
    /// simulate's options.
    pub options: Vec<(String, OptionValue)>,
    /// The run's seed.
    pub seed: u64,
    /// The parameter columns of the results table and their values for this point (`Empty`
    /// for a column the point does not set).
    pub parameters: Vec<(String, Cell)>,
}

/// The parameter columns before the points' own: `device`, the grid's keys, then these.
const WORKLOAD_COLUMN: &str = "workload";
const SEED_COLUMN: &str = "seed";

impl Point {
    /// The arguments of `storsim simulate` that run this point, relative paths resolved
    /// against `dir` (the spec's directory). Outputs are the caller's.
    pub fn simulate_args(&self, dir: &Path) -> Vec<String> {
        let mut args = vec![
            "simulate".to_string(),
            "--device".to_string(),
            self.device_arg(dir),
        ];
        for kv in self.overrides() {
            args.push("--set".to_string());
            args.push(kv);
        }
        args.push("--workload".to_string());
        args.push(self.workload_arg(dir));
        args.push("--seed".to_string());
        args.push(self.seed.to_string());
        args.extend(options::arguments(&self.options));
        args
    }

    /// The device as the run names it: the spec's, a relative device file resolved against
    /// `dir` (the spec's directory).
    pub fn device_arg(&self, dir: &Path) -> String {
        resolve(&self.device, dir, is_device_file(&self.device))
    }

    /// The device-file keys set on top of the device, each `KEY=VALUE` with a TOML value, as
    /// `--set` takes them.
    pub fn overrides(&self) -> Vec<String> {
        self.set
            .iter()
            .map(|(key, value)| format!("{key}={value}"))
            .collect()
    }

    /// The workload as the run names it: the spec's, a relative trace file resolved against
    /// `dir`.
    pub fn workload_arg(&self, dir: &Path) -> String {
        resolve(&self.workload, dir, !is_generator(&self.workload))
    }
}

fn is_generator(workload: &str) -> bool {
    workload.starts_with("synthetic:") || workload.starts_with("vdbench:")
}

/// Whether a device argument names a file rather than a preset: presets have neither a path
/// separator nor the device files' extension.
fn is_device_file(device: &str) -> bool {
    device.contains('/') || device.ends_with(".toml")
}

fn resolve(arg: &str, dir: &Path, is_path: bool) -> String {
    if !is_path || Path::new(arg).is_absolute() || dir.as_os_str().is_empty() {
        return arg.to_string();
    }
    dir.join(arg).to_string_lossy().into_owned()
}

/// A generator spec with `key=value` set: replacing the key's value where the spec gives it,
/// appended otherwise. A part without `=` continues the previous value (a value that holds a
/// comma).
fn with_generator_key(spec: &str, key: &str, value: &str) -> String {
    let (prefix, body) = spec.split_once(':').unwrap_or(("synthetic", spec));
    let mut parts: Vec<String> = Vec::new();
    for part in body.split(',').filter(|p| !p.trim().is_empty()) {
        match parts.last_mut() {
            Some(last) if !part.contains('=') => {
                last.push(',');
                last.push_str(part);
            }
            _ => parts.push(part.to_string()),
        }
    }
    let assignment = format!("{key}={value}");
    let same_key = |p: &String| {
        p.split_once('=')
            .is_some_and(|(k, _)| k.trim().eq_ignore_ascii_case(key))
    };
    match parts.iter_mut().find(|p| same_key(p)) {
        Some(part) => *part = assignment,
        None => parts.push(assignment),
    }
    format!("{prefix}:{}", parts.join(","))
}

/// FNV-1a, 64 bits. Written out rather than taken from `std`, whose hasher promises no
/// stability across releases: a point's id names its result file, so it must never change.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// SplitMix64's finaliser: FNV-1a's high bits change little between near-identical texts
/// (two points differing in one seed digit), and ids that differ from the first digit read
/// better in a listing.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The point's identity from its parameters as the spec writes them (not as resolved against
/// the working directory, so that the same spec run from elsewhere finds its results).
fn identity(
    device: &str,
    set: &[(String, toml::Value)],
    workload: &str,
    options: &[(String, OptionValue)],
    seed: u64,
) -> String {
    let mut text = format!("device\0{device}\0");
    for (key, value) in set {
        text.push_str(&format!("set\0{key}\0{value}\0"));
    }
    text.push_str(&format!("workload\0{workload}\0"));
    for arg in options::arguments(options) {
        text.push_str(&format!("option\0{arg}\0"));
    }
    text.push_str(&format!("seed\0{seed}"));
    format!("{:016x}", mix(fnv1a(text.as_bytes())))
}

/// One point before its columns and label are known.
struct Draft {
    device: String,
    set: Vec<(String, toml::Value)>,
    workload: String,
    workload_keys: Vec<(String, String)>,
    options: Vec<(String, OptionValue)>,
    seed: u64,
    label: Option<String>,
}

/// Every point of `spec`, in order, with its columns and label. Two points that would be the
/// same run are refused, naming both.
pub fn expand(spec: &Spec) -> Result<Vec<Point>, SweepError> {
    let mut drafts = grid_drafts(spec);
    let grid_points = drafts.len();
    drafts.extend(explicit_drafts(spec));
    let columns = parameter_columns(spec);
    let mut points: Vec<Point> = drafts.into_iter().map(|d| d.into_point(&columns)).collect();
    check_distinct(spec, &points)?;
    // The grid's points are named by what varies among them; the explicit points the spec
    // leaves unnamed, by what varies among all.
    let mut among_grid = varying(&points[..grid_points]);
    // With one workload in the spec, its text varies only by the workload grid's keys, which
    // have columns of their own: the label names those alone.
    if spec.workloads.len() == 1 {
        among_grid.retain(|&i| columns[i] != WORKLOAD_COLUMN);
    }
    let among_all = varying(&points);
    let (grid, explicit) = points.split_at_mut(grid_points);
    label(grid, &among_grid);
    label(explicit, &among_all);
    check_plot_columns(spec, &columns)?;
    Ok(points)
}

/// The grid's points: every device × device-file grid combination × workload × workload-grid
/// combination (synthetic workloads only) × seed, in that order.
fn grid_drafts(spec: &Spec) -> Vec<Draft> {
    let mut drafts = Vec::new();
    for device in &spec.devices {
        for set in combinations(&spec.grid) {
            for workload in &spec.workloads {
                let workload_grids: Vec<Vec<(String, String)>> =
                    if is_generator(workload) && workload.starts_with("synthetic:") {
                        combinations(&spec.workload_grid)
                    } else {
                        vec![Vec::new()]
                    };
                for keys in workload_grids {
                    let text = keys
                        .iter()
                        .fold(workload.clone(), |w, (k, v)| with_generator_key(&w, k, v));
                    for &seed in &spec.seeds {
                        drafts.push(Draft {
                            device: device.clone(),
                            set: set.clone(),
                            workload: text.clone(),
                            workload_keys: keys.clone(),
                            options: options::merged(&spec.options, &[]),
                            seed,
                            label: None,
                        });
                    }
                }
            }
        }
    }
    drafts
}

/// The `[[point]]` tables' points: each at its own seed, or at every seed of the spec.
fn explicit_drafts(spec: &Spec) -> Vec<Draft> {
    let mut drafts = Vec::new();
    for point in &spec.points {
        let seeds = match point.seed {
            Some(seed) => vec![seed],
            None => spec.seeds.clone(),
        };
        for seed in seeds {
            drafts.push(Draft {
                device: point.device.clone(),
                set: point.set.clone(),
                workload: point.workload.clone(),
                workload_keys: Vec::new(),
                options: options::merged(&spec.options, &point.options),
                seed,
                label: point.label.clone(),
            });
        }
    }
    drafts
}

impl Draft {
    /// The point, with its id and its cell in each of the parameter `columns` (empty where it
    /// sets no value); its label comes later.
    fn into_point(self, columns: &[String]) -> Point {
        let mut parameters: Vec<(String, Cell)> =
            columns.iter().map(|c| (c.clone(), Cell::Empty)).collect();
        let mut put = |column: &str, cell: Cell| {
            let slot = parameters
                .iter_mut()
                .find(|(c, _)| c == column)
                .expect("every parameter has its column");
            slot.1 = cell;
        };
        put("device", Cell::Text(self.device.clone()));
        for (key, value) in &self.set {
            put(key, Cell::from_toml(value));
        }
        put(WORKLOAD_COLUMN, Cell::Text(self.workload.clone()));
        for (key, value) in &self.workload_keys {
            put(&format!("workload.{key}"), Cell::parse(value));
        }
        put(SEED_COLUMN, Cell::Number(self.seed as f64));
        Point {
            id: identity(
                &self.device,
                &self.set,
                &self.workload,
                &self.options,
                self.seed,
            ),
            label: self.label.unwrap_or_default(),
            device: self.device,
            set: self.set,
            workload: self.workload,
            options: self.options,
            seed: self.seed,
            parameters,
        }
    }
}

/// Refuses two points that would be the same run, naming both.
fn check_distinct(spec: &Spec, points: &[Point]) -> Result<(), SweepError> {
    for (i, point) in points.iter().enumerate() {
        if let Some(j) = points[..i].iter().position(|p| p.id == point.id) {
            return Err(SweepError::Spec {
                file: spec.file.clone(),
                key: "point".to_string(),
                message: format!(
                    "points {} and {} are the same run ({}): a grid value or a [[point]] is \
                     listed twice",
                    j + 1,
                    i + 1,
                    point.simulate_args(Path::new("")).join(" ")
                ),
            });
        }
    }
    Ok(())
}

/// The columns every results table has before the parameters.
pub const LEADING_COLUMNS: [&str; 4] = ["point", "label", "status", "error"];

/// The first parts of the results' columns: the point document's sections (table.rs), and a
/// run of several flows' flows by name (`flows.reader.slowdown`).
const RESULT_SECTIONS: [&str; 5] = ["summary.", "device.", "run.", "workload.", "flows."];

/// The results' columns that are a document's top-level figures: a run of several flows'
/// `fairness`.
const RESULT_FIGURES: [&str; 1] = ["fairness"];

/// Refuses a plot naming a column no row can have: not a parameter, not one of the leading
/// columns, not in a section of the results. (Which results a run has is known only once it
/// has run; a plot of a result no point has says so in the report.)
fn check_plot_columns(spec: &Spec, parameters: &[String]) -> Result<(), SweepError> {
    let known = |column: &str| {
        LEADING_COLUMNS.contains(&column)
            || parameters.iter().any(|p| p == column)
            || RESULT_SECTIONS.iter().any(|s| column.starts_with(s))
            || RESULT_FIGURES.contains(&column)
    };
    for (i, plot) in spec.plots.iter().enumerate() {
        let (named, filter): (Vec<(&str, &String)>, _) = match plot {
            PlotSpec::Metric {
                x,
                y,
                series,
                filter,
                ..
            } => {
                let mut named = vec![("x", x), ("y", y)];
                named.extend(series.iter().map(|s| ("series", s)));
                (named, filter)
            }
            PlotSpec::Cdf { series, filter, .. } => {
                (series.iter().map(|s| ("series", s)).collect(), filter)
            }
            PlotSpec::Wear { filter, .. } => (Vec::new(), filter),
        };
        let filtered = filter.iter().map(|(column, _)| ("where", column));
        for (key, column) in named.into_iter().chain(filtered) {
            if !known(column) {
                return Err(SweepError::Spec {
                    file: spec.file.clone(),
                    key: format!("plot[{i}].{key}"),
                    message: format!(
                        "no column `{column}`: columns are {}, the parameters ({}) and the \
                         results under {} and {}",
                        LEADING_COLUMNS.join(", "),
                        parameters.join(", "),
                        RESULT_SECTIONS.map(|s| format!("{s}*")).join(", "),
                        RESULT_FIGURES.join(", ")
                    ),
                });
            }
        }
    }
    Ok(())
}

/// The parameter columns: `device`, the device-file keys (the grid's, then the points'),
/// `workload`, the workload grid's keys as `workload.KEY`, `seed`.
pub fn parameter_columns(spec: &Spec) -> Vec<String> {
    let mut columns = vec!["device".to_string()];
    let mut add = |column: String| {
        if !columns.contains(&column) {
            columns.push(column);
        }
    };
    for (key, _) in &spec.grid {
        add(key.clone());
    }
    for point in &spec.points {
        for (key, _) in &point.set {
            add(key.clone());
        }
    }
    add(WORKLOAD_COLUMN.to_string());
    for (key, _) in &spec.workload_grid {
        add(format!("workload.{key}"));
    }
    add(SEED_COLUMN.to_string());
    columns
}

/// Every combination of the values of `grid`'s keys, the first key varying slowest.
fn combinations<T: Clone>(grid: &[(String, Vec<T>)]) -> Vec<Vec<(String, T)>> {
    let mut out: Vec<Vec<(String, T)>> = vec![Vec::new()];
    for (key, values) in grid {
        out = out
            .into_iter()
            .flat_map(|prefix| {
                values.iter().map(move |v| {
                    let mut next = prefix.clone();
                    next.push((key.clone(), v.clone()));
                    next
                })
            })
            .collect();
    }
    out
}

/// The parameters (by index) whose values differ among `points`.
fn varying(points: &[Point]) -> Vec<usize> {
    let Some(first) = points.first() else {
        return Vec::new();
    };
    (0..first.parameters.len())
        .filter(|&i| {
            points
                .iter()
                .any(|p| p.parameters[i].1 != first.parameters[i].1)
        })
        .collect()
}

/// Names the points the spec leaves unnamed by the `varying` parameters
/// (`ssd.ftl=dftl seed=2`), or by the device when none varies.
fn label(points: &mut [Point], varying: &[usize]) {
    for point in points.iter_mut().filter(|p| p.label.is_empty()) {
        let parts: Vec<String> = varying
            .iter()
            .filter_map(|&i| {
                let (column, cell) = &point.parameters[i];
                match (column.as_str(), cell) {
                    (_, Cell::Empty) => None,
                    ("device" | WORKLOAD_COLUMN, cell) => Some(cell.text()),
                    (column, cell) => Some(format!("{column}={}", cell.text())),
                }
            })
            .collect();
        point.label = if parts.is_empty() {
            point.device.clone()
        } else {
            parts.join(" ")
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn spec(text: &str) -> Spec {
        Spec::parse(text, &PathBuf::from("dir/s.toml"), None).unwrap()
    }

    #[test]
    fn the_grid_expands_in_order_with_the_first_key_slowest() {
        let points = expand(&spec(
            r#"
            devices = ["a", "b"]
            workloads = ["synthetic:rw=read,bs=4k"]
            seeds = [1, 2]
            [grid]
            "ssd.ftl" = ["page", "dftl"]
            [workload_grid]
            bs = ["8k", "64k"]
            "#,
        ))
        .unwrap();
        assert_eq!(points.len(), 2 * 2 * 2 * 2);
        let summary: Vec<String> = points
            .iter()
            .map(|p| format!("{} {} {} {}", p.device, p.set[0].1, p.workload, p.seed))
            .collect();
        assert_eq!(summary[0], "a \"page\" synthetic:rw=read,bs=8k 1");
        assert_eq!(summary[1], "a \"page\" synthetic:rw=read,bs=8k 2");
        assert_eq!(summary[2], "a \"page\" synthetic:rw=read,bs=64k 1");
        assert_eq!(summary[4], "a \"dftl\" synthetic:rw=read,bs=8k 1");
        assert_eq!(summary[8], "b \"page\" synthetic:rw=read,bs=8k 1");
        // Labels name what varies, and only that.
        assert_eq!(points[0].label, "a ssd.ftl=page workload.bs=8k seed=1");
        let ids: std::collections::BTreeSet<&str> = points.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids.len(), points.len(), "ids are distinct");
    }

    #[test]
    fn a_generator_key_is_replaced_or_appended_and_commas_inside_values_survive() {
        assert_eq!(
            with_generator_key("synthetic:rw=read,bs=4k", "bs", "64k"),
            "synthetic:rw=read,bs=64k"
        );
        assert_eq!(
            with_generator_key("synthetic:rw=read", "BS", "64k"),
            "synthetic:rw=read,BS=64k"
        );
        assert_eq!(
            with_generator_key(
                "synthetic:bssplit=4k/50:8k/50,64k/100,rw=rw",
                "rw",
                "randrw"
            ),
            "synthetic:bssplit=4k/50:8k/50,64k/100,rw=randrw"
        );
        assert_eq!(
            with_generator_key("synthetic:", "bs", "1m"),
            "synthetic:bs=1m"
        );
    }

    #[test]
    fn ids_depend_on_every_parameter_and_not_on_the_option_order() {
        let base = identity("d", &[], "w", &[], 1);
        assert_eq!(base, identity("d", &[], "w", &[], 1));
        assert_eq!(base.len(), 16);
        assert_ne!(base, identity("d", &[], "w", &[], 2));
        assert_ne!(base, identity("e", &[], "w", &[], 1));
        assert_ne!(base, identity("d", &[], "x", &[], 1));
        assert_ne!(
            base,
            identity("d", &[("k".into(), toml::Value::Integer(1))], "w", &[], 1)
        );
        let a = [("iodepth".to_string(), OptionValue::Text("4".into()))];
        let b = [("wrap".to_string(), OptionValue::Flag(true))];
        assert_ne!(base, identity("d", &[], "w", &a, 1));
        let ab = options::merged(&a, &b);
        let ba = options::merged(&b, &a);
        assert_eq!(
            identity("d", &[], "w", &ab, 1),
            identity("d", &[], "w", &ba, 1)
        );
        // The FNV-1a test vector: the id of a file must never change.
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn the_command_line_resolves_files_against_the_spec_and_leaves_presets() {
        let points = expand(&spec(
            r#"
            devices = ["stec-zeus", "my.toml"]
            workloads = ["trace.csv", "synthetic:rw=read", "/abs/t.spc"]
            [options]
            wrap = true
            iodepth = 4
            precondition = "fill"
            [grid]
            "linear.servers" = [2]
            "#,
        ))
        .unwrap();
        let args: Vec<String> = points
            .iter()
            .map(|p| p.simulate_args(Path::new("dir")).join(" "))
            .collect();
        assert_eq!(
            args[0],
            "simulate --device stec-zeus --set linear.servers=2 --workload dir/trace.csv --seed 1 --iodepth 4 --wrap --precondition fill"
        );
        assert!(
            args[1].contains("--workload synthetic:rw=read "),
            "{}",
            args[1]
        );
        assert!(args[2].contains("--workload /abs/t.spc "), "{}", args[2]);
        assert!(
            args[3].starts_with("simulate --device dir/my.toml "),
            "{}",
            args[3]
        );
    }

    #[test]
    fn explicit_points_take_every_seed_unless_they_name_one_and_duplicates_are_refused() {
        let points = expand(&spec(
            r#"
            seeds = [3, 4]
            [[point]]
            device = "hdd-laptop-2007"
            workload = "synthetic:rw=randread"
            label = "plain"
            [[point]]
            device = "hybrid-laptop-2007"
            set = { "hybrid.small_write_threshold_bytes" = 16384 }
            workload = "synthetic:rw=randread"
            seed = 9
            options = { iodepth = 2 }
            "#,
        ))
        .unwrap();
        assert_eq!(points.len(), 3);
        assert_eq!((points[0].label.as_str(), points[0].seed), ("plain", 3));
        assert_eq!((points[1].label.as_str(), points[1].seed), ("plain", 4));
        assert_eq!(points[2].seed, 9);
        let column =
            |p: &Point, c: &str| p.parameters.iter().find(|(k, _)| k == c).unwrap().1.clone();
        assert_eq!(
            column(&points[0], "hybrid.small_write_threshold_bytes"),
            Cell::Empty
        );
        assert_eq!(
            column(&points[2], "hybrid.small_write_threshold_bytes"),
            Cell::Number(16384.0)
        );

        let err = expand(&spec(
            r#"
            devices = ["a"]
            workloads = ["synthetic:rw=read"]
            [[point]]
            device = "a"
            workload = "synthetic:rw=read"
            "#,
        ))
        .unwrap_err()
        .to_string();
        assert!(err.contains("points 1 and 2 are the same run"), "{err}");
    }
}
