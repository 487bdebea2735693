//! DiskSim parameter files: every file of DiskSim's validation suite in ../shared/disksim-valid
//! parses, the tree holds what the files say, and malformed files are refused with the file
//! and line named.

use std::path::{Path, PathBuf};
use storsim_config::disksim::{parse_file, Value};
use storsim_config::ConfigError;

fn valid_dir() -> Option<PathBuf> {
    storsim_testenv::shared("disksim-valid")
}

#[test]
fn every_parv_file_of_the_validation_suite_parses() {
    let Some(dir) = valid_dir() else { return };
    let mut parsed = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("parv") {
            continue;
        }
        let doc = parse_file(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            !doc.instantiations.is_empty(),
            "{} instantiates nothing",
            path.display()
        );
        assert!(
            !doc.topologies.is_empty(),
            "{} has no topology",
            path.display()
        );
        parsed += 1;
    }
    assert!(parsed >= 20, "only {parsed} .parv files found");
}

#[test]
fn cheetah_9lp_tree_holds_the_drive() {
    let Some(dir) = valid_dir() else { return };
    let doc = parse_file(&dir.join("cheetah9LP.parv")).unwrap();
    let disk = doc.instance("disk0").expect("disk0 is instantiated");
    assert_eq!(disk.type_name, "disksim_disk");
    assert_eq!(disk.name.as_deref(), Some("SEAGATE_ST39102LW_validate"));
    assert_eq!(disk.f64("Bulk sector transfer time").unwrap(), 0.105);
    assert_eq!(disk.f64("Read hit over. after read").unwrap(), 0.066);
    assert_eq!(disk.i64("Segment size (in blks)").unwrap(), 561);
    let scheduler = disk.block("Scheduler").unwrap();
    assert_eq!(scheduler.type_name, "disksim_ioqueue");
    assert_eq!(scheduler.i64("Scheduling policy").unwrap(), 1);

    let model = disk.block("Model").unwrap();
    assert_eq!(model.type_name, "dm_disk");
    assert!(model.file.ends_with("cheetah9LP.model"));
    assert_eq!(model.i64("Block count").unwrap(), 17_783_240);
    let layout = model.block("Layout Model").unwrap();
    let zones = layout.list("Zones").unwrap();
    assert_eq!(zones.len(), 11);
    let Value::Block(first) = &zones[0] else {
        panic!("zone is not a block")
    };
    assert_eq!(first.i64("Blocks per track").unwrap(), 254);
    assert_eq!(first.i64("Skew for track switch").unwrap(), 97);
    assert_eq!(first.list("slips").unwrap().len(), 34);
    assert_eq!(first.list("defects").unwrap().len(), 0);
    let mech = model.block("Mechanical Model").unwrap();
    assert_eq!(mech.word("Full seek curve").unwrap(), "cheetah9LP.seek");
    assert_eq!(mech.word("Seek type").unwrap(), "extracted");

    let bus = doc.instance("bus1").unwrap();
    assert_eq!(bus.type_name, "disksim_bus");
    assert_eq!(doc.topologies[0].children[0].name, "bus0");
    assert_eq!(
        doc.topologies[0].children[0].children[0].children[0].children[0].name,
        "disk0"
    );
}

#[test]
fn instantiated_ranges_cover_their_members() {
    let Some(dir) = valid_dir() else { return };
    let doc = parse_file(&dir.join("synthraid5.parv")).unwrap();
    let first = doc.instance("disk0").unwrap();
    let last = doc.instance("disk8").unwrap();
    assert_eq!(first.name, last.name);
    assert!(doc.instance("disk9").is_none());
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// A scratch directory per test, removed when the returned guard drops.
fn scratch(tag: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("storsim-disksim-{tag}-{}-", std::process::id()))
        .tempdir()
        .unwrap()
}

fn error_text(path: &Path) -> String {
    parse_file(path).expect_err("must be refused").to_string()
}

#[test]
fn malformed_files_name_file_and_line() {
    let tmp = scratch("bad");
    let dir = tmp.path();
    let p = write(dir, "noeq.parv", "disksim_disk D {\n  Block count 5,\n}\n");
    let e = error_text(&p);
    assert!(e.contains("noeq.parv:2") && e.contains("`=`"), "{e}");

    let p = write(dir, "open.parv", "disksim_disk D {\n  Zones = [ 1, 2,\n");
    let e = error_text(&p);
    assert!(
        e.contains("open.parv:2") && e.contains("end of the file"),
        "{e}"
    );

    let p = write(dir, "stray.parv", "} disksim_disk D { a = 1 }\n");
    let e = error_text(&p);
    assert!(e.contains("stray.parv:1") && e.contains("`}`"), "{e}");

    let p = write(dir, "missing.parv", "\n\nsource nothere.diskspecs\n");
    let e = error_text(&p);
    assert!(
        e.contains("missing.parv:3") && e.contains("nothere.diskspecs"),
        "{e}"
    );

    let p = write(dir, "loop.parv", "source loop.parv\n");
    let e = error_text(&p);
    assert!(e.contains("nests more than"), "{e}");

    let p = write(
        dir,
        "two.model",
        "dm_disk A { x = 1 }\ndm_disk B { x = 2 }\n",
    );
    let _ = p;
    let p = write(
        dir,
        "src.parv",
        "disksim_disk D {\n Model = source two.model\n}\n",
    );
    let e = error_text(&p);
    assert!(
        e.contains("src.parv:2") && e.contains("exactly one block"),
        "{e}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn typed_getters_refuse_the_wrong_kind_naming_the_key() {
    let tmp = scratch("kind");
    let dir = tmp.path();
    let p = write(
        dir,
        "kinds.parv",
        "disksim_disk D {\n  Name = hello,\n  Count = 2.5,\n  L = [ a .. b ]\n}\n",
    );
    let doc = parse_file(&p).unwrap();
    let d = doc.block_named("D").unwrap();
    assert_eq!(d.word("Name").unwrap(), "hello");
    let ConfigError::Invalid { file, key, message } = d.i64("Count").unwrap_err() else {
        panic!("wrong error kind")
    };
    assert!(file.ends_with("kinds.parv:3"), "{file}");
    assert_eq!(key, "Count");
    assert!(message.contains("integer"), "{message}");
    assert!(d.f64("Name").is_err());
    assert!(d.f64("Absent").unwrap_err().to_string().contains("missing"));
    assert_eq!(
        d.list("L").unwrap(),
        &[Value::Range("a".into(), "b".into())]
    );
    std::fs::remove_dir_all(dir).unwrap();
}
