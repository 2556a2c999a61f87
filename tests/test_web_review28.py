"""A web-performance engineer's review of the web app and the exported waterfall, next to
WebPageTest (report 28): what a person sees, and what misled or read badly.

1. The page-completeness headline was said three times on the web page (status line, the
   waterfall tab's box, the figure's subtitle) and three times on the TUI's Waterfall tab
   (status bar, notice line, waterfall header).  Now once where a person looks: the web page's
   box with its reasons (the status line keeps its word, the page's figure leaves it out — an
   exported image keeps it in its subtitle, the only place it has); the TUI's notice line (the
   status bar keeps its word).  Truth: tshark's count of connections joined mid-way / seen from
   their SYN, which the headline states.
2. A HAR opened alone drew every request twice (the HAR's bar, and under it a thin "browser's
   view" bar of the same HAR with its TLS time grey) and its legend named a "Content download"
   swatch in the html blue beside "html download".  Truth: WebPageTest's HAR itself.
3. A browser log's requests that never reached the network (NetLog: served from the disk
   cache, refused) were drawn "no response (open ≥ 2.7 s)" to the log's end, the text cut at
   the image's edge, on a connection of their own ("#10 android.clients.google.com").  Now
   the cache read's own bar, a failed request's error on a red row (WebPageTest: a failed
   request is a red row), no connection.  Truth: the NetLog's own events.
4. A row's text past the view's right edge was cut at the image's edge (bg-mixed's "no
   response (open ≥ 1028 ms)", ``--time-span capture``).  Truth: tshark's last packet.
"""
from __future__ import annotations

import gzip
import json
import shutil

import pytest
from pngutil import png_pixels
from tuifix import sync, wait_loaded
from webfix import chromium, needs_chromium, new_page, private_cache, serving, wait_rows

from conftest import SAMPLES, need_tool, run_tool, shared

from wirefall.analyzer import completeness as C
from wirefall.analyzer import waterfall
from wirefall.analyzer.browserlog import open_log
from wirefall.analyzer.pipeline import analyze
from wirefall.ui import figures
from wirefall.ui import figures_marks as M

H3LATE = (SAMPLES / "quic" / "page-h3-late.pcapng", SAMPLES / "quic" / "page-h3-late.keys")
H1 = (SAMPLES / "page" / "page-h1.pcapng", SAMPLES / "page" / "page-h1.keys")
BG = (SAMPLES / "page" / "bg-mixed.pcapng", SAMPLES / "page" / "bg-mixed.keys")
PW_H2 = (SAMPLES / "page" / "pw-h2.pcapng", SAMPLES / "page" / "pw-h2.keys", SAMPLES / "page" / "pw-h2.har.gz")
pytestmark = pytest.mark.skipif(not H3LATE[0].exists(), reason="sample captures missing")


def _wpt():
    return shared("hars") / "webpagetest-amazon.har.gz"


def _amazon_netlog():
    return shared("pageload-amazon") / "amazon1_netlog.json.gz"


def _quic_joined(cap) -> int:
    """UDP flows other than DNS with no QUIC Initial, as tshark sees them (joined mid-way)."""
    need_tool("tshark")
    flows: dict[str, bool] = {}
    for ln in run_tool("tshark", "-r", str(cap), "-Y", "udp && !dns", "-T", "fields", "-E", "separator=\t",
                       "-e", "udp.stream", "-e", "quic.long.packet_type").splitlines():
        us, lpt = (ln.split("\t") + [""])[:2]
        flows[us] = flows.get(us, False) or "0" in lpt.split(",")
    return sum(1 for initial in flows.values() if not initial)


def _tcp_streams_with_syn(cap) -> tuple[int, int]:
    """(TCP streams, those whose SYN is in the capture), as tshark sees them."""
    need_tool("tshark")
    streams, syn = set(), set()
    for ln in run_tool("tshark", "-r", str(cap), "-Y", "tcp", "-T", "fields", "-E", "separator=\t", "-e", "tcp.stream",
                       "-e", "tcp.flags.syn", "-e", "tcp.flags.ack").splitlines():
        s, fs, fa = (ln.split("\t") + ["", ""])[:3]
        streams.add(s)
        if fs in ("1", "True") and fa in ("0", "False"):
            syn.add(s)
    return len(streams), len(syn)


# ------------------------------------------------------------------ 1. the headline once: the web page


def _page_texts(pg) -> dict[str, str]:
    """What a person reads: the page's text (body: its HTML and the figure's SVG texts), the
    figure's SVG texts apart (title, subtitle, labels), and the parts the test places."""
    svg = " ".join(pg.locator("#waterfall svg text").all_text_contents()).replace("\xa0", " ")
    sub = " ".join(pg.locator("#waterfall .gtitle-subtitle").all_text_contents())
    box = pg.inner_text("#explain-box") if pg.locator("#explain-box").count() else ""
    return {"body": pg.inner_text("body"), "svg": svg, "subtitle": sub, "status": pg.inner_text("#status"), "box": box}


def _flat(s: str) -> str:
    return " ".join(s.split())


@pytest.mark.slow
@needs_chromium
@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")
def test_web_page_says_the_headline_once(tmp_path):
    pytest.importorskip("playwright.sync_api")
    from wirefall.ui.web import WebState

    late = analyze(str(H3LATE[0]), keylogs=[str(H3LATE[1])])
    late_head = C.headline(late)
    joined = _quic_joined(H3LATE[0])
    assert joined == 1 and late_head.startswith(f"Incomplete: {joined} connection joined mid-way")  # (tshark's count)
    h1 = analyze(str(H1[0]), keylogs=[str(H1[1])])
    h1_head = C.headline(h1)
    streams, syn = _tcp_streams_with_syn(H1[0])
    assert streams == syn == 6 and h1_head.startswith(f"Complete: {streams} connections seen from the start")
    with private_cache(tmp_path / "xdg"):
        st = WebState()
        ids = {"late": st.add_file(str(H3LATE[0]), [str(H3LATE[1])], name=H3LATE[0].name).id,
               "h1": st.add_file(str(H1[0]), [str(H1[1])], name=H1[0].name).id}
        if _wpt().exists():
            ids["wpt"] = st.add_file(str(_wpt()), [], name=_wpt().name).id
        for i in ids.values():
            assert st.wait(i, 300).status == "done"
        with serving(st) as url, chromium() as browser:
            pg = new_page(browser, width=1500, height=1000)

            # incomplete: the box states the headline, nothing else does
            pg.goto(url + f"?capture={ids['late']}")
            wait_rows(pg, len(late.exchanges))
            pg.wait_for_selector("#explain-box #headline")
            t = _page_texts(pg)
            everything = _flat(t["body"])
            assert everything.count(late_head) == 1, everything[:3000]
            assert _flat(pg.inner_text("#headline")) == late_head
            assert late_head not in _flat(t["subtitle"]) and late_head not in _flat(t["svg"])
            status = _flat(t["status"])
            assert "· Incomplete (what and why: the Waterfall tab)" in status and "joined mid-way" not in status
            # its reasons under it, and the box above the figure, not over it
            assert "joined mid-way (no QUIC handshake seen)" in t["box"] and "— next:" in t["box"]
            box = pg.locator("#explain-box").bounding_box()
            graph = pg.locator("#waterfall .js-plotly-plot").bounding_box()
            assert box and graph and box["y"] + box["height"] <= graph["y"] + 0.5

            # complete: no box; the figure's subtitle says it, once
            pg.goto(url + f"?capture={ids['h1']}")
            wait_rows(pg, len(h1.exchanges))
            pg.wait_for_function("() => document.querySelectorAll('#waterfall .gtitle-subtitle').length > 0")
            t = _page_texts(pg)
            assert pg.locator("#explain-box").count() == 0
            assert _flat(t["body"]).count(h1_head[:60]) == 1 and _flat(t["svg"]).count(h1_head[:60]) == 1
            assert h1_head[:60] in _flat(t["subtitle"]) and "Complete" not in t["status"]

            # WebPageTest's HAR alone: "no packets: from a HAR" once (the headline's reason is the
            # first reason's start: the box leads with the headline's word)
            if "wpt" in ids:
                pg.goto(url + f"?capture={ids['wpt']}")
                wait_rows(pg, 15)
                pg.wait_for_selector("#explain-box #headline")
                t = _page_texts(pg)
                assert _flat(pg.inner_text("#headline")) == "Incomplete"
                assert _flat(t["body"]).count("no packets: from a HAR") == 1
            assert not pg.errors, pg.errors


def test_web_export_keeps_the_headline_the_page_leaves_to_its_box(tmp_path):
    """The page's figure leaves the headline to the box; the PNG/SVG/HTML it exports keep it in
    their subtitle (an image has no box)."""
    from wirefall.ui.web import WebState
    from wirefall.ui.web import views

    with private_cache(tmp_path / "xdg"):
        st = WebState()
        e = st.wait(st.add_file(str(H3LATE[0]), [str(H3LATE[1])], name=H3LATE[0].name).id, 300)
        assert e.status == "done", e.error
        head = C.headline(e.analysis)
        v = views.filtered_view(e)
        assert views.box_headline(e, len(v.waterfall.rows), v.total) == head
        page = views.page_figure(e, v, title=e.name, revision=e.id)
        assert head not in str(page.layout.title.subtitle.text or "").replace("<br>", " ")
        svg, name = views.export_bytes(e, v, "svg")
        assert name.endswith(".svg")
        texts = " ".join(t for t in __import__("re").findall(r">([^<>]+)</text", svg.decode()))
        assert _flat(head) in _flat(texts.replace("&nbsp;", " ").replace("\xa0", " "))
        st.close()


# ------------------------------------------------------------------ 1. the headline once: the TUI


@sync
async def test_tui_says_the_headline_once():
    pytest.importorskip("textual")
    need_tool("tshark")
    from wirefall.ui.tui.app import WirefallApp

    app = WirefallApp(str(H3LATE[0]), [str(H3LATE[1])])
    async with app.run_test(size=(200, 40)) as pilot:
        await wait_loaded(pilot, app, must_load=True, settle=0.2)
        head = C.headline(app.an)
        assert head.startswith(f"Incomplete: {_quic_joined(H3LATE[0])} connection joined mid-way")

        def text(sel: str) -> str:
            return str(app.query_one(sel).render()).replace("\n", " ")

        assert text("#status").endswith(" · Incomplete") and "joined" not in text("#status")
        assert text("#notice").startswith(head)
        await pilot.press("2")
        await pilot.pause(0.2)
        assert not app.query_one("#wf-note").display or not text("#wf-note").strip()
        on_screen = " ".join(text(s) for s in ("#status", "#notice", "#wf-note"))
        assert on_screen.count(head) == 1


# ------------------------------------------------------------------ 2. a HAR alone: each request once


def _legend(fig) -> list[tuple[str, str | None]]:
    return [(t.name, getattr(t.marker, "color", None) if getattr(t, "marker", None) is not None else None)
            for t in fig.data if t.showlegend is not False and t.name and t.x and t.x[0] is None]


def test_har_alone_draws_each_request_once_and_names_each_colour_once():
    if not _wpt().exists():
        pytest.skip("WebPageTest HAR missing")
    har = json.loads(gzip.decompress(_wpt().read_bytes()))["log"]
    first = har["pages"][0]["id"]
    entries = [x for x in har["entries"] if x.get("pageref") == first]
    an = open_log(str(_wpt()))
    wf = waterfall.build(an)
    assert [r.url for r in wf.rows] == [x["request"]["url"] for x in sorted(entries, key=lambda x: x["startedDateTime"])]
    fig = figures.waterfall_figure(wf, hover=False)
    assert not [t for t in fig.data if t.name == "browser"]  # the HAR's bar once, no thin copy of it under it
    names = [n for n, _c in _legend(fig)]
    assert not [n for n in names if n.startswith("Browser's view")] and "Content download" not in names
    # every download colour named once: by its content class (WebPageTest's colours)
    colours = [c for n, c in _legend(fig) if n.endswith(" download") and isinstance(c, str)]
    assert len(colours) == len(set(colours))
    # the HAR's TLS time, drawn once, as TLS (WebPageTest's _ssl_ms of the first entry)
    r0 = wf.rows[0]
    tls = r0.phase("tls")
    assert tls is not None and (tls[1] - tls[0]) * 1000 == pytest.approx(entries[0]["_ssl_ms"], abs=1)


def test_a_browser_log_over_a_capture_keeps_its_thin_bars():
    """The thin bar stays where it is the browser's view beside the wire's (Playwright's HAR
    over pw-h2: one per request the capture holds)."""
    cap, keys, har = PW_H2
    if not har.exists():
        pytest.skip("sample missing")
    from wirefall.analyzer.browserlog import overlay

    an = analyze(str(cap), keylogs=[str(keys)])
    overlay(an, str(har), kind="har")
    wf = waterfall.build(an)
    fig = figures.waterfall_figure(wf, hover=False)
    thin = next(t for t in fig.data if t.name == "browser")
    wired = {r.index for r in wf.rows if r.browser_phases and any(v is not None for v in r.packets.values())}
    assert wired and set(thin.y) == wired
    assert any(n.startswith("Browser's view (har") for n, _c in _legend(fig))


# ------------------------------------------------------------------ 3. requests that never reached the network


def _netlog_events(path) -> tuple[dict, dict]:
    d = json.loads(gzip.decompress(path.read_bytes()))
    c = d["constants"]
    types = {v: k for k, v in c["logEventTypes"].items()}
    errors = {v: k for k, v in c["netError"].items()}
    by_source: dict[int, list] = {}
    for e in d["events"]:
        by_source.setdefault(e.get("source", {}).get("id"), []).append((types.get(e["type"]), e.get("phase"), e.get("params") or {},
                                                                         float(e["time"])))
    return by_source, errors


@pytest.mark.slow
def test_netlog_requests_that_never_reached_the_network(tmp_path):
    if not _amazon_netlog().exists():
        pytest.skip("amazon NetLog missing")
    by_source, errors = _netlog_events(_amazon_netlog())
    an = open_log(str(_amazon_netlog()))
    wf = waterfall.build(an)
    fig = figures.waterfall_figure(wf, hover=False)
    dur = next(t for t in fig.data if t.name == "duration")
    unsent = [r for r in wf.rows if (r.browser or {}).get("not_sent")]
    assert {(r.browser or {}).get("not_sent") for r in unsent} == {"failed", "disk cache"}
    tinted = {round(s.y0 + 0.5) for s in fig.layout.shapes if s.fillcolor == M.ERROR_TINT and s.xref == "paper" and s.x1 == 1}
    for r in unsent:
        ev = by_source[int(r.browser["id"])]
        names = [n for n, *_ in ev]
        assert not [n for n in names if n and "SEND_REQUEST" in n]  # the NetLog: it sent nothing
        assert not M.no_response(r)
        end = next(p for n, ph, p, _t in ev if n == "REQUEST_ALIVE" and p is not None and ph == 2)
        if r.browser["not_sent"] == "failed":  # its error, as the NetLog names it, on a red row
            assert dur.text[r.index] == f"failed: {errors[end['net_error']]}" == "failed: ERR_CONNECTION_REFUSED"
            assert r.index in tinted
        else:  # read from the disk cache: the read's time, as the NetLog has it
            assert "HTTP_CACHE_READ_DATA" in names and r.index not in tinted
            t0 = next(t for n, ph, _p, t in ev if n == "REQUEST_ALIVE" and ph == 1)
            t1 = max(t for n, ph, _p, t in ev if n == "HTTP_CACHE_READ_DATA" and ph == 2)
            assert r.duration * 1000 == pytest.approx(t1 - t0, abs=1.01) and dur.text[r.index].endswith(" ms")
    assert not [t for t in fig.data if t.name == "no response"]
    # no connection of their own in the connection view: the connections that carried a request
    carried = {r.connection for r in wf.rows if not (r.browser or {}).get("not_sent")}
    assert len(fig.layout.yaxis2.ticktext) == len(carried)
    assert not [x for x in fig.layout.yaxis2.ticktext if "android.clients.google.com" in x]
    # the image: one red row (the one request the NetLog says failed), in the label column and the plot
    failed = [s for s, evs in by_source.items() for n, ph, p, _t in evs
              if n == "REQUEST_ALIVE" and ph == 2 and p.get("net_error") and not any(x and "SEND_REQUEST" in x for x, *_ in evs)
              and p.get("net_error") != -3]  # (ERR_ABORTED: cancelled, not failed)
    png = figures.to_image(fig, "png")
    w, h, rows, bpp = png_pixels(png)
    tint = (248, 220, 220)
    bands, inside = 0, False
    for y in range(h):
        line = rows[y]
        hit = sum(1 for x in range(0, w, 4) if all(abs(line[x * bpp + k] - tint[k]) <= 3 for k in range(3))) > w // 8
        bands += hit and not inside
        inside = hit
    assert bands == len(failed) == 1


# ------------------------------------------------------------------ 4. a row's text inside the image


@pytest.mark.slow
def test_a_row_text_past_the_right_edge_stays_in_the_image():
    need_tool("tshark")
    an = analyze(str(BG[0]), keylogs=[str(BG[1])])
    wf = waterfall.build(an)
    last = float(run_tool("tshark", "-r", str(BG[0]), "-T", "fields", "-e", "frame.time_epoch").split()[-1])
    open_rows = [r for r in wf.rows if M.no_response(r)]
    assert len(open_rows) == 1
    fig = figures.waterfall_figure(wf, hover=False, time_span="capture")
    dur = next(t for t in fig.data if t.name == "duration")
    r = open_rows[0]
    # the open line runs to tshark's last packet; its text ends where the row begins, left of it
    line = next(t for t in fig.data if t.name == "no response")
    assert line.x[1] == pytest.approx((last - wf.t0) * 1000, abs=0.01)
    assert dur.text[r.index].startswith("no response (open ≥") and dur.textposition[r.index] == "middle left"
    lo, hi = fig.layout.xaxis.range  # (a few px before the row's start since session 31: figures.LABEL_GAP_PX)
    px = (hi - lo) / (fig.layout.width - fig.layout.margin.l - fig.layout.margin.r)
    assert 0 < (r.start - wf.t0) * 1000 - dur.x[r.index] <= 2 * figures.LABEL_GAP_PX * px
    # and in the image: no text in its last columns (the plot ends 24 px from the edge)
    w, h, rows, bpp = png_pixels(figures.to_image(fig, "png"))
    dark = sum(1 for y in range(h) for x in range(w - 14, w) if max(rows[y][x * bpp: x * bpp + 3]) < 140)
    assert dark == 0
