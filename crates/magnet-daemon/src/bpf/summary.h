/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * magnetd's always-on summaries, as the kernel keeps them: one record per
 * connection in a slot of an array (768 bytes each; `conn_index` maps the
 * socket cookie to the slot, and the socket's own storage remembers it),
 * host totals per layer in a per-CPU array, drops by reason in a per-CPU
 * array. No event stream: user space reads the maps when asked.
 *
 * The Rust side reads these through the skeleton's generated types.
 */
#ifndef MAGNET_SUMMARY_H
#define MAGNET_SUMMARY_H

#define MG_HIST_SLOTS 32   /* log2 microsecond buckets: [2^i, 2^(i+1)) us, slot 0 = < 2 us */
#define MG_DROP_REASONS 256

/*
 * One record per connection, laid out by who writes it. Four contexts
 * touch a record: the application's calls (process
 * context), packets out, packets in (softirq, often on another CPU than the
 * caller) and rare events. The fields each hot path writes form one group,
 * and groups are kept at least 64 bytes apart, so two groups never share a
 * 64-byte cache line whatever the record's alignment in the map: a send on
 * one CPU and an ACK arriving on the other no longer bounce the same line
 * between them (the counters stay atomic adds, exact under any concurrency,
 * but on a line no other context writes). The identity group is written at
 * creation and when the caller changes, and only read on the packet paths.
 */
struct mg_conn {
	/* bytes 0-111: identity, from creation or the first call */
	__u64 first_ns;          /* CLOCK_MONOTONIC (bpf_ktime_get_ns) */
	__u64 closed_ns;         /* 0 while open (TCP: inet_sock_set_state to CLOSE) */
	__u64 cgroup_id;         /* cgroup v2 id of the last caller */
	__u32 uid;               /* socket owner (sk->sk_uid) */
	__u32 pid;               /* last caller's tgid */
	__u32 netns;             /* netns inode */
	__u16 family;
	__u16 protocol;
	__u16 sport;             /* host byte order */
	__u16 dport;
	__u8 saddr[16];          /* IPv4 as v4-mapped IPv6 */
	__u8 daddr[16];
	char comm[16];           /* last caller's comm */
	__u8 kstats;             /* TCP: the wire counters are the kernel's
				    tcp_sock ones (copied by the iterator, or
				    read by user space through sock_diag) */
	__u8 _pad0a[3];
	__u32 slot;              /* this record's slot in `conns` and `layers` */
	__u32 _pad0b;
	__u64 cookie;            /* the socket's cookie; written last at
				    creation, 0 while the slot is free: a
				    slot whose cookie is not the socket's is
				    not its record (reaped and reused) */
	__u8 _pad0[160 - 112];

	/* 160-351: the application's calls (sock_send_length /
	 * sock_recv_length), process context */
	__u64 last_ns;           /* last call */
	__u64 app_tx_bytes;
	__u64 app_tx_calls;
	__u64 app_rx_bytes;
	__u64 app_rx_calls;
	__u64 tx_mark_ns;        /* time of a send call not yet seen leaving */
	__u32 tx_mark_seq;       /* write_seq after that call */
	__u32 sndbuf;            /* sk_sndbuf at the last call */
	__u32 wmem_queued;       /* sk_wmem_queued at the last call: send-buffer occupancy */
	__u32 rx_drained_seq;    /* sampled: rcv_nxt when a read last left nothing
				    waiting (0: not known; one value in 2^32 of
				    rcv_nxt is taken for that) */
	__u32 wire_to_app_hist[MG_HIST_SLOTS]; /* written by reads */
	__u8 _pad2[64];

	/* 416-607: packets out (cgroup_skb egress), TCP retransmits; for a TCP
	 * record with `kstats` set, the wire counters, retransmits, srtt and
	 * cwnd are instead copied from its tcp_sock by the `tcp_kstats`
	 * iterator when user space reads (and once at close) */
	__u64 wire_tx_bytes;
	__u64 wire_tx_packets;
	__u64 wire_tx_segs;      /* GSO segments */
	__u64 retransmits;       /* tcp_retransmit_skb */
	__u64 tx_progress_ns;    /* last data packet out while tx_mark_ns waits */
	__u32 srtt_us;           /* TCP state at the last packet out */
	__u32 snd_cwnd;
	__u64 acked_bytes;       /* TCP: tcp_sock bytes_acked */
	__u64 data_segs_in;      /* TCP: tcp_sock data_segs_in */
	__u32 app_to_wire_hist[MG_HIST_SLOTS]; /* written by packets out (and
						  by sends whose data all left) */
	__u8 _pad4[64];

	/* 672-711: packets in (cgroup_skb ingress), drops */
	__u64 wire_rx_bytes;
	__u64 wire_rx_packets;
	__u64 rx_mark_ns;        /* arrival of data not yet read, or the last read
				    that left data waiting */
	__u64 drops;             /* kfree_skb of this socket's packets */
	__u64 data_segs_out;     /* TCP: tcp_sock data_segs_out */
	__u8 _pad5[56];
};
_Static_assert(sizeof(struct mg_conn) == 768, "mg_conn groups moved: check the offsets above");
_Static_assert(__builtin_offsetof(struct mg_conn, cookie) == 104, "mg_conn identity moved");

/* A socket's own note of its record (socket storage `conn_socks`): the
 * record is found from the socket with no hash lookup. */
struct mg_conn_sk {
	__u64 cookie;
	__u32 slot;
	__u32 _pad;
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
