"""Shared by the bench/*.py scripts: what a benchmark needs, said in one line when
something is missing (the same rules as bench/lib.sh's bench_need: BENCH_HIDE
treats tools as missing, BENCH_CHECK=1 exits 0 right after the check)."""
import os
import shutil
import sys

PKG = {"ip": "iproute2", "ss": "iproute2", "tc": "iproute2", "nstat": "iproute2", "perf": "linux-perf"}


def need(name, *tools):
    hidden = os.environ.get("BENCH_HIDE", "").split()
    missing = [t for t in tools if t in hidden or shutil.which(t) is None]
    if missing:
        pkgs = " ".join(PKG.get(t, t) for t in missing)
        print(f"{name}: missing {' '.join(missing)}: run scripts/setup.sh bench (installs {pkgs})",
              file=sys.stderr)
        sys.exit(2)
    if os.environ.get("BENCH_CHECK") == "1":
        print(f"{name}: has {' '.join(tools)}")
        sys.exit(0)
