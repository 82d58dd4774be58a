//! `magnet demo`: the built-in first run. Records a loopback transfer that
//! magnet generates itself (`magnet loadgen`), then shows what each layer saw.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;

use super::{info, record};

/// Record a built-in loopback workload and show what each layer did.
#[derive(Args, Debug)]
#[command(
    after_help = "The workload: 200 TCP send() calls of 16 KiB and 100 UDP sendto() calls of
512 bytes over loopback, recorded with app,tcp,ip,dev,qdisc,drop, every kind of
them (--kinds all) and --tcp-state.
Then `magnet info` and `magnet analyze` on the trace; try `magnet parse` and
`magnet report` on it next."
)]
pub struct DemoArgs {
    /// Where to write the demo trace.
    #[arg(short = 'o', long, default_value = "magnet-demo.mgt")]
    output: PathBuf,
}

pub fn run(args: DemoArgs) -> Result<ExitCode> {
    let me =
        std::env::current_exe().context("cannot find the magnet binary to run the workload")?;
    let argv: Vec<String> = [
        "magnet",
        "record",
        "-o",
        &args.output.to_string_lossy(),
        "--layers",
        "app,tcp,ip,qdisc,dev,drop",
        "--kinds",
        "all",
        "--tcp-state",
        "--",
        &me.to_string_lossy(),
        "loadgen",
        "--tcp",
        "200x16k",
        "--udp",
        "100x512",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    eprintln!("magnet demo: {}", argv[1..].join(" "));
    let rec = <record::RecordArgs as clap::FromArgMatches>::from_arg_matches(
        &<record::RecordArgs as clap::Args>::augment_args(clap::Command::new("magnet record"))
            .try_get_matches_from(&argv[1..])?,
    )?;
    let code = record::run(rec)?;
    if code != ExitCode::SUCCESS {
        anyhow::bail!("the demo workload failed");
    }
    println!();
    info::run(info::InfoArgs::for_file(args.output.clone()))?;
    println!();
    println!("What each layer made of the application's traffic (magnet analyze):");
    println!();
    // The same binary, so the analysis is exactly what `magnet analyze` prints.
    let status = std::process::Command::new(&me)
        .arg("analyze")
        .arg(&args.output)
        .status()
        .context("running magnet analyze on the demo trace")?;
    if !status.success() {
        anyhow::bail!("magnet analyze failed on the demo trace");
    }
    println!();
    println!(
        "Next: magnet parse {0} | less;  magnet report {0} -o demo.html",
        args.output.display()
    );
    Ok(ExitCode::SUCCESS)
}
