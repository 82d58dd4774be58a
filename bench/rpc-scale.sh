#!/usr/bin/env bash
# Reassembly and flow-table scaling of `magnet rpc` against tshark:
# one RPC record as 200,000 reversed 1-byte segments, and 300,000 TCP flows, each a
# call and its reply. Alternated runs, medians of wall time and peak RSS.
# Needs tshark and a release build (cargo build --release -p magnet-cli).
# Usage: bench/rpc-scale.sh [MAGNET_BIN] [RUNS]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_need rpc-scale /usr/bin/time python3 tshark
here=$(cd "$(dirname "$0")" && pwd)
magnet=${1:-$here/../target/release/magnet}
runs=${2:-3}
work=$(mktemp -d /var/tmp/magnet-rpc-scale.XXXXXX)
trap 'rm -rf "$work"' EXIT
python3 "$here/rpc-scale.py" reversed "$work/reversed.pcap" 200000
python3 "$here/rpc-scale.py" flows "$work/flows.pcap" 300000
measure() { # label, command...
    local label=$1; shift
    /usr/bin/time -f '%e %M' -o "$work/t" "$@" > "$work/out" 2>/dev/null || true
    read -r secs rss < "$work/t"
    echo "$label $secs $rss $(wc -l < "$work/out")" | tee -a "$work/results"
}
for i in $(seq "$runs"); do
    for cap in reversed flows; do
        measure "magnet-$cap" "$magnet" rpc -q -r "$work/$cap.pcap"
        measure "tshark-$cap" tshark -r "$work/$cap.pcap" -n -o tcp.try_heuristic_first:TRUE \
            -Y 'rpc.msgtyp == 1' -T fields -e rpc.xid -e rpc.time
    done
done
echo "# label: median wall s, median peak RSS KiB, output lines ($runs runs)"
for l in magnet-reversed tshark-reversed magnet-flows tshark-flows; do
    awk -v l=$l '$1==l' "$work/results" | sort -k2 -n | awk -v l=$l '{a[NR]=$2; r[NR]=$3; n=$4} END {printf "%s: %s s, %s KiB, %s lines\n", l, a[int((NR+1)/2)], r[int((NR+1)/2)], n}'
done
