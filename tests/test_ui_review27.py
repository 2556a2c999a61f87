"""Review 27 of the waterfall (a reviewer who lives in WebPageTest and DevTools), each test
failing before its fix:

1. a row whose request began before the capture (the amazon load cut at packet 200: the rest
   of challenge.js) was drawn as if whole — its bar flush at the axis, "615 ms" where the
   whole capture says 983 ms — and cut at 512 its unknown method left the marks column blank,
   which by the legend means GET: now "≥615 ms", "←" at the bar's left end, "?" for the method,
   in the figure and the TUI, the legend saying what they mean (against tshark: the stream's
   request is before packet 200 of the whole capture);
2. the row labels lost the file at small widths (TUI at 80/100 columns: six rows read
   ``images-na.…com/im…``): the file's start and extension now come first; row 7's
   "25.3 ms (+253 ms preconnect)" was not drawn at 100 columns: now "25.3 ms";
3. (a) the HTML export's subtitle was cut at a 1024 px window, (b) the connections heading ran
   into the plot, (c) a HAR's load event and the last byte were both red, (d) the pale
   download swatch was the faded connect's orange.
"""
from __future__ import annotations

import gzip
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from conftest import run_tool
from tuifix import sync, wait_loaded

from wirefall.analyzer import waterfall
from wirefall.analyzer.pipeline import analyze
from wirefall.ui import figures
from wirefall.ui import figures_marks as M
from wirefall.ui import waterfall_layout as L
from wirefall.ui.tui.widgets import row_cells, waterfall_legend

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "sample_captures" / "page"
AMAZON = ROOT.parent / "shared" / "captures" / "pageload-amazon"
CAP, KEYS = AMAZON / "amazon1.cap.gz", AMAZON / "amazon1.key_log.txt.gz"


def _need_amazon() -> None:
    if not CAP.exists() or not KEYS.exists():
        pytest.skip("amazon capture not present")


@lru_cache(maxsize=1)
def _dir() -> Path:
    import tempfile

    return Path(tempfile.mkdtemp(prefix="wf-review27-"))


@lru_cache(maxsize=1)
def _keys() -> str:
    """The key log, gunzipped (tshark reads it plain)."""
    out = _dir() / "keys.txt"
    out.write_bytes(gzip.decompress(KEYS.read_bytes()))
    return str(out)


@lru_cache(maxsize=4)
def _cut(first: int) -> str:
    """The amazon load from packet ``first`` on (``editcap -r CAP OUT FIRST-100000``)."""
    if shutil.which("editcap") is None:
        pytest.skip("no editcap")
    out = _dir() / f"cut{first}.pcap"
    subprocess.run(["editcap", "-r", str(CAP), str(out), f"{first}-100000"], check=True, capture_output=True, timeout=120)
    return str(out)


@lru_cache(maxsize=4)
def _wf(cap: str):
    return waterfall.build(analyze(cap, keylogs=[_keys()]))


def _trace(fig, name):
    return next((t for t in fig.data if t.name == name), None)


def _legend(fig) -> list[str]:
    return [t.name for t in fig.data if t.showlegend is not False and t.name]


# ------------------------------------------------------------------ 1. a start before the capture


def _challenge_truth() -> tuple[int, int]:
    """tshark on the whole capture: the frame of challenge.js's request HEADERS and its TCP port."""
    out = run_tool("tshark", "-r", str(CAP), "-o", f"tls.keylog_file:{_keys()}", "-Y", 'http2.headers.path contains "challenge.js"',
                   "-T", "fields", "-e", "frame.number", "-e", "tcp.srcport")
    frame, port = out.split("\n")[0].split("\t")[:2]
    return int(frame), int(port)


def test_a_row_begun_before_the_capture_says_so_against_tshark():
    _need_amazon()
    frame, port = _challenge_truth()
    assert frame < 200  # the request is before the cut: the cut's row cannot know its start
    whole = _wf(str(CAP))
    full = next(r for r in whole.rows if r.url.endswith("/challenge.js"))
    assert full.packets["request_start"] == frame and str(port) in full.connection_label
    assert not any(L.start_unknown(r) for r in whole.rows)  # (the whole capture: every start is in it)
    wf = _wf(_cut(200))
    r = wf.rows[0]
    assert f":{port} →" in r.connection_label  # the same stream, its request not in the cut
    assert r.packets["request_start"] is None and L.start_unknown(r)
    assert [x for x in wf.rows if L.start_unknown(x)] == [r]
    text = L.row_duration_text(r)
    assert text == "≥" + L.duration_text(r.duration), text
    assert full.duration >= r.duration  # the lower bound holds: 983 ms in the whole capture, ≥615 in the cut
    assert round(r.duration * 1000) == 615 and round(full.duration * 1000) == 983

    fig = figures.waterfall_figure(wf, hover=False)
    dur = _trace(fig, "duration")
    assert dur.text[0] == text and all("≥" not in t for t in dur.text[1:])
    arrow = _trace(fig, figures.START_UNKNOWN_NAME)
    assert list(arrow.y) == [0] and list(arrow.text) == [L.START_UNKNOWN]
    assert arrow.x[0] == pytest.approx((r.start - wf.t0) * 1000)  # at the bar's left end
    assert figures.START_UNKNOWN_LEGEND in _legend(fig)
    hover = figures.waterfall_figure(wf, hover=True)
    assert any("began before the capture" in (h or "") for t in hover.data if t.name == "Content download"
               for h in (t.hovertext or ()))

    # the TUI: "←" at the bar's left end, "≥615 ms" right of it, the legend saying what they are
    cells = row_cells(r, wf.t0, wf.t0 + 4.0, 80)
    s = "".join(c[0] for c in cells)
    assert s.startswith("←") and "≥615 ms" in s, s
    legend = str(waterfall_legend("", rows=wf.rows))
    assert "← ≥ began before the capture" in legend
    assert "began before" not in str(waterfall_legend("", rows=whole.rows))  # (only when a row has it)


def test_an_unknown_method_is_a_question_mark_not_a_blank():
    """Cut at packet 512, row 1's method is not in the capture; a blank mark means GET."""
    _need_amazon()
    wf = _wf(_cut(512))
    r = wf.rows[0]
    assert r.method is None and not r.pushed and L.start_unknown(r)
    assert M.mark(r).split()[0] == M.UNKNOWN_METHOD
    fig = figures.waterfall_figure(wf, hover=False)
    label = fig.layout.yaxis.ticktext[0].replace("\xa0", " ")
    assert label.lstrip().startswith("? ") and " 1 " in label, label
    assert any(n.startswith("?: method unknown") for n in _legend(fig))
    assert all(M.mark(x).split()[:1] != ["?"] for x in wf.rows[1:])  # (the others' methods are known)
    assert L.row_duration_text(r).startswith("≥")


# ------------------------------------------------------------------ 2. labels name the file


def _file_name(url: str) -> str:
    path = urlsplit(url).path
    return path.rstrip("/").rsplit("/", 1)[-1]


def test_labels_keep_the_start_of_the_file_at_every_width():
    """At 20..44 characters every amazon row's label holds the start of its file name (4
    characters, or the whole of a shorter one), and two rows whose file names differ never
    read the same (at 80 columns rows 8-13 all read ``images-na.…com/im…``)."""
    _need_amazon()
    wf = _wf(str(CAP))
    for n in range(20, 45):
        labels = {}
        for r in wf.rows:
            lab = L.short_url(r.url, n)
            assert len(lab) <= n, (n, lab)
            name = _file_name(r.url)
            assert name[:4] in lab, (n, name, lab)
            labels.setdefault(lab, set()).add(name)
        assert all(len(names) == 1 for names in labels.values()), (n, labels)
    # the images-na rows, told apart by the file's start and extension, not a host and "im…"
    assert L.short_url(wf.rows[8].url, 20) == "images…/csm-ca…in.js"
    assert L.short_url(wf.rows[8].url, 18).endswith("/csm-ca….js")


async def _waterfall_tab(pilot, app) -> None:
    await wait_loaded(pilot, app, must_load=True)
    await pilot.press("2")
    await pilot.pause(0.2)


@pytest.mark.parametrize("cols", [80, 100])
@sync
async def test_the_tui_names_each_file_and_draws_every_duration(cols):
    """The TUI at 80 and 100 columns: each row's label holds the start of its file name and
    rows of different files read differently; row 7's "25.3 ms (+253 ms preconnect)" had no
    room at 100 columns and was not drawn at all: its own time is."""
    _need_amazon()
    from wirefall.ui.tui.app import WirefallApp
    from wirefall.ui.tui.widgets import WaterfallView

    app = WirefallApp(str(CAP), [str(KEYS)])
    async with app.run_test(size=(cols, 40)) as pilot:
        await _waterfall_tab(pilot, app)
        wv = app.query_one(WaterfallView)
        assert wv.count == 15
        seen: dict[str, set[str]] = {}
        for r in wv.rows:
            lab = wv.label_text(r)
            name = _file_name(r.url)
            assert name[:4] in lab, (name, lab)
            seen.setdefault(lab.split(None, 1)[1], set()).add(name)
        assert all(len(v) == 1 for v in seen.values()), seen
        i = next(i for i, r in enumerate(wv.rows) if "preconnect" in L.row_duration_text(r))
        bar = wv.bar_text(i)
        assert L.short_duration_text(wv.rows[i]) in bar, bar


# ------------------------------------------------------------------ 3. text clipped or crossed


def _chromium_boxes(html: Path, width: int) -> dict:
    sp = pytest.importorskip("playwright.sync_api")
    if not Path("/usr/bin/chromium").exists():
        pytest.skip("no chromium")
    with sp.sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        try:
            pg = b.new_page(viewport={"width": width, "height": 900})
            pg.goto(html.as_uri())
            pg.wait_for_selector(".main-svg")
            pg.wait_for_timeout(300)
            return pg.evaluate("""() => {
              const box = el => { const b = el.getBoundingClientRect(); return [b.left, b.right, b.top, b.bottom]; };
              const sub = [...document.querySelectorAll('.gtitle-subtitle .line, .gtitle-subtitle')].map(box);
              const notes = [...document.querySelectorAll('.annotation-text')].map(el => [el.textContent, ...box(el)]);
              const plot = document.querySelector('.nsewdrag').getBoundingClientRect();
              return {sub, notes, plotLeft: plot.left, width: document.documentElement.clientWidth};
            }""")
        finally:
            b.close()


def test_html_subtitle_fits_a_1024_px_window_and_headings_stay_in_the_label_column():
    """(a) The HTML export at a 1024 px window cut the completeness subtitle ("…joined mid-way
    (be"): it is wrapped for a 1000 px page; (b) the connections heading ("… (not drawn; 1 not
    decrypted: …)") ran into the plot, where the milestones' lines crossed it: it is wrapped in
    the label column (measured in Chromium)."""
    _need_amazon()
    wf = _wf(_cut(512))
    assert wf.unused_undecrypted and "joined mid-way" in wf.completeness
    fig = figures.waterfall_figure(wf, hover=True, responsive=True)
    out = _dir() / "cut512.html"
    out.write_bytes(figures.html_document(fig))
    got = _chromium_boxes(out, 1024)
    assert got["width"] == 1024 and got["sub"]
    assert max(b[1] for b in got["sub"]) <= 1024 - 4, got["sub"]
    heads = [n for n in got["notes"] if n[0].startswith(("Connections", "Throughput"))]
    assert len(heads) == 2 and any("not decrypted" in n[0] for n in heads)
    for text, left, right, _top, _bottom in heads:
        assert left >= 0 and right <= got["plotLeft"], (text, right, got["plotLeft"])
    # the image keeps its own layout (made for its 1400 px), the page's subtitle is wrapped narrower
    img = figures.waterfall_figure(wf, hover=False)
    longest = lambda f: max(len(x) for x in f.layout.title.subtitle.text.split("<br>"))  # noqa: E731
    assert longest(fig) <= (figures.PAGE_TEXT_PX - 24) / figures.SUBTITLE_CHAR_PX < longest(img), (longest(fig), longest(img))


def test_browser_milestones_have_colours_of_their_own():
    """With a HAR laid over, "Load event (HAR)" and "Last byte of the last response" were both
    red dotted lines: the browser's events are WebPageTest's magenta (DOMContentLoaded) and blue
    (load), apart from the wire's red and the HTML's blue."""
    from wirefall.analyzer.browserlog import overlay

    from test_figures19 import _de

    an = analyze(str(PAGE / "pw-h2.pcapng"), keylogs=[str(PAGE / "pw-h2.keys")])
    overlay(an, str(PAGE / "pw-h2.har.gz"))
    wf = waterfall.build(an)
    names = {m.name for m in wf.milestones}
    assert {"dom_content_loaded", "load_event", "page_load", "html_first_byte"} <= names
    fig = figures.waterfall_figure(wf, hover=False)
    lines = {}
    for ann in fig.layout.annotations:
        for m in wf.milestones:
            if ann.text and ann.text.startswith(m.label):
                lines[m.name] = ann.font.color
    assert set(lines) >= {"dom_content_loaded", "load_event", "page_load", "html_first_byte"}
    cols = [lines[k] for k in ("dom_content_loaded", "load_event", "page_load", "html_first_byte")]
    assert all(_de(a, b) >= 40 for i, a in enumerate(cols) for b in cols[i + 1:]), cols
    # the wire's milestones keep their colours
    assert lines["page_load"] == "#d62728" and lines["html_first_byte"] == "#2d6fd1"
    dashed = {s.line.color for s in fig.layout.shapes if s.type == "line" and s.line.dash == "dot"}
    assert set(cols) <= dashed


def test_the_pale_download_swatch_is_neutral():
    """Cut at 640 the legend's "Download, no byte arriving (pale)" was the first row's pale
    script orange — the colour of a background row's faded connect phase. It is a neutral
    near-white edged in grey, apart from every phase colour, faded or not (checked in the PNG's
    pixels too: the swatch drawn is the neutral one)."""
    _need_amazon()
    from test_figures19 import _de

    wf = _wf(_cut(640))
    fig = figures.waterfall_figure(wf, hover=False)
    t = _trace(fig, "Download, no byte arriving (pale)")
    col = t.marker.color.lstrip("#")
    r, g, b = (int(col[i:i + 2], 16) for i in (0, 2, 4))
    assert r == g == b  # neutral
    faded = [M.pale(c, 0.65) for c in L.PHASE_COLORS.values()]  # (a faded bar: 35 % opacity over white)
    for c in list(L.PHASE_COLORS.values()) + faded + [L.BLOCKED_COLOR, L.WAIT_COLOR]:
        assert _de(t.marker.color, c) >= 12, c
    assert t.marker.line.color == figures.PALE_SWATCH_EDGE and t.marker.line.width >= 1

    # the PNG: the swatch's pixels beside its legend text are the neutral colour, no orange
    from io import BytesIO

    from PIL import Image

    png = figures.to_image(fig, "png")
    img = Image.open(BytesIO(png)).convert("RGB")
    want = tuple(int(col[i:i + 2], 16) for i in (0, 2, 4))
    w, h = img.size
    legend_part = img.crop((0, h - 140, w, h))
    raw = legend_part.tobytes()
    px = [tuple(raw[i:i + 3]) for i in range(0, len(raw), 3)]
    assert sum(1 for p in px if p == want) >= 40  # the swatch (11 px square) is there
    pale_script = M.pale(L.CONTENT_COLORS["script"][0]).lstrip("#")
    ps = tuple(int(pale_script[i:i + 2], 16) for i in (0, 2, 4))
    assert sum(1 for p in px if max(abs(a - b) for a, b in zip(p, ps)) <= 3) < 20  # (no pale orange square in the legend)
