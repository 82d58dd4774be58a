#!/usr/bin/env python3
"""Compares one packetdrill run's app calls with strace's (scripts/packetdrill.sh --strace).

    packetdrill_calls.py PARSE_JSONL STRACE_OUT

PARSE_JSONL is `magnet parse --json --kind app_send,app_recv` of a trace recorded
with `magnet record -- strace -f -qq -yy -o STRACE_OUT -e trace=CALLS packetdrill …`:
the same calls, seen by both. strace's side: every call of the socket I/O system
calls (read, write, readv, writev, sendto, recvfrom, sendmsg, recvmsg, sendmmsg,
recvmmsg, sendfile, splice) whose socket strace names as TCP or UDP (-yy), one
per call (an `<unfinished ...>` line and its `<... resumed>` are one call); a
call whose file descriptor is no INET socket (packetdrill's tun device, files,
netlink) is none, as in magnet (docs/FORMAT.md, app_send/app_recv).

The comparison is the multiset of (direction, return value) of the calls:
`out` for the calls that send (splice and sendfile into a socket), `in` for
those that receive (splice from a socket); a return value is the bytes done or
-errno. A call a signal interrupted is `interrupted` on both sides: magnet
records the kernel's own return (-ERESTARTSYS and its kin, -512…-516, the call
then restarts as a new one), strace prints `= ? ERESTARTSYS`, or, when the
thread was killed in the call (a failing script's threads end that way), a
bare `= ?` or `<unfinished ...>` and never its end. Prints `exact (N calls)` or the first differences in one line; exit 0
when equal, 1 when not, 2 when an input cannot be read.
"""
import collections
import errno
import json
import re
import sys

SEND = {"write", "writev", "sendto", "sendmsg", "sendmmsg", "sendfile"}
RECV = {"read", "readv", "recvfrom", "recvmsg", "recvmmsg"}
INET = re.compile(r"^\d+<(TCP|TCPv6|UDP|UDPv6|UDPLITE|UDPLITEv6):")
# `PID name(args` [`) = RET ...` | ` <unfinished ...>`]
START = re.compile(r"^(\d+) +(\w+)\((.*)$")
RESUMED = re.compile(r"^(\d+) +<\.\.\. (\w+) resumed>(.*)$")
RESULT = re.compile(r"\) += (-?\d+)(?: ([A-Z][A-Z0-9_]*))?")
# `= ? ERESTARTSYS (…)`, or a bare `= ?` when the thread was killed in the call.
INTERRUPTED_STRACE = re.compile(r"\) += \?(?: ERESTART\w*.*|\s*)$")
# The kernel's restart codes (include/linux/errno.h): never seen by a program.
RESTART = {512, 513, 514, 516}
INTERRUPTED = "interrupted"


def split_args(text):
    """The top-level comma-separated arguments at the start of TEXT (strings,
    brackets and fd annotations kept whole)."""
    args, depth, cur, quoted, i = [], 0, [], False, 0
    while i < len(text):
        c = text[i]
        if quoted:
            cur.append(c)
            if c == "\\" and i + 1 < len(text):
                cur.append(text[i + 1])
                i += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
            cur.append(c)
        elif c in "([{<":
            depth += 1
            cur.append(c)
        elif c in ")]}>":
            if depth == 0:
                break
            depth -= 1
            cur.append(c)
        elif c == "," and depth == 0:
            args.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
        i += 1
    args.append("".join(cur).strip())
    return args


def direction(name, args):
    """`out`, `in` or None (not a call on an INET socket)."""
    if name == "splice":
        # splice(fd_in, off_in, fd_out, off_out, len, flags)
        if len(args) > 2 and INET.match(args[2]):
            return "out"
        if args and INET.match(args[0]):
            return "in"
        return None
    if name == "sendfile":
        return "out" if args and INET.match(args[0]) else None
    if not args or not INET.match(args[0]):
        return None
    if name in SEND:
        return "out"
    if name in RECV:
        return "in"
    return None


def ret_value(tail):
    if INTERRUPTED_STRACE.search(tail):
        return INTERRUPTED
    m = RESULT.search(tail)
    if not m:
        return None
    ret = int(m.group(1))
    if ret == -1 and m.group(2):
        return -getattr(errno, m.group(2), 0) or ret
    return ret


def strace_calls(path):
    """Counter of (direction, ret) of the INET-socket calls in an strace -f -yy log."""
    calls = collections.Counter()
    pending = {}  # pid -> direction of its unfinished call
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = RESUMED.match(line)
            if m:
                d = pending.pop(m.group(1), None)
                if d:
                    r = ret_value(m.group(3))
                    if r is not None:
                        calls[(d, r)] += 1
                continue
            m = START.match(line)
            if not m:
                continue
            pid, name, rest = m.groups()
            d = direction(name, split_args(rest))
            if d is None:
                continue
            if rest.endswith("<unfinished ...>"):
                pending[pid] = d
                continue
            r = ret_value(rest)
            if r is not None:
                calls[(d, r)] += 1
    # Calls whose end strace never saw: their thread was killed in them.
    for d in pending.values():
        calls[(d, INTERRUPTED)] += 1
    return calls


def magnet_ret(ret):
    return INTERRUPTED if -ret in RESTART else ret


def magnet_calls(path):
    calls = collections.Counter()
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            e = json.loads(line)
            if e.get("kind") == "app_send":
                calls[("out", magnet_ret(e["ret"]))] += 1
            elif e.get("kind") == "app_recv":
                calls[("in", magnet_ret(e["ret"]))] += 1
    return calls


def describe(diff):
    items = sorted(diff.items(), key=lambda kv: (kv[0][0], str(kv[0][1])))
    return ", ".join(f"{d} ret {r} ×{n}" for (d, r), n in items[:6])


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    try:
        theirs = strace_calls(sys.argv[2])
        ours = magnet_calls(sys.argv[1])
    except (OSError, ValueError, KeyError) as e:
        print(f"packetdrill_calls.py: {e}")
        return 2
    if ours == theirs:
        print(f"exact ({sum(ours.values())} calls)")
        return 0
    only_strace = theirs - ours
    only_magnet = ours - theirs
    parts = [f"strace {sum(theirs.values())} calls, magnet {sum(ours.values())}"]
    if only_strace:
        parts.append("missing: " + describe(only_strace))
    if only_magnet:
        parts.append("extra: " + describe(only_magnet))
    print("; ".join(parts))
    return 1


if __name__ == "__main__":
    sys.exit(main())
