"""Inputs for the web packet-list tests (tests/test_web_grid.py): a capture too long for a
page of rows — the real HTTP/1 exchanges of sample_captures/http/http1-node.pcap followed by
``n`` UDP datagrams of varying length, 1 ms apart.  Built on demand, never committed."""
from __future__ import annotations

import struct
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HTTP1 = ROOT / "sample_captures" / "http" / "http1-node.pcap"


def _checksum(b: bytes) -> int:
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def udp_frame(i: int) -> bytes:
    """Ethernet / IPv4 / UDP 10.0.0.1:50000 → 10.0.0.2:50001 with ``20 + (7 i mod 400)`` payload bytes."""
    payload = bytes([i & 0xFF]) * (20 + (7 * i) % 400)
    udp = struct.pack("!HHHH", 50000, 50001, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), i & 0xFFFF, 0, 64, 17, 0, bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    ip = ip[:10] + struct.pack("!H", _checksum(ip)) + ip[12:]
    return b"\x02\x00\x00\x00\x00\x02" + b"\x02\x00\x00\x00\x00\x01" + b"\x08\x00" + ip + udp


def many_packets(out: str | Path, n: int = 20_000) -> Path:
    """``http1-node.pcap``'s packets, then ``n`` UDP datagrams (a classic little-endian
    microsecond pcap, Ethernet, as the source)."""
    data = HTTP1.read_bytes()
    assert data[:4] == b"\xd4\xc3\xb2\xa1" and struct.unpack_from("<I", data, 20)[0] == 1
    recs, pos, last = [], 24, 0.0
    while pos + 16 <= len(data):
        sec, usec, incl, orig = struct.unpack_from("<IIII", data, pos)
        recs.append(data[pos : pos + 16 + incl])
        last = sec + usec / 1e6
        pos += 16 + incl
    p = Path(out) / f"many-{n}.pcap"
    with open(p, "wb") as f:
        f.write(data[:24])
        f.writelines(recs)
        t0 = int(last * 1e6) + 1000
        for i in range(n):
            fr = udp_frame(i)
            t = t0 + 1000 * i
            f.write(struct.pack("<IIII", t // 1_000_000, t % 1_000_000, len(fr), len(fr)) + fr)
    return p
