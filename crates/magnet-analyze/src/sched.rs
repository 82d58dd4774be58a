//! Scheduler statistics from sched_switch and sched_wakeup: switches per CPU
//! over time, time on CPU and run-queue wait per thread.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::dist::Dist;
use crate::model::{CpuSched, Sched, TaskSched};

/// Counts in bins from `start`; when more than `cap` bins are needed, pairs are
/// merged and the width doubles, so memory stays bounded.
#[derive(Clone, Debug)]
pub(crate) struct Bins {
    pub width: u64,
    pub counts: Vec<u64>,
    cap: usize,
}

impl Bins {
    pub fn new(width: u64, cap: usize) -> Bins {
        Bins {
            width: width.max(1),
            counts: Vec::new(),
            cap: cap.max(2),
        }
    }

    pub fn add(&mut self, rel_ns: u64) {
        let mut i = (rel_ns / self.width) as usize;
        while i >= self.cap && self.width <= u64::MAX / 4 {
            let merged: Vec<u64> = self.counts.chunks(2).map(|c| c.iter().sum()).collect();
            self.counts = merged;
            self.width *= 2;
            i = (rel_ns / self.width) as usize;
        }
        let i = i.min(self.cap - 1);
        if self.counts.len() <= i {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] += 1;
    }

    /// Re-bins to `width` (a multiple of the current one) and `len` bins.
    pub fn widen_to(&self, width: u64, len: usize) -> Vec<u64> {
        let f = (width / self.width).max(1) as usize;
        let mut out: Vec<u64> = self.counts.chunks(f).map(|c| c.iter().sum()).collect();
        out.resize(len, 0);
        out
    }
}

#[derive(Default)]
struct Task {
    tgid: u32,
    comm: String,
    on_cpu_since: Option<u64>,
    runnable_since: Option<u64>,
    on_cpu_ns: u64,
    switches_in: u64,
    wakeups: u64,
    runq_wait: Dist,
    /// The latest run-queue waits (runnable since, switched in).
    recent: std::collections::VecDeque<RunqWait>,
}

/// A thread runnable from `since` until switched in at `until`.
#[derive(Clone, Copy, Debug, Default)]
struct RunqWait {
    since: u64,
    until: u64,
}

/// Waits kept per thread for [`SchedAcc::cpu_wait`].
const RECENT: usize = 32;

/// The task a context switch took off the CPU.
pub(crate) struct SwitchedOut {
    pub tid: u32,
    pub tgid: u32,
    /// `prev_state` (0: preempted, still runnable).
    pub state: i64,
}

/// The task a context switch put on the CPU.
pub(crate) struct SwitchedIn {
    pub tid: u32,
    pub tgid: u32,
    pub comm: Option<String>,
}

/// One CPU's context switches: the count and per-bin counts.
struct CpuAcc {
    switches: u64,
    bins: Bins,
}

pub(crate) struct SchedAcc {
    origin: u64,
    bin_ns: u64,
    cap: usize,
    cpus: BTreeMap<u32, CpuAcc>,
    tasks: HashMap<u32, Task>,
    switches: u64,
}

/// TASK_RUNNING as sched_switch reports prev_state: the task was preempted and
/// stays on the run queue.
const TASK_RUNNING: i64 = 0;

impl SchedAcc {
    pub fn new(origin: u64, bin_ns: u64, cap: usize) -> SchedAcc {
        SchedAcc {
            origin,
            bin_ns,
            cap,
            cpus: BTreeMap::new(),
            tasks: HashMap::new(),
            switches: 0,
        }
    }

    pub fn switch(&mut self, ts: u64, cpu: u32, prev: SwitchedOut, next: SwitchedIn) {
        self.switches += 1;
        let (origin, bin_ns, cap) = (self.origin, self.bin_ns, self.cap);
        let e = self.cpus.entry(cpu).or_insert_with(|| CpuAcc {
            switches: 0,
            bins: Bins::new(bin_ns, cap),
        });
        e.switches += 1;
        e.bins.add(ts.saturating_sub(origin));
        let SwitchedOut {
            tid: ptid,
            tgid: ptgid,
            state: pstate,
        } = prev;
        if ptid != 0 {
            let t = self.tasks.entry(ptid).or_default();
            t.tgid = ptgid;
            if let Some(s) = t.on_cpu_since.take() {
                t.on_cpu_ns = t.on_cpu_ns.saturating_add(ts.saturating_sub(s));
            }
            t.runnable_since = (pstate == TASK_RUNNING).then_some(ts);
        }
        let SwitchedIn {
            tid: ntid,
            tgid: ntgid,
            comm: ncomm,
        } = next;
        if ntid != 0 {
            let t = self.tasks.entry(ntid).or_default();
            t.tgid = ntgid;
            if let Some(c) = ncomm {
                t.comm = c;
            }
            t.on_cpu_since = Some(ts);
            t.switches_in += 1;
            if let Some(r) = t.runnable_since.take() {
                t.runq_wait.add(ts.saturating_sub(r));
                if t.recent.len() == RECENT {
                    t.recent.pop_front();
                }
                t.recent.push_back(RunqWait {
                    since: r,
                    until: ts,
                });
            }
        }
    }

    pub fn wakeup(&mut self, ts: u64, tid: u32, tgid: u32) {
        if tid == 0 {
            return;
        }
        let t = self.tasks.entry(tid).or_default();
        t.tgid = tgid;
        t.wakeups += 1;
        if t.runnable_since.is_none() && t.on_cpu_since.is_none() {
            t.runnable_since = Some(ts);
        }
    }

    /// Time thread `tid` spent runnable but off a CPU (woken or preempted until
    /// switched in) between `after` and `now`. `None` without scheduler events
    /// for the thread.
    pub fn cpu_wait(&self, tid: u32, after: u64, now: u64) -> Option<u64> {
        let t = self.tasks.get(&tid)?;
        if t.switches_in == 0 {
            return None;
        }
        Some(
            t.recent
                .iter()
                .filter(|w| w.until > after && w.until <= now)
                .map(|w| w.until - w.since.max(after))
                .sum(),
        )
    }

    pub fn finish(self, end: u64, traced: &HashSet<u32>, series: bool) -> Sched {
        let width = self
            .cpus
            .values()
            .map(|c| c.bins.width)
            .max()
            .unwrap_or(self.bin_ns);
        // All CPUs on one time axis, to the end of the trace (bounded by the cap:
        // a damaged timestamp must not make it huge).
        let span = end.saturating_sub(self.origin);
        let len = self
            .cpus
            .values()
            .map(|c| {
                c.bins
                    .counts
                    .len()
                    .div_ceil((width / c.bins.width).max(1) as usize)
            })
            .max()
            .unwrap_or(0)
            .max(((span / width).saturating_add(1)).min(self.cap as u64) as usize);
        let cpus = self
            .cpus
            .into_iter()
            .map(|(cpu, c)| CpuSched {
                cpu,
                switches: c.switches,
                bins: if series {
                    c.bins.widen_to(width, len)
                } else {
                    Vec::new()
                },
            })
            .collect();
        let mut tasks: Vec<TaskSched> = self
            .tasks
            .into_iter()
            .filter(|(_, t)| traced.is_empty() || traced.contains(&t.tgid))
            .map(|(tid, mut t)| {
                if let Some(s) = t.on_cpu_since.take() {
                    t.on_cpu_ns = t.on_cpu_ns.saturating_add(end.saturating_sub(s));
                }
                TaskSched {
                    tid,
                    tgid: t.tgid,
                    comm: t.comm,
                    on_cpu_ns: t.on_cpu_ns,
                    switches_in: t.switches_in,
                    wakeups: t.wakeups,
                    runq_wait: t.runq_wait.stats(),
                }
            })
            .collect();
        tasks.sort_by_key(|t| (t.tgid, t.tid));
        Sched {
            switches: self.switches,
            cpus,
            tasks,
            bin_ns: width,
        }
    }
}

#[cfg(test)]
mod tests {
    fn out(tid: u32, tgid: u32, state: i64) -> SwitchedOut {
        SwitchedOut { tid, tgid, state }
    }
    fn sw_in(tid: u32, tgid: u32, comm: Option<String>) -> SwitchedIn {
        SwitchedIn { tid, tgid, comm }
    }
    use super::*;

    #[test]
    fn bins_merge_when_full() {
        let mut b = Bins::new(10, 4);
        for t in [0, 5, 15, 35, 45] {
            b.add(t);
        }
        assert_eq!(b.width, 20);
        assert_eq!(b.counts, vec![3, 1, 1]);
    }

    #[test]
    fn on_cpu_and_runq_wait() {
        let mut s = SchedAcc::new(0, 1000, 100);
        // 7 wakes at 100, runs 150..400, sleeps (state 1); preempted at 600 after
        // running again from 500, back on at 650.
        s.wakeup(100, 7, 7);
        s.switch(150, 0, out(0, 0, 0), sw_in(7, 7, Some("t".into())));
        s.switch(400, 0, out(7, 7, 1), sw_in(0, 0, None));
        s.wakeup(480, 7, 7);
        s.switch(500, 0, out(0, 0, 0), sw_in(7, 7, None));
        s.switch(600, 0, out(7, 7, TASK_RUNNING), sw_in(9, 9, None));
        s.switch(650, 0, out(9, 9, 1), sw_in(7, 7, None));
        assert_eq!(s.cpu_wait(7, 400, 700), Some(20 + 50));
        assert_eq!(s.cpu_wait(7, 490, 620), Some(10));
        assert_eq!(s.cpu_wait(8, 0, 700), None);
        let out = s.finish(1000, &HashSet::from([7]), true);
        let t = &out.tasks[0];
        assert_eq!(out.tasks.len(), 1);
        assert_eq!(t.on_cpu_ns, 250 + 100 + 350);
        assert_eq!(t.switches_in, 3);
        let w = t.runq_wait.as_ref().unwrap();
        assert_eq!((w.count, w.min, w.max), (3, 20, 50));
        assert_eq!(out.cpus[0].switches, 5);
        assert_eq!(out.cpus[0].bins, vec![5, 0]);
    }
}
