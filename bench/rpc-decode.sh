#!/usr/bin/env bash
# Decode rate and peak memory of `magnet rpc -r` vs `tshark -r … -T fields` on one
# capture of >= 1 GB of real NFS traffic.
#
# 1. Records a real workload: nfs-ganesha (VFS) + rpcbind in one network namespace,
#    libnfs clients in another, joined by a veth pair, captured by tcpdump: the
#    scripted workload of the live tests (NFSv3 and NFSv4: mkdir, create, write, read,
#    rename, readdir, remove) and a 16 MiB file copied in and read back (NFSv3).
# 2. Repeats that capture to TARGET bytes (default 1.1e9), each copy with its own
#    client address and shifted in time (bench/rpc-replicate.py).
# 3. Times, on the same file: magnet rpc -r FILE (rpcspy lines to /dev/null), runs
#    alternated with tshark -T fields (the acceptance fields); /usr/bin/time -v for
#    wall time and peak RSS. Prints one line per run and the medians.
#
# Needs root and the packages in scripts/packages-rpc.txt, and a release build:
#   cargo build --release -p magnet-cli
# Usage: [KEEP=big.pcap] [SMALL=N] bench/rpc-decode.sh [MAGNET_BIN] [TARGET_BYTES] [RUNS]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_need rpc-decode /usr/bin/time ganesha.nfsd gcc ip python3 rpcbind tcpdump tshark
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
magnet=${1:-${CARGO_TARGET_DIR:-$root/target}/release/magnet}
target=${2:-1100000000}
runs=${3:-3}
work=$(mktemp -d /var/tmp/magnet-rpc-bench.XXXXXX)
ns_s=mgb-s-$$
ns_c=mgb-c-$$
pid=""
cleanup() {
    [ -n "$pid" ] && kill -- -"$pid" 2>/dev/null || true
    sleep 0.5
    [ -n "$pid" ] && kill -9 -- -"$pid" 2>/dev/null || true
    ip netns del "$ns_s" 2>/dev/null || true
    ip netns del "$ns_c" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

[ -x "$magnet" ] || { echo "no magnet binary at $magnet (cargo build --release -p magnet-cli)" >&2; exit 2; }
ip netns add "$ns_s"; ip netns add "$ns_c"
ip link add "mgbs$$" type veth peer name "mgbc$$"
ip link set "mgbs$$" netns "$ns_s"; ip link set "mgbc$$" netns "$ns_c"
ip -n "$ns_s" addr add 10.213.0.1/24 dev "mgbs$$"; ip -n "$ns_c" addr add 10.213.0.2/24 dev "mgbc$$"
for ns in "$ns_s" "$ns_c"; do ip -n "$ns" link set lo up; done
ip -n "$ns_s" link set "mgbs$$" up; ip -n "$ns_c" link set "mgbc$$" up
mkdir -p "$work/export"
cat > "$work/ganesha.conf" <<CONF
NFS_CORE_PARAM { Protocols = 3, 4; Enable_NLM = false; Enable_RQUOTA = false; Bind_addr = 10.213.0.1; }
NFSV4 { Graceless = true; }
EXPORT { Export_Id = 1; Path = $work/export; Pseudo = /export; Access_Type = RW; Squash = No_Root_Squash;
  Protocols = 3, 4; Transports = TCP, UDP; SecType = sys; FSAL { Name = VFS; } }
LOG { Default_Log_Level = WARN; }
CONF
cat > "$work/run.sh" <<RUN
set -e
mount -t tmpfs tmpfs /run; mkdir -p /run/rpcbind /run/ganesha
mount -t tmpfs tmpfs /var/lib/nfs 2>/dev/null || mkdir -p /var/lib/nfs
mkdir -p /var/lib/nfs/ganesha
rpcbind -f -w &
sleep 0.3
exec ganesha.nfsd -F -f $work/ganesha.conf -L $work/ganesha.log -p $work/ganesha.pid
RUN
setsid ip netns exec "$ns_s" unshare -m --propagation private sh "$work/run.sh" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 150); do
    ip netns exec "$ns_c" rpcinfo -T tcp 10.213.0.1 100003 4 >/dev/null 2>&1 && break
    sleep 0.2
done
gcc -O1 -o "$work/nfs-workload" "$root/crates/magnet-rpc/tests/support/nfs-workload.c" -lnfs
head -c $((16 << 20)) /dev/urandom > "$work/big.bin"
ip netns exec "$ns_c" tcpdump -i "mgbc$$" -s 0 --immediate-mode -B 65536 -U -Z root -w "$work/base.pcap" 2>"$work/tcpdump.log" &
td=$!
sleep 1
C="ip netns exec $ns_c"
if [ -n "${SMALL:-}" ]; then
    # SMALL=N: many small RPCs only (the scripted workload N times, no bulk file), so
    # the replicated capture holds many transactions rather than large READ/WRITEs.
    for _ in $(seq "$SMALL"); do
        $C "$work/nfs-workload" 10.213.0.1 "$work/export" 3 >/dev/null
        $C "$work/nfs-workload" 10.213.0.1 /export 4 >/dev/null
    done
else
    $C "$work/nfs-workload" 10.213.0.1 "$work/export" 3 >/dev/null
    $C "$work/nfs-workload" 10.213.0.1 /export 4 >/dev/null
    $C nfs-cp "$work/big.bin" "nfs://10.213.0.1$work/export/big.bin" >/dev/null
    $C nfs-cat "nfs://10.213.0.1$work/export/big.bin" | cmp - "$work/big.bin"
fi
sleep 1; kill -INT $td; wait $td || true
python3 "$here/rpc-replicate.py" "$work/base.pcap" "$work/big.pcap" "$target" 10.213.0.2
size=$(stat -c %s "$work/big.pcap")
# KEEP=PATH keeps the replicated capture (e.g. for bench/rpc-speed.sh).
[ -n "${KEEP:-}" ] && cp "$work/big.pcap" "$KEEP"
pkts=$(tcpdump -r "$work/big.pcap" -nn 2>/dev/null | wc -l)
echo "capture: $size bytes, $pkts packets (base $(stat -c %s "$work/base.pcap") bytes)"
echo "magnet: $magnet rpc -q -r big.pcap > /dev/null"
echo "tshark: tshark -r big.pcap -n -o tcp.try_heuristic_first:TRUE -Y rpc -T fields -e rpc.xid -e rpc.msgtyp -e rpc.program -e rpc.procedure -e nfs.procedure_v3 -e nfs.main_opcode -e nfs.status -e rpc.time > /dev/null"
measure() { # name, command...
    local name=$1; shift
    /usr/bin/time -v -o "$work/time.txt" "$@" > /dev/null 2>"$work/err.txt" || true
    local wall rss
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$work/time.txt")
    rss=$(awk -F': ' '/Maximum resident/ {print $2}' "$work/time.txt")
    local secs
    secs=$(echo "$wall" | awk -F: '{ if (NF==3) print $1*3600+$2*60+$3; else print $1*60+$2 }')
    printf '%s\t%s s\t%s KiB\t%.0f pkt/s\t%.1f MB/s\n' "$name" "$secs" "$rss" \
        "$(echo "$pkts / $secs" | bc -l)" "$(echo "$size / $secs / 1000000" | bc -l)"
    echo "$name $secs $rss" >> "$work/results"
}
for i in $(seq "$runs"); do
    measure magnet "$magnet" rpc -q -r "$work/big.pcap"
    if [ "$i" -le "${TSHARK_RUNS:-1}" ]; then
        measure tshark tshark -r "$work/big.pcap" -n -o tcp.try_heuristic_first:TRUE -Y rpc -T fields \
            -e rpc.xid -e rpc.msgtyp -e rpc.program -e rpc.procedure -e nfs.procedure_v3 \
            -e nfs.main_opcode -e nfs.status -e rpc.time
    fi
done
"$magnet" rpc -r "$work/big.pcap" > /dev/null 2> "$work/summary.txt" || true
cat "$work/summary.txt"
for n in magnet tshark; do
    awk -v n=$n '$1==n {print $2, $3}' "$work/results" | sort -n | awk -v n=$n '{a[NR]=$1; r[NR]=$2} END { if (NR) printf "median %s: %s s, peak RSS %s KiB (%d runs)\n", n, a[int((NR+1)/2)], r[int((NR+1)/2)], NR }'
done
