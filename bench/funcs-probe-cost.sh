#!/usr/bin/env bash
# Where `record --funcs auto`'s cost goes: per-program BPF run time
# from the kernel's statistics (kernel.bpf_stats_enabled=1: run_cnt and
# run_time_ns in /proc/PID/fdinfo of the recorder's program fds), inside one
# QEMU guest run (Debian's 6.12 under TCG).
#
#   bench/funcs-probe-cost.sh [KERNEL] [N] [SIZE]      default: 6.12 200 16384
#
# Each case runs `magnet record --layers app,tcp,ip,dev [--funcs auto] --
# sh -c 'magnet loadgen --tcp NxSIZE; read fdinfo of the recorder'` (the
# programs are still attached while the command runs). Prints per case and
# program type (kprobe = the function probes; tracing = tp_btf/fentry/fexit;
# others) the calls, ns per call and calls per packet (packets = dev_start_xmit
# events), and the BPF time per packet of each case. Needs root, the QEMU lab
# and a built magnet. (No native comparison: this host's kernel has no
# kprobes, and its tracing programs also see the other sessions' traffic.)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_need funcs-probe-cost python3 qemu-system-x86_64
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
kernel=${1:-6.12}
n=${2:-200}
size=${3:-16384}
bin=${MAGNET:-$root/target/debug/magnet}
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# One case: "S case prog_type run_cnt run_time_ns" per program, then
# "K case kind events" for the kinds that count packets and functions.
one_case() { # M DIR CASE FLAGS...
    local m=$1 dir=$2 c=$3
    shift 3
    "$m" record -q -o "$dir/r.mgt" --layers app,tcp,ip,dev "$@" -- sh -c \
        "\"$m\" loadgen --tcp ${n}x${size} >/dev/null
         for f in /proc/\$PPID/fdinfo/*; do
           grep -q '^prog_type' \$f 2>/dev/null || continue
           awk '/^prog_type/{t=\$2} /^run_time_ns/{ns=\$2} /^run_cnt/{k=\$2} END{print \"S $c\", t, k, ns}' \$f
         done"
    "$m" info "$dir/r.mgt" | awk -v c="$c" '($1 == "dev_start_xmit" && $2 == "dev") || ($1 == "func" && $2 == "func") {print "K", c, $1, $3}'
}
guest=$(
    declare -f one_case
    echo "n=$n size=$size"
    echo 'echo 1 > /proc/sys/kernel/bpf_stats_enabled'
    echo 'one_case ./magnet /work layers; one_case ./magnet /work auto --funcs auto'
)
"$root/scripts/lab/run" "$kernel" --bin "$bin" --timeout 1200 -- sh -c "$guest" | tee "$out" >&2
python3 - "$out" "$kernel" "$n" "$size" <<'PY'
import sys, collections
path, kernel, n, size = sys.argv[1:5]
types = {"2": "kprobe", "26": "tracing", "5": "raw_tp", "17": "raw_tp", "9": "cgroup_sock", "34": "netfilter"}
calls = collections.defaultdict(lambda: [0, 0])
kinds = {}
for l in open(path).read().splitlines():
    f = l.split()
    if f[:1] == ["S"] and len(f) == 5:
        calls[(f[1], types.get(f[2], "type " + f[2]))][0] += int(f[3])
        calls[(f[1], types.get(f[2], "type " + f[2]))][1] += int(f[4])
    elif f[:1] == ["K"] and len(f) == 4:
        kinds[(f[1], f[2])] = int(f[3].replace(",", ""))
print(f"loadgen --tcp {n}x{size} over loopback; guest {kernel} (TCG); cases layers, auto")
for case in ("layers", "auto"):
    pk = kinds.get((case, "dev_start_xmit")) or 0
    total = 0
    for (c, t), (k, t_ns) in sorted(calls.items()):
        if c != case or k == 0:
            continue
        total += t_ns
        per = f"{k / pk:8.1f} calls/packet" if pk else ""
        print(f"{case:7} {t:8} {k:9} calls {t_ns / k:9.0f} ns/call  {t_ns / 1e6:9.1f} ms  {per}")
    per = f", BPF time per packet {total / pk / 1e3:.1f} us" if pk else ""
    print(f"{case:7} packets (dev_start_xmit) {pk}, func events {kinds.get((case, 'func'), 0)}{per}")
PY
