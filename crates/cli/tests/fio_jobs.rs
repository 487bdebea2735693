//! fio job files through `storsim simulate --workload`: a job per flow and clone, a stonewall
//! making the jobs after it wait for the jobs before it, the one note naming the options
//! without effect, and refused job files naming the file, the line and the option.

mod common;

use common::{stderr, storsim, temp_dir};
use serde_json::Value;
use std::path::Path;

const JOB_FILE: &str = "\
; two writers, then a reader once they have finished
[global]
ioengine=libaio
direct=1
bs=4k
size=8m

[writer]
rw=randwrite
iodepth=16
numjobs=2
offset_increment=8m

[reader]
stonewall
rw=read
bs=128k
filename=/dev/nvme0n1
";

/// The requests CSV's rows as (flow, op, arrival_ns, finish_ns).
fn requests(csv: &Path) -> Vec<(u64, String, u64, u64)> {
    let text = std::fs::read_to_string(csv).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (flow, op, arrival, finish) = (
        column("flow"),
        column("op"),
        column("arrival_ns"),
        column("finish_ns"),
    );
    lines
        .map(|line| {
            let fields: Vec<&str> = line.split(',').collect();
            (
                fields[flow].parse().unwrap(),
                fields[op].to_string(),
                fields[arrival].parse().unwrap(),
                fields[finish].parse().unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_job_file_runs_its_jobs_as_flows_and_a_stonewall_waits_for_the_jobs_before_it() {
    let dir = temp_dir("fio-job-flows");
    let job = dir.path().join("two.fio");
    std::fs::write(&job, JOB_FILE).unwrap();
    let (json, csv) = (dir.path().join("run.json"), dir.path().join("req.csv"));
    let o = storsim(&[
        "simulate",
        "--device",
        "tlc-nvme",
        "--workload",
        job.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--requests-csv",
        csv.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let notes: Vec<&str> = err.lines().filter(|l| l.contains("note:")).collect();
    assert_eq!(
        notes,
        [format!(
            "storsim: note: {}: accepted without effect in simulation: ioengine, direct, filename",
            job.display()
        )]
    );
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let flows = doc["flows"].as_array().unwrap();
    let names: Vec<&str> = flows.iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["writer.0", "writer.1", "reader"]);
    assert_eq!(flows[2]["phase"], 1);
    assert!(flows[0].get("phase").is_none());
    // Each writer writes its 8 MiB once in 4 KiB requests; the reader reads 8 MiB in 128 KiB.
    let rows = requests(&csv);
    let count = |flow: u64, op: &str| rows.iter().filter(|r| r.0 == flow && r.1 == op).count();
    assert_eq!((count(0, "write"), count(1, "write")), (2048, 2048));
    assert_eq!((count(2, "read"), rows.len()), (64, 2048 * 2 + 64));
    // The reader's first request arrives when the writers' last request completes.
    let writers_end = rows.iter().filter(|r| r.0 < 2).map(|r| r.3).max().unwrap();
    let reader_start = rows.iter().filter(|r| r.0 == 2).map(|r| r.2).min().unwrap();
    assert_eq!(reader_start, writers_end);
    // The two writers run side by side from instant 0, in their own 8 MiB regions.
    let writers_start = rows.iter().filter(|r| r.0 < 2).map(|r| r.2).min().unwrap();
    assert_eq!(writers_start, 0);
    let second: Vec<&Value> = flows[1]["lba"]["offset"]
        .as_object()
        .unwrap()
        .values()
        .collect();
    assert_eq!(second, [&Value::from(8u64 << 20)]);
}

#[test]
fn a_job_file_is_known_by_its_first_lines_whatever_its_name() {
    let dir = temp_dir("fio-job-content");
    let job = dir.path().join("job.ini");
    std::fs::write(&job, "[seq]\nrw=read\nbs=64k\nsize=1m\n").unwrap();
    let json = dir.path().join("run.json");
    let o = storsim(&[
        "simulate",
        "--quiet",
        "--device",
        "tlc-nvme",
        "--workload",
        job.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["flows"][0]["name"], "seq");
    assert_eq!(doc["summary"]["requests"], 16);
}

#[test]
fn refused_job_files_name_the_file_the_line_and_the_option_and_exit_2() {
    let dir = temp_dir("fio-job-refused");
    for (text, wanted) in [
        (
            "[a]\nrw=read\nblocksizes=4k\n",
            "line 3: unknown option `blocksizes`",
        ),
        (
            "[global]\nzonemode=zbd\n[a]\nrw=write\n",
            "line 2: zonemode=zbd needs a zoned device",
        ),
        ("[a]\nrw=randread\nbs=4q\n", "line 3: bs=4q: expected"),
    ] {
        let job = dir.path().join("bad.fio");
        std::fs::write(&job, text).unwrap();
        let o = storsim(&[
            "simulate",
            "--device",
            "tlc-nvme",
            "--workload",
            job.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{text:?}");
        let err = stderr(&o);
        assert!(
            err.contains(&format!("{}: {wanted}", job.display())),
            "{text:?}: {err}"
        );
    }
}

#[test]
fn fio_json_reads_as_fio_s_json_and_agrees_with_storsim_s_own() {
    let dir = temp_dir("fio-job-json");
    let job = dir.path().join("mix.fio");
    std::fs::write(
        &job,
        "[mix]\nrw=randrw\nrwmixread=70\nbs=4k\nsize=8m\niodepth=4\nfsync=32\n\
         [seq]\nstonewall\nrw=read\nbs=64k\nsize=4m\n",
    )
    .unwrap();
    let (json, fio_json) = (dir.path().join("run.json"), dir.path().join("fio.json"));
    let o = storsim(&[
        "simulate",
        "--quiet",
        "--device",
        "tlc-nvme",
        "--workload",
        job.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--fio-json",
        fio_json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let own: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let fio: Value = serde_json::from_str(&std::fs::read_to_string(&fio_json).unwrap()).unwrap();
    // As a script written for fio reads it: jobs by name, a direction's iops, bw in KiB/s,
    // the completion latency's percentiles keyed as fio keys them.
    let jobs = fio["jobs"].as_array().unwrap();
    let names: Vec<&str> = jobs
        .iter()
        .map(|j| j["jobname"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["mix", "seq"]);
    assert_eq!(
        (jobs[0]["groupid"].as_u64(), jobs[1]["groupid"].as_u64()),
        (Some(0), Some(1))
    );
    for (index, job) in jobs.iter().enumerate() {
        let summary = &own["flows"][index]["summary"];
        for dir in ["read", "write"] {
            let d = &job[dir];
            let mine = &summary[dir];
            assert_eq!(d["total_ios"], mine["requests"], "{dir}");
            assert_eq!(d["io_bytes"], mine["bytes"], "{dir}");
            if d["total_ios"] == 0 {
                assert!(d["clat_ns"].get("percentile").is_none());
                continue;
            }
            let iops = d["iops"].as_f64().unwrap();
            assert!((iops - mine["iops"].as_f64().unwrap()).abs() < 1e-6 * iops.max(1.0));
            let bw_kib = d["bw"].as_f64().unwrap();
            let bw_bytes = d["bw_bytes"].as_f64().unwrap();
            assert!(
                (bw_kib - bw_bytes / 1024.0).abs() <= 0.5,
                "{dir}: {bw_kib} {bw_bytes}"
            );
            let p99 = d["clat_ns"]["percentile"]["99.000000"].as_u64().unwrap();
            let p50 = d["clat_ns"]["percentile"]["50.000000"].as_u64().unwrap();
            let min = d["clat_ns"]["min"].as_u64().unwrap();
            let max = d["clat_ns"]["max"].as_u64().unwrap();
            assert!(min <= p50 && p50 <= p99 && p99 <= max, "{dir}");
            assert_eq!(d["clat_ns"]["N"], d["total_ios"]);
        }
    }
    // The mixed job wrote 8 MiB of 4 KiB requests, 30 % of them writes (within tolerance),
    // with a flush after every 32 writes.
    let (reads, writes) = (
        jobs[0]["read"]["total_ios"].as_u64().unwrap(),
        jobs[0]["write"]["total_ios"].as_u64().unwrap(),
    );
    assert_eq!(reads + writes, 2048);
    let fraction = writes as f64 / 2048.0;
    assert!(
        (fraction - 0.3).abs() < 4.0 * (0.3f64 * 0.7 / 2048.0).sqrt(),
        "{fraction}"
    );
    let syncs = jobs[0]["sync"]["total_ios"].as_u64().unwrap();
    assert!(
        syncs == writes / 32 || syncs + 1 == writes / 32,
        "{syncs} for {writes}"
    );
    assert_eq!(jobs[1]["read"]["total_ios"], 64);
}
