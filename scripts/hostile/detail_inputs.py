"""Hostile inputs for the packet detail (the tree, bytes pane and Info a selected packet shows),
built on demand (never committed as blobs): each is the minimised form of a crash the ``detail``
fuzz target found (``fuzz/run.py --target detail``; ``tests/test_fuzz_detail37.py`` keeps each
as a regression test).

Every generator returns ``(capture bytes, key log text or None)``; the packets are made with
``struct`` (not dpkt, which would mend the damaged fields), Ethernet/IPv4/TCP, client
10.0.0.1:40000, server 10.0.0.2 (port per input), a three-way handshake first.

- ``tcp_offset_past_segment()``: packet 4, a 54-byte ACK whose TCP data offset says 60 bytes
  (nibble 15) while the segment has 20 — the TCP node covered bytes 34–94 of a 54-byte packet.
- ``client_hello_suites_past_message()``: packet 4, a TLS ClientHello (port 443) whose cipher
  suites length says 65,534 bytes where the message holds 4 — the tree listed 32,767 suites, the
  32,765 that are not there as ``TLS_NULL_WITH_NULL_NULL (0x0000)`` with byte ranges past the
  packet's end.
- ``client_hello_session_id_past_message()``: packet 4, a ClientHello whose session ID length
  (255) runs past the message: its Cipher Suites Length, Cipher Suites and Compression Methods
  lines started past the message, and past the packet.
- ``server_hello_session_id_past_message()``: packet 5, the same in a ServerHello (session ID
  length 200): its Cipher Suite line (the message ends before its Compression Method).

- ``ipv6_extension_past_packet()``: packet 1, IPv6 with a Hop-by-Hop Options header of length
  byte 251 (2016 bytes) in a datagram of 48 payload bytes: the IPv6 node and the extension
  header's covered bytes 14–2070 of a 102-byte packet, and the TCP node after them ("Transmission
  Control Protocol [malformed: NeedData]") had the range [2070, 102).

``python scripts/hostile/detail_inputs.py OUTDIR`` writes each as ``NAME.pcap`` (and
``NAME.keys`` when it has a key log).
"""
from __future__ import annotations

import struct
import sys
from collections.abc import Callable
from pathlib import Path

from dpkt import in_cksum  # (the Internet checksum, RFC 1071)

CLIENT, SERVER = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
CPORT = 40000
SYN, ACK, PSH, FIN = 0x02, 0x10, 0x08, 0x01


def _ip(src: bytes, dst: bytes, proto: int, payload: bytes) -> bytes:
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 0, 0x4000, 64, proto, 0, src, dst)
    return h[:10] + struct.pack("!H", in_cksum(h)) + h[12:] + payload


def _eth(ip: bytes) -> bytes:
    return b"\x02\x00\x00\x00\x00\x02" + b"\x02\x00\x00\x00\x00\x01" + b"\x08\x00" + ip


def _ip6(src: bytes, dst: bytes, nxt: int, payload: bytes, plen: int | None = None) -> bytes:
    return struct.pack("!IHBB16s16s", 6 << 28, len(payload) if plen is None else plen, nxt, 64, src, dst) + payload


def tcp_segment(src: bytes, dst: bytes, sport: int, dport: int, seq: int, ack: int, flags: int, data: bytes = b"",
                opts: bytes = b"", off: int | None = None) -> bytes:
    """An Ethernet frame of one TCP segment; ``off``: the data offset field (32-bit words) as
    written, whatever the header holds (default: the header's own length)."""
    words = (20 + len(opts)) // 4 if off is None else off
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, (words & 0xF) << 4, flags, 65535, 0, 0)
    return _eth(_ip(src, dst, 6, tcp + opts + data))


class Conn:
    """One TCP connection's packets (client 10.0.0.1:40000 → server 10.0.0.2:``port``)."""

    def __init__(self, port: int, t0: float = 1_700_000_000.0) -> None:
        self.port = port
        self.seq = [1000, 5000]
        self.t = t0
        self.packets: list[tuple[float, bytes]] = []

    def raw(self, frame: bytes) -> None:
        self.t += 0.001
        self.packets.append((self.t, frame))

    def send(self, d: int, flags: int, data: bytes = b"", **kw) -> None:
        src, dst = (CLIENT, SERVER) if d == 0 else (SERVER, CLIENT)
        sp, dp = (CPORT, self.port) if d == 0 else (self.port, CPORT)
        self.raw(tcp_segment(src, dst, sp, dp, self.seq[d], self.seq[1 - d], flags, data, **kw))
        self.seq[d] += len(data) + (1 if flags & (SYN | FIN) else 0)

    def handshake(self) -> Conn:
        self.send(0, SYN)
        self.send(1, SYN | ACK)
        self.send(0, ACK)
        return self


def pcap(packets: list[tuple[float, bytes]], linktype: int = 1) -> bytes:
    out = bytearray(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, linktype))
    for ts, b in packets:
        sec = int(ts)
        out += struct.pack("<IIII", sec, int(round((ts - sec) * 1e6)), len(b), len(b)) + b
    return bytes(out)


def tls_record(ctype: int, body: bytes, version: int = 0x0301) -> bytes:
    return struct.pack("!BHH", ctype, version, len(body)) + body


def handshake_message(mtype: int, body: bytes) -> bytes:
    return bytes([mtype]) + len(body).to_bytes(3, "big") + body


# ---------------------------------------------------------------- the inputs


def tcp_offset_past_segment() -> tuple[bytes, str | None]:
    """Packet 4: an ACK of 20 header bytes whose data offset field says 15 words (60 bytes)."""
    c = Conn(80).handshake()
    c.send(0, ACK, off=15)
    return pcap(c.packets), None


def client_hello_suites_past_message(suites_length: int = 0xFFFE) -> tuple[bytes, str | None]:
    """Packet 4: a TLS ClientHello whose cipher suites length (``suites_length``) runs past the
    message, which holds two suites, one compression method and no extensions."""
    body = b"\x03\x03" + bytes(range(32)) + b"\x00" + struct.pack("!H", suites_length) + b"\xc0\x2f\x13\x01" + b"\x01\x00"
    c = Conn(443).handshake()
    c.send(0, PSH | ACK, tls_record(22, handshake_message(1, body)))
    c.send(1, ACK)
    return pcap(c.packets), None


def client_hello_session_id_past_message() -> tuple[bytes, str | None]:
    """Packet 4: a TLS ClientHello whose session ID length (255) runs past the message (which
    ends 8 bytes after it): the lines after it (cipher suites length, suites, compression
    methods) start past the message's end."""
    body = b"\x03\x03" + bytes(range(32)) + b"\xff" + b"\x00\x02\xc0\x2f\x01\x00" + b"\x00\x00"
    c = Conn(443).handshake()
    c.send(0, PSH | ACK, tls_record(22, handshake_message(1, body)))
    c.send(1, ACK)
    return pcap(c.packets), None


def ipv6_extension_past_packet(ext_len: int = 251) -> tuple[bytes, str | None]:
    """Packet 1: an IPv6 datagram (Ethernet) whose Hop-by-Hop Options header says it is
    ``(ext_len + 1) * 8`` bytes (2016) where the packet holds 48 bytes after the fixed header."""
    src, dst = b"\x20\x01\x0d\xb8" + bytes(11) + b"\x01", b"\x20\x01\x0d\xb8" + bytes(11) + b"\x02"
    hbh = bytes([6, ext_len]) + b"\x01\x04" + bytes(4)  # next header TCP; a PadN option
    frame = b"\x02\x00\x00\x00\x00\x02" + b"\x02\x00\x00\x00\x00\x01" + b"\x86\xdd" + _ip6(src, dst, 0, hbh + bytes(40))
    return pcap([(1_700_000_000.0, frame)]), None


def server_hello_session_id_past_message() -> tuple[bytes, str | None]:
    """Packet 5: the server's answer to a good ClientHello, a ServerHello whose session ID length
    (200) runs past the message: its Cipher Suite line starts past it."""
    hello = b"\x03\x03" + bytes(range(32)) + b"\x00" + b"\x00\x02\xc0\x2f" + b"\x01\x00"
    server = b"\x03\x03" + bytes(range(32, 64)) + b"\xc8" + b"\xc0\x2f\x00"
    c = Conn(443).handshake()
    c.send(0, PSH | ACK, tls_record(22, handshake_message(1, hello)))
    c.send(1, PSH | ACK, tls_record(22, handshake_message(2, server), 0x0303))
    c.send(0, ACK)
    return pcap(c.packets), None


INPUTS: dict[str, Callable[[], tuple[bytes, str | None]]] = {
    "tcp_offset_past_segment": tcp_offset_past_segment,
    "client_hello_suites_past_message": client_hello_suites_past_message,
    "client_hello_session_id_past_message": client_hello_session_id_past_message,
    "server_hello_session_id_past_message": server_hello_session_id_past_message,
    "ipv6_extension_past_packet": ipv6_extension_past_packet,
}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[0] + "\nusage: detail_inputs.py OUTDIR", file=sys.stderr)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    for name, make in INPUTS.items():
        raw, keys = make()
        (out / f"{name}.pcap").write_bytes(raw)
        if keys:
            (out / f"{name}.keys").write_text(keys)
        print(out / f"{name}.pcap")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
