// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Writing records: the header every record starts with (clock, CPU, pid/tid),
 * loss accounting, the per-CPU batches and the tick that sends a quiet CPU's
 * batch, and RESERVE/submit, the one way a program gets room for a record.
 * Included by record.bpf.c after state.bpf.c.
 */

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

/* Direct records. The batch's nesting rule holds where a program runs to its
 * end once it starts on a CPU: tracepoints, kprobes and softirqs. On a kernel
 * that preempts tasks in the kernel (preempt=full or lazy, PREEMPT_RT), the
 * netfilter hooks of a task's own sends and fentry/fexit programs run with
 * preemption on: a task preempted between RESERVE and submit leaves the batch
 * to the next task's programs (which write into nested slots, or take the
 * batch back when preempted in turn) and may resume on another CPU, so
 * records are lost or sent twice, uncounted (a 6.12 guest booted with
 * preempt=full: 299,998 LOCAL_OUT and 300,002 LOCAL_IN records for 300,000
 * datagrams). User space sets this where the kernel may preempt them: each
 * record is then reserved in this CPU's ring and committed on its own, which
 * holds across preemption (the ring takes its lock for the reservation; the
 * commit finds the record wherever the task resumed). Loss is then reported
 * by the tick alone (programs only count it), see batch_tick. */
const volatile bool direct_records = false;

/* Emit the LOST record owed for this CPU, if any: loss is reported where it
 * happened in the stream, as soon as the ring has room again. */
static __always_inline void report_lost(struct mg_cpu_stats *st, void *ring)
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

/* The same from a program: with direct records (a kernel that may preempt
 * programs) only the tick reports loss, see direct_records. */
static __always_inline void flush_lost(struct mg_cpu_stats *st, void *ring)
{
	if (!direct_records)
		report_lost(st, ring);
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
 * a tick, well within the drain's one-second block cut. At the end, once
 * every program is stopped (mg_stopped, prog.h), user space reads what is
 * left in each batch.
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

/* Room for a record of `size` bytes in this CPU's ring (direct_records),
 * NULL if lost (counted). */
static __always_inline __attribute__((unused)) void *direct_reserve(__u32 size, __u32 kind)
{
	void *ring = my_ring();
	void *r = ring ? bpf_ringbuf_reserve(ring, size, 0) : NULL;
	if (!r) {
		struct mg_cpu_stats *st = stats();
		if (st)
			count_lost(st, kind);
	}
	return r;
}

/* Commit the record RESERVE returned. */
static __always_inline void submit(void *rec)
{
	if (direct_records) {
		void *ring = my_ring();
		bpf_ringbuf_submit(rec, ring ? wakeup_flag(ring) : 0);
		return;
	}
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
MG_CTX_PROG("perf_event", batch_tick, 0, void *ctx)
{
	if (direct_records) {
		/* No batch; the loss owed, reported by the tick alone: programs
		 * that may be preempted must not report it (two reading the same
		 * count would report it twice). The tick runs to its end. */
		struct mg_cpu_stats *st = stats();
		void *ring = my_ring();
		if (st && ring)
			report_lost(st, ring);
		return 0;
	}
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

/* Cost profile builds (for measuring the hot path; never shipped): MAGNET_BPF_CFLAGS=-DMG_PROF=N.
 * bench/bpf-prog-profile.py splits each program's cost (kernel BPF statistics)
 * by the differences between these builds:
 *   9 = the floor: every program returns at its entry (prog.h), on
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
#define RESERVE(ptr, size, kind_)                                                 \
	({                                                                        \
		(ptr) = direct_records ? direct_reserve((size), (kind_))          \
				       : batch_reserve((size), (kind_));          \
		(ptr) != NULL;                                                    \
	})
#endif
