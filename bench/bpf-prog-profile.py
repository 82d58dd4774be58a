#!/usr/bin/env python3
"""Where each nanosecond of the recorder's BPF programs goes (issue 13).

Runs bench/bpf-prog-stats.py (iperf3 over veth, per-program BPF statistics, empty
programs on the same hooks) with four builds of magnet, alternated for ROUNDS rounds,
and prints per program the median ns/run of each stage, as differences:

    empty   the empty program on the same hook (trampoline + the statistics' clock reads)
    filter  MG_PROF=1: the program up to its ring reservation (filters, map lookups,
            parsing, packet id), minus empty
    header  MG_PROF=2 - MG_PROF=1: the header (clock, pid/tid, CPU)
    ring    MG_PROF=3 - MG_PROF=2: the ring reservation, wake-up query and commit
    fields  full - MG_PROF=3: the record's own field reads and stores

Build the variants first (each a release build; MAGNET_BPF_CFLAGS passes the define):

    for n in 1 2 3; do MAGNET_BPF_CFLAGS=-DMG_PROF=$n cargo build --release -p magnet-cli &&
      cp target/release/magnet /tmp/magnet-p$n; done
    cargo build --release -p magnet-cli && cp target/release/magnet /tmp/magnet-p0

Usage (root): bench/bpf-prog-profile.py [--bins /tmp/magnet-p] [--rounds 3] [--secs 4]
              [--gso] [--tcp-state]
Differences of medians from a loaded host are noisy (±20 ns); a negative stage is noise.
"""
import argparse, json, os, statistics, subprocess, sys

HOT = ["dev_start_xmit", "dev_rx", "tcp_rcv", "tcp_sendmsg", "ip_local_out", "ip_local_in",
       "app_send", "app_recv", "app_sys_enter", "flow_sys_exit", "pkt_consume"]
EMPTY_OF = {"dev_start_xmit": "net_dev_start_xmit", "dev_rx": "netif_receive_skb",
            "tcp_rcv": "tcp_probe", "tcp_sendmsg": "tcp_sendmsg_locked",
            "app_send": "sock_send_length", "app_recv": "sock_recv_length",
            "app_sys_enter": "sys_enter", "flow_sys_exit": "sys_enter", "pkt_consume": "consume_skb"}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bins", default="/tmp/magnet-p", help="variant binaries are BINS0..BINS3")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--secs", type=int, default=4)
    ap.add_argument("--gso", action="store_true")
    ap.add_argument("--tcp-state", action="store_true")
    a = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    runs = {v: [] for v in range(4)}
    for r in range(a.rounds):
        for v in range(4):
            cmd = [sys.executable, f"{here}/bpf-prog-stats.py", "--magnet", f"{a.bins}{v}", "--secs",
                   str(a.secs), "--json", "--label", f"p{v}"]
            if a.gso:
                cmd.append("--gso")
            if a.tcp_state:
                cmd.append("--tcp-state")
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            runs[v].append(json.loads(out.strip().splitlines()[-1]))
            print(f"round {r + 1} p{v}: {runs[v][-1]['gbps']} Gbit/s", file=sys.stderr)

    def med(v, prog):
        xs = [x["programs"][prog]["ns"] for x in runs[v] if prog in x["programs"]]
        return statistics.median(xs) if xs else None

    full = runs[0]
    recs = statistics.median(x["records"] for x in full)
    bpr = statistics.median(x["bytes_per_record"] for x in full)
    pkts = statistics.median(x["veth_packets"] for x in full)
    print(f"## Cost profile, {a.rounds} rounds alternated, {'gso' if a.gso else 'mtu'}"
          f"{' --tcp-state' if a.tcp_state else ''}, medians (ns per run)\n")
    print(f"full build: {recs:,.0f} records, {bpr:.1f} B/record, {recs / max(pkts, 1):.2f} records per veth packet\n")
    print("| program | runs/packet | empty | filter | header | ring | fields | total above empty |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for p in HOT:
        e = med(0, f"(empty) {EMPTY_OF.get(p, 'netif_receive_skb')}") if p in EMPTY_OF else None
        if p in ("ip_local_out", "ip_local_in"):
            e = 0.0  # no empty netfilter program: stages above the program's own entry
        s = [med(v, p) for v in (1, 2, 3, 0)]
        if e is None or any(x is None for x in s):
            continue
        runs_pp = statistics.median(x["programs"][p]["runs"] for x in full if p in x["programs"]) / max(pkts, 1)
        f, h, rg, fl = s[0] - e, s[1] - s[0], s[2] - s[1], s[3] - s[2]
        print(f"| {p} | {runs_pp:.2f} | {e:.0f} | {f:.0f} | {h:.0f} | {rg:.0f} | {fl:.0f} | {s[3] - e:.0f} |")
    print("\n(ip_local_out/in: netfilter programs have no empty twin here; their 'filter' includes"
          " the hook's own entry cost.)")


if __name__ == "__main__":
    main()
