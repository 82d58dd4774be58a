//! `magnet parse`: one line per event, in time order (MAGNeT's magnet-parse), or
//! JSON lines. The text form has a fixed column order for grep/awk:
//!
//! ```text
//! # time_s cpu pid tid layer kind field=value ...
//! 0.001234567 1 4242 4242 app app_send cookie=8193 asked=1000 ret=1000 ...
//! ```

use std::collections::HashSet;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use magnet_trace::print::{LinePrinter, TimeColumn};
use magnet_trace::{Event, KindIndex, ReorderBuffer};

use super::trace_input;
use super::units::parse_duration;

const AFTER_HELP: &str = "\
Times are seconds since the recording started (the trace's clock mapping turns them
into wall-clock time: --wall). Records reach the trace in ring-buffer order; parse
sorts them by time within a window of --window records.

Examples:
  magnet parse run.mgt | grep app_send
  magnet parse run.mgt --layer tcp --sock 8193 --since 1.5s --until 2s
  magnet parse run.mgt --json --kind dev_start_xmit | jq .len
  magnet parse run.mgt | awk '$6 == \"app_send\" { n++ } END { print n }'";

#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct ParseArgs {
    /// Trace file.
    file: PathBuf,
    /// JSON lines instead of text.
    #[arg(long)]
    json: bool,
    /// Only these layers (app, tcp, ip, qdisc, dev, drop, sched, meta); repeatable or comma-separated.
    #[arg(long, value_delimiter = ',')]
    layer: Vec<String>,
    /// Only these kinds (e.g. app_send, tcp_rcv); repeatable or comma-separated.
    #[arg(long, value_delimiter = ',')]
    kind: Vec<String>,
    /// Only events of this socket cookie (and its SOCK record).
    #[arg(long, value_name = "COOKIE")]
    sock: Option<u64>,
    /// Only events recorded in this process (tgid).
    #[arg(long)]
    pid: Option<u32>,
    /// Only events at or after this time since the recording started (e.g. 1.5s).
    #[arg(long, value_parser = parse_duration)]
    since: Option<Duration>,
    /// Only events before this time since the recording started.
    #[arg(long, value_parser = parse_duration)]
    until: Option<Duration>,
    /// Print wall-clock time (UTC, ns) instead of seconds since the start.
    #[arg(long)]
    wall: bool,
    /// Stop after this many events.
    #[arg(short = 'c', long)]
    count: Option<u64>,
    /// Records held back to sort by time.
    #[arg(long, default_value_t = 65536)]
    window: usize,
}

pub fn run(args: ParseArgs) -> Result<ExitCode> {
    let mut reader = trace_input::open(&args.file)?;
    let header = reader.header().clone();
    let index = KindIndex::new(&header.catalog);
    for k in &args.kind {
        if header.catalog.by_name(k).is_none() {
            let names: Vec<_> = header
                .catalog
                .kinds
                .iter()
                .map(|k| k.name.as_str())
                .collect();
            anyhow::bail!(
                "--kind {k}: no such kind in this trace (kinds: {})",
                names.join(", ")
            );
        }
    }
    let layers: HashSet<&str> = args.layer.iter().map(|s| s.as_str()).collect();
    let kinds: HashSet<&str> = args.kind.iter().map(|s| s.as_str()).collect();
    let start = header.clock.monotonic_ns;
    let since = args.since.map(|d| start + d.as_nanos() as u64);
    let until = args.until.map(|d| start + d.as_nanos() as u64);

    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    // Lines are built in one buffer and written in large pieces.
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 17);
    if !args.json {
        writeln!(
            buf,
            "# magnet parse {} host={} kernel={}\n# {} cpu pid tid layer kind field=value ...",
            args.file.display(),
            header.host,
            header.kernel,
            if args.wall { "wall_ns" } else { "time_s" }
        )?;
    }
    let printer = LinePrinter::new(&header);
    let time = if args.wall {
        TimeColumn::Wall
    } else {
        TimeColumn::Relative
    };
    let mut printed = 0u64;
    let mut damaged = 0u64;
    let path = args.file.clone();
    let mut ordered = ReorderBuffer::new(&mut reader, args.window);
    while let Some(item) = ordered.next() {
        let rec = match item {
            Ok(r) => r,
            Err(e) => {
                damaged += 1;
                trace_input::warn(&path, &e);
                continue;
            }
        };
        let ts = rec.ts_ns();
        if since.is_some_and(|s| ts < s) || until.is_some_and(|u| ts >= u) {
            continue;
        }
        if args.pid.is_some_and(|p| rec.pid() != p) {
            continue;
        }
        let Some(desc) = index.get(rec.kind()) else {
            // Unknown kinds are kept, shown by number.
            if layers.is_empty() && kinds.is_empty() && args.sock.is_none() {
                writeln!(
                    buf,
                    "{} {} {} {} ? kind{} len={}",
                    ts,
                    rec.cpu(),
                    rec.pid(),
                    rec.tid(),
                    rec.kind(),
                    rec.bytes.len()
                )?;
            }
            continue;
        };
        if !layers.is_empty() && !layers.contains(desc.layer.as_str()) {
            continue;
        }
        if !kinds.is_empty() && !kinds.contains(desc.name.as_str()) {
            continue;
        }
        if let Some(c) = args.sock {
            let ev = Event {
                bytes: rec.bytes,
                desc,
            };
            if ev.u64("cookie") != Some(c) {
                continue;
            }
        }
        if args.json {
            printer.json(&rec, &mut buf);
        } else {
            printer.text(&rec, time, &mut buf);
        }
        if buf.len() >= 1 << 16 {
            out.write_all(&buf)?;
            buf.clear();
        }
        printed += 1;
        if args.count.is_some_and(|c| printed >= c) {
            break;
        }
    }
    drop(ordered);
    out.write_all(&buf)?;
    out.flush()?;
    if reader.footer().is_none() && damaged == 0 && args.count.is_none() {
        eprintln!(
            "magnet: warning: {}: the trace has no END block (the recorder did not finish)",
            path.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
