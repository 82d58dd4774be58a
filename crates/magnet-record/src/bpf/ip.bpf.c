// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Layer ip: the netfilter hooks LOCAL_OUT, POST_ROUTING, PRE_ROUTING and
 * LOCAL_IN (6.4+; hooks_fn.bpf.c has the function probes for older kernels).
 */

/* ---- layer: ip (netfilter hooks) ----------------------------------------- */

static __always_inline int ip_event(struct bpf_nf_ctx *ctx, __u16 kind, bool rx)
{
	struct sk_buff *skb = ctx->skb;
	const struct nf_hook_state *st = mg_ro(ctx->state, struct nf_hook_state);
	struct pkt_info pi = {};
	__u16 nh = skb->network_header;
	parse_l3(skb->head + nh, &pi);
	if (!pi.ok)
		return NF_ACCEPT;
	if (pf_len && !pf_skb(skb, PF_AT_NH))
		return NF_ACCEPT;
	__u64 sk;
	__u64 cookie = skb_cookie(skb, &sk, !rx);
	__u32 ns = st->net->ns.inum;
	/* IP fragments (IPv6 passes LOCAL_IN before reassembly, both families
	 * PRE_ROUTING): the later ones have no ports, their datagram's first
	 * fragment names their socket (frag_socks, left by dev_rx or here). */
	struct frag_key fk = {};
	__u64 *fc = NULL;
	if (pi.frag_off & (IP_MF | IP_OFFSET)) {
		frag_key_of(&pi, &fk, rx, ns);
		if (pi.frag_off & IP_OFFSET)
			fc = bpf_map_lookup_elem(&frag_socks, &fk);
	}
	if (!fc && !pkt_traced(cookie, sk, &pi, rx, ns))
		return NF_ACCEPT;
	/* Received packets have no socket yet, and some sent ones none with a
	 * cookie: name the socket of the flow. */
	if ((rx || !cookie) && track_all_flows) {
		if (fc) {
			cookie = *fc;
		} else if (!(pi.frag_off & IP_OFFSET)) {
			bool exact;
			struct flow_val fvb;
			struct flow_val *fv = flow_of(&pi, rx, &exact, ns, &fvb);
			cookie = fv ? fv->cookie : 0;
		}
	}
	if ((pi.frag_off & (IP_MF | IP_OFFSET)) == IP_MF && (cookie || need_parse()))
		bpf_map_update_elem(&frag_socks, &fk, &cookie, BPF_ANY);

	struct mg_ip *r;
	if (!RESERVE(r, sizeof(*r), kind))
		return NF_ACCEPT;
	fill_hdr(&r->hdr, kind, 0);
	r->cookie = cookie;
	r->pkt_id = pkt_id(skb, kind == MG_IP_LOCAL_OUT	 ? PKT_BIRTH
				: kind == MG_IP_POST_ROUTING ? PKT_TX
				: kind == MG_IP_LOCAL_IN     ? PKT_END
							     : PKT_FOLLOW);
	struct net_device *dev = rx ? st->in : st->out;
	r->ifindex = dev ? dev->ifindex : 0;
	r->tot_len = ip_len(skb, nh, &pi);
	ip_fill(r, &pi);
	submit(r);
	return NF_ACCEPT;
}

MG_CTX_PROG("netfilter", ip_local_out, NF_ACCEPT, struct bpf_nf_ctx *ctx)
{
	return ip_event(ctx, MG_IP_LOCAL_OUT, false);
}

MG_CTX_PROG("netfilter", ip_post_routing, NF_ACCEPT, struct bpf_nf_ctx *ctx)
{
	return ip_event(ctx, MG_IP_POST_ROUTING, false);
}

MG_CTX_PROG("netfilter", ip_pre_routing, NF_ACCEPT, struct bpf_nf_ctx *ctx)
{
	return ip_event(ctx, MG_IP_PRE_ROUTING, true);
}

MG_CTX_PROG("netfilter", ip_local_in, NF_ACCEPT, struct bpf_nf_ctx *ctx)
{
	return ip_event(ctx, MG_IP_LOCAL_IN, true);
}
