// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Layer sched: context switches and wake-ups of traced tasks, and the
 * traced set following forks and exits.
 */

/* ---- layer: sched --------------------------------------------------------- */

/* task_traced() for a task other than the current one (the other side of a
 * context switch, the task woken, the parent of a fork). */
static __always_inline bool task_struct_traced(struct task_struct *t)
{
	if (!task_in_netns(t))
		return false;
	if (!filter_tasks)
		return true;
	if (filter_pid) {
		__u32 tgid = t->tgid;
		if (!bpf_map_lookup_elem(&traced_tgids, &tgid))
			return false;
	}
	if (filter_comm) {
		char comm[16];
		if (bpf_probe_read_kernel(comm, sizeof(comm), t->comm) || !comm_equal(comm))
			return false;
	}
	if (cgroup_filter && t->cgroups->dfl_cgrp->kn->id != cgroup_filter)
		return false;
	return true;
}

static __always_inline void switch_event(struct task_struct *prev, struct task_struct *next,
					 unsigned int prev_state)
{
	__u32 ptgid = BPF_CORE_READ(prev, tgid), ntgid = BPF_CORE_READ(next, tgid);
	if (!task_struct_traced(prev) && !task_struct_traced(next))
		return;
	struct mg_sched_switch *r;
	if (!RESERVE(r, sizeof(*r), MG_SCHED_SWITCH))
		return;
	fill_hdr(&r->hdr, MG_SCHED_SWITCH, 0);
	r->prev_tid = BPF_CORE_READ(prev, pid);
	r->prev_tgid = ptgid;
	r->next_tid = BPF_CORE_READ(next, pid);
	r->next_tgid = ntgid;
	r->prev_state = prev_state;
	BPF_CORE_READ_STR_INTO(&r->prev_comm, prev, comm);
	BPF_CORE_READ_STR_INTO(&r->next_comm, next, comm);
	submit(r);
}

MG_PROG("tp_btf/sched_switch", sched_switch, bool preempt, struct task_struct *prev,
	struct task_struct *next, unsigned int prev_state)
{
	switch_event(prev, next, prev_state);
	return 0;
}

/* task_struct's state before 5.14 (then __state). */
struct task_struct___state {
	long state;
};

/* sched_switch before 5.18: no prev_state argument; the task's own state,
 * which the tracepoint's argument is a copy of. */
MG_PROG("tp_btf/sched_switch", sched_switch_3arg, bool preempt, struct task_struct *prev,
	struct task_struct *next)
{
	unsigned int st = 0;
	if (bpf_core_field_exists(struct task_struct___state, state))
		st = BPF_CORE_READ((struct task_struct___state *)prev, state);
	else
		st = BPF_CORE_READ(prev, __state);
	switch_event(prev, next, st);
	return 0;
}

static __always_inline void task_event(struct task_struct *t, __u16 kind, int arg)
{
	struct mg_task *r;
	if (!RESERVE(r, sizeof(*r), kind))
		return;
	fill_hdr(&r->hdr, kind, 0);
	r->tid = BPF_CORE_READ(t, pid);
	r->tgid = BPF_CORE_READ(t, tgid);
	r->arg = arg;
	r->_pad0 = 0;
	BPF_CORE_READ_STR_INTO(&r->comm, t, comm);
	submit(r);
}

MG_PROG("tp_btf/sched_wakeup", sched_wakeup, struct task_struct *p)
{
	if (!task_struct_traced(p))
		return 0;
	task_event(p, MG_SCHED_WAKEUP, BPF_CORE_READ(p, wake_cpu));
	return 0;
}

MG_PROG("tp_btf/sched_process_exit", sched_exit, struct task_struct *p)
{
	if (!task_struct_traced(p))
		return 0;
	task_event(p, MG_SCHED_EXIT, BPF_CORE_READ(p, exit_code));
	return 0;
}

/* Follows children of traced processes (always loaded with a pid filter);
 * records the fork when the sched layer is on. */
const volatile bool record_fork = false;

MG_PROG("tp_btf/sched_process_fork", sched_fork, struct task_struct *parent,
	struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	__u32 ctgid = BPF_CORE_READ(child, tgid);
	bool traced = task_struct_traced(parent);
	if (filter_pid && traced && ctgid != ptgid) {
		__u8 one = 1;
		bpf_map_update_elem(&traced_tgids, &ctgid, &one, BPF_ANY);
	}
	if (record_fork && traced)
		task_event(child, MG_SCHED_FORK, ptgid);
	return 0;
}
