// magnet report: the plots, drawn by uPlot (inlined above this script) from
// the compact arrays in <script id=plots>. No network. Numbers on axes use the
// unit tables of `magnet analyze` (<script id=units>). Drag across a time plot
// to zoom every time plot of its socket, double-click to reset.
//
// After drawing, the page writes a self-check of every plot's real geometry
// (from the uPlot instances) into <pre id=selfcheck>: how much of the x axis
// its data spans, whether an axis label overlaps tick labels, whether tick
// labels overlap each other, whether every axis names its unit.
"use strict";
(function () {
  const P = JSON.parse(document.getElementById("plots").textContent);
  const U = JSON.parse(document.getElementById("units").textContent);
  const COLOR = { app: "#1f77b4", tcp: "#d62728", ip: "#2ca02c", dev: "#9467bd" };
  const FONT = "12px sans-serif", LFONT = "bold 12px sans-serif";
  const plots = []; // [{u, id, kind}]
  const W = Math.max(600, Math.min(1300, (document.documentElement.clientWidth || 1300) - 60));

  // magnet_analyze::units::scaled, from the same tables.
  function scaled(v, table) {
    if (v == null || !isFinite(v)) return "";
    let i = table.findIndex((s) => s[0] == null || v >= s[0]);
    if (i < 0) i = table.length - 1;
    const [, div, unit, dec0] = table[i];
    const last = i == table.length - 1;
    const dec = last && div == 1 && unit == "" && v % 1 != 0 ? 1 : dec0;
    return (v / div).toFixed(dec) + (unit == "us" ? "µs" : unit);
  }
  const fmtDur = (ns) => scaled(ns, U.duration);
  const fmtRate = (v) => scaled(v, U.rate);
  const fmtBytes = (v) => scaled(v, U.bytes);
  const fmtCount = (v) => (v == null ? "" : Math.round(v).toLocaleString("en-US"));

  const ctx = document.createElement("canvas").getContext("2d");
  function textW(s, font) {
    ctx.font = font;
    return ctx.measureText(String(s)).width;
  }
  // A y axis whose width fits its widest tick label: the label never sits on them.
  function yAxis(label, fmt, more) {
    return Object.assign({
      label, font: FONT, labelFont: LFONT, labelSize: 18, gap: 5,
      values: (u, splits) => splits.map(fmt),
      filter: (u, splits) => splits,
      size: (u, values) => (values ? Math.ceil(10 + 5 + Math.max(0, ...values.map((v) => textW(v, FONT))) + 4) : 40),
    }, more || {});
  }
  function xAxis(label, fmt, more) {
    const a = { label, font: FONT, labelFont: LFONT, labelSize: 18, gap: 5, size: 34 };
    if (fmt) a.values = (u, splits) => splits.map(fmt);
    a.filter = (u, splits) => splits;
    return Object.assign(a, more || {});
  }
  // Seconds with as many decimals as the tick step needs; x ticks spaced by
  // the width of such a label.
  function secTicks(u, splits, axisIdx, space, incr) {
    // Decimals that show the step exactly (0.25 needs 2).
    let d = 0;
    while (d < 9 && Math.abs(incr * Math.pow(10, d) - Math.round(incr * Math.pow(10, d))) > 1e-6) d++;
    return splits.map((v) => v.toFixed(d));
  }
  function secSpace(u, axisIdx, min, max, dim) {
    const d = Math.max(0, Math.ceil(-Math.log10((max - min) / 10))) + 1;
    return textW((max.toFixed(d)), FONT) + 24;
  }
  // Integer steps only for counts.
  const INT_INCRS = [];
  for (let p = 1; p <= 1e15; p *= 10) INT_INCRS.push(p, 2 * p, 5 * p);
  // Byte steps that `bytes` shows round: plain below 100 000, then k (1024).
  const BYTE_INCRS = [];
  for (let p = 1; p <= 10000; p *= 10) BYTE_INCRS.push(p, 2 * p, 5 * p);
  for (let p = 100; p <= 1e12; p *= 10) BYTE_INCRS.push(1024 * p, 2048 * p, 5120 * p);
  // Byte ticks on log axes: powers of 4 (or 2 over a narrow range).
  function byteSplits(u, axisIdx, min, max) {
    const out = [];
    const base = max / min > 64 ? 4 : 2;
    for (let v = 1; v <= max * 1.0001; v *= base) if (v >= min * 0.9999) out.push(v);
    return out.length >= 2 ? out : [min, max];
  }
  function decadeSplits(u, axisIdx, min, max) {
    const out = [];
    for (let e = Math.floor(Math.log10(min)); e <= Math.ceil(Math.log10(max)); e++) {
      const v = Math.pow(10, e);
      if (v >= min * 0.9999 && v <= max * 1.0001) out.push(v);
    }
    if (out.length < 2) {
      for (const m of [2, 5]) for (let e = Math.floor(Math.log10(min)); e <= Math.ceil(Math.log10(max)); e++) {
        const v = m * Math.pow(10, e);
        if (v >= min * 0.9999 && v <= max * 1.0001) out.push(v);
      }
      out.sort((a, b) => a - b);
    }
    return out.length >= 2 ? out : [min, max];
  }

  function box(id, title) {
    const host = document.getElementById(id);
    if (!host) return null;
    const t = document.createElement("div");
    t.className = "ptitle";
    t.textContent = title;
    host.appendChild(t);
    return host;
  }
  function make(id, kind, title, opts, data, extra) {
    const host = box(id, title);
    if (!host) return null;
    const u = new uPlot(Object.assign({ width: W, height: 220, legend: { live: true } }, opts), data, host);
    plots.push(Object.assign({ u, id, kind }, extra || {}));
    return u;
  }

  // LOST regions shaded on time plots.
  function lostHook(u) {
    if (!P.lost.length) return;
    const c = u.ctx;
    c.save();
    c.fillStyle = "rgba(255, 60, 140, 0.22)";
    for (const [from, to] of P.lost) {
      if (to < u.scales.x.min || from > u.scales.x.max) continue;
      const x0 = u.valToPos(Math.max(from, u.scales.x.min), "x", true);
      const x1 = u.valToPos(Math.min(to, u.scales.x.max), "x", true);
      c.fillRect(x0, u.bbox.top, Math.max(x1 - x0, 2), u.bbox.height);
    }
    c.restore();
  }
  // Zoom one time plot of a socket: all of them follow.
  const groups = {};
  function timeGroup(key, u, range) {
    (groups[key] = groups[key] || { plots: [], range, busy: false }).plots.push(u);
  }
  function syncHook(key) {
    return (u, scaleKey) => {
      const g = groups[key];
      if (scaleKey != "x" || !g || g.busy) return;
      g.busy = true;
      for (const o of g.plots) if (o !== u) o.setScale("x", { min: u.scales.x.min, max: u.scales.x.max });
      g.busy = false;
    };
  }
  function timeOpts(key, range, yaxis, series, more) {
    return Object.assign({
      scales: { x: { time: false, range: () => range.slice() } },
      axes: [xAxis("time since recording start (s)", null, { values: secTicks, space: secSpace }), yaxis],
      series: [{ label: "time (s)", value: (u, v) => (v == null ? "" : v.toFixed(6) + " s") }].concat(series),
      cursor: { sync: { key }, drag: { x: true, y: false } },
      hooks: { draw: [lostHook], setScale: [syncHook(key)] },
    }, more || {});
  }
  // Percentile marks (dashed median, dotted p99) in each series' colour.
  function pctHook(marks) {
    return (u) => {
      const c = u.ctx;
      c.save();
      c.lineWidth = 1.5 * devicePixelRatio;
      for (const m of marks) {
        for (const [v, dash] of [[m.median, [6, 4]], [m.p99, [2, 3]]]) {
          if (v == null || v <= 0 || v < u.scales.x.min || v > u.scales.x.max) continue;
          const x = u.valToPos(v, "x", true);
          c.strokeStyle = m.color;
          c.setLineDash(dash.map((d) => d * devicePixelRatio));
          c.beginPath();
          c.moveTo(x, u.bbox.top);
          c.lineTo(x, u.bbox.top + u.bbox.height);
          c.stroke();
        }
      }
      c.restore();
    };
  }
  // Log histograms of several series on one log x axis: bars per bin. Returns
  // false (and draws nothing) when they hold fewer than 3 bins from first to
  // last, which a histogram cannot show better than the words under it.
  function histPlot(id, title, xlabel, fmtX, splitsX, list, width) {
    const hs = list.filter((s) => s.hist && s.hist.bins.length);
    if (!hs.length) return false;
    const k = hs[0].hist.k;
    let lo = Infinity, hi = -Infinity;
    for (const s of hs) for (const [i] of s.hist.bins) { lo = Math.min(lo, i); hi = Math.max(hi, i); }
    if (hi - lo < 2) return false;
    const edges = [];
    for (let i = lo; i <= hi + 1; i++) edges.push(Math.pow(10, i / k));
    const data = [edges];
    const series = [{ label: xlabel, value: (u, v) => fmtX(v) }];
    for (const s of hs) {
      const y = edges.map(() => null);
      for (const [i, c] of s.hist.bins) y[i - lo] = c;
      data.push(y);
      series.push({
        label: s.label, stroke: s.color, fill: s.color + "33", width: 1.5,
        paths: uPlot.paths.bars({ size: [1, Infinity], align: 1, gap: 0 }),
        points: { show: false }, value: (u, v) => (v == null ? "-" : fmtCount(v) + " units"),
      });
    }
    const ymax = Math.max(...hs.map((s) => Math.max(...s.hist.bins.map((b) => b[1]))));
    make(id, "hist", title, {
      width: width || W, height: 200,
      scales: { x: { time: false, distr: 3, range: [edges[0], edges[edges.length - 1]] },
                y: { distr: 3, range: [0.7, Math.max(10, ymax * 1.5)] } },
      axes: [xAxis(xlabel, fmtX, { splits: splitsX, space: 60 }),
             yAxis("count (log)", fmtCount, { splits: decadeSplits })],
      series,
      cursor: { drag: { x: false, y: false } },
      hooks: { draw: [pctHook(hs.map((s) => ({ color: s.color, median: s.stats && s.stats.median, p99: s.stats && s.stats.p99 })))] },
    }, data, { bars: true });
    return true;
  }

  for (const C of P.conns) {
    const key = "sock-" + C.cookie;
    const n = C.n, w = C.w_ns;
    const range = [C.t0_ns / 1e9, (C.t0_ns + n * w) / 1e9];
    // Bin starts, plus the end of the last bin (its step holds to there).
    const x = [];
    for (let i = 0; i <= n; i++) x.push((C.t0_ns + i * w) / 1e9);
    const ext = (arr) => arr.concat([arr[arr.length - 1]]);
    for (const dir of ["out", "in"]) {
      const L = C.layers.filter((l) => l.dir == dir);
      if (!L.length) continue;
      const dirName = dir == "out" ? "sent (out)" : "received (in)";
      // Bytes per bin as a rate.
      const ratePlot = make(`rate-${C.cookie}-${dir}`, "time", `${dirName}: bytes per ${fmtDur(w)} bin, as a rate`,
        timeOpts(key, range, yAxis("rate (bits/s)", fmtRate),
          L.map((l) => ({ label: `${l.layer} ${dir}`, stroke: COLOR[l.layer], width: 1.5,
            paths: uPlot.paths.stepped({ align: 1 }), points: { show: false },
            value: (u, v) => (v == null ? "" : fmtRate(v)) }))),
        [x].concat(L.map((l) => ext(l.bytes.map((b) => (b * 8) / (w / 1e9))))));
      if (ratePlot) timeGroup(key, ratePlot, range);
      // Unit sizes per bin: the smallest and the largest, shaded between.
      const sdata = [x], sseries = [], bands = [];
      for (const l of L) {
        const some = (arr) => ext(arr.map((v, i) => (l.units[i] ? v : null)));
        sdata.push(some(l.max), some(l.min));
        const s = sseries.length + 1;
        bands.push({ series: [s, s + 1], fill: COLOR[l.layer] + "30" });
        for (const m of ["largest", "smallest"]) {
          sseries.push({ label: `${l.layer} ${dir} ${m}`, stroke: COLOR[l.layer], width: m == "largest" ? 1.5 : 1,
            dash: m == "largest" ? undefined : [4, 3], paths: uPlot.paths.stepped({ align: 1 }),
            points: { show: true, size: 4, fill: COLOR[l.layer] }, spanGaps: false, value: (u, v) => (v == null ? "-" : fmtBytes(v) + " B") });
        }
      }
      let smin = Infinity, smax = 0, used = 0, i0 = n, i1 = 0;
      for (const l of L) for (let i = 0; i < n; i++) if (l.units[i]) {
        smin = Math.min(smin, l.min[i]); smax = Math.max(smax, l.max[i]); used++; i0 = Math.min(i0, i); i1 = Math.max(i1, i);
      }
      smin = Math.max(1, smin);
      // A few bins with units (a listener's handshakes): larger dots, or
      // they vanish among the axes.
      if (used < 20) for (const s of sseries) s.points.size = 8;
      // Units in a few bins only: the distributions below say more.
      const sizePlot = (used < 3 || (i1 + 1 - i0) < n / 2) ? (document.getElementById(`size-${C.cookie}-${dir}`)?.remove(), null) : make(`size-${C.cookie}-${dir}`, "time", `${dirName}: unit sizes per ${fmtDur(w)} bin`,
        timeOpts(key, range, yAxis("unit size (bytes, log)", fmtBytes, { splits: byteSplits }), sseries,
          { bands, scales: { x: { time: false, range: () => range.slice() }, y: { distr: 3, log: 2, range: [smin / 1.5, smax * 1.5] } } }),
        sdata);
      if (sizePlot) timeGroup(key, sizePlot, range);
      // Distributions.
      const half = Math.floor((W - 16) / 2);
      const drawnSizes = histPlot(`sizes-${C.cookie}-${dir}`, `${dirName}: unit sizes`, "unit size (bytes, log)",
        (v) => fmtBytes(v), byteSplits,
        L.map((l) => ({ label: `${l.layer} ${dir}`, color: COLOR[l.layer], hist: l.size_hist, stats: l.size })), half);
      const drawnGaps = histPlot(`gaps-${C.cookie}-${dir}`, `${dirName}: gaps between consecutive units`, "gap (time, log)",
        fmtDur, decadeSplits,
        L.map((l) => ({ label: `${l.layer} ${dir}`, color: COLOR[l.layer], hist: l.gap_hist, stats: l.gap })), half);
      for (const [drawn, id] of [[drawnSizes, `sizes-${C.cookie}-${dir}`], [drawnGaps, `gaps-${C.cookie}-${dir}`]]) {
        if (!drawn) {
          const e = document.getElementById(id);
          if (e) e.remove(); // the words under the plots say it all
        }
      }
    }
    histPlot(`lat-${C.cookie}`, "latency through the stack", "latency (log)", fmtDur, decadeSplits,
      C.latency.map((l, i) => ({ label: l.name, color: ["#ff7f0e", "#17becf"][i], hist: l.hist, stats: l.stats })));
    if (C.tcp && C.tcp.x.length >= 2) {
      const T = C.tcp;
      const tx = T.x.map((v) => (C.t0_ns + v) / 1e9);
      const step = uPlot.paths.stepped({ align: 1 });
      const tcp = (id, title, ylabel, fmt, fields, more) => {
        // All zero (a receiver's send buffer): a line on the axis says less than words.
        if (fields.every(([f]) => T[f].every((v) => !v))) {
          const e = document.getElementById(`${id}-${C.cookie}`);
          if (e) e.textContent = `${title}: 0 throughout.`;
          return;
        }
        const u = make(`${id}-${C.cookie}`, "time", title,
          timeOpts(key, range, yAxis(ylabel, fmt, more), fields.map(([f, label, color]) => ({
            label, stroke: color, width: 1.5, paths: step, points: { show: false },
            value: (u, v) => (v == null ? "" : fmt(v)) }))),
          [tx].concat(fields.map(([f]) => T[f])), { tcp: true });
        if (u) timeGroup(key, u, range);
      };
      const B = (v) => fmtBytes(v);
      tcp("tcp-buf", "send buffer and bytes in flight", "bytes (B)", B,
        [["sndbuf", "written, not acked (B)", "#1f77b4"], ["inflight", "in flight (B)", "#ff7f0e"]], { incrs: BYTE_INCRS });
      tcp("tcp-cwnd", "congestion window", "cwnd (segments)", fmtCount,
        [["cwnd", "cwnd (segments)", "#2ca02c"], ["retrans_out", "retransmits out (segments)", "#d62728"]], { incrs: INT_INCRS });
      tcp("tcp-rtt", "smoothed RTT", "srtt (time)", (v) => fmtDur(v * 1000), [["srtt_us", "srtt", "#9467bd"]]);
      tcp("tcp-wnd", "windows", "window (B)", B,
        [["snd_wnd", "snd_wnd: peer's receive window (B)", "#8c564b"], ["rcv_wnd", "rcv_wnd: ours (B)", "#e377c2"]], { incrs: BYTE_INCRS });
    }
  }
  if (P.sched.cpus.length && document.getElementById("sched")) {
    const w = P.sched.w_ns, len = Math.max(...P.sched.cpus.map((c) => c.bins.length));
    const x = [];
    for (let i = 0; i <= len; i++) x.push((i * w) / 1e9);
    const range = [0, Math.max(P.duration_s, (len * w) / 1e9)];
    const data = [x].concat(P.sched.cpus.map((c) => {
      const b = c.bins.slice();
      while (b.length < len) b.push(0);
      return b.concat([b[b.length - 1]]);
    }));
    make("sched", "time", `context switches per ${fmtDur(w)} bin, per CPU`,
      timeOpts("sched", range, yAxis("switches (count)", fmtCount, { incrs: INT_INCRS }),
        P.sched.cpus.map((c, i) => ({ label: `cpu${c.cpu}`, stroke: `hsl(${(i * 137) % 360},60%,45%)`, width: 1,
          paths: uPlot.paths.stepped({ align: 1 }), points: { show: false }, value: (u, v) => fmtCount(v) }))),
      data);
  }
  // Double-click resets to the whole span (uPlot's default resets to the data).
  for (const k in groups) {
    const g = groups[k];
    for (const u of g.plots) u.over.addEventListener("dblclick", () => u.setScale("x", { min: g.range[0], max: g.range[1] }));
  }

  // The self-check: what a person would look at, from the drawn instances.
  function check(p) {
    const u = p.u, xs = u.scales.x, log = xs.distr == 3;
    const tx = (v) => (log ? Math.log10(v) : v);
    const d = u.data;
    let first = Infinity, last = -Infinity;
    for (let s = 1; s < d.length; s++) {
      for (let i = 0; i < d[0].length; i++) {
        if (d[s][i] == null || !(p.kind == "time" ? true : d[s][i] > 0)) continue;
        const x0 = d[0][i];
        const x1 = p.bars && i + 1 < d[0].length ? d[0][i + 1] : x0;
        first = Math.min(first, x0);
        last = Math.max(last, x1);
      }
    }
    // A time series' zero bins are data too (rate 0); a step holds to the next point.
    const spanFrac = last > first ? (Math.min(tx(last), tx(xs.max)) - Math.max(tx(first), tx(xs.min))) / (tx(xs.max) - tx(xs.min)) : 0;
    const axes = u.axes.map((a, i) => {
      const vals = (a._values || []).filter((v) => v != null).map(String);
      const vertical = a.side % 2 == 1;
      const widest = Math.max(0, ...vals.map((v) => textW(v, FONT)));
      const room = a._size - (a.ticks.show ? a.ticks.size : 0) - a.gap;
      const need = vertical ? widest : 12;
      // Neighbouring tick labels along the axis.
      let crowded = 0;
      const pos = (a._splits || []).map((v) => u.valToPos(v, a.scale));
      for (let j = 1; j < pos.length && j < vals.length; j++) {
        const gap = Math.abs(pos[j] - pos[j - 1]);
        const needGap = vertical ? 13 : (textW(vals[j], FONT) + textW(vals[j - 1], FONT)) / 2 + 2;
        if (gap < needGap) crowded++;
      }
      const label = typeof a.label == "string" ? a.label : "";
      const plotDim = vertical ? u.bbox.height / devicePixelRatio : u.bbox.width / devicePixelRatio;
      return {
        label, ticks: vals,
        unit: /\(.+\)/.test(label),
        label_over_ticks: need > room + 0.5,
        label_longer_than_plot: textW(label, LFONT) > plotDim,
        crowded_ticks: crowded,
      };
    });
    return { id: p.id, kind: p.kind, span: Math.round(spanFrac * 1000) / 1000, axes,
      points: d[0].length, series: d.length - 1,
      box: (() => { const r = u.root.getBoundingClientRect(); return [Math.round(r.left + scrollX), Math.round(r.top + scrollY), Math.round(r.width), Math.round(r.height)]; })() };
  }
  // uPlot lays out and draws after this script (a microtask); check after that.
  setTimeout(() => {
    const out = { width: W, plots: plots.map(check) };
    const pre = document.getElementById("selfcheck");
    if (pre) pre.textContent = JSON.stringify(out);
    // Each plot area on the page (for screenshot checks: coloured pixels in it).
    const rects = plots.map((p) => {
      const r = p.u.over.getBoundingClientRect();
      return [Math.round(r.left + scrollX), Math.round(r.top + scrollY), Math.round(r.width), Math.round(r.height), p.id];
    });
    document.body.setAttribute("data-plot-rects", JSON.stringify(rects));
    document.body.setAttribute("data-rendered", String(plots.length));
  }, 200);
})();
