//! The emulator's control socket answers: one JSON line each, with `ok` (docs/emulate.md,
//! "Control socket").

use crate::json;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use storsim_emulate::power::CrashReport;
use storsim_faults::FaultRule;

/// The fault rules in force in a running emulator: over the whole device, and over each child
/// of an array or hybrid drive, by its path of child numbers (`0.1`).
#[derive(Debug, Clone, Default)]
pub struct FaultRules {
    pub device: Vec<FaultRule>,
    pub children: BTreeMap<String, Vec<FaultRule>>,
}

impl FaultRules {
    /// The emulate document's `device.faults`: `rules` over the whole device, and `children`
    /// (each child's path to its rules) when the device has children.
    pub fn json(&self) -> Value {
        let mut faults = json!({"rules": json::fault_rules(&self.device)});
        if !self.children.is_empty() {
            faults["children"] = self.children_json();
        }
        faults
    }

    fn children_json(&self) -> Value {
        Value::Object(
            self.children
                .iter()
                .map(|(path, rules)| (path.clone(), json::fault_rules(rules)))
                .collect(),
        )
    }
}

/// What a control command answers.
pub enum ControlAnswer<'a> {
    /// `report`: the emulate document so far.
    Report(Value),
    /// `device` and `set`: the device now served.
    Device(String),
    /// `crash`: the crash's number and what it lost.
    Crash {
        number: u64,
        report: &'a CrashReport,
    },
    /// `fault ...`: the rules in force after the command.
    Faults(&'a FaultRules),
    /// `help`: one line per command.
    Help(&'a [&'a str]),
    /// A command refused, with why.
    Error(String),
}

/// The answer's line (without its newline).
pub fn control_line(answer: &ControlAnswer) -> String {
    let value = match answer {
        ControlAnswer::Report(report) => json!({"ok": true, "report": report}),
        ControlAnswer::Device(name) => json!({"ok": true, "device": name}),
        ControlAnswer::Crash { number, report } => {
            json!({"ok": true, "crash": number, "report": crate::crash_json(report)})
        }
        // `faults` lists the whole device's rules, as before devices had children to name;
        // `child_faults` each child's, when there are children.
        ControlAnswer::Faults(rules) => {
            let mut answer = json!({"ok": true, "faults": json::fault_rules(&rules.device)});
            if !rules.children.is_empty() {
                answer["child_faults"] = rules.children_json();
            }
            answer
        }
        ControlAnswer::Help(commands) => json!({"ok": true, "commands": commands}),
        ControlAnswer::Error(error) => json!({"ok": false, "error": error}),
    };
    value.to_string()
}
