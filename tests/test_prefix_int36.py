"""One home for HPACK's prefixed integer (RFC 7541 s5.1), QPACK's too (RFC 9204 s4.1.1):
``dissectors.prefix_int`` for HTTP/2's header-block walks, HTTP/3's block bound and the
lenient QPACK decoder (three copies before session 36, one of which read on past 63 bits)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from wirefall.dissectors import http3, qpack_lenient
from wirefall.dissectors.http2 import HpackRepr, hpack_representations
from wirefall.dissectors.prefix_int import prefix_int

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts" / "hostile"))
import quic_inputs  # noqa: E402


def _encode(v: int, n: int, top: int = 0) -> bytes:
    """RFC 7541 s5.1's encoder: the hostile-input scripts' (C.1.1-C.1.3 below check it)."""
    return quic_inputs.qint(v, n, top)


@pytest.mark.parametrize(("raw", "n", "want"), [
    (bytes([0b01010]), 5, 10),  # RFC 7541 C.1.1
    (bytes([0b11111, 0b10011010, 0b00001010]), 5, 1337),  # C.1.2
    (bytes([0b00101010]), 8, 42),  # C.1.3
])
def test_rfc7541_examples(raw, n, want):
    assert prefix_int(raw, 0, n) == (want, len(raw))
    assert _encode(want, n) == raw


@pytest.mark.parametrize("n", range(1, 9))
@pytest.mark.parametrize("v", [0, 1, 30, 31, 127, 128, 254, 255, 256, 16383, 2**21, 2**40, 2**62 - 1])
def test_round_trip_and_offset(n, v):
    raw = b"\xaa" + _encode(v, n, top=(0xFF << n) & 0xFF) + b"\x55"  # (the bits above the prefix are not the value's)
    assert prefix_int(raw, 1, n) == (v, len(raw) - 1)
    assert http3._qint(raw, 1, n) == (v, len(raw) - 1)
    assert qpack_lenient._int(raw, 1, n) == (v, len(raw) - 1)


def test_cut_and_overlong():
    cut = bytes([0x1F, 0x80, 0x80])  # continuation bytes, then the end
    with pytest.raises(IndexError):
        prefix_int(cut, 0, 5)
    assert http3._qint(cut, 0, 5) is None
    assert http3._qint(b"", 0, 5) is None
    with pytest.raises(IndexError):
        qpack_lenient._int(cut, 0, 5)
    long = bytes([0x1F]) + b"\x80" * 20 + b"\x01"  # past 62 bits
    with pytest.raises(ValueError):
        prefix_int(long, 0, 5)
    with pytest.raises(ValueError):
        http3._qint(long, 0, 5)
    with pytest.raises(qpack_lenient.QpackError):  # (what the lenient decoder's callers catch)
        qpack_lenient._int(long, 0, 5)


def test_hpack_walk_stops_at_an_overlong_integer():
    """The representations before an integer past 62 bits, none from it (was: read on, with a
    value of hundreds of bits, as the index of the next one)."""
    block = bytes([0x82, 0x86]) + bytes([0xFF]) + b"\x80" * 12 + b"\x01" + bytes([0x84])
    reps = hpack_representations(block)
    assert [(r[0], r[1]) for r in reps] == [(HpackRepr.INDEXED, 2), (HpackRepr.INDEXED, 6)]
