//! What a test does when the machine it runs on lacks something it needs.
//!
//! Many of storsim's tests drive real parts: fio, qemu-io, nbdinfo, a FUSE mount, a loop device,
//! the public traces and DiskSim's validation data in `../shared`. On a developer's machine a
//! missing part is a reason to skip (with a line saying what is missing), so that the rest of
//! the suite still runs. In CI it is not: `.ci/run` installs every tool and has `../shared`
//! beside the clone, so a test that would skip there has found a broken promise, and a silent
//! skip would hide exactly the test the promise was for (the DiskSim accuracy test once passed
//! that way). `.ci/run` therefore sets [`REQUIRE_ALL_VAR`], and [`missing`] fails the test
//! instead of skipping it.
//!
//! One kind of skip stays a skip in CI: a kernel feature the machine lacks ([`kernel_lacks`]),
//! such as FUSE over io_uring before Linux 6.14, which no package installs.
//!
//! ```
//! fn have(tool: &str) -> bool {
//!     let found = std::path::Path::new("/usr/bin").join(tool).exists();
//!     if !found {
//!         storsim_testenv::missing(&format!("`{tool}` is not installed"));
//!     }
//!     found
//! }
//! ```

pub mod chromium;

/// The environment variable `.ci/run` sets (to `1`) to make [`missing`] fail instead of skip.
pub const REQUIRE_ALL_VAR: &str = "STORSIM_TEST_REQUIRE_ALL";

/// Whether this run promises every tool, device and data set the tests use.
pub fn require_all() -> bool {
    std::env::var_os(REQUIRE_ALL_VAR).is_some_and(|v| !v.is_empty() && v != "0")
}

/// Reports that the calling test cannot run because `what` is missing here: a tool, a device,
/// a permission or `../shared` data. Prints a `SKIP:` line and returns, after which the caller
/// returns; under [`REQUIRE_ALL_VAR`] it panics instead, naming what was missing.
#[track_caller]
pub fn missing(what: &str) {
    if require_all() {
        panic!(
            "{what}; this run promises every test's tools and data ({REQUIRE_ALL_VAR} is set \
             by .ci/run), so the test fails instead of skipping"
        );
    }
    eprintln!("SKIP: {what}");
}

/// `rel` under `../shared` beside the repository (the public traces, DiskSim's validation
/// data; each folder's PROVENANCE.md says where they come from), or `None` after reporting it
/// [`missing`] when it is not there.
#[track_caller]
pub fn shared(rel: &str) -> Option<std::path::PathBuf> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared")
        .join(rel);
    if path.exists() {
        Some(path)
    } else {
        missing(&format!(
            "{} not found (../shared lives beside the repository; see its PROVENANCE.md files)",
            path.display()
        ));
        None
    }
}

/// Reports that the calling test cannot run because the kernel lacks a feature (`what` says
/// which and how that was found). Always a skip, in CI too, since no package adds it; the line
/// says why.
pub fn kernel_lacks(what: &str) {
    eprintln!("SKIP (kernel feature missing): {what}");
}

/// The environment variable that makes [`check_generated_block`] write the block into the
/// page instead of failing when it differs.
pub const BLESS_ENV: &str = "STORSIM_BLESS_DOCS";

/// Checks that the doc page at `path` holds `text` between `<!-- KEY -->` and
/// `<!-- /NAME -->` (where KEY is `NAME: ...`, as `counters: ssd`), so that what a page lists
/// is made from the code it documents; with [`BLESS_ENV`] set it writes `text` there instead.
/// The error says how to bring the page up to date.
pub fn check_generated_block(path: &std::path::Path, key: &str, text: &str) -> Result<(), String> {
    let page = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let open = format!("<!-- {key} -->\n");
    let close = format!("<!-- /{} -->", key.split(':').next().unwrap_or(key));
    let start = page
        .find(&open)
        .ok_or_else(|| format!("{} has no `{}` marker", path.display(), open.trim_end()))?
        + open.len();
    let end = start
        + page[start..]
            .find(&close)
            .ok_or_else(|| format!("{} has no `{close}` after `{key}`", path.display()))?;
    if page[start..end] == *text {
        return Ok(());
    }
    if std::env::var_os(BLESS_ENV).is_some() {
        let updated = format!("{}{text}{}", &page[..start], &page[end..]);
        return std::fs::write(path, updated).map_err(|e| format!("{}: {e}", path.display()));
    }
    Err(format!(
        "{}: the block `{key}` differs from what the code makes; run the test with \
         {BLESS_ENV}=1 to write it",
        path.display()
    ))
}

/// Checks that the page at `page` (a path from the repository's root, `docs/models/ssd.md`)
/// holds each of `tables` (a block's key and the text the code makes) in its
/// `<!-- counters: KEY -->` block, as [`check_generated_block`] does.
pub fn check_counter_tables(page: &str, tables: &[(&str, String)]) -> Result<(), String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(page);
    for (key, text) in tables {
        check_generated_block(&path, &format!("counters: {key}"), text)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    // Both cases change the process environment, so they run in one test, in turn.
    #[test]
    fn missing_skips_by_default_and_fails_when_everything_is_promised() {
        let saved = std::env::var_os(REQUIRE_ALL_VAR);
        std::env::remove_var(REQUIRE_ALL_VAR);
        assert!(!require_all());
        missing("a tool for this test");
        std::env::set_var(REQUIRE_ALL_VAR, "0");
        assert!(!require_all());
        std::env::set_var(REQUIRE_ALL_VAR, "1");
        assert!(require_all());
        let panic = std::panic::catch_unwind(|| missing("`fio` is not installed"))
            .expect_err("missing must fail the test when everything is promised");
        let message = panic.downcast_ref::<String>().expect("a formatted message");
        assert!(message.starts_with("`fio` is not installed;"), "{message}");
        kernel_lacks("no FUSE over io_uring");
        match saved {
            Some(v) => std::env::set_var(REQUIRE_ALL_VAR, v),
            None => std::env::remove_var(REQUIRE_ALL_VAR),
        }
    }
}
