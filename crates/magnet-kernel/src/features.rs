//! What the kernel lets BPF attach to, each found by trying it once on the
//! smallest scale and closing everything again.

use crate::sys;
use crate::KernelBtf;

/// Whether a feature works, and if not, why (errno and what to look for).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "support", content = "reason", rename_all = "lowercase")]
pub enum Support {
    Yes,
    No(String),
}

impl Support {
    pub fn is_yes(&self) -> bool {
        matches!(self, Support::Yes)
    }

    /// The reason it is missing, or "" when it works.
    pub fn reason(&self) -> &str {
        match self {
            Support::Yes => "",
            Support::No(r) => r,
        }
    }
}

/// What the running kernel offers. See the crate docs.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Features {
    /// `uname -r`.
    pub release: String,
    /// kprobe/kretprobe through the kprobe PMU (CONFIG_KPROBES).
    pub kprobe: Support,
    /// One link on many functions (CONFIG_FPROBE, Linux 5.18+).
    pub kprobe_multi: Support,
    /// fentry/fexit trampolines (CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS and an
    /// architecture that has them).
    pub fentry: Support,
    /// Netfilter BPF links (Linux 6.4+, CONFIG_NETFILTER_BPF_LINK).
    pub netfilter_link: Support,
    /// TCX links (Linux 6.6+), from BTF.
    pub tcx: Support,
}

/// A function every kernel has and every function probe can reach.
const PROBE_TARGETS: &[&str] = &["tcp_sendmsg", "vfs_read", "do_nanosleep"];

impl Features {
    /// Tries each attach type once (a few milliseconds; needs root — without
    /// it every probe says so).
    pub fn detect(btf: &KernelBtf) -> Features {
        let release = nix_release();
        let target = PROBE_TARGETS.iter().copied().find(|f| btf.has_func(f));
        let t = target.unwrap_or("?");
        // MAGNET_HOOKS_DENY: as if the kernel refused them (crate::deny)
        let or_denied = |name: String, probe: &dyn Fn() -> Support| match crate::deny::denied(&name)
        {
            Some(why) => Support::No(why),
            None => probe(),
        };
        Features {
            release,
            kprobe: or_denied(format!("kprobe/{t}"), &|| probe_kprobe(target)),
            kprobe_multi: or_denied(format!("kprobe_multi/{t}"), &|| probe_kprobe_multi(target)),
            fentry: or_denied(format!("fentry/{t}"), &|| probe_fentry(btf, target)),
            netfilter_link: or_denied("netfilter/LOCAL_OUT".into(), &|| probe_netfilter(btf)),
            tcx: or_denied("tcx/ingress".into(), &|| {
                if btf.has_enum_value("bpf_attach_type", "BPF_TCX_INGRESS") {
                    Support::Yes
                } else {
                    Support::No(
                        "no TCX links (Linux 6.6 or later); clsact + tc filters work instead"
                            .into(),
                    )
                }
            }),
        }
    }

    /// Whether any function probe (fentry, kprobe-multi, kprobe) works.
    pub fn has_func_probes(&self) -> bool {
        self.fentry.is_yes() || self.kprobe_multi.is_yes() || self.kprobe.is_yes()
    }

    /// One line saying why no function probe works (empty when one does).
    pub fn why_no_func_probes(&self) -> String {
        if self.has_func_probes() {
            return String::new();
        }
        format!(
            "this kernel ({}) has no function probes: fentry: {}; kprobe: {}",
            self.release,
            self.fentry.reason(),
            self.kprobe.reason()
        )
    }
}

fn nix_release() -> String {
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: u is a valid utsname to fill.
    if unsafe { libc::uname(&mut u) } != 0 {
        return String::new();
    }
    // SAFETY: uname NUL-terminates release.
    unsafe { std::ffi::CStr::from_ptr(u.release.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

fn probe_kprobe(target: Option<&str>) -> Support {
    let Some(pmu) = sys::kprobe_pmu() else {
        return Support::No(
            "no kprobes (/sys/bus/event_source/devices/kprobe is missing: kernel built without CONFIG_KPROBES)".into(),
        );
    };
    let Some(target) = target else {
        return Support::No("no known function to test kprobes on".into());
    };
    let prog = match sys::load_trivial(libbpf_sys::BPF_PROG_TYPE_KPROBE, 0, 0, 0) {
        Ok(p) => p,
        Err(e) => return Support::No(format!("kprobe programs: {e}")),
    };
    match sys::attach_perf_kprobe(&prog, pmu, target) {
        Ok(_ev) => Support::Yes,
        Err(e) => Support::No(format!("kprobe on {target}: {e}")),
    }
}

fn probe_kprobe_multi(target: Option<&str>) -> Support {
    let Some(target) = target else {
        return Support::No("no known function to test kprobe-multi on".into());
    };
    let prog = match sys::load_trivial(
        libbpf_sys::BPF_PROG_TYPE_KPROBE,
        libbpf_sys::BPF_TRACE_KPROBE_MULTI,
        0,
        0,
    ) {
        Ok(p) => p,
        Err(e) => return Support::No(format!("kprobe-multi programs (Linux 5.18+): {e}")),
    };
    match sys::attach_kprobe_multi(&prog, &[target]) {
        Ok(_l) => Support::Yes,
        Err(e) if e.errno == libc::EOPNOTSUPP => Support::No(format!(
            "no kprobe-multi: {e} (kernel built without CONFIG_FPROBE)"
        )),
        Err(e) => Support::No(format!("kprobe-multi on {target}: {e}")),
    }
}

fn probe_fentry(btf: &KernelBtf, target: Option<&str>) -> Support {
    let Some((target, id)) = target.and_then(|t| Some((t, btf.func_id(t)?))) else {
        return Support::No("no known function in BTF to test fentry on".into());
    };
    let prog = match sys::load_trivial(
        libbpf_sys::BPF_PROG_TYPE_TRACING,
        libbpf_sys::BPF_TRACE_FENTRY,
        id,
        0,
    ) {
        Ok(p) => p,
        Err(e) => return Support::No(format!("no fentry/fexit: {e} (fentry on {target})")),
    };
    match sys::attach_tracing(&prog) {
        Ok(_l) => Support::Yes,
        Err(e) => Support::No(format!(
            "no fentry/fexit: {e} (fentry on {target}; needs BPF trampolines: CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS)"
        )),
    }
}

/// Whether this kernel creates maps of `map_type`; asked of the kernel
/// itself (libbpf creates and closes one), not guessed from its version.
pub fn has_map_type(map_type: libbpf_sys::bpf_map_type) -> bool {
    // SAFETY: a probe call with no options; it creates and closes one map.
    unsafe { libbpf_sys::libbpf_probe_bpf_map_type(map_type, std::ptr::null()) == 1 }
}

/// Whether programs of `prog_type` may call `helper` on this kernel: libbpf
/// loads a two-instruction program that calls it and reads the verifier's
/// answer (a few milliseconds). Which helpers a program type may call
/// differs by version and build, and a refusal found only when the whole
/// object loads costs a load per refused program (about 30 s each in a TCG
/// guest).
pub fn prog_may_call(
    prog_type: libbpf_sys::bpf_prog_type,
    helper: libbpf_sys::bpf_func_id,
) -> bool {
    // SAFETY: a probe call with no options; it loads and closes one program.
    unsafe { libbpf_sys::libbpf_probe_bpf_helper(prog_type, helper, std::ptr::null()) == 1 }
}

fn probe_netfilter(btf: &KernelBtf) -> Support {
    if !btf.has_enum_value("bpf_link_type", "BPF_LINK_TYPE_NETFILTER") {
        return Support::No("no netfilter BPF links (Linux 6.4 or later)".into());
    }
    let prog = match sys::load_trivial(
        libbpf_sys::BPF_PROG_TYPE_NETFILTER,
        libbpf_sys::BPF_NETFILTER,
        0,
        1, // NF_ACCEPT
    ) {
        Ok(p) => p,
        Err(e) => {
            return Support::No(format!(
                "no netfilter BPF links: {e} (needs CONFIG_NETFILTER_BPF_LINK)"
            ))
        }
    };
    // A priority nobody is likely to hold; the test link accepts every packet
    // and lives for microseconds.
    match sys::attach_netfilter(&prog, -7_654_321) {
        Ok(_l) => Support::Yes,
        Err(e) => Support::No(format!(
            "no netfilter BPF links: {e} (needs CONFIG_NETFILTER_BPF_LINK)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs as root only (loading programs); compares each answer with what the
    /// kernel exposes by other means.
    #[test]
    fn detect_agrees_with_the_kernel() {
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: feature probes need root");
            return;
        }
        let Ok(btf) = KernelBtf::load() else {
            eprintln!("skipped: no BTF");
            return;
        };
        let f = Features::detect(&btf);
        // No kprobe PMU means no kprobes, and the reverse.
        let pmu = std::path::Path::new("/sys/bus/event_source/devices/kprobe").exists();
        assert_eq!(f.kprobe.is_yes(), pmu, "{:?}", f.kprobe);
        // Netfilter links exist exactly when BTF knows their link type.
        if !btf.has_enum_value("bpf_link_type", "BPF_LINK_TYPE_NETFILTER") {
            assert!(!f.netfilter_link.is_yes());
        }
        // kprobe-multi sits on kprobes' infrastructure (fprobe) and fentry's
        // ftrace: neither comes without ftrace.
        if f.kprobe_multi.is_yes() {
            assert!(f.fentry.is_yes() || f.kprobe.is_yes());
        }
        // A second detection gives the same answers (nothing left attached
        // that would make a retry EBUSY).
        let g = Features::detect(&btf);
        assert_eq!(f.kprobe, g.kprobe);
        assert_eq!(f.fentry, g.fentry);
        assert_eq!(f.kprobe_multi, g.kprobe_multi);
        assert_eq!(f.netfilter_link, g.netfilter_link);
    }
}
