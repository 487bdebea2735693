//! The MQSim-shape experiment (`experiments/mqsim/`) at its quick size: a read-intensive
//! tenant's slowdown grows when a write-intensive tenant shares the SSD's channels, and
//! pinning each tenant to its own channels (a resource partition) removes most of it.

mod common;

use common::experiment::run_sweep;
use common::temp_dir;

#[test]
fn a_writer_slows_a_reader_that_shares_its_channels_and_partitioning_removes_most_of_it() {
    let dir = temp_dir("mqsim-multi-tenant");
    let results = run_sweep("experiments/mqsim/multi-tenant.toml", dir.path());
    assert_eq!(results.rows.len(), 4);
    // The bare SSD, and behind MQSim's default NVMe host, where the tenants also share the
    // interface's queue and link.
    for device in ["bench2g", "bench2g:nvme"] {
        let row = |workload: &str| {
            (0..results.rows.len())
                .find(|&r| {
                    results.text(r, "device") == device
                        && results.text(r, "workload").ends_with(workload)
                })
                .unwrap_or_else(|| panic!("no point for {device} {workload}"))
        };
        shape(
            &results,
            device,
            row("shared-quick.toml"),
            row("partitioned-quick.toml"),
        );
    }
}

/// The reader's slowdown shared and partitioned, and the fairness, on one device.
fn shape(results: &common::experiment::Results, device: &str, shared: usize, partitioned: usize) {
    let slowdown = |r: usize, flow: &str| results.number(r, &format!("flows.{flow}.slowdown"));
    // Every request of both tenants completed: the reader's 256 writes and 2,500 reads.
    for r in [shared, partitioned] {
        assert_eq!(results.number(r, "flows.reader.summary.requests"), 2756.0);
        assert!(results.number(r, "flows.writer.summary.requests") > 0.0);
    }
    let reader_shared = slowdown(shared, "reader");
    let reader_partitioned = slowdown(partitioned, "reader");
    // Sharing every channel with the writer's programs at least doubles the reader's mean
    // response time ...
    assert!(
        reader_shared > 2.0,
        "{device}: reader slowdown shared {reader_shared}"
    );
    // ... and partitioning takes away at least three quarters of what sharing added: the two
    // tenants then meet only in the host-side queue, not at a die.
    assert!(
        reader_partitioned - 1.0 < 0.25 * (reader_shared - 1.0),
        "{device}: reader slowdown partitioned {reader_partitioned} against {reader_shared} shared"
    );
    // The writer barely notices the reader either way, so fairness improves with partitions.
    let fairness_shared = results.number(shared, "fairness");
    let fairness_partitioned = results.number(partitioned, "fairness");
    assert!(
        fairness_partitioned > fairness_shared,
        "{device}: fairness {fairness_partitioned} partitioned, {fairness_shared} shared"
    );
}
