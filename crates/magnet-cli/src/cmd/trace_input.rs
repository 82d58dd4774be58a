//! Opening a trace for the reading subcommands, with the file named in errors.

use std::fs::File;
use std::path::{Path, PathBuf};

use clap::Args;

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

/// The trace a reading command reads: the positional TRACE, or `-r FILE` as in
/// tcpdump (every reading command takes both).
#[derive(Args, Debug, Clone)]
pub struct TraceArg {
    /// Trace file (magnet record -o …)
    #[arg(value_name = "TRACE", required_unless_present = "read")]
    file: Option<PathBuf>,
    /// Trace file, as tcpdump -r (instead of TRACE)
    #[arg(
        short = 'r',
        long = "read",
        value_name = "FILE",
        conflicts_with = "file"
    )]
    read: Option<PathBuf>,
}

impl TraceArg {
    pub fn of(file: PathBuf) -> Self {
        TraceArg {
            file: Some(file),
            read: None,
        }
    }

    pub fn path(&self) -> PathBuf {
        self.file
            .clone()
            .or_else(|| self.read.clone())
            .unwrap_or_default()
    }
}
