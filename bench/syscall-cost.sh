#!/usr/bin/env bash
# What magnet adds to a system call that is not a network one: the wall
# time of getppid() in a tight loop (ns per call, one CPU). Cases:
#   none         nothing running
#   tracepoints  magnetd as it starts (sendfile(), splice() and the mmsg calls
#                counted at their own syscall exit tracepoints)
#   sys_exit     magnetd denied those tracepoints (MAGNET_HOOKS_DENY=tracepoint:
#                the same calls counted at every system call's exit,
#                tp_btf/sys_exit, as before that change)
#   record       magnet record --all (its app layer at sendfile's, splice's and
#                the mmsg calls' own syscall tracepoints, the other socket
#                calls whole at their socket's send or recv)
#   record_starts  the same with the twelve socket calls' own syscall
#                tracepoints, sys_enter_*/sys_exit_* (as with task filters, or
#                without bpf_task_pt_regs: MAGNET_HOOKS_DENY=task_pt_regs)
#   record_sys   the same denied those tracepoints: tp_btf/sys_enter and
#                sys_exit, programs run at every system call's entry and exit
#                (the recorder before that change, and its fallback)
# This is the cost every process on the host pays, whatever it does: the
# kernel's own work (the syscall slow path, the tracepoints' dispatch)
# included, which BPF run-time statistics do not show.
#
#   sudo ROUNDS=5 CALLS=20000000 bench/syscall-cost.sh
#
# Cases alternate within each round; medians at the end. magnetd runs with
# packet_hooks = "off" (no traffic here).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_need syscall-cost gcc curl python3 taskset
bench_root syscall-cost "magnetd loads BPF programs"
MAGNET=$(bench_magnet syscall-cost)
ROUNDS=${ROUNDS:-5}
CALLS=${CALLS:-20000000}
CASES=${CASES:-"none tracepoints sys_exit record record_starts record_sys"}
tmp=$(mktemp -d)
port=$((20000 + $$ % 20000))
cleanup() {
    [ -n "${dpid:-}" ] && kill "$dpid" 2>/dev/null && wait "$dpid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
cat >"$tmp/loop.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
int main(int argc, char **argv)
{
    long n = atol(argv[1]);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < n; i++)
        syscall(SYS_getppid);
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%.1f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
    return 0;
}
C
gcc -O2 -o "$tmp/loop" "$tmp/loop.c"
start_daemon() { # DENY
    printf 'http = "127.0.0.1:%s"\nsocket = "%s/magnetd.sock"\npacket_hooks = "off"\n' "$port" "$tmp" >"$tmp/d.toml"
    MAGNET_HOOKS_DENY=$1 "$MAGNET" daemon --config "$tmp/d.toml" 2>"$tmp/err" >/dev/null &
    dpid=$!
    for _ in $(seq 50); do grep -q "magnetd: ready" "$tmp/err" && break; sleep 0.2; done
    grep -q "magnetd: ready" "$tmp/err" || { echo "syscall-cost: magnetd did not start:" >&2; cat "$tmp/err" >&2; exit 2; }
}
stop_daemon() { kill -INT "$dpid"; wait "$dpid" 2>/dev/null || true; dpid=; }
start_record() { # DENY
    MAGNET_HOOKS_DENY=$1 "$MAGNET" record --all -o "$tmp/r.mgt" 2>"$tmp/err" >/dev/null &
    dpid=$!
    for _ in $(seq 100); do grep -q "recording" "$tmp/err" && break; sleep 0.2; done
    grep -q "recording" "$tmp/err" || { echo "syscall-cost: magnet record did not start:" >&2; cat "$tmp/err" >&2; exit 2; }
}
: >"$tmp/results"
for round in $(seq "$ROUNDS"); do
    for c in $CASES; do
        case $c in
        none) ;;
        tracepoints) start_daemon "" ;;
        sys_exit) start_daemon "tracepoint" ;;
        record) start_record "" ;;
        record_starts) start_record "task_pt_regs" ;;
        record_sys) start_record "tracepoint" ;;
        *) echo "syscall-cost: unknown case $c (none, tracepoints, sys_exit, record, record_starts, record_sys)" >&2; exit 2 ;;
        esac
        if [ "$c" = tracepoints ] || [ "$c" = sys_exit ]; then
            app=$(curl -s "http://127.0.0.1:$port/health" | python3 -c 'import json,sys; print(json.load(sys.stdin)["health"]["parts"].get("app","-"))' 2>/dev/null || echo "?")
        else
            app=-
        fi
        ns=$(taskset -c 0 "$tmp/loop" "$CALLS")
        echo "round $round $c: $ns ns per getppid (app part: $app)"
        echo "$c $ns" >>"$tmp/results"
        if [ "$c" != none ]; then stop_daemon; fi
        rm -f "$tmp/r.mgt"
    done
done
echo "## medians over $ROUNDS rounds (ns per getppid)"
python3 - "$tmp/results" $CASES <<'PY'
import statistics, sys
rows = {}
for l in open(sys.argv[1]):
    c, ns = l.split()
    rows.setdefault(c, []).append(float(ns))
base = statistics.median(rows["none"]) if "none" in rows else None
for c in sys.argv[2:]:
    m = statistics.median(rows[c])
    extra = f"  (+{m - base:.1f} ns per call above none)" if base is not None and c != "none" else ""
    print(f"  {c:12} {m:7.1f}{extra}")
PY
