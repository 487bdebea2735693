//! Host requests and their completions, as plain data.

use crate::time::{SimDuration, SimTime};
use std::fmt;

/// Bytes in the 512-byte sector that most trace formats address.
pub const SECTOR_BYTES: u64 = 512;

/// What the host asks the device to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Op {
    Read,
    Write,
    /// Discard / unmap / deallocate: the range's contents are no longer needed.
    Trim,
    /// Make every previously completed write durable. Flushes carry no address range.
    Flush,
}

impl Op {
    pub const ALL: [Op; 4] = [Op::Read, Op::Write, Op::Trim, Op::Flush];

    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::Trim => "trim",
            Op::Flush => "flush",
        }
    }

    /// Index into per-op arrays, in the order of [`Op::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One host request as the device sees it: a byte range, an operation and the instant it
/// arrived at the host interface. `id` is unique within a run and is echoed in its completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub id: u64,
    pub op: Op,
    pub offset_bytes: u64,
    pub len_bytes: u64,
    pub arrival: SimTime,
    /// The flow (tenant, application) the request belongs to, numbered from 0 in the order a
    /// multi-flow workload lists its flows; 0 for a workload of one flow. A host interface
    /// picks the request's submission queue and priority class by it; device models below the
    /// host interface ignore it.
    pub flow: u16,
}

impl Request {
    /// The first byte after the request's range.
    pub fn end_bytes(&self) -> u64 {
        self.offset_bytes + self.len_bytes
    }
}

/// A finished request. `service_start` is when the device began working on it (after any
/// queueing inside the device); `finish` is when the host sees it complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    pub request: Request,
    pub service_start: SimTime,
    pub finish: SimTime,
}

impl Completion {
    /// Response time: completion minus arrival.
    #[inline]
    pub fn latency(&self) -> SimDuration {
        self.finish.since(self.request.arrival)
    }
    /// Time spent waiting before service began.
    #[inline]
    pub fn queueing(&self) -> SimDuration {
        self.service_start.since(self.request.arrival)
    }
    /// Time from the start of service to completion.
    #[inline]
    pub fn service(&self) -> SimDuration {
        self.finish.since(self.service_start)
    }
}
