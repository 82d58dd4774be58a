/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One time bucket of a sampler run, as the BPF programs keep it (one copy per
 * CPU, summed by user space). Every field is a 64-bit counter except the
 * connection sketch, which user space ORs across CPUs.
 *
 * The Rust side reads this layout through the skeleton's generated type
 * (`types::mg_bucket`); the field order is the order of `Metric::ALL` in
 * src/run.rs, which a unit test checks.
 */
#ifndef MAGNET_SAMPLE_H
#define MAGNET_SAMPLE_H

struct mg_bucket {
	__u64 in_bytes;
	__u64 out_bytes;
	__u64 in_packets;
	__u64 out_packets;
	__u64 in_ce_bytes;
	__u64 in_ce_packets;
	__u64 in_rxmit_bytes;
	__u64 out_rxmit_bytes;
	__u64 in_rxmit_packets;
	__u64 out_rxmit_packets;
	__u64 in_short_rtt_bytes;
	__u64 in_long_rtt_bytes;
	__u64 out_short_rtt_bytes;
	__u64 out_long_rtt_bytes;
	__u64 tcp_rxmit_events;   /* tcp:tcp_retransmit_skb on this interface */
	__u64 conn[2];            /* 128-bit sketch of flow hashes */
};

#endif
