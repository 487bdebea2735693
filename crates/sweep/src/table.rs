//! The results table: one row per point, its parameters and every scalar of its JSON document
//! flattened under stable dotted names. The table is plain data; `storsim-output` writes it
//! as CSV and Parquet.

use serde_json::Value;

/// One value of the table.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// No value: a column the point lacks.
    Empty,
    /// A number.
    Number(f64),
    /// A string.
    Text(String),
    /// A flag.
    Bool(bool),
}

impl Cell {
    /// A spec's TOML value as a cell; a table or an array is kept as its TOML text.
    pub fn from_toml(value: &toml::Value) -> Cell {
        match value {
            toml::Value::Integer(i) => Cell::Number(*i as f64),
            toml::Value::Float(f) => Cell::Number(*f),
            toml::Value::Boolean(b) => Cell::Bool(*b),
            toml::Value::String(s) => Cell::Text(s.clone()),
            other => Cell::Text(other.to_string()),
        }
    }

    /// A generator key's value: a number when it reads as one (`requests=1000`), else text
    /// (`bs=4k`).
    pub fn parse(text: &str) -> Cell {
        match text.parse::<f64>() {
            Ok(v) if v.is_finite() => Cell::Number(v),
            _ => Cell::Text(text.to_string()),
        }
    }

    /// A JSON scalar as a cell; `None` for arrays, objects and null.
    fn from_json(value: &Value) -> Option<Cell> {
        match value {
            Value::Number(n) => n.as_f64().map(Cell::Number),
            Value::String(s) => Some(Cell::Text(s.clone())),
            Value::Bool(b) => Some(Cell::Bool(*b)),
            _ => None,
        }
    }

    /// The cell's value as JSON: a value, not a document (a point's entry in its document
    /// and the report page's embedded table are made of them).
    pub fn json(&self) -> Value {
        match self {
            Cell::Empty => Value::Null,
            Cell::Number(v) => number_json(*v),
            Cell::Text(s) => Value::String(s.clone()),
            Cell::Bool(b) => Value::Bool(*b),
        }
    }

    /// The cell as the CSV writes it: whole numbers without a fraction, others in the
    /// shortest form that reads back to the same number.
    pub fn text(&self) -> String {
        match self {
            Cell::Empty => String::new(),
            Cell::Number(v) if v.fract() == 0.0 && v.abs() < 1e15 => format!("{}", *v as i64),
            Cell::Number(v) => format!("{v}"),
            Cell::Text(s) => s.clone(),
            Cell::Bool(b) => b.to_string(),
        }
    }
}

fn number_json(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        Value::from(v as i64)
    } else {
        serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
    }
}

/// The top-level keys of a point's document that are not results: the document's own
/// framing, the point's parameters (already columns), and the time series (arrays and a few
/// window sizes, which stay in the document).
const NOT_RESULTS: [&str; 7] = [
    "schema",
    "kind",
    "version",
    "command_line",
    "seed",
    "point",
    "series",
];

/// Every number, string and flag of a point's document outside arrays, named by its path
/// with dots (`summary.all.latency_ns.p99`), in the document's order; a run of several flows'
/// `flows` array by each flow's name (`flows.reader.slowdown`), so that flows are columns.
pub fn flatten(doc: &Value) -> Vec<(String, Cell)> {
    let mut out = Vec::new();
    if let Value::Object(map) = doc {
        for (key, value) in map {
            if NOT_RESULTS.contains(&key.as_str()) {
                continue;
            }
            match (key.as_str(), value) {
                ("flows", Value::Array(flows)) => {
                    for flow in flows {
                        if let Some(name) = flow.get("name").and_then(Value::as_str) {
                            flatten_into(format!("flows.{name}"), flow, &mut out);
                        }
                    }
                }
                _ => flatten_into(key.clone(), value, &mut out),
            }
        }
    }
    out
}

fn flatten_into(path: String, value: &Value, out: &mut Vec<(String, Cell)>) {
    match value {
        Value::Object(map) => {
            for (key, value) in map {
                flatten_into(format!("{path}.{key}"), value, out);
            }
        }
        other => {
            if let Some(cell) = Cell::from_json(other) {
                out.push((path, cell));
            }
        }
    }
}

/// The results table: column names, and one row of cells per point.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    /// The column names, in order.
    pub columns: Vec<String>,
    /// One cell per column for each point, in point order.
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    /// The table of rows given as named cells: the columns are `leading` and then every other
    /// name in the order rows first give it; a row lacking a column has `Empty` there.
    pub fn from_named(leading: &[String], rows: &[Vec<(String, Cell)>]) -> Table {
        let mut columns: Vec<String> = leading.to_vec();
        let mut index: std::collections::HashMap<String, usize> = columns
            .iter()
            .enumerate()
            .map(|(i, c)| (c.clone(), i))
            .collect();
        for row in rows {
            for (name, _) in row {
                if !index.contains_key(name) {
                    index.insert(name.clone(), columns.len());
                    columns.push(name.clone());
                }
            }
        }
        let rows = rows
            .iter()
            .map(|row| {
                let mut cells = vec![Cell::Empty; columns.len()];
                for (name, cell) in row {
                    // The first of a name wins: a parameter before a result of the same name.
                    let slot = &mut cells[index[name]];
                    if *slot == Cell::Empty {
                        *slot = cell.clone();
                    }
                }
                cells
            })
            .collect();
        Table { columns, rows }
    }

    /// The index of the column `name`.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_document_flattens_to_its_scalars_outside_arrays_and_framing() {
        let doc = json!({
            "schema": 1, "kind": "simulate", "seed": 3, "command_line": ["storsim"],
            "device": {"name": "d", "counters": {"erases": 12, "waf": 1.5}},
            "summary": {"all": {"iops": 1000.0, "latency_cdf": [{"fraction": 1.0}]}},
            "run": {"cancelled": false, "device_failed": null},
            "series": {"window_ns": 5},
        });
        let flat = flatten(&doc);
        let names: Vec<&str> = flat.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "device.counters.erases",
                "device.counters.waf",
                "device.name",
                "run.cancelled",
                "summary.all.iops"
            ]
        );
        assert_eq!(flat[1].1, Cell::Number(1.5));
        assert_eq!(flat[3].1, Cell::Bool(false));
    }

    #[test]
    fn a_run_of_several_flows_flattens_each_flow_under_its_name() {
        let doc = json!({
            "flows": [
                {"name": "reader", "slowdown": 1.5, "summary": {"iops": 10.0}},
                {"name": "writer", "slowdown": 3.0, "summary": {"iops": 20.0}},
            ],
            "fairness": 0.5,
        });
        let flat = flatten(&doc);
        let names: Vec<&str> = flat.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "fairness",
                "flows.reader.name",
                "flows.reader.slowdown",
                "flows.reader.summary.iops",
                "flows.writer.name",
                "flows.writer.slowdown",
                "flows.writer.summary.iops"
            ]
        );
        assert_eq!(flat[2].1, Cell::Number(1.5));
    }

    #[test]
    fn the_table_unions_columns_in_first_seen_order() {
        let leading = vec!["point".to_string(), "ssd.ftl".to_string()];
        let rows = vec![
            vec![
                ("point".into(), Cell::Text("a".into())),
                ("x".into(), Cell::Number(1.0)),
            ],
            vec![
                ("point".into(), Cell::Text("b,\"q\"".into())),
                ("ssd.ftl".into(), Cell::Text("page".into())),
                ("y".into(), Cell::Number(0.25)),
                ("x".into(), Cell::Number(3e20)),
            ],
        ];
        let table = Table::from_named(&leading, &rows);
        assert_eq!(table.columns, ["point", "ssd.ftl", "x", "y"]);
        assert_eq!(table.rows[0][3], Cell::Empty);
        assert_eq!(table.rows[1][1], Cell::Text("page".into()));
        assert_eq!(table.rows[1][2], Cell::Number(3e20));
    }

    #[test]
    fn numbers_print_whole_when_whole_and_exactly_otherwise() {
        assert_eq!(Cell::Number(42.0).text(), "42");
        assert_eq!(Cell::Number(-0.1).text(), "-0.1");
        assert_eq!(
            Cell::Number(1.0 / 3.0).text().parse::<f64>().unwrap(),
            1.0 / 3.0
        );
        assert_eq!(Cell::parse("4k"), Cell::Text("4k".into()));
        assert_eq!(Cell::parse("1000"), Cell::Number(1000.0));
        assert_eq!(Cell::parse("nan"), Cell::Text("nan".into()));
    }
}
