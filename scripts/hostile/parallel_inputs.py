"""Captures for the parallel path's streamed mode (analyzer/parallel.py, tests/test_parallel_stream.py).

``fragmented_tcp_pcap(path)``: two plain HTTP/1.1 connections (handshake, GET, 200 response,
FIN), the second one's response carried in two IPv4 fragments.  The parent reassembles the
fragments, so a worker handed only the last fragment could not decode it: the parallel
analysis must notice and analyse the capture serially.  Both exchanges are normal HTTP/1.
"""
from __future__ import annotations

import struct
import sys

CLIENT, SERVER = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])


def _csum(b: bytes) -> int:
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def _tcp(src, dst, sport, dport, seq, ack, flags, payload=b"") -> bytes:
    hdr = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 0x50, flags, 65535, 0, 0)
    pseudo = src + dst + struct.pack("!BBH", 0, 6, len(hdr) + len(payload))
    c = _csum(pseudo + hdr + payload)
    return hdr[:16] + struct.pack("!H", c) + hdr[18:] + payload


def _ip(src, dst, body: bytes, ident: int, frag_off: int = 0, more: bool = False) -> bytes:
    flags = (0x2000 if more else 0) | (frag_off // 8)
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(body), ident, flags, 64, 6, 0, src, dst)
    return hdr[:10] + struct.pack("!H", _csum(hdr)) + hdr[12:] + body


def _eth(ip: bytes) -> bytes:
    return b"\x02\0\0\0\0\x02" + b"\x02\0\0\0\0\x01" + b"\x08\x00" + ip


def _connection(sport: int, t0: float, fragment: bool, ident0: int) -> list[tuple[float, bytes]]:
    req = b"GET /c%d HTTP/1.1\r\nHost: example.test\r\n\r\n" % sport
    body = b"x" * 600
    resp = b"HTTP/1.1 200 OK\r\nContent-Length: 600\r\nContent-Type: text/plain\r\n\r\n" + body
    c, s = 1000, 5000
    segs = [  # (from client?, flags, payload)
        (True, 0x02, b""), (False, 0x12, b""), (True, 0x10, b""), (True, 0x18, req), (False, 0x18, resp),
        (True, 0x11, b""), (False, 0x11, b""), (True, 0x10, b"")]
    out, ident, t = [], ident0, t0
    cseq, sseq = c, s
    for from_client, flags, payload in segs:
        src, dst, sp, dp = (CLIENT, SERVER, sport, 80) if from_client else (SERVER, CLIENT, 80, sport)
        seq = cseq if from_client else sseq
        ack = 0 if flags == 0x02 else (sseq if from_client else cseq)
        seg = _tcp(src, dst, sp, dp, seq, ack, flags, payload)
        ident += 1
        t += 0.001
        if fragment and payload and not from_client:  # the response in two fragments (8-byte units)
            cut = 8 * (len(seg) // 16)
            out.append((t, _eth(_ip(src, dst, seg[:cut], ident, 0, True))))
            out.append((t + 0.0001, _eth(_ip(src, dst, seg[cut:], ident, cut, False))))
        else:
            out.append((t, _eth(_ip(src, dst, seg, ident))))
        n = len(payload) + (1 if flags & 0x03 else 0)
        if from_client:
            cseq += n
        else:
            sseq += n
    return out


def fragmented_tcp_pcap(path) -> None:
    pkts = _connection(40001, 1_700_000_000.0, False, 100) + _connection(40002, 1_700_000_000.5, True, 200)
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for t, data in pkts:
            sec = int(t)
            f.write(struct.pack("<IIII", sec, int(round((t - sec) * 1e6)), len(data), len(data)) + data)


if __name__ == "__main__":
    fragmented_tcp_pcap(sys.argv[1])
