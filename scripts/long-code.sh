#!/usr/bin/env bash
# List source that a newcomer cannot hold in one sitting: files over MAX_FILE
# lines and Rust functions over MAX_FN lines under crates/*/src and bpf/include.
# Generated code lives in OUT_DIR and vendored headers (vmlinux.h) are skipped,
# so every line printed here is hand-written. Exit status 1 when anything is
# listed, so CI or a pre-commit hook can use it as a check.
#
#   scripts/long-code.sh                 # thresholds 700 and 100
#   MAX_FILE=500 MAX_FN=60 scripts/long-code.sh crates/magnet-daemon
set -euo pipefail
cd "$(dirname "$0")/.."
MAX_FILE=${MAX_FILE:-700}
MAX_FN=${MAX_FN:-100}
roots=("$@")
[ ${#roots[@]} -gt 0 ] || roots=(crates bpf/include)

exec python3 - "$MAX_FILE" "$MAX_FN" "${roots[@]}" <<'PY'
import os, re, sys

max_file, max_fn = int(sys.argv[1]), int(sys.argv[2])
roots = sys.argv[3:]
VENDORED = {"vmlinux.h"}

def sources():
    for root in roots:
        for dirpath, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if d not in ("target", ".git")]
            parts = dirpath.split(os.sep)
            if root.startswith("crates") and "src" not in parts:
                continue
            for f in files:
                if f in VENDORED or not f.endswith((".rs", ".c", ".h")):
                    continue
                yield os.path.join(dirpath, f)

def code_only(text):
    """The text with comments, strings and char literals blanked (newlines
    kept), so braces inside them do not count."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 260]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'r(#*)"', text[i:])
            end = text.find('"' + m.group(1), i + len(m.group(0)))
            end = n if end < 0 else end + 1 + len(m.group(1))
            out.append("\n" * text.count("\n", i, end))
            i = end
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append("\n" * text.count("\n", i, j))
            i = j + 1
        elif c == "'":
            # A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            m = re.match(r"'(\\(u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)|[^\\'])'", text[i:i + 12])
            if m:
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)

FN = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?(?:extern\s+\"[^\"]*\"\s+)?fn\s+(\w+)")

def long_fns(path, text):
    lines = code_only(text).split("\n")
    found, stack, depth = [], [], 0
    pending = None  # (name, start line) of a fn whose body has not opened yet
    for no, line in enumerate(lines, 1):
        m = FN.match(line)
        if m:
            pending = (m.group(1), no)
        for ch in line:
            if ch == "{":
                depth += 1
                if pending:
                    stack.append((pending[0], pending[1], depth))
                    pending = None
            elif ch == "}":
                if stack and stack[-1][2] == depth:
                    name, start, _ = stack.pop()
                    length = no - start + 1
                    if length > max_fn:
                        found.append((length, f"{path}:{start}", name))
                depth -= 1
            elif ch == ";" and pending:
                pending = None  # a declaration without a body
    return found

files, fns = [], []
for path in sorted(sources()):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    count = text.count("\n")
    if count > max_file:
        files.append((count, path))
    if path.endswith(".rs"):
        fns.extend(long_fns(path, text))

for count, path in sorted(files, reverse=True):
    print(f"file {count:5} lines  {path}")
for length, where, name in sorted(fns, reverse=True):
    print(f"fn   {length:5} lines  {where} {name}")
sys.exit(1 if files or fns else 0)
PY
