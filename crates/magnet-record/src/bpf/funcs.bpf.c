// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * record --funcs: the entry of every selected kernel function that takes an
 * skb (magnet funcs' selection; magnet-funcs picks the functions and the
 * parameter that holds the skb). One program per parameter position, as a
 * kprobe (one per function) or a kprobe-multi (one link for all of them);
 * user space loads the set the kernel supports.
 *
 * A record names the function and its caller by address (user space puts the
 * names in the trace header), and the packet by the recorder's packet id when
 * it has one (after LOCAL_OUT on transmit, after the driver on receive) and by
 * its skb address and footprint always. Kept: packets that have an id, and any
 * skb met in a traced task (the sending path before the packet's birth).
 * A clone of an fclone pair (TCP's transmit copy) names its parent skb, so
 * that the parent's functions (tcp_connect -> __tcp_transmit_skb) join the
 * packet the clone becomes. Other copies (skb_clone of a non-fclone skb,
 * pskb_copy, skb_copy, ...) are seen by entry and return probes on the copying
 * functions (func_copy*): the new skb names its parent too, and takes the
 * parent's packet id when the parent has one and it has none (a packet tap's
 * clone, a copy sent again).
 *
 * Included at the end of record.bpf.c: the maps and helpers there are shared.
 */

/* record --func-exits: return probes on the same functions. func_open keeps,
 * per (task, function) (the CPU for the idle task), a stack of the calls in
 * progress: its depth, and one bit per depth telling whether that call's entry
 * was recorded. A return pops its own depth and is recorded only when its
 * entry was: a recursive call whose entry was not recorded (no skb, or an skb
 * of no packet) no longer takes the return of the recorded call around it.
 * Calls made while no recorded one is open are not counted (nothing to pair). */
const volatile bool func_exits = false;

struct func_key {
	__u64 task;
	__u64 ip;
};

struct func_stack {
	__u32 depth;
	__u32 _pad;
	/* Bit d: the entry at depth d (0 = outermost) was recorded. */
	__u64 recorded;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct func_key);
	__type(value, struct func_stack);
} func_open SEC(".maps");

static __always_inline __u64 func_task(void)
{
	__u64 t = bpf_get_current_pid_tgid();
	if ((__u32)t == 0)
		return (1ULL << 63) | bpf_get_smp_processor_id();
	return t;
}

/* One more call of `ip` on this task, recorded or not. */
static __always_inline void func_push(__u64 ip, bool recorded)
{
	struct func_key k = { .task = func_task(), .ip = ip };
	struct func_stack *st = bpf_map_lookup_elem(&func_open, &k);
	if (!st) {
		if (!recorded)
			return;
		struct func_stack one = { .depth = 1, .recorded = 1 };
		bpf_map_update_elem(&func_open, &k, &one, BPF_ANY);
		return;
	}
	__u32 d = st->depth;
	if (d < 64 && recorded)
		st->recorded |= 1ULL << d;
	st->depth = d + 1;
}

static __always_inline bool func_record(struct pt_regs *ctx, const struct sk_buff *skb, __u64 ip);

/* ---- copies ---------------------------------------------------------------
 * The copying functions (skb_clone, __pskb_copy_fclone, skb_copy, ...) take
 * the parent as their first parameter and return the new skb. copy_open holds
 * the parent from entry to return, per (task, function); skb_parents, per new
 * skb, its parent, its head (a reused sk_buff has another) and its parent's
 * packet id. */
struct copy_of {
	__u64 parent;
	__u64 head;
	/* skb->cloned of the new skb (1 for a clone; a fresh sk_buff reusing
	 * the address and head of a freed clone has 0). */
	__u64 cloned;
	/* The parent's packet id when the copy was made (the parent may be
	 * gone before the copy's first record: a packet tap's clone). */
	__u64 id;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct func_key);
	__type(value, __u64);
} copy_open SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct copy_of);
} skb_parents SEC(".maps");

static __always_inline int copy_entry(struct pt_regs *ctx)
{
	if (mg_stopped) /* the recording has ended (prog.h) */
		return 0;
	__u64 parent = PT_REGS_PARM1(ctx);
	if (!parent)
		return 0;
	struct func_key k = { .task = func_task(), .ip = bpf_get_func_ip(ctx) };
	bpf_map_update_elem(&copy_open, &k, &parent, BPF_ANY);
	return 0;
}

static __always_inline int copy_exit(struct pt_regs *ctx)
{
	if (mg_stopped) /* the recording has ended (prog.h) */
		return 0;
	struct func_key k = { .task = func_task(), .ip = bpf_get_func_ip(ctx) };
	__u64 *p = bpf_map_lookup_elem(&copy_open, &k);
	if (!p)
		return 0;
	__u64 parent = *p;
	bpf_map_delete_elem(&copy_open, &k);
	const struct sk_buff *child = (const struct sk_buff *)PT_REGS_RC(ctx);
	/* skb_expand_head returns its own skb when it had room. */
	if (!child || (__u64)child == parent)
		return 0;
	struct copy_of c = {
		.parent = parent,
		.head = (__u64)BPF_CORE_READ(child, head),
		.cloned = BPF_CORE_READ_BITFIELD_PROBED(child, cloned),
	};
	__u64 parent_head = (__u64)BPF_CORE_READ((const struct sk_buff *)parent, head);
	struct pkt_slot *ps = pkt_slot(parent);
	if (ps && ps->skb == parent && ps->head == parent_head)
		c.id = ps->id;
	__u64 a = (__u64)child;
	bpf_map_update_elem(&skb_parents, &a, &c, BPF_ANY);
	return 0;
}

SEC("kprobe")
int func_copy(struct pt_regs *ctx)
{
	return copy_entry(ctx);
}

SEC("kprobe.multi")
int func_copy_multi(struct pt_regs *ctx)
{
	return copy_entry(ctx);
}

SEC("kretprobe")
int func_copy_exit(struct pt_regs *ctx)
{
	return copy_exit(ctx);
}

SEC("kretprobe.multi")
int func_copy_exit_multi(struct pt_regs *ctx)
{
	return copy_exit(ctx);
}

static __always_inline int func_event(struct pt_regs *ctx, const struct sk_buff *skb)
{
	if (mg_stopped) /* the recording has ended (prog.h) */
		return 0;
	__u64 ip = bpf_get_func_ip(ctx);
	bool recorded = func_record(ctx, skb, ip);
	if (func_exits)
		func_push(ip, recorded);
	return 0;
}

/* Records the entry; whether it did. */
static __always_inline bool func_record(struct pt_regs *ctx, const struct sk_buff *skb, __u64 ip)
{
	if (!skb)
		return false;
	__u64 a = (__u64)skb;
	__u64 head = (__u64)BPF_CORE_READ(skb, head);
	__u64 id = 0;
	struct pkt_slot *slot = pkt_slot(a);
	if (slot && slot->skb == a && slot->head == head)
		id = slot->id;
	/* TCP's queued skbs are fclone originals: the clone sent down the stack is
	 * the second skb of the pair (skb_clone), and names it as its parent. Any
	 * other copy names the parent func_copy saw it made from. */
	__u8 fclone = BPF_CORE_READ_BITFIELD_PROBED(skb, fclone);
	__u64 parent = 0;
	if (fclone == SKB_FCLONE_CLONE) {
		parent = a - bpf_core_field_offset(struct sk_buff_fclones, skb2);
	} else {
		struct copy_of *c = bpf_map_lookup_elem(&skb_parents, &a);
		if (c && c->head == head &&
		    c->cloned == BPF_CORE_READ_BITFIELD_PROBED(skb, cloned)) {
			parent = c->parent;
			/* A copy with no packet of its own continues its parent's. */
			if (!id)
				id = c->id;
		}
	}
	if (!id && !task_traced())
		return false;
	/* --netns: a packet not recorded yet by where it is (device, else socket). */
	if (!id && netns_only) {
		__u32 ns = BPF_CORE_READ(skb, dev, nd_net.net, ns.inum);
		if (!ns)
			ns = BPF_CORE_READ(skb, sk, __sk_common.skc_net.net, ns.inum);
		if (!netns_wanted(ns))
			return false;
	}
	if (!id && filter_tasks) {
		/* A traced task's own sends only: the skb belongs to a socket, is
		 * a TCP write-queue skb (no owner until its clone goes down), or is
		 * a copy of one. */
		if (!BPF_CORE_READ(skb, sk) && fclone != SKB_FCLONE_ORIG && !parent)
			return false;
	}
	struct mg_func *r;
	if (!RESERVE(r, sizeof(*r), MG_FUNC))
		return false;
	fill_hdr(&r->hdr, MG_FUNC, 0);
	r->func = ip;
	__u64 ret = 0;
	if (func_exits) {
		/* A return probe has replaced the return address on the stack
		 * with its trampoline; the unwinder gives the real one back. */
		__u64 st[2] = {};
		if (bpf_get_stack(ctx, st, sizeof(st), 0) == sizeof(st))
			ret = st[1];
	} else {
		bpf_probe_read_kernel(&ret, sizeof(ret), (void *)PT_REGS_SP(ctx));
	}
	r->caller = ret;
	r->skb = a;
	r->pkt_id = id;
	r->len = BPF_CORE_READ(skb, len);
	struct pkt_info pi = {};
	__u16 nh = BPF_CORE_READ(skb, network_header);
	if (nh != (__u16)~0U && nh != 0 && head)
		parse_l3((void *)(head + nh), &pi);
	r->version = pi.ok ? pi.version : 0;
	r->protocol = pi.protocol;
	r->ip_id = pi.ip_id;
	r->sport = pi.sport;
	r->dport = pi.dport;
	r->tcp_flags = pi.tcp_flags;
	__builtin_memset(r->_pad0, 0, sizeof(r->_pad0));
	__builtin_memcpy(r->saddr, pi.saddr, 16);
	__builtin_memcpy(r->daddr, pi.daddr, 16);
	r->parent = parent;
	submit(r);
	return true;
}

static __always_inline int func_exit_event(struct pt_regs *ctx)
{
	if (mg_stopped) /* the recording has ended (prog.h) */
		return 0;
	struct func_key k = { .task = func_task(), .ip = bpf_get_func_ip(ctx) };
	struct func_stack *st = bpf_map_lookup_elem(&func_open, &k);
	if (!st || st->depth == 0)
		return 0;
	__u32 d = st->depth - 1;
	bool recorded = d < 64 && (st->recorded >> d) & 1;
	if (d < 64)
		st->recorded &= ~(1ULL << d);
	st->depth = d;
	if (d == 0)
		bpf_map_delete_elem(&func_open, &k);
	if (!recorded)
		return 0;
	struct mg_func_exit *r;
	if (!RESERVE(r, sizeof(*r), MG_FUNC_EXIT))
		return 0;
	fill_hdr(&r->hdr, MG_FUNC_EXIT, 0);
	r->func = k.ip;
	r->retval = PT_REGS_RC(ctx);
	submit(r);
	return 0;
}

SEC("kretprobe")
int func_exit(struct pt_regs *ctx)
{
	return func_exit_event(ctx);
}

SEC("kretprobe.multi")
int func_exit_multi(struct pt_regs *ctx)
{
	return func_exit_event(ctx);
}

/* record --funcs all: every attachable function, most of which take no skb
 * (the thesis's "full function tracing", the cost that selective
 * instrumentation avoids). A record names the function and its caller, with
 * time, CPU and task; no packet. Only in a traced task (every task when no
 * task filter is given). kprobe-multi only: one kprobe per function would be
 * tens of thousands of perf events. */
SEC("kprobe.multi")
int func_any_multi(struct pt_regs *ctx)
{
	if (mg_stopped) /* the recording has ended (prog.h) */
		return 0;
	if (!task_traced() || !task_in_netns((struct task_struct *)bpf_get_current_task()))
		return 0;
	struct mg_func *r;
	if (!RESERVE(r, sizeof(*r), MG_FUNC))
		return 0;
	__builtin_memset(r, 0, sizeof(*r));
	fill_hdr(&r->hdr, MG_FUNC, 0);
	r->func = bpf_get_func_ip(ctx);
	__u64 ret = 0;
	bpf_probe_read_kernel(&ret, sizeof(ret), (void *)PT_REGS_SP(ctx));
	r->caller = ret;
	submit(r);
	return 0;
}

#define FUNC_PROGS(n)                                                             \
	SEC("kprobe")                                                             \
	int func_skb##n(struct pt_regs *ctx)                                      \
	{                                                                         \
		return func_event(ctx, (const struct sk_buff *)PT_REGS_PARM##n(ctx)); \
	}                                                                         \
	SEC("kprobe.multi")                                                       \
	int func_skb##n##_multi(struct pt_regs *ctx)                              \
	{                                                                         \
		return func_event(ctx, (const struct sk_buff *)PT_REGS_PARM##n(ctx)); \
	}

FUNC_PROGS(1)
FUNC_PROGS(2)
FUNC_PROGS(3)
FUNC_PROGS(4)
FUNC_PROGS(5)
