#!/usr/bin/env bash
# Sets everything up and runs every test: formatting, lints, unit tests and the
# live tests (root, real BPF programs, traffic between network namespaces).
# Run as root for the live tests; as another user they are skipped with a reason,
# unless MAGNET_REQUIRE_LIVE=1 (CI), which turns a skip into a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --all || echo "test: set-up left parts out (above); the tests that need them will say so" >&2
if [ "$(id -u)" -ne 0 ] && [ "${MAGNET_REQUIRE_LIVE:-0}" = 1 ]; then
    echo "test: MAGNET_REQUIRE_LIVE=1 needs root (the live tests load BPF programs)" >&2
    exit 1
fi
# A one-shot build: no incremental state (3 GB of a 6.8 GB debug target) and
# line tables only (backtraces keep file:line; full debuginfo doubled deps/).
# 2.4 GB in all, and a CI machine's disk once ran out at 6.8. Set either
# variable yourself to keep what you use when debugging.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
export CARGO_PROFILE_DEV_DEBUG="${CARGO_PROFILE_DEV_DEBUG:-line-tables-only}"
free_kib=$(df -Pk "$(dirname "${CARGO_TARGET_DIR:-./target}")" 2>/dev/null | awk 'NR==2 {print $4}')
if [ -n "$free_kib" ] && [ "$free_kib" -lt $((4 * 1024 * 1024)) ]; then
    echo "test: only $((free_kib / 1024)) MiB free where the build goes; the build and the kernel lab need about 4 GiB" >&2
fi
echo "test: cargo fmt --check" >&2
cargo fmt --all -- --check
echo "test: cargo clippy" >&2
cargo clippy --workspace --all-targets --quiet -- -D warnings
echo "test: cargo test" >&2
# One test at a time within each test binary: the live tests drive real traffic
# and compare exact counts with tcpdump and timing buckets, and two of them
# sharing 2 CPUs was seen to miscount (the sampler's 100 us buckets, the
# oracle's receiver-side captures). Unit tests are fast either way.
cargo test --workspace --no-fail-fast -- --test-threads=1
# The deny matrix expects what the running kernel plans; run it once more on
# top of a kernel that refuses something (the iterator, as some builds of
# the same kernel version do), so it cannot pass on one kind of host only.
echo "test: the deny matrix on top of a kernel that refuses iter/bpf_sk_storage_map" >&2
# The same targets as above, filtered by test name: `-p magnet-cli` alone
# resolved features differently and rebuilt a third of the dependencies, and
# `--workspace --test daemon_live` still rebuilt the recorder, sampler, daemon
# and CLI (75 s of CI); every binary of the run above starts and runs none
# but this one.
MAGNET_DENY_MATRIX_BASE=iter cargo test --workspace --no-fail-fast -- \
    --exact deny_matrix_each_single_denial --test-threads=1
echo "test: kernel matrix (this host, and Debian 5.10, 6.1 and 6.12 in QEMU two at a time: scripts/lab/matrix)" >&2
scripts/lab/matrix
