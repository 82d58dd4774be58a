#!/usr/bin/env bash
# Cost of `record --funcs auto`, measured inside one QEMU guest run
# (Debian's kernel under TCG: only ratios inside one run mean anything).
#
#   bench/funcs-overhead.sh [KERNEL] [ROUNDS] [N] [SIZE]    (default: 6.12 5 2000 16384)
#
# Each round runs, alternated, a loopback TCP transfer of N send() calls of SIZE
# bytes (magnet loadgen) under:
#   base     no recorder
#   layers   magnet record --layers app,tcp,ip,dev  (the default layers)
#   funcs    the same plus --funcs auto             (every selected function with a
#            struct sk_buff * in parameters 1-5 that can be probed)
# Throughput = N*SIZE / the transfer's elapsed time (loadgen's tcp.elapsed_us).
# Prints per case the median throughput and its ratio to base, events recorded,
# functions attached and attach time. Needs the QEMU lab (scripts/lab/run) and a
# built magnet (target/debug/magnet, or MAGNET=path).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_need funcs-overhead python3 qemu-system-x86_64
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
kernel=${1:-6.12}
rounds=${2:-5}
n=${3:-2000}
size=${4:-16384}
bin=${MAGNET:-$root/target/debug/magnet}
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# The guest script: one line per measurement, "case round elapsed_us events".
guest=$(cat <<EOS
for r in \$(seq 1 $rounds); do
  for c in base layers funcs; do
    case \$c in
      base)   ./magnet loadgen --tcp ${n}x${size} --port 7600 > /work/lg.json ;;
      layers) ./magnet record -o /work/r.mgt --layers app,tcp,ip,dev --json -- ./magnet loadgen --tcp ${n}x${size} --port 7600 > /work/lg.json 2>/work/err ;;
      funcs)  ./magnet record -o /work/r.mgt --layers app,tcp,ip,dev --funcs auto --json -- ./magnet loadgen --tcp ${n}x${size} --port 7600 > /work/lg.json 2>/work/err ;;
    esac
    us=\$(grep -o '"elapsed_us":[0-9]*' /work/lg.json | head -1 | cut -d: -f2)
    ev=\$(grep -o '"records":[0-9]*' /work/lg.json | tail -1 | cut -d: -f2)
    echo "M \$c \$r \$us \${ev:-0}"
    if [ \$c = funcs ]; then ./magnet info /work/r.mgt | grep -i 'kprobe' | head -1 | sed 's/^/H /'; fi
  done
done
EOS
)
"$root/scripts/lab/run" "$kernel" --bin "$bin" --timeout 3000 -- sh -c "$guest" | tee "$out" >&2
python3 - "$out" "$n" "$size" "$kernel" <<'PY'
import sys, statistics as st
path, n, size, kernel = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rows = [l.split() for l in open(path) if l.startswith("M ")]
hooks = [l[2:].strip() for l in open(path) if l.startswith("H ")]
thr = {}
ev = {}
for _, case, r, us, e in rows:
    thr.setdefault(case, []).append(n * size / (int(us) / 1e6))
    ev.setdefault(case, []).append(int(e))
base = st.median(thr["base"])
print(f"kernel {kernel}, {len(thr['base'])} rounds, loadgen --tcp {n}x{size} over loopback")
for case in ("base", "layers", "funcs"):
    m = st.median(thr[case])
    print(f"{case:8} {m/1e6:10.2f} MB/s  ratio {m/base:.3f}  events (median) {int(st.median(ev[case]))}")
print("funcs vs layers: %.3f" % (st.median(thr["funcs"]) / st.median(thr["layers"])))
if hooks:
    print("function probes:", hooks[0])
PY
