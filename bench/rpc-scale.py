#!/usr/bin/env python3
"""Captures that stress TCP reassembly and the flow table.
Usage: rpc-scale.py reversed OUT.pcap [SEGMENTS]   one RPC record (an NFSv3 NULL call
                                                     padded to SEGMENTS bytes) sent as
                                                     SEGMENTS 1-byte segments in reverse
                                                     order, then its reply
       rpc-scale.py flows OUT.pcap [FLOWS]          FLOWS TCP connections, each a SYN,
                                                     one NULL call, its reply
"""
import struct
import sys

def frame(src, dst, sport, dport, seq, flags, payload=b''):
    tcp = struct.pack('>HHIIBBHHH', sport, dport, seq, 0, 0x50, flags, 65535, 0, 0)
    ip = struct.pack('>BBHHHBBH4s4s', 0x45, 0, 40 + len(payload), 0, 0x4000, 64, 6, 0, src, dst)
    return b'\x02\0\0\0\0\x02\x02\0\0\0\0\x01\x08\x00' + ip + tcp + payload

def call(xid, pad=0):
    m = struct.pack('>10I', xid, 0, 2, 100003, 3, 0, 0, 0, 0, 0) + b'\0' * pad
    return struct.pack('>I', 0x80000000 | len(m)) + m

def reply(xid):
    m = struct.pack('>6I', xid, 1, 0, 0, 0, 0)
    return struct.pack('>I', 0x80000000 | len(m)) + m

def main():
    mode, out = sys.argv[1], sys.argv[2]
    f = open(out, 'wb')
    f.write(struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 262144, 1))
    t = [1_700_000_000, 0]
    def put(d):
        f.write(struct.pack('<IIII', t[0], t[1], len(d), len(d)) + d)
        t[1] += 1
        if t[1] == 1_000_000:
            t[0] += 1
            t[1] = 0
    C, S = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
    if mode == 'reversed':
        n = int(sys.argv[3]) if len(sys.argv) > 3 else 200_000
        rec = call(7, n - 44)
        put(frame(C, S, 700, 2049, 999, 0x02))
        put(frame(S, C, 2049, 700, 4999, 0x02))
        for i in range(len(rec) - 1, -1, -1):
            put(frame(C, S, 700, 2049, 1000 + i, 0x18, rec[i:i + 1]))
        put(frame(S, C, 2049, 700, 5000, 0x18, reply(7)))
    else:
        n = int(sys.argv[3]) if len(sys.argv) > 3 else 300_000
        for k in range(n):
            c = bytes([10, 1 + (k >> 16), (k >> 8) & 255, k & 255])
            sp = 1000 + k % 50000
            put(frame(c, S, sp, 2049, 99, 0x02))
            put(frame(c, S, sp, 2049, 100, 0x18, call(k)))
            put(frame(S, c, 2049, sp, 500, 0x12))
            put(frame(S, c, 2049, sp, 501, 0x18, reply(k)))
    f.close()

main()
