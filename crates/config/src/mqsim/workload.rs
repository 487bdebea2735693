//! MQSim's `workload.xml` (`<MQSim_IO_Scenarios>`) mapped onto storsim flow files, one per
//! `<IO_Scenario>` (MQSim runs each scenario on a freshly built device).
//!
//! MQSim splits the logical space equally among a scenario's flows (flow i of n gets the i-th
//! n-th) and gives each its own NVMe queue pair; a synthetic flow touches the first
//! `Working_Set_Percentage` of its share. The flows below say the same with `lba_offset`,
//! `lba_size` and storsim's default of a queue pair per flow.

use super::device::{Shape, NVME_QUEUES};
use super::toml_out::TomlOut;
use super::xml::{self, Param, ParamSet};
use super::Note;
use crate::ConfigError;
use std::path::Path;

/// The elements every flow has.
const COMMON: &[&str] = &[
    "Priority_Class",
    "Device_Level_Data_Caching_Mode",
    "Channel_IDs",
    "Chip_IDs",
    "Die_IDs",
    "Plane_IDs",
    "Initial_Occupancy_Percentage",
];

const TRACE: &[&str] = &[
    "File_Path",
    "Percentage_To_Be_Executed",
    "Relay_Count",
    "Time_Unit",
];

const SYNTHETIC: &[&str] = &[
    "Working_Set_Percentage",
    "Synthetic_Generator_Type",
    "Read_Percentage",
    "Address_Distribution",
    "Percentage_of_Hot_Region",
    "Generated_Aligned_Addresses",
    "Address_Alignment_Unit",
    "Request_Size_Distribution",
    "Average_Request_Size",
    "Variance_Request_Size",
    "Seed",
    "Average_No_of_Reqs_in_Queue",
    "Bandwidth",
    "Intensity",
    "Stop_Time",
    "Total_Requests_To_Generate",
];

/// A sector, MQSim's unit of addresses and sizes.
const SECTOR_BYTES: u64 = 512;

/// One scenario's flows, and each flow's initial occupancy (for preconditioning).
pub(crate) struct Scenario {
    pub flows: TomlOut,
    pub occupancy_percent: Vec<f64>,
}

/// Reads `workload.xml`'s text (`file` names it; trace paths in it are relative to `dir`) into
/// one flow file per scenario, for a device of `shape`.
pub(crate) fn read(
    text: &str,
    file: &str,
    dir: &Path,
    shape: &Shape,
    notes: &mut Vec<Note>,
) -> Result<Vec<Scenario>, ConfigError> {
    let doc = xml::parse(text, file)?;
    let root = doc.root_element();
    if root.tag_name().name() != "MQSim_IO_Scenarios" {
        let text = "an MQSim workload definition starts with <MQSim_IO_Scenarios>";
        return Err(xml::error(
            file,
            xml::line_of(&doc, root),
            root.tag_name().name(),
            text,
        ));
    }
    let mut scenarios = Vec::new();
    for node in xml::elements(root) {
        let line = xml::line_of(&doc, node);
        if node.tag_name().name() != "IO_Scenario" {
            let text = "not a part of <MQSim_IO_Scenarios>, which holds <IO_Scenario> elements";
            return Err(xml::error(file, line, node.tag_name().name(), text));
        }
        let flows: Vec<_> = xml::elements(node).collect();
        if flows.is_empty() || flows.len() > NVME_QUEUES as usize {
            let text = format!("has {} flows; MQSim takes 1 to {NVME_QUEUES}", flows.len());
            return Err(xml::error(file, line, "IO_Scenario", text));
        }
        let mut scenario = Scenario {
            flows: TomlOut::default(),
            occupancy_percent: Vec::new(),
        };
        scenario.flows.comment(&format!(
            "Scenario {} of MQSim's workload definition {file}, imported by `storsim import mqsim`.",
            scenarios.len() + 1
        ));
        let n = flows.len();
        for (i, flow) in flows.into_iter().enumerate() {
            let (set, nested) = ParamSet::read(&doc, flow, file)?;
            if let Some(extra) = nested.first() {
                let text = "a flow's parameters hold text only";
                return Err(xml::error(
                    file,
                    xml::line_of(&doc, *extra),
                    extra.tag_name().name(),
                    text,
                ));
            }
            let mut m = FlowMapping {
                set,
                taken: Vec::new(),
                notes,
                section: format!("flow.{i}"),
                out: &mut scenario.flows,
            };
            // The name and the workload lead the table; each kind of flow fills them in.
            m.put("name", "", "");
            m.put("workload", "", "");
            let occupancy = m.common(i, n, shape)?;
            match m.set.element.as_str() {
                "IO_Flow_Parameter_Set_Trace_Based" => m.trace(dir)?,
                "IO_Flow_Parameter_Set_Synthetic" => m.synthetic(i, n)?,
                other => {
                    let text = "not a flow: MQSim has <IO_Flow_Parameter_Set_Synthetic> and \
                                <IO_Flow_Parameter_Set_Trace_Based>";
                    return Err(xml::error(file, m.set.line, other, text));
                }
            }
            scenario.occupancy_percent.push(occupancy);
        }
        scenarios.push(scenario);
    }
    if scenarios.is_empty() {
        return Err(xml::error(
            file,
            xml::line_of(&doc, root),
            "MQSim_IO_Scenarios",
            "has no <IO_Scenario>",
        ));
    }
    Ok(scenarios)
}

/// One flow being mapped into its `[[flow]]` table.
struct FlowMapping<'a> {
    set: ParamSet,
    /// The lines of the parameters taken so far, for notes on them.
    taken: Vec<(String, u32)>,
    notes: &'a mut Vec<Note>,
    section: String,
    out: &'a mut TomlOut,
}

impl FlowMapping<'_> {
    /// Takes the parameter `name` out of the set, remembering its line.
    fn take(&mut self, name: &str) -> Option<Param> {
        let p = self.set.take(name)?;
        self.taken.push((p.name.clone(), p.line));
        Some(p)
    }

    fn put(&mut self, key: &str, value: impl Into<toml::Value>, origin: &str) {
        self.out.put(&self.section, key, value, origin);
    }

    fn note(&mut self, p: &Param, text: impl Into<String>) {
        self.notes.push(Note {
            file: self.set.file.clone(),
            line: p.line,
            element: p.name.clone(),
            text: text.into(),
        });
    }

    fn origin(p: &Param) -> String {
        format!("{} (line {})", p.name, p.line)
    }

    /// The comment for a value made of several elements: the lines they span.
    fn lines(origins: &[String]) -> String {
        let lines: Vec<u32> = origins
            .iter()
            .filter_map(|o| o.split("(line ").nth(1)?.trim_end_matches(')').parse().ok())
            .collect();
        match (lines.iter().min(), lines.iter().max()) {
            (Some(a), Some(b)) => format!("MQSim's synthetic generator, lines {a} to {b}"),
            _ => "MQSim's synthetic generator, its defaults".to_string(),
        }
    }

    /// What every flow has: its class, cache mode, resource partition, its share of the logical
    /// space; returns its initial occupancy in percent.
    fn common(&mut self, i: usize, n: usize, shape: &Shape) -> Result<f64, ConfigError> {
        let classes = ["URGENT", "HIGH", "MEDIUM", "LOW"];
        if let Some(p) = self.take("Priority_Class") {
            let c = p.choice(&self.set, &classes)?;
            self.put("class", classes[c].to_ascii_lowercase(), &Self::origin(&p));
        }
        if let Some(p) = self.take("Device_Level_Data_Caching_Mode") {
            let modes = [
                "WRITE_CACHE",
                "READ_CACHE",
                "WRITE_READ_CACHE",
                "TURNED_OFF",
            ];
            let mode = p.choice(&self.set, &modes)?;
            let value = ["write", "off", "write", "off"][mode];
            self.put("data_cache", value, &Self::origin(&p));
            if mode == 1 || mode == 2 {
                self.note(
                    &p,
                    "storsim's write buffer caches writes only: reads are not cached",
                );
            }
        }
        for (name, key, count) in [
            ("Channel_IDs", "channels", shape.channels),
            ("Chip_IDs", "chips", shape.chips_per_channel),
            ("Die_IDs", "dies", shape.dies_per_chip),
            ("Plane_IDs", "planes", shape.planes_per_die),
        ] {
            if let Some(p) = self.take(name) {
                let ids = p.ids(&self.set, count)?;
                // Every id is storsim's default: say nothing, so the flow keeps the device's
                // whole back end.
                if ids.len() as u64 != count {
                    let ids: Vec<i64> = ids.into_iter().map(|id| id as i64).collect();
                    self.put(key, ids, &Self::origin(&p));
                }
            }
        }
        let share = 100.0 / n as f64;
        self.put(
            "lba_offset",
            format!("{}%", share * i as f64),
            "MQSim gives flow i of n the i-th n-th of the logical space",
        );
        self.put("lba_size", format!("{share}%"), "");
        let occupancy = match self.take("Initial_Occupancy_Percentage") {
            Some(p) => {
                let v = p.number(&self.set, 0.0, 100.0)?;
                if !shape.preconditioning {
                    self.note(
                        &p,
                        "has no effect: the device's Enabled_Preconditioning is false",
                    );
                }
                v
            }
            None => 0.0,
        };
        Ok(occupancy)
    }

    /// A trace-based flow: its file, read as MQSim's ASCII layout.
    fn trace(mut self, dir: &Path) -> Result<(), ConfigError> {
        let Some(path) = self.take("File_Path") else {
            let file = self.set.file.clone();
            return Err(xml::error(
                &file,
                self.set.line,
                &self.set.element,
                "has no <File_Path>",
            ));
        };
        let resolved = dir.join(&path.value);
        self.put(
            "name",
            format!("Host.IO_Flow.Trace.{}", path.value),
            "MQSim's name for the flow",
        );
        self.put(
            "workload",
            resolved.display().to_string(),
            &format!("{}, from the workload file's folder", Self::origin(&path)),
        );
        // MQSim ignores its own Time_Unit and reads nanoseconds (CMU-SAFARI/MQSim PR #23);
        // storsim does what the setting says.
        if let Some(p) = self.take("Time_Unit") {
            let unit = p.choice(&self.set, &["PICOSECOND", "NANOSECOND", "MICROSECOND"])?;
            if unit != 1 {
                let scale = [0.001, 1.0, 1000.0][unit];
                let text = format!(
                    "{}: the trace's times are read as nanoseconds",
                    Self::origin(&p)
                );
                self.put("time_scale", scale, &text);
                self.note(&p, "the trace's times are scaled as it says; MQSim itself ignores Time_Unit and reads nanoseconds");
            }
        }
        if let Some(p) = self.take("Relay_Count") {
            let passes = p.integer(&self.set, 1, u64::from(u32::MAX))?;
            if passes > 1 {
                self.put("repeat", passes as i64, &Self::origin(&p));
            }
        }
        if let Some(p) = self.take("Percentage_To_Be_Executed") {
            let percent = p.integer(&self.set, 1, 100)?;
            if percent < 100 {
                // MQSim counts the trace's requests, one a line, and runs that share of them.
                let lines = count_lines(&resolved).map_err(|e| {
                    self.set
                        .error(&path, format!("{}: {e}", resolved.display()))
                })?;
                let head = (lines * percent / 100).max(1);
                let text = format!(
                    "{}: {percent} % of the trace's {lines} requests",
                    Self::origin(&p)
                );
                self.put("head", head as i64, &text);
            }
        }
        let known: Vec<&str> = COMMON.iter().chain(TRACE).copied().collect();
        self.set.finish(&known)
    }

    /// A synthetic flow: a `synthetic:` spec with MQSim's generator settings.
    fn synthetic(mut self, i: usize, n: usize) -> Result<(), ConfigError> {
        self.put(
            "name",
            format!("Host.IO_Flow.Synth.No_{i}"),
            "MQSim's name for the flow",
        );
        let mut spec: Vec<String> = Vec::new();
        let mut from: Vec<String> = Vec::new();
        let read_percent = self.integer("Read_Percentage", 50, 0, 100, &mut from)?;
        let distribution = self.choice(
            "Address_Distribution",
            &[
                "STREAMING",
                "RANDOM_UNIFORM",
                "UNIFORM_RANDOM",
                "RANDOM_HOTCOLD",
                "HOTCOLD_RANDOM",
                "MIXED_STREAMING_RANDOM",
            ],
            1,
            &mut from,
        )?;
        let random = distribution != 0;
        let rw = match (random, read_percent) {
            (false, 100) => "read".to_string(),
            (false, 0) => "write".to_string(),
            (false, r) => format!("rw,rwmixread={r}"),
            (true, 100) => "randread".to_string(),
            (true, 0) => "randwrite".to_string(),
            (true, r) => format!("randrw,rwmixread={r}"),
        };
        spec.push(format!("rw={rw}"));
        let hot = self.integer("Percentage_of_Hot_Region", 0, 0, 100, &mut from)?;
        if distribution == 3 || distribution == 4 {
            // MQSim sends a share (1 - h) of the requests to the first h of the flow's space.
            let h = (hot as f64 / 100.0).clamp(0.01, 0.99);
            spec.push(format!("dist=hotcold:{h}:{}", 1.0 - h));
        } else if distribution == 5 {
            self.note_on(
                "Address_Distribution",
                "MIXED_STREAMING_RANDOM is not mapped yet: uniform random",
            );
        }
        let sectors = self.integer("Average_Request_Size", 8, 1, 1 << 24, &mut from)?;
        spec.push(format!("bs={}", sectors * SECTOR_BYTES));
        let sizes = self.choice(
            "Request_Size_Distribution",
            &["FIXED", "NORMAL"],
            0,
            &mut from,
        )?;
        let variance = self.integer("Variance_Request_Size", 0, 0, 1 << 24, &mut from)?;
        if sizes == 1 && variance > 0 {
            self.note_on(
                "Request_Size_Distribution",
                "NORMAL sizes are not mapped yet: every request is Average_Request_Size",
            );
        }
        let aligned = self.flag("Generated_Aligned_Addresses", true, &mut from)?;
        let unit = self.integer("Address_Alignment_Unit", 8, 1, 1 << 24, &mut from)?;
        if random {
            let align = if aligned {
                unit * SECTOR_BYTES
            } else {
                SECTOR_BYTES
            };
            spec.push(format!("align={align}"));
        }
        let seed = self.integer("Seed", 0, 0, u64::from(u32::MAX), &mut from)?;
        spec.push(format!("seed={seed}"));
        self.generator(&mut spec, &mut from, sectors)?;
        let working = self.integer("Working_Set_Percentage", 100, 0, 100, &mut from)?;
        // MQSim takes anything outside 1..=100 as the whole space.
        let working = if (1..=100).contains(&working) {
            working
        } else {
            100
        };
        if working < 100 {
            let share = 100.0 / n as f64;
            self.put("lba_size", format!("{}%", share * working as f64 / 100.0), "Working_Set_Percentage of the flow's share: MQSim's synthetic flows touch only that much of it");
        }
        self.put(
            "workload",
            format!("synthetic:{}", spec.join(",")),
            &Self::lines(&from),
        );
        let known: Vec<&str> = COMMON.iter().chain(SYNTHETIC).copied().collect();
        self.set.finish(&known)
    }

    /// The generator: a closed loop of `Average_No_of_Reqs_in_Queue` (QUEUE_DEPTH) or an open
    /// loop at `Bandwidth` bytes a second (BANDWIDTH; `ARRIVAL_RATE` and `Intensity` in older
    /// MQSim), stopping at `Stop_Time` or after `Total_Requests_To_Generate`.
    fn generator(
        &mut self,
        spec: &mut Vec<String>,
        from: &mut Vec<String>,
        sectors: u64,
    ) -> Result<(), ConfigError> {
        let kind = self.choice(
            "Synthetic_Generator_Type",
            &["QUEUE_DEPTH", "BANDWIDTH", "ARRIVAL_RATE"],
            0,
            from,
        )?;
        let depth = self.integer("Average_No_of_Reqs_in_Queue", 1, 1, 65_536, from)?;
        let bandwidth = match self.take("Bandwidth").or_else(|| self.take("Intensity")) {
            Some(p) => {
                from.push(Self::origin(&p));
                let v = p.integer(&self.set, 0, u64::MAX)?;
                if kind == 0 {
                    self.note(&p, "has no effect with the QUEUE_DEPTH generator");
                }
                v
            }
            None => 0,
        };
        if kind == 0 {
            spec.push(format!("iodepth={depth}"));
        } else {
            let iops = bandwidth / (sectors * SECTOR_BYTES);
            if iops == 0 {
                let file = self.set.file.clone();
                let text = "a BANDWIDTH flow needs <Bandwidth> of at least one request a second";
                return Err(xml::error(&file, self.set.line, &self.set.element, text));
            }
            spec.push(format!("iops={iops}"));
        }
        let stop_ns = self.integer("Stop_Time", 0, 0, u64::MAX, from)?;
        let total = self.integer("Total_Requests_To_Generate", 0, 0, u64::MAX, from)?;
        if stop_ns > 0 {
            spec.push(format!("duration={stop_ns}ns"));
        } else if total > 0 {
            spec.push(format!("requests={total}"));
        } else {
            let file = self.set.file.clone();
            let text = "a synthetic flow needs a Stop_Time or a Total_Requests_To_Generate above 0";
            return Err(xml::error(&file, self.set.line, &self.set.element, text));
        }
        Ok(())
    }

    fn integer(
        &mut self,
        name: &str,
        default: u64,
        min: u64,
        max: u64,
        from: &mut Vec<String>,
    ) -> Result<u64, ConfigError> {
        match self.take(name) {
            Some(p) => {
                from.push(Self::origin(&p));
                p.integer(&self.set, min, max)
            }
            None => Ok(default),
        }
    }

    fn flag(
        &mut self,
        name: &str,
        default: bool,
        from: &mut Vec<String>,
    ) -> Result<bool, ConfigError> {
        match self.take(name) {
            Some(p) => {
                from.push(Self::origin(&p));
                p.flag(&self.set)
            }
            None => Ok(default),
        }
    }

    fn choice(
        &mut self,
        name: &str,
        choices: &[&str],
        default: usize,
        from: &mut Vec<String>,
    ) -> Result<usize, ConfigError> {
        match self.take(name) {
            Some(p) => {
                from.push(Self::origin(&p));
                p.choice(&self.set, choices)
            }
            None => Ok(default),
        }
    }

    /// A note on the element `name`, at its line if the file sets it.
    fn note_on(&mut self, name: &str, text: &str) {
        let line = self
            .taken
            .iter()
            .find(|(n, _)| n == name)
            .map_or(self.set.line, |&(_, line)| line);
        self.notes.push(Note {
            file: self.set.file.clone(),
            line,
            element: name.to_string(),
            text: text.to_string(),
        });
    }
}

/// The requests in an MQSim trace: its lines that are not blank.
fn count_lines(path: &Path) -> std::io::Result<u64> {
    use std::io::BufRead;
    let file = std::io::BufReader::new(std::fs::File::open(path)?);
    let mut n = 0;
    for line in file.lines() {
        if !line?.trim().is_empty() {
            n += 1;
        }
    }
    Ok(n)
}
