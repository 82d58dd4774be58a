#!/usr/bin/env bash
# The whole matrix of real programs attached the way users attach:
# program x filter (--comm, -p, --all --port) x where the recorder runs (the
# server's or the client's netns) x offloads (on, off), every cell checked
# against tcpdump on both veth ends, strace and the programs' own counts.
# Prints one block per cell, one line per check (oracle against magnet), and a
# summary; exits non-zero when any cell fails. About 15 minutes.
#
#   scripts/matrix.sh                  every cell
#   scripts/matrix.sh redis            the cells whose name contains "redis"
#   scripts/matrix.sh /pid/client-ns/  ... or any part of PROGRAM/FILTER/NETNS/OFFLOADS
#
# Needs root and the `servers` and `fid-record` parts (scripts/setup.sh servers fid-record).
# MAGNET_MATRIX_KEEP=1 keeps each cell's trace, captures and strace output.
# The CI slice of it is `matrix_core` in the same test binary (scripts/test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
export MAGNET_MATRIX="${1:-}"
# The kept files live in the test's scratch directory, removed at exit otherwise.
if [ -n "${MAGNET_MATRIX_KEEP:-}" ]; then export MAGNET_KEEP_SCRATCH=1; fi
# --workspace, as scripts/test.sh builds: -p magnet-cli resolves features otherwise
# and rebuilds a third of the dependencies.
exec cargo test --workspace --test matrix_live -- --ignored --nocapture --test-threads=1 matrix_whole
