//! Children shallower than the array: pieces a full child refuses wait in the array and go in
//! the instant the child completes something, in order, and nothing is lost or doubled.

mod support;

use std::collections::BTreeSet;
use storsim_array::{ArrayDevice, ArrayParams, RaidLevel, ReadPolicy};
use storsim_core::{Device, Op, Prng, Request};
use support::*;

fn bursty_requests(seed: u64, count: u64, capacity: u64) -> Vec<Request> {
    let mut rng = Prng::new(seed);
    let mut t = 0;
    (0..count)
        .map(|id| {
            // Bursts of simultaneous arrivals, so that the array holds many requests at once.
            if rng.below(8) == 0 {
                t += rng.below(2_000_000);
            }
            let op = [Op::Read, Op::Write, Op::Trim, Op::Flush][rng.below(4) as usize];
            let len = (1 + rng.below(64)) * 512;
            let offset = rng.below((capacity - len) / 512) * 512;
            match op {
                Op::Flush => req(id, op, 0, 0, t),
                _ => req(id, op, offset, len, t),
            }
        })
        .collect()
}

/// The checks on each child's log: every piece submitted once and completed once, in the
/// order the array accepted them (ids increase), and a piece that found the child full went
/// in at the instant the child's previous piece completed.
fn check_child_logs(logs: &[SharedLog]) -> usize {
    let mut waited = 0;
    for (i, log) in logs.iter().enumerate() {
        let log = log.lock().unwrap();
        let ids: Vec<u64> = log.submitted.iter().map(|(_, r)| r.id).collect();
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "child {i} got pieces out of order"
        );
        let completed: BTreeSet<u64> = log.completed.iter().map(|c| c.request.id).collect();
        assert_eq!(
            completed.len(),
            log.completed.len(),
            "child {i} completed a piece twice"
        );
        assert_eq!(
            completed,
            ids.iter().copied().collect::<BTreeSet<u64>>(),
            "child {i}: submitted and completed pieces differ"
        );
        let refused: BTreeSet<u64> = log.refused.iter().map(|(_, r, _)| r.id).collect();
        for (k, (t, r)) in log.submitted.iter().enumerate().skip(1) {
            if refused.contains(&r.id) {
                let previous = log.submitted[k - 1].1.id;
                let previous_finish = log
                    .completed
                    .iter()
                    .find(|c| c.request.id == previous)
                    .unwrap()
                    .finish;
                assert_eq!(
                    *t, previous_finish,
                    "child {i}: piece {} waited too long",
                    r.id
                );
                waited += 1;
            }
        }
    }
    waited
}

#[test]
fn queue_full_from_depth_one_children_loses_nothing_and_completes_each_request_once() {
    for level in [
        RaidLevel::Raid0 {
            stripe_unit_bytes: 4096,
        },
        RaidLevel::Raid1 {
            read_policy: ReadPolicy::LeastOutstanding,
        },
        RaidLevel::Raid1 {
            read_policy: ReadPolicy::RoundRobin,
        },
    ] {
        let (children, logs): (Vec<Box<dyn Device>>, Vec<SharedLog>) = (0..3)
            .map(|_| recorded(linear(1 << 24, 30.0, 3.0, 1)))
            .unzip();
        let mut array = ArrayDevice::new(
            ArrayParams {
                level,
                queue_depth: 32,
            },
            children,
        )
        .unwrap();
        let requests = bursty_requests(5, 600, array.capacity_bytes());
        let run = drive(&mut array, &requests);
        assert_eq!(run.failed_at, None);
        assert_each_completed_once(&requests, &run);
        let waited = check_child_logs(&logs);
        assert!(
            waited > 100,
            "{level:?}: only {waited} pieces waited for a child"
        );
        let queued = array
            .counters()
            .into_iter()
            .find(|c| c.name == "queued_pieces")
            .unwrap()
            .value;
        assert_eq!(queued as usize, waited, "{level:?}");
        // Each host request finished with its last piece, and began with its first.
        let pieces: Vec<_> = logs
            .iter()
            .flat_map(|l| l.lock().unwrap().completed.clone())
            .collect();
        let finishes: BTreeSet<_> = pieces.iter().map(|c| c.finish).collect();
        for c in &run.completions {
            assert!(
                finishes.contains(&c.finish),
                "request {} finish",
                c.request.id
            );
        }
    }
}
