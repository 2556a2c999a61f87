"""One home for QUIC's variable-length integer (RFC 9000 s16), HTTP/3's too:
``dissectors.quic_varint`` for the QUIC dissector's packet Length, HTTP/3's stream and frame
headers and SETTINGS, and the analyzer's QUIC header fields and tree, transport parameters and
protocol hierarchy (five hand-written readers before session 37).

Each caller keeps its contract on a cut integer (the bytes end inside it, or before it):
``dissectors.quic`` and ``analyzer.protocols.quic`` raise IndexError, ``dissectors.http3``'s
``_varint`` and ``analyzer.protocols.tls``'s ``_varint_at`` return None (``_varint_at`` gives the
integer's size, not the offset after it), ``analyzer.stats``'s ``_varint`` a huge value.  The
five readers as they were are kept below, and every caller is checked against its own."""
from __future__ import annotations

import pytest
from aioquic.buffer import encode_uint_var
from hypothesis import given
from hypothesis import strategies as st

from fuzz.profiles import fuzz_settings
from wirefall.analyzer import stats
from wirefall.analyzer.fields import quic as fields_quic
from wirefall.analyzer.protocols import http3 as proto_http3
from wirefall.analyzer.protocols import quic as proto_quic
from wirefall.analyzer.protocols import tls as proto_tls
from wirefall.dissectors import http3, quic
from wirefall.dissectors import quic_varint as home
from wirefall.dissectors.quic_varint import quic_varint

HUGE = 1 << 62
LENGTHS = (1, 2, 4, 8)
MAX = {1: 63, 2: 16383, 4: 2**30 - 1, 8: 2**62 - 1}


def _enc(v: int, n: int) -> bytes:
    """``v`` in ``n`` bytes (RFC 9000 s16: the length's base-2 logarithm in the top two bits;
    a longer encoding than ``v`` needs is allowed)."""
    return ((n.bit_length() - 1) << (8 * n - 2) | v).to_bytes(n, "big")


# ---------------------------------------------------------------- the five readers before session 37
def _old_dissector_quic(data, p):  # dissectors/quic.py
    b = data[p]
    ln = 1 << (b >> 6)
    v = b & 0x3F
    for i in range(1, ln):
        v = (v << 8) | data[p + i]
    if p + ln > len(data):
        raise IndexError("truncated variable-length integer")
    return v, p + ln


def _old_http3(buf, p):  # dissectors/http3.py
    if p >= len(buf):
        return None
    b = buf[p]
    ln = 1 << (b >> 6)
    if p + ln > len(buf):
        return None
    v = b & 0x3F
    for i in range(1, ln):
        v = (v << 8) | buf[p + i]
    return v, p + ln


def _old_protocols_quic(b, p):  # analyzer/protocols/quic.py
    if p >= len(b):
        raise IndexError
    n = 1 << (b[p] >> 6)
    if p + n > len(b):
        raise IndexError
    v = b[p] & 0x3F
    for i in range(1, n):
        v = v << 8 | b[p + i]
    return v, p + n


def _old_tls(d, i):  # analyzer/protocols/tls.py (it wrapped protocols.quic's)
    try:
        v, end = _old_protocols_quic(d, i)
    except IndexError:
        return None
    return v, end - i


def _old_stats(data, q):  # analyzer/stats.py
    if q >= len(data):
        return 1 << 62, q
    n = 1 << (data[q] >> 6)
    if q + n > len(data):
        return 1 << 62, q + n
    return int.from_bytes(data[q : q + n], "big") & ((1 << (8 * n - 2)) - 1), q + n


# (name, the reader now, the reader before)
READERS = [
    ("home", lambda b, p: quic_varint(b, p), _old_protocols_quic),
    ("dissectors.quic", lambda b, p: quic.quic_varint(b, p), _old_dissector_quic),
    ("dissectors.http3", lambda b, p: http3._varint(b, p), _old_http3),
    ("protocols.quic", lambda b, p: proto_quic._varint(b, p), _old_protocols_quic),
    ("protocols.tls", lambda b, p: proto_tls._varint_at(b, p), _old_tls),
    ("stats", lambda b, p: stats._varint(b, p), _old_stats),
]
TYPES = (bytes, bytearray, memoryview)


def _outcome(f, buf, p):
    try:
        return ("=", f(buf, p))
    except IndexError:
        return ("IndexError", None)


def _contract(name: str, buf: bytes, p: int, want: tuple[int, int] | None, n: int):
    """What reader ``name`` gives for the integer at ``p`` (``want``: value and offset after
    it; None where ``buf`` cuts it) whose first byte says it is ``n`` bytes long."""
    if name in ("home", "dissectors.quic", "protocols.quic"):
        return ("=", want) if want else ("IndexError", None)
    if name == "dissectors.http3":
        return ("=", want)
    if name == "protocols.tls":
        return ("=", (want[0], want[1] - p) if want else None)
    assert name == "stats"
    return ("=", want if want else (HUGE, p + n if p < len(buf) else p))


# ---------------------------------------------------------------- RFC 9000 Appendix A.1
A1 = [
    ("c2197c5eff14e88c", 151288809941952652),
    ("9d7f3e7d", 494878333),
    ("7bbd", 15293),
    ("25", 37),
    ("4025", 37),  # (a two-byte encoding of a one-byte value: read as it is)
]


@pytest.mark.parametrize(("hexa", "want"), A1)
@pytest.mark.parametrize("typ", TYPES)
def test_rfc9000_a1_examples(hexa, want, typ):
    raw = bytes.fromhex(hexa)
    for name, f, old in READERS:
        buf = typ(raw)
        got = _contract(name, raw, 0, (want, len(raw)), len(raw))
        assert _outcome(f, buf, 0) == got, name
        assert _outcome(old, buf, 0) == got, name  # (the examples agree with each old reader)
    # at an offset, bytes after it untouched
    raw2 = b"\xff" + raw + b"\xc0"
    assert quic_varint(typ(raw2), 1) == (want, 1 + len(raw))
    if len(raw) == len(encode_uint_var(want)):  # (aioquic writes the shortest encoding)
        assert encode_uint_var(want) == raw


# ---------------------------------------------------------------- every length, every cut
@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("typ", TYPES)
def test_every_length(n, typ):
    for v in sorted({0, 1, 37, MAX[n] // 3, MAX[n] - 1, MAX[n]}):
        raw = b"\xab" + _enc(v, n) + b"\x40\x00"  # (a byte before, an integer's first bytes after)
        for name, f, old in READERS:
            want = _contract(name, raw, 1, (v, 1 + n), n)
            assert _outcome(f, typ(raw), 1) == want, (name, v)
            assert _outcome(old, typ(raw), 1) == want, (name, v)
    if n < 8:  # (one more than the largest value a length holds: the next length)
        assert quic_varint(_enc(MAX[n] + 1, n * 2), 0) == (MAX[n] + 1, n * 2)


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("typ", TYPES)
def test_cut_at_every_length(n, typ):
    """The buffer ends k bytes into an n-byte integer (k = 0: right before it; and a start past
    the end): each caller's contract, as it was."""
    whole = b"\x07" + _enc(MAX[n] // 5, n)
    for k in range(n):
        raw = whole[: 1 + k]
        for p in (1, 2, 5) if k == 0 else (1,):
            for name, f, old in READERS:
                want = _contract(name, raw, p, None, n)
                assert _outcome(f, typ(raw), p) == want, (name, k, p)
                assert _outcome(old, typ(raw), p) == want, (name, k, p)
    with pytest.raises(IndexError):
        quic_varint(b"", 0)


@pytest.mark.parametrize("n", LENGTHS)
def test_cut_packet_length_is_a_malformed_header(n):
    """dissectors.quic: a long header whose Length the datagram cuts is a malformed header
    (IndexError, as before); a whole one is read."""
    head = bytes([0xE1]) + (1).to_bytes(4, "big") + bytes([8]) + bytes(range(8)) + bytes([0])  # Handshake, no SCID
    for k in range(n):
        qps = quic.QuicConnectionDissector().datagram(0, head + _enc(20, n)[:k], 1)
        assert [qp.error for qp in qps] == ["malformed packet header (IndexError)"], k
    qps = quic.QuicConnectionDissector().datagram(0, head + _enc(20, n) + bytes(20), 1)
    assert qps and qps[0].error != "malformed packet header (IndexError)" and qps[0].size == len(head) + n + 20


@fuzz_settings(300)
@given(st.binary(max_size=20), st.integers(0, 24), st.sampled_from(TYPES))
def test_same_as_before_on_any_bytes(raw, p, typ):
    """Every caller, on any bytes at any offset, gives what its own reader gave (values, offsets,
    None, the huge value, IndexError)."""
    for name, f, old in READERS:
        assert _outcome(f, typ(raw), p) == _outcome(old, typ(raw), p), name


# ---------------------------------------------------------------- every caller reads through the home
def _spy(monkeypatch, module, attr: str = "quic_varint") -> list:
    calls: list = []

    def spy(buf, p):
        calls.append(p)
        return quic_varint(buf, p)

    monkeypatch.setattr(module, attr, spy)
    return calls


def test_the_home_is_each_callers():
    assert home.quic_varint is quic_varint
    assert quic.quic_varint is quic_varint and not hasattr(quic, "_varint")
    assert http3.quic_varint is quic_varint
    # analyzer.protocols.quic's ``_varint`` is the home itself, under the name the QUIC and
    # HTTP/3 detail and fields import it by
    assert proto_quic._varint is quic_varint
    assert proto_http3._varint is quic_varint
    assert fields_quic._varint is quic_varint
    assert proto_tls.quic_varint is quic_varint
    assert stats.quic_varint is quic_varint


def test_dissector_quic_reads_the_length_through_the_home(monkeypatch):
    calls = _spy(monkeypatch, quic)
    head = bytes([0xE1]) + (1).to_bytes(4, "big") + bytes([8]) + bytes(range(8)) + bytes([0])
    quic.QuicConnectionDissector().datagram(0, head + _enc(20, 2) + bytes(20), 1)
    assert calls == [len(head)]


def test_dissector_http3_reads_through_the_home(monkeypatch):
    calls = _spy(monkeypatch, http3)
    settings = _enc(0x06, 1) + _enc(4096, 2) + _enc(0x21, 1) + _enc(7, 4)
    frame = _enc(4, 1) + _enc(len(settings), 1) + settings
    h = http3.Http3Dissector()
    out = list(h.stream_data(1, 3, _enc(0, 1) + frame[:1], 1) or [])  # (a frame header cut: waits)
    out += list(h.stream_data(1, 3, frame[1:], 2) or []) + list(h.out)
    (f,) = [f for f in out if f.type == "SETTINGS"]
    assert f.fields == {"MAX_FIELD_SECTION_SIZE": 4096, "GREASE_0x21": 7}
    assert len(calls) >= 1 + 2 + 4  # stream type, frame header, two settings
    assert http3._varint(b"\x40", 0) is None and http3._varint(b"", 0) is None


def test_protocols_quic_reads_through_the_home(monkeypatch):
    calls = _spy(monkeypatch, proto_quic, "_varint")
    head = bytes([0xE1]) + (1).to_bytes(4, "big") + bytes([8]) + bytes(range(8)) + bytes([0])
    assert len(proto_quic.parse_headers(head + _enc(20, 2) + bytes(20), None)) == 1
    assert calls == [len(head)]


def test_protocols_tls_reads_through_the_home(monkeypatch):
    calls = _spy(monkeypatch, proto_tls)
    assert proto_tls._varint_at(b"\x00\x9d\x7f\x3e\x7d", 1) == (494878333, 4)
    assert proto_tls._varint_at(b"\x00\x9d\x7f\x3e", 1) is None
    assert calls == [1, 1]


def test_stats_reads_through_the_home(monkeypatch):
    calls = _spy(monkeypatch, stats)
    assert stats._varint(b"\x00\x7b\xbd", 1) == (15293, 3)
    assert stats._varint(b"\x00\x7b", 1) == (HUGE, 3)
    assert stats._varint(b"\x00", 1) == (HUGE, 1)
    assert calls == [1, 1, 1]
