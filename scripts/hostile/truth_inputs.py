"""Crafted captures for "a waterfall must be true, complete or say what is missing" (session
s7-truth): HTTP/1 heads and chunks cut by a per-block limit, a head the capture ends inside,
a body whose decoding stops at its cap, and UTF-8 request targets.  Each capture also holds the
two normal HTTP/1.1 exchanges of ``redteam18_inputs.Capture`` (before and after), which the
tests check survive unchanged.

Built from raw bytes (``redteam18_inputs``' pcap writer), never committed as files:

    python scripts/hostile/truth_inputs.py OUTDIR     # writes every capture below

What each holds is known by construction (``CASES``): the tests compare wirefall with it
(and with tshark, where tshark decodes the same field).
"""
from __future__ import annotations

import gzip
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from redteam18_inputs import NORMAL_PATHS, Capture, Tcp, h2_headers_block, h2frame, hint, hstr, udp_pkt  # noqa: E402

__all__ = ["NORMAL_PATHS", "CASES", "LIMITS", "build", "UTF8_TARGETS", "utf8_targets", "h2_midway", "MIDWAY_PATHS",
           "DNS_NAME"]

CLIENT, SERVER = bytes([10, 77, 0, 1]), bytes([10, 77, 0, 2])

# the limits the cases are built against (``analyze(limits=LIMITS)`` / ``--limit``), small so
# that the captures stay a few kilobytes
LIMITS = {"http1_header_bytes": 1000, "http1_header_count": 20, "body_decoded_bytes": 10_000}

# case -> (the limit it runs into, or None for a capture cut short), what is lost
CASES = {
    "long_head": ("http1_header_bytes", "a 3 KB request head (limit 1000 bytes): not decoded, its response an orphan"),
    "many_fields": ("http1_header_count", "a request head with 50 fields (limit 20): 30 fields not kept"),
    "long_chunk_line": ("http1_chunk_line", "a 5000-byte chunk-size line (limit 4096): the body not read further"),
    "long_trailer": ("http1_header_bytes", "a 3 KB trailer section (limit 1000): the body not read further"),
    "capped_body": ("body_decoded_bytes", "a gzip body inflating to 100 KB (limit 10 000): its decoded size a lower bound"),
    "cut_head": (None, "a request head the capture ends inside (800 bytes, no blank line)"),
    "cut_body": (None, "a response body of Content-Length 5000 the capture ends inside (2000 bytes seen)"),
}


def _case(c: Tcp, kind: str) -> None:
    if kind == "long_head":
        c.send(0, b"GET /s7-long HTTP/1.1\r\nHost: long.s7.example\r\nX-Pad: " + b"p" * 3000 + b"\r\n\r\n")
        c.send(1, b"HTTP/1.1 204 No Content\r\n\r\n")
    elif kind == "many_fields":
        c.send(0, b"GET /s7-many HTTP/1.1\r\nHost: many.s7.example\r\n"
               + b"".join(b"X-F%d: v\r\n" % i for i in range(49)) + b"\r\n")
        c.send(1, b"HTTP/1.1 204 No Content\r\n\r\n")
    elif kind == "long_chunk_line":
        c.send(0, b"GET /s7-chunk HTTP/1.1\r\nHost: chunk.s7.example\r\n\r\n")
        c.send(1, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        c.send(1, b"5;" + b"e" * 5000 + b"\r\nhello\r\n0\r\n\r\n")
    elif kind == "long_trailer":
        c.send(0, b"GET /s7-trailer HTTP/1.1\r\nHost: trailer.s7.example\r\n\r\n")
        c.send(1, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-T: " + b"t" * 3000 + b"\r\n\r\n")
    elif kind == "capped_body":
        body = gzip.compress(b"a" * 100_000)
        c.send(0, b"GET /s7-capped HTTP/1.1\r\nHost: capped.s7.example\r\n\r\n")
        c.send(1, b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: " + str(len(body)).encode()
               + b"\r\n\r\n" + body)
    elif kind == "cut_head":
        c.send(0, b"GET /s7-cut HTTP/1.1\r\nHost: cut.s7.example\r\nX-Pad: " + b"p" * 750)
    elif kind == "cut_body":
        c.send(0, b"GET /s7-cutbody HTTP/1.1\r\nHost: cutbody.s7.example\r\n\r\n")
        c.send(1, b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n" + b"b" * 2000)
    else:
        raise ValueError(kind)


def build(path: str | Path, kind: str) -> Path:
    """The capture of case ``kind`` (``CASES``): normal exchange, the case on connection 1
    (client 10.77.0.1:45000 -> 10.77.0.2:80, with its handshake), normal exchange."""
    with Capture(path) as pc:
        c = Tcp(pc, CLIENT, 45000, SERVER, 80).open()
        _case(c, kind)
        if kind not in ("cut_head", "cut_body"):
            c.close()
    return Path(path)


# request targets as sent (bytes) -> what RFC 9110 / tshark's http.request.uri shows
UTF8_TARGETS = [
    b"/caf\xc3\xa9",                 # UTF-8: /café
    b"/\xe6\x97\xa5\xe6\x9c\xac?q=\xe2\x9c\x93",  # /日本?q=✓
    b"/bad\xff\xfe",                 # not UTF-8
    b"/ctl\x1b[31mred",             # an escape sequence in the target
]


def utf8_targets(path: str | Path) -> Path:
    """One connection of GETs whose targets are ``UTF8_TARGETS`` (each answered 204)."""
    with Capture(path) as pc:
        c = Tcp(pc, CLIENT, 45001, SERVER, 80).open()
        for t in UTF8_TARGETS:
            c.send(0, b"GET " + t + b" HTTP/1.1\r\nHost: utf8.s7.example\r\n\r\n")
            c.send(1, b"HTTP/1.1 204 No Content\r\n\r\n")
        c.close()
    return Path(path)


# ---------------------------------------------------------------- HTTP/2 joined mid-way

MIDWAY_PATHS = ("/s7-mid/app.js", "/s7-mid/style.css")
DNS_NAME = "cdn.s7.example"


def _dns_answer(ident: int, name: str, addr: bytes) -> tuple[bytes, bytes]:
    """A DNS query for ``name`` (A) and its answer ``addr`` (RFC 1035 wire format)."""
    import struct

    qname = b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0"
    q = struct.pack("!HHHHHH", ident, 0x0100, 1, 0, 0, 0) + qname + struct.pack("!HH", 1, 1)
    r = (struct.pack("!HHHHHH", ident, 0x8180, 1, 1, 0, 0) + qname + struct.pack("!HH", 1, 1)
         + b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 300, 4) + addr)
    return q, r


def h2_midway(path: str | Path, dns: bool) -> Path:
    """An h2c connection (10.77.0.1:45002 -> 10.77.0.3:8080) the capture joins mid-way: no
    SYN, no preface, its two requests' ``:authority`` an HPACK dynamic-table reference (index
    62: an entry inserted before the capture), ``:path`` literal; each answered 200.  With
    ``dns``, a DNS lookup of ``DNS_NAME`` answered 10.77.0.3 comes first (so the requests'
    host is that name, port 8080); without, nothing in the capture names the server."""
    server = bytes([10, 77, 0, 3])
    with Capture(path) as pc:
        if dns:
            q, r = _dns_answer(0x5757, DNS_NAME, server)
            pc.add(udp_pkt(CLIENT, 53000, bytes([10, 77, 0, 53]), 53, q))
            pc.add(udp_pkt(bytes([10, 77, 0, 53]), 53, CLIENT, 53000, r))
        c = Tcp(pc, CLIENT, 45002, server, 8080)  # no open(): joined mid-way
        for k, p in enumerate(MIDWAY_PATHS):
            sid = 101 + 2 * k
            # :method GET (static 2), :scheme http (static 6), :authority = dynamic entry 62, :path literal
            block = b"\x82\x86" + hint(62, 7, 0x80) + hint(4, 4) + hstr(p.encode())
            c.send(0, h2_headers_block(sid, block))
            body = b"mid-way body %d\n" % k
            c.send(1, h2_headers_block(sid, b"\x88" + hint(31, 4) + hstr(b"text/plain"), end_stream=False)
                   + h2frame(0, 0x1, sid, body))
    return Path(path)


def main(argv: list[str]) -> int:
    out = Path(argv[1] if len(argv) > 1 else ".")
    out.mkdir(parents=True, exist_ok=True)
    for kind in CASES:
        print(build(out / f"truth-{kind}.pcap", kind))
    print(utf8_targets(out / "truth-utf8-targets.pcap"))
    print(h2_midway(out / "truth-h2-midway-dns.pcap", dns=True))
    print(h2_midway(out / "truth-h2-midway.pcap", dns=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
