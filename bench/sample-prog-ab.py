#!/usr/bin/env python3
"""The sampler's tc programs, several builds side by side: per-packet cost.

One veth pair between two namespaces (offloads off on both ends: MTU-sized packets, or the
defaults with --gso); iperf3 A -> B for SECS seconds per run; in ns A, one continuous 100 us
`magnet sample` on A's veth (ingress + egress). Each round runs every case once, the order
rotated each round:

    base    no sampler (the throughput reference)
    floor   two empty TCX programs (`r0 = TC_ACT_UNSPEC; exit`) on the same hooks, loaded by
            this script: the hook, the program call and the statistics' own two clock reads
    NAME    `magnet sample` from build BIN, for each --case NAME=BIN[:EXTRA ARGS]

and prints medians per case: Gbit/s, ratio to base, program runs per veth packet, ns/run
of each tc program (run_time_ns / run_cnt of *that* process's programs, found through
/proc/PID/fdinfo, so other BPF users are not counted), the mean ns per run over both and
that mean above the floor, and the programs' ns per wire packet (all their time divided by
the veth's packets, both directions) and that above the floor's: a sender's egress runs
once per GSO skb (TCP builds them even with the veth's offloads off, and they are cut into
wire packets after tc), so there per run and per packet differ. Statistics are switched on with BPF_ENABLE_STATS (released
at exit). Every sampler run must cover the transfer: a run that ends early fails the script.

Usage (root): bench/sample-prog-ab.py --case old=/tmp/magnet-a --case new=/tmp/magnet-b \
              [--case nortt=/tmp/magnet-b:--no-rtt-split] [--rounds 5] [--secs 4] [--gso] [--reverse]
A difference of medians on the shared 2-core VM jitters by about +-10 ns.

--micro: instead of iperf3, each case's two programs (loaded and attached as above, the
link idle) are run by BPF_PROG_TEST_RUN on one 1514-byte IPv4 TCP data packet, REPEAT
times a call, 7 calls; the kernel's own ns per run (no statistics, no hook) is printed per
program (median of the calls). Every run lands in a bucket that many runs share: the cost
of a busy link, where iperf3 over veth (64 KB skbs, about one run per 100 us bucket and
CPU) measures a bucket touched cold at almost every run. The same packet again is a
retransmission after its first run (the retransmission counters are added each time).
"""
import argparse
import ctypes
import importlib.util
import json
import os
import signal
import statistics
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

benchlib.need('sample-prog-ab', 'ethtool', 'ip', 'iperf3', 'tc')

here = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("bpf_prog_stats", f"{here}/bpf-prog-stats.py")
bps = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bps)

BPF_LINK_CREATE = 28
BPF_PROG_TYPE_SCHED_CLS = 3
BPF_TCX_INGRESS, BPF_TCX_EGRESS = 46, 47
TC_ACT_UNSPEC = -1


def hold_empty(iface):
    """In the namespace of IFACE: two empty TCX programs, held until stdin closes."""
    ifindex = int(open(f"/sys/class/net/{iface}/ifindex").read())
    insns = struct.pack("<BBhi", 0xB7, 0, 0, TC_ACT_UNSPEC) + struct.pack("<BBhi", 0x95, 0, 0, 0)
    ib = ctypes.create_string_buffer(insns)
    lic = ctypes.create_string_buffer(b"GPL")
    keep = []
    for name, at in (("floor_ingress", BPF_TCX_INGRESS), ("floor_egress", BPF_TCX_EGRESS)):
        attr = struct.pack("IIQQIIQII16sII", BPF_PROG_TYPE_SCHED_CLS, 2, ctypes.addressof(ib),
                           ctypes.addressof(lic), 0, 0, 0, 0, 0, name.encode(), 0, at)
        pfd, _ = bps.bpf(bps.BPF_PROG_LOAD, attr)
        lfd, _ = bps.bpf(BPF_LINK_CREATE, struct.pack("IIIIIIQ", pfd, ifindex, at, 0, 0, 0, 0))
        keep += [pfd, lfd]
    print("attached", flush=True)
    sys.stdin.read()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", action="append", default=[], help="NAME=BIN[:EXTRA ARGS]")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--secs", type=int, default=4)
    ap.add_argument("--gso", action="store_true")
    ap.add_argument("--reverse", action="store_true",
                    help="iperf3 -R: B sends, the sampled end receives (data on ingress, ACKs on egress)")
    ap.add_argument("--no-floor", action="store_true")
    ap.add_argument("--micro", action="store_true", help="BPF_PROG_TEST_RUN instead of iperf3")
    ap.add_argument("--repeat", type=int, default=200000)
    ap.add_argument("--hold-empty", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.hold_empty:
        return hold_empty(a.hold_empty)
    if os.geteuid() != 0:
        sys.exit("sample-prog-ab: needs root (namespaces, BPF statistics)")
    cases = {"base": None}
    if not a.no_floor:
        cases["floor"] = "floor"
    for c in a.case:
        name, _, spec = c.partition("=")
        binary, _, extra = spec.partition(":")
        if not name or not os.access(binary, os.X_OK):
            sys.exit(f"sample-prog-ab: --case {c!r}: want NAME=BIN[:ARGS] with an executable BIN")
        cases[name] = (binary, extra.split())
    p = os.getpid()
    na, nb, va, vb = f"mgsab-a-{p}", f"mgsab-b-{p}", f"mgsaba{p}", f"mgsabb{p}"
    run_json = f"/tmp/mgsab-{p}.json"
    stats_fd = None
    try:
        for n in (na, nb):
            bps.sh("ip", "netns", "add", n)
        bps.sh("ip", "link", "add", va, "netns", na, "type", "veth", "peer", "name", vb, "netns", nb)
        bps.sh("ip", "-n", na, "addr", "add", "10.232.0.1/24", "dev", va)
        bps.sh("ip", "-n", nb, "addr", "add", "10.232.0.2/24", "dev", vb)
        for n, v in ((na, va), (nb, vb)):
            bps.sh("ip", "-n", n, "link", "set", "lo", "up")
            bps.sh("ip", "-n", n, "link", "set", v, "up")
            if not a.gso:
                bps.sh("ip", "netns", "exec", n, "ethtool", "-K", v, "tso", "off", "gso", "off", "gro", "off",
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        stats_fd = bps.enable_stats()
        samples = (a.secs + 3) * 10000
        if a.micro:
            return micro(a, cases, na, va, samples, run_json)
        rows = {k: [] for k in cases}
        names = list(cases)
        for r in range(a.rounds):
            for i in range(len(names)):
                case = names[(i + r) % len(names)]
                rows[case].append(one(a, case, cases[case], na, nb, va, samples, run_json))
                x = rows[case][-1]
                print(f"round {r + 1} {case}: {x['gbps']:.2f} Gbit/s, {x['ns_pkt']:.0f} ns/pkt", file=sys.stderr)
        report(a, rows)
    finally:
        if stats_fd is not None:
            os.close(stats_fd)
        for n in (na, nb):
            subprocess.run(["ip", "netns", "del", n], stderr=subprocess.DEVNULL)
        try:
            os.unlink(run_json)
        except OSError:
            pass


def one(a, case, spec, na, nb, va, samples, run_json):
    srv = subprocess.Popen(["ip", "netns", "exec", nb, "iperf3", "-s", "-1", "-B", "10.232.0.2", "-p", "5212"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    mon = None
    try:
        if spec == "floor":
            mon = subprocess.Popen(["ip", "netns", "exec", na, sys.executable, os.path.abspath(__file__),
                                    "--hold-empty", va], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            if mon.stdout.readline().strip() != "attached":
                sys.exit("sample-prog-ab: the empty TCX programs did not attach")
        elif spec:
            binary, extra = spec
            mon = subprocess.Popen(["ip", "netns", "exec", na, binary, "sample", "-q", "-i", va, "--interval",
                                    "100us", "--samples", str(samples), "-o", run_json] + extra,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            time.sleep(1.0)
            if mon.poll() is not None:
                sys.exit(f"sample-prog-ab: {case}: magnet sample exited early: {mon.stderr.read()}")
        time.sleep(0.3)
        snap = (lambda: bps.progs_of_pid(mon.pid)) if mon else (lambda: {})
        tx0, rx0 = bps.link_packets(na, va)
        s0 = snap()
        client = ["ip", "netns", "exec", na, "iperf3", "-c", "10.232.0.2", "-p", "5212", "-t", str(a.secs), "-J"]
        if a.reverse:
            client.append("-R")
        out = subprocess.run(client, check=True, capture_output=True, text=True).stdout
        s1 = snap()
        tx1, rx1 = bps.link_packets(na, va)
        gbps = json.loads(out)["end"]["sum_received"]["bits_per_second"] / 1e9
        progs = {}
        for k, (name, ns1, c1) in s1.items():
            if k in s0 and c1 > s0[k][2]:
                dn, dc = ns1 - s0[k][1], c1 - s0[k][2]
                progs[name.replace("floor_", "").replace("sample_", "")] = (dc, dn)
        if mon and spec != "floor":
            if mon.poll() is not None:
                sys.exit(f"sample-prog-ab: {case}: the run ended before the transfer did")
            mon.send_signal(signal.SIGINT)
            mon.wait(timeout=60)
        pkts = (tx1 - tx0) + (rx1 - rx0)
        tc_runs = sum(progs.get(d, (0, 0))[0] for d in ("ingress", "egress"))
        tc_ns = sum(progs.get(d, (0, 0))[1] for d in ("ingress", "egress"))
        return {"gbps": gbps, "pkts": pkts, "runs_per_pkt": tc_runs / max(1, pkts),
                "ns_pkt": tc_ns / tc_runs if tc_runs else 0.0,
                "ns_wire": tc_ns / max(1, pkts),
                "ns": {d: progs[d][1] / progs[d][0] for d in progs}}
    finally:
        if mon and mon.poll() is None:
            if spec == "floor":
                mon.stdin.close()
            else:
                mon.send_signal(signal.SIGINT)
            try:
                mon.wait(timeout=60)
            except subprocess.TimeoutExpired:
                mon.kill()
                mon.wait()
        if srv.poll() is None:
            srv.kill()
        srv.wait()


BPF_PROG_TEST_RUN = 10


def test_run(fd, pkt, repeat):
    buf = ctypes.create_string_buffer(pkt)
    attr = struct.pack("IIIIQQIIIIQQIII", fd, 0, len(pkt), 0, ctypes.addressof(buf), 0, repeat, 0, 0, 0, 0, 0,
                       0, 0, 0)
    _, out = bps.bpf(BPF_PROG_TEST_RUN, attr)
    return struct.unpack_from("I", out.raw, 36)[0]  # duration: mean ns per run


def tcp_packet():
    payload = 1460
    eth = bytes(6) + bytes([2, 0, 0, 0, 0, 1]) + struct.pack("!H", 0x0800)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + 20 + payload, 1, 0x4000, 64, 6, 0,
                     bytes([10, 232, 0, 2]), bytes([10, 232, 0, 1]))
    tcp = struct.pack("!HHIIBBHHH", 5201, 40000, 1000, 1, 5 << 4, 0x10, 512, 0, 0)
    return eth + ip + tcp + bytes(payload)


def micro(a, cases, na, va, samples, run_json):
    pkt = tcp_packet()
    print(f"## Sampler tc programs by BPF_PROG_TEST_RUN: one 1514-byte TCP packet, {a.repeat} runs a call, "
          f"median of 7 calls (ns per run)\n")
    print("| case | ingress | egress |")
    print("|---|---:|---:|")
    for case, spec in cases.items():
        if spec is None:
            continue
        if spec == "floor":
            mon = subprocess.Popen(["ip", "netns", "exec", na, sys.executable, os.path.abspath(__file__),
                                    "--hold-empty", va], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            mon.stdout.readline()
        else:
            binary, extra = spec
            mon = subprocess.Popen(["ip", "netns", "exec", na, binary, "sample", "-q", "-i", va, "--interval",
                                    "100us", "--samples", str(samples * 4), "-o", run_json] + extra,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            res = {}
            progs = {}
            for _ in range(100):  # until both programs are loaded (a loaded host: seconds)
                progs = bps.progs_of_pid(mon.pid)
                if sum(n.endswith(("ingress", "egress")) for n, _, _ in progs.values()) >= 2:
                    break
                if mon.poll() is not None:
                    sys.exit(f"sample-prog-ab: {case}: the sampler exited")
                time.sleep(0.2)
            time.sleep(0.5)  # attached after loading
            for pid_, (name, _, _) in progs.items():
                d = name.replace("floor_", "").replace("sample_", "")
                if d not in ("ingress", "egress"):
                    continue
                fd, _ = bps.bpf(bps.BPF_PROG_GET_FD_BY_ID, struct.pack("I", pid_))
                try:
                    res[d] = statistics.median(test_run(fd, pkt, a.repeat) for _ in range(7))
                finally:
                    os.close(fd)
            print(f"| {case} | {res.get('ingress', 0):.0f} | {res.get('egress', 0):.0f} |", flush=True)
        finally:
            if spec == "floor":
                mon.stdin.close()
            else:
                mon.send_signal(signal.SIGINT)
            mon.wait(timeout=60)


def report(a, rows):
    med = statistics.median
    base = med(x["gbps"] for x in rows["base"])
    floor = med(x["ns_pkt"] for x in rows["floor"]) if "floor" in rows else 0.0
    floor_wire = med(x["ns_wire"] for x in rows["floor"]) if "floor" in rows else 0.0
    print(f"## Sampler tc programs: iperf3 {a.secs} s over veth ({'gso' if a.gso else 'mtu'}{', reversed: the sampled end receives' if a.reverse else ''}), 100 us buckets, "
          f"{a.rounds} rounds alternated, medians\n")
    # A sender's egress runs once per GSO skb (TCP builds them even with the veth's
    # offloads off; they are cut into wire packets after tc): per run and per wire
    # packet (all BPF ns ÷ the veth's packets, both directions) differ there.
    print("| case | Gbit/s | ratio | tc runs/pkt | ingress ns/run | egress ns/run | ns/run | above floor | "
          "ns per wire packet | above floor |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for case, xs in rows.items():
        g = med(x["gbps"] for x in xs)
        if case == "base":
            print(f"| base | {g:.2f} | 1.000 | – | – | – | – | – | – | – |")
            continue
        ing = med(x["ns"].get("ingress", 0) for x in xs)
        eg = med(x["ns"].get("egress", 0) for x in xs)
        ns = med(x["ns_pkt"] for x in xs)
        above = "–" if case == "floor" else f"{ns - floor:.0f}"
        wire = med(x["ns_wire"] for x in xs)
        above_wire = "–" if case == "floor" else f"{wire - floor_wire:.0f}"
        print(f"| {case} | {g:.2f} | {g / base:.3f} | {med(x['runs_per_pkt'] for x in xs):.2f} | {ing:.0f} | "
              f"{eg:.0f} | {ns:.0f} | {above} | {wire:.0f} | {above_wire} |")


if __name__ == "__main__":
    main()
