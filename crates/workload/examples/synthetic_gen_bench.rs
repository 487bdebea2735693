//! Measures how many records per second the synthetic generator produces, through the same
//! boxed iterator the engine consumes.
//!
//! Run with `cargo run --release -p storsim-workload --example synthetic_gen_bench`.

use std::hint::black_box;
use std::time::Instant;
use storsim_workload::synthetic;

const CAPACITY_BYTES: u64 = 1 << 40;

const SPECS: [&str; 6] = [
    "rw=randwrite,bs=4k,requests=20000000",
    "rw=randwrite,bs=4k,dist=zipf:1.2,requests=20000000",
    "rw=randrw,bs=4k-128k,dist=hotcold:0.2:0.8,requests=20000000",
    "rw=write,bs=128k,requests=20000000",
    "rw=randread,bs=4k,iops=100000,arrival=poisson,requests=20000000",
    "vdbench:mixed-rw-uniform,requests=20000000",
];

fn main() -> Result<(), storsim_workload::WorkloadError> {
    println!("{:>14}  {:>8}  spec", "records/s", "ns/rec");
    for text in SPECS {
        let spec = synthetic::parse(text)?;
        // The best of three runs, to keep a scheduler hiccup from being the result.
        let mut best_s = f64::INFINITY;
        let mut count = 0u64;
        for _ in 0..3 {
            let workload = synthetic::build(&spec, CAPACITY_BYTES, 7)?;
            let start = Instant::now();
            // Folding every field into a checksum keeps the optimiser from skipping work.
            let mut checksum = 0u64;
            count = 0;
            for record in workload.records {
                let record = record?;
                checksum = checksum
                    .wrapping_add(record.offset_bytes ^ record.len_bytes)
                    .wrapping_add(record.timestamp_ns)
                    .wrapping_add(record.op.index() as u64);
                count += 1;
            }
            black_box(checksum);
            best_s = best_s.min(start.elapsed().as_secs_f64());
        }
        let rate = count as f64 / best_s;
        println!("{rate:>14.0}  {:>8.1}  {text}", 1e9 / rate);
    }
    Ok(())
}
