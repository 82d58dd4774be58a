//! Function probes: which kind to use on this kernel, and attaching one BPF
//! program to one or many kernel functions.
//!
//! A program written for function probes comes in two forms (libbpf decides by
//! section name): `SEC("fentry/…")`/`SEC("fexit/…")` with typed arguments
//! (`BPF_PROG`), one program per target function (its target is fixed at load:
//! [`set_fentry_target`]); or `SEC("kprobe")`/`SEC("kretprobe")` (or
//! `SEC("kprobe.multi")`) with `BPF_KPROBE` register access, which one program
//! serves for any number of functions ([`attach_kprobes`]). `magnet funcs`
//! probes ~1,000 functions: kprobe-multi makes that one link; plain kprobes make
//! one perf event per function.

use std::collections::HashSet;

use libbpf_rs::{Link, OpenProgramMut, ProgramMut};

use crate::{Error, Features, Result};

/// A way to run a program when a kernel function is called (or returns).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum FuncHook {
    Fentry,
    Fexit,
    KprobeMulti { ret: bool },
    Kprobe { ret: bool },
}

impl FuncHook {
    /// The best way this kernel offers, in magnet's order: fentry/fexit, then
    /// kprobe-multi, then one kprobe per function. `exit`: on return.
    pub fn best(f: &Features, exit: bool) -> Option<FuncHook> {
        if f.fentry.is_yes() {
            Some(if exit {
                FuncHook::Fexit
            } else {
                FuncHook::Fentry
            })
        } else if f.kprobe_multi.is_yes() {
            Some(FuncHook::KprobeMulti { ret: exit })
        } else if f.kprobe.is_yes() {
            Some(FuncHook::Kprobe { ret: exit })
        } else {
            None
        }
    }

    /// The best way to attach one program to *many* functions: kprobe-multi
    /// (one link), else kprobes (fentry needs one program per function).
    pub fn best_batched(f: &Features, exit: bool) -> Option<FuncHook> {
        if f.kprobe_multi.is_yes() {
            Some(FuncHook::KprobeMulti { ret: exit })
        } else if f.kprobe.is_yes() {
            Some(FuncHook::Kprobe { ret: exit })
        } else {
            None
        }
    }

    /// `fentry`, `fexit`, `kprobe.multi`, `kretprobe.multi`, `kprobe`, `kretprobe`.
    pub fn name(&self) -> &'static str {
        match self {
            FuncHook::Fentry => "fentry",
            FuncHook::Fexit => "fexit",
            FuncHook::KprobeMulti { ret: false } => "kprobe.multi",
            FuncHook::KprobeMulti { ret: true } => "kretprobe.multi",
            FuncHook::Kprobe { ret: false } => "kprobe",
            FuncHook::Kprobe { ret: true } => "kretprobe",
        }
    }

    /// `fentry/tcp_sendmsg`, as magnet names hooks.
    pub fn hook_name(&self, func: &str) -> String {
        format!("{}/{func}", self.name())
    }
}

/// Points an fentry/fexit program at `func` (before the object is loaded).
pub fn set_fentry_target(prog: &mut OpenProgramMut<'_>, func: &str) -> Result<()> {
    prog.set_attach_target(0, Some(func.to_string()))
        .map_err(|e| Error::Attach {
            what: format!("fentry/fexit target {func}"),
            reason: e.to_string(),
        })
}

/// Attaches a loaded fentry/fexit program (its target was set before load).
pub fn attach_fentry(prog: &ProgramMut<'_>, func: &str) -> Result<Link> {
    prog.attach_trace().map_err(|e| Error::Attach {
        what: format!("fentry/fexit {func}"),
        reason: format!("{e:#}"),
    })
}

/// Attaches a loaded tracing program where its plan says: a tracefs
/// tracepoint by its name (`syscalls/sys_exit_bind`; one program may sit at
/// several, a link each), any other (tp_btf, fentry/fexit) where its section
/// says.
pub fn attach_tracing(prog: &ProgramMut<'_>, attach: crate::plan::Attach) -> Result<Link> {
    let link = match attach {
        crate::plan::Attach::Tracepoint(tp) => {
            let (category, name) = tp.split_once('/').unwrap_or(("", tp));
            prog.attach_tracepoint(
                libbpf_rs::TracepointCategory::Custom(category.to_string()),
                name,
            )
        }
        _ => prog.attach(),
    };
    link.map_err(|e| Error::Attach {
        what: crate::plan::attach_name(attach),
        reason: format!("{e:#}"),
    })
}

/// What [`attach_kprobes`] attached, and what it could not (function, reason).
#[derive(Debug, Default)]
pub struct Attached {
    pub links: Vec<Link>,
    /// Functions attached (in the order given, failures left out).
    pub funcs: Vec<String>,
    pub failed: Vec<(String, String)>,
}

/// Attaches one kprobe (or kretprobe) program to every function in `funcs`.
/// With `multi`, as kprobe-multi links: one link for all of them; when the
/// kernel refuses the batch (one function it cannot probe spoils it), the
/// batch is halved until the bad functions are found, so N functions with k
/// bad ones cost about k·log2(N) tries. Without `multi`, one kprobe per function.
/// Never fails as a whole: per-function failures are in [`Attached::failed`].
pub fn attach_kprobes(prog: &ProgramMut<'_>, funcs: &[String], ret: bool, multi: bool) -> Attached {
    let mut out = Attached::default();
    if multi {
        multi_split(prog, funcs, ret, &mut out);
    } else {
        for f in funcs {
            match prog.attach_kprobe(ret, f) {
                Ok(l) => {
                    out.links.push(l);
                    out.funcs.push(f.clone());
                }
                Err(e) => out.failed.push((f.clone(), format!("{e:#}"))),
            }
        }
    }
    out
}

fn multi_split(prog: &ProgramMut<'_>, funcs: &[String], ret: bool, out: &mut Attached) {
    if funcs.is_empty() {
        return;
    }
    match prog.attach_kprobe_multi(ret, funcs.to_vec()) {
        Ok(l) => {
            out.links.push(l);
            out.funcs.extend(funcs.iter().cloned());
        }
        Err(e) if funcs.len() == 1 => out.failed.push((funcs[0].clone(), format!("{e:#}"))),
        Err(_) => {
            let (a, b) = funcs.split_at(funcs.len() / 2);
            multi_split(prog, a, ret, out);
            multi_split(prog, b, ret, out);
        }
    }
}

/// The functions a kprobe or fentry can attach to
/// (`available_filter_functions`; module functions without their `[module]`).
pub fn traceable_functions() -> Result<HashSet<String>> {
    let mut last = None;
    for path in [
        "/sys/kernel/tracing/available_filter_functions",
        "/sys/kernel/debug/tracing/available_filter_functions",
    ] {
        match std::fs::read_to_string(path) {
            Ok(s) => {
                return Ok(s
                    .lines()
                    .filter_map(|l| l.split_whitespace().next())
                    .map(str::to_string)
                    .collect())
            }
            Err(e) => last = Some((path, e)),
        }
    }
    let (path, e) = last.expect("two paths tried");
    Err(Error::Read {
        path: path.into(),
        reason: format!("{e} (mount tracefs: mount -t tracefs nodev /sys/kernel/tracing)"),
    })
}

/// Lines of `kprobe_events` that libbpf made for process `pid` (legacy
/// tracefs kprobes are named `libbpf_<pid>_…`): after detach there must be
/// none. Empty when tracefs is not mounted.
pub fn kprobe_events_of(pid: u32) -> Vec<String> {
    let tag = format!("libbpf_{pid}_");
    [
        "/sys/kernel/tracing/kprobe_events",
        "/sys/kernel/debug/tracing/kprobe_events",
    ]
    .iter()
    .find_map(|p| std::fs::read_to_string(p).ok())
    .map(|s| {
        s.lines()
            .filter(|l| l.contains(&tag))
            .map(str::to_string)
            .collect()
    })
    .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Support;

    fn features(fentry: bool, multi: bool, kprobe: bool) -> Features {
        let s = |b: bool| {
            if b {
                Support::Yes
            } else {
                Support::No("x".into())
            }
        };
        Features {
            release: "test".into(),
            kprobe: s(kprobe),
            kprobe_multi: s(multi),
            fentry: s(fentry),
            netfilter_link: s(false),
            tcx: s(false),
        }
    }

    #[test]
    fn order_is_fentry_then_multi_then_kprobe() {
        // 6.12: all three
        let f = features(true, true, true);
        assert_eq!(FuncHook::best(&f, false), Some(FuncHook::Fentry));
        assert_eq!(FuncHook::best(&f, true), Some(FuncHook::Fexit));
        assert_eq!(
            FuncHook::best_batched(&f, true),
            Some(FuncHook::KprobeMulti { ret: true })
        );
        // 6.1: no kprobe-multi
        let f = features(true, false, true);
        assert_eq!(
            FuncHook::best_batched(&f, false),
            Some(FuncHook::Kprobe { ret: false })
        );
        // kprobes only
        let f = features(false, false, true);
        assert_eq!(
            FuncHook::best(&f, true),
            Some(FuncHook::Kprobe { ret: true })
        );
        assert_eq!(
            FuncHook::Kprobe { ret: true }.hook_name("ip_rcv"),
            "kretprobe/ip_rcv"
        );
        // this development machine: none
        let f = features(false, false, false);
        assert_eq!(FuncHook::best(&f, false), None);
        assert!(f.why_no_func_probes().contains("no function probes"));
    }
}
