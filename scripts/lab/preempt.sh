#!/bin/sh
# The recorder on a kernel that preempts tasks in the kernel: run in a lab
# guest booted with preempt=full (scripts/lab/matrix, lane 6.12-preempt), judged
# by scripts/lab/check.py --preempt.
#   sh preempt.sh DIR
# Three UDP senders on loopback (100,000 datagrams of 100 B each) and two busy
# loops share the guest's two CPUs, so that senders are preempted inside the
# netfilter program of their own sends. On loopback every datagram passes
# LOCAL_OUT and LOCAL_IN once: `record --all --layers ip` must count 300,000
# of each, lose none, and say that it wrote records one at a time. (With the
# per-CPU batches on such a kernel it counted 299,998 and 300,002.)
# The rings hold the whole run (600,000 records of about 110 bytes; 128 MiB per
# CPU): with the senders and the busy loops on both emulated CPUs the drain may
# get too little time to keep up with the default 32 MiB, and this lane judges
# what preemption does to the records, not how fast an emulated drain runs (a CI
# run lost 62,608 records that way, each counted as lost).
dir="${1:?usage: preempt.sh DIR}"
mkdir -p "$dir"
m="${MAGNET:-magnet}"
n=100000
echo "== preempt"
echo "mode $(cat /sys/kernel/debug/sched/preempt 2>/dev/null)"
( while :; do :; done ) & h1=$!
( while :; do :; done ) & h2=$!
"$m" record --all --netns self --layers ip --buffer 256MiB -o "$dir/p.mgt" --json > "$dir/rec.json" 2> "$dir/rec.err" & rec=$!
i=0
while ! grep -q "magnet: recording" "$dir/rec.err" 2>/dev/null && [ $i -lt 1200 ]; do
    sleep 0.1; i=$((i + 1))
done
"$m" loadgen --udp ${n}x100 --flood --port 7700 > "$dir/lg1.json" & l1=$!
"$m" loadgen --udp ${n}x100 --flood --port 7701 > "$dir/lg2.json" & l2=$!
"$m" loadgen --udp ${n}x100 --flood --port 7702 > "$dir/lg3.json"
wait $l1 $l2
sleep 0.5
kill -INT $rec
wait $rec
echo "rc $?"
kill $h1 $h2
echo "sent $(cat "$dir"/lg*.json | grep -o '"calls":[0-9]*' | tr '\n' ' ')"
echo "summary $(tr -d '\n' < "$dir/rec.json")"
echo "stderr $(grep -v '^magnet: recording' "$dir/rec.err" | tail -n 1)"
echo "== end"
