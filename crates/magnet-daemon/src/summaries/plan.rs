//! What magnetd feeds each part from: the table of parts, the trial load
//! that finds what this kernel refuses, and `magnet daemon --check`.

use std::mem::MaybeUninit;

use libbpf_rs::skel::{OpenSkel, SkelBuilder};

use magnet_kernel::plan::{self, Attach, Candidate, Direction, Part, Plan, Refusals};

use crate::config::{AppCalls, PacketHooks};
use crate::skel::{SummarySkel, SummarySkelBuilder};
use crate::Error;

/// The app part's candidate that counts one call per system call or
/// io_uring result (its name): the calls that send or receive more than once
/// counted at their own syscall exit tracepoints.
pub const APP_CALLS_AT_EXIT: &str = "tp_btf/sock_send_length+tp_btf/sock_recv_length+\
     tracepoint/syscalls/sys_exit_{sendfile64,splice,sendmmsg,recvmmsg}+\
     tp_btf/io_uring_complete";

/// The same counting where the kernel has no syscall tracepoints (or
/// tracefs is not mounted): at every system call's exit (`tp_btf/sys_exit`).
pub const APP_CALLS_AT_SYS_EXIT: &str =
    "tp_btf/sock_send_length+tp_btf/sock_recv_length+tp_btf/sys_exit+tp_btf/io_uring_complete";

/// The exit tracepoints of the system calls that send or receive more than
/// once per call (app.bpf.c's `app_nr_many`).
pub const SYSCALL_EXITS: [Attach; 4] = [
    Attach::Tracepoint("syscalls/sys_exit_sendfile64"),
    Attach::Tracepoint("syscalls/sys_exit_splice"),
    Attach::Tracepoint("syscalls/sys_exit_sendmmsg"),
    Attach::Tracepoint("syscalls/sys_exit_recvmmsg"),
];

pub(super) const fn tp(tp: &'static str) -> Attach {
    Attach::TpBtf { tp, args: None }
}

/// magnetd's parts, in the order they are planned, each with its candidates
/// best first. A part whose candidates are all refused (by the kernel, or by
/// `MAGNET_HOOKS_DENY`) is left out and the rest runs.
pub const PARTS: &[Part] = &[
    Part {
        name: "app",
        group: GROUP,
        feeds: "app tx/rx bytes and calls (per connection and host), records of every socket",
        candidates: &[
            // One call per system call and per io_uring result, as the
            // recorder counts them: sendfile(), splice() and the mmsg calls
            // at their own exit tracepoints, so that no other system call
            // of the host runs a program.
            Candidate::progs(&[
                ("app_send", tp("sock_send_length")),
                ("app_recv", tp("sock_recv_length")),
                ("app_exit_tp", SYSCALL_EXITS[0]),
                ("app_exit_tp", SYSCALL_EXITS[1]),
                ("app_exit_tp", SYSCALL_EXITS[2]),
                ("app_exit_tp", SYSCALL_EXITS[3]),
                ("app_uring", tp("io_uring_complete")),
            ])
            .with_maps(&["task_storage"]),
            // The same at every system call's exit (a program run at each).
            Candidate::progs(&[
                ("app_send", tp("sock_send_length")),
                ("app_recv", tp("sock_recv_length")),
                ("app_sys_exit", tp("sys_exit")),
                ("app_uring", tp("io_uring_complete")),
            ])
            .with_maps(&["task_storage"]),
            // Every send and recv the kernel makes is a call (a sendfile()
            // of 1 MiB: 16; an io_uring send retried after EAGAIN: 2).
            Candidate::progs(&[
                ("app_send", tp("sock_send_length")),
                ("app_recv", tp("sock_recv_length")),
            ]),
            // Kernels before those tracepoints (6.3), where fexit is
            // allowed: the returns of inet(6)_sendmsg and inet(6)_recvmsg,
            // each send and recv a call as above (sendfile() before 6.5
            // sends through sendpage and is not seen).
            Candidate::progs(&[
                ("app_send_fexit4", Attach::Fexit("inet_sendmsg")),
                ("app_send_fexit6", Attach::Fexit("inet6_sendmsg")),
                ("app_recv_fexit4", Attach::Fexit("inet_recvmsg")),
                ("app_recv_fexit6", Attach::Fexit("inet6_recvmsg")),
            ]),
        ],
        optional: false,
        default_on: true,
    },
    Part {
        name: "tcp_state",
        group: GROUP,
        feeds: "TCP records from the handshake, close time, final TCP counters",
        candidates: &[Candidate::progs(&[("tcp_state", tp("inet_sock_set_state"))])],
        optional: false,
        default_on: true,
    },
    Part {
        name: "retransmits",
        group: GROUP,
        feeds: "host retransmits",
        candidates: &[Candidate::progs(&[("tcp_retrans", tp("tcp_retransmit_skb"))])],
        optional: false,
        default_on: true,
    },
    Part {
        name: "drops",
        group: GROUP,
        feeds: "drops by reason (host and per connection)",
        candidates: &[Candidate::progs(&[("drop", tp("kfree_skb"))])],
        optional: false,
        default_on: true,
    },
    Part {
        name: "tcp_counters",
        group: GROUP,
        feeds: "TCP wire counters, retransmits, srtt, cwnd and send-buffer occupancy of open connections",
        candidates: &[
            Candidate::progs(&[("tcp_kstats", Attach::Iter("bpf_sk_storage_map"))])
                .with_maps(&["sk_storage"]),
            Candidate::user("sock_diag"),
        ],
        optional: false,
        default_on: true,
    },
    Part {
        name: "packets",
        group: GROUP,
        feeds: "latency histograms; with packet_hooks = \"always\" host wire counts and wire counts of non-TCP sockets",
        candidates: &[Candidate::progs(&[
            ("wire_egress", Attach::CgroupSkb(Direction::Egress)),
            ("wire_ingress", Attach::CgroupSkb(Direction::Ingress)),
        ])],
        optional: false,
        default_on: true,
    },
    Part {
        name: super::stages::PART,
        group: GROUP,
        feeds: "the send path's stages per connection (to the qdisc, to the device, to the ACK) \
                from TX timestamp callbacks; without them send latency is the sampled app_to_wire",
        candidates: &[
            Candidate::progs(&[
                ("stages_ops", Attach::SockOps),
                ("stages_send", tp("tcp_sendmsg_locked")),
            ])
            .with_maps(&["sk_storage"]),
            Candidate::user("sampled"),
        ],
        optional: true,
        default_on: true,
    },
    Part {
        name: super::receive::PART,
        group: GROUP,
        feeds: "the receive path's stages per connection (receive stamp to the socket's queue \
                to the read) for a sample of TCP data packets; without them receive latency \
                is the sampled wire_to_app",
        candidates: &[
            Candidate::progs(&[
                ("rx_queue", tp("tcp_probe")),
                // the app part's program, which reads for both parts
                ("app_recv", tp("sock_recv_length")),
            ])
            .with_maps(&["sk_storage"]),
            Candidate::user("sampled"),
        ],
        optional: true,
        default_on: true,
    },
];

/// The group magnetd's parts are in (the first column of `daemon --check`).
pub const GROUP: &str = "daemon";

pub(super) fn prog_of<'a, 'obj>(
    p: &'a mut crate::skel::OpenSummaryProgs<'obj>,
    name: &str,
) -> Option<&'a mut libbpf_rs::OpenProgramMut<'obj>> {
    Some(match name {
        "app_send" => &mut p.app_send,
        "app_recv" => &mut p.app_recv,
        "app_sys_exit" => &mut p.app_sys_exit,
        "app_exit_tp" => &mut p.app_exit_tp,
        "app_uring" => &mut p.app_uring,
        "app_send_fexit4" => &mut p.app_send_fexit4,
        "app_send_fexit6" => &mut p.app_send_fexit6,
        "app_recv_fexit4" => &mut p.app_recv_fexit4,
        "app_recv_fexit6" => &mut p.app_recv_fexit6,
        "wire_egress" => &mut p.wire_egress,
        "wire_ingress" => &mut p.wire_ingress,
        "tcp_retrans" => &mut p.tcp_retrans,
        "drop" => &mut p.drop,
        "tcp_state" => &mut p.tcp_state,
        "tcp_kstats" => &mut p.tcp_kstats,
        "stages_ops" => &mut p.stages_ops,
        "stages_send" => &mut p.stages_send,
        "rx_queue" => &mut p.rx_queue,
        _ => return None,
    })
}

pub(super) fn loaded_prog<'a, 'obj>(
    p: &'a crate::skel::SummaryProgs<'obj>,
    name: &str,
) -> Option<&'a libbpf_rs::ProgramMut<'obj>> {
    Some(match name {
        "app_send" => &p.app_send,
        "app_recv" => &p.app_recv,
        "app_sys_exit" => &p.app_sys_exit,
        "app_exit_tp" => &p.app_exit_tp,
        "app_uring" => &p.app_uring,
        "app_send_fexit4" => &p.app_send_fexit4,
        "app_send_fexit6" => &p.app_send_fexit6,
        "app_recv_fexit4" => &p.app_recv_fexit4,
        "app_recv_fexit6" => &p.app_recv_fexit6,
        "wire_egress" => &p.wire_egress,
        "wire_ingress" => &p.wire_ingress,
        "tcp_retrans" => &p.tcp_retrans,
        "drop" => &p.drop,
        "tcp_state" => &p.tcp_state,
        "tcp_kstats" => &p.tcp_kstats,
        "stages_ops" => &p.stages_ops,
        "stages_send" => &p.stages_send,
        "rx_queue" => &p.rx_queue,
        _ => return None,
    })
}

/// The settings of one load of the object.
pub(super) struct LoadSpec<'a> {
    /// Programs to load (the others are not).
    progs: &'a [&'static str],
    max_connections: u32,
    packet_hooks: PacketHooks,
    /// TCP counters from tcp_sock (iterator or sock_diag).
    kstats: bool,
    /// … through socket storage and the iterator.
    storage: bool,
    /// Stage timing's sampling.
    every: crate::config::StagesEvery,
}

/// Opens the object and sets it up for `spec` (not loaded yet).
pub(super) fn open_for<'obj>(
    storage: &'obj mut MaybeUninit<libbpf_rs::OpenObject>,
    spec: &LoadSpec<'_>,
) -> Result<crate::skel::OpenSummarySkel<'obj>, Error> {
    let mut open = SummarySkelBuilder::default()
        .open(storage)
        .map_err(|e| Error::bpf("opening magnetd's BPF object", e))?;
    if let Some(ro) = open.maps.rodata_data.as_deref_mut() {
        ro.packet_marks = spec.packet_hooks.ever();
        ro.count_packets = spec.packet_hooks == PacketHooks::Always;
        ro.sampled = matches!(spec.packet_hooks, PacketHooks::Sampled { .. });
        ro.kstats_on = spec.kstats;
        ro.kstats_storage = spec.kstats && spec.storage;
        ro.conn_cache = conn_cache(spec);
        ro.slots = spec.max_connections.max(1);
        ro.calls_at_exit = calls_at_exit(spec.progs);
        ro.stage_every = spec.every.send;
        ro.rx_every = spec.every.receive;
        // app_recv serves the app part, the receive stages, or both
        ro.app_on = spec.progs.contains(&"app_send");
        ro.rx_on = spec.progs.contains(&super::receive::PROGS[0]);
    }
    open.maps
        .app_pending
        .set_autocreate(calls_at_exit(spec.progs))
        .map_err(|e| Error::bpf("leaving out the task-storage map", e))?;
    let m = &mut open.maps;
    // One slot per record: the records, the index, the free slots and the
    // layer tables are all as large as the connection limit.
    for (map, what) in [
        (&mut m.conns, "connection"),
        (&mut m.conn_index, "connection index"),
        (&mut m.free_slots, "free slot"),
        (&mut m.layers, "layer table"),
    ] {
        map.set_max_entries(spec.max_connections.max(1))
            .map_err(|e| Error::bpf(format!("sizing the {what} map"), e))?;
    }
    m.conn_socks
        .set_autocreate(conn_cache(spec))
        .map_err(|e| Error::bpf("leaving out the socket-storage map", e))?;
    part_maps(
        spec.progs.contains(&super::stages::PROGS[0]),
        [&mut m.stages, &mut m.stage_socks, &mut m.stages_scratch],
        spec.max_connections,
        "the send stages'",
    )?;
    part_maps(
        spec.progs.contains(&super::receive::PROGS[0]),
        [
            &mut m.rx_stages,
            &mut m.rx_socks,
            &mut m.rx_scratch,
            &mut m.rx_count,
            &mut m.rx_clock,
        ],
        spec.max_connections,
        "the receive stages'",
    )?;
    for part in PARTS {
        for c in part.candidates {
            for (prog, _) in c.progs {
                if let Some(p) = prog_of(&mut open.progs, prog) {
                    p.set_autoload(spec.progs.contains(prog));
                }
            }
        }
    }
    Ok(open)
}

/// Whether each record's socket notes its slot in socket storage (so that
/// the hooks find records without a hash lookup): wherever socket storage
/// is not denied, and always when the TCP counters' iterator needs it.
fn conn_cache(spec: &LoadSpec<'_>) -> bool {
    (spec.kstats && spec.storage) || magnet_kernel::deny::denied("sk_storage").is_none()
}

/// A part's maps (`maps[0]`: its per-connection map, sized to
/// `max_connections`), created only when the part's programs load (`on`).
fn part_maps<const N: usize>(
    on: bool,
    maps: [&mut libbpf_rs::OpenMapMut<'_>; N],
    max_connections: u32,
    what: &str,
) -> Result<(), Error> {
    for (i, m) in maps.into_iter().enumerate() {
        m.set_autocreate(on)
            .map_err(|e| Error::bpf(format!("leaving out {what} maps"), e))?;
        if i == 0 {
            m.set_max_entries(max_connections.max(1))
                .map_err(|e| Error::bpf(format!("sizing {what} map"), e))?;
        }
    }
    Ok(())
}

/// Loads `candidate`'s programs alone (a small connection map): what the
/// kernel says to them, or None when it takes them.
pub(super) fn trial(c: &Candidate, packet_hooks: PacketHooks) -> Option<String> {
    let progs: Vec<&'static str> = c.progs.iter().map(|(p, _)| *p).collect();
    let spec = LoadSpec {
        progs: &progs,
        max_connections: 1,
        packet_hooks,
        kstats: true,
        storage: c.maps.contains(&"sk_storage"),
        every: crate::config::StagesEvery::ALL,
    };
    let mut storage = MaybeUninit::uninit();
    let open = match open_for(&mut storage, &spec) {
        Ok(o) => o,
        Err(e) => return Some(e.to_string()),
    };
    let why = match open.load() {
        Ok(_) => None,
        Err(e) => Some(format!("the kernel refused {}: {e}", c.name())),
    };
    why
}

/// For every part, the first candidate that is not left out by the
/// configuration, denied or refused (`refused`: what the kernel said to
/// candidates already tried); and the programs of the chosen ones.
pub(super) fn choose(
    packet_hooks: PacketHooks,
    app_calls: AppCalls,
    lacks: &dyn Fn(Attach) -> Option<String>,
    refused: &Refusals,
) -> (Plan, Vec<&'static str>) {
    let mut refused = refused.clone();
    if app_calls == AppCalls::Sends {
        for (i, c) in PARTS[0].candidates.iter().enumerate() {
            if c.has_prog("app_uring") {
                refused.insert(
                    ("app", i),
                    "app_calls = \"sends\" in the configuration".to_string(),
                );
            }
        }
    }
    let parts = PARTS
        .iter()
        .filter(|p| p.name != "packets" || packet_hooks.ever());
    // magnetd asks the kernel by loading (see `load`), not before; only a
    // tracefs tracepoint, which loads anywhere but attaches only where
    // tracefs lists it, is looked up first.
    let plan = plan::choose(parts, lacks, &refused);
    let progs = plan
        .choices
        .iter()
        .filter_map(|c| c.candidate())
        .flat_map(|c| c.progs.iter().map(|(p, _)| *p))
        .collect();
    (plan, progs)
}

/// Whether the programs count a call at its end (a syscall exit or an
/// io_uring completion) rather than at each send or recv inside it.
fn calls_at_exit(progs: &[&str]) -> bool {
    progs.contains(&"app_sys_exit") || progs.contains(&"app_exit_tp")
}

/// What the running kernel lacks of `a`, where that is known before loading:
/// the tracefs tracepoints (everything else is asked by loading).
pub(super) fn kernel_lacks(a: Attach) -> Option<String> {
    match a {
        Attach::Tracepoint(tp) => magnet_kernel::tracefs::event_missing(tp),
        _ => None,
    }
}

/// What the kernel takes of magnetd: the plan and the loaded object (not
/// attached). Each part takes its first candidate that is not denied; when
/// the kernel refuses the whole object, each candidate is loaded alone and
/// the parts move on past the ones it refuses.
pub(super) fn load(
    max_connections: u32,
    packet_hooks: PacketHooks,
    app_calls: AppCalls,
    every: crate::config::StagesEvery,
) -> Result<(Plan, SummarySkel<'static>, PacketHooks), Error> {
    let mut refused = Refusals::new();
    let mut tried = false;
    loop {
        let (plan, progs) = choose(packet_hooks, app_calls, &kernel_lacks, &refused);
        if plan.used("app").is_none() && plan.used("tcp_state").is_none() {
            return Err(Error::Host(format!(
                "magnetd has nothing to make connection records from: {}",
                plan.left_out().join("; ")
            )));
        }
        let hooks = if plan.used("packets").is_some() {
            packet_hooks
        } else {
            PacketHooks::Off
        };
        let tcp = plan.used("tcp_counters").map(Candidate::name);
        let spec = LoadSpec {
            progs: &progs,
            max_connections,
            packet_hooks: hooks,
            kstats: tcp.is_some(),
            storage: tcp.as_deref() == Some("iter/bpf_sk_storage_map"),
            every,
        };
        // The skeleton borrows its object storage for its whole life; magnetd
        // loads it once per process (twice when the kernel refuses a
        // program), so the storage lives as long as the process.
        let storage: &'static mut MaybeUninit<libbpf_rs::OpenObject> =
            Box::leak(Box::new(MaybeUninit::uninit()));
        let err = match open_for(storage, &spec)?.load() {
            Ok(skel) => return Ok((plan, skel, hooks)),
            Err(e) => e,
        };
        if tried {
            return Err(Error::bpf(
                format!(
                    "loading magnetd's BPF programs ({}) after leaving out those the kernel \
                     refused alone ({}) (magnet -v shows the verifier's log)",
                    progs.join(", "),
                    if refused.is_empty() {
                        "none".to_string()
                    } else {
                        refused.values().cloned().collect::<Vec<_>>().join("; ")
                    }
                ),
                err,
            ));
        }
        // Find the programs the kernel refuses: each candidate alone.
        tried = true;
        for part in PARTS {
            for (i, c) in part.candidates.iter().enumerate() {
                if !c.progs.is_empty() && c.denied().is_none() {
                    if let Some(why) = trial(c, hooks) {
                        refused.insert((part.name, i), why);
                    }
                }
            }
        }
    }
}

/// What magnetd would feed each part from on this kernel, with `packet_hooks`
/// and `app_calls` (`magnet daemon --check`): its programs are loaded as
/// when it starts, and nothing is attached. Needs root.
pub fn check(packet_hooks: PacketHooks, app_calls: AppCalls) -> Result<Plan, Error> {
    magnet_record::preflight().map_err(|e| Error::Host(format!("{e:#}")))?;
    let (plan, skel, _) = load(1, packet_hooks, app_calls, crate::config::StagesEvery::ALL)?;
    drop(skel);
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn used(plan: &Plan, part: &str) -> Option<String> {
        plan.used(part).map(Candidate::name)
    }

    /// The app part's first candidate is the one the constant names.
    #[test]
    fn app_calls_at_exit_names_the_first_app_candidate() {
        assert_eq!(PARTS[0].name, "app");
        assert_eq!(PARTS[0].candidates[0].name(), APP_CALLS_AT_EXIT);
    }

    /// A candidate the kernel refused is skipped for the next; a part with
    /// none left is left out with one line naming the part, what it feeds,
    /// the hook and what the kernel said; the other parts keep theirs.
    #[test]
    fn refused_candidates_fall_back_or_leave_their_part_out() {
        if std::env::var_os(magnet_kernel::deny::VAR).is_some() {
            eprintln!("skipped: MAGNET_HOOKS_DENY is set");
            return;
        }
        let mut refused = Refusals::new();
        let (plan, progs) = choose(PacketHooks::Off, AppCalls::Syscalls, &|_| None, &refused);
        assert_eq!(
            used(&plan, "tcp_counters"),
            Some("iter/bpf_sk_storage_map".into())
        );
        assert!(progs.contains(&"tcp_kstats") && !progs.contains(&"wire_egress"));
        assert!(plan.left_out().is_empty() && plan.fallbacks().is_empty());
        refused.insert(
            ("tcp_counters", 0),
            "the kernel refused iter/bpf_sk_storage_map: Operation not permitted (os error 1)"
                .to_string(),
        );
        refused.insert(
            ("drops", 0),
            "the kernel refused tp_btf/kfree_skb: No such process (os error 3)".to_string(),
        );
        let (plan, progs) = choose(PacketHooks::Always, AppCalls::Syscalls, &|_| None, &refused);
        assert_eq!(used(&plan, "tcp_counters"), Some("sock_diag".into()));
        assert!(!progs.contains(&"tcp_kstats") && !progs.contains(&"drop"));
        assert!(progs.contains(&"wire_egress") && progs.contains(&"app_send"));
        assert_eq!(
            plan.fallbacks(),
            [
                "tcp_counters through sock_diag: iter/bpf_sk_storage_map: the kernel refused \
              iter/bpf_sk_storage_map: Operation not permitted (os error 1)"
            ]
        );
        assert_eq!(
            plan.left_out(),
            [
                "drops left out: no drops by reason (host and per connection) (tp_btf/kfree_skb: \
              the kernel refused tp_btf/kfree_skb: No such process (os error 3))"
            ]
        );
        assert!(!plan.summary().contains("drops="), "{}", plan.summary());
    }

    /// `app_calls = "sends"` leaves the syscall-exit program out: the app part
    /// counts the kernel's sends, and /health says why.
    #[test]
    fn app_calls_sends_leaves_the_syscall_exit_program_out() {
        if std::env::var_os(magnet_kernel::deny::VAR).is_some() {
            eprintln!("skipped: MAGNET_HOOKS_DENY is set");
            return;
        }
        let refused = Refusals::new();
        let (plan, progs) = choose(PacketHooks::Off, AppCalls::Syscalls, &|_| None, &refused);
        assert_eq!(used(&plan, "app").as_deref(), Some(APP_CALLS_AT_EXIT));
        assert!(progs.contains(&"app_exit_tp") && progs.contains(&"app_uring"));
        assert!(!progs.contains(&"app_sys_exit"));
        let (plan, progs) = choose(PacketHooks::Off, AppCalls::Sends, &|_| None, &refused);
        assert_eq!(
            used(&plan, "app").as_deref(),
            Some("tp_btf/sock_send_length+tp_btf/sock_recv_length")
        );
        assert!(!calls_at_exit(&progs) && !progs.contains(&"app_uring"));
        assert_eq!(
            plan.fallbacks(),
            [format!(
                "app through tp_btf/sock_send_length+tp_btf/sock_recv_length: \
                 {APP_CALLS_AT_EXIT}: app_calls = \"sends\" in the configuration; \
                 {APP_CALLS_AT_SYS_EXIT}: app_calls = \"sends\" in the configuration"
            )]
        );
    }

    /// A kernel without the syscall tracepoints (or without tracefs) counts
    /// the same calls at every system call's exit, and says why.
    #[test]
    fn without_syscall_tracepoints_calls_are_counted_at_every_sys_exit() {
        if std::env::var_os(magnet_kernel::deny::VAR).is_some() {
            eprintln!("skipped: MAGNET_HOOKS_DENY is set");
            return;
        }
        let lacks = |a: Attach| {
            (a == SYSCALL_EXITS[2]).then(|| "this kernel has no tracepoint sendmmsg".to_string())
        };
        let (plan, progs) = choose(
            PacketHooks::Off,
            AppCalls::Syscalls,
            &lacks,
            &Refusals::new(),
        );
        assert_eq!(used(&plan, "app").as_deref(), Some(APP_CALLS_AT_SYS_EXIT));
        assert!(progs.contains(&"app_sys_exit") && !progs.contains(&"app_exit_tp"));
        assert!(calls_at_exit(&progs));
        assert_eq!(
            plan.fallbacks(),
            [format!(
                "app through {APP_CALLS_AT_SYS_EXIT}: \
                 {APP_CALLS_AT_EXIT}: this kernel has no tracepoint sendmmsg"
            )]
        );
    }

    /// On this kernel every candidate that loads alone loads in the whole
    /// object: what a refusal would be found by (root only).
    #[test]
    fn each_candidate_loads_alone_here() {
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: loading programs needs root");
            return;
        }
        for part in PARTS {
            for c in part.candidates.iter().filter(|c| !c.progs.is_empty()) {
                match trial(c, PacketHooks::Always) {
                    None => {}
                    // Builds refuse the iterator (CI's) or fexit (this
                    // host's): said, not hidden
                    Some(why)
                        if c.progs
                            .iter()
                            .any(|(_, a)| matches!(a, Attach::Iter(_) | Attach::Fexit(_))) =>
                    {
                        assert!(
                            why.starts_with(&format!("the kernel refused {}: ", c.name())),
                            "{why}"
                        )
                    }
                    Some(why) => panic!("{}: {why}", c.name()),
                }
            }
        }
    }
}
