// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The same records from other hooks, for kernels that lack the preferred ones
 * (see the table in probes.rs, which picks one hook per kind at run time):
 *
 *   - app: fexit on inet_sendmsg / inet_recvmsg (and their IPv6 twins) where the
 *     sock_send_length / sock_recv_length tracepoints (6.3+) are missing;
 *   - tcp_sendmsg: fentry on tcp_sendmsg_locked where its tracepoint is missing
 *     (it fires once per call, the tracepoint once per skb filled: len is the
 *     bytes the call was given, arg 0);
 *   - tcp_retransmit_skb and tcp_send_reset with two arguments (before 6.13 and
 *     6.10 respectively): err and reason are recorded as 0;
 *   - ip: function probes at the points the netfilter hooks sit (netfilter BPF
 *     links are 6.4+): the return of __ip_local_out / __ip6_local_out (LOCAL_OUT:
 *     headers final, only packets the hook accepted), ip_output / ip6_output
 *     (POST_ROUTING), ip_rcv / ipv6_rcv (PRE_ROUTING; the batched ip_list_rcv
 *     path is not seen), ip_local_deliver / ip6_input (LOCAL_IN, before
 *     reassembly). Unlike netfilter links these see every network namespace.
 *
 * Included at the end of record.bpf.c: the helpers there are shared. Records
 * are byte for byte those of the preferred hooks.
 */

/* ---- app ------------------------------------------------------------------- */

/* The protocol's own sendmsg/recvmsg, reached through a function pointer (or
 * INDIRECT_CALL from another file), so never inlined: sock_sendmsg itself is
 * inlined into __sys_sendto and sock_write_iter on Debian's 6.1 and its fexit
 * sees only some calls. sock_send_length reports flags 0 for sends. */
static __always_inline int app_fn_event(struct socket *sock, int ret, int flags, __u16 kind)
{
	struct sock *sk = sock->sk;
	if (!sk)
		return 0;
	return app_event(sk, ret, flags, kind);
}

MG_PROG("fexit/inet_sendmsg", app_send_fexit4, struct socket *sock, struct msghdr *msg, size_t size,
	int ret)
{
	return app_fn_event(sock, ret, 0, MG_APP_SEND);
}

MG_PROG("fexit/inet6_sendmsg", app_send_fexit6, struct socket *sock, struct msghdr *msg,
	size_t size, int ret)
{
	return app_fn_event(sock, ret, 0, MG_APP_SEND);
}

MG_PROG("fexit/inet_recvmsg", app_recv_fexit4, struct socket *sock, struct msghdr *msg, size_t size,
	int flags, int ret)
{
	return app_fn_event(sock, ret, flags, MG_APP_RECV);
}

MG_PROG("fexit/inet6_recvmsg", app_recv_fexit6, struct socket *sock, struct msghdr *msg,
	size_t size, int flags, int ret)
{
	return app_fn_event(sock, ret, flags, MG_APP_RECV);
}

/* ---- tcp ------------------------------------------------------------------- */

MG_PROG("fentry/tcp_sendmsg_locked", tcp_sendmsg_fentry, struct sock *sk, struct msghdr *msg,
	size_t size)
{
	tcp_event(sk, NULL, MG_TCP_SENDMSG, size, 0, true);
	return 0;
}

MG_PROG("tp_btf/tcp_retransmit_skb", tcp_retrans_2arg, const struct sock *sk,
	const struct sk_buff *skb)
{
	tcp_event(sk, skb, MG_TCP_RETRANS, BPF_CORE_READ(skb, len), 0, false);
	return 0;
}

MG_PROG("tp_btf/tcp_send_reset", tcp_rst_sent_2arg, const struct sock *sk,
	const struct sk_buff *skb)
{
	if (!sk)
		return 0;
	tcp_event(sk, skb, MG_TCP_RST_SENT, skb ? BPF_CORE_READ(skb, len) : 0, 0, false);
	return 0;
}

/* ---- ip -------------------------------------------------------------------- */

/* The device of the skb's route (what netfilter calls `out` on the way out). */
static __always_inline struct net_device *dst_dev(const struct sk_buff *skb)
{
	unsigned long refdst = BPF_CORE_READ(skb, _skb_refdst);
	struct dst_entry *dst = (struct dst_entry *)(refdst & ~1UL);
	if (!dst)
		return NULL;
	return BPF_CORE_READ(dst, dev);
}

/* An ip_* record from a function probe; the same fields as ip_event's. */
static __always_inline void ip_fn_event(struct sk_buff *skb, struct net_device *dev, __u16 kind,
					bool rx, bool pf)
{
	struct pkt_info pi = {};
	__u16 nh = skb->network_header;
	if (nh == (__u16)~0U)
		return;
	parse_l3(skb->head + nh, &pi);
	if (!pi.ok)
		return;
	if (pf && pf_len && !pf_skb(skb, PF_AT_NH))
		return;
	__u64 sk;
	__u64 cookie = skb_cookie(skb, &sk, !rx);
	__u32 ns = dev ? BPF_CORE_READ(dev, nd_net.net, ns.inum) : 0;
	if (!ns && skb->sk)
		ns = BPF_CORE_READ(skb, sk, __sk_common.skc_net.net, ns.inum);
	if (!pkt_traced(cookie, sk, &pi, rx, ns))
		return;
	/* A socket's cookie is assigned at its first bpf_get_socket_cookie():
	 * on the way out, assign it now, so that this packet and its events in
	 * the layers below carry it even before the socket's first app event
	 * (a UDP socket's first datagram). */
	if (!cookie && !rx && skb->sk)
		cookie = sk_cookie(skb->sk);

	struct mg_ip *r;
	if (!RESERVE(r, sizeof(*r), kind))
		return;
	fill_hdr(&r->hdr, kind, 0);
	r->cookie = cookie;
	r->pkt_id = pkt_id(skb, kind == MG_IP_LOCAL_OUT	 ? PKT_BIRTH
				: kind == MG_IP_POST_ROUTING ? PKT_TX
				: kind == MG_IP_LOCAL_IN     ? PKT_END
							     : PKT_FOLLOW);
	r->ifindex = dev ? BPF_CORE_READ(dev, ifindex) : 0;
	r->tot_len = ip_len(skb, nh, &pi);
	ip_fill(r, &pi);
	submit(r);
}

/* LOCAL_OUT: __ip_local_out fills in the length and checksum, then runs the
 * hook; 1 means every hook accepted the packet (and it is still ours). */
PF_PROG("fexit/__ip_local_out", ip_local_out_fexit4, struct net *net, struct sock *sk,
	struct sk_buff *skb, int ret)
{
	if (ret == 1)
		ip_fn_event(skb, dst_dev(skb), MG_IP_LOCAL_OUT, false, pf);
	return 0;
}

PF_PROG("fexit/__ip6_local_out", ip_local_out_fexit6, struct net *net, struct sock *sk,
	struct sk_buff *skb, int ret)
{
	if (ret == 1)
		ip_fn_event(skb, dst_dev(skb), MG_IP_LOCAL_OUT, false, pf);
	return 0;
}

PF_PROG("fentry/ip_output", ip_post_routing_fentry4, struct net *net, struct sock *sk,
	struct sk_buff *skb)
{
	ip_fn_event(skb, dst_dev(skb), MG_IP_POST_ROUTING, false, pf);
	return 0;
}

PF_PROG("fentry/ip6_output", ip_post_routing_fentry6, struct net *net, struct sock *sk,
	struct sk_buff *skb)
{
	ip_fn_event(skb, dst_dev(skb), MG_IP_POST_ROUTING, false, pf);
	return 0;
}

PF_PROG("fentry/ip_rcv", ip_pre_routing_fentry4, struct sk_buff *skb, struct net_device *dev)
{
	ip_fn_event(skb, dev, MG_IP_PRE_ROUTING, true, pf);
	return 0;
}

PF_PROG("fentry/ipv6_rcv", ip_pre_routing_fentry6, struct sk_buff *skb, struct net_device *dev)
{
	ip_fn_event(skb, dev, MG_IP_PRE_ROUTING, true, pf);
	return 0;
}

PF_PROG("fentry/ip_local_deliver", ip_local_in_fentry4, struct sk_buff *skb)
{
	ip_fn_event(skb, BPF_CORE_READ(skb, dev), MG_IP_LOCAL_IN, true, pf);
	return 0;
}

PF_PROG("fentry/ip6_input", ip_local_in_fentry6, struct sk_buff *skb)
{
	ip_fn_event(skb, BPF_CORE_READ(skb, dev), MG_IP_LOCAL_IN, true, pf);
	return 0;
}
