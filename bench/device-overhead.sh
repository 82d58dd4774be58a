#!/bin/bash
# Recording cost on a lent many-core machine, with more cases than ../shared/device-bench/overhead.sh
# (which this follows: K parallel iperf3 processes between two network namespaces over one veth
# pair, cases alternated per round, medians, throughput and CPU per bit relative to no monitor).
# Why a second script: the shared one knows magnet / floor / magdev / tcpdump only, and issue 29
# asks which of magnet's own settings move the many-core figure (the run-time statistics, the
# peer namespace's rows, records written one at a time).
#
# Use: ../shared/device-bench/prepare.sh; cp bench/device-overhead.sh .device/; then on the device
#   CFGS="mtu-K1 mtu-K4" CASES="base magnet nostats netns direct floor tcpdump" ROUNDS=3 \
#     bash .device/device-overhead.sh
# Cases: base (no monitor); magnet (record --all --layers app,tcp,ip,dev, as the shared script);
# nostats (+ --bpf-stats off); full (+ --bpf-stats full); sampled (+ --bpf-stats sampled); netns (+ --netns self: the client's
# namespace only); direct (MAGNET_DIRECT_RECORDS=1: each record to the ring on its own, what
# preempting kernels get); floor (every program returns at entry); floor0 (the floor, statistics
# off); netns0 (--netns self --bpf-stats off); tcpdump (-s 96 -w).
# Writes $OUT/overhead.tsv and, per magnet-like case, the last round's JSON summary ($OUT/<case>.json).
D=$(cd "$(dirname "$0")" && pwd)
export PATH=$D/bin:$PATH LD_LIBRARY_PATH=$D/lib
# bench/lib.sh: next to it in the repository, one folder up from the .device/ copy
if [ -f "$D/lib.sh" ]; then . "$D/lib.sh"; else . "$D/../bench/lib.sh"; fi
bench_need device-overhead ethtool ip iperf3 python3 tcpdump
M=$D/bin/magnet
O=${OUT:-$(mktemp -d)}; mkdir -p "$O"
W=$(mktemp -d)
T0=$(date +%s)
el() { echo "[t+$(( $(date +%s)-T0 ))s] $*"; }
left() { echo $(( ${BUDGET:-500} - ($(date +%s)-T0) )); }
NA=mga NB=mgb VA=mgva VB=mgvb AA=10.231.0.1 AB=10.231.0.2
ip netns del $NA 2>/dev/null; ip netns del $NB 2>/dev/null
ip netns add $NA; ip netns add $NB
ip link add $VA numtxqueues 16 numrxqueues 16 netns $NA type veth peer name $VB numtxqueues 16 numrxqueues 16 netns $NB
ip -n $NA addr add $AA/24 dev $VA; ip -n $NB addr add $AB/24 dev $VB
for n in $NA $NB; do ip -n $n link set lo up; done
ip -n $NA link set $VA up; ip -n $NB link set $VB up
busy() { awk '/^cpu /{b=$2+$3+$4+$7+$8; t=0; for(i=2;i<=9;i++) t+=$i; print b, t; exit}' /proc/stat; }
offl() { for x in "$NA:$VA" "$NB:$VB"; do ip netns exec ${x%%:*} ethtool -K ${x#*:} tso $1 gso $1 gro $1 >/dev/null 2>&1; done; }
printf 'cfg\tcase\tround\tbps\tbusy\ttotal\tevents\tlost\tbpf_ns_per_event\tdrain_ns_per_event\n' > "$O/overhead.tsv"
start_monitor() { # case -> starts the monitor in the client's namespace, sets mon
  local rec=(record -o $W/t.mgt --all --layers app,tcp,ip,dev --json) env=()
  case $1 in
    base) return;;
    magnet) ;;
    nostats) rec+=(--bpf-stats off);;
    full) rec+=(--bpf-stats full);;
    sampled) rec+=(--bpf-stats sampled);;
    netns) rec+=(--netns self);;
    direct) env=(MAGNET_DIRECT_RECORDS=1);;
    floor) M=$D/bin/magnet-floor;;
    floor0) M=$D/bin/magnet-floor; rec+=(--bpf-stats off);;
    netns0) rec+=(--netns self --bpf-stats off);;
    tcpdump) ip netns exec $NA tcpdump -Z root -s 96 -i $VA -w $W/t.pcap > $W/mon.out 2> $W/mon.err & mon=$!; sleep 1; return;;
    *) echo "unknown case $1" >&2; exit 2;;
  esac
  ip netns exec $NA env "${env[@]}" "$M" "${rec[@]}" > $W/mon.out 2> $W/mon.err & mon=$!
  M=$D/bin/magnet
  sleep 2.5
}
runc() { # cfg K case round
  local cfg=$1 K=$2 c=$3 r=$4 mon= srv=() cl=() k ev=0 lost=0 bpe= dpe=
  for ((k=0;k<K;k++)); do ip netns exec $NB iperf3 -s -1 -B $AB -p $((5201+k)) >/dev/null 2>&1 & srv+=($!); done
  sleep 0.4
  start_monitor "$c"
  [ -n "$mon" ] && ! kill -0 $mon 2>/dev/null && { echo "MONITOR $c DIED:"; tail -3 $W/mon.err; }
  read b0 t0 < <(busy)
  for ((k=0;k<K;k++)); do ip netns exec $NA iperf3 -c $AB -p $((5201+k)) -t ${SECS:-3} -J > $W/ipf$k.json 2>/dev/null & cl+=($!); done
  wait "${cl[@]}"
  read b1 t1 < <(busy)
  wait "${srv[@]}" 2>/dev/null
  if [ -n "$mon" ]; then
    sleep 0.3; kill -INT $mon; wait $mon
    if [ "$c" = tcpdump ]; then ev=$(awk '/packets captured/{print $1}' $W/mon.err); lost=$(awk '/dropped by kernel/{print $1}' $W/mon.err)
    else
      tail -1 $W/mon.out > "$O/$c.json"
      read ev lost bpe dpe < <(python3 -c 'import json,sys
d=json.loads(open(sys.argv[1]).read().strip().splitlines()[-1]); c=d.get("cost") or {}
print(d["records"], d["lost_kernel"]+d.get("dropped_user",0), round(c.get("bpf_ns_per_event") or 0), round(c.get("drain_ns_per_event") or 0))' $W/mon.out 2>/dev/null || echo "0 -1 0 0")
    fi
    rm -f $W/t.mgt $W/t.pcap
  fi
  bps=$(python3 -c 'import json,sys; print(sum(json.load(open(f))["end"]["sum_received"]["bits_per_second"] for f in sys.argv[1:]))' $W/ipf*.json 2>/dev/null || echo 0)
  rm -f $W/ipf*.json
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' $cfg $c $r $bps $((b1-b0)) $((t1-t0)) ${ev:-0} ${lost:-0} ${bpe:-0} ${dpe:-0} >> "$O/overhead.tsv"
  echo "$cfg $c r$r $(python3 -c "print(round($bps/1e9,2))") Gbit/s busy=$((b1-b0))/$((t1-t0)) ev=$ev lost=$lost bpf/ev=${bpe:--} drain/ev=${dpe:--}"
}
for cfg in ${CFGS:-mtu-K1 mtu-K4}; do
  case $cfg in mtu*) offl off;; gso*) offl on; ip netns exec $NA ethtool -K $VA gro off; ip netns exec $NB ethtool -K $VB gro off;; esac
  K=${cfg#*-K}
  for r in $(seq ${ROUNDS:-3}); do
    cs=(${CASES:-base magnet nostats netns direct floor tcpdump}); n=${#cs[@]}
    for ((i=0;i<n;i++)); do runc $cfg $K ${cs[$(((i+r-1)%n))]} $r; done
  done
  [ $(left) -lt 90 ] && { el "budget: skip remaining configs"; break; }
done
python3 - "$O/overhead.tsv" <<'PY'
import csv, sys, statistics as st
rows = list(csv.DictReader(open(sys.argv[1]), delimiter='\t'))
for cfg in dict.fromkeys(r['cfg'] for r in rows):
    R = [r for r in rows if r['cfg'] == cfg]
    cs = list(dict.fromkeys(r['case'] for r in R))
    med = lambda c, k: st.median(float(r[k]) for r in R if r['case'] == c)
    base = med('base', 'bps')
    cpub = lambda c: st.median(float(r['busy'])/float(r['bps']) for r in R if r['case'] == c)
    print(f"{cfg} (base {base/1e9:.2f} Gbit/s)")
    for c in cs:
        print(f"  {c:8} thr {med(c,'bps')/base:.3f}  cpu/bit {cpub(c)/cpub('base'):.2f}  events {int(med(c,'events'))}"
              f"  bpf ns/ev {int(med(c,'bpf_ns_per_event'))}  drain ns/ev {int(med(c,'drain_ns_per_event'))}"
              f"  lost {[r['lost'] for r in R if r['case']==c]}")
PY
ip netns del $NA; ip netns del $NB
el done
