#!/usr/bin/env python3
"""Crafted captures for magnet-rpc's tests (outputs committed):

- rpc-tsresol-2-63-{le,be}.pcapng: ten NFSv3 NULL calls over UDP and their replies,
  if_tsresol = 2^-63 s, each reply 1/32 s after its call, calls 1/16 s apart, from
  if_tsoffset 1.7e9 s. Read as microseconds once, this gave negative times and lost
  3 of the 10 replies.
- gss-verifier-37.pcap: five NFSv3 NULL calls with RPCSEC_GSS credentials whose
  replies carry a 37-byte verifier (a krb5 MIC with DES/RC4 enctypes), padded to 40.
"""
import struct

def eth_ip_udp(src, dst, sport, dport, payload, ident):
    udp = struct.pack('>HHHH', sport, dport, 8 + len(payload), 0) + payload
    ip = struct.pack('>BBHHHBBH4s4s', 0x45, 0, 20 + len(udp), ident, 0x4000, 64, 17, 0,
                     bytes(src), bytes(dst))
    return bytes.fromhex('020000000002020000000001') + b'\x08\x00' + ip + udp

def null_call(xid, gss=False):
    if gss:
        handle = b'\x01\x02\x03\x04'
        cred = struct.pack('>IIII', 1, 0, xid & 0xffff, 1) + struct.pack('>I', len(handle)) + handle
        verf = struct.pack('>II', 6, 37) + b'\xaa' * 37 + b'\0' * 3
        return struct.pack('>IIIIIII', xid, 0, 2, 100003, 3, 0, 6) + struct.pack('>I', len(cred)) + cred + verf
    return struct.pack('>IIIIIIIIII', xid, 0, 2, 100003, 3, 0, 0, 0, 0, 0)

def null_reply(xid, gss=False):
    if gss:
        return struct.pack('>IIIII', xid, 1, 0, 6, 37) + b'\xbb' * 37 + b'\0' * 3 + struct.pack('>I', 0)
    return struct.pack('>IIIIII', xid, 1, 0, 0, 0, 0)

C, S = [10, 0, 0, 1], [10, 0, 0, 2]

def block(be, btype, body):
    e = '>' if be else '<'
    body = body + b'\0' * ((4 - len(body) % 4) % 4)
    n = 12 + len(body)
    head = b'\x0a\x0d\x0d\x0a' if btype == 0x0A0D0D0A else struct.pack(e + 'I', btype)
    return head + struct.pack(e + 'I', n) + body + struct.pack(e + 'I', n)

def opt(be, code, val):
    e = '>' if be else '<'
    return struct.pack(e + 'HH', code, len(val)) + val + b'\0' * ((4 - len(val) % 4) % 4)

for be in (False, True):
    e = '>' if be else '<'
    out = block(be, 0x0A0D0D0A, struct.pack(e + 'IHHq', 0x1A2B3C4D, 1, 0, -1))
    out += block(be, 1, struct.pack(e + 'HHI', 1, 0, 0) + opt(be, 9, bytes([0x80 | 63]))
                 + opt(be, 14, struct.pack(e + 'q', 1_700_000_000)) + struct.pack(e + 'HH', 0, 0))
    for k in range(10):
        for j, (src, dst, sp, dp, pl) in enumerate([(C, S, 800, 2049, null_call(0x1000 + k)),
                                                  (S, C, 2049, 800, null_reply(0x1000 + k))]):
            f = eth_ip_udp(src, dst, sp, dp, pl, 2 * k + j)
            units = (2 * k + j) << 58
            out += block(be, 6, struct.pack(e + 'IIIII', 0, units >> 32, units & 0xffffffff, len(f), len(f)) + f)
    open('rpc-tsresol-2-63-%s.pcapng' % ('be' if be else 'le'), 'wb').write(out)

out = struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1)
for k in range(5):
    for j, (src, dst, sp, dp, pl) in enumerate([(C, S, 800, 2049, null_call(0x2000 + k, True)),
                                              (S, C, 2049, 800, null_reply(0x2000 + k, True))]):
        f = eth_ip_udp(src, dst, sp, dp, pl, 2 * k + j)
        out += struct.pack('<IIII', 1_700_000_000 + k, 1000 * j, len(f), len(f)) + f
open('gss-verifier-37.pcap', 'wb').write(out)
