//! Classic tracepoints as tracefs lists them (`events/<category>/<name>`):
//! libbpf attaches a `tracepoint/` program by the event's id read there, so
//! a kernel without the event, or without tracefs mounted, cannot take one.

use std::path::Path;

/// Where tracefs is usually mounted, in the order libbpf looks.
pub const TRACEFS: &[&str] = &["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// Mounts tracefs at /sys/kernel/tracing when none is mounted in this mount
/// namespace, as trace-cmd does: `ip netns exec` runs a command in a mount
/// namespace of its own with a fresh /sys, where the syscall tracepoints
/// (attached by the ids tracefs lists) would otherwise be missing and the
/// recorder would fall back to hooks at every system call of the host.
/// Some(a line saying so) when it mounted it; None when one was mounted
/// already, or the mount failed ([`event_missing`] then says why).
pub fn mount_if_missing() -> Option<String> {
    if TRACEFS.iter().any(|r| Path::new(r).join("events").is_dir()) {
        return None;
    }
    let target = TRACEFS[0];
    if !Path::new(target).is_dir() {
        return None;
    }
    (mount() && Path::new(target).join("events").is_dir()).then(|| {
        format!(
            "tracefs was not mounted in this mount namespace (as under `ip netns exec`): \
             mounted it at {target} for the syscall tracepoints"
        )
    })
}

/// `mount -t tracefs nodev /sys/kernel/tracing`; false when it fails.
pub fn mount() -> bool {
    let (source, target, fstype) = (c"nodev", c"/sys/kernel/tracing", c"tracefs");
    // SAFETY: NUL-terminated strings that outlive the call, no data.
    let rc = unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    rc == 0
}

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
