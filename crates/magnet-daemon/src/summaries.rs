//! The kernel side of always-on mode: loads `bpf/summary.bpf.c`, attaches
//! every hook (tp_btf programs, and cgroup_skb programs on the root of the
//! cgroup v2 hierarchy), and reads the maps.
//!
//! Every attachment is a BPF link owned by this process, never pinned: when
//! magnetd exits — cleanly or by SIGKILL — the kernel detaches them all.
//! With `packet_hooks = "sampled"` the two per-packet links are created at
//! the start of each window and destroyed at its end
//! ([`Attached::open_window`], [`Attached::close_window`]).

use std::collections::BTreeMap;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{Link, MapCore, MapFlags, MapHandle};
use magnet_client::{AppCounters, Connection, Host, Latency, TcpState, WireCounters};

use crate::config::PacketHooks;
use crate::skel::{types, SummarySkel, SummarySkelBuilder};
use crate::window::WindowLog;
use crate::Error;

/// Hooks and what they feed, for logs and docs.
pub const HOOKS: &[(&str, &str)] = &[
    ("tp_btf/sock_send_length", "app tx (Linux 6.3+)"),
    ("tp_btf/sock_recv_length", "app rx (Linux 6.3+)"),
    (
        "cgroup_skb/egress",
        "app→wire latency; with packet_hooks = \"always\" also host wire tx, wire tx of non-TCP sockets",
    ),
    (
        "cgroup_skb/ingress",
        "wire→app latency; with packet_hooks = \"always\" also host wire rx, wire rx of non-TCP sockets",
    ),
    ("tp_btf/tcp_retransmit_skb", "host retransmits"),
    ("tp_btf/kfree_skb", "drops by reason"),
    (
        "tp_btf/inet_sock_set_state",
        "TCP records, close time, final TCP counters",
    ),
    (
        "iter/bpf_sk_storage_map",
        "TCP wire counters, retransmits, srtt, cwnd, send-buffer occupancy (read when asked)",
    ),
];

/// The cgroup v2 mount point (`/sys/fs/cgroup`, or `/sys/fs/cgroup/unified`
/// on hybrid hosts), from /proc/self/mountinfo.
pub fn cgroup2_root() -> Option<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    info.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        if right.split_whitespace().next()? != "cgroup2" {
            return None;
        }
        left.split_whitespace().nth(4).map(PathBuf::from)
    })
}

/// The loaded and attached programs. Dropping it detaches everything.
pub struct Attached {
    // Declared before the skeleton so they are dropped first.
    links: Vec<Link>,
    /// The per-packet links while they exist (always, or during a window).
    packet_links: Vec<Link>,
    skel: Box<SummarySkel<'static>>,
    /// The cgroup v2 root, open (sampled: attached to at every window).
    cgroup: std::fs::File,
    pub cgroup_root: PathBuf,
    pub windows: Arc<Mutex<WindowLog>>,
}

impl Attached {
    /// Ids of this instance's links (for tests and logs).
    pub fn link_count(&self) -> usize {
        self.links.len() + self.packet_links.len()
    }

    fn set_window_open(&mut self, open: bool) {
        if let Some(bss) = self.skel.maps.bss_data.as_deref_mut() {
            // SAFETY: a plain store into the BPF object's mmapped .bss,
            // which the programs read; volatile so it is not elided.
            unsafe { std::ptr::write_volatile(&mut bss.window_open, u32::from(open)) };
        }
    }

    /// Creates the two per-packet links (cgroup_skb egress and ingress on the
    /// cgroup v2 root) and marks the window open. Returns what it took.
    pub fn open_window(&mut self) -> Result<Duration, Error> {
        if !self.packet_links.is_empty() {
            return Ok(Duration::ZERO);
        }
        let t = Instant::now();
        let p = &self.skel.progs;
        let res = attach_cgroup_skb(
            [&p.wire_egress, &p.wire_ingress],
            &self.cgroup,
            &self.cgroup_root,
        );
        let cost = t.elapsed();
        let links = match res {
            Ok(l) => l,
            Err(e) => {
                if let Ok(mut w) = self.windows.lock() {
                    w.failures += 1;
                }
                return Err(e);
            }
        };
        self.packet_links = links;
        self.set_window_open(true);
        if let Ok(mut w) = self.windows.lock() {
            w.opened(monotonic_ns(), cost);
        }
        Ok(cost)
    }

    /// Marks the window closed and destroys the per-packet links. Returns
    /// what destroying them took.
    pub fn close_window(&mut self) -> Duration {
        if self.packet_links.is_empty() {
            return Duration::ZERO;
        }
        self.set_window_open(false);
        let at = monotonic_ns();
        let t = Instant::now();
        self.packet_links.clear();
        let cost = t.elapsed();
        if let Ok(mut w) = self.windows.lock() {
            w.closed(at, cost);
        }
        cost
    }
}

/// Loads and attaches everything; `max_connections` sizes the connection map;
/// `packet_hooks` says whether the per-packet cgroup_skb programs are
/// attached now ("always"), only in windows ("sampled", see
/// [`Attached::open_window`]) or never ("off").
pub fn attach(
    max_connections: u32,
    packet_hooks: PacketHooks,
) -> Result<(Attached, Reader), Error> {
    magnet_record::preflight().map_err(|e| Error::Host(format!("{e:#}")))?;
    let cgroup_root = cgroup2_root().ok_or_else(|| {
        Error::Host(
            "no cgroup v2 hierarchy is mounted (magnetd attaches its wire hooks to its root); \
             mount one: mount -t cgroup2 none /sys/fs/cgroup"
                .into(),
        )
    })?;
    // The skeleton borrows its object storage for its whole life; magnetd
    // loads it once per process, so the storage lives as long as the process.
    let storage: &'static mut MaybeUninit<libbpf_rs::OpenObject> =
        Box::leak(Box::new(MaybeUninit::uninit()));
    let mut open = SummarySkelBuilder::default()
        .open(storage)
        .map_err(|e| Error::bpf("opening magnetd's BPF object", e))?;
    if let Some(ro) = open.maps.rodata_data.as_deref_mut() {
        ro.packet_marks = packet_hooks.ever();
        ro.count_packets = packet_hooks == PacketHooks::Always;
        ro.sampled = matches!(packet_hooks, PacketHooks::Sampled { .. });
    }
    open.maps
        .conns
        .set_max_entries(max_connections.max(1))
        .map_err(|e| Error::bpf("sizing the connection map", e))?;
    let skel = open.load().map_err(|e| {
        Error::bpf(
            "loading magnetd's BPF programs (needs Linux 6.3+ with BTF for the \
             sock_send_length/sock_recv_length tracepoints; LIBBPF_DEBUG=1 shows the verifier log)",
            e,
        )
    })?;
    let p = &skel.progs;
    let mut links = attach_hooks(
        &[
            ("sock_send_length", &p.app_send),
            ("sock_recv_length", &p.app_recv),
            ("tcp_retransmit_skb", &p.tcp_retrans),
            ("kfree_skb", &p.drop),
            ("inet_sock_set_state", &p.tcp_state),
        ],
        None,
        &cgroup_root,
    )?;
    let cgroup = std::fs::File::open(&cgroup_root).map_err(|source| Error::Io {
        path: cgroup_root.display().to_string(),
        source,
    })?;
    // The TCP counters' iterator: a link on the socket-storage map, run
    // (by creating an iterator from it and reading it) at every read.
    let iter_link = p
        .tcp_kstats
        .attach_iter(skel.maps.tcp_socks.as_fd())
        .map_err(|e| Error::bpf("attaching iter/bpf_sk_storage_map (needs Linux 5.9+)", e))?;
    // The reader keeps its own descriptor of the link (the Link itself
    // stays with the others, detached on drop).
    let iter_fd = iter_link
        .as_fd()
        .try_clone_to_owned()
        .map_err(|source| Error::Io {
            path: "the TCP counters' iterator link".into(),
            source,
        })?;
    links.push(iter_link);
    let handle = |m: &libbpf_rs::Map<'_>, what: &str| {
        MapHandle::try_from(m).map_err(|e| Error::bpf(format!("opening the {what} map"), e))
    };
    let windows = Arc::new(Mutex::new(WindowLog::new(packet_hooks, monotonic_ns())));
    let reader = Reader {
        windows: windows.clone(),
        conns: handle(&skel.maps.conns, "connection")?,
        host: handle(&skel.maps.host, "host totals")?,
        drops: handle(&skel.maps.drop_reasons, "drop reason")?,
        iter_link: iter_fd,
        refresh_failures: std::sync::atomic::AtomicU64::new(0),
        capacity: max_connections.max(1),
        drop_names: drop_reason_names(),
    };
    let mut attached = Attached {
        links,
        packet_links: Vec::new(),
        skel: Box::new(skel),
        cgroup,
        cgroup_root,
        windows,
    };
    if packet_hooks == PacketHooks::Always {
        let p = &attached.skel.progs;
        attached.packet_links = attach_cgroup_skb(
            [&p.wire_egress, &p.wire_ingress],
            &attached.cgroup,
            &attached.cgroup_root,
        )?;
        attached.set_window_open(true);
    }
    Ok((attached, reader))
}

/// Attaches the cgroup_skb egress and ingress programs to the open cgroup
/// `cg` (named `root` in messages).
fn attach_cgroup_skb(
    progs: [&libbpf_rs::ProgramMut<'_>; 2],
    cg: &std::fs::File,
    root: &Path,
) -> Result<Vec<Link>, Error> {
    let mut links = Vec::new();
    for (name, prog) in ["cgroup_skb/egress", "cgroup_skb/ingress"]
        .into_iter()
        .zip(progs)
    {
        links.push(
            prog.attach_cgroup(cg.as_raw_fd())
                .map_err(|e| Error::bpf(format!("attaching {name} to {}", root.display()), e))?,
        );
    }
    Ok(links)
}

/// Attaches `tp_btf` programs (named by tracepoint, for messages) and the
/// cgroup_skb egress and ingress programs on the cgroup v2 root `root`.
/// magnetd's object and the cost bench's empty one (crate::baseline) share it.
pub(crate) fn attach_hooks(
    tp_btf: &[(&str, &libbpf_rs::ProgramMut<'_>)],
    cgroup_skb: Option<[&libbpf_rs::ProgramMut<'_>; 2]>,
    root: &Path,
) -> Result<Vec<Link>, Error> {
    let mut links = Vec::new();
    for (name, prog) in tp_btf {
        links.push(
            prog.attach()
                .map_err(|e| Error::bpf(format!("attaching tp_btf/{name}"), e))?,
        );
    }
    let Some(cgroup_skb) = cgroup_skb else {
        return Ok(links);
    };
    let cg = std::fs::File::open(root).map_err(|source| Error::Io {
        path: root.display().to_string(),
        source,
    })?;
    links.extend(attach_cgroup_skb(cgroup_skb, &cg, root)?);
    Ok(links)
}

/// Names of the kernel's drop reasons, by value, from this kernel's BTF.
fn drop_reason_names() -> BTreeMap<u32, String> {
    use libbpf_rs::btf::{types::Enum, Btf};
    let mut out = BTreeMap::new();
    let Ok(btf) = Btf::from_vmlinux() else {
        return out;
    };
    if let Some(e) = btf.type_by_name::<Enum>("skb_drop_reason") {
        for m in e.iter() {
            if let Some(name) = m.name {
                let name = name.to_string_lossy();
                let short = name.strip_prefix("SKB_DROP_REASON_").unwrap_or(&name);
                out.insert(m.value as u32, short.to_string());
            }
        }
    }
    out
}

/// Reads the maps; shared by every server thread.
pub struct Reader {
    /// When the per-packet programs were attached (latency coverage).
    pub windows: Arc<Mutex<WindowLog>>,
    conns: MapHandle,
    host: MapHandle,
    drops: MapHandle,
    iter_link: OwnedFd,
    /// Iterator runs that failed (health, served in /metrics).
    refresh_failures: std::sync::atomic::AtomicU64,
    capacity: u32,
    drop_names: BTreeMap<u32, String>,
}

/// A connection record as read, with the fields user space needs to decide
/// who may see it and when to reap it.
#[derive(Clone, Debug)]
pub struct Record {
    pub conn: Connection,
    pub closed_ns: u64,
    pub last_ns: u64,
    /// How long the application has let data wait, if it does now (TCP):
    /// see [`Stall`].
    pub stall: Stall,
}

/// What the app-stall trigger looks at (TCP only; all times CLOCK_MONOTONIC
/// ns as the kernel keeps them, 0 = not waiting).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stall {
    /// Unread data has waited since this time with no recv call returning
    /// data: set at the arrival of new data while nothing waited, and again
    /// at every read that leaves data waiting.
    pub unread_since_ns: u64,
    /// Data the application wrote has waited since this time without a
    /// single data packet leaving: the later of the send call that queued
    /// unsent data and the last data packet out since.
    pub unsent_since_ns: u64,
    /// Now, on the same clock, when the record was read.
    pub now_ns: u64,
}

impl Stall {
    /// How long the reader has let data wait, if it does.
    pub fn unread_for(&self) -> Option<Duration> {
        (self.unread_since_ns != 0)
            .then(|| Duration::from_nanos(self.now_ns.saturating_sub(self.unread_since_ns)))
    }

    /// How long written data has waited without any leaving, if it does.
    pub fn unsent_for(&self) -> Option<Duration> {
        (self.unsent_since_ns != 0)
            .then(|| Duration::from_nanos(self.now_ns.saturating_sub(self.unsent_since_ns)))
    }
}

pub(crate) fn monotonic_ns() -> u64 {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).expect("monotonic clock");
    t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64
}

fn endpoint(addr: &[u8; 16], port: u16) -> String {
    let ip = std::net::Ipv6Addr::from(*addr);
    match ip.to_ipv4_mapped() {
        Some(v4) => format!("{v4}:{port}"),
        None => format!("[{ip}]:{port}"),
    }
}

fn hist(h: &[u32]) -> Vec<u64> {
    let n = h.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1);
    h[..n].iter().map(|&c| u64::from(c)).collect()
}

/// What the per-packet programs' fields of a record mean: the mode, and the
/// fraction of a span they were attached.
fn decode(cookie: u64, raw: &[u8], now: u64, windows: &WindowLog) -> Option<Record> {
    if raw.len() < std::mem::size_of::<types::mg_conn>() {
        return None;
    }
    // SAFETY: length checked; mg_conn is plain old data generated from the
    // BPF object's BTF, valid for any bit pattern.
    let c: types::mg_conn = unsafe { std::ptr::read_unaligned(raw.as_ptr().cast()) };
    let comm_len = c.comm.iter().position(|&b| b == 0).unwrap_or(c.comm.len());
    let comm: Vec<u8> = c.comm[..comm_len].iter().map(|&b| b as u8).collect();
    let protocol = match c.protocol {
        6 => "tcp".to_string(),
        17 => "udp".to_string(),
        n => n.to_string(),
    };
    let conn = Connection {
        cookie,
        uid: c.uid,
        pid: c.pid,
        comm: String::from_utf8_lossy(&comm).into_owned(),
        cgroup_id: c.cgroup_id,
        container: None,
        netns: c.netns,
        protocol,
        local: endpoint(&c.saddr, c.sport),
        remote: endpoint(&c.daddr, c.dport),
        open: c.closed_ns == 0,
        age_s: now.saturating_sub(c.first_ns) as f64 / 1e9,
        app: AppCounters {
            tx_bytes: c.app_tx_bytes,
            tx_calls: c.app_tx_calls,
            rx_bytes: c.app_rx_bytes,
            rx_calls: c.app_rx_calls,
        },
        wire: WireCounters {
            tx_bytes: c.wire_tx_bytes,
            tx_packets: c.wire_tx_packets,
            tx_segs: c.wire_tx_segs,
            rx_bytes: c.wire_rx_bytes,
            rx_segs: c.wire_rx_packets,
            source: if c.kstats != 0 {
                "tcp_sock"
            } else if windows.mode == PacketHooks::Always {
                "packets"
            } else {
                // not counted: the per-packet programs do not see every packet
                "absent"
            }
            .to_string(),
            tx_data_segs: c.data_segs_out,
            rx_data_segs: c.data_segs_in,
            acked_bytes: c.acked_bytes,
        },
        retransmits: c.retransmits,
        drops: c.drops,
        tcp: TcpState {
            srtt_us: c.srtt_us,
            cwnd: c.snd_cwnd,
            sndbuf: c.sndbuf,
            wmem_queued: c.wmem_queued,
        },
        latency: Latency {
            app_to_wire: hist(&c.app_to_wire_hist),
            wire_to_app: hist(&c.wire_to_app_hist),
            mode: windows.mode.name().to_string(),
            coverage: windows
                .coverage(c.first_ns, if c.closed_ns != 0 { c.closed_ns } else { now }),
        },
    };
    Some(Record {
        conn,
        closed_ns: c.closed_ns,
        last_ns: c.last_ns,
        stall: Stall {
            unread_since_ns: c.rx_mark_ns,
            unsent_since_ns: if c.tx_mark_ns == 0 {
                0
            } else {
                c.tx_mark_ns.max(c.tx_progress_ns)
            },
            now_ns: now,
        },
    })
}

impl Reader {
    /// Copies every TCP socket's own counters into its record: creates an
    /// iterator from the link and reads it to its end (it writes nothing).
    fn refresh(&self) {
        // SAFETY: a plain syscall wrapper on a link descriptor we own.
        let fd = unsafe { libbpf_rs::libbpf_sys::bpf_iter_create(self.iter_link.as_raw_fd()) };
        if fd < 0 {
            self.refresh_failures
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return;
        }
        // SAFETY: bpf_iter_create returned a new descriptor we now own.
        let mut f =
            std::fs::File::from(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) });
        let mut sink = [0u8; 64];
        loop {
            match std::io::Read::read(&mut f, &mut sink) {
                Ok(0) => break,
                Ok(_) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    self.refresh_failures
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    break;
                }
            }
        }
    }

    /// Iterator runs that failed since start (0 when the TCP counters are
    /// fresh at every read).
    pub fn refresh_failures(&self) -> u64 {
        self.refresh_failures
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// One connection by cookie.
    pub fn get(&self, cookie: u64) -> Option<Record> {
        self.refresh();
        let raw = self
            .conns
            .lookup(&cookie.to_ne_bytes(), MapFlags::ANY)
            .ok()??;
        let w = self.windows.lock().ok()?;
        decode(cookie, &raw, monotonic_ns(), &w)
    }

    /// Every record (at most the map's capacity).
    pub fn all(&self) -> Vec<Record> {
        self.refresh();
        let now = monotonic_ns();
        let mut out = Vec::new();
        let Ok(w) = self.windows.lock() else {
            return out;
        };
        for key in self.conns.keys() {
            let Ok(k) = <[u8; 8]>::try_from(key.as_slice()) else {
                continue;
            };
            let cookie = u64::from_ne_bytes(k);
            if let Ok(Some(raw)) = self.conns.lookup(&key, MapFlags::ANY) {
                if let Some(r) = decode(cookie, &raw, now, &w) {
                    out.push(r);
                }
            }
        }
        out.sort_by_key(|r| r.conn.cookie);
        out
    }

    /// Removes records of connections closed longer than `closed_for` ago,
    /// and of sockets idle (no call) longer than `idle_for`. Returns the
    /// cgroup ids of the records kept.
    pub fn reap(&self, closed_for: Duration, idle_for: Duration) -> Vec<u64> {
        let now = monotonic_ns();
        let mut kept = Vec::new();
        for r in self.all() {
            let closed =
                r.closed_ns != 0 && now.saturating_sub(r.closed_ns) > closed_for.as_nanos() as u64;
            let idle = now.saturating_sub(r.last_ns) > idle_for.as_nanos() as u64;
            if !(closed || idle) || self.conns.delete(&r.conn.cookie.to_ne_bytes()).is_err() {
                kept.push(r.conn.cgroup_id);
            }
        }
        kept.sort_unstable();
        kept.dedup();
        kept
    }

    /// Host totals, drops by reason and health.
    pub fn host(&self) -> Host {
        let mut h = Host::default();
        if let Ok(Some(per_cpu)) = self.host.lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY) {
            for raw in per_cpu {
                if raw.len() < std::mem::size_of::<types::mg_host>() {
                    continue;
                }
                // SAFETY: length checked; plain old data.
                let c: types::mg_host = unsafe { std::ptr::read_unaligned(raw.as_ptr().cast()) };
                h.app.tx_bytes += c.app_tx_bytes;
                h.app.tx_calls += c.app_tx_calls;
                h.app.rx_bytes += c.app_rx_bytes;
                h.app.rx_calls += c.app_rx_calls;
                h.wire.tx_bytes += c.wire_tx_bytes;
                h.wire.tx_packets += c.wire_tx_packets;
                h.wire.tx_segs += c.wire_tx_segs;
                h.wire.rx_bytes += c.wire_rx_bytes;
                h.wire.rx_segs += c.wire_rx_packets;
                h.retransmits += c.retransmits;
                h.drops += c.drops;
                h.health.events += c.events;
                h.health.connections_created += c.conns_new;
                h.health.map_full += c.conns_map_full;
            }
        }
        for reason in 0..256u32 {
            if let Ok(Some(per_cpu)) = self
                .drops
                .lookup_percpu(&reason.to_ne_bytes(), MapFlags::ANY)
            {
                let n: u64 = per_cpu
                    .iter()
                    .filter_map(|v| {
                        v.get(..8)
                            .map(|b| u64::from_ne_bytes(b.try_into().unwrap()))
                    })
                    .sum();
                if n > 0 {
                    let name = self
                        .drop_names
                        .get(&reason)
                        .cloned()
                        .unwrap_or_else(|| format!("reason_{reason}"));
                    *h.drop_reasons.entry(name).or_default() += n;
                }
            }
        }
        h.health.map_entries = self.conns.keys().count() as u64;
        h.health.map_capacity = u64::from(self.capacity);
        if let Ok(w) = self.windows.lock() {
            h.wire.source = if w.mode == PacketHooks::Always {
                "packets"
            } else {
                "absent"
            }
            .to_string();
            if w.mode != PacketHooks::Always {
                // partial counts (from windows) are not served
                h.wire = WireCounters {
                    source: h.wire.source,
                    ..WireCounters::default()
                };
            }
            h.health.packet_hooks = w.mode.name().to_string();
            h.health.packet_hooks_attached = w.is_open();
            h.health.packet_windows = w.windows;
            h.health.packet_coverage = w.coverage(w.started_ns, monotonic_ns());
        }
        h.interfaces = interfaces(&std::fs::read_to_string("/proc/net/dev").unwrap_or_default());
        h
    }
}

/// Interfaces magnetd reports, at most (a host with more serves the first
/// ones by name).
pub const MAX_INTERFACES: usize = 256;

/// The interfaces' own counters from the text of /proc/net/dev (the
/// reading thread's network namespace): `name: rx_bytes rx_packets errs
/// drop fifo frame compressed multicast tx_bytes tx_packets …`. Lines that
/// do not parse are skipped.
pub fn interfaces(text: &str) -> BTreeMap<String, magnet_client::InterfaceCounters> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        let name = name.trim();
        let v: Vec<u64> = rest
            .split_whitespace()
            .map_while(|w| w.parse().ok())
            .collect();
        if name.is_empty() || name.contains(' ') || v.len() < 10 {
            continue;
        }
        out.insert(
            name.to_string(),
            magnet_client::InterfaceCounters {
                rx_bytes: v[0],
                rx_packets: v[1],
                tx_bytes: v[8],
                tx_packets: v[9],
            },
        );
    }
    while out.len() > MAX_INTERFACES {
        out.pop_last();
    }
    out
}

/// Whether `path` is magnetd's cgroup root (for messages).
pub fn describe_root(path: &Path) -> String {
    format!("cgroup v2 root {}", path.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_net_dev_is_read() {
        let text = "Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo: 1000      10    0    0    0     0          0         0     1000      10    0    0    0     0       0          0
  eth0: 123456789 4242 0 0 0 0 0 7 98765 321 0 0 0 0 0 0
 bad: 1 2 3
";
        let m = interfaces(text);
        assert_eq!(m.len(), 2, "{m:?}");
        assert_eq!(m["lo"].rx_packets, 10);
        assert_eq!(
            m["eth0"],
            magnet_client::InterfaceCounters {
                rx_bytes: 123456789,
                rx_packets: 4242,
                tx_bytes: 98765,
                tx_packets: 321
            }
        );
        assert!(interfaces("").is_empty());
    }
}
