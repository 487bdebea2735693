//! Logical blocks to physical sectors and back, following DiskSim's first-generation ("g1")
//! layout: zones of cylinders with a fixed number of sectors per track, a sparing unit (track,
//! cylinder, range of cylinders or zone) whose last sectors are spares, slipped defects that
//! push the following blocks of their unit along by one sector, remapped defects that move a
//! single block to a spare, and track and cylinder skews that set each track's angular start.

use crate::params::{Geometry, SparingScheme, SurfaceOrder};
use crate::HddError;

/// A physical sector: cylinder, head (surface) and sector number on the track.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pbn {
    pub cylinder: u32,
    pub head: u32,
    pub sector: u32,
}

/// What a physical sector holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SectorUse {
    Block(u64),
    /// A slipped defect, an unused spare, or empty space at a zone's front.
    Unused,
    /// A defect whose block lives in a spare elsewhere.
    Remapped,
}

#[derive(Clone, Debug)]
struct ZoneMap {
    first_cylinder: u32,
    last_cylinder: u32,
    spt: u32,
    first_lbn: u64,
    lbns: u64,
    empty_front: u64,
    /// Length of a sparing unit in slots (sectors, or tracks when `track_slots`).
    unit_slots: u64,
    /// Slots in the whole zone.
    zone_slots: u64,
    spares: u64,
    spares_at_front: bool,
    track_slots: bool,
    /// Spares push the skew of later tracks (DiskSim does so for per-cylinder and per-track
    /// sparing).
    slips_shift_skew: bool,
    per_track_skew_cutoff: bool,
    slips: Vec<u64>,
    defects: Vec<(u64, u64)>,
    first_offset: f64,
    track_skew: f64,
    cylinder_skew: f64,
}

impl ZoneMap {
    fn usable_per_full_unit(&self) -> u64 {
        self.unit_slots.saturating_sub(self.spares)
    }

    /// Slots of unit `u`, which is shorter than the others when it is the zone's last.
    fn unit_len(&self, u: u64) -> u64 {
        self.unit_slots.min(self.zone_slots - u * self.unit_slots)
    }

    fn units(&self) -> u64 {
        self.zone_slots.div_ceil(self.unit_slots)
    }

    fn slips_in(&self, from: u64, to_inclusive: u64) -> u64 {
        let a = self.slips.partition_point(|&s| s < from);
        let b = self.slips.partition_point(|&s| s <= to_inclusive);
        (b - a) as u64
    }

    /// Maps a zone-relative logical index (after empty space) to a zone slot.
    fn index_to_slot(&self, l: u64) -> Option<u64> {
        let usable = self.usable_per_full_unit();
        if usable == 0 {
            return None;
        }
        let u = l / usable;
        let k = l % usable;
        let base = u * self.unit_slots;
        let front = if self.spares_at_front { self.spares } else { 0 };
        // The k-th usable slot of the unit: skip every slip at or before the candidate until
        // the candidate stops moving.
        let mut p = k + front;
        loop {
            let next = k + front + self.slips_in(base, base + p);
            if next == p {
                break;
            }
            p = next;
        }
        if p >= self.unit_len(u) {
            return None;
        }
        Some(base + p)
    }

    fn slot_to_index(&self, slot: u64) -> Option<u64> {
        if self.slips.binary_search(&slot).is_ok() {
            return None;
        }
        let u = slot / self.unit_slots;
        let base = u * self.unit_slots;
        let p = slot - base;
        let front = if self.spares_at_front { self.spares } else { 0 };
        let before = if p == 0 {
            0
        } else {
            self.slips_in(base, slot - 1)
        };
        let k = p.checked_sub(front + before)?;
        let usable_here = self.unit_len(u).saturating_sub(self.spares);
        if k >= usable_here {
            return None;
        }
        Some(u * self.usable_per_full_unit() + k)
    }
}

/// The mapping for a whole disk, built once from [`Geometry`].
#[derive(Clone, Debug)]
pub struct Layout {
    surfaces: u32,
    cylinders: u32,
    order: SurfaceOrder,
    zones: Vec<ZoneMap>,
    blocks: u64,
}

impl Layout {
    pub fn new(g: &Geometry) -> Result<Layout, HddError> {
        if g.surfaces == 0 || g.cylinders == 0 {
            return Err(HddError::Geometry(
                "surfaces and cylinders must be positive".into(),
            ));
        }
        if g.zones.is_empty() {
            return Err(HddError::Geometry("at least one zone is required".into()));
        }
        let surfaces = u64::from(g.surfaces);
        let mut zones = Vec::with_capacity(g.zones.len());
        let mut next_lbn = 0u64;
        let mut prev_last: Option<u32> = None;
        for (i, z) in g.zones.iter().enumerate() {
            if z.last_cylinder < z.first_cylinder {
                return Err(HddError::Geometry(format!(
                    "zone {i}: the last cylinder {} precedes the first {}",
                    z.last_cylinder, z.first_cylinder
                )));
            }
            if prev_last.is_some_and(|p| z.first_cylinder <= p) {
                return Err(HddError::Geometry(format!(
                    "zone {i} overlaps or precedes the previous zone"
                )));
            }
            prev_last = Some(z.last_cylinder);
            if z.sectors_per_track == 0 {
                return Err(HddError::Geometry(format!(
                    "zone {i}: sectors per track must be positive"
                )));
            }
            for v in [
                z.first_block_offset_sectors,
                z.track_skew_sectors,
                z.cylinder_skew_sectors,
            ] {
                if !v.is_finite() {
                    return Err(HddError::Geometry(format!(
                        "zone {i}: skews must be finite"
                    )));
                }
            }
            let spt = u64::from(z.sectors_per_track);
            let cyls = u64::from(z.last_cylinder - z.first_cylinder + 1);
            let track_slots = g.sparing == SparingScheme::Tracks;
            let zone_slots = if track_slots {
                cyls * surfaces
            } else {
                cyls * surfaces * spt
            };
            let unit_slots = match g.sparing {
                SparingScheme::None
                | SparingScheme::Tracks
                | SparingScheme::SectorsAtEnd
                | SparingScheme::SectorsPerZone => zone_slots,
                SparingScheme::SectorsPerCylinder | SparingScheme::SectorsPerCylinderAtFront => {
                    surfaces * spt
                }
                SparingScheme::SectorsPerTrack => spt,
                SparingScheme::SectorsPerRange => {
                    if g.sparing_range_cylinders == 0 {
                        return Err(HddError::Geometry(
                            "the sparing range must be at least one cylinder".into(),
                        ));
                    }
                    (u64::from(g.sparing_range_cylinders) * surfaces * spt).min(zone_slots)
                }
            };
            let spares = if g.sparing == SparingScheme::None {
                0
            } else {
                u64::from(z.spares)
            };
            let mut slips = z.slips.clone();
            slips.sort_unstable();
            slips.dedup();
            if slips.last().is_some_and(|&s| s >= zone_slots) {
                return Err(HddError::Geometry(format!(
                    "zone {i}: a slip lies outside the zone's {zone_slots} slots"
                )));
            }
            let sector_count = cyls * surfaces * spt;
            if z.defects
                .iter()
                .any(|&(a, b)| a >= sector_count || b >= sector_count)
            {
                return Err(HddError::Geometry(format!(
                    "zone {i}: a defect lies outside the zone"
                )));
            }
            let mut zm = ZoneMap {
                first_cylinder: z.first_cylinder,
                last_cylinder: z.last_cylinder,
                spt: z.sectors_per_track,
                first_lbn: next_lbn,
                lbns: 0,
                empty_front: u64::from(z.empty_front_sectors),
                unit_slots,
                zone_slots,
                spares,
                spares_at_front: g.sparing == SparingScheme::SectorsPerCylinderAtFront,
                track_slots,
                slips_shift_skew: matches!(
                    g.sparing,
                    SparingScheme::SectorsPerCylinder
                        | SparingScheme::SectorsPerCylinderAtFront
                        | SparingScheme::SectorsPerTrack
                ),
                per_track_skew_cutoff: g.sparing == SparingScheme::SectorsPerTrack,
                slips,
                defects: z.defects.clone(),
                first_offset: z.first_block_offset_sectors,
                track_skew: z.track_skew_sectors,
                cylinder_skew: z.cylinder_skew_sectors,
            };
            let mut usable: u64 = (0..zm.units())
                .map(|u| zm.unit_len(u).saturating_sub(spares))
                .sum();
            // A unit loses one usable slot per slip beyond its spares; count those too.
            let mut lost = 0u64;
            for u in 0..zm.units() {
                let base = u * unit_slots;
                let n = zm.slips_in(base, base + zm.unit_len(u) - 1);
                lost += n.saturating_sub(spares);
            }
            usable = usable.saturating_sub(lost);
            if track_slots {
                usable *= spt;
            }
            zm.lbns = usable.saturating_sub(zm.empty_front);
            next_lbn += zm.lbns;
            zones.push(zm);
        }
        if let Some(count) = g.block_count {
            if count > next_lbn {
                return Err(HddError::Geometry(format!(
                    "the block count {count} exceeds the {next_lbn} blocks the zones map"
                )));
            }
            next_lbn = count;
        }
        // DiskSim accepts a last zone that ends one cylinder past the stated count; the arm
        // reaches every cylinder a zone names.
        let cylinders = g.cylinders.max(
            g.zones
                .iter()
                .map(|z| z.last_cylinder + 1)
                .max()
                .unwrap_or(0),
        );
        Ok(Layout {
            surfaces: g.surfaces,
            cylinders,
            order: g.surface_order,
            zones,
            blocks: next_lbn,
        })
    }

    /// Logical blocks the layout holds.
    pub fn blocks(&self) -> u64 {
        self.blocks
    }

    pub fn cylinders(&self) -> u32 {
        self.cylinders
    }

    pub fn surfaces(&self) -> u32 {
        self.surfaces
    }

    fn zone_of_lbn(&self, lbn: u64) -> Option<&ZoneMap> {
        if lbn >= self.blocks {
            return None;
        }
        let i = self.zones.partition_point(|z| z.first_lbn + z.lbns <= lbn);
        self.zones.get(i).filter(|z| lbn >= z.first_lbn)
    }

    fn zone_of_cylinder(&self, cyl: u32) -> Option<&ZoneMap> {
        let i = self.zones.partition_point(|z| z.last_cylinder < cyl);
        self.zones.get(i).filter(|z| cyl >= z.first_cylinder)
    }

    /// The surface a logical track index of a cylinder lands on; its own inverse.
    fn surface(&self, z: &ZoneMap, cyl: u32, track_in_cyl: u32) -> u32 {
        let reverse = match self.order {
            SurfaceOrder::Normal => false,
            SurfaceOrder::ReverseOnOddCylinderOfZone => (cyl - z.first_cylinder) % 2 == 1,
            SurfaceOrder::ReverseOnOddCylinder => cyl % 2 == 1,
        };
        if reverse {
            self.surfaces - 1 - track_in_cyl
        } else {
            track_in_cyl
        }
    }

    /// Where logical block `lbn` lives, or `None` past the end of the disk.
    pub fn lbn_to_pbn(&self, lbn: u64) -> Option<Pbn> {
        let z = self.zone_of_lbn(lbn)?;
        let l = lbn - z.first_lbn + z.empty_front;
        let spt = u64::from(z.spt);
        let mut idx = if z.track_slots {
            let slot = z.index_to_slot(l / spt)?;
            slot * spt + l % spt
        } else {
            z.index_to_slot(l)?
        };
        if let Some(&(_, spare)) = z.defects.iter().find(|&&(d, _)| d == idx) {
            idx = spare;
        }
        let per_cyl = u64::from(self.surfaces) * spt;
        let cylinder = z.first_cylinder + (idx / per_cyl) as u32;
        let track = ((idx % per_cyl) / spt) as u32;
        Some(Pbn {
            cylinder,
            head: self.surface(z, cylinder, track),
            sector: (idx % spt) as u32,
        })
    }

    /// What physical sector `p` holds; `None` when it is not on the disk.
    pub fn pbn_to_lbn(&self, p: Pbn) -> Option<SectorUse> {
        let z = self.zone_of_cylinder(p.cylinder)?;
        if p.head >= self.surfaces || p.sector >= z.spt {
            return None;
        }
        let spt = u64::from(z.spt);
        let track = u64::from(self.surface(z, p.cylinder, p.head));
        let mut idx = (u64::from(p.cylinder - z.first_cylinder) * u64::from(self.surfaces) + track)
            * spt
            + u64::from(p.sector);
        if z.defects.iter().any(|&(d, s)| d == idx && d != s) {
            return Some(SectorUse::Remapped);
        }
        if let Some(&(d, _)) = z.defects.iter().find(|&&(_, s)| s == idx) {
            idx = d;
        }
        let l = if z.track_slots {
            z.slot_to_index(idx / spt).map(|t| t * spt + idx % spt)
        } else {
            z.slot_to_index(idx)
        };
        Some(match l {
            Some(l)
                if l >= z.empty_front
                    && l - z.empty_front < z.lbns
                    && z.first_lbn + l - z.empty_front < self.blocks =>
            {
                SectorUse::Block(z.first_lbn + l - z.empty_front)
            }
            _ => SectorUse::Unused,
        })
    }

    /// The first block and one past the last block that the track holding `lbn` maps, as
    /// DiskSim's track boundaries give them; `None` past the end of the disk. Blocks that a
    /// spare on the track holds for a defect elsewhere are not counted: they belong to the
    /// defective sector's track.
    pub fn track_bounds(&self, lbn: u64) -> Option<(u64, u64)> {
        let p = self.lbn_to_pbn(lbn)?;
        let z = self.zone_of_cylinder(p.cylinder)?;
        let mut first = lbn;
        let mut last = lbn;
        for sector in 0..z.spt {
            let q = Pbn { sector, ..p };
            if let Some(SectorUse::Block(b)) = self.pbn_to_lbn(q) {
                if self.lbn_to_pbn(b) == Some(q) && b.abs_diff(lbn) < u64::from(z.spt) {
                    first = first.min(b);
                    last = last.max(b);
                }
            }
        }
        Some((first, last + 1))
    }

    /// Sectors on the tracks of cylinder `cyl` (0 for a cylinder outside every zone).
    pub fn sectors_per_track(&self, cyl: u32) -> u32 {
        self.zone_of_cylinder(cyl).map_or(0, |z| z.spt)
    }

    /// The angle, as a fraction of a revolution in [0, 1), at which sector `p` starts.
    pub fn sector_angle(&self, p: Pbn) -> f64 {
        let Some(z) = self.zone_of_cylinder(p.cylinder) else {
            return 0.0;
        };
        let cyl_rel = p.cylinder - z.first_cylinder;
        let track = self.surface(z, p.cylinder, p.head);
        let switches = f64::from(track) + f64::from(self.surfaces - 1) * f64::from(cyl_rel);
        let mut sectors = z.first_offset
            + switches * z.track_skew
            + f64::from(cyl_rel) * z.cylinder_skew
            + f64::from(p.sector);
        if z.slips_shift_skew {
            let mut tracks = u64::from(cyl_rel) * u64::from(self.surfaces);
            if z.per_track_skew_cutoff {
                tracks += u64::from(track);
            }
            let cutoff = tracks * u64::from(z.spt);
            sectors += z.slips.partition_point(|&s| s < cutoff) as f64;
        }
        let turns = sectors / f64::from(z.spt);
        turns - turns.floor()
    }
}
