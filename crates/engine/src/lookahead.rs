//! One record of lookahead, so that the device can be told which request comes next.
//!
//! A device's prefetch hint ([`Device::prefetch`](storsim_core::Device::prefetch)) pays only
//! if it comes a little before the submission: in a closed loop a record is admitted and
//! submitted in the same step, so the engine reads the record after it early and hints that
//! one instead. Reading ahead must not change what the run reports: the record comes out of
//! [`Lookahead::next`] exactly as the workload would have given it, errors included, and the
//! workload's counters of skipped and ignored records are put back if the run ends without
//! reaching the record read ahead.

use storsim_workload::{Record, Workload, WorkloadError};

type Item = Result<Record, WorkloadError>;

pub(crate) struct Lookahead {
    /// `Some(item)` once read ahead: `Some(None)` means the workload had ended.
    peeked: Option<Option<Item>>,
    /// The workload's skipped and ignored counters before the peeked record was read.
    counted_before: (u64, u64),
}

impl Lookahead {
    pub fn new() -> Self {
        Lookahead {
            peeked: None,
            counted_before: (0, 0),
        }
    }

    /// The workload's next record: the one read ahead, if any.
    #[inline]
    pub fn next(&mut self, workload: &mut Workload) -> Option<Item> {
        match self.peeked.take() {
            Some(item) => item,
            None => workload.records.next(),
        }
    }

    /// The record [`Lookahead::next`] will return, read now if it was not yet; `None` at the
    /// end of the workload or when it is an error.
    #[inline]
    pub fn peek(&mut self, workload: &mut Workload) -> Option<&Record> {
        if self.peeked.is_none() {
            self.counted_before = (workload.skipped.get(), workload.ignored.get());
            self.peeked = Some(workload.records.next());
        }
        match &self.peeked {
            Some(Some(Ok(record))) => Some(record),
            _ => None,
        }
    }

    /// The run is over: if a record was read ahead and never taken, the counters go back to
    /// what they were before it was read.
    pub fn finish(&mut self, workload: &Workload) {
        if let Some(Some(_)) = self.peeked.take() {
            workload.skipped.set(self.counted_before.0);
            workload.ignored.set(self.counted_before.1);
        }
    }
}
