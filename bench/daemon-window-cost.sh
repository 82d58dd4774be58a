#!/usr/bin/env bash
# What a sampling window costs magnetd (packet_hooks = "sampled"): creating
# the two cgroup_skb links on the cgroup v2 root and destroying them. The
# kernel recomputes the effective programs of every cgroup below the root at
# each, so the cost grows with the number of cgroups: this runs magnetd for
# SECS seconds with windows of 20 ms every 100 ms (10 per second) with the
# host's own cgroups, then with N extra empty cgroups made for the run
# (under <cgroup v2 root>/magnet-wincost-PID, removed at the end), and prints
# magnetd's own measure from its log at stop.
#
# Environment: SECS (5), COUNTS ("0 1000"), MAGNET (binary). Needs root.
#   sudo MAGNET=target/release/magnet bench/daemon-window-cost.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_need daemon-window-cost python3
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
SECS=${SECS:-5}
COUNTS=${COUNTS:-"0 1000"}
MAGNET=${MAGNET:-$repo/target/release/magnet}
[ -x "$MAGNET" ] || { echo "build magnet first (cargo build --release -p magnet-cli) or set MAGNET" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "needs root (loads BPF programs, makes cgroups)" >&2; exit 1; }
root=$(awk '$9 == "cgroup2" {print $5; exit}' /proc/self/mountinfo)
[ -n "$root" ] || { echo "no cgroup v2 hierarchy mounted" >&2; exit 1; }
tmp=$(mktemp -d)
mine=$root/magnet-wincost-$$
dpid=""
cleanup() {
  [ -n "$dpid" ] && kill "$dpid" 2>/dev/null && wait "$dpid" 2>/dev/null || true
  [ -d "$mine" ] && find "$mine" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null; rmdir "$mine" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
printf 'http = ""\nsocket = "%s/s.sock"\npacket_window = "20ms"\npacket_period = "100ms"\n' "$tmp" > "$tmp/c.toml"
mkdir "$mine"
for n in $COUNTS; do
  have=$(find "$mine" -mindepth 1 -maxdepth 1 -type d | wc -l)
  for i in $(seq $((have + 1)) "$n"); do mkdir "$mine/c$i"; done
  total=$(find "$root" -type d | wc -l)
  "$MAGNET" daemon --config "$tmp/c.toml" 2> "$tmp/log" &
  dpid=$!
  for _ in $(seq 1 100); do grep -qs "magnetd: ready" "$tmp/log" && break; sleep 0.1; done
  sleep "$SECS"
  kill -TERM "$dpid"; wait "$dpid" || true; dpid=""
  echo "$total cgroups in the v2 hierarchy: $(grep -o 'sampling windows: .*' "$tmp/log")"
done
