//! `magnet rpc`: rpcspy — one line per ONC-RPC call/reply pair, from a capture file or
//! a live interface.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;

use anyhow::{bail, Context};
use clap::Args;
use magnet_rpc::capture::CaptureReader;
use magnet_rpc::live::{Filter, Live};
use magnet_rpc::{format, Counters, Decoder, Limits, Transaction};

const RPC_EXAMPLES: &str = "\
Output (rpcspy's format; timestamp = when the reply was seen, execution time in µs):
  timestamp | exec-µs | server | client.uid | command | arguments | reply-data
  1763776612.417343 | 412 | 10.211.0.1 | 10.211.0.2.0 | read | {\"01000701…\", 0, 4096} | ok, 4096, eof

Examples:
  magnet rpc -r capture.pcapng                 rpcspy lines, one per call/reply pair
  magnet rpc -r cap.pcap -c                    concise: no arguments or reply data
  magnet rpc -r cap.pcap --json                JSON lines with every decoded field
  magnet rpc -r cap.pcap 'host 10.0.0.1'       only packets matching a pcap-filter
  magnet rpc -i eth0 'port 2049'               live, with a pcap-filter expression
  magnet rpc -i eth0 --count 10000             stop after 10000 packets

RPC is recognised by its content, not by port, so traffic on any port (and
clients using privileged ports) is decoded. At the end, a summary of what was
decoded and what was skipped (cut packets, TCP gaps, orphan replies, unanswered
calls) goes to standard error. Note: -c means concise, as in rpcspy; the packet
count is --count.";

/// Decode ONC-RPC calls and replies (NFSv3/v4, MOUNT, portmap, NLM, …) from a capture
/// or a live interface, and print one rpcspy-style record per call/reply pair.
#[derive(Args, Debug)]
#[command(after_long_help = RPC_EXAMPLES)]
pub struct RpcArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// Concise: drop arguments and reply data (rpcspy's -c; -c is --count, as in tcpdump).
    #[arg(long)]
    pub concise: bool,
    /// JSON lines with every decoded field instead of rpcspy lines.
    #[arg(long)]
    pub json: bool,
}

/// Where packets come from; shared by `magnet rpc` and `magnet nfs`.
#[derive(Args, Debug, Clone)]
pub struct InputArgs {
    /// Read packets from a pcap or pcapng file ('-' for standard input).
    #[arg(
        short = 'r',
        long = "read",
        value_name = "FILE",
        required_unless_present = "interface"
    )]
    pub read: Option<PathBuf>,
    /// Capture live from this interface (needs CAP_NET_RAW).
    #[arg(short = 'i', long, value_name = "IFACE", conflicts_with = "read")]
    pub interface: Option<String>,
    /// Stop after this many packets.
    #[arg(short = 'c', long, value_name = "N")]
    pub count: Option<u64>,
    /// How long to wait for a reply before reporting a call as unanswered (e.g. 5s, 500ms).
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = magnet_common::units::parse_duration)]
    pub reply_timeout: std::time::Duration,
    /// Do not print the decode summary to standard error.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// pcap-filter expression (as in tcpdump), e.g. 'host 10.0.0.1 and tcp'.
    #[arg(value_name = "EXPRESSION", trailing_var_arg = true)]
    pub filter: Vec<String>,
}

/// Runs the decoder over the input, handing each transaction to `on_tx`. Returns the
/// counters and, if the capture file ended in error, that error's text.
pub fn drive(
    input: &InputArgs,
    on_tx: &mut dyn FnMut(Transaction) -> anyhow::Result<()>,
) -> anyhow::Result<(Counters, Option<String>)> {
    let mut lim = Limits::default();
    if input.reply_timeout.is_zero() {
        bail!("--reply-timeout must be positive");
    }
    lim.reply_timeout_ns = i64::try_from(input.reply_timeout.as_nanos()).unwrap_or(i64::MAX);
    let mut dec = Decoder::new(lim);
    let expr = input.filter.join(" ");
    let expr = (!expr.trim().is_empty()).then_some(expr);
    let mut err: Option<anyhow::Error> = None;
    let mut emit = |t: Transaction, err: &mut Option<anyhow::Error>| {
        if err.is_none() {
            if let Err(e) = on_tx(t) {
                *err = Some(e);
            }
        }
    };
    let mut cut = None;
    let max = input.count.unwrap_or(u64::MAX);
    let mut n = 0u64;
    if let Some(iface) = &input.interface {
        let stop = magnet_common::stop::Stop::install()?.flag();
        let mut live = Live::open(iface, expr.as_deref(), 262144)?;
        let lt = live.linktype();
        while n < max && !stop.load(Ordering::SeqCst) && err.is_none() {
            match live.next_packet()? {
                Some((ts, data)) => {
                    n += 1;
                    dec.packet(ts, lt, data, &mut |t| emit(t, &mut err));
                }
                None => continue,
            }
        }
        let st = live.stats();
        if st.dropped > 0 || st.if_dropped > 0 {
            cut = Some(format!(
                "capture dropped {} packets (kernel) and {} (interface)",
                st.dropped, st.if_dropped
            ));
        }
    } else {
        let path = input.read.clone().unwrap_or_default();
        let mut rd: CaptureReader<Box<dyn std::io::Read>> = if path.as_os_str() == "-" {
            // The reader keeps its own 1 MiB buffer: no BufReader in between.
            let rd: Box<dyn std::io::Read> = Box::new(std::io::stdin());
            CaptureReader::new(rd, &path)?
        } else {
            let f = std::fs::File::open(&path)
                .with_context(|| format!("cannot open {}", path.display()))?;
            let rd: Box<dyn std::io::Read> = Box::new(f);
            CaptureReader::new(rd, &path)?
        };
        let mut filters: HashMap<u32, Filter> = HashMap::new();
        while n < max && err.is_none() {
            let p = match rd.next_packet() {
                None => break,
                Some(Ok(p)) => p,
                Some(Err(e)) => {
                    cut = Some(e.to_string());
                    break;
                }
            };
            n += 1;
            if let Some(expr) = &expr {
                let f = match filters.entry(p.linktype) {
                    std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
                    std::collections::hash_map::Entry::Vacant(v) => {
                        v.insert(Filter::compile(p.linktype, expr)?)
                    }
                };
                if !f.matches(p.data) {
                    continue;
                }
            }
            dec.packet(p.ts_ns, p.linktype, p.data, &mut |t| emit(t, &mut err));
        }
    }
    if err.is_none() {
        dec.finish(&mut |t| emit(t, &mut err));
    }
    if let Some(e) = err {
        return Err(e);
    }
    Ok((dec.counters().clone(), cut))
}

/// The end-of-run summary for standard error.
pub fn summary(c: &Counters, cut: &Option<String>) -> String {
    let mut s = format!(
        "magnet: {} packets, {} RPC calls, {} replies, {} transactions ({} retransmitted calls)",
        c.packets, c.rpc_calls, c.rpc_replies, c.transactions, c.rpc_retransmitted_calls
    );
    let d = c.dropped();
    if !d.is_empty() {
        s.push_str("\nmagnet: not decoded:");
        for (k, v) in d {
            s.push_str(&format!(" {k}={v}"));
        }
    }
    if let Some(lt) = c.link_type_not_decoded {
        s.push_str(&format!(
            "\nmagnet: warning: {} frames of link type {lt} not decoded (magnet reads Ethernet, Linux cooked, raw IP and loopback captures)",
            c.link_not_decoded
        ));
    }
    if let Some(e) = cut {
        s.push_str(&format!(
            "\nmagnet: warning: {}",
            magnet_common::text::escape(e)
        ));
    }
    s
}

/// The exit code of `rpc` and `nfs`: 1 when the capture was cut or frames
/// went undecoded for their link type (docs/exit-codes.md).
pub fn code(c: &Counters, cut: &Option<String>) -> ExitCode {
    if cut.is_some() || c.link_not_decoded > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

pub fn run(args: RpcArgs) -> anyhow::Result<ExitCode> {
    let stdout = std::io::stdout();
    // Paths and host names from the capture: escaped in text (docs/exit-codes.md).
    let mut out = magnet_common::text::Escaping::when(
        !args.json,
        std::io::BufWriter::with_capacity(1 << 16, stdout.lock()),
    );
    let live = args.input.interface.is_some();
    let (c, cut) = drive(&args.input, &mut |t| {
        let line = if args.json {
            super::json_out::tag_string(format::json_line(&t), super::json_out::RPC)
        } else {
            format::rpcspy_line(&t, args.concise)
        };
        out.write_all(line.as_bytes())?;
        out.write_all(b"\n")?;
        if live {
            out.flush()?;
        }
        Ok(())
    })?;
    out.flush()?;
    if !args.input.quiet {
        eprintln!("{}", summary(&c, &cut));
    }
    Ok(code(&c, &cut))
}
