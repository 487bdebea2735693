//! The command and the library give the same documents: each subcommand that `storsim-api`
//! runs as a typed function (validate, import, replay-log) is run both ways here, and the
//! library's document, laid out by the output layer with the command's `command_line`, must
//! be the command's file byte for byte.

mod common;

use common::{repo_root, stderr, storsim, temp_dir};
use std::path::Path;
use storsim_api::{
    CrashMode, ImportDisksimOptions, ReplayLogOptions, ReplayTo, ValidateDisksimOptions,
    ValidateTraceOptions, WriteLog,
};

/// The `command_line` a document of the command records.
fn command_line(doc_text: &str) -> Vec<String> {
    let doc: serde_json::Value = serde_json::from_str(doc_text).expect("the command's JSON");
    doc["command_line"]
        .as_array()
        .expect("a command line")
        .iter()
        .map(|w| w.as_str().expect("a word").to_string())
        .collect()
}

#[test]
fn validate_trace_of_the_bundled_msr_sample_is_the_commands_document() {
    let tmp = temp_dir("library-validate");
    let json = tmp.path().join("v.json");
    let trace = "examples/oltp-sample.msr.csv";
    let o = storsim(&[
        "validate",
        "trace",
        "--device",
        "stec-zeus",
        "--set",
        "linear.servers=2",
        "--trace",
        trace,
        "--wrap",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let written = std::fs::read_to_string(&json).unwrap();

    let options = ValidateTraceOptions {
        device: "stec-zeus".into(),
        overrides: vec!["linear.servers=2".into()],
        trace: repo_root().join(trace),
        trace_options: Default::default(),
        replay: None,
        iodepth: None,
        wrap: true,
    };
    let validation = storsim_api::validate_trace(&options).expect("the validation");
    // The library was given the trace's absolute path, the command a relative one; the
    // document names the trace as it was given.
    let mut doc = validation.document(&command_line(&written));
    let given: serde_json::Value = serde_json::from_str(&written).unwrap();
    assert_eq!(
        doc["trace"].as_str().map(Path::new),
        Some(repo_root().join(trace).as_path())
    );
    doc["trace"] = given["trace"].clone();
    assert_eq!(storsim_output::json::text(&doc), written);
    assert_eq!(
        validation.simulated_ms.len(),
        validation.measured_ms.len(),
        "every compared request has both times"
    );
    assert!(!validation.simulated_ms.is_empty());
}

#[test]
fn the_librarys_errors_are_the_commands_messages() {
    let o = storsim(&[
        "validate",
        "disksim",
        "--device",
        "stec-zeus",
        "--set",
        "disk0:Enable caching in buffer=0",
        "--trace",
        "examples/oltp-sample.msr.csv",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = storsim_api::validate_disksim(&ValidateDisksimOptions {
        device: "stec-zeus".into(),
        disksim_overrides: vec!["disk0:Enable caching in buffer=0".into()],
        trace: "examples/oltp-sample.msr.csv".into(),
    })
    .err()
    .expect("a storsim device takes no DiskSim overrides");
    assert!(e.is_bad_input());
    assert_eq!(stderr(&o).trim(), format!("storsim: error: {e}"));

    let o = storsim(&["import", "disksim", "nothere.parv", "-o", "-"]);
    assert_eq!(o.status.code(), Some(2));
    let e = storsim_api::import_disksim(&ImportDisksimOptions {
        parv: "nothere.parv".into(),
        disksim_overrides: Vec::new(),
    })
    .expect_err("no such file");
    assert_eq!(stderr(&o).trim(), format!("storsim: error: {e}"));
}

#[test]
fn import_disksim_of_a_validated_drive_is_the_commands_device_file() {
    let Some(valid) = storsim_testenv::shared("disksim-valid") else {
        return;
    };
    let parv = valid.join("hp_c2490a.parv");
    let set = "disk0:Enable caching in buffer=0";
    let o = storsim(&[
        "import",
        "disksim",
        parv.to_str().unwrap(),
        "--set",
        set,
        "-o",
        "-",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let imported = storsim_api::import_disksim(&ImportDisksimOptions {
        parv: parv.clone(),
        disksim_overrides: vec![set.into()],
    })
    .expect("the import");
    assert_eq!(imported.device_toml.as_bytes(), o.stdout);
    assert_eq!(imported.overrides.len(), 1);
    // The device file reads back as the device it states.
    storsim_config::parse_device_toml(&imported.device_toml, "hp_c2490a").expect("reads back");

    // And validating the .parv through the library is the command's document.
    let tmp = temp_dir("library-import");
    let json = tmp.path().join("v.json");
    let trace = valid.join("hp_c2490a.trace");
    let o = storsim(&[
        "validate",
        "disksim",
        "--device",
        parv.to_str().unwrap(),
        "--set",
        set,
        "--trace",
        trace.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let written = std::fs::read_to_string(&json).unwrap();
    let validation = storsim_api::validate_disksim(&ValidateDisksimOptions {
        device: parv.to_str().unwrap().into(),
        disksim_overrides: vec![set.into()],
        trace,
    })
    .expect("the validation");
    assert_eq!(
        storsim_output::json::text(&validation.document(&command_line(&written))),
        written
    );
}

/// A write log of eight 4 KiB writes on a 1 MiB disk, a flush after the fourth.
fn write_log(path: &Path) {
    use storsim_emulate::power::write_log::WriteLogWriter;
    let mut log = WriteLogWriter::create(path, 1 << 20, 64 << 10).expect("the log");
    for i in 0..8u64 {
        let data = vec![(i + 1) as u8; 4096];
        log.write(i * 8192, &data, false).expect("a write");
        if i == 3 {
            log.flush().expect("a flush");
        }
    }
    log.finish().expect("the log's end");
}

#[test]
fn replay_log_is_the_commands_image_and_document() {
    let tmp = temp_dir("library-replay");
    let log = tmp.path().join("w.log");
    write_log(&log);
    let (image, json) = (tmp.path().join("a.img"), tmp.path().join("a.json"));
    let o = storsim(&[
        "replay-log",
        log.to_str().unwrap(),
        "--to-write",
        "6",
        "--torn",
        "sector",
        "--seed",
        "7",
        "--out",
        image.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let written = std::fs::read_to_string(&json).unwrap();

    let opened = WriteLog::open(&log).expect("the log");
    assert_eq!(opened.writes, 8);
    assert_eq!(opened.flushes_after_writes, [4]);
    let listed = storsim(&["replay-log", log.to_str().unwrap(), "--list"]);
    assert_eq!(
        String::from_utf8_lossy(&listed.stdout),
        storsim_output::replay_log_points_text(opened.writes, &opened.flushes_after_writes)
    );

    let mine = tmp.path().join("b.img");
    let replayed = opened
        .replay(
            &ReplayLogOptions {
                to: ReplayTo::Write(6),
                mode: CrashMode::Torn {
                    atomicity: storsim_api::Atomicity::Sector,
                    seed: 7,
                },
            },
            &mine,
        )
        .expect("the replay");
    assert_eq!(replayed.writes, 6);
    // Writes 5 and 6 came after the flush, so the crash had them to tear.
    assert_eq!(replayed.crash.volatile.len(), 2);
    assert_eq!(
        std::fs::read(&image).unwrap(),
        std::fs::read(&mine).unwrap()
    );
    let doc = replayed.document(&command_line(&written));
    assert_eq!(doc["log"], log.display().to_string());
    assert_eq!(storsim_output::json::text(&doc), written);
}
