//! `magnet info`: what a trace holds — header, host, kernel, duration, events per
//! kind and layer, where each layer's events came from, and what was lost.

use std::io::Write;
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
    let code = super::trace_input::exit_code(&r);
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
        // Names in a trace (host, kernel, kinds, hooks) are the recording
        // host's: escaped for this terminal.
        let stdout = std::io::stdout();
        let mut out = magnet_common::text::Escaping::new(std::io::BufWriter::new(stdout.lock()));
        print_text(&mut out, &info)?;
        out.flush()?;
    }
    Ok(code)
}

fn print_text(o: &mut impl Write, info: &Info) -> std::io::Result<()> {
    let i = &info.summary;
    writeln!(o, "file      {}", info.file.display())?;
    writeln!(
        o,
        "written   by {} on host {} (kernel {}, {} CPUs)",
        i.writer, i.host, i.kernel, i.cpus
    )?;
    let secs = (i.start_realtime_ns / 1_000_000_000) as i64;
    writeln!(
        o,
        "started   {} (unix time {}.{:09})",
        fmt_utc(secs),
        secs,
        i.start_realtime_ns % 1_000_000_000
    )?;
    writeln!(o, "duration  {:.6} s: {}", i.duration_s, i.duration_source)?;
    writeln!(o, "records   {}", i.records)?;
    writeln!(
        o,
        "lost      {} events in {} LOST records{}",
        i.lost_events,
        i.lost_records,
        if i.lost_events == 0 {
            ""
        } else {
            " (parse shows where)"
        }
    )?;
    match &i.end_reason {
        Some(r) => writeln!(o, "ended     {r}")?,
        // Damage can take the END block too: say so rather than blame the
        // recorder.
        None if i.damage.iter().any(|d| !d.contains("cut short")) => writeln!(
            o,
            "ended     NOT CLEANLY: no END block was read (the trace is damaged, below)"
        )?,
        None => writeln!(
            o,
            "ended     NOT CLEANLY: the trace has no END block (recorder killed or disk full)"
        )?,
    }
    for d in &i.damage {
        writeln!(o, "damage    {d}")?;
    }
    match &i.cost {
        Some(c) => {
            for l in c.lines(5) {
                writeln!(o, "cost      {l}")?;
            }
            if let Some(l) = c.skipped_line() {
                writeln!(o, "skipped   {l}")?;
            }
        }
        None if i.complete => writeln!(
            o,
            "cost      not recorded (the END block has none: written before magnet kept its cost)"
        )?,
        None => writeln!(o, "cost      not recorded (no END block)")?,
    }
    writeln!(o)?;
    writeln!(o, "{:<8} {:>10}  hooks", "layer", "events")?;
    for (layer, n) in &i.layers {
        let hooks = i
            .sources
            .iter()
            .find(|s| &s.layer == layer)
            .map(|s| s.hooks.join(", "))
            .unwrap_or_default();
        writeln!(o, "{layer:<8} {n:>10}  {hooks}")?;
    }
    for s in &i.sources {
        if !i.layers.contains_key(&s.layer) {
            writeln!(o, "{:<8} {:>10}  {}", s.layer, 0, s.hooks.join(", "))?;
        }
        for m in s.missing.iter().chain(&s.notes) {
            writeln!(o, "{:<8} {:>10}  note: {m}", s.layer, "")?;
        }
    }
    writeln!(o)?;
    // generated: passed the kernel's filters (END block); lost: generated but
    // not in the file.
    writeln!(
        o,
        "{:<16} {:<6} {:>10} {:>10} {:>8}  hook",
        "kind", "layer", "events", "generated", "lost"
    )?;
    for (name, k) in &i.kinds {
        let (generated, lost) = match k.generated {
            Some(g) => (g.to_string(), g.saturating_sub(k.events).to_string()),
            None => ("-".to_string(), "-".to_string()),
        };
        writeln!(
            o,
            "{name:<16} {:<6} {:>10} {:>10} {:>8}  {}",
            k.layer, k.events, generated, lost, k.hook
        )?;
    }
    Ok(())
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
