//! `magnet completions SHELL` and `magnet man`: generated from the argument
//! definitions, so they never drift from the real flags.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use clap_complete::Shell;

/// Print a completion script for SHELL on standard output.
#[derive(Args, Debug)]
#[command(
    after_help = "Install (bash):  magnet completions bash > /etc/bash_completion.d/magnet
Install (zsh):   magnet completions zsh > \"${fpath[1]}/_magnet\"
Install (fish):  magnet completions fish > ~/.config/fish/completions/magnet.fish"
)]
pub struct CompletionsArgs {
    /// bash, zsh, fish, elvish or powershell
    shell: Shell,
}

/// Print the man page, or write one page per command into a directory.
#[derive(Args, Debug)]
#[command(
    after_help = "Install:  magnet man -o /usr/local/share/man/man1 && man magnet
Read now: magnet man | man -l -"
)]
pub struct ManArgs {
    /// Write magnet.1 and one magnet-SUBCOMMAND.1 per subcommand into this directory
    /// (default: magnet.1 on standard output)
    #[arg(short = 'o', long, value_name = "DIR")]
    output: Option<PathBuf>,
}

pub fn completions(a: CompletionsArgs, mut cmd: clap::Command) -> Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    clap_complete::generate(a.shell, &mut cmd, "magnet", &mut out);
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

pub fn man(a: ManArgs, cmd: clap::Command) -> Result<ExitCode> {
    match a.output {
        None => {
            let mut out = std::io::stdout().lock();
            clap_mangen::Man::new(cmd).render(&mut out)?;
            out.flush()?;
        }
        Some(dir) => {
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            clap_mangen::generate_to(cmd, &dir)
                .with_context(|| format!("writing man pages into {}", dir.display()))?;
            eprintln!("magnet: man pages written to {}", dir.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}
