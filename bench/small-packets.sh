#!/usr/bin/env bash
# Small packets: where a recorder's cost per event shows.
#
# Two network namespaces joined by a veth pair (10.233.0.0/24), offloads off, client
# in ns A, server in ns B, SECS seconds per run, ROUNDS rounds, the cases alternated
# within each round (the order reversed every other round):
#   base     no monitor
#   floor    MAGNET_FLOOR record (a build with MAGNET_BPF_CFLAGS=-DMG_PROF=9: every
#            program returns at entry): what magnet's hooks alone cost
#   magnet   magnet record --all --layers app,tcp,ip,dev   (inside ns A)
#   alt      the same with MAGNET_ALT (another build, side by side)
#   tcpdump  tcpdump -s 96 -w FILE -i <A's veth>            (inside ns A)
# and the workloads (WORKLOADS):
#   udp64    iperf3 -u -l 64 -b UDP_RATE: 64-byte datagrams, as fast as the sender goes
#            (UDP_RATE 0, the default) or at a fixed rate (UDP_RATE=40M: about 78,000
#            datagrams a second). As fast as it goes, a monitor that slows the sender
#            also changes the receiver's batching (fewer datagrams per wake-up: more
#            CPU per packet that no monitor spent); at a rate every case sustains,
#            each case moves the same packets the same way and CPU per packet
#            compares like with like
#   tcprr    sockperf ping-pong over TCP, 100-byte messages (request/response)
#   udprr    sockperf ping-pong over UDP, 64-byte messages
#
# Per run: packets = A's veth tx + rx packets (the interface's own counters: no
# monitor counts them), CPU = busy time of all CPUs from /proc/stat over the run.
# Reported, medians over rounds per workload and case:
#   kpkt/s         packets per second
#   CPU ns/pkt     CPU busy ns per packet
#   above base     CPU ns/pkt(case) - CPU ns/pkt(base)
#   above floor    CPU ns/pkt(case) - CPU ns/pkt(floor)   (magnet, alt)
#   events/pkt     magnet: records ÷ packets; tcpdump: packets captured ÷ packets
#   self ns/pkt    magnet: what its summary says it cost (its programs' BPF time +
#                  its drain's CPU, the `cost` of `record --json`) ÷ packets; load on
#                  the host moves this far less than the /proc/stat figures
#   BPF ns/pkt     magnet: its programs' BPF time alone ÷ packets (the kernel's run-time
#                  statistics: the same in a debug and a release build)
# and the goal (issue: small packets): magnet's CPU per packet above the floor at most
# half of tcpdump's above no monitor.
#
# Environment: ROUNDS (5), SECS (5), WORKLOADS ("udp64 tcprr udprr"), UDP_RATE (0), PIN_CPU
#   (unset; see cpu_busy below), CASES ("base
#   floor magnet tcpdump"; floor needs MAGNET_FLOOR, alt MAGNET_ALT), MAGNET (binary;
#   else target/release then target/debug), OUT (bench/out).
# A floor build: MAGNET_BPF_CFLAGS=-DMG_PROF=9 CARGO_TARGET_DIR=target/floor \
#   cargo build --release -p magnet-cli   (then MAGNET_FLOOR=target/floor/release/magnet)
# Needs root, iperf3, sockperf, tcpdump, ethtool, ip, python3 (scripts/setup.sh bench).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_need small-packets iperf3 sockperf tcpdump ethtool ip python3
bench_root small-packets "network namespaces, eBPF"

here=$(cd "$(dirname "$0")" && pwd)
ROUNDS=${ROUNDS:-5}
SECS=${SECS:-5}
WORKLOADS=${WORKLOADS:-"udp64 tcprr udprr"}
UDP_RATE=${UDP_RATE:-0}
OUT=${OUT:-$here/out}
MAGNET=$(bench_magnet small-packets)
read -r -a cases <<<"${CASES:-base floor magnet tcpdump}"
for c in "${cases[@]}"; do
    case $c in
    floor) [[ -x ${MAGNET_FLOOR:-} ]] || { echo "small-packets: case floor needs MAGNET_FLOOR=<a -DMG_PROF=9 build> (see the header)" >&2; exit 2; } ;;
    alt) [[ -x ${MAGNET_ALT:-} ]] || { echo "small-packets: case alt needs MAGNET_ALT=<another magnet binary>" >&2; exit 2; } ;;
    base | magnet | tcpdump) ;;
    *) echo "small-packets: unknown case '$c' (base floor magnet alt tcpdump)" >&2; exit 2 ;;
    esac
done

log() { echo "[$(date +%T)] $*" >&2; }
NA=mgsmall-a-$$ NB=mgsmall-b-$$ VA=mgsa$$ VB=mgsb$$ AB=10.233.0.2
mkdir -p "$OUT"
work=$(mktemp -d /tmp/mgsmall.XXXXXX)
stamp=$(date -u +%Y%m%dT%H%M%SZ)
raw=$OUT/small-packets-$stamp.tsv
srv=""
cleanup() {
    set +e
    [[ -n $srv ]] && kill "$srv" 2>/dev/null
    bench_netns_del "$NA" "$NB"
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bench_netns_pair "$NA" "$NB" "$VA" "$VB" 10.233.0.1 $AB
ip netns exec "$NA" ethtool -K "$VA" tso off gso off gro off >/dev/null
ip netns exec "$NB" ethtool -K "$VB" tso off gso off gro off >/dev/null

# PIN_CPU=N: the server, the client and the monitor all on CPU N (taskset), CPU
# busy time of that CPU only. veth's receive work runs on the sending CPU, so
# every nanosecond a packet costs anyone is spent there and the CPU stays
# saturated in every case: CPU per packet is then what each case costs, free
# of the wake-up and batching changes that a slower sender causes when the
# two ends run on two CPUs.
PIN_CPU=${PIN_CPU:-}
pin=()
[[ -n $PIN_CPU ]] && pin=(taskset -c "$PIN_CPU")
cpu_busy() { awk -v c="cpu${PIN_CPU}" '$1 == c {b=$2+$3+$4+$7+$8; print b; exit}' /proc/stat; }
veth_packets() { ip netns exec "$NA" cat /sys/class/net/"$VA"/statistics/{tx,rx}_packets | awk '{s+=$1} END{print s}'; }

start_server() { # workload
    case $1 in
    udp64) ip netns exec "$NB" "${pin[@]}" iperf3 -s -1 -B $AB -p 5301 >/dev/null 2>&1 & ;;
    tcprr) ip netns exec "$NB" "${pin[@]}" sockperf sr --tcp -i $AB -p 11301 >/dev/null 2>&1 & ;;
    udprr) ip netns exec "$NB" "${pin[@]}" sockperf sr -i $AB -p 11302 >/dev/null 2>&1 & ;;
    esac
    srv=$!
    sleep 0.5
}

run_client() { # workload
    case $1 in
    udp64) ip netns exec "$NA" "${pin[@]}" iperf3 -c $AB -p 5301 -u -l 64 -b "$UDP_RATE" -t "$SECS" >"$work/client.out" 2>&1 ;;
    tcprr) ip netns exec "$NA" "${pin[@]}" sockperf pp --tcp -i $AB -p 11301 -m 100 -t "$SECS" >"$work/client.out" 2>&1 ;;
    udprr) ip netns exec "$NA" "${pin[@]}" sockperf pp -i $AB -p 11302 -m 64 -t "$SECS" >"$work/client.out" 2>&1 ;;
    esac
}

printf 'workload\tcase\tround\tpackets\tsecs\tcpu_busy_ticks\tevents\tlost\tself_ns\tbpf_ns\n' >"$raw"
hz=$(getconf CLK_TCK)

run_case() { # workload case round
    local w=$1 c=$2 r=$3 mon="" bin=$MAGNET
    start_server "$w"
    case $c in
    magnet | alt | floor)
        [[ $c == alt ]] && bin=$MAGNET_ALT
        [[ $c == floor ]] && bin=$MAGNET_FLOOR
        ip netns exec "$NA" "${pin[@]}" "$bin" record -o "$work/t.mgt" --all --layers app,tcp,ip,dev --json \
            >"$work/mon.out" 2>"$work/mon.err" &
        mon=$!
        sleep 2
        kill -0 $mon 2>/dev/null || { cat "$work/mon.err" >&2; echo "small-packets: $c record exited early" >&2; exit 1; }
        ;;
    tcpdump)
        ip netns exec "$NA" "${pin[@]}" tcpdump -s 96 -i "$VA" -w "$work/t.pcap" >"$work/mon.out" 2>"$work/mon.err" &
        mon=$!
        for _ in $(seq 100); do grep -q listening "$work/mon.err" && break; sleep 0.05; done
        sleep 0.5
        ;;
    esac
    local p0 p1 b0 b1 t0 t1
    p0=$(veth_packets); b0=$(cpu_busy); t0=$(date +%s.%N)
    run_client "$w" || { cat "$work/client.out" >&2; echo "small-packets: $w client failed" >&2; exit 1; }
    p1=$(veth_packets); b1=$(cpu_busy); t1=$(date +%s.%N)
    kill "$srv" 2>/dev/null || true; wait "$srv" 2>/dev/null || true; srv=""
    local events=0 lost=0 self=0 bpf=0
    if [[ -n $mon ]]; then
        sleep 0.3
        kill -INT $mon
        wait $mon || { cat "$work/mon.err" >&2; echo "small-packets: $c exited with status $?" >&2; exit 1; }
        if [[ $c == tcpdump ]]; then
            events=$(awk '/packets captured/{print $1}' "$work/mon.err")
            lost=$(awk '/dropped by kernel/{print $1}' "$work/mon.err")
        else
            read -r events lost self bpf < <(python3 -c 'import json,sys
d=json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
c=d.get("cost") or {}
b=(c.get("bpf_sampled") or {}).get("estimated_ns") or c.get("bpf_ns") or 0  # sampled statistics: the whole run'"'"'s estimate
print(d["records"], d["lost_kernel"]+d.get("dropped_user",0), b+(c.get("drain_cpu_ns") or 0), b)' "$work/mon.out")
        fi
        rm -f "$work/t.mgt" "$work/t.pcap"
    fi
    local secs; secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$w" "$c" "$r" $((p1 - p0)) "$secs" $((b1 - b0)) "${events:-0}" "${lost:-0}" "${self:-0}" "${bpf:-0}" >>"$raw"
    log "$w $c round $r: $(awk -v p=$((p1 - p0)) -v s="$secs" 'BEGIN{printf "%.0f kpkt/s", p/s/1000}') events=$events lost=$lost"
}

for w in $WORKLOADS; do
    for r in $(seq 1 "$ROUNDS"); do
        order=("${cases[@]}")
        if ((r % 2 == 0)); then
            order=()
            for ((i = ${#cases[@]} - 1; i >= 0; i--)); do order+=("${cases[i]}"); done
        fi
        for c in "${order[@]}"; do run_case "$w" "$c" "$r"; done
    done
done

python3 - "$raw" "$hz" "$(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo '?')" "$([[ $UDP_RATE == 0 ]] && echo 'as fast as it goes' || echo "$UDP_RATE bit/s")" "$([[ -n $PIN_CPU ]] && echo "everything on CPU $PIN_CPU" || echo "all CPUs")" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
hz = int(sys.argv[2])
med = statistics.median
print(f"# small-packets, commit {sys.argv[3]}, udp64 at {sys.argv[4]}, {sys.argv[5]}, load average {open('/proc/loadavg').read().split()[0]} at the end")
print(f"{'workload':<8} {'case':<8} {'kpkt/s':>8} {'CPU ns/pkt':>10} {'above base':>10} {'above floor':>11} {'events/pkt':>10} {'self ns/pkt':>11} {'BPF ns/pkt':>10} {'lost':>6}")
for w in dict.fromkeys(r["workload"] for r in rows):
    per = {}
    for r in rows:
        if r["workload"] != w:
            continue
        p = int(r["packets"]) or 1
        per.setdefault(r["case"], []).append(
            (p / float(r["secs"]), int(r["cpu_busy_ticks"]) * 1e9 / hz / p, int(r["events"]) / p, int(r["lost"]),
             float(r["self_ns"]) / p, float(r["bpf_ns"]) / p))
    m = {c: [med(x[i] for x in v) for i in range(6)] for c, v in per.items()}
    base = m.get("base", [0, 0, 0, 0])[1]
    floor = m.get("floor", [0, None])[1]
    for c, (pps, ns, ev, lost, own, bpf) in m.items():
        af = f"{ns - floor:10.0f}" if floor is not None and c in ("magnet", "alt") else f"{'':>10}"
        sf = f"{own:11.0f}" if c in ("magnet", "alt") else f"{'':>11}"
        bf = f"{bpf:10.0f}" if c in ("magnet", "alt", "floor") else f"{'':>10}"
        print(f"{w:<8} {c:<8} {pps/1000:8.1f} {ns:10.0f} {ns - base:10.0f} {af:>11} {ev:10.2f} {sf} {bf} {lost:6.0f}")
    if floor is not None and "magnet" in m and "tcpdump" in m:
        mine, theirs = m["magnet"][1] - floor, m["tcpdump"][1] - base
        ok = "met" if mine <= theirs / 2 else "not met"
        print(f"{w:<8} goal: magnet above floor {mine:.0f} ns/pkt <= half of tcpdump's {theirs:.0f}: {ok}")
PY
echo "raw: $raw" >&2
