//! What the binary's end-to-end tests share: running `storsim` from the repository root, a
//! scratch directory per test, and its standard error as text.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs the `storsim` binary from the repository root, so relative paths like
/// `examples/...` resolve.
pub fn storsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_storsim"))
        .args(args)
        .current_dir(repo_root())
        .output()
        .expect("the storsim binary runs")
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// A scratch directory named after the test binary's process and `name`.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("storsim-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
