//! `magnet match`: each frame of a capture tied to the kernel's packet.

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use magnet_pcap::CaptureReader;
use magnet_wire::footprint::{tcp_flags_str, Frame};
use magnet_wire::kernel::{Hop, KPacket, Kernel};
use magnet_wire::match_stream::{associate_streamed, Inputs, KernelUnmatched, Options, Sink};
use magnet_wire::matching::{FrameMatch, HandshakeRow, Summary};

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

/// The trace and the capture, opened again for each pass; a capture on standard
/// input is copied to an unlinked temporary file first.
struct Files {
    trace: PathBuf,
    capture: PathBuf,
    stdin_copy: Option<std::fs::File>,
    progress: bool,
}

impl Inputs for Files {
    type Trace = trace_input::Tracked;
    type Capture = Box<dyn std::io::Read>;
    fn trace_name(&self) -> String {
        self.trace.display().to_string()
    }
    fn trace(&mut self) -> magnet_wire::Result<magnet_trace::TraceReader<Self::Trace>> {
        trace_input::open(&self.trace, self.progress).map_err(|e| magnet_wire::Error::Io {
            path: self.trace.display().to_string(),
            source: std::io::Error::other(format!("{e:#}")),
        })
    }
    fn capture(&mut self) -> magnet_wire::Result<CaptureReader<Self::Capture>> {
        let io = |source| magnet_wire::Error::Io {
            path: self.capture.display().to_string(),
            source,
        };
        let rd: Box<dyn std::io::Read> = match &self.stdin_copy {
            Some(f) => {
                use std::io::Seek;
                let mut f = f.try_clone().map_err(io)?;
                f.seek(std::io::SeekFrom::Start(0)).map_err(io)?;
                Box::new(std::io::BufReader::new(f))
            }
            None => Box::new(std::fs::File::open(&self.capture).map_err(io)?),
        };
        Ok(CaptureReader::new(rd, &self.capture)?)
    }
}

/// Standard input copied to an unlinked temporary file (each pass reads it).
fn copy_stdin() -> Result<std::fs::File> {
    let path = std::env::temp_dir().join(format!(".magnet-match-stdin-{}", std::process::id()));
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    let _ = std::fs::remove_file(&path);
    std::io::copy(&mut std::io::stdin().lock(), &mut f).context("copying standard input")?;
    Ok(f)
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
    let mut files = Files {
        trace: a.trace.clone(),
        capture: a.capture.clone(),
        stdin_copy: None,
        // -q keeps the summary only, and no progress bar.
        progress: trace_input::progress_wanted(a.quiet),
    };
    if a.capture.as_os_str() == "-" {
        files.stdin_copy = Some(copy_stdin()?);
    }
    // Names from the trace and the capture: escaped in text.
    let mut out =
        magnet_common::text::Escaping::when(!a.json, BufWriter::new(std::io::stdout().lock()));
    let mut sink = Lines {
        out: &mut out,
        json: a.json,
        quiet: a.quiet,
        offset_ns: 0,
    };
    let o = associate_streamed(&mut files, &Options::DEFAULT, &mut sink).map_err(|e| match e {
        magnet_wire::Error::Io { path, source } if path == "output" => anyhow::Error::from(source),
        e => anyhow::Error::from(e),
    })?;
    trace_input::clear_progress();
    for w in &o.warnings {
        let line = format!("{}: {w}", a.trace.display());
        eprintln!("magnet: warning: {}", magnet_common::text::escape(&line));
    }
    if let Some(c) = &o.capture_cut {
        eprintln!("magnet: warning: {c}; matched the frames before it");
    }
    if let Some(lt) = o.undecoded_link {
        eprintln!(
            "magnet: warning: {}: {} frames of link type {lt} not decoded (magnet reads Ethernet, Linux cooked, raw IP and loopback captures)",
            a.capture.display(),
            o.undecoded
        );
    }
    if o.stats.forced > 0 {
        eprintln!(
            "magnet: warning: {} kernel packet(s) no frame had taken left the match window early (more than {} packets within {} s of a frame); a frame of one that comes later is unmatched",
            o.stats.forced,
            Options::DEFAULT.pool_packets,
            Options::DEFAULT.tolerance_ns as f64 / 1e9
        );
    }
    if a.json {
        json_end(&o.summary, o.handshake.as_ref(), &mut out)?;
    } else {
        text_end(&o.summary, o.handshake.as_ref(), &mut out)?;
    }
    out.flush()?;
    Ok(trace_input::damaged_code(
        o.damaged || o.capture_cut.is_some() || o.undecoded > 0,
    ))
}

/// Frames and kernel packets written as they come.
struct Lines<'a, W: Write> {
    out: &'a mut W,
    json: bool,
    quiet: bool,
    offset_ns: i64,
}

impl<W: Write> Sink for Lines<'_, W> {
    fn clock(&mut self, s: &Summary) -> std::io::Result<()> {
        self.offset_ns = s.offset_ns;
        if self.json {
            return Ok(());
        }
        writeln!(
            self.out,
            "# clock: capture = trace {:+.6} s, drift {:+.3} ppm ({} frames with a unique footprint)",
            s.offset_ns as f64 / 1e9,
            s.drift_ppm,
            s.offset_samples,
        )?;
        if !self.quiet {
            writeln!(self.out, "# frame time what  => packet  path (hook[ifindex] time relative to the frame, trace clock)")?;
        }
        Ok(())
    }

    fn frame(&mut self, k: &Kernel, m: &FrameMatch, p: Option<&KPacket>) -> std::io::Result<()> {
        if self.quiet {
            return Ok(());
        }
        let t = m.ts_ns - self.offset_ns;
        if self.json {
            use super::json_out::{tagged, MATCH};
            let mut v = serde_json::to_value(m)?;
            v["what"] = what(&m.kind).into();
            if let Some(p) = p {
                v["path"] = path_json(k, &p.hops, t);
                if let Some(o) = k.owners.get(&k.sender_of(p, usize::MAX)) {
                    v["sender"] = serde_json::json!({"pid": o.pid, "comm": o.comm});
                }
            }
            let line = tagged(MATCH, "frame", v).map_err(std::io::Error::other)?;
            return writeln!(self.out, "{line}");
        }
        let secs = m.ts_ns as f64 / 1e9;
        match p {
            Some(p) => {
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
                    self.out,
                    "{} {secs:.6} {} => {:#x}  {}",
                    m.frame,
                    what(&m.kind),
                    p.id,
                    path.join(" > ")
                )
            }
            None => writeln!(
                self.out,
                "{} {secs:.6} {} => unmatched: {}",
                m.frame,
                what(&m.kind),
                m.reason.as_deref().unwrap_or("?")
            ),
        }
    }

    fn kernel(&mut self, k: &Kernel, u: &KernelUnmatched) -> std::io::Result<()> {
        if self.quiet {
            return Ok(());
        }
        if self.json {
            use super::json_out::{tagged, MATCH};
            let line = tagged(
                MATCH,
                "kernel_packet",
                serde_json::json!({"kernel_packet": format!("{:#x}", u.id), "reason": u.reason, "path": path_json(k, &u.hops, u.first_ts)}),
            )
            .map_err(std::io::Error::other)?;
            return writeln!(self.out, "{line}");
        }
        writeln!(
            self.out,
            "kernel {:#x} at {:.6} unmatched: {}",
            u.id,
            u.first_ts as f64 / 1e9,
            u.reason
        )
    }
}

fn path_json(k: &Kernel, hops: &[Hop], t: i64) -> serde_json::Value {
    serde_json::Value::Array(
        hops.iter()
            .map(|h| {
                serde_json::json!({"hook": k.kind_name(h.kind), "ifindex": h.ifindex, "ts_ns": h.ts_ns, "rel_ns": h.ts_ns - t})
            })
            .collect(),
    )
}

fn json_end(s: &Summary, h: Option<&[HandshakeRow; 3]>, out: &mut impl Write) -> Result<()> {
    use super::json_out::{tagged, MATCH};
    if let Some(h) = h {
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

fn text_end(s: &Summary, h: Option<&[HandshakeRow; 3]>, out: &mut impl Write) -> Result<()> {
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
        "# kernel packets on the capture's interfaces {:?}: {}, matched {} ({:.3} %)",
        s.capture_ifindexes, s.kernel_packets, s.kernel_matched, s.kernel_matched_pct
    )?;
    for (r, n) in &s.kernel_unmatched {
        writeln!(out, "#   unmatched kernel packets, {r}: {n}")?;
    }
    if let Some(h) = h {
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
