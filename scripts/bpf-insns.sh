#!/usr/bin/env bash
# Per-program BPF instruction counts of magnet's objects (the recorder in its
# default, floor and MG_PROF=1..3 builds, magnetd's summaries, the sampler),
# compiled as crates/magnet-bpf-build compiles them. With a git revision, the
# same for that revision and a comparison: the programs whose instructions
# differ (their disassembly, with relocations by symbol name, local branch
# labels and the local BTF type ids that libbpf replaces at load left out).
# The 6.1 verifier is at its limit on dev_rx: a refactoring of the BPF C must
# show no difference here, or explain each.
#
#   scripts/bpf-insns.sh            counts for the working tree
#   scripts/bpf-insns.sh REV        counts for both, and what differs
#
# Needs clang and llvm (scripts/setup.sh) and a built libbpf-sys (any cargo
# build of the workspace) for the libbpf headers.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
inc="$(ls -d "$target"/*/build/libbpf-sys-*/out/include 2>/dev/null | head -1)"
[ -n "$inc" ] || { echo "bpf-insns: no libbpf headers under $target (build the workspace first)" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

objects() { # TREE OUT: compile every object of TREE into OUT, then dump each
    local tree=$1 out=$2
    mkdir -p "$out"
    cc() {
        local src=$1 o=$2; shift 2
        clang -I"$tree/bpf/include" -I"$(dirname "$src")" -D__TARGET_ARCH_x86 -mcpu=v3 -Wall "$@" \
            -I"$inc" -fno-stack-protector -g -O2 -target bpf -c "$src" -o "$out/$o.o"
    }
    local rec="$tree/crates/magnet-record/src/bpf/record.bpf.c"
    cc "$rec" record
    cc "$rec" record_floor -DMG_PROF=9
    for p in 1 2 3; do cc "$rec" "record_prof$p" -DMG_PROF=$p; done
    cc "$tree/crates/magnet-daemon/src/bpf/summary.bpf.c" summary
    cc "$tree/crates/magnet-sample/src/bpf/sample.bpf.c" sample
    for o in "$out"/*.o; do
        llvm-objdump -d -r --no-show-raw-insn "$o" | python3 -c '
import re, sys
sec = sym = None
lines = sys.stdin.read().split("\n")
counts, dis = {}, []
# .text subprograms by instruction index: a call to one holds the callee
# index in .text (less one), which moves when another subprogram comes or goes
text, cur = {}, None
for l in lines:
    m = re.match(r"^Disassembly of section (.*):$", l)
    if m:
        cur = m.group(1)
    m = re.match(r"^([0-9a-f]+) <(.*)>:$", l)
    if m and cur == ".text" and not m.group(2).startswith("LBB"):
        text[int(m.group(1), 16) // 8] = m.group(2)
for i, l in enumerate(lines):
    m = re.match(r"^Disassembly of section (.*):$", l)
    if m:
        sec = m.group(1); continue
    m = re.match(r"^[0-9a-f]+ <(.*)>:$", l)
    if m:
        if not m.group(1).startswith("LBB"):
            sym = m.group(1)
        continue
    if "R_BPF" in l:
        dis.append((sec, sym, l.split(None, 1)[1].strip()))
    elif re.match(r"^ +[0-9a-f]+:", l):
        counts[(sec, sym)] = counts.get((sec, sym), 0) + 1
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        l = re.sub(r"<LBB[0-9_]+>", "<L>", l)
        if re.search(r"= \d+ ll$", l) and "R_BPF" not in nxt:
            l = re.sub(r"= \d+ ll$", "= <btf type id> ll", l)
        m = re.search(r"call (-?\d+)$", l)
        if m and re.search(r"R_BPF_64_32\s+\.text$", nxt):
            l = l[: m.start(1)] + "<" + text.get(int(m.group(1)) + 1, "?") + ">"
        dis.append((sec, sym, re.sub(r"^\s*[0-9a-f]+:\s*", "", l)))
base = sys.argv[1]
with open(base + ".counts", "w") as f:
    for (s, y), n in sorted(counts.items()):
        f.write(f"{s}\t{y}\t{n}\n")
with open(base + ".dis", "w") as f:
    for s, y, l in sorted(dis, key=lambda t: (t[0], t[1])):
        f.write(f"{s}\t{y}\t{l}\n")
' "${o%.o}"
    done
}

objects "$root" "$work/now"
if [ $# -eq 0 ]; then
    for c in "$work"/now/*.counts; do
        echo "== $(basename "$c" .counts)"
        column -t -s $'\t' "$c"
    done
    exit 0
fi
rev="$1"
mkdir -p "$work/rev"
git -C "$root" archive "$rev" bpf/include crates/magnet-record/src/bpf crates/magnet-daemon/src/bpf \
    crates/magnet-sample/src/bpf | tar -x -C "$work/rev"
objects "$work/rev" "$work/old"
status=0
for c in "$work"/now/*.counts; do
    b="$(basename "$c" .counts)"
    n_old=$(awk -F'\t' '{s += $3} END {print s}' "$work/old/$b.counts")
    n_now=$(awk -F'\t' '{s += $3} END {print s}' "$c")
    if cmp -s "$work/old/$b.dis" "$work/now/$b.dis"; then
        echo "$b: the same instructions ($n_now in $(wc -l < "$c") programs and subprograms)"
        continue
    fi
    status=1
    echo "$b: differs ($n_old instructions at $rev, $n_now now); per program, $rev -> now:"
    join -t $'\t' -a1 -a2 -e - -o 0,1.2,2.2 \
        <(awk -F'\t' '{print $1" "$2"\t"$3}' "$work/old/$b.counts" | sort) \
        <(awk -F'\t' '{print $1" "$2"\t"$3}' "$c" | sort) |
        while IFS=$'\t' read -r p a z; do
            same=1
            cmp -s <(awk -F'\t' -v p="$p" '$1" "$2 == p' "$work/old/$b.dis") \
                <(awk -F'\t' -v p="$p" '$1" "$2 == p' "$work/now/$b.dis") || same=0
            [ $same = 1 ] || echo "  $p: $a -> $z"
        done
done
exit $status
