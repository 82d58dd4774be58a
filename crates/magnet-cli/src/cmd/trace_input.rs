//! Opening a trace for the reading subcommands, with the file named in errors.

use std::fs::File;
use std::path::Path;

use anyhow::{Context, Result};
use magnet_trace::TraceReader;

pub fn open(path: &Path) -> Result<TraceReader<File>> {
    let f = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    TraceReader::new(f).with_context(|| format!("{}", path.display()))
}

/// One line for damage found while reading (the reader goes on after it).
pub fn warn(path: &Path, err: &magnet_trace::TraceError) {
    eprintln!("magnet: warning: {}: {err}", path.display());
}
