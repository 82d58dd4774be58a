//! The blind spot of the sandbox VM the tests run in (docs/analyze.md, "A blind
//! spot of this VM"): frames the kernel handles in softirq on the threads of
//! pid 1 are seen by no BPF program.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Counts, through an ftrace instance of its own, the network tracepoints
/// (`net_dev_start_xmit`, `netif_receive_skb`) on this test's interfaces
/// that the kernel runs on the threads of pid 1 meanwhile. On this sandbox VM that is the agent
/// (`process_api`), on whose threads no BPF program runs: frames handled in
/// softirq there are invisible to every BPF tool. `None`: tracefs could not
/// be used, nothing is known.
pub struct BlindSpot {
    dir: Option<PathBuf>,
}

impl BlindSpot {
    /// `iface`: one of the test's interfaces; all of them share its name up to
    /// the last '-' (magnet-testkit names them so).
    pub fn watch(iface: &str) -> BlindSpot {
        let prefix = iface.rsplit_once('-').map_or(iface, |(p, _)| p);
        let root = Path::new("/sys/kernel/tracing");
        if !root.join("instances").exists() {
            let _ = Command::new("mount")
                .args(["-t", "tracefs", "nodev", "/sys/kernel/tracing"])
                .status();
        }
        let dir = root.join("instances").join(format!(
            "magnet-blind-{}-{}",
            std::process::id(),
            crate::netns::next_id()
        ));
        // Only pid 1's threads: the buffer then holds all of their events
        // however busy the rest of the machine is.
        let ok = std::fs::create_dir(&dir).is_ok()
            && std::fs::write(dir.join("set_event_pid"), agent_threads().join(" ")).is_ok()
            && ["net_dev_start_xmit", "netif_receive_skb"].iter().all(|e| {
                let ev = dir.join(format!("events/net/{e}"));
                std::fs::write(ev.join("filter"), format!("name ~ \"{prefix}-*\"")).is_ok()
                    && std::fs::write(ev.join("enable"), "1").is_ok()
            });
        if !ok {
            let _ = std::fs::remove_dir(&dir);
            return BlindSpot { dir: None };
        }
        BlindSpot { dir: Some(dir) }
    }

    /// How many of those tracepoints ran on pid 1's threads (0: a clean run).
    pub fn finish(self) -> Option<usize> {
        let dir = self.dir?;
        let trace = std::fs::read_to_string(dir.join("trace")).unwrap_or_default();
        for e in ["net_dev_start_xmit", "netif_receive_skb"] {
            let _ = std::fs::write(dir.join(format!("events/net/{e}/enable")), "0");
        }
        let _ = std::fs::remove_dir(&dir);
        let agent = agent_threads();
        // Lines read "  COMM-TID  [CPU] FLAGS TIME: EVENT: ...".
        Some(
            trace
                .lines()
                .filter(|l| !l.starts_with('#'))
                .filter_map(|l| l.split_whitespace().next())
                .filter_map(|task| task.rsplit_once('-').map(|(_, tid)| tid.to_string()))
                .filter(|tid| agent.contains(tid))
                .count(),
        )
    }
}

/// The thread ids of pid 1.
fn agent_threads() -> Vec<String> {
    std::fs::read_dir("/proc/1/task")
        .map(|d| {
            d.flatten()
                .map(|t| t.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}
