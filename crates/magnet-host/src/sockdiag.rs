//! The host's IPv4/IPv6 TCP and UDP sockets as the kernel's sock_diag
//! netlink interface lists them (what `ss` reads): each socket's addresses,
//! state, inode and cookie, in this thread's network namespace or in another
//! one ([`inet_sockets_in`]), and the socket inodes a process holds
//! ([`socket_inodes`]). A process's socket file descriptor names an inode;
//! sock_diag turns the inode into the socket's cookie, the number BPF
//! programs know the socket by (`bpf_get_socket_cookie`).
//!
//! The same dump asked for `INET_DIAG_INFO` (`struct tcp_info`) and
//! `INET_DIAG_SKMEMINFO` gives each TCP connection's counters the way
//! `ss -ti` shows them, by cookie ([`tcp_counters`], [`tcp_counters_in`]).
//!
//! Users: the recorder snapshots the sockets of the processes it traces when
//! it attaches to programs already running (magnet-record,
//! `recorder/snapshot.rs`); magnetd reads TCP counters here when no BPF
//! program may read `tcp_sock` (the `iter/bpf_sk_storage_map` iterator
//! refused or denied; magnet-daemon, `summaries/`).
//!
//! A dump sees one network namespace, the one its netlink socket was made
//! in: [`in_netns`] runs a reader on a short-lived thread that enters
//! another namespace, so the caller's own namespace never changes.

use std::collections::HashMap;
use std::fs::File;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_DUMP, NLM_F_REQUEST,
};
use netlink_packet_sock_diag::constants::{AF_INET, AF_INET6, IPPROTO_TCP, IPPROTO_UDP};
use netlink_packet_sock_diag::inet::{
    nlas::Nla, ExtensionFlags, InetRequest, InetResponse, SocketId, StateFlags,
};
use netlink_packet_sock_diag::SockDiagMessage;
use netlink_sys::{protocols::NETLINK_SOCK_DIAG, Socket, SocketAddr as NlAddr};

/// One socket as sock_diag reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InetSocket {
    /// `libc::AF_INET` or `libc::AF_INET6`.
    pub family: u8,
    /// `libc::IPPROTO_TCP` or `libc::IPPROTO_UDP`.
    pub protocol: u8,
    /// The TCP state (`TCP_ESTABLISHED` = 1, …, `TCP_LISTEN` = 10); UDP
    /// sockets report 7 (unconnected) or 1 (connected).
    pub state: u8,
    pub local: SocketAddr,
    /// Port 0 and the unspecified address for listening and unconnected sockets.
    pub remote: SocketAddr,
    /// The socket's inode: `/proc/PID/fd/N` links to `socket:[inode]`.
    pub inode: u32,
    /// The socket cookie (`SO_COOKIE`, `bpf_get_socket_cookie`).
    pub cookie: u64,
    /// The TCP counters, where the dump asked for them ([`tcp_counters`])
    /// and the kernel sent a `tcp_info` (not for time-wait sockets).
    pub tcp: Option<TcpCounters>,
}

/// One TCP socket's counters, as `ss -ti` shows them: fields of `struct
/// tcp_info` (`INET_DIAG_INFO`) and of the socket's memory
/// (`INET_DIAG_SKMEMINFO`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpCounters {
    pub bytes_sent: u64,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub segs_out: u32,
    pub segs_in: u32,
    pub data_segs_out: u32,
    pub data_segs_in: u32,
    pub total_retrans: u32,
    /// Smoothed RTT in µs (tcpi_rtt: srtt_us >> 3, as magnetd's BPF copy).
    pub srtt_us: u32,
    pub snd_cwnd: u32,
    /// sk_wmem_queued (SK_MEMINFO_WMEM_QUEUED).
    pub wmem_queued: u32,
}

impl TcpCounters {
    /// The fields of a `struct tcp_info` (`linux/tcp.h`), read by offset:
    /// the structure grows at its end from kernel to kernel, so a field past
    /// the attribute's length (an older kernel) reads as 0.
    pub fn from_tcp_info(info: &[u8], wmem_queued: u32) -> TcpCounters {
        let u32_at = |o: usize| {
            info.get(o..o + 4)
                .map_or(0, |s| u32::from_ne_bytes([s[0], s[1], s[2], s[3]]))
        };
        let u64_at = |o: usize| {
            info.get(o..o + 8)
                .and_then(|s| <[u8; 8]>::try_from(s).ok())
                .map_or(0, u64::from_ne_bytes)
        };
        TcpCounters {
            srtt_us: u32_at(68),
            snd_cwnd: u32_at(80),
            total_retrans: u32_at(100),
            bytes_acked: u64_at(120),
            bytes_received: u64_at(128),
            segs_out: u32_at(136),
            segs_in: u32_at(140),
            data_segs_in: u32_at(152),
            data_segs_out: u32_at(156),
            bytes_sent: u64_at(200),
            wmem_queued,
        }
    }
}

/// What went wrong reading sockets, with where.
#[derive(Debug, thiserror::Error)]
pub enum SockDiagError {
    #[error("sock_diag: {what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    #[error("sock_diag: {what}: {why}")]
    Reply { what: String, why: String },
    #[error("network namespace {path}: {source}")]
    Netns {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl SockDiagError {
    /// The kernel has no sock_diag handler for the family or protocol asked
    /// (inet_diag, tcp_diag or udp_diag built as modules and not loaded):
    /// its answer is ENOENT.
    pub fn unsupported(&self) -> bool {
        matches!(self, SockDiagError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }
}

const PROTOCOLS: [(u8, &str); 2] = [(IPPROTO_TCP, "TCP"), (IPPROTO_UDP, "UDP")];
const FAMILIES: [(u8, &str); 2] = [(AF_INET, "IPv4"), (AF_INET6, "IPv6")];

/// TCP states whose sockets carry a connection's counters: all but LISTEN
/// and TIME_WAIT (NEW_SYN_RECV, a request socket, is never asked for).
fn connection_states() -> StateFlags {
    StateFlags::all() - StateFlags::LISTEN - StateFlags::TIME_WAIT
}

/// Every IPv4 and IPv6 TCP and UDP socket of this thread's network
/// namespace, in every state.
pub fn inet_sockets() -> Result<Vec<InetSocket>, SockDiagError> {
    let mut out = Vec::new();
    for (protocol, pname) in PROTOCOLS {
        for (family, fname) in FAMILIES {
            let request = Request {
                family,
                protocol,
                extensions: ExtensionFlags::empty(),
                states: StateFlags::all(),
            };
            dump(&request, &format!("{fname} {pname} dump"), &mut |s| {
                out.push(s)
            })?;
        }
    }
    Ok(out)
}

/// The same in the network namespace at `netns` (`/proc/PID/ns/net`).
pub fn inet_sockets_in(netns: &Path) -> Result<Vec<InetSocket>, SockDiagError> {
    in_netns(netns, inet_sockets)
}

/// The counters of every IPv4 and IPv6 TCP connection of this thread's
/// network namespace (every state but LISTEN, TIME_WAIT and NEW_SYN_RECV),
/// by socket cookie: `ss -ti` for magnetd.
pub fn tcp_counters() -> Result<HashMap<u64, TcpCounters>, SockDiagError> {
    let mut out = HashMap::new();
    for (family, fname) in FAMILIES {
        let request = Request {
            family,
            protocol: IPPROTO_TCP,
            extensions: ExtensionFlags::INFO | ExtensionFlags::SKMEMINFO,
            states: connection_states(),
        };
        dump(&request, &format!("{fname} TCP counters dump"), &mut |s| {
            if let Some(c) = s.tcp {
                out.insert(s.cookie, c);
            }
        })?;
    }
    Ok(out)
}

/// The same in the network namespace at `netns` (`/proc/PID/ns/net` or a
/// bind mount of one under /run/netns).
pub fn tcp_counters_in(netns: &Path) -> Result<HashMap<u64, TcpCounters>, SockDiagError> {
    in_netns(netns, tcp_counters)
}

/// Runs `read` on a thread of its own that enters the network namespace at
/// `netns` and ends there: the caller's namespace is left as it was.
pub fn in_netns<T: Send>(
    netns: &Path,
    read: impl FnOnce() -> Result<T, SockDiagError> + Send,
) -> Result<T, SockDiagError> {
    let ns = File::open(netns).map_err(|source| SockDiagError::Netns {
        path: netns.to_path_buf(),
        source,
    })?;
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                nix::sched::setns(ns.as_fd(), nix::sched::CloneFlags::CLONE_NEWNET).map_err(
                    |e| SockDiagError::Netns {
                        path: netns.to_path_buf(),
                        source: e.into(),
                    },
                )?;
                read()
            })
            .join()
            .unwrap_or_else(|_| {
                Err(SockDiagError::Reply {
                    what: format!("reading sockets in {}", netns.display()),
                    why: "the reading thread panicked".into(),
                })
            })
    })
}

/// The inode of a network namespace file (`/proc/PID/ns/net`, a bind mount
/// under /run/netns): the number traces and BPF maps name the namespace by.
pub fn netns_inode(path: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| m.ino())
}

/// A path to the network namespace with inode `ino`: a process's
/// (`hint_pids` first, then every process's), or a bind mount under
/// /run/netns (a namespace no process is in).
pub fn find_netns(ino: u64, hint_pids: &[u32]) -> Option<PathBuf> {
    let try_path = |p: PathBuf| (netns_inode(&p) == Some(ino)).then_some(p);
    for pid in hint_pids.iter().filter(|&&p| p != 0) {
        if let Some(p) = try_path(format!("/proc/{pid}/ns/net").into()) {
            return Some(p);
        }
    }
    if let Ok(rd) = std::fs::read_dir("/run/netns") {
        for e in rd.flatten() {
            if let Some(p) = try_path(e.path()) {
                return Some(p);
            }
        }
    }
    let rd = std::fs::read_dir("/proc").ok()?;
    rd.flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .find_map(|e| try_path(e.path().join("ns/net")))
}

/// The inodes of the sockets among process `pid`'s file descriptors (any
/// family: match them against [`InetSocket::inode`]). Descriptors that close
/// while they are read are skipped.
pub fn socket_inodes(pid: u32) -> std::io::Result<Vec<u64>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(format!("/proc/{pid}/fd"))?.flatten() {
        let Ok(target) = std::fs::read_link(e.path()) else {
            continue;
        };
        if let Some(inode) = parse_socket_link(&target.to_string_lossy()) {
            out.push(inode);
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// `socket:[12345]` → 12345.
pub fn parse_socket_link(link: &str) -> Option<u64> {
    link.strip_prefix("socket:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

/// The cookie as sock_diag carries it: two native-endian 32-bit words, low first.
pub fn cookie_of(id: &[u8; 8]) -> u64 {
    let lo = u32::from_ne_bytes([id[0], id[1], id[2], id[3]]) as u64;
    let hi = u32::from_ne_bytes([id[4], id[5], id[6], id[7]]) as u64;
    lo | (hi << 32)
}

/// What one dump asks the kernel for.
struct Request {
    family: u8,
    protocol: u8,
    extensions: ExtensionFlags,
    states: StateFlags,
}

/// Sends one dump request on a netlink socket of this thread's namespace
/// and hands each socket of the answer to `each`.
fn dump(
    request: &Request,
    what: &str,
    each: &mut dyn FnMut(InetSocket),
) -> Result<(), SockDiagError> {
    let io = |source: std::io::Error| SockDiagError::Io {
        what: what.to_string(),
        source,
    };
    let mut socket = Socket::new(NETLINK_SOCK_DIAG).map_err(io)?;
    socket.bind_auto().map_err(io)?;
    socket.connect(&NlAddr::new(0, 0)).map_err(io)?;

    let mut hdr = NetlinkHeader::default();
    hdr.flags = NLM_F_REQUEST | NLM_F_DUMP;
    let mut req = NetlinkMessage::new(
        hdr,
        SockDiagMessage::InetRequest(InetRequest {
            family: request.family,
            protocol: request.protocol,
            extensions: request.extensions.clone(),
            states: request.states.clone(),
            socket_id: if request.family == AF_INET {
                SocketId::new_v4()
            } else {
                SocketId::new_v6()
            },
        })
        .into(),
    );
    req.finalize();
    let mut buf = vec![0u8; req.buffer_len()];
    req.serialize(&mut buf[..]);
    socket.send(&buf, 0).map_err(io)?;

    let mut rx: Vec<u8> = Vec::with_capacity(64 << 10);
    loop {
        rx.clear();
        let n = match socket.recv(&mut rx, 0) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io(e)),
        };
        if n == 0 {
            return Err(SockDiagError::Reply {
                what: what.to_string(),
                why: "the kernel closed the dump before its end".into(),
            });
        }
        if parse_reply(&rx[..n], request.protocol, what, each)? {
            return Ok(());
        }
    }
}

/// Reads one buffer of a dump's answer (netlink messages), handing each
/// socket to `each`. Ok(true) at the dump's end (NLMSG_DONE); the kernel's
/// error answer, or a message that does not parse, is an error naming the
/// byte it is at.
fn parse_reply(
    rx: &[u8],
    protocol: u8,
    what: &str,
    each: &mut dyn FnMut(InetSocket),
) -> Result<bool, SockDiagError> {
    let bad = |why: String| SockDiagError::Reply {
        what: what.to_string(),
        why,
    };
    let n = rx.len();
    let mut off = 0;
    while off < n {
        // Every length is checked here first: a message the crate would
        // read past the buffer, or one of length 0 that would never end
        // this loop, is damage named by where it is.
        let len = rx
            .get(off..off + 4)
            .map_or(0, |s| u32::from_ne_bytes([s[0], s[1], s[2], s[3]]) as usize);
        if len < 16 || len > n - off {
            return Err(bad(format!(
                "a netlink message of {len} bytes at byte {off} of a {n}-byte reply"
            )));
        }
        let msg = <NetlinkMessage<SockDiagMessage>>::deserialize(&rx[off..off + len])
            .map_err(|e| bad(format!("message at byte {off} of a {n}-byte reply: {e}")))?;
        match msg.payload {
            NetlinkPayload::Done(_) => return Ok(true),
            NetlinkPayload::Error(e) if e.code.is_some() => {
                return Err(SockDiagError::Io {
                    what: what.to_string(),
                    source: e.to_io(),
                })
            }
            NetlinkPayload::InnerMessage(SockDiagMessage::InetResponse(r)) => {
                each(socket_of(&r, protocol))
            }
            _ => {}
        }
        off += len.next_multiple_of(4);
    }
    Ok(false)
}

fn socket_of(r: &InetResponse, protocol: u8) -> InetSocket {
    let h = &r.header;
    let id = &h.socket_id;
    let mut info = None;
    let mut wmem_queued = 0;
    for nla in &r.nlas {
        match nla {
            Nla::TcpInfo(bytes) => info = Some(bytes.as_slice()),
            Nla::MemInfo(m) => wmem_queued = m.send_queue,
            _ => {}
        }
    }
    InetSocket {
        family: h.family,
        protocol,
        state: h.state,
        local: SocketAddr::new(id.source_address, id.source_port),
        remote: SocketAddr::new(id.destination_address, id.destination_port),
        inode: h.inode,
        cookie: cookie_of(&id.cookie),
        tcp: info.map(|i| TcpCounters::from_tcp_info(i, wmem_queued)),
    }
}

/// An address as 16 bytes, IPv4 as IPv4-mapped IPv6 (`::ffff:a.b.c.d`), the
/// form magnet's traces and BPF maps use.
pub fn addr16(a: IpAddr) -> [u8; 16] {
    match a {
        IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
        IpAddr::V6(v6) => v6.octets(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    /// The kernel's ENOENT answer (no handler loaded) is "unsupported";
    /// another error, or a reply that does not parse, is not.
    #[test]
    fn a_missing_handler_is_told_from_other_errors() {
        let io = |errno| SockDiagError::Io {
            what: "IPv4 TCP dump".into(),
            source: std::io::Error::from_raw_os_error(errno),
        };
        assert!(io(libc::ENOENT).unsupported());
        assert!(!io(libc::EPERM).unsupported());
        let bad = SockDiagError::Reply {
            what: "IPv4 TCP dump".into(),
            why: "a netlink message of 3 bytes".into(),
        };
        assert!(!bad.unsupported());
    }

    #[test]
    fn addresses_are_ipv4_mapped() {
        let a = addr16("10.1.2.3".parse().unwrap());
        assert_eq!(&a[10..], &[0xff, 0xff, 10, 1, 2, 3]);
        assert_eq!(addr16("::1".parse().unwrap())[15], 1);
    }

    #[test]
    fn socket_links_parse() {
        assert_eq!(parse_socket_link("socket:[4026532]"), Some(4026532));
        assert_eq!(parse_socket_link("pipe:[12]"), None);
        assert_eq!(parse_socket_link("socket:[x]"), None);
        assert_eq!(parse_socket_link("/dev/null"), None);
    }

    #[test]
    fn cookies_are_low_word_first() {
        let mut id = [0u8; 8];
        id[..4].copy_from_slice(&0x89ab_cdefu32.to_ne_bytes());
        id[4..].copy_from_slice(&0x0123_4567u32.to_ne_bytes());
        assert_eq!(cookie_of(&id), 0x0123_4567_89ab_cdef);
    }

    fn so_cookie(fd: i32) -> u64 {
        magnet_client::socket_cookie(fd).expect("SO_COOKIE")
    }

    /// This process's own listener and connection, found by inode with the
    /// cookie SO_COOKIE gives (no privilege needed in one's own namespace).
    #[test]
    fn own_sockets_are_found_with_their_cookies() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        let inodes = socket_inodes(std::process::id()).unwrap();
        let all = inet_sockets().unwrap();
        for (fd, local, state) in [
            (l.as_raw_fd(), l.local_addr().unwrap(), 10u8),
            (c.as_raw_fd(), c.local_addr().unwrap(), 1),
            (s.as_raw_fd(), s.local_addr().unwrap(), 1),
        ] {
            let cookie = so_cookie(fd);
            let found = all
                .iter()
                .find(|x| x.cookie == cookie)
                .unwrap_or_else(|| panic!("fd {fd} (cookie {cookie}) not in the dump"));
            assert_eq!(found.local, local);
            assert_eq!(found.state, state);
            assert_eq!(found.protocol, IPPROTO_TCP);
            assert!(inodes.contains(&(found.inode as u64)), "inode of fd {fd}");
        }
    }

    // Made-up answers: one socket with tcp_info and skmeminfo, one without
    // (a time-wait socket), then DONE; and damaged ones.
    const HDR: usize = 16; // struct nlmsghdr
    const MSG: usize = 72; // struct inet_diag_msg
    const BY_FAMILY: u16 = 20; // SOCK_DIAG_BY_FAMILY

    /// A netlink message of type `ty` around `body`, padded to 4 bytes.
    fn nl(ty: u16, body: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&((HDR + body.len()) as u32).to_ne_bytes());
        b.extend_from_slice(&ty.to_ne_bytes());
        b.extend_from_slice(&[0u8; 10]);
        b.extend_from_slice(body);
        while b.len() % 4 != 0 {
            b.push(0);
        }
        b
    }

    /// A tcp_info whose counters are set at their offsets.
    fn tcp_info() -> Vec<u8> {
        let mut info = vec![0u8; 232];
        info[68..72].copy_from_slice(&250u32.to_ne_bytes());
        info[80..84].copy_from_slice(&10u32.to_ne_bytes());
        info[100..104].copy_from_slice(&3u32.to_ne_bytes());
        info[120..128].copy_from_slice(&37_002u64.to_ne_bytes());
        info[128..136].copy_from_slice(&41u64.to_ne_bytes());
        info[136..140].copy_from_slice(&30u32.to_ne_bytes());
        info[140..144].copy_from_slice(&20u32.to_ne_bytes());
        info[152..156].copy_from_slice(&1u32.to_ne_bytes());
        info[156..160].copy_from_slice(&27u32.to_ne_bytes());
        info[200..208].copy_from_slice(&37_000u64.to_ne_bytes());
        info
    }

    /// An established socket's inet_diag_msg with INET_DIAG_INFO and
    /// INET_DIAG_SKMEMINFO.
    fn established_msg() -> Vec<u8> {
        let mut msg = vec![0u8; MSG];
        msg[0] = AF_INET;
        msg[1] = 1; // ESTABLISHED
        msg[44..48].copy_from_slice(&0x1234_5678u32.to_ne_bytes());
        msg[48..52].copy_from_slice(&0x9u32.to_ne_bytes());
        let info = tcp_info();
        msg.extend_from_slice(&((4 + info.len()) as u16).to_ne_bytes());
        msg.extend_from_slice(&2u16.to_ne_bytes()); // INET_DIAG_INFO
        msg.extend_from_slice(&info);
        let mem: Vec<u8> = (0..9u32).flat_map(|i| (i * 100).to_ne_bytes()).collect();
        msg.extend_from_slice(&((4 + mem.len()) as u16).to_ne_bytes());
        msg.extend_from_slice(&7u16.to_ne_bytes()); // INET_DIAG_SKMEMINFO
        msg.extend_from_slice(&mem);
        msg
    }

    /// A time-wait socket's inet_diag_msg: no attributes.
    fn time_wait_msg() -> Vec<u8> {
        let mut tw = vec![0u8; MSG];
        tw[0] = AF_INET;
        tw[1] = 6; // TIME_WAIT
        tw
    }

    /// Parses a damaged answer, which must name no socket.
    fn parse_damaged(rx: &[u8]) -> SockDiagError {
        let mut none = |_| panic!("no socket in a damaged answer");
        parse_reply(rx, IPPROTO_TCP, "test", &mut none).unwrap_err()
    }

    #[test]
    fn answers_parse_by_offset() {
        let mut buf = nl(BY_FAMILY, &established_msg());
        buf.extend(nl(BY_FAMILY, &time_wait_msg()));
        buf.extend(nl(3, &[0u8; 4])); // NLMSG_DONE
        let mut got = Vec::new();
        assert!(parse_reply(&buf, IPPROTO_TCP, "test", &mut |s| got.push(s)).unwrap());
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].cookie, 0x9_1234_5678);
        assert_eq!(got[1].tcp, None);
        assert_eq!(
            got[0].tcp,
            Some(TcpCounters {
                bytes_sent: 37_000,
                bytes_acked: 37_002,
                bytes_received: 41,
                segs_out: 30,
                segs_in: 20,
                data_segs_out: 27,
                data_segs_in: 1,
                total_retrans: 3,
                srtt_us: 250,
                snd_cwnd: 10,
                wmem_queued: 500,
            })
        );
    }

    #[test]
    fn an_older_kernels_shorter_tcp_info_reads_0_past_its_end() {
        let c = TcpCounters::from_tcp_info(&tcp_info()[..160], 0);
        assert_eq!((c.data_segs_out, c.bytes_sent), (27, 0));
    }

    #[test]
    fn a_length_past_the_buffer_is_an_error() {
        let mut bad = nl(BY_FAMILY, &established_msg());
        bad[0..4].copy_from_slice(&10_000u32.to_ne_bytes());
        let e = parse_damaged(&bad);
        assert!(e.to_string().contains("10000 bytes at byte 0"), "{e}");
    }

    /// A length of 0 would never end the loop.
    #[test]
    fn a_length_of_0_is_an_error() {
        let mut zero = nl(3, &[0u8; 4]);
        zero[0..4].copy_from_slice(&0u32.to_ne_bytes());
        let e = parse_damaged(&zero);
        assert!(e.to_string().contains("0 bytes at byte 0"), "{e}");
    }

    /// A message shorter than an inet_diag_msg, after a good one.
    #[test]
    fn a_message_cut_short_is_an_error() {
        let tw = time_wait_msg();
        let mut cut = nl(BY_FAMILY, &tw);
        cut.extend(nl(BY_FAMILY, &tw[..40]));
        let e = parse_reply(&cut, IPPROTO_TCP, "test", &mut |_| {}).unwrap_err();
        assert!(
            e.to_string().contains(&format!("at byte {}", HDR + MSG)),
            "{e}"
        );
    }

    #[test]
    fn a_tail_shorter_than_a_header_is_an_error() {
        let e = parse_damaged(&[1, 2, 3]);
        assert!(e.to_string().contains("at byte 0 of a 3-byte reply"), "{e}");
    }

    #[test]
    fn an_error_answer_is_the_kernels_errno() {
        let e = parse_damaged(&nl(2, &(-libc::EPERM).to_ne_bytes())); // NLMSG_ERROR
        assert!(
            matches!(&e, SockDiagError::Io { source, .. } if source.raw_os_error() == Some(libc::EPERM)),
            "{e}"
        );
    }

    /// A real loopback connection: the counters dump finds both ends by
    /// their socket cookies, with the bytes written (no root needed).
    #[test]
    fn a_loopback_connection_is_found_by_cookie() {
        use std::io::{Read, Write};
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut b, _) = l.accept().unwrap();
        a.write_all(&[7u8; 5000]).unwrap();
        let mut got = vec![0u8; 5000];
        b.read_exact(&mut got).unwrap();
        let m = tcp_counters().unwrap();
        let (ca, cb) = (so_cookie(a.as_raw_fd()), so_cookie(b.as_raw_fd()));
        assert_eq!(m[&ca].bytes_sent, 5000, "{:?}", m[&ca]);
        assert_eq!(m[&cb].bytes_received, 5000, "{:?}", m[&cb]);
        assert_eq!(m[&ca].data_segs_out, m[&cb].data_segs_in);
        // listeners carry no connection's counters
        assert!(!m.contains_key(&so_cookie(l.as_raw_fd())));
    }

    #[test]
    fn a_missing_namespace_is_named() {
        let e = inet_sockets_in(Path::new("/proc/nonexistent/ns/net")).unwrap_err();
        assert!(e.to_string().contains("/proc/nonexistent/ns/net"), "{e}");
    }
}
