#!/usr/bin/env bash
# What the send stages (magnetd's `stack_latency` part: sock_ops TX timestamp
# callbacks and tp_btf/tcp_sendmsg_locked) cost in BPF time, from the kernel's
# own accounting (run_time_ns / run_cnt, which magnetd serves as
# magnet_bpf_run_seconds_total / magnet_bpf_runs_total per program).
#
#   sudo SECS=5 bench/daemon-stages-cost.sh
#
# Workload: iperf3 TCP between two network namespaces over a veth pair, made
# after magnetd started (so its sends are timed): "bulk" (128 KiB writes,
# offloads on) and "small" (100-byte writes, TCP_NODELAY). Reported per case
# and program: runs, ns per run; the stage programs' ns per send call and per
# packet on the veth; their share of iperf3's own CPU (sender + receiver, from
# its -J cpu_utilization); the BPF time of the rest of magnetd's programs for
# comparison. Not measured here: the kernel's own work around the callbacks
# (the extra __skb_tstamp_tx calls); a throughput A/B with MAGNET_HOOKS_DENY=sock_ops
# is bench/daemon-overhead.sh's job.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_need daemon-stages-cost ip iperf3 python3 curl
bench_root daemon-stages-cost "it loads BPF programs and makes namespaces"
MAGNET=$(bench_magnet daemon-stages-cost)
SECS=${SECS:-5}
A=mgst-a-$$; B=mgst-b-$$
tmp=$(mktemp -d)
port=$((20000 + $$ % 20000))
cleanup() {
    [ -n "${dpid:-}" ] && kill "$dpid" 2>/dev/null && wait "$dpid" 2>/dev/null
    bench_netns_del "$A" "$B"
    rm -rf "$tmp"
}
trap cleanup EXIT
bench_netns_pair "$A" "$B" mgsta mgstb 10.235.0.1 10.235.0.2
printf 'http = "127.0.0.1:%s"\nsocket = "%s/magnetd.sock"\n' "$port" "$tmp" >"$tmp/d.toml"
"$MAGNET" daemon --config "$tmp/d.toml" 2>"$tmp/err" >/dev/null &
dpid=$!
for _ in $(seq 50); do grep -q "magnetd: ready" "$tmp/err" && break; sleep 0.2; done
grep -q "stack_latency=sock_ops" "$tmp/err" || { echo "daemon-stages-cost: the stack_latency part is not on the TX timestamp callbacks here:" >&2; cat "$tmp/err" >&2; exit 2; }
metrics() { curl -s "http://127.0.0.1:$port/metrics" >"$tmp/$1"; }
for case in bulk small; do
    ip netns exec "$B" iperf3 -s -D -1 -p 5201 >/dev/null
    sleep 0.3
    args=(-t "$SECS" -J)
    [ "$case" = small ] && args+=(-l 100 -N)
    metrics m0
    ip netns exec "$A" iperf3 -c 10.235.0.2 -p 5201 "${args[@]}" >"$tmp/iperf.json"
    metrics m1
    python3 - "$case" "$tmp/m0" "$tmp/m1" "$tmp/iperf.json" <<'PY'
import json, re, sys
case, m0, m1, ip = sys.argv[1:]
def read(p):
    out = {}
    for l in open(p):
        m = re.match(r'magnet_bpf_(run_seconds|runs)_total\{program="([^"]+)"\} (\S+)', l)
        if m:
            out.setdefault(m.group(2), {})[m.group(1)] = float(m.group(3))
    return out
a, b = read(m0), read(m1)
j = json.load(open(ip))
end = j["end"]
secs = end["sum_sent"]["seconds"]
cpu = end["cpu_utilization_percent"]
# iperf3's CPU: sender + receiver, percent of one CPU
iperf_ns = (cpu["host_total"] + cpu["remote_total"]) / 100 * secs * 1e9
sends = None
stage_ns = other_ns = 0.0
print(f"== {case}: {end['sum_sent']['bytes']/secs*8/1e9:.2f} Gbit/s over {secs:.1f} s")
for p in sorted(b):
    runs = b[p].get("runs", 0) - a.get(p, {}).get("runs", 0)
    ns = (b[p].get("run_seconds", 0) - a.get(p, {}).get("run_seconds", 0)) * 1e9
    if runs == 0:
        continue
    print(f"  {p:14} runs {runs:12.0f}  ns/run {ns/runs:7.1f}  total {ns/1e6:9.2f} ms")
    if p.startswith("stages_"):
        stage_ns += ns
    else:
        other_ns += ns
    if p == "stages_send":
        sends = runs
print(f"  stage programs: {stage_ns/1e6:.2f} ms = {100*stage_ns/iperf_ns:.3f} % of iperf3's CPU "
      f"({iperf_ns/1e9:.2f} s); the rest of magnetd's programs: {100*other_ns/iperf_ns:.3f} %")
if sends:
    print(f"  stage ns per tcp_sendmsg_locked pass: {stage_ns/sends:.0f}")
PY
done
