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

/// A format detection found, and what it saw: the magic line, the binary signature, or the
/// line that fits the format's layout and what ruled out the other formats whose layouts fit
/// it too.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Detection {
    /// The format.
    pub format: TraceFormat,
    /// What detection saw, in a sentence without a final period, such as "line 1 fits the
    /// layout of mqsim; not disksim-ascii: integer times advancing by 26214000 per request ...".
    pub evidence: String,
}

/// Recognises the format of the trace at `path` from its content. A gzip-compressed file is
/// recognised by its magic bytes and its decompressed content is examined.
pub fn detect(path: &Path) -> Result<TraceFormat, WorkloadError> {
    detect_explained(path).map(|d| d.format)
}

/// [`detect`], with what detection saw.
pub fn detect_explained(path: &Path) -> Result<Detection, WorkloadError> {
    let ctx = ParseContext::new(path, false);
    detect_head(&read_head(path, &ctx, HEAD_BYTES)?, &ctx)
}

/// [`detect_explained`] on an input already opened: its first bytes, up to what detection
/// reads.
pub(crate) fn detect_reader(
    reader: Box<dyn std::io::BufRead + Send>,
    ctx: &ParseContext,
) -> Result<Detection, WorkloadError> {
    detect_head(&read_head_of(reader, ctx, HEAD_BYTES)?, ctx)
}

fn detect_head(head: &[u8], ctx: &ParseContext) -> Result<Detection, WorkloadError> {
    detect_bytes(head).map_err(|(position, message)| ctx.malformed(position, message))
}

/// What a file named as a workload holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkloadFile {
    /// A flow file (`crate::flows::is_flow_file`).
    Flows,
    /// An fio job file (`crate::fiojob::is_job_file`), read as flows.
    FioJob,
    /// A trace of this format: the one asked for, or the one detection found.
    Trace(TraceFormat),
}

/// Tells a flow file from a trace and, for a trace whose `format` is not given, detects its
/// format, from one look at the start of the file (the file is not opened at all for a name
/// ending in `.toml`).
pub fn identify(path: &Path, format: Option<TraceFormat>) -> Result<WorkloadFile, WorkloadError> {
    if crate::flows::has_flow_file_name(path) {
        return Ok(WorkloadFile::Flows);
    }
    if crate::fiojob::has_job_file_name(path) {
        return Ok(WorkloadFile::FioJob);
    }
    let ctx = ParseContext::new(path, false);
    let head = read_head(path, &ctx, HEAD_BYTES)?;
    if crate::flows::starts_as_flow_file(&head) {
        return Ok(WorkloadFile::Flows);
    }
    if crate::fiojob::starts_as_job_file(&head) {
        return Ok(WorkloadFile::FioJob);
    }
    match format {
        Some(format) => Ok(WorkloadFile::Trace(format)),
        None => detect_head(&head, &ctx).map(|d| WorkloadFile::Trace(d.format)),
    }
}

/// Detection on the first bytes of a file. The error is a position and a message.
fn detect_bytes(head: &[u8]) -> Result<Detection, (String, String)> {
    if head.is_empty() {
        return Err(("byte 0".to_string(), "the file is empty".to_string()));
    }
    for format in TraceFormat::all() {
        if let Detect::Magic(check) = format.entry().detect {
            if let Some(found) = check(head) {
                return found
                    .map(|()| Detection {
                        format,
                        evidence: "its first line is the format's magic line".to_string(),
                    })
                    .map_err(|message| ("line 1".to_string(), message));
            }
        }
    }
    let mut signatures = Vec::new();
    let mut fitting = Vec::new();
    for format in TraceFormat::all() {
        if let Detect::Binary { check, signature } = format.entry().detect {
            if check(head) {
                fitting.push((format, signature));
            }
            signatures.push(format!("{format}: {signature}"));
        }
    }
    match fitting[..] {
        [(format, signature)] => {
            return Ok(Detection {
                format,
                evidence: format!("the file is binary with its signature ({signature})"),
            })
        }
        [] => {}
        _ => {
            let names: Vec<TraceFormat> = fitting.iter().map(|&(f, _)| f).collect();
            return Err((
                "byte 0".to_string(),
                ambiguous(&names, "the binary signatures"),
            ));
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

/// The message for a file that several formats fit: the candidates and the `--format` values
/// that choose.
fn ambiguous(candidates: &[TraceFormat], what: &str) -> String {
    let names: Vec<String> = candidates.iter().map(|f| f.name().to_string()).collect();
    let choices: Vec<String> = candidates
        .iter()
        .map(|f| format!("--format {}", f.name()))
        .collect();
    format!(
        "the file fits {} of {} and nothing in its first lines rules all but one out; \
         its units differ between them, so name the format: {} (docs/formats/ says what \
         tells each apart)",
        what,
        names.join(" and "),
        choices.join(" or ")
    )
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

fn detect_text(head: &[u8]) -> Result<Detection, (String, String)> {
    let lines = data_lines(head);
    let Some(&(first_no, first)) = lines.first() else {
        return Err((
            "line 1".to_string(),
            "the file has no data lines".to_string(),
        ));
    };
    let position = format!("line {first_no}");
    refuse_renderings(first, &position)?;
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
    let (Some(&first_data), Some(&(data_no, _))) = (sample.first(), data.first()) else {
        return Err((
            position,
            "the file has a header but no data lines".to_string(),
        ));
    };
    let mut fitting = Vec::new();
    let mut ruled_out = Vec::new();
    for format in TraceFormat::all() {
        if let Detect::Text {
            first: fits,
            rule_out,
            ..
        } = format.entry().detect
        {
            if !fits(first_data) {
                continue;
            }
            fitting.push(format);
            if let Some(reason) = rule_out.and_then(|rule_out| rule_out(&sample)) {
                ruled_out.push((format, reason));
            }
        }
    }
    let candidates: Vec<TraceFormat> = fitting
        .iter()
        .copied()
        .filter(|f| !ruled_out.iter().any(|(r, _)| r == f))
        .collect();
    let layouts: Vec<&str> = fitting.iter().map(|f| f.name()).collect();
    let reasons: Vec<String> = ruled_out
        .iter()
        .map(|(format, reason)| format!("not {format}: {reason}"))
        .collect();
    let position = format!("line {data_no}");
    match candidates[..] {
        [format] => {
            let mut evidence = format!("{position} fits the layout of {}", layouts.join(", "));
            if !reasons.is_empty() {
                evidence += &format!("; {}", reasons.join("; "));
            }
            Ok(Detection { format, evidence })
        }
        [] if !fitting.is_empty() => Err((
            position,
            format!(
                "the first line fits the layout of {} but the first lines rule each out ({}); {}",
                layouts.join(", "),
                reasons.join("; "),
                name_it()
            ),
        )),
        [] => Err((
            position,
            format!(
                "cannot recognise the trace format from the first lines (the first is {}); {}",
                super::fields::show(first_data),
                name_it()
            ),
        )),
        _ => Err((position, ambiguous(&candidates, "the layouts"))),
    }
}

/// Two renderings of traces in the shared test data, recognised only to say that they are not
/// supported and what to read instead.
fn refuse_renderings(first: &[u8], position: &str) -> Result<(), (String, String)> {
    if trim(first).eq_ignore_ascii_case(b"version,time,op,size,lbn") {
        return Err((
            position.to_string(),
            "this is libCacheSim's CSV rendering of a vscsi trace (version,time,op,size,lbn), which keeps only whole seconds; read the binary .vscsi file instead".to_string(),
        ));
    }
    if is_pandas_header(first) {
        return Err((
            position.to_string(),
            "this looks like a pandas dump (a header row of column numbers and a leading index column), not a trace; write the original columns out without the index, e.g. as an FIU trace".to_string(),
        ));
    }
    Ok(())
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

/// What the times of the five-column lines of a sample say about their unit, and why.
pub(crate) enum FiveColumnTimes {
    /// DiskSim's milliseconds (and flags).
    Milliseconds(String),
    /// MQSim's integer nanoseconds (and 0/1 types).
    Nanoseconds(String),
}

/// Tells MQSim's nanoseconds-and-type convention from DiskSim's milliseconds-and-flags one in
/// the five-column lines of a sample: fractional times, tab separators or flags other than 0
/// and 1 mean DiskSim; all-integer times that advance by 1000 or more per request (the median
/// of non-zero steps), or never advance, mean MQSim.
pub(crate) fn five_column_times(sample: &[&[u8]]) -> FiveColumnTimes {
    let mut times = Vec::with_capacity(sample.len());
    for line in sample.iter().filter(|line| is_five_column(line)) {
        let mut f = [&b""[..]; 5];
        split_whitespace(line, &mut f);
        if f[0].contains(&b'.') {
            return FiveColumnTimes::Milliseconds(format!(
                "a fractional time ({}), which MQSim's integer nanoseconds never have",
                super::fields::show(f[0])
            ));
        }
        if line.contains(&b'\t') {
            return FiveColumnTimes::Milliseconds(
                "tab separators, which MQSim's traces never have".to_string(),
            );
        }
        if !matches!(f[4], b"0" | b"1") {
            return FiveColumnTimes::Milliseconds(format!(
                "a flags field of {}, where MQSim's type is 0 or 1",
                super::fields::show(f[4])
            ));
        }
        times.push(parse_u64(f[0]).unwrap_or(0));
    }
    let mut steps: Vec<u64> = times
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]))
        .filter(|&step| step > 0)
        .collect();
    if steps.is_empty() {
        return FiveColumnTimes::Nanoseconds(
            "integer times that never advance, which says nothing of milliseconds".to_string(),
        );
    }
    steps.sort_unstable();
    let median = steps[steps.len() / 2];
    if median >= 1000 {
        FiveColumnTimes::Nanoseconds(format!(
            "integer times advancing by {median} per request (the median step), nanoseconds rather than DiskSim's milliseconds"
        ))
    } else {
        FiveColumnTimes::Milliseconds(format!(
            "integer times advancing by {median} per request (the median step), milliseconds rather than MQSim's nanoseconds"
        ))
    }
}

/// At least this many sampled lines must all have sizes that are multiples of 512 before
/// detection takes it that the sizes count bytes, not sectors.
pub(crate) const BYTE_SIZES_MIN_LINES: usize = 8;

/// Rules out reading the sizes of the first lines (the fourth whitespace-separated field) as
/// 512-byte sectors when every one of at least [`BYTE_SIZES_MIN_LINES`] is a multiple of 512:
/// byte counts of a block device always are, sector counts almost never all are (as sectors,
/// each request would be a multiple of 256 KiB).
pub(crate) fn sizes_look_like_bytes(sample: &[&[u8]]) -> Option<String> {
    let mut sizes = Vec::with_capacity(sample.len());
    for line in sample {
        let mut f = [&b""[..]; 5];
        if split_whitespace(line, &mut f) != 5 {
            continue;
        }
        match parse_u64(f[3]) {
            Some(size) if size > 0 && size % 512 == 0 => sizes.push(size),
            _ => return None,
        }
    }
    if sizes.len() < BYTE_SIZES_MIN_LINES {
        return None;
    }
    let count = sizes.len();
    sizes.sort_unstable();
    sizes.dedup();
    let shown: Vec<String> = sizes.iter().take(4).map(u64::to_string).collect();
    Some(format!(
        "all {} sizes in the first lines are multiples of 512 ({}{}), as byte counts are; read as 512-byte sectors every request would be a multiple of 256 KiB",
        count,
        shown.join(", "),
        if sizes.len() > 4 { ", ..." } else { "" }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_column_conventions() {
        let mqsim = b"0 0 303567 7 0\n0 1 55590 6 0\n26214000 0 303574 7 0\n78643005 1 55596 6 1\n";
        assert_eq!(
            detect_bytes(mqsim).map(|d| d.format),
            Ok(TraceFormat::named("mqsim"))
        );
        let disksim_fraction = b"13.191135 30 0 5 1\n17.829285 20 576560 6 1\n";
        assert_eq!(
            detect_bytes(disksim_fraction).map(|d| d.format),
            Ok(TraceFormat::named("disksim-ascii"))
        );
        let disksim_integer_ms = b"10 0 0 8 1\n12 0 8 8 1\n15 0 16 8 0\n";
        assert_eq!(
            detect_bytes(disksim_integer_ms).map(|d| d.format),
            Ok(TraceFormat::named("disksim-ascii"))
        );
        let disksim_flags = b"0 0 0 8 3\n";
        assert_eq!(
            detect_bytes(disksim_flags).map(|d| d.format),
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
