//! `magnet loadgen`: a workload whose truth is known, to trace (`magnet record --
//! magnet loadgen …`) and for the demo. Prints one JSON summary line on stdout.

use std::io::Write;
use std::net::Ipv4Addr;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::Args;
use magnet_loadgen::{parse_duration, Calls, LoadSpec, Peer};

const EXAMPLES: &str = "\
Examples:
  magnet loadgen --tcp 100x1000
      100 send() calls of 1000 bytes over loopback TCP
  magnet loadgen --tcp 100x1000 --udp 50x200 --port 7000
      then 50 sendto() calls of 200 bytes, both to port 7000
  magnet loadgen --tcp 50x10k --interval 20ms
      10 KiB every 20 ms
  magnet loadgen --netns blue --peer-addr 10.200.1.2 --tcp 10x64k
      receiver thread inside network namespace `blue`, sender here
  magnet loadgen --udp 1000000x16 --flood
      as many small datagrams as fast as possible (ring-buffer overflow tests)
  magnet loadgen --tcp 2x1k --tap lo
      and read every frame on lo through a packet socket, as tcpdump does (the
      kernel clones each frame for it); counts in the summary's \"tap\"

The summary (pid, per protocol: calls, bytes_sent, bytes_received, recv_calls,
local/remote address, thread ids, elapsed_us) is one JSON line on stdout.
Exit status: 0 when every datagram arrived (or --flood), 1 when UDP lost some,
2 on error (a short send is an error: the counts must stay exact).";

/// Generate traffic with exact, known counts.
#[derive(Args, Debug)]
#[command(after_help = EXAMPLES)]
pub struct LoadgenArgs {
    /// TCP: N send() calls of SIZE bytes on one connection (NxSIZE; k, m suffixes).
    #[arg(long, value_name = "NxSIZE", value_parser = parse_calls)]
    tcp: Option<Calls>,

    /// UDP: N sendto() calls of SIZE bytes (NxSIZE; k, m suffixes).
    #[arg(long, value_name = "NxSIZE", value_parser = parse_calls)]
    udp: Option<Calls>,

    /// Run the receiver in this network namespace (a name under /run/netns or a
    /// path such as /proc/PID/ns/net); the sender stays in the current one.
    #[arg(long, value_name = "NAME", requires = "peer_addr")]
    netns: Option<String>,

    /// Receiver address inside --netns.
    #[arg(long, value_name = "ADDR", requires = "netns")]
    peer_addr: Option<Ipv4Addr>,

    /// Receiver port for TCP and UDP; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    port: u16,

    /// Pause between calls (e.g. 20ms, 1s), on a fixed schedule.
    #[arg(long, value_name = "DURATION", value_parser = parse_dur)]
    interval: Option<std::time::Duration>,

    /// Stop sending after this long; the summary says how many calls were made.
    #[arg(long, value_name = "DURATION", value_parser = parse_dur)]
    duration: Option<std::time::Duration>,

    /// UDP as fast as possible; losses and failed sendto()s are counted, not fatal.
    #[arg(long, requires = "udp")]
    flood: bool,

    /// How long the UDP receiver waits for missing datagrams after the sender is done.
    #[arg(long, value_name = "DURATION", value_parser = parse_dur, default_value = "1s")]
    drain_timeout: std::time::Duration,

    /// Also read every frame on this interface through an AF_PACKET socket (as
    /// tcpdump does: the kernel hands it a clone of each frame); the summary's
    /// "tap" counts the IPv4 frames of the workload's ports, outgoing and
    /// incoming. Needs CAP_NET_RAW.
    #[arg(long, value_name = "IFACE")]
    tap: Option<String>,
}

/// `NxSIZE`: SIZE at most 1GiB (each call's buffer is allocated).
fn parse_calls(s: &str) -> Result<Calls, String> {
    let c: Calls = s
        .parse()
        .map_err(|e: magnet_loadgen::Error| e.to_string())?;
    if c.size > 1 << 30 {
        return Err(format!("{s}: SIZE is at most 1GiB"));
    }
    Ok(c)
}

fn parse_dur(s: &str) -> Result<std::time::Duration, String> {
    parse_duration(s).map_err(|e| e.to_string())
}

pub fn run(args: LoadgenArgs) -> anyhow::Result<ExitCode> {
    if args.tcp.is_none() && args.udp.is_none() {
        bail!("nothing to send: give --tcp NxSIZE, --udp NxSIZE or both");
    }
    let peer = match (args.netns, args.peer_addr) {
        (Some(netns), Some(addr)) => Peer::Netns { netns, addr },
        _ => Peer::Loopback,
    };
    let spec = LoadSpec {
        tcp: args.tcp,
        udp: args.udp,
        peer,
        port: args.port,
        interval: args.interval,
        duration: args.duration,
        flood: args.flood,
        drain_timeout: args.drain_timeout,
    };
    let tap = args.tap.as_deref().map(tap::Tap::open).transpose()?;
    let summary = magnet_loadgen::run(&spec).context("loadgen")?;
    let mut json = super::json_out::tagged(super::json_out::LOADGEN, "summary", &summary)?;
    if let Some(tap) = tap {
        let ports: Vec<u16> = [&summary.tcp, &summary.udp]
            .into_iter()
            .flatten()
            .map(|f| f.remote.port())
            .collect();
        json["tap"] = tap.finish(&ports)?;
    }
    let line = serde_json::to_string(&json)?;
    writeln!(std::io::stdout().lock(), "{line}")?;
    let lost = summary
        .udp
        .as_ref()
        .is_some_and(|u| !spec.flood && u.datagrams_received < u.calls);
    Ok(if lost {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `--tap`: an AF_PACKET socket on one interface, read by a thread until the
/// workload is done and the socket has been quiet for 200 ms.
mod tap {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::thread::JoinHandle;

    use anyhow::{bail, Context};

    /// One frame: outgoing or not, and its IPv4 TCP/UDP ports.
    type Frame = (bool, u16, u16);

    pub struct Tap {
        iface: String,
        stop: Arc<AtomicBool>,
        reader: JoinHandle<std::io::Result<Vec<Frame>>>,
    }

    impl Tap {
        pub fn open(iface: &str) -> anyhow::Result<Tap> {
            let name = std::ffi::CString::new(iface).context("--tap: interface name")?;
            // SAFETY: a NUL-terminated name.
            let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
            if ifindex == 0 {
                bail!("--tap {iface}: no such interface");
            }
            let proto = (libc::ETH_P_ALL as u16).to_be();
            // SAFETY: plain socket call; the result is checked.
            let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, i32::from(proto)) };
            if fd < 0 {
                let e = std::io::Error::last_os_error();
                bail!("--tap {iface}: packet socket: {e} (needs CAP_NET_RAW: run as root)");
            }
            // SAFETY: fd is a new socket that we own.
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            // SAFETY: zeroed sockaddr_ll is valid; the fields are set below.
            let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            sll.sll_family = libc::AF_PACKET as u16;
            sll.sll_protocol = proto;
            sll.sll_ifindex = ifindex as i32;
            let tv = libc::timeval {
                tv_sec: 0,
                tv_usec: 200_000,
            };
            // SAFETY: valid pointers to locals of the sizes given.
            let ok = unsafe {
                libc::bind(
                    fd.as_raw_fd(),
                    std::ptr::addr_of!(sll).cast(),
                    std::mem::size_of::<libc::sockaddr_ll>() as u32,
                ) == 0
                    && libc::setsockopt(
                        fd.as_raw_fd(),
                        libc::SOL_SOCKET,
                        libc::SO_RCVTIMEO,
                        std::ptr::addr_of!(tv).cast(),
                        std::mem::size_of::<libc::timeval>() as u32,
                    ) == 0
            };
            if !ok {
                let e = std::io::Error::last_os_error();
                bail!("--tap {iface}: binding the packet socket: {e}");
            }
            let stop = Arc::new(AtomicBool::new(false));
            let stop2 = stop.clone();
            let reader = std::thread::Builder::new()
                .name("tap".into())
                .spawn(move || read(&fd, &stop2))
                .context("--tap: starting the reader thread")?;
            Ok(Tap {
                iface: iface.to_string(),
                stop,
                reader,
            })
        }

        /// Stops reading; the counts of frames to or from one of `ports`.
        pub fn finish(self, ports: &[u16]) -> anyhow::Result<serde_json::Value> {
            self.stop.store(true, Ordering::Relaxed);
            let frames = match self.reader.join() {
                Ok(r) => r.with_context(|| format!("--tap {}: reading", self.iface))?,
                Err(_) => bail!("--tap {}: the reader thread panicked", self.iface),
            };
            let mine = |f: &&Frame| ports.contains(&f.1) || ports.contains(&f.2);
            let out = frames.iter().filter(mine).filter(|f| f.0).count();
            let all = frames.iter().filter(mine).count();
            Ok(serde_json::json!({
                "interface": self.iface,
                "frames": all,
                "outgoing": out,
                "incoming": all - out,
            }))
        }
    }

    fn read(fd: &OwnedFd, stop: &AtomicBool) -> std::io::Result<Vec<Frame>> {
        let mut frames = Vec::new();
        let mut buf = vec![0u8; 65536 + 128];
        loop {
            // SAFETY: zeroed sockaddr_ll is valid; recvfrom fills it.
            let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            let mut len = std::mem::size_of::<libc::sockaddr_ll>() as u32;
            // SAFETY: buf and sll are valid for the sizes given.
            let n = unsafe {
                libc::recvfrom(
                    fd.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    0,
                    std::ptr::addr_of_mut!(sll).cast(),
                    &mut len,
                )
            };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                match e.kind() {
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
                        if stop.load(Ordering::Relaxed) {
                            return Ok(frames);
                        }
                        continue;
                    }
                    std::io::ErrorKind::Interrupted => continue,
                    _ => return Err(e),
                }
            }
            let out = sll.sll_pkttype == libc::PACKET_OUTGOING;
            if let Some((sp, dp)) = ports_of(&buf[..n as usize]) {
                frames.push((out, sp, dp));
            }
        }
    }

    /// The ports of an Ethernet-framed IPv4 TCP or UDP packet.
    fn ports_of(f: &[u8]) -> Option<(u16, u16)> {
        if f.len() < 14 || f[12..14] != [0x08, 0x00] {
            return None;
        }
        let ip = &f[14..];
        let ihl = usize::from(*ip.first()? & 0x0f) * 4;
        if ip.len() < ihl + 4 || ihl < 20 || !matches!(ip[9], 6 | 17) {
            return None;
        }
        let l4 = &ip[ihl..];
        Some((
            u16::from_be_bytes([l4[0], l4[1]]),
            u16::from_be_bytes([l4[2], l4[3]]),
        ))
    }
}
