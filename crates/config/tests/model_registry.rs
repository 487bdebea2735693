//! The model table against what is said about it elsewhere: every model has its page in
//! `docs/models/`, is reachable from a device file (a preset or an example), and round-trips:
//! each preset read back through a device file gives the preset's description, and the models
//! that can be written read back what was written.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use storsim_config::{
    blackbox_device_toml, load_device, models, parse_device_toml, preset_spec, presets, DeviceSpec,
};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn every_model_has_a_doc_page_and_a_description() {
    for model in models() {
        let page = repo().join(format!("docs/models/{}.md", model.name));
        assert!(
            page.is_file(),
            "{}: {} is missing",
            model.name,
            page.display()
        );
        assert!(
            !model.description.is_empty() && !model.description.contains('\n'),
            "{}: the description is one line",
            model.name
        );
    }
    let names: BTreeSet<&str> = models().map(|m| m.name).collect();
    assert_eq!(names.len(), models().count(), "a model name is used twice");
}

/// The device-file reference names every model the `model` key takes.
#[test]
fn the_config_page_lists_every_model() {
    let page = std::fs::read_to_string(repo().join("docs/config.md")).unwrap();
    let row = page
        .lines()
        .find(|line| line.starts_with("| `model` |"))
        .expect("docs/config.md has a row for the `model` key");
    for model in models() {
        assert!(
            row.contains(&format!("`{}`", model.name)),
            "{}: {row}",
            model.name
        );
    }
}

/// The device files kept beside the code: every preset, and the examples.
fn device_files() -> Vec<(String, DeviceSpec)> {
    let mut files: Vec<(String, DeviceSpec)> = presets()
        .iter()
        .map(|p| (p.name.to_string(), load_device(p.name).unwrap().spec))
        .collect();
    let mut examples = vec![];
    for dir in [repo().join("examples"), repo().join("examples/hybrid")] {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                examples.push(path);
            }
        }
    }
    examples.sort();
    for path in examples {
        let name = path.display().to_string();
        let spec = load_device(&name).unwrap_or_else(|e| panic!("{e}")).spec;
        files.push((name, spec));
    }
    files
}

/// A model nobody can reach from a preset or an example is untested by everything that runs
/// the presets and the examples.
#[test]
fn every_model_is_reachable_from_a_preset_or_an_example() {
    let known: BTreeSet<&str> = models().map(|m| m.name).collect();
    let mut reached = BTreeSet::new();
    for (name, spec) in device_files() {
        assert!(
            known.contains(spec.model_name()),
            "{name}: model `{}` is not in the table",
            spec.model_name()
        );
        reached.insert(spec.model_name());
    }
    assert_eq!(reached, known);
}

/// A device file that only names a preset reads as the preset, and so does one that names the
/// preset's model too; a file naming another model is refused, naming the key.
#[test]
fn every_preset_round_trips_through_a_device_file() {
    for p in presets() {
        let spec = preset_spec(p.name).unwrap().unwrap();
        let file = format!("preset = \"{}\"\n", p.name);
        assert_eq!(
            parse_device_toml(&file, "t.toml").unwrap(),
            spec,
            "{}",
            p.name
        );
        let file = format!("preset = \"{}\"\nmodel = \"{}\"\n", p.name, p.model());
        assert_eq!(
            parse_device_toml(&file, "t.toml").unwrap(),
            spec,
            "{}",
            p.name
        );
        let other = models().find(|m| m.name != p.model()).unwrap();
        let file = format!("preset = \"{}\"\nmodel = \"{}\"\n", p.name, other.name);
        let err = parse_device_toml(&file, "t.toml").unwrap_err().to_string();
        assert!(
            err.contains("model") && err.contains(p.name),
            "{}: {err}",
            p.name
        );
    }
}

/// Whatever can be written reads back as itself; what cannot is refused with a message naming
/// the model.
#[test]
fn writable_descriptions_read_back() {
    let mut written = BTreeSet::new();
    for (name, spec) in device_files() {
        match blackbox_device_toml(&spec) {
            Ok(text) => {
                assert_eq!(parse_device_toml(&text, &name).unwrap(), spec, "{name}");
                written.insert(spec.model_name());
            }
            Err(e) => assert!(e.contains(spec.model_name()), "{name}: {e}"),
        }
    }
    assert!(written.contains("linear") && written.contains("table") && written.contains("step"));
}

#[test]
fn an_unknown_model_lists_the_table() {
    let err = parse_device_toml("model = \"tape\"\n", "t.toml")
        .unwrap_err()
        .to_string();
    assert!(err.contains("line 1"), "{err}");
    for model in models() {
        assert!(err.contains(model.name), "{err}");
    }
}

/// A hybrid's children are single devices: a preset or a file of a model made of children (a
/// hybrid, an array) is refused, naming the key, so that resolving never loops.
#[test]
fn a_hybrid_refuses_children_made_of_children() {
    let file = repo().join("examples/hybrid-over-composites.toml");
    let file = file.to_str().unwrap();
    for (key, child) in [
        ("hybrid.flash", "hybrid-laptop-2007"),
        ("hybrid.disk", "raid0-flashsim.toml"),
    ] {
        let (flash, disk) = if key == "hybrid.flash" {
            (child, "hdd-laptop-2007")
        } else {
            ("hybrid-2007-flash", child)
        };
        let text = format!(
            "model = \"hybrid\"\n[hybrid]\nconfiguration = \"controller\"\nflash = \"{flash}\"\n\
             disk = \"{disk}\"\n"
        );
        let err = parse_device_toml(&text, file).unwrap_err().to_string();
        assert!(
            err.contains(key) && err.contains("single devices"),
            "{child}: {err}"
        );
    }
}
