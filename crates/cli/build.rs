//! Builds `storsim cosim`'s preload library, so that the storsim binary can carry it.
//!
//! The library is the `storsim-cosim-shim` crate compiled as a C dynamic library with the
//! `storsim_cosim_shim` cfg, which turns on its interposed libc functions. It cannot be an
//! ordinary dependency (its `open`, `read` and `clock_gettime` would replace libc's in storsim
//! itself), and cargo cannot hand one crate's `cdylib` to another, so this script runs the same
//! `rustc` cargo uses on the crate's source, which has no dependencies for that reason.

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let manifest =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let source_dir = manifest.join("../cosim-shim/src");
    println!("cargo:rerun-if-changed={}", source_dir.display());
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"))
        .join("libstorsim_cosim_shim.so");
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let target = env::var("TARGET").expect("cargo sets TARGET");
    let status = Command::new(rustc)
        .args([
            "--edition=2021",
            "--crate-type=cdylib",
            "--crate-name=storsim_cosim_shim",
            "--cfg=storsim_cosim_shim",
            "-Copt-level=2",
            "-Cpanic=abort",
            "-Cdebuginfo=0",
            "--cap-lints=warn",
        ])
        .arg(format!("--target={target}"))
        .arg("-o")
        .arg(&out)
        .arg(source_dir.join("lib.rs"))
        .status()
        .expect("running rustc to build the cosim preload library");
    assert!(
        status.success(),
        "building the cosim preload library failed"
    );
}
