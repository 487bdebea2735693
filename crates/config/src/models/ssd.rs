//! `[ssd]` and its device subsections (`geometry`, `timing`, `write_buffer`, `energy`,
//! `precondition`): the flash SSD model. The per-FTL subsections are in [`super::ftl`].

use super::ftl;
use super::{check_queue_depth, delay_us, fraction_up_to_one, invalid, missing, non_negative};
use crate::ConfigError;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::fmt;
use storsim_core::SimDuration;
use storsim_flash::{
    CellType, DieScheduling, Geometry, GeometryError, MultiPlane, SuspendKinds, Suspension, Timing,
    LEVELS_MAX,
};
use storsim_ftl::{FtlEntry, FTLS};
use storsim_ssd::{
    DestageOrder, Energy, FlushPolicy, Precondition, SlcCacheSpec, SsdParams, WhenFull, WriteBack,
    WriteBuffer,
};

/// The largest page a file may state, 1 MiB: well above any NAND page, and it keeps a page plus
/// its OOB area inside the u32 in which the flash crate adds them.
const PAGE_BYTES_MAX: u32 = 1 << 20;

/// The most pages a write buffer may hold. The model reserves one slot per buffered page up
/// front, and 4 Mi pages (16 GiB of 4 KiB pages) is more DRAM than any drive spends on it.
const WRITE_BUFFER_PAGES_MAX: u64 = 1 << 22;

/// Steady-state preconditioning overwrites at most this many times the capacity. More is a
/// typing error, and every overwrite of a large device costs real time before the run starts.
const OVERWRITE_FACTOR_MAX: f64 = 100.0;

/// `sequential-fill` without `fill_fraction` writes the whole logical space.
const DEFAULT_FILL_FRACTION: f64 = 1.0;

/// `steady-state` without `max_overwrite_factor`: write amplification under uniform random
/// overwrites usually settles within two capacities; four leaves margin for skewed FTLs.
const DEFAULT_OVERWRITE_FACTOR: f64 = 4.0;

#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum CellName {
    Slc,
    Mlc,
    Tlc,
    Qlc,
}

impl CellName {
    fn cell(self) -> CellType {
        match self {
            CellName::Slc => CellType::Slc,
            CellName::Mlc => CellType::Mlc,
            CellName::Tlc => CellType::Tlc,
            CellName::Qlc => CellType::Qlc,
        }
    }
}

/// The cell type as files write it, for messages.
fn cell_name(cell: CellType) -> &'static str {
    match cell {
        CellType::Slc => "slc",
        CellType::Mlc => "mlc",
        CellType::Tlc => "tlc",
        CellType::Qlc => "qlc",
    }
}

/// `ssd.precondition.mode`: the state an SSD starts a run in. Also what a command line
/// chooses for every SSD a device holds ([`precondition_ssds`]), with each mode's default
/// parameter.
#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum PreconditionMode {
    /// Every block erased, nothing written.
    Clean,
    /// The whole logical space written once, in order.
    SequentialFill,
    /// A fill, then random overwrites until write amplification settles.
    SteadyState,
}

impl PreconditionMode {
    /// The preconditioning with the mode's default parameter, as a file stating only
    /// `mode` gets.
    fn with_defaults(self) -> Precondition {
        match self {
            PreconditionMode::Clean => Precondition::Clean,
            PreconditionMode::SequentialFill => Precondition::SequentialFill {
                fraction: DEFAULT_FILL_FRACTION,
            },
            PreconditionMode::SteadyState => Precondition::SteadyState {
                max_overwrite_factor: DEFAULT_OVERWRITE_FACTOR,
            },
        }
    }
}

/// Sets the preconditioning of every SSD that `spec` holds (itself, an array's children, a
/// hybrid's children, nested) to `mode` with its default parameter, overriding what their
/// files say, so that a run can choose the starting state without editing a file. Returns how
/// many SSDs it set: 0 for a device with no SSD, which the caller may refuse.
pub fn precondition_ssds(spec: &mut crate::DeviceSpec, mode: PreconditionMode) -> usize {
    if let Some(ssd) = spec.params_mut::<SsdParams>() {
        ssd.precondition = mode.with_defaults();
        return 1;
    }
    if let Some(array) = spec.params_mut::<crate::ArraySpec>() {
        return array
            .children
            .iter_mut()
            .chain(&mut array.spare)
            .map(|child| precondition_ssds(&mut child.spec, mode))
            .sum();
    }
    if let Some(hybrid) = spec.params_mut::<crate::HybridSpec>() {
        return precondition_ssds(&mut hybrid.flash.spec, mode)
            + precondition_ssds(&mut hybrid.disk.spec, mode);
    }
    0
}

/// `ssd.multi_plane`: which operations may share a multi-plane command.
#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum MultiPlaneName {
    Off,
    SamePage,
    AnyPage,
}

impl MultiPlaneName {
    fn rule(self) -> MultiPlane {
        match self {
            MultiPlaneName::Off => MultiPlane::Off,
            MultiPlaneName::SamePage => MultiPlane::SamePage,
            MultiPlaneName::AnyPage => MultiPlane::AnyPage,
        }
    }
}

/// `ssd.die_scheduling`: how each die orders its operations (docs/models/die-scheduling.md).
#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum DieSchedulingName {
    Fifo,
    ReadPriority,
    Suspend,
}

/// `ssd.suspend.support`: which operations a read may suspend, MQSim's
/// `CMD_Suspension_Support`.
#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum SuspendSupportName {
    None,
    Program,
    Erase,
    ProgramErase,
}

impl SuspendSupportName {
    fn kinds(self) -> SuspendKinds {
        match self {
            SuspendSupportName::None => SuspendKinds::None,
            SuspendSupportName::Program => SuspendKinds::Program,
            SuspendSupportName::Erase => SuspendKinds::Erase,
            SuspendSupportName::ProgramErase => SuspendKinds::ProgramErase,
        }
    }
}

/// `[ssd.suspend]`: program and erase suspension (`die_scheduling = "suspend"` only).
#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
struct SuspendSection {
    support: Option<SuspendSupportName>,
    program_us: Option<f64>,
    erase_us: Option<f64>,
    resume_us: Option<f64>,
    max_suspensions: Option<u32>,
    min_run_us: Option<f64>,
}

impl SuspendSection {
    /// The first key stated, if any, for the message that refuses the section.
    fn first_stated(&self) -> Option<&'static str> {
        [
            ("support", self.support.is_some()),
            ("program_us", self.program_us.is_some()),
            ("erase_us", self.erase_us.is_some()),
            ("resume_us", self.resume_us.is_some()),
            ("max_suspensions", self.max_suspensions.is_some()),
            ("min_run_us", self.min_run_us.is_some()),
        ]
        .into_iter()
        .find_map(|(key, stated)| stated.then_some(key))
    }
}

#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
struct GeometrySection {
    channels: Option<u32>,
    chips_per_channel: Option<u32>,
    dies_per_chip: Option<u32>,
    planes_per_die: Option<u32>,
    blocks_per_plane: Option<u32>,
    pages_per_block: Option<u32>,
    page_bytes: Option<u32>,
    oob_bytes: Option<u32>,
}

impl GeometrySection {
    /// Every key with its value, in the order of [`geometry_fields`].
    fn values(&self) -> [(&'static str, Option<u32>); 8] {
        [
            ("channels", self.channels),
            ("chips_per_channel", self.chips_per_channel),
            ("dies_per_chip", self.dies_per_chip),
            ("planes_per_die", self.planes_per_die),
            ("blocks_per_plane", self.blocks_per_plane),
            ("pages_per_block", self.pages_per_block),
            ("page_bytes", self.page_bytes),
            ("oob_bytes", self.oob_bytes),
        ]
    }
}

/// The fields of a geometry, in the order of [`GeometrySection::values`].
fn geometry_fields(g: &mut Geometry) -> [&mut u32; 8] {
    [
        &mut g.channels,
        &mut g.chips_per_channel,
        &mut g.dies_per_chip,
        &mut g.planes_per_die,
        &mut g.blocks_per_plane,
        &mut g.pages_per_block,
        &mut g.page_bytes,
        &mut g.oob_bytes,
    ]
}

#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
struct TimingSection {
    cell: Option<CellName>,
    read_us: Option<f64>,
    read_us_by_level: Option<Vec<f64>>,
    program_us: Option<f64>,
    program_us_by_level: Option<Vec<f64>>,
    erase_us: Option<f64>,
    command_us: Option<f64>,
    channel_mts: Option<u32>,
    channel_width_bytes: Option<u32>,
    slc_read_us: Option<f64>,
    slc_program_us: Option<f64>,
}

/// `ssd.slc_cache.when_full`.
#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum WhenFullName {
    Direct,
    Fold,
}

/// `[ssd.slc_cache]`: the SLC write cache (docs/models/slc-cache.md).
#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
struct SlcCacheSection {
    static_bytes: Option<u64>,
    dynamic_max_bytes: Option<u64>,
    when_full: Option<WhenFullName>,
    static_endurance_erases: Option<u32>,
}

#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum FlushPolicyName {
    Eager,
    Watermark,
}

#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum DestageOrderName {
    Fifo,
    Lru,
}

#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
struct WriteBufferSection {
    capacity_bytes: Option<u64>,
    latency_us: Option<f64>,
    flush_policy: Option<FlushPolicyName>,
    high_watermark_fraction: Option<f64>,
    low_watermark_fraction: Option<f64>,
    destage_order: Option<DestageOrderName>,
    destage_when_idle: Option<bool>,
}

impl WriteBufferSection {
    /// The keys that belong to `flush_policy = "watermark"`, with whether each is stated.
    fn watermark_keys(&self) -> [(&'static str, bool); 4] {
        [
            (
                "high_watermark_fraction",
                self.high_watermark_fraction.is_some(),
            ),
            (
                "low_watermark_fraction",
                self.low_watermark_fraction.is_some(),
            ),
            ("destage_order", self.destage_order.is_some()),
            ("destage_when_idle", self.destage_when_idle.is_some()),
        ]
    }
}

#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
struct EnergySection {
    read_uj: Option<f64>,
    program_uj: Option<f64>,
    erase_uj: Option<f64>,
    idle_power_w: Option<f64>,
}

#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
struct PreconditionSection {
    mode: Option<PreconditionMode>,
    fill_fraction: Option<f64>,
    max_overwrite_factor: Option<f64>,
}

/// `[ssd]`. Its per-FTL sections (`[ssd.NAME]`) are whatever the FTL registry holds, so the
/// section is read by hand ([`SsdKey`]) rather than derived.
#[derive(Clone, Debug, Default)]
pub(crate) struct SsdSection {
    ftl: Option<&'static FtlEntry>,
    endurance_erases: Option<u32>,
    controller_overhead_us: Option<f64>,
    copyback: Option<bool>,
    multi_plane: Option<MultiPlaneName>,
    die_scheduling: Option<DieSchedulingName>,
    gc_reads_priority: Option<bool>,
    suspend: Option<SuspendSection>,
    slc_cache: Option<SlcCacheSection>,
    background_gc: Option<bool>,
    idle_gc_delay_us: Option<f64>,
    seed: Option<u64>,
    geometry: Option<GeometrySection>,
    timing: Option<TimingSection>,
    write_buffer: Option<WriteBufferSection>,
    energy: Option<EnergySection>,
    precondition: Option<PreconditionSection>,
    ftl_sections: ftl::Sections,
}

/// A key of `[ssd]`: one of the device's own, or an FTL's section.
#[derive(Clone, Copy)]
enum SsdKey {
    Ftl,
    EnduranceErases,
    ControllerOverheadUs,
    Copyback,
    MultiPlane,
    DieScheduling,
    GcReadsPriority,
    Suspend,
    SlcCache,
    BackgroundGc,
    IdleGcDelayUs,
    Seed,
    Geometry,
    Timing,
    WriteBuffer,
    Energy,
    Precondition,
    FtlSection(&'static FtlEntry),
}

/// The device's own keys, in the order messages list them.
const SSD_KEYS: [(&str, SsdKey); 17] = [
    ("ftl", SsdKey::Ftl),
    ("endurance_erases", SsdKey::EnduranceErases),
    ("controller_overhead_us", SsdKey::ControllerOverheadUs),
    ("copyback", SsdKey::Copyback),
    ("multi_plane", SsdKey::MultiPlane),
    ("die_scheduling", SsdKey::DieScheduling),
    ("gc_reads_priority", SsdKey::GcReadsPriority),
    ("suspend", SsdKey::Suspend),
    ("slc_cache", SsdKey::SlcCache),
    ("background_gc", SsdKey::BackgroundGc),
    ("idle_gc_delay_us", SsdKey::IdleGcDelayUs),
    ("seed", SsdKey::Seed),
    ("geometry", SsdKey::Geometry),
    ("timing", SsdKey::Timing),
    ("write_buffer", SsdKey::WriteBuffer),
    ("energy", SsdKey::Energy),
    ("precondition", SsdKey::Precondition),
];

impl<'de> Deserialize<'de> for SsdSection {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<SsdSection, D::Error> {
        d.deserialize_map(SsdVisitor)
    }
}

struct SsdVisitor;

impl<'de> Visitor<'de> for SsdVisitor {
    type Value = SsdSection;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("the [ssd] table")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SsdSection, A::Error> {
        let mut s = SsdSection::default();
        let keys = ftl::Choice {
            what: "field",
            names: SSD_KEYS
                .into_iter()
                .chain(FTLS.iter().map(|&e| (e.name, SsdKey::FtlSection(e))))
                .collect(),
        };
        while let Some(key) = map.next_key_seed(ftl::Choice {
            what: keys.what,
            names: keys.names.clone(),
        })? {
            match key {
                SsdKey::Ftl => s.ftl = Some(map.next_value_seed(ftl::ftl_name_seed())?),
                SsdKey::EnduranceErases => s.endurance_erases = Some(map.next_value()?),
                SsdKey::ControllerOverheadUs => s.controller_overhead_us = Some(map.next_value()?),
                SsdKey::Copyback => s.copyback = Some(map.next_value()?),
                SsdKey::MultiPlane => s.multi_plane = Some(map.next_value()?),
                SsdKey::DieScheduling => s.die_scheduling = Some(map.next_value()?),
                SsdKey::GcReadsPriority => s.gc_reads_priority = Some(map.next_value()?),
                SsdKey::Suspend => s.suspend = Some(map.next_value()?),
                SsdKey::SlcCache => s.slc_cache = Some(map.next_value()?),
                SsdKey::BackgroundGc => s.background_gc = Some(map.next_value()?),
                SsdKey::IdleGcDelayUs => s.idle_gc_delay_us = Some(map.next_value()?),
                SsdKey::Seed => s.seed = Some(map.next_value()?),
                SsdKey::Geometry => s.geometry = Some(map.next_value()?),
                SsdKey::Timing => s.timing = Some(map.next_value()?),
                SsdKey::WriteBuffer => s.write_buffer = Some(map.next_value()?),
                SsdKey::Energy => s.energy = Some(map.next_value()?),
                SsdKey::Precondition => s.precondition = Some(map.next_value()?),
                SsdKey::FtlSection(entry) => {
                    let section = map.next_value_seed(ftl::SectionSeed(entry.keys))?;
                    s.ftl_sections.push((entry, section));
                }
            }
        }
        Ok(s)
    }
}

/// A preset's parameters with the FTL's background-GC flag following the device's, the one
/// invariant files cannot break because they have a single key for both.
pub(crate) fn consistent(mut params: SsdParams) -> SsdParams {
    params.ftl.set_background_gc(params.background_gc);
    params
}

/// Parameters for a file that states `model = "ssd"` without a preset: the FTL, the geometry
/// (all but `oob_bytes`) and the essential timings must be given; everything else has the
/// default documented in docs/models/ssd.md. `apply` then sets every stated value.
pub(crate) fn from_scratch(section: &SsdSection, file: &str) -> Result<SsdParams, ConfigError> {
    let ftl = section.ftl.ok_or_else(|| missing(file, "ssd.ftl"))?;
    let geometry = section
        .geometry
        .as_ref()
        .ok_or_else(|| missing(file, "ssd.geometry"))?;
    if let Some((name, _)) = geometry
        .values()
        .into_iter()
        .find(|&(name, value)| name != "oob_bytes" && value.is_none())
    {
        return Err(missing(file, &format!("ssd.geometry.{name}")));
    }
    let timing = section
        .timing
        .as_ref()
        .ok_or_else(|| missing(file, "ssd.timing"))?;
    let required = [
        ("cell", timing.cell.is_some()),
        (
            "read_us",
            timing.read_us.is_some() || timing.read_us_by_level.is_some(),
        ),
        (
            "program_us",
            timing.program_us.is_some() || timing.program_us_by_level.is_some(),
        ),
        ("erase_us", timing.erase_us.is_some()),
        ("channel_mts", timing.channel_mts.is_some()),
    ];
    if let Some((name, _)) = required.iter().find(|(_, present)| !present) {
        return Err(missing(file, &format!("ssd.timing.{name}")));
    }
    let cell = timing.cell.map_or(CellType::Slc, CellName::cell);
    // Every geometry field but oob_bytes and every required time is overwritten by `apply`
    // from the section checked above; the zeros never reach a model.
    let geometry = Geometry {
        channels: 0,
        chips_per_channel: 0,
        dies_per_chip: 0,
        planes_per_die: 0,
        blocks_per_plane: 0,
        pages_per_block: 0,
        page_bytes: 0,
        oob_bytes: 0,
    };
    let zero = SimDuration::ZERO;
    Ok(SsdParams {
        geometry,
        timing: Timing::uniform(cell, zero, zero, zero, zero, 0, 1),
        endurance: cell.default_endurance(),
        ftl: (ftl.defaults)(),
        queue_depth: 32,
        write_buffer: None,
        write_buffer_policy: FlushPolicy::Eager,
        energy: Energy::default(),
        precondition: Precondition::Clean,
        background_gc: false,
        idle_gc_delay: SimDuration::from_us(1000),
        controller_overhead: SimDuration::ZERO,
        copyback: false,
        multi_plane: MultiPlane::Off,
        die_scheduling: DieScheduling::Fifo,
        gc_reads_priority: false,
        slc_cache: None,
        seed: 1,
        partitions: Vec::new(),
        flow_data_cache: Vec::new(),
    })
}

/// Overrides `params` with whatever the section states. A change of FTL starts that FTL from
/// its defaults before its section applies: the previous FTL's parameters mean nothing to it.
pub(crate) fn apply(
    section: &SsdSection,
    params: &mut SsdParams,
    file: &str,
) -> Result<(), ConfigError> {
    if let Some(entry) = section.ftl {
        if entry.name != params.ftl.name() {
            params.ftl = (entry.defaults)();
        }
    }
    ftl::apply(&section.ftl_sections, &mut params.ftl, file)?;
    if let Some(n) = section.endurance_erases {
        params.endurance = n;
    }
    if let Some(on) = section.copyback {
        params.copyback = on;
    }
    if let Some(name) = section.multi_plane {
        params.multi_plane = name.rule();
    }
    params.die_scheduling = die_scheduling(section, params.die_scheduling, file)?;
    if let Some(on) = section.gc_reads_priority {
        params.gc_reads_priority = on;
    }
    if let Some(us) = section.controller_overhead_us {
        params.controller_overhead = delay_us(file, "ssd.controller_overhead_us", us)?;
    }
    if let Some(on) = section.background_gc {
        params.background_gc = on;
    }
    if let Some(us) = section.idle_gc_delay_us {
        params.idle_gc_delay = delay_us(file, "ssd.idle_gc_delay_us", us)?;
    }
    if let Some(seed) = section.seed {
        params.seed = seed;
    }
    if let Some(g) = &section.geometry {
        for ((_, value), field) in g
            .values()
            .into_iter()
            .zip(geometry_fields(&mut params.geometry))
        {
            if let Some(v) = value {
                *field = v;
            }
        }
    }
    if let Some(t) = &section.timing {
        let cell_before = params.timing.cell;
        apply_timing(t, &mut params.timing, file)?;
        // A new cell type brings its own endurance unless the file states one: a preset's
        // SLC cycles on a TLC device would overstate its life tenfold or more.
        if params.timing.cell != cell_before && section.endurance_erases.is_none() {
            params.endurance = params.timing.cell.default_endurance();
        }
    }
    if let Some(b) = &section.write_buffer {
        params.write_buffer = write_buffer(b, params.write_buffer, file)?;
        params.write_buffer_policy = if params.write_buffer.is_some() {
            flush_policy(b, params.write_buffer_policy, file)?
        } else {
            FlushPolicy::Eager
        };
    }
    if let Some(e) = &section.energy {
        apply_energy(e, &mut params.energy, file)?;
    }
    if let Some(p) = &section.precondition {
        params.precondition = precondition(p, params.precondition, file)?;
    }
    if let Some(c) = &section.slc_cache {
        params.slc_cache = slc_cache(c, params.slc_cache, file)?;
    }
    // The page-mapped FTLs collect garbage in idle time only when their own flag says so,
    // and the SSD only offers them idle time when its flag says so; files have one switch
    // for both.
    params.ftl.set_background_gc(params.background_gc);
    Ok(())
}

/// The die scheduling policy after the section. `[ssd.suspend]` belongs to the `suspend`
/// policy only; when `die_scheduling` is not restated it is the current one, so a file can
/// change one suspension parameter of a preset that suspends.
fn die_scheduling(
    section: &SsdSection,
    current: DieScheduling,
    file: &str,
) -> Result<DieScheduling, ConfigError> {
    let name = section.die_scheduling.unwrap_or(match current {
        DieScheduling::Fifo => DieSchedulingName::Fifo,
        DieScheduling::ReadPriority => DieSchedulingName::ReadPriority,
        DieScheduling::Suspend(_) => DieSchedulingName::Suspend,
    });
    let section = section.suspend.as_ref();
    match name {
        DieSchedulingName::Fifo | DieSchedulingName::ReadPriority => {
            if let Some(key) = section.and_then(SuspendSection::first_stated) {
                return Err(invalid(
                    file,
                    &format!("ssd.suspend.{key}"),
                    "applies to die_scheduling = \"suspend\" only".into(),
                ));
            }
            Ok(if name == DieSchedulingName::Fifo {
                DieScheduling::Fifo
            } else {
                DieScheduling::ReadPriority
            })
        }
        DieSchedulingName::Suspend => {
            let mut s = match current {
                DieScheduling::Suspend(s) => s,
                _ => Suspension::default(),
            };
            if let Some(section) = section {
                apply_suspend(section, &mut s, file)?;
            }
            Ok(DieScheduling::Suspend(s))
        }
    }
}

fn apply_suspend(s: &SuspendSection, out: &mut Suspension, file: &str) -> Result<(), ConfigError> {
    if let Some(support) = s.support {
        out.kinds = support.kinds();
    }
    for (key, value, target) in [
        ("program_us", s.program_us, &mut out.program_latency),
        ("erase_us", s.erase_us, &mut out.erase_latency),
        ("resume_us", s.resume_us, &mut out.resume_overhead),
        ("min_run_us", s.min_run_us, &mut out.min_run),
    ] {
        if let Some(us) = value {
            *target = delay_us(file, &format!("ssd.suspend.{key}"), us)?;
        }
    }
    if let Some(n) = s.max_suspensions {
        if n == 0 {
            return Err(invalid(
                file,
                "ssd.suspend.max_suspensions",
                "must be at least 1; for no suspension at all use die_scheduling = \
                 \"read-priority\" or support = \"none\""
                    .into(),
            ));
        }
        out.max_suspensions = n;
    }
    Ok(())
}

fn apply_timing(s: &TimingSection, t: &mut Timing, file: &str) -> Result<(), ConfigError> {
    if let Some(c) = s.cell {
        t.cell = c.cell();
    }
    let cell = t.cell;
    levels(
        file,
        "read",
        s.read_us,
        s.read_us_by_level.as_deref(),
        cell,
        &mut t.read,
    )?;
    levels(
        file,
        "program",
        s.program_us,
        s.program_us_by_level.as_deref(),
        cell,
        &mut t.program,
    )?;
    if let Some(us) = s.erase_us {
        t.erase = delay_us(file, "ssd.timing.erase_us", us)?;
    }
    if let Some(us) = s.command_us {
        t.command = delay_us(file, "ssd.timing.command_us", us)?;
    }
    if let Some(mts) = s.channel_mts {
        t.channel_mts = mts;
    }
    if let Some(w) = s.channel_width_bytes {
        t.channel_width_bytes = w;
    }
    if let Some(us) = s.slc_read_us {
        t.slc_read = Some(delay_us(file, "ssd.timing.slc_read_us", us)?);
    }
    if let Some(us) = s.slc_program_us {
        t.slc_program = Some(delay_us(file, "ssd.timing.slc_program_us", us)?);
    }
    Ok(())
}

/// The SLC cache after the section: keys left out keep the current cache's values (or the
/// defaults: no static or dynamic capacity, `direct`, SLC's endurance for static blocks); a
/// cache of no capacity at all is none.
fn slc_cache(
    s: &SlcCacheSection,
    current: Option<SlcCacheSpec>,
    file: &str,
) -> Result<Option<SlcCacheSpec>, ConfigError> {
    let mut c = current.unwrap_or(SlcCacheSpec {
        static_bytes: 0,
        dynamic_max_bytes: 0,
        when_full: WhenFull::Direct,
        static_endurance_erases: CellType::Slc.default_endurance(),
    });
    if let Some(bytes) = s.static_bytes {
        c.static_bytes = bytes;
    }
    if let Some(bytes) = s.dynamic_max_bytes {
        c.dynamic_max_bytes = bytes;
    }
    if let Some(name) = s.when_full {
        c.when_full = match name {
            WhenFullName::Direct => WhenFull::Direct,
            WhenFullName::Fold => WhenFull::Fold,
        };
    }
    if let Some(n) = s.static_endurance_erases {
        if n == 0 {
            return Err(invalid(
                file,
                "ssd.slc_cache.static_endurance_erases",
                "must be at least 1".into(),
            ));
        }
        c.static_endurance_erases = n;
    }
    Ok((c.static_bytes > 0 || c.dynamic_max_bytes > 0).then_some(c))
}

/// Sets the per-level times of one operation from `{name}_us` (the same for every level) or
/// `{name}_us_by_level` (one per bit of the cell, LSB page first).
fn levels(
    file: &str,
    name: &str,
    every: Option<f64>,
    by_level: Option<&[f64]>,
    cell: CellType,
    out: &mut [SimDuration; LEVELS_MAX],
) -> Result<(), ConfigError> {
    let list_key = format!("ssd.timing.{name}_us_by_level");
    match (every, by_level) {
        (None, None) => {}
        (Some(_), Some(_)) => {
            return Err(invalid(
                file,
                &list_key,
                format!("give either {name}_us or {name}_us_by_level, not both"),
            ))
        }
        (Some(us), None) => {
            *out = [delay_us(file, &format!("ssd.timing.{name}_us"), us)?; LEVELS_MAX]
        }
        (None, Some(list)) => {
            let bits = cell.bits() as usize;
            if list.len() != bits {
                return Err(invalid(
                    file,
                    &list_key,
                    format!(
                        "has {} values, but cell = \"{}\" has {bits} page level{} (one time \
                         each, LSB page first)",
                        list.len(),
                        cell_name(cell),
                        if bits == 1 { "" } else { "s" }
                    ),
                ));
            }
            for (i, &us) in list.iter().enumerate() {
                out[i] = delay_us(file, &format!("{list_key}[{i}]"), us)?;
            }
            // Levels past the cell's bits are never used; repeating the last time keeps the
            // unused entries from holding another device's numbers.
            let last = out[bits - 1];
            out[bits..].fill(last);
        }
    }
    Ok(())
}

/// The buffer after the section: `capacity_bytes = 0` removes it; a new buffer needs both keys,
/// an existing one keeps what the section leaves out.
fn write_buffer(
    s: &WriteBufferSection,
    current: Option<WriteBuffer>,
    file: &str,
) -> Result<Option<WriteBuffer>, ConfigError> {
    if s.capacity_bytes == Some(0) {
        let stated = [("latency_us", s.latency_us.is_some())]
            .into_iter()
            .chain([("flush_policy", s.flush_policy.is_some())])
            .chain(s.watermark_keys())
            .find(|&(_, stated)| stated);
        if let Some((key, _)) = stated {
            return Err(invalid(
                file,
                &format!("ssd.write_buffer.{key}"),
                "means nothing with capacity_bytes = 0, which removes the buffer".into(),
            ));
        }
        return Ok(None);
    }
    let required = |key: &str| {
        invalid(
            file,
            key,
            "is required when the device has no write buffer to start from".into(),
        )
    };
    let capacity_bytes = s
        .capacity_bytes
        .or(current.map(|b| b.capacity_bytes))
        .ok_or_else(|| required("ssd.write_buffer.capacity_bytes"))?;
    let latency = match (s.latency_us, current) {
        (Some(us), _) => delay_us(file, "ssd.write_buffer.latency_us", us)?,
        (None, Some(b)) => b.latency,
        (None, None) => return Err(required("ssd.write_buffer.latency_us")),
    };
    Ok(Some(WriteBuffer {
        capacity_bytes,
        latency,
    }))
}

/// The flush policy after the section. The watermark keys belong to that policy only; when
/// `flush_policy` is not restated it is the current one, so a file can change one watermark.
fn flush_policy(
    s: &WriteBufferSection,
    current: FlushPolicy,
    file: &str,
) -> Result<FlushPolicy, ConfigError> {
    let name = s.flush_policy.unwrap_or(match current {
        FlushPolicy::Eager => FlushPolicyName::Eager,
        FlushPolicy::Watermark(_) => FlushPolicyName::Watermark,
    });
    if name == FlushPolicyName::Eager {
        if let Some((key, _)) = s.watermark_keys().into_iter().find(|&(_, stated)| stated) {
            return Err(invalid(
                file,
                &format!("ssd.write_buffer.{key}"),
                "applies to flush_policy = \"watermark\" only".into(),
            ));
        }
        return Ok(FlushPolicy::Eager);
    }
    let mut w = match current {
        FlushPolicy::Watermark(w) => w,
        FlushPolicy::Eager => WriteBack::default(),
    };
    if let Some(f) = s.high_watermark_fraction {
        w.high_watermark_fraction = f;
    }
    if let Some(f) = s.low_watermark_fraction {
        w.low_watermark_fraction = f;
    }
    if let Some(order) = s.destage_order {
        w.order = match order {
            DestageOrderName::Fifo => DestageOrder::Fifo,
            DestageOrderName::Lru => DestageOrder::Lru,
        };
    }
    if let Some(on) = s.destage_when_idle {
        w.destage_when_idle = on;
    }
    Ok(FlushPolicy::Watermark(w))
}

fn apply_energy(s: &EnergySection, e: &mut Energy, file: &str) -> Result<(), ConfigError> {
    for (name, value, target) in [
        ("read_uj", s.read_uj, &mut e.read_uj),
        ("program_uj", s.program_uj, &mut e.program_uj),
        ("erase_uj", s.erase_uj, &mut e.erase_uj),
        ("idle_power_w", s.idle_power_w, &mut e.idle_power_w),
    ] {
        if let Some(v) = value {
            *target = non_negative(file, &format!("ssd.energy.{name}"), v)?;
        }
    }
    Ok(())
}

/// The preconditioning after the section. A mode's parameter belongs to that mode only; when
/// the mode is not restated, it is the current one, so a file can change just the fraction.
fn precondition(
    s: &PreconditionSection,
    current: Precondition,
    file: &str,
) -> Result<Precondition, ConfigError> {
    let mode = s.mode.unwrap_or(match current {
        Precondition::Clean => PreconditionMode::Clean,
        Precondition::SequentialFill { .. } => PreconditionMode::SequentialFill,
        Precondition::SteadyState { .. } => PreconditionMode::SteadyState,
    });
    let only = |key: &str, mode: &str| {
        invalid(
            file,
            &format!("ssd.precondition.{key}"),
            format!("applies to mode = \"{mode}\" only"),
        )
    };
    if s.fill_fraction.is_some() && mode != PreconditionMode::SequentialFill {
        return Err(only("fill_fraction", "sequential-fill"));
    }
    if s.max_overwrite_factor.is_some() && mode != PreconditionMode::SteadyState {
        return Err(only("max_overwrite_factor", "steady-state"));
    }
    Ok(match mode {
        PreconditionMode::Clean => Precondition::Clean,
        PreconditionMode::SequentialFill => Precondition::SequentialFill {
            fraction: s.fill_fraction.unwrap_or(match current {
                Precondition::SequentialFill { fraction } => fraction,
                _ => DEFAULT_FILL_FRACTION,
            }),
        },
        PreconditionMode::SteadyState => Precondition::SteadyState {
            max_overwrite_factor: s.max_overwrite_factor.unwrap_or(match current {
                Precondition::SteadyState {
                    max_overwrite_factor,
                } => max_overwrite_factor,
                _ => DEFAULT_OVERWRITE_FACTOR,
            }),
        },
    })
}

/// Checks the relations between parameters that single keys cannot, and the values the
/// models would refuse (or trip over) later.
pub(crate) fn validate(params: &SsdParams, file: &str) -> Result<(), ConfigError> {
    check_queue_depth(file, params.queue_depth)?;
    validate_geometry(&params.geometry, file)?;
    let t = &params.timing;
    for (name, value) in [
        ("channel_mts", t.channel_mts),
        ("channel_width_bytes", t.channel_width_bytes),
    ] {
        if value == 0 {
            return Err(invalid(
                file,
                &format!("ssd.timing.{name}"),
                "must be at least 1: the channel has to move data".into(),
            ));
        }
    }
    if params.endurance == 0 {
        return Err(invalid(
            file,
            "ssd.endurance_erases",
            "must be at least 1 erase cycle".into(),
        ));
    }
    if let Some(b) = params.write_buffer {
        let page_bytes = params.geometry.page_bytes as u64;
        let pages = b.capacity_bytes / page_bytes;
        if pages == 0 || pages > WRITE_BUFFER_PAGES_MAX {
            return Err(invalid(
                file,
                "ssd.write_buffer.capacity_bytes",
                format!(
                    "is {} bytes; it must hold 1 to {WRITE_BUFFER_PAGES_MAX} pages of \
                     {page_bytes} bytes ({} bytes), or be 0 for no buffer",
                    b.capacity_bytes,
                    WRITE_BUFFER_PAGES_MAX * page_bytes
                ),
            ));
        }
    }
    if let (Some(_), FlushPolicy::Watermark(w)) = (params.write_buffer, params.write_buffer_policy)
    {
        let (high, low) = (w.high_watermark_fraction, w.low_watermark_fraction);
        if !(high.is_finite() && high > 0.0 && high <= 1.0) {
            return Err(invalid(
                file,
                "ssd.write_buffer.high_watermark_fraction",
                format!("must be a fraction above 0 and at most 1, got {high}"),
            ));
        }
        if !(low.is_finite() && low >= 0.0 && low < high) {
            return Err(invalid(
                file,
                "ssd.write_buffer.low_watermark_fraction",
                format!(
                    "must be a fraction from 0 to below high_watermark_fraction ({high}), \
                     got {low}"
                ),
            ));
        }
    }
    match params.precondition {
        Precondition::Clean => {}
        Precondition::SequentialFill { fraction } => {
            fraction_up_to_one(file, "ssd.precondition.fill_fraction", fraction)?
        }
        Precondition::SteadyState {
            max_overwrite_factor: f,
        } => {
            if !(f.is_finite() && (0.0..=OVERWRITE_FACTOR_MAX).contains(&f)) {
                return Err(invalid(
                    file,
                    "ssd.precondition.max_overwrite_factor",
                    format!(
                        "must be a number of capacities from 0 to {OVERWRITE_FACTOR_MAX}, got {f}"
                    ),
                ));
            }
        }
    }
    ftl::validate(&params.ftl, &params.geometry, file)
}

fn validate_geometry(g: &Geometry, file: &str) -> Result<(), ConfigError> {
    // The flash crate checks the counts; its errors name the field, which becomes the key.
    g.validate().map_err(|e| {
        let key = match e {
            GeometryError::Zero { field } => format!("ssd.geometry.{field}"),
            GeometryError::TooLarge { .. } => "ssd.geometry".to_string(),
        };
        invalid(file, &key, e.to_string())
    })?;
    if g.page_bytes > PAGE_BYTES_MAX {
        return Err(invalid(
            file,
            "ssd.geometry.page_bytes",
            format!(
                "must be at most {PAGE_BYTES_MAX} (1 MiB), got {}",
                g.page_bytes
            ),
        ));
    }
    if g.oob_bytes > g.page_bytes {
        return Err(invalid(
            file,
            "ssd.geometry.oob_bytes",
            format!(
                "is {}, more than the page itself ({} bytes)",
                g.oob_bytes, g.page_bytes
            ),
        ));
    }
    Ok(())
}

/// The SSD model's entry in the model table.
pub(crate) struct Ssd;

impl super::Model for Ssd {
    const NAME: &'static str = "ssd";
    const DESCRIPTION: &'static str =
        "Flash SSD: NAND geometry and timings, an FTL with garbage collection, DRAM write buffer, preconditioning";
    type Params = SsdParams;
    type Section = SsdSection;

    fn resolve(
        section: Option<&SsdSection>,
        base: Option<SsdParams>,
        cx: &super::FileContext,
    ) -> Result<SsdParams, ConfigError> {
        // An SSD's capacity is what its FTL leaves of the geometry; a second, independent
        // number could only disagree with it.
        if cx.capacity_bytes.is_some() {
            return Err(invalid(
                cx.file,
                "capacity_bytes",
                "does not apply to an `ssd` device: its capacity follows from [ssd.geometry] and \
                 the FTL's over-provisioning; change those instead"
                    .to_string(),
            ));
        }
        let mut p = match base {
            Some(p) => p,
            None => from_scratch(cx.required(Self::NAME, section)?, cx.file)?,
        };
        if let Some(q) = cx.queue_depth {
            p.queue_depth = q;
        }
        if let Some(section) = section {
            apply(section, &mut p, cx.file)?;
        }
        validate(&p, cx.file)?;
        Ok(p)
    }
}

impl crate::ModelParams for SsdParams {
    fn model_name(&self) -> &'static str {
        <Ssd as super::Model>::NAME
    }

    fn build(&self) -> Result<Box<dyn storsim_core::Device>, String> {
        let precondition = match self.precondition {
            Precondition::Clean => "clean",
            Precondition::SequentialFill { .. } => "sequential-fill",
            Precondition::SteadyState { .. } => "steady-state",
        };
        let device = storsim_ssd::SsdDevice::new(self.clone()).map_err(|e| {
            format!(
                "ssd with the `{}` FTL and {precondition} preconditioning: {e}",
                self.ftl.name()
            )
        })?;
        Ok(Box::new(device))
    }

    /// The FTL keeps maps and per-page state: at most [`crate::SSD_STATE_BYTES_PER_PAGE`] bytes
    /// a physical page.
    fn state_bytes_bound(&self) -> Option<u64> {
        Some(self.geometry.pages() as u64 * crate::SSD_STATE_BYTES_PER_PAGE)
    }
}
