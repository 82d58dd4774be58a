// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Sockets: a kernel pointer as a number, a socket's 5-tuple, its key in the
 * trace (cookie, or address without the cookie helper), its SOCK record
 * (announce), whether a socket is traced; and the cgroup program that gives
 * every new socket its cookie. Included by record.bpf.c after filter.bpf.c.
 */

/* ---- sockets -------------------------------------------------------------- */

/* A kernel pointer as a plain number: the verifier forbids arithmetic on
 * pointers, so copy the value out of the stack slot that holds it. */
static __always_inline __u64 addr_of_slow(const void *p)
{
	__u64 a = 0;
	const void *slot = p;
	bpf_probe_read_kernel(&a, sizeof(a), &slot);
	return a;
}

/* The same without a helper call (cost: one probe read per packet event
 * was ~20 ns): a privileged program may store a pointer into a map value and
 * load it back as a number. A program that interrupts this one on the same
 * CPU between the store and the load could leave its own pointer there: the
 * comparison catches that, and the slow path answers. */
static __always_inline __u64 addr_of(const void *p)
{
	struct mg_cpu_stats *st = stats();
	if (!st)
		return addr_of_slow(p);
	*(const void *volatile *)&st->scratch = p;
	__u64 a = *(volatile __u64 *)&st->scratch;
	if ((const void *)a != p)
		return addr_of_slow(p);
	return a;
}

struct sk_tuple {
	__u8 saddr[16];
	__u8 daddr[16];
	__u16 sport;
	__u16 dport;
	__u16 family;
	__u16 protocol;
	__u16 type;
};

static __always_inline void read_sk_tuple(const struct sock *sk, struct sk_tuple *t)
{
	t->family = BPF_CORE_READ(sk, __sk_common.skc_family);
	t->protocol = BPF_CORE_READ(sk, sk_protocol);
	t->type = BPF_CORE_READ(sk, sk_type);
	mg_sk_ends(sk, t, t->family == AF_INET6);
}

/* Tracing programs may call bpf_get_socket_cookie (5.12+; the loader asks
 * the kernel's BTF). */
const volatile bool cookie_helper = true;

/* A socket's key in the trace from the cookie read in it (`c`): the cookie
 * itself, or 0 when the kernel has not assigned one yet and a tracing program
 * can (cookie_helper). Without the helper a socket keeps cookie 0 until
 * something else assigns it (the recorder's cgroup/sock_create program at its
 * creation, sock_diag for the sockets that exist at the start): such a socket
 * is keyed by its kernel address instead, which no cookie can equal (cookies
 * count up from 1; kernel addresses are above 2^63). docs/FORMAT.md. */
static __always_inline __u64 sk_key(const struct sock *sk, __u64 c)
{
	if (!c && !cookie_helper && sk)
		return addr_of(sk);
	return c;
}

static __always_inline __u64 sk_cookie(const struct sock *sk)
{
	/* skc_cookie is assigned lazily; bpf_get_socket_cookie() assigns it. */
	__u64 c = sk->__sk_common.skc_cookie.counter;
	if (!c && cookie_helper)
		c = bpf_get_socket_cookie((void *)sk);
	return sk_key(sk, c);
}

/* The flow key of a socket's ends `t` (its netns left to the caller). */
static __always_inline void tuple_flow_key(const struct sk_tuple *t, struct flow_key *k)
{
	__builtin_memcpy(k->local, t->saddr, 16);
	/* Unconnected and listening sockets are wildcards: an all-zero remote
	 * end, as pkt_traced() looks them up (not ::ffff:0.0.0.0). */
	if (t->dport)
		__builtin_memcpy(k->remote, t->daddr, 16);
	k->lport = t->sport;
	k->rport = t->dport;
	k->protocol = t->protocol;
}

/* traced_flows[k] = v, unless it holds that already. */
static __always_inline void flow_put(const struct flow_key *k, const struct flow_val *v)
{
	/* Unchanged: no update, and the per-CPU flow caches stay valid. */
	struct flow_val *old = bpf_map_lookup_elem(&traced_flows, k);
	if (old && old->cookie == v->cookie && old->sk == v->sk && old->netns == v->netns)
		return;
	bpf_map_update_elem(&traced_flows, k, v, BPF_ANY);
	/* After the update: a cache filled before this sees a newer generation. */
	__sync_fetch_and_add(&flow_gen, 1);
}

static __always_inline void track_flow(struct sk_tuple *t, __u64 cookie, __u64 sk)
{
	/* Without a local port there is no flow yet (a TCP client before its
	 * port is chosen). */
	if (!t->sport)
		return;
	struct flow_key k = {};
	tuple_flow_key(t, &k);
	struct flow_val v = { .cookie = cookie, .sk = sk };
	if (sk)
		v.netns = BPF_CORE_READ((const struct sock *)sk, __sk_common.skc_net.net, ns.inum);
	k.netns = v.netns;
	flow_put(&k, &v);
}

/* A TCP socket closed: its flow is marked closed, not removed, because
 * packets of that connection may still come (the peer's ACK or RST after a
 * process was killed) and are still its own. The next connection on the same
 * 4-tuple (a client port reused while the server's end sits in TIME_WAIT,
 * tcp_tw_reuse, a load generator's narrow port range) starts with a SYN: that
 * SYN finds the closed flow and removes it (reopen_flow), so the SYN, the
 * SYN-ACK and the handshake ACK, which come before the new socket is known, go
 * where a first connection's do, to the listener, never to the closed socket.
 * By the time the socket closes the kernel has released its local port
 * (skc_num is 0), so the key takes it from inet_sport. Only the entry that still
 * names this socket is marked. */
static __always_inline void forget_flow(const struct sock *sk, __u64 cookie, struct sk_tuple *t)
{
	if (!t->dport)
		return;
	struct flow_key k = {};
	__builtin_memcpy(k.local, t->saddr, 16);
	__builtin_memcpy(k.remote, t->daddr, 16);
	k.lport = t->sport ? t->sport : bpf_ntohs(BPF_CORE_READ((const struct inet_sock *)sk, inet_sport));
	k.rport = t->dport;
	k.protocol = t->protocol;
	k.netns = BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum);
	struct flow_val *old = bpf_map_lookup_elem(&traced_flows, &k);
	if (!old || old->cookie != cookie || old->closed)
		return;
	old->closed = 1;
	/* After the change: a cache filled before this sees a newer generation. */
	__sync_fetch_and_add(&flow_gen, 1);
}

/* Write the socket's SOCK record. It goes to the identity ring, which holds
 * nothing else and so has room when the event rings are full; only if that
 * fails too (or there is none) does it take this CPU's ring. False: not
 * written (counted as lost); the caller announces again at the next event. */
static __always_inline bool announce(const struct sock *sk, __u64 cookie, struct sk_tuple *t)
{
	struct mg_cpu_stats *st = stats();
	if (!st)
		return false;
	struct mg_sock *r = NULL;
	bool own = false;
	if (has_id_ring) {
		__u32 i = id_ring_index;
		void *idr = bpf_map_lookup_elem(&rings, &i);
		if (idr)
			r = bpf_ringbuf_reserve(idr, sizeof(*r), 0);
	}
	if (!r) {
		void *ring = my_ring();
		if (ring) {
			flush_lost(st, ring);
			r = bpf_ringbuf_reserve(ring, sizeof(*r), 0);
			own = true;
		}
	}
	if (!r) {
		count_lost(st, MG_SOCK);
		return false;
	}
	fill_hdr(&r->hdr, MG_SOCK, 0);
	r->cookie = cookie;
	r->family = t->family;
	r->protocol = t->protocol;
	r->type = t->type;
	r->sport = t->sport;
	r->dport = t->dport;
	r->_pad0 = 0;
	r->netns = BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum);
	__builtin_memcpy(r->saddr, t->saddr, 16);
	__builtin_memcpy(r->daddr, t->daddr, 16);
	if (own)
		submit_direct(r);
	else
		bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP); /* the reader polls */
	return true;
}

/*
 * Decide whether events of this socket are recorded, announcing the socket the
 * first time it is seen. `task_ctx` says the current task is the socket's user
 * (a syscall), so task filters can decide; elsewhere (softirq) only what was
 * learnt before counts.
 */
/* Remember that a socket is traced: in the socket itself (read by every app
 * and tcp event: a pointer, not a hash lookup) and, when filtering, by cookie
 * for packet events, which may only have the cookie. */
static __always_inline __u8 *mark_traced(const struct sock *sk, __u64 cookie)
{
	__u8 *fl = sock_fl(sk, cookie, true);
	if (fl)
		*fl |= SOCK_TRACED;
	if (filter_tasks || tuple_filtered()) {
		__u8 v = SOCK_ANNOUNCED | SOCK_TRACED;
		bpf_map_update_elem(&socks, &cookie, &v, BPF_ANY);
	}
	return fl;
}

/* Cookies of sockets known traced and announced, per CPU, direct-mapped: the
 * app and tcp events of a socket already known skip the socket-storage
 * lookup (a helper call, measurable per event). A cookie names one socket for the
 * kernel's lifetime and a socket's flags are only ever set, so an entry never
 * goes stale; a lost race (a nested program's store) costs only a lookup. */
#define SEEN_SLOTS 64
struct seen_socks {
	__u64 cookie[SEEN_SLOTS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct seen_socks);
} seen_socks SEC(".maps");

static __always_inline bool sock_traced(const struct sock *sk, __u64 cookie, bool task_ctx)
{
	__u32 zero = 0;
	struct seen_socks *seen = bpf_map_lookup_elem(&seen_socks, &zero);
	__u32 slot = cookie & (SEEN_SLOTS - 1);
	if (seen && cookie && seen->cookie[slot] == cookie)
		return true;
	__u8 *fl = sock_fl(sk, cookie, false);
	if (fl && (*fl & SOCK_TRACED)) {
		/* Its SOCK record was lost to a full ring: announce it again. */
		if (!(*fl & SOCK_ANNOUNCED)) {
			struct sk_tuple t = {};
			read_sk_tuple(sk, &t);
			if (announce(sk, cookie, &t))
				*fl |= SOCK_ANNOUNCED;
		}
		if (seen && (*fl & SOCK_ANNOUNCED))
			seen->cookie[slot] = cookie;
		return true;
	}
	/* A socket that existed when the recording began, held by a traced
	 * task (a server's listener and connections when the recorder attaches
	 * to it running): user space found it (recorder/snapshot.rs), wrote its
	 * SOCK record and left its cookie in socks before attaching. Its first
	 * event here may come in a softirq (the request of a connection the
	 * server has not read yet), where task filters cannot decide. */
	if (filter_tasks && cookie) {
		__u8 *snap = bpf_map_lookup_elem(&socks, &cookie);
		if (snap && (*snap & SOCK_TRACED)) {
			struct sk_tuple t = {};
			read_sk_tuple(sk, &t);
			__u8 announced = *snap & SOCK_ANNOUNCED;
			fl = mark_traced(sk, cookie);
			if (fl)
				*fl |= announced;
			if (!announced && announce(sk, cookie, &t) && fl)
				*fl |= SOCK_ANNOUNCED;
			track_flow(&t, cookie, addr_of(sk));
			return true;
		}
	}
	if (!task_ctx && filter_tasks)
		return false;
	if (!sock_in_netns(sk))
		return false;
	if (!task_traced())
		return false;

	struct sk_tuple t = {};
	read_sk_tuple(sk, &t);
	if (tuple_filtered() && !tuple_matches(t.saddr, t.daddr, t.sport, t.dport)) {
		/* An unconnected socket's peer is per call: judge this send by the
		 * destination its syscall named, without marking the socket. */
		if (!task_ctx || t.dport)
			return false;
		struct syscall_in_flight *f = in_flight_now();
		if (!f || !f->has_dest ||
		    !tuple_matches(t.saddr, f->daddr, t.sport, f->dport))
			return false;
		if (!fl || !(*fl & SOCK_ANNOUNCED)) {
			fl = sock_fl(sk, cookie, true);
			if (announce(sk, cookie, &t) && fl)
				*fl |= SOCK_ANNOUNCED;
		}
		return true;
	}
	fl = mark_traced(sk, cookie);
	if (announce(sk, cookie, &t) && fl)
		*fl |= SOCK_ANNOUNCED;
	if (filter_tasks || track_all_flows)
		track_flow(&t, cookie, addr_of(sk));
	return true;
}

/* ---- socket cookies ------------------------------------------------------- */

/* Attached to the cgroup v2 root with packet layers: gives each socket created
 * while recording its cookie at creation. The kernel assigns cookies lazily and
 * a tracing program may not assign one from a packet's socket, so without this
 * a socket's first packets (sent or received before its first announced event,
 * e.g. a UDP receiver's first datagram) would carry cookie 0. Always allows. */
MG_CTX_PROG("cgroup/sock_create", sock_cookie_at_create, 1, struct bpf_sock *ctx)
{
	bpf_get_socket_cookie(ctx);
	return 1;
}
