#!/usr/bin/env bash
# Builds packetdrill from the vendored sources (third_party/packetdrill) into
# ${CARGO_TARGET_DIR:-target}/packetdrill/, never into the source tree, and prints
# the binary's path. Rebuilds only when a source is newer than the binary.
# Needs gcc, make, bison, flex (scripts/setup.sh packetdrill).
set -euo pipefail
cd "$(dirname "$0")/.."
src=third_party/packetdrill/gtests/net/packetdrill
target="${CARGO_TARGET_DIR:-$PWD/target}"
out="$target/packetdrill"
bin="$out/packetdrill"
for tool in gcc make bison flex; do
    command -v "$tool" >/dev/null || { echo "packetdrill-build: $tool not found (scripts/setup.sh packetdrill installs it)" >&2; exit 2; }
done
if [ -x "$bin" ] && [ -z "$(find "$src" -newer "$bin" -print -quit)" ]; then
    echo "$bin"; exit 0
fi
mkdir -p "$out/build"
# A copy to build in: make writes its objects, parser.c and lexer.c beside the sources.
cp -a "$src/." "$out/build/"
(
    cd "$out/build"
    ln -sf Makefile.Linux Makefile
    make -j"$(nproc)" packetdrill >"$out/build.log" 2>&1
) || { echo "packetdrill-build: make failed; see $out/build.log" >&2; tail -5 "$out/build.log" >&2; exit 1; }
cp "$out/build/packetdrill" "$bin"
echo "$bin"
