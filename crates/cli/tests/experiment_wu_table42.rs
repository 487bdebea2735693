//! The co-simulation thesis' Table 4.2 (seed 003, section 4.6): its 18 vdbench profiles on
//! DiskSim's Seagate Cheetah 15K.5, IOPS and MB/s, against `disksim-cheetah15k5` (the same
//! DiskSim 4.0 model, imported) with one request outstanding, the count that matches best
//! (docs/VALIDATION.md, "Table 4.2").

mod common;

use common::{stderr, storsim};

/// (profile, the thesis' IOPS, the thesis' MB/s), in the table's order.
const TABLE_4_2: [(&str, f64, f64); 18] = [
    ("random-read-small", 172.75, 0.67),
    ("random-read-large", 140.74, 17.59),
    ("random-read-uniform", 155.06, 10.01),
    ("random-write-small", 171.51, 0.67),
    ("random-write-large", 142.76, 17.84),
    ("random-write-uniform", 156.09, 10.07),
    ("random-rw-small", 170.45, 0.67),
    ("random-rw-large", 140.15, 17.52),
    ("random-rw-uniform", 153.99, 9.95),
    ("mixed-read-small", 243.19, 0.95),
    ("mixed-read-large", 186.37, 23.30),
    ("mixed-read-uniform", 211.22, 13.67),
    ("mixed-write-small", 195.20, 0.76),
    ("mixed-write-large", 160.27, 20.03),
    ("mixed-write-uniform", 176.60, 11.43),
    ("mixed-rw-small", 210.87, 0.82),
    ("mixed-rw-large", 169.69, 21.21),
    ("mixed-rw-uniform", 188.50, 12.23),
];

/// IOPS and MiB/s (the thesis' MB: 172.75 IOPS of 4 KiB are its 0.67 MB/s) of one profile.
fn run(profile: &str) -> (f64, f64) {
    let o = storsim(&[
        "simulate",
        "--device",
        "disksim-cheetah15k5",
        "--workload",
        &format!("vdbench:{profile},iodepth=1,requests=6000,seed=42"),
        "--json",
        "-",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let s = &v["summary"];
    (
        s["iops"].as_f64().unwrap(),
        s["bandwidth_bytes_per_s"].as_f64().unwrap() / f64::from(1 << 20),
    )
}

#[test]
fn the_cheetah_15k5_reproduces_table_4_2() {
    for (profile, iops, mb_s) in TABLE_4_2 {
        let (got, got_mb_s) = run(profile);
        let error = (got - iops) / iops;
        // Random profiles: the model and its single outstanding request are the thesis'
        // setup, and the rows agree within 1.5 % (sampling of 6,000 requests included).
        // Mixed profiles: the 20 % sequential requests meet the drive's cache, which the
        // thesis' Linux and vdbench path saw differently (reads faster, writes slower there;
        // see docs/VALIDATION.md): within 12 %.
        let bound = if profile.starts_with("random") {
            0.015
        } else {
            0.12
        };
        println!("{profile}: {got:.2} IOPS (thesis {iops}), {got_mb_s:.2} MB/s (thesis {mb_s})");
        assert!(
            error.abs() <= bound,
            "{profile}: {got:.2} IOPS against the thesis' {iops} ({:+.1} %)",
            error * 100.0
        );
        // Bandwidth follows from the same requests' sizes: the same relative error, less
        // the thesis' rounding to two decimals.
        assert!(
            ((got_mb_s - mb_s) / mb_s).abs() <= bound + 0.01,
            "{profile}: {got_mb_s:.2} MB/s against the thesis' {mb_s}"
        );
    }
}
