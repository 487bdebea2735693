//! Recognising a trace's format from its first bytes and lines, never from its name.
//!
//! storsim's own recordings start with a magic line naming their version, which settles the
//! format before anything else is tried. Binary formats are recognised by their magic or by
//! fields at fixed offsets. For text, the first data line (blank and `#` lines skipped, and an
//! MSR column header) is checked against each format's grammar in turn; a file whose later
//! lines are malformed is still recognised, so that the parser can report them precisely. DiskSim's and MQSim's ASCII formats share a
//! layout, so the values of the first data lines (up to [`SAMPLE_LINES`] of them) decide:
//! fractional times, tab separators or flags other than 0 and 1 mean DiskSim; all-integer times
//! that advance by 1000 or more per request (the median of non-zero steps) mean MQSim's
//! nanoseconds; smaller steps mean DiskSim's milliseconds.
//!
//! Two renderings of traces in the shared test data are recognised only to explain that they
//! are not supported: libCacheSim's CSV rendering of a vscsi trace and a pandas dump of an FIU
//! trace. Both lose information that their native forms keep.

use super::fields::{
    parse_decimal_scaled, parse_hex_u64, parse_u64, split_on, split_whitespace, trim,
};
use super::format::Detect;
use super::input::{read_head, read_head_of};
use super::{ParseContext, TraceFormat};
use crate::WorkloadError;
use std::path::Path;

/// How much of the (decompressed) file detection reads.
const HEAD_BYTES: usize = 64 * 1024;

/// How many data lines detection checks.
pub(crate) const SAMPLE_LINES: usize = 32;

/// Recognises the format of the trace at `path` from its content. A gzip-compressed file is
/// recognised by its magic bytes and its decompressed content is examined.
pub fn detect(path: &Path) -> Result<TraceFormat, WorkloadError> {
    let ctx = ParseContext::new(path, false);
    detect_head(&read_head(path, &ctx, HEAD_BYTES)?, &ctx)
}

/// [`detect`] on an input already opened: its first bytes, up to what detection reads.
pub(crate) fn detect_reader(
    reader: Box<dyn std::io::BufRead + Send>,
    ctx: &ParseContext,
) -> Result<TraceFormat, WorkloadError> {
    detect_head(&read_head_of(reader, ctx, HEAD_BYTES)?, ctx)
}

fn detect_head(head: &[u8], ctx: &ParseContext) -> Result<TraceFormat, WorkloadError> {
    detect_bytes(head).map_err(|(position, message)| ctx.malformed(position, message))
}

/// What a file named as a workload holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkloadFile {
    /// A flow file (`crate::flows::is_flow_file`).
    Flows,
    /// A trace of this format: the one asked for, or the one detection found.
    Trace(TraceFormat),
}

/// Tells a flow file from a trace and, for a trace whose `format` is not given, detects its
/// format, from one look at the start of the file (the file is not opened at all for a name
/// ending in `.toml`). Handing the format on to [`super::open`] spares that a second look, so
/// a run opens its trace once here and once for the run.
pub fn identify(path: &Path, format: Option<TraceFormat>) -> Result<WorkloadFile, WorkloadError> {
    if crate::flows::has_flow_file_name(path) {
        return Ok(WorkloadFile::Flows);
    }
    let ctx = ParseContext::new(path, false);
    let head = read_head(path, &ctx, HEAD_BYTES)?;
    if crate::flows::starts_as_flow_file(&head) {
        return Ok(WorkloadFile::Flows);
    }
    match format {
        Some(format) => Ok(WorkloadFile::Trace(format)),
        None => detect_head(&head, &ctx).map(WorkloadFile::Trace),
    }
}

/// Detection on the first bytes of a file. The error is a position and a message.
fn detect_bytes(head: &[u8]) -> Result<TraceFormat, (String, String)> {
    if head.is_empty() {
        return Err(("byte 0".to_string(), "the file is empty".to_string()));
    }
    for format in TraceFormat::all() {
        if let Detect::Magic(check) = format.entry().detect {
            if let Some(found) = check(head) {
                return found
                    .map(|()| format)
                    .map_err(|message| ("line 1".to_string(), message));
            }
        }
    }
    let mut signatures = Vec::new();
    for format in TraceFormat::all() {
        if let Detect::Binary { check, signature } = format.entry().detect {
            if check(head) {
                return Ok(format);
            }
            signatures.push(format!("{format}: {signature}"));
        }
    }
    if !is_text(head) {
        return Err((
            "byte 0".to_string(),
            format!(
                "the file is binary but fits no binary trace format ({}); {}",
                signatures.join("; "),
                name_it()
            ),
        ));
    }
    detect_text(head)
}

/// Text has no NUL bytes and few control characters besides tab, CR, LF and form feed.
pub(crate) fn is_text(head: &[u8]) -> bool {
    let sample = &head[..head.len().min(4096)];
    let odd = sample
        .iter()
        .filter(|&&b| b == 0 || (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0C)))
        .count();
    !sample.contains(&0) && odd * 100 <= sample.len()
}

fn name_it() -> String {
    let names: Vec<&str> = TraceFormat::all().map(TraceFormat::name).collect();
    format!("name the format explicitly (one of {})", names.join(", "))
}

/// The data lines of the head: numbered from 1, without terminators, blank and comment lines
/// dropped. The last line is dropped if the head cut it short.
fn data_lines(head: &[u8]) -> Vec<(usize, &[u8])> {
    let complete = match head.iter().rposition(|&b| b == b'\n') {
        Some(i) if head.len() == HEAD_BYTES => &head[..i],
        _ => head,
    };
    let complete = complete.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(complete);
    complete
        .split(|&b| b == b'\n')
        .enumerate()
        .map(|(i, line)| (i + 1, line.strip_suffix(b"\r").unwrap_or(line)))
        .filter(|(_, line)| {
            let t = trim(line);
            !t.is_empty() && t[0] != b'#'
        })
        .take(SAMPLE_LINES + 1)
        .collect()
}

fn detect_text(head: &[u8]) -> Result<TraceFormat, (String, String)> {
    let lines = data_lines(head);
    let Some(&(first_no, first)) = lines.first() else {
        return Err((
            "line 1".to_string(),
            "the file has no data lines".to_string(),
        ));
    };
    let position = format!("line {first_no}");
    let first_trimmed = trim(first);
    if first_trimmed.eq_ignore_ascii_case(b"version,time,op,size,lbn") {
        return Err((
            position,
            "this is libCacheSim's CSV rendering of a vscsi trace (version,time,op,size,lbn), which keeps only whole seconds; read the binary .vscsi file instead".to_string(),
        ));
    }
    if is_pandas_header(first) {
        return Err((
            position,
            "this looks like a pandas dump (a header row of column numbers and a leading index column), not a trace; write the original columns out without the index, e.g. as an FIU trace".to_string(),
        ));
    }
    let is_header = |line: &[u8]| {
        TraceFormat::all().any(|format| match format.entry().detect {
            Detect::Text {
                header: Some(header),
                ..
            } => header(line),
            _ => false,
        })
    };
    let data = if is_header(first) {
        &lines[1..]
    } else {
        &lines[..]
    };
    let sample: Vec<&[u8]> = data
        .iter()
        .take(SAMPLE_LINES)
        .map(|&(_, line)| line)
        .collect();
    let Some(&first_data) = sample.first() else {
        return Err((
            position,
            "the file has a header but no data lines".to_string(),
        ));
    };
    for format in TraceFormat::all() {
        if let Detect::Text {
            first: fits,
            sample: confirm,
            ..
        } = format.entry().detect
        {
            if fits(first_data) && confirm.is_none_or(|confirm| confirm(&sample)) {
                return Ok(format);
            }
        }
    }
    Err((
        position,
        format!(
            "cannot recognise the trace format from the first lines (the first is {}); {}",
            super::fields::show(first),
            name_it()
        ),
    ))
}

fn is_pandas_header(line: &[u8]) -> bool {
    let mut f = [&b""[..]; 4];
    let n = split_on(line, b'\t', &mut f);
    n >= 3 && f[0].is_empty() && f[1] == b"0" && f[2] == b"1"
}

/// Five numeric columns, the grammar DiskSim's ASCII layout and MQSim's share.
pub(crate) fn is_five_column(line: &[u8]) -> bool {
    let mut f = [&b""[..]; 5];
    split_whitespace(line, &mut f) == 5
        && parse_decimal_scaled(f[0], 6).is_some()
        && parse_u64(f[1]).is_some()
        && parse_u64(f[2]).is_some()
        && parse_u64(f[3]).is_some()
        && parse_hex_u64(f[4]).is_some()
}

/// Tells MQSim's nanoseconds-and-type convention from DiskSim's milliseconds-and-flags one in
/// the five-column lines of a sample: fractional times, tab separators or flags other than 0
/// and 1 mean DiskSim; all-integer times that advance by 1000 or more per request (the median
/// of non-zero steps), or never advance, mean MQSim.
pub(crate) fn five_column_in_nanoseconds(sample: &[&[u8]]) -> bool {
    let mut times = Vec::with_capacity(sample.len());
    for line in sample.iter().filter(|line| is_five_column(line)) {
        let mut f = [&b""[..]; 5];
        split_whitespace(line, &mut f);
        if f[0].contains(&b'.') || line.contains(&b'\t') || !matches!(f[4], b"0" | b"1") {
            return false;
        }
        times.push(parse_u64(f[0]).unwrap_or(0));
    }
    let mut steps: Vec<u64> = times
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]))
        .filter(|&step| step > 0)
        .collect();
    if steps.is_empty() {
        return true;
    }
    steps.sort_unstable();
    steps[steps.len() / 2] >= 1000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_column_conventions() {
        let mqsim = b"0 0 303567 7 0\n0 1 55590 6 0\n26214000 0 303574 7 0\n78643005 1 55596 6 1\n";
        assert_eq!(detect_bytes(mqsim), Ok(TraceFormat::named("mqsim")));
        let disksim_fraction = b"13.191135 30 0 5 1\n17.829285 20 576560 6 1\n";
        assert_eq!(
            detect_bytes(disksim_fraction),
            Ok(TraceFormat::named("disksim-ascii"))
        );
        let disksim_integer_ms = b"10 0 0 8 1\n12 0 8 8 1\n15 0 16 8 0\n";
        assert_eq!(
            detect_bytes(disksim_integer_ms),
            Ok(TraceFormat::named("disksim-ascii"))
        );
        let disksim_flags = b"0 0 0 8 3\n";
        assert_eq!(
            detect_bytes(disksim_flags),
            Ok(TraceFormat::named("disksim-ascii"))
        );
    }

    #[test]
    fn unknown_text_names_the_choices() {
        let err = detect_bytes(b"hello world\n").unwrap_err();
        assert_eq!(err.0, "line 1");
        assert!(err.1.contains("disksim-ascii"), "{}", err.1);
    }

    #[test]
    fn binary_garbage_is_not_guessed() {
        let err = detect_bytes(&[0u8, 1, 2, 3, 0, 0, 0, 0]).unwrap_err();
        assert!(err.1.contains("binary"), "{}", err.1);
    }
}
