#!/usr/bin/env bash
# What magnetd's stage timing costs in BPF time, from the kernel's own
# accounting (run_time_ns / run_cnt, which magnetd serves as
# magnet_bpf_run_seconds_total / magnet_bpf_runs_total per program): the send
# stages (`stack_latency`: sock_ops TX timestamp callbacks and
# tp_btf/tcp_sendmsg_locked, programs stages_*) and the receive stages
# (`receive_latency`: tp_btf/tcp_probe and tp_btf/sock_recv_length, rx_*).
#
#   sudo SECS=5 ROUNDS=3 EVERY="1 16 64" bench/daemon-stages-cost.sh
#
# Workload: iperf3 TCP between two network namespaces over a veth pair, made
# after magnetd started (so its sends are timed): "bulk" (128 KiB writes,
# offloads on) and "small" (100-byte writes, TCP_NODELAY). For each value N in
# EVERY magnetd is started fresh with send_stages_every = receive_stages_every
# = N; rounds alternate the values (N1 N2 … N1 N2 …). Per run: the send and
# receive stage programs' BPF time as a share of iperf3's own CPU (sender +
# receiver, from its -J cpu_utilization), and the rest of magnetd's programs
# for comparison; at the end the medians per case and N. Not measured here:
# the kernel's own work around the callbacks (the extra __skb_tstamp_tx
# calls); a throughput A/B is bench/daemon-overhead.sh's job.
#
# DAEMON_CONF adds lines to magnetd's config, e.g. DAEMON_CONF='stage_hooks =
# "always"' against the default (the stage programs only in the sampling
# windows).
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
ROUNDS=${ROUNDS:-3}
EVERY=${EVERY:-"1 16"}
metrics() { curl -s "http://127.0.0.1:$port/metrics" >"$tmp/$1"; }
start_daemon() { # N
    printf 'http = "127.0.0.1:%s"\nsocket = "%s/magnetd.sock"\nsend_stages_every = %s\nreceive_stages_every = %s\n' \
        "$port" "$tmp" "$1" "$1" >"$tmp/d.toml"
    [ -z "${DAEMON_CONF:-}" ] || printf '%s\n' "$DAEMON_CONF" >>"$tmp/d.toml"
    "$MAGNET" daemon --config "$tmp/d.toml" 2>"$tmp/err" >/dev/null &
    dpid=$!
    for _ in $(seq 50); do grep -q "magnetd: ready" "$tmp/err" && break; sleep 0.2; done
    grep -q "stack_latency=sock_ops" "$tmp/err" || { echo "daemon-stages-cost: the stack_latency part is not on the TX timestamp callbacks here:" >&2; cat "$tmp/err" >&2; exit 2; }
}
stop_daemon() { kill "$dpid"; wait "$dpid" 2>/dev/null || true; dpid=; }
for round in $(seq "$ROUNDS"); do
for every in $EVERY; do
start_daemon "$every"
echo "## round $round, every $every"
for case in bulk small; do
    ip netns exec "$B" iperf3 -s -D -1 -p 5201 >/dev/null
    sleep 0.3
    args=(-t "$SECS" -J)
    [ "$case" = small ] && args+=(-l 100 -N)
    metrics m0
    ip netns exec "$A" iperf3 -c 10.235.0.2 -p 5201 "${args[@]}" >"$tmp/iperf.json"
    metrics m1
    python3 - "$case" "$tmp/m0" "$tmp/m1" "$tmp/iperf.json" "$every" "$tmp/results" <<'PY'
import json, re, sys
case, m0, m1, ip, every, results = sys.argv[1:]
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
stage_ns = rx_ns = other_ns = 0.0
print(f"== {case}: {end['sum_sent']['bytes']/secs*8/1e9:.2f} Gbit/s over {secs:.1f} s")
for p in sorted(b):
    runs = b[p].get("runs", 0) - a.get(p, {}).get("runs", 0)
    ns = (b[p].get("run_seconds", 0) - a.get(p, {}).get("run_seconds", 0)) * 1e9
    if runs == 0:
        continue
    print(f"  {p:14} runs {runs:12.0f}  ns/run {ns/runs:7.1f}  total {ns/1e6:9.2f} ms")
    if p.startswith("stages_"):
        stage_ns += ns
    elif p.startswith("rx_"):
        rx_ns += ns
    else:
        other_ns += ns
    if p == "stages_send":
        sends = runs
print(f"  send stage programs: {stage_ns/1e6:.2f} ms = {100*stage_ns/iperf_ns:.3f} % of iperf3's CPU "
      f"({iperf_ns/1e9:.2f} s); receive stage programs {100*rx_ns/iperf_ns:.3f} %; "
      f"the rest of magnetd's programs: {100*other_ns/iperf_ns:.3f} %")
with open(results, "a") as f:
    f.write(f"{case} {every} {100*stage_ns/iperf_ns:.4f} {100*rx_ns/iperf_ns:.4f} "
            f"{100*other_ns/iperf_ns:.4f} {end['sum_sent']['bytes']/secs*8/1e9:.3f}\n")
if sends:
    print(f"  stage ns per tcp_sendmsg_locked pass: {stage_ns/sends:.0f}")
PY
done
stop_daemon
done
done
echo "## medians over $ROUNDS rounds (% of iperf3's CPU)"
python3 - "$tmp/results" <<'PY'
import statistics, sys
rows = {}
for l in open(sys.argv[1]):
    case, every, st, rx, other, gbit = l.split()
    rows.setdefault((case, int(every)), []).append((float(st), float(rx), float(other), float(gbit)))
for (case, every), v in sorted(rows.items()):
    med = [statistics.median(x[i] for x in v) for i in range(4)]
    print(f"  {case:5} every {every:5}: send stages {med[0]:.2f} %  receive stages {med[1]:.2f} %  "
          f"rest {med[2]:.2f} %  ({med[3]:.2f} Gbit/s, {len(v)} runs)")
PY
