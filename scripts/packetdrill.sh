#!/usr/bin/env bash
# Google's packetdrill TCP suite (third_party/packetdrill) as an oracle for magnet.
#
#   scripts/packetdrill.sh [--variants LIST] [--baseline-only] [--launched | --strace] [--out DIR] [--keep] [SCRIPT...]
#
# SCRIPT: paths under gtests/net/tcp (e.g. sack/sack-shift-sacked-2-6-8-3-9-nofack.pkt)
# or directories there; default: every *.pkt of gtests/net/tcp. Each script runs in
# the IP versions upstream's run_all.py gives it (ipv4 unless its name ends in
# v6.pkt, ipv6 unless it ends in v4.pkt; ipv4-mapped-ipv6 too when --variants
# names it; default --variants ipv4,ipv6), each run in a fresh network namespace:
#
#  1. without magnet: does it pass on this kernel? (a failure here is the kernel's
#     or the host's, not magnet's: it is listed, not counted against magnet);
#  2. a run that passed runs again with `magnet record --all --netns self` and
#     `tcpdump -i any tcp` (LINUX_SLL2) in the same namespace, and the namespace's
#     TcpRetransSegs/TCPRetransFail before and after. It must pass again (one
#     retry: the scripts' timing is tight on a busy host), and
#     scripts/packetdrill_compare.py must find magnet's ip and dev rows (in and
#     out, units and bytes, summed over TCP connections) equal to the capture and
#     retrans_segs equal to the TcpRetransSegs delta. With --launched magnet
#     starts packetdrill instead (`magnet record --netns self -- packetdrill …`:
#     its sockets only), compared the same way.
#  3. with --strace instead, a passing script's app calls are checked against
#     strace's, in a run of their own: `magnet record --netns self -- strace -f
#     -yy … packetdrill …` (strace breaks the scripts' timing, so the script may
#     fail here; its calls up to then are still the same calls for both), and
#     scripts/packetdrill_calls.py must find the multiset of (direction, return
#     value) of magnet's app_send/app_recv events equal to strace's calls on TCP
#     and UDP sockets.
#
# One line per run: RESULT SCRIPT VARIANT [first mismatch]. RESULT is one of
# `fail` (fails without magnet), `exact`, `mismatch`, `broken` (passes without
# magnet, fails with it), `excepted` (a mismatch listed in
# scripts/packetdrill-exceptions.txt with its reason). Then a summary; results
# as TSV in OUT/results.tsv. Exit 1 on any `mismatch` or `broken`, 2 when it
# cannot run. Needs root, packetdrill's build tools (scripts/setup.sh
# packetdrill) and a built magnet (cargo build -p magnet-cli; MAGNET=path overrides).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
suite=$root/third_party/packetdrill/gtests/net/tcp
target="${CARGO_TARGET_DIR:-$root/target}"
magnet="${MAGNET:-$target/debug/magnet}"
variants=ipv4,ipv6
baseline_only=0
launched=0
strace=0
keep=0
out="$target/packetdrill/runs"
exceptions=$root/scripts/packetdrill-exceptions.txt
scripts=()
while [ $# -gt 0 ]; do
    case "$1" in
        --variants) variants="$2"; shift 2 ;;
        --baseline-only) baseline_only=1; shift ;;
        --launched) launched=1; shift ;;
        --strace) strace=1; shift ;;
        --out) out="$2"; shift 2 ;;
        --keep) keep=1; shift ;;
        -h|--help) sed -n '2,37p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "packetdrill.sh: unknown option $1" >&2; exit 2 ;;
        *) scripts+=("$1"); shift ;;
    esac
done
[ "$(id -u)" -eq 0 ] || { echo "packetdrill.sh: needs root (namespaces, tun, BPF)" >&2; exit 2; }
for tool in ip tcpdump nstat timeout python3; do
    command -v "$tool" >/dev/null || { echo "packetdrill.sh: $tool not found (scripts/setup.sh packetdrill)" >&2; exit 2; }
done
[ "$strace" = 1 ] && [ "$launched" = 1 ] && { echo "packetdrill.sh: --strace and --launched are two runs: give one" >&2; exit 2; }
[ "$strace" = 0 ] || command -v strace >/dev/null || { echo "packetdrill.sh: strace not found (scripts/setup.sh packetdrill)" >&2; exit 2; }
if [ "$baseline_only" = 0 ] && [ ! -x "$magnet" ]; then
    echo "packetdrill.sh: no magnet at $magnet (cargo build -p magnet-cli, or MAGNET=path)" >&2; exit 2
fi
pd=$(scripts/packetdrill-build.sh) || exit 2

# The arguments of upstream's run_all.py per variant.
variant_args() {
    case "$1" in
        ipv4) echo "--ip_version=ipv4 --local_ip=192.168.0.1 --gateway_ip=192.168.0.1 --netmask_ip=255.255.0.0 --remote_ip=192.0.2.1 -D TFO_COOKIE=3021b9d889017eeb -D CODE=host_unreachable -D CMSG_LEVEL_IP=SOL_IP -D CMSG_TYPE_RECVERR=IP_RECVERR" ;;
        ipv6) echo "--ip_version=ipv6 --mtu=1520 --local_ip=fd3d:0a0b:17d6::1 --gateway_ip=fd3d:0a0b:17d6:8888::1 --remote_ip=fd3d:fa7b:d17d::1 -D TFO_COOKIE=c1d1e9742a47a9bc -D CMSG_LEVEL_IP=SOL_IPV6 -D CMSG_TYPE_RECVERR=IPV6_RECVERR" ;;
        ipv4-mapped-ipv6) echo "--ip_version=ipv4-mapped-ipv6 --local_ip=192.168.0.1 --gateway_ip=192.168.0.1 --netmask_ip=255.255.0.0 --remote_ip=192.0.2.1 -D TFO_COOKIE=3021b9d889017eeb -D CODE=host_unreachable -D CMSG_LEVEL_IP=SOL_IPV6 -D CMSG_TYPE_RECVERR=IPV6_RECVERR" ;;
        *) echo "packetdrill.sh: unknown variant $1 (ipv4, ipv6, ipv4-mapped-ipv6)" >&2; return 1 ;;
    esac
}
IFS=, read -ra want_variants <<<"$variants"
for v in "${want_variants[@]}"; do variant_args "$v" >/dev/null || exit 2; done

variants_of() {
    local s="$1" v
    for v in "${want_variants[@]}"; do
        case "$v" in
            ipv4|ipv4-mapped-ipv6) [[ "$s" == *v6.pkt ]] || echo "$v" ;;
            ipv6) [[ "$s" == *v4.pkt ]] || echo "$v" ;;
        esac
    done
}

list=()
[ ${#scripts[@]} -gt 0 ] || scripts=(.)
for s in "${scripts[@]}"; do
    s="${s#third_party/packetdrill/gtests/net/tcp/}"
    if [ -d "$suite/$s" ]; then
        while IFS= read -r f; do f="${f#"$suite"/}"; list+=("${f#./}"); done < <(find "$suite/$s" -name '*.pkt' | sort)
    elif [ -f "$suite/$s" ]; then list+=("$s")
    else echo "packetdrill.sh: no script $s under $suite" >&2; exit 2
    fi
done

# SCRIPT VARIANT -> "KEYS reason", from the exceptions file (lines
# "SCRIPT VARIANT|* KEYS reason": KEYS the comparisons it explains).
exception_for() {
    [ -f "$exceptions" ] || return 1
    awk -v s="$1" -v v="$2" '!/^#/ && $1 == s && ($2 == v || $2 == "*") { $1 = ""; $2 = ""; sub(/^ +/, ""); print; found = 1; exit } END { exit !found }' "$exceptions"
}

# The scripts' defaults set cubic in their namespace; a namespace may only pick
# an algorithm of the host's tcp_allowed_congestion_control (else EPERM, and the
# scripts run with the host's default, e.g. bbr, and fail on cwnd values). Allow
# cubic for the run when the kernel has it; restored at the end.
allowed_file=/proc/sys/net/ipv4/tcp_allowed_congestion_control
allowed_before=""
if grep -qw cubic /proc/sys/net/ipv4/tcp_available_congestion_control && ! grep -qw cubic "$allowed_file"; then
    allowed_before=$(cat "$allowed_file")
    echo "$allowed_before cubic" >"$allowed_file" || allowed_before=""
fi

mkdir -p "$out"
results="$out/results.tsv"
: >"$results"
n=0
ns=""
cleanup() { [ -n "$ns" ] && ip netns del "$ns" 2>/dev/null; ns=""; }
# The scripts' set_sysctls.py leaves /tmp/sysctl_restore_<packetdrill pid>.sh
# behind at every run; the values it would restore were those of a namespace
# deleted since: the files made during this run are removed at its end.
started=$(mktemp "$out/.started.XXXXXX")
forget_restore_files() {
    find /tmp -maxdepth 1 -name 'sysctl_restore_*.sh' -newer "$started" -delete 2>/dev/null
    rm -f "$started"
}
restore() {
    cleanup
    [ -n "$allowed_before" ] && echo "$allowed_before" >"$allowed_file"
    allowed_before=""
    forget_restore_files
}
trap 'restore; exit 130' INT TERM
trap restore EXIT

new_ns() {
    n=$((n + 1))
    ns="pdrill-$$-$n"
    ip netns add "$ns" && ip -n "$ns" link set lo up
}

# run_pd DIR SCRIPT VARIANT: packetdrill in $ns, its output in DIR/packetdrill.out.
run_pd() {
    local dir="$1" s="$2" v="$3"
    # shellcheck disable=SC2046
    (cd "$suite/$(dirname "$s")" && ip netns exec "$ns" timeout 180 "$pd" --send_omit_free \
        $(variant_args "$v") "$(basename "$s")") >"$dir/packetdrill.out" 2>&1
}

# The line of packetdrill's output that says why it failed.
first_error() {
    { grep -m1 -E ': (error|runtime error|assertion)|error' "$1" || grep -v '^sysctl: ' "$1" | tail -1; } | cut -c1-200
}

mib() { ip netns exec "$ns" nstat -asz "$1" 2>/dev/null | awk -v k="$1" '$1 == k { print $2; f = 1 } END { if (!f) print 0 }'; }

# wait_line FILE TEXT PID: until FILE has TEXT (20 s), or PID ended.
wait_line() {
    local i
    for i in $(seq 200); do
        grep -q "$2" "$1" 2>/dev/null && return 0
        kill -0 "$3" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

# with_magnet DIR SCRIPT VARIANT [ALLOWED]: prints the comparison's line; 0 exact,
# 1 mismatch, 4 only mismatches ALLOWED explains, 3 the script failed under the
# recorder, 2 the run itself failed.
with_magnet() {
    local dir="$1" s="$2" v="$3" allowed="${4:-}" td rec rc segs0 fail0 segs fail
    new_ns || return 2
    # Emptied here, not by the redirections below: those run in the background
    # child, and a second try's wait could read the first try's lines.
    rm -f "$dir"/{capture.pcap,tcpdump.err,record.err,record.out,trace.mgt,analyze.json}
    : >"$dir/tcpdump.err"; : >"$dir/record.err"
    ip netns exec "$ns" tcpdump -i any -y LINUX_SLL2 -s 160 --immediate-mode -U \
        -w "$dir/capture.pcap" tcp 2>"$dir/tcpdump.err" &
    td=$!
    if ! wait_line "$dir/tcpdump.err" "listening on" "$td"; then
        echo "tcpdump did not start: $(tail -1 "$dir/tcpdump.err")"; kill "$td" 2>/dev/null; cleanup; return 2
    fi
    local rrc=0
    segs0=$(mib TcpRetransSegs); fail0=$(mib TcpExtTCPRetransFail)
    if [ "$launched" = 1 ]; then
        # magnet passes packetdrill's exit status on; packetdrill's lines go to
        # record.err with magnet's.
        # shellcheck disable=SC2046
        (cd "$suite/$(dirname "$s")" && ip netns exec "$ns" timeout 240 "$magnet" record --netns self \
            -o "$dir/trace.mgt" -- "$pd" --send_omit_free $(variant_args "$v") "$(basename "$s")") \
            >"$dir/record.out" 2>"$dir/record.err"
        rc=$?
        cp "$dir/record.err" "$dir/packetdrill.out"
    else
        ip netns exec "$ns" "$magnet" record --all --netns self -o "$dir/trace.mgt" \
            >"$dir/record.out" 2>"$dir/record.err" &
        rec=$!
        if ! wait_line "$dir/record.err" "magnet: recording " "$rec"; then
            echo "magnet record did not start: $(tail -1 "$dir/record.err")"
            kill "$td" "$rec" 2>/dev/null; wait "$td" "$rec" 2>/dev/null; cleanup; return 2
        fi
        run_pd "$dir" "$s" "$v"; rc=$?
    fi
    segs=$(( $(mib TcpRetransSegs) - segs0 )); fail=$(( $(mib TcpExtTCPRetransFail) - fail0 ))
    # The stack's last events drain; tcpdump writes what it holds.
    sleep 0.3
    if [ "$launched" = 0 ]; then kill -INT "$rec"; wait "$rec"; rrc=$?; fi
    kill "$td"; wait "$td" 2>/dev/null
    cleanup
    if [ "$rc" -ne 0 ]; then
        first_error "$dir/packetdrill.out"; return 3
    fi
    if [ "$rrc" -ne 0 ]; then echo "magnet record exited $rrc: $(tail -1 "$dir/record.err")"; return 2; fi
    if ! "$magnet" analyze --json "$dir/trace.mgt" >"$dir/analyze.json" 2>"$dir/analyze.err"; then
        echo "magnet analyze failed: $(tail -1 "$dir/analyze.err")"; return 2
    fi
    local line crc said
    line=$(python3 scripts/packetdrill_compare.py "$dir/analyze.json" "$dir/capture.pcap" "$segs" "$fail" ${allowed:+"$allowed"}); crc=$?
    if [ "$crc" -ne 0 ]; then
        # What the recorder itself said it missed (runs the kernel skipped,
        # events lost to a full ring): a mismatch's first clue.
        said=$(grep -E "skipped [0-9]+ runs|lost [1-9][0-9]* events" "$dir/record.err" | sed 's/^magnet: //' | tr '\n' ' ' | cut -c1-400)
        [ -n "$said" ] && line="$line (magnet said: ${said% })"
    fi
    echo "$line"
    return "$crc"
}

# The socket I/O calls magnet counts as app calls (docs/FORMAT.md).
strace_calls=read,write,readv,writev,sendto,recvfrom,sendmsg,recvmsg,sendmmsg,recvmmsg,sendfile,splice

# with_strace DIR SCRIPT VARIANT: prints the comparison's line; 0 equal, 1 not,
# 2 the run itself failed.
with_strace() {
    local dir="$1" s="$2" v="$3" rc note="" line
    new_ns || return 2
    rm -f "$dir"/{strace.out,record.err,record.out,trace.mgt,calls.jsonl,parse.err}
    # shellcheck disable=SC2046
    (cd "$suite/$(dirname "$s")" && ip netns exec "$ns" timeout 240 "$magnet" record --netns self \
        -o "$dir/trace.mgt" -- strace -f -qq -yy -o "$dir/strace.out" -e trace="$strace_calls" \
        "$pd" --send_omit_free $(variant_args "$v") "$(basename "$s")") \
        >"$dir/record.out" 2>"$dir/record.err"
    rc=$?
    cleanup
    [ -s "$dir/trace.mgt" ] || { echo "magnet record failed: $(tail -1 "$dir/record.err")"; return 2; }
    [ "$rc" -eq 0 ] || note=" (the script failed under strace: $(first_error "$dir/record.err"))"
    if ! "$magnet" parse --json -q --kind app_send,app_recv "$dir/trace.mgt" >"$dir/calls.jsonl" 2>"$dir/parse.err"; then
        echo "magnet parse failed: $(tail -1 "$dir/parse.err")"; return 2
    fi
    line=$(python3 scripts/packetdrill_calls.py "$dir/calls.jsonl" "$dir/strace.out"); rc=$?
    echo "$line$note"
    return "$rc"
}

declare -A count=()
start=$(date +%s)
for s in "${list[@]}"; do
    for v in $(variants_of "$s"); do
        dir="$out/${s%.pkt}/$v"
        rm -rf "$dir"; mkdir -p "$dir"
        detail=""
        # Twice before calling it a failure: the scripts' timing tolerances are
        # a few ms, and a busy host misses them now and then.
        for try in 1 2; do
            new_ns || { echo "packetdrill.sh: cannot create a namespace" >&2; exit 2; }
            run_pd "$dir" "$s" "$v"; rc=$?
            cleanup
            [ "$rc" -ne 0 ] || break
        done
        if [ "$rc" -ne 0 ]; then
            result=fail
            detail=$(first_error "$dir/packetdrill.out")
            [ "$rc" -eq 124 ] && detail="timed out after 180 s"
        elif [ "$baseline_only" = 1 ]; then
            result=pass
        elif [ "$strace" = 1 ]; then
            detail=$(with_strace "$dir" "$s" "$v"); rc=$?
            case "$rc" in
                0) result=exact ;;
                1) result=mismatch ;;
                *) result=broken ;;
            esac
        else
            exc=$(exception_for "$s" "$v") || exc=""
            for try in 1 2; do
                detail=$(with_magnet "$dir" "$s" "$v" "${exc%% *}"); rc=$?
                [ "$rc" -eq 3 ] || break
            done
            case "$rc" in
                0) result=exact; detail="" ;;
                1) result=mismatch ;;
                4) result=excepted; detail="$detail (excepted: ${exc#* })" ;;
                *) result=broken ;;
            esac
            [ "$try" = 2 ] && [ "$rc" -ne 3 ] && detail="${detail:+$detail }(passed on the second try under magnet)"
        fi
        count[$result]=$(( ${count[$result]:-0} + 1 ))
        printf '%-8s %s %s%s\n' "$result" "$s" "$v" "${detail:+  $detail}"
        printf '%s\t%s\t%s\t%s\n' "$s" "$v" "$result" "$detail" >>"$results"
        if [ "$keep" = 0 ] && { [ "$result" = exact ] || [ "$result" = pass ]; }; then rm -rf "$dir"; fi
    done
done
total=0; for k in "${!count[@]}"; do total=$((total + count[$k])); done
passed=$(( total - ${count[fail]:-0} ))
echo "packetdrill: $total runs of ${#list[@]} scripts in $(( $(date +%s) - start )) s: $passed pass without magnet, ${count[fail]:-0} fail without it;" \
    "under magnet: ${count[exact]:-0} exact, ${count[mismatch]:-0} mismatch, ${count[excepted]:-0} excepted, ${count[broken]:-0} broken (results: $results)"
[ "${count[mismatch]:-0}" -eq 0 ] && [ "${count[broken]:-0}" -eq 0 ]
