#!/usr/bin/env python3
"""Judges scripts/lab/suite.sh outputs: one reference (this host) and one per guest kernel.

    check.py REFERENCE.txt GUEST.txt...

Checks, for every file:
  - `magnet record -- magnet loadgen --tcp 200x16k --udp 100x512` with the default layers
    exited 0; loadgen says 200 TCP sends of 16384 B and 100 UDP sends of 512 B, none failed;
    the trace has exactly those app sends (200 x 16384 B on the TCP socket, 100 x 512 B on the UDP one);
  - the tcp, ip and dev rows of those sockets are present (tcp/ip/dev out on the TCP sender,
    in on its receiver; ip/dev out on the UDP sender), and the UDP sender's ip and dev rows
    (one packet per datagram) equal the reference's in units and bytes;
  - `magnet info` names a hook for every kind recorded (the one `record --check` named) and
    for every default layer;
  - every layer alone: exit 0 with its hooks named in the trace (and events, for the layers
    the workload must show), or a one-line error naming the layer, the hook and what is missing;
    on a kernel in LACKS (5.10) exactly the layers it lacks fail, each naming what is missing;
  - `record -f`: where the kernel lacks bpf_loop (LACKS: 5.10), one line saying so, exit 2;
  - `record --funcs` on 11 transmit/receive functions: where the kernel has function
    probes magnet can use (6.1, 6.12; 5.10's kprobe programs lack bpf_get_func_ip: one note
    naming it), the SYN's path from `magnet packets` runs __tcp_transmit_skb <- tcp_connect,
    skb_clone, __ip_queue_xmit, ip_output, dev_hard_start_xmit in that order; elsewhere one note;
    again with --func-exits: as many returns as entries, every SYN step with its time inside,
    and each caller's time enclosing its callees' on that path;
  - `record --all --layers app` while loadgen sends 20 x 1000 B over TCP and 10 x 100 B over UDP:
    exactly those 30 sends, each asking its size; the app calls at sendfile's, splice's and the
    mmsg calls' own tracepoints only (5.10, without bpf_task_pt_regs: all twelve calls')
  - `record --snaplen 2048` of a loopback TCP transfer (1 MiB: at least 16 frames even of 64 KiB): every data frame to loadgen's port
    in `magnet pcap` holds min(frame, 2048) bytes and its payload is loadgen's byte pattern
    at its stream offset (the bytes past the skb's linear part, read from its fragments);
  - `record --funcs` with packet_rcv while `loadgen --tap lo` reads lo through a packet
    socket (the kernel clones every frame for it: non-fclone clones): as many packet_rcv
    steps in packet paths as frames the tap read, two on the SYN's path, the first after
    dev_hard_start_xmit (the outgoing clone continues its parent's path);
  - (guests) nothing left behind by a recording of every layer and kind and a 200 ms
    `magnet sample -i lo`: no BPF link, kprobe event, pinned object or clsact qdisc;
    a sampler killed by SIGKILL before it (clsact on 6.1: its qdisc is left) is
    cleaned up by that 200 ms run's start (it says so); on TCX nothing is left;
  - (guests) magnetd: on 6.1 it refuses to start, saying it needs Linux 6.3+; on 5.10 it
    starts or refuses in one line naming what is missing; elsewhere it
    starts, and a TCP connection held open after 30 writes of 1000 B shows 30 000 B app and
    wire (the kernel's tcp_sock counters, read by the socket-storage iterator) each way it
    moved (wire tx: bytes_sent, more only as the connection's retransmissions say);
    once both ends closed, the counters copied at close (wire rx 30 001: the FIN);
    its default sampled per-packet windows opened at least 3 times, none failed;
    SIGTERM exits 0 (the leftovers check then finds no link).
Prints a table of the rows per kernel; exits 1 on the first file with failures (after all).
"""
import base64
import re
import json
import struct
import sys

DEFAULT_LAYERS = ["app", "tcp", "ip", "dev"]
named_missing = {}
funcs_path = {}
funcs_in = {}
funcs_nested = {}
snaplen_seen = {}
funcs_tap = {}
# kernel -> [(section, seconds)] from suite.sh's "times" section
section_times = {}
MUST_SEE = {"app", "tcp", "ip", "dev", "sched"}  # the loadgen always shows these

# What a kernel lacks, by `uname -r` prefix: each absence is the kernel's, and
# magnet must report it in one line containing these words (never a number
# excused). Every layer not named here must record on that kernel.
LACKS = {
    "5.10.": {
        # no qdisc_enqueue tracepoint (5.15+)
        "layers": {"qdisc": "no tracepoint qdisc_enqueue"},
        # bpf_loop (5.17+) runs the in-kernel filter expression
        "filter": "bpf_loop",
        # kprobe programs get bpf_get_func_ip in 5.15
        "funcs": "bpf_get_func_ip",
        # magnetd's hooks (sock_send_length, 6.3+; socket-storage iterator)
        "daemon": True,
        # sock_ops TX timestamp callbacks (6.15+)
        "tx_timestamps": True,
    },
    "6.1.0-": {"tx_timestamps": True},
    "6.12.": {"tx_timestamps": True},
}


def lacks(kernel):
    return next((v for k, v in LACKS.items() if kernel.startswith(k)), {})


def sections(path):
    out, name, buf = {}, None, []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("== "):
                if name is not None:
                    out[name] = buf
                name, buf = line[3:], []
            else:
                buf.append(line)
    if name is not None:
        out[name] = buf
    return out


def first_json(lines):
    text = "\n".join(l for l in lines if not l.startswith("rc "))
    dec = json.JSONDecoder()
    i = text.find("{")
    while i >= 0:
        try:
            obj, _ = dec.raw_decode(text[i:])
            return obj
        except ValueError:
            i = text.find("{", i + 1)
    return None


def rows(conn):
    return {(m["layer"], m["dir"]): (m["units"], m["bytes"]) for m in conn.get("modulation", [])}


def rc_and_json(fn):
    """A section's exit status ("rc N" line) and its JSON lines (None where one does not parse)."""
    rc = next((l[3:] for l in fn if l.startswith("rc ")), "?")
    js = []
    for l in fn:
        if l[:1] in "{[":
            try:
                js.append(json.loads(l))
            except ValueError:
                js.append(None)
    return rc, js


def unlisted(j):
    """A list magnet prints wrapped with its schema (docs/json.md), as the list; older builds print it bare."""
    if isinstance(j, dict) and "schema" in j:
        for k in ("handshakes", "packets"):
            if k in j:
                return j[k]
    return j


def check_funcs(sec, fn, kernel, probes_expected, need, lacking=None):
    """record --funcs [--func-exits] on 11 functions: the SYN's path, in order."""
    exits = sec.endswith("--func-exits")
    rc, js = rc_and_json(fn)
    if not probes_expected and rc != "0":
        # No function probes: record fails before recording, with one line.
        err = next((l[7:] for l in fn if l.startswith("stderr ")), "")
        need(rc == "2" and "--funcs cannot be recorded: " in err
             and (lacking in err if lacking else "no kprobes or kprobe-multi" in err),
             f"{sec} without probes: want exit 2 and one line, got exit {rc}: {err}")
        return
    if not need(rc == "0" and len(js) == 3 and all(j is not None for j in js), f"{sec}: exit {rc}, {len(js)} JSON lines"):
        return
    info, hs, pk = (unlisted(j) for j in js)
    kinds = info.get("kinds") or {}
    src = next((x for x in info.get("sources", []) if x["layer"] == "func"), None)
    if not need(src is not None, f"{sec}: no func source in the header"):
        return
    if probes_expected:
        need(src["hooks"], f"{sec}: no function probes on {kernel}: {src}")
    if not src["hooks"]:
        need(len(src["missing"]) == 1 and "function probes not recorded" in src["missing"][0]
             and (lacking is None or lacking in src["missing"][0]),
             f"{sec} without probes: want one note{' naming ' + lacking if lacking else ''}, got {src['missing']}")
        need((kinds.get("func") or {}).get("events", 0) == 0, f"{sec} without probes: func events recorded")
        return
    syn = hs[0][0]["pkt_id"] if hs and hs[0] else None
    path = next((p for p in pk if p["pkt_id"] == syn), None)
    steps = [st for st in (path or {}).get("steps", []) if st["layer"] == "func"]
    whats = [st["what"] for st in steps]
    want = ["__tcp_transmit_skb <- tcp_connect", "skb_clone", "__ip_queue_xmit", "ip_output", "dev_hard_start_xmit"]
    at, ok, pos = 0, True, {}
    for w in want:
        i = next((j for j in range(at, len(whats)) if whats[j] == w or whats[j].startswith(w + " ")), None)
        if i is None:
            ok = False
            break
        pos[w] = i
        at = i + 1
    need(ok and whats and whats[0] == want[0],
         f"{sec}: the SYN's path is not {' -> '.join(want)} in order: {whats}")
    funcs_path[kernel] = " -> ".join(w.split(" ")[0] for w in whats[:6]) + " ..."
    if not exits:
        return
    # Every recorded entry returned within the recording, and each function's
    # time encloses the functions it called on the SYN's path.
    n_in, n_out = (kinds.get("func") or {}).get("events"), (kinds.get("func_exit") or {}).get("events")
    need(n_in and n_in == n_out, f"{sec}: {n_in} function entries but {n_out} returns")
    need(all("in_ns" in st for st in steps), f"{sec}: SYN steps without their time inside: {steps}")
    if ok and all("in_ns" in st for st in steps):
        def span(w):
            st = steps[pos[w]]
            return st["ts_ns"], st["ts_ns"] + st["in_ns"]
        for outer, inner in [("__tcp_transmit_skb <- tcp_connect", "skb_clone"),
                             ("__tcp_transmit_skb <- tcp_connect", "__ip_queue_xmit"),
                             ("__ip_queue_xmit", "ip_output"), ("ip_output", "dev_hard_start_xmit")]:
            (a, b), (c, d) = span(outer), span(inner)
            need(a <= c and d <= b, f"{sec}: {inner} [{c}, {d}] not inside {outer} [{a}, {b}]")
        funcs_in[kernel] = ", ".join(f"{w.split(' ')[0]} {steps[pos[w]]['in_ns'] / 1000:.0f} us" for w in want)
    # Recursion: on loopback the SYN-ACK is sent from the softirq that runs at
    # the end of the SYN's __dev_queue_xmit, on the same task. Calls of one
    # function on one CPU with BH off (no preemption: one task) must nest or be
    # disjoint; a return paired with the wrong entry of a recursive call would
    # overlap partly.
    spans = sorted({(st["what"].split(" ")[0], st["cpu"], st["ts_ns"], st["ts_ns"] + st["in_ns"])
                    for p in pk for st in p.get("steps", [])
                    if st["layer"] == "func" and "in_ns" in st
                    and st["what"].split(" ")[0] in ("__dev_queue_xmit", "dev_hard_start_xmit")})
    bad = [(a, b) for i, a in enumerate(spans) for b in spans[i + 1:]
           if a[:2] == b[:2] and a[2] < b[2] < a[3] < b[3]]
    need(not bad, f"{sec}: calls of one function on one CPU overlap without nesting: {bad[:2]}")
    funcs_nested[kernel] = sum(1 for i, a in enumerate(spans) for b in spans[i + 1:]
                               if a[:2] == b[:2] and a[2] < b[2] and b[3] <= a[3])


def check_snaplen(data, snap, port, size):
    """The TCP data frames to `port` of a `magnet pcap` file: each holds min(frame, snap)
    bytes, and its payload is loadgen's pattern (byte i of each `size`-byte call is
    i % 251) at its stream offset. Returns (frames, payload bytes) or what is wrong."""
    off, bo, links, isn, frames, nbytes = 0, "<", {}, None, [], 0
    while off + 12 <= len(data):
        btype = struct.unpack_from(bo + "I", data, off)[0]
        if btype == 0x0A0D0D0A:
            bo = "<" if data[off + 8:off + 12] == b"\x4d\x3c\x2b\x1a" else ">"
        blen = struct.unpack_from(bo + "I", data, off + 4)[0]
        if blen < 12 or off + blen > len(data):
            return f"pcapng block at offset {off}: length {blen}"
        body = data[off + 8:off + blen - 4]
        if btype == 1:
            links[len(links)] = struct.unpack_from(bo + "H", body, 0)[0]
        elif btype == 6:
            ifid, _, _, cap, orig = struct.unpack_from(bo + "IIIII", body, 0)
            frames.append((links.get(ifid), cap, orig, body[20:20 + cap]))
        off += blen
    checked = 0
    for link, cap, orig, f in frames:
        if link != 1 or len(f) < 34 or f[12:14] != b"\x08\x00" or f[23] != 6:
            continue
        ihl = (f[14] & 15) * 4
        t = 14 + ihl
        sport, dport, seq = struct.unpack_from(">HHI", f, t)
        flags = f[t + 13]
        if dport != port:
            continue
        if flags & 0x12 == 0x02:
            isn = seq
            continue
        if cap != min(orig, snap):
            return f"a frame of {orig} B holds {cap} B, want {min(orig, snap)}"
        tot = struct.unpack_from(">H", f, 16)[0]
        pay = f[t + (f[t + 12] >> 4) * 4:14 + tot]
        if not pay:
            continue
        if isn is None:
            return "data before the SYN"
        o = (seq - isn - 1) % (1 << 32)
        want = bytes(((o + k) % size) % 251 for k in range(len(pay)))
        if pay != want:
            return f"payload at stream offset {o} ({len(pay)} B) is not loadgen's pattern"
        checked += 1
        nbytes += len(pay)
    if checked < 10:
        return f"only {checked} data frames to port {port} in {len(frames)} frames"
    return checked, nbytes


def check_tap(fn, kernel, probes_expected, need):
    """record --funcs ...,packet_rcv -- loadgen --tap lo: clones joined to their packets."""
    rc, js = rc_and_json(fn)
    if not probes_expected and rc != "0":
        # No function probes: record fails before recording, with one line.
        err = next((l[7:] for l in fn if l.startswith("stderr ")), "")
        need(rc == "2" and "--funcs cannot be recorded: " in err,
             f"funcs-tap without probes: want exit 2 and one line, got exit {rc}: {err}")
        return
    if not need(rc == "0" and len(js) == 4 and all(j is not None for j in js), f"funcs-tap: exit {rc}, {len(js)} JSON lines"):
        return
    lg, info, hs, pk = (unlisted(j) for j in js)
    tap = lg.get("tap") or {}
    src = next((x for x in info.get("sources", []) if x["layer"] == "func"), None)
    if not need(src is not None, "funcs-tap: no func source in the header"):
        return
    if not src["hooks"]:
        need(not probes_expected, f"funcs-tap: no function probes on {kernel}: {src}")
        return
    need(any(h.startswith("copies linked") for h in src["hooks"]), f"funcs-tap: copies not linked: {src}")
    frames = tap.get("frames")
    need(frames and tap.get("outgoing") == tap.get("incoming"), f"funcs-tap: the tap read {tap}")
    fn_of = lambda st: st["what"].split(" ")[0]
    n_rcv = sum(1 for p in pk for st in p.get("steps", []) if st["layer"] == "func" and fn_of(st) == "packet_rcv")
    need(n_rcv == frames, f"funcs-tap: {n_rcv} packet_rcv steps in packet paths, the tap read {frames} frames")
    syn = hs[0][0]["pkt_id"] if hs and hs[0] else None
    path = next((p for p in pk if p["pkt_id"] == syn), None)
    whats = [fn_of(st) for st in (path or {}).get("steps", []) if st["layer"] == "func"]
    rcv = [i for i, w in enumerate(whats) if w == "packet_rcv"]
    dev = whats.index("dev_hard_start_xmit") if "dev_hard_start_xmit" in whats else None
    need(len(rcv) == 2 and dev is not None and dev < rcv[0],
         f"funcs-tap: want two packet_rcv on the SYN's path, the first after dev_hard_start_xmit: {whats}")
    funcs_tap[kernel] = f"{n_rcv} packet_rcv steps in paths for {frames} tapped frames ({tap.get('outgoing')} out, {tap.get('incoming')} in); SYN: " + " -> ".join(whats[dev:] if dev is not None else whats)


def dumped_series(dm):
    """magnetd's series as the suite dumped them, one per line
    `<open|closed> magnet_connection_<name>{labels} value`: (when, name, labels,
    side, value), side the connection's end: "server" (local port 7001) or
    "client"."""
    for l in dm:
        m = re.match(r'(open|closed) magnet_connection_(\w+)\{(.*)\} (\d+)$', l)
        if not m:
            continue
        lab = dict(re.findall(r'(\w+)="([^"]*)"', m.group(3)))
        side = "server" if lab.get("local", "").endswith(":7001") else "client"
        yield m.group(1), m.group(2), lab, side, int(m.group(4))


def judge(path, ref_udp=None):
    s = sections(path)
    fails = []
    kernel = (s.get("kernel") or ["?"])[0]
    times = []
    for line in s.get("times", []):
        name, _, secs = line.rpartition(" ")
        try:
            times.append((name, float(secs)))
        except ValueError:
            pass
    if times:
        section_times[kernel] = times

    def need(cond, msg):
        if not cond:
            fails.append(msg)
        return cond

    # What each kernel offers (docs/kernel-notes.md, measured by hand) against
    # what magnet-kernel detects.
    chk = first_json(s.get("check", [])) or {}
    feats = {k: v.get("support") for k, v in (chk.get("kernel") or {}).items() if isinstance(v, dict)}
    expect = None
    if kernel.startswith("6.1.0-"):
        expect = {"fentry": "yes", "kprobe": "yes", "kprobe_multi": "no", "netfilter_link": "no", "tcx": "no"}
    elif kernel.startswith("6.12."):
        expect = {"fentry": "yes", "kprobe": "yes", "kprobe_multi": "yes", "netfilter_link": "yes", "tcx": "yes"}
    elif kernel.startswith("5.10."):
        expect = {"fentry": "yes", "kprobe": "yes", "kprobe_multi": "no", "netfilter_link": "no", "tcx": "no"}
    lack = lacks(kernel)
    if expect:
        need(feats == expect, f"detected {feats}, this kernel has {expect}")
    for k in chk.get("kinds", []):
        if k.get("default_on") and k["layer"] in DEFAULT_LAYERS:
            # An optional probe (io_uring's calls) may be left out, but only
            # with its reason named.
            need(bool(k.get("hook")) or (k.get("optional") and bool(k.get("missing"))),
                 f"record --check: no hook for {k['kind']}: {k.get('missing')}")

    rec = s.get("record", [])
    need("rc 0" in rec, f"record exited {[l for l in rec if l.startswith('rc ')]}, want rc 0")
    lg = first_json(s.get("loadgen", [])) or {}
    tcp, udp = lg.get("tcp") or {}, lg.get("udp") or {}
    need(
        (tcp.get("calls"), tcp.get("call_size"), tcp.get("failed_calls")) == (200, 16384, 0),
        f"loadgen tcp: {tcp.get('calls')} x {tcp.get('call_size')} ({tcp.get('failed_calls')} failed), want 200 x 16384",
    )
    need(
        (udp.get("calls"), udp.get("call_size"), udp.get("failed_calls")) == (100, 512, 0),
        f"loadgen udp: {udp.get('calls')} x {udp.get('call_size')}, want 100 x 512",
    )

    an = first_json(s.get("analyze", [])) or {}
    conns = an.get("connections", [])
    tcp_tx = [c for c in conns if c.get("protocol") == "tcp" and c["app"]["sent_calls"] > 0]
    tcp_rx = [c for c in conns if c.get("protocol") == "tcp" and c["app"]["recv_calls"] > 0]
    udp_tx = [c for c in conns if c.get("protocol") == "udp" and c["app"]["sent_calls"] > 0]
    table = {}
    if need(len(tcp_tx) == 1, f"{len(tcp_tx)} TCP sending sockets in the trace, want 1"):
        c = tcp_tx[0]
        need(
            (c["app"]["sent_calls"], c["app"]["sent_bytes"]) == (200, 200 * 16384),
            f"TCP app sends in the trace: {c['app']['sent_calls']} calls, {c['app']['sent_bytes']} B; want 200, 3276800",
        )
        r = rows(c)
        for k in [("tcp", "out"), ("ip", "out"), ("dev", "out")]:
            need(k in r and r[k][0] > 0, f"TCP sender has no {k[0]} {k[1]} row")
        # Segment counts follow timing (TCG, load); payload bytes do not.
        need(
            r.get(("tcp", "out"), (0, 0))[1] == 200 * 16384,
            f"TCP sender's tcp out: {r.get(('tcp', 'out'))}, want 3276800 B",
        )
        table.update({("tcp-tx",) + k: v for k, v in r.items()})
    if need(len(tcp_rx) == 1, f"{len(tcp_rx)} TCP receiving sockets, want 1"):
        c = tcp_rx[0]
        need(c["app"]["recv_bytes"] == 200 * 16384, f"TCP app received {c['app']['recv_bytes']} B, want 3276800")
        r = rows(c)
        for k in [("tcp", "in"), ("ip", "in"), ("dev", "in")]:
            need(k in r and r[k][0] > 0, f"TCP receiver has no {k[0]} {k[1]} row")
        need(
            r.get(("tcp", "in"), (0, 0))[1] == 200 * 16384,
            f"TCP receiver's tcp in: {r.get(('tcp', 'in'))}, want 3276800 B",
        )
        table.update({("tcp-rx",) + k: v for k, v in r.items()})
    udp_rows = None
    if need(len(udp_tx) == 1, f"{len(udp_tx)} UDP sending sockets, want 1"):
        c = udp_tx[0]
        need(
            (c["app"]["sent_calls"], c["app"]["sent_bytes"]) == (100, 51200),
            f"UDP app sends: {c['app']['sent_calls']} calls, {c['app']['sent_bytes']} B; want 100, 51200",
        )
        r = rows(c)
        udp_rows = {k: r.get(k) for k in [("ip", "out"), ("dev", "out")]}
        for k, v in udp_rows.items():
            need(v is not None, f"UDP sender has no {k[0]} {k[1]} row")
            if ref_udp is not None and v is not None:
                need(v == ref_udp.get(k), f"UDP {k[0]} {k[1]}: {v} (units, bytes), reference kernel {ref_udp.get(k)}")
        table.update({("udp-tx",) + k: v for k, v in r.items()})

    info = first_json(s.get("info", [])) or {}
    planned = {k["kind"]: k.get("hook") for k in chk.get("kinds", [])}
    for name, k in (info.get("kinds") or {}).items():
        need(bool(k.get("hook")), f"info: kind {name} names no hook")
        if name in planned:
            # A kind's records may come from several probes (an app call:
            # the syscall's exit, or io_uring's completion, stamped by the
            # socket hook): the planned hook must be among them.
            need(
                planned[name] is not None
                and set(planned[name].split("+")) <= set((k.get("hook") or "").split("+")),
                f"kind {name}: recorded from {k.get('hook')}, record --check said {planned[name]}",
            )
    srcs = {x["layer"]: x for x in info.get("sources", [])}
    for layer in DEFAULT_LAYERS:
        need(layer in srcs and srcs[layer]["hooks"], f"info: layer {layer} names no hook")

    for layer in ["app", "tcp", "ip", "qdisc", "dev", "drop", "sched"]:
        sec = s.get(f"layer {layer}", [])
        rc = next((l[3:] for l in sec if l.startswith("rc ")), "?")
        err = next((l[7:] for l in sec if l.startswith("stderr ")), "")
        li = first_json([l for l in sec if l.startswith("{")])
        want_missing = (lack.get("layers") or {}).get(layer)
        if want_missing:
            need(rc != "0" and want_missing in err and f"layer {layer}" in err,
                 f"--layers {layer}: this kernel lacks it ({want_missing}); exit {rc}, {err!r}")
        elif lack:
            need(rc == "0", f"--layers {layer}: must record on this kernel: exit {rc}, {err!r}")
        if rc == "0":
            src = [x for x in (li or {}).get("sources", []) if x["layer"] == layer]
            need(src and src[0]["hooks"], f"--layers {layer}: exit 0 but no hook named for it")
            if layer in MUST_SEE:
                n = ((li or {}).get("layers") or {}).get(layer, 0)
                need(n > 0, f"--layers {layer}: no {layer} event recorded")
        else:
            need(
                f"layer {layer}" in err and ":" in err,
                f"--layers {layer}: exit {rc} without a line naming the layer, hook and what is missing: {err!r}",
            )

    nm = s.get("named-missing", [])
    rc = next((l[3:] for l in nm if l.startswith("rc ")), "?")
    err = next((l[7:] for l in nm if l.startswith("stderr ")), "")
    lines = next((l[6:] for l in nm if l.startswith("lines ")), "?")
    if rc != "0":
        need(
            lines.strip() == "1"
            and "layer ip cannot be recorded" in err
            and "netfilter/LOCAL_OUT: " in err
            and "fexit/__ip_local_out" in err,
            f"--layers ip without function probes: exit {rc}, {lines} lines, want one naming the hooks: {err!r}",
        )
    named_missing[kernel] = err if rc != "0" else "recorded (netfilter links)"

    probes_expected = expect is not None and "funcs" not in lack
    for sec in ["funcs", "funcs--func-exits"]:
        check_funcs(sec, s.get(sec, []), kernel, probes_expected, need, lack.get("funcs"))
    check_tap(s.get("funcs-tap", []), kernel, probes_expected, need)

    fl = s.get("filter", [])
    rc = next((l[3:] for l in fl if l.startswith("rc ")), "?")
    if lack.get("filter"):
        # refused before recording, in one line naming what the kernel lacks
        need(rc.split(" ")[0] == "2" and lack["filter"] in rc and "magnet: error:" in rc,
             f"record -f on a kernel without {lack['filter']}: {rc!r}")
    elif need(rc.split(" ")[0] == "0", f"record -f 'udp port 5353': exit {rc}"):
        fi = first_json([l for l in fl if l.startswith("{")]) or {}
        kinds = fi.get("kinds") or {}
        for k in ["ip_local_out", "ip_local_in", "dev_start_xmit", "dev_rx"]:
            n = (kinds.get(k) or {}).get("events")
            need(n == 30, f"record -f 'udp port 5353': {k} {n}, want the 30 datagrams to 5353")
        app = (kinds.get("app_send") or {}).get("events")
        need(app == 55, f"record -f: app_send {app}, want 55 (30 + 20 + 5: app events are not filtered)")
    bad = dict(l.split(" ", 1) for l in fl if l.startswith("bad_") and " " in l)
    need(
        bad.get("bad_rc") == "2"
        and bad.get("bad_trace") == "none"
        and bad.get("bad_stderr") == "magnet: error: can't parse filter expression: syntax error",
        f"record -f with a bad expression: {bad}",
    )

    ns = s.get("netns", [])
    rc = next((l[3:] for l in ns if l.startswith("rc ")), "?")
    if need(rc.split(" ")[0] == "0", f"record --netns self: exit {rc}"):
        ni = first_json([l for l in ns if l.startswith("{")]) or {}
        kinds = ni.get("kinds") or {}
        for k in ["app_send", "ip_local_out", "ip_local_in", "dev_start_xmit", "dev_rx"]:
            n = (kinds.get(k) or {}).get("events")
            need(n == 30, f"record --netns self: {k} {n}, want the 30 datagrams")

    aa = s.get("all-app", [])
    rc = next((l[3:] for l in aa if l.startswith("rc ")), "?")
    if need(rc.split(" ")[0] == "0", f"record --all --layers app: exit {rc}"):
        js = [j for j in (first_json([l]) for l in aa if l.startswith("{")) if j]
        info = js[0] if js else {}
        app = next((x for x in info.get("sources", []) if x["layer"] == "app"), {})
        hook = (app.get("hooks") or [""])[0]
        # bpf_task_pt_regs: 5.15 and later.
        want = "{read,write," if kernel.startswith("5.10.") else "{sendfile64,splice,sendmmsg,recvmmsg}"
        need(hook.startswith("tracepoint/syscalls/sys_enter_" + want),
             f"record --all --layers app on {kernel}: app hooks {hook}, want sys_enter_{want}")
        sends = [j for j in js[1:] if j.get("kind") == "app_send"]
        got = sorted((j["asked"], j["ret"]) for j in sends)
        want_sends = sorted([(1000, 1000)] * 20 + [(100, 100)] * 10)
        need(got == want_sends,
             f"record --all --layers app: loadgen's sends {got}, want 20 of 1000 B and 10 of 100 B")

    sn = s.get("snaplen", [])
    rc = next((l[3:] for l in sn if l.startswith("rc ")), "?")
    if need(rc.split(" ")[0] == "0", f"record --snaplen 2048: exit {rc}"):
        b64 = next((l[7:] for l in sn if l.startswith("pcapng ")), "")
        res = check_snaplen(base64.b64decode(b64 + "=" * (-len(b64) % 4)), 2048, 7329, 16384)
        if isinstance(res, str):
            need(False, f"record --snaplen 2048: {res}")
        else:
            snaplen_seen[kernel] = res

    if "daemon" in s:
        dm = s["daemon"]
        ready = "ready 1" in dm
        # Kernels without the sock_send_length/sock_recv_length tracepoints
        # (6.1, 5.10) take the app part from fexit on inet(6)_sendmsg and
        # _recvmsg (6.1: exact app bytes as elsewhere); where that is refused
        # too (5.10: bpf_get_socket_cookie in tracing programs is 5.12+),
        # magnetd runs without its app part, says so in one line, and serves
        # no app series (not zeros); the wire counters stay exact.
        app_missing = kernel.startswith("5.10.")
        leftout = [l for l in dm if l.startswith("leftout ")]
        if lack.get("daemon") and not ready:
            # refused in one line (an error naming what is missing), exit 2
            err = next((l for l in dm if l.startswith("stderr ")), "")
            need("rc 2" in dm and err.startswith("stderr magnet: error:") and ":" in err[20:],
                 f"magnetd on {kernel} neither started nor said in one line what is missing: {dm}")
        elif need(ready, f"magnetd did not start: {dm}"):
            need("rc 0" in dm, f"magnetd after SIGTERM: {[l for l in dm if l.startswith('rc ')]}, want rc 0")
            # packet_hooks = "sampled" (the default): ~12 s of 100 ms windows every 2 s
            w = next((l for l in dm if l.startswith("windows ")), "")
            wm = re.search(r"sampling windows: (\d+) opened \((\d+) failed\)", w)
            need(wm is not None and int(wm.group(1)) >= 3 and wm.group(2) == "0",
                 f"magnetd's sampled windows: {w!r}, want at least 3 opened, 0 failed")
            # (when, side, app|wire, direction) -> bytes; (when, side) -> retransmissions;
            # the open connections' live layer table (side, layer, direction) -> bytes
            # and send-latency method per side
            got = {}
            retransmits = {}
            layer_rows = {}
            methods = {}
            for when, name, lab, side, v in dumped_series(dm):
                if name in ("app_bytes_total", "wire_bytes_total"):
                    got[(when, side, name.split("_")[0], lab.get("direction"))] = v
                elif name == "retransmits_total":
                    retransmits[(when, side)] = v
                elif when == "open" and name == "layer_bytes_total":
                    layer_rows[(side, lab.get("layer"), lab.get("direction"))] = v
                elif when == "open" and name == "send_latency_method":
                    methods[side] = lab.get("method")
            if app_missing:
                need(any("app left out" in l and "sock_send_length" in l for l in leftout),
                     f"magnetd on {kernel} does not name the app part it left out: {leftout}")
                need(not any(k[2] == "app" for k in got),
                     f"magnetd on {kernel} serves app series with no app part: {sorted(got)}")
            want = {
                # open: the iterator copies the sockets' own counters
                ("open", "client", "app", "tx"): 30000,
                ("open", "client", "wire", "tx"): 30000,
                ("open", "server", "app", "rx"): 30000,
                ("open", "server", "wire", "rx"): 30000,
                # closed: the counters copied at close; bytes_received counts the FIN
                ("closed", "client", "wire", "tx"): 30000,
                ("closed", "server", "wire", "rx"): 30001,
            }
            for k, v in want.items():
                if app_missing and k[2] == "app":
                    continue
                # wire tx is bytes_sent, retransmissions included: a slow emulated
                # guest can retransmit on loopback (more so with another guest
                # beside it). Then the client's own count of them (tcp_retransmit_skb)
                # must say so, and each added at most the 30 000 B written.
                r = retransmits.get((k[0], k[1]), 0)
                if k[2] == "wire" and k[3] == "tx" and r > 0:
                    need(got.get(k) is not None and v < got[k] <= v + 30000 * r,
                         f"magnetd {' '.join(k)} bytes {got.get(k)} with {r} retransmissions, "
                         f"want above {v} and at most {v + 30000 * r}")
                    continue
                need(got.get(k) == v, f"magnetd {' '.join(k)} bytes {got.get(k)}, want {v}"
                     + (f" ({r} retransmissions)" if k[2] == "wire" else ""))
            # The live layer table: app rows (where the app part loads) and tcp
            # rows of the same connection, bytes each way.
            want_rows = {("server", "tcp", "in"): 30000}
            if not app_missing:
                want_rows.update({("client", "app", "out"): 30000, ("server", "app", "in"): 30000})
            for k, v in want_rows.items():
                need(layer_rows.get(k) == v, f"magnetd layer table {' '.join(k)} bytes {layer_rows.get(k)}, want {v}")
            # tcp out is the kernel's bytes_sent: retransmissions included (a slow
            # emulated guest can retransmit on loopback)
            need((layer_rows.get(("client", "tcp", "out")) or 0) >= 30000,
                 f"magnetd layer table client tcp out bytes {layer_rows.get(('client', 'tcp', 'out'))}, want >= 30000")
            # Send-path latency: the TX timestamp callbacks where the kernel has
            # them, else the sampled method, named per connection.
            want_method = "sampled" if lack.get("tx_timestamps") else "tx_timestamps"
            need(methods and all(v == want_method for v in methods.values()),
                 f"magnetd's send latency method on {kernel}: {methods}, want {want_method}")
            if lack.get("tx_timestamps"):
                need(any("stack_latency" in l for l in leftout) or any("stack_latency" in l for l in dm),
                     f"magnetd on {kernel} does not name the send stages it could not time: {leftout}")

    if "leftovers" in s:
        lo = dict(l.split(" ", 1) for l in s["leftovers"] if " " in l)
        need(lo.get("rc") == "0", f"recording every layer and kind exited {lo.get('rc')}")
        need((lo.get("sample_rc") or "?").split(" ")[0] == "0", f"magnet sample -i lo: {lo.get('sample_rc')}")
        # kill -9 of a sampler: on the clsact path (no TCX) it leaves its qdisc
        # and filters, and the next start removes them; with TCX nothing is left.
        killed = lo.get("killed_attach")
        need(killed in ("clsact", "tcx"), f"the sampler to kill did not start: {killed}")
        if killed == "clsact":
            need(lo.get("killed_left") == "1", f"kill -9 left no clsact qdisc to clean: {lo.get('killed_left')}")
            need(lo.get("sample_cleaned") == "1", "the next sampler start did not remove what the killed one left")
        elif killed == "tcx":
            need(lo.get("killed_left") == "0", f"kill -9 on TCX left a clsact qdisc: {lo.get('killed_left')}")
            need(lo.get("sample_cleaned") == "0", "a sampler start after a TCX run removed something")
        for k in ["link_fds", "kprobe_events", "pinned", "clsact"]:
            need(lo.get(k) == "0", f"left behind after detach: {k} = {lo.get(k)}")
    need("end" in s, "the suite did not finish")
    return kernel, fails, udp_rows, table


def judge_preempt(path):
    """scripts/lab/preempt.sh's output (a guest booted with preempt=full): the
    recorder wrote records one at a time, saying why, and counted every
    datagram at LOCAL_OUT and at LOCAL_IN, losing none."""
    fails = []

    def need(ok, msg):
        if not ok:
            fails.append(msg)
        return ok

    sec = sections(path).get("preempt", [])
    line = {l.split(" ", 1)[0]: (l.split(" ", 1) + [""])[1] for l in sec}
    need("(full)" in line.get("mode", ""), f"the guest's preemption mode: {line.get('mode')!r}, want full")
    need(line.get("rc") == "0", f"record exited {line.get('rc')}: {line.get('stderr')}")
    sent = [int(x.split(":")[1]) for x in line.get("sent", "").split()]
    need(sent == [100000] * 3, f"loadgen's calls {sent}, want 3 x 100000")
    try:
        j = json.loads(line.get("summary") or "{}")
    except ValueError:
        j = {}
    kinds = j.get("by_kind") or {}
    total = sum(sent)
    for k in ("ip_local_out", "ip_local_in"):
        need(kinds.get(k) == total, f"{k} records {kinds.get(k)}, want {total} (one per datagram)")
    need(j.get("lost_kernel") == 0 and j.get("dropped_user") == 0,
         f"lost {j.get('lost_kernel')}, dropped {j.get('dropped_user')}, want none")
    why = (j.get("cost") or {}).get("direct_records") or ""
    need("preemption model full" in why,
         f"the summary's cost does not say records went one at a time on a preempting kernel: {why!r}")
    need("end" in sections(path), "preempt.sh did not finish")
    return "6.12 preempt=full", fails, {}


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--preempt=")]
    preempt = [a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--preempt=")]
    if len(args) < 2:
        sys.exit("usage: check.py REFERENCE.txt GUEST.txt... [--preempt=PREEMPT.txt]")
    kernel, fails, ref_udp, ref_table = judge(args[0])
    results = [(kernel, fails, ref_table)]
    for p in args[1:]:
        k, f, _, t = judge(p, ref_udp)
        results.append((k, f, t))
    for p in preempt:
        results.append(judge_preempt(p))
    keys = sorted({k for _, _, t in results for k in t})
    print("rows (units / bytes) " + " | ".join(k for k, _, _ in results))
    for key in keys:
        cells = []
        for _, _, t in results:
            v = t.get(key)
            cells.append(f"{v[0]} / {v[1]}" if v else "-")
        print(f"  {' '.join(key):<16} " + " | ".join(cells))
    for k, line in named_missing.items():
        print(f"--layers ip, fentry denied, on {k}: {line}")
    for k, line in funcs_path.items():
        print(f"record --funcs, the SYN's path on {k}: {line}")
    for k, line in funcs_in.items():
        print(f"record --funcs --func-exits, time in (TCG) on {k}: {line}")
    for k, n in funcs_nested.items():
        print(f"record --funcs --func-exits, recursive calls paired (nested, same function and CPU) on {k}: {n}")
    for k, (n, b) in snaplen_seen.items():
        print(f"record --snaplen 2048 on {k}: {n} data frames, {b} payload bytes, all loadgen's pattern")
    for k, line in funcs_tap.items():
        print(f"record --funcs, packet-tap clones on {k}: {line}")
    for k, times in section_times.items():
        slowest = sorted(times, key=lambda t: -t[1])[:4]
        print(f"suite time on {k}: {sum(t for _, t in times):.0f} s; slowest: "
              + ", ".join(f"{n} {t:.0f} s" for n, t in slowest))
    bad = 0
    for k, f, _ in results:
        if f:
            bad += 1
            for msg in f:
                print(f"FAIL {k}: {msg}")
        else:
            print(f"ok   {k}")
    print(f"lab: {len(results) - bad} passed, {bad} failed")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
