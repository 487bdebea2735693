//! How many of a flow's records run, on what clock, and how many times: the flow keys `head`
//! (the first N records), `time_scale` (the trace's timestamps in another unit than the
//! format's) and `repeat` (the workload replayed again after itself), which MQSim's
//! `Percentage_To_Be_Executed`, `Time_Unit` and `Relay_Count` become.

use crate::{Record, Workload, WorkloadError};

type Records = Box<dyn Iterator<Item = Result<Record, WorkloadError>>>;

/// `workload` cut to its first `count` records.
pub fn head(mut workload: Workload, count: u64) -> Workload {
    let records = workload.records;
    workload.records = Box::new(records.take(usize::try_from(count).unwrap_or(usize::MAX)));
    workload
}

/// `workload` with every timestamp multiplied by `factor` (0.001 for a trace in picoseconds
/// read as nanoseconds, 1000 for one in microseconds), rounded to the nanosecond.
pub fn scale_time(mut workload: Workload, factor: f64) -> Workload {
    assert!(
        factor.is_finite() && factor > 0.0,
        "a time scale is positive"
    );
    let records = workload.records;
    workload.records = Box::new(records.map(move |item| {
        let mut record = item?;
        record.timestamp_ns = (record.timestamp_ns as f64 * factor).round() as u64;
        Ok(record)
    }));
    workload
}

/// `first` followed by `passes - 1` more passes of the same workload, each opened by `reopen`
/// when the one before it ends and shifted in time so that its first record arrives when the
/// previous pass's last record did (as MQSim restarts a trace when it has issued its last
/// request). Memory stays independent of the workload's length: nothing is kept but the
/// current pass's first and last timestamps.
pub fn repeat(
    mut first: Workload,
    passes: u32,
    reopen: impl FnMut() -> Result<Workload, WorkloadError> + 'static,
) -> Workload {
    assert!(passes >= 1, "a workload runs at least once");
    let records = std::mem::replace(&mut first.records, Box::new(std::iter::empty()));
    first.records = Box::new(Repeat {
        current: records,
        passes_left: passes - 1,
        offset_ns: 0,
        pass_first_ns: None,
        pass_last_ns: 0,
        reopen: Box::new(reopen),
    });
    first
}

struct Repeat {
    current: Records,
    passes_left: u32,
    /// Added to every timestamp of the current pass.
    offset_ns: u64,
    /// The current pass's first and last timestamps as read.
    pass_first_ns: Option<u64>,
    pass_last_ns: u64,
    reopen: Box<dyn FnMut() -> Result<Workload, WorkloadError>>,
}

impl Iterator for Repeat {
    type Item = Result<Record, WorkloadError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.current.next() {
                Some(Ok(mut record)) => {
                    self.pass_first_ns.get_or_insert(record.timestamp_ns);
                    self.pass_last_ns = record.timestamp_ns;
                    record.timestamp_ns = record.timestamp_ns.saturating_add(self.offset_ns);
                    return Some(Ok(record));
                }
                Some(Err(e)) => return Some(Err(e)),
                None if self.passes_left == 0 => return None,
                None => {
                    self.passes_left -= 1;
                    // The next pass starts where this one's last record arrived; a pass of no
                    // records moves nothing (and so do the passes after it).
                    let first = self.pass_first_ns.take()?;
                    self.offset_ns = self
                        .offset_ns
                        .saturating_add(self.pass_last_ns.saturating_sub(first));
                    match (self.reopen)() {
                        Ok(workload) => self.current = workload.records,
                        Err(e) => {
                            self.passes_left = 0;
                            return Some(Err(e));
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Origin, Pacing};
    use storsim_core::Op;

    fn trace(times: &[u64]) -> Workload {
        let records = times
            .iter()
            .enumerate()
            .map(|(i, &t)| Record {
                timestamp_ns: t,
                op: Op::Read,
                offset_bytes: 4096 * i as u64,
                len_bytes: 4096,
                dev: 0,
                think_ns: 0,
                origin: i as u64 + 1,
            })
            .collect();
        Workload::from_records("t", records, Pacing::Open, Origin::Line)
    }

    fn times(w: Workload) -> Vec<u64> {
        w.records.map(|r| r.unwrap().timestamp_ns).collect()
    }

    #[test]
    fn each_pass_starts_where_the_last_one_ended() {
        let times_of = [100, 150, 400];
        let w = repeat(trace(&times_of), 3, move || Ok(trace(&times_of)));
        // Pass 2 is 300 ns later (400 - 100), pass 3 another 300.
        assert_eq!(times(w), [100, 150, 400, 400, 450, 700, 700, 750, 1000]);
    }

    #[test]
    fn one_pass_is_the_workload_and_an_empty_one_ends_the_repeat() {
        assert_eq!(
            times(repeat(trace(&[5, 9]), 1, || panic!("not reopened"))),
            [5, 9]
        );
        let opened = std::rc::Rc::new(std::cell::Cell::new(0));
        let counter = opened.clone();
        let w = repeat(trace(&[]), 4, move || {
            counter.set(counter.get() + 1);
            Ok(trace(&[]))
        });
        assert_eq!(times(w), Vec::<u64>::new());
        // A pass with nothing in it would repeat nothing: the workload is not opened again.
        assert_eq!(opened.get(), 0);
    }

    #[test]
    fn a_failed_reopen_is_an_error_then_the_end() {
        let w = repeat(trace(&[1, 2]), 3, || {
            Err(WorkloadError::Spec {
                message: "gone".into(),
            })
        });
        let items: Vec<_> = w.records.collect();
        assert_eq!(items.len(), 3);
        assert!(items[2].is_err());
    }

    #[test]
    fn head_and_scale_take_the_first_records_on_another_clock() {
        let w = scale_time(head(trace(&[1000, 2000, 3000, 4000]), 3), 0.001);
        assert_eq!(times(w), [1, 2, 3]);
        let w = scale_time(trace(&[1, 2]), 1000.0);
        assert_eq!(times(w), [1000, 2000]);
    }
}
