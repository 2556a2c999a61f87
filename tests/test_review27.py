"""Review 27's findings on the real amazon load (../shared/captures/pageload-amazon), each
against an outside truth: Chrome's NetLog of the same load and tshark.

- A request the browser sent on a connection it found ready (NetLog: no connect of its own)
  is not charged the connection's set-up, though it is the first on that connection.
- The ``requests`` table's ttfb is the request's last byte to the response's first (the
  detail's "Waiting (TTFB)", DevTools' and WebPageTest's): an upload's send was counted in.
"""
from __future__ import annotations

import gzip
import json
import tempfile

from conftest import need_tool, run_tool, shared

from wirefall.analyzer import waterfall
from wirefall.analyzer.browserlog import overlay
from wirefall.analyzer.pipeline import analyze

AMAZON = "pageload-amazon"
UE_BASE = "/ue-base-1c399ad9886cab69575e1e5ee15c61a1._V313498596_.js"


def _amazon():
    d = shared(AMAZON)
    return analyze(str(d / "amazon1.cap.gz"), keylogs=[str(d / "amazon1.key_log.txt.gz")])


def _netlog_kinds(url_tail: str) -> set[str]:
    """The event types of the NetLog's URL_REQUEST for ``url_tail``, read here without wirefall."""
    nl = json.loads(gzip.decompress((shared(AMAZON) / "amazon1_netlog.json.gz").read_bytes()))
    names = {v: k for k, v in nl["constants"]["logEventTypes"].items()}
    src = {e["source"]["id"] for e in nl["events"]
           if names.get(e["type"]) == "URL_REQUEST_START_JOB" and str((e.get("params") or {}).get("url", "")).endswith(url_tail)}
    assert len(src) == 1
    return {names.get(e["type"], "") for e in nl["events"] if e["source"]["id"] in src}


def test_a_request_on_a_connection_the_browser_found_ready_is_not_charged_its_set_up():
    an = _amazon()
    (ue,) = [e for e in an.exchanges if (e.url or "").endswith(UE_BASE)]
    conn = next(c for c in an.connections if c.id == ue.connection)
    # without the browser's word: the first request on the connection draws its set-up (WebPageTest's way)
    wf = waterfall.build(an)
    (row,) = [r for r in wf.rows if r.exchange == ue.id]
    assert "connect" in [p[0] for p in row.phases]
    # the truth: Chrome's NetLog — the request was bound to a QUIC session that was there
    # (HTTP_STREAM_REQUEST_BOUND_TO_QUIC_SESSION), while the CSS's, the first on a connection
    # made for it, was bound to the job that connected
    assert "HTTP_STREAM_REQUEST_BOUND_TO_QUIC_SESSION" in _netlog_kinds(UE_BASE)
    assert "HTTP_STREAM_REQUEST_BOUND_TO_QUIC_SESSION" not in _netlog_kinds("secure.min._V1_.css")
    overlay(an, str(shared(AMAZON) / "amazon1_netlog.json.gz"), "netlog")
    wf = waterfall.build(an)
    (row,) = [r for r in wf.rows if r.exchange == ue.id]
    names = [p[0] for p in row.phases]
    assert not {"dns", "connect", "tls", "idle"} & set(names), names
    assert row.start == ue.request_start
    # the connection's own row still shows the handshake it spent
    assert conn.connect_start is not None and conn.connect_end is not None
    # the second document (www.amazon.com/ over QUIC, its connection ready 194 ms before it; NetLog: bound to the session)
    (doc2,) = [e for e in an.exchanges if e.url == "https://www.amazon.com/" and e.protocol == "h3"]
    (row,) = [r for r in wf.rows if r.exchange == doc2.id]
    assert not {"connect", "tls", "idle"} & {p[0] for p in row.phases}
    # the first request on a connection the browser did set up for it keeps its set-up
    (css,) = [e for e in an.exchanges if (e.url or "").endswith("secure.min._V1_.css")]
    (row,) = [r for r in wf.rows if r.exchange == css.id]
    assert {"connect", "tls"} <= {p[0] for p in row.phases}


def test_the_requests_table_ttfb_is_the_wait_for_the_first_byte(capsys):
    need_tool("tshark")
    from wirefall.ui import cli

    d = shared(AMAZON)
    an = _amazon()
    (post,) = [e for e in an.exchanges if (e.url or "").endswith("fls-na.amazon.com/1/batch/1/OE/")]
    port = next(c for c in an.connections if c.id == post.connection).client[1]
    assert cli.main(["requests", str(d / "amazon1.cap.gz"), "--keylog", str(d / "amazon1.key_log.txt.gz")]) == 0
    (line,) = [ln for ln in capsys.readouterr().out.splitlines() if ln.rstrip().endswith("fls-na.amazon.com/1/batch/1/OE/")]
    ttfb = float(line.split()[7])
    # the truth: tshark — on the POST's connection, stream 3's last client frame (DATA, END_STREAM)
    # and the server's first (HEADERS)
    with tempfile.NamedTemporaryFile(suffix=".keys") as f:
        f.write(gzip.decompress((d / "amazon1.key_log.txt.gz").read_bytes()))
        f.flush()
        rows = [r.split("\t") for r in run_tool(
            "tshark", "-r", str(d / "amazon1.cap.gz"), "-o", f"tls.keylog_file:{f.name}", "-Y",
            f"http2.streamid == 3 && tcp.port == {port}", "-T", "fields", "-e", "frame.time_epoch", "-e", "tcp.srcport",
            "-e", "http2.type", "-e", "http2.flags").splitlines()]
    req_end = max(float(t) for t, sport, typ, fl in rows if sport == str(port))
    resp_start = min(float(t) for t, sport, typ, fl in rows if sport == "443")
    (last,) = [(typ, fl) for t, sport, typ, fl in rows if float(t) == req_end]
    assert last == ("0", "0x01")  # (DATA with END_STREAM: the request's last byte)
    assert ttfb == round((resp_start - req_end) * 1000, 1) == 4.1


def test_an_http1_netlog_gives_its_body_sizes():
    """A NetLog of an HTTP/1.1 load counts its responses' bodies only as the bytes its filters
    passed on (URL_REQUEST_JOB_FILTERED_BYTES_READ); with no Content-Encoding they are the
    body's own, and every response showed 0 (review 27, R4: compare's byte column, hero.jpg
    -97,342). The truth: tshark's Content-Length of the same load's responses."""
    from conftest import SAMPLES

    need_tool("tshark")
    d = SAMPLES / "page"
    truth = {}
    for ln in run_tool("tshark", "-r", str(d / "page-h1.pcapng"), "-o", f"tls.keylog_file:{d / 'page-h1.keys'}", "-Y", "http.response",
                       "-T", "fields", "-e", "http.response_for.uri", "-e", "http.content_length", "-e", "http.content_encoding").splitlines():
        uri, length, enc = (ln.split("\t") + ["", "", ""])[:3]
        if length and not enc:
            truth[uri] = int(length)
    assert len(truth) == 13
    an = analyze(str(d / "page-h1.netlog.json.gz"))
    got = {e.url: e.response_body_bytes for e in an.exchanges if e.url in truth}
    assert got == truth
