//! `magnet report`: one self-contained HTML page (inline uPlot and JavaScript,
//! no network fetches) with the analysis of a trace in numbers and plots.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use magnet_analyze::Options;

const AFTER_HELP: &str = "\
The page shows, for --sock (else the connection that moved the most bytes) and the
next busiest (4 in all): bytes per time bin of every layer on one time axis, unit
sizes over time, unit-size and gap distributions, latency distributions (log axes,
median and p99 marked), TCP state over time; the modulation table of every
connection, context switches per CPU, and where events were lost. Its numbers are
those of `magnet analyze --json`. docs/analyze.md describes the page.

Examples:
  magnet report run.mgt -o run.html
  magnet report run.mgt --sock 8193 -o conn.html";

#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct ReportArgs {
    #[command(flatten)]
    input: super::trace_input::TraceArg,
    /// Output HTML file ('-': standard output).
    #[arg(short = 'o', long, value_name = "FILE")]
    output: PathBuf,
    /// Connection to plot (socket cookie); default: the one that moved the most bytes.
    #[arg(long, value_name = "COOKIE")]
    sock: Option<u64>,
    /// Most TCP snapshots kept per connection for the plots (more are decimated;
    /// bytes over time and the distributions count every unit).
    #[arg(long, default_value_t = 20_000)]
    max_points: usize,
    /// Records held back to sort by time.
    #[arg(long, default_value_t = 65536)]
    window: usize,
}

pub fn run(args: ReportArgs) -> Result<ExitCode> {
    let file = args.input.path();
    let opts = Options {
        series: true,
        series_cap: args.max_points,
        window: args.window,
        ..Options::default()
    };
    let progress = super::trace_input::progress_wanted(args.input.quiet);
    let mut a = super::analyze::load(&file, progress, &opts, &[], false)?;
    if let Some(s) = args.sock {
        if !a.connections.iter().any(|c| c.cookie == s) {
            anyhow::bail!(
                "--sock {s}: no connection with data has this cookie in {}",
                file.display()
            );
        }
    }
    // Only the plotted connections' series go into the page.
    let shown = magnet_report::plotted(&a, args.sock);
    for (i, c) in a.connections.iter_mut().enumerate() {
        if !shown.contains(&i) {
            c.series = None;
        }
    }
    let title = file
        .file_name()
        .map_or("trace".into(), |n| n.to_string_lossy().into_owned());
    let html = magnet_report::render(
        &a,
        &magnet_report::ReportOptions {
            title,
            sock: args.sock,
        },
    );
    if args.output.as_os_str() == "-" {
        use std::io::Write;
        std::io::stdout()
            .lock()
            .write_all(html.as_bytes())
            .context("writing the report to standard output")?;
    } else {
        std::fs::write(&args.output, html)
            .with_context(|| format!("cannot write {}", args.output.display()))?;
        eprintln!("magnet: report written to {}", args.output.display());
    }
    Ok(super::trace_input::damaged_code(!a.trace.damage.is_empty()))
}
