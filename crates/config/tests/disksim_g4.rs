//! DiskSim's G4 layout on the drive DiskSim 4.0 ships extracted by DIXtrac, the Seagate
//! Cheetah 15K.5: `import disksim` reads its `-skews.layout`, and the layout it builds puts
//! every block where DIXtrac found it on the real drive (`layout.mappings.gz`, DIXtrac's
//! track-by-track dump of the LBN -> cylinder, head, sector mapping, and its defect list).
//!
//! The data lives outside the repository (../shared/disksim-valid/cheetah15k5); without it
//! the tests say so and pass.

use flate2::read::GzDecoder;
use std::io::{BufRead, BufReader};
use storsim_config::disksim::import::import_parv;
use storsim_hdd::layout::{Layout, Pbn, SectorUse};
use storsim_hdd::SeekCurve;

const DIR: &str = "disksim-valid/cheetah15k5";

fn cheetah() -> Option<storsim_config::disksim::import::ImportedDrive> {
    let dir = storsim_testenv::shared(DIR)?;
    Some(import_parv(&dir.join("Seagate-Cheetah15k5.parv")).expect("the Cheetah 15K.5 imports"))
}

/// `lbn L --> cyl C, head H, sect S, count N` or `Defect at cyl C, head H, sect S`: the
/// numbers of a dump line, in order.
fn numbers(line: &str) -> Vec<u64> {
    line.split(|c: char| !c.is_ascii_digit())
        .filter(|w| !w.is_empty())
        .map(|w| w.parse().expect("digits"))
        .collect()
}

#[test]
fn every_block_of_the_dump_is_where_dixtrac_found_it() {
    let Some(drive) = cheetah() else {
        return;
    };
    let g = &drive.params.geometry;
    assert_eq!(g.surfaces, 4);
    let layout = Layout::new(g).expect("the G4 layout builds");
    assert_eq!(layout.blocks(), 286_749_487);
    let path = storsim_testenv::shared(DIR)
        .unwrap()
        .join("layout.mappings.gz");
    let file = std::fs::File::open(&path).expect("the dump opens");
    let mut next_lbn = 0u64;
    let (mut runs, mut defects, mut defects_on_tracks) = (0u64, 0u64, 0u64);
    for line in BufReader::new(GzDecoder::new(file)).lines() {
        let line = line.expect("the dump reads");
        if line.starts_with("lbn ") {
            let n = numbers(&line);
            let [lbn, cylinder, head, sector, count] = n[..] else {
                panic!("`{line}`: five numbers expected");
            };
            // The dump covers the blocks in order, without gaps.
            assert_eq!(lbn, next_lbn, "`{line}`");
            next_lbn = lbn + count;
            let want = Pbn {
                cylinder: cylinder as u32,
                head: head as u32,
                sector: sector as u32,
            };
            // DIXtrac's `maxlbn` is the drive's highest block, where DiskSim's model states
            // that number as its block count: DiskSim's drive ends one block short of the
            // dump, and the layout maps nothing from there on.
            let mapped = count.min(layout.blocks() - lbn);
            if mapped < count {
                assert_eq!(layout.lbn_to_pbn_run(lbn + mapped), None, "`{line}`");
            }
            // Every block of the line, run by run: block `lbn + i` is sector `sector + i`.
            let mut done = 0;
            while done < mapped {
                let (p, run) = layout
                    .lbn_to_pbn_run(lbn + done)
                    .unwrap_or_else(|| panic!("`{line}`: block {} unmapped", lbn + done));
                let at = Pbn {
                    sector: want.sector + done as u32,
                    ..want
                };
                assert_eq!(p, at, "`{line}`: block {}", lbn + done);
                // A run that went on past the line would put the next line's first block on
                // this track, where DIXtrac did not find it.
                assert!(
                    run <= mapped - done,
                    "`{line}`: the run of {run} goes past the line"
                );
                done += run;
            }
            assert_eq!(
                layout.pbn_to_lbn(want),
                Some(SectorUse::Block(lbn)),
                "`{line}`: back from the sector"
            );
            runs += 1;
        } else if line.starts_with("Defect at ") {
            let n = numbers(&line);
            let [cylinder, head, sector] = n[..] else {
                panic!("`{line}`: three numbers expected");
            };
            let p = Pbn {
                cylinder: cylinder as u32,
                head: head as u32,
                sector: sector as u32,
            };
            // A defect holds no block; on a track the layout maps, it is a slipped sector.
            match layout.pbn_to_lbn(p) {
                Some(SectorUse::Block(b)) => panic!("`{line}` holds block {b}"),
                Some(_) => defects_on_tracks += 1,
                None => {}
            }
            defects += 1;
        }
    }
    assert_eq!(
        next_lbn,
        layout.blocks() + 1,
        "the dump covers the whole drive"
    );
    assert_eq!(runs, 291_604);
    assert_eq!(defects, 3_592);
    // Most defects lie on the mapped tracks (the rest on cylinders past the last block).
    assert!(
        defects_on_tracks > 3_000,
        "{defects_on_tracks} defects on mapped tracks"
    );
}

#[test]
fn the_cheetah_imports_its_extracted_seek_curve_and_speed() {
    let Some(drive) = cheetah() else {
        return;
    };
    let m = &drive.params.mechanics;
    assert_eq!(m.rpm, 15_020.0);
    assert_eq!(m.head_switch_ns, 1_000);
    let SeekCurve::Extracted { points } = &m.seek else {
        panic!("an extracted seek curve, not {:?}", m.seek);
    };
    // The .seeks file's first line: `1, 0.552500, 0.002540` (distance, ms, std-dev).
    assert_eq!(points[0], (1, 552_500));
    assert!(points.windows(2).all(|w| w[0].0 < w[1].0));
}

#[test]
fn a_sector_starts_at_its_path_s_offsets_and_repetition_angles() {
    let Some(drive) = cheetah() else {
        return;
    };
    let layout = Layout::new(&drive.params.geometry).expect("the G4 layout builds");
    let angle = |lbn: u64| layout.sector_angle(layout.lbn_to_pbn(lbn).unwrap());
    // The layout's first zone: index 0's entries repeat a 1200-sector track pattern, the
    // first from cylinder 0 outwards on head 0 (offset 0, 0.141669 of a turn a cylinder),
    // the second back from cylinder 64 on head 1 (offset 0.2562).
    assert_eq!(angle(0), 0.0);
    assert!((angle(1_200) - 0.141669).abs() < 1e-12);
    assert!((angle(2 * 1_200) - 2.0 * 0.141669).abs() < 1e-12);
    assert!((angle(78_000) - 0.2562).abs() < 1e-12);
    // Sector 5 of a 1200-sector track starts 5/1200 of a turn after the track's first.
    assert!((angle(78_005) - (0.2562 + 5.0 / 1200.0)).abs() < 1e-12);
    let p = layout.lbn_to_pbn(78_000).unwrap();
    assert_eq!(layout.sectors_on_track(p), 1_200);
}

/// DiskSim validated this drive with its cache, fast writes and read-ahead off on its command
/// line (`disk0 "Enable caching in buffer" 0` ...); the same overrides reach the import.
#[test]
fn dixtrac_s_validation_overrides_turn_the_cache_off() {
    use storsim_config::disksim::import::{import_parv_with, Override};
    use storsim_hdd::{ReadAhead, WriteBack};
    let Some(dir) = storsim_testenv::shared(DIR) else {
        return;
    };
    let parv = dir.join("Seagate-Cheetah15k5.parv");
    let overrides: Vec<Override> = [
        "disk0:Enable caching in buffer=0",
        "disk0:Fast write level=0",
        "disk0: Buffer  continuous read =0",
    ]
    .iter()
    .map(|s| s.parse().unwrap())
    .collect();
    let stock = import_parv_with(&parv, &[]).unwrap().params.cache;
    assert!(stock.enabled);
    assert_eq!(stock.write_back, WriteBack::Full);
    assert_eq!(stock.read_ahead, ReadAhead::DecTracks);
    let off = import_parv_with(&parv, &overrides).unwrap().params.cache;
    assert!(!off.enabled);
    assert_eq!(off.write_back, WriteBack::None);
    assert_eq!(off.read_ahead, ReadAhead::None);
    // A parameter of a nested block: the mechanics' head switch time, in ms.
    let o: Override = "disk0:Head switch time=0.002".parse().unwrap();
    let m = import_parv_with(&parv, &[o]).unwrap().params.mechanics;
    assert_eq!(m.head_switch_ns, 2_000);

    for (bad, want) in [
        (
            "disk9:Fast write level=0",
            "no component `disk9` is instantiated",
        ),
        (
            "disk0:Fast writes level=0",
            "disk0 (SEAGATE_ST3146855FC_3LN02D4A) has no parameter `Fast writes level`",
        ),
        (
            "disk0:Fast write level=7",
            "7 is not a fast-write level (0, 1 or 2)",
        ),
    ] {
        let o: Override = bad.parse().unwrap();
        let e = import_parv_with(&parv, &[o]).unwrap_err().to_string();
        assert!(e.contains(want), "{bad}: {e}");
    }
    let e = "disk0 Fast write level 0".parse::<Override>().unwrap_err();
    assert!(e.contains("COMPONENT:PARAMETER=VALUE"), "{e}");
}

/// A malformed G4 layout is an error naming the file, the key and what is wrong, never a
/// panic: the Cheetah's files with a layout of a few entries written here.
#[test]
fn malformed_g4_layouts_are_refused_naming_the_key() {
    let Some(dir) = storsim_testenv::shared(DIR) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    for f in [
        "Seagate-Cheetah15k5.parv",
        "Seagate-Cheetah15k5.diskspecs",
        "Seagate-Cheetah15k5.model",
        "Seagate-Cheetah15k5.seeks",
        "statdefs",
    ] {
        std::fs::copy(dir.join(f), tmp.path().join(f)).unwrap();
    }
    let parv = tmp.path().join("Seagate-Cheetah15k5.parv");
    let layout = tmp.path().join("Seagate-Cheetah15k5-skews.layout");
    let cases = [
        (
            "TP = [ 0, 9, 10, 4 ], IDX = [ [ 0, 0, 0.0, 10, 1, 0.1, 10, 1, TRACK, 0, 0 ] ]",
            "holds 4 values, not a multiple of 3",
        ),
        (
            "TP = [ 0, 9, 10 ], IDX = [ [ 0, 0, 0.0, 10, 1, 0.1, 10, 1, TRAK, 0, 0 ] ]",
            "index 0: entry 0: value 8 must be TRACK or IDX",
        ),
        (
            "TP = [ 0, 9, 10 ], IDX = [ [ 0, 0, 0.0, 10, 1, 0.1, 10, 1, IDX, 0 ] ]",
            "g4 layout: index 0 entry 0: child index 0 must come before it",
        ),
        (
            "TP = [ 0, 9, 10 ], IDX = [ [ 0, 0, 0.0, 10, 1, 0.1, 10, 1, TRACK, 3, 0 ] ]",
            "g4 layout: index 0 entry 0: track pattern 3 does not exist",
        ),
        (
            "TP = [ 0, 9, 10 ], IDX = [ [ 0, -1, 0.0, 10, 1, 0.1, 10, 1, TRACK, 0, 0 ] ]",
            "index 0: entry 0: value 1 is out of range",
        ),
    ];
    for (body, want) in cases {
        std::fs::write(&layout, format!("dm_layout_g4 {{\n{body}\n}}\n")).unwrap();
        let e = import_parv(&parv).unwrap_err().to_string();
        assert!(e.contains(want), "{body}: {e}");
        assert!(e.contains(".layout") || e.contains(".model"), "{e}");
    }
}

/// A G4 drive states its blocks in the tree: zones beside it, or no block count, are refused.
#[test]
fn a_g4_geometry_refuses_zones_and_needs_a_block_count() {
    let Some(drive) = cheetah() else {
        return;
    };
    let mut g = drive.params.geometry.clone();
    g.block_count = None;
    let e = Layout::new(&g).unwrap_err().to_string();
    assert!(e.contains("a g4 layout needs the block count"), "{e}");
    let mut g = drive.params.geometry.clone();
    g.zones.push(storsim_hdd::Zone {
        first_cylinder: 0,
        last_cylinder: 0,
        sectors_per_track: 10,
        first_block_offset_sectors: 0.0,
        empty_front_sectors: 0,
        track_skew_sectors: 0.0,
        cylinder_skew_sectors: 0.0,
        spares: 0,
        slips: vec![],
        defects: vec![],
    });
    let e = Layout::new(&g).unwrap_err().to_string();
    assert!(e.contains("the zones must be empty"), "{e}");
}

#[test]
fn the_drives_scheduling_policy_8_is_shortest_positioning_time_first() {
    use storsim_config::disksim::import::{import_parv_with, Override};
    use storsim_hdd::SchedulerKind;
    let Some(dir) = storsim_testenv::shared(DIR) else {
        return;
    };
    let parv = dir.join("Seagate-Cheetah15k5.parv");
    // DiskSim 4.0 numbers its policies in disksim_ioqueue.h: 8 is SPTF_OPT, the Cheetah's
    // own; 4 and 7 are SSTF by block and by cylinder, 1 FCFS.
    assert_eq!(
        import_parv_with(&parv, &[]).unwrap().params.scheduler,
        SchedulerKind::Sptf
    );
    for (policy, kind) in [
        (1, SchedulerKind::Fcfs),
        (3, SchedulerKind::CLook),
        (4, SchedulerKind::Sstf),
        (7, SchedulerKind::Sstf),
        (8, SchedulerKind::Sptf),
        (9, SchedulerKind::Sptf),
    ] {
        let o: Override = format!("disk0:Scheduling policy={policy}").parse().unwrap();
        let imported = import_parv_with(&parv, &[o]).unwrap().params.scheduler;
        assert_eq!(imported, kind, "policy {policy}");
    }
}
