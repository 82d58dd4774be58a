//! `magnet export`: a trace as Perfetto JSON, Parquet, CSV or JSON lines, for
//! ui.perfetto.dev, DuckDB, pandas and the like. The work is in magnet-export;
//! this turns arguments into its options and reports what it wrote.

use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use magnet_export::{export, Format, Options};

use super::trace_input;

const AFTER_HELP: &str = "\
Parquet, CSV and JSON lines have one row per event: common columns (ts_ns, time_s,
wall_ns, cpu, pid, tid, flags, layer, kind), then every field of every kind in the
trace's catalog, null where the event's kind has no such field. Perfetto has a
process per connection (named by its 5-tuple) with a track per layer, a process per
CPU with the context switches as slices, TCP counters and LOST markers.
docs/export.md lists the columns and the Perfetto mapping.

Examples:
  magnet export run.mgt --format perfetto -o run.json     # open in ui.perfetto.dev
  magnet export run.mgt --format parquet -o run.parquet
  magnet export run.mgt --format csv -o - | head
  magnet export run.mgt --format jsonl -o - | jq 'select(.kind == \"app_send\") | .ret'";

#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct ExportArgs {
    #[command(flatten)]
    input: super::trace_input::TraceArg,
    /// Output format: perfetto, parquet, csv or jsonl (-T as in tshark; -f, which is
    /// --filter elsewhere, still works here)
    #[arg(short = 'T', long, short_alias = 'f')]
    format: Format,
    /// Output file (`-` for standard output).
    #[arg(short, long)]
    output: PathBuf,
    /// Records held back to sort by time.
    #[arg(long, default_value_t = 65536)]
    window: usize,
    /// Rows per Parquet row group (what is held in memory at once).
    #[arg(long, default_value_t = 65536)]
    row_group: usize,
}

pub fn run(args: ExportArgs) -> Result<ExitCode> {
    let file = args.input.path();
    let to_stdout = args.output.as_os_str() == "-";
    // No bar on the terminal the export itself is written to.
    let progress = trace_input::progress_wanted(args.input.quiet)
        && !(to_stdout && std::io::stdout().is_terminal());
    let mut reader = trace_input::open(&file, progress)?;
    let opts = Options {
        window: args.window,
        row_group_rows: args.row_group,
    };
    let path = file.clone();
    let mut warn = |e: &magnet_trace::TraceError| trace_input::warn(&path, e);
    let summary = if to_stdout {
        let out = BufWriter::with_capacity(1 << 16, std::io::stdout());
        export(&mut reader, args.format, out, &opts, &mut warn)
    } else {
        let f = File::create(&args.output)
            .with_context(|| format!("cannot create {}", args.output.display()))?;
        let mut out = BufWriter::with_capacity(1 << 16, f);
        let s = export(&mut reader, args.format, &mut out, &opts, &mut warn);
        out.flush()
            .with_context(|| format!("writing {}", args.output.display()))?;
        s
    };
    let code = trace_input::exit_code(&reader);
    drop(reader);
    // A closed pipe (`magnet export … -o - | head`) ends the export quietly.
    if let Err(magnet_export::ExportError::Io(e)) = &summary {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            return Ok(ExitCode::SUCCESS);
        }
    }
    let summary = summary
        .with_context(|| format!("exporting {} as {}", file.display(), args.format.name()))?;
    let mut line = format!(
        "magnet: exported {} events to {} ({})",
        summary.rows,
        if to_stdout {
            "stdout".to_string()
        } else {
            args.output.display().to_string()
        },
        args.format.name()
    );
    if let Some(p) = &summary.perfetto {
        line.push_str(&format!(
            ": {} connections, {} packet/call instants, {} CPU slices, {} counter events, {} LOST markers",
            p.connections, p.packet_instants, p.cpu_slices, p.counter_events, p.lost_markers
        ));
    }
    if !args.input.quiet {
        eprintln!("{line}");
    }
    if !summary.complete && summary.damage.is_empty() {
        eprintln!(
            "magnet: warning: {}: the trace has no END block (the recorder did not finish)",
            file.display()
        );
    }
    Ok(code)
}
