"""HTTP/2 and SPDY frames the sample captures do not carry, for review 20's field checks
(tests/test_h2_spdy_fields20.py compares wirefall's display-filter fields, Info and detail
with tshark's on them).

The sample captures (``sample_captures/http/h2c-nghttp.pcap``, ``sample_captures/spdy/*``)
have priority fields and SPDY's control frames, but no padding beyond DATA, no PING, no
repeated SETTINGS identifier, no GOAWAY debug data and no unknown frame type.  These are made
here, with the real encoders for the header blocks (``hpack.Encoder``; zlib with the SPDY/3
dictionary) and the few ``struct`` bytes the specs lay out for the rest, over a crafted TCP
connection (dpkt):

- ``h2_uncommon()``: h2c on port 8080 (tshark: ``-d tcp.port==8080,http2``), packets
  4 preface + SETTINGS with identifiers 1, 4, 255, 4, 9 (INITIAL_WINDOW_SIZE twice: 100 then
  200) + PING; 5 server SETTINGS, SETTINGS ACK, PING ACK, ALTSVC, ORIGIN; 6 SETTINGS ACK,
  HEADERS padded with priority (exclusive, dependency 0, weight byte 15), PRIORITY stream 3
  (exclusive, dependency 1, weight byte 255), PRIORITY stream 7 (dependency 0, weight byte 0),
  PRIORITY_UPDATE; 7 HEADERS + 2 CONTINUATION; 8 PUSH_PROMISE padded, HEADERS, DATA padded,
  unknown type 0xfa, WINDOW_UPDATE of 2^31-1 on stream 0 (the window passes 2^31-1);
  9 RST_STREAM x2, WINDOW_UPDATE; 10 GOAWAY with 300 bytes of debug data + GOAWAY "bye";
  11 GOAWAY whose debug data is not UTF-8 (and holds a backslash); 12 GOAWAY with 3000 bytes
  of debug data (more than the dissector keeps).  A second connection (port 40002) carries a
  CONTINUATION with the PADDED bit, which RFC 9113 does not define and tshark reads anyway
  (packets 16-17).
- ``spdy_uncommon()``: SPDY/3 on port 8443 (tshark: ``-d tcp.port==8443,spdy``), packets
  4 SETTINGS (CLEAR_SETTINGS; 3 entries); 5 SYN_STREAM priority 7 slot 3 FIN; 6 SYN_STREAM
  (unidirectional, priority 2), SYN_REPLY, HEADERS, DATA FIN, CREDENTIAL; 7 RST_STREAM
  status 11 and 99, PING, WINDOW_UPDATE, GOAWAY; 8 GOAWAY + control type 0x77 (unknown);
  9 a control frame of unknown type 0x55 alone; 10 SYN_STREAM priority 0 + RST_STREAM 1.

``python scripts/hostile/h2_spdy20_inputs.py OUTDIR`` writes ``h2-uncommon.pcap`` and
``spdy-uncommon.pcap``.
"""
from __future__ import annotations

import io
import struct
import sys
import zlib
from pathlib import Path

import dpkt
from hpack import Encoder

ROOT = Path(__file__).resolve().parents[2]

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
H2_PORT = 8080
SPDY_PORT = 8443
GOAWAY_LONG = 3000  # debug data bytes of packet 12's GOAWAY (the dissector keeps 1024)
GOAWAY_BINARY = b"\xff\xfeoops\x80 back\\slash \xe2\x82\xac"  # not UTF-8 (then a valid euro sign)


class _Tcp:
    """Packets of crafted TCP connections: a handshake, then data segments."""

    def __init__(self) -> None:
        self.packets: list[tuple[float, bytes]] = []
        self.t = 1700000000.0
        self.seq: dict[tuple[str, int], int] = {}

    def seg(self, src: tuple[str, int], dst: tuple[str, int], flags: int, data: bytes = b"") -> None:
        tcp = dpkt.tcp.TCP(sport=src[1], dport=dst[1], seq=self.seq[src], ack=self.seq[dst], flags=flags, win=65535, data=data)
        ip = dpkt.ip.IP(src=bytes(map(int, src[0].split("."))), dst=bytes(map(int, dst[0].split("."))), p=dpkt.ip.IP_PROTO_TCP,
                        ttl=64, data=tcp)
        ip.len = 20 + len(bytes(tcp))
        eth = dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, type=dpkt.ethernet.ETH_TYPE_IP, data=ip)
        self.t += 0.001
        self.packets.append((self.t, bytes(eth)))
        self.seq[src] += len(data) + (1 if flags & (dpkt.tcp.TH_SYN | dpkt.tcp.TH_FIN) else 0)

    def open(self, c: tuple[str, int], s: tuple[str, int]) -> None:
        self.seq[c], self.seq[s] = 1000, 5000
        self.seg(c, s, dpkt.tcp.TH_SYN)
        self.seg(s, c, dpkt.tcp.TH_SYN | dpkt.tcp.TH_ACK)
        self.seg(c, s, dpkt.tcp.TH_ACK)

    def pcap(self) -> bytes:
        out = io.BytesIO()
        w = dpkt.pcap.Writer(out, snaplen=262144, linktype=dpkt.pcap.DLT_EN10MB)
        for ts, buf in self.packets:
            w.writepkt(buf, ts)
        return out.getvalue()


PA = dpkt.tcp.TH_ACK | dpkt.tcp.TH_PUSH


def h2frame(t: int, flags: int, sid: int, payload: bytes) -> bytes:
    return struct.pack(">I", len(payload))[1:] + bytes([t, flags]) + struct.pack(">I", sid) + payload


def _settings(*pairs: tuple[int, int]) -> bytes:
    return b"".join(struct.pack(">HI", i, v) for i, v in pairs)


def h2_uncommon() -> bytes:
    enc_c, enc_s = Encoder(), Encoder()
    tcp = _Tcp()
    c, s = ("10.0.0.1", 40000), ("10.0.0.2", H2_PORT)
    tcp.open(c, s)
    ping = bytes(range(1, 9))
    # 4
    tcp.seg(c, s, PA, PREFACE + h2frame(4, 0, 0, _settings((1, 4096), (4, 100), (0xFF, 7), (4, 200), (9, 1)))
            + h2frame(6, 0, 0, ping))
    # 5
    origin = b"https://example.org"
    tcp.seg(s, c, PA, h2frame(4, 0, 0, _settings((3, 50))) + h2frame(4, 1, 0, b"") + h2frame(6, 1, 0, ping)
            + h2frame(10, 0, 0, struct.pack(">H", len(origin)) + origin + b'h3=":443"; ma=60')
            + h2frame(12, 0, 0, b"".join(struct.pack(">H", len(o)) + o for o in (b"https://example.com", b"https://example.net"))))
    # 6
    hb = enc_c.encode([(":method", "GET"), (":scheme", "http"), (":authority", "x"), (":path", "/a")])
    tcp.seg(c, s, PA, h2frame(4, 1, 0, b"")
            + h2frame(1, 0x2D, 1, bytes([5]) + struct.pack(">IB", 0x80000000, 15) + hb + b"\0" * 5)
            + h2frame(2, 0, 3, struct.pack(">IB", 0x80000001, 255))
            + h2frame(2, 0, 7, struct.pack(">IB", 0, 0))
            + h2frame(16, 0, 0, struct.pack(">I", 1) + b"u=1, i"))
    # 7
    hb2 = enc_c.encode([(":method", "GET"), (":scheme", "http"), (":authority", "x"), (":path", "/b"), ("x-long", "v" * 60)])
    tcp.seg(c, s, PA, h2frame(1, 0x1, 5, hb2[:10]) + h2frame(9, 0, 5, hb2[10:30]) + h2frame(9, 4, 5, hb2[30:]))
    # 8
    pp = enc_s.encode([(":method", "GET"), (":scheme", "http"), (":authority", "x"), (":path", "/pushed")])
    hs = enc_s.encode([(":status", "200"), ("content-type", "text/plain")])
    tcp.seg(s, c, PA, h2frame(5, 0x0C, 1, bytes([3]) + struct.pack(">I", 2) + pp + b"\0" * 3) + h2frame(1, 4, 1, hs)
            + h2frame(0, 0x09, 1, bytes([10]) + b"hello" + b"\0" * 10) + h2frame(0xFA, 0x5, 0, b"grease!")
            + h2frame(8, 0, 0, struct.pack(">I", 0xFFFFFFFF)))
    # 9
    tcp.seg(c, s, PA, h2frame(3, 0, 5, struct.pack(">I", 0x1234)) + h2frame(3, 0, 2, struct.pack(">I", 7))
            + h2frame(8, 0, 0, struct.pack(">I", 1000)))
    # 10, 11, 12
    tcp.seg(s, c, PA, h2frame(7, 0, 0, struct.pack(">II", 0x80000003, 0xD) + (b"debug-" * 60)[:300])
            + h2frame(7, 0, 0, struct.pack(">II", 1, 0x99) + b"bye"))
    tcp.seg(s, c, PA, h2frame(7, 0, 0, struct.pack(">II", 3, 2) + GOAWAY_BINARY))
    tcp.seg(s, c, PA, h2frame(7, 0, 0, struct.pack(">II", 3, 0) + bytes((i * 7) & 0x7F | 0x20 for i in range(GOAWAY_LONG))))
    # 13-15: a second connection; 16 its preface and a HEADERS without END_HEADERS, 17 a
    # CONTINUATION with END_HEADERS | PADDED whose first byte (0: a literal field with a new
    # name, to wirefall; the Pad Length, to tshark) both read
    c2 = ("10.0.0.1", 40002)
    tcp.open(c2, s)
    hb3 = Encoder().encode([(":method", "GET"), (":scheme", "http"), (":authority", "x"), (":path", "/c")])
    tcp.seg(c2, s, PA, PREFACE + h2frame(4, 0, 0, b"") + h2frame(1, 0x1, 1, hb3))
    tcp.seg(c2, s, PA, h2frame(9, 0x0C, 1, b"\x00\x01a\x01b"))
    return tcp.pcap()


# ------------------------------------------------------------------ SPDY/3

def _spdy_dict() -> bytes:
    from wirefall.dissectors.spdy import dictionary

    return dictionary(3)


def ctrl(t: int, flags: int, payload: bytes) -> bytes:
    return struct.pack(">HHI", 0x8003, t, (flags << 24) | len(payload)) + payload


def data(sid: int, flags: int, payload: bytes) -> bytes:
    return struct.pack(">II", sid, (flags << 24) | len(payload)) + payload


def _nv(z, headers: list[tuple[str, str]]) -> bytes:
    raw = struct.pack(">I", len(headers)) + b"".join(
        struct.pack(">I", len(k)) + k.encode() + struct.pack(">I", len(v)) + v.encode() for k, v in headers)
    return z.compress(raw) + z.flush(zlib.Z_SYNC_FLUSH)


def spdy_uncommon() -> bytes:
    d = _spdy_dict()
    zc, zs = zlib.compressobj(zdict=d), zlib.compressobj(zdict=d)
    tcp = _Tcp()
    c, s = ("10.0.0.1", 40001), ("10.0.0.2", SPDY_PORT)
    tcp.open(c, s)
    req = [(":method", "GET"), (":path", "/"), (":version", "HTTP/1.1"), (":host", "x"), (":scheme", "https")]
    # 4
    st = struct.pack(">I", 3) + bytes([1]) + (4).to_bytes(3, "big") + struct.pack(">I", 100) \
        + bytes([2]) + (7).to_bytes(3, "big") + struct.pack(">I", 65536) + bytes([0]) + (0x42).to_bytes(3, "big") + struct.pack(">I", 9)
    tcp.seg(c, s, PA, ctrl(4, 1, st))
    # 5
    tcp.seg(c, s, PA, ctrl(1, 1, struct.pack(">II", 1, 0) + bytes([7 << 5, 3]) + _nv(zc, req)))
    # 6
    push = ctrl(1, 2, struct.pack(">II", 2, 1) + bytes([2 << 5, 0]) + _nv(zs, [(":status", "200"), (":version", "HTTP/1.1"),
                                                                              (":path", "/p"), (":host", "x"), (":scheme", "https")]))
    cred = struct.pack(">HI", 3, 5) + b"proof" + struct.pack(">I", 4) + b"cert" + struct.pack(">I", 6) + b"certif"
    tcp.seg(s, c, PA, push + ctrl(2, 0, struct.pack(">I", 1) + _nv(zs, [(":status", "200 OK"), (":version", "HTTP/1.1")]))
            + ctrl(8, 0, struct.pack(">I", 1) + _nv(zs, [("x-trailer", "t")])) + data(1, 1, b"hi") + ctrl(10, 0, cred))
    # 7
    tcp.seg(c, s, PA, ctrl(3, 0, struct.pack(">II", 2, 11)) + ctrl(3, 0, struct.pack(">II", 5, 99))
            + ctrl(6, 0, struct.pack(">I", 0x80000001)) + ctrl(9, 0, struct.pack(">II", 0, 1000)) + ctrl(7, 0, struct.pack(">II", 3, 11)))
    # 8, 9
    tcp.seg(s, c, PA, ctrl(7, 0, struct.pack(">II", 1, 1)) + ctrl(0x77, 0, b"xyz"))
    tcp.seg(s, c, PA, ctrl(0x55, 0, b"abcd"))
    # 10
    tcp.seg(c, s, PA, ctrl(1, 0, struct.pack(">II", 7, 0) + bytes([0, 0]) + _nv(zc, req)) + ctrl(3, 0, struct.pack(">II", 7, 1)))
    return tcp.pcap()


def main(out: str) -> None:
    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    (d / "h2-uncommon.pcap").write_bytes(h2_uncommon())
    (d / "spdy-uncommon.pcap").write_bytes(spdy_uncommon())


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
