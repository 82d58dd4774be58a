//! `magnet`: the command-line front end. Each subcommand lives in `cmd/` and only
//! turns arguments into library calls; the libraries never print or exit.

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

mod cmd;

/// magnet shows what an application asked of the network and what every layer of the
/// Linux stack (socket, TCP, IP, qdisc, device, wire) made of it.
#[derive(Parser)]
#[command(name = "magnet", version = env!("MAGNET_VERSION"), about, long_about = None, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Show what libbpf says while magnet loads and attaches its programs: -v its
    /// warnings and the verifier's log of a refused program, -vv its progress too.
    /// Without it magnet says in one line of its own what was refused and what
    /// takes its place (LIBBPF_DEBUG=1 shows libbpf's every message).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
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
    /// Watch magnetd's connections live: rates per layer, segments per call, latency.
    Top(cmd::top::TopArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(cmd::completions::CompletionsArgs),
    /// Print the man page (roff) of magnet and its subcommands.
    Man(cmd::completions::ManArgs),
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
        Command::Top(args) => cmd::top::run(args),
        Command::Completions(args) => cmd::completions::completions(args, Cli::command()),
        Command::Man(args) => cmd::completions::man(args, Cli::command()),
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
                | Command::Pcap(_)
                | Command::Report(_)
        )
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(&e),
    };
    // libbpf's messages go through magnet's own, never raw to the terminal.
    magnet_host::libbpf_log::install();
    magnet_host::libbpf_log::show(cli.verbose);
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

/// clap's verdict on the arguments: help and --version as clap prints them (exit
/// 0); anything else one `magnet: error:` line, exit 2 (docs/exit-codes.md).
fn usage_error(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    eprintln!(
        "magnet: error: {}",
        magnet_common::text::escape(&clap_one_line(e))
    );
    ExitCode::from(2)
}

/// clap's several-line message as one line: the error, its tip, and where the
/// usage is explained.
fn clap_one_line(e: &clap::Error) -> String {
    use clap::error::ErrorKind;
    let text = e.render().to_string();
    let usage = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Usage: "))
        .unwrap_or("magnet");
    // The command path: the usage's words before its first option or argument.
    let path: Vec<&str> = usage
        .split_whitespace()
        .take_while(|w| !w.starts_with(['[', '<', '-']))
        .collect();
    let path = if path.is_empty() {
        "magnet".to_string()
    } else {
        path.join(" ")
    };
    let mut line = match e.kind() {
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand | ErrorKind::MissingSubcommand => {
            "a subcommand is required".to_string()
        }
        _ => text
            .lines()
            .find_map(|l| l.strip_prefix("error: "))
            .unwrap_or("bad arguments")
            .trim()
            .to_string(),
    };
    if let Some(tip) = text.lines().find_map(|l| l.trim().strip_prefix("tip: ")) {
        line.push_str("; ");
        line.push_str(tip.trim());
    }
    line.push_str(&format!(" (see '{path} --help')"));
    line
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

#[cfg(test)]
mod grammar {
    //! One grammar for every subcommand, so that what works in one works in all: a short flag means one
    //! thing wherever it appears, durations take one syntax, and the documented
    //! spellings parse.
    use super::Cli;
    use clap::{CommandFactory, Parser};
    use std::collections::BTreeMap;

    /// The meaning of each short flag: its long name (tcpdump's where users know it).
    const SHORTS: &[(char, &str)] = &[
        ('c', "count"),
        ('d', "duration"),
        ('f', "filter"),
        ('i', "interface"),
        ('o', "output"),
        ('p', "pid"),
        ('q', "quiet"),
        ('r', "read"),
        ('T', "format"),
        ('v', "verbose"),
    ];

    fn walk(cmd: &clap::Command, path: &str, f: &mut dyn FnMut(&str, &clap::Arg)) {
        for a in cmd.get_arguments() {
            f(path, a);
        }
        for s in cmd.get_subcommands() {
            walk(s, &format!("{path} {}", s.get_name()), f);
        }
    }

    #[test]
    fn clap_accepts_the_definitions() {
        Cli::command().debug_assert();
    }

    #[test]
    fn each_short_flag_has_one_meaning() {
        let want: BTreeMap<char, &str> = SHORTS.iter().copied().collect();
        let mut seen: BTreeMap<char, Vec<String>> = BTreeMap::new();
        walk(&Cli::command(), "magnet", &mut |path, a| {
            let Some(s) = a.get_short() else { return };
            if s == 'h' || s == 'V' {
                return;
            }
            let long = a.get_long().unwrap_or("");
            assert_eq!(
                want.get(&s).copied(),
                Some(long),
                "{path}: -{s} is --{long}; -{s} means --{} everywhere",
                want.get(&s)
                    .copied()
                    .unwrap_or("(nothing: add it to SHORTS)")
            );
            seen.entry(s).or_default().push(path.to_string());
        });
        // The tcpdump meanings are where tcpdump users look for them.
        for (s, cmds) in [
            (
                'r',
                &[
                    "info", "parse", "analyze", "report", "export", "pcap", "packets", "rpc", "nfs",
                ][..],
            ),
            ('c', &["parse", "rpc", "nfs"][..]),
            ('i', &["pcap", "rpc", "nfs", "sample"][..]),
            ('o', &["record", "pcap", "report", "export"][..]),
        ] {
            for c in cmds {
                assert!(
                    seen[&s].iter().any(|p| p == &format!("magnet {c}")),
                    "magnet {c} has no -{s}"
                );
            }
        }
    }

    #[test]
    fn durations_take_one_syntax() {
        walk(&Cli::command(), "magnet", &mut |path, a| {
            let names: Vec<&str> = a
                .get_value_names()
                .map(|v| v.iter().map(|s| s.as_str()).collect())
                .unwrap_or_default();
            assert!(
                !names.iter().any(|n| *n == "SECS" || *n == "SECONDS"),
                "{path} --{}: bare seconds; take a DURATION (docs/exit-codes.md)",
                a.get_id()
            );
        });
        for args in [
            &["magnet", "rpc", "-r", "x", "--reply-timeout", "5s"][..],
            &["magnet", "rpc", "-r", "x", "--reply-timeout", "500ms"][..],
            &["magnet", "nfs", "-r", "x", "--idle", "2m"][..],
            &["magnet", "nfs", "-r", "x", "--idle", "30"][..],
            &["magnet", "parse", "t", "--since", "1.5s", "--until", "2"][..],
            &["magnet", "record", "-d", "100ms", "--all"][..],
        ] {
            Cli::try_parse_from(args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        }
    }

    #[test]
    fn documented_spellings_parse() {
        for args in [
            &["magnet", "sample", "show", "--store", "D", "-2"][..],
            &[
                "magnet", "sample", "plot", "--store", "D", "-1", "-o", "x.svg",
            ][..],
            &["magnet", "info", "-r", "t.mgt"][..],
            &[
                "magnet", "parse", "-r", "t.mgt", "-c", "10", "--layers", "tcp",
            ][..],
            &[
                "magnet", "parse", "t.mgt", "--layer", "tcp", "--kind", "tcp_rcv",
            ][..],
            &["magnet", "record", "--layer", "app,tcp", "--all"][..],
            &["magnet", "record", "--layers", "app,tcp", "--all"][..],
            &["magnet", "export", "t.mgt", "-T", "csv", "-o", "-"][..],
            &["magnet", "export", "t.mgt", "-f", "csv", "-o", "-"][..],
            &["magnet", "pcap", "-r", "t.mgt", "-i", "lo", "-o", "-"][..],
            &["magnet", "rpc", "-r", "c.pcap", "-c", "5", "--concise"][..],
            &["magnet", "completions", "bash"][..],
            &["magnet", "man"][..],
        ] {
            Cli::try_parse_from(args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        }
        // Both a positional trace and -r: one is too many.
        assert!(Cli::try_parse_from(["magnet", "info", "a", "-r", "b"]).is_err());
        assert!(Cli::try_parse_from(["magnet", "info"]).is_err());
    }

    #[test]
    fn version_names_the_commit() {
        let v = Cli::command().render_version();
        assert!(
            v.contains("(commit ") || v.contains("(not built from a git checkout)"),
            "{v}"
        );
    }
}
