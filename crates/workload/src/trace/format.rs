//! The table of trace formats: one self-describing entry per format.
//!
//! Each format's file (`msr.rs`, `vscsi.rs`, ...) defines one [`FormatEntry`] named `FORMAT`
//! that says everything the rest of the crate needs: its name, its one-line description, how
//! detection recognises it, how its records are paced, whether positions are lines or byte
//! offsets, whether it can hold several devices, and the constructor of its parser. [`FORMATS`]
//! lists those entries; detection, [`open`](super::open), the help text and the documentation
//! check iterate it, so adding a format is its file plus one line here.

use super::measured::MeasuredFn;
use super::{ParseContext, Records, TraceOptions};
use crate::{Origin, Pacing};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::io::BufRead;

/// Every trace format storsim reads, in the order help text lists them. The order does not
/// decide detection (see [`Detect`]): formats whose grammars accept the same lines tell
/// themselves apart by their `rule_out` tests, or the file is refused as ambiguous.
const FORMATS: [&FormatEntry; 15] = [
    &super::msr::FORMAT,
    &super::spc::FORMAT,
    &super::disksim_ascii::FORMAT,
    &super::mqsim::FORMAT,
    &super::blkparse::FORMAT,
    &super::fio::FORMAT,
    &super::fiu::FORMAT,
    &super::validate::FORMAT,
    &super::hp_srt::FORMAT,
    &super::vscsi::FORMAT,
    &super::storsim_record::FORMAT,
    &super::linnos::FORMAT,
    &super::alibaba::FORMAT,
    &super::tencent::FORMAT,
    &super::systor::FORMAT,
];

/// A test of whether one line fits a format's grammar.
pub(crate) type LineCheck = fn(&[u8]) -> bool;

/// What in the first data lines (at most [`SAMPLE_LINES`](super::detect::SAMPLE_LINES)) rules
/// a format out although its grammar fits them, for formats that share a line grammar and
/// differ in their values: `Some(reason)` rules it out, in words a user can check against the
/// file.
pub(crate) type RuleOut = fn(&[&[u8]]) -> Option<String>;

/// How detection recognises a format from the first bytes of a (decompressed) file. Detection
/// tries every [`Magic`](Detect::Magic) entry, then every [`Binary`](Detect::Binary) one, then,
/// if the file is text, every [`Text`](Detect::Text) one. Within the binary and text stages it
/// never picks by table order: every format that fits is a candidate, and a file that more than
/// one candidate fits is refused with the candidates named, so that a trace is never silently
/// read with another format's units.
pub(crate) enum Detect {
    /// The file starts with a magic line that settles the format before anything else is
    /// tried. The check returns `None` when the magic is absent, or whether the version the
    /// magic names can be read (an error is reported at line 1).
    Magic(fn(&[u8]) -> Option<Result<(), String>>),
    /// Binary records recognised by a magic or by fields at fixed offsets; `signature` says
    /// what is looked for, for the message when a binary file fits no format.
    Binary {
        check: fn(&[u8]) -> bool,
        signature: &'static str,
    },
    /// Text recognised by its first data line (blank and `#` lines skipped).
    Text {
        /// A column-header line the format may start with; detection looks past it whatever
        /// the format turns out to be.
        header: Option<LineCheck>,
        /// The grammar the first data line must fit.
        first: LineCheck,
        /// What rules the format out when another format's grammar fits the same lines.
        rule_out: Option<RuleOut>,
    },
}

/// Everything storsim knows about one trace format outside its parser.
pub(crate) struct FormatEntry {
    /// The name on the command line and in `docs/formats/NAME.md`.
    pub name: &'static str,
    /// Other names accepted for it (matching ignores ASCII case, as for `name`).
    pub aliases: &'static [&'static str],
    /// One line saying what the format is, for help text.
    pub description: &'static str,
    /// How detection recognises it.
    pub detect: Detect,
    /// Records carry a byte offset into the file rather than a line number.
    pub binary: bool,
    /// Records always carry device 0, so that laying devices out has nothing to do.
    pub single_device: bool,
    /// Whether every line names its device in the second whitespace-separated field, so that a
    /// quick scan of that column can show the file names one device and spare the sizing pass.
    pub device_column: bool,
    /// How its records arrive.
    pub pacing: Pacing,
    /// Builds the record stream of one pass over an opened input.
    pub records: fn(Box<dyn BufRead>, ParseContext, &TraceOptions) -> Records,
    /// Reads the response times the trace measured on the real device, for formats that carry
    /// them (see [`measured_response_times`](super::measured_response_times)).
    pub measured: Option<MeasuredFn>,
}

/// A trace format storsim reads: a handle on its entry in the format table. Formats compare,
/// hash and print by name.
#[derive(Clone, Copy)]
pub struct TraceFormat(&'static FormatEntry);

impl TraceFormat {
    /// Every format, in the order help text lists them.
    pub fn all() -> impl Iterator<Item = TraceFormat> {
        FORMATS.into_iter().map(TraceFormat)
    }

    /// Looks a format up by [`name`](Self::name) or one of its other names (`ssdsim` for
    /// `mqsim`, because SSDsim reads the same layout). Matching ignores ASCII case.
    pub fn from_name(s: &str) -> Option<Self> {
        Self::all().find(|f| {
            f.0.name.eq_ignore_ascii_case(s)
                || f.0.aliases.iter().any(|a| a.eq_ignore_ascii_case(s))
        })
    }

    /// The format of this exact name, for naming a format in code:
    /// `const MSR: TraceFormat = TraceFormat::named("msr");` fails to build if no format has
    /// that name. Input from users goes through [`from_name`](Self::from_name), which says
    /// `None` instead.
    pub const fn named(name: &str) -> Self {
        let mut i = 0;
        while i < FORMATS.len() {
            if bytes_equal(FORMATS[i].name.as_bytes(), name.as_bytes()) {
                return TraceFormat(FORMATS[i]);
            }
            i += 1;
        }
        panic!("no trace format has this name");
    }

    /// The name used on the command line and in configuration files.
    pub fn name(self) -> &'static str {
        self.0.name
    }

    /// One line saying what the format is, for help text.
    pub fn describe(self) -> &'static str {
        self.0.description
    }

    /// Whether records carry a byte offset into the file rather than a line number.
    pub fn is_binary(self) -> bool {
        self.0.binary
    }

    /// Whether records always carry device 0, so that concatenation has nothing to do.
    pub fn is_single_device(self) -> bool {
        self.0.single_device
    }

    /// How the format's records arrive: at their timestamps, or closed loop.
    pub fn pacing(self) -> Pacing {
        self.0.pacing
    }

    /// Whether the format's traces carry the response times measured on the traced device
    /// (read by [`measured_response_times`](super::measured_response_times)).
    pub fn measures_response_times(self) -> bool {
        self.0.measured.is_some()
    }

    /// What the positions in the format's error messages count.
    pub fn origin(self) -> Origin {
        if self.0.binary {
            Origin::ByteOffset
        } else {
            Origin::Line
        }
    }

    /// The format's table entry.
    pub(crate) fn entry(self) -> &'static FormatEntry {
        self.0
    }
}

/// Byte-wise equality usable in a `const fn`.
const fn bytes_equal(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

impl PartialEq for TraceFormat {
    fn eq(&self, other: &Self) -> bool {
        self.0.name == other.0.name
    }
}

impl Eq for TraceFormat {}

impl Hash for TraceFormat {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.name.hash(state);
    }
}

impl fmt::Debug for TraceFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TraceFormat({:?})", self.0.name)
    }
}

impl fmt::Display for TraceFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_aliases_are_unique() {
        let mut names: Vec<String> = TraceFormat::all()
            .flat_map(|f| std::iter::once(f.0.name).chain(f.0.aliases.iter().copied()))
            .map(str::to_ascii_lowercase)
            .collect();
        let count = names.len();
        names.sort();
        names.dedup();
        assert_eq!(
            names.len(),
            count,
            "a name or alias is used twice: {names:?}"
        );
    }

    #[test]
    fn named_finds_every_entry() {
        for format in TraceFormat::all() {
            assert_eq!(TraceFormat::named(format.name()), format);
        }
    }
}
