//! The tokenizer and recursive-descent reader for DiskSim's parameter syntax.

use super::{Block, Document, Instantiation, Param, TopologyNode, Value, SOURCE_DEPTH_MAX};
use crate::ConfigError;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Open,
    Close,
    ListOpen,
    ListClose,
    Comma,
    Equals,
    Word(String),
}

impl Token {
    fn describe(&self) -> String {
        match self {
            Token::Open => "`{`".to_string(),
            Token::Close => "`}`".to_string(),
            Token::ListOpen => "`[`".to_string(),
            Token::ListClose => "`]`".to_string(),
            Token::Comma => "`,`".to_string(),
            Token::Equals => "`=`".to_string(),
            Token::Word(w) => format!("`{w}`"),
        }
    }
}

/// Splits a file into tokens with their 1-based line numbers. Everything from `#` to the end
/// of the line is a comment; a word is any run of characters other than white space and
/// `{}[],=#`, so keys such as `Segment size (in blks)` come out as several words.
fn tokenize(text: &str) -> Vec<(Token, u32)> {
    let mut tokens = Vec::new();
    let mut line = 1u32;
    let mut chars = text.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        let token = match c {
            '\n' => {
                line += 1;
                continue;
            }
            c if c.is_whitespace() => continue,
            '#' => {
                while chars.peek().is_some_and(|&(_, c)| c != '\n') {
                    chars.next();
                }
                continue;
            }
            '{' => Token::Open,
            '}' => Token::Close,
            '[' => Token::ListOpen,
            ']' => Token::ListClose,
            ',' => Token::Comma,
            '=' => Token::Equals,
            _ => {
                let mut end = start + c.len_utf8();
                while let Some(&(i, c)) = chars.peek() {
                    if c.is_whitespace() || "{}[],=#".contains(c) {
                        break;
                    }
                    end = i + c.len_utf8();
                    chars.next();
                }
                Token::Word(text[start..end].to_string())
            }
        };
        tokens.push((token, line));
    }
    tokens
}

/// Reads `path` and, recursively, what it sources. `depth` counts the includes above it.
pub(super) fn parse_document(path: &Path, depth: usize) -> Result<Document, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::NotFound {
        name: path.display().to_string(),
        reason: e.to_string(),
    })?;
    let mut reader = Reader {
        file: path.to_path_buf(),
        dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
        tokens: tokenize(&text),
        pos: 0,
        depth,
    };
    reader.document()
}

struct Reader {
    file: PathBuf,
    dir: PathBuf,
    tokens: Vec<(Token, u32)>,
    pos: usize,
    depth: usize,
}

impl Reader {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos).map(|(t, _)| t)
    }

    fn peek_at(&self, ahead: usize) -> Option<&Token> {
        self.tokens.get(self.pos + ahead).map(|(t, _)| t)
    }

    /// The line of the next token, or of the last one at the end of the file.
    fn line(&self) -> u32 {
        self.tokens
            .get(self.pos)
            .or(self.tokens.last())
            .map_or(1, |&(_, l)| l)
    }

    fn error(&self, message: String) -> ConfigError {
        ConfigError::Syntax {
            file: format!("{}:{}", self.file.display(), self.line()),
            message,
        }
    }

    fn next(&mut self, wanted: &str) -> Result<Token, ConfigError> {
        match self.tokens.get(self.pos) {
            Some((t, _)) => {
                self.pos += 1;
                Ok(t.clone())
            }
            None => Err(self.error(format!("expected {wanted}, found the end of the file"))),
        }
    }

    fn expect(&mut self, token: Token) -> Result<(), ConfigError> {
        let wanted = token.describe();
        let found = self.next(&wanted)?;
        if found == token {
            Ok(())
        } else {
            self.pos -= 1;
            Err(self.error(format!("expected {wanted}, found {}", found.describe())))
        }
    }

    fn word(&mut self, wanted: &str) -> Result<String, ConfigError> {
        match self.next(wanted)? {
            Token::Word(w) => Ok(w),
            other => {
                self.pos -= 1;
                Err(self.error(format!("expected {wanted}, found {}", other.describe())))
            }
        }
    }

    fn document(&mut self) -> Result<Document, ConfigError> {
        let mut doc = Document::default();
        while let Some(token) = self.peek().cloned() {
            let line = self.line();
            match token {
                Token::Word(w) if w == "source" => {
                    self.pos += 1;
                    let included = self.source()?;
                    doc.blocks.extend(included.blocks);
                    doc.instantiations.extend(included.instantiations);
                    doc.topologies.extend(included.topologies);
                }
                Token::Word(w) if w == "instantiate" => {
                    self.pos += 1;
                    let names = self.list()?;
                    let as_word = self.word("`as`")?;
                    if as_word != "as" {
                        self.pos -= 1;
                        return Err(self.error(format!("expected `as`, found `{as_word}`")));
                    }
                    let block_name = self.word("the name of a defined block")?;
                    doc.instantiations.push(Instantiation {
                        names,
                        block_name,
                        file: self.file.clone(),
                        line,
                    });
                }
                Token::Word(w) if w == "topology" => {
                    self.pos += 1;
                    let node = self.topology_node()?;
                    doc.topologies.push(node);
                }
                Token::Word(_) => {
                    let block = self.block()?;
                    doc.blocks.push(block);
                }
                other => {
                    return Err(self.error(format!(
                        "expected a block definition, `source`, `instantiate` or `topology`, \
                         found {}",
                        other.describe()
                    )))
                }
            }
        }
        Ok(doc)
    }

    /// After `source`: reads the named file, relative to this one.
    fn source(&mut self) -> Result<Document, ConfigError> {
        let name = self.word("a file name after `source`")?;
        if self.depth + 1 > SOURCE_DEPTH_MAX {
            self.pos -= 1;
            return Err(self.error(format!(
                "`source {name}` nests more than {SOURCE_DEPTH_MAX} files deep (a file that \
                 sources itself?)"
            )));
        }
        let path = self.dir.join(&name);
        parse_document(&path, self.depth + 1).map_err(|e| match e {
            ConfigError::NotFound { reason, .. } => {
                self.pos -= 1;
                self.error(format!(
                    "cannot read sourced file {}: {reason}",
                    path.display()
                ))
            }
            other => other,
        })
    }

    /// `TYPE [NAME] { key = value, ... }`.
    fn block(&mut self) -> Result<Block, ConfigError> {
        let line = self.line();
        let type_name = self.word("a block type")?;
        let name = match self.peek() {
            Some(Token::Word(_)) => Some(self.word("a block name")?),
            _ => None,
        };
        self.expect(Token::Open)?;
        let mut params = Vec::new();
        loop {
            if self.peek() == Some(&Token::Close) {
                self.pos += 1;
                break;
            }
            params.push(self.param()?);
            match self.next("`,` or `}`")? {
                Token::Comma => {}
                Token::Close => break,
                other => {
                    self.pos -= 1;
                    return Err(self.error(format!(
                        "expected `,` or `}}` after a parameter, found {}",
                        other.describe()
                    )));
                }
            }
        }
        Ok(Block {
            type_name,
            name,
            params,
            file: self.file.clone(),
            line,
        })
    }

    /// `words... = value`.
    fn param(&mut self) -> Result<Param, ConfigError> {
        let line = self.line();
        let mut words = Vec::new();
        loop {
            match self.next("a parameter name")? {
                Token::Word(w) => words.push(w),
                Token::Equals if !words.is_empty() => break,
                other => {
                    self.pos -= 1;
                    let wanted = if words.is_empty() {
                        "a parameter name"
                    } else {
                        "`=` after the parameter name"
                    };
                    return Err(
                        self.error(format!("expected {wanted}, found {}", other.describe()))
                    );
                }
            }
        }
        let value = self.value()?;
        Ok(Param {
            key: words.join(" "),
            value,
            line,
        })
    }

    fn value(&mut self) -> Result<Value, ConfigError> {
        match self.peek() {
            Some(Token::ListOpen) => Ok(Value::List(self.list()?)),
            Some(Token::Word(w)) if w == "source" => {
                self.pos += 1;
                let line = self.line();
                let mut doc = self.source()?;
                if doc.blocks.len() != 1 {
                    return Err(ConfigError::Syntax {
                        file: format!("{}:{line}", self.file.display()),
                        message: format!(
                            "a sourced value must define exactly one block, the file defines {}",
                            doc.blocks.len()
                        ),
                    });
                }
                Ok(Value::Block(doc.blocks.remove(0)))
            }
            Some(Token::Word(_)) => {
                let is_block = matches!(self.peek_at(1), Some(Token::Open))
                    || (matches!(self.peek_at(1), Some(Token::Word(_)))
                        && matches!(self.peek_at(2), Some(Token::Open)));
                if is_block {
                    return Ok(Value::Block(self.block()?));
                }
                let w = self.word("a value")?;
                Ok(scalar(w))
            }
            Some(other) => Err(self.error(format!("expected a value, found {}", other.describe()))),
            None => Err(self.error("expected a value, found the end of the file".to_string())),
        }
    }

    /// `[ value, value, first .. last, ... ]`; a trailing comma is allowed.
    fn list(&mut self) -> Result<Vec<Value>, ConfigError> {
        self.expect(Token::ListOpen)?;
        let mut items = Vec::new();
        loop {
            if self.peek() == Some(&Token::ListClose) {
                self.pos += 1;
                return Ok(items);
            }
            let item = self.value()?;
            let item = match (&item, self.peek()) {
                (Value::Word(first), Some(Token::Word(dots))) if dots == ".." => {
                    let first = first.clone();
                    self.pos += 1;
                    Value::Range(first, self.word("the last name of a range")?)
                }
                _ => item,
            };
            items.push(item);
            match self.peek() {
                Some(Token::Comma) => self.pos += 1,
                Some(Token::ListClose) => {}
                // DiskSim's instantiate lists separate names by spaces alone.
                Some(Token::Word(_)) => {}
                Some(other) => {
                    return Err(self.error(format!(
                        "expected `,` or `]` in a list, found {}",
                        other.describe()
                    )))
                }
                None => {
                    return Err(
                        self.error("expected `]` to end a list, found the end of the file".into())
                    )
                }
            }
        }
    }

    /// `TYPE NAME [ children ]` in a topology.
    fn topology_node(&mut self) -> Result<TopologyNode, ConfigError> {
        let type_name = self.word("a component type")?;
        let name = self.word("a component name")?;
        self.expect(Token::ListOpen)?;
        let mut children = Vec::new();
        loop {
            match self.peek() {
                Some(Token::ListClose) => {
                    self.pos += 1;
                    break;
                }
                Some(Token::Comma) => self.pos += 1,
                _ => children.push(self.topology_node()?),
            }
        }
        Ok(TopologyNode {
            type_name,
            name,
            children,
        })
    }
}

/// A bare word as a value: an integer, a number, or the word itself.
fn scalar(w: String) -> Value {
    let numeric_start = w
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_digit() || "+-.".contains(c));
    if numeric_start {
        if let Ok(i) = w.parse::<i64>() {
            return Value::Int(i);
        }
        if let Ok(f) = w.parse::<f64>() {
            if f.is_finite() {
                return Value::Float(f);
            }
        }
    }
    Value::Word(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_their_punctuation_and_comments_are_dropped() {
        let tokens = tokenize("Read hit over. after read = 0.066, # comment = 3\nx = 1");
        let words: Vec<_> = tokens.iter().map(|(t, l)| (t.describe(), *l)).collect();
        assert_eq!(words[0], ("`Read`".to_string(), 1));
        assert_eq!(words[4], ("`read`".to_string(), 1));
        assert_eq!(words[5], ("`=`".to_string(), 1));
        assert_eq!(words[8], ("`x`".to_string(), 2));
        assert_eq!(words.len(), 11);
    }

    #[test]
    fn scalars_are_typed() {
        assert_eq!(scalar("12".into()), Value::Int(12));
        assert_eq!(scalar("-0.483".into()), Value::Float(-0.483));
        assert_eq!(scalar("1e-3".into()), Value::Float(1e-3));
        assert_eq!(scalar("1.5e-3".into()), Value::Float(1.5e-3));
        assert_eq!(scalar("hplplus10".into()), Value::Word("hplplus10".into()));
        assert_eq!(scalar("inf".into()), Value::Word("inf".into()));
        assert_eq!(
            scalar("cheetah9LP.seek".into()),
            Value::Word("cheetah9LP.seek".into())
        );
    }
}
