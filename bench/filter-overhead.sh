#!/usr/bin/env bash
# Cost of `record -f EXPR` (the in-kernel pcap filter), on this host (root, real BPF).
#
#   bench/filter-overhead.sh [ROUNDS] [N] [SIZE]   (default: 7 20000 512)
#
# Each round runs, alternated, N sendto() calls of SIZE bytes over loopback UDP
# (magnet loadgen: every datagram is four packet events, ip out/in and dev
# transmit/receive) under:
#   base     no recorder
#   layers   magnet record (the default layers: app,tcp,ip,dev)
#   all      the same with -f 'udp port 7621': the expression matches every packet
#            (the interpreter runs at every packet event and everything is kept)
#   none     the same with -f 'udp port 9': it matches none (the interpreter runs,
#            the packet events are not written)
# Throughput = N*SIZE / the transfer's elapsed time (loadgen's udp.elapsed_us).
# Prints per case the median throughput, its ratio to base, the median trace size.
# Needs root and a built magnet (target/debug/magnet, or MAGNET=).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_need filter-overhead python3
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
rounds=${1:-7}
n=${2:-20000}
size=${3:-512}
bin=${MAGNET:-$root/target/debug/magnet}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
lg=("$bin" loadgen --udp "${n}x${size}" --port 7621)
for r in $(seq 1 "$rounds"); do
  for c in base layers all none; do
    case $c in
      base)   "${lg[@]}" > "$dir/lg.json" ;;
      layers) "$bin" record -q -o "$dir/r.mgt" -- "${lg[@]}" > "$dir/lg.json" ;;
      all)    "$bin" record -q -o "$dir/r.mgt" -f 'udp port 7621' -- "${lg[@]}" > "$dir/lg.json" ;;
      none)   "$bin" record -q -o "$dir/r.mgt" -f 'udp port 9' -- "${lg[@]}" > "$dir/lg.json" ;;
    esac
    us=$(grep -o '"elapsed_us":[0-9]*' "$dir/lg.json" | head -1 | cut -d: -f2)
    bytes=0
    [ "$c" = base ] || bytes=$(stat -c %s "$dir/r.mgt")
    echo "M $c $r $us $bytes"
    rm -f "$dir/r.mgt"
  done
done | tee "$dir/out" >&2
python3 - "$dir/out" "$n" "$size" <<'PY'
import sys, statistics as st
path, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
thr, sz = {}, {}
for l in open(path):
    _, case, r, us, b = l.split()
    thr.setdefault(case, []).append(n * size / (int(us) / 1e6))
    sz.setdefault(case, []).append(int(b))
base = st.median(thr["base"])
print(f"{len(thr['base'])} rounds, loadgen --udp {n}x{size} over loopback")
for case in ("base", "layers", "all", "none"):
    m = st.median(thr[case])
    print(f"{case:7} {m/1e6:9.2f} MB/s  ratio {m/base:.3f}  trace {st.median(sz[case])/1e6:.2f} MB")
print("all vs layers: %.3f" % (st.median(thr["all"]) / st.median(thr["layers"])))
PY
