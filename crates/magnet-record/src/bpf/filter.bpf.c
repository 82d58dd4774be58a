// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Which events are recorded: the task filters (-p, --comm, --cgroup), the
 * flow filters (--port, --host), the namespace filter (--netns) and the
 * pcap-filter expression.
 *
 * The task and flow filters are a few map lookups and comparisons of
 * settings; each program asks them before it builds anything.
 *
 * The pcap filter (record -f EXPR, or record 'EXPR' -- CMD) is evaluated in
 * the kernel on every packet event.
 *
 * User space compiles the expression with libpcap for raw IP packets (DLT_RAW:
 * the program starts at the IP header, which every packet hook has) and writes
 * the classic BPF instructions into pf_prog before attaching. pf_match() runs
 * them here: a classic-BPF interpreter, one instruction per bpf_loop()
 * iteration, on a copy of the packet's first PF_BUF bytes from its IP header.
 *
 * Classic BPF semantics are kept: a load past the bytes held, or a division by
 * zero, ends the program with 0 (no match). Loads past PF_BUF bytes (deep into
 * the payload) see no bytes and so do not match.
 *
 * Included by record.bpf.c after batch.bpf.c.
 */

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

/* ---- record -f EXPR ------------------------------------------------------ */

#define PF_MAX_INSNS 512 /* libpcap's programs for usual expressions: 10-100 */
#define PF_BUF 256	 /* IP + transport headers with room to spare */

/* Number of instructions in pf_prog; 0: no expression, every packet passes. */
const volatile __u32 pf_len = 0;

struct pf_insn {
	__u16 code;
	__u8 jt;
	__u8 jf;
	__u32 k;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PF_MAX_INSNS);
	__type(key, __u32);
	__type(value, struct pf_insn);
} pf_prog SEC(".maps");

struct pf_state {
	__u32 busy; /* taken by a run on this CPU (which an interrupt may nest in) */
	__u8 pkt[PF_BUF];
	__u32 caplen; /* bytes of pkt held */
	__u32 wirelen; /* the IP packet's length (BPF_LEN) */
	__u32 a, x, pc, ret;
	__u32 mem[16];
};

/* A run takes the first free slot of its CPU: a softirq can interrupt a program
 * running in process context (a sender's LOCAL_OUT) and run one itself. Nesting is
 * last in, first out, so a slot is never shared by two unfinished runs. */
#define PF_SLOTS 4
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PF_SLOTS);
	__type(key, __u32);
	__type(value, struct pf_state);
} pf_scratch SEC(".maps");

struct pf_loop_ctx {
	__u32 slot;
};

/* Classic BPF opcode fields (linux/filter.h, linux/bpf_common.h). */
#define PF_CLASS(c) ((c) & 0x07)
#define PF_SIZE(c) ((c) & 0x18)
#define PF_MODE(c) ((c) & 0xe0)
#define PF_OP(c) ((c) & 0xf0)
#define PF_SRC(c) ((c) & 0x08)
#define PF_RVAL(c) ((c) & 0x18)
#define PF_MISCOP(c) ((c) & 0xf8)

/* A load of `size` bytes at `off`; false when out of the bytes held. */
static __always_inline bool pf_load(struct pf_state *s, __u32 off, __u32 size, __u32 *v)
{
	if (off >= PF_BUF - 4 || off + size > s->caplen)
		return false;
	__u32 o = off & (PF_BUF - 1);
	if (o > PF_BUF - 4)
		return false;
	if (size == 4)
		*v = ((__u32)s->pkt[o] << 24) | ((__u32)s->pkt[o + 1] << 16) |
		     ((__u32)s->pkt[o + 2] << 8) | s->pkt[o + 3];
	else if (size == 2)
		*v = ((__u32)s->pkt[o] << 8) | s->pkt[o + 1];
	else
		*v = s->pkt[o];
	return true;
}

/* One instruction; returns 1 when the program has ended (s->ret holds the result). */
static long pf_step(__u64 i, void *ctx)
{
	struct pf_loop_ctx *c = ctx;
	__u32 slot = c->slot;
	struct pf_state *s = bpf_map_lookup_elem(&pf_scratch, &slot);
	if (!s)
		return 1;
	__u32 pc = s->pc;
	struct pf_insn *in = bpf_map_lookup_elem(&pf_prog, &pc);
	if (!in || pc >= pf_len) {
		s->ret = 0;
		return 1;
	}
	__u16 code = in->code;
	__u32 k = in->k;
	__u32 v = 0, size;
	s->pc = pc + 1;
	switch (PF_CLASS(code)) {
	case 0x00: /* LD */
	case 0x01: /* LDX */
		size = PF_SIZE(code) == 0x00 ? 4 : PF_SIZE(code) == 0x08 ? 2 : 1;
		switch (PF_MODE(code)) {
		case 0x00: /* IMM */
			v = k;
			break;
		case 0x20: /* ABS */
			if (!pf_load(s, k, size, &v))
				goto reject;
			break;
		case 0x40: /* IND */
			if (!pf_load(s, s->x + k, size, &v))
				goto reject;
			break;
		case 0x60: /* MEM */
			v = s->mem[k & 15];
			break;
		case 0x80: /* LEN */
			v = s->wirelen;
			break;
		case 0xa0: /* MSH: X = 4 * (P[k] & 0xf) */
			if (!pf_load(s, k, 1, &v))
				goto reject;
			v = (v & 0xf) << 2;
			break;
		default:
			goto reject;
		}
		if (PF_CLASS(code) == 0x00)
			s->a = v;
		else
			s->x = v;
		return 0;
	case 0x02: /* ST */
		s->mem[k & 15] = s->a;
		return 0;
	case 0x03: /* STX */
		s->mem[k & 15] = s->x;
		return 0;
	case 0x04: /* ALU */
		v = PF_SRC(code) ? s->x : k;
		switch (PF_OP(code)) {
		case 0x00: s->a += v; break;
		case 0x10: s->a -= v; break;
		case 0x20: s->a *= v; break;
		case 0x30:
			if (!v)
				goto reject;
			s->a /= v;
			break;
		case 0x90:
			if (!v)
				goto reject;
			s->a %= v;
			break;
		case 0x40: s->a |= v; break;
		case 0x50: s->a &= v; break;
		case 0xa0: s->a ^= v; break;
		case 0x60: s->a = v < 32 ? s->a << v : 0; break;
		case 0x70: s->a = v < 32 ? s->a >> v : 0; break;
		case 0x80: s->a = -s->a; break;
		default: goto reject;
		}
		return 0;
	case 0x05: /* JMP */
		v = PF_SRC(code) ? s->x : k;
		switch (PF_OP(code)) {
		case 0x00: /* JA */
			s->pc = pc + 1 + k;
			return 0;
		case 0x10: /* JEQ */
			s->pc = pc + 1 + (s->a == v ? in->jt : in->jf);
			return 0;
		case 0x20: /* JGT */
			s->pc = pc + 1 + (s->a > v ? in->jt : in->jf);
			return 0;
		case 0x30: /* JGE */
			s->pc = pc + 1 + (s->a >= v ? in->jt : in->jf);
			return 0;
		case 0x40: /* JSET */
			s->pc = pc + 1 + ((s->a & v) ? in->jt : in->jf);
			return 0;
		default:
			goto reject;
		}
	case 0x06: /* RET */
		s->ret = PF_RVAL(code) == 0x10 ? s->a : k;
		return 1;
	case 0x07: /* MISC */
		if (PF_MISCOP(code) == 0x00) /* TAX */
			s->x = s->a;
		else if (PF_MISCOP(code) == 0x80) /* TXA */
			s->a = s->x;
		else
			goto reject;
		return 0;
	}
reject:
	s->ret = 0;
	return 1;
}

/* Does the packet whose IP header is at `l3` match? `caplen`: bytes readable
 * there (the skb's linear part), `wirelen`: the IP packet's whole length. */
static __always_inline bool pf_match(const void *l3, __u32 caplen, __u32 wirelen)
{
	struct pf_loop_ctx c = {};
	struct pf_state *s = NULL;
	for (__u32 i = 0; i < PF_SLOTS; i++) {
		c.slot = i;
		s = bpf_map_lookup_elem(&pf_scratch, &c.slot);
		if (s && !s->busy)
			break;
		s = NULL;
	}
	if (!s)
		return false; /* nested deeper than PF_SLOTS: not expected */
	s->busy = 1;
	__u32 n = caplen;
	if (n > PF_BUF)
		n = PF_BUF;
	if (bpf_probe_read_kernel(s->pkt, n, l3)) {
		s->busy = 0;
		return false;
	}
	s->caplen = n;
	s->wirelen = wirelen;
	s->a = 0;
	s->x = 0;
	s->pc = 0;
	s->ret = 0;
	bpf_loop(PF_MAX_INSNS, pf_step, &c, 0);
	bool ok = s->ret != 0;
	s->busy = 0;
	return ok;
}

#define PF_AT_NH 0   /* the IP header is at network_header (transmit path, netfilter) */
#define PF_AT_DATA 1 /* the IP header is at data (a received packet, before the stack) */

/* The same for an skb. */
static __always_inline bool pf_skb(const struct sk_buff *skb, int at)
{
	unsigned char *head = skb->head;
	__u64 data_off = (__u64)skb->data - (__u64)head;
	__u64 off = data_off;
	if (at == PF_AT_NH) {
		__u16 nh = skb->network_header;
		if (nh == (__u16)~0U)
			return false;
		off = nh;
	}
	__u64 end = data_off + skb->len;
	__u64 linear_end = data_off + (skb->len - skb->data_len);
	if (off >= linear_end || end <= off)
		return false;
	return pf_match(head + off, (__u32)(linear_end - off), (__u32)(end - off));
}

static __always_inline bool need_parse(void)
{
	return filter_tasks || tuple_filtered() || pf_len || netns_only;
}

/*
 * record --netns: is network namespace `ns` (its inode number) one to record?
 * Every --netns check asks this. A caller whose `ns` costs a read (a probe
 * read is a helper call) tests `netns_only` first, so that recording without
 * --netns pays nothing for it.
 */
static __always_inline bool netns_wanted(__u32 ns)
{
	return !netns_only || ns == netns_only;
}

/* record --netns: is a socket in the namespace asked for? */
static __always_inline bool sock_in_netns(const struct sock *sk)
{
	if (!netns_only)
		return true;
	return netns_wanted(BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum));
}

/* --netns: a socket of another namespace, known before its cookie and its
 * storage are looked up (the app and tcp tracepoints fire in every
 * namespace). `sk` must be a BTF pointer (a tp_btf or fexit argument): read
 * with direct loads, not sock_in_netns()'s probe reads. A socket without a
 * namespace is left to sock_traced(). */
static __always_inline bool sock_elsewhere(const struct sock *sk)
{
	if (!netns_only)
		return false;
	const struct net *net = sk->__sk_common.skc_net.net;
	return net && net->ns.inum != netns_only;
}

/* The same for a task (the one a context switch names, or the current one). */
static __always_inline bool task_in_netns(struct task_struct *t)
{
	if (!netns_only)
		return true;
	return netns_wanted(BPF_CORE_READ(t, nsproxy, net_ns, ns.inum));
}
