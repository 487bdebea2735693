//! The per-request CSV of `simulate --requests-csv`.

use std::io::Write;
use storsim_core::Completion;

/// One CSV line per completed request, in completion order, into any writer (a buffered file
/// for the command).
pub struct RequestsCsv<W: Write> {
    out: W,
    /// Whether each line ends with the request's flow: only for a workload of several flows,
    /// so that a single flow's CSV stays what it always was.
    flow_column: bool,
}

impl<W: Write> RequestsCsv<W> {
    /// Writes the header into `out`, with a `flow` column last when the workload has more than
    /// one of its `flows`.
    pub fn new(mut out: W, flows: usize) -> std::io::Result<Self> {
        let flow_column = flows > 1;
        writeln!(
            out,
            "id,op,offset_bytes,len_bytes,arrival_ns,service_start_ns,finish_ns,queueing_ns,service_ns,latency_ns{}",
            if flow_column { ",flow" } else { "" }
        )?;
        Ok(RequestsCsv { out, flow_column })
    }

    /// Writes the line of one completed request.
    pub fn write(&mut self, c: &Completion) -> std::io::Result<()> {
        let r = &c.request;
        write!(
            self.out,
            "{},{},{},{},{},{},{},{},{},{}",
            r.id,
            r.op,
            r.offset_bytes,
            r.len_bytes,
            r.arrival.as_ns(),
            c.service_start.as_ns(),
            c.finish.as_ns(),
            c.queueing().as_ns(),
            c.service().as_ns(),
            c.latency().as_ns()
        )?;
        // The flow's index, as the library's request columns (Python's `Run.requests`) and
        // the document's `flows[].index` give it.
        if self.flow_column {
            write!(self.out, ",{}", r.flow)?;
        }
        writeln!(self.out)
    }

    /// Flushes what is buffered.
    pub fn finish(mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}
