#!/usr/bin/env python3
"""What one magnetd answer costs now that it reads TCP's counters when asked.

Every query for connections first runs the TCP counters' iterator, which visits
every tracked TCP socket. This starts magnetd (MAGNET, default
target/debug/magnet; needs root), opens N loopback TCP connection pairs
(2N tracked sockets) for each N in SIZES, and times QUERIES one-connection
queries ({"op":"connection"}) on the Unix socket: the median wall time per
answer, and the time added per 1000 tracked sockets against the smallest N.

  sudo bench/daemon-query-cost.py            # SIZES="0 1000 4000" QUERIES=200
"""
import json, os, resource, socket, statistics, subprocess, sys, tempfile, time

MAGNET = os.environ.get("MAGNET", "target/debug/magnet")
SIZES = [int(x) for x in os.environ.get("SIZES", "0 1000 4000").split()]
QUERIES = int(os.environ.get("QUERIES", "200"))
SO_COOKIE = 57

def main():
    want = 2 * max(SIZES) + 64
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, want))
    tmp = tempfile.mkdtemp(prefix="magnetd-q-")
    sock = os.path.join(tmp, "m.sock")
    conf = os.path.join(tmp, "m.toml")
    open(conf, "w").write("max_connections = 65536\n")
    log = open(os.path.join(tmp, "log"), "w+")
    d = subprocess.Popen([MAGNET, "daemon", "--config", conf, "--http", "", "--socket", sock],
                         stderr=log)
    try:
        for _ in range(300):
            log.seek(0)
            if "magnetd: ready" in log.read():
                break
            if d.poll() is not None:
                sys.exit("magnetd exited: " + open(log.name).read())
            time.sleep(0.1)
        lst = socket.socket()
        lst.bind(("127.0.0.1", 0))
        lst.listen(4096)
        pairs = []
        me = None
        print(f"{'tracked TCP sockets':>20} {'median ms/answer':>17} {'p90 ms':>8}")
        base = None
        for n in SIZES:
            while len(pairs) < n:
                c = socket.create_connection(lst.getsockname())
                s, _ = lst.accept()
                c.send(b"x")
                s.recv(1)
                pairs.append((c, s))
            if me is None:
                me = socket.create_connection(lst.getsockname())
                peer, _ = lst.accept()
                me.send(b"y")
                peer.recv(1)
            cookie = int.from_bytes(me.getsockopt(socket.SOL_SOCKET, SO_COOKIE, 8), "little")
            api = socket.socket(socket.AF_UNIX)
            api.connect(sock)
            f = api.makefile("rwb")
            t = []
            for _ in range(QUERIES):
                t0 = time.perf_counter()
                f.write((json.dumps({"op": "connection", "cookie": cookie}) + "\n").encode())
                f.flush()
                r = json.loads(f.readline())
                t.append(time.perf_counter() - t0)
                assert r.get("ok") and r["connection"]["wire"]["tx_bytes"] == 1, r
            api.close()
            med = statistics.median(t) * 1e3
            p90 = sorted(t)[int(len(t) * 0.9)] * 1e3
            tracked = 2 * n + 2
            print(f"{tracked:>20} {med:>17.3f} {p90:>8.3f}")
            if base is None:
                base = (tracked, med)
            elif tracked > base[0]:
                print(f"{'':>20} added per 1000 tracked sockets: "
                      f"{(med - base[1]) / (tracked - base[0]) * 1000:.3f} ms")
    finally:
        d.terminate()
        d.wait()

main()
