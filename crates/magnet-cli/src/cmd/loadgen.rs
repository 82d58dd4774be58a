//! `magnet loadgen`: a workload whose truth is known, to trace (`magnet record --
//! magnet loadgen …`) and for the demo. Prints one JSON summary line on stdout.

use std::io::Write;
use std::net::Ipv4Addr;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::Args;
use magnet_loadgen::{parse_duration, Calls, LoadSpec, Peer};

const EXAMPLES: &str = "\
Examples:
  magnet loadgen --tcp 100x1000
      100 send() calls of 1000 bytes over loopback TCP
  magnet loadgen --tcp 100x1000 --udp 50x200 --port 7000
      then 50 sendto() calls of 200 bytes, both to port 7000
  magnet loadgen --tcp 50x10k --interval 20ms
      10 KiB every 20 ms
  magnet loadgen --netns blue --peer-addr 10.200.1.2 --tcp 10x64k
      receiver thread inside network namespace `blue`, sender here
  magnet loadgen --udp 1000000x16 --flood
      as many small datagrams as fast as possible (ring-buffer overflow tests)

The summary (pid, per protocol: calls, bytes_sent, bytes_received, recv_calls,
local/remote address, thread ids, elapsed_us) is one JSON line on stdout.
Exit status: 0 when every datagram arrived (or --flood), 1 when UDP lost some,
2 on error (a short send is an error: the counts must stay exact).";

/// Generate traffic with exact, known counts.
#[derive(Args, Debug)]
#[command(after_help = EXAMPLES)]
pub struct LoadgenArgs {
    /// TCP: N send() calls of SIZE bytes on one connection (NxSIZE; k, m suffixes).
    #[arg(long, value_name = "NxSIZE", value_parser = parse_calls)]
    tcp: Option<Calls>,

    /// UDP: N sendto() calls of SIZE bytes (NxSIZE; k, m suffixes).
    #[arg(long, value_name = "NxSIZE", value_parser = parse_calls)]
    udp: Option<Calls>,

    /// Run the receiver in this network namespace (a name under /run/netns or a
    /// path such as /proc/PID/ns/net); the sender stays in the current one.
    #[arg(long, value_name = "NAME", requires = "peer_addr")]
    netns: Option<String>,

    /// Receiver address inside --netns.
    #[arg(long, value_name = "ADDR", requires = "netns")]
    peer_addr: Option<Ipv4Addr>,

    /// Receiver port for TCP and UDP; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    port: u16,

    /// Pause between calls (e.g. 20ms, 1s), on a fixed schedule.
    #[arg(long, value_name = "DURATION", value_parser = parse_dur)]
    interval: Option<std::time::Duration>,

    /// Stop sending after this long; the summary says how many calls were made.
    #[arg(long, value_name = "DURATION", value_parser = parse_dur)]
    duration: Option<std::time::Duration>,

    /// UDP as fast as possible; losses and failed sendto()s are counted, not fatal.
    #[arg(long, requires = "udp")]
    flood: bool,

    /// How long the UDP receiver waits for missing datagrams after the sender is done.
    #[arg(long, value_name = "DURATION", value_parser = parse_dur, default_value = "1s")]
    drain_timeout: std::time::Duration,
}

fn parse_calls(s: &str) -> Result<Calls, String> {
    s.parse().map_err(|e: magnet_loadgen::Error| e.to_string())
}

fn parse_dur(s: &str) -> Result<std::time::Duration, String> {
    parse_duration(s).map_err(|e| e.to_string())
}

pub fn run(args: LoadgenArgs) -> anyhow::Result<ExitCode> {
    if args.tcp.is_none() && args.udp.is_none() {
        bail!("nothing to send: give --tcp NxSIZE, --udp NxSIZE or both");
    }
    let peer = match (args.netns, args.peer_addr) {
        (Some(netns), Some(addr)) => Peer::Netns { netns, addr },
        _ => Peer::Loopback,
    };
    let spec = LoadSpec {
        tcp: args.tcp,
        udp: args.udp,
        peer,
        port: args.port,
        interval: args.interval,
        duration: args.duration,
        flood: args.flood,
        drain_timeout: args.drain_timeout,
    };
    let summary = magnet_loadgen::run(&spec).context("loadgen")?;
    let line = serde_json::to_string(&summary)?;
    writeln!(std::io::stdout().lock(), "{line}")?;
    let lost = summary
        .udp
        .as_ref()
        .is_some_and(|u| !spec.flood && u.datagrams_received < u.calls);
    Ok(if lost {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
