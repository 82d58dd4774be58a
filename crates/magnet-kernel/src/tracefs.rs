//! Classic tracepoints as tracefs lists them (`events/<category>/<name>`):
//! libbpf attaches a `tracepoint/` program by the event's id read there, so
//! a kernel without the event, or without tracefs mounted, cannot take one.

use std::path::Path;

/// Where tracefs is usually mounted, in the order libbpf looks.
pub const TRACEFS: &[&str] = &["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// Why the tracepoint `category/name` cannot be attached here (None: it can).
pub fn event_missing(tp: &str) -> Option<String> {
    event_missing_in(TRACEFS, tp)
}

/// [`event_missing`] with the tracefs mount points given.
pub fn event_missing_in(roots: &[&str], tp: &str) -> Option<String> {
    let mut mounted = false;
    for root in roots {
        let events = Path::new(root).join("events");
        if !events.is_dir() {
            continue;
        }
        mounted = true;
        if events.join(tp).join("id").exists() {
            return None;
        }
    }
    Some(if mounted {
        format!("this kernel has no tracepoint {tp} (tracefs lists no such event)")
    } else {
        format!(
            "tracefs is not mounted ({}), so tracepoint {tp} cannot be attached \
             (mount -t tracefs nodev /sys/kernel/tracing)",
            roots.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_found_by_its_id_file_and_its_absence_says_why() {
        let dir = std::env::temp_dir().join(format!("magnet-tracefs-{}", std::process::id()));
        let ev = dir.join("events/syscalls/sys_exit_splice");
        std::fs::create_dir_all(&ev).unwrap();
        std::fs::write(ev.join("id"), "700\n").unwrap();
        let root = dir.to_str().unwrap();
        assert_eq!(event_missing_in(&[root], "syscalls/sys_exit_splice"), None);
        let no = event_missing_in(&[root], "syscalls/sys_exit_sendfile64").unwrap();
        assert!(
            no.contains("no tracepoint syscalls/sys_exit_sendfile64"),
            "{no}"
        );
        let unmounted = event_missing_in(&["/nonexistent-tracefs"], "syscalls/sys_exit_splice");
        assert!(unmounted.unwrap().starts_with("tracefs is not mounted"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
