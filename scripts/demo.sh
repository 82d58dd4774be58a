#!/usr/bin/env bash
# The first command to run: sets everything up, builds magnet, records a built-in
# loopback workload (`magnet demo`) and shows what each layer of the stack did.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
echo "demo: building magnet (release)..." >&2
cargo build --release --quiet -p magnet-cli
bin="${CARGO_TARGET_DIR:-target}/release/magnet"
if [ "$(id -u)" -eq 0 ]; then
    exec "$bin" demo "$@"
else
    exec sudo "$bin" demo "$@"
fi
