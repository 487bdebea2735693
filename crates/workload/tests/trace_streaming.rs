//! Parsing streams: the heap stays flat however many lines pass through.
//!
//! A reader generates an MQSim trace on the fly, so no trace is ever held in memory or on disk,
//! and a counting allocator records the peak of live heap bytes while the records are consumed.
//! Parsing a hundred times more lines must not raise that peak. The same holds for a file read
//! by `open` on its parse thread (the allocator counts every thread's allocations): the
//! records cross to the consumer in batches through a bounded channel, so a consumer that
//! falls behind holds the parser back instead of letting batches pile up. This file holds a
//! single test so that no other test allocates while it measures.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use storsim_workload::trace::{open, open_reader, DeviceSelection, TraceFormat, TraceOptions};
use tempfile::TempPath;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every allocation and deallocation is System's, with the caller's own layout, so
// Counting keeps all of GlobalAlloc's promises exactly as System does; the counting beside
// it only touches atomics and never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: passed on from our caller, who promises a layout of non-zero size.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: passed on from our caller, who promises that `ptr` came from this allocator,
        // that is from System.alloc above, with this same layout.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Generates `lines` lines of an MQSim trace, a chunk at a time.
struct Generator {
    lines: u64,
    next: u64,
    pending: Vec<u8>,
    at: usize,
}

impl Generator {
    fn new(lines: u64) -> Self {
        Generator {
            lines,
            next: 0,
            pending: Vec::with_capacity(64),
            at: 0,
        }
    }
}

impl Read for Generator {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.at == self.pending.len() {
            if self.next == self.lines {
                return Ok(0);
            }
            let i = self.next;
            self.next += 1;
            self.pending.clear();
            let line = format!(
                "{} {} {} {} {}\n",
                i * 1000,
                i % 4,
                (i * 7919) % 1_000_000,
                8,
                i % 2
            );
            self.pending.extend_from_slice(line.as_bytes());
            self.at = 0;
        }
        let n = buf.len().min(self.pending.len() - self.at);
        buf[..n].copy_from_slice(&self.pending[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// Parses `lines` generated lines and returns the growth of the heap's peak above the live heap
/// before opening, in bytes.
fn peak_growth(lines: u64) -> usize {
    let opts = TraceOptions {
        format: Some(TraceFormat::named("mqsim")),
        devices: DeviceSelection::Overlay,
        ..TraceOptions::default()
    };
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let reader = BufReader::with_capacity(64 * 1024, Generator::new(lines));
    let workload = open_reader(Box::new(reader), "generated", &opts).unwrap();
    let mut count = 0u64;
    for record in workload.records {
        record.unwrap();
        count += 1;
    }
    assert_eq!(count, lines);
    PEAK.load(Ordering::Relaxed) - before
}

/// Writes the generated trace of `lines` lines to a file, removed when the returned path drops.
fn write_trace(lines: u64) -> TempPath {
    let path = tempfile::Builder::new()
        .prefix(&format!(
            "storsim-streaming-{}-{lines}-",
            std::process::id()
        ))
        .suffix(".trace")
        .tempfile()
        .unwrap()
        .into_temp_path();
    let mut out = BufWriter::new(std::fs::File::create(&path).unwrap());
    std::io::copy(&mut Generator::new(lines), &mut out).unwrap();
    out.flush().unwrap();
    path
}

/// Reads a trace file with `open` on the parse thread, devices overlaid, and returns the growth
/// of the heap's peak (over both threads) above the live heap before opening. The consumer
/// pauses after the first record, long enough for the parser to fill the channel and wait,
/// so that the peak is the pipeline's full capacity whatever the threads' relative speeds.
fn threaded_peak_growth(path: &Path, lines: u64) -> usize {
    let opts = TraceOptions {
        format: Some(TraceFormat::named("mqsim")),
        devices: DeviceSelection::Overlay,
        parse_thread: true,
        ..TraceOptions::default()
    };
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let workload = open(path, &opts).unwrap();
    let mut count = 0u64;
    for record in workload.records {
        record.unwrap();
        count += 1;
        if count == 1 {
            std::thread::sleep(Duration::from_millis(300));
        }
    }
    assert_eq!(count, lines);
    PEAK.load(Ordering::Relaxed) - before
}

#[test]
fn memory_does_not_grow_with_trace_length() {
    let small = peak_growth(10_000);
    let large = peak_growth(1_000_000);
    eprintln!("peak heap growth: {small} bytes for 10k lines, {large} bytes for 1M lines");
    // The buffers are fixed; a few kilobytes of slack covers allocator noise.
    assert!(large <= small + 16 * 1024, "{large} > {small} + 16 KiB");
    assert!(
        large < 2 * 1024 * 1024,
        "{large} bytes is more than the read buffers need"
    );

    // On the parse thread. The smaller trace (100k lines, some 25 batches) is still long
    // enough to fill the channel, so both reach the same peak: the read buffer plus at most
    // six batches (four waiting, one being filled, one being drained) of 4096 records of
    // 56 bytes, under 1.6 MiB. A channel without a bound would hold most of the 1M-line
    // trace, over 50 MB, while the consumer pauses.
    let (small_file, large_file) = (write_trace(100_000), write_trace(1_000_000));
    let small = threaded_peak_growth(&small_file, 100_000);
    let large = threaded_peak_growth(&large_file, 1_000_000);
    std::fs::remove_file(&small_file).unwrap();
    std::fs::remove_file(&large_file).unwrap();
    eprintln!(
        "peak heap growth on the parse thread: {small} bytes for 100k lines, {large} bytes for 1M lines"
    );
    assert!(large <= small + 64 * 1024, "{large} > {small} + 64 KiB");
    assert!(
        large < 3 * 1024 * 1024,
        "{large} bytes is more than the read buffer and the batches need"
    );
}
