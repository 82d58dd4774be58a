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
use magnet_host::sockdiag;

use magnet_kernel::plan::{self, Attach, Candidate, Direction, Part, Plan, Refusals};

use crate::config::{AppCalls, PacketHooks};
use crate::skel::{types, SummarySkel, SummarySkelBuilder};
use crate::window::WindowLog;
use crate::Error;

/// The app part's candidate that counts one call per system call or
/// io_uring result (its name).
pub const APP_CALLS_AT_EXIT: &str =
    "tp_btf/sock_send_length+tp_btf/sock_recv_length+tp_btf/sys_exit+tp_btf/io_uring_complete";

const fn tp(tp: &'static str) -> Attach {
    Attach::TpBtf { tp, args: None }
}

/// magnetd's parts, in the order they are planned, each with its candidates
/// best first. A part whose candidates are all refused (by the kernel, or by
/// `MAGNET_HOOKS_DENY`) is left out and the rest runs.
pub const PARTS: &[Part] = &[
    Part {
        name: "app",
        group: GROUP,
        feeds: "app tx/rx bytes and calls (per connection and host), records of every socket",
        candidates: &[
            // One call per system call (counted at sys_exit) and per
            // io_uring result, as the recorder counts them.
            Candidate::progs(&[
                ("app_send", tp("sock_send_length")),
                ("app_recv", tp("sock_recv_length")),
                ("app_sys_exit", tp("sys_exit")),
                ("app_uring", tp("io_uring_complete")),
            ])
            .with_maps(&["task_storage"]),
            // Every send and recv the kernel makes is a call (a sendfile()
            // of 1 MiB: 16; an io_uring send retried after EAGAIN: 2).
            Candidate::progs(&[
                ("app_send", tp("sock_send_length")),
                ("app_recv", tp("sock_recv_length")),
            ]),
        ],
        optional: false,
        default_on: true,
    },
    Part {
        name: "tcp_state",
        group: GROUP,
        feeds: "TCP records from the handshake, close time, final TCP counters",
        candidates: &[Candidate::progs(&[("tcp_state", tp("inet_sock_set_state"))])],
        optional: false,
        default_on: true,
    },
    Part {
        name: "retransmits",
        group: GROUP,
        feeds: "host retransmits",
        candidates: &[Candidate::progs(&[("tcp_retrans", tp("tcp_retransmit_skb"))])],
        optional: false,
        default_on: true,
    },
    Part {
        name: "drops",
        group: GROUP,
        feeds: "drops by reason (host and per connection)",
        candidates: &[Candidate::progs(&[("drop", tp("kfree_skb"))])],
        optional: false,
        default_on: true,
    },
    Part {
        name: "tcp_counters",
        group: GROUP,
        feeds: "TCP wire counters, retransmits, srtt, cwnd and send-buffer occupancy of open connections",
        candidates: &[
            Candidate::progs(&[("tcp_kstats", Attach::Iter("bpf_sk_storage_map"))])
                .with_maps(&["sk_storage"]),
            Candidate::user("sock_diag"),
        ],
        optional: false,
        default_on: true,
    },
    Part {
        name: "packets",
        group: GROUP,
        feeds: "latency histograms; with packet_hooks = \"always\" host wire counts and wire counts of non-TCP sockets",
        candidates: &[Candidate::progs(&[
            ("wire_egress", Attach::CgroupSkb(Direction::Egress)),
            ("wire_ingress", Attach::CgroupSkb(Direction::Ingress)),
        ])],
        optional: false,
        default_on: true,
    },
];

/// The group magnetd's parts are in (the first column of `daemon --check`).
pub const GROUP: &str = "daemon";

fn prog_of<'a, 'obj>(
    p: &'a mut crate::skel::OpenSummaryProgs<'obj>,
    name: &str,
) -> Option<&'a mut libbpf_rs::OpenProgramMut<'obj>> {
    Some(match name {
        "app_send" => &mut p.app_send,
        "app_recv" => &mut p.app_recv,
        "app_sys_exit" => &mut p.app_sys_exit,
        "app_uring" => &mut p.app_uring,
        "wire_egress" => &mut p.wire_egress,
        "wire_ingress" => &mut p.wire_ingress,
        "tcp_retrans" => &mut p.tcp_retrans,
        "drop" => &mut p.drop,
        "tcp_state" => &mut p.tcp_state,
        "tcp_kstats" => &mut p.tcp_kstats,
        _ => return None,
    })
}

fn loaded_prog<'a, 'obj>(
    p: &'a crate::skel::SummaryProgs<'obj>,
    name: &str,
) -> Option<&'a libbpf_rs::ProgramMut<'obj>> {
    Some(match name {
        "app_send" => &p.app_send,
        "app_recv" => &p.app_recv,
        "app_sys_exit" => &p.app_sys_exit,
        "app_uring" => &p.app_uring,
        "wire_egress" => &p.wire_egress,
        "wire_ingress" => &p.wire_ingress,
        "tcp_retrans" => &p.tcp_retrans,
        "drop" => &p.drop,
        "tcp_state" => &p.tcp_state,
        "tcp_kstats" => &p.tcp_kstats,
        _ => return None,
    })
}

/// The settings of one load of the object.
struct LoadSpec<'a> {
    /// Programs to load (the others are not).
    progs: &'a [&'static str],
    max_connections: u32,
    packet_hooks: PacketHooks,
    /// TCP counters from tcp_sock (iterator or sock_diag).
    kstats: bool,
    /// … through socket storage and the iterator.
    storage: bool,
}

/// Opens the object and sets it up for `spec` (not loaded yet).
fn open_for<'obj>(
    storage: &'obj mut MaybeUninit<libbpf_rs::OpenObject>,
    spec: &LoadSpec<'_>,
) -> Result<crate::skel::OpenSummarySkel<'obj>, Error> {
    let mut open = SummarySkelBuilder::default()
        .open(storage)
        .map_err(|e| Error::bpf("opening magnetd's BPF object", e))?;
    if let Some(ro) = open.maps.rodata_data.as_deref_mut() {
        ro.packet_marks = spec.packet_hooks.ever();
        ro.count_packets = spec.packet_hooks == PacketHooks::Always;
        ro.sampled = matches!(spec.packet_hooks, PacketHooks::Sampled { .. });
        ro.kstats_on = spec.kstats;
        ro.kstats_storage = spec.kstats && spec.storage;
        ro.calls_at_exit = spec.progs.contains(&"app_sys_exit");
    }
    open.maps
        .app_pending
        .set_autocreate(spec.progs.contains(&"app_sys_exit"))
        .map_err(|e| Error::bpf("leaving out the task-storage map", e))?;
    open.maps
        .conns
        .set_max_entries(spec.max_connections.max(1))
        .map_err(|e| Error::bpf("sizing the connection map", e))?;
    open.maps
        .tcp_socks
        .set_autocreate(spec.kstats && spec.storage)
        .map_err(|e| Error::bpf("leaving out the socket-storage map", e))?;
    for part in PARTS {
        for c in part.candidates {
            for (prog, _) in c.progs {
                if let Some(p) = prog_of(&mut open.progs, prog) {
                    p.set_autoload(spec.progs.contains(prog));
                }
            }
        }
    }
    Ok(open)
}

/// Loads `candidate`'s programs alone (a small connection map): what the
/// kernel says to them, or None when it takes them.
fn trial(c: &Candidate, packet_hooks: PacketHooks) -> Option<String> {
    let progs: Vec<&'static str> = c.progs.iter().map(|(p, _)| *p).collect();
    let spec = LoadSpec {
        progs: &progs,
        max_connections: 1,
        packet_hooks,
        kstats: true,
        storage: c.maps.contains(&"sk_storage"),
    };
    let mut storage = MaybeUninit::uninit();
    let open = match open_for(&mut storage, &spec) {
        Ok(o) => o,
        Err(e) => return Some(e.to_string()),
    };
    let why = match open.load() {
        Ok(_) => None,
        Err(e) => Some(format!("the kernel refused {}: {e}", c.name())),
    };
    why
}

/// For every part, the first candidate that is not left out by the
/// configuration, denied or refused (`refused`: what the kernel said to
/// candidates already tried); and the programs of the chosen ones.
fn choose(
    packet_hooks: PacketHooks,
    app_calls: AppCalls,
    refused: &Refusals,
) -> (Plan, Vec<&'static str>) {
    let mut refused = refused.clone();
    if app_calls == AppCalls::Sends {
        if let Some(i) = PARTS[0]
            .candidates
            .iter()
            .position(|c| c.name() == APP_CALLS_AT_EXIT)
        {
            refused.insert(
                ("app", i),
                "app_calls = \"sends\" in the configuration".to_string(),
            );
        }
    }
    let parts = PARTS
        .iter()
        .filter(|p| p.name != "packets" || packet_hooks.ever());
    // magnetd asks the kernel by loading (see `load`), not before.
    let plan = plan::choose(parts, &|_| None, &refused);
    let progs = plan
        .choices
        .iter()
        .filter_map(|c| c.candidate())
        .flat_map(|c| c.progs.iter().map(|(p, _)| *p))
        .collect();
    (plan, progs)
}

/// What the kernel takes of magnetd: the plan and the loaded object (not
/// attached). Each part takes its first candidate that is not denied; when
/// the kernel refuses the whole object, each candidate is loaded alone and
/// the parts move on past the ones it refuses.
fn load(
    max_connections: u32,
    packet_hooks: PacketHooks,
    app_calls: AppCalls,
) -> Result<(Plan, SummarySkel<'static>, PacketHooks), Error> {
    let mut refused = Refusals::new();
    let mut tried = false;
    loop {
        let (plan, progs) = choose(packet_hooks, app_calls, &refused);
        if plan.used("app").is_none() && plan.used("tcp_state").is_none() {
            return Err(Error::Host(format!(
                "magnetd has nothing to make connection records from: {}",
                plan.left_out().join("; ")
            )));
        }
        let hooks = if plan.used("packets").is_some() {
            packet_hooks
        } else {
            PacketHooks::Off
        };
        let tcp = plan.used("tcp_counters").map(Candidate::name);
        let spec = LoadSpec {
            progs: &progs,
            max_connections,
            packet_hooks: hooks,
            kstats: tcp.is_some(),
            storage: tcp.as_deref() == Some("iter/bpf_sk_storage_map"),
        };
        // The skeleton borrows its object storage for its whole life; magnetd
        // loads it once per process (twice when the kernel refuses a
        // program), so the storage lives as long as the process.
        let storage: &'static mut MaybeUninit<libbpf_rs::OpenObject> =
            Box::leak(Box::new(MaybeUninit::uninit()));
        let err = match open_for(storage, &spec)?.load() {
            Ok(skel) => return Ok((plan, skel, hooks)),
            Err(e) => e,
        };
        if tried {
            return Err(Error::bpf(
                format!(
                    "loading magnetd's BPF programs ({}) after leaving out those the kernel \
                     refused alone ({}) (magnet -v shows the verifier's log)",
                    progs.join(", "),
                    if refused.is_empty() {
                        "none".to_string()
                    } else {
                        refused.values().cloned().collect::<Vec<_>>().join("; ")
                    }
                ),
                err,
            ));
        }
        // Find the programs the kernel refuses: each candidate alone.
        tried = true;
        for part in PARTS {
            for (i, c) in part.candidates.iter().enumerate() {
                if !c.progs.is_empty() && c.denied().is_none() {
                    if let Some(why) = trial(c, hooks) {
                        refused.insert((part.name, i), why);
                    }
                }
            }
        }
    }
}

/// What magnetd would feed each part from on this kernel, with `packet_hooks`
/// and `app_calls` (`magnet daemon --check`): its programs are loaded as
/// when it starts, and nothing is attached. Needs root.
pub fn check(packet_hooks: PacketHooks, app_calls: AppCalls) -> Result<Plan, Error> {
    magnet_record::preflight().map_err(|e| Error::Host(format!("{e:#}")))?;
    let (plan, skel, _) = load(1, packet_hooks, app_calls)?;
    drop(skel);
    Ok(plan)
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
    /// What feeds each part, and the parts left out.
    pub plan: Plan,
    /// `packet_hooks` as run: "off" when the per-packet part is left out.
    pub packet_hooks: PacketHooks,
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

/// How the TCP counters of open connections are read.
enum TcpSource {
    /// The `tcp_kstats` iterator's link (run at every read).
    Iter(OwnedFd),
    /// sock_diag dumps, as `ss -ti` reads them.
    SockDiag,
    /// Not read (the part is left out).
    None,
}

/// Loads and attaches every part the kernel takes; `max_connections` sizes
/// the connection map; `packet_hooks` says whether the per-packet cgroup_skb
/// programs are attached now ("always"), only in windows ("sampled", see
/// [`Attached::open_window`]) or never ("off").
///
/// Each part (see [`PARTS`]) takes its first candidate that is not denied
/// (`MAGNET_HOOKS_DENY`) and that the kernel loads and attaches; a part with
/// none left is left out ([`Attached::plan`] says which and why) and the rest
/// runs. It fails only when nothing would make connection records.
pub fn attach(
    max_connections: u32,
    packet_hooks: PacketHooks,
    app_calls: AppCalls,
) -> Result<(Attached, Reader), Error> {
    magnet_record::preflight().map_err(|e| Error::Host(format!("{e:#}")))?;
    let cgroup_root = magnet_kernel::cgroup::root().ok_or_else(|| {
        Error::Host(
            "no cgroup v2 hierarchy is mounted (magnetd attaches its wire hooks to its root); \
             mount one: mount -t cgroup2 none /sys/fs/cgroup"
                .into(),
        )
    })?;
    // Run-time statistics on before any program is loaded: magnetd's BPF
    // time counters (/metrics) start at its start.
    let stats = magnet_kernel::cost::enable_run_time_stats();
    let (mut plan, skel, mut packet_hooks) = load(max_connections, packet_hooks, app_calls)?;
    let cgroup = std::fs::File::open(&cgroup_root).map_err(|source| Error::Io {
        path: cgroup_root.display().to_string(),
        source,
    })?;
    // tp_btf parts: a part whose link the kernel refuses is left out.
    let mut links = Vec::new();
    for choice in plan.choices.iter_mut() {
        let Some(c) = choice.candidate() else {
            continue;
        };
        if !c
            .progs
            .iter()
            .all(|(_, a)| matches!(a, Attach::TpBtf { .. }))
        {
            continue;
        }
        let mut got = Vec::new();
        let mut failed = None;
        for (prog, hook) in c.progs {
            let Some(p) = loaded_prog(&skel.progs, prog) else {
                continue;
            };
            match p.attach() {
                Ok(l) => got.push(l),
                Err(e) => {
                    failed = Some(format!(
                        "{}: the kernel refused its link: {e}",
                        plan::attach_name(*hook)
                    ));
                    break;
                }
            }
        }
        match failed {
            None => links.extend(got),
            Some(why) => choice.chosen = Err(why),
        }
    }
    // The TCP counters: the iterator's link on the socket-storage map, run
    // (by creating an iterator from it and reading it) at every read; where
    // the kernel refuses the link, sock_diag.
    let tcp = match plan.used("tcp_counters").map(Candidate::name).as_deref() {
        Some("iter/bpf_sk_storage_map") => {
            match skel
                .progs
                .tcp_kstats
                .attach_iter(skel.maps.tcp_socks.as_fd())
                .and_then(|l| {
                    // The reader keeps its own descriptor of the link (the
                    // Link itself stays with the others, detached on drop).
                    let fd = l
                        .as_fd()
                        .try_clone_to_owned()
                        .map_err(libbpf_rs::Error::from)?;
                    Ok((l, fd))
                }) {
                Ok((l, fd)) => {
                    links.push(l);
                    TcpSource::Iter(fd)
                }
                Err(e) => {
                    if let Some(c) = plan.get_mut("tcp_counters") {
                        let mut refused = Refusals::new();
                        refused.insert(
                            (c.part.name, 0),
                            format!("the kernel refused its link: {e}"),
                        );
                        let (next, passed) = c.part.choose_from(0, &|_| None, &refused);
                        c.chosen = next.ok_or_else(|| passed.join("; "));
                        c.passed = passed;
                    }
                    if plan.used("tcp_counters").is_some() {
                        TcpSource::SockDiag
                    } else {
                        TcpSource::None
                    }
                }
            }
        }
        Some(_) => TcpSource::SockDiag,
        None => TcpSource::None,
    };
    let handle = |m: &libbpf_rs::Map<'_>, what: &str| {
        MapHandle::try_from(m).map_err(|e| Error::bpf(format!("opening the {what} map"), e))
    };
    let mut packet_links = Vec::new();
    if packet_hooks == PacketHooks::Always {
        let p = &skel.progs;
        match attach_cgroup_skb([&p.wire_egress, &p.wire_ingress], &cgroup, &cgroup_root) {
            Ok(l) => packet_links = l,
            Err(e) => {
                if let Some(c) = plan.get_mut("packets") {
                    c.chosen = Err(format!("cgroup_skb/egress+cgroup_skb/ingress: {e}"));
                }
                packet_hooks = PacketHooks::Off;
            }
        }
    }
    let windows = Arc::new(Mutex::new(WindowLog::new(packet_hooks, monotonic_ns())));
    let reader = Reader {
        windows: windows.clone(),
        conns: handle(&skel.maps.conns, "connection")?,
        host: handle(&skel.maps.host, "host totals")?,
        drops: handle(&skel.maps.drop_reasons, "drop reason")?,
        tcp,
        refresh_failures: std::sync::atomic::AtomicU64::new(0),
        last_refresh_error: Mutex::new(None),
        netns_paths: Mutex::new(BTreeMap::new()),
        own_netns: sockdiag::netns_inode(Path::new("/proc/self/ns/net")).unwrap_or(0),
        capacity: max_connections.max(1),
        drop_names: drop_reason_names(),
        plan: plan.clone(),
        cost: BpfCost {
            programs: magnet_kernel::cost::loaded_programs(libbpf_rs::skel::Skel::object(&skel)),
            stats,
            machine0: magnet_kernel::cost::machine_cpu_ns().ok(),
        },
    };
    let mut attached = Attached {
        links,
        packet_links,
        skel: Box::new(skel),
        cgroup,
        cgroup_root,
        windows,
        plan,
        packet_hooks,
    };
    if packet_hooks == PacketHooks::Always {
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
    tcp: TcpSource,
    /// Reads of the TCP counters that failed (health, served in /metrics).
    refresh_failures: std::sync::atomic::AtomicU64,
    /// The last such failure, for /health.
    last_refresh_error: Mutex<Option<String>>,
    /// Network namespaces by inode → a path to enter them (sock_diag).
    netns_paths: Mutex<BTreeMap<u64, PathBuf>>,
    own_netns: u64,
    capacity: u32,
    drop_names: BTreeMap<u32, String>,
    plan: Plan,
    cost: BpfCost,
}

/// magnetd's own programs (duplicated fds) and the run-time statistics held
/// on for its life, or why the kernel would not count.
struct BpfCost {
    programs: Vec<(String, OwnedFd)>,
    stats: Result<magnet_kernel::cost::RunTimeStats, String>,
    /// The machine's CPU time (all CPUs, busy and idle) when the programs
    /// were loaded: the start of the shares' denominator.
    machine0: Option<u64>,
}

/// One program's counters since magnetd loaded it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgramTime {
    pub name: String,
    pub runs: u64,
    pub ns: u64,
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
        kstats: c.kstats != 0,
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
                })
            })
            .collect()
    }

    /// The machine's CPU time (all CPUs, busy and idle, /proc/stat) since
    /// magnetd loaded its programs, ns; None when /proc/stat is unreadable.
    pub fn machine_cpu_ns(&self) -> Option<u64> {
        let now = magnet_kernel::cost::machine_cpu_ns().ok()?;
        Some(now.saturating_sub(self.cost.machine0?))
    }

    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// One connection by cookie.
    pub fn get(&self, cookie: u64) -> Option<Record> {
        self.refresh();
        let raw = self
            .conns
            .lookup(&cookie.to_ne_bytes(), MapFlags::ANY)
            .ok()??;
        let w = self.windows.lock().ok()?;
        let mut r = [decode(cookie, &raw, monotonic_ns(), &w)?];
        drop(w);
        self.overlay(&mut r);
        let [r] = r;
        Some(r)
    }

    /// Every record (at most the map's capacity).
    pub fn all(&self) -> Vec<Record> {
        let mut out = self.all_raw();
        self.overlay(&mut out);
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
        for r in self.all_raw() {
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
        for c in &self.plan.choices {
            if let Some(name) = c.name() {
                h.health.parts.insert(c.part.name.to_string(), name);
            }
        }
        h.health.left_out = self.plan.left_out();
        h.health.fallbacks = self.plan.fallbacks();
        h.health.tcp_counters_error = self.last_refresh_error.lock().ok().and_then(|e| e.clone());
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

    fn used(plan: &Plan, part: &str) -> Option<String> {
        plan.used(part).map(Candidate::name)
    }

    /// The app part's first candidate is the one the constant names.
    #[test]
    fn app_calls_at_exit_names_the_first_app_candidate() {
        assert_eq!(PARTS[0].name, "app");
        assert_eq!(PARTS[0].candidates[0].name(), APP_CALLS_AT_EXIT);
    }

    /// A candidate the kernel refused is skipped for the next; a part with
    /// none left is left out with one line naming the part, what it feeds,
    /// the hook and what the kernel said; the other parts keep theirs.
    #[test]
    fn refused_candidates_fall_back_or_leave_their_part_out() {
        if std::env::var_os(magnet_kernel::deny::VAR).is_some() {
            eprintln!("skipped: MAGNET_HOOKS_DENY is set");
            return;
        }
        let mut refused = Refusals::new();
        let (plan, progs) = choose(PacketHooks::Off, AppCalls::Syscalls, &refused);
        assert_eq!(
            used(&plan, "tcp_counters"),
            Some("iter/bpf_sk_storage_map".into())
        );
        assert!(progs.contains(&"tcp_kstats") && !progs.contains(&"wire_egress"));
        assert!(plan.left_out().is_empty() && plan.fallbacks().is_empty());
        refused.insert(
            ("tcp_counters", 0),
            "the kernel refused iter/bpf_sk_storage_map: Operation not permitted (os error 1)"
                .to_string(),
        );
        refused.insert(
            ("drops", 0),
            "the kernel refused tp_btf/kfree_skb: No such process (os error 3)".to_string(),
        );
        let (plan, progs) = choose(PacketHooks::Always, AppCalls::Syscalls, &refused);
        assert_eq!(used(&plan, "tcp_counters"), Some("sock_diag".into()));
        assert!(!progs.contains(&"tcp_kstats") && !progs.contains(&"drop"));
        assert!(progs.contains(&"wire_egress") && progs.contains(&"app_send"));
        assert_eq!(
            plan.fallbacks(),
            [
                "tcp_counters through sock_diag: iter/bpf_sk_storage_map: the kernel refused \
              iter/bpf_sk_storage_map: Operation not permitted (os error 1)"
            ]
        );
        assert_eq!(
            plan.left_out(),
            [
                "drops left out: no drops by reason (host and per connection) (tp_btf/kfree_skb: \
              the kernel refused tp_btf/kfree_skb: No such process (os error 3))"
            ]
        );
        assert!(!plan.summary().contains("drops="), "{}", plan.summary());
    }

    /// `app_calls = "sends"` leaves the syscall-exit program out: the app part
    /// counts the kernel's sends, and /health says why.
    #[test]
    fn app_calls_sends_leaves_the_syscall_exit_program_out() {
        if std::env::var_os(magnet_kernel::deny::VAR).is_some() {
            eprintln!("skipped: MAGNET_HOOKS_DENY is set");
            return;
        }
        let refused = Refusals::new();
        let (plan, progs) = choose(PacketHooks::Off, AppCalls::Syscalls, &refused);
        assert_eq!(used(&plan, "app").as_deref(), Some(APP_CALLS_AT_EXIT));
        assert!(progs.contains(&"app_sys_exit") && progs.contains(&"app_uring"));
        let (plan, progs) = choose(PacketHooks::Off, AppCalls::Sends, &refused);
        assert_eq!(
            used(&plan, "app").as_deref(),
            Some("tp_btf/sock_send_length+tp_btf/sock_recv_length")
        );
        assert!(!progs.contains(&"app_sys_exit") && !progs.contains(&"app_uring"));
        assert_eq!(
            plan.fallbacks(),
            [format!(
                "app through tp_btf/sock_send_length+tp_btf/sock_recv_length: \
                 {APP_CALLS_AT_EXIT}: app_calls = \"sends\" in the configuration"
            )]
        );
    }

    /// On this kernel every candidate that loads alone loads in the whole
    /// object: what a refusal would be found by (root only).
    #[test]
    fn each_candidate_loads_alone_here() {
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: loading programs needs root");
            return;
        }
        for part in PARTS {
            for c in part.candidates.iter().filter(|c| !c.progs.is_empty()) {
                match trial(c, PacketHooks::Always) {
                    None => {}
                    // CI's kernel build refuses the iterator: said, not hidden
                    Some(why) if c.name() == "iter/bpf_sk_storage_map" => {
                        assert!(why.starts_with("the kernel refused iter/"), "{why}")
                    }
                    Some(why) => panic!("{}: {why}", c.name()),
                }
            }
        }
    }

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
