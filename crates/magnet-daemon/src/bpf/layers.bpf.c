// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The live layer table (layers.h), included by summary.bpf.c after the
 * record helpers. The hooks that already see a unit call in here:
 *
 *   app   app_call (sock_send_length / sock_recv_length) for a call of one
 *         send or recv, app_call_exit for sendfile, splice and the mmsg calls (their sends
 *         summed), app_uring for an io_uring request (its result): one unit
 *         per app call that moved bytes (> 0), as `magnet analyze` counts
 *   ip    wire (cgroup_skb egress / ingress): one unit per packet, IP
 *         length; only with packet_hooks = "always" (count_packets)
 *
 * A unit costs an array index and four atomic adds (units, bytes, its size
 * bucket, its gap bucket); the bucket index is bit arithmetic, no loop.
 * The gap's previous time is read and written without a lock: two units of
 * one layer and direction at the same instant on two CPUs may both measure
 * from the same previous unit (their counts stay exact).
 *
 * A connection's table is in the same slot of `layers` as its record in
 * `conns` (summary.bpf.c): the hooks that have the record find it by index.
 */
#include "layers.h"

struct mg_layers mg_layers_layout SEC(".data.layout");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 16384); /* = conns, set from the config before load */
	__type(key, __u32);
	__type(value, struct mg_layers);
} layers SEC(".maps");

/* Never written: the zeroed value a new table is cleared from. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mg_layers);
} layers_zero SEC(".maps");

/* floor(log2 v) for v > 0, without a loop. */
static __always_inline __u32 mg_log2(__u64 v)
{
	__u32 r = 0, s;
	s = (v > 0xffffffffULL) << 5;
	v >>= s;
	r |= s;
	s = (v > 0xffff) << 4;
	v >>= s;
	r |= s;
	s = (v > 0xff) << 3;
	v >>= s;
	r |= s;
	s = (v > 0xf) << 2;
	v >>= s;
	r |= s;
	s = (v > 0x3) << 1;
	v >>= s;
	r |= s;
	return r | (__u32)(v >> 1);
}

/* The log-linear bucket of v (layers.h). */
static __always_inline __u32 mg_layer_bucket(__u64 v)
{
	if (v < 4)
		return v;
	__u32 e = mg_log2(v);
	__u32 b = ((e - 1) << 2) | (__u32)((v >> (e - 2)) & 3);
	return b < MG_LAYER_BUCKETS ? b : MG_LAYER_BUCKETS - 1;
}

/* Increments bucket `b` of `hist`, with a bound the verifier sees (layers.h). */
static __always_inline void mg_hist_add(__u32 *hist, __u64 b)
{
	asm volatile("" : "+r"(b));
	__sync_fetch_and_add(&hist[b & MG_LAYER_MASK], 1);
}

/* A new record's table starts empty (conn_of): one copy, not a store per
 * field. */
static __always_inline void layers_clear(__u32 slot)
{
	__u32 zero = 0;
	struct mg_layers *z = bpf_map_lookup_elem(&layers_zero, &zero);
	struct mg_layers *t = bpf_map_lookup_elem(&layers, &slot);
	if (z && t)
		bpf_probe_read_kernel(t, sizeof(*t), z);
}

/* At a TCP state change: the peer's FIN has arrived (tcp_fin sets
 * SOCK_DONE, bit 1 of sk_flags, before it changes the state). */
static __always_inline void layers_tcp_state(struct sock *sk, struct mg_conn *c)
{
	if (!(BPF_CORE_READ(sk, __sk_common.skc_flags) & 2))
		return;
	__u32 slot = c->slot;
	struct mg_layers *t = bpf_map_lookup_elem(&layers, &slot);
	if (t)
		t->fin_in = 1;
}

/* One unit of `size` bytes at `now` in `layer` of record `c`'s table,
 * direction out (tx) or in. */
static __always_inline void layer_unit(struct mg_conn *c, __u32 layer, int tx, __u64 size, __u64 now)
{
	__u32 slot = c->slot;
	struct mg_layers *t = bpf_map_lookup_elem(&layers, &slot);
	if (!t || layer >= MG_LAYERS)
		return;
	struct mg_layer_dir *d = &t->d[layer][tx ? 0 : 1];
	__sync_fetch_and_add(&d->units, 1);
	__sync_fetch_and_add(&d->bytes, size);
	mg_hist_add(d->size_hist, mg_layer_bucket(size));
	__u64 prev = d->last_ns;
	d->last_ns = now;
	if (!prev) {
		d->first_ns = now;
		return;
	}
	mg_hist_add(d->gap_hist, mg_layer_bucket(now > prev ? (now - prev) >> MG_GAP_SHIFT : 0));
}
