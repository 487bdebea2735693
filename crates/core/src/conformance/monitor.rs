//! The contract checker: every call the kit's drivers make to a device goes through a
//! [`Monitor`], which compares what the device answers with what the [`Device`] contract
//! promises and turns the first broken promise into a [`Violation`].

use super::{Violation, ViolationKind};
use crate::device::{Device, DeviceError};
use crate::request::{Completion, Request};
use crate::time::SimTime;
use std::collections::{BTreeMap, BTreeSet};

/// An accepted request that has not completed yet.
struct Pending {
    request: Request,
    /// Its place in submission order, for the tie rule of `advance`.
    sequence: u64,
    /// How many `advance` calls had been made when it was accepted: one made after it is a
    /// call that had to report it if it had finished by then.
    advances_before: u64,
}

/// Watches one device through one run.
pub(crate) struct Monitor {
    seed: Option<u64>,
    model: &'static str,
    pending: BTreeMap<u64, Pending>,
    completed: BTreeSet<u64>,
    sequence: u64,
    advances: u64,
    /// The `now` of the latest `advance` call.
    last_advance: Option<SimTime>,
    /// The latest instant any call was made at: the driver's clock.
    now: SimTime,
    /// The last completion reported: its finish and submission sequence.
    last_reported: Option<(SimTime, u64)>,
    /// `advance` calls in a row with requests outstanding and nothing completed.
    idle_advances: u64,
    stall_advances: u64,
    /// Whether a completion may carry an error status (a faults layer); models may not.
    allow_errors: bool,
}

impl Monitor {
    pub(crate) fn new(model: &'static str, seed: Option<u64>, stall_advances: u64) -> Self {
        Monitor {
            seed,
            model,
            pending: BTreeMap::new(),
            completed: BTreeSet::new(),
            sequence: 0,
            advances: 0,
            last_advance: None,
            now: SimTime::ZERO,
            last_reported: None,
            idle_advances: 0,
            stall_advances,
            allow_errors: true,
        }
    }

    /// The monitor of [`crate::conformance::check`]: completions must be `Ok` unless
    /// `allow_errors`.
    pub(crate) fn with_errors_allowed(mut self, allow_errors: bool) -> Self {
        self.allow_errors = allow_errors;
        self
    }

    /// Requests accepted and not yet completed.
    pub(crate) fn outstanding(&self) -> usize {
        self.pending.len()
    }

    /// A violation of `kind` about `request`, stamped with this run's seed and model.
    pub(crate) fn violation(
        &self,
        kind: ViolationKind,
        request: Option<Request>,
        detail: String,
    ) -> Violation {
        Violation {
            model: self.model,
            seed: self.seed,
            request,
            kind,
            detail,
        }
    }

    /// The kit's own clock must never go back; that would be a bug in the driver, not the device.
    fn step_to(&mut self, now: SimTime) {
        assert!(
            now >= self.now,
            "conformance driver: time went back from {} to {now}",
            self.now
        );
        self.now = now;
    }

    /// Submits `request` at `now` and checks the queue-depth promise: a device holding fewer
    /// than `queue_depth()` requests accepts (or refuses for another reason), one holding that
    /// many refuses with `QueueFull`. Returns the device's answer for the driver to act on.
    pub(crate) fn submit<D: Device + ?Sized>(
        &mut self,
        device: &mut D,
        now: SimTime,
        request: Request,
    ) -> Result<Result<(), DeviceError>, Violation> {
        self.step_to(now);
        assert!(
            request.arrival <= now,
            "conformance driver: request {} submitted at {now} before its arrival {}",
            request.id,
            request.arrival
        );
        let depth = device.queue_depth();
        let full = self.pending.len() >= depth;
        let answer = device.submit(now, request);
        match &answer {
            Ok(()) if full => {
                return Err(self.violation(
                    ViolationKind::AcceptedBeyondQueueDepth,
                    Some(request),
                    format!(
                        "accepted at {now} while holding {} requests, its queue_depth() being \
                         {depth}",
                        self.pending.len()
                    ),
                ))
            }
            Ok(()) => {
                if self.completed.contains(&request.id) || self.pending.contains_key(&request.id) {
                    panic!(
                        "conformance driver: request id {} submitted twice (ids must be unique \
                         within a run)",
                        request.id
                    );
                }
                self.pending.insert(
                    request.id,
                    Pending {
                        request,
                        sequence: self.sequence,
                        advances_before: self.advances,
                    },
                );
                self.sequence += 1;
            }
            Err(DeviceError::QueueFull { .. }) if !full => {
                return Err(self.violation(
                    ViolationKind::QueueFullBelowDepth,
                    Some(request),
                    format!(
                        "refused with QueueFull at {now} while holding {} requests, its \
                         queue_depth() being {depth}",
                        self.pending.len()
                    ),
                ))
            }
            Err(_) => {}
        }
        self.check_deadline_not_past(device, now, "a submission")?;
        Ok(answer)
    }

    /// Submits a request the device must refuse (the kit's probes): `expect_out_of_range` says
    /// whether the range is past the end (refused with `OutOfRange`, or `QueueFull` when the
    /// device is full), otherwise the device is full and must refuse with `QueueFull`.
    pub(crate) fn probe<D: Device + ?Sized>(
        &mut self,
        device: &mut D,
        now: SimTime,
        request: Request,
        expect_out_of_range: bool,
    ) -> Result<(), Violation> {
        self.step_to(now);
        let depth = device.queue_depth();
        let full = self.pending.len() >= depth;
        let answer = device.submit(now, request);
        let kind = match answer {
            Ok(()) if expect_out_of_range => Some(ViolationKind::AcceptedOutOfRange),
            Ok(()) => Some(ViolationKind::AcceptedBeyondQueueDepth),
            Err(DeviceError::OutOfRange { .. }) if expect_out_of_range => None,
            Err(DeviceError::QueueFull { .. }) if full => None,
            Err(DeviceError::QueueFull { .. }) => Some(ViolationKind::QueueFullBelowDepth),
            // A failed device refuses everything; the next real submission finds out too.
            Err(DeviceError::Failed { .. }) => None,
            Err(_) if expect_out_of_range => Some(ViolationKind::WrongRefusal),
            // A full device may check the request before its queue; a valid request refused
            // for another reason is caught when the driver submits it for real.
            Err(_) => None,
        };
        if let Some(kind) = kind {
            return Err(self.violation(
                kind,
                Some(request),
                format!(
                    "probe at {now} holding {} requests (queue_depth() {depth}) answered {:?}",
                    self.pending.len(),
                    answer
                ),
            ));
        }
        self.check_deadline_not_past(device, now, "a refused submission")
    }

    /// Advances the device to `now`, checks each completion it reports, and the deadline it
    /// announces afterwards.
    pub(crate) fn advance<D: Device + ?Sized>(
        &mut self,
        device: &mut D,
        now: SimTime,
        done: &mut Vec<Completion>,
    ) -> Result<(), Violation> {
        self.step_to(now);
        let announced = device.next_deadline();
        let from = done.len();
        device.advance(now, done);
        for c in &done[from..] {
            self.check_completion(c, now, announced)?;
        }
        let completed_any = done.len() > from;
        self.advances += 1;
        self.last_advance = Some(now);
        if let Some(d) = device.next_deadline() {
            if d <= now {
                return Err(self.violation(
                    ViolationKind::DeadlineWithoutProgress,
                    None,
                    format!(
                        "after advance({now}) next_deadline() is still {d}: a driver that \
                         advances to the announced deadline would never get past it"
                    ),
                ));
            }
        } else if let Some(p) = self.pending.values().next() {
            return Err(self.violation(
                ViolationKind::Stalled,
                Some(p.request),
                format!(
                    "after advance({now}) next_deadline() is None with {} accepted requests \
                     outstanding: they would never complete",
                    self.pending.len()
                ),
            ));
        }
        if completed_any || self.pending.is_empty() {
            self.idle_advances = 0;
        } else {
            self.idle_advances += 1;
            if self.idle_advances > self.stall_advances {
                let p = self.pending.values().next().expect("not empty");
                return Err(self.violation(
                    ViolationKind::Stalled,
                    Some(p.request),
                    format!(
                        "{} advance calls in a row up to {now} completed nothing with {} \
                         requests outstanding",
                        self.idle_advances,
                        self.pending.len()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// One completion reported by `advance(now)`; `announced` is the deadline the device gave
    /// just before that call.
    fn check_completion(
        &mut self,
        c: &Completion,
        now: SimTime,
        announced: Option<SimTime>,
    ) -> Result<(), Violation> {
        let pending = self.take_pending(c, now)?;
        let fail = |kind, detail| Err(self.violation(kind, Some(pending.request), detail));
        if let Err((kind, detail)) = completion_times(c, &pending.request, now) {
            return fail(kind, detail);
        }
        if let Err(detail) = completion_announced(c, now, announced) {
            return fail(ViolationKind::CompletionWithoutDeadline, detail);
        }
        if !self.allow_errors && !c.status.is_ok() {
            return fail(
                ViolationKind::ErrorStatus,
                format!(
                    "it completed with status {}; a model completes every request ok (errors \
                     come from a faults layer)",
                    c.status
                ),
            );
        }
        if let Some(last) = self.last_advance {
            if pending.advances_before < self.advances && c.finish <= last {
                return fail(
                    ViolationKind::ReportedLate,
                    format!(
                        "finished at {} but was not reported by advance({last}); it came \
                         from advance({now})",
                        c.finish
                    ),
                );
            }
        }
        if let Some((finish, sequence)) = self.last_reported {
            // A tie may leave submission order only for a request whose service began at the
            // very instant the other finished: a device serving one request at a time (a disk)
            // served it after the other, even if its service took no time.
            let served_after = c.service_start == c.finish;
            if c.finish < finish
                || (c.finish == finish && pending.sequence < sequence && !served_after)
            {
                return fail(
                    ViolationKind::OutOfOrder,
                    format!(
                        "reported (finish {}) after a completion that finished at {finish} \
                         and was submitted after it; completions come in finishing order, \
                         ties in submission order",
                        c.finish
                    ),
                );
            }
        }
        self.last_reported = Some((c.finish, pending.sequence));
        Ok(())
    }

    /// The accepted request `c` completes, now taken off the pending ones; a completion of a
    /// request completed before or never accepted is a violation.
    fn take_pending(&mut self, c: &Completion, now: SimTime) -> Result<Pending, Violation> {
        let id = c.request.id;
        let Some(pending) = self.pending.remove(&id) else {
            let (kind, what) = if self.completed.contains(&id) {
                (ViolationKind::CompletedTwice, "completed a second time")
            } else {
                (
                    ViolationKind::CompletedUnknown,
                    "completed a request it never accepted",
                )
            };
            return Err(self.violation(
                kind,
                Some(c.request),
                format!("{what} in advance({now}): {c:?}"),
            ));
        };
        self.completed.insert(id);
        Ok(pending)
    }

    /// A deadline is never in the past: the engine would have to go back in time to honour it.
    fn check_deadline_not_past<D: Device + ?Sized>(
        &self,
        device: &D,
        now: SimTime,
        after: &str,
    ) -> Result<(), Violation> {
        match device.next_deadline() {
            Some(d) if d < now => Err(self.violation(
                ViolationKind::DeadlineInPast,
                None,
                format!("after {after} at {now}, next_deadline() is {d}, in the past"),
            )),
            _ => Ok(()),
        }
    }
}

/// A completion of `request` reported by `advance(now)` carries the request unchanged, and
/// its service starts no earlier than its arrival and ends after it starts, by `now`.
fn completion_times(
    c: &Completion,
    request: &Request,
    now: SimTime,
) -> Result<(), (ViolationKind, String)> {
    if c.request != *request {
        return Err((
            ViolationKind::CompletionAltered,
            format!(
                "its completion carries a different request: {:?}",
                c.request
            ),
        ));
    }
    if c.service_start < request.arrival || c.finish < request.arrival {
        return Err((
            ViolationKind::BeforeArrival,
            format!(
                "service_start {} / finish {} before its arrival {}",
                c.service_start, c.finish, request.arrival
            ),
        ));
    }
    if c.finish < c.service_start {
        return Err((
            ViolationKind::FinishBeforeServiceStart,
            format!(
                "finish {} before service_start {}",
                c.finish, c.service_start
            ),
        ));
    }
    if c.finish > now {
        return Err((
            ViolationKind::FinishAfterNow,
            format!(
                "reported by advance({now}) with a later finish {}",
                c.finish
            ),
        ));
    }
    Ok(())
}

/// A completion reported by `advance(now)` was announced: `next_deadline()`, `announced`
/// before the call, was at or before its finish. Otherwise, why not.
fn completion_announced(
    c: &Completion,
    now: SimTime,
    announced: Option<SimTime>,
) -> Result<(), String> {
    match announced {
        Some(d) if d <= c.finish => Ok(()),
        Some(d) if d > now => Err(format!(
            "completed (finish {}) in advance({now}) although next_deadline() was {d}, after \
             that instant",
            c.finish
        )),
        Some(d) => Err(format!(
            "finished at {} although next_deadline() announced {d} as the earliest change",
            c.finish
        )),
        None => Err(format!(
            "completed (finish {}) in advance({now}) although next_deadline() was None",
            c.finish
        )),
    }
}
