//! One hook planner for every BPF user (the recorder, magnetd): the parts a
//! program is made of, the candidate hooks of each best first, and the choice
//! of the first candidate that is not denied (`MAGNET_HOOKS_DENY`, see
//! [`crate::deny`]), that the kernel has (a check the caller gives: the
//! recorder asks BTF and `available_filter_functions`, magnetd trial-loads)
//! and that the verifier did not refuse (refusals the caller records).
//!
//! A new hook is one row of a caller's table of [`Part`]s plus its program.
//! `--check` of every command prints its plan with [`check_table`].

use std::collections::BTreeMap;
use std::fmt::Display;

use libbpf_rs::{NF_INET_LOCAL_IN, NF_INET_LOCAL_OUT, NF_INET_POST_ROUTING, NF_INET_PRE_ROUTING};

/// Where one program attaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attach {
    /// tp_btf: libbpf attaches by the section name; needs BTF, not tracefs.
    /// `args`: the program reads this many tracepoint arguments, so the
    /// kernel's tracepoint must have exactly that many.
    TpBtf {
        tp: &'static str,
        args: Option<usize>,
    },
    /// A classic (tracefs) tracepoint, `category/name`
    /// (`syscalls/sys_exit_splice`): one program runs at that event only,
    /// where `tp_btf/sys_exit` would run at every system call's exit.
    Tracepoint(&'static str),
    /// A netfilter BPF link at this hook (`NF_INET_*`), for IPv4 and IPv6
    /// (Linux 6.4+).
    Netfilter(i32),
    /// fentry on the named function (target fixed in the program's section).
    Fentry(&'static str),
    /// fexit on the named function.
    Fexit(&'static str),
    /// A kprobe per function on the functions named (`*`: those the caller
    /// selects at run time, as `record --funcs` does).
    Kprobe(&'static str),
    /// A kretprobe per function: their returns.
    Kretprobe(&'static str),
    /// One kprobe-multi link on all the functions named (Linux 5.18+).
    KprobeMulti(&'static str),
    /// One kretprobe-multi link: their returns.
    KretprobeMulti(&'static str),
    /// A BPF iterator over this target (`bpf_sk_storage_map`, `task`, …).
    Iter(&'static str),
    /// A cgroup_skb program on a cgroup (magnetd: the cgroup v2 root).
    CgroupSkb(Direction),
    /// A sock_ops program on a cgroup (magnetd: the cgroup v2 root).
    SockOps,
    /// A TCX link on an interface (Linux 6.6+).
    Tcx(Direction),
    /// A classic tc filter on an interface's clsact qdisc.
    Clsact(Direction),
}

/// The direction of a per-packet hook.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Egress,
    Ingress,
}

impl Direction {
    pub fn name(self) -> &'static str {
        match self {
            Direction::Egress => "egress",
            Direction::Ingress => "ingress",
        }
    }
}

/// One attach point as magnet names it (`tp_btf/tcp_probe`,
/// `fexit/inet_sendmsg`, `netfilter/LOCAL_OUT`, `iter/bpf_sk_storage_map`,
/// `cgroup_skb/egress`): the names `MAGNET_HOOKS_DENY` matches.
pub fn attach_name(a: Attach) -> String {
    match a {
        Attach::TpBtf { tp, .. } => format!("tp_btf/{tp}"),
        Attach::Tracepoint(tp) => format!("tracepoint/{tp}"),
        Attach::Fentry(f) => format!("fentry/{f}"),
        Attach::Fexit(f) => format!("fexit/{f}"),
        Attach::Kprobe(f) => format!("kprobe/{f}"),
        Attach::Kretprobe(f) => format!("kretprobe/{f}"),
        Attach::KprobeMulti(f) => format!("kprobe_multi/{f}"),
        Attach::KretprobeMulti(f) => format!("kretprobe_multi/{f}"),
        Attach::Iter(t) => format!("iter/{t}"),
        Attach::CgroupSkb(d) => format!("cgroup_skb/{}", d.name()),
        Attach::SockOps => "sock_ops".to_string(),
        Attach::Tcx(d) => format!("tcx/{}", d.name()),
        Attach::Clsact(d) => format!("clsact/{}", d.name()),
        Attach::Netfilter(h) => format!(
            "netfilter/{}",
            match h {
                NF_INET_LOCAL_OUT => "LOCAL_OUT",
                NF_INET_POST_ROUTING => "POST_ROUTING",
                NF_INET_PRE_ROUTING => "PRE_ROUTING",
                NF_INET_LOCAL_IN => "LOCAL_IN",
                _ => "?",
            }
        ),
    }
}

/// One way to feed a part: programs (e.g. the IPv4 and IPv6 functions, or
/// egress and ingress) that all attach, with the map types they need; or
/// user space alone (no programs: `user` names it, e.g. `sock_diag`).
#[derive(Clone, Copy, Debug)]
pub struct Candidate {
    pub progs: &'static [(&'static str, Attach)],
    /// Map types the programs need (`sk_storage`, `task_storage`).
    pub maps: &'static [&'static str],
    /// The name of the user-space way (only without programs).
    pub user: &'static str,
}

impl Candidate {
    /// Programs, no map types of their own.
    pub const fn progs(progs: &'static [(&'static str, Attach)]) -> Candidate {
        Candidate {
            progs,
            maps: &[],
            user: "",
        }
    }

    /// User space alone.
    pub const fn user(name: &'static str) -> Candidate {
        Candidate {
            progs: &[],
            maps: &[],
            user: name,
        }
    }

    /// The same programs, needing these map types too.
    pub const fn with_maps(self, maps: &'static [&'static str]) -> Candidate {
        Candidate { maps, ..self }
    }

    /// Its name: the attach points joined with `+`, or the user-space name.
    /// Neighbouring syscall tracepoints of one kind are written once with
    /// their calls in braces (`tracepoint/syscalls/sys_exit_{bind,connect}`):
    /// a program at a dozen calls' tracepoints is one readable line.
    pub fn name(&self) -> String {
        if self.progs.is_empty() {
            return self.user.to_string();
        }
        let mut names: Vec<String> = self.progs.iter().map(|(_, a)| attach_name(*a)).collect();
        // Programs at the same attach point (one per skb position) are one.
        names.dedup();
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for n in names {
            let split = [
                "tracepoint/syscalls/sys_enter_",
                "tracepoint/syscalls/sys_exit_",
            ]
            .into_iter()
            .find_map(|stem| n.strip_prefix(stem).map(|call| (stem, call.to_string())));
            match (split, out.last_mut()) {
                (Some((stem, call)), Some((last, calls))) if last == stem && !calls.is_empty() => {
                    calls.push(call)
                }
                (Some((stem, call)), _) => out.push((stem.to_string(), vec![call])),
                (None, _) => out.push((n, Vec::new())),
            }
        }
        out.into_iter()
            .map(|(stem, calls)| match calls.len() {
                0 => stem,
                1 => format!("{stem}{}", calls[0]),
                _ => format!("{stem}{{{}}}", calls.join(",")),
            })
            .collect::<Vec<_>>()
            .join("+")
    }

    /// The attach points a candidate's name (as [`Candidate::name`] writes
    /// it, e.g. in magnetd's `/health`) stands for, one each, braces
    /// expanded.
    pub fn attach_points(name: &str) -> Vec<String> {
        name.split('+')
            .flat_map(|n| match (n.find('{'), n.strip_suffix('}')) {
                (Some(open), Some(inner)) => inner[open + 1..]
                    .split(',')
                    .map(|call| format!("{}{call}", &n[..open]))
                    .collect(),
                _ => vec![n.to_string()],
            })
            .collect()
    }

    /// Whether one of its programs is `prog`.
    pub fn has_prog(&self, prog: &str) -> bool {
        self.progs.iter().any(|(p, _)| *p == prog)
    }

    /// Why it cannot be used: `MAGNET_HOOKS_DENY`, or `has` (what the
    /// kernel lacks, asked per attach point in the order of the programs;
    /// None: it has it). None: it can be tried.
    pub fn missing(&self, has: &dyn Fn(Attach) -> Option<String>) -> Option<String> {
        if self.progs.is_empty() {
            return denied(self.user);
        }
        self.progs
            .iter()
            .find_map(|(_, a)| denied(&attach_name(*a)).or_else(|| has(*a)))
            .or_else(|| self.maps.iter().copied().find_map(denied))
    }

    /// Why it cannot be used by `MAGNET_HOOKS_DENY` alone.
    pub fn denied(&self) -> Option<String> {
        self.missing(&|_| None)
    }
}

/// [`crate::deny::denied`]; in this module's tests, the list the test set.
fn denied(name: &str) -> Option<String> {
    #[cfg(test)]
    if let Some(list) = tests::DENY.with(|d| d.borrow().clone()) {
        return crate::deny::denied_by(&list, name);
    }
    crate::deny::denied(name)
}

/// A part of a program (a record kind of the recorder, a part of magnetd):
/// what it feeds and its candidates, best first. `G` groups the parts (the
/// recorder's layer, or "daemon").
#[derive(Clone, Copy, Debug)]
pub struct Part<G: 'static = &'static str> {
    /// Its name (the recorder: the record kind, or the first program's name
    /// for a part that only helps its layer's others).
    pub name: &'static str,
    pub group: G,
    /// What it feeds (the recorder: the record kind it writes, "" for none).
    pub feeds: &'static str,
    pub candidates: &'static [Candidate],
    /// When no candidate works, its group still works without it.
    pub optional: bool,
    /// On unless asked for otherwise (the recorder's `--kinds`).
    pub default_on: bool,
}

/// What the verifier (or the kernel at a trial load) said to candidates
/// already tried: (part name, candidate index) → why.
pub type Refusals = BTreeMap<(&'static str, usize), String>;

impl<G> Part<G> {
    /// Why candidate `i` cannot be used: refused, denied or missing.
    pub fn unusable(
        &self,
        i: usize,
        has: &dyn Fn(Attach) -> Option<String>,
        refused: &Refusals,
    ) -> Option<String> {
        refused
            .get(&(self.name, i))
            .cloned()
            .or_else(|| self.candidates[i].missing(has))
    }

    /// The first usable candidate from index `from` on, and one line
    /// (`candidate: why`) per candidate passed over (every one from `from`
    /// when none is usable).
    pub fn choose_from(
        &self,
        from: usize,
        has: &dyn Fn(Attach) -> Option<String>,
        refused: &Refusals,
    ) -> (Option<usize>, Vec<String>) {
        let mut passed = Vec::new();
        for i in from..self.candidates.len() {
            match self.unusable(i, has, refused) {
                None => return (Some(i), passed),
                Some(why) => passed.push(format!("{}: {why}", self.candidates[i].name())),
            }
        }
        (None, passed)
    }
}

/// The candidate chosen for one part, or why none can be used.
#[derive(Clone, Debug)]
pub struct Choice<G: 'static = &'static str> {
    pub part: &'static Part<G>,
    /// The candidate's index; or the line saying why the part is left out
    /// (`no FEEDS (candidate: why; …)`, or a caller's own).
    pub chosen: Result<usize, String>,
    /// `candidate: why` of each candidate passed over (all, when none is chosen).
    pub passed: Vec<String>,
}

impl<G> Choice<G> {
    /// The chosen candidate.
    pub fn candidate(&self) -> Option<&'static Candidate> {
        let part: &'static Part<G> = self.part;
        self.chosen.as_ref().ok().map(|&i| &part.candidates[i])
    }

    /// The chosen candidate's name.
    pub fn name(&self) -> Option<String> {
        self.candidate().map(Candidate::name)
    }

    /// What its candidates lacked, in one line (`candidate: why; …`).
    pub fn reasons(&self) -> String {
        self.passed.join("; ")
    }

    /// `PART left out: WHY` when no candidate is chosen.
    pub fn left_out_line(&self) -> Option<String> {
        let why = self.chosen.as_ref().err()?;
        Some(format!("{} left out: {why}", self.part.name))
    }

    /// `PART through CANDIDATE: candidate: why; …` when a later candidate
    /// is chosen.
    pub fn fallback_line(&self) -> Option<String> {
        let name = self.name()?;
        (!self.passed.is_empty())
            .then(|| format!("{} through {name}: {}", self.part.name, self.reasons()))
    }
}

/// For every part, its first candidate that is not refused, denied or
/// missing (`has`), or why none is left.
pub fn choose<G>(
    parts: impl IntoIterator<Item = &'static Part<G>>,
    has: &dyn Fn(Attach) -> Option<String>,
    refused: &Refusals,
) -> Plan<G> {
    let choices = parts
        .into_iter()
        .map(|part| {
            let (i, passed) = part.choose_from(0, has, refused);
            Choice {
                part,
                chosen: i.ok_or_else(|| format!("no {} ({})", part.feeds, passed.join("; "))),
                passed,
            }
        })
        .collect();
    Plan { choices }
}

/// What [`choose`] chose for each part.
#[derive(Clone, Debug)]
pub struct Plan<G: 'static = &'static str> {
    pub choices: Vec<Choice<G>>,
}

impl<G> Default for Plan<G> {
    fn default() -> Self {
        Plan {
            choices: Vec::new(),
        }
    }
}

impl<G> Plan<G> {
    /// The choice for `part`.
    pub fn get(&self, part: &str) -> Option<&Choice<G>> {
        self.choices.iter().find(|c| c.part.name == part)
    }

    /// The choice for `part`, to change after an attach failure.
    pub fn get_mut(&mut self, part: &str) -> Option<&mut Choice<G>> {
        self.choices.iter_mut().find(|c| c.part.name == part)
    }

    /// The candidate feeding `part`, if any.
    pub fn used(&self, part: &str) -> Option<&'static Candidate> {
        self.get(part).and_then(Choice::candidate)
    }

    /// One line per part left out: which part, what it feeds, each
    /// candidate and why it cannot be used.
    pub fn left_out(&self) -> Vec<String> {
        self.choices
            .iter()
            .filter_map(Choice::left_out_line)
            .collect()
    }

    /// One line per part fed by a later candidate: which, and why not the
    /// ones before it.
    pub fn fallbacks(&self) -> Vec<String> {
        self.choices
            .iter()
            .filter_map(Choice::fallback_line)
            .collect()
    }

    /// `part=candidate` for every part used.
    pub fn summary(&self) -> String {
        self.choices
            .iter()
            .filter_map(|c| c.name().map(|n| format!("{}={n}", c.part.name)))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// One `--check` row per part.
    pub fn check_rows(&self) -> Vec<CheckRow>
    where
        G: Display,
    {
        self.choices
            .iter()
            .map(|c| CheckRow {
                group: c.part.group.to_string(),
                part: c.part.name.to_string(),
                hook: c.name(),
                missing: c.chosen.as_ref().err().cloned(),
                passed_over: if c.chosen.is_ok() {
                    c.passed.clone()
                } else {
                    Vec::new()
                },
            })
            .collect()
    }
}

/// One row of a `--check` table: a part, the hook chosen on this kernel or
/// why it cannot be used, and what was passed over on the way.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CheckRow {
    pub group: String,
    pub part: String,
    pub hook: Option<String>,
    pub missing: Option<String>,
    /// Better candidates passed over, each with why.
    pub passed_over: Vec<String>,
}

/// The words of a `--check` table: its column titles and what a part that
/// cannot be used says (`cannot be recorded`, `cannot be used`).
#[derive(Clone, Copy, Debug)]
pub struct CheckWords {
    pub group: &'static str,
    pub part: &'static str,
    pub cannot: &'static str,
}

/// The `--check` table: a title line, then per row `GROUP PART HOOK
/// (passed over)` or `GROUP PART CANNOT: why`.
pub fn check_table(words: CheckWords, rows: &[CheckRow]) -> String {
    let mut out = format!("{:<6} {:<20} hook\n", words.group, words.part);
    for r in rows {
        let line = match (&r.hook, &r.missing) {
            (Some(h), _) if r.passed_over.is_empty() => h.clone(),
            (Some(h), _) => format!("{h} ({})", r.passed_over.join("; ")),
            (None, Some(m)) => format!("{}: {m}", words.cannot),
            (None, None) => continue,
        };
        out.push_str(&format!("{:<6} {:<20} {line}\n", r.group, r.part));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TP: Attach = Attach::TpBtf {
        tp: "kfree_skb",
        args: None,
    };
    const ITER: Attach = Attach::Iter("bpf_sk_storage_map");

    static PARTS: &[Part] = &[
        Part {
            name: "drops",
            group: "daemon",
            feeds: "drops by reason",
            candidates: &[Candidate::progs(&[("drop", TP)])],
            optional: false,
            default_on: true,
        },
        Part {
            name: "tcp_counters",
            group: "daemon",
            feeds: "TCP counters",
            candidates: &[
                Candidate::progs(&[("tcp_kstats", ITER)]).with_maps(&["sk_storage"]),
                Candidate::user("sock_diag"),
            ],
            optional: false,
            default_on: true,
        },
        Part {
            name: "ip",
            group: "ip",
            feeds: "ip_local_out",
            candidates: &[
                Candidate::progs(&[("nf", Attach::Netfilter(NF_INET_LOCAL_OUT))]),
                Candidate::progs(&[
                    ("f4", Attach::Fexit("__ip_local_out")),
                    ("f6", Attach::Fexit("__ip6_local_out")),
                ]),
            ],
            optional: false,
            default_on: true,
        },
    ];

    fn all() -> &'static [Part] {
        PARTS
    }

    thread_local! {
        /// The deny list of this test's thread (instead of the environment's).
        pub(super) static DENY: std::cell::RefCell<Option<String>> =
            const { std::cell::RefCell::new(None) };
    }

    /// Acts as if `MAGNET_HOOKS_DENY` were `list` (on this thread).
    fn deny(list: &str) {
        DENY.with(|d| *d.borrow_mut() = Some(list.to_string()));
    }

    #[test]
    fn a_candidates_syscall_tracepoints_are_named_once_per_kind() {
        let c = Candidate::progs(&[
            (
                "a",
                Attach::TpBtf {
                    tp: "sock_send_length",
                    args: None,
                },
            ),
            ("b", Attach::Tracepoint("syscalls/sys_exit_bind")),
            ("b", Attach::Tracepoint("syscalls/sys_exit_connect")),
            ("c", Attach::Tracepoint("syscalls/sys_enter_read")),
            ("d", Attach::Tracepoint("sched/sched_switch")),
            ("e", Attach::Tracepoint("syscalls/sys_exit_read")),
        ]);
        assert_eq!(
            c.name(),
            "tp_btf/sock_send_length+tracepoint/syscalls/sys_exit_{bind,connect}+\
             tracepoint/syscalls/sys_enter_read+tracepoint/sched/sched_switch+\
             tracepoint/syscalls/sys_exit_read"
        );
        let points: Vec<String> = c.progs.iter().map(|(_, a)| attach_name(*a)).collect();
        assert_eq!(Candidate::attach_points(&c.name()), points);
    }

    #[test]
    fn names_join_attach_points_or_name_user_space() {
        assert_eq!(attach_name(ITER), "iter/bpf_sk_storage_map");
        assert_eq!(
            attach_name(Attach::Netfilter(NF_INET_LOCAL_IN)),
            "netfilter/LOCAL_IN"
        );
        assert_eq!(
            attach_name(Attach::CgroupSkb(Direction::Ingress)),
            "cgroup_skb/ingress"
        );
        assert_eq!(attach_name(Attach::Tcx(Direction::Egress)), "tcx/egress");
        assert_eq!(attach_name(Attach::SockOps), "sock_ops");
        assert_eq!(
            attach_name(Attach::Clsact(Direction::Ingress)),
            "clsact/ingress"
        );
        assert_eq!(PARTS[1].candidates[1].name(), "sock_diag");
        assert_eq!(
            PARTS[2].candidates[1].name(),
            "fexit/__ip_local_out+fexit/__ip6_local_out"
        );
    }

    #[test]
    fn the_first_candidate_the_kernel_has_is_chosen() {
        deny("");
        let plan = choose(all(), &|_| None, &Refusals::new());
        assert!(plan.choices.iter().all(|c| c.chosen == Ok(0)));
        assert!(plan.left_out().is_empty() && plan.fallbacks().is_empty());
        assert_eq!(
            plan.summary(),
            "drops=tp_btf/kfree_skb tcp_counters=iter/bpf_sk_storage_map ip=netfilter/LOCAL_OUT"
        );
        // The kernel lacks netfilter links: ip falls back, one line says why.
        let has = |a: Attach| matches!(a, Attach::Netfilter(_)).then(|| "no links".to_string());
        let plan = choose(all(), &has, &Refusals::new());
        assert_eq!(
            plan.used("ip").map(Candidate::name).as_deref(),
            Some("fexit/__ip_local_out+fexit/__ip6_local_out")
        );
        assert_eq!(
            plan.fallbacks(),
            ["ip through fexit/__ip_local_out+fexit/__ip6_local_out: netfilter/LOCAL_OUT: no links"]
        );
    }

    /// The plan with no denial and the first candidates of tcp_counters and
    /// drops refused, with these reasons.
    fn refusing(tcp: &str, drops: &str) -> (Plan, Refusals) {
        deny("");
        let mut refused = Refusals::new();
        refused.insert(("tcp_counters", 0), tcp.into());
        refused.insert(("drops", 0), drops.into());
        (choose(all(), &|_| None, &refused), refused)
    }

    #[test]
    fn refusals_fall_back_or_leave_the_part_out() {
        let (plan, refused) = refusing("the kernel refused it", "no such process");
        assert_eq!(plan.used("tcp_counters").unwrap().name(), "sock_diag");
        assert_eq!(
            plan.fallbacks(),
            ["tcp_counters through sock_diag: iter/bpf_sk_storage_map: the kernel refused it"]
        );
        assert_eq!(
            plan.left_out(),
            ["drops left out: no drops by reason (tp_btf/kfree_skb: no such process)"]
        );
        assert!(plan.used("drops").is_none());
        assert_eq!(
            plan.get("drops").unwrap().reasons(),
            "tp_btf/kfree_skb: no such process"
        );
        // A later start: the part's next candidate from the refused one on.
        let (i, passed) = PARTS[1].choose_from(1, &|_| None, &refused);
        assert_eq!((i, passed.len()), (Some(1), 0));
    }

    #[test]
    fn denial_is_checked_per_program_and_map_in_order() {
        // The kernel check runs per attach point, after that point's denial.
        let c = &PARTS[2].candidates[1];
        let has = |a: Attach| (a == Attach::Fexit("__ip_local_out")).then(|| "untraceable".into());
        deny("fexit/__ip6");
        assert_eq!(c.missing(&has).as_deref(), Some("untraceable"));
        assert_eq!(
            c.denied().as_deref(),
            Some("fexit/__ip6_local_out denied by MAGNET_HOOKS_DENY=fexit/__ip6")
        );
        // A map type denies the candidate that needs it; user space by name.
        deny("sk_storage,sock_diag");
        let plan = choose(all(), &|_| None, &Refusals::new());
        assert_eq!(
            plan.left_out(),
            [
                "tcp_counters left out: no TCP counters (iter/bpf_sk_storage_map: sk_storage \
              denied by MAGNET_HOOKS_DENY=sk_storage,sock_diag; sock_diag: sock_diag denied by \
              MAGNET_HOOKS_DENY=sk_storage,sock_diag)"
            ]
        );
        // Denying the first candidate's attach kind: the next one, one line.
        deny("netfilter");
        let plan = choose(all(), &|_| None, &Refusals::new());
        assert_eq!(
            plan.fallbacks(),
            [
                "ip through fexit/__ip_local_out+fexit/__ip6_local_out: netfilter/LOCAL_OUT: \
              netfilter/LOCAL_OUT denied by MAGNET_HOOKS_DENY=netfilter"
            ]
        );
    }

    #[test]
    fn the_check_table_names_the_hook_or_why_not() {
        let (plan, _) = refusing("refused", "refused");
        let rows = plan.check_rows();
        assert_eq!(rows[1].passed_over, ["iter/bpf_sk_storage_map: refused"]);
        let words = CheckWords {
            group: "group",
            part: "part",
            cannot: "cannot be used",
        };
        assert_eq!(
            check_table(words, &rows),
            "group  part                 hook\n\
             daemon drops                cannot be used: no drops by reason (tp_btf/kfree_skb: refused)\n\
             daemon tcp_counters         sock_diag (iter/bpf_sk_storage_map: refused)\n\
             ip     ip                   netfilter/LOCAL_OUT\n"
        );
    }
}
