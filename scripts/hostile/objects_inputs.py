"""Captures for ``wirefall objects`` and the body view (issue 22).

Each function writes a pcap (built with content_flow_inputs' packet helpers) that starts with
the real HTTP/1 exchange of ``sample_captures/http/http1-nginx.pcap``, so a test can check
that its objects survive next to the crafted part.

    python scripts/hostile/objects_inputs.py OUTDIR   # writes every input

- ``odd_names``: one GET per request target that tshark's export names oddly (``/``,
  trailing slashes, a query with a slash, reserved characters, 300-character names with and
  without an extension, duplicates, control bytes, ``.`` and ``..``, which exist in every
  directory); each body says which.
- ``bomb``: a gzip body of ``size`` zero bytes (1 KB of it per MB on the wire), then a small
  JSON response whose text holds an ESC sequence, a bidi override and a ``<script>`` tag.
- ``big_bodies``: ``n`` identity responses of ``size`` bytes on one connection.
- ``bad_gzip``: a response whose ``Content-Encoding: gzip`` body is not gzip.
"""
from __future__ import annotations

import gzip
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from content_flow_inputs import TcpConn, write  # noqa: E402

ODD_TARGETS = ["/", "/dir/", "/a?b=c/d", "/x<y>:z|w*.txt", "/" + "n" * 300 + ".html", "/" + "m" * 300, "/dup.txt",
               "/dup.txt", "/dup", "/dup", "/a.b.c", "/a.b.c", "//", "/q?x=1", "/sp%20ace", "http://h.test/abs/p.js",
               "/e\x01x", "/.hidden", "/trail.", "/a/b/", "/.", "/..", "/a/.."]


def _exchange(n: int, target: str, head: bytes, body: bytes) -> list[bytes]:
    c = TcpConn(n).handshake()
    c.send(0, f"GET {target} HTTP/1.1\r\nHost: h.test\r\n\r\n".encode("latin-1"))
    c.send(1, head + body)
    return c.packets


def odd_body(i: int, target: str) -> bytes:
    return f"body {i} {target}".encode("latin-1")


def odd_names(path) -> str:
    pk: list[bytes] = []
    for i, t in enumerate(ODD_TARGETS):
        body = odd_body(i, t)
        pk += _exchange(i + 1, t, b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body), body)
    return write(path, pk)


HOSTILE_TEXT = '{"note": "\x1b[31mred\x1b[0m \u202egnp.exe <script>alert(1)</script>", "n": [1, 2, 3]}'


def bomb(path, size: int = 256 << 20) -> str:
    z = gzip.compress(b"\0" * size, 9)
    pk = _exchange(1, "/bomb.bin", b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Encoding: gzip\r\n"
                   b"Content-Length: %d\r\n\r\n" % len(z), z)
    j = HOSTILE_TEXT.encode()
    pk += _exchange(2, "/data.json", b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(j), j)
    return write(path, pk)


def big_bodies(path, n: int = 4, size: int = 50_000) -> str:
    c = TcpConn(1).handshake()
    for i in range(n):
        body = bytes([65 + i]) * size
        c.send(0, f"GET /big{i}.bin HTTP/1.1\r\nHost: h.test\r\n\r\n".encode())
        c.send(1, b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    return write(path, c.packets)


BAD_GZIP = b"this is not gzip at all, but says it is"


def bad_gzip(path) -> str:
    pk = _exchange(1, "/bad.txt", b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Encoding: gzip\r\n"
                   b"Content-Length: %d\r\n\r\n" % len(BAD_GZIP), BAD_GZIP)
    return write(path, pk)


def main(argv: list[str]) -> int:
    out = Path(argv[1] if len(argv) > 1 else ".")
    out.mkdir(parents=True, exist_ok=True)
    for name, fn in (("odd-names", odd_names), ("bomb", bomb), ("big-bodies", big_bodies), ("bad-gzip", bad_gzip)):
        print(fn(out / f"objects-{name}.pcap"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
