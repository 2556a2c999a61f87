"""``wirefall export`` writes its HAR and its HTML page as they are made (review 29):
``analyzer.export.har_stream`` makes each HAR entry when the writer asks for it, and
``ui.figures.html_chunks`` writes plotly's page around placeholders, each filled with its JSON
in pieces.  The files are the ones the whole documents gave, byte for byte: the HAR the
non-streamed ``har()`` dict written by the same writer (and valid HAR 1.2, its requests
tshark's), the page plotly's own ``Figure.to_html`` with the title the export puts in.  Before,
63 k requests (benchmarks/corpus/h2-requests.pcap) took 488 MB over the analysis for the HAR
(dicts of every entry, ~8 KB a request) and 621 MB for the page (plotly's JSON as one str and
five copies of the page); now the HAR adds nothing over its waterfall (~3 KB a row) and the
page the figure itself."""
from __future__ import annotations

import json
import uuid
from collections import Counter
from pathlib import Path

import pytest

from export_memory import export_peak
from conftest import SAMPLES, analysed, run_tool, sample_captures

from wirefall.analyzer import export as ex
from wirefall.analyzer.waterfall import build

SCHEMA = json.loads((Path(__file__).parent / "data" / "har-1.2.schema.json").read_text())


CAPTURES = sample_captures()
_an = analysed


# ------------------------------------------------------------------------------------ HAR


@pytest.mark.parametrize("batch", [ex._BATCH, 3])
@pytest.mark.parametrize("cap,keys", CAPTURES, ids=[str(p.relative_to(SAMPLES)) for p, _ in CAPTURES])
def test_streamed_har_is_the_whole_documents_bytes(cap, keys, batch, tmp_path, monkeypatch):
    """The exported file is, byte for byte, the writer's text of ``har()``'s whole dict (the
    former export), with and without --include-sensitive, in batches of 3 too (entries
    made across many encoder calls; a capture of at most 16 entries takes the element-by-element
    layout, one with none ``[]``); it is valid HAR 1.2 (tests/data/har-1.2.schema.json, written
    from the specification) with every exchange in it once."""
    monkeypatch.setattr(ex, "_BATCH", batch)
    an = _an(cap, keys)
    for sens in (False, True):
        out = tmp_path / f"x{sens}.har"
        ex.export(an, str(out), include_sensitive=sens)
        whole = ex.har(an, include_sensitive=sens)
        assert isinstance(whole["log"]["entries"], list)
        assert out.read_bytes() == b"".join(ex.json_chunks(whole))
        doc = json.loads(out.read_bytes())
        assert doc == json.loads(json.dumps(whole, ensure_ascii=False))
    jsonschema = pytest.importorskip("jsonschema")
    errors = list(jsonschema.Draft7Validator(SCHEMA).iter_errors(doc))
    assert not errors, [f"{list(e.absolute_path)}: {e.message[:200]}" for e in errors[:5]]
    log = doc["log"]
    assert [e["startedDateTime"] for e in log["entries"]] == sorted(e["startedDateTime"] for e in log["entries"])
    assert sorted([e["_exchange"] for e in log["entries"]] + [o["_exchange"] for o in log["_orphans"]]) == sorted(e.id for e in an.exchanges)


def test_har_entries_are_tsharks_http2_requests(tmp_path):
    """Each HTTP/2 request tshark decodes in page-h2 (stream id, method, path of its HEADERS)
    is one entry of the streamed HAR, and no entry is any other."""
    cap, keys = SAMPLES / "page" / "page-h2.pcapng", SAMPLES / "page" / "page-h2.keys"
    text = run_tool("tshark", "-r", str(cap), "-o", f"tls.keylog_file:{keys}", "-Y", "http2.headers.method", "-T", "fields",
                    "-E", "occurrence=a", "-E", "aggregator=|", "-e", "http2.streamid", "-e", "http2.headers.method",
                    "-e", "http2.headers.path")
    want: Counter = Counter()
    for ln in text.splitlines():
        sids, methods, paths = (f.split("|") for f in ln.split("\t"))
        sids = [s for s in sids if s != "0"]  # (the connection's own frames in the same packet)
        assert len(sids) == len(methods) == len(paths), ln
        want.update(zip(map(int, sids), methods, paths))
    assert sum(want.values()) >= 10
    out = tmp_path / "x.har"
    ex.export(_an(cap, [str(keys)]), str(out))
    got = Counter((e["_stream_id"], e["request"]["method"], "/" + e["request"]["url"].split("/", 3)[3])
                  for e in json.loads(out.read_bytes())["log"]["entries"])
    assert got == want


def test_entries_are_made_as_they_are_written(monkeypatch):
    """While the HAR is written, the entries made but not yet written are at most a batch and
    the writer's look-ahead (``_FEW`` + 1), whatever their number: each entry's dict is made
    when the writer asks for it (the former export made every entry before writing the first
    byte).  Entries made are counted by their header lists (``_headers``: two per entry)."""
    monkeypatch.setattr(ex, "_BATCH", 4)
    an = _an(SAMPLES / "quic" / "page-multi-late.pcapng", [str(SAMPLES / "quic" / "page-multi-late.keys")])
    made = [0]
    real = ex._headers

    def counting(hs, include_sensitive):
        made[0] += 1
        return real(hs, include_sensitive)

    monkeypatch.setattr(ex, "_headers", counting)
    doc = ex.har_stream(an)
    assert made[0] == 0  # (nothing made yet: the order alone is known)
    written = b""
    ahead = 0
    for piece in ex.json_chunks(doc):
        written += piece
        ahead = max(ahead, made[0] // 2 - written.count(b'"_exchange": '))
    n = len(an.exchanges)
    assert made[0] // 2 >= n - 5 > 40  # (every entry made once; a few exchanges have no row, hence no headers)
    assert 0 < ahead <= ex._BATCH + ex._FEW + 1, ahead


def test_a_generator_is_written_as_the_list_it_gives():
    """``json_chunks`` of a generator: the text of the list it yields, in each layout (empty,
    ≤ ``_FEW`` containers, many, leaves), at every nesting level it streams."""
    cases = [[], [{"a": 1}], [{"a": [1, 2]}] * 16, [{"a": i, "b": [i, "é"]} for i in range(600)], list(range(700)), ["x"] * 3]
    for xs in cases:
        for wrap in (lambda g: g, lambda g: {"log": {"entries": g}}, lambda g: {"a": {"b": {"c": g}}}):
            want = json.dumps(wrap(list(xs)), indent=2, ensure_ascii=False).encode()
            assert b"".join(ex.json_chunks(wrap(x for x in xs))) == want


# ----------------------------------------------------------------------------------- HTML


def _former_html_document(fig, title=None) -> bytes:
    """ui.figures.html_document before review 29 (plotly's whole page, then its title)."""
    import html as _html
    import re

    text = fig.to_html(full_html=True, include_plotlyjs=True, config={"displaylogo": False, "responsive": True})
    if title is None:
        t = getattr(getattr(fig.layout, "title", None), "text", None)
        title = _html.unescape(re.sub(r"<[^>]*>", "", t)) if isinstance(t, str) else None
    head = f"<title>{_html.escape('wirefall — ' + title if title else 'wirefall')}</title>"
    head += "<style>html,body{margin:0}</style>"
    text = text.replace("</head>", head + "</head>", 1) if "</head>" in text else head + text
    return text.encode("utf-8")


HTML_CAPTURES = [("page/page-h2.pcapng", "page/page-h2.keys"), ("quic/page-multi-late.pcapng", "quic/page-multi-late.keys"),
                 ("page/bg-mixed.pcapng", "page/bg-mixed.keys"), ("tls/tls13_0rtt.pcap", None)]


@pytest.mark.parametrize("cap,keys", HTML_CAPTURES, ids=[c for c, _ in HTML_CAPTURES])
def test_html_page_is_plotlys_page(cap, keys, tmp_path, monkeypatch):
    """The page written in pieces is plotly's ``to_html`` page with the export's title, byte
    for byte (plotly's random div id fixed): the figure's bars as traces and as path shapes
    (``big``), with and without hover texts; and ``wirefall export -o x.html`` writes it."""
    pytest.importorskip("plotly")
    import plotly.io._html as plotly_html

    from wirefall.ui import figures
    from wirefall.ui.exports import export

    fixed = uuid.UUID(int=29)
    monkeypatch.setattr(plotly_html.uuid, "uuid4", lambda: fixed)
    an = _an(SAMPLES / cap, [str(SAMPLES / keys)] if keys else [])
    wf = build(an)
    for big in (False, True):
        for hover in (True, False):
            fig = figures.waterfall_figure(wf, hover=hover, responsive=hover, big=big)
            for title in (None, "page <b>&</b> — x"):
                want = _former_html_document(fig, title)
                assert figures.html_document(fig, title) == want
                assert b"".join(figures.html_chunks(fig, title)) == want
    drawn = []
    real = figures.html_chunks
    monkeypatch.setattr(figures, "html_chunks", lambda fig, title=None: drawn.append(fig) or real(fig, title))
    out = tmp_path / "x.html"
    export(an, str(out))
    assert out.read_bytes() == _former_html_document(drawn[0], Path(cap).name)


# ------------------------------------------------------------------------ memory (slow)



@pytest.mark.slow
@pytest.mark.parametrize("fmt,per_request", [("har", 1024), ("html", 3072)])
def test_export_peak_rss_is_the_waterfall_not_the_document(fmt, per_request, tmp_path):
    """On 63 k requests (benchmarks/corpus/h2-requests.pcap, made by bench.py with nghttpd and
    h2load), the export's peak RSS over the analysis is its waterfall (~3 KB a row) plus at
    most ``per_request`` bytes a request: the HAR's entries are made and written a batch at
    a time (before: 488 MB over the analysis, 290 MB beyond the waterfall, 4.8 KB a request),
    the page's figure JSON a piece at a time (before: 621 MB, 7 KB a request beyond the
    waterfall; now ~2 KB, the figure itself: its hover texts, bars and their building)."""
    if fmt == "html":
        pytest.importorskip("plotly")
    m = export_peak(fmt, tmp_path)
    n = m["exchanges"]
    assert n >= 60000
    beyond = (m["export_kb"] - m["waterfall_kb"]) * 1024
    assert beyond < per_request * n, (m, beyond / n)
