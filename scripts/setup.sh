#!/usr/bin/env bash
# Installs what magnet needs to build, record and test, if it is missing: Debian
# packages (the core list below plus every scripts/packages-*.txt), Python
# packages for tests (scripts/requirements-*.txt), and a tracefs mount. Safe to
# run again: it only acts on what is missing. Needs root for installs (uses sudo
# when not root).
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null; then SUDO="sudo"; else
        echo "setup: not root and no sudo: install packages by hand or run as root" >&2; exit 1
    fi
fi

# Build: clang compiles the BPF programs (CO-RE), libelf/zlib for libbpf, pkg-config.
# Record/test: iproute2 (netns, veth), tcpdump + tshark (wire oracles), iperf3 and
# ethtool (benchmarks), libpcap-dev (live capture in `magnet rpc`).
core=(clang llvm libelf-dev zlib1g-dev pkg-config make gcc libpcap-dev iproute2 iperf3
      tcpdump tshark ethtool util-linux procps python3-pip)
extra=()
for f in scripts/packages-*.txt; do
    [ -e "$f" ] || continue
    while read -r p; do
        p="${p%%#*}"; p="${p// /}"
        [ -n "$p" ] && extra+=("$p")
    done < "$f"
done

# The kernel lab (scripts/lab) boots Debian's 6.12 from bookworm-backports.
if [ -e scripts/packages-lab.txt ] && grep -qs bookworm /etc/os-release \
    && ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    echo "setup: adding the bookworm-backports apt source (the lab's 6.12 kernel)" >&2
    printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
        | $SUDO tee /etc/apt/sources.list.d/magnet-backports.sources >/dev/null
    $SUDO apt-get update -qq
fi

missing=()
for p in "${core[@]}" "${extra[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    # wireshark-common asks whether non-root users may capture: answer no, quietly.
    echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections 2>/dev/null || true
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

for req in scripts/requirements-*.txt; do
    [ -e "$req" ] || continue
    if ! python3 -m pip install -q --disable-pip-version-check -r "$req" >/dev/null 2>&1; then
        python3 -m pip install -q --disable-pip-version-check --break-system-packages -r "$req" >/dev/null
    fi
done

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
