//! The sweep spec: its TOML file read with every key checked, a `--size` laid over it, and
//! the checked [`Spec`] the points are expanded from (docs/sweep.md).

use crate::options::{self, OptionValue};
use crate::table::Cell;
use crate::SweepError;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::fmt;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

/// Entries of a TOML table in the file's order, for the tables whose order is the points'
/// order or a label's (`toml`'s own table sorts its keys).
#[derive(Clone, Debug, PartialEq)]
pub struct Ordered<T>(pub Vec<(String, T)>);

impl<T> Default for Ordered<T> {
    fn default() -> Self {
        Ordered(Vec::new())
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Ordered<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entries<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Entries<T> {
            type Value = Ordered<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a table")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry::<String, T>()? {
                    entries.push(entry);
                }
                Ok(Ordered(entries))
            }
        }
        deserializer.deserialize_map(Entries(PhantomData))
    }
}

/// The spec file as written; [`Spec::load`] checks it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SpecFile {
    name: Option<String>,
    description: Option<String>,
    #[serde(default)]
    devices: Vec<String>,
    #[serde(default)]
    workloads: Vec<String>,
    seeds: Option<Vec<u64>>,
    #[serde(default)]
    grid: Ordered<Vec<toml::Value>>,
    #[serde(default)]
    workload_grid: Ordered<Vec<toml::Value>>,
    #[serde(default)]
    options: Ordered<toml::Value>,
    #[serde(default, rename = "point")]
    points: Vec<PointFile>,
    #[serde(default, rename = "plot")]
    plots: Vec<PlotFile>,
    /// Read only to be laid over the rest (`--size`) and to list the sizes there are.
    #[serde(default)]
    size: Ordered<toml::Table>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PointFile {
    device: String,
    #[serde(default)]
    set: Ordered<toml::Value>,
    workload: String,
    label: Option<String>,
    seed: Option<u64>,
    #[serde(default)]
    options: Ordered<toml::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlotFile {
    kind: PlotKind,
    x: Option<String>,
    y: Option<String>,
    series: Option<OneOrMany>,
    op: Option<CdfOp>,
    #[serde(default, rename = "where")]
    filter: Ordered<toml::Value>,
    title: Option<String>,
    #[serde(default)]
    log_x: bool,
    #[serde(default)]
    log_y: bool,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "lowercase")]
enum PlotKind {
    Metric,
    Cdf,
    Wear,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

/// Which requests a CDF plot draws.
#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "lowercase")]
pub enum CdfOp {
    /// Every request.
    All,
    /// Reads.
    Read,
    /// Writes.
    Write,
}

/// One `[[plot]]` of the spec.
#[derive(Clone, Debug, PartialEq)]
pub enum PlotSpec {
    /// A metric (`y`, any column) against a parameter (`x`), one line or bar group per value
    /// of `series`.
    Metric {
        /// The column along the horizontal axis.
        x: String,
        /// The column drawn.
        y: String,
        /// The column whose values make the lines.
        series: Option<String>,
        /// Rows kept: each column equal to its value.
        filter: Vec<(String, Cell)>,
        /// The plot's title, if the spec gives one.
        title: Option<String>,
        /// A logarithmic horizontal axis.
        log_x: bool,
        /// A logarithmic vertical axis.
        log_y: bool,
    },
    /// The latency CDFs of the points kept, overlaid.
    Cdf {
        /// Which requests.
        op: CdfOp,
        /// The columns whose values name each line (the point's label when empty).
        series: Vec<String>,
        /// Rows kept: each column equal to its value.
        filter: Vec<(String, Cell)>,
        /// The plot's title, if the spec gives one.
        title: Option<String>,
    },
    /// One block-wear histogram per point kept.
    Wear {
        /// Rows kept: each column equal to its value.
        filter: Vec<(String, Cell)>,
        /// The plot's title, if the spec gives one.
        title: Option<String>,
    },
}

/// A point the spec lists explicitly (`[[point]]`).
#[derive(Clone, Debug, PartialEq)]
pub struct ExplicitPoint {
    /// A preset or a device file, as written.
    pub device: String,
    /// Device-file keys set on top of it.
    pub set: Vec<(String, toml::Value)>,
    /// A generator spec or a trace file, as written.
    pub workload: String,
    /// Its name in plots and the CSV.
    pub label: Option<String>,
    /// Its seed; every seed of the spec when `None`.
    pub seed: Option<u64>,
    /// Options on top of the spec's.
    pub options: Vec<(String, OptionValue)>,
}

/// A checked sweep spec.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    /// The spec file, for messages.
    pub file: PathBuf,
    /// The report's title.
    pub name: String,
    /// A paragraph for the report.
    pub description: String,
    /// Presets or device files, as written.
    pub devices: Vec<String>,
    /// Device-file keys and the values each takes, in the file's order.
    pub grid: Vec<(String, Vec<toml::Value>)>,
    /// Generator specs or trace files, as written.
    pub workloads: Vec<String>,
    /// Generator keys and the values each takes, in the file's order.
    pub workload_grid: Vec<(String, Vec<String>)>,
    /// The replicates' seeds.
    pub seeds: Vec<u64>,
    /// simulate's options for every point, in the file's order.
    pub options: Vec<(String, OptionValue)>,
    /// Points listed one by one.
    pub points: Vec<ExplicitPoint>,
    /// The report's plots.
    pub plots: Vec<PlotSpec>,
}

impl Spec {
    /// Reads and checks the spec file at `path`, with the table `[size.NAME]` laid over it
    /// when `size` names one.
    pub fn load(path: &Path, size: Option<&str>) -> Result<Spec, SweepError> {
        let text = std::fs::read_to_string(path).map_err(|e| SweepError::Io {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        Spec::parse(&text, path, size)
    }

    /// Checks the spec text `text`, read from `file` (named in messages; relative paths in the
    /// spec are relative to its directory).
    pub fn parse(text: &str, file: &Path, size: Option<&str>) -> Result<Spec, SweepError> {
        let bad = |key: &str, message: String| SweepError::Spec {
            file: file.to_path_buf(),
            key: key.to_string(),
            message,
        };
        let syntax = |message: String| bad("", message);
        // The file alone first, so that a mistake in it is reported at its own line.
        let parsed: SpecFile = toml::from_str(text).map_err(|e| syntax(e.to_string()))?;
        let parsed = match size {
            None => parsed,
            Some(name) => {
                let Some((_, table)) = parsed.size.0.iter().find(|(n, _)| n == name) else {
                    let known: Vec<&str> = parsed.size.0.iter().map(|(n, _)| n.as_str()).collect();
                    return Err(bad(
                        "size",
                        format!(
                            "--size {name}: the spec has no [size.{name}] (it has: {})",
                            if known.is_empty() {
                                "none".to_string()
                            } else {
                                known.join(", ")
                            }
                        ),
                    ));
                };
                if table.contains_key("size") {
                    return Err(bad(
                        &format!("size.{name}.size"),
                        "a size cannot hold sizes".into(),
                    ));
                }
                let merged = with_size(text, name).map_err(syntax)?;
                toml::from_str(&merged)
                    .map_err(|e| syntax(format!("with [size.{name}] laid over the spec: {e}")))?
            }
        };
        check(parsed, file)
    }

    /// The directory relative paths in the spec start from.
    pub fn dir(&self) -> &Path {
        self.file.parent().unwrap_or(Path::new(""))
    }
}

/// The spec's text with `[size.NAME]`'s keys laid over the rest, key by key (tables merged,
/// values and arrays replaced), and the sizes removed.
fn with_size(text: &str, name: &str) -> Result<String, String> {
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e| format!("{e}"))?;
    let over = doc
        .get("size")
        .and_then(|s| s.get(name))
        .cloned()
        .ok_or_else(|| format!("no [size.{name}]"))?;
    doc.remove("size");
    let over = into_table(over).ok_or_else(|| format!("size.{name} is not a table"))?;
    lay_over(doc.as_table_mut(), over);
    Ok(doc.to_string())
}

/// A table, written either way (`[t]` or `t = { ... }`), as a table.
fn into_table(item: toml_edit::Item) -> Option<toml_edit::Table> {
    match item {
        toml_edit::Item::Table(t) => Some(t),
        toml_edit::Item::Value(toml_edit::Value::InlineTable(t)) => Some(t.into_table()),
        _ => None,
    }
}

fn lay_over(base: &mut toml_edit::Table, over: toml_edit::Table) {
    for (key, item) in over {
        let both_tables = item.is_table_like() && base.get(&key).is_some_and(|b| b.is_table_like());
        if both_tables {
            let base_item = base.get_mut(&key).expect("checked above");
            if let Some(inline) = base_item.as_inline_table().cloned() {
                *base_item = toml_edit::Item::Table(inline.into_table());
            }
            let over_table = into_table(item).expect("table-like");
            lay_over(
                base_item.as_table_mut().expect("made a table above"),
                over_table,
            );
        } else {
            base.insert(&key, item);
        }
    }
}

/// The spec `parsed` from `file`, every key checked: errors name the key.
fn check(mut parsed: SpecFile, file: &Path) -> Result<Spec, SweepError> {
    let bad = |key: &str, message: &str| SweepError::Spec {
        file: file.to_path_buf(),
        key: key.to_string(),
        message: message.to_string(),
    };
    let refused = |(key, message): (String, String)| bad(&key, &message);
    check_grid(&parsed.grid.0).map_err(refused)?;
    let workload_grid = check_workload_grid(&parsed).map_err(refused)?;
    let seeds = parsed.seeds.take().unwrap_or_else(|| vec![1]);
    if seeds.is_empty() {
        return Err(bad("seeds", "an empty list: the grid would have no points"));
    }
    let options =
        options::check_all(&parsed.options.0, "options").map_err(|(key, m)| bad(&key, &m))?;
    check_shape(&parsed, !workload_grid.is_empty()).map_err(refused)?;
    let points = check_points(parsed.points).map_err(refused)?;
    let mut plots = Vec::new();
    for (i, p) in parsed.plots.into_iter().enumerate() {
        plots.push(check_plot(p).map_err(|(k, m)| bad(&format!("plot[{i}].{k}"), &m))?);
    }
    let name = parsed.name.unwrap_or_else(|| {
        file.file_stem()
            .map_or_else(|| "sweep".to_string(), |s| s.to_string_lossy().into_owned())
    });
    Ok(Spec {
        file: file.to_path_buf(),
        name,
        description: parsed.description.unwrap_or_default(),
        devices: parsed.devices,
        grid: parsed.grid.0,
        workloads: parsed.workloads,
        workload_grid,
        seeds,
        options,
        points,
        plots,
    })
}

/// A refused key and why, as (key, message).
type Refusal = (String, String);

/// A refusal of `key` saying `message`.
fn refusal(key: &str, message: &str) -> Refusal {
    (key.to_string(), message.to_string())
}

/// Checks `[grid]`: every key has values, and no part of a key is empty.
fn check_grid(grid: &[(String, Vec<toml::Value>)]) -> Result<(), Refusal> {
    for (key, values) in grid {
        if values.is_empty() {
            return Err(refusal(
                &format!("grid.{key}"),
                "an empty list: the grid would have no points",
            ));
        }
        if key.split('.').any(str::is_empty) {
            return Err(refusal(
                &format!("grid.{key}"),
                "a device-file key has no empty part",
            ));
        }
    }
    Ok(())
}

/// `[workload_grid]`'s values as the generator's keys take them (strings), checked to have a
/// synthetic workload to be set in.
fn check_workload_grid(parsed: &SpecFile) -> Result<Vec<(String, Vec<String>)>, Refusal> {
    let mut workload_grid = Vec::new();
    for (key, values) in &parsed.workload_grid.0 {
        let name = format!("workload_grid.{key}");
        if values.is_empty() {
            return Err(refusal(
                &name,
                "an empty list: the grid would have no points",
            ));
        }
        let values = values
            .iter()
            .map(|v| match v {
                toml::Value::String(s) => Ok(s.clone()),
                toml::Value::Integer(i) => Ok(i.to_string()),
                toml::Value::Float(f) => Ok(f.to_string()),
                _ => Err(refusal(
                    &name,
                    "values are strings or numbers, as the generator's keys take",
                )),
            })
            .collect::<Result<Vec<_>, _>>()?;
        workload_grid.push((key.clone(), values));
    }
    if !workload_grid.is_empty() && !parsed.workloads.iter().any(|w| w.starts_with("synthetic:")) {
        return Err(refusal(
            "workload_grid",
            "sets generator keys, but `workloads` has no synthetic: workload to set them in",
        ));
    }
    Ok(workload_grid)
}

/// Checks that the spec has points: `devices` and `workloads` together (a grid laid over
/// them), or `[[point]]` tables; `workload_grid` says whether `[workload_grid]` has keys.
fn check_shape(parsed: &SpecFile, workload_grid: bool) -> Result<(), Refusal> {
    let gridded = !parsed.devices.is_empty() || !parsed.workloads.is_empty();
    if gridded && parsed.devices.is_empty() {
        return Err(refusal(
            "devices",
            "workloads are given but no device to run them on",
        ));
    }
    if gridded && parsed.workloads.is_empty() {
        return Err(refusal(
            "workloads",
            "devices are given but no workload to run on them",
        ));
    }
    if !gridded && (!parsed.grid.0.is_empty() || workload_grid) {
        return Err(refusal(
            "grid",
            "a grid needs `devices` and `workloads` to lay it over",
        ));
    }
    if !gridded && parsed.points.is_empty() {
        return Err(refusal(
            "devices",
            "the spec has no points: give `devices` and `workloads`, or [[point]] tables",
        ));
    }
    Ok(())
}

/// The `[[point]]` tables, their keys and options checked.
fn check_points(points: Vec<PointFile>) -> Result<Vec<ExplicitPoint>, Refusal> {
    let mut checked = Vec::new();
    for (i, p) in points.into_iter().enumerate() {
        let key = format!("point[{i}]");
        for (k, _) in &p.set.0 {
            if k.split('.').any(str::is_empty) {
                return Err(refusal(
                    &format!("{key}.set.{k}"),
                    "a device-file key has no empty part",
                ));
            }
        }
        let options = options::check_all(&p.options.0, &format!("{key}.options"))?;
        checked.push(ExplicitPoint {
            device: p.device,
            set: p.set.0,
            workload: p.workload,
            label: p.label,
            seed: p.seed,
            options,
        });
    }
    Ok(checked)
}

fn check_plot(p: PlotFile) -> Result<PlotSpec, (String, String)> {
    let refuse = |key: &str, why: &str| Err((key.to_string(), why.to_string()));
    let kind = p.kind;
    let only_metric = [
        ("x", p.x.is_some()),
        ("y", p.y.is_some()),
        ("log_x", p.log_x),
        ("log_y", p.log_y),
    ];
    if kind != PlotKind::Metric {
        if let Some((key, _)) = only_metric.iter().find(|(_, given)| *given) {
            return refuse(key, "only a metric plot has it");
        }
    }
    if kind != PlotKind::Cdf && p.op.is_some() {
        return refuse("op", "only a cdf plot has it");
    }
    let filter: Vec<(String, Cell)> = p
        .filter
        .0
        .iter()
        .map(|(column, value)| (column.clone(), Cell::from_toml(value)))
        .collect();
    Ok(match kind {
        PlotKind::Metric => {
            let series = match p.series {
                None => None,
                Some(OneOrMany::One(s)) => Some(s),
                Some(OneOrMany::Many(_)) => {
                    return refuse("series", "a metric plot's series is one column")
                }
            };
            let (Some(x), Some(y)) = (p.x, p.y) else {
                return refuse("x", "a metric plot needs x and y (columns)");
            };
            PlotSpec::Metric {
                x,
                y,
                series,
                filter,
                title: p.title,
                log_x: p.log_x,
                log_y: p.log_y,
            }
        }
        PlotKind::Cdf => PlotSpec::Cdf {
            op: p.op.unwrap_or(CdfOp::All),
            series: match p.series {
                None => Vec::new(),
                Some(OneOrMany::One(s)) => vec![s],
                Some(OneOrMany::Many(v)) => v,
            },
            filter,
            title: p.title,
        },
        PlotKind::Wear => {
            if p.series.is_some() {
                return refuse("series", "a wear plot draws each point on its own");
            }
            PlotSpec::Wear {
                filter,
                title: p.title,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str, size: Option<&str>) -> Result<Spec, String> {
        Spec::parse(text, Path::new("s.toml"), size).map_err(|e| e.to_string())
    }

    const BASE: &str = r#"
        devices = ["flashsim-2009"]
        workloads = ["synthetic:rw=randwrite"]
        [grid]
        "ssd.ftl" = ["page", "dftl"]
        "ssd.page.over_provisioning_fraction" = [0.07, 0.28]
        [options]
        max_requests = 1000000
        [size.quick]
        seeds = [1]
        options = { max_requests = 1000 }
        [size.quick.grid]
        "ssd.ftl" = ["fast"]
    "#;

    #[test]
    fn the_grid_keeps_the_files_order() {
        let spec = parse(BASE, None).unwrap();
        let keys: Vec<&str> = spec.grid.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["ssd.ftl", "ssd.page.over_provisioning_fraction"]);
        assert_eq!(spec.seeds, [1]);
        assert_eq!(
            spec.options,
            [(
                "max_requests".to_string(),
                OptionValue::Text("1000000".into())
            )]
        );
    }

    #[test]
    fn a_size_is_laid_over_key_by_key_keeping_the_order() {
        let spec = parse(BASE, Some("quick")).unwrap();
        assert_eq!(
            spec.options,
            [("max_requests".to_string(), OptionValue::Text("1000".into()))]
        );
        let keys: Vec<&str> = spec.grid.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["ssd.ftl", "ssd.page.over_provisioning_fraction"]);
        assert_eq!(spec.grid[0].1, [toml::Value::String("fast".into())]);
        assert_eq!(spec.grid[1].1.len(), 2, "keys the size does not state stay");
        let err = parse(BASE, Some("huge")).unwrap_err();
        assert!(err.contains("no [size.huge] (it has: quick)"), "{err}");
    }

    #[test]
    fn mistakes_are_refused_naming_the_key() {
        let cases = [
            (
                "devices = [\"a\"]\nworkloads = [\"b\"]\nbogus = 1",
                "unknown field `bogus`",
            ),
            (
                "devices = [\"a\"]\nworkloads = [\"b\"]\n[grid]\n\"ssd.ftl\" = []",
                "key `grid.ssd.ftl`: an empty list",
            ),
            (
                "devices = [\"a\"]\nworkloads = [\"b\"]\nseeds = []",
                "key `seeds`: an empty list",
            ),
            (
                "devices = [\"a\"]\nworkloads = [\"b\"]\n[workload_grid]\nbs = [\"4k\"]",
                "key `workload_grid`",
            ),
            (
                "devices = [\"a\"]\nworkloads = [\"b\"]\n[options]\njson = \"x\"",
                "key `options.json`: not an option",
            ),
            (
                "devices = [\"a\"]\nworkloads = [\"b\"]\n[options]\niodepth = \"deep\"",
                "key `options.iodepth`: expected a whole number",
            ),
            ("devices = [\"a\"]", "key `workloads`"),
            ("", "key `devices`: the spec has no points"),
            (
                "devices = [\"a\"]\nworkloads = [\"b\"]\n[[plot]]\nkind = \"metric\"\nx = \"seed\"",
                "key `plot[0].x`: a metric plot needs x and y",
            ),
            (
                "devices = [\"a\"]\nworkloads = [\"b\"]\n[[plot]]\nkind = \"wear\"\ny = \"seed\"",
                "key `plot[0].y`: only a metric plot",
            ),
            (
                "devices = [\"a\"]\nworkloads = [\"b\"]\n[[plot]]\nkind = \"pie\"",
                "unknown variant `pie`",
            ),
            (
                "[[point]]\ndevice = \"a\"\nworkload = \"b\"\noptions = { wrap = 1 }",
                "key `point[0].options.wrap`: expected true or false",
            ),
        ];
        for (text, expected) in cases {
            let err = parse(text, None).expect_err(text);
            assert!(err.contains(expected), "{text}: {err}");
            assert!(err.starts_with("s.toml: "), "{err}");
        }
    }
}
