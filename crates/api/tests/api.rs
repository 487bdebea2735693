//! The library as a program calls it: typed options in, documents and columns out.

use storsim_api::{
    run_point, simulate, ApiError, CancelToken, DeviceChoice, PointResult, SimulateOptions,
    SweepPlan, WorkloadChoice,
};

fn options(device: &str, workload: &str) -> SimulateOptions {
    SimulateOptions::new(
        DeviceChoice::named(device),
        WorkloadChoice::Named(workload.into()),
    )
}

#[test]
fn simulate_returns_one_column_entry_per_request_and_the_series() {
    let o = options("flashsim-2009", "synthetic:rw=randrw,requests=500,bs=4k");
    let run = simulate(&o, true, None, &CancelToken::new()).expect("the run");
    let requests = run.requests.expect("asked for");
    assert_eq!(requests.id.len(), 500);
    assert_eq!(requests.finish_ns.len(), 500);
    assert!(
        requests.op.iter().all(|&op| op <= 1),
        "reads and writes only"
    );
    assert!(requests
        .finish_ns
        .iter()
        .zip(&requests.arrival_ns)
        .all(|(f, a)| f >= a));
    let doc: serde_json::Value = serde_json::from_str(&run.document).expect("JSON");
    assert_eq!(doc["run"]["requests_completed"], 500);
    // The document records the options' canonical command line.
    let line: Vec<String> = doc["command_line"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|w| w.as_str().expect("a word").to_string())
        .collect();
    assert_eq!(line, o.command_line());
    let series = run.series.expect("series on by default");
    let windows = doc["series"]["windows"].as_u64().expect("windows") as usize;
    assert!(series.iter().all(|(_, v)| v.len() == windows));
    let total: f64 = series
        .iter()
        .find(|(name, _)| name == "all.requests")
        .expect("all.requests")
        .1
        .iter()
        .sum();
    assert_eq!(total, 500.0);
}

#[test]
fn bad_input_is_an_input_error_with_the_commands_message() {
    let e = simulate(
        &options("no-such-device", "synthetic:rw=read"),
        false,
        None,
        &CancelToken::new(),
    )
    .expect_err("refused");
    assert!(matches!(e, ApiError::Input(_)), "{e:?}");
    assert!(e.message().contains("no-such-device"), "{e}");
    let mut o = options("flashsim-2009", "synthetic:rw=read,requests=10");
    o.set("replay", "closed").expect("a replay");
    let e = simulate(&o, false, None, &CancelToken::new()).expect_err("no depth");
    assert_eq!(
        e,
        ApiError::Input("--replay closed needs --iodepth N".into())
    );
}

#[test]
fn a_table_of_points_run_elsewhere_is_the_sweeps_own() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let spec = dir.path().join("spec.toml");
    let text = r#"
        devices = ["flashsim-2009"]
        workloads = ["synthetic:rw=randwrite,bs=4k,requests=300", "missing.trace"]
        seeds = [1, 2]
    "#;
    // The trace is there when the spec is checked, and gone when its points run.
    std::fs::write(dir.path().join("missing.trace"), "0 0 0 8 1\n").expect("the trace");
    let plan = SweepPlan::parse(text, &spec, None).expect("the plan");
    std::fs::remove_file(dir.path().join("missing.trace")).expect("removed");
    let (csv, results) = plan
        .run(&dir.path().join("out"), 2, &CancelToken::new())
        .expect("the sweep");
    assert_eq!(results.len(), 4);
    assert!(matches!(results[2], PointResult::Failed(_)), "{results:?}");
    // Each point run again one by one, as a cluster's worker runs it.
    let elsewhere: Vec<PointResult> = plan
        .points()
        .iter()
        .map(|p| {
            match run_point(
                &p.options,
                &p.command_line,
                &p.point_json,
                None,
                &CancelToken::new(),
            ) {
                Ok(Some(text)) => PointResult::Ran(text),
                Ok(None) => PointResult::Pending,
                Err(e) => PointResult::Failed(e.to_string()),
            }
        })
        .collect();
    assert_eq!(elsewhere, results);
    assert_eq!(plan.table_csv(&elsewhere, None).expect("the table"), csv);
}

#[test]
fn a_cancelled_token_stops_the_run() {
    let cancel = CancelToken::new();
    cancel.cancel();
    let o = options("flashsim-2009", "synthetic:rw=randread,requests=100000");
    let run = simulate(&o, true, None, &cancel).expect("the run");
    assert!(run.cancelled);
    assert!(run.requests.expect("asked for").id.len() < 100_000);
}
