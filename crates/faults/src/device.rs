//! The faults layer as a device: [`FaultsDevice`] and the handle that changes its rules at run
//! time, [`FaultControl`].

use crate::{Delay, FaultKind, FaultPlan, FaultRule, FAULT_KINDS};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use storsim_core::{
    check_range, BlockWear, Completion, CounterDescriptor, Described, Device, DeviceCounter,
    DeviceError, DevicePart, EventQueue, Op, Prng, Request, Scope, SimDuration, SimTime, Status,
    Unit, SECTOR_BYTES,
};

/// Changes a running [`FaultsDevice`]'s rules from another thread (the emulator's control
/// socket). The device picks the change up at its next `submit`, so only the thread that
/// drives it ever touches the device. Clones share one set of rules; two handles are equal
/// when they are clones.
#[derive(Clone, Default)]
pub struct FaultControl(Arc<ControlShared>);

#[derive(Default)]
struct ControlShared {
    rules: Mutex<Vec<FaultRule>>,
    /// Bumped at every change; the device compares it with the generation it last took.
    generation: AtomicU64,
}

impl FaultControl {
    /// A handle with no rules.
    pub fn new() -> Self {
        FaultControl::default()
    }

    /// Adds `rule` after the rules in force (each starts afresh: its `from_request` and
    /// `from_ns` count from the start of the run).
    pub fn add(&self, rule: FaultRule) {
        self.change(|rules| rules.push(rule));
    }

    /// Removes every rule: the device behaves as the model alone from its next request on
    /// (requests already hanging still time out).
    pub fn clear(&self) {
        self.change(Vec::clear);
    }

    /// The rules in force, in order.
    pub fn rules(&self) -> Vec<FaultRule> {
        self.0
            .rules
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Replaces the rules without announcing a change: what the device starts with.
    fn set_initial(&self, rules: &[FaultRule]) {
        *self.0.rules.lock().unwrap_or_else(|e| e.into_inner()) = rules.to_vec();
    }

    fn change(&self, f: impl FnOnce(&mut Vec<FaultRule>)) {
        let mut rules = self.0.rules.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut rules);
        self.0.generation.fetch_add(1, Ordering::Release);
    }

    fn generation(&self) -> u64 {
        self.0.generation.load(Ordering::Acquire)
    }
}

impl PartialEq for FaultControl {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl fmt::Debug for FaultControl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FaultControl")
            .field("rules", &self.rules())
            .finish()
    }
}

/// A rule with what the run has done to it.
#[derive(Clone)]
struct Active {
    rule: FaultRule,
    /// When the rule became active (its first eligible request's instant).
    started: Option<SimTime>,
}

/// What the layer decided for a request it passed to the model.
#[derive(Clone, Copy)]
struct Fate {
    status: Status,
    delay_ns: u64,
    /// When the host gives up on the request: a spike that would hold it past this ends in a
    /// timeout there.
    timeout: SimTime,
}

/// A device wrapped in a faults layer (see the crate documentation). Its name, capacity,
/// queue depth and wear are the model's; its counters are the model's followed by the
/// layer's own (`faults_requests` and `faults_injected_KIND` for every [`FaultKind`]).
pub struct FaultsDevice {
    inner: Box<dyn Device>,
    rules: Vec<Active>,
    prng: Prng,
    host_timeout: SimDuration,
    control: Option<FaultControl>,
    generation: u64,
    /// Requests accepted and not yet completed, whether the model or the layer holds them.
    held: usize,
    /// Requests given so far (the rules' `from_request` counts them).
    seen: u64,
    /// The faults decided for requests now in the model, by id.
    fates: BTreeMap<u64, Fate>,
    /// Each held request's submission order, by id, for ordering completions at one instant;
    /// requests submitted while there were no rules are not in it and, being older, sort
    /// first.
    order: BTreeMap<u64, u64>,
    /// Completions the layer makes itself (immediate errors, timeouts) or holds back (spikes).
    local: EventQueue<Completion>,
    /// Faults injected, by kind, in the order of [`FaultKind::ALL`].
    injected: [u64; FaultKind::ALL.len()],
    scratch: Vec<Completion>,
}

impl FaultsDevice {
    /// `inner` with `plan`'s faults. With a control handle in the plan, the handle's rules
    /// become the plan's and later changes through it reach the device.
    pub fn new(inner: Box<dyn Device>, plan: &FaultPlan) -> FaultsDevice {
        let depth = inner.queue_depth().max(1);
        let (rules, generation) = match &plan.control {
            Some(control) => {
                control.set_initial(&plan.rules);
                (plan.rules.clone(), control.generation())
            }
            None => (plan.rules.clone(), 0),
        };
        FaultsDevice {
            inner,
            rules: rules
                .into_iter()
                .map(|rule| Active {
                    rule,
                    started: None,
                })
                .collect(),
            prng: Prng::new(plan.seed).fork(0xfa17),
            host_timeout: SimDuration(plan.host_timeout_ns),
            control: plan.control.clone(),
            generation,
            held: 0,
            seen: 0,
            fates: BTreeMap::new(),
            order: BTreeMap::new(),
            local: EventQueue::with_capacity(depth),
            injected: [0; FaultKind::ALL.len()],
            scratch: Vec::with_capacity(depth),
        }
    }

    /// Faults injected so far of `kind`.
    pub fn injected(&self, kind: FaultKind) -> u64 {
        self.injected[kind as usize]
    }

    /// Takes the control socket's rules if they changed since the last request.
    fn refresh(&mut self) {
        let Some(control) = &self.control else {
            return;
        };
        let generation = control.generation();
        if generation != self.generation {
            self.generation = generation;
            self.rules = control
                .rules()
                .into_iter()
                .map(|rule| Active {
                    rule,
                    started: None,
                })
                .collect();
        }
    }

    /// The fault (if any) and the spike delay for request number `number` arriving at `now`.
    /// Changes the rules' start instants and the draws, which the caller undoes if the
    /// request is refused.
    fn decide(&mut self, now: SimTime, request: &Request, number: u64) -> (Option<FaultKind>, u64) {
        let mut kind = None;
        let mut delay_ns = 0u64;
        for active in &mut self.rules {
            let rule = &active.rule;
            if !rule.kind.applies_to(request.op) || rule.op.is_some_and(|op| op != request.op) {
                continue;
            }
            if kind.is_some() && rule.kind != FaultKind::LatencySpike {
                continue;
            }
            let started = match active.started {
                Some(t) => t,
                None if number >= rule.from_request && now.as_ns() >= rule.from_ns => {
                    active.started = Some(now);
                    now
                }
                None => continue,
            };
            if rule
                .duration_ns
                .is_some_and(|d| now.as_ns() >= started.as_ns().saturating_add(d))
            {
                continue;
            }
            if let Some((start, end)) = rule.sectors {
                let first = request.offset_bytes / SECTOR_BYTES;
                let last = request.end_bytes().div_ceil(SECTOR_BYTES);
                if request.op == Op::Flush || last <= start || first >= end {
                    continue;
                }
            }
            if rule.rate_per_million < 1_000_000
                && self.prng.below(1_000_000) >= u64::from(rule.rate_per_million)
            {
                continue;
            }
            match (rule.kind, rule.delay) {
                (FaultKind::LatencySpike, Some(delay)) => {
                    delay_ns = delay_ns.saturating_add(draw(&mut self.prng, delay));
                }
                (k, _) => kind = Some(k),
            }
        }
        (kind, delay_ns)
    }
}

/// A spike's delay drawn from `delay`.
fn draw(prng: &mut Prng, delay: Delay) -> u64 {
    match delay {
        Delay::Fixed { ns } => ns,
        Delay::Uniform { min_ns, max_ns } => min_ns + prng.below(max_ns - min_ns + 1),
        Delay::Exponential { mean_ns } => prng.exponential(mean_ns as f64).round() as u64,
    }
}

/// The layer's own counters, listed after the device's under it.
pub const COUNTERS: &[CounterDescriptor] = &[
    CounterDescriptor::new(
        "faults_requests",
        Unit::Count,
        "Requests the faults layer saw.",
    ),
    CounterDescriptor::family(
        "faults_injected_{}",
        Unit::Count,
        Scope::PerKey(FAULT_KINDS),
        "Faults of the kind injected.",
    ),
];

impl Device for FaultsDevice {
    fn counter_descriptors(&self) -> Vec<Described> {
        let mut out = self.inner.counter_descriptors();
        out.extend(Described::all(COUNTERS));
        out
    }

    fn model_name(&self) -> &'static str {
        self.inner.model_name()
    }

    fn capacity_bytes(&self) -> u64 {
        self.inner.capacity_bytes()
    }

    fn queue_depth(&self) -> usize {
        self.inner.queue_depth()
    }

    fn submit(&mut self, now: SimTime, request: Request) -> Result<(), DeviceError> {
        self.refresh();
        if request.op != Op::Flush {
            check_range(&request, self.capacity_bytes())?;
        }
        let depth = self.queue_depth();
        if self.held >= depth {
            return Err(DeviceError::QueueFull { queue_depth: depth });
        }
        if self.rules.is_empty() {
            // No faults (the emulator's layer before any `fault add`): the model alone, with
            // no bookkeeping, as it holds no request the layer must order against.
            self.inner.submit(now, request)?;
            self.seen += 1;
            self.held += 1;
            return Ok(());
        }
        // A refusal must leave the layer as it was: keep what deciding changes.
        let saved_prng = self.prng.clone();
        let saved_starts: Vec<Option<SimTime>> = self.rules.iter().map(|a| a.started).collect();
        let number = self.seen + 1;
        let (kind, delay_ns) = self.decide(now, &request, number);
        let immediate = |status| Completion {
            request,
            service_start: now,
            finish: now,
            status,
        };
        match kind {
            Some(k @ (FaultKind::NoSpace | FaultKind::ReadOnly | FaultKind::Fail)) => {
                let _ = self.local.push(now, immediate(k.status()));
            }
            Some(FaultKind::Hang) => {
                let timeout = now + self.host_timeout;
                let _ = self.local.push(
                    timeout,
                    Completion {
                        finish: timeout,
                        ..immediate(Status::Timeout)
                    },
                );
            }
            kind => {
                if let Err(error) = self.inner.submit(now, request) {
                    self.prng = saved_prng;
                    for (active, started) in self.rules.iter_mut().zip(saved_starts) {
                        active.started = started;
                    }
                    return Err(error);
                }
                let status = kind.map_or(Status::Ok, FaultKind::status);
                if !status.is_ok() || delay_ns > 0 {
                    self.fates.insert(
                        request.id,
                        Fate {
                            status,
                            delay_ns,
                            timeout: now + self.host_timeout,
                        },
                    );
                }
                if delay_ns > 0 {
                    self.injected[FaultKind::LatencySpike as usize] += 1;
                }
            }
        }
        if let Some(k) = kind {
            self.injected[k as usize] += 1;
        }
        self.seen = number;
        self.held += 1;
        self.order.insert(request.id, number);
        Ok(())
    }

    fn next_deadline(&self) -> Option<SimTime> {
        match (self.inner.next_deadline(), self.local.peek_time()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn advance(&mut self, now: SimTime, done: &mut Vec<Completion>) {
        if self.fates.is_empty() && self.local.is_empty() {
            // Nothing the layer decided is outstanding: the model's completions, as they are.
            let before = done.len();
            self.inner.advance(now, done);
            let finished = done.len() - before;
            self.held -= finished;
            if !self.order.is_empty() {
                for c in &done[before..] {
                    self.order.remove(&c.request.id);
                }
            }
            return;
        }
        let mut out = std::mem::take(&mut self.scratch);
        self.inner.advance(now, &mut out);
        let mut i = 0;
        while i < out.len() {
            let c = &mut out[i];
            if let Some(fate) = self.fates.remove(&c.request.id) {
                c.status = fate.status;
                if fate.delay_ns > 0 {
                    let mut held_back = out.remove(i);
                    let model_finish = held_back.finish;
                    held_back.finish += SimDuration(fate.delay_ns);
                    // The host stops waiting at its timeout; never before the model's own
                    // finish, which the model's deadline already announced.
                    let gives_up = fate.timeout.max(model_finish);
                    if held_back.finish > gives_up {
                        held_back.finish = gives_up;
                        held_back.status = Status::Timeout;
                    }
                    // Each held request is in the queue at most once, within its depth.
                    let _ = self.local.push(held_back.finish, held_back);
                    continue;
                }
            }
            i += 1;
        }
        while let Some((_, c)) = self.local.pop_due(now) {
            out.push(c);
        }
        if !out.is_empty() {
            let order = &self.order;
            out.sort_by_key(|c| (c.finish, order.get(&c.request.id).copied()));
            for c in &out {
                self.order.remove(&c.request.id);
            }
            self.held -= out.len();
            done.append(&mut out);
        }
        self.scratch = out;
    }

    fn counters(&self) -> Vec<DeviceCounter> {
        let mut counters = self.inner.counters();
        counters.push(DeviceCounter::new("faults_requests", self.seen as f64));
        for kind in FaultKind::ALL {
            counters.push(DeviceCounter::new(
                format!("faults_injected_{}", kind.name()),
                self.injected[kind as usize] as f64,
            ));
        }
        counters
    }

    fn counter_values(&self, values: &mut Vec<f64>) {
        self.inner.counter_values(values);
        values.push(self.seen as f64);
        values.extend(self.injected.iter().map(|&n| n as f64));
    }

    fn prefetch(&self, request: &Request) {
        self.inner.prefetch(request)
    }

    fn parts(&self) -> Vec<DevicePart> {
        self.inner.parts()
    }
    fn block_wear(&self) -> Vec<BlockWear> {
        self.inner.block_wear()
    }
}

#[cfg(test)]
mod counter_docs {
    /// docs/faults.md lists exactly the layer's counters (`STORSIM_BLESS_DOCS=1` rewrites it).
    #[test]
    fn the_page_lists_exactly_the_descriptors() {
        let tables = storsim_core::conformance::counter_tables(&[("faults", super::COUNTERS)]);
        storsim_testenv::check_counter_tables("docs/faults.md", &tables).unwrap();
    }
}
