//! `magnet report`: one self-contained HTML page from an [`Analysis`].
//!
//! The page works offline: no fetches, no external scripts or styles. Tables
//! are rendered here (every number also sits in a `data-value` attribute with
//! its exact value from the analysis, under a `data-key` naming it, so tests and
//! scripts can compare the page with `magnet analyze --json`). The plots are
//! drawn in the browser by uPlot (vendored, MIT, inlined: `vendor/uplot`) from
//! compact arrays made here ([`plots`]): per plotted connection, bytes per time
//! bin of every layer on one time axis, unit sizes per bin, unit-size and gap
//! distributions and latencies on log axes with percentiles marked, TCP state;
//! context switches per CPU; LOST regions shaded. docs/analyze.md describes the
//! page. Numbers are shown by `magnet_common::units`, as `magnet analyze` shows
//! them (the page's script gets the same unit tables).

use std::fmt::Write;

use magnet_analyze::{Analysis, Connection, LayerRow, Stats};
use magnet_common::units::{bps, bytes, dur, units_json};

mod plots;
pub use plots::{plotted, PLOTTED};

pub struct ReportOptions {
    /// Shown as the page title (usually the trace's file name).
    pub title: String,
    /// Connection to plot; default: the one that moved the most bytes.
    pub sock: Option<u64>,
}

const STYLE: &str = "
body { font: 14px system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; } h3 { font-size: 1em; }
table { border-collapse: collapse; margin: .4em 0 1em; }
td, th { border: 1px solid #ddd; padding: 2px 6px; text-align: right; }
th { background: #f4f4f4; } td.l, th.l { text-align: left; }
.plotbox { margin: 4px 0 10px; } .pair { display: flex; gap: 16px; flex-wrap: wrap; }
.note { color: #666; font-size: 12px; } .lostrow td { background: #fde; }
section.conn { border-top: 2px solid #ccd; margin-top: 1.5em; }
ul.dists { font-size: 12px; color: #444; margin: 0 0 1em; }
.ptitle { font-size: 13px; font-weight: 600; margin: 6px 0 0 4px; }
.uplot .u-legend { font-size: 12px; }
";

/// Index of the connection to plot.
pub fn chosen(a: &Analysis, sock: Option<u64>) -> Option<usize> {
    if let Some(s) = sock {
        return a.connections.iter().position(|c| c.cookie == s);
    }
    let volume = |c: &Connection| {
        let dev: u64 = c
            .modulation
            .iter()
            .filter(|r| r.layer == "dev")
            .map(|r| r.bytes)
            .sum();
        (c.app.sent_bytes + c.app.recv_bytes, dev)
    };
    (0..a.connections.len()).max_by_key(|&i| (volume(&a.connections[i]), std::cmp::Reverse(i)))
}

/// Text for the page: control characters escaped by the rule every magnet
/// output shares (`magnet_common::text`), then HTML's own characters.
fn esc(s: &str) -> String {
    magnet_common::text::escape(s)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A table cell showing `shown`, carrying the exact value.
fn cell(out: &mut String, key: &str, value: impl std::fmt::Display, shown: &str) {
    let _ = write!(
        out,
        "<td data-key=\"{}\" data-value=\"{value}\">{}</td>",
        esc(key),
        esc(shown)
    );
}

fn stats_cells(out: &mut String, key: &str, s: Option<&Stats>, show: fn(f64) -> String) {
    match s {
        Some(s) => {
            cell(out, &format!("{key}.mean"), s.mean, &show(s.mean));
            cell(
                out,
                &format!("{key}.median"),
                s.median,
                &show(s.median as f64),
            );
            cell(out, &format!("{key}.p99"), s.p99, &show(s.p99 as f64));
        }
        None => out.push_str("<td>-</td><td>-</td><td>-</td>"),
    }
}

fn modulation(out: &mut String, c: &Connection) {
    out.push_str(
        "<table class=\"modulation\"><tr><th class=l>layer</th><th class=l>dir</th><th>units</th><th class=l>unit</th><th>bytes</th>\
         <th>size mean</th><th>median</th><th>p99</th><th>interval mean</th><th>median</th><th>p99</th>\
         <th>cv</th><th>rate</th><th>lost nearby</th></tr>",
    );
    for r in &c.modulation {
        let LayerRow { layer, dir, .. } = r;
        let k = format!("{}.{layer}.{dir}", c.cookie);
        let class = if r.lost_in_span > 0 {
            " class=lostrow"
        } else {
            ""
        };
        let _ = write!(
            out,
            "<tr{class}><td class=l>{layer}</td><td class=l>{dir}</td>"
        );
        cell(out, &format!("{k}.units"), r.units, &r.units.to_string());
        let _ = write!(
            out,
            "<td class=l title=\"{}\">{}</td>",
            esc(&r.hook),
            esc(&r.unit)
        );
        cell(out, &format!("{k}.bytes"), r.bytes, &r.bytes.to_string());
        stats_cells(out, &format!("{k}.size"), Some(&r.size), bytes);
        stats_cells(
            out,
            &format!("{k}.interval_ns"),
            r.interval_ns.as_ref(),
            dur,
        );
        match &r.interval_ns {
            Some(i) => cell(
                out,
                &format!("{k}.interval_ns.cv"),
                i.cv,
                &format!("{:.2}", i.cv),
            ),
            None => out.push_str("<td>-</td>"),
        }
        match r.rate_bps {
            Some(v) => cell(out, &format!("{k}.rate_bps"), v, &bps(Some(v))),
            None => out.push_str("<td>-</td>"),
        }
        cell(
            out,
            &format!("{k}.lost_in_span"),
            r.lost_in_span,
            &r.lost_in_span.to_string(),
        );
        out.push_str("</tr>");
    }
    out.push_str("</table>");
    if c.modulation.iter().any(|r| r.lost_in_span > 0) {
        out.push_str(
            "<p class=note>Shaded rows: a LOST region overlaps their time span; \
             they may be missing units (the count is of events of any socket lost there).</p>",
        );
    }
    if c.modulation.iter().any(|r| r.unit == "rcv unit") {
        out.push_str(
            "<p class=note>rcv unit: one tcp_probe call; TCP may have merged several queued \
             segments into it (record the ip layer to count wire segments).</p>",
        );
    }
    for k in &c.coalescing {
        if let Some(p) = k.packets_per_call {
            let unit = c.row("tcp", &k.dir).map_or("segment", |r| r.unit.as_str());
            let _ = write!(
                out,
                "<p class=note>{}: {} app calls → {} TCP {unit}s, {} IP packets, {} device packets \
                 (<span data-key=\"{}.{}.packets_per_call\" data-value=\"{p}\">{p:.2}</span> packets per call)</p>",
                k.dir, k.app_calls, k.tcp_segments, k.ip_packets, k.dev_packets, c.cookie, k.dir
            );
        }
    }
}

fn latency(out: &mut String, c: &Connection) {
    let l = &c.latency;
    out.push_str("<table class=latency><tr><th class=l></th><th>count</th><th>mean</th><th>median</th><th>p99</th><th>max</th><th>unmatched</th></tr>");
    for (name, key, s, un) in [
        ("send → device", "send", &l.send, Some(l.send_unmatched)),
        ("device → recv", "recv", &l.recv, Some(l.recv_unmatched)),
        (
            "waiting for a CPU before recv",
            "recv_cpu_wait",
            &l.recv_cpu_wait,
            None,
        ),
    ] {
        let Some(s) = s else { continue };
        let k = format!("{}.latency.{key}", c.cookie);
        let _ = write!(out, "<tr><td class=l>{name}</td>");
        cell(out, &format!("{k}.count"), s.count, &s.count.to_string());
        stats_cells(out, &k, Some(s), dur);
        cell(out, &format!("{k}.max"), s.max, &dur(s.max as f64));
        match un {
            Some(u) => {
                let _ = write!(out, "<td>{u}</td>");
            }
            None => out.push_str("<td></td>"),
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
}

/// The time plots' span, seconds from the recording's start: where the chosen
/// connection's traffic is (its first to last unit of any layer), with 2 % of
/// margin each side; the whole recording when there is none.
pub fn time_span(a: &Analysis, pick: Option<usize>) -> (f64, f64) {
    let whole = (0.0, a.trace.duration_s.max(1e-6));
    let Some(c) = pick.map(|i| &a.connections[i]) else {
        return whole;
    };
    match (c.active_from_s, c.active_to_s) {
        (Some(from), Some(to)) => {
            let pad = ((to - from) * 0.02).max(1e-6);
            ((from - pad).max(0.0), to + pad)
        }
        _ => whole,
    }
}

/// The page.
pub fn render(a: &Analysis, o: &ReportOptions) -> String {
    let pick = chosen(a, o.sock);
    let span = time_span(a, pick);
    let shown = plotted(a, o.sock);
    let mut h = String::with_capacity(1 << 16);
    let _ = write!(
        h,
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>magnet report: {t}</title>\
         <style>{}</style><style>{STYLE}</style></head><body data-chosen=\"{}\" data-from=\"{}\" data-to=\"{}\"><h1>magnet report: {t}</h1>",
        include_str!("../vendor/uplot/uPlot.min.css"),
        pick.map_or(-1, |i| i as i64),
        span.0,
        span.1,
        t = esc(&o.title)
    );
    trace_section(&mut h, a);
    connections_table(&mut h, a, &shown, o.sock.is_some());
    for &i in &shown {
        conn_section(&mut h, &a.connections[i]);
    }
    modulation_sections(&mut h, a, &shown);
    scheduler_section(&mut h, a);
    scripts(&mut h, a, &shown);
    h
}

/// What was recorded, where, and what of it was lost or damaged.
fn trace_section(h: &mut String, a: &Analysis) {
    let t = &a.trace;
    let _ = write!(
        h,
        "<p>host <b>{}</b>, kernel {}, {} CPUs; recorded for <span data-key=\"trace.duration_s\" data-value=\"{}\">{:.3} s</span>, {} records; <span data-key=\"trace.lost_events\" data-value=\"{}\">{} events lost</span>{}</p>",
        esc(&t.host),
        esc(&t.kernel),
        t.cpus,
        t.duration_s,
        t.duration_s,
        t.records,
        t.lost_events,
        t.lost_events,
        if t.complete { "" } else { "; <b>the trace has no END block (cut short)</b>" }
    );
    if !t.lost.is_empty() {
        h.push_str("<h2>Lost events</h2><p class=note>Shaded in the time plots.</p><table><tr><th>cpu</th><th>events</th><th>from (s)</th><th>to (s)</th></tr>");
        for l in &t.lost {
            let _ = write!(
                h,
                "<tr class=lostrow><td>{}</td><td>{}</td><td>{:.6}</td><td>{:.6}</td></tr>",
                l.cpu, l.count, l.from_s, l.to_s
            );
        }
        h.push_str("</table>");
    }
    for d in &t.damage {
        let _ = write!(h, "<p class=note>damage: {}</p>", esc(d));
    }
}

/// One row per connection; and which of them are plotted, when not all.
/// `sock_first`: `--sock` put one connection first.
fn connections_table(h: &mut String, a: &Analysis, shown: &[usize], sock_first: bool) {
    h.push_str("<h2>Connections</h2><table class=connections><tr><th>socket</th><th class=l>proto</th><th class=l>local</th><th class=l>remote</th><th class=l>process</th><th>sent B</th><th>send calls</th><th>received B</th><th>recv calls</th><th>from (s)</th><th>to (s)</th></tr>");
    for c in &a.connections {
        let k = c.cookie;
        let _ = write!(
            h,
            "<tr><td><a href=\"#sock-{k}\">{k}</a></td><td class=l>{}</td><td class=l>{}</td><td class=l>{}</td><td class=l>{} {}</td>",
            esc(&c.protocol),
            esc(c.local.as_deref().unwrap_or("?")),
            esc(c.remote.as_deref().unwrap_or("?")),
            c.pids.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(","),
            esc(&c.comm)
        );
        for (f, v) in [
            ("sent_bytes", c.app.sent_bytes),
            ("sent_calls", c.app.sent_calls),
            ("recv_bytes", c.app.recv_bytes),
            ("recv_calls", c.app.recv_calls),
        ] {
            cell(h, &format!("{k}.app.{f}"), v, &v.to_string());
        }
        let _ = write!(h, "<td>{:.3}</td><td>{:.3}</td></tr>", c.first_s, c.last_s);
    }
    h.push_str("</table>");
    if a.connections.len() > shown.len() && !shown.is_empty() {
        let _ = write!(
            h,
            "<p class=note>Plots below for the {} connection{} that moved the most bytes{}; \
             <code>magnet report --sock COOKIE</code> plots another one first.</p>",
            shown.len(),
            if shown.len() == 1 { "" } else { "s" },
            if sock_first { " (--sock first)" } else { "" }
        );
    }
}

/// Per connection: the modulation table, TCP's send buffer and window, and
/// the latencies of connections not plotted above.
fn modulation_sections(h: &mut String, a: &Analysis, shown: &[usize]) {
    h.push_str("<h2>Modulation per connection and layer (MAGNeT's Table III)</h2>\
        <p class=note>Sizes in bytes (k = 1024 B, M = 1024² B), times as <code>magnet analyze</code> shows them.</p>");
    for c in &a.connections {
        let _ = write!(
            h,
            "<h3 id=\"sock-{}\">socket {} {} {} → {}</h3>",
            c.cookie,
            c.cookie,
            esc(&c.protocol),
            esc(c.local.as_deref().unwrap_or("?")),
            esc(c.remote.as_deref().unwrap_or("?"))
        );
        modulation(h, c);
        if let Some(t) = &c.tcp {
            let _ = write!(
                h,
                "<p class=note>TCP: send buffer (written, not acked) max <span data-key=\"{k}.tcp.sndbuf_max\" data-value=\"{}\">{} B</span>, \
                 mean <span data-key=\"{k}.tcp.sndbuf_mean\" data-value=\"{}\">{} B</span>; cwnd {}–{} segments; {}</p>",
                t.sndbuf_max,
                bytes(t.sndbuf_max as f64),
                t.sndbuf_mean,
                bytes(t.sndbuf_mean.round()),
                t.cwnd_min,
                t.cwnd_max,
                esc(&t.retrans_text()),
                k = c.cookie
            );
        }
        if !shown.iter().any(|&i| a.connections[i].cookie == c.cookie)
            && (c.latency.send.is_some() || c.latency.recv.is_some())
        {
            latency(h, c);
        }
    }
}

/// The scheduler's context switches and per-task table.
fn scheduler_section(h: &mut String, a: &Analysis) {
    let s = &a.sched;
    if s.switches > 0 {
        let _ = write!(
            h,
            "<h2>Scheduler</h2><p>{} context switches</p><div id=sched class=plotbox></div>",
            s.switches
        );
        h.push_str("<table class=tasks><tr><th>tid</th><th>tgid</th><th class=l>comm</th><th>on CPU</th><th>switched in</th><th>wake-ups</th><th>run-queue wait mean</th><th>median</th><th>p99</th></tr>");
        for t in &s.tasks {
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}</td><td class=l>{}</td><td>{}</td><td>{}</td><td>{}</td>",
                t.tid,
                t.tgid,
                esc(&t.comm),
                dur(t.on_cpu_ns as f64),
                t.switches_in,
                t.wakeups
            );
            stats_cells(
                h,
                &format!("task.{}.runq_wait", t.tid),
                t.runq_wait.as_ref(),
                dur,
            );
            h.push_str("</tr>");
        }
        h.push_str("</table>");
    }
}

/// The analysis and the plots' data as JSON for scripts that read the
/// page, and the plotting scripts.
fn scripts(h: &mut String, a: &Analysis, shown: &[usize]) {
    h.push_str("<pre id=selfcheck hidden></pre>");
    // The analysis without its plot series (the plots have their own compact
    // arrays below), for scripts that read the page.
    let mut lean = a.clone();
    for c in &mut lean.connections {
        c.series = None;
    }
    let json = script_safe(&serde_json::to_string(&lean).unwrap_or_else(|_| "null".into()));
    let plots = script_safe(&plots::plots(a, shown).to_string());
    let _ = writeln!(
        h,
        "<script id=analysis type=\"application/json\">{json}</script>\
         <script id=plots type=\"application/json\">{plots}</script>\
         <script id=units type=\"application/json\">{}</script>\
         <script>{}</script><script>{}</script></body></html>",
        units_json(),
        include_str!("../vendor/uplot/uPlot.iife.min.js"),
        include_str!("plot.js")
    );
}

/// JSON that cannot close its script element early.
fn script_safe(json: &str) -> String {
    json.replace("</", "<\\/")
}

/// One plotted connection: its plots (drawn by the script into the empty
/// boxes named here) and what the numbers under them mean.
fn conn_section(h: &mut String, c: &Connection) {
    let k = c.cookie;
    let _ = write!(
        h,
        "<section class=conn id=\"plots-{k}\" data-cookie=\"{k}\"><h2>Socket {k}: {} {} → {} <span class=note>{}</span></h2>",
        esc(&c.protocol),
        esc(c.local.as_deref().unwrap_or("?")),
        esc(c.remote.as_deref().unwrap_or("?")),
        esc(&c.comm)
    );
    let Some(series) = &c.series else {
        h.push_str("<p class=note>No plot series (analysed without them).</p></section>");
        return;
    };
    let units: u64 = c.modulation.iter().map(|r| r.units).sum();
    let span = match (c.active_from_s, c.active_to_s) {
        (Some(f), Some(t)) => t - f,
        _ => 0.0,
    };
    if units < 2 || span <= 0.0 {
        // Nothing to draw over time: say what there is.
        h.push_str("<p>");
        for r in &c.modulation {
            let _ = write!(
                h,
                "{} {}: {} {}{} of {} B at {:.6} s. ",
                r.layer,
                r.dir,
                r.units,
                esc(&r.unit),
                if r.units == 1 { "" } else { "s" },
                bytes(r.size.max as f64),
                r.first_s
            );
        }
        h.push_str("Too few units in time for plots.</p>");
    } else {
        let dirs: Vec<&str> = ["out", "in"]
            .into_iter()
            .filter(|d| c.modulation.iter().any(|r| r.dir == *d))
            .collect();
        h.push_str("<h3>Bytes over time, every layer</h3><p class=note>Bytes each layer handled per time bin, \
            shown as a rate; all layers share the time axis, so a burst of sends and the packets it became line up. \
            Drag to zoom (all time plots of this socket follow), double-click to reset.</p>");
        for d in &dirs {
            let _ = write!(h, "<div class=plotbox id=\"rate-{k}-{d}\"></div>");
        }
        h.push_str("<h3>Unit sizes over time</h3><p class=note>Per time bin, the smallest and the largest unit of each layer \
            (shaded between); log scale.</p>");
        for d in &dirs {
            let _ = write!(h, "<div class=plotbox id=\"size-{k}-{d}\"></div>");
        }
        h.push_str("<h3>Unit sizes and gaps between units</h3><p class=note>Histograms on log axes (10 bins per \
            power of ten; count axis log scale); dashed line: median, dotted: p99.</p>");
        for d in &dirs {
            let _ = write!(
                h,
                "<div class=pair><div class=plotbox id=\"sizes-{k}-{d}\"></div><div class=plotbox id=\"gaps-{k}-{d}\"></div></div>"
            );
            dist_notes(h, c, d, series);
        }
    }
    if c.latency.send.is_some() || c.latency.recv.is_some() {
        h.push_str("<h3>Latency through the stack</h3>");
        latency(h, c);
        let _ = write!(h, "<div class=plotbox id=\"lat-{k}\"></div>");
    }
    if !series.tcp.is_empty() && span > 0.0 {
        let _ = write!(
            h,
            "<h3>TCP state (--tcp-state snapshots)</h3><p class=note>{} snapshots{}; where more fall in one pixel \
             column, its smallest and largest value are drawn.</p>",
            c.tcp.as_ref().map_or(0, |t| t.samples),
            if series.tcp.len() as u64 != c.tcp.as_ref().map_or(0, |t| t.samples) {
                format!(" ({} kept for plots: --max-points)", series.tcp.len())
            } else {
                String::new()
            }
        );
        for p in ["buf", "cwnd", "rtt", "wnd"] {
            let _ = write!(h, "<div class=plotbox id=\"tcp-{p}-{k}\"></div>");
        }
    }
    h.push_str("</section>");
}

/// Under the distribution plots: each layer's count and percentiles in words
/// (and a layer whose units all have one size or one gap, which a histogram
/// would only show as one bar).
fn dist_notes(h: &mut String, c: &Connection, dir: &str, s: &magnet_analyze::ConnSeries) {
    h.push_str("<ul class=dists>");
    for r in c.modulation.iter().filter(|r| r.dir == dir) {
        let zeros = s
            .marks
            .iter()
            .find(|m| m.layer == r.layer && m.dir == r.dir)
            .map_or(0, |m| m.interval_hist.zeros);
        let one = |st: &Stats, f: fn(f64) -> String, unit: &str| {
            if st.min == st.max {
                format!("all {}{unit}", f(st.min as f64))
            } else {
                format!(
                    "median {}{unit}, p99 {}{unit}, max {}{unit}",
                    f(st.median as f64),
                    f(st.p99 as f64),
                    f(st.max as f64)
                )
            }
        };
        let _ = write!(
            h,
            "<li><b>{} {}</b>: {} {}{}; size {}",
            r.layer,
            r.dir,
            r.units,
            esc(&r.unit),
            if r.units == 1 { "" } else { "s" },
            one(&r.size, bytes, " B")
        );
        if let Some(i) = &r.interval_ns {
            let _ = write!(h, "; gap {}", one(i, dur, ""));
            if zeros > 0 {
                let _ = write!(h, " ({zeros} gaps of 0 ns, not on the log axis)");
            }
        }
        h.push_str("</li>");
    }
    h.push_str("</ul>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use magnet_analyze::{Analysis, Sched, TraceSummary};
    use serde_json::json;

    #[test]
    fn control_characters_never_reach_the_page_raw() {
        let hostile = "\x1b]0;pwned\x07\x1b[31m\r\n\u{9b}";
        let a = Analysis {
            trace: TraceSummary {
                host: hostile.into(),
                kernel: hostile.into(),
                damage: vec![hostile.into()],
                ..Default::default()
            },
            connections: vec![],
            sched: Sched::default(),
        };
        let html = render(
            &a,
            &ReportOptions {
                title: hostile.into(),
                sock: None,
            },
        );
        let raw: Vec<u8> = html
            .bytes()
            .filter(|&b| b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t'))
            .collect();
        assert!(raw.is_empty(), "raw control bytes {raw:?}");
        assert!(html.contains("<b>\\x1b]0;pwned\\x07\\x1b[31m\\x0d\\x0a\\u{9b}</b>"));
    }

    #[test]
    fn escapes_and_embeds() {
        let a = Analysis {
            trace: TraceSummary {
                host: "<h&>".into(),
                ..Default::default()
            },
            connections: vec![],
            sched: Sched::default(),
        };
        let html = render(
            &a,
            &ReportOptions {
                title: "x</script>".into(),
                sock: None,
            },
        );
        assert!(html.contains("&lt;h&amp;&gt;"));
        assert!(!html.contains("x</script>"));
        assert!(
            !html.contains("http://")
                || html.matches("http://").all(|_| true) && !html.contains("src=\"http")
        );
        assert!(html.contains("data-chosen=\"-1\""));
        // The embedded JSON cannot close its script element early.
        let start = html.find("<script id=analysis").unwrap();
        let end = html[start..].find("</script>").unwrap();
        assert!(html[start..start + end].contains("\"host\":\"<h&>\""));
    }

    /// A connection whose traffic sits in the last 10 ms
    /// of a 92 ms recording is plotted over its own 10 ms, not over 0–92 ms.
    #[test]
    fn plots_span_the_connections_traffic() {
        use magnet_analyze::{analyze, Options};
        use magnet_trace::emit::{synthetic_trace, Emitter};
        use magnet_trace::{kind, Footer, TraceReader};
        const T0: u64 = 1_000_000_000;
        const MS: u64 = 1_000_000;
        let e = Emitter::builtin();
        let mut recs = vec![e
            .record(kind::SOCK, T0)
            .set("cookie", 3)
            .set("protocol", 6)
            .into_bytes()];
        for i in 0..11 {
            recs.push(
                e.record(kind::APP_SEND, T0 + 80 * MS + i * MS)
                    .set("cookie", 3)
                    .set("ret", 1000)
                    .into_bytes(),
            );
        }
        let footer = Footer {
            end_mono_ns: T0 + 92 * MS,
            ..Footer::default()
        };
        let bytes = synthetic_trace(T0, &recs, Some(&footer));
        let a = analyze(
            &mut TraceReader::new(&bytes[..]).unwrap(),
            &Options {
                series: true,
                ..Options::default()
            },
        );
        assert_eq!(a.trace.duration_s, 0.092);
        let (from, to) = time_span(&a, Some(0));
        assert!(
            (from - 0.0798).abs() < 1e-9 && (to - 0.0902).abs() < 1e-9,
            "{from} {to}"
        );
        let html = render(
            &a,
            &ReportOptions {
                title: "t".into(),
                sock: None,
            },
        );
        assert!(html.contains(&format!("data-from=\"{from}\" data-to=\"{to}\"")));
        // The plots' time grid: 100 µs bins over the connection's 10 ms, and
        // every byte of its 11 sends in them.
        let p = plots::plots(&a, &[0]);
        let c = &p["conns"][0];
        assert_eq!(
            (&c["t0_ns"], &c["w_ns"], &c["n"]),
            (&json!(79_800_000), &json!(100_000), &json!(104))
        );
        let app = &c["layers"][0];
        assert_eq!(app["layer"], "app");
        let bytes: Vec<u64> = serde_json::from_value(app["bytes"].clone()).unwrap();
        assert_eq!(bytes.iter().sum::<u64>(), 11_000);
        assert_eq!(bytes.iter().filter(|&&b| b == 1000).count(), 11);
        assert!(html.contains("<script id=plots type=\"application/json\">"));
    }
}
