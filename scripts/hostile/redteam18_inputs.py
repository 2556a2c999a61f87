"""Red-team inputs for issue 18 findings 1-6, built independently of the other builders.

Every capture is written here from raw bytes (``struct``: Ethernet, IPv4, TCP/UDP, pcap) and
holds two normal HTTP/1.1 exchanges (``GET /rt18-normal-first`` before the attack and
``GET /rt18-normal-last`` after it, on their own connections) so a test can check that good
data survives.  QUIC packets are protected with aioquic's own packet protection
(``aioquic.quic.crypto``: Initial keys from the DCID as RFC 9001 §5.2 derives them, 1-RTT keys
from secrets chosen here and written to a key log), not with wirefall's code.

Builders (each writes ``path`` and returns it; ``conns`` spreads the attack over that many
connections so that per-connection budgets pass and the capture's must bite):

- ``damaged_compressed(path, fmt, how)`` — 13 normal exchanges, gzip/xz/zstd/bz2, cut or damaged.
- ``h2_hpack_amp(path, size, conns)`` — HPACK: one big entry indexed, then blocks of 1-byte
  references to it (each block just under ``hpack_header_list``).
- ``spdy_amp(path, size, conns)`` — SPDY/3 SYN_STREAMs whose shared zlib stream inflates each
  block to just under ``spdy_header_block``.
- ``spdy_overcap(path, conns)`` — one SYN_STREAM of 16 MB whose block inflates past 16 GB.
- ``quic_qpack_amp(path, size, conns, epoch)`` — QPACK blocks of references to a big entry in
  STREAM frames (``epoch`` "initial": Initial packets; "1rtt": 1-RTT with the key log written
  beside it).
- ``zstd_streams``, ``brotli_windows``, ``br_listed``, ``brotli_bombs`` — content codings.
- ``slow_head(path, n, side)`` — an HTTP/1 head sent one byte per TCP segment.
- ``udp_flows(path, n, kind)``, ``syn_flood(path, n, data)`` — per-flow state.
- ``quic_pings(path, size, epoch)`` — QUIC packets full of 1-byte PING frames.
- ``tls_tiny_records(path, n, vary)`` — one-byte TLS records.
- ``keylog_gzip(path, size)``, ``keylog_junk(path, size)`` — key logs.

``python scripts/hostile/redteam18_inputs.py OUTDIR [NAME ...]`` writes them.
"""
from __future__ import annotations

import gzip
import os
import struct
import sys
import zlib
from pathlib import Path
from typing import BinaryIO
from collections.abc import Iterable, Iterator

NORMAL_PATHS = ("/rt18-normal-first", "/rt18-normal-last")
NORMAL_BODY = b"red team 18 normal body\n"

# ---------------------------------------------------------------- raw packets and pcap


def _csum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def ip4(n: int) -> bytes:
    """A distinct 10.x.y.z address for flow number ``n``."""
    return bytes([10, (n >> 16) & 0xFF, (n >> 8) & 0xFF, n & 0xFF])


def eth_ip(src: bytes, dst: bytes, proto: int, l4: bytes) -> bytes:
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), 0, 0x4000, 64, proto, 0, src, dst)
    hdr = hdr[:10] + struct.pack("!H", _csum(hdr)) + hdr[12:]
    return b"\x02\0\0\0\0\x02\x02\0\0\0\0\x01\x08\x00" + hdr + l4


def tcp_pkt(src: bytes, sport: int, dst: bytes, dport: int, seq: int, ack: int, flags: int,
            data: bytes = b"") -> bytes:
    # TCP checksum left 0 (neither tshark by default nor wirefall checks it; saves time on floods)
    l4 = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4, flags,
                     65535, 0, 0) + data
    return eth_ip(src, dst, 6, l4)


def udp_pkt(src: bytes, sport: int, dst: bytes, dport: int, data: bytes) -> bytes:
    return eth_ip(src, dst, 17, struct.pack("!HHHH", sport, dport, 8 + len(data), 0) + data)


class Pcap:
    """A pcap written as it goes (floods are too big to hold as a list)."""

    def __init__(self, fh: BinaryIO, t0: float = 1_700_000_000.0):
        self.fh = fh
        self.t = t0
        fh.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))

    def add(self, frame: bytes, dt: float = 1e-5) -> None:
        self.t += dt
        sec = int(self.t)
        usec = int(round((self.t - sec) * 1e6))
        if usec >= 1_000_000:
            sec, usec = sec + 1, usec - 1_000_000
        self.fh.write(struct.pack("<IIII", sec, usec, len(frame), len(frame)) + frame)


FIN, SYN, RST, PSH, ACK = 1, 2, 4, 8, 16


class Tcp:
    """One TCP connection; ``send(d, data, seg)`` cuts data into ``seg``-byte segments."""

    def __init__(self, pc: Pcap, client: bytes, cport: int, server: bytes, sport: int):
        self.pc = pc
        self.ends = [(client, cport), (server, sport)]
        self.nxt = [1000, 900000]

    def _emit(self, d: int, flags: int, data: bytes = b"") -> None:
        (a, ap), (b, bp) = self.ends[d], self.ends[1 - d]
        self.pc.add(tcp_pkt(a, ap, b, bp, self.nxt[d], self.nxt[1 - d], flags, data))
        self.nxt[d] += len(data) + (1 if flags & (SYN | FIN) else 0)

    def open(self) -> Tcp:
        self._emit(0, SYN)
        self.nxt[1] -= 0
        self._emit(1, SYN | ACK)
        self._emit(0, ACK)
        return self

    def send(self, d: int, data: bytes, seg: int = 1448, ack: bool = True) -> None:
        for i in range(0, len(data), seg):
            self._emit(d, ACK | PSH, data[i:i + seg])
        if ack:
            self._emit(1 - d, ACK)

    def close(self) -> None:
        self._emit(0, FIN | ACK)
        self._emit(1, FIN | ACK)
        self._emit(0, ACK)


def normal_exchange(pc: Pcap, which: int) -> None:
    """One plain HTTP/1.1 GET and its 200 on a connection of its own (port 80)."""
    c = Tcp(pc, bytes([192, 168, 18, 1]), 41000 + which, bytes([192, 168, 18, 2]), 80).open()
    c.send(0, b"GET " + NORMAL_PATHS[which].encode() + b" HTTP/1.1\r\nHost: normal.rt18.example\r\n"
           b"User-Agent: rt18\r\nAccept: */*\r\n\r\n")
    c.send(1, b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: "
           + str(len(NORMAL_BODY)).encode() + b"\r\n\r\n" + NORMAL_BODY)
    c.close()


class Capture:
    """``with Capture(path) as pc:`` — a pcap with the two normal exchanges around the body."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def __enter__(self) -> Pcap:
        self.fh = open(self.path, "wb", buffering=1 << 20)
        self.pc = Pcap(self.fh)
        normal_exchange(self.pc, 0)
        return self.pc

    def __exit__(self, *exc) -> None:
        if exc[0] is None:
            normal_exchange(self.pc, 1)
        self.fh.close()


def interleave(gens: list[Iterator[None]]) -> None:
    """Run connection generators round robin (each ``yield`` is one step)."""
    live = list(gens)
    while live:
        for g in list(live):
            try:
                next(g)
            except StopIteration:
                live.remove(g)


# ---------------------------------------------------------------- finding 1: compressed captures

def thirteen_exchanges(body: int = 3000) -> bytes:
    """A plain pcap of 13 HTTP/1.1 exchanges, each on its own connection, ``body``-byte
    random bodies (incompressible, so the damage lands mid-capture)."""
    import io

    bio = io.BytesIO()
    pc = Pcap(bio)
    for i in range(13):
        c = Tcp(pc, bytes([192, 168, 19, 1]), 42000 + i, bytes([192, 168, 19, 2]), 80).open()
        c.send(0, f"GET /rt18-ex{i} HTTP/1.1\r\nHost: ex.rt18.example\r\n\r\n".encode())
        c.send(1, b"HTTP/1.1 200 OK\r\nContent-Length: " + str(body).encode() + b"\r\n\r\n" + os.urandom(body))
        c.close()
    return bio.getvalue()


def compress(data: bytes, fmt: str) -> bytes:
    if fmt == "gz":
        return gzip.compress(data)
    if fmt == "xz":
        import lzma

        return lzma.compress(data)
    if fmt == "bz2":
        import bz2

        return bz2.compress(data)
    if fmt == "zst":
        import zstandard

        return zstandard.ZstdCompressor().compress(data)
    raise ValueError(fmt)


def damaged_compressed(path: str | Path, fmt: str, how: str, body: int = 3000) -> Path:
    """``how``: "cut" (cut at 55 %), "flip" (16 bytes inverted at 55 %), "head" (cut at 6
    bytes: inside the compression header), "trailer" (the checksum/trailer damaged),
    "garbage" (junk appended after the stream), "zeros" (the last 40 % zeroed)."""
    z = bytearray(compress(thirteen_exchanges(body), fmt))
    at = len(z) * 55 // 100
    if how == "cut":
        z = z[:at]
    elif how == "flip":
        for i in range(at, at + 16):
            z[i] ^= 0xFF
    elif how == "head":
        z = z[:6]
    elif how == "trailer":
        for i in range(len(z) - 6, len(z) - 2):
            z[i] ^= 0x5A
    elif how == "garbage":
        z += os.urandom(5000)
    elif how == "zeros":
        z[at:] = bytes(len(z) - at)
    else:
        raise ValueError(how)
    p = Path(path)
    p.write_bytes(bytes(z))
    return p


# ---------------------------------------------------------------- finding 2: header amplification

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def h2frame(t: int, flags: int, sid: int, payload: bytes) -> bytes:
    return struct.pack("!I", len(payload))[1:] + bytes([t, flags]) + struct.pack("!I", sid) + payload


def hint(v: int, n: int, flags: int = 0) -> bytes:
    """HPACK/QPACK prefixed integer (RFC 7541 §5.1)."""
    m = (1 << n) - 1
    if v < m:
        return bytes([flags | v])
    out = [flags | m]
    v -= m
    while v >= 128:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def hstr(s: bytes) -> bytes:
    return hint(len(s), 7) + s


def h2_headers_block(sid: int, block: bytes, end_stream: bool = True) -> bytes:
    """HEADERS (+ CONTINUATION) frames of at most 16384 bytes each."""
    parts = [block[i:i + 16384] for i in range(0, len(block), 16384)] or [b""]
    out = []
    for k, part in enumerate(parts):
        last = k == len(parts) - 1
        if k == 0:
            out.append(h2frame(1, (0x4 if last else 0) | (0x1 if end_stream else 0), sid, part))
        else:
            out.append(h2frame(9, 0x4 if last else 0, sid, part))
    return b"".join(out)


def h2_amp_connection(tcp: Tcp, size: int, entry: int = 16000, refs: int = 62) -> Iterator[None]:
    """HPACK: the server allows a 64 KiB table; the client indexes one ``entry``-byte value
    and then sends blocks of ``refs`` 1-byte references to it (refs * (entry + 32) just under
    1 MiB = hpack_header_list), about ``size`` bytes of them; the server answers each with a
    block referring to its own big entry."""
    settings_big_table = h2frame(4, 0, 0, struct.pack("!HI", 1, 65536))
    tcp.send(0, PREFACE + h2frame(4, 0, 0, b""))
    tcp.send(1, settings_big_table + h2frame(4, 1, 0, b""))
    tcp.send(0, h2frame(4, 1, 0, b""))
    # client dynamic table: size update to 65536, then the big entry (literal, incremental indexing)
    first = (hint(65536, 5, 0x20) + bytes([0x82, 0x86, 0x84]) + hint(1, 6, 0x40) + hstr(b"big.rt18")
             + hint(27, 6, 0x40) + hstr(b"x" * entry))  # 27: static 'content-length'? (name only)
    tcp.send(0, h2_headers_block(1, first))
    tcp.send(1, h2_headers_block(1, bytes([0x88]) + hint(54, 6, 0x40) + hstr(b"s" * 3000)))
    yield
    ref = bytes([0x80 | 62])  # dynamic entry 1 (the latest insertion: our big entry)
    block = bytes([0x82, 0x86, 0x84, 0x80 | 63]) + ref * refs
    per = len(block) + 9
    sid = 3
    sent = 0
    burst = []
    while sent < size:
        burst.append(h2frame(1, 0x5, sid, block))
        sid += 2
        sent += per
        if len(burst) == 40:
            tcp.send(0, b"".join(burst), seg=32768)
            tcp.send(1, b"".join(h2frame(1, 0x5, s, bytes([0x88, 0xBE]) + bytes([0xBE]) * 300)
                                  for s in range(sid - 80, sid, 2)), seg=32768)
            burst = []
            yield
    if burst:
        tcp.send(0, b"".join(burst), seg=32768)
    tcp.close()


def h2_hpack_amp(path: str | Path, size: int = 597_000, conns: int = 1) -> Path:
    with Capture(path) as pc:
        gens = [h2_amp_connection(Tcp(pc, ip4(0x100 + i), 50000 + i, bytes([10, 200, 0, 1]), 80).open(),
                                  size // conns) for i in range(conns)]
        interleave(gens)
    return Path(path)


SPDY3_DICT = (
    b"\x00\x00\x00\x07options\x00\x00\x00\x04head\x00\x00\x00\x04post\x00\x00\x00\x03put\x00\x00\x00\x06delete"
    b"\x00\x00\x00\x05trace\x00\x00\x00\x06accept\x00\x00\x00\x0eaccept-charset\x00\x00\x00\x0faccept-encoding"
    b"\x00\x00\x00\x0faccept-language\x00\x00\x00\x0daccept-ranges\x00\x00\x00\x03age\x00\x00\x00\x05allow"
    b"\x00\x00\x00\x0dauthorization\x00\x00\x00\x0dcache-control\x00\x00\x00\x0aconnection\x00\x00\x00\x0c"
    b"content-base\x00\x00\x00\x10content-encoding\x00\x00\x00\x10content-language\x00\x00\x00\x0econtent-length"
    b"\x00\x00\x00\x10content-location\x00\x00\x00\x0bcontent-md5\x00\x00\x00\x0dcontent-range\x00\x00\x00\x0c"
    b"content-type\x00\x00\x00\x04date\x00\x00\x00\x04etag\x00\x00\x00\x06expect\x00\x00\x00\x07expires\x00\x00"
    b"\x00\x04from\x00\x00\x00\x04host\x00\x00\x00\x08if-match\x00\x00\x00\x11if-modified-since\x00\x00\x00\x0d"
    b"if-none-match\x00\x00\x00\x08if-range\x00\x00\x00\x13if-unmodified-since\x00\x00\x00\x0dlast-modified"
    b"\x00\x00\x00\x08location\x00\x00\x00\x0cmax-forwards\x00\x00\x00\x06pragma\x00\x00\x00\x12proxy-"
    b"authenticate\x00\x00\x00\x13proxy-authorization\x00\x00\x00\x05range\x00\x00\x00\x07referer\x00\x00\x00"
    b"\x0bretry-after\x00\x00\x00\x06server\x00\x00\x00\x02te\x00\x00\x00\x07trailer\x00\x00\x00\x11transfer-"
    b"encoding\x00\x00\x00\x07upgrade\x00\x00\x00\x0auser-agent\x00\x00\x00\x04vary\x00\x00\x00\x03via\x00\x00"
    b"\x00\x07warning\x00\x00\x00\x10www-authenticate\x00\x00\x00\x06method\x00\x00\x00\x03get\x00\x00\x00\x06"
    b"status\x00\x00\x00\x06200 OK\x00\x00\x00\x07version\x00\x00\x00\x08HTTP/1.1\x00\x00\x00\x03url\x00\x00"
    b"\x00\x06public\x00\x00\x00\x0aset-cookie\x00\x00\x00\x0akeep-alive\x00\x00\x00\x06origin100101201202205"
    b"206300302303304305306307402405406407408409410411412413414415416417502504505203 Non-Authoritative "
    b"Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized403 Forbidden404 Not Found500 "
    b"Internal Server Error501 Not Implemented503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov "
    b"Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,"
    b"application/xml,application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age=gzip,deflate,sdch"
    b"charset=utf-8charset=iso-8859-1,utf-,*,enq=0.")


def spdy_nv(pairs: list[tuple[bytes, bytes]]) -> bytes:
    out = [struct.pack("!I", len(pairs))]
    for n, v in pairs:
        out.append(struct.pack("!I", len(n)) + n + struct.pack("!I", len(v)) + v)
    return b"".join(out)


def spdy_ctrl(t: int, flags: int, payload: bytes) -> bytes:
    return struct.pack("!HHI", 0x8003, t, (flags << 24) | len(payload)) + payload


def spdy_compressor():
    return zlib.compressobj(9, zlib.DEFLATED, 15, 9, zlib.Z_DEFAULT_STRATEGY, SPDY3_DICT)


def spdy_syn(sid: int, block: bytes) -> bytes:
    return spdy_ctrl(1, 0x01, struct.pack("!IIH", sid, 0, 0) + block)


def spdy_reply(sid: int, block: bytes) -> bytes:
    return spdy_ctrl(2, 0x01, struct.pack("!I", sid) + block)


def spdy_amp_connection(tcp: Tcp, size: int, value: int = 1_000_000) -> Iterator[None]:
    """SYN_STREAMs each inflating to ~``value`` bytes (just under spdy_header_block) from a
    few hundred bytes of the direction's zlib stream."""
    cz, sz = spdy_compressor(), spdy_compressor()
    base = [(b":method", b"GET"), (b":path", b"/amp"), (b":version", b"HTTP/1.1"), (b":host", b"spdy.rt18"),
            (b":scheme", b"http")]
    sid, sent = 1, 0
    while sent < size:
        pairs = base + [(b"x-amp", b"A" * value)]
        block = cz.compress(spdy_nv(pairs)) + cz.flush(zlib.Z_SYNC_FLUSH)
        frame = spdy_syn(sid, block)
        tcp.send(0, frame, seg=32768, ack=False)
        reply = sz.compress(spdy_nv([(b":status", b"200"), (b":version", b"HTTP/1.1")])) + sz.flush(zlib.Z_SYNC_FLUSH)
        tcp.send(1, spdy_reply(sid, reply), ack=False)
        sent += len(frame)
        sid += 2
        yield
    tcp.close()


def spdy_amp(path: str | Path, size: int = 1_200_000, conns: int = 1) -> Path:
    with Capture(path) as pc:
        interleave([spdy_amp_connection(Tcp(pc, ip4(0x200 + i), 51000 + i, bytes([10, 201, 0, 1]), 8443).open(),
                                        size // conns) for i in range(conns)])
    return Path(path)


def deflate_backrefs(nbytes: int) -> bytes:
    """``nbytes`` of raw deflate continuing a stream at a byte boundary: a fixed-Huffman block
    (BFINAL 0) of one literal then length-258 distance-1 copies, never ended (each copy is
    13 bits: ~160 bytes out per byte in)."""
    bits: list[int] = [0, 1, 0]  # BFINAL=0, BTYPE=01 (LSB first)

    def code(v: int, n: int) -> None:  # Huffman codes are packed MSB first
        bits.extend((v >> i) & 1 for i in range(n - 1, -1, -1))

    code(0x30 + 0x41, 8)  # literal 'A'
    for _ in range(24):
        code(0b11000101, 8)  # length 258 (code 285, no extra bits)
        code(0, 5)  # distance 1
    out = bytearray()
    for i in range(0, len(bits) - 7, 8):
        out.append(sum(b << k for k, b in enumerate(bits[i:i + 8])))
    # 11 bits of header+literal, then 13-bit copies: from byte 2 on the bytes repeat every 13
    period = bytes(out[2:15])
    body = bytes(out[:2]) + period * ((nbytes // 13) + 1)
    return body[:nbytes]


def spdy_overcap_connection(tcp: Tcp, length: int = (1 << 24) - 1) -> Iterator[None]:
    """One normal SYN_STREAM, then one of ``length`` bytes whose block continues the
    client's zlib stream with ``deflate_backrefs`` (inflates to ~2.6 GB per 16 MB)."""
    cz = spdy_compressor()
    pre = cz.compress(spdy_nv([(b":method", b"GET"), (b":path", b"/small"), (b":version", b"HTTP/1.1"),
                               (b":host", b"spdy.rt18"), (b":scheme", b"http")])) + cz.flush(zlib.Z_SYNC_FLUSH)
    tcp.send(0, spdy_syn(1, pre))
    sz = spdy_compressor()
    tcp.send(1, spdy_reply(1, sz.compress(spdy_nv([(b":status", b"200"), (b":version", b"HTTP/1.1")]))
                           + sz.flush(zlib.Z_SYNC_FLUSH)))
    frame = spdy_ctrl(1, 0x01, struct.pack("!IIH", 3, 0, 0) + deflate_backrefs(length - 10))
    tcp.send(0, frame, seg=65000)
    yield
    tcp.close()


def spdy_overcap(path: str | Path, conns: int = 1) -> Path:
    with Capture(path) as pc:
        interleave([spdy_overcap_connection(Tcp(pc, ip4(0x300 + i), 52000 + i, bytes([10, 202, 0, 1]), 8443).open())
                    for i in range(conns)])
    return Path(path)


# ---------------------------------------------------------------- QUIC (aioquic's packet protection)

def varint(v: int) -> bytes:
    if v < 1 << 6:
        return bytes([v])
    if v < 1 << 14:
        return struct.pack("!H", v | 0x4000)
    if v < 1 << 30:
        return struct.pack("!I", v | 0x80000000)
    return struct.pack("!Q", v | 0xC000000000000000)


def _cert() -> tuple[bytes, bytes]:
    """A throwaway self-signed EC certificate (PEM cert, PEM key) for the QUIC server."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "quic.rt18.example")])
    now = datetime.datetime(2024, 1, 1)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(18).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=9000))
            .sign(key, hashes.SHA256()))
    return (cert.public_bytes(serialization.Encoding.PEM),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))


class QuicFlow:
    """One QUIC v1 connection whose handshake is real: aioquic client and server run in
    memory (ALPN h3, secrets to a key log), their datagrams written as UDP to port 443; then
    ``client(frames)`` / ``server(frames)`` write 1-RTT packets of frames chosen here with the
    connection's own 1-RTT keys, and ``initial(frames)`` a client Initial packet (keys from
    the DCID, RFC 9001 §5.2)."""

    def __init__(self, pc: Pcap, n: int):
        import io
        import ssl
        import tempfile

        from aioquic.quic.configuration import QuicConfiguration
        from aioquic.quic.connection import QuicConnection
        from aioquic.quic.crypto import CryptoPair

        self.pc = pc
        self.caddr = (f"10.33.{(n >> 8) & 0xFF}.{n & 0xFF}", 53000 + n % 10000)
        self.saddr = ("10.203.0.1", 443)
        self.keys = io.StringIO()
        cert, key = _cert()
        with tempfile.TemporaryDirectory() as d:
            Path(d, "c.pem").write_bytes(cert)
            Path(d, "k.pem").write_bytes(key)
            scfg = QuicConfiguration(is_client=False, alpn_protocols=["h3"])
            scfg.load_cert_chain(str(Path(d, "c.pem")), str(Path(d, "k.pem")))
        ccfg = QuicConfiguration(is_client=True, alpn_protocols=["h3"], secrets_log_file=self.keys,
                                 server_name="quic.rt18.example")
        ccfg.verify_mode = ssl.CERT_NONE
        self.cl = QuicConnection(configuration=ccfg)
        self.sv = QuicConnection(configuration=scfg,
                                 original_destination_connection_id=self.cl.original_destination_connection_id)
        now = 1.0
        self.cl.connect(self.saddr, now)
        for _ in range(10):
            moved = False
            for data, _a in self.cl.datagrams_to_send(now):
                self._dgram(0, data)
                self.sv.receive_datagram(data, self.caddr, now)
                moved = True
            for data, _a in self.sv.datagrams_to_send(now):
                self._dgram(1, data)
                self.cl.receive_datagram(data, self.saddr, now)
                moved = True
            now += 0.001
            if not moved:
                break
        from aioquic.tls import Epoch

        self.ctx = [self.cl._cryptos[Epoch.ONE_RTT].send, self.sv._cryptos[Epoch.ONE_RTT].send]
        self.cid = [self.cl._peer_cid.cid, self.sv._peer_cid.cid]
        self.pn = [1000, 1000]
        self.ipair = CryptoPair()
        self.idcid = struct.pack("!Q", 0x1818_0000_0000 + n)
        self.ipair.setup_initial(self.idcid, is_client=True, version=1)
        self.ipn = 0

    def _dgram(self, d: int, data: bytes) -> None:
        a, b = (self.caddr, self.saddr) if d == 0 else (self.saddr, self.caddr)
        src = bytes(int(x) for x in a[0].split("."))
        dst = bytes(int(x) for x in b[0].split("."))
        self.pc.add(udp_pkt(src, a[1], dst, b[1], data))

    def keylog(self) -> str:
        return self.keys.getvalue()

    def _short(self, d: int, payload: bytes) -> bytes:
        pn = self.pn[d]
        self.pn[d] += 1
        if len(payload) < 20:
            payload += bytes(20 - len(payload))
        hdr = bytes([0x43]) + self.cid[d] + struct.pack("!I", pn)
        return self.ctx[d].encrypt_packet(hdr, payload, pn)

    def client(self, payload: bytes) -> None:
        self._dgram(0, self._short(0, payload))

    def server(self, payload: bytes) -> None:
        self._dgram(1, self._short(1, payload))

    def initial(self, payload: bytes) -> None:
        """A client Initial packet (a new DCID: anyone can make these)."""
        pn = self.ipn
        self.ipn += 1
        if len(payload) < 20:
            payload += bytes(20 - len(payload))
        length = len(payload) + 4 + 16
        hdr = (bytes([0xC3]) + struct.pack("!I", 1) + bytes([8]) + self.idcid + bytes([8]) + b"\x77" * 8
               + varint(0) + struct.pack("!H", length | 0x4000) + struct.pack("!I", pn))
        self._dgram(0, self.ipair.send.encrypt_packet(hdr, payload, pn))


def stream_frame(sid: int, off: int, data: bytes, fin: bool = False) -> bytes:
    return bytes([0x0E | (1 if fin else 0)]) + varint(sid) + varint(off) + varint(len(data)) + data


def quic_qpack_connection(qf: QuicFlow, size: int, epoch: str = "1rtt", entry: int = 60_000,
                          refs: int = 250) -> Iterator[None]:
    """Both control streams (the server's SETTINGS allow a 64 KiB QPACK table), the client's
    encoder stream inserting one ``entry``-byte value, then request streams whose HEADERS
    are ``refs`` 1-byte references to it, about ``size`` bytes of them, in 1-RTT packets
    (``epoch`` "1rtt") or in Initial packets ("initial")."""
    send = qf.client if epoch == "1rtt" else qf.initial
    settings = varint(0x01) + varint(1 << 16) + varint(0x07) + varint(100)
    qf.server(stream_frame(3, 0, bytes([0x00, 0x04]) + varint(len(settings)) + settings))
    send(stream_frame(2, 0, bytes([0x00, 0x04]) + varint(len(settings)) + settings))
    enc = (bytes([0x02]) + hint(65536, 5, 0x20) + hint(8, 5, 0x40) + b"big.rt18" + hint(entry, 7) + b"q" * entry)
    off = 0
    while off < len(enc):
        piece = enc[off:off + 1100]
        send(stream_frame(6, off, piece))
        off += len(piece)
    yield
    prefix = hint(2, 8) + hint(0, 7)  # Required Insert Count 1 (encoded 2), Base 1
    block = prefix + bytes([0xC0 | 17, 0xC0 | 23, 0xC0 | 1]) + bytes([0x80]) * refs
    frame = varint(1) + varint(len(block)) + block
    resp = varint(1) + varint(3) + b"\x00\x00\xd9"  # HEADERS :status 200 (static 25)
    sid, sent = 0, 0
    while sent < size:
        send(stream_frame(sid, 0, frame, fin=True))
        qf.server(stream_frame(sid, 0, resp, fin=True))
        sid += 4
        sent += len(frame) + 40
        if sid % 40 == 0:
            yield


def quic_qpack_amp(path: str | Path, size: int = 154_000, conns: int = 1, epoch: str = "1rtt") -> Path:
    with Capture(path) as pc:
        flows = [QuicFlow(pc, i) for i in range(conns)]
        interleave([quic_qpack_connection(f, size // conns, epoch) for f in flows])
    Path(str(path) + ".keys").write_text("".join(f.keylog() for f in flows))
    return Path(path)


def quic_pings(path: str | Path, size: int = 6_000_000, epoch: str = "1rtt", per_packet: int = 1200) -> Path:
    with Capture(path) as pc:
        qf = QuicFlow(pc, 7)
        send = qf.client if epoch == "1rtt" else qf.initial
        sent = 0
        while sent < size:
            send(b"\x01" * per_packet)
            sent += per_packet
    Path(str(path) + ".keys").write_text(qf.keylog())
    return Path(path)


# ---------------------------------------------------------------- finding 3/4: content codings

def http1_response(coding: bytes, body: bytes, length: int | None = None) -> bytes:
    n = len(body) if length is None else length
    return (b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Encoding: " + coding
            + b"\r\nContent-Length: " + str(n).encode() + b"\r\n\r\n" + body)


def _body_conns(pc: Pcap, bodies: list[tuple[bytes, bytes, int | None]], base: int, per_conn: int = 1,
                chunk: int = 4096) -> None:
    """Each connection carries ``per_conn`` GET + response pairs; all connections interleaved
    chunk by chunk so their bodies are live at once."""
    def gen(k: int, items):
        c = Tcp(pc, ip4(base + k), 20000 + (k % 40000), bytes([10, 210, 0, 1]), 80).open()
        for j, (coding, body, length) in enumerate(items):
            c.send(0, f"GET /rt18-body-{k}-{j} HTTP/1.1\r\nHost: body.rt18\r\n\r\n".encode())
            yield
            data = http1_response(coding, body, length)
            for i in range(0, len(data), chunk):
                c.send(1, data[i:i + chunk])
                yield
        c.close()

    groups = [bodies[i:i + per_conn] for i in range(0, len(bodies), per_conn)]
    interleave([gen(k, g) for k, g in enumerate(groups)])


def zstd_window_frame(window_log: int = 27, fill: int = 64 << 20) -> bytes:
    """A zstd frame declaring a 2^window_log window whose content (random then a far
    repeat) needs the whole window, without a content size: decoders must allocate it."""
    import zstandard

    params = zstandard.ZstdCompressionParameters(window_log=window_log, enable_ldm=True, write_content_size=False)
    cctx = zstandard.ZstdCompressor(compression_params=params)
    seed = os.urandom(1 << 16)
    data = seed * (fill // len(seed))
    return cctx.compress(data)


def zstd_streams(path: str | Path, n: int = 40, window_log: int = 27, cut: int = 2500) -> Path:
    """``n`` concurrent responses, zstd with a big window, each body cut after ``cut`` bytes
    (the response says it is longer: the decoders stay live to the end)."""
    frame = zstd_window_frame(window_log)
    with Capture(path) as pc:
        _body_conns(pc, [(b"zstd", frame[:cut], len(frame)) for _ in range(n)], 0x1000)
    return Path(path)


def brotli_window_stream(lgwin: int = 24, size: int = 40 << 20) -> bytes:
    import brotli

    seed = os.urandom(1 << 16)
    return brotli.compress(seed * (size // len(seed)), lgwin=lgwin, quality=1)


def brotli_windows(path: str | Path, n: int = 100, cut: int = 420) -> Path:
    s = brotli_window_stream()
    with Capture(path) as pc:
        _body_conns(pc, [(b"br", s[:cut] if cut else s, len(s)) for _ in range(n)], 0x2000)
    return Path(path)


def br_listed(path: str | Path, k: int = 250_000) -> Path:
    import brotli

    body = b"hello"
    for _ in range(4):
        body = brotli.compress(body)
    coding = b", ".join([b"br"] * k)
    with Capture(path) as pc:
        _body_conns(pc, [(coding, body, None), (b"br, br, br, br", body, None)], 0x3000, per_conn=2)
    return Path(path)


def brotli_bomb(size: int = 64 << 20) -> bytes:
    import brotli

    return brotli.compress(b"\0" * size, quality=11, lgwin=24)


def brotli_bombs(path: str | Path, n: int = 1000, per_conn: int = 100) -> Path:
    b = brotli_bomb((64 << 20) + 4096)
    with Capture(path) as pc:
        _body_conns(pc, [(b"br", b, None) for _ in range(n)], 0x4000, per_conn=per_conn, chunk=65536)
    return Path(path)


# ---------------------------------------------------------------- finding 4: slow head

def slow_head(path: str | Path, n: int = 400_000, side: str = "request") -> Path:
    """A head of ``n`` bytes sent one byte per segment (request head, response head, or a
    chunked body's chunk-size line and trailer)."""
    with Capture(path) as pc:
        c = Tcp(pc, bytes([10, 220, 0, 1]), 44444, bytes([10, 220, 0, 2]), 80).open()
        filler = b"X-Pad: " + b"p" * (n - 60) + b"\r\n"
        if side == "request":
            head = b"GET /rt18-slow HTTP/1.1\r\nHost: slow.rt18\r\n" + filler + b"\r\n"
            c.send(0, head, seg=1, ack=False)
            c.send(1, b"HTTP/1.1 204 No Content\r\n\r\n")
        elif side == "response":
            c.send(0, b"GET /rt18-slow HTTP/1.1\r\nHost: slow.rt18\r\n\r\n")
            c.send(1, b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n" + filler + b"\r\n", seg=1, ack=False)
        elif side == "chunked":
            c.send(0, b"GET /rt18-slow HTTP/1.1\r\nHost: slow.rt18\r\n\r\n")
            c.send(1, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            c.send(1, b"5;" + b"e" * (n // 2) + b"\r\nhello\r\n0\r\n" + b"T: " + b"t" * (n // 2) + b"\r\n\r\n",
                   seg=1, ack=False)
        c.close()
    return Path(path)


# ---------------------------------------------------------------- finding 5: per flow / per frame

def udp_flows(path: str | Path, n: int = 400_000, kind: str = "zeros") -> Path:
    """``n`` single-datagram flows to port 443 from distinct addresses: ``kind`` "zeros" (16
    zero bytes), "quic" (a QUIC v1 long-header Initial lookalike: a QUIC session per flow),
    or "dns" (to port 53: a DNS query per flow)."""
    with Capture(path) as pc:
        for i in range(n):
            src = ip4(0x100000 + i)
            if kind == "zeros":
                pc.add(udp_pkt(src, 1024 + i % 60000, bytes([10, 230, 0, 1]), 443, bytes(16)), 1e-6)
            elif kind == "quic":
                dcid = struct.pack("!Q", i)
                d = (bytes([0xC3]) + struct.pack("!I", 1) + bytes([8]) + dcid + bytes([0]) + varint(0)
                     + struct.pack("!H", 0x4000 | 40) + os.urandom(40))
                pc.add(udp_pkt(src, 1024 + i % 60000, bytes([10, 230, 0, 1]), 443, d), 1e-6)
            elif kind == "dns":
                q = struct.pack("!HHHHHH", i & 0xFFFF, 0x0100, 1, 0, 0, 0) + b"\x03rt18\x07example\x00\x00\x01\x00\x01"
                pc.add(udp_pkt(src, 1024 + i % 60000, bytes([10, 230, 0, 53]), 53, q), 1e-6)
    return Path(path)


def syn_flood(path: str | Path, n: int = 200_000, data: bool = False) -> Path:
    """``n`` SYNs from distinct addresses (``data``: each then sends one byte, so its
    connection's per-payload state is made)."""
    with Capture(path) as pc:
        for i in range(n):
            src = ip4(0x200000 + i)
            pc.add(tcp_pkt(src, 1024 + i % 60000, bytes([10, 231, 0, 1]), 80, 77, 0, SYN), 1e-6)
            if data:
                pc.add(tcp_pkt(src, 1024 + i % 60000, bytes([10, 231, 0, 1]), 80, 78, 0, ACK | PSH, b"G"), 1e-6)
    return Path(path)


def tls_tiny_records(path: str | Path, n: int = 1_000_000, vary: bool = False) -> Path:
    """A TLS ClientHello-less connection to 443 of ``n`` one-byte application-data records
    (``vary``: the content byte and record type change, so no two neighbours are identical)."""
    with Capture(path) as pc:
        c = Tcp(pc, bytes([10, 232, 0, 1]), 45555, bytes([10, 232, 0, 2]), 443).open()
        hello = _client_hello()
        c.send(0, hello)
        step = 10000
        for i in range(0, n, step):
            if vary:
                recs = b"".join(struct.pack("!BHH", 23 if j % 2 else 21, 0x0303, 1) + bytes([j & 0xFF])
                                for j in range(i, min(n, i + step)))
            else:
                recs = struct.pack("!BHHB", 23, 0x0303, 1, 0x42) * min(step, n - i)
            c.send(0, recs, seg=1448, ack=True)
        c.close()
    return Path(path)


def _client_hello() -> bytes:
    body = (struct.pack("!H", 0x0303) + bytes(32) + b"\x00" + struct.pack("!H", 2) + b"\x13\x01" + b"\x01\x00"
            + struct.pack("!H", 0))
    hs = b"\x01" + struct.pack("!I", len(body))[1:] + body
    return struct.pack("!BHH", 22, 0x0301, len(hs)) + hs


# ---------------------------------------------------------------- finding 6: key logs

def keylog_gzip(path: str | Path, size: int = 11_000_000) -> Path:
    """A gzip key log of about ``size`` bytes: valid-looking CLIENT_RANDOM lines, then zeros
    (gzip's best ratio), inflating to ~1000x."""
    p = Path(path)
    with gzip.open(p, "wb", compresslevel=9) as g:
        for i in range(1000):
            g.write(f"CLIENT_RANDOM {i:064x} {'ab' * 48}\n".encode())
        zeros = b"\n" * (1 << 20)
        while p.stat().st_size < size:
            for _ in range(256):
                g.write(zeros)
            g.flush()
    return p


def keylog_junk(path: str | Path, size: int = 40_000_000) -> Path:
    line = b"this is not a key log line, just junk %d\n"
    with open(path, "wb") as fh:
        n = 0
        i = 0
        while n < size:
            chunk = b"".join(line % j for j in range(i, i + 10000))
            fh.write(chunk)
            n += len(chunk)
            i += 10000
    return Path(path)


# ---------------------------------------------------------------- CLI

BUILDERS = {
    "h2_hpack_597k": lambda d: h2_hpack_amp(d / "h2_hpack_597k.pcap"),
    "h2_hpack_10conns": lambda d: h2_hpack_amp(d / "h2_hpack_10conns.pcap", 1_200_000, 10),
    "spdy_1m2": lambda d: spdy_amp(d / "spdy_1m2.pcap"),
    "spdy_8conns": lambda d: spdy_amp(d / "spdy_8conns.pcap", 1_600_000, 8),
    "spdy_overcap": lambda d: spdy_overcap(d / "spdy_overcap.pcap"),
    "spdy_overcap_4": lambda d: spdy_overcap(d / "spdy_overcap_4.pcap", 4),
    "qpack_154k_initial": lambda d: quic_qpack_amp(d / "qpack_154k_initial.pcap", 154_000, epoch="initial"),
    "qpack_216k_1rtt": lambda d: quic_qpack_amp(d / "qpack_216k_1rtt.pcap", 216_000, epoch="1rtt"),
    "qpack_10conns_1rtt": lambda d: quic_qpack_amp(d / "qpack_10conns_1rtt.pcap", 600_000, 10, epoch="1rtt"),
    "zstd_40": lambda d: zstd_streams(d / "zstd_40.pcap"),
    "brotli_win": lambda d: brotli_windows(d / "brotli_win.pcap"),
    "br_250k": lambda d: br_listed(d / "br_250k.pcap"),
    "brotli_bombs": lambda d: brotli_bombs(d / "brotli_bombs.pcap"),
    "brotli_bombs_1000c": lambda d: brotli_bombs(d / "brotli_bombs_1000c.pcap", per_conn=1),
    "slow_req_400k": lambda d: slow_head(d / "slow_req_400k.pcap"),
    "slow_resp_400k": lambda d: slow_head(d / "slow_resp_400k.pcap", side="response"),
    "slow_chunked_400k": lambda d: slow_head(d / "slow_chunked_400k.pcap", side="chunked"),
    "udp_400k": lambda d: udp_flows(d / "udp_400k.pcap"),
    "udp_400k_quic": lambda d: udp_flows(d / "udp_400k_quic.pcap", kind="quic"),
    "udp_400k_dns": lambda d: udp_flows(d / "udp_400k_dns.pcap", kind="dns"),
    "syn_200k": lambda d: syn_flood(d / "syn_200k.pcap"),
    "syn_data_200k": lambda d: syn_flood(d / "syn_data_200k.pcap", data=True),
    "pings_6m_1rtt": lambda d: quic_pings(d / "pings_6m_1rtt.pcap"),
    "pings_6m_initial": lambda d: quic_pings(d / "pings_6m_initial.pcap", epoch="initial"),
    "tls_1m": lambda d: tls_tiny_records(d / "tls_1m.pcap"),
    "tls_1m_vary": lambda d: tls_tiny_records(d / "tls_1m_vary.pcap", vary=True),
    "keylog_gz": lambda d: keylog_gzip(d / "keylog_gz.keys.gz"),
    "keylog_junk": lambda d: keylog_junk(d / "keylog_junk.keys"),
}


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    names: Iterable[str] = argv[1:] or BUILDERS
    for name in names:
        print(name, BUILDERS[name](out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
