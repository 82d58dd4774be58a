#!/usr/bin/env bash
# Peak RSS and time of `magnet packets`, `packets --handshake`, `pcap` and `match` on
# synthetic traces of growing length (crates/magnet-analyze/examples/gen_trace.rs: 16
# TCP connections, a 10 KiB GSO send cut into 8 segments, ACKs, app calls and
# context switches every 50 us), this build against another one (MAGNET_ALT), one run
# each (RSS does not depend on the machine's load; wall and CPU do: read CPU).
# With MATCH=1, also `match` against the capture this build's `pcap` writes (slow
# on this generator: its ACKs share one footprint per connection, and each frame
# looks at every packet with its footprint in the match window). CMDS="match"
# (with MATCH=1) runs only `match`.
#
# usage: MAGNET_ALT=/path/to/other/magnet bench/packet-model-memory.sh [EVENTS...] [> OUT.md]
#   (default EVENTS: 2000000 5000000 10000000)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_need packet-model-memory /usr/bin/time
cd "$(dirname "$0")/.."
[[ -x ${MAGNET_ALT:-} ]] || { echo "set MAGNET_ALT=<another magnet build> to compare with" >&2; exit 2; }
EVENTS=("$@")
[[ ${#EVENTS[@]} -gt 0 ]] || EVENTS=(2000000 5000000 10000000)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
cargo build -q --release -p magnet-cli
cargo build -q --release -p magnet-analyze --example gen_trace
MAGNET=$CARGO_TARGET_DIR/release/magnet
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
echo "| events | trace MB | build | command | wall s | CPU s | peak RSS MB | output |"
echo "|---:|---:|---|---|---:|---:|---:|---|"
for n in "${EVENTS[@]}"; do
    T=$WORK/t.mgt
    "$CARGO_TARGET_DIR/release/examples/gen_trace" "$T" "$n" 2>/dev/null
    mb=$(( $(stat -c %s "$T") / 1000000 ))
    cmds=("packets" "packets --handshake" "pcap")
    [[ ${CMDS:-} == match ]] && cmds=()
    if [[ ${MATCH:-0} == 1 ]]; then
        "$MAGNET" pcap -q "$T" -o "$WORK/cap.pcapng"
        cmds+=("match")
    fi
    for c in "${cmds[@]}"; do
        for b in this alt; do
            bin=$MAGNET; [[ $b == alt ]] && bin=$MAGNET_ALT
            case $c in
                pcap) args=(pcap -q "$T" -o "$WORK/o");;
                match) args=(match -q "$T" "$WORK/cap.pcapng");;
                *) args=($c "$T");;
            esac
            if /usr/bin/time -f "%e %U %S %M" -o "$WORK/t" "$bin" "${args[@]}" >"$WORK/so" 2>"$WORK/se"; then
                read -r wall u s kb <"$WORK/t"
                f=$WORK/so; [[ $c == pcap ]] && f=$WORK/o
                out="$(wc -c <"$f") bytes"
                [[ $c == match ]] && out=$(grep -o 'matched [^(]*' "$WORK/so" | head -1 || true)
            else
                read -r wall u s kb < <(tail -1 "$WORK/t")
                out="failed: $(tail -1 "$WORK/se" | cut -c1-60)"
            fi
            cpu=$(echo "$u + $s" | bc)
            echo "| $n | $mb | $b | \`$c\` | $wall | $cpu | $((kb / 1024)) | $out |"
            rm -f "$WORK/o" "$WORK/so"
        done
    done
    rm -f "$T" "$WORK/cap.pcapng"
done
