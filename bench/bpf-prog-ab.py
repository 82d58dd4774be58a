#!/usr/bin/env python3
"""Two (or more) builds of magnet side by side: per-program kernel cost.

Runs bench/bpf-prog-stats.py (iperf3 over veth, per-program BPF statistics of the
recorder only, empty programs on the same hooks) with build A and build B, alternated
for ROUNDS rounds (A B, B A, A B, ...), and prints per program the median ns/run of
each build, B - A, and runs per veth packet; then throughput, records and loss.
With --case NAME=BIN (repeated) instead of --a/--b, every case runs once per round,
the order reversed every other round, and each column is set against the first case.

Programs that run per event (dev_rx, tcp_rcv, ...) carry the per-event cost; a
program only one build has (batch_tick) shows with its run count.

Usage (root): bench/bpf-prog-ab.py --a /path/magnet-before --b /path/magnet-after
              [--rounds 3] [--secs 4] [--gso] [--tcp-state]
              bench/bpf-prog-ab.py --case old=BIN --case mid=BIN --case new=BIN [...]
A difference of medians on a loaded host jitters by about +-20 ns.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

benchlib.need('bpf-prog-ab', 'iperf3')


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--a", help="build A (before)")
    ap.add_argument("--b", help="build B (after)")
    ap.add_argument("--case", action="append", default=[], help="NAME=BIN (instead of --a/--b)")
    ap.add_argument("--raw", help="also append every run's JSON line (with its case name) to this file")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--secs", type=int, default=4)
    ap.add_argument("--gso", action="store_true")
    ap.add_argument("--tcp-state", action="store_true")
    a = ap.parse_args()
    bins = {}
    for c in a.case:
        name, sep, path = c.partition("=")
        if not sep or not name or not path:
            sys.exit(f"bpf-prog-ab: --case '{c}': expected NAME=BIN")
        bins[name] = path
    if a.case and (a.a or a.b):
        sys.exit("bpf-prog-ab: --case or --a/--b, not both")
    if not a.case:
        if not (a.a and a.b):
            sys.exit("bpf-prog-ab: needs --a and --b, or --case NAME=BIN at least twice")
        bins = {"A": a.a, "B": a.b}
    if len(bins) < 2:
        sys.exit("bpf-prog-ab: needs at least two cases")
    here = os.path.dirname(os.path.abspath(__file__))
    cases = list(bins)
    runs = {v: [] for v in cases}
    for r in range(a.rounds):
        order = cases if r % 2 == 0 else cases[::-1]
        for v in order:
            cmd = [sys.executable, f"{here}/bpf-prog-stats.py", "--magnet", bins[v],
                   "--secs", str(a.secs), "--json", "--label", v]
            if a.gso:
                cmd.append("--gso")
            if a.tcp_state:
                cmd.append("--tcp-state")
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            runs[v].append(json.loads(out.strip().splitlines()[-1]))
            if a.raw:
                with open(a.raw, "a") as fh:
                    fh.write(json.dumps({"case": v, "round": r + 1, **runs[v][-1]}) + "\n")
            print(f"round {r + 1} {v}: {runs[v][-1]['gbps']} Gbit/s", file=sys.stderr)

    def med(v, f):
        xs = [x for x in (f(run) for run in runs[v]) if x is not None]
        return statistics.median(xs) if xs else None

    def prog(v, p, key):
        return med(v, lambda run: run["programs"].get(p, {}).get(key))

    def per_packet(run, base=0.0):
        """All of this recorder's BPF time per veth packet (runs x ns/run summed)."""
        return sum(x["runs"] * (x["ns"] - base) for p, x in run["programs"].items()
                   if not p.startswith("(empty)")) / max(1, run["veth_packets"])

    names = sorted({p for v in runs for run in runs[v] for p in run["programs"] if not p.startswith("(empty)")})
    mode = "gso" if a.gso else "mtu"
    f = lambda x, d=0: "–" if x is None else f"{x:.{d}f}"
    first = cases[0]
    print(f"## BPF statistics, {', '.join(f'{v} = {bins[v]}' for v in cases)}: iperf3 {a.secs} s over veth ({mode}"
          f"{', --tcp-state' if a.tcp_state else ''}), {a.rounds} rounds alternated, medians\n")
    print("| program | " + " | ".join(f"{v} ns/run" for v in cases) + " | "
          + " | ".join(f"{v} - {first}" for v in cases[1:]) + " | "
          + " | ".join(f"{v} runs/pkt" for v in cases) + " |")
    print("|---|" + "---:|" * (3 * len(cases) - 1))
    for p in names:
        ns = [prog(v, p, "ns") for v in cases]
        per = [med(v, lambda run: run["programs"].get(p, {}).get("runs", 0) / max(1, run["veth_packets"]))
               for v in cases]
        diffs = ["–" if ns[0] is None or x is None else f"{x - ns[0]:+.0f}" for x in ns[1:]]
        print(f"| {p} | " + " | ".join(f(x) for x in ns) + " | " + " | ".join(diffs) + " | "
              + " | ".join(f(x, 3) for x in per) + " |")
    print()
    for v in cases:
        print(f"{v}: {med(v, lambda r: r['gbps']):.2f} Gbit/s, empty programs {med(v, lambda r: r['empty_ns_median']):.0f} ns, "
              f"records {med(v, lambda r: r['records']):,.0f}, lost {med(v, lambda r: r['lost']):,.0f}, "
              f"{med(v, lambda r: r['bytes_per_record'])} B/record, "
              f"records/packet {med(v, lambda r: r['records'] / max(1, r['veth_packets'])):.2f}, "
              f"BPF ns per packet {med(v, per_packet):.0f} (above the empty programs "
              f"{med(v, lambda r: per_packet(r, r['empty_ns_median'])):.0f})")

if __name__ == "__main__":
    main()
