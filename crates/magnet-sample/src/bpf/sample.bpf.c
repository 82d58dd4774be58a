// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * magnet's Millisampler: two tc programs (ingress and egress) that add every
 * packet of one interface into per-CPU counters indexed by time bucket, and a
 * tp_btf program that counts the kernel's own TCP retransmissions on that
 * interface. They only observe: both tc programs return TC_ACT_UNSPEC
 * (= TCX_NEXT), so other tc programs and the packet's fate are unchanged.
 *
 *   bucket = (now - start_ns) / interval_ns;  counted only if 0 <= bucket < nsamples
 *
 * start_ns is 0 until user space has attached everything and chosen the start
 * (possibly in the future, for runs synchronised across hosts), so nothing is
 * counted before the run and nothing after its last bucket: the run ends by
 * itself.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "magnet/consts.h"
#include "magnet/skb_parse.h"
#include "sample.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* ---- settings, fixed before load ---------------------------------------- */

const volatile __u64 interval_ns = 1000000;
const volatile __u32 nsamples = 2000;
const volatile __u32 l2_len = 14;            /* link header before IP (0 for L3 devices) */
const volatile __u32 rtt_threshold_us = 5000; /* srtt below: short, else long */
const volatile bool rtt_split = true;
const volatile __u64 sketch_seed = 0;
const volatile __u32 target_ifindex = 0;     /* for the retransmit tracepoint */
const volatile __u32 target_netns = 0;       /* netns inode number, 0 = any */

/* ---- set by user space once attached ------------------------------------ */

__u64 start_ns = 0;

/* ---- maps ----------------------------------------------------------------- */

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2000); /* resized to nsamples before load */
	__type(key, __u32);
	__type(value, struct mg_bucket);
} buckets SEC(".maps");

/* Highest sequence number (end of data) seen per direction of each TCP flow,
 * keyed by the flow's 64-bit hash with the direction and the hook in its two
 * high bits (flow_dir_key): an 8-byte key to hash and compare instead of the
 * 44-byte tuple, and the hash is at hand already (the sketch's, cached per
 * flow). Two of 65,536 flows share a key with a probability of about 2^-31
 * (a shared key would mix their retransmission counts). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u32);
} highest_seq SEC(".maps");

/* The same for a local sender's egress, whose socket is on the skb: socket
 * storage is found from the socket in a few loads, where the table above
 * hashes a 44-byte key. (Received packets have no socket at tc: their
 * highest sequence stays in the table, one place for it whether or not the
 * RTT split looked their socket up.) `seen` tells a fresh entry from a
 * sequence number 0. */
struct sock_seq {
	__u32 hi;
	__u8 seen;
	__u8 has_bit;
	__u8 bit; /* the flow's sketch bit, computed at its first packet */
	__u8 _pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct sock_seq);
} sock_seqs SEC(".maps");

/* Received TCP flows, per CPU, direct-mapped by their ports and addresses:
 * the sketch bit and RTT class of a flow whose local socket was looked up
 * less than RX_CACHE_NS ago. The socket lookup (a hash walk over the host's
 * TCP sockets, taking a reference) was the ingress program's largest cost;
 * a busy flow now pays it once per RX_CACHE_NS and CPU. Only tc ingress uses
 * this, in softirq (or with softirqs off): one run per CPU at a time, so an
 * entry is never read half-written. Kept: a socket with an RTT estimate
 * (its class), and no local socket at all (forwarded traffic: no class);
 * a socket without an estimate yet (a handshake in progress, a listener)
 * is looked up again at the flow's next packet. */
#define RX_CACHE 64
#define RX_CACHE_NS 1000000ULL
#define RTT_NONE 0
#define RTT_SHORT 1
#define RTT_LONG 2
#define RX_NO_SOCKET 3 /* in the cache only: looked up, none found */

struct rx_ent {
	__u32 saddr[4];
	__u32 daddr[4];
	__u16 sport;
	__u16 dport;
	__u8 cls; /* RTT_SHORT, RTT_LONG or RX_NO_SOCKET; RTT_NONE: empty */
	__u8 _pad[3];
	__u64 key; /* flow_dir_key: the sketch bit and the highest_seq key */
	__u64 at;  /* when the socket was looked up */
};

struct rx_cache {
	struct rx_ent e[RX_CACHE];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rx_cache);
} rx_caches SEC(".maps");

/* Keeps struct mg_bucket in the object's BTF for the skeleton's types. */
struct mg_bucket mg_bucket_layout SEC(".data.layout");

/* ---- helpers ---------------------------------------------------------------- */

static __always_inline struct mg_bucket *bucket_now(__u64 *now_out)
{
	__u64 start = start_ns;
	if (!start)
		return NULL;
	__u64 now = bpf_ktime_get_ns();
	*now_out = now;
	if (now < start)
		return NULL;
	__u64 idx = (now - start) / interval_ns;
	if (idx >= nsamples)
		return NULL;
	__u32 key = idx;
	return bpf_map_lookup_elem(&buckets, &key);
}

/* murmur3's 64-bit finaliser; mirrored in src/sketch.rs. */
static __always_inline __u64 mix64(__u64 h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

/* A 64-bit hash of the flow, the same for both its directions (the two
 * endpoints are put in a fixed order first), with in its two high bits which
 * direction this packet goes (`swap`) and the hook (`ingress`). The sketch
 * bit is its low 7 bits (src/sketch.rs): both directions of a flow set the
 * same one. */
static __always_inline __u64 flow_dir_key(const struct mg_skb_pkt *p, int ingress)
{
	int swap = 0;
	for (int i = 0; i < 4; i++) {
		__u32 a = bpf_ntohl(p->saddr[i]), b = bpf_ntohl(p->daddr[i]);
		if (a != b) {
			swap = a > b;
			goto decided;
		}
	}
	swap = p->sport > p->dport;
decided:;
	const __u32 *lo = swap ? p->daddr : p->saddr;
	const __u32 *hi = swap ? p->saddr : p->daddr;
	__u16 plo = swap ? p->dport : p->sport;
	__u16 phi = swap ? p->sport : p->dport;
	__u64 h = mix64(sketch_seed ^ p->proto);
	for (int i = 0; i < 4; i++)
		h = mix64(h ^ bpf_ntohl(lo[i]));
	for (int i = 0; i < 4; i++)
		h = mix64(h ^ bpf_ntohl(hi[i]));
	h = mix64(h ^ (((__u64)plo << 16) | phi));
	return (h & ~(3ULL << 62)) | ((__u64)swap << 62) | ((__u64)(ingress ? 1 : 0) << 63);
}

static __always_inline __u32 key_bit(__u64 key)
{
	return key & 127;
}

/* Retransmission: a TCP segment with data that starts below the highest
 * sequence number already seen in its direction of its flow, at the same
 * hook (egress and ingress keep separate tables: a looped-back segment is
 * seen once by each). `e`: the storage of the flow's local socket, when the
 * packet has one at hand; else the flow table. */
static __always_inline int is_retransmit(const struct mg_skb_pkt *p, __u64 key, struct sock_seq *e)
{
	__u32 end = p->seq + p->payload;
	if (e) {
		if (!e->seen) {
			e->seen = 1;
			e->hi = end;
			return 0;
		}
		int rx = (__s32)(p->seq - e->hi) < 0;
		if ((__s32)(end - e->hi) > 0)
			e->hi = end;
		return rx;
	}
	__u32 *hi = bpf_map_lookup_elem(&highest_seq, &key);
	if (!hi) {
		bpf_map_update_elem(&highest_seq, &key, &end, BPF_ANY);
		return 0;
	}
	int rx = (__s32)(p->seq - *hi) < 0;
	if ((__s32)(end - *hi) > 0)
		*hi = end;
	return rx;
}

/* The full TCP socket an egress packet leaves with, NULL for any other
 * (forwarded packets have none; SYN-ACKs and RSTs carry request and
 * timewait sockets). */
static __always_inline struct bpf_sock *egress_tcp_sock(struct __sk_buff *skb)
{
	struct bpf_sock *sk = skb->sk;
	if (!sk)
		return NULL;
	sk = bpf_sk_fullsock(sk);
	if (!sk || sk->protocol != IPPROTO_TCP)
		return NULL;
	return sk;
}

/* Smoothed RTT in microseconds of the packet's TCP socket, 0 if unknown. */
static __always_inline __u32 sock_srtt(struct bpf_sock *sk)
{
	if (!sk)
		return 0;
	struct bpf_tcp_sock *tp = bpf_tcp_sock(sk);
	if (!tp)
		return 0;
	return tp->srtt_us >> 3;
}

/* The local TCP socket an ingress packet goes to (referenced: the caller
 * releases it), NULL if none. */
static __always_inline struct bpf_sock *ingress_tcp_sock(struct __sk_buff *skb, const struct mg_skb_pkt *p)
{
	struct bpf_sock_tuple t = {};
	struct bpf_sock *sk;
	if (p->v6) {
		__builtin_memcpy(t.ipv6.saddr, p->saddr, 16);
		__builtin_memcpy(t.ipv6.daddr, p->daddr, 16);
		t.ipv6.sport = bpf_htons(p->sport);
		t.ipv6.dport = bpf_htons(p->dport);
		sk = bpf_sk_lookup_tcp(skb, &t, sizeof(t.ipv6), BPF_F_CURRENT_NETNS, 0);
	} else {
		t.ipv4.saddr = p->saddr[3];
		t.ipv4.daddr = p->daddr[3];
		t.ipv4.sport = bpf_htons(p->sport);
		t.ipv4.dport = bpf_htons(p->dport);
		sk = bpf_sk_lookup_tcp(skb, &t, sizeof(t.ipv4), BPF_F_CURRENT_NETNS, 0);
	}
	return sk;
}

static __always_inline bool rx_ent_is(const struct rx_ent *e, const struct mg_skb_pkt *p)
{
	return e->cls != RTT_NONE && e->sport == p->sport && e->dport == p->dport &&
	       e->saddr[3] == p->saddr[3] && e->daddr[3] == p->daddr[3] &&
	       e->saddr[0] == p->saddr[0] && e->saddr[1] == p->saddr[1] &&
	       e->saddr[2] == p->saddr[2] && e->daddr[0] == p->daddr[0] &&
	       e->daddr[1] == p->daddr[1] && e->daddr[2] == p->daddr[2];
}

/* A received TCP packet's flow_dir_key and RTT class (RTT_NONE: no local
 * socket with an RTT estimate), from this CPU's cache or its socket. */
static __always_inline __u32 rx_flow(struct __sk_buff *skb, const struct mg_skb_pkt *p, __u64 now,
				     __u64 *key)
{
	__u32 zero = 0;
	struct rx_cache *c = bpf_map_lookup_elem(&rx_caches, &zero);
	struct rx_ent *e = NULL;
	if (c) {
		__u32 i = (p->sport ^ ((__u32)p->dport * 7) ^ p->saddr[3] ^ (p->saddr[3] >> 16)) &
			  (RX_CACHE - 1);
		e = &c->e[i];
		if (rx_ent_is(e, p) && now - e->at < RX_CACHE_NS) {
			*key = e->key;
			return e->cls == RX_NO_SOCKET ? RTT_NONE : e->cls;
		}
	}
	*key = flow_dir_key(p, 1);
	struct bpf_sock *sk = ingress_tcp_sock(skb, p);
	__u32 srtt = sock_srtt(sk);
	__u32 cls = !sk ? RX_NO_SOCKET : !srtt ? RTT_NONE : srtt < rtt_threshold_us ? RTT_SHORT : RTT_LONG;
	if (sk)
		bpf_sk_release(sk);
	if (cls == RTT_NONE)
		return RTT_NONE;
	if (e) {
		__builtin_memcpy(e->saddr, p->saddr, 16);
		__builtin_memcpy(e->daddr, p->daddr, 16);
		e->sport = p->sport;
		e->dport = p->dport;
		e->key = *key;
		e->cls = cls;
		e->at = now;
	}
	return cls == RX_NO_SOCKET ? RTT_NONE : cls;
}

static __always_inline int account(struct __sk_buff *skb, int ingress)
{
	__u64 now;
	struct mg_bucket *b = bucket_now(&now);
	if (!b)
		return TC_ACT_UNSPEC;
	__u64 len = skb->len;
	if (ingress) {
		b->in_bytes += len;
		b->in_packets++;
	} else {
		b->out_bytes += len;
		b->out_packets++;
	}

	struct mg_skb_pkt p = {};
	if (mg_skb_parse(skb, l2_len, &p))
		return TC_ACT_UNSPEC;
	if (ingress && p.ce) {
		b->in_ce_bytes += len;
		b->in_ce_packets++;
	}
	if (p.proto != IPPROTO_TCP || !p.has_ports) {
		__u32 bit = key_bit(flow_dir_key(&p, ingress));
		b->conn[bit >> 6] |= 1ULL << (bit & 63);
		return TC_ACT_UNSPEC;
	}
	__u32 bit, cls = RTT_NONE;
	__u64 key = 0;
	struct sock_seq *e = NULL;
	if (ingress && rtt_split) {
		cls = rx_flow(skb, &p, now, &key);
		bit = key_bit(key);
	} else {
		/* A local sender's own socket: the RTT class, and its storage for
		 * the flow's highest sequence and its sketch bit (the hash once
		 * per socket, not per packet). */
		struct bpf_sock *sk = ingress ? NULL : egress_tcp_sock(skb);
		if (sk)
			e = bpf_sk_storage_get(&sock_seqs, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
		if (e && e->has_bit) {
			bit = e->bit;
		} else {
			key = flow_dir_key(&p, ingress);
			bit = key_bit(key);
			if (e) {
				e->bit = bit;
				e->has_bit = 1;
			}
		}
		__u32 srtt = rtt_split ? sock_srtt(sk) : 0;
		if (srtt)
			cls = srtt < rtt_threshold_us ? RTT_SHORT : RTT_LONG;
	}
	bit &= 127;
	b->conn[bit >> 6] |= 1ULL << (bit & 63);
	if (p.payload && is_retransmit(&p, key, e)) {
		if (ingress) {
			b->in_rxmit_bytes += len;
			b->in_rxmit_packets++;
		} else {
			b->out_rxmit_bytes += len;
			b->out_rxmit_packets++;
		}
	}
	if (cls != RTT_NONE) {
		if (ingress) {
			if (cls == RTT_SHORT)
				b->in_short_rtt_bytes += len;
			else
				b->in_long_rtt_bytes += len;
		} else {
			if (cls == RTT_SHORT)
				b->out_short_rtt_bytes += len;
			else
				b->out_long_rtt_bytes += len;
		}
	}
	return TC_ACT_UNSPEC;
}

SEC("tc")
int sample_ingress(struct __sk_buff *skb)
{
	return account(skb, 1);
}

SEC("tc")
int sample_egress(struct __sk_buff *skb)
{
	return account(skb, 0);
}

/* The kernel's own count of retransmitted segments leaving through the
 * sampled interface (in the sampler's network namespace): a cross-check for
 * the sequence-based egress count above. */
SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(sample_tcp_retransmit, const struct sock *sk, const struct sk_buff *skb)
{
	__u64 now;
	struct mg_bucket *b = bucket_now(&now);
	if (!b || !sk)
		return 0;
	if (target_netns && BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum) != target_netns)
		return 0;
	struct dst_entry *dst = BPF_CORE_READ(sk, sk_dst_cache);
	if (!dst)
		return 0;
	if ((__u32)BPF_CORE_READ(dst, dev, ifindex) != target_ifindex)
		return 0;
	b->tcp_rxmit_events++;
	return 0;
}
