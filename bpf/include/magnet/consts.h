/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Constants the BPF programs of magnet share (recorder, magnetd's summaries,
 * the sampler). vmlinux.h carries types and enums but no macros; these are
 * the uapi macros the programs test against. Include after vmlinux.h.
 */
#ifndef MAGNET_CONSTS_H
#define MAGNET_CONSTS_H

#define AF_INET 2
#define AF_INET6 10

#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86DD

/* vmlinux.h has these as enum values; the macros keep them usable in #if
 * and make every program spell them the same way. */
#define IPPROTO_HOPOPTS 0
#define IPPROTO_TCP 6
#define IPPROTO_UDP 17
#define IPPROTO_ROUTING 43
#define IPPROTO_FRAGMENT 44
#define IPPROTO_DSTOPTS 60

#define IP_MF 0x2000     /* more fragments (host order frag_off) */
#define IP_OFFSET 0x1fff /* fragment offset mask */

#define TC_ACT_UNSPEC (-1) /* tc/TCX: go on (TCX_NEXT) */
#define NF_ACCEPT 1

#endif
