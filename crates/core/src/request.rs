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

/// How a request ended: done, or the error the host sees. Device models complete every request
/// [`Status::Ok`]; errors come from a faults layer (`storsim-faults`) or a composite passing a
/// child's error up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Status {
    /// The request did what it asked.
    #[default]
    Ok,
    /// An unrecoverable media error: the data could not be read (a read's EIO).
    MediaError,
    /// The data could not be written, or a flush could not make it durable (a write's or
    /// flush's EIO).
    WriteError,
    /// The device has no space left for the write (ENOSPC, a thin-provisioned device full).
    NoSpace,
    /// The device never answered: the host gave up after its timeout (ETIMEDOUT).
    Timeout,
    /// The device has become read-only and refuses writes, trims and flushes (EROFS).
    ReadOnly,
    /// The whole device has failed and answers every request with an error (EIO).
    DeviceFailed,
}

impl Status {
    /// Every error kind, in the order of [`Status::error_index`].
    pub const ERRORS: [Status; 6] = [
        Status::MediaError,
        Status::WriteError,
        Status::NoSpace,
        Status::Timeout,
        Status::ReadOnly,
        Status::DeviceFailed,
    ];

    /// Whether the request succeeded.
    #[inline]
    pub fn is_ok(self) -> bool {
        self == Status::Ok
    }

    /// The kind's name as results and device files write it (`ok`, `media_error`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::MediaError => "media_error",
            Status::WriteError => "write_error",
            Status::NoSpace => "no_space",
            Status::Timeout => "timeout",
            Status::ReadOnly => "read_only",
            Status::DeviceFailed => "device_failed",
        }
    }

    /// The status named `name` (as [`Status::name`] writes it).
    pub fn from_name(name: &str) -> Option<Status> {
        std::iter::once(Status::Ok)
            .chain(Status::ERRORS)
            .find(|s| s.name() == name)
    }

    /// Index into per-kind error arrays, in the order of [`Status::ERRORS`]; `None` for `Ok`.
    #[inline]
    pub fn error_index(self) -> Option<usize> {
        match self {
            Status::Ok => None,
            other => Some(other as usize - 1),
        }
    }

    /// The Linux errno a host's system call returns for this status (0 for `Ok`). These are
    /// POSIX's numbers as Linux assigns them on every architecture storsim runs on; front ends
    /// map them onto their protocol's own error codes.
    pub fn errno(self) -> i32 {
        match self {
            Status::Ok => 0,
            Status::MediaError | Status::WriteError | Status::DeviceFailed => 5, // EIO
            Status::NoSpace => 28,                                               // ENOSPC
            Status::ReadOnly => 30,                                              // EROFS
            Status::Timeout => 110,                                              // ETIMEDOUT
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A finished request. `service_start` is when the device began working on it (after any
/// queueing inside the device); `finish` is when the host sees it complete; `status` says
/// whether it succeeded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    pub request: Request,
    pub service_start: SimTime,
    pub finish: SimTime,
    /// How the request ended. Models answer [`Status::Ok`]; a faults layer sets the errors.
    pub status: Status,
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
