"""Browser logs in the TUI and the web app (issue 25): a NetLog / HAR / qlog laid over a
capture (``wirefall tui CAP --netlog F``, ``wirefall web CAP --netlog F``, a log uploaded
beside the open capture) lists per phase the wire's time, the browser's and their
difference and marks each field by its source; a log opened alone shows the requests of
the capture of the same load.

Outside truth: tshark on the captures (the wire's times and requests), the NetLogs' raw
JSON events read with plain ``json`` (the browser's times, priorities), the HAR's and
qlog's own JSON, and the capture of the same load opened in the same UI.  The TUI is
driven by Textual's pilot (as tests/test_tui.py), the web app by Playwright in headless
Chromium against ``wirefall web`` started as a user starts it.
"""
from __future__ import annotations

import asyncio
import gzip
import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLES, need_tool, run_tool
from tuifix import wait_loaded
from webfix import CHROMIUM, browser_fixture, page_fixture, row_labels, wait_rows, wait_text
from test_browserlog import ALONE, NETLOG_LOADS, _cli, _netlog_sent, _raw_netlog

from wirefall.analyzer.browserlog import comparison as cmp
from wirefall.analyzer.browserlog import open_any, overlay
from wirefall.analyzer.model import not_sent_of
from wirefall.analyzer.pipeline import analyze

PAGE = SAMPLES / "page"
H2, H2K, H2NL = PAGE / "page-h2.pcapng", PAGE / "page-h2.keys", PAGE / "page-h2.netlog.json.gz"


def _tshark_status_times(cap: Path, keys: Path) -> dict[int, float]:
    """HTTP/2 stream -> epoch time of the packet with its response HEADERS (tshark)."""
    rows = run_tool("tshark", "-r", str(cap), "-o", f"tls.keylog_file:{keys}", "-Y", 'http2.header.name == ":status"',
                    "-T", "fields", "-e", "frame.time_epoch", "-e", "http2.streamid").splitlines()
    out: dict[int, float] = {}
    for r in rows:
        t, sids = r.split("\t")
        for sid in set(sids.split(",")):
            out.setdefault(int(sid), float(t))
    return out


def _packet_times(cap: Path) -> dict[int, float]:
    """packet number -> epoch time (tshark)."""
    rows = run_tool("tshark", "-r", str(cap), "-T", "fields", "-e", "frame.number", "-e", "frame.time_epoch").splitlines()
    return {int(n): float(t) for n, t in (r.split("\t") for r in rows)}


def _netlog_priorities(path: Path) -> dict[int, str]:
    """URL_REQUEST source id -> the last priority its raw events name."""
    c, events = _raw_netlog(path)
    ev = {v: k for k, v in c["logEventTypes"].items()}
    out: dict[int, str] = {}
    for e in events:
        p = e.get("params") or {}
        if ev.get(e["type"]) in ("REQUEST_ALIVE", "URL_REQUEST_SET_PRIORITY") and "priority" in p:
            out[e["source"]["id"]] = p["priority"]
    return out


MS = r"([+-]?\d+\.\d{3}) ms|–"


def _phase_line(body: str, label: str) -> tuple[float | None, float | None, float | None]:
    """(wire, browser, difference) in ms from the request view's phase row ``label``."""
    m = re.search(rf"^  {re.escape(label)}\s+({MS})\s+({MS})\s+({MS})", body, re.M)
    assert m, (label, body[-2000:])
    vals = [m.group(i) for i in (1, 3, 5)]
    return tuple(None if v == "–" else float(v.split()[0]) for v in vals)  # type: ignore[return-value]


def _field_line(body: str, label: str) -> tuple[str, str]:
    m = re.search(rf"^  {re.escape(label)}\s+(wire|browser log|inferred)\s+(.*)$", body, re.M)
    assert m, (label, body[-2000:])
    return m.group(1), m.group(2)


# ------------------------------------------------------------------------ the TUI


def _tui(path, keylogs=(), overlays=(), each=None, size=(200, 60)):
    """Open ``path`` in the TUI, go to the waterfall; ``each(app, row, body)`` for every
    request's view (opened with Enter, closed with Escape).  Returns the waterfall's rows."""
    from wirefall.ui.tui.app import TextScreen, WirefallApp, request_text
    from wirefall.ui.tui.widgets import WaterfallView

    out: dict = {}

    async def run():
        app = WirefallApp(str(path), [str(k) for k in keylogs], overlays=[(k, str(p)) for k, p in overlays])
        async with app.run_test(size=size) as pilot:
            await wait_loaded(pilot, app, steps=600, settle=0, must_load=True)
            await pilot.press("2")
            await pilot.pause(0.05)
            wv = app.query_one(WaterfallView)
            out["rows"] = list(wv.rows)
            out["an"] = app.an
            if each is not None:
                # the first and the last request through the screen (Enter, Escape: ~1 s of
                # rendering each on a busy machine); the others through the function it shows
                opened = sorted({0, wv.count - 1}) if wv.count else []
                for i in opened:
                    wv.move_to(i)
                    await pilot.press("enter")
                    await pilot.pause(0.05)
                    assert isinstance(app.screen, TextScreen)
                    body = app.screen.body.plain
                    assert body == request_text(app.an, app.exchange(wv.rows[i].exchange), wv.rows[i]).plain
                    each(app, wv.rows[i], body)
                    await pilot.press("escape")
                    await pilot.pause(0.02)
                for i in range(wv.count):
                    if i not in opened:
                        r = wv.rows[i]
                        each(app, r, request_text(app.an, app.exchange(r.exchange), r).plain)

    asyncio.run(run())
    return out


def test_tui_request_view_lists_wire_browser_and_difference_per_phase():
    """``wirefall tui page-h2.pcapng --netlog page-h2.netlog.json.gz``: every request's view
    shows response start on the wire (tshark's packet time), in the browser (the NetLog's raw
    event time) and their difference; the fields by source (URL from the wire, priority
    from the browser log, as the raw events name it)."""
    need_tool("tshark")
    wire = _tshark_status_times(H2, H2K)
    times = _packet_times(H2)
    t0 = times[1]
    sent = _netlog_sent(H2NL)
    prio = _netlog_priorities(H2NL)
    seen = []
    unsent = []

    def check(app, row, body):
        e = app.exchange(row.exchange)
        sid = int(e.browser["id"])
        if not_sent_of(e.browser):  # (Chrome's own look-ups that failed before sending: rows with no wire, the log's side only)
            assert "Browser log (NetLog page-h2.netlog.json.gz, request" in body
            assert all(_phase_line(body, lb)[0] is None for lb in ("request start", "response start", "response end"))
            unsent.append(sid)
            return
        assert "Wire and browser log (NetLog page-h2.netlog.json.gz, request" in body
        w, b, d = _phase_line(body, "response start")
        # the wire's moment is the packet of the response headers' first byte, the packet the
        # row names: at most the packet where tshark shows the HEADERS (where its TLS record completes)
        pkt = int(re.search(r"^  response start .*\[(\d+)\]$", body, re.M).group(1))
        assert w == pytest.approx((times[pkt] - t0) * 1000, abs=0.0011)
        assert 0 <= wire[e.stream_id] - times[pkt] < 0.05
        assert b == pytest.approx((sent[sid]["headers_at"] - t0) * 1000, abs=0.0011)
        assert d == pytest.approx(b - w, abs=0.0021)
        for label in ("request start", "request end", "response end", "send", "wait", "receive"):
            assert all(v is not None for v in _phase_line(body, label)), label
        src, val = _field_line(body, "URL")
        assert (src, val) == ("wire", sent[sid]["url"])
        assert _field_line(body, "priority (browser)") == ("browser log", prio[sid])
        assert _field_line(body, "matched by") == ("browser log", "connection, stream")
        if row.first_of_connection:  # the request that opened the connection: its handshake too
            w, b, d = _phase_line(body, "connect start")
            assert w == pytest.approx(0.0, abs=0.001) and d is not None and abs(d) < 50
        seen.append(sid)

    out = _tui(H2, [H2K], [("netlog", H2NL)], each=check)
    assert sorted(seen) == sorted(sent) and len(seen) == 13 and len(out["rows"]) == 13 + len(unsent)
    assert all(r.browser is not None for r in out["rows"])


def test_tui_shows_urls_the_browser_log_filled(tmp_path):
    """page-h2c cut after its first HEADERS (the later :authority is an HPACK entry the
    capture lost) with a HAR of the whole load that names no stream ids, as Chrome's
    DevTools HAR does: the URLs come from the log, marked "browser log" (matched on the
    connection by path and time); they are tshark's of the uncut capture."""
    need_tool("editcap")
    src = PAGE / "page-h2c.pcapng"
    cut = tmp_path / "cut.pcapng"
    subprocess.run(["editcap", "-r", str(src), str(cut), "9-33"], check=True, capture_output=True)
    har = tmp_path / "whole.har"
    _cli("export", src, "-o", har)
    d = json.loads(har.read_text())
    for x in d["log"]["entries"]:
        for k in [k for k in x if "stream" in k.lower()]:
            del x[k]
    har.write_text(json.dumps(d))
    port = run_tool("tshark", "-r", str(src), "-Y", "tcp.flags.syn == 1 && tcp.flags.ack == 0", "-T", "fields",
                    "-e", "tcp.dstport").split()[0]
    rows = run_tool("tshark", "-r", str(src), "-d", f"tcp.port=={port},http2", "-Y", "http2.type == 1 && tcp.dstport == " + port,
                    "-T", "fields", "-e", "http2.headers.authority", "-e", "http2.headers.path").splitlines()
    truth = {}
    for r in rows:
        auths, paths = r.split("\t")
        for a, pth in zip(auths.split(","), paths.split(",")):
            truth[pth] = f"http://{a}{pth}"
    seen = []

    def check(app, row, body):
        e = app.exchange(row.exchange)
        src_, url = _field_line(body, "URL")
        assert url == truth[e.path] and src_ == "browser log"
        assert _field_line(body, "request headers")[0] == "browser log"
        assert _field_line(body, "matched by") == ("browser log", "connection, url, time")
        seen.append(url)

    _tui(cut, (), [("har", har)], each=check)
    assert len(seen) == 12


LATE = (SAMPLES / "quic/page-h3-late.pcapng", SAMPLES / "quic/page-h3-late.keys", SAMPLES / "quic/page-h3-late.netlog.json.gz")


def test_matches_by_time_alone_are_marked_inferred(tmp_path):
    """page-h3-late: the QUIC connection opened before the capture, most QPACK entries
    inserted before it, so the capture knows few URLs.  A HAR of the load without stream
    ids (the NetLog opened alone, exported, stream ids removed) can only be matched by
    time: those matches are marked "inferred" in the model and the TUI.  Truth: the NetLog's
    own stream ids (the browser's), which match every request exactly; a request over before
    the capture began is not matched; an inferred match differs from the truth only where
    the browser sent two requests in the same millisecond (the log cannot tell them apart)."""
    cap, keys, nl = LATE
    har = tmp_path / "late.har"
    _cli("export", nl, "-o", har)
    d = json.loads(har.read_text())
    for x in d["log"]["entries"]:
        for k in [k for k in x if "stream" in k.lower()]:
            del x[k]
    har.write_text(json.dumps(d))
    truth = analyze(str(cap), keylogs=[str(keys)])
    st = overlay(truth, str(nl))
    c, events = _raw_netlog(nl)
    streams = sorted({e["params"]["quic_stream_id"] for e in events if "quic_stream_id" in (e.get("params") or {})})
    assert st["matched"] == 26 and st["unmatched"] == 0 + 13 and st["wire_only"] == 0
    wire_exs = [e for e in truth.exchanges if not not_sent_of(e.browser)]  # (not the log's not-sent rows)
    assert sorted(e.stream_id for e in wire_exs) == [s_ for s_ in streams if s_ >= 52]  # the captured ones (README: 52..152)
    assert {u["reason"] for u in st["unmatched_requests"]} == {"it was over before the capture began"}
    assert all(e.sources["match_by"] == "connection+stream" for e in wire_exs)
    by_id = {e.id: e for e in wire_exs}
    an = analyze(str(cap), keylogs=[str(keys)])
    s = overlay(an, str(har))
    assert s["matched"] == 26 and s["unmatched"] == 13
    inferred = [e for e in an.exchanges if e.sources.get("match") == "inferred"]
    assert len(inferred) >= 20  # the capture knows almost no URL of it
    for e in an.exchanges:
        t = by_id.get(e.id)
        if t is None:  # (a not-sent row of the log: made from it, no wire to match)
            assert not_sent_of(e.browser) and not_sent_of(truth.exchanges[[x.id for x in truth.exchanges].index(e.id)].browser)
            continue
        if e.url != t.url:
            assert e.sources.get("match") == "inferred"
            assert e.browser["times"]["send_start"] == pytest.approx(t.browser["times"]["send_start"], abs=1e-3), e.url
    assert abs(s["offsets"]["response_start"]["median"]) < 0.01  # the right requests: offsets of milliseconds, not of the first load's second
    marks = {}

    def check(app, row, body):
        e = app.exchange(row.exchange)
        if not not_sent_of(e.browser):
            marks[e.id] = _field_line(body, "matched by")

    _tui(cap, [keys], [("har", har)], each=check)
    assert {k: v[0] for k, v in marks.items()} == {
        e.id: "inferred" if e.sources.get("match") == "inferred" else "browser log" for e in an.exchanges if not not_sent_of(e.browser)}
    assert all(v[1] == "connection, time" for k, v in marks.items() if v[0] == "inferred")


def _key(r) -> tuple:
    return (r.method, r.url, r.status)


@pytest.mark.parametrize("cap,keys,log", ALONE, ids=[x[2] for x in ALONE])
def test_tui_opens_a_browser_log_alone_with_the_captures_requests(cap, keys, log):
    """``wirefall tui F.json``: the same requests (method, URL, status) as the capture of the
    same load in the TUI; each request's view says the times are the browser's (no wire
    column), its fields from the browser log."""
    wire = _tui(SAMPLES / cap, [SAMPLES / keys])
    kind = open_any(str(SAMPLES / log)).source
    views = []

    def check(app, row, body):
        if not_sent_of(row.browser):  # (Chrome's own requests that never reached the network: rows of their own)
            return
        assert "Browser log (" in body and "no packets: a browser log opened alone" in body
        w, b, d = _phase_line(body, "response start")
        assert w is None and d is None and b is not None
        e = app.exchange(row.exchange)
        assert b == pytest.approx((e.browser["times"]["response_start"] - app.an.start_time) * 1000, abs=0.0011)
        assert _field_line(body, "URL") == ("browser log", row.url)
        views.append(row.url)

    alone = _tui(SAMPLES / log, each=check)
    assert sorted(_key(r) for r in alone["rows"] if not not_sent_of(r.browser)) == sorted(map(_key, wire["rows"]))
    assert alone["an"].source == kind and alone["an"].packets == 0
    assert sorted(views) == sorted(r.url for r in wire["rows"])


def test_tui_bad_overlay_is_a_message_not_a_crash(tmp_path):
    from wirefall.ui.tui.app import WirefallApp

    bad = tmp_path / "bad.har"
    bad.write_text('{"log": {"entries": 5}}')

    async def run():
        app = WirefallApp(str(H2), [str(H2K)], overlays=[("har", str(bad))])
        async with app.run_test(size=(160, 40)) as pilot:
            end = time.monotonic() + 60  # (by the clock, not 300 pauses: one run under load 8 ran out of them)
            while not (app.loaded or app.load_error) and time.monotonic() < end:
                await pilot.pause(0.05)
            assert app.load_error is not None and "log.entries is not a list" in app.load_error, (app.loaded, app.load_error)

    asyncio.run(run())


def test_cli_tui_and_web_take_the_overlay_options():
    from wirefall.ui.cli import build_parser, overlay_args

    a = build_parser().parse_args(["tui", str(H2), "--netlog", "x.json", "--har", "y.har"])
    assert overlay_args(a) == [("har", "y.har"), ("netlog", "x.json")]
    a = build_parser().parse_args(["web", str(H2), "--qlog", "z.qlog"])
    assert overlay_args(a) == [("qlog", "z.qlog")]


# ---------------------------------------------------------------- the shared rows


def test_phase_rows_are_the_overlays_numbers_on_every_netlog_load():
    """The typed rows both UIs show are the overlay's offsets: on every lab load with its
    NetLog, for every matched request, row.diff == browser − wire of the same phase, and
    the response start's browser time is the NetLog's raw event time."""
    for cap, keys, log in NETLOG_LOADS:
        an = analyze(str(SAMPLES / cap), keylogs=[str(SAMPLES / keys)])
        overlay(an, str(SAMPLES / log))
        sent = _netlog_sent(SAMPLES / log)
        for e in an.exchanges:
            rows = {r.name: r for r in cmp.phase_comparison(e, an.connections[e.connection])}
            b = e.browser
            if not_sent_of(b):  # (a request that never reached the network: no wire, no difference)
                assert all(r.wire is None and r.diff is None for r in rows.values())
                continue
            for k in ("request_start", "request_end", "response_start", "response_end"):
                assert rows[k].diff == pytest.approx(b["offsets"][k], abs=1e-9), (log, k)
                assert rows[k].wire == getattr(e, k)
            assert rows["response_start"].browser == sent[int(b["id"])]["headers_at"]
            for k in ("send", "wait", "receive"):
                assert rows[k].diff == pytest.approx(b["durations"][k], abs=1e-9)
            if "connect_start" in b["offsets"]:
                assert rows["connect_start"].diff == b["offsets"]["connect_start"]


# ---------------------------------------------------------------- the web app


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# what `wirefall web` is given: the capture with its NetLog laid over it, and each browser log alone
WEB_FILES = [
    ("page/page-h2.pcapng", "page/page-h2.keys", "page/page-h2.netlog.json.gz"),  # c1: capture + --netlog
    ("page/page-h2.netlog.json.gz", None, None),  # c2 ... alone
    ("page/pw-h2.pcapng", "page/pw-h2.keys", None),
    ("page/pw-h2.har.gz", None, None),
    ("quic/aioquic-qlog.pcap", "quic/aioquic-qlog.keys", None),
    ("quic/aioquic-qlog.qlog", None, None),
]


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    """Two ``wirefall web`` servers as a user starts them: ``CAP --keylog K --netlog F``, and
    one with the browser logs alone (and the captures of their loads, for comparison; the
    key logs of both given to all, as one --keylog list)."""
    pytest.importorskip("playwright.sync_api")
    if not os.path.exists(CHROMIUM):
        pytest.skip("chromium not installed")
    d = tmp_path_factory.mktemp("web-overlay")
    env = dict(os.environ, PYTHONPATH=str(ROOT), XDG_CACHE_HOME=str(d / "xdg"))
    procs, urls = [], []
    cmds = [["web", SAMPLES / "page/page-h2.pcapng", "--keylog", H2K, "--netlog", H2NL, "--no-cache"],
            ["web", *[SAMPLES / f for f, _k, _l in WEB_FILES[1:]],
             *sum([["--keylog", SAMPLES / k] for _f, k, _l in WEB_FILES[1:] if k], []), "--no-cache"]]
    try:
        for cmd in cmds:
            port = _free_port()
            p = subprocess.Popen([sys.executable, "-m", "wirefall", *map(str, cmd), "--port", str(port)], env=env, cwd=ROOT,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            procs.append(p)
            urls.append(f"http://127.0.0.1:{port}/")
        for u in urls:
            for _ in range(300):
                try:
                    socket.create_connection(("127.0.0.1", int(u.rsplit(":", 1)[1].strip("/"))), 0.2).close()
                    break
                except OSError:
                    time.sleep(0.1)
        yield urls, d
    finally:
        for p in procs:
            p.terminate()
            try:
                p.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()


browser = browser_fixture()
pg = page_fixture(timeout=60_000)  # (60 s, where the other web tests' pages wait 30 s)


def _rows(pg, n: int | None = None) -> list[str]:
    if n is not None:
        wait_rows(pg, n)
    return row_labels(pg)


def _wait_status(pg, text: str) -> None:
    wait_text(pg, "#status", text)


def _table(pg, sel: str) -> list[list[str]]:
    return pg.evaluate("s => [...document.querySelectorAll(s + ' tbody tr')].map(tr => [...tr.children].map(td => td.innerText))", sel)


def _ms(v: str) -> float | None:
    return None if v == "–" else float(v.split()[0])


def test_web_request_detail_lists_wire_browser_and_difference(web, pg):
    """``wirefall web page-h2.pcapng --keylog K --netlog F``: the detail of each request
    (selected through the address, as a click does) has the phase table — response start
    on the wire = tshark's packet time, in the browser = the NetLog's raw time — and the
    fields by source."""
    need_tool("tshark")
    (url, _), _d = web
    wire = _tshark_status_times(H2, H2K)
    times = _packet_times(H2)
    t0 = times[1]
    sent = _netlog_sent(H2NL)
    an = analyze(str(H2), keylogs=[str(H2K)])  # the exchange ids the page uses (the same analysis)
    overlay(an, str(H2NL))
    exs = sorted((x for x in an.exchanges if not not_sent_of(x.browser)), key=lambda x: x.id)
    assert len(exs) == 13
    for e in (exs[0], exs[6], exs[-1]):  # (a page load each: three of them; the TUI test checks all 13 rows)
        pg.goto(url + f"?capture=c1&sel={e.id}")
        pg.wait_for_selector("#detail-browser")
        ph = {r[0]: r for r in _table(pg, "#detail-browser")}
        w, b, d = (_ms(x) for x in ph["response start"][1:4])
        pkt = int(ph["response start"][4])
        assert w == pytest.approx((times[pkt] - t0) * 1000, abs=0.0011)
        assert 0 <= wire[e.stream_id] - times[pkt] < 0.05
        assert b == pytest.approx((sent[int(e.browser["id"])]["headers_at"] - t0) * 1000, abs=0.0011)
        assert d == pytest.approx(b - w, abs=0.0021)
        fs = {r[0]: r for r in _table(pg, "#detail-sources")}
        assert fs["URL"][1:] == ["wire", sent[int(e.browser["id"])]["url"]]
        assert fs["priority (browser)"][1] == "browser log" and fs["matched by"][1:] == ["browser log", "connection, stream"]
        head = pg.inner_text("#request-detail")
        assert "Wire and browser log (NetLog page-h2.netlog.json.gz, request" in head


def _dash_tables(c, out: dict) -> dict:
    """id -> rows of cell texts of the html.Table components under ``c`` (a Dash tree)."""
    from dash import html

    def text(x) -> str:
        ch = getattr(x, "children", x)
        if isinstance(ch, (list, tuple)):
            return "".join(text(y) for y in ch)
        return "" if ch is None else ch if isinstance(ch, str) else text(ch) if not isinstance(ch, (int, float)) else str(ch)

    if isinstance(c, html.Table) and getattr(c, "id", None):
        body = next(x for x in c.children if isinstance(x, html.Tbody))
        out[c.id] = [[text(td) for td in tr.children] for tr in body.children]
    ch = getattr(c, "children", None)
    for x in ch if isinstance(ch, (list, tuple)) else [ch] if ch is not None and not isinstance(ch, str) else []:
        _dash_tables(x, out)
    return out


def test_web_detail_tables_for_every_request():
    """The web request detail (ui.web.views.request_detail, as the page shows it) of every
    request of page-h2 with its NetLog (as ``wirefall web CAP --netlog F`` opens it): response
    start on the wire at the packet it names (tshark's time), in the browser at the NetLog's
    raw time; the same text as the TUI's rows (both format analyzer.browserlog.comparison)."""
    from wirefall.ui.tui.overlay import comparison_text
    from wirefall.ui.web import WebState
    from wirefall.ui.web import views

    need_tool("tshark")
    times = _packet_times(H2)
    t0 = times[1]
    sent = _netlog_sent(H2NL)
    st = WebState(use_cache=False)
    try:
        e = st.add_file(str(H2), [str(H2K)], name="page-h2.pcapng", overlays=[("netlog", str(H2NL), "page-h2.netlog.json.gz")])
        st.wait(e.id)
        assert e.status == "done", e.error
        wire_exs = [x for x in e.analysis.exchanges if not not_sent_of(x.browser)]  # (and the log's not-sent rows)
        assert len(wire_exs) == 13
        for x in wire_exs:
            tables = _dash_tables(views.request_detail(e, x.id), {})
            ph = {r[0]: r for r in tables["detail-browser"]}
            pkt = int(ph["response start"][4])
            assert _ms(ph["response start"][1]) == pytest.approx((times[pkt] - t0) * 1000, abs=0.0011)
            assert _ms(ph["response start"][2]) == pytest.approx((sent[int(x.browser["id"])]["headers_at"] - t0) * 1000, abs=0.0011)
            fs = {r[0]: r[1:] for r in tables["detail-sources"]}
            assert fs["URL"] == ["wire", sent[int(x.browser["id"])]["url"]]
            tui = comparison_text(e.analysis, x).plain
            for label, row in ph.items():  # the TUI's line of the phase: the same three cells
                assert re.search(rf"^  {re.escape(label)}\s+{re.escape(row[1])}\s+{re.escape(row[2])}\s+{re.escape(row[3])}", tui, re.M)
    finally:
        st.close()


def test_web_opens_browser_logs_alone_with_the_captures_requests(web, pg):
    """``wirefall web page-h2.netlog.json.gz pw-h2.har.gz aioquic-qlog.qlog`` (beside the
    captures of the same loads): each log's waterfall lists the requests of its capture's."""
    (_, url), _d = web
    ids = {"page-h2.netlog.json.gz": "c1", "pw-h2.pcapng": "c2", "pw-h2.har.gz": "c3", "aioquic-qlog.pcap": "c4",
           "aioquic-qlog.qlog": "c5"}

    def rows_of(cid: str, name: str, n: int) -> list[str]:
        pg.goto(url + f"?capture={cid}")
        _wait_status(pg, name + ": ")
        return _rows(pg, n)

    def paths(labels):  # "… h2 127.0.0.1:PORT/path" -> /path (the label's protocol badge and host may differ)
        return sorted(re.sub(r"^.*?\d+\.\d+\.\d+\.\d+:\d+", "", lbl) for lbl in labels)

    # the capture of the NetLog's load is in the other server (c1 there): its truth is tshark's
    need_tool("tshark")
    rows = run_tool("tshark", "-r", str(H2), "-o", f"tls.keylog_file:{H2K}", "-Y", 'http2.header.name == ":path"', "-T", "fields",
                    "-e", "http2.header.name", "-e", "http2.header.value").splitlines()
    h2_paths = sorted(v for r in rows for n, v in zip(*(x.split(",") for x in r.split("\t"))) if n == ":path")
    # (and the NetLog's requests that never reached the network, rows of their own: Chrome's failed
    # lookups, to hosts that are not the page server's address)
    nl = open_any(str(PAGE / "page-h2.netlog.json.gz"))
    unsent = [e for e in nl.exchanges if not_sent_of(e.browser)]
    labels = rows_of(ids["page-h2.netlog.json.gz"], "page-h2.netlog.json.gz", len(nl.exchanges))
    assert len(labels) == len(nl.exchanges) == 13 + len(unsent)
    assert paths([lbl for lbl in labels if re.search(r"\d+\.\d+\.\d+\.\d+:\d+", lbl)]) == h2_paths
    assert paths(rows_of(ids["pw-h2.har.gz"], "pw-h2.har.gz", 13)) == paths(rows_of(ids["pw-h2.pcapng"], "pw-h2.pcapng", 13))
    ql = rows_of(ids["aioquic-qlog.qlog"], "aioquic-qlog.qlog", 7)
    assert paths(ql) == paths(rows_of(ids["aioquic-qlog.pcap"], "aioquic-qlog.pcap", 7))
    # a request of a log alone: the browser's times, no wire column, its fields from the log
    an = open_any(str(SAMPLES / "page/pw-h2.har.gz"))
    e = an.exchanges[0]
    pg.goto(url + f"?capture={ids['pw-h2.har.gz']}&sel={e.id}")
    pg.wait_for_selector("#detail-browser")
    ph = {r[0]: r for r in _table(pg, "#detail-browser")}
    assert ph["response start"][1] == "–" and ph["response start"][3] == "–"
    raw = json.loads(gzip.decompress((PAGE / "pw-h2.har.gz").read_bytes()))["log"]["entries"]
    first = min(raw, key=lambda x: x["startedDateTime"])
    t = first["timings"]
    wait_ms = t["wait"]
    assert float(ph["wait"][2].split()[0]) == pytest.approx(wait_ms, abs=0.0011)
    fs = {r[0]: r for r in _table(pg, "#detail-sources")}
    assert fs["URL"][1:] == ["browser log", first["request"]["url"]]
    assert "a browser log opened alone" in pg.inner_text("#request-detail")
    # uploaded alone (as a capture is, with no key log): the same requests as its capture's
    pg.goto(url)
    pg.set_input_files("#up-capture input[type=file]", str(SAMPLES / "quic/aioquic-qlog.qlog"))
    pg.wait_for_function("() => document.querySelector('#up-capture-msg').innerText.includes('aioquic-qlog.qlog')")
    pg.click("#btn-open")
    pg.wait_for_selector("#open-done")
    _wait_status(pg, "aioquic-qlog.qlog: 0 packets")
    assert paths(_rows(pg, 7)) == paths(ql)


def test_web_upload_a_browser_log_beside_the_capture(web, pg):
    """Upload pw-h2.pcapng and its key log, Analyse; upload its HAR beside it, "Lay over the
    open capture": a new entry whose requests all carry the HAR's record (URL from the wire,
    the HAR's times beside); a capture uploaded as the log is refused."""
    (_, url), _d = web
    cap, keys, har = PAGE / "pw-h2.pcapng", PAGE / "pw-h2.keys", PAGE / "pw-h2.har.gz"
    pg.goto(url)
    pg.set_input_files("#up-capture input[type=file]", str(cap))
    pg.wait_for_function("() => document.querySelector('#up-capture-msg').innerText.includes('pw-h2.pcapng')")
    pg.set_input_files("#up-keylog input[type=file]", str(keys))
    pg.wait_for_function("() => document.querySelector('#up-keylog-msg').innerText.includes('pw-h2.keys')")
    pg.click("#btn-open")
    pg.wait_for_selector("#open-done")
    _wait_status(pg, "pw-h2.pcapng: ")
    _rows(pg, 13)
    # a capture is not a browser log
    pg.set_input_files("#up-browserlog input[type=file]", str(cap))
    pg.wait_for_selector("#up-browserlog-msg .error")
    assert "is not a browser log" in pg.inner_text("#up-browserlog-msg")
    pg.set_input_files("#up-browserlog input[type=file]", str(har))
    pg.wait_for_function("() => document.querySelector('#up-browserlog-msg').innerText.includes('HAR: pw-h2.har.gz')")
    pg.click("#btn-overlay")
    pg.wait_for_selector("#overlay-done")
    _wait_status(pg, "pw-h2.pcapng + pw-h2.har.gz: ")
    _rows(pg, 13)
    # the new entry is the one the message names ("… laid over pw-h2.pcapng as c8"); the address
    # names it one callback later (cb_url_out) — read before that, under load, it still named the
    # plain upload, whose requests carry no browser record (CI: no #detail-browser at ?capture=c7)
    cid = pg.inner_text("#overlay-done").rsplit(" as ", 1)[1].strip()
    pg.wait_for_function("c => new URLSearchParams(location.search).get('capture') === c", arg=cid)
    an = analyze(str(cap), keylogs=[str(keys)])
    s = overlay(an, str(har))
    assert s["matched"] == 13
    raw = json.loads(gzip.decompress(har.read_bytes()))["log"]["entries"]
    by_url = {x["request"]["url"]: x for x in raw}
    for e in an.exchanges[:4]:
        pg.goto(url + f"?capture={cid}&sel={e.id}")
        pg.wait_for_selector("#detail-browser")
        fs = {r[0]: r for r in _table(pg, "#detail-sources")}
        assert fs["URL"][1:] == ["wire", e.url] and e.url in by_url
        ph = {r[0]: r for r in _table(pg, "#detail-browser")}
        assert _ms(ph["wait"][2]) == pytest.approx(by_url[e.url]["timings"]["wait"], abs=0.0011)
        assert _ms(ph["response start"][1]) is not None and _ms(ph["response start"][3]) is not None
        assert "HAR pw-h2.har.gz" in pg.inner_text("#request-detail")  # its name, not the upload folder's path


def test_web_broken_browser_log_beside_a_capture_is_a_message(tmp_path):
    """A HAR nested too deeply (scripts/hostile/browserlog_inputs.py) uploaded beside the
    open capture: the new entry fails with one message naming the upload, not the private
    folder's path; the capture's own entry is untouched; a capture is refused as the log."""
    import base64

    sys.path.insert(0, str(ROOT / "scripts" / "hostile"))
    import browserlog_inputs as H

    from wirefall.ui.web import WebState
    from wirefall.ui.web.overlay import lay_over
    from wirefall.ui.web.state import UploadError

    st = WebState(use_cache=False)
    try:
        cap = st.add_file(str(H2), [str(H2K)], name="page-h2.pcapng")
        st.wait(cap.id)
        tok = st.stage_upload("capture", "deep.har", "data:application/json;base64," + base64.b64encode(H.har_deep()).decode())
        n, kind = lay_over(st, cap.id, tok["token"])
        st.wait(n.id)
        assert kind == "har" and n.status == "error" and "nested too deeply" in n.error
        assert "deep.har" in n.error and st.tmpdir not in n.error
        assert cap.status == "done" and all(e.browser is None for e in cap.analysis.exchanges)
        other = st.stage_upload("capture", "x.pcapng", "data:;base64," + base64.b64encode(H2.read_bytes()).decode())
        with pytest.raises(UploadError, match="x.pcapng is not a browser log"):
            lay_over(st, cap.id, other["token"])
        with pytest.raises(UploadError, match="open a capture first"):
            lay_over(st, None, tok["token"])
    finally:
        st.close()
