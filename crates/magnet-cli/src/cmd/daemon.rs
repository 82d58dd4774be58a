//! `magnet daemon` (magnetd): always-on per-connection summaries, served on a
//! Unix socket (JSON lines) and HTTP on localhost (OpenMetrics `/metrics`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use magnet_daemon::{Config, Control};

const EXAMPLES: &str = "\
Examples:
  magnet daemon                                   HTTP on 127.0.0.1:9595, socket /run/magnet/magnetd.sock
  magnet daemon --config /etc/magnet/magnetd.toml
  magnet daemon --http 127.0.0.1:9100 --socket /tmp/magnetd.sock
  curl -s 127.0.0.1:9595/metrics
  kill -HUP $(pidof magnet)                        re-read the config file
  magnet daemon --check                           the hook of every part on this kernel

Needs root. Keeps one summary per connection in the kernel (no event stream);
SIGINT/SIGTERM detach every hook and exit 0. See docs/daemon.md.

TCP's wire counters (bytes, segments, retransmits, srtt, cwnd, send buffer) are
the kernel's own per-socket counters, read when asked: the numbers `ss -ti`
shows. The per-packet programs for the app->wire / wire->app latency
histograms run only in windows by default (`packet_hooks = \"sampled\"`, 100 ms
of every 2 s: the histograms are samples, the answers say what fraction of
time they cover); `packet_hooks = \"always\"` keeps them on every packet (and
adds host and non-TCP wire counts and the stall trigger); `\"off\"` never
attaches them.";

/// Run magnetd: per-connection summaries in the kernel, served over a Unix socket and HTTP.
#[derive(Args, Debug)]
#[command(after_help = EXAMPLES)]
pub struct DaemonArgs {
    /// TOML config file (default: /etc/magnet/magnetd.toml if it exists).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Listen for HTTP here (overrides the config; "" turns it off).
    #[arg(long, value_name = "ADDR:PORT")]
    http: Option<String>,
    /// Unix socket for the query API (overrides the config; "" turns it off).
    // (a String: clap refuses an empty PathBuf, and "" is how to say off)
    #[arg(long, value_name = "PATH")]
    socket: Option<String>,
    /// Print the hook that feeds each part of magnetd on this kernel (with
    /// the config's packet_hooks and app_calls), or why a part is left out,
    /// and exit: the programs are loaded, nothing is attached.
    #[arg(long)]
    check: bool,
    /// With --check: JSON (schema magnet.daemon.check/1).
    #[arg(long, requires = "check")]
    json: bool,
}

const DEFAULT_CONFIG: &str = "/etc/magnet/magnetd.toml";

pub fn run(a: DaemonArgs) -> anyhow::Result<ExitCode> {
    if let Some(line) = magnet_kernel::tracefs::mount_if_missing() {
        eprintln!("magnetd: {line}");
    }
    let path = a.config.clone().or_else(|| {
        let p = PathBuf::from(DEFAULT_CONFIG);
        p.exists().then_some(p)
    });
    let mut config = match &path {
        Some(p) => Config::load(p)?,
        None => Config::default(),
    };
    if let Some(h) = &a.http {
        config.http = if h.is_empty() {
            None
        } else {
            Some(
                h.parse()
                    .with_context(|| format!("--http {h}: not an address:port"))?,
            )
        };
    }
    if let Some(s) = &a.socket {
        config.socket = (!s.is_empty()).then(|| PathBuf::from(s));
    }
    if a.check {
        return check(&config, a.json);
    }
    let stop = magnet_common::stop::Stop::install()?;
    let control = Control {
        stop: stop.flag(),
        reload: magnet_common::stop::Stop::reload_flag()?,
    };
    magnet_daemon::run(
        config,
        path,
        &control,
        Box::new(|m| eprintln!("magnetd: {m}")),
        &mut || eprintln!("magnetd: ready"),
    )?;
    // A daemon asked to stop has done its work: 0 (docs/exit-codes.md).
    eprintln!("magnetd: stopped");
    Ok(ExitCode::from(magnet_common::exit::OK))
}

/// `magnet daemon --check`: what feeds each part of magnetd on this kernel.
fn check(config: &Config, json: bool) -> anyhow::Result<ExitCode> {
    // The verifier's log of any program this kernel refuses, on stderr.
    magnet_host::libbpf_log::show(1);
    let plan = magnet_daemon::summaries::check(config.packet_hooks, config.app_calls)?;
    super::print_check(super::json_out::DAEMON_CHECK, plan.check_rows(), json)
}
