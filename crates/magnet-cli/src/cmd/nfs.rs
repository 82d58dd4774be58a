//! `magnet nfs`: nfstrace — file sessions and statistics reconstructed from NFS traffic.

use std::io::Write;
use std::process::ExitCode;

use clap::Args;
use magnet_rpc::nfstrace::{NfsTrace, Session};

use super::rpc::{drive, summary, InputArgs};

const NFS_EXAMPLES: &str = "\
Output: one line per reconstructed open session, as it closes:
  first-seen  last-seen  client.uid  file  reads/bytes/runs  writes/bytes/runs  closed-by
  1763776612.417343 1763776612.520011 10.211.0.2.0 /export/a.bin read 3 10000 1 write 0 0 0 idle

How sessions are inferred: NFS carries no open or close, so a session for
(client, uid, file) opens at the first operation on the file and closes when
the file has been idle for --idle (default 120s), at an NFSv4 CLOSE, or
when the file is removed; sessions still open at the end are closed there
(closed-by 'end'). Bytes are summed from successful READ/WRITE replies. File
names come from MOUNT, LOOKUP, CREATE, MKDIR, READDIRPLUS, RENAME and NFSv4
PUTROOTFH/LOOKUP/OPEN/GETFH; an unknown handle is shown as fh:<hex>.

Examples:
  magnet nfs -r cap.pcap                       reconstructed file sessions
  magnet nfs -r cap.pcap --json                sessions as JSON lines
  magnet nfs -r cap.pcap --stats               per-operation counts and latency
                                               (min/median/p99/max), per client, per file
  magnet nfs -r cap.pcap --idle 30             close sessions after 30 s idle
  magnet nfs -i eth0 'port 2049'               live";

/// Reconstruct file activity (nfstrace): open sessions per client, uid and file with
/// bytes read and written, handle-to-path mapping, and per-operation statistics.
#[derive(Args, Debug)]
#[command(after_long_help = NFS_EXAMPLES)]
pub struct NfsArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// JSON lines instead of text.
    #[arg(long)]
    pub json: bool,
    /// Print per-operation, per-client and per-file tables instead of sessions.
    #[arg(long)]
    pub stats: bool,
    /// Idle time after which a file's session is considered closed (e.g. 30s, 2m).
    #[arg(long, value_name = "DURATION", default_value = "120s", value_parser = magnet_common::units::parse_duration)]
    pub idle: std::time::Duration,
}

fn ts(ns: i64) -> String {
    format!(
        "{}.{:06}",
        ns.div_euclid(1_000_000_000),
        ns.rem_euclid(1_000_000_000) / 1000
    )
}

fn session_line(s: &Session, json: bool) -> String {
    if json {
        return super::json_out::tag_string(
            serde_json::to_string(s).unwrap_or_default(),
            super::json_out::NFS,
        );
    }
    format!(
        "{} {} {}.{} {} read {} {} {} write {} {} {} {:?}",
        ts(s.first_ns),
        ts(s.last_ns),
        s.client,
        s.uid.map(|u| u.to_string()).unwrap_or_else(|| "-".into()),
        s.file,
        s.reads,
        s.read_bytes,
        s.read_runs,
        s.writes,
        s.write_bytes,
        s.write_runs,
        s.closed_by
    )
    .replace("Idle", "idle")
    .replace("Close", "close")
    .replace("Remove", "remove")
    .replace("End", "end")
}

pub fn run(args: NfsArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(!args.idle.is_zero(), "--idle must be positive");
    let mut tr = NfsTrace::new(i64::try_from(args.idle.as_nanos()).unwrap_or(i64::MAX));
    let stdout = std::io::stdout();
    // Paths and host names from the capture: escaped in text.
    let mut out =
        magnet_common::text::Escaping::when(!args.json, std::io::BufWriter::new(stdout.lock()));
    let mut lines: Vec<String> = Vec::new();
    let show = !args.stats;
    let json = args.json;
    let (c, cut) = drive(&args.input, &mut |t| {
        tr.add(&t, &mut |s| {
            if show {
                lines.push(session_line(&s, json))
            }
        });
        for l in lines.drain(..) {
            writeln!(out, "{l}")?;
        }
        Ok(())
    })?;
    tr.finish(&mut |s| {
        if show {
            lines.push(session_line(&s, json))
        }
    });
    for l in lines.drain(..) {
        writeln!(out, "{l}")?;
    }
    if args.stats {
        let st = tr.stats();
        if json {
            let v = super::json_out::tagged(super::json_out::NFS, "stats", &st)?;
            writeln!(out, "{v}")?;
        } else {
            writeln!(
                out,
                "{:<24} {:>8} {:>6} {:>10} {:>10} {:>10} {:>10}",
                "operation", "count", "errors", "min_us", "median_us", "p99_us", "max_us"
            )?;
            for o in &st.ops {
                writeln!(
                    out,
                    "{:<24} {:>8} {:>6} {:>10.1} {:>10.1} {:>10.1} {:>10.1}",
                    o.op, o.count, o.errors, o.min_us, o.median_us, o.p99_us, o.max_us
                )?;
            }
            writeln!(out)?;
            writeln!(
                out,
                "{:<40} {:>8} {:>12} {:>12}",
                "client", "ops", "read_bytes", "write_bytes"
            )?;
            for u in &st.clients {
                writeln!(
                    out,
                    "{:<40} {:>8} {:>12} {:>12}",
                    u.name, u.ops, u.read_bytes, u.write_bytes
                )?;
            }
            writeln!(out)?;
            writeln!(
                out,
                "{:<40} {:>8} {:>12} {:>12}",
                "file", "ops", "read_bytes", "write_bytes"
            )?;
            for u in &st.files {
                writeln!(
                    out,
                    "{:<40} {:>8} {:>12} {:>12}",
                    u.name, u.ops, u.read_bytes, u.write_bytes
                )?;
            }
        }
    }
    out.flush()?;
    if !args.input.quiet {
        eprintln!("{}", summary(&c, &cut));
    }
    Ok(super::rpc::code(&c, &cut))
}
