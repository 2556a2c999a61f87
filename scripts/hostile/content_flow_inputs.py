"""Hostile captures for body decoding, HTTP/1 heads and the flow table (issue 18, round 2).

Each function writes a pcap built with dpkt and returns its path.  Every capture starts with
the real HTTP/1 exchange of ``sample_captures/http/http1-nginx.pcap`` (its packets as
captured), so a test can check that good data survives next to the hostile part, which uses
other addresses (10.x.x.x) and later timestamps.

    python scripts/hostile/content_flow_inputs.py OUTDIR   # writes every input

Inputs (the finding of issue 18 each reproduces):

- ``zstd_streams``: N HTTP/1 connections, each a response whose zstd body declares a large
  window (``window_log``) and fills it with RLE blocks, never ending: N live decoders (3).
- ``brotli_streams``: the same with brotli streams of a 16 MiB window (WBITS 24), cut before
  their end (3).
- ``many_codings``: one response whose Content-Encoding lists ``br`` K times, one whose
  Content-Encoding is a long unknown token, both with a body (3).
- ``brotli_bombs``: N tiny brotli bodies that each inflate past the 64 MiB per-body cap,
  keep-alive responses on a few connections (4).
- ``slow_head``: an HTTP/1 request head of N bytes sent one byte per TCP segment (4).
- ``udp_flows``: N UDP flows to port 443, one non-QUIC datagram each (5).
- ``syn_flood``: N SYNs from distinct ports, never answered (5).
"""
from __future__ import annotations

import os
import socket
import struct
import sys
from pathlib import Path

import dpkt

ROOT = Path(__file__).resolve().parents[2]
NORMAL = ROOT / "sample_captures" / "http" / "http1-nginx.pcap"
T0 = 1_900_000_000.0  # after the normal exchange's packets

MAC_C, MAC_S = b"\x02\x00\x00\x00\x00\x01", b"\x02\x00\x00\x00\x00\x02"


def normal_packets() -> list[tuple[float, bytes]]:
    with open(NORMAL, "rb") as f:
        return [(ts, bytes(buf)) for ts, buf in dpkt.pcap.Reader(f)]


def _ip(n: int) -> bytes:
    return socket.inet_aton(f"10.{(n >> 16) & 255}.{(n >> 8) & 255}.{n & 255}")


# Headers packed with struct, checksums with dpkt.in_cksum: dpkt's objects cost ~100 µs a
# packet, too slow for the 100 k-packet inputs (the result is the same bytes).
_ETH = MAC_S + MAC_C + b"\x08\x00"


def eth_ip(src: bytes, dst: bytes, l4: bytes, proto: int) -> bytes:
    hdr = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), 0, 0x4000, 64, proto, 0, src, dst)
    hdr = hdr[:10] + struct.pack(">H", dpkt.in_cksum(hdr)) + hdr[12:]
    return _ETH + hdr + l4


def _l4_sum(src: bytes, dst: bytes, proto: int, l4: bytes) -> int:
    return dpkt.in_cksum(src + dst + struct.pack(">BBH", 0, proto, len(l4)) + l4)


def tcp_packet(src: bytes, sport: int, dst: bytes, dport: int, seq: int, ack: int, flags: int, data: bytes = b"") -> bytes:
    t = struct.pack(">HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4, flags, 65535, 0, 0) + data
    t = t[:16] + struct.pack(">H", _l4_sum(src, dst, 6, t)) + t[18:]
    return eth_ip(src, dst, t, 6)


def udp_packet(src: bytes, sport: int, dst: bytes, dport: int, data: bytes) -> bytes:
    u = struct.pack(">HHHH", sport, dport, 8 + len(data), 0) + data
    u = u[:6] + struct.pack(">H", _l4_sum(src, dst, 17, u) or 0xFFFF) + u[8:]
    return eth_ip(src, dst, u, 17)


class TcpConn:
    """One TCP connection's packets: handshake, then segments either way (ACKed by the peer)."""

    def __init__(self, n: int, cport: int = 40000, sport: int = 80):
        self.c, self.s = _ip(2 * n + 1), _ip(2 * n + 2)
        self.cport, self.sport = cport, sport
        self.seq = [1000, 5000]
        self.packets: list[bytes] = []

    def handshake(self) -> TcpConn:
        S, A = dpkt.tcp.TH_SYN, dpkt.tcp.TH_ACK
        self.packets.append(tcp_packet(self.c, self.cport, self.s, self.sport, self.seq[0], 0, S))
        self.packets.append(tcp_packet(self.s, self.sport, self.c, self.cport, self.seq[1], self.seq[0] + 1, S | A))
        self.seq = [self.seq[0] + 1, self.seq[1] + 1]
        self.packets.append(tcp_packet(self.c, self.cport, self.s, self.sport, self.seq[0], self.seq[1], A))
        return self

    def send(self, direction: int, data: bytes, segment: int = 1400) -> TcpConn:
        A, P = dpkt.tcp.TH_ACK, dpkt.tcp.TH_PUSH
        src, sp, dst, dp = (self.c, self.cport, self.s, self.sport) if direction == 0 else (self.s, self.sport, self.c, self.cport)
        for i in range(0, len(data), segment):
            part = data[i : i + segment]
            self.packets.append(tcp_packet(src, sp, dst, dp, self.seq[direction], self.seq[1 - direction], A | P, part))
            self.seq[direction] += len(part)
        return self


def write(path, packets: list[bytes], normal: bool = True) -> str:
    """The normal exchange, then ``packets`` 1 µs apart."""
    with open(path, "wb") as f:
        w = dpkt.pcap.Writer(f, snaplen=262144, linktype=dpkt.pcap.DLT_EN10MB)
        if normal:
            for ts, buf in normal_packets():
                w.writepkt(buf, ts)
        for i, buf in enumerate(packets):
            w.writepkt(buf, T0 + i * 1e-6)
    return str(path)


def _interleave(conns: list[TcpConn]) -> list[bytes]:
    out, i = [], 0
    while any(i < len(c.packets) for c in conns):
        out.extend(c.packets[i] for c in conns if i < len(c.packets))
        i += 1
    return out


REQUEST = b"GET /x HTTP/1.1\r\nHost: hostile.test\r\nAccept-Encoding: gzip, br, zstd\r\n\r\n"


def response_head(coding: str | bytes, length: int | None = None, extra: bytes = b"") -> bytes:
    cl = b"Transfer-Encoding: chunked\r\n" if length is None else b"Content-Length: %d\r\n" % length
    coding = coding.encode() if isinstance(coding, str) else coding
    return b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Encoding: " + coding + b"\r\n" + cl + extra + b"\r\n"


# -- 3: decoder state ---------------------------------------------------------------------------

def zstd_frame(window_log: int, fill: int) -> bytes:
    """A zstd frame header declaring a 2**window_log window (no content size), then RLE blocks
    of 128 KiB (4 bytes each) producing ``fill`` bytes; no last block."""
    out = struct.pack("<IB", 0xFD2FB528, 0x00) + bytes([(window_log - 10) << 3])
    block = min(128 << 10, 1 << window_log)
    for _ in range(max(1, fill // block)):
        out += (block << 3 | 1 << 1).to_bytes(3, "little") + b"A"  # Block_Type 1 (RLE), not last
    return out


def zstd_streams(path, n: int = 40, window_log: int = 27, fill: int = 64 << 20) -> str:
    body = zstd_frame(window_log, fill)
    conns = [TcpConn(i).handshake().send(0, REQUEST).send(1, response_head("zstd", 1 << 30) + body) for i in range(n)]
    return write(path, _interleave(conns))


def brotli_stream(lgwin: int = 24, size: int = 48 << 20) -> bytes:
    """A brotli stream of ``size`` zero bytes with a 2**lgwin window, cut before its end."""
    import brotli

    return brotli.compress(b"\0" * size, quality=5, lgwin=lgwin)[:-2]


def brotli_streams(path, n: int = 100, lgwin: int = 24) -> str:
    body = brotli_stream(lgwin)
    conns = [TcpConn(i).handshake().send(0, REQUEST).send(1, response_head("br", 1 << 30) + body) for i in range(n)]
    return write(path, _interleave(conns))


def many_codings(path, k: int = 250_000) -> str:
    import brotli

    body = brotli.compress(b"hello " * 100)
    long_br = ",".join(["br"] * k)
    unknown = "x" * (3 * k)
    c = TcpConn(0).handshake()
    for coding in (long_br, unknown, "br"):
        hb = response_head(coding, len(body))
        c.send(0, REQUEST).send(1, hb + body)
    return write(path, c.packets)


# -- 4: decompression work and the HTTP/1 head ------------------------------------------------

def brotli_bomb() -> bytes:
    import brotli

    return brotli.compress(b"\0" * ((64 << 20) + 4096), quality=5)


def brotli_bombs(path, n: int = 1000, per_conn: int = 100) -> str:
    body = brotli_bomb()
    conns = []
    for i in range(0, n, per_conn):
        c = TcpConn(i // per_conn).handshake()
        for _ in range(min(per_conn, n - i)):
            c.send(0, REQUEST).send(1, response_head("br", len(body)) + body)
        conns.append(c)
    return write(path, _interleave(conns))


def slow_head(path, n: int = 100_000) -> str:
    """A request head of ``n`` bytes, one byte per segment (and its answer)."""
    pad = n - len(b"GET / HTTP/1.1\r\nHost: hostile.test\r\nX-Pad: \r\n\r\n")
    head = b"GET / HTTP/1.1\r\nHost: hostile.test\r\nX-Pad: " + b"a" * pad + b"\r\n\r\n"
    c = TcpConn(0).handshake().send(0, head, segment=1)
    c.send(1, b"HTTP/1.1 204 No Content\r\n\r\n")
    return write(path, c.packets)


# -- 5: the flow table ----------------------------------------------------------------------------

def udp_flows(path, n: int = 400_000, payload: bytes = b"\0" * 16) -> str:
    dst = _ip(1)
    return write(path, [udp_packet(_ip(0x100000 + i // 50000), 1024 + i % 50000, dst, 443, payload) for i in range(n)])


def syn_flood(path, n: int = 200_000) -> str:
    dst = _ip(1)
    S = dpkt.tcp.TH_SYN
    return write(path, [tcp_packet(_ip(0x100000 + i // 50000), 1024 + i % 50000, dst, 80, i * 7919, 0, S) for i in range(n)])


ALL = {
    "zstd-streams.pcap": zstd_streams,
    "zstd-streams-8m.pcap": lambda p: zstd_streams(p, window_log=23, fill=8 << 20),
    "brotli-streams.pcap": brotli_streams,
    "many-codings.pcap": many_codings,
    "brotli-bombs.pcap": brotli_bombs,
    "slow-head.pcap": slow_head,
    "udp-flows.pcap": udp_flows,
    "syn-flood.pcap": syn_flood,
}

if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    out.mkdir(parents=True, exist_ok=True)
    for name, fn in ALL.items():
        p = fn(out / name)
        print(p, os.path.getsize(p))


def many_connections(path, n: int = 2000, per_conn: int = 10) -> str:
    """Not hostile: ``n`` keep-alive connections of ``per_conn`` gzip exchanges (8 KiB bodies,
    FIN-closed), interleaved: a normal load for timing the flow table."""
    import gzip

    body = gzip.compress(b"".join(b"line %d of a normal body\n" % i for i in range(350)))
    conns = []
    for i in range(n):
        c = TcpConn(i, cport=20000 + i % 40000).handshake()
        for _ in range(per_conn):
            c.send(0, REQUEST).send(1, response_head("gzip", len(body)) + body)
        F = dpkt.tcp.TH_FIN | dpkt.tcp.TH_ACK
        c.packets.append(tcp_packet(c.c, c.cport, c.s, c.sport, c.seq[0], c.seq[1], F))
        c.packets.append(tcp_packet(c.s, c.sport, c.c, c.cport, c.seq[1], c.seq[0] + 1, F))
        conns.append(c)
    return write(path, _interleave(conns))
