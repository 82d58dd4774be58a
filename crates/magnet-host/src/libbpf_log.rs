//! libbpf's messages while loading, kept to name the program the kernel
//! refused and the verifier's reason (printed only with LIBBPF_DEBUG set).

use std::sync::Mutex;

use libbpf_rs::PrintLevel;

static LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn keep(_level: PrintLevel, msg: String) {
    if std::env::var_os("LIBBPF_DEBUG").is_some() {
        eprint!("{msg}");
    }
    if let Ok(mut l) = LOG.lock() {
        l.push(msg);
    }
}

/// Runs `f` with libbpf's messages captured (not printed unless
/// LIBBPF_DEBUG is set), then restores the previous printer.
pub fn capture<T>(f: impl FnOnce() -> T) -> (T, Vec<String>) {
    let prev = libbpf_rs::set_print(Some((PrintLevel::Debug, keep)));
    let out = f();
    libbpf_rs::set_print(prev);
    let log = LOG
        .lock()
        .map(|mut l| std::mem::take(&mut *l))
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
}
