#!/usr/bin/env bash
# Proves the README's first command the way a new user meets it: a fresh Debian 12
# root (mmdebstrap, minbase) with this checkout copied in and the host's Rust
# toolchain bind-mounted read-only (a new user has Rust; nothing else of magnet's),
# in which `scripts/demo.sh` must run to its table with no manual step.
#
#   scripts/fresh-root-demo.sh [--keep] [--no-image-quirks] [-- DEMO-ARGS...]
#
# By default the root is given the quirk the project's machine image has and a
# clean debootstrap lacks: qemu-utils from bookworm-backports with no backports
# source left configured (the conflict that once stopped set-up). --keep leaves
# the root in place (its path is printed). Needs root, mmdebstrap (installed when
# missing) and the Debian mirror. Not run in CI (CI's machine has the packages);
# run it before changing set-up. Takes ~10-20 minutes on 2 cores (a cold release
# build, crates fetched from crates.io into the root's own CARGO_HOME).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"
keep=0; quirks=1; demo_args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --keep) keep=1 ;;
        --no-image-quirks) quirks=0 ;;
        --) shift; demo_args=("$@"); break ;;
        -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "fresh-root-demo: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
[ "$(id -u)" -eq 0 ] || { echo "fresh-root-demo: needs root (chroot, mounts, BPF)" >&2; exit 1; }
command -v mmdebstrap >/dev/null || { apt-get update -qq; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap >/dev/null; }
rustup_home="${RUSTUP_HOME:-$HOME/.rustup}"
cargo_bin="${CARGO_HOME:-$HOME/.cargo}/bin"
[ -d "$rustup_home" ] && [ -x "$cargo_bin/cargo" ] \
    || { echo "fresh-root-demo: no Rust toolchain at $rustup_home / $cargo_bin to lend the root" >&2; exit 1; }

root="$(mktemp -d /var/tmp/magnet-fresh-root.XXXXXX)"
mounts=()
cleanup() {
    local m
    for ((i=${#mounts[@]}-1; i>=0; i--)); do umount -l "${mounts[$i]}" 2>/dev/null || true; done
    if [ "$keep" = 0 ]; then rm -rf --one-file-system "$root"; else echo "fresh-root-demo: root kept at $root" >&2; fi
}
trap cleanup EXIT
t0=$(date +%s)
echo "fresh-root-demo: mmdebstrap bookworm (minbase) into $root" >&2
# ca-certificates: cargo fetches crates over https; sudo-less root like a server.
mmdebstrap --variant=minbase --include=ca-certificates bookworm "$root" \
    "deb http://deb.debian.org/debian bookworm main" \
    "deb http://deb.debian.org/debian bookworm-updates main" \
    "deb http://deb.debian.org/debian-security bookworm-security main" >/tmp/fresh-root-mmdebstrap.log 2>&1 \
    || { tail -20 /tmp/fresh-root-mmdebstrap.log >&2; exit 1; }
echo "fresh-root-demo: root made in $(( $(date +%s) - t0 )) s" >&2

bind() { mkdir -p "$root$2"; mount --bind "$1" "$root$2"; mounts+=("$root$2"); [ "${3:-}" = ro ] && mount -o remount,bind,ro "$root$2"; true; }
bind /proc /proc
bind /sys /sys
bind /dev /dev
bind /dev/pts /dev/pts
mount -t tmpfs tmpfs "$root/tmp"; mounts+=("$root/tmp")
[ -d /sys/fs/bpf ] && mountpoint -q /sys/fs/bpf && { bind /sys/fs/bpf /sys/fs/bpf; }
bind "$rustup_home" /opt/rustup ro
bind "$cargo_bin" /opt/cargo-bin ro
cp /etc/resolv.conf "$root/etc/resolv.conf"
# The machine's own trust (a local CA, e.g. a proxy's) belongs to the machine the root
# stands for, not to magnet: give the root the host's local CA certificates.
if [ -n "$(ls /usr/local/share/ca-certificates 2>/dev/null)" ]; then
    cp -r /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
    chroot "$root" update-ca-certificates >/dev/null 2>&1 || true
fi

if [ "$quirks" = 1 ]; then
    echo "fresh-root-demo: giving the root the image's quirk (qemu-utils from bookworm-backports, no backports source left)" >&2
    echo "deb http://deb.debian.org/debian bookworm-backports main" > "$root/etc/apt/sources.list.d/quirk.list"
    chroot "$root" sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -t bookworm-backports qemu-utils >/dev/null' \
        || { echo "fresh-root-demo: could not install the quirk" >&2; exit 1; }
    rm "$root/etc/apt/sources.list.d/quirk.list"
    chroot "$root" apt-get update -qq
fi

# The project as a new user has it: the tracked files of this checkout (plus
# uncommitted changes), no build outputs.
mkdir -p "$root/work/magnet"
git ls-files -z --cached --others --exclude-standard | (cd "$repo" && tar --null -T - -cf -) | tar -xf - -C "$root/work/magnet"

echo "fresh-root-demo: running scripts/demo.sh ${demo_args[*]:-} in the root" >&2
t1=$(date +%s)
set +e
chroot "$root" /usr/bin/env -i HOME=/root PATH=/opt/cargo-bin:/usr/sbin:/usr/bin:/sbin:/bin \
    RUSTUP_HOME=/opt/rustup CARGO_HOME=/root/.cargo \
    TERM=dumb bash -c 'cd /work/magnet && scripts/demo.sh "$@"' demo "${demo_args[@]}" 2>&1 | tee /tmp/fresh-root-demo.log
rc=${PIPESTATUS[0]}
set -e
echo "fresh-root-demo: scripts/demo.sh exited $rc after $(( $(date +%s) - t1 )) s (whole run $(( $(date +%s) - t0 )) s); log: /tmp/fresh-root-demo.log" >&2
exit "$rc"
