# shellcheck shell=bash
# Shared by the bench/*.sh scripts (sourced): what a benchmark needs, said in one
# line when something is missing, and the magnet binary it measures.
#
#   bench_need NAME TOOL...   every TOOL not on PATH is named in one line, with its
#                             package and the set-up part that installs it
#                             (`scripts/setup.sh bench`, or lab, rpc), then exit 2.
#                             /usr/bin/time is checked as a file (bash's `time` is
#                             a keyword). BENCH_HIDE="a b" treats those tools as
#                             missing (the check's own test); BENCH_CHECK=1 exits 0
#                             right after the check, before the script does anything.
#   bench_root NAME WHY       exit 2 unless root.
#   bench_magnet NAME         prints $MAGNET, else the newest built binary (release
#                             first), else says how to build one and exits 2.
#   bench_netns_pair NA NB VA VB ADDR_A ADDR_B
#                             two network namespaces joined by a veth pair (VA in NA
#                             with ADDR_A/24, VB in NB with ADDR_B/24), loopback and
#                             both ends up.
#   bench_netns_del NA NB     kills what runs in them and deletes them (cleanup).

bench_pkg() { # tool -> "setup-part package"
    case $1 in
    ip | ss | tc | nstat) echo "bench iproute2" ;;
    /usr/bin/time) echo "bench time" ;;
    perf) echo "bench linux-perf" ;;
    qemu-system-x86_64) echo "lab qemu-system-x86" ;;
    ganesha.nfsd) echo "rpc nfs-ganesha" ;;
    rpcbind | gcc) echo "rpc $1" ;;
    taskset) echo "build util-linux" ;;
    *) echo "bench $1" ;;
    esac
}

bench_need() {
    local name=$1 t missing=() pkgs=() parts=() part pkg
    shift
    for t in "$@"; do
        if [[ " ${BENCH_HIDE:-} " == *" $t "* ]]; then
            missing+=("$t")
        elif [[ $t == /* ]]; then
            [[ -x $t ]] || missing+=("$t")
        else
            command -v "$t" >/dev/null 2>&1 || missing+=("$t")
        fi
    done
    if ((${#missing[@]})); then
        for t in "${missing[@]}"; do
            read -r part pkg <<<"$(bench_pkg "$t")"
            pkgs+=("$pkg")
            [[ " ${parts[*]} " == *" $part "* ]] || parts+=("$part")
        done
        echo "$name: missing ${missing[*]}: run scripts/setup.sh ${parts[*]} (installs ${pkgs[*]})" >&2
        exit 2
    fi
    if [[ ${BENCH_CHECK:-0} == 1 ]]; then
        echo "$name: has $*"
        exit 0
    fi
}

bench_root() {
    [[ $(id -u) == 0 ]] || { echo "$1: needs root ($2)" >&2; exit 2; }
}

bench_magnet() {
    local name=$1 repo c
    repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    if [[ -n ${MAGNET:-} ]]; then
        [[ -x $MAGNET ]] || { echo "$name: MAGNET=$MAGNET is not an executable" >&2; exit 2; }
        echo "$MAGNET"
        return
    fi
    for c in "${CARGO_TARGET_DIR:-$repo/target}/release/magnet" "${CARGO_TARGET_DIR:-$repo/target}/debug/magnet"; do
        [[ -x $c ]] && { echo "$c"; return; }
    done
    echo "$name: no magnet binary: build one (cargo build --release -p magnet-cli) or set MAGNET=/path/to/magnet" >&2
    exit 2
}

bench_netns_pair() {
    local na=$1 nb=$2 va=$3 vb=$4 aa=$5 ab=$6
    ip netns add "$na"
    ip netns add "$nb"
    ip link add "$va" netns "$na" type veth peer name "$vb" netns "$nb"
    ip -n "$na" addr add "$aa/24" dev "$va"
    ip -n "$nb" addr add "$ab/24" dev "$vb"
    ip -n "$na" link set lo up
    ip -n "$nb" link set lo up
    ip -n "$na" link set "$va" up
    ip -n "$nb" link set "$vb" up
}

bench_netns_del() {
    local n
    for n in "$@"; do ip netns pids "$n" 2>/dev/null | xargs -r kill 2>/dev/null; done
    sleep 0.3
    for n in "$@"; do ip netns del "$n" 2>/dev/null; done
    return 0
}
