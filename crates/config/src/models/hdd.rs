//! `[hdd]`: the hard-disk model's parameters, every one stated (`storsim import disksim` writes
//! complete sections; a file that starts from a disk preset is merged into the preset's file
//! before it is read here). The section mirrors [`HddParams`] field by field, so a written file
//! reads back to the same parameters.

use super::{resolve_merged, FileContext, Model};
use crate::{ConfigError, ModelParams};
use serde::{Deserialize, Serialize};
use storsim_hdd::{
    CacheParams, ExtraWriteDisconnect, Geometry, HddDevice, HddError, HddParams, HplCurve,
    Interface, Mechanics, Overheads, PowerParams, ReadAhead, SchedulerKind, SeekCurve,
    SparingScheme, SurfaceOrder, WriteBack, Zone,
};

/// Tables of the section that hold one of several variants, with the key naming it: a file that
/// names another seek curve than its preset replaces the preset's `[hdd.mechanics.seek]` whole,
/// since the preset's curve parameters mean nothing to the new curve.
const VARIANT_TABLES: &[(&str, &str)] = &[("hdd.mechanics.seek", "curve")];

#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct HddSection {
    queue_depth: u32,
    scheduler: SchedulerName,
    geometry: GeometrySection,
    mechanics: MechanicsSection,
    overheads: Overheads2,
    interface: InterfaceSection,
    cache: CacheSection,
    power: PowerSection,
}

#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq)]
#[serde(rename_all = "kebab-case")]
enum SchedulerName {
    Fcfs,
    Sstf,
    CLook,
    Sptf,
}

#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq)]
#[serde(rename_all = "kebab-case")]
enum OrderName {
    Normal,
    ReverseOnOddCylinderOfZone,
    ReverseOnOddCylinder,
}

#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq)]
#[serde(rename_all = "kebab-case")]
enum SparingName {
    None,
    Tracks,
    SectorsPerCylinder,
    SectorsPerCylinderAtFront,
    SectorsPerTrack,
    SectorsAtEnd,
    SectorsPerRange,
    SectorsPerZone,
}

#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct GeometrySection {
    surfaces: u32,
    cylinders: u32,
    surface_order: OrderName,
    sparing: SparingName,
    sparing_range_cylinders: u32,
    block_count: Option<u64>,
    zones: Vec<ZoneSection>,
}

#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct ZoneSection {
    first_cylinder: u32,
    last_cylinder: u32,
    sectors_per_track: u32,
    first_block_offset_sectors: f64,
    empty_front_sectors: u32,
    track_skew_sectors: f64,
    cylinder_skew_sectors: f64,
    spares: u32,
    slips: Vec<u64>,
    /// Pairs (defective sector, spare sector).
    defects: Vec<[u64; 2]>,
}

#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct MechanicsSection {
    rpm: f64,
    head_switch_ns: u64,
    write_settle_ns: i64,
    seek: SeekSection,
}

#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct HplSection {
    boundary_cylinders: u32,
    a_ns: f64,
    b_ns_per_sqrt_cylinder: f64,
    c_ns: f64,
    e_ns_per_cylinder: f64,
    single_ns: Option<u64>,
}

#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(tag = "curve", rename_all = "kebab-case", deny_unknown_fields)]
enum SeekSection {
    Constant {
        time_ns: u64,
    },
    ThreePointLine {
        single_ns: u64,
        average_ns: u64,
        full_ns: u64,
    },
    ThreePointCurve {
        single_ns: u64,
        average_ns: u64,
        full_ns: u64,
    },
    Hpl {
        hpl: HplSection,
    },
    HplPlus10 {
        hpl: HplSection,
        first_ten_ns: Vec<u64>,
    },
    /// (distance in cylinders, time in ns) pairs.
    Extracted {
        points: Vec<[u64; 2]>,
    },
}

#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct ExtraDisconnectSection {
    command_ns: u64,
    disconnect_ns: u64,
    inter_disconnect_ns: u64,
    second_disconnect_ns: u64,
    seek_delta_ns: u64,
}

#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct Overheads2 {
    per_request_ns: u64,
    read_hit_after_read_ns: u64,
    read_hit_after_write_ns: u64,
    read_miss_after_read_ns: u64,
    read_miss_after_write_ns: u64,
    write_hit_after_read_ns: u64,
    write_hit_after_write_ns: u64,
    write_miss_after_read_ns: u64,
    write_miss_after_write_ns: u64,
    read_completion_ns: u64,
    write_completion_ns: u64,
    data_preparation_ns: u64,
    first_reselect_ns: u64,
    other_reselect_ns: u64,
    read_disconnect_after_read_ns: u64,
    read_disconnect_after_write_ns: u64,
    write_disconnect_ns: u64,
    minimum_seek_ns: u64,
    extra_write_disconnect: Option<ExtraDisconnectSection>,
}

#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct InterfaceSection {
    read_transfer_ns_per_sector: u64,
    write_transfer_ns_per_sector: u64,
}

#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq)]
#[serde(rename_all = "kebab-case")]
enum ReadAheadName {
    None,
    TrackEnd,
    CylinderEnd,
    SegmentEnd,
    DecTracks,
}

#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq)]
#[serde(rename_all = "kebab-case")]
enum WriteBackName {
    None,
    Limited,
    Full,
}

#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct CacheSection {
    enabled: bool,
    segments: u32,
    segment_sectors: u32,
    write_segments: u32,
    dedicated_write_segment: bool,
    read_ahead: ReadAheadName,
    min_read_ahead_sectors: u32,
    max_read_ahead_sectors: u32,
    read_ahead_on_idle_hit: bool,
    read_hits_on_write_data: bool,
    write_back: WriteBackName,
    combine_sequential_writes: bool,
    read_watermark: f64,
    watermark_by_request_size: bool,
    immediate_read: bool,
}

#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct PowerSection {
    active_mw: f64,
    idle_mw: f64,
    standby_mw: f64,
    standby_after_idle_ns: Option<u64>,
    spin_up_ns: u64,
    spin_up_mj: f64,
}

/// `Type { field: src.field, ... }` for the named fields, then any others given: the TOML
/// sections mirror the model's parameter structs field for field, and each conversion below
/// lists the shared fields once for both directions.
macro_rules! same_fields {
    ($ty:ident from $src:ident { $($field:ident),* $(,)? } $($rest:tt)*) => {
        $ty { $($field: $src.$field,)* $($rest)* }
    };
}

/// Command overheads, both ways; the caller adds `extra_write_disconnect`.
macro_rules! overheads {
    ($ty:ident from $src:ident, $($rest:tt)*) => {
        same_fields!($ty from $src {
            per_request_ns, read_hit_after_read_ns, read_hit_after_write_ns,
            read_miss_after_read_ns, read_miss_after_write_ns, write_hit_after_read_ns,
            write_hit_after_write_ns, write_miss_after_read_ns, write_miss_after_write_ns,
            read_completion_ns, write_completion_ns, data_preparation_ns, first_reselect_ns,
            other_reselect_ns, read_disconnect_after_read_ns, read_disconnect_after_write_ns,
            write_disconnect_ns, minimum_seek_ns,
        } $($rest)*)
    };
}

/// The extra write disconnect, both ways.
macro_rules! extra_disconnect {
    ($ty:ident from $src:ident) => {
        same_fields!($ty from $src {
            command_ns, disconnect_ns, inter_disconnect_ns, second_disconnect_ns, seek_delta_ns,
        })
    };
}

/// The cache, both ways; the caller adds the two enums, `read_ahead` and `write_back`.
macro_rules! cache {
    ($ty:ident from $src:ident, $($rest:tt)*) => {
        same_fields!($ty from $src {
            enabled, segments, segment_sectors, write_segments, dedicated_write_segment,
            min_read_ahead_sectors, max_read_ahead_sectors, read_ahead_on_idle_hit,
            read_hits_on_write_data, combine_sequential_writes, read_watermark,
            watermark_by_request_size, immediate_read,
        } $($rest)*)
    };
}

fn hpl_to(h: &HplCurve) -> HplSection {
    HplSection {
        boundary_cylinders: h.boundary_cylinders,
        a_ns: h.a_ns,
        b_ns_per_sqrt_cylinder: h.b_ns_per_sqrt_cylinder,
        c_ns: h.c_ns,
        e_ns_per_cylinder: h.e_ns_per_cylinder,
        single_ns: h.single_ns,
    }
}

fn hpl_from(h: &HplSection) -> HplCurve {
    HplCurve {
        boundary_cylinders: h.boundary_cylinders,
        a_ns: h.a_ns,
        b_ns_per_sqrt_cylinder: h.b_ns_per_sqrt_cylinder,
        c_ns: h.c_ns,
        e_ns_per_cylinder: h.e_ns_per_cylinder,
        single_ns: h.single_ns,
    }
}

/// The section that states `p` exactly.
pub(crate) fn to_section(p: &HddParams) -> HddSection {
    let g = &p.geometry;
    let o = &p.overheads;
    let c = &p.cache;
    HddSection {
        queue_depth: p.queue_depth,
        scheduler: match p.scheduler {
            SchedulerKind::Fcfs => SchedulerName::Fcfs,
            SchedulerKind::Sstf => SchedulerName::Sstf,
            SchedulerKind::CLook => SchedulerName::CLook,
            SchedulerKind::Sptf => SchedulerName::Sptf,
        },
        geometry: GeometrySection {
            surfaces: g.surfaces,
            cylinders: g.cylinders,
            surface_order: match g.surface_order {
                SurfaceOrder::Normal => OrderName::Normal,
                SurfaceOrder::ReverseOnOddCylinderOfZone => OrderName::ReverseOnOddCylinderOfZone,
                SurfaceOrder::ReverseOnOddCylinder => OrderName::ReverseOnOddCylinder,
            },
            sparing: match g.sparing {
                SparingScheme::None => SparingName::None,
                SparingScheme::Tracks => SparingName::Tracks,
                SparingScheme::SectorsPerCylinder => SparingName::SectorsPerCylinder,
                SparingScheme::SectorsPerCylinderAtFront => SparingName::SectorsPerCylinderAtFront,
                SparingScheme::SectorsPerTrack => SparingName::SectorsPerTrack,
                SparingScheme::SectorsAtEnd => SparingName::SectorsAtEnd,
                SparingScheme::SectorsPerRange => SparingName::SectorsPerRange,
                SparingScheme::SectorsPerZone => SparingName::SectorsPerZone,
            },
            sparing_range_cylinders: g.sparing_range_cylinders,
            block_count: g.block_count,
            zones: g
                .zones
                .iter()
                .map(|z| ZoneSection {
                    first_cylinder: z.first_cylinder,
                    last_cylinder: z.last_cylinder,
                    sectors_per_track: z.sectors_per_track,
                    first_block_offset_sectors: z.first_block_offset_sectors,
                    empty_front_sectors: z.empty_front_sectors,
                    track_skew_sectors: z.track_skew_sectors,
                    cylinder_skew_sectors: z.cylinder_skew_sectors,
                    spares: z.spares,
                    slips: z.slips.clone(),
                    defects: z.defects.iter().map(|&(a, b)| [a, b]).collect(),
                })
                .collect(),
        },
        mechanics: MechanicsSection {
            rpm: p.mechanics.rpm,
            head_switch_ns: p.mechanics.head_switch_ns,
            write_settle_ns: p.mechanics.write_settle_ns,
            seek: match &p.mechanics.seek {
                SeekCurve::Constant { time_ns } => SeekSection::Constant { time_ns: *time_ns },
                SeekCurve::ThreePointLine {
                    single_ns,
                    average_ns,
                    full_ns,
                } => SeekSection::ThreePointLine {
                    single_ns: *single_ns,
                    average_ns: *average_ns,
                    full_ns: *full_ns,
                },
                SeekCurve::ThreePointCurve {
                    single_ns,
                    average_ns,
                    full_ns,
                } => SeekSection::ThreePointCurve {
                    single_ns: *single_ns,
                    average_ns: *average_ns,
                    full_ns: *full_ns,
                },
                SeekCurve::Hpl(h) => SeekSection::Hpl { hpl: hpl_to(h) },
                SeekCurve::HplPlus10 {
                    curve,
                    first_ten_ns,
                } => SeekSection::HplPlus10 {
                    hpl: hpl_to(curve),
                    first_ten_ns: first_ten_ns.to_vec(),
                },
                SeekCurve::Extracted { points } => SeekSection::Extracted {
                    points: points.iter().map(|&(d, t)| [u64::from(d), t]).collect(),
                },
            },
        },
        overheads: overheads!(Overheads2 from o,
            extra_write_disconnect: o
                .extra_write_disconnect
                .as_ref()
                .map(|x| extra_disconnect!(ExtraDisconnectSection from x)),
        ),
        interface: InterfaceSection {
            read_transfer_ns_per_sector: p.interface.read_transfer_ns_per_sector,
            write_transfer_ns_per_sector: p.interface.write_transfer_ns_per_sector,
        },
        cache: cache!(CacheSection from c,
            read_ahead: match c.read_ahead {
                ReadAhead::None => ReadAheadName::None,
                ReadAhead::TrackEnd => ReadAheadName::TrackEnd,
                ReadAhead::CylinderEnd => ReadAheadName::CylinderEnd,
                ReadAhead::SegmentEnd => ReadAheadName::SegmentEnd,
                ReadAhead::DecTracks => ReadAheadName::DecTracks,
            },
            write_back: match c.write_back {
                WriteBack::None => WriteBackName::None,
                WriteBack::Limited => WriteBackName::Limited,
                WriteBack::Full => WriteBackName::Full,
            },
        ),
        power: PowerSection {
            active_mw: p.power.active_mw,
            idle_mw: p.power.idle_mw,
            standby_mw: p.power.standby_mw,
            standby_after_idle_ns: p.power.standby_after_idle_ns,
            spin_up_ns: p.power.spin_up_ns,
            spin_up_mj: p.power.spin_up_mj,
        },
    }
}

/// The parameters a section states, checked by building the drive.
pub(crate) fn from_scratch(s: &HddSection, file: &str) -> Result<HddParams, ConfigError> {
    let invalid = |key: &str, message: String| ConfigError::Invalid {
        file: file.to_string(),
        key: format!("hdd.{key}"),
        message,
    };
    let g = &s.geometry;
    let seek = match &s.mechanics.seek {
        SeekSection::Constant { time_ns } => SeekCurve::Constant { time_ns: *time_ns },
        SeekSection::ThreePointLine {
            single_ns,
            average_ns,
            full_ns,
        } => SeekCurve::ThreePointLine {
            single_ns: *single_ns,
            average_ns: *average_ns,
            full_ns: *full_ns,
        },
        SeekSection::ThreePointCurve {
            single_ns,
            average_ns,
            full_ns,
        } => SeekCurve::ThreePointCurve {
            single_ns: *single_ns,
            average_ns: *average_ns,
            full_ns: *full_ns,
        },
        SeekSection::Hpl { hpl } => SeekCurve::Hpl(hpl_from(hpl)),
        SeekSection::HplPlus10 { hpl, first_ten_ns } => SeekCurve::HplPlus10 {
            curve: hpl_from(hpl),
            first_ten_ns: first_ten_ns.clone().try_into().map_err(|_| {
                invalid(
                    "mechanics.seek.first_ten_ns",
                    "needs exactly ten times".into(),
                )
            })?,
        },
        SeekSection::Extracted { points } => SeekCurve::Extracted {
            points: points
                .iter()
                .map(|&[d, t]| {
                    u32::try_from(d).map(|d| (d, t)).map_err(|_| {
                        invalid(
                            "mechanics.seek.points",
                            format!("distance {d} is too large"),
                        )
                    })
                })
                .collect::<Result<_, _>>()?,
        },
    };
    let o = &s.overheads;
    let c = &s.cache;
    let p = HddParams {
        geometry: Geometry {
            surfaces: g.surfaces,
            cylinders: g.cylinders,
            surface_order: match g.surface_order {
                OrderName::Normal => SurfaceOrder::Normal,
                OrderName::ReverseOnOddCylinderOfZone => SurfaceOrder::ReverseOnOddCylinderOfZone,
                OrderName::ReverseOnOddCylinder => SurfaceOrder::ReverseOnOddCylinder,
            },
            sparing: match g.sparing {
                SparingName::None => SparingScheme::None,
                SparingName::Tracks => SparingScheme::Tracks,
                SparingName::SectorsPerCylinder => SparingScheme::SectorsPerCylinder,
                SparingName::SectorsPerCylinderAtFront => SparingScheme::SectorsPerCylinderAtFront,
                SparingName::SectorsPerTrack => SparingScheme::SectorsPerTrack,
                SparingName::SectorsAtEnd => SparingScheme::SectorsAtEnd,
                SparingName::SectorsPerRange => SparingScheme::SectorsPerRange,
                SparingName::SectorsPerZone => SparingScheme::SectorsPerZone,
            },
            sparing_range_cylinders: g.sparing_range_cylinders,
            block_count: g.block_count,
            zones: g
                .zones
                .iter()
                .map(|z| Zone {
                    first_cylinder: z.first_cylinder,
                    last_cylinder: z.last_cylinder,
                    sectors_per_track: z.sectors_per_track,
                    first_block_offset_sectors: z.first_block_offset_sectors,
                    empty_front_sectors: z.empty_front_sectors,
                    track_skew_sectors: z.track_skew_sectors,
                    cylinder_skew_sectors: z.cylinder_skew_sectors,
                    spares: z.spares,
                    slips: z.slips.clone(),
                    defects: z.defects.iter().map(|&[a, b]| (a, b)).collect(),
                })
                .collect(),
        },
        mechanics: Mechanics {
            rpm: s.mechanics.rpm,
            head_switch_ns: s.mechanics.head_switch_ns,
            write_settle_ns: s.mechanics.write_settle_ns,
            seek,
        },
        overheads: overheads!(Overheads from o,
            extra_write_disconnect: o
                .extra_write_disconnect
                .as_ref()
                .map(|x| extra_disconnect!(ExtraWriteDisconnect from x)),
        ),
        interface: Interface {
            read_transfer_ns_per_sector: s.interface.read_transfer_ns_per_sector,
            write_transfer_ns_per_sector: s.interface.write_transfer_ns_per_sector,
        },
        cache: cache!(CacheParams from c,
            read_ahead: match c.read_ahead {
                ReadAheadName::None => ReadAhead::None,
                ReadAheadName::TrackEnd => ReadAhead::TrackEnd,
                ReadAheadName::CylinderEnd => ReadAhead::CylinderEnd,
                ReadAheadName::SegmentEnd => ReadAhead::SegmentEnd,
                ReadAheadName::DecTracks => ReadAhead::DecTracks,
            },
            write_back: match c.write_back {
                WriteBackName::None => WriteBack::None,
                WriteBackName::Limited => WriteBack::Limited,
                WriteBackName::Full => WriteBack::Full,
            },
        ),
        queue_depth: s.queue_depth,
        scheduler: match s.scheduler {
            SchedulerName::Fcfs => SchedulerKind::Fcfs,
            SchedulerName::Sstf => SchedulerKind::Sstf,
            SchedulerName::CLook => SchedulerKind::CLook,
            SchedulerName::Sptf => SchedulerKind::Sptf,
        },
        power: PowerParams {
            active_mw: s.power.active_mw,
            idle_mw: s.power.idle_mw,
            standby_mw: s.power.standby_mw,
            standby_after_idle_ns: s.power.standby_after_idle_ns,
            spin_up_ns: s.power.spin_up_ns,
            spin_up_mj: s.power.spin_up_mj,
        },
    };
    HddDevice::new(p.clone()).map_err(|e| match e {
        HddError::Geometry(message) => invalid("geometry", message),
        // The model names its parameters by their place in `HddParams`; the section nests
        // the seek curve and the speed under `mechanics`.
        HddError::Parameter { name, message } => {
            let key = match name {
                "rpm" | "seek.points" => format!("mechanics.{name}"),
                other => other.to_string(),
            };
            invalid(&key, message)
        }
    })?;
    Ok(p)
}

/// A complete device file for `p`: `model = "hdd"` and its `[hdd]` section.
pub(crate) fn device_toml(p: &HddParams) -> Result<String, String> {
    #[derive(Serialize)]
    struct File<'a> {
        model: &'static str,
        hdd: &'a HddSection,
    }
    toml::to_string(&File {
        model: Hdd::NAME,
        hdd: &to_section(p),
    })
    .map_err(|e| e.to_string())
}

/// The disk model's entry in the model table.
pub(crate) struct Hdd;

impl Model for Hdd {
    const NAME: &'static str = "hdd";
    const DESCRIPTION: &'static str =
        "Hard disk after DiskSim 4.0: zoned geometry, seek curves, rotation, segmented cache, scheduler";
    const MERGED_OVER_PRESET: bool = true;
    const VARIANT_TABLES: &'static [(&'static str, &'static str)] = VARIANT_TABLES;
    type Params = HddParams;
    type Section = HddSection;

    fn resolve(
        section: Option<&HddSection>,
        base: Option<HddParams>,
        cx: &FileContext,
    ) -> Result<HddParams, ConfigError> {
        resolve_merged::<Self>(section, base, cx, |section| {
            // A disk's capacity is its geometry's, and [hdd] always states its queue depth: a
            // second number at the top could only disagree with them.
            if cx.capacity_bytes.is_some() {
                return Err(super::invalid(
                    cx.file,
                    "capacity_bytes",
                    "does not apply to an `hdd` device: its capacity follows from [hdd.geometry]"
                        .into(),
                ));
            }
            if cx.queue_depth.is_some() {
                return Err(super::invalid(
                    cx.file,
                    "hdd.queue_depth",
                    "is also given at the top level as `queue_depth`; state it once".into(),
                ));
            }
            from_scratch(section, cx.file)
        })
    }
}

impl ModelParams for HddParams {
    fn model_name(&self) -> &'static str {
        Hdd::NAME
    }

    fn build(&self) -> Result<Box<dyn storsim_core::Device>, String> {
        Ok(Box::new(
            HddDevice::new(self.clone()).map_err(|e| format!("hdd: {e}"))?,
        ))
    }
}
