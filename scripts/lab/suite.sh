#!/bin/sh
# The kernel-matrix suite, run inside a lab guest (busybox sh) or on the host:
#   sh suite.sh DIR [--leftovers]
# Prints sections ("== NAME" lines) for scripts/lab/check.py to judge. Uses only
# magnet and busybox. --leftovers: this is the only BPF user (a guest), so count
# every BPF link, kprobe event, pinned object and clsact qdisc left after the runs.
dir="${1:?usage: suite.sh DIR [--leftovers]}"
mkdir -p "$dir"
m="${MAGNET:-magnet}"
# Each section's start (seconds since boot) goes to $dir/.times, printed as the
# "times" section at the end: a lab lane that slows down says which part did.
sec() {
    echo "== $1"
    echo "$(cut -d' ' -f1 /proc/uptime) $1" >> "$dir/.times"
}
: > "$dir/.times"
# Readers get -q: in a guest, stderr is the serial console, a terminal, and would
# carry their progress bars into the sections.
sec "kernel"
uname -r
sec "check"
"$m" record --check --layers all --json
sec "record"
"$m" record -q -o "$dir/all.mgt" --json -- sh -c "\"$m\" loadgen --tcp 200x16k --udp 100x512 > \"$dir/loadgen.json\""
echo "rc $?"
sec "loadgen"
cat "$dir/loadgen.json"
sec "info"
"$m" info -q --json "$dir/all.mgt"
sec "analyze"
"$m" analyze -q --json "$dir/all.mgt"
for layer in app tcp ip qdisc dev drop sched; do
    sec "layer $layer"
    "$m" record -q --layers "$layer" -o "$dir/$layer.mgt" --json -- "$m" loadgen --tcp 20x1k --udp 10x100 \
        > "$dir/$layer.json" 2> "$dir/$layer.err"
    echo "rc $?"
    echo "stderr $(tail -n 1 "$dir/$layer.err")"
    [ -s "$dir/$layer.mgt" ] && "$m" info -q --json "$dir/$layer.mgt" | tr -d '\n'
    echo
done
sec "named-missing"
# The ip layer named, its function probes denied: recorded through netfilter
# links where the kernel has them (and its verifier takes them), else one line.
MAGNET_HOOKS_DENY=fentry,fexit "$m" record -q --layers ip -o "$dir/nm.mgt" -- "$m" loadgen --tcp 2x1k \
    > /dev/null 2> "$dir/nm.err"
echo "rc $?"
echo "lines $(wc -l < "$dir/nm.err")"
echo "stderr $(tail -n 1 "$dir/nm.err")"
# record --funcs on a few functions of the TCP transmit and receive paths; the
# SYN's path (magnet packets) must run from __tcp_transmit_skb <- tcp_connect
# through its clone down to dev_hard_start_xmit, where the kernel has probes;
# again with return probes (--func-exits): every step with its time inside.
F='__tcp_transmit_skb,skb_clone,ip_queue_xmit,__ip_queue_xmit,__ip_local_out,ip_output'
F="$F,ip_finish_output2,__dev_queue_xmit,dev_hard_start_xmit,ip_rcv,tcp_v4_rcv"
for x in "" --func-exits; do
    sec "funcs$x"
    "$m" record -q --layers tcp,ip,dev --funcs "$F" $x -o "$dir/funcs.mgt" -- "$m" loadgen --tcp 2x1k \
        > /dev/null 2> "$dir/funcs.err"
    echo "rc $?"
    echo "stderr $(tail -n 1 "$dir/funcs.err")"
    "$m" info -q --json "$dir/funcs.mgt" | tr -d '\n'
    echo
    "$m" packets -q --handshake --json "$dir/funcs.mgt" | tr -d '\n'
    echo
    "$m" packets -q --json "$dir/funcs.mgt" | tr -d '\n'
    echo
done
# Copies: loadgen --tap reads lo through a packet socket, so the kernel clones
# every frame for it (skb_clone of the sent skb in dev_queue_xmit_nit, of the
# received one in packet_rcv): no fclones, linked through func_copy's probes.
# Every packet_rcv call (one per frame the tap read) must be in a packet's path,
# the outgoing clone's after its parent's dev_hard_start_xmit.
sec "funcs-tap"
"$m" record -q --layers tcp,ip,dev --funcs "$F,packet_rcv" -o "$dir/tap.mgt" -- "$m" loadgen --tcp 2x1k --port 7601 --tap lo \
    > "$dir/tap.json" 2> "$dir/tap.err"
echo "rc $?"
echo "stderr $(tail -n 1 "$dir/tap.err")"
grep '"tap"' "$dir/tap.json"
"$m" info -q --json "$dir/tap.mgt" | tr -d '\n'
echo
"$m" packets -q --handshake --json "$dir/tap.mgt" | tr -d '\n'
echo
"$m" packets -q --json "$dir/tap.mgt" | tr -d '\n'
echo
# record -f: a pcap-filter expression run in the kernel keeps exactly the 30
# datagrams to 5353 of a mixed workload at every packet hook; a bad one is
# refused with tcpdump's message, exit 2, and no trace.
sec "filter"
"$m" record -q -o "$dir/filter.mgt" -f 'udp port 5353' -- sh -c "\"$m\" loadgen --udp 30x100 --port 5353 >/dev/null && \"$m\" loadgen --udp 20x200 --port 5354 >/dev/null && \"$m\" loadgen --tcp 5x1k --port 5355 >/dev/null" 2> "$dir/filter.err"
echo "rc $? $(tail -n 1 "$dir/filter.err")"
[ -s "$dir/filter.mgt" ] && "$m" info -q --json "$dir/filter.mgt" | tr -d '\n'
echo
"$m" record -q -o "$dir/badf.mgt" -f 'udp prt 5353' -- true 2> "$dir/badf.err"
echo "bad_rc $?"
echo "bad_trace $(test -e "$dir/badf.mgt" && echo written || echo none)"
echo "bad_stderr $(tail -n 1 "$dir/badf.err")"
# record --netns self: every program loads with the namespace filter set (the
# verifier follows its extra branch), and the recorder's own namespace keeps
# each of the 30 datagrams at every packet hook.
sec "netns"
"$m" record -q -o "$dir/netns.mgt" --netns self -- "$m" loadgen --udp 30x100 --port 5357 \
    > /dev/null 2> "$dir/netns.err"
echo "rc $? $(tail -n 1 "$dir/netns.err")"
[ -s "$dir/netns.mgt" ] && "$m" info -q --json "$dir/netns.mgt" | tr -d '\n'
echo
# record --all (no task filter): a call of one socket operation is recorded
# whole at its socket's send where the kernel has bpf_task_pt_regs (6.1 and
# later), else at the calls' own tracepoints (5.10): either way loadgen's 20
# TCP and 10 UDP sends, each asking its size. The app hooks and the sends.
sec "all-app"
"$m" record --all --layers app -o "$dir/allapp.mgt" > /dev/null 2> "$dir/allapp.err" &
ap=$!
i=0
while ! grep -q "magnet: recording " "$dir/allapp.err" 2>/dev/null && [ $i -lt 600 ] \
    && kill -0 $ap 2>/dev/null; do
    sleep 0.2; i=$((i + 1))
done
"$m" loadgen --tcp 20x1000 --udp 10x100 --port 5359 > /dev/null
sleep 1
kill -INT $ap
wait $ap
echo "rc $? $(tail -n 1 "$dir/allapp.err")"
[ -s "$dir/allapp.mgt" ] && "$m" info -q --json "$dir/allapp.mgt" | tr -d '\n'
echo
# loadgen's sends: those of a task named as the magnet binary is
"$m" parse -q --json --kind app_send "$dir/allapp.mgt" \
    | grep "\"comm\":\"$(basename "$m" | cut -c1-15)\""
# record --snaplen 2048 of a loopback TCP transfer, as pcapng (base64, one line):
# check.py compares every data frame's payload with loadgen's byte pattern, which
# lies in the skb's page fragments past its linear part.
sec "snaplen"
"$m" record -q --snaplen 2048 --layers dev -o "$dir/snap.mgt" -- "$m" loadgen --tcp 64x16k --port 7329 \
    > /dev/null 2> "$dir/snap.err"
echo "rc $? $(tail -n 1 "$dir/snap.err")"
"$m" pcap "$dir/snap.mgt" -o "$dir/snap.pcapng" 2>> "$dir/snap.err"
echo "pcap_rc $?"
echo "pcapng $(base64 "$dir/snap.pcapng" | tr -d '\n')"
if [ "$2" = "--leftovers" ]; then
    # magnetd (a guest only: it listens on fixed ports): loads where the kernel
    # has its hooks (6.3+), else says what is missing; a TCP connection held
    # open after 30 writes of 1000 B is served with the kernel's own counters
    # (the per-packet links created and destroyed every 2 s meanwhile)
    # (the iterator over socket storage), and keeps them once closed. The
    # leftovers section below checks that SIGTERM detached everything.
    sec "daemon"
    printf '[metrics]\nconnection_ports = [7001]\n' > "$dir/magnetd.toml"
    "$m" daemon --config "$dir/magnetd.toml" --http 127.0.0.1:9595 --socket "$dir/magnetd.sock" \
        2> "$dir/magnetd.err" &
    dp=$!
    i=0
    while ! grep -q "magnetd: ready" "$dir/magnetd.err" 2>/dev/null && [ $i -lt 120 ] \
        && kill -0 $dp 2>/dev/null; do
        sleep 1; i=$((i + 1))
    done
    if grep -q "magnetd: ready" "$dir/magnetd.err"; then
        echo "ready 1"
        sleep 9 | nc -l -p 7001 > /dev/null &
        sleep 1
        ( dd if=/dev/zero bs=1000 count=30 2>/dev/null; sleep 5 ) | nc 127.0.0.1 7001 &
        sleep 3
        # the live layer table (app, tcp rows) and how each connection's send
        # path is timed (TX timestamp callbacks where the kernel has them)
        wget -q -O- http://127.0.0.1:9595/metrics \
            | grep -E '^magnet_connection_((app|wire|layer)_bytes_total|send_latency_method|retransmits_total)' \
            | sed 's/^/open /'
        sleep 8
        wget -q -O- http://127.0.0.1:9595/metrics | grep -E '^magnet_connection_((app|wire)_bytes_total|retransmits_total)' \
            | sed 's/^/closed /'
        kill $dp
        wait $dp
        echo "rc $?"
        # parts the kernel refused, each named in one line
        grep " left out: " "$dir/magnetd.err" | sed 's/^/leftout /'
        # how the send stages are timed where the kernel lacks the callbacks
        grep "stack_latency" "$dir/magnetd.err" | sed 's/^/stages /'
        # the default packet_hooks = "sampled": windows opened and closed
        echo "windows $(grep -o 'sampling windows: [0-9]* opened ([0-9]* failed)' "$dir/magnetd.err")"
    else
        echo "ready 0"
        wait $dp
        echo "rc $?"
        echo "stderr $(tail -n 1 "$dir/magnetd.err")"
    fi
fi
if [ "$2" = "--leftovers" ]; then
    sec "leftovers"
    # every layer and kind at once, then count what is left
    "$m" record -q --layers all --kinds all -o "$dir/everything.mgt" -- "$m" loadgen --tcp 20x1k >/dev/null 2>&1
    echo "rc $?"
    # a sampler killed by SIGKILL: its clsact filters (no TCX) outlive it, and
    # the next start (the 200 ms run below) must remove them and its qdisc
    "$m" sample -i lo --interval 1ms --samples 600000 >/dev/null 2>"$dir/killed.err" &
    kp=$!
    i=0
    while ! grep -q "sampling lo" "$dir/killed.err" 2>/dev/null && [ $i -lt 300 ]; do
        sleep 1; i=$((i + 1))
    done
    echo "killed_attach $(sed -n 's/.*sampling lo (\([a-z]*\)).*/\1/p' "$dir/killed.err")"
    kill -9 $kp
    wait $kp 2>/dev/null
    echo "killed_left $(tc qdisc show 2>/dev/null | grep -c clsact)"
    # the sampler on lo (clsact filters where the kernel has no TCX), 200 ms
    "$m" sample -i lo --interval 1ms --samples 200 -o "$dir/sample.json" >/dev/null 2>"$dir/sample.err"
    echo "sample_rc $? $(tail -n 1 "$dir/sample.err")"
    echo "sample_cleaned $(grep -c 'removed what a killed sampler.*filter.*qdisc' "$dir/sample.err")"
    # A recorder's links are released after it exits, by a process of its own
    # (magnet-detach: the kernel takes a grace period per syscall tracepoint):
    # what is left is counted once it is gone, and a release that never ends
    # shows as link_fds.
    i=0
    while grep -qx magnet-detach /proc/[0-9]*/comm 2>/dev/null && [ $i -lt 120 ]; do
        sleep 1; i=$((i + 1))
    done
    n=0
    for f in /proc/[0-9]*/fdinfo/*; do
        grep -q '^link_type:' "$f" 2>/dev/null && n=$((n + 1))
    done
    echo "link_fds $n"
    echo "kprobe_events $(cat /sys/kernel/tracing/kprobe_events 2>/dev/null | wc -l)"
    echo "pinned $(ls /sys/fs/bpf 2>/dev/null | wc -l)"
    echo "clsact $(tc qdisc show 2>/dev/null | grep -c clsact)"
fi
sec "times"
awk 'NR > 1 { printf "%s %.1f\n", name, $1 - t } { t = $1; name = substr($0, index($0, " ") + 1) }' "$dir/.times"
sec "end"
