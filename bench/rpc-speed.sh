#!/usr/bin/env bash
# `magnet rpc` in JSON mode and in rpcspy text mode against tshark's
# `-Y rpc -T fields -e rpc.xid` on one capture (goal: >= 10x faster in JSON, >= 20x in
# text). Runs alternated, medians of wall time, peak RSS; the ratios use the medians.
# Make the capture with: KEEP=/var/tmp/big.pcap bench/rpc-decode.sh MAGNET 500000000 0
# (many small RPCs: SMALL=30 KEEP=... bench/rpc-decode.sh MAGNET 500000000 0)
# Usage: bench/rpc-speed.sh CAPTURE [MAGNET_BIN] [RUNS]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_need rpc-speed /usr/bin/time tshark
here=$(cd "$(dirname "$0")" && pwd)
cap=$1
magnet=${2:-$here/../target/release/magnet}
runs=${3:-5}
work=$(mktemp -d /var/tmp/magnet-rpc-speed.XXXXXX)
trap 'rm -rf "$work"' EXIT
cat "$cap" > /dev/null # page cache
measure() { # label, command...
    local label=$1; shift
    /usr/bin/time -f '%e %M %U %S' -o "$work/t" "$@" > "$work/out" 2>/dev/null || true
    read -r secs rss usr sys < "$work/t"
    echo "$label $secs $rss $(wc -l < "$work/out") $(echo "$usr + $sys" | bc -l)" | tee -a "$work/results"
}
for i in $(seq "$runs"); do
    measure magnet-json "$magnet" rpc --json -q -r "$cap"
    measure magnet-text "$magnet" rpc -q -r "$cap"
    measure tshark tshark -r "$cap" -n -Y rpc -T fields -e rpc.xid
done
echo "# $(stat -c %s "$cap") bytes; label: median wall s, median peak RSS KiB, output lines, median CPU s (user+sys) ($runs runs)"
for l in magnet-json magnet-text tshark; do
    cpu=$(awk -v l=$l '$1==l {print $5}' "$work/results" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    awk -v l=$l '$1==l' "$work/results" | sort -k2 -n | awk -v l=$l -v cpu="$cpu" '{a[NR]=$2; r[NR]=$3; n=$4} END {printf "%s %s %s %s %s\n", l, a[int((NR+1)/2)], r[int((NR+1)/2)], n, cpu}'
done | tee "$work/med"
awk '{t[$1]=$2; c[$1]=$5} END {
    j = t["tshark"]/t["magnet-json"]; x = t["tshark"]/t["magnet-text"]
    printf "ratio wall: json %.1fx, text %.1fx; ratio CPU: json %.1fx, text %.1fx\n", j, x, c["tshark"]/c["magnet-json"], c["tshark"]/c["magnet-text"]
    printf "goal (wall time): json >= 10x: %s; text >= 20x: %s\n", (j >= 10 ? "met" : "NOT met"), (x >= 20 ? "met" : "NOT met")
}' "$work/med"
echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs (wall ratios need a quiet host)"
