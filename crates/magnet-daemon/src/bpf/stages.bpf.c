// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The send path's stages, from the kernel's own TX timestamp callbacks
 * (Linux 6.15+: sock_ops BPF_SOCK_OPS_TSTAMP_*_CB and the kfunc
 * bpf_sock_ops_enable_tx_tstamp). Included by summary.bpf.c (the
 * `stack_latency` part); the kernel's selftest net_timestamping.c shows the
 * same calls.
 *
 * hooks                              kernel   what it does
 *   sockops (root cgroup)             6.15+    at ACTIVE/PASSIVE_ESTABLISHED: turns
 *                                              the socket's TX timestamp callbacks on
 *                                              (SK_BPF_CB_FLAGS), so only TCP
 *                                              connections established after magnetd
 *                                              attached are timed; at TSTAMP_SENDMSG:
 *                                              asks for the stamps of the call's last
 *                                              skb; at TSTAMP_SCHED / SND_SW / ACK:
 *                                              the stages, into `stages`
 *   tp_btf/tcp_sendmsg_locked         6.5+     the start of each send call of such a
 *                                              socket (the callbacks come at its end)
 *
 * Every send call of a timed connection is measured (no sampling): the
 * stamps of the call's last byte (skb tskey = its sequence number), as
 * SO_TIMESTAMPING with OPT_ID reports them to an application:
 *
 *   to_qdisc         call start → SCHED (the skb reaches the device's queue)
 *   qdisc_to_device  SCHED → SND_SW (the driver takes it)
 *   device_to_ack    SND_SW → ACK (every byte of the skb acknowledged)
 *   send_to_ack      call start → ACK
 *
 * A call whose last skb is later extended by the next call (a small send
 * while data waits: the kernel moves the tskey to the new last byte) loses
 * its stamps; its pending entry ages out of the LRU map.
 */

#define MG_STAGE_TO_QDISC 0
#define MG_STAGE_QDISC_TO_DEVICE 1
#define MG_STAGE_DEVICE_TO_ACK 2
#define MG_STAGE_SEND_TO_ACK 3
#define MG_STAGES 4

#ifndef SOL_SOCKET
#define SOL_SOCKET 1
#endif

/* One per timed connection (socket cookie); removed by user space with
 * the connection's record. */
struct mg_stages {
	__u64 send_start_ns;     /* start of the send call now in the socket
				    (0: none) */
	__u64 send_msg;          /* that call's msghdr (the call's identity) */
	__u64 sends;             /* send calls stamped (TSTAMP_SENDMSG) */
	__u64 unmatched;         /* callbacks whose send was not found */
	__u32 hist[MG_STAGES][MG_HIST_SLOTS];
};

/* A send call waiting for its stamps: by socket and the sequence number of
 * its last byte. */
struct mg_send_key {
	__u64 cookie;
	__u32 tskey;
	__u32 _pad;
};

struct mg_send_val {
	__u64 start_ns;
	__u64 sched_ns;
	__u64 sw_ns;
};

struct mg_stages mg_stages_layout SEC(".data.layout");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384); /* the connection map's size, set before load */
	__type(key, __u64);
	__type(value, struct mg_stages);
} stages SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 32768);
	__type(key, struct mg_send_key);
	__type(value, struct mg_send_val);
} stage_sends SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mg_stages);
} stages_scratch SEC(".maps");

extern int bpf_sock_ops_enable_tx_tstamp(struct bpf_sock_ops_kern *skops, __u64 flags) __ksym __weak;
extern void *bpf_cast_to_kern_ctx(void *obj) __ksym __weak;

/* The connection's stage record, created when missing. */
static __always_inline struct mg_stages *stages_of(__u64 cookie)
{
	struct mg_stages *s = bpf_map_lookup_elem(&stages, &cookie);
	if (s)
		return s;
	__u32 zero = 0;
	struct mg_stages *n = bpf_map_lookup_elem(&stages_scratch, &zero);
	if (!n)
		return NULL;
	__builtin_memset(n, 0, sizeof(*n));
	bpf_map_update_elem(&stages, &cookie, n, BPF_NOEXIST);
	return bpf_map_lookup_elem(&stages, &cookie);
}

static __always_inline void stage_add(struct mg_stages *s, int stage, __u64 from, __u64 to)
{
	__u32 slot = hist_slot(to > from ? to - from : 0);
	if (stage >= 0 && stage < MG_STAGES && slot < MG_HIST_SLOTS)
		__sync_fetch_and_add(&s->hist[stage][slot], 1);
}

/* The tskey of the callback's skb: the sequence number of the last byte of
 * the send call it was asked for. */
static __always_inline __u32 skops_tskey(struct bpf_sock_ops_kern *k)
{
	struct sk_buff *skb = k->skb;
	if (!skb)
		return 0;
	struct skb_shared_info *sh =
		bpf_core_cast(BPF_CORE_READ(skb, head) + BPF_CORE_READ(skb, end),
			      struct skb_shared_info);
	return sh ? sh->tskey : 0;
}

static __always_inline void stages_established(struct bpf_sock_ops *skops, __u64 cookie)
{
	int on = SK_BPF_CB_TX_TIMESTAMPING;
	if (skops->family != AF_INET && skops->family != AF_INET6)
		return;
	if (bpf_setsockopt(skops, SOL_SOCKET, SK_BPF_CB_FLAGS, &on, sizeof(on)))
		return;
	stages_of(cookie);
}

static __always_inline void stages_sendmsg(struct bpf_sock_ops *skops, __u64 cookie, __u64 now)
{
	struct bpf_sock_ops_kern *k = bpf_cast_to_kern_ctx(skops);
	if (bpf_sock_ops_enable_tx_tstamp(k, 0))
		return;
	struct mg_send_key key = { .cookie = cookie, .tskey = skops_tskey(k) };
	struct mg_stages *s = stages_of(cookie);
	if (!s)
		return;
	struct mg_send_val v = { .start_ns = s->send_start_ns ? s->send_start_ns : now };
	s->send_start_ns = 0;
	s->send_msg = 0;
	s->sends++;
	bpf_map_update_elem(&stage_sends, &key, &v, BPF_ANY);
}

static __always_inline void stages_stamp(struct bpf_sock_ops *skops, __u64 cookie, __u64 now)
{
	struct bpf_sock_ops_kern *k = bpf_cast_to_kern_ctx(skops);
	struct mg_send_key key = { .cookie = cookie, .tskey = skops_tskey(k) };
	struct mg_stages *s = bpf_map_lookup_elem(&stages, &cookie);
	if (!s)
		return;
	struct mg_send_val *v = bpf_map_lookup_elem(&stage_sends, &key);
	if (!v) {
		__sync_fetch_and_add(&s->unmatched, 1);
		return;
	}
	switch (skops->op) {
	case BPF_SOCK_OPS_TSTAMP_SCHED_CB:
		/* a retransmission passes the qdisc again: the first counts */
		if (!v->sched_ns) {
			v->sched_ns = now;
			stage_add(s, MG_STAGE_TO_QDISC, v->start_ns, now);
		}
		break;
	case BPF_SOCK_OPS_TSTAMP_SND_SW_CB:
		if (v->sched_ns && !v->sw_ns) {
			v->sw_ns = now;
			stage_add(s, MG_STAGE_QDISC_TO_DEVICE, v->sched_ns, now);
		}
		break;
	case BPF_SOCK_OPS_TSTAMP_ACK_CB:
		if (v->sw_ns)
			stage_add(s, MG_STAGE_DEVICE_TO_ACK, v->sw_ns, now);
		stage_add(s, MG_STAGE_SEND_TO_ACK, v->start_ns, now);
		bpf_map_delete_elem(&stage_sends, &key);
		break;
	}
}

SEC("sockops")
int stages_ops(struct bpf_sock_ops *skops)
{
	__u32 op = skops->op;
	__u64 now = bpf_ktime_get_ns();
	__u64 cookie = bpf_get_socket_cookie(skops);
	if (!cookie)
		return 1;
	switch (op) {
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		stages_established(skops, cookie);
		break;
	case BPF_SOCK_OPS_TSTAMP_SENDMSG_CB:
		stages_sendmsg(skops, cookie, now);
		break;
	case BPF_SOCK_OPS_TSTAMP_SCHED_CB:
	case BPF_SOCK_OPS_TSTAMP_SND_SW_CB:
	case BPF_SOCK_OPS_TSTAMP_ACK_CB:
		stages_stamp(skops, cookie, now);
		break;
	}
	return 1;
}

/* The start of a send call on a timed socket: the first pass of
 * tcp_sendmsg_locked's copy loop (the tracepoint fires at every pass; a
 * call is known by its msghdr). Its callbacks come at the end of the call,
 * after the data is copied. */
SEC("tp_btf/tcp_sendmsg_locked")
int BPF_PROG(stages_send, const struct sock *sk, const struct msghdr *msg)
{
	if (!bpf_core_field_exists(sk->sk_bpf_cb_flags))
		return 0;
	if (!(BPF_CORE_READ(sk, sk_bpf_cb_flags) & SK_BPF_CB_TX_TIMESTAMPING))
		return 0;
	__u64 cookie = sk_cookie(sk);
	struct mg_stages *s = bpf_map_lookup_elem(&stages, &cookie);
	if (s && (!s->send_start_ns || s->send_msg != (__u64)msg)) {
		s->send_start_ns = bpf_ktime_get_ns();
		s->send_msg = (__u64)msg;
	}
	return 0;
}
