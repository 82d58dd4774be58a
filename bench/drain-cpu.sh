#!/usr/bin/env bash
# The recorder's user-space drain cost per record, in CPU time:
#   1. crates/magnet-trace/examples/drain_speed: the drain's trace work (header check,
#      kind count, BlockBuilder, one channel send per ~256 KiB block, the writer thread)
#      fed from memory at full speed, no kernel and no generator: records per CPU-second
#      of the drain thread and of the writer thread.
#   2. a real `magnet record` during a UDP flood (`magnet loadgen --udp NxSIZE --flood`,
#      FLOODS generators) in a namespace of its own: the CPU seconds of the recorder's
#      threads from /proc/PID/task/TID/stat (utime+stime, sampled until it exits; the
#      main thread runs the ring-buffer drain, magnet-writer writes) and records per
#      CPU-second of the drain thread. Here the generator shares the host's cores, so
#      records/s of wall time is the generator's limit, not the drain's.
# Goal: drain >= 5 M records/s on one core.
#
# usage: sudo bench/drain-cpu.sh        env: RECORDS (20000000, part 1), N (1000000
#   sendto calls per flood), FLOODS (2), ROUNDS (3), MAGNET (target/release/magnet)
# Needs root (part 2), ip, python3. Installs nothing.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_need drain-cpu ip python3
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
RECORDS=${RECORDS:-20000000} N=${N:-1000000} FLOODS=${FLOODS:-2} ROUNDS=${ROUNDS:-3}
cargo build -q --release -p magnet-trace --example drain_speed
[[ -n ${MAGNET:-} ]] || { cargo build -q --release -p magnet-cli; MAGNET=$CARGO_TARGET_DIR/release/magnet; }
WORK=$(mktemp -d)
NS=mgdrain-$$
cleanup() { ip netns del "$NS" 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

echo "== 1. drain_speed (BlockBuilder + writer thread, $RECORDS records, trace to a file in $WORK)"
for r in $(seq "$ROUNDS"); do
    "$CARGO_TARGET_DIR/release/examples/drain_speed" "$RECORDS" "$WORK/s.mgt"
    rm -f "$WORK/s.mgt"
done

[[ $(id -u) == 0 ]] || { echo "== 2. skipped: a real recording needs root"; exit 0; }
echo "== 2. magnet record during $FLOODS UDP flood(s) of $N sendto() calls (namespace $NS)"
ip netns add "$NS"
ip -n "$NS" link set lo up
cmd="$MAGNET loadgen --udp ${N}x16 --flood >/dev/null"
for _ in $(seq 2 "$FLOODS"); do cmd="$cmd & $MAGNET loadgen --udp ${N}x16 --flood >/dev/null"; done
for r in $(seq "$ROUNDS"); do
    ip netns exec "$NS" "$MAGNET" record -o "$WORK/d.mgt" --buffer 32MiB --json -- sh -c "$cmd; wait" \
        >"$WORK/d.out" 2>"$WORK/d.err" &
    pid=$!
    # The recorder is the child of `ip netns exec` (which execs it: same pid).
    : >"$WORK/ticks"
    while kill -0 $pid 2>/dev/null; do
        snap=$(for t in /proc/$pid/task/*; do
            s=$(cat "$t/stat" 2>/dev/null) || continue
            # comm may hold spaces: split after the last ')'.
            rest=${s##*) }
            set -- $rest
            echo "${t##*/} ${12} ${13} $(tr ' ' _ <"$t/comm" 2>/dev/null || echo gone)"
        done)
        [[ -n $snap ]] && echo "$snap" >>"$WORK/ticks"
        sleep 0.1
    done
    wait $pid || { cat "$WORK/d.err" >&2; exit 1; }
    python3 - "$WORK/ticks" "$WORK/d.out" "$pid" <<'PY'
import json, os, sys
hz = os.sysconf("SC_CLK_TCK")
d = json.loads(open(sys.argv[2]).read().strip().splitlines()[-1])
recs, secs = d["records"], d["seconds"]
lost = d["lost_kernel"] + d.get("dropped_user", 0)
main = int(sys.argv[3])
print(f"records {recs:,} in {secs:.2f} s ({recs / secs / 1e6:.2f} M/s wall), lost {lost:,}")
# Each thread's last sample (the counters only grow; a thread that ended
# keeps its last value).
last = {}
for line in open(sys.argv[1]):
    parts = line.split()
    if len(parts) < 4:
        continue
    tid, u, s, comm = parts[:4]
    last[int(tid)] = (comm, int(u) + int(s))
for tid, (comm, ticks) in sorted(last.items()):
    cpu = ticks / hz
    role = f"{comm} (main: drain)" if tid == main else comm
    rate = f"{recs / cpu / 1e6:.2f} M records/CPU-s" if cpu > 0 else "-"
    print(f"  {role:<22} {cpu:6.2f} CPU-s  {rate}")
PY
    rm -f "$WORK/d.mgt"
done
