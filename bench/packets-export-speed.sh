#!/usr/bin/env bash
# Reading speed of `magnet packets` and `magnet export` (csv, jsonl, perfetto, parquet)
# on a synthetic trace (crates/magnet-analyze/examples/gen_trace.rs), this build
# against another one (MAGNET_ALT), alternated within each round; medians of wall and
# CPU (user+sys) time, and whether both builds wrote the same bytes (md5).
#
# usage: MAGNET_ALT=/path/to/other/magnet bench/packets-export-speed.sh [EVENTS] [OUT.md]
#   (defaults 2000000, bench/out/packets-export-speed.md); ROUNDS (3)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_need packets-export-speed /usr/bin/time python3
cd "$(dirname "$0")/.."
EVENTS=${1:-2000000}
OUT=${2:-bench/out/packets-export-speed.md}
ROUNDS=${ROUNDS:-3}
[[ -x ${MAGNET_ALT:-} ]] || { echo "set MAGNET_ALT=<another magnet build> to compare with" >&2; exit 2; }
mkdir -p "$(dirname "$OUT")"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
cargo build -q --release -p magnet-cli
cargo build -q --release -p magnet-analyze --example gen_trace
MAGNET=$CARGO_TARGET_DIR/release/magnet
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
T=$WORK/bench.mgt
"$CARGO_TARGET_DIR/release/examples/gen_trace" "$T" "$EVENTS" >&2
: >"$WORK/rows"
for r in $(seq "$ROUNDS"); do
    for c in "packets" "packets --json" "export -f csv" "export -f jsonl" "export -f perfetto" "export -f parquet"; do
        for b in this alt; do
            bin=$MAGNET; [[ $b == alt ]] && bin=$MAGNET_ALT
            o=()
            [[ $c == export* ]] && o=(-o "$WORK/o")
            /usr/bin/time -f "%e %U %S" -o "$WORK/t" $bin $c "${o[@]}" "$T" >"$WORK/so" 2>/dev/null
            f=$WORK/so; [[ $c == export* ]] && f=$WORK/o
            h=$(md5sum <"$f" | cut -c1-12)
            rm -f "$WORK/o" "$WORK/so"
            echo "$c|$b|$h|$(cat "$WORK/t")" >>"$WORK/rows"
        done
    done
done
python3 - "$WORK/rows" "$EVENTS" "$ROUNDS" >"$OUT" <<'PY'
import collections, statistics as st, sys
d = collections.defaultdict(list); h = collections.defaultdict(set); order = []
for l in open(sys.argv[1]):
    c, b, hh, t = l.strip().split("|")
    e, u, s = map(float, t.split())
    d[(c, b)].append((e, u + s)); h[c].add(hh)
    if c not in order: order.append(c)
print(f"# packets / export reading speed ({sys.argv[2]} events, {sys.argv[3]} rounds, medians; alt = MAGNET_ALT)\n")
print("| command | wall s alt | wall s this | CPU s alt | CPU s this | CPU alt/this | output |")
print("|---|---:|---:|---:|---:|---:|---|")
for c in order:
    m = lambda b, i: st.median(x[i] for x in d[(c, b)])
    print(f"| `{c}` | {m('alt',0):.2f} | {m('this',0):.2f} | {m('alt',1):.2f} | {m('this',1):.2f} | "
          f"{m('alt',1)/m('this',1):.2f}x | {'same' if len(h[c]) == 1 else 'DIFFERENT'} |")
PY
cat "$OUT"
