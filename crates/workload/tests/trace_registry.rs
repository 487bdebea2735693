//! The format table against what is said about it elsewhere: every format has its page in
//! `docs/formats/`, its row in the formats README, and checked-in samples that detection
//! recognises as that format and that parse without error.

mod common;

use common::data_dir;
use std::path::{Path, PathBuf};
use storsim_workload::trace::{detect, open, TraceFormat, TraceOptions};

fn docs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/formats")
}

#[test]
fn every_format_has_a_doc_page() {
    for format in TraceFormat::all() {
        let page = docs_dir().join(format!("{}.md", format.name()));
        assert!(page.is_file(), "{format}: {} is missing", page.display());
    }
}

/// The README's table lists the formats, one row each, in the table's order, so that the list a
/// reader sees is the list the code has.
#[test]
fn the_formats_readme_lists_the_table() {
    let readme = std::fs::read_to_string(docs_dir().join("README.md")).unwrap();
    let listed: Vec<&str> = readme
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split('`').next())
        .collect();
    let names: Vec<&str> = TraceFormat::all().map(TraceFormat::name).collect();
    assert_eq!(listed, names);
}

/// The checked-in samples of a format: `tests/data/STEM_*sample*`, where the stem is the
/// format's name with `_` for `-`.
fn samples(format: TraceFormat) -> Vec<PathBuf> {
    let stem = format!("{}_", format.name().replace('-', "_"));
    let mut found: Vec<PathBuf> = std::fs::read_dir(data_dir())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            let name = path.file_name().unwrap().to_str().unwrap();
            name.starts_with(&stem) && name.contains("sample")
        })
        .collect();
    found.sort();
    found
}

#[test]
fn every_format_recognises_and_reads_its_samples() {
    for format in TraceFormat::all() {
        let samples = samples(format);
        assert!(!samples.is_empty(), "{format}: no sample in tests/data");
        for sample in samples {
            let found = detect(&sample).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(found, format, "{}", sample.display());
            let workload = open(&sample, &TraceOptions::default()).unwrap();
            assert_eq!(workload.format, Some(format.name()));
            let records = workload
                .records
                .collect::<Result<Vec<_>, _>>()
                .unwrap_or_else(|e| panic!("{}: {e}", sample.display()));
            assert!(!records.is_empty(), "{}: no records", sample.display());
        }
    }
}

#[test]
fn names_aliases_and_descriptions() {
    for format in TraceFormat::all() {
        assert_eq!(TraceFormat::from_name(format.name()), Some(format));
        assert_eq!(
            TraceFormat::from_name(&format.name().to_uppercase()),
            Some(format)
        );
        assert_eq!(format.to_string(), format.name());
        assert!(!format.describe().is_empty() && !format.describe().contains('\n'));
    }
    assert_eq!(
        TraceFormat::from_name("ssdsim"),
        Some(TraceFormat::named("mqsim"))
    );
    assert_eq!(TraceFormat::from_name("csv"), None);
}
