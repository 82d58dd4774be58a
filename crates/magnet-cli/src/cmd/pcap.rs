//! `magnet pcap`: a trace as pcapng for Wireshark and tshark.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use magnet_wire::export::{ExportStats, PcapOptions, PcapWriter, Select};
use magnet_wire::kernel::{Assembler, Kernel, Window};

use super::trace_input;

/// Write a trace as pcapng: each packet once where it first met a device (or the
/// frames of the interfaces named by -i), each with a comment Wireshark can filter on.
#[derive(Args)]
#[command(after_help = "Examples:
  magnet pcap run.mgt -o run.pcapng
  magnet pcap run.mgt -o - | tshark -r - -q -z expert
  magnet pcap run.mgt -i veth1 -o veth1.pcapng     (what tcpdump -i veth1 saw)
  tshark -r run.pcapng -Y 'frame.comment contains \"pid=1234\"'

Which frames: by default each packet once, where it first met a device (the sender's
transmit; on loopback the receive, the copy tcpdump -i lo shows), so TCP analysis sees
every segment once. -i NAME keeps what a capture on those interfaces would have seen;
--each-device writes every device sighting (a packet that crossed a veth pair is then
two frames, one per end, and Wireshark takes the second for a retransmission).

Each frame's comment: pid=, comm= (the process behind the socket), cookie=, dir=in|out|lo,
if= (ifindex), pkt= (packet id), app= (the application calls whose bytes the frame
carries, e.g. send#3(16384): the socket's third send, which returned 16384; frames
without payload name none), path= (every hook that saw the packet, with its ifindex and
time relative to the frame), and snap= (bytes recorded) or synthesized= (what was made up).

A trace recorded with --snaplen N holds the first N bytes of each frame: those are
written as they are. Otherwise each frame's Ethernet, IP and TCP/UDP headers are
synthesised from the fields the IP layer recorded (zero MAC addresses, no payload, TCP
options as NOPs; the original length is the device's). Interfaces are named as the
recording found them (ifindexN for a device that came later).")]
pub struct PcapArgs {
    #[command(flatten)]
    pub input: super::trace_input::TraceArg,
    /// pcapng file to write ('-': standard output)
    #[arg(short, long, default_value = "magnet.pcapng")]
    pub output: PathBuf,
    /// Only frames on this interface, as tcpdump -i NAME would show them: a name
    /// or an ifindex when one device has it, else NAME@NETNS (the namespace's
    /// inode); repeat for more
    #[arg(short = 'i', long = "interface", value_name = "NAME")]
    pub interfaces: Vec<String>,
    /// Every device sighting a frame (a packet crossing a veth pair twice)
    #[arg(long, conflicts_with = "interfaces")]
    pub each_device: bool,
}

pub fn run(a: PcapArgs) -> Result<ExitCode> {
    let trace = a.input.path();
    let mut rd = a.input.open()?;
    let opts = PcapOptions { select: select(&a) };
    if let Select::Interfaces(names) = &opts.select {
        // One line naming the candidates, before the output file exists.
        magnet_wire::ifaces::resolve(&rd.header().interfaces, names)
            .map_err(|e| anyhow::anyhow!("{}: {e}", trace.display()))?;
    }
    let (sink, shown) = open_output(&a.output)?;
    // Streamed: packets leave the model's window in order of first sighting, their
    // frames wait only for earlier ones (docs/wire.md, "Memory").
    let window = Window::DEFAULT;
    let mut asm = Assembler::new(rd.header(), window, true);
    let mut pw = PcapWriter::new(&asm.k, BufWriter::with_capacity(1 << 20, sink), &opts)
        .with_context(|| format!("writing {shown}"))?;
    let mut since_forget = 0u64;
    let mut drain = |asm: &mut Assembler, pw: &mut PcapWriter<_>| -> Result<()> {
        while let Some(p) = asm.pop() {
            let first = p.first_ts();
            pw.push(&asm.k, p)
                .with_context(|| format!("writing {shown}"))?;
            since_forget += 1;
            if since_forget >= 1 << 16 {
                // Calls two windows behind the frames written can name no frame to come.
                asm.k
                    .forget_calls_before(first.saturating_sub(window.ns.saturating_mul(2)));
                since_forget = 0;
            }
        }
        Ok(())
    };
    while let Some(r) = rd.next_record() {
        match r {
            Ok(r) => asm.push(&r.view()),
            Err(e) => asm
                .error(e)
                .with_context(|| format!("{}", trace.display()))?,
        }
        drain(&mut asm, &mut pw)?;
    }
    asm.finish();
    drain(&mut asm, &mut pw)?;
    let st = pw
        .finish(&asm.k)
        .with_context(|| format!("writing {shown}"))?;
    let k = asm.into_context();
    warn(&trace, &k, &st, window);
    if let Select::Interfaces(names) = &opts.select {
        if st.frames == 0 {
            return Err(no_frames(names, &trace, &k));
        }
    }
    trace_input::clear_progress();
    if !a.input.quiet {
        say_written(&st, &shown);
    }
    Ok(trace_input::exit_code(&rd))
}

/// Which device sightings become frames, from -i and --each-device.
fn select(a: &PcapArgs) -> Select {
    if a.each_device {
        Select::EachDevice
    } else if !a.interfaces.is_empty() {
        Select::Interfaces(a.interfaces.clone())
    } else {
        Select::Once
    }
}

/// The file to write ('-': standard output) and its name for messages.
fn open_output(output: &Path) -> Result<(Box<dyn Write>, String)> {
    if output.as_os_str() == "-" {
        Ok((Box::new(std::io::stdout().lock()), "standard output".into()))
    } else {
        let f = std::fs::File::create(output)
            .with_context(|| format!("cannot create {}", output.display()))?;
        Ok((Box::new(f), output.display().to_string()))
    }
}

/// The model's warnings, and the frames whose calls were too far back to name.
fn warn(trace: &Path, k: &Kernel, st: &ExportStats, window: Window) {
    for w in &k.warnings {
        let line = format!("{}: {w}", trace.display());
        eprintln!("magnet: warning: {}", magnet_common::text::escape(&line));
    }
    if st.calls_beyond_window > 0 {
        eprintln!(
            "magnet: warning: {}: {} frames carry bytes of application calls more than {} s before them: those calls are not named",
            trace.display(),
            st.calls_beyond_window,
            2 * window.ns / 1_000_000_000
        );
    }
}

/// -i named interfaces that carried no frame: the error, with those the
/// trace does know.
fn no_frames(names: &[String], trace: &Path, k: &Kernel) -> anyhow::Error {
    let known: Vec<String> = magnet_wire::ifaces::known(k.header.as_ref())
        .iter()
        .map(magnet_wire::ifaces::qualified)
        .collect();
    let known = if known.is_empty() {
        "the trace's header lists no interfaces".to_string()
    } else {
        format!("the trace knows {}", known.join(", "))
    };
    anyhow::anyhow!(
        "-i {}: no frames on such an interface in {} ({known})",
        names.join(","),
        trace.display(),
    )
}

/// The one line that says what was written.
fn say_written(st: &ExportStats, shown: &str) {
    let ifs: Vec<String> = st
        .interfaces
        .iter()
        .map(|(n, c)| format!("{} {c}", magnet_common::text::escape(n)))
        .collect();
    eprintln!(
        "magnet: {} frames to {shown} ({}); {} with the bytes the trace kept (--snaplen), {} with IP/transport headers synthesised from the trace's fields, {} link header only; {} name their process",
        st.frames,
        ifs.join(", "),
        st.captured,
        st.synthesized_ip,
        st.link_only,
        st.with_process
    );
}
