#!/usr/bin/env bash
# Cost of selective instrumentation against full function tracing (as in
# the thesis's -4.33 % against -94.47 %), measured inside one QEMU guest run
# (Debian's kernel under TCG: only ratios inside one run mean anything).
#
#   bench/funcs-cost.sh [KERNEL] [ROUNDS] [N] [SIZE] [ALL]
#       default: 6.12 5 1000 16384 all
#
# Each round runs, alternated, a loopback TCP transfer of N send() calls of SIZE
# bytes (magnet loadgen) under:
#   layers   magnet record --layers app,tcp,ip,dev   (the default layers)
#   auto     the same plus --funcs auto              (the selection: functions with
#            a struct sk_buff * among parameters 1-5 that can be probed)
#   exits    the same plus --funcs auto --func-exits (their returns too)
#   all      the same plus --funcs ALL               (`all`: every function in
#            available_filter_functions, by kprobe-multi; `all/K`: every Kth one)
# Throughput = N*SIZE / the transfer's elapsed time (loadgen's tcp.elapsed_us).
# Prints per case the median throughput and its ratio to `layers`, events
# recorded and the function probes attached. Needs the QEMU lab (scripts/lab/run,
# a kernel with kprobe-multi: 6.12) and a built magnet (target/debug/magnet, or
# MAGNET=path).
#
# Environment: TIMEOUT (guest seconds, default 3000); ALL_ROUNDS=K runs `all` in
# the last K rounds only (default: every round), so the cheap cases finish
# first if `all` stalls the guest; LAB_APPEND (kernel command line words, e.g.
# "nowatchdog rcupdate.rcu_cpu_stall_timeout=300"). While `all` runs, the guest
# prints a progress line every 30 s ("P secs-since-start trace-bytes stderr-line"):
# how far the recorder got (attach, then the transfer) if the guest never ends.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_need funcs-cost python3 qemu-system-x86_64
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
kernel=${1:-6.12}
rounds=${2:-5}
n=${3:-1000}
size=${4:-16384}
all=${5:-all}
timeout=${TIMEOUT:-3000}
all_rounds=${ALL_ROUNDS:-$rounds}
bin=${MAGNET:-$root/target/debug/magnet}
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# The guest script: one line per measurement, "M case round elapsed_us events",
# and the function probes of each case once ("H case ...").
guest=$(cat <<EOS
for r in \$(seq 1 $rounds); do
  cases="layers auto exits"
  [ \$r -gt $((rounds - all_rounds)) ] && cases="\$cases all"
  for c in \$cases; do
    case \$c in
      layers) f= ;;
      auto)   f="--funcs auto" ;;
      exits)  f="--funcs auto --func-exits" ;;
      all)    f="--funcs $all" ;;
    esac
    rm -f /work/r.mgt
    if [ \$c = all ]; then
      t0=\$(cut -d. -f1 /proc/uptime)
      ( while sleep 30; do echo "P \$((\$(cut -d. -f1 /proc/uptime) - t0)) \$( [ -e /work/r.mgt ] && wc -c < /work/r.mgt || echo 0) \$(tail -n 1 /work/err 2>/dev/null | cut -c1-100)"; done ) &
      mon=\$!
    fi
    ./magnet record -o /work/r.mgt --layers app,tcp,ip,dev \$f --json -- ./magnet loadgen --tcp ${n}x${size} --port 7600 > /work/lg.json 2>/work/err
    [ \$c = all ] && kill \$mon
    us=\$(grep -o '"elapsed_us":[0-9]*' /work/lg.json | head -1 | cut -d: -f2)
    ev=\$(grep -o '"records":[0-9]*' /work/lg.json | tail -1 | cut -d: -f2)
    echo "M \$c \$r \${us:-0} \${ev:-0}"
    [ -n "\$us" ] || { echo "E \$c: no transfer"; head -3 /work/err; }
    if [ \$r = 1 ] && [ -n "\$f" ]; then ./magnet info /work/r.mgt | grep -i 'kprobe\|kretprobe\|could not' | sed "s/^/H \$c /"; fi
  done
done
EOS
)
rc=0
"$root/scripts/lab/run" "$kernel" --bin "$bin" --timeout "$timeout" -- sh -c "$guest" | tee "$out" >&2 || rc=$?
[ $rc = 0 ] || echo "the guest run exited $rc (124: it did not finish within ${timeout} s); results so far:"
python3 - "$out" "$n" "$size" "$kernel" "$all" <<'PY'
import sys, statistics as st
path, n, size, kernel, allspec = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
lines = open(path).read().splitlines()
rows = [l.split() for l in lines if l.startswith("M ")]
thr, ev = {}, {}
for _, case, r, us, e in rows:
    if int(us) > 0:
        thr.setdefault(case, []).append(n * size / (int(us) / 1e6))
    ev.setdefault(case, []).append(int(e))
if not rows:
    sys.exit("no measurement came back from the guest")
print(f"kernel {kernel}, {max(int(r[2]) for r in rows)} rounds, loadgen --tcp {n}x{size} over loopback, all = --funcs {allspec}")
base = st.median(thr["layers"])
for case in ("layers", "auto", "exits", "all"):
    if case not in thr:
        prog = [l for l in lines if l.startswith("P ")]
        print(f"{case:7} no transfer finished" + (f"; last progress: {prog[-1][2:]}" if prog and case == "all" else ""))
        continue
    m = st.median(thr[case])
    print(f"{case:7} {m/1e6:9.3f} MB/s  ratio to layers {m/base:.3f} ({(m/base-1)*100:+.2f} %)  "
          f"events (median) {int(st.median(ev[case]))}  [{len(thr[case])} rounds]")
for l in lines:
    if l.startswith("H "):
        print("probes:", l[2:])
    if l.startswith("P "):
        print("progress of all (s, trace bytes, recorder's last line):", l[2:])
PY
