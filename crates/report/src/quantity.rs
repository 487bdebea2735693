//! What the numbers the report draws measure, and how it writes them: a readable unit chosen
//! by the values' magnitude (nanoseconds as µs, ms or s; bytes as KiB, MiB or GiB; fractions
//! as percentages), the counters' descriptors found through the document's declared device
//! model and parts, and the typed table of the documents' own numeric fields.

use serde_json::Value;
use storsim_core::{CounterDescriptor, Described, Member, Unit};

/// What a figure measures, for choosing the unit an axis or a table shows it in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Quantity {
    /// A quantity in one of the units counters are declared in.
    Of(Unit),
    /// Events per second (IOPS, flash programs per second).
    PerSecond,
    /// Bytes per second.
    BytesPerSecond,
}

/// A readable unit for a set of values: what to divide them by, and its symbol (empty for a
/// plain number).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Scale {
    pub divisor: f64,
    pub symbol: &'static str,
}

/// Time in nanoseconds: the largest unit that the largest value reaches at least once.
const NANOSECONDS: [(f64, &str); 4] = [(1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns")];
const SECONDS: [(f64, &str); 3] = [(86_400.0, "days"), (3_600.0, "h"), (1.0, "s")];
const BYTES: [(f64, &str); 5] = [
    (1_099_511_627_776.0, "TiB"),
    (1_073_741_824.0, "GiB"),
    (1_048_576.0, "MiB"),
    (1_024.0, "KiB"),
    (1.0, "bytes"),
];
const BYTES_PER_SECOND: [(f64, &str); 5] = [
    (1_099_511_627_776.0, "TiB/s"),
    (1_073_741_824.0, "GiB/s"),
    (1_048_576.0, "MiB/s"),
    (1_024.0, "KiB/s"),
    (1.0, "bytes/s"),
];
const MICROJOULES: [(f64, &str); 3] = [(1e6, "J"), (1e3, "mJ"), (1.0, "µJ")];
const MILLIJOULES: [(f64, &str); 2] = [(1e3, "J"), (1.0, "mJ")];

impl Scale {
    /// The readable unit for values of `quantity` whose largest magnitude is `largest`.
    pub fn of(quantity: Quantity, largest: f64) -> Scale {
        let steps: &[(f64, &'static str)] = match quantity {
            Quantity::Of(Unit::Nanoseconds) => &NANOSECONDS,
            Quantity::Of(Unit::Seconds) => &SECONDS,
            Quantity::Of(Unit::Bytes) => &BYTES,
            Quantity::BytesPerSecond => &BYTES_PER_SECOND,
            Quantity::Of(Unit::Microjoules) => &MICROJOULES,
            Quantity::Of(Unit::Millijoules) => &MILLIJOULES,
            Quantity::Of(Unit::Ratio) => &[(0.01, "%")],
            // The rates that are counted per second carry it in their names (IOPS).
            Quantity::PerSecond => &[(1.0, "")],
            Quantity::Of(Unit::Count | Unit::Factor | Unit::Flag) => &[(1.0, "")],
            Quantity::Of(unit @ (Unit::Pages | Unit::Blocks | Unit::Sectors | Unit::Cylinders)) => {
                return Scale {
                    divisor: 1.0,
                    symbol: unit.symbol(),
                }
            }
        };
        let largest = if largest.is_finite() {
            largest.abs()
        } else {
            0.0
        };
        let (divisor, symbol) = steps
            .iter()
            .copied()
            .find(|(d, _)| largest >= *d)
            .unwrap_or(steps[steps.len() - 1]);
        Scale { divisor, symbol }
    }

    /// The readable unit for `values` of `quantity`, by their largest magnitude.
    pub fn fitting(quantity: Quantity, values: impl Iterator<Item = f64>) -> Scale {
        let largest = values
            .filter(|v| v.is_finite())
            .fold(0.0f64, |m, v| m.max(v.abs()));
        Scale::of(quantity, largest)
    }

    /// `v` in this unit.
    pub fn apply(&self, v: f64) -> f64 {
        v / self.divisor
    }

    /// An axis or column title: `label (symbol)`, or the label alone for a plain number.
    pub fn title(&self, label: &str) -> String {
        if self.symbol.is_empty() {
            label.to_string()
        } else {
            format!("{label} ({})", self.symbol)
        }
    }
}

/// The device models whose counters the report knows, as documents name them in
/// `device.model` and `device.parts[].model`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Model {
    Ssd,
    Hdd,
    Hybrid,
    Array,
    Linear,
    Table,
    Step,
    /// An SSD's flash translation layer, by its registry name: its counters are described by
    /// the FTL's registry entry.
    Ftl(&'static str),
    /// A model this report does not know (from a newer storsim): its counters are shown but
    /// drawn by no family's plots.
    Other,
}

/// The host interface's and the faults layer's counters, which any model may carry: the
/// layers list them after the model's, unprefixed.
const LAYERS: [&[CounterDescriptor]; 3] = [
    storsim_hostif::COUNTERS,
    storsim_hostif::QUEUE_COUNTERS,
    storsim_faults::COUNTERS,
];

impl Model {
    pub fn from_name(name: &str) -> Model {
        match name {
            "ssd" => Model::Ssd,
            "hdd" => Model::Hdd,
            "hybrid" => Model::Hybrid,
            "array" => Model::Array,
            "linear" => Model::Linear,
            "table" => Model::Table,
            "step" => Model::Step,
            _ => storsim_ftl::find(name).map_or(Model::Other, |e| Model::Ftl(e.name)),
        }
    }

    /// The model's own descriptor tables (an SSD's FTL counters are its FTL part's).
    fn tables(self) -> &'static [&'static [CounterDescriptor]] {
        match self {
            Model::Ssd => &[
                storsim_ssd::COUNTERS,
                storsim_ssd::BUFFER_COUNTERS,
                storsim_ssd::STEADY_STATE_COUNTERS,
                storsim_ssd::DIE_SCHEDULING_COUNTERS,
            ],
            Model::Hdd => &[storsim_hdd::COUNTERS],
            Model::Hybrid => &[
                storsim_hybrid::CACHE_COUNTERS,
                storsim_hybrid::CACHE_FAULT_COUNTERS,
                storsim_hybrid::HOST_TIERED_COUNTERS,
                storsim_hybrid::HOST_TIERED_REMAP_COUNTERS,
            ],
            Model::Array => &[
                storsim_array::COUNTERS,
                storsim_array::PARITY_COUNTERS,
                storsim_array::SPARE_COUNTERS,
                storsim_array::FAULT_COUNTERS,
            ],
            Model::Linear => &[storsim_blackbox::linear::COUNTERS],
            Model::Table => &[storsim_blackbox::table::COUNTERS],
            Model::Step => &[storsim_blackbox::step::COUNTERS],
            Model::Ftl(name) => storsim_ftl::find(name).map_or(&[], |e| e.counters),
            Model::Other => &[],
        }
    }
}

/// What a document says its device is made of: the device's own model under no prefix, then
/// each part (`device.parts`) under its prefix. A document without `parts` (a device of one
/// model, or one written before parts were declared) is its model alone; one without
/// `device.model` is made of nothing the report knows.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Composition {
    pub units: Vec<(String, Model)>,
}

impl Composition {
    /// The composition a document's `device` object declares.
    pub fn of(device: Option<&Value>) -> Composition {
        let model = |v: &Value| v.get("model").and_then(Value::as_str).map(Model::from_name);
        let mut units = Vec::new();
        if let Some(m) = device.and_then(model) {
            units.push((String::new(), m));
        }
        let parts = device
            .and_then(|d| d.get("parts"))
            .and_then(Value::as_array);
        for part in parts.into_iter().flatten() {
            let prefix = part.get("prefix").and_then(Value::as_str);
            if let (Some(prefix), Some(m)) = (prefix, model(part)) {
                units.push((prefix.to_string(), m));
            }
        }
        Composition { units }
    }

    /// The prefixes of the units of `model`, in the document's order.
    pub fn prefixes(&self, model: Model) -> impl Iterator<Item = &str> {
        self.units
            .iter()
            .filter(move |(_, m)| *m == model)
            .map(|(p, _)| p.as_str())
    }

    /// What the counter `name` is: the descriptor of the innermost unit whose prefix it
    /// carries and whose model (or layers) describe it.
    pub fn describe(&self, name: &str) -> Option<Described> {
        let mut units: Vec<&(String, Model)> = self
            .units
            .iter()
            .filter(|(p, _)| name.starts_with(p.as_str()))
            .collect();
        units.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
        units.into_iter().find_map(|(prefix, model)| {
            model
                .tables()
                .iter()
                .chain(LAYERS.iter())
                .flat_map(|t| t.iter())
                .map(|descriptor| Described {
                    prefix: prefix.clone(),
                    descriptor,
                })
                .find(|d| d.matches(name).is_some())
        })
    }
}

/// A counter's label for an axis or a table: its descriptor's doc line without the final
/// stop, with the family member it is and the unit it is under (for a part's counter), e.g.
/// `NAND page programs by cause: gc, in flash_`.
pub(crate) fn counter_label(name: &str, described: &Described) -> String {
    let doc = described.descriptor.doc.trim_end_matches('.');
    let mut label = match described.matches(name) {
        Some(Member::Index(i)) => format!("{doc}: {i}"),
        Some(Member::Key(k)) => format!("{doc}: {k}"),
        _ => doc.to_string(),
    };
    if !described.prefix.is_empty() {
        label += &format!(", in {}", described.prefix.trim_end_matches('_'));
    }
    label
}

/// One numeric field of storsim's documents, as a sweep's results table names it: its path,
/// what it measures and how an axis names it. A `*` in a path stands for one key (an
/// operation, a statistic), and each `{}` in the label for the key it matched, in order.
pub(crate) struct Field {
    pub path: &'static str,
    pub quantity: Quantity,
    pub label: &'static str,
}

const fn field(path: &'static str, unit: Unit, label: &'static str) -> Field {
    Field {
        path,
        quantity: Quantity::Of(unit),
        label,
    }
}

/// The numeric fields of the simulate document (docs/json.md) that sweep plots draw.
pub(crate) const FIELDS: &[Field] = &[
    field("run.end_ns", Unit::Nanoseconds, "simulated time"),
    field("run.requests_issued", Unit::Count, "requests issued"),
    field("run.requests_completed", Unit::Count, "requests completed"),
    field("run.refused_requests", Unit::Count, "requests refused"),
    field("run.retries", Unit::Count, "retries"),
    field("workload.requests", Unit::Count, "requests in the workload"),
    field("workload.iodepth", Unit::Count, "workload queue depth"),
    field("device.capacity_bytes", Unit::Bytes, "device capacity"),
    field("device.queue_depth", Unit::Count, "device queue depth"),
    field("summary.elapsed_ns", Unit::Nanoseconds, "elapsed time"),
    field("summary.requests", Unit::Count, "requests"),
    field("summary.bytes", Unit::Bytes, "data moved"),
    Field {
        path: "summary.iops",
        quantity: Quantity::PerSecond,
        label: "IOPS",
    },
    Field {
        path: "summary.bandwidth_bytes_per_s",
        quantity: Quantity::BytesPerSecond,
        label: "bandwidth",
    },
    field("summary.latency_ns.*", Unit::Nanoseconds, "latency, {}"),
    field(
        "summary.queueing_ns.*",
        Unit::Nanoseconds,
        "queueing time, {}",
    ),
    field(
        "summary.service_ns.*",
        Unit::Nanoseconds,
        "service time, {}",
    ),
    field("summary.*.requests", Unit::Count, "{} requests"),
    field("summary.*.bytes", Unit::Bytes, "{} data"),
    Field {
        path: "summary.*.iops",
        quantity: Quantity::PerSecond,
        label: "{} IOPS",
    },
    Field {
        path: "summary.*.bandwidth_bytes_per_s",
        quantity: Quantity::BytesPerSecond,
        label: "{} bandwidth",
    },
    field(
        "summary.*.latency_ns.*",
        Unit::Nanoseconds,
        "{} latency, {}",
    ),
    field(
        "summary.*.queueing_ns.*",
        Unit::Nanoseconds,
        "{} queueing time, {}",
    ),
    field(
        "summary.*.service_ns.*",
        Unit::Nanoseconds,
        "{} service time, {}",
    ),
    field(
        "fairness",
        Unit::Factor,
        "fairness (least slowdown / greatest)",
    ),
];

/// A column's quantity and label: from [`FIELDS`] for a document field, from the counter's
/// descriptor (found through `composition`) for `device.counters.*`; `None` for a column
/// neither knows, which keeps its raw path.
pub(crate) fn column(path: &str, composition: &Composition) -> Option<(Quantity, String)> {
    if let Some(name) = path.strip_prefix("device.counters.") {
        let described = composition.describe(name)?;
        return Some((
            Quantity::Of(described.descriptor.unit),
            counter_label(name, &described),
        ));
    }
    let keys: Vec<&str> = path.split('.').collect();
    FIELDS.iter().find_map(|f| {
        let pattern: Vec<&str> = f.path.split('.').collect();
        if pattern.len() != keys.len() {
            return None;
        }
        let mut label = f.label.to_string();
        for (p, k) in pattern.iter().zip(&keys) {
            match *p {
                "*" => label = label.replacen("{}", k, 1),
                _ if p != k => return None,
                _ => {}
            }
        }
        Some((f.quantity, label))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn units_are_chosen_by_the_largest_value() {
        let ns = Quantity::Of(Unit::Nanoseconds);
        assert_eq!(Scale::of(ns, 20e6).symbol, "ms");
        assert_eq!(Scale::of(ns, 20e6).apply(20e6), 20.0);
        assert_eq!(Scale::of(ns, 3e9).symbol, "s");
        assert_eq!(Scale::of(ns, 999.0).symbol, "ns");
        assert_eq!(Scale::of(ns, 0.0).symbol, "ns");
        assert_eq!(Scale::of(ns, f64::NAN).symbol, "ns");
        assert_eq!(
            Scale::fitting(ns, [1e3, -5e4, f64::INFINITY].into_iter()).symbol,
            "µs"
        );
        let bytes = Quantity::Of(Unit::Bytes);
        assert_eq!(Scale::of(bytes, 3.0 * 1048576.0).symbol, "MiB");
        assert_eq!(Scale::of(bytes, 3.0 * 1048576.0).apply(1048576.0), 1.0);
        assert_eq!(Scale::of(bytes, 1023.0).symbol, "bytes");
        assert_eq!(Scale::of(Quantity::BytesPerSecond, 2e9).symbol, "GiB/s");
        let ratio = Scale::of(Quantity::Of(Unit::Ratio), 0.5);
        assert_eq!((ratio.symbol, ratio.apply(0.25)), ("%", 25.0));
        assert_eq!(Scale::of(Quantity::Of(Unit::Microjoules), 2e6).symbol, "J");
        assert_eq!(Scale::of(Quantity::Of(Unit::Pages), 2e6).symbol, "pages");
        let plain = Scale::of(Quantity::Of(Unit::Count), 2e6);
        assert_eq!(plain.title("requests"), "requests");
        assert_eq!(
            Scale::of(ns, 2e7).title("simulated time"),
            "simulated time (ms)"
        );
    }

    #[test]
    fn a_composition_is_the_model_then_the_declared_parts() {
        let device = json!({"model": "hybrid", "parts": [
            {"prefix": "flash_", "model": "ssd"}, {"prefix": "disk_", "model": "hdd"}]});
        let c = Composition::of(Some(&device));
        assert_eq!(
            c.units,
            [
                (String::new(), Model::Hybrid),
                ("flash_".to_string(), Model::Ssd),
                ("disk_".to_string(), Model::Hdd)
            ]
        );
        assert_eq!(c.prefixes(Model::Ssd).collect::<Vec<_>>(), ["flash_"]);
        let ssd = c.describe("flash_flash_programs_gc").unwrap();
        assert_eq!(ssd.descriptor, &storsim_ssd::FLASH_PROGRAMS_BY_CAUSE);
        assert_eq!(ssd.prefix, "flash_");
        let own = c.describe("host_writes_flash").unwrap();
        assert_eq!(own.descriptor, &storsim_hybrid::HOST_WRITES_FLASH);
        assert_eq!(c.describe("disk_flash_programs_gc"), None);
        // A document without parts is its model alone; without a model, nothing.
        let hdd = Composition::of(Some(&json!({"model": "hdd"})));
        assert_eq!(hdd.units, [(String::new(), Model::Hdd)]);
        assert!(Composition::of(Some(&json!({"name": "x"})))
            .units
            .is_empty());
    }

    #[test]
    fn an_ssds_ftl_part_describes_its_counters_and_no_other_ftls() {
        let ssd = |ftl: &str| {
            Composition::of(Some(&json!({"model": "ssd", "parts": [
                {"prefix": "ftl_", "model": ftl}, {"prefix": "precondition_ftl_", "model": ftl}]})))
        };
        let dftl = ssd("dftl");
        assert_eq!(dftl.units[1], ("ftl_".to_string(), Model::Ftl("dftl")));
        let entry = storsim_ftl::find("dftl").unwrap();
        for name in [
            "ftl_cmt_hits",
            "precondition_ftl_cmt_hits",
            "ftl_gc_copied_pages",
        ] {
            let d = dftl.describe(name).unwrap();
            assert!(
                entry
                    .counter_descriptors()
                    .any(|e| std::ptr::eq(e, d.descriptor)),
                "{name} is described by {:?}, not by dftl's table",
                d.descriptor.name
            );
            assert!(name.starts_with(&d.prefix));
        }
        // The page FTL has no mapping cache, and the SSD's own counters stay the SSD's.
        assert_eq!(ssd("page").describe("ftl_cmt_hits"), None);
        assert_eq!(
            dftl.describe("flash_programs_gc").unwrap().descriptor,
            &storsim_ssd::FLASH_PROGRAMS_BY_CAUSE
        );
        // A name that is neither a device model nor an FTL stays unknown.
        assert_eq!(Model::from_name("zns"), Model::Other);
    }

    #[test]
    fn columns_are_labelled_from_the_field_table_and_the_descriptors() {
        let c = Composition::of(Some(&json!({"model": "ssd"})));
        let (q, label) = column("run.end_ns", &c).unwrap();
        assert_eq!(
            (q, label.as_str()),
            (Quantity::Of(Unit::Nanoseconds), "simulated time")
        );
        let (_, label) = column("summary.read.latency_ns.p99", &c).unwrap();
        assert_eq!(label, "read latency, p99");
        let (q, label) = column("device.counters.die_3_utilisation", &c).unwrap();
        assert_eq!(q, Quantity::Of(Unit::Ratio));
        assert_eq!(label, "The die's busy fraction over the run: 3");
        assert_eq!(column("device.counters.no_such_counter", &c), None);
        assert_eq!(column("summary.read.latency_ns", &c), None);
        assert_eq!(column("point", &c), None);
    }
}
