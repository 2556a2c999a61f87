"""Compare as a web-performance engineer repeating the SPDY whitepaper's experiment reads it
(HTTP/1.1 against SPDY, HTTP/2 and HTTP/3 of the same page): which side won and why at a glance
(``compare.verdict``: the CLI's lines above its table, the TUI's, the figure's title), a side's
page called incomplete for its own gaps only (not background traffic's), and a QUIC side's
losses before the capture point said to be uncounted beside a TCP side's retransmissions.
Truth from outside: tshark (the responses' last bytes, the requests' first, the QUIC packet
numbers missing, the client randoms the key log lacks), the HAR's own onLoad and Chrome's NetLog.
"""
from __future__ import annotations

import asyncio
import gzip
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from wirefall.analyzer.compare import PAGE_NOTES, QUIC_LOSS_NOTE, compare, render_text, verdict
from wirefall.analyzer.pipeline import analyze

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "sample_captures" / "page"
LOSSY = ROOT / "sample_captures" / "lossy"

pytestmark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")


def _an(d: Path, name: str, har: str | None = None):
    an = analyze(str(d / f"{name}.pcapng"), keylogs=[str(d / f"{name}.keys")])
    if har:
        from wirefall.analyzer.browserlog import overlay

        overlay(an, str(d / har), kind="har")
    return an


def _tshark(path: Path, keys: Path, *args: str) -> list[list[str]]:
    r = subprocess.run(["tshark", "-r", str(path), "-o", f"tls.keylog_file:{keys}", *args], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return [ln.split("\t") for ln in r.stdout.splitlines() if ln.strip()]


def _first(path: Path) -> float:
    return float(_tshark(path, path.with_suffix(".keys"), "-c", "1", "-T", "fields", "-e", "frame.time_epoch")[0][0])


def _h1_times(name: str) -> tuple[dict[str, float], dict[str, float]]:
    """HTTP/1.1: each URL's request frame and response's last frame (tshark's http.response is on
    the frame that completes it), in seconds from the capture's first packet."""
    cap = PAGE / f"{name}.pcapng"
    keys = cap.with_suffix(".keys")
    req = {u: float(t) for t, u in _tshark(cap, keys, "-Y", "http.request", "-T", "fields", "-e", "frame.time_relative",
                                           "-e", "http.request.uri")}
    resp = {u.split("/", 3)[-1]: float(t) for t, u in _tshark(cap, keys, "-Y", "http.response", "-T", "fields", "-e",
                                                             "frame.time_relative", "-e", "http.response_for.uri")}
    return req, {"/" + k: v for k, v in resp.items()}


def _h2_last(name: str) -> float:
    """HTTP/2: the last DATA frame ending a stream (the page's last response byte)."""
    cap = PAGE / f"{name}.pcapng"
    rows = _tshark(cap, cap.with_suffix(".keys"), "-Y", "http2.type == 0 && http2.flags.end_stream == 1", "-T", "fields",
                   "-e", "frame.time_relative")
    return max(float(r[0]) for r in rows)


@pytest.fixture(scope="module")
def h1_h2():
    a, b = _an(PAGE, "page-h1"), _an(PAGE, "page-h2")
    return compare(a, b)


# ------------------------------------------------------------------ the verdict: who won, and where the time went


def test_verdict_names_the_side_whose_last_byte_tshark_puts_first(h1_h2):
    """page-h1 against page-h2: tshark's last response frames (HTTP/1.1's last http.response,
    HTTP/2's last DATA with END_STREAM) from each capture's first packet — the page's start here,
    each page's first row being its connection's SYN — put h2 first: the verdict names B (h2),
    both times in ms and the difference as tshark gives them.  Before, nothing named a winner:
    the reader had to find it in the table's first row."""
    res = h1_h2
    _req, resp = _h1_times("page-h1")
    last_a, last_b = max(resp.values()), _h2_last("page-h2")
    for s, name in (("a", "page-h1"), ("b", "page-h2")):  # (the page starts at the capture's first packet)
        assert res[s]["page_start"] == pytest.approx(_first(PAGE / f"{name}.pcapng"), abs=1e-6)
    lines = dict(verdict(res))
    win = lines["winner"]
    assert last_b < last_a
    assert win.startswith("faster by the last response byte: B (h2), ")
    assert f"{1000 * last_b:,.0f} ms against {1000 * last_a:,.0f} ms for A (http/1.1)" in win
    assert f"{1000 * (last_a - last_b):,.0f} ms sooner" in win
    assert f"(A − B) / A = {100 * (last_a - last_b) / last_a:.1f} %" in win
    # the CLI prints it above the table, after the two side lines
    text = render_text(res).splitlines()
    assert text[3] == win and text.index(win) < next(i for i, ln in enumerate(text) if ln.startswith("page load time"))


def test_where_the_time_went_is_the_gap_tshark_shows(h1_h2):
    """A (http/1.1)'s longest stretch with no page request in flight runs from its document's
    last byte (tshark's http.response for "/") to its next request's first (http.request of
    /css/main.css): 60 → 299 ms, 239 of the 338 ms — the client's, not the wire's: Chrome's
    NetLog of the same load has the same hole between "/"'s response headers read and
    main.css's request sent.  Before, nothing said where A lost its 200 ms."""
    res = h1_h2
    req, resp = _h1_times("page-h1")
    from wirefall.analyzer.compare import in_flight

    f = in_flight(res, "a")
    assert f["first"] == pytest.approx(req["/"], abs=1e-6)
    assert f["gap"][0] == pytest.approx(resp["/"], abs=1e-6)
    assert f["gap"][1] == pytest.approx(req["/css/main.css"], abs=1e-6)
    # every other stretch between tshark's request and response frames is shorter
    spans = sorted((req[u], resp[u]) for u in req)
    holes, end = [], spans[0][1]
    for a, b in spans[1:]:
        if a > end:
            holes.append(a - end)
        end = max(end, b)
    assert max(holes) == pytest.approx(f["gap"][1] - f["gap"][0], abs=1e-6)
    assert f["idle"] == pytest.approx(sum(holes) + max(0.0, res["page"]["page_load_time"]["a"] - end), abs=1e-6)
    line = next(t for k, t in verdict(res) if k == "time" and t.startswith("A (http/1.1): "))
    assert (f"{1000 * (req['/css/main.css'] - resp['/']):,.0f} ms of it at once "
            f"({1000 * resp['/']:,.0f} → {1000 * req['/css/main.css']:,.0f} ms, after /)") in line
    # the NetLog: the browser's own hole (ms) between "/"'s headers read and main.css's request sent
    log = json.loads(gzip.decompress((PAGE / "page-h1.netlog.json.gz").read_bytes()))
    names = {v: k for k, v in log["constants"]["logEventTypes"].items()}
    url_of, times = {}, {}
    for e in log["events"]:
        n, sid = names[e["type"]], e["source"]["id"]
        if n == "URL_REQUEST_START_JOB" and e.get("phase") == 1:
            url_of[sid] = e["params"]["url"]
        if sid in url_of:
            if n == "HTTP_TRANSACTION_READ_HEADERS" and e.get("phase") == 2:
                times.setdefault((url_of[sid], "headers"), int(e["time"]))
            if n == "HTTP_TRANSACTION_SEND_REQUEST" and e.get("phase") == 1:
                times.setdefault((url_of[sid], "send"), int(e["time"]))
    doc = next(u for u, _k in times if u.endswith("/"))
    css = next(u for u, _k in times if u.endswith("/css/main.css"))
    hole = (times[(css, "send")] - times[(doc, "headers")]) / 1000
    assert abs(hole - (f["gap"][1] - f["gap"][0])) < 0.015, hole  # (ms ticks, and the browser's side of the wire)


def test_load_event_against_last_byte_disagree_as_the_har_says():
    """pw-h1 against pw-h2 with their HARs: by the last response byte (tshark) h2 is sooner, by
    the browser's load event (each HAR's own onLoad, 240 ms against 273 ms) h1 is: the verdict
    names each measure's side and says the two disagree — before, the table's rows showed "4.1 %"
    and "-22.5 %" with nothing said."""
    a, b = _an(PAGE, "pw-h1", "pw-h1.har.gz"), _an(PAGE, "pw-h2", "pw-h2.har.gz")
    res = compare(a, b)
    on = {}
    for s, name in (("a", "pw-h1"), ("b", "pw-h2")):
        har = json.loads(gzip.decompress((PAGE / f"{name}.har.gz").read_bytes()))["log"]
        on[s] = har["pages"][0]["pageTimings"]["onLoad"]
    cap_b = PAGE / "pw-h2.pcapng"
    last_b = max(float(r[0]) for r in _tshark(cap_b, cap_b.with_suffix(".keys"), "-Y",
                                              "http2.type == 0 && http2.flags.end_stream == 1", "-T", "fields",
                                              "-e", "frame.time_epoch")) - res["b"]["page_start"]
    cap_a = PAGE / "pw-h1.pcapng"
    last_a = max(float(r[0]) for r in _tshark(cap_a, cap_a.with_suffix(".keys"), "-Y", "http.response", "-T", "fields",
                                              "-e", "frame.time_epoch")) - res["a"]["page_start"]
    assert last_b < last_a and on["a"] < on["b"]
    lines = dict(verdict(res))
    assert lines["winner"].startswith("faster by the last response byte: B (h2)")
    assert lines["load_event"].startswith("faster by the browser's load event: A (http/1.1)")
    assert lines["load_event"].endswith("the two measures disagree")


# ------------------------------------------------------------------ an incomplete page: its own gaps only


def test_incomplete_page_says_its_own_gaps_not_backgrounds():
    """bg-mixed: one TLS connection whose client random the key log lacks (tshark: the Client
    Hellos' randoms against the key log's CLIENT_RANDOM / traffic-secret lines) makes the page
    incomplete; the metadata long-poll the capture ends inside is background traffic, not the
    page's.  B's "incomplete" (what the withheld line and the CLI's side say) names the
    connection alone; before, it read "1 connection not decrypted; background traffic (not the
    page's): 1 request with unknown fields", the long-poll counted against the page."""
    cap, keys = PAGE / "bg-mixed.pcapng", PAGE / "bg-mixed.keys"
    randoms = {r[0] for r in _tshark(cap, keys, "-Y", "tls.handshake.type == 1", "-T", "fields",
                                     "-e", "tls.handshake.random") if r and r[0]}
    known = {ln.split()[1].lower() for ln in keys.read_text().splitlines() if len(ln.split()) == 3}
    missing = randoms - known
    assert len(missing) == 1
    res = compare(_an(PAGE, "page-h2"), _an(PAGE, "bg-mixed"))
    assert res["b"]["incomplete"] == "1 connection not decrypted"
    (w,) = res["withheld"]
    assert w["side"] == "b" and "(1 connection not decrypted)" in w["text"] and "background" not in w["text"]
    assert dict(verdict(res))["winner"] == "no faster side named: B is incomplete, its times lower bounds"


# ------------------------------------------------------------------ QUIC losses: uncounted, and said so


def test_quic_losses_before_the_capture_are_said_uncounted():
    """lossy SPDY against lossy HTTP/3 (3 % loss each way, captured at the client): tshark finds
    server 1-RTT packet numbers missing (packets lost before the capture point) while every
    retransmission figure of B is 0 or – beside A's TCP retransmissions.  The retransmissions
    warning, the verdict's caveats and the page notes say a QUIC side's losses are not counted;
    before, B read as a load that lost nothing."""
    cap, keys = LOSSY / "page-h3.pcapng", LOSSY / "page-h3.keys"
    rows = _tshark(cap, keys, "-Y", "quic.header_form == 0", "-T", "fields", "-e", "udp.srcport", "-e", "quic.packet_number")
    server = _tshark(cap, keys, "-c", "1", "-T", "fields", "-e", "udp.dstport")[0][0]
    pns = sorted(int(x) for port, n in rows if port == server for x in n.split(","))
    lost = set(range(pns[0], pns[-1] + 1)) - set(pns)
    assert len(lost) >= 5
    res = compare(_an(LOSSY, "page-spdy"), _an(LOSSY, "page-h3"))
    p = res["page"]
    assert p["tcp_retransmissions_s2c"]["a"] > 0 and p["tcp_retransmissions_s2c"]["b"] is None
    assert p["retransmitted_bytes_s2c"]["b"] == 0
    (w,) = [w for w in res["warning_items"] if w["kind"] == "retransmissions"]
    assert "B is QUIC: packets lost before the capture point are counted nowhere" in w["text"]
    caveats = dict(verdict(res))["caveats"]
    assert "B (h3)'s QUIC losses uncounted beside A (spdy/3.1)'s TCP retransmissions" in caveats
    assert QUIC_LOSS_NOTE in PAGE_NOTES and QUIC_LOSS_NOTE in render_text(res)


# ------------------------------------------------------------------ the figure and the TUI say it too


def test_figure_title_names_the_winner_and_shades_the_gap(h1_h2):
    """The side-by-side figure's title is the verdict's winner line, its subtitle the other
    lines; A's longest stretch without a request (tshark: "/"'s last byte to main.css's request)
    is shaded on A's axis and labelled.  Before, the title was "13 requests matched by path and
    query" and nothing marked the hole."""
    pytest.importorskip("plotly")
    from wirefall.ui.compare_figure import compare_figure

    a, b = _an(PAGE, "page-h1"), _an(PAGE, "page-h2")
    res = compare(a, b)
    fig = compare_figure(a, b, res)
    lines = verdict(res)
    assert fig.layout.title.text == f"<b>{lines[0][1]}</b>"
    assert all(t in fig.layout.title.subtitle.text for k, t in lines[1:] if "/" not in t)
    req, resp = _h1_times("page-h1")
    (rect,) = [s for s in fig.layout.shapes if s.type == "rect" and s.xref == "x"]
    assert rect.x0 == pytest.approx(1000 * resp["/"], abs=1e-3) and rect.x1 == pytest.approx(1000 * req["/css/main.css"], abs=1e-3)
    assert any(an.text == f"no page request in flight {1000 * (req['/css/main.css'] - resp['/']):,.0f} ms"
               for an in fig.layout.annotations)


@pytest.mark.slow
def test_tui_compare_shows_the_verdict_first(h1_h2):
    """The TUI's compare screen (Textual pilot): the Table tab opens on the verdict, the CLI's
    lines word for word; the Waterfalls tab heads its bars with the winner line."""
    pytest.importorskip("textual")
    from textual.widgets import Static

    from tuifix import wait_compare
    from wirefall.ui.tui.app import WirefallApp

    want = [t for _k, t in verdict(h1_h2)]

    async def run() -> tuple[str, str]:
        app = WirefallApp(str(PAGE / "page-h1.pcapng"), [str(PAGE / "page-h1.keys")], compare=str(PAGE / "page-h2.pcapng"),
                          keylogs_b=[str(PAGE / "page-h2.keys")])
        async with app.run_test(size=(200, 50)) as pilot:
            scr = await wait_compare(pilot, app, steps=600, settle=0.1)
            assert scr.loaded, scr.error
            return (str(scr.query_one("#cmp-verdict", Static).render()), str(scr.query_one("#cmp-wf-verdict", Static).render()))

    table, wf = asyncio.run(run())
    assert table.splitlines() == want
    assert wf.splitlines() == [want[0]]


def test_a_har_side_is_no_incomplete_page_and_its_clock_is_said():
    """pw-h1's capture against pw-h2's HAR alone: the HAR has every request of the page (its
    entries against tshark's HTTP/2 request paths of the same load), so its page is whole
    (``page_complete``) though it has no packets — the verdict's caveats name "a browser log
    side", not "a page incomplete" (the completeness' "no packets" is no gap of its page), and
    the winner line says B's times are the browser's, not the wire's."""
    from wirefall.analyzer.browserlog import open_log

    har = json.loads(gzip.decompress((PAGE / "pw-h2.har.gz").read_bytes()))["log"]
    cap = PAGE / "pw-h2.pcapng"
    paths = sorted(r[0] for r in _tshark(cap, cap.with_suffix(".keys"), "-Y", "http2.headers.path", "-T", "fields",
                                         "-e", "http2.headers.path"))
    assert sorted("/" + e["request"]["url"].split("/", 3)[3] for e in har["entries"]) == paths
    res = compare(_an(PAGE, "pw-h1"), open_log(str(PAGE / "pw-h2.har.gz")))
    assert res["b"]["page_complete"] and res["b"]["requests"] == len(paths)
    lines = dict(verdict(res))
    assert "a page incomplete" not in lines["caveats"] and "a browser log side (no packets)" in lines["caveats"]
    assert lines["winner"].endswith("B's times are its browser log's, not the wire's")
