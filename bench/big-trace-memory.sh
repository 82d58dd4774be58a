#!/usr/bin/env bash
# Peak RSS and time of `magnet packets`, `pcap` and `match` on real recordings of
# growing size (the streamed readers' acceptance: bounded memory on a 2 GB trace). Each
# size is one recording: iperf3 with MTU-sized packets over loopback in a network
# namespace of its own (MTU 1500, segmentation offloads off), both ends traced by
# `magnet record --snaplen SNAP`, tcpdump -s 96 on the same loopback as the capture
# `match` reads. The bytes iperf3 sends for each size (-n) come from a short
# calibration recording (trace bytes per byte sent: a packet's records do not depend
# on how fast it went, so the load of a shared machine does not move the size). One size at a time: record, measure, delete
# (scratch at most about the largest trace + its pcapng + the capture).
# Needs root. RSS does not depend on the machine's load; wall and CPU do: read CPU.
#
# usage: [SNAP=128] [CAL=BYTES] [WORK=/tmp/dir] bench/big-trace-memory.sh [MB...] [> OUT.md]
#   (default MB: 250 500 1000 2000)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_need big-trace-memory /usr/bin/time ethtool ip iperf3 tcpdump
cd "$(dirname "$0")/.."
[[ $EUID -eq 0 ]] || { echo "needs root (network namespace, BPF)" >&2; exit 2; }
SIZES=("$@")
[[ ${#SIZES[@]} -gt 0 ]] || SIZES=(250 500 1000 2000)
SNAP=${SNAP:-128}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
cargo build -q --release -p magnet-cli
MAGNET=$(realpath "$CARGO_TARGET_DIR/release/magnet")
WORK=${WORK:-$(mktemp -d)}
mkdir -p "$WORK"
NS=bigtrace-$$
PORT=7431
cleanup() {
    ip netns pids "$NS" 2>/dev/null | xargs -r kill 2>/dev/null || true
    ip netns del "$NS" 2>/dev/null || true
    rm -f "$WORK"/t.mgt "$WORK"/cap.pcap "$WORK"/o.pcapng "$WORK"/so "$WORK"/se "$WORK"/t
}
trap cleanup EXIT
ip netns add "$NS"
ip -n "$NS" link set lo mtu 1500 up
ip netns exec "$NS" ethtool -K lo tso off gso off gro off >/dev/null 2>&1

# record BYTES: iperf3 sends BYTES; the trace t.mgt and the capture cap.pcap.
record() {
    rm -f "$WORK/t.mgt" "$WORK/cap.pcap"
    ip netns exec "$NS" tcpdump -i lo -s 96 -B 65536 -w "$WORK/cap.pcap" "tcp port $PORT" \
        2>"$WORK/tcpdump.err" &
    local tp=$! i=0
    while ! grep -q "listening on" "$WORK/tcpdump.err" 2>/dev/null && ((i < 50)); do
        sleep 0.2; i=$((i + 1))
    done
    ip netns exec "$NS" "$MAGNET" record -q --snaplen "$SNAP" --buffer 256MiB -o "$WORK/t.mgt" \
        -- sh -c "iperf3 -s -1 -p $PORT >/dev/null 2>&1 & sleep 1; iperf3 -c 127.0.0.1 -p $PORT -n $1 >$WORK/client.txt 2>&1; rc=\$?; wait; exit \$rc" \
        2>"$WORK/record.err"
    sleep 0.5
    kill -INT $tp
    wait $tp || true
}

# Trace bytes per byte sent: a line through transfers of CAL and 2.5 CAL bytes
# (keep 2.5 CAL's trace small: CAL=200000000 with SNAP=2048).
CAL=${CAL:-2000000000}
record "$CAL"
b2=$(stat -c %s "$WORK/t.mgt")
record $((CAL * 5 / 2))
b5=$(stat -c %s "$WORK/t.mgt")
per_gb=$(( (b5 - b2) * 1000000000 / (CAL * 3 / 2) ))
base=$(( b2 - CAL / 1000000 * per_gb / 1000 ))
echo "calibration: $b2 trace bytes for $CAL bytes sent, $b5 for 2.5 times that: $per_gb per GB sent; snaplen $SNAP" >&2

echo "| trace MB | records | frames captured | command | wall s | CPU s | peak RSS MB | load avg | output |"
echo "|---:|---:|---:|---|---:|---:|---:|---:|---|"
for mb in "${SIZES[@]}"; do
    record $(( (mb * 1000000 - base) * 1000000000 / per_gb ))
    size=$(( $(stat -c %s "$WORK/t.mgt") / 1000000 ))
    recs=$("$MAGNET" info "$WORK/t.mgt" 2>/dev/null | awk '$1=="records"{print $2; exit}')
    lost=$("$MAGNET" info "$WORK/t.mgt" 2>/dev/null | awk '$1=="lost"{print $2; exit}')
    recs="$recs (lost $lost)"
    capn=$(grep -oE '^[0-9]+ packets captured' "$WORK/tcpdump.err" | grep -oE '^[0-9]+' || echo "?")
    for c in packets pcap match; do
        case $c in
            packets) args=(packets "$WORK/t.mgt");;
            pcap) args=(pcap "$WORK/t.mgt" -o -);;
            match) args=(match -q "$WORK/t.mgt" "$WORK/cap.pcap");;
        esac
        load=$(cut -d' ' -f1 /proc/loadavg)
        # Output to a pipe (its size counted and its last lines kept), not to disk.
        if /usr/bin/time -f "%e %U %S %M" -o "$WORK/t" "$MAGNET" "${args[@]}" 2>"$WORK/se" \
            | tee >(tail -c 4000 >"$WORK/tail") | wc -c >"$WORK/so"; then
            read -r wall u s kb <"$WORK/t"
            out="$(( $(cat "$WORK/so") / 1000000 )) MB out"
            sleep 0.2
            [[ $c == match ]] && out=$(grep -E '^# (frames|kernel packets)' "$WORK/tail" | cut -c1-110 | tr '\n' ' ')
        else
            read -r wall u s kb < <(tail -1 "$WORK/t")
            out="failed: $(grep -v '^Command exited' "$WORK/se" | tail -1 | cut -c1-60)"
        fi
        [[ -s $WORK/se ]] && out="$out; stderr: $(head -c 160 "$WORK/se" | tr '\n' ' ')"
        cpu=$(echo "$u + $s" | bc)
        echo "| $size | $recs | $capn | \`$c\` | $wall | $cpu | $((kb / 1024)) | $load | $out |"
        rm -f "$WORK/so"
    done
    rm -f "$WORK/t.mgt" "$WORK/cap.pcap"
done
