//! The clock pair: BPF programs stamp events with CLOCK_MONOTONIC
//! (`bpf_ktime_get_ns`); reading it together with CLOCK_REALTIME once lets
//! every timestamp be turned into wall-clock time.

use nix::time::{clock_gettime, ClockId};

/// CLOCK_MONOTONIC and CLOCK_REALTIME read back to back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockPair {
    pub monotonic_ns: u64,
    pub realtime_ns: u64,
}

fn ns(id: ClockId) -> u64 {
    let t = clock_gettime(id).expect("clock_gettime of a clock every Linux has");
    t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64
}

/// CLOCK_MONOTONIC now, in nanoseconds (the BPF programs' clock).
pub fn monotonic_ns() -> u64 {
    ns(ClockId::CLOCK_MONOTONIC)
}

/// Reads monotonic on both sides of realtime and keeps the midpoint.
pub fn clock_pair() -> ClockPair {
    let m1 = ns(ClockId::CLOCK_MONOTONIC);
    let r = ns(ClockId::CLOCK_REALTIME);
    let m2 = ns(ClockId::CLOCK_MONOTONIC);
    ClockPair {
        monotonic_ns: m1 + (m2 - m1) / 2,
        realtime_ns: r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pair_is_read_back_to_back() {
        let a = monotonic_ns();
        let p = clock_pair();
        let b = monotonic_ns();
        assert!(a <= p.monotonic_ns && p.monotonic_ns <= b);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as i128;
        let mapped = p.realtime_ns as i128 + (monotonic_ns() as i128 - p.monotonic_ns as i128);
        assert!((mapped - now).abs() < 1_000_000_000);
    }
}
