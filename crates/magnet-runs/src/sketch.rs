//! The 128-bit connection sketch: each packet sets one bit chosen by a hash of
//! its flow (both directions of a flow set the same bit), and the number of
//! active connections in a bucket is estimated from the fraction of bits still
//! clear (linear counting, Whang et al. 1990):
//!
//! ```text
//! n̂ = −m · ln(z / m)      m = 128 bits, z = bits still zero
//! ```
//!
//! Two flows that hash to the same bit count once, so the estimate is exact
//! while no two flows collide and drifts low by about one per collision;
//! linear counting then corrects for the expected number of collisions. With
//! m = 128 the estimate saturates at m·ln m ≈ 621 (one bit left) and is
//! reported as saturated when every bit is set. `docs/sample.md` tabulates the
//! error; [`estimate_error_table`] computes it.

use std::net::IpAddr;

/// Bits in the sketch.
pub const SKETCH_BITS: u32 = 128;

/// murmur3's 64-bit finaliser, as in `src/bpf/sample.bpf.c`.
pub fn mix64(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^= h >> 33;
    h
}

fn words(a: IpAddr) -> [u32; 4] {
    let o = match a {
        IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
        IpAddr::V6(v6) => v6.octets(),
    };
    std::array::from_fn(|i| u32::from_be_bytes(o[i * 4..i * 4 + 4].try_into().expect("4 bytes")))
}

/// The sketch bit (0..128) the BPF program sets for packets of this flow, in
/// either direction. `seed` is the run's `sketch_seed`.
pub fn flow_bit(proto: u8, a: IpAddr, aport: u16, b: IpAddr, bport: u16, seed: u64) -> u32 {
    let (wa, wb) = (words(a), words(b));
    let swap = match wa.iter().zip(&wb).find(|(x, y)| x != y) {
        Some((x, y)) => x > y,
        None => aport > bport,
    };
    let (lo, hi, plo, phi) = if swap {
        (wb, wa, bport, aport)
    } else {
        (wa, wb, aport, bport)
    };
    let mut h = mix64(seed ^ u64::from(proto));
    for w in lo.iter().chain(&hi) {
        h = mix64(h ^ u64::from(*w));
    }
    h = mix64(h ^ ((u64::from(plo) << 16) | u64::from(phi)));
    (h & 127) as u32
}

/// Bits set in a sketch.
pub fn ones(sketch: [u64; 2]) -> u32 {
    sketch[0].count_ones() + sketch[1].count_ones()
}

/// The linear-counting estimate of distinct flows for `set` bits out of 128.
/// Saturated sketches (all bits set) return m·ln m, the largest finite value.
pub fn estimate_from_ones(set: u32) -> f64 {
    let m = f64::from(SKETCH_BITS);
    let zeros = f64::from(SKETCH_BITS - set.min(SKETCH_BITS)).max(1.0);
    -m * (zeros / m).ln()
}

/// The estimate for a sketch as a whole number of connections: rounded down,
/// so that a sketch without collisions reads exactly its number of flows (up
/// to 15 flows; rounding to nearest would read 12 distinct flows as 13).
pub fn estimate(sketch: [u64; 2]) -> u64 {
    whole(estimate_from_ones(ones(sketch)))
}

fn whole(est: f64) -> u64 {
    // A hair of tolerance so that exact values are not floored one too low.
    (est + 1e-9).floor() as u64
}

/// Whether every bit is set (the estimate is then only a lower bound).
pub fn saturated(sketch: [u64; 2]) -> bool {
    ones(sketch) == SKETCH_BITS
}

/// For `k` distinct flows hashed uniformly into 128 bits: the probability that
/// the rounded estimate is exactly `k`, within ±1, and the expected value and
/// standard deviation of the estimate. Exact (occupancy distribution), not
/// simulated.
pub fn estimate_error_table(k: u32) -> ErrorRow {
    let m = SKETCH_BITS as usize;
    // dist[j] = P(j distinct bits set) after placing the flows one by one.
    let mut dist = vec![0f64; m + 1];
    dist[0] = 1.0;
    for _ in 0..k {
        let mut next = vec![0f64; m + 1];
        for (j, &p) in dist.iter().enumerate() {
            if p == 0.0 {
                continue;
            }
            next[j] += p * j as f64 / m as f64;
            if j < m {
                next[j + 1] += p * (m - j) as f64 / m as f64;
            }
        }
        dist = next;
    }
    let (mut exact, mut within1, mut mean, mut sq) = (0.0, 0.0, 0.0, 0.0);
    for (j, &p) in dist.iter().enumerate() {
        let est = estimate_from_ones(j as u32);
        let r = whole(est) as i64;
        if r == i64::from(k) {
            exact += p;
        }
        if (r - i64::from(k)).abs() <= 1 {
            within1 += p;
        }
        mean += p * est;
        sq += p * est * est;
    }
    ErrorRow {
        k,
        p_exact: exact,
        p_within_1: within1,
        mean,
        sd: (sq - mean * mean).max(0.0).sqrt(),
    }
}

/// One row of [`estimate_error_table`].
#[derive(Clone, Copy, Debug)]
pub struct ErrorRow {
    pub k: u32,
    pub p_exact: f64,
    pub p_within_1: f64,
    pub mean: f64,
    pub sd: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_is_exact_without_collisions_for_small_counts() {
        for k in 0..=15u32 {
            assert_eq!(whole(estimate_from_ones(k)) as u32, k, "k={k}");
        }
        // 50 distinct bits read as 63 flows: the estimate corrects for collisions.
        assert_eq!(whole(estimate_from_ones(50)), 63);
        assert_eq!(whole(estimate_from_ones(128)), 621);
        assert!(saturated([u64::MAX, u64::MAX]));
        assert_eq!(estimate([0b1011, 1 << 63]), 4);
    }

    #[test]
    fn flow_bit_is_symmetric_and_seeded() {
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        for port in [1u16, 80, 40000, 65535] {
            assert_eq!(
                flow_bit(6, a, port, b, 5201, 0),
                flow_bit(6, b, 5201, a, port, 0)
            );
        }
        let bits: std::collections::HashSet<u32> = (0..200u16)
            .map(|p| flow_bit(6, a, 30000 + p, b, 80, 7))
            .collect();
        assert!(
            bits.len() > 100,
            "200 flows should spread over most of 128 bits, got {}",
            bits.len()
        );
        // Pinned values: the BPF program must compute the same function.
        assert_eq!(mix64(0), 0);
        assert_eq!(mix64(1), 0xb456_bcfc_34c2_cb2c);
    }

    #[test]
    fn error_table_matches_linear_counting_theory() {
        let r1 = estimate_error_table(1);
        assert!((r1.p_exact - 1.0).abs() < 1e-12);
        let r12 = estimate_error_table(12);
        assert!(r12.p_within_1 > 0.85 && r12.p_within_1 < 0.99, "{r12:?}");
        assert!((r12.mean - 12.0).abs() < 0.7, "{r12:?}");
        let r50 = estimate_error_table(50);
        // Theory: sd ≈ sqrt(m(e^t − t − 1)), t = n/m.
        let t = 50.0 / 128.0;
        let sd = (128.0 * (f64::exp(t) - t - 1.0)).sqrt();
        assert!((r50.sd - sd).abs() < 0.5, "{r50:?} vs {sd}");
    }
}
