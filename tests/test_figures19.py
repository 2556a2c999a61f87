"""The waterfall image (ui/figures.py, ui/figures_marks.py) read as data — the plotly figure's
dict — against the analysis' `requests --json` and tshark: the background rows marked in the
label column, the time axis on the page's span with the background rows it cuts said, a
request with no response drawn open to the capture's end, method and status in the label, error
rows tinted, the throughput steps on their bins, the waiting and downloading colours apart in
lightness, the legend's swatches right, the connection view naming its host, the empty figure's
room for its note, the HTML page titled and as wide as its window."""
from __future__ import annotations

import json
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest
from conftest import run_tool

from wirefall.analyzer import waterfall
from wirefall.analyzer.pipeline import analyze
from wirefall.analyzer.waterfall import CONTENT_COLORS, WAIT_COLOR
from wirefall.ui import figures
from wirefall.ui import figures_marks as M

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "sample_captures" / "page"
AMAZON = ROOT.parent / "shared" / "captures" / "pageload-amazon"


@lru_cache(maxsize=8)
def _analysis(name: str):
    return analyze(str(PAGE / f"{name}.pcapng"), keylogs=[str(PAGE / f"{name}.keys")])


@lru_cache(maxsize=8)
def _requests_json(cap: str, keys: str) -> list[dict]:
    out = subprocess.run([sys.executable, "-m", "wirefall", "requests", cap, "--keylog", keys, "--json"], capture_output=True,
                         text=True, cwd=ROOT.parent, timeout=300)
    assert out.returncode == 0, out.stderr[-500:]
    return json.loads(out.stdout)


def _bg():
    an = _analysis("bg-mixed")
    wf = waterfall.build(an)
    return an, wf, figures.waterfall_figure(wf, hover=False)


def _labels(fig) -> dict[int, str]:
    return {int(v): t.replace("\xa0", " ") for v, t in zip(fig.layout.yaxis.tickvals, fig.layout.yaxis.ticktext)}


def _trace(fig, name):
    return next(t for t in fig.data if t.name == name)


def _lab(h: str) -> tuple[float, float, float]:
    h = h.lstrip("#")
    lin = [(c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4) for c in (int(h[i:i + 2], 16) / 255 for i in (0, 2, 4))]
    r, g, b = lin
    x, y, z = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047, 0.2126 * r + 0.7152 * g + 0.0722 * b, (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883
    f = lambda t: t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116
    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def _de(a: str, b: str) -> float:
    return sum((p - q) ** 2 for p, q in zip(_lab(a), _lab(b))) ** 0.5


def test_background_rows_are_marked_in_the_label_column_as_requests_json_says():
    _an, wf, fig = _bg()
    truth = {r["id"]: r for r in _requests_json(str(PAGE / "bg-mixed.pcapng"), str(PAGE / "bg-mixed.keys"))}
    labels = _labels(fig)
    assert sum(r["background"] for r in truth.values()) == 6
    for r in wf.rows:
        bg = truth[r.exchange]["background"]
        label = labels[r.index]
        assert label.startswith(f'<span style="color:{M.MUTED}">') == bg, label
        head = label.split(">", 1)[-1].split(f" {r.index + 1} ", 1)[0].split()
        assert ("bg" in head) == bg, label
    # rows 4-6: page.test/css/main.css from another host (background) and the page's own differ now
    assert labels[3].split(">", 1)[1].split()[0] == "bg" and "page.test/css/main.css" in labels[3]
    assert labels[5].split()[0] == "6" and "page.test/css/main.css" in labels[5]
    names = [t.name for t in fig.data if t.showlegend is not False]
    assert any(n.startswith("bg: background") for n in names)


def test_time_axis_is_the_pages_span_and_says_what_it_leaves_out():
    _an, wf, fig = _bg()
    truth = _requests_json(str(PAGE / "bg-mixed.pcapng"), str(PAGE / "bg-mixed.keys"))
    page = [r for r in truth if not r["background"]]
    t0 = wf.t0
    start_ms = (min(r["phases"]["start"] for r in page) - t0) * 1000
    end_ms = (max(r["response_end"] for r in page if r["response_end"]) - t0) * 1000
    lo, hi = fig.layout.xaxis.range
    span = end_ms - start_ms
    assert start_ms - 0.05 * span <= lo <= start_ms and end_ms <= hi <= end_ms + 0.3 * span
    assert hi < (wf.t_end - t0) * 1000 * 0.9  # (the metadata long-polls no longer set it: 0-9.9 s)
    beyond = [r for r in truth if r["background"]
              and ((r["phases"]["start"] - t0) * 1000 < lo or r["response_end"] is None or (r["response_end"] - t0) * 1000 > hi)]
    sub = fig.layout.title.subtitle.text
    assert "the page's span" in sub and f"{len(beyond)} background rows reach beyond it" in sub, sub
    # the cut rows' texts sit at the view's edges, with arrows
    dur = _trace(fig, "duration")
    for r, x, txt in zip(wf.rows, dur.x, dur.text):
        if (r.start - t0) * 1000 < lo and (r.end - t0) * 1000 < lo:
            assert x == lo and txt.startswith("← "), txt
        elif (r.end - t0) * 1000 > hi or M.no_response(r):
            assert x == hi and txt.endswith(" →"), txt
    # seconds on the axis, not "1k ms"
    assert all(t.endswith(" s") for t in fig.layout.xaxis.ticktext) and "5 s" in fig.layout.xaxis.ticktext
    assert fig.layout.xaxis.ticktext == fig.layout.xaxis2.ticktext
    # the whole capture on request
    whole = figures.waterfall_figure(wf, hover=False, time_span="capture")
    assert whole.layout.xaxis.range[0] == 0 and whole.layout.xaxis.range[1] >= (wf.t_end - t0) * 1000
    assert "the page's span" not in whole.layout.title.subtitle.text
    # a capture with no background traffic keeps its whole time
    h2 = waterfall.build(_analysis("page-h2"))
    assert figures.waterfall_figure(h2, hover=False).layout.xaxis.range[0] == 0


def test_a_request_without_response_is_open_to_the_capture_end():
    _an, wf, fig = _bg()
    truth = {r["id"]: r for r in _requests_json(str(PAGE / "bg-mixed.pcapng"), str(PAGE / "bg-mixed.keys"))}
    assert truth[16]["status"] is None and truth[16]["error"] == "no response in the capture"
    # the capture's last packet, as tshark reads it
    last = float(run_tool("tshark", "-r", str(PAGE / "bg-mixed.pcapng"), "-T", "fields", "-e", "frame.time_relative").split()[-1])
    row = next(r for r in wf.rows if r.exchange == 16)
    assert M.no_response(row) and [r.exchange for r in wf.rows if M.no_response(r)] == [16]
    whole = figures.waterfall_figure(wf, hover=False, time_span="capture")
    line = next(t for t in whole.data if t.name == "no response")
    assert list(line.y[:2]) == [row.index, row.index]
    assert line.x[0] == pytest.approx((truth[16]["request_end"] - wf.t0) * 1000, abs=0.01)
    assert line.x[1] == pytest.approx(last * 1000, abs=0.01) and last > 10.1
    dur = _trace(whole, "duration")
    assert dur.text[row.index].startswith("no response (open ≥ 10") and "0.11 ms" not in dur.text[row.index]
    assert "no response" in _labels(whole)[row.index]
    assert any(t.name.startswith("No response") for t in whole.data if t.showlegend is not False)


def test_status_and_method_marks_and_error_rows_are_tinted():
    _an, wf, fig = _bg()
    truth = {r["id"]: r for r in _requests_json(str(PAGE / "bg-mixed.pcapng"), str(PAGE / "bg-mixed.keys"))}
    labels = _labels(fig)
    tinted = {round(s.y0 + 0.5) for s in fig.layout.shapes if s.fillcolor == M.ERROR_TINT}
    for r in wf.rows:
        t = truth[r.exchange]
        lab = labels[r.index]
        if t["status"] not in (None, 200):
            assert str(t["status"]) in lab.split(" ", 1)[0] + lab, lab
        assert ((t["status"] or 0) >= 400) == (r.index in tinted)
    fav = next(r for r in wf.rows if r.url.endswith("/favicon.ico"))
    assert truth[fav.exchange]["status"] == 404 and labels[fav.index].lstrip().startswith("404")
    # both the row and its label column
    assert sum(1 for s in fig.layout.shapes if s.fillcolor == M.ERROR_TINT and round(s.y0 + 0.5) == fav.index) == 2
    # rows answered 200 to a GET are labelled as the layout labels them (no mark)
    from wirefall.ui import waterfall_layout as L
    plain = [r for r in wf.rows if not M.mark(r)]
    n, bw = figures.label_columns(wf.rows, 1400, figures.mark_width(wf.rows))  # (the image's width: its labels' room)
    assert plain and all(labels[r.index] == L.row_label(r, n, badge_chars=bw) for r in plain)


@pytest.mark.slow
def test_amazon_202_and_posts_are_in_the_labels():
    cap, kl = AMAZON / "amazon1.cap.gz", AMAZON / "amazon1.key_log.txt.gz"
    if not cap.exists():
        pytest.skip("amazon capture not present")
    truth = {r["id"]: r for r in _requests_json(str(cap), str(kl))}
    wf = waterfall.build(analyze(str(cap), keylogs=[str(kl)]))
    labels = _labels(figures.waterfall_figure(wf, hover=False))
    marked = 0
    for r in wf.rows:
        t = truth[r.exchange]
        head = labels[r.index].split(f" {r.index + 1} ", 1)[0]
        assert (t["method"] != "GET") == (t["method"] in head), labels[r.index]
        assert (t["status"] not in (200, None)) == (str(t["status"]) in head), labels[r.index]
        marked += bool(head.strip())
    assert truth[wf.rows[0].exchange]["status"] == 202 and labels[0].lstrip().startswith("202") and marked >= 3


def test_throughput_steps_start_at_their_bins():
    an = _analysis("page-h2")
    wf = waterfall.build(an)
    fig = figures.waterfall_figure(wf, hover=False)
    tp = wf.throughput
    down = _trace(fig, "▼ server→client")
    off = (tp.t0 - wf.t0) * 1000
    assert len(down.x) == len(tp.down) + 1 and down.line.shape == "hv"
    for k, x in enumerate(down.x):
        assert x == pytest.approx(off + k * tp.bin * 1000)
    assert list(down.y[:-1]) == [v / 1000 for v in tp.down] and down.y[-1] == 0
    # every server→client TCP payload packet (tshark) lies in a step drawn with bytes, the step
    # [x_k, x_k+1) that holds its time (x was the bin's middle: half the packets fell in the step before)
    t = run_tool("tshark", "-r", str(PAGE / "page-h2.pcapng"), "-Y", "tcp.srcport == 59833 && tcp.len > 0", "-T", "fields",
                 "-e", "frame.time_relative").split()
    assert len(t) > 20
    for s in t:
        ms = float(s) * 1000
        k = next(i for i in range(len(down.x) - 1) if down.x[i] <= ms < down.x[i + 1])
        assert down.y[k] > 0, (ms, k)
    assert fig.layout.yaxis3.ticklabelposition in (None, "outside")  # (inside, the bars overprinted "0 kB")
    assert 0 not in fig.layout.yaxis3.tickvals and max(fig.layout.yaxis3.tickvals) <= max(tp.down) / 1000


def test_waiting_and_downloading_are_apart_in_lightness_for_every_class():
    for cls, (light, dark) in CONTENT_COLORS.items():
        p = M.pale(light)
        assert _lab(p)[0] - _lab(WAIT_COLOR)[0] >= 5 and _de(p, WAIT_COLOR) >= 20, cls
        assert _lab(WAIT_COLOR)[0] - _lab(dark)[0] >= 15 and _de(dark, WAIT_COLOR) >= 20, cls
    # as drawn: on each css row of page-spdy the waiting bar and the download (no byte yet) bar differ
    an = analyze(str(ROOT / "sample_captures" / "page" / "page-spdy.pcapng"), keylogs=[str(PAGE / "page-spdy.keys")])
    wf = waterfall.build(an)
    fig = figures.waterfall_figure(wf, hover=False)
    wait, recv = _trace(fig, "Waiting (TTFB)"), _trace(fig, "Content download")
    wc = dict(zip(wait.y, wait.marker.color))
    rc = dict(zip(recv.y, recv.marker.color))
    css = [r.index for r in wf.rows if r.content_class == "css" and r.chunks]
    assert css
    for i in css:
        assert _de(wc[i], rc[i]) >= 20 and _lab(rc[i])[0] > _lab(wc[i])[0] + 6


def test_legend_swatches_say_what_is_drawn():
    _an, wf, fig = _bg()
    entries = {t.name: t for t in fig.data if t.showlegend is not False}
    assert not [n for n in entries if n.startswith("|")]
    pale = entries["Download, no byte arriving (pale)"].marker.color
    drawn = set(_trace(fig, "Content download").marker.color)
    # the swatch is light and neutral (review 27: the first row's pale orange read as a faded connect), each
    # class's own pale is what the bars have
    assert pale == figures.PALE_SWATCH and _lab(pale)[0] > 85
    assert {M.pale(r.colors["light"]) for r in wf.rows if r.chunks and r.phase("receive")} <= drawn
    dark = {n: t.marker.color for n, t in entries.items() if n.endswith(" download")}
    assert pale not in dark.values() and len(set(dark.values())) == len(dark)


def test_connection_view_names_host_and_port():
    _an, wf, fig = _bg()
    ticks = [t.replace("\xa0", " ") for t in fig.layout.yaxis2.ticktext]
    assert [t.split()[0] for t in ticks] == [f"#{cn.connection}" for cn in wf.connection_rows]  # (the model's ids)
    assert any(t.startswith("#") and "page.test:443" in t for t in ticks)
    assert any("static.test:443" in t for t in ticks) and any("169.254.169.254:80" in t for t in ticks)


def test_time_ticks_in_seconds():
    vals, texts = M.time_ticks(4470.0, 8000.0, 800.0)
    assert texts[:3] == ["4.5 s", "5 s", "5.5 s"] and vals[:3] == [4500.0, 5000.0, 5500.0]
    assert M.time_ticks(0.0, 1500.0, 800.0) is None  # (short: plotly's ms)


def test_empty_figure_leaves_room_for_its_note(tmp_path):
    an = analyze(str(PAGE / "page-h2.pcapng"))  # no key log: nothing decrypted, no row
    wf = waterfall.build(an)
    fig = figures.waterfall_figure(wf, hover=False)
    assert not wf.rows
    lo, hi = fig.layout.yaxis.domain
    h = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
    # a note centred on the plot area (paper 0.5), five 17 px lines, lies in the request panel
    assert lo * h <= 0.5 * h - 45 and 0.5 * h + 45 <= hi * h


def test_html_is_titled_and_as_wide_as_the_window():
    _an, wf, _fig = _bg()
    fig = figures.waterfall_figure(wf, hover=True)
    assert fig.layout.width is None and fig.layout.autosize
    html = figures.html_document(fig).decode()
    assert "<title>wirefall — bg-mixed.pcapng</title>" in html
    assert figures.waterfall_figure(wf, hover=False).layout.width == 1400  # (images keep theirs)


def test_connections_not_decrypted_are_not_said_to_carry_no_request():
    """bg-mixed: of the two connections without a request, one (static.test) was not decrypted
    (no key for its client random): the heading
    says what it carried is unknown, not that it carried no request."""
    from wirefall.analyzer.pipeline import analyze
    from wirefall.analyzer.waterfall import build
    from wirefall.ui.figures import waterfall_figure

    cap = PAGE / "bg-mixed.pcapng"
    an = analyze(str(cap), keylogs=[str(cap.with_suffix(".keys"))])
    wf = build(an)
    undecrypted = [c for c in an.connections if c.tls is not None and not c.tls.decrypted]
    assert wf.unused_connections == 2 and wf.unused_undecrypted == len(undecrypted) == 1
    # tshark: exactly one ClientHello's random has no line in the key log
    randoms = run_tool("tshark", "-r", str(cap), "-Y", "tls.handshake.type == 1", "-T", "fields", "-e", "tls.handshake.random").split()
    logged = {ln.split()[1].lower() for ln in cap.with_suffix(".keys").read_text().splitlines() if len(ln.split()) == 3}
    assert sum(r.lower() not in logged for r in randoms) == 1
    texts = [a.text.replace("<br>", " ") for a in waterfall_figure(wf, hover=False).layout.annotations if a.text]  # (wrapped in the label column)
    assert any("2 more with no request seen (not drawn; 1 not decrypted: what it carried is unknown)" in t for t in texts)
    assert not any("carried no request" in t for t in texts)
