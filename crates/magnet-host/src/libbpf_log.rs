//! libbpf's messages, routed through magnet instead of straight to stderr.
//!
//! libbpf prints what it tries and what fails as it goes: a hook a kernel
//! build refuses, a netfilter priority already taken (EBUSY, tried again at
//! the next one), the verifier's whole log. magnet decides per refusal what
//! takes its place and says so in one line of its own, so by default those
//! messages are only kept — the last few hundred, to name the refused program
//! and the verifier's reason — and printed with `-v` ([`show`]) or with
//! `LIBBPF_DEBUG` set (everything, libbpf's debug messages included).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Mutex, Once};

use libbpf_rs::PrintLevel;

/// Messages kept: enough for one object's load (the verifier's log comes as
/// one message), bounded for a daemon that loads and attaches for weeks.
const KEPT: usize = 512;

/// (sequence number, message), oldest first.
static LOG: Mutex<VecDeque<(u64, String)>> = Mutex::new(VecDeque::new());
static SEQ: AtomicU64 = AtomicU64::new(0);
/// What is printed: 0 nothing, 1 warnings (the verifier's log is one), 2
/// information too, 3 everything.
static SHOWN: AtomicU8 = AtomicU8::new(0);
static INSTALL: Once = Once::new();

fn rank(level: PrintLevel) -> u8 {
    match level {
        PrintLevel::Warn => 1,
        PrintLevel::Info => 2,
        PrintLevel::Debug => 3,
    }
}

/// libbpf's guess for any EPERM, printed as advice. magnet runs as root
/// with the memlock limit lifted (or accounted by the memory cgroup), so
/// the refusal is the kernel's or `MAGNET_HOOKS_DENY`'s, never that limit:
/// the advice would send users the wrong way.
fn false_advice(msg: &str) -> bool {
    msg.contains("try raising 'ulimit -l'")
}

fn keep(level: PrintLevel, msg: String) {
    if false_advice(&msg) {
        return;
    }
    if rank(level) <= SHOWN.load(Ordering::Relaxed) {
        eprint!("{msg}");
    }
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    if let Ok(mut l) = LOG.lock() {
        if l.len() == KEPT {
            l.pop_front();
        }
        l.push_back((seq, msg));
    }
}

/// Routes libbpf's messages through [`keep`] for the rest of the process;
/// called once, by the first BPF user (and the CLI at start). Idempotent.
/// Its debug messages are asked for only when they are shown: libbpf writes
/// one per relocation as it opens an object (thousands for the recorder's),
/// each formatted into a String before [`keep`] sees it, and that was half
/// the CPU of a short recording in the debug build the kernel lab runs
/// emulated. What magnet reads of the log (the refused program, the
/// verifier's reason) comes as warnings.
pub fn install() {
    INSTALL.call_once(|| {
        let debug = std::env::var_os("LIBBPF_DEBUG").is_some();
        if debug {
            SHOWN.fetch_max(3, Ordering::Relaxed);
        }
        libbpf_rs::set_print(Some((
            if debug {
                PrintLevel::Debug
            } else {
                PrintLevel::Info
            },
            keep,
        )));
    });
}

/// Print libbpf's warnings (the verifier's log among them) and, with
/// `verbosity` 2 or more, its information messages as they come: `-v`,
/// `-vv`, and `--check`.
pub fn show(verbosity: u8) {
    install();
    let level = match verbosity {
        0 => 0,
        1 => 1,
        2 => 2,
        _ => 3,
    };
    if level == 3 {
        libbpf_rs::set_print(Some((PrintLevel::Debug, keep)));
    }
    SHOWN.fetch_max(level, Ordering::Relaxed);
}

/// Runs `f`, returning the libbpf messages it caused (printed only as
/// [`show`] or `LIBBPF_DEBUG` says).
pub fn capture<T>(f: impl FnOnce() -> T) -> (T, Vec<String>) {
    install();
    let from = SEQ.load(Ordering::Relaxed);
    let out = f();
    let log = LOG
        .lock()
        .map(|l| {
            l.iter()
                .filter(|(seq, _)| *seq >= from)
                .map(|(_, m)| m.clone())
                .collect()
        })
        .unwrap_or_default();
    (out, log)
}

/// `libbpf: prog 'NAME': failed to load: …` → NAME.
pub fn failed_program(log: &[String]) -> Option<String> {
    log.iter().rev().find_map(|l| {
        let rest = l.split("prog '").nth(1)?;
        let (name, tail) = rest.split_once('\'')?;
        tail.contains("failed to load").then(|| name.to_string())
    })
}

/// The verifier's last word before its statistics line.
pub fn verifier_reason(log: &[String]) -> Option<String> {
    let lines: Vec<&str> = log.iter().flat_map(|m| m.lines()).collect();
    let end = lines.iter().rposition(|l| l.starts_with("processed "))?;
    lines[..end]
        .iter()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| l.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The log is the process's: tests that fill it run one at a time.
    static SERIAL: Mutex<()> = Mutex::new(());

    #[test]
    fn the_log_names_the_refused_program_and_why() {
        let log = vec![
            "libbpf: prog 'ip_local_out': BPF program load failed: Invalid argument\n".to_string(),
            "0: R1=ctx() R10=fp0\nunknown func bpf_get_current_task#35\nprocessed 12 insns\n"
                .to_string(),
            "libbpf: prog 'ip_local_out': failed to load: -22\n".to_string(),
        ];
        assert_eq!(failed_program(&log).as_deref(), Some("ip_local_out"));
        assert_eq!(
            verifier_reason(&log).as_deref(),
            Some("unknown func bpf_get_current_task#35")
        );
        assert_eq!(failed_program(&log[..1]), None);
    }

    #[test]
    fn capture_keeps_what_its_closure_caused_and_drops_false_advice() {
        let _one = SERIAL.lock().unwrap();
        let ((), log) = capture(|| {
            keep(
                PrintLevel::Warn,
                "libbpf: prog 'x': failed to load: -1\n".into(),
            );
            keep(
                PrintLevel::Warn,
                "libbpf: permission error while running as root; try raising 'ulimit -l'? current value: 8 MiB\n"
                    .into(),
            );
        });
        assert_eq!(log, ["libbpf: prog 'x': failed to load: -1\n"]);
        // a later capture sees only its own messages
        let ((), later) = capture(|| keep(PrintLevel::Info, "libbpf: y\n".into()));
        assert_eq!(later, ["libbpf: y\n"]);
    }

    #[test]
    fn the_log_kept_is_bounded() {
        let _one = SERIAL.lock().unwrap();
        let ((), log) = capture(|| {
            for i in 0..KEPT + 10 {
                keep(PrintLevel::Debug, format!("m{i}"));
            }
        });
        assert_eq!(log.len(), KEPT);
        assert_eq!(
            log.last().map(String::as_str),
            Some(&*format!("m{}", KEPT + 9))
        );
    }
}
