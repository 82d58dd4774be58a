// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Layer app: one record per send/recv call (system calls, io_uring,
 * the sock_send_length / sock_recv_length tracepoints), and the flow
 * bookkeeping at sys_exit that lets the packet layers attribute packets.
 */

/* ---- layer: app ----------------------------------------------------------- */

/* The app calls (their numbers in magnet/syscalls.h): one app event per
 * call, emitted at its sys_exit with the bytes it asked for and its return
 * value. */

static __always_inline bool app_nr(long id)
{
	return id == NR_read || id == NR_write || id == NR_readv || id == NR_writev ||
	       id == NR_sendfile || id == NR_sendto || id == NR_recvfrom || id == NR_sendmsg ||
	       id == NR_recvmsg || id == NR_splice || id == NR_recvmmsg || id == NR_sendmmsg;
}

/* An iovec array's total length; -1 past APP_IOV_MAX entries or unreadable. */
#define APP_IOV_MAX 16
/* sendmmsg()/recvmmsg(): messages summed (asked -1 past it, and the bytes of
 * messages past it not counted in ret). */
#define APP_MMSG_MAX 16

static __always_inline __s64 iov_sum(const struct iovec *iov, __u64 n)
{
	__s64 sum = 0;
	if (n > APP_IOV_MAX)
		return -1;
	for (int i = 0; i < APP_IOV_MAX; i++) {
		if (i >= n)
			break;
		struct iovec v;
		if (bpf_probe_read_user(&v, sizeof(v), &iov[i]))
			return -1;
		sum += v.iov_len;
	}
	return sum;
}

#define S_IFMT 00170000
#define S_IFSOCK 0140000

/* The struct sock behind file descriptor `fd` of the current task, or 0.
 * Runs on every send/recv/read/write syscall of traced tasks, so the walk
 * uses direct (BTF) loads; only the fd array slot needs a probe read, and the
 * untyped pointers are given their types with bpf_core_cast. */
static __always_inline __u64 fd_socket(__u64 fd)
{
	struct file *fp = NULL;
	/* bpf_get_current_task_btf came in 5.11: asked of this kernel's BTF
	 * (CO-RE), and without it the same walk by probe reads. */
	if (!bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_get_current_task_btf)) {
		struct task_struct *t = (struct task_struct *)bpf_get_current_task();
		struct fdtable *fdt = BPF_CORE_READ(t, files, fdt);
		if (!fdt || fd >= BPF_CORE_READ(fdt, max_fds))
			return 0;
		struct file **fds = BPF_CORE_READ(fdt, fd);
		if (bpf_probe_read_kernel(&fp, sizeof(fp), &fds[fd]) || !fp)
			return 0;
	} else {
		/* Read only here: cast (magnet/sock.h, mg_ro). */
		struct task_struct *task = mg_ro(bpf_get_current_task_btf(), struct task_struct);
		struct fdtable *fdt = task->files->fdt;
		if (!fdt || fd >= fdt->max_fds)
			return 0;
		if (bpf_probe_read_kernel(&fp, sizeof(fp), &fdt->fd[fd]) || !fp)
			return 0;
	}
	/* bpf_rdonly_cast is a 6.2 kfunc: without it, probe reads. */
	if (!bpf_ksym_exists(bpf_rdonly_cast)) {
		if ((BPF_CORE_READ(fp, f_inode, i_mode) & S_IFMT) != S_IFSOCK)
			return 0;
		struct socket *so = BPF_CORE_READ(fp, private_data);
		return so ? (__u64)BPF_CORE_READ(so, sk) : 0;
	}
	struct file *f = bpf_core_cast(fp, struct file);
	if ((f->f_inode->i_mode & S_IFMT) != S_IFSOCK)
		return 0;
	struct socket *so = bpf_core_cast(f->private_data, struct socket);
	return so ? addr_of(so->sk) : 0;
}

/* The destination of a sendto()/sendmsg() (a user-space sockaddr), if any. */
static __always_inline void read_dest(const void *uaddr, struct syscall_in_flight *f)
{
	__u8 sa[28] = {};
	/* sockaddr_in6 is 28 bytes, sockaddr_in 16: the longer read may run off
	 * the end of a mapping, so fall back to the shorter one. */
	if (!uaddr || (bpf_probe_read_user(sa, sizeof(sa), uaddr) && bpf_probe_read_user(sa, 16, uaddr)))
		return;
	__u16 family = *(__u16 *)sa;
	if (family == AF_INET) {
		__u32 a;
		__builtin_memcpy(&a, sa + 4, 4);
		v4_mapped(f->daddr, a);
	} else if (family == AF_INET6) {
		__builtin_memcpy(f->daddr, sa + 8, 16);
	} else {
		return;
	}
	f->dport = bpf_ntohs(*(__u16 *)(sa + 2));
	f->has_dest = 1;
}

#define NR_connect 42
#define NR_bind 49

/* The context of the syscalls' own tracepoints (syscalls/sys_enter_NAME,
 * sys_exit_NAME) as the kernel hands it to BPF (perf_call_bpf_enter/exit):
 * 8 bytes BPF may not read (the call's registers, for the kernel's helpers),
 * the syscall number, then the six arguments (8 bytes each; those past the
 * call's own are undefined) or the return value. The same layout on 5.10 as
 * on 6.18. */
struct mg_sys_enter_args {
	__u64 _regs;
	__s32 nr;
	__u32 _pad;
	__u64 args[6];
};
struct mg_sys_exit_args {
	__u64 _regs;
	__s32 nr;
	__u32 _pad;
	__s64 ret;
};

/* Loaded with task filters and packet layers: a socket bound or connected by a
 * traced task has its flow known from then on, so packets that arrive before
 * its first send or recv (a UDP receiver not yet in recv) are attributed.
 * `fd`: the call's first argument. */
static __always_inline int flow_call_exit(long id, long ret, __u64 fd)
{
	if (ret != 0)
		return 0;
	if (id != NR_bind && id != NR_connect)
		return 0;
	if (!task_traced())
		return 0;
	__u64 sk = fd_socket(fd);
	if (!sk)
		return 0;
	struct sk_tuple t = {};
	read_sk_tuple((const struct sock *)sk, &t);
	if (!t.sport || (t.protocol != IPPROTO_UDP && t.protocol != IPPROTO_TCP))
		return 0;
	__u64 cookie = sk_key((const struct sock *)sk,
			      BPF_CORE_READ((const struct sock *)sk, __sk_common.skc_cookie.counter));
	/* A UDP socket used unconnected before it connected (a server that
	 * connects to its first client, as iperf3 -s does) is announced again
	 * with its peer, which its SOCK record lacked: the ip layer, which also
	 * tells it, sees only the recorder's network namespace (netfilter
	 * hooks), the dev layer every one. Known by its flow as a
	 * bound socket (remote end zero), looked up before the connected flow
	 * is added. TCP's peer comes with its state changes. */
	if (id == NR_connect && t.dport && t.protocol == IPPROTO_UDP &&
	    (!tuple_filtered() || tuple_matches(t.saddr, t.daddr, t.sport, t.dport))) {
		struct flow_key k = { .lport = t.sport, .protocol = t.protocol };
		__builtin_memcpy(k.local, t.saddr, 16);
		k.netns = BPF_CORE_READ((const struct sock *)sk, __sk_common.skc_net.net, ns.inum);
		struct flow_val *b = bound_flow(&k);
		if (b && b->cookie == cookie)
			announce((const struct sock *)sk, cookie, &t);
	}
	track_flow(&t, cookie, sk);
	return 0;
}

/* bind()'s and connect()'s fd from their enter tracepoint to their exit
 * (an exit tracepoint has only the return value, and BPF may not read the
 * registers the kernel keeps in its context's first bytes): by thread, for
 * traced tasks only. LRU: a thread killed inside the call leaves an entry
 * that ages out. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} flow_call_fds SEC(".maps");

MG_CTX_PROG("tracepoint", flow_enter_tp, 0, struct mg_sys_enter_args *ctx)
{
	if (!task_traced())
		return 0;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 fd = ctx->args[0];
	bpf_map_update_elem(&flow_call_fds, &tid, &fd, BPF_ANY);
	return 0;
}

/* At bind()'s and connect()'s own exit tracepoints: no other system call of
 * the host runs it. */
MG_CTX_PROG("tracepoint", flow_exit_tp, 0, struct mg_sys_exit_args *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 *fd = bpf_map_lookup_elem(&flow_call_fds, &tid);
	if (!fd)
		return 0;
	__u64 f = *fd;
	bpf_map_delete_elem(&flow_call_fds, &tid);
	return flow_call_exit(ctx->nr, ctx->ret, f);
}

/* Where the kernel has no syscall tracepoints (no CONFIG_FTRACE_SYSCALLS,
 * tracefs not mounted): the exit of every system call. */
MG_PROG("tp_btf/sys_exit", flow_sys_exit, struct pt_regs *regs, long ret)
{
	return flow_call_exit(regs->orig_ax, ret, regs->di);
}

/* The bytes call `id` asks for (-1: unknown) and its flags, from its
 * arguments a1..a4; sendto()'s and sendmsg()'s destination in *msg_name
 * (sendmsg's from its msghdr). Not the mmsg pair's (app_call_enter). User
 * memory is read the same at the call's start and inside it: the kernel
 * copies the iovecs in and writes none back. */
static __always_inline __s64 call_asked(long id, __u64 a1, __u64 a2, __u64 a3, __u64 a4,
					__u32 *msg_flags, const void **msg_name)
{
	if (id == NR_sendmsg || id == NR_recvmsg) {
		struct user_msghdr mh;
		*msg_flags = a2;
		if (bpf_probe_read_user(&mh, sizeof(mh), (void *)a1))
			return -1;
		*msg_name = mh.msg_name;
		return iov_sum(mh.msg_iov, mh.msg_iovlen);
	}
	if (id == NR_readv || id == NR_writev)
		return iov_sum((const struct iovec *)a1, a2);
	if (id == NR_sendfile)
		return a3;
	if (id == NR_splice)
		return a4;
	if (id == NR_sendto || id == NR_recvfrom) {
		*msg_flags = a3;
		*msg_name = (const void *)a4;
	}
	return a2;
}

/* The start of an app call: remembers its socket, the bytes it asks for and
 * its flags until its exit (app_call_exit). a0..a4: the call's arguments. */
static __always_inline int app_call_enter(long id, __u64 a0, __u64 a1, __u64 a2, __u64 a3, __u64 a4)
{
	if (!task_traced())
		return 0;
	/* Only sockets: read()/write() on files must leave nothing behind. The
	 * socket: the first argument, but sendfile()'s is its output and
	 * splice()'s whichever end is a socket. */
	__u16 kind = MG_APP_RECV;
	__u64 sk;
	if (id == NR_splice) {
		sk = fd_socket(a2);
		if (sk)
			kind = MG_APP_SEND;
		else
			sk = fd_socket(a0);
	} else {
		sk = fd_socket(a0);
		if (id == NR_write || id == NR_writev || id == NR_sendfile || id == NR_sendto ||
		    id == NR_sendmsg || id == NR_sendmmsg)
			kind = MG_APP_SEND;
	}
	if (!sk)
		return 0;
	__s64 asked = -1;
	__u32 msg_flags = 0;
	__u64 mmsg = 0;
	__u32 vlen = 0;
	const void *msg_name = NULL;
	if (id == NR_sendmmsg || id == NR_recvmmsg) {
		mmsg = a1;
		vlen = a2;
		msg_flags = a3;
		if (vlen <= APP_MMSG_MAX) {
			asked = 0;
			for (int i = 0; i < APP_MMSG_MAX; i++) {
				if (i >= vlen)
					break;
				struct mmsghdr m;
				if (bpf_probe_read_user(&m, sizeof(m), (struct mmsghdr *)mmsg + i)) {
					asked = -1;
					break;
				}
				__s64 n = iov_sum(m.msg_hdr.msg_iov, m.msg_hdr.msg_iovlen);
				if (n < 0) {
					asked = -1;
					break;
				}
				asked += n;
			}
		}
	} else {
		asked = call_asked(id, a1, a2, a3, a4, &msg_flags, &msg_name);
	}
	/* Register the socket's flow now, so that packets arriving before its
	 * first app event (a receiver blocked in its first recv) are attributed. */
	if (filter_tasks) {
		struct sk_tuple t = {};
		read_sk_tuple((const struct sock *)sk, &t);
		/* With its cookie: a flow left at cookie 0 named no socket for
		 * the packets received during the call (the socket's app event
		 * finds it in the per-CPU cache and does not track it again). */
		if (t.sport)
			track_flow(&t, sk_key((const struct sock *)sk, BPF_CORE_READ((const struct sock *)sk, __sk_common.skc_cookie.counter)), sk);
	}
	struct syscall_in_flight *f = current_in_flight(true);
	if (f) {
		if (!f->valid) {
			__u32 *n = in_flight_bucket();
			if (n)
				__sync_fetch_and_add(n, 1);
		}
		f->asked = asked;
		f->sk = sk;
		f->valid = 1;
		f->has_dest = 0;
		f->nr = id;
		f->kind = kind;
		f->msg_flags = msg_flags;
		f->mmsg = mmsg;
		f->vlen = vlen;
		f->stamped = 0;
		if (tuple_filtered() && (id == NR_sendto || id == NR_sendmsg))
			read_dest(msg_name, f);
	}
	return 0;
}

/* The socket calls at their own enter tracepoints: the host's other system
 * calls run no program. The kernel refuses to attach a program that reads
 * past a tracepoint's last argument, so there is one program per argument
 * count the calls need read: 3 (read, write, readv, writev, sendmsg,
 * recvmsg), 4 (sendfile64, sendmmsg) and 5 (sendto, recvfrom, splice,
 * recvmmsg). */
#define APP_ENTER_TP(name, nargs)                                                       \
	MG_CTX_PROG("tracepoint", name, 0, struct mg_sys_enter_args *ctx)               \
	{                                                                               \
		long id = ctx->nr;                                                      \
		if (!app_nr(id))                                                        \
			return 0;                                                       \
		return app_call_enter(id, ctx->args[0], ctx->args[1], ctx->args[2],     \
				      (nargs) > 3 ? ctx->args[3] : 0,                   \
				      (nargs) > 4 ? ctx->args[4] : 0);                  \
	}
APP_ENTER_TP(app_enter3_tp, 3)
APP_ENTER_TP(app_enter4_tp, 4)
APP_ENTER_TP(app_enter5_tp, 5)

/* Without those tracepoints: the start of every system call, the number
 * first. */
MG_PROG("tp_btf/sys_enter", app_sys_enter, struct pt_regs *regs, long id)
{
	if (!app_nr(id))
		return 0;
	return app_call_enter(id, regs->di, regs->si, regs->dx, regs->r10, regs->r8);
}

/* The bytes a sendmmsg()/recvmmsg() moved: its messages' msg_len, which the
 * kernel wrote back for the first `n` (the syscall's return). */
static __always_inline __s64 mmsg_bytes(__u64 mmsg, long n)
{
	__s64 sum = 0;
	for (int i = 0; i < APP_MMSG_MAX; i++) {
		if (i >= n)
			break;
		__u32 len;
		if (bpf_probe_read_user(&len, sizeof(len), &((struct mmsghdr *)mmsg)[i].msg_len))
			return sum;
		sum += len;
	}
	return sum;
}

static __always_inline void app_emit(__u64 cookie, __s64 asked, __s64 ret, __u32 flags, __u16 kind,
				     __u16 family, __u16 protocol, __u16 type)
{
	struct mg_app *r;
	if (!RESERVE(r, sizeof(*r), kind))
		return;
	fill_hdr(&r->hdr, kind, 0);
	r->cookie = cookie;
	r->asked = asked;
	r->ret = ret;
	r->msg_flags = flags;
	r->family = family;
	r->protocol = protocol;
	r->type = type;
	r->_pad0 = 0;
	bpf_get_current_comm(r->comm, sizeof(r->comm));
	submit(r);
}

/* The app event of a socket syscall: one per call, whatever the kernel did
 * inside (a sendfile() sends once per pipe's worth, a sendmmsg() once per
 * message, and a call that fails before the socket is reached is none). */
static __always_inline int app_call_exit(long id, long ret)
{
	struct syscall_in_flight *f = in_flight_now();
	if (!f)
		return 0;
	f->valid = 0;
	__u32 *n = in_flight_bucket();
	if (n)
		__sync_fetch_and_add(n, -1);
	if (f->nr != id || f->stamped != 1)
		return 0;
	if (id == NR_sendmmsg || id == NR_recvmmsg) {
		if (ret > 0)
			ret = mmsg_bytes(f->mmsg, ret);
	}
	app_emit(f->cookie, f->asked, ret, f->msg_flags, f->kind, f->family, f->protocol, f->type);
	return 0;
}

/* At the socket calls' own exit tracepoints (those of app_enter3_tp, app_enter4_tp, app_enter5_tp). */
MG_CTX_PROG("tracepoint", app_exit_tp, 0, struct mg_sys_exit_args *ctx)
{
	long id = ctx->nr;
	if (!app_nr(id))
		return 0;
	return app_call_exit(id, ctx->ret);
}

/* Without them: the exit of every system call. */
MG_PROG("tp_btf/sys_exit", app_sys_exit, struct pt_regs *regs, long ret)
{
	long id = regs->orig_ax;
	if (!app_nr(id))
		return 0;
	return app_call_exit(id, ret);
}

/* io_uring: one app event per request, at its completion, with the length
 * its SQE asked for (read at submission: a partial send retried inside the
 * kernel moves the request's own length on) and the CQE's result. The
 * request's socket is known by the kernel's sends for it (app_event below,
 * whose trusted socket pointer can mark and announce it). */
/* The app kinds asked for (`--kinds`), for io_uring's requests: the socket
 * syscalls' kinds follow their stamping programs, loaded or not. */
const volatile bool app_send_on = true;
const volatile bool app_recv_on = true;

struct uring_req {
	__s64 asked;
	__u16 kind;
	__u16 opcode;
	__u32 _pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct uring_req);
} uring_reqs SEC(".maps");

struct uring_sock {
	__u64 cookie;
	__u16 family;
	__u16 protocol;
	__u16 type;
	__u16 _pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct uring_sock);
} uring_socks SEC(".maps");

static __always_inline void app_uring_sock(struct sock *sk, __u16 family)
{
	__u64 key = addr_of(sk);
	__u64 cookie = sk_cookie(sk);
	struct uring_sock *old = bpf_map_lookup_elem(&uring_socks, &key);
	if (old && old->cookie == cookie)
		return;
	if (!sock_traced(sk, cookie, true))
		return;
	struct uring_sock v = {
		.cookie = cookie,
		.family = family,
		.protocol = sk->sk_protocol,
		.type = sk->sk_type,
	};
	bpf_map_update_elem(&uring_socks, &key, &v, BPF_ANY);
}

static __always_inline int uring_submit(struct io_kiocb *req)
{
	__u8 op = BPF_CORE_READ(req, opcode);
	int dir = mg_uring_dir(op);
	if (dir < 0)
		return 0;
	struct uring_req v = { .asked = -1, .opcode = op, .kind = dir ? MG_APP_SEND : MG_APP_RECV };
	if (v.kind == MG_APP_SEND ? !app_send_on : !app_recv_on)
		return 0;
	if (!task_traced())
		return 0;
	void *cmd = (void *)&req->cmd;
	if (op == IORING_OP_SEND_ || op == IORING_OP_RECV_ || op == IORING_OP_SEND_ZC_) {
		v.asked = BPF_CORE_READ((struct io_sr_msg *)cmd, len);
	} else if (op == IORING_OP_SENDMSG_ || op == IORING_OP_RECVMSG_ || op == IORING_OP_SENDMSG_ZC_) {
		struct user_msghdr mh;
		void *um = BPF_CORE_READ((struct io_sr_msg *)cmd, umsg);
		if (!bpf_probe_read_user(&mh, sizeof(mh), um))
			v.asked = iov_sum(mh.msg_iov, mh.msg_iovlen);
	} else if (op == IORING_OP_READ_ || op == IORING_OP_WRITE_) {
		v.asked = BPF_CORE_READ((struct io_rw *)cmd, len);
	} else {
		v.asked = iov_sum((const struct iovec *)BPF_CORE_READ((struct io_rw *)cmd, addr),
				  BPF_CORE_READ((struct io_rw *)cmd, len));
	}
	__u64 key = addr_of(req);
	bpf_map_update_elem(&uring_reqs, &key, &v, BPF_ANY);
	return 0;
}

MG_PROG("tp_btf/io_uring_submit_req", app_uring_submit, struct io_kiocb *req)
{
	return uring_submit(req);
}

/* The same, loaded with app_uring_complete7 (a program attaches once). */
MG_PROG("tp_btf/io_uring_submit_req", app_uring_submit7, struct io_kiocb *req)
{
	return uring_submit(req);
}

static __always_inline void app_uring_done(void *req_, __s32 res, __u32 cflags)
{
	__u64 key = (__u64)req_;
	struct uring_req *v = bpf_map_lookup_elem(&uring_reqs, &key);
	if (!v)
		return;
	struct uring_req r = *v;
	/* A multishot request posts many results, each one the application
	 * gets; a zero-copy send's F_MORE announces only its notification. */
	if (!(cflags & IORING_CQE_F_MORE_) || r.opcode == IORING_OP_SEND_ZC_ ||
	    r.opcode == IORING_OP_SENDMSG_ZC_)
		bpf_map_delete_elem(&uring_reqs, &key);
	struct io_kiocb *req = req_;
	struct file *file = BPF_CORE_READ(req, file);
	if (!file || (BPF_CORE_READ(file, f_inode, i_mode) & S_IFMT) != S_IFSOCK)
		return;
	struct socket *so = BPF_CORE_READ(file, private_data);
	__u64 sk = (__u64)BPF_CORE_READ(so, sk);
	struct uring_sock *us = bpf_map_lookup_elem(&uring_socks, &sk);
	if (!us)
		return;
	app_emit(us->cookie, r.asked, res, 0, r.kind, us->family, us->protocol, us->type);
}

MG_PROG("tp_btf/io_uring_complete", app_uring_complete, struct io_ring_ctx *ring, void *req_,
	struct io_uring_cqe *cqe)
{
	app_uring_done(req_, BPF_CORE_READ(cqe, res), BPF_CORE_READ(cqe, flags));
	return 0;
}

/* io_uring_complete before it took the CQE (its result and flags as
 * arguments): (ctx, req, user_data, res, cflags, extra1, extra2). */
MG_PROG("tp_btf/io_uring_complete", app_uring_complete7, void *ring, void *req_, __u64 user_data,
	int res, unsigned cflags)
{
	app_uring_done(req_, res, cflags);
	return 0;
}

/* A completion the ring had no room for goes to its overflow list without
 * io_uring_complete: io_uring_cqe_overflow fires instead (5.19+), with the
 * CQE but no request. Its request is an outstanding one of that ring whose
 * own CQE says the same (same user_data, result and flags): once a ring is
 * full, every later completion of the batch overflows too, so requests alike
 * in all three are each taken once, whichever is found first. liburing's
 * send-zerocopy example overflows its ring with notifications under load. */
struct uring_overflow {
	__u64 ring;
	__u64 user_data;
	__s32 res;
	__u32 cflags;
	__u64 req;
};

static long uring_overflow_match(struct bpf_map *map, __u64 *key, struct uring_req *v,
				 struct uring_overflow *m)
{
	struct io_kiocb *req = (struct io_kiocb *)*key;
	if ((__u64)BPF_CORE_READ(req, ctx) != m->ring ||
	    BPF_CORE_READ(req, cqe.user_data) != m->user_data ||
	    BPF_CORE_READ(req, cqe.res) != m->res || BPF_CORE_READ(req, cqe.flags) != m->cflags)
		return 0;
	m->req = *key;
	return 1;
}

MG_PROG("tp_btf/io_uring_cqe_overflow", app_uring_overflow, void *ring, __u64 user_data,
	__s32 res, __u32 cflags)
{
	if (cflags & IORING_CQE_F_NOTIF_)
		return 0; /* a zero-copy send's notification: no call */
	struct uring_overflow m = {
		.ring = (__u64)ring, .user_data = user_data, .res = res, .cflags = cflags,
	};
	bpf_for_each_map_elem(&uring_reqs, uring_overflow_match, &m, 0);
	if (m.req)
		app_uring_done((void *)m.req, res, cflags);
	return 0;
}

static __always_inline bool current_is_kthread(void)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	return BPF_CORE_READ(t, flags) & 0x00200000; /* PF_KTHREAD */
}

#define SYSCALL_KTHREAD (-2)

/* The socket syscall the current task is in on `sk`, if any: its number,
 * with its registers in *regs (x86-64: di, si, dx, r10, r8 are its first
 * five arguments); SYSCALL_KTHREAD in a kernel thread; -1 if none (or not
 * known: before 5.15, which lacks bpf_task_pt_regs). Its number alone
 * would not do: io_uring's task work runs on the way back from any
 * syscall, and an io thread's registers are zero (read). */
static __always_inline long syscall_on(__u64 sk, struct pt_regs **regs)
{
	if (!bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_task_pt_regs) ||
	    !bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_get_current_task_btf))
		return current_is_kthread() ? SYSCALL_KTHREAD : -1;
	struct task_struct *t = bpf_get_current_task_btf();
	if (t->flags & 0x00200000) /* PF_KTHREAD */
		return SYSCALL_KTHREAD;
	if (t->flags & 0x00000010) /* PF_IO_WORKER: io-wq and SQPOLL threads */
		return -1;
	/* A typed pointer: its fields are direct loads, not helper calls. */
	struct pt_regs *r = (struct pt_regs *)bpf_task_pt_regs(t);
	long id = r->orig_ax;
	if (!app_nr(id))
		return -1;
	*regs = r;
	if (fd_socket(r->di) == sk)
		return id;
	return id == NR_splice && fd_socket(r->dx) == sk ? id : -1;
}

/* A call that reaches its socket once (every app call but sendfile(),
 * splice() and the mmsg pair): the socket's send or recv inside it is the
 * whole call. */
static __always_inline bool one_op_call(long id)
{
	return id != NR_sendfile && id != NR_splice && id != NR_sendmmsg && id != NR_recvmmsg;
}

/* A socket's send or recv inside the kernel. Within a traced socket syscall
 * whose start a program saw it stamps the call with the socket (the event
 * comes at sys_exit); in a socket syscall whose start none saw, or from a
 * kernel thread (an in-kernel socket user such as the NFS client), it is
 * the call itself; in any other user task it is io_uring's work on a
 * request (in io_uring_enter, an io-wq worker or the SQPOLL thread),
 * recorded per request (app_uring_*), not per attempt. */
static __always_inline int app_event(struct sock *sk, int ret, int flags, __u16 kind)
{
	__u16 family = sk->__sk_common.skc_family;
	/* The tracepoints also fire for netlink and unix sockets. */
	if (family != AF_INET && family != AF_INET6)
		return 0;
	struct syscall_in_flight *a = in_flight_now();
	if (a && a->sk == addr_of(sk)) {
		if (a->kind != kind)
			return 0;
		a->msg_flags |= flags;
		if (a->stamped)
			return 0;
		__u64 cookie = sk_cookie(sk);
		if (!sock_traced(sk, cookie, true)) {
			a->stamped = 2;
			return 0;
		}
		a->cookie = cookie;
		a->family = family;
		a->protocol = sk->sk_protocol;
		a->type = sk->sk_type;
		a->stamped = 1;
		return 0;
	}
	/* --netns: another namespace's socket, before its call is looked at
	 * (a call a program saw start, above, is stamped as not traced). */
	if (sock_elsewhere(sk))
		return 0;
	__s64 asked = -1;
	struct pt_regs *r = NULL;
	long id = syscall_on(addr_of(sk), &r);
	if (id != SYSCALL_KTHREAD) {
		if (id < 0 || !r) {
			app_uring_sock(sk, family);
			return 0;
		}
		/* A socket syscall whose start no program saw: one that began
		 * before the recording (a recv blocked when it started), or any
		 * call of one socket operation when the recording has no
		 * program at the calls' starts (probes.rs, "app_calls"): the
		 * call is this operation, its arguments in its registers. Its
		 * result is the operation's, which the syscall returns (but for
		 * a recvfrom() whose address cannot be copied out). */
		if (one_op_call(id)) {
			__u32 call_flags = 0;
			const void *name = NULL;
			asked = call_asked(id, r->si, r->dx, r->r10, r->r8, &call_flags, &name);
			flags |= call_flags;
		}
	}
	/* Else a kernel thread's send (the NFS client): the call as the
	 * socket saw it, its size asked unknown; so too a sendfile(), splice()
	 * or mmsg call that began before the recording. */
	__u64 cookie = sk_cookie(sk);
	if (!sock_traced(sk, cookie, true))
		return 0;
	app_emit(cookie, asked, ret, flags, kind, family, sk->sk_protocol, sk->sk_type);
	return 0;
}

MG_PROG("tp_btf/sock_send_length", app_send, struct sock *sk, int ret, int flags)
{
	return app_event(sk, ret, flags, MG_APP_SEND);
}

MG_PROG("tp_btf/sock_recv_length", app_recv, struct sock *sk, int ret, int flags)
{
	return app_event(sk, ret, flags, MG_APP_RECV);
}

/* splice() from a TCP socket reads through tcp_splice_read, not through
 * sock_recvmsg, so sock_recv_length never stamps the call. tcp_read_sock,
 * which it uses, ends in tcp_rcv_space_adjust, whose tracepoint names the
 * socket: stamp the splice in flight on it there. Every other call on the
 * socket (a recvmsg also passes this tracepoint) is left to app_recv. */
MG_PROG("tp_btf/tcp_rcv_space_adjust", app_splice_recv, struct sock *sk)
{
	struct syscall_in_flight *a = in_flight_now();
	if (!a || a->nr != NR_splice || a->kind != MG_APP_RECV || a->sk != addr_of(sk))
		return 0;
	return app_event(sk, 0, 0, MG_APP_RECV);
}
