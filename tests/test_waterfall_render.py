"""The waterfall as drawn (ui/figures.py over analyzer/waterfall.py, laid out by
ui/waterfall_layout.py), looked at in headless Chromium: in the offline HTML export of
several samples and in the web app, at 1280 and 1920 px, no two visible text labels
overlap (the SVG text elements' boxes in the page), every request row has its duration
label, the connection view and the throughput track are drawn, and the download chunks
(the packets that carried each response, counted against tshark) are drawn."""
from __future__ import annotations

import gzip
import shutil
import subprocess
from pathlib import Path

import pytest
from webfix import chromium, needs_chromium, private_cache, serving

from wirefall.analyzer import waterfall
from wirefall.analyzer.pipeline import analyze

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_captures"
AMAZON = ROOT.parent / "shared" / "captures" / "pageload-amazon"  # (../shared beside the checkout)
SET = [("page/page-h2.pcapng", "page/page-h2.keys"), ("page/page-h1.pcapng", "page/page-h1.keys"),
       ("page/page-h3.pcapng", "page/page-h3.keys"), ("page/page-spdy.pcapng", "page/page-spdy.keys")]
WIDTHS = (1280, 1920)

pw = pytest.importorskip("playwright.sync_api", reason="playwright for Python not installed")

# every visible SVG text element's box; pairs that overlap by more than a pixel each way
OVERLAPS_JS = """sel => {
    const boxes = [];
    document.querySelectorAll(sel + ' svg text').forEach(t => {
        const s = (t.textContent || '').replace(/\\u00a0/g, ' ').trim();
        if (!s) return;
        const cs = getComputedStyle(t);
        if (cs.visibility === 'hidden' || cs.display === 'none' || parseFloat(cs.opacity || '1') === 0) return;
        const r = t.getBoundingClientRect();
        if (r.width <= 0 || r.height <= 0) return;
        boxes.push({s, l: r.left, r: r.right, t: r.top, b: r.bottom});
    });
    const bad = [];
    for (let i = 0; i < boxes.length; i++)
        for (let j = i + 1; j < boxes.length; j++) {
            const a = boxes[i], b = boxes[j];
            const w = Math.min(a.r, b.r) - Math.max(a.l, b.l), h = Math.min(a.b, b.b) - Math.max(a.t, b.t);
            if (w > 1 && h > 1) bad.push([a.s, b.s, Math.round(w), Math.round(h)]);
        }
    return {n: boxes.length, bad};
}"""

FACTS_JS = """sel => {
    const root = document.querySelector(sel);
    const gd = root.classList.contains('js-plotly-plot') ? root : root.querySelector('.js-plotly-plot');
    const texts = [...root.querySelectorAll('.textpoint text')].map(t => t.textContent);
    const line = q => [...root.querySelectorAll(q)].filter(p => (p.getAttribute('d') || '').length > 10).length;
    const chunk = gd._fullData.findIndex(t => t.name === 'Download chunk');
    return {
        durations: texts.filter(s => /^[0-9]+(\\.[0-9]+)? ms( \\(\\+[0-9]+(\\.[0-9]+)? ms preconnect\\))?$/.test(s)).length,
        rows: root.querySelectorAll('.ytick text').length,
        conn_ticks: root.querySelectorAll('.y2tick text').length,
        conn_lines: line('.plot .xy2 .scatterlayer path.js-line, .xy2 .scatterlayer path.js-line'),
        track_lines: line('.x2y3 .scatterlayer path.js-line'),
        track_fill: line('.x2y3 .scatterlayer path.js-fill'),
        chunk_bars: chunk < 0 ? 0 : [...root.querySelectorAll('.barlayer .trace.bars')][chunk]?.querySelectorAll('.point path').length || 0,
    };
}"""


def _keys(rel: str) -> list[str]:
    p = SAMPLES / rel
    return [str(p)] if p.exists() else []


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    """(name, path, keys, analysis) of the samples present, the Amazon load when there."""
    out = []
    for cap, keys in SET:
        p = SAMPLES / cap
        if p.exists():
            out.append((p.name, str(p), _keys(keys), analyze(str(p), keylogs=_keys(keys))))
    if (AMAZON / "amazon1.cap.gz").exists():
        d = tmp_path_factory.mktemp("amazon")
        cap, kl = d / "amazon1.cap", d / "amazon1.keys"
        cap.write_bytes(gzip.decompress((AMAZON / "amazon1.cap.gz").read_bytes()))
        kl.write_bytes(gzip.decompress((AMAZON / "amazon1.key_log.txt.gz").read_bytes()))
        out.append(("amazon1.cap", str(cap), [str(kl)], analyze(str(cap), keylogs=[str(kl)])))
    if not out:
        pytest.skip("no sample captures")
    return out


def _check_page(pg, sel: str, wf, what: str) -> None:
    ov = pg.evaluate(OVERLAPS_JS, sel)
    assert ov["n"] > len(wf.rows) and not ov["bad"], (what, ov["bad"][:10])
    f = pg.evaluate(FACTS_JS, sel)
    n = len(wf.rows)
    assert f["rows"] == n and f["durations"] == n, (what, f)  # every row has its duration label
    assert f["conn_ticks"] == len(wf.connection_rows) >= 1 and f["conn_lines"] >= 1, (what, f)  # the connection view
    assert f["track_lines"] >= 1 and f["track_fill"] >= 1, (what, f)  # the throughput track
    assert f["chunk_bars"] == sum(len(r.chunks) for r in wf.rows), (what, f)
    multi = [r for r in wf.rows if sum(k for _, _, k in r.chunks) > 1]
    assert multi, what  # multi-packet responses exist in every sample, and they have their chunks drawn


@needs_chromium
def test_html_export_labels_never_overlap(samples, tmp_path):
    from wirefall.ui.exports import export

    with chromium() as browser:
        for name, _path, _keys, an in samples:
            out = tmp_path / f"{name}.html"
            export(an, str(out), force=True)
            wf = waterfall.build(an)
            for w in WIDTHS:
                pg = browser.new_page(viewport={"width": w, "height": 1000})
                pg.goto(out.as_uri())
                pg.wait_for_selector(".ytick text")
                _check_page(pg, ".js-plotly-plot", wf, f"{name} HTML at {w} px")
                pg.close()


@pytest.fixture(scope="module")
def server(samples, tmp_path_factory):
    from wirefall.ui.web import WebState

    with private_cache(tmp_path_factory.mktemp("xdg")):
        st = WebState()
        ids = {}
        for name, path, keys, _an in samples[:2] + [s for s in samples if s[0] == "amazon1.cap"]:
            ids[name] = st.add_file(path, keys, name=name).id
        with serving(st) as url:
            yield st, url, ids


@needs_chromium
def test_web_app_labels_never_overlap(samples, server):
    st, url, ids = server
    by_name = {s[0]: s for s in samples}
    with chromium() as browser:
        for w in WIDTHS:
            pg = browser.new_page(viewport={"width": w, "height": 1000})
            pg.set_default_timeout(60_000)
            pg.goto(url)
            for name, cid in ids.items():
                st.wait(cid)
                wf = waterfall.build(by_name[name][3])
                _choose(pg, "#capture", f"{cid}: {name}")
                pg.wait_for_function("""([n, conns]) => document.querySelectorAll('#waterfall .ytick text').length === n
                    && document.querySelectorAll('#waterfall .y2tick text').length === conns""",
                                     arg=[len(wf.rows), len(wf.connection_rows)])
                pg.wait_for_timeout(300)
                _check_page(pg, "#waterfall", wf, f"{name} in the web app at {w} px")
            # the order dropdown: sorted by duration, the longest request first
            _choose(pg, "#wf-order", "sort: duration")
            wf = waterfall.build(by_name[list(ids)[-1]][3], sort="duration")
            first = waterfall.build(by_name[list(ids)[-1]][3], sort="duration").rows[0]
            pg.wait_for_function("""u => { const t = document.querySelector('#waterfall .ytick text');
                return t && t.textContent.replace(/\\u00a0/g, ' ').trim().startsWith('1 ') && t.textContent.includes(u); }""",
                                 arg=first.url.split("://", 1)[-1].split("/", 1)[0][:8])
            # (the first label changes before the redraw is over: wait for all of them, as above)
            pg.wait_for_function("""([n, conns]) => document.querySelectorAll('#waterfall .ytick text').length === n
                && document.querySelectorAll('#waterfall .y2tick text').length === conns""",
                                 arg=[len(wf.rows), len(wf.connection_rows)])
            pg.wait_for_timeout(300)
            _check_page(pg, "#waterfall", wf, f"sorted by duration at {w} px")
            pg.close()


def _choose(pg, sel: str, label: str) -> None:
    """Pick the option ``label`` in a Dash dropdown as a person would: open it, click the
    option (the menu is drawn outside the dropdown; a focused dropdown opens on a second click)."""
    pg.wait_for_function("t => !document.body.innerText.includes(t + ' (')", arg=label)  # analysed: its final label
    for _ in range(4):
        pg.keyboard.press("Escape")
        pg.click(sel)
        try:
            pg.wait_for_selector("[role=option]", timeout=2_000)
            pg.locator("[role=option]", has_text=label).first.click(timeout=5_000)
            pg.wait_for_function("([s, t]) => document.querySelector(s).innerText.includes(t)", arg=[sel, label], timeout=5_000)
            return
        except Exception:  # noqa: BLE001 - the menu did not open or the choice did not take: again
            continue
    raise AssertionError(f"could not choose {label!r} in {sel}")


def _tshark_data_frames(cap: str, keys: str) -> dict[tuple[int, int], list[tuple[int, float, list[int]]]]:
    """(client port, stream id) -> the packets in which tshark shows the stream's server DATA
    frames: (frame number, its time, the TCP segments of the TLS record it completed when
    that record was spread over several segments — ``tcp.segment``, else [])."""
    out = subprocess.run(["tshark", "-r", cap, "-o", f"tls.keylog_file:{keys}", "-Y", "http2.type == 0", "-T", "fields",
                          "-e", "frame.number", "-e", "frame.time_epoch", "-e", "tcp.dstport", "-e", "tcp.segment",
                          "-e", "http2.streamid", "-e", "http2.type", "-E", "occurrence=a", "-E", "aggregator=,"],
                         capture_output=True, text=True, timeout=300, check=True).stdout
    truth: dict[tuple[int, int], list[tuple[int, float, list[int]]]] = {}
    for line in out.splitlines():
        num, t, port, segs, sids, types = line.split("\t")
        for sid, ty in zip(sids.split(","), types.split(",")):
            if ty == "0" and int(sid) % 2 == 1:
                pk = truth.setdefault((int(port.split(",")[0]), int(sid)), [])
                if not pk or pk[-1][0] != int(num):
                    pk.append((int(num), float(t), [int(x) for x in segs.split(",") if x]))
    return truth


def _h2_inputs():
    out = []
    cap, keys = SAMPLES / "page/page-h2.pcapng", SAMPLES / "page/page-h2.keys"
    if cap.exists():
        out.append(pytest.param(str(cap), str(keys), id="page-h2"))
    out.append(pytest.param(None, None, id="amazon1", marks=pytest.mark.skipif(not (AMAZON / "amazon1.cap.gz").exists(),
                                                                              reason="the amazon load is absent")))
    return out


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")
@pytest.mark.parametrize(("cap", "keys"), _h2_inputs())
def test_chunks_are_the_packets_that_carried_each_streams_data(cap, keys, tmp_path):
    """Row.chunks of HTTP/2 responses come from the per-byte packet map: the TCP segments
    that carried the bytes of each DATA frame, checked against tshark's decoding.  tshark
    shows a DATA frame in the packet that completed its TLS record and lists the segments of
    a record spread over several (``tcp.segment``).  So: every chunk packet is one of those
    (a packet tshark shows the stream's DATA in, or a segment of such a record); every packet
    holding a whole record with the stream's DATA is a chunk packet; the first and the last
    chunk lie within the stream's DATA records; and where records were spread over segments
    (the Amazon load over the Internet: most of them), the segments before the completing
    one are counted too — the "completion packet only" chunks of before missed them."""
    if cap is None:
        cap, keys = str(tmp_path / "amazon1.cap"), str(tmp_path / "amazon1.keys")
        Path(cap).write_bytes(gzip.decompress((AMAZON / "amazon1.cap.gz").read_bytes()))
        Path(keys).write_bytes(gzip.decompress((AMAZON / "amazon1.key_log.txt.gz").read_bytes()))
    truth = _tshark_data_frames(cap, keys)
    an = analyze(cap, keylogs=[keys])
    ts = an.index.ts
    wf = waterfall.build(an)
    conns = {c.id: c for c in an.connections}
    rows = [r for r in wf.rows if r.protocol == "h2" and (conns[r.connection].client[1], r.stream_id) in truth]
    assert len(rows) >= 8 and len(rows) == len([k for k in truth if any(c.client[1] == k[0] for c in an.connections
                                                                          if c.protocol == "h2")])
    earlier = 0  # chunk packets that are only a record's earlier segment
    for r in rows:
        want = truth[(conns[r.connection].client[1], r.stream_id)]
        shown = {num for num, _t, _s in want}
        spread = {p for _n, _t, segs in want for p in segs}
        whole = {num for num, _t, segs in want if not segs}
        got = _chunk_packets(r, ts)
        assert got <= shown | spread, (r.url, sorted(got - shown - spread))
        assert whole <= got, (r.url, sorted(whole - got))
        first = min(min(segs or [num]) for num, _t, segs in want)
        assert ts[first - 1] - 1e-6 <= r.chunks[0][0] and r.chunks[-1][1] <= want[-1][1] + 1e-6, r.url
        earlier += len(got - shown)
        assert all(b2 - a1 > waterfall.CHUNK_GAP for (_, a1, _), (b2, _, _) in zip(r.chunks, r.chunks[1:]))
    if "amazon" in cap:
        assert earlier > 100, earlier  # the segments of records spread over many: counted now
    else:
        assert earlier >= 1, earlier  # page-h2 over loopback: a few records span two segments (tshark: 64+65, 65+69, 69+70)


def _chunk_packets(r, ts) -> set[int]:
    """The packets of a row's chunks, checked against the chunks' times and counts."""
    got = r.chunk_packets
    assert sum(k for *_, k in r.chunks) == len(got) == len(set(got)) and got == sorted(got)
    assert abs(r.chunks[0][0] - ts[got[0] - 1]) < 1e-9 and abs(r.chunks[-1][1] - ts[got[-1] - 1]) < 1e-9
    return set(got)


BROWSER_JS = """() => {
    const gd = document.querySelector('.js-plotly-plot');
    const bars = [...gd.querySelectorAll('.barlayer .trace.bars')];
    const data = gd._fullData.filter(t => t.type === 'bar'), k = data.findIndex(t => t.name === 'browser');
    const ya = gd._fullLayout.yaxis, top = gd.querySelector('.main-svg').getBoundingClientRect().top + ya._offset;
    const box = p => { const r = p.getBoundingClientRect(); return [r.top, r.bottom]; };
    return {browser: k < 0 ? [] : [...bars[k].querySelectorAll('.point path')].map(box), rows: data[k] ? data[k].y : [],
            centre: ya._length ? [...Array(gd._fullLayout.yaxis.tickvals.length).keys()].map(i => top + ya.l2p(i)) : [],
            row_px: Math.abs(ya.l2p(1) - ya.l2p(0))};
}"""


@pytest.fixture(scope="module")
def h2_with_netlog():
    from wirefall.analyzer import browserlog

    cap, keys, log = SAMPLES / "page/page-h2.pcapng", SAMPLES / "page/page-h2.keys", SAMPLES / "page/page-h2.netlog.json.gz"
    if not (cap.exists() and log.exists()):
        pytest.skip("page-h2 and its NetLog absent")
    an = analyze(str(cap), keylogs=[str(keys)])
    browserlog.overlay(an, str(log))
    return an


def test_browser_bar_shows_the_netlog_times(h2_with_netlog):
    """With Chrome's NetLog laid over page-h2, each row carries the browser's view as a thin
    bar under the wire's: from the log's request start to its response end, its phases in
    the waterfall's colours, explained in the legend — as bars (small) and as path strokes
    (many rows) alike."""
    from wirefall.ui import figures

    wf = waterfall.build(h2_with_netlog)
    rows = [r for r in wf.rows if r.browser and not r.browser.get("not_sent")]  # (not the log's rows of no wire)
    assert len(rows) == 13 and all(r.browser for r in wf.rows)
    ms = lambda t: (t - wf.t0) * 1000.0
    for r in rows:
        times = r.browser["times"]
        assert r.browser_phases[0][1] == times["start"] and r.browser_phases[-1][2] == times["response_end"], r.url
        assert all(b1 == a2 for (_, _, b1), (_, a2, _) in zip(r.browser_phases, r.browser_phases[1:]))
        names = [p for p, *_ in r.browser_phases]
        assert names[-1] in ("receive", "wait") and "send" in names, names  # (NetLog's whole ms: a receive may last 0)
        send = next((a, b) for p, a, b in r.browser_phases if p == "send")
        assert send == (times["send_start"], times["send_end"]) or times["send_end"] == times["send_start"]
    fig = figures.waterfall_figure(wf)
    tr = next(t for t in fig.data if t.name == "browser")
    assert list(tr.y) == [r.index for r in wf.rows for _ in r.browser_phases]
    for r in rows:  # each thin bar from the log's phase start to its end, under the row's middle
        got = [(b, b + w) for y, b, w in zip(tr.y, tr.base, tr.x) if y == r.index]
        want = [(ms(a), ms(b)) for _p, a, b in r.browser_phases]
        assert all(abs(g0 - w0) < 1e-6 and g1 >= w1 - 1e-6 for (g0, g1), (w0, w1) in zip(got, want)), r.url
    assert tr.offset > 0.3 and tr.offset + tr.width <= 0.5  # under the wire's bar (±0.36), inside the row
    assert any(t.name.startswith("Browser's view (netlog)") and t.showlegend is not False for t in fig.data)
    big = figures.waterfall_figure(wf, big=True, hover=False)
    strokes = [s for s in big.layout.shapes if s.type == "path" and s.yref == "y"
               and any(f",{r.index + figures.BROWSER_Y:.7g}H" in s.path for r in rows)]
    assert sum(s.path.count(f",{r.index + figures.BROWSER_Y:.7g}H") for s in strokes for r in rows) == \
        sum(len(r.browser_phases) for r in rows)


@needs_chromium
def test_browser_bars_are_drawn_under_the_wire_bars(h2_with_netlog, tmp_path):
    """In the HTML export (headless Chromium), one thin bar per browser phase, each in its
    row below the row's wire bars and thinner than them."""
    from wirefall.ui.exports import export

    out = tmp_path / "h2-netlog.html"
    export(h2_with_netlog, str(out), force=True)
    wf = waterfall.build(h2_with_netlog)
    with chromium() as browser:
        pg = browser.new_page(viewport={"width": 1400, "height": 1000})
        pg.goto(out.as_uri())
        pg.wait_for_selector(".barlayer .trace.bars")
        got = pg.evaluate(BROWSER_JS)
    assert len(got["browser"]) == len(got["rows"]) == sum(len(r.browser_phases) for r in wf.rows) > 0
    px = got["row_px"]
    for (top, bottom), y in zip(got["browser"], got["rows"]):  # below the wire bar (the row's middle ± 0.36), inside the row
        c = got["centre"][y]
        assert c + 0.36 * px - 0.5 <= top and bottom <= c + 0.5 * px + 0.5 and bottom - top < 0.2 * px, (y, top, bottom, c, px)
