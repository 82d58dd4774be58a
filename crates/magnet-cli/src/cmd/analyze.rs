//! `magnet analyze`: per-connection table and the modulation of each layer
//! (MAGNeT's Table III), TCP state, latency through the stack, scheduler.

use std::io::{BufWriter, Write};
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use magnet_analyze::{analyze, Analysis, Connection, Options, Stats};
use magnet_common::units::{bps, bytes, dur};

use super::trace_input;

const AFTER_HELP: &str = "\
For every connection (socket cookie) and every layer (app, tcp, ip, dev) in each
direction (out = sent by that socket, in = received by it): units, bytes, mean /
median / p99 of unit size and of the interval between units, data rate, and how
many app calls became how many packets. docs/analyze.md says what each number means.

Examples:
  magnet analyze run.mgt
  magnet analyze run.mgt --sock 8193 --json | jq '.connections[0].modulation'
  magnet analyze run.mgt --all          # also sockets that moved no data";

#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct AnalyzeArgs {
    #[command(flatten)]
    input: super::trace_input::TraceArg,
    /// Only these sockets (cookies); repeatable or comma-separated.
    #[arg(long, value_name = "COOKIE", value_delimiter = ',')]
    sock: Vec<u64>,
    /// One JSON object (the library's `Analysis`) instead of text.
    #[arg(long)]
    json: bool,
    /// With --json: include plot series (unit marks, TCP samples, histograms).
    #[arg(long, requires = "json")]
    series: bool,
    /// Also list sockets that moved no data (listeners) and cookies seen only on packets.
    #[arg(long)]
    all: bool,
    /// Records held back to sort by time.
    #[arg(long, default_value_t = 65536)]
    window: usize,
}

/// Runs the analysis shared by `analyze` and `report`.
pub fn load(
    file: &std::path::Path,
    progress: bool,
    opts: &Options,
    socks: &[u64],
    all: bool,
) -> Result<Analysis> {
    let mut reader = trace_input::open(file, progress)?;
    let mut a = analyze(&mut reader, opts);
    drop(reader);
    for d in &a.trace.damage {
        let line = format!("{}: {d}", file.display());
        eprintln!("magnet: warning: {}", magnet_common::text::escape(&line));
    }
    if !a.trace.complete && a.trace.damage.is_empty() {
        eprintln!(
            "magnet: warning: {}: the trace has no END block (the recorder did not finish)",
            file.display()
        );
    }
    a.connections.retain(|c| {
        if !socks.is_empty() {
            return socks.contains(&c.cookie);
        }
        all || (c.known
            && (c.app.sent_calls + c.app.recv_calls > 0
                || c.modulation.iter().any(|r| r.layer != "app")))
    });
    if let Some(missing) = socks
        .iter()
        .find(|s| !a.connections.iter().any(|c| c.cookie == **s))
    {
        anyhow::bail!("--sock {missing}: no such socket in {}", file.display());
    }
    Ok(a)
}

pub fn run(args: AnalyzeArgs) -> Result<ExitCode> {
    let file = args.input.path();
    let opts = Options {
        series: args.series,
        window: args.window,
        ..Options::default()
    };
    let progress = trace_input::progress_wanted(args.input.quiet);
    let a = load(&file, progress, &opts, &args.sock, args.all)?;
    let stdout = std::io::stdout();
    // Process names and the like from the trace: escaped in text.
    let mut out = magnet_common::text::Escaping::when(!args.json, BufWriter::new(stdout.lock()));
    if args.json {
        let v = super::json_out::tagged(super::json_out::ANALYZE, "analysis", &a)?;
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
    } else {
        print_text(&mut out, &file, &a)?;
    }
    out.flush()?;
    Ok(trace_input::damaged_code(!a.trace.damage.is_empty()))
}

fn lat(s: &Option<Stats>) -> String {
    match s {
        None => "-".into(),
        Some(s) => format!(
            "n={} mean {} median {} p99 {} max {}",
            s.count,
            dur(s.mean),
            dur(s.median as f64),
            dur(s.p99 as f64),
            dur(s.max as f64)
        ),
    }
}

/// The mark of a row that a LOST region overlaps.
fn lost_note(lost: u64) -> String {
    if lost > 0 {
        format!("  LOST {lost} nearby")
    } else {
        String::new()
    }
}

fn print_text(out: &mut impl Write, file: &std::path::Path, a: &Analysis) -> Result<()> {
    let t = &a.trace;
    writeln!(
        out,
        "trace {}: host {} kernel {}, recorded for {:.3} s, {} records, {} events lost{}",
        file.display(),
        t.host,
        t.kernel,
        t.duration_s,
        t.records,
        t.lost_events,
        if t.lost.is_empty() {
            String::new()
        } else {
            format!(" in {} places", t.lost.len())
        }
    )?;
    for c in &a.connections {
        writeln!(out)?;
        print_conn(out, c)?;
    }
    if a.connections.is_empty() {
        writeln!(out, "\nno connections with data (--all lists every socket)")?;
    }
    let s = &a.sched;
    if s.switches > 0 {
        writeln!(out, "\nscheduler: {} context switches", s.switches)?;
        for c in &s.cpus {
            writeln!(out, "  cpu{:<3} {:>8} switches", c.cpu, c.switches)?;
        }
        writeln!(
            out,
            "  {:>8} {:>8} {:<16} {:>12} {:>8} {:>8}  run-queue wait",
            "tid", "tgid", "comm", "on-cpu", "sw-in", "wakeups"
        )?;
        for task in &s.tasks {
            writeln!(
                out,
                "  {:>8} {:>8} {:<16} {:>12} {:>8} {:>8}  {}",
                task.tid,
                task.tgid,
                task.comm,
                dur(task.on_cpu_ns as f64),
                task.switches_in,
                task.wakeups,
                lat(&task.runq_wait)
            )?;
        }
    }
    Ok(())
}

fn print_conn(out: &mut impl Write, c: &Connection) -> Result<()> {
    writeln!(
        out,
        "socket {} {} {} -> {}  pid {} ({})  {:.3}-{:.3} s  {}",
        c.cookie,
        c.protocol,
        c.local.as_deref().unwrap_or("?"),
        c.remote.as_deref().unwrap_or("?"),
        c.pids
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join(","),
        if c.comm.is_empty() { "-" } else { &c.comm },
        c.first_s,
        c.last_s,
        c.states.join(">")
    )?;
    if c.lost_in_span > 0 {
        writeln!(
            out,
            "  LOST: {} events (of any socket) were lost while this socket was active: rows marked LOST may be missing units",
            c.lost_in_span
        )?;
    }
    let app = &c.app;
    writeln!(
        out,
        "  app: sent {} B in {} calls ({}), received {} B in {} calls ({}){}",
        app.sent_bytes,
        app.sent_calls,
        bps(app.out_bps),
        app.recv_bytes,
        app.recv_calls,
        bps(app.in_bps),
        if app.failed_calls > 0 {
            format!(", {} failed calls", app.failed_calls)
        } else {
            String::new()
        }
    )?;
    print_modulation(out, c)?;
    for k in &c.coalescing {
        if let Some(p) = k.packets_per_call {
            let unit = c.row("tcp", &k.dir).map_or("segment", |r| r.unit.as_str());
            writeln!(
                out,
                "  {}: {} app calls -> {} tcp {unit}s, {} ip packets, {} dev packets ({:.2} packets per call)",
                k.dir, k.app_calls, k.tcp_segments, k.ip_packets, k.dev_packets, p
            )?;
        }
    }
    print_tcp_and_latency(out, c)?;
    Ok(())
}

/// The connection's modulation table: per layer and direction, the units'
/// sizes, the gaps between them and the rate.
fn print_modulation(out: &mut impl Write, c: &Connection) -> Result<()> {
    if c.modulation.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "  {:<5} {:<3} {:>8} {:<8} {:>10} {:>9} {:>7} {:>7} {:>10} {:>10} {:>10} {:>5} {:>11}",
        "layer",
        "dir",
        "units",
        "(unit)",
        "bytes",
        "size:mean",
        "median",
        "p99",
        "gap:mean",
        "median",
        "p99",
        "cv",
        "rate"
    )?;
    for r in &c.modulation {
        let (im, imed, ip99, cv) = match &r.interval_ns {
            Some(i) => (
                dur(i.mean),
                dur(i.median as f64),
                dur(i.p99 as f64),
                format!("{:.2}", i.cv),
            ),
            None => ("-".into(), "-".into(), "-".into(), "-".into()),
        };
        writeln!(
                out,
                "  {:<5} {:<3} {:>8} {:<8} {:>10} {:>9} {:>7} {:>7} {:>10} {:>10} {:>10} {:>5} {:>11}{}",
                r.layer,
                r.dir,
                r.units,
                r.unit,
                r.bytes,
                bytes(r.size.mean),
                r.size.median,
                r.size.p99,
                im,
                imed,
                ip99,
                cv,
                bps(r.rate_bps),
                lost_note(r.lost_in_span)
            )?;
    }
    if c.modulation.iter().any(|r| r.unit == "rcv unit") {
        writeln!(
                out,
                "  (rcv unit: one tcp_probe call; TCP may have merged several queued segments into it — record the ip layer to count wire segments)"
            )?;
    }
    Ok(())
}

/// The connection's TCP state samples and its latencies between the app
/// and the device.
fn print_tcp_and_latency(out: &mut impl Write, c: &Connection) -> Result<()> {
    if let Some(t) = &c.tcp {
        writeln!(
            out,
            "  tcp: {} samples; send buffer (written, unacked) max {} B mean {:.0} B; in flight max {} B; cwnd {}..{}; ssthresh {}; srtt {}; snd_wnd max {}; rcv_wnd max {}; {}",
            t.samples,
            t.sndbuf_max,
            t.sndbuf_mean,
            t.inflight_max,
            t.cwnd_min,
            t.cwnd_max,
            t.ssthresh_last,
            t.srtt_us.as_ref().map_or("-".into(), |s| format!("median {}us", s.median)),
            t.snd_wnd_max,
            t.rcv_wnd_max,
            t.retrans_text()
        )?;
    }
    let l = &c.latency;
    if l.send.is_some() || l.send_unmatched > 0 {
        writeln!(
            out,
            "  latency send->dev: {} ({} unmatched)",
            lat(&l.send),
            l.send_unmatched
        )?;
    }
    if l.recv.is_some() || l.recv_unmatched > 0 {
        writeln!(
            out,
            "  latency dev->recv: {} ({} unmatched)",
            lat(&l.recv),
            l.recv_unmatched
        )?;
    }
    if let Some(w) = &l.recv_cpu_wait {
        writeln!(
            out,
            "  waiting for a CPU before recv: {}{}",
            lat(&Some(w.clone())),
            l.recv_cpu_wait_share.map_or(String::new(), |s| format!(
                " ({:.1}% of the arrival->recv delay)",
                s * 100.0
            ))
        )?;
    }
    Ok(())
}
