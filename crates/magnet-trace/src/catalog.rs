//! The event catalog: for every kind of record, its name, layer, the kernel hook
//! that produced it and where each field sits. A trace carries the catalog it was
//! written with in its header, so readers decode any trace by what the trace says
//! about itself, not by what this build of magnet believes.
//!
//! `Catalog::builtin()` is the Rust description of `magnet-record/src/bpf/events.h`;
//! a test in magnet-record checks it against the skeleton's generated types.

use serde::{Deserialize, Serialize};

/// How a field's bytes are interpreted. All integers are little-endian (the trace
/// header records the byte order; only little-endian hosts are supported).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FieldType {
    U8,
    U16,
    U32,
    U64,
    I32,
    I64,
    /// 16 bytes: an IPv6 address, IPv4 as IPv4-mapped (::ffff:a.b.c.d).
    Addr,
    /// 16 bytes: a NUL-padded task name.
    Comm,
    /// A u8 TCP state (`TCP_ESTABLISHED` …), printed by name.
    TcpState,
    /// A u64 printed in hex (kernel addresses, packet ids).
    Hex64,
}

impl FieldType {
    pub fn size(self) -> u32 {
        match self {
            FieldType::U8 | FieldType::TcpState => 1,
            FieldType::U16 => 2,
            FieldType::U32 | FieldType::I32 => 4,
            FieldType::U64 | FieldType::I64 | FieldType::Hex64 => 8,
            FieldType::Addr | FieldType::Comm => 16,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldDesc {
    pub name: String,
    pub offset: u32,
    #[serde(rename = "type")]
    pub ty: FieldType,
    /// For numbers that are a kernel enum: the table in `Header::enums` that
    /// names its values (e.g. `skb_drop_reason`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub names: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindDesc {
    pub id: u16,
    pub name: String,
    pub layer: String,
    /// The kernel hook that feeds this kind, as `type/name` (e.g. `tp_btf/tcp_probe`).
    pub hook: String,
    /// Size of the record without optional parts.
    pub size: u32,
    /// Fields after the common header. A field is present in a record when the
    /// record is long enough to hold it (optional parts come last).
    pub fields: Vec<FieldDesc>,
}

impl KindDesc {
    pub fn field(&self, name: &str) -> Option<&FieldDesc> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// Size of the common header at the start of every record.
pub const HEADER_LEN: usize = 24;

/// Record kinds (numbers are part of the format; see events.h).
pub mod kind {
    pub const LOST: u16 = 1;
    pub const SOCK: u16 = 2;
    pub const APP_SEND: u16 = 10;
    pub const APP_RECV: u16 = 11;
    pub const TCP_STATE: u16 = 20;
    pub const TCP_RCV: u16 = 21;
    pub const TCP_SENDMSG: u16 = 22;
    pub const TCP_RETRANS: u16 = 23;
    pub const TCP_RST_SENT: u16 = 24;
    pub const TCP_RST_RCVD: u16 = 25;
    pub const IP_LOCAL_OUT: u16 = 30;
    pub const IP_POST_ROUTING: u16 = 31;
    pub const IP_PRE_ROUTING: u16 = 32;
    pub const IP_LOCAL_IN: u16 = 33;
    pub const QDISC_ENQ: u16 = 40;
    pub const QDISC_DEQ: u16 = 41;
    pub const DEV_QUEUE: u16 = 50;
    pub const DEV_START_XMIT: u16 = 51;
    pub const DEV_XMIT: u16 = 52;
    pub const DEV_RX: u16 = 53;
    /// `record --snaplen`: the first bytes of a dev_start_xmit / dev_rx frame.
    pub const FRAME: u16 = 54;
    pub const DROP: u16 = 60;
    pub const SCHED_SWITCH: u16 = 70;
    pub const SCHED_WAKEUP: u16 = 71;
    pub const SCHED_FORK: u16 = 72;
    pub const SCHED_EXIT: u16 = 73;
    /// `record --funcs`: a kernel function entered with an skb.
    pub const FUNC: u16 = 80;
    /// `record --funcs --func-exits`: the return of a recorded function entry.
    pub const FUNC_EXIT: u16 = 81;
    /// Kinds are below this bound (the kernel's per-kind counters use it).
    pub const MAX: u16 = 128;
}

/// Size of a `frame` record before its bytes.
pub const FRAME_LEN: usize = 48;

/// Flag in the common header: a TCP snapshot follows the body.
pub const FLAG_TCP_STATE: u32 = 1;

/// The layers a recording can select, in stack order, with what each one means.
pub const LAYERS: &[(&str, &str)] = &[
    ("app", "every send and recv on an IPv4/IPv6 socket"),
    (
        "tcp",
        "TCP state changes, received segments, data queued, retransmits, resets",
    ),
    (
        "ip",
        "packets at the netfilter hooks LOCAL_OUT, POST_ROUTING, PRE_ROUTING, LOCAL_IN",
    ),
    ("qdisc", "queueing discipline enqueue and dequeue"),
    (
        "dev",
        "queued to device, handed to driver, transmit done, received from driver",
    ),
    ("drop", "skbs freed as dropped, with the drop reason"),
    (
        "sched",
        "context switches, wake-ups, fork and exit of traced tasks",
    ),
];

/// The header fields every record starts with (not repeated in `KindDesc::fields`).
pub fn header_fields() -> Vec<FieldDesc> {
    Layout::new(0)
        .f("ts_ns", FieldType::U64)
        .f("kind", FieldType::U16)
        .f("cpu", FieldType::U16)
        .f("pid", FieldType::U32)
        .f("tid", FieldType::U32)
        .f("flags", FieldType::U32)
        .fields
}

/// Builds field lists in declaration order, the way the C structs lay them out
/// (every struct in events.h is padded by hand, so offsets are cumulative).
struct Layout {
    at: u32,
    fields: Vec<FieldDesc>,
}

impl Layout {
    fn new(at: u32) -> Self {
        Layout {
            at,
            fields: Vec::new(),
        }
    }
    fn body() -> Self {
        Layout::new(HEADER_LEN as u32)
    }
    fn f(mut self, name: &str, ty: FieldType) -> Self {
        self.fields.push(FieldDesc {
            name: name.to_string(),
            offset: self.at,
            ty,
            names: None,
        });
        self.at += ty.size();
        self
    }
    /// A field whose values a header enum table names.
    fn named(mut self, name: &str, ty: FieldType, table: &str) -> Self {
        self = self.f(name, ty);
        self.fields.last_mut().expect("just pushed").names = Some(table.to_string());
        self
    }
    fn pad(mut self, bytes: u32) -> Self {
        self.at += bytes;
        self
    }
    /// The TCP snapshot; `ports` false where the body already has the ports.
    fn snap(self, ports: bool) -> Self {
        use FieldType::*;
        let l = if ports {
            self.f("sport", U16).f("dport", U16)
        } else {
            self.pad(4)
        };
        l.f("state", TcpState)
            .f("ca_state", U8)
            .pad(2)
            .f("snd_wnd", U32)
            .f("srtt_us", U32)
            .f("rto_jiffies", U32)
            .f("packets_out", U32)
            .f("retrans_out", U32)
            .f("snd_ssthresh", U32)
            .f("snd_cwnd", U32)
            .f("rcv_wnd", U32)
            .f("write_seq", U32)
            .f("copied_seq", U32)
            .f("snd_una", U32)
            .f("snd_nxt", U32)
            .f("rcv_nxt", U32)
            .f("wmem_queued", U32)
            .f("sndbuf", U32)
            .f("mss_cache", U32)
    }
}

/// Size of the TCP snapshot appended with --tcp-state.
pub const TCP_SNAP_LEN: u32 = 72;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Catalog {
    pub header: Vec<FieldDesc>,
    pub kinds: Vec<KindDesc>,
}

impl Catalog {
    pub fn get(&self, id: u16) -> Option<&KindDesc> {
        self.kinds.iter().find(|k| k.id == id)
    }

    pub fn by_name(&self, name: &str) -> Option<&KindDesc> {
        self.kinds.iter().find(|k| k.name == name)
    }

    /// The catalog of this build of magnet.
    pub fn builtin() -> Catalog {
        use FieldType::*;
        let mut kinds = Vec::new();
        let mut add = |id: u16, name: &str, layer: &str, hook: &str, size: u32, l: Layout| {
            kinds.push(KindDesc {
                id,
                name: name.to_string(),
                layer: layer.to_string(),
                hook: hook.to_string(),
                size,
                fields: l.fields,
            });
        };

        add(
            kind::LOST,
            "lost",
            "meta",
            "ring buffer reserve failure (per-CPU counter)",
            40,
            Layout::body()
                .f("count", U64)
                .f("lost_cpu", U32)
                .f("reason", U32),
        );
        let sock = || {
            Layout::body()
                .f("cookie", U64)
                .f("family", U16)
                .f("protocol", U16)
                .f("type", U16)
                .f("sport", U16)
                .f("dport", U16)
                .pad(2)
                .f("netns", U32)
                .f("saddr", Addr)
                .f("daddr", Addr)
        };
        add(
            kind::SOCK,
            "sock",
            "meta",
            "first sighting of a socket",
            80,
            sock(),
        );

        let app = || {
            Layout::body()
                .f("cookie", U64)
                .f("asked", I64)
                .f("ret", I32)
                .f("msg_flags", I32)
                .f("family", U16)
                .f("protocol", U16)
                .f("type", U16)
                .pad(2)
                .f("comm", Comm)
        };
        add(
            kind::APP_SEND,
            "app_send",
            "app",
            "tp_btf/sock_send_length",
            72,
            app(),
        );
        add(
            kind::APP_RECV,
            "app_recv",
            "app",
            "tp_btf/sock_recv_length",
            72,
            app(),
        );

        let state = Layout::body()
            .f("cookie", U64)
            .f("family", U16)
            .f("protocol", U16)
            .f("sport", U16)
            .f("dport", U16)
            .f("oldstate", TcpState)
            .f("newstate", TcpState)
            .pad(6)
            .f("saddr", Addr)
            .f("daddr", Addr);
        add(
            kind::TCP_STATE,
            "tcp_state",
            "tcp",
            "tp_btf/inet_sock_set_state",
            80,
            state.snap(false),
        );
        let tcp = || {
            Layout::body()
                .f("cookie", U64)
                .f("pkt_id", Hex64)
                .f("len", U32)
                .f("seq", U32)
                .f("ack", U32)
                .f("arg", U32)
                .snap(true)
        };
        add(
            kind::TCP_RCV,
            "tcp_rcv",
            "tcp",
            // tcp_probe fires only in ESTABLISHED; in the other states the
            // segment is read from its TCP header at netif_receive_skb.
            "tp_btf/tcp_probe+netif_receive_skb",
            56,
            tcp(),
        );
        add(
            kind::TCP_SENDMSG,
            "tcp_sendmsg",
            "tcp",
            "tp_btf/tcp_sendmsg_locked",
            56,
            tcp(),
        );
        add(
            kind::TCP_RETRANS,
            "tcp_retrans",
            "tcp",
            "tp_btf/tcp_retransmit_skb",
            56,
            tcp(),
        );
        add(
            kind::TCP_RST_SENT,
            "tcp_rst_sent",
            "tcp",
            "tp_btf/tcp_send_reset",
            56,
            tcp(),
        );
        add(
            kind::TCP_RST_RCVD,
            "tcp_rst_rcvd",
            "tcp",
            "tp_btf/tcp_receive_reset",
            56,
            tcp(),
        );

        let ip = || {
            Layout::body()
                .f("cookie", U64)
                .f("pkt_id", Hex64)
                .f("ifindex", U32)
                .f("tot_len", U32)
                .f("ip_id", U16)
                .f("frag_off", U16)
                .f("version", U8)
                .f("tos", U8)
                .f("ttl", U8)
                .f("protocol", U8)
                .f("sport", U16)
                .f("dport", U16)
                .f("tcp_flags", U8)
                .pad(3)
                .f("seq", U32)
                .f("ack", U32)
                .f("saddr", Addr)
                .f("daddr", Addr)
        };
        add(
            kind::IP_LOCAL_OUT,
            "ip_local_out",
            "ip",
            "netfilter/LOCAL_OUT",
            104,
            ip(),
        );
        add(
            kind::IP_POST_ROUTING,
            "ip_post_routing",
            "ip",
            "netfilter/POST_ROUTING",
            104,
            ip(),
        );
        add(
            kind::IP_PRE_ROUTING,
            "ip_pre_routing",
            "ip",
            "netfilter/PRE_ROUTING",
            104,
            ip(),
        );
        add(
            kind::IP_LOCAL_IN,
            "ip_local_in",
            "ip",
            "netfilter/LOCAL_IN",
            104,
            ip(),
        );

        let qdisc = || {
            Layout::body()
                .f("cookie", U64)
                .f("pkt_id", Hex64)
                .f("ifindex", U32)
                .f("len", U32)
                .f("qlen", U32)
                .f("handle", U32)
        };
        add(
            kind::QDISC_ENQ,
            "qdisc_enq",
            "qdisc",
            "tp_btf/qdisc_enqueue",
            56,
            qdisc(),
        );
        add(
            kind::QDISC_DEQ,
            "qdisc_deq",
            "qdisc",
            "tp_btf/qdisc_dequeue",
            56,
            qdisc(),
        );

        let dev = || {
            Layout::body()
                .f("cookie", U64)
                .f("pkt_id", Hex64)
                .f("ifindex", U32)
                .f("len", U32)
                .f("rc", I32)
                .f("ethertype", U16)
        };
        add(
            kind::DEV_QUEUE,
            "dev_queue",
            "dev",
            "tp_btf/net_dev_queue",
            56,
            dev(),
        );
        add(
            kind::DEV_START_XMIT,
            "dev_start_xmit",
            "dev",
            "tp_btf/net_dev_start_xmit",
            56,
            dev(),
        );
        add(
            kind::DEV_XMIT,
            "dev_xmit",
            "dev",
            "tp_btf/net_dev_xmit",
            56,
            dev(),
        );
        add(
            kind::DEV_RX,
            "dev_rx",
            "dev",
            "tp_btf/netif_receive_skb",
            56,
            dev(),
        );
        // `caplen` frame bytes follow the 48 bytes of the record (a tail that
        // no field describes: the record's length is 48 + caplen).
        add(
            kind::FRAME,
            "frame",
            "dev",
            "record --snaplen: frame bytes after a dev_start_xmit or dev_rx record",
            FRAME_LEN as u32,
            Layout::body()
                .f("pkt_id", Hex64)
                .f("ifindex", U32)
                .f("len", U32)
                .f("caplen", U16)
                .f("dev_kind", U16)
                .pad(4),
        );

        add(
            kind::DROP,
            "drop",
            "drop",
            "tp_btf/kfree_skb",
            64,
            Layout::body()
                .f("cookie", U64)
                .f("pkt_id", Hex64)
                .f("location", Hex64)
                .f("ifindex", U32)
                .named("reason", U32, "skb_drop_reason")
                .f("len", U32)
                .f("ethertype", U16),
        );

        add(
            kind::SCHED_SWITCH,
            "sched_switch",
            "sched",
            "tp_btf/sched_switch",
            80,
            Layout::body()
                .f("prev_tid", U32)
                .f("prev_tgid", U32)
                .f("next_tid", U32)
                .f("next_tgid", U32)
                .f("prev_state", I64)
                .f("prev_comm", Comm)
                .f("next_comm", Comm),
        );
        let task = |arg: &str| {
            Layout::body()
                .f("task_tid", U32)
                .f("task_tgid", U32)
                .f(arg, I32)
                .pad(4)
                .f("comm", Comm)
        };
        add(
            kind::SCHED_WAKEUP,
            "sched_wakeup",
            "sched",
            "tp_btf/sched_wakeup",
            56,
            task("target_cpu"),
        );
        add(
            kind::SCHED_FORK,
            "sched_fork",
            "sched",
            "tp_btf/sched_process_fork",
            56,
            task("parent_tgid"),
        );
        add(
            kind::SCHED_EXIT,
            "sched_exit",
            "sched",
            "tp_btf/sched_process_exit",
            56,
            task("exit_code"),
        );
        add(
            kind::FUNC,
            "func",
            "func",
            "kprobe/* (record --funcs)",
            112,
            Layout::body()
                .named("func", Hex64, "kfunc")
                .f("caller", Hex64)
                .f("skb", Hex64)
                .f("pkt_id", Hex64)
                .f("len", U32)
                .f("ip_id", U16)
                .f("version", U8)
                .f("protocol", U8)
                .f("sport", U16)
                .f("dport", U16)
                .f("tcp_flags", U8)
                .pad(3)
                .f("saddr", Addr)
                .f("daddr", Addr)
                .f("parent", Hex64),
        );
        add(
            kind::FUNC_EXIT,
            "func_exit",
            "func",
            "kretprobe/* (record --funcs --func-exits)",
            40,
            Layout::body()
                .named("func", Hex64, "kfunc")
                .f("retval", Hex64),
        );

        Catalog {
            header: header_fields(),
            kinds,
        }
    }
}

/// Linux TCP state names, indexed by state number.
pub fn tcp_state_name(s: u8) -> &'static str {
    const NAMES: [&str; 13] = [
        "UNKNOWN",
        "ESTABLISHED",
        "SYN_SENT",
        "SYN_RECV",
        "FIN_WAIT1",
        "FIN_WAIT2",
        "TIME_WAIT",
        "CLOSE",
        "CLOSE_WAIT",
        "LAST_ACK",
        "LISTEN",
        "CLOSING",
        "NEW_SYN_RECV",
    ];
    NAMES.get(s as usize).copied().unwrap_or("UNKNOWN")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_match_the_c_structs() {
        let c = Catalog::builtin();
        for k in &c.kinds {
            let end = k
                .fields
                .iter()
                .map(|f| f.offset + f.ty.size())
                .max()
                .unwrap();
            let has_snap = k.fields.iter().any(|f| f.name == "mss_cache");
            let expect = if has_snap {
                k.size + TCP_SNAP_LEN
            } else {
                k.size
            };
            // Trailing padding is allowed (up to 8-byte alignment), overlap is not.
            assert!(
                end <= expect && expect - end < 8,
                "{}: fields end at {end}, size {expect}",
                k.name
            );
            let mut last = HEADER_LEN as u32;
            for f in &k.fields {
                assert!(f.offset >= last, "{}.{} overlaps", k.name, f.name);
                last = f.offset + f.ty.size();
            }
        }
    }

    #[test]
    fn ids_and_names_are_unique() {
        let c = Catalog::builtin();
        for (i, a) in c.kinds.iter().enumerate() {
            for b in &c.kinds[i + 1..] {
                assert_ne!(a.id, b.id);
                assert_ne!(a.name, b.name);
            }
            assert!(a.id < kind::MAX);
        }
    }
}
