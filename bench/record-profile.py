#!/usr/bin/env python3
"""Where the CPU a recording adds goes, per packet, by part of the machine.

The kernel's BPF statistics (the cost line, bench/bpf-prog-profile.py) time the
programs only. A recording costs more than that: the drain and the trace writer in
user space, the clock, the hooks' dispatch, and what the rest of the kernel and the
traffic's own code pay around them. This samples every CPU with `perf record -e
cpu-clock` during the same iperf3 stream as bench/record-overhead.sh (two network
namespaces joined by a veth pair; magnet runs in the client's namespace with `record
--all --layers app,tcp,ip,dev`), cases alternated, and sorts every sample into:

    programs       the programs' own JIT code (bpf_prog_*; needs bpf_jit_kallsyms, set here)
    dispatch       calling them: bpf_trace_run*, the netfilter BPF hook, trampolines
    clock          reading the time: read_tsc, ktime_get*, kvm-clock, sched_clock
    helpers, maps  ring buffer, hash maps, bpf_* helpers
    magnet (user)  the recorder's own threads in user space (drain, trace writer)
    magnet (kernel) the same threads in the kernel (polls, writes to the trace file)
    tcpdump        tcpdump's threads (its case)
    rest           everything else the host ran: iperf3 in the kernel and user space,
                   softirqs, the scheduler; idle is left out

and prints each as CPU ns per packet through the client's veth (its tx + rx
counters), medians over the rounds, with each case's excess over the floor (a build
whose programs return at entry: `MAGNET_BPF_CFLAGS=-DMG_PROF=9`), each program's own
share (measured without the kernel's run-time statistics, which add their own clock
reads) and the symbols of "rest" that grew most. cpu-clock samples are taken in a timer interrupt, so code
that runs with interrupts off (a spin lock held with irqsave, the batch tick's
hard-interrupt program) is charged to where interrupts come back on.

Usage (root): bench/record-profile.py [--magnet BIN] [--floor BIN] [--rounds 3]
              [--secs 5] [--cases base,floor,magnet,tcpdump] [--gso]
              [--bpf-stats off|sampled|full]
"""
import argparse, json, os, re, statistics, subprocess, sys, tempfile, time
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

benchlib.need('record-profile', 'perf', 'iperf3', 'ip', 'ethtool', 'tcpdump')

IDLE = {"pv_native_safe_halt", "native_safe_halt", "default_idle", "cpu_idle_poll", "intel_idle",
        "mwait_idle", "acpi_idle_do_entry", "default_idle_call", "poll_idle"}
DISPATCH = re.compile(r"^(bpf_trace_run\d|__bpf_trace_\w+|nf_hook_run_bpf|nf_hook_slow|__bpf_prog_enter\w*|"
                      r"__bpf_prog_exit\w*|bpf_trampoline_\w+|perf_trace_run_bpf_submit|trace_call_bpf|"
                      r"bpf_overflow_handler)$")
CLOCK = re.compile(r"^(read_tsc|ktime_get\w*|kvm_clock\w*|kvm_sched_clock\w*|pvclock\w*|native_sched_clock|"
                   r"sched_clock\w*|local_clock\w*)$")
HELPERS = re.compile(r"(ringbuf|htab|^bpf_|^__bpf_|lru|^array_map|^percpu_array|^bpf_map)")
PARTS = ["programs", "dispatch", "clock", "helpers, maps", "magnet (user)", "magnet (kernel)", "tcpdump", "rest"]


def part(comm, dso, sym):
    if comm == "swapper" and sym in IDLE:
        return None
    if sym.startswith("bpf_prog_"):
        return "programs"
    if DISPATCH.match(sym):
        return "dispatch"
    if CLOCK.match(sym):
        return "clock"
    if HELPERS.search(sym):
        return "helpers, maps"
    if comm.startswith("magnet"):
        return "magnet (kernel)" if dso.startswith("[kernel") else "magnet (user)"
    if comm.startswith("tcpdump"):
        return "tcpdump"
    return "rest"


def sh(*a, **kw):
    return subprocess.run(a, check=True, **kw)


def veth_packets(ns, dev):
    out = sh("ip", "-n", ns, "-j", "-s", "link", "show", dev, capture_output=True, text=True).stdout
    st = json.loads(out)[0]["stats64"]
    return st["tx"]["packets"] + st["rx"]["packets"]


def cpu_busy():
    f = open("/proc/stat").readline().split()[1:]
    v = list(map(int, f))
    return v[0] + v[1] + v[2] + v[5] + v[6]  # user nice system irq softirq (ticks)


def samples(data):
    """Counter {(part, comm:sym): samples} of one perf.data."""
    out = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "comm,dso,sym", "-g", "none",
                          "-q", "--percent-limit", "0", "-F", "sample,comm,dso,sym"],
                         check=True, capture_output=True, text=True).stdout
    c = Counter()
    for line in out.splitlines():
        f = line.split(None, 3)
        if len(f) < 4 or not f[0].isdigit():
            continue
        n, comm, dso, sym = int(f[0]), f[1], f[2], re.sub(r"^\[.\]\s+", "", f[3].strip())
        p = part(comm, dso, sym)
        if p:
            c[(p, sym if p in ("rest", "programs") else "")] += n
    return c


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--magnet")
    ap.add_argument("--floor", help="a build with MAGNET_BPF_CFLAGS=-DMG_PROF=9 (case floor)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--secs", type=int, default=5)
    ap.add_argument("--freq", type=int, default=1999, help="samples per second per CPU")
    ap.add_argument("--cases", default="base,floor,magnet,tcpdump")
    ap.add_argument("--gso", action="store_true", help="keep the veth's offloads (default: tso/gso/gro off, MTU-sized)")
    ap.add_argument("--bpf-stats", default="off", choices=["off", "sampled", "full"],
                    help="magnet's --bpf-stats (default off: the programs as users' hosts run them without it)")
    ap.add_argument("--top", type=int, default=12, help="symbols of `rest` shown")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("record-profile: needs root (namespaces, BPF, perf on every CPU)")
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cases = a.cases.split(",")
    magnet = a.magnet or next((c for c in [f"{repo}/target/release/magnet", f"{repo}/target/debug/magnet"]
                               if os.access(c, os.X_OK)), None)
    if "magnet" in cases and not magnet:
        sys.exit("record-profile: no magnet binary: build it (cargo build --release -p magnet-cli) or pass --magnet")
    if "floor" in cases and not (a.floor and os.access(a.floor, os.X_OK)):
        sys.exit("record-profile: case floor needs --floor <a magnet built with MAGNET_BPF_CFLAGS=-DMG_PROF=9> "
                 "(or leave it out of --cases)")
    p = os.getpid()
    na, nb, va, vb = f"mgpf-a-{p}", f"mgpf-b-{p}", f"mgpfa{p}", f"mgpfb{p}"
    work = tempfile.mkdtemp(prefix="record-profile.")
    kallsyms = open("/proc/sys/net/core/bpf_jit_kallsyms").read().strip()
    try:
        sh("ip", "netns", "add", na)
        sh("ip", "netns", "add", nb)
        sh("ip", "link", "add", va, "netns", na, "type", "veth", "peer", "name", vb, "netns", nb)
        for ns, dev, addr in ((na, va, "10.233.0.1"), (nb, vb, "10.233.0.2")):
            sh("ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
            if not a.gso:
                sh("ip", "netns", "exec", ns, "ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off",
                   stdout=subprocess.DEVNULL)
        open("/proc/sys/net/core/bpf_jit_kallsyms", "w").write("1")
        rows = {c: [] for c in cases}  # per round: (packets, busy ns, Counter)
        tick_ns = 1e9 / os.sysconf("SC_CLK_TCK")
        for r in range(a.rounds):
            for i in range(len(cases)):
                case = cases[(i + r) % len(cases)]
                srv = subprocess.Popen(["ip", "netns", "exec", nb, "iperf3", "-s", "-1", "-B", "10.233.0.2"],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(0.5)
                mon = None
                err = open(f"{work}/mon.err", "w")
                if case in ("magnet", "floor"):
                    mon = subprocess.Popen(["ip", "netns", "exec", na, magnet if case == "magnet" else a.floor, "record",
                                            "-o", f"{work}/t.mgt", "--all", "--layers", "app,tcp,ip,dev",
                                            "--bpf-stats", a.bpf_stats, "--json"],
                                           stdout=subprocess.DEVNULL, stderr=err)
                    time.sleep(2)
                elif case == "tcpdump":
                    mon = subprocess.Popen(["ip", "netns", "exec", na, "tcpdump", "-s", "96", "-i", va, "-w",
                                            f"{work}/t.pcap"], stdout=subprocess.DEVNULL, stderr=err)
                    time.sleep(1)
                if mon and mon.poll() is not None:
                    sys.exit(f"record-profile: the {case} monitor exited early: {open(f'{work}/mon.err').read().strip()}")
                p0, b0 = veth_packets(na, va), cpu_busy()
                sh("perf", "record", "-q", "-a", "-F", str(a.freq), "-e", "cpu-clock", "-o", f"{work}/perf.data", "--",
                   "ip", "netns", "exec", na, "iperf3", "-c", "10.233.0.2", "-t", str(a.secs),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                p1, b1 = veth_packets(na, va), cpu_busy()
                if mon:
                    time.sleep(0.3)
                    mon.send_signal(2)
                    if mon.wait() != 0:
                        sys.exit(f"record-profile: the {case} monitor failed: {open(f'{work}/mon.err').read().strip()}")
                srv.wait()
                rows[case].append((p1 - p0, (b1 - b0) * tick_ns, samples(f"{work}/perf.data")))
                for f in ("t.mgt", "t.pcap", "perf.data"):
                    if os.path.exists(f"{work}/{f}"):
                        os.remove(f"{work}/{f}")
                print(f"[{time.strftime('%T')}] round {r + 1} {case}: {p1 - p0} packets", file=sys.stderr)
    finally:
        open("/proc/sys/net/core/bpf_jit_kallsyms", "w").write(kallsyms)
        for ns in (na, nb):
            subprocess.run(["ip", "netns", "pids", ns], capture_output=True)
            subprocess.run(["ip", "netns", "del", ns], stderr=subprocess.DEVNULL)
        subprocess.run(["rm", "-rf", work])

    per_sample = 1e9 / a.freq

    def med(case, key):  # ns per packet, median over rounds
        return statistics.median(c[key] * per_sample / pk if isinstance(key, tuple) else
                                 sum(n for (pt, _), n in c.items() if pt == key) * per_sample / pk
                                 for pk, _, c in rows[case])

    def busy(case):
        return statistics.median(b / pk for pk, b, _ in rows[case])

    def total(case):
        return statistics.median(sum(c.values()) * per_sample / pk for pk, _, c in rows[case])

    mode = "default offloads" if a.gso else "tso/gso/gro off (MTU-sized)"
    print(f"### CPU ns per packet by part, iperf3 over veth, {mode}, {a.rounds} rounds × {a.secs} s, "
          f"medians (perf cpu-clock at {a.freq} Hz, magnet --bpf-stats {a.bpf_stats})\n")
    print("| part | " + " | ".join(cases) + (" | magnet − floor |" if {"magnet", "floor"} <= set(cases) else " |"))
    print("|---|" + "---:|" * (len(cases) + ({"magnet", "floor"} <= set(cases))))
    both = {"magnet", "floor"} <= set(cases)
    for pt in PARTS + ["all sampled (idle left out)", "busy, /proc/stat"]:
        if pt == "tcpdump" and "tcpdump" not in cases:
            continue
        vals = {c: (total(c) if pt.startswith("all") else busy(c) if pt.startswith("busy") else med(c, pt))
                for c in cases}
        line = f"| {pt} | " + " | ".join(f"{vals[c]:,.0f}" for c in cases)
        if both:
            line += f" | {vals['magnet'] - vals['floor']:+,.0f}"
        print(line + " |")
    print("\npackets per round: " + "; ".join(f"{c} {statistics.median(pk for pk, _, _ in rows[c]):,.0f}" for c in cases))
    if both:
        syms = set()
        for c in ("magnet", "floor"):
            for _, _, cnt in rows[c]:
                syms |= {k for k in cnt if k[0] == "rest"}
        grew = sorted(syms, key=lambda k: med("floor", k) - med("magnet", k))[: a.top]
        progs = set()
        for _, _, cnt in rows["magnet"]:
            progs |= {k for k in cnt if k[0] == "programs"}
        # bpf_prog_<tag>_<name>: the name is what bpftool and the cost line show
        named = sorted(progs, key=lambda k: -med("magnet", k))
        print("\nprograms, JIT code only (ns per packet, magnet): "
              + "; ".join(f"{re.sub(r'^bpf_prog_[0-9a-f]+_', '', k[1])} {med('magnet', k):,.0f}"
                          for k in named if med("magnet", k) >= 1))
        print(f"\n`rest`, the {a.top} symbols that grew most (ns per packet): "
              + "; ".join(f"{k[1]} {med('floor', k):,.0f} → {med('magnet', k):,.0f}" for k in grew))


if __name__ == "__main__":
    main()
