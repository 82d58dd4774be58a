//! TCP counters the way `ss -ti` reads them: a sock_diag netlink dump
//! (`NETLINK_SOCK_DIAG`, `SOCK_DIAG_BY_FAMILY` with an `inet_diag_req_v2`
//! asking for `INET_DIAG_INFO` → `struct tcp_info` and `INET_DIAG_SKMEMINFO`),
//! for IPv4 and IPv6, keyed by socket cookie (`inet_diag_msg.id.idiag_cookie`
//! is the cookie `bpf_get_socket_cookie` returns).
//!
//! magnetd uses it when no BPF program may read `tcp_sock` (the
//! `iter/bpf_sk_storage_map` iterator refused or denied). Every kernel with
//! `CONFIG_INET_DIAG` answers it. A dump sees one network namespace, the one
//! the netlink socket was made in: [`dump_netns`] makes the socket in another
//! namespace from a short-lived thread that enters it.
//!
//! The structures are the kernel's uapi (`linux/inet_diag.h`,
//! `linux/sock_diag.h`, `linux/tcp.h`), read by offset: `tcp_info` grows at
//! its end from version to version, so a field past the attribute's length
//! (an older kernel) reads as 0.

use std::collections::HashMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

/// One TCP socket's counters, as `ss -ti` shows them.
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

const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const INET_DIAG_INFO: u16 = 2;
const INET_DIAG_SKMEMINFO: u16 = 7;
const SK_MEMINFO_WMEM_QUEUED: usize = 5;
/// TCP states asked for: all but LISTEN (10), TIME_WAIT (6) and
/// NEW_SYN_RECV (12), which carry no counters of a connection.
const STATES: u32 = !((1 << 10) | (1 << 6) | (1 << 12));
const HDR: usize = 16; // struct nlmsghdr
const REQ: usize = 56; // struct inet_diag_req_v2
const MSG: usize = 72; // struct inet_diag_msg

fn u16_at(b: &[u8], o: usize) -> u16 {
    b.get(o..o + 2)
        .map_or(0, |s| u16::from_ne_bytes([s[0], s[1]]))
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    b.get(o..o + 4)
        .map_or(0, |s| u32::from_ne_bytes(s.try_into().unwrap()))
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    b.get(o..o + 8)
        .map_or(0, |s| u64::from_ne_bytes(s.try_into().unwrap()))
}

const fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// The request for one address family (a dump of every TCP socket).
fn request(family: u8, seq: u32) -> Vec<u8> {
    let len = HDR + REQ;
    let mut b = vec![0u8; len];
    b[0..4].copy_from_slice(&(len as u32).to_ne_bytes());
    b[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    let flags = (libc::NLM_F_REQUEST | libc::NLM_F_DUMP) as u16;
    b[6..8].copy_from_slice(&flags.to_ne_bytes());
    b[8..12].copy_from_slice(&seq.to_ne_bytes());
    b[HDR] = family;
    b[HDR + 1] = libc::IPPROTO_TCP as u8;
    b[HDR + 2] = (1 << (INET_DIAG_INFO - 1)) | (1 << (INET_DIAG_SKMEMINFO - 1));
    b[HDR + 4..HDR + 8].copy_from_slice(&STATES.to_ne_bytes());
    b
}

/// Parses one `inet_diag_msg` with its attributes: (cookie, counters), or
/// None when it carries no `tcp_info` (or is too short).
fn parse_msg(m: &[u8]) -> Option<(u64, TcpCounters)> {
    if m.len() < MSG {
        return None;
    }
    // id at 4: sport, dport (2+2), src (16), dst (16), if (4), cookie (2×4)
    let cookie = u64::from(u32_at(m, 44)) | (u64::from(u32_at(m, 48)) << 32);
    let mut c = TcpCounters::default();
    let mut info = false;
    let mut at = MSG;
    while at + 4 <= m.len() {
        let len = usize::from(u16_at(m, at));
        let ty = u16_at(m, at + 2) & 0x3fff; // without NLA_F_NESTED / BYTEORDER
        if len < 4 || at + len > m.len() {
            break;
        }
        let a = &m[at + 4..at + len];
        match ty {
            INET_DIAG_INFO => {
                info = true;
                c.total_retrans = u32_at(a, 100);
                c.srtt_us = u32_at(a, 68);
                c.snd_cwnd = u32_at(a, 80);
                c.bytes_acked = u64_at(a, 120);
                c.bytes_received = u64_at(a, 128);
                c.segs_out = u32_at(a, 136);
                c.segs_in = u32_at(a, 140);
                c.data_segs_in = u32_at(a, 152);
                c.data_segs_out = u32_at(a, 156);
                c.bytes_sent = u64_at(a, 200);
            }
            INET_DIAG_SKMEMINFO => c.wmem_queued = u32_at(a, SK_MEMINFO_WMEM_QUEUED * 4),
            _ => {}
        }
        at += align4(len);
    }
    info.then_some((cookie, c))
}

/// Parses a buffer of netlink messages into `out`. Returns Ok(true) at the
/// dump's end (NLMSG_DONE), or the error the kernel answered.
fn parse(buf: &[u8], out: &mut HashMap<u64, TcpCounters>) -> std::io::Result<bool> {
    let mut at = 0;
    while at + HDR <= buf.len() {
        let len = u32_at(buf, at) as usize;
        let ty = u16_at(buf, at + 4);
        if len < HDR || at + len > buf.len() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "sock_diag: a netlink message of {len} bytes at {at} of {}",
                    buf.len()
                ),
            ));
        }
        match ty {
            NLMSG_DONE => return Ok(true),
            NLMSG_ERROR => {
                let errno = -(u32_at(buf, at + HDR) as i32);
                if errno != 0 {
                    return Err(std::io::Error::from_raw_os_error(errno));
                }
            }
            SOCK_DIAG_BY_FAMILY => {
                if let Some((cookie, c)) = parse_msg(&buf[at + HDR..at + len]) {
                    out.insert(cookie, c);
                }
            }
            _ => {}
        }
        at += align4(len);
    }
    Ok(false)
}

fn sock_diag_socket() -> std::io::Result<OwnedFd> {
    // SAFETY: plain socket(2).
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            libc::NETLINK_SOCK_DIAG,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a new descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Every TCP socket of the namespace `sock` was made in, IPv4 and IPv6.
fn dump_on(sock: &OwnedFd) -> std::io::Result<HashMap<u64, TcpCounters>> {
    let mut out = HashMap::new();
    let mut buf = vec![0u8; 64 * 1024];
    for (seq, family) in [(1, libc::AF_INET as u8), (2, libc::AF_INET6 as u8)] {
        let req = request(family, seq);
        // SAFETY: sending our buffer on our socket (to the kernel: no address).
        let n = unsafe { libc::send(sock.as_raw_fd(), req.as_ptr().cast(), req.len(), 0) };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        loop {
            // SAFETY: receiving into our buffer.
            let n = unsafe { libc::recv(sock.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if n == 0 || parse(&buf[..n as usize], &mut out)? {
                break;
            }
        }
    }
    Ok(out)
}

/// Every TCP socket of this thread's network namespace, by cookie.
pub fn dump() -> std::io::Result<HashMap<u64, TcpCounters>> {
    dump_on(&sock_diag_socket()?)
}

/// Every TCP socket of the network namespace at `ns` (a `/proc/PID/ns/net`
/// or a bind mount of one), by cookie. The netlink socket is made by a
/// thread that enters the namespace and ends there: the caller's own
/// namespace never changes.
pub fn dump_netns(ns: &Path) -> std::io::Result<HashMap<u64, TcpCounters>> {
    let f = std::fs::File::open(ns)?;
    std::thread::scope(|s| {
        s.spawn(|| {
            // SAFETY: setns(2) on this (short-lived) thread only.
            if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
            sock_diag_socket()
        })
        .join()
        .unwrap_or_else(|_| Err(std::io::Error::other("the namespace thread panicked")))
    })
    .and_then(|sock| dump_on(&sock))
}

/// The inode of a network namespace file (what a record's `netns` holds).
pub fn netns_inode(path: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| m.ino())
}

/// A path to the network namespace with inode `ino`: a process's
/// (`hint_pids` first, then every process's), or a bind mount under
/// /run/netns (a namespace no process is in).
pub fn find_netns(ino: u64, hint_pids: &[u32]) -> Option<std::path::PathBuf> {
    let try_path = |p: std::path::PathBuf| (netns_inode(&p) == Some(ino)).then_some(p);
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// A made-up answer: one message with tcp_info and skmeminfo, one
    /// without (a time-wait socket), then DONE; and a truncated one.
    #[test]
    fn messages_parse_by_offset_and_bad_input_is_an_error() {
        let mut msg = vec![0u8; MSG];
        msg[44..48].copy_from_slice(&0x1234_5678u32.to_ne_bytes());
        msg[48..52].copy_from_slice(&0x9u32.to_ne_bytes());
        let mut info = vec![0u8; 232];
        info[80..84].copy_from_slice(&10u32.to_ne_bytes());
        info[120..128].copy_from_slice(&37_002u64.to_ne_bytes());
        info[200..208].copy_from_slice(&37_000u64.to_ne_bytes());
        msg.extend_from_slice(&((4 + info.len()) as u16).to_ne_bytes());
        msg.extend_from_slice(&INET_DIAG_INFO.to_ne_bytes());
        msg.extend_from_slice(&info);
        let mem: Vec<u8> = (0..9u32).flat_map(|i| (i * 100).to_ne_bytes()).collect();
        msg.extend_from_slice(&((4 + mem.len()) as u16).to_ne_bytes());
        msg.extend_from_slice(&INET_DIAG_SKMEMINFO.to_ne_bytes());
        msg.extend_from_slice(&mem);
        let nl = |ty: u16, body: &[u8]| {
            let mut b = Vec::new();
            b.extend_from_slice(&((HDR + body.len()) as u32).to_ne_bytes());
            b.extend_from_slice(&ty.to_ne_bytes());
            b.extend_from_slice(&[0u8; 10]);
            b.extend_from_slice(body);
            while b.len() % 4 != 0 {
                b.push(0);
            }
            b
        };
        let mut buf = nl(SOCK_DIAG_BY_FAMILY, &msg);
        buf.extend(nl(SOCK_DIAG_BY_FAMILY, &[0u8; MSG]));
        buf.extend(nl(NLMSG_DONE, &[0u8; 4]));
        let mut out = HashMap::new();
        assert!(parse(&buf, &mut out).unwrap());
        assert_eq!(out.len(), 1);
        let c = out[&0x9_1234_5678];
        assert_eq!(
            (c.bytes_sent, c.bytes_acked, c.snd_cwnd),
            (37_000, 37_002, 10)
        );
        assert_eq!(c.wmem_queued, 500);
        // a length past the buffer is an error naming it, not a panic
        let mut bad = nl(SOCK_DIAG_BY_FAMILY, &msg);
        bad[0..4].copy_from_slice(&10_000u32.to_ne_bytes());
        let e = parse(&bad, &mut HashMap::new()).unwrap_err();
        assert!(e.to_string().contains("10000 bytes"), "{e}");
        // an error answer is the kernel's errno
        let e = parse(&nl(NLMSG_ERROR, &(-libc::EPERM).to_ne_bytes()), &mut out).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EPERM));
    }

    /// A real loopback connection: the dump finds both ends by their socket
    /// cookies, with the bytes written (no root needed).
    #[test]
    fn a_loopback_connection_is_found_by_cookie() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut a = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut b, _) = l.accept().unwrap();
        a.write_all(&[7u8; 5000]).unwrap();
        let mut got = vec![0u8; 5000];
        b.read_exact(&mut got).unwrap();
        let ca = magnet_client::socket_cookie(a.as_raw_fd()).unwrap();
        let cb = magnet_client::socket_cookie(b.as_raw_fd()).unwrap();
        let m = match dump() {
            Ok(m) => m,
            Err(e) => {
                eprintln!("skipped: no sock_diag here: {e}");
                return;
            }
        };
        assert_eq!(m[&ca].bytes_sent, 5000, "{:?}", m[&ca]);
        assert_eq!(m[&cb].bytes_received, 5000, "{:?}", m[&cb]);
    }
}
