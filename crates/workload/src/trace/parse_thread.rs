//! Parsing a trace file on a second thread, so that parsing overlaps whatever consumes the
//! records (the simulation) on another core.
//!
//! The parse thread builds the record stream itself (a stream holds `Rc` counters and a boxed
//! reader, so it cannot cross threads; only the opened input does), pulls every item from it in
//! order and hands the items over in batches of up to [`BATCH_RECORDS`] records through a
//! channel that holds at most [`CHANNEL_BATCHES`] batches. At most `CHANNEL_BATCHES + 2` batches
//! exist at once (those in the channel, the one the thread fills, the one the consumer drains),
//! so memory does not grow with the trace's length.
//!
//! The consumer ([`Threaded`]) yields exactly the items the stream yields, in the same order,
//! errors included, and keeps going after an error exactly when the stream does. The skipped
//! and ignored counters are counted by the thread in its own context; every batch carries the
//! counters' values after each item whose production changed them, and the consumer sets the
//! workload's counters to those values as it yields that item, so that between calls to `next`
//! they read as they would have had the stream been consumed directly (after a `--max-requests`
//! stop as well as at the end).
//!
//! Dropping the consumer early sets a cancel flag that makes the thread's input read as ended
//! and drops the receiving end, so that a thread blocked in `send` gets an error; either way the
//! thread returns within one record (or one run of skipped lines), and the drop joins it. A panic
//! in the parse thread (a bug: bad input is an error value) reaches the consumer as an error
//! item when the channel closes without the final batch, never as a hang.

use super::Records;
use crate::{Record, WorkloadError};
use std::cell::Cell;
use std::io::{BufRead, Read};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Most records in one batch.
pub(crate) const BATCH_RECORDS: usize = 4096;

/// Most batches waiting in the channel.
pub(crate) const CHANNEL_BATCHES: usize = 4;

/// What the parse thread builds on its own side: the record stream and the counters that its
/// parsers update.
pub(crate) struct Stream {
    pub records: Records,
    pub skipped: Rc<Cell<u64>>,
    pub ignored: Rc<Cell<u64>>,
}

/// The skipped and ignored counters at one point of the stream.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
struct Counts {
    skipped: u64,
    ignored: u64,
}

/// Consecutive items of the stream: `records`, then `error` if there is one. The stream ended
/// after them when `end` is set.
struct Batch {
    records: Vec<Record>,
    error: Option<WorkloadError>,
    /// `(position, counts)`: producing the item at `position` (an index into `records`, or
    /// `records.len()` for `error`) left the counters at `counts`. Ascending, at most one entry
    /// per item, and only where the counters changed.
    counts: Vec<(usize, Counts)>,
    /// The counters when the stream ended, if it did after this batch.
    end: Option<Counts>,
}

impl Batch {
    fn new() -> Self {
        Batch {
            records: Vec::with_capacity(BATCH_RECORDS),
            error: None,
            counts: Vec::new(),
            end: None,
        }
    }

    /// A placeholder that allocates nothing.
    fn empty() -> Self {
        Batch {
            records: Vec::new(),
            error: None,
            counts: Vec::new(),
            end: None,
        }
    }
}

/// A reader that reads as ended once `cancel` is set, so that a parse thread whose consumer has
/// gone stops at its next read even when it is not about to send anything (a long run of
/// skipped lines, a device selection that matches nothing).
pub(crate) struct Cancellable<R> {
    inner: R,
    cancel: Arc<AtomicBool>,
}

impl<R> Cancellable<R> {
    pub fn new(inner: R, cancel: Arc<AtomicBool>) -> Self {
        Cancellable { inner, cancel }
    }

    fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }
}

impl<R: Read> Read for Cancellable<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.cancelled() {
            return Ok(0);
        }
        self.inner.read(buf)
    }
}

impl<R: BufRead> BufRead for Cancellable<R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        if self.cancelled() {
            return Ok(&[]);
        }
        self.inner.fill_buf()
    }

    fn consume(&mut self, amount: usize) {
        self.inner.consume(amount)
    }
}

/// Starts a thread that runs `build` (handing it the cancel flag, for [`Cancellable`]) and sends
/// the stream it returns; returns the consumer. `source` names the trace in the error that
/// reports a failed thread; `skipped` and `ignored` are the workload's counters, which the
/// consumer keeps up to date.
pub(crate) fn spawn<F>(
    source: &str,
    skipped: Rc<Cell<u64>>,
    ignored: Rc<Cell<u64>>,
    build: F,
) -> Result<Threaded, WorkloadError>
where
    F: FnOnce(Arc<AtomicBool>) -> Stream + Send + 'static,
{
    let (sender, receiver) = sync_channel(CHANNEL_BATCHES);
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = cancel.clone();
    let thread = std::thread::Builder::new()
        .name("storsim-parse".to_string())
        .spawn(move || produce(build(flag), &sender))
        .map_err(|error| WorkloadError::Io {
            source: source.to_string(),
            error: std::io::Error::new(
                error.kind(),
                format!("cannot start a thread to parse the trace: {error}"),
            ),
        })?;
    Ok(Threaded {
        receiver: Some(receiver),
        thread: Some(thread),
        cancel,
        records: Vec::new().into_iter(),
        error: None,
        counts: Vec::new().into_iter().peekable(),
        position: 0,
        end: None,
        finished: false,
        skipped,
        ignored,
        source: source.to_string(),
    })
}

/// The parse thread's loop: pulls every item and sends it on, until the stream ends or the
/// consumer has gone (a failed `send`, after which it returns quietly).
fn produce(stream: Stream, sender: &SyncSender<Batch>) {
    let Stream {
        mut records,
        skipped,
        ignored,
    } = stream;
    let mut last = Counts::default();
    let mut batch = Batch::new();
    loop {
        let item = records.next();
        let now = Counts {
            skipped: skipped.get(),
            ignored: ignored.get(),
        };
        match item {
            Some(item) => {
                if now != last {
                    batch.counts.push((batch.records.len(), now));
                    last = now;
                }
                match item {
                    Ok(record) => {
                        batch.records.push(record);
                        if batch.records.len() < BATCH_RECORDS {
                            continue;
                        }
                    }
                    Err(error) => batch.error = Some(error),
                }
                // The full batch goes before the next is allocated, so that a thread blocked in
                // `send` holds one batch, not two.
                if sender
                    .send(std::mem::replace(&mut batch, Batch::empty()))
                    .is_err()
                {
                    return;
                }
                batch = Batch::new();
            }
            None => {
                batch.end = Some(now);
                // A consumer that has gone no longer needs the end.
                let _ = sender.send(batch);
                return;
            }
        }
    }
}

/// The consumer's side: yields the items the parse thread sends, in order.
pub(crate) struct Threaded {
    receiver: Option<Receiver<Batch>>,
    thread: Option<JoinHandle<()>>,
    cancel: Arc<AtomicBool>,
    /// The current batch, as it is yielded.
    records: std::vec::IntoIter<Record>,
    error: Option<WorkloadError>,
    counts: std::iter::Peekable<std::vec::IntoIter<(usize, Counts)>>,
    /// The position in the current batch of the next item to yield.
    position: usize,
    end: Option<Counts>,
    finished: bool,
    skipped: Rc<Cell<u64>>,
    ignored: Rc<Cell<u64>>,
    source: String,
}

impl Threaded {
    /// Sets the workload's counters to what they were after the item at `position` was produced.
    fn settle(&mut self) {
        if let Some(&(at, counts)) = self.counts.peek() {
            if at == self.position {
                self.set(counts);
                self.counts.next();
            }
        }
        self.position += 1;
    }

    fn set(&self, counts: Counts) {
        self.skipped.set(counts.skipped);
        self.ignored.set(counts.ignored);
    }

    /// Stops receiving and waits for the thread, which has ended or is about to: its stream
    /// ended, it panicked, or the cancel flag and the closed channel stop it within one record.
    /// Returns what it panicked with, if it did.
    fn finish(&mut self) -> Option<String> {
        self.finished = true;
        self.cancel.store(true, Ordering::Relaxed);
        self.receiver = None;
        let panic = self.thread.take()?.join().err()?;
        Some(
            panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".to_string()),
        )
    }
}

impl Iterator for Threaded {
    type Item = Result<Record, WorkloadError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.finished {
                return None;
            }
            if let Some(record) = self.records.next() {
                self.settle();
                return Some(Ok(record));
            }
            if let Some(error) = self.error.take() {
                self.settle();
                return Some(Err(error));
            }
            if let Some(counts) = self.end.take() {
                self.set(counts);
                self.finish();
                return None;
            }
            // Free the drained batch before the next arrives.
            self.records = Vec::new().into_iter();
            let received = self.receiver.as_ref().map(Receiver::recv);
            let Some(Ok(batch)) = received else {
                // The channel closed before the final batch: the thread panicked.
                let panic = self
                    .finish()
                    .unwrap_or_else(|| "it stopped without ending the stream".to_string());
                return Some(Err(WorkloadError::Io {
                    source: self.source.clone(),
                    error: std::io::Error::other(format!(
                        "the thread parsing the trace failed (this is a bug in storsim): {panic}"
                    )),
                }));
            };
            self.records = batch.records.into_iter();
            self.error = batch.error;
            self.counts = batch.counts.into_iter().peekable();
            self.position = 0;
            self.end = batch.end;
        }
    }
}

impl Drop for Threaded {
    fn drop(&mut self) {
        // A panic in the thread was reported already, or nobody is listening any more.
        let _ = self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storsim_core::Op;

    fn record(i: u64) -> Record {
        Record {
            timestamp_ns: i,
            op: Op::Read,
            offset_bytes: i * 4096,
            len_bytes: 4096,
            dev: 0,
            think_ns: 0,
            origin: i + 1,
        }
    }

    fn threaded<F>(build: F) -> (Threaded, Rc<Cell<u64>>, Rc<Cell<u64>>)
    where
        F: FnOnce(Arc<AtomicBool>) -> Stream + Send + 'static,
    {
        let skipped = Rc::new(Cell::new(0));
        let ignored = Rc::new(Cell::new(0));
        let t = spawn("test.trace", skipped.clone(), ignored.clone(), build).unwrap();
        (t, skipped, ignored)
    }

    /// A stream of `n` records that panics when asked for record `n`.
    fn panicking(n: u64) -> impl FnOnce(Arc<AtomicBool>) -> Stream + Send + 'static {
        move |_| Stream {
            records: Box::new((0..).map(move |i| {
                if i == n {
                    panic!("record {i} is not there");
                }
                Ok(record(i))
            })),
            skipped: Rc::new(Cell::new(0)),
            ignored: Rc::new(Cell::new(0)),
        }
    }

    #[test]
    fn a_panic_in_the_parse_thread_is_an_error_after_the_records_sent_before_it() {
        for n in [0, 5, BATCH_RECORDS as u64 * 3 + 7] {
            let (t, _, _) = threaded(panicking(n));
            let items: Vec<_> = t.collect();
            // Only whole batches were sent before the panic; the records of the batch being
            // filled are lost with it.
            let sent = n / BATCH_RECORDS as u64 * BATCH_RECORDS as u64;
            assert_eq!(items.len() as u64, sent + 1);
            for (i, item) in items[..sent as usize].iter().enumerate() {
                assert_eq!(item.as_ref().unwrap(), &record(i as u64));
            }
            let message = items.last().unwrap().as_ref().unwrap_err().to_string();
            assert!(
                message.starts_with("test.trace: the thread parsing the trace failed")
                    && message.ends_with(&format!("record {n} is not there")),
                "{message}"
            );
        }
    }

    #[test]
    fn counters_follow_the_items_and_errors_do_not_end_the_batches() {
        // Every third item bumps `skipped`, every fifth `ignored`; every 1000th is an error
        // after which the stream goes on.
        let build = |_| {
            let skipped = Rc::new(Cell::new(0u64));
            let ignored = Rc::new(Cell::new(0u64));
            let (s, g) = (skipped.clone(), ignored.clone());
            let records: Records = Box::new((0..20_000u64).map(move |i| {
                if i % 3 == 0 {
                    s.set(s.get() + 1);
                }
                if i % 5 == 0 {
                    g.set(g.get() + 1);
                }
                if i % 1000 == 999 {
                    Err(WorkloadError::Spec {
                        message: format!("error {i}"),
                    })
                } else {
                    Ok(record(i))
                }
            }));
            // The counters move once more after the last item.
            let (s, tail) = (skipped.clone(), records);
            let records: Records = Box::new(tail.chain(std::iter::from_fn(move || {
                s.set(s.get() + 100);
                None
            })));
            Stream {
                records,
                skipped,
                ignored,
            }
        };
        let (mut t, skipped, ignored) = threaded(build);
        for i in 0..20_000u64 {
            let item = t.next().unwrap();
            if i % 1000 == 999 {
                assert_eq!(item.unwrap_err().to_string(), format!("error {i}"));
            } else {
                assert_eq!(item.unwrap(), record(i));
            }
            assert_eq!(skipped.get(), i / 3 + 1, "item {i}");
            assert_eq!(ignored.get(), i / 5 + 1, "item {i}");
        }
        assert!(t.next().is_none());
        assert_eq!(skipped.get(), 19_999 / 3 + 1 + 100);
        assert!(t.next().is_none());
    }

    /// Lets the parse thread run on, so that the drop below more likely meets it in the
    /// state the test is about; the test's outcome does not depend on it. Yields rather than
    /// sleeps: nothing in this crate waits on the clock.
    fn give_the_thread_time() {
        for _ in 0..10_000 {
            std::thread::yield_now();
        }
    }

    #[test]
    fn dropping_the_consumer_stops_a_thread_that_sends_nothing() {
        // The stream reads an endless input without yielding, as a selection of a device that
        // never appears would: only the cancel flag stops it.
        let build = |cancel: Arc<AtomicBool>| {
            let mut input = Cancellable::new(std::io::repeat(b'x'), cancel);
            let records: Records = Box::new(std::iter::from_fn(move || {
                let mut buf = [0u8; 64];
                while input.read(&mut buf).unwrap() > 0 {}
                None
            }));
            Stream {
                records,
                skipped: Rc::new(Cell::new(0)),
                ignored: Rc::new(Cell::new(0)),
            }
        };
        let (t, _, _) = threaded(build);
        give_the_thread_time();
        drop(t);
    }

    #[test]
    fn dropping_the_consumer_stops_a_thread_blocked_in_send() {
        let (mut t, _, _) = threaded(|_| Stream {
            records: Box::new((0..).map(|i| Ok(record(i)))),
            skipped: Rc::new(Cell::new(0)),
            ignored: Rc::new(Cell::new(0)),
        });
        assert_eq!(t.next().unwrap().unwrap(), record(0));
        give_the_thread_time();
        drop(t);
    }
}
