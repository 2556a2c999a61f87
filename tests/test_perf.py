"""Performance work must not change output: the JSON writer against the standard library's
encoder (the same values back from ``json.loads``, the same layout as ``json.dumps(indent=2,
ensure_ascii=False)``; docs/JSON.md "Layout"), the analysis cache against a fresh analysis."""
from __future__ import annotations

import io
import json
import math
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from wirefall.analyzer.jsonout import dump, dumps

FLOATS = st.floats(allow_nan=False, allow_infinity=False)
LEAF = st.none() | st.booleans() | st.integers() | FLOATS | st.text()
KEYS = st.text() | st.integers() | FLOATS | st.booleans() | st.none()
TREE = st.recursive(LEAF, lambda ch: st.lists(ch) | st.tuples(ch, ch) | st.dictionaries(KEYS, ch), max_leaves=40)
NOFLOAT = st.recursive(st.none() | st.booleans() | st.integers(-2**63, 2**64 - 1) | st.text(),
                       lambda ch: st.lists(ch) | st.tuples(ch, ch) | st.dictionaries(st.text(), ch), max_leaves=40)


def ref(x) -> str:
    return json.dumps(x, indent=2, ensure_ascii=False)


def same_values(text: str, x) -> bool:
    """``json.loads`` of the writer's text equals that of the standard library's (the
    contract: field names and values, not whitespace), floats bit for bit."""
    a, b = json.loads(text), json.loads(ref(x))
    return a == b and repr(a) == repr(b)


@settings(max_examples=400, deadline=None)
@given(TREE)
def test_dumps_gives_the_values_of_json_dumps(x):
    assert same_values(dumps(x), x)


@settings(max_examples=300, deadline=None)
@given(NOFLOAT)
def test_dumps_layout_is_json_dumps_indent_2(x):
    assert dumps(x) == ref(x)


@settings(max_examples=100, deadline=None)
@given(st.lists(NOFLOAT))
def test_dump_streams_an_iterator_as_a_list(xs):
    import wirefall.analyzer.jsonout as jo

    old = jo._BATCH
    jo._BATCH = 3  # several batches, joined into one document
    try:
        for obj in (iter(xs), xs):
            f = io.StringIO()
            dump(obj, f)
            assert f.getvalue() == ref(xs)
            b = io.BytesIO()
            dump(obj if isinstance(obj, list) else iter(xs), b)
            assert b.getvalue().decode() == ref(xs)
    finally:
        jo._BATCH = old


def test_edge_values():
    cases = [[], {}, [[]], [{}], {"a": []}, -0.0, 1e-7, 1e22, 5e-324, 1.7976931348623157e308, 10**30, -(10**30), 2**64, -(2**63) - 1,
             "é\u2028\x00\"\\", {"k": [1, 2.5, None, True, {"z": [[]]}], 2.5: 3, None: 5, 7: 8, True: 9},
             [[[[[[[[[[1]]]]]]]]]] * 3, [1700000000.123456, 0.1 + 0.2, 1 / 3]]
    deep = cur = []
    for _ in range(100):  # nesting deeper than any prebuilt indent
        cur.append([])
        cur = cur[0]
    cases.append(deep)
    for c in cases:
        assert same_values(dumps(c), c), c
        # the layout too, but for the exponent's leading zero (orjson 1e-7, the stdlib 1e-07)
        assert _exp(dumps(c)) == _exp(ref(c)), c


def _exp(text: str) -> str:
    return re.sub(r"(\d)e([+-]?)0+(\d)", r"\1e\2\3", text)


def test_not_json_numbers_are_null():
    """NaN and the infinities are not JSON; the writer gives null (the model has none)."""
    for v in (math.nan, math.inf, -math.inf):
        assert json.loads(dumps([v])) == [None]


def test_unknown_type_raises_like_json():
    import pytest

    with pytest.raises(TypeError):
        dumps({"a": object()})
    with pytest.raises(TypeError):
        dumps({object(): 1})
    with pytest.raises(TypeError):
        dumps({"a": b"bytes"})


# -- the packet decoder's fast path against tshark -----------------------------------------
import shutil  # noqa: E402
import subprocess  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(not shutil.which("tshark"), reason="tshark missing")
@pytest.mark.parametrize("cap", ["sample_captures/http/h2-tls.pcap", "sample_captures/quic/aioquic-h3.pcap",
                                 "sample_captures/http/http1-nginx.pcap", "sample_captures/link-sll.pcap"])
def test_decoder_matches_tshark(cap):
    """Addresses, ports, TCP sequence/ack numbers and payload lengths of every packet as tshark
    reads them (the Ethernet/IPv4 fast path and the general path alike)."""
    from wirefall.analyzer.capture import read_capture
    from wirefall.analyzer.packet import PROTO_TCP, Decoder, addr_str

    out = subprocess.run(["tshark", "-r", str(ROOT / cap), "-T", "fields", "-E", "separator=|", "-e", "frame.number", "-e", "ip.src",
                          "-e", "ip.dst", "-e", "tcp.srcport", "-e", "tcp.dstport", "-e", "tcp.seq_raw", "-e", "tcp.ack_raw",
                          "-e", "tcp.len", "-e", "udp.srcport", "-e", "udp.dstport", "-e", "udp.length", "-e", "ipv6.src"],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    dec = Decoder()
    recs = list(read_capture(str(ROOT / cap)))
    assert len(recs) == len(out) > 10
    checked = 0
    for rec, line in zip(recs, out):
        num, src, dst, tsp, tdp, seq, ack, tlen, usp, udp_, ulen, v6src = line.split("|")
        d = dec.decode(rec.linktype, rec.data)
        if not src or d is None or type(d) is str:
            continue
        assert (addr_str(d.src), addr_str(d.dst)) == (src, dst), num
        if d.proto == PROTO_TCP:
            assert (d.sport, d.dport, d.seq, d.ack, len(d.payload)) == (int(tsp), int(tdp), int(seq), int(ack), int(tlen)), num
        else:
            assert (d.sport, d.dport, len(d.payload)) == (int(usp), int(udp_), int(ulen) - 8), num
        checked += 1
    assert checked >= len(out) // 2


# -- TLS record reader: buffering an incomplete record must not change what is read -------
@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([20, 21, 22, 23, 24]), st.integers(0, 3000)), min_size=1, max_size=12),
       st.lists(st.integers(1, 2000), min_size=1, max_size=40), st.integers(0, 2**31))
def test_tls_records_do_not_depend_on_segmentation(recs, cuts, seed):
    import random

    from wirefall.dissectors.tls import RecordReader

    stream = b"".join(bytes([t, 3, 3, n >> 8, n & 0xFF]) + random.Random(seed + i).randbytes(n) for i, (t, n) in enumerate(recs))

    def read(chunks):
        r = RecordReader()
        out, off = [], 0
        for pkt, c in enumerate(chunks, 1):
            out += [(x.type, x.version, bytes(x.body), x.offset, x.packet) for x in r.feed(c, off, pkt)]
            off += len(c)
        return out, r.error, r.skipped

    pieces, pos, i = [], 0, 0
    while pos < len(stream):
        n = cuts[i % len(cuts)]
        pieces.append(stream[pos : pos + n])
        pos += n
        i += 1
    whole, err, skipped = read([stream])
    chopped, err2, skipped2 = read(pieces)
    assert [r[:4] for r in chopped] == [r[:4] for r in whole]
    assert (err, skipped) == (err2, skipped2)
    # each record completes in the piece holding its last byte
    ends = []
    pos = 0
    for _k, p in enumerate(pieces, 1):
        pos += len(p)
        ends.append(pos)
    for _typ, _ver, body, off, pkt in chopped:
        last = off + 5 + len(body) - 1
        assert pkt == next(k for k, e in enumerate(ends, 1) if e > last)


# -- issue 24: less work per request, the same results -------------------------------------
CODINGS = st.sampled_from([None, "", "identity", " Identity ", "gzip", "br", "gzip, identity", "identity, identity", ",", " , ",
                           "x-custom", "IDENTITY,", "deflate, br"])


@settings(max_examples=200, deadline=None)
@given(CODINGS | st.text(max_size=12), st.lists(st.binary(min_size=1, max_size=300), max_size=6))
def test_identity_body_is_a_body_decoder_without_coding(ce, chunks):
    """HTTP/2 counts a body without a content coding with ``IdentityBody``: the same decoded
    size, notes and errors as the BodyDecoder it replaces (whose own parsing of the value
    decides which bodies need one)."""
    from wirefall.analyzer.content import BodyDecoder
    from wirefall.analyzer.model import Connection, Exchange
    from wirefall.analyzer.sessions import IdentityBody, finish_body, needs_decoder

    ref = BodyDecoder(ce)
    assert needs_decoder(ce) == bool(ref.codings)
    if needs_decoder(ce):
        return
    ib = IdentityBody()
    for c in chunks:
        ref.feed(c)
        ib.feed(c)
    outs = []
    for body in (ref, ib):
        conn = Connection(id=0, transport="tcp", client=("a", 1), server=("b", 2), start=0.0, first_packet=1)
        ex = Exchange(id=1, connection=0, protocol="h2", stream_id=1)
        finish_body(conn, ex, body)
        outs.append((ex.response_body_decoded_bytes, ex.error, conn.notes))
    assert outs[0] == outs[1] == (sum(map(len, chunks)), None, [])


def _unshared(an):
    """The analysis with every exchange's header lists copied (no list shared between
    exchanges): what the memos keyed by a shared list must not change."""
    import copy

    an2 = copy.copy(an)
    an2.exchanges = [copy.copy(e) for e in an.exchanges]
    for e in an2.exchanges:
        e.request_headers = list(e.request_headers)
        e.response_headers = list(e.response_headers)
    return an2


@pytest.mark.parametrize("cap,keys", [("sample_captures/page/page-h2.pcapng", "sample_captures/page/page-h2.keys"),
                                      ("sample_captures/http/h2-tls.pcap", "sample_captures/http/h2-tls.keys")])
def test_page_and_phases_do_not_depend_on_shared_header_lists(cap, keys):
    """page_of and phases_dicts read each shared header list once (the decoder shares one list
    between identical blocks); the page, its background reasons and every exchange's phases
    are those of the same exchanges with private lists, and phases_dicts gives
    waterfall.phase_totals' values exactly (the phases add up to the total)."""
    from wirefall.analyzer.jsonout import phases_dicts
    from wirefall.analyzer.pipeline import analyze
    from wirefall.analyzer.waterfall import PHASES, page_of, phase_totals, phases_by_exchange

    an = analyze(str(ROOT / cap), keylogs=[str(ROOT / keys)])
    assert len(an.exchanges) >= 2
    # the samples' blocks all differ: share them as a request-heavy capture's decoder does
    # (the odd exchanges take their predecessor's lists), against private copies of the same
    sh = _unshared(an)
    for a, b in zip(sh.exchanges[::2], sh.exchanges[1::2]):
        b.request_headers, b.response_headers = a.request_headers, a.response_headers
        b.content_type = a.content_type
    assert any(a.request_headers is b.request_headers for a, b in zip(sh.exchanges, sh.exchanges[1:]))
    for x in (an, sh):
        p1, p2 = page_of(x), page_of(_unshared(x))
        assert (p1.document, p1.redirects, p1.origins, p1.background, p1.start, p1.end) == \
            (p2.document, p2.redirects, p2.origins, p2.background, p2.start, p2.end)
    got = phases_dicts(an)
    for eid, ph in phases_by_exchange(an).items():
        tot = phase_totals(ph)
        want = {"start": tot["start"], "end": tot["end"], "total": tot["total"] / 1e6,
                **{n: None if tot[n] is None else tot[n] / 1e6 for n in PHASES}}
        assert list(got[eid].items()) == list(want.items())
        known = [v for n, v in got[eid].items() if n in PHASES and v is not None]
        assert abs(sum(known) - got[eid]["total"]) < 1e-9


def test_requests_without_a_filter_does_not_load_the_filter_module():
    """``requests``/``frames`` without -Y do not import the display-filter module and its
    field registry (a third of the start-up of a small capture), and list the same as with
    an empty filter compiled by it."""
    import os
    import sys

    cap, keys = ROOT / "sample_captures/http/h2-tls.pcap", ROOT / "sample_captures/http/h2-tls.keys"
    code = ("import sys, io, contextlib\n"
            "from wirefall.ui.cli import main\n"
            "out = io.StringIO()\n"
            "with contextlib.redirect_stdout(out):\n"
            f"    main([sys.argv[1], {str(cap)!r}, '--keylog', {str(keys)!r}, '--json', '-j', '1'])\n"
            "loaded = 'wirefall.analyzer.filter' in sys.modules\n"
            "from wirefall.analyzer.filter import compile_filter\n"
            "import json\n"
            "print(json.dumps([loaded, json.loads(out.getvalue())]))\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for cmd, everything in (("requests", "stream >= 0"), ("frames", "frame")):  # (h2-tls: every exchange has a stream)
        res = subprocess.run([sys.executable, "-c", code, cmd], capture_output=True, text=True, env=env, check=True, timeout=120)
        loaded, listed = json.loads(res.stdout)
        assert loaded is False
        full = subprocess.run([sys.executable, "-m", "wirefall", cmd, str(cap), "--keylog", str(keys), "--json", "-j", "1",
                               "-Y", everything], capture_output=True, text=True, env=env, check=True, timeout=120)
        assert len(listed) > 5
        assert listed == json.loads(full.stdout)  # (the same list as every item through the compiled filter)
