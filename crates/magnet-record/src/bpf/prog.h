// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * How the recorder defines a program, and the floor build.
 *
 * Every program of the layers is written with one of these, in place of
 * SEC() and its signature:
 *
 *   MG_PROG("tp_btf/hook", name, args...)      like SEC("tp_btf/hook") int BPF_PROG(name, args...)
 *   MG_CTX_PROG("sec", name, floor_ret, ctx)   like SEC("sec") int name(ctx), for programs that
 *                                              take their context (netfilter, perf_event, cgroup)
 *   PF_PROG("tp_btf/hook", name, args...)      a packet program and its twin without the pcap filter
 *
 * followed by the body. In a normal build they expand to exactly that. In the
 * floor build (MAGNET_BPF_CFLAGS=-DMG_PROF=9, never shipped) every such
 * program returns at its entry (0, or `floor_ret`: what lets the hook go on,
 * NF_ACCEPT, 1 for cgroup/sock_create) on the same hook with the same maps,
 * and its body is compiled but never called, so the object holds nothing else:
 * what the hooks alone cost, bench/record-overhead.sh's case `floor`
 * (MAGNET_FLOOR=<that build>). Only record --funcs (funcs.bpf.c, kprobes
 * chosen at run time) keeps its bodies in it.
 *
 * MG_PROF=1..3 are the cost profile builds: see "Cost profile builds" in
 * batch.bpf.c and bench/bpf-prog-profile.py.
 *
 * In a normal build each also returns at its entry (as the floor does) once
 * user space has set `mg_stopped`: see there.
 */
#ifndef MAGNET_RECORD_PROG_H
#define MAGNET_RECORD_PROG_H

#ifndef MG_PROF
#define MG_PROF 0
#endif

/* Set by user space when the recording ends (the `.data.stop` map, this
 * flag alone), then one RCU grace period waited for (membarrier): from then
 * on no program writes a record, a batch or a loss count, so user space reads
 * what is left in the batches while the links are still attached. Releasing
 * them takes the kernel a grace period per syscall tracepoint, one after
 * another (over a second for a recording's 24): that is left to a process
 * of its own (magnet_host::attach::detach_in_background), and the programs
 * return at their entry meanwhile. */
volatile __u32 mg_stopped SEC(".data.stop") = 0;

/* The body of a floor program: declared, never called, so never emitted. */
#define MG_FLOOR_BODY(name, params...) \
	static __always_inline __attribute__((unused)) int ____##name(params)

#if MG_PROF == 9

#define MG_PROG(SECNAME, name, args...)                                         \
	MG_FLOOR_BODY(name, unsigned long long *ctx, ##args);                   \
	SEC(SECNAME) int name(unsigned long long *ctx)                          \
	{                                                                       \
		return 0;                                                       \
	}                                                                       \
	MG_FLOOR_BODY(name, unsigned long long *ctx, ##args)

#define MG_CTX_PROG(SECNAME, name, floor_ret, ctx_decl)                         \
	SEC(SECNAME) int name(ctx_decl)                                         \
	{                                                                       \
		return (floor_ret);                                             \
	}                                                                       \
	MG_FLOOR_BODY(name, ctx_decl)

#define PF_PROG(SECNAME, name, args...)                                         \
	MG_FLOOR_BODY(name, bool pf, unsigned long long *ctx, ##args);          \
	SEC(SECNAME) int name(unsigned long long *ctx)                          \
	{                                                                       \
		return 0;                                                       \
	}                                                                       \
	SEC(SECNAME) int name##_nl(unsigned long long *ctx)                     \
	{                                                                       \
		return 0;                                                       \
	}                                                                       \
	MG_FLOOR_BODY(name, bool pf, unsigned long long *ctx, ##args)

#else /* MG_PROF != 9 */

/* Like BPF_PROG(name, args...), returning 0 at once once stopped. */
#define MG_PROG(SECNAME, name, args...)                                         \
	static __always_inline int ____##name(unsigned long long *ctx, ##args); \
	SEC(SECNAME) int name(unsigned long long *ctx)                          \
	{                                                                       \
		if (mg_stopped)                                                 \
			return 0;                                               \
		_Pragma("GCC diagnostic push")                                  \
		_Pragma("GCC diagnostic ignored \"-Wint-conversion\"")          \
		return ____##name(___bpf_ctx_cast(args));                       \
		_Pragma("GCC diagnostic pop")                                   \
	}                                                                       \
	static __always_inline int ____##name(unsigned long long *ctx, ##args)

/* `ctx_decl` names its parameter `ctx`; once stopped, `floor_ret`. */
#define MG_CTX_PROG(SECNAME, name, floor_ret, ctx_decl)                         \
	static __always_inline int ____##name(ctx_decl);                        \
	SEC(SECNAME) int name(ctx_decl)                                         \
	{                                                                       \
		if (mg_stopped)                                                 \
			return (floor_ret);                                     \
		return ____##name(ctx);                                         \
	}                                                                       \
	static __always_inline int ____##name(ctx_decl)

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
		if (mg_stopped)                                                 \
			return 0;                                               \
		_Pragma("GCC diagnostic push")                                  \
		_Pragma("GCC diagnostic ignored \"-Wint-conversion\"")          \
		return ____##name(true, ___bpf_ctx_cast(args));                 \
		_Pragma("GCC diagnostic pop")                                   \
	}                                                                       \
	SEC(SECNAME) int name##_nl(unsigned long long *ctx)                     \
	{                                                                       \
		if (mg_stopped)                                                 \
			return 0;                                               \
		_Pragma("GCC diagnostic push")                                  \
		_Pragma("GCC diagnostic ignored \"-Wint-conversion\"")          \
		return ____##name(false, ___bpf_ctx_cast(args));                \
		_Pragma("GCC diagnostic pop")                                   \
	}                                                                       \
	static __always_inline int ____##name(bool pf, unsigned long long *ctx, ##args)

#endif /* MG_PROF */

#endif
