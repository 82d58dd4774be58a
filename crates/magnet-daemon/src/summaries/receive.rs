//! The receive path's stages (`bpf/rx.bpf.c`, the `receive_latency` part):
//! the kernel's receive stamp on each skb, kept on (a socket of magnetd's
//! asks for receive stamps, so the kernel stamps every packet), the clock
//! offset the programs need, and each connection's stage histograms.

use std::collections::{BTreeMap, BTreeSet};
use std::os::fd::{FromRawFd, OwnedFd};

use libbpf_rs::{MapCore, MapFlags, MapHandle};
use magnet_client::{Connection, ReceiveStages};
use magnet_kernel::plan::Plan;

use crate::config::PacketHooks;
use crate::skel::{types, SummarySkel};

use super::reader::{hist, Reader, Record};

/// The part's name.
pub const PART: &str = "receive_latency";

/// The part's programs, in the order of its first candidate (`app_recv` is
/// the app part's too: one program at each read does both parts' work).
pub const PROGS: [&str; 2] = ["rx_queue", "app_recv"];

/// The method that times receive paths with the part's first candidate.
pub const RX_STAMPS: &str = "rx_stamps";

/// The part's maps, when its programs were loaded.
pub(super) struct RxMaps {
    stages: MapHandle,
    clock: MapHandle,
    /// A UDP socket with SO_TIMESTAMP on: while one exists the kernel puts
    /// its receive stamp on every packet (net_enable_timestamp).
    _stamps_on: Option<OwnedFd>,
}

fn chosen(plan: &Plan) -> bool {
    plan.used(PART).is_some_and(|c| c.has_prog(PROGS[0]))
}

/// How receive paths are timed with this plan and `packet_hooks` (as run):
/// `rx_stamps`, `sampled` or `off` (/health's `receive_latency`).
pub fn host_method(plan: &Plan, packet_hooks: PacketHooks) -> &'static str {
    if chosen(plan) {
        RX_STAMPS
    } else if packet_hooks.ever() {
        "sampled"
    } else {
        "off"
    }
}

/// A socket that asks for receive stamps, so that the kernel stamps every
/// packet it receives (its `netstamp_needed` key); None if refused.
fn stamps_on() -> Option<OwnedFd> {
    // SAFETY: plain socket calls on a descriptor this function owns.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return None;
        }
        let fd = OwnedFd::from_raw_fd(fd);
        let on: libc::c_int = 1;
        let r = libc::setsockopt(
            std::os::fd::AsRawFd::as_raw_fd(&fd),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMP,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
        (r == 0).then_some(fd)
    }
}

/// CLOCK_REALTIME − CLOCK_MONOTONIC in ns (the skb stamp's clock to the
/// programs' clock).
fn clock_offset() -> i64 {
    let ns =
        |id| nix::time::clock_gettime(id).map_or(0, |t| t.tv_sec() * 1_000_000_000 + t.tv_nsec());
    let mono = ns(nix::time::ClockId::CLOCK_MONOTONIC);
    ns(nix::time::ClockId::CLOCK_REALTIME) - mono
}

/// The part's maps when the plan chose its programs, with the receive
/// stamps turned on and the clock offset written.
pub(super) fn maps(plan: &Plan, skel: &SummarySkel<'static>) -> Option<RxMaps> {
    if !chosen(plan) {
        return None;
    }
    let m = RxMaps {
        stages: MapHandle::try_from(&skel.maps.rx_stages).ok()?,
        clock: MapHandle::try_from(&skel.maps.rx_clock).ok()?,
        _stamps_on: stamps_on(),
    };
    m.set_clock();
    Some(m)
}

impl RxMaps {
    /// Writes the clock offset (again: a step of the wall clock moves it).
    fn set_clock(&self) {
        let _ = self.clock.update(
            &0u32.to_ne_bytes(),
            &clock_offset().to_ne_bytes(),
            MapFlags::ANY,
        );
    }
}

/// A connection's receive stages as the map holds them.
fn decode(raw: &[u8]) -> Option<ReceiveStages> {
    if raw.len() < std::mem::size_of::<types::mg_rx_stages>() {
        return None;
    }
    // SAFETY: length checked; plain old data.
    let s: types::mg_rx_stages = unsafe { std::ptr::read_unaligned(raw.as_ptr().cast()) };
    Some(ReceiveStages {
        packets: s.packets,
        sample_every: 0,
        unstamped: s.unstamped,
        lost: s.lost,
        device_to_queue: hist(&s.hist[0]),
        queue_to_read: hist(&s.hist[1]),
        device_to_read: hist(&s.hist[2]),
    })
}

/// Adds `b`'s counts into `a`, slot by slot.
fn add(a: &mut ReceiveStages, b: &ReceiveStages) {
    a.packets += b.packets;
    a.unstamped += b.unstamped;
    a.lost += b.lost;
    a.sample_every = a.sample_every.max(b.sample_every);
    super::stages::add_slots(&mut a.device_to_queue, &b.device_to_queue);
    super::stages::add_slots(&mut a.queue_to_read, &b.queue_to_read);
    super::stages::add_slots(&mut a.device_to_read, &b.device_to_read);
}

impl Reader {
    /// Gives each record its receive stages, where it has any.
    pub(super) fn add_receive(&self, recs: &mut [Record]) {
        let Some(m) = &self.rx else {
            return;
        };
        m.set_clock();
        for r in recs {
            r.conn.latency.receive = m
                .stages
                .lookup(&r.conn.cookie.to_ne_bytes(), MapFlags::ANY)
                .ok()
                .flatten()
                .and_then(|raw| decode(&raw))
                .map(|mut s| {
                    s.sample_every = self.every.receive;
                    s
                });
        }
    }

    /// Removes the receive stages of connections whose records are gone
    /// (`kept`: the cookies still in the connection map), adding them to
    /// their cgroup's (`cgroups`: cookie → cgroup id, read before the reap).
    pub(super) fn reap_receive(&self, kept: &BTreeSet<u64>, cgroups: &BTreeMap<u64, u64>) {
        let Some(m) = &self.rx else {
            return;
        };
        for k in m.stages.keys() {
            let Ok(c) = <[u8; 8]>::try_from(k.as_slice()) else {
                continue;
            };
            let cookie = u64::from_ne_bytes(c);
            if kept.contains(&cookie) {
                continue;
            }
            let s = m.stages.lookup(&k, MapFlags::ANY).ok().flatten();
            if m.stages.delete(&k).is_err() {
                continue;
            }
            if let (Some(cg), Some(mut s)) = (cgroups.get(&cookie), s.as_deref().and_then(decode)) {
                s.sample_every = self.every.receive;
                if let Ok(mut g) = self.rx_gone.lock() {
                    add(g.entry(*cg).or_default(), &s);
                }
            }
        }
    }

    /// Receive stages per cgroup: those of its connections now (`conns`)
    /// and of its reaped ones. Only cgroups with sampled packets.
    pub fn cgroup_receive<'a>(
        &self,
        conns: impl IntoIterator<Item = &'a Connection>,
    ) -> BTreeMap<u64, ReceiveStages> {
        let mut by = self.rx_gone.lock().map(|g| g.clone()).unwrap_or_default();
        for c in conns {
            if let Some(s) = &c.latency.receive {
                add(by.entry(c.cgroup_id).or_default(), s);
            }
        }
        by.retain(|_, s| s.packets > 0);
        by
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The offset turns a wall-clock stamp into the monotonic clock: now in
    /// both clocks, within a millisecond.
    #[test]
    fn clock_offset_maps_realtime_to_monotonic() {
        let off = clock_offset();
        let real = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as i64;
        let mono = super::super::reader::monotonic_ns() as i64;
        assert!((real - off - mono).abs() < 1_000_000, "{real} {off} {mono}");
    }

    /// Refused (as on 5.10, without tp_btf/sock_recv_length), receive
    /// latency is the sampled wire_to_app, with one fallback line.
    #[test]
    fn refused_receive_stages_fall_back_to_sampled() {
        if std::env::var_os(magnet_kernel::deny::VAR).is_some() {
            eprintln!("skipped: MAGNET_HOOKS_DENY is set");
            return;
        }
        let hooks = PacketHooks::Always;
        let app = crate::config::AppCalls::Syscalls;
        let (plan, progs) = super::super::plan::choose(hooks, app, &|_| None, &Default::default());
        assert!(PROGS.iter().all(|p| progs.contains(p)), "{progs:?}");
        assert_eq!(host_method(&plan, hooks), RX_STAMPS);
        let mut refused = magnet_kernel::plan::Refusals::new();
        refused.insert((PART, 0), "no tracepoint sock_recv_length".to_string());
        let (plan, progs) = super::super::plan::choose(hooks, app, &|_| None, &refused);
        // app_recv stays: the app part's
        assert!(
            !progs.contains(&PROGS[0]) && progs.contains(&PROGS[1]),
            "{progs:?}"
        );
        assert_eq!(host_method(&plan, hooks), "sampled");
        assert_eq!(host_method(&plan, PacketHooks::Off), "off");
        assert_eq!(
            plan.fallbacks(),
            [
                "receive_latency through sampled: tp_btf/tcp_probe+tp_btf/sock_recv_length: \
              no tracepoint sock_recv_length"
            ]
        );
    }

    /// The receive stamps are turned on by an ordinary socket option.
    #[test]
    fn a_socket_turns_receive_stamps_on() {
        assert!(stamps_on().is_some());
    }
}
