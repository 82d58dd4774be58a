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
