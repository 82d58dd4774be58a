//! `magnet info`: what a trace holds — header, host, kernel, duration, events per
//! kind and layer, where each layer's events came from, and what was lost.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use magnet_trace::{kind, KindIndex};
use serde::Serialize;

use super::trace_input;

/// Summarise a trace.
#[derive(Args, Debug)]
#[command(after_help = "Example:\n  magnet info run.mgt\n  magnet info run.mgt --json | jq .kinds")]
pub struct InfoArgs {
    /// Trace file.
    file: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize, Default)]
struct KindCount {
    layer: String,
    hook: String,
    events: u64,
}

#[derive(Serialize)]
struct Info {
    file: PathBuf,
    writer: String,
    host: String,
    kernel: String,
    cpus: u32,
    start_realtime_ns: u64,
    duration_s: f64,
    records: u64,
    kinds: BTreeMap<String, KindCount>,
    layers: BTreeMap<String, u64>,
    sources: Vec<magnet_trace::LayerSource>,
    lost_events: u64,
    lost_records: u64,
    complete: bool,
    end_reason: Option<String>,
    damage: Vec<String>,
    settings: serde_json::Value,
}

impl InfoArgs {
    pub fn for_file(file: PathBuf) -> Self {
        InfoArgs { file, json: false }
    }
}

pub fn run(args: InfoArgs) -> Result<ExitCode> {
    let mut r = trace_input::open(&args.file)?;
    let header = r.header().clone();
    let index = KindIndex::new(&header.catalog);
    let mut counts: BTreeMap<u16, u64> = BTreeMap::new();
    let (mut first, mut last, mut records, mut lost, mut lost_records) =
        (u64::MAX, 0u64, 0u64, 0u64, 0u64);
    let mut damage = Vec::new();
    while let Some(item) = r.next_record() {
        match item {
            Ok(rec) => {
                records += 1;
                *counts.entry(rec.kind()).or_default() += 1;
                first = first.min(rec.ts_ns());
                last = last.max(rec.ts_ns());
                if rec.kind() == kind::LOST && rec.bytes.len() >= 32 {
                    lost_records += 1;
                    lost += u64::from_le_bytes(rec.bytes[24..32].try_into().expect("8 bytes"));
                }
            }
            Err(e) => damage.push(e.to_string()),
        }
    }
    let mut kinds = BTreeMap::new();
    let mut layers: BTreeMap<String, u64> = BTreeMap::new();
    for (k, n) in &counts {
        let (name, layer, hook) = match index.get(*k) {
            Some(d) => (d.name.clone(), d.layer.clone(), d.hook.clone()),
            None => (format!("unknown_{k}"), "?".into(), "?".into()),
        };
        *layers.entry(layer.clone()).or_default() += n;
        kinds.insert(
            name,
            KindCount {
                layer,
                hook,
                events: *n,
            },
        );
    }
    let footer = r.footer().cloned();
    let info = Info {
        file: args.file.clone(),
        writer: header.writer.clone(),
        host: header.host.clone(),
        kernel: header.kernel.clone(),
        cpus: header.cpus,
        start_realtime_ns: header.clock.realtime_ns,
        duration_s: if records > 0 && last >= first {
            (last - first) as f64 / 1e9
        } else {
            0.0
        },
        records,
        kinds,
        layers,
        sources: header.layers.clone(),
        lost_events: lost,
        lost_records,
        complete: footer.is_some(),
        end_reason: footer.map(|f| f.end_reason),
        damage,
        settings: header.settings.clone(),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&info)?);
    } else {
        print_text(&info);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_text(i: &Info) {
    println!("file      {}", i.file.display());
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
    println!("duration  {:.6} s", i.duration_s);
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
    println!("{:<16} {:<6} {:>10}  hook", "kind", "layer", "events");
    for (name, k) in &i.kinds {
        println!("{name:<16} {:<6} {:>10}  {}", k.layer, k.events, k.hook);
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
