//! `[hdd]`: the hard-disk model's parameters, every one stated (`storsim import disksim` writes
//! complete sections; a file that starts from a disk preset is merged into the preset's file
//! before it is read here). The section mirrors [`HddParams`] field by field, so a written file
//! reads back to the same parameters.

use super::{resolve_merged, FileContext, Model};
use crate::{ConfigError, ModelParams};
use serde::{Deserialize, Serialize};
use storsim_hdd::{
    CacheParams, ExtraWriteDisconnect, G4Child, G4Entry, G4Geometry, G4Remap, G4Slip, G4Track,
    Geometry, HddDevice, HddError, HddParams, HplCurve, Interface, Mechanics, Overheads,
    PowerParams, ReadAhead, SchedulerKind, SeekCurve, SparingScheme, SurfaceOrder, WriteBack, Zone,
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
    /// Divides every mechanical and overhead time by this factor (`HddParams::faster_by`);
    /// absent is 1. Applied as the section is read, so a written file states the scaled times
    /// themselves and never this key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    speed_factor: Option<f64>,
    geometry: GeometrySection,
    mechanics: MechanicsSection,
    overheads: Overheads2,
    interface: InterfaceSection,
    cache: CacheSection,
    power: PowerSection,
}

/// The range `hdd.speed_factor` accepts: the thesis studies disks up to 200× faster, and much
/// beyond 1000× the scaled times round to a few nanoseconds.
const SPEED_FACTOR_RANGE: std::ops::RangeInclusive<f64> = 0.001..=1000.0;

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
    /// DiskSim's G4 layout, for DIXtrac's drives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    g4: Option<G4Section>,
}

/// `[hdd.geometry.g4]`: DiskSim's `dm_layout_g4` with its lists as DiskSim writes them, one
/// array per track pattern, index entry, slip and remap, so that a drive's tree stays as
/// compact and as readable side by side with its `-skews.layout` file.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct G4Section {
    /// `[low, high, spt]` per track pattern.
    tracks: Vec<[u32; 3]>,
    /// `[slot, count]` per slip.
    slips: Vec<[u64; 2]>,
    /// `[lbn, count, cylinder, head, sector, spt]` per remap.
    remaps: Vec<[u64; 6]>,
    /// The indices, the root last.
    indices: Vec<G4IndexSection>,
}

/// One index: its entries.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct G4IndexSection {
    entries: Vec<G4EntrySection>,
}

/// An index entry as DiskSim writes it: `lbn, cylinder, offset, len, cylinder len, angle len,
/// run len, cylinder run len`, then `"TRACK", pattern, head` or `"IDX", index`.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(untagged)]
enum G4EntrySection {
    #[allow(clippy::type_complexity)]
    Track(u64, u32, f64, u64, u32, f64, u64, i64, TrackWord, u32, u32),
    Index(u64, u32, f64, u64, u32, f64, u64, i64, IndexWord, u32),
}

/// The word `TRACK` in an entry.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq)]
enum TrackWord {
    #[serde(rename = "TRACK")]
    Track,
}

/// The word `IDX` in an entry.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq)]
enum IndexWord {
    #[serde(rename = "IDX")]
    Index,
}

fn g4_to(g: &G4Geometry) -> G4Section {
    G4Section {
        tracks: g.tracks.iter().map(|t| [t.low, t.high, t.spt]).collect(),
        slips: g.slips.iter().map(|s| [s.slot, s.count]).collect(),
        remaps: g
            .remaps
            .iter()
            .map(|r| {
                [
                    r.lbn,
                    r.count,
                    u64::from(r.cylinder),
                    u64::from(r.head),
                    u64::from(r.sector),
                    u64::from(r.spt),
                ]
            })
            .collect(),
        indices: g
            .indices
            .iter()
            .map(|entries| G4IndexSection {
                entries: entries
                    .iter()
                    .map(|e| match e.child {
                        G4Child::Track { pattern, head } => G4EntrySection::Track(
                            e.lbn,
                            e.cylinder,
                            e.offset_turns,
                            e.len,
                            e.cylinder_len,
                            e.angle_len_turns,
                            e.run_len,
                            e.cylinder_run_len,
                            TrackWord::Track,
                            pattern,
                            head,
                        ),
                        G4Child::Index(c) => G4EntrySection::Index(
                            e.lbn,
                            e.cylinder,
                            e.offset_turns,
                            e.len,
                            e.cylinder_len,
                            e.angle_len_turns,
                            e.run_len,
                            e.cylinder_run_len,
                            IndexWord::Index,
                            c,
                        ),
                    })
                    .collect(),
            })
            .collect(),
    }
}

fn g4_from(g: &G4Section) -> Result<G4Geometry, String> {
    let narrow = |v: u64, what: &str| {
        u32::try_from(v).map_err(|_| format!("g4 remap: the {what} {v} is out of range"))
    };
    let remaps = g
        .remaps
        .iter()
        .map(|&[lbn, count, cylinder, head, sector, spt]| {
            Ok(G4Remap {
                lbn,
                count,
                cylinder: narrow(cylinder, "cylinder")?,
                head: narrow(head, "head")?,
                sector: narrow(sector, "sector")?,
                spt: narrow(spt, "sectors per track")?,
            })
        })
        .collect::<Result<_, String>>()?;
    Ok(G4Geometry {
        tracks: g
            .tracks
            .iter()
            .map(|&[low, high, spt]| G4Track { low, high, spt })
            .collect(),
        slips: g
            .slips
            .iter()
            .map(|&[slot, count]| G4Slip { slot, count })
            .collect(),
        remaps,
        indices: g
            .indices
            .iter()
            .map(|x| {
                x.entries
                    .iter()
                    .map(|e| match *e {
                        G4EntrySection::Track(a, b, c, d, e2, f, g2, h, _, pattern, head) => {
                            g4_entry((a, b, c, d, e2, f, g2, h), G4Child::Track { pattern, head })
                        }
                        G4EntrySection::Index(a, b, c, d, e2, f, g2, h, _, index) => {
                            g4_entry((a, b, c, d, e2, f, g2, h), G4Child::Index(index))
                        }
                    })
                    .collect()
            })
            .collect(),
    })
}

/// An entry's eight leading numbers, in DiskSim's order, and its child.
type G4EntryNumbers = (u64, u32, f64, u64, u32, f64, u64, i64);

fn g4_entry(n: G4EntryNumbers, child: G4Child) -> G4Entry {
    let (lbn, cylinder, offset_turns, len, cylinder_len, angle_len_turns, run_len, runs) = n;
    G4Entry {
        lbn,
        cylinder,
        offset_turns,
        len,
        cylinder_len,
        angle_len_turns,
        run_len,
        cylinder_run_len: runs,
        child,
    }
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

/// The two conversions between one of the section's name enums and the model's enum, whose
/// variants carry the same names: each variant is listed once for both directions.
macro_rules! same_variants {
    ($a:ident <-> $b:ident { $($v:ident),* $(,)? }) => {
        impl From<$a> for $b {
            fn from(x: $a) -> $b {
                match x { $($a::$v => $b::$v,)* }
            }
        }
        impl From<$b> for $a {
            fn from(x: $b) -> $a {
                match x { $($b::$v => $a::$v,)* }
            }
        }
    };
}

same_variants!(SchedulerName <-> SchedulerKind { Fcfs, Sstf, CLook, Sptf });
same_variants!(OrderName <-> SurfaceOrder {
    Normal, ReverseOnOddCylinderOfZone, ReverseOnOddCylinder,
});
same_variants!(SparingName <-> SparingScheme {
    None, Tracks, SectorsPerCylinder, SectorsPerCylinderAtFront, SectorsPerTrack, SectorsAtEnd,
    SectorsPerRange, SectorsPerZone,
});
same_variants!(ReadAheadName <-> ReadAhead {
    None, TrackEnd, CylinderEnd, SegmentEnd, DecTracks,
});
same_variants!(WriteBackName <-> WriteBack { None, Limited, Full });

/// The geometry, both ways, its two enums converted by name; the caller adds the zones.
macro_rules! geometry {
    ($ty:ident from $src:ident, $($rest:tt)*) => {
        same_fields!($ty from $src {
            surfaces, cylinders, sparing_range_cylinders, block_count,
        }
            surface_order: $src.surface_order.into(),
            sparing: $src.sparing.into(),
            $($rest)*)
    };
}

/// A zone, both ways, its slips copied; the caller adds the defects.
macro_rules! zone {
    ($ty:ident from $src:ident, $($rest:tt)*) => {
        same_fields!($ty from $src {
            first_cylinder, last_cylinder, sectors_per_track, first_block_offset_sectors,
            empty_front_sectors, track_skew_sectors, cylinder_skew_sectors, spares,
        }
            slips: $src.slips.clone(),
            $($rest)*)
    };
}

/// An HPL seek curve, both ways.
macro_rules! hpl {
    ($ty:ident from $src:ident) => {
        same_fields!($ty from $src {
            boundary_cylinders, a_ns, b_ns_per_sqrt_cylinder, c_ns, e_ns_per_cylinder, single_ns,
        })
    };
}

/// The mechanics, both ways; the caller adds the seek curve.
macro_rules! mechanics {
    ($ty:ident from $src:ident, $($rest:tt)*) => {
        same_fields!($ty from $src { rpm, head_switch_ns, write_settle_ns, } $($rest)*)
    };
}

/// The host interface, both ways.
macro_rules! interface {
    ($ty:ident from $src:ident) => {
        same_fields!($ty from $src {
            read_transfer_ns_per_sector, write_transfer_ns_per_sector,
        })
    };
}

/// The power parameters, both ways.
macro_rules! power {
    ($ty:ident from $src:ident) => {
        same_fields!($ty from $src {
            active_mw, idle_mw, standby_mw, standby_after_idle_ns, spin_up_ns, spin_up_mj,
        })
    };
}

fn geometry_to(g: &Geometry) -> GeometrySection {
    geometry!(GeometrySection from g,
        g4: g.g4.as_ref().map(g4_to),
        zones: g
            .zones
            .iter()
            .map(|z| zone!(ZoneSection from z,
                defects: z.defects.iter().map(|&(a, b)| [a, b]).collect(),
            ))
            .collect(),
    )
}

fn geometry_from(g: &GeometrySection) -> Result<Geometry, String> {
    Ok(geometry!(Geometry from g,
        g4: g.g4.as_ref().map(g4_from).transpose()?,
        zones: g
            .zones
            .iter()
            .map(|z| zone!(Zone from z,
                defects: z.defects.iter().map(|&[a, b]| (a, b)).collect(),
            ))
            .collect(),
    ))
}

fn seek_to(s: &SeekCurve) -> SeekSection {
    match s {
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
        SeekCurve::Hpl(h) => SeekSection::Hpl {
            hpl: hpl!(HplSection from h),
        },
        SeekCurve::HplPlus10 {
            curve,
            first_ten_ns,
        } => SeekSection::HplPlus10 {
            hpl: hpl!(HplSection from curve),
            first_ten_ns: first_ten_ns.to_vec(),
        },
        SeekCurve::Extracted { points } => SeekSection::Extracted {
            points: points.iter().map(|&(d, t)| [u64::from(d), t]).collect(),
        },
    }
}

/// The seek curve a section states; the file's lists must fit the model's types.
fn seek_from(s: &SeekSection, file: &str) -> Result<SeekCurve, ConfigError> {
    Ok(match s {
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
        SeekSection::Hpl { hpl } => SeekCurve::Hpl(hpl!(HplCurve from hpl)),
        SeekSection::HplPlus10 { hpl, first_ten_ns } => SeekCurve::HplPlus10 {
            curve: hpl!(HplCurve from hpl),
            first_ten_ns: first_ten_ns.clone().try_into().map_err(|_| {
                invalid(
                    file,
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
                            file,
                            "mechanics.seek.points",
                            format!("distance {d} is too large"),
                        )
                    })
                })
                .collect::<Result<_, _>>()?,
        },
    })
}

/// The error for `[hdd]`'s key `key` (named below `hdd.`) in `file`.
fn invalid(file: &str, key: &str, message: String) -> ConfigError {
    super::invalid(file, &format!("hdd.{key}"), message)
}

/// The section that states `p` exactly.
pub(crate) fn to_section(p: &HddParams) -> HddSection {
    let o = &p.overheads;
    let c = &p.cache;
    let m = &p.mechanics;
    let i = &p.interface;
    let pw = &p.power;
    HddSection {
        queue_depth: p.queue_depth,
        scheduler: p.scheduler.into(),
        speed_factor: None,
        geometry: geometry_to(&p.geometry),
        mechanics: mechanics!(MechanicsSection from m, seek: seek_to(&m.seek)),
        overheads: overheads!(Overheads2 from o,
            extra_write_disconnect: o
                .extra_write_disconnect
                .as_ref()
                .map(|x| extra_disconnect!(ExtraDisconnectSection from x)),
        ),
        interface: interface!(InterfaceSection from i),
        cache: cache!(CacheSection from c,
            read_ahead: c.read_ahead.into(),
            write_back: c.write_back.into(),
        ),
        power: power!(PowerSection from pw),
    }
}

/// The parameters a section states, checked by building the drive.
pub(crate) fn from_scratch(s: &HddSection, file: &str) -> Result<HddParams, ConfigError> {
    let seek = seek_from(&s.mechanics.seek, file)?;
    let o = &s.overheads;
    let c = &s.cache;
    let m = &s.mechanics;
    let i = &s.interface;
    let pw = &s.power;
    let p = HddParams {
        geometry: geometry_from(&s.geometry).map_err(|m| invalid(file, "geometry.g4.remaps", m))?,
        mechanics: mechanics!(Mechanics from m, seek),
        overheads: overheads!(Overheads from o,
            extra_write_disconnect: o
                .extra_write_disconnect
                .as_ref()
                .map(|x| extra_disconnect!(ExtraWriteDisconnect from x)),
        ),
        interface: interface!(Interface from i),
        cache: cache!(CacheParams from c,
            read_ahead: c.read_ahead.into(),
            write_back: c.write_back.into(),
        ),
        queue_depth: s.queue_depth,
        scheduler: s.scheduler.into(),
        power: power!(PowerParams from pw),
    };
    let p = match s.speed_factor {
        // Exactly the stated drive: no time is rounded again.
        None | Some(1.0) => p,
        Some(f) if SPEED_FACTOR_RANGE.contains(&f) => p.faster_by(f),
        Some(f) => {
            return Err(invalid(
                file,
                "speed_factor",
                format!(
                    "is {f}; it must be a number from {} to {}",
                    SPEED_FACTOR_RANGE.start(),
                    SPEED_FACTOR_RANGE.end()
                ),
            ))
        }
    };
    HddDevice::new(p.clone()).map_err(|e| match e {
        HddError::Geometry(message) => invalid(file, "geometry", message),
        // The model names its parameters by their place in `HddParams`; the section nests
        // the seek curve and the speed under `mechanics`.
        HddError::Parameter { name, message } => {
            let key = match name {
                "rpm" | "seek.points" => format!("mechanics.{name}"),
                other => other.to_string(),
            };
            invalid(file, &key, message)
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
                return Err(super::queue_depth_stated_twice(cx.file, Self::NAME));
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
