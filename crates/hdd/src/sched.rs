//! Choosing the next request from the drive's queue.

use crate::params::SchedulerKind;

/// What a scheduler knows about a waiting request.
#[derive(Clone, Copy, Debug)]
pub struct Candidate {
    pub cylinder: u32,
    /// Seek plus rotational latency from where the heads will be; only SPTF looks at it.
    pub positioning_ns: f64,
}

/// Index of the request to serve next, among candidates in arrival order; ties go to the
/// earliest arrival, which keeps every policy deterministic. `None` for an empty queue.
pub fn pick(kind: SchedulerKind, head_cylinder: u32, queue: &[Candidate]) -> Option<usize> {
    if queue.is_empty() {
        return None;
    }
    let best_by = |key: &dyn Fn(&Candidate) -> f64| {
        let mut best = 0;
        for (i, c) in queue.iter().enumerate().skip(1) {
            if key(c) < key(&queue[best]) {
                best = i;
            }
        }
        best
    };
    Some(match kind {
        SchedulerKind::Fcfs => 0,
        SchedulerKind::Sstf => best_by(&|c| f64::from(c.cylinder.abs_diff(head_cylinder))),
        SchedulerKind::Sptf => best_by(&|c| c.positioning_ns),
        SchedulerKind::CLook => {
            // The nearest request at or beyond the heads; when none is left in this sweep,
            // the lowest cylinder starts the next one.
            let ahead = queue
                .iter()
                .enumerate()
                .filter(|(_, c)| c.cylinder >= head_cylinder)
                .min_by_key(|(i, c)| (c.cylinder, *i));
            match ahead {
                Some((i, _)) => i,
                None => queue
                    .iter()
                    .enumerate()
                    .min_by_key(|(i, c)| (c.cylinder, *i))
                    .map(|(i, _)| i)
                    .unwrap_or(0),
            }
        }
    })
}
