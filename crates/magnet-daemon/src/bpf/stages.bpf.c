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
 * One send call in `stage_every` of a timed connection is measured (chosen
 * at the call's start in stages_send; the others ask for no stamps, so the
 * kernel makes no SCHED/SND_SW/ACK callbacks for them): the stamps of the
 * call's last byte (skb tskey = its sequence number), as SO_TIMESTAMPING
 * with OPT_ID reports them to an application:
 *
 *   to_qdisc         call start → SCHED (the skb reaches the device's queue)
 *   qdisc_to_device  SCHED → SND_SW (the driver takes it)
 *   device_to_ack    SND_SW → ACK (every byte of the skb acknowledged)
 *   send_to_ack      call start → ACK
 *
 * A call whose last skb is later extended by the next call (a small send
 * while data waits: the kernel moves the tskey to the new last byte) loses
 * its stamps; its pending entry is reused when the socket's ring of
 * MG_STAGE_PENDING calls comes round to it (and counted in `unmatched`).
 */

#define MG_STAGE_TO_QDISC 0
#define MG_STAGE_QDISC_TO_DEVICE 1
#define MG_STAGE_DEVICE_TO_ACK 2
#define MG_STAGE_SEND_TO_ACK 3
#define MG_STAGES 4

/* Time one send call in this many per socket (1: every call); set by user
 * space before load (config `send_stages_every`). */
const volatile __u32 stage_every = 1;

#ifndef SOL_SOCKET
#define SOL_SOCKET 1
#endif

/* One per timed connection (socket cookie): what user space reads; removed
 * by user space with the connection's record. */
struct mg_stages {
	__u64 sends;             /* send calls stamped (TSTAMP_SENDMSG) */
	__u64 unmatched;         /* sends whose stamps were lost: a callback
				    whose send was not found, or a send pushed
				    out of its socket's pending list */
	__u32 hist[MG_STAGES][MG_HIST_SLOTS];
};

/* Send calls waiting for their stamps, per socket (socket storage: found
 * from the socket itself, gone with it). A ring of the last
 * MG_STAGE_PENDING calls; a call still waiting when the ring comes round
 * to it again is lost (counted in `unmatched`). */
#define MG_STAGE_PENDING 32

struct mg_send_slot {
	__u32 tskey;             /* sequence number of the call's last byte */
	__u32 busy;
	__u64 start_ns;
	__u64 sched_ns;
	__u64 sw_ns;
};

struct mg_stage_sk {
	__u64 send_start_ns;     /* start of the send call now in the socket,
				    when it is timed */
	__u64 send_msg;          /* that call's msghdr (the call's identity) */
	__u32 next;              /* calls stamped: the ring's write position */
	__u32 calls;             /* calls started (the sampling's count) */
	__u32 open;              /* a call is in the socket (its SENDMSG
				    callback not yet seen) */
	__u32 timed;             /* … and it is one of the sample */
	struct mg_send_slot slot[MG_STAGE_PENDING];
};

struct mg_stages mg_stages_layout SEC(".data.layout");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384); /* the connection map's size, set before load */
	__type(key, __u64);
	__type(value, struct mg_stages);
} stages SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct mg_stage_sk);
} stage_socks SEC(".maps");

/* A zeroed record to insert (too big for the BPF stack). */
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
	/* direct loads from the trusted context, no helper calls */
	struct skb_shared_info *sh = bpf_core_cast(skb->head + skb->end, struct skb_shared_info);
	return sh ? sh->tskey : 0;
}

static __always_inline void stages_established(struct bpf_sock_ops *skops, __u64 cookie)
{
	int on = SK_BPF_CB_TX_TIMESTAMPING;
	if (skops->family != AF_INET && skops->family != AF_INET6)
		return;
	struct bpf_sock *sk = skops->sk;
	if (!sk || !bpf_sk_storage_get(&stage_socks, sk, 0, BPF_SK_STORAGE_GET_F_CREATE))
		return;
	if (bpf_setsockopt(skops, SOL_SOCKET, SK_BPF_CB_FLAGS, &on, sizeof(on)))
		return;
	stages_of(cookie);
}

static __always_inline void stages_sendmsg(struct bpf_sock_ops *skops, __u64 cookie)
{
	struct bpf_sock_ops_kern *k = bpf_cast_to_kern_ctx(skops);
	struct bpf_sock *sk = skops->sk;
	if (!sk)
		return;
	/* created here too: a socket whose callbacks an earlier magnetd turned
	 * on is timed from its next call on */
	struct mg_stage_sk *p =
		bpf_sk_storage_get(&stage_socks, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!p)
		return;
	/* the call's start was seen and it is one of the sample: the others
	 * ask for no stamps. A socket whose callbacks an earlier magnetd
	 * turned on has its storage made here, at its first call's end: that
	 * call is the first of the sample, timed from here. */
	int timed = p->open ? p->timed : !p->calls;
	if (!p->open && !p->calls)
		p->calls = 1;
	__u64 start = p->send_start_ns;
	p->open = 0;
	p->timed = 0;
	p->send_start_ns = 0;
	p->send_msg = 0;
	if (!timed)
		return;
	struct mg_stages *s = stages_of(cookie);
	if (!s || bpf_sock_ops_enable_tx_tstamp(k, 0))
		return;
	struct mg_send_slot *q = &p->slot[p->next & (MG_STAGE_PENDING - 1)];
	if (q->busy)
		__sync_fetch_and_add(&s->unmatched, 1);
	q->tskey = skops_tskey(k);
	q->busy = 1;
	q->start_ns = start ? start : bpf_ktime_get_ns();
	q->sched_ns = 0;
	q->sw_ns = 0;
	p->next++;
	s->sends++;
}

/* The pending call whose last byte is `tskey`: newest first (the stamps of
 * the qdisc and the driver come soon after the call), oldest first for an
 * ACK (they come in order). */
static __always_inline struct mg_send_slot *pending(struct mg_stage_sk *p, __u32 tskey, int oldest)
{
	for (__u32 i = 0; i < MG_STAGE_PENDING; i++) {
		__u32 at = oldest ? p->next + i : p->next - 1 - i;
		struct mg_send_slot *q = &p->slot[at & (MG_STAGE_PENDING - 1)];
		if (q->busy && q->tskey == tskey)
			return q;
	}
	return NULL;
}

static __always_inline void stages_stamp(struct bpf_sock_ops *skops, __u64 cookie)
{
	struct bpf_sock_ops_kern *k = bpf_cast_to_kern_ctx(skops);
	struct bpf_sock *sk = skops->sk;
	if (!sk)
		return;
	struct mg_stage_sk *p = bpf_sk_storage_get(&stage_socks, sk, 0, 0);
	struct mg_stages *s = bpf_map_lookup_elem(&stages, &cookie);
	if (!p || !s)
		return;
	__u32 op = skops->op;
	struct mg_send_slot *q = pending(p, skops_tskey(k), op == BPF_SOCK_OPS_TSTAMP_ACK_CB);
	if (!q) {
		__sync_fetch_and_add(&s->unmatched, 1);
		return;
	}
	__u64 now = bpf_ktime_get_ns();
	if (op == BPF_SOCK_OPS_TSTAMP_SCHED_CB) {
		/* a retransmission passes the qdisc again: the first counts */
		if (!q->sched_ns) {
			q->sched_ns = now;
			stage_add(s, MG_STAGE_TO_QDISC, q->start_ns, now);
		}
	} else if (op == BPF_SOCK_OPS_TSTAMP_SND_SW_CB) {
		if (q->sched_ns && !q->sw_ns) {
			q->sw_ns = now;
			stage_add(s, MG_STAGE_QDISC_TO_DEVICE, q->sched_ns, now);
		}
	} else {
		if (q->sw_ns)
			stage_add(s, MG_STAGE_DEVICE_TO_ACK, q->sw_ns, now);
		stage_add(s, MG_STAGE_SEND_TO_ACK, q->start_ns, now);
		q->busy = 0;
	}
}

SEC("sockops")
int stages_ops(struct bpf_sock_ops *skops)
{
	__u32 op = skops->op;
	if (op != BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB && op != BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB &&
	    (op < BPF_SOCK_OPS_TSTAMP_SCHED_CB || op > BPF_SOCK_OPS_TSTAMP_SENDMSG_CB))
		return 1;
#if MGD_PROF == 9
	/* the floor: the callbacks stay on, nothing else is done */
	if (op != BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB && op != BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB)
		return 1;
#endif
	/* an untimed send call's SENDMSG callback: one storage lookup */
	if (op == BPF_SOCK_OPS_TSTAMP_SENDMSG_CB) {
		struct bpf_sock *sk = skops->sk;
		struct mg_stage_sk *p = sk ? bpf_sk_storage_get(&stage_socks, sk, 0, 0) : NULL;
		if (p && (p->open ? !p->timed : p->calls != 0)) {
			p->open = 0;
			p->timed = 0;
			return 1;
		}
	}
	__u64 cookie = bpf_get_socket_cookie(skops);
	if (!cookie)
		return 1;
	switch (op) {
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		stages_established(skops, cookie);
		break;
	case BPF_SOCK_OPS_TSTAMP_SENDMSG_CB:
		stages_sendmsg(skops, cookie);
		break;
	case BPF_SOCK_OPS_TSTAMP_SCHED_CB:
	case BPF_SOCK_OPS_TSTAMP_SND_SW_CB:
	case BPF_SOCK_OPS_TSTAMP_ACK_CB:
		stages_stamp(skops, cookie);
		break;
	}
	return 1;
}

/* The start of a send call on a timed socket: the first pass of
 * tcp_sendmsg_locked's copy loop (the tracepoint fires at every pass; a
 * call is known by its msghdr while its SENDMSG callback has not come).
 * Here the call is chosen for the sample or not (one in `stage_every`, the
 * socket's first call included); its callbacks come at the end of the
 * call, after the data is copied. */
SEC("tp_btf/tcp_sendmsg_locked")
int BPF_PROG(stages_send, struct sock *sk, const struct msghdr *msg)
{
	MGD_FLOOR(0);
	if (!bpf_core_field_exists(sk->sk_bpf_cb_flags))
		return 0;
	if (!(sk->sk_bpf_cb_flags & SK_BPF_CB_TX_TIMESTAMPING))
		return 0;
	struct mg_stage_sk *p = bpf_sk_storage_get(&stage_socks, sk, 0, 0);
	if (!p || (p->open && p->send_msg == (__u64)msg))
		return 0;
	__u32 every = stage_every;
	__u32 n = p->calls++;
	p->open = 1;
	p->send_msg = (__u64)msg;
	p->timed = every <= 1 || n % every == 0;
	p->send_start_ns = p->timed ? bpf_ktime_get_ns() : 0;
	return 0;
}
