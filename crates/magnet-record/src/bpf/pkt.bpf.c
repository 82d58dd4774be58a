// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Packets as the tracing programs see them (struct sk_buff): their IP and
 * TCP/UDP headers, the packet id that follows one packet across the layers,
 * the flow a received packet belongs to, and whether a packet is traced.
 * Included by record.bpf.c after sock.bpf.c.
 */

/* ---- packets -------------------------------------------------------------- */

struct pkt_info {
	__u8 saddr[16];
	__u8 daddr[16];
	__u16 sport;
	__u16 dport;
	__u32 tot_len;  /* from the header; 0 when it does not say (see ip_len()) */
	__u16 ip_id;
	__u16 frag_off;
	__u8 version;
	__u8 tos;
	__u8 ttl;
	__u8 protocol;
	__u8 tcp_flags;
	__u8 doff;      /* TCP header length in bytes */
	__u16 l4_off;   /* bytes from the IP header to the transport header */
	__u32 seq;
	__u32 ack;
	bool ok;
};

/* Bytes read at L3 in one go: an IPv6 header or an IPv4 header with up to 24
 * bytes of options, plus the first 16 bytes of TCP/UDP. One probe read
 * instead of three (version byte, IP header, transport header): each read is
 * a helper call, and this runs for every packet event. */
#define L3_PEEK 80

static __always_inline void parse_l4(const __u8 *l4, struct pkt_info *pi)
{
	if (pi->protocol == IPPROTO_TCP) {
		const struct tcphdr *th = (const struct tcphdr *)l4;
		pi->sport = bpf_ntohs(th->source);
		pi->dport = bpf_ntohs(th->dest);
		pi->seq = bpf_ntohl(th->seq);
		pi->ack = bpf_ntohl(th->ack_seq);
		pi->tcp_flags = l4[13];
		pi->doff = (l4[12] >> 4) * 4;
	} else if (pi->protocol == IPPROTO_UDP) {
		const struct udphdr *uh = (const struct udphdr *)l4;
		pi->sport = bpf_ntohs(uh->source);
		pi->dport = bpf_ntohs(uh->dest);
	}
}

/* IPv6 extension headers (hop-by-hop, routing, destination options,
 * fragment) from `l3 + 40` to the transport header, whose first bytes are
 * parsed. Rare: probe reads. */
static __always_inline void parse_v6_ext(const void *l3, struct pkt_info *pi)
{
	__u8 nh = pi->protocol;
	__u32 off = 40;
#pragma unroll
	for (int i = 0; i < 4; i++) {
		__u8 eh[8];
		if (nh != IPPROTO_HOPOPTS && nh != IPPROTO_ROUTING && nh != IPPROTO_DSTOPTS &&
		    nh != IPPROTO_FRAGMENT)
			break;
		if (bpf_probe_read_kernel(eh, sizeof(eh), l3 + off))
			return;
		if (nh == IPPROTO_FRAGMENT) {
			/* Kept in IPv4's encoding: offset in 8-byte units, MF. */
			__u16 fo = ((__u16)eh[2] << 8) | eh[3];
			pi->frag_off = (fo >> 3) | ((fo & 1) ? IP_MF : 0);
			pi->ip_id = ((__u16)eh[6] << 8) | eh[7];
			off += 8;
		} else {
			off += ((__u32)eh[1] + 1) * 8;
		}
		nh = eh[0];
	}
	pi->protocol = nh;
	pi->l4_off = off;
	if (pi->frag_off & IP_OFFSET)
		return;
	if (nh == IPPROTO_TCP || nh == IPPROTO_UDP) {
		__u8 l4[16];
		if (off < 512 && !bpf_probe_read_kernel(l4, sizeof(l4), l3 + off))
			parse_l4(l4, pi);
	}
}

/* The ports and TCP fields at `l4` by direct loads (see parse_l3_cast). TCP
 * and UDP have their ports at the same offsets. */
static __always_inline void parse_l4_cast(const void *l4, struct pkt_info *pi)
{
	const struct tcphdr *th = bpf_core_cast(l4, struct tcphdr);
	pi->sport = bpf_ntohs(th->source);
	pi->dport = bpf_ntohs(th->dest);
	if (pi->protocol != IPPROTO_TCP)
		return;
	pi->seq = bpf_ntohl(th->seq);
	pi->ack = bpf_ntohl(th->ack_seq);
	/* Bytes 12 and 13 (data offset, flags) are bitfields: one load. */
	__u16 w = *(const __u16 *)((const __u8 *)th + 12);
	pi->doff = ((w & 0xff) >> 4) * 4;
	pi->tcp_flags = w >> 8;
}

/* parse_l3 on kernels with bpf_rdonly_cast (6.2+): the header fields by
 * direct loads (each an inlined load that yields 0 on a fault), not one
 * 80-byte bpf_probe_read_kernel into the stack: the helper call and the
 * copy were most of dev_rx's work before its reservation. */
static __always_inline void parse_l3_cast(const void *l3, struct pkt_info *pi)
{
	const struct iphdr *ip = bpf_core_cast(l3, struct iphdr);
	__u8 b0 = *(const __u8 *)ip; /* version and header length: bitfields */
	__u8 version = b0 >> 4;
	if (version == 4) {
		pi->version = 4;
		pi->tos = ip->tos;
		pi->ttl = ip->ttl;
		pi->protocol = ip->protocol;
		pi->tot_len = bpf_ntohs(ip->tot_len);
		pi->ip_id = bpf_ntohs(ip->id);
		pi->frag_off = bpf_ntohs(ip->frag_off);
		v4_mapped(pi->saddr, ip->saddr);
		v4_mapped(pi->daddr, ip->daddr);
		pi->ok = true;
		__u32 ihl = (b0 & 0xf) * 4;
		pi->l4_off = ihl;
		if (pi->frag_off & IP_OFFSET) /* not the first fragment: no ports */
			return;
		if (ihl >= 20 && (pi->protocol == IPPROTO_TCP || pi->protocol == IPPROTO_UDP))
			parse_l4_cast(l3 + ihl, pi);
	} else if (version == 6) {
		const struct ipv6hdr *ip6 = bpf_core_cast(l3, struct ipv6hdr);
		pi->version = 6;
		__u8 fl0 = ip6->flow_lbl[0];
		pi->tos = ((b0 & 0xf) << 4) | (fl0 >> 4);
		pi->ttl = ip6->hop_limit;
		pi->protocol = ip6->nexthdr;
		__u16 plen = bpf_ntohs(ip6->payload_len);
		/* 0 for a jumbo payload (its length is in a hop-by-hop option) */
		pi->tot_len = plen ? (__u32)plen + 40 : 0;
#pragma unroll
		for (int i = 0; i < 4; i++) {
			__u32 sw = ip6->saddr.in6_u.u6_addr32[i];
			__u32 dw = ip6->daddr.in6_u.u6_addr32[i];
			__builtin_memcpy(pi->saddr + 4 * i, &sw, 4);
			__builtin_memcpy(pi->daddr + 4 * i, &dw, 4);
		}
		pi->ok = true;
		pi->l4_off = 40;
		if (pi->protocol == IPPROTO_TCP || pi->protocol == IPPROTO_UDP)
			parse_l4_cast(l3 + 40, pi);
		else
			parse_v6_ext(l3, pi);
	}
}

/* Parse IPv4/IPv6 and the first bytes of TCP/UDP at `l3`. */
static __always_inline void parse_l3(const void *l3, struct pkt_info *pi)
{
	if (bpf_ksym_exists(bpf_rdonly_cast)) {
		parse_l3_cast(l3, pi);
		return;
	}
	/* 6.1: no bpf_rdonly_cast. One probe read instead of three (version
	 * byte, IP header, transport header): each read is a helper call. */
	__u8 buf[L3_PEEK];
	/* A short packet at the very end of its buffer could make the long read
	 * fault: fall back to the 40 bytes every IP packet with ports has. */
	if (bpf_probe_read_kernel(buf, sizeof(buf), l3) && bpf_probe_read_kernel(buf, 40, l3))
		return;
	__u8 version = buf[0] >> 4;
	if (version == 4) {
		const struct iphdr *ip = (const struct iphdr *)buf;
		pi->version = 4;
		pi->tos = ip->tos;
		pi->ttl = ip->ttl;
		pi->protocol = ip->protocol;
		pi->tot_len = bpf_ntohs(ip->tot_len);
		pi->ip_id = bpf_ntohs(ip->id);
		pi->frag_off = bpf_ntohs(ip->frag_off);
		v4_mapped(pi->saddr, ip->saddr);
		v4_mapped(pi->daddr, ip->daddr);
		pi->ok = true;
		__u32 ihl = (buf[0] & 0xf) * 4;
		pi->l4_off = ihl;
		if (pi->frag_off & IP_OFFSET) /* not the first fragment: no ports */
			return;
		if (ihl == 20)
			parse_l4(buf + 20, pi);
		else if (ihl >= 24 && ihl <= L3_PEEK - 20)
			parse_l4(buf + (ihl & 0x3f), pi);
	} else if (version == 6) {
		const struct ipv6hdr *ip6 = (const struct ipv6hdr *)buf;
		pi->version = 6;
		pi->tos = (ip6->priority << 4) | (ip6->flow_lbl[0] >> 4);
		pi->ttl = ip6->hop_limit;
		pi->protocol = ip6->nexthdr;
		__u16 plen = bpf_ntohs(ip6->payload_len);
		/* 0 for a jumbo payload (its length is in a hop-by-hop option) */
		pi->tot_len = plen ? (__u32)plen + 40 : 0;
		__builtin_memcpy(pi->saddr, &ip6->saddr, 16);
		__builtin_memcpy(pi->daddr, &ip6->daddr, 16);
		pi->ok = true;
		pi->l4_off = 40;
		if (pi->protocol == IPPROTO_TCP || pi->protocol == IPPROTO_UDP) {
			parse_l4(buf + 40, pi);
			return;
		}
		parse_v6_ext(l3, pi);
	}
}

/* The IP length of a packet whose network header is at `nh` in its skb: the
 * header's own length when it has one, else what the skb holds from there on
 * (GSO packets over 64 KiB: IPv4 tot_len 0, IPv6 jumbo payload_len 0). */
static __always_inline __u32 ip_len(const struct sk_buff *skb, __u16 nh, const struct pkt_info *pi)
{
	if (pi->tot_len)
		return pi->tot_len;
	__u64 data_off = (__u64)skb->data - (__u64)skb->head;
	__s64 l = (__s64)skb->len + (__s64)data_off - (__s64)nh;
	return l > 0 ? (__u32)l : 0;
}

/* The header fields of an IP record, from the parsed packet (shared by the
 * netfilter programs and their function-probe twins in hooks_fn.bpf.c). */
static __always_inline void ip_fill(struct mg_ip *r, const struct pkt_info *pi)
{
	r->ip_id = pi->ip_id;
	r->frag_off = pi->frag_off;
	r->version = pi->version;
	r->tos = pi->tos;
	r->ttl = pi->ttl;
	r->protocol = pi->protocol;
	r->sport = pi->sport;
	r->dport = pi->dport;
	r->tcp_flags = pi->tcp_flags;
	r->_pad0 = 0;
	r->_pad1 = 0;
	r->seq = pi->seq;
	r->ack = pi->ack;
	__builtin_memcpy(r->saddr, pi->saddr, 16);
	__builtin_memcpy(r->daddr, pi->daddr, 16);
}

/* IP header of an skb on the transmit path (network_header is set). */
static __always_inline void parse_skb_tx(const struct sk_buff *skb, struct pkt_info *pi)
{
	__u16 nh = skb->network_header;
	if (nh == (__u16)~0U)
		return;
	parse_l3(skb->head + nh, pi);
}

/* On receive before the stack has looked at it, data points at L3. */
static __always_inline void parse_skb_rx(const struct sk_buff *skb, struct pkt_info *pi)
{
	__u16 proto = bpf_ntohs(skb->protocol);
	if (proto != ETH_P_IP && proto != ETH_P_IPV6)
		return;
	parse_l3(skb->data, pi);
}


static __always_inline struct pkt_slot *pkt_slot(__u64 a)
{
	/* skbs are 256-byte slab objects: drop the low bits, fold in high ones
	 * (neighbouring objects never share a slot). A TCP
	 * skb and its fast clone are one 512-byte object (skbuff_fclone_cache),
	 * the clone sizeof(struct sk_buff) (224-232) bytes in: without its low
	 * byte, moved to bits 10-17, the clone shared the skb's slot, and the
	 * write-queue skb's sighting at tcp_retransmit_skb (after the clone was
	 * sent, before loopback or veth received it) evicted the clone, whose
	 * receive took a second id. */
	__u32 i = ((a >> 8) ^ (a >> 26) ^ (a << 10)) & (PKT_SLOTS - 1);
	return bpf_map_lookup_elem(&pkt_ids, &i);
}

static __always_inline __u64 pkt_id(const struct sk_buff *skb, enum pkt_point at)
{
	__u64 a = addr_of(skb);
	struct pkt_slot *slot = pkt_slot(a);
	if (!slot)
		return 0;
	/* A char pointer loaded from a BTF struct is a plain number already. */
	__u64 head = (__u64)skb->head;
	/* On the transmit path, a packet whose journey ended, or that was
	 * received and now belongs to a local socket, is a new packet in a
	 * reused sk_buff and buffer: TCP frees received segments (coalesced ones
	 * too) without a tracepoint, and its next ACK often gets the same memory
	 * back. (A forwarded packet has no socket and keeps its id.) */
	/* A packet is received once, and sent once, per hop: seen received
	 * again without a transmission between (or sent again without a
	 * reception), the sk_buff holds another packet now, whose earlier
	 * points were not recorded (an untraced peer's transmit). */
	bool tx = at == PKT_TX || at == PKT_XMIT;
	if (slot->skb == a && slot->head == head && at != PKT_BIRTH &&
	    !(tx && ((slot->flags & PKT_DELIVERED) ||
		     ((slot->flags & PKT_RECEIVED) && mg_field(skb, struct sk_buff, sk)))) &&
	    !(at == PKT_RECV && (slot->flags & PKT_RECEIVED)) &&
	    !(at == PKT_XMIT && (slot->flags & PKT_SENT))) {
		if (at == PKT_END)
			slot->flags |= PKT_DELIVERED;
		if (at == PKT_RECV)
			slot->flags = (slot->flags | PKT_RECEIVED) & ~PKT_SENT;
		if (at == PKT_XMIT)
			slot->flags = (slot->flags | PKT_SENT | PKT_IN_DRIVER) & ~PKT_RECEIVED;
		return slot->id;
	}
	__u32 zero = 0;
	__u64 *seq = bpf_map_lookup_elem(&pkt_seq, &zero);
	if (!seq)
		return 0;
	/* CPU in the top bits makes ids unique without a shared counter. */
	__u64 v = ((__u64)bpf_get_smp_processor_id() << 48) | ++*seq;
	slot->skb = a;
	slot->head = head;
	slot->id = v;
	slot->flags = at == PKT_END ? PKT_DELIVERED : at == PKT_RECV ? PKT_RECEIVED :
		      at == PKT_XMIT ? PKT_SENT | PKT_IN_DRIVER : 0;
	return v;
}

/* Room for request_listener's flow: its callers leave it no stack. */
struct req_flow {
	struct sk_tuple t;
	struct flow_key k;
	struct flow_val v;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct req_flow);
} req_flows SEC(".maps");

/* A SYN-ACK leaves from the request socket the kernel made for its SYN
 * (`req`), which names the listener that took the SYN (rsk_listener): among
 * listeners that share a port (SO_REUSEPORT) the one the kernel chose, where
 * the flow table holds one socket per port. The SYN-ACK is that listener's,
 * and so is the handshake ACK to come: the connection's flow names the
 * listener until the new socket takes it over (tcp_state_change). Returns the
 * listener's key; 0 when it is not traced, and the SYN-ACK goes by its flow as
 * before. Its locals in a map: the programs that inline skb_cookie have no
 * stack left (and no room for a subprogram's frame). */
static __always_inline __u64 request_listener(const struct sock *req, __u64 *sk_out)
{
	__u32 zero = 0;
	struct req_flow *f = bpf_map_lookup_elem(&req_flows, &zero);
	if (!f || !req || !sk_out)
		return 0;
	/* rsk_listener: the request socket's __req_common.skc_listener */
	f->v.sk = (__u64)BPF_CORE_READ(req, __sk_common.skc_listener);
	if (!f->v.sk)
		return 0;
	const struct sock *l = (const struct sock *)f->v.sk;
	f->v.cookie = sk_key(l, BPF_CORE_READ(l, __sk_common.skc_cookie.counter));
	if (!f->v.cookie)
		return 0;
	if (filter_tasks || tuple_filtered()) {
		__u8 *seen = bpf_map_lookup_elem(&socks, &f->v.cookie);
		if (!seen || !(*seen & SOCK_TRACED))
			return 0;
		*sk_out = f->v.sk;
	} else {
		*sk_out = 1;
	}
	if (filter_tasks || track_all_flows) {
		f->t.family = BPF_CORE_READ(req, __sk_common.skc_family);
		f->t.protocol = IPPROTO_TCP;
		mg_sk_ends(req, &f->t, f->t.family == AF_INET6);
		__builtin_memset(&f->k, 0, sizeof(f->k));
		tuple_flow_key(&f->t, &f->k);
		f->v.netns = BPF_CORE_READ(l, __sk_common.skc_net.net, ns.inum);
		f->v.closed = 0;
		f->k.netns = f->v.netns;
		if (f->k.rport)
			flow_put(&f->k, &f->v);
	}
	return f->v.cookie;
}

/* The skb's socket and its cookie (0 when it has none or none was assigned).
 * `tx`: a packet on its way out, whose request socket (a SYN-ACK's) stands
 * for its listener. */
static __always_inline __u64 skb_cookie(const struct sk_buff *skb, __u64 *sk_out, bool tx)
{
	struct sock *sk = mg_field(skb, struct sk_buff, sk);
	if (!sk) {
		*sk_out = 0;
		return 0;
	}
	if (tx && sk->__sk_common.skc_state == TCP_NEW_SYN_RECV) {
		__u64 c = request_listener(sk, sk_out);
		if (c)
			return c;
	}
	/* IPv4's per-CPU TCP control socket (a raw socket of protocol TCP) sends
	 * resets and TIME_WAIT ACKs for connections it does not own: no socket,
	 * so that the packet's flow names its connection (IPv6 sends these with
	 * no socket at all). Since Linux 6.13 both leave with the socket that
	 * answered instead (skb_set_owner_edemux): a TIME_WAIT socket keeps its
	 * connection's cookie, but a listener answering a segment of a connection
	 * gone (destroyed by `ss -K`, say) sends nothing of its own: its flow too. */
	if (tx && ((sk->sk_type == SOCK_RAW && sk->sk_protocol == IPPROTO_TCP) ||
		   sk->__sk_common.skc_state == TCP_LISTEN)) {
		*sk_out = 0;
		return 0;
	}
	/* The socket's address is only compared when filtering. */
	*sk_out = (filter_tasks || port_filter || filter_host) ? addr_of(sk) : 1;
	return sk_key(sk, sk->__sk_common.skc_cookie.counter);
}

/* A socket bound to `k`'s local port with any remote end (k->remote is zero):
 * to its address, or to the wildcard address (0.0.0.0 as ::ffff:0.0.0.0, or ::). */
static __always_inline struct flow_val *bound_flow(struct flow_key *k)
{
	struct flow_val *v = bpf_map_lookup_elem(&traced_flows, k);
	if (v)
		return v;
	bool v4 = k->local[10] == 0xff && k->local[11] == 0xff;
	__builtin_memset(k->local, 0, 16);
	if (v4) {
		k->local[10] = 0xff;
		k->local[11] = 0xff;
		v = bpf_map_lookup_elem(&traced_flows, k);
		if (v)
			return v;
		k->local[10] = 0;
		k->local[11] = 0;
	}
	return bpf_map_lookup_elem(&traced_flows, k);
}

static __always_inline bool flow_key_eq(const struct flow_key *a, const struct flow_key *b)
{
	const __u64 *x = (const __u64 *)a, *y = (const __u64 *)b;
	return x[0] == y[0] && x[1] == y[1] && x[2] == y[2] && x[3] == y[3] && x[4] == y[4] &&
	       x[5] == y[5];
}

/* traced_flows for key `k`: the exact flow, else a socket bound to the local
 * address and port; the answer copied into `out`. */
static __always_inline struct flow_val *flow_lookup(struct flow_key *k, bool *exact, struct flow_val *out)
{
	struct flow_val *v = bpf_map_lookup_elem(&traced_flows, k);
	*exact = v != NULL;
	if (!v) {
		__builtin_memset(k->remote, 0, 16);
		k->rport = 0;
		v = bound_flow(k);
	}
	if (!v)
		return NULL;
	*out = *v;
	return out;
}

/* The socket of a packet's flow seen in network namespace `netns` (`rx`: the
 * packet's destination is the local end): the connected socket's exact flow,
 * else a socket bound to the local address and port (listening or
 * unconnected; `exact` says which). A packet passing through another
 * namespace (a router, the far end of a veth) is not its socket's, even when
 * the addresses say so: the namespace is part of the key. The answer is a
 * copy in `out` (NULL: none), through this CPU's flow cache. */
static __always_inline struct flow_val *flow_of_cached(const struct pkt_info *pi, bool rx, bool *exact,
						       __u32 netns, struct flow_val *out)
{
	struct flow_key k = { .netns = netns };
	if (rx) {
		__builtin_memcpy(k.local, pi->daddr, 16);
		__builtin_memcpy(k.remote, pi->saddr, 16);
		k.lport = pi->dport;
		k.rport = pi->sport;
	} else {
		__builtin_memcpy(k.local, pi->saddr, 16);
		__builtin_memcpy(k.remote, pi->daddr, 16);
		k.lport = pi->sport;
		k.rport = pi->dport;
	}
	k.protocol = pi->protocol;
	__u32 zero = 0;
	struct flow_cache *c = bpf_map_lookup_elem(&flow_caches, &zero);
	if (!c)
		return flow_lookup(&k, exact, out);
	struct flow_cache_ent *e = &c->e[(k.lport ^ (k.rport * 7)) & (FLOW_CACHE - 1)];
	__u64 gen = *(volatile __u64 *)&flow_gen;
	__u32 seq = *(volatile __u32 *)&e->seq;
	if (!(seq & 1) && e->gen == gen && flow_key_eq(&e->k, &k)) {
		bool found = e->found;
		*exact = e->exact;
		*out = e->v;
		mg_barrier();
		if (*(volatile __u32 *)&e->seq == seq)
			return found ? out : NULL;
	}
	struct flow_key key = k; /* flow_lookup() may turn k into its wildcard */
	struct flow_val *v = flow_lookup(&k, exact, out);
	seq = *(volatile __u32 *)&e->seq;
	if (!(seq & 1)) {
		e->seq = seq + 1;
		mg_barrier();
		e->k = key;
		if (v)
			e->v = *v;
		e->found = v != NULL;
		e->exact = *exact;
		e->gen = gen; /* read before the lookup: a change since invalidates */
		mg_barrier();
		e->seq = seq + 2;
	}
	return v;
}

/* Room for reopen_flow's key: the programs that inline flow_of have no stack
 * left for a second one. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct flow_key);
} reopen_keys SEC(".maps");

/* A SYN (no ACK) arriving on a closed connection's flow starts a new
 * connection on the same 4-tuple (see forget_flow): the closed flow is removed
 * and the packet goes to the socket bound to its local end (the listener), as
 * a first connection's SYN does. 1: `out` holds that socket's flow. A
 * subprogram of its own: the programs that inline flow_of are near the 6.1
 * verifier's limits. */
static __noinline int reopen_flow(const struct pkt_info *pi, __u32 netns, struct flow_val *out)
{
	__u32 zero = 0;
	struct flow_key *k = bpf_map_lookup_elem(&reopen_keys, &zero);
	if (!k || !pi || !out)
		return 0;
	__builtin_memset(k, 0, sizeof(*k));
	k->netns = netns;
	k->protocol = IPPROTO_TCP;
	__builtin_memcpy(k->local, pi->daddr, 16);
	__builtin_memcpy(k->remote, pi->saddr, 16);
	k->lport = pi->dport;
	k->rport = pi->sport;
	bpf_map_delete_elem(&traced_flows, k);
	__sync_fetch_and_add(&flow_gen, 1);
	__builtin_memset(k->remote, 0, 16);
	k->rport = 0;
	struct flow_val *v = bound_flow(k);
	if (!v)
		return 0;
	*out = *v;
	return 1;
}

/* flow_of_cached, and a new connection's SYN on a closed flow (reopen_flow). */
static __always_inline struct flow_val *flow_of(const struct pkt_info *pi, bool rx, bool *exact,
						__u32 netns, struct flow_val *out)
{
	struct flow_val *v = flow_of_cached(pi, rx, exact, netns, out);
	if (!v || !rx || !*exact || !v->closed || pi->protocol != IPPROTO_TCP ||
	    (pi->tcp_flags & 0x12) != 0x02)
		return v;
	*exact = false;
	return reopen_flow(pi, netns, out) ? out : NULL;
}

static __always_inline __u32 dev_netns(const struct net_device *dev)
{
	/* Direct BTF loads, not probe reads: a probe read is a helper call each. */
	return dev ? mg_field(dev, struct net_device, nd_net.net)->ns.inum : 0;
}

/* `rx`: receive and transmit sides keep apart (over veth one datagram is
 * seen leaving one namespace and arriving in the other). */
static __always_inline void frag_key_of(const struct pkt_info *pi, struct frag_key *k, bool rx,
					__u32 netns)
{
	__builtin_memcpy(k->saddr, pi->saddr, 16);
	__builtin_memcpy(k->daddr, pi->daddr, 16);
	k->id = pi->ip_id;
	k->protocol = pi->protocol | (rx ? 0x100 : 0);
	k->netns = netns;
}

/* The network namespace a packet is seen in: its device's, else (no device
 * yet on the way out) its socket's. */
static __always_inline __u32 skb_netns(const struct sk_buff *skb)
{
	__u32 ns = dev_netns(mg_field(skb, struct sk_buff, dev));
	struct sock *sk = mg_field(skb, struct sk_buff, sk);
	if (!ns && sk) {
		struct net *net = sk->__sk_common.skc_net.net;
		if (net)
			ns = net->ns.inum;
	}
	return ns;
}

/*
 * Is this packet one to record? Without filters, yes. With task filters it must
 * belong to a traced socket: by its socket when it has one, else by its flow
 * (`rx`: the packet's destination is the local end).
 */
static __always_inline bool pkt_traced(__u64 cookie, __u64 sk, struct pkt_info *pi, bool rx,
				       __u32 netns)
{
	/* --netns: where the packet is seen, whatever its socket. */
	if (!netns_wanted(netns))
		return false;
	if (!filter_tasks && !tuple_filtered())
		return true;
	/* A socket chosen by the filters chooses its packets (later IP
	 * fragments carry no ports to judge them by). */
	if (cookie) {
		__u8 *seen = bpf_map_lookup_elem(&socks, &cookie);
		if (seen)
			return *seen & SOCK_TRACED;
	}
	if (filter_tasks) {
		/* A socket's first packets leave before its first app event has
		 * marked it (e.g. the first sendto() of an unbound UDP socket): they
		 * belong to the traced thread whose send syscall is on that socket.
		 * (Not merely to the current thread: softirqs run in its context.)
		 * Over veth and loopback the skb still holds the sender's socket when
		 * it is received, within the same syscall. */
		if (sk) {
			/* Not in_flight_now(): one more branch here, inlined in
			 * dev_rx, made 6.1's verifier give up (1M instructions). */
			struct syscall_in_flight *f = current_in_flight(false);
			if (f && f->valid && f->sk == sk)
				return true;
		}
		if (!pi->ok)
			return false;
		bool exact;
		struct flow_val fv;
		return flow_of(pi, rx, &exact, netns, &fv) != NULL;
	}
	return pi->ok && tuple_matches(pi->saddr, pi->daddr, pi->sport, pi->dport);
}
