// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * magnet's recorder: one program per kernel hook, grouped by layer. User space
 * turns off autoload for the layers it was not asked for, so an unselected layer
 * costs nothing. Every program follows the same path:
 *
 *   filter (cheap map lookups, nothing formatted) -> count -> reserve -> fill -> submit
 *
 * The ring buffer is submitted without waking the reader unless enough bytes
 * are queued: the kernel's per-record wake-up is the dominant cost of a
 * ring-buffer event (see shared/NOTES-ebpf.md), and the reader polls anyway.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "magnet/consts.h"
#include "magnet/sock.h"
#include "magnet/syscalls.h"
#include "magnet/io_uring.h"
#include "events.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* ---- settings, fixed before load ---------------------------------------- */

const volatile bool filter_tasks = false;  /* any of pid / comm / cgroup given */
const volatile bool filter_pid = false;    /* traced_tgids holds the pids */
const volatile bool filter_comm = false;
const volatile char comm_filter[16] = {};
const volatile __u64 cgroup_filter = 0;    /* cgroup v2 id, 0 = any */
const volatile __u16 port_filter = 0;      /* either port of the flow, 0 = any */
const volatile bool filter_host = false;
const volatile __u8 host_filter[16] = {};  /* either address of the flow */
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
 * of the device that carries it (issue 21). */
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
	__u32 _pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct flow_key);
	__type(value, struct flow_val);
} traced_flows SEC(".maps");

/* A per-CPU cache in front of traced_flows (issue 13: the LRU lookup of a
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

/* ---- record plumbing ------------------------------------------------------ */

/* Cost profile builds: see "Cost profile builds" below. */
#ifndef MG_PROF
#define MG_PROF 0
#endif

/* First statement of every program: in the floor build (MG_PROF=9) it returns
 * `v` (what lets the hook go on: 0, NF_ACCEPT, 1 for cgroup/sock_create). */
#if MG_PROF == 9
#define FLOOR_RETURN(v) return (v)
#else
#define FLOOR_RETURN(v) do { } while (0)
#endif

/* A packet program twice: NAME, and NAME_nl without the `record -f` filter,
 * for kernels without bpf_loop (5.17+; the loader asks the kernel's BTF). The
 * filter's instruction loop is bpf_loop's callback, and a kernel older than
 * 5.13 refuses a program holding a callback even where it is never called
 * ("number of funcs in func_info doesn't match number of subprogs"). `pf`,
 * a constant in each twin, says whether the filter is compiled in. Written
 * like BPF_PROG(NAME, args...). */
#define PF_PROG(SECNAME, name, args...)                                         \
	static __always_inline int ____##name(bool pf, unsigned long long *ctx, ##args); \
	SEC(SECNAME) int name(unsigned long long *ctx)                          \
	{                                                                       \
		_Pragma("GCC diagnostic push")                                  \
		_Pragma("GCC diagnostic ignored \"-Wint-conversion\"")          \
		return ____##name(true, ___bpf_ctx_cast(args));                 \
		_Pragma("GCC diagnostic pop")                                   \
	}                                                                       \
	SEC(SECNAME) int name##_nl(unsigned long long *ctx)                     \
	{                                                                       \
		_Pragma("GCC diagnostic push")                                  \
		_Pragma("GCC diagnostic ignored \"-Wint-conversion\"")          \
		return ____##name(false, ___bpf_ctx_cast(args));                \
		_Pragma("GCC diagnostic pop")                                   \
	}                                                                       \
	static __always_inline int ____##name(bool pf, unsigned long long *ctx, ##args)


static __always_inline struct mg_cpu_stats *stats(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&cpu_stats, &zero);
}

/* Commit a record reserved directly in this CPU's ring (SOCK records). */
static __always_inline void submit_direct(void *rec)
{
	/* Programs run with migration disabled: this is the ring rec came from. */
	void *ring = my_ring();
	__u64 queued = ring ? bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA) : 0;
	bpf_ringbuf_submit(rec, queued >= wakeup_bytes ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
}

static __always_inline __u64 wakeup_flag(void *ring)
{
	return bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA) >= wakeup_bytes ? BPF_RB_FORCE_WAKEUP
									 : BPF_RB_NO_WAKEUP;
}

static __always_inline void fill_hdr(struct mg_hdr *h, __u16 kind, __u32 flags)
{
	__u64 id = bpf_get_current_pid_tgid();
	h->ts_ns = bpf_ktime_get_ns();
	h->kind = kind;
	h->cpu = bpf_get_smp_processor_id();
	h->pid = id >> 32;
	h->tid = (__u32)id;
	h->flags = flags;
}

/* Emit the LOST record owed for this CPU, if any: loss is reported where it
 * happened in the stream, as soon as the ring has room again. */
static __always_inline void flush_lost(struct mg_cpu_stats *st, void *ring)
{
	__u64 n = st->lost;
	if (!n)
		return;
	struct mg_lost *l = bpf_ringbuf_reserve(ring, sizeof(*l), 0);
	if (!l)
		return;
	fill_hdr(&l->hdr, MG_LOST, 0);
	l->count = n;
	l->lost_cpu = l->hdr.cpu;
	l->reason = 0;
	/* A nested program may have added to st->lost meanwhile: subtract, don't zero. */
	__sync_fetch_and_add(&st->lost, -n);
	submit_direct(l);
}

/* Count an event that passed the filters and reserve room for it. NULL means
 * the ring is full: the event is counted as lost and reported later. */
/* The per-CPU counters are touched only when an event is lost (rare), and
 * then atomically: a program on this CPU may interrupt another one. */
static __always_inline void count_lost(struct mg_cpu_stats *st, __u32 kind)
{
	if (kind < MG_KIND_MAX)
		__sync_fetch_and_add(&st->lost_kind[kind], 1);
	__sync_fetch_and_add(&st->lost, 1);
	__sync_fetch_and_add(&st->lost_total, 1);
}

/* ---- per-CPU batches ------------------------------------------------------
 *
 * A ring reservation (lookup, lock, reserve, commit, wake-up query) costs
 * about as much as everything else an event does. So records are written
 * into a batch in a per-CPU array and a batch goes to this CPU's ring with
 * one bpf_ringbuf_output: when the next record would not fit, when its first
 * record is older than MG_BATCH_AGE_NS (checked as each record is committed),
 * or at the next tick of batch_tick (a cpu-clock perf event on every CPU, every
 * MG_TICK_NS, set up by user space): a quiet CPU's records are late by at most
 * a tick, well within the drain's one-second block cut. At the end, after
 * every program is detached, user space reads what is left in each batch.
 *
 * A batch as the ring carries it: 8 zero bytes (a record's hdr.ts_ns is never
 * 0: this tells a batch from a single record), then per record a u32 size, a
 * u32 zero and the record, padded to 8 bytes.
 *
 * Nesting. A program can be interrupted on its CPU by another one (a softirq
 * or hard interrupt while a syscall's program runs, the tick). `depth` counts
 * this object's programs in progress between RESERVE and submit on this CPU;
 * only the outermost (depth 0 when it came) writes into the batch; a nested
 * one writes its record into nest_bufs[depth] and sends it to the ring alone (its
 * records leave before the batch's older ones: the readers reorder by time).
 * Interleavings, with the program P that takes the guard and Q interrupting:
 *  - Q before P read depth, or after P restored it: Q is outermost, P has not
 *    touched the batch or is done with it.
 *  - Q between P's read of depth (0) and its store (1): Q sees 0 and uses the
 *    batch, but runs to its end (restoring depth to 0) before P resumes, and
 *    P reads the batch's length only after its store, so it sees Q's record.
 *    This is why a plain (non-atomic) increment is enough: interrupts nest,
 *    so every interrupting program has undone its change before P goes on.
 *  - Q after P's store: Q sees depth >= 1 and does not touch len, first_ts,
 *    data or pend[0]; it uses only the nest buffer of its own depth, which nothing
 *    below it uses (nest_bufs[depth]).
 *  - The tick is a program like the others: it sends only when it finds the
 *    batch free (depth 0) and takes the guard while it does.
 * Compiler barriers keep the guard's store before the batch's loads and the
 * batch's stores before the guard's release; interrupts see this CPU's own
 * stores in program order.
 *
 * Loss: a record is lost only when it finds no room: the batch is full and
 * the ring refused it (the batch stays, to be sent later), or a nested
 * record's ring is full. It is counted at that moment by kind, as before; a
 * batch, once written, always reaches the ring or user space at the end.
 */
#define MG_BATCH_BYTES 4096
/* The batch is sent once it holds more than this: user space lowers it for
 * small rings (a quarter of a ring), which a 4 KiB batch would never fit. */
const volatile __u32 batch_limit = MG_BATCH_BYTES;
#define MG_BATCH_AGE_NS 1000000ULL
#define MG_REC_MAX 160 /* the largest record: mg_tcp_state, 152 bytes */
#define MG_NEST 4
/* Sizes handed to the verifier are bounded by masks (6.1's verifier loses a
 * bound set by a comparison where clang turns it into a min): the batch's
 * buffer and each nested slot are powers of two, larger than ever used. */
#define MG_BATCH_DATA 8192 /* >= MG_BATCH_BYTES + MG_REC_MAX + 8 */
#define MG_NEST_SLOT 256   /* >= MG_REC_MAX */
#define mg_barrier() asm volatile("" ::: "memory")

struct batch {
	__u32 depth;
	__u32 len;         /* bytes used in data: the 8-byte marker + the records; < 8 = empty */
	__u64 first_ts;    /* hdr.ts_ns of the batch's first record */
	__u32 pend[MG_NEST]; /* size of the record in progress at each depth */
	__u8 data[MG_BATCH_DATA];
};

/* A nested program's record (key: its depth, 1..MG_NEST-1), sent alone. A
 * map of its own, so that the verifier sees a fixed offset (6.1 refused the
 * depth-indexed pointer into one value). */
struct nest_buf {
	__u32 size;
	__u32 _pad;
	__u8 rec[MG_NEST_SLOT];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MG_NEST);
	__type(key, __u32);
	__type(value, struct nest_buf);
} nest_bufs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct batch);
} batches SEC(".maps");

static __always_inline struct batch *my_batch(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&batches, &zero);
}

/* Sends the batch to this CPU's ring (the caller holds the guard); then the
 * LOST record owed, if any. 0 when sent (or empty), else the batch stays. */
static __noinline int batch_send(struct batch *b)
{
	__u32 len = b->len;
	if (len <= 8)
		return 0;
	len &= MG_BATCH_DATA - 1; /* for the verifier: len <= batch_limit already */
	void *ring = my_ring();
	if (!ring)
		return -1;
	if (bpf_ringbuf_output(ring, b->data, len, wakeup_flag(ring)))
		return -1;
	b->len = 8;
	struct mg_cpu_stats *st = stats();
	if (st)
		flush_lost(st, ring);
	return 0;
}

#define MG_ROUND8(n) (((n) + 7) & ~7U)

/* Room for a record of `size` bytes, NULL if lost (counted). */
static __always_inline __attribute__((unused)) void *batch_reserve(__u32 size, __u32 kind)
{
	struct batch *b = my_batch();
	if (!b)
		return NULL;
	__u32 d = b->depth;
	b->depth = d + 1;
	mg_barrier();
	if (d == 0) {
		__u32 len = b->len;
		if (len < 8)
			len = 8;
		if (len + 8 + MG_ROUND8(size) > batch_limit) {
			if (batch_send(b))
				goto lost;
			len = 8;
		}
		len &= MG_BATCH_BYTES - 1; /* for the verifier: len < MG_BATCH_BYTES already */
		*(__u64 *)(b->data + len) = size; /* u32 size, u32 zero */
		b->pend[0] = size;
		return b->data + len + 8;
	}
	if (d < MG_NEST) {
		__u32 k = d;
		struct nest_buf *n = bpf_map_lookup_elem(&nest_bufs, &k);
		if (!n)
			goto lost;
		n->size = size;
		return n->rec;
	}
lost:;
	struct mg_cpu_stats *st = stats();
	if (st)
		count_lost(st, kind);
	mg_barrier();
	b->depth = d;
	return NULL;
}

/* Commit the record RESERVE returned. */
static __always_inline void submit(void *rec)
{
	struct batch *b = my_batch();
	if (!b)
		return;
	__u32 d = b->depth - 1;
	if (d == 0) {
		__u64 ts = ((struct mg_hdr *)rec)->ts_ns;
		__u32 len = b->len;
		if (len <= 8) {
			len = 8;
			b->first_ts = ts;
		}
		len += 8 + MG_ROUND8(b->pend[0]);
		b->len = len;
		if (len + MG_REC_MAX + 8 > batch_limit || ts - b->first_ts > MG_BATCH_AGE_NS)
			batch_send(b); /* failing, the batch stays: sent later */
	} else if (d < MG_NEST) {
		__u32 k = d;
		struct nest_buf *n = bpf_map_lookup_elem(&nest_bufs, &k);
		if (!n)
			goto out; /* cannot happen: RESERVE found it */
		__u32 size = n->size & (MG_NEST_SLOT - 1); /* <= MG_REC_MAX already */
		void *ring = my_ring();
		struct mg_cpu_stats *st = stats();
		if (ring && st)
			flush_lost(st, ring);
		if (size && (!ring || bpf_ringbuf_output(ring, n->rec, size, wakeup_flag(ring)))) {
			if (st)
				count_lost(st, ((struct mg_hdr *)rec)->kind);
		}
	}
out:
	mg_barrier();
	b->depth = d;
}

/* Send this CPU's batch now, unless a program it interrupted holds it. */
static __always_inline void batch_flush(void)
{
	struct batch *b = my_batch();
	if (!b || b->depth)
		return;
	b->depth = 1;
	mg_barrier();
	batch_send(b);
	mg_barrier();
	b->depth = 0;
}

/* Every MG_TICK_NS on every CPU (a cpu-clock perf event): send a batch that
 * is waiting, so that a CPU gone quiet does not keep its last records. */
SEC("perf_event")
int batch_tick(void *ctx)
{
	FLOOR_RETURN(0);
	batch_flush();
	return 0;
}

/* A record built on the stack, sent alone (with --snaplen: the dev record
 * goes just before its frame, which readers pair in stream order; and 6.1's
 * verifier cannot follow the batch and the frame copy in one program). */
static __always_inline void send_direct(void *rec, __u32 size, __u32 kind)
{
	struct mg_cpu_stats *st = stats();
	void *ring = my_ring();
	if (!st)
		return;
	if (!ring) {
		count_lost(st, kind);
		return;
	}
	flush_lost(st, ring);
	if (bpf_ringbuf_output(ring, rec, size, wakeup_flag(ring)))
		count_lost(st, kind);
}

/* Cost profile builds (issue 13; never shipped): MAGNET_BPF_CFLAGS=-DMG_PROF=N.
 * bench/bpf-prog-profile.py splits each program's cost (kernel BPF statistics)
 * by the differences between these builds:
 *   9 = the floor: every program returns at its entry (FLOOR_RETURN below), on
 *       the same hooks with the same maps; nothing is recorded. What the hooks
 *       alone cost (trampoline, the program call), bench/record-overhead.sh's
 *       case `floor` (MAGNET_FLOOR=<this build>);
 *   1 = every RESERVE fails on purpose: filters, lookups, parsing and (where a
 *       program takes it before reserving) the packet id;
 *   2 = + the header (clock, pid/tid, CPU) into a stack copy;
 *   3 = + the batch: room in this CPU's batch, the header written there, the
 *       commit, and the batch sent to the ring when full or 1 ms old; the
 *       record's own fields are not written (the trace holds headers and
 *       stale bytes: for the statistics only);
 *   0 = the full program: + the record's own field reads and stores. */
#if MG_PROF == 1
#define RESERVE(ptr, size, kind_) ({ (ptr) = NULL; false; })
#elif MG_PROF == 2
#define RESERVE(ptr, size, kind_)                                                 \
	({                                                                        \
		struct mg_hdr __h;                                                \
		fill_hdr(&__h, (kind_), 0);                                       \
		asm volatile("" : : "r"(&__h) : "memory");                        \
		(ptr) = NULL;                                                     \
		false;                                                            \
	})
#elif MG_PROF == 3
#define RESERVE(ptr, size, kind_)                                                 \
	({                                                                        \
		struct mg_hdr *__r = batch_reserve((size), (kind_));              \
		if (__r) {                                                        \
			fill_hdr(__r, (kind_), 0);                                \
			submit(__r);                                              \
		}                                                                 \
		(ptr) = NULL;                                                     \
		false;                                                            \
	})
#else
/* Room for a record in this CPU's batch (see "per-CPU batches"); false when
 * the event is lost (counted by kind). Every RESERVE that succeeds is
 * followed by exactly one submit(). */
#define RESERVE(ptr, size, kind_) ({ (ptr) = batch_reserve((size), (kind_)); (ptr) != NULL; })
#endif

/* ---- filters -------------------------------------------------------------- */

static __always_inline bool comm_equal(const char *comm)
{
#pragma unroll
	for (int i = 0; i < 16; i++) {
		if (comm[i] != comm_filter[i])
			return false;
		if (!comm[i])
			break;
	}
	return true;
}

static __always_inline bool comm_matches(void)
{
	char comm[16];
	bpf_get_current_comm(comm, sizeof(comm));
	return comm_equal(comm);
}

/* Is the current task one the user asked to trace? Given filters all apply. */
static __always_inline bool task_traced(void)
{
	if (!filter_tasks)
		return true;
	if (filter_pid) {
		__u32 tgid = bpf_get_current_pid_tgid() >> 32;
		if (!bpf_map_lookup_elem(&traced_tgids, &tgid))
			return false;
	}
	if (filter_comm && !comm_matches())
		return false;
	if (cgroup_filter && bpf_get_current_cgroup_id() != cgroup_filter)
		return false;
	return true;
}

static __always_inline bool tuple_filtered(void)
{
	return port_filter || filter_host;
}

static __always_inline bool addr_eq(const __u8 *a, const volatile __u8 *b)
{
	__u64 a0, a1, b0, b1;
	__builtin_memcpy(&a0, a, 8);
	__builtin_memcpy(&a1, a + 8, 8);
	b0 = *(const volatile __u64 *)b;
	b1 = *(const volatile __u64 *)(b + 8);
	return a0 == b0 && a1 == b1;
}

static __always_inline bool tuple_matches(const __u8 *a, const __u8 *b, __u16 pa, __u16 pb)
{
	if (port_filter && pa != port_filter && pb != port_filter)
		return false;
	if (filter_host && !addr_eq(a, host_filter) && !addr_eq(b, host_filter))
		return false;
	return true;
}

/* ---- sockets -------------------------------------------------------------- */

/* A kernel pointer as a plain number: the verifier forbids arithmetic on
 * pointers, so copy the value out of the stack slot that holds it. */
static __always_inline __u64 addr_of_slow(const void *p)
{
	__u64 a = 0;
	const void *slot = p;
	bpf_probe_read_kernel(&a, sizeof(a), &slot);
	return a;
}

/* The same without a helper call (issue 13: one probe read per packet event
 * was ~20 ns): a privileged program may store a pointer into a map value and
 * load it back as a number. A program that interrupts this one on the same
 * CPU between the store and the load could leave its own pointer there: the
 * comparison catches that, and the slow path answers. */
static __always_inline __u64 addr_of(const void *p)
{
	struct mg_cpu_stats *st = stats();
	if (!st)
		return addr_of_slow(p);
	*(const void *volatile *)&st->scratch = p;
	__u64 a = *(volatile __u64 *)&st->scratch;
	if ((const void *)a != p)
		return addr_of_slow(p);
	return a;
}

struct sk_tuple {
	__u8 saddr[16];
	__u8 daddr[16];
	__u16 sport;
	__u16 dport;
	__u16 family;
	__u16 protocol;
	__u16 type;
};

static __always_inline void read_sk_tuple(const struct sock *sk, struct sk_tuple *t)
{
	t->family = BPF_CORE_READ(sk, __sk_common.skc_family);
	t->protocol = BPF_CORE_READ(sk, sk_protocol);
	t->type = BPF_CORE_READ(sk, sk_type);
	t->sport = BPF_CORE_READ(sk, __sk_common.skc_num);
	t->dport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	if (t->family == AF_INET6) {
		BPF_CORE_READ_INTO(&t->saddr, sk, __sk_common.skc_v6_rcv_saddr.in6_u.u6_addr8);
		BPF_CORE_READ_INTO(&t->daddr, sk, __sk_common.skc_v6_daddr.in6_u.u6_addr8);
	} else {
		v4_mapped(t->saddr, BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr));
		v4_mapped(t->daddr, BPF_CORE_READ(sk, __sk_common.skc_daddr));
	}
}

/* Tracing programs may call bpf_get_socket_cookie (5.12+; the loader asks
 * the kernel's BTF). */
const volatile bool cookie_helper = true;

/* A socket's key in the trace from the cookie read in it (`c`): the cookie
 * itself, or 0 when the kernel has not assigned one yet and a tracing program
 * can (cookie_helper). Without the helper a socket keeps cookie 0 until
 * something else assigns it (the recorder's cgroup/sock_create program at its
 * creation, sock_diag for the sockets that exist at the start): such a socket
 * is keyed by its kernel address instead, which no cookie can equal (cookies
 * count up from 1; kernel addresses are above 2^63). docs/FORMAT.md. */
static __always_inline __u64 sk_key(const struct sock *sk, __u64 c)
{
	if (!c && !cookie_helper && sk)
		return addr_of(sk);
	return c;
}

static __always_inline __u64 sk_cookie(const struct sock *sk)
{
	/* skc_cookie is assigned lazily; bpf_get_socket_cookie() assigns it. */
	__u64 c = sk->__sk_common.skc_cookie.counter;
	if (!c && cookie_helper)
		c = bpf_get_socket_cookie((void *)sk);
	return sk_key(sk, c);
}

static __always_inline void track_flow(struct sk_tuple *t, __u64 cookie, __u64 sk)
{
	/* Without a local port there is no flow yet (a TCP client before its
	 * port is chosen). */
	if (!t->sport)
		return;
	struct flow_key k = {};
	__builtin_memcpy(k.local, t->saddr, 16);
	/* Unconnected and listening sockets are wildcards: an all-zero remote
	 * end, as pkt_traced() looks them up (not ::ffff:0.0.0.0). */
	if (t->dport)
		__builtin_memcpy(k.remote, t->daddr, 16);
	k.lport = t->sport;
	k.rport = t->dport;
	k.protocol = t->protocol;
	struct flow_val v = { .cookie = cookie, .sk = sk };
	if (sk)
		v.netns = BPF_CORE_READ((const struct sock *)sk, __sk_common.skc_net.net, ns.inum);
	k.netns = v.netns;
	/* Unchanged: no update, and the per-CPU flow caches stay valid. */
	struct flow_val *old = bpf_map_lookup_elem(&traced_flows, &k);
	if (old && old->cookie == v.cookie && old->sk == v.sk && old->netns == v.netns)
		return;
	bpf_map_update_elem(&traced_flows, &k, &v, BPF_ANY);
	/* After the update: a cache filled before this sees a newer generation. */
	__sync_fetch_and_add(&flow_gen, 1);
}

/* Write the socket's SOCK record. It goes to the identity ring, which holds
 * nothing else and so has room when the event rings are full; only if that
 * fails too (or there is none) does it take this CPU's ring. False: not
 * written (counted as lost); the caller announces again at the next event. */
static __always_inline bool announce(const struct sock *sk, __u64 cookie, struct sk_tuple *t)
{
	struct mg_cpu_stats *st = stats();
	if (!st)
		return false;
	struct mg_sock *r = NULL;
	bool own = false;
	if (has_id_ring) {
		__u32 i = id_ring_index;
		void *idr = bpf_map_lookup_elem(&rings, &i);
		if (idr)
			r = bpf_ringbuf_reserve(idr, sizeof(*r), 0);
	}
	if (!r) {
		void *ring = my_ring();
		if (ring) {
			flush_lost(st, ring);
			r = bpf_ringbuf_reserve(ring, sizeof(*r), 0);
			own = true;
		}
	}
	if (!r) {
		count_lost(st, MG_SOCK);
		return false;
	}
	fill_hdr(&r->hdr, MG_SOCK, 0);
	r->cookie = cookie;
	r->family = t->family;
	r->protocol = t->protocol;
	r->type = t->type;
	r->sport = t->sport;
	r->dport = t->dport;
	r->_pad0 = 0;
	r->netns = BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum);
	__builtin_memcpy(r->saddr, t->saddr, 16);
	__builtin_memcpy(r->daddr, t->daddr, 16);
	if (own)
		submit_direct(r);
	else
		bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP); /* the reader polls */
	return true;
}

/*
 * Decide whether events of this socket are recorded, announcing the socket the
 * first time it is seen. `task_ctx` says the current task is the socket's user
 * (a syscall), so task filters can decide; elsewhere (softirq) only what was
 * learnt before counts.
 */
/* Remember that a socket is traced: in the socket itself (read by every app
 * and tcp event: a pointer, not a hash lookup) and, when filtering, by cookie
 * for packet events, which may only have the cookie. */
static __always_inline __u8 *mark_traced(const struct sock *sk, __u64 cookie)
{
	__u8 *fl = sock_fl(sk, cookie, true);
	if (fl)
		*fl |= SOCK_TRACED;
	if (filter_tasks || tuple_filtered()) {
		__u8 v = SOCK_ANNOUNCED | SOCK_TRACED;
		bpf_map_update_elem(&socks, &cookie, &v, BPF_ANY);
	}
	return fl;
}

/* Cookies of sockets known traced and announced, per CPU, direct-mapped: the
 * app and tcp events of a socket already known skip the socket-storage
 * lookup (a helper call, issue 13). A cookie names one socket for the
 * kernel's lifetime and a socket's flags are only ever set, so an entry never
 * goes stale; a lost race (a nested program's store) costs only a lookup. */
#define SEEN_SLOTS 64
struct seen_socks {
	__u64 cookie[SEEN_SLOTS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct seen_socks);
} seen_socks SEC(".maps");

static __always_inline bool sock_traced(const struct sock *sk, __u64 cookie, bool task_ctx)
{
	__u32 zero = 0;
	struct seen_socks *seen = bpf_map_lookup_elem(&seen_socks, &zero);
	__u32 slot = cookie & (SEEN_SLOTS - 1);
	if (seen && cookie && seen->cookie[slot] == cookie)
		return true;
	__u8 *fl = sock_fl(sk, cookie, false);
	if (fl && (*fl & SOCK_TRACED)) {
		/* Its SOCK record was lost to a full ring: announce it again. */
		if (!(*fl & SOCK_ANNOUNCED)) {
			struct sk_tuple t = {};
			read_sk_tuple(sk, &t);
			if (announce(sk, cookie, &t))
				*fl |= SOCK_ANNOUNCED;
		}
		if (seen && (*fl & SOCK_ANNOUNCED))
			seen->cookie[slot] = cookie;
		return true;
	}
	/* A socket that existed when the recording began, held by a traced
	 * task (a server's listener and connections when the recorder attaches
	 * to it running): user space found it (recorder/snapshot.rs), wrote its
	 * SOCK record and left its cookie in socks before attaching. Its first
	 * event here may come in a softirq (the request of a connection the
	 * server has not read yet), where task filters cannot decide. */
	if (filter_tasks && cookie) {
		__u8 *snap = bpf_map_lookup_elem(&socks, &cookie);
		if (snap && (*snap & SOCK_TRACED)) {
			struct sk_tuple t = {};
			read_sk_tuple(sk, &t);
			__u8 announced = *snap & SOCK_ANNOUNCED;
			fl = mark_traced(sk, cookie);
			if (fl)
				*fl |= announced;
			if (!announced && announce(sk, cookie, &t) && fl)
				*fl |= SOCK_ANNOUNCED;
			track_flow(&t, cookie, addr_of(sk));
			return true;
		}
	}
	if (!task_ctx && filter_tasks)
		return false;
	if (!task_traced())
		return false;

	struct sk_tuple t = {};
	read_sk_tuple(sk, &t);
	if (tuple_filtered() && !tuple_matches(t.saddr, t.daddr, t.sport, t.dport)) {
		/* An unconnected socket's peer is per call: judge this send by the
		 * destination its syscall named, without marking the socket. */
		if (!task_ctx || t.dport)
			return false;
		struct syscall_in_flight *f = in_flight_now();
		if (!f || !f->has_dest ||
		    !tuple_matches(t.saddr, f->daddr, t.sport, f->dport))
			return false;
		if (!fl || !(*fl & SOCK_ANNOUNCED)) {
			fl = sock_fl(sk, cookie, true);
			if (announce(sk, cookie, &t) && fl)
				*fl |= SOCK_ANNOUNCED;
		}
		return true;
	}
	fl = mark_traced(sk, cookie);
	if (announce(sk, cookie, &t) && fl)
		*fl |= SOCK_ANNOUNCED;
	if (filter_tasks || track_all_flows)
		track_flow(&t, cookie, addr_of(sk));
	return true;
}

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
 * copy were most of dev_rx's work before its reservation (issue 13). */
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
		     ((slot->flags & PKT_RECEIVED) && skb->sk))) &&
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

/* The skb's socket and its cookie (0 when it has none or none was assigned). */
static __always_inline __u64 skb_cookie(const struct sk_buff *skb, __u64 *sk_out)
{
	struct sock *sk = skb->sk;
	if (!sk) {
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
static __always_inline struct flow_val *flow_of(const struct pkt_info *pi, bool rx, bool *exact,
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

static __always_inline __u32 dev_netns(const struct net_device *dev)
{
	/* Direct BTF loads, not probe reads: a helper call each (issue 13). */
	return dev ? dev->nd_net.net->ns.inum : 0;
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
	__u32 ns = dev_netns(skb->dev);
	struct sock *sk = skb->sk;
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

#include "filter.bpf.c"

static __always_inline bool need_parse(void)
{
	return filter_tasks || tuple_filtered() || pf_len;
}

/* ---- layer: app ----------------------------------------------------------- */

/* The app calls (their numbers in magnet/syscalls.h): one app event per
 * call, emitted at its sys_exit with the bytes it asked for and its return
 * value. */

static __always_inline bool app_nr(long id)
{
	return id == NR_read || id == NR_write || id == NR_readv || id == NR_writev ||
	       id == NR_sendfile || id == NR_sendto || id == NR_recvfrom || id == NR_sendmsg ||
	       id == NR_recvmsg || id == NR_splice || id == NR_recvmmsg || id == NR_sendmmsg;
}

/* An iovec array's total length; -1 past APP_IOV_MAX entries or unreadable. */
#define APP_IOV_MAX 16
/* sendmmsg()/recvmmsg(): messages summed (asked -1 past it, and the bytes of
 * messages past it not counted in ret). */
#define APP_MMSG_MAX 16

static __always_inline __s64 iov_sum(const struct iovec *iov, __u64 n)
{
	__s64 sum = 0;
	if (n > APP_IOV_MAX)
		return -1;
	for (int i = 0; i < APP_IOV_MAX; i++) {
		if (i >= n)
			break;
		struct iovec v;
		if (bpf_probe_read_user(&v, sizeof(v), &iov[i]))
			return -1;
		sum += v.iov_len;
	}
	return sum;
}

#define S_IFMT 00170000
#define S_IFSOCK 0140000

/* The struct sock behind file descriptor `fd` of the current task, or 0.
 * Runs on every send/recv/read/write syscall of traced tasks, so the walk
 * uses direct (BTF) loads; only the fd array slot needs a probe read, and the
 * untyped pointers are given their types with bpf_core_cast. */
static __always_inline __u64 fd_socket(__u64 fd)
{
	struct file *fp = NULL;
	/* bpf_get_current_task_btf came in 5.11: asked of this kernel's BTF
	 * (CO-RE), and without it the same walk by probe reads. */
	if (!bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_get_current_task_btf)) {
		struct task_struct *t = (struct task_struct *)bpf_get_current_task();
		struct fdtable *fdt = BPF_CORE_READ(t, files, fdt);
		if (!fdt || fd >= BPF_CORE_READ(fdt, max_fds))
			return 0;
		struct file **fds = BPF_CORE_READ(fdt, fd);
		if (bpf_probe_read_kernel(&fp, sizeof(fp), &fds[fd]) || !fp)
			return 0;
	} else {
		struct task_struct *task = bpf_get_current_task_btf();
		struct fdtable *fdt = task->files->fdt;
		if (!fdt || fd >= fdt->max_fds)
			return 0;
		if (bpf_probe_read_kernel(&fp, sizeof(fp), &fdt->fd[fd]) || !fp)
			return 0;
	}
	/* bpf_rdonly_cast is a 6.2 kfunc: without it, probe reads. */
	if (!bpf_ksym_exists(bpf_rdonly_cast)) {
		if ((BPF_CORE_READ(fp, f_inode, i_mode) & S_IFMT) != S_IFSOCK)
			return 0;
		struct socket *so = BPF_CORE_READ(fp, private_data);
		return so ? (__u64)BPF_CORE_READ(so, sk) : 0;
	}
	struct file *f = bpf_core_cast(fp, struct file);
	if ((f->f_inode->i_mode & S_IFMT) != S_IFSOCK)
		return 0;
	struct socket *so = bpf_core_cast(f->private_data, struct socket);
	return so ? addr_of(so->sk) : 0;
}

/* The destination of a sendto()/sendmsg() (a user-space sockaddr), if any. */
static __always_inline void read_dest(const void *uaddr, struct syscall_in_flight *f)
{
	__u8 sa[28] = {};
	/* sockaddr_in6 is 28 bytes, sockaddr_in 16: the longer read may run off
	 * the end of a mapping, so fall back to the shorter one. */
	if (!uaddr || (bpf_probe_read_user(sa, sizeof(sa), uaddr) && bpf_probe_read_user(sa, 16, uaddr)))
		return;
	__u16 family = *(__u16 *)sa;
	if (family == AF_INET) {
		__u32 a;
		__builtin_memcpy(&a, sa + 4, 4);
		v4_mapped(f->daddr, a);
	} else if (family == AF_INET6) {
		__builtin_memcpy(f->daddr, sa + 8, 16);
	} else {
		return;
	}
	f->dport = bpf_ntohs(*(__u16 *)(sa + 2));
	f->has_dest = 1;
}

#define NR_connect 42
#define NR_bind 49

/* Loaded with task filters and packet layers: a socket bound or connected by a
 * traced task has its flow known from then on, so packets that arrive before
 * its first send or recv (a UDP receiver not yet in recv) are attributed. */
SEC("tp_btf/sys_exit")
int BPF_PROG(flow_sys_exit, struct pt_regs *regs, long ret)
{
	FLOOR_RETURN(0);
	if (ret != 0)
		return 0;
	long id = regs->orig_ax;
	if (id != NR_bind && id != NR_connect)
		return 0;
	if (!task_traced())
		return 0;
	__u64 sk = fd_socket(regs->di);
	if (!sk)
		return 0;
	struct sk_tuple t = {};
	read_sk_tuple((const struct sock *)sk, &t);
	if (!t.sport || (t.protocol != IPPROTO_UDP && t.protocol != IPPROTO_TCP))
		return 0;
	__u64 cookie = sk_key((const struct sock *)sk,
			      BPF_CORE_READ((const struct sock *)sk, __sk_common.skc_cookie.counter));
	/* A UDP socket used unconnected before it connected (a server that
	 * connects to its first client, as iperf3 -s does) is announced again
	 * with its peer, which its SOCK record lacked: the ip layer, which also
	 * tells it, sees only the recorder's network namespace (netfilter
	 * hooks), the dev layer every one (issue 21). Known by its flow as a
	 * bound socket (remote end zero), looked up before the connected flow
	 * is added. TCP's peer comes with its state changes. */
	if (id == NR_connect && t.dport && t.protocol == IPPROTO_UDP &&
	    (!tuple_filtered() || tuple_matches(t.saddr, t.daddr, t.sport, t.dport))) {
		struct flow_key k = { .lport = t.sport, .protocol = t.protocol };
		__builtin_memcpy(k.local, t.saddr, 16);
		k.netns = BPF_CORE_READ((const struct sock *)sk, __sk_common.skc_net.net, ns.inum);
		struct flow_val *b = bound_flow(&k);
		if (b && b->cookie == cookie)
			announce((const struct sock *)sk, cookie, &t);
	}
	track_flow(&t, cookie, sk);
	return 0;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(app_sys_enter, struct pt_regs *regs, long id)
{
	FLOOR_RETURN(0);
	if (!app_nr(id))
		return 0;
	if (!task_traced())
		return 0;
	/* Only sockets: read()/write() on files must leave nothing behind. The
	 * socket: the first argument, but sendfile()'s is its output and
	 * splice()'s whichever end is a socket. */
	__u16 kind = MG_APP_RECV;
	__u64 sk;
	if (id == NR_splice) {
		sk = fd_socket(regs->dx);
		if (sk)
			kind = MG_APP_SEND;
		else
			sk = fd_socket(regs->di);
	} else {
		sk = fd_socket(regs->di);
		if (id == NR_write || id == NR_writev || id == NR_sendfile || id == NR_sendto ||
		    id == NR_sendmsg || id == NR_sendmmsg)
			kind = MG_APP_SEND;
	}
	if (!sk)
		return 0;
	__s64 asked = -1;
	__u32 msg_flags = 0;
	__u64 mmsg = 0;
	__u32 vlen = 0;
	const void *msg_name = NULL;
	if (id == NR_sendmsg || id == NR_recvmsg) {
		struct user_msghdr mh;
		if (!bpf_probe_read_user(&mh, sizeof(mh), (void *)regs->si)) {
			msg_name = mh.msg_name;
			asked = iov_sum(mh.msg_iov, mh.msg_iovlen);
		}
		msg_flags = regs->dx;
	} else if (id == NR_readv || id == NR_writev) {
		asked = iov_sum((const struct iovec *)regs->si, regs->dx);
	} else if (id == NR_sendmmsg || id == NR_recvmmsg) {
		mmsg = regs->si;
		vlen = regs->dx;
		msg_flags = regs->r10;
		if (vlen <= APP_MMSG_MAX) {
			asked = 0;
			for (int i = 0; i < APP_MMSG_MAX; i++) {
				if (i >= vlen)
					break;
				struct mmsghdr m;
				if (bpf_probe_read_user(&m, sizeof(m), (struct mmsghdr *)mmsg + i)) {
					asked = -1;
					break;
				}
				__s64 n = iov_sum(m.msg_hdr.msg_iov, m.msg_hdr.msg_iovlen);
				if (n < 0) {
					asked = -1;
					break;
				}
				asked += n;
			}
		}
	} else if (id == NR_sendfile) {
		asked = regs->r10;
	} else if (id == NR_splice) {
		asked = regs->r8;
	} else {
		asked = regs->dx;
		if (id == NR_sendto || id == NR_recvfrom)
			msg_flags = regs->r10;
	}
	/* Register the socket's flow now, so that packets arriving before its
	 * first app event (a receiver blocked in its first recv) are attributed. */
	if (filter_tasks) {
		struct sk_tuple t = {};
		read_sk_tuple((const struct sock *)sk, &t);
		/* With its cookie: a flow left at cookie 0 named no socket for
		 * the packets received during the call (the socket's app event
		 * finds it in the per-CPU cache and does not track it again). */
		if (t.sport)
			track_flow(&t, sk_key((const struct sock *)sk, BPF_CORE_READ((const struct sock *)sk, __sk_common.skc_cookie.counter)), sk);
	}
	struct syscall_in_flight *f = current_in_flight(true);
	if (f) {
		if (!f->valid) {
			__u32 *n = in_flight_bucket();
			if (n)
				__sync_fetch_and_add(n, 1);
		}
		f->asked = asked;
		f->sk = sk;
		f->valid = 1;
		f->has_dest = 0;
		f->nr = id;
		f->kind = kind;
		f->msg_flags = msg_flags;
		f->mmsg = mmsg;
		f->vlen = vlen;
		f->stamped = 0;
		if (tuple_filtered() && (id == NR_sendto || id == NR_sendmsg))
			read_dest(id == NR_sendto ? (const void *)regs->r8 : msg_name, f);
	}
	return 0;
}

/* The bytes a sendmmsg()/recvmmsg() moved: its messages' msg_len, which the
 * kernel wrote back for the first `n` (the syscall's return). */
static __always_inline __s64 mmsg_bytes(__u64 mmsg, long n)
{
	__s64 sum = 0;
	for (int i = 0; i < APP_MMSG_MAX; i++) {
		if (i >= n)
			break;
		__u32 len;
		if (bpf_probe_read_user(&len, sizeof(len), &((struct mmsghdr *)mmsg)[i].msg_len))
			return sum;
		sum += len;
	}
	return sum;
}

static __always_inline void app_emit(__u64 cookie, __s64 asked, __s64 ret, __u32 flags, __u16 kind,
				     __u16 family, __u16 protocol, __u16 type)
{
	struct mg_app *r;
	if (!RESERVE(r, sizeof(*r), kind))
		return;
	fill_hdr(&r->hdr, kind, 0);
	r->cookie = cookie;
	r->asked = asked;
	r->ret = ret;
	r->msg_flags = flags;
	r->family = family;
	r->protocol = protocol;
	r->type = type;
	r->_pad0 = 0;
	bpf_get_current_comm(r->comm, sizeof(r->comm));
	submit(r);
}

/* The app event of a socket syscall: one per call, whatever the kernel did
 * inside (a sendfile() sends once per pipe's worth, a sendmmsg() once per
 * message, and a call that fails before the socket is reached is none). */
SEC("tp_btf/sys_exit")
int BPF_PROG(app_sys_exit, struct pt_regs *regs, long ret)
{
	FLOOR_RETURN(0);
	long id = regs->orig_ax;
	if (!app_nr(id))
		return 0;
	struct syscall_in_flight *f = in_flight_now();
	if (!f)
		return 0;
	f->valid = 0;
	__u32 *n = in_flight_bucket();
	if (n)
		__sync_fetch_and_add(n, -1);
	if (f->nr != id || f->stamped != 1)
		return 0;
	if (id == NR_sendmmsg || id == NR_recvmmsg) {
		if (ret > 0)
			ret = mmsg_bytes(f->mmsg, ret);
	}
	app_emit(f->cookie, f->asked, ret, f->msg_flags, f->kind, f->family, f->protocol, f->type);
	return 0;
}

/* io_uring: one app event per request, at its completion, with the length
 * its SQE asked for (read at submission: a partial send retried inside the
 * kernel moves the request's own length on) and the CQE's result. The
 * request's socket is known by the kernel's sends for it (app_event below,
 * whose trusted socket pointer can mark and announce it). */
/* The app kinds asked for (`--kinds`), for io_uring's requests: the socket
 * syscalls' kinds follow their stamping programs, loaded or not. */
const volatile bool app_send_on = true;
const volatile bool app_recv_on = true;

struct uring_req {
	__s64 asked;
	__u16 kind;
	__u16 opcode;
	__u32 _pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct uring_req);
} uring_reqs SEC(".maps");

struct uring_sock {
	__u64 cookie;
	__u16 family;
	__u16 protocol;
	__u16 type;
	__u16 _pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct uring_sock);
} uring_socks SEC(".maps");

static __always_inline void app_uring_sock(struct sock *sk, __u16 family)
{
	__u64 key = addr_of(sk);
	__u64 cookie = sk_cookie(sk);
	struct uring_sock *old = bpf_map_lookup_elem(&uring_socks, &key);
	if (old && old->cookie == cookie)
		return;
	if (!sock_traced(sk, cookie, true))
		return;
	struct uring_sock v = {
		.cookie = cookie,
		.family = family,
		.protocol = sk->sk_protocol,
		.type = sk->sk_type,
	};
	bpf_map_update_elem(&uring_socks, &key, &v, BPF_ANY);
}

static __always_inline int uring_submit(struct io_kiocb *req)
{
	__u8 op = BPF_CORE_READ(req, opcode);
	int dir = mg_uring_dir(op);
	if (dir < 0)
		return 0;
	struct uring_req v = { .asked = -1, .opcode = op, .kind = dir ? MG_APP_SEND : MG_APP_RECV };
	if (v.kind == MG_APP_SEND ? !app_send_on : !app_recv_on)
		return 0;
	if (!task_traced())
		return 0;
	void *cmd = (void *)&req->cmd;
	if (op == IORING_OP_SEND_ || op == IORING_OP_RECV_ || op == IORING_OP_SEND_ZC_) {
		v.asked = BPF_CORE_READ((struct io_sr_msg *)cmd, len);
	} else if (op == IORING_OP_SENDMSG_ || op == IORING_OP_RECVMSG_ || op == IORING_OP_SENDMSG_ZC_) {
		struct user_msghdr mh;
		void *um = BPF_CORE_READ((struct io_sr_msg *)cmd, umsg);
		if (!bpf_probe_read_user(&mh, sizeof(mh), um))
			v.asked = iov_sum(mh.msg_iov, mh.msg_iovlen);
	} else if (op == IORING_OP_READ_ || op == IORING_OP_WRITE_) {
		v.asked = BPF_CORE_READ((struct io_rw *)cmd, len);
	} else {
		v.asked = iov_sum((const struct iovec *)BPF_CORE_READ((struct io_rw *)cmd, addr),
				  BPF_CORE_READ((struct io_rw *)cmd, len));
	}
	__u64 key = addr_of(req);
	bpf_map_update_elem(&uring_reqs, &key, &v, BPF_ANY);
	return 0;
}

SEC("tp_btf/io_uring_submit_req")
int BPF_PROG(app_uring_submit, struct io_kiocb *req)
{
	FLOOR_RETURN(0);
	return uring_submit(req);
}

/* The same, loaded with app_uring_complete7 (a program attaches once). */
SEC("tp_btf/io_uring_submit_req")
int BPF_PROG(app_uring_submit7, struct io_kiocb *req)
{
	FLOOR_RETURN(0);
	return uring_submit(req);
}

static __always_inline void app_uring_done(void *req_, __s32 res, __u32 cflags)
{
	__u64 key = (__u64)req_;
	struct uring_req *v = bpf_map_lookup_elem(&uring_reqs, &key);
	if (!v)
		return;
	struct uring_req r = *v;
	/* A multishot request posts many results, each one the application
	 * gets; a zero-copy send's F_MORE announces only its notification. */
	if (!(cflags & IORING_CQE_F_MORE_) || r.opcode == IORING_OP_SEND_ZC_ ||
	    r.opcode == IORING_OP_SENDMSG_ZC_)
		bpf_map_delete_elem(&uring_reqs, &key);
	struct io_kiocb *req = req_;
	struct file *file = BPF_CORE_READ(req, file);
	if (!file || (BPF_CORE_READ(file, f_inode, i_mode) & S_IFMT) != S_IFSOCK)
		return;
	struct socket *so = BPF_CORE_READ(file, private_data);
	__u64 sk = (__u64)BPF_CORE_READ(so, sk);
	struct uring_sock *us = bpf_map_lookup_elem(&uring_socks, &sk);
	if (!us)
		return;
	app_emit(us->cookie, r.asked, res, 0, r.kind, us->family, us->protocol, us->type);
}

SEC("tp_btf/io_uring_complete")
int BPF_PROG(app_uring_complete, struct io_ring_ctx *ring, void *req_, struct io_uring_cqe *cqe)
{
	FLOOR_RETURN(0);
	app_uring_done(req_, BPF_CORE_READ(cqe, res), BPF_CORE_READ(cqe, flags));
	return 0;
}

/* io_uring_complete before it took the CQE (its result and flags as
 * arguments): (ctx, req, user_data, res, cflags, extra1, extra2). */
SEC("tp_btf/io_uring_complete")
int BPF_PROG(app_uring_complete7, void *ring, void *req_, __u64 user_data, int res, unsigned cflags)
{
	FLOOR_RETURN(0);
	app_uring_done(req_, res, cflags);
	return 0;
}

/* Whether the current task is in a socket syscall on `sk` (not known before
 * 5.15, which lacks bpf_task_pt_regs: no). Its number alone would not do:
 * io_uring's task work runs on the way back from any syscall, and an io
 * thread's registers are zero (read). */
static __always_inline bool in_syscall_on(__u64 sk)
{
	if (!bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_task_pt_regs) ||
	    !bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_get_current_task_btf))
		return false;
	struct task_struct *t = bpf_get_current_task_btf();
	if (t->flags & 0x00000010) /* PF_IO_WORKER: io-wq and SQPOLL threads */
		return false;
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(t);
	long id = BPF_CORE_READ(regs, orig_ax);
	if (!app_nr(id))
		return false;
	if (fd_socket(BPF_CORE_READ(regs, di)) == sk)
		return true;
	return id == NR_splice && fd_socket(BPF_CORE_READ(regs, dx)) == sk;
}

static __always_inline bool current_is_kthread(void)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	return BPF_CORE_READ(t, flags) & 0x00200000; /* PF_KTHREAD */
}

/* A socket's send or recv inside the kernel. Within a traced socket syscall
 * it stamps the call with the socket (the event comes at sys_exit); from a
 * kernel thread (an in-kernel socket user such as the NFS client) or in a
 * socket syscall that began before the recording it is the call itself; in
 * any other user task it is io_uring's work on a request (in io_uring_enter,
 * an io-wq worker or the SQPOLL thread), recorded per request (app_uring_*),
 * not per attempt. */
static __always_inline int app_event(struct sock *sk, int ret, int flags, __u16 kind)
{
	__u16 family = sk->__sk_common.skc_family;
	/* The tracepoints also fire for netlink and unix sockets. */
	if (family != AF_INET && family != AF_INET6)
		return 0;
	struct syscall_in_flight *a = in_flight_now();
	if (a && a->sk == addr_of(sk)) {
		if (a->kind != kind)
			return 0;
		a->msg_flags |= flags;
		if (a->stamped)
			return 0;
		__u64 cookie = sk_cookie(sk);
		if (!sock_traced(sk, cookie, true)) {
			a->stamped = 2;
			return 0;
		}
		a->cookie = cookie;
		a->family = family;
		a->protocol = sk->sk_protocol;
		a->type = sk->sk_type;
		a->stamped = 1;
		return 0;
	}
	if (!current_is_kthread() && !in_syscall_on(addr_of(sk))) {
		app_uring_sock(sk, family);
		return 0;
	}
	/* A kernel thread's send, or a socket syscall that began before the
	 * recording (a recv blocked when it started): the call as the socket
	 * saw it, its size asked unknown. */
	__u64 cookie = sk_cookie(sk);
	if (!sock_traced(sk, cookie, true))
		return 0;
	app_emit(cookie, -1, ret, flags, kind, family, sk->sk_protocol, sk->sk_type);
	return 0;
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(app_send, struct sock *sk, int ret, int flags)
{
	FLOOR_RETURN(0);
	return app_event(sk, ret, flags, MG_APP_SEND);
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(app_recv, struct sock *sk, int ret, int flags)
{
	FLOOR_RETURN(0);
	return app_event(sk, ret, flags, MG_APP_RECV);
}

/* ---- layer: tcp ----------------------------------------------------------- */

/* Probe reads: for a socket known only by its address on a kernel without
 * bpf_rdonly_cast (6.1). */
static __always_inline void fill_snap_probe(const struct sock *sk, struct mg_tcp_snap *s)
{
	const struct tcp_sock *tp = (const struct tcp_sock *)sk;
	const struct inet_connection_sock *icsk = (const struct inet_connection_sock *)sk;
	s->sport = BPF_CORE_READ(sk, __sk_common.skc_num);
	s->dport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	s->state = BPF_CORE_READ(sk, __sk_common.skc_state);
	s->ca_state = BPF_CORE_READ_BITFIELD_PROBED(icsk, icsk_ca_state);
	s->_pad0 = 0;
	s->snd_wnd = BPF_CORE_READ(tp, snd_wnd);
	s->srtt_us = BPF_CORE_READ(tp, srtt_us) >> 3;
	s->rto_jiffies = BPF_CORE_READ(icsk, icsk_rto);
	s->packets_out = BPF_CORE_READ(tp, packets_out);
	s->retrans_out = BPF_CORE_READ(tp, retrans_out);
	s->snd_ssthresh = BPF_CORE_READ(tp, snd_ssthresh);
	s->snd_cwnd = BPF_CORE_READ(tp, snd_cwnd);
	s->rcv_wnd = BPF_CORE_READ(tp, rcv_wnd);
	s->write_seq = BPF_CORE_READ(tp, write_seq);
	s->copied_seq = BPF_CORE_READ(tp, copied_seq);
	s->snd_una = BPF_CORE_READ(tp, snd_una);
	s->snd_nxt = BPF_CORE_READ(tp, snd_nxt);
	s->rcv_nxt = BPF_CORE_READ(tp, rcv_nxt);
	s->wmem_queued = BPF_CORE_READ(sk, sk_wmem_queued);
	s->sndbuf = BPF_CORE_READ(sk, sk_sndbuf);
	s->mss_cache = BPF_CORE_READ(tp, mss_cache);
}

/* The same by direct BTF loads from a BTF-typed tcp_sock (bpf_skc_to_tcp_sock
 * of a tracing program's argument, or bpf_core_cast's result). The snapshot
 * has 19 fields: as probe reads they cost a helper call each, which made
 * --tcp-state ~20 % dearer than recording without it (issue 13). */
static __always_inline void fill_snap_tp(const struct tcp_sock *tp, struct mg_tcp_snap *s)
{
	const struct inet_connection_sock *icsk = &tp->inet_conn;
	const struct sock *sk = &icsk->icsk_inet.sk;
	s->sport = sk->__sk_common.skc_num;
	s->dport = bpf_ntohs(sk->__sk_common.skc_dport);
	s->state = sk->__sk_common.skc_state;
	s->ca_state = BPF_CORE_READ_BITFIELD(icsk, icsk_ca_state);
	s->_pad0 = 0;
	s->snd_wnd = tp->snd_wnd;
	s->srtt_us = tp->srtt_us >> 3;
	s->rto_jiffies = icsk->icsk_rto;
	s->packets_out = tp->packets_out;
	s->retrans_out = tp->retrans_out;
	s->snd_ssthresh = tp->snd_ssthresh;
	s->snd_cwnd = tp->snd_cwnd;
	s->rcv_wnd = tp->rcv_wnd;
	s->write_seq = tp->write_seq;
	s->copied_seq = tp->copied_seq;
	s->snd_una = tp->snd_una;
	s->snd_nxt = tp->snd_nxt;
	s->rcv_nxt = tp->rcv_nxt;
	s->wmem_queued = sk->sk_wmem_queued;
	s->sndbuf = sk->sk_sndbuf;
	s->mss_cache = tp->mss_cache;
}

/* A tracing program's socket argument: one helper call gives it its tcp_sock type. */
static __always_inline void fill_snap(const struct sock *sk, struct mg_tcp_snap *s)
{
	struct tcp_sock *tp = bpf_skc_to_tcp_sock((void *)sk);
	if (tp)
		fill_snap_tp(tp, s);
	else
		fill_snap_probe(sk, s);
}

#define TCP_BODY_LEN (sizeof(struct mg_tcp) - sizeof(struct mg_tcp_snap))

static __always_inline struct mg_tcp *tcp_reserve(__u16 kind)
{
	struct mg_tcp *r;
	if (tcp_state) {
		if (!RESERVE(r, sizeof(struct mg_tcp), kind))
			return NULL;
	} else {
		if (!RESERVE(r, TCP_BODY_LEN, kind))
			return NULL;
	}
	fill_hdr(&r->hdr, kind, tcp_state ? MG_F_TCP_STATE : 0);
	return r;
}

static __always_inline void tcp_event(const struct sock *sk, const struct sk_buff *skb,
				      __u16 kind, __u32 len, __u32 arg, bool task_ctx)
{
	__u64 cookie = sk_cookie(sk);
	if (!sock_traced(sk, cookie, task_ctx))
		return;
	struct mg_tcp *r = tcp_reserve(kind);
	if (!r)
		return;
	r->cookie = cookie;
	r->pkt_id = skb ? pkt_id(skb, kind == MG_TCP_RCV ? PKT_END : PKT_FOLLOW) : 0;
	r->len = len;
	r->seq = 0;
	r->ack = 0;
	if (skb) {
		/* tcp_skb_cb lives in skb->cb; seq and end_seq come first, ack_seq after
		 * the union of tcp_tw_isn/header, so read through the CO-RE type. */
		const struct tcp_skb_cb *cb = (const struct tcp_skb_cb *)&skb->cb[0];
		r->seq = cb->seq;
		r->ack = cb->ack_seq;
	}
	r->arg = arg;
	if (tcp_state)
		fill_snap(sk, &r->snap);
	submit(r);
}

SEC("tp_btf/tcp_probe")
int BPF_PROG(tcp_rcv, struct sock *sk, const struct sk_buff *skb)
{
	FLOOR_RETURN(0);
	struct tcp_skb_cb *cb = (struct tcp_skb_cb *)&skb->cb[0];
	__u32 arg = cb->tcp_flags;
	if (arg & 0x01) {
		/* A FIN: its header length sizes the data it carries (len - it),
		 * which nothing else may tell (no snapshot, no ACK recorded). */
		__u8 b = 0;
		bpf_probe_read_kernel(&b, 1, skb->head + skb->transport_header + 12);
		arg |= (__u32)((b >> 4) * 4) << 8;
	}
	tcp_event(sk, skb, MG_TCP_RCV, skb->len, arg, false);
	return 0;
}

SEC("tp_btf/tcp_sendmsg_locked")
int BPF_PROG(tcp_sendmsg, const struct sock *sk, const struct msghdr *msg,
	     const struct sk_buff *skb, int size_goal)
{
	FLOOR_RETURN(0);
	/* skb may be NULL (a new one is about to be allocated). */
	__u32 len = skb ? skb->len : 0;
	tcp_event(sk, skb, MG_TCP_SENDMSG, len, size_goal, true);
	return 0;
}

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(tcp_retrans, const struct sock *sk, const struct sk_buff *skb, int err)
{
	FLOOR_RETURN(0);
	tcp_event(sk, skb, MG_TCP_RETRANS, BPF_CORE_READ(skb, len), err, false);
	return 0;
}

SEC("tp_btf/tcp_send_reset")
int BPF_PROG(tcp_rst_sent, const struct sock *sk, const struct sk_buff *skb, int reason)
{
	FLOOR_RETURN(0);
	/* Resets for packets that match no socket have sk == NULL. */
	if (!sk)
		return 0;
	tcp_event(sk, skb, MG_TCP_RST_SENT, skb ? BPF_CORE_READ(skb, len) : 0, reason, false);
	return 0;
}

SEC("tp_btf/tcp_receive_reset")
int BPF_PROG(tcp_rst_rcvd, struct sock *sk)
{
	FLOOR_RETURN(0);
	tcp_event(sk, NULL, MG_TCP_RST_RCVD, 0, 0, false);
	return 0;
}

#define STATE_BODY_LEN (sizeof(struct mg_tcp_state) - sizeof(struct mg_tcp_snap))

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(tcp_state_change, const struct sock *sk, const int oldstate, const int newstate)
{
	FLOOR_RETURN(0);
	if (BPF_CORE_READ(sk, sk_protocol) != IPPROTO_TCP)
		return 0;
	__u64 cookie = sk_cookie(sk);
	/* Only connect() and listen() are known to run in the socket user's
	 * context. Other changes may run in a softirq on whatever task is current
	 * (over veth and loopback, often the traced peer sending to this socket):
	 * they must not make the current task's filters choose the socket.
	 * Handshakes completing in softirq inherit tracing from the listener's flow. */
	bool task_ctx = oldstate == TCP_CLOSE && (newstate == TCP_SYN_SENT || newstate == TCP_LISTEN);
	bool traced = sock_traced(sk, cookie, task_ctx);
	struct sk_tuple t = {};
	read_sk_tuple(sk, &t);
	if (!traced && filter_tasks) {
		struct flow_key k = {};
		__builtin_memcpy(k.local, t.saddr, 16);
		k.lport = t.sport;
		k.protocol = IPPROTO_TCP;
		k.netns = BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum);
		if (!bound_flow(&k))
			return 0;
		mark_traced(sk, cookie);
		track_flow(&t, cookie, addr_of(sk));
		traced = true;
	}
	if (!traced)
		return 0;
	/* The tuple is complete from ESTABLISHED on: keep its flow. */
	if ((filter_tasks || track_all_flows) && t.dport)
		track_flow(&t, cookie, addr_of(sk));

	struct mg_tcp_state *r;
	if (tcp_state) {
		if (!RESERVE(r, sizeof(struct mg_tcp_state), MG_TCP_STATE))
			return 0;
	} else {
		if (!RESERVE(r, STATE_BODY_LEN, MG_TCP_STATE))
			return 0;
	}
	fill_hdr(&r->hdr, MG_TCP_STATE, tcp_state ? MG_F_TCP_STATE : 0);
	r->cookie = cookie;
	r->family = t.family;
	r->protocol = t.protocol;
	r->sport = t.sport;
	r->dport = t.dport;
	r->oldstate = oldstate;
	r->newstate = newstate;
	__builtin_memset(r->_pad0, 0, sizeof(r->_pad0));
	__builtin_memcpy(r->saddr, t.saddr, 16);
	__builtin_memcpy(r->daddr, t.daddr, 16);
	if (tcp_state)
		fill_snap(sk, &r->snap);
	submit(r);
	return 0;
}

/* ---- layer: ip (netfilter hooks) ----------------------------------------- */

static __always_inline int ip_event(struct bpf_nf_ctx *ctx, __u16 kind, bool rx)
{
	struct sk_buff *skb = ctx->skb;
	struct pkt_info pi = {};
	__u16 nh = skb->network_header;
	parse_l3(skb->head + nh, &pi);
	if (!pi.ok)
		return NF_ACCEPT;
	if (pf_len && !pf_skb(skb, PF_AT_NH))
		return NF_ACCEPT;
	__u64 sk;
	__u64 cookie = skb_cookie(skb, &sk);
	__u32 ns = ctx->state->net->ns.inum;
	/* IP fragments (IPv6 passes LOCAL_IN before reassembly, both families
	 * PRE_ROUTING): the later ones have no ports, their datagram's first
	 * fragment names their socket (frag_socks, left by dev_rx or here). */
	struct frag_key fk = {};
	__u64 *fc = NULL;
	if (pi.frag_off & (IP_MF | IP_OFFSET)) {
		frag_key_of(&pi, &fk, rx, ns);
		if (pi.frag_off & IP_OFFSET)
			fc = bpf_map_lookup_elem(&frag_socks, &fk);
	}
	if (!fc && !pkt_traced(cookie, sk, &pi, rx, ns))
		return NF_ACCEPT;
	/* Received packets have no socket yet, and some sent ones none with a
	 * cookie: name the socket of the flow. */
	if ((rx || !cookie) && track_all_flows) {
		if (fc) {
			cookie = *fc;
		} else if (!(pi.frag_off & IP_OFFSET)) {
			bool exact;
			struct flow_val fvb;
			struct flow_val *fv = flow_of(&pi, rx, &exact, ns, &fvb);
			cookie = fv ? fv->cookie : 0;
		}
	}
	if ((pi.frag_off & (IP_MF | IP_OFFSET)) == IP_MF && (cookie || need_parse()))
		bpf_map_update_elem(&frag_socks, &fk, &cookie, BPF_ANY);

	struct mg_ip *r;
	if (!RESERVE(r, sizeof(*r), kind))
		return NF_ACCEPT;
	fill_hdr(&r->hdr, kind, 0);
	r->cookie = cookie;
	r->pkt_id = pkt_id(skb, kind == MG_IP_LOCAL_OUT	 ? PKT_BIRTH
				: kind == MG_IP_POST_ROUTING ? PKT_TX
				: kind == MG_IP_LOCAL_IN     ? PKT_END
							     : PKT_FOLLOW);
	const struct nf_hook_state *st = ctx->state;
	struct net_device *dev = rx ? st->in : st->out;
	r->ifindex = dev ? dev->ifindex : 0;
	r->tot_len = ip_len(skb, nh, &pi);
	ip_fill(r, &pi);
	submit(r);
	return NF_ACCEPT;
}

SEC("netfilter")
int ip_local_out(struct bpf_nf_ctx *ctx)
{
	FLOOR_RETURN(NF_ACCEPT);
	return ip_event(ctx, MG_IP_LOCAL_OUT, false);
}

SEC("netfilter")
int ip_post_routing(struct bpf_nf_ctx *ctx)
{
	FLOOR_RETURN(NF_ACCEPT);
	return ip_event(ctx, MG_IP_POST_ROUTING, false);
}

SEC("netfilter")
int ip_pre_routing(struct bpf_nf_ctx *ctx)
{
	FLOOR_RETURN(NF_ACCEPT);
	return ip_event(ctx, MG_IP_PRE_ROUTING, true);
}

SEC("netfilter")
int ip_local_in(struct bpf_nf_ctx *ctx)
{
	FLOOR_RETURN(NF_ACCEPT);
	return ip_event(ctx, MG_IP_LOCAL_IN, true);
}

/* ---- layers: qdisc, dev, drop -------------------------------------------- */

/* Common filter + identity for skb-based events. */
static __always_inline bool skb_wanted(const struct sk_buff *skb, bool rx, __u64 *cookie, bool pf)
{
	__u64 sk;
	*cookie = skb_cookie(skb, &sk);
	if (pf && pf_len && !pf_skb(skb, rx ? PF_AT_DATA : PF_AT_NH))
		return false;
	if (!need_parse())
		return true;
	struct pkt_info pi = {};
	if (rx)
		parse_skb_rx(skb, &pi);
	else
		parse_skb_tx(skb, &pi);
	__u32 ns = skb_netns(skb);
	if (!pi.ok || !(pi.frag_off & (IP_MF | IP_OFFSET)))
		return pkt_traced(*cookie, sk, &pi, rx, ns);
	/* IP fragments: the first one is judged by its ports and vouches for
	 * the rest of its datagram, which carry none (its socket's own skb
	 * vouches too). */
	struct frag_key fk = {};
	frag_key_of(&pi, &fk, rx, ns);
	if (pi.frag_off & IP_OFFSET)
		return bpf_map_lookup_elem(&frag_socks, &fk) != NULL ||
		       (*cookie && pkt_traced(*cookie, sk, &pi, rx, ns));
	if (!pkt_traced(*cookie, sk, &pi, rx, ns))
		return false;
	bpf_map_update_elem(&frag_socks, &fk, cookie, BPF_ANY);
	return true;
}

static __always_inline void qdisc_event(struct Qdisc *q, const struct sk_buff *skb, __u16 kind,
					bool pf)
{
	__u64 cookie;
	if (!skb || !skb_wanted(skb, false, &cookie, pf))
		return;
	struct mg_qdisc *r;
	if (!RESERVE(r, sizeof(*r), kind))
		return;
	fill_hdr(&r->hdr, kind, 0);
	r->cookie = cookie;
	r->pkt_id = pkt_id(skb, PKT_TX);
	r->ifindex = BPF_CORE_READ(q, dev_queue, dev, ifindex);
	r->len = BPF_CORE_READ(skb, len);
	r->qlen = BPF_CORE_READ(q, q.qlen);
	r->handle = BPF_CORE_READ(q, handle);
	submit(r);
}

PF_PROG("tp_btf/qdisc_enqueue", qdisc_enq, struct Qdisc *q, const struct netdev_queue *txq,
	struct sk_buff *skb)
{
	FLOOR_RETURN(0);
	qdisc_event(q, skb, MG_QDISC_ENQ, pf);
	return 0;
}

PF_PROG("tp_btf/qdisc_dequeue", qdisc_deq, struct Qdisc *q, const struct netdev_queue *txq,
	int packets, struct sk_buff *skb)
{
	FLOOR_RETURN(0);
	qdisc_event(q, skb, MG_QDISC_DEQ, pf);
	return 0;
}

/* A TCP client's flow is complete only once connect() has chosen its port,
 * after the SYN_SENT state change: take it from its SYN, so that the SYN-ACK
 * is attributed when it arrives. */
static __always_inline void track_connecting(const struct sk_buff *skb)
{
	struct sock *s = skb->sk;
	if (!s || s->__sk_common.skc_state != TCP_SYN_SENT)
		return;
	__u64 cookie = sk_key(s, s->__sk_common.skc_cookie.counter);
	if (!cookie)
		return;
	if (filter_tasks || tuple_filtered()) {
		__u8 *seen = bpf_map_lookup_elem(&socks, &cookie);
		if (!seen || !(*seen & SOCK_TRACED))
			return;
	}
	struct sk_tuple t = {};
	read_sk_tuple(s, &t);
	track_flow(&t, cookie, addr_of(s));
}

/* record --snaplen: the kernel's direct-map base (page_offset_base), found
 * once: 0 = not yet, 1 = not found (fragments are then not read).
 *
 * tp_btf programs cannot call bpf_skb_load_bytes, so a fragment's page is
 * turned into its address as page_address() does: its frame number from its
 * place in the vmemmap array, then that frame's place in the direct map. Both
 * bases are randomised in steps of 1 GiB (KASLR) and neither can be read here:
 * page_offset_base and vmemmap_base are data symbols that /proc/kallsyms and
 * BTF need not list (not on 6.18 without CONFIG_KALLSYMS_ALL). So:
 * - vmemmap_base is the page pointer rounded down to 1 GiB, as long as every
 *   frame number times sizeof(struct page) stays below 1 GiB: user space turns
 *   fragments off on hosts with RAM above 32 GiB (see recorder/frames.rs);
 * - page_offset_base is the 1 GiB step below a direct-map address (the skb's
 *   head) at which the page user space marked (frame `frag_pfn`) shows its mark. */
__u64 frag_pob = 0;

#define FRAG_GIB (1ULL << 30)
#define FRAG_PHYS_STEPS 32 /* RAM below 32 GiB */
#define FRAG_MAX 17        /* MAX_SKB_FRAGS */

/* The 16 bytes of skb_frag_t: struct bio_vec (bv_page, bv_len, bv_offset) on
 * 6.1, struct skb_frag (netmem, len, offset) since 6.8: the same layout. */
struct frag_raw {
	__u64 page; /* struct page *, or a netmem_ref whose bit 0 marks a net_iov */
	__u32 len;
	__u32 off;
};

static __always_inline __u64 frag_base(const void *direct)
{
	__u64 pob = frag_pob;
	if (pob)
		return pob;
	__u64 top = (__u64)direct & ~(FRAG_GIB - 1);
	pob = 1;
	for (int i = 0; i < FRAG_PHYS_STEPS; i++) {
		__u64 c = top - (__u64)i * FRAG_GIB;
		__u64 got[2] = {};
		if (bpf_probe_read_kernel(got, sizeof(got), (void *)(c + (frag_pfn << 12))))
			continue;
		if (got[0] == frag_mark[0] && got[1] == frag_mark[1]) {
			pob = c;
			break;
		}
	}
	frag_pob = pob;
	return pob;
}

/* Appends the bytes of the skb's page fragments after its linear part, up to
 * `want` in all; returns the bytes now in b->data. The skb's frag_list (GRO
 * on receive) is not read. */
static __always_inline __u32 frame_frags(const struct sk_buff *skb, struct frame_buf *b,
					 __u32 have, __u32 want)
{
	unsigned char *head = skb->head;
	struct skb_shared_info *sh = (void *)(head + skb->end);
	__u8 nr = 0;
	if (bpf_core_read(&nr, sizeof(nr), &sh->nr_frags) || !nr)
		return have;
	__u64 pob = frag_base(head);
	if (pob == 1)
		return have;
	__u64 page_size = bpf_core_type_size(struct page);
	for (int i = 0; i < FRAG_MAX; i++) {
		if (i >= nr || have >= want)
			break;
		struct frag_raw f;
		if (bpf_probe_read_kernel(&f, sizeof(f), (void *)&sh->frags[i]))
			break;
		if (f.page & 1)
			break;
		__u64 pfn = (f.page & (FRAG_GIB - 1)) / page_size;
		__u64 addr = pob + (pfn << 12) + f.off;
		__u32 take = f.len;
		if (take > want - have)
			take = want - have;
		if (take > MG_SNAPLEN_MAX)
			take = MG_SNAPLEN_MAX;
		__u32 at = have & (MG_SNAPLEN_MAX - 1);
		barrier_var(take);
		if (!take || bpf_probe_read_kernel(b->data + at, take, (void *)addr))
			break;
		have += take;
	}
	return have;
}

/* record --snaplen: the first `snaplen` bytes of the frame from its link
 * header, the skb's linear part then its page fragments; same time, packet id
 * and ifindex as the dev record `d` just written. */
static __always_inline void frame_event(const struct sk_buff *skb, const struct mg_dev *d, bool rx)
{
	__u32 slot = rx ? 1 : 0;
	struct frame_buf *b = bpf_map_lookup_elem(&frame_bufs, &slot);
	if (!b)
		return;
	unsigned char *head = skb->head;
	unsigned char *data = skb->data;
	__u32 linear = skb->len - skb->data_len;
	unsigned char *start = data;
	if (rx) {
		/* The link header is already pulled: start there when it is in reach. */
		__u16 mh = skb->mac_header;
		__u64 off = (__u64)data - (__u64)head;
		if (mh != (__u16)~0U && off > mh && off - mh <= 64) {
			start = head + mh;
			linear += off - mh;
		}
	}
	__u32 n = snaplen;
	if (n > d->len)
		n = d->len;
	if (n > linear)
		n = linear;
	if (n > MG_SNAPLEN_MAX)
		n = MG_SNAPLEN_MAX;
	__u32 want = snaplen;
	if (want > d->len)
		want = d->len;
	if (want > MG_SNAPLEN_MAX)
		want = MG_SNAPLEN_MAX;
	if (bpf_probe_read_kernel(b->data, n, start))
		n = 0;
	else if (n < want && n == linear && frag_pfn) {
		n = frame_frags(skb, b, n, want);
		/* n <= want <= MG_SNAPLEN_MAX; older verifiers (6.1) lose the
		 * bound through the loop and refuse the ring output's size. */
		barrier_var(n);
		n &= 2 * MG_SNAPLEN_MAX - 1;
	}
	b->f.hdr = d->hdr;
	b->f.hdr.kind = MG_FRAME;
	b->f.hdr.flags = 0;
	b->f.pkt_id = d->pkt_id;
	b->f.ifindex = d->ifindex;
	b->f.len = d->len;
	b->f.caplen = n;
	b->f.dev_kind = d->hdr.kind;
	b->f._pad0 = 0;
	struct mg_cpu_stats *st = stats();
	void *ring = my_ring();
	if (!st)
		return;
	if (ring)
		flush_lost(st, ring);
	__u64 size = sizeof(b->f) + n;
	if (size > sizeof(*b))
		return;
	__u64 queued = ring ? bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA) : 0;
	if (!ring || bpf_ringbuf_output(ring, b, size,
					queued >= wakeup_bytes ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP))
		count_lost(st, MG_FRAME);
}

static __always_inline void dev_event(const struct sk_buff *skb, __u16 kind, __u32 ifindex,
				      __u32 len, int rc, bool rx, bool read_skb, bool pf)
{
	__u64 cookie = 0;
	__u32 hflags = 0;
	if (read_skb && !skb_wanted(skb, rx, &cookie, pf))
		return;
	if (read_skb && track_all_flows) {
		/* Forwarded through another namespace (a router; veth keeps the
		 * sender's socket on the skb): not its socket's packet there. */
		/* The namespaces compared by their struct net (one per
		 * namespace): the inode number is read only for a flow lookup. */
		const struct net_device *dv = skb->dev;
		const struct net *dnet = dv ? dv->nd_net.net : NULL;
		struct sock *s = skb->sk;
		if (s && dnet && s->__sk_common.skc_net.net != dnet) {
			cookie = 0;
			hflags = MG_F_OTHER_NETNS;
		}
		/* A packet sent without a socket cookie (an IPv6 SYN-ACK from its
		 * request socket, a reset): the socket of its flow, as on receive. */
		if (!cookie && !hflags) {
			struct pkt_info pi = {};
			parse_skb_tx(skb, &pi);
			bool exact;
			struct flow_val fvb;
			__u32 ns = dnet ? dnet->ns.inum : 0;
			struct flow_val *fv = pi.ok ? flow_of(&pi, false, &exact, ns, &fvb) : NULL;
			if (fv) {
				cookie = fv->cookie;
			} else if (!s) {
				/* No socket and no flow here: forwarded (received
				 * on a device of this namespace, now sent on): not
				 * the socket's own transmission wherever it is. */
				__u64 a = addr_of(skb);
				struct pkt_slot *slot = pkt_slot(a);
				if (slot && slot->skb == a && (slot->flags & PKT_RECEIVED))
					hflags = MG_F_OTHER_NETNS;
			}
		}
	}
	__u64 id = pkt_id(skb, kind == MG_DEV_START_XMIT ? PKT_XMIT : kind == MG_DEV_QUEUE ? PKT_TX : PKT_FOLLOW);
	if (kind == MG_DEV_START_XMIT && track_all_flows)
		track_connecting(skb);
	struct mg_dev d, *r; /* d: every byte written below */
	if (snaplen && kind == MG_DEV_START_XMIT)
		r = &d;
	else if (!RESERVE(r, sizeof(*r), kind)) {
		return;
	}
	fill_hdr(&r->hdr, kind, hflags);
	r->cookie = cookie;
	r->pkt_id = id;
	r->ifindex = ifindex;
	r->len = len;
	r->rc = rc;
	r->ethertype = read_skb ? bpf_ntohs(skb->protocol) : 0;
	r->_pad0 = 0;
	if (snaplen && kind == MG_DEV_START_XMIT) {
		send_direct(r, sizeof(*r), kind);
		frame_event(skb, r, false);
		return;
	}
	submit(r);
}

PF_PROG("tp_btf/net_dev_queue", dev_queue, struct sk_buff *skb)
{
	FLOOR_RETURN(0);
	dev_event(skb, MG_DEV_QUEUE, skb->dev->ifindex, skb->len, 0,
		  false, true, pf);
	return 0;
}

PF_PROG("tp_btf/net_dev_start_xmit", dev_start_xmit, const struct sk_buff *skb,
	const struct net_device *dev)
{
	FLOOR_RETURN(0);
	dev_event(skb, MG_DEV_START_XMIT, dev->ifindex, skb->len, 0,
		  false, true, pf);
	return 0;
}

/* After the driver took the skb it may already be freed: use only the
 * tracepoint's own arguments, and the packet id remembered by address. */
PF_PROG("tp_btf/net_dev_xmit", dev_xmit, struct sk_buff *skb, int rc, struct net_device *dev,
	unsigned int len)
{
	FLOOR_RETURN(0);
	if (need_parse()) {
		/* Only for a packet recorded at net_dev_start_xmit (its address may
		 * since be another skb's: it is not read). */
		__u64 a = addr_of(skb);
		struct pkt_slot *slot = pkt_slot(a);
		if (!slot || slot->skb != a || !(slot->flags & PKT_IN_DRIVER))
			return 0;
		slot->flags &= ~PKT_IN_DRIVER;
	}
	dev_event(skb, MG_DEV_XMIT, dev->ifindex, len, rc, false, false, pf);
	return 0;
}

/* A TCP segment received by a socket that is not in ESTABLISHED (where
 * tcp_probe does not fire): recorded as tcp_rcv from its TCP header, with the
 * same fields tcp_probe gives (len: TCP header + payload). */
static __always_inline void tcp_rx_other_state(const struct sk_buff *skb, const struct flow_val *fv,
					       const struct pkt_info *pi, __u32 l3len, __u64 id)
{
	if (!fv->sk || !fv->cookie)
		return;
	/* Only segments that carry sequence space: data, or a FIN. (Pure ACKs
	 * in the closing states move no bytes.) Checked first: it needs no
	 * read of the socket. */
	__u32 len = l3len > pi->l4_off ? l3len - pi->l4_off : 0;
	if (len <= pi->doff && !(pi->tcp_flags & 0x01))
		return;
	const struct sock *sk = (const struct sock *)fv->sk;
	__u64 cookie;
	__u8 st;
	if (bpf_ksym_exists(bpf_rdonly_cast)) {
		/* Direct loads (6.2+): no helper call per received segment. */
		const struct sock *s = bpf_core_cast(sk, struct sock);
		cookie = s->__sk_common.skc_cookie.counter;
		st = s->__sk_common.skc_state;
	} else {
		/* 6.1 has no bpf_rdonly_cast: probe reads. */
		cookie = BPF_CORE_READ(sk, __sk_common.skc_cookie.counter);
		st = BPF_CORE_READ(sk, __sk_common.skc_state);
	}
	/* The socket may have been freed since: its cookie tells. */
	cookie = sk_key(sk, cookie);
	if (cookie != fv->cookie)
		return;
	if (st == TCP_ESTABLISHED || st == TCP_LISTEN || st == TCP_NEW_SYN_RECV || st == TCP_CLOSE ||
	    st == TCP_TIME_WAIT)
		return;
	struct mg_tcp *r = tcp_reserve(MG_TCP_RCV);
	if (!r)
		return;
	r->cookie = fv->cookie;
	r->pkt_id = id;
	r->len = len;
	r->seq = pi->seq;
	r->ack = pi->ack;
	r->arg = pi->tcp_flags;
	if (pi->tcp_flags & 0x01)
		r->arg |= (__u32)pi->doff << 8;
	if (tcp_state) {
		if (bpf_ksym_exists(bpf_rdonly_cast))
			fill_snap_tp(bpf_core_cast(sk, struct tcp_sock), &r->snap);
		else
			fill_snap_probe(sk, &r->snap);
	}
	submit(r);
}

/*
 * A packet received from a driver. Its socket is found by its flow (the skb
 * has none yet, or still the sender's over veth and loopback), so that it is
 * attributed wherever the socket's network namespace is; later IP fragments,
 * which carry no ports, by their datagram's first fragment.
 */
static __always_inline void rx_event(struct sk_buff *skb, bool rec_dev, bool rec_tcp, bool pf)
{
	if (pf && pf_len && !pf_skb(skb, PF_AT_DATA))
		return;
	__u64 cookie = 0;
	struct pkt_info pi = {};
	parse_skb_rx(skb, &pi);
	struct flow_val *fv = NULL, fvb;
	bool exact = false, traced;
	__u32 ns = dev_netns(skb->dev);
	/* A later fragment follows its datagram's first (frag_socks). One call
	 * of pkt_traced for every packet: 6.1's verifier gives up (1M
	 * instructions) on this program with two inlined copies of it. */
	bool later_frag = pi.ok && (pi.frag_off & IP_OFFSET);
	__u64 *frag_cookie = NULL;
	if (later_frag) {
		struct frag_key fk = {};
		frag_key_of(&pi, &fk, true, ns);
		frag_cookie = bpf_map_lookup_elem(&frag_socks, &fk);
	}
	if (frag_cookie) {
		cookie = *frag_cookie;
		traced = true;
	} else if (need_parse()) {
		/* The skb's own socket matters only to the filters; for a later
		 * fragment whose first was not seen (yet) the sender's socket,
		 * still on the skb over veth and loopback, may vouch. */
		__u64 sk;
		__u64 skb_ck = skb_cookie(skb, &sk);
		traced = (!later_frag || skb_ck) && pkt_traced(skb_ck, sk, &pi, true, ns);
	} else {
		traced = true;
	}
	if (traced && pi.ok && !later_frag) {
		fv = flow_of(&pi, true, &exact, ns, &fvb);
		if (fv)
			cookie = fv->cookie;
		/* A first fragment vouches for the rest of its datagram:
		 * whenever it was recorded under a filter (traced by the
		 * sender's socket, its receiver's unknown: cookie 0), and
		 * whenever its socket is known. */
		if ((pi.frag_off & IP_MF) && (cookie || need_parse())) {
			struct frag_key fk = {};
			frag_key_of(&pi, &fk, true, ns);
			bpf_map_update_elem(&frag_socks, &fk, &cookie, BPF_ANY);
		}
	}
	if (!traced)
		return;
	__u64 id = pkt_id(skb, PKT_RECV);
	struct mg_dev d, *r; /* d: every byte written below */
	bool frame = false;
	if (rec_dev) {
		bool ok = true;
		if (snaplen)
			r = &d;
		else
			ok = RESERVE(r, sizeof(*r), MG_DEV_RX);
		if (ok) {
			fill_hdr(&r->hdr, MG_DEV_RX, 0);
			r->cookie = cookie;
			r->pkt_id = id;
			r->ifindex = skb->dev->ifindex;
			/* The driver's frame, as on the transmit side and in a
			 * capture: the link header is already pulled here. */
			__u32 len = skb->len;
			__u16 mh = skb->mac_header;
			__u64 data_off = (__u64)skb->data - (__u64)skb->head;
			if (mh != (__u16)~0U && data_off > mh && data_off - mh <= 64)
				len += data_off - mh;
			r->len = len;
			r->rc = 0;
			r->ethertype = bpf_ntohs(skb->protocol);
			r->_pad0 = 0;
			if (snaplen) {
				send_direct(r, sizeof(*r), MG_DEV_RX);
				frame = true;
			} else {
				submit(r);
			}
		}
	}
	if (rec_tcp && fv && exact && pi.protocol == IPPROTO_TCP) {
		__u32 l3len = pi.tot_len ? pi.tot_len : skb->len;
		tcp_rx_other_state(skb, fv, &pi, l3len, id);
	}
	/* Last: 6.1's verifier cannot follow the frame copy's states through the
	 * batch code of the TCP record above (1M instructions). */
	if (frame)
		frame_event(skb, &d, true);
}

PF_PROG("tp_btf/netif_receive_skb", dev_rx, struct sk_buff *skb)
{
	FLOOR_RETURN(0);
	rx_event(skb, true, tcp_rx_other, pf);
	return 0;
}

/* Loaded with the tcp layer when the dev layer is off: the same look at
 * received TCP segments, recording only those tcp_probe misses. */
PF_PROG("tp_btf/netif_receive_skb", tcp_rx_seg, struct sk_buff *skb)
{
	FLOOR_RETURN(0);
	if (skb->protocol != bpf_htons(ETH_P_IP) && skb->protocol != bpf_htons(ETH_P_IPV6))
		return 0;
	rx_event(skb, false, true, pf);
	return 0;
}

static __always_inline void forget_pkt(const struct sk_buff *skb)
{
	__u64 a = addr_of(skb);
	struct pkt_slot *slot = pkt_slot(a);
	if (slot && slot->skb == a)
		slot->skb = 0;
}

static __always_inline void drop_event(struct sk_buff *skb, void *location, __u32 reason, bool pf)
{
	__u64 cookie;
	if (skb_wanted(skb, false, &cookie, pf)) {
		struct mg_drop *r;
		if (RESERVE(r, sizeof(*r), MG_DROP)) {
			fill_hdr(&r->hdr, MG_DROP, 0);
			r->cookie = cookie;
			r->pkt_id = pkt_id(skb, PKT_FOLLOW);
			r->location = (__u64)location;
			r->ifindex = BPF_CORE_READ(skb, dev, ifindex);
			r->reason = reason;
			r->len = BPF_CORE_READ(skb, len);
			r->ethertype = bpf_ntohs(BPF_CORE_READ(skb, protocol));
			r->_pad0 = 0;
			submit(r);
		}
	}
	forget_pkt(skb);
}

PF_PROG("tp_btf/kfree_skb", drop_kfree_skb, struct sk_buff *skb, void *location,
	enum skb_drop_reason reason)
{
	FLOOR_RETURN(0);
	drop_event(skb, location, reason, pf);
	return 0;
}

/* kfree_skb before 5.17: no drop reason (recorded as 0). */
PF_PROG("tp_btf/kfree_skb", drop_kfree_skb_2arg, struct sk_buff *skb, void *location)
{
	FLOOR_RETURN(0);
	drop_event(skb, location, 0, pf);
	return 0;
}

/* Loaded with any packet layer, recording nothing: ends a packet's identity. */
SEC("tp_btf/kfree_skb")
int BPF_PROG(pkt_free, struct sk_buff *skb)
{
	FLOOR_RETURN(0);
	forget_pkt(skb);
	return 0;
}

SEC("tp_btf/consume_skb")
int BPF_PROG(pkt_consume, struct sk_buff *skb)
{
	FLOOR_RETURN(0);
	forget_pkt(skb);
	return 0;
}

/* ---- layer: sched --------------------------------------------------------- */

/* task_traced() for a task other than the current one (the other side of a
 * context switch, the task woken, the parent of a fork). */
static __always_inline bool task_struct_traced(struct task_struct *t)
{
	if (!filter_tasks)
		return true;
	if (filter_pid) {
		__u32 tgid = t->tgid;
		if (!bpf_map_lookup_elem(&traced_tgids, &tgid))
			return false;
	}
	if (filter_comm) {
		char comm[16];
		if (bpf_probe_read_kernel(comm, sizeof(comm), t->comm) || !comm_equal(comm))
			return false;
	}
	if (cgroup_filter && t->cgroups->dfl_cgrp->kn->id != cgroup_filter)
		return false;
	return true;
}

static __always_inline void switch_event(struct task_struct *prev, struct task_struct *next,
					 unsigned int prev_state)
{
	__u32 ptgid = BPF_CORE_READ(prev, tgid), ntgid = BPF_CORE_READ(next, tgid);
	if (!task_struct_traced(prev) && !task_struct_traced(next))
		return;
	struct mg_sched_switch *r;
	if (!RESERVE(r, sizeof(*r), MG_SCHED_SWITCH))
		return;
	fill_hdr(&r->hdr, MG_SCHED_SWITCH, 0);
	r->prev_tid = BPF_CORE_READ(prev, pid);
	r->prev_tgid = ptgid;
	r->next_tid = BPF_CORE_READ(next, pid);
	r->next_tgid = ntgid;
	r->prev_state = prev_state;
	BPF_CORE_READ_STR_INTO(&r->prev_comm, prev, comm);
	BPF_CORE_READ_STR_INTO(&r->next_comm, next, comm);
	submit(r);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	FLOOR_RETURN(0);
	switch_event(prev, next, prev_state);
	return 0;
}

/* task_struct's state before 5.14 (then __state). */
struct task_struct___state {
	long state;
};

/* sched_switch before 5.18: no prev_state argument; the task's own state,
 * which the tracepoint's argument is a copy of. */
SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch_3arg, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	FLOOR_RETURN(0);
	unsigned int st = 0;
	if (bpf_core_field_exists(struct task_struct___state, state))
		st = BPF_CORE_READ((struct task_struct___state *)prev, state);
	else
		st = BPF_CORE_READ(prev, __state);
	switch_event(prev, next, st);
	return 0;
}

static __always_inline void task_event(struct task_struct *t, __u16 kind, int arg)
{
	struct mg_task *r;
	if (!RESERVE(r, sizeof(*r), kind))
		return;
	fill_hdr(&r->hdr, kind, 0);
	r->tid = BPF_CORE_READ(t, pid);
	r->tgid = BPF_CORE_READ(t, tgid);
	r->arg = arg;
	r->_pad0 = 0;
	BPF_CORE_READ_STR_INTO(&r->comm, t, comm);
	submit(r);
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(sched_wakeup, struct task_struct *p)
{
	FLOOR_RETURN(0);
	if (!task_struct_traced(p))
		return 0;
	task_event(p, MG_SCHED_WAKEUP, BPF_CORE_READ(p, wake_cpu));
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(sched_exit, struct task_struct *p)
{
	FLOOR_RETURN(0);
	if (!task_struct_traced(p))
		return 0;
	task_event(p, MG_SCHED_EXIT, BPF_CORE_READ(p, exit_code));
	return 0;
}

/* Follows children of traced processes (always loaded with a pid filter);
 * records the fork when the sched layer is on. */
const volatile bool record_fork = false;

SEC("tp_btf/sched_process_fork")
int BPF_PROG(sched_fork, struct task_struct *parent, struct task_struct *child)
{
	FLOOR_RETURN(0);
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	__u32 ctgid = BPF_CORE_READ(child, tgid);
	bool traced = task_struct_traced(parent);
	if (filter_pid && traced && ctgid != ptgid) {
		__u8 one = 1;
		bpf_map_update_elem(&traced_tgids, &ctgid, &one, BPF_ANY);
	}
	if (record_fork && traced)
		task_event(child, MG_SCHED_FORK, ptgid);
	return 0;
}

/* ---- socket cookies ------------------------------------------------------- */

/* Attached to the cgroup v2 root with packet layers: gives each socket created
 * while recording its cookie at creation. The kernel assigns cookies lazily and
 * a tracing program may not assign one from a packet's socket, so without this
 * a socket's first packets (sent or received before its first announced event,
 * e.g. a UDP receiver's first datagram) would carry cookie 0. Always allows. */
SEC("cgroup/sock_create")
int sock_cookie_at_create(struct bpf_sock *ctx)
{
	FLOOR_RETURN(1);
	bpf_get_socket_cookie(ctx);
	return 1;
}

/* ---- the same records from other hooks (older kernels) -------------------- */

#include "hooks_fn.bpf.c"
#include "funcs.bpf.c"
