//! `magnet packets`: each packet's path through the layers (and functions) it
//! went through, with the time between steps and in the kernel; the thesis's
//! Table 6-6 for TCP three-way handshakes.

use std::io::{BufWriter, Write};
use std::net::IpAddr;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use magnet_trace::{ClockMap, ReorderBuffer};
use magnet_wire::kernel::{Assembler, Window};
use magnet_wire::paths::{handshakes, Filter, HandshakeFilter, PacketPath, Paths};

use super::trace_input;

const AFTER_HELP: &str = "\
A packet is the one `magnet match` and `magnet pcap` see: what the recorder gave one
packet id, from its first sighting (LOCAL_OUT on transmit, the driver on receive) to
its last, in time order; an id the kernel reused is two packets, and a GSO segment
carries its parent's fields (gso_parent). Packets are read with a bounded window
(docs/wire.md, \"Memory\": about 0.5 GB at most however long the trace, 1.1 GB
with record --snaplen 2048): a packet whose parts are more than 2 s apart is said on standard
error and shown in parts. Each step shows the
time since the previous step; 'kernel' is last minus first. The footprint (IPv4
src, dst, id, protocol; IPv6 src, dst, next header; ports, TCP flags) is what ties
the packet to a capture. Function events (record --funcs) appear as steps too.

Examples:
  magnet packets run.mgt
  magnet packets run.mgt --handshake
  magnet packets run.mgt --proto tcp --port 7311 --json
  magnet packets run.mgt --pkt 0x1a2b";

#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct PacketsArgs {
    #[command(flatten)]
    input: super::trace_input::TraceArg,
    /// Only this packet id (decimal or 0x hex).
    #[arg(long, value_name = "ID", value_parser = parse_id)]
    pkt: Option<u64>,
    /// Only packets from this IP address.
    #[arg(long)]
    src: Option<IpAddr>,
    /// Only packets to this IP address.
    #[arg(long)]
    dst: Option<IpAddr>,
    /// Only packets with this IPv4 identification.
    #[arg(long)]
    ip_id: Option<u16>,
    /// Only this protocol: tcp, udp, icmp or a number.
    #[arg(long, value_parser = parse_proto)]
    proto: Option<u8>,
    /// Only packets with this source or destination port.
    #[arg(long)]
    port: Option<u16>,
    /// Print the thesis's Table 6-6 for every TCP three-way handshake instead.
    #[arg(long)]
    handshake: bool,
    /// One JSON document instead of text.
    #[arg(long)]
    json: bool,
    /// Records held back to sort by time.
    #[arg(long, default_value_t = 65536)]
    window: usize,
}

fn parse_id(s: &str) -> Result<u64, String> {
    let r = match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.map_err(|e| format!("{s:?}: {e}"))
}

fn parse_proto(s: &str) -> Result<u8, String> {
    match s {
        "tcp" => Ok(6),
        "udp" => Ok(17),
        "icmp" => Ok(1),
        "icmpv6" => Ok(58),
        n => n
            .parse()
            .map_err(|_| format!("{n:?}: tcp, udp, icmp, icmpv6 or a number")),
    }
}

/// Wall-clock time of day (UTC) as HH:MM:SS.nnnnnnnnn.
fn wall(clock: &ClockMap, ts: u64) -> String {
    let ns = clock.to_realtime(ts).max(0) as u128;
    let day = (ns / 1_000_000_000) % 86_400;
    format!(
        "{:02}:{:02}:{:02}.{:09}",
        day / 3600,
        day / 60 % 60,
        day % 60,
        ns % 1_000_000_000
    )
}

fn us(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1000.0)
}

pub fn run(args: PacketsArgs) -> Result<ExitCode> {
    let file = args.input.path();
    let mut reader = args.input.open()?;
    let header = reader.header().clone();
    let path = file.clone();
    let filter = Filter {
        pkt: args.pkt,
        src: args.src,
        dst: args.dst,
        ip_id: args.ip_id,
        protocol: args.proto,
        port: args.port,
    };
    let names = Paths::new(&header);
    let mut asm = Assembler::new(&header, Window::DEFAULT, false);
    let stdout = std::io::stdout();
    // Process and interface names from the trace: escaped in text.
    let mut out = magnet_common::text::Escaping::when(!args.json, BufWriter::new(stdout.lock()));
    // Packets are written as the window lets them go; only the handshake table
    // keeps the packets it may need (SYNs, SYN-ACKs, pure ACKs).
    let mut kept: Vec<PacketPath> = Vec::new();
    let mut keep = HandshakeFilter::default();
    let mut written = 0u64;
    let mut emit = |asm: &mut Assembler, out: &mut dyn Write| -> Result<()> {
        while let Some(p) = asm.pop() {
            let p = names.path(&p);
            if !filter.keeps(&p) {
                continue;
            }
            if args.handshake {
                if keep.keeps(&p) {
                    kept.push(p);
                }
            } else if args.json {
                out.write_all(if written == 0 {
                    br#"{"schema":""#
                } else {
                    b","
                })?;
                if written == 0 {
                    out.write_all(super::json_out::PACKETS.as_bytes())?;
                    out.write_all(br#"","packets":["#)?;
                }
                serde_json::to_writer(&mut *out, &p).context("writing JSON")?;
                written += 1;
            } else {
                text_packet(out, &header.clock, &p)?;
            }
        }
        Ok(())
    };
    let mut ordered = ReorderBuffer::new(&mut reader, args.window);
    while let Some(item) = ordered.next() {
        match item {
            Ok(rec) => {
                asm.push(&rec);
                emit(&mut asm, &mut out)?;
            }
            Err(e) => trace_input::warn(&path, &e),
        }
    }
    drop(ordered);
    asm.finish();
    emit(&mut asm, &mut out)?;
    let code = trace_input::exit_code(&reader);
    drop(reader);
    let ctx = asm.into_context();
    for w in ctx
        .warnings
        .iter()
        .filter(|w| w.contains("further apart than the window"))
    {
        let line = format!("{}: {w}", path.display());
        eprintln!("magnet: warning: {}", magnet_common::text::escape(&line));
    }
    if args.handshake {
        write_handshakes(&mut out, &kept, &header.clock, &file, args.json)?;
        out.flush()?;
        return Ok(code);
    }
    if args.json {
        if written == 0 {
            write!(
                out,
                r#"{{"schema":"{}","packets":["#,
                super::json_out::PACKETS
            )?;
        }
        writeln!(out, "]}}")?;
    }
    out.flush()?;
    Ok(code)
}

/// The handshake table (`--handshake`): per TCP three-way handshake found
/// in `kept`, one column per packet; in JSON, the handshakes' rows.
fn write_handshakes(
    out: &mut dyn Write,
    kept: &[PacketPath],
    clock: &ClockMap,
    file: &std::path::Path,
    json: bool,
) -> Result<()> {
    let hs = handshakes(kept);
    if json {
        let v = super::json_out::tagged(super::json_out::HANDSHAKES, "handshakes", &hs)?;
        serde_json::to_writer_pretty(&mut *out, &v)?;
        writeln!(out)?;
    } else if hs.is_empty() {
        writeln!(
            out,
            "no TCP three-way handshake in {} (need ip events: --layers ip, and the SYN)",
            file.display()
        )?;
    }
    for h in hs.iter().filter(|_| !json) {
        let s = &h[0].footprint;
        writeln!(
            out,
            "handshake {}:{} -> {}:{}",
            s.saddr, s.sport, s.daddr, s.dport
        )?;
        let cell = |f: &dyn Fn(&magnet_wire::paths::HandshakeRow) -> String| {
            h.iter()
                .map(|r| format!("{:>20}", f(r)))
                .collect::<String>()
        };
        writeln!(out, "  {:<18}{}", "", cell(&|r| r.role.to_string()))?;
        writeln!(
            out,
            "  {:<18}{}",
            "packet id",
            cell(&|r| format!("{:#x}", r.pkt_id))
        )?;
        writeln!(
            out,
            "  {:<18}{}",
            "source IP",
            cell(&|r| r.footprint.saddr.to_string())
        )?;
        writeln!(
            out,
            "  {:<18}{}",
            "destination IP",
            cell(&|r| r.footprint.daddr.to_string())
        )?;
        writeln!(
            out,
            "  {:<18}{}",
            "identification",
            cell(&|r| r.footprint.ip_id.to_string())
        )?;
        writeln!(
            out,
            "  {:<18}{}",
            "protocol",
            cell(&|r| r.footprint.protocol.to_string())
        )?;
        writeln!(
            out,
            "  {:<18}{}",
            "entry time (UTC)",
            cell(&|r| wall(clock, r.entry_ns))
        )?;
        writeln!(
            out,
            "  {:<18}{}",
            "exit time (UTC)",
            cell(&|r| wall(clock, r.exit_ns))
        )?;
        writeln!(out, "  {:<18}{}", "events", cell(&|r| r.events.to_string()))?;
        writeln!(
            out,
            "  {:<18}{}",
            "functions",
            cell(&|r| r.functions.to_string())
        )?;
        writeln!(
            out,
            "  {:<18}{}",
            "time in kernel us",
            cell(&|r| us(r.kernel_ns))
        )?;
    }
    Ok(())
}

/// One packet and its steps, as text.
fn text_packet(out: &mut dyn Write, clock: &ClockMap, p: &PacketPath) -> Result<()> {
    {
        let fp = match &p.footprint {
            Some(f) if f.is_tcp() => format!(
                "{}:{} > {}:{} id {} proto {} [{}] seq {} ack {}",
                f.saddr,
                f.sport,
                f.daddr,
                f.dport,
                f.ip_id,
                f.protocol,
                f.flags_text(),
                f.seq,
                f.ack
            ),
            Some(f) => format!(
                "{}:{} > {}:{} id {} proto {}",
                f.saddr, f.sport, f.daddr, f.dport, f.ip_id, f.protocol
            ),
            None => "no IP footprint".to_string(),
        };
        writeln!(
            out,
            "packet {:#x}  {}  kernel {} us, {} steps, {} functions",
            p.pkt_id,
            fp,
            us(p.kernel_ns),
            p.steps.len(),
            p.functions
        )?;
        for s in &p.steps {
            writeln!(
                out,
                "  {}  +{:>10} us  cpu{:<3} {:<6} {:<16} {}",
                wall(clock, s.ts_ns),
                us(s.delta_ns),
                s.cpu,
                s.layer,
                s.kind,
                match s.in_ns {
                    Some(n) => format!("{}  (in {} us)", s.what, us(n)),
                    None => s.what.clone(),
                }
            )?;
        }
    }
    Ok(())
}
