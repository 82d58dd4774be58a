#!/usr/bin/env bash
# magnet sample overhead benchmark.
#
# Saturating iperf3 TCP between two network namespaces joined by a veth pair
# (10.232.0.0/24), client in ns A, server in ns B, SECS seconds per transfer,
# ROUNDS rounds, each round alternating the cases:
#   base     no sampler
#   sample   one continuous 100 us run covering the whole transfer
#            (magnet sample -i <A's veth> --interval 100us --samples (SECS+2)*10000,
#             inside ns A: tc ingress + egress on the client's interface, RTT split on)
#   nortt    the same with --no-rtt-split (no socket lookup per TCP packet)
# with the veth's default offloads (gso: ~64 KB skbs) and with tso/gso/gro off on
# both ends (mtu: one skb per 1500-byte packet, ~40x more packets through tc).
#
# Reported (medians over rounds): throughput (iperf3 receiver bits/s), ratio to base,
# packets per second through the sampler, and the sampler's cost per packet
#   ns/pkt = (1/thr_case - 1/thr_base) * 8 / (pkts_case / bytes_case)   [wall ns]
# The per-run kernel memory is printed from the run's own meta (samples x 136 B x CPUs).
# Independent of throughput noise, kernel.bpf_stats_enabled=1 gives the sampler
# programs' own run time: bpf ns/pkt = run_time_ns / run_cnt (both tc programs), and
#   cpu share = run_time_ns / (transfer seconds x 1e9)   [fraction of one CPU]
#
# Environment: ROUNDS (5), SECS (5), MODES ("gso mtu"), MAGNET (binary), OUT (bench/out).
# Needs root, iperf3, ethtool, ip, python3. The machine is shared: medians, alternation.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_need sample-overhead bpftool ethtool ip iperf3 python3 tc

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
ROUNDS=${ROUNDS:-5}
SECS=${SECS:-5}
MODES=${MODES:-"gso mtu"}
OUT=${OUT:-$here/out}
MAGNET=${MAGNET:-}
if [ -z "$MAGNET" ]; then
  for c in "${CARGO_TARGET_DIR:-}/release/magnet" /work/target-sample/release/magnet /work/target-sample/debug/magnet "$repo/target/release/magnet"; do
    if [ -x "$c" ]; then MAGNET=$c; break; fi
  done
fi
[ -x "$MAGNET" ] || { echo "build magnet first (cargo build -p magnet-cli) or set MAGNET" >&2; exit 1; }
mkdir -p "$OUT"
A=mgsbench-a-$$; B=mgsbench-b-$$
cleanup() { ip netns del $A 2>/dev/null || true; ip netns del $B 2>/dev/null || true; }
trap cleanup EXIT
ip netns add $A; ip netns add $B
ip -n $A link set lo up; ip -n $B link set lo up
ip link add mgsb-a netns $A type veth peer name mgsb-b netns $B
ip -n $A addr add 10.232.0.1/24 dev mgsb-a; ip -n $B addr add 10.232.0.2/24 dev mgsb-b
ip -n $A link set mgsb-a up; ip -n $B link set mgsb-b up
ip netns exec $B iperf3 -s -D -1 >/dev/null 2>&1 || true

results=$OUT/sample-overhead.tsv
echo -e "mode\tround\tcase\tbits_per_s\tbytes\ttc_packets\tmem_bytes\tbpf_ns\tbpf_cnt" > "$results"
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -q -w kernel.bpf_stats_enabled=1
trap 'sysctl -q -w kernel.bpf_stats_enabled=$old_stats; cleanup' EXIT
samples=$(( (SECS + 2) * 10000 ))

one() { # mode round case
  local mode=$1 round=$2 case=$3 run=$OUT/sample-run.json pid=""
  ip netns exec $B iperf3 -s -D -1 >/dev/null 2>&1
  sleep 0.3
  if [ "$case" != base ]; then
    local extra=""; [ "$case" = nortt ] && extra=--no-rtt-split
    ip netns exec $A "$MAGNET" sample -i mgsb-a --interval 100us --samples $samples $extra -o $run 2>/dev/null &
    pid=$!
    sleep 0.7
  fi
  local json; json=$(ip netns exec $A iperf3 -c 10.232.0.2 -t "$SECS" -J)
  local bps bytes
  bps=$(python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(d["end"]["sum_received"]["bits_per_second"])' <<<"$json")
  bytes=$(python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(d["end"]["sum_received"]["bytes"])' <<<"$json")
  local pkts=0 mem=0 bns=0 bcnt=0
  if [ -n "$pid" ]; then
    read -r bns bcnt < <(bpftool prog show -j | python3 -c '
import json,sys; ps=[p for p in json.load(sys.stdin) if p.get("name") in ("sample_ingress","sample_egress")]
print(sum(p.get("run_time_ns",0) for p in ps), sum(p.get("run_cnt",0) for p in ps))')
    kill -INT $pid 2>/dev/null || true; wait $pid 2>/dev/null || true
    read -r pkts mem < <(python3 -c '
import json,sys; d=json.load(open(sys.argv[1])); m=d["magnet"]
print(sum(d["ingressPackets"])+sum(d["egressPackets"]), m["samples"]*136*m["cpus"])' $run)
  fi
  echo -e "$mode\t$round\t$case\t$bps\t$bytes\t$pkts\t$mem\t$bns\t$bcnt" >> "$results"
  echo "$mode round $round $case: $(python3 -c "print(f'{$bps/1e9:.2f}')") Gbit/s, $pkts pkts through tc"
}

for mode in $MODES; do
  if [ "$mode" = mtu ]; then
    ip netns exec $A ethtool -K mgsb-a tso off gso off gro off >/dev/null
    ip netns exec $B ethtool -K mgsb-b tso off gso off gro off >/dev/null
  fi
  for r in $(seq 1 "$ROUNDS"); do
    for c in base sample nortt; do one $mode $r $c; done
  done
done

python3 - "$results" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
print(f"\n{'mode':<5} {'case':<7} {'Gbit/s':>8} {'ratio':>7} {'kpkt/s':>8} {'ns/pkt':>8} {'bpf ns/pkt':>10} {'bpf cpu%':>8} {'run memory':>12}")
for mode in dict.fromkeys(r["mode"] for r in rows):
    med = lambda case, k: statistics.median(float(r[k]) for r in rows if r["mode"] == mode and r["case"] == case)
    base = med("base", "bits_per_s")
    for case in ("base", "sample", "nortt"):
        thr = med(case, "bits_per_s")
        pkts = med(case, "tc_packets"); byts = med(case, "bytes")
        secs = byts * 8 / thr if thr else 0
        pps = pkts / secs / 1e3 if secs else 0
        ns = ((1 / thr - 1 / base) * 8 / (pkts / byts) * 1e9) if pkts else 0
        mem = med(case, "mem_bytes")
        bpf = [(float(r["bpf_ns"]), float(r["bpf_cnt"]), float(r["bytes"]) * 8 / float(r["bits_per_s"]))
               for r in rows if r["mode"] == mode and r["case"] == case and float(r["bpf_cnt"]) > 0]
        bns = statistics.median(n / c for n, c, _ in bpf) if bpf else 0
        bcpu = statistics.median(n / (t * 1e9) * 100 for n, _, t in bpf) if bpf else 0
        print(f"{mode:<5} {case:<7} {thr/1e9:8.2f} {thr/base:7.3f} {pps:8.0f} {ns:8.0f} {bns:10.0f} {bcpu:8.2f} {mem/1e6:10.1f}MB")
PY
