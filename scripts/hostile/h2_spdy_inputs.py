"""Hostile HTTP/2 and SPDY captures for issue 18 (round 2), built from real samples.

Each builder returns the bytes of a pcap: every packet of a real sample capture
(``sample_captures/http/h2c-nghttp.pcap`` or ``sample_captures/spdy/spdy3-plain.pcap``, so a
test can check that their exchanges survive field by field), then, where the attack needs its
own connection, one or more crafted TCP connections (dpkt) carrying it.  Header blocks are made
with the real encoders: ``hpack.Encoder`` for the entry that is indexed, and zlib with the
SPDY/3 dictionary for SPDY; frame headers are the few ``struct`` bytes the specs lay out.

- ``h2_hpack_bomb``: a connection indexes one ~4 KB header (the most a 4096-byte dynamic table
  holds), then thousands of streams each refer to it ~250 times (1 MB decoded per 260-byte
  block, just under the per-block cap ``hpack_header_list``); ``conns`` such connections.
- ``spdy_header_bomb``: SYN_STREAMs whose zlib blocks (one stream, as SPDY keeps it) each
  inflate to just under the per-block cap (``spdy_header_block``) from about 1 KB.
- ``spdy_huge_block``: one SYN_STREAM of the largest length SPDY allows (2^24 - 1) whose
  block is a hand-made deflate stream of length-258 back-references (13 bits each: about
  2.6 GB inflated), between normal frames of both directions.
- ``h2_frame_size_damage``: two bytes of a frame header of the real capture set so that its
  length exceeds SETTINGS_MAX_FRAME_SIZE (16384 there).

``python scripts/hostile/h2_spdy_inputs.py OUTDIR`` writes them all.
"""
from __future__ import annotations

import io
import struct
import sys
import zlib
from pathlib import Path

import dpkt

ROOT = Path(__file__).resolve().parents[2]
H2C_SAMPLE = ROOT / "sample_captures" / "http" / "h2c-nghttp.pcap"
SPDY_SAMPLE = ROOT / "sample_captures" / "spdy" / "spdy3-plain.pcap"

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
SEGMENT = 32768  # TCP payload per crafted packet


# ------------------------------------------------------------------ pcap plumbing

def read_packets(path: Path) -> list[tuple[float, bytes]]:
    with open(path, "rb") as fh:
        return [(ts, bytes(buf)) for ts, buf in dpkt.pcap.Reader(fh)]


def write_pcap(packets: list[tuple[float, bytes]]) -> bytes:
    out = io.BytesIO()
    w = dpkt.pcap.Writer(out, snaplen=262144, linktype=dpkt.pcap.DLT_EN10MB)
    for ts, buf in packets:
        w.writepkt(buf, ts)
    return out.getvalue()


def _packet(src_port: int, dst_port: int, seq: int, ack: int, flags: int, payload: bytes = b"") -> bytes:
    tcp = dpkt.tcp.TCP(sport=src_port, dport=dst_port, seq=seq & 0xFFFFFFFF, ack=ack & 0xFFFFFFFF, flags=flags,
                       win=65535, data=payload)
    ip = dpkt.ip.IP(src=bytes([127, 0, 0, 1]), dst=bytes([127, 0, 0, 1]), p=dpkt.ip.IP_PROTO_TCP, ttl=64, data=tcp)
    ip.len = 20 + len(tcp)  # dpkt fills checksums when packed
    eth = dpkt.ethernet.Ethernet(src=b"\0" * 6, dst=b"\0" * 6, type=dpkt.ethernet.ETH_TYPE_IP, data=ip)
    return bytes(eth)


def tcp_connection(events: list[tuple[int, bytes]], client_port: int, server_port: int, t0: float,
                   step: float = 1e-5) -> list[tuple[float, bytes]]:
    """Packets of one TCP connection: handshake, ``events`` (direction 0 = client, bytes) in
    order, each cut into SEGMENT-byte packets and acknowledged, then FIN both ways."""
    isn = [1000, 500000]
    nxt = [isn[0] + 1, isn[1] + 1]
    ports = [(client_port, server_port), (server_port, client_port)]
    S, A, P, F = dpkt.tcp.TH_SYN, dpkt.tcp.TH_ACK, dpkt.tcp.TH_PUSH, dpkt.tcp.TH_FIN
    t = t0
    out = []

    def emit(d, seq, ack, flags, payload=b""):
        nonlocal t
        out.append((t, _packet(*ports[d], seq, ack, flags, payload)))
        t += step

    emit(0, isn[0], 0, S)
    emit(1, isn[1], nxt[0], S | A)
    emit(0, nxt[0], nxt[1], A)
    for d, data in events:
        for i in range(0, len(data), SEGMENT):
            piece = data[i : i + SEGMENT]
            emit(d, nxt[d], nxt[1 - d], A | P, piece)
            nxt[d] += len(piece)
        emit(1 - d, nxt[1 - d], nxt[d], A)
    emit(0, nxt[0], nxt[1], F | A)
    emit(1, nxt[1], nxt[0] + 1, F | A)
    emit(0, nxt[0] + 1, nxt[1] + 1, A)
    return out


def _after(packets: list[tuple[float, bytes]]) -> float:
    return max(ts for ts, _ in packets) + 0.001


# ------------------------------------------------------------------ HTTP/2

def h2frame(t: int, flags: int, sid: int, payload: bytes) -> bytes:
    return struct.pack(">I", len(payload))[1:] + bytes([t, flags]) + struct.pack(">I", sid) + payload


def _hpack_literal(index: int, value: bytes) -> bytes:
    """Literal without indexing, name from static index ``index`` (< 15), raw value < 127 bytes."""
    return bytes([index, len(value)]) + value


def h2_bomb_connection(streams: int, value_len: int = 4000, refs: int = 250) -> tuple[list[tuple[int, bytes]], dict]:
    """(events, facts): a client that indexes one ``value_len``-byte header on stream 1, then
    ``streams`` streams that each refer to it ``refs`` times; the server answers each stream
    with ``:status 200`` (static index 8) and END_STREAM."""
    import hpack

    enc = hpack.Encoder()
    first = enc.encode([(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "bomb"),
                        ("x-big", "B" * value_len)])
    client = [PREFACE + h2frame(4, 0, 0, b""), h2frame(4, 1, 0, b"") + h2frame(1, 0x5, 1, first)]
    server = [h2frame(4, 0, 0, b"") + h2frame(4, 1, 0, b"")]
    ok = b"\x88"  # :status 200
    events = [(0, client[0]), (1, server[0]), (0, client[1]), (1, h2frame(1, 0x5, 1, ok))]
    burst_c, burst_s = bytearray(), bytearray()
    for i in range(streams):
        sid = 3 + 2 * i
        # :method GET, :scheme http, :path /i<N> (a literal, so no two blocks are alike), x-big x refs
        block = b"\x82\x86" + _hpack_literal(4, b"/i%d" % i) + b"\xbe" * refs
        burst_c += h2frame(1, 0x5, sid, block)
        burst_s += h2frame(1, 0x5, sid, ok)
        if len(burst_c) >= 1 << 16:
            events += [(0, bytes(burst_c)), (1, bytes(burst_s))]
            burst_c, burst_s = bytearray(), bytearray()
    if burst_c:
        events += [(0, bytes(burst_c)), (1, bytes(burst_s))]
    per_block = refs * (5 + value_len)
    return events, {"decoded_per_block": per_block, "streams": streams + 1}


def h2_small_fields_connection(blocks: int, fields: int = 4000) -> list[tuple[int, bytes]]:
    """Blocks of ``fields`` distinct small literal fields each (``x: NNNNN``, without indexing):
    the most decoded fields (and Python objects) per input byte that HPACK allows once the
    fields are all different (the same field repeated is one object)."""
    events = [(0, PREFACE + h2frame(4, 0, 0, b"") + h2frame(4, 1, 0, b"")), (1, h2frame(4, 0, 0, b"") + h2frame(4, 1, 0, b""))]
    k = 0
    for i in range(blocks):
        parts = [b"\x82\x86", _hpack_literal(4, b"/f%d" % i)]
        for _ in range(fields):
            parts.append(b"\x00\x01x\x05%05d" % (k % 100000))  # literal, new name "x", 5-digit value
            k += 1
        block = b"".join(parts)
        frames = h2frame(1, 0x1, 1 + 2 * i, block[:16384])
        for j in range(16384, len(block), 16384):
            frames += h2frame(9, 0x4 if j + 16384 >= len(block) else 0, 1 + 2 * i, block[j : j + 16384])
        events.append((0, frames))
    return events


def h2_small_fields(blocks: int = 400, conns: int = 1) -> bytes:
    packets = read_packets(H2C_SAMPLE)
    t = _after(packets)
    for k in range(conns):
        conn = tcp_connection(h2_small_fields_connection(blocks), 43001 + k, 18081, t)
        packets += conn
        t = _after(conn)
    return write_pcap(packets)


def h2_hpack_bomb(streams: int = 2300, conns: int = 1, value_len: int = 4000, refs: int = 250) -> bytes:
    """The real h2c-nghttp capture, then ``conns`` bomb connections (client ports 40001...)."""
    packets = read_packets(H2C_SAMPLE)
    t = _after(packets)
    for k in range(conns):
        events, _ = h2_bomb_connection(streams, value_len, refs)
        conn = tcp_connection(events, 40001 + k, 18081, t)
        packets += conn
        t = _after(conn)
    return write_pcap(packets)


def _stream_of(packets, client_port: int, server_port: int, direction: int):
    """(stream bytes, [(stream offset of packet payload start, packet index, payload offset in packet)])."""
    src, dst = (client_port, server_port) if direction == 0 else (server_port, client_port)
    data = bytearray()
    where = []
    isn = None
    for i, (_, buf) in enumerate(packets):
        eth = dpkt.ethernet.Ethernet(buf)
        ip = eth.data
        if not isinstance(ip, dpkt.ip.IP) or not isinstance(ip.data, dpkt.tcp.TCP):
            continue
        tcp = ip.data
        if (tcp.sport, tcp.dport) != (src, dst):
            continue
        if tcp.flags & dpkt.tcp.TH_SYN:
            isn = tcp.seq
            continue
        if not tcp.data or isn is None:
            continue
        off = (tcp.seq - isn - 1) & 0xFFFFFFFF
        if off != len(data):
            continue  # retransmission (none in the sample; kept simple)
        where.append((off, i, len(buf) - len(tcp.data)))
        data += tcp.data
    return bytes(data), where


def h2_frames(stream: bytes, start: int = 0) -> list[tuple[int, int, int, int]]:
    """(offset, length, type, stream id) of the frames chained from ``start``."""
    out, pos = [], start
    while pos + 9 <= len(stream):
        ln = int.from_bytes(stream[pos : pos + 3], "big")
        out.append((pos, ln, stream[pos + 3], int.from_bytes(stream[pos + 5 : pos + 9], "big") & 0x7FFFFFFF))
        pos += 9 + ln
    return out


def h2_frame_size_damage(client_port: int = 35274, nth: int = 10, direction: int = 1, frame_type: int = 0,
                         damage: bytes = b"\x7f\xff") -> tuple[bytes, dict]:
    """The real h2c-nghttp capture with the first two length bytes of the ``nth`` frame of type
    ``frame_type`` (with a payload) of one direction of one connection replaced by ``damage``
    (a length > 16384).  Returns (pcap, facts: the damaged frame's stream offset, true length,
    stream id, damaged length)."""
    packets = read_packets(H2C_SAMPLE)
    stream, where = _stream_of(packets, client_port, 18081, direction)
    frames = h2_frames(stream, len(PREFACE) if direction == 0 else 0)
    of_type = [f for f in frames if f[2] == frame_type and f[1] > 0]
    off, length, _, sid = of_type[nth]
    for k, b in enumerate(damage):
        at = off + k
        for s, i, p in reversed(where):
            if s <= at:
                ts, buf = packets[i]
                buf = bytearray(buf)
                buf[p + at - s] = b
                packets[i] = (ts, bytes(buf))
                break
    bad_len = int.from_bytes(damage + stream[off + len(damage) : off + 3], "big")
    return write_pcap(packets), {"offset": off, "length": length, "stream_id": sid, "damaged_length": bad_len,
                                 "client_port": client_port, "direction": direction}


# ------------------------------------------------------------------ SPDY

def _spdy3_nv(pairs: list[tuple[bytes, bytes]]) -> bytes:
    return struct.pack(">I", len(pairs)) + b"".join(
        struct.pack(">I", len(k)) + k + struct.pack(">I", len(v)) + v for k, v in pairs)


def spdy_compressor():
    from wirefall.dissectors.spdy import dictionary

    return zlib.compressobj(9, zlib.DEFLATED, 15, 9, zlib.Z_DEFAULT_STRATEGY, dictionary(3))


def spdy_control(type_: int, flags: int, payload: bytes) -> bytes:
    return struct.pack(">HHI", 0x8003, type_, (flags << 24) | len(payload)) + payload


def spdy_syn_stream(sid: int, block: bytes, flags: int = 0x01) -> bytes:
    return spdy_control(1, flags, struct.pack(">IIBB", sid, 0, 0, 0) + block)


def spdy_syn_reply(sid: int, block: bytes, flags: int = 0) -> bytes:
    return spdy_control(2, flags, struct.pack(">I", sid) + block)


def spdy_data(sid: int, payload: bytes, flags: int = 0x01) -> bytes:
    return struct.pack(">II", sid & 0x7FFFFFFF, (flags << 24) | len(payload)) + payload


def spdy_ping(n: int) -> bytes:
    return spdy_control(6, 0, struct.pack(">I", n))


def _request(c, sid: int, extra: list[tuple[bytes, bytes]] = ()) -> bytes:
    pairs = [(b":method", b"GET"), (b":path", b"/s%d" % sid), (b":host", b"spdy.test"), (b":scheme", b"http"),
             (b":version", b"HTTP/1.1"), *extra]
    return c.compress(_spdy3_nv(pairs)) + c.flush(zlib.Z_SYNC_FLUSH)


def _reply(c) -> bytes:
    return c.compress(_spdy3_nv([(b":status", b"200 OK"), (b":version", b"HTTP/1.1"), (b"content-type", b"text/plain")])) \
        + c.flush(zlib.Z_SYNC_FLUSH)


def spdy_bomb_connection(blocks: int, value_len: int = 1_000_000) -> list[tuple[int, bytes]]:
    """Stream 1 and its answer, then ``blocks - 1`` SYN_STREAMs sent at once, whose blocks each
    inflate to ``value_len`` + a little, then the server's answers to them (SYN_REPLY, DATA).
    The value ends each block, so after the first the inflater's 32 KB window holds only its
    bytes: the second block's compressed bytes decode the same way again and are repeated
    (compressing the value again for each block would take 10 ms a block)."""
    cc, sc = spdy_compressor(), spdy_compressor()
    extra = [(b"x-bomb", b"A" * value_len)]
    events = [(0, spdy_syn_stream(1, _request(cc, 1, extra))), (1, spdy_syn_reply(1, _reply(sc)) + spdy_data(1, b"ok"))]
    again = _request(cc, 3, extra)  # (every later block asks for /s3 too)
    events.append((0, b"".join(spdy_syn_stream(1 + 2 * i, again) for i in range(1, blocks))))
    # the server's blocks are small: compressed one by one, as a server would
    events.append((1, b"".join(spdy_syn_reply(1 + 2 * i, _reply(sc)) + spdy_data(1 + 2 * i, b"ok") for i in range(1, blocks))))
    return events


def spdy_small_fields_connection(blocks: int, pairs: int = 60000) -> list[tuple[int, bytes]]:
    """SYN_STREAMs each holding ``pairs`` distinct tiny pairs (``xNNNNN: ""``): zlib makes them
    a few bits each, so this is the most Python objects per input byte SPDY allows."""
    cc = spdy_compressor()
    out = bytearray()
    for i in range(blocks):
        nv = [(b":method", b"GET"), (b":path", b"/f%d" % i), (b":host", b"spdy.test"), (b":scheme", b"http"),
              (b":version", b"HTTP/1.1")] + [(b"x%06d" % (i * pairs + j), b"") for j in range(pairs)]
        out += spdy_syn_stream(1 + 2 * i, cc.compress(_spdy3_nv(nv)) + cc.flush(zlib.Z_SYNC_FLUSH))
    return [(0, bytes(out))]


def spdy_small_fields(blocks: int = 60, conns: int = 1) -> bytes:
    packets = read_packets(SPDY_SAMPLE)
    t = _after(packets)
    for k in range(conns):
        conn = tcp_connection(spdy_small_fields_connection(blocks), 44001 + k, 18330, t)
        packets += conn
        t = _after(conn)
    return write_pcap(packets)


def spdy_header_bomb(blocks: int = 1200, conns: int = 1, value_len: int = 1_000_000) -> bytes:
    packets = read_packets(SPDY_SAMPLE)
    t = _after(packets)
    for k in range(conns):
        conn = tcp_connection(spdy_bomb_connection(blocks, value_len), 41001 + k, 18330, t)
        packets += conn
        t = _after(conn)
    return write_pcap(packets)


class _Bits:
    """Deflate bit writer (RFC 1951 section 3.1.1: LSB first; Huffman codes MSB first)."""

    def __init__(self):
        self.acc = 0
        self.n = 0
        self.out = bytearray()

    def bits(self, value: int, count: int) -> None:  # a value, least significant bit first
        self.acc |= value << self.n
        self.n += count
        while self.n >= 8:
            self.out.append(self.acc & 0xFF)
            self.acc >>= 8
            self.n -= 8

    def code(self, code: int, count: int) -> None:  # a Huffman code, most significant bit first
        self.bits(int(format(code, f"0{count}b")[::-1], 2), count)


def deflate_bomb(size: int) -> bytes:
    """``size`` bytes of a zlib stream (no end): a fixed-Huffman block holding one literal then
    length-258 distance-1 back-references (13 bits each, so 8 of them fill 13 bytes): about
    ``size * 8 / 13 * 258`` bytes once inflated.  Made by hand because zlib would need the
    gigabytes as input; the references repeat with a 13-byte period after the first 2 bytes."""
    w = _Bits()
    w.out += b"\x78\x01"  # zlib header: deflate, 32 KB window, no dictionary, check bits
    w.bits(0, 1)  # BFINAL = 0
    w.bits(1, 2)  # BTYPE = 01 (fixed Huffman)
    w.code(0x30 + ord("A"), 8)  # literal 'A' (0-143: 8-bit codes from 0x30)
    for _ in range(8 * 4):
        w.code(0xC0 + (285 - 280), 8)  # length 258 (code 285: 280-287 are 8-bit codes from 0xC0)
        w.code(0, 5)  # distance code 0 = 1
    head = bytes(w.out)  # 2 (zlib) + 11 bits + 32 x 13 bits: bytes from 4 on are periodic
    period = head[4:17]
    body = head[:4] + period * ((size - 4) // 13 + 1)
    return body[:size]


def spdy_huge_block_connection(block_len: int = (1 << 24) - 1 - 10) -> list[tuple[int, bytes]]:
    """Stream 1 normal, stream 3 a SYN_STREAM of ``block_len`` compressed bytes, stream 5 normal,
    a PING; the server answers 1, 3 and 5 with SYN_REPLY and DATA (its own zlib stream)."""
    cc, sc = spdy_compressor(), spdy_compressor()
    events = [
        (0, spdy_syn_stream(1, _request(cc, 1))),
        (1, spdy_syn_reply(1, _reply(sc)) + spdy_data(1, b"one")),
    ]
    # the huge block continues the client's zlib stream: its bytes after a sync flush start a
    # new deflate block; the zlib header is dropped (the stream has one already)
    bomb = deflate_bomb(block_len + 2)[2:]
    events.append((0, spdy_syn_stream(3, bomb)))
    events.append((1, spdy_syn_reply(3, _reply(sc)) + spdy_data(3, b"three")))
    events.append((0, spdy_syn_stream(5, _request(cc, 5)) + spdy_ping(7)))
    events.append((1, spdy_syn_reply(5, _reply(sc)) + spdy_data(5, b"five") + spdy_ping(7)))
    return events


def spdy_huge_block(block_len: int = (1 << 24) - 1 - 10) -> bytes:
    packets = read_packets(SPDY_SAMPLE)
    packets += tcp_connection(spdy_huge_block_connection(block_len), 42001, 18330, _after(packets))
    return write_pcap(packets)


BUILDERS = {
    "h2-hpack-bomb.pcap": lambda: h2_hpack_bomb(),
    "h2-hpack-bomb-5conns.pcap": lambda: h2_hpack_bomb(streams=70, conns=5),
    "h2-small-fields.pcap": lambda: h2_small_fields(),
    "h2-small-fields-5conns.pcap": lambda: h2_small_fields(blocks=100, conns=5),
    "h2-frame-size-damage.pcap": lambda: h2_frame_size_damage()[0],
    "spdy-header-bomb.pcap": lambda: spdy_header_bomb(),
    "spdy-header-bomb-3conns.pcap": lambda: spdy_header_bomb(blocks=100, conns=3),
    "spdy-inflate-bomb-5conns.pcap": lambda: spdy_header_bomb(blocks=40, conns=5, value_len=8_000_000),
    "spdy-huge-block.pcap": lambda: spdy_huge_block(),
    "spdy-small-fields.pcap": lambda: spdy_small_fields(),
    "spdy-small-fields-5conns.pcap": lambda: spdy_small_fields(blocks=20, conns=5),
}


def measure(path: Path, cmd: str, as_limit: int = 4 << 30, timeout: float = 300) -> tuple[int, float, int]:
    """(exit code, wall seconds, peak RSS bytes) of ``python -m wirefall CMD PATH --json``."""
    import os
    import resource
    import subprocess
    import time

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (as_limit, as_limit))

    t0 = time.monotonic()
    with open(os.devnull, "wb") as null:
        p = subprocess.Popen([sys.executable, "-m", "wirefall", cmd, str(path), "--json"], stdout=null, stderr=null,
                             cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), preexec_fn=cap)
        while True:
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - t0 > timeout:
                p.kill()
                pid, status, usage = os.wait4(p.pid, 0)
                break
            time.sleep(0.02)
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, time.monotonic() - t0, usage.ru_maxrss << 10


def main(argv: list[str]) -> int:
    """``OUTDIR [--measure]``: write every input; with --measure, also the CLI's time and peak
    RSS on each (summary and requests --json), per input byte, as docs/ROBUSTNESS.md shows them."""
    out = Path(argv[0] if argv else ".")
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, build in BUILDERS.items():
        data = build()
        (out / name).write_bytes(data)
        print(f"{out / name}: {len(data)} bytes", flush=True)
        if "--measure" in argv:
            for cmd in ("summary", "requests"):
                rc, secs, rss = measure(out / name, cmd)
                rows.append((name, cmd, len(data), rc, secs, rss))
                print(f"  {cmd}: exit {rc}, {secs:.2f} s, {rss / 2**20:.0f} MB peak RSS, "
                      f"{secs / len(data) * 1e6:.2f} us/byte, {rss / len(data):.1f} RSS bytes/byte", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
