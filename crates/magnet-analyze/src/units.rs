//! How numbers are shown: `magnet analyze`'s text and `magnet report`'s tables
//! and plot axes use these functions (the report's script gets the same tables
//! as JSON, [`UNITS_JSON`]), so a latency reads "14.0us" / "1.250ms" and a rate
//! "21.47Gb/s" in both.

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
