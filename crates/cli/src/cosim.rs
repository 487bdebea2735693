//! `storsim cosim`: argument checks, the preload library's file, and the report.

use crate::args::CosimArgs;
use crate::destination;
use crate::CliError;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use storsim_cosim::{Options, ProgramExit, RecordTarget};

/// The preload library, built by build.rs from crates/cosim-shim.
static SHIM_LIBRARY: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libstorsim_cosim_shim.so"));

/// A private directory for the library, the socket and the clock page, removed at the end.
struct WorkDir(PathBuf);

impl WorkDir {
    fn create() -> Result<WorkDir, CliError> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let dir =
            std::env::temp_dir().join(format!("storsim-cosim-{}-{nanos}", std::process::id()));
        std::fs::create_dir(&dir)
            .map_err(|e| CliError::failure(format!("creating {}: {e}", dir.display())))?;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| CliError::failure(format!("{}: {e}", dir.display())))?;
        Ok(WorkDir(dir))
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn cpu_speed(text: &str) -> Result<f64, CliError> {
    let bad = || {
        CliError::input(format!(
            "--cpu-speed {text}: give a positive number or `inf`"
        ))
    };
    let v = match text {
        "inf" | "infinite" | "infinity" => f64::INFINITY,
        _ => text.parse::<f64>().map_err(|_| bad())?,
    };
    if v > 0.0 && !v.is_nan() {
        Ok(v)
    } else {
        Err(bad())
    }
}

/// Finds the program the way execvp would.
fn resolve(program: &Path) -> Option<PathBuf> {
    if program.components().count() > 1 {
        return Some(program.to_path_buf());
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(program))
            .find(|p| p.is_file())
    })
}

/// Why the preload library will not be loaded into `program`, if that can be told beforehand:
/// static ELF binaries have no dynamic loader to load it, and setuid or setgid ones ignore it.
fn unreachable_reason(program: &Path) -> Option<String> {
    let path = resolve(program)?;
    let meta = std::fs::metadata(&path).ok()?;
    if meta.permissions().mode() & 0o6000 != 0 {
        return Some(format!(
            "{} is setuid or setgid: the loader ignores LD_PRELOAD for it",
            path.display()
        ));
    }
    let mut head = [0u8; 64];
    std::fs::File::open(&path)
        .ok()?
        .read_exact(&mut head)
        .ok()?;
    if &head[0..4] != b"\x7fELF" || head[4] != 2 {
        return None;
    }
    let u16_at = |i: usize| u16::from_le_bytes([head[i], head[i + 1]]) as usize;
    let phoff = u64::from_le_bytes(head[32..40].try_into().unwrap()) as usize;
    let (phentsize, phnum) = (u16_at(54), u16_at(56));
    let all = std::fs::read(&path).ok()?;
    let table = all.get(phoff..phoff.checked_add(phentsize.checked_mul(phnum)?)?)?;
    let dynamic = table
        .chunks(phentsize.max(4))
        .any(|ph| u32::from_le_bytes([ph[0], ph[1], ph[2], ph[3]]) == 3);
    (!dynamic).then(|| {
        format!(
            "{} is statically linked: its calls cannot be intercepted, so it runs in real time and the device sees nothing",
            path.display()
        )
    })
}

pub fn run(args: CosimArgs) -> Result<(), CliError> {
    let loaded = storsim_config::load_device(&args.device).map_err(CliError::input)?;
    crate::simulate::check_memory(&loaded.name, &loaded.spec)?;
    let cpu_speed = cpu_speed(&args.cpu_speed)?;
    let extent_bytes = storsim_workload::synthetic::parse_size(&args.extent_size)
        .map_err(|e| CliError::input(format!("--extent-size {}: {e}", args.extent_size)))?;
    let mut spec = loaded.spec.clone();
    spec.seed_faults(args.seed);
    let device = spec
        .build()
        .map_err(|e| CliError::input(format!("{}: {e}", loaded.name)))?;
    if let Some(reason) = unreachable_reason(Path::new(&args.program[0])) {
        eprintln!("storsim: warning: {reason}");
    }
    let work = WorkDir::create()?;
    let shim_library = work.0.join("libstorsim_cosim_shim.so");
    std::fs::write(&shim_library, SHIM_LIBRARY)
        .map_err(|e| CliError::failure(format!("writing {}: {e}", shim_library.display())))?;
    let record = match &args.record {
        Some(path) => {
            let file = std::fs::File::create(path)
                .map_err(|e| CliError::failure(format!("--record {}: {e}", path.display())))?;
            let out: Box<dyn std::io::Write + Send> =
                Box::new(std::io::BufWriter::with_capacity(1 << 20, file));
            let header = vec![
                ("device".to_string(), loaded.name.clone()),
                ("source".to_string(), "storsim cosim".to_string()),
            ];
            Some(RecordTarget { out, header })
        }
        None => None,
    };
    let options = Options {
        dir: args.dir.clone(),
        image: args.image.clone(),
        cpu_speed,
        extent_bytes,
        real_sync: args.real_sync,
        work_dir: work.0.clone(),
        shim_library,
        record,
        window: args.window,
    };
    let (cosim, device) =
        storsim_cosim::run(device, &args.program, options).map_err(|e| match e {
            storsim_cosim::CosimError::Input(m) => CliError::input(m),
            other => CliError::failure(other),
        })?;
    let results = storsim_output::CosimResults {
        command_line: &destination::command_line(),
        device: &storsim_output::DeviceFacts::read(&loaded.name, device.as_ref()),
        program: &args.program,
        extent_bytes,
        report: &cosim,
        faults: loaded.spec.faults(),
    };
    if let Some(path) = &args.report {
        destination::write_json(path, &storsim_output::cosim_json(&results))?;
    }
    if !args.quiet {
        // A closed standard error (the program's consumer went away) must not turn the end of
        // the run into a panic.
        let _ = std::io::stderr().write_all(storsim_output::cosim_text(&results).as_bytes());
    }
    match cosim.exit {
        ProgramExit::Code(0) => Ok(()),
        ProgramExit::Code(c) => Err(CliError {
            message: format!("the program exited with status {c}"),
            status: c.clamp(1, 255) as u8,
        }),
        ProgramExit::Signal(s) => Err(CliError {
            message: format!("the program was killed by signal {s}"),
            status: (128 + s).clamp(1, 255) as u8,
        }),
    }
}
