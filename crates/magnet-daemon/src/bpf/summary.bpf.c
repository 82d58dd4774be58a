// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * magnetd's always-on mode: per-connection summaries kept in the kernel.
 *
 * Nothing here writes an event stream. Each hook adds into one record per
 * connection (a slot of `conns`, found from the socket's storage or by its
 * cookie in `conn_index`) and into host totals per
 * layer (`host`, per CPU); user space reads the maps when asked.
 *
 * hooks                              kernel   what it adds
 *   tp_btf/sock_send_length           6.3+    app tx bytes and calls; creates the record
 *   tp_btf/sock_recv_length           6.3+    app rx bytes and calls; creates the record
 *   tracepoint/syscalls/sys_exit_{sendfile64,splice,sendmmsg,recvmmsg}
 *                                     (tracefs) app calls: one per system call
 *   tp_btf/sys_exit                   5.5+    the same where tracefs lacks those
 *                                             (a program run at every system call)
 *   tp_btf/io_uring_complete          6.0+    app calls: one per io_uring result
 *                                             (both, or neither: then each
 *                                             send/recv in the kernel is a call)
 *   cgroup_skb/egress (root cgroup)   4.10+   wire tx bytes, packets, GSO segments, srtt, cwnd
 *   cgroup_skb/ingress (root cgroup)  4.10+   wire rx bytes and segments
 *   tp_btf/tcp_retransmit_skb         5.5+    retransmits
 *   tp_btf/kfree_skb (with reason)    5.17+   drops by reason, host and per connection
 *   (the hooks above)                          the layer table (layers.bpf.c): app and
 *                                             ip units, bytes, sizes and gaps
 *   tp_btf/inet_sock_set_state        5.5+    creates TCP records at the handshake;
 *                                             close time and the final TCP counters
 *                                             (records of closed connections are
 *                                             reaped by user space)
 *   iter/bpf_sk_storage_map           5.9+    TCP wire counters, retransmits, srtt,
 *                                             cwnd, send-buffer occupancy: copied
 *                                             from each socket's tcp_sock when user
 *                                             space reads (not counted per packet);
 *                                             where the kernel refuses it, user
 *                                             space reads the same counters through
 *                                             sock_diag (tcp_info), as `ss -ti` does
 *
 *   sockops (root cgroup) + tp_btf/tcp_sendmsg_locked   6.15+   the send path's
 *                                             stages from TX timestamp callbacks
 *                                             (stages.bpf.c, the stack_latency part)
 *
 * The app part (the hooks above the cgroup_skb ones) is in app.bpf.c, included below.
 *
 * TCP's wire counters are the kernel's own (tcp_sock bytes_sent, bytes_acked,
 * bytes_received, segs_out/in, data_segs_out/in, total_retrans): every
 * record's socket carries an entry (its slot) in the socket-storage map
 * `conn_socks`, and the iterator over that map visits every such socket, in
 * every network namespace, and copies its counters into the record. The
 * per-packet cgroup_skb programs then only count sockets that are not TCP and
 * keep the latency marks; they are optional (magnetd's `packet_hooks`).
 * Kernels before 6.3 lack the two sock_*_length tracepoints: there the app
 * layer needs syscall tracepoints instead (not done here; magnetd says so).
 *
 * A TCP connection is tracked from its handshake (inet_sock_set_state to
 * SYN_SENT or ESTABLISHED), any other socket from its first send or recv
 * call. The owner is the socket's (sk_uid); process, command and cgroup are
 * those of the last send/recv caller. Packets of sockets without a record
 * still count in the host totals.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "magnet/consts.h"
#include "magnet/sock.h"
#include "magnet/skb_parse.h"
#include "magnet/syscalls.h"
#include "magnet/io_uring.h"
#include "summary.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Cost profile builds (measurement only, never shipped; app.bpf.c):
 * MAGNET_BPF_CFLAGS=-DMGD_PROF=9 is the floor: every program returns at its
 * entry (the sock_ops program still turns the sockets' TX timestamp
 * callbacks on, so that they run as often), so that BPF time above it is
 * magnetd's own work and the floor itself is what its hooks cost merely
 * for having a program on them. */
#ifndef MGD_PROF
#define MGD_PROF 0
#endif
#if MGD_PROF == 9
#define MGD_FLOOR(v) return (v)
#else
#define MGD_FLOOR(v) do { } while (0)
#endif

#define TCP_ESTABLISHED 1
#define TCP_SYN_SENT 2
#define TCP_CLOSE 7

/* Set by user space before load: false when the per-packet programs are
 * never attached (magnetd's packet_hooks = "off"). Then the calls set no
 * latency marks: nothing would close them. */
const volatile bool packet_marks = true;
/* packet_hooks = "always": the per-packet programs see every packet, so they
 * count (host wire totals, wire counters of sockets other than TCP). When
 * they are only attached in windows such counts would be partial: they are
 * not kept at all. */
const volatile bool count_packets = true;
/* packet_hooks = "sampled": the per-packet programs are attached only during
 * windows (user space creates and destroys their links). The marks then
 * follow the rules marked "sampled" below, so that a sample is never made
 * of a mark and a wire event that do not belong together. */
const volatile bool sampled = false;
/* TCP records take their wire counters, retransmits, srtt and cwnd from
 * the socket's own tcp_sock (copied at close here, and while open by the
 * `tcp_kstats` iterator or, where that is refused, by user space through
 * sock_diag). False: magnetd has no way to read them (the TCP counters part
 * is left out) and the per-packet programs count TCP too. */
const volatile bool kstats_on = true;
/* The iterator reads them: it visits every socket with a `conn_socks`
 * entry. False: user space reads them through sock_diag. */
const volatile bool kstats_storage = true;
/* Each socket with a record notes its slot in its own storage
 * (`conn_socks`), so that the hooks that have the socket find the record
 * without a hash lookup. False (socket storage denied): every lookup goes
 * through `conn_index`, and the map is not created. */
const volatile bool conn_cache = true;
/* The number of slots (max_connections, the arrays' size). */
const volatile __u32 slots = 16384;
/* The first slot no record has had yet. */
__u32 next_slot = 0;
/* 1 while the per-packet programs are attached (user space writes it after
 * attaching and before detaching; always 1 with packet_hooks = "always"). */
__u32 window_open = 0;
/* One of the app part's first two candidates is loaded (the syscall exits
 * and io_uring_complete):
 * an app call is one system call or io_uring request, counted once at its
 * end, not once per send the kernel makes for it. False (the fallback):
 * every send and recv inside the kernel counts as a call. */
const volatile bool calls_at_exit = false;

/* Keeps the record types in the object's BTF for the skeleton's types. */
struct mg_conn mg_conn_layout SEC(".data.layout");
struct mg_host mg_host_layout SEC(".data.layout");

/* The records, one per slot; `conns`, `conn_index`, `free_slots` and
 * `layers` are all sized from the config (max_connections) before load.
 * A new record takes a slot given back by user space when it reaped a
 * record (after zeroing it), from `free_slots`, else the next slot never
 * used (`next_slot`), so nothing has to fill the queue first. Arrays rather
 * than a hash keyed by cookie: a call finds its record through its
 * socket's storage and a slot number, not a hash of the cookie and a walk
 * of a bucket (bench/notes/2026-11-30-daemon-record-slots.md). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct mg_conn);
} conns SEC(".maps");

/* cookie → slot: for the hooks that have no socket (or not one whose
 * storage they may use), and for user space. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u32);
} conn_index SEC(".maps");

/* Slots of reaped records, free again (pushed by user space). */
struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(max_entries, 16384);
	__type(value, __u32);
} free_slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mg_host);
} host SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MG_DROP_REASONS);
	__type(key, __u32);
	__type(value, __u64);
} drop_reasons SEC(".maps");

/* Every socket that has a record notes its slot here (conn_cache), and
 * the iterator below visits them for the TCP counters (socket storage
 * lives and dies with its socket, in any namespace). */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct mg_conn_sk);
} conn_socks SEC(".maps");

#include "layers.bpf.c"

static __always_inline struct mg_host *host_totals(void)
{
	__u32 k = 0;
	return bpf_map_lookup_elem(&host, &k);
}

static __always_inline __u64 sk_cookie(const struct sock *sk)
{
	__u64 c = mg_sk_cookie_read(sk);
	if (!c)
		c = bpf_get_socket_cookie((void *)sk);
	return c;
}

static __always_inline __u32 hist_slot(__u64 ns)
{
	__u64 us = ns / 1000;
	__u32 slot = 0;
	/* floor(log2(us)); slot 0 holds < 2 us */
	for (int i = 0; i < MG_HIST_SLOTS - 1; i++) {
		if (us < 2)
			break;
		us >>= 1;
		slot++;
	}
	return slot;
}

/* Copies the kernel's own TCP counters of `sk` into its record. */
static __always_inline void kstats_copy(struct mg_conn *c, struct sock *sk)
{
	struct tcp_sock *tp = bpf_skc_to_tcp_sock(sk);
	if (!tp)
		return;
	c->wire_tx_bytes = tp->bytes_sent;
	c->acked_bytes = tp->bytes_acked;
	c->wire_tx_packets = tp->segs_out;
	c->wire_tx_segs = tp->segs_out;
	c->data_segs_out = tp->data_segs_out;
	c->wire_rx_bytes = tp->bytes_received;
	c->wire_rx_packets = tp->segs_in;
	c->data_segs_in = tp->data_segs_in;
	c->retransmits = tp->total_retrans;
	c->srtt_us = tp->srtt_us >> 3;
	c->snd_cwnd = tp->snd_cwnd;
	c->wmem_queued = tp->inet_conn.icsk_inet.sk.sk_wmem_queued;
}

/* The record in `slot` if it is `cookie`'s. */
static __always_inline struct mg_conn *conn_in(__u32 slot, __u64 cookie)
{
	struct mg_conn *c = bpf_map_lookup_elem(&conns, &slot);
	return c && c->cookie == cookie ? c : NULL;
}

/* The record of `cookie`, through the index. */
static __always_inline struct mg_conn *conn_by_cookie(__u64 cookie)
{
	__u32 *slot = bpf_map_lookup_elem(&conn_index, &cookie);
	return slot ? conn_in(*slot, cookie) : NULL;
}

/* The record of socket `sk` (a trusted socket pointer, or a cgroup_skb
 * program's full socket) through its storage's note alone. */
static __always_inline struct mg_conn *conn_noted(void *sk, __u64 cookie)
{
	if (!conn_cache || !sk)
		return NULL;
	struct mg_conn_sk *n = bpf_sk_storage_get(&conn_socks, sk, 0, 0);
	return n && n->cookie == cookie ? conn_in(n->slot, cookie) : NULL;
}

/* The record of socket `sk`: through its storage's note, else the index. */
static __always_inline struct mg_conn *conn_find(void *sk, __u64 cookie)
{
	struct mg_conn *c = conn_noted(sk, cookie);
	return c ? c : conn_by_cookie(cookie);
}

/* Notes the record's slot in its socket's storage (the iterator visits
 * the socket from then on) and says where its TCP counters come from. */
static __always_inline void conn_note(struct mg_conn *c, struct sock *sk, __u64 cookie)
{
	if (conn_cache) {
		struct mg_conn_sk *n =
			bpf_sk_storage_get(&conn_socks, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
		if (n) {
			n->slot = c->slot;
			n->cookie = cookie;
		}
		if (!n && kstats_storage)
			return; /* the iterator cannot find it */
	}
	if (kstats_on && c->protocol == IPPROTO_TCP)
		c->kstats = 1;
}

/* The record of `sk`, created on first sight (process context only). */
static __always_inline struct mg_conn *conn_of(struct sock *sk, __u64 cookie, __u64 now,
					       struct mg_host *h)
{
	struct mg_conn *c = conn_noted(sk, cookie);
	if (c)
		return c;
	c = conn_by_cookie(cookie);
	if (c) {
		/* the socket's storage did not have it (made where storage
		 * could not be used): noted now */
		if (conn_cache)
			conn_note(c, sk, cookie);
		return c;
	}
	__u32 slot;
	if (bpf_map_pop_elem(&free_slots, &slot)) {
		/* none given back: a slot never used, if any is left (checked
		 * before the add, so that the counter never runs past `slots`
		 * by more than the CPUs racing for the last one) */
		slot = next_slot < slots ? __sync_fetch_and_add(&next_slot, 1) : slots;
		if (slot >= slots) {
			if (h)
				h->conns_map_full++;
			return NULL;
		}
	}
	long err = bpf_map_update_elem(&conn_index, &cookie, &slot, BPF_NOEXIST);
	if (err) {
		/* made by another CPU meanwhile (EEXIST: its record may not
		 * have its cookie yet, which is no full map), or the index is
		 * full */
		bpf_map_push_elem(&free_slots, &slot, 0);
		c = conn_by_cookie(cookie);
		if (!c && err != -17 /* EEXIST */ && h)
			h->conns_map_full++;
		return c;
	}
	c = bpf_map_lookup_elem(&conns, &slot);
	if (!c)
		return NULL;
	/* user space zeroed the slot when it gave it back; a program that
	 * still held its old record then may have written since */
	__builtin_memset(c, 0, sizeof(*c));
	layers_clear(slot);
	c->slot = slot;
	c->first_ns = now;
	/* idle from creation on, not from boot: a record made at the handshake
	 * of a socket that never calls would otherwise be reaped as idle */
	c->last_ns = now;
	c->family = BPF_CORE_READ(sk, __sk_common.skc_family);
	c->protocol = BPF_CORE_READ(sk, sk_protocol);
	c->uid = BPF_CORE_READ(sk, sk_uid.val);
	c->netns = BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum);
	mg_sk_ends(sk, c, c->family == AF_INET6);
	/* last: from here on lookups by cookie take this record as its own */
	c->cookie = cookie;
	conn_note(c, sk, cookie);
	if (h)
		h->conns_new++;
	return c;
}

#include "rx.bpf.c"
#include "app.bpf.c"
#include "stages.bpf.c"

/* TCP sequence number and payload length of an IP packet, 0 if not TCP data
 * (cgroup_skb: the data starts at the IP header). */
static __always_inline __u32 tcp_payload(struct __sk_buff *skb, __u32 *seq)
{
	struct mg_skb_pkt p = {};
	if (mg_skb_parse(skb, 0, &p) || p.proto != IPPROTO_TCP || !p.has_ports)
		return 0;
	*seq = p.seq;
	return p.payload;
}

static __always_inline void wire(struct __sk_buff *skb, int tx)
{
	struct mg_host *h = host_totals();
	__u64 len = skb->len;
	__u64 segs = skb->gso_segs ? skb->gso_segs : 1;
	if (h) {
		h->events++;
	}
	if (h && count_packets) {
		if (tx) {
			h->wire_tx_bytes += len;
			h->wire_tx_packets++;
			h->wire_tx_segs += segs;
		} else {
			h->wire_rx_bytes += len;
			h->wire_rx_packets += segs;
		}
	}
	__u64 cookie = bpf_get_socket_cookie(skb);
	if (!cookie)
		return;
	struct bpf_sock *sk = skb->sk;
	struct mg_conn *c = conn_find(sk ? bpf_sk_fullsock(sk) : NULL, cookie);
	if (!c)
		return;
	if (count_packets)
		layer_unit(c, MG_LAYER_IP, tx, len, bpf_ktime_get_ns());
	if (c->kstats || !count_packets) {
		/* TCP: counted by the kernel (tcp_sock), copied by tcp_kstats;
		 * sampled: not counted (it would be a part of the packets) */
	} else if (tx) {
		__sync_fetch_and_add(&c->wire_tx_bytes, len);
		__sync_fetch_and_add(&c->wire_tx_packets, 1);
		__sync_fetch_and_add(&c->wire_tx_segs, segs);
	} else {
		__sync_fetch_and_add(&c->wire_rx_bytes, len);
		__sync_fetch_and_add(&c->wire_rx_packets, segs);
	}
	if (c->protocol != IPPROTO_TCP)
		return;
	/* srtt and cwnd as the socket sends (an ACK's update shows at the next
	 * packet out): the TCP socket is looked up on egress only, and on
	 * ingress only when a mark needs rcv_nxt. */
	struct bpf_tcp_sock *tp = NULL;
	if (tx && sk && !c->kstats) {
		/* bpf_tcp_sock checks for a full TCP socket itself */
		tp = bpf_tcp_sock(sk);
		if (tp) {
			c->srtt_us = tp->srtt_us >> 3;
			c->snd_cwnd = tp->snd_cwnd;
		}
	}
	/* Latency marks: parse the TCP header only when a mark waits for it. */
	__u64 mark = c->tx_mark_ns;
	if (tx ? !mark : c->rx_mark_ns != 0)
		return;
	__u32 rcv_nxt = 0;
	if (!tx && sk) {
		tp = bpf_tcp_sock(sk);
		if (tp)
			rcv_nxt = tp->rcv_nxt;
		/* sampled: a mark needs the reader to have taken everything
		 * that had arrived (the rule below); known before parsing,
		 * so most packets in are done here */
		if (sampled && !(rcv_nxt && rcv_nxt == c->rx_drained_seq))
			return;
	}
	__u32 seq = 0;
	__u32 payload = tcp_payload(skb, &seq);
	if (!payload)
		return;
	__u64 now = bpf_ktime_get_ns();
	if (tx) {
		c->tx_progress_ns = now;
		if ((__s32)(seq + payload - c->tx_mark_seq) >= 0) {
			/* sampled: a packet that starts at or after the mark's
			 * end means the mark's last byte left unseen (between
			 * windows): no sample */
			if (!sampled || (__s32)(seq - c->tx_mark_seq) < 0) {
				__u32 s = hist_slot(now > mark ? now - mark : 0);
				if (s < MG_HIST_SLOTS)
					__sync_fetch_and_add(&c->app_to_wire_hist[s], 1);
			}
			c->tx_mark_ns = 0;
		}
	} else if (!c->rx_mark_ns && (!rcv_nxt || (__s32)(seq + payload - rcv_nxt) > 0)) {
		/* new data (not a duplicate of what the socket already has)
		 * waits for the reader from now. Sampled: only if nothing has
		 * arrived since the reader last took everything (rcv_nxt is
		 * where it was then); otherwise older data, which arrived
		 * unseen, already waits, and a mark now would be too late. */
		if (!sampled || (rcv_nxt && rcv_nxt == c->rx_drained_seq))
			c->rx_mark_ns = now;
	}
}

SEC("cgroup_skb/egress")
int wire_egress(struct __sk_buff *skb)
{
	MGD_FLOOR(1);
	wire(skb, 1);
	return 1;
}

SEC("cgroup_skb/ingress")
int wire_ingress(struct __sk_buff *skb)
{
	MGD_FLOOR(1);
	wire(skb, 0);
	return 1;
}

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(tcp_retrans, const struct sock *sk, const struct sk_buff *skb)
{
	MGD_FLOOR(0);
	struct mg_host *h = host_totals();
	if (h) {
		h->events++;
		h->retransmits++;
	}
	if (!sk)
		return 0;
	__u64 cookie = sk_cookie(sk);
	struct mg_conn *c = conn_find((void *)sk, cookie);
	if (c && !c->kstats)
		__sync_fetch_and_add(&c->retransmits, 1);
	return 0;
}

SEC("tp_btf/kfree_skb")
int BPF_PROG(drop, struct sk_buff *skb, void *location, enum skb_drop_reason reason)
{
	MGD_FLOOR(0);
	struct mg_host *h = host_totals();
	if (h) {
		h->events++;
		h->drops++;
	}
	__u32 r = reason;
	if (r >= MG_DROP_REASONS)
		r = MG_DROP_REASONS - 1;
	__u64 *n = bpf_map_lookup_elem(&drop_reasons, &r);
	if (n)
		(*n)++;
	struct sock *sk = BPF_CORE_READ(skb, sk);
	if (!sk)
		return 0;
	__u64 cookie = mg_sk_cookie_read(sk);
	if (!cookie)
		return 0;
	/* skb->sk is not a trusted pointer here: through the index */
	struct mg_conn *c = conn_by_cookie(cookie);
	if (c)
		__sync_fetch_and_add(&c->drops, 1);
	return 0;
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(tcp_state, struct sock *sk, const int oldstate, const int newstate)
{
	MGD_FLOOR(0);
	if (newstate == TCP_SYN_SENT || newstate == TCP_ESTABLISHED) {
		/* Track TCP from the handshake on, so the wire counts include the
		 * packets before the first call (the caller is filled in by it). */
		__u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);
		if (family != AF_INET && family != AF_INET6)
			return 0;
		struct mg_host *h = host_totals();
		__u64 cookie = sk_cookie(sk);
		struct mg_conn *c = conn_of(sk, cookie, bpf_ktime_get_ns(), h);
		if (c) {
			/* ends are known now (connect or accept) */
			c->sport = BPF_CORE_READ(sk, __sk_common.skc_num);
			c->dport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
			/* sampled: nothing received yet is waiting */
			if (sampled && newstate == TCP_ESTABLISHED) {
				struct tcp_sock *tp = bpf_skc_to_tcp_sock(sk);
				if (tp)
					c->rx_drained_seq = tp->rcv_nxt;
			}
		}
		return 0;
	}
	__u64 cookie = mg_sk_cookie_read(sk);
	if (!cookie)
		return 0;
	struct mg_conn *c = conn_find(sk, cookie);
	if (!c)
		return 0;
	layers_tcp_state(sk, c);
	if (newstate != TCP_CLOSE)
		return 0;
	/* the final counters: the socket (and its storage) goes away soon */
	if (c->kstats)
		kstats_copy(c, sk);
	c->closed_ns = bpf_ktime_get_ns();
	return 0;
}

/* Run by user space before it reads `conns`: visits every socket with a
 * `conn_socks` entry (in every namespace) and copies the TCP counters of
 * each TCP one into its record. Writes no output. */
SEC("iter/bpf_sk_storage_map")
int tcp_kstats(struct bpf_iter__bpf_sk_storage_map *ctx)
{
	struct sock *sk = ctx->sk;
	struct mg_conn_sk *n = ctx->value;
	if (!sk || !n)
		return 0;
	struct mg_conn *c = conn_in(n->slot, n->cookie);
	if (c && c->kstats && !c->closed_ns)
		kstats_copy(c, sk);
	return 0;
}
