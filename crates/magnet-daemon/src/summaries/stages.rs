//! The send path's stages (`bpf/stages.bpf.c`, the `stack_latency` part):
//! attaching its sock_ops program on the cgroup v2 root and its tracepoint
//! program, reading each connection's stage histograms, and saying which
//! method times each connection.

use std::collections::{BTreeMap, BTreeSet};
use std::os::fd::AsRawFd;

use libbpf_rs::{Link, MapCore, MapFlags, MapHandle};
use magnet_client::{Connection, SendStages};
use magnet_kernel::plan::{Attach, Candidate, Plan, Refusals};

use crate::config::PacketHooks;
use crate::skel::{types, SummarySkel};

use super::reader::{hist, Reader, Record};

/// The part's name.
pub const PART: &str = "stack_latency";

/// The part's programs, in the order of its first candidate.
pub const PROGS: [&str; 2] = ["stages_ops", "stages_send"];

/// The method that times send paths with the part's first candidate.
pub const TX_TIMESTAMPS: &str = "tx_timestamps";

/// Attaches the part's programs when the plan chose them: the sock_ops
/// program on the cgroup v2 root `cgroup`, the tracepoint program; each link
/// comes with its program and hook. Where the kernel refuses a link, the
/// part falls back (to the sampled `app_to_wire`) with the kernel's words in
/// the plan.
pub(super) fn attach(
    plan: &mut Plan,
    skel: &SummarySkel<'static>,
    cgroup: &std::fs::File,
) -> Vec<(&'static str, Attach, Link)> {
    let Some(c) = plan.used(PART).filter(|c| c.has_prog(PROGS[0])) else {
        return Vec::new();
    };
    let hook = |name: &str| {
        c.progs
            .iter()
            .find(|(p, _)| *p == name)
            .map_or(Attach::SockOps, |(_, a)| *a)
    };
    let (ops_hook, send_hook) = (hook(PROGS[0]), hook(PROGS[1]));
    let p = &skel.progs;
    let res = p
        .stages_ops
        .attach_cgroup(cgroup.as_raw_fd())
        .map_err(|e| format!("sock_ops: the kernel refused its link: {e}"))
        .and_then(|ops| {
            p.stages_send
                .attach()
                .map(|send| vec![(PROGS[0], ops_hook, ops), (PROGS[1], send_hook, send)])
                .map_err(|e| format!("tp_btf/tcp_sendmsg_locked: the kernel refused its link: {e}"))
        });
    match res {
        Ok(links) => links,
        Err(why) => {
            if let Some(c) = plan.get_mut(PART) {
                let mut refused = Refusals::new();
                refused.insert((c.part.name, 0), why);
                let (next, passed) = c.part.choose_from(0, &|_| None, &refused);
                c.chosen = next.ok_or_else(|| passed.join("; "));
                c.passed = passed;
            }
            Vec::new()
        }
    }
}

/// How send paths are timed with this plan and `packet_hooks` (as run):
/// `tx_timestamps`, `sampled` or `off` (/health's `send_latency`).
pub fn host_method(plan: &Plan, packet_hooks: PacketHooks) -> &'static str {
    if plan.used(PART).is_some_and(|c| c.has_prog(PROGS[0])) {
        TX_TIMESTAMPS
    } else {
        sampled_or_off(packet_hooks)
    }
}

fn sampled_or_off(packet_hooks: PacketHooks) -> &'static str {
    if packet_hooks.ever() {
        "sampled"
    } else {
        "off"
    }
}

/// Adds `b`'s counts into `a`, slot by slot.
pub(crate) fn add(a: &mut SendStages, b: &SendStages) {
    a.sends += b.sends;
    a.sample_every = a.sample_every.max(b.sample_every);
    a.unmatched += b.unmatched;
    let pairs = [
        (&mut a.to_qdisc, &b.to_qdisc),
        (&mut a.qdisc_to_device, &b.qdisc_to_device),
        (&mut a.device_to_ack, &b.device_to_ack),
        (&mut a.send_to_ack, &b.send_to_ack),
    ];
    for (x, y) in pairs {
        add_slots(x, y);
    }
}

/// Adds histogram `y` into `x`, slot by slot, whatever the lengths.
pub(super) fn add_slots(x: &mut Vec<u64>, y: &[u64]) {
    if x.len() < y.len() {
        x.resize(y.len(), 0);
    }
    for (i, n) in y.iter().enumerate() {
        x[i] += n;
    }
}

/// A connection's stages as the map holds them.
fn decode(raw: &[u8]) -> Option<SendStages> {
    if raw.len() < std::mem::size_of::<types::mg_stages>() {
        return None;
    }
    // SAFETY: length checked; plain old data.
    let s: types::mg_stages = unsafe { std::ptr::read_unaligned(raw.as_ptr().cast()) };
    Some(SendStages {
        sample_every: 0,
        sends: s.sends,
        unmatched: s.unmatched,
        to_qdisc: hist(&s.hist[0]),
        qdisc_to_device: hist(&s.hist[1]),
        device_to_ack: hist(&s.hist[2]),
        send_to_ack: hist(&s.hist[3]),
    })
}

impl Reader {
    /// Gives each record its send path's method, and its stages where the
    /// TX timestamp callbacks time it.
    pub(super) fn add_stages(&self, recs: &mut [Record]) {
        let fallback = self
            .windows
            .lock()
            .map_or("off", |w| sampled_or_off(w.mode));
        for r in recs {
            let l = &mut r.conn.latency;
            l.stages = self.stages.as_ref().and_then(|m| {
                let raw = m
                    .lookup(&r.conn.cookie.to_ne_bytes(), MapFlags::ANY)
                    .ok()??;
                decode(&raw)
            });
            if let Some(s) = &mut l.stages {
                s.sample_every = self.every.send;
            }
            l.method = if l.stages.is_some() {
                TX_TIMESTAMPS
            } else {
                fallback
            }
            .to_string();
        }
    }

    /// Removes the stages of connections whose records are gone (`kept`:
    /// the cookies of the records still in the connection map), adding them
    /// to their cgroup's (`cgroups`: cookie → cgroup id, as read before the
    /// reap) so that per-cgroup histograms only grow.
    pub(super) fn reap_stages(&self, kept: &BTreeSet<u64>, cgroups: &BTreeMap<u64, u64>) {
        let Some(m) = &self.stages else {
            return;
        };
        let gone: Vec<(u64, Vec<u8>)> = m
            .keys()
            .filter_map(|k| {
                let cookie = u64::from_ne_bytes(<[u8; 8]>::try_from(k.as_slice()).ok()?);
                (!kept.contains(&cookie)).then_some((cookie, k))
            })
            .collect();
        for (cookie, k) in gone {
            let stages = m.lookup(&k, MapFlags::ANY).ok().flatten();
            if m.delete(&k).is_err() {
                continue;
            }
            let (Some(cg), Some(s)) = (cgroups.get(&cookie), stages.as_deref().and_then(decode))
            else {
                continue;
            };
            if let Ok(mut g) = self.stages_gone.lock() {
                add(g.entry(*cg).or_default(), &s);
            }
        }
    }

    /// Send stages per cgroup: those of its connections now (`conns`) and
    /// of its reaped ones. Only cgroups with stamped sends.
    pub fn cgroup_stages<'a>(
        &self,
        conns: impl IntoIterator<Item = &'a Connection>,
    ) -> BTreeMap<u64, SendStages> {
        let mut by = self
            .stages_gone
            .lock()
            .map(|g| g.clone())
            .unwrap_or_default();
        for c in conns {
            if let Some(s) = &c.latency.stages {
                add(by.entry(c.cgroup_id).or_default(), s);
            }
        }
        by.retain(|_, s| s.sends > 0);
        by
    }
}

/// The stage map's handle when the part's programs were loaded.
pub(super) fn map_handle(plan: &Plan, skel: &SummarySkel<'static>) -> Option<MapHandle> {
    plan.used(PART)
        .is_some_and(|c: &Candidate| c.has_prog(PROGS[0]))
        .then(|| MapHandle::try_from(&skel.maps.stages).ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::AppCalls;
    use magnet_kernel::plan::Refusals;

    /// Per-cgroup sums add slot by slot, whatever the lengths.
    #[test]
    fn stages_add_slot_by_slot() {
        let mut a = SendStages {
            sends: 2,
            to_qdisc: vec![1, 1],
            send_to_ack: vec![0, 2],
            ..SendStages::default()
        };
        let b = SendStages {
            sends: 3,
            sample_every: 4,
            unmatched: 1,
            to_qdisc: vec![0, 1, 0, 2],
            qdisc_to_device: vec![3],
            device_to_ack: vec![0, 3],
            send_to_ack: vec![1],
        };
        add(&mut a, &b);
        assert_eq!(
            a,
            SendStages {
                sends: 5,
                sample_every: 4,
                unmatched: 1,
                to_qdisc: vec![1, 2, 0, 2],
                qdisc_to_device: vec![3],
                device_to_ack: vec![0, 3],
                send_to_ack: vec![1, 2],
            }
        );
    }

    /// The part's first candidate is TX timestamps; refused (as on a kernel
    /// without the callbacks), send latency is the sampled app_to_wire with
    /// one fallback line, or off without the per-packet programs.
    #[test]
    fn refused_callbacks_fall_back_to_sampled() {
        if std::env::var_os(magnet_kernel::deny::VAR).is_some() {
            eprintln!("skipped: MAGNET_HOOKS_DENY is set");
            return;
        }
        let hooks = PacketHooks::Always;
        let (plan, progs) =
            super::super::plan::choose(hooks, AppCalls::Syscalls, &|_| None, &Refusals::new());
        assert!(PROGS.iter().all(|p| progs.contains(p)), "{progs:?}");
        assert_eq!(host_method(&plan, hooks), TX_TIMESTAMPS);
        let mut refused = Refusals::new();
        refused.insert(
            (PART, 0),
            "the kernel refused sock_ops+tp_btf/tcp_sendmsg_locked: Invalid argument (os error 22)"
                .to_string(),
        );
        let (plan, progs) =
            super::super::plan::choose(hooks, AppCalls::Syscalls, &|_| None, &refused);
        assert!(!progs.contains(&PROGS[0]) && !progs.contains(&PROGS[1]));
        assert_eq!(
            plan.used(PART).map(Candidate::name).as_deref(),
            Some("sampled")
        );
        assert_eq!(host_method(&plan, hooks), "sampled");
        assert_eq!(host_method(&plan, PacketHooks::Off), "off");
        assert_eq!(
            plan.fallbacks(),
            [
                "stack_latency through sampled: sock_ops+tp_btf/tcp_sendmsg_locked: the kernel \
              refused sock_ops+tp_btf/tcp_sendmsg_locked: Invalid argument (os error 22)"
            ]
        );
    }
}
