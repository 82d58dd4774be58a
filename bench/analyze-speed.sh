#!/usr/bin/env bash
# Speed and memory of `magnet analyze` on a trace of >= 10 million events.
#
# The trace is synthetic (crates/magnet-analyze/examples/gen_trace.rs): 16 TCP
# connections, every 10 KiB send followed through every layer as the recorder
# writes it (TCP snapshot, IP GSO packet, 8 driver frames, dev_rx and tcp_probe on
# the receiver, recv, ACKs, context switches). Each measurement runs 3 times and
# the median is kept; `magnet info` (one read pass, counting) is the baseline for
# what reading alone costs. Peak memory is /usr/bin/time's maximum resident set.
#
# usage: bench/analyze-speed.sh [EVENTS] [OUT.md]   (default 10000000, bench/out/analyze-speed.md; results are kept in bench/notes/, current figure in BENCHMARKS.md)
# MAGNET_ALT=/path/to/other/magnet also times that build's `analyze` on the same
# trace, alternating with this build's (5 rounds each, medians), for a ratio.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_need analyze-speed /usr/bin/time python3
cd "$(dirname "$0")/.."
EVENTS=${1:-10000000}
OUT=${2:-bench/out/analyze-speed.md}
mkdir -p "$(dirname "$OUT")"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
cargo build -q --release -p magnet-cli
cargo build -q --release -p magnet-analyze --example gen_trace
MAGNET=$CARGO_TARGET_DIR/release/magnet
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
TRACE=$WORK/bench.mgt
"$CARGO_TARGET_DIR/release/examples/gen_trace" "$TRACE" "$EVENTS"
RECORDS=$("$MAGNET" info "$TRACE" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["records"])')
SIZE=$(stat -c %s "$TRACE")

# run NAME CMD... -> "seconds max_rss_kb" (median of 3 by time)
run() {
    local name=$1; shift
    local rows=()
    for i in 1 2 3; do
        /usr/bin/time -f "%e %M" -o "$WORK/t" "$@" > /dev/null 2> "$WORK/err" || { cat "$WORK/err" >&2; exit 1; }
        rows+=("$(cat "$WORK/t")")
    done
    printf '%s\n' "${rows[@]}" | sort -n | sed -n 2p
}
INFO=$(run info "$MAGNET" info "$TRACE")
TEXT=$(run analyze "$MAGNET" analyze "$TRACE")
JSON=$(run json "$MAGNET" analyze "$TRACE" --json)
SERIES=$(run report "$MAGNET" report "$TRACE" -o "$WORK/r.html")
ALT_ROWS=""
if [ -n "${MAGNET_ALT:-}" ]; then
    for i in 1 2 3 4 5; do
        for b in this alt; do
            bin=$MAGNET; [ "$b" = alt ] && bin=$MAGNET_ALT
            /usr/bin/time -f "%e" -o "$WORK/t" "$bin" analyze "$TRACE" > /dev/null 2> "$WORK/err" || { cat "$WORK/err" >&2; exit 1; }
            echo "$b $(cat "$WORK/t")" >> "$WORK/alt"
        done
    done
    med() { grep "^$1 " "$WORK/alt" | cut -d' ' -f2 | sort -n | sed -n 3p; }
    ALT_ROWS="$(med this) $(med alt)"
fi
rate() { python3 -c "import sys; r, s = int(sys.argv[1]), float(sys.argv[2]); print(f'{r / s / 1e6:.2f}' if s > 0 else 'inf')" "$RECORDS" "$1"; }
row() { set -- $2; printf '| %s | %s | %s | %.0f |\n' "$1_LABEL" "$1" "$(rate "$1")" "$(( $2 / 1024 ))"; }
{
    echo "# magnet analyze: speed and memory"
    echo
    echo "Measured $(date -u +%Y-%m-%d) on $(uname -n) ($(nproc) CPUs, Linux $(uname -r)) by \`bench/analyze-speed.sh\`."
    echo "Trace: synthetic, $RECORDS events, $((SIZE / 1024 / 1024)) MiB (16 TCP connections, every layer;"
    echo "\`crates/magnet-analyze/examples/gen_trace.rs\`). Median of 3 runs; the machine is shared, so"
    echo "absolute numbers move with its load — compare rows of one run."
    echo
    echo "| command | seconds | M events/s | peak RSS (MiB) |"
    echo "|---|---|---|---|"
    for pair in "magnet info (read + count: baseline)|$INFO" "magnet analyze (text)|$TEXT" "magnet analyze --json|$JSON" "magnet report (analysis + plot series + HTML)|$SERIES"; do
        label=${pair%%|*}; vals=${pair#*|}; set -- $vals
        printf '| %s | %s | %s | %d |\n' "$label" "$1" "$(rate "$1")" "$(( $2 / 1024 ))"
    done
    if [ -n "$ALT_ROWS" ]; then
        set -- $ALT_ROWS
        echo
        echo "Side by side, alternated, 5 rounds, medians: this build's \`analyze\` $1 s ($(rate "$1") M events/s),"
        echo "\`$MAGNET_ALT\` $2 s ($(rate "$2") M events/s); ratio this/alt $(python3 -c "print(f'{$1 / $2:.3f}')")."
    fi
    echo
    echo "Memory stays bounded: the analysis streams the trace through a 65536-record"
    echo "time-ordering window and keeps per-connection distributions (exact up to 4096"
    echo "distinct values, then coarsened), decimated plot series and age-swept packet maps."
} > "$OUT"
cat "$OUT"
