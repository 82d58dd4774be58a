//! Durations and sizes as users type them, parsed one way in every command.
//!
//! Durations: a number (fractions allowed) and a unit — `ns`, `us`/`µs`,
//! `ms`, `s`, `m`/`min`, `h`, `d`; a bare number is seconds (`2` = 2 s).
//! Sizes: a number and an optional binary unit — `k`/`K`/`KB`/`KiB` = 1024,
//! `m`/`M`/`MB`/`MiB` = 1024², `g`/`G`/`GB`/`GiB` = 1024³; a bare number is
//! bytes (`B` also). Errors say what was given and what is accepted.

use std::time::Duration;

fn split(s: &str) -> (&str, &str) {
    let t = s.trim();
    let at = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    t.split_at(at)
}

/// `100us`, `1ms`, `1.5s`, `2m`, `3d`, `2` (seconds).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let (num, unit) = split(s);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a duration (examples: 100us, 1ms, 1.5s, 2m, 3d)"))?;
    let ns_per = match unit.trim() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "" | "s" => 1e9,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        "d" => 86400e9,
        other => {
            return Err(format!(
                "unknown unit '{other}' in duration '{s}' (use ns, us, ms, s, m, h, d)"
            ))
        }
    };
    let ns = n * ns_per;
    if !ns.is_finite() || ns < 0.0 || ns > u64::MAX as f64 {
        return Err(format!("'{s}' is out of range for a duration"));
    }
    Ok(Duration::from_nanos(ns.round() as u64))
}

/// `4096`, `64k`, `32MiB`, `1G`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let (num, unit) = split(s);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a size (examples: 4096, 64k, 32MiB, 1G)"))?;
    let mult = match unit.trim() {
        "" | "B" | "b" => 1u64,
        "k" | "K" | "KB" | "KiB" | "kB" => 1 << 10,
        "m" | "M" | "MB" | "MiB" => 1 << 20,
        "g" | "G" | "GB" | "GiB" => 1 << 30,
        other => {
            return Err(format!(
                "unknown unit '{other}' in size '{s}' (use k, M, G; binary multiples)"
            ))
        }
    };
    let v = n * mult as f64;
    // 2^64 (u64::MAX as f64) is already too large: `as u64` would clamp it.
    if !v.is_finite() || v < 0.0 || v >= u64::MAX as f64 || v.fract() != 0.0 {
        return Err(format!("'{s}' is not a whole number of bytes"));
    }
    Ok(v as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("100us").unwrap(), Duration::from_micros(100));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        assert_eq!(
            parse_duration("3d").unwrap(),
            Duration::from_secs(3 * 86400)
        );
        assert_eq!(parse_duration("2min").unwrap(), Duration::from_secs(120));
        for bad in ["", "ten", "3 fortnights", "-1s", "1e400s"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("64k").unwrap(), 65536);
        assert_eq!(parse_size("64KiB").unwrap(), 65536);
        assert_eq!(parse_size("32M").unwrap(), 32 << 20);
        assert_eq!(parse_size("1.5G").unwrap(), 3 << 29);
        for bad in ["", "x", "1.5", "10 parsecs", "-1k"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }
}
