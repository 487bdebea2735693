//! `storsim cosim`'s preload library and its wire format.
//!
//! Built normally (as a dependency of `storsim-cosim`), this crate is only the contract between
//! the controller and the programs it runs: [`proto`] (the messages on the controller's socket)
//! and [`clock`] (the shared page holding the virtual clock). The CLI's build script compiles
//! the same source a second time as a `cdylib` with `--cfg storsim_cosim_shim`, which adds the
//! `hooks` module: the libc functions the library interposes when it is loaded with
//! `LD_PRELOAD`. The crate has no dependencies so that the build script can compile it with a
//! bare `rustc`.

pub mod clock;
pub mod proto;

#[cfg(storsim_cosim_shim)]
mod hooks;
