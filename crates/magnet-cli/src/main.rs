//! `magnet`: the command-line front end. Each subcommand lives in `cmd/` and only
//! turns arguments into library calls; the libraries never print or exit.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cmd;

/// magnet shows what an application asked of the network and what every layer of the
/// Linux stack (socket, TCP, IP, qdisc, device, wire) made of it.
#[derive(Parser)]
#[command(name = "magnet", version, about, long_about = None, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Generate traffic with exact, known counts (the workload tests and the demo trace).
    Loadgen(cmd::loadgen::LoadgenArgs),
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Loadgen(args) => cmd::loadgen::run(args),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            // A closed pipe (`magnet parse … | head`) is not an error worth reporting.
            if let Some(io) = err.downcast_ref::<std::io::Error>() {
                if io.kind() == std::io::ErrorKind::BrokenPipe {
                    return ExitCode::SUCCESS;
                }
            }
            eprintln!("magnet: error: {err:#}");
            ExitCode::from(2)
        }
    }
}
