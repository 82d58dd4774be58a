// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Layers qdisc, dev and drop: qdisc enqueue/dequeue, the device queue,
 * transmit and receive (with --snaplen, the frame's bytes), drops and the end
 * of a packet's identity at kfree_skb / consume_skb.
 */

/* ---- layers: qdisc, dev, drop -------------------------------------------- */

/* Common filter + identity for skb-based events. Where the filters needed
 * the packet's headers, `*pi` holds them and `*parsed` is set, so that a
 * caller that wants them too does not parse the packet a second time (each
 * parse is probe reads at run time, and a second inlined parse multiplied
 * the verifier's states: dev_start_xmit took 0.58 s to load with task
 * filters). */
static __always_inline bool skb_wanted(const struct sk_buff *skb, bool rx, __u64 *cookie, bool pf,
				       struct pkt_info *pi, bool *parsed)
{
	/* --netns: another namespace's packet leaves before its socket and
	 * headers are read (the tracepoints fire in every namespace). */
	__u32 ns = 0;
	if (netns_only) {
		ns = skb_netns(skb);
		if (!netns_wanted(ns)) {
			*cookie = 0;
			return false;
		}
	}
	__u64 sk;
	*cookie = skb_cookie(skb, &sk, !rx);
	if (pf && pf_len && !pf_skb(skb, rx ? PF_AT_DATA : PF_AT_NH))
		return false;
	if (!need_parse())
		return true;
	*parsed = true;
	if (rx)
		parse_skb_rx(skb, pi);
	else
		parse_skb_tx(skb, pi);
	if (!netns_only)
		ns = skb_netns(skb);
	if (!pi->ok || !(pi->frag_off & (IP_MF | IP_OFFSET)))
		return pkt_traced(*cookie, sk, pi, rx, ns);
	/* IP fragments: the first one is judged by its ports and vouches for
	 * the rest of its datagram, which carry none (its socket's own skb
	 * vouches too). */
	struct frag_key fk = {};
	frag_key_of(pi, &fk, rx, ns);
	if (pi->frag_off & IP_OFFSET)
		return bpf_map_lookup_elem(&frag_socks, &fk) != NULL ||
		       (*cookie && pkt_traced(*cookie, sk, pi, rx, ns));
	if (!pkt_traced(*cookie, sk, pi, rx, ns))
		return false;
	bpf_map_update_elem(&frag_socks, &fk, cookie, BPF_ANY);
	return true;
}

static __always_inline void qdisc_event(struct Qdisc *q, const struct sk_buff *skb, __u16 kind,
					bool pf)
{
	__u64 cookie;
	struct pkt_info pi = {};
	bool parsed = false;
	if (!skb)
		return;
	if (!skb_wanted(skb, false, &cookie, pf, &pi, &parsed))
		return;
	struct mg_qdisc *r;
	if (!RESERVE(r, sizeof(*r), kind))
		return;
	fill_hdr(&r->hdr, kind, 0);
	r->cookie = cookie;
	r->pkt_id = pkt_id(skb, PKT_TX);
	r->ifindex = BPF_CORE_READ(q, dev_queue, dev, ifindex);
	r->len = BPF_CORE_READ(skb, len);
	r->qlen = BPF_CORE_READ(q, q.qlen);
	r->handle = BPF_CORE_READ(q, handle);
	submit(r);
}

PF_PROG("tp_btf/qdisc_enqueue", qdisc_enq, struct Qdisc *q, const struct netdev_queue *txq,
	struct sk_buff *skb)
{
	qdisc_event(q, skb, MG_QDISC_ENQ, pf);
	return 0;
}

PF_PROG("tp_btf/qdisc_dequeue", qdisc_deq, struct Qdisc *q, const struct netdev_queue *txq,
	int packets, struct sk_buff *skb)
{
	qdisc_event(q, skb, MG_QDISC_DEQ, pf);
	return 0;
}

/* A TCP client's flow is complete only once connect() has chosen its port,
 * after the SYN_SENT state change: take it from its SYN, so that the SYN-ACK
 * is attributed when it arrives. */
static __always_inline void track_connecting(const struct sk_buff *skb)
{
	struct sock *s = mg_field(skb, struct sk_buff, sk);
	if (!s || s->__sk_common.skc_state != TCP_SYN_SENT)
		return;
	__u64 cookie = sk_key(s, s->__sk_common.skc_cookie.counter);
	if (!cookie)
		return;
	if (filter_tasks || tuple_filtered()) {
		__u8 *seen = bpf_map_lookup_elem(&socks, &cookie);
		if (!seen || !(*seen & SOCK_TRACED))
			return;
	}
	struct sk_tuple t = {};
	read_sk_tuple(s, &t);
	track_flow(&t, cookie, addr_of(s));
}

/* record --snaplen: the kernel's direct-map base (page_offset_base), found
 * once: 0 = not yet, 1 = not found (fragments are then not read).
 *
 * tp_btf programs cannot call bpf_skb_load_bytes, so a fragment's page is
 * turned into its address as page_address() does: its frame number from its
 * place in the vmemmap array, then that frame's place in the direct map. Both
 * bases are randomised in steps of 1 GiB (KASLR) and neither can be read here:
 * page_offset_base and vmemmap_base are data symbols that /proc/kallsyms and
 * BTF need not list (not on 6.18 without CONFIG_KALLSYMS_ALL). So:
 * - vmemmap_base is the page pointer rounded down to 1 GiB, as long as every
 *   frame number times sizeof(struct page) stays below 1 GiB: user space turns
 *   fragments off on hosts with RAM above 32 GiB (see recorder/frames.rs);
 * - page_offset_base is the 1 GiB step below a direct-map address (the skb's
 *   head) at which the page user space marked (frame `frag_pfn`) shows its mark. */
__u64 frag_pob = 0;

#define FRAG_GIB (1ULL << 30)
#define FRAG_PHYS_STEPS 32 /* RAM below 32 GiB */
#define FRAG_MAX 17        /* MAX_SKB_FRAGS */

/* The 16 bytes of skb_frag_t: struct bio_vec (bv_page, bv_len, bv_offset) on
 * 6.1, struct skb_frag (netmem, len, offset) since 6.8: the same layout. */
struct frag_raw {
	__u64 page; /* struct page *, or a netmem_ref whose bit 0 marks a net_iov */
	__u32 len;
	__u32 off;
};

static __always_inline __u64 frag_base(const void *direct)
{
	__u64 pob = frag_pob;
	if (pob)
		return pob;
	__u64 top = (__u64)direct & ~(FRAG_GIB - 1);
	pob = 1;
	for (int i = 0; i < FRAG_PHYS_STEPS; i++) {
		__u64 c = top - (__u64)i * FRAG_GIB;
		__u64 got[2] = {};
		if (bpf_probe_read_kernel(got, sizeof(got), (void *)(c + (frag_pfn << 12))))
			continue;
		if (got[0] == frag_mark[0] && got[1] == frag_mark[1]) {
			pob = c;
			break;
		}
	}
	frag_pob = pob;
	return pob;
}

/* Appends the bytes of the skb's page fragments after its linear part, up to
 * `want` in all; returns the bytes now in b->data. The skb's frag_list (GRO
 * on receive) is not read. */
static __always_inline __u32 frame_frags(const struct sk_buff *skb, struct frame_buf *b,
					 __u32 have, __u32 want)
{
	unsigned char *head = skb->head;
	struct skb_shared_info *sh = (void *)(head + skb->end);
	__u8 nr = 0;
	if (bpf_core_read(&nr, sizeof(nr), &sh->nr_frags) || !nr)
		return have;
	__u64 pob = frag_base(head);
	if (pob == 1)
		return have;
	__u64 page_size = bpf_core_type_size(struct page);
	for (int i = 0; i < FRAG_MAX; i++) {
		if (i >= nr || have >= want)
			break;
		struct frag_raw f;
		if (bpf_probe_read_kernel(&f, sizeof(f), (void *)&sh->frags[i]))
			break;
		if (f.page & 1)
			break;
		__u64 pfn = (f.page & (FRAG_GIB - 1)) / page_size;
		__u64 addr = pob + (pfn << 12) + f.off;
		__u32 take = f.len;
		if (take > want - have)
			take = want - have;
		if (take > MG_SNAPLEN_MAX)
			take = MG_SNAPLEN_MAX;
		__u32 at = have & (MG_SNAPLEN_MAX - 1);
		barrier_var(take);
		if (!take || bpf_probe_read_kernel(b->data + at, take, (void *)addr))
			break;
		have += take;
	}
	return have;
}

/* record --snaplen: the first `snaplen` bytes of the frame from its link
 * header, the skb's linear part then its page fragments; same time, packet id
 * and ifindex as the dev record `d` just written. */
static __always_inline void frame_event(const struct sk_buff *skb, const struct mg_dev *d, bool rx)
{
	__u32 slot = rx ? 1 : 0;
	struct frame_buf *b = bpf_map_lookup_elem(&frame_bufs, &slot);
	if (!b)
		return;
	unsigned char *head = skb->head;
	unsigned char *data = skb->data;
	__u32 linear = skb->len - skb->data_len;
	unsigned char *start = data;
	if (rx) {
		/* The link header is already pulled: start there when it is in reach. */
		__u16 mh = skb->mac_header;
		__u64 off = (__u64)data - (__u64)head;
		if (mh != (__u16)~0U && off > mh && off - mh <= 64) {
			start = head + mh;
			linear += off - mh;
		}
	}
	__u32 n = snaplen;
	if (n > d->len)
		n = d->len;
	if (n > linear)
		n = linear;
	if (n > MG_SNAPLEN_MAX)
		n = MG_SNAPLEN_MAX;
	__u32 want = snaplen;
	if (want > d->len)
		want = d->len;
	if (want > MG_SNAPLEN_MAX)
		want = MG_SNAPLEN_MAX;
	if (bpf_probe_read_kernel(b->data, n, start))
		n = 0;
	else if (n < want && n == linear && frag_pfn) {
		n = frame_frags(skb, b, n, want);
		/* n <= want <= MG_SNAPLEN_MAX; older verifiers (6.1) lose the
		 * bound through the loop and refuse the ring output's size. */
		barrier_var(n);
		n &= 2 * MG_SNAPLEN_MAX - 1;
	}
	b->f.hdr = d->hdr;
	b->f.hdr.kind = MG_FRAME;
	b->f.hdr.flags = 0;
	b->f.pkt_id = d->pkt_id;
	b->f.ifindex = d->ifindex;
	b->f.len = d->len;
	b->f.caplen = n;
	b->f.dev_kind = d->hdr.kind;
	b->f._pad0 = 0;
	struct mg_cpu_stats *st = stats();
	void *ring = my_ring();
	if (!st)
		return;
	if (ring)
		flush_lost(st, ring);
	__u64 size = sizeof(b->f) + n;
	if (size > sizeof(*b))
		return;
	__u64 queued = ring ? bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA) : 0;
	if (!ring || bpf_ringbuf_output(ring, b, size,
					queued >= wakeup_bytes ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP))
		count_lost(st, MG_FRAME);
}

static __always_inline void dev_event(const struct sk_buff *skb, __u16 kind,
				      const struct net_device *dev, __u32 len, int rc, bool rx,
				      bool read_skb, bool pf)
{
	__u32 ifindex = dev->ifindex;
	__u16 link_type = dev->type;
	__u64 cookie = 0;
	__u32 hflags = 0;
	struct pkt_info pi = {};
	bool parsed = false;
	if (read_skb && !skb_wanted(skb, rx, &cookie, pf, &pi, &parsed))
		return;
	if (read_skb && track_all_flows) {
		/* Forwarded through another namespace (a router; veth keeps the
		 * sender's socket on the skb): not its socket's packet there. */
		/* The namespaces compared by their struct net (one per
		 * namespace): the inode number is read only for a flow lookup. */
		const struct net_device *dv = mg_field(skb, struct sk_buff, dev);
		const struct net *dnet = dv ? dv->nd_net.net : NULL;
		struct sock *s = mg_field(skb, struct sk_buff, sk);
		if (s && dnet && s->__sk_common.skc_net.net != dnet) {
			cookie = 0;
			hflags = MG_F_OTHER_NETNS;
		}
		/* A packet sent without a socket cookie (an IPv6 SYN-ACK from its
		 * request socket, a reset): the socket of its flow, as on receive. */
		if (!cookie && !hflags) {
			if (!parsed)
				parse_skb_tx(skb, &pi);
			bool exact;
			struct flow_val fvb;
			__u32 ns = dnet ? dnet->ns.inum : 0;
			struct flow_val *fv = pi.ok ? flow_of(&pi, false, &exact, ns, &fvb) : NULL;
			if (fv) {
				cookie = fv->cookie;
			} else if (!s) {
				/* No socket and no flow here: forwarded (received
				 * on a device of this namespace, now sent on): not
				 * the socket's own transmission wherever it is. */
				__u64 a = addr_of(skb);
				struct pkt_slot *slot = pkt_slot(a);
				if (slot && slot->skb == a && (slot->flags & PKT_RECEIVED))
					hflags = MG_F_OTHER_NETNS;
			}
		}
	}
	__u64 id = pkt_id(skb, kind == MG_DEV_START_XMIT ? PKT_XMIT : kind == MG_DEV_QUEUE ? PKT_TX : PKT_FOLLOW);
	if (kind == MG_DEV_START_XMIT && track_all_flows)
		track_connecting(skb);
	struct mg_dev d, *r; /* d: every byte written below */
	if (snaplen && kind == MG_DEV_START_XMIT)
		r = &d;
	else if (!RESERVE(r, sizeof(*r), kind)) {
		return;
	}
	fill_hdr(&r->hdr, kind, hflags);
	r->cookie = cookie;
	r->pkt_id = id;
	r->ifindex = ifindex;
	r->len = len;
	r->rc = rc;
	r->ethertype = read_skb ? bpf_ntohs(skb->protocol) : 0;
	r->link_type = link_type;
	if (snaplen && kind == MG_DEV_START_XMIT) {
		send_direct(r, sizeof(*r), kind);
		frame_event(skb, r, false);
		return;
	}
	submit(r);
}

PF_PROG("tp_btf/net_dev_queue", dev_queue, struct sk_buff *skb)
{
	dev_event(skb, MG_DEV_QUEUE, mg_field(skb, struct sk_buff, dev), skb->len, 0,
		  false, true, pf);
	return 0;
}

PF_PROG("tp_btf/net_dev_start_xmit", dev_start_xmit, const struct sk_buff *skb,
	const struct net_device *dev)
{
	dev_event(skb, MG_DEV_START_XMIT, dev, skb->len, 0,
		  false, true, pf);
	return 0;
}

/* After the driver took the skb it may already be freed: use only the
 * tracepoint's own arguments, and the packet id remembered by address. */
PF_PROG("tp_btf/net_dev_xmit", dev_xmit, struct sk_buff *skb, int rc, struct net_device *dev,
	unsigned int len)
{
	if (need_parse()) {
		/* Only for a packet recorded at net_dev_start_xmit (its address may
		 * since be another skb's: it is not read). */
		__u64 a = addr_of(skb);
		struct pkt_slot *slot = pkt_slot(a);
		if (!slot || slot->skb != a || !(slot->flags & PKT_IN_DRIVER))
			return 0;
		slot->flags &= ~PKT_IN_DRIVER;
	}
	dev_event(skb, MG_DEV_XMIT, dev, len, rc, false, false, pf);
	return 0;
}

/* A TCP segment received by a socket that is not in ESTABLISHED (where
 * tcp_probe does not fire): recorded as tcp_rcv from its TCP header, with the
 * same fields tcp_probe gives (len: TCP header + payload). */
static __always_inline void tcp_rx_other_state(const struct sk_buff *skb, const struct flow_val *fv,
					       const struct pkt_info *pi, __u32 l3len, __u64 id)
{
	if (!fv->sk || !fv->cookie)
		return;
	/* Only segments that carry sequence space: data, or a FIN. (Pure ACKs
	 * in the closing states move no bytes.) Checked first: it needs no
	 * read of the socket. */
	__u32 len = l3len > pi->l4_off ? l3len - pi->l4_off : 0;
	if (len <= pi->doff && !(pi->tcp_flags & 0x01))
		return;
	const struct sock *sk = (const struct sock *)fv->sk;
	__u64 cookie;
	__u8 st;
	if (bpf_ksym_exists(bpf_rdonly_cast)) {
		/* Direct loads (6.2+): no helper call per received segment. */
		const struct sock *s = bpf_core_cast(sk, struct sock);
		cookie = s->__sk_common.skc_cookie.counter;
		st = s->__sk_common.skc_state;
	} else {
		/* 6.1 has no bpf_rdonly_cast: probe reads. */
		cookie = BPF_CORE_READ(sk, __sk_common.skc_cookie.counter);
		st = BPF_CORE_READ(sk, __sk_common.skc_state);
	}
	/* The socket may have been freed since: its cookie tells. */
	cookie = sk_key(sk, cookie);
	if (cookie != fv->cookie)
		return;
	if (st == TCP_ESTABLISHED || st == TCP_LISTEN || st == TCP_NEW_SYN_RECV || st == TCP_CLOSE ||
	    st == TCP_TIME_WAIT)
		return;
	struct mg_tcp *r = tcp_reserve(MG_TCP_RCV);
	if (!r)
		return;
	r->cookie = fv->cookie;
	r->pkt_id = id;
	r->len = len;
	r->seq = pi->seq;
	r->ack = pi->ack;
	r->arg = pi->tcp_flags;
	if (pi->tcp_flags & 0x01)
		r->arg |= (__u32)pi->doff << 8;
	if (tcp_state) {
		if (bpf_ksym_exists(bpf_rdonly_cast))
			fill_snap_tp(bpf_core_cast(sk, struct tcp_sock), &r->snap);
		else
			fill_snap_probe(sk, &r->snap);
	}
	submit(r);
}

/*
 * A packet received from a driver. Its socket is found by its flow (the skb
 * has none yet, or still the sender's over veth and loopback), so that it is
 * attributed wherever the socket's network namespace is; later IP fragments,
 * which carry no ports, by their datagram's first fragment.
 */
static __always_inline void rx_event(struct sk_buff *skb, bool rec_dev, bool rec_tcp, bool pf)
{
	__u32 ns = dev_netns(mg_field(skb, struct sk_buff, dev));
	/* --netns: another namespace's packet leaves before it is parsed. */
	if (!netns_wanted(ns))
		return;
	if (pf && pf_len && !pf_skb(skb, PF_AT_DATA))
		return;
	__u64 cookie = 0;
	struct pkt_info pi = {};
	parse_skb_rx(skb, &pi);
	struct flow_val *fv = NULL, fvb;
	bool exact = false, traced;
	/* A later fragment follows its datagram's first (frag_socks). One call
	 * of pkt_traced for every packet: 6.1's verifier gives up (1M
	 * instructions) on this program with two inlined copies of it. */
	bool later_frag = pi.ok && (pi.frag_off & IP_OFFSET);
	__u64 *frag_cookie = NULL;
	if (later_frag) {
		struct frag_key fk = {};
		frag_key_of(&pi, &fk, true, ns);
		frag_cookie = bpf_map_lookup_elem(&frag_socks, &fk);
	}
	if (frag_cookie) {
		cookie = *frag_cookie;
		traced = true;
	} else if (need_parse()) {
		/* The skb's own socket matters only to the filters; for a later
		 * fragment whose first was not seen (yet) the sender's socket,
		 * still on the skb over veth and loopback, may vouch. */
		__u64 sk;
		__u64 skb_ck = skb_cookie(skb, &sk, false);
		traced = (!later_frag || skb_ck) && pkt_traced(skb_ck, sk, &pi, true, ns);
	} else {
		traced = true;
	}
	if (traced && pi.ok && !later_frag) {
		fv = flow_of(&pi, true, &exact, ns, &fvb);
		if (fv)
			cookie = fv->cookie;
		/* A first fragment vouches for the rest of its datagram:
		 * whenever it was recorded under a filter (traced by the
		 * sender's socket, its receiver's unknown: cookie 0), and
		 * whenever its socket is known. */
		if ((pi.frag_off & IP_MF) && (cookie || need_parse())) {
			struct frag_key fk = {};
			frag_key_of(&pi, &fk, true, ns);
			bpf_map_update_elem(&frag_socks, &fk, &cookie, BPF_ANY);
		}
	}
	if (!traced)
		return;
	__u64 id = pkt_id(skb, PKT_RECV);
	struct mg_dev d, *r; /* d: every byte written below */
	bool frame = false;
	if (rec_dev) {
		bool ok = true;
		if (snaplen)
			r = &d;
		else
			ok = RESERVE(r, sizeof(*r), MG_DEV_RX);
		if (ok) {
			fill_hdr(&r->hdr, MG_DEV_RX, 0);
			r->cookie = cookie;
			r->pkt_id = id;
			r->ifindex = mg_field(skb, struct sk_buff, dev)->ifindex;
			/* The driver's frame, as on the transmit side and in a
			 * capture: the link header is already pulled here. */
			__u32 len = skb->len;
			__u16 mh = skb->mac_header;
			__u64 data_off = (__u64)skb->data - (__u64)skb->head;
			if (mh != (__u16)~0U && data_off > mh && data_off - mh <= 64)
				len += data_off - mh;
			r->len = len;
			r->rc = 0;
			r->ethertype = bpf_ntohs(skb->protocol);
			r->link_type = mg_field(skb, struct sk_buff, dev)->type;
			if (snaplen) {
				send_direct(r, sizeof(*r), MG_DEV_RX);
				frame = true;
			} else {
				submit(r);
			}
		}
	}
	if (rec_tcp && fv && exact && pi.protocol == IPPROTO_TCP) {
		__u32 l3len = pi.tot_len ? pi.tot_len : skb->len;
		tcp_rx_other_state(skb, fv, &pi, l3len, id);
	}
	/* Last: 6.1's verifier cannot follow the frame copy's states through the
	 * batch code of the TCP record above (1M instructions). */
	if (frame)
		frame_event(skb, &d, true);
}

PF_PROG("tp_btf/netif_receive_skb", dev_rx, struct sk_buff *skb)
{
	rx_event(skb, true, tcp_rx_other, pf);
	return 0;
}

/* Loaded with the tcp layer when the dev layer is off: the same look at
 * received TCP segments, recording only those tcp_probe misses. */
PF_PROG("tp_btf/netif_receive_skb", tcp_rx_seg, struct sk_buff *skb)
{
	if (skb->protocol != bpf_htons(ETH_P_IP) && skb->protocol != bpf_htons(ETH_P_IPV6))
		return 0;
	rx_event(skb, false, true, pf);
	return 0;
}

static __always_inline void forget_pkt(const struct sk_buff *skb)
{
	__u64 a = addr_of(skb);
	struct pkt_slot *slot = pkt_slot(a);
	if (slot && slot->skb == a)
		slot->skb = 0;
}

static __always_inline void drop_event(struct sk_buff *skb, void *location, __u32 reason, bool pf)
{
	__u64 cookie;
	struct pkt_info pi = {};
	bool parsed = false;
	if (skb_wanted(skb, false, &cookie, pf, &pi, &parsed)) {
		struct mg_drop *r;
		if (RESERVE(r, sizeof(*r), MG_DROP)) {
			fill_hdr(&r->hdr, MG_DROP, 0);
			r->cookie = cookie;
			/* A packet made on this host (no input interface) is on
			 * its way out: one a rule drops at LOCAL_OUT, before the
			 * ip layer's last-priority hook gave it its id, must not
			 * take the id of the packet its reused sk_buff held before
			 * (delivered here: nft_loss_live found the receiver's
			 * drops counting two of the sender's). */
			r->pkt_id = pkt_id(skb, BPF_CORE_READ(skb, skb_iif) ? PKT_FOLLOW : PKT_TX);
			r->location = (__u64)location;
			r->ifindex = BPF_CORE_READ(skb, dev, ifindex);
			r->reason = reason;
			r->len = BPF_CORE_READ(skb, len);
			r->ethertype = bpf_ntohs(BPF_CORE_READ(skb, protocol));
			r->_pad0 = 0;
			submit(r);
		}
	}
	forget_pkt(skb);
}

PF_PROG("tp_btf/kfree_skb", drop_kfree_skb, struct sk_buff *skb, void *location,
	enum skb_drop_reason reason)
{
	drop_event(skb, location, reason, pf);
	return 0;
}

/* kfree_skb before 5.17: no drop reason (recorded as 0). */
PF_PROG("tp_btf/kfree_skb", drop_kfree_skb_2arg, struct sk_buff *skb, void *location)
{
	drop_event(skb, location, 0, pf);
	return 0;
}

/* Loaded with any packet layer, recording nothing: ends a packet's identity. */
MG_PROG("tp_btf/kfree_skb", pkt_free, struct sk_buff *skb)
{
	forget_pkt(skb);
	return 0;
}

MG_PROG("tp_btf/consume_skb", pkt_consume, struct sk_buff *skb)
{
	forget_pkt(skb);
	return 0;
}
