//! The library's validate, calibrate, import and replay-log as a program calls them: typed
//! options in, typed results out. (That their documents are the command's, byte for byte, is
//! checked where the command can be run: `crates/cli/tests/library.rs`.)

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use storsim_api::{
    AccessPattern, ApiError, CalibrateOptions, CalibrateTarget, Calibrator, FittedModel, Holdout,
    ImportDisksimOptions, Statistic, ValidateDisksimOptions, ValidateTraceOptions, WriteLog,
};

fn repo_file(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

#[test]
fn validate_trace_compares_each_measured_request_in_trace_order() {
    let options = ValidateTraceOptions {
        device: "stec-zeus".into(),
        overrides: Vec::new(),
        trace: repo_file("examples/oltp-sample.msr.csv"),
        trace_options: Default::default(),
        replay: None,
        iodepth: None,
        wrap: true,
    };
    let v = storsim_api::validate_trace(&options).expect("the validation");
    let detail = v.detail.as_ref().expect("validate trace's own facts");
    assert!(!v.simulated_ms.is_empty());
    assert_eq!(v.simulated_ms.len(), v.measured_ms.len());
    assert_eq!(detail.ops.len(), v.simulated_ms.len());
    assert!(
        detail.positions.windows(2).all(|w| w[0] < w[1]),
        "trace order"
    );
    assert_eq!(
        detail.requests_simulated,
        v.simulated_ms.len() as u64 + detail.requests_unmeasured
    );
    let doc = v.document(&["storsim".to_string()]);
    assert_eq!(doc["kind"], "validate");
    assert_eq!(doc["requests"], v.simulated_ms.len());

    // A closed loop of one is refused without its depth, with the command's message.
    let mut closed = options.clone();
    closed.replay = Some(storsim_api::ReplayChoice::Closed);
    let e = storsim_api::validate_trace(&closed)
        .err()
        .expect("no depth");
    assert_eq!(
        e,
        ApiError::Input("--replay closed needs --iodepth N".into())
    );
}

#[test]
fn validate_disksim_of_a_constant_device_gives_its_constant_time() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let device = dir.path().join("constant.toml");
    let pattern = "{ a_us = 5000, b_us_per_kib = 0 }";
    std::fs::write(
        &device,
        format!(
            "model = \"linear\"\ncapacity_bytes = 20_000_000_000\n[linear]\nsr = {pattern}\n\
             sw = {pattern}\nrr = {pattern}\nrw = {pattern}\n"
        ),
    )
    .expect("the device");
    let trace = dir.path().join("t.trace");
    let text: String = (1..=6u32)
        .map(|i| format!("R Miss {} 8 {i}.0 0.0\n", i * 1000))
        .collect();
    std::fs::write(&trace, text).expect("the trace");
    let v = storsim_api::validate_disksim(&ValidateDisksimOptions {
        device: device.to_str().expect("a path").into(),
        disksim_overrides: Vec::new(),
        trace,
    })
    .expect("the validation");
    assert!(
        v.detail.is_none(),
        "validate disksim's document is the older one"
    );
    assert_eq!(v.measured_ms, [0.001, 0.002, 0.003, 0.004, 0.005, 0.006]);
    assert!(v.simulated_ms.iter().all(|&ms| (ms - 5.0).abs() < 1e-9));
}

#[test]
fn import_and_replay_log_refuse_what_is_not_theirs_naming_the_file() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let not = dir.path().join("not-a-drive.parv");
    std::fs::write(&not, "disksim_disk D {\n  Block count 5,\n}\n").expect("the file");
    let e = storsim_api::import_disksim(&ImportDisksimOptions {
        parv: not.clone(),
        disksim_overrides: Vec::new(),
    })
    .expect_err("refused");
    assert!(
        e.is_bad_input() && e.message().contains("not-a-drive.parv"),
        "{e}"
    );
    let e = storsim_api::import_disksim(&ImportDisksimOptions {
        parv: not.clone(),
        disksim_overrides: vec!["no equals sign".into()],
    })
    .expect_err("refused");
    assert!(e.message().starts_with("--set "), "{e}");

    let e = WriteLog::open(&not).expect_err("not a log");
    assert!(
        e.is_bad_input() && e.message().contains("not-a-drive.parv"),
        "{e}"
    );
}

/// A small plan on a model, as the command's tests calibrate.
fn small_plan(device: &str, model: FittedModel) -> CalibrateOptions {
    CalibrateOptions {
        target: CalibrateTarget::Model {
            device: device.into(),
            precondition: None,
        },
        baseline: None,
        allow_writes: false,
        patterns: vec![
            AccessPattern::RandomWrite,
            AccessPattern::SequentialRead,
            AccessPattern::RandomRead,
            AccessPattern::SequentialWrite,
        ],
        sizes_bytes: (12..=19).map(|shift| 1u64 << shift).collect(),
        zones: 3,
        repeats: 2,
        requests_per_run: 4,
        warmup_requests: 4,
        step_run_requests: None,
        step_size_bytes: 4096,
        iodepths: Vec::new(),
        sweep_size_bytes: 4096,
        sweep_requests: 2000,
        seed: 1,
        model,
        statistic: Statistic::Median,
        holdout: Holdout::Alternate,
        erase_latency_us: 1500.0,
        queue_depth: 32,
    }
}

#[test]
fn calibrating_a_model_fits_a_device_file_that_reads_back() {
    let options = small_plan("stec-zeus", FittedModel::Linear);
    let mut calibrator = Calibrator::prepare(&options).expect("prepared");
    // The patterns are measured in the fit table's order, whatever the options' order.
    assert_eq!(
        calibrator.plan.patterns,
        storsim_calibrate::PATTERN_ORDER.to_vec()
    );
    let measured = storsim_calibrate::measure(
        &calibrator.plan,
        calibrator.target.as_mut(),
        &AtomicBool::new(false),
        &mut |_| {},
    );
    let calibration = calibrator.finish(measured, None);
    let command_line = ["storsim".to_string()];
    let out = Path::new("model.toml");
    let results = calibration.results(&command_line, out);
    let text = calibration
        .model_file(&results)
        .expect("a linear fit")
        .expect("a device file states it");
    assert!(text.starts_with("# Written by storsim calibrate"), "{text}");
    storsim_config::parse_device_toml(&text, "model.toml").expect("the model reads back");

    // The options the command refuses, the library refuses with the command's messages.
    let mut bad = options.clone();
    bad.queue_depth = 0;
    let e = Calibrator::prepare(&bad).err().expect("refused");
    assert!(e.message().starts_with("--queue-depth must be 1..="), "{e}");
    let mut bad = options;
    bad.model = FittedModel::Step;
    bad.step_run_requests = Some(1);
    let e = Calibrator::prepare(&bad).err().expect("refused");
    assert_eq!(
        e.message(),
        "--model step needs --step-run of at least 2 requests"
    );
}
