"""The side-by-side compare figure (`wirefall compare A B -o x.png`) is drawn by the waterfall
image's own drawing of its request rows (ui/figures.py: ``request_drawing``): its legend names
every colour its bars use (the content classes as well as the phases), a capture side draws the
bursts of packets that carried each download — at the times tshark gives those packets — and
every label lies inside its plot (B's "page load" label was cut off at the right edge)."""
from __future__ import annotations

import html
import shutil
from functools import cache

import pytest

from conftest import SAMPLES, run_tool, shared
from wirefall.analyzer.compare import compare
from wirefall.analyzer.pipeline import analyze
from wirefall.analyzer.waterfall import CONTENT_COLORS, build

PAGE = SAMPLES / "page"


def _need(*paths) -> None:
    for p in paths:
        if not p.exists():
            pytest.skip(f"{p.name} missing")


@cache
def _page(name: str):
    _need(PAGE / f"{name}.pcapng", PAGE / f"{name}.keys")
    return analyze(str(PAGE / f"{name}.pcapng"), keylogs=[str(PAGE / f"{name}.keys")])


@cache
def _h2_h3():
    from wirefall.ui.compare_figure import compare_figure

    a, b = _page("page-h2"), _page("page-h3")
    res = compare(a, b)
    return a, b, res, compare_figure(a, b, res)


def _colours(v) -> list[str]:
    if v is None:
        return []
    return [v] if isinstance(v, str) else [c for c in v if isinstance(c, str)]


def _drawn_and_named(fig) -> tuple[set[str], dict[str, str]]:
    """The colours the figure's drawn traces use, and its legend entries (name → colour)."""
    drawn: set[str] = set()
    named: dict[str, str] = {}
    for t in fig.data:
        cols = _colours(t.marker.color)
        if t.type == "scatter" and "lines" in (t.mode or ""):
            cols += _colours(t.line.color)
        if any(x is not None for x in (t.x or ())):
            drawn.update(c.lower() for c in cols)
        if t.showlegend is not False and t.name:
            assert t.name not in named, t.name  # each entry once, though both sides drew it
            named[t.name] = cols[0].lower() if cols else ""
    return drawn, named


def _check_legend_names_every_colour(fig) -> dict[str, str]:
    from wirefall.ui.figures_marks import pale

    drawn, named = _drawn_and_named(fig)
    legend_cols = set(named.values())
    # the pale part of a download (no byte arriving) is its class colour paled: the legend's
    # "(pale)" entry says so, each class its own entry
    classes = [n.removesuffix(" download") for n in named if n.endswith(" download") and n.removesuffix(" download") in CONTENT_COLORS]
    pales = {pale(CONTENT_COLORS[c][0]).lower() for c in classes} if any("(pale)" in n for n in named) else set()
    unnamed = drawn - legend_cols - pales
    assert not unnamed, (unnamed, named)
    return named


def test_legend_names_the_content_classes_and_phases():
    a, b, res, fig = _h2_h3()
    named = _check_legend_names_every_colour(fig)
    wa, wb = build(a), build(b)
    classes = {r.content_class for wf in (wa, wb) for r in wf.rows}
    for cls in classes:  # (a script download reads as a script, not as "Initial connection")
        assert named[f"{cls} download"] == CONTENT_COLORS[cls][1].lower()
    assert named["Initial connection"] != named["script download"]
    # the bars drawn as the waterfall image draws them: the same trace names
    assert {"Download chunk", "Waiting (TTFB)", "Content download"} <= {t.name for t in fig.data}


def test_capture_bursts_are_the_packets_tshark_shows():
    """On the HTTP/3 side, /img/hero.jpg's bursts: every burst starts at a packet of its
    response's STREAM frames and every such packet (tshark: frame.time_epoch of
    ``quic.stream.stream_id == N`` from the server) lies in a burst, their counts add up; the
    HTTP/2 side draws bursts too."""
    if shutil.which("tshark") is None:
        pytest.skip("tshark missing")
    _a, b, res, fig = _h2_h3()
    wb = build(b)
    row = next(r for r in wb.rows if r.url.endswith("/img/hero.jpg"))
    ex = next(e for e in b.exchanges if e.id == row.exchange)
    conn = next(c for c in b.connections if c.id == ex.connection)
    cap, keys = PAGE / "page-h3.pcapng", PAGE / "page-h3.keys"
    out = run_tool("tshark", "-r", str(cap), "-o", f"tls.keylog_file:{keys}", "-Y",
                   f"quic.stream.stream_id == {ex.stream_id} && udp.srcport == {conn.server[1]}",
                   "-T", "fields", "-e", "frame.time_epoch").split()
    times = sorted(float(x) for x in out)
    assert len(times) > 10
    ticks = [html.unescape(t) for t in fig.layout.yaxis.ticktext]
    y = ticks.index("/img/hero.jpg")
    bursts = {ax: [t for t in fig.data if t.name == "Download chunk" and (t.xaxis or "x") == ax] for ax in ("x", "x2")}
    assert bursts["x"] and bursts["x2"]  # both sides are captures: both draw their bursts
    (tr,) = bursts["x2"]
    mine = [(base, w, h) for base, w, yy, h in zip(tr.base, tr.x, tr.y, tr.hovertext) if yy == y]
    assert mine
    starts = [wb.page_start + base / 1000.0 for base, _w, _h in mine]
    ends = [s + w / 1000.0 for s, (_b, w, _h) in zip(starts, mine)]
    for s in starts:
        assert min(abs(s - t) for t in times) < 1e-6
    for t in times:
        assert any(s - 1e-6 <= t <= e + 1e-6 for s, e in zip(starts, ends)), t
    assert sum(int(h.split(" packet", 1)[0]) for _b, _w, h in mine) == len(times)


def _check_annotations_inside(fig) -> None:
    """Every annotation placed on a time axis lies in that axis' range, its text (estimated at
    7 px a character) included."""
    width = fig.layout.width
    m = fig.layout.margin
    checked = 0
    for an in fig.layout.annotations:
        ref = an.xref or "paper"
        if not ref.startswith("x"):
            continue
        axis = fig.layout["xaxis" + ref[1:]]
        lo, hi = axis.range
        assert lo <= an.x <= hi, (an.text, an.x, axis.range)
        px = (width - m.l - m.r) * (axis.domain[1] - axis.domain[0])
        w = (len(html.unescape(an.text)) * 7 + abs(an.xshift or 0)) * (hi - lo) / px
        if an.xanchor == "right":
            assert an.x - w >= lo, an.text
        else:
            assert an.xanchor == "left" and an.x + w <= hi, (an.text, an.xanchor)
        checked += 1
    assert checked


def test_page_load_labels_lie_inside_the_plot():
    a, b, res, fig = _h2_h3()
    texts = [x.text for x in fig.layout.annotations]
    assert sum(t.startswith("last byte ") for t in texts) == 2
    _check_annotations_inside(fig)
    # B's line is at its axis' right end: its label goes left of it
    b_label = next(x for x in fig.layout.annotations if x.text.startswith("last byte ") and x.xref == "x2")
    assert b_label.xanchor == "right"


def test_capture_against_a_har():
    """amazon1 against WebPageTest's HAR of the same page: the HAR side (no packets) draws
    its downloads in their class colours throughout, the capture side its bursts; the legend
    names every colour of both, and the labels lie inside."""
    from wirefall.ui.compare_figure import compare_figure

    cap, keys, har = (shared("pageload-amazon/amazon1.cap.gz"), shared("pageload-amazon/amazon1.key_log.txt.gz"),
                      shared("hars/webpagetest-amazon.har.gz"))
    _need(cap, keys, har)
    a = analyze(str(cap), keylogs=[str(keys)])
    b = analyze(str(har))
    fig = compare_figure(a, b, compare(a, b))
    named = _check_legend_names_every_colour(fig)
    assert "script download" in named and "Download, no byte arriving (pale)" in named
    chunks = [t for t in fig.data if t.name == "Download chunk"]
    assert [t.xaxis or "x" for t in chunks] == ["x"]  # the capture's side only
    dl = [t for t in fig.data if t.name == "Content download" and t.xaxis == "x2"]
    wb = build(b)
    assert dl and set(dl[0].marker.color) <= {CONTENT_COLORS[r.content_class][1] for r in wb.rows}
    _check_annotations_inside(fig)
