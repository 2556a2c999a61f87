"""HPACK representations as the detail tree reads them from a header block (RFC 7541 s6), on the
RFC's own examples (Appendix C), and header values unescaped as glib's g_uri_unescape_string,
which tshark's ``[Unescaped: …]`` line calls.  The tree's lines themselves are compared with
tshark on real captures in tests/test_h2_tree34.py."""
from __future__ import annotations

import pytest

from wirefall.analyzer.protocols.http2 import _full_uri, _unescaped
from wirefall.dissectors.http2 import HPACK_REPR_WORDS, HpackRepr, hpack_representations

R = HpackRepr


@pytest.mark.parametrize("hexed, want", [
    # C.3.1 first request: three indexed fields, :authority literal with incremental indexing, name index 1
    ("828684410f7777772e6578616d706c652e636f6d", [(R.INDEXED, 2), (R.INDEXED, 6), (R.INDEXED, 4), (R.INCREMENTAL_INDEXED_NAME, 1)]),
    # C.3.2: a dynamic table entry (62) and cache-control (24)
    ("828684be58086e6f2d6361636865", [(R.INDEXED, 2), (R.INDEXED, 6), (R.INDEXED, 4), (R.INDEXED, 62),
                                      (R.INCREMENTAL_INDEXED_NAME, 24)]),
    # C.3.3: custom-key: custom-value, a new name
    ("828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565",
     [(R.INDEXED, 2), (R.INDEXED, 7), (R.INDEXED, 5), (R.INDEXED, 63), (R.INCREMENTAL_NEW_NAME, 0)]),
    ("040c2f73616d706c652f70617468", [(R.WITHOUT_INDEXED_NAME, 4)]),  # C.2.2
    ("100870617373776f726406736563726574", [(R.NEVER_NEW_NAME, 0)]),  # C.2.3
    ("3fe11f82", [(R.TABLE_SIZE_UPDATE, 4096), (R.INDEXED, 2)]),  # a size update (5-bit prefix, two more bytes), then :method GET
    ("14" + "03" + "616263", [(R.NEVER_INDEXED_NAME, 4)]),
    ("828684410f7777772e6578616d706c65", [(R.INDEXED, 2), (R.INDEXED, 6), (R.INDEXED, 4)]),  # cut inside the literal: stops before it
    ("", []),
])
def test_representations_of_rfc7541_blocks(hexed, want):
    got = hpack_representations(bytes.fromhex(hexed))
    assert [(k, v) for k, v, _s, _e in got] == want
    ends = [e for *_x, e in got]
    assert ends == sorted(ends) and all(s < e for _k, _v, s, e in got)
    assert all(k in HPACK_REPR_WORDS for k, *_ in got)


def test_representations_stop_at_their_budget_and_never_raise():
    assert len(hpack_representations(b"\x82" * 10_000)) == 4096
    long = hpack_representations(b"\xff" * 20)  # an integer that goes on: read to 64 bits at most, within the bytes
    assert all(e <= 20 for *_x, e in long) and len(long) <= 2
    assert hpack_representations(b"\x7f\xff\xff") == []


@pytest.mark.parametrize("value, want", [
    ("/index.html", "/index.html"),
    ("/a%20b", "/a b"),
    ("%E2%9C%93", "\u2713"),
    ("100%", None),  # a '%' without two hex digits: glib gives NULL, tshark no line
    ("%zz", None),
    ("%00", None),  # an escaped NUL
    ("%ff", "\ufffd"),  # bytes that are not UTF-8, as a label shows them
])
def test_unescaped_is_glibs(value, want):
    assert _unescaped(value) == want


def test_full_request_uri_is_tsharks():
    assert _full_uri([(":method", "GET"), (":scheme", "https"), (":authority", "a.example"), (":path", "/x")]) == "https://a.example/x"
    assert _full_uri([(":method", "CONNECT"), (":authority", "a.example:443")]) == "a.example:443"
    assert _full_uri([(":status", "200")]) is None
