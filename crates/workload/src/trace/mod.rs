//! Trace files: detection, streaming parsers for eleven block-trace formats, multi-device layout
//! and a streaming characterisation, and the writer of storsim's own recording format.
//!
//! [`open`] turns a file into a [`Workload`] whose records are read lazily from a buffered
//! reader, so memory stays flat however long the trace is; [`open_reader`] does the same for a
//! stream such as standard input. [`detect`] recognises the format from the content, and
//! [`inspect`] summarises a workload in one pass. Gzip-compressed input (recognised by its magic
//! bytes, not its name) is decompressed on the fly. Every parser reports a bad
//! record as [`WorkloadError::Malformed`] naming the file, the line or byte offset and what was
//! expected; with [`TraceOptions::skip_bad`] such records are counted in [`Workload::skipped`]
//! instead.
//!
//! Some records are well formed but are not block requests that a device model can replay (a
//! vscsi INQUIRY, a blkparse event without data and without a flush flag, a fio `wait` in a
//! version 3 log). They are dropped and counted separately, in [`Workload::ignored`].
//!
//! By default [`open`] parses on a second thread, which hands the records over in batches
//! through a small bounded channel, so that parsing overlaps the simulation; the records, their
//! order, the errors and the counters are the same as when parsing on the calling thread
//! ([`TraceOptions::parse_thread`] off), which [`open_reader`] always does.
//!
//! Each format lives in a file of its own and is listed once, in the table in `format.rs`,
//! which detection, [`open`] and help text go through.
//!
//! The per-format pages in `docs/formats/` give each layout, its units and how detection
//! recognises it.

mod alibaba;
mod blkparse;
mod detect;
mod devices;
mod disksim_ascii;
mod fields;
mod fio;
mod fiu;
mod format;
mod hp_srt;
mod input;
mod inspect;
mod linnos;
mod measured;
mod mqsim;
mod msr;
mod parse_thread;
mod spc;
mod storsim_record;
mod systor;
mod tencent;
mod validate;
mod vscsi;

use crate::{Record, Workload, WorkloadError};
use std::cell::Cell;
use std::io::BufRead;
use std::path::Path;
use std::rc::Rc;

pub use detect::{detect, detect_explained, identify, Detection, WorkloadFile};
pub use format::TraceFormat;
pub use input::files_opened;
pub use inspect::{inspect, Characterisation, Volume, SIZE_BUCKET_UPPER_BOUNDS};
pub use measured::{measured_response_times, MeasuredTimes};
pub use storsim_record::{recorded_ios, RecordWriter, RecordedIo};
pub use validate::validate_measured_access_us;

/// How the devices (disks, ASUs, files, volumes) of a multi-device trace share one address
/// space.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum DeviceSelection {
    /// Lay the devices out one after another, ordered by device number, each in a region
    /// rounded up to 1 MiB. Costs one extra pass over the file.
    #[default]
    Concat,
    /// Keep every offset as it is, as MQSim and SSDsim do: devices overlap.
    Overlay,
    /// Keep only the records of these devices (ascending, without repeats, at least one; build
    /// it with [`DeviceSelection::only`]) and drop the rest. Several are laid out one after
    /// another as [`Concat`](Self::Concat) does, which costs the same extra pass.
    Only(Vec<u32>),
}

impl DeviceSelection {
    /// Keeps the records of `devices` (in any order, repeats allowed; an empty list keeps
    /// nothing and every record is then dropped, so callers check for it).
    pub fn only(devices: impl IntoIterator<Item = u32>) -> Self {
        let mut devices: Vec<u32> = devices.into_iter().collect();
        devices.sort_unstable();
        devices.dedup();
        DeviceSelection::Only(devices)
    }
}

/// Which blkparse event becomes a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BlkparseEvent {
    /// `D`: the request was issued to the driver, after the scheduler merged and reordered.
    #[default]
    Dispatch,
    /// `Q`: the bio was queued by the file system or application, before merging.
    Queue,
}

/// How [`open`] reads a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceOptions {
    /// The format, or `None` to [`detect`] it from the file's content.
    pub format: Option<TraceFormat>,
    /// Skip malformed records (counting them in [`Workload::skipped`]) instead of failing.
    pub skip_bad: bool,
    pub devices: DeviceSelection,
    pub blkparse_event: BlkparseEvent,
    /// Parse on a second thread (the default), so that parsing overlaps whatever consumes the
    /// records; `false` parses on the calling thread as the records are pulled. The records,
    /// errors and counters are the same either way. Only [`open`] uses it: [`open_reader`]
    /// always parses on the calling thread.
    pub parse_thread: bool,
}

impl Default for TraceOptions {
    fn default() -> Self {
        TraceOptions {
            format: None,
            skip_bad: false,
            devices: DeviceSelection::default(),
            blkparse_event: BlkparseEvent::default(),
            parse_thread: true,
        }
    }
}

/// What every parser needs besides its input: the file name for messages, the bad-record policy
/// and the shared counters.
#[derive(Clone)]
pub(crate) struct ParseContext {
    pub source: Rc<str>,
    pub skip_bad: bool,
    pub skipped: Rc<Cell<u64>>,
    pub ignored: Rc<Cell<u64>>,
}

impl ParseContext {
    fn new(path: &Path, skip_bad: bool) -> Self {
        ParseContext::named(&path.display().to_string(), skip_bad)
    }

    fn named(source: &str, skip_bad: bool) -> Self {
        ParseContext {
            source: Rc::from(source),
            skip_bad,
            skipped: Rc::new(Cell::new(0)),
            ignored: Rc::new(Cell::new(0)),
        }
    }

    pub fn malformed(&self, position: String, message: String) -> WorkloadError {
        WorkloadError::Malformed {
            source: self.source.to_string(),
            position,
            message,
        }
    }

    pub fn io(&self, error: std::io::Error) -> WorkloadError {
        WorkloadError::Io {
            source: self.source.to_string(),
            error,
        }
    }
}

pub(crate) type Records = Box<dyn Iterator<Item = Result<Record, WorkloadError>>>;

/// Opens a trace as a streaming [`Workload`].
///
/// The format is `opts.format` or, when that is `None`, what [`detect`] finds. With
/// [`DeviceSelection::Concat`] on a format that can hold several devices, the file is read once
/// before this returns to size each device's region, so a malformed record may already be
/// reported here. Opening the file, detection and that sizing pass happen on the calling thread
/// and report their errors here; with [`TraceOptions::parse_thread`] the pass that yields the
/// records then runs on a thread of its own, which ends when the stream ends or is dropped.
///
/// The file is opened once: detection, the sizing pass and the records each read it from its
/// start again (see [`files_opened`]).
pub fn open(path: &Path, opts: &TraceOptions) -> Result<Workload, WorkloadError> {
    let ctx = ParseContext::new(path, opts.skip_bad);
    let file = input::TraceFile::open(path, &ctx)?;
    let (format, detected_from) = match opts.format {
        Some(format) => (format, None),
        None => {
            let found = detect::detect_reader(file.pass(&ctx)?, &ParseContext::new(path, false))?;
            (found.format, Some(found.evidence))
        }
    };
    let layout = match &opts.devices {
        DeviceSelection::Concat
            if !format.is_single_device()
                && !devices::names_one_device(file.pass(&ctx)?, format, &ctx)? =>
        {
            // The sizing pass gets its own counters so that nothing is counted twice.
            let sizing = ParseContext::new(path, opts.skip_bad);
            Some(devices::ConcatLayout::measure(
                parse_reader(file.pass(&sizing)?, format, opts, &sizing),
                format.origin(),
                &ctx.source,
            )?)
        }
        DeviceSelection::Only(devs) if devs.len() > 1 && !format.is_single_device() => {
            // The same sizing pass, over the selected devices' records only.
            let sizing = ParseContext::new(path, opts.skip_bad);
            let records = parse_reader(file.pass(&sizing)?, format, opts, &sizing);
            Some(devices::ConcatLayout::measure(
                Box::new(devices::only(records, devs.clone(), sizing.source.clone())),
                format.origin(),
                &ctx.source,
            )?)
        }
        _ => None,
    };
    let reader = file.pass(&ctx)?;
    let records: Records = if opts.parse_thread {
        let (path, opts) = (path.to_path_buf(), opts.clone());
        Box::new(parse_thread::spawn(
            &ctx.source,
            ctx.skipped.clone(),
            ctx.ignored.clone(),
            move |cancel| {
                // The thread counts in a context of its own; the consumer copies the counts.
                let ctx = ParseContext::new(&path, opts.skip_bad);
                let reader = Box::new(parse_thread::Cancellable::new(reader, cancel));
                parse_thread::Stream {
                    records: stream(reader, format, &opts, layout, &ctx),
                    skipped: ctx.skipped,
                    ignored: ctx.ignored,
                }
            },
        )?)
    } else {
        stream(reader, format, opts, layout, &ctx)
    };
    let pacing = format.pacing();
    let name = path.display().to_string();
    Ok(Workload {
        name,
        records,
        pacing,
        origin: format.origin(),
        duration_ns: None,
        skipped: ctx.skipped.clone(),
        ignored: ctx.ignored.clone(),
        format: Some(format.name()),
        seed: None,
        detected_from,
    })
}

/// The record stream of [`open`]'s main pass over an opened file: parsed, then moved into the
/// devices' regions when there is a `layout`, or filtered to one device.
fn stream(
    reader: Box<dyn BufRead>,
    format: TraceFormat,
    opts: &TraceOptions,
    layout: Option<devices::ConcatLayout>,
    ctx: &ParseContext,
) -> Records {
    let records = parse_reader(reader, format, opts, ctx);
    let records: Records = match &opts.devices {
        DeviceSelection::Only(devs) => {
            Box::new(devices::only(records, devs.clone(), ctx.source.clone()))
        }
        DeviceSelection::Concat | DeviceSelection::Overlay => records,
    };
    match layout {
        Some(layout) => Box::new(layout.apply(records, format.origin())),
        None => records,
    }
}

/// Reads a trace from a stream (standard input, a pipe, a socket) rather than a file. `name`
/// stands for the file name in the workload and in error messages.
///
/// A stream can be read only once, so `opts.format` must name the format (detection would
/// consume the data) and [`DeviceSelection::Concat`] is refused for formats that can hold
/// several devices (sizing the regions needs a pass of its own); use
/// [`DeviceSelection::Overlay`] or [`DeviceSelection::Only`]. Gzip-compressed streams are
/// decompressed as files are.
pub fn open_reader(
    reader: Box<dyn BufRead>,
    name: &str,
    opts: &TraceOptions,
) -> Result<Workload, WorkloadError> {
    let Some(format) = opts.format else {
        return Err(WorkloadError::Spec {
            message: format!("{name}: the trace format must be named to read a stream"),
        });
    };
    let concat = match &opts.devices {
        DeviceSelection::Concat => true,
        DeviceSelection::Only(devs) => devs.len() > 1,
        DeviceSelection::Overlay => false,
    };
    if concat && !format.is_single_device() {
        return Err(WorkloadError::Spec {
            message: format!(
                "{name}: concatenating the devices of a {format} trace needs two passes, which a stream cannot give; overlay the devices or select one"
            ),
        });
    }
    let ctx = ParseContext::named(name, opts.skip_bad);
    let reader = input::gunzip_if_compressed(reader, &ctx)?;
    // Concat was refused above for formats that need a layout: no layout to apply.
    let records = stream(reader, format, opts, None, &ctx);
    Ok(Workload {
        name: name.to_string(),
        records,
        pacing: format.pacing(),
        origin: format.origin(),
        duration_ns: None,
        skipped: ctx.skipped.clone(),
        ignored: ctx.ignored.clone(),
        format: Some(format.name()),
        seed: None,
        detected_from: None,
    })
}

/// Builds the record stream of one pass over an opened input.
fn parse_reader(
    reader: Box<dyn BufRead>,
    format: TraceFormat,
    opts: &TraceOptions,
    ctx: &ParseContext,
) -> Records {
    (format.entry().records)(reader, ctx.clone(), opts)
}
