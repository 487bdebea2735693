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
    let (mut first, mut second) = (0, 0);
    for line in text.lines().skip(1) {
        let fields: Vec<&str> = line.split(',').collect();
        let offset: u64 = fields[2].parse().unwrap();
        let len: u64 = fields[3].parse().unwrap();
        if fields[1] == "read" && len == 4096 && (1 << 30..(1 << 30) + (64 << 20)).contains(&offset)
        {
            first += 1;
        } else {
            assert!(
                (2 << 30..3 << 30).contains(&offset) && offset + len <= 3 << 30,
                "{line}"
            );
            second += 1;
        }
    }
    assert_eq!((first, second), (500, 5000));
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
