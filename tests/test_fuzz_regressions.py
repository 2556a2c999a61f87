"""Every failure the fuzzers found, kept as a test.

Inputs are real capture bytes with the mutation the fuzzer found (or the op list it
produced, see ``fuzz/corpus.py`` for the serialised form).  Bugs in files owned by a
helper still at work are ``xfail(strict=True)`` with the reason: they turn into failures
(XPASS) the moment the bug is fixed, so the marker gets removed.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fuzz import corpus  # noqa: E402

NGINX = ROOT / "sample_captures" / "http" / "http1-nginx.pcap"

# atheris, target http1, crash-cfa63019: a 103 Early Hints response, then a status line whose
# code is three U+00B3 (superscript three) bytes — str.isdigit() accepts them, int() does not.
H1_SUPERSCRIPT_STATUS = [
    (0, b"GET /early-hints HTTP/1.1\r\nHost: 127.0.0.1:18086\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\n\r\n"),
    (1, b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload; as=style\r\n\r\n"),
    (1, b"HTTP/1.1 \xb3\xb3\xb3\xb3\xb3\xb3\xb3\xb3200 OK\rET /index.html HTTP/1.1\r\nhost: 127.0: chunked\r\n\r\n"
        b"a\r\nafter 103'\n\r\n0\r\n\r\n"),
]


def test_http1_status_of_superscript_digits_dissector():
    from wirefall.dissectors.http1 import H1Connection

    c = H1Connection()
    out = []
    for i, (d, data) in enumerate(H1_SUPERSCRIPT_STATUS, 1):
        out += c.receive(d & 1, data, i)  # must not raise
    heads = [e for e in out if type(e).__name__ == "H1Head" and e.direction == 1]
    assert all(h.status is None or 100 <= h.status <= 999 for h in heads)
    assert any("bad status line" in n for n in c.notes)  # the bad status line is reported with its packet


def _nginx_with_status(code: bytes) -> tuple[bytes, int]:
    raw = NGINX.read_bytes()
    i = raw.find(b"HTTP/1.1 200")
    assert i > 0
    return raw[: i + 9] + code + raw[i + 12 :], i


@pytest.mark.skipif(not NGINX.exists(), reason="sample capture missing")
def test_http1_status_of_superscript_digits_pipeline():
    """Through the whole pipeline the same bad status line (edited into a real nginx capture)
    stops only that connection: earlier frames are kept, the note says where and why, and the
    other connections of the capture decode as in the intact file."""
    intact = corpus.analyze_bytes(NGINX.read_bytes())
    damaged_bytes, _ = _nginx_with_status(b"\xb3\xb3\xb3")
    an = corpus.analyze_bytes(damaged_bytes)
    notes = [(c.id, n) for c in an.connections for n in c.notes]
    bad = {cid for cid, _ in notes}
    assert notes and all(n.startswith("packet ") for _, n in notes), notes
    # frames of the damaged connection before the bad response are all there
    first_bad_packet = min(int(n.split()[1].rstrip(":")) for _, n in notes)
    want = [(f.packet, f.type, f.headers) for f in intact.frames if f.packet < first_bad_packet]
    got = [(f.packet, f.type, f.headers) for f in an.frames if f.packet < first_bad_packet]
    assert want and got == want
    # the other connections are untouched
    other_want = [(f.packet, f.type, f.headers) for f in intact.frames if f.connection not in bad]
    other_got = [(f.packet, f.type, f.headers) for f in an.frames if f.connection not in bad]
    assert other_got == other_want


def test_h2c_server_settings_kept_when_capture_ends_before_client_preface():
    cap = ROOT / "sample_captures" / "http" / "h2c-curl.pcap"
    raw = cap.read_bytes()
    offs = corpus.record_offsets(raw)
    full = corpus.analyze_bytes(raw)
    cut = corpus.analyze_bytes(raw[: offs[4]])  # packets 1-4: handshake + server SETTINGS
    want = [(f.packet, f.type) for f in full.frames if f.packet <= 4]
    assert want == [(4, "SETTINGS")]
    assert [(f.packet, f.type) for f in cut.frames] == want


def test_quic_tls_message_completes_where_tshark_shows_it():
    """Found by test_nothing_lost_truncated: Chrome sends its ClientHello's CRYPTO frames out
    of order across two datagrams; the message is complete only with the second one, which
    is where tshark shows it — it used to be stamped with the first (and a capture cut after
    packet 1 then 'lost' a frame that had never been decodable)."""
    import shutil
    import subprocess

    cap = ROOT / "sample_captures" / "page" / "page-h3.pcapng"
    keys = ROOT / "sample_captures" / "page" / "page-h3.keys"
    if not cap.exists() or not shutil.which("tshark"):
        pytest.skip("page-h3 sample or tshark missing")
    raw = corpus.head_packets(cap.read_bytes(), 40)
    an = corpus.analyze_bytes(raw, keys.read_text())
    out = subprocess.run(["tshark", "-r", str(cap), "-o", f"tls.keylog_file:{keys}", "-c", "40", "-Y", "tls.handshake.type",
                          "-T", "fields", "-e", "frame.number", "-e", "tls.handshake.type"], capture_output=True, text=True, timeout=120).stdout
    want = []
    for line in out.splitlines():
        num, types = line.split("\t")
        want += [(int(num), int(t)) for t in types.split(",")]
    names = {1: "ClientHello", 2: "ServerHello", 8: "EncryptedExtensions", 11: "Certificate", 15: "CertificateVerify", 20: "Finished", 4: "NewSessionTicket"}
    got = [(f.packet, f.fields["messages"][0]) for f in an.frames if f.protocol == "tls" and f.type == "HANDSHAKE"]
    assert want and got[: len(want)] == [(p, names[t]) for p, t in want]


def _epb_offsets(raw: bytes) -> list[int]:
    import struct

    offs, p = [], 0
    while p + 12 <= len(raw):
        btype, blen = struct.unpack_from("<II", raw, p)
        if btype == 6:
            offs.append(p)
        p += blen
    return offs


H3_PCAPNG = ROOT / "sample_captures" / "page" / "page-h3.pcapng"


@pytest.mark.skipif(not H3_PCAPNG.exists(), reason="sample capture missing")
def test_pcapng_packet_naming_an_undeclared_interface_above_16_bits():
    """atheris, target pipeline, crash-2df0f42c: an Enhanced Packet Block whose interface id
    (196608) no IDB declared overflowed the packet index's 16-bit interface column."""
    import struct

    raw = bytearray(corpus.head_packets(H3_PCAPNG.read_bytes(), 10))
    assert raw[8:12] == b"\x4d\x3c\x2b\x1a"  # little-endian section
    first = _epb_offsets(bytes(raw))[0]
    struct.pack_into("<I", raw, first + 8, 196608)
    an = corpus.analyze_bytes(bytes(raw))
    intact = corpus.analyze_bytes(corpus.head_packets(H3_PCAPNG.read_bytes(), 10))
    assert len(an.index.ts) == len(intact.index.ts) == 10
    assert any("unknown interface 196608" in w for w in an.warnings)
    assert list(an.index.ts)[1:] == list(intact.index.ts)[1:]


@pytest.mark.skipif(not H3_PCAPNG.exists(), reason="sample capture missing")
def test_pcapng_block_shorter_than_its_header():
    """A block length under the EPB header size made the captured length negative.  It is
    not a packet (tshark: "total block length 20 of an EPB is less than the minimum EPB size
    32", and it stops there): skipped by its length with a warning; the rest of the old block
    follows as garbage, reported, not raised."""
    import struct

    raw = bytearray(corpus.head_packets(H3_PCAPNG.read_bytes(), 10))
    first = _epb_offsets(bytes(raw))[0]
    blen = struct.unpack_from("<I", raw, first + 4)[0]
    struct.pack_into("<I", raw, first + 4, 20)
    an = corpus.analyze_bytes(bytes(raw))
    assert len(an.index.ts) == 0
    assert "is 20 bytes, shorter than its fixed fields (32); skipped" in an.warnings[0]
    assert len(an.warnings) >= 2  # and the garbage after it
    assert blen > 20


def test_damaged_length_field_does_not_allocate_what_it_claims(tmp_path):
    """hypothesis, test_fuzz_capture_reader: zero bytes inserted after a pcap header shifted
    the records, and one record header then claimed a 64 MiB packet (the largest accepted).
    Reading it made ``read()`` allocate the whole 64 MiB before the end of the 10 KB file was
    found: 67 MB traced for one input. Reads are now at most 4 MiB at a time."""
    import struct
    import tracemalloc

    from wirefall.analyzer.capture import CaptureInfo, read_capture

    raw = NGINX.read_bytes()
    blob = raw[:24] + struct.pack("<IIII", 0, 0, 0x3FFFFF0, 0x3FFFFF0) + raw[24:]  # claims 64 MiB - 16
    path = tmp_path / "claims.pcap"
    path.write_bytes(blob)
    info = CaptureInfo()
    tracemalloc.start()
    try:
        n = sum(1 for _ in read_capture(str(path), info))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert n == 0 and any("64 MiB" in w or "expected" in w for w in info.warnings), info.warnings
    assert peak < 16 << 20, peak
