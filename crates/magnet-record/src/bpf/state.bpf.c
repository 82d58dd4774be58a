// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The recorder's settings (read-only data user space fills before load) and
 * the maps its layers share: rings, counters, traced tasks and sockets, flows,
 * packet ids, in-flight system calls. Included first by record.bpf.c.
 */

/* ---- settings, fixed before load ---------------------------------------- */

const volatile bool filter_tasks = false;  /* any of pid / comm / cgroup given */
const volatile bool filter_pid = false;    /* traced_tgids holds the pids */
const volatile bool filter_comm = false;
const volatile char comm_filter[16] = {};
const volatile __u64 cgroup_filter = 0;    /* cgroup v2 id, 0 = any */
const volatile __u16 port_filter = 0;      /* either port of the flow, 0 = any */
const volatile bool filter_host = false;
const volatile __u8 host_filter[16] = {};  /* either address of the flow */
/* record --netns: only events in this network namespace (its inode number),
 * 0 = every one. Packets by the namespace they are seen in, sockets by their
 * own, tasks (sched, --funcs without a packet) by theirs. */
const volatile __u32 netns_only = 0;
const volatile bool tcp_state = false;     /* append struct mg_tcp_snap */
const volatile __u64 wakeup_bytes = 256 * 1024;
/* Packet layers on: keep every announced socket's flow, so that received
 * packets, which carry no socket before demux, are attributed to their
 * socket at the device in any network namespace. */
const volatile bool track_all_flows = false;
/* Tcp layer on: record segments received outside ESTABLISHED (tcp_probe
 * fires only there) from their TCP header at netif_receive_skb. */
const volatile bool tcp_rx_other = false;
/* Index in `rings` of the ring that holds only identity (SOCK) records, so
 * that a full event ring never costs a socket its 5-tuple. */
const volatile __u32 id_ring_index = 0;
const volatile bool has_id_ring = false;
/* record --snaplen: bytes of each dev_start_xmit / dev_rx frame to keep, 0 = none. */
const volatile __u32 snaplen = 0;
/* record --snaplen, bytes in page fragments: the page frame number of a page
 * user space filled with `frag_mark` (0 = read only the skb's linear part).
 * See frag_base(). */
const volatile __u64 frag_pfn = 0;
const volatile __u64 frag_mark[2] = {};

/* ---- maps ----------------------------------------------------------------- */

/* One ring buffer per CPU: a ring's reserve and commit take its lock, and one
 * ring shared by every CPU makes that lock (and its cache line) bounce between
 * them on every event. User space creates the rings (--buffer split evenly)
 * and puts them in this array, indexed by CPU. */
struct ring {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1); /* resized to the number of possible CPUs */
	__type(key, __u32);
	__array(values, struct ring);
} rings SEC(".maps");

static __always_inline void *my_ring(void)
{
	__u32 cpu = bpf_get_smp_processor_id();
	return bpf_map_lookup_elem(&rings, &cpu);
}

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mg_cpu_stats);
} cpu_stats SEC(".maps");

/* Processes to trace (-- CMD, -p): children join at fork. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} traced_tgids SEC(".maps");

#define SOCK_ANNOUNCED 1
#define SOCK_TRACED 2

/* Sockets seen so far: announced once in the trace (MG_SOCK) and, with task
 * filters, whether a traced task used them. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u8);
} socks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u8);
} sock_flags SEC(".maps");

/* Kernels whose tracing programs may not call bpf_sk_storage_get (it came to
 * them in 5.11; the loader asks the kernel's BTF) keep the same flags in a
 * hash by socket key (its cookie, see sk_cookie()). LRU: a socket whose entry
 * ages out is judged and announced again. The loader sizes it to 1 where
 * socket storage works. */
const volatile bool sk_storage_in_tracing = true;
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u8);
} sock_flags_by_key SEC(".maps");

/* The traced-socket flags of `sk` (key `cookie`), created when asked. */
static __always_inline __u8 *sock_fl(const struct sock *sk, __u64 cookie, bool create)
{
	if (!sk_storage_in_tracing) {
		__u8 *fl = bpf_map_lookup_elem(&sock_flags_by_key, &cookie);
		if (fl || !create)
			return fl;
		__u8 zero = 0;
		bpf_map_update_elem(&sock_flags_by_key, &cookie, &zero, BPF_NOEXIST);
		return bpf_map_lookup_elem(&sock_flags_by_key, &cookie);
	}
	return bpf_sk_storage_get(&sock_flags, (void *)sk, 0,
				  create ? BPF_SK_STORAGE_GET_F_CREATE : 0);
}

/* Flows of traced sockets, so that received packets (which carry no socket
 * before demux) can be attributed. Remote address/port zero = wildcard
 * (listening and unconnected sockets). `netns`: the socket's network
 * namespace (inode number), so that sockets with one 5-tuple in two
 * namespaces (each namespace's loopback, containers with the same
 * addresses) keep a flow each, and a packet is looked up in the namespace
 * of the device that carries it. */
struct flow_key {
	__u8 local[16];
	__u8 remote[16];
	__u16 lport;
	__u16 rport;
	__u8 protocol;
	__u8 _pad[3];
	__u32 netns;
	__u32 _pad2;
} __attribute__((aligned(8))); /* compared as six u64 (flow_key_eq) */

/* The socket of a flow: its cookie, and its address for reading its state
 * (checked against the cookie, as the socket may be gone). */
struct flow_val {
	__u64 cookie;
	__u64 sk;
	__u32 netns; /* the socket's network namespace (inode number) */
	__u32 closed; /* 1: the TCP socket has closed (see forget_flow) */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct flow_key);
	__type(value, struct flow_val);
} traced_flows SEC(".maps");

/* A per-CPU cache in front of traced_flows (cost: the LRU lookup of a
 * 40-byte key, hashed, was a large part of dev_rx's work; a bulk flow's
 * packets repeat its key). Direct-mapped by the ports. An entry holds a
 * lookup's result, found or not, and is valid while `flow_gen` has not moved:
 * track_flow() bumps it whenever it changes the map, so a cached answer is
 * never older than the map (an entry the LRU evicted stays answerable, as a
 * lookup just before the eviction would have answered).
 *
 * Nesting (a program interrupting another on this CPU): `seq` is odd while an
 * entry is written; a reader that finds it odd, or changed after copying,
 * falls back to the map; a writer that finds it odd leaves it alone. */
#define FLOW_CACHE 16

struct flow_cache_ent {
	struct flow_key k;
	struct flow_val v;
	__u64 gen;
	__u32 seq;
	__u8 found;
	__u8 exact;
	__u8 _pad[2];
};

struct flow_cache {
	struct flow_cache_ent e[FLOW_CACHE];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct flow_cache);
} flow_caches SEC(".maps");

/* Bumped by every change to traced_flows (see flow_caches). */
__u64 flow_gen = 0;

/* IP fragments after the first carry no ports: the datagram's first fragment
 * leaves its socket here (its cookie; 0: traced, its socket not known),
 * keyed by namespace, addresses, protocol and IP id. */
struct frag_key {
	__u8 saddr[16];
	__u8 daddr[16];
	__u32 id;
	__u32 protocol;
	__u32 netns;
	__u32 _pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct frag_key);
	__type(value, __u64);
} frag_socks SEC(".maps");

/* Packet identity: skb address -> id, from first sighting until the skb is
 * freed. The address alone is reused too quickly to be an identity.
 *
 * A direct-mapped table rather than a hash map: every packet event looks its
 * skb up and every freed skb in the system clears it, so this is the hottest
 * map; an array slot costs a few instructions where a hash update or delete
 * costs a lock and a bucket walk. Two live skbs that share a slot make the
 * older one take a new id at its next sighting (rare with 2^18 slots; see
 * pkt_slot() for the one pair that always did).
 * Not every free passes a tracepoint (TCP frees received skbs with
 * __kfree_skb), so the slot also keeps the data buffer's address: an sk_buff
 * reused for a new packet comes with a new buffer. */
#define PKT_SLOTS (1U << 18)
#define PKT_IN_DRIVER 1 /* recorded at net_dev_start_xmit, net_dev_xmit due */
#define PKT_DELIVERED 2 /* reached LOCAL_IN or TCP: its journey has ended */
#define PKT_RECEIVED 4  /* seen at netif_receive_skb, not sent since */
#define PKT_SENT 8      /* seen at net_dev_start_xmit, not received since */

/* Where a packet is seen, for its identity: at LOCAL_OUT a locally generated
 * packet is born; on the transmit path after a delivery the sk_buff must be a
 * new packet (TCP frees received skbs without a tracepoint, and the ACK it
 * sends next often gets the same sk_buff and buffer back); elsewhere the id
 * follows the skb (across veth, through forwarding). */
enum pkt_point {
	PKT_FOLLOW,
	PKT_BIRTH,
	PKT_TX,
	PKT_END,
	PKT_RECV, /* netif_receive_skb: follows, and remembers the reception */
	PKT_XMIT, /* net_dev_start_xmit: a PKT_TX that remembers the transmission */
};

struct pkt_slot {
	__u64 skb;
	__u64 head; /* skb->head: tells a reused sk_buff from the packet it held */
	__u64 id;
	__u64 flags;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PKT_SLOTS);
	__type(key, __u32);
	__type(value, struct pkt_slot);
} pkt_ids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} pkt_seq SEC(".maps");

/* record --snaplen: a frame record is built here and copied into the ring.
 * Slot 0 for transmit, 1 for receive (a softirq may interrupt a sender). */
struct frame_buf {
	struct mg_frame f;
	/* Twice the most kept, so that the verifier sees every fragment copy
	 * (offset < MG_SNAPLEN_MAX, length <= MG_SNAPLEN_MAX) inside it. */
	__u8 data[2 * MG_SNAPLEN_MAX];
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct frame_buf);
} frame_bufs SEC(".maps");

/* The socket send/recv syscall in flight on each traced thread: the bytes it
 * asked for (for app events) and its socket (so that the socket's first packets,
 * sent before its first app event, are attributed to it). */
struct syscall_in_flight {
	__s64 asked;
	__u64 sk;
	__u64 valid; /* set at sys_enter, cleared at sys_exit */
	/* The app call (one per syscall, emitted at sys_exit): the socket's
	 * identity, stamped by the first send/recv of the socket inside the
	 * call (a sendfile() or splice() sends many times), the syscall, its
	 * flags, and for sendmmsg()/recvmmsg() the user's array. */
	__u64 cookie;
	__u64 mmsg;
	__u32 msg_flags;
	__u32 vlen;
	__u16 nr;
	__u16 kind;
	__u16 family;
	__u16 protocol;
	__u16 type;
	__u16 stamped; /* 0: the socket not reached yet; 1: traced; 2: not traced */
	__u32 _pad1;
	/* sendto()/sendmsg() destination, read only with --port/--host: an
	 * unconnected socket's peer changes from call to call. */
	__u8 daddr[16];
	__u16 dport;
	__u16 has_dest;
	__u32 _pad;
};

/* Task-local storage: a pointer in the task itself, not a hash map update,
 * lookup and delete on every socket syscall. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct syscall_in_flight);
} in_flight SEC(".maps");

/* Kernels without task storage (5.10: it came in 5.11) keep the same state in
 * a hash by thread id; the loader sets in_flight_by_tid and does not create
 * `in_flight` there (the task-storage branch is dead code the verifier skips).
 * LRU: a thread that dies mid-call leaves an entry that ages out. */
const volatile bool in_flight_by_tid = false;
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct syscall_in_flight);
} in_flight_tid SEC(".maps");

/* How many threads whose thread id falls in each bucket have a socket
 * syscall in flight (set valid at sys_enter, not yet cleared at sys_exit).
 * A zero bucket says no thread of it has one, without the task-storage lookup
 * (two helper calls and the storage's lock, ~150 ns here): the exit of every
 * read()/write() on files, host-wide, and the kernel's sends outside a socket
 * syscall. A bucket that stays above zero (a call whose exit was missed) only
 * costs lookups. Counted only where `valid` changes, atomically. */
#define IN_FLIGHT_BUCKETS 4096
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, IN_FLIGHT_BUCKETS);
	__type(key, __u32);
	__type(value, __u32);
} in_flight_hint SEC(".maps");

static __always_inline __u32 *in_flight_bucket(void)
{
	__u32 i = (__u32)bpf_get_current_pid_tgid() & (IN_FLIGHT_BUCKETS - 1);
	return bpf_map_lookup_elem(&in_flight_hint, &i);
}

static __always_inline struct syscall_in_flight *current_in_flight(bool create)
{
	if (in_flight_by_tid) {
		__u32 tid = (__u32)bpf_get_current_pid_tgid();
		struct syscall_in_flight *f = bpf_map_lookup_elem(&in_flight_tid, &tid);

		if (f || !create)
			return f;
		struct syscall_in_flight zero = {};

		bpf_map_update_elem(&in_flight_tid, &tid, &zero, BPF_NOEXIST);
		return bpf_map_lookup_elem(&in_flight_tid, &tid);
	}
	return bpf_task_storage_get(&in_flight, bpf_get_current_task_btf(), 0,
				    create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
}

/* The current thread's socket syscall in flight, if any (`valid` set); NULL
 * without a lookup when its bucket says none is. */
static __always_inline struct syscall_in_flight *in_flight_now(void)
{
	__u32 *n = in_flight_bucket();
	if (n && !*(volatile __u32 *)n)
		return NULL;
	struct syscall_in_flight *f = current_in_flight(false);
	return f && f->valid ? f : NULL;
}

/* Keep the record types in BTF so the skeleton generates Rust for them. */
struct mg_lost _mg_lost = {};
struct mg_sock _mg_sock = {};
struct mg_app _mg_app = {};
struct mg_tcp_state _mg_tcp_state = {};
struct mg_tcp _mg_tcp = {};
struct mg_ip _mg_ip = {};
struct mg_qdisc _mg_qdisc = {};
struct mg_dev _mg_dev = {};
struct mg_drop _mg_drop = {};
struct mg_sched_switch _mg_sched_switch = {};
struct mg_task _mg_task = {};
struct mg_func _mg_func = {};
struct mg_func_exit _mg_func_exit = {};
struct mg_frame _mg_frame = {};
