#!/usr/bin/env python3
"""Workloads for the oracle suite (tests/oracle.rs): small TCP and UDP programs
whose byte counts are known, each printing one JSON line with what it did.

    oracle_work.py MODE ARGS...

Servers bind, print {"ready": true} and then serve exactly one client.
"""
import json
import socket
import struct
import sys
import time


def out(**kw):
    print(json.dumps(kw), flush=True)


def family(host):
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def listen(host, port):
    s = socket.socket(family(host), socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, port))
    s.listen(1)
    out(ready=True)
    c, _ = s.accept()
    s.close()
    return c


def connect(host, port):
    s = socket.socket(family(host), socket.SOCK_STREAM)
    for _ in range(100):
        try:
            s.connect((host, port))
            return s
        except ConnectionRefusedError:
            time.sleep(0.02)
    raise SystemExit("server never listened")


def read_all(c):
    n = 0
    while True:
        b = c.recv(1 << 20)
        if not b:
            return n
        n += len(b)


def read_exact(c, size):
    n = 0
    while n < size:
        b = c.recv(size - n)
        if not b:
            raise SystemExit("early EOF")
        n += len(b)
    return n


def send_all(c, count, size):
    buf = b"x" * size
    for _ in range(count):
        c.sendall(buf)


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "sink":  # HOST PORT: read to EOF, then close
        c = listen(args[0], int(args[1]))
        n = read_all(c)
        c.close()
        out(received=n)
    elif mode == "bulk":  # HOST PORT COUNT SIZE: send, half-close, wait for EOF
        c = connect(args[0], int(args[1]))
        send_all(c, int(args[2]), int(args[3]))
        c.shutdown(socket.SHUT_WR)
        read_all(c)
        c.close()
        out(sent=int(args[2]) * int(args[3]))
    elif mode == "answer":  # HOST PORT COUNT SIZE: read the request to EOF, answer, close
        c = listen(args[0], int(args[1]))
        n = read_all(c)
        send_all(c, int(args[2]), int(args[3]))
        c.close()
        out(received=n, sent=int(args[2]) * int(args[3]))
    elif mode == "halfclose":  # HOST PORT REQ: send REQ bytes, shutdown(SHUT_WR), read to EOF
        c = connect(args[0], int(args[1]))
        c.sendall(b"q" * int(args[2]))
        c.shutdown(socket.SHUT_WR)
        n = read_all(c)
        c.close()
        out(sent=int(args[2]), received=n)
    elif mode == "pong":  # HOST PORT COUNT SIZE: answer COUNT messages, then close first
        c = listen(args[0], int(args[1]))
        count, size = int(args[2]), int(args[3])
        for _ in range(count):
            read_exact(c, size)
            c.sendall(b"p" * size)
        c.close()
        out(received=count * size, sent=count * size)
    elif mode == "ping":  # HOST PORT COUNT SIZE: COUNT round trips, then wait for the peer's close
        c = connect(args[0], int(args[1]))
        count, size = int(args[2]), int(args[3])
        for _ in range(count):
            c.sendall(b"i" * size)
            read_exact(c, size)
        time.sleep(0.05)  # the peer closes first
        rest = read_all(c)
        c.close()
        out(sent=count * size, received=count * size + rest)
    elif mode == "reset":  # HOST PORT: read REQ bytes, then close with SO_LINGER 0 (RST)
        c = listen(args[0], int(args[1]))
        n = c.recv(1 << 16)
        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        c.close()
        out(received=len(n))
    elif mode == "reset-client":  # HOST PORT REQ: send, then read until the reset
        c = connect(args[0], int(args[1]))
        c.sendall(b"r" * int(args[2]))
        try:
            read_all(c)
            reset = False
        except ConnectionResetError:
            reset = True
        c.close()
        out(sent=int(args[2]), reset=reset)
    elif mode == "udp-recv":  # HOST PORT COUNT: receive COUNT datagrams (2 s idle limit)
        s = socket.socket(family(args[0]), socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
        s.bind((args[0], int(args[1])))
        s.settimeout(2.0)
        out(ready=True)
        n = b = 0
        try:
            while n < int(args[2]):
                b += len(s.recv(1 << 16))
                n += 1
        except socket.timeout:
            pass
        out(datagrams=n, received=b)
    elif mode == "udp-send":  # HOST PORT COUNT SIZE [GAP_US]
        s = socket.socket(family(args[0]), socket.SOCK_DGRAM)
        s.connect((args[0], int(args[1])))
        gap = int(args[4]) / 1e6 if len(args) > 4 else 0.0
        for _ in range(int(args[2])):
            s.send(b"u" * int(args[3]))
            if gap:
                time.sleep(gap)
        out(sent=int(args[2]) * int(args[3]))
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
