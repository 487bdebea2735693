//! A device model measured in virtual time: each request is submitted when the previous one
//! completed, so latencies are exactly the model's and a calibration of a model is
//! deterministic. Useful to fit a black-box model to a detailed one, and to test calibrate.

use super::file::sweep_point;
use super::{SweepPoint, Target, TargetError, TargetInfo, TargetKind};
use crate::plan::PlannedIo;
use std::sync::atomic::{AtomicBool, Ordering};
use storsim_core::{Completion, Device, Op, Request, SimTime};

pub struct ModelTarget {
    device: Box<dyn Device>,
    info: TargetInfo,
    now: SimTime,
    next_id: u64,
    done: Vec<Completion>,
}

impl ModelTarget {
    pub fn new(name: &str, device: Box<dyn Device>) -> Self {
        ModelTarget {
            info: TargetInfo {
                name: name.to_string(),
                kind: TargetKind::Model,
                size_bytes: device.capacity_bytes(),
                block_bytes: 512,
                direct_io: true,
                notes: Vec::new(),
            },
            device,
            now: SimTime::ZERO,
            next_id: 0,
            done: Vec::new(),
        }
    }

    /// Adds a note for the report about how the model was set up (its preconditioning).
    pub fn with_note(mut self, note: String) -> Self {
        self.info.notes.push(note);
        self
    }

    fn error(&self, message: String) -> TargetError {
        TargetError::Model {
            name: self.info.name.clone(),
            message,
        }
    }

    fn submit(
        &mut self,
        write: bool,
        offset_bytes: u64,
        len_bytes: u64,
    ) -> Result<u64, TargetError> {
        let id = self.next_id;
        self.next_id += 1;
        let request = Request {
            id,
            op: if write { Op::Write } else { Op::Read },
            offset_bytes,
            len_bytes,
            arrival: self.now,
            flow: 0,
        };
        self.device
            .submit(self.now, request)
            .map_err(|e| self.error(e.to_string()))?;
        Ok(id)
    }

    /// Advances the model to its next deadline and moves what completed into `done`.
    fn step(&mut self) -> Result<(), TargetError> {
        let Some(deadline) = self.device.next_deadline() else {
            return Err(self.error("the model holds a request but names no deadline".into()));
        };
        self.now = self.now.max(deadline);
        self.device.advance(self.now, &mut self.done);
        Ok(())
    }
}

impl Target for ModelTarget {
    fn info(&self) -> &TargetInfo {
        &self.info
    }

    fn io(&mut self, io: &PlannedIo) -> Result<u64, TargetError> {
        let start = self.now;
        let id = self.submit(io.write, io.offset_bytes, io.len_bytes)?;
        loop {
            if let Some(i) = self.done.iter().position(|c| c.request.id == id) {
                let c = self.done.swap_remove(i);
                self.now = self.now.max(c.finish);
                return Ok(c.finish.since(start).as_ns());
            }
            self.step()?;
        }
    }

    fn sweep(
        &mut self,
        write: bool,
        size_bytes: u64,
        depth: u32,
        offsets: &[u64],
        stop: &AtomicBool,
    ) -> Result<SweepPoint, TargetError> {
        let start = self.now;
        let depth = (depth as usize).min(self.device.queue_depth()).max(1);
        let mut arrivals = std::collections::HashMap::new();
        let (mut issued, mut completed, mut latency_sum_ns) = (0usize, 0u64, 0u64);
        self.done.clear();
        while completed < issued as u64 || (issued < offsets.len() && !stop.load(Ordering::Relaxed))
        {
            while issued < offsets.len() && arrivals.len() < depth && !stop.load(Ordering::Relaxed)
            {
                let id = self.submit(write, offsets[issued], size_bytes)?;
                arrivals.insert(id, self.now);
                issued += 1;
            }
            self.step()?;
            for c in self.done.drain(..) {
                if let Some(arrival) = arrivals.remove(&c.request.id) {
                    latency_sum_ns += c.finish.since(arrival).as_ns();
                    completed += 1;
                }
            }
        }
        Ok(sweep_point(
            write,
            size_bytes,
            depth as u32,
            completed,
            self.now.since(start).as_ns(),
            latency_sum_ns,
        ))
    }
}
