//! Reading the maps: connection summaries, host counters, the programs'
//! run time.

use std::collections::BTreeMap;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use libbpf_rs::{MapCore, MapFlags, MapHandle};
use magnet_client::{AppCounters, Connection, Host, Latency, TcpState, WireCounters};
use magnet_host::sockdiag;

use magnet_kernel::plan::Plan;

use crate::config::PacketHooks;
use crate::skel::types;
use crate::window::WindowLog;

use super::attach::TcpSource;
use super::interfaces::interfaces;

/// Reads the maps; shared by every server thread.
pub struct Reader {
    /// When the per-packet programs were attached (latency coverage).
    pub windows: Arc<Mutex<WindowLog>>,
    /// The records (an array, one per slot).
    pub(super) conns: MapHandle,
    /// cookie → slot of the live records.
    pub(super) conn_index: MapHandle,
    /// The slots not in use (a queue the programs take from).
    pub(super) free_slots: MapHandle,
    /// The layer tables (per connection) and the reaped ones (per cgroup).
    pub(super) layers: crate::layers::LayerTables,
    pub(super) host: MapHandle,
    pub(super) drops: MapHandle,
    /// The send stages per connection (the `stack_latency` part's map).
    pub(super) stages: Option<MapHandle>,
    /// The send stages of reaped connections, summed per cgroup.
    pub(super) stages_gone: Mutex<BTreeMap<u64, magnet_client::SendStages>>,
    /// Stage timing's sampling (served with the stages).
    pub(super) every: crate::config::StagesEvery,
    /// The receive stages' maps (the `receive_latency` part).
    pub(super) rx: Option<super::receive::RxMaps>,
    /// The receive stages of reaped connections, summed per cgroup.
    pub(super) rx_gone: Mutex<BTreeMap<u64, magnet_client::ReceiveStages>>,
    pub(super) tcp: TcpSource,
    /// Reads of the TCP counters that failed (health, served in /metrics).
    pub(super) refresh_failures: std::sync::atomic::AtomicU64,
    /// The last such failure, for /health.
    pub(super) last_refresh_error: Mutex<Option<String>>,
    /// Network namespaces by inode → a path to enter them (sock_diag).
    pub(super) netns_paths: Mutex<BTreeMap<u64, PathBuf>>,
    pub(super) own_netns: u64,
    pub(super) capacity: u32,
    pub(super) drop_names: BTreeMap<u32, String>,
    pub(super) plan: Plan,
    pub(super) cost: BpfCost,
}

/// magnetd's own programs (duplicated fds) and the run-time statistics held
/// on for its life, or why the kernel would not count.
pub(super) struct BpfCost {
    pub(super) programs: Vec<(String, OwnedFd)>,
    /// On for magnetd's life (None: the sampler holds them), or why not.
    pub(super) stats: Result<Option<magnet_kernel::cost::RunTimeStats>, String>,
    /// `bpf_stats = "sampled"`: the thread that turns them on and off, and
    /// the estimated totals.
    pub(super) sampler: Option<magnet_kernel::cost::LiveSampler>,
    /// The machine's CPU time (all CPUs, busy and idle) when the programs
    /// were loaded: the start of the shares' denominator.
    pub(super) machine0: Option<u64>,
}

/// One program's counters since magnetd loaded it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgramTime {
    pub name: String,
    pub runs: u64,
    pub ns: u64,
    /// Runs the kernel skipped: the program was already running on that CPU
    /// (`recursion_misses`; what it would have counted is missing).
    pub skipped: u64,
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
    /// TCP counters come from the socket's tcp_sock (not from packets).
    pub kstats: bool,
    /// Its slot in the record and layer-table arrays.
    pub slot: u32,
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

pub(super) fn endpoint(addr: &[u8; 16], port: u16) -> String {
    let ip = std::net::Ipv6Addr::from(*addr);
    match ip.to_ipv4_mapped() {
        Some(v4) => format!("{v4}:{port}"),
        None => format!("[{ip}]:{port}"),
    }
}

pub(super) fn hist(h: &[u32]) -> Vec<u64> {
    let n = h.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1);
    h[..n].iter().map(|&c| u64::from(c)).collect()
}

/// What the per-packet programs' fields of a record mean: the mode, and the
/// fraction of a span they were attached.
pub(super) fn decode(cookie: u64, raw: &[u8], now: u64, windows: &WindowLog) -> Option<Record> {
    if raw.len() < std::mem::size_of::<types::mg_conn>() {
        return None;
    }
    // SAFETY: length checked; mg_conn is plain old data generated from the
    // BPF object's BTF, valid for any bit pattern.
    let c: types::mg_conn = unsafe { std::ptr::read_unaligned(raw.as_ptr().cast()) };
    // a slot being given back, or taken by a record not yet complete
    if c.cookie != cookie {
        return None;
    }
    let end = if c.closed_ns != 0 { c.closed_ns } else { now };
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
            method: String::new(),
            stages: None,
            receive: None,
            coverage: windows.coverage(c.first_ns, end),
            stage_coverage: windows.stage_coverage(c.first_ns, end),
        },
        layers: Vec::new(),
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
        kstats: c.kstats != 0,
        slot: c.slot,
    })
}

impl Reader {
    /// Whether `part` (app, tcp_state, retransmits, drops, tcp_counters,
    /// packets) runs: a part left out has no series in /metrics rather than
    /// zeros a dashboard would take for a quiet connection.
    pub fn has_part(&self, part: &str) -> bool {
        self.plan.used(part).is_some()
    }

    /// The iterator path: copies every TCP socket's own counters into its
    /// record: creates an iterator from the link and reads it to its end
    /// (it writes nothing). The sock_diag path reads after the records
    /// ([`Reader::overlay`]).
    fn refresh(&self) {
        let TcpSource::Iter(link) = &self.tcp else {
            return;
        };
        // SAFETY: a plain syscall wrapper on a link descriptor we own.
        let fd = unsafe { libbpf_rs::libbpf_sys::bpf_iter_create(link.as_raw_fd()) };
        if fd < 0 {
            self.fail(format!(
                "iter/bpf_sk_storage_map: creating the iterator: {}",
                std::io::Error::from_raw_os_error(-fd)
            ));
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
                Err(e) => {
                    self.fail(format!(
                        "iter/bpf_sk_storage_map: reading the iterator: {e}"
                    ));
                    break;
                }
            }
        }
    }

    fn fail(&self, why: String) {
        self.refresh_failures
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Ok(mut l) = self.last_refresh_error.lock() {
            *l = Some(why);
        }
    }

    /// A path to enter network namespace `ino` (cached while it stays valid).
    fn netns_path(&self, ino: u64, pids: &[u32]) -> Option<PathBuf> {
        let mut cache = self.netns_paths.lock().ok()?;
        if let Some(p) = cache.get(&ino) {
            if sockdiag::netns_inode(p) == Some(ino) {
                return Some(p.clone());
            }
        }
        let p = sockdiag::find_netns(ino, pids)?;
        cache.insert(ino, p.clone());
        Some(p)
    }

    /// The sock_diag path: the counters of every open TCP record, from a
    /// dump of each network namespace the records are in, matched by socket
    /// cookie. A record whose socket the dump does not show (closed since)
    /// says its counters are "absent" until its close is seen.
    fn overlay(&self, recs: &mut [Record]) {
        self.add_stages(recs);
        self.add_receive(recs);
        if !matches!(self.tcp, TcpSource::SockDiag) {
            return;
        }
        let mut by_ns: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
        for (i, r) in recs.iter().enumerate() {
            if r.kstats && r.closed_ns == 0 {
                by_ns.entry(u64::from(r.conn.netns)).or_default().push(i);
            }
        }
        if let Ok(mut cache) = self.netns_paths.lock() {
            cache.retain(|ns, _| by_ns.contains_key(ns));
        }
        for (ns, idx) in by_ns {
            let dump = if ns == self.own_netns {
                sockdiag::tcp_counters().map_err(|e| e.to_string())
            } else {
                let pids: Vec<u32> = idx.iter().map(|&i| recs[i].conn.pid).collect();
                match self.netns_path(ns, &pids) {
                    Some(p) => sockdiag::tcp_counters_in(&p).map_err(|e| e.to_string()),
                    None => Err("sock_diag: no process and no /run/netns entry is in it".into()),
                }
            };
            let m = match dump {
                Ok(m) => m,
                Err(e) => {
                    self.fail(format!("network namespace {ns}: {e}"));
                    for &i in &idx {
                        recs[i].conn.wire.source = "absent".into();
                    }
                    continue;
                }
            };
            for i in idx {
                let c = &mut recs[i].conn;
                let Some(t) = m.get(&c.cookie) else {
                    c.wire.source = "absent".into();
                    continue;
                };
                c.wire.tx_bytes = t.bytes_sent;
                c.wire.acked_bytes = t.bytes_acked;
                c.wire.tx_packets = u64::from(t.segs_out);
                c.wire.tx_segs = u64::from(t.segs_out);
                c.wire.tx_data_segs = u64::from(t.data_segs_out);
                c.wire.rx_bytes = t.bytes_received;
                c.wire.rx_segs = u64::from(t.segs_in);
                c.wire.rx_data_segs = u64::from(t.data_segs_in);
                c.wire.source = "tcp_info".into();
                c.retransmits = u64::from(t.total_retrans);
                c.tcp.srtt_us = t.srtt_us;
                c.tcp.cwnd = t.snd_cwnd;
                c.tcp.wmem_queued = t.wmem_queued;
            }
        }
    }

    /// Reads of the TCP counters that failed since start (0 when they are
    /// fresh at every read).
    pub fn refresh_failures(&self) -> u64 {
        self.refresh_failures
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// What feeds each part, and the parts left out.
    /// Run count and run time of each of magnetd's programs (the kernel's
    /// run-time statistics, on since magnetd started), or why they are not
    /// counted.
    pub fn bpf_time(&self) -> Result<Vec<ProgramTime>, String> {
        self.cost.stats.as_ref().map_err(Clone::clone)?;
        if let Some(s) = &self.cost.sampler {
            let t = s.totals();
            return Ok(self
                .cost
                .programs
                .iter()
                .zip(t.programs)
                .map(|((name, _), r)| ProgramTime {
                    name: name.clone(),
                    runs: r.run_cnt,
                    ns: r.run_time_ns,
                    skipped: r.recursion_misses,
                })
                .collect());
        }
        self.cost
            .programs
            .iter()
            .map(|(name, fd)| {
                let r = magnet_kernel::cost::prog_run(fd.as_fd())
                    .map_err(|e| format!("{name}: {e}"))?;
                Ok(ProgramTime {
                    name: name.clone(),
                    runs: r.run_cnt,
                    ns: r.run_time_ns,
                    skipped: r.recursion_misses,
                })
            })
            .collect()
    }

    /// Whether the run-time statistics are sampled (`bpf_stats = "sampled"`
    /// and nothing else holds them on): the BPF time is then an estimate.
    pub fn bpf_stats_sampled(&self) -> bool {
        self.cost.sampler.is_some()
    }

    /// The share of magnetd's life the statistics were on: 1 when held
    /// throughout, less when sampled; None when they are off.
    pub fn bpf_stats_on_ratio(&self) -> Option<f64> {
        self.cost.stats.as_ref().ok()?;
        Some(match &self.cost.sampler {
            None => 1.0,
            Some(s) => {
                let t = s.totals();
                if t.span_ns == 0 {
                    1.0
                } else {
                    (t.on_ns as f64 / t.span_ns as f64).min(1.0)
                }
            }
        })
    }

    /// The machine's CPU time (all CPUs, busy and idle, /proc/stat) since
    /// magnetd loaded its programs, ns; None when /proc/stat is unreadable.
    pub fn machine_cpu_ns(&self) -> Option<u64> {
        let now = magnet_kernel::cost::machine_cpu_ns().ok()?;
        Some(now.saturating_sub(self.cost.machine0?))
    }

    /// Every cgroup's layer table, from `conns` (as [`Reader::all`] gives
    /// them, labelled) and the connections reaped since the start.
    pub fn cgroup_layers(&self, conns: &[Connection]) -> Vec<magnet_client::CgroupLayers> {
        self.layers.cgroups(conns)
    }

    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The slot of `cookie`'s record, if it has one.
    fn slot_of(&self, cookie: u64) -> Option<u32> {
        let raw = self
            .conn_index
            .lookup(&cookie.to_ne_bytes(), MapFlags::ANY)
            .ok()??;
        Some(u32::from_ne_bytes(raw.get(..4)?.try_into().ok()?))
    }

    /// The record in `slot`, if it is `cookie`'s.
    fn record_in(&self, slot: u32, cookie: u64, now: u64, w: &WindowLog) -> Option<Record> {
        let raw = self
            .conns
            .lookup(&slot.to_ne_bytes(), MapFlags::ANY)
            .ok()??;
        decode(cookie, &raw, now, w)
    }

    /// The cookies of the live records (the index's keys).
    fn cookies(&self) -> impl Iterator<Item = u64> + '_ {
        self.conn_index
            .keys()
            .filter_map(|k| <[u8; 8]>::try_from(k.as_slice()).ok())
            .map(u64::from_ne_bytes)
    }

    /// One connection by cookie.
    pub fn get(&self, cookie: u64) -> Option<Record> {
        self.refresh();
        let slot = self.slot_of(cookie)?;
        let w = self.windows.lock().ok()?;
        let mut r = [self.record_in(slot, cookie, monotonic_ns(), &w)?];
        drop(w);
        self.overlay(&mut r);
        let [mut r] = r;
        self.layers.fill(&mut r.conn, r.slot);
        Some(r)
    }

    /// Every record (at most the map's capacity).
    pub fn all(&self) -> Vec<Record> {
        let mut out = self.all_raw();
        self.overlay(&mut out);
        for r in &mut out {
            self.layers.fill(&mut r.conn, r.slot);
        }
        out
    }

    /// Every record as the maps hold it (TCP counters as last copied).
    fn all_raw(&self) -> Vec<Record> {
        self.refresh();
        let now = monotonic_ns();
        let mut out = Vec::new();
        let Ok(w) = self.windows.lock() else {
            return out;
        };
        for cookie in self.cookies() {
            if let Some(r) = self
                .slot_of(cookie)
                .and_then(|slot| self.record_in(slot, cookie, now, &w))
            {
                out.push(r);
            }
        }
        out.sort_by_key(|r| r.conn.cookie);
        out
    }

    /// Gives back the slot of a reaped record: out of the index first (so
    /// that no lookup by cookie finds it), then zeroed (its cookie with it,
    /// so that no socket's note of the slot matches), then free for the next
    /// record. False when the index would not let it go.
    fn release(&self, r: &Record) -> bool {
        if self
            .conn_index
            .delete(&r.conn.cookie.to_ne_bytes())
            .is_err()
        {
            return false;
        }
        let zero = vec![0u8; self.conns.value_size() as usize];
        let _ = self
            .conns
            .update(&r.slot.to_ne_bytes(), &zero, MapFlags::ANY);
        self.layers.reap(&r.conn, r.slot);
        let _ = self
            .free_slots
            .update(&[], &r.slot.to_ne_bytes(), MapFlags::ANY);
        true
    }

    /// Removes records of connections closed longer than `closed_for` ago,
    /// and of sockets idle (no call) longer than `idle_for`. Returns the
    /// cgroup ids of the records kept.
    pub fn reap(&self, closed_for: Duration, idle_for: Duration) -> Vec<u64> {
        let now = monotonic_ns();
        let mut kept = Vec::new();
        let all = self.all_raw();
        let cgroups: BTreeMap<u64, u64> = all
            .iter()
            .map(|r| (r.conn.cookie, r.conn.cgroup_id))
            .collect();
        for r in all {
            let closed =
                r.closed_ns != 0 && now.saturating_sub(r.closed_ns) > closed_for.as_nanos() as u64;
            let idle = now.saturating_sub(r.last_ns) > idle_for.as_nanos() as u64;
            if !(closed || idle) || !self.release(&r) {
                kept.push(r.conn.cgroup_id);
            }
        }
        let live: std::collections::BTreeSet<u64> = self.cookies().collect();
        self.reap_stages(&live, &cgroups);
        self.reap_receive(&live, &cgroups);
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
        h.health.map_entries = self.conn_index.keys().count() as u64;
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
            h.health.stage_hooks = w.stage_mode.name().to_string();
            h.health.stage_coverage = w.stage_coverage(w.started_ns, monotonic_ns());
        }
        for c in &self.plan.choices {
            if let Some(name) = c.name() {
                h.health.parts.insert(c.part.name.to_string(), name);
            }
        }
        h.health.left_out = self.plan.left_out();
        h.health.fallbacks = self.plan.fallbacks();
        h.health.send_latency = super::stages::host_method(
            &self.plan,
            self.windows.lock().map_or(PacketHooks::Off, |w| w.mode),
        )
        .to_string();
        h.health.receive_latency = super::receive::host_method(
            &self.plan,
            self.windows.lock().map_or(PacketHooks::Off, |w| w.mode),
        )
        .to_string();
        h.health.tcp_counters_error = self.last_refresh_error.lock().ok().and_then(|e| e.clone());
        h.interfaces = interfaces(&std::fs::read_to_string("/proc/net/dev").unwrap_or_default());
        h
    }
}
