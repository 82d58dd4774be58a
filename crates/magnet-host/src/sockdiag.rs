//! The host's IPv4/IPv6 TCP and UDP sockets as the kernel's sock_diag
//! netlink interface lists them (what `ss` reads): each socket's addresses,
//! state, inode and cookie, in this thread's network namespace or in another
//! one ([`inet_sockets_in`]), and the socket inodes a process holds
//! ([`socket_inodes`]). A process's socket file descriptor names an inode;
//! sock_diag turns the inode into the socket's cookie, the number BPF
//! programs know the socket by (`bpf_get_socket_cookie`).
//!
//! The recorder snapshots the sockets of the processes it traces with this
//! when it attaches to programs already running (magnet-record,
//! `recorder/snapshot.rs`).

use std::fs::File;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_DUMP, NLM_F_REQUEST,
};
use netlink_packet_sock_diag::constants::{AF_INET, AF_INET6, IPPROTO_TCP, IPPROTO_UDP};
use netlink_packet_sock_diag::inet::{ExtensionFlags, InetRequest, SocketId, StateFlags};
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

const PROTOCOLS: [(u8, &str); 2] = [(IPPROTO_TCP, "TCP"), (IPPROTO_UDP, "UDP")];
const FAMILIES: [(u8, &str); 2] = [(AF_INET, "IPv4"), (AF_INET6, "IPv6")];

/// Every IPv4 and IPv6 TCP and UDP socket of this thread's network
/// namespace, in every state.
pub fn inet_sockets() -> Result<Vec<InetSocket>, SockDiagError> {
    let mut out = Vec::new();
    for (protocol, pname) in PROTOCOLS {
        for (family, fname) in FAMILIES {
            dump(family, protocol, &format!("{fname} {pname} dump"), &mut out)?;
        }
    }
    Ok(out)
}

/// The same in the network namespace at `netns` (`/proc/PID/ns/net`): read
/// by a thread of its own that enters it, so the caller's namespace is left
/// as it was.
pub fn inet_sockets_in(netns: &Path) -> Result<Vec<InetSocket>, SockDiagError> {
    let ns = File::open(netns).map_err(|source| SockDiagError::Netns {
        path: netns.to_path_buf(),
        source,
    })?;
    let path = netns.to_path_buf();
    std::thread::spawn(move || {
        nix::sched::setns(ns.as_fd(), nix::sched::CloneFlags::CLONE_NEWNET).map_err(|e| {
            SockDiagError::Netns {
                path,
                source: e.into(),
            }
        })?;
        inet_sockets()
    })
    .join()
    .unwrap_or_else(|_| {
        Err(SockDiagError::Reply {
            what: format!("reading sockets in {}", netns.display()),
            why: "the reading thread panicked".into(),
        })
    })
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

fn dump(
    family: u8,
    protocol: u8,
    what: &str,
    out: &mut Vec<InetSocket>,
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
            family,
            protocol,
            extensions: ExtensionFlags::empty(),
            states: StateFlags::all(),
            socket_id: if family == AF_INET {
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

    let bad = |why: String| SockDiagError::Reply {
        what: what.to_string(),
        why,
    };
    let mut rx: Vec<u8> = Vec::with_capacity(64 << 10);
    loop {
        rx.clear();
        let n = socket.recv(&mut rx, 0).map_err(io)?;
        if n == 0 {
            return Err(bad("the kernel closed the dump before its end".into()));
        }
        let mut off = 0;
        while off < n {
            let msg = <NetlinkMessage<SockDiagMessage>>::deserialize(&rx[off..n])
                .map_err(|e| bad(format!("message at byte {off} of a {n}-byte reply: {e}")))?;
            let len = msg.header.length as usize;
            match msg.payload {
                NetlinkPayload::Done(_) => return Ok(()),
                NetlinkPayload::Error(e) => {
                    return Err(bad(format!("the kernel refused the dump: {e}")))
                }
                NetlinkPayload::InnerMessage(SockDiagMessage::InetResponse(r)) => {
                    let h = &r.header;
                    let id = &h.socket_id;
                    out.push(InetSocket {
                        family: h.family,
                        protocol,
                        state: h.state,
                        local: SocketAddr::new(id.source_address, id.source_port),
                        remote: SocketAddr::new(id.destination_address, id.destination_port),
                        inode: h.inode,
                        cookie: cookie_of(&id.cookie),
                    });
                }
                _ => {}
            }
            if len == 0 {
                break;
            }
            off += len.next_multiple_of(4);
        }
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
        let mut c: u64 = 0;
        let mut len = std::mem::size_of::<u64>() as libc::socklen_t;
        // SAFETY: c and len are valid for the kernel to write.
        let rc = unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_COOKIE,
                (&mut c as *mut u64).cast(),
                &mut len,
            )
        };
        assert_eq!(rc, 0, "SO_COOKIE");
        c
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

    #[test]
    fn a_missing_namespace_is_named() {
        let e = inet_sockets_in(Path::new("/proc/nonexistent/ns/net")).unwrap_err();
        assert!(e.to_string().contains("/proc/nonexistent/ns/net"), "{e}");
    }
}
