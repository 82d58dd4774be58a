//! `MAGNET_HOOKS_DENY`: make magnet act as if the kernel refused some program
//! types, attach kinds, hooks or map types — one definition for every BPF
//! user (record, sample, daemon, funcs), so kernel variety can be tested on
//! one machine.
//!
//! The variable is a comma-separated list of prefixes. Each is matched
//! against the name of what is about to be loaded, attached or created:
//!
//! | what | names | e.g. |
//! | --- | --- | --- |
//! | tracepoints (BTF) | `tp_btf/TRACEPOINT` | `tp_btf`, `tp_btf/sock_send_length` |
//! | raw tracepoints | `raw_tp/TRACEPOINT` | `raw_tp` |
//! | function probes | `fentry/FUNC`, `fexit/FUNC`, `kprobe/FUNC`, `kprobe_multi/FUNC`, `kretprobe/FUNC`, `kretprobe_multi/FUNC` (`FUNC` is `*` for `record --funcs`' selected functions) | `fentry`, `fexit/inet_sendmsg` |
//! | iterators | `iter/TARGET` | `iter`, `iter/bpf_sk_storage_map` |
//! | netfilter links | `netfilter/HOOK` | `netfilter`, `netfilter/LOCAL_OUT` |
//! | TCX links | `tcx/ingress`, `tcx/egress` | `tcx` |
//! | clsact filters | `clsact/ingress`, `clsact/egress` | `clsact` |
//! | cgroup programs | `cgroup_skb/egress`, `cgroup_skb/ingress`, `cgroup/sock_create`, `sock_ops` | `cgroup_skb`, `sock_ops` |
//! | perf events | `perf_event/cpu_clock` | `perf_event` |
//! | map types | `ringbuf`, `sk_storage`, `task_storage` | `sk_storage` |
//! | run-time statistics | `bpf_stats` (`BPF_ENABLE_STATS`, and the sysctl read as off) | `bpf_stats` |
//!
//! A prefix matches at the start of a name: `kprobe` also denies
//! `kprobe_multi/…` (a kernel without kprobes has no kprobe-multi either);
//! `kprobe/` denies single kprobes only.

/// The environment variable.
pub const VAR: &str = "MAGNET_HOOKS_DENY";

/// Why `name` (a hook such as `tp_btf/kfree_skb`, or a map type such as
/// `sk_storage`) counts as refused by the kernel; None when it is not denied.
pub fn denied(name: &str) -> Option<String> {
    let list = std::env::var(VAR).ok()?;
    denied_by(&list, name)
}

/// [`denied`] with the list given.
pub fn denied_by(list: &str, name: &str) -> Option<String> {
    list.split(',')
        .map(str::trim)
        .any(|d| !d.is_empty() && name.starts_with(d))
        .then(|| format!("{name} denied by {VAR}={list}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_deny_kinds_and_single_hooks() {
        let l = "iter, fentry,tp_btf/kfree_skb,,sk_storage";
        assert!(denied_by(l, "iter/bpf_sk_storage_map").is_some());
        assert!(denied_by(l, "fentry/tcp_sendmsg").is_some());
        assert!(denied_by(l, "fexit/tcp_sendmsg").is_none());
        assert!(denied_by(l, "tp_btf/kfree_skb").is_some());
        assert!(denied_by(l, "tp_btf/sock_send_length").is_none());
        assert!(denied_by(l, "sk_storage").is_some());
        assert!(denied_by(l, "ringbuf").is_none());
        assert!(denied_by("", "iter/task").is_none());
        assert_eq!(
            denied_by("kprobe", "kprobe_multi/tcp_sendmsg").as_deref(),
            Some("kprobe_multi/tcp_sendmsg denied by MAGNET_HOOKS_DENY=kprobe")
        );
    }
}
