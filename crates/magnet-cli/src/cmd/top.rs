//! `magnet top`: magnetd's connections, live, one line each (or per process,
//! command or cgroup), like top or `ss -ti`: each layer's rate, segments per
//! call, retransmissions and the latency quantiles of magnetd's histograms.
//! The view itself (rates, grouping, sorting, the table) is magnet-top's.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use magnet_top::{Filter, Group, SortKey, View};

const AFTER_HELP: &str = "\
Reads magnetd (`magnet daemon`) through its Unix socket every interval and shows
what changed: app bytes and calls per second each way, wire segments per second,
segments per send/recv call (SEG/TC, SEG/RC), retransmissions, and p50/p99 of
magnetd's app-to-wire (A>W) and wire-to-app (W>A) latency histograms: log2
buckets, so a quantile is its bucket's upper bound. On a terminal the screen is
redrawn until Ctrl-C; piped, or with --batch, each update is printed after the last.

--view layers: the live layer table instead: per layer (APP calls, TCP data
segments, IP packets) and direction, bytes and units per second, and each
layer's units per app call (/CALL: how TCP and IP split or merged the calls).
--view stages: the send path in stages from the kernel's TX timestamp callbacks
(Linux 6.15+, connections made after magnetd started, one call in
send_stages_every): p99 of call start to the qdisc (Q), qdisc to the driver
(DEV), driver to the ACK (ACK), p50/p99 of the whole (S>A); METHOD says how
each connection's send path is timed (tx_timestamps, sampled, off). Then the
receive path of a sample of data packets (RX PKTS): p99 of the kernel's receive
stamp to TCP queueing it (D>Q), queued to the read that returned it (Q>R), and
p50/p99 of the whole (D>R).

Examples:
  magnet top                          every connection, busiest first
  magnet top --by comm --interval 5s  per command, every 5 s
  magnet top -p 1234 --port 443       that process's connections on port 443
  magnet top --view layers --port 80  the layer table of port 80's connections
  magnet top --view stages --by comm  where each command's sends wait
  magnet top -c 3 --json              three JSON documents, one per line";

/// Watch magnetd's connections live: rates per layer, segments per call, latency.
#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct TopArgs {
    /// Time between two updates: 2s, 500ms, …
    #[arg(long, value_name = "DURATION", value_parser = magnet_common::units::parse_duration, default_value = "2s")]
    interval: Duration,
    /// Stop after this many updates (default: until Ctrl-C).
    #[arg(short = 'c', long, value_name = "N")]
    count: Option<u64>,
    /// Batch mode: print each update after the last, never redraw the screen.
    #[arg(long)]
    batch: bool,
    /// One line per connection, process, command or cgroup.
    #[arg(long = "by", value_enum, default_value_t = Group::Connection)]
    by: Group,
    /// Columns: main (app rates, segments per call, sampled latency), layers
    /// (each layer's rates and units per call) or stages (the send path).
    #[arg(long, value_enum, default_value_t = View::Main)]
    view: View,
    /// The column to sort by, largest first.
    #[arg(long, value_enum, default_value_t = SortKey::Rate)]
    sort: SortKey,
    /// Only this process's connections (repeat for more).
    #[arg(short = 'p', long = "pid", value_name = "PID")]
    pids: Vec<u32>,
    /// Only connections whose last caller had this command name (repeat for more).
    #[arg(long, value_name = "NAME")]
    comm: Vec<String>,
    /// Only connections with this port at either end.
    #[arg(long, value_name = "PORT")]
    port: Option<u16>,
    /// Only connections with this address at either end.
    #[arg(long, value_name = "ADDR")]
    host: Option<std::net::IpAddr>,
    /// Only connections of this cgroup v2 id.
    #[arg(long, value_name = "ID")]
    cgroup: Option<u64>,
    /// Keep closed connections (magnetd keeps them a while).
    #[arg(long)]
    closed: bool,
    /// At most this many lines (0: all; default on a terminal: its height).
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// One JSON document per update (schema magnet.top/1), one per line.
    #[arg(long)]
    json: bool,
    /// magnetd's Unix socket.
    #[arg(long, value_name = "PATH", default_value = magnet_client::DEFAULT_SOCKET)]
    socket: PathBuf,
}

#[derive(serde::Serialize)]
struct Update<'a> {
    schema: &'static str,
    unix_time_ns: u64,
    interval_s: f64,
    latency_mode: String,
    /// What the stage columns sample: "always" or "sampled N%".
    stage_mode: String,
    rows: &'a [magnet_top::Row],
}

fn or_dash(s: String) -> String {
    if s.is_empty() {
        "-".into()
    } else {
        s
    }
}

fn terminal_size() -> (usize, usize) {
    // SAFETY: TIOCGWINSZ fills a winsize; on failure it is left zeroed.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) } == 0;
    if ok && ws.ws_col > 0 {
        (ws.ws_col as usize, ws.ws_row as usize)
    } else {
        (0, 0)
    }
}

pub fn run(a: TopArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(
        a.interval >= Duration::from_millis(100),
        "--interval {}: give at least 100ms",
        magnet_common::units::format_duration(a.interval)
    );
    let (group, sort) = (a.by, a.sort);
    let filter = Filter {
        pids: a.pids.clone(),
        comms: a.comm.clone(),
        port: a.port,
        host: a.host.map(|h| h.to_string()),
        cgroup: a.cgroup,
        closed: a.closed,
    };
    let live = std::io::stdout().is_terminal() && !a.batch && !a.json;
    let stop = magnet_common::stop::Stop::install()?;
    let mut client = magnet_client::Client::connect(&a.socket)?;
    let mut before = client
        .connections()
        .context("asking magnetd for its connections")?;
    let mut t0 = Instant::now();
    let mut out = std::io::stdout().lock();
    let mut done = 0u64;
    while a.count.is_none_or(|n| done < n) {
        // Sleep in slices so that Ctrl-C ends the wait at once.
        let until = t0 + a.interval;
        while Instant::now() < until && !stop.requested() {
            std::thread::sleep(
                Duration::from_millis(50).min(until.saturating_duration_since(Instant::now())),
            );
        }
        if stop.requested() {
            break;
        }
        let now = client
            .connections()
            .context("asking magnetd for its connections")?;
        let t1 = Instant::now();
        let secs = (t1 - t0).as_secs_f64();
        let (width, height) = if live { terminal_size() } else { (0, 0) };
        let limit = a
            .limit
            .unwrap_or(if live { height.saturating_sub(3) } else { 0 });
        let rows = magnet_top::rows(&before, &now, secs, group, &filter, sort, limit);
        if a.json {
            let u = Update {
                schema: "magnet.top/1",
                unix_time_ns: magnet_common::units::now_ns(),
                interval_s: secs,
                latency_mode: magnet_top::latency_mode(&now),
                stage_mode: magnet_top::stage_mode(&now),
                rows: &rows,
            };
            writeln!(out, "{}", serde_json::to_string(&u)?)?;
        } else {
            if live {
                write!(out, "\x1b[H\x1b[2J")?;
            }
            writeln!(
                out,
                "magnet top: {} of {} connections, {:.1} s interval, latency {}, stages {}",
                rows.len(),
                now.len(),
                secs,
                or_dash(magnet_top::latency_mode(&now)),
                or_dash(magnet_top::stage_mode(&now)),
            )?;
            write!(out, "{}", magnet_top::render(&rows, group, a.view, width))?;
            if !live {
                writeln!(out)?;
            }
        }
        out.flush()?;
        before = now;
        t0 = t1;
        done += 1;
    }
    Ok(ExitCode::SUCCESS)
}
