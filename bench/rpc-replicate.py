#!/usr/bin/env python3
"""Builds a large NFS capture from a real one: the capture is repeated with each copy's
client address rewritten (10.128.0.0/9 + copy number, so every copy has its own TCP
connections and pending calls) and its timestamps shifted by one second per copy.
Usage: rpc-replicate.py IN.pcap OUT.pcap TARGET_BYTES CLIENT_IP"""
import socket
import struct
import sys

src, dst, target, client = sys.argv[1], sys.argv[2], int(sys.argv[3]), socket.inet_aton(sys.argv[4])
data = open(src, "rb").read()
magic, = struct.unpack("<I", data[:4])
assert magic == 0xA1B2C3D4, "little-endian microsecond pcap expected"
linktype = struct.unpack("<I", data[20:24])[0]
assert linktype == 1, "Ethernet expected"
pkts = []
off = 24
while off + 16 <= len(data):
    s, us, incl, orig = struct.unpack("<IIII", data[off:off + 16])
    pkts.append((s, us, data[off + 16:off + 16 + incl], orig))
    off += 16 + incl
t0 = pkts[0][0]
with open(dst, "wb") as out:
    out.write(data[:24])
    written, r = 24, 0
    while written < target:
        addr = struct.pack(">I", (10 << 24 | 128 << 16) + r + 1)
        for s, us, frame, orig in pkts:
            f = bytearray(frame)
            if len(f) >= 34 and f[12:14] == b"\x08\x00":
                if f[26:30] == client:
                    f[26:30] = addr
                if f[30:34] == client:
                    f[30:34] = addr
            out.write(struct.pack("<IIII", s + r, us, len(f), orig))
            out.write(f)
            written += 16 + len(f)
        r += 1
print(f"{r} copies, {written} bytes", file=sys.stderr)
