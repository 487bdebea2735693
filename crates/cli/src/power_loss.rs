//! Power loss on the command line: `emulate`'s crash options and the `crash` control command
//! (through [`setup`] and [`crash_command`]), the crash log, and `storsim replay-log` over
//! `storsim-api`'s replay (docs/faults.md, "Power loss").

use crate::args::{AfterCrashArg, EmulateArgs, ReplayLogArgs, TornArg};
use crate::CliError;
use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use storsim_emulate::power::write_log::{ReplayTo, WriteLogWriter};
use storsim_emulate::power::{
    AfterCrash, Atomicity, Crash, CrashMode, CrashTrigger, PowerLossOptions,
};
use storsim_emulate::Emulator;
use storsim_output::{crash_json, crash_summary_json, PowerLossSettings};

/// The crash mode `--torn` and `--crash-seed` ask for.
fn crash_mode(torn: Option<TornArg>, seed: u64) -> CrashMode {
    match torn {
        None => CrashMode::DropAll,
        Some(TornArg::Sector) => CrashMode::Torn {
            atomicity: Atomicity::Sector,
            seed,
        },
        Some(TornArg::Page) => CrashMode::Torn {
            atomicity: Atomicity::Page,
            seed,
        },
    }
}

/// Whether `emulate`'s arguments ask for power loss.
fn wanted(args: &EmulateArgs) -> bool {
    args.power_loss
        || args.crash_after_writes.is_some()
        || args.crash_at.is_some()
        || args.torn.is_some()
        || args.write_log.is_some()
        || args.crash_log.is_some()
}

/// One line for standard error about a crash.
fn crash_line(crash: &Crash) -> String {
    let r = &crash.report;
    format!(
        "storsim: crash {} ({}) after {} writes, {:.3} s in: {} writes not durable, {} bytes of \
         them lost ({})",
        crash.number,
        crash.trigger.name(),
        r.writes,
        crash.at.as_ns() as f64 / 1e9,
        r.volatile.len(),
        r.dropped_bytes(),
        r.mode
    )
}

/// The power-loss settings `emulate`'s arguments give that only the command line knows.
pub fn settings(args: &EmulateArgs) -> PowerLossSettings {
    PowerLossSettings {
        crash_at_ns: args.crash_at,
        write_log: args.write_log.clone(),
        crash_log: args.crash_log.clone(),
    }
}

/// Turns power loss on in `emulator` as `emulate`'s arguments ask, before any front end starts,
/// and starts the `--crash-at` timer. Returns whether it is on (the `crash` command needs it).
pub fn setup(
    args: &EmulateArgs,
    emulator: &Arc<Emulator>,
    export_bytes: u64,
) -> Result<bool, CliError> {
    // Checked even when power loss is off: a bad value is refused wherever it is.
    let write_cache_bytes = storsim_workload::synthetic::parse_size(&args.write_cache)
        .map_err(|e| CliError::input(format!("--write-cache {}: {e}", args.write_cache)))?;
    if write_cache_bytes == 0 {
        return Err(CliError::input(
            "--write-cache: a cache of 0 bytes holds nothing to lose; leave power loss off instead",
        ));
    }
    if !wanted(args) {
        return Ok(false);
    }
    if args.crash_after_writes == Some(0) {
        return Err(CliError::input(
            "--crash-after-writes: writes are counted from 1, so 0 never comes",
        ));
    }
    let write_log = match &args.write_log {
        Some(path) => Some(
            WriteLogWriter::create(path, export_bytes, write_cache_bytes)
                .map_err(|e| CliError::input(format!("--write-log: {e}")))?,
        ),
        None => None,
    };
    let crash_log = match &args.crash_log {
        Some(path) => Some(Mutex::new(File::create(path).map_err(|e| {
            CliError::input(format!("--crash-log {}: {e}", path.display()))
        })?)),
        None => None,
    };
    let crash_log_path = args.crash_log.clone().unwrap_or_default();
    let on_crash = move |crash: &Crash| {
        eprintln!("{}", crash_line(crash));
        if let Some(file) = &crash_log {
            let mut line = crash_summary_json(&crash.summary());
            line["volatile"] = crash_json(&crash.report)["volatile"].take();
            let mut file = file.lock().unwrap_or_else(|p| p.into_inner());
            if let Err(e) = writeln!(file, "{line}").and_then(|()| file.flush()) {
                eprintln!("storsim: --crash-log {}: {e}", crash_log_path.display());
            }
        }
    };
    emulator
        .enable_power_loss(PowerLossOptions {
            write_cache_bytes,
            mode: crash_mode(args.torn, args.crash_seed),
            crash_after_writes: args.crash_after_writes,
            after_crash: match args.after_crash {
                AfterCrashArg::Serve => AfterCrash::Serve,
                AfterCrashArg::Stop => AfterCrash::Stop,
            },
            write_log,
            on_crash: Some(Box::new(on_crash)),
        })
        .map_err(CliError::failure)?;
    if let Some(at_ns) = args.crash_at {
        let emulator = Arc::clone(emulator);
        std::thread::Builder::new()
            .name("storsim-crash-at".into())
            .spawn(move || {
                std::thread::sleep(std::time::Duration::from_nanos(at_ns));
                if let Err(e) = emulator.crash(CrashTrigger::Time) {
                    eprintln!("storsim: --crash-at: {e}");
                }
            })
            .map_err(|e| CliError::failure(format!("starting the --crash-at timer: {e}")))?;
    }
    Ok(true)
}

/// The control socket's `crash` command.
pub fn crash_command(emulator: &Emulator) -> Result<String, String> {
    let crash = emulator
        .crash(CrashTrigger::Command)
        .map_err(|e| e.to_string())?;
    Ok(storsim_output::control_line(
        &storsim_output::ControlAnswer::Crash {
            number: crash.number,
            report: &crash.report,
        },
    ))
}

/// `storsim replay-log`: the arguments as `storsim-api`'s replay options, and what it
/// returns printed or written where the arguments say.
pub fn replay_log(args: ReplayLogArgs) -> Result<(), CliError> {
    let log = storsim_api::WriteLog::open(&args.log)?;
    if args.list {
        crate::stdout::say!(
            "{}",
            storsim_output::replay_log_points_text(log.writes, &log.flushes_after_writes)
        );
        return Ok(());
    }
    let Some(out) = &args.out else {
        return Err(CliError::input(
            "replay-log: --out IMAGE is needed (or --list to see the crash points)",
        ));
    };
    let options = storsim_api::ReplayLogOptions {
        to: match (args.to_write, args.to_flush) {
            // clap refuses the two together.
            (Some(n), _) => ReplayTo::Write(n),
            (None, Some(k)) => ReplayTo::Flush(k),
            (None, None) => ReplayTo::End,
        },
        mode: crash_mode(args.torn, args.seed),
    };
    let replayed = log.replay(&options, out)?;
    // Standard output is left to the document when it goes there.
    if args.json.as_deref() != Some(Path::new("-")) {
        crate::stdout::say!(
            "{}",
            storsim_output::replay_log_text(
                replayed.log_writes,
                replayed.writes,
                out,
                &replayed.crash
            )
        );
    }
    if let Some(path) = &args.json {
        let document = replayed.document(&crate::destination::command_line());
        crate::destination::write_json(path, &document)?;
    }
    Ok(())
}
