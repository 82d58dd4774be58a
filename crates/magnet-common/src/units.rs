//! Quantities as magnet reads and shows them: one definition for every crate.
//!
//! Input, parsed one way in every command. Durations: a number (fractions
//! allowed) and a unit — `ns`, `us`/`µs`, `ms`, `s`, `m`/`min`, `h`, `d`; a
//! bare number is seconds (`2` = 2 s). Sizes: a number and an optional binary
//! unit — `k`/`K`/`KB`/`KiB` = 1024, `m`/`M`/`MB`/`MiB` = 1024²,
//! `g`/`G`/`GB`/`GiB` = 1024³; a bare number is bytes (`B` also). Instants:
//! RFC 3339 in UTC or with an offset, or `@SECONDS` since the Unix epoch,
//! without a date library. Errors say what was given and what is accepted.
//!
//! Output: [`format_duration`] spells a duration exactly and shortest (`10ms`,
//! what a setting echoes back); [`dur`], [`bps`] and [`bytes`] show measured
//! values rounded to a scale — `magnet analyze`'s text and `magnet report`'s
//! tables and plot axes both use them (the report's script gets the same
//! tables as JSON, [`units_json`]), so a latency reads "14.0us" / "1.250ms"
//! and a rate "21.47Gb/s" in both.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

// ---- input: durations and sizes ----------------------------------------

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

// ---- durations spelled exactly, and wall-clock instants ----------------

/// `100us`, `1ms`, `10ms`, `1.5s`: the shortest exact spelling.
pub fn format_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    for (unit, per) in [
        ("d", 86_400_000_000_000u128),
        ("h", 3_600_000_000_000),
        ("m", 60_000_000_000),
        ("s", 1_000_000_000),
        ("ms", 1_000_000),
        ("us", 1_000),
    ] {
        if ns >= per && ns % per == 0 {
            return format!("{}{unit}", ns / per);
        }
    }
    format!("{ns}ns")
}

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Parses an RFC 3339 instant: `2026-11-22T10:00:00Z`, `2026-11-22T10:00:00.250Z`,
/// `2026-11-22T11:00:00+01:00`; or `@SECONDS` since the Unix epoch.
pub fn parse_instant(s: &str) -> Result<SystemTime, String> {
    let bad = || format!("'{s}': not a time (use 2026-11-22T10:00:00Z or @UNIXSECONDS)");
    if let Some(secs) = s.strip_prefix('@') {
        let f: f64 = secs.parse().map_err(|_| bad())?;
        // Nanoseconds since 1970 in a u64: up to the year 2554, not clamped.
        if !(0.0..u64::MAX as f64 / 1e9).contains(&f) {
            return Err(format!(
                "'{s}': out of range (@0 to @{} seconds since 1970)",
                u64::MAX / 1_000_000_000
            ));
        }
        return Ok(UNIX_EPOCH + Duration::from_nanos((f * 1e9).round() as u64));
    }
    let b = s.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't' | b' ')
        || b[13] != b':'
        || b[16] != b':'
    {
        return Err(bad());
    }
    let num =
        |r: std::ops::Range<usize>| s.get(r).and_then(|x| x.parse::<i64>().ok()).ok_or_else(bad);
    let (y, mo, d, h, mi, se) = (
        num(0..4)?,
        num(5..7)?,
        num(8..10)?,
        num(11..13)?,
        num(14..16)?,
        num(17..19)?,
    );
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return Err(bad());
    }
    let mut rest = &s[19..];
    let mut frac_ns = 0i64;
    if let Some(r) = rest.strip_prefix('.') {
        let digits = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
        if digits == 0 {
            return Err(bad());
        }
        let mut f = r[..digits.min(9)].to_string();
        while f.len() < 9 {
            f.push('0');
        }
        frac_ns = f.parse().map_err(|_| bad())?;
        rest = &r[digits..];
    }
    let offset_s = match rest {
        "Z" | "z" => 0,
        o if o.len() == 6 && (o.starts_with('+') || o.starts_with('-')) && &o[3..4] == ":" => {
            let sign = if o.starts_with('-') { -1 } else { 1 };
            sign * (num(rest_range(s, 1, 3))? * 3600 + num(rest_range(s, 4, 6))? * 60)
        }
        _ => return Err(bad()),
    };
    let secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - offset_s;
    if secs < 0 {
        return Err(bad());
    }
    Ok(UNIX_EPOCH + Duration::new(secs as u64, frac_ns as u32))
}

fn rest_range(s: &str, a: usize, b: usize) -> std::ops::Range<usize> {
    let base = s.len() - 6;
    base + a..base + b
}

/// `2026-11-22T10:00:00.123456789Z`.
pub fn format_instant_ns(ns: u64) -> String {
    let secs = (ns / 1_000_000_000) as i64;
    let (y, m, d) = civil_from_days(secs.div_euclid(86400));
    let sod = secs.rem_euclid(86400);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:09}Z",
        sod / 3600,
        sod / 60 % 60,
        sod % 60,
        ns % 1_000_000_000
    )
}

/// `20261122T100000.123Z`: sortable, no colons (safe in file names).
pub fn compact_instant_ns(ns: u64) -> String {
    let full = format_instant_ns(ns);
    let (date, time) = full.split_at(10);
    format!(
        "{}T{}.{}Z",
        date.replace('-', ""),
        time[1..9].replace(':', ""),
        &time[10..13]
    )
}

/// Inverse of [`compact_instant_ns`] (to the millisecond).
pub fn parse_compact_instant(s: &str) -> Option<u64> {
    if s.len() != 20 || &s[8..9] != "T" || &s[15..16] != "." || !s.ends_with('Z') {
        return None;
    }
    let iso = format!(
        "{}-{}-{}T{}:{}:{}.{}Z",
        &s[0..4],
        &s[4..6],
        &s[6..8],
        &s[9..11],
        &s[11..13],
        &s[13..15],
        &s[16..19]
    );
    parse_instant(&iso).ok().map(unix_ns)
}

/// A wall-clock instant as Unix nanoseconds (0 before the epoch).
pub fn unix_ns(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Now, as Unix nanoseconds.
pub fn now_ns() -> u64 {
    unix_ns(SystemTime::now())
}

// ---- measured values on a scale (analyze, report) ----------------------

/// A scale: values at or above `at` are divided by `div` and shown with
/// `decimals` decimals and the unit's name.
#[derive(Clone, Copy, Debug)]
pub struct Scale {
    pub at: f64,
    pub div: f64,
    pub unit: &'static str,
    pub decimals: usize,
}

const fn sc(at: f64, div: f64, unit: &'static str, decimals: usize) -> Scale {
    Scale {
        at,
        div,
        unit,
        decimals,
    }
}

/// Nanoseconds.
pub const DURATION: [Scale; 4] = [
    sc(1e9, 1e9, "s", 3),
    sc(1e6, 1e6, "ms", 3),
    sc(1e3, 1e3, "us", 1),
    sc(f64::NEG_INFINITY, 1.0, "ns", 0),
];

/// Bits per second.
pub const RATE: [Scale; 4] = [
    sc(1e9, 1e9, "Gb/s", 2),
    sc(1e6, 1e6, "Mb/s", 2),
    sc(1e3, 1e3, "kb/s", 1),
    sc(f64::NEG_INFINITY, 1.0, "b/s", 0),
];

/// Bytes: k is 1024 bytes, M 1024². Plain byte counts below 100 000 (one
/// decimal when not whole).
pub const BYTES: [Scale; 3] = [
    sc(10.0 * 1048576.0, 1048576.0, "M", 1),
    sc(100_000.0, 1024.0, "k", 1),
    sc(f64::NEG_INFINITY, 1.0, "", 0),
];

/// `v` on `scales`; the last scale shows a fraction with one decimal.
pub fn scaled(v: f64, scales: &[Scale]) -> String {
    let last = scales.len() - 1;
    let (i, s) = scales
        .iter()
        .enumerate()
        .find(|(_, s)| v >= s.at)
        .unwrap_or((last, &scales[last]));
    let d = if i == last && s.div == 1.0 && v.fract() != 0.0 && s.unit.is_empty() {
        1
    } else {
        s.decimals
    };
    format!("{:.*}{}", d, v / s.div, s.unit)
}

/// Bytes, readably.
pub fn bytes(v: f64) -> String {
    scaled(v, &BYTES)
}

/// Nanoseconds, readably.
pub fn dur(ns: f64) -> String {
    scaled(ns, &DURATION)
}

/// Bits per second, readably; `-` when unknown.
pub fn bps(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| scaled(v, &RATE))
}

/// The three tables as one JSON object (`{"duration": [[at, div, unit,
/// decimals], …], "rate": …, "bytes": …}`, `null` for −∞) for the report's script.
pub fn units_json() -> String {
    let t = |s: &[Scale]| {
        s.iter()
            .map(|s| {
                let at = if s.at.is_finite() {
                    s.at.to_string()
                } else {
                    "null".into()
                };
                format!("[{at},{},\"{}\",{}]", s.div, s.unit, s.decimals)
            })
            .collect::<Vec<_>>()
            .join(",")
    };
    format!(
        "{{\"duration\":[{}],\"rate\":[{}],\"bytes\":[{}]}}",
        t(&DURATION),
        t(&RATE),
        t(&BYTES)
    )
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

    #[test]
    fn durations_spelled_exactly() {
        assert_eq!(parse_duration("1m").unwrap(), Duration::from_secs(60));
        assert!(parse_duration("10 parsecs").is_err());
        assert_eq!(format_duration(Duration::from_micros(100)), "100us");
        assert_eq!(format_duration(Duration::from_millis(10)), "10ms");
        assert_eq!(format_duration(Duration::from_secs(120)), "2m");
    }

    #[test]
    fn instants_round_trip() {
        let t = parse_instant("2026-11-22T10:00:00Z").unwrap();
        assert_eq!(unix_ns(t), 1_795_341_600_000_000_000);
        let t2 = parse_instant("2026-11-22T11:00:00.25+01:00").unwrap();
        assert_eq!(unix_ns(t2), 1_795_341_600_250_000_000);
        assert_eq!(
            format_instant_ns(1_795_341_600_250_000_000),
            "2026-11-22T10:00:00.250000000Z"
        );
        assert_eq!(
            compact_instant_ns(1_795_341_600_250_000_000),
            "20261122T100000.250Z"
        );
        assert_eq!(
            parse_compact_instant("20261122T100000.250Z"),
            Some(1_795_341_600_250_000_000)
        );
        assert!(parse_instant("yesterday").is_err());
        assert_eq!(unix_ns(parse_instant("@1.5").unwrap()), 1_500_000_000);
    }

    #[test]
    fn as_analyze_showed_them() {
        assert_eq!(dur(14_000.0), "14.0us");
        assert_eq!(dur(11_600_000.0), "11.600ms");
        assert_eq!(dur(999.0), "999ns");
        assert_eq!(dur(2.5e9), "2.500s");
        assert_eq!(bps(Some(21_465.4e6)), "21.47Gb/s");
        assert_eq!(bps(Some(800.0)), "800b/s");
        assert_eq!(bps(Some(1500.0)), "1.5kb/s");
        assert_eq!(bps(None), "-");
        assert_eq!(bytes(1448.0), "1448");
        assert_eq!(bytes(1448.5), "1448.5");
        assert_eq!(bytes(102_400.0), "100.0k");
        assert_eq!(bytes(20.0 * 1048576.0), "20.0M");
        assert_eq!(bytes(0.0), "0");
        assert_eq!(
            units_json(),
            "{\"duration\":[[1000000000,1000000000,\"s\",3],[1000000,1000000,\"ms\",3],\
             [1000,1000,\"us\",1],[null,1,\"ns\",0]],\"rate\":[[1000000000,1000000000,\"Gb/s\",2],\
             [1000000,1000000,\"Mb/s\",2],[1000,1000,\"kb/s\",1],[null,1,\"b/s\",0]],\
             \"bytes\":[[10485760,1048576,\"M\",1],[100000,1024,\"k\",1],[null,1,\"\",0]]}"
        );
    }
}
