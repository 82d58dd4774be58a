//! Offline pictures of runs: SVG (one panel per series, a step line per
//! bucket, shared time axis) and HTML pages that embed them with the run's
//! description. No scripts, no network: the files open anywhere.

use std::fmt::Write;
use std::time::Duration;

use crate::merge::Merged;
use crate::run::{Metric, Run};
use magnet_common::units::{format_duration, format_instant_ns};

const WIDTH: f64 = 1000.0;
const PANEL: f64 = 110.0;
const LEFT: f64 = 150.0;
const GAP: f64 = 26.0;

/// A series to draw.
pub struct Panel<'a> {
    pub title: String,
    pub values: &'a [u64],
    pub color: &'static str,
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `12.3 M`-style short numbers for axes.
pub fn short_number(v: u64) -> String {
    let f = v as f64;
    match v {
        0..=9_999 => v.to_string(),
        10_000..=9_999_999 => format!("{:.1}k", f / 1e3),
        10_000_000..=9_999_999_999 => format!("{:.1}M", f / 1e6),
        _ => format!("{:.1}G", f / 1e9),
    }
}

/// Panels stacked over one time axis of `len` buckets of `interval_ns`.
pub fn svg(title: &str, interval_ns: u64, len: usize, panels: &[Panel<'_>]) -> String {
    let height = 40.0 + panels.len() as f64 * (PANEL + GAP) + 30.0;
    let plot_w = WIDTH - LEFT - 20.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="10" y="20" font-size="14" font-weight="bold">{}</text>"#,
        esc(title)
    );
    let bucket_w = plot_w / len.max(1) as f64;
    for (p, panel) in panels.iter().enumerate() {
        let top = 40.0 + p as f64 * (PANEL + GAP);
        let base = top + PANEL;
        let max = panel.values.iter().copied().max().unwrap_or(0);
        let total: u64 = panel.values.iter().sum();
        let _ = writeln!(
            s,
            r##"<text x="10" y="{}">{}</text><text x="10" y="{}" fill="#666">max {} / total {}</text>"##,
            top + 14.0,
            esc(&panel.title),
            top + 28.0,
            short_number(max),
            short_number(total)
        );
        let _ = writeln!(
            s,
            r##"<rect x="{LEFT}" y="{top}" width="{plot_w}" height="{PANEL}" fill="none" stroke="#ccc"/>"##
        );
        if max == 0 {
            continue;
        }
        let mut d = format!("M{LEFT:.1},{base:.1}");
        for (i, &v) in panel.values.iter().enumerate() {
            let y = base - v as f64 / max as f64 * (PANEL - 4.0);
            let x0 = LEFT + i as f64 * bucket_w;
            let _ = write!(d, " V{y:.1} H{:.1}", x0 + bucket_w);
        }
        let _ = write!(d, " V{base:.1} Z");
        let _ = writeln!(
            s,
            r#"<path d="{d}" fill="{}" fill-opacity="0.35" stroke="{}" stroke-width="0.8"/>"#,
            panel.color, panel.color
        );
    }
    // Time axis: five ticks.
    let axis_y = 40.0 + panels.len() as f64 * (PANEL + GAP) - GAP + 14.0;
    for t in 0..=4 {
        let b = len * t / 4;
        let x = LEFT + b as f64 * bucket_w;
        let label = format_duration(Duration::from_nanos(interval_ns * b as u64));
        let label = if b == 0 { "0".to_string() } else { label };
        let _ = writeln!(
            s,
            r#"<text x="{x:.1}" y="{axis_y:.1}" text-anchor="middle">{label}</text>"#
        );
    }
    let _ = writeln!(
        s,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#666">{} buckets of {}</text>"##,
        LEFT + plot_w / 2.0,
        axis_y + 16.0,
        len,
        format_duration(Duration::from_nanos(interval_ns))
    );
    s.push_str("</svg>\n");
    s
}

const COLORS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
];

/// The standard panels of one run: bytes in and out, connections, CE, retransmits.
pub fn run_svg(run: &Run) -> String {
    let panels = vec![
        Panel {
            title: "ingress bytes".into(),
            values: run.get(Metric::InBytes),
            color: COLORS[0],
        },
        Panel {
            title: "egress bytes".into(),
            values: run.get(Metric::OutBytes),
            color: COLORS[1],
        },
        Panel {
            title: "connections (est.)".into(),
            values: &run.connections,
            color: COLORS[2],
        },
        Panel {
            title: "ingress CE bytes".into(),
            values: run.get(Metric::InCeBytes),
            color: COLORS[3],
        },
        Panel {
            title: "in rxmit bytes".into(),
            values: run.get(Metric::InRxmitBytes),
            color: COLORS[4],
        },
        Panel {
            title: "out rxmit bytes".into(),
            values: run.get(Metric::OutRxmitBytes),
            color: COLORS[5],
        },
    ];
    svg(&run_title(run), run.meta.interval_ns, run.len(), &panels)
}

fn run_title(run: &Run) -> String {
    format!(
        "{} {} — {} x {} from {}",
        run.meta.host,
        run.meta.iface,
        run.len(),
        format_duration(Duration::from_nanos(run.meta.interval_ns)),
        format_instant_ns(run.meta.start_realtime_ns)
    )
}

fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{}</title>\
         <style>body{{font-family:sans-serif;margin:1em}} table{{border-collapse:collapse}} \
         td,th{{padding:2px 8px;border-bottom:1px solid #ddd;text-align:right}}</style></head>\n<body>\n{body}</body></html>\n",
        esc(title)
    )
}

/// An HTML page: the run's description, totals, and its SVG.
pub fn run_html(run: &Run) -> String {
    let mut body = format!("<h1>{}</h1>\n<table>\n", esc(&run_title(run)));
    for m in Metric::ALL {
        let _ = writeln!(
            body,
            "<tr><th>{}</th><td>{}</td></tr>",
            m.label(),
            run.total(m)
        );
    }
    let _ = writeln!(
        body,
        "<tr><th>peak connections</th><td>{}</td></tr>\n</table>",
        run.connections.iter().max().copied().unwrap_or(0)
    );
    body.push_str(&run_svg(run));
    page(&run_title(run), &body)
}

/// One view of synchronised hosts: each host's ingress and egress on the same
/// time axis, and the rack's total ingress (incast shows as the receivers'
/// ingress peaking where several senders' egress does).
pub fn merged_svg(m: &Merged) -> String {
    let aligned: Vec<(String, Vec<u64>, Vec<u64>)> = m
        .hosts
        .iter()
        .map(|h| {
            (
                h.name.clone(),
                h.aligned(Metric::InBytes, m.len),
                h.aligned(Metric::OutBytes, m.len),
            )
        })
        .collect();
    let total_in = m.total(Metric::InBytes);
    let mut panels = Vec::new();
    for (i, (name, inb, outb)) in aligned.iter().enumerate() {
        panels.push(Panel {
            title: format!("{name} ingress"),
            values: inb,
            color: COLORS[0],
        });
        panels.push(Panel {
            title: format!("{name} egress"),
            values: outb,
            color: COLORS[1 + i % 5],
        });
    }
    panels.push(Panel {
        title: "all hosts ingress".into(),
        values: &total_in,
        color: COLORS[0],
    });
    let title = format!(
        "{} hosts from {}",
        m.hosts.len(),
        format_instant_ns(m.start_realtime_ns)
    );
    svg(&title, m.interval_ns, m.len, &panels)
}

pub fn merged_html(m: &Merged) -> String {
    let mut body = String::from("<h1>Synchronised runs</h1>\n<table><tr><th>host</th><th>offset (buckets)</th><th>skew (ns)</th><th>in bytes</th><th>out bytes</th></tr>\n");
    for h in &m.hosts {
        let _ = writeln!(
            body,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&h.name),
            h.offset,
            h.residual_ns,
            h.run.total(Metric::InBytes),
            h.run.total(Metric::OutBytes)
        );
    }
    body.push_str("</table>\n");
    body.push_str(&merged_svg(m));
    page("magnet sample merge", &body)
}

/// A one-line sparkline of `values` squeezed into `width` columns (each column
/// the maximum of its buckets).
pub fn sparkline(values: &[u64], width: usize) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    if values.is_empty() {
        return String::new();
    }
    let cols = width.min(values.len()).max(1);
    let per = values.len().div_ceil(cols);
    let col_max: Vec<u64> = values
        .chunks(per)
        .map(|c| c.iter().copied().max().unwrap_or(0))
        .collect();
    let max = col_max.iter().copied().max().unwrap_or(0);
    col_max
        .iter()
        .map(|&v| {
            if v == 0 {
                ' '
            } else {
                BARS[((v as f64 / max as f64) * 7.0).round() as usize]
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::RunMeta;

    #[test]
    fn svg_and_html_draw_every_series() {
        let mut r = Run::zeroed(RunMeta::synthetic("h<1>", 1_000_000, 10), 10);
        r.get_mut(Metric::InBytes)[3] = 1500;
        let s = run_svg(&r);
        assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"));
        assert!(s.contains("h&lt;1&gt;"));
        assert_eq!(
            s.matches("<path").count(),
            1,
            "only the non-zero series gets a path"
        );
        let h = run_html(&r);
        assert!(h.contains("<td>1500</td>"));
        assert_eq!(sparkline(&[0, 1, 8, 0], 4), " ▂█ ");
        assert_eq!(sparkline(&[0, 0, 8, 0, 0, 1], 3), " █▂");
        assert_eq!(short_number(12_345_678), "12.3M");
    }
}
