"""The oracle of magnetd's send stages: one TCP connection on loopback whose
sender asks the kernel for its TX timestamps the classic way (SO_TIMESTAMPING:
TX_SCHED, TX_SOFTWARE, TX_ACK with OPT_ID and OPT_TSONLY, read from the error
queue) and builds, per send call, the same stages as magnetd, in the same
log2-microsecond slots:

  to_qdisc         its own clock just before send() -> SCHED of the last byte
  qdisc_to_device  SCHED -> SOFTWARE (the driver)
  device_to_ack    SOFTWARE -> ACK
  send_to_ack      before send() -> ACK

Each send waits for the ACK stamp of its last byte before the next one, so
no send's last byte shares a segment with the next (the kernel would move
the stamp to the later byte). Sizes vary (100 B to 1 MB) so that behind a
slow qdisc the stages spread over many slots.

Usage: send_stages_oracle.py N. Prints one JSON line (the client socket's
cookie and the histograms), then waits for stdin to close before closing the
connection.
"""

import json
import select
import socket
import struct
import sys
import threading
import time

SO_TIMESTAMPING = 37
SO_COOKIE = 57
SOF_TX_SOFTWARE = 1 << 1
SOF_SOFTWARE = 1 << 4
SOF_OPT_ID = 1 << 7
SOF_TX_SCHED = 1 << 8
SOF_TX_ACK = 1 << 9
SOF_OPT_TSONLY = 1 << 11
SCM_TSTAMP_SND, SCM_TSTAMP_SCHED, SCM_TSTAMP_ACK = 0, 1, 2
IP_RECVERR = 11
SLOTS = 32
SIZES = [100, 1_000, 10_000, 60_000, 200_000, 1_000_000]


def slot(ns):
    """magnetd's slot: floor(log2(microseconds)), below 2 us in slot 0."""
    us = max(ns, 0) // 1000
    s = 0
    while us >= 2 and s < SLOTS - 1:
        us >>= 1
        s += 1
    return s


def drain(sock):
    while True:
        try:
            if not sock.recv(1 << 20):
                return
        except OSError:
            return


def stamps(sock, want_key, deadline):
    """The SCHED, SOFTWARE and ACK stamps (ns, CLOCK_REALTIME) of byte
    `want_key`, the first of each kind."""
    got = {}
    poller = select.poll()
    poller.register(sock, select.POLLERR)
    while SCM_TSTAMP_ACK not in got:
        left = deadline - time.monotonic()
        if left <= 0:
            raise SystemExit(f"no ACK stamp for byte {want_key}: got {sorted(got)}")
        poller.poll(int(left * 1000) + 1)
        try:
            _, anc, _, _ = sock.recvmsg(0, 1024, socket.MSG_ERRQUEUE | socket.MSG_DONTWAIT)
        except BlockingIOError:
            continue
        ts = info = key = None
        for level, typ, data in anc:
            if level == socket.SOL_SOCKET and typ == SO_TIMESTAMPING:
                sec, nsec = struct.unpack_from("qq", data, 0)
                ts = sec * 1_000_000_000 + nsec
            elif level == socket.SOL_IP and typ == IP_RECVERR:
                _errno, _origin, _type, _code, _pad, info, key = struct.unpack_from(
                    "IBBBBII", data, 0
                )
        if ts is not None and key == want_key:
            got.setdefault(info, ts)
    return got


def main():
    n = int(sys.argv[1])
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    cli = socket.create_connection(srv.getsockname())
    peer, _ = srv.accept()
    threading.Thread(target=drain, args=(peer,), daemon=True).start()
    cli.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    flags = (SOF_TX_SCHED | SOF_TX_SOFTWARE | SOF_TX_ACK | SOF_OPT_ID
             | SOF_OPT_TSONLY | SOF_SOFTWARE)
    cli.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPING, flags)
    hist = {k: [0] * SLOTS for k in ("to_qdisc", "qdisc_to_device", "device_to_ack", "send_to_ack")}
    sent = 0
    for i in range(n):
        buf = b"m" * SIZES[i % len(SIZES)]
        start = time.clock_gettime_ns(time.CLOCK_REALTIME)
        cli.sendall(buf)
        sent += len(buf)
        got = stamps(cli, sent - 1, time.monotonic() + 10)
        sched, sw, ack = got.get(SCM_TSTAMP_SCHED), got.get(SCM_TSTAMP_SND), got[SCM_TSTAMP_ACK]
        if sched is None or sw is None:
            raise SystemExit(f"send {i}: stamps {sorted(got)}, want SCHED, SND and ACK")
        hist["to_qdisc"][slot(sched - start)] += 1
        hist["qdisc_to_device"][slot(sw - sched)] += 1
        hist["device_to_ack"][slot(ack - sw)] += 1
        hist["send_to_ack"][slot(ack - start)] += 1
    cookie = struct.unpack("Q", cli.getsockopt(socket.SOL_SOCKET, SO_COOKIE, 8))[0]
    print(json.dumps({"cookie": cookie, "sends": n, "stages": hist}), flush=True)
    sys.stdin.read()
    cli.close()


if __name__ == "__main__":
    main()
