// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The receive path's stages (the `receive_latency` part), included by
 * summary.bpf.c. For a sample of TCP data packets (one in `rx_every` per
 * CPU, of the segments TCP takes on established sockets), three times:
 *
 *   device   skb->tstamp: the receive stamp the kernel puts on each skb
 *            (net_timestamp_check at the device, or at IP delivery for a
 *            packet from the same host: loopback, veth), the stamp
 *            SO_TIMESTAMPING's RX_SOFTWARE reports. The kernel stamps only
 *            while some socket asked for receive stamps: magnetd holds one
 *            that does (SO_TIMESTAMP). CLOCK_REALTIME, turned into
 *            bpf_ktime_get_ns's clock with the offset user space keeps in
 *            `rx_clock`. 0 (not stamped): only queue_to_read is timed.
 *   queue    tp_btf/tcp_probe: TCP takes the segment on the socket
 *            (tcp_rcv_established, just before it is queued; after the
 *            socket's backlog when the application held the socket)
 *   read     tp_btf/sock_recv_length: the read call that returned the
 *            packet's last byte (copied_seq past its end_seq) returns;
 *            run by the app part's program there (app_recv calls
 *            rx_read when `rx_on`): one program run per read, not two
 *
 *   device_to_queue  device → queue
 *   queue_to_read    queue → read
 *   device_to_read   device → read
 *
 * The sampled packets wait for their read in a ring of MG_RX_PENDING in
 * the socket's storage, in the order TCP took them; a read takes them from
 * the oldest while their last byte has been read (so a packet that arrived
 * out of order waits for the ones before it in the ring). One pushed out
 * unread (a socket read some other way, such as splice, or a long backlog)
 * is counted in `lost`. A read on a socket with nothing waiting costs one
 * storage lookup. Hooks: tp_btf
 * (5.5+) on tracepoints 5.10 has (sock_recv_length: 6.0+); no kprobes.
 */

#define MG_RX_DEVICE_TO_QUEUE 0
#define MG_RX_QUEUE_TO_READ 1
#define MG_RX_DEVICE_TO_READ 2
#define MG_RX_STAGES 3

/* Time one TCP data packet in this many per CPU (config
 * `receive_stages_every`). */
const volatile __u32 rx_every = 1;
/* The part is loaded (rx_queue and its maps): app_recv closes the timed
 * packets at each read. */
const volatile bool rx_on = false;

/* One per connection with a timed packet read (socket cookie). */
struct mg_rx_stages {
	__u64 packets;   /* sampled packets read (queue_to_read's count) */
	__u64 unstamped; /* of them without a device stamp */
	__u64 lost;      /* sampled packets pushed out of the ring unread */
	__u32 hist[MG_RX_STAGES][MG_HIST_SLOTS];
};

#define MG_RX_PENDING 32

struct mg_rx_slot {
	__u32 end_seq;
	__u32 _pad;
	__u64 dev_ns;   /* 0: not stamped */
	__u64 queue_ns;
};

struct mg_rx_sk {
	__u32 next;     /* packets taken: the ring's write position */
	__u32 head;     /* the oldest packet not yet read (head == next: none) */
	__u32 lost;     /* not yet added to the connection's record */
	__u32 _pad;
	struct mg_rx_slot slot[MG_RX_PENDING];
};

struct mg_rx_stages mg_rx_stages_layout SEC(".data.layout");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384); /* the connection map's size, set before load */
	__type(key, __u64);
	__type(value, struct mg_rx_stages);
} rx_stages SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct mg_rx_sk);
} rx_socks SEC(".maps");

/* The sampling count (per CPU). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} rx_count SEC(".maps");

/* A zeroed record to insert (too big for the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mg_rx_stages);
} rx_scratch SEC(".maps");

/* CLOCK_REALTIME - CLOCK_MONOTONIC in ns, written by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __s64);
} rx_clock SEC(".maps");

static __always_inline struct mg_rx_stages *rx_of(__u64 cookie)
{
	struct mg_rx_stages *s = bpf_map_lookup_elem(&rx_stages, &cookie);
	if (s)
		return s;
	__u32 zero = 0;
	struct mg_rx_stages *n = bpf_map_lookup_elem(&rx_scratch, &zero);
	if (!n)
		return NULL;
	__builtin_memset(n, 0, sizeof(*n));
	bpf_map_update_elem(&rx_stages, &cookie, n, BPF_NOEXIST);
	return bpf_map_lookup_elem(&rx_stages, &cookie);
}

static __always_inline void rx_add(struct mg_rx_stages *s, int stage, __u64 from, __u64 to)
{
	__u32 slot = hist_slot(to > from ? to - from : 0);
	if (stage >= 0 && stage < MG_RX_STAGES && slot < MG_HIST_SLOTS)
		__sync_fetch_and_add(&s->hist[stage][slot], 1);
}

SEC("tp_btf/tcp_probe")
int BPF_PROG(rx_queue, struct sock *sk, struct sk_buff *skb)
{
	MGD_FLOOR(0);
	__u32 zero = 0;
	__u32 *n = bpf_map_lookup_elem(&rx_count, &zero);
	if (!n)
		return 0;
	__u32 every = rx_every;
	if (every > 1 && (*n)++ % every)
		return 0;
	__u32 seq[2]; /* TCP_SKB_CB(skb): seq, end_seq */
	if (bpf_probe_read_kernel(seq, sizeof(seq), skb->cb))
		return 0;
	struct tcp_sock *tp = bpf_skc_to_tcp_sock(sk);
	/* data, and new: not all of it below rcv_nxt (a retransmission) */
	if (!tp || seq[1] == seq[0] || (__s32)(seq[1] - tp->rcv_nxt) <= 0)
		return 0;
	struct mg_rx_sk *p = bpf_sk_storage_get(&rx_socks, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!p)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	__s64 real = skb->tstamp;
	__s64 *off = bpf_map_lookup_elem(&rx_clock, &zero);
	__u64 dev = 0;
	if (real > 0 && off && *off && real - *off > 0) {
		dev = real - *off;
		/* a stamp from the future or older than 10 s is not this
		 * packet's arrival (a sender's delivery time, a clock step) */
		if (dev > now || now - dev > 10000000000ULL)
			dev = 0;
	}
	struct mg_rx_slot *q = &p->slot[p->next & (MG_RX_PENDING - 1)];
	if (p->next - p->head >= MG_RX_PENDING) {
		/* the oldest is pushed out unread */
		p->lost++;
		p->head = p->next - MG_RX_PENDING + 1;
	}
	q->end_seq = seq[1];
	q->dev_ns = dev;
	q->queue_ns = now;
	p->next++;
	return 0;
}

/* At a read (tp_btf/sock_recv_length, from app_recv): the timed packets
 * whose last byte it returned. */
static __always_inline void rx_read(struct sock *sk, int ret, int flags)
{
	if (ret <= 0 || (flags & 2 /* MSG_PEEK */) || !sk)
		return;
	struct mg_rx_sk *p = bpf_sk_storage_get(&rx_socks, sk, 0, 0);
	if (!p || (p->head == p->next && !p->lost))
		return;
	struct tcp_sock *tp = bpf_skc_to_tcp_sock(sk);
	if (!tp)
		return;
	__u32 copied = tp->copied_seq;
	__u64 cookie = sk->__sk_common.skc_cookie.counter;
	if (!cookie)
		cookie = bpf_get_socket_cookie(sk);
	struct mg_rx_stages *s = NULL;
	__u64 now = bpf_ktime_get_ns();
	for (__u32 i = 0; i < MG_RX_PENDING; i++) {
		__u32 head = p->head;
		if (head == p->next)
			break;
		struct mg_rx_slot *q = &p->slot[head & (MG_RX_PENDING - 1)];
		if ((__s32)(copied - q->end_seq) < 0)
			break;
		if (!s)
			s = rx_of(cookie);
		if (!s)
			return;
		p->head = head + 1;
		s->packets++;
		rx_add(s, MG_RX_QUEUE_TO_READ, q->queue_ns, now);
		if (q->dev_ns) {
			rx_add(s, MG_RX_DEVICE_TO_QUEUE, q->dev_ns, q->queue_ns);
			rx_add(s, MG_RX_DEVICE_TO_READ, q->dev_ns, now);
		} else {
			s->unstamped++;
		}
	}
	if (p->lost && (s || (s = rx_of(cookie)))) {
		s->lost += p->lost;
		p->lost = 0;
	}
}
