#!/usr/bin/env python3
"""Recording cost in CPU per MB moved, counted on the workload's own processes.

bench/record-overhead.sh counts the busy time of all CPUs (/proc/stat), which on a shared
host includes everyone else's builds. This script counts only the processes of the
transfer and the recorder, so other load changes their speed but much less their CPU
per byte:

    iperf3 client (ns A) + iperf3 server (ns B) + magnet (every thread) + ksoftirqd/*

(without IRQ time accounting, as on this VM, a softirq is charged to the task it
interrupted: the veth's receive work is in the iperf3 processes). Per case, alternated for
ROUNDS rounds (the order reversed every other round): iperf3 A -> B for SECS seconds over a
veth pair (offloads off: MTU-sized packets, or on with --gso), with no recorder (`base`)
or with `magnet record --all --layers app,tcp,ip,dev` inside ns A, as record-overhead.sh.

Printed per case (medians): Gbit/s, CPU ms per MB, above base, records per MB, CPU ns per
record above base ((cpu/MB - base cpu/MB) / records per MB), trace bytes per record.
Ticks are 10 ms: use SECS >= 4.

A case may add arguments to its recorder (`--args NAME='--netns self'`), or run a second
recorder of its binary inside ns B with `--all --layers ip` (`--peer-ip NAME`: a build whose
netfilter hooks see only its own namespace, made to record both namespaces' ip rows as one
recorder of a later build does); the two recorders' CPU, records and bytes are summed.

Usage (root): bench/record-cpu-ab.py --case before=BIN --case after=BIN [--rounds 5]
              [--secs 4] [--gso] [--no-base] [--args NAME=ARGS]... [--peer-ip NAME]...
"""
import argparse, json, os, signal, statistics, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

benchlib.need('record-cpu-ab', 'ethtool', 'ip', 'iperf3')

TICK = os.sysconf("SC_CLK_TCK")


def ticks(pid):
    """utime + stime of a process (all its threads), in ticks; 0 when gone."""
    try:
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return int(f[11]) + int(f[12])


def ksoftirqd():
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if open(f"/proc/{d}/comm").read().startswith("ksoftirqd/"):
                    out.append(int(d))
            except OSError:
                pass
    return out


def sh(*a, **kw):
    return subprocess.run(a, check=True, **kw)


def one(case, binary, secs, gso, extra=(), peer_ip=False):
    p = os.getpid()
    na, nb, va, vb = f"mgrc-a-{p}", f"mgrc-b-{p}", f"mgrca{p}", f"mgrcb{p}"
    trace = f"/tmp/mgrc-{p}.mgt"
    procs = []
    try:
        sh("ip", "netns", "add", na)
        sh("ip", "netns", "add", nb)
        sh("ip", "link", "add", va, "netns", na, "type", "veth", "peer", "name", vb, "netns", nb)
        sh("ip", "-n", na, "addr", "add", "10.233.0.1/24", "dev", va)
        sh("ip", "-n", nb, "addr", "add", "10.233.0.2/24", "dev", vb)
        onoff = "on" if gso else "off"
        for n, v in ((na, va), (nb, vb)):
            sh("ip", "-n", n, "link", "set", "lo", "up")
            sh("ip", "-n", n, "link", "set", v, "up")
            sh("ip", "netns", "exec", n, "ethtool", "-K", v, "tso", onoff, "gso", onoff, "gro", "off",
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        srv = subprocess.Popen(["ip", "netns", "exec", nb, "iperf3", "-s", "-1", "-B", "10.233.0.2", "-p", "5211"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(srv)
        mon = None
        if binary:
            mon = subprocess.Popen(["ip", "netns", "exec", na, binary, "record", "-o", trace, "--all",
                                    "--layers", "app,tcp,ip,dev", "--json", *extra],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            procs.append(mon)
        mon2 = None
        if binary and peer_ip:
            mon2 = subprocess.Popen(["ip", "netns", "exec", nb, binary, "record", "-o", trace + "2", "--all",
                                     "--layers", "ip", "--json"],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            procs.append(mon2)
        time.sleep(2.5 if binary else 1.0)
        for m in (mon, mon2):
            if m and m.poll() is not None:
                sys.exit(f"record-cpu-ab: {case}: magnet record exited early: {m.stderr.read()}")
        mons = [m for m in (mon, mon2) if m]
        watched = [srv.pid] + [m.pid for m in mons] + ksoftirqd()
        t0 = {q: ticks(q) for q in watched}
        cli = subprocess.Popen(["ip", "netns", "exec", na, "iperf3", "-c", "10.233.0.2", "-p", "5211", "-t",
                                str(secs), "-J"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        out = cli.stdout.read()
        t1 = {q: ticks(q) for q in watched}
        _, status, ru = os.wait4(cli.pid, 0)
        cli.returncode = os.waitstatus_to_exitcode(status)
        if cli.returncode != 0:
            sys.exit(f"record-cpu-ab: {case}: iperf3 client failed")
        cpu_s = sum(t1[q] - t0[q] for q in watched) / TICK + ru.ru_utime + ru.ru_stime
        end = json.loads(out)["end"]
        mb = end["sum_received"]["bytes"] / 1e6
        res = {"case": case, "gbps": end["sum_received"]["bits_per_second"] / 1e9, "mb": mb, "cpu_s": cpu_s,
               "magnet_s": sum(t1[m.pid] - t0[m.pid] for m in mons) / TICK}
        if mons:
            time.sleep(0.3)
            res["records"] = res["lost"] = res["bytes"] = 0
            for m, path in zip(mons, (trace, trace + "2")):
                m.send_signal(signal.SIGINT)
                mout, _ = m.communicate(timeout=60)
                summ = json.loads(mout.strip().splitlines()[-1])
                res["records"] += summ["records"]
                res["lost"] += summ["lost_kernel"] + summ.get("dropped_user", 0)
                res["bytes"] += os.path.getsize(path)
        return res
    finally:
        for pr in procs:
            if pr.poll() is None:
                pr.kill()
                pr.wait()
        for n in (na, nb):
            subprocess.run(["ip", "netns", "del", n], stderr=subprocess.DEVNULL)
        for t in (trace, trace + "2"):
            try:
                os.unlink(t)
            except OSError:
                pass


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", action="append", default=[], help="NAME=BIN")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--secs", type=int, default=4)
    ap.add_argument("--gso", action="store_true")
    ap.add_argument("--no-base", action="store_true")
    ap.add_argument("--raw", help="append every run's JSON line to this file")
    ap.add_argument("--args", action="append", default=[], help="NAME=ARGS: more arguments for that case's recorder")
    ap.add_argument("--peer-ip", action="append", default=[], help="NAME: that case also records ns B's ip layer")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("record-cpu-ab: needs root (namespaces, BPF)")
    bins = {} if a.no_base else {"base": None}
    for c in a.case:
        name, sep, path = c.partition("=")
        if not sep or not name or not path or name == "base":
            sys.exit(f"record-cpu-ab: --case '{c}': expected NAME=BIN (NAME not 'base')")
        if not os.access(path, os.X_OK):
            sys.exit(f"record-cpu-ab: --case '{c}': {path} is not an executable")
        bins[name] = path
    if not a.case:
        sys.exit("record-cpu-ab: needs at least one --case NAME=BIN")
    extra = {}
    for x in a.args:
        name, sep, args = x.partition("=")
        if not sep or name not in bins:
            sys.exit(f"record-cpu-ab: --args '{x}': expected NAME=ARGS for a --case NAME")
        extra[name] = args.split()
    for name in a.peer_ip:
        if name not in bins or bins[name] is None:
            sys.exit(f"record-cpu-ab: --peer-ip {name}: not a --case NAME")
    cases = list(bins)
    runs = {c: [] for c in cases}
    for r in range(a.rounds):
        for c in (cases if r % 2 == 0 else cases[::-1]):
            res = one(c, bins[c], a.secs, a.gso, extra.get(c, ()), c in a.peer_ip)
            runs[c].append(res)
            if a.raw:
                with open(a.raw, "a") as fh:
                    fh.write(json.dumps({"round": r + 1, **res}) + "\n")
            print(f"round {r + 1} {c}: {res['gbps']:.2f} Gbit/s, {1e3 * res['cpu_s'] / res['mb']:.3f} ms/MB",
                  file=sys.stderr)

    def med(c, f):
        return statistics.median(f(x) for x in runs[c])

    base = med("base", lambda x: 1e3 * x["cpu_s"] / x["mb"]) if "base" in runs else None
    print(f"## CPU per MB of the transfer's and the recorder's processes: iperf3 {a.secs} s over veth "
          f"({'gso' if a.gso else 'mtu'}), {a.rounds} rounds alternated, medians\n")
    print("| case | Gbit/s | CPU ms/MB | above base | magnet's own ms/MB | records/MB | CPU ns/record above base | B/record | lost |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for c in cases:
        cpu = med(c, lambda x: 1e3 * x["cpu_s"] / x["mb"])
        if bins[c] is None:
            print(f"| {c} | {med(c, lambda x: x['gbps']):.2f} | {cpu:.3f} | – | – | – | – | – | – |")
            continue
        rpm = med(c, lambda x: x["records"] / x["mb"])
        above = "–" if base is None else f"{cpu - base:.3f}"
        per = "–" if base is None else f"{1e6 * (cpu - base) / rpm:.0f}"
        print(f"| {c} | {med(c, lambda x: x['gbps']):.2f} | {cpu:.3f} | {above} | "
              f"{med(c, lambda x: 1e3 * x['magnet_s'] / x['mb']):.3f} | {rpm:,.0f} | {per} | "
              f"{med(c, lambda x: x['bytes'] / max(1, x['records'])):.1f} | {max(x['lost'] for x in runs[c])} |")


if __name__ == "__main__":
    main()
