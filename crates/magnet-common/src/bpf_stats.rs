//! How a run's BPF run-time statistics were sampled. The kernel's statistics
//! are host-wide (two clock reads per run of every BPF program while on), so
//! `record` and `sample` can hold them on for their first seconds and then in
//! short windows, and estimate the rest (`--bpf-stats sampled`,
//! magnet_kernel::cost::Windows), or hold them on for the first seconds only
//! and scale the rest by the records written (`record --bpf-stats first`).

use serde::{Deserialize, Serialize};

/// The kernel's run-time statistics were on for part of the run only
/// (`--bpf-stats sampled` of `record` and `sample`, or `record`'s default
/// `--bpf-stats first`, in a run longer than its first, fully measured
/// seconds): the rest was measured in windows and scaled, or (no windows,
/// `full_records` > 0) scaled by the records written after the first part.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sampled {
    /// On from the start for this long, ns.
    pub full_ns: u64,
    /// Then this many windows, on for `windows_ns` in all, over the next
    /// `sampled_span_ns`.
    pub windows: u64,
    pub windows_ns: u64,
    pub sampled_span_ns: u64,
    /// The whole run's BPF time, ns: every program's `estimated_ns` summed.
    /// The per-event (per-packet) figure and the share are of this.
    pub estimated_ns: u64,
    /// `record --bpf-stats first`: records written while the statistics were
    /// on; the rest of the run was estimated at the first part's time per
    /// record (0: windows, or no records in the first part). Absent in
    /// traces written before it existed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub full_records: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Sampled {
    /// How the statistics were held, in words: "the kernel's statistics were
    /// on for the first 2.0 s, then in 16 windows, 10.4% of the next 3.1 s".
    pub fn how(&self) -> String {
        if self.windows == 0 && self.full_records > 0 {
            return format!(
                "the kernel's statistics were on for the first {:.1} s ({} records), the next {:.1} s estimated from each program's records",
                self.full_ns as f64 / 1e9,
                self.full_records,
                self.sampled_span_ns as f64 / 1e9,
            );
        }
        let pct = if self.sampled_span_ns == 0 {
            0.0
        } else {
            self.windows_ns as f64 * 100.0 / self.sampled_span_ns as f64
        };
        format!(
            "the kernel's statistics were on for the first {:.1} s, then in {} window{}, {pct:.1}% of the next {:.1} s",
            self.full_ns as f64 / 1e9,
            self.windows,
            if self.windows == 1 { "" } else { "s" },
            self.sampled_span_ns as f64 / 1e9,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn how_says_the_full_part_and_the_windows() {
        let s = Sampled {
            full_ns: 2_000_000_000,
            windows: 1,
            windows_ns: 20_000_000,
            sampled_span_ns: 200_000_000,
            estimated_ns: 0,
            full_records: 0,
        };
        assert_eq!(
            s.how(),
            "the kernel's statistics were on for the first 2.0 s, then in 1 window, 10.0% of the next 0.2 s"
        );
        assert!(Sampled::default()
            .how()
            .contains("then in 0 windows, 0.0% of the next 0.0 s"));
        let first = Sampled {
            full_ns: 2_500_000_000,
            sampled_span_ns: 7_000_000_000,
            full_records: 12_000,
            ..Sampled::default()
        };
        assert_eq!(
            first.how(),
            "the kernel's statistics were on for the first 2.5 s (12000 records), the next 7.0 s estimated from each program's records"
        );
    }

    #[test]
    fn full_records_is_left_out_when_zero_and_read_when_absent() {
        let s = Sampled::default();
        let json = serde_json::to_string(&s).unwrap();
        assert!(!json.contains("full_records"), "{json}");
        let back: Sampled = serde_json::from_str(&json).unwrap();
        assert_eq!(back, s);
    }
}
