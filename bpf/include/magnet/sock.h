/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Socket helpers shared by magnet's BPF programs (the recorder, magnetd's
 * summaries): a socket's ends and its cookie. Include after vmlinux.h, the
 * libbpf headers and magnet/consts.h.
 */
#ifndef MAGNET_SOCK_H
#define MAGNET_SOCK_H

/* `p` as a read-only `type *` (bpf_core_cast; 6.2+, a register move once
 * loaded), for a pointer the verifier trusts (a tp_btf argument, netfilter's
 * ctx->skb) whose struct pointer fields a program reads. Each such read from a
 * trusted pointer makes the verifier look for "<type>__safe_trusted" and three
 * more names in the kernel's BTF, a linear search through every type (6.4+):
 * on 6.18 those searches were over half of a recording's start-up CPU. Read
 * through the cast, the same loads need none. Not for a pointer that is given
 * to a helper (a read-only pointer is refused there), nor for fields written.
 * On kernels without the kfunc the pointer is used as it is. */
#define mg_ro(p, type) \
	(bpf_ksym_exists(bpf_rdonly_cast) ? bpf_core_cast((p), type) : (type *)(p))

/* The struct pointer `p->field` read through the cast (mg_ro), while `p`
 * itself stays trusted. For a pointer a program reads on every packet: a load
 * through a read-only (untrusted) pointer is a checked one (BPF_PROBE_MEM: the
 * x86 JIT adds an address range check), and casting the packet itself made
 * every scalar load of dev_rx, dev_start_xmit and ip_local_in one, +16 to +21
 * ns a run. The pointer read this way is the untrusted one the verifier makes
 * of most struct fields anyway. */
#define mg_field(p, type, field) (mg_ro((p), type)->field)

/* An IPv4 address (network byte order) as the v4-mapped IPv6 address
 * ::ffff:a.b.c.d, the form every magnet record and key keeps addresses in. */
static __always_inline void v4_mapped(__u8 *dst, __u32 addr_be)
{
	__builtin_memset(dst, 0, 10);
	dst[10] = 0xff;
	dst[11] = 0xff;
	__builtin_memcpy(dst + 12, &addr_be, 4);
}

/* A socket's ends into `dst` (any struct with sport, dport, saddr[16] and
 * daddr[16]) as every magnet record and key keeps them: ports in host byte
 * order, addresses as IPv6 (IPv4 v4-mapped). `v6` (the socket's family is
 * AF_INET6: its IPv6 address fields hold the ends) is evaluated after the
 * ports are read, as the callers wrote it before: a macro, not a function,
 * so that the programs compile to the same instructions (the 6.1 verifier is
 * at its limit on some of them). Read through CO-RE from any socket pointer. */
#define mg_sk_ends(sk, dst, v6)                                                          \
	({                                                                               \
		(dst)->sport = BPF_CORE_READ(sk, __sk_common.skc_num);                    \
		(dst)->dport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));       \
		if (v6) {                                                                \
			BPF_CORE_READ_INTO(&(dst)->saddr, sk,                             \
					   __sk_common.skc_v6_rcv_saddr.in6_u.u6_addr8); \
			BPF_CORE_READ_INTO(&(dst)->daddr, sk,                             \
					   __sk_common.skc_v6_daddr.in6_u.u6_addr8);     \
		} else {                                                                 \
			v4_mapped((dst)->saddr, BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr)); \
			v4_mapped((dst)->daddr, BPF_CORE_READ(sk, __sk_common.skc_daddr));     \
		}                                                                        \
	})

/* The socket's cookie as the kernel has it (0 until something assigns it:
 * bpf_get_socket_cookie does), read through CO-RE from any socket pointer. */
static __always_inline __u64 mg_sk_cookie_read(const struct sock *sk)
{
	return BPF_CORE_READ(sk, __sk_common.skc_cookie.counter);
}

#endif
