//! `magnet sample`: Millisampler. One run on an interface (printed, or written
//! as Meta's JSON / magnet's native form), continuous scheduled runs into a
//! store with retention, and browsing, plotting and merging stored runs.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, UNIX_EPOCH};

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use magnet_common::units::{
    format_duration, format_instant_ns, now_ns, parse_duration, parse_instant,
};
use magnet_runs::merge::merge;
use magnet_runs::plot;
use magnet_runs::schedule::Schedule;
use magnet_runs::store::Store;
use magnet_sample::{sample, Metric, Run, SampleConfig, Start};

use super::trace_input;

const EXAMPLES: &str = "\
Examples:
  magnet sample -i eth0 --interval 100us --samples 2000
      one 200 ms run at 100 us, printed as totals and sparklines
  magnet sample -i eth0 --interval 1ms -o run.json
      one 2 s run written in Meta's Millisampler JSON schema (.msr: compact native form)
  magnet sample -i eth0 --schedule '10ms,1ms,100us every 1m' --store /var/lib/magnet --retain 3d
      continuous: three runs each minute, stored, runs older than 3 days removed
  magnet sample ls --store /var/lib/magnet
  magnet sample show --store /var/lib/magnet latest
  magnet sample plot --store /var/lib/magnet latest -o run.html      (or .svg)
  magnet sample -i eth0 --at 2026-11-22T10:00:00Z -o h1.json
      start exactly then: run it on every host of a rack for synchronised runs
  magnet sample merge h1.json h2.json h3.json -o rack.html           (or .json, .svg)
      one view of synchronised hosts, aligned bucket by bucket
  magnet sample --check
      the hooks a run would attach on this kernel (TCX links or clsact filters)

Per bucket: ingress/egress bytes and packets, ingress ECN-CE bytes, ingress and
egress retransmitted bytes (TCP data starting below the highest sequence seen
for its flow), bytes of short- and long-RTT TCP flows (--rtt-threshold), the
kernel's tcp_retransmit_skb count, and active connections (128-bit sketch).
Scheduled cycles start on wall-clock multiples of the period, so hosts with the
same schedule sample the same instants. Needs root; see docs/sample.md.";

/// Sample an interface's traffic at 100 us / 1 ms / 10 ms (Millisampler).
#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true, after_help = EXAMPLES)]
pub struct SampleArgs {
    #[command(subcommand)]
    action: Option<Action>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Subcommand, Debug)]
enum Action {
    /// List the runs in a store.
    Ls(LsArgs),
    /// Print a run: description, totals, sparklines (or its JSON).
    Show(ShowArgs),
    /// Draw a run as SVG or HTML (offline, no scripts).
    Plot(PlotArgs),
    /// Align runs of several hosts taken at the same instant into one view.
    Merge(MergeArgs),
}

#[derive(Args, Debug)]
struct RunArgs {
    /// Interface to sample (in the current network namespace).
    #[arg(short = 'i', long = "interface", value_name = "IFACE")]
    iface: Option<String>,
    /// Bucket width: 100us, 1ms, 10ms, …
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "1ms")]
    interval: Duration,
    /// Buckets per run (memory: 136 bytes x samples x CPUs).
    #[arg(long, value_name = "N", default_value_t = 2000)]
    samples: u32,
    /// Write the run here: .json = Meta's schema, anything else = native form.
    #[arg(short = 'o', long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Keep runs in this directory (one file per run).
    #[arg(long, value_name = "DIR")]
    store: Option<PathBuf>,
    /// Continuous runs: 'INTERVAL[,INTERVAL…] every PERIOD' (needs --store).
    #[arg(long, value_name = "SPEC", requires = "store")]
    schedule: Option<String>,
    /// Remove stored runs older than this (e.g. 3d) after each run.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, requires = "store")]
    retain: Option<Duration>,
    /// Start at this UTC instant (2026-11-22T10:00:00Z or @UNIXSECONDS).
    #[arg(long, value_name = "TIME", conflicts_with = "schedule")]
    at: Option<String>,
    /// With --schedule: stop after this many cycles (default: run until SIGINT/SIGTERM).
    #[arg(long, value_name = "N", requires = "schedule")]
    cycles: Option<u64>,
    /// TCP flows whose smoothed RTT is below this count as short-RTT.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "5ms")]
    rtt_threshold: Duration,
    /// Do not look up sockets to split bytes by RTT (a little cheaper).
    #[arg(long)]
    no_rtt_split: bool,
    /// How the run's BPF time is measured. The kernel's run-time statistics are
    /// host-wide: while on, every BPF program on the host reads the clock twice
    /// more per run. `full`: on throughout, exact; `sampled`: on for the first
    /// 2 s, then in 20 ms windows, a tenth of the time, the rest estimated (see
    /// `magnet record --help`: not the default); `off`: the run says its CPU but
    /// not its programs' time.
    #[arg(long, value_name = "HOW", default_value = "full", value_parser = ["full", "sampled", "off"])]
    bpf_stats: String,
    /// The same as --bpf-stats off.
    #[arg(long, conflicts_with = "bpf_stats")]
    no_bpf_stats: bool,
    /// Host name written into runs (default: this host's name).
    #[arg(long, value_name = "NAME")]
    host: Option<String>,
    /// Seed of the connection sketch's flow hash.
    #[arg(long, value_name = "N", default_value_t = 0)]
    sketch_seed: u64,
    /// Print the run as JSON (Meta's schema) instead of a table.
    #[arg(long)]
    json: bool,
    /// No progress bar (drawn only when stderr is a terminal)
    #[arg(short = 'q', long)]
    quiet: bool,
    /// Attach with classic clsact filters even where TCX exists (what kernels
    /// before 6.6 get); a clsact qdisc the run creates is removed after it.
    #[arg(long)]
    clsact: bool,
    /// Print the hooks a run would attach on this kernel (TCX or clsact, and
    /// the retransmit tracepoint), or why it cannot, and exit (with --json:
    /// schema magnet.sample.check/1).
    #[arg(long)]
    check: bool,
}

#[derive(Args, Debug)]
struct LsArgs {
    #[arg(long, value_name = "DIR")]
    store: PathBuf,
}

#[derive(Args, Debug)]
struct ShowArgs {
    /// A run file, or with --store a run name, name prefix, `latest` or -N.
    #[arg(default_value = "latest", allow_negative_numbers = true)]
    run: String,
    #[arg(long, value_name = "DIR")]
    store: Option<PathBuf>,
    /// Print Meta's JSON schema instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct PlotArgs {
    /// A run file, or with --store a run name, name prefix, `latest` or -N.
    #[arg(default_value = "latest", allow_negative_numbers = true)]
    run: String,
    #[arg(long, value_name = "DIR")]
    store: Option<PathBuf>,
    /// Output: .svg or .html.
    #[arg(short = 'o', long, value_name = "FILE")]
    output: PathBuf,
}

#[derive(Args, Debug)]
struct MergeArgs {
    /// Runs (.json or native) of one interval, one per host.
    #[arg(required = true, num_args = 1..)]
    runs: Vec<PathBuf>,
    /// Output: .html, .svg or .json (aligned series per host).
    #[arg(short = 'o', long, value_name = "FILE")]
    output: PathBuf,
}

pub fn run(args: SampleArgs) -> anyhow::Result<ExitCode> {
    match args.action {
        Some(Action::Ls(a)) => ls(a),
        Some(Action::Show(a)) => show(a),
        Some(Action::Plot(a)) => plot_cmd(a),
        Some(Action::Merge(a)) => merge_cmd(a),
        None => sample_cmd(args.run),
    }
}

fn config(a: &RunArgs, iface: &str, interval: Duration) -> SampleConfig {
    let mut c = SampleConfig::new(iface, interval, a.samples);
    c.rtt_threshold = a.rtt_threshold;
    c.rtt_split = !a.no_rtt_split;
    c.bpf_stats = !a.no_bpf_stats && a.bpf_stats != "off";
    c.bpf_stats_sampled = a.bpf_stats == "sampled";
    if a.clsact {
        c.attach = magnet_sample::AttachMode::Clsact;
    }
    c.sketch_seed = a.sketch_seed;
    c.host = a.host.clone();
    c
}

fn stop_flag() -> anyhow::Result<magnet_common::stop::Stop> {
    magnet_common::stop::Stop::install().context("installing the signal handler")
}

fn sample_cmd(a: RunArgs) -> anyhow::Result<ExitCode> {
    if a.check {
        return check(&a);
    }
    let Some(iface) = a.iface.clone() else {
        bail!("give an interface to sample with -i IFACE (or a subcommand: ls, show, plot, merge; see --help)");
    };
    let store = a.store.as_deref().map(Store::open).transpose()?;
    let signals = stop_flag()?;
    let stop = signals.flag();
    if let Some(spec) = &a.schedule {
        let sched = Schedule::parse(spec)?;
        sched.check(a.samples)?;
        return scheduled(
            &a,
            &iface,
            &sched,
            store.as_ref().expect("clap requires --store"),
            &stop,
        );
    }
    let mut cfg = config(&a, &iface, a.interval);
    if let Some(at) = &a.at {
        cfg.start = Start::At(parse_instant(at).map_err(anyhow::Error::msg)?);
    }
    let mut bar = None;
    let run = sample(&cfg, &stop, &mut |s| {
        for line in &s.cleaned {
            eprintln!("magnet: {line}");
        }
        eprintln!(
            "magnet: sampling {iface} ({}): {} x {} from {}",
            s.attach,
            a.samples,
            format_duration(a.interval),
            format_instant_ns(s.start_realtime_ns)
        );
        bar = Some(trace_input::ticker(
            trace_input::progress_wanted(a.quiet),
            s.start_realtime_ns,
            a.interval * a.samples,
            &format!("sampling {iface}"),
        ));
    });
    drop(bar);
    let run = run.with_context(|| format!("sampling {iface}"))?;
    if let Some(out) = &a.output {
        run.save(out)?;
        eprintln!("magnet: wrote {}", out.display());
    }
    if let Some(store) = &store {
        let p = store.save(&run)?;
        eprintln!("magnet: stored {}", p.display());
        retain(store, a.retain)?;
    }
    if a.output.is_none() || a.json {
        print_run(&run, a.json)?;
    }
    Ok(if run.meta.complete {
        ExitCode::SUCCESS
    } else {
        // cut short by SIGINT/SIGTERM: 128+N (the partial run is written)
        ExitCode::from(magnet_common::exit::signalled(
            signals.signal().unwrap_or(libc::SIGINT),
        ))
    })
}

fn retain(store: &Store, max_age: Option<Duration>) -> anyhow::Result<()> {
    if let Some(age) = max_age {
        for e in store.retain(age, now_ns())? {
            eprintln!(
                "magnet: removed {} (older than {})",
                e.name,
                format_duration(age)
            );
        }
    }
    Ok(())
}

fn scheduled(
    a: &RunArgs,
    iface: &str,
    sched: &Schedule,
    store: &Store,
    stop: &AtomicBool,
) -> anyhow::Result<ExitCode> {
    eprintln!(
        "magnet: sampling {iface} every {}: {} x {} samples, into {}",
        format_duration(sched.every),
        sched
            .intervals
            .iter()
            .map(|d| format_duration(*d))
            .collect::<Vec<_>>()
            .join(","),
        a.samples,
        store.dir().display()
    );
    let mut cycles = 0u64;
    while a.cycles.is_none_or(|n| cycles < n) {
        // Plan after the newest run stored for this interface: a scheduler
        // restarted within a cycle of its predecessor's end would otherwise
        // plan that cycle again and write over the run SIGTERM cut short.
        // (A stored run more than a period ahead means the clock went back:
        // not waited for.)
        let now = now_ns();
        let period = sched.every.as_nanos() as u64;
        let after = match store.latest_start(iface)? {
            Some(t) if t <= now.saturating_add(period) => now.max(t),
            _ => now,
        };
        for planned in sched.next_cycle(after, a.samples) {
            if stop.load(Ordering::Relaxed) {
                return Ok(ExitCode::SUCCESS);
            }
            let mut cfg = config(a, iface, planned.interval);
            cfg.start = Start::At(UNIX_EPOCH + Duration::from_nanos(planned.start_ns));
            match sample(&cfg, stop, &mut |s| {
                for line in &s.cleaned {
                    eprintln!("magnet: {line}");
                }
            }) {
                Ok(run) => {
                    let p = store.save(&run)?;
                    eprintln!(
                        "magnet: stored {}{}",
                        p.display(),
                        if run.meta.complete {
                            ""
                        } else {
                            " (interrupted)"
                        }
                    );
                    retain(store, a.retain)?;
                }
                // A late start (slow load on a busy host) skips one run, not the schedule.
                Err(magnet_sample::Error::Config(msg)) if msg.contains("in the past") => {
                    eprintln!(
                        "magnet: skipped the {} run: {msg}",
                        format_duration(planned.interval)
                    );
                }
                Err(e) => return Err(e).with_context(|| format!("sampling {iface}")),
            }
        }
        cycles += 1;
    }
    Ok(ExitCode::SUCCESS)
}

fn load(which: &str, store: Option<&Path>) -> anyhow::Result<Run> {
    let path = match store {
        Some(dir) if !Path::new(which).exists() => Store::existing(dir)?.find(which)?.path,
        _ => PathBuf::from(which),
    };
    Ok(Run::load(&path)?)
}

fn ls(a: LsArgs) -> anyhow::Result<ExitCode> {
    let store = Store::existing(&a.store)?;
    let list = store.list()?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:<40} {:<30} {:<12} {:>8}",
        "run", "start (UTC)", "interface", "interval"
    )?;
    for e in &list {
        writeln!(
            out,
            "{:<40} {:<30} {:<12} {:>8}",
            e.name,
            format_instant_ns(e.start_ns),
            e.iface,
            e.interval
        )?;
    }
    writeln!(out, "{} runs in {}", list.len(), store.dir().display())?;
    Ok(ExitCode::SUCCESS)
}

fn show(a: ShowArgs) -> anyhow::Result<ExitCode> {
    let run = load(&a.run, a.store.as_deref())?;
    print_run(&run, a.json)?;
    Ok(ExitCode::SUCCESS)
}

fn print_run(run: &Run, json: bool) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        let v = super::json_out::tagged(super::json_out::SAMPLE, "run", run.to_json())?;
        writeln!(out, "{}", serde_json::to_string(&v)?)?;
        return Ok(());
    }
    let m = &run.meta;
    let interval = Duration::from_nanos(m.interval_ns);
    writeln!(
        out,
        "{} {}: {} x {} ({}) from {}{}",
        m.host,
        m.iface,
        run.len(),
        format_duration(interval),
        format_duration(interval * run.len() as u32),
        format_instant_ns(m.start_realtime_ns),
        if m.complete { "" } else { " (interrupted)" }
    )?;
    writeln!(
        out,
        "{:<22} {:>16} {:>14}",
        "metric", "total", "peak bucket"
    )?;
    for metric in Metric::ALL {
        let s = run.get(metric);
        writeln!(
            out,
            "{:<22} {:>16} {:>14}",
            metric.label(),
            run.total(metric),
            s.iter().max().copied().unwrap_or(0)
        )?;
    }
    let peak = run.connections.iter().max().copied().unwrap_or(0);
    writeln!(out, "{:<22} {:>16} {:>14}", "connections (est.)", "", peak)?;
    match &m.cost {
        Some(c) => writeln!(out, "cost: {}", c.line())?,
        None => writeln!(
            out,
            "cost: not recorded (a run made before the sampler kept it)"
        )?,
    }
    for (label, s) in [
        ("in bytes", run.get(Metric::InBytes)),
        ("out bytes", run.get(Metric::OutBytes)),
        ("connections", &run.connections[..]),
    ] {
        writeln!(out, "{label:<12}|{}|", plot::sparkline(s, 100))?;
    }
    Ok(())
}

fn plot_cmd(a: PlotArgs) -> anyhow::Result<ExitCode> {
    let run = load(&a.run, a.store.as_deref())?;
    let text = match a.output.extension().and_then(|e| e.to_str()) {
        Some("svg") => plot::run_svg(&run),
        Some("html" | "htm") => plot::run_html(&run),
        _ => bail!("-o {}: give a .svg or .html file", a.output.display()),
    };
    std::fs::write(&a.output, text).with_context(|| format!("writing {}", a.output.display()))?;
    eprintln!("magnet: wrote {}", a.output.display());
    Ok(ExitCode::SUCCESS)
}

fn merge_cmd(a: MergeArgs) -> anyhow::Result<ExitCode> {
    // A file that is not a run (e.g. a data-set file without ingressBytes)
    // is reported and left out; the others are still merged.
    let mut runs = Vec::new();
    let mut names = Vec::new();
    for p in &a.runs {
        match Run::load(p) {
            Ok(r) => {
                runs.push(r);
                names.push(p.display().to_string());
            }
            Err(e) => eprintln!("magnet: skipped {e}"),
        }
    }
    if runs.is_empty() {
        bail!("none of the {} files is a run", a.runs.len());
    }
    let merged = merge(runs, &names)?;
    let text = match a.output.extension().and_then(|e| e.to_str()) {
        Some("svg") => plot::merged_svg(&merged),
        Some("html" | "htm") => plot::merged_html(&merged),
        Some("json") => serde_json::to_string(&merged.to_json())? + "\n",
        _ => bail!(
            "-o {}: give a .html, .svg or .json file",
            a.output.display()
        ),
    };
    std::fs::write(&a.output, text).with_context(|| format!("writing {}", a.output.display()))?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:<30} {:>8} {:>10} {:>14} {:>14}",
        "host", "offset", "skew_ns", "in bytes", "out bytes"
    )?;
    for h in &merged.hosts {
        writeln!(
            out,
            "{:<30} {:>8} {:>10} {:>14} {:>14}",
            h.name,
            h.offset,
            h.residual_ns,
            h.run.total(Metric::InBytes),
            h.run.total(Metric::OutBytes)
        )?;
    }
    eprintln!("magnet: wrote {}", a.output.display());
    Ok(ExitCode::SUCCESS)
}

/// `magnet sample --check`: the hook of each part of a run on this kernel.
fn check(a: &RunArgs) -> anyhow::Result<ExitCode> {
    let attach = if a.clsact {
        magnet_sample::AttachMode::Clsact
    } else {
        magnet_sample::AttachMode::Auto
    };
    let rows = magnet_sample::sampler::check(attach)?.check_rows();
    super::print_check(super::json_out::SAMPLE_CHECK, rows, a.json)
}
