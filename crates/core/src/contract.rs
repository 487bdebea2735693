//! The [`Device`](crate::Device) contract as a driver checks it while it runs: the engine and
//! the emulator's pacing thread both drive models through a [`ContractCheck`], so that a model
//! that breaks its promises is caught by the same rules, and named in the same words, whoever
//! drives it.
//!
//! It checks what a driver must rely on to stay correct: a completion is of a request the
//! device holds, carries that request unchanged, keeps `arrival <= service_start <= finish <=
//! now` and comes no earlier than the completion before it; a deadline is never in the past,
//! and one that stays at the instant the device was just advanced to would hold the driver
//! there for ever; a device never holds more than its queue depth. The conformance kit
//! ([`crate::conformance`]) checks the whole contract, more slowly, in tests.
//!
//! Every check is a few comparisons and one probe of a table sized once from the queue depth:
//! nothing is allocated per request, so the engine's loop can afford it at every event.

use crate::request::{Completion, Request};
use crate::time::SimTime;
use crate::QUEUE_DEPTH_MAX;
use std::fmt;

/// A broken promise of the `Device` contract, as a driver meets it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ContractError {
    /// `advance` reported a request the device does not hold: one it was never given, or one
    /// it completed already. `outstanding` is how many requests it did hold.
    UnknownCompletion { id: u64, outstanding: usize },
    /// A completion carries another request than the one the device was given under its id.
    Altered { given: Request, reported: Request },
    /// A completion's instants are out of order: they must keep `arrival <= service_start <=
    /// finish <= now`, `now` being the instant of the `advance` that reported it.
    CompletionTimes {
        id: u64,
        arrival: SimTime,
        service_start: SimTime,
        finish: SimTime,
        now: SimTime,
    },
    /// A completion finished before the one reported ahead of it: completions come in
    /// finishing order.
    OutOfOrder {
        id: u64,
        finish: SimTime,
        previous: SimTime,
    },
    /// The device's next deadline is before the present.
    DeadlineInPast { deadline: SimTime, now: SimTime },
    /// After being advanced to `now`, and given nothing since, the device's next deadline is
    /// still `now`: a driver that moves to its deadlines would never get past it.
    DeadlineWithoutProgress { now: SimTime },
    /// The device holds requests (or refused waiting ones as full) and announces no deadline:
    /// nothing will ever change.
    Stalled { outstanding: usize, waiting: usize },
    /// The device accepted a request while it already held its queue depth.
    BeyondQueueDepth { id: u64, depth: usize },
}

impl fmt::Display for ContractError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ContractError::UnknownCompletion { id, outstanding: 0 } => write!(
                f,
                "the device completed request {id} with no request outstanding"
            ),
            ContractError::UnknownCompletion { id, outstanding } => write!(
                f,
                "the device completed request {id}, which it was never given or had completed \
                 already ({outstanding} requests outstanding)"
            ),
            ContractError::Altered { given, reported } => write!(
                f,
                "the device completed request {} as another request: it was given {given:?} \
                 and reported {reported:?}",
                given.id
            ),
            ContractError::CompletionTimes {
                id,
                arrival,
                service_start,
                finish,
                now,
            } => write!(
                f,
                "request {id} broke the completion contract: arrival {arrival}, service start \
                 {service_start}, finish {finish}, now {now}"
            ),
            ContractError::OutOfOrder {
                id,
                finish,
                previous,
            } => write!(
                f,
                "request {id} completed out of order: it finished at {finish}, before the \
                 completion reported ahead of it (finish {previous})"
            ),
            ContractError::DeadlineInPast { deadline, now } => write!(
                f,
                "the device's next deadline {deadline} is before now {now}"
            ),
            ContractError::DeadlineWithoutProgress { now } => write!(
                f,
                "the device stalled: advanced to {now}, its next deadline is still {now}, so it \
                 would never get past that instant"
            ),
            ContractError::Stalled {
                outstanding,
                waiting,
            } => write!(
                f,
                "the device stalled: {outstanding} requests outstanding, {waiting} waiting, and \
                 no deadline"
            ),
            ContractError::BeyondQueueDepth { id, depth } => write!(
                f,
                "the device accepted request {id} while holding {depth} requests, its queue depth"
            ),
        }
    }
}

impl std::error::Error for ContractError {}

/// The requests one device holds and what it last did, checked at every call a driver makes.
///
/// The requests are kept in a table indexed by the id's low bits, at least twice as large as
/// the queue depth, with the rare request whose place is taken kept in a short list beside it:
/// ids given out one after another land in places of their own, so a submission and a
/// completion each touch one place. (Linear probing cost bench2g 4 % more CPU time: the
/// requests in flight fill consecutive places, so every removal scanned the whole run of
/// them for an entry to move back.)
#[derive(Clone, Debug)]
pub struct ContractCheck {
    depth: usize,
    table: Vec<Option<Request>>,
    mask: usize,
    /// The requests whose place in `table` was taken when they came; at most `depth`.
    overflow: Vec<Request>,
    held: usize,
    /// The finish of the last completion reported.
    last_finish: SimTime,
    /// The instant of the last `advance`, while nothing has been given to the device since:
    /// its deadline must then be later.
    idle_advance: Option<SimTime>,
}

impl ContractCheck {
    /// A check for a device with room for `queue_depth` requests (at least one is assumed, as
    /// drivers do).
    pub fn new(queue_depth: usize) -> Self {
        let depth = queue_depth.max(1);
        // The table starts at twice the depth, up to twice the largest depth the project
        // accepts; a device claiming more grows it as it fills (`insert`), never per request.
        let size = (depth.min(QUEUE_DEPTH_MAX as usize) * 2).next_power_of_two();
        ContractCheck {
            depth,
            table: vec![None; size],
            mask: size - 1,
            overflow: Vec::new(),
            held: 0,
            last_finish: SimTime::ZERO,
            idle_advance: None,
        }
    }

    /// The requests the device holds: accepted and not yet completed.
    pub fn outstanding(&self) -> usize {
        self.held
    }

    /// The device accepted `request`.
    #[inline]
    pub fn submitted(&mut self, request: &Request) -> Result<(), ContractError> {
        if self.held >= self.depth {
            return Err(ContractError::BeyondQueueDepth {
                id: request.id,
                depth: self.depth,
            });
        }
        self.idle_advance = None;
        self.insert(*request);
        Ok(())
    }

    /// The device was advanced to `now`; its completions follow ([`ContractCheck::completed`]).
    #[inline]
    pub fn advanced(&mut self, now: SimTime) {
        self.idle_advance = Some(now);
    }

    /// The device reported `completion` from `advance(now)`: the request leaves the device.
    #[inline]
    pub fn completed(
        &mut self,
        completion: &Completion,
        now: SimTime,
    ) -> Result<(), ContractError> {
        let reported = &completion.request;
        let Some(given) = self.remove(reported.id) else {
            return Err(ContractError::UnknownCompletion {
                id: reported.id,
                outstanding: self.held,
            });
        };
        if given != *reported {
            return Err(ContractError::Altered {
                given,
                reported: *reported,
            });
        }
        if !(reported.arrival <= completion.service_start
            && completion.service_start <= completion.finish
            && completion.finish <= now)
        {
            return Err(ContractError::CompletionTimes {
                id: reported.id,
                arrival: reported.arrival,
                service_start: completion.service_start,
                finish: completion.finish,
                now,
            });
        }
        if completion.finish < self.last_finish {
            return Err(ContractError::OutOfOrder {
                id: reported.id,
                finish: completion.finish,
                previous: self.last_finish,
            });
        }
        self.last_finish = completion.finish;
        Ok(())
    }

    /// The device announces `deadline` at `now`: it may not be in the past, nor still at the
    /// instant the device was just advanced to with nothing given to it since. `None` is left
    /// to the driver, which alone knows whether it has anything else to wait for
    /// ([`ContractCheck::stalled`]).
    #[inline]
    pub fn deadline(&self, deadline: Option<SimTime>, now: SimTime) -> Result<(), ContractError> {
        match deadline {
            Some(deadline) if deadline < now => {
                Err(ContractError::DeadlineInPast { deadline, now })
            }
            Some(deadline) if self.idle_advance == Some(deadline) => {
                Err(ContractError::DeadlineWithoutProgress { now: deadline })
            }
            _ => Ok(()),
        }
    }

    /// The error of a device with no deadline that holds requests, or refused the `waiting`
    /// ones as full: the driver has nothing to wait for.
    pub fn stalled(&self, waiting: usize) -> ContractError {
        ContractError::Stalled {
            outstanding: self.held,
            waiting,
        }
    }

    fn insert(&mut self, request: Request) {
        if (self.held + 1) * 2 > self.table.len() {
            self.grow();
        }
        let slot = &mut self.table[request.id as usize & self.mask];
        if slot.is_none() {
            *slot = Some(request);
        } else {
            self.overflow.push(request);
        }
        self.held += 1;
    }

    #[inline]
    fn remove(&mut self, id: u64) -> Option<Request> {
        let slot = &mut self.table[id as usize & self.mask];
        let found = match slot {
            Some(r) if r.id == id => slot.take(),
            _ => {
                let at = self.overflow.iter().position(|r| r.id == id)?;
                Some(self.overflow.swap_remove(at))
            }
        };
        self.held -= 1;
        found
    }

    #[cold]
    fn grow(&mut self) {
        let size = self.table.len() * 2;
        let mut requests: Vec<Request> = std::mem::take(&mut self.table)
            .into_iter()
            .flatten()
            .collect();
        requests.append(&mut self.overflow);
        self.table = vec![None; size];
        self.mask = size - 1;
        self.held = 0;
        for request in requests {
            self.insert(request);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{Op, Status};
    use crate::Prng;
    use std::collections::BTreeMap;

    fn request(id: u64, arrival: u64) -> Request {
        Request {
            id,
            op: Op::Read,
            offset_bytes: id.wrapping_mul(4096),
            len_bytes: 4096,
            arrival: SimTime(arrival),
            flow: 0,
        }
    }

    fn completion(request: Request, start: u64, finish: u64) -> Completion {
        Completion {
            request,
            service_start: SimTime(start),
            finish: SimTime(finish),
            status: Status::Ok,
        }
    }

    #[test]
    fn the_table_agrees_with_a_map_through_random_submissions_and_completions() {
        // Ids that collide in the table (multiples of its size, far-apart stragglers) as well as
        // consecutive ones, so that the list beside the table is exercised.
        for seed in 0..20u64 {
            let mut rng = Prng::new(seed);
            let depth = 1 + rng.below(40) as usize;
            let mut check = ContractCheck::new(depth);
            let mut shadow: BTreeMap<u64, Request> = BTreeMap::new();
            let mut next = 0u64;
            for _ in 0..5_000 {
                let give = shadow.len() < depth && (shadow.is_empty() || rng.below(2) == 0);
                if give {
                    let id = match rng.below(3) {
                        0 => next,
                        1 => next * 64,
                        _ => next + (rng.below(4) << 20),
                    };
                    next += 1;
                    if shadow.contains_key(&id) {
                        continue;
                    }
                    let r = request(id, 0);
                    check.submitted(&r).unwrap();
                    shadow.insert(id, r);
                } else {
                    let nth = rng.below(shadow.len() as u64) as usize;
                    let id = *shadow.keys().nth(nth).unwrap();
                    let r = shadow.remove(&id).unwrap();
                    check.completed(&completion(r, 0, 0), SimTime(0)).unwrap();
                }
                assert_eq!(check.outstanding(), shadow.len(), "seed {seed}");
                let unknown = completion(request(u64::MAX - 1, 0), 0, 0);
                assert!(
                    matches!(
                        check.clone().completed(&unknown, SimTime(0)),
                        Err(ContractError::UnknownCompletion { .. })
                    ),
                    "seed {seed}"
                );
            }
        }
    }

    #[test]
    fn a_request_completes_once() {
        let mut check = ContractCheck::new(4);
        let r = request(7, 10);
        check.submitted(&r).unwrap();
        check
            .completed(&completion(r, 10, 20), SimTime(20))
            .unwrap();
        let again = check.completed(&completion(r, 10, 20), SimTime(20));
        assert_eq!(
            again,
            Err(ContractError::UnknownCompletion {
                id: 7,
                outstanding: 0
            })
        );
        assert!(again
            .unwrap_err()
            .to_string()
            .contains("completed request 7 with no request outstanding"));
    }

    #[test]
    fn each_broken_promise_is_named() {
        let mut check = ContractCheck::new(2);
        let (a, b) = (request(1, 10), request(2, 10));
        check.submitted(&a).unwrap();
        check.submitted(&b).unwrap();
        assert_eq!(
            check.submitted(&request(3, 10)),
            Err(ContractError::BeyondQueueDepth { id: 3, depth: 2 })
        );
        let mut altered = b;
        altered.len_bytes = 512;
        assert!(matches!(
            check
                .clone()
                .completed(&completion(altered, 10, 20), SimTime(20)),
            Err(ContractError::Altered { .. })
        ));
        for (start, finish, now) in [(9, 20, 20), (21, 20, 30), (10, 31, 30)] {
            let e = check
                .clone()
                .completed(&completion(a, start, finish), SimTime(now))
                .unwrap_err();
            assert!(
                e.to_string().contains("broke the completion contract"),
                "{e}"
            );
        }
        check
            .completed(&completion(a, 10, 25), SimTime(30))
            .unwrap();
        assert_eq!(
            check.completed(&completion(b, 10, 24), SimTime(30)),
            Err(ContractError::OutOfOrder {
                id: 2,
                finish: SimTime(24),
                previous: SimTime(25)
            })
        );
    }

    #[test]
    fn a_deadline_in_the_past_or_stuck_at_the_last_advance_is_refused() {
        let mut check = ContractCheck::new(1);
        check.submitted(&request(0, 0)).unwrap();
        assert_eq!(check.deadline(Some(SimTime(5)), SimTime(5)), Ok(()));
        assert!(check
            .deadline(Some(SimTime(4)), SimTime(5))
            .unwrap_err()
            .to_string()
            .contains("before now"));
        check.advanced(SimTime(5));
        assert_eq!(
            check.deadline(Some(SimTime(5)), SimTime(5)),
            Err(ContractError::DeadlineWithoutProgress { now: SimTime(5) })
        );
        assert_eq!(check.deadline(Some(SimTime(6)), SimTime(5)), Ok(()));
        assert_eq!(check.deadline(None, SimTime(5)), Ok(()));
        // A request given at the same instant may be due at once.
        check
            .completed(&completion(request(0, 0), 0, 5), SimTime(5))
            .unwrap();
        check.submitted(&request(1, 5)).unwrap();
        assert_eq!(check.deadline(Some(SimTime(5)), SimTime(5)), Ok(()));
        assert!(check.stalled(3).to_string().contains("stalled"));
    }
}
