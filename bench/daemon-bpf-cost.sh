#!/usr/bin/env bash
# magnetd's BPF cost per program, from the kernel's own accounting
# (kernel.bpf_stats_enabled=1: run_time_ns and run_cnt of every program),
# compared with EMPTY programs on the same hooks. Less sensitive to a noisy
# host than a throughput ratio: it measures time spent inside the programs,
# not what the rest of the machine does to the transfer.
#
#   sudo ROUNDS=3 SECS=5 MODES="gso mtu" bench/daemon-bpf-cost.sh
#
# Workload: iperf3 TCP between two network namespaces over a veth pair
# (10.234.0.0/24), SECS seconds per case; with the veth's offloads (gso: ~64 KiB
# skbs) and without (mtu: tso/gso/gro off, one skb per 1500-byte packet), and
# (link) with the offloads and the sender's veth shaped by tbf to LINK_RATE
# (3gbit): a saturated link with CPU to spare, where what magnetd costs is CPU
# per GB, not throughput.
# Cases, alternated each round (medians over ROUNDS):
#   daemon  `magnet daemon` (every hook: app send/recv, cgroup_skb
#           egress/ingress on the cgroup v2 root, tcp_retransmit_skb,
#           kfree_skb, inet_sock_set_state)
#   empty   the example `empty_hooks` of magnet-daemon: a program that does
#           nothing on each of the same hooks (dispatch + stats accounting)
#   before  with MAGNET_BEFORE set: the daemon of another magnet binary (e.g.
#           the previous commit's), so before and after are measured side by
#           side in one run, not on two different minutes of a noisy host
# Reported per program: runs per second, ns per run (daemon, empty) and the
# difference = magnetd's own work. Then per packet on the veth: the added BPF ns
# (sum over programs of runs x added ns/run, divided by the packets that
# crossed the veth), iperf3's CPU ns per packet (sender + receiver, from its
# -J cpu_utilization), and their ratio: the expected throughput cost when the
# transfer is CPU-bound; and the added BPF CPU per GB moved. The throughput
# ratio itself is bench/daemon-overhead.sh.
#
# Environment: ROUNDS (3), SECS (5), MODES ("gso mtu"), MAGNET (the magnet
# binary), MAGNET_BEFORE (optional), EMPTY (the empty_hooks binary), OUT (bench/out). Needs root, iperf3,
# ethtool, python3. Builds nothing: run
#   cargo build --release -p magnet-cli && cargo build --release -p magnet-daemon --example empty_hooks
# first (or debug: the kernel side is the same; user space is idle meanwhile).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_need daemon-bpf-cost ethtool ip iperf3 python3 tc

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-5}
MODES=${MODES:-"gso mtu link"}
LINK_RATE=${LINK_RATE:-3gbit}
OUT=${OUT:-$here/out}
t=${CARGO_TARGET_DIR:-$repo/target}
pick() { for c in "$@"; do [ -x "$c" ] && { echo "$c"; return; }; done; }
MAGNET=${MAGNET:-$(pick "$t/release/magnet" "$t/debug/magnet")}
MAGNET_BEFORE=${MAGNET_BEFORE:-}
EMPTY=${EMPTY:-$(pick "$t/release/examples/empty_hooks" "$t/debug/examples/empty_hooks")}
[ -n "$MAGNET" ] && [ -n "$EMPTY" ] || {
  echo "build first: cargo build -p magnet-cli && cargo build -p magnet-daemon --example empty_hooks (or set MAGNET, EMPTY)" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "needs root (loads BPF programs, makes namespaces)" >&2; exit 1; }
mkdir -p "$OUT"
tmp=$(mktemp -d)
A=mgcost-a-$$; B=mgcost-b-$$
lpid=""
spid=""
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
cleanup() {
  [ -n "$lpid" ] && kill "$lpid" 2>/dev/null && wait "$lpid" 2>/dev/null || true
  [ -n "$spid" ] && kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null || true
  ip netns del $A 2>/dev/null || true; ip netns del $B 2>/dev/null || true
  sysctl -q -w kernel.bpf_stats_enabled="$old_stats"
  rm -rf "$tmp"
}
trap cleanup EXIT
sysctl -q -w kernel.bpf_stats_enabled=1
ip netns add $A; ip netns add $B
ip -n $A link set lo up; ip -n $B link set lo up
ip link add mgc-a netns $A type veth peer name mgc-b netns $B
ip -n $A addr add 10.234.0.1/24 dev mgc-a; ip -n $B addr add 10.234.0.2/24 dev mgc-b
ip -n $A link set mgc-a up; ip -n $B link set mgc-b up

rows=$OUT/daemon-bpf-cost.tsv
echo -e "mode\tround\tcase\tprog\truns\tns\tpackets\tcpu_ns\tbits_per_s" > "$rows"

# Per program of process $1: "name run_cnt run_time_ns" (its program fds).
progs_of() {
  BENCH_DIR=$here python3 - "$1" <<'PY'
import importlib.util, os, struct, sys
spec = importlib.util.spec_from_file_location("bps", os.environ["BENCH_DIR"] + "/bpf-prog-stats.py")
bps = importlib.util.module_from_spec(spec); spec.loader.exec_module(bps)
pid = sys.argv[1]; seen = {}
for fd in os.listdir(f"/proc/{pid}/fdinfo"):
    try: t = open(f"/proc/{pid}/fdinfo/{fd}").read()
    except OSError: continue
    kv = dict((a.strip(), b.strip()) for a, b in (l.split(":", 1) for l in t.splitlines() if ":" in l))
    if "run_time_ns" in kv and "prog_id" in kv and "link_id" not in kv:
        seen[kv["prog_id"]] = (int(kv["run_cnt"]), int(kv["run_time_ns"]))
for pid_, (cnt, ns) in seen.items():
    try:  # the program's name from the kernel (no bpftool needed)
        fd, _ = bps.bpf(bps.BPF_PROG_GET_FD_BY_ID, struct.pack("I", int(pid_)))
        try:
            name = bps.prog_info_fd(fd)[1] or pid_
        finally:
            os.close(fd)
    except OSError:
        name = pid_
    print(name, cnt, ns)
PY
}
packets() { # packets that crossed the veth, both ways
  echo $(( $(ip netns exec $A cat /sys/class/net/mgc-a/statistics/tx_packets) \
         + $(ip netns exec $B cat /sys/class/net/mgc-b/statistics/tx_packets) ))
}

one() { # mode round case
  local mode=$1 round=$2 case=$3
  # the iperf3 server of this case (one client), killed on exit if left
  ip netns exec $B iperf3 -s -1 >/dev/null 2>&1 & spid=$!
  if [ "$case" = daemon ] || [ "$case" = before ]; then
    local bin=$MAGNET
    [ "$case" = before ] && bin=$MAGNET_BEFORE
    "$bin" daemon --http "" --socket "$tmp/magnetd.sock" 2>"$tmp/log" & lpid=$!
    ready="magnetd: ready"
  else
    "$EMPTY" 2>"$tmp/log" & lpid=$!
    ready="empty hooks: ready"
  fi
  for _ in $(seq 1 200); do grep -qs "$ready" "$tmp/log" && break; sleep 0.1; done
  grep -q "$ready" "$tmp/log" || { cat "$tmp/log" >&2; exit 1; }
  progs_of "$lpid" > "$tmp/before"
  local p0; p0=$(packets)
  local json="" try
  for try in 1 2 3 4 5; do # the server may not listen yet on a loaded host
    json=$(ip netns exec $A iperf3 -c 10.234.0.2 -t "$SECS" -J) && break
    sleep 0.5
  done
  wait "$spid" 2>/dev/null || true; spid=""
  local p1; p1=$(packets)
  progs_of "$lpid" > "$tmp/after"
  kill -TERM "$lpid"; wait "$lpid" 2>/dev/null || true; lpid=""
  python3 - "$tmp/before" "$tmp/after" "$mode" "$round" "$case" $((p1 - p0)) "$SECS" >> "$rows" <<PY
import json, sys
b = {l.split()[0]: l.split()[1:] for l in open(sys.argv[1])}
a = {l.split()[0]: l.split()[1:] for l in open(sys.argv[2])}
mode, rnd, case, pk, secs = sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]), float(sys.argv[7])
d = json.loads('''$json''')
cpu = d["end"]["cpu_utilization_percent"]
cpu_ns = (cpu["host_total"] + cpu["remote_total"]) / 100 * secs * 1e9
bps = d["end"]["sum_received"]["bits_per_second"]
for name in a:
    runs = int(a[name][0]) - int(b.get(name, [0, 0])[0])
    ns = int(a[name][1]) - int(b.get(name, [0, 0])[1])
    print(f"{mode}\t{rnd}\t{case}\t{name}\t{runs}\t{ns}\t{pk}\t{cpu_ns:.0f}\t{bps:.0f}")
PY
  echo "$mode round $round $case: $(python3 -c "print(f'{$(tail -n 1 "$rows" | cut -f9)/1e9:.2f}')") Gbit/s" >&2
}

setup_mode() { # offloads and shaping of each mode, set explicitly
  local off=on
  [ "$1" = mtu ] && off=off
  ip netns exec $A ethtool -K mgc-a tso $off gso $off gro $off >/dev/null
  ip netns exec $B ethtool -K mgc-b tso $off gso $off gro $off >/dev/null
  tc -n $A qdisc del dev mgc-a root 2>/dev/null || true
  if [ "$1" = link ]; then
    tc -n $A qdisc add dev mgc-a root tbf rate "$LINK_RATE" burst 256k latency 20ms
  fi
}

for mode in $MODES; do
  setup_mode "$mode"
  cases=(daemon empty)
  [ -n "$MAGNET_BEFORE" ] && cases=(daemon empty before)
  for r in $(seq 1 "$ROUNDS"); do
    # rotate the order of the cases from round to round
    n=${#cases[@]}; k=$(( (r - 1) % n ))
    for i in $(seq 0 $((n - 1))); do one "$mode" "$r" "${cases[$(( (i + k) % n ))]}"; done
  done
done

python3 - "$rows" "$SECS" <<'PY'
import csv, statistics as st, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
secs = float(sys.argv[2])
med = st.median
for mode in dict.fromkeys(r["mode"] for r in rows):
    R = [r for r in rows if r["mode"] == mode]
    rounds = sorted({r["round"] for r in R})
    names = sorted({r["prog"] for r in R if r["case"] == "daemon"})
    print(f"\n{mode}: per program (medians of {len(rounds)} rounds, {secs:g} s each)")
    has_before = any(r["case"] == "before" for r in R)
    print(f"{'program':<14} {'runs/s':>10} {'ns/run':>8} {'empty':>8} {'added':>8}"
          + (f" {'before':>8} {'b.added':>8}" if has_before else ""))
    per_pkt = {}
    gbit = {}
    for which in (("daemon", "before") if has_before else ("daemon",)):
      added_per_pkt, cpu_per_pkt, added_per_gb = [], [], []
      for rnd in rounds:
        tot, pk, cpu = 0.0, None, None
        for n in names:
            d = [r for r in R if r["round"] == rnd and r["prog"] == n and r["case"] == which]
            e = [r for r in R if r["round"] == rnd and r["prog"] == n and r["case"] == "empty"]
            if not d or int(d[0]["runs"]) == 0:
                continue
            dn = int(d[0]["ns"]) / int(d[0]["runs"])
            en = int(e[0]["ns"]) / int(e[0]["runs"]) if e and int(e[0]["runs"]) else 0.0
            tot += int(d[0]["runs"]) * (dn - en)
            pk, cpu, bps = int(d[0]["packets"]), float(d[0]["cpu_ns"]), float(d[0]["bits_per_s"])
        if pk:
            added_per_pkt.append(tot / pk)
            cpu_per_pkt.append(cpu / pk)
            gb = bps * secs / 8 / 1e9
            added_per_gb.append(tot / 1e6 / gb)
      per_pkt[which] = (med(added_per_pkt), med(cpu_per_pkt), med(added_per_gb))
    for n in names:
        def per(case):
            v = [int(r["ns"]) / int(r["runs"]) for r in R if r["prog"] == n and r["case"] == case and int(r["runs"])]
            return med(v) if v else 0.0
        runs = [int(r["runs"]) / secs for r in R if r["prog"] == n and r["case"] == "daemon"]
        print(f"{n:<14} {med(runs):10.0f} {per('daemon'):8.0f} {per('empty'):8.0f} {per('daemon') - per('empty'):8.0f}"
              + (f" {per('before'):8.0f} {per('before') - per('empty'):8.0f}" if has_before else ""))
    for case in dict.fromkeys(r["case"] for r in R):
        v = {r["round"]: float(r["bits_per_s"]) for r in R if r["case"] == case}
        gbit[case] = med(v.values()) / 1e9
    for which, (a, c, g) in per_pkt.items():
        print(f"{which}: added BPF ns per veth packet: {a:.0f}; iperf3 CPU ns per packet: {c:.0f}; "
              f"expected cost when CPU-bound: {100 * a / c:.2f} % -> <= 1 % goal {'MET' if a / c <= 0.01 else 'NOT met'}; "
              f"added BPF CPU per GB moved: {g:.1f} ms")
    print("throughput (noisy, for reference): " + ", ".join(f"{k} {v:.2f} Gbit/s" for k, v in gbit.items()))
PY
