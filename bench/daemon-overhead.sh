#!/usr/bin/env bash
# magnetd always-on overhead benchmark (issue 14).
#
# Saturating iperf3 TCP between two network namespaces joined by a veth pair
# (10.233.0.0/24), SECS seconds per transfer, ROUNDS rounds, each round
# alternating the cases:
#   base     no magnetd
#   daemon   `magnet daemon` running (every hook attached: app send/recv,
#            cgroup_skb egress/ingress on the cgroup v2 root, retransmit,
#            kfree_skb, inet_sock_set_state), HTTP and socket in a temp dir
# with the veth's default offloads (gso) and with tso/gso/gro off (mtu: one skb
# per 1500-byte packet, ~40x more packets through the hooks).
#
# Reported (medians over rounds): throughput (iperf3 receiver bits/s) and its
# ratio to base; with kernel.bpf_stats_enabled=1 the daemon programs' own run
# time per invocation and as a share of one CPU.
#
# Environment: ROUNDS (5), SECS (5), MODES ("gso mtu"), MAGNET (binary), OUT (bench/out).
# Needs root, iperf3, ethtool, python3.
#
# On a quiet host (the issue's "<= 1 % at saturation" check), e.g.:
#   cargo build --release -p magnet-cli
#   sudo MAGNET=target/release/magnet ROUNDS=9 SECS=10 bench/daemon-overhead.sh
# and put the final table (ratio column: daemon / base throughput, medians of
# alternated rounds) into BENCHMARKS.md with the date, the commit, the CPU and
# `uptime`'s load. Quiet = load average well under 1 before the run; per-round
# lines that swing by more than a few percent for the same case mean it is not.
# bench/daemon-bpf-cost.sh gives the per-program cost, which noise hurts less.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
ROUNDS=${ROUNDS:-5}
SECS=${SECS:-5}
MODES=${MODES:-"gso mtu"}
OUT=${OUT:-$here/out}
MAGNET=${MAGNET:-}
if [ -z "$MAGNET" ]; then
  for c in "${CARGO_TARGET_DIR:-}/release/magnet" "$repo/target/release/magnet" "$repo/target/debug/magnet"; do
    "$c" daemon --help >/dev/null 2>&1 || continue
    if [ -x "$c" ]; then MAGNET=$c; break; fi
  done
fi
[ -x "$MAGNET" ] || { echo "build magnet first (cargo build -p magnet-cli) or set MAGNET" >&2; exit 1; }
mkdir -p "$OUT"
tmp=$(mktemp -d)
A=mgdbench-a-$$; B=mgdbench-b-$$
dpid=""
cleanup() {
  [ -n "$dpid" ] && kill "$dpid" 2>/dev/null && wait "$dpid" 2>/dev/null || true
  ip netns del $A 2>/dev/null || true; ip netns del $B 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
ip netns add $A; ip netns add $B
ip -n $A link set lo up; ip -n $B link set lo up
ip link add mgdb-a netns $A type veth peer name mgdb-b netns $B
ip -n $A addr add 10.233.0.1/24 dev mgdb-a; ip -n $B addr add 10.233.0.2/24 dev mgdb-b
ip -n $A link set mgdb-a up; ip -n $B link set mgdb-b up

results=$OUT/daemon-overhead.tsv
echo -e "mode\tround\tcase\tbits_per_s\tbytes\tbpf_ns\tbpf_cnt" > "$results"
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -q -w kernel.bpf_stats_enabled=1
trap 'sysctl -q -w kernel.bpf_stats_enabled=$old_stats; cleanup' EXIT

one() { # mode round case
  local mode=$1 round=$2 case=$3
  ip netns exec $B iperf3 -s -D -1 >/dev/null 2>&1
  sleep 0.3
  if [ "$case" = daemon ]; then
    "$MAGNET" daemon --http "" --socket "$tmp/magnetd.sock" 2>"$tmp/log" &
    dpid=$!
    for _ in $(seq 1 100); do grep -q "magnetd: ready" "$tmp/log" && break; sleep 0.1; done
  fi
  local json; json=$(ip netns exec $A iperf3 -c 10.233.0.2 -t "$SECS" -J)
  local bps bytes bns=0 bcnt=0
  bps=$(python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(d["end"]["sum_received"]["bits_per_second"])' <<<"$json")
  bytes=$(python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(d["end"]["sum_received"]["bytes"])' <<<"$json")
  if [ -n "$dpid" ]; then
    # The daemon's own programs, from its file descriptors (run_time_ns and
    # run_cnt appear in a program fd's fdinfo while bpf_stats_enabled=1).
    read -r bns bcnt < <(python3 - "$dpid" <<'PY'
import os, sys
pid = sys.argv[1]; seen = {}
for fd in os.listdir(f"/proc/{pid}/fdinfo"):
    try: t = open(f"/proc/{pid}/fdinfo/{fd}").read()
    except OSError: continue
    kv = dict(l.split(":", 1) for l in t.splitlines() if ":" in l)
    if "run_time_ns" in kv and "prog_id" in kv:
        seen[kv["prog_id"].strip()] = (int(kv["run_time_ns"]), int(kv["run_cnt"]))
print(sum(a for a, _ in seen.values()), sum(b for _, b in seen.values()))
PY
)
    kill -TERM "$dpid"; wait "$dpid" 2>/dev/null || true; dpid=""
  fi
  echo -e "$mode\t$round\t$case\t$bps\t$bytes\t$bns\t$bcnt" >> "$results"
  echo "$mode round $round $case: $(python3 -c "print(f'{$bps/1e9:.2f}')") Gbit/s"
}

for mode in $MODES; do
  if [ "$mode" = mtu ]; then
    ip netns exec $A ethtool -K mgdb-a tso off gso off gro off >/dev/null
    ip netns exec $B ethtool -K mgdb-b tso off gso off gro off >/dev/null
  fi
  for r in $(seq 1 "$ROUNDS"); do
    if [ $((r % 2)) -eq 1 ]; then order="base daemon"; else order="daemon base"; fi
    for c in $order; do one $mode $r $c; done
  done
done

python3 - "$results" "$SECS" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
secs = float(sys.argv[2])
print(f"\n{'mode':<5} {'case':<7} {'Gbit/s':>8} {'ratio':>7} {'bpf ns/run':>10} {'bpf cpu%':>8}")
for mode in dict.fromkeys(r["mode"] for r in rows):
    med = lambda case, k: statistics.median(float(r[k]) for r in rows if r["mode"] == mode and r["case"] == case)
    base = med("base", "bits_per_s")
    for case in ("base", "daemon"):
        thr = med(case, "bits_per_s")
        b = [(float(r["bpf_ns"]), float(r["bpf_cnt"])) for r in rows if r["mode"] == mode and r["case"] == case and float(r["bpf_cnt"]) > 0]
        ns = statistics.median(n / c for n, c in b) if b else 0
        cpu = statistics.median(n / (secs * 1e9) * 100 for n, _ in b) if b else 0
        print(f"{mode:<5} {case:<7} {thr/1e9:8.2f} {thr/base:7.3f} {ns:10.0f} {cpu:8.2f}")
PY
