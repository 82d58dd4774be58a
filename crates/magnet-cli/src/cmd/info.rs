//! `magnet info`: what a trace holds — header, host, kernel, duration, events per
//! kind and layer, where each layer's events came from, and what was lost.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use magnet_trace::{summarize, TraceInfo};
use serde::Serialize;

/// Summarise a trace.
#[derive(Args, Debug)]
#[command(after_help = "Example:\n  magnet info run.mgt\n  magnet info run.mgt --json | jq .kinds")]
pub struct InfoArgs {
    #[command(flatten)]
    input: super::trace_input::TraceArg,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// The file name and magnet-trace's summary of it.
#[derive(Serialize)]
struct Info {
    file: PathBuf,
    #[serde(flatten)]
    summary: TraceInfo,
}

impl InfoArgs {
    pub fn for_file(file: PathBuf) -> Self {
        InfoArgs {
            input: super::trace_input::TraceArg::of(file),
            json: false,
        }
    }
}

pub fn run(args: InfoArgs) -> Result<ExitCode> {
    let file = args.input.path();
    let mut r = args.input.open()?;
    let info = Info {
        file: file.clone(),
        summary: summarize(&mut r),
    };
    drop(r);
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&super::json_out::tagged(
                super::json_out::INFO,
                "info",
                &info
            )?)?
        );
    } else {
        print_text(&info);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_text(info: &Info) {
    let i = &info.summary;
    println!("file      {}", info.file.display());
    println!(
        "written   by {} on host {} (kernel {}, {} CPUs)",
        i.writer, i.host, i.kernel, i.cpus
    );
    let secs = (i.start_realtime_ns / 1_000_000_000) as i64;
    println!(
        "started   {} (unix time {}.{:09})",
        fmt_utc(secs),
        secs,
        i.start_realtime_ns % 1_000_000_000
    );
    println!("duration  {:.6} s: {}", i.duration_s, i.duration_source);
    println!("records   {}", i.records);
    println!(
        "lost      {} events in {} LOST records{}",
        i.lost_events,
        i.lost_records,
        if i.lost_events == 0 {
            ""
        } else {
            " (parse shows where)"
        }
    );
    match &i.end_reason {
        Some(r) => println!("ended     {r}"),
        None => println!(
            "ended     NOT CLEANLY: the trace has no END block (recorder killed or disk full)"
        ),
    }
    for d in &i.damage {
        println!("damage    {d}");
    }
    println!();
    println!("{:<8} {:>10}  hooks", "layer", "events");
    for (layer, n) in &i.layers {
        let hooks = i
            .sources
            .iter()
            .find(|s| &s.layer == layer)
            .map(|s| s.hooks.join(", "))
            .unwrap_or_default();
        println!("{layer:<8} {n:>10}  {hooks}");
    }
    for s in &i.sources {
        if !i.layers.contains_key(&s.layer) {
            println!("{:<8} {:>10}  {}", s.layer, 0, s.hooks.join(", "));
        }
        for m in &s.missing {
            println!("{:<8} {:>10}  note: {m}", s.layer, "");
        }
    }
    println!();
    // generated: passed the kernel's filters (END block); lost: generated but
    // not in the file.
    println!(
        "{:<16} {:<6} {:>10} {:>10} {:>8}  hook",
        "kind", "layer", "events", "generated", "lost"
    );
    for (name, k) in &i.kinds {
        let (generated, lost) = match k.generated {
            Some(g) => (g.to_string(), g.saturating_sub(k.events).to_string()),
            None => ("-".to_string(), "-".to_string()),
        };
        println!(
            "{name:<16} {:<6} {:>10} {:>10} {:>8}  {}",
            k.layer, k.events, generated, lost, k.hook
        );
    }
}

/// `YYYY-MM-DD HH:MM:SS UTC` without a date library (civil-from-days).
pub fn fmt_utc(secs: i64) -> String {
    let days = secs.div_euclid(86400);
    let rem = secs.rem_euclid(86400);
    let z = days + 719468;
    let era = z.div_euclid(146097);
    let doe = z.rem_euclid(146097);
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn utc_dates() {
        assert_eq!(super::fmt_utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(super::fmt_utc(1_795_000_000), "2026-11-18 11:06:40 UTC");
    }
}
