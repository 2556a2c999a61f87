"""Request targets whose exported file names must be made safe (review 19, issue 1).

One HTTP/1.1 GET per target, each on its own connection, answered ``200 OK`` with a small
``text/plain`` body that says which target it answers (the reviewer's capture
``hostile.pcap`` had the same requests, made by a socket server and client):

- a bidi override (U+202E) that would show ``/\u202etxt.exe`` as "exe.txt";
- DEL and a C1 control byte (0x85, not UTF-8 on its own);
- 200 two-byte characters, so that a cut at 255 bytes falls inside one;
- a NUL byte (tshark's name ends there), an ESC sequence, path tricks;
- a bare CR in the request target: tshark does not take the line for a request, and the
  response's object is named ``object<packet>.<content type>``.

``media_bodies``: HTTP/1 responses whose body is, or is not, what its Content-Type says (the
packet list's Info names an image only when its magic bytes are there, as tshark does).

    python scripts/hostile/objects19_inputs.py OUTDIR
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from content_flow_inputs import TcpConn, write  # noqa: E402

TARGETS: list[bytes] = [
    b"/../../etc/passwd",
    b"/a/..%2f..%2fx",
    b"/\x1b[31mred",
    b"/nul\x00name.txt",
    b"/" + b"A" * 400 + b".txt",
    b"/..",
    b"/.",
    b"/dir/..",
    b"/del\x7f\x85z",
    b"/\xe2\x80\xaetxt.exe",
    b"/a\\b\\..\\c",
    b"/tab\there\rcr",
    b"/" + "\u00e9".encode() * 200 + b".txt",
    b"/" + "\u00e9".encode() * 10 + b"\xe2\x80\x8f.txt",
    b"http://evil/../../x/",
    b"/q?x=../../y",
    b"/CON",
]


def body(i: int) -> bytes:
    return b"BODY-%d\n" % i


def hostile_names(path, port: int = 80, content_type: bytes = b"text/plain") -> str:
    """One connection per target to ``port`` (80: tshark's HTTP port; another, e.g. 18931, is
    dissected as HTTP by tshark only when its heuristic sees a whole request line)."""
    pk: list[bytes] = []
    for i, t in enumerate(TARGETS):
        c = TcpConn(i + 1, sport=port).handshake()
        c.send(0, b"GET " + t + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        b = body(i)
        c.send(1, b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nContent-Type: %s\r\n\r\n" % (len(b), content_type) + b)
        pk += c.packets
    return write(path, pk, normal=False)


_PNG = (b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00\x90wS\xde"
        b"\x00\x00\x00\x00IEND\xaeB`\x82")
_GIF = b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x01D\x00;"
_JFIF = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00\xff\xd9"
# (Content-Type, body): bodies that are and are not what their type says (review 19, issue 3)
MEDIA = [
    (b"image/png", _PNG), (b"image/png", b"random bytes, not a PNG"), (b"IMAGE/PNG; charset=x", _PNG),
    (b"image/jpeg", _JFIF), (b"image/jpeg", b"\xff\xd8\xff\xe1\x00\x10Exif\x00\x00" + b"\x00" * 10 + b"\xff\xd9"),
    (b"image/jpeg", b"\xff\xd8\xff\xdb\x00\x43" + b"\x01" * 65 + b"\xff\xd9"), (b"image/jpeg", _JFIF[:19]),
    (b"image/jpeg", b"\xff\xd8\xff\xe0\x00\x10ABCD\x00" + b"\x00" * 12), (b"image/jpeg", b"not a jpeg at all"),
    (b"image/jpg", _JFIF), (b"image/gif", _GIF), (b"image/gif", b"GIF87a" + _GIF[6:]), (b"image/gif", b"GIF89a" + b"\x00" * 13),
    (b"image/gif", b"not a gif"), (b"application/json", b"\x00 not json"), (b"text/html", b"<p>"), (b"image/webp", b"RIFF"),
    (b"image/svg+xml", b"<svg/>"), (b"text/xml", b"<a/>"), (b"application/xhtml+xml", b"<a/>"),
    (b"application/ld+json", b"{}"), (b"multipart/form-data; boundary=x", b"--x--\r\n"), (b"image/x-icon", b"\x00\x00\x01\x00"),
    (b"application/octet-stream", b"x"), (b"font/woff2", b"wOF2"), (b"image/png", b""),
]


def media_bodies(path) -> str:
    """One response per ``MEDIA`` entry, each on its own connection to port 80, and a gzip'd PNG."""
    import gzip

    pk: list[bytes] = []
    for i, (ct, b) in enumerate(MEDIA + [(b"image/png", gzip.compress(_PNG))]):
        c = TcpConn(i + 1).handshake()
        c.send(0, b"GET /m%d HTTP/1.1\r\nHost: x\r\n\r\n" % i)
        coding = b"Content-Encoding: gzip\r\n" if i == len(MEDIA) else b""
        c.send(1, b"HTTP/1.1 200 OK\r\nContent-Type: %s\r\n%sContent-Length: %d\r\n\r\n" % (ct, coding, len(b)) + b)
        pk += c.packets
    return write(path, pk, normal=False)


def main(argv: list[str]) -> int:
    out = Path(argv[1] if len(argv) > 1 else ".")
    out.mkdir(parents=True, exist_ok=True)
    print(hostile_names(out / "objects19-names.pcap"))
    print(hostile_names(out / "objects19-names-18931.pcap", port=18931))
    print(media_bodies(out / "objects19-media.pcap"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
