//! `magnet pcap`: a trace as pcapng for Wireshark and tshark.

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use magnet_wire::kernel::Kernel;

use super::trace_input;

/// Write a trace as pcapng: one interface per device, one frame per packet the
/// device layer saw, each with a comment Wireshark can filter on.
#[derive(Args)]
#[command(after_help = "Examples:
  magnet pcap run.mgt -o run.pcapng
  tshark -r run.pcapng -Y 'frame.comment contains \"pid=1234\"'

Each frame's comment: pid=, comm= (the process behind the socket), cookie=, dir=in|out,
if= (ifindex), pkt= (packet id), app= (the send whose bytes the frame carries, or the
recv that consumed them: ret= bytes, tid=, at= time relative to the frame), path= (every
hook that saw the packet, with its ifindex and time relative to the frame), and
synthesized= (what was made up).

The trace holds header fields, not frame bytes: each frame's Ethernet, IP and TCP/UDP
headers are synthesised from the fields the IP layer recorded (zero MAC addresses, no
payload; the original length is the device's). Interfaces are named by ifindex: the
trace records neither device names nor the network namespace of a device event.")]
pub struct PcapArgs {
    /// Trace to read (magnet record -o …)
    pub trace: PathBuf,
    /// pcapng file to write
    #[arg(short, long, default_value = "magnet.pcapng")]
    pub output: PathBuf,
    /// No summary on standard error
    #[arg(short, long)]
    pub quiet: bool,
}

pub fn run(a: PcapArgs) -> Result<ExitCode> {
    let mut rd = trace_input::open(&a.trace)?;
    let k = Kernel::load(&mut rd).with_context(|| format!("{}", a.trace.display()))?;
    for w in &k.warnings {
        let line = format!("{}: {w}", a.trace.display());
        eprintln!("magnet: warning: {}", magnet_common::text::escape(&line));
    }
    let f =
        File::create(&a.output).with_context(|| format!("cannot create {}", a.output.display()))?;
    let st = magnet_wire::export::write_pcapng(&k, BufWriter::with_capacity(1 << 20, f))
        .with_context(|| format!("writing {}", a.output.display()))?;
    if !a.quiet {
        let ifs: Vec<String> = st
            .interfaces
            .iter()
            .map(|(n, c)| format!("{} {c}", magnet_common::text::escape(n)))
            .collect();
        eprintln!(
            "magnet: {} frames to {} ({}); {} with the bytes the trace kept (--snaplen), {} with IP/transport headers synthesised from the trace's fields, {} link header only; {} name their process",
            st.frames,
            a.output.display(),
            ifs.join(", "),
            st.captured,
            st.synthesized_ip,
            st.link_only,
            st.with_process
        );
    }
    Ok(trace_input::exit_code(&rd))
}
