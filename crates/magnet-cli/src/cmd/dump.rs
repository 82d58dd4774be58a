//! `magnet dump`: has magnetd's flight recorder write the last seconds of full
//! events as trace files (read them with info/parse/analyze/report).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;

/// Write magnetd's flight recorder (the last seconds of full events) as trace files.
#[derive(Args, Debug)]
pub struct DumpArgs {
    /// Directory to write the trace files into (created).
    #[arg(short = 'o', long, value_name = "DIR")]
    output: PathBuf,
    /// magnetd's Unix socket.
    #[arg(long, value_name = "PATH", default_value = magnet_client::DEFAULT_SOCKET)]
    socket: PathBuf,
}

pub fn run(a: DumpArgs) -> anyhow::Result<ExitCode> {
    let dir = if a.output.is_absolute() {
        a.output.clone()
    } else {
        std::env::current_dir()?.join(&a.output)
    };
    let mut c = magnet_client::Client::connect(&a.socket)?;
    let files = c
        .dump(&dir)
        .with_context(|| format!("dumping into {}", dir.display()))?;
    for f in files {
        println!("{f}");
    }
    Ok(ExitCode::SUCCESS)
}
