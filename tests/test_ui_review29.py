"""Review 29: a web-performance engineer (WebPageTest, DevTools) opens a real page load — the
amazon capture alone and with its NetLog laid over, WebPageTest's HAR alone — in the TUI and the
web app.  Each test drives the UI as a person does and fails before its fix:

1. the TUI's notice line read "Incomplete · connection 16 … joined mid-way" on the amazon load
   while its status bar, the Statistics tab and the web page said "Page complete" (the notice,
   too long for its lines, was rebuilt with a fixed "Incomplete"); truth: tshark — every TCP
   stream carrying an HTTP/2 request is seen from its SYN, the one flow joined mid-way is that
   idle QUIC connection to Google;
2. with the NetLog laid over, the TUI's row of the request Chrome could not send (checkin,
   ERR_CONNECTION_REFUSED) read "-" and "0.00 ms" — a request that took no time — where the
   figures draw a red row "failed: ERR_CONNECTION_REFUSED"; its Follow view said "not
   decrypted, or a protocol wirefall does not decode"; "(c)" (disk cache) was explained
   nowhere; truth: the NetLog's own events (net_error -102);
3. the "connection" of those two requests that never reached the network was listed, in both
   UIs' Connections, as "tcp ? → ?" open 1655 ms (a grey bar in the web figure); truth: the
   NetLog (a refused connect, a disk-cache read: no socket) and tshark (no packet to or from
   android.clients.google.com);
4. the TUI's Statistics of WebPageTest's HAR alone drew "Wire bytes per protocol: h2 0, h3 0"
   where its tables said "–" (unknown) and WebPageTest says 573,908 bytes came in;
5. the web app's Statistics gave WebPageTest's "Content Breakdown" only as a chart — the
   request counts on hover alone, the html's 3,833 bytes no visible bar —; now a table beside
   the summary, equal to WebPageTest's own breakdown of the run (its JSON).
"""
from __future__ import annotations

import gzip
import json
import re
from functools import lru_cache

import pytest
from tuifix import sync, wait_loaded
from webfix import browser_fixture, needs_chromium, new_page, private_cache, serving, shot, wait_text

from conftest import need_tool, run_tool, shared

AMAZON = shared("pageload-amazon")
CAP, KEYS, NETLOG = AMAZON / "amazon1.cap.gz", AMAZON / "amazon1.key_log.txt.gz", AMAZON / "amazon1_netlog.json.gz"
HAR, WPT_JSON = shared("hars/webpagetest-amazon.har.gz"), shared("hars/webpagetest-amazon.json.gz")

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not (CAP.exists() and KEYS.exists() and NETLOG.exists() and HAR.exists() and WPT_JSON.exists()),
                                 reason="third-party captures not present")]


def _text(app, sel: str) -> str:
    return str(app.query_one(sel).render()).replace("\n", " ")


@lru_cache(maxsize=1)
def _plain_keys() -> str:
    import tempfile

    p = tempfile.NamedTemporaryFile(prefix="wf-review29-", suffix=".keys", delete=False)
    p.write(gzip.decompress(KEYS.read_bytes()))
    p.close()
    return p.name


@lru_cache(maxsize=1)
def _netlog() -> dict:
    return json.loads(gzip.decompress(NETLOG.read_bytes()))


def _netlog_request(url: str) -> list[tuple[str, dict]]:
    """The NetLog's events (type name, params) of the URL_REQUEST source of ``url``."""
    d = _netlog()
    names = {v: k for k, v in d["constants"]["logEventTypes"].items()}
    src = next(e["source"]["id"] for e in d["events"] if names[e["type"]] == "URL_REQUEST_START_JOB"
               and (e.get("params") or {}).get("url") == url)
    return [(names[e["type"]], e.get("params") or {}) for e in d["events"] if e["source"]["id"] == src]


def _net_error_name(code: int) -> str:
    return "ERR_" + next(k for k, v in _netlog()["constants"]["netError"].items() if v == code).removeprefix("ERR_")


# ------------------------------------------------------------------ 1. the notice's word


def _tshark_page_complete() -> tuple[str, int]:
    """tshark on the capture: (the one UDP flow other than DNS with no QUIC Initial, as
    "client → server"; TCP streams carrying an HTTP/2 request whose SYN is not in the capture)."""
    need_tool("tshark")
    flows: dict[str, list] = {}
    for ln in run_tool("tshark", "-r", str(CAP), "-Y", "udp && !dns", "-T", "fields", "-E", "separator=\t", "-e", "udp.stream",
                       "-e", "ipv6.src", "-e", "udp.srcport", "-e", "ipv6.dst", "-e", "udp.dstport", "-e", "quic.long.packet_type").splitlines():
        us, src, sp, dst, dp, lpt = (ln.split("\t") + [""] * 6)[:6]
        f = flows.setdefault(us, [f"[{src}]:{sp} → [{dst}]:{dp}", False])
        f[1] = f[1] or "0" in lpt.split(",")
    joined = [name for name, initial in flows.values() if not initial]
    assert len(joined) == 1, joined
    syn, req = set(), set()
    for ln in run_tool("tshark", "-r", str(CAP), "-o", f"tls.keylog_file:{_plain_keys()}", "-Y", "tcp.flags.syn == 1 || http2.headers.method",
                       "-T", "fields", "-E", "separator=\t", "-e", "tcp.stream", "-e", "tcp.flags.syn", "-e", "tcp.flags.ack",
                       "-e", "http2.headers.method").splitlines():
        s, fs, fa, m = (ln.split("\t") + [""] * 4)[:4]
        if fs in ("1", "True") and fa in ("0", "False"):
            syn.add(s)
        if m:
            req.add(s)
    assert req
    return joined[0], len(req - syn)


@sync
async def test_tui_notice_says_page_complete_as_its_status_bar_and_tshark():
    pytest.importorskip("textual")
    joined, missing_syn = _tshark_page_complete()
    assert missing_syn == 0  # the page's every HTTP/2 stream from its SYN: nothing of the page missing
    from wirefall.ui.tui.app import WirefallApp

    app = WirefallApp(str(CAP), [str(KEYS)])
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_loaded(pilot, app, steps=1200, must_load=True, settle=0.3)
        notice, status = _text(app, "#notice"), _text(app, "#status")
        assert status.endswith(" · Page complete"), status
        # one line since review 31: the page complete, one connection of unknown owner (since 2026-12-05) — tshark's one
        # flow without an Initial, which the Completeness section names
        assert notice == "Page complete · 1 connection of unknown owner — 4 Statistics, Completeness", notice
        from wirefall.analyzer.completeness import compute

        assert [i for i in compute(app.an).issues if i.whose == "unknown" and f"({joined}) joined mid-way" in i.detail]


# ------------------------------------------------------------------ 2, 3. requests that never reached the network (TUI)


@sync
async def test_tui_netlog_failed_request_and_its_connection_against_the_netlog():
    pytest.importorskip("textual")
    need_tool("tshark")
    from textual.widgets import DataTable

    from wirefall.ui.tui.app import FollowScreen, WirefallApp
    from wirefall.ui.tui.request_view import NO_FRAMES_UNSENT
    from wirefall.ui.tui.widgets import WaterfallView

    checkin = "https://android.clients.google.com/checkin"
    ev = _netlog_request(checkin)
    err = [p["net_error"] for t, p in ev if t == "URL_REQUEST_START_JOB" and "net_error" in p]
    assert err == [-102] and not any(t == "HTTP_TRANSACTION_SEND_REQUEST" for t, _ in ev)  # refused: never sent
    error = _net_error_name(err[0])
    assert error == "ERR_CONNECTION_REFUSED"
    favicon = _netlog_request("https://www.amazon.com/favicon.ico")  # (the first: sent on the wire; the later one from the cache)
    assert any(t == "HTTP_TRANSACTION_SEND_REQUEST" for t, _ in favicon)
    # tshark: no packet of the capture is to or from android.clients.google.com (its DNS answers apart)
    need_tool("tshark")
    assert not run_tool("tshark", "-r", str(CAP), "-o", f"tls.keylog_file:{_plain_keys()}", "-Y",
                        'tls.handshake.extensions_server_name contains "android"',
                        "-T", "fields", "-e", "frame.number").strip()

    app = WirefallApp(str(CAP), [str(KEYS)], overlays=[("netlog", str(NETLOG))])
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_loaded(pilot, app, steps=1200, must_load=True, settle=0.3)
        await pilot.press("2")
        wv = app.query_one(WaterfallView)
        for _ in range(200):
            await pilot.pause(0.05)
            if wv.count:
                break
        i = next(k for k, r in enumerate(wv.rows) if r.url == checkin)
        r = wv.rows[i]
        label, bar = wv.label_text(r), wv.bar_text(i)
        assert label.rstrip().endswith("fail"), label
        assert f"failed: {error}" in bar and "0.00 ms" not in bar, bar
        red = [s for s in wv.render_line(i - wv.scroll_offset.y) if "checkin" in s.text]
        assert red and red[0].style.color.name == "#ff8787"
        legend = _text(app, "#wf-legend")
        assert "(c) from the browser's cache" in legend and "fail failed before the network" in legend
        cached = next(k for k, rr in enumerate(wv.rows) if rr.url.endswith("/favicon.ico") and rr.status is None)
        assert wv.label_text(wv.rows[cached]).rstrip().endswith("(c)")

        # Follow (F) on that row: why no frame — it never reached the network
        wv.focus()
        await pilot.press(*(["down"] * (i - wv.cursor)))
        assert wv.cursor == i
        await pilot.press("F")
        for _ in range(40):
            await pilot.pause(0.05)
            if isinstance(app.screen, FollowScreen):
                break
        assert isinstance(app.screen, FollowScreen)
        lines = [t for t, _, _ in app.screen.items]
        assert lines[0] == NO_FRAMES_UNSENT and not any("decrypted" in t for t in lines), lines
        await pilot.press("escape")
        await pilot.pause(0.2)

        # Connections (3): its "connection" is none — no transport, no packets, no duration
        await pilot.press("3")
        await pilot.pause(0.5)
        dt = app.query_one("#connections", DataTable)
        row = [str(c) for c in dt.get_row(str(r.connection))]
        assert row[1] == "–" and row[2].startswith("none: never on the network"), row
        assert row[5] == row[6] == row[8] == "–", row  # packets, bytes, duration: none (it read 0/0, 0/0, 1655ms)
        assert row[11] == "2"  # the refused checkin and the disk-cache favicon.ico


# ------------------------------------------------------------------ 4. a HAR alone: wire bytes unknown, not 0


def _wpt_run1() -> dict:
    d = json.loads(gzip.decompress(WPT_JSON.read_bytes()))
    return d.get("data", d)["runs"]["1"]["firstView"]


@sync
async def test_tui_har_alone_statistics_do_not_say_zero_wire_bytes():
    pytest.importorskip("textual")
    from textual.widgets import TabbedContent

    from wirefall.ui.tui.app import WirefallApp

    har = json.loads(gzip.decompress(HAR.read_bytes()))["log"]
    page1 = har["pages"][0]["id"]
    bytes_in = sum(e.get("_bytesIn", 0) for e in har["entries"] if e.get("pageref") == page1)
    assert bytes_in == _wpt_run1()["bytesIn"] == 573_908  # the HAR and WebPageTest: bytes came in
    app = WirefallApp(str(HAR), [])
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_loaded(pilot, app, steps=600, must_load=True, settle=0.2)
        app.query_one(TabbedContent).active = "statistics"
        for _ in range(200):
            await pilot.pause(0.05)
            if app.stats_text is not None:
                break
        text = app.stats_text.plain
        bars = text.split("Wire bytes per protocol\n", 1)[1].split("\n\n", 1)[0]
        assert not re.search(r"^\s+h[23]\s+0$", bars, re.M), bars
        assert "its bytes on the wire are unknown" in bars


# ------------------------------------------------------------------ 3, 5. the web app


browser = browser_fixture()
WPT_CLASS = {"js": "script"}  # WebPageTest's class names -> wirefall's


@needs_chromium
def test_web_content_table_equals_webpagetests_breakdown(tmp_path, browser):
    pytest.importorskip("playwright.sync_api")
    from wirefall.ui.web import WebState

    run = _wpt_run1()
    truth = {WPT_CLASS.get(k, k): [v["requests"], v["bytes"], v["bytesUncompressed"]] for k, v in run["breakdown"].items() if v["requests"]}
    # WebPageTest's breakdown leaves its favicon.ico out, and so does wirefall's since review 31 (its
    # own rules: tests/test_wpt_breakdown31.py), saying so under the table
    fav = [r for r in run["requests"] if r["url"].endswith("/favicon.ico")]
    assert len(fav) == 1
    with private_cache(tmp_path / "xdg"):
        st = WebState()
        cid = st.add_file(str(HAR), [], name=HAR.name).id
        assert st.wait(cid, 120).status == "done"
        with serving(st) as url:
            pg = new_page(browser, width=1500, height=1000)
            try:
                pg.goto(url + f"?capture={cid}")
                pg.locator("#tabs .tab", has_text="Statistics").first.click()
                wait_text(pg, "#st-content-table", "requests")
                shot(pg, "review29-web-content-table.png", full_page=True)
                rows = pg.eval_on_selector_all("#st-content-table tbody tr", "rs => rs.map(r => [...r.cells].map(c => c.innerText))")
                shown = {r[0]: [int(x.replace(",", "")) for x in r[1:]] for r in rows}
                assert shown == truth, (shown, truth)
                assert "as WebPageTest's breakdown" in pg.inner_text("#st-content-table")
                assert f"favicon.ico left out, as WebPageTest does: 1 request, {fav[0]['objectSize']:,} bytes" in \
                    pg.inner_text("#st-content-table")
                assert not pg.errors, pg.errors
            finally:
                pg.context.close()


@needs_chromium
def test_web_connections_do_not_draw_a_connection_that_never_was(tmp_path, browser):
    pytest.importorskip("playwright.sync_api")
    from wirefall.ui.web import WebState

    ev = _netlog_request("https://android.clients.google.com/checkin")
    assert [p.get("net_error") for t, p in ev if t == "URL_REQUEST_START_JOB" and "net_error" in p] == [-102]
    with private_cache(tmp_path / "xdg"):
        st = WebState()
        e = st.add_file(str(CAP), [str(KEYS)], name=CAP.name, overlays=[("netlog", str(NETLOG), NETLOG.name)])
        assert st.wait(e.id, 300).status == "done", e.error
        from wirefall.analyzer.model import no_network_connections

        none = no_network_connections(e.analysis)
        assert len(none) == 1
        (nid,) = none
        with serving(st) as url:
            pg = new_page(browser, width=1500, height=1000)
            try:
                pg.goto(url + f"?capture={e.id}")
                pg.locator("#tabs .tab", has_text="Connections").first.click()
                pg.wait_for_selector("#conn-fig .ytick text")
                wait_text(pg, "#conn-fig", "Connections and handshakes")
                pg.wait_for_timeout(500)
                shot(pg, "review29-web-connections.png", full_page=True)
                labels = [t.replace("\xa0", " ") for t in pg.locator("#conn-fig .ytick text").all_text_contents()]
                assert not any(t.startswith(f"{nid}:") for t in labels), labels  # no "42: tcp ? → ?" bar
                assert "not drawn: 1 connection of requests that never reached the network" in pg.inner_text("#conn-fig")
                grid = pg.inner_text("#conn-table")
                assert "none: never on the network" in grid and "? → ?" not in grid
                assert not pg.errors, pg.errors
            finally:
                pg.context.close()
