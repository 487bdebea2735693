//! Classifying requests into the four access patterns the black-box models are fitted on.

use storsim_core::{CounterDescriptor, Op, Request, Scope, Unit};

/// The patterns' short names in [`AccessPattern::ALL`]'s order: the keys of the models'
/// per-pattern counter families (`sr_requests`).
pub const PATTERNS: &[&str] = &["sr", "sw", "rr", "rw"];

/// Requests per access pattern, the first counters of every black-box model (the models share
/// this one and the trim and flush counters below, each listing its own between or after).
pub const PATTERN_REQUESTS: CounterDescriptor = CounterDescriptor::family(
    "{}_requests",
    Unit::Count,
    Scope::PerKey(PATTERNS),
    "Reads and writes of the access pattern (sequential or random read or write).",
);
/// Trim requests, as every black-box model counts them.
pub const TRIM_REQUESTS: CounterDescriptor =
    CounterDescriptor::new("trim_requests", Unit::Count, "Trim requests.");
/// Flush requests, as every black-box model counts them.
pub const FLUSH_REQUESTS: CounterDescriptor =
    CounterDescriptor::new("flush_requests", Unit::Count, "Flush requests.");

/// Sequential/random × read/write: the four patterns of the IBM fit table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AccessPattern {
    SequentialRead,
    SequentialWrite,
    RandomRead,
    RandomWrite,
}

impl AccessPattern {
    pub const ALL: [AccessPattern; 4] = [
        AccessPattern::SequentialRead,
        AccessPattern::SequentialWrite,
        AccessPattern::RandomRead,
        AccessPattern::RandomWrite,
    ];

    pub fn new(write: bool, sequential: bool) -> Self {
        match (write, sequential) {
            (false, true) => AccessPattern::SequentialRead,
            (true, true) => AccessPattern::SequentialWrite,
            (false, false) => AccessPattern::RandomRead,
            (true, false) => AccessPattern::RandomWrite,
        }
    }

    /// Short names used in device files and counters: `sr`, `sw`, `rr`, `rw`.
    pub fn short_name(self) -> &'static str {
        PATTERNS[self.index()]
    }

    pub fn index(self) -> usize {
        self as usize
    }

    pub fn is_write(self) -> bool {
        matches!(
            self,
            AccessPattern::SequentialWrite | AccessPattern::RandomWrite
        )
    }

    pub fn is_sequential(self) -> bool {
        matches!(
            self,
            AccessPattern::SequentialRead | AccessPattern::SequentialWrite
        )
    }
}

/// Which earlier request a request must continue to count as sequential.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SequentialDetect {
    /// It starts where the previous request (read or write) ended: the IBM simulator's
    /// "previous request" state and the Wisconsin emulator's "previous end offset".
    #[default]
    PreviousRequest,
    /// It starts where the previous request of the same direction ended, so an interleaved
    /// read stream and write stream are each recognised as sequential.
    PreviousSameDirection,
}

/// Remembers where the previous request(s) ended. Reads and writes are the only requests that
/// move it: trims and flushes do not break a sequential stream.
#[derive(Clone, Debug)]
pub struct SequentialTracker {
    detect: SequentialDetect,
    /// End offset of the previous read and previous write; `None` before the first one.
    last_end: [Option<u64>; 2],
    last_end_any: Option<u64>,
}

impl SequentialTracker {
    pub fn new(detect: SequentialDetect) -> Self {
        SequentialTracker {
            detect,
            last_end: [None, None],
            last_end_any: None,
        }
    }

    /// Classifies a read or write and records it as the previous request. Returns `None` for
    /// trims and flushes, which have no pattern.
    pub fn classify(&mut self, request: &Request) -> Option<AccessPattern> {
        let write = match request.op {
            Op::Read => false,
            Op::Write => true,
            Op::Trim | Op::Flush => return None,
        };
        let previous = match self.detect {
            SequentialDetect::PreviousRequest => self.last_end_any,
            SequentialDetect::PreviousSameDirection => self.last_end[write as usize],
        };
        let sequential = previous == Some(request.offset_bytes);
        let end = request.end_bytes();
        self.last_end[write as usize] = Some(end);
        self.last_end_any = Some(end);
        Some(AccessPattern::new(write, sequential))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storsim_core::SimTime;

    fn req(op: Op, offset_bytes: u64, len_bytes: u64) -> Request {
        Request {
            id: 0,
            op,
            offset_bytes,
            len_bytes,
            arrival: SimTime::ZERO,
            flow: 0,
        }
    }

    #[test]
    fn previous_request_mode_breaks_on_interleaving() {
        let mut t = SequentialTracker::new(SequentialDetect::PreviousRequest);
        assert_eq!(
            t.classify(&req(Op::Read, 0, 4096)),
            Some(AccessPattern::RandomRead)
        );
        assert_eq!(
            t.classify(&req(Op::Read, 4096, 4096)),
            Some(AccessPattern::SequentialRead)
        );
        assert_eq!(
            t.classify(&req(Op::Write, 1 << 20, 4096)),
            Some(AccessPattern::RandomWrite)
        );
        // The read stream continues, but the previous request was the write.
        assert_eq!(
            t.classify(&req(Op::Read, 8192, 4096)),
            Some(AccessPattern::RandomRead)
        );
        // Any direction counts: a write that continues the read is sequential.
        assert_eq!(
            t.classify(&req(Op::Write, 12288, 4096)),
            Some(AccessPattern::SequentialWrite)
        );
    }

    #[test]
    fn same_direction_mode_follows_each_stream() {
        let mut t = SequentialTracker::new(SequentialDetect::PreviousSameDirection);
        t.classify(&req(Op::Read, 0, 4096));
        t.classify(&req(Op::Write, 1 << 20, 4096));
        assert_eq!(
            t.classify(&req(Op::Read, 4096, 4096)),
            Some(AccessPattern::SequentialRead)
        );
        assert_eq!(
            t.classify(&req(Op::Write, (1 << 20) + 4096, 4096)),
            Some(AccessPattern::SequentialWrite)
        );
    }

    #[test]
    fn trims_and_flushes_neither_classify_nor_break_streams() {
        let mut t = SequentialTracker::new(SequentialDetect::PreviousRequest);
        t.classify(&req(Op::Read, 0, 4096));
        assert_eq!(t.classify(&req(Op::Flush, 0, 0)), None);
        assert_eq!(t.classify(&req(Op::Trim, 1 << 30, 4096)), None);
        assert_eq!(
            t.classify(&req(Op::Read, 4096, 4096)),
            Some(AccessPattern::SequentialRead)
        );
    }
}
