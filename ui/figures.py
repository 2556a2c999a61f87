"""Plotly figures of a ``Waterfall`` (analyzer/waterfall.py), and their export to PNG/SVG
(kaleido 1.x) and to one self-contained offline HTML file.

plotly and kaleido are imported here and only here, inside the functions, so that
commands that draw nothing never load them.

The figure has one trace per phase holding every row (not one shape per row): up to
``BIG_THRESHOLD`` rows these are horizontal ``Bar`` traces (one SVG path per bar, exact in
PNG/SVG).  Above it every bar is one rectangle of an SVG path, one ``path`` shape per
(colour, faded) holding all the rectangles of that colour (a few dozen DOM nodes in all,
where bars, scatter line segments or markers make one node per row or per segment); the
hover texts ride on one invisible trace with a point per row (``mode="none"``, no node)
under ``hovermode="y"``.  Measured on 10 000 requests (benchmarks/waterfall_scale.py):
this draws several times faster than WebGL ``Scattergl`` lines in headless Chromium (which
draws WebGL in software over a canvas as tall as the figure) and makes the PNG in one pass.

Plotly reads HTML-like markup in every label (``<a href>``, ``<span style>``, ``<br>``,
``<b>``…): each string that comes from a capture (URLs, headers, marker labels, the file
name) goes through ``analyzer.safetext.html_text`` before it reaches a figure, so that it
shows as the characters it is and makes no element.
"""
from __future__ import annotations

import os
import textwrap
from contextlib import contextmanager
from collections.abc import Iterable, Iterator

from wirefall.analyzer.model import not_sent_of
from wirefall.analyzer.safetext import html_text
from wirefall.analyzer.waterfall import CONTENT_CLASSES, CONTENT_COLORS, PHASE_LABELS, PHASES, Waterfall

from . import figures_marks as M
from . import waterfall_layout as L

BIG_THRESHOLD = 1500  # rows above which the bars are path shapes (see the module docstring)
BAR_HALF = 0.36  # half a bar's height in rows (Bar width 0.72)
IDLE_HALF = 0.05  # the idle phase (a connection ready, its request not yet sent): a thin line, not a bar
CONN_HALF = 0.3
BROWSER_Y, BROWSER_HALF = 0.43, 0.065  # the browser's thin bar: under the wire's (rows grow downwards)
ROW_PX = 20
CONN_ROW_PX = 16
TRACK_PX = 90  # the throughput track
CHAR_PX = 6.1  # a 10 px monospace character (DejaVu Sans Mono: 6.02 px)
LABEL_FONT = dict(size=10, family="DejaVu Sans Mono, monospace")
MILESTONE_ROW_PX = 16
LEGEND_PX = 110  # room under the bottom axis for the legend (4 rows at 1280 px)
LEGEND_LABELS = {"idle": "Idle: connected, request not yet sent"}  # (shorter than PHASE_LABELS': the legend's columns are its longest entry wide)
LEGEND_ROW_PX = 19  # a row of the horizontal legend (10 px text)
LEGEND_CHAR_PX = 5.6  # a character of its text (plotly's sans-serif at 10 px)
MAX_ROWS_PX = 16000  # past 800 rows the request rows get thinner
SUBTITLE_CHAR_PX = 6.4  # a character of the 12 px subtitle (plotly's sans-serif; the amazon headline: 6.05 px on average)
SUBTITLE_LINE_PX = 16  # each line of the subtitle after its first
NARROWEST = 1200  # milestone labels are staggered for this figure width: wider only spreads them
PAGE_TEXT_PX = 1000  # a page's figure (HTML, web app) wraps its subtitle for a window this narrow (a 1024 px one)
HEADING_CHAR_PX = 6.3  # a character of an 11 px section heading (plotly's sans-serif)
HEADING_LINE_PX = 15  # each of its lines


def _short(url: str, n: int = 60) -> str:
    return L.short_url(url, n)


START_UNKNOWN_HOVER = "began before the capture (its request is not in it): the bar starts at its first byte captured, total"
START_UNKNOWN_NAME = "start not in the capture"  # (the trace of the ← marks at the bars' left ends)
START_UNKNOWN_LEGEND = "← ≥: began before the capture (start unknown, duration at least)"
# the legend's "Download, no byte arriving (pale)": each class's own pale is drawn; the swatch is a neutral near-white
# square edged in grey (no phase's colour, nor the queued grey's, nor a faded phase's)
PALE_SWATCH, PALE_SWATCH_EDGE = "#fafafa", "#8c8c8c"
NBSP = "\u00a0"  # SVG text collapses runs of spaces: the label column pads with no-break spaces


def row_label(r, n: int = L.LABEL_CHARS, mark_width: int = 0, number: int | None = None, badge_chars: int = L.BADGE_CHARS) -> str:
    """The row's label column (number — ``number``, else its place + 1 —, marker glyphs, badge
    in ``badge_chars``, host/path in ``n`` characters), escaped;
    with ``mark_width``, a marked row (``figures_marks.mark``: background, method, status, no
    response) has its mark right-aligned in that many characters before it (the labels are
    right-aligned at the axis, so unmarked rows keep their text and every column stays aligned),
    and a background row's label is muted."""
    text = html_text(L.row_label(r, n, number=number, badge_chars=badge_chars)).replace(" ", NBSP)
    m = M.mark(r) if mark_width else ""
    if m:
        text = html_text(m.rjust(mark_width) + "  ").replace(" ", NBSP) + text
    if r.background and mark_width:
        text = f'<span style="color:{M.MUTED}">{text}</span>'
    return text


LABEL_STANDOFF = 6  # px between a row label's end and the plot (the margin's 16 px of slack hold it)
LABEL_SHARE = 0.385  # the label column's share of the figure's width: 461 px at 1200 px, as wide as it was (the time axis has the rest)
URL_CHARS_MIN = 24  # a row label's host…path characters at the least (a graph beside the web page's request detail)


def url_chars_for(room_px: float, fixed_chars: int) -> int:
    """A row label's host…path characters in a figure ``room_px`` wide: what the label column's
    ``LABEL_SHARE`` of it holds less its ``fixed_chars`` (number, glyphs, badge, marks), at least
    ``URL_CHARS_MIN``.  It was 44 at any width: on a 1400 px image the amazon load's CDN files
    read ``images-na.ssl-images-amazon.com/…/csm-ca….js``, six characters of their names."""
    return max(int((LABEL_SHARE * room_px - 16) / CHAR_PX) - fixed_chars, URL_CHARS_MIN)


def label_columns(rows, room_px: float, mark_w: int = 0) -> tuple[int, int]:
    """A figure's label columns for ``rows`` (all of them: a window's labels are the whole
    figure's) in ``room_px``: (host…path characters — ``url_chars_for``, no more than the longest
    URL needs whole, 12 at least: a blank column past the longest was the time axis' —, badge
    characters: ``waterfall_layout.badge_width``): with ``n, bw = label_columns(...)``,
    ``waterfall_layout.row_label(r, n, badge_chars=bw)`` is the label ``waterfall_figure`` draws."""
    bw = L.badge_width(rows)
    n = url_chars_for(room_px, L.row_label_fixed(bw) + (mark_w + 2 if mark_w else 0))
    return min(n, max([L.url_chars_needed(r.url) for r in rows] + [12])), bw


def mark_width(rows) -> int:
    """The width of the label column's marks over ``rows`` (0: no row is marked)."""
    return max((len(M.mark(r)) for r in rows), default=0)


def _ms(t: float, t0: float) -> float:
    return (t - t0) * 1000.0


def _segments(items, go, name: str, width_px: float, legendgroup: str, showlegend: bool, hover=None):
    """One line trace per colour of (x0, x1, y, colour, hover) segments, None-separated."""
    by_color: dict[str, list] = {}
    for it in items:
        by_color.setdefault(it[3], []).append(it)
    out = []
    for k, (col, its) in enumerate(by_color.items()):
        xs, ys, tx = [], [], []
        for x0, x1, y, _c, h in its:
            xs += [x0, x1, None]
            ys += [y, y, None]
            if hover is not False:
                tx += [h, h, None]
        out.append(go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=col, width=width_px), name=name, legendgroup=legendgroup,
                              showlegend=showlegend and k == 0, hovertext=tx or None, hoverinfo="text" if hover is not False else "skip",
                              xaxis="x", yaxis="y2"))
    return out


def _num(v: float) -> str:
    return f"{v:.7g}"


class _Paths:
    """Bars and vertical ticks gathered per (axis, colour, faded, height) and made into one
    ``path`` shape each — 10 000 rows of bars become a few dozen SVG paths.  A bar is a
    horizontal stroke ``M x0,y H x1`` as thick as the bar (butt ends: it spans x0..x1 exactly),
    three numbers where a filled rectangle needs five."""

    def __init__(self) -> None:
        self.bars: dict[tuple[str, str, bool, float], list[str]] = {}
        self.ticks: dict[tuple[str, str, float], list[str]] = {}

    def rect(self, yref: str, color: str, faded: bool, x0: float, x1: float, y: float, half: float) -> None:
        self.bars.setdefault((yref, color, faded, half), []).append(f"M{_num(x0)},{_num(y)}H{_num(x1)}")

    def tick(self, yref: str, color: str, x: float, y: float, half: float) -> None:
        self.ticks.setdefault((yref, color, half), []).append(f"M{_num(x)},{_num(y - half)}V{_num(y + half)}")

    def shapes(self, row_px: dict[str, float]) -> list[dict]:
        """The shapes, ``row_px`` giving each y axis' pixels per row (the strokes' widths)."""
        out = [dict(type="path", path="".join(v), xref="x", yref=yref, opacity=0.35 if faded else 1.0,
                    line=dict(color=col, width=round(max(2 * half * row_px.get(yref, ROW_PX), 0.3), 2)), layer="between")
               for (yref, col, faded, half), v in self.bars.items()]
        out += [dict(type="path", path="".join(v), xref="x", yref=yref, line=dict(color=col, width=1.2), layer="between")
                for (yref, col, _h), v in self.ticks.items()]
        return out


class _Fig:
    """What the parts of ``waterfall_figure`` share: the figure being built, the rows drawn
    (``rows = all_rows[lo:hi]``), the time origin and the shapes and annotations gathered
    for the layout (set once at the end: add_shape copies every shape added before)."""

    def __init__(self, go, wf: Waterfall, rows: list, lo: int, hi: int, use_big: bool, hover: bool, min_w: float,
                 url_chars: int = L.LABEL_CHARS, fig=None, t0: float | None = None, y_of: dict[int, float] | None = None,
                 axes: tuple[str, str] = ("x", "y"), unfiltered: Waterfall | None = None) -> None:
        self.go, self.wf, self.rows, self.lo, self.hi = go, wf, rows, lo, hi
        self.all_rows = wf.rows
        self.n = len(rows)
        self.use_big, self.hover, self.min_w = use_big, hover, min_w
        self.t0 = wf.t0 if t0 is None else t0
        self.fig = go.Figure() if fig is None else fig
        # where the request bars go: each row's y (default its index) on the axes ``axes`` — the
        # compare figure draws two waterfalls, matched rows on one line, into its two subplots
        self.y_of = y_of if y_of is not None else {r.index: r.index for r in rows}
        self.axes = axes
        self.paths = _Paths()  # (big) rectangles and ticks per colour, made into shapes at the end
        self.shapes: list[dict] = []
        self.notes: list[dict] = []  # annotations, likewise
        self.colors_of = {r.index: _row_colors(r) for r in rows}
        # a filtered figure (``unfiltered``: the waterfall before the filter) numbers its rows and its
        # connections as the unfiltered one does (the web app's 3, 4, 6, 7, 12, 13, not 1-6)
        self.unfiltered = unfiltered if unfiltered is not None and unfiltered is not wf else None
        self.numbers: dict[int, int] | None = ({r.exchange: r.index + 1 for r in self.unfiltered.rows}
                                               if self.unfiltered is not None else None)
        # connections by the model's id (the connection view's #17, as the request detail and the JSON name them)
        self.conn_no = {cr.connection: cr.connection for cr in (self.unfiltered or wf).connection_rows}  # (the model's id)
        self.hover_of = {r.index: "<br>".join(html_text(h) for h in r.hover)
                         + (f"<br>connection #{self.conn_no[r.connection]}" if r.connection in self.conn_no else "")
                         + (f"<br>{START_UNKNOWN_HOVER} {L.row_duration_text(r)}" if L.start_unknown(r) else "")
                         for r in rows} if hover else {}
        self.url_chars = url_chars  # host…path characters of a row label (waterfall_figure's url_chars)
        self.view = (0.0, 1.0)  # the time range (ms) the figure shows: set by waterfall_figure
        self.plot_w = 900.0  # the plot's width (px) it is laid out for: set by waterfall_figure
        self.mark_w = 0  # the label column's marks' width (figures_marks.mark)
        self.badge_w = L.BADGE_CHARS  # the label column's badge width (waterfall_layout.badge_width)
        self.page_view: tuple[float, float] | None = None  # the page's span, when the figure shows only it
        self.t_end_ms = _ms(wf.t_end, self.t0)
        self.filter_note = ""  # "6 of 15 requests shown — filter: …" (figures_marks.filter_note)

    def number(self, r) -> int:
        """The row's number in its label: its own (the unfiltered view's) in a filtered figure."""
        return self.numbers.get(r.exchange, r.index + 1) if self.numbers else r.index + 1

    def add(self, trace) -> None:
        """A trace of the request rows, on this drawing's axes."""
        if self.axes != ("x", "y"):
            trace.update(xaxis=self.axes[0], yaxis=self.axes[1])
        self.fig.add_trace(trace)


def _row_colors(r) -> dict[str, str]:
    """``waterfall_layout.phase_colors``, with the part of a download where no byte arrived
    (drawn under the dark bursts of its packets) paled towards white: the class's light colour
    itself was the waiting green's lightness (css: #b2ea94 beside #7fe07f, TTFB unreadable)."""
    col = L.phase_colors(r)
    if r.chunks and "light" in col:
        col["receive"] = M.pale(col["light"])
    return col


def waterfall_figure(wf: Waterfall, title: str | None = None, markers: bool = True, big: bool | None = None,
                     width: int = 1400, max_labels: int = 300, narrowest: int | None = None, hover: bool = True,
                     window: tuple[int, int] | None = None, x_view: tuple[float, float] | None = None,
                     url_chars: int | None = None, time_span: str = "page", responsive: bool | None = None,
                     unfiltered: Waterfall | None = None, filter_text: str | None = None, headline: bool = True,
                     label_room: int | None = None):
    """The waterfall as a ``plotly.graph_objects.Figure``: x = milliseconds from the first
    packet; the request rows (top to bottom in ``wf.rows`` order) with their durations, the
    connection view and the throughput track under it on the same time axis, the milestone
    labels staggered above so that none overlaps another (at ``narrowest`` px wide and
    wider), the legend under everything.  ``hover=False`` (static images) leaves out the
    hover texts, most of a big figure's bytes.  ``big`` (default: more than ``BIG_THRESHOLD``
    rows) draws the bars as path shapes.  ``window`` (first, end): only the request rows
    ``wf.rows[first:end]`` are drawn (the web app's view of a big capture: a window of rows
    at a time), each exactly as in the figure of all rows (its number, label, duration,
    markers, zebra shading; y = its row), with the time axis, milestones and throughput
    track of the whole capture and the connection view of the connections of those rows.
    ``time_span``: ``"page"`` (default) shows the page's span when background traffic reaches
    beyond it (``figures_marks.page_span``; the rows it clips end in an arrow and the subtitle
    says so), ``"capture"`` the whole capture.  ``responsive`` (default: ``hover``, the HTML
    export and the web page) leaves the width to the page (the layout is still made for
    ``narrowest``); images keep ``width``.
    A filtered view: ``wf`` holds the rows shown (re-indexed from 0), ``unfiltered`` the
    waterfall they were taken from (the same order) and ``filter_text`` the filter as the user
    wrote it; the rows and connections keep their unfiltered numbers, the title says "6 of 15
    requests shown — filter: …", and a milestone of a request not shown is left out (the HTML's
    first byte) or says so (the page's last byte: ``figures_marks.shown_milestones``).
    ``url_chars``: a row label's host…path characters; by default what the room allows
    (``url_chars_for``: ``LABEL_SHARE`` of ``label_room`` px — the page's graph as wide as the
    web page says —, else of the figure's width: an image's ``width``, a page's ``narrowest``).
    ``headline=False``: the subtitle leaves out the completeness headline (``wf.completeness``)
    — the web page says it once, in its box over the figure with the reasons (ui.web.views.box_headline);
    an image keeps it, the only place it has.
    Layout decisions: ui/waterfall_layout.py and ui/figures_marks.py."""
    import plotly.graph_objects as go

    all_rows = wf.rows
    lo, hi = (0, len(all_rows)) if window is None else (max(min(window[0], len(all_rows)), 0), max(min(window[1], len(all_rows)), 0))
    lo = min(lo, hi)
    rows = all_rows[lo:hi] if window is not None else all_rows
    n = len(rows)
    use_big = n > BIG_THRESHOLD if big is None else big
    show_labels = n <= max_labels
    t0 = wf.t0
    end_ms = max((_ms(r.end, t0) for r in all_rows), default=0.0)  # (a window has the time axis of all rows)
    end_ms = max([end_ms] + [_ms(r.browser_phases[-1][2], t0) for r in all_rows if r.browser_phases])  # (a browser bar may end later)
    if not all_rows:  # no request (nothing decrypted, say): the capture's time, so the throughput track shows its traffic
        end_ms = max(end_ms, _ms(wf.t_end, t0))
    end_ms = max([end_ms] + [_ms(m.time, t0) for m in wf.milestones])  # (a browser's load event may come after the last byte)
    if any(M.no_response(r) for r in all_rows):  # (a request with no response is open to the capture's end)
        end_ms = max(end_ms, _ms(wf.t_end, t0))
    span = max(end_ms, 1.0)
    # --- horizontal layout (pixels): the label column, the plot, room right of the last bar for its duration
    # ``url_chars``: the host…path's characters in the label column (a narrow graph, beside the
    # web page's detail panel, gives fewer to the labels and more to the time axis)
    mw = mark_width(all_rows) if show_labels else 0  # (of all rows: a window's labels are the whole figure's)
    narrow = min(width, narrowest or NARROWEST)
    page = bool(hover if responsive is None else responsive)  # (the HTML page and the web app: the page's width)
    # (the label column's share of the room: more of each file name on a wider figure)
    n_url, bw = label_columns(all_rows, label_room or (narrow if page else width), mw)
    url_chars = n_url if url_chars is None else url_chars
    label_chars = max((len(L.row_label(r, url_chars, badge_chars=bw)) for r in rows[:max_labels]), default=20) \
        + (mw + 2 if mw else 0) if show_labels else 8
    ml, mr = int(label_chars * CHAR_PX + 16), 24
    plot_w_narrow = max(narrow - ml - mr, 200)
    x_lo, x_hi = 0.0, span
    if time_span not in ("page", "capture"):
        raise ValueError(f"unknown time span {time_span!r} (choose from page, capture)")
    page_view = _page_view(wf, span) if time_span == "page" else None
    if page_view is not None:
        x_lo, x_hi = page_view
    xmax = x_lo + (x_hi - x_lo) / max(1.0 - 64.0 / plot_w_narrow, 0.5)  # (room right of the last bar for its duration)
    # ``x_view`` (ms): the time range the figure is shown at (the web page's zoom): bars' least
    # width and the milestone labels' anchors are reckoned in it, not in the whole capture's
    view = (float(x_view[0]), float(x_view[1])) if x_view and x_view[1] > x_view[0] else (x_lo, xmax)
    min_w = (view[1] - view[0]) / 900.0  # bars shorter than this are widened to stay visible (hover shows the real time)
    c = _Fig(go, wf, rows, lo, hi, use_big, hover, min_w, url_chars, unfiltered=unfiltered)
    c.view, c.mark_w, c.badge_w, c.page_view = view, mw, bw, page_view
    c.plot_w = float(plot_w_narrow)  # (the row texts: what fits right of a bar)
    c.filter_note = M.filter_note(len(all_rows), len(c.unfiltered.rows) if c.unfiltered is not None else None, filter_text)

    _request_bars(c)
    _no_response_bars(c)
    _browser_bars(c)
    add_swatches(go, c.fig, content_swatches(rows, wf.color_by))  # content-class legend entries (the download colours)
    _row_texts(c, show_labels)
    if markers:
        _markers(c)
    crow = _connection_view(c, window)
    _throughput_track(c)
    _legend_marks(c, show_labels)
    _layout(c, title, window, crow, show_labels, label_chars, width, ml, mr, plot_w_narrow, xmax, view,
            narrowest is None and not page, page, headline)
    if page:
        c.fig.update_layout(width=None, autosize=True)
    return c.fig


def _page_view(wf: Waterfall, span: float) -> tuple[float, float] | None:
    """``figures_marks.page_view`` in ms from the first packet (``span``: the axis' length)."""
    v = M.page_view(wf, wf.t0, wf.t0 + span / 1000.0)
    return (_ms(v[0], wf.t0), _ms(v[1], wf.t0)) if v else None


def _request_bars(c: _Fig, legend: bool = True) -> list[tuple[str, str | None, str]]:
    """The request rows: one trace per phase (bars; above BIG_THRESHOLD rows, rectangles of
    path shapes), the download chunks over them, and their legend swatches (added to the
    figure with ``legend``; returned either way: the compare figure merges its two sides')."""
    go, rows, t0, min_w, hover, hover_of, colors_of, y_of = c.go, c.rows, c.t0, c.min_w, c.hover, c.hover_of, c.colors_of, c.y_of
    swatch: list[tuple[str, str | None, str]] = []  # legend entries in fixed colours (a bar trace's own would show its first row's)
    for ph in PHASES:
        sel = [(r, a, b) for r in rows for (n_, a, b) in r.phases if n_ == ph]
        if not sel:
            continue
        half = IDLE_HALF if ph == "idle" else BAR_HALF
        if c.use_big:
            for r, a, b in sel:
                x0 = _ms(a, t0)
                c.paths.rect("y", colors_of[r.index][ph], r.background, x0, x0 + max((b - a) * 1000.0, min_w), y_of[r.index], half)
        else:
            base = [_ms(a, t0) for _, a, _b in sel]
            dur = [max((b - a) * 1000.0, min_w) for _, a, b in sel]
            tips = [PHASE_LABELS[ph] + f": {(b - a) * 1000:.1f} ms<br>" + hover_of[r.index] for r, a, b in sel] if hover else None
            c.add(_bars(go, base, dur, [y_of[r.index] for r, _, _ in sel], [colors_of[r.index][ph] for r, _, _ in sel], tips,
                        PHASE_LABELS[ph], ph, [r.background for r, _, _ in sel], [r.exchange for r, _, _ in sel], half))
        if ph == "receive":
            rs = _receive_swatch(c)
            if rs is not None:
                swatch.append(rs)
        else:
            swatch.append((LEGEND_LABELS.get(ph, PHASE_LABELS[ph]), _legend_color(ph), ph))
    # download chunks: the bursts of packets that carried each response (dark on the light download)
    csel = [(r, a, b, k) for r in rows for (a, b, k) in r.chunks]
    if csel and c.use_big:
        for r, a, b, _k in csel:
            x0 = _ms(a, t0)
            c.paths.rect("y", colors_of[r.index]["chunk"], r.background, x0, x0 + max((b - a) * 1000.0, min_w), y_of[r.index], BAR_HALF)
    elif csel:
        base = [_ms(a, t0) for _, a, _b, _k in csel]
        dur = [max((b - a) * 1000.0, min_w) for _, a, b, _k in csel]
        tips = [f"{k} packet{'s' * (k != 1)} of the response at {_ms(a, t0):.1f}–{_ms(b, t0):.1f} ms<br>" + hover_of[r.index]
                for r, a, b, k in csel] if hover else None
        c.add(_bars(go, base, dur, [y_of[r.index] for r, *_ in csel], [colors_of[r.index]["chunk"] for r, *_ in csel],
                    tips, "Download chunk", "chunk", [r.background for r, *_ in csel], [r.exchange for r, *_ in csel]))
    if csel and c.wf.color_by != "content":  # (by content, the class entries are the bursts' colours)
        swatch.append(("Download: packet burst (dark)", "#555555", "chunk"))
    if legend:
        add_swatches(go, c.fig, swatch)
    return swatch


def content_swatches(rows, color_by: str) -> list[tuple[str, str | None, str]]:
    """The content classes' legend entries (coloured by content: the download's dark colour,
    its packets' bursts), of the classes ``rows`` have."""
    if color_by != "content":
        return []
    present = {r.content_class for r in rows}
    return [(f"{cls} download", CONTENT_COLORS[cls][1], "class") for cls in CONTENT_CLASSES if cls in present]


def add_swatches(go, fig, swatch: list[tuple[str, str | None, str]]) -> None:
    """Legend entries (name, colour, legend group) as traces of no point: the idle phase's a
    line (it is drawn as one), the others a square."""
    for name, col, group in swatch:
        mk = dict(symbol="line-ew", size=12, color=col, line=dict(width=2, color=col)) if group == "idle" else \
            dict(symbol="square", size=11, color=col, line=dict(width=1, color=PALE_SWATCH_EDGE)) if col == PALE_SWATCH else \
            dict(symbol="square", size=12, color=col)
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=name, marker=mk, legendgroup=group, showlegend=True,
                                 hoverinfo="skip"))


def request_drawing(go, fig, wf: Waterfall, rows: list, t0: float, y_of: dict[int, float], axes: tuple[str, str], min_w: float,
                    hover: bool = True) -> list[tuple[str, str | None, str]]:
    """``rows`` of ``wf`` drawn into ``fig`` as the waterfall image draws its request rows —
    the phases, the download's bursts of packets over its pale part, the retransmission and gap
    ticks — at ``y_of[row.index]`` on ``axes``, times in ms from ``t0``: the compare figure's two
    sides.  Returns the legend swatches (name, colour, group) of what it drew, not added: with
    ``content_swatches`` they name every colour of the bars."""
    c = _Fig(go, wf, rows, 0, len(rows), False, hover, min_w, fig=fig, t0=t0, y_of=y_of, axes=axes)
    swatch = _request_bars(c, legend=False)
    tick_marks(c)
    return swatch


def _receive_swatch(c: _Fig) -> tuple[str, str, str] | None:
    """The legend entry of the download phase: the pale part where no byte arrived (rows with
    chunks), a neutral swatch (``PALE_SWATCH``: each class has its own pale); else the download
    drawn dark throughout."""
    chunked = [r for r in c.rows if r.chunks and r.phase("receive")]
    if chunked:  # (a neutral swatch: the first row's pale script orange read as a faded connect phase)
        return "Download, no byte arriving (pale)", PALE_SWATCH, "receive"
    if c.wf.color_by == "content":  # drawn dark throughout in its class's colour: the class entries name them
        return None  # (a "Content download" swatch in the first row's html blue beside "html download": one blue named twice)
    r0 = next((r for r in c.rows if r.phase("receive")), None)
    return PHASE_LABELS["receive"], c.colors_of[r0.index]["receive"] if r0 is not None else _legend_color("receive") or "#8c8c8c", "receive"


def _no_response_bars(c: _Fig) -> None:
    """A request the capture holds no response to: open from its last byte to the capture's
    end, a dotted red line (its few microseconds of sending alone read as a finished request)."""
    go, t0 = c.go, c.t0
    open_rows = [r for r in c.rows if M.no_response(r)]
    if not open_rows:
        return
    if c.use_big:
        for r in open_rows:
            c.paths.rect("y", M.NO_RESPONSE_COLOR, r.background, _ms(r.end, t0), max(c.t_end_ms, _ms(r.end, t0)), r.index, 0.06)
    else:
        xs: list[float | None] = []
        ys: list[float | None] = []
        for r in open_rows:
            xs += [_ms(r.end, t0), max(c.t_end_ms, _ms(r.end, t0)), None]
            ys += [r.index, r.index, None]
        c.fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=M.NO_RESPONSE_COLOR, width=2, dash="dot"),
                                   hoverinfo="skip", showlegend=False, name="no response"))
    c.fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", line=dict(color=M.NO_RESPONSE_COLOR, width=2, dash="dot"),
                               name="No response (open to the capture's end)", hoverinfo="skip", legendgroup="noresp"))


def _legend_marks(c: _Fig, show_labels: bool) -> None:
    """The label column's marks and the rows' tints, in the legend (when some row has them)."""
    go, rows = c.go, c.rows
    if not show_labels:
        return
    entries: list[tuple[str, str | None]] = []
    if any(r.background for r in rows):
        entries.append(("bg: background, not the page's (faded)", None))
    own = [M.mark(r).removeprefix("bg").strip() for r in rows]  # (each row's mark, its "bg" apart)
    marks = list(dict.fromkeys(m for m in (x.removeprefix(M.UNKNOWN_METHOD).strip() for x in own) if m))
    if marks:
        entries.append((html_text(f"{', '.join(marks[:2])}") + ": method ≠ GET, status ≠ 200", None))  # (a HAR's method is captured text)
    if any(x.startswith(M.UNKNOWN_METHOD) for x in own):
        entries.append((f"{M.UNKNOWN_METHOD}: method unknown (its request is not in the capture)", None))
    if any(L.start_unknown(r) for r in rows):
        entries.append((START_UNKNOWN_LEGEND, None))
    if any(M.tint(r) == M.ERROR_TINT for r in rows):
        what = "status 4xx/5xx" if any(isinstance(r.status, int) and r.status >= 400 for r in rows) else ""
        what += (" or " if what else "") + "failed before the network" if any(M.failed(r) for r in rows) else ""
        entries.append((f"error: {what} (row red)", M.ERROR_TINT))
    if any(M.tint(r) == M.REDIRECT_TINT for r in rows):
        entries.append(("redirect: status 3xx (row yellow)", M.REDIRECT_TINT))
    for name, col in entries:
        mk = dict(symbol="square", size=12, color=col) if col else dict(size=1, color="rgba(0,0,0,0)")
        go_ = go.Scatter(x=[None], y=[None], mode="markers", name=name, marker=mk, legendgroup="marks", hoverinfo="skip")
        c.fig.add_trace(go_)


def _browser_bars(c: _Fig) -> None:
    """The browser's view (a browser log laid over the capture): a thin bar under the row, in the phase colours.
    Not under a row with no packet in the capture (a browser log opened alone, a request only the log has):
    its bar is the log's already — WebPageTest's HAR drew every request twice, the thin copy with the
    TLS time grey, and the legend spoke of a capture there was not."""
    go, fig, t0, min_w, hover, hover_of, colors_of = c.go, c.fig, c.t0, c.min_w, c.hover, c.hover_of, c.colors_of
    bsel = [(r, ph, a, b) for r in c.rows if any(v is not None for v in (r.packets or {}).values())
            for (ph, a, b) in r.browser_phases]
    if not bsel:
        return
    bcol = lambda r, ph: L.BLOCKED_COLOR if ph == "blocked" else colors_of[r.index].get("chunk" if ph == "receive" else ph, "#999999")
    if c.use_big:
        for r, ph, a, b in bsel:
            x0 = _ms(a, t0)
            c.paths.rect("y", bcol(r, ph), r.background, x0, x0 + max((b - a) * 1000.0, min_w), r.index + BROWSER_Y, BROWSER_HALF)
    else:
        tips = [html_text(f"browser ({(r.browser or {}).get('source') or 'log'}): {PHASE_LABELS[ph]} {(b - a) * 1000:.1f} ms, "
                          f"{_ms(a, t0):.1f}–{_ms(b, t0):.1f} ms" + (" on the capture's clock" if r.browser_clock_offset else ""))
                + "<br>" + _browser_offsets(r) + hover_of[r.index]
                for r, ph, a, b in bsel] if hover else None
        fig.add_trace(go.Bar(orientation="h", base=[_ms(a, t0) for _r, _p, a, _b in bsel],
                             x=[max((b - a) * 1000.0, min_w) for _r, _p, a, b in bsel], y=[r.index for r, *_ in bsel],
                             width=BROWSER_HALF * 2, offset=BROWSER_Y - BROWSER_HALF, name="browser",
                             marker=dict(color=[bcol(r, ph) for r, ph, _a, _b in bsel], line=dict(width=0),
                                         opacity=[0.35 if r.background else 1.0 for r, *_ in bsel]),
                             hovertext=tips, hoverinfo="text" if hover else "skip", customdata=[r.exchange for r, *_ in bsel],
                             legendgroup="browser", showlegend=False))
    sources = sorted({str((r.browser or {}).get("source") or "log") for r, *_ in bsel})
    # a log whose clock is set apart from the capture's (a HAR: its page events are milestones
    # on the capture's clock) has its bars moved by the same offset: the legend says by how much
    # (as short as the entry it replaces: the legend's columns are its longest entry wide)
    moved = sorted({-r.browser_clock_offset for r, *_ in bsel if r.browser_clock_offset})
    name = (f"Browser's view ({', '.join(sources)}, moved {' / '.join(f'{o * 1000:+.0f}' for o in moved)} ms to the capture's clock)"
            if moved else f"Browser's view ({', '.join(sources)}): thin bar under each row, same colours")
    fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", legendgroup="browser", hoverinfo="skip", name=name,
                             marker=dict(symbol="line-ew", size=14, color="#555555", line=dict(width=3, color="#555555"))))


def _row_texts(c: _Fig, show_labels: bool) -> None:
    """(big) the hover points of the rows; the duration label right of each bar."""
    go, rows, t0, n = c.go, c.rows, c.t0, c.n
    # many rows: the hover texts on one invisible point per row (hovermode "y": anywhere on the row)
    if c.use_big and c.hover and n:
        c.fig.add_trace(go.Scatter(x=[(_ms(r.start, t0) + _ms(r.end, t0)) / 2 for r in rows], y=[r.index for r in rows], mode="none",
                                   hovertext=[c.hover_of[r.index] for r in rows], hoverinfo="text", customdata=[r.exchange for r in rows],
                                   name="request", showlegend=False, _validate=False))
    # duration label right of each bar; a row the view cuts has it at the view's edge, with an arrow
    if show_labels and n:
        xs, texts, where = [], [], []
        a, b = c.view
        for r in rows:
            x, txt, pos = _row_text(c, r)
            xs.append(x)
            texts.append(txt)
            where.append(pos)
        c.fig.add_trace(go.Scatter(x=xs, y=[r.index for r in rows],
                                   mode="text", text=texts, textposition=where,
                                   textfont=dict(size=10, color="#333333", family=LABEL_FONT["family"]), showlegend=False,
                                   hoverinfo="skip", name="duration", cliponaxis=False))
        # a row that began before the view, or whose start is not in the capture (its request came
        # before it: ``waterfall_layout.start_unknown``, its duration "≥…"): an arrow at its left edge
        seen = [r for r in rows if max(_ms(r.end, t0), _row_open_end(c, r)) >= a and _ms(r.start, t0) <= b]
        unknown = [r for r in seen if L.start_unknown(r)]
        left = [r for r in seen if _ms(r.start, t0) < a and not L.start_unknown(r)]
        if left:
            c.fig.add_trace(go.Scatter(x=[a] * len(left), y=[r.index for r in left], mode="text", text=["←"] * len(left),
                                       textposition="middle right", textfont=dict(size=10, color="#333333"), showlegend=False,
                                       hoverinfo="skip", name="begins earlier", cliponaxis=False))
        if unknown:  # (on a white box at the bar's left end: on the bar's dark bursts a bare arrow could not be seen)
            c.fig.add_trace(go.Scatter(x=[max(a, _ms(r.start, t0)) for r in unknown], y=[r.index for r in unknown],
                                       mode="markers+text", text=[L.START_UNKNOWN] * len(unknown), textposition="middle center",
                                       textfont=dict(size=10, color="#000000", family=LABEL_FONT["family"]),
                                       marker=dict(symbol="square", size=11, color="#ffffff", line=dict(width=1, color="#333333")),
                                       showlegend=False, hoverinfo="skip", name=START_UNKNOWN_NAME, cliponaxis=False))


def _row_open_end(c: _Fig, r) -> float:
    """Where a row's bar ends (ms): the capture's end for a request with no response."""
    return max(c.t_end_ms, _ms(r.end, c.t0)) if M.no_response(r) else _ms(r.end, c.t0)


def _row_text(c: _Fig, r) -> tuple[float, str, str]:
    """The text right of a row's bar (its duration; "no response" and how long it was open
    for a request with none), its x and position: at the view's right edge with ``→`` when
    the bar goes on past it, at its left edge with ``←`` when the bar ended before it."""
    a, b = c.view
    t0 = c.t0
    txt = L.row_duration_text(r)
    if M.no_response(r):
        txt = f"no response (open ≥ {L.duration_text(max(c.t_end_ms - _ms(r.start, t0), 0.0) / 1000.0)})"
    elif M.failed(r):  # (its bar is an instant: "0.0 ms" read as a request that took no time)
        txt = M.failed(r) or txt
    end = max(_row_open_end(c, r), _ms(r.start, t0) + c.min_w)
    if end > b:  # (the text goes inside the plot, on the bar: faded background bars, mostly)
        return b, f"{txt} →", "middle left"
    if end < a:
        return a, f"← {txt} (ended {end / 1000.0:.2f} s)", "middle right"
    px = (b - a) / max(c.plot_w, 1.0)  # (ms a pixel)
    gap = LABEL_GAP_PX * px  # (WebPageTest leaves one between a bar and its text; flush, "25.3 ms" read as part of the bar)
    w = len(txt) * CHAR_PX * px + gap
    if end + w > b:  # past the view's right edge the text was cut ("no response (open" at the image's
        # edge): it ends where the row's bar begins (the row is empty there), else at the bar's end
        s0 = max(_ms(r.start, t0), a)
        return (s0 - gap, txt, "middle left") if s0 - w >= a else (end, txt, "middle left")
    return end + gap, txt, "middle right"


LABEL_GAP_PX = 4  # between a row's bar and its duration text


def _markers(c: _Fig) -> None:
    """Retransmission and gap ticks, the label column's glyphs in the legend, push arrows."""
    go, fig, rows, t0 = c.go, c.fig, c.rows, c.t0
    tick_marks(c)
    # the label column's glyphs, explained in the legend
    kinds = {m.kind for r in rows for m in r.markers}
    for kind in L.GLYPH_KINDS:
        if kind in kinds:
            fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=f"{L.GLYPHS[kind]} {L.GLYPH_MEANING[kind]}",
                                     marker=dict(size=1, color="rgba(0,0,0,0)"), legendgroup="glyphs", hoverinfo="skip"))
    # push arrows: from the pushing stream's row to the pushed row
    arrows = [(r, next((m for m in r.markers if m.kind == "push"), None)) for r in rows if r.pushed and r.push_parent_row is not None]
    arrows = [(r, m) for r, m in arrows if c.lo <= (r.push_parent_row or 0) < c.lo + c.n]  # (both ends drawn)
    for r, m in arrows[:300]:
        x = _ms(m.time if m else r.start, t0)
        c.notes.append(dict(x=x, y=r.index, ax=x, ay=r.push_parent_row, xref="x", yref="y", axref="x", ayref="y",
                            showarrow=True, arrowhead=2, arrowsize=1, arrowwidth=1.2, arrowcolor="#1f77b4", text=""))


def tick_marks(c: _Fig) -> None:
    """Retransmission, out-of-order and gap ticks: thin ticks on the rows they delayed."""
    go, rows, t0 = c.go, c.rows, c.t0
    for kind in L.TICK_KINDS:
        ticks = [(r, m) for r in rows for m in r.markers if m.kind == kind]
        if not ticks:
            continue
        mk = dict(symbol="line-ns", size=ROW_PX * 0.8, color=L.TICK_COLORS[kind], line=dict(width=1.2, color=L.TICK_COLORS[kind]))
        if c.use_big:  # ticks in one path (their labels are in the row's hover)
            for r, tm in ticks:
                c.paths.tick("y", L.TICK_COLORS[kind], _ms(tm.time, t0), c.y_of[r.index], 0.45)
            c.add(go.Scatter(x=[None], y=[None], mode="markers", name=L.TICK_MEANING[kind], marker=mk, hoverinfo="skip"))
            continue
        c.add(go.Scatter(x=[_ms(m.time, t0) for _, m in ticks], y=[c.y_of[r.index] for r, _ in ticks], mode="markers",
                         name=L.TICK_MEANING[kind], marker=mk,
                         hovertext=[html_text(m.label) + (f" (packet {m.packet})" if m.packet else "") for _, m in ticks],
                         hoverinfo="text"))


def _connection_view(c: _Fig, window: tuple[int, int] | None) -> list:
    """The connection view: handshake phases, then each request as a segment; returns the connection rows drawn."""
    go, t0, min_w, use_big = c.go, c.t0, c.min_w, c.use_big
    crow = c.wf.connection_rows
    # not the connection a browser log gives its requests that never reached the network (served
    # from the disk cache, failed at once): they had none — it was drawn as "#10 android.clients.google.com"
    # with a cache hit of www.amazon.com on it
    unsent = {r.index for r in c.all_rows if not_sent_of(getattr(r, "browser", None)) is not None}
    if unsent:
        crow = [cr for cr in crow if not cr.requests or any(ri not in unsent for ri, _a, _b in cr.requests)]
    if window is not None:  # the connections of the rows drawn (their other requests' segments are not)
        crow = [cr for cr in crow if any(c.lo <= ri < c.hi for ri, _a, _b in cr.requests)]
    nc = len(crow)
    seg_w = max(2, int(CONN_ROW_PX * 0.6))
    items: list[tuple[float, float, int, str, str]] = []
    by_row = {r.index: r for r in c.rows}
    for k, cn in enumerate(crow):
        for name, a, b in cn.phases:
            items.append((_ms(a, t0), max(_ms(b, t0), _ms(a, t0) + min_w), k, L.PHASE_COLORS.get(name, "#999999"),
                          html_text(f"connection {cn.connection} ({cn.label}): {PHASE_LABELS[name]} {(b - a) * 1000:.1f} ms")))
        for ri, a, b in cn.requests:
            cr = by_row.get(ri)
            if cr is None:
                continue
            items.append((_ms(a, t0), max(_ms(b, t0), _ms(a, t0) + min_w), k, cr.colors.get("receive", "#8c8c8c"),
                          "" if use_big else html_text(f"#{c.number(cr)} {L.short_url(cr.url, 60)} {L.duration_text(cr.duration)}")))
    if use_big:
        for x0, x1, k, col, _h in items:
            c.paths.rect("y2", col, False, x0, x1, k, CONN_HALF)
        if c.hover and crow:  # one hover point per connection row
            c.fig.add_trace(go.Scatter(x=[(_ms(cn.start, t0) + _ms(cn.end, t0)) / 2 for cn in crow], y=list(range(nc)), mode="none",
                                       hovertext=[html_text(f"connection {cn.connection} ({cn.label}) {cn.protocol}: {len(cn.requests)} "
                                                            f"request{'s' * (len(cn.requests) != 1)}, {(cn.end - cn.start) * 1000:.1f} ms")
                                                  for cn in crow],
                                       hoverinfo="text", xaxis="x", yaxis="y2", name="connection", showlegend=False, _validate=False))
    else:
        for t in _segments(items, go, "connection", seg_w, "conn", False, hover=None if c.hover else False):
            c.fig.add_trace(t)
    return crow


def _throughput_track(c: _Fig) -> None:
    """The throughput track: bytes per bin down and up."""
    tp, go = c.wf.throughput, c.go
    if tp is None or not tp.down:
        return
    # bin k holds the bytes of [k·bin, (k+1)·bin): a step from its start ("hv"), and the last
    # bin closed at its end (x was the bin's middle: every step drawn half a bin late)
    nb = len(tp.down)
    xs = [_ms(tp.t0, c.t0) + k * tp.bin * 1000.0 for k in range(nb + 1)]
    c.fig.add_trace(go.Scatter(x=xs, y=[v / 1000.0 for v in tp.down] + [0.0], mode="lines", line=dict(color="#2d6fd1", width=1, shape="hv"),
                               fill="tozeroy", fillcolor="rgba(45,111,209,0.35)", name="▼ server→client",
                               xaxis="x", yaxis="y3", hovertemplate="%{y:.1f} kB from %{x:.0f} ms<extra>down</extra>",
                               hoverinfo="skip" if c.use_big else None))  # (big: hovermode "y" would pick bins by kB)
    c.fig.add_trace(go.Scatter(x=xs, y=[v / 1000.0 for v in tp.up] + [0.0], mode="lines", line=dict(color="#e58226", width=1, shape="hv"),
                               name="▲ client→server", xaxis="x", yaxis="y3",
                               hovertemplate="%{y:.1f} kB from %{x:.0f} ms<extra>up</extra>", hoverinfo="skip" if c.use_big else None))


def _zebra(c: _Fig, show_labels: bool) -> list[tuple[int, int]]:
    """The (first, last) rows shaded: zebra rows, or bands per group when grouped."""
    wf, all_rows, lo, n = c.wf, c.all_rows, c.lo, c.n
    bands_shaded: list[tuple[int, int]] = []
    if wf.group_by in ("connection", "host") and n:  # (the bands of all rows, then those a window shows)
        key = (lambda r: r.connection) if wf.group_by == "connection" else (lambda r: r.host)
        bands, start, na = [], 0, len(all_rows)
        for i in range(1, na + 1):
            if i == na or key(all_rows[i]) != key(all_rows[start]):
                bands.append((start, i - 1))
                start = i
        if len(bands) <= 300:
            bands_shaded = [(max(a, lo), min(b, lo + n - 1)) for k, (a, b) in enumerate(bands) if k % 2 and b >= lo and a < lo + n]
    elif show_labels:
        bands_shaded = [(i, i) for i in range(lo, lo + n) if i % 2]
    return bands_shaded


def _layout(c: _Fig, title: str | None, window: tuple[int, int] | None, crow: list, show_labels: bool, label_chars: int,
            width: int, ml: int, mr: int, plot_w_narrow: int, xmax: float, view: tuple[float, float], fit_width: bool = False,
            responsive: bool = False, headline: bool = True) -> None:
    """The vertical layout (pixels, top to bottom), the milestones, section headings, zebra
    shading, title and axes."""
    wf, fig, rows, all_rows, lo, n, t0, tp = c.wf, c.fig, c.rows, c.all_rows, c.lo, c.n, c.t0, c.wf.throughput
    shapes, notes = c.shapes, c.notes
    nc = len(crow)
    ms_items = []
    for ms, label in M.shown_milestones(wf, c.numbers, c.unfiltered):  # (a filtered figure: not a hidden request's)
        x = _ms(ms.time, t0)
        if not view[0] - 1e-9 <= x <= view[1] + 1e-9:  # (the page's view leaves the first packet out, say)
            continue
        text = f"{label} {x:.0f} ms"
        ms_items.append((ms, x, text))
    v0, span = view[0], (view[1] - view[0]) or 1.0
    # (a label may reach left over the label column: it is drawn above the axis, where that column is empty)
    place = L.stagger([((x - v0) / span * plot_w_narrow, len(t) * CHAR_PX + 6) for _, x, t in ms_items], -(ml - 8.0),
                      float(plot_w_narrow))
    ms_rows = max((rw for rw, _ in place), default=-1) + 1
    x_lo = c.page_view[0] if c.page_view else 0.0
    n_bg = sum(1 for r in all_rows if r.background)
    view_note = ""
    if c.page_view:  # what the page's view leaves out, said under the title
        a, b = x_lo, xmax
        beyond = sum(1 for r in all_rows if r.background and (_ms(r.start, t0) < a or _row_open_end(c, r) > b))
        view_note = (f"Time axis: the page's span ({a / 1000:.2f}–{b / 1000:.2f} s of {c.t_end_ms / 1000:.2f} s captured); "
                     f"{beyond} background row{'s' * (beyond != 1)} reach{'es' * (beyond == 1)} beyond it (← →; "
                     "the whole capture: zoom out, or export --time-span capture)")
    # the headline and the view's note wrapped to the narrowest figure's width (a line past it was
    # cut at the image's edge: the amazon load cut at packet 512, "…joined mid-way (began before the captu")
    # — a page (the HTML export, the web app) as narrow as ``PAGE_TEXT_PX``: the layout is made for 1200 px,
    # the window may be narrower (at 1024 px the HTML cut "…joined mid-way (be")
    sub_px = plot_w_narrow + ml + mr
    sub_chars = max(int(((min(sub_px, PAGE_TEXT_PX) if responsive else sub_px) - 24) / SUBTITLE_CHAR_PX), 40)
    extra = f" · {n_bg} background request{'s' * (n_bg != 1)} (faded, marked bg) not in the page load" if n_bg else ""
    said = (wf.completeness or "") if headline else ""  # (headline=False: the web page's box says it, not the figure too)
    head_lines = textwrap.wrap(said + extra if said else extra.removeprefix(" · "), sub_chars) if said or extra else []
    note_lines = textwrap.wrap(view_note, sub_chars) if view_note else []
    head_px = 34 + (20 + SUBTITLE_LINE_PX * (len(head_lines) - 1) if head_lines else 0) + 18 * len(note_lines)
    axis_top_px = 24
    mt = head_px + ms_rows * MILESTONE_ROW_PX + axis_top_px + 4
    wf_px = min(max(ROW_PX * max(n, 1), 60), MAX_ROWS_PX)  # (past it, thinner rows)
    gap_px = 30
    # section headings in the gaps, in the label column (wrapped to it: over the plot, the milestones'
    # lines crossed "… (not drawn; 1 not decrypted: …)"), the gap above each as tall as its lines
    conn_head = (f"Connections ({nc})" if window is None else
                 f"Connections of requests {lo + 1}–{lo + n} ({nc} of {len(wf.connection_rows)})")
    conn_head += ": handshake, then each request"
    if wf.unused_connections:  # (the headline counts them: say where they went)
        k = wf.unused_connections
        u = wf.unused_undecrypted  # (not decrypted: whether they carried a request is not known)
        conn_head += (f" · {k} more carried no request (not drawn)" if not u else
                      f" · {k} more with no request seen (not drawn; {u} not decrypted: what {'it' if u == 1 else 'they'} carried is unknown)")
    tp_head = f"Throughput, whole capture (wire bytes per {tp.bin * 1000:g} ms; no filter applies to it)" if tp is not None else ""
    head_w = max(int((ml - 12) / HEADING_CHAR_PX), 40)  # (a figure without labels has a narrow column: the heading runs on)
    conn_head_lines = textwrap.wrap(conn_head, head_w)
    tp_head_lines = textwrap.wrap(tp_head, head_w)
    conn_gap_px = max(gap_px, HEADING_LINE_PX * len(conn_head_lines) + 8)
    tp_gap_px = max(gap_px, HEADING_LINE_PX * len(tp_head_lines) + 8)
    conn_px = max(CONN_ROW_PX * max(nc, 1), 30) if nc * CONN_ROW_PX <= 4000 else 4000
    track_px = TRACK_PX if tp is not None else 0
    if not all_rows:  # room for the note saying why no row shows (centred on the plot area: in the request panel)
        wf_px = max(wf_px, conn_gap_px + conn_px + (tp_gap_px + track_px if track_px else 0) + 160)
    legend_names = [t.name or "" for t in fig.data if t.showlegend is not False]
    n_legend = len(legend_names)
    longest = max((len(t) for t in legend_names), default=10)
    # plotly lays a horizontal legend out in columns as wide as its widest entry (text and a
    # 40 px swatch), wrapped at the plot area's width though it starts at the figure's left edge;
    # images are as wide as ``width``, pages as narrow as ``narrowest``
    legend_w = (width - ml - mr) if fit_width else plot_w_narrow
    per_row = max(int(legend_w // (40 + longest * LEGEND_CHAR_PX)), 1)
    mb = 48 + LEGEND_ROW_PX * (-(-n_legend // per_row)) + 6
    plot_h = wf_px + conn_gap_px + conn_px + (tp_gap_px + track_px if track_px else 0)
    height = mt + plot_h + mb
    y_tp = (0.0, track_px / plot_h) if track_px else (0.0, 0.0)
    c_lo = (track_px + tp_gap_px) / plot_h if track_px else 0.0
    y_conn = (c_lo, c_lo + conn_px / plot_h)
    y_wf = (1.0 - wf_px / plot_h, 1.0)

    for shape in c.paths.shapes({"y": wf_px / max(n, 1), "y2": conn_px / max(nc, 1)}):  # (big) bars, chunks, connection
        # segments and ticks: a path per colour
        shapes.append(shape)
    for (ms, x, text), (rw, anchor) in zip(ms_items, place):
        col = L.MILESTONE_COLORS.get(ms.name, "#444444")
        shapes.append(dict(type="line", x0=x, x1=x, y0=0, y1=1, xref="x", yref="paper", line=dict(color=col, width=1.5, dash="dot"),
                           layer=M.MILESTONE_LAYER))
        notes.append(dict(x=x, y=1.0, xref="x", yref="paper", yanchor="bottom", xanchor=anchor, showarrow=False,
                          yshift=axis_top_px + rw * MILESTONE_ROW_PX, text=html_text(text), font=dict(LABEL_FONT, color=col),
                          borderpad=0))
    if show_labels and ms_items:  # a milestone's line never crosses a row's text: the lines under the rows' bars and
        # texts, and a text a line passes through on a box of its row's colour over the line (figures_marks.crossed_texts)
        dur = next((t for t in fig.data if t.name == "duration"), None)
        if dur is not None and dur.text:
            texts, pos = list(dur.text), list(dur.textposition)
            zebra = {i for a, b in _zebra(c, show_labels) for i in range(a, b + 1)}
            for i in M.crossed_texts(list(zip(dur.x, texts, pos)), [x for _, x, _ in ms_items],
                                     (view[1] - view[0]) / max(float(plot_w_narrow), 1.0), CHAR_PX):
                r, w = rows[i], len(texts[i]) * CHAR_PX + M.TEXT_BOX_PAD_PX
                x0, x1 = (-w, M.TEXT_BOX_PAD_PX / 2) if pos[i] == "middle left" else (-M.TEXT_BOX_PAD_PX / 2, w)
                shapes.append(dict(type="rect", xref="x", xsizemode="pixel", xanchor=dur.x[i], x0=x0, x1=x1, yref="y",
                                   ysizemode="pixel", yanchor=dur.y[i], y0=-7, y1=7, line=dict(width=0), layer=M.MILESTONE_LAYER,
                                   fillcolor=M.row_background(r.index in zebra, M.tint(r))))
    # (the headings start at the figure's left edge, in the label column: the plot area alone, narrowed
    # by the web page's detail panel, cut the connections' one short)
    notes.append(dict(x=0, y=y_conn[1], xref="paper", yref="paper", xanchor="left", yanchor="bottom", showarrow=False, align="left",
                      text="<br>".join(conn_head_lines), font=dict(size=11, color="#444444"), yshift=2, xshift=8 - ml))
    if track_px and tp is not None:
        notes.append(dict(x=0, y=y_tp[1], xref="paper", yref="paper", xanchor="left", yanchor="bottom", showarrow=False, align="left",
                          text="<br>".join(tp_head_lines), font=dict(size=11, color="#444444"), yshift=2,
                          xshift=8 - ml))

    for a, b in _zebra(c, show_labels):
        shapes.append(dict(type="rect", x0=0, x1=1, xref="paper", y0=a - 0.5, y1=b + 0.5, yref="y",
                           fillcolor="rgba(0,0,0,0.045)", line=dict(width=0), layer="below"))
    if show_labels:  # errors red, redirects yellow, label column and row (WebPageTest)
        for r in rows:
            tint = M.tint(r)
            if tint:
                shapes.append(dict(type="rect", x0=0, x1=1, xref="paper", y0=r.index - 0.5, y1=r.index + 0.5, yref="y",
                                   fillcolor=tint, line=dict(width=0), layer="below"))
                shapes.append(dict(type="rect", xref="paper", xsizemode="pixel", xanchor=0, x0=-(ml - 6), x1=0,
                                   y0=r.index - 0.5, y1=r.index + 0.5, yref="y", fillcolor=tint, line=dict(width=0), layer="below"))

    head_text = html_text(title if title is not None else (wf.title or "waterfall"))
    if c.filter_note:  # a filtered view says so, and what it shows of how many (a shared image read as the whole page)
        head_text += f' <span style="color:{M.FILTER_COLOR};font-size:14px">— {html_text(c.filter_note)}</span>'
    head = dict(text=head_text, x=0.01, y=1.0, yanchor="top", yref="container", pad=dict(t=8))
    note_html = "<br>".join(html_text(ln) for ln in note_lines)
    if head_lines:  # what the capture does not show, under the title (analyzer.completeness; head_lines its lines)
        col = M.headline_color(wf.completeness or "") if said else "#444444"
        text = "<br>".join(html_text(ln) for ln in head_lines) + (f'<br><span style="color:#444444">{note_html}</span>' if note_html else "")
        head["subtitle"] = dict(text=text, font=dict(size=12, color=col))
    elif note_html:
        head["subtitle"] = dict(text=note_html, font=dict(size=12, color="#444444"))
    ticks = M.time_ticks(view[0], view[1], float(plot_w_narrow))
    xticks = dict(tickmode="array", tickvals=ticks[0], ticktext=ticks[1], ticksuffix="") if ticks else dict(ticksuffix=" ms")
    x_title = "time from the first packet" if ticks else "ms from the first packet"
    conn_labels = [html_text(f"{L.elide(M.connection_label(cn.connection, cn, all_rows), label_chars - 9, 14)} "
                             f"{cn.protocol[:8]}") for cn in crow]
    fig.update_layout(
        title=head, shapes=shapes, annotations=notes,
        barmode="overlay", bargap=0.25, width=width, height=height, template="plotly_white",
        hovermode="y" if c.use_big and c.hover else "closest", margin=dict(l=ml, r=mr, t=mt, b=mb, autoexpand=False),
        legend=dict(orientation="h", traceorder="normal", yanchor="top", y=-44.0 / plot_h, x=0.0, xref="container", xanchor="left",
                    font=dict(size=10),
                    bgcolor="rgba(255,255,255,0)", tracegroupgap=2),
        xaxis=dict(range=[x_lo, xmax], side="top", zeroline=False, anchor="y", showline=True, linecolor="#bbbbbb", ticks="outside",
                   tickfont=dict(size=10), **xticks),
        xaxis2=dict(matches="x", anchor="y3", side="bottom", title=dict(text=x_title,
                    font=dict(size=11), standoff=4), showgrid=False, zeroline=False, tickfont=dict(size=10), **xticks),
        yaxis=dict(domain=list(y_wf), autorange=False, tickmode="array" if show_labels else "auto",
                   tickvals=[r.index for r in rows] if show_labels else None,
                   ticktext=[row_label(r, c.url_chars, c.mark_w, c.number(r), c.badge_w) for r in rows] if show_labels else None,
                   showticklabels=show_labels,
                   tickfont=LABEL_FONT, automargin=False, showgrid=False, zeroline=False, ticklabeloverflow="allow",
                   ticklabelstandoff=LABEL_STANDOFF,  # (the labels' last character touched the first packet's line)
                   range=[lo + n - 0.5, lo - 0.5] if n else [0.5, -0.5]),  # ("allow": the margin fits them; plotly's overflow check
                   # measured every label with the DOM laid out again each time: 45 % of a 10 000-row figure's drawing)
        yaxis2=dict(domain=list(y_conn), autorange=False, range=[max(nc, 1) - 0.5, -0.5], tickmode="array",
                    tickvals=list(range(nc)) if nc <= 300 else None, ticktext=conn_labels if nc <= 300 else None,
                    showticklabels=nc <= 300, tickfont=LABEL_FONT, automargin=False, showgrid=False, zeroline=False, fixedrange=True,
                    ticklabeloverflow="allow"),
        yaxis3=dict(domain=list(y_tp) if track_px else [0, 0.001], automargin=False,
                    rangemode="tozero", tickfont=dict(size=9), zeroline=True, fixedrange=True, visible=bool(track_px),
                    **_track_ticks(tp)),  # (in the label column: inside, the bars overprinted them)
    )
    # the throughput track hangs on the bottom axis (xaxis2 matches the top one)
    for tr in fig.data:
        if getattr(tr, "yaxis", None) == "y3":
            tr.xaxis = "x2"
    fig.layout.yaxis3.anchor = "x2"
    fig.layout.yaxis2.anchor = "x"


def _track_ticks(tp) -> dict:
    """The throughput track's kB ticks: its range from 0 to its highest bin, ticks at a round
    step under 85 % of it and none at 0 (the labels sit left of the track: "0 kB" met the time
    axis' "0 ms" under it, the top one the track's heading over it)."""
    top = max([0, *tp.down, *tp.up]) / 1000.0 if tp is not None else 0.0
    if top <= 0:
        return dict(nticks=4, ticksuffix=" kB")
    step = next(m * 10 ** e for e in range(-3, 12) for m in (1, 2, 5) if m * 10 ** e * 4 >= top * 0.85)
    vals = [k * step for k in range(1, 5) if k * step <= top * 0.85] or [top * 0.5]
    return dict(range=[0, top * 1.04], autorange=False, tickmode="array", tickvals=vals, ticktext=[f"{v:g} kB" for v in vals])


def _browser_offsets(r) -> str:
    """The browser-minus-wire offsets of a row's start and end, a hover line (or ""): as drawn
    — after the log's clock offset, when its bars are moved onto the capture's clock
    (``Row.browser_clock_offset``), which the line then names."""
    off = (r.browser or {}).get("offsets") or {}
    clock = r.browser_clock_offset or 0.0
    parts = [f"{k.replace('_', ' ')} {(v - clock) * 1000:+.1f} ms" for k in ("request_start", "response_end")
             if isinstance(v := off.get(k), (int, float))]
    if not parts:
        return ""
    tail = f" (after the log's clock offset {clock * 1000:+.1f} ms)" if clock else ""
    return "browser − wire: " + ", ".join(parts) + tail + "<br>"


def _legend_color(ph: str) -> str | None:
    return {"receive": "#8c8c8c", "wait": L.WAIT_COLOR, "send": L.SEND_COLOR, "blocked": L.BLOCKED_COLOR,
            "idle": L.IDLE_COLOR}.get(ph) or L.PHASE_COLORS.get(ph)


def _bars(go, base, dur, ys, colors, hover, name: str, group: str, faded, exchanges, half: float = BAR_HALF):
    """One trace of horizontal bars (SVG, exact in images; up to ``BIG_THRESHOLD`` rows)."""
    return go.Bar(orientation="h", base=base, x=dur, y=ys, name=name,
                  marker=dict(color=colors, line=dict(width=0), opacity=[0.35 if f else 1.0 for f in faded]),
                  hovertext=hover, hoverinfo="text" if hover else "skip", width=half * 2, legendgroup=group, customdata=exchanges,
                  showlegend=False)

def html_document(fig, title: str | None = None) -> bytes:
    """The figure as a self-contained offline HTML page (plotly.js inlined), titled
    ``wirefall — TITLE`` (the figure's own title when not given), as wide as the window
    (a figure made with ``responsive``: no width of its own): ``html_chunks`` joined."""
    return b"".join(html_chunks(fig, title))


_JSON_BATCH = 2048  # elements of a list per JSON encoder call (html_chunks)


def html_chunks(fig, title: str | None = None) -> Iterator[bytes]:
    """``html_document``'s page in pieces, each encoded as it is made: plotly's ``to_html``
    page, byte for byte (its own random div id aside), without the page as one text.  Plotly
    makes the figure's JSON as one str (two bytes a character once a hover text holds "—"),
    then three escaped copies of it, the script, the page and, here, the page with its title
    and its bytes: 300 MB at once over the figure's 90 MB for 63 k requests.  Here plotly
    writes the page around placeholders (``data`` and the layout's lists: the bars' path
    shapes, the annotations), and each placeholder's JSON is written in its stead, a trace, a
    shape, ``_JSON_BATCH`` list elements at a time, by plotly's own encoder
    (``to_json_plotly``: compact JSON, "<", ">", "/" escaped, the same text for a value
    wherever it stands), so that only the figure itself is held whole."""
    import html as _html
    import re
    import uuid

    import plotly.io as pio

    d = fig.to_dict() if hasattr(fig, "to_dict") else fig  # (plotly's copy: its lists, not their strings)
    layout = d.get("layout") or {}
    mark = f"wirefall-{uuid.uuid4().hex}"
    holes: dict[str, object] = {f"{mark}-data": d.get("data", [])}
    shell_layout = dict(layout)
    for k, v in layout.items():
        if isinstance(v, (list, tuple)) and v:
            holes[f"{mark}-{k}"] = v
            shell_layout[k] = f"{mark}-{k}"
    shell = {k: v for k, v in d.items() if k not in ("data", "layout")}
    shell.update(data=f"{mark}-data", layout=shell_layout)
    text = pio.to_html(shell, validate=False, full_html=True, include_plotlyjs=True, config={"displaylogo": False, "responsive": True})
    if title is None:
        t = getattr(getattr(getattr(fig, "layout", None), "title", None), "text", None)
        title = _html.unescape(re.sub(r"<[^>]*>", "", t)) if isinstance(t, str) else None  # (the filter's span: its text)
    text = _titled(text, title)
    if any(text.count(f'"{k}"') != 1 for k in holes):  # (a plotly that writes its page otherwise: its page whole, as before)
        yield _whole_page(fig, title)
        return
    at = sorted((text.index(f'"{k}"'), k) for k in holes)  # (plotly's JSON of each placeholder string, once)
    done = 0
    for i, k in at:
        yield text[done:i].encode("utf-8")
        for piece in _json_pieces(holes[k]):
            yield piece.encode("utf-8")
        done = i + len(k) + 2
    yield text[done:].encode("utf-8")


def _whole_page(fig, title: str | None) -> bytes:
    """``html_chunks``' page made whole: plotly's ``to_html`` (of a Figure), then the title."""
    import plotly.io as pio

    text = pio.to_html(fig, full_html=True, include_plotlyjs=True, config={"displaylogo": False, "responsive": True})
    return _titled(text, title).encode("utf-8")


def _titled(text: str, title: str | None) -> str:
    """The page with its ``<title>`` (``wirefall — TITLE``) and no margin."""
    import html as _html

    head = f"<title>{_html.escape('wirefall — ' + title if title else 'wirefall')}</title>"
    head += "<style>html,body{margin:0}</style>"
    return text.replace("</head>", head + "</head>", 1) if "</head>" in text else head + text


def _json_pieces(obj) -> Iterator[str]:
    """``plotly.io.json.to_json_plotly(obj)`` in pieces (their concatenation): dicts member by
    member, lists ``_JSON_BATCH`` elements per call (compact JSON: a value's text is the same
    inside its container as alone)."""
    from plotly.io.json import to_json_plotly

    if type(obj) is dict and obj and all(type(k) is str for k in obj):
        sep = "{"
        for k, v in obj.items():
            yield sep + to_json_plotly(k) + ":"
            yield from _json_pieces(v)
            sep = ","
        yield "}"
    elif type(obj) in (list, tuple) and obj:
        if len(obj) <= 64 and any(type(x) in (dict, list, tuple) for x in obj):  # (traces, shapes)
            sep = "["
            for x in obj:
                yield sep
                yield from _json_pieces(x)
                sep = ","
            yield "]"
            return
        for i in range(0, len(obj), _JSON_BATCH):
            text = to_json_plotly(obj[i : i + _JSON_BATCH])
            yield ("[" if i == 0 else ",") + text[1:-1]
        yield "]"
    else:
        yield to_json_plotly(obj)


def write_html(fig, path: str) -> None:
    """Self-contained HTML (``html_document``)."""
    _atomic_write(path, html_document(fig))


IMAGE_TIMEOUT = 60.0  # seconds for one rendering (a cold kaleido/Chromium start takes ~3 s)
IMAGE_ATTEMPTS = 2


class ImageError(RuntimeError):
    """kaleido/Chromium did not render the image (it failed, or did not finish in time)."""


def to_image(fig, fmt: str, width: int | None = None, height: int | None = None, scale: float | None = None) -> bytes:
    """PNG or SVG bytes through kaleido 1.x.  With the persistent server of ``image_server``
    the figure is rendered in this process; otherwise in a child process of its own, killed
    (with the Chromium it started) if it does not finish in ``IMAGE_TIMEOUT`` seconds, and tried
    once more after a hang or a failure: Chromium has been seen to hang on start-up and
    kaleido to fail on it, and an export must end either way."""
    if os.path.exists("/usr/bin/chromium") and not os.environ.get("BROWSER_PATH"):
        os.environ["BROWSER_PATH"] = "/usr/bin/chromium"
    if _server[0]:
        return _render(fig, fmt, width, height, scale)
    return _render_isolated(fig, fmt, width, height, scale)


def _render(fig, fmt, width, height, scale) -> bytes:
    import warnings

    import plotly.io as pio

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The kopts argument is ignored")
        return pio.to_image(fig, format=fmt, width=width, height=height, scale=scale, validate=not isinstance(fig, dict))


_CHILD = """
import json, sys
import plotly.io as pio
from wirefall.ui.figures import _render
a = json.loads(sys.argv[1])
# (the figure was made, and validated where it is small, by waterfall_figure: validating it again here took seconds)
sys.stdout.buffer.write(_render(json.loads(sys.stdin.buffer.read()), a["fmt"], a["width"], a["height"], a["scale"]))
"""


def _render_isolated(fig, fmt, width, height, scale) -> bytes:
    import json
    import signal
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    args = json.dumps({"fmt": fmt, "width": width, "height": height, "scale": scale})
    spec = fig.to_json().encode()
    why = ""
    for _ in range(IMAGE_ATTEMPTS):
        p = subprocess.Popen([sys.executable, "-c", _CHILD, args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=env, start_new_session=True)  # its own group: Chromium too
        try:
            out, err = p.communicate(spec, timeout=IMAGE_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            why = f"kaleido/Chromium did not finish within {IMAGE_TIMEOUT:.0f} s"
            continue
        if p.returncode == 0 and out:
            return out
        # a failure is tried once more too: kaleido's tab has been seen to evaluate before its
        # own script had loaded ("ReferenceError: kaleido_scopes is not defined", CI under load)
        lines = err.decode(errors="replace").strip().splitlines()
        why = lines[-1] if lines else f"exit code {p.returncode}"
    raise ImageError(f"{fmt.upper()} rendering failed: {why} ({IMAGE_ATTEMPTS} attempts)")


def write_image(fig, path: str, fmt: str | None = None, width: int | None = None, height: int | None = None, scale: float | None = None) -> None:
    fmt = fmt or os.path.splitext(path)[1].lstrip(".").lower() or "png"
    _atomic_write(path, to_image(fig, fmt, width, height, scale))


_server = [False]  # an image_server() is running in this process


@contextmanager
def image_server():
    """Keep one kaleido/Chromium running while several images are written (0.4–0.6 s
    each instead of ~4 s cold)."""
    import kaleido

    if os.path.exists("/usr/bin/chromium") and not os.environ.get("BROWSER_PATH"):
        os.environ["BROWSER_PATH"] = "/usr/bin/chromium"
    kaleido.start_sync_server(silence_warnings=True)
    _server[0] = True
    try:
        yield
    finally:
        _server[0] = False
        kaleido.stop_sync_server(silence_warnings=True)


def write_images(items: Iterable[tuple[object, str]]) -> None:
    """Write several (figure, path) pairs with one persistent kaleido server."""
    items = list(items)
    if len(items) == 1:
        write_image(*items[0])
        return
    with image_server():
        for fig, path in items:
            write_image(fig, path)


def _atomic_write(path: str, data: bytes) -> None:
    from wirefall.analyzer.export import write_atomic

    write_atomic(path, data, force=True)

