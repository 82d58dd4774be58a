//! Whether the running kernel may preempt a task in the kernel, and so in the
//! middle of a BPF program that runs with preemption on (netfilter hooks of a
//! task's own sends, fentry/fexit, cgroup programs).
//!
//! Per-CPU state that a program holds across several steps (the recorder's
//! batch of records) is safe only where a program, once started on a CPU,
//! runs to its end there or is interrupted only by programs that run to
//! theirs. That holds on kernels that preempt no task in the kernel
//! (`preempt=none` or `voluntary`) and fails on `full`, `lazy` and
//! PREEMPT_RT. The mode is a build choice, and with PREEMPT_DYNAMIC a boot
//! choice too: it is read, never guessed from the version.

use std::fmt;

/// The kernel's preemption model, as far as it can be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preemption {
    /// `none`: a task runs in the kernel until it sleeps or returns.
    None,
    /// `voluntary`: as `none`, plus explicit rescheduling points (no BPF
    /// program holds one).
    Voluntary,
    /// `full`: a task may be preempted anywhere preemption is enabled.
    Full,
    /// `lazy`: as `full`, at the next tick.
    Lazy,
    /// PREEMPT_RT: as `full`, and softirqs run in threads.
    Rt,
    /// Not readable here (assumed to preempt).
    Unknown,
}

impl Preemption {
    /// Whether a task may be preempted in the middle of a BPF program that
    /// runs with preemption enabled. Unknown counts as yes: the safe side.
    pub fn preempts_programs(self) -> bool {
        !matches!(self, Preemption::None | Preemption::Voluntary)
    }

    /// The model of the running kernel, with where it was read (read once
    /// per process: the build's configuration is only read when nothing
    /// before it says).
    pub fn detect() -> (Preemption, &'static str) {
        static DETECTED: std::sync::OnceLock<(Preemption, &'static str)> =
            std::sync::OnceLock::new();
        *DETECTED.get_or_init(|| {
            let version = std::fs::read_to_string("/proc/sys/kernel/version").unwrap_or_default();
            let dynamic_mode = std::fs::read_to_string("/sys/kernel/debug/sched/preempt").ok();
            let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
            from_sources(&version, dynamic_mode.as_deref(), &cmdline, kernel_config)
        })
    }
}

impl fmt::Display for Preemption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Preemption::None => "none",
            Preemption::Voluntary => "voluntary",
            Preemption::Full => "full",
            Preemption::Lazy => "lazy",
            Preemption::Rt => "PREEMPT_RT",
            Preemption::Unknown => "unknown",
        })
    }
}

/// The running kernel's build configuration, where the system keeps it.
fn kernel_config() -> Option<String> {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
    if let Ok(c) = std::fs::read_to_string(format!("/boot/config-{}", release.trim())) {
        return Some(c);
    }
    // /proc/config.gz (CONFIG_IKCONFIG_PROC): gzip, read with zcat.
    let out = std::process::Command::new("zcat")
        .arg("/proc/config.gz")
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The model from what the kernel says of itself: `version` (uname -v, whose
/// words name the build's model), the PREEMPT_DYNAMIC mode that debugfs shows
/// (`none voluntary (full) lazy`: the one in parentheses), the boot command
/// line's `preempt=`, and the build configuration's default. Returns the
/// model and the source that decided it.
pub fn from_sources(
    version: &str,
    dynamic_mode: Option<&str>,
    cmdline: &str,
    config: impl FnOnce() -> Option<String>,
) -> (Preemption, &'static str) {
    let words: Vec<&str> = version.split_whitespace().collect();
    if words.contains(&"PREEMPT_RT") {
        return (Preemption::Rt, "uname -v");
    }
    if !words.contains(&"PREEMPT_DYNAMIC") {
        // The model is fixed at build: uname -v names full and lazy.
        let model = if words.contains(&"PREEMPT_LAZY") {
            Preemption::Lazy
        } else if words.contains(&"PREEMPT") {
            Preemption::Full
        } else if version.is_empty() {
            Preemption::Unknown
        } else {
            Preemption::Voluntary
        };
        return (model, "uname -v");
    }
    if let Some(m) = dynamic_mode.and_then(|m| {
        let (_, rest) = m.split_once('(')?;
        let (mode, _) = rest.split_once(')')?;
        named(mode)
    }) {
        return (m, "/sys/kernel/debug/sched/preempt");
    }
    if let Some(m) = cmdline
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("preempt="))
        .next_back()
        .and_then(named)
    {
        return (m, "the boot command line (preempt=)");
    }
    let default = config().and_then(|c| {
        [
            ("CONFIG_PREEMPT_RT=y", Preemption::Rt),
            ("CONFIG_PREEMPT_LAZY=y", Preemption::Lazy),
            ("CONFIG_PREEMPT=y", Preemption::Full),
            ("CONFIG_PREEMPT_VOLUNTARY=y", Preemption::Voluntary),
            ("CONFIG_PREEMPT_NONE=y", Preemption::None),
        ]
        .into_iter()
        .find(|(line, _)| c.lines().any(|l| l.trim() == *line))
        .map(|(_, m)| m)
    });
    match default {
        Some(m) => (m, "the build's default (kernel config)"),
        None => (Preemption::Unknown, "nothing readable"),
    }
}

fn named(mode: &str) -> Option<Preemption> {
    match mode.trim() {
        "none" => Some(Preemption::None),
        "voluntary" => Some(Preemption::Voluntary),
        "full" => Some(Preemption::Full),
        "lazy" => Some(Preemption::Lazy),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DYN: &str = "#1 SMP PREEMPT_DYNAMIC Debian 6.12.117-1~deb12u1 (2025-11-01)";

    #[test]
    fn a_fixed_build_is_read_from_uname() {
        let f = |v| from_sources(v, None, "", || None).0;
        assert_eq!(f("#1 SMP PREEMPT_RT Tue Jan 1"), Preemption::Rt);
        assert_eq!(f("#1 SMP PREEMPT Tue Jan 1"), Preemption::Full);
        assert_eq!(f("#1 SMP PREEMPT_LAZY Tue Jan 1"), Preemption::Lazy);
        assert_eq!(f("#1 SMP Tue Jan 1"), Preemption::Voluntary);
        assert_eq!(f(""), Preemption::Unknown);
    }

    #[test]
    fn a_dynamic_build_says_its_mode_in_debugfs_then_the_command_line_then_its_config() {
        let debugfs = Some("none voluntary (full) lazy\n");
        assert_eq!(
            from_sources(DYN, debugfs, "preempt=none", || Some(
                "CONFIG_PREEMPT_NONE=y".into()
            )),
            (Preemption::Full, "/sys/kernel/debug/sched/preempt")
        );
        assert_eq!(
            from_sources(DYN, None, "quiet preempt=lazy", || Some(
                "CONFIG_PREEMPT_NONE=y".into()
            ))
            .0,
            Preemption::Lazy
        );
        assert_eq!(
            from_sources(DYN, None, "quiet", || Some(
                "# x\nCONFIG_PREEMPT_NONE=y\n".into()
            )),
            (Preemption::None, "the build's default (kernel config)")
        );
        assert_eq!(
            from_sources(DYN, None, "quiet", || Some(
                "CONFIG_PREEMPT_VOLUNTARY=y".into()
            ))
            .0,
            Preemption::Voluntary
        );
        // Debian's 6.12: PREEMPT_DYNAMIC, voluntary by default, full at boot.
        assert_eq!(
            from_sources(DYN, None, "preempt=full", || Some(
                "CONFIG_PREEMPT_VOLUNTARY=y".into()
            ))
            .0,
            Preemption::Full
        );
        assert_eq!(from_sources(DYN, None, "", || None).0, Preemption::Unknown);
    }

    #[test]
    fn only_none_and_voluntary_leave_programs_unpreempted() {
        use Preemption::*;
        for (m, yes) in [
            (None, false),
            (Voluntary, false),
            (Full, true),
            (Lazy, true),
            (Rt, true),
            (Unknown, true),
        ] {
            assert_eq!(m.preempts_programs(), yes, "{m}");
        }
    }

    #[test]
    fn this_host_is_read() {
        // Whatever the model, detect() names where it came from.
        let (_, from) = Preemption::detect();
        assert!(!from.is_empty());
    }
}
