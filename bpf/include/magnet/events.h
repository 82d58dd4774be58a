/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Records that magnet's BPF programs write into the ring buffer, and that the
 * trace file keeps byte for byte. This header is their one definition: the
 * Rust side (kind numbers, the catalog written into every trace, typed views
 * of each struct) is generated from it by magnet-trace/build.rs, and a test
 * (magnet-trace/tests/events_h.rs) compares what clang makes of this file
 * with the generated Rust, kind numbers and every field's offset and size.
 * Adding a record kind is one entry in enum mg_kind (with its annotations),
 * its struct if it needs a new one, and its hook in its layer's file
 * (app.bpf.c, tcp.bpf.c, ip.bpf.c, dev.bpf.c, sched.bpf.c, ...; record.bpf.c
 * lists them and only includes them).
 *
 * The generator reads only this file's restricted style (see
 * magnet-trace/gen/events_h.rs) and fails on anything else. Annotations, in
 * the comment on a declaration's line: on a kind, @struct (its record),
 * @layer, @hook "..." (what the catalog says fed it; a backslash before a
 * star stands for the star) and @rename field=name (catalog names for a
 * shared struct's fields); on a field, @hex, @addr, @tcp_state, @names
 * TABLE, and on a trailing struct member @optional (not in the base size)
 * and @skip a,b (its fields left out of the catalog entry).
 *
 * Every struct is laid out by hand with explicit padding so that C and Rust
 * agree without relying on compiler rules. Integers are in host byte order,
 * except where a field name ends in _be. Addresses are 16 bytes: IPv6 as is,
 * IPv4 as an IPv4-mapped IPv6 address (::ffff:a.b.c.d).
 */
#ifndef MAGNET_EVENTS_H
#define MAGNET_EVENTS_H

/* Event kinds. Numbers are part of the trace format: never reuse one. */
enum mg_kind {
	MG_LOST = 1,          /* @struct mg_lost @layer meta @hook "ring buffer reserve failure (per-CPU counter)" the kernel could not record `count` events on `lost_cpu` */
	MG_SOCK = 2,          /* @struct mg_sock @layer meta @hook "first sighting of a socket" a socket seen for the first time: cookie -> 5-tuple */

	MG_APP_SEND = 10,     /* @struct mg_app @layer app @hook "tp_btf/sys_exit+io_uring_complete" one per send syscall or io_uring request */
	MG_APP_RECV = 11,     /* @struct mg_app @layer app @hook "tp_btf/sys_exit+io_uring_complete" one per recv syscall or io_uring request */

	MG_TCP_STATE = 20,    /* @struct mg_tcp_state @layer tcp @hook "tp_btf/inet_sock_set_state" sock:inet_sock_set_state (TCP) */
	MG_TCP_RCV = 21,      /* @struct mg_tcp @layer tcp @hook "tp_btf/tcp_probe+netif_receive_skb" tcp:tcp_probe: segment received in ESTABLISHED; in other
	                       * states (SYN_SENT, FIN_WAIT*, CLOSE_WAIT, ...) read at
	                       * net:netif_receive_skb from the TCP header */
	MG_TCP_SENDMSG = 22,  /* @struct mg_tcp @layer tcp @hook "tp_btf/tcp_sendmsg_locked" tcp:tcp_sendmsg_locked: app data queued into an skb */
	MG_TCP_RETRANS = 23,  /* @struct mg_tcp @layer tcp @hook "tp_btf/tcp_retransmit_skb" tcp:tcp_retransmit_skb: one per
	                       * retransmitted skb; with MG_F_TCP_SEGS, ack is its segment count
	                       * (tcp_skb_pcount, what TcpRetransSegs adds); arg is its err (nonzero:
	                       * nothing was sent; before 6.13 the tracepoint fires only on success
	                       * and arg is 0) */
	MG_TCP_RST_SENT = 24, /* @struct mg_tcp @layer tcp @hook "tp_btf/tcp_send_reset" tcp:tcp_send_reset */
	MG_TCP_RST_RCVD = 25, /* @struct mg_tcp @layer tcp @hook "tp_btf/tcp_receive_reset" tcp:tcp_receive_reset */

	MG_IP_LOCAL_OUT = 30,   /* @struct mg_ip @layer ip @hook "netfilter/LOCAL_OUT" netfilter NF_INET_LOCAL_OUT */
	MG_IP_POST_ROUTING = 31,/* @struct mg_ip @layer ip @hook "netfilter/POST_ROUTING" netfilter NF_INET_POST_ROUTING */
	MG_IP_PRE_ROUTING = 32, /* @struct mg_ip @layer ip @hook "netfilter/PRE_ROUTING" netfilter NF_INET_PRE_ROUTING */
	MG_IP_LOCAL_IN = 33,    /* @struct mg_ip @layer ip @hook "netfilter/LOCAL_IN" netfilter NF_INET_LOCAL_IN */

	MG_QDISC_ENQ = 40,    /* @struct mg_qdisc @layer qdisc @hook "tp_btf/qdisc_enqueue" qdisc:qdisc_enqueue */
	MG_QDISC_DEQ = 41,    /* @struct mg_qdisc @layer qdisc @hook "tp_btf/qdisc_dequeue" qdisc:qdisc_dequeue */

	MG_DEV_QUEUE = 50,    /* @struct mg_dev @layer dev @hook "tp_btf/net_dev_queue" net:net_dev_queue */
	MG_DEV_START_XMIT = 51, /* @struct mg_dev @layer dev @hook "tp_btf/net_dev_start_xmit" net:net_dev_start_xmit */
	MG_DEV_XMIT = 52,     /* @struct mg_dev @layer dev @hook "tp_btf/net_dev_xmit" net:net_dev_xmit */
	MG_DEV_RX = 53,       /* @struct mg_dev @layer dev @hook "tp_btf/netif_receive_skb" net:netif_receive_skb; cookie from the packet's flow */
	MG_FRAME = 54,        /* @struct mg_frame @layer dev @hook "record --snaplen: frame bytes after a dev_start_xmit or dev_rx record" record --snaplen: the first bytes of a dev_start_xmit / dev_rx frame */

	MG_DROP = 60,         /* @struct mg_drop @layer drop @hook "tp_btf/kfree_skb" skb:kfree_skb */

	MG_SCHED_SWITCH = 70, /* @struct mg_sched_switch @layer sched @hook "tp_btf/sched_switch" sched:sched_switch */
	MG_SCHED_WAKEUP = 71, /* @struct mg_task @layer sched @hook "tp_btf/sched_wakeup" @rename tid=task_tid,tgid=task_tgid,arg=target_cpu sched:sched_wakeup */
	MG_SCHED_FORK = 72,   /* @struct mg_task @layer sched @hook "tp_btf/sched_process_fork" @rename tid=task_tid,tgid=task_tgid,arg=parent_tgid sched:sched_process_fork */
	MG_SCHED_EXIT = 73,   /* @struct mg_task @layer sched @hook "tp_btf/sched_process_exit" @rename tid=task_tid,tgid=task_tgid,arg=exit_code sched:sched_process_exit */
	MG_FUNC = 80,         /* @struct mg_func @layer func @hook "kprobe/\* (record --funcs)" record --funcs: entry of a kernel function with an skb (funcs.bpf.c) */
	MG_FUNC_EXIT = 81,    /* @struct mg_func_exit @layer func @hook "kretprobe/\* (record --funcs --func-exits)" record --funcs --func-exits: return of a recorded entry */

	MG_KIND_MAX = 128,
};

/* hdr.flags */
#define MG_F_TCP_STATE 1 /* a struct mg_tcp_snap follows the body */
#define MG_F_OTHER_NETNS 2 /* dev_start_xmit: the packet's socket is in another
                            * network namespace (forwarded through a router
                            * namespace, the skb still holding it) */
#define MG_F_TCP_SEGS 4 /* tcp_retrans: ack holds the skb's segment count
                         * (traces without it hold a meaningless ack there) */

/* 24 bytes at the start of every record. */
struct mg_hdr {
	__u64 ts_ns; /* CLOCK_MONOTONIC (bpf_ktime_get_ns) */
	__u16 kind;
	__u16 cpu;
	__u32 pid;   /* tgid of the task running when the event fired */
	__u32 tid;
	__u32 flags;
};

struct mg_lost {
	struct mg_hdr hdr;
	__u64 count;
	__u32 lost_cpu;
	__u32 reason; /* 0: ring buffer full (kernel), 1: user space, 2: residual at end of run */
};

struct mg_sock {
	struct mg_hdr hdr;
	__u64 cookie;
	__u16 family;
	__u16 protocol;
	__u16 type;
	__u16 sport;
	__u16 dport;
	__u16 _pad0;
	__u32 netns;  /* network namespace inode number */
	__u8 saddr[16]; /* @addr */
	__u8 daddr[16]; /* @addr */
};

struct mg_app {
	struct mg_hdr hdr;
	__u64 cookie;
	__s64 asked;   /* bytes the syscall asked for; -1 when not known */
	__s32 ret;     /* bytes done, or -errno */
	__s32 msg_flags;
	__u16 family;
	__u16 protocol;
	__u16 type;
	__u16 _pad0;
	char comm[16];
};

/* MAGNeT's TCP snapshot, appended to tcp events with --tcp-state. */
struct mg_tcp_snap {
	__u16 sport;
	__u16 dport;
	__u8 state; /* @tcp_state */
	__u8 ca_state;
	__u16 _pad0;
	__u32 snd_wnd;
	__u32 srtt_us;     /* smoothed RTT in microseconds */
	__u32 rto_jiffies;
	__u32 packets_out;
	__u32 retrans_out;
	__u32 snd_ssthresh;
	__u32 snd_cwnd;
	__u32 rcv_wnd;
	__u32 write_seq;
	__u32 copied_seq;
	__u32 snd_una;
	__u32 snd_nxt;
	__u32 rcv_nxt;
	__u32 wmem_queued;
	__u32 sndbuf;
	__u32 mss_cache;
};

struct mg_tcp_state {
	struct mg_hdr hdr;
	__u64 cookie;
	__u16 family;
	__u16 protocol;
	__u16 sport;
	__u16 dport;
	__u8 oldstate; /* @tcp_state */
	__u8 newstate; /* @tcp_state */
	__u8 _pad0[6];
	__u8 saddr[16]; /* @addr */
	__u8 daddr[16]; /* @addr */
	struct mg_tcp_snap snap; /* @optional @skip sport,dport present when hdr.flags has
	                          * MG_F_TCP_STATE; its ports are the body's */
};

struct mg_tcp {
	struct mg_hdr hdr;
	__u64 cookie;
	__u64 pkt_id; /* @hex */
	__u32 len;  /* skb length (rcv, retrans), bytes in the skb (sendmsg) */
	__u32 seq;  /* TCP sequence number of the segment, when there is one */
	__u32 ack;  /* the segment's ACK number; retrans with MG_F_TCP_SEGS: the skb's segment count */
	__u32 arg;  /* rcv: TCP flags, and on a FIN the TCP header length in bytes << 8; sendmsg: size_goal; retrans: err; rst: reason */
	struct mg_tcp_snap snap; /* @optional present when hdr.flags has MG_F_TCP_STATE */
};

struct mg_ip {
	struct mg_hdr hdr;
	__u64 cookie;
	__u64 pkt_id; /* @hex */
	__u32 ifindex;
	/* The packet's IP length (header + payload) as the stack holds it: the
	 * header's own length field when it has one, else the skb's length from
	 * the network header on (BIG TCP / GSO packets over 64 KiB carry 0 in
	 * IPv4 tot_len, IPv6 jumbo payloads 0 in payload_len). 32 bits: an IPv6
	 * packet of 40 + 65,496 bytes is 65,536. */
	__u32 tot_len;
	__u16 ip_id;    /* IPv4 identification; IPv6: low 16 bits of a fragment header's */
	__u16 frag_off; /* IPv4 flags + offset; IPv6 fragment header in the same encoding */
	__u8 version;
	__u8 tos;
	__u8 ttl;
	__u8 protocol;  /* transport protocol, after any IPv6 extension headers */
	__u16 sport;
	__u16 dport;
	__u8 tcp_flags;
	__u8 _pad0;
	__u16 _pad1;
	__u32 seq;
	__u32 ack;
	__u8 saddr[16]; /* @addr */
	__u8 daddr[16]; /* @addr */
};

struct mg_qdisc {
	struct mg_hdr hdr;
	__u64 cookie;
	__u64 pkt_id; /* @hex */
	__u32 ifindex;
	__u32 len;
	__u32 qlen;
	__u32 handle;
};

struct mg_dev {
	struct mg_hdr hdr;
	__u64 cookie;  /* dev_rx: the socket of the packet's flow, 0 if none known */
	__u64 pkt_id; /* @hex */
	__u32 ifindex;
	__u32 len;     /* the frame, link header included (dev_rx too) */
	__s32 rc;
	__u16 ethertype;
	__u16 link_type; /* the device's ARPHRD_* type (1 Ethernet, 772 loopback, 65534
	                  * none: tun, wireguard): whether frames have a link header;
	                  * 0 in traces written before it was recorded */
};

/* record --snaplen N: written right after a dev_start_xmit or dev_rx record,
 * with the same time, packet id and ifindex; `caplen` bytes of the frame from
 * its link header follow the struct (the record is 48 + caplen bytes long).
 * The skb's linear part, then its page fragments (dev.bpf.c frame_frags()):
 * caplen = min(N, len) except where fragments cannot be read (RAM above
 * 32 GiB, no /proc/self/pagemap frame numbers, a net_iov fragment) or the
 * rest is in the skb's frag_list (GRO on receive). */
#define MG_SNAPLEN_MAX 2048
struct mg_frame {
	struct mg_hdr hdr;
	__u64 pkt_id; /* @hex */
	__u32 ifindex;
	__u32 len;      /* the whole frame, as in the dev record */
	__u16 caplen;   /* bytes that follow */
	__u16 dev_kind; /* MG_DEV_START_XMIT or MG_DEV_RX */
	__u32 _pad0;
};

struct mg_drop {
	struct mg_hdr hdr;
	__u64 cookie;
	__u64 pkt_id; /* @hex */
	__u64 location; /* @hex */
	__u32 ifindex;
	__u32 reason; /* @names skb_drop_reason */
	__u32 len;
	__u16 ethertype;
	__u16 _pad0;
};

struct mg_sched_switch {
	struct mg_hdr hdr;
	__u32 prev_tid;
	__u32 prev_tgid;
	__u32 next_tid;
	__u32 next_tgid;
	__s64 prev_state;
	char prev_comm[16];
	char next_comm[16];
};

/* wakeup, fork and exit share one layout; `arg` is the target CPU (wakeup),
 * the parent's tgid (fork) or the exit code (exit). */
struct mg_task {
	struct mg_hdr hdr;
	__u32 tid;
	__u32 tgid;
	__s32 arg;
	__u32 _pad0;
	char comm[16];
};

/* record --funcs: a kernel function entered with an skb (kprobe / kprobe-multi). */
struct mg_func {
	struct mg_hdr hdr;
	__u64 func;     /* @hex @names kfunc bpf_get_func_ip(): the function (may be +4 past an ENDBR) */
	__u64 caller;   /* @hex return address: inside the calling function */
	__u64 skb;      /* @hex the sk_buff's address */
	__u64 pkt_id;   /* @hex the recorder's packet id, 0 before the packet has one */
	__u32 len;      /* skb->len */
	__u16 ip_id;
	__u8 version;   /* 4, 6, or 0 when the IP header is not there yet */
	__u8 protocol;
	__u16 sport;
	__u16 dport;
	__u8 tcp_flags;
	__u8 _pad0[3];
	__u8 saddr[16]; /* @addr */
	__u8 daddr[16]; /* @addr */
	__u64 parent;   /* @hex a clone's parent skb (TCP's fclone pair), else 0 */
};

/* record --func-exits: a function whose recorded entry (mg_func) returns. */
struct mg_func_exit {
	struct mg_hdr hdr;
	__u64 func;     /* @hex @names kfunc the function, as in its entry's mg_func */
	__u64 retval;   /* @hex its return value (register); not "ret", which app records use as a signed int */
};

/* Per-CPU counters read by user space at the end of a run. Only loss is
 * counted here: events generated = records of the kind + lost_kind[kind], so
 * the hot path pays no per-event counter. */
struct mg_cpu_stats {
	__u64 lost;                  /* events not yet reported by a LOST record */
	__u64 lost_total;            /* all events this CPU could not record */
	__u64 lost_kind[MG_KIND_MAX];/* events that passed the filters but were lost, by kind */
	__u64 scratch;               /* addr_of(): a pointer stored and read back as a number */
};

#endif
