//! What ftrace can attach to: `available_filter_functions` in tracefs (kprobes,
//! kprobe-multi and fentry all need a function listed there).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::error::{FuncsError, Result};

/// Where tracefs is usually found.
pub const TRACEFS: &[&str] = &["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// Function names in an `available_filter_functions` listing ("name" or
/// "name [module]" per line; a module's functions keep their plain name).
pub fn parse_available(text: &str) -> HashSet<String> {
    text.lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect()
}

/// Reads a saved listing.
pub fn read_available(path: &Path) -> Result<HashSet<String>> {
    let text = magnet_common::input::read_capped_string(
        path,
        magnet_common::input::LISTING_MAX,
        "a function listing",
    )
    .map_err(|e| FuncsError::io(path, e))?;
    Ok(parse_available(&text))
}

/// The running kernel's listing. Mounts tracefs on /sys/kernel/tracing when no
/// tracefs holds the file (needs root). The error says what is missing.
pub fn running_available() -> Result<(PathBuf, HashSet<String>)> {
    let mut last = None;
    for attempt in 0..2 {
        for dir in TRACEFS {
            let p = Path::new(dir).join("available_filter_functions");
            match std::fs::read_to_string(&p) {
                Ok(text) => return Ok((p, parse_available(&text))),
                Err(e) => {
                    if last.is_none() {
                        last = Some((p, e))
                    }
                }
            }
        }
        if attempt == 0 && !magnet_kernel::tracefs::mount() {
            break;
        }
        last = None;
    }
    let (p, e) = last.expect("at least one path tried");
    let hint = match e.kind() {
        std::io::ErrorKind::NotFound => "tracefs not mounted or the kernel has no dynamic ftrace",
        std::io::ErrorKind::PermissionDenied => {
            "not permitted: run as root (or this kernel does not let functions be traced)"
        }
        _ => "cannot read it",
    };
    Err(FuncsError::Other(format!(
        "{}: {e}: {hint}; give a saved listing with --available FILE",
        p.display()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listing_with_modules_and_blank_lines() {
        let s = parse_available("tcp_v4_rcv\n\nveth_xmit [veth]\n  ip_rcv  \n");
        let mut v: Vec<_> = s.into_iter().collect();
        v.sort();
        assert_eq!(v, ["ip_rcv", "tcp_v4_rcv", "veth_xmit"]);
    }
}
