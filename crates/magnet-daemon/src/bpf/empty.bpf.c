// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The cost floor for bench/daemon-bpf-cost.sh: programs on exactly the hooks
 * of summary.bpf.c that do nothing. What a hook costs merely for having a
 * program on it (dispatch, and the run-time accounting of
 * kernel.bpf_stats_enabled) is what these measure; magnetd's own work is the
 * difference. Loaded only by `cargo run -p magnet-daemon --example empty_hooks`.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("tp_btf/sock_send_length")
int BPF_PROG(app_send, struct sock *sk, int ret, int flags) { return 0; }

SEC("tp_btf/sock_recv_length")
int BPF_PROG(app_recv, struct sock *sk, int ret, int flags) { return 0; }

SEC("cgroup_skb/egress")
int wire_egress(struct __sk_buff *skb) { return 1; }

SEC("cgroup_skb/ingress")
int wire_ingress(struct __sk_buff *skb) { return 1; }

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(tcp_retrans, const struct sock *sk, const struct sk_buff *skb) { return 0; }

SEC("tp_btf/kfree_skb")
int BPF_PROG(drop, struct sk_buff *skb, void *location, int reason) { return 0; }

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(tcp_state, struct sock *sk, const int oldstate, const int newstate) { return 0; }
