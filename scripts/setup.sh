#!/usr/bin/env bash
# Installs what magnet needs, by part, if it is missing. Safe to run again: it only
# acts on what is missing.
#
#   scripts/setup.sh            the demo's part only (build + record): what `scripts/demo.sh` needs
#   scripts/setup.sh --all      every part: what `scripts/test.sh` needs
#   scripts/setup.sh PART...    the named parts (build, and each scripts/packages-PART.txt)
#
# Parts: `build` (below: clang/llvm/libelf/zlib/libpcap/pkg-config/iproute2, the
# demo's whole need) and one per scripts/packages-PART.txt (bench, daemon, fid-record, lab,
# packetdrill, report, rpc, servers, wire), plus `python` (scripts/requirements-*.txt).
#
# Each part is installed on its own, after `apt-get -s` shows it can be: a part
# that apt cannot install never stops another. When a part conflicts with a package
# the image took from another suite (Debian's images ship qemu-utils from
# bookworm-backports, and qemu-system-x86 from bookworm then breaks it), the part is
# tried again with that suite as the target release, so its companions come from
# the same suite. A part that still cannot be installed is named with apt's reason;
# setup then exits 3 after installing everything else (the demo's part failing is
# fatal at once). Needs root for installs (uses sudo when not root).
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null; then SUDO="sudo"; else
        echo "setup: not root and no sudo: install packages by hand or run as root" >&2; exit 1
    fi
fi
export DEBIAN_FRONTEND=noninteractive

# The demo's part: clang compiles the BPF programs (CO-RE), libelf/zlib for libbpf,
# pkg-config, libpcap-dev (magnet links libpcap for live capture), iproute2 (the
# demo's loopback and namespaces), util-linux/procps (mount, ps).
build_pkgs=(clang llvm libelf-dev zlib1g-dev pkg-config make gcc libpcap-dev iproute2
            util-linux procps)

parts=()
want_python=0
if [ $# -eq 0 ]; then parts=(build); fi
for a in "$@"; do
    case "$a" in
        --all)
            parts+=(build)
            for f in scripts/packages-*.txt; do
                [ -e "$f" ] || continue
                p="${f#scripts/packages-}"; parts+=("${p%.txt}")
            done
            want_python=1 ;;
        build) parts+=(build) ;;
        python) want_python=1 ;;
        -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *)
            [ -e "scripts/packages-$a.txt" ] || { echo "setup: no part '$a' (no scripts/packages-$a.txt)" >&2; exit 2; }
            parts+=("$a") ;;
    esac
done

part_packages() {
    if [ "$1" = build ]; then printf '%s\n' "${build_pkgs[@]}"; return; fi
    local p
    while read -r p; do
        p="${p%%#*}"; p="${p// /}"
        [ -n "$p" ] && echo "$p"
    done < "scripts/packages-$1.txt"
}

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

# The lab boots Debian's 6.12 from bookworm-backports: that part needs the suite.
add_backports() {
    grep -qs bookworm /etc/os-release || return 0
    grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/ && return 0
    echo "setup: adding the bookworm-backports apt source (the lab's 6.12 kernel)" >&2
    printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
        | $SUDO tee /etc/apt/sources.list.d/magnet-backports.sources >/dev/null
    apt_updated=0
}

apt_updated=0
apt_update() {
    [ "$apt_updated" = 1 ] && return 0
    $SUDO apt-get update -qq || echo "setup: apt-get update failed; trying with the lists we have" >&2
    apt_updated=1
}

# Suites whose packages the image already has installed at a version newer than
# the default candidate (e.g. qemu-utils ...~bpo12 from bookworm-backports): a part
# that conflicts is retried with each of them as target release.
other_suites() {
    # (grep -c, not -q: -q closes the pipe early and pipefail then reads SIGPIPE as failure)
    local n
    n=$(dpkg-query -W -f='${Version}\n' 2>/dev/null | grep -c 'bpo' || true)
    if [ "${n:-0}" -gt 0 ]; then echo "$(. /etc/os-release; echo "${VERSION_CODENAME:-bookworm}")-backports"; fi
}

failed=()
install_part() {
    local part="$1" missing=() p
    while read -r p; do installed "$p" || missing+=("$p"); done < <(part_packages "$part")
    [ ${#missing[@]} -eq 0 ] && return 0
    [ "$part" = lab ] && add_backports
    apt_update
    # wireshark-common asks whether non-root users may capture: answer no, quietly.
    echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections 2>/dev/null || true
    local target="" err
    if ! err=$($SUDO apt-get install -s -y "${missing[@]}" 2>&1 >/dev/null); then
        local s ok=0 suites
        suites=$(other_suites)
        if [ -n "$suites" ]; then add_backports; apt_update; fi
        for s in $suites; do
            if $SUDO apt-get install -s -y -t "$s" "${missing[@]}" >/dev/null 2>&1; then
                target="$s"; ok=1; break
            fi
        done
        if [ "$ok" = 0 ]; then
            echo "setup: part '$part' cannot be installed (${missing[*]}): $(echo "$err" | grep -E '^(E:| )' | head -3 | tr '\n' ' ')" >&2
            failed+=("$part")
            return 0
        fi
        echo "setup: part '$part' conflicts with packages the image took from $target; installing it from $target" >&2
    fi
    echo "setup: part '$part': installing ${missing[*]}" >&2
    if ! $SUDO apt-get install -y -qq ${target:+-t "$target"} "${missing[@]}" >/dev/null; then
        echo "setup: part '$part' failed to install (${missing[*]}); see apt's lines above" >&2
        failed+=("$part")
    fi
}

for part in "${parts[@]}"; do
    install_part "$part"
    if [ "$part" = build ] && [ ${#failed[@]} -gt 0 ]; then
        echo "setup: the build part is needed for everything: stopping" >&2; exit 1
    fi
done

if [ "$want_python" = 1 ]; then
    for req in scripts/requirements-*.txt; do
        [ -e "$req" ] || continue
        installed python3-pip || { apt_update; $SUDO apt-get install -y -qq python3-pip >/dev/null || true; }
        if ! python3 -m pip install -q --disable-pip-version-check -r "$req" >/dev/null 2>&1 \
            && ! python3 -m pip install -q --disable-pip-version-check --break-system-packages -r "$req" >/dev/null; then
            echo "setup: part 'python' ($req) could not be installed" >&2
            failed+=(python)
        fi
    done
fi

# magnet itself needs no tracefs (tp_btf and netfilter links), but tcpdump-era tools
# and debugging (bpftool prog tracelog) do: mount it when the kernel has it.
if [ ! -e /sys/kernel/tracing/trace ] && grep -qw tracefs /proc/filesystems; then
    $SUDO mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
fi

if ! command -v cargo >/dev/null; then
    echo "setup: cargo not found: install Rust (https://rustup.rs: curl ... | sh) and run again" >&2
    exit 1
fi
if [ ! -e /sys/kernel/btf/vmlinux ]; then
    echo "setup: warning: this kernel has no BTF (/sys/kernel/btf/vmlinux); recording needs CONFIG_DEBUG_INFO_BTF=y" >&2
fi
if [ ${#failed[@]} -gt 0 ]; then
    echo "setup: parts not installed: ${failed[*]} (the tests that need them will fail or say so)" >&2
    exit 3
fi
