//! The sockets that exist when a recording begins, held by the tasks it
//! traces (`--comm`, `-p`, `--cgroup` on programs already running: a
//! server's listeners and the connections it has open).
//!
//! The kernel learns that a socket is traced when a traced task uses it in a
//! system call (record.bpf.c, `sock_traced`). A socket made before the
//! recorder attached has had no such call yet, and its first events come in
//! softirq, where task filters cannot decide: the handshake of a connection
//! arriving at a listener, or the request that a server has not read yet.
//! So before attaching, user space finds them — each traced process's socket
//! descriptors (`/proc/PID/fd`, inodes), their cookies and addresses from
//! sock_diag in the process's network namespace (`magnet_host::sockdiag`) —
//! and tells the kernel: the cookie in `socks` (traced and announced), the
//! flow in `traced_flows` (a listener's as a wildcard, so that connections it
//! accepts are traced from their SYN, record.bpf.c `tcp_state_change`). Their
//! SOCK records open the trace.
//!
//! `--all` (no task filter) needs the same for TCP listeners: the kernel
//! assigns a socket's cookie lazily, and a listener made before the recording
//! that nobody asked the cookie of has none, so the handshakes it answers
//! would name no socket (`no_listener_*`). The dump assigns it. A listener's
//! wildcard flow would then also take the packets of connections on its port
//! that were opened before the recording (their own sockets are not known to
//! the kernel yet): so every TCP socket on a listener's port is announced
//! with its exact flow too — connections held by a process, those waiting in
//! the accept queue and those in TIME_WAIT (no process: pid 0), whose flow is
//! marked closed as if the recorder had seen it close, so that a new
//! connection on the same 4-tuple starts at the listener (`forget_flow`).

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use libbpf_rs::{MapCore, MapFlags};
use magnet_host::sockdiag::{self, addr16, InetSocket};
use magnet_trace::catalog::kind;
use magnet_trace::events::Sock;

use super::host::monotonic_now;
use super::targets::{descendants, Cgroup2Root, Tasks};
use super::Target;
use crate::config::RecordConfig;

/// A socket of a traced process found at the start.
#[derive(Clone, Debug)]
pub(super) struct Found {
    pub pid: u32,
    /// The network namespace's inode number.
    pub netns: u32,
    pub sock: InetSocket,
}

/// Values of `socks` in record.bpf.c.
const SOCK_ANNOUNCED: u8 = 1;
const SOCK_TRACED: u8 = 2;

/// The sockets of the processes the task filters choose, that exist now;
/// without a task filter (`--all`), the TCP listeners and the sockets on their
/// ports ([`on_listener_ports`]). None when the target is a command not yet
/// started. A process that ends while it is read is skipped.
///
/// A kernel whose sock_diag cannot list them (inet_diag and tcp_diag built as
/// modules and not loaded: `ENOENT`) records all the same: the second value
/// says what is left out (a line for the trace's notes).
pub(super) fn take(
    config: &RecordConfig,
    target: &Target,
    tasks: &Tasks,
) -> Result<(Vec<Found>, Option<String>)> {
    if matches!(target, Target::Command(_)) {
        return Ok((vec![], None));
    }
    let everyone = !tasks.filter_tasks;
    let candidates: Vec<u32> = if tasks.filter_pids {
        let mut v: Vec<u32> = config
            .filters
            .pids
            .iter()
            .flat_map(|&p| descendants(p))
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    } else {
        all_pids()
    };
    let me = std::process::id();
    let cgroup_root = tasks.cgroup.and_then(|_| match Cgroup2Root::find() {
        Cgroup2Root::Mounted(p) => Some(p),
        Cgroup2Root::Private => None,
    });
    // netns inode -> (a path to enter it, socket inode -> pid)
    let mut by_ns: BTreeMap<u64, (PathBuf, BTreeMap<u64, u32>)> = BTreeMap::new();
    for pid in candidates {
        if pid == me {
            continue;
        }
        if let Some(comm) = &config.filters.comm {
            if !any_thread_named(pid, comm) {
                continue;
            }
        }
        if let Some(id) = tasks.cgroup {
            if cgroup_root.as_deref().and_then(|root| cgroup_of(pid, root)) != Some(id) {
                continue;
            }
        }
        let ns_path = PathBuf::from(format!("/proc/{pid}/ns/net"));
        let (Ok(ns), Ok(inodes)) = (std::fs::metadata(&ns_path), sockdiag::socket_inodes(pid))
        else {
            continue; // ended meanwhile
        };
        if inodes.is_empty() {
            continue;
        }
        let e = by_ns
            .entry(ns.ino())
            .or_insert_with(|| (ns_path, BTreeMap::new()));
        for i in inodes {
            e.1.entry(i).or_insert(pid);
        }
    }
    let own_ns = std::fs::metadata("/proc/self/ns/net")
        .context("reading this process's network namespace")?
        .ino();
    // `--all`: a process may hold a socket of a namespace it is not in (made
    // after setns and back), and a namespace named by `ip netns` may have no
    // process at all: every socket's owner is looked up across namespaces,
    // and the named namespaces are dumped too.
    let mut owners = BTreeMap::new();
    if everyone {
        for (_, inodes) in by_ns.values() {
            for (&i, &pid) in inodes {
                owners.entry(i).or_insert(pid);
            }
        }
        for e in std::fs::read_dir("/run/netns")
            .into_iter()
            .flatten()
            .flatten()
        {
            if let Ok(m) = std::fs::metadata(e.path()) {
                by_ns
                    .entry(m.ino())
                    .or_insert_with(|| (e.path(), BTreeMap::new()));
            }
        }
        by_ns
            .entry(own_ns)
            .or_insert_with(|| ("/proc/self/ns/net".into(), BTreeMap::new()));
    }
    let mut out = Vec::new();
    let mut unlisted = None;
    for (ns, (path, inodes)) in by_ns {
        if config.filters.netns.is_some_and(|want| want != ns) {
            continue;
        }
        let socks = if ns == own_ns {
            sockdiag::inet_sockets()
        } else {
            sockdiag::inet_sockets_in(&path)
        };
        let socks = match socks {
            Ok(s) => s,
            // The namespace's last process ended meanwhile.
            Err(_) if !path.exists() => continue,
            Err(e) if e.unsupported() => {
                unlisted.get_or_insert(format!(
                    "sockets held before the recording left out: {e} (this kernel's sock_diag \
                     cannot list them; `modprobe tcp_diag udp_diag`): packets of a connection \
                     or listener opened before the recording and idle since are not attributed"
                ));
                continue;
            }
            Err(e) => {
                return Err(e).context("listing the sockets of the traced processes at the start")
            }
        };
        let socks = if everyone {
            on_listener_ports(socks)
        } else {
            socks
        };
        for s in socks {
            let inode = s.inode as u64;
            let pid = match inodes.get(&inode).or(owners.get(&inode)) {
                Some(&pid) => pid,
                // No process holds it: in the accept queue, or TIME_WAIT.
                None if everyone => 0,
                None => continue,
            };
            if tuple_chosen(config, &s) {
                out.push(Found {
                    pid,
                    netns: ns as u32,
                    sock: s,
                });
            }
        }
    }
    Ok((out, unlisted))
}

const TCP_LISTEN: u8 = 10;
const TCP_TIME_WAIT: u8 = 6;

/// What `--all` announces of one namespace's sockets: its TCP listeners and
/// every TCP socket whose local port one of them listens on (what the
/// listener's wildcard flow would otherwise take in the kernel). The
/// listeners come last: installed last, their flows are the newest in the
/// kernel's LRU map when a busy server's connections overflow it.
fn on_listener_ports(socks: Vec<InetSocket>) -> Vec<InetSocket> {
    let tcp = |s: &InetSocket| s.protocol == libc::IPPROTO_TCP as u8;
    let ports: BTreeSet<u16> = socks
        .iter()
        .filter(|s| tcp(s) && s.state == TCP_LISTEN)
        .map(|s| s.local.port())
        .collect();
    let (listeners, mut chosen): (Vec<_>, Vec<_>) = socks
        .into_iter()
        .filter(|s| tcp(s) && ports.contains(&s.local.port()))
        .partition(|s| s.state == TCP_LISTEN);
    chosen.extend(listeners);
    chosen
}

/// `--port` and `--host` choose a socket by either end, as record.bpf.c's
/// `tuple_matches`.
fn tuple_chosen(config: &RecordConfig, s: &InetSocket) -> bool {
    if let Some(p) = config.filters.port {
        if s.local.port() != p && s.remote.port() != p {
            return false;
        }
    }
    if let Some(h) = config.filters.host {
        let h = addr16(h);
        if addr16(s.local.ip()) != h && addr16(s.remote.ip()) != h {
            return false;
        }
    }
    true
}

fn all_pids() -> Vec<u32> {
    let mut v: Vec<u32> = std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    v.sort_unstable();
    v
}

/// Does a thread of `pid` carry this name? (The kernel's comm filter is per
/// thread; the descriptors are the process's.)
fn any_thread_named(pid: u32, comm: &str) -> bool {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    dir.flatten().any(|t| {
        std::fs::read_to_string(t.path().join("comm"))
            .is_ok_and(|c| c.trim_end_matches('\n') == comm)
    })
}

/// The cgroup v2 id of `pid` (its directory's inode under `root`).
fn cgroup_of(pid: u32, root: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let rel = text.lines().find_map(|l| l.strip_prefix("0::"))?;
    std::fs::metadata(root.join(rel.trim_start_matches('/')))
        .ok()
        .map(|m| m.ino())
}

/// record.bpf.c's `struct flow_key` for a socket: local end, remote end
/// (all zero for a listener or an unconnected socket), ports, protocol, and
/// its network namespace (inode number).
pub(super) fn flow_key(s: &InetSocket, netns: u32) -> [u8; 48] {
    let mut k = [0u8; 48];
    k[0..16].copy_from_slice(&addr16(s.local.ip()));
    if s.remote.port() != 0 {
        k[16..32].copy_from_slice(&addr16(s.remote.ip()));
    }
    k[32..34].copy_from_slice(&s.local.port().to_ne_bytes());
    k[34..36].copy_from_slice(&s.remote.port().to_ne_bytes());
    k[36] = s.protocol;
    k[40..44].copy_from_slice(&netns.to_ne_bytes());
    k
}

/// `struct flow_val`: the cookie, no socket address (user space has none;
/// the socket's first event fills it in), the namespace, and closed for a
/// TCP socket in TIME_WAIT.
pub(super) fn flow_val(f: &Found) -> [u8; 24] {
    let mut v = [0u8; 24];
    v[0..8].copy_from_slice(&f.sock.cookie.to_ne_bytes());
    v[16..20].copy_from_slice(&f.netns.to_ne_bytes());
    let closed = f.sock.protocol == libc::IPPROTO_TCP as u8 && f.sock.state == TCP_TIME_WAIT;
    v[20..24].copy_from_slice(&u32::from(closed).to_ne_bytes());
    v
}

/// Tells the kernel (before any program is attached): each socket traced and
/// announced, and its flow, so that its packets are known before its first
/// socket event.
pub(super) fn install(found: &[Found], socks: &dyn MapCore, flows: &dyn MapCore) -> Result<()> {
    let v = [SOCK_ANNOUNCED | SOCK_TRACED];
    let mut keys = BTreeSet::new();
    for f in found {
        socks
            .update(&f.sock.cookie.to_ne_bytes(), &v, MapFlags::ANY)
            .with_context(|| format!("marking socket {} traced", f.sock.cookie))?;
        if f.sock.local.port() == 0 {
            continue;
        }
        let k = flow_key(&f.sock, f.netns);
        // Two sockets on one flow key (one namespace seen through two
        // paths): the first keeps it.
        if keys.insert(k) {
            flows
                .update(&k, &flow_val(f), MapFlags::ANY)
                .with_context(|| format!("recording the flow of socket {}", f.sock.cookie))?;
        }
    }
    Ok(())
}

/// The SOCK record of a socket found at the start, as record.bpf.c's
/// `announce` writes it (the pid is its process's).
pub(super) fn sock_record(f: &Found) -> Vec<u8> {
    let mut r = vec![0u8; Sock::<&[u8]>::LEN];
    let mut s = Sock::new_checked(&mut r[..]).expect("LEN bytes");
    let mut h = s.hdr_mut();
    h.set_ts_ns(monotonic_now());
    h.set_kind(kind::SOCK);
    h.set_pid(f.pid);
    h.set_tid(f.pid);
    s.set_cookie(f.sock.cookie);
    s.set_family(f.sock.family as u16);
    s.set_protocol(f.sock.protocol as u16);
    s.set_type(if f.sock.protocol == libc::IPPROTO_TCP as u8 {
        libc::SOCK_STREAM as u16
    } else {
        libc::SOCK_DGRAM as u16
    });
    s.set_sport(f.sock.local.port());
    s.set_dport(f.sock.remote.port());
    s.set_netns(f.netns);
    s.set_saddr(&addr16(f.sock.local.ip()));
    s.set_daddr(&addr16(f.sock.remote.ip()));
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skel::types;
    use std::mem::{offset_of, size_of};

    fn sock(local: &str, remote: &str) -> InetSocket {
        InetSocket {
            family: libc::AF_INET as u8,
            protocol: libc::IPPROTO_TCP as u8,
            state: 10,
            local: local.parse().unwrap(),
            remote: remote.parse().unwrap(),
            inode: 1,
            cookie: 0x1122_3344_5566_7788,
            tcp: None,
        }
    }

    #[test]
    fn flow_keys_have_the_bpf_layout() {
        assert_eq!(size_of::<types::flow_key>(), 48);
        assert_eq!(offset_of!(types::flow_key, remote), 16);
        assert_eq!(offset_of!(types::flow_key, lport), 32);
        assert_eq!(offset_of!(types::flow_key, rport), 34);
        assert_eq!(offset_of!(types::flow_key, protocol), 36);
        assert_eq!(offset_of!(types::flow_key, netns), 40);
        assert_eq!(size_of::<types::flow_val>(), 24);
        assert_eq!(offset_of!(types::flow_val, sk), 8);
        assert_eq!(offset_of!(types::flow_val, netns), 16);
        assert_eq!(offset_of!(types::flow_val, closed), 20);
    }

    #[test]
    fn all_announces_listeners_and_the_sockets_on_their_ports() {
        let mut conn = sock("10.0.0.1:8080", "10.0.0.2:40000");
        conn.state = 1;
        let mut waiting = sock("10.0.0.1:8080", "10.0.0.2:40001");
        waiting.state = TCP_TIME_WAIT;
        let mut client = sock("10.0.0.1:50000", "10.0.0.3:80");
        client.state = 1;
        let mut udp = sock("0.0.0.0:8080", "0.0.0.0:0");
        udp.protocol = libc::IPPROTO_UDP as u8;
        udp.state = 7;
        let listener = sock("0.0.0.0:8080", "0.0.0.0:0");
        let chosen = on_listener_ports(vec![listener, conn, waiting, client, udp]);
        let ends: Vec<_> = chosen
            .iter()
            .map(|s| (s.local.port(), s.remote.port()))
            .collect();
        assert_eq!(
            ends,
            [(8080, 40000), (8080, 40001), (8080, 0)],
            "the listener last"
        );
        let closed = |s: &InetSocket| {
            let v = flow_val(&Found {
                pid: 0,
                netns: 1,
                sock: s.clone(),
            });
            u32::from_ne_bytes([v[20], v[21], v[22], v[23]])
        };
        assert_eq!(chosen.iter().map(closed).collect::<Vec<_>>(), [0, 1, 0]);
    }

    #[test]
    fn a_listeners_flow_is_a_wildcard_and_a_connections_is_exact() {
        let k = flow_key(&sock("0.0.0.0:8080", "0.0.0.0:0"), 4026531840);
        assert_eq!(&k[10..16], &[0xff, 0xff, 0, 0, 0, 0]);
        assert_eq!(&k[16..32], &[0u8; 16], "no remote end");
        assert_eq!(u16::from_ne_bytes([k[32], k[33]]), 8080);
        assert_eq!(u16::from_ne_bytes([k[34], k[35]]), 0);
        assert_eq!(k[36], libc::IPPROTO_TCP as u8);
        assert_eq!(u32::from_ne_bytes([k[40], k[41], k[42], k[43]]), 4026531840);
        let k = flow_key(&sock("10.0.0.1:8080", "10.0.0.2:40000"), 1);
        assert_eq!(&k[16..32], &addr16("10.0.0.2".parse().unwrap()));
        assert_eq!(u16::from_ne_bytes([k[34], k[35]]), 40000);
    }

    #[test]
    fn sock_records_read_back() {
        let f = Found {
            pid: 42,
            netns: 4026531840,
            sock: sock("10.0.0.1:8080", "10.0.0.2:40000"),
        };
        let r = sock_record(&f);
        let s = Sock::new_checked(&r[..]).unwrap();
        assert_eq!(s.hdr().kind(), kind::SOCK);
        assert_eq!(s.hdr().pid(), 42);
        assert_eq!(s.cookie(), f.sock.cookie);
        assert_eq!((s.sport(), s.dport()), (8080, 40000));
        assert_eq!(s.netns(), 4026531840);
        assert_eq!(s.type_(), libc::SOCK_STREAM as u16);
        assert_eq!(s.saddr(), addr16("10.0.0.1".parse().unwrap()));
    }

    #[test]
    fn port_and_host_filters_choose_by_either_end() {
        let mut c = RecordConfig::new("x.mgt".into());
        let s = sock("10.0.0.1:8080", "10.0.0.2:40000");
        assert!(tuple_chosen(&c, &s));
        c.filters.port = Some(40000);
        assert!(tuple_chosen(&c, &s));
        c.filters.port = Some(9);
        assert!(!tuple_chosen(&c, &s));
        c.filters.port = None;
        c.filters.host = Some("10.0.0.2".parse().unwrap());
        assert!(tuple_chosen(&c, &s));
        c.filters.host = Some("10.0.0.3".parse().unwrap());
        assert!(!tuple_chosen(&c, &s));
    }
}
