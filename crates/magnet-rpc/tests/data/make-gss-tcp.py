#!/usr/bin/env python3
"""gss-init-tcp.pcap (output committed): RPCSEC_GSS context creation over one TCP
connection, hand-assembled per RFC 5531 (ONC RPC, record marking) and RFC 2203
(RPCSEC_GSS). Six NFSv3 NULL calls with an RPCSEC_GSS credential (gss_proc
RPCSEC_GSS_INIT, then RPCSEC_GSS_DATA), each answered by an accepted reply whose
verifier is an RPCSEC_GSS MIC of 37, 1, 2, 3, 4 and 100 bytes (XDR pads each to a
multiple of 4), then accept_stat SUCCESS and an rpc_gss_init_res. The first is the
report's input: a 37-byte verifier (a krb5 MIC with DES/RC4 enctypes) padded to 40.
Each reply comes 2 ms after its call; calls are 10 ms apart.

Check: tshark -r gss-init-tcp.pcap -Y 'rpc.msgtyp == 1 && rpc.time' pairs all six.
"""
import struct

C, S = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
CP, SP = 911, 2049

def pad(b):
    return b + b'\0' * ((4 - len(b) % 4) % 4)

def opaque(b):
    return struct.pack('>I', len(b)) + pad(b)

def frame(src, dst, sport, dport, seq, ack, flags, payload, ident):
    tcp = struct.pack('>HHIIBBHHH', sport, dport, seq, ack, 5 << 4, flags, 65535, 0, 0) + payload
    ip = struct.pack('>BBHHHBBH4s4s', 0x45, 0, 20 + len(tcp), ident, 0x4000, 64, 6, 0, src, dst)
    return bytes.fromhex('020000000002020000000001') + b'\x08\x00' + ip + tcp

def record(msg):
    return struct.pack('>I', 0x80000000 | len(msg)) + msg

def gss_cred(proc, seq, handle):
    # rpc_gss_cred_t v1: version, gss_proc, seq_num, service (1 = none), handle
    return struct.pack('>IIII', 1, proc, seq, 1) + opaque(handle)

def call(xid, k):
    proc, handle = (1, b'') if k == 0 else (0, b'\x01\x02\x03\x04\x05')
    body = struct.pack('>IIIIII', xid, 0, 2, 100003, 3, 0)          # NFSv3 NULL
    body += struct.pack('>I', 6) + opaque(gss_cred(proc, k, handle))  # cred RPCSEC_GSS
    body += struct.pack('>I', 0) + opaque(b'')                        # verf AUTH_NONE
    if k == 0:
        body += opaque(b'\x60\x82' + b'\x11' * 30)                     # the GSS init token
    return body

def reply(xid, vlen):
    body = struct.pack('>III', xid, 1, 0)                             # REPLY, MSG_ACCEPTED
    body += struct.pack('>I', 6) + opaque(bytes(range(1, vlen + 1)))  # verf RPCSEC_GSS: the MIC
    body += struct.pack('>I', 0)                                      # SUCCESS
    # rpc_gss_init_res: handle, gss_major, gss_minor, seq_window, gss_token
    body += opaque(b'\x01\x02\x03\x04\x05') + struct.pack('>III', 0, 0, 128) + opaque(b'\x60\x22' + b'\x22' * 9)
    return body

pkts = []
t0 = 1_700_000_000_000_000
cseq, sseq = 1000, 5000
pkts.append((t0, frame(C, S, CP, SP, cseq, 0, 0x02, b'', 1)))
pkts.append((t0 + 100, frame(S, C, SP, CP, sseq, cseq + 1, 0x12, b'', 1)))
pkts.append((t0 + 200, frame(C, S, CP, SP, cseq + 1, sseq + 1, 0x10, b'', 2)))
cseq += 1; sseq += 1
for k, vlen in enumerate([37, 1, 2, 3, 4, 100]):
    t = t0 + 10_000 * (k + 1)
    c = record(call(0x3000 + k, k))
    pkts.append((t, frame(C, S, CP, SP, cseq, sseq, 0x18, c, 3 + k)))
    cseq += len(c)
    r = record(reply(0x3000 + k, vlen))
    pkts.append((t + 2000, frame(S, C, SP, CP, sseq, cseq, 0x18, r, 2 + k)))
    sseq += len(r)

out = struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1)
for t, f in pkts:
    out += struct.pack('<IIII', t // 1_000_000, t % 1_000_000, len(f), len(f)) + f
open('gss-init-tcp.pcap', 'wb').write(out)
