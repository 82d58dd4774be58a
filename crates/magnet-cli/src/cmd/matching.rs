//! `magnet match`: each frame of a capture tied to the kernel's packet.

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use magnet_pcap::CaptureReader;
use magnet_wire::footprint::{tcp_flags_str, Frame};
use magnet_wire::kernel::Kernel;
use magnet_wire::matching::{associate_parsed, handshake, Association};

use super::trace_input;

/// Match each frame of a capture (taken anywhere, with any clock) to the kernel's
/// packet in a trace, by footprint; estimate the clock offset and drift.
#[derive(Args)]
#[command(after_help = "Examples:
  magnet match run.mgt peer.pcap
  magnet match run.mgt peer.pcapng --json | jq 'select(.summary)'

Footprints (time only breaks ties): IPv4 source, destination, identification and
protocol; IPv6 source, destination and next header; plus TCP ports, sequence and
acknowledgement numbers, or UDP ports. ARP frames match the nearest kernel ARP packet
within 1 ms. The offset is capture time minus trace time (median over frames with a
unique footprint); drift is estimated when the matches span at least a second.

Per frame: number, capture time, what it is, the kernel packet id, and the packet's path
(hook[ifindex] and its time relative to the frame's corrected time). Unmatched frames
and kernel packets say why. Exit status 0, or 2 on an error.")]
pub struct MatchArgs {
    /// Trace (magnet record -o …)
    pub trace: PathBuf,
    /// Capture (pcap or pcapng; '-' for standard input)
    pub capture: PathBuf,
    /// JSON lines: one per frame, then one {"summary": …}
    #[arg(long)]
    pub json: bool,
    /// Only the summary
    #[arg(short, long)]
    pub quiet: bool,
}

/// One cell of the handshake table.
type Cell<'a> = &'a dyn Fn(&magnet_wire::matching::HandshakeRow) -> String;

/// Frames as (number, capture time, what it is).
type Frames = Vec<(u64, i64, Frame)>;

fn read_capture(path: &PathBuf) -> Result<(Frames, Option<String>)> {
    let rd: Box<dyn std::io::Read> = if path.as_os_str() == "-" {
        Box::new(std::io::stdin())
    } else {
        Box::new(
            std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?,
        )
    };
    let mut r = CaptureReader::new(rd, path)?;
    let mut v = Vec::new();
    let mut cut = None;
    while let Some(p) = r.next_packet() {
        match p {
            Ok(p) => v.push((
                p.number,
                p.ts_ns,
                magnet_wire::footprint::parse_frame(p.linktype, p.data),
            )),
            Err(e) => {
                cut = Some(e.to_string());
                break;
            }
        }
    }
    Ok((v, cut))
}

fn what(f: &Frame) -> String {
    match f {
        Frame::Ip { fp, tcp_flags, len } => match fp.protocol {
            6 => format!(
                "{}:{} > {}:{} TCP [{}] seq {} ack {} id {} len {len}",
                fp.src,
                fp.sport,
                fp.dst,
                fp.dport,
                tcp_flags_str(*tcp_flags),
                fp.seq,
                fp.ack,
                fp.ip_id
            ),
            17 => format!(
                "{}:{} > {}:{} UDP id {} len {len}",
                fp.src, fp.sport, fp.dst, fp.dport, fp.ip_id
            ),
            p => format!(
                "{} > {} proto {p} id {} len {len}",
                fp.src, fp.dst, fp.ip_id
            ),
        },
        Frame::Arp => "ARP".into(),
        Frame::Other(et) => format!("ethertype {et:#06x}"),
        Frame::Link(lt) => format!("link type {lt} (not decoded)"),
    }
}

pub fn run(a: MatchArgs) -> Result<ExitCode> {
    // -q keeps the summary only, and no progress bar.
    let mut rd = trace_input::open(&a.trace, trace_input::progress_wanted(a.quiet))?;
    let k = Kernel::load(&mut rd).with_context(|| format!("{}", a.trace.display()))?;
    let damaged = rd.damage() > 0;
    drop(rd);
    for w in &k.warnings {
        let line = format!("{}: {w}", a.trace.display());
        eprintln!("magnet: warning: {}", magnet_common::text::escape(&line));
    }
    let (frames, cut) = read_capture(&a.capture)?;
    if let Some(c) = &cut {
        eprintln!("magnet: warning: {c}; matched the frames before it");
    }
    let undecoded = frames
        .iter()
        .filter(|f| matches!(f.2, Frame::Link(_)))
        .count();
    if let Some((_, _, Frame::Link(lt))) = frames.iter().find(|f| matches!(f.2, Frame::Link(_))) {
        eprintln!(
            "magnet: warning: {}: {undecoded} frames of link type {lt} not decoded (magnet reads Ethernet, Linux cooked, raw IP and loopback captures)",
            a.capture.display()
        );
    }
    let asc = associate_parsed(&k, frames);
    // Names from the trace and the capture: escaped in text.
    let mut out =
        magnet_common::text::Escaping::when(!a.json, BufWriter::new(std::io::stdout().lock()));
    if a.json {
        json(&k, &asc, &mut out, a.quiet)?;
    } else {
        text(&k, &asc, &mut out, a.quiet)?;
    }
    out.flush()?;
    Ok(trace_input::damaged_code(
        damaged || cut.is_some() || undecoded > 0,
    ))
}

fn path_json(k: &Kernel, i: usize, t: i64) -> serde_json::Value {
    let p = &k.packets[i];
    serde_json::Value::Array(
        p.hops
            .iter()
            .map(|h| {
                serde_json::json!({"hook": k.kind_name(h.kind), "ifindex": h.ifindex, "ts_ns": h.ts_ns, "rel_ns": h.ts_ns - t})
            })
            .collect(),
    )
}

fn json(k: &Kernel, asc: &Association, out: &mut impl Write, quiet: bool) -> Result<()> {
    use super::json_out::{tagged, MATCH};
    let s = &asc.summary;
    if !quiet {
        for m in &asc.frames {
            let mut v = serde_json::to_value(m)?;
            v["what"] = what(&m.kind).into();
            if let Some(i) = m.packet {
                let t = m.ts_ns - s.offset_ns;
                v["path"] = path_json(k, i, t);
                if let Some(o) = k.owners.get(&k.sender_of(&k.packets[i], usize::MAX)) {
                    v["sender"] = serde_json::json!({"pid": o.pid, "comm": o.comm});
                }
            }
            writeln!(out, "{}", tagged(MATCH, "frame", v)?)?;
        }
        for (i, why) in &asc.kernel_unmatched {
            let p = &k.packets[*i];
            writeln!(
                out,
                "{}",
                tagged(
                    MATCH,
                    "kernel_packet",
                    serde_json::json!({"kernel_packet": format!("{:#x}", p.id), "reason": why, "path": path_json(k, *i, p.first_ts())})
                )?
            )?;
        }
    }
    if let Some(h) = handshake(k, asc) {
        writeln!(
            out,
            "{}",
            tagged(MATCH, "handshake", serde_json::json!({ "handshake": h }))?
        )?;
    }
    writeln!(
        out,
        "{}",
        tagged(MATCH, "summary", serde_json::json!({ "summary": s }))?
    )?;
    Ok(())
}

fn text(k: &Kernel, asc: &Association, out: &mut impl Write, quiet: bool) -> Result<()> {
    let s = &asc.summary;
    writeln!(
        out,
        "# clock: capture = trace {:+.6} s, drift {:+.3} ppm ({} frames with a unique footprint); capture on ifindex {:?}",
        s.offset_ns as f64 / 1e9,
        s.drift_ppm,
        s.offset_samples,
        s.capture_ifindexes
    )?;
    if !quiet {
        writeln!(out, "# frame time what  => packet  path (hook[ifindex] time relative to the frame, trace clock)")?;
        for m in &asc.frames {
            let secs = m.ts_ns as f64 / 1e9;
            match m.packet {
                Some(i) => {
                    let t = m.ts_ns - s.offset_ns;
                    let p = &k.packets[i];
                    let path: Vec<String> = p
                        .hops
                        .iter()
                        .map(|h| {
                            format!(
                                "{}[{}] {:+.1}us",
                                k.kind_name(h.kind),
                                h.ifindex,
                                (h.ts_ns - t) as f64 / 1000.0
                            )
                        })
                        .collect();
                    writeln!(
                        out,
                        "{} {secs:.6} {} => {:#x}  {}",
                        m.frame,
                        what(&m.kind),
                        p.id,
                        path.join(" > ")
                    )?;
                }
                None => writeln!(
                    out,
                    "{} {secs:.6} {} => unmatched: {}",
                    m.frame,
                    what(&m.kind),
                    m.reason.as_deref().unwrap_or("?")
                )?,
            }
        }
        for (i, why) in &asc.kernel_unmatched {
            let p = &k.packets[*i];
            writeln!(
                out,
                "kernel {:#x} at {:.6} unmatched: {why}",
                p.id,
                p.first_ts() as f64 / 1e9
            )?;
        }
    }
    writeln!(
        out,
        "# frames {}: matched {} ({:.3} %); IPv4 {}/{} ({:.3} %), IPv6 {}/{}, ARP {}/{}",
        s.frames,
        s.matched,
        s.matched_pct,
        s.ipv4_matched,
        s.ipv4_frames,
        s.ipv4_matched_pct,
        s.ipv6_matched,
        s.ipv6_frames,
        s.arp_matched,
        s.arp_frames
    )?;
    for (r, n) in &s.unmatched {
        writeln!(out, "#   unmatched frames, {r}: {n}")?;
    }
    writeln!(
        out,
        "# kernel packets on the capture's interfaces {}: matched {} ({:.3} %)",
        s.kernel_packets, s.kernel_matched, s.kernel_matched_pct
    )?;
    for (r, n) in &s.kernel_unmatched {
        writeln!(out, "#   unmatched kernel packets, {r}: {n}")?;
    }
    if let Some(h) = handshake(k, asc) {
        fn t(ns: i64) -> String {
            format!("{:.6}", ns as f64 / 1e9)
        }
        writeln!(
            out,
            "# handshake (the thesis's Table 6-6; kernel times on the capture's clock)"
        )?;
        writeln!(
            out,
            "#   {:<22} {:>20} {:>20} {:>20}",
            "", "SYN", "SYN-ACK", "ACK"
        )?;
        let rows: [(&str, Cell); 7] = [
            ("frame / packet id", &|r| {
                format!("{} {:#x}", r.frame, r.pkt_id)
            }),
            ("arrival in capture", &|r| t(r.arrival_ns)),
            ("entry (first event)", &|r| t(r.entry_ns)),
            ("exit (last event)", &|r| t(r.exit_ns)),
            ("functions", &|r| r.functions.to_string()),
            ("events", &|r| r.events.to_string()),
            ("cost (exit - entry) us", &|r| {
                format!("{:.1}", r.cost_ns as f64 / 1000.0)
            }),
        ];
        for (name, f) in rows.iter() {
            writeln!(
                out,
                "#   {:<22} {:>20} {:>20} {:>20}",
                name,
                f(&h[0]),
                f(&h[1]),
                f(&h[2])
            )?;
        }
    }
    Ok(())
}
