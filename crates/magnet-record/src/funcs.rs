//! `record --funcs`: entry probes on kernel functions that take an skb
//! (`funcs.bpf.c`), attached as one kprobe-multi link per skb position where
//! the kernel has kprobe-multi, else as one kprobe per function. The functions
//! and the parameter holding each one's skb come from the caller (magnet-funcs
//! selects them); their names go in the trace header once, by address.

use std::collections::BTreeMap;
use std::time::Instant;

use libbpf_rs::{Link, Object};
use magnet_kernel::plan::{self, Attach, Candidate, Part, Refusals};
use magnet_kernel::{Features, KernelBtf};
use magnet_trace::{Header, LayerSource};

/// Header enum table naming function addresses (the record's `func` field).
pub const FUNC_TABLE: &str = "kfunc";
/// Header table: function address -> the next kernel symbol's address, so a
/// caller's return address can be placed inside a named function.
pub const FUNC_END_TABLE: &str = "kfunc_end";

/// The functions `record --funcs` selects at run time, in an attach name
/// (`kprobe_multi/*`).
const SELECTED: &str = "*";
/// The copying functions ([`COPY_FUNCS`]) in an attach name.
const COPIERS: &str = "skb_clone…";

/// What `record --funcs` attaches, each part with its ways best first: one
/// kprobe-multi link on all the functions where the kernel has kprobe-multi,
/// else one kprobe per function (funcs.bpf.c has kprobe programs only).
/// `magnet funcs --check` prints this plan; [`Plan::new`] follows its entry
/// part.
pub static FUNC_PARTS: &[Part] = &[
    Part {
        name: "entry",
        group: "funcs",
        feeds: "function entry records",
        candidates: &[
            Candidate::progs(&[
                ("func_skb1_multi", Attach::KprobeMulti(SELECTED)),
                ("func_skb2_multi", Attach::KprobeMulti(SELECTED)),
                ("func_skb3_multi", Attach::KprobeMulti(SELECTED)),
                ("func_skb4_multi", Attach::KprobeMulti(SELECTED)),
                ("func_skb5_multi", Attach::KprobeMulti(SELECTED)),
            ]),
            Candidate::progs(&[
                ("func_skb1", Attach::Kprobe(SELECTED)),
                ("func_skb2", Attach::Kprobe(SELECTED)),
                ("func_skb3", Attach::Kprobe(SELECTED)),
                ("func_skb4", Attach::Kprobe(SELECTED)),
                ("func_skb5", Attach::Kprobe(SELECTED)),
            ]),
        ],
        optional: false,
        default_on: true,
    },
    Part {
        name: "exit",
        group: "funcs",
        feeds: "function returns (--func-exits)",
        candidates: &[
            Candidate::progs(&[("func_exit_multi", Attach::KretprobeMulti(SELECTED))]),
            Candidate::progs(&[("func_exit", Attach::Kretprobe(SELECTED))]),
        ],
        optional: true,
        default_on: false,
    },
    Part {
        name: "copies",
        group: "funcs",
        feeds: "copies linked to their parent skb",
        candidates: &[
            Candidate::progs(&[
                ("func_copy_multi", Attach::KprobeMulti(COPIERS)),
                ("func_copy_exit_multi", Attach::KretprobeMulti(COPIERS)),
            ]),
            Candidate::progs(&[
                ("func_copy", Attach::Kprobe(COPIERS)),
                ("func_copy_exit", Attach::Kretprobe(COPIERS)),
            ]),
        ],
        optional: true,
        default_on: true,
    },
    Part {
        name: "no_skb",
        group: "funcs",
        feeds: "calls of functions without an skb (--funcs all)",
        candidates: &[Candidate::progs(&[(
            ANY_PROG,
            Attach::KprobeMulti(SELECTED),
        )])],
        optional: true,
        default_on: false,
    },
];

/// What this kernel lacks for a function probe, as its feature probes found
/// (they apply `MAGNET_HOOKS_DENY` to the kind of probe).
fn probe_support(f: &Features, a: Attach) -> Option<String> {
    let support = match a {
        Attach::Kprobe(_) | Attach::Kretprobe(_) => &f.kprobe,
        Attach::KprobeMulti(_) | Attach::KretprobeMulti(_) => &f.kprobe_multi,
        _ => return None,
    };
    (!support.is_yes()).then(|| support.reason().to_string())
}

/// [`FUNC_PARTS`] planned on this kernel: the probes it has, and a kprobe
/// program's bpf_get_func_ip (5.15+), by which every record names its
/// function.
pub fn plan(f: &Features, btf: &KernelBtf) -> plan::Plan {
    let func_ip = btf.has_enum_value("bpf_func_id", "BPF_FUNC_get_func_ip");
    let lacks = |a: Attach| {
        probe_support(f, a).or_else(|| {
            (!func_ip).then(|| {
                "no bpf_get_func_ip for kprobe programs (Linux 5.15+), which names the \
                 function a record is from"
                    .to_string()
            })
        })
    };
    plan::choose(FUNC_PARTS, &lacks, &Refusals::new())
}

/// What `record --funcs` would attach on this kernel (`magnet funcs
/// --check`). Needs root (it probes attach types).
pub fn check() -> Result<plan::Plan, crate::Error> {
    crate::recorder::preflight()?;
    let btf = KernelBtf::load().map_err(|e| crate::Error::Record(format!("{e:#}")))?;
    let features = Features::detect(&btf);
    Ok(plan(&features, &btf))
}

pub(crate) struct Plan {
    by_pos: [Vec<String>; 5],
    /// Functions without an skb parameter (`--funcs all`; position 0):
    /// function and caller only, kprobe-multi only.
    any: Vec<String>,
    multi: bool,
    /// Functions named in the header but not probed (callers).
    named: Vec<String>,
    /// Return probes too (`--func-exits`).
    exits: bool,
    /// Why function probes cannot work here (None: they can).
    no: Option<String>,
}

/// The program for functions without an skb parameter.
const ANY_PROG: &str = "func_any_multi";

/// The functions that make a new skb from the one in their first parameter
/// and return it: entry and return probes on them (`func_copy*`) link each
/// copy or non-fclone clone to its parent.
const COPY_FUNCS: [&str; 6] = [
    "skb_clone",
    "__pskb_copy_fclone",
    "skb_copy",
    "skb_copy_expand",
    "skb_realloc_headroom",
    "skb_expand_head",
];

fn copy_prog_names(multi: bool) -> [&'static str; 2] {
    if multi {
        ["func_copy_multi", "func_copy_exit_multi"]
    } else {
        ["func_copy", "func_copy_exit"]
    }
}

fn prog_name(pos: usize, multi: bool) -> String {
    if multi {
        format!("func_skb{pos}_multi")
    } else {
        format!("func_skb{pos}")
    }
}

fn exit_prog_name(multi: bool) -> &'static str {
    if multi {
        "func_exit_multi"
    } else {
        "func_exit"
    }
}

impl Plan {
    pub fn new(funcs: &[(String, u8)], named: &[String], exits: bool, f: &Features) -> Plan {
        let mut by_pos: [Vec<String>; 5] = Default::default();
        let mut any = Vec::new();
        for (name, pos) in funcs {
            if (1..=5).contains(pos) {
                by_pos[*pos as usize - 1].push(name.clone());
            } else if *pos == 0 {
                any.push(name.clone());
            }
        }
        let entry = plan::choose(&FUNC_PARTS[..1], &|a| probe_support(f, a), &Refusals::new());
        let entry = &entry.choices[0].chosen;
        let multi = *entry == Ok(0);
        let no = if funcs.is_empty() || entry.is_ok() {
            None
        } else {
            Some(format!(
                "no kprobes or kprobe-multi on this kernel ({}): kprobe: {}; kprobe-multi: {}",
                f.release,
                f.kprobe.reason(),
                f.kprobe_multi.reason()
            ))
        };
        Plan {
            by_pos,
            any,
            multi,
            named: named.to_vec(),
            exits,
            no,
        }
    }

    /// Why the functions asked for cannot be probed on this kernel (None:
    /// they can, or none were asked for).
    pub fn why_not(&self) -> Option<&str> {
        self.no.as_deref()
    }

    /// The plan where the kernel's kprobe programs cannot name the function
    /// they run for: bpf_get_func_ip came to them in 5.15 (asked of the
    /// kernel's BTF: its bpf_func_id enum), and every program here keys its
    /// records and calls by it.
    pub fn given_func_ip(mut self, btf: &magnet_kernel::KernelBtf, release: &str) -> Plan {
        if self.no.is_none()
            && !(self.by_pos.iter().all(Vec::is_empty) && self.any.is_empty())
            && !btf.has_enum_value("bpf_func_id", "BPF_FUNC_get_func_ip")
        {
            self.no = Some(format!(
                "this kernel ({release}) has kprobes but no bpf_get_func_ip for them (Linux 5.15+), \
                 which names the function a record is from"
            ));
        }
        self
    }

    /// Whether `prog` (a program of funcs.bpf.c) is to be loaded.
    pub fn wants(&self, prog: &str) -> bool {
        if self.no.is_some() {
            return false;
        }
        if prog == ANY_PROG {
            return self.multi && !self.any.is_empty();
        }
        if (self.exits && prog == exit_prog_name(self.multi))
            || copy_prog_names(self.multi).contains(&prog)
        {
            return self.by_pos.iter().any(|v| !v.is_empty());
        }
        (1..=5).any(|p| !self.by_pos[p - 1].is_empty() && prog == prog_name(p, self.multi))
    }

    /// Attaches the programs and names the functions in the header.
    pub fn attach(&self, object: &Object, header: &mut Header) -> (LayerSource, Vec<Link>) {
        let mut src = LayerSource {
            layer: "func".into(),
            hooks: Vec::new(),
            missing: Vec::new(),
            notes: Vec::new(),
        };
        let mut links = Vec::new();
        if let Some(why) = &self.no {
            src.missing.push(format!(
                "function probes not recorded: {why}; the other layers still record"
            ));
            return (src, links);
        }
        if !self.multi {
            // One kprobe is one perf event, one file descriptor each.
            let n: usize = self.by_pos.iter().map(Vec::len).sum();
            raise_nofile(n as u64 * (1 + u64::from(self.exits)) + 4096);
        }
        let started = Instant::now();
        let mut attached = Vec::new();
        let mut failed = Vec::new();
        for pos in 1..=5 {
            let names = &self.by_pos[pos - 1];
            if names.is_empty() {
                continue;
            }
            let pname = prog_name(pos, self.multi);
            let Some(prog) = object.progs_mut().find(|p| p.name() == pname.as_str()) else {
                failed.push((pname, "program missing from the BPF object".to_string()));
                continue;
            };
            let a = magnet_kernel::attach::attach_kprobes(&prog, names, false, self.multi);
            links.extend(a.links);
            attached.extend(a.funcs);
            failed.extend(a.failed);
        }
        // Exits are probed on the skb functions only.
        let with_skb = attached.clone();
        if !self.any.is_empty() {
            if !self.multi {
                src.missing.push(format!(
                    "{} functions without an skb parameter not probed: they need kprobe-multi \
                     (one kprobe each would be {} perf events)",
                    self.any.len(),
                    self.any.len()
                ));
            } else {
                match object.progs_mut().find(|p| p.name() == ANY_PROG) {
                    Some(prog) => {
                        let a =
                            magnet_kernel::attach::attach_kprobes(&prog, &self.any, false, true);
                        links.extend(a.links);
                        attached.extend(a.funcs);
                        failed.extend(a.failed);
                    }
                    None => failed.push((
                        ANY_PROG.to_string(),
                        "program missing from the BPF object".to_string(),
                    )),
                }
            }
        }
        let secs = started.elapsed().as_secs_f64();
        src.hooks.push(format!(
            "{} on {} functions (attached in {secs:.2} s)",
            if self.multi { "kprobe.multi" } else { "kprobe" },
            attached.len()
        ));
        if self.exits && !with_skb.is_empty() {
            self.attach_exits(object, &with_skb, &mut src, &mut links);
        }
        if !with_skb.is_empty() {
            self.attach_copies(object, &mut src, &mut links);
        }
        if !failed.is_empty() {
            src.missing.push(format!(
                "{} functions could not be probed (first: {}: {})",
                failed.len(),
                failed[0].0,
                failed[0].1
            ));
        }
        let (names, ends) = kallsyms_names(&attached, &self.named);
        header.enums.insert(FUNC_TABLE.into(), names);
        header.enums.insert(FUNC_END_TABLE.into(), ends);
        (src, links)
    }
}

impl Plan {
    /// Return probes on the functions whose entries are probed (`with_skb`).
    fn attach_exits(
        &self,
        object: &Object,
        with_skb: &[String],
        src: &mut LayerSource,
        links: &mut Vec<Link>,
    ) {
        let started = Instant::now();
        let pname = exit_prog_name(self.multi);
        match object.progs_mut().find(|p| p.name() == pname) {
            Some(prog) => {
                let a = magnet_kernel::attach::attach_kprobes(&prog, with_skb, true, self.multi);
                links.extend(a.links);
                src.hooks.push(format!(
                    "{} on {} functions (attached in {:.2} s)",
                    if self.multi {
                        "kretprobe.multi"
                    } else {
                        "kretprobe"
                    },
                    a.funcs.len(),
                    started.elapsed().as_secs_f64()
                ));
                if !a.failed.is_empty() {
                    src.missing.push(format!(
                        "{} function returns could not be probed (first: {}: {})",
                        a.failed.len(),
                        a.failed[0].0,
                        a.failed[0].1
                    ));
                }
            }
            None => src.missing.push(format!(
                "function returns not recorded: {pname} missing from the BPF object"
            )),
        }
    }

    /// Entry and return probes on the copying functions the kernel has, so
    /// that a copy's records name their parent.
    fn attach_copies(&self, object: &Object, src: &mut LayerSource, links: &mut Vec<Link>) {
        let started = Instant::now();
        // Tried without reading available_filter_functions (seconds under
        // emulation): the attach reports any the kernel refuses.
        let funcs: Vec<String> = COPY_FUNCS.iter().map(|f| f.to_string()).collect();
        let mut n = [0; 2];
        for (i, pname) in copy_prog_names(self.multi).into_iter().enumerate() {
            let Some(prog) = object.progs_mut().find(|p| p.name() == pname) else {
                src.missing.push(format!(
                    "copies not linked to their parent: {pname} missing from the BPF object"
                ));
                return;
            };
            let a = magnet_kernel::attach::attach_kprobes(&prog, &funcs, i == 1, self.multi);
            links.extend(a.links);
            n[i] = a.funcs.len();
            if let Some((f, e)) = a.failed.first() {
                src.missing.push(format!(
                    "copies made by {} of {} functions not linked to their parent (first: {f}: {e})",
                    a.failed.len(),
                    funcs.len()
                ));
            }
        }
        src.hooks.push(format!(
            "copies linked: entry and return probes on {} and {} of {} ({}; attached in {:.2} s)",
            n[0],
            n[1],
            funcs.len(),
            funcs.join(", "),
            started.elapsed().as_secs_f64()
        ));
    }
}

/// Raises the open-file limit to at least `want` (up to what root may set).
fn raise_nofile(want: u64) {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid pointer to a local.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) != 0 || r.rlim_cur >= want {
            return;
        }
        let mut n = libc::rlimit {
            rlim_cur: want,
            rlim_max: r.rlim_max.max(want),
        };
        if libc::setrlimit(libc::RLIMIT_NOFILE, &n) != 0 {
            n.rlim_cur = r.rlim_max;
            n.rlim_max = r.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &n);
        }
    }
}

/// Addresses of `funcs` from /proc/kallsyms (each also at +4: on kernels with
/// IBT a kprobe sits past the ENDBR and reports that address), and each
/// function's end (the next symbol's address); `named` (callers) at their
/// address only.
fn kallsyms_names(
    funcs: &[String],
    named: &[String],
) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    let mut names = BTreeMap::new();
    let mut ends = BTreeMap::new();
    let Ok(text) = std::fs::read_to_string("/proc/kallsyms") else {
        return (names, ends);
    };
    let want: std::collections::HashSet<&str> = funcs.iter().map(String::as_str).collect();
    let also: std::collections::HashSet<&str> = named.iter().map(String::as_str).collect();
    let mut syms: Vec<(u64, &str)> = text
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let addr = u64::from_str_radix(it.next()?, 16).ok()?;
            let ty = it.next()?;
            let name = it.next()?;
            matches!(ty, "t" | "T").then_some((addr, name))
        })
        .collect();
    syms.sort_unstable();
    for (i, &(addr, name)) in syms.iter().enumerate() {
        let probed = want.contains(name);
        if addr == 0 || !(probed || also.contains(name)) || names.contains_key(&addr.to_string()) {
            continue;
        }
        names.insert(addr.to_string(), name.to_string());
        if probed {
            names.insert((addr + 4).to_string(), name.to_string());
        }
        if let Some(&(next, _)) = syms[i + 1..].iter().find(|(a, _)| *a > addr) {
            ends.insert(addr.to_string(), next.to_string());
        }
    }
    (names, ends)
}
