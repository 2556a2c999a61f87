"""Hostile TLS inputs, built on demand (never committed as blobs).

``record_flood(path, records=1_000_000)`` writes a pcap with two TCP connections:

- 10.0.0.1:40000 → 10.0.0.2:443, a TLS 1.2 handshake (ClientHello, ServerHello,
  ChangeCipherSpec, an encrypted Finished; no keys) after which the server sends ``records``
  TLS records of one byte each (APPLICATION_DATA), ``per_segment`` records per TCP segment;
- 10.0.0.1:40001 → 10.0.0.2:80, a normal HTTP/1.1 GET answered 200 with a 5-byte body, after
  the flood, so a test can check that good data survives it.

Run ``python scripts/hostile/tls_inputs.py OUT.pcap [RECORDS]`` to write one by hand.
"""
from __future__ import annotations

import struct
import sys

import dpkt

CLIENT, SERVER = b"\x0a\x00\x00\x01", b"\x0a\x00\x00\x02"
SUITE = 0xC02F  # TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256


def _record(ctype: int, body: bytes) -> bytes:
    return struct.pack("!BHH", ctype, 0x0303, len(body)) + body


def _handshake(mtype: int, body: bytes) -> bytes:
    return struct.pack("!B", mtype) + len(body).to_bytes(3, "big") + body


def client_hello() -> bytes:
    body = b"\x03\x03" + bytes(range(32)) + b"\x00" + b"\x00\x02" + struct.pack("!H", SUITE) + b"\x01\x00"
    return _record(22, _handshake(1, body))


def server_hello() -> bytes:
    body = b"\x03\x03" + bytes(range(32, 64)) + b"\x00" + struct.pack("!H", SUITE) + b"\x00"
    return _record(22, _handshake(2, body) + _handshake(14, b""))  # + ServerHelloDone


class _Tcp:
    """One TCP connection's packets (raw IPv4, linktype 101)."""

    def __init__(self, sport: int, dport: int):
        self.sport, self.dport = sport, dport
        self.seq = [1000, 5000]  # client, server ISN
        self.pkts: list[bytes] = []

    def _pkt(self, d: int, flags: int, data: bytes = b"") -> None:
        src, dst = (CLIENT, SERVER) if d == 0 else (SERVER, CLIENT)
        sp, dp = (self.sport, self.dport) if d == 0 else (self.dport, self.sport)
        tcp = dpkt.tcp.TCP(sport=sp, dport=dp, seq=self.seq[d], ack=self.seq[1 - d], flags=flags, win=65535, data=data)
        ip = dpkt.ip.IP(src=src, dst=dst, p=6, ttl=64, data=tcp)
        ip.len = 20 + len(bytes(tcp))
        self.pkts.append(bytes(ip))
        self.seq[d] += len(data) + (1 if flags & (dpkt.tcp.TH_SYN | dpkt.tcp.TH_FIN) else 0)

    def handshake(self) -> None:
        self._pkt(0, dpkt.tcp.TH_SYN)
        self._pkt(1, dpkt.tcp.TH_SYN | dpkt.tcp.TH_ACK)
        self._pkt(0, dpkt.tcp.TH_ACK)

    def send(self, d: int, data: bytes) -> None:
        self._pkt(d, dpkt.tcp.TH_PUSH | dpkt.tcp.TH_ACK, data)


def record_flood_packets(records: int = 1_000_000, per_segment: int = 10_000):
    tls = _Tcp(40000, 443)
    tls.handshake()
    tls.send(0, client_hello())
    tls.send(1, server_hello())
    tls.send(0, _record(20, b"\x01") + _record(22, bytes(40)))  # client CCS + encrypted Finished
    tls.send(1, _record(20, b"\x01") + _record(22, bytes(40)))
    one = _record(23, b"\xaa")
    left = records
    while left > 0:
        n = min(per_segment, left)
        tls.send(1, one * n)
        left -= n
    http = _Tcp(40001, 80)
    http.handshake()
    http.send(0, b"GET /after-the-flood HTTP/1.1\r\nHost: example.test\r\n\r\n")
    http.send(1, b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello")
    return tls.pkts + http.pkts


def record_flood(path: str, records: int = 1_000_000, per_segment: int = 10_000) -> str:
    with open(path, "wb") as fh:
        w = dpkt.pcap.Writer(fh, linktype=101)
        for i, p in enumerate(record_flood_packets(records, per_segment)):
            w.writepkt(p, ts=1_700_000_000.0 + i * 0.0001)
    return path


if __name__ == "__main__":
    record_flood(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000)
