//! DiskSim's fourth-generation ("g4") layout, the one DIXtrac writes for the drives it
//! extracts: a tree of indices over track patterns, read as DiskSim 4.0's diskmodel library
//! reads it (`layout_g4.c`).
//!
//! A block first moves past the slipped sectors before it: the slip list names *slots* (the
//! tree's numbering of the sectors, slipped ones included) and how many follow from there,
//! so block `b` is slot `b + s`, with `s` the slips at or before `b + s`. The slot then walks
//! down the tree from the root (the last index). In each index, the entry whose slots
//! `[lbn, lbn + run_len)` hold it takes it; the slot becomes relative to the entry, and its
//! quotient by the entry's `len` says which repetition of the child it falls in: repetition
//! `k` sits `k · cylinder_len` cylinders further on (back, for a negative `cylinder_run_len`:
//! serpentine layouts run alternate surfaces towards the spindle) and `k · angle_len` of a
//! revolution further round. The remainder goes on to the child: another index, or a track
//! pattern on the entry's head, whose sectors `low..=high` hold the slots in order. A sector
//! starts at the sum of the path's offsets and repetition angles plus its sector number times
//! the pattern's sector width (`1 / spt`).
//!
//! Remapped ranges of blocks go straight to their destination sectors.

use crate::layout::{Pbn, SectorUse};
use crate::params::{G4Child, G4Entry, G4Geometry, G4Remap, G4Track};
use crate::HddError;

/// The cumulated slip list and the tree, checked once.
#[derive(Clone, Debug)]
pub(crate) struct G4Map {
    tracks: Vec<G4Track>,
    indices: Vec<Vec<G4Entry>>,
    /// Whether each index's entries start at increasing slots, so that a slot's entry is
    /// found by binary search (the first holding entry, as DiskSim's scan takes, is then the
    /// only one).
    sorted: Vec<bool>,
    /// Each slip's first slot.
    slip_slots: Vec<u64>,
    /// Each slip's own count.
    slip_counts: Vec<u64>,
    /// The slips' counts summed up to and including each one.
    slip_totals: Vec<u64>,
    remaps: Vec<G4Remap>,
    blocks: u64,
    /// The highest slot a block reaches.
    max_slot: i64,
    cylinders: u32,
}

/// Where a physical sector sits in the tree.
struct Found<'a> {
    slot: i64,
    angle: f64,
    track: &'a G4Track,
}

impl G4Map {
    /// Checks `g` (child references, track patterns, slip order) and builds the map for a
    /// drive of `blocks` blocks.
    pub(crate) fn new(g: &G4Geometry, blocks: u64) -> Result<G4Map, HddError> {
        let err = |m: String| Err(HddError::Geometry(format!("g4 layout: {m}")));
        if g.indices.is_empty() {
            return err("at least one index is required".into());
        }
        for (i, t) in g.tracks.iter().enumerate() {
            if t.spt == 0 || t.low > t.high || t.high >= t.spt {
                return err(format!(
                    "track pattern {i}: sectors {}..={} do not fit {} a track",
                    t.low, t.high, t.spt
                ));
            }
        }
        for (i, index) in g.indices.iter().enumerate() {
            if index.is_empty() {
                return err(format!("index {i} is empty"));
            }
            for (j, e) in index.iter().enumerate() {
                if e.len == 0 || e.cylinder_len == 0 || e.run_len == 0 {
                    return err(format!(
                        "index {i} entry {j}: len, cylinder len and run len must be positive"
                    ));
                }
                if !(e.offset_turns.is_finite() && e.angle_len_turns.is_finite()) {
                    return err(format!("index {i} entry {j}: angles must be finite"));
                }
                match e.child {
                    G4Child::Track { pattern, .. } if pattern as usize >= g.tracks.len() => {
                        return err(format!(
                            "index {i} entry {j}: track pattern {pattern} does not exist"
                        ));
                    }
                    // Children come before their parents (the root is the last index), which
                    // also rules out cycles.
                    G4Child::Index(c) if c as usize >= i => {
                        return err(format!(
                            "index {i} entry {j}: child index {c} must come before it"
                        ));
                    }
                    _ => {}
                }
            }
        }
        if g.slips.windows(2).any(|w| w[0].slot >= w[1].slot) {
            return err("slips must be in increasing slot order".into());
        }
        let mut total = 0u64;
        let slip_totals = g
            .slips
            .iter()
            .map(|s| {
                total += s.count;
                total
            })
            .collect();
        let root = g.indices.last().expect("checked non-empty");
        let cylinders = root
            .iter()
            .map(|e| {
                if e.cylinder_run_len > 0 {
                    i64::from(e.cylinder) + e.cylinder_run_len
                } else {
                    i64::from(e.cylinder) + 1
                }
            })
            .max()
            .unwrap_or(0)
            .clamp(0, i64::from(u32::MAX)) as u32;
        let mut map = G4Map {
            tracks: g.tracks.clone(),
            sorted: g
                .indices
                .iter()
                .map(|x| x.windows(2).all(|w| w[0].lbn + w[0].run_len <= w[1].lbn))
                .collect(),
            indices: g.indices.clone(),
            slip_slots: g.slips.iter().map(|s| s.slot).collect(),
            slip_counts: g.slips.iter().map(|s| s.count).collect(),
            slip_totals,
            remaps: g.remaps.clone(),
            blocks,
            max_slot: 0,
            cylinders,
        };
        if blocks > 0 {
            let last = blocks - 1;
            map.max_slot = match map.slipped_before_slot(last) {
                Some(n) => (last + n) as i64,
                None => last as i64,
            };
        }
        Ok(map)
    }

    /// Cylinders the root's entries reach.
    pub(crate) fn cylinders(&self) -> u32 {
        self.cylinders
    }

    /// The slot block `lbn` takes, and the index of the first slip beyond it (DiskSim's
    /// `slipcount`).
    fn slot_of(&self, lbn: u64) -> (u64, usize) {
        let mut j = self.slip_slots.partition_point(|&s| s <= lbn);
        let mut count = if j == 0 { 0 } else { self.slip_totals[j - 1] };
        while j < self.slip_slots.len() && self.slip_slots[j] <= lbn + count {
            count = self.slip_totals[j];
            j += 1;
        }
        (lbn + count, j)
    }

    /// The slips before slot `slot`, or `None` when the slot is itself slipped (DiskSim's
    /// `slipcount_rev`).
    fn slipped_before_slot(&self, slot: u64) -> Option<u64> {
        let j = self.slip_slots.partition_point(|&s| s <= slot);
        if j == 0 {
            return Some(0);
        }
        let k = j - 1;
        if slot < self.slip_slots[k] + self.slip_counts[k] {
            return None;
        }
        Some(self.slip_totals[k])
    }

    fn remap_of(&self, lbn: u64) -> Option<&G4Remap> {
        self.remaps
            .iter()
            .find(|r| r.lbn <= lbn && lbn - r.lbn < r.count)
    }

    /// Where block `lbn` lives and how many blocks from it on follow it sector by sector
    /// (see [`crate::layout::Layout::lbn_to_pbn_run`]).
    pub(crate) fn lbn_to_pbn_run(&self, lbn: u64) -> Option<(Pbn, u64)> {
        if lbn >= self.blocks {
            return None;
        }
        let mut run = self.blocks - lbn;
        if let Some(r) = self.remap_of(lbn) {
            let into = lbn - r.lbn;
            let pbn = Pbn {
                cylinder: r.cylinder,
                head: r.head,
                sector: r.sector + into as u32,
            };
            return Some((pbn, run.min(r.count - into)));
        }
        // A later remapped range ends the run before it.
        for r in &self.remaps {
            if r.lbn > lbn {
                run = run.min(r.lbn - lbn);
            }
        }
        let (slot, next_slip) = self.slot_of(lbn);
        if let Some(&s) = self.slip_slots.get(next_slip) {
            run = run.min(s - slot);
        }
        let mut index = self.indices.len() - 1;
        let mut rest = slot;
        let mut cylinder: i64 = 0;
        loop {
            let e = self.entry_holding(index, rest)?;
            rest -= e.lbn;
            let mut quot = (rest / e.len) as i64;
            if e.cylinder_run_len < 0 {
                quot = -quot;
            }
            let resid = rest % e.len;
            run = run.min(e.len - resid);
            cylinder += i64::from(e.cylinder) + quot * i64::from(e.cylinder_len);
            match e.child {
                G4Child::Index(c) => {
                    index = c as usize;
                    rest = resid;
                }
                G4Child::Track { pattern, head } => {
                    let t = &self.tracks[pattern as usize];
                    if resid > u64::from(t.high - t.low) {
                        return None;
                    }
                    let sector = t.low + resid as u32;
                    run = run.min(u64::from(t.high - sector) + 1);
                    let cylinder = u32::try_from(cylinder).ok()?;
                    return Some((
                        Pbn {
                            cylinder,
                            head,
                            sector,
                        },
                        run,
                    ));
                }
            }
        }
    }

    /// The entry of `index` whose slots hold `slot`, the first such as DiskSim scans them.
    fn entry_holding(&self, index: usize, slot: u64) -> Option<&G4Entry> {
        let entries = &self.indices[index];
        let holds = |e: &&G4Entry| e.lbn <= slot && slot - e.lbn < e.run_len;
        if self.sorted[index] {
            // Sorted, non-overlapping entries: the last one starting at or before the slot
            // is the only candidate.
            let i = entries.partition_point(|e| e.lbn <= slot);
            return i.checked_sub(1).map(|i| &entries[i]).filter(holds);
        }
        entries.iter().find(holds)
    }

    /// The tree path to sector `p`: its slot (before slips are taken out), its angle and its
    /// track pattern (DiskSim's `g4_recurse` from a physical sector). `None` where no entry
    /// holds it or beyond the last block's slot.
    fn find(&self, p: Pbn) -> Option<Found<'_>> {
        let mut index = self.indices.last().expect("checked non-empty");
        let mut cyl = i64::from(p.cylinder);
        let mut max = self.max_slot;
        let mut slot: i64 = 0;
        let mut angle = 0.0;
        loop {
            let e = index.iter().find(|e| {
                let first = i64::from(e.cylinder);
                let (low, high) = if e.cylinder_run_len > 0 {
                    (first, first + e.cylinder_run_len - 1)
                } else {
                    (first + e.cylinder_run_len + 1, first)
                };
                let head_ok = match e.child {
                    G4Child::Track { head, .. } => head == p.head,
                    G4Child::Index(_) => true,
                };
                low <= cyl && cyl <= high && head_ok
            })?;
            let rel = cyl - i64::from(e.cylinder);
            let cyl_len = i64::from(e.cylinder_len);
            let len = e.len as i64;
            // C's truncating division and remainder, as DiskSim computes them.
            let mut quot = rel / cyl_len;
            if e.cylinder_run_len < 0 {
                quot = -quot;
            }
            max = max.min(e.lbn as i64 + e.run_len as i64 - 1) - e.lbn as i64;
            max = max.min((quot + 1) * len - 1) - quot * len;
            slot += e.lbn as i64 + quot * len;
            angle += e.offset_turns + quot as f64 * e.angle_len_turns;
            cyl = rel % cyl_len;
            match e.child {
                G4Child::Index(c) => index = &self.indices[c as usize],
                G4Child::Track { pattern, .. } => {
                    let t = &self.tracks[pattern as usize];
                    if p.sector < t.low || p.sector > t.high || i64::from(p.sector) > max {
                        return None;
                    }
                    let resid = p.sector - t.low;
                    slot += i64::from(resid);
                    angle += f64::from(resid) / f64::from(t.spt);
                    return Some(Found {
                        slot,
                        angle,
                        track: t,
                    });
                }
            }
        }
    }

    /// What physical sector `p` holds (DiskSim's `ptol`); `None` off the tree.
    pub(crate) fn pbn_to_lbn(&self, p: Pbn) -> Option<SectorUse> {
        if let Some(r) = self.remaps.iter().find(|r| {
            r.cylinder == p.cylinder
                && r.head == p.head
                && r.sector <= p.sector
                && u64::from(p.sector - r.sector) < r.count
        }) {
            return Some(SectorUse::Block(r.lbn + u64::from(p.sector - r.sector)));
        }
        let Some(found) = self.find(p) else {
            // A sector of a track the tree knows but beyond its pattern or the last block
            // holds nothing; one on no track is off the disk.
            return self.track_of(p).map(|_| SectorUse::Unused);
        };
        let slot = u64::try_from(found.slot).ok()?;
        Some(match self.slipped_before_slot(slot) {
            None => SectorUse::Unused,
            Some(n) => {
                let lbn = slot - n;
                if lbn >= self.blocks {
                    SectorUse::Unused
                } else if self.remap_of(lbn).is_some() {
                    SectorUse::Remapped
                } else {
                    SectorUse::Block(lbn)
                }
            }
        })
    }

    /// The track pattern of `p`'s track, whatever its sector.
    fn track_of(&self, p: Pbn) -> Option<&G4Track> {
        self.find(Pbn { sector: 0, ..p })
            .or_else(|| {
                // A track whose first mapped sector is not 0: its pattern's own start.
                self.find(Pbn {
                    sector: self.first_pattern_sector(p)?,
                    ..p
                })
            })
            .map(|f| f.track)
    }

    fn first_pattern_sector(&self, p: Pbn) -> Option<u32> {
        self.tracks
            .iter()
            .map(|t| t.low)
            .filter(|&l| l > 0)
            .find(|&l| self.find(Pbn { sector: l, ..p }).is_some())
    }

    /// Sectors on `p`'s track (DiskSim's `g4_spt_pbn`), 0 off the tree.
    pub(crate) fn sectors_on_track(&self, p: Pbn) -> u32 {
        self.find(p)
            .map(|f| f.track)
            .or_else(|| self.track_of(p))
            .map_or(0, |t| t.spt)
    }

    /// The angle, as a fraction of a revolution in [0, 1), at which sector `p` starts
    /// (DiskSim's `g4_skew`); 0 off the tree, as DiskSim answers.
    pub(crate) fn sector_angle(&self, p: Pbn) -> f64 {
        match self.find(p) {
            Some(f) => f.angle - crate::float::floor(f.angle),
            None => 0.0,
        }
    }

    /// The first block and one past the last block on the track holding `lbn`, at `p`
    /// (DiskSim's `g4_track_bound`: the blocks of the track's first and last mapped
    /// sectors).
    pub(crate) fn track_bounds_at(&self, lbn: u64, p: Pbn) -> Option<(u64, u64)> {
        let spt = self.sectors_on_track(p);
        let block = |sector: u32| match self.pbn_to_lbn(Pbn { sector, ..p }) {
            Some(SectorUse::Block(b)) => Some(b),
            _ => None,
        };
        let first = (0..=p.sector).find_map(block).unwrap_or(lbn);
        let last = (p.sector..spt.max(p.sector + 1))
            .rev()
            .find_map(block)
            .unwrap_or(lbn);
        Some((first.min(lbn), last.max(lbn) + 1))
    }
}

#[cfg(test)]
mod tests {
    //! A small serpentine drive written by hand: two surfaces of four cylinders with ten
    //! sectors a track, head 0 outwards over cylinders 0..=3, then head 1 back from 3 to 0,
    //! under a root of one entry.

    use super::*;
    use crate::params::G4Slip;

    fn entry(lbn: u64, cylinder: u32, len: u64, runs: i64, child: G4Child) -> G4Entry {
        G4Entry {
            lbn,
            cylinder,
            offset_turns: 0.25,
            len,
            cylinder_len: 1,
            angle_len_turns: 0.1,
            run_len: len * runs.unsigned_abs(),
            cylinder_run_len: runs,
            child,
        }
    }

    fn serpentine(slips: Vec<G4Slip>) -> G4Geometry {
        G4Geometry {
            tracks: vec![G4Track {
                low: 0,
                high: 9,
                spt: 10,
            }],
            indices: vec![
                vec![
                    entry(
                        0,
                        0,
                        10,
                        4,
                        G4Child::Track {
                            pattern: 0,
                            head: 0,
                        },
                    ),
                    entry(
                        40,
                        3,
                        10,
                        -4,
                        G4Child::Track {
                            pattern: 0,
                            head: 1,
                        },
                    ),
                ],
                // One repetition of index 0, four cylinders wide.
                vec![G4Entry {
                    offset_turns: 0.0,
                    cylinder_len: 4,
                    angle_len_turns: 0.0,
                    cylinder_run_len: 4,
                    ..entry(0, 0, 80, 1, G4Child::Index(0))
                }],
            ],
            slips,
            remaps: vec![],
        }
    }

    fn pbn(cylinder: u32, head: u32, sector: u32) -> Pbn {
        Pbn {
            cylinder,
            head,
            sector,
        }
    }

    #[test]
    fn a_serpentine_tree_maps_head_0_outwards_and_head_1_back() {
        let m = G4Map::new(&serpentine(vec![]), 80).unwrap();
        assert_eq!(m.lbn_to_pbn_run(0), Some((pbn(0, 0, 0), 10)));
        assert_eq!(m.lbn_to_pbn_run(13), Some((pbn(1, 0, 3), 7)));
        assert_eq!(m.lbn_to_pbn_run(40), Some((pbn(3, 1, 0), 10)));
        assert_eq!(m.lbn_to_pbn_run(79), Some((pbn(0, 1, 9), 1)));
        assert_eq!(m.lbn_to_pbn_run(80), None);
        assert_eq!(m.pbn_to_lbn(pbn(2, 1, 4)), Some(SectorUse::Block(54)));
        assert_eq!(m.pbn_to_lbn(pbn(4, 0, 0)), None);
        // Offsets add along the path: 0.25 for the entry, 0.1 a repetition, 1/10 a sector.
        assert!((m.sector_angle(pbn(2, 0, 3)) - (0.25 + 0.2 + 0.3)).abs() < 1e-12);
        assert_eq!(m.track_bounds_at(13, pbn(1, 0, 3)), Some((10, 20)));
        assert_eq!(m.cylinders(), 4);
    }

    #[test]
    fn slips_push_later_blocks_along_and_hold_no_block() {
        // Slots 12 and 13 slipped: block 12 moves to sector 4 of cylinder 1.
        let m = G4Map::new(&serpentine(vec![G4Slip { slot: 12, count: 2 }]), 78).unwrap();
        assert_eq!(m.lbn_to_pbn_run(10), Some((pbn(1, 0, 0), 2)));
        assert_eq!(m.lbn_to_pbn_run(12), Some((pbn(1, 0, 4), 6)));
        assert_eq!(m.pbn_to_lbn(pbn(1, 0, 2)), Some(SectorUse::Unused));
        assert_eq!(m.pbn_to_lbn(pbn(1, 0, 3)), Some(SectorUse::Unused));
        assert_eq!(m.pbn_to_lbn(pbn(1, 0, 4)), Some(SectorUse::Block(12)));
        assert_eq!(m.lbn_to_pbn_run(77), Some((pbn(0, 1, 9), 1)));
        assert_eq!(m.track_bounds_at(12, pbn(1, 0, 4)), Some((10, 18)));
    }

    #[test]
    fn a_remap_sends_its_blocks_to_their_destination() {
        let mut g = serpentine(vec![]);
        g.remaps.push(G4Remap {
            lbn: 5,
            count: 2,
            cylinder: 3,
            head: 0,
            sector: 8,
            spt: 10,
        });
        let m = G4Map::new(&g, 80).unwrap();
        assert_eq!(m.lbn_to_pbn_run(3), Some((pbn(0, 0, 3), 2)));
        assert_eq!(m.lbn_to_pbn_run(6), Some((pbn(3, 0, 9), 1)));
        assert_eq!(m.pbn_to_lbn(pbn(0, 0, 5)), Some(SectorUse::Remapped));
        assert_eq!(m.pbn_to_lbn(pbn(3, 0, 8)), Some(SectorUse::Block(5)));
    }

    #[test]
    fn bad_trees_are_refused_saying_what_is_wrong() {
        type Case = (fn(&mut G4Geometry), &'static str);
        let cases: [Case; 5] = [
            (|g| g.indices.clear(), "at least one index is required"),
            (
                |g| g.tracks[0].high = 10,
                "track pattern 0: sectors 0..=10 do not fit 10 a track",
            ),
            (
                |g| g.indices[1][0].child = G4Child::Index(1),
                "index 1 entry 0: child index 1 must come before it",
            ),
            (
                |g| {
                    g.indices[0][1].child = G4Child::Track {
                        pattern: 3,
                        head: 1,
                    }
                },
                "index 0 entry 1: track pattern 3 does not exist",
            ),
            (
                |g| g.slips = vec![G4Slip { slot: 5, count: 1 }, G4Slip { slot: 5, count: 1 }],
                "slips must be in increasing slot order",
            ),
        ];
        for (spoil, want) in cases {
            let mut g = serpentine(vec![]);
            spoil(&mut g);
            match G4Map::new(&g, 80) {
                Err(HddError::Geometry(m)) => assert_eq!(m, format!("g4 layout: {want}")),
                other => panic!("{want}: got {other:?}"),
            }
        }
    }
}
