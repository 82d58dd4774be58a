/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * IP and TCP/UDP header parsing for programs that see a struct __sk_buff
 * (tc/TCX, cgroup_skb): the sampler and magnetd's summaries. The recorder's
 * tracing programs read struct sk_buff and parse with their own code.
 *
 * Headers are read in place (direct packet access: the stack builds them in
 * the skb's linear part, and drivers pull them there on receive), through
 * bpf_skb_load_bytes only when they are not. Include after vmlinux.h, the
 * libbpf headers and magnet/consts.h.
 */
#ifndef MAGNET_SKB_PARSE_H
#define MAGNET_SKB_PARSE_H

struct mg_skb_pkt {
	__u32 saddr[4]; /* network byte order; IPv4 as v4-mapped IPv6 */
	__u32 daddr[4];
	__u16 sport;    /* host byte order */
	__u16 dport;
	__u8 proto;
	__u8 ce;        /* ECN CE marked */
	__u8 v6;
	__u8 has_ports; /* TCP or UDP, and not a later fragment */
	__u32 seq;      /* TCP: host byte order */
	__u32 payload;  /* TCP payload bytes */
};

/* Parses the packet whose IP header starts `off` bytes into the skb's data
 * (the link header's length for tc, 0 for cgroup_skb; at most 64). Returns
 * -1 when it is not IP or the IP header cannot be read; 0 otherwise, with
 * has_ports set when the TCP or UDP header was read too. */
static __always_inline int mg_skb_parse(struct __sk_buff *skb, __u32 off, struct mg_skb_pkt *p)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	__u32 l4, ip_payload;
	__u16 frag = 0;
	union {
		struct iphdr ip;
		struct ipv6hdr ip6;
		struct tcphdr th;
		struct udphdr uh;
	} buf;

	if (off > 64)
		return -1;
	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = data + off;
		if ((void *)(ip + 1) > end) {
			if (bpf_skb_load_bytes(skb, off, &buf.ip, sizeof(buf.ip)))
				return -1;
			ip = &buf.ip;
		}
		__u32 hl = ip->ihl * 4;
		if (hl < 20)
			return -1;
		p->ce = (ip->tos & 3) == 3;
		p->proto = ip->protocol;
		p->saddr[2] = bpf_htonl(0xffff);
		p->saddr[3] = ip->saddr;
		p->daddr[2] = bpf_htonl(0xffff);
		p->daddr[3] = ip->daddr;
		__u32 tot = bpf_ntohs(ip->tot_len);
		if (tot == 0) /* BIG TCP: length from the skb */
			tot = skb->len - off;
		ip_payload = tot > hl ? tot - hl : 0;
		frag = bpf_ntohs(ip->frag_off) & IP_OFFSET;
		l4 = off + hl;
	} else if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = data + off;
		if ((void *)(ip6 + 1) > end) {
			if (bpf_skb_load_bytes(skb, off, &buf.ip6, sizeof(buf.ip6)))
				return -1;
			ip6 = &buf.ip6;
		}
		__u32 w0;
		__builtin_memcpy(&w0, ip6, 4);
		__u8 tclass = (bpf_ntohl(w0) >> 20) & 0xff;
		p->ce = (tclass & 3) == 3;
		p->v6 = 1;
		p->proto = ip6->nexthdr;
		__builtin_memcpy(p->saddr, &ip6->saddr, 16);
		__builtin_memcpy(p->daddr, &ip6->daddr, 16);
		ip_payload = bpf_ntohs(ip6->payload_len);
		if (ip_payload == 0)
			ip_payload = skb->len > off + 40 ? skb->len - off - 40 : 0;
		l4 = off + 40;
	} else {
		return -1;
	}
	if (frag || l4 > 64 + 60)
		return 0;
	if (p->proto == IPPROTO_TCP) {
		struct tcphdr *th = data + l4;
		if ((void *)(th + 1) > end) {
			if (bpf_skb_load_bytes(skb, l4, &buf.th, sizeof(buf.th)))
				return 0;
			th = &buf.th;
		}
		p->sport = bpf_ntohs(th->source);
		p->dport = bpf_ntohs(th->dest);
		p->seq = bpf_ntohl(th->seq);
		__u32 doff = th->doff * 4;
		p->payload = ip_payload > doff ? ip_payload - doff : 0;
		p->has_ports = 1;
	} else if (p->proto == IPPROTO_UDP) {
		struct udphdr *uh = data + l4;
		if ((void *)(uh + 1) > end) {
			if (bpf_skb_load_bytes(skb, l4, &buf.uh, sizeof(buf.uh)))
				return 0;
			uh = &buf.uh;
		}
		p->sport = bpf_ntohs(uh->source);
		p->dport = bpf_ntohs(uh->dest);
		p->has_ports = 1;
	}
	return 0;
}

#endif
