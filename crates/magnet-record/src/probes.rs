//! The list of BPF programs: which layer each belongs to and how it attaches.
//! One table, so that `magnet info` can say which hook fed each layer and an
//! unselected layer's programs are never loaded.

use crate::config::Layer;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attach {
    /// tp_btf: libbpf attaches by the section name; needs BTF, not tracefs.
    TpBtf(&'static str),
    /// A netfilter BPF link at this hook, for IPv4 and IPv6, in the recorder's
    /// network namespace.
    Netfilter(i32),
}

#[derive(Clone, Copy, Debug)]
pub struct Probe {
    /// Program name in record.bpf.c.
    pub prog: &'static str,
    /// The layer it records, or `None` for support programs that record nothing.
    pub layer: Option<Layer>,
    pub attach: Attach,
    /// When attaching fails, the layer still works without it (with less detail).
    pub optional: bool,
    /// The record kind it writes (None: it only helps another probe).
    pub kind: Option<&'static str>,
    /// Recorded when its layer is selected, unless `--kinds` says otherwise.
    pub default_on: bool,
}

const fn p(prog: &'static str, layer: Layer, attach: Attach, kind: &'static str) -> Probe {
    Probe {
        prog,
        layer: Some(layer),
        attach,
        optional: false,
        kind: Some(kind),
        default_on: true,
    }
}

/// Off by default: each is one more event per packet with little news for a
/// host's own traffic (dev_queue: queueing shows in the qdisc layer; dev_xmit:
/// transmit-done follows handed-to-driver within a microsecond on veth and
/// loopback; POST_ROUTING/PRE_ROUTING repeat LOCAL_OUT/LOCAL_IN unless packets
/// are forwarded or NATed). Events per packet are what a recording costs, so
/// they are opt-in: `--kinds +dev_xmit,+ip_pre_routing` or `--kinds all`.
const fn detail(prog: &'static str, layer: Layer, attach: Attach, kind: &'static str) -> Probe {
    Probe {
        default_on: false,
        ..p(prog, layer, attach, kind)
    }
}

use libbpf_rs::{NF_INET_LOCAL_IN, NF_INET_LOCAL_OUT, NF_INET_POST_ROUTING, NF_INET_PRE_ROUTING};
use Attach::*;
use Layer::*;

pub const PROBES: &[Probe] = &[
    // Bytes *asked* come from the syscall; without it app events say asked=-1.
    Probe {
        prog: "app_sys_enter",
        layer: Some(App),
        attach: TpBtf("sys_enter"),
        optional: true,
        kind: None,
        default_on: true,
    },
    p("app_send", App, TpBtf("sock_send_length"), "app_send"),
    p("app_recv", App, TpBtf("sock_recv_length"), "app_recv"),
    p(
        "tcp_state_change",
        Tcp,
        TpBtf("inet_sock_set_state"),
        "tcp_state",
    ),
    p("tcp_rcv", Tcp, TpBtf("tcp_probe"), "tcp_rcv"),
    p(
        "tcp_sendmsg",
        Tcp,
        TpBtf("tcp_sendmsg_locked"),
        "tcp_sendmsg",
    ),
    p(
        "tcp_retrans",
        Tcp,
        TpBtf("tcp_retransmit_skb"),
        "tcp_retrans",
    ),
    p("tcp_rst_sent", Tcp, TpBtf("tcp_send_reset"), "tcp_rst_sent"),
    p(
        "tcp_rst_rcvd",
        Tcp,
        TpBtf("tcp_receive_reset"),
        "tcp_rst_rcvd",
    ),
    p(
        "ip_local_out",
        Ip,
        Netfilter(NF_INET_LOCAL_OUT),
        "ip_local_out",
    ),
    detail(
        "ip_post_routing",
        Ip,
        Netfilter(NF_INET_POST_ROUTING),
        "ip_post_routing",
    ),
    detail(
        "ip_pre_routing",
        Ip,
        Netfilter(NF_INET_PRE_ROUTING),
        "ip_pre_routing",
    ),
    p(
        "ip_local_in",
        Ip,
        Netfilter(NF_INET_LOCAL_IN),
        "ip_local_in",
    ),
    p("qdisc_enq", Qdisc, TpBtf("qdisc_enqueue"), "qdisc_enq"),
    p("qdisc_deq", Qdisc, TpBtf("qdisc_dequeue"), "qdisc_deq"),
    detail("dev_queue", Dev, TpBtf("net_dev_queue"), "dev_queue"),
    p(
        "dev_start_xmit",
        Dev,
        TpBtf("net_dev_start_xmit"),
        "dev_start_xmit",
    ),
    detail("dev_xmit", Dev, TpBtf("net_dev_xmit"), "dev_xmit"),
    p("dev_rx", Dev, TpBtf("netif_receive_skb"), "dev_rx"),
    p("drop_kfree_skb", Drop, TpBtf("kfree_skb"), "drop"),
    p("sched_switch", Sched, TpBtf("sched_switch"), "sched_switch"),
    p("sched_wakeup", Sched, TpBtf("sched_wakeup"), "sched_wakeup"),
    p(
        "sched_exit",
        Sched,
        TpBtf("sched_process_exit"),
        "sched_exit",
    ),
];

/// Support programs, loaded when needed (see `Recorder::open`).
pub const FOLLOW_FORKS: &str = "sched_fork";
pub const PKT_FREE: &str = "pkt_free";
pub const PKT_CONSUME: &str = "pkt_consume";
pub const FLOWS_AT_BIND: &str = "flow_sys_exit";
/// tcp_rcv outside ESTABLISHED when dev_rx (which does it too) is not loaded.
pub const TCP_RX_SEG: &str = "tcp_rx_seg";

/// Every program name in the object, for autoload decisions.
pub fn all_programs() -> impl Iterator<Item = &'static str> {
    PROBES.iter().map(|p| p.prog).chain([
        FOLLOW_FORKS,
        PKT_FREE,
        PKT_CONSUME,
        FLOWS_AT_BIND,
        TCP_RX_SEG,
    ])
}

pub fn hook_name(a: Attach) -> String {
    match a {
        TpBtf(tp) => format!("tp_btf/{tp}"),
        Netfilter(h) => format!(
            "netfilter/{}",
            match h {
                NF_INET_LOCAL_OUT => "LOCAL_OUT",
                NF_INET_POST_ROUTING => "POST_ROUTING",
                NF_INET_PRE_ROUTING => "PRE_ROUTING",
                NF_INET_LOCAL_IN => "LOCAL_IN",
                _ => "?",
            }
        ),
    }
}
