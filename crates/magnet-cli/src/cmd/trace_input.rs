//! Opening a trace for the reading subcommands, with the file named in errors.

use std::fs::File;
use std::path::Path;

use anyhow::{Context, Result};
use magnet_trace::TraceReader;

pub fn open(path: &Path) -> Result<TraceReader<File>> {
    let f = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    TraceReader::new(f).with_context(|| format!("{}", path.display()))
}

/// The exit code of a command that read a trace: 1 when the reader met
/// damage (a damaged block, a cut, totals that do not add up: what the
/// command printed is incomplete), else 0. docs/exit-codes.md.
pub fn exit_code<R: std::io::Read>(reader: &TraceReader<R>) -> std::process::ExitCode {
    damaged_code(reader.damage() > 0)
}

/// [`exit_code`] for commands that keep the reader's errors themselves.
pub fn damaged_code(damaged: bool) -> std::process::ExitCode {
    std::process::ExitCode::from(if damaged {
        magnet_common::exit::FAILED
    } else {
        magnet_common::exit::OK
    })
}

/// One line for damage found while reading (the reader goes on after it).
pub fn warn(path: &Path, err: &magnet_trace::TraceError) {
    let line = format!("{}: {err}", path.display());
    eprintln!("magnet: warning: {}", magnet_common::text::escape(&line));
}
