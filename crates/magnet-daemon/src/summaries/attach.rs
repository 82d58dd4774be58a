//! Attaching the chosen programs (tp_btf, the iterator, cgroup_skb on the
//! cgroup v2 root) and the per-packet links of sampling windows.

use std::collections::BTreeMap;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use libbpf_rs::{Link, MapHandle};
use magnet_host::sockdiag;

use magnet_kernel::plan::{self, Attach, Candidate, Plan, Refusals};

use crate::config::{AppCalls, PacketHooks, StageHooks};
use crate::skel::SummarySkel;
use crate::window::WindowLog;
use crate::Error;

use super::plan::{load, loaded_prog};
use super::reader::{monotonic_ns, BpfCost, Reader};

/// The loaded and attached programs. Dropping it detaches everything.
pub struct Attached {
    // Declared before the skeleton so they are dropped first.
    links: Vec<Link>,
    /// The per-packet links while they exist (always, or during a window).
    packet_links: Vec<Link>,
    /// The stage programs' links while they exist (during a window, with
    /// `stage_hooks = "sampled"`; with "always" they are in `links`).
    stage_links: Vec<Link>,
    /// The stage programs attached only in windows, and their hooks.
    windowed: Vec<(&'static str, Attach)>,
    /// A sampling window is open now.
    window_open: bool,
    skel: Box<SummarySkel<'static>>,
    /// The cgroup v2 root, open (sampled: attached to at every window).
    cgroup: std::fs::File,
    pub cgroup_root: PathBuf,
    pub windows: Arc<Mutex<WindowLog>>,
    /// What feeds each part, and the parts left out.
    pub plan: Plan,
    /// `packet_hooks` as run: "off" when the per-packet part is left out.
    pub packet_hooks: PacketHooks,
    /// `stage_hooks` as run: "always" where no stage program runs.
    pub stage_hooks: StageHooks,
}

impl Drop for Attached {
    /// Every link released together, before the skeleton (the fields that
    /// drop after this): the syscall exit tracepoints' links each wait for
    /// a grace period (magnet_host::attach::detach_together).
    fn drop(&mut self) {
        let mut all = std::mem::take(&mut self.links);
        all.append(&mut self.packet_links);
        all.append(&mut self.stage_links);
        magnet_host::attach::detach_together(all);
    }
}

impl Attached {
    /// Ids of this instance's links (for tests and logs).
    pub fn link_count(&self) -> usize {
        self.links.len() + self.packet_links.len() + self.stage_links.len()
    }

    /// The stage programs attached only in windows (for logs).
    pub fn windowed(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.windowed.iter().map(|(p, _)| *p)
    }

    /// The sampling windows' schedule (window, period) as run.
    pub fn windows(&self) -> Option<(Duration, Duration)> {
        crate::config::windows(self.packet_hooks, self.stage_hooks)
    }

    fn set_window_open(&mut self, open: bool) {
        if let Some(bss) = self.skel.maps.bss_data.as_deref_mut() {
            // SAFETY: a plain store into the BPF object's mmapped .bss,
            // which the programs read; volatile so it is not elided.
            unsafe { std::ptr::write_volatile(&mut bss.window_open, u32::from(open)) };
        }
    }

    /// Opens a sampling window: creates the two per-packet links (cgroup_skb
    /// egress and ingress on the cgroup v2 root) when those are sampled, and
    /// the stage programs' links when they are, and marks the window open.
    /// Returns what it took. Nothing stays attached when a link is refused.
    pub fn open_window(&mut self) -> Result<Duration, Error> {
        if self.window_open {
            return Ok(Duration::ZERO);
        }
        let t = Instant::now();
        let res = self.window_links();
        let cost = t.elapsed();
        let (packet_links, stage_links) = match res {
            Ok(l) => l,
            Err(e) => {
                if let Ok(mut w) = self.windows.lock() {
                    w.failures += 1;
                }
                return Err(e);
            }
        };
        self.stage_links = stage_links;
        self.window_open = true;
        if matches!(self.packet_hooks, PacketHooks::Sampled { .. }) {
            self.packet_links = packet_links;
            self.set_window_open(true);
        }
        if let Ok(mut w) = self.windows.lock() {
            w.opened(monotonic_ns(), cost);
        }
        Ok(cost)
    }

    /// The links a window creates: (per-packet, stage programs').
    fn window_links(&self) -> Result<(Vec<Link>, Vec<Link>), Error> {
        let p = &self.skel.progs;
        let packets = match self.packet_hooks {
            PacketHooks::Sampled { .. } => attach_cgroup_skb(
                [&p.wire_egress, &p.wire_ingress],
                &self.cgroup,
                &self.cgroup_root,
            )?,
            _ => Vec::new(),
        };
        let mut stages = Vec::new();
        for &(name, hook) in &self.windowed {
            let Some(prog) = loaded_prog(p, name) else {
                continue;
            };
            let link = magnet_kernel::attach::attach_tracing(prog, hook)
                .map_err(|e| Error::Host(format!("attaching {name} for a window: {e}")))?;
            stages.push(link);
        }
        Ok((packets, stages))
    }

    /// Marks the window closed and destroys its links. Returns what
    /// destroying them took.
    pub fn close_window(&mut self) -> Duration {
        if !self.window_open {
            return Duration::ZERO;
        }
        self.window_open = false;
        if matches!(self.packet_hooks, PacketHooks::Sampled { .. }) {
            self.set_window_open(false);
        }
        let at = monotonic_ns();
        let t = Instant::now();
        if matches!(self.packet_hooks, PacketHooks::Sampled { .. }) {
            self.packet_links.clear();
        }
        self.stage_links.clear();
        let cost = t.elapsed();
        if let Ok(mut w) = self.windows.lock() {
            w.closed(at, cost);
        }
        cost
    }
}

/// How the TCP counters of open connections are read.
pub(super) enum TcpSource {
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
    stage_hooks: StageHooks,
    app_calls: AppCalls,
    every: crate::config::StagesEvery,
    bpf_stats: crate::config::BpfStats,
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
    let stats = magnet_kernel::cost::run_time_stats_unless(
        (bpf_stats == crate::config::BpfStats::Off).then_some("bpf_stats = false in the config"),
    );
    let (mut plan, skel, mut packet_hooks) = load(max_connections, packet_hooks, app_calls, every)?;
    let cgroup = std::fs::File::open(&cgroup_root).map_err(|source| Error::Io {
        path: cgroup_root.display().to_string(),
        source,
    })?;
    let mut tagged = attach_tracepoints(&mut plan, &skel);
    tagged.extend(super::stages::attach(&mut plan, &skel, &cgroup));
    // Sampled stage programs: attached once here (so that a kernel that
    // refuses their links is found at start and the part falls back), then
    // left to the windows.
    let mut links = Vec::new();
    let mut windowed = Vec::new();
    for (name, hook, link) in tagged {
        if matches!(stage_hooks, StageHooks::Sampled { .. }) && WINDOWED.contains(&name) {
            windowed.push((name, hook));
        } else {
            links.push(link);
        }
    }
    // As run: "always" where no stage program runs (their parts fell back).
    let stage_hooks = if windowed.is_empty() {
        StageHooks::Always
    } else {
        stage_hooks
    };
    let tcp = attach_tcp_counters(&mut plan, &skel, &mut links);
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
    let windows = Arc::new(Mutex::new(WindowLog::new(
        packet_hooks,
        stage_hooks,
        monotonic_ns(),
    )));
    let reader = Reader {
        windows: windows.clone(),
        conns: handle(&skel.maps.conns, "connection")?,
        conn_index: handle(&skel.maps.conn_index, "connection index")?,
        free_slots: handle(&skel.maps.free_slots, "free slot")?,
        layers: crate::layers::LayerTables::new(handle(&skel.maps.layers, "layer table")?),
        host: handle(&skel.maps.host, "host totals")?,
        drops: handle(&skel.maps.drop_reasons, "drop reason")?,
        stages: super::stages::map_handle(&plan, &skel),
        rx: super::receive::maps(&plan, &skel),
        rx_gone: Mutex::new(BTreeMap::new()),
        stages_gone: Mutex::new(BTreeMap::new()),
        every,
        tcp,
        refresh_failures: std::sync::atomic::AtomicU64::new(0),
        last_refresh_error: Mutex::new(None),
        netns_paths: Mutex::new(BTreeMap::new()),
        own_netns: sockdiag::netns_inode(Path::new("/proc/self/ns/net")).unwrap_or(0),
        capacity: max_connections.max(1),
        drop_names: drop_reason_names(),
        plan: plan.clone(),
        cost: bpf_cost(stats, bpf_stats, libbpf_rs::skel::Skel::object(&skel)),
    };
    let mut attached = Attached {
        links,
        packet_links,
        stage_links: Vec::new(),
        windowed,
        window_open: false,
        skel: Box::new(skel),
        cgroup,
        cgroup_root,
        windows,
        plan,
        packet_hooks,
        stage_hooks,
    };
    if packet_hooks == PacketHooks::Always {
        attached.set_window_open(true);
    }
    Ok((attached, reader))
}

/// magnetd's programs and the statistics as `bpf_stats` asks. Sampled, but
/// where the sysctl or another process keeps them on anyway, they are
/// counted whole: sampling would save nothing.
fn bpf_cost(
    stats: Result<magnet_kernel::cost::RunTimeStats, String>,
    bpf_stats: crate::config::BpfStats,
    object: &libbpf_rs::Object,
) -> BpfCost {
    use magnet_kernel::cost::{loaded_programs, stats_held_by_others, LiveSampler, StatsPlan};
    let programs = loaded_programs(object);
    let machine0 = magnet_kernel::cost::machine_cpu_ns().ok();
    let mut sampler = None;
    let stats = stats.map(|on| {
        if bpf_stats != crate::config::BpfStats::Sampled
            || on.how != "BPF_ENABLE_STATS"
            || stats_held_by_others(std::process::id()).is_some()
        {
            return Some(on);
        }
        let fds: std::io::Result<Vec<_>> = programs.iter().map(|(_, fd)| fd.try_clone()).collect();
        // Without a sampler thread the statistics stay on: counted whole.
        match fds.and_then(|fds| LiveSampler::spawn(on, fds, StatsPlan::DAEMON_SAMPLED)) {
            Ok(s) => {
                sampler = Some(s);
                None
            }
            Err(_) => magnet_kernel::cost::enable_run_time_stats().ok(),
        }
    });
    BpfCost {
        programs,
        stats,
        sampler,
        machine0,
    }
}

/// The stage programs: one run per send call's start and per TCP data
/// segment received, so `stage_hooks = "sampled"` attaches them only in
/// windows.
pub(super) const WINDOWED: [&str; 2] = [super::stages::PROGS[1], super::receive::PROGS[0]];

/// The links of the tracepoint parts (tp_btf, tracefs tracepoints, fexit), each
/// with its program and hook; a part whose link the kernel refuses is left
/// out. A program two parts share (`app_recv`: the app part's and the
/// receive stages') is attached once.
fn attach_tracepoints(
    plan: &mut Plan,
    skel: &SummarySkel<'static>,
) -> Vec<(&'static str, Attach, Link)> {
    let mut links = Vec::new();
    let mut attached: Vec<(&str, Attach)> = Vec::new();
    for choice in plan.choices.iter_mut() {
        let Some(c) = choice.candidate() else {
            continue;
        };
        if !c.progs.iter().all(|(_, a)| {
            matches!(
                a,
                Attach::TpBtf { .. } | Attach::Tracepoint(_) | Attach::Fexit(_)
            )
        }) {
            continue;
        }
        let mut got = Vec::new();
        let mut failed = None;
        for (prog, hook) in c.progs {
            let Some(p) = loaded_prog(&skel.progs, prog) else {
                continue;
            };
            if attached.contains(&(*prog, *hook)) {
                continue;
            }
            // (one program at several tracefs events: a link per event)
            match magnet_kernel::attach::attach_tracing(p, *hook) {
                Ok(l) => got.push((*prog, *hook, l)),
                Err(e) => {
                    let reason = match e {
                        magnet_kernel::Error::Attach { reason, .. } => reason,
                        e => e.to_string(),
                    };
                    failed = Some(format!(
                        "{}: the kernel refused its link: {reason}",
                        plan::attach_name(*hook)
                    ));
                    break;
                }
            }
        }
        match failed {
            None => {
                links.extend(got);
                attached.extend(c.progs.iter().copied());
            }
            Some(why) => choice.chosen = Err(why),
        }
    }
    links
}

/// Where the TCP counters come from: the iterator, else sock_diag.
fn attach_tcp_counters(
    plan: &mut Plan,
    skel: &SummarySkel<'static>,
    links: &mut Vec<Link>,
) -> TcpSource {
    // The TCP counters: the iterator's link on the socket-storage map, run
    // (by creating an iterator from it and reading it) at every read; where
    // the kernel refuses the link, sock_diag.
    match plan.used("tcp_counters").map(Candidate::name).as_deref() {
        Some("iter/bpf_sk_storage_map") => {
            match skel
                .progs
                .tcp_kstats
                .attach_iter(skel.maps.conn_socks.as_fd())
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
    }
}

/// Attaches the cgroup_skb egress and ingress programs to the open cgroup
/// `cg` (named `root` in messages).
pub(super) fn attach_cgroup_skb(
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
pub(super) fn drop_reason_names() -> BTreeMap<u32, String> {
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
