/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Socket helpers shared by magnet's BPF programs. Include after vmlinux.h
 * and the libbpf headers.
 */
#ifndef MAGNET_SOCK_H
#define MAGNET_SOCK_H

/* An IPv4 address (network byte order) as the v4-mapped IPv6 address
 * ::ffff:a.b.c.d, the form every magnet record and key keeps addresses in. */
static __always_inline void v4_mapped(__u8 *dst, __u32 addr_be)
{
	__builtin_memset(dst, 0, 10);
	dst[10] = 0xff;
	dst[11] = 0xff;
	__builtin_memcpy(dst + 12, &addr_be, 4);
}

/* The socket's cookie as the kernel has it (0 until something assigns it:
 * bpf_get_socket_cookie does), read through CO-RE from any socket pointer. */
static __always_inline __u64 mg_sk_cookie_read(const struct sock *sk)
{
	return BPF_CORE_READ(sk, __sk_common.skc_cookie.counter);
}

#endif
