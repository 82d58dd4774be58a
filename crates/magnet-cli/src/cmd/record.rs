//! `magnet record`: trace a command, some processes, or the whole host.

use std::ffi::OsString;
use std::io::IsTerminal;
use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;
use magnet_record::{
    parse_kinds, parse_layers, parse_size, Filters, KindSelection, Layer, RecordConfig, RunOptions,
    Summary, Target,
};

use magnet_common::units::parse_duration;

const AFTER_HELP: &str = "\
Examples:
  magnet record -o run.mgt -- curl -s http://127.0.0.1:8080/big   trace one command and its children
  magnet record -o run.mgt --all --duration 10s                    the whole host for 10 s
  magnet record -o run.mgt -p 1234 --layers app,tcp,ip,dev --tcp-state --buffer 64MiB
  magnet record -o run.mgt --all --port 5201 --layers all          one port, every layer
  magnet record -o run.mgt 'tcp port 443 and host 10.0.0.2' -- CMD  packets a pcap-filter matches
  magnet record -o run.mgt --all -f 'udp port 53' -d 10s
  magnet record -o run.mgt --all --netns web1 -d 10s               one namespace (ip netns list)

Layers: app (send/recv calls), tcp (state changes, segments received, data queued,
retransmits, resets), ip (netfilter hooks in and out), qdisc (enqueue/dequeue), dev
(queued, handed to driver, transmit done, received), drop (kfree_skb with reason),
sched (context switches, wake-ups, fork, exit). Default: app,tcp,ip,dev.

A recording costs per event, so four per-packet kinds that repeat their neighbours for
a host's own traffic are off unless asked for: dev_queue and dev_xmit (around the
driver hand-over), ip_post_routing and ip_pre_routing (around LOCAL_OUT/LOCAL_IN;
they matter for forwarded or NATed packets). `--kinds all` records everything.

Filters run in the kernel: an event that does not match costs a map lookup, not a
record. Task filters (-- COMMAND, -p, --comm, --cgroup) decide which sockets are
traced; packets are then attributed to those sockets (transmit: by the skb's socket;
receive: by the socket's flow). --port and --host narrow any of them further, as does
--netns: without it every network namespace is recorded, so a packet between two
namespaces of this host is seen leaving one and entering the other. A
pcap-filter expression (-f EXPR, or the words before --, as tcpdump takes them) keeps
only the packet events (ip, qdisc, dev, drop, frames) of packets it matches; it is
compiled by libpcap for raw IP and run in the kernel (docs/record.md).

When the ring buffer is full the kernel counts what it could not record and writes a
LOST record with the count as soon as there is room: nothing is lost silently.
Needs root and a kernel with BTF (Linux 6.1 or later; --check shows the hook per kind). Ctrl-C or SIGTERM ends
a recording cleanly; the trace stays readable up to its last block even if killed.";

#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct RecordArgs {
    /// Trace file to write.
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FILE",
        default_value = "magnet.mgt"
    )]
    output: PathBuf,

    /// Trace the whole host (all processes).
    #[arg(long, conflicts_with_all = ["pid", "command"])]
    all: bool,

    /// Trace this process and what it forks from now on (repeatable).
    #[arg(
        short = 'p',
        long = "pid",
        value_name = "PID",
        conflicts_with = "command"
    )]
    pid: Vec<u32>,

    /// Only tasks with this name (as in /proc/PID/comm, at most 15 bytes).
    #[arg(long, value_name = "NAME")]
    comm: Option<String>,

    /// Only tasks in this cgroup v2 directory (e.g. /sys/fs/cgroup/system.slice/nginx.service).
    #[arg(long, value_name = "PATH")]
    cgroup: Option<PathBuf>,
    /// Only tasks of this container (id or prefix: docker, containerd/CRI,
    /// CRI-O, podman, systemd-nspawn), found by its cgroup v2 directory.
    #[arg(long, value_name = "ID", conflicts_with = "cgroup")]
    container: Option<String>,

    /// Only flows with this port at either end.
    #[arg(long, value_name = "PORT")]
    port: Option<u16>,

    /// Only flows with this address at either end.
    #[arg(long, value_name = "ADDR")]
    host: Option<IpAddr>,

    /// Only this network namespace: `self` (the recorder's), a name from `ip
    /// netns list`, /proc/PID/ns/net, /run/netns/NAME or its inode number
    /// (`lsns -t net`). Packets count where they are seen, sockets and tasks
    /// in their own; the ip layer's hooks go only there. Default: every
    /// namespace (a veth peer's packets too, each where it is).
    #[arg(long, value_name = "NS", value_parser = parse_netns)]
    netns: Option<u64>,

    /// Layers to record, comma-separated, or `all` [default: app,tcp,ip,dev].
    /// A default layer this kernel cannot record is left out with a note, as
    /// is any with `all`; a layer named in a list fails instead.
    #[arg(long, visible_alias = "layer", value_name = "LIST", value_parser = parse_layers)]
    layers: Option<std::collections::BTreeSet<Layer>>,

    /// Print, for this kernel, which hook will feed each kind of each layer and
    /// which cannot be recorded and why; record nothing.
    #[arg(long)]
    check: bool,

    /// Adjust the kinds recorded in those layers: +KIND adds one that is off by
    /// default (dev_queue, dev_xmit, ip_post_routing, ip_pre_routing), -KIND leaves
    /// one out, `all` records every kind of the selected layers.
    #[arg(long, visible_alias = "kind", value_name = "LIST", value_parser = parse_kinds, allow_hyphen_values = true)]
    kinds: Option<KindSelection>,

    /// Add MAGNeT's TCP snapshot (windows, RTT, cwnd, sequence numbers) to every tcp event.
    #[arg(long)]
    tcp_state: bool,

    /// How the cost line's BPF time is measured. The kernel's run-time
    /// statistics are host-wide: while they are on, every BPF program on the
    /// host (magnet's and any other's) reads the clock twice per run, on a
    /// 16-core machine a fifth of four MTU-sized streams' throughput (docs/record.md,
    /// "Cost"). `first` (the default): on until the recording has run 2 s and
    /// written 10,000 records (at most 30 s), then off, and the rest estimated
    /// at their time per record (a recording that ends sooner is counted whole);
    /// `full`: on throughout, every run counted; `sampled`: on for the first
    /// 2 s, then in 20 ms windows at random times, a tenth of the time, the rest
    /// estimated from them (it flips a kernel static key ten times a second: an
    /// emulated QEMU guest's kernel crashed once while it did, so it is opt-in);
    /// `off`: no BPF time (the drain's CPU is still given).
    #[arg(long, value_name = "HOW", default_value = "first", value_parser = ["first", "full", "sampled", "off"])]
    bpf_stats: String,

    /// The same as --bpf-stats off.
    #[arg(long, conflicts_with = "bpf_stats")]
    no_bpf_stats: bool,

    /// Keep the first N bytes of every frame the dev layer sees (dev_start_xmit
    /// and dev_rx, both directions, every interface), like tcpdump's -s; at most
    /// 2048: the skb's linear part, then its page fragments (where TCP payload
    /// lives), but not a receive-side GRO frag_list (docs/wire.md). `magnet
    /// pcap` then writes these bytes. Off by default.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=2048))]
    snaplen: Option<u32>,

    /// Also record the entry of kernel functions that take an skb: `auto` (every
    /// one `magnet funcs` selects with a struct sk_buff * among parameters 1-5
    /// that can be probed) or names and globs, comma-separated (tcp_*,ip_rcv).
    /// `all` probes every attachable function (available_filter_functions),
    /// the ones without an skb with function and caller only (kprobe-multi
    /// only): the "full function tracing" that `auto` is measured against;
    /// `all/N` every Nth of them in name order.
    #[arg(long, value_name = "SPEC")]
    funcs: Option<String>,

    /// With --funcs: also probe each function's return (kretprobes), so that
    /// `magnet packets` shows the time spent in each function.
    #[arg(long, requires = "funcs")]
    func_exits: bool,

    /// Ring buffer space in total, split into one ring per CPU (each rounded up to a
    /// power of two), e.g. 64MiB.
    #[arg(long, value_name = "SIZE", default_value = "32MiB", value_parser = parse_buffer)]
    buffer: u64,

    /// Stop after this long (e.g. 10s, 500ms); default: until the command exits or Ctrl-C.
    #[arg(short = 'd', long, value_name = "DURATION", value_parser = parse_duration)]
    duration: Option<Duration>,

    /// No status line and no summary.
    #[arg(short, long)]
    quiet: bool,

    /// Print the summary as one JSON object on stdout.
    #[arg(long)]
    json: bool,

    /// Record packet events (ip, qdisc, dev, drop, frames) only for packets this
    /// pcap-filter expression matches (tcpdump's syntax, evaluated in the kernel
    /// from the IP header on: `ether`/`vlan` primitives do not apply; app and tcp
    /// events are not filtered by it).
    #[arg(
        short = 'f',
        long = "filter",
        value_name = "EXPR",
        conflicts_with = "expression"
    )]
    filter: Option<String>,

    /// The filter expression as tcpdump takes it: the words before `--`.
    #[arg(value_name = "EXPRESSION")]
    expression: Vec<String>,

    /// The command to run and trace (after --).
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

/// Compiles a pcap-filter expression with libpcap for raw IP packets (DLT_RAW,
/// 12: the program starts at the IP header, which every packet hook has) into
/// its classic BPF instructions. Errors read as tcpdump's.
pub fn compile_filter(expr: &str) -> Result<Vec<(u16, u8, u8, u32)>> {
    let reason = |e: pcap::Error| match e {
        pcap::Error::PcapError(s) => s,
        e => e.to_string(),
    };
    let dead = pcap::Capture::dead(pcap::Linktype(12))
        .map_err(|e| anyhow::anyhow!("can't compile filter expression: {}", reason(e)))?;
    let prog = dead
        .compile(expr, true)
        .map_err(|e| anyhow::anyhow!("{}", reason(e)))?;
    prog.get_instructions()
        .iter()
        .map(|i| {
            let s = i.to_string();
            let f: Vec<u64> = s.split(' ').filter_map(|x| x.parse().ok()).collect();
            match f[..] {
                [code, jt, jf, k] => Ok((code as u16, jt as u8, jf as u8, k as u32)),
                _ => Err(anyhow::anyhow!(
                    "libpcap gave an instruction we cannot read: {s}"
                )),
            }
        })
        .collect()
}

pub fn run(args: RecordArgs) -> Result<ExitCode> {
    if let Some(line) = magnet_kernel::tracefs::mount_if_missing() {
        if !args.quiet {
            eprintln!("magnet: {line}");
        }
    }
    if args.check {
        return check(&args);
    }
    let target = target_of(&args)?;
    let config = config_of(&args)?;

    // SIGHUP and SIGQUIT end a recording as SIGTERM does: with its END block.
    let signals = magnet_common::stop::Stop::install_ending_on_hangup()
        .context("installing the signal handler")?;
    let stop = signals.flag();
    // A recording with its own end (`-- CMD`, `-d`) cut short by a signal
    // exits 128+N (docs/exit-codes.md); one that runs until stopped, 0.
    let has_end = matches!(target, Target::Command(_)) || args.duration.is_some();
    let (bar, progress) = progress_bar(!args.quiet && std::io::stderr().is_terminal());
    let summary = magnet_record::record(
        &config,
        RunOptions {
            target,
            duration: args.duration,
            stop,
            progress,
            ready: ready_line(&args),
            detached: None,
        },
    )?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if args.json {
        use std::io::Write;
        writeln!(std::io::stdout(), "{}", summary_json(&summary, &config))?;
    } else if !args.quiet {
        // After SIGHUP the terminal may be gone: the trace is closed, say
        // what it holds where that can still be said.
        use std::io::Write;
        let _ = write!(std::io::stderr(), "{}", summary_text(&summary, &config));
    }
    Ok(exit_code(&summary, has_end, &signals))
}

/// What `args` say to trace: a command, pids, or everything (narrowed by
/// the filters).
fn target_of(args: &RecordArgs) -> Result<Target> {
    Ok(if !args.command.is_empty() {
        Target::Command(args.command.clone())
    } else if !args.pid.is_empty() {
        Target::Pids
    } else if args.all || args.comm.is_some() || args.cgroup.is_some() || args.container.is_some() {
        Target::All
    } else {
        bail!("say what to trace: `-- COMMAND [ARGS]`, `-p PID`, `--comm NAME`, `--cgroup PATH` or `--all`");
    })
}

/// The recorder's settings from the command line; a bad filter expression
/// or cgroup fails here, before anything is written.
fn config_of(args: &RecordArgs) -> Result<RecordConfig> {
    let mut config = RecordConfig::new(args.output.clone());
    // The filter first: a bad expression fails before anything is written.
    let expr = args
        .filter
        .clone()
        .or_else(|| (!args.expression.is_empty()).then(|| args.expression.join(" ")));
    if let Some(expr) = expr {
        config.pcap_filter_insns = compile_filter(&expr)?;
        config.pcap_filter = Some(expr);
    }
    if let Some(l) = &args.layers {
        config.layers = l.clone();
        // `all` (every layer there is) records those this kernel has and
        // leaves each other out with one line; a layer named in a list must
        // record or fail.
        config.layers_named = l.len() < Layer::ALL.len();
    }
    config.kinds = args.kinds.clone().unwrap_or_default();
    config.tcp_state = args.tcp_state;
    config.no_bpf_stats = args.no_bpf_stats || args.bpf_stats == "off";
    config.bpf_stats_sampled = args.bpf_stats == "sampled";
    config.bpf_stats_full = args.bpf_stats == "full";
    if let Some(n) = args.snaplen {
        if !config.layers.contains(&magnet_record::config::Layer::Dev) {
            bail!("--snaplen keeps frames at the dev layer: add dev to --layers");
        }
        config.snaplen = n;
    }
    if let Some(spec) = &args.funcs {
        (config.funcs, config.func_names) = super::funcs::resolve_spec(spec)?;
        config.func_exits = args.func_exits;
    }
    config.set_buffer(args.buffer);
    config.filters = Filters {
        pids: args.pid.clone(),
        comm: args.comm.clone(),
        cgroup: cgroup_of(args)?,
        port: args.port,
        host: args.host,
        netns: args.netns,
    };
    Ok(config)
}

/// The cgroup to trace: `--container`'s, found under the cgroup2 root, or
/// `--cgroup`, which must be a cgroup v2 directory.
fn cgroup_of(args: &RecordArgs) -> Result<Option<std::path::PathBuf>> {
    Ok(match &args.container {
        Some(id) => {
            let root = magnet_kernel::cgroup::root().ok_or_else(|| {
                anyhow::anyhow!("--container: no cgroup v2 hierarchy is mounted")
            })?;
            Some(
                magnet_daemon::container::find_container(&root, id)
                    .map_err(|e| anyhow::anyhow!(e))?,
            )
        }
        None => match &args.cgroup {
            Some(c) if !c.is_dir() => {
                bail!("--cgroup {}: no such cgroup directory", c.display())
            }
            Some(c) if !is_cgroup2(c) => bail!(
                "--cgroup {}: not a cgroup v2 directory (give one under the cgroup2 mount, e.g. /sys/fs/cgroup/system.slice)",
                c.display()
            ),
            c => c.clone(),
        },
    })
}

/// The status spinner (`status`: stderr is a terminal and not --quiet) and
/// the progress callback that drives it.
fn progress_bar(
    status: bool,
) -> (
    Option<indicatif::ProgressBar>,
    Option<magnet_record::ProgressFn>,
) {
    let bar = status.then(|| {
        let b = indicatif::ProgressBar::new_spinner();
        b.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {msg}").expect("valid template"),
        );
        b
    });
    let progress: Option<magnet_record::ProgressFn> = bar.clone().map(|b| {
        let mut last = (0u64, Duration::ZERO);
        Box::new(move |p: &magnet_record::Progress| {
            let dt = (p.elapsed - last.1).as_secs_f64().max(1e-3);
            let rate = (p.records - last.0) as f64 / dt;
            last = (p.records, p.elapsed);
            b.set_message(format!(
                "recording {:.1}s  {} events  {:.0} ev/s  {:.1} MB  lost {}",
                p.elapsed.as_secs_f64(),
                p.records,
                rate,
                p.bytes as f64 / 1e6,
                p.lost
            ));
            b.tick();
        }) as magnet_record::ProgressFn
    });

    (bar, progress)
}

/// The exit status: the command's, passed on (killed by signal N: 128+N, as
/// a shell says); a recording with its own end cut short by a signal, 128+N.
fn exit_code(
    summary: &magnet_record::Summary,
    has_end: bool,
    signals: &magnet_common::stop::Stop,
) -> ExitCode {
    if summary.child_status.is_none() && has_end && summary.end_reason == "interrupted" {
        return ExitCode::from(magnet_common::exit::signalled(
            signals.signal().unwrap_or(libc::SIGINT),
        ));
    }
    match summary.child_status {
        Some(s) => match s.code() {
            Some(code) => ExitCode::from(code.clamp(0, 255) as u8),
            None => ExitCode::from(magnet_common::exit::signalled(
                std::os::unix::process::ExitStatusExt::signal(&s).unwrap_or(0),
            )),
        },
        None => ExitCode::SUCCESS,
    }
}

/// `magnet record --check`: the hook per kind on this kernel.
fn check(args: &RecordArgs) -> Result<ExitCode> {
    // The verifier's log of any program this kernel refuses, on stderr, for
    // a person reading the table (with --json, only -v shows it: scripts
    // that take both streams want the JSON alone).
    if !args.json {
        magnet_host::libbpf_log::show(1);
    }
    let (features, lines) = magnet_record::check()?;
    let selected = args
        .layers
        .clone()
        .unwrap_or_else(|| Layer::DEFAULT.into_iter().collect());
    let lines: Vec<_> = lines
        .into_iter()
        .filter(|l| selected.iter().any(|s| s.name() == l.layer))
        .collect();
    if args.json {
        use std::io::Write;
        let v = super::json_out::tagged(
            super::json_out::RECORD_CHECK,
            "check",
            serde_json::json!({ "kernel": features, "kinds": lines }),
        )?;
        writeln!(std::io::stdout(), "{v}")?;
        return Ok(ExitCode::SUCCESS);
    }
    let yn = |s: &magnet_kernel::Support| match s {
        magnet_kernel::Support::Yes => "yes".to_string(),
        magnet_kernel::Support::No(_) => "no".to_string(),
    };
    println!(
        "kernel {}: fentry/fexit {}, kprobe {}, kprobe-multi {}, netfilter links {}, tcx {}",
        features.release,
        yn(&features.fentry),
        yn(&features.kprobe),
        yn(&features.kprobe_multi),
        yn(&features.netfilter_link),
        yn(&features.tcx)
    );
    let rows: Vec<magnet_kernel::plan::CheckRow> = lines
        .iter()
        .map(|l| magnet_kernel::plan::CheckRow {
            group: l.layer.clone(),
            part: if l.default_on {
                l.kind.clone()
            } else {
                format!("{} (+)", l.kind)
            },
            hook: l.hook.clone(),
            missing: l.missing.clone(),
            passed_over: l.refused.iter().cloned().collect(),
        })
        .collect();
    let words = magnet_kernel::plan::CheckWords {
        group: "layer",
        part: "kind",
        cannot: "cannot be recorded",
    };
    print!("{}", magnet_kernel::plan::check_table(words, &rows));
    println!("(+): off by default (--kinds +KIND)");
    Ok(ExitCode::SUCCESS)
}

/// The line that says recording has begun (every hook attached): scripts can
/// wait for it before making the traffic they want recorded.
fn ready_line(args: &RecordArgs) -> Option<magnet_record::ReadyFn> {
    if args.quiet {
        return None;
    }
    let output = args.output.display().to_string();
    Some(Box::new(move |layers: &[magnet_trace::LayerSource]| {
        let names: Vec<&str> = layers.iter().map(|l| l.layer.as_str()).collect();
        eprintln!(
            "magnet: recording {} to {output}; Ctrl-C stops",
            names.join(",")
        );
    }))
}

fn summary_json(s: &Summary, c: &RecordConfig) -> serde_json::Value {
    serde_json::json!({
        "schema": super::json_out::RECORD,
        "output": c.output,
        "records": s.records,
        "bytes": s.bytes_written,
        "lost_kernel": s.lost_kernel,
        "dropped_user": s.dropped_user,
        "by_kind": s.by_kind,
        "generated": s.generated,
        "seconds": s.elapsed.as_secs_f64(),
        "end_reason": s.end_reason,
        "exit_code": s.child_status.and_then(|st| st.code()),
        "layers": s.layers,
        "drain_cpu_seconds": s.drain_cpu.as_secs_f64(),
        "cost": s.cost,
    })
}

fn summary_text(s: &Summary, c: &RecordConfig) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "magnet: {} events ({:.2} MB) written to {} in {:.2} s ({})",
        s.records,
        s.bytes_written as f64 / 1e6,
        c.output.display(),
        s.elapsed.as_secs_f64(),
        s.end_reason
    );
    let _ = writeln!(
        out,
        "magnet: lost {} events (ring buffer full; LOST records mark where), dropped {} in user space",
        s.lost_kernel, s.dropped_user
    );
    if s.lost_kernel > 0 {
        let _ = writeln!(
            out,
            "magnet: to lose fewer, raise --buffer (now {} bytes) or record fewer layers",
            c.buffer_bytes
        );
    }
    if let Some(l) = s.cost.skipped_line() {
        let _ = writeln!(out, "magnet: warning: {l}");
    }
    let kinds: Vec<String> = s.by_kind.iter().map(|(k, n)| format!("{k} {n}")).collect();
    if kinds.is_empty() {
        let _ = writeln!(out, "magnet: no event matched the filters");
    } else {
        let _ = writeln!(out, "magnet: by kind: {}", kinds.join(", "));
    }
    for l in s.cost.lines(5) {
        let _ = writeln!(out, "magnet: cost: {l}");
    }
    for l in &s.layers {
        for m in l.missing.iter().chain(&l.notes) {
            let _ = writeln!(out, "magnet: note: layer {}: {m}", l.layer);
        }
    }
    out
}

/// `--buffer`: a size from 4KiB (a page per CPU) to 2GiB (what BPF ring
/// buffers hold).
fn parse_buffer(s: &str) -> Result<u64, String> {
    let v = parse_size(s)?;
    if !(4096..=1 << 31).contains(&v) {
        return Err(format!("{s}: the buffer is 4KiB to 2GiB"));
    }
    Ok(v)
}

/// Whether `dir` is on a cgroup v2 file system (a plain directory's id would
/// match no task, and the recording would be silently empty).
fn is_cgroup2(dir: &std::path::Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a statfs the call fills.
    unsafe { libc::statfs(c.as_ptr(), &mut st) == 0 && st.f_type == libc::CGROUP2_SUPER_MAGIC }
}

/// `--netns NS` to the namespace's inode (clap shows the one-line error).
fn parse_netns(s: &str) -> Result<u64, String> {
    magnet_record::netns_inode(s)
}
