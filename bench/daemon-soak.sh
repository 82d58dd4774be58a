#!/usr/bin/env bash
# magnetd soak: magnetd under continuous traffic for DURATION
# seconds (default 1800 = 30 min) — a rate-limited iperf3 stream between two
# namespaces plus a churn of short connections (`magnet loadgen`, 20 TCP
# connections a second, each 10 x 1000 B), so the connection map fills and
# is reaped all the time. Every STEP seconds it records magnetd's RSS, the
# connection map's entries and magnetd's health; at the end it prints the
# first, last and largest RSS. Flat RSS = bounded memory.
#
# Environment: DURATION (1800), STEP (10), RATE (iperf3 -b, 500M), MAGNET, OUT.
# Needs root, iperf3, curl, python3. Not a CI test.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_need daemon-soak curl ip iperf3 python3
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
DURATION=${DURATION:-1800}
STEP=${STEP:-10}
RATE=${RATE:-500M}
OUT=${OUT:-$here/out}
MAGNET=${MAGNET:-$repo/target/release/magnet}
"$MAGNET" daemon --help >/dev/null 2>&1 || MAGNET=$repo/target/debug/magnet
"$MAGNET" daemon --help >/dev/null 2>&1 || { echo "build magnet first or set MAGNET" >&2; exit 1; }
mkdir -p "$OUT"
tmp=$(mktemp -d)
A=mgdsoak-a-$$; B=mgdsoak-b-$$
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  ip netns del $A 2>/dev/null || true; ip netns del $B 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
ip netns add $A; ip netns add $B
ip -n $A link set lo up; ip -n $B link set lo up
ip link add mgds-a netns $A type veth peer name mgds-b netns $B
ip -n $A addr add 10.234.0.1/24 dev mgds-a; ip -n $B addr add 10.234.0.2/24 dev mgds-b
ip -n $A link set mgds-a up; ip -n $B link set mgds-b up

port=$((20000 + $$ % 20000))
printf 'http = "127.0.0.1:%s"\nsocket = "%s/magnetd.sock"\nretain_closed = "5s"\nidle = "30s"\n' "$port" "$tmp" > "$tmp/magnetd.toml"
"$MAGNET" daemon --config "$tmp/magnetd.toml" 2>"$tmp/log" & dpid=$!; pids+=($dpid)
for _ in $(seq 1 100); do grep -q "magnetd: ready" "$tmp/log" && break; sleep 0.1; done

ip netns exec $B iperf3 -s >/dev/null 2>&1 & pids+=($!)
sleep 0.5
ip netns exec $A iperf3 -c 10.234.0.2 -t "$DURATION" -b "$RATE" >/dev/null 2>&1 & pids+=($!)
( end=$((SECONDS + DURATION)); while [ $SECONDS -lt $end ]; do
    ip netns exec $A "$MAGNET" loadgen --tcp 10x1000 >/dev/null 2>&1 || true; sleep 0.05; done ) & pids+=($!)

csv=$OUT/daemon-soak.tsv
echo -e "t_s\trss_kib\tmap_entries\tconnections_created\tevents\tmap_full" > "$csv"
start=$SECONDS
while [ $((SECONDS - start)) -lt "$DURATION" ]; do
  sleep "$STEP"
  rss=$(awk '/VmRSS/ {print $2}' /proc/$dpid/status)
  read -r entries created events full < <(curl -s "127.0.0.1:$port/health" | python3 -c '
import json,sys; h=json.load(sys.stdin)["health"]
print(h["map_entries"], h["connections_created"], h["events"], h["map_full"])')
  echo -e "$((SECONDS - start))\t$rss\t$entries\t$created\t$events\t$full" >> "$csv"
done
kill -TERM $dpid; wait $dpid || { echo "magnetd did not exit cleanly" >&2; exit 1; }
python3 - "$csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
rss = [int(r["rss_kib"]) for r in rows]
print(f"samples {len(rows)} over {rows[-1]['t_s']} s")
print(f"RSS KiB: first {rss[0]}, last {rss[-1]}, max {max(rss)}, min {min(rss)}")
print(f"map entries: last {rows[-1]['map_entries']}, max {max(int(r['map_entries']) for r in rows)}")
print(f"connections created: {rows[-1]['connections_created']}, map full: {rows[-1]['map_full']}, events: {rows[-1]['events']}")
PY
