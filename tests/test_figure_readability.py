"""What a reader of the waterfall image must be able to tell apart and read:

- an image's download from the TLS negotiation (the connection view draws one beside the other:
  page-h1's connections #4 and #5, TLS then a JPEG): the image class's dark colour was #8b5ccc,
  TLS's #c141cd (WebPageTest's) — both purple, CIEDE2000 10.7 apart.  Now its hue is as far from
  TLS's as the closest two phase colours are from each other, and the legend shows both;
- a row's text where a milestone's line passes: bg-mixed's row 1 "← 3004 ms (ended 3.00 s)", at
  the page view's left edge, was struck through by the first-packet and HTML lines.  A text a
  line crosses is drawn over it, on its row's own colour (ui/figures_marks.crossed_texts)."""
from __future__ import annotations

import colorsys
import itertools

from conftest import SAMPLES

from wirefall.analyzer import waterfall
from wirefall.analyzer.pipeline import analyze
from wirefall.analyzer.waterfall import CONTENT_COLORS, PHASE_COLORS, SEND_COLOR, WAIT_COLOR
from wirefall.ui import figures
from wirefall.ui import figures_marks as M

TUI_BACKGROUND = "#121212"  # (the TUI's dark screen, where the same colours draw its bars)


def _lab(h: str) -> tuple[float, float, float]:
    h = h.lstrip("#")
    lin = [(c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4) for c in (int(h[i:i + 2], 16) / 255 for i in (0, 2, 4))]
    r, g, b = lin
    x, y, z = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047, 0.2126 * r + 0.7152 * g + 0.0722 * b, (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883
    f = lambda t: t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116  # noqa: E731
    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def _de2000(c1: str, c2: str) -> float:
    """CIEDE2000 (Sharma, Wu, Dalal 2005)."""
    import math

    L1, a1, b1 = _lab(c1)
    L2, a2, b2 = _lab(c2)
    cb = (math.hypot(a1, b1) + math.hypot(a2, b2)) / 2
    g = 0.5 * (1 - math.sqrt(cb ** 7 / (cb ** 7 + 25 ** 7)))
    a1p, a2p = (1 + g) * a1, (1 + g) * a2
    c1p, c2p = math.hypot(a1p, b1), math.hypot(a2p, b2)
    h1p, h2p = math.degrees(math.atan2(b1, a1p)) % 360, math.degrees(math.atan2(b2, a2p)) % 360
    dh = h2p - h1p
    dh = 0 if c1p * c2p == 0 else dh - 360 if dh > 180 else dh + 360 if dh < -180 else dh
    dH = 2 * math.sqrt(c1p * c2p) * math.sin(math.radians(dh / 2))
    lb, cbp = (L1 + L2) / 2, (c1p + c2p) / 2
    hb = (h1p + h2p if c1p * c2p == 0 else (h1p + h2p) / 2 if abs(h1p - h2p) <= 180 else
          (h1p + h2p + 360) / 2 if h1p + h2p < 360 else (h1p + h2p - 360) / 2)
    t = (1 - 0.17 * math.cos(math.radians(hb - 30)) + 0.24 * math.cos(math.radians(2 * hb))
         + 0.32 * math.cos(math.radians(3 * hb + 6)) - 0.20 * math.cos(math.radians(4 * hb - 63)))
    dth = 30 * math.exp(-(((hb - 275) / 25) ** 2))
    rc = 2 * math.sqrt(cbp ** 7 / (cbp ** 7 + 25 ** 7))
    sl = 1 + 0.015 * (lb - 50) ** 2 / math.sqrt(20 + (lb - 50) ** 2)
    sc, sh = 1 + 0.045 * cbp, 1 + 0.015 * cbp * t
    rt = -math.sin(math.radians(2 * dth)) * rc
    return math.sqrt(((L2 - L1) / sl) ** 2 + ((c2p - c1p) / sc) ** 2 + (dH / sh) ** 2 + rt * ((c2p - c1p) / sc) * (dH / sh))


def _hue(h: str) -> float:
    return colorsys.rgb_to_hls(*(int(h[i:i + 2], 16) / 255 for i in (1, 3, 5)))[0] * 360


def _hue_apart(a: str, b: str) -> float:
    d = abs(_hue(a) - _hue(b)) % 360
    return min(d, 360 - d)


def _contrast(a: str, b: str) -> float:
    def lum(h: str) -> float:
        v = [int(h[i:i + 2], 16) / 255 for i in (1, 3, 5)]
        v = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in v]
        return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2]
    la, lb = lum(a), lum(b)
    return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)


def test_image_download_and_tls_read_apart():
    image_light, image = CONTENT_COLORS["image"]
    tls = PHASE_COLORS["tls"]
    phases = [PHASE_COLORS["dns"], PHASE_COLORS["connect"], tls, SEND_COLOR, WAIT_COLOR]
    closest_phases = min(_hue_apart(a, b) for a, b in itertools.combinations(phases, 2))  # (DNS teal – request indigo: 40°)
    assert _hue_apart(image, tls) >= closest_phases  # (#8b5ccc: 30°)
    assert _de2000(image, tls) >= 15  # (#8b5ccc: 10.7)
    # still the image class's colour (violet: WebPageTest's images are purple), its packet bursts
    # standing out of its light colour at least as before, and as visible on the TUI's dark screen
    # as the other classes' dark colours (3.8–5.6 : 1)
    assert 240 <= _hue(image) <= 280 and 240 <= _hue(image_light) <= 280
    assert _contrast(image, image_light) >= _contrast("#8b5ccc", image_light)
    assert _contrast(image, TUI_BACKGROUND) >= 3.5


def test_legend_shows_tls_and_image_in_their_colours():
    an = analyze(str(SAMPLES / "page" / "page-h1.pcapng"), keylogs=[str(SAMPLES / "page" / "page-h1.keys")])
    fig = figures.waterfall_figure(waterfall.build(an), hover=False)
    legend = {t.name: t.marker.color for t in fig.data if t.showlegend is not False and t.name and t.marker is not None}
    assert legend["TLS negotiation"] == PHASE_COLORS["tls"]
    assert legend["image download"] == CONTENT_COLORS["image"][1]


def test_no_milestone_line_crosses_a_row_text():
    """bg-mixed (its page view: 4.47–7.99 s): the milestones' lines are drawn under the rows' bars
    and texts, and each text a line passes through — row 1's "← 3004 ms (ended 3.00 s)" at the
    view's left edge (first-packet and HTML lines), the open request's "no response …" at its right — on
    a box of its row's colour drawn over the line; every row keeps its text."""
    cap = SAMPLES / "page" / "bg-mixed.pcapng"
    an = analyze(str(cap), keylogs=[str(cap.with_suffix(".keys"))])
    wf = waterfall.build(an)
    fig = figures.waterfall_figure(wf, hover=False)
    shapes = list(fig.layout.shapes)
    lines = [(k, s.x0) for k, s in enumerate(shapes) if s.type == "line" and s.yref == "paper" and s.x0 == s.x1]
    assert len(lines) >= 3 and all(shapes[k].layer == M.MILESTONE_LAYER == "between" for k, _ in lines)
    dur = next(t for t in fig.data if t.name == "duration")
    assert len(dur.text) == len(wf.rows) and all(dur.text)  # (every row its text, in the trace)
    lo, hi = fig.layout.xaxis.range
    ms_per_px = (hi - lo) / (fig.layout.width - fig.layout.margin.l - fig.layout.margin.r)
    crossed = M.crossed_texts(list(zip(dur.x, dur.text, dur.textposition)), [x for _, x in lines], ms_per_px, figures.CHAR_PX)
    said = {dur.text[i] for i in crossed}
    # (late.json's "4.1 ms", crossed by the last byte's line, stands 4 px right of its bar since
    # session 31, past the line: figures.LABEL_GAP_PX)
    assert "← 3004 ms (ended 3.00 s)" in said and "no response (open ≥ 1028 ms) →" in said
    boxes = {(s.xanchor, s.yanchor): (k, s) for k, s in enumerate(shapes) if s.type == "rect" and s.xsizemode == "pixel"
             and s.ysizemode == "pixel"}
    for i in crossed:
        k, box = boxes[(dur.x[i], dur.y[i])]
        assert k > max(j for j, _ in lines) and box.layer == M.MILESTONE_LAYER  # (over the lines, under the text)
        w = len(dur.text[i]) * figures.CHAR_PX
        left = dur.textposition[i] == "middle left"
        assert (box.x0 <= -w and box.x1 > 0) if left else (box.x0 < 0 and box.x1 >= w)
        assert box.y0 < 0 < box.y1 and box.fillcolor in (M.row_background(False), M.row_background(True))
    row1 = boxes[(lo, 0)][1]
    assert row1.fillcolor == M.row_background(False)  # (row 1: not shaded)


def test_crossed_texts_and_row_background():
    # a 10-character text from x=100 ms at 1 ms/px, 6 px a character: 100–164 ms (2 px pad each side)
    texts = [(100.0, "0123456789", "middle right"), (500.0, "0123456789", "middle left"), (900.0, "", "middle right")]
    assert M.crossed_texts(texts, [150.0], 1.0, 6.0) == [0]
    assert M.crossed_texts(texts, [99.0], 1.0, 6.0) == [0]  # (at its very start)
    assert M.crossed_texts(texts, [170.0, 300.0], 1.0, 6.0) == []
    assert M.crossed_texts(texts, [450.0], 1.0, 6.0) == [1]
    assert M.crossed_texts(texts, [900.0], 1.0, 6.0) == []  # (no text, nothing to cross)
    assert M.row_background(False) == "#ffffff"
    assert M.row_background(True) == "#f4f4f4"  # (white under black at 0.045)
    assert M.row_background(False, M.ERROR_TINT) == "#f8dcdd"
