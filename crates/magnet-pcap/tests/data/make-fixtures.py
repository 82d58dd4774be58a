#!/usr/bin/env python3
"""Writes the crafted capture fixtures of magnet-pcap's tests, each in both byte
orders (suffix -le / -be). Run from this directory; the outputs are committed.

- spb-12: a Simple Packet Block of 12 bytes (no room for its length field), once
  crashed magnet rpc/nfs (`body_end - 12` underflow).
- tsresol-2-63: if_tsresol = 2^-63 s, ten packets 1/8 s apart from 1.7e9 s (with
  if_tsoffset); once read as microseconds (`exp < 63` where `<= 63` was meant).
- tsoffset-huge: if_tsoffset = 2^62 s, once wrapped silently.
- mixed: section options, two named interfaces (ns and default µs resolution),
  enhanced packets with comments and flags, an obsolete Packet Block, a Simple Packet
  Block, a Name Resolution Block, statistics and a custom block (kept unknown).
"""
import struct

def enc(be):
    return '>' if be else '<'

def block(be, btype, body):
    body = body + b'\0' * ((4 - len(body) % 4) % 4)
    n = 12 + len(body)
    e = enc(be)
    if btype == 0x0A0D0D0A:
        return b'\x0a\x0d\x0d\x0a' + struct.pack(e + 'I', n) + body + struct.pack(e + 'I', n)
    return struct.pack(e + 'II', btype, n) + body + struct.pack(e + 'I', n)

def opt(be, code, val):
    pad = b'\0' * ((4 - len(val) % 4) % 4)
    return struct.pack(enc(be) + 'HH', code, len(val)) + val + pad

def end(be):
    return struct.pack(enc(be) + 'HH', 0, 0)

def shb(be, opts=b''):
    return block(be, 0x0A0D0D0A, struct.pack(enc(be) + 'IHHq', 0x1A2B3C4D, 1, 0, -1) + opts)

def idb(be, lt, snap, opts=b''):
    return block(be, 1, struct.pack(enc(be) + 'HHI', lt, 0, snap) + opts)

def epb(be, ifid, units, data, orig=None, opts=b''):
    orig = len(data) if orig is None else orig
    pad = b'\0' * ((4 - len(data) % 4) % 4)
    return block(be, 6, struct.pack(enc(be) + 'IIIII', ifid, units >> 32, units & 0xFFFFFFFF,
                                     len(data), orig) + data + pad + opts)

def frame(i):
    # Ethernet + IPv4 + UDP, 8 payload bytes, id = i.
    eth = bytes.fromhex('020000000002' '020000000001' '0800')
    ip = struct.pack('>BBHHHBBH4s4s', 0x45, 0, 36, i, 0, 64, 17, 0,
                     bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    udp = struct.pack('>HHHH', 40000 + i, 9, 16, 0)
    return eth + ip + udp + bytes([i]) * 8

for be in (False, True):
    sfx = '-be' if be else '-le'
    e = enc(be)
    # spb-12: header, interface, one good SPB, then the 12-byte one.
    good_spb = block(be, 3, struct.pack(e + 'I', len(frame(1))) + frame(1))
    bad_spb = struct.pack(e + 'II', 3, 12) + struct.pack(e + 'I', 12)
    open('spb-12' + sfx + '.pcapng', 'wb').write(shb(be) + idb(be, 1, 0) + good_spb + bad_spb)

    # tsresol-2-63
    opts = opt(be, 9, bytes([0x80 | 63])) + opt(be, 14, struct.pack(e + 'q', 1_700_000_000)) + end(be)
    out = shb(be) + idb(be, 1, 0, opts)
    for k in range(10):
        out += epb(be, 0, k << 60, frame(k))
    open('tsresol-2-63' + sfx + '.pcapng', 'wb').write(out)

    # tsoffset-huge
    opts = opt(be, 14, struct.pack(e + 'q', 1 << 62)) + end(be)
    open('tsoffset-huge' + sfx + '.pcapng', 'wb').write(
        shb(be) + idb(be, 1, 0, opts) + epb(be, 0, 5, frame(1)))

    # mixed
    out = shb(be, opt(be, 4, b'make-fixtures.py') + end(be))
    out += idb(be, 1, 262144, opt(be, 2, b'veth0') + opt(be, 9, bytes([9])) + end(be))
    out += idb(be, 101, 0, opt(be, 2, b'tun0') + end(be))
    out += epb(be, 0, 1_700_000_000_123_456_789, frame(1),
               opts=opt(be, 1, b'pid=1234 comm=curl') + opt(be, 2, struct.pack(e + 'I', 2)) + end(be))
    out += block(be, 4, opt(be, 1, bytes([10, 0, 0, 2]) + b'peer\0') + end(be))
    raw = frame(2)[14:]
    out += epb(be, 1, 1_700_000_001_000_000, raw, orig=len(raw) + 100)
    out += block(be, 2, struct.pack(e + 'HHIIII', 0, 0, 0, 1_000, len(frame(3)), len(frame(3))) + frame(3))
    out += block(be, 3, struct.pack(e + 'I', len(frame(4))) + frame(4))
    out += block(be, 0x40000BAD, struct.pack(e + 'I', 32473) + b'opaque custom data')
    out += block(be, 5, struct.pack(e + 'III', 0, 0, 0) + end(be))
    open('mixed' + sfx + '.pcapng', 'wb').write(out)
