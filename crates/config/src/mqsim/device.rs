//! MQSim's `ssdconfig.xml` (`<Execution_Parameter_Set>`) mapped onto a storsim SSD device file.
//!
//! Every element MQSim reads is either turned into a storsim key (its origin written beside it
//! in the file) or named in one note saying why it has no effect; an element MQSim does not read
//! is an error. An element left out takes MQSim's built-in default (its
//! `src/exec/*_Parameter_Set.cpp`), as MQSim would. docs/formats/mqsim-xml.md has the table.

use super::toml_out::TomlOut;
use super::xml::{self, Param, ParamSet};
use super::Note;
use crate::ConfigError;

/// The most commands storsim's host interface holds over all its queue pairs.
const HOST_COMMANDS_MAX: u64 = 65_536;

/// Queue pairs an imported NVMe device gets: MQSim gives each flow its own, and a scenario has
/// at most eight flows (its README).
pub(crate) const NVME_QUEUES: u64 = 8;

/// What the workload mapping needs to know of the device.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Shape {
    pub channels: u64,
    pub chips_per_channel: u64,
    pub dies_per_chip: u64,
    pub planes_per_die: u64,
    pub nvme: bool,
    pub preconditioning: bool,
    /// The FTL section whose `gc_min_invalid_fraction` each scenario sets, with RANDOM_PP:
    /// MQSim takes that threshold from the flows' highest initial occupancy.
    pub random_pp_section: Option<&'static str>,
}

/// The imported device: its file's text and what the workload mapping needs.
pub(crate) struct Device {
    pub toml: TomlOut,
    pub shape: Shape,
}

/// The elements of each set, as MQSim 7ec40e3's files have them (and the older names its
/// earlier versions read).
const HOST_ELEMENTS: &[&str] = &[
    "PCIe_Lane_Bandwidth",
    "PCIe_Lane_Count",
    "SATA_Processing_Delay",
    "Enable_ResponseTime_Logging",
    "ResponseTime_Logging_Period_Length",
];

const DEVICE_ELEMENTS: &[&str] = &[
    "Seed",
    "Enabled_Preconditioning",
    "Memory_Type",
    "HostInterface_Type",
    "IO_Queue_Depth",
    "Queue_Fetch_Size",
    "Caching_Mechanism",
    "Data_Cache_Sharing_Mode",
    "Data_Cache_Capacity",
    "Data_Cache_DRAM_Row_Size",
    "Data_Cache_DRAM_Data_Rate",
    "Data_Cache_DRAM_Data_Busrt_Size",
    "Data_Cache_DRAM_tRCD",
    "Data_Cache_DRAM_tCL",
    "Data_Cache_DRAM_tRP",
    "Address_Mapping",
    "Ideal_Mapping_Table",
    "CMT_Capacity",
    "CMT_Sharing_Mode",
    "Plane_Allocation_Scheme",
    "Transaction_Scheduling_Policy",
    "Overprovisioning_Ratio",
    "GC_Exec_Threshold",
    "GC_Block_Selection_Policy",
    "Use_Copyback_for_GC",
    "Preemptible_GC_Enabled",
    "GC_Hard_Threshold",
    "Dynamic_Wearleveling_Enabled",
    "Static_Wearleveling_Enabled",
    "Static_Wearleveling_Threshold",
    "Preferred_suspend_erase_time_for_read",
    "Preferred_suspend_erase_time_for_write",
    "Preferred_suspend_write_time_for_read",
    "Flash_Channel_Count",
    "Flash_Channel_Width",
    "Channel_Transfer_Rate",
    "Chip_No_Per_Channel",
    "Flash_Comm_Protocol",
];

const FLASH_ELEMENTS: &[&str] = &[
    "Flash_Technology",
    "CMD_Suspension_Support",
    "Page_Read_Latency_LSB",
    "Page_Read_Latency_CSB",
    "Page_Read_Latency_MSB",
    "Page_Program_Latency_LSB",
    "Page_Program_Latency_CSB",
    "Page_Program_Latency_MSB",
    "Block_Erase_Latency",
    "Block_PE_Cycles_Limit",
    "Suspend_Erase_Time",
    "Suspend_Program_Time",
    "Die_No_Per_Chip",
    "Plane_No_Per_Die",
    "Block_No_Per_Plane",
    "Page_No_Per_Block",
    "Page_Capacity",
    "Page_Metadat_Capacity",
];

/// The 24 plane allocation orders (Tavakkol et al.), as MQSim and the page FTL name them.
const PLANE_ALLOCATION_SCHEMES: &[&str] = storsim_ftl::page::PLANE_ALLOCATIONS.split_at(1).1;

/// Reads `ssdconfig.xml`'s text (`file` names it) into a device file.
pub(crate) fn read(text: &str, file: &str, notes: &mut Vec<Note>) -> Result<Device, ConfigError> {
    let doc = xml::parse(text, file)?;
    let root = doc.root_element();
    if root.tag_name().name() != "Execution_Parameter_Set" {
        return Err(xml::error(
            file,
            xml::line_of(&doc, root),
            root.tag_name().name(),
            "an MQSim SSD configuration starts with <Execution_Parameter_Set>",
        ));
    }
    let mut host = None;
    let mut device = None;
    for node in xml::elements(root) {
        let line = xml::line_of(&doc, node);
        match node.tag_name().name() {
            "Host_Parameter_Set" => host = Some(ParamSet::read(&doc, node, file)?.0),
            "Device_Parameter_Set" => device = Some(ParamSet::read(&doc, node, file)?),
            other => {
                let text = "not a part of <Execution_Parameter_Set>, which has <Host_Parameter_Set> and <Device_Parameter_Set>";
                return Err(xml::error(file, line, other, text));
            }
        }
    }
    let root_line = xml::line_of(&doc, root);
    let (device, nested) = device.ok_or_else(|| {
        xml::error(
            file,
            root_line,
            "Execution_Parameter_Set",
            "has no <Device_Parameter_Set>",
        )
    })?;
    let mut flash = None;
    for node in nested {
        let line = xml::line_of(&doc, node);
        if node.tag_name().name() != "Flash_Parameter_Set" {
            let text = "not a part of <Device_Parameter_Set>, whose only nested set is <Flash_Parameter_Set>";
            return Err(xml::error(file, line, node.tag_name().name(), text));
        }
        flash = Some(ParamSet::read(&doc, node, file)?.0);
    }
    let flash = flash.ok_or_else(|| {
        xml::error(
            file,
            device.line,
            "Device_Parameter_Set",
            "has no <Flash_Parameter_Set>",
        )
    })?;
    let mut out = TomlOut::default();
    out.comment(&format!(
        "Imported from MQSim's SSD configuration {file} by `storsim import mqsim`."
    ));
    out.comment(
        "Each value names the element it came from; docs/formats/mqsim-xml.md has the mapping.",
    );
    out.order(&[
        "",
        "ssd",
        "ssd.suspend",
        "ssd.geometry",
        "ssd.timing",
        "ssd.write_buffer",
        "ssd.page",
        "ssd.dftl",
        "ssd.dftl.page",
        "host_interface",
    ]);
    out.put("", "model", "ssd", "an MQSim device is an SSD");
    let flash_shape = map_flash(Mapping { set: flash, notes }, &mut out)?;
    let shape = map_device(Mapping { set: device, notes }, &mut out, &flash_shape)?;
    // A file without a host set has MQSim's default host: map an empty one.
    let host = host.unwrap_or(ParamSet {
        file: file.to_string(),
        element: "Host_Parameter_Set".to_string(),
        line: root_line,
        params: Vec::new(),
    });
    map_host(Mapping { set: host, notes }, &mut out, shape.nvme)?;
    Ok(Device { toml: out, shape })
}

/// One set being mapped: its parameters not yet taken, and where notes go.
struct Mapping<'a> {
    set: ParamSet,
    notes: &'a mut Vec<Note>,
}

/// A value read from a set: the parameter it came from, or MQSim's default when the file
/// leaves the element out.
struct Got<T> {
    value: T,
    name: String,
    param: Option<Param>,
}

impl<T> Got<T> {
    /// Where the value came from, for the comment beside its key.
    fn origin(&self) -> String {
        match &self.param {
            Some(p) => format!("{} (line {})", p.name, p.line),
            None => format!("{}: not in the file, MQSim's default", self.name),
        }
    }

    fn is_set(&self) -> bool {
        self.param.is_some()
    }
}

impl Mapping<'_> {
    /// Takes `name` out of the set (so that what is left is unknown) and reads it with `read`,
    /// or gives `default` when the file leaves it out.
    fn get<T>(
        &mut self,
        name: &str,
        default: T,
        read: impl FnOnce(&Param, &ParamSet) -> Result<T, ConfigError>,
    ) -> Result<Got<T>, ConfigError> {
        let param = self.set.take(name);
        let value = match &param {
            Some(p) => read(p, &self.set)?,
            None => default,
        };
        Ok(Got {
            value,
            name: name.to_string(),
            param,
        })
    }

    fn integer(
        &mut self,
        name: &str,
        default: u64,
        (min, max): (u64, u64),
    ) -> Result<Got<u64>, ConfigError> {
        self.get(name, default, |p, s| p.integer(s, min, max))
    }

    fn number(
        &mut self,
        name: &str,
        default: f64,
        (min, max): (f64, f64),
    ) -> Result<Got<f64>, ConfigError> {
        self.get(name, default, |p, s| p.number(s, min, max))
    }

    fn flag(&mut self, name: &str, default: bool) -> Result<Got<bool>, ConfigError> {
        self.get(name, default, Param::flag)
    }

    /// The index of the value among `choices` (MQSim's names).
    fn choice(
        &mut self,
        name: &str,
        choices: &[&str],
        default: usize,
    ) -> Result<Got<usize>, ConfigError> {
        self.get(name, default, |p, s| p.choice(s, choices))
    }

    /// A note on `got`'s element, at its line (or the set's when the file leaves it out).
    fn note<T>(&mut self, got: &Got<T>, text: impl Into<String>) {
        self.notes.push(Note {
            file: self.set.file.clone(),
            line: got.param.as_ref().map_or(self.set.line, |p| p.line),
            element: got.name.clone(),
            text: text.into(),
        });
    }

    /// Takes `name` and, when the file sets it, notes it with `text`.
    fn note_if_set(&mut self, name: &str, text: &str) {
        let got = Got {
            value: (),
            name: name.to_string(),
            param: self.set.take(name),
        };
        if got.is_set() {
            self.note(&got, text);
        }
    }
}

/// MQSim's nanoseconds as storsim's microseconds.
fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// The longest time MQSim's files give, in ns: an hour, storsim's bound on every time.
const NS_MAX: u64 = 3_600_000_000_000;

const U32_MAX: u64 = u32::MAX as u64;

/// What the flash set says that the device set needs.
struct FlashShape {
    dies_per_chip: u64,
    planes_per_die: u64,
    blocks_per_plane: u64,
    pages_per_block: u64,
    page_bytes: u64,
}

const CELLS: [&str; 3] = ["SLC", "MLC", "TLC"];

/// Maps `<Flash_Parameter_Set>`: the cell, its times, its endurance and the geometry below a
/// chip.
fn map_flash(mut m: Mapping, out: &mut TomlOut) -> Result<FlashShape, ConfigError> {
    let cell = m.choice("Flash_Technology", &CELLS, 1)?;
    let timing = "ssd.timing";
    out.put(
        timing,
        "cell",
        CELLS[cell.value].to_ascii_lowercase(),
        &cell.origin(),
    );
    // MQSim names the page levels LSB, CSB and MSB; an MLC cell has no CSB page, an SLC cell
    // only an LSB page. storsim's page p of a block is of level p % bits, LSB first.
    let levels: &[&str] = match cell.value {
        0 => &["LSB"],
        1 => &["LSB", "MSB"],
        _ => &["LSB", "CSB", "MSB"],
    };
    for (what, key, default) in [
        ("Read", "read_us_by_level", 75_000),
        ("Program", "program_us_by_level", 750_000),
    ] {
        let mut times = Vec::new();
        let mut from = Vec::new();
        for level in ["LSB", "CSB", "MSB"] {
            let name = format!("Page_{what}_Latency_{level}");
            if levels.contains(&level) {
                let t = m.integer(&name, default, (1, NS_MAX))?;
                times.push(toml::Value::Float(us(t.value)));
                from.push(t.origin());
            } else {
                let article = if cell.value == 1 { "an" } else { "a" };
                let text = format!(
                    "has no effect: {article} {} cell has no {level} page",
                    CELLS[cell.value]
                );
                m.note_if_set(&name, &text);
            }
        }
        out.put(timing, key, times, &from.join(", "));
    }
    let erase = m.integer("Block_Erase_Latency", 0, (1, NS_MAX))?;
    if !erase.is_set() {
        let text = "is required: MQSim has no default erase time";
        return Err(xml::error(
            &m.set.file,
            m.set.line,
            "Block_Erase_Latency",
            text,
        ));
    }
    out.put(timing, "erase_us", us(erase.value), &erase.origin());
    let endurance = m.integer("Block_PE_Cycles_Limit", 10_000, (1, U32_MAX))?;
    out.put(
        "ssd",
        "endurance_erases",
        endurance.value as i64,
        &endurance.origin(),
    );
    map_suspension(&mut m, out)?;
    let geometry = "ssd.geometry";
    let mut shape = [0u64; 4];
    for (slot, (name, key, default)) in shape.iter_mut().zip([
        ("Die_No_Per_Chip", "dies_per_chip", 2),
        ("Plane_No_Per_Die", "planes_per_die", 2),
        ("Block_No_Per_Plane", "blocks_per_plane", 2048),
        ("Page_No_Per_Block", "pages_per_block", 256),
    ]) {
        let v = m.integer(name, default, (1, U32_MAX))?;
        out.put(geometry, key, v.value as i64, &v.origin());
        *slot = v.value;
    }
    let page = m.integer("Page_Capacity", 8192, (1, 1 << 20))?;
    out.put(geometry, "page_bytes", page.value as i64, &page.origin());
    // MQSim's transactions carry the request's sectors over the channel and never the page's
    // metadata, so the spare area adds no transfer time there: storsim's is left at zero.
    let oob = m.integer("Page_Metadat_Capacity", 8192, (0, page.value))?;
    if oob.is_set() && oob.value > 0 {
        m.note(
            &oob,
            "moves no bytes in MQSim (its transfers carry the request's sectors only), so \
             storsim's oob_bytes stays 0",
        );
    }
    m.set.finish(FLASH_ELEMENTS)?;
    Ok(FlashShape {
        dies_per_chip: shape[0],
        planes_per_die: shape[1],
        blocks_per_plane: shape[2],
        pages_per_block: shape[3],
        page_bytes: page.value,
    })
}

/// Suspension: MQSim's transaction scheduler serves reads before queued programs and erases
/// (storsim's `read-priority`), and with `CMD_Suspension_Support` it may suspend one in flight
/// (`suspend`, with MQSim's suspend latencies). MQSim's own suspension is never reached (its
/// read path returns before the suspend branch; CMU-SAFARI/MQSim PR #62, never merged), so its
/// results show read priority alone; storsim does what the setting says.
fn map_suspension(m: &mut Mapping, out: &mut TomlOut) -> Result<(), ConfigError> {
    let support = m.choice(
        "CMD_Suspension_Support",
        &["NONE", "PROGRAM", "ERASE", "PROGRAM_ERASE"],
        2,
    )?;
    let program = m.integer("Suspend_Program_Time", 100_000, (0, NS_MAX))?;
    let erase = m.integer("Suspend_Erase_Time", 700_000, (0, NS_MAX))?;
    if support.value == 0 {
        let text = format!(
            "{}: reads still go before queued work in MQSim",
            support.origin()
        );
        out.put("ssd", "die_scheduling", "read-priority", &text);
        for got in [&program, &erase] {
            if got.is_set() {
                m.note(got, "has no effect: CMD_Suspension_Support is NONE");
            }
        }
        return Ok(());
    }
    out.put("ssd", "die_scheduling", "suspend", &support.origin());
    let kinds = ["program", "erase", "program-erase"];
    out.put(
        "ssd.suspend",
        "support",
        kinds[support.value - 1],
        &support.origin(),
    );
    out.put(
        "ssd.suspend",
        "program_us",
        us(program.value),
        &program.origin(),
    );
    out.put("ssd.suspend", "erase_us", us(erase.value), &erase.origin());
    m.note(
        &support,
        "storsim suspends as the setting says; MQSim's own suspension is never reached (its \
         read path returns before the suspend branch), so its results show read priority alone",
    );
    Ok(())
}

/// Maps `<Device_Parameter_Set>`: the back end's channels, the FTL, the DRAM cache and the
/// host interface's queues.
fn map_device(mut m: Mapping, out: &mut TomlOut, flash: &FlashShape) -> Result<Shape, ConfigError> {
    let seed = m.integer("Seed", 123, (0, U32_MAX))?;
    out.put("ssd", "seed", seed.value as i64, &seed.origin());
    let preconditioning = m.flag("Enabled_Preconditioning", true)?.value;
    m.choice("Memory_Type", &["FLASH"], 0)?;
    let interface = m.choice("HostInterface_Type", &["NVME", "SATA"], 0)?;
    let nvme = interface.value == 0;
    let (channels, chips_per_channel) = map_back_end(&mut m, out)?;
    map_cache(&mut m, out, flash)?;
    let random_pp_section = map_ftl(&mut m, out, flash, channels * chips_per_channel)?;
    map_queues(&mut m, out, &interface)?;
    m.set.finish(DEVICE_ELEMENTS)?;
    Ok(Shape {
        channels,
        chips_per_channel,
        dies_per_chip: flash.dies_per_chip,
        planes_per_die: flash.planes_per_die,
        nvme,
        preconditioning,
        random_pp_section,
    })
}

/// Channels: count, width, rate, chips on each.
fn map_back_end(m: &mut Mapping, out: &mut TomlOut) -> Result<(u64, u64), ConfigError> {
    let channels = m.integer("Flash_Channel_Count", 8, (1, U32_MAX))?;
    out.put(
        "ssd.geometry",
        "channels",
        channels.value as i64,
        &channels.origin(),
    );
    let chips = m.integer("Chip_No_Per_Channel", 4, (1, U32_MAX))?;
    out.put(
        "ssd.geometry",
        "chips_per_channel",
        chips.value as i64,
        &chips.origin(),
    );
    let width = m.integer("Flash_Channel_Width", 1, (1, 1 << 16))?;
    out.put(
        "ssd.timing",
        "channel_width_bytes",
        width.value as i64,
        &width.origin(),
    );
    let rate = m.integer("Channel_Transfer_Rate", 300, (1, U32_MAX))?;
    out.put(
        "ssd.timing",
        "channel_mts",
        rate.value as i64,
        &rate.origin(),
    );
    // NV-DDR2 is the only protocol MQSim has; MQSim does not time command cycles, and storsim's
    // command time stays at its default of zero.
    m.choice("Flash_Comm_Protocol", &["NVDDR2"], 0)?;
    Ok((channels.value, chips.value))
}

/// The DRAM data cache: storsim's write buffer, whose latency is what MQSim charges for moving
/// one page through DRAM.
fn map_cache(m: &mut Mapping, out: &mut TomlOut, flash: &FlashShape) -> Result<(), ConfigError> {
    let mechanism = m.choice("Caching_Mechanism", &["SIMPLE", "ADVANCED"], 1)?;
    if mechanism.is_set() {
        m.note(
            &mechanism,
            "SIMPLE's destaging buffer and ADVANCED's cache both become storsim's write \
             buffer, which caches writes (READ_CACHE flows are refused)",
        );
    }
    let sharing = m.choice(
        "Data_Cache_Sharing_Mode",
        &["SHARED", "EQUAL_PARTITIONING"],
        0,
    )?;
    if sharing.value != 0 {
        m.note(
            &sharing,
            "not modelled: storsim's flows share the write buffer",
        );
    }
    let capacity = m.integer("Data_Cache_Capacity", 512 << 20, (0, U32_MAX))?;
    let buffer = "ssd.write_buffer";
    out.put(
        buffer,
        "capacity_bytes",
        capacity.value as i64,
        &capacity.origin(),
    );
    let row = m
        .integer("Data_Cache_DRAM_Row_Size", 8192, (1, U32_MAX))?
        .value;
    let rate = m
        .integer("Data_Cache_DRAM_Data_Rate", 800, (1, U32_MAX))?
        .value;
    let burst = m
        .integer("Data_Cache_DRAM_Data_Busrt_Size", 4, (1, U32_MAX))?
        .value;
    let mut t = [0u64; 3];
    for (slot, name) in t.iter_mut().zip([
        "Data_Cache_DRAM_tRCD",
        "Data_Cache_DRAM_tCL",
        "Data_Cache_DRAM_tRP",
    ]) {
        *slot = m.integer(name, 13, (0, NS_MAX))?.value;
    }
    let latency_ns = dram_access_ns(flash.page_bytes, row, burst, rate, t);
    out.put(
        buffer,
        "latency_us",
        latency_ns / 1000.0,
        "MQSim's DRAM time for one page from the Data_Cache_DRAM_ elements (docs/formats/mqsim-xml.md)",
    );
    Ok(())
}

/// MQSim's estimate of a DRAM access of `bytes` (its `estimate_dram_access_time` for an access
/// within one row): the row opened (tRCD), the column read (tCL), then the data in bursts of
/// `burst` bytes, two a transfer clock (DDR), at `rate` MT/s. An access over several rows pays
/// that for each row with a precharge (tRP) between.
pub(crate) fn dram_access_ns(
    bytes: u64,
    row: u64,
    burst: u64,
    rate: u64,
    [rcd, cl, rp]: [u64; 3],
) -> f64 {
    let transfer_ns = 1000.0 / rate as f64;
    let within_row = |b: u64| (rcd + cl) as f64 + (b / burst / 2) as f64 * transfer_ns;
    let rows = bytes.div_ceil(row).max(1);
    (rows - 1) as f64 * (within_row(row) + rp as f64) + within_row(bytes - (rows - 1) * row)
}

/// Address mapping, over-provisioning, garbage collection and wear levelling.
/// Maps the FTL's settings; returns the FTL section that takes RANDOM_PP's threshold, if
/// the victim policy is RANDOM_PP.
fn map_ftl(
    m: &mut Mapping,
    out: &mut TomlOut,
    flash: &FlashShape,
    chips: u64,
) -> Result<Option<&'static str>, ConfigError> {
    let mapping = m.choice("Address_Mapping", &["PAGE_LEVEL", "HYBRID"], 0)?;
    if mapping.value != 0 {
        m.note(
            &mapping,
            "HYBRID is not implemented in MQSim; page-level mapping is used",
        );
    }
    let ideal = m.flag("Ideal_Mapping_Table", false)?;
    let cmt = m.integer("CMT_Capacity", 2 << 20, (8, U32_MAX))?;
    // With the whole map in DRAM, the page FTL; with a cached mapping table, DFTL, whose data
    // side takes the page FTL's keys.
    let section = if ideal.value {
        out.put("ssd", "ftl", "page", &ideal.origin());
        "ssd.page"
    } else {
        out.put("ssd", "ftl", "dftl", &ideal.origin());
        // MQSim's entry holds a logical and a physical page number and a bit per sector of the
        // page, in whole bytes (its Address_Mapping_Unit_Page_Level), not storsim's 8 bytes.
        let physical_pages = chips
            * flash.dies_per_chip
            * flash.planes_per_die
            * flash.blocks_per_plane
            * flash.pages_per_block;
        let sectors = flash.page_bytes.div_ceil(512);
        let entry_bytes = ((2.0 * (physical_pages as f64).log2() + sectors as f64) / 8.0).ceil();
        let entries = ((cmt.value as f64 / entry_bytes) as u64).max(1);
        let text = format!(
            "{} over MQSim's entry of {entry_bytes} bytes: ceil((2 log2({physical_pages} pages) + {sectors} sectors) / 8)",
            cmt.origin()
        );
        out.put("ssd.dftl", "cmt_entries", entries as i64, &text);
        "ssd.dftl.page"
    };
    let cmt_sharing = m.choice(
        "CMT_Sharing_Mode",
        &["SHARED", "EQUAL_PARTITIONING", "EQUAL_SIZE_PARTITIONING"],
        0,
    )?;
    if cmt_sharing.value != 0 {
        m.note(
            &cmt_sharing,
            "not modelled: storsim's flows share the mapping cache",
        );
    }
    // MQSim's schemes are static: a page's address chooses its plane.
    let scheme = m.choice("Plane_Allocation_Scheme", PLANE_ALLOCATION_SCHEMES, 0)?;
    let name = PLANE_ALLOCATION_SCHEMES[scheme.value];
    out.put(section, "plane_allocation", name, &scheme.origin());
    let scheduling = m.choice(
        "Transaction_Scheduling_Policy",
        &["OUT_OF_ORDER", "PRIORITY_OUT_OF_ORDER", "FLIN"],
        1,
    )?;
    m.note(
        &scheduling,
        "storsim places each request's flash operations on their dies and channels as it \
         arrives (FlashSim's interleaving), reads going first (die_scheduling); it has no \
         transaction queues, so the policy's other reorderings are not modelled",
    );
    let op = m.number("Overprovisioning_Ratio", 0.02, (0.0, 0.99))?;
    out.put(
        section,
        "over_provisioning_fraction",
        op.value,
        &op.origin(),
    );
    let threshold = m.number("GC_Exec_Threshold", 0.05, (0.0, 1.0))?;
    // MQSim collects a plane's garbage when its free pages fall below the threshold's share;
    // storsim counts whole free blocks, so the threshold's share of a plane's blocks, rounded
    // up (at least two, the page FTL's least), and one block more to stop at.
    let blocks = flash.blocks_per_plane;
    let low = ((threshold.value * blocks as f64).ceil() as u64).clamp(2, blocks);
    let text = format!(
        "{}: rounded up from its share of {blocks} blocks",
        threshold.origin()
    );
    out.put(section, "gc_low_watermark_blocks", low as i64, &text);
    let high = (low + 1).min(blocks) as i64;
    out.put(
        section,
        "gc_high_watermark_blocks",
        high,
        "one block above the low watermark",
    );
    let random_pp = map_gc_policy(m, out, section, blocks)?;
    let copyback = m.flag("Use_Copyback_for_GC", true)?;
    out.put("ssd", "copyback", copyback.value, &copyback.origin());
    let preemptible = m.flag("Preemptible_GC_Enabled", true)?;
    if preemptible.value {
        m.note(
            &preemptible,
            "not modelled yet: host requests do not preempt storsim's foreground GC",
        );
    }
    m.note_if_set(
        "GC_Hard_Threshold",
        "not modelled yet: goes with Preemptible_GC_Enabled",
    );
    map_wear_levelling(m, out, section)?;
    Ok(random_pp.then_some(section))
}

/// Dynamic and static wear levelling, and the suspension preferences that go with suspension.
fn map_wear_levelling(
    m: &mut Mapping,
    out: &mut TomlOut,
    section: &str,
) -> Result<(), ConfigError> {
    let dynamic = m.flag("Dynamic_Wearleveling_Enabled", true)?;
    out.put(section, "dynamic_wl", dynamic.value, &dynamic.origin());
    let static_on = m.flag("Static_Wearleveling_Enabled", true)?;
    let threshold = m.integer("Static_Wearleveling_Threshold", 100, (1, U32_MAX))?;
    if static_on.value {
        let value = threshold.value as i64;
        out.put(
            section,
            "static_wl_threshold_erases",
            value,
            &threshold.origin(),
        );
    } else {
        let text = format!("{}: off", static_on.origin());
        out.put(section, "static_wl_threshold_erases", 0, &text);
    }
    for name in [
        "Preferred_suspend_erase_time_for_read",
        "Preferred_suspend_erase_time_for_write",
        "Preferred_suspend_write_time_for_read",
    ] {
        m.note_if_set(
            name,
            "not mapped: MQSim's threshold for suspending is not storsim's rule (an operation \
             runs ssd.suspend.min_run_us before it may be suspended)",
        );
    }
    Ok(())
}

/// The GC victim policy: GREEDY, RANDOM and FIFO by name; RGA (a random sample of
/// log2(blocks per plane) blocks, the one with the fewest valid pages taken: MQSim's
/// `rga_set_size`) as storsim's d-choices over that share of a plane; RANDOM_P (a random full
/// block) as random, whose candidates are full blocks; RANDOM_PP as random-threshold, whose
/// threshold the workload sets. Returns whether it is RANDOM_PP.
fn map_gc_policy(
    m: &mut Mapping,
    out: &mut TomlOut,
    section: &str,
    blocks: u64,
) -> Result<bool, ConfigError> {
    let names = ["GREEDY", "RGA", "RANDOM", "RANDOM_P", "RANDOM_PP", "FIFO"];
    let policy = m.choice("GC_Block_Selection_Policy", &names, 1)?;
    let from = policy.origin();
    match names[policy.value] {
        "GREEDY" => out.put(section, "gc_policy", "greedy", &from),
        "FIFO" => out.put(section, "gc_policy", "fifo", &from),
        "RGA" => {
            let sample = (blocks as f64).log2().floor().max(1.0);
            out.put(section, "gc_policy", "d-choices", &from);
            let text = format!("RGA's sample of log2({blocks}) = {sample} blocks");
            out.put(
                section,
                "gc_fraction_searched",
                (sample / blocks as f64).min(1.0),
                &text,
            );
        }
        "RANDOM_PP" => {
            out.put(section, "gc_policy", "random-threshold", &from);
            out.put(
                section,
                "gc_min_invalid_fraction",
                0.0,
                "RANDOM_PP's threshold is the flows' highest Initial_Occupancy_Percentage, none \
                 without a workload; each scenario's device file sets its own",
            );
            return Ok(true);
        }
        // RANDOM draws any block that is not a write frontier, RANDOM_P a full one; storsim's
        // candidates are full blocks with an invalid page, and MQSim skips a draw without one.
        _ => out.put(section, "gc_policy", "random", &from),
    }
    Ok(false)
}

/// The host interface's queues: NVMe's submission queues of `IO_Queue_Depth` (one a flow, at
/// most eight; storsim holds at most 65,536 commands in all) or SATA's NCQ.
fn map_queues(
    m: &mut Mapping,
    out: &mut TomlOut,
    interface: &Got<usize>,
) -> Result<(), ConfigError> {
    let section = "host_interface";
    let nvme = interface.value == 0;
    out.put(
        section,
        "protocol",
        if nvme { "nvme" } else { "sata" },
        &interface.origin(),
    );
    let depth = m.integer("IO_Queue_Depth", 1024, (1, 65_535))?;
    if !nvme {
        out.put(
            section,
            "queue_depth",
            depth.value.min(32) as i64,
            &depth.origin(),
        );
        m.note_if_set("Queue_Fetch_Size", "has no effect with SATA (NVMe only)");
        return Ok(());
    }
    let per_queue = depth.value.min(HOST_COMMANDS_MAX / NVME_QUEUES);
    let text = "one queue pair a flow, as MQSim gives each flow its own (a scenario has at most 8)";
    out.put(section, "queues", NVME_QUEUES as i64, text);
    out.put(section, "queue_depth", per_queue as i64, &depth.origin());
    if per_queue < depth.value {
        let text = format!(
            "{} a queue becomes {per_queue}: storsim's interface holds at most \
             {HOST_COMMANDS_MAX} commands over its {NVME_QUEUES} queue pairs; a flow alone sees \
             the same timing, since the host holds what its queue cannot",
            depth.value
        );
        m.note(&depth, text);
    }
    let fetch = m.integer("Queue_Fetch_Size", 512, (1, 65_535))?;
    out.put(
        section,
        "queue_fetch_size",
        fetch.value as i64,
        &fetch.origin(),
    );
    Ok(())
}

/// Maps `<Host_Parameter_Set>`: the PCIe link (or SATA's processing delay) and MQSim's
/// response-time log.
fn map_host(mut m: Mapping, out: &mut TomlOut, nvme: bool) -> Result<(), ConfigError> {
    let section = "host_interface";
    let lane = m.number("PCIe_Lane_Bandwidth", 1.0, (1e-6, 1e3))?;
    let lanes = m.integer("PCIe_Lane_Count", 4, (1, 32))?;
    let sata = m.integer("SATA_Processing_Delay", 400_000, (0, NS_MAX))?;
    if nvme {
        // MQSim's lane moves PCIe_Lane_Bandwidth GB/s of payload: storsim's lane at 8 times
        // that in GT/s, with no line encoding.
        let text = format!("{}: GB/s a lane, 8 bits a byte", lane.origin());
        out.put(section, "gigatransfers_per_s", lane.value * 8.0, &text);
        out.put(
            section,
            "encoding",
            "none",
            "MQSim's lane bandwidth is payload bandwidth",
        );
        out.put(section, "lanes", lanes.value as i64, &lanes.origin());
        if sata.is_set() {
            m.note(&sata, "has no effect with NVMe (SATA only)");
        }
    } else {
        out.put(
            section,
            "command_processing_us",
            us(sata.value),
            &sata.origin(),
        );
        const SATA_LINK: &str = "has no effect with SATA: storsim's SATA link keeps its defaults";
        if lanes.is_set() {
            m.note(&lanes, SATA_LINK);
        }
        if lane.is_set() {
            m.note(&lane, SATA_LINK);
        }
    }
    let logging = m.flag("Enable_ResponseTime_Logging", false)?;
    if logging.value {
        m.note(
            &logging,
            "storsim's runs keep a time series instead (simulate --series-window, the JSON's \
             `series`)",
        );
    }
    m.note_if_set(
        "ResponseTime_Logging_Period_Length",
        "see Enable_ResponseTime_Logging",
    );
    m.set.finish(HOST_ELEMENTS)
}
