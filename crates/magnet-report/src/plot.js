// magnet report: plots drawn as inline SVG from the embedded analysis. No
// libraries, no network. Drag across any time plot to zoom all of them,
// double-click to reset; hover shows the nearest point.
"use strict";
(function () {
  const A = JSON.parse(document.getElementById("analysis").textContent);
  const CONN = A.connections[Number(document.body.dataset.chosen)] || null;
  const NS = "http://www.w3.org/2000/svg";
  const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"];
  const W = 900, M = { l: 70, r: 12, t: 8, b: 26 };
  // Where the chosen connection's traffic is (computed with the analysis).
  let span = [Number(document.body.dataset.from), Number(document.body.dataset.to)];
  const full = span.slice();
  const timePlots = [];

  function el(name, attrs, parent) {
    const e = document.createElementNS(NS, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function fmt(v) {
    if (!isFinite(v)) return "";
    const a = Math.abs(v);
    if (a >= 1e9) return (v / 1e9).toFixed(2) + "G";
    if (a >= 1e6) return (v / 1e6).toFixed(2) + "M";
    if (a >= 1e4) return (v / 1e3).toFixed(1) + "k";
    if (a >= 100 || a === 0) return v.toFixed(0);
    return v.toPrecision(3);
  }
  function ticks(lo, hi, n) {
    const step0 = (hi - lo) / n;
    if (!(step0 > 0)) return [lo];
    const p = Math.pow(10, Math.floor(Math.log10(step0)));
    const step = [1, 2, 5, 10].map((m) => m * p).find((s) => s >= step0);
    const out = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(v);
    return out;
  }

  // One plot: series of {name, kind: "ticks"|"line"|"step"|"bars", pts: [[x, y]...]}.
  function plot(host, spec) {
    const H = spec.height || 150;
    host.innerHTML = "";
    const svg = el("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, class: "plot" }, host);
    const xd = spec.time ? span : spec.xdomain;
    let ymax = 0;
    for (const s of spec.series) for (const p of s.pts) if ((!spec.time || (p[0] >= xd[0] && p[0] <= xd[1])) && p[1] > ymax) ymax = p[1];
    if (ymax <= 0) ymax = 1;
    const x = (v) => M.l + ((v - xd[0]) / (xd[1] - xd[0] || 1)) * (W - M.l - M.r);
    const y = (v) => H - M.b - (v / ymax) * (H - M.t - M.b);
    el("rect", { x: M.l, y: M.t, width: W - M.l - M.r, height: H - M.t - M.b, fill: "#fff", stroke: "#ccc" }, svg);
    if (spec.time) {
      for (const l of A.trace.lost) {
        const x0 = Math.max(x(l.from_s), M.l), x1 = Math.min(x(l.to_s), W - M.r);
        if (x1 >= M.l && x0 <= W - M.r) {
          const r = el("rect", { x: x0, y: M.t, width: Math.max(x1 - x0, 2), height: H - M.t - M.b, fill: "#f4a", opacity: 0.35, class: "lost" }, svg);
          el("title", {}, r).textContent = `${l.count} events lost on CPU ${l.cpu}`;
        }
      }
    }
    // Time labels with as many decimals as the tick step needs (a 3 ms span
    // needs 4: 0.1065, 0.1070 …).
    const tks = ticks(xd[0], xd[1], 8);
    const step = tks.length > 1 ? tks[1] - tks[0] : 1;
    const dec = Math.min(9, Math.max(3, Math.ceil(-Math.log10(step) - 1e-9)));
    for (const t of tks) {
      el("line", { x1: x(t), x2: x(t), y1: H - M.b, y2: H - M.b + 4, stroke: "#666" }, svg);
      el("text", { x: x(t), y: H - 8, "text-anchor": "middle", class: "tick" }, svg).textContent = spec.time ? t.toFixed(dec) : fmt(t);
    }
    for (const t of ticks(0, ymax, 3)) {
      el("line", { x1: M.l, x2: W - M.r, y1: y(t), y2: y(t), stroke: "#eee" }, svg);
      el("text", { x: M.l - 4, y: y(t) + 4, "text-anchor": "end", class: "tick" }, svg).textContent = fmt(t);
    }
    el("text", { x: 4, y: M.t + 12, class: "label" }, svg).textContent = spec.ylabel || "";
    spec.series.forEach((s, i) => {
      const color = s.color || COLORS[i % COLORS.length];
      let d = "";
      const pts = spec.time ? s.pts.filter((p) => p[0] >= xd[0] && p[0] <= xd[1]) : s.pts;
      if (s.kind === "ticks") {
        for (const p of pts) d += `M${x(p[0]).toFixed(1)} ${y(0).toFixed(1)}V${y(p[1]).toFixed(1)}`;
      } else if (s.kind === "bars") {
        const bw = Math.max((W - M.l - M.r) / Math.max(pts.length, 1) - 1, 1);
        for (const p of pts) d += `M${(x(p[0]) + bw / 2).toFixed(1)} ${y(0).toFixed(1)}V${y(p[1]).toFixed(1)}`;
        el("path", { d, stroke: color, "stroke-width": bw, fill: "none", class: "series" }, svg);
        d = "";
      } else {
        pts.forEach((p, k) => {
          if (s.kind === "step" && k > 0) d += `H${x(p[0]).toFixed(1)}`;
          d += `${k ? "L" : "M"}${x(p[0]).toFixed(1)} ${y(p[1]).toFixed(1)}`;
        });
      }
      if (d) el("path", { d, stroke: color, "stroke-width": s.kind === "ticks" ? 1 : 1.5, fill: "none", class: "series" }, svg);
      if (spec.series.length > 1 || s.legend) {
        el("text", { x: W - M.r - 8, y: M.t + 14 + 14 * i, "text-anchor": "end", fill: color, class: "legend" }, svg).textContent = s.name;
      }
    });
    const tip = el("text", { x: M.l + 6, y: M.t + 14, class: "tip" }, svg);
    svg.addEventListener("mousemove", (ev) => {
      const r = svg.getBoundingClientRect();
      const px = ((ev.clientX - r.left) / r.width) * W;
      const xv = xd[0] + ((px - M.l) / (W - M.l - M.r)) * (xd[1] - xd[0]);
      let best = null;
      for (const s of spec.series) for (const p of s.pts) {
        const dd = Math.abs(p[0] - xv);
        if (!best || dd < best.d) best = { d: dd, p, s };
      }
      tip.textContent = best ? `${best.s.name}: x=${spec.time ? best.p[0].toFixed(6) + " s" : fmt(best.p[0])}  y=${fmt(best.p[1])}` : "";
    });
    if (spec.time) {
      let down = null;
      const sel = el("rect", { y: M.t, height: H - M.t - M.b, fill: "#88f", opacity: 0.2, width: 0 }, svg);
      const toX = (ev) => {
        const r = svg.getBoundingClientRect();
        return ((ev.clientX - r.left) / r.width) * W;
      };
      svg.addEventListener("mousedown", (ev) => { down = toX(ev); });
      svg.addEventListener("mousemove", (ev) => {
        if (down === null) return;
        const p = toX(ev);
        sel.setAttribute("x", Math.min(p, down));
        sel.setAttribute("width", Math.abs(p - down));
      });
      svg.addEventListener("mouseup", (ev) => {
        const p = toX(ev);
        if (down !== null && Math.abs(p - down) > 4) {
          const inv = (px) => xd[0] + ((px - M.l) / (W - M.l - M.r)) * (xd[1] - xd[0]);
          span = [inv(Math.min(p, down)), inv(Math.max(p, down))];
          redraw();
        }
        down = null;
      });
      svg.addEventListener("dblclick", () => { span = full.slice(); redraw(); });
    }
  }
  function timePlot(id, spec) {
    const host = document.getElementById(id);
    if (!host) return;
    spec.time = true;
    timePlots.push([host, spec]);
    plot(host, spec);
  }
  function redraw() {
    for (const [h, s] of timePlots) plot(h, s);
    const z = document.getElementById("zoom");
    if (z) z.textContent = `${span[0].toFixed(6)} s – ${span[1].toFixed(6)} s`;
  }

  // MAGNeT figs. 9/10: one row of marks per layer, mark height = unit size.
  if (CONN && CONN.series) {
    const layers = document.getElementById("layers");
    for (const dir of ["out", "in"]) {
      for (const m of CONN.series.marks.filter((m) => m.dir === dir)) {
        const div = document.createElement("div");
        div.id = `marks-${m.layer}-${m.dir}`;
        div.className = "plotbox";
        layers.appendChild(div);
        timePlot(div.id, {
          height: 90,
          ylabel: `${m.layer} ${m.dir} (B)`,
          series: [{ name: `${m.layer} ${m.dir}${m.stride > 1 ? " (every " + m.stride + "th)" : ""}`, kind: "ticks", legend: true, pts: m.points }],
        });
      }
    }
    const tcp = CONN.series.tcp;
    if (tcp.length) {
      const s = (f) => tcp.map((p) => [p.t_s, p[f]]);
      timePlot("tcp-buf", { ylabel: "bytes", series: [
        { name: "send buffer: written, not acked", kind: "step", pts: s("sndbuf") },
        { name: "in flight", kind: "step", pts: s("inflight") }] });
      timePlot("tcp-cwnd", { ylabel: "segments", series: [
        { name: "cwnd", kind: "step", pts: s("cwnd") },
        { name: "retrans_out", kind: "step", pts: s("retrans_out") }] });
      timePlot("tcp-rtt", { ylabel: "srtt (µs)", series: [{ name: "srtt", kind: "step", legend: true, pts: s("srtt_us") }] });
      timePlot("tcp-wnd", { ylabel: "bytes", series: [
        { name: "snd_wnd", kind: "step", pts: s("snd_wnd") },
        { name: "rcv_wnd", kind: "step", pts: s("rcv_wnd") }] });
    }
    for (const [id, h, name] of [["lat-send", CONN.series.send_latency_hist, "send → device"], ["lat-recv", CONN.series.recv_latency_hist, "device → recv"]]) {
      const host = document.getElementById(id);
      if (host && h.length) {
        const pts = h.map((b) => [b[0] / 1e6, b[1]]);
        const last = pts[pts.length - 1][0];
        plot(host, { ylabel: "count", xdomain: [pts[0][0], last + (last - pts[0][0]) / pts.length + 1e-9],
          series: [{ name: `${name} latency (ms)`, kind: "bars", legend: true, pts }] });
      }
    }
  }
  if (A.sched.cpus.some((c) => c.bins && c.bins.length)) {
    const w = A.sched.bin_ns / 1e9;
    timePlot("sched", { ylabel: `switches / ${fmt(A.sched.bin_ns / 1e6)} ms`, series: A.sched.cpus.map((c) => ({
      name: `cpu${c.cpu}`, kind: "step", pts: c.bins.map((n, i) => [i * w, n]) })) });
  }
  redraw();
  // Where each plot is on the page (for screenshot checks).
  const rects = Array.from(document.querySelectorAll("svg.plot")).map((s) => {
    const r = s.getBoundingClientRect();
    return [Math.round(r.left + window.scrollX), Math.round(r.top + window.scrollY), Math.round(r.width), Math.round(r.height), s.parentNode.id];
  });
  document.body.setAttribute("data-plot-rects", JSON.stringify(rects));
  document.body.setAttribute("data-rendered", String(rects.length));
})();
