#!/usr/bin/env bash
# Fetch Debian's 6.1 and 6.12 kernel images and extract their vmlinux BTF, for
# magnet-funcs' tests and for `magnet funcs --btf`.
#
#   scripts/fetch-btf.sh [DIR]      (default: target/btf)
#
# Writes DIR/6.1.btf and DIR/6.12.btf (raw .BTF sections, 4-5 MB each) and
# DIR/6.1-veth.ko.btf and DIR/6.12-veth.ko.btf (the veth module's split BTF, 3 KB). Needs
# apt-get (download only, no install), dpkg-deb, xz, zstd and objcopy
# (binutils). Nothing is installed on the host.
set -euo pipefail
dir=${1:-target/btf}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The images the tests' expected counts were taken from; when apt no longer
# has one, the newest of its series (the tests then allow a small difference).
pick() {
  if apt-cache show "$1" >/dev/null 2>&1; then echo "$1"; return; fi
  apt-cache search --names-only "$2" | awk '{print $1}' | sort -V | tail -1
}
declare -A pkgs=(
  [6.1]=$(pick linux-image-6.1.0-56-amd64-unsigned '^linux-image-6\.1\.0-[0-9]+-amd64-unsigned$')
  [6.12]=$(pick linux-image-6.12.117+deb12-amd64-unsigned '^linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned$')
)

# Finds the compressed vmlinux inside a bzImage and decompresses it.
extract_vmlinux() {
  local img=$1 out=$2
  python3 - "$img" "$work/payload" <<'PY'
import sys
b = open(sys.argv[1], 'rb').read()
for magic, ext in ((b'\xfd7zXZ\x00', 'xz'), (b'\x28\xb5\x2f\xfd', 'zst')):
    at = b.find(magic)
    if at >= 0:
        open(sys.argv[2] + '.' + ext, 'wb').write(b[at:])
        print(ext)
        break
else:
    sys.exit(sys.argv[1] + ': no xz or zstd payload found')
PY
  if [ -f "$work/payload.xz" ]; then
    xz -dc "$work/payload.xz" > "$out" 2>/dev/null || true
  else
    zstd -dcq "$work/payload.zst" > "$out" 2>/dev/null || true
  fi
  rm -f "$work"/payload.*
  head -c 4 "$out" | grep -q ELF || { echo "$img: decompressed payload is not ELF" >&2; exit 1; }
}

for v in 6.1 6.12; do
  [ -s "$dir/$v.btf" ] && [ -s "$dir/$v-veth.ko.btf" ] && { echo "$dir/$v.btf exists"; continue; }
  pkg=${pkgs[$v]}
  [ -n "$pkg" ] || { echo "no linux-image package for $v in apt's lists (apt-get update?)" >&2; exit 1; }
  (cd "$work" && apt-get download "$pkg" >/dev/null)
  deb=$(ls "$work"/*.deb)
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$work" --wildcards './boot/vmlinuz-*' \
    './lib/modules/*/kernel/drivers/net/veth.ko*'
  extract_vmlinux "$work"/boot/vmlinuz-* "$work/vmlinux" >/dev/null
  objcopy -O binary --only-section=.BTF "$work/vmlinux" "$dir/$v.btf"
  ko=$(ls "$work"/lib/modules/*/kernel/drivers/net/veth.ko*)
  case "$ko" in *.xz) xz -dc "$ko" > "$work/veth.ko" ;; *) cp "$ko" "$work/veth.ko" ;; esac
  objcopy --dump-section .BTF="$dir/$v-veth.ko.btf" "$work/veth.ko"
  echo "$pkg" > "$dir/$v.package"
  rm -rf "$work"/*
  echo "$dir/$v.btf ($pkg, $(stat -c %s "$dir/$v.btf") bytes)"
done
