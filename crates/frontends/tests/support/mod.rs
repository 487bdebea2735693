//! What the emulator's front-end tests share: a record kept in memory and a model whose
//! requests sent together finish together.

use std::io::Write;
use std::sync::{Arc, Mutex};
use storsim_blackbox::linear::{stec_zeus, LinearCost, LinearDevice};
use storsim_core::SimDuration;
use storsim_emulate::{Backing, Emulator, EmulatorOptions, RecordTarget, Store};

/// A record kept in memory, readable after the emulator has finished with it.
#[derive(Clone, Default)]
pub struct Shared(pub Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Sixteen servers taking `service_us` for everything: requests sent together finish together.
pub fn device(service_us: u64) -> LinearDevice {
    let mut p = stec_zeus();
    p.capacity_bytes = 1 << 30;
    p.costs = [LinearCost::from_us(service_us as f64, 0.0); 4];
    p.trim = SimDuration::from_us(service_us);
    p.flush = SimDuration::from_us(service_us);
    p.queue_depth = 32;
    p.servers = 16;
    LinearDevice::new(p)
}

/// An emulator over [`device`]`(service_us)` and a memory store of `export_bytes`, recording
/// into the returned [`Shared`].
#[allow(dead_code)]
pub fn recorded_emulator(export_bytes: u64, service_us: u64) -> (Arc<Emulator>, Shared) {
    recorded_emulator_with(
        &Backing::Memory,
        EmulatorOptions::new(export_bytes),
        service_us,
    )
}

/// The same with the store on `backing` and the pacing thread awake for the whole test: it spins a second before it
/// sleeps when idle, so it, not a front end's own thread, serves the sources it polls however
/// busy the machine is. (Under a load of 12 on 2 cores, a pacing thread that slept between
/// bursts as usual missed every request of a run more often than not.)
#[allow(dead_code)]
pub fn spinning_emulator_on(
    backing: &Backing,
    export_bytes: u64,
    service_us: u64,
) -> (Arc<Emulator>, Shared) {
    let options = EmulatorOptions {
        idle_spin_ns: 1_000_000_000,
        ..EmulatorOptions::new(export_bytes)
    };
    recorded_emulator_with(backing, options, service_us)
}

fn recorded_emulator_with(
    backing: &Backing,
    options: EmulatorOptions,
    service_us: u64,
) -> (Arc<Emulator>, Shared) {
    let record = Shared::default();
    let store = Arc::new(Store::open(backing, options.export_bytes).unwrap());
    let emulator = Emulator::start(
        Box::new(device(service_us)),
        "flat",
        store,
        options,
        Some(RecordTarget {
            out: Box::new(record.clone()),
            header: Vec::new(),
        }),
    )
    .unwrap();
    (Arc::new(emulator), record)
}

/// An NBD server exporting `emulator`'s `export_bytes` as "storsim" on `listen`, logging to the
/// test's output. The FUSE tests share this module without serving NBD.
#[allow(dead_code)]
pub fn serve_nbd(
    emulator: &Arc<Emulator>,
    export_bytes: u64,
    listen: storsim_nbd::Listen,
) -> storsim_nbd::ServerHandle {
    let mut config = storsim_nbd::ServerConfig::new(storsim_nbd::Export {
        name: "storsim".into(),
        description: String::new(),
        size_bytes: export_bytes,
        read_only: false,
    });
    config.log = Arc::new(|line| eprintln!("{line}"));
    let handler = Arc::new(storsim_frontends::NbdFrontend {
        emulator: Arc::clone(emulator),
    });
    storsim_nbd::Server::bind(&listen, config, handler)
        .unwrap()
        .spawn()
}

/// Checks the record: `rows` requests in the order received, each offered to the model no
/// earlier than received, none intended before `service_us` after its arrival at the model, no
/// reply leaving before its instant.
pub fn assert_record(record: &Shared, rows: usize, service_us: u64) {
    let text = String::from_utf8(record.0.lock().unwrap().clone()).unwrap();
    let parsed: Vec<Vec<u64>> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("received_ns"))
        .map(|l| l.split(',').filter_map(|f| f.parse().ok()).collect())
        .collect();
    assert_eq!(parsed.len(), rows, "{text}");
    let mut previous_received = 0;
    for row in &parsed {
        let (received, arrival, intended, actual) = (row[0], row[1], row[4], row[5]);
        assert!(received >= previous_received, "rows out of order:\n{text}");
        previous_received = received;
        assert!(arrival >= received, "{text}");
        assert!(intended >= arrival + service_us * 1000, "{text}");
        assert!(
            actual >= intended,
            "a reply left before its instant:\n{text}"
        );
    }
}
