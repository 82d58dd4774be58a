// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The app part of magnetd's summaries (included by summary.bpf.c, after the
 * record helpers): every send and recv call of the host adds its bytes and
 * calls to the host totals and to its connection's record, creating the
 * record, and sets the latency marks the per-packet programs close. With
 * calls_at_exit, a call is one system call (its exit) or io_uring request
 * (io_uring_complete), not one send or recv inside the kernel.
 */

/* The socket the current task's system call sent or received on, counted
 * as one call at its sys_exit (calls_at_exit). */
struct app_pending {
	__u64 sk; /* 1: a call to count at the task's next sys_exit */
	__u64 cookie;
	__u32 tx;
	__u32 _pad;
	__u64 bytes; /* the call's sends or recvs so far (the layer table's unit) */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct app_pending);
} app_pending SEC(".maps");

/* One app call per system call (calls_at_exit), as the recorder counts
 * them (docs/FORMAT.md; the numbers in magnet/syscalls.h): a sendfile()
 * that the kernel sends as 16 pipes' worth, a sendmmsg() of many messages,
 * a writev() are each one call. */

/* One send or recv inside the kernel per call: counted at it. */
static __always_inline bool app_nr_one(long id)
{
	return id == NR_read || id == NR_write || id == NR_readv || id == NR_writev ||
	       id == NR_sendto || id == NR_recvfrom || id == NR_sendmsg || id == NR_recvmsg;
}

/* Any number of them per call (one per pipe's worth, per message): counted
 * at sys_exit. */
static __always_inline bool app_nr_many(long id)
{
	return id == NR_sendfile || id == NR_splice || id == NR_recvmmsg || id == NR_sendmmsg;
}

/* Cost profile builds (measurement only, never shipped): built with
 * MAGNET_BPF_CFLAGS=-DMGD_PROF=N, app_call returns early at mark N (1: after
 * the socket's cookie; 2: after the connection's record; 3: after the layer
 * table; 4: before the TCP state), so that the differences of the programs'
 * ns per run between builds say where each nanosecond goes
 * (bench/notes/2026-11-29-daemon-syscall-exits.md); 9 is the floor (every
 * program returns at entry, summary.bpf.c). */

/* app_call runs at every send and recv call of the host: `sk` is a trusted
 * BTF pointer there (tp_btf), so fields are read directly (plain loads)
 * instead of through bpf_probe_read_kernel, and tcp_sock fields through
 * bpf_skc_to_tcp_sock. */
static __always_inline int app_call(struct sock *sk, int ret, int tx)
{
	if (!sk)
		return 0;
	__u16 family = sk->__sk_common.skc_family;
	if (family != AF_INET && family != AF_INET6)
		return 0;
	struct mg_host *h = host_totals();
	__u64 now = bpf_ktime_get_ns();
	__u64 bytes = ret > 0 ? ret : 0;
	/* Whether this send or recv is an app call of its own: always in the
	 * fallback; with calls_at_exit a kernel thread's (an in-kernel socket
	 * user such as the NFS client) and that of a system call that makes
	 * exactly one (read, write, sendmsg, ...). sendfile(), splice() and
	 * the mmsg calls are counted at their sys_exit (app_sys_exit),
	 * io_uring's requests at their completion (app_uring). */
	__u64 cookie = sk->__sk_common.skc_cookie.counter;
	if (!cookie)
		cookie = bpf_get_socket_cookie(sk);
#if MGD_PROF == 1
	if (cookie)
		return 0;
#endif
	__u64 call = 1;
	if (calls_at_exit) {
		struct task_struct *task = bpf_get_current_task_btf();
		call = task->flags & 0x00200000; /* PF_KTHREAD */
		/* A user task's: a call only inside a socket system call (its
		 * number, and its return not yet in ax: x86 sets ax to -ENOSYS
		 * at entry and to the return after the call), never io_uring's
		 * work (io_uring_enter, io-wq threads whose registers are zero,
		 * task work after a sys_exit whose return ax holds by then). */
		struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
		long nr = regs->orig_ax;
		if (call || (long)regs->ax != -38 /* -ENOSYS */) {
		} else if (app_nr_one(nr)) {
			call = 1;
		} else if (app_nr_many(nr)) {
			/* counted at the call's sys_exit: the task's next */
			struct app_pending *p = bpf_task_storage_get(
				&app_pending, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
			if (p) {
				p->bytes = (p->sk ? p->bytes : 0) + bytes;
				p->cookie = cookie;
				p->tx = tx;
				p->sk = 1;
			}
		}
	}
	if (h) {
		h->events++;
		if (tx) {
			h->app_tx_calls += call ? 1 : 0;
			h->app_tx_bytes += bytes;
		} else {
			h->app_rx_calls += call ? 1 : 0;
			h->app_rx_bytes += bytes;
		}
	}
	struct mg_conn *c = conn_of(sk, cookie, now, h);
	if (!c)
		return 0;
#if MGD_PROF == 2
	if (cookie)
		return 0;
#endif
	c->last_ns = now;
	if (call && bytes)
		layer_unit(c, MG_LAYER_APP, tx, bytes, now);
#if MGD_PROF == 3
	if (cookie)
		return 0;
#endif
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	if (c->pid != pid) {
		/* a new caller: who it is and where (cheap check first) */
		c->pid = pid;
		c->cgroup_id = bpf_get_current_cgroup_id();
		bpf_get_current_comm(c->comm, sizeof(c->comm));
	}
	/* TCP connects after the record may exist (a recv before connect is
	 * rare; a send after connect is the rule): refresh the ends. */
	if (!c->dport || !c->sport) {
		mg_sk_ends(sk, c, c->family != AF_INET);
	}
	c->sndbuf = sk->sk_sndbuf;
	if (!c->kstats)
		c->wmem_queued = sk->sk_wmem_queued;
#if MGD_PROF == 4
	if (cookie)
		return 0;
#endif
	struct tcp_sock *tp = NULL;
	/* A send while an earlier send's mark still waits needs no TCP state
	 * when every packet is seen: the mark's data has not all left, so
	 * neither has this call's (the packets out close the mark before the
	 * call returns if it had). Sampled: the mark's data may have left
	 * between windows, unseen; the state says so. */
	if (packet_marks && c->protocol == IPPROTO_TCP && bytes &&
	    !(tx && c->tx_mark_ns && !sampled))
		tp = bpf_skc_to_tcp_sock(sk);
	if (tx) {
		if (call)
			__sync_fetch_and_add(&c->app_tx_calls, 1);
		__sync_fetch_and_add(&c->app_tx_bytes, bytes);
		if (tp) {
			__u32 write_seq = tp->write_seq;
			__u32 snd_nxt = tp->snd_nxt;
			/* sampled: a mark whose data has all been sent left
			 * while no program watched; it can no longer pair */
			if (c->tx_mark_ns && (__s32)(snd_nxt - c->tx_mark_seq) >= 0)
				c->tx_mark_ns = 0;
			if (c->tx_mark_ns) {
				/* an earlier send's data still waits */
			} else if ((__s32)(snd_nxt - write_seq) >= 0) {
				/* everything already left during the call: a
				 * sample of 0 if that was inside a window */
				if (window_open)
					__sync_fetch_and_add(&c->app_to_wire_hist[0], 1);
			} else {
				/* a mark, inside a window or not: it pairs with
				 * the packet that takes its last byte if that
				 * packet leaves inside one */
				c->tx_mark_seq = write_seq;
				c->tx_mark_ns = now;
			}
		}
	} else {
		if (call)
			__sync_fetch_and_add(&c->app_rx_calls, 1);
		__sync_fetch_and_add(&c->app_rx_bytes, bytes);
		__u64 mark = c->rx_mark_ns;
		if (packet_marks && bytes && mark && now > mark) {
			__u32 s = hist_slot(now - mark);
			if (s < MG_HIST_SLOTS)
				__sync_fetch_and_add(&c->wire_to_app_hist[s], 1);
			c->rx_mark_ns = 0;
		}
		/* A read that leaves data waiting: the rest waits from now
		 * (what the stall trigger and the next sample measure).
		 * Sampled: only inside a window, so that marks (the start of
		 * a wait) are taken in windows only, whatever made them. A read
		 * that leaves nothing waiting notes how far the socket had
		 * received (see the ingress rule). */
		if (tp) {
			__u32 rcv_nxt = tp->rcv_nxt;
			if (rcv_nxt != tp->copied_seq) {
				if (!sampled || window_open)
					c->rx_mark_ns = now;
			} else if (sampled) {
				c->rx_drained_seq = rcv_nxt;
			}
		}
	}
	return 0;
}

/* The app part is loaded (app_recv may run for the receive stages alone). */
const volatile bool app_on = true;

SEC("tp_btf/sock_send_length")
int BPF_PROG(app_send, struct sock *sk, int ret, int flags)
{
	MGD_FLOOR(0);
	return app_call(sk, ret, 1);
}

/* Also the receive stages' read (rx.bpf.c), so that a read runs one
 * program: either part may be loaded without the other. */
SEC("tp_btf/sock_recv_length")
int BPF_PROG(app_recv, struct sock *sk, int ret, int flags)
{
	MGD_FLOOR(0);
	if (app_on)
		app_call(sk, ret, 0);
	if (rx_on)
		rx_read(sk, ret, flags);
	return 0;
}

/* Kernels without those two tracepoints (before 6.3: 5.15, 6.1), where
 * fexit is allowed: the returns of the IPv4 and IPv6 socket calls that
 * sock_sendmsg and sock_recvmsg make, the same place in the call. Every
 * send and recv is a call (as with the tracepoints' last candidate);
 * sendfile() before 6.5 sends through sendpage, not sendmsg, and is not
 * seen. */
SEC("fexit/inet_sendmsg")
int BPF_PROG(app_send_fexit4, struct socket *sock, struct msghdr *msg, size_t size, int ret)
{
	MGD_FLOOR(0);
	return app_call(sock->sk, ret, 1);
}

SEC("fexit/inet6_sendmsg")
int BPF_PROG(app_send_fexit6, struct socket *sock, struct msghdr *msg, size_t size, int ret)
{
	MGD_FLOOR(0);
	return app_call(sock->sk, ret, 1);
}

SEC("fexit/inet_recvmsg")
int BPF_PROG(app_recv_fexit4, struct socket *sock, struct msghdr *msg, size_t size, int flags,
	     int ret)
{
	MGD_FLOOR(0);
	return app_call(sock->sk, ret, 0);
}

SEC("fexit/inet6_recvmsg")
int BPF_PROG(app_recv_fexit6, struct socket *sock, struct msghdr *msg, size_t size, int flags,
	     int ret)
{
	MGD_FLOOR(0);
	return app_call(sock->sk, ret, 0);
}

#define S_IFMT 00170000
#define S_IFSOCK 0140000

/* One call of the record `c` (NULL: none) to the host's and its counts. */
static __always_inline void count_call(struct mg_conn *c, int tx)
{
	struct mg_host *h = host_totals();
	if (h) {
		if (tx)
			h->app_tx_calls++;
		else
			h->app_rx_calls++;
	}
	if (!c)
		return;
	if (tx)
		__sync_fetch_and_add(&c->app_tx_calls, 1);
	else
		__sync_fetch_and_add(&c->app_rx_calls, 1);
}

/* The end of a sendfile(), splice() or mmsg call: the task's note, left
 * by the sends or recvs inside this very call (see app_call), is one call. */
static __always_inline int app_call_exit(void)
{
	struct app_pending *p =
		bpf_task_storage_get(&app_pending, bpf_get_current_task_btf(), 0, 0);
	if (!p || !p->sk)
		return 0;
	p->sk = 0;
	struct mg_conn *c = conn_by_cookie(p->cookie);
	count_call(c, p->tx);
	if (c && p->bytes)
		layer_unit(c, MG_LAYER_APP, p->tx, p->bytes, bpf_ktime_get_ns());
	return 0;
}

/* The first candidate: attached by user space to the exit tracepoints of
 * those four system calls only (syscalls/sys_exit_sendfile64, _splice,
 * _sendmmsg, _recvmmsg), so that no other system call of the host runs a
 * program (the kernel's own check of the call's number is a bit test). */
SEC("tracepoint/syscalls/sys_exit_splice")
int app_exit_tp(void *ctx)
{
	MGD_FLOOR(0);
	return app_call_exit();
}

/* Where the kernel has no such tracepoints (no CONFIG_FTRACE_SYSCALLS, or
 * tracefs not mounted): the end of every system call of the host, the
 * syscall number first (a register load and four compares). */
SEC("tp_btf/sys_exit")
int BPF_PROG(app_sys_exit, struct pt_regs *regs, long ret)
{
	MGD_FLOOR(0);
	if (!app_nr_many(regs->orig_ax))
		return 0;
	return app_call_exit();
}

/* One app call per io_uring request result the application gets (a CQE),
 * however many times the kernel tried its send or recv (a socket's EAGAIN
 * retried inside io_uring is no call). A zero-copy send's notification is
 * posted by a request of its own (a NOP): no call. */
SEC("tp_btf/io_uring_complete")
int BPF_PROG(app_uring, struct io_ring_ctx *ring, void *req_, struct io_uring_cqe *cqe)
{
	MGD_FLOOR(0);
	struct io_kiocb *req = req_;
	if (!req)
		return 0;
	__u8 op = BPF_CORE_READ(req, opcode);
	int tx = mg_uring_dir(op);
	if (tx < 0)
		return 0;
	struct file *file = BPF_CORE_READ(req, file);
	if (!file || (BPF_CORE_READ(file, f_inode, i_mode) & S_IFMT) != S_IFSOCK)
		return 0;
	struct socket *so = BPF_CORE_READ(file, private_data);
	struct sock *sk = BPF_CORE_READ(so, sk);
	if (!sk)
		return 0;
	__u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);
	if (family != AF_INET && family != AF_INET6)
		return 0;
	/* set by the request's sends (bpf_get_socket_cookie in app_call) */
	__u64 cookie = BPF_CORE_READ(sk, __sk_common.skc_cookie.counter);
	if (!cookie)
		return 0;
	struct mg_conn *c = conn_by_cookie(cookie);
	count_call(c, tx);
	if (c && bpf_core_field_exists(req->cqe.res)) {
		int res = BPF_CORE_READ(req, cqe.res);
		if (res > 0)
			layer_unit(c, MG_LAYER_APP, tx, res, bpf_ktime_get_ns());
	}
	return 0;
}
