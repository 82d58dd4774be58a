//! Attach: which hook feeds each probe on this kernel, loading the BPF object
//! with the settings of the recording (falling back to a probe's next hook when
//! the verifier refuses one), and attaching the chosen programs, support
//! programs, cgroup and netfilter links. `magnet record --check` shares it.

use std::collections::BTreeMap;

use anyhow::{anyhow, bail, Context, Result};
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::Link;
use libbpf_rs::MapCore;
use libbpf_rs::{NFPROTO_IPV4, NFPROTO_IPV6};
use magnet_trace::{Header, LayerSource};

use super::host::{kernel_release, preflight};
use super::targets::{Cgroup2Root, Tasks};
use crate::config::{Layer, RecordConfig};
use crate::probes::{self, Probe, PROBES};
use crate::skel::{OpenRecordSkel, RecordSkel, RecordSkelBuilder};
use magnet_host::sockdiag::addr16;
use magnet_kernel::plan::{Attach, Choice, Refusals};

/// `--kinds` may only adjust kinds of selected layers.
pub(super) fn check_kinds(config: &RecordConfig) -> Result<()> {
    for k in config.kinds.add.iter().chain(&config.kinds.remove) {
        let p = PROBES
            .iter()
            .find(|p| probes::kind(p) == Some(k.as_str()))
            .expect("parse_kinds checked the name");
        let layer = p.group;
        if !config.layers.contains(&layer) {
            bail!("--kinds {k}: that kind is in layer {layer}, which is not selected (add it to --layers)");
        }
    }
    Ok(())
}

/// Which hook feeds each wanted probe, and what each layer is fed by (or
/// lacks, with the reason).
pub(super) struct Plan {
    pub sources: BTreeMap<Layer, LayerSource>,
    pub chosen: Vec<Choice<Layer>>,
}

impl Plan {
    pub(super) fn new(config: &RecordConfig, kernel: &probes::Kernel) -> Result<Plan> {
        let mut sources: BTreeMap<Layer, LayerSource> = BTreeMap::new();
        for layer in &config.layers {
            sources.insert(
                *layer,
                LayerSource {
                    layer: layer.name().into(),
                    hooks: vec![],
                    missing: vec![],
                    notes: vec![],
                },
            );
        }
        let mut chosen: Vec<Choice<Layer>> = Vec::new();
        for c in probes::plan(kernel) {
            if !probe_on(config, c.part) {
                continue;
            }
            match &c.chosen {
                Ok(_) => chosen.push(c),
                Err(_) => left_out(config, &mut sources, c.part, &c.reasons())?,
            }
        }
        Ok(Plan { sources, chosen })
    }
}

/// Which programs of the object a recording needs: those of the chosen hooks
/// and the support programs its layers and filters call for.
pub(super) struct Needs<'a> {
    pub config: &'a RecordConfig,
    pub tasks: Tasks,
    /// A layer sees packets (packet ids, flows, cookies).
    pub packets: bool,
    pub funcs: crate::funcs::Plan,
    /// record --snaplen: the page that lets BPF read page fragments, or why
    /// it cannot (kept alive for the whole recording).
    pub frame_pages: Option<Result<super::frames::PageMark, String>>,
    /// What the object's programs may call on this kernel.
    pub helpers: Helpers,
}

/// What the BPF object's programs may use on this kernel, each asked of the
/// kernel itself (its BTF, a map probe), never guessed from its version: the
/// object is built for both answers and the loader picks.
#[derive(Clone, Copy, Debug)]
pub(super) struct Helpers {
    /// bpf_loop (5.17+): the `record -f` filter runs on it. Without it the
    /// packet programs load as their twins without the filter (`NAME_nl`).
    pub bpf_loop: bool,
    /// bpf_get_socket_cookie in tracing programs (5.12+; the kernel then has
    /// bpf_get_socket_ptr_cookie): without it sockets the kernel gave no
    /// cookie are keyed by their address (record.bpf.c, sk_key()).
    pub cookie: bool,
    /// bpf_sk_storage_get in tracing programs (5.11+, then the kernel has
    /// bpf_sk_storage_get_tracing): without it socket flags live in a hash.
    pub sk_storage: bool,
    /// Task-storage maps (5.11+): without them a thread's call in flight
    /// lives in a hash by thread id.
    pub task_storage: bool,
}

impl Helpers {
    pub(super) fn of(kernel: &probes::Kernel) -> Helpers {
        let btf = &kernel.btf;
        Helpers {
            bpf_loop: btf.has_enum_value("bpf_func_id", "BPF_FUNC_loop"),
            cookie: btf.has_func("bpf_get_socket_ptr_cookie"),
            sk_storage: btf.has_func("bpf_sk_storage_get_tracing"),
            task_storage: has_task_storage(),
        }
    }

    /// The object's program that does the work of `name` here: its twin
    /// without the -f filter where the kernel has no bpf_loop.
    pub(super) fn prog(&self, name: &str) -> String {
        if !self.bpf_loop && PF_TWINS.contains(&name) {
            format!("{name}_nl")
        } else {
            name.to_string()
        }
    }
}

/// The packet programs record.bpf.c defines with PF_PROG: each has a twin
/// `NAME_nl` without the -f filter (and without bpf_loop's callback, which a
/// kernel before 5.13 refuses in any program that holds it).
const PF_TWINS: &[&str] = &[
    "qdisc_enq",
    "qdisc_deq",
    "dev_queue",
    "dev_start_xmit",
    "dev_xmit",
    "dev_rx",
    "tcp_rx_seg",
    "drop_kfree_skb",
    "drop_kfree_skb_2arg",
    "ip_local_out_fexit4",
    "ip_local_out_fexit6",
    "ip_post_routing_fentry4",
    "ip_post_routing_fentry6",
    "ip_pre_routing_fentry4",
    "ip_pre_routing_fentry6",
    "ip_local_in_fentry4",
    "ip_local_in_fentry6",
];

impl<'a> Needs<'a> {
    pub(super) fn new(config: &'a RecordConfig, tasks: Tasks, kernel: &probes::Kernel) -> Self {
        Needs {
            config,
            tasks,
            packets: config.layers.iter().any(|l| l.follows_packets()),
            funcs: crate::funcs::Plan::new(
                &config.funcs,
                &config.func_names,
                config.func_exits,
                &kernel.features,
            )
            .given_func_ip(&kernel.btf, &kernel.features.release),
            frame_pages: (config.snaplen > 0).then(super::frames::PageMark::new),
            helpers: Helpers::of(kernel),
        }
    }

    pub(super) fn wants(&self, chosen: &[Choice<Layer>], name: &str) -> bool {
        let in_hooks = PROBES
            .iter()
            .flat_map(|p| p.candidates.iter())
            .any(|h| h.has_prog(name));
        if in_hooks {
            return chosen_has(chosen, name);
        }
        let config = self.config;
        match name {
            probes::FOLLOW_FORKS => self.tasks.filter_pids || config.layers.contains(&Layer::Sched),
            probes::PKT_FREE => self.packets && !config.layers.contains(&Layer::Drop),
            probes::PKT_CONSUME => self.packets,
            probes::FLOWS_AT_BIND => self.packets,
            probes::TCP_RX_SEG => tcp_rcv_on(config) && !config.layers.contains(&Layer::Dev),
            probes::COOKIE_AT_CREATE => self.packets,
            probes::BATCH_TICK => true,
            n => self.funcs.wants(n),
        }
    }
}

/// Opens, configures (filters, options, ring array size) and loads the
/// object. A hook the table allows can still be refused by this kernel's
/// verifier (e.g. 6.12 lets netfilter programs call fewer helpers than 6.18):
/// its probe moves on to its next hook and the object is loaded again.
pub(super) fn load(
    kernel: &probes::Kernel,
    plan: &mut Plan,
    needs: &Needs<'_>,
    cpus: u32,
    ring_bytes: u32,
) -> Result<RecordSkel<'static>> {
    let config = needs.config;
    let tasks = needs.tasks;
    let sources = &mut plan.sources;
    if !config.pcap_filter_insns.is_empty() && !needs.helpers.bpf_loop {
        bail!(
            "the filter expression cannot run on this kernel ({}): it runs in the kernel on \
             bpf_loop, which this kernel lacks (Linux 5.17+); record without it",
            kernel.features.release
        );
    }
    if let (Some(Err(why)), Some(src)) = (&needs.frame_pages, sources.get_mut(&Layer::Dev)) {
        src.missing.push(format!(
            "--snaplen: frame bytes in page fragments not read ({why}): frames keep the skb's linear part"
        ));
    }
    load_with_fallback(
        kernel,
        needs.helpers,
        &mut plan.chosen,
        |probe, why| left_out(config, sources, probe, why),
        |open| {
            {
                let ro = open
                    .maps
                    .rodata_data
                    .as_deref_mut()
                    .expect("the object has read-only settings");
                ro.filter_tasks = tasks.filter_tasks;
                ro.func_exits = config.func_exits && !config.funcs.is_empty();
                ro.filter_pid = tasks.filter_pids;
                if let Some(comm) = &config.filters.comm {
                    if comm.len() > 15 {
                        bail!("--comm '{comm}': task names are at most 15 bytes (the kernel truncates longer ones)");
                    }
                    ro.filter_comm = true;
                    for (i, b) in comm.bytes().enumerate() {
                        ro.comm_filter[i] = b as i8;
                    }
                }
                ro.cgroup_filter = tasks.cgroup.unwrap_or(0);
                ro.port_filter = config.filters.port.unwrap_or(0);
                // Namespace inodes are 32-bit in the kernel (ns_common.inum).
                ro.netns_only = config.filters.netns.unwrap_or(0) as u32;
                if let Some(h) = config.filters.host {
                    ro.filter_host = true;
                    ro.host_filter = addr16(h);
                }
                ro.tcp_state = config.tcp_state;
                ro.snaplen = config.snaplen.min(crate::config::SNAPLEN_MAX);
                if let Some(Ok(page)) = &needs.frame_pages {
                    ro.frag_pfn = page.pfn;
                    ro.frag_mark = page.mark;
                }
                if config.pcap_filter_insns.len() > crate::config::PCAP_FILTER_MAX_INSNS {
                    bail!(
                        "the filter expression compiles to {} instructions; at most {} fit",
                        config.pcap_filter_insns.len(),
                        crate::config::PCAP_FILTER_MAX_INSNS
                    );
                }
                ro.pf_len = config.pcap_filter_insns.len() as u32;
                // Received packets are attributed by flow: keep every announced
                // socket's flow when a layer sees packets.
                ro.track_all_flows = needs.packets;
                ro.tcp_rx_other = tcp_rcv_on(config);
                ro.app_send_on = kind_on(config, "app_send");
                ro.app_recv_on = kind_on(config, "app_recv");
                ro.wakeup_bytes = config.wakeup_bytes;
                ro.record_fork = config.layers.contains(&Layer::Sched);
                ro.id_ring_index = cpus;
                ro.has_id_ring = true;
            }
            // One more ring after the CPUs' for identity (SOCK) records only.
            open.maps
                .rings
                .set_max_entries(cpus + 1)
                .context("sizing the ring array")?;
            // Wake the reader well before one CPU's ring fills.
            open.maps
                .rodata_data
                .as_deref_mut()
                .expect("the object has read-only settings")
                .wakeup_bytes = config.wakeup_bytes.min(ring_bytes as u64 / 8);
            // A batch is at most a quarter of its CPU's ring.
            open.maps
                .rodata_data
                .as_deref_mut()
                .expect("the object has read-only settings")
                .batch_limit = (ring_bytes / 4).clamp(512, 4096);
            Ok(())
        },
        &|chosen, name| needs.wants(chosen, name),
    )
}

/// Attaches the chosen programs (a probe whose hook fails to attach is left
/// out, or fails the recording when its layer was named), the support
/// programs, the cgroup link for socket cookies and the function probes, and
/// writes into the header which hook fed each kind and layer. The links
/// detach when dropped.
pub(super) fn attach<'s>(
    plan: &mut Plan,
    needs: &Needs<'_>,
    skel: &'s RecordSkel<'static>,
    header: &mut Header,
) -> Result<Links<'s>> {
    let config = needs.config;
    // record -f: the filter's instructions, before any program runs.
    for (i, &(code, jt, jf, k)) in config.pcap_filter_insns.iter().enumerate() {
        let mut insn = [0u8; 8];
        insn[0..2].copy_from_slice(&code.to_ne_bytes());
        insn[2] = jt;
        insn[3] = jf;
        insn[4..8].copy_from_slice(&k.to_ne_bytes());
        skel.maps
            .pf_prog
            .update(&(i as u32).to_ne_bytes(), &insn, libbpf_rs::MapFlags::ANY)
            .with_context(|| format!("loading instruction {i} of the filter expression"))?;
    }
    let sources = &mut plan.sources;
    let wanted = |name: &str| needs.wants(&plan.chosen, name);
    let cgroup2_root = needs.packets.then(Cgroup2Root::find);
    let mut hooks_by_kind: BTreeMap<&str, String> = BTreeMap::new();
    // The app kinds' events come from the syscall and io_uring hooks (their
    // own hooks only name the socket of the call).
    let mut app_helpers: Vec<String> = Vec::new();
    let mut links: Vec<Link> = Vec::new();
    let object = skel.object();
    let mut netfilter_used = false;
    let mut netns = NetfilterNamespaces::open(config.filters.netns);
    for c in &plan.chosen {
        let probe = c.part;
        let hook = c.candidate().expect("only chosen probes");
        let mut hook_links = Vec::new();
        let mut failed = None;
        for (name, attach) in hook.progs {
            let name = needs.helpers.prog(name);
            let prog = object
                .progs_mut()
                .find(|p| p.name() == name.as_str())
                .ok_or_else(|| anyhow!("program {name} missing from the BPF object"))?;
            let attached: Result<Vec<Link>> = match attach {
                Attach::TpBtf { .. } | Attach::Fentry(_) | Attach::Fexit(_) => {
                    prog.attach().map(|l| vec![l]).map_err(Into::into)
                }
                Attach::Iter(_) | Attach::CgroupSkb(_) | Attach::Tcx(_) | Attach::Clsact(_) => {
                    bail!("{name}: the recorder attaches no iterator, cgroup or tc programs")
                }
                Attach::Netfilter(hooknum) => {
                    // Observe last on the way out (final headers), first on the way in.
                    let out = *hooknum == libbpf_rs::NF_INET_LOCAL_OUT
                        || *hooknum == libbpf_rs::NF_INET_POST_ROUTING;
                    let priority = if out { i32::MAX - 1 } else { i32::MIN + 1 };
                    netfilter_used = true;
                    netns.attach(&prog, *hooknum, priority)
                }
            };
            match attached {
                Ok(ls) => hook_links.extend(ls),
                Err(e) => {
                    failed = Some(format!(
                        "{}: {e:#}",
                        magnet_kernel::plan::attach_name(*attach)
                    ));
                    break;
                }
            }
        }
        let src = sources
            .get_mut(&probe.group)
            .expect("source per selected layer");
        match failed {
            None => {
                links.extend(hook_links);
                let name = hook.name();
                if let Some(k) = probes::kind(probe) {
                    hooks_by_kind.insert(k, name.clone());
                } else if probe.group == Layer::App {
                    app_helpers.push(name.clone());
                }
                if !src.hooks.contains(&name) {
                    src.hooks.push(name);
                }
            }
            Some(why) => left_out(config, sources, probe, &why)?,
        }
    }
    for name in [
        probes::FOLLOW_FORKS,
        probes::PKT_FREE,
        probes::PKT_CONSUME,
        probes::FLOWS_AT_BIND,
        probes::TCP_RX_SEG,
    ] {
        if !wanted(name) {
            continue;
        }
        let name = needs.helpers.prog(name);
        let prog = object
            .progs_mut()
            .find(|p| p.name() == name.as_str())
            .expect("support program in object");
        links.push(
            prog.attach()
                .with_context(|| format!("attaching support program {name}"))?,
        );
    }
    // Sockets get their cookie when created (see sock_cookie_at_create): a
    // cgroup link on the v2 root, which every task is under.
    if let (true, Some(root)) = (wanted(probes::COOKIE_AT_CREATE), &cgroup2_root) {
        let prog = object
            .progs_mut()
            .find(|p| p.name() == probes::COOKIE_AT_CREATE)
            .expect("support program in object");
        let dir = root.open();
        let attached = dir
            .as_ref()
            .map_err(|e| anyhow!("{e:#}"))
            .and_then(|d| Ok(prog.attach_cgroup(std::os::fd::AsRawFd::as_raw_fd(d))?));
        match attached {
            Ok(l) => links.push(l),
            // Without it only a socket's very first packets lack their cookie.
            Err(e) => {
                if let Some(src) = sources
                    .iter_mut()
                    .find(|(l, _)| l.follows_packets())
                    .map(|(_, s)| s)
                {
                    src.missing.push(format!(
                        "cgroup/sock_create on the cgroup v2 root: {e:#} (a socket's first packets may lack its cookie)"
                    ));
                }
            }
        }
    }
    links.extend(attach_batch_tick(skel)?);
    if config.layers.contains(&Layer::Sched) {
        if let Some(s) = sources.get_mut(&Layer::Sched) {
            s.hooks.push("tp_btf/sched_process_fork".into());
        }
    }
    let func_source = if config.funcs.is_empty() {
        None
    } else {
        let (src, flinks) = needs.funcs.attach(object, header);
        links.extend(flinks);
        Some(src)
    };
    if netfilter_used {
        if let Some(s) = sources.get_mut(&Layer::Ip) {
            s.notes.push(netns.scope());
        }
    }

    for k in ["app_send", "app_recv"] {
        if let Some(h) = hooks_by_kind.get_mut(k) {
            *h = app_helpers
                .iter()
                .chain([&*h])
                .cloned()
                .collect::<Vec<_>>()
                .join("+");
        }
    }
    // The catalog names the hook that fed each kind on this kernel.
    for k in header.catalog.kinds.iter_mut() {
        if let Some(h) = hooks_by_kind.get(k.name.as_str()) {
            k.hook = h.clone();
        }
    }
    header.layers = sources.values().cloned().collect();
    header.layers.extend(func_source);
    Ok(Links {
        links,
        netns,
        object,
    })
}

/// The recorder's links, and the network namespaces its netfilter links are
/// in, held open so that each namespace outlives its links: older kernels'
/// `nf_bpf_link` holds no reference to its namespace (later ones take one),
/// and a link released after its namespace was freed would unregister a hook
/// in freed memory. Fields drop in order: the links first.
pub(super) struct Links<'a> {
    links: Vec<Link>,
    netns: NetfilterNamespaces,
    /// Where the programs are, to attach them in a namespace made later.
    object: &'a libbpf_rs::Object,
}

impl Links<'_> {
    /// Attaches the netfilter programs in the namespaces made since the start
    /// or the last call (the drain calls it every second), so that a
    /// container or `ip netns add` during the recording has its ip layer too.
    pub(super) fn follow_new_namespaces(&mut self) {
        let new = self.netns.follow_new(self.object);
        self.links.extend(new);
    }
}

/// Netfilter hooks are per network namespace (the link is made in the
/// namespace of the thread that makes it): the recorder enters every
/// namespace that exists at its start, and each one made later (see
/// [`Links::follow_new_namespaces`]), so that the ip layer (and send latency,
/// and `tcp out`) is recorded for sockets in any of them, as the tracepoint
/// layers are.
struct NetfilterNamespaces {
    /// The recorder's own namespace (this thread's, restored after each
    /// visit).
    own: Option<std::fs::File>,
    /// Every namespace seen: hooked, being hooked, or skipped.
    known: std::collections::BTreeSet<u64>,
    /// Found at the start, hooked program by program by [`Self::attach`].
    at_start: Vec<(u64, std::fs::File)>,
    /// Namespaces that went away or refused to be entered: (inode, why).
    skipped: BTreeMap<u64, String>,
    /// The namespaces hooked, held open (see [`Links`]).
    pins: Vec<std::fs::File>,
    /// What was attached: (program, hook number, priority), to attach the
    /// same in a namespace made later.
    programs: Vec<(String, i32, i32)>,
    /// `record --netns` naming another namespace than the recorder's: its
    /// inode, the only one hooked (`None` for the own one, hooked as
    /// always).
    only: Option<u64>,
    /// Any `--netns` given: no other namespace, and none made later.
    filtered: bool,
}

/// Attaches `prog` at `hooknum` for IPv4 and IPv6 in this thread's namespace.
fn attach_both(prog: &libbpf_rs::ProgramMut<'_>, hooknum: i32, priority: i32) -> Result<Vec<Link>> {
    [NFPROTO_IPV4, NFPROTO_IPV6]
        .into_iter()
        .map(|pf| {
            magnet_host::attach::attach_netfilter(prog, pf, hooknum, priority)
                .map_err(anyhow::Error::from)
        })
        .collect()
}

impl NetfilterNamespaces {
    /// `only`: `record --netns`, the one namespace to hook (its inode).
    fn open(only: Option<u64>) -> NetfilterNamespaces {
        use std::os::unix::fs::MetadataExt;
        let own = std::fs::File::open("/proc/thread-self/ns/net").ok();
        let own_ino = own
            .as_ref()
            .and_then(|f| f.metadata().ok())
            .map(|m| m.ino());
        let mut known = std::collections::BTreeSet::new();
        known.extend(own_ino);
        let mut at_start = Vec::new();
        let mut skipped = BTreeMap::new();
        if own.is_some() {
            for (ino, path) in crate::netdevs::namespaces() {
                if only.is_some_and(|o| o != ino) || !known.insert(ino) {
                    continue;
                }
                match std::fs::File::open(&path) {
                    Ok(f) => at_start.push((ino, f)),
                    Err(e) => {
                        skipped.insert(ino, format!("{}: {e}", path.display()));
                    }
                }
            }
        }
        NetfilterNamespaces {
            own,
            known,
            at_start,
            skipped,
            pins: Vec::new(),
            programs: Vec::new(),
            only: only.filter(|&o| Some(o) != own_ino),
            filtered: only.is_some(),
        }
    }

    /// Runs `f` with this thread in namespace `ns`, and back in the
    /// recorder's own before anything else runs on it (sockets, the command
    /// started, belong in the own one). `None`: `ns` could not be entered.
    fn inside<T>(&self, ns: &std::fs::File, f: impl FnOnce() -> T) -> Result<Option<T>> {
        use nix::sched::{setns, CloneFlags};
        let Some(own) = &self.own else {
            return Ok(None);
        };
        if setns(ns, CloneFlags::CLONE_NEWNET).is_err() {
            return Ok(None);
        }
        let out = f();
        setns(own, CloneFlags::CLONE_NEWNET)
            .context("returning to the recorder's network namespace")?;
        Ok(Some(out))
    }

    /// Attaches `prog` at `hooknum` for IPv4 and IPv6 in the recorder's
    /// namespace (an error here is the hook's) and in every other one found
    /// at the start (a namespace that refuses is skipped, and named by
    /// [`Self::scope`]).
    fn attach(
        &mut self,
        prog: &libbpf_rs::ProgramMut<'_>,
        hooknum: i32,
        priority: i32,
    ) -> Result<Vec<Link>> {
        // --netns elsewhere: not the recorder's own namespace.
        let mut links = if let Some(ino) = self.only {
            if self.at_start.is_empty() {
                bail!("network namespace net:[{ino}] (--netns) is held by no process and not under /run/netns: it cannot be entered");
            }
            Vec::new()
        } else {
            attach_both(prog, hooknum, priority)?
        };
        self.programs.push((
            prog.name().to_string_lossy().into_owned(),
            hooknum,
            priority,
        ));
        for (ino, ns) in &self.at_start {
            if self.skipped.contains_key(ino) {
                continue;
            }
            match self.inside(ns, || attach_both(prog, hooknum, priority))? {
                Some(Ok(l)) => links.extend(l),
                // The one namespace asked for: its hook's error is the layer's.
                Some(Err(e)) if self.only.is_some() => return Err(e),
                None if self.only.is_some() => {
                    bail!("could not enter network namespace net:[{ino}] (--netns)")
                }
                Some(Err(e)) => {
                    self.skipped.insert(*ino, format!("{e:#}"));
                }
                None => {
                    self.skipped.insert(*ino, "could not be entered".into());
                }
            }
        }
        Ok(links)
    }

    /// The line the ip layer's source carries: where its hooks are.
    fn scope(&mut self) -> String {
        let mut entered = 0;
        // Hold the namespaces hooked (see Links); the others can go.
        for (ino, f) in std::mem::take(&mut self.at_start) {
            if !self.skipped.contains_key(&ino) {
                self.pins.push(f);
                entered += 1;
            }
        }
        if self.filtered {
            return match self.only {
                Some(ino) => {
                    format!("netfilter hooks in network namespace net:[{ino}] only (--netns)")
                }
                None => "netfilter hooks in the recorder's network namespace only (--netns)".into(),
            };
        }
        let mut line = format!(
            "netfilter hooks in every network namespace: the {} at the start, and each one made later from about a second after it appears",
            entered + 1
        );
        if !self.skipped.is_empty() {
            let why: Vec<String> = self
                .skipped
                .iter()
                .take(3)
                .map(|(i, w)| format!("net:[{i}] ({w})"))
                .collect();
            line.push_str(&format!(
                "; {} left out: {}{}",
                self.skipped.len(),
                why.join(", "),
                if self.skipped.len() > 3 { ", …" } else { "" }
            ));
        }
        line
    }

    /// The links of every attached program in each namespace made since the
    /// last look. A namespace that cannot be entered, or refuses one of
    /// them, is left as it is (its links so far detached).
    fn follow_new(&mut self, object: &libbpf_rs::Object) -> Vec<Link> {
        let mut out = Vec::new();
        if self.programs.is_empty() || self.own.is_none() || self.filtered {
            return out;
        }
        for (ino, path) in crate::netdevs::namespaces() {
            if !self.known.insert(ino) {
                continue;
            }
            let Ok(ns) = std::fs::File::open(&path) else {
                continue; // gone meanwhile
            };
            let attached = self.inside(&ns, || -> Result<Vec<Link>> {
                let mut links = Vec::new();
                for (name, hooknum, priority) in &self.programs {
                    let prog = object
                        .progs_mut()
                        .find(|p| p.name().to_string_lossy() == name.as_str())
                        .ok_or_else(|| anyhow!("program {name} missing"))?;
                    links.extend(attach_both(&prog, *hooknum, *priority)?);
                }
                Ok(links)
            });
            match attached {
                Ok(Some(Ok(l))) => {
                    out.extend(l);
                    self.pins.push(ns);
                }
                Ok(_) => {}
                // This thread could not return to its own namespace: attach
                // nothing more from it.
                Err(_) => {
                    self.programs.clear();
                    break;
                }
            }
        }
        out
    }
}

/// How often each CPU's batch tick runs: a CPU gone quiet sends its last
/// records within this (plus the time the drain takes to poll).
pub(super) const BATCH_TICK_NS: u64 = 2_000_000;

const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

/// Attaches `batch_tick` to a cpu-clock perf event on every online CPU (an
/// offline CPU runs no program; it has nothing to send).
fn attach_batch_tick(skel: &RecordSkel<'static>) -> Result<Vec<Link>> {
    let cpus = libbpf_rs::num_possible_cpus().context("counting the possible CPUs")?;
    let mut links = Vec::new();
    for cpu in 0..cpus {
        // SAFETY: perf_event_attr is plain data; all zero is a valid value.
        let mut attr: libbpf_sys::perf_event_attr = unsafe { std::mem::zeroed() };
        attr.type_ = libbpf_sys::PERF_TYPE_SOFTWARE;
        attr.size = std::mem::size_of::<libbpf_sys::perf_event_attr>() as u32;
        attr.config = libbpf_sys::PERF_COUNT_SW_CPU_CLOCK as u64;
        attr.__bindgen_anon_1.sample_period = BATCH_TICK_NS;
        // SAFETY: perf_event_open reads one perf_event_attr, which `attr` is.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                &attr as *const libbpf_sys::perf_event_attr,
                -1i32,
                cpu as i32,
                -1i32,
                PERF_FLAG_FD_CLOEXEC,
            )
        };
        if fd < 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::ENODEV) {
                continue; // offline
            }
            bail!(
                "opening a cpu-clock perf event on CPU {cpu} (it sends each CPU's waiting \
                 records to the trace): {e}; the kernel needs CONFIG_PERF_EVENTS"
            );
        }
        // The link owns the perf event's fd from here (libbpf closes it).
        let link = skel
            .progs
            .batch_tick
            .attach_perf_event(fd as i32)
            .with_context(|| format!("attaching the batch tick to CPU {cpu}"));
        match link {
            Ok(l) => links.push(l),
            Err(e) => {
                // SAFETY: fd is ours and not attached.
                unsafe { libc::close(fd as i32) };
                return Err(e);
            }
        }
    }
    Ok(links)
}

/// Whether a probe is wanted: its layer is selected and its kind enabled.
fn probe_on(config: &RecordConfig, probe: &Probe) -> bool {
    let layer = probe.group;
    config.layers.contains(&layer)
        && probes::kind(probe).is_none_or(|k| config.kinds.enabled(k, probe.default_on))
}

/// Whether a chosen hook has the program `name`.
fn chosen_has(chosen: &[Choice<Layer>], name: &str) -> bool {
    chosen
        .iter()
        .any(|c| c.candidate().is_some_and(|h| h.has_prog(name)))
}

use magnet_host::libbpf_log as load_log;

/// A probe that cannot attach on this kernel. Optional ones (and those of
/// default layers) are left out with one line in the trace's layer notes (the
/// CLI prints them); a layer the user asked for by name fails with that line.
fn left_out(
    config: &RecordConfig,
    sources: &mut BTreeMap<Layer, LayerSource>,
    probe: &Probe,
    why: &str,
) -> Result<()> {
    let layer = probe.group;
    let what = match probes::kind(probe) {
        Some(k) => format!("{k} not recorded"),
        None => format!("{} left out", probe.name),
    };
    if !probe.optional && config.layers_named {
        bail!(
            "layer {layer} cannot be recorded on this kernel ({}): {}: {why} \
             (leave the layer out of --layers, or see `magnet record --check`)",
            kernel_release(),
            probe.name
        );
    }
    if let Some(src) = sources.get_mut(&layer) {
        src.missing.push(format!("{what}: {why}"));
    }
    Ok(())
}

/// One line of `magnet record --check`: the hook that will feed a kind on
/// this kernel, or why none can.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CheckLine {
    pub layer: String,
    pub kind: String,
    pub default_on: bool,
    /// Left out without failing the layer where no hook is found (io_uring's
    /// calls on a kernel without their tracepoints): `missing` says so.
    pub optional: bool,
    pub hook: Option<String>,
    pub missing: Option<String>,
    /// A better hook this kernel has but whose program its verifier refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

/// What `magnet record` would attach on this kernel, for every kind of every
/// layer, and what the kernel offers: the chosen programs are loaded once, as
/// for a recording of a command or pids (`--all` may keep a hook a task filter
/// costs). Needs root (it probes attach types).
pub fn check() -> Result<(magnet_kernel::Features, Vec<CheckLine>), crate::Error> {
    preflight()?;
    Ok(check_inner()?)
}

fn check_inner() -> Result<(magnet_kernel::Features, Vec<CheckLine>)> {
    let kernel = probes::Kernel::detect().context("reading what this kernel offers")?;
    let plan = probes::plan(&kernel);
    // Load every chosen program once (nothing is attached): what the verifier
    // refuses moves on to its next hook, as it would when recording.
    let mut chosen: Vec<Choice<Layer>> =
        plan.iter().filter(|c| c.chosen.is_ok()).cloned().collect();
    let mut refused: BTreeMap<&str, String> = BTreeMap::new();
    let wanted = |chosen: &[Choice<Layer>], name: &str| chosen_has(chosen, name);
    let skel = load_with_fallback(
        &kernel,
        Helpers::of(&kernel),
        &mut chosen,
        |probe, why| {
            refused.insert(probe.name, why.to_string());
            Ok(())
        },
        |open| {
            // As for `-- COMMAND` and `-p`: the task filters are what some
            // verifiers refuse (6.12: task storage in netfilter programs).
            let ro = open
                .maps
                .rodata_data
                .as_deref_mut()
                .expect("the object has read-only settings");
            ro.filter_tasks = true;
            ro.filter_pid = true;
            Ok(())
        },
        &wanted,
    )?;
    drop(skel);
    // Probes that moved on to a later hook: say which one was refused.
    let moved: BTreeMap<&str, String> = plan
        .iter()
        .filter_map(|c| {
            let first = c.chosen.as_ref().ok()?;
            let now = chosen.iter().find(|d| std::ptr::eq(d.part, c.part))?;
            let later = now.chosen.as_ref().ok()?;
            (later != first).then(|| {
                (
                    c.part.name,
                    format!(
                        "{} refused by this kernel's verifier",
                        c.part.candidates[*first].name()
                    ),
                )
            })
        })
        .collect();
    let lines = plan
        .into_iter()
        .map(|c| {
            let now = chosen.iter().find(|d| std::ptr::eq(d.part, c.part));
            CheckLine {
                layer: c.part.group.name().to_string(),
                kind: c.part.name.to_string(),
                default_on: c.part.default_on,
                optional: c.part.optional,
                hook: now.and_then(|d| d.name()),
                refused: moved.get(c.part.name).cloned(),
                missing: match now {
                    Some(_) => None,
                    None => refused
                        .get(c.part.name)
                        .cloned()
                        .or_else(|| c.chosen.is_err().then(|| c.reasons())),
                },
            }
        })
        .collect();
    Ok((kernel.features, lines))
}

/// Whether tcp_rcv events are recorded (the tcp layer with its tcp_rcv kind).
fn tcp_rcv_on(config: &RecordConfig) -> bool {
    kind_on(config, "tcp_rcv")
}

/// Whether the probe of this kind is wanted (its layer selected, the kind on).
fn kind_on(config: &RecordConfig, kind: &str) -> bool {
    PROBES
        .iter()
        .find(|p| probes::kind(p) == Some(kind))
        .is_some_and(|p| probe_on(config, p))
}

/// Whether this kernel creates task-storage maps (Linux 5.11+); asked of the
/// kernel itself, not guessed from its version.
fn has_task_storage() -> bool {
    // SAFETY: a probe call with no options; it creates and closes one map.
    unsafe {
        libbpf_sys::libbpf_probe_bpf_map_type(
            libbpf_sys::BPF_MAP_TYPE_TASK_STORAGE,
            std::ptr::null(),
        ) == 1
    }
}

/// The loaded object holding the programs of the `chosen` hooks (and the
/// support programs `wanted` names). A hook the table allows can still be
/// refused by this kernel's verifier (6.12 lets netfilter programs call fewer
/// helpers than 6.18): the program that failed is named in libbpf's log; its
/// probe moves on to its next hook the kernel has (or, with none left, goes to
/// `refused`) and the object is loaded again.
fn load_with_fallback(
    kernel: &probes::Kernel,
    helpers: Helpers,
    chosen: &mut Vec<Choice<Layer>>,
    mut refused: impl FnMut(&'static Probe, &str) -> Result<()>,
    mut configure: impl FnMut(&mut OpenRecordSkel<'static>) -> Result<()>,
    wanted: &dyn Fn(&[Choice<Layer>], &str) -> bool,
) -> Result<RecordSkel<'static>> {
    // What the verifier refused so far: (probe, hook) → why.
    let mut refusals = Refusals::new();
    loop {
        // One small allocation per attempt, kept for the recording's life.
        let storage = magnet_host::object_storage();
        let mut open = RecordSkelBuilder::default()
            .open(storage)
            .context("opening the BPF object failed")?;
        configure(&mut open)?;
        // Task storage (5.11+) holds each thread's socket call in flight;
        // without it the same state lives in a hash by thread id.
        {
            let ro = open
                .maps
                .rodata_data
                .as_deref_mut()
                .expect("the object has read-only settings");
            ro.in_flight_by_tid = !helpers.task_storage;
            ro.cookie_helper = helpers.cookie;
            ro.sk_storage_in_tracing = helpers.sk_storage;
        }
        if helpers.task_storage {
            open.maps.in_flight_tid.set_max_entries(1)?;
        } else {
            open.maps.in_flight.set_autocreate(false)?;
        }
        if helpers.sk_storage {
            open.maps.sock_flags_by_key.set_max_entries(1)?;
        }
        for mut prog in open.open_object_mut().progs_mut() {
            let name = prog.name().to_string_lossy().into_owned();
            // A twin without the filter stands in for its program, or not.
            let load = match name.strip_suffix("_nl") {
                Some(base) if PF_TWINS.contains(&base) => !helpers.bpf_loop && wanted(chosen, base),
                _ => helpers.prog(&name) == name && wanted(chosen, &name),
            };
            prog.set_autoload(load);
        }
        let (loaded, log) = load_log::capture(|| open.load());
        let e = match loaded {
            Ok(skel) => return Ok(skel),
            Err(e) => e,
        };
        let failed = load_log::failed_program(&log).map(|p| match p.strip_suffix("_nl") {
            Some(base) if PF_TWINS.contains(&base) => base.to_string(),
            _ => p,
        });
        let reason = load_log::verifier_reason(&log);
        let next = failed.as_deref().and_then(|prog| {
            chosen
                .iter()
                .position(|c| chosen_has(std::slice::from_ref(c), prog))
        });
        let Some(i) = next else {
            let progs: Vec<String> = chosen.iter().filter_map(|c| c.name()).collect();
            bail!(
                "loading the BPF programs failed on Linux {}: {e}{}{}\n\
                 hooks chosen for this kernel: {}; `magnet record --check` lists them; \
                 run with -v to see the verifier's log",
                kernel.features.release,
                failed
                    .map(|p| format!(" (program {p})"))
                    .unwrap_or_default(),
                reason.map(|r| format!(": {r}")).unwrap_or_default(),
                progs.join(", ")
            );
        };
        let mut c = chosen.remove(i);
        let at = *c.chosen.as_ref().expect("chosen");
        let why = format!(
            "{}: the verifier refused {}: {}",
            c.part.candidates[at].name(),
            failed.as_deref().unwrap_or("?"),
            reason
                .as_deref()
                .unwrap_or("magnet -v shows the verifier's log")
        );
        refusals.insert((c.part.name, at), why.clone());
        // Its next hook this kernel has; with none, every later candidate
        // is named too, with what it lacks.
        let (next, rest) = c.part.choose_from(at + 1, &|a| kernel.lacks(a), &refusals);
        match next {
            Some(h) => {
                c.chosen = Ok(h);
                c.passed.push(why);
                c.passed.extend(rest);
                chosen.push(c);
            }
            None => {
                let why = std::iter::once(why)
                    .chain(rest)
                    .collect::<Vec<_>>()
                    .join("; ");
                refused(c.part, &why)?
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PF_TWINS names exactly the programs the recorder's BPF files define
    /// with PF_PROG (each of which has its `_nl` twin).
    #[test]
    fn the_filter_twins_are_the_pf_programs() {
        let src = crate::bpf_program_sources();
        let mut defined: Vec<&str> = src
            .split("\nPF_PROG(\"")
            .skip(1)
            .filter_map(|rest| rest.split(", ").nth(1))
            .collect();
        defined.sort_unstable();
        let mut listed = PF_TWINS.to_vec();
        listed.sort_unstable();
        assert_eq!(defined, listed);
    }

    /// The names asked of the kernel's BTF exist on a kernel that has each
    /// ability (this machine's 6.18): a misspelt one would silently put every
    /// kernel on the fallbacks. Where they are missing (5.10) the QEMU lab
    /// records through the fallbacks (scripts/lab/matrix).
    #[test]
    fn helpers_are_found_on_a_kernel_that_has_them() {
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: the map probe needs root");
            return;
        }
        let Ok(kernel) = probes::Kernel::detect() else {
            eprintln!("skipped: no BTF");
            return;
        };
        let h = Helpers::of(&kernel);
        assert!(
            h.bpf_loop && h.cookie && h.sk_storage && h.task_storage,
            "{h:?}"
        );
        assert_eq!(h.prog("dev_rx"), "dev_rx");
        let old = Helpers {
            bpf_loop: false,
            ..h
        };
        assert_eq!(old.prog("dev_rx"), "dev_rx_nl");
        assert_eq!(old.prog("app_send_fexit4"), "app_send_fexit4");
    }

    #[test]
    fn probes_follow_layers_and_kinds() {
        let mut c = RecordConfig::new("x.mgt".into());
        let p = |k: &str| PROBES.iter().find(|p| probes::kind(p) == Some(k)).unwrap();
        assert!(probe_on(&c, p("app_send")));
        assert!(!probe_on(&c, p("dev_xmit")), "off by default");
        assert!(!probe_on(&c, p("qdisc_enq")), "layer not selected");
        assert!(tcp_rcv_on(&c));
        c.layers.remove(&Layer::Tcp);
        assert!(!tcp_rcv_on(&c));
        c.kinds = crate::config::parse_kinds("+qdisc_enq").unwrap();
        let e = check_kinds(&c).unwrap_err();
        assert!(e.to_string().contains("not selected"), "{e}");
    }
}
