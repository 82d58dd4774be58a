//! The interfaces' own counters (/proc/net/dev).

use std::collections::BTreeMap;
use std::path::Path;

/// Interfaces magnetd reports, at most (a host with more serves the first
/// ones by name).
pub const MAX_INTERFACES: usize = 256;

/// The interfaces' own counters from the text of /proc/net/dev (the
/// reading thread's network namespace): `name: rx_bytes rx_packets errs
/// drop fifo frame compressed multicast tx_bytes tx_packets …`. Lines that
/// do not parse are skipped.
pub fn interfaces(text: &str) -> BTreeMap<String, magnet_client::InterfaceCounters> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        let name = name.trim();
        let v: Vec<u64> = rest
            .split_whitespace()
            .map_while(|w| w.parse().ok())
            .collect();
        if name.is_empty() || name.contains(' ') || v.len() < 10 {
            continue;
        }
        out.insert(
            name.to_string(),
            magnet_client::InterfaceCounters {
                rx_bytes: v[0],
                rx_packets: v[1],
                tx_bytes: v[8],
                tx_packets: v[9],
            },
        );
    }
    while out.len() > MAX_INTERFACES {
        out.pop_last();
    }
    out
}

/// Whether `path` is magnetd's cgroup root (for messages).
pub fn describe_root(path: &Path) -> String {
    format!("cgroup v2 root {}", path.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_net_dev_is_read() {
        let text = "Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo: 1000      10    0    0    0     0          0         0     1000      10    0    0    0     0       0          0
  eth0: 123456789 4242 0 0 0 0 0 7 98765 321 0 0 0 0 0 0
 bad: 1 2 3
";
        let m = interfaces(text);
        assert_eq!(m.len(), 2, "{m:?}");
        assert_eq!(m["lo"].rx_packets, 10);
        assert_eq!(
            m["eth0"],
            magnet_client::InterfaceCounters {
                rx_bytes: 123456789,
                rx_packets: 4242,
                tx_bytes: 98765,
                tx_packets: 321
            }
        );
        assert!(interfaces("").is_empty());
    }
}
