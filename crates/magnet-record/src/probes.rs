//! The table of probes: for every record kind, its layer and the hooks that
//! can feed it, best first (tp_btf → fentry/fexit → netfilter link where that
//! is the only stable hook). One table drives loading: [`plan`] picks, for the
//! running kernel, the first hook whose needs it meets, `magnet record --check`
//! prints the choice, and `magnet info` names the hook that fed each layer.
//! Records are the same whatever hook fed them.

use std::collections::HashSet;

use magnet_kernel::plan::{self, Attach, Candidate, Choice, Part, Refusals};
use magnet_kernel::{Features, KernelBtf};

use crate::config::Layer;

/// One probe: a part of the recorder whose group is its layer and which
/// feeds its record kind (`feeds`; "" for a probe that only helps its
/// layer's others, named by its first program).
pub type Probe = Part<Layer>;

/// The record kind a probe writes (None: it only helps its layer's others).
pub fn kind(p: &Probe) -> Option<&'static str> {
    (!p.feeds.is_empty()).then_some(p.feeds)
}

use libbpf_rs::{NF_INET_LOCAL_IN, NF_INET_LOCAL_OUT, NF_INET_POST_ROUTING, NF_INET_PRE_ROUTING};
use Attach::*;
use Layer::*;

macro_rules! hook {
    ($( $prog:literal => $attach:expr ),+ $(,)?) => {
        Candidate::progs(&[ $( ($prog, $attach) ),+ ])
    };
}

macro_rules! probe {
    ($layer:expr, $kind:expr, [$($h:expr),+ $(,)?]) => {
        Part { name: $kind, group: $layer, feeds: $kind, candidates: &[$($h),+], optional: false, default_on: true }
    };
}

/// Off by default: each is one more event per packet with little news for a
/// host's own traffic (dev_queue: queueing shows in the qdisc layer; dev_xmit:
/// transmit-done follows handed-to-driver within a microsecond on veth and
/// loopback; POST_ROUTING/PRE_ROUTING repeat LOCAL_OUT/LOCAL_IN unless packets
/// are forwarded or NATed). Events per packet are what a recording costs, so
/// they are opt-in: `--kinds +dev_xmit,+ip_pre_routing` or `--kinds all`.
macro_rules! detail {
    ($layer:expr, $kind:expr, [$($h:expr),+ $(,)?]) => {
        Part { name: $kind, group: $layer, feeds: $kind, candidates: &[$($h),+], optional: false, default_on: false }
    };
}

const fn nf(h: i32) -> Attach {
    Netfilter(h)
}

const fn tpa(tp: &'static str, args: usize) -> Attach {
    TpBtf {
        tp,
        args: Some(args),
    }
}

const fn t(tp: &'static str) -> Attach {
    TpBtf { tp, args: None }
}

/// The socket calls' own enter and exit tracepoints (app.bpf.c's `app_nr`):
/// a program at the start of each (one per count of arguments read: the
/// kernel refuses one that reads past a call's last) and one at the end,
/// and none at the host's other system calls.
const APP_CALL_TRACEPOINTS: &[(&str, Attach)] = &[
    ("app_enter3_tp", Tracepoint("syscalls/sys_enter_read")),
    ("app_enter3_tp", Tracepoint("syscalls/sys_enter_write")),
    ("app_enter3_tp", Tracepoint("syscalls/sys_enter_readv")),
    ("app_enter3_tp", Tracepoint("syscalls/sys_enter_writev")),
    ("app_enter4_tp", Tracepoint("syscalls/sys_enter_sendfile64")),
    ("app_enter5_tp", Tracepoint("syscalls/sys_enter_sendto")),
    ("app_enter5_tp", Tracepoint("syscalls/sys_enter_recvfrom")),
    ("app_enter3_tp", Tracepoint("syscalls/sys_enter_sendmsg")),
    ("app_enter3_tp", Tracepoint("syscalls/sys_enter_recvmsg")),
    ("app_enter5_tp", Tracepoint("syscalls/sys_enter_splice")),
    ("app_enter4_tp", Tracepoint("syscalls/sys_enter_sendmmsg")),
    ("app_enter5_tp", Tracepoint("syscalls/sys_enter_recvmmsg")),
    ("app_exit_tp", Tracepoint("syscalls/sys_exit_read")),
    ("app_exit_tp", Tracepoint("syscalls/sys_exit_write")),
    ("app_exit_tp", Tracepoint("syscalls/sys_exit_readv")),
    ("app_exit_tp", Tracepoint("syscalls/sys_exit_writev")),
    ("app_exit_tp", Tracepoint("syscalls/sys_exit_sendfile64")),
    ("app_exit_tp", Tracepoint("syscalls/sys_exit_sendto")),
    ("app_exit_tp", Tracepoint("syscalls/sys_exit_recvfrom")),
    ("app_exit_tp", Tracepoint("syscalls/sys_exit_sendmsg")),
    ("app_exit_tp", Tracepoint("syscalls/sys_exit_recvmsg")),
    ("app_exit_tp", Tracepoint("syscalls/sys_exit_splice")),
    ("app_exit_tp", Tracepoint("syscalls/sys_exit_sendmmsg")),
    ("app_exit_tp", Tracepoint("syscalls/sys_exit_recvmmsg")),
];

/// The calls that reach their socket more than once (sendfile64, splice,
/// the mmsg pair): their own enter and exit tracepoints, where each is one
/// app call. The others are whole at their socket's send or recv
/// (app.bpf.c's `app_event`, from the call's registers).
const APP_MULTI_CALL_TRACEPOINTS: &[(&str, Attach)] = &[
    ("app_enter4_tp", Tracepoint("syscalls/sys_enter_sendfile64")),
    ("app_enter5_tp", Tracepoint("syscalls/sys_enter_splice")),
    ("app_enter4_tp", Tracepoint("syscalls/sys_enter_sendmmsg")),
    ("app_enter5_tp", Tracepoint("syscalls/sys_enter_recvmmsg")),
    ("app_exit_tp", Tracepoint("syscalls/sys_exit_sendfile64")),
    ("app_exit_tp", Tracepoint("syscalls/sys_exit_splice")),
    ("app_exit_tp", Tracepoint("syscalls/sys_exit_sendmmsg")),
    ("app_exit_tp", Tracepoint("syscalls/sys_exit_recvmmsg")),
];

/// The name `MAGNET_HOOKS_DENY` takes for the app calls' first candidate's
/// helper (bpf_task_pt_regs): a kernel before 5.15 lacks it.
pub const TASK_PT_REGS: &str = "task_pt_regs";

pub const PROBES: &[Probe] = &[
    // The app calls: one per socket syscall with the bytes it asked for
    // and its result. Best, a call that reaches its socket once is whole at
    // app_send/app_recv below (its arguments from its registers), and only
    // the four that reach it many times (a sendfile() sends once per pipe's
    // worth) have programs at their start and exit: one program per call
    // instead of three. Task and address filters need every call's start
    // (a traced task's first packets, an unconnected socket's destination),
    // as does a kernel without bpf_task_pt_regs (`plan`). Then at the calls'
    // own tracepoints: stamped at app_send/app_recv, emitted at the exit.
    // Where tracefs lacks them (no CONFIG_FTRACE_SYSCALLS, not mounted),
    // at every system call's start and end, which costs every other call of
    // the host a few hundred ns.
    Part {
        name: APP_CALLS,
        group: App,
        feeds: "",
        candidates: &[
            Candidate::progs(APP_MULTI_CALL_TRACEPOINTS),
            Candidate::progs(APP_CALL_TRACEPOINTS),
            hook!("app_sys_enter" => t("sys_enter"), "app_sys_exit" => t("sys_exit")),
        ],
        optional: false,
        default_on: true,
    },
    // io_uring requests: one app call per request, at its completion
    // (without these tracepoints io_uring's calls are not recorded).
    Part {
        name: "app_uring_submit",
        group: App,
        feeds: "",
        candidates: &[
            hook!("app_uring_submit" => tpa("io_uring_submit_req", 1),
                  "app_uring_complete" => tpa("io_uring_complete", 3)),
            // io_uring_complete before it took the CQE: its fields as arguments.
            hook!("app_uring_submit7" => tpa("io_uring_submit_req", 1),
                  "app_uring_complete7" => tpa("io_uring_complete", 7)),
        ],
        optional: true,
        default_on: true,
    },
    // A completion its ring had no room for (io_uring_cqe_overflow, 5.19+):
    // without this its request is no call (liburing's send-zerocopy example).
    Part {
        name: "app_uring_overflow",
        group: App,
        feeds: "",
        candidates: &[hook!("app_uring_overflow" => tpa("io_uring_cqe_overflow", 5))],
        optional: true,
        default_on: true,
    },
    probe!(
        App,
        "app_send",
        [
            hook!("app_send" => t("sock_send_length")),
            hook!("app_send_fexit4" => Fexit("inet_sendmsg"),
              "app_send_fexit6" => Fexit("inet6_sendmsg")),
        ]
    ),
    probe!(
        App,
        "app_recv",
        [
            hook!("app_recv" => t("sock_recv_length")),
            hook!("app_recv_fexit4" => Fexit("inet_recvmsg"),
              "app_recv_fexit6" => Fexit("inet6_recvmsg")),
        ]
    ),
    // splice() from a TCP socket (a proxy's zero-copy read): it never passes
    // sock_recv_length, so the call is stamped at tcp_rcv_space_adjust, which
    // its tcp_read_sock ends in. Without it such reads are not recorded.
    Part {
        name: "app_splice_recv",
        group: App,
        feeds: "app_recv",
        candidates: &[hook!("app_splice_recv" => t("tcp_rcv_space_adjust"))],
        optional: true,
        default_on: true,
    },
    probe!(
        Tcp,
        "tcp_state",
        [hook!("tcp_state_change" => t("inet_sock_set_state"))]
    ),
    probe!(Tcp, "tcp_rcv", [hook!("tcp_rcv" => t("tcp_probe"))]),
    probe!(
        Tcp,
        "tcp_sendmsg",
        [
            hook!("tcp_sendmsg" => t("tcp_sendmsg_locked")),
            hook!("tcp_sendmsg_fentry" => Fentry("tcp_sendmsg_locked")),
        ]
    ),
    probe!(
        Tcp,
        "tcp_retrans",
        [
            hook!("tcp_retrans" => tpa("tcp_retransmit_skb", 3)),
            hook!("tcp_retrans_2arg" => tpa("tcp_retransmit_skb", 2)),
        ]
    ),
    probe!(
        Tcp,
        "tcp_rst_sent",
        [
            hook!("tcp_rst_sent" => tpa("tcp_send_reset", 3)),
            hook!("tcp_rst_sent_2arg" => tpa("tcp_send_reset", 2)),
        ]
    ),
    probe!(
        Tcp,
        "tcp_rst_rcvd",
        [hook!("tcp_rst_rcvd" => t("tcp_receive_reset"))]
    ),
    probe!(
        Ip,
        "ip_local_out",
        [
            hook!("ip_local_out" => nf(NF_INET_LOCAL_OUT)),
            hook!("ip_local_out_fexit4" => Fexit("__ip_local_out"),
              "ip_local_out_fexit6" => Fexit("__ip6_local_out")),
        ]
    ),
    detail!(
        Ip,
        "ip_post_routing",
        [
            hook!("ip_post_routing" => nf(NF_INET_POST_ROUTING)),
            hook!("ip_post_routing_fentry4" => Fentry("ip_output"),
              "ip_post_routing_fentry6" => Fentry("ip6_output")),
        ]
    ),
    detail!(
        Ip,
        "ip_pre_routing",
        [
            hook!("ip_pre_routing" => nf(NF_INET_PRE_ROUTING)),
            hook!("ip_pre_routing_fentry4" => Fentry("ip_rcv"),
              "ip_pre_routing_fentry6" => Fentry("ipv6_rcv")),
        ]
    ),
    probe!(
        Ip,
        "ip_local_in",
        [
            hook!("ip_local_in" => nf(NF_INET_LOCAL_IN)),
            hook!("ip_local_in_fentry4" => Fentry("ip_local_deliver"),
              "ip_local_in_fentry6" => Fentry("ip6_input")),
        ]
    ),
    probe!(
        Qdisc,
        "qdisc_enq",
        [hook!("qdisc_enq" => t("qdisc_enqueue"))]
    ),
    probe!(
        Qdisc,
        "qdisc_deq",
        [hook!("qdisc_deq" => t("qdisc_dequeue"))]
    ),
    detail!(Dev, "dev_queue", [hook!("dev_queue" => t("net_dev_queue"))]),
    probe!(
        Dev,
        "dev_start_xmit",
        [hook!("dev_start_xmit" => t("net_dev_start_xmit"))]
    ),
    detail!(Dev, "dev_xmit", [hook!("dev_xmit" => t("net_dev_xmit"))]),
    probe!(Dev, "dev_rx", [hook!("dev_rx" => t("netif_receive_skb"))]),
    probe!(
        Drop,
        "drop",
        [
            // kfree_skb before 5.17 (no drop reason): exactly two arguments.
            hook!("drop_kfree_skb_2arg" => tpa("kfree_skb", 2)),
            hook!("drop_kfree_skb" => t("kfree_skb")),
        ]
    ),
    probe!(
        Sched,
        "sched_switch",
        [
            // sched_switch before 5.18 (no prev_state): exactly three arguments.
            hook!("sched_switch_3arg" => tpa("sched_switch", 3)),
            hook!("sched_switch" => t("sched_switch")),
        ]
    ),
    probe!(
        Sched,
        "sched_wakeup",
        [hook!("sched_wakeup" => t("sched_wakeup"))]
    ),
    probe!(
        Sched,
        "sched_exit",
        [hook!("sched_exit" => t("sched_process_exit"))]
    ),
];

/// Support programs, loaded when needed (see `Recorder::open`).
pub const FOLLOW_FORKS: &str = "sched_fork";
pub const PKT_FREE: &str = "pkt_free";
pub const PKT_CONSUME: &str = "pkt_consume";
/// A socket's flow known from its bind() or connect() (packet layers):
/// planned like a probe, loaded when a layer follows packets.
pub const FLOWS_AT_BIND: Probe = Part {
    name: "flows_at_bind",
    group: Ip,
    feeds: "socket flows at bind() and connect()",
    candidates: &[
        Candidate::progs(&[
            ("flow_enter_tp", Tracepoint("syscalls/sys_enter_bind")),
            ("flow_enter_tp", Tracepoint("syscalls/sys_enter_connect")),
            ("flow_exit_tp", Tracepoint("syscalls/sys_exit_bind")),
            ("flow_exit_tp", Tracepoint("syscalls/sys_exit_connect")),
        ]),
        hook!("flow_sys_exit" => t("sys_exit")),
    ],
    optional: true,
    default_on: true,
};
/// tcp_rcv outside ESTABLISHED when dev_rx (which does it too) is not loaded.
pub const TCP_RX_SEG: &str = "tcp_rx_seg";
/// cgroup/sock_create on the cgroup v2 root: cookies from a socket's creation.
pub const COOKIE_AT_CREATE: &str = "sock_cookie_at_create";
/// A cpu-clock perf event on every CPU: sends the CPU's waiting batch of
/// records to its ring (record.bpf.c, "per-CPU batches").
pub const BATCH_TICK: &str = "batch_tick";

/// The record kinds program `prog` writes (none: it keeps state for the
/// others, or is not in the table). The app calls' programs write the calls
/// as app_send and app_recv records.
pub fn kinds_written_by(prog: &str) -> Vec<&'static str> {
    let mut out = Vec::new();
    for p in PROBES {
        if !p
            .candidates
            .iter()
            .any(|h| h.progs.iter().any(|(n, _)| *n == prog))
        {
            continue;
        }
        match kind(p) {
            Some(k) => out.push(k),
            None if p.name == APP_CALLS => out.extend(["app_send", "app_recv"]),
            None => {}
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Every program name in the object, for autoload decisions (once each: a
/// program at several tracepoints, or in several candidates of a part, is
/// one program).
pub fn all_programs() -> impl Iterator<Item = &'static str> {
    let mut seen = HashSet::new();
    PROBES
        .iter()
        .flat_map(|p| p.candidates.iter())
        .chain(FLOWS_AT_BIND.candidates)
        .flat_map(|h| h.progs.iter().map(|(p, _)| *p))
        .filter(move |p| seen.insert(*p))
        .chain([
            FOLLOW_FORKS,
            PKT_FREE,
            PKT_CONSUME,
            TCP_RX_SEG,
            COOKIE_AT_CREATE,
            BATCH_TICK,
        ])
}

/// What the running kernel offers, as far as the table needs to know.
pub struct Kernel {
    pub btf: KernelBtf,
    pub features: Features,
    /// `available_filter_functions`, when tracefs is readable.
    pub traceable: Option<HashSet<String>>,
    /// Task-storage maps (5.11+), asked of the kernel once (not denied by
    /// `MAGNET_HOOKS_DENY=task_storage`): without them a thread's call in
    /// flight lives in a hash by thread id.
    pub task_storage: bool,
    /// Why this kernel's verifier refuses the recorder's netfilter programs
    /// of a recording with task filters, though it has netfilter links
    /// (None: it takes them).
    pub netfilter_refused: Option<String>,
}

impl Kernel {
    /// Reads BTF and probes the attach types (needs root).
    pub fn detect() -> Result<Kernel, crate::Error> {
        let btf = KernelBtf::load().map_err(|e| crate::Error::Record(format!("{e:#}")))?;
        let features = Features::detect(&btf);
        let traceable = magnet_kernel::attach::traceable_functions().ok();
        let task_storage = magnet_kernel::deny::denied("task_storage").is_none()
            && magnet_kernel::has_map_type(libbpf_sys::BPF_MAP_TYPE_TASK_STORAGE);
        let netfilter_refused = features
            .netfilter_link
            .is_yes()
            .then(|| netfilter_refusal(task_storage))
            .flatten();
        Ok(Kernel {
            btf,
            features,
            traceable,
            task_storage,
            netfilter_refused,
        })
    }

    /// Why a call of one socket operation cannot be recorded whole at its
    /// socket's send or recv (the app calls' first candidate): filters that
    /// need every call's start, or no bpf_task_pt_regs (5.15+) to read the
    /// call's arguments there.
    pub fn lacks_one_op_calls(&self, call_starts: bool) -> Option<String> {
        if call_starts {
            return Some(
                "task and address filters need a program at every socket call's start".into(),
            );
        }
        if let Some(why) = magnet_kernel::deny::denied(TASK_PT_REGS) {
            return Some(why);
        }
        (!self
            .btf
            .has_enum_value("bpf_func_id", "BPF_FUNC_task_pt_regs"))
        .then(|| "this kernel has no bpf_task_pt_regs (5.15+)".into())
    }

    /// What this kernel lacks for this attach point (None: it has it): the
    /// recorder's check for [`plan::choose`], which applies
    /// `MAGNET_HOOKS_DENY` (`magnet_kernel::deny`) before it.
    pub fn lacks(&self, a: Attach) -> Option<String> {
        match a {
            TpBtf { tp, args } => {
                let Some(info) = self.btf.tracepoint(tp) else {
                    return Some(format!("this kernel has no tracepoint {tp}"));
                };
                match args {
                    Some(n) if info.params.len() != n => Some(format!(
                        "tracepoint {tp} has {} arguments here, this program reads {n}",
                        info.params.len()
                    )),
                    _ => None,
                }
            }
            Tracepoint(tp) => magnet_kernel::tracefs::event_missing(tp),
            Netfilter(_) => (!self.features.netfilter_link.is_yes())
                .then(|| self.features.netfilter_link.reason().to_string()),
            Fentry(f) | Fexit(f) => {
                if !self.features.fentry.is_yes() {
                    Some(self.features.fentry.reason().to_string())
                } else if !self.btf.has_func(f) {
                    Some(format!("no function {f} in this kernel's BTF"))
                } else if self.traceable.as_ref().is_some_and(|t| !t.contains(f)) {
                    Some(format!(
                        "{f} cannot be traced (not in available_filter_functions)"
                    ))
                } else {
                    None
                }
            }
            // The recorder's table has none of these (function probes
            // are `crate::funcs::FUNC_PARTS`'s, planned on their own).
            Iter(_) | CgroupSkb(_) | SockOps | Tcx(_) | Clsact(_) => None,
            Kprobe(_) | Kretprobe(_) | KprobeMulti(_) | KretprobeMulti(_) => None,
        }
    }
}

/// Why the verifier would refuse the recorder's netfilter programs of a
/// recording with task filters, on a kernel that has netfilter links. There
/// they ask the task storage whether a packet's socket is the one its task's
/// call in flight uses, and Linux 6.12 does not let netfilter programs call
/// bpf_task_storage_get (6.18 does). Asked of the kernel once here, so that
/// the planner moves to the next hook before the object loads instead of
/// after one failed load per netfilter program (30 s each in a TCG guest).
fn netfilter_refusal(uses_task_storage: bool) -> Option<String> {
    (uses_task_storage
        && !magnet_kernel::prog_may_call(
            libbpf_sys::BPF_PROG_TYPE_NETFILTER,
            libbpf_sys::BPF_FUNC_task_storage_get,
        ))
    .then(|| {
        "netfilter programs may not call bpf_task_storage_get on this kernel, \
         which task filters need (--all records through them)"
            .into()
    })
}

/// The app calls' part.
pub const APP_CALLS: &str = "app_calls";

/// What of a recording's filters decides its hooks.
#[derive(Clone, Copy, Debug, Default)]
pub struct PlanFilters {
    /// By task or address: needs a program at every socket call's start.
    pub call_starts: bool,
    /// By task: the packet programs ask the task's call in flight whether a
    /// packet is the task's (task storage).
    pub tasks: bool,
}

impl PlanFilters {
    /// A recording without filters (`--all`).
    pub const NONE: PlanFilters = PlanFilters {
        call_starts: false,
        tasks: false,
    };
    /// A recording of a command or of processes: what `--check` plans for.
    pub const TASKS: PlanFilters = PlanFilters {
        call_starts: true,
        tasks: true,
    };
}

/// For every probe in the table: the first hook this kernel can feed it from
/// (not denied by `MAGNET_HOOKS_DENY`), or each candidate hook and what it
/// lacks ([`Choice::reasons`]), for a recording with these filters.
pub fn plan(k: &Kernel, filters: PlanFilters) -> Vec<Choice<Layer>> {
    let mut refused = Refusals::new();
    if let Some(why) = k.lacks_one_op_calls(filters.call_starts) {
        refused.insert((APP_CALLS, 0), why);
    }
    if let Some(why) = k.netfilter_refused.as_ref().filter(|_| filters.tasks) {
        for p in PROBES {
            for (i, c) in p.candidates.iter().enumerate() {
                if c.progs.iter().any(|(_, a)| matches!(a, Netfilter(_))) {
                    refused.insert((p.name, i), why.clone());
                }
            }
        }
    }
    plan::choose(PROBES, &|a| k.lacks(a), &refused).choices
}

/// The hook that tells flows at bind() and connect() on this kernel.
pub fn plan_flows_at_bind(k: &Kernel) -> Choice<Layer> {
    plan::choose([&FLOWS_AT_BIND], &|a| k.lacks(a), &Refusals::new())
        .choices
        .remove(0)
}

#[cfg(test)]
mod tests {

    #[test]
    fn each_program_says_the_kinds_it_writes() {
        assert_eq!(kinds_written_by("tcp_sendmsg"), ["tcp_sendmsg"]);
        assert_eq!(kinds_written_by("tcp_sendmsg_fentry"), ["tcp_sendmsg"]);
        assert_eq!(kinds_written_by("dev_rx"), ["dev_rx"]);
        assert_eq!(kinds_written_by("app_splice_recv"), ["app_recv"]);
        assert_eq!(kinds_written_by("app_enter5_tp"), ["app_recv", "app_send"]);
        assert!(kinds_written_by(BATCH_TICK).is_empty());
        assert!(kinds_written_by("no_such_program").is_empty());
        // every kind named is one the catalog has
        let catalog = magnet_trace::Catalog::builtin();
        for prog in all_programs() {
            for k in kinds_written_by(prog) {
                assert!(catalog.by_name(k).is_some(), "{prog}: {k}");
            }
        }
    }

    use super::*;

    /// The probe table, the layers and the catalog generated from events.h
    /// agree: every probe's kind is a catalog kind of the probe's layer, every
    /// kind of a recordable layer has a probe, and the layers are the same
    /// list in the same order.
    #[test]
    fn probes_layers_and_the_catalog_agree() {
        let cat = magnet_trace::Catalog::builtin();
        for p in PROBES {
            let Some(k) = kind(p) else { continue };
            let d = cat
                .by_name(k)
                .unwrap_or_else(|| panic!("probe {k}: no such kind in events.h"));
            assert_eq!(d.layer, p.group.name(), "{k}");
        }
        let layers: Vec<&str> = Layer::ALL.iter().map(|l| l.name()).collect();
        let named: Vec<&str> = magnet_trace::catalog::LAYERS.iter().map(|l| l.0).collect();
        assert_eq!(layers, named);
        // Written by support programs, not by a probe of their own.
        let support = ["sched_fork", "frame"];
        for k in &cat.kinds {
            if layers.contains(&k.layer.as_str()) && !support.contains(&k.name.as_str()) {
                assert!(
                    PROBES.iter().any(|p| kind(p) == Some(k.name.as_str())),
                    "kind {} (layer {}) has no probe",
                    k.name,
                    k.layer
                );
            }
        }
    }

    #[test]
    fn every_program_is_in_the_object_once() {
        let names: Vec<&str> = all_programs().collect();
        let set: HashSet<&str> = names.iter().copied().collect();
        assert_eq!(names.len(), set.len(), "a program is listed twice");
        let skel = crate::bpf_program_sources();
        for n in names {
            assert!(
                skel.contains(&format!("({n},"))
                    || skel.contains(&format!("int {n}("))
                    || skel.contains(&format!("\", {n},")),
                "program {n} is not in the files record.bpf.c includes"
            );
        }
    }

    fn kernel_without(fentry: bool, netfilter: bool) -> Option<Kernel> {
        use magnet_kernel::Support;
        let btf = KernelBtf::load().ok()?;
        let s = |b: bool, what: &str| {
            if b {
                Support::Yes
            } else {
                Support::No(format!("no {what} (test)"))
            }
        };
        Some(Kernel {
            btf,
            features: Features {
                release: "test".into(),
                kprobe: s(false, "kprobes"),
                kprobe_multi: s(false, "kprobe-multi"),
                fentry: s(fentry, "fentry/fexit"),
                netfilter_link: s(netfilter, "netfilter BPF links"),
                tcx: s(false, "tcx"),
            },
            traceable: None,
            task_storage: true,
            netfilter_refused: None,
        })
    }

    #[test]
    fn the_first_hook_the_kernel_has_is_chosen_and_misses_are_named() {
        // Tracepoints come from this machine's BTF; attach types are made up.
        let Some(k) = kernel_without(false, false) else {
            eprintln!("skipped: no BTF");
            return;
        };
        let p = plan(&k, PlanFilters::NONE);
        let get = |k: &str| p.iter().find(|c| kind(c.part) == Some(k)).unwrap();
        // No netfilter links and no fentry: ip cannot be fed, and the line says
        // which hooks were tried and what each lacks.
        let ip = get("ip_local_out");
        assert!(ip.chosen.is_err());
        let why = ip.reasons();
        assert!(
            why.starts_with("netfilter/LOCAL_OUT: no netfilter BPF links (test)"),
            "{why}"
        );
        assert!(
            why.contains("; fexit/__ip_local_out+fexit/__ip6_local_out: no fentry/fexit (test)"),
            "{why}"
        );
        // The tracepoint exists (6.18): first candidate.
        assert_eq!(get("app_send").chosen.as_ref().ok(), Some(&0));
        // With fentry, ip moves to its second candidate.
        let k = kernel_without(true, false).unwrap();
        let p = plan(&k, PlanFilters::NONE);
        let c = p
            .iter()
            .find(|c| kind(c.part) == Some("ip_local_in"))
            .unwrap();
        assert_eq!(
            c.name().as_deref(),
            Some("fentry/ip_local_deliver+fentry/ip6_input")
        );
        // Argument counts decide between tracepoint variants.
        let n = k.btf.tracepoint("tcp_retransmit_skb").unwrap().params.len();
        let c = p
            .iter()
            .find(|c| kind(c.part) == Some("tcp_retrans"))
            .unwrap();
        let chosen = c.candidate().unwrap().progs[0].1;
        assert_eq!(
            chosen,
            TpBtf {
                tp: "tcp_retransmit_skb",
                args: Some(n)
            }
        );
    }

    /// A kernel with netfilter links whose verifier refuses the recorder's
    /// netfilter programs with task filters (Debian's 6.12) plans a
    /// recording with task filters on the function probes before anything
    /// loads, and the line says why netfilter was passed; without task
    /// filters (--all) it keeps netfilter.
    #[test]
    fn netfilter_programs_the_verifier_refuses_are_passed_before_loading() {
        let Some(mut k) = kernel_without(true, true) else {
            eprintln!("skipped: no BTF");
            return;
        };
        k.netfilter_refused = Some("helper refused (test)".into());
        let ip_hooks = |task_filters| {
            let filters = if task_filters {
                PlanFilters::TASKS
            } else {
                PlanFilters::NONE
            };
            plan(&k, filters)
                .into_iter()
                .filter(|c| c.part.group == Layer::Ip && kind(c.part).is_some())
                .map(|c| (c.name().unwrap_or_default(), c.passed))
                .collect::<Vec<_>>()
        };
        let all = ip_hooks(false);
        // LOCAL_OUT, POST_ROUTING, PRE_ROUTING and LOCAL_IN
        assert_eq!(all.len(), 4);
        for (name, _) in &all {
            assert!(name.starts_with("netfilter/"), "{name}");
        }
        let filtered = ip_hooks(true);
        assert_eq!(filtered.len(), 4);
        for (name, passed) in &filtered {
            assert!(
                name.starts_with("fentry/") || name.starts_with("fexit/"),
                "{name}"
            );
            assert!(
                passed.iter().any(|p| p.contains("helper refused (test)")),
                "{passed:?}"
            );
        }
    }

    /// A recording with task or address filters has the app calls at
    /// every socket call's start (the first candidate passed, and why);
    /// without, where the kernel has bpf_task_pt_regs and the four calls'
    /// tracepoints, only those four calls have programs of their own.
    #[test]
    fn app_calls_at_every_start_only_where_filters_need_them() {
        let Some(k) = kernel_without(false, false) else {
            eprintln!("skipped: no BTF");
            return;
        };
        let calls = |starts| {
            plan(
                &k,
                PlanFilters {
                    call_starts: starts,
                    tasks: false,
                },
            )
            .into_iter()
            .find(|c| c.part.name == APP_CALLS)
            .unwrap()
        };
        let filtered = calls(true);
        assert_ne!(filtered.chosen, Ok(0));
        assert!(
            filtered.passed[0].ends_with(
                ": task and address filters need a program at every socket call's start"
            ),
            "{:?}",
            filtered.passed
        );
        let has = k.lacks_one_op_calls(false).is_none()
            && magnet_kernel::tracefs::event_missing("syscalls/sys_exit_sendfile64").is_none()
            && magnet_kernel::deny::denied("tracepoint").is_none();
        assert_eq!(calls(false).chosen == Ok(0), has);
    }

    #[test]
    fn every_kind_has_a_hook_on_this_kernel() {
        if KernelBtf::load().is_err() {
            eprintln!("skipped: no BTF");
            return;
        }
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: feature probes need root");
            return;
        }
        let k = Kernel::detect().unwrap();
        for c in plan(&k, PlanFilters::NONE) {
            if c.chosen.is_err() {
                let why = c.reasons();
                // Only the table's tracepoints decide on 6.18; a kernel with
                // fewer has function probes instead (checked in the QEMU lab).
                assert!(
                    k.features.has_func_probes(),
                    "{}: no hook: {why}",
                    c.part.name
                );
            }
        }
    }
}
