#!/usr/bin/env bash
# Cost of `record --snaplen N` (frame bytes), on this host (root, real BPF).
#
#   bench/snaplen-overhead.sh [ROUNDS] [N] [SIZE] [SNAP]   (default: 7 20000 1024 128)
#
# Each round runs, alternated, a loopback TCP transfer of N send() calls of SIZE
# bytes (magnet loadgen) under:
#   base     no recorder
#   layers   magnet record (the default layers: app,tcp,ip,dev)
#   snap     the same plus --snaplen SNAP
# Throughput = N*SIZE / the transfer's elapsed time (loadgen's tcp.elapsed_us).
# Prints per case the median throughput, its ratio to base, and the median trace
# size and records. Needs root and a built magnet (target/debug/magnet, or MAGNET=).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_need snaplen-overhead python3
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
rounds=${1:-7}
n=${2:-20000}
size=${3:-1024}
snap=${4:-128}
bin=${MAGNET:-$root/target/debug/magnet}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for r in $(seq 1 "$rounds"); do
  for c in base layers snap; do
    case $c in
      base)   "$bin" loadgen --tcp "${n}x${size}" --port 7620 > "$dir/lg.json" ;;
      layers) "$bin" record -q -o "$dir/r.mgt" -- "$bin" loadgen --tcp "${n}x${size}" --port 7620 > "$dir/lg.json" ;;
      snap)   "$bin" record -q -o "$dir/r.mgt" --snaplen "$snap" -- "$bin" loadgen --tcp "${n}x${size}" --port 7620 > "$dir/lg.json" ;;
    esac
    us=$(grep -o '"elapsed_us":[0-9]*' "$dir/lg.json" | head -1 | cut -d: -f2)
    bytes=0
    [ "$c" = base ] || bytes=$(stat -c %s "$dir/r.mgt")
    echo "M $c $r $us $bytes"
    rm -f "$dir/r.mgt"
  done
done | tee "$dir/out" >&2
python3 - "$dir/out" "$n" "$size" "$snap" <<'PY'
import sys, statistics as st
path, n, size, snap = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
thr, sz = {}, {}
for l in open(path):
    _, case, r, us, b = l.split()
    thr.setdefault(case, []).append(n * size / (int(us) / 1e6))
    sz.setdefault(case, []).append(int(b))
base = st.median(thr["base"])
print(f"{len(thr['base'])} rounds, loadgen --tcp {n}x{size} over loopback, --snaplen {snap}")
for case in ("base", "layers", "snap"):
    m = st.median(thr[case])
    print(f"{case:7} {m/1e6:9.2f} MB/s  ratio {m/base:.3f}  trace {st.median(sz[case])/1e6:.1f} MB")
print("snap vs layers: %.3f" % (st.median(thr["snap"]) / st.median(thr["layers"])))
PY
