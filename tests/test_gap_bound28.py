"""A body the capture lost bytes inside is a lower bound, even when its end was seen.

lossy/page-h2 (nginx → Chromium through the lab's loss relay) cut with ``editcap -r 1-300``
ends inside a TCP hole: a 16 KB TLS record of the server's, lost before packet 212, is only
retransmitted after the cut.  wirefall resynchronises HTTP/2 after the hole and finds
/js/vendor.js's (stream 15) later DATA frames, its END_STREAM among them, so the response read
"complete" at 65,293 bytes (no "≥") — its Content-Length is 89,869, and tshark on the whole
capture counts 89,869 bytes of DATA on stream 15.  A stream open across a hole
(``sessions.note_gap``) now counts as a lower bound at the end (``sessions.bound_gapped``)
unless its Content-Length says every byte was counted.  Found by the lab's review (session 28).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import need_tool, run_tool

from wirefall.analyzer.compare import response_state
from wirefall.analyzer.pipeline import analyze

ROOT = Path(__file__).resolve().parents[1]
LOSSY = ROOT / "sample_captures" / "lossy"
OOO = ("-o", "tcp.reassemble_out_of_order:TRUE")


def _tshark_data(cap: Path, keys: Path) -> dict[int, int]:
    """tshark's bytes of HTTP/2 DATA per stream (END_STREAM seen or not)."""
    need_tool("tshark")
    out = run_tool("tshark", "-r", str(cap), "-o", f"tls.keylog_file:{keys}", *OOO, "-Y", "http2.type == 0",
                   "-T", "fields", "-e", "http2.streamid", "-e", "http2.type", "-e", "http2.length")
    per: dict[int, int] = {}
    for line in out.splitlines():
        sids, types, lens = (x.split(",") for x in line.split("\t"))
        for s, t, n in zip(sids, types, lens):
            if t == "0":
                per[int(s)] = per.get(int(s), 0) + int(n)
    return per


def test_a_body_with_a_hole_in_it_is_a_lower_bound(tmp_path):
    need_tool("editcap")
    keys = LOSSY / "page-h2.keys"
    cut = tmp_path / "page-h2-1-300.pcapng"
    run_tool("editcap", "-r", str(LOSSY / "page-h2.pcapng"), str(cut), "1-300")
    whole = _tshark_data(LOSSY / "page-h2.pcapng", keys)
    assert whole[15] == 89_869
    an = analyze(str(cut), [str(keys)])
    vendor = next(e for e in an.exchanges if e.stream_id == 15)
    assert vendor.url.endswith("/js/vendor.js")
    assert vendor.response_end is not None  # (its END_STREAM came, after the hole)
    assert vendor.response_body_bytes < whole[15]
    assert (vendor.sources or {}).get("response_body_bytes") == "lower_bound"
    assert response_state(vendor) == "cut"
    # every response of the cut capture: complete only where its bytes are every byte the server sent
    for e in an.exchanges:
        if response_state(e) == "complete":
            assert e.response_body_bytes == whole[e.stream_id], e.url


@pytest.mark.parametrize("name", ["page-h1", "page-h2", "page-spdy"])
def test_holes_filled_later_bound_nothing(name):
    """The whole lossy captures: every hole is filled by a retransmission in the capture, so no
    body is a lower bound, and each HTTP/2 body is tshark's bytes of DATA."""
    an = analyze(str(LOSSY / f"{name}.pcapng"), [str(LOSSY / f"{name}.keys")])
    assert an.exchanges
    for e in an.exchanges:
        assert (e.sources or {}).get("response_body_bytes") != "lower_bound", e.url
        assert response_state(e) == "complete", e.url
    if name == "page-h2":
        theirs = _tshark_data(LOSSY / "page-h2.pcapng", LOSSY / "page-h2.keys")
        assert {e.stream_id: e.response_body_bytes for e in an.exchanges} == {s: n for s, n in theirs.items() if s % 2}
