//! Logical blocks to physical sectors and back, following DiskSim's first-generation ("g1")
//! layout: zones of cylinders with a fixed number of sectors per track, a sparing unit (track,
//! cylinder, range of cylinders or zone) whose last sectors are spares, slipped defects that
//! push the following blocks of their unit along by one sector, remapped defects that move a
//! single block to a spare, and track and cylinder skews that set each track's angular start.
//! A drive extracted by DIXtrac states DiskSim's G4 layout instead, which `crate::g4` maps.

use crate::g4::G4Map;
use crate::params::{Geometry, SparingScheme, SurfaceOrder, Zone};
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
    /// `slips[i] - i` for each slip: never decreasing, since the slips are sorted and
    /// distinct. It finds the k-th usable slot of a unit with one binary search (see
    /// [`ZoneMap::index_to_slot`]).
    slip_keys: Vec<u64>,
    defects: Vec<(u64, u64)>,
    first_offset: f64,
    track_skew: f64,
    cylinder_skew: f64,
}

/// Checks zone `i`'s own numbers and that it follows the previous zone, which ended at
/// cylinder `prev_last`.
fn check_zone(i: usize, z: &Zone, prev_last: Option<u32>) -> Result<(), HddError> {
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
    Ok(())
}

impl ZoneMap {
    /// The map of zone `i` of `g`, `z`, whose first block is `first_lbn`: its slots and
    /// sparing units under `g`'s sparing scheme, its slips and defects checked against them,
    /// and the blocks it holds.
    fn new(i: usize, z: &Zone, g: &Geometry, first_lbn: u64) -> Result<ZoneMap, HddError> {
        let surfaces = u64::from(g.surfaces);
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
            first_lbn,
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
            slip_keys: slips
                .iter()
                .enumerate()
                .map(|(i, &s)| s - i as u64)
                .collect(),
            slips,
            defects: z.defects.clone(),
            first_offset: z.first_block_offset_sectors,
            track_skew: z.track_skew_sectors,
            cylinder_skew: z.cylinder_skew_sectors,
        };
        zm.lbns = zm.usable_blocks();
        Ok(zm)
    }

    /// The blocks the zone holds: every unit's slots less its spares and the slips beyond
    /// them, in sectors, less the empty space at the zone's front.
    fn usable_blocks(&self) -> u64 {
        let spares = self.spares;
        let mut usable: u64 = (0..self.units())
            .map(|u| self.unit_len(u).saturating_sub(spares))
            .sum();
        // A unit loses one usable slot per slip beyond its spares; count those too.
        let mut lost = 0u64;
        for u in 0..self.units() {
            let base = u * self.unit_slots;
            let n = self.slips_in(base, base + self.unit_len(u) - 1);
            lost += n.saturating_sub(spares);
        }
        usable = usable.saturating_sub(lost);
        if self.track_slots {
            usable *= u64::from(self.spt);
        }
        usable.saturating_sub(self.empty_front)
    }

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

    /// Maps a zone-relative logical index (after empty space) to a zone slot, and says how
    /// many indices from `l` on map to the slots that follow it one by one (at least one):
    /// the run ends at the next slip, at the end of the unit's usable slots or at the unit's
    /// end.
    ///
    /// The k-th usable slot of a unit starting at `base` is the least p with
    /// `p = k + front + (slips in [base, base + p])`. With the slips sorted and distinct,
    /// slip i of the unit (the a-th slip of the zone being the unit's first) is among those
    /// exactly when `slips[i] - i <= k + front + base - a`; as `slips[i] - i` never
    /// decreases, one binary search over those keys counts them. Every slip before the unit
    /// also passes the test (they are distinct and below `base`), so the count of passing
    /// keys less `a` is the unit's own count.
    fn index_to_slot(&self, l: u64) -> Option<(u64, u64)> {
        let usable = self.usable_per_full_unit();
        if usable == 0 {
            return None;
        }
        // Most drives spare per zone: one unit, and no division.
        let (u, k) = if l < usable {
            (0, l)
        } else {
            (l / usable, l % usable)
        };
        let base = u * self.unit_slots;
        let front = if self.spares_at_front { self.spares } else { 0 };
        let before = if base == 0 {
            0
        } else {
            self.slips.partition_point(|&s| s < base)
        };
        let bound = k + front + base - before as u64;
        let counted = self.slip_keys.partition_point(|&g| g <= bound) - before;
        let p = k + front + counted as u64;
        let len = self.unit_len(u);
        if p >= len {
            return None;
        }
        let to_next_slip = self
            .slips
            .get(before + counted)
            .map_or(u64::MAX, |&s| s - base - p);
        Some((base + p, (usable - k).min(len - p).min(to_next_slip)))
    }

    fn slot_to_index(&self, slot: u64) -> Option<u64> {
        // The slips below the slot; the next one is the slot itself when it is slipped.
        let below = self.slips.partition_point(|&s| s < slot);
        if self.slips.get(below) == Some(&slot) {
            return None;
        }
        let u = if slot < self.unit_slots {
            0
        } else {
            slot / self.unit_slots
        };
        let base = u * self.unit_slots;
        let p = slot - base;
        let front = if self.spares_at_front { self.spares } else { 0 };
        // The unit's slips before the slot.
        let before = if base == 0 {
            below
        } else {
            below - self.slips.partition_point(|&s| s < base)
        } as u64;
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
    /// One past each zone's last block, side by side for the search by block.
    zone_ends: Vec<u64>,
    /// The index of the zone holding each cylinder ([`NO_ZONE`] between zones), for drives
    /// of at most [`ZONE_TABLE_MAX_CYLINDERS`] cylinders and fewer than `NO_ZONE` zones;
    /// empty otherwise. Every repositioning and rotational position asks for a cylinder's
    /// zone, several times a request.
    zone_by_cylinder: Vec<u16>,
    blocks: u64,
    /// The G4 tree, for a drive that states one: it then answers every question and
    /// `zones` is empty.
    g4: Option<Box<G4Map>>,
}

/// [`Layout::zone_by_cylinder`]'s mark for a cylinder that no zone holds.
const NO_ZONE: u16 = u16::MAX;

/// Drives with more cylinders find a cylinder's zone by binary search (2 bytes a cylinder,
/// 2 MiB at most, for the table).
const ZONE_TABLE_MAX_CYLINDERS: u32 = 1 << 20;

impl Layout {
    pub fn new(g: &Geometry) -> Result<Layout, HddError> {
        if g.surfaces == 0 || g.cylinders == 0 {
            return Err(HddError::Geometry(
                "surfaces and cylinders must be positive".into(),
            ));
        }
        if let Some(tree) = &g.g4 {
            if !g.zones.is_empty() {
                return Err(HddError::Geometry(
                    "a g4 layout maps the blocks itself: the zones must be empty".into(),
                ));
            }
            let Some(blocks) = g.block_count else {
                return Err(HddError::Geometry(
                    "a g4 layout needs the block count".into(),
                ));
            };
            let map = G4Map::new(tree, blocks)?;
            return Ok(Layout {
                surfaces: g.surfaces,
                cylinders: g.cylinders.max(map.cylinders()),
                order: g.surface_order,
                zones: Vec::new(),
                zone_ends: Vec::new(),
                zone_by_cylinder: Vec::new(),
                blocks,
                g4: Some(Box::new(map)),
            });
        }
        if g.zones.is_empty() {
            return Err(HddError::Geometry("at least one zone is required".into()));
        }
        let mut zones = Vec::with_capacity(g.zones.len());
        let mut next_lbn = 0u64;
        let mut prev_last: Option<u32> = None;
        for (i, z) in g.zones.iter().enumerate() {
            check_zone(i, z, prev_last)?;
            prev_last = Some(z.last_cylinder);
            let zm = ZoneMap::new(i, z, g, next_lbn)?;
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
        let mut layout = Layout {
            surfaces: g.surfaces,
            cylinders,
            order: g.surface_order,
            zone_ends: zones.iter().map(|z| z.first_lbn + z.lbns).collect(),
            zones,
            zone_by_cylinder: Vec::new(),
            blocks: next_lbn,
            g4: None,
        };
        if cylinders <= ZONE_TABLE_MAX_CYLINDERS && layout.zones.len() < usize::from(NO_ZONE) {
            layout.zone_by_cylinder = (0..cylinders)
                .map(|c| layout.zone_index_searched(c).map_or(NO_ZONE, |i| i as u16))
                .collect();
        }
        Ok(layout)
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
        let i = self.zone_ends.partition_point(|&e| e <= lbn);
        self.zones.get(i).filter(|z| lbn >= z.first_lbn)
    }

    fn zone_of_cylinder(&self, cyl: u32) -> Option<&ZoneMap> {
        let i = match self.zone_by_cylinder.get(cyl as usize) {
            Some(&NO_ZONE) => return None,
            Some(&i) => usize::from(i),
            None => self.zone_index_searched(cyl)?,
        };
        Some(&self.zones[i])
    }

    /// The index of the zone holding cylinder `cyl`, by binary search.
    fn zone_index_searched(&self, cyl: u32) -> Option<usize> {
        let i = self.zones.partition_point(|z| z.last_cylinder < cyl);
        self.zones
            .get(i)
            .filter(|z| cyl >= z.first_cylinder)
            .map(|_| i)
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
        self.lbn_to_pbn_run(lbn).map(|(p, _)| p)
    }

    /// Where logical block `lbn` lives, and how many blocks from it on lie in the sectors
    /// that follow it on the same track (at least one): block `lbn + i` of the run is sector
    /// `p.sector + i` of `p`'s track. A run ends at a slip, a spare, a remapped defect, the
    /// track's end, the zone's end or the disk's end. `None` past the end of the disk.
    pub fn lbn_to_pbn_run(&self, lbn: u64) -> Option<(Pbn, u64)> {
        if let Some(g4) = &self.g4 {
            return g4.lbn_to_pbn_run(lbn);
        }
        let z = self.zone_of_lbn(lbn)?;
        let l = lbn - z.first_lbn + z.empty_front;
        let spt = u64::from(z.spt);
        let (mut idx, mut run) = if z.track_slots {
            let (slot, _) = z.index_to_slot(l / spt)?;
            (slot * spt + l % spt, spt - l % spt)
        } else {
            z.index_to_slot(l)?
        };
        if let Some(&(_, spare)) = z.defects.iter().find(|&&(d, _)| d == idx) {
            idx = spare;
            run = 1;
        } else {
            // A later block of the run whose sector is a remapped defect lives in a spare.
            for &(d, _) in &z.defects {
                if d > idx {
                    run = run.min(d - idx);
                }
            }
        }
        let per_cyl = u64::from(self.surfaces) * spt;
        let cylinder = z.first_cylinder + (idx / per_cyl) as u32;
        let track = ((idx % per_cyl) / spt) as u32;
        let sector = idx % spt;
        let run = run
            .min(spt - sector)
            .min(z.first_lbn + z.lbns - lbn)
            .min(self.blocks - lbn);
        Some((
            Pbn {
                cylinder,
                head: self.surface(z, cylinder, track),
                sector: sector as u32,
            },
            run,
        ))
    }

    /// What physical sector `p` holds; `None` when it is not on the disk.
    pub fn pbn_to_lbn(&self, p: Pbn) -> Option<SectorUse> {
        if let Some(g4) = &self.g4 {
            if p.head >= self.surfaces {
                return None;
            }
            return g4.pbn_to_lbn(p);
        }
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
        let (p, run) = self.lbn_to_pbn_run(lbn)?;
        self.track_bounds_at(lbn, p, run)
    }

    /// [`Layout::track_bounds`] for a block whose place is known: `lbn` is at `p`, and the
    /// `run` blocks from it follow it sector by sector on that track, as
    /// [`Layout::lbn_to_pbn_run`] says (a shorter run gives the same answer).
    pub fn track_bounds_at(&self, lbn: u64, p: Pbn, run: u64) -> Option<(u64, u64)> {
        if let Some(g4) = &self.g4 {
            return g4.track_bounds_at(lbn, p);
        }
        let z = self.zone_of_cylinder(p.cylinder)?;
        if z.defects.is_empty() {
            // Without remapped defects the two mappings are each other's inverse on the
            // blocks of the disk, and a track's blocks rise with the sector number (a slot's
            // block is its unit's count of usable slots before it; units hold whole tracks),
            // so they lie within one track's width of each other: the track's first block is
            // the one in its first sector that holds a block, and its last block is the end
            // of `lbn`'s run when that run reaches the track's end, or else the one in its
            // last sector that holds a block.
            let block = |sector: u32| match self.pbn_to_lbn(Pbn { sector, ..p }) {
                Some(SectorUse::Block(b)) => Some(b),
                _ => None,
            };
            let first = (0..p.sector).find_map(block).unwrap_or(lbn);
            let last = if u64::from(p.sector) + run == u64::from(z.spt) {
                lbn + run - 1
            } else {
                (p.sector + 1..z.spt).rev().find_map(block).unwrap_or(lbn)
            };
            return Some((first.min(lbn), last.max(lbn) + 1));
        }
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

    /// Sectors on the tracks of cylinder `cyl` (0 for a cylinder outside every zone). A G4
    /// layout's tracks may differ within a cylinder: this is its first surface's.
    pub fn sectors_per_track(&self, cyl: u32) -> u32 {
        if self.g4.is_some() {
            return self.sectors_on_track(Pbn {
                cylinder: cyl,
                head: 0,
                sector: 0,
            });
        }
        self.zone_of_cylinder(cyl).map_or(0, |z| z.spt)
    }

    /// Sectors on the track holding `p` (0 for a track the layout does not hold): the
    /// sector width is a revolution over this.
    pub fn sectors_on_track(&self, p: Pbn) -> u32 {
        match &self.g4 {
            Some(g4) => g4.sectors_on_track(p),
            None => self.sectors_per_track(p.cylinder),
        }
    }

    /// The angle, as a fraction of a revolution in [0, 1), at which sector `p` starts.
    pub fn sector_angle(&self, p: Pbn) -> f64 {
        if let Some(g4) = &self.g4 {
            return g4.sector_angle(p);
        }
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
        turns - crate::float::floor(turns)
    }
}

#[cfg(test)]
#[path = "layout_tests.rs"]
mod tests;
