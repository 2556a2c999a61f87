"""Performance work must not change output: the fast JSON writer against the standard
library's encoder (byte for byte), the analysis cache against a fresh analysis."""
from __future__ import annotations

import io
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.jsonout import dump, dumps

LEAF = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
KEYS = st.text() | st.integers() | st.floats(allow_nan=False) | st.booleans() | st.none()
TREE = st.recursive(LEAF, lambda ch: st.lists(ch) | st.tuples(ch, ch) | st.dictionaries(KEYS, ch), max_leaves=40)


def ref(x) -> str:
    return json.dumps(x, indent=1, ensure_ascii=False)


@settings(max_examples=400, deadline=None)
@given(TREE)
def test_dumps_is_json_dumps(x):
    assert dumps(x) == ref(x)


@settings(max_examples=100, deadline=None)
@given(st.lists(TREE))
def test_dump_streams_an_iterator_as_a_list(xs):
    f = io.StringIO()
    dump(iter(xs), f)
    assert f.getvalue() == ref(xs)
    f = io.StringIO()
    dump(xs, f)
    assert f.getvalue() == ref(xs)


def test_edge_values():
    cases = [[], {}, [[]], [{}], {"a": []}, float("nan"), float("inf"), -float("inf"), -0.0, 1e-7, 1e22, 10**30,
             "é\u2028\x00\"\\\ud800", {"k": [1, 2.5, None, True, {"z": [[]]}], 2.5: 3, None: 5}, [[[[[[[[[[1]]]]]]]]]] * 3]
    deep = cur = []
    for _ in range(100):  # deeper than the prebuilt indents
        cur.append([])
        cur = cur[0]
    cases.append(deep)
    for c in cases:
        assert dumps(c) == ref(c)


def test_unknown_type_raises_like_json():
    import pytest

    with pytest.raises(TypeError):
        dumps({"a": object()})
    with pytest.raises(TypeError):
        dumps({object(): 1})


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
    from analyzer.capture import read_capture
    from analyzer.packet import PROTO_TCP, Decoder, addr_str

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

    from dissectors.tls import RecordReader

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
