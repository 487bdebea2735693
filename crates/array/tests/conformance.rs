//! The array keeps the Device contract (checked by the conformance kit) over every shape the
//! array tests use: RAID-0 and RAID-1 with both read policies, array queues shallower and deeper
//! than the children's, a nested array, RAID-1 degraded after a child fails and failed after
//! both have, and both levels over children that fail a share of their requests.

mod support;

use storsim_array::{ArrayDevice, ArrayParams, RaidLevel, ReadPolicy};
use storsim_core::conformance::{self, Options, Report};
use storsim_core::Device;
use support::*;

fn raid1(policy: ReadPolicy, queue_depth: usize, children: Vec<Box<dyn Device>>) -> ArrayDevice {
    ArrayDevice::new(
        ArrayParams {
            level: RaidLevel::Raid1 {
                read_policy: policy,
            },
            queue_depth,
        },
        children,
    )
    .expect("a valid array")
}

fn check<D: Device>(name: &str, make: impl FnMut() -> D) -> Report {
    eprintln!("{name}");
    conformance::check(make, &Options::default()).unwrap_or_else(|v| panic!("{name}: {v}"))
}

#[test]
fn raid0_keeps_the_device_contract() {
    for (array_depth, child_depth) in [(1, 1), (4, 1), (32, 8), (8, 32)] {
        for stripe_unit_bytes in [4096, 64 << 10] {
            check(
                &format!("raid0 depth {array_depth} over {child_depth}, unit {stripe_unit_bytes}"),
                || {
                    let children = (0..3)
                        .map(|_| linear(64 << 20, 50.0, 2.0, child_depth))
                        .collect();
                    raid0(stripe_unit_bytes, array_depth, children)
                },
            );
        }
    }
}

#[test]
fn raid1_keeps_the_device_contract() {
    for policy in [ReadPolicy::LeastOutstanding, ReadPolicy::RoundRobin] {
        for (array_depth, child_depth) in [(1, 1), (16, 4), (4, 16)] {
            check(
                &format!("raid1 {policy:?} depth {array_depth} over {child_depth}"),
                || {
                    raid1(
                        policy,
                        array_depth,
                        vec![
                            linear(64 << 20, 50.0, 2.0, child_depth),
                            linear(64 << 20, 80.0, 1.0, child_depth),
                        ],
                    )
                },
            );
        }
    }
}

#[test]
fn a_nested_array_keeps_the_device_contract() {
    check("raid0 of two raid1 pairs", || {
        let pair = || -> Box<dyn Device> {
            Box::new(raid1(
                ReadPolicy::RoundRobin,
                8,
                vec![
                    linear(32 << 20, 40.0, 2.0, 4),
                    linear(32 << 20, 60.0, 1.0, 4),
                ],
            ))
        };
        raid0(16 << 10, 16, vec![pair(), pair()])
    });
}

#[test]
fn raid1_keeps_the_device_contract_while_degraded_and_once_failed() {
    let degraded = check("raid1 with a child that fails", || {
        raid1(
            ReadPolicy::LeastOutstanding,
            16,
            vec![
                fails_after(linear(64 << 20, 50.0, 2.0, 8), 300),
                linear(64 << 20, 50.0, 2.0, 8),
            ],
        )
    });
    assert_eq!(degraded.failed, None, "the survivor carries the array");
    let failed = check("raid1 whose children both fail", || {
        raid1(
            ReadPolicy::LeastOutstanding,
            16,
            vec![
                fails_after(linear(64 << 20, 50.0, 2.0, 8), 300),
                fails_after(linear(64 << 20, 50.0, 2.0, 8), 500),
            ],
        )
    });
    assert!(
        failed.failed.is_some(),
        "the array fails with its last child"
    );
    assert!(failed.completed > 0);
}

/// Children behind faults layers that fail a share of their requests of every kind: RAID-1
/// (members marked failed, reads read again, the last member kept) and RAID-0 keep the
/// contract, at a shallow and a deep queue.
#[test]
fn arrays_over_failing_children_keep_the_device_contract() {
    use storsim_faults::{FaultKind, FaultPlan, FaultRule, FaultsDevice};
    let failing = |seed: u64, depth: usize| -> Box<dyn Device> {
        let rule = |kind| FaultRule {
            rate_per_million: 2_000,
            ..FaultRule::always(kind)
        };
        let plan = FaultPlan {
            rules: vec![
                rule(FaultKind::WriteError),
                rule(FaultKind::ReadError),
                rule(FaultKind::Fail),
            ],
            seed,
            ..FaultPlan::default()
        };
        Box::new(FaultsDevice::new(linear(64 << 20, 50.0, 2.0, depth), &plan))
    };
    let options = Options {
        allow_errors: true,
        ..Options::default()
    };
    for (array_depth, child_depth) in [(1, 1), (32, 8)] {
        for level in [
            RaidLevel::Raid1 {
                read_policy: ReadPolicy::LeastOutstanding,
            },
            RaidLevel::Raid0 {
                stripe_unit_bytes: 4096,
            },
        ] {
            let name = format!("{} depth {array_depth} over failing children", level.name());
            eprintln!("{name}");
            conformance::check(
                || {
                    let children = (0..3).map(|i| failing(i + 1, child_depth)).collect();
                    let mut array = ArrayDevice::new(
                        ArrayParams {
                            level,
                            queue_depth: array_depth,
                        },
                        children,
                    )
                    .expect("a valid array");
                    array.enable_fault_counters();
                    array
                },
                &options,
            )
            .unwrap_or_else(|v| panic!("{name}: {v}"));
        }
    }
}

/// RAID-5 and RAID-6 at shallow and deep queues, with chunks smaller and larger than the
/// kit's requests; optimal, degraded from the start, and rebuilding onto a spare while the
/// load runs.
#[test]
fn parity_arrays_keep_the_device_contract() {
    for parities in [1, 2] {
        for (array_depth, child_depth) in [(1, 1), (16, 4), (32, 32)] {
            for chunk in [4096, 64 << 10] {
                for (failed, spare) in [
                    (None, false),
                    (Some((1, 0)), false),
                    (Some((2, 3_000_000)), true),
                ] {
                    let name = format!(
                        "raid with {parities} parities, depth {array_depth} over {child_depth}, \
                         chunk {chunk}, failed {failed:?}, spare {spare}"
                    );
                    let report = check(&name, || {
                        let members = (0..5)
                            .map(|_| linear(8 << 20, 50.0, 2.0, child_depth))
                            .collect();
                        let spare = spare.then(|| linear(8 << 20, 50.0, 2.0, child_depth));
                        parity_array(
                            parities,
                            chunk,
                            array_depth,
                            members,
                            spare,
                            failed,
                            400 << 20,
                        )
                    });
                    assert_eq!(report.failed, None, "{name}");
                }
            }
        }
    }
}

/// A RAID-6 keeps running with two members that stop accepting; a RAID-5 with the same two
/// fails, and what it accepted still completes (with errors for rows it could not read).
#[test]
fn parity_arrays_keep_the_device_contract_as_members_fail() {
    for parities in [1, 2] {
        let name = format!("{parities} parities, two members failing");
        eprintln!("{name}");
        let report = conformance::check(
            || {
                let members = (0..5)
                    .map(|i| match i {
                        1 => fails_after(linear(8 << 20, 50.0, 2.0, 8), 300),
                        3 => fails_after(linear(8 << 20, 50.0, 2.0, 8), 900),
                        _ => linear(8 << 20, 50.0, 2.0, 8),
                    })
                    .collect();
                parity_array(parities, 16 << 10, 16, members, None, None, 100 << 20)
            },
            &Options {
                allow_errors: true,
                ..Options::default()
            },
        )
        .unwrap_or_else(|v| panic!("{name}: {v}"));
        assert_eq!(
            report.failed.is_some(),
            parities == 1,
            "{name}: {:?}",
            report.failed
        );
    }
}

/// Members and a spare behind faults layers that fail a share of their requests of every
/// kind: media errors reconstructed, failed writes and devices taking members out, the
/// rebuild starting and stopping.
#[test]
fn parity_arrays_over_failing_members_keep_the_device_contract() {
    use storsim_faults::{FaultKind, FaultPlan, FaultRule, FaultsDevice};
    let failing = |seed: u64, depth: usize| -> Box<dyn Device> {
        let rule = |kind| FaultRule {
            rate_per_million: 1_000,
            ..FaultRule::always(kind)
        };
        let plan = FaultPlan {
            rules: vec![
                rule(FaultKind::WriteError),
                rule(FaultKind::ReadError),
                rule(FaultKind::Fail),
            ],
            seed,
            ..FaultPlan::default()
        };
        Box::new(FaultsDevice::new(linear(8 << 20, 50.0, 2.0, depth), &plan))
    };
    let options = Options {
        allow_errors: true,
        ..Options::default()
    };
    for parities in [1, 2] {
        for (array_depth, child_depth) in [(1, 1), (32, 8)] {
            let name = format!("{parities} parities, depth {array_depth} over failing members");
            eprintln!("{name}");
            conformance::check(
                || {
                    let members = (0..5).map(|i| failing(i + 1, child_depth)).collect();
                    let mut array = parity_array(
                        parities,
                        8 << 10,
                        array_depth,
                        members,
                        Some(failing(9, child_depth)),
                        None,
                        200 << 20,
                    );
                    array.enable_fault_counters();
                    array
                },
                &options,
            )
            .unwrap_or_else(|v| panic!("{name}: {v}"));
        }
    }
}
