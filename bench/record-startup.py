#!/usr/bin/env python3
"""How long `magnet record` takes to start recording and to end, two builds side by side.

A user who types `magnet record -- CMD` waits for the recorder to load and attach its
programs before CMD starts, and for it to release them after CMD ends. Most of the
start is the kernel verifying the programs; most of the end is the kernel's tracepoint
grace periods. For each case (`--case LABEL=BINARY[:EXTRA ARGS]`, alternated within
each round) and each mode it prints the medians of:

    ready   seconds from exec until the recorder says it is recording (its stderr line
            "magnet: recording ..."), every program loaded and attached
    total   seconds from exec until the recorder has exited
    freed   seconds from exec until its links are released too: a recorder that
            leaves the release to a process of its own (`magnet-detach`) exits
            first; the next run starts only after that, so that no run waits for
            the kernel's mutex behind the previous one's release

Modes:
    cmd     `record -o F -- true`: the app layer's task-filtered hooks (the programs a
            recording of one command loads)
    all     `record --all -o F`, stopped with SIGINT once ready

Usage (root): bench/record-startup.py --case before=/tmp/magnet-old --case after=target/debug/magnet
              [--rounds 7] [--modes cmd,all]
"""
import argparse, os, signal, statistics, subprocess, sys, tempfile, time


def detaching():
    """Whether a `magnet-detach` process (a recorder's links being released) runs."""
    for pid in os.listdir('/proc'):
        if pid.isdigit():
            try:
                with open(f'/proc/{pid}/comm') as f:
                    if f.read().strip() == 'magnet-detach':
                        return True
            except OSError:
                pass
    return False

READY = b'magnet: recording '


def run_once(binary, extra, mode, out):
    args = [binary, 'record', '-o', out]
    args += extra
    if mode == 'cmd':
        args += ['--', 'true']
    else:
        args += ['--all']
    t0 = time.monotonic()
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    ready = None
    seen = b''
    for line in p.stderr:
        seen += line
        if ready is None and line.startswith(READY):
            ready = time.monotonic() - t0
            if mode == 'all':
                p.send_signal(signal.SIGINT)
    rc = p.wait()
    total = time.monotonic() - t0
    while detaching():
        time.sleep(0.01)
    freed = time.monotonic() - t0
    if rc != 0 or ready is None:
        sys.exit(f"record-startup: {' '.join(args)} exited {rc} "
                 f"{'before saying it was recording' if ready is None else ''}:\n"
                 f"{seen.decode(errors='replace')}")
    return ready, total, freed


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--case', action='append', required=True,
                    help='LABEL=BINARY[:EXTRA ARGS] (repeatable)')
    ap.add_argument('--rounds', type=int, default=7)
    ap.add_argument('--modes', default='cmd,all')
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit('record-startup: needs root (magnet record loads BPF programs)')
    cases = []
    for c in a.case:
        label, _, rest = c.partition('=')
        binary, _, extra = rest.partition(':')
        if not (label and os.access(binary, os.X_OK)):
            sys.exit(f'record-startup: --case {c}: want LABEL=BINARY[:ARGS] with an executable BINARY')
        cases.append((label, binary, extra.split()))
    modes = [m for m in a.modes.split(',') if m]
    for m in modes:
        if m not in ('cmd', 'all'):
            sys.exit(f'record-startup: unknown mode {m!r} (cmd, all)')
    got = {(l, m): [] for l, _, _ in cases for m in modes}
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, 't.mgt')
        for r in range(a.rounds):
            # Alternated within the round, the order turned each round.
            order = cases if r % 2 == 0 else cases[::-1]
            for m in modes:
                for label, binary, extra in order:
                    got[(label, m)].append(run_once(binary, extra, m, out))
            print(f'round {r + 1}/{a.rounds} done', file=sys.stderr)
    print(f'{"mode":5} {"case":12} {"ready s":>8} {"total s":>8} {"freed s":>8}   (medians of {a.rounds}; rounds: total)')
    for m in modes:
        for label, _, _ in cases:
            xs = got[(label, m)]
            rd = statistics.median(x[0] for x in xs)
            tt = statistics.median(x[1] for x in xs)
            fr = statistics.median(x[2] for x in xs)
            each = ' '.join(f'{x[1]:.2f}' for x in xs)
            print(f'{m:5} {label:12} {rd:8.3f} {tt:8.3f} {fr:8.3f}   {each}')


if __name__ == '__main__':
    main()
