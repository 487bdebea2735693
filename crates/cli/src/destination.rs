//! Where the command's documents go: the output layer (`storsim-output`) makes them; this
//! module names the command line they record and writes them to a file or, for `-`, to
//! standard output.

use crate::CliError;
use serde_json::Value;
use std::path::Path;

/// The command line that produced a document, for its `command_line` field: the process's
/// arguments without the options that say where results go.
pub fn command_line() -> Vec<String> {
    storsim_output::document_command_line(
        std::env::args_os()
            .skip(1)
            .map(|a| a.to_string_lossy().into_owned()),
    )
}

/// Writes the JSON document `value` to `path`, or to standard output for `-`.
pub fn write_json(path: &Path, value: &Value) -> Result<(), CliError> {
    let text = storsim_output::json::text(value);
    if path == Path::new("-") {
        crate::stdout::say!("{text}");
        return Ok(());
    }
    std::fs::write(path, text)
        .map_err(|e| CliError::failure(format!("writing {}: {e}", path.display())))
}

/// Creates the file at `path` for writing, buffered; the error names it.
pub fn create(path: &Path) -> Result<std::io::BufWriter<std::fs::File>, CliError> {
    let file = std::fs::File::create(path)
        .map_err(|e| CliError::failure(format!("creating {}: {e}", path.display())))?;
    Ok(std::io::BufWriter::with_capacity(1 << 20, file))
}
