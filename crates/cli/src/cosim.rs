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
/// A malformed ELF file is bad input: the kernel would refuse to run it, and this says why.
fn unreachable_reason(program: &Path) -> Result<Option<String>, CliError> {
    let Some(path) = resolve(program) else {
        return Ok(None);
    };
    // A program that cannot be read here is left to the start of the run, which names it.
    let Ok(meta) = std::fs::metadata(&path) else {
        return Ok(None);
    };
    if meta.permissions().mode() & 0o6000 != 0 {
        return Ok(Some(format!(
            "{} is setuid or setgid: the loader ignores LD_PRELOAD for it",
            path.display()
        )));
    }
    let Ok(mut file) = std::fs::File::open(&path) else {
        return Ok(None);
    };
    match elf_linking(&mut file) {
        Ok(Linking::Static) => Ok(Some(format!(
            "{} is statically linked: its calls cannot be intercepted, so it runs in real time and the device sees nothing",
            path.display()
        ))),
        Ok(Linking::Dynamic | Linking::NotChecked) | Err(ElfError::Read(_)) => Ok(None),
        Err(e) => Err(CliError::input(format!(
            "{}: not a program that can run: {e}",
            path.display()
        ))),
    }
}

/// What the ELF header says of how a program is linked.
#[derive(Debug, PartialEq)]
enum Linking {
    /// It names a program interpreter (the dynamic loader), which loads the preload library.
    Dynamic,
    /// It names none: nothing loads the library.
    Static,
    /// Not an ELF file (a script, say), or a 32-bit one, which this check does not read: the
    /// kernel decides.
    NotChecked,
}

/// Why an ELF file's header or program-header table cannot be read.
#[derive(Debug, PartialEq)]
enum ElfError {
    /// The file ends inside the 64-byte ELF64 header.
    TruncatedHeader { len: usize },
    /// `EI_CLASS` is neither 32- nor 64-bit.
    Class(u8),
    /// `EI_DATA` is neither little- nor big-endian.
    Encoding(u8),
    /// `e_type` is not an executable or a position-independent one (a relocatable object, a
    /// core dump).
    NotExecutable(u16),
    /// `e_phnum` is 0: there is nothing to load.
    NoProgramHeaders,
    /// `e_phentsize` is not the size of an ELF64 program header.
    EntrySize(usize),
    /// The table is larger than the kernel reads (64 KiB).
    TableTooLarge { bytes: usize },
    /// The table reaches past the end of the file (or past any file: the offset overflows).
    TableOutsideFile { offset: u64, bytes: usize },
    /// Reading the file failed; the run's start reports it.
    Read(std::io::ErrorKind),
}

impl std::fmt::Display for ElfError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ElfError::TruncatedHeader { len } => write!(
                f,
                "it starts as an ELF file but ends after {len} bytes, inside the 64-byte ELF header"
            ),
            ElfError::Class(c) => write!(
                f,
                "its ELF class (EI_CLASS) is {c}, neither 1 (32-bit) nor 2 (64-bit)"
            ),
            ElfError::Encoding(d) => write!(
                f,
                "its ELF data encoding (EI_DATA) is {d}, neither 1 (little-endian) nor 2 (big-endian)"
            ),
            ElfError::NotExecutable(t) => write!(
                f,
                "its ELF type (e_type) is {t}, not an executable (2) or a position-independent one (3)"
            ),
            ElfError::NoProgramHeaders => {
                write!(f, "its ELF header lists no program headers (e_phnum is 0)")
            }
            ElfError::EntrySize(size) => write!(
                f,
                "its program-header entry size (e_phentsize) is {size} bytes, not the \
                 {PHDR64_BYTES} of an ELF64 program header"
            ),
            ElfError::TableTooLarge { bytes } => write!(
                f,
                "its program-header table is {bytes} bytes, more than the {PHDR_TABLE_MAX} the \
                 kernel reads"
            ),
            ElfError::TableOutsideFile { offset, bytes } => write!(
                f,
                "its program-header table ({bytes} bytes at offset {offset}) reaches past the end \
                 of the file"
            ),
            ElfError::Read(kind) => write!(f, "reading it failed: {kind}"),
        }
    }
}

/// The size of an ELF64 program header, which the kernel requires `e_phentsize` to be.
const PHDR64_BYTES: usize = 56;
/// The largest program-header table the kernel reads (`load_elf_phdrs`).
const PHDR_TABLE_MAX: usize = 65536;
/// `p_type` of the program header naming the program interpreter.
const PT_INTERP: u32 = 3;

/// Reads how the ELF64 program in `file` is linked: whether a program header names an
/// interpreter. Every field is checked before it is used, as the kernel checks it, so a
/// hostile file is an error and never a read out of bounds.
fn elf_linking<F: Read + std::io::Seek>(file: &mut F) -> Result<Linking, ElfError> {
    let mut head = Vec::with_capacity(64);
    file.by_ref()
        .take(64)
        .read_to_end(&mut head)
        .map_err(|e| ElfError::Read(e.kind()))?;
    if !head.starts_with(b"\x7fELF") {
        return Ok(Linking::NotChecked);
    }
    if head.len() < 6 {
        return Err(ElfError::TruncatedHeader { len: head.len() });
    }
    match head[4] {
        1 => return Ok(Linking::NotChecked),
        2 => {}
        class => return Err(ElfError::Class(class)),
    }
    let big_endian = match head[5] {
        1 => false,
        2 => true,
        data => return Err(ElfError::Encoding(data)),
    };
    if head.len() < 64 {
        return Err(ElfError::TruncatedHeader { len: head.len() });
    }
    let field = |bytes: &[u8]| {
        bytes.iter().enumerate().fold(0u64, |v, (i, &b)| {
            let shift = if big_endian { bytes.len() - 1 - i } else { i };
            v | u64::from(b) << (8 * shift)
        })
    };
    let e_type = field(&head[16..18]) as u16;
    if e_type != 2 && e_type != 3 {
        return Err(ElfError::NotExecutable(e_type));
    }
    let phoff = field(&head[32..40]);
    let phentsize = field(&head[54..56]) as usize;
    let phnum = field(&head[56..58]) as usize;
    if phnum == 0 {
        return Err(ElfError::NoProgramHeaders);
    }
    if phentsize != PHDR64_BYTES {
        return Err(ElfError::EntrySize(phentsize));
    }
    // At most 65,535 entries of 56 bytes: no overflow.
    let bytes = phentsize * phnum;
    if bytes > PHDR_TABLE_MAX {
        return Err(ElfError::TableTooLarge { bytes });
    }
    let outside = ElfError::TableOutsideFile {
        offset: phoff,
        bytes,
    };
    if phoff.checked_add(bytes as u64).is_none() {
        return Err(outside);
    }
    file.seek(std::io::SeekFrom::Start(phoff))
        .map_err(|e| ElfError::Read(e.kind()))?;
    let mut table = Vec::with_capacity(bytes);
    file.take(bytes as u64)
        .read_to_end(&mut table)
        .map_err(|e| ElfError::Read(e.kind()))?;
    if table.len() < bytes {
        return Err(outside);
    }
    let interp = table
        .chunks_exact(PHDR64_BYTES)
        .any(|ph| field(&ph[0..4]) == u64::from(PT_INTERP));
    Ok(if interp {
        Linking::Dynamic
    } else {
        Linking::Static
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
    if let Some(reason) = unreachable_reason(Path::new(&args.program[0]))? {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// An ELF64 executable's header and program-header table: `types` are the entries'
    /// `p_type`s, the table right after the header.
    fn elf(big_endian: bool, types: &[u32]) -> Vec<u8> {
        let mut b = vec![0u8; 64];
        b[0..4].copy_from_slice(b"\x7fELF");
        b[4] = 2;
        b[5] = if big_endian { 2 } else { 1 };
        b[6] = 1;
        put(&mut b, big_endian, 16, 2, 3);
        put(&mut b, big_endian, 32, 8, 64);
        put(&mut b, big_endian, 52, 2, 64);
        put(&mut b, big_endian, 54, 2, PHDR64_BYTES as u64);
        put(&mut b, big_endian, 56, 2, types.len() as u64);
        for &t in types {
            let mut ph = vec![0u8; PHDR64_BYTES];
            put(&mut ph, big_endian, 0, 4, u64::from(t));
            b.extend(ph);
        }
        b
    }

    fn put(b: &mut [u8], big_endian: bool, at: usize, len: usize, value: u64) {
        for i in 0..len {
            let shift = if big_endian { len - 1 - i } else { i };
            b[at + i] = (value >> (8 * shift)) as u8;
        }
    }

    fn linking(bytes: &[u8]) -> Result<Linking, ElfError> {
        elf_linking(&mut Cursor::new(bytes))
    }

    #[test]
    fn an_interpreter_makes_a_program_dynamic_in_either_byte_order() {
        for big_endian in [false, true] {
            assert_eq!(linking(&elf(big_endian, &[6, 3, 1])), Ok(Linking::Dynamic));
            assert_eq!(linking(&elf(big_endian, &[6, 1, 1])), Ok(Linking::Static));
        }
        assert_eq!(linking(b"#!/bin/sh\necho hi\n"), Ok(Linking::NotChecked));
        assert_eq!(linking(b""), Ok(Linking::NotChecked));
        let mut elf32 = elf(false, &[3]);
        elf32[4] = 1;
        assert_eq!(linking(&elf32), Ok(Linking::NotChecked));
    }

    #[test]
    fn an_entry_size_other_than_an_elf64_program_headers_is_refused() {
        // Sizes 1 to 3 made the old reader index past a chunk of the table and panic.
        for size in [0u64, 1, 2, 3, 4, 8, 55, 57, 112, 65535] {
            let mut b = elf(false, &[3, 1]);
            put(&mut b, false, 54, 2, size);
            let e = linking(&b).unwrap_err();
            assert_eq!(e, ElfError::EntrySize(size as usize));
            assert!(
                e.to_string()
                    .contains(&format!("entry size (e_phentsize) is {size} bytes")),
                "{e}"
            );
        }
    }

    #[test]
    fn a_header_or_table_cut_short_or_out_of_range_is_refused() {
        let good = elf(false, &[1, 3]);
        for len in [4, 5, 6, 20, 63] {
            let e = linking(&good[..len]).unwrap_err();
            assert_eq!(e, ElfError::TruncatedHeader { len });
            assert!(
                e.to_string().contains(&format!("ends after {len} bytes")),
                "{e}"
            );
        }
        // The table's second entry cut in half.
        let cut = &good[..64 + PHDR64_BYTES + 20];
        assert_eq!(
            linking(cut),
            Err(ElfError::TableOutsideFile {
                offset: 64,
                bytes: 2 * PHDR64_BYTES
            })
        );
        for offset in [1u64 << 40, u64::MAX - 10, u64::MAX] {
            let mut b = good.clone();
            put(&mut b, false, 32, 8, offset);
            let e = linking(&b).unwrap_err();
            assert!(
                matches!(e, ElfError::TableOutsideFile { offset: o, .. } if o == offset),
                "{e:?}"
            );
            assert!(e.to_string().contains("past the end of the file"), "{e}");
        }
    }

    #[test]
    fn a_huge_or_empty_table_and_other_fields_out_of_range_are_refused() {
        let mut b = elf(false, &[3]);
        put(&mut b, false, 56, 2, 0xffff);
        let e = linking(&b).unwrap_err();
        assert_eq!(
            e,
            ElfError::TableTooLarge {
                bytes: 0xffff * PHDR64_BYTES
            }
        );
        assert!(e.to_string().contains("65536"), "{e}");
        put(&mut b, false, 56, 2, 0);
        assert_eq!(linking(&b), Err(ElfError::NoProgramHeaders));
        let mut b = elf(false, &[3]);
        b[4] = 7;
        assert_eq!(linking(&b), Err(ElfError::Class(7)));
        let mut b = elf(false, &[3]);
        b[5] = 0;
        assert_eq!(linking(&b), Err(ElfError::Encoding(0)));
        let mut b = elf(false, &[3]);
        put(&mut b, false, 16, 2, 1);
        assert_eq!(linking(&b), Err(ElfError::NotExecutable(1)));
    }

    #[test]
    fn no_byte_of_the_header_set_to_any_value_makes_the_reader_panic() {
        let good = elf(false, &[6, 3, 1]);
        for at in 0..64 {
            for value in [0u8, 1, 2, 3, 4, 0x37, 0x38, 0x7f, 0x80, 0xff] {
                let mut b = good.clone();
                b[at] = value;
                let _ = linking(&b);
                let _ = linking(&b[..b.len() - 1]);
            }
        }
    }

    #[test]
    fn a_malformed_program_is_bad_input_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad-elf");
        let mut b = elf(false, &[3]);
        put(&mut b, false, 54, 2, 3);
        std::fs::write(&path, &b).unwrap();
        let e = unreachable_reason(&path).unwrap_err();
        assert_eq!(e.status, crate::EXIT_BAD_INPUT);
        assert!(
            e.message.contains(&path.display().to_string()),
            "{}",
            e.message
        );
        assert!(e.message.contains("e_phentsize"), "{}", e.message);
        std::fs::write(&path, elf(false, &[1])).unwrap();
        let warning = unreachable_reason(&path).unwrap().unwrap();
        assert!(warning.contains("statically linked"), "{warning}");
        std::fs::write(&path, elf(false, &[3])).unwrap();
        assert_eq!(unreachable_reason(&path).unwrap(), None);
    }
}
