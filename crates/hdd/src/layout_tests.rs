//! The fast mapping against the direct one, as the layout computed it before it was
//! made fast: the fixed-point search for a unit's k-th usable slot, binary searches over
//! the zones, block by block mapping and the whole-track scan, on random geometries.

use super::*;
use crate::params::Zone;
use storsim_core::Prng;

/// The k-th usable slot of its unit found by iterating to the fixed point, as the layout
/// did before it counted slips with one binary search.
fn index_to_slot_direct(z: &ZoneMap, l: u64) -> Option<u64> {
    let usable = z.usable_per_full_unit();
    if usable == 0 {
        return None;
    }
    let u = l / usable;
    let k = l % usable;
    let base = u * z.unit_slots;
    let front = if z.spares_at_front { z.spares } else { 0 };
    let mut p = k + front;
    loop {
        let next = k + front + z.slips_in(base, base + p);
        if next == p {
            break;
        }
        p = next;
    }
    if p >= z.unit_len(u) {
        return None;
    }
    Some(base + p)
}

fn slot_to_index_direct(z: &ZoneMap, slot: u64) -> Option<u64> {
    if z.slips.binary_search(&slot).is_ok() {
        return None;
    }
    let u = slot / z.unit_slots;
    let base = u * z.unit_slots;
    let p = slot - base;
    let front = if z.spares_at_front { z.spares } else { 0 };
    let before = if p == 0 {
        0
    } else {
        z.slips_in(base, slot - 1)
    };
    let k = p.checked_sub(front + before)?;
    let usable_here = z.unit_len(u).saturating_sub(z.spares);
    if k >= usable_here {
        return None;
    }
    Some(u * z.usable_per_full_unit() + k)
}

fn zone_of_lbn_direct(l: &Layout, lbn: u64) -> Option<&ZoneMap> {
    if lbn >= l.blocks {
        return None;
    }
    let i = l.zones.partition_point(|z| z.first_lbn + z.lbns <= lbn);
    l.zones.get(i).filter(|z| lbn >= z.first_lbn)
}

fn zone_of_cylinder_direct(l: &Layout, cyl: u32) -> Option<&ZoneMap> {
    let i = l.zones.partition_point(|z| z.last_cylinder < cyl);
    l.zones.get(i).filter(|z| cyl >= z.first_cylinder)
}

fn pbn_to_lbn_direct(l: &Layout, p: Pbn) -> Option<SectorUse> {
    let z = zone_of_cylinder_direct(l, p.cylinder)?;
    if p.head >= l.surfaces || p.sector >= z.spt {
        return None;
    }
    let spt = u64::from(z.spt);
    let track = u64::from(l.surface(z, p.cylinder, p.head));
    let mut idx = (u64::from(p.cylinder - z.first_cylinder) * u64::from(l.surfaces) + track) * spt
        + u64::from(p.sector);
    if z.defects.iter().any(|&(d, s)| d == idx && d != s) {
        return Some(SectorUse::Remapped);
    }
    if let Some(&(d, _)) = z.defects.iter().find(|&&(_, s)| s == idx) {
        idx = d;
    }
    let i = if z.track_slots {
        slot_to_index_direct(z, idx / spt).map(|t| t * spt + idx % spt)
    } else {
        slot_to_index_direct(z, idx)
    };
    Some(match i {
        Some(i)
            if i >= z.empty_front
                && i - z.empty_front < z.lbns
                && z.first_lbn + i - z.empty_front < l.blocks =>
        {
            SectorUse::Block(z.first_lbn + i - z.empty_front)
        }
        _ => SectorUse::Unused,
    })
}

fn lbn_to_pbn_direct(l: &Layout, lbn: u64) -> Option<Pbn> {
    let z = zone_of_lbn_direct(l, lbn)?;
    let i = lbn - z.first_lbn + z.empty_front;
    let spt = u64::from(z.spt);
    let mut idx = if z.track_slots {
        index_to_slot_direct(z, i / spt)? * spt + i % spt
    } else {
        index_to_slot_direct(z, i)?
    };
    if let Some(&(_, spare)) = z.defects.iter().find(|&&(d, _)| d == idx) {
        idx = spare;
    }
    let per_cyl = u64::from(l.surfaces) * spt;
    let cylinder = z.first_cylinder + (idx / per_cyl) as u32;
    let track = ((idx % per_cyl) / spt) as u32;
    Some(Pbn {
        cylinder,
        head: l.surface(z, cylinder, track),
        sector: (idx % spt) as u32,
    })
}

/// Every sector of the track, as the layout scanned before.
fn track_bounds_direct(l: &Layout, lbn: u64) -> Option<(u64, u64)> {
    let p = lbn_to_pbn_direct(l, lbn)?;
    let z = zone_of_cylinder_direct(l, p.cylinder)?;
    let mut first = lbn;
    let mut last = lbn;
    for sector in 0..z.spt {
        let q = Pbn { sector, ..p };
        if let Some(SectorUse::Block(b)) = pbn_to_lbn_direct(l, q) {
            if lbn_to_pbn_direct(l, b) == Some(q) && b.abs_diff(lbn) < u64::from(z.spt) {
                first = first.min(b);
                last = last.max(b);
            }
        }
    }
    Some((first, last + 1))
}

fn below(r: &mut Prng, n: u64) -> u64 {
    r.next_u64() % n
}

/// A small random drive: any sparing scheme and surface order, zones with gaps between
/// them, spares, slips (some beyond what the spares absorb), remapped defects, empty
/// front space and a block count below what the zones map.
fn random_geometry(r: &mut Prng) -> Geometry {
    let all = SparingScheme::ALL;
    let sparing = all[below(r, all.len() as u64) as usize];
    let surface_order = [
        SurfaceOrder::Normal,
        SurfaceOrder::ReverseOnOddCylinderOfZone,
        SurfaceOrder::ReverseOnOddCylinder,
    ][below(r, 3) as usize];
    let surfaces = 1 + below(r, 4) as u32;
    let mut zones = Vec::new();
    let mut cyl = below(r, 2) as u32;
    for _ in 0..1 + below(r, 4) {
        let cyls = 1 + below(r, 6) as u32;
        let spt = 3 + below(r, 30) as u32;
        let slots = if sparing == SparingScheme::Tracks {
            u64::from(cyls * surfaces)
        } else {
            u64::from(cyls * surfaces * spt)
        };
        let sectors = u64::from(cyls * surfaces * spt);
        let mut slips: Vec<u64> = (0..below(r, 12)).map(|_| below(r, slots)).collect();
        if below(r, 3) == 0 {
            // A cluster of adjacent slips, as real drives' defect lists have.
            let at = below(r, slots);
            slips.extend((at..slots).take(1 + below(r, 8) as usize));
        }
        let defects = if below(r, 3) == 0 {
            (0..1 + below(r, 3))
                .map(|_| (below(r, sectors), below(r, sectors)))
                .collect()
        } else {
            vec![]
        };
        zones.push(Zone {
            first_cylinder: cyl,
            last_cylinder: cyl + cyls - 1,
            sectors_per_track: spt,
            first_block_offset_sectors: below(r, 5) as f64,
            empty_front_sectors: below(r, 4) as u32,
            track_skew_sectors: below(r, 7) as f64,
            cylinder_skew_sectors: below(r, 9) as f64,
            spares: below(r, 2 * u64::from(spt)) as u32,
            slips,
            defects,
        });
        cyl += cyls + below(r, 3) as u32;
    }
    Geometry {
        surfaces,
        cylinders: cyl,
        surface_order,
        sparing,
        sparing_range_cylinders: 1 + below(r, 3) as u32,
        zones,
        block_count: None,
        g4: None,
    }
}

#[test]
fn runs_and_track_bounds_match_the_direct_mapping() {
    let seed = 0x5eed_1a70_u64;
    println!("seed {seed:#x}");
    let mut r = Prng::new(seed);
    let mut layouts = 0;
    for _ in 0..600 {
        let mut g = random_geometry(&mut r);
        let Ok(full) = Layout::new(&g) else {
            continue;
        };
        if full.blocks() > 1 && below(&mut r, 4) == 0 {
            g.block_count = Some(below(&mut r, full.blocks()));
        }
        let Ok(l) = Layout::new(&g) else {
            continue;
        };
        layouts += 1;
        assert_eq!(l.zone_by_cylinder.len(), l.cylinders() as usize);
        for cylinder in 0..l.cylinders() + 2 {
            let direct = zone_of_cylinder_direct(&l, cylinder).map(|z| z.first_cylinder);
            assert_eq!(
                l.zone_of_cylinder(cylinder).map(|z| z.first_cylinder),
                direct
            );
            let searched = l
                .zone_index_searched(cylinder)
                .map(|i| l.zones[i].first_cylinder);
            assert_eq!(searched, direct);
            for head in 0..l.surfaces() + 1 {
                for sector in 0..l.sectors_per_track(cylinder) + 1 {
                    let p = Pbn {
                        cylinder,
                        head,
                        sector,
                    };
                    assert_eq!(l.pbn_to_lbn(p), pbn_to_lbn_direct(&l, p), "{g:?} {p:?}");
                }
            }
        }
        for lbn in 0..l.blocks() + 2 {
            let direct = lbn_to_pbn_direct(&l, lbn);
            assert_eq!(l.lbn_to_pbn(lbn), direct, "{g:?} lbn {lbn}");
            assert_eq!(
                l.track_bounds(lbn),
                track_bounds_direct(&l, lbn),
                "{g:?} lbn {lbn}"
            );
            let Some((p, run)) = l.lbn_to_pbn_run(lbn) else {
                assert_eq!(direct, None);
                continue;
            };
            assert!(run >= 1);
            for i in 0..run {
                let q = Pbn {
                    sector: p.sector + i as u32,
                    ..p
                };
                assert_eq!(
                    lbn_to_pbn_direct(&l, lbn + i),
                    Some(q),
                    "{g:?} lbn {lbn}+{i}"
                );
            }
        }
    }
    assert!(layouts > 200, "only {layouts} random geometries were valid");
}

/// Two zones of two cylinders, two surfaces and ten sectors a track: 40 slots each, four
/// spares per sparing unit, one sector of empty space at the front.
fn two_zones(sparing: SparingScheme) -> Geometry {
    let zone = |first: u32, slips: Vec<u64>| Zone {
        first_cylinder: first,
        last_cylinder: first + 1,
        sectors_per_track: 10,
        first_block_offset_sectors: 0.0,
        empty_front_sectors: 1,
        track_skew_sectors: 0.0,
        cylinder_skew_sectors: 0.0,
        spares: 4,
        slips,
        defects: vec![],
    };
    Geometry {
        surfaces: 2,
        cylinders: 4,
        surface_order: SurfaceOrder::Normal,
        sparing,
        sparing_range_cylinders: 1,
        zones: vec![zone(0, vec![3, 5, 7, 9, 11, 13]), zone(2, vec![3])],
        block_count: None,
        g4: None,
    }
}

#[test]
fn a_zone_holds_its_slots_less_spares_the_slips_beyond_them_and_its_empty_front() {
    // One unit per zone: 40 - 4 spares - (6 - 4) slips - 1 empty, then 40 - 4 - 1.
    let l = Layout::new(&two_zones(SparingScheme::SectorsPerZone)).unwrap();
    assert_eq!(l.blocks(), 33 + 35);
    // A unit per cylinder (20 slots): the six slips all fall in zone 0's first unit.
    let l = Layout::new(&two_zones(SparingScheme::SectorsPerCylinder)).unwrap();
    assert_eq!(l.blocks(), (16 + 16 - 2 - 1) + (16 + 16 - 1));
    // No sparing: no spares, and every slip costs a block.
    let l = Layout::new(&two_zones(SparingScheme::None)).unwrap();
    assert_eq!(l.blocks(), (40 - 6 - 1) + (40 - 1 - 1));
    let mut g = two_zones(SparingScheme::SectorsPerZone);
    g.block_count = Some(50);
    assert_eq!(Layout::new(&g).unwrap().blocks(), 50);
}

#[test]
fn bad_geometries_are_refused_saying_what_is_wrong() {
    /// A change that spoils the geometry, and the error it must give.
    type Case = (fn(&mut Geometry), &'static str);
    let cases: [Case; 10] = [
        (
            |g| g.surfaces = 0,
            "surfaces and cylinders must be positive",
        ),
        (|g| g.zones.clear(), "at least one zone is required"),
        (
            |g| g.zones[1].last_cylinder = 1,
            "zone 1: the last cylinder 1 precedes the first 2",
        ),
        (
            |g| g.zones[1].first_cylinder = 1,
            "zone 1 overlaps or precedes the previous zone",
        ),
        (
            |g| g.zones[0].sectors_per_track = 0,
            "zone 0: sectors per track must be positive",
        ),
        (
            |g| g.zones[1].track_skew_sectors = f64::NAN,
            "zone 1: skews must be finite",
        ),
        (
            |g| {
                g.sparing = SparingScheme::SectorsPerRange;
                g.sparing_range_cylinders = 0;
            },
            "the sparing range must be at least one cylinder",
        ),
        (
            |g| g.zones[0].slips.push(40),
            "zone 0: a slip lies outside the zone's 40 slots",
        ),
        (
            |g| g.zones[1].defects.push((0, 40)),
            "zone 1: a defect lies outside the zone",
        ),
        (
            |g| g.block_count = Some(69),
            "the block count 69 exceeds the 68 blocks the zones map",
        ),
    ];
    for (spoil, want) in cases {
        let mut g = two_zones(SparingScheme::SectorsPerZone);
        spoil(&mut g);
        match Layout::new(&g) {
            Err(HddError::Geometry(message)) => assert_eq!(message, want),
            other => panic!("{want}: got {other:?}"),
        }
    }
}
