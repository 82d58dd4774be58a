#!/usr/bin/env bash
# Fetch Debian's linux-source-6.1 and unpack its include/ and net/ trees, for
# `magnet funcs --source` and magnet-funcs' Table 6-1 test.
#
#   scripts/fetch-linux-source.sh [DIR]      (default: target/linux-source-6.1)
#
# apt-get download only (139 MB, nothing installed); unpacking reads the 1.3 GB
# tar stream once (~30-60 s of CPU). DIR/.package names the version unpacked.
set -euo pipefail
dir=${1:-target/linux-source-6.1}
[ -d "$dir/net" ] && [ -s "$dir/.package" ] && { echo "$dir exists ($(cat "$dir/.package"))"; exit 0; }
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The version the test's expected numbers were taken from, else the newest.
pkg=linux-source-6.1=6.1.192-2
apt-cache show "$pkg" >/dev/null 2>&1 || pkg=linux-source-6.1
(cd "$work" && apt-get download "$pkg" >/dev/null)
deb=$(ls "$work"/*.deb)
dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/src/linux-source-6.1.tar.xz \
  | xz -dc | tar -x -C "$work" --wildcards 'linux-source-6.1/include/*' 'linux-source-6.1/net/*'
rm -rf "$dir/include" "$dir/net"
mv "$work/linux-source-6.1/include" "$work/linux-source-6.1/net" "$dir/"
dpkg-deb -f "$deb" Version > "$dir/.package"
echo "$dir ($(cat "$dir/.package"))"
