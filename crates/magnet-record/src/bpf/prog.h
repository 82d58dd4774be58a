// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * How the recorder defines a program, and the measurement builds that change
 * what every program does (MAGNET_BPF_CFLAGS=-DMG_PROF=N, never shipped; see
 * "Cost profile builds" in batch.bpf.c).
 */
#ifndef MAGNET_RECORD_PROG_H
#define MAGNET_RECORD_PROG_H

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

#endif
