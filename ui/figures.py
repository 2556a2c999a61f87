"""Plotly figures of a ``Waterfall`` (analyzer/waterfall.py), and their export to PNG/SVG
(kaleido 1.x) and to one self-contained offline HTML file.

plotly and kaleido are imported here and only here, inside the functions, so that
commands that draw nothing never load them.

The figure has one trace per phase holding every row (not one shape per row): up to
``GL_THRESHOLD`` rows these are horizontal ``Bar`` traces (one SVG path per bar, exact in
PNG/SVG); above it they become WebGL ``Scattergl`` line segments, which draw on one canvas
(no DOM node per row) and stay fast with tens of thousands of rows in the browser.

Plotly reads HTML-like markup in every label (``<a href>``, ``<span style>``, ``<br>``,
``<b>``…): each string that comes from a capture (URLs, headers, marker labels, the file
name) goes through ``analyzer.safetext.html_text`` before it reaches a figure, so that it
shows as the characters it is and makes no element.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from collections.abc import Iterable

from wirefall.analyzer.safetext import html_text
from wirefall.analyzer.waterfall import CONTENT_CLASSES, CONTENT_COLORS, PHASE_LABELS, PHASES, Waterfall

from . import waterfall_layout as L

GL_THRESHOLD = 1500
ROW_PX = 20
CONN_ROW_PX = 16
TRACK_PX = 90  # the throughput track
CHAR_PX = 6.1  # a 10 px monospace character (DejaVu Sans Mono: 6.02 px)
LABEL_FONT = dict(size=10, family="DejaVu Sans Mono, monospace")
MILESTONE_ROW_PX = 16
MILESTONE_COLORS = {"first_packet": "#555555", "page_start": "#555555", "html_first_byte": "#2d6fd1", "page_load": "#d62728"}
LEGEND_PX = 110  # room under the bottom axis for the legend (4 rows at 1280 px)
MAX_ROWS_PX = 16000  # past 800 rows the request rows get thinner
NARROWEST = 1200  # milestone labels are staggered for this figure width: wider only spreads them


def _short(url: str, n: int = 60) -> str:
    return L.short_url(url, n)


NBSP = "\u00a0"  # SVG text collapses runs of spaces: the label column pads with no-break spaces


def row_label(r) -> str:
    """The row's label column (number, marker glyphs, badge, host…path), escaped."""
    return html_text(L.row_label(r)).replace(" ", NBSP)


def _ms(t: float, t0: float) -> float:
    return (t - t0) * 1000.0


def _segments(items, use_gl: bool, go, name: str, width_px: float, legendgroup: str, showlegend: bool, hover=None, gl_cls=None):
    """One line trace per colour of (x0, x1, y, colour, hover) segments, None-separated."""
    by_color: dict[str, list] = {}
    for it in items:
        by_color.setdefault(it[3], []).append(it)
    tr = (gl_cls or go.Scattergl) if use_gl else go.Scatter
    out = []
    for k, (col, its) in enumerate(by_color.items()):
        xs, ys, tx = [], [], []
        for x0, x1, y, _c, h in its:
            xs += [x0, x1, None]
            ys += [y, y, None]
            if hover is not False:
                tx += [h, h, None]
        out.append(tr(x=xs, y=ys, mode="lines", line=dict(color=col, width=width_px), name=name, legendgroup=legendgroup,
                      showlegend=showlegend and k == 0, hovertext=tx or None, hoverinfo="text" if hover is not False else "skip",
                      xaxis="x", yaxis="y2", _validate=not use_gl))  # (validating 10 000 rows element by element takes seconds)
    return out


def waterfall_figure(wf: Waterfall, title: str | None = None, markers: bool = True, gl: bool | None = None,
                     width: int = 1400, max_labels: int = 300, narrowest: int | None = None, hover: bool = True):
    """The waterfall as a ``plotly.graph_objects.Figure``: x = milliseconds from the first
    packet; the request rows (top to bottom in ``wf.rows`` order) with their durations, the
    connection view and the throughput track under it on the same time axis, the milestone
    labels staggered above so that none overlaps another (at ``narrowest`` px wide and
    wider), the legend under everything.  ``hover=False`` (static images) leaves out the
    hover texts, most of a big figure's bytes.  Layout decisions: ui/waterfall_layout.py."""
    import plotly.graph_objects as go

    rows = wf.rows
    n = len(rows)
    use_gl = n > GL_THRESHOLD if gl is None else gl
    # many rows: WebGL segments in the browser; in a static image one SVG path per colour
    # (headless Chromium draws WebGL in software, several times slower)
    gl_cls = go.Scattergl if hover else go.Scatter
    show_labels = n <= max_labels
    t0 = wf.t0
    end_ms = max((_ms(r.end, t0) for r in rows), default=0.0)
    tp = wf.throughput
    span = max(end_ms, 1.0)
    # --- horizontal layout (pixels): the label column, the plot, room right of the last bar for its duration
    label_chars = max((len(L.row_label(r)) for r in rows[:max_labels]), default=20) if show_labels else 8
    ml, mr = int(label_chars * CHAR_PX + 16), 24
    narrow = min(width, narrowest or NARROWEST)
    max(width - ml - mr, 200)
    plot_w_narrow = max(narrow - ml - mr, 200)
    xmax = span / max(1.0 - 64.0 / plot_w_narrow, 0.5)
    min_w = xmax / 900.0  # bars shorter than this are widened to stay visible (hover shows the real time)
    fig = go.Figure()

    # --- request rows: one trace per phase (bars, or WebGL segments above GL_THRESHOLD)
    colors_of = {r.index: L.phase_colors(r) for r in rows}
    swatch: list[tuple[str, str | None, str]] = []  # legend entries in fixed colours (a bar trace's own would show its first row's)
    hover_of = {r.index: "<br>".join(html_text(h) for h in r.hover) for r in rows} if hover else {}
    for ph in PHASES:
        sel = [(r, a, b) for r in rows for (n_, a, b) in r.phases if n_ == ph]
        if not sel:
            continue
        base = [_ms(a, t0) for _, a, _b in sel]
        dur = [max((b - a) * 1000.0, min_w) for _, a, b in sel]
        ys = [r.index for r, _, _ in sel]
        colors = [colors_of[r.index][ph] for r, _, _ in sel]
        tips = [PHASE_LABELS[ph] + f": {(b - a) * 1000:.1f} ms<br>" + hover_of[r.index] for r, a, b in sel] if hover else None
        fig.add_traces(_bars(go, use_gl, base, dur, ys, colors, tips, PHASE_LABELS[ph], ph, [r.background for r, _, _ in sel],
                             [r.exchange for r, _, _ in sel], legend_color=_legend_color(ph), gl_cls=gl_cls))
        swatch.append((PHASE_LABELS[ph] + (" (light: no byte)" if ph == "receive" else ""), _legend_color(ph), ph))
    # download chunks: the bursts of packets that carried each response (dark on the light download)
    csel = [(r, a, b, k) for r in rows for (a, b, k) in r.chunks]
    if csel:
        base = [_ms(a, t0) for _, a, _b, _k in csel]
        dur = [max((b - a) * 1000.0, min_w) for _, a, b, _k in csel]
        tips = [f"{k} packet{'s' * (k != 1)} of the response at {_ms(a, t0):.1f}–{_ms(b, t0):.1f} ms<br>" + hover_of[r.index]
                for r, a, b, k in csel] if hover else None
        fig.add_traces(_bars(go, use_gl, base, dur, [r.index for r, *_ in csel], [colors_of[r.index]["chunk"] for r, *_ in csel],
                            tips, "Download chunk", "chunk", [r.background for r, *_ in csel],
                            [r.exchange for r, *_ in csel], legend_color="#555555", gl_cls=gl_cls))
        swatch.append(("Download: packet burst", "#555555", "chunk"))
    for name, col, group in swatch:
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=name, marker=dict(symbol="square", size=12, color=col),
                                 legendgroup=group, showlegend=True, hoverinfo="skip"))

    # content-class legend entries (the download colours)
    if wf.color_by == "content":
        present = {r.content_class for r in rows}
        for cls in CONTENT_CLASSES:
            if cls in present:
                fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=f"{cls} download",
                                         marker=dict(symbol="square", size=12, color=CONTENT_COLORS[cls][1]),
                                         legendgroup="class", showlegend=True, hoverinfo="skip"))

    # duration label right of each bar
    if show_labels and n:
        tr = gl_cls if use_gl else go.Scatter
        fig.add_trace(tr(x=[max(_ms(r.end, t0), _ms(r.start, t0) + min_w) for r in rows], y=[r.index for r in rows],
                         mode="text", text=[L.duration_text(r.duration) for r in rows], textposition="middle right",
                         textfont=dict(size=10, color="#333333", family=LABEL_FONT["family"]), showlegend=False,
                         hoverinfo="skip", name="duration", cliponaxis=False))

    if markers:
        # retransmissions and gaps: thin ticks on the rows they delayed
        for kind in L.TICK_KINDS:
            ticks = [(r, m) for r in rows for m in r.markers if m.kind == kind]
            if not ticks:
                continue
            tr = gl_cls if use_gl else go.Scatter
            fig.add_trace(tr(x=[_ms(m.time, t0) for _, m in ticks], y=[r.index for r, _ in ticks], mode="markers",
                             name=f"| {L.TICK_MEANING[kind]}",
                             marker=dict(symbol="line-ns", size=ROW_PX * 0.8, color=L.TICK_COLORS[kind],
                                         line=dict(width=1.2, color=L.TICK_COLORS[kind])),
                             hovertext=[html_text(m.label) + (f" (packet {m.packet})" if m.packet else "") for _, m in ticks],
                             hoverinfo="text"))
        # the label column's glyphs, explained in the legend
        kinds = {m.kind for r in rows for m in r.markers}
        for kind in L.GLYPH_KINDS:
            if kind in kinds:
                fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=f"{L.GLYPHS[kind]} {L.GLYPH_MEANING[kind]}",
                                         marker=dict(size=1, color="rgba(0,0,0,0)"), legendgroup="glyphs", hoverinfo="skip"))
        # push arrows: from the pushing stream's row to the pushed row
        arrows = [(r, next((m for m in r.markers if m.kind == "push"), None)) for r in rows if r.pushed and r.push_parent_row is not None]
        for r, m in arrows[:300]:
            x = _ms(m.time if m else r.start, t0)
            fig.add_annotation(x=x, y=r.index, ax=x, ay=r.push_parent_row, xref="x", yref="y", axref="x", ayref="y",
                               showarrow=True, arrowhead=2, arrowsize=1, arrowwidth=1.2, arrowcolor="#1f77b4", text="")

    # --- the connection view: handshake phases, then each request as a segment
    crow = wf.connection_rows
    nc = len(crow)
    seg_w = max(2, int(CONN_ROW_PX * 0.6))
    items: list[tuple[float, float, int, str, str]] = []
    by_row = {r.index: r for r in rows}
    for k, c in enumerate(crow):
        for name, a, b in c.phases:
            items.append((_ms(a, t0), max(_ms(b, t0), _ms(a, t0) + min_w), k, L.PHASE_COLORS.get(name, "#999999"),
                          html_text(f"connection {c.connection} ({c.label}): {PHASE_LABELS[name]} {(b - a) * 1000:.1f} ms")))
        for ri, a, b in c.requests:
            cr = by_row.get(ri)
            if cr is None:
                continue
            items.append((_ms(a, t0), max(_ms(b, t0), _ms(a, t0) + min_w), k, cr.colors.get("receive", "#8c8c8c"),
                          html_text(f"#{ri + 1} {L.short_url(cr.url, 60)} {L.duration_text(cr.duration)}")))
    for t in _segments(items, use_gl, go, "connection", seg_w, "conn", False, hover=None if hover else False, gl_cls=gl_cls):
        fig.add_trace(t)

    # --- the throughput track
    if tp is not None and tp.down:
        xs = [_ms(tp.t0, t0) + (k + 0.5) * tp.bin * 1000.0 for k in range(len(tp.down))]
        f"{tp.bin * 1000:g} ms"
        fig.add_trace(go.Scatter(x=xs, y=[v / 1000.0 for v in tp.down], mode="lines", line=dict(color="#2d6fd1", width=1, shape="hv"),
                                 fill="tozeroy", fillcolor="rgba(45,111,209,0.35)", name="▼ server→client",
                                 xaxis="x", yaxis="y3", hovertemplate="%{y:.1f} kB at %{x:.0f} ms<extra>down</extra>"))
        fig.add_trace(go.Scatter(x=xs, y=[v / 1000.0 for v in tp.up], mode="lines", line=dict(color="#e58226", width=1, shape="hv"),
                                 name="▲ client→server", xaxis="x", yaxis="y3",
                                 hovertemplate="%{y:.1f} kB at %{x:.0f} ms<extra>up</extra>"))

    # --- vertical layout (pixels, top to bottom)
    ms_items = []
    for ms in wf.milestones:
        x = _ms(ms.time, t0)
        text = f"{ms.label} {x:.0f} ms"
        ms_items.append((ms, x, text))
    place = L.stagger([(x / xmax * plot_w_narrow, len(t) * CHAR_PX + 6) for _, x, t in ms_items], 0.0, float(plot_w_narrow))
    ms_rows = max((rw for rw, _ in place), default=-1) + 1
    head_px = 34 + (20 if wf.completeness else 0)
    axis_top_px = 24
    mt = head_px + ms_rows * MILESTONE_ROW_PX + axis_top_px + 4
    wf_px = min(max(ROW_PX * max(n, 1), 60), MAX_ROWS_PX)  # (past it, thinner rows)
    gap_px = 30
    conn_px = max(CONN_ROW_PX * max(nc, 1), 30) if nc * CONN_ROW_PX <= 4000 else 4000
    track_px = TRACK_PX if tp is not None else 0
    n_legend = sum(1 for t in fig.data if t.showlegend is not False)
    longest = max((len(t.name or "") for t in fig.data if t.showlegend is not False), default=10)
    per_row = max(int(plot_w_narrow // (44 + longest * 6.2)), 1)
    mb = 48 + 22 * (-(-n_legend // per_row)) + 8
    plot_h = wf_px + gap_px + conn_px + (gap_px + track_px if track_px else 0)
    height = mt + plot_h + mb
    y_tp = (0.0, track_px / plot_h) if track_px else (0.0, 0.0)
    c_lo = (track_px + gap_px) / plot_h if track_px else 0.0
    y_conn = (c_lo, c_lo + conn_px / plot_h)
    y_wf = (1.0 - wf_px / plot_h, 1.0)

    for (ms, x, text), (rw, anchor) in zip(ms_items, place):
        col = MILESTONE_COLORS.get(ms.name, "#444444")
        fig.add_shape(type="line", x0=x, x1=x, y0=0, y1=1, xref="x", yref="paper", line=dict(color=col, width=1.5, dash="dot"))
        fig.add_annotation(x=x, y=1.0, xref="x", yref="paper", yanchor="bottom", xanchor=anchor, showarrow=False,
                           yshift=axis_top_px + rw * MILESTONE_ROW_PX, text=html_text(text), font=dict(LABEL_FONT, color=col),
                           borderpad=0)
    # section headings in the gaps
    fig.add_annotation(x=0, y=y_conn[1], xref="paper", yref="paper", xanchor="left", yanchor="bottom", showarrow=False,
                       text=f"Connections ({nc}): handshake, then each request", font=dict(size=11, color="#444444"), yshift=2)
    if track_px and tp is not None:
        fig.add_annotation(x=0, y=y_tp[1], xref="paper", yref="paper", xanchor="left", yanchor="bottom", showarrow=False,
                           text=f"Throughput (wire bytes per {tp.bin * 1000:g} ms)", font=dict(size=11, color="#444444"), yshift=2)

    # zebra rows, or bands per group when grouped
    shapes = []
    if wf.group_by in ("connection", "host") and n:
        key = (lambda r: r.connection) if wf.group_by == "connection" else (lambda r: r.host)
        bands, start = [], 0
        for i in range(1, n + 1):
            if i == n or key(rows[i]) != key(rows[start]):
                bands.append((start, i - 1))
                start = i
        if len(bands) <= 300:
            shapes = [(a, b) for k, (a, b) in enumerate(bands) if k % 2]
    elif show_labels:
        shapes = [(i, i) for i in range(1, n, 2)]
    for a, b in shapes:
        fig.add_shape(type="rect", x0=0, x1=1, xref="paper", y0=a - 0.5, y1=b + 0.5, yref="y",
                      fillcolor="rgba(0,0,0,0.045)", line=dict(width=0), layer="below")

    head = dict(text=html_text(title if title is not None else (wf.title or "waterfall")), x=0.01, y=1.0, yanchor="top", yref="container",
                pad=dict(t=8))
    if wf.completeness:  # what the capture does not show, under the title (analyzer.completeness)
        col = "#2ca02c" if wf.completeness.startswith("Complete") else "#d62728"
        n_bg = sum(1 for r in rows if r.background)
        extra = f" · {n_bg} background request{'s' * (n_bg != 1)} (faded) not in the page load" if n_bg else ""
        head["subtitle"] = dict(text=html_text(wf.completeness + extra), font=dict(size=12, color=col))
    conn_labels = [html_text(f"{L.elide(c.label, label_chars - 9, 12)} {c.protocol[:8]}") for c in crow]
    fig.update_layout(
        title=head,
        barmode="overlay", bargap=0.25, width=width, height=height, template="plotly_white",
        hovermode="closest", margin=dict(l=ml, r=mr, t=mt, b=mb, autoexpand=False),
        legend=dict(orientation="h", traceorder="normal", yanchor="top", y=-44.0 / plot_h, x=0.0, xanchor="left", font=dict(size=10),
                    bgcolor="rgba(255,255,255,0)", tracegroupgap=2),
        xaxis=dict(range=[0, xmax], side="top", zeroline=False, anchor="y", showline=True, linecolor="#bbbbbb", ticks="outside",
                   ticksuffix=" ms", tickfont=dict(size=10)),
        xaxis2=dict(matches="x", anchor="y3", side="bottom", title=dict(text="ms from the first packet",
                    font=dict(size=11), standoff=4), showgrid=False, zeroline=False, tickfont=dict(size=10), ticksuffix=" ms"),
        yaxis=dict(domain=list(y_wf), autorange=False, tickmode="array" if show_labels else "auto",
                   tickvals=[r.index for r in rows] if show_labels else None,
                   ticktext=[row_label(r) for r in rows] if show_labels else None, showticklabels=show_labels,
                   tickfont=LABEL_FONT, automargin=False, showgrid=False, zeroline=False,
                   range=[n - 0.5, -0.5] if n else [0.5, -0.5]),
        yaxis2=dict(domain=list(y_conn), autorange=False, range=[max(nc, 1) - 0.5, -0.5], tickmode="array",
                    tickvals=list(range(nc)) if nc <= 300 else None, ticktext=conn_labels if nc <= 300 else None,
                    showticklabels=nc <= 300, tickfont=LABEL_FONT, automargin=False, showgrid=False, zeroline=False, fixedrange=True),
        yaxis3=dict(domain=list(y_tp) if track_px else [0, 0.001], automargin=False,
                    rangemode="tozero", tickfont=dict(size=9), nticks=4, zeroline=True, fixedrange=True, visible=bool(track_px),
                    ticksuffix=" kB", ticklabelposition="inside top"),  # (outside, 0 kB would sit on the axis' 0 ms)
    )
    # the throughput track hangs on the bottom axis (xaxis2 matches the top one)
    for tr in fig.data:
        if getattr(tr, "yaxis", None) == "y3":
            tr.xaxis = "x2"
    fig.layout.yaxis3.anchor = "x2"
    fig.layout.yaxis2.anchor = "x"
    return fig


def _legend_color(ph: str) -> str | None:
    return {"receive": "#8c8c8c", "wait": L.WAIT_COLOR, "send": L.SEND_COLOR, "blocked": L.BLOCKED_COLOR}.get(ph) or L.PHASE_COLORS.get(ph)


def _bars(go, use_gl: bool, base, dur, ys, colors, hover, name: str, group: str, faded, exchanges, legend_color=None, gl_cls=None):
    """One trace of horizontal bars: ``Bar`` (SVG, exact in images) or, for many rows,
    WebGL line segments (one canvas, no DOM node per row) in one ``Scattergl`` with a colour
    per segment end."""
    if not use_gl:
        return [go.Bar(orientation="h", base=base, x=dur, y=ys, name=name,
                      marker=dict(color=colors, line=dict(width=0), opacity=[0.35 if f else 1.0 for f in faded]),
                      hovertext=hover, hoverinfo="text" if hover else "skip", width=0.72, legendgroup=group, customdata=exchanges,
                      showlegend=False)]
    by_color: dict[str, list[int]] = {}
    for i, c in enumerate(colors):
        by_color.setdefault(c, []).append(i)
    out = []
    for _k, (col, idxs) in enumerate(by_color.items()):
        xs, yv, tx = [], [], []
        for i in idxs:
            xs += [base[i], base[i] + dur[i], None]
            yv += [ys[i], ys[i], None]
            if hover:
                tx += [hover[i], "", None]  # (the bar's start carries its text: half the bytes)
        out.append((gl_cls or go.Scattergl)(x=xs, y=yv, mode="lines", line=dict(color=col, width=max(2, min(12, int(ROW_PX * 0.6)))),
                                name=name, legendgroup=group, showlegend=False, hovertext=tx or None,
                                hoverinfo="text" if hover else "skip", _validate=False))  # (many rows: validating them element by element takes seconds)
    return out


def write_html(fig, path: str) -> None:
    """Self-contained HTML (plotly.js inlined; works offline)."""
    html = fig.to_html(full_html=True, include_plotlyjs=True, config={"displaylogo": False, "responsive": True})
    _atomic_write(path, html.encode("utf-8"))


IMAGE_TIMEOUT = 60.0  # seconds for one rendering (a cold kaleido/Chromium start takes ~3 s)
IMAGE_ATTEMPTS = 2


class ImageError(RuntimeError):
    """kaleido/Chromium did not render the image (it failed, or did not finish in time)."""


def to_image(fig, fmt: str, width: int | None = None, height: int | None = None, scale: float | None = None) -> bytes:
    """PNG or SVG bytes through kaleido 1.x.  With the persistent server of ``image_server``
    the figure is rendered in this process; otherwise in a child process of its own, killed
    (with the Chromium it started) if it does not finish in ``IMAGE_TIMEOUT`` seconds and tried
    once more: Chromium has been seen to hang on start-up, and an export must end either way."""
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
        return pio.to_image(fig, format=fmt, width=width, height=height, scale=scale)


_CHILD = """
import json, sys
import plotly.io as pio
from wirefall.ui.figures import _render
a = json.loads(sys.argv[1])
sys.stdout.buffer.write(_render(pio.from_json(sys.stdin.read()), a["fmt"], a["width"], a["height"], a["scale"]))
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
        lines = err.decode(errors="replace").strip().splitlines()
        raise ImageError(f"{fmt.upper()} rendering failed: {lines[-1] if lines else f'exit code {p.returncode}'}")
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

