"""`wirefall compare`'s per-request ttfb is the request's last byte to the response's first
(review 31, finding 2).

It ran from the request's first byte, so an upload's send time was counted in: amazon's POST
mp_verify read 105.2 ms in compare, 33.1 ms in `wirefall requests`' "ttfb ms" and the request
detail's "Waiting (TTFB)", and was set beside WebPageTest's HAR ``timings.wait`` (147 ms, send 0)
under the one name "ttfb".  Outside truth:

- the capture side: tshark's own frames — the client's frame that ends the request stream
  (HTTP/2: the HEADERS or DATA frame with END_STREAM; HTTP/3: the STREAM frame with FIN) and the
  server's first frame on that stream (HTTP/2: its first HEADERS, whose record's first TCP segment
  is the first response byte — tshark's ``tcp.segment``; HTTP/3: its first STREAM frame), their
  packets' ``frame.time_epoch``;
- the HAR side: WebPageTest's HAR entry's ``timings.wait`` (its run page_1_0_1 is this load).
"""
from __future__ import annotations

import gzip
import json
import subprocess
import sys
from decimal import Decimal

import pytest

from conftest import ROOT, SHARED, run_tool
from wirefall.analyzer.compare import REQUEST_NOTES, _side, compare, render_text
from wirefall.analyzer.model import Exchange
from wirefall.analyzer.pipeline import analyze

WPT_HAR = SHARED / "hars" / "webpagetest-amazon.har.gz"


def _fields(cap, keys, flt: str, *fields: str) -> list[list[str]]:
    out = run_tool("tshark", "-r", str(cap), "-o", f"tls.keylog_file:{keys}", "-Y", flt, "-T", "fields",
                   "-E", "separator=\t", "-E", "occurrence=a", "-E", "aggregator=,", *[x for f in fields for x in ("-e", f)])
    return [ln.split("\t") for ln in out.splitlines() if ln.strip()]


def _list(s: str) -> list[str]:
    return s.split(",") if s else []


def _h2_truth(cap, keys) -> dict[tuple[int, int], tuple[tuple[int, str], tuple[int, str]]]:
    """(client port, stream id) -> ((packet, time) of the client's END_STREAM frame, (packet,
    time) of the first response byte: the first segment of the record that holds the server's
    first HEADERS frame on the stream)."""
    rows = _fields(cap, keys, "http2", "frame.number", "frame.time_epoch", "tcp.srcport", "tcp.dstport", "http2.streamid",
                   "http2.type", "http2.flags", "tcp.segment")
    times = {int(r[0]): r[1] for r in _fields(cap, keys, "tcp", "frame.number", "frame.time_epoch")}
    end: dict[tuple[int, int], tuple[int, str]] = {}
    first: dict[tuple[int, int], tuple[int, str]] = {}
    for num, t, sport, dport, sids, types, flags, segs in rows:
        n, from_server = int(num), sport == "443"
        client = int(dport if from_server else sport)
        for k, (sid, typ, fl) in enumerate(zip(_list(sids), _list(types), _list(flags), strict=True)):
            key = (client, int(sid))
            if not from_server and typ in ("0", "1") and int(fl, 16) & 0x1:  # END_STREAM
                end.setdefault(key, (n, t))
            elif from_server and typ == "1" and key not in first:
                seg = [int(x) for x in _list(segs)]
                # the packet's first frame, in a record tshark reassembled: the record began in its
                # first segment (a later frame of the packet could be in a record begun here: none is)
                assert k == 0 or not seg, (n, sid)
                p = min(seg) if seg else n
                first[key] = (p, times[p])
    return {k: (end[k], first[k]) for k in end if k in first}


def _h3_truth(cap, keys) -> dict[tuple[int, int], tuple[tuple[int, str], tuple[int, str]]]:
    """(client port, stream id) -> ((packet, time) of the client's STREAM frame with FIN, (packet,
    time) of the server's first STREAM frame on the stream)."""
    rows = _fields(cap, keys, "quic.stream.stream_id", "frame.number", "frame.time_epoch", "udp.srcport", "udp.dstport",
                   "quic.stream.stream_id", "quic.stream.fin")
    end: dict[tuple[int, int], tuple[int, str]] = {}
    first: dict[tuple[int, int], tuple[int, str]] = {}
    for num, t, sport, dport, sids, fins in rows:
        from_server = sport == "443"
        client = int(dport if from_server else sport)
        for sid, fin in zip(_list(sids), _list(fins), strict=True):
            key = (client, int(sid))
            if from_server:
                first.setdefault(key, (int(num), t))
            elif fin in ("1", "True"):
                end.setdefault(key, (int(num), t))
    return {k: (end[k], first[k]) for k in end if k in first}


@pytest.fixture(scope="module")
def loads(amazon):
    cap, keys = amazon / "amazon1.cap", amazon / "amazon1.key_log.txt"
    a = analyze(str(cap), keylogs=[str(keys)])
    b = analyze(str(WPT_HAR))  # (its first page: run page_1_0_1, this load)
    return cap, keys, a, b, compare(a, b)


def test_capture_side_ttfb_is_last_request_byte_to_first_response_byte_as_tshark_shows(loads):
    cap, keys, a, _b, res = loads
    truth = {**_h2_truth(cap, keys), **_h3_truth(cap, keys)}
    conns = {c.id: c for c in a.connections}
    exs = {e.id: e for e in a.exchanges}
    assert len(res["matched"]) == 15 and not res["only_a"] and not res["only_b"]
    uploads = 0
    for m in res["matched"]:
        s = m["a"]
        e = exs[s["exchange"]]
        (req_pkt, req_t), (resp_pkt, resp_t) = truth[(conns[e.connection].client[1], e.stream_id)]
        # the packets wirefall times them by are tshark's
        assert (e.request_end_packet, e.response_start_packet) == (req_pkt, resp_pkt), m["url"]
        want = float(Decimal(resp_t) - Decimal(req_t))
        assert s["ttfb"] == pytest.approx(want, abs=1e-6), (m["url"], e.id, s["ttfb"], want)
        if e.request_end_packet != e.request_start_packet:
            uploads += 1  # (a request of several packets: the old rule counted its send time in)
            assert s["ttfb"] < e.response_start - e.request_start - 0.001
    assert uploads == 3  # the two POST mp_verify (h3) and the fls batch POST (h2)
    # the mp_verify of the review: packets 498 (FIN) and 515, 33.1 ms (compare said 105.2)
    (mp,) = [m for m in res["matched"] if exs[m["a"]["exchange"]].request_end_packet == 498]
    assert exs[mp["a"]["exchange"]].response_start_packet == 515 and round(1000 * mp["a"]["ttfb"], 1) == 33.1


def test_har_side_ttfb_is_the_entrys_timings_wait_and_diff_is_b_minus_a(loads):
    _cap, _keys, _a, b, res = loads
    har = json.loads(gzip.decompress(WPT_HAR.read_bytes()))["log"]["entries"]
    exs = {e.id: e for e in b.exchanges}
    for m in res["matched"]:
        e = exs[m["b"]["exchange"]]
        entry = har[int(e.browser["id"])]
        assert entry["pageref"] == "page_1_0_1" and entry["request"]["url"] == e.url == m["url"]
        assert m["b"]["ttfb"] == pytest.approx(entry["timings"]["wait"] / 1000, abs=1e-6), m["url"]
        assert m["diff"]["ttfb"] == pytest.approx(m["b"]["ttfb"] - m["a"]["ttfb"], abs=1e-9)
    posts = [m for m in res["matched"] if exs[m["b"]["exchange"]].method == "POST"]
    assert len(posts) == 3 and all(m["b"]["ttfb"] > 0.14 for m in posts)


def test_compare_text_and_requests_table_give_one_ttfb(loads):
    """The compare table's "ttfb A ms" is `wirefall requests`' "ttfb ms" of the same request, and
    the TUI's compare table reads the same value; the table says what ttfb is."""
    from wirefall.ui.tui.compare import REQUEST_COLUMNS, request_rows

    cap, keys, a, _b, res = loads
    r = subprocess.run([sys.executable, "-m", "wirefall", "requests", str(cap), "--keylog", str(keys)], capture_output=True,
                       text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    table = {int(ln.split()[0]): ln.split()[7] for ln in r.stdout.splitlines()[2:] if ln.strip()}
    text = render_text(res).splitlines()
    head = next(i for i, ln in enumerate(text) if ln.startswith("url ") and "ttfb A ms" in ln)
    rows = text[head + 2:head + 2 + len(res["matched"])]
    tui = request_rows(res)
    ta, tb = REQUEST_COLUMNS.index("ttfb A"), REQUEST_COLUMNS.index("ttfb B")
    for m, row, trow in zip(res["matched"], rows, tui, strict=True):
        cells = row.split()
        assert cells[3] == table[m["a"]["exchange"]] == f"{1000 * m['a']['ttfb']:.1f}", (m["url"], row)
        assert cells[4] == f"{1000 * m['b']['ttfb']:.1f}"
        assert float(trow[ta]) == pytest.approx(1000 * m["a"]["ttfb"], abs=0.05)
        assert float(trow[tb]) == pytest.approx(1000 * m["b"]["ttfb"], abs=0.05)
    assert text[head + 2 + len(res["matched"])] == REQUEST_NOTES[0]
    assert "request's last byte to the response's first" in REQUEST_NOTES[0] and "timings.wait" in REQUEST_NOTES[0]


def test_no_ttfb_without_the_requests_start():
    """A response whose request the capture does not show (a stream joined mid-way) has no ttfb
    (it read 0: its response's start stood for its request's)."""
    e = Exchange(id=1, connection=1, protocol="h2", stream_id=5, response_start=10.0, response_end=10.5)
    assert _side(e, 9.0)["ttfb"] is None
    # a server answering an upload early: from the request's first byte, never negative
    e = Exchange(id=2, connection=1, protocol="h2", stream_id=7, request_start=10.0, request_end=10.3, response_start=10.1,
                 response_end=10.4)
    assert _side(e, 9.0)["ttfb"] == pytest.approx(0.1)
    # a pushed response: from its promise
    e = Exchange(id=3, connection=1, protocol="h2", stream_id=2, pushed=True, request_start=10.0, request_end=10.0,
                 response_start=10.02, response_end=10.1)
    assert _side(e, 9.0)["ttfb"] == pytest.approx(0.02)
