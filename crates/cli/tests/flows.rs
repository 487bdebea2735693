//! Workloads of several flows through the command line: the same bytes every time, however
//! the alone runs are spread over threads and however traces are parsed; one flow through a
//! flow file is the plain workload; LBA partitions; refused flow files naming the file, the
//! line and the key.

mod common;

use common::{stderr, storsim, temp_dir};
use serde_json::Value;
use std::path::Path;

/// Runs `simulate --quiet ARGS --json OUT` and returns the document's text.
fn simulate_text(dir: &Path, name: &str, args: &[&str]) -> String {
    let out = dir.join(format!("{name}.json"));
    let mut all = vec!["simulate", "--quiet"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--json", out.to_str().unwrap()]);
    let o = storsim(&all);
    assert!(o.status.success(), "{name}: {}", stderr(&o));
    std::fs::read_to_string(&out).unwrap()
}

/// A flow file of a trace and two generators in `dir`, the trace's path relative to the file.
fn three_flows(dir: &Path) -> String {
    let trace = common::repo_root().join("examples/oltp-sample.msr.csv");
    std::fs::copy(trace, dir.join("oltp.csv")).unwrap();
    let file = dir.join("flows.toml");
    std::fs::write(
        &file,
        "[[flow]]\n\
         name = \"oltp\"\n\
         workload = \"oltp.csv\"\n\
         lba_size = \"50%\"\n\
         class = \"high\"\n\
         \n\
         [[flow]]\n\
         name = \"reads\"\n\
         workload = \"synthetic:rw=randread,bs=4k,iodepth=4,requests=3000\"\n\
         start = \"2ms\"\n\
         lba_offset = \"50%\"\n\
         \n\
         [[flow]]\n\
         name = \"writes\"\n\
         workload = \"synthetic:rw=randwrite,bs=16k,requests=2000\"\n\
         iodepth = 2\n\
         stop = \"40ms\"\n\
         lba_offset = \"50%\"\n",
    )
    .unwrap();
    file.display().to_string()
}

#[test]
fn several_flows_give_the_same_bytes_every_time() {
    let dir = temp_dir("flows-determinism");
    let file = three_flows(dir.path());
    let args = ["--device", "tlc-nvme", "--workload", &file, "--fairness"];
    let first = simulate_text(dir.path(), "a", &args);
    let again = simulate_text(dir.path(), "b", &args);
    assert_eq!(first, again);
    let one_job = simulate_text(dir.path(), "c", &[&args[..], &["--jobs", "1"]].concat());
    let one_thread = simulate_text(
        dir.path(),
        "d",
        &[&args[..], &["--parse-thread", "off"]].concat(),
    );
    // The command line differs; everything else must not.
    let without_command_line = |text: &str| {
        let mut v: Value = serde_json::from_str(text).unwrap();
        v["command_line"] = Value::Null;
        v
    };
    assert_eq!(without_command_line(&first), without_command_line(&one_job));
    assert_eq!(
        without_command_line(&first),
        without_command_line(&one_thread)
    );
    let doc: Value = serde_json::from_str(&first).unwrap();
    let flows = doc["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 3);
    // The flows' requests make up the run's, and every flow has a slowdown.
    let total: u64 = flows
        .iter()
        .map(|f| f["summary"]["requests"].as_u64().unwrap())
        .sum();
    assert_eq!(total, doc["summary"]["requests"].as_u64().unwrap());
    assert_eq!(flows[1]["summary"]["requests"], 3000);
    for f in flows {
        assert!(f["slowdown"].as_f64().unwrap() > 0.0, "{f}");
    }
    let fairness = doc["fairness"].as_f64().unwrap();
    assert!(fairness > 0.0 && fairness <= 1.0, "{fairness}");
}

#[test]
fn one_flow_through_a_flow_file_is_the_plain_workload() {
    let dir = temp_dir("flows-single");
    let spec = "synthetic:rw=randrw,rwmixread=70,bs=8k,iodepth=8,requests=4000";
    let file = dir.path().join("one.toml");
    std::fs::write(&file, format!("[[flow]]\nworkload = \"{spec}\"\n")).unwrap();
    let plain: Value = serde_json::from_str(&simulate_text(
        dir.path(),
        "plain",
        &["--device", "tlc-nvme", "--workload", spec],
    ))
    .unwrap();
    let flowed: Value = serde_json::from_str(&simulate_text(
        dir.path(),
        "flowed",
        &["--device", "tlc-nvme", "--workload", file.to_str().unwrap()],
    ))
    .unwrap();
    for key in ["summary", "device", "run", "series"] {
        assert_eq!(plain[key], flowed[key], "{key}");
    }
    assert_eq!(flowed["flows"][0]["summary"], plain["summary"]);
    // A plain workload's document has no flows.
    assert!(plain.get("flows").is_none() && plain.get("fairness").is_none());
}

#[test]
fn a_flows_addresses_stay_in_its_lba_partition() {
    let dir = temp_dir("flows-lba");
    let csv = dir.path().join("requests.csv");
    let o = storsim(&[
        "simulate",
        "--quiet",
        "--device",
        "stec-zeus",
        "--flow",
        "synthetic:rw=randread,bs=4k,iodepth=2,requests=500,lba_offset=1g,lba_size=64m",
        "--flow",
        "examples/oltp-sample.msr.csv,lba_offset=2g,lba_size=1g",
        "--requests-csv",
        csv.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert!(lines.next().unwrap().ends_with(",latency_ns,flow"));
    let mut per_flow = [0; 2];
    for line in lines {
        let fields: Vec<&str> = line.split(',').collect();
        let offset: u64 = fields[2].parse().unwrap();
        let len: u64 = fields[3].parse().unwrap();
        let flow: usize = fields[10].parse().unwrap();
        let partition = [1 << 30..(1 << 30) + (64 << 20), 2 << 30..3 << 30][flow].clone();
        assert!(
            partition.contains(&offset) && offset + len <= partition.end,
            "{line}"
        );
        per_flow[flow] += 1;
    }
    assert_eq!(per_flow, [500, 5000]);
}

#[test]
fn the_requests_csv_names_each_requests_flow_when_there_are_several() {
    let dir = temp_dir("flows-csv");
    let (csv, json) = (dir.path().join("r.csv"), dir.path().join("r.json"));
    let o = storsim(&[
        "simulate",
        "--quiet",
        "--device",
        "tlc-nvme",
        "--flow",
        "synthetic:rw=randread,bs=4k,iodepth=4,requests=700,name=reader",
        "--flow",
        "synthetic:rw=randwrite,bs=16k,iodepth=2,requests=300,name=writer,lba_offset=50%",
        "--requests-csv",
        csv.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(header.last(), Some(&"flow"), "{header:?}");
    let mut per_flow = [0u64; 2];
    for line in lines {
        let fields: Vec<&str> = line.split(',').collect();
        assert_eq!(fields.len(), header.len(), "{line}");
        let flow: usize = fields[header.len() - 1].parse().unwrap();
        // The flows are told apart by what they do, too: the reader reads 4 KiB, the writer
        // writes 16 KiB.
        let expected = [("read", "4096"), ("write", "16384")][flow];
        assert_eq!((fields[1], fields[3]), expected, "{line}");
        per_flow[flow] += 1;
    }
    // As many lines of each flow as the document counts of it, the flow's index being the
    // document's `flows[].index`.
    for (i, flow) in doc["flows"].as_array().unwrap().iter().enumerate() {
        assert_eq!(flow["index"], i);
        assert_eq!(
            Some(per_flow[i]),
            flow["summary"]["requests"].as_u64(),
            "flow {i}"
        );
    }
    assert_eq!(per_flow, [700, 300]);
}

#[test]
fn refused_flow_files_and_flow_arguments_name_what_is_wrong() {
    let dir = temp_dir("flows-refused");
    let file = dir.path().join("bad.toml");
    std::fs::write(
        &file,
        "[[flow]]\nworkload = \"synthetic:rw=randread,requests=10\"\npriority = \"high\"\n",
    )
    .unwrap();
    let path = file.to_str().unwrap();
    let cases: [(&[&str], &str); 5] = [
        (
            &["--flow", "synthetic:rw=randread,requests=10,channels=1"],
            "flow flow0: a resource partition or a data cache mode needs an SSD",
        ),
        (&["--workload", path], "line 3: unknown key `priority`"),
        (
            &["--flow", "synthetic:rw=randread,requests=10,class=top"],
            "class=top",
        ),
        (
            &[
                "--workload",
                "synthetic:rw=randread,requests=10",
                "--fairness",
            ],
            "--fairness compares flows",
        ),
        (
            &[
                "--flow",
                "synthetic:rw=randread,requests=10,lba_offset=120%",
            ],
            "lba_offset=120%",
        ),
    ];
    for (args, wanted) in cases {
        let o = storsim(&[&["simulate", "--device", "stec-zeus"], args].concat());
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains(wanted), "{args:?}: {e}");
        if args[1] == path {
            assert!(e.contains(path), "the file is named: {e}");
        }
    }
}

#[test]
fn head_time_scale_and_repeat_shape_a_trace_flow() {
    let dir = temp_dir("flows-passes");
    let dir = dir.path();
    // Four requests of MQSim's layout, their times in microseconds (as `Time_Unit` may say).
    let trace = dir.join("us.trace");
    std::fs::write(&trace, "0 0 0 8 1\n10 0 8 8 1\n25 0 16 8 1\n40 0 24 8 1\n").unwrap();
    let csv = dir.join("r.csv");
    let flow = format!("{},head=3,time_scale=1000,repeat=2", trace.display());
    let o = storsim(&[
        "simulate",
        "--quiet",
        "--device",
        "bench2g",
        "--format",
        "mqsim",
        "--flow",
        &flow,
        "--requests-csv",
        csv.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let arrival = header.iter().position(|h| *h == "arrival_ns").unwrap();
    let mut arrivals: Vec<u64> = lines
        .map(|l| l.split(',').nth(arrival).unwrap().parse().unwrap())
        .collect();
    arrivals.sort_unstable();
    // The first three requests, in µs read as ns × 1000, then again from where the last of
    // them arrived (25 µs).
    assert_eq!(arrivals, [0, 10_000, 25_000, 25_000, 35_000, 50_000]);
}
