"""Web dashboard callbacks, called directly (no browser), checked against tshark on the same
captures, or against what the real server logged (HTTP/3: tshark 4.0 does not decode
QPACK headers, so page-h3's truth is the aioquic server's request log).

Also: the analysis cache (hits, no key material on disk), uploads (limits, bad files,
private folder removed on close), background analysis (a slow capture does not block
the callbacks), errors shown as messages."""
from __future__ import annotations

import base64
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import threading
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "sample_captures" / "page"
H2, H2K = PAGE / "page-h2.pcapng", PAGE / "page-h2.keys"
H3, H3K = PAGE / "page-h3.pcapng", PAGE / "page-h3.keys"

pytestmark = pytest.mark.skipif(not H2.exists(), reason="sample captures missing")
needs_tshark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "xdg-cache"))
    monkeypatch.delenv("SSLKEYLOGFILE", raising=False)


def _tshark(*args) -> str:
    return subprocess.run(["tshark", *args], capture_output=True, text=True, check=True).stdout


def _as_list(v):
    return v if isinstance(v, list) else ([] if v is None else [v])


_H2_CACHE: dict = {}


def tshark_h2(path: Path, keys: Path) -> list[dict]:
    """HTTP/2 frames as tshark decodes them: packet, time, stream, type, flags, length, headers."""
    if path in _H2_CACHE:
        return _H2_CACHE[path]
    out = _tshark("-r", str(path), "-o", f"tls.keylog_file:{keys}", "-Y", "http2", "-T", "json", "--no-duplicate-keys",
                  "-J", "frame http2")
    frames = []
    for p in json.loads(out):
        lay = p["_source"]["layers"]
        num = int(lay["frame"]["frame.number"])
        t = float(lay["frame"]["frame.time_epoch"])
        for h in _as_list(lay.get("http2")):
            for s in _as_list(h.get("http2.stream")):
                if "http2.type" not in s:
                    continue
                hs = [(x["http2.header.name"], x.get("http2.header.value", "")) for x in _as_list(s.get("http2.header"))]
                frames.append({"packet": num, "time": t, "stream": int(s["http2.streamid"]), "type": int(s["http2.type"]),
                               "flags": int(s["http2.flags"], 16), "length": int(s["http2.length"]), "headers": hs})
    _H2_CACHE[path] = frames
    return frames


def tshark_requests(path: Path, keys: Path) -> dict[int, dict]:
    """stream id -> {method, path, status, request headers, response headers} from tshark."""
    req: dict[int, dict] = {}
    for f in tshark_h2(path, keys):
        if f["type"] != 1 or not f["headers"]:
            continue
        d = dict(f["headers"])
        if ":method" in d:
            req.setdefault(f["stream"], {})
            req[f["stream"]].update(method=d[":method"], path=d.get(":path"), request_headers=f["headers"], request_packet=f["packet"])
        elif ":status" in d and f["stream"] in req:
            req[f["stream"]].update(status=int(d[":status"]), response_headers=f["headers"],
                                    content_type=d.get("content-type"))
    return req


@pytest.fixture(scope="module")
def state():
    from wirefall.ui.web import WebState

    st = WebState(use_cache=False)
    yield st
    st.close()


@pytest.fixture(scope="module")
def h2(state):
    e = state.add_file(str(H2), [str(H2K)], name="page-h2.pcapng")
    state.wait(e.id)
    assert e.status == "done", e.error
    return e


@pytest.fixture(scope="module")
def h3(state):
    e = state.add_file(str(H3), [str(H3K)], name="page-h3.pcapng")
    state.wait(e.id)
    assert e.status == "done", e.error
    return e


def _rows_of(fig) -> dict[int, str]:
    """Row index -> tick label of the waterfall figure (one row per request)."""
    ys = set()
    for tr in fig.data:
        if tr.type == "bar":
            ys.update(int(y) for y in tr.y)
    # (the label column pads with no-break spaces: SVG collapses runs of spaces)
    labels = dict(zip(fig.layout.yaxis.tickvals or (), (t.replace("\xa0", " ").strip() for t in fig.layout.yaxis.ticktext or ())))
    return {y: labels.get(y, "") for y in sorted(ys)}


def _text(component) -> str:
    """All text of a Dash component tree."""
    out = []

    def walk(c):
        if c is None:
            return
        if isinstance(c, (str, int, float)):
            out.append(str(c))
            return
        if isinstance(c, (list, tuple)):
            for x in c:
                walk(x)
            return
        walk(getattr(c, "children", None))

    walk(component)
    return "\n".join(out)


def _table_pairs(component, table_id: str) -> list[tuple[str, str]]:
    """(name, value) rows of the html.Table with ``id`` inside ``component``."""
    found = []

    def walk(c):
        if isinstance(c, (list, tuple)):
            for x in c:
                walk(x)
            return
        if getattr(c, "id", None) == table_id:
            found.append(c)
            return
        ch = getattr(c, "children", None)
        if ch is not None and not isinstance(ch, str):
            walk(ch)

    walk(component)
    assert found, f"no table {table_id}"
    rows = []
    for part in found[0].children:
        if type(part).__name__ == "Tbody":
            for tr in part.children:
                cells = [td.children for td in tr.children]
                rows.append(tuple(str(x) for x in cells[:2]))
    return rows


# ---------------------------------------------------------------------- waterfall


@needs_tshark
def test_waterfall_one_row_per_request_as_tshark(state, h2):
    from wirefall.ui.web.app import cb_waterfall

    truth = tshark_requests(H2, H2K)
    fig, err, count, _why = cb_waterfall(state, h2.id, "v", [], [], [], [], "")
    rows = _rows_of(fig)
    assert err == ""
    assert len(truth) == 13
    assert len(rows) == len(truth), (rows, truth)
    assert count == f"{len(truth)} of {len(truth)} requests"
    # the tick labels name each request's path; same multiset of paths as tshark
    paths = sorted(lbl.split(":59833", 1)[1] for lbl in rows.values())
    assert paths == sorted(r["path"] for r in truth.values())
    # hover text of every bar names the URL, status and protocol
    for tr in fig.data:
        if tr.type == "bar":
            for h in tr.hovertext:
                assert "https://127.0.0.1:59833/" in h and "status 200" in h and "h2" in h


@needs_tshark
def test_filters_match_tshark(state, h2):
    from wirefall.ui.web.app import cb_waterfall

    truth = tshark_requests(H2, H2K)
    # filter expression (the CLI's language) against tshark's own filter
    n_css = len(_tshark("-r", str(H2), "-o", f"tls.keylog_file:{H2K}", "-Y", 'http2.headers.path contains "css"',
                        "-T", "fields", "-e", "frame.number").split())
    fig, err, count, _why = cb_waterfall(state, h2.id, "v", [], [], [], [], 'url contains "css"')
    assert err == "" and len(_rows_of(fig)) == n_css == 2
    # content type: images are the responses whose content-type tshark shows as image/*
    n_img = sum(1 for r in truth.values() if (r.get("content_type") or "").startswith("image/"))
    fig, err, count, _why = cb_waterfall(state, h2.id, "v", [], [], ["image"], [], "")
    assert len(_rows_of(fig)) == n_img > 0
    # status and protocol and connection
    fig, *_ = cb_waterfall(state, h2.id, "v", ["h2"], [0], [], ["2xx"], "")
    assert len(_rows_of(fig)) == sum(1 for r in truth.values() if 200 <= r["status"] < 300)
    fig, *_ = cb_waterfall(state, h2.id, "v", [], [], [], ["4xx"], "")
    assert len(_rows_of(fig)) == sum(1 for r in truth.values() if 400 <= r["status"] < 500) == 0


def test_filter_error_shows_column(state, h2):
    from wirefall.analyzer.filter import FilterError, compile_filter
    from wirefall.ui.web.app import cb_waterfall

    expr = 'status >= && url contains "x"'
    with pytest.raises(FilterError) as ei:
        compile_filter(expr)
    fig, err, count, _why = cb_waterfall(state, h2.id, "v", [], [], [], [], expr)
    text = _text(err)
    assert f"at column {ei.value.column}" in text
    assert expr + "\n" + " " * (ei.value.column - 1) + "^" in text
    assert count == "13 of 13 requests"  # the other filters still apply, the bad expression does not hide rows


@needs_tshark
def test_click_shows_headers_as_tshark(state, h2):
    from wirefall.ui.web.app import cb_select, cb_waterfall

    truth = tshark_requests(H2, H2K)
    fig, *_ = cb_waterfall(state, h2.id, "v", [], [], [], [], "")
    rows = _rows_of(fig)
    for y in (0, 6, len(rows) - 1):
        bar = next(tr for tr in fig.data if tr.type == "bar" and y in list(tr.y))
        i = list(bar.y).index(y)
        click = {"points": [{"x": bar.base[i], "y": y, "customdata": bar.customdata[i]}]}
        xid, detail = cb_select(state, click, h2.id, [], [], [], [], "")
        e = next(x for x in h2.analysis.exchanges if x.id == xid)
        t = truth[e.stream_id]
        assert _table_pairs(detail, "detail-request-headers") == [tuple(h) for h in t["request_headers"]]
        assert _table_pairs(detail, "detail-response-headers") == [tuple(h) for h in t["response_headers"]]
        pk = dict(((a, b), c) for a, b, c, *_ in [tuple(_text(x.children) for x in tr.children)
                                                    for tr in _find(detail, "detail-packets").children[1].children])
        # packet numbers are links to the Packets tab
        link = _find(detail, {"type": "pkt", "n": t["request_packet"]})
        assert link is not None and link.children == str(t["request_packet"])
        assert pk[("request", "first byte")] == str(t["request_packet"])
        # frames of the stream: same packets and types as tshark's frames of that stream
        tf = [(f["packet"], f["type"]) for f in tshark_h2(H2, H2K) if f["stream"] == e.stream_id]
        names = {0: "DATA", 1: "HEADERS", 2: "PRIORITY", 3: "RST_STREAM", 5: "PUSH_PROMISE", 8: "WINDOW_UPDATE", 9: "CONTINUATION"}
        ours = [(int(_text(tr.children[0].children)), tr.children[4].children) for tr in _find(detail, "detail-frames").children[1].children]
        assert ours == [(p, names[ty]) for p, ty in tf]


def _find(component, id_):
    if getattr(component, "id", None) == id_:
        return component
    ch = getattr(component, "children", None)
    for c in ch if isinstance(ch, (list, tuple)) else ([ch] if ch is not None and not isinstance(ch, str) else []):
        r = _find(c, id_)
        if r is not None:
            return r
    return None


def test_click_on_marker_or_nothing(state, h2):
    from wirefall.ui.web.app import cb_select

    xid, detail = cb_select(state, {"points": [{"x": 1.0, "y": 3}]}, h2.id, [], [], [], [], "")  # a marker: no customdata
    assert xid is not None and "Request headers" in _text(detail)
    xid, detail = cb_select(state, None, h2.id, [], [], [], [], "")
    assert xid is None and "Click a bar" in _text(detail)


def test_zoom_belongs_to_its_capture(state, h2):
    """Another capture's zoom is not applied (nor written to the address); a stored range
    outside this capture's time is dropped, one reaching past its end is cut."""
    from wirefall.ui.web.app import cb_url_out, cb_waterfall, xrange_for

    full = list(cb_waterfall(state, h2.id, "v", [], [], [], [], "", None, None, None)[0].layout.xaxis.range)
    assert full[0] == 0 and full[1] > 60
    z = {"capture": "c999", "range": [10.0, 60.0]}
    fig, *_ = cb_waterfall(state, h2.id, "v", [], [], [], [], "", None, None, z)
    assert list(fig.layout.xaxis.range) == full and xrange_for(z, h2.id) is None
    assert "x0" not in cb_url_out(state, h2.id, "", "waterfall", z, None, None, True, "")
    fig, *_ = cb_waterfall(state, h2.id, "v", [], [], [], [], "", None, None, {"capture": h2.id, "range": [10.0, 60.0]})
    assert list(fig.layout.xaxis.range) == [10.0, 60.0]
    fig, *_ = cb_waterfall(state, h2.id, "v", [], [], [], [], "", None, None, {"capture": h2.id, "range": [1e9, 2e9]})
    assert list(fig.layout.xaxis.range) == full  # nowhere near this capture (a hand-edited address)
    wf = _wf(state, h2)
    end = (wf.t_end - wf.t0) * 1000
    fig, *_ = cb_waterfall(state, h2.id, "v", [], [], [], [], "", None, None, {"capture": h2.id, "range": [10.0, 1e9]})
    lo, hi = fig.layout.xaxis.range
    assert lo == 10.0 and end < hi <= 1.05 * end + 1e-9


def test_reload_state_in_any_callback_order(state, h2):
    """A page reloaded on an address (capture, zoom, selection): Dash runs the callbacks that
    fill it in no fixed order — cb_poll's first call picks the capture too, and cb_url_in's
    capture output (allow_duplicate) is nothing Dash waits for — so the selection callback,
    the waterfall and the address writer may run before the stores hold anything.  Each
    takes this capture's value from the store or else from the address: the same answer in
    any order (before, cb_select answered "none" from the empty store, wiping the selection
    from the page and then from the address)."""
    from wirefall.ui.web.app import _side, cb_select, cb_url_in, cb_url_out, cb_waterfall, selected_for, zoom_for

    x = next(e for e in h2.analysis.exchanges if e.path == "/js/vendor.js").id
    search = f"?capture={h2.id}&x0=10&x1=60&sel={x}"
    # the selection callback first, the stores empty: the address's request, its detail shown
    xid, detail = cb_select(state, None, h2.id, [], [], [], [], "", trigger="capture", selected=None, search=search)
    assert xid == x and "/js/vendor.js" in _text(detail)
    assert _side(h2.id, (xid, detail))[0] == {"capture": h2.id, "id": x}
    # the waterfall before any store is filled: the address's zoom, the address's row highlighted
    fig, *_ = cb_waterfall(state, h2.id, "v", [], [], [], [], "", None, None, None, None, search=search)
    assert list(fig.layout.xaxis.range) == [10.0, 60.0]
    hl = [sh for sh in fig.layout.shapes if sh.name == "selected"]
    row = next(r for r in _wf(state, h2).rows if r.exchange == x)
    assert len(hl) == 1 and hl[0].y0 == row.index - 0.5
    # the address writer before the stores are filled keeps the address's zoom and selection
    assert cb_url_out(state, h2.id, "", "waterfall", None, None, None, True, search) is no_update
    # cb_url_in leaves the selection to cb_select (one writer) and fills the zoom
    out = cb_url_in(state, "/", search)
    assert out[0] == h2.id and out[3] == {"capture": h2.id, "range": [10.0, 60.0]} and len(out) == 8
    # once the stores hold this capture's values they win over the address: a request
    # clicked, the selection cleared, the zoom reset
    assert selected_for({"capture": h2.id, "id": 3}, h2.id, search) == 3
    assert selected_for({"capture": h2.id, "id": None}, h2.id, search) is None
    assert zoom_for({"capture": h2.id, "range": None}, h2.id, search) is None
    assert "sel=" not in cb_url_out(state, h2.id, "", "waterfall", {"capture": h2.id, "range": None},
                                    {"capture": h2.id, "id": None}, None, True, search)
    # another capture's store, or an address of another capture: nothing of theirs
    assert selected_for({"capture": "c999", "id": x}, h2.id) is None
    assert selected_for(None, h2.id, search.replace(h2.id, "c999")) is None
    assert zoom_for(None, h2.id, search.replace(h2.id, "c999")) is None
    xid, _ = cb_select(state, None, h2.id, [], [], [], [], "", trigger="capture", selected={"capture": "c999", "id": x})
    assert xid is None


def _wf(state, e):
    from wirefall.ui.web import views

    return views.waterfall_of(state.get(e.id))


def test_dropdown_filters_in_the_url(state, h2):
    """The dropdown filters and the order are written to the address and read back from it
    (a reload keeps them); a reload's values that the capture has not are dropped, and
    another capture's are not applied."""
    from wirefall.ui.web.app import cb_filter_options, cb_url_in, cb_url_out

    url = cb_url_out(state, h2.id, "", "waterfall", None, None, None, True, "", ["h2"], [0], ["css", "script"], ["2xx"], "duration")
    assert url == f"?capture={h2.id}&proto=h2&conn=0&content=css&content=script&status=2xx&order=duration"
    out = cb_filter_options(state, h2.id, "v", None, url + "&proto=nosuch")
    assert out[4:] == (["h2"], [0], ["css", "script"], ["2xx"])
    assert cb_url_in(state, "/", url)[6] == "duration"
    assert cb_filter_options(state, h2.id, "v", "capture", url.replace(h2.id, "c999"))[4:] == ([], [], [], [])
    assert all(v is no_update for v in cb_filter_options(state, h2.id, "v", "version", url)[4:])  # an analysis update keeps them


from dash import no_update  # noqa: E402


# ---------------------------------------------------------------- other tabs


@needs_tshark
def test_connections_tab_as_tshark(state, h2):
    from wirefall.ui.web.app import cb_connections

    fig, rows, notes = cb_connections(state, h2.id, "v", "connections")
    out = _tshark("-r", str(H2), "-o", f"tls.keylog_file:{H2K}", "-Y", "tls.handshake.type == 2", "-T", "fields",
                  "-e", "tcp.dstport", "-e", "tls.handshake.ciphersuite", "-e", "tls.handshake.extensions.supported_version",
                  "-e", "tls.handshake.extensions_alpn_str")
    sh = {}
    for line in out.splitlines():
        port, cs, ver, alpn = line.split("\t")
        sh[int(port)] = (int(cs, 0), int(ver, 0), alpn)
    conv = _tshark("-r", str(H2), "-T", "fields", "-e", "tcp.stream", "-e", "tcp.srcport", "-e", "tcp.dstport")
    streams = {}
    for line in conv.splitlines():
        s, a, b = line.split("\t")
        streams.setdefault(int(s), (int(a), int(b)))
    assert len(rows) == len(streams) == 2
    by_port = {int(r["client"].rsplit(":", 1)[1]): r for r in rows}
    assert set(by_port) == {a for a, b in streams.values()}
    for port, (cs, ver, alpn) in sh.items():
        r = by_port[port]
        conn = next(c for c in h2.analysis.connections if c.client[1] == port)
        assert conn.tls.cipher_suite_id == cs and r["cipher"] == conn.tls.cipher_suite == "TLS_AES_128_GCM_SHA256"
        assert r["version"] == {0x0304: "TLS 1.3", 0x0303: "TLS 1.2"}[ver]
        assert r["alpn"] == alpn
        assert r["decrypted"] == "yes"
    # handshake phases drawn for both connections
    names = {tr.name for tr in fig.data}
    assert {"TCP connect", "TLS handshake"} <= names and "QUIC handshake" not in names


@needs_tshark
def test_connections_figure_names_a_quic_handshake(state, h3):
    """page-h3's connection: its handshake is QUIC's, from the first Initial to the client's
    Finished (tshark's frame), with the TLS handshake inside it — it was drawn as a "TCP
    connect" of a UDP connection, beside a "TLS / QUIC handshake"."""
    from wirefall.ui.web import views

    fig = views.connections_figure(h3)
    bars = {tr.name: tr for tr in fig.data}
    assert "TCP connect" not in bars and {"QUIC handshake", "TLS handshake"} <= set(bars)
    fin = _tshark("-r", str(H3), "-o", f"tls.keylog_file:{H3K}", "-Y", "tls.handshake.type == 20", "-T", "fields",
                  "-e", "frame.time_relative", "-e", "udp.srcport")
    c = h3.analysis.connections[0]
    t_fin = next(float(t) for t, port in (line.split("\t") for line in fin.splitlines()) if int(port) == c.client[1])
    q = bars["QUIC handshake"]
    assert q.base[0] == pytest.approx(0.0, abs=1e-6) and q.base[0] + q.x[0] == pytest.approx(t_fin * 1000, abs=1e-3)
    tls = bars["TLS handshake"]
    assert q.base[0] <= tls.base[0] and tls.base[0] + tls.x[0] == pytest.approx(t_fin * 1000, abs=1e-3)


@needs_tshark
def test_statistics_tab_as_tshark(state, h2):
    from wirefall.ui.web import views
    from wirefall.ui.web.app import cb_stats

    summary, proto, content, headers, traffic, inflight, hrows = cb_stats(state, h2.id, "v", "stats")
    lines = _tshark("-r", str(H2), "-T", "fields", "-e", "tcp.dstport", "-e", "frame.len").split("\n")
    c2s = sum(int(b) for a, b in (x.split("\t") for x in lines if x) if a == "59833")
    s2c = sum(int(b) for a, b in (x.split("\t") for x in lines if x) if a != "59833")
    bars = {tr.name: dict(zip(tr.x, tr.y)) for tr in proto.data}
    assert bars["client → server"]["h2"] == c2s and bars["server → client"]["h2"] == s2c
    # packets and bytes over time add up to the capture's totals
    tr_bytes = next(tr for tr in traffic.data if tr.type == "bar")
    tr_pk = next(tr for tr in traffic.data if tr.type == "scatter")
    assert sum(tr_bytes.y) == c2s + s2c and sum(tr_pk.y) == len([x for x in lines if x])
    # header compression per connection: wire bytes = HEADERS payloads minus the 5 priority bytes (tshark's frames)
    tf = tshark_h2(H2, H2K)
    reqs = sum(f["length"] - (5 if f["flags"] & 0x20 else 0) for f in tf if f["type"] == 1 and any(k == ":method" for k, _ in f["headers"]))
    resps = sum(f["length"] - (5 if f["flags"] & 0x20 else 0) for f in tf if f["type"] == 1 and any(k == ":status" for k, _ in f["headers"]))
    row = next(r for r in hrows if r["connection"] == "0")
    assert (row["req_wire"], row["resp_wire"]) == (reqs, resps)
    # streams in flight: from tshark, a stream is in flight from its request HEADERS to its last frame with END_STREAM
    first, last = {}, {}
    for f in tf:
        if f["stream"] == 0:
            continue
        if f["type"] == 1 and any(k == ":method" for k, _ in f["headers"]):
            first.setdefault(f["stream"], f["time"])
        if f["type"] in (0, 1) and f["flags"] & 1 and f["packet"] != 0:
            last[f["stream"]] = f["time"]
    ev = sorted([(first[s], 1) for s in first] + [(last[s], -1) for s in first], key=lambda x: (x[0], -x[1]))
    cur = best = 0
    for _, d in ev:
        cur += d
        best = max(best, cur)
    xs, ys = views.in_flight_series(h2.analysis)
    assert max(ys) == best
    # bytes by content type: per class, the sum of DATA payloads tshark shows for those streams
    data_by_stream = defaultdict(int)
    for f in tf:
        if f["type"] == 0:
            data_by_stream[f["stream"]] += f["length"]
    truth = tshark_requests(H2, H2K)
    imgs = sum(data_by_stream[s] for s, r in truth.items() if (r.get("content_type") or "").startswith("image/"))
    wire = next(tr for tr in content.data if tr.name == "body on the wire")
    assert dict(zip(wire.x, wire.y))["image"] == imgs
    assert "13" in _text(summary)


def _rows(state, e, start=0, end=100, sort=None, **kw):
    from wirefall.ui.web.app import cb_packet_rows

    resp, msg = cb_packet_rows(state, {"startRow": start, "endRow": end, "sortModel": sort or []}, e.id, kw.get("expr"),
                               kw.get("fmt"), kw.get("marks"), kw.get("refs"), kw.get("goto"))
    return resp["rowData"], resp["rowCount"], msg


@needs_tshark
def test_packet_list_blocks_as_tshark(state, h2):
    """The rows the grid asks for, block by block, are tshark's packets; go to packet 45:
    its row, highlighted, and its bytes as tshark -x; a click on a row shows that packet."""
    from wirefall.ui.web.app import cb_packet_detail, cb_packet_goto

    out = _tshark("-r", str(H2), "-T", "fields", "-e", "frame.number", "-e", "frame.time_relative", "-e", "ip.src", "-e", "ip.dst",
                  "-e", "frame.len")
    truth = [line.split("\t") for line in out.splitlines()]
    rows, count, msg = _rows(state, h2, 0, 20)
    assert count == len(truth) and len(rows) == 20 and f"{len(truth)} packets" in _text(msg)
    rows3, count3, _ = _rows(state, h2, 60, 80)
    assert count3 == len(truth) and len(rows3) == len(truth) - 60
    for r in rows + rows3:
        n, t, src, dst, ln = truth[r["no"] - 1]
        assert (r["no"], r["source"], r["destination"], r["length"]) == (int(n), src, dst, int(ln))
        assert abs(float(r["time"]) - float(t)) < 2e-6
    pos = cb_packet_goto(state, 45, h2.id, None, None)
    assert pos == {"index": 44, "count": len(truth), "n": 45}
    rows, *_ = _rows(state, h2, 40, 60, goto=45)
    assert [r["no"] for r in rows if r["goto"]] == [45]
    d = cb_packet_detail(state, h2.id, None, 45, trigger="packet-goto")
    pre = [c for c in d.children if type(c).__name__ == "Pre"][0].children.splitlines()
    tx = [l for l in _tshark("-r", str(H2), "-x", "-Y", "frame.number == 45").splitlines() if l[:4].strip() and l[4:6] == "  "]
    assert pre == [l.rstrip() for l in tx[: len(pre)]] and len(pre) == len(tx)
    assert "Frame 45:" in _text(d)
    d = cb_packet_detail(state, h2.id, [rows[1]], None, trigger="packets")
    assert f"Packet {rows[1]['no']}" in _text(d)
    assert "no packet" in _text(cb_packet_detail(state, h2.id, None, 10_000, trigger="packet-goto")).lower()


@needs_tshark
def test_packet_list_sorts_any_column_as_tshark(state, h2):
    """A click on a column header sorts the whole list (not the block shown): by Length, by
    Info, descending by No.; with a filter, the filtered packets in that order; go to
    finds the packet's row in the sorted list."""
    from wirefall.ui.web.app import cb_packet_goto

    out = _tshark("-r", str(H2), "-T", "fields", "-e", "frame.number", "-e", "frame.len")
    lens = {int(a): int(b) for a, b in (l.split("\t") for l in out.splitlines())}
    rows, count, _ = _rows(state, h2, 0, 200, [{"colId": "length", "sort": "desc"}])
    assert [r["no"] for r in rows] == sorted(lens, key=lambda n: -lens[n])  # stable: ties in capture order
    rows, *_ = _rows(state, h2, 0, 200, [{"colId": "no", "sort": "desc"}])
    assert [r["no"] for r in rows] == sorted(lens, reverse=True)
    rows, *_ = _rows(state, h2, 0, 200, [{"colId": "info", "sort": "asc"}])
    assert [r["info"] for r in rows] == sorted(r["info"] for r in rows) and len(rows) == len(lens)
    want = [int(x) for x in _tshark("-r", str(H2), "-Y", "tcp.len > 0", "-T", "fields", "-e", "frame.number").split()]
    rows, count, msg = _rows(state, h2, 0, 200, [{"colId": "length", "sort": "asc"}], expr="tcp.len > 0")
    assert count == len(want) and sorted(r["no"] for r in rows) == want and f"{len(want)} of {len(lens)} packets match" in _text(msg)
    assert [r["length"] for r in rows] == sorted(lens[n] for n in want)
    big = max(want, key=lambda n: (lens[n], n))
    pos = cb_packet_goto(state, big, h2.id, "tcp.len > 0", {"sortModel": [{"colId": "length", "sort": "asc"}]})
    assert pos["index"] == [r["no"] for r in rows].index(big)


@needs_tshark
def test_packet_list_time_formats_as_tshark(state, h2):
    """The Time column as tshark's -t: absolute UTC (ud), relative (r), delta from the
    previous displayed packet (dd, with a filter), and since a time reference (*REF*)."""
    def tshark_times(fmt, *extra):
        out = _tshark("-r", str(H2), "-t", fmt, *extra, "-T", "fields", "-e", "frame.number", "-e", "_ws.col.Time")
        return {int(a): b.strip() for a, b in (l.split("\t") for l in out.splitlines())}

    rows, *_ = _rows(state, h2, 0, 200, fmt="absolute")
    ud = tshark_times("ud")
    assert all(r["time"] == ud[r["no"]][: len(r["time"])] and len(r["time"]) == 26 for r in rows), (rows[0]["time"], ud[1])
    rows, count, _ = _rows(state, h2, 0, 200, fmt="delta", expr="tcp.len > 0")
    dd = tshark_times("dd", "-Y", "tcp.len > 0")
    assert count == len(dd) and all(abs(float(r["time"]) - float(dd[r["no"]])) < 2e-6 for r in rows)
    rel = {int(k): float(v) for k, v in tshark_times("r").items()}
    rows, *_ = _rows(state, h2, 0, 200, fmt="reference", refs={h2.id: [25, 50]})
    for r in rows:
        n = r["no"]
        if n in (25, 50):
            assert r["time"] == "*REF*" and r["ref"]
            continue
        base = 50 if n > 50 else 25 if n > 25 else 1
        assert abs(float(r["time"]) - (rel[n] - rel[base])) < 2e-6, (n, r["time"])


def test_marks_time_references_and_packet_export(state, h2, monkeypatch, tmp_path):
    """Ctrl-M / the button marks the selected packet (again: unmarks); the rows say so;
    "Export marked" hands the marked packets to analyzer.pcapng_write.write_pcapng (when
    the module exists; without it the page says what is missing)."""
    import sys
    import types

    from wirefall.ui.web import views
    from wirefall.ui.web.app import cb_export_packets, cb_mark

    marks, refs, msg = cb_mark(state, 1, None, [{"no": 7}], h2.id, {}, {}, None, trigger="btn-mark")
    assert marks == {h2.id: [7]} and "packet 7 marked (1 marked)" in _text(msg)
    marks2, _, msg = cb_mark(state, 2, None, [{"no": 9}], h2.id, marks, {}, None, trigger="btn-mark")
    assert marks2 == {h2.id: [7, 9]}
    again, _, msg = cb_mark(state, 3, None, [{"no": 9}], h2.id, marks2, {}, None, trigger="btn-mark")
    assert again == {h2.id: [7]} and "unmarked" in _text(msg)
    _, refs, msg = cb_mark(state, None, 1, None, h2.id, marks, {}, 30, trigger="btn-timeref")  # nothing selected: the packet gone to
    assert refs == {h2.id: [30]} and "time reference set" in _text(msg)
    rows, *_ = _rows(state, h2, 0, 40, marks=marks2, refs=refs, fmt="reference")
    assert [r["no"] for r in rows if r["marked"]] == [7, 9] and [r["no"] for r in rows if r["ref"]] == [30]
    assert "select a packet" in _text(cb_mark(state, 1, None, [], h2.id, {}, {}, None, trigger="btn-mark")[2])

    if not views.export_available():
        dl, msg = cb_export_packets(state, "marked", h2.id, marks2, None)
        assert dl is no_update and "pcapng_write" in _text(msg)
    got = []

    def write_pcapng(analysis, numbers, path, keys=True):
        got.append((analysis, list(numbers), keys))
        Path(path).write_bytes(b"\x0a\x0d\x0d\x0a" + bytes(24))

    fake = types.ModuleType("wirefall.analyzer.pcapng_write")
    fake.write_pcapng = write_pcapng  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "wirefall.analyzer.pcapng_write", fake)
    monkeypatch.setattr(views, "export_available", lambda: True)
    dl, msg = cb_export_packets(state, "marked", h2.id, marks2, None)
    assert got[-1][1:] == ([7, 9], True) and got[-1][0] is state.get(h2.id).analysis
    assert dl["filename"] == "page-h2-marked.pcapng" and "2 packets" in _text(msg)
    dl, msg = cb_export_packets(state, "displayed", h2.id, marks2, "tcp.len > 0")
    assert got[-1][1] == views.packet_numbers(state.get(h2.id), "tcp.len > 0")[0] and dl["filename"] == "page-h2-displayed.pcapng"
    assert "no packet is marked" in _text(cb_export_packets(state, "marked", h2.id, {}, None)[1])


def test_row_colours_from_the_colouring_rules(state, h2, monkeypatch):
    """With analyzer.colouring present, each row carries its rule's name and colours (the
    grid's getRowStyle paints them); colours that are not #rrggbb are not passed on."""
    import sys
    import types

    from wirefall.ui.web import views

    fake = types.ModuleType("wirefall.analyzer.colouring")
    fake.colours_for = lambda an, nums: [("TCP SYN/FIN", "#000000", "#a0a0a0") if n % 2 else ("bad", "red;x", "#ffffff")
                                         for n in nums]  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "wirefall.analyzer.colouring", fake)
    monkeypatch.setattr(views, "colours_available", lambda: True)
    rows, *_ = _rows(state, h2, 0, 6)
    assert [(r.get("colour"), r.get("bg")) for r in rows] == [("TCP SYN/FIN", "#a0a0a0"), (None, None)] * 3


def _server_log_h3() -> list[dict]:
    return [json.loads(line) for line in (PAGE / "page-h3.server.log").read_text().splitlines() if line.strip()]


@needs_tshark
def test_compare_tab(state, h2, h3):
    from wirefall.ui.web.app import cb_compare
    from wirefall.ui.web.views import compare_available

    if not compare_available():
        out = cb_compare(state, 1, h2.id, h3.id)
        assert "not available" in _text(out)
        return
    out = cb_compare(state, 1, h2.id, h3.id)
    text = _text(out)
    paths_h2 = sorted(r["path"] for r in tshark_requests(H2, H2K).values())
    paths_h3 = sorted(r["path"] for r in _server_log_h3())
    common = len(paths_h2) if paths_h2 == paths_h3 else None
    assert common == 13
    assert f"Matched requests ({common}" in text
    tbl = _find(out, "compare-matched")
    assert sorted(str(tr.children[0].children).split(":", 2)[-1].split("/", 1)[-1] for tr in tbl.children[1].children) == \
        sorted(p.lstrip("/") for p in paths_h2)
    assert "Only in A (0)" in text and "Only in B (0)" in text


# ------------------------------------------------------------------------- exports


@needs_tshark
def test_exports_of_what_is_shown(state, h2):
    from wirefall.ui.web.app import cb_export

    truth = tshark_requests(H2, H2K)
    dl, msg = cb_export(state, "har", h2.id, [], [], [], [], "", None)
    har = json.loads(base64.b64decode(dl["content"]))
    assert dl["filename"] == "page-h2.har"
    assert sorted(e["request"]["url"].split(":59833", 1)[1] for e in har["log"]["entries"]) == sorted(r["path"] for r in truth.values())
    dl, msg = cb_export(state, "har", h2.id, [], [], ["css"], [], "", None)
    har = json.loads(base64.b64decode(dl["content"]))
    css = sorted(r["path"] for r in truth.values() if (r.get("content_type") or "") == "text/css")
    assert sorted(e["request"]["url"].split(":59833", 1)[1] for e in har["log"]["entries"]) == css
    assert {e["response"]["status"] for e in har["log"]["entries"]} == {200}
    dl, msg = cb_export(state, "json", h2.id, [], [], [], [], 'url contains "js/"', None)
    doc = json.loads(base64.b64decode(dl["content"]))
    js = sorted(r["path"] for r in truth.values() if "js/" in r["path"])
    assert sorted(e["url"].split(":59833", 1)[1] for e in doc["exchanges"]) == js
    assert doc["view"]["shown"] == len(js) and doc["view"]["total"] == 13 and len(doc["waterfall"]["rows"]) == len(js)
    streams = {e["stream_id"] for e in doc["exchanges"]}
    assert doc["frames"] and all(f["stream_id"] in streams or f["stream_id"] in (0, None) for f in doc["frames"])
    dl, msg = cb_export(state, "html", h2.id, [], [], [], [], "", [90.0, 140.0])
    page = base64.b64decode(dl["content"]).decode()
    assert "plotly" in page.lower() and "vendor.js" in page
    assert '"range":[90.0,140.0]' in page.replace(" ", "")  # the zoom the user chose
    assert dl["filename"] == "page-h2-waterfall.html"


def test_qlog_export_in_the_page(state, h2, h3):
    """The page's exports had no qlog (what qvis reads), which `wirefall export -o X.qlog` writes:
    a QUIC user had to leave the page for the command line.  It has one now (every QUIC
    connection of the capture), and a capture without QUIC says so rather than giving an
    empty list of traces that reads as "nothing happened"."""
    from wirefall.analyzer import export as ex
    from wirefall.ui.web import views
    from wirefall.ui.web.app import cb_export

    assert "qlog" in views.EXPORT_FORMATS
    dl, msg = cb_export(state, "qlog", h3.id, [], [], [], [], "", None)
    doc = json.loads(base64.b64decode(dl["content"]))
    assert dl["filename"] == "page-h3.qlog" and doc["qlog_version"] == "0.3"
    cli = ex.qlog(h3.analysis)
    assert [t["title"] for t in doc["traces"]] == [t["title"] for t in cli["traces"]] and cli["traces"]
    assert all(t["events"] for t in doc["traces"])
    dl, msg = cb_export(state, "qlog", h2.id, [], [], [], [], "", None)
    doc = json.loads(base64.b64decode(dl["content"]))
    assert doc["traces"] == [] and "no QUIC connection in this capture" in doc["description"]


# ------------------------------------------------------------------------- uploads


def _data_url(data: bytes) -> str:
    return "data:application/octet-stream;base64," + base64.b64encode(data).decode()


def test_uploads_checked_and_private(tmp_path):
    from wirefall.ui.web import WebState
    from wirefall.ui.web.app import cb_open, cb_stage

    st = WebState(upload_limit=200_000, keylog_limit=10_000, use_cache=False)
    try:
        big = H2.read_bytes()  # 421 kB > 200 kB
        # the browser's own check found it too large: a message, nothing staged
        staged, msg, _ = cb_stage(st, "capture", {"error": "too_large", "name": "page-h2.pcapng", "size": len(big)}, None)
        assert staged is None and "too large" in _text(msg) and "195.3 KiB" in _text(msg)
        # and the server checks again if the browser did not
        staged, msg, _ = cb_stage(st, "capture", {"contents": _data_url(big), "name": "page-h2.pcapng"}, None)
        assert staged is None and "limit" in _text(msg)
        staged, msg, _ = cb_stage(st, "capture", {"contents": _data_url(b"GIF89a not a capture"), "name": "x.pcap"}, None)
        assert staged is None and "not a pcap or pcapng capture" in _text(msg)
        staged, msg, _ = cb_stage(st, "capture", {"contents": "data:;base64,@@@@", "name": "x.pcap"}, None)
        assert staged is None and "base64" in _text(msg)
        staged, msg, _ = cb_stage(st, "keylog", {"contents": _data_url(b"hello world\n"), "name": "k.txt"}, None)
        assert staged is None and "not a key log" in _text(msg)
        xid, msg = cb_open(st, 1, None, None)
        assert "upload a capture first" in _text(msg)
        # a name that looks like a path is only a name
        small = (PAGE / "page-h3.pcapng").read_bytes()
        st.upload_limit = 1 << 20
        staged, msg, _ = cb_stage(st, "capture", {"contents": _data_url(small), "name": "../../etc/passwd"}, None)
        key, kmsg, _ = cb_stage(st, "keylog", {"contents": _data_url(H3K.read_bytes()), "name": "page-h3.keys"}, None)
        assert staged["name"] == "passwd" and key["name"] == "page-h3.keys"
        d = Path(st.tmpdir)
        assert stat.S_IMODE(d.stat().st_mode) == 0o700
        assert sorted(p.suffix for p in d.iterdir()) == [".cap", ".keys"] and all(p.name.startswith("upload-") for p in d.iterdir())
        assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in d.iterdir())
        xid, msg = cb_open(st, 1, staged, key)
        e = st.wait(xid)
        assert e.status == "done" and e.name == "passwd" and e.keylog_names == ["page-h3.keys"]
        log = _server_log_h3()
        assert sorted((x.method, x.path, x.status) for x in e.analysis.exchanges) == sorted((r["method"], r["path"], r["status"]) for r in log)
    finally:
        st.close()
    assert not d.exists()


def test_bad_capture_is_a_message_and_others_keep_working(tmp_path):
    from wirefall.ui.web import WebState
    from wirefall.ui.web.app import cb_poll, cb_waterfall

    bad = tmp_path / "broken.pcap"
    bad.write_bytes(b"\xd4\xc3\xb2\xa1" + b"\x02\x00\x04\x00" + b"\xff" * 7)  # a pcap header cut short
    junk = tmp_path / "notes.txt"
    junk.write_text("not a capture at all\n")
    st = WebState(use_cache=False)
    try:
        a = st.add_file(str(bad))
        b = st.add_file(str(junk))
        c = st.add_file(str(H2), [str(H2K)])
        for x in (a, b, c):
            st.wait(x.id)
        assert b.status == "error" and b.error
        opts, value, status, *_ = cb_poll(st, 1, b.id, None, None, None)
        assert "error" in status.className and b.error in _text(status)
        assert any("(error)" in o["label"] for o in opts)
        fig, err, cnt, _why = cb_waterfall(st, b.id, "v", [], [], [], [], "")
        assert b.error in fig.layout.annotations[0].text
        fig, err, cnt, _why = cb_waterfall(st, c.id, "v", [], [], [], [], "")
        assert cnt == "13 of 13 requests"
    finally:
        st.close()


def test_background_analysis_does_not_block_callbacks():
    """A capture that takes long to analyse: callbacks answer at once with its progress."""
    import time

    from wirefall.analyzer.pipeline import analyze
    from wirefall.ui.web import WebState
    from wirefall.ui.web.app import cb_poll, cb_waterfall

    gate = threading.Event()
    started = threading.Event()

    def slow_analyze(path, keylogs=None, progress=None):
        progress(1000, 100, 400)
        started.set()
        gate.wait(20)
        return analyze(path, keylogs=keylogs, progress=progress)

    st = WebState(use_cache=False, analyze=slow_analyze)
    try:
        e = st.add_file(str(H2), [str(H2K)], name="slow.pcapng")
        assert started.wait(10)
        t = time.monotonic()
        opts, value, status, prog, pstyle, version, *_ = cb_poll(st, 1, None, None, None, None)
        fig, err, cnt, _why = cb_waterfall(st, e.id, "v", [], [], [], [], "")
        assert time.monotonic() - t < 1.0
        assert "analysing" in _text(status) and prog == 25 and pstyle["display"] != "none" and version == f"{e.id}:running"
        assert "analysing" in fig.layout.annotations[0].text
        gate.set()
        st.wait(e.id)
        opts, value, status, prog, pstyle, version, *_ = cb_poll(st, 2, e.id, opts, version, None)
        assert version == f"{e.id}:done" and pstyle["display"] == "none" and "13 requests" in _text(status)
    finally:
        gate.set()
        st.close()


POLL_SIM_JS = """
var clock = 0; Date.now = function () { return clock; };
var NO = {no_update: true}; var window = {dash_clientside: {no_update: NO}};
var gate = (GATE);
// the interval ticks every 600 ms for 30 s; the server answers each poll LATENCY ms after it is
// sent, except the polls in LOST; Dash applies an answer only if no newer request of the
// callback was sent meanwhile (an outdated answer is dropped)
var go = null, done = null, sent = [], pending = [];
for (var t = 0, n = 0; t <= 30000; t += 50) {
    clock = t;
    pending = pending.filter(function (p) {
        if (p.at > t) { return true; }
        p.applied = sent[sent.length - 1] === p.go; if (p.applied) { done = p.go.n; }
        return false;
    });
    if (t %% 600 === 0) {
        var out = gate(n++, go, done);
        if (out !== NO) {
            go = out; sent.push(go);
            var p = {go: go, at: t + LATENCY}; if (LOST.indexOf(go.n) < 0) { pending.push(p); }
            go.p = p;
        }
    }
}
console.log(JSON.stringify(sent.map(function (g) { return [g.n, g.t, !!g.p.applied]; })));
"""


UNGATED_JS = "function(n, go, done) { return {n: (go ? go.n : 0) + 1, t: Date.now()}; }"  # (each tick a poll: before the gate)


def _poll_sim(latency: int, lost=(), gate: str | None = None) -> list:
    from wirefall.ui.web.app import POLL_GATE_JS

    js = (POLL_SIM_JS % ()).replace("(GATE)", "(" + (gate or POLL_GATE_JS) + ")").replace("LATENCY", str(latency)).replace("LOST", json.dumps(list(lost)))
    return json.loads(subprocess.run(["node", "-e", js], capture_output=True, text=True, timeout=30, check=True).stdout)


@pytest.mark.skipif(shutil.which("node") is None, reason="node not installed")
def test_poll_slower_than_its_interval_still_fills_the_page(state, h2):
    """cb_poll answering after 1.5 s (a loaded server) while the interval ticks every 600 ms:
    the gate sends a poll only once the last one is answered, so every answer is applied
    (without the gate each was superseded by the next tick's request: the page never filled
    in); a lost answer reopens the gate after POLL_STALE_MS; the server's answer names the
    poll it answers (poll-done), with the status the page shows."""
    from dash import no_update

    from wirefall.ui.web.app import POLL_STALE_MS, cb_poll_tick

    assert not any(a for *_, a in _poll_sim(1500, gate=UNGATED_JS))  # the defect: no answer ever applied
    sent = _poll_sim(1500)
    assert len(sent) >= 6 and all(applied for _n, _t, applied in sent[:-1]), sent  # (the last one still in flight)
    assert [n for n, _t, _a in sent] == list(range(1, len(sent) + 1))
    assert all(b[1] - a[1] >= 1500 for a, b in zip(sent, sent[1:]))  # never two polls in flight
    fast = _poll_sim(100)
    # a fast server: one poll per tick, as before — but none at the page's start (n_intervals 0:
    # the layout holds the first poll's answer)
    assert len(fast) == 50 and fast[0][1] == 600 and all(a for *_, a in fast[:-1])
    lost = _poll_sim(1500, lost=[2])
    assert [n for n, *_ in lost][:3] == [1, 2, 3] and lost[2][1] - lost[1][1] >= POLL_STALE_MS // 1000 * 1000 - 600
    assert all(a for n, _t, a in lost[:-1] if n != 2)

    out = cb_poll_tick(state, {"n": 7, "t": 0}, None, None, None, None)
    opts, value, status, *_rest, live, done = out
    assert done == 7 and live is no_update and value in {o["value"] for o in opts}
    out = cb_poll_tick(state, {"n": 8, "t": 1}, h2.id, opts, None, None)
    assert out[-1] == 8 and out[1] is no_update and out[5] == f"{h2.id}:done" and "13 requests" in _text(out[2])


def _clientside(js: str, calls: list) -> list:
    """``js`` (a clientside callback) called in node with each of ``calls`` ([triggered prop
    ids, args...]; the previous answer passed on as its last State): the answers (None: no
    update)."""
    prog = f"""var NO = {{}}; var window = {{dash_clientside: {{no_update: NO, callback_context: {{triggered: []}}}}}};
var f = ({js}); var prev = null, out = [];
{json.dumps(calls)}.forEach(function (c) {{
    window.dash_clientside.callback_context.triggered = c[0].map(function (p) {{ return {{prop_id: p}}; }});
    var r = f.apply(null, c.slice(1).concat([prev]));
    if (r !== NO) {{ prev = r; }}
    out.push(r === NO ? null : r);
}});
console.log(JSON.stringify(out));"""
    return json.loads(subprocess.run(["node", "-e", prog], capture_output=True, text=True, timeout=30, check=True).stdout)


@pytest.mark.skipif(shutil.which("node") is None, reason="node not installed")
def test_hidden_tabs_callbacks_do_not_run(state, h2):
    """The Connections, Statistics, Expert and packet-detail callbacks have their tab's key as
    their one Input; the key changes only while the tab is shown and something it shows
    changed, so a page opened on the Waterfall (or a capture analysed while another tab is
    shown) makes no request for them; opening the tab draws it once, as before."""
    from wirefall.ui.web import create_app
    from wirefall.ui.web.app import PACKET_DETAIL_KEY_JS, tab_key_js

    out = _clientside(tab_key_js("connections", live=True), [
        [["capture.value"], "c1", "c1:done", None, "waterfall"],  # page opened on the waterfall
        [["version.data"], "c1", "c1:done", None, "waterfall"],
        [["tabs.value"], "c1", "c1:done", None, "connections"],  # the tab opened: drawn
        [["tabs.value"], "c1", "c1:done", None, "waterfall"],
        [["tabs.value"], "c1", "c1:done", None, "connections"],  # back again, nothing changed: not drawn again
        [["live-version.data"], "c1", "c1:done", 3, "connections"],  # a live capture grew: drawn
        [["capture.value"], "c2", "c2:done", 3, "stats"],  # another capture, tab hidden
        [["tabs.value"], "c2", "c2:done", 3, "connections"],
    ])
    assert out == [None, None, {"capture": "c1", "version": "c1:done", "live": None}, None, None,
                   {"capture": "c1", "version": "c1:done", "live": 3}, None, {"capture": "c2", "version": "c2:done", "live": 3}]
    row = [{"no": 5}]
    out = _clientside(PACKET_DETAIL_KEY_JS, [
        [["capture.value"], "c1", None, None, "waterfall"],
        [["tabs.value", "packet-goto.value"], "c1", None, 45, "packets"],  # a packet link: the tab and the packet at once
        [["packets.selectedRows"], "c1", row, 45, "packets"],
        [["tabs.value"], "c1", row, 45, "expert"],
        [["tabs.value"], "c1", row, 45, "packets"],
    ])
    assert out == [None, {"capture": "c1", "sel": None, "goto": 45, "t": "packet-goto"},
                   {"capture": "c1", "sel": row, "goto": 45, "t": "packets"}, None, None]

    app = create_app(state)
    for out_id in ("conn-fig.figure", "stats-summary.children", "expert-counts.children", "packet-detail.children", "compare-out.children"):
        cb = next(c for c in app._callback_list if out_id in c["output"])
        ins = {f"{i['id']}.{i['property']}" for i in cb["inputs"]}
        assert "tabs.value" not in ins and "capture.value" not in ins and cb["prevent_initial_call"], (out_id, ins)
    # the server callbacks answer the key as they answered the tab before
    conns = next(v for k, v in app.callback_map.items() if "conn-fig.figure" in k)["callback"]
    fig, rows, _notes = conns.__wrapped__({"capture": h2.id, "version": "v", "live": None})
    assert len(rows) == len(h2.analysis.connections)


def test_waterfall_model_built_once_per_capture(monkeypatch):
    """The filters' options and the waterfall share one build of the model, made in the
    background as the analysis finishes; callbacks asking while it is being built wait for it
    instead of building their own."""
    import time

    from wirefall.analyzer import waterfall as W
    from wirefall.ui.web import WebState, views
    from wirefall.ui.web.app import cb_filter_options, cb_waterfall

    calls = []
    real = W.build

    def counted(an, *a, **kw):
        calls.append(threading.current_thread().name)
        time.sleep(0.3)  # (a big capture's build: the page's callbacks arrive meanwhile)
        return real(an, *a, **kw)

    monkeypatch.setattr(W, "build", counted)
    st = WebState(use_cache=False)
    try:
        e = st.add_file(str(H2), [str(H2K)], name="page-h2.pcapng")
        st.wait(e.id)
        outs: list = []
        ths = [threading.Thread(target=lambda: outs.append(cb_filter_options(st, e.id, "v"))),
               threading.Thread(target=lambda: outs.append(cb_waterfall(st, e.id, "v", [], [], [], [], "")))]
        for t in ths:
            t.start()
        for t in ths:
            t.join(30)
        assert len(calls) == 1 and calls[0] != threading.current_thread().name and len(outs) == 2
        assert views.filter_options(e) is views.filter_options(e)
        wf = views.waterfall_of(e)
        assert sorted(o["value"] for o in views.filter_options(e)["protocol"]) == sorted({r.protocol for r in wf.rows})
        fig_out = next(o for o in outs if len(o) == 4)
        assert fig_out[2] == f"{len(h2_requests := wf.rows)} of {len(h2_requests)} requests"
    finally:
        st.close()


# --------------------------------------------------------------------------- cache


def test_cache_hit_same_model_and_no_key_material(tmp_path, monkeypatch):
    from wirefall.analyzer import cache
    from wirefall.analyzer.jsonout import exchange_dict, frame_dict, summary_dict

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    a, hit = cache.analyze_cached(str(H2), [str(H2K)])
    assert not hit and a.keylog is not None
    b, hit = cache.analyze_cached(str(H2), [str(H2K)])
    assert hit and b.keylog is not None and len(b.keylog) == len(a.keylog)  # re-read from the file, never from the cache
    assert [exchange_dict(e) for e in a.exchanges] == [exchange_dict(e) for e in b.exchanges]
    assert [frame_dict(f) for f in a.frames] == [frame_dict(f) for f in b.frames]
    assert summary_dict(a) == summary_dict(b)
    d = cache.cache_dir()
    assert stat.S_IMODE(d.stat().st_mode) == 0o700
    files = list(d.glob("*" + cache.SUFFIX))
    assert len(files) == 1
    blob = files[0].read_bytes()
    raw = b"".join(cache.unpack(blob)) + blob  # both pickles decompressed, and the raw packet index
    for line in H2K.read_text().split("\n"):
        if line.strip() and not line.startswith("#"):
            secret = line.split()[2]
            assert secret.lower().encode() not in raw.lower() and bytes.fromhex(secret) not in raw
    # another key log (here: none) is another entry; a copy of the capture under another name is a hit
    c, hit = cache.analyze_cached(str(H2), [])
    assert not hit and not c.exchanges
    cp = tmp_path / "copy.pcapng"
    cp.write_bytes(H2.read_bytes())
    d2, hit = cache.analyze_cached(str(cp), [str(H2K)])
    assert hit and d2.path == str(cp) and len(d2.exchanges) == 13
    # a damaged entry is a miss (and is replaced)
    for f in d.glob("*" + cache.SUFFIX):
        f.write_bytes(b"garbage")
    e, hit = cache.analyze_cached(str(H2), [str(H2K)])
    assert not hit and len(e.exchanges) == 13


def test_cache_refuses_key_material(tmp_path, monkeypatch):
    from wirefall.analyzer import cache
    from wirefall.analyzer.pipeline import analyze

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    an = analyze(str(H2), keylogs=[str(H2K)])
    secret = next(iter(an.keylog._secrets.values()))
    an.warnings.append("leak " + secret.hex())  # as if some layer had kept a secret in the model
    assert not cache.store("k" * 64, an)
    assert not list(cache.cache_dir().glob("*" + cache.SUFFIX))
    an.warnings.pop()
    assert cache.store("k" * 64, an)
    assert an.keylog is not None  # the caller's analysis keeps its key log


def test_run_rejects_missing_file(capsys):
    from wirefall.ui.web import run

    assert run(["/nonexistent/x.pcap"]) == 2
    assert "no such file" in capsys.readouterr().err


def test_wirefall_web_serves_and_cleans_up(tmp_path):
    """``wirefall web FILE`` binds 127.0.0.1, prints its address, serves the page and the
    capture, and removes its private upload folder when stopped (SIGTERM)."""
    import signal
    import socket
    import sys
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, TMPDIR=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONUNBUFFERED="1")
    p = subprocess.Popen([sys.executable, "-c", "import sys; from wirefall.ui.cli import main; sys.exit(main(sys.argv[1:]))",
                          "web", str(H2), "--keylog", str(H2K), "--port", str(port)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(ROOT))
    try:
        line = p.stdout.readline()
        assert line.startswith(f"wirefall web: serving on http://127.0.0.1:{port}/"), line
        body = ""
        for _ in range(100):
            try:
                body = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5).read().decode()
                break
            except OSError:
                time.sleep(0.1)
        assert "<title>wirefall</title>" in body and "dash_renderer" in body
        # listening on loopback only (state 0A = LISTEN, local address 127.0.0.1)
        conns = [c for c in Path("/proc/net/tcp").read_text().splitlines()[1:] if f":{port:04X} " in c and c.split()[3] == "0A"]
        assert conns and all(c.split()[1].startswith("0100007F:") for c in conns)
        folders = [d for d in tmp_path.iterdir() if d.name.startswith("wirefall-web-")]
        assert len(folders) == 1 and stat.S_IMODE(folders[0].stat().st_mode) == 0o700
    finally:
        p.send_signal(signal.SIGTERM)
        rc = p.wait(20)
    assert rc == 0
    assert not [d for d in tmp_path.iterdir() if d.name.startswith("wirefall-web-")]


AMAZON = ROOT.parent / "shared" / "captures" / "pageload-amazon"


@needs_tshark
def test_uploaded_third_party_page_load(tmp_path):
    """A real Chrome page load (www.amazon.com: h2 and h3, gzip-compressed capture and key
    log) uploaded through the page: the HTTP/2 rows are tshark's HTTP/2 requests."""
    import gzip

    from wirefall.ui.web import WebState
    from wirefall.ui.web.app import cb_open, cb_select, cb_stage, cb_waterfall

    if not AMAZON.exists():
        pytest.skip("third-party captures not present")
    cap, keys = AMAZON / "amazon1.cap.gz", AMAZON / "amazon1.key_log.txt.gz"
    plain_keys = tmp_path / "amazon.keys"
    plain_keys.write_bytes(gzip.decompress(keys.read_bytes()))
    out = _tshark("-r", str(cap), "-o", f"tls.keylog_file:{plain_keys}", "-Y", "http2.type == 1", "-T", "fields",
                  "-e", "http2.headers.method", "-e", "http2.headers.path", "-e", "http2.headers.authority", "-E", "occurrence=a")
    truth = []
    for line in out.splitlines():
        m, pth, auth = line.split("\t")
        for a, b, c in zip(m.split(","), pth.split(","), auth.split(",")):
            if a:
                truth.append((a, f"https://{c}{b}"))
    st = WebState(use_cache=False)
    try:
        staged, msg, _ = cb_stage(st, "capture", {"contents": _data_url(cap.read_bytes()), "name": cap.name}, None)
        key, kmsg, _ = cb_stage(st, "keylog", {"contents": _data_url(keys.read_bytes()), "name": keys.name}, None)
        assert staged and key, (_text(msg), _text(kmsg))
        xid, _ = cb_open(st, 1, staged, key)
        e = st.wait(xid)
        assert e.status == "done", e.error
        fig, err, cnt, _why = cb_waterfall(st, xid, "v", ["h2"], [], [], [], "")
        rows = _rows_of(fig)
        assert len(truth) == 9 and len(rows) == len(truth)
        shown = sorted((x.method, x.url) for x in e.analysis.exchanges if x.protocol == "h2")
        assert shown == sorted(truth)
        # the POST: click its row, read its request headers (same as tshark's)
        post = next(r for r in fig.data if r.type == "bar")
        for tr in fig.data:
            if tr.type != "bar":
                continue
            for y, cd in zip(tr.y, tr.customdata):
                if next(x for x in e.analysis.exchanges if x.id == cd).method == "POST":
                    post = (y, cd)
        xid2, detail = cb_select(st, {"points": [{"y": post[0], "customdata": post[1]}]}, xid, ["h2"], [], [], [], "")
        tpost = [f["headers"] for f in tshark_h2(cap, plain_keys) if f["type"] == 1 and (":method", "POST") in f["headers"]]
        assert len(tpost) == 1
        assert _table_pairs(detail, "detail-request-headers") == [tuple(h) for h in tpost[0]]
    finally:
        st.close()


# ------------------------------------------------------------ Host, Origin, token (issue 18)


def _client(host="127.0.0.1", token=None, state=None, port=8050):
    from wirefall.ui.web import WebState, create_app

    st = state or WebState(use_cache=False)
    app = create_app(st, host=host, token=token, port=port)
    return st, app.server.test_client()


def test_host_and_origin_must_name_the_server():
    """DNS rebinding: a page of rebind.attacker.example whose name now points at 127.0.0.1
    sends Host and Origin rebind.attacker.example — refused, on every route."""
    st, c = _client()
    try:
        for path in ("/", "/_dash-layout", "/_dash-dependencies"):
            assert c.get(path, headers={"Host": "127.0.0.1:8050"}).status_code == 200, path
            r = c.get(path, headers={"Host": "rebind.attacker.example:8050", "Origin": "http://rebind.attacker.example:8050"})
            assert r.status_code == 403 and b"Host" in r.data, path
        for host in ("localhost:8050", "127.0.0.1", "[::1]:8050", "LOCALHOST:8050"):
            assert c.get("/", headers={"Host": host}).status_code == 200, host
        # the right Host but a page of another site (its Origin): refused too, also for callbacks and uploads
        for origin in ("http://rebind.attacker.example:8050", "null", "http://127.0.0.1.attacker.example"):
            r = c.post("/_dash-update-component", json={}, headers={"Host": "127.0.0.1:8050", "Origin": origin})
            assert r.status_code == 403 and b"Origin" in r.data, origin
        r = c.post("/_wirefall/upload/capture", data=H3.read_bytes(), headers={"Host": "127.0.0.1:8050", "Origin": "http://evil.example"})
        assert r.status_code == 403 and not list(Path(st.tmpdir).iterdir())
        assert c.get("/", headers={"Host": "127.0.0.1:8050", "Origin": "http://localhost:8050"}).status_code == 200
        assert c.get("/", headers={"Host": "10.1.2.3:8050"}).status_code == 403  # not served on that address
    finally:
        st.close()
    # --host NAME: that name too (and still no other)
    st, c = _client(host="wirefall.lan", token="t")
    try:
        assert c.get("/?token=t", headers={"Host": "wirefall.lan:8050"}).status_code == 302
        assert c.get("/?token=t", headers={"Host": "rebind.attacker.example:8050"}).status_code == 403
    finally:
        st.close()


def test_token_flow_on_a_non_loopback_host():
    """``--host 0.0.0.0``: no request is answered without the token; ``?token=`` once sets an
    HttpOnly SameSite=Strict cookie and redirects to the address without it (as Jupyter);
    a wrong token or another server's cookie is refused; the Host check still holds."""
    token = "s3cret-token"
    st, c = _client(host="0.0.0.0", token=token, port=8123)
    try:
        h = {"Host": "192.0.2.7:8123"}  # any address of the machine
        for path in ("/", "/_dash-layout", "/_dash-component-suites/dash/dash-renderer/build/dash_renderer.min.js"):
            r = c.get(path, headers=h)
            assert r.status_code == 403 and b"token" in r.data, path
        assert c.get("/?token=wrong", headers=h).status_code == 403
        r = c.get("/?token=" + token + "&x=1", headers=h)
        assert r.status_code == 302 and r.headers["Location"].endswith("/?x=1")
        cookie = r.headers["Set-Cookie"]
        assert cookie.startswith(f"wirefall_token_8123={token};") and "HttpOnly" in cookie and "SameSite=Strict" in cookie
        assert c.get("/", headers=h).status_code == 200  # the test client keeps the cookie
        assert c.post("/_dash-update-component", json={}, headers=h).status_code != 403
        assert c.get("/", headers={"Host": "rebind.attacker.example:8123"}).status_code == 403
    finally:
        st.close()
    st, c = _client(host="0.0.0.0", token=token, port=8123)
    try:
        c.set_cookie("wirefall_token_8123", "another-token", domain="192.0.2.7")
        assert c.get("/", headers={"Host": "192.0.2.7:8123"}).status_code == 403
    finally:
        st.close()


def test_wirefall_web_on_all_interfaces_prints_token_and_warning(tmp_path):
    """``wirefall web --host 0.0.0.0``: the address with ``?token=``, a warning that decrypted
    traffic is served to the network; without the token 403, with it the page."""
    import http.cookiejar
    import re
    import signal
    import socket
    import sys
    import time
    import urllib.error
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, TMPDIR=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONUNBUFFERED="1")
    p = subprocess.Popen([sys.executable, "-c", "import sys; from wirefall.ui.cli import main; sys.exit(main(sys.argv[1:]))",
                          "web", str(H2), "--keylog", str(H2K), "--port", str(port), "--host", "0.0.0.0"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(ROOT))
    try:
        line = p.stdout.readline()
        m = re.match(rf"wirefall web: serving on http://0\.0\.0\.0:{port}/\?token=([A-Za-z0-9_-]{{43}})  ", line)
        assert m, line
        token = m.group(1)
        warning = p.stderr.readline()
        assert "warning" in warning and "decrypted traffic" in warning and "network" in warning, warning
        base = f"http://127.0.0.1:{port}/"
        for _ in range(100):
            try:
                urllib.request.urlopen(base, timeout=5)
                raise AssertionError("answered without the token")
            except urllib.error.HTTPError as e:
                assert e.code == 403
                break
            except urllib.error.URLError:
                time.sleep(0.1)
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        body = opener.open(base + "?token=" + token, timeout=10).read().decode()  # redirected, with the cookie
        assert "<title>wirefall</title>" in body
    finally:
        p.send_signal(signal.SIGTERM)
        rc = p.wait(20)
    assert rc == 0


# --------------------------------------------------------------- uploads: route, lifetime, memory


def test_upload_route_streams_to_disk_and_checks():
    st, c = _client(state=None)
    st.upload_limit = 1 << 20
    try:
        h = {"Host": "127.0.0.1:8050", "Content-Type": "application/octet-stream"}
        r = c.post("/_wirefall/upload/capture", data=H3.read_bytes(), headers={**h, "X-Wirefall-Name": "..%2F..%2Fpage-h3.pcapng"})
        j = r.get_json()
        assert r.status_code == 200 and j["name"] == "page-h3.pcapng" and j["size"] == H3.stat().st_size, j
        kind, path, name, size = st._staged[j["token"]]
        assert Path(path).read_bytes() == H3.read_bytes()
        # the page's callback then gets {token}: the server's own record is shown
        staged, msg, _ = __import__("wirefall.ui.web.app", fromlist=["cb_stage"]).cb_stage(st, "capture", {"token": j["token"], "name": "x"}, None)
        assert staged == {"token": j["token"], "name": "page-h3.pcapng", "size": size} and "page-h3.pcapng" in _text(msg)
        big = b"\xd4\xc3\xb2\xa1" + bytes(2 << 20)
        j2 = c.post("/_wirefall/upload/capture", data=big, headers=h).get_json()
        assert j2["error"] and "limit for a capture upload is 1.0 MiB" in j2["message"]
        j3 = c.post("/_wirefall/upload/capture", data=b"GIF89a", headers=h).get_json()
        assert "not a pcap or pcapng capture" in j3["message"]
        j4 = c.post("/_wirefall/upload/keylog", data=b"hello\n", headers=h).get_json()
        assert "not a key log" in j4["message"]
        j5 = c.post("/_wirefall/upload/keylog", data=H3K.read_bytes(), headers=h).get_json()
        assert j5["size"] == H3K.stat().st_size
        assert sorted(p.name for p in Path(st.tmpdir).iterdir()) == sorted([Path(path).name, Path(st._staged[j5["token"]][1]).name])
        # a new upload replaces the page's previous one (unless it was opened)
        j6 = c.post("/_wirefall/upload/capture?replaces=" + j["token"], data=H3.read_bytes(), headers=h).get_json()
        assert st.staged(j["token"]) is None and not Path(path).exists() and st.staged(j6["token"])
        assert c.post("/_wirefall/upload/other", data=b"x", headers=h).status_code == 404
    finally:
        st.close()


def test_staged_uploads_are_deleted_after_their_lifetime(monkeypatch):
    import time

    from wirefall.ui.web import WebState
    from wirefall.ui.web.app import cb_open, cb_poll, cb_stage

    st = WebState(use_cache=False, upload_lifetime=1.0)
    try:
        a = st.stage_upload("capture", "a.pcapng", _data_url(H3.read_bytes()))
        pa = Path(st._staged[a["token"]][1])
        # replaced by the next upload of the page (cb_stage's previous): deleted at once
        b = st.stage_upload("capture", "b.pcapng", _data_url(H3.read_bytes()), replaces=a["token"])
        assert not pa.exists() and st.staged(a["token"]) is None
        pb = Path(st._staged[b["token"]][1])
        k = st.stage_upload("keylog", "k.keys", _data_url(H3K.read_bytes()))
        pk = Path(st._staged[k["token"]][1])
        xid, _ = cb_open(st, 1, b, k)
        e = st.wait(xid)
        assert e.status == "done"
        c = st.stage_upload("capture", "c.pcapng", _data_url(H3.read_bytes()))  # never opened
        pc = Path(st._staged[c["token"]][1])
        # a page showing the opened capture keeps it (every poll uses it); the unopened one goes
        end = time.monotonic() + 2.5
        while time.monotonic() < end:
            cb_poll(st, 1, xid, None, None, None)
            time.sleep(0.05)
        assert not pc.exists() and st.staged(c["token"]) is None  # the sweeper thread did it
        assert pb.exists() and pk.exists() and st.get(xid) is e
        staged, msg, _ = cb_stage(st, "capture", {"token": c["token"], "name": "c.pcapng"}, None)
        assert staged is None and "upload it again" in _text(msg)
        # nobody looks at it any more: the entry and its files go too
        end = time.monotonic() + 10
        while pb.exists() and time.monotonic() < end:
            time.sleep(0.1)
        assert not pb.exists() and not pk.exists() and st.get(xid) is None and not list(Path(st.tmpdir).iterdir())
        # a capture named on the command line is never deleted
        f = st.add_file(str(H3), [str(H3K)])
        st.wait(f.id)
        assert st.sweep(time.monotonic() + 10_000) == [] and st.get(f.id) is f and H3.exists()
    finally:
        st.close()


UPLOAD_SERVER = r'''
import logging, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
from werkzeug.serving import make_server
from wirefall.ui.web import WebState, create_app
logging.getLogger("werkzeug").setLevel(logging.ERROR)
st = WebState(upload_limit=int(sys.argv[1]), use_cache=False)
srv = make_server("127.0.0.1", 0, create_app(st).server, threaded=True)
print(srv.server_port, flush=True)
try:
    srv.serve_forever()
finally:
    st.close()
'''


def _vm(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(key)


def test_upload_memory_is_bounded(tmp_path):
    """A 96 MB upload through the page's route: the server's peak RSS grows by a few MB (the
    1 MiB steps), not by a multiple of the file (a data: URL through a callback: 190 MB took
    1.27 GB).  The file on disk is the upload, byte for byte."""
    import hashlib
    import http.client
    import sys

    size = 96 << 20
    src = tmp_path / "big.pcap"
    h = hashlib.sha256()
    with open(src, "wb") as f:
        block = os.urandom(1 << 20)
        head = b"\xd4\xc3\xb2\xa1\x02\x00\x04\x00" + bytes(16)
        f.write(head)
        h.update(head)
        left = size - len(head)
        while left:
            b = block[: min(left, len(block))]
            f.write(b)
            h.update(b)
            left -= len(b)
    env = dict(os.environ, TMPDIR=str(tmp_path), PYTHONPATH=str(ROOT))
    p = subprocess.Popen([sys.executable, "-c", UPLOAD_SERVER, str(size + (1 << 20))], stdout=subprocess.PIPE, text=True,
                         env=env, cwd=str(ROOT))
    try:
        port = int(p.stdout.readline())
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        c.request("GET", "/")
        c.getresponse().read()
        base = _vm(p.pid, "VmRSS")
        with open(src, "rb") as f:
            c.request("POST", "/_wirefall/upload/capture", body=f,
                      headers={"Content-Type": "application/octet-stream", "Content-Length": str(size), "X-Wirefall-Name": "big.pcap"})
            r = c.getresponse()
            answer = json.loads(r.read())
        peak = _vm(p.pid, "VmHWM")
        assert r.status == 200 and answer["size"] == size, answer
        assert peak - base < 24 << 20, (base >> 20, peak >> 20)
        staged = [d for d in tmp_path.iterdir() if d.name.startswith("wirefall-web-")][0] / "upload-1.cap"
        h2 = hashlib.sha256()
        with open(staged, "rb") as f:
            for b in iter(lambda: f.read(1 << 20), b""):
                h2.update(b)
        assert h2.hexdigest() == h.hexdigest()
    finally:
        p.terminate()
        p.wait(20)


# ---------------------------------------------------------------- what the page loads (ui.web.bundles)


from dash import dcc  # noqa: E402


def _graphs(component):
    if isinstance(component, dcc.Graph):
        yield component.figure
    ch = getattr(component, "children", None)
    for c in ch if isinstance(ch, (list, tuple)) else ([ch] if ch is not None and not isinstance(ch, str) else []):
        yield from _graphs(c)


def test_every_web_figure_draws_with_the_basic_plotly_bundle(state, h2):
    """The page loads plotly.js's basic build (bar, pie, scatter): every figure the web app
    draws — waterfall (small and windowed), connections, statistics, compare, the empty
    ones — uses those trace types only (a trace of another type would draw nothing)."""
    from wirefall.ui.web import bundles, views
    from wirefall.ui.web.app import cb_connections, cb_stats, cb_waterfall

    figs = [cb_waterfall(state, h2.id, "v", [], [], [], [], "")[0], cb_waterfall(state, "nosuch", "v", [], [], [], [], "")[0],
            cb_connections(state, h2.id, "v", "connections")[0], *cb_stats(state, h2.id, "v", "stats")[1:6],
            views._empty_fig("x", "nothing")]
    big = W_big()
    figs.append(views.figure(views.filtered_view(big), start=0))
    if views.compare_available():
        figs += list(_graphs(views.compare_view(h2, h2)))
    types = {tr.type for f in figs for tr in f.data}
    assert types and types <= bundles.BASIC_TRACES, types - bundles.BASIC_TRACES
    assert {"bar", "scatter"} <= types


def W_big():
    """A 400-request entry (a windowed waterfall) from tests/wf_scale_fixture.py."""
    import tempfile

    from wf_scale_fixture import make_big_analysis

    from wirefall.ui.web import WebState

    an = make_big_analysis(400)
    st = WebState(use_cache=False, analyze=lambda path, keylogs=None, progress=None, **kw: an)
    with tempfile.NamedTemporaryFile(suffix=".pcap") as f:
        e = st.add_file(f.name, name="big.pcap")
        st.wait(e.id, 60)
    st.close()
    return e


def test_basic_plotly_bundle_served_where_the_page_loads_plotly():
    """At the path dash-renderer loads plotly.js from, the server answers plotly's basic
    build of the plotly package's plotly.js version (a quarter of the full bundle),
    compressed, 304 when asked again; the page's scripts hold no dash-ag-grid bundle, only
    the stand-in that loads it."""
    from plotly.offline import get_plotlyjs_version

    from wirefall.ui.web import WebState, bundles, create_app

    data = bundles.BASIC_BUNDLE.read_bytes()
    assert bundles.bundle_version(data) == get_plotlyjs_version()  # (else the full bundle is served: see basic_plotly)
    full = Path(sys.modules["plotly"].__file__).parent / "package_data" / "plotly.min.js"
    assert len(data) < full.stat().st_size / 3
    st = WebState(use_cache=False)
    try:
        c = create_app(st).server.test_client()
        r = c.get("/" + bundles.PLOTLY_PATH, headers={"Accept-Encoding": "br"})
        assert r.status_code == 200 and r.headers["Content-Encoding"] == "br" and r.mimetype == "application/javascript"
        import brotli

        assert brotli.decompress(r.get_data()) == data
        assert c.get("/" + bundles.PLOTLY_PATH, headers={"Accept-Encoding": "br", "If-None-Match": r.headers["ETag"]}).status_code == 304
        page = c.get("/").get_data(as_text=True)
        assert "dash_ag_grid.v" in page and "_dash-component-suites/dash_ag_grid/" in page  # (the stand-in's source)
        assert not re.search(r'<script src="[^"]*dash_ag_grid[^"]*"', page)
    finally:
        st.close()


def test_of_babels_polyfill_only_regenerator_runtime_is_served():
    """At the polyfill's path the page gets its regenerator-runtime module alone (which sets
    the regeneratorRuntime global the renderer and dcc use; node runs it when installed), a
    small part of the file; a file of another shape is served as it is; the page loads no
    dash_table bundle."""
    import shutil
    import subprocess

    import dash

    from wirefall.ui.web import WebState, bundles, create_app

    full = (Path(dash.__file__).parent / "deps" / "polyfill@7.12.1.min.js").read_bytes()
    small = bundles.regenerator_only(full)
    assert small is not None and b"regeneratorRuntime=" in small and len(small) < len(full) / 10
    assert bundles.regenerator_only(full.replace(b"regeneratorRuntime=", b"somethingElse=")) is None
    st = WebState(use_cache=False)
    try:
        c = create_app(st).server.test_client()
        page = c.get("/").get_data(as_text=True)
        src = re.search(r'<script src="([^"]*/dash/deps/polyfill@7[^"]*)"', page).group(1)
        r = c.get(src)
        assert r.status_code == 200 and r.get_data() == small and r.mimetype == "application/javascript"
        assert not re.search(r'<script src="[^"]*dash_table[^"]*"', page)
    finally:
        st.close()
    if shutil.which("node"):
        out = subprocess.run(["node", "-e", "eval(require('fs').readFileSync(0, 'utf8')); "
                              "console.log(typeof regeneratorRuntime.mark, typeof regeneratorRuntime.wrap)"],
                             input=small.decode(), capture_output=True, text=True, timeout=60)
        assert out.stdout.split() == ["function", "function"], out.stderr


def test_a_key_log_added_to_a_capture_from_disk_is_named_never_by_its_upload_path():
    """A key log uploaded beside a capture opened from disk (Add key log): its warnings
    (junk lines) name the uploaded file, never the server's private upload folder."""
    from wirefall.ui.web import WebState
    from wirefall.ui.web import views

    st = WebState(use_cache=False)
    try:
        e = st.add_file(str(H3), [], name="page-h3.pcapng")
        st.wait(e.id)
        junk = H3K.read_bytes() + b"junk line one\nCLIENT_RANDOM zz zz\n"
        k = st.stage_upload("keylog", "mine.keys", _data_url(junk))
        n = st.add_keylog(e.id, k["token"])
        st.wait(n.id)
        assert n.status == "done", n.error
        texts = [str(li.children) for li in views.connection_notes(n)]
        assert any("mine.keys" in t and "not understood" in t for t in texts), texts
        assert not any(st.tmpdir in t or "upload-" in t for t in texts), texts
        assert n.analysis.connections and any(c.quic is not None for c in n.analysis.connections)
    finally:
        st.close()


def test_layout_holds_the_first_polls_answer(state, h2, h3):
    """The layout carries the first poll's answer (the capture the page's address names — the
    layout request's Referer — or the first; its version and status), so the page's first
    callbacks need not wait for a poll; the first poll then changes neither."""
    from dash import no_update

    from wirefall.ui.web import create_app
    from wirefall.ui.web.app import cb_poll, layout

    def find(c, id_):
        if getattr(c, "id", None) == id_:
            return c
        kids = getattr(c, "children", None)
        for k in kids if isinstance(kids, (list, tuple)) else [kids] if kids is not None else []:
            if (f := find(k, id_)) is not None:
                return f
        return None

    app = create_app(state)
    for named, want in ((h3.id, h3.id), (h2.id, h2.id), ("nope", state.list()[0].id), (None, state.list()[0].id)):
        headers = {"Referer": f"http://127.0.0.1:8050/?capture={named}&sel=1"} if named else {}
        with app.server.test_request_context("/_dash-layout", headers=headers):
            page = layout(state)
        dd, ver = find(page, "capture"), find(page, "version")
        assert dd.value == want and want in {o["value"] for o in dd.options} and ver.data == f"{want}:done", named
        assert find(page, "compare-a").options == dd.options
        out = cb_poll(state, 1, dd.value, dd.options, ver.data, None)
        assert out[0] is no_update and out[1] is no_update and out[5] is no_update  # the first poll: no change
    page = layout(state)  # (outside a request: the first capture)
    assert find(page, "capture").value == state.list()[0].id


def test_page_figure_is_the_figure_built_afresh(state, h2):
    """The first window's figure kept as JSON (views.page_figure, made by the warm-up) is the
    figure built afresh, and each answer is a copy: a selection drawn on one is not on the next;
    a filtered, zoomed or later window's figure is built each time."""
    import json

    from wirefall.ui.web import views
    from wirefall.ui.web.app import cb_waterfall

    v = views.filtered_view(h2)
    fresh = views.figure(v, title=h2.name, revision=h2.id, start=0)
    kept = views.page_figure(h2, v, ([], [], [], [], "", "start"), title=h2.name, revision=h2.id, start=0)
    assert json.loads(kept.to_json()) == json.loads(fresh.to_json())
    sel = h2.analysis.exchanges[0].id
    fig, *_ = cb_waterfall(state, h2.id, "v", [], [], [], [], "", None, {"capture": h2.id, "id": sel})
    assert any(s.name == "selected" for s in fig.layout.shapes)
    fig, *_ = cb_waterfall(state, h2.id, "v", [], [], [], [], "", None, {"capture": h2.id, "id": None})
    assert not any(s.name == "selected" for s in fig.layout.shapes)
    assert json.loads(fig.to_json()) == json.loads(fresh.to_json())
    zoomed = views.page_figure(h2, v, (), title=h2.name, x_range=[1.0, 2.0], revision=h2.id, start=0)
    assert list(zoomed.layout.xaxis.range) == [1.0, 2.0]


def test_no_keylog_advice_says_how_the_page_takes_one(state):
    """A capture opened without its key log: the waterfall's banner said "next: pass --keylog
    FILE" — a command-line option, which the page has no place for; there a key log is
    uploaded (alone, it re-analyses the open capture with it).  The advice says that."""
    from wirefall.ui.web import app as webapp
    from wirefall.ui.web import views

    e = state.add_file(str(H2), [], name="page-h2 without keys.pcapng")
    state.wait(e.id)
    assert e.status == "done", e.error
    box = _text(webapp.explain_view(e, 0, 0))
    assert "no requests: 2 connections not decrypted" in box
    assert "--keylog" not in box and views.WEB_KEYLOG in box


def test_status_line_says_how_much_of_a_browser_log_matched(state):
    """A browser log laid over a capture in the page was announced ("HAR X laid over Y") and
    never summed up: a HAR of another page (WebPageTest's amazon load over pw-h2) matched none
    of its requests and the page did not say so — each request simply had no browser bar, which
    reads as "the browser agrees" or as nothing at all.  The status line gives each log's
    summary, as the TUI and `wirefall summary` do."""
    from wirefall.ui.web.app import cb_poll

    page = PAGE
    wpt = ROOT.parent / "shared" / "captures" / "hars" / "webpagetest-amazon.har.gz"
    good = state.add_file(str(page / "pw-h2.pcapng"), [str(page / "pw-h2.keys")], name="pw-h2.pcapng",
                          overlays=[("har", str(page / "pw-h2.har.gz"), "pw-h2.har.gz")])
    state.wait(good.id)
    assert good.status == "done", good.error
    text = _text(cb_poll(state, 1, good.id, None, None, None)[2])
    assert "HAR pw-h2.har.gz: 13 of 13 requests it sent matched" in text
    # the Statistics tab's summary: the HAR's DOMContentLoaded and load event beside TTFB and page load
    from wirefall.analyzer import stats
    from wirefall.ui.web import views

    rows = dict(views.stats_summary(good))
    ev = stats.compute(good.analysis).browser_events
    assert rows["DOMContentLoaded (HAR)"] == f"{ev['dom_content_loaded'][1] * 1000:.1f} ms" == "215.8 ms"
    assert rows["Load event (HAR)"] == f"{ev['load_event'][1] * 1000:.1f} ms"
    if wpt.exists():
        other = state.add_file(str(page / "pw-h2.pcapng"), [str(page / "pw-h2.keys")], name="pw-h2.pcapng + amazon",
                               overlays=[("har", str(wpt), "webpagetest-amazon.har.gz")])
        state.wait(other.id)
        text = _text(cb_poll(state, 1, other.id, None, None, None)[2])
        assert "HAR webpagetest-amazon.har.gz: 0 of " in text and "13 wire-only" in text
