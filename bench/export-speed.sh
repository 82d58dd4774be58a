#!/usr/bin/env bash
# Speed of `magnet export -f parquet` (and, for scale, `magnet parse` of the same
# trace to /dev/null) in events per second of wall and of CPU (user+sys) time.
# Goal: Parquet export >= 2 M events/s on a large trace.
#
# The trace: TRACE=FILE (a real recording, e.g. `magnet record --all -o FILE` of a
# loopback transfer), else a synthetic one of EVENTS events written by
# crates/magnet-analyze/examples/gen_trace.rs (16 TCP connections, every send
# followed through every layer). Each case runs ROUNDS times, alternating within a
# round; medians are kept. MAGNET_ALT=/path/to/other/magnet adds that build's rows
# in the same rounds (before/after in one run) and compares the files' md5 ("same
# bytes"); where they differ, DuckDB compares the two Parquet files' schema and
# rows, in order.
#
# usage: bench/export-speed.sh [EVENTS] [OUT.md]   (defaults 2000000, bench/out/export-speed.md)
#   env: TRACE, MAGNET_ALT, ROUNDS (3), FORMATS ("parquet"; e.g. "parquet csv jsonl")
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_need export-speed /usr/bin/time python3
cd "$(dirname "$0")/.."
EVENTS=${1:-2000000}
OUT=${2:-bench/out/export-speed.md}
ROUNDS=${ROUNDS:-3}
FORMATS=${FORMATS:-parquet}
mkdir -p "$(dirname "$OUT")"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
cargo build -q --release -p magnet-cli
MAGNET=$CARGO_TARGET_DIR/release/magnet
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
if [[ -n ${TRACE:-} ]]; then
    T=$TRACE
    WHAT="$(basename "$T")"
else
    cargo build -q --release -p magnet-analyze --example gen_trace
    T=$WORK/bench.mgt
    "$CARGO_TARGET_DIR/release/examples/gen_trace" "$T" "$EVENTS" >&2
    WHAT="gen_trace"
fi
RECORDS=$("$MAGNET" info "$T" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["records"])')
BYTES=$(stat -c %s "$T")

BINS="this"
[[ -n ${MAGNET_ALT:-} ]] && BINS="this alt"
: >"$WORK/rows"
for _ in $(seq "$ROUNDS"); do
    for c in parse $FORMATS; do
        for b in $BINS; do
            bin=$MAGNET; [[ $b == alt ]] && bin=$MAGNET_ALT
            if [[ $c == parse ]]; then
                args=(parse "$T")
            else
                args=(export -f "$c" -o "$WORK/o" "$T")
            fi
            /usr/bin/time -f "%e %U %S" -o "$WORK/t" "$bin" "${args[@]}" >/dev/null 2>"$WORK/err" ||
                { cat "$WORK/err" >&2; exit 1; }
            h=-
            if [[ -f $WORK/o ]]; then
                h=$(md5sum <"$WORK/o" | cut -c1-12)
                # One output of each build is kept to compare their rows.
                if [[ -f $WORK/keep-$b-$c ]]; then rm -f "$WORK/o"; else mv "$WORK/o" "$WORK/keep-$b-$c"; fi
            fi
            read -r e u s <"$WORK/t"
            echo "$b $c $e $(python3 -c "print($u + $s)") $h" >>"$WORK/rows"
        done
    done
done
# Where the builds wrote different bytes: the same rows, in the same order, with the
# same schema? (DuckDB, when its Python package is installed.)
: >"$WORK/rowcheck"
for c in $FORMATS; do
    [[ -f $WORK/keep-alt-$c && $c == parquet ]] || continue
    cmp -s "$WORK/keep-alt-$c" "$WORK/keep-this-$c" && continue
    python3 - "$WORK/keep-alt-$c" "$WORK/keep-this-$c" >>"$WORK/rowcheck" 2>&1 <<'PY' || true
import sys
try:
    import duckdb
except ImportError:
    print("parquet rows: not compared (no duckdb module)"); sys.exit(0)
a, b = sys.argv[1], sys.argv[2]
q = lambda s: duckdb.sql(s).fetchall()
same_schema = q(f"DESCRIBE SELECT * FROM read_parquet('{a}')") == q(f"DESCRIBE SELECT * FROM read_parquet('{b}')")
n = q(f"SELECT count(*) FROM read_parquet('{a}')")[0][0]
only = lambda x, y: q(f"SELECT count(*) FROM (SELECT * FROM read_parquet('{x}') EXCEPT ALL SELECT * FROM read_parquet('{y}'))")[0][0]
moved = q(f"SELECT count(*) FROM (SELECT row_number() OVER () i, ts_ns, kind FROM read_parquet('{a}')) x "
          f"JOIN (SELECT row_number() OVER () i, ts_ns, kind FROM read_parquet('{b}')) y USING (i) "
          f"WHERE x.ts_ns <> y.ts_ns OR x.kind <> y.kind")[0][0]
ok = same_schema and only(a, b) == 0 and only(b, a) == 0 and moved == 0
print(f"parquet rows: {'the same' if ok else 'DIFFERENT'} ({n:,} rows; schema "
      f"{'same' if same_schema else 'different'}; rows only in alt {only(a, b)}, only in this "
      f"{only(b, a)}; out of order {moved})")
PY
done
python3 - "$WORK/rows" "$RECORDS" "$ROUNDS" "$WHAT" "$BYTES" "$(git rev-parse --short HEAD)" >"$OUT" <<'PY'
import collections, statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
n, rounds, what, size, commit = int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6]
print(f"# magnet export speed: {what}, {n:,} events, {size / 1e6:.0f} MB, {rounds} rounds, medians (commit {commit})\n")
print("| build | command | wall s | events/s (wall) | CPU s | events/s (CPU) | output |")
print("|---|---|---:|---:|---:|---:|---|")
hashes = collections.defaultdict(set)
for r in rows:
    hashes[r[1]].add(r[4])
order = []
for r in rows:
    if r[1] not in order:
        order.append(r[1])
for b in ("alt", "this"):
    for c in order:
        w = [float(r[2]) for r in rows if r[0] == b and r[1] == c]
        u = [float(r[3]) for r in rows if r[0] == b and r[1] == c]
        if not w:
            continue
        mw, mu = st.median(w), st.median(u)
        rate = lambda s: f"{n / s / 1e6:.2f} M" if s > 0 else "inf"
        name = "parse" if c == "parse" else f"export -f {c}"
        same = "-" if c == "parse" else ("same bytes" if len(hashes[c]) == 1 else "other bytes")
        print(f"| {b} | `{name}` | {mw:.2f} | {rate(mw)} | {mu:.2f} | {rate(mu)} | {same} |")
PY
cat "$WORK/rowcheck" >>"$OUT"
cat "$OUT"
