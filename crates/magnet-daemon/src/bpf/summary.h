/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * magnetd's always-on summaries, as the kernel keeps them: one record per
 * connection (socket cookie) in a hash map, host totals per layer in a per-CPU
 * array, drops by reason in a per-CPU array. No event stream: user space
 * reads the maps when asked.
 *
 * The Rust side reads these through the skeleton's generated types.
 */
#ifndef MAGNET_SUMMARY_H
#define MAGNET_SUMMARY_H

#define MG_HIST_SLOTS 32   /* log2 microsecond buckets: [2^i, 2^(i+1)) us, slot 0 = < 2 us */
#define MG_DROP_REASONS 256

struct mg_conn {
	/* identity, from the first send/recv call */
	__u64 first_ns;          /* CLOCK_MONOTONIC (bpf_ktime_get_ns) */
	__u64 last_ns;
	__u64 closed_ns;         /* 0 while open (TCP: inet_sock_set_state to CLOSE) */
	__u64 cgroup_id;         /* cgroup v2 id of the last caller */
	__u32 uid;               /* socket owner (sk->sk_uid) */
	__u32 pid;               /* last caller's tgid */
	__u32 netns;             /* netns inode */
	__u16 family;
	__u16 protocol;
	__u16 sport;             /* host byte order */
	__u16 dport;
	__u32 _pad0;
	__u8 saddr[16];          /* IPv4 as v4-mapped IPv6 */
	__u8 daddr[16];
	char comm[16];           /* last caller's comm */

	/* application layer (sock_send_length / sock_recv_length) */
	__u64 app_tx_bytes;
	__u64 app_tx_calls;
	__u64 app_rx_bytes;
	__u64 app_rx_calls;
	/* wire (IP) layer, as cgroup_skb sees the socket's packets */
	__u64 wire_tx_bytes;
	__u64 wire_tx_packets;
	__u64 wire_tx_segs;      /* GSO segments */
	__u64 wire_rx_bytes;
	__u64 wire_rx_packets;
	__u64 retransmits;       /* tcp_retransmit_skb */
	__u64 drops;             /* kfree_skb of this socket's packets */
	/* TCP state at the last packet or call */
	__u32 srtt_us;
	__u32 snd_cwnd;
	__u32 sndbuf;            /* sk_sndbuf */
	__u32 wmem_queued;       /* sk_wmem_queued: send-buffer occupancy */
	/* latency samples (one outstanding per direction) */
	__u64 tx_mark_ns;        /* time of a send call not yet seen leaving */
	__u32 tx_mark_seq;       /* write_seq after that call */
	__u32 _pad1;
	__u64 rx_mark_ns;        /* arrival of data not yet read, or the last read
				    that left data waiting */
	__u64 tx_progress_ns;    /* last data packet out while tx_mark_ns waits */
	__u32 app_to_wire_hist[MG_HIST_SLOTS];
	__u32 wire_to_app_hist[MG_HIST_SLOTS];
};

/* Host totals per layer (one copy per CPU, summed by user space). */
struct mg_host {
	__u64 app_tx_bytes;
	__u64 app_tx_calls;
	__u64 app_rx_bytes;
	__u64 app_rx_calls;
	__u64 wire_tx_bytes;
	__u64 wire_tx_packets;
	__u64 wire_tx_segs;
	__u64 wire_rx_bytes;
	__u64 wire_rx_packets;
	__u64 retransmits;
	__u64 drops;
	/* health */
	__u64 events;            /* hook invocations that did work */
	__u64 conns_new;         /* connection records created */
	__u64 conns_map_full;    /* records not created: map full */
};

#endif
