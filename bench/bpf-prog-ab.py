#!/usr/bin/env python3
"""Two builds of magnet side by side: per-program kernel cost (issue 13).

Runs bench/bpf-prog-stats.py (iperf3 over veth, per-program BPF statistics of the
recorder only, empty programs on the same hooks) with build A and build B, alternated
for ROUNDS rounds (A B, B A, A B, ...), and prints per program the median ns/run of
each build, B - A, and runs per veth packet; then throughput, records and loss.

Programs that run per event (dev_rx, tcp_rcv, ...) carry the per-event cost; a
program only one build has (batch_tick) shows with its run count.

Usage (root): bench/bpf-prog-ab.py --a /path/magnet-before --b /path/magnet-after
              [--rounds 3] [--secs 4] [--gso] [--tcp-state]
A difference of medians on a loaded host jitters by about +-20 ns.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--a", required=True, help="build A (before)")
    ap.add_argument("--b", required=True, help="build B (after)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--secs", type=int, default=4)
    ap.add_argument("--gso", action="store_true")
    ap.add_argument("--tcp-state", action="store_true")
    a = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    runs = {"A": [], "B": []}
    for r in range(a.rounds):
        order = ["A", "B"] if r % 2 == 0 else ["B", "A"]
        for v in order:
            cmd = [sys.executable, f"{here}/bpf-prog-stats.py", "--magnet", a.a if v == "A" else a.b,
                   "--secs", str(a.secs), "--json", "--label", v]
            if a.gso:
                cmd.append("--gso")
            if a.tcp_state:
                cmd.append("--tcp-state")
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            runs[v].append(json.loads(out.strip().splitlines()[-1]))
            print(f"round {r + 1} {v}: {runs[v][-1]['gbps']} Gbit/s", file=sys.stderr)

    def med(v, f):
        xs = [x for x in (f(run) for run in runs[v]) if x is not None]
        return statistics.median(xs) if xs else None

    def prog(v, p, key):
        return med(v, lambda run: run["programs"].get(p, {}).get(key))

    names = sorted({p for v in runs for run in runs[v] for p in run["programs"] if not p.startswith("(empty)")})
    mode = "gso" if a.gso else "mtu"
    print(f"## BPF statistics, A = {a.a}, B = {a.b}: iperf3 {a.secs} s over veth ({mode}"
          f"{', --tcp-state' if a.tcp_state else ''}), {a.rounds} rounds alternated, medians\n")
    print("| program | A ns/run | B ns/run | B - A | A runs/pkt | B runs/pkt |")
    print("|---|---:|---:|---:|---:|---:|")
    for p in names:
        na, nb = prog("A", p, "ns"), prog("B", p, "ns")
        pa = med("A", lambda run: run["programs"].get(p, {}).get("runs", 0) / max(1, run["veth_packets"]))
        pb = med("B", lambda run: run["programs"].get(p, {}).get("runs", 0) / max(1, run["veth_packets"]))
        f = lambda x, d=0: "–" if x is None else f"{x:.{d}f}"
        diff = "–" if na is None or nb is None else f"{nb - na:+.0f}"
        print(f"| {p} | {f(na)} | {f(nb)} | {diff} | {f(pa, 3)} | {f(pb, 3)} |")
    print()
    for v in ("A", "B"):
        print(f"{v}: {med(v, lambda r: r['gbps']):.2f} Gbit/s, empty programs {med(v, lambda r: r['empty_ns_median']):.0f} ns, "
              f"records {med(v, lambda r: r['records']):,.0f}, lost {med(v, lambda r: r['lost']):,.0f}, "
              f"{med(v, lambda r: r['bytes_per_record'])} B/record")


if __name__ == "__main__":
    main()
