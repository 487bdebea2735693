//! Rough throughput of the block store: `cargo run --release -p storsim-store --example
//! store_bench -- [memory|file:PATH] [threads]`. Each thread writes then reads its own 256 MiB
//! in 128 KiB requests, then overwrites it, then reads it; the file backing is flushed after
//! each round of writes.

use std::sync::Arc;
use std::time::Instant;
use storsim_store::{Backing, Store};

const PER_THREAD: u64 = 256 << 20;
const REQUEST: usize = 128 << 10;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let backing: Backing = args.get(1).map_or("memory", |s| s.as_str()).parse()?;
    let threads: u64 = args.get(2).map_or(Ok(1), |s| s.parse())?;
    let store = Arc::new(Store::open(&backing, threads * PER_THREAD)?);
    let total_mib = (threads * PER_THREAD) >> 20;

    let run = |write: bool| -> Result<f64, String> {
        let start = Instant::now();
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let store = Arc::clone(&store);
                std::thread::spawn(move || -> Result<(), String> {
                    let mut buf = vec![t as u8 + 1; REQUEST];
                    let base = t * PER_THREAD;
                    for i in 0..PER_THREAD / REQUEST as u64 {
                        let off = base + i * REQUEST as u64;
                        let r = if write {
                            store.write(off, &buf)
                        } else {
                            store.read(off, &mut buf)
                        };
                        r.map_err(|e| e.to_string())?;
                    }
                    Ok(())
                })
            })
            .collect();
        for h in handles {
            h.join()
                .map_err(|_| "a bench thread panicked".to_string())??;
        }
        if write {
            store.flush().map_err(|e| e.to_string())?;
        }
        Ok(start.elapsed().as_secs_f64())
    };
    let w = run(true)?;
    let o = run(true)?;
    let r = run(false)?;
    println!(
        "{backing}, {threads} thread(s), {total_mib} MiB: first write+flush {:.0} MiB/s, overwrite+flush {:.0} MiB/s, read {:.0} MiB/s",
        total_mib as f64 / w,
        total_mib as f64 / o,
        total_mib as f64 / r
    );
    Ok(())
}
