//! Durations (`100us`, `1ms`, `2s`, `1m`, `3d`) and UTC instants
//! (`2026-11-22T10:00:00Z`, with optional fraction and ±HH:MM offset) without
//! a date library.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::Error;

/// Parses `100us`, `1ms`, `10ms`, `1.5s`, `30s`, `1m`, `2h`, `3d`, `250ns`:
/// the one duration syntax of every magnet command (`magnet_common::units`).
pub fn parse_duration(s: &str) -> Result<Duration, Error> {
    magnet_common::units::parse_duration(s).map_err(Error::Config)
}

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
pub fn parse_instant(s: &str) -> Result<SystemTime, Error> {
    let bad = || {
        Error::Config(format!(
            "'{s}': not a time (use 2026-11-22T10:00:00Z or @UNIXSECONDS)"
        ))
    };
    if let Some(secs) = s.strip_prefix('@') {
        let f: f64 = secs.parse().map_err(|_| bad())?;
        // Nanoseconds since 1970 in a u64: up to the year 2554, not clamped.
        if !(0.0..u64::MAX as f64 / 1e9).contains(&f) {
            return Err(Error::Config(format!(
                "'{s}': out of range (@0 to @{} seconds since 1970)",
                u64::MAX / 1_000_000_000
            )));
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

pub fn now_ns() -> u64 {
    unix_ns(SystemTime::now())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("100us").unwrap(), Duration::from_micros(100));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(
            parse_duration("3d").unwrap(),
            Duration::from_secs(3 * 86400)
        );
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
}
