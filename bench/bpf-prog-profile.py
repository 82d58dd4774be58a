#!/usr/bin/env python3
"""Where each nanosecond of the recorder's BPF programs goes.

Runs bench/bpf-prog-stats.py (iperf3 over veth, per-program BPF statistics) with five
builds of magnet, alternated for ROUNDS rounds, and prints per program the median
ns/run of each stage, as differences between builds (magnet-record batch.bpf.c, "Cost profile builds"):

    floor   MG_PROF=9: the same program returning at entry, on the same hook (trampoline,
            the program call and the statistics' own clock reads); netfilter programs too
    filter  MG_PROF=1 - floor: the program up to its reservation (filters, map lookups,
            parsing, the packet id where it is taken before reserving)
    header  MG_PROF=2 - MG_PROF=1: the header (clock, pid/tid, CPU) into a stack copy
    batch   MG_PROF=3 - MG_PROF=2: room in the per-CPU batch, the header written there,
            the commit, and the batch's bpf_ringbuf_output when full or 1 ms old
    fields  full - MG_PROF=3: the record's own field reads and stores (incl. the packet
            id where it is taken after reserving: tcp_rcv, tcp_sendmsg, ip_*)

"raw empty" is bpf-prog-stats.py's own `r0 = 0` raw_tp program on the same tracepoint
(in the full build's runs), for comparison with the floor.

Build the variants first (each a release build; MAGNET_BPF_CFLAGS passes the define):

    for n in 9 1 2 3 0; do MAGNET_BPF_CFLAGS=-DMG_PROF=$n cargo build --release -p magnet-cli &&
      cp target/release/magnet /tmp/magnet-p$n; done

Usage (root): bench/bpf-prog-profile.py [--bins /tmp/magnet-p] [--rounds 3] [--secs 4]
              [--gso | --udp64] [--tcp-state]
Differences of medians from a loaded host are noisy (+-20 ns); a negative stage is noise.
"""
import argparse, json, os, statistics, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

benchlib.need('bpf-prog-profile', 'iperf3')

HOT = ["dev_start_xmit", "dev_rx", "tcp_rcv", "tcp_sendmsg", "ip_local_out", "ip_post_routing",
       "ip_pre_routing", "ip_local_in", "app_send", "app_recv", "app_enter3_tp", "app_exit_tp",
       "app_sys_enter", "pkt_consume", "pkt_free", "batch_tick"]
VARIANTS = [9, 1, 2, 3, 0]
# Programs that never reserve a record: the MG_PROF stages 1-3 do not change them
# (batch_tick only sends what others appended), so only "total above floor" is shown.
# (app_sys_enter, flow_sys_exit: the fallback without syscall tracepoints.)
NO_RESERVE = {"app_enter3_tp", "app_sys_enter", "pkt_consume", "pkt_free", "batch_tick",
              "flow_enter_tp", "flow_exit_tp", "flow_sys_exit"}
EMPTY_OF = {"dev_start_xmit": "net_dev_start_xmit", "dev_rx": "netif_receive_skb",
            "tcp_rcv": "tcp_probe", "tcp_sendmsg": "tcp_sendmsg_locked",
            "app_send": "sock_send_length", "app_recv": "sock_recv_length",
            "app_sys_enter": "sys_enter", "flow_sys_exit": "sys_enter", "pkt_consume": "consume_skb",
            "pkt_free": "kfree_skb"}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bins", default="/tmp/magnet-p", help="variant binaries are BINS9, BINS1..BINS3, BINS0")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--secs", type=int, default=4)
    ap.add_argument("--gso", action="store_true")
    ap.add_argument("--udp64", action="store_true", help="64-byte UDP datagrams (bpf-prog-stats.py --udp64)")
    ap.add_argument("--tcp-state", action="store_true")
    a = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    runs = {v: [] for v in VARIANTS}
    for r in range(a.rounds):
        # rotate the order each round so no build always runs first
        for i in range(len(VARIANTS)):
            v = VARIANTS[(i + r) % len(VARIANTS)]
            cmd = [sys.executable, f"{here}/bpf-prog-stats.py", "--magnet", f"{a.bins}{v}", "--secs",
                   str(a.secs), "--json", "--label", f"p{v}"]
            if a.gso:
                cmd.append("--gso")
            if a.udp64:
                cmd.append("--udp64")
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
    gb = {v: statistics.median(x["gbps"] for x in runs[v]) for v in VARIANTS}
    print(f"## Cost profile, {a.rounds} rounds alternated, {'udp64' if a.udp64 else 'gso' if a.gso else 'mtu'}"
          f"{' --tcp-state' if a.tcp_state else ''}, medians (ns per run)\n")
    print(f"full build: {recs:,.0f} records, {bpr:.1f} B/record, {recs / max(pkts, 1):.2f} records per veth packet; "
          "iperf3 Gbit/s: " + ", ".join(f"p{v} {gb[v]:.2f}" for v in VARIANTS) + "\n")
    print("| program | runs/packet | raw empty | floor | filter | header | batch | fields | total above floor |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for p in HOT:
        e = med(9, p)
        s = [med(v, p) for v in (1, 2, 3, 0)]
        if e is None or any(x is None for x in s):
            continue
        raw = med(0, f"(empty) {EMPTY_OF[p]}") if p in EMPTY_OF else None
        runs_pp = statistics.median(x["programs"][p]["runs"] for x in full if p in x["programs"]) / max(pkts, 1)
        f, h, b, fl = s[0] - e, s[1] - s[0], s[2] - s[1], s[3] - s[2]
        rawt = "–" if raw is None else f"{raw:.0f}"
        if p in NO_RESERVE:  # the stages do not apply: only full - floor means something
            print(f"| {p} | {runs_pp:.3f} | {rawt} | {e:.0f} | – | – | – | – | {s[3] - e:.0f} |")
            continue
        print(f"| {p} | {runs_pp:.3f} | {rawt} | {e:.0f} | {f:.0f} | {h:.0f} | {b:.0f} | {fl:.0f} | {s[3] - e:.0f} |")
    print("\n(app_enter*_tp, pkt_*, batch_tick record nothing themselves: app_enter*_tp remember the "
          "syscall, pkt_* clear the packet's id slot, batch_tick sends a waiting batch.)")

if __name__ == "__main__":
    main()
