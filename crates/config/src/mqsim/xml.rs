//! MQSim's parameter sets as plain lists: each element of a set with its text and line, read
//! once, so that a mapping can take what it knows by name and anything left over is an element
//! storsim does not know. Every error names the file, the line and the element.

use crate::ConfigError;

/// One parameter: `<Name>value</Name>`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Param {
    pub name: String,
    pub value: String,
    pub line: u32,
}

/// The parameters of one set (`<Device_Parameter_Set>`, one `<IO_Flow_Parameter_Set_...>`),
/// in the file's order, with where the set itself starts. Nested sets (`<Flash_Parameter_Set>`
/// inside the device's) are read as sets of their own.
#[derive(Clone, Debug)]
pub(crate) struct ParamSet {
    pub file: String,
    pub element: String,
    pub line: u32,
    pub params: Vec<Param>,
}

/// Why a value could not be taken: what the element should hold.
pub(crate) fn error(
    file: &str,
    line: u32,
    element: &str,
    message: impl Into<String>,
) -> ConfigError {
    ConfigError::Xml {
        file: file.to_string(),
        line,
        element: element.to_string(),
        message: message.into(),
    }
}

/// The line `node` starts on.
pub(crate) fn line_of(doc: &roxmltree::Document, node: roxmltree::Node) -> u32 {
    doc.text_pos_at(node.range().start).row
}

/// Parses `text` as XML; `file` names it in errors.
pub(crate) fn parse<'a>(text: &'a str, file: &str) -> Result<roxmltree::Document<'a>, ConfigError> {
    roxmltree::Document::parse(text).map_err(|e| {
        let pos = e.pos();
        error(file, pos.row, "", format!("not well-formed XML: {e}"))
    })
}

/// The element children of `node` (text, comments and processing instructions skipped).
pub(crate) fn elements<'a, 'input>(
    node: roxmltree::Node<'a, 'input>,
) -> impl Iterator<Item = roxmltree::Node<'a, 'input>> {
    node.children().filter(roxmltree::Node::is_element)
}

impl ParamSet {
    /// Reads the parameters of `node`: every child element whose own children are text only.
    /// A child with element children is returned apart, for the caller to read as a set; a
    /// parameter given twice is an error (MQSim would silently take the last).
    pub fn read<'a, 'input>(
        doc: &roxmltree::Document,
        node: roxmltree::Node<'a, 'input>,
        file: &str,
    ) -> Result<(ParamSet, Vec<roxmltree::Node<'a, 'input>>), ConfigError> {
        let mut set = ParamSet {
            file: file.to_string(),
            element: node.tag_name().name().to_string(),
            line: line_of(doc, node),
            params: Vec::new(),
        };
        let mut nested = Vec::new();
        for child in elements(node) {
            if elements(child).next().is_some() {
                nested.push(child);
                continue;
            }
            let name = child.tag_name().name().to_string();
            let line = line_of(doc, child);
            if let Some(first) = set.params.iter().find(|p| p.name == name) {
                return Err(error(
                    file,
                    line,
                    &name,
                    format!(
                        "given twice in <{}> (first on line {})",
                        set.element, first.line
                    ),
                ));
            }
            let value = child.text().unwrap_or("").trim().to_string();
            set.params.push(Param { name, value, line });
        }
        Ok((set, nested))
    }

    /// Takes the parameter `name` out of the set, if it is there.
    pub fn take(&mut self, name: &str) -> Option<Param> {
        let i = self.params.iter().position(|p| p.name == name)?;
        Some(self.params.remove(i))
    }

    /// The error for a parameter of this set.
    pub fn error(&self, param: &Param, message: impl Into<String>) -> ConfigError {
        error(&self.file, param.line, &param.name, message)
    }

    /// Fails on the first parameter no mapping took: an element MQSim's files do not have
    /// (a typing mistake, or a fork's own parameter), named with its line and the set's known
    /// elements.
    pub fn finish(self, known: &[&str]) -> Result<(), ConfigError> {
        match self.params.first() {
            None => Ok(()),
            Some(p) => Err(self.error(
                p,
                format!(
                    "not a parameter of <{}> in MQSim's files; it has: {}",
                    self.element,
                    known.join(", ")
                ),
            )),
        }
    }
}

impl Param {
    /// The value as a whole number in `min..=max`.
    pub fn integer(&self, set: &ParamSet, min: u64, max: u64) -> Result<u64, ConfigError> {
        match self.value.parse::<u64>() {
            Ok(v) if (min..=max).contains(&v) => Ok(v),
            Ok(v) => Err(set.error(self, format!("{v} is out of range {min}..={max}"))),
            Err(_) => Err(set.error(
                self,
                format!("`{}` is not a whole number ({min}..={max})", self.value),
            )),
        }
    }

    /// The value as a finite number in `min..=max`.
    pub fn number(&self, set: &ParamSet, min: f64, max: f64) -> Result<f64, ConfigError> {
        match self.value.parse::<f64>() {
            Ok(v) if v.is_finite() && (min..=max).contains(&v) => Ok(v),
            Ok(v) => Err(set.error(self, format!("{v} is out of range {min}..={max}"))),
            Err(_) => Err(set.error(self, format!("`{}` is not a number", self.value))),
        }
    }

    /// The value as MQSim reads a flag: `true` or `false`, in any case.
    pub fn flag(&self, set: &ParamSet) -> Result<bool, ConfigError> {
        match self.value.to_ascii_lowercase().as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(set.error(self, format!("`{}` is not true or false", self.value))),
        }
    }

    /// The value as one of `choices` (MQSim's names, compared without case), returning its
    /// index.
    pub fn choice(&self, set: &ParamSet, choices: &[&str]) -> Result<usize, ConfigError> {
        choices
            .iter()
            .position(|c| c.eq_ignore_ascii_case(&self.value))
            .ok_or_else(|| {
                set.error(
                    self,
                    format!("`{}` is not one of {}", self.value, choices.join(", ")),
                )
            })
    }

    /// The value as MQSim's comma-separated list of ids, each below `count`.
    pub fn ids(&self, set: &ParamSet, count: u64) -> Result<Vec<u64>, ConfigError> {
        let mut ids = Vec::new();
        for part in self.value.split(',') {
            let part = part.trim();
            let id: u64 = part.parse().map_err(|_| {
                set.error(
                    self,
                    format!("`{part}` in `{}` is not a whole number", self.value),
                )
            })?;
            if id >= count {
                return Err(set.error(
                    self,
                    format!(
                        "id {id} is out of range: the device has {count} (ids 0..={})",
                        count - 1
                    ),
                ));
            }
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        ids.sort_unstable();
        Ok(ids)
    }
}
