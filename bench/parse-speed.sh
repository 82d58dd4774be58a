#!/usr/bin/env bash
# Reading speed of `magnet parse` (text and JSON lines) and `magnet info` on a
# synthetic trace of >= 10 million events (crates/magnet-analyze/examples/gen_trace.rs:
# 16 TCP connections, every send followed through every layer as the recorder
# writes it). Output goes to /dev/null. Each case runs ROUNDS times, the cases
# alternating within a round; the median wall time is kept, with the median CPU
# time (user+sys) next to it: on a shared machine wall time includes waiting
# for a core, CPU time does not.
#
# usage: bench/parse-speed.sh [EVENTS] [OUT.md]   (defaults 10000000, bench/out/parse-speed.md)
# MAGNET_ALT=/path/to/other/magnet adds that build's parse/info as "alt" rows,
# alternated with this build's in the same rounds (before/after in one run).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_need parse-speed /usr/bin/time python3
cd "$(dirname "$0")/.."
EVENTS=${1:-10000000}
OUT=${2:-bench/out/parse-speed.md}
ROUNDS=${ROUNDS:-5}
mkdir -p "$(dirname "$OUT")"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
cargo build -q --release -p magnet-cli
cargo build -q --release -p magnet-analyze --example gen_trace
MAGNET=$CARGO_TARGET_DIR/release/magnet
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
TRACE=$WORK/bench.mgt
"$CARGO_TARGET_DIR/release/examples/gen_trace" "$TRACE" "$EVENTS" >&2
RECORDS=$("$MAGNET" info "$TRACE" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["records"])')

BINS="this"
[ -n "${MAGNET_ALT:-}" ] && BINS="this alt"
CASES="text json info"
: > "$WORK/rows"
for r in $(seq "$ROUNDS"); do
    for c in $CASES; do
        for b in $BINS; do
            bin=$MAGNET; [ "$b" = alt ] && bin=$MAGNET_ALT
            case $c in
                text) args=(parse "$TRACE") ;;
                json) args=(parse --json "$TRACE") ;;
                info) args=(info "$TRACE") ;;
            esac
            /usr/bin/time -f "%e %U %S" -o "$WORK/t" "$bin" "${args[@]}" > /dev/null
            read -r e u s < "$WORK/t"
            echo "$b $c $e $(python3 -c "print($u + $s)")" >> "$WORK/rows"
        done
    done
done
python3 - "$WORK/rows" "$RECORDS" "$ROUNDS" > "$OUT" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
n = int(sys.argv[2])
print(f"# magnet parse / info reading speed ({n:,} records, {sys.argv[3]} rounds, medians)\n")
print("| build | case | wall s | events/s (wall) | CPU s | events/s (CPU) |")
print("|---|---|---:|---:|---:|---:|")
for b in ("this", "alt"):
    for c in ("text", "json", "info"):
        w = [float(r[2]) for r in rows if r[0] == b and r[1] == c]
        u = [float(r[3]) for r in rows if r[0] == b and r[1] == c]
        if not w:
            continue
        mw, mu = statistics.median(w), statistics.median(u)
        name = {"text": "parse", "json": "parse --json", "info": "info"}[c]
        rate = lambda s: f"{n / s / 1e6:.2f} M" if s > 0 else "inf"
        print(f"| {b} | {name} | {mw:.2f} | {rate(mw)} | {mu:.2f} | {rate(mu)} |")
PY
cat "$OUT"
