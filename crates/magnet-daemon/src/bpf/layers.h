/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * magnetd's live layer table (MAGNeT's Table III, as `magnet analyze`
 * prints it per connection): per connection, per layer magnetd has a hook
 * for and per direction, units, bytes, a size histogram and a gap histogram
 * (time between consecutive units). Kept in the `layers` hash map, keyed by
 * socket cookie like `conns`; written by layers.bpf.c, read by src/layers.rs.
 *
 * Buckets are log-linear: log2 with 4 linear sub-buckets per power of two
 * (each bucket at most 25 % of its lower bound wide). Value v goes to
 *   v < 4:  bucket v
 *   v >= 4: bucket 4 * (e - 1) + ((v >> (e - 2)) & 3), e = floor(log2 v)
 * so bucket b >= 4 holds [(4 + b % 4) << (b / 4 - 1), (5 + b % 4) << (b / 4 - 1)).
 * The last bucket also takes every larger value (an overflow bucket).
 * Sizes are in bytes (buckets up to 28 MiB, the rest in the last), gaps in
 * units of 1024 ns (MG_GAP_SHIFT; up to about 30 s, the rest in the last).
 */
#ifndef MAGNET_LAYERS_H
#define MAGNET_LAYERS_H

#define MG_LAYER_BUCKETS 96
/* What the verifier is shown of a bucket index: b & MG_LAYER_MASK. The index
 * is < MG_LAYER_BUCKETS by construction, but a bound the 6.1 verifier can
 * see must come from the register that addresses the map value; the spare
 * room at the end of `struct mg_layers` keeps even index 127 of the last
 * row's gap histogram inside the value. */
#define MG_LAYER_MASK 127
#define MG_GAP_SHIFT 10

/* The layers magnetd has hooks for, in the order of `struct mg_layers`. */
#define MG_LAYER_APP 0 /* one unit per app call that moved bytes */
#define MG_LAYER_IP 1  /* one unit per IP packet (cgroup_skb; GSO/GRO packet as the stack hands it) */
#define MG_LAYERS 2

/* One layer in one direction: 800 bytes. */
struct mg_layer_dir {
	__u64 units;
	__u64 bytes;
	__u64 first_ns; /* the first unit, CLOCK_MONOTONIC */
	__u64 last_ns;  /* the last unit: the next unit's gap starts here */
	__u32 size_hist[MG_LAYER_BUCKETS];
	__u32 gap_hist[MG_LAYER_BUCKETS];
};

/* Per connection: [layer][direction], direction 0 = out (sent), 1 = in. */
struct mg_layers {
	struct mg_layer_dir d[MG_LAYERS][2];
	/* TCP: the peer's FIN was received (SOCK_DONE at a state change): the
	 * socket's bytes_received counts it as one byte, the tcp row does not */
	__u64 fin_in;
	__u32 _spare[MG_LAYER_MASK + 1 - MG_LAYER_BUCKETS];
};

#endif
