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
}

const fn p(prog: &'static str, layer: Layer, attach: Attach) -> Probe {
    Probe {
        prog,
        layer: Some(layer),
        attach,
        optional: false,
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
    },
    p("app_send", App, TpBtf("sock_send_length")),
    p("app_recv", App, TpBtf("sock_recv_length")),
    p("tcp_state_change", Tcp, TpBtf("inet_sock_set_state")),
    p("tcp_rcv", Tcp, TpBtf("tcp_probe")),
    p("tcp_sendmsg", Tcp, TpBtf("tcp_sendmsg_locked")),
    p("tcp_retrans", Tcp, TpBtf("tcp_retransmit_skb")),
    p("tcp_rst_sent", Tcp, TpBtf("tcp_send_reset")),
    p("tcp_rst_rcvd", Tcp, TpBtf("tcp_receive_reset")),
    p("ip_local_out", Ip, Netfilter(NF_INET_LOCAL_OUT)),
    p("ip_post_routing", Ip, Netfilter(NF_INET_POST_ROUTING)),
    p("ip_pre_routing", Ip, Netfilter(NF_INET_PRE_ROUTING)),
    p("ip_local_in", Ip, Netfilter(NF_INET_LOCAL_IN)),
    p("qdisc_enq", Qdisc, TpBtf("qdisc_enqueue")),
    p("qdisc_deq", Qdisc, TpBtf("qdisc_dequeue")),
    p("dev_queue", Dev, TpBtf("net_dev_queue")),
    p("dev_start_xmit", Dev, TpBtf("net_dev_start_xmit")),
    p("dev_xmit", Dev, TpBtf("net_dev_xmit")),
    p("dev_rx", Dev, TpBtf("netif_receive_skb")),
    p("drop_kfree_skb", Drop, TpBtf("kfree_skb")),
    p("sched_switch", Sched, TpBtf("sched_switch")),
    p("sched_wakeup", Sched, TpBtf("sched_wakeup")),
    p("sched_exit", Sched, TpBtf("sched_process_exit")),
];

/// Support programs, loaded when needed (see `Recorder::open`).
pub const FOLLOW_FORKS: &str = "sched_fork";
pub const PKT_FREE: &str = "pkt_free";
pub const PKT_CONSUME: &str = "pkt_consume";

/// Every program name in the object, for autoload decisions.
pub fn all_programs() -> impl Iterator<Item = &'static str> {
    PROBES
        .iter()
        .map(|p| p.prog)
        .chain([FOLLOW_FORKS, PKT_FREE, PKT_CONSUME])
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
