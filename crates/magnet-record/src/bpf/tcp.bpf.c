// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Layer tcp: segments at tcp_probe and tcp_sendmsg_locked, retransmits,
 * resets and state changes (with --tcp-state, a snapshot of tcp_sock).
 */

/* ---- layer: tcp ----------------------------------------------------------- */

/* Probe reads: for a socket known only by its address on a kernel without
 * bpf_rdonly_cast (6.1). */
static __always_inline void fill_snap_probe(const struct sock *sk, struct mg_tcp_snap *s)
{
	const struct tcp_sock *tp = (const struct tcp_sock *)sk;
	const struct inet_connection_sock *icsk = (const struct inet_connection_sock *)sk;
	s->sport = BPF_CORE_READ(sk, __sk_common.skc_num);
	s->dport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	s->state = BPF_CORE_READ(sk, __sk_common.skc_state);
	s->ca_state = BPF_CORE_READ_BITFIELD_PROBED(icsk, icsk_ca_state);
	s->_pad0 = 0;
	s->snd_wnd = BPF_CORE_READ(tp, snd_wnd);
	s->srtt_us = BPF_CORE_READ(tp, srtt_us) >> 3;
	s->rto_jiffies = BPF_CORE_READ(icsk, icsk_rto);
	s->packets_out = BPF_CORE_READ(tp, packets_out);
	s->retrans_out = BPF_CORE_READ(tp, retrans_out);
	s->snd_ssthresh = BPF_CORE_READ(tp, snd_ssthresh);
	s->snd_cwnd = BPF_CORE_READ(tp, snd_cwnd);
	s->rcv_wnd = BPF_CORE_READ(tp, rcv_wnd);
	s->write_seq = BPF_CORE_READ(tp, write_seq);
	s->copied_seq = BPF_CORE_READ(tp, copied_seq);
	s->snd_una = BPF_CORE_READ(tp, snd_una);
	s->snd_nxt = BPF_CORE_READ(tp, snd_nxt);
	s->rcv_nxt = BPF_CORE_READ(tp, rcv_nxt);
	s->wmem_queued = BPF_CORE_READ(sk, sk_wmem_queued);
	s->sndbuf = BPF_CORE_READ(sk, sk_sndbuf);
	s->mss_cache = BPF_CORE_READ(tp, mss_cache);
}

/* The same by direct BTF loads from a BTF-typed tcp_sock (bpf_skc_to_tcp_sock
 * of a tracing program's argument, or bpf_core_cast's result). The snapshot
 * has 19 fields: as probe reads they cost a helper call each, which made
 * --tcp-state ~20 % dearer than recording without it. */
static __always_inline void fill_snap_tp(const struct tcp_sock *tp, struct mg_tcp_snap *s)
{
	const struct inet_connection_sock *icsk = &tp->inet_conn;
	const struct sock *sk = &icsk->icsk_inet.sk;
	s->sport = sk->__sk_common.skc_num;
	s->dport = bpf_ntohs(sk->__sk_common.skc_dport);
	s->state = sk->__sk_common.skc_state;
	s->ca_state = BPF_CORE_READ_BITFIELD(icsk, icsk_ca_state);
	s->_pad0 = 0;
	s->snd_wnd = tp->snd_wnd;
	s->srtt_us = tp->srtt_us >> 3;
	s->rto_jiffies = icsk->icsk_rto;
	s->packets_out = tp->packets_out;
	s->retrans_out = tp->retrans_out;
	s->snd_ssthresh = tp->snd_ssthresh;
	s->snd_cwnd = tp->snd_cwnd;
	s->rcv_wnd = tp->rcv_wnd;
	s->write_seq = tp->write_seq;
	s->copied_seq = tp->copied_seq;
	s->snd_una = tp->snd_una;
	s->snd_nxt = tp->snd_nxt;
	s->rcv_nxt = tp->rcv_nxt;
	s->wmem_queued = sk->sk_wmem_queued;
	s->sndbuf = sk->sk_sndbuf;
	s->mss_cache = tp->mss_cache;
}

/* A tracing program's socket argument: one helper call gives it its tcp_sock type. */
static __always_inline void fill_snap(const struct sock *sk, struct mg_tcp_snap *s)
{
	struct tcp_sock *tp = bpf_skc_to_tcp_sock((void *)sk);
	if (tp)
		fill_snap_tp(tp, s);
	else
		fill_snap_probe(sk, s);
}

#define TCP_BODY_LEN (sizeof(struct mg_tcp) - sizeof(struct mg_tcp_snap))

static __always_inline struct mg_tcp *tcp_reserve(__u16 kind)
{
	struct mg_tcp *r;
	if (tcp_state) {
		if (!RESERVE(r, sizeof(struct mg_tcp), kind))
			return NULL;
	} else {
		if (!RESERVE(r, TCP_BODY_LEN, kind))
			return NULL;
	}
	fill_hdr(&r->hdr, kind, tcp_state ? MG_F_TCP_STATE : 0);
	return r;
}

static __always_inline void tcp_event(const struct sock *sk, const struct sk_buff *skb,
				      __u16 kind, __u32 len, __u32 arg, bool task_ctx)
{
	if (sock_elsewhere(sk))
		return;
	__u64 cookie = sk_cookie(sk);
	if (!sock_traced(sk, cookie, task_ctx))
		return;
	struct mg_tcp *r = tcp_reserve(kind);
	if (!r)
		return;
	r->cookie = cookie;
	r->pkt_id = skb ? pkt_id(skb, kind == MG_TCP_RCV ? PKT_END : PKT_FOLLOW) : 0;
	r->len = len;
	r->seq = 0;
	r->ack = 0;
	if (skb) {
		/* tcp_skb_cb lives in skb->cb; seq and end_seq come first, ack_seq after
		 * the union of tcp_tw_isn/header, so read through the CO-RE type. */
		const struct tcp_skb_cb *cb = (const struct tcp_skb_cb *)&skb->cb[0];
		r->seq = cb->seq;
		r->ack = cb->ack_seq;
		/* A retransmitted write-queue skb stands for tcp_skb_pcount
		 * segments (its GSO count, 0 read as 1): what TcpRetransSegs and
		 * tcp_info's total_retrans add, where the hook fires once. */
		if (kind == MG_TCP_RETRANS) {
			r->ack = cb->tcp_gso_segs ? cb->tcp_gso_segs : 1;
			r->hdr.flags |= MG_F_TCP_SEGS;
		}
	}
	r->arg = arg;
	if (tcp_state)
		fill_snap(sk, &r->snap);
	submit(r);
}

MG_PROG("tp_btf/tcp_probe", tcp_rcv, struct sock *sk, const struct sk_buff *skb)
{
	struct tcp_skb_cb *cb = (struct tcp_skb_cb *)&skb->cb[0];
	__u32 arg = cb->tcp_flags;
	if (arg & 0x01) {
		/* A FIN: its header length sizes the data it carries (len - it),
		 * which nothing else may tell (no snapshot, no ACK recorded). */
		__u8 b = 0;
		bpf_probe_read_kernel(&b, 1, skb->head + skb->transport_header + 12);
		arg |= (__u32)((b >> 4) * 4) << 8;
	}
	tcp_event(sk, skb, MG_TCP_RCV, skb->len, arg, false);
	return 0;
}

MG_PROG("tp_btf/tcp_sendmsg_locked", tcp_sendmsg, const struct sock *sk,
	const struct msghdr *msg, const struct sk_buff *skb, int size_goal)
{
	/* skb may be NULL (a new one is about to be allocated). */
	__u32 len = skb ? skb->len : 0;
	tcp_event(sk, skb, MG_TCP_SENDMSG, len, size_goal, true);
	return 0;
}

MG_PROG("tp_btf/tcp_retransmit_skb", tcp_retrans, const struct sock *sk, const struct sk_buff *skb,
	int err)
{
	tcp_event(sk, skb, MG_TCP_RETRANS, BPF_CORE_READ(skb, len), err, false);
	return 0;
}

MG_PROG("tp_btf/tcp_send_reset", tcp_rst_sent, const struct sock *sk, const struct sk_buff *skb,
	int reason)
{
	/* Resets for packets that match no socket have sk == NULL. */
	if (!sk)
		return 0;
	tcp_event(sk, skb, MG_TCP_RST_SENT, skb ? BPF_CORE_READ(skb, len) : 0, reason, false);
	return 0;
}

MG_PROG("tp_btf/tcp_receive_reset", tcp_rst_rcvd, struct sock *sk)
{
	tcp_event(sk, NULL, MG_TCP_RST_RCVD, 0, 0, false);
	return 0;
}

#define STATE_BODY_LEN (sizeof(struct mg_tcp_state) - sizeof(struct mg_tcp_snap))

MG_PROG("tp_btf/inet_sock_set_state", tcp_state_change, const struct sock *sk, const int oldstate,
	const int newstate)
{
	if (BPF_CORE_READ(sk, sk_protocol) != IPPROTO_TCP)
		return 0;
	__u64 cookie = sk_cookie(sk);
	/* Only connect() and listen() are known to run in the socket user's
	 * context. Other changes may run in a softirq on whatever task is current
	 * (over veth and loopback, often the traced peer sending to this socket):
	 * they must not make the current task's filters choose the socket.
	 * Handshakes completing in softirq inherit tracing from the listener's flow. */
	bool task_ctx = oldstate == TCP_CLOSE && (newstate == TCP_SYN_SENT || newstate == TCP_LISTEN);
	bool traced = sock_traced(sk, cookie, task_ctx);
	struct sk_tuple t = {};
	read_sk_tuple(sk, &t);
	if (!traced && filter_tasks) {
		struct flow_key k = {};
		__builtin_memcpy(k.local, t.saddr, 16);
		k.lport = t.sport;
		k.protocol = IPPROTO_TCP;
		k.netns = BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum);
		if (!bound_flow(&k))
			return 0;
		mark_traced(sk, cookie);
		track_flow(&t, cookie, addr_of(sk));
		traced = true;
	}
	if (!traced)
		return 0;
	/* The tuple is complete from ESTABLISHED on: keep its flow, until the
	 * socket closes. */
	if ((filter_tasks || track_all_flows) && t.dport) {
		if (newstate == TCP_CLOSE)
			forget_flow(sk, cookie, &t);
		else
			track_flow(&t, cookie, addr_of(sk));
	}

	struct mg_tcp_state *r;
	if (tcp_state) {
		if (!RESERVE(r, sizeof(struct mg_tcp_state), MG_TCP_STATE))
			return 0;
	} else {
		if (!RESERVE(r, STATE_BODY_LEN, MG_TCP_STATE))
			return 0;
	}
	fill_hdr(&r->hdr, MG_TCP_STATE, tcp_state ? MG_F_TCP_STATE : 0);
	r->cookie = cookie;
	r->family = t.family;
	r->protocol = t.protocol;
	r->sport = t.sport;
	r->dport = t.dport;
	r->oldstate = oldstate;
	r->newstate = newstate;
	__builtin_memset(r->_pad0, 0, sizeof(r->_pad0));
	__builtin_memcpy(r->saddr, t.saddr, 16);
	__builtin_memcpy(r->daddr, t.daddr, 16);
	if (tcp_state)
		fill_snap(sk, &r->snap);
	submit(r);
	return 0;
}
