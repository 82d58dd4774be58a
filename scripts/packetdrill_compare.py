#!/usr/bin/env python3
"""Compares one packetdrill run's trace with its oracles (scripts/packetdrill.sh).

    packetdrill_compare.py ANALYZE_JSON CAPTURE_PCAP RETRANS_SEGS RETRANS_FAIL [ALLOWED]
    packetdrill_compare.py --table RESULTS_TSV    (docs/packetdrill.md's table)

ANALYZE_JSON is `magnet analyze --json` of the trace; CAPTURE_PCAP a LINUX_SLL2
capture (tcpdump -i any -y LINUX_SLL2 tcp) of the run's namespace; RETRANS_SEGS and
RETRANS_FAIL the deltas of the namespace's TcpRetransSegs and TcpExtTCPRetransFail.

The capture holds TCP frames only, so magnet's side is the sum over its TCP
connections (listeners included) of each layer's rows: ip in/out (IP packets and
their bytes) and dev in/out (frames; a tun device has no link-layer header, so a
frame's bytes are its IP bytes). A frame magnet could not attribute is in no
connection and shows as a shortfall.

One difference is the stack's, not magnet's: ip out counts what IP sends
(LOCAL_OUT), before GSO; when the device cannot take a GSO packet whole (tun's
MTU after a probe, its GSO limits), the capture and dev out see its segments,
each with its own headers. Such an ip out row is exact when its bytes equal the
capture's minus one header for each frame it has fewer, every data frame of the
capture having the same header length.

ALLOWED: comma-separated keys (ip-in, ip-out, dev-in, dev-out, retrans) whose
mismatch an exception explains (scripts/packetdrill-exceptions.txt).

Prints `exact` or the mismatches in one line; exit 0 when exact, 1 on a
mismatch, 4 when every mismatch is an allowed one, 2 when an input cannot be read.
"""
import json
import struct
import sys

SLL2_LEN = 20
PACKET_OUTGOING = 4


def capture_counts(path):
    """{(dir): [frames, ip_bytes]} of a LINUX_SLL2 pcap."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        raise ValueError(f"{path}: no pcap header ({len(data)} bytes)")
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        endian = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        endian = ">"
    else:
        raise ValueError(f"{path}: not a pcap file (magic {magic.hex()})")
    linktype = struct.unpack(endian + "I", data[20:24])[0]
    if linktype != 276:
        raise ValueError(f"{path}: link type {linktype}, want LINUX_SLL2 (276)")
    counts = {"in": [0, 0], "out": [0, 0]}
    frames = []
    # Header lengths (IP + TCP) of the outgoing frames that carry data.
    counts["out_data_headers"] = set()
    off = 24
    while off + 16 <= len(data):
        _, _, incl, orig = struct.unpack(endian + "IIII", data[off:off + 16])
        rec = data[off + 16:off + 16 + incl]
        off += 16 + incl
        if len(rec) < SLL2_LEN:
            raise ValueError(f"{path}: a record of {len(rec)} bytes, shorter than its SLL2 header")
        d = "out" if rec[10] == PACKET_OUTGOING else "in"
        frames.append((d, orig - SLL2_LEN, rec[SLL2_LEN:]))
    # IPv4 addresses of the run: to know packetdrill's mangled IPv6 frames.
    v4 = {ip[12:16] for _, _, ip in frames if len(ip) >= 20 and ip[0] >> 4 == 4}
    v4 |= {ip[16:20] for _, _, ip in frames if len(ip) >= 20 and ip[0] >> 4 == 4}
    counts["stray"] = {"in": [0, 0], "out": [0, 0]}
    for d, size, ip in frames:
        if mangled_v6(ip, v4):
            counts["stray"][d][0] += 1
            counts["stray"][d][1] += size
            continue
        counts[d][0] += 1
        counts[d][1] += size
        hdr = ip_tcp_header_len(ip)
        if d == "out" and hdr is not None and size > hdr:
            counts["out_data_headers"].add(hdr)
    return counts


def mangled_v6(ip, v4):
    """Whether an IPv6 frame carries the run's IPv4 addresses in the first 4
    bytes of its IPv6 addresses, zeros after (192.0.2.1 as c000:201::). In its
    ipv4-mapped-ipv6 mode packetdrill ends a script by injecting a RST per
    connection built so (upstream's, not the kernel's); no socket has such an
    address, the kernel drops it before IP delivers it, and magnet counts its
    dev_rx record in `unattributed`: such frames are compared with that count,
    not with the connections'."""
    if len(ip) < 40 or ip[0] >> 4 != 6:
        return False
    src, dst = ip[8:24], ip[24:40]
    zero = bytes(12)
    return all(a[:4] in v4 and a[4:] == zero for a in (src, dst))


def ip_tcp_header_len(ip):
    """IP + TCP header length of a captured IPv4/IPv6 TCP packet, None if cut short."""
    if len(ip) < 1:
        return None
    version = ip[0] >> 4
    if version == 4:
        iphl = (ip[0] & 0x0F) * 4
    elif version == 6:
        iphl = 40
    else:
        return None
    if len(ip) < iphl + 13:
        return None
    return iphl + (ip[iphl + 12] >> 4) * 4


def magnet_counts(j):
    """{(layer, dir): [units, bytes]} over the trace's TCP connections, and retrans_segs."""
    sums = {(l, d): [0, 0] for l in ("ip", "dev") for d in ("in", "out")}
    retrans = 0
    failed = 0
    for c in j.get("connections", []):
        if c.get("protocol") != "tcp":
            continue
        for m in c.get("modulation", []):
            key = (m.get("layer"), m.get("dir"))
            if key in sums:
                sums[key][0] += m.get("units") or 0
                sums[key][1] += m.get("bytes") or 0
        tcp = c.get("tcp") or {}
        retrans += tcp.get("retrans_segs") or 0
        failed += tcp.get("retrans_failed") or 0
    return sums, retrans, failed


def gso_explains(layer, d, units, nbytes, cap):
    """Whether ip out's fewer packets are GSO packets the device got as segments."""
    frames, cbytes = cap["out"]
    headers = cap["out_data_headers"]
    if (layer, d) != ("ip", "out") or units >= frames or len(headers) != 1:
        return False
    return cbytes - nbytes == (frames - units) * next(iter(headers))


def compare(j, cap, segs, fail):
    """The mismatches as (key, text), first the layers' then the retransmissions'."""
    out = []
    lost = j.get("trace", {}).get("lost_events", 0)
    if lost:
        out.append(("lost", f"recorder lost {lost} events"))
    sums, retrans, failed = magnet_counts(j)
    for layer in ("ip", "dev"):
        for d in ("in", "out"):
            mu, mb = sums[(layer, d)]
            cu, cb = cap[d]
            if (mu, mb) != (cu, cb) and not gso_explains(layer, d, mu, mb, cap):
                out.append((f"{layer}-{d}", f"{layer} {d}: magnet {mu} units/{mb} B, capture {cu}/{cb} B"))
    # The kernel adds a try's segments to TcpRetransSegs before handing it down,
    # so a try the layers below refused is in TcpRetransSegs and TCPRetransFail
    # though nothing was sent (docs/analyze.md; retrans_live.rs).
    explained = retrans <= segs <= retrans + fail and (segs == retrans or failed > 0)
    if retrans != segs and not explained:
        out.append(("retrans", f"retrans_segs {retrans}, TcpRetransSegs {segs} (TCPRetransFail {fail})"))
    un_all = j.get("trace", {}).get("unattributed", {})
    for d, kind in (("in", "dev_rx"), ("out", "dev_tx")):
        n = cap["stray"][d][0]
        if n > (un_all.get(kind) or 0):
            out.append((f"dev-{d}", f"{n} packetdrill frames of no socket ({d}), magnet's unattributed {kind} {un_all.get(kind) or 0}"))
    if out:
        un = {k: v for k, v in un_all.items() if v}
        if un:
            out[-1] = (out[-1][0], out[-1][1] + " (unattributed: "
                       + ", ".join(f"{k} {v}" for k, v in sorted(un.items())) + ")")
    return out


def table(path):
    """results.tsv as markdown: one row per script, a column per IP version,
    then the reasons of the runs that are not exact."""
    rows, notes, variants = {}, [], []
    with open(path) as f:
        for line in f:
            script, variant, result, detail = (line.rstrip("\n").split("\t") + [""])[:4]
            rows.setdefault(script, {})[variant] = result
            if variant not in variants:
                variants.append(variant)
            if result != "exact" and detail:
                notes.append((script, variant, result, detail))
    out = ["| script | " + " | ".join(variants) + " |", "|---|" + "---|" * len(variants)]
    for script in sorted(rows):
        out.append(f"| {script} | " + " | ".join(rows[script].get(v, "–") for v in variants) + " |")
    out.append("")
    out.append("Why each run that is not exact is not:")
    out.append("")
    for script, variant, result, detail in notes:
        detail = detail.split(" (excepted: ")[0].replace("|", "\\|")
        out.append(f"- `{script}` {variant}: {result}: {detail}")
    return "\n".join(out)


def main(argv):
    if len(argv) == 3 and argv[1] == "--table":
        try:
            print(table(argv[2]))
        except OSError as e:
            print(f"packetdrill_compare: {e}", file=sys.stderr)
            return 2
        return 0
    if len(argv) not in (5, 6):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    try:
        with open(argv[1]) as f:
            j = json.load(f)
        cap = capture_counts(argv[2])
        segs, fail = int(argv[3]), int(argv[4])
    except (OSError, ValueError) as e:
        print(f"packetdrill_compare: {e}", file=sys.stderr)
        return 2
    allowed = set(argv[5].split(",")) if len(argv) == 6 else set()
    bad = compare(j, cap, segs, fail)
    print("exact" if not bad else "; ".join(text for _, text in bad))
    if not bad:
        return 0
    return 4 if all(key in allowed for key, _ in bad) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
