//! The plots' data, made here so the page stays small at millions of events:
//! time series re-binned onto one grid per connection (a few hundred bins over
//! its span, every unit counted), TCP samples reduced to the smallest and
//! largest value per pixel column, histograms as log-bin counts. Times go out
//! as integer nanoseconds from a stated origin; the script adds the origin.

use magnet_analyze::{Analysis, ConnSeries, Connection, LogHist, TcpSample, TimeBins};
use serde_json::{json, Value};

use crate::{chosen, time_span};

/// Most connections that get plots (the page lists every one in tables).
pub const PLOTTED: usize = 4;
/// Most bins of a connection's time axis.
const TIME_COLS: f64 = 200.0;
/// Pixel columns of a time plot for the TCP samples' min/max reduction.
const PX_COLS: usize = 1000;

/// Connections to plot: `sock` (else the busiest) first, then the busiest
/// others, at most [`PLOTTED`].
pub fn plotted(a: &Analysis, sock: Option<u64>) -> Vec<usize> {
    let Some(first) = chosen(a, sock) else {
        return Vec::new();
    };
    let volume = |c: &Connection| {
        let dev: u64 = c.modulation.iter().map(|r| r.bytes).sum();
        (c.app.sent_bytes + c.app.recv_bytes, dev)
    };
    let mut rest: Vec<usize> = (0..a.connections.len()).filter(|&i| i != first).collect();
    rest.sort_by_key(|&i| (std::cmp::Reverse(volume(&a.connections[i])), i));
    let mut v = vec![first];
    v.extend(rest.into_iter().take(PLOTTED - 1));
    v
}

/// The width of a time bin: a 1-2-5 multiple of a power of ten (ns), so that
/// `span_s` holds at most about [`TIME_COLS`] of them, never finer than `floor_ns`.
pub fn bin_width_ns(span_s: f64, floor_ns: u64) -> u64 {
    let want = (span_s * 1e9 / TIME_COLS).max(1.0);
    let mut p = 1u64;
    loop {
        for m in [1, 2, 5] {
            let w = p.saturating_mul(m);
            if w as f64 >= want && w >= floor_ns {
                return w;
            }
        }
        if p > u64::MAX / 100 {
            return u64::MAX / 10;
        }
        p *= 10;
    }
}

/// One connection's time grid: bin 0 starts at `t0_ns` (ns since the
/// recording's start), `n` bins of `w_ns`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Grid {
    pub t0_ns: i64,
    pub w_ns: u64,
    pub n: usize,
}

impl Grid {
    pub fn over(from_s: f64, to_s: f64, floor_ns: u64) -> Grid {
        let w = bin_width_ns(to_s - from_s, floor_ns);
        let from = (from_s * 1e9).round() as i64;
        let t0 = from.div_euclid(w as i64) * w as i64;
        let to = (to_s * 1e9).round() as i64;
        let n = ((to - t0).max(1) as u64).div_ceil(w) as usize;
        Grid {
            t0_ns: t0,
            w_ns: w,
            n,
        }
    }

    fn index(&self, t_ns: f64) -> usize {
        (((t_ns - self.t0_ns as f64) / self.w_ns as f64)
            .floor()
            .max(0.0) as usize)
            .min(self.n - 1)
    }
}

/// A layer's fine bins summed onto `g`: each fine bin goes to the grid bin
/// holding its middle. (bytes, units, min, max) per grid bin.
pub fn rebin(b: &TimeBins, g: &Grid) -> (Vec<u64>, Vec<u64>, Vec<u32>, Vec<u32>) {
    let n = g.n;
    let (mut by, mut un, mut mn, mut mx) = (vec![0; n], vec![0; n], vec![0; n], vec![0; n]);
    for i in 0..b.bytes.len() {
        if b.units[i] == 0 {
            continue;
        }
        let mid = b.from_s * 1e9 + (i as f64 + 0.5) * b.width_ns as f64;
        let j = g.index(mid);
        mn[j] = if un[j] == 0 {
            b.min[i]
        } else {
            mn[j].min(b.min[i])
        };
        mx[j] = mx[j].max(b.max[i]);
        by[j] += b.bytes[i];
        un[j] += b.units[i];
    }
    (by, un, mn, mx)
}

fn hist(h: &LogHist) -> Value {
    json!({"k": h.per_decade, "bins": h.bins, "zeros": h.zeros})
}

fn stats(s: Option<&magnet_analyze::Stats>) -> Value {
    s.map_or(
        Value::Null,
        |s| json!({"n": s.count, "median": s.median, "p99": s.p99, "min": s.min, "max": s.max}),
    )
}

/// TCP samples over `[from_s, to_s]`: all of them when few, else per pixel
/// column the smallest and largest value of each field (at the column's first
/// and last sample time). Times in ns from `t0_ns`.
pub fn tcp_columns(tcp: &[TcpSample], from_s: f64, to_s: f64, t0_ns: i64) -> Value {
    type F = fn(&TcpSample) -> u32;
    const FIELDS: [(&str, F); 7] = [
        ("sndbuf", |s| s.sndbuf),
        ("inflight", |s| s.inflight),
        ("cwnd", |s| s.cwnd),
        ("retrans_out", |s| s.retrans_out),
        ("srtt_us", |s| s.srtt_us),
        ("snd_wnd", |s| s.snd_wnd),
        ("rcv_wnd", |s| s.rcv_wnd),
    ];
    // The state holds from one snapshot to the next: the last one before the
    // span starts it, the last one inside holds to its end.
    let before = tcp.iter().rposition(|s| s.t_s < from_s);
    let mut held: Vec<TcpSample> = Vec::new();
    if let Some(b) = before {
        held.push(TcpSample {
            t_s: from_s,
            ..tcp[b].clone()
        });
    }
    held.extend(
        tcp.iter()
            .filter(|s| s.t_s >= from_s && s.t_s <= to_s)
            .cloned(),
    );
    if let Some(l) = held.last().filter(|l| l.t_s < to_s) {
        held.push(TcpSample {
            t_s: to_s,
            ..l.clone()
        });
    }
    let inside: Vec<&TcpSample> = held.iter().collect();
    let rel = |t: f64| (t * 1e9).round() as i64 - t0_ns;
    let mut x: Vec<i64> = Vec::new();
    let mut cols: Vec<Vec<u32>> = vec![Vec::new(); FIELDS.len()];
    if inside.len() <= 2 * PX_COLS {
        for s in &inside {
            x.push(rel(s.t_s));
            for (c, (_, f)) in cols.iter_mut().zip(FIELDS) {
                c.push(f(s));
            }
        }
    } else {
        let w = (to_s - from_s) / PX_COLS as f64;
        let mut i = 0;
        while i < inside.len() {
            let col = ((inside[i].t_s - from_s) / w).floor();
            let mut j = i;
            while j < inside.len() && ((inside[j].t_s - from_s) / w).floor() == col {
                j += 1;
            }
            let group = &inside[i..j];
            x.push(rel(group[0].t_s));
            if group.len() > 1 {
                x.push(rel(group[group.len() - 1].t_s));
            }
            for (c, (_, f)) in cols.iter_mut().zip(FIELDS) {
                let lo = group.iter().map(|s| f(s)).min().unwrap_or(0);
                let hi = group.iter().map(|s| f(s)).max().unwrap_or(0);
                c.push(lo);
                if group.len() > 1 {
                    c.push(hi);
                }
            }
            i = j;
        }
    }
    let mut o = serde_json::Map::new();
    o.insert("x".into(), json!(x));
    for (c, (name, _)) in cols.into_iter().zip(FIELDS) {
        o.insert(name.into(), json!(c));
    }
    let real = tcp
        .iter()
        .filter(|s| s.t_s >= from_s && s.t_s <= to_s)
        .count();
    o.insert("samples".into(), json!(real));
    Value::Object(o)
}

fn conn_plots(a: &Analysis, i: usize, s: &ConnSeries) -> Value {
    let c = &a.connections[i];
    let (from, to) = time_span(a, Some(i));
    let floor = s.marks.iter().map(|m| m.bins.width_ns).max().unwrap_or(1);
    let g = Grid::over(from, to, floor);
    let mut layers = Vec::new();
    for m in &s.marks {
        let (by, un, mn, mx) = rebin(&m.bins, &g);
        let row = c.row(&m.layer, &m.dir);
        layers.push(json!({
            "layer": m.layer, "dir": m.dir,
            "unit": row.map(|r| r.unit.as_str()),
            "bytes": by, "units": un, "min": mn, "max": mx,
            "size": stats(row.map(|r| &r.size)),
            "gap": stats(row.and_then(|r| r.interval_ns.as_ref())),
            "size_hist": hist(&m.size_hist),
            "gap_hist": hist(&m.interval_hist),
        }));
    }
    let lat = |name: &str, st: Option<&magnet_analyze::Stats>, h: &LogHist| json!({"name": name, "stats": stats(st), "hist": hist(h)});
    json!({
        "cookie": c.cookie,
        "from_s": from, "to_s": to,
        "t0_ns": g.t0_ns, "w_ns": g.w_ns, "n": g.n,
        "layers": layers,
        "latency": [
            lat("send → device", c.latency.send.as_ref(), &s.send_latency_hist),
            lat("device → recv", c.latency.recv.as_ref(), &s.recv_latency_hist),
        ],
        "tcp": if s.tcp.is_empty() { Value::Null } else { tcp_columns(&s.tcp, from, to, g.t0_ns) },
    })
}

/// Everything the script draws, as one JSON value.
pub fn plots(a: &Analysis, shown: &[usize]) -> Value {
    let conns: Vec<Value> = shown
        .iter()
        .filter_map(|&i| {
            a.connections[i]
                .series
                .as_ref()
                .map(|s| conn_plots(a, i, s))
        })
        .collect();
    let sched = &a.sched;
    json!({
        "duration_s": a.trace.duration_s,
        "lost": a.trace.lost.iter().map(|l| json!([l.from_s, l.to_s, l.count, l.cpu])).collect::<Vec<_>>(),
        "conns": conns,
        "sched": {
            "w_ns": sched.bin_ns,
            "cpus": sched.cpus.iter().filter(|c| !c.bins.is_empty()).map(|c| json!({"cpu": c.cpu, "bins": c.bins})).collect::<Vec<_>>(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bin_widths_are_round_and_bounded() {
        assert_eq!(bin_width_ns(1.0, 1), 5_000_000);
        assert_eq!(bin_width_ns(0.092, 1), 500_000);
        assert_eq!(bin_width_ns(3e-6, 1000), 1000);
        assert_eq!(bin_width_ns(1e-9, 1), 1);
        assert_eq!(bin_width_ns(600.0, 1), 5_000_000_000);
        // Never finer than the layers' own bins.
        assert_eq!(bin_width_ns(1.0, 8_192_000), 10_000_000);
    }

    #[test]
    fn rebinning_keeps_every_byte() {
        // Fine bins of 1 µs from 1.0000 s; grid of 5 µs bins from 0.999995 s.
        let b = TimeBins {
            from_s: 1.0,
            width_ns: 1000,
            bytes: vec![100, 0, 300, 0, 0, 0, 0, 50],
            units: vec![1, 0, 2, 0, 0, 0, 0, 1],
            min: vec![100, 0, 100, 0, 0, 0, 0, 50],
            max: vec![100, 0, 200, 0, 0, 0, 0, 50],
        };
        let g = Grid::over(0.999_995, 1.000_010, 5000);
        assert_eq!(
            g,
            Grid {
                t0_ns: 999_995_000,
                w_ns: 5000,
                n: 3
            }
        );
        let (by, un, mn, mx) = rebin(&b, &g);
        assert_eq!(by, vec![0, 400, 50]);
        assert_eq!(un, vec![0, 3, 1]);
        assert_eq!(mn, vec![0, 100, 50]);
        assert_eq!(mx, vec![0, 200, 50]);
    }

    #[test]
    fn tcp_samples_reduce_to_min_and_max_per_column() {
        let s = |t_s: f64, cwnd: u32| TcpSample {
            t_s,
            sndbuf: 0,
            inflight: 0,
            cwnd,
            ssthresh: 0,
            srtt_us: 0,
            snd_wnd: 0,
            rcv_wnd: 0,
            retrans_out: 0,
        };
        // 10 000 samples over 1 s: 10 per column of 1 ms; cwnd 1..=10 in each.
        let v: Vec<TcpSample> = (0..10_000)
            .map(|i| s(i as f64 * 1e-4 + 5e-5, (i % 10) as u32 + 1))
            .collect();
        let j = tcp_columns(&v, 0.0, 1.0, 0);
        assert_eq!(j["samples"], 10_000);
        let cwnd = j["cwnd"].as_array().unwrap();
        // 1000 columns of a minimum and a maximum, and the last value held to 1 s.
        assert_eq!(cwnd.len(), 2001);
        assert_eq!((&cwnd[0], &cwnd[1]), (&json!(1), &json!(10)));
        assert_eq!(j["x"][0], 50_000);
        assert_eq!(j["x"][1], 950_000);
        // Few samples: all of them, the last one held to the span's end, the
        // one before the span held from its start.
        let j = tcp_columns(&v[..5], 0.0, 1.0, -1000);
        assert_eq!(
            j["x"],
            json!([51_000, 151_000, 251_000, 351_000, 451_000, 1_000_001_000])
        );
        let j = tcp_columns(&v[..5], 0.0002, 0.0003, 0);
        assert_eq!(j["x"], json!([200_000, 250_000, 300_000]));
        assert_eq!(j["cwnd"], json!([2, 3, 3]));
    }
}
