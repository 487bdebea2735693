//! The tidy test: the absences ARCHITECTURE.md states, checked by scanning the crates' sources
//! and manifests, so that the map stays true as the code changes. Each rule names the map's
//! sentence it checks; a failure says which crate or file breaks it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The repository's root (this crate is `crates/testenv`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository's root")
}

/// The layers of ARCHITECTURE.md's diagram, bottom first, and the crates (directory names
/// under `crates/`, and `python`) in each. A crate depends only on crates of its own layer or
/// below.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "foundation",
        &[
            "core",
            "stats",
            "store",
            "nbd",
            "fuse",
            "cosim-shim",
            "testenv",
        ],
    ),
    (
        "models",
        &[
            "flash", "ftl", "ssd", "hdd", "blackbox", "array", "hybrid", "hostif", "faults",
        ],
    ),
    ("workloads", &["workload"]),
    (
        "drivers",
        &[
            "engine",
            "config",
            "sim",
            "emulate",
            "frontends",
            "cosim",
            "calibrate",
            "sweep",
        ],
    ),
    ("output", &["output", "report"]),
    ("library", &["api"]),
    ("front ends", &["cli", "python"]),
];

/// The crates whose code is a device model's: they compute timing and nothing else.
const MODELS: &[&str] = &[
    "core", "flash", "ftl", "ssd", "hdd", "blackbox", "array", "hybrid", "hostif", "faults",
];

/// Every crate's directory, by the name its folder has.
fn crate_dirs() -> BTreeMap<String, PathBuf> {
    let root = root();
    let mut dirs: BTreeMap<String, PathBuf> = std::fs::read_dir(root.join("crates"))
        .expect("crates/")
        .map(|e| e.expect("an entry of crates/").path())
        .filter(|p| p.join("Cargo.toml").exists())
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), p))
        .collect();
    dirs.insert("python".into(), root.join("python"));
    dirs
}

fn manifest(dir: &Path) -> toml::Table {
    let path = dir.join("Cargo.toml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.parse()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The names of a crate's normal (not dev or build) dependencies.
fn dependencies(dir: &Path) -> Vec<String> {
    manifest(dir)
        .get("dependencies")
        .and_then(|d| d.as_table())
        .map(|d| d.keys().cloned().collect())
        .unwrap_or_default()
}

/// A workspace crate's folder name from its package name (`storsim-ftl` -> `ftl`; the
/// command's package is `storsim`, in `cli`).
fn folder_of(package: &str) -> Option<&str> {
    match package {
        "storsim" => Some("cli"),
        p => p.strip_prefix("storsim-"),
    }
}

fn layer_of(name: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, crates)| crates.contains(&name))
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries {
            let path = e.expect("a directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|x| x == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The lines of the crate's sources (under `src/`) that hold any of `needles`, outside
/// comments, as `file:line: text`.
fn lines_with(crate_dir: &Path, needles: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for file in rust_files(&crate_dir.join("src")) {
        let text = std::fs::read_to_string(&file).expect("a source file");
        for (i, line) in text.lines().enumerate() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            if needles.iter().any(|n| code.contains(n)) {
                found.push(format!("{}:{}: {}", file.display(), i + 1, code));
            }
        }
    }
    found
}

#[test]
fn every_crate_is_in_a_layer_and_depends_only_on_its_layer_or_below() {
    let dirs = crate_dirs();
    let mut broken = Vec::new();
    for (name, dir) in &dirs {
        let Some(layer) = layer_of(name) else {
            broken.push(format!(
                "{name}: in no layer of LAYERS (and of ARCHITECTURE.md)"
            ));
            continue;
        };
        for dep in dependencies(dir) {
            let Some(folder) = folder_of(&dep) else {
                continue;
            };
            match layer_of(folder) {
                Some(l) if l <= layer => {}
                Some(l) => broken.push(format!(
                    "{name} ({}) depends on {folder} ({}), a layer above it",
                    LAYERS[layer].0, LAYERS[l].0
                )),
                None => broken.push(format!("{name} depends on {dep}, which is in no layer")),
            }
        }
    }
    for (_, crates) in LAYERS {
        for c in *crates {
            if !dirs.contains_key(*c) {
                broken.push(format!("LAYERS names {c}, which is not a crate"));
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

/// The workspace crates `name` depends on, directly or not (normal dependencies only).
fn closure(dirs: &BTreeMap<String, PathBuf>, name: &str) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    let mut stack = vec![name.to_string()];
    while let Some(c) = stack.pop() {
        for dep in dependencies(&dirs[&c]) {
            let folder = folder_of(&dep).map(str::to_string).unwrap_or(dep);
            if dirs.contains_key(&folder) && !seen.contains(&folder) {
                seen.push(folder.clone());
                stack.push(folder);
            }
        }
    }
    seen.sort();
    seen
}

#[test]
fn the_output_layer_links_no_server_and_no_command_line_parser() {
    let dirs = crate_dirs();
    for name in ["output", "report"] {
        let reached = closure(&dirs, name);
        for server in ["nbd", "fuse", "frontends", "cli"] {
            assert!(
                !reached.iter().any(|c| c == server),
                "{name} reaches {server} through {reached:?}"
            );
        }
        for dir in std::iter::once(name.to_string()).chain(reached) {
            assert!(
                !dependencies(&dirs[&dir]).iter().any(|d| d == "clap"),
                "{name} reaches clap through {dir}"
            );
        }
    }
    // The walk finds what is there: the command reaches both servers.
    let cli = closure(&dirs, "cli");
    assert!(
        cli.contains(&"nbd".to_string()) && cli.contains(&"fuse".to_string()),
        "{cli:?}"
    );
}

#[test]
fn no_crate_but_the_command_parses_command_lines() {
    let users: Vec<String> = crate_dirs()
        .iter()
        .filter(|(_, dir)| dependencies(dir).iter().any(|d| d == "clap"))
        .map(|(name, _)| name.clone())
        .collect();
    assert_eq!(users, ["cli"], "crates that depend on clap");
}

#[test]
fn the_python_package_links_no_command_line_parser_and_no_server() {
    // The preload library is built only by the command's build script, so the wire format's
    // crate (`cosim-shim`, through `cosim`) brings no preload build with it.
    let dirs = crate_dirs();
    let python = closure(&dirs, "python");
    assert!(python.contains(&"api".to_string()), "{python:?}");
    for server in ["cli", "nbd", "fuse", "frontends"] {
        assert!(
            !python.contains(&server.to_string()),
            "the Python package reaches {server} through {python:?}"
        );
    }
    for dir in std::iter::once("python".to_string()).chain(python) {
        assert!(
            !dependencies(&dirs[&dir]).iter().any(|d| d == "clap"),
            "the Python package reaches clap through {dir}"
        );
    }
}

#[test]
fn models_never_read_a_clock_sleep_or_do_io() {
    let dirs = crate_dirs();
    let forbidden = [
        "Instant::now",
        "SystemTime",
        "thread::sleep",
        "std::fs",
        "File::open",
        "File::create",
        "std::net",
        "std::process",
    ];
    let mut found = Vec::new();
    for model in MODELS {
        found.extend(lines_with(&dirs[*model], &forbidden));
    }
    assert!(
        found.is_empty(),
        "model code that reads a clock, sleeps or does I/O:\n{}",
        found.join("\n")
    );
    // The scan finds what is there: the emulator, which paces by the wall clock, is caught.
    assert!(!lines_with(&dirs["emulate"], &["Instant::now"]).is_empty());
}

#[test]
fn ftls_never_know_time() {
    let found = lines_with(
        &crate_dirs()["ftl"],
        &["SimTime", "SimDuration", "latency", "_ns"],
    );
    assert!(
        found.is_empty(),
        "an FTL that knows time:\n{}",
        found.join("\n")
    );
}

#[test]
fn file_formats_stay_in_their_layer() {
    // Device files are read only by `config`; flow files by `workload`; sweep specs by
    // `sweep`. No other crate takes a TOML reader.
    let allowed = ["config", "workload", "sweep", "testenv"];
    let mut broken = Vec::new();
    for (name, dir) in crate_dirs() {
        let deps = dependencies(&dir);
        if !allowed.contains(&name.as_str()) {
            for format in ["toml", "toml_edit"] {
                if deps.iter().any(|d| d == format) {
                    broken.push(format!("{name} depends on {format}"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn only_the_output_layer_writes_tables() {
    // The sweep's results table is plain data in `sweep`; its CSV and Parquet files are
    // written by `output`, the one crate that takes the table writers.
    let mut broken = Vec::new();
    for (name, dir) in crate_dirs() {
        for writer in ["csv", "parquet"] {
            if name != "output" && dependencies(&dir).iter().any(|d| d == writer) {
                broken.push(format!("{name} depends on {writer}"));
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
    // The scan finds what is there.
    assert!(dependencies(&crate_dirs()["output"])
        .iter()
        .any(|d| d == "parquet"));
}

#[test]
fn device_files_are_written_only_beside_their_reader() {
    // A device file is an input that `config` reads back, so its writers (`import disksim`'s
    // and `calibrate`'s models) are in `config` too; the other crates that read TOML (flow
    // files, sweep specs) never write it.
    let dirs = crate_dirs();
    let mut found = Vec::new();
    for name in ["workload", "sweep", "output", "api"] {
        found.extend(lines_with(&dirs[name], &["toml::to_string", "toml::ser"]));
    }
    assert!(
        found.is_empty(),
        "TOML written outside config:\n{}",
        found.join("\n")
    );
    assert!(!lines_with(&dirs["config"], &["toml::to_string"]).is_empty());
}

#[test]
fn only_the_output_layer_lays_out_json_text() {
    let mut found = Vec::new();
    for (name, dir) in crate_dirs() {
        if name != "output" {
            found.extend(lines_with(&dir, &["to_string_pretty", "to_writer_pretty"]));
        }
    }
    assert!(
        found.is_empty(),
        "JSON laid out outside the output crate:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_map_names_every_crate_and_only_crates_that_exist() {
    let map = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let dirs = crate_dirs();
    for name in dirs.keys() {
        assert!(
            map.contains(&format!("`{name}`")),
            "ARCHITECTURE.md has no entry for the crate `{name}`"
        );
    }
    for (layer, crates) in LAYERS {
        assert!(
            map.contains(layer),
            "ARCHITECTURE.md's layer diagram lacks the layer `{layer}` ({crates:?})"
        );
    }
}

#[test]
fn the_map_stays_short_enough_to_read_in_ten_minutes() {
    let map = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let words = map.split_whitespace().count();
    assert!(
        words <= 2_600,
        "ARCHITECTURE.md has {words} words; feature detail belongs in docs/ (issue 37 asks for \
         about 2,500)"
    );
}

/// Paths named in backquotes (`crates/...`, `docs/...`, `examples/...`, `python/...`,
/// `bench/...`), with a `NAME`-style placeholder or a glob left out.
fn named_paths(text: &str) -> Vec<String> {
    let prefixes = [
        "crates/",
        "docs/",
        "examples/",
        "python/",
        "bench/",
        "experiments/",
    ];
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| prefixes.iter().any(|p| s.starts_with(p)))
        .filter(|s| !s.contains(' '))
        .filter(|s| !s.chars().any(|c| c == '*' || c == '{' || c == '<'))
        .filter(|s| {
            !s.split(['/', '.', '-', '_'])
                .any(|w| w.len() > 1 && w.chars().all(|c| c.is_ascii_uppercase()))
        })
        .map(|s| s.trim_end_matches([',', '.', ':', ')']).to_string())
        .collect()
}

#[test]
fn named_paths_skip_placeholders_and_globs() {
    let text = "`crates/ftl/src/lib.rs`, `crates/ftl/src/NAME/`, `docs/models/ftl-NAME.md`, \
                `crates/*/Cargo.toml`, `docs/json.md`.";
    assert_eq!(named_paths(text), ["crates/ftl/src/lib.rs", "docs/json.md"]);
}

#[test]
fn every_path_the_map_and_the_contributing_guide_name_exists() {
    let root = root();
    let mut missing = Vec::new();
    for doc in ["ARCHITECTURE.md", "CONTRIBUTING.md"] {
        let Ok(text) = std::fs::read_to_string(root.join(doc)) else {
            missing.push(format!("{doc} itself"));
            continue;
        };
        let paths = named_paths(&text);
        // Both pages lead to the code by its paths; a page naming none has lost its way.
        assert!(paths.len() >= 5, "{doc} names only {paths:?}");
        for path in paths {
            if !root.join(&path).exists() {
                missing.push(format!("{doc} names `{path}`"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "paths that do not exist:\n{}",
        missing.join("\n")
    );
}

/// The package settings of profile `name` in the workspace manifest: each package's table.
fn profile_packages(workspace: &toml::Table, name: &str) -> BTreeMap<String, toml::Table> {
    workspace
        .get("profile")
        .and_then(|p| p.get(name))
        .and_then(|p| p.get("package"))
        .and_then(toml::Value::as_table)
        .map(|t| {
            t.iter()
                .map(|(k, v)| (k.clone(), v.as_table().cloned().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default()
}

/// Every package (by name) that `roots` depend on in Cargo.lock, directly or not, `roots`
/// included.
fn locked_closure(roots: &[&str]) -> Vec<String> {
    let path = root().join("Cargo.lock");
    let text = std::fs::read_to_string(&path).expect("Cargo.lock");
    let lock: toml::Table = text.parse().expect("Cargo.lock is TOML");
    let packages = lock["package"].as_array().expect("Cargo.lock's packages");
    // A lock entry names a dependency as `name` or `name version` when two versions are locked.
    let deps_of = |name: &str| -> Vec<String> {
        packages
            .iter()
            .filter(|p| p["name"].as_str() == Some(name))
            .flat_map(|p| {
                p.get("dependencies")
                    .and_then(toml::Value::as_array)
                    .cloned()
            })
            .flatten()
            .filter_map(|d| {
                d.as_str()
                    .and_then(|d| d.split(' ').next())
                    .map(str::to_string)
            })
            .collect()
    };
    let mut seen: Vec<String> = roots.iter().map(|r| r.to_string()).collect();
    let mut stack = seen.clone();
    while let Some(p) = stack.pop() {
        for d in deps_of(&p) {
            if !seen.contains(&d) {
                seen.push(d.clone());
                stack.push(d);
            }
        }
    }
    seen
}

/// Cargo.toml: the release profile builds the result writers' dependencies unoptimised, and
/// the `dist` profile, which inherits release's package settings, optimises each of them again.
/// None of them may be a package a simulation runs: everything `sim` (the models, the
/// workloads, the engine, the device files) and the emulator reach stays optimised.
#[test]
fn release_leaves_unoptimised_only_what_no_simulation_runs() {
    let workspace = manifest(&root());
    let release = profile_packages(&workspace, "release");
    let dist = profile_packages(&workspace, "dist");
    let cold: Vec<&String> = release
        .iter()
        .filter(|(_, t)| t.get("opt-level").and_then(toml::Value::as_integer) == Some(0))
        .map(|(name, _)| name)
        .collect();
    assert!(
        !cold.is_empty(),
        "no unoptimised package in the release profile"
    );
    for name in &cold {
        let level = dist
            .get(*name)
            .and_then(|t| t.get("opt-level"))
            .and_then(toml::Value::as_integer);
        assert_eq!(
            level,
            Some(3),
            "`{name}` is unoptimised in release; [profile.dist.package] must set it to 3"
        );
    }
    let hot = locked_closure(&["storsim-sim", "storsim-emulate", "storsim-frontends"]);
    let slow: Vec<&&String> = cold.iter().filter(|c| hot.contains(c)).collect();
    assert!(
        slow.is_empty(),
        "unoptimised in release but run by simulations or the emulator: {slow:?}"
    );
}
