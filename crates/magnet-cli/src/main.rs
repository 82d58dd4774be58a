//! `magnet`: the command-line front end. Each subcommand lives in `cmd/` and only
//! turns arguments into library calls; the libraries never print or exit.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cmd;

/// magnet shows what an application asked of the network and what every layer of the
/// Linux stack (socket, TCP, IP, qdisc, device, wire) made of it.
#[derive(Parser)]
#[command(name = "magnet", version, about, long_about = None, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Record a built-in loopback workload and show what each layer did (start here).
    Demo(cmd::demo::DemoArgs),
    /// Record what applications ask of the network and what each layer makes of it.
    Record(cmd::record::RecordArgs),
    /// Summarise a trace: host, kernel, duration, events per kind and layer, losses.
    Info(cmd::info::InfoArgs),
    /// Print a trace one event per line, in time order (or as JSON lines).
    Parse(cmd::parse::ParseArgs),
    /// Per-connection table and how each layer modulated the traffic (MAGNeT's Table III).
    Analyze(cmd::analyze::AnalyzeArgs),
    /// One self-contained HTML page with the analysis in numbers and plots.
    Report(cmd::report::ReportArgs),
    /// Write a trace as Perfetto JSON, Parquet, CSV or JSON lines (one row per event).
    Export(cmd::export::ExportArgs),
    /// Decode ONC-RPC/NFS calls and replies from a capture or interface (rpcspy).
    Rpc(cmd::rpc::RpcArgs),
    /// Reconstruct NFS file sessions and statistics from a capture (nfstrace).
    Nfs(cmd::nfs::NfsArgs),
    /// Write a trace as pcapng: a frame per packet per device, each with a filterable comment.
    Pcap(cmd::pcap::PcapArgs),
    /// Match each frame of any capture to the kernel's packet; clock offset and drift.
    Match(cmd::matching::MatchArgs),
    /// Generate traffic with exact, known counts (the workload tests and the demo trace).
    Loadgen(cmd::loadgen::LoadgenArgs),
    /// The kernel functions that handle packets (by type, from BTF or source) and which can be probed.
    Funcs(cmd::funcs::FuncsArgs),
    /// Each packet's path through layers and functions, with times; TCP handshake table.
    Packets(cmd::packets::PacketsArgs),
    /// Sample an interface at 100 us / 1 ms / 10 ms: bytes, ECN, retransmits, connections (Millisampler).
    Sample(cmd::sample::SampleArgs),
    /// Run magnetd: always-on per-connection summaries, Unix-socket API, OpenMetrics /metrics.
    Daemon(cmd::daemon::DaemonArgs),
    /// Write magnetd's flight recorder (the last seconds of full events) as trace files.
    Dump(cmd::dump::DumpArgs),
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Demo(args) => cmd::demo::run(args),
        Command::Record(args) => cmd::record::run(args),
        Command::Info(args) => cmd::info::run(args),
        Command::Parse(args) => cmd::parse::run(args),
        Command::Analyze(args) => cmd::analyze::run(args),
        Command::Report(args) => cmd::report::run(args),
        Command::Export(args) => cmd::export::run(args),
        Command::Rpc(args) => cmd::rpc::run(args),
        Command::Nfs(args) => cmd::nfs::run(args),
        Command::Pcap(args) => cmd::pcap::run(args),
        Command::Match(args) => cmd::matching::run(args),
        Command::Loadgen(args) => cmd::loadgen::run(args),
        Command::Sample(args) => cmd::sample::run(args),
        Command::Funcs(args) => cmd::funcs::run(args),
        Command::Packets(args) => cmd::packets::run(args),
        Command::Daemon(args) => cmd::daemon::run(args),
        Command::Dump(args) => cmd::dump::run(args),
    }
}

impl Command {
    /// Commands that only read a file and print: a reader that stops early
    /// (`magnet info run.mgt | head`) ends them quietly, as it ends grep or cat.
    /// Recorders, the sampler and the daemon keep Rust's ignored SIGPIPE, so a
    /// vanished consumer or client is an error they handle, never a silent kill.
    fn ends_on_closed_pipe(&self) -> bool {
        matches!(
            self,
            Command::Info(_)
                | Command::Parse(_)
                | Command::Analyze(_)
                | Command::Export(_)
                | Command::Rpc(_)
                | Command::Nfs(_)
                | Command::Match(_)
                | Command::Funcs(_)
                | Command::Packets(_)
        )
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // A value out of its range or not of its kind: one line, exit 2
        // (docs/exit-codes.md); usage errors keep clap's help.
        Err(e)
            if matches!(
                e.kind(),
                clap::error::ErrorKind::ValueValidation | clap::error::ErrorKind::InvalidValue
            ) =>
        {
            let text = e.to_string();
            let first = text.lines().next().unwrap_or("bad argument");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            eprintln!("magnet: error: {}", magnet_common::text::escape(first));
            return ExitCode::from(magnet_common::exit::ERROR);
        }
        Err(e) => e.exit(),
    };
    if cli.command.ends_on_closed_pipe() {
        // SAFETY: restoring the default disposition of one signal before any
        // thread is started; no handler runs Rust code.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            // A closed pipe (`magnet parse … | head`) is not an error worth reporting.
            if let Some(io) = err.downcast_ref::<std::io::Error>() {
                if io.kind() == std::io::ErrorKind::BrokenPipe {
                    return ExitCode::SUCCESS;
                }
            }
            // Errors may quote names from a trace or capture: escaped.
            eprintln!(
                "magnet: error: {}",
                magnet_common::text::escape(&one_line(&err))
            );
            ExitCode::from(2)
        }
    }
}

/// The error and its causes on one line, `a: b: c`, each cause once: many
/// errors already print their source in their own message.
fn one_line(err: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in err.chain() {
        let c = cause.to_string();
        if out.ends_with(&c) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&c);
    }
    out
}
