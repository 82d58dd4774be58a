#!/usr/bin/env python3
"""TCP relay chain pieces for analyze_live.rs (MAGNeT's Table III experiment).

  relay.py sink PORT                  accept one connection, read until EOF
  relay.py relay PORT NEXT_ADDR       accept one connection, connect to NEXT_ADDR:PORT,
                                      re-send every read as it is, until EOF
  relay.py source ADDR PORT N SIZE INTERVAL_MS
                                      send N blocks of SIZE bytes every INTERVAL_MS

Each piece prints one JSON line (what it did) on stdout when done. The caller
waits until a listener's port is open (ss) before starting what connects to it.
"""
import json
import socket
import sys
import time


def listen(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port))
    s.listen(1)
    conn, _ = s.accept()
    s.close()
    return conn


def main():
    mode = sys.argv[1]
    if mode == "sink":
        conn = listen(int(sys.argv[2]))
        total = calls = 0
        while True:
            b = conn.recv(65536)
            if not b:
                break
            total += len(b)
            calls += 1
        print(json.dumps({"mode": "sink", "bytes": total, "recv_calls": calls}), flush=True)
    elif mode == "relay":
        port, nxt = int(sys.argv[2]), sys.argv[3]
        up = listen(port)
        down = socket.create_connection((nxt, port))
        total = calls = 0
        while True:
            b = up.recv(65536)
            if not b:
                break
            down.sendall(b)
            total += len(b)
            calls += 1
        down.shutdown(socket.SHUT_WR)
        down.recv(1)
        print(json.dumps({"mode": "relay", "bytes": total, "calls": calls}), flush=True)
    elif mode == "source":
        addr, port, n, size, interval = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
        s = socket.create_connection((addr, port))
        buf = b"m" * size
        start = time.monotonic()
        for i in range(n):
            due = start + i * interval / 1000.0
            now = time.monotonic()
            if due > now:
                time.sleep(due - now)
            s.sendall(buf)
        s.shutdown(socket.SHUT_WR)
        s.recv(1)
        print(json.dumps({"mode": "source", "bytes": n * size, "calls": n}), flush=True)
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
