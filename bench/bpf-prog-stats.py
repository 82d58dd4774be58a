#!/usr/bin/env python3
"""Per-program kernel cost of `magnet record` from the kernel's BPF statistics.

Builds two network namespaces joined by a veth pair (offloads off: MTU-sized packets, or
on with --gso), starts `magnet record --all --layers LAYERS` inside ns A, loads *empty*
programs (`r0 = 0; exit`, raw tracepoints: the same trampoline as magnet's tp_btf programs)
on the tracepoints magnet uses, enables the statistics (BPF_ENABLE_STATS, released at exit:
nothing is left switched on), runs iperf3 A -> B for SECS seconds and prints, for each
program of *this* magnet process (found through /proc/PID/fdinfo, so other BPF users on
the host are not counted) and each empty program:

    runs, ns/run (run_time_ns / run_cnt over the transfer), ns/run above the empty program

plus records, trace bytes per record, records per packet (veth packet counters) and
lost events. run_time_ns includes the statistics' own two clock reads, which the empty
program pays too: "above empty" is the program's own work.

Usage (root): bench/bpf-prog-stats.py [--magnet BIN] [--secs 5] [--gso | --udp64] [--tcp-state]
              [--layers app,tcp,ip,dev] [--reps 1] [--label TEXT]
"""
import argparse, ctypes, json, os, re, signal, struct, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

benchlib.need('bpf-prog-stats', 'ethtool', 'ip', 'iperf3')

libc = ctypes.CDLL(None, use_errno=True)
SYS_BPF = 321  # x86_64
BPF_PROG_LOAD, BPF_OBJ_GET_INFO_BY_FD, BPF_PROG_GET_FD_BY_ID = 5, 15, 13
BPF_RAW_TRACEPOINT_OPEN, BPF_ENABLE_STATS = 17, 32
BPF_PROG_TYPE_RAW_TRACEPOINT = 17


def bpf(cmd, attr: bytes):
    buf = ctypes.create_string_buffer(attr, max(len(attr), 128))
    r = libc.syscall(SYS_BPF, cmd, buf, len(buf))
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, f"bpf cmd {cmd}: {os.strerror(e)}")
    return r, buf


def enable_stats():
    fd, _ = bpf(BPF_ENABLE_STATS, struct.pack("I", 0))  # BPF_STATS_RUN_TIME
    return fd


_keep = []


def load_empty(tp):
    insns = struct.pack("<BBhi", 0xB7, 0, 0, 0) + struct.pack("<BBhi", 0x95, 0, 0, 0)  # r0=0; exit
    ib = ctypes.create_string_buffer(insns)
    lic = ctypes.create_string_buffer(b"GPL")
    name = ("empty_" + tp)[:15].encode()
    attr = struct.pack("IIQQIIQII16s", BPF_PROG_TYPE_RAW_TRACEPOINT, 2, ctypes.addressof(ib),
                       ctypes.addressof(lic), 0, 0, 0, 0, 0, name)
    pfd, _ = bpf(BPF_PROG_LOAD, attr)
    tpn = ctypes.create_string_buffer(tp.encode())
    _keep.extend([ib, lic, tpn])
    lfd, _ = bpf(BPF_RAW_TRACEPOINT_OPEN, struct.pack("QI", ctypes.addressof(tpn), pfd))
    return pfd, lfd


def prog_info_fd(fd):
    info = ctypes.create_string_buffer(232)
    bpf(BPF_OBJ_GET_INFO_BY_FD, struct.pack("IIQ", fd, 232, ctypes.addressof(info)))
    raw = info.raw
    pid_ = struct.unpack_from("I", raw, 4)[0]
    name = raw[64:80].split(b"\0")[0].decode()
    run_ns, run_cnt = struct.unpack_from("QQ", raw, 192)
    return pid_, name, run_ns, run_cnt


def progs_of_pid(pid):
    """{prog_id: (name, run_time_ns, run_cnt)} of the BPF programs PID holds open."""
    out = {}
    d = f"/proc/{pid}/fdinfo"
    for f in os.listdir(d):
        try:
            txt = open(f"{d}/{f}").read()
        except OSError:
            continue
        m = re.search(r"^prog_id:\s*(\d+)", txt, re.M)
        if not m:
            continue
        pid_ = int(m.group(1))
        if pid_ in out:
            continue
        try:
            fd, _ = bpf(BPF_PROG_GET_FD_BY_ID, struct.pack("I", pid_))
        except OSError:
            continue
        try:
            _, name, ns, cnt = prog_info_fd(fd)
        finally:
            os.close(fd)
        out[pid_] = (name, ns, cnt)
    return out


def sh(*a, **kw):
    return subprocess.run(a, check=True, **kw)


def link_packets(ns, dev):
    out = subprocess.run(["ip", "-n", ns, "-j", "-s", "link", "show", dev], check=True,
                         capture_output=True, text=True).stdout
    st = json.loads(out)[0]["stats64"]
    return st["tx"]["packets"], st["rx"]["packets"]


EMPTY_HOOKS = ["netif_receive_skb", "net_dev_start_xmit", "net_dev_xmit", "tcp_probe",
               "sock_send_length", "sock_recv_length", "consume_skb", "kfree_skb",
               "tcp_sendmsg_locked", "sys_enter"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--magnet", default=None)
    ap.add_argument("--secs", type=int, default=5)
    ap.add_argument("--gso", action="store_true", help="keep the veth's default offloads")
    ap.add_argument("--udp64", action="store_true",
                    help="64-byte UDP datagrams as fast as the sender goes (iperf3 -u -l 64 -b 0): "
                         "small packets, one app call each")
    ap.add_argument("--tcp-state", action="store_true")
    ap.add_argument("--layers", default="app,tcp,ip,dev")
    ap.add_argument("--label", default="")
    ap.add_argument("--json", action="store_true", help="one JSON line instead of the table")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bpf-prog-stats: needs root (namespaces, BPF statistics)")
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    magnet = a.magnet or next((c for c in [f"{repo}/target/release/magnet", "/work/target-bench/release/magnet"]
                               if os.access(c, os.X_OK)), None)
    if not magnet:
        sys.exit("bpf-prog-stats: no magnet binary: build it (cargo build --release -p magnet-cli) or pass --magnet")
    p = os.getpid()
    na, nb, va, vb = f"mgps-a-{p}", f"mgps-b-{p}", f"mgpsa{p}", f"mgpsb{p}"
    trace = f"/tmp/mgps-{p}.mgt"
    procs = []
    try:
        sh("ip", "netns", "add", na)
        sh("ip", "netns", "add", nb)
        sh("ip", "link", "add", va, "netns", na, "type", "veth", "peer", "name", vb, "netns", nb)
        sh("ip", "-n", na, "addr", "add", "10.232.0.1/24", "dev", va)
        sh("ip", "-n", nb, "addr", "add", "10.232.0.2/24", "dev", vb)
        for n, v in ((na, va), (nb, vb)):
            sh("ip", "-n", n, "link", "set", "lo", "up")
            sh("ip", "-n", n, "link", "set", v, "up")
            onoff = "on" if a.gso else "off"
            sh("ip", "netns", "exec", n, "ethtool", "-K", v, "tso", onoff, "gso", onoff, "gro", "off",
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        srv = subprocess.Popen(["ip", "netns", "exec", nb, "iperf3", "-s", "-1", "-B", "10.232.0.2", "-p", "5209"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(srv)
        cmd = ["ip", "netns", "exec", na, magnet, "record", "-o", trace, "--all", "--layers", a.layers, "--json"]
        if a.tcp_state:
            cmd.append("--tcp-state")
        mon = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(mon)
        stats_fd = enable_stats()
        empties = {}
        for tp in EMPTY_HOOKS:
            try:
                empties[tp] = load_empty(tp)
            except OSError as e:
                print(f"(no empty program on {tp}: {e})", file=sys.stderr)
        time.sleep(2.5)
        if mon.poll() is not None:
            sys.exit("magnet record exited early: " + mon.stderr.read())
        # magnet runs as a child of `ip netns exec` (exec'd: same pid)
        mpid = mon.pid

        def snap():
            s = {f"{v[0]}#{k}": (v[1], v[2]) for k, v in progs_of_pid(mpid).items()}
            for tp, (pfd, _) in empties.items():
                _, name, ns, cnt = prog_info_fd(pfd)
                s[f"(empty) {tp}"] = (ns, cnt)
            return s

        tx0, rx0 = link_packets(na, va)
        s0 = snap()
        t0 = time.time()
        client = ["ip", "netns", "exec", na, "iperf3", "-c", "10.232.0.2", "-p", "5209", "-t", str(a.secs), "-J"]
        if a.udp64:
            client += ["-u", "-l", "64", "-b", "0"]
        out = subprocess.run(client, check=True, capture_output=True, text=True).stdout
        s1 = snap()
        tx1, rx1 = link_packets(na, va)
        end = json.loads(out)["end"]
        gbps = (end["sum"] if a.udp64 else end["sum_received"])["bits_per_second"] / 1e9
        time.sleep(0.5)
        mon.send_signal(signal.SIGINT)
        mout, merr = mon.communicate(timeout=60)
        summ = json.loads(mout.strip().splitlines()[-1])
        size = os.path.getsize(trace)
        rows = []
        for k in s1:
            if k not in s0:
                continue
            dn, dc = s1[k][0] - s0[k][0], s1[k][1] - s0[k][1]
            if dc <= 0:
                continue
            rows.append((k.split("#")[0], dc, dn / dc))
        empty_ns = sorted(r[2] for r in rows if r[0].startswith("(empty)"))
        base = empty_ns[len(empty_ns) // 2] if empty_ns else 0.0
        pkts = (tx1 - tx0) + (rx1 - rx0)
        res = {
            "label": a.label, "mode": "udp64" if a.udp64 else "gso" if a.gso else "mtu", "tcp_state": a.tcp_state,
            "gbps": round(gbps, 2), "records": summ["records"], "lost": summ["lost_kernel"] + summ.get("dropped_user", 0),
            "trace_bytes": size, "bytes_per_record": round(size / max(1, summ["records"]), 1),
            "veth_packets": pkts, "empty_ns_median": round(base, 1),
            "programs": {r[0]: {"runs": r[1], "ns": round(r[2], 1)} for r in rows},
        }
        if a.json:
            print(json.dumps(res))
            return
        print(f"## BPF statistics{(' — ' + a.label) if a.label else ''}: iperf3 {a.secs} s over veth "
              f"({res['mode']}{', --tcp-state' if a.tcp_state else ''}), {gbps:.2f} Gbit/s\n")
        print(f"magnet: {summ['records']:,} records, {res['lost']:,} lost, trace {size:,} B = "
              f"{res['bytes_per_record']} B/record (incl. ~2.5 s idle and block framing); "
              f"veth packets (ns A tx+rx) during the transfer: {pkts:,}\n")
        print("| program | runs | ns/run | ns above empty (median of empties: %.0f) |" % base)
        print("|---|---:|---:|---:|")
        for name, cnt, ns in sorted(rows, key=lambda r: (r[0].startswith("(empty)"), -r[1])):
            above = "" if name.startswith("(empty)") else f"{ns - base:.0f}"
            print(f"| {name} | {cnt:,} | {ns:.0f} | {above} |")
    finally:
        for pr in procs:
            if pr.poll() is None:
                pr.kill()
                pr.wait()
        for n in (na, nb):
            subprocess.run(["ip", "netns", "del", n], stderr=subprocess.DEVNULL)
        try:
            os.unlink(trace)
        except OSError:
            pass


if __name__ == "__main__":
    main()
