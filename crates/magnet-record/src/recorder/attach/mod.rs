//! Attach: which hook feeds each probe on this kernel, loading the BPF object
//! with the settings of the recording (falling back to a probe's next hook when
//! the verifier refuses one), and attaching the chosen programs, support
//! programs, cgroup and netfilter links. `magnet record --check` shares it.

use std::collections::BTreeMap;

use anyhow::{anyhow, bail, Context, Result};
use libbpf_rs::skel::Skel;
use libbpf_rs::Link;
use libbpf_rs::MapCore;
use magnet_trace::{Header, LayerSource};

use super::targets::Cgroup2Root;
use crate::config::Layer;
use crate::probes::{self};
use crate::skel::RecordSkel;
use magnet_kernel::plan::{Attach, Choice};

mod batch_tick;
mod check;
mod load;
mod netfilter;
mod plan;

pub use check::{check, CheckLine};
pub(super) use load::{direct_records, load};
pub(super) use plan::{check_kinds, Needs, Plan};

use batch_tick::attach_batch_tick;
use netfilter::NetfilterNamespaces;
use plan::left_out;

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
    load_filter(skel, &config.pcap_filter_insns)?;
    let object = skel.object();
    let mut netns = NetfilterNamespaces::open(config.filters.netns);
    let mut fed = attach_chosen(plan, needs, object, &mut netns)?;
    let sources = &mut plan.sources;
    let wanted = |name: &str| needs.wants(&plan.chosen, name);
    fed.links
        .extend(attach_support(needs, object, sources, &wanted)?);
    fed.links.extend(attach_batch_tick(skel)?);
    if config.layers.contains(&Layer::Sched) {
        if let Some(s) = sources.get_mut(&Layer::Sched) {
            s.hooks.push("tp_btf/sched_process_fork".into());
        }
    }
    let func_source = if config.funcs.is_empty() {
        None
    } else {
        let (src, flinks) = needs.funcs.attach(object, header);
        fed.links.extend(flinks);
        Some(src)
    };
    if fed.netfilter_used {
        if let Some(s) = sources.get_mut(&Layer::Ip) {
            s.notes.push(netns.scope());
        }
    }
    // TCP's segments out are counted where IP sends them (the ip layer's
    // LOCAL_OUT records): a trace without ip has no tcp out row, which
    // nothing else would say.
    if !config.layers.contains(&Layer::Ip) {
        if let Some(s) = sources.get_mut(&Layer::Tcp) {
            s.notes.push(
                "no tcp out rows: TCP's segments out are counted where IP sends them;                  add ip to --layers for them"
                    .into(),
            );
        }
    }
    fed.name_hooks(header);
    header.layers = sources.values().cloned().collect();
    header.layers.extend(func_source);
    Ok(Links {
        links: fed.links,
        netns,
        object,
        devices: crate::netdevs::DeviceWatch::new(&header.interfaces),
    })
}

/// record -f: the filter's instructions, before any program runs.
fn load_filter(skel: &RecordSkel<'static>, insns: &[(u16, u8, u8, u32)]) -> Result<()> {
    for (i, &(code, jt, jf, k)) in insns.iter().enumerate() {
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
    Ok(())
}

/// The links of the chosen hooks, and which hook fed each kind.
struct Fed {
    links: Vec<Link>,
    hooks_by_kind: BTreeMap<&'static str, String>,
    /// The app kinds' events come from the syscall and io_uring hooks (their
    /// own hooks only name the socket of the call).
    app_helpers: Vec<String>,
    netfilter_used: bool,
}

impl Fed {
    /// The catalog names the hook that fed each kind on this kernel.
    fn name_hooks(&mut self, header: &mut Header) {
        for k in ["app_send", "app_recv"] {
            if let Some(h) = self.hooks_by_kind.get_mut(k) {
                *h = self
                    .app_helpers
                    .iter()
                    .chain([&*h])
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("+");
            }
        }
        for k in header.catalog.kinds.iter_mut() {
            if let Some(h) = self.hooks_by_kind.get(k.name.as_str()) {
                k.hook = h.clone();
            }
        }
    }
}

/// Attaches every program of each chosen hook; a hook that fails to attach
/// leaves its probe out (see [`left_out`]).
fn attach_chosen(
    plan: &mut Plan,
    needs: &Needs<'_>,
    object: &libbpf_rs::Object,
    netns: &mut NetfilterNamespaces,
) -> Result<Fed> {
    let config = needs.config;
    let sources = &mut plan.sources;
    let mut fed = Fed {
        links: Vec::new(),
        hooks_by_kind: BTreeMap::new(),
        app_helpers: Vec::new(),
        netfilter_used: false,
    };
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
                Attach::TpBtf { .. }
                | Attach::Fentry(_)
                | Attach::Fexit(_)
                | Attach::Tracepoint(_) => {
                    // (the failure line below names the attach point)
                    magnet_kernel::attach::attach_tracing(&prog, *attach)
                        .map(|l| vec![l])
                        .map_err(|e| match e {
                            magnet_kernel::Error::Attach { reason, .. } => anyhow!(reason),
                            e => e.into(),
                        })
                }
                Attach::Iter(_)
                | Attach::CgroupSkb(_)
                | Attach::SockOps
                | Attach::Tcx(_)
                | Attach::Clsact(_) => {
                    bail!("{name}: the recorder attaches no iterator, cgroup or tc programs")
                }
                Attach::Kprobe(_)
                | Attach::Kretprobe(_)
                | Attach::KprobeMulti(_)
                | Attach::KretprobeMulti(_) => {
                    bail!("{name}: function probes are attached by record --funcs' own plan")
                }
                Attach::Netfilter(hooknum) => {
                    // Observe last on the way out (final headers), first on the way in.
                    let out = *hooknum == libbpf_rs::NF_INET_LOCAL_OUT
                        || *hooknum == libbpf_rs::NF_INET_POST_ROUTING;
                    let priority = if out { i32::MAX - 1 } else { i32::MIN + 1 };
                    fed.netfilter_used = true;
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
                fed.links.extend(hook_links);
                let name = hook.name();
                if let Some(k) = probes::kind(probe) {
                    // A kind fed by two parts (app_recv: sock_recv_length, and
                    // tcp_rcv_space_adjust for splice reads) names both.
                    fed.hooks_by_kind
                        .entry(k)
                        .and_modify(|h| {
                            h.push('+');
                            h.push_str(&name);
                        })
                        .or_insert_with(|| name.clone());
                } else if probe.group == Layer::App {
                    fed.app_helpers.push(name.clone());
                }
                if !src.hooks.contains(&name) {
                    src.hooks.push(name);
                }
            }
            Some(why) => left_out(config, sources, probe, &why)?,
        }
    }
    Ok(fed)
}

/// The support programs the recording's layers and filters call for, and the
/// cgroup link that gives sockets their cookie when created.
fn attach_support(
    needs: &Needs<'_>,
    object: &libbpf_rs::Object,
    sources: &mut BTreeMap<Layer, LayerSource>,
    wanted: &dyn Fn(&str) -> bool,
) -> Result<Vec<Link>> {
    let mut links = Vec::new();
    for name in [
        probes::FOLLOW_FORKS,
        probes::PKT_FREE,
        probes::PKT_CONSUME,
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
    let flows = needs.flows_at_bind.as_ref();
    if let Some(why) = flows.and_then(Choice::left_out_line) {
        // Without it a socket is known from its first send or recv on.
        packet_layer_lacks(sources, format!(
            "{why} (a socket's packets that arrive before its first send or recv are not attributed to it)"
        ));
    }
    for (name, attach) in flows
        .and_then(Choice::candidate)
        .map_or(&[][..], |h| h.progs)
    {
        let prog = object
            .progs_mut()
            .find(|p| p.name() == *name)
            .expect("support program in object");
        links.push(
            magnet_kernel::attach::attach_tracing(&prog, *attach)
                .with_context(|| format!("attaching support program {name}"))?,
        );
    }
    let cgroup2_root = needs.packets.then(Cgroup2Root::find);
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
            Err(e) => packet_layer_lacks(sources, format!(
                "cgroup/sock_create on the cgroup v2 root: {e:#} (a socket's first packets may lack its cookie)"
            )),
        }
    }
    Ok(links)
}

/// Says what the recording lacks in its first layer that follows packets
/// (what a support program would have given them).
fn packet_layer_lacks(sources: &mut BTreeMap<Layer, LayerSource>, what: String) {
    if let Some((_, src)) = sources.iter_mut().find(|(l, _)| l.follows_packets()) {
        src.missing.push(what);
    }
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
    /// Devices made during the recording, named in the END block.
    devices: crate::netdevs::DeviceWatch,
}

impl Drop for Links<'_> {
    /// The links are released together (each syscall tracepoint's waits for
    /// a grace period), and before the namespaces (the fields that drop
    /// after this).
    fn drop(&mut self) {
        magnet_host::attach::detach_together(std::mem::take(&mut self.links));
    }
}

impl Links<'_> {
    /// Attaches the netfilter programs in the namespaces made since the start
    /// or the last call (the drain calls it every second), so that a
    /// container or `ip netns add` during the recording has its ip layer too.
    pub(super) fn follow_new_namespaces(&mut self) {
        let new = self.netns.follow_new(self.object);
        self.links.extend(new);
        self.devices.tick();
    }

    /// Hands the links to a process that releases them (the programs are
    /// stopped already: see `stop_programs` in drain.rs), with the
    /// namespaces they are in, which it holds until they are released.
    pub(super) fn release_in_background(mut self) {
        use std::os::fd::AsRawFd;
        let pins: Vec<_> = self.netns.pins().iter().map(|f| f.as_raw_fd()).collect();
        magnet_host::attach::detach_in_background(std::mem::take(&mut self.links), &pins);
    }

    /// The devices made during the recording, with a last look at the stop.
    pub(super) fn later_devices(&mut self) -> Vec<magnet_trace::Interface> {
        self.devices.scan();
        self.devices.later().to_vec()
    }
}
