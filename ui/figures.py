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
from typing import Iterable

from analyzer.safetext import html_text
from analyzer.waterfall import CONTENT_CLASSES, CONTENT_COLORS, PHASE_LABELS, PHASES, Waterfall

GL_THRESHOLD = 1500
ROW_PX = 20
MARKER_SYMBOLS = {
    "push": ("triangle-right", "#1f77b4"),
    "priority": ("diamond", "#6a3d9a"),
    "reset": ("x", "#d62728"),
    "stall": ("hourglass", "#b15928"),
    "retransmission": ("circle-open", "#e31a1c"),
    "gap": ("square-open", "#000000"),
}
MILESTONE_COLORS = {"first_packet": "#555555", "html_first_byte": "#2d6fd1", "page_load": "#d62728"}


def _short(url: str, n: int = 60) -> str:
    if "://" in url:
        url = url.split("://", 1)[1]
    return url if len(url) <= n else url[: n // 2 - 1] + "…" + url[-(n // 2) + 1 :]


def row_label(r) -> str:
    return html_text(f"{r.index + 1}. [{r.badge}] {_short(r.url or '(no URL)')}")


def waterfall_figure(wf: Waterfall, title: str | None = None, markers: bool = True, gl: bool | None = None,
                     width: int = 1400, max_labels: int = 300):
    """The waterfall as a ``plotly.graph_objects.Figure``: x = milliseconds from the first
    packet, one row per exchange (top to bottom in ``wf.rows`` order)."""
    import plotly.graph_objects as go

    rows = wf.rows
    n = len(rows)
    use_gl = n > GL_THRESHOLD if gl is None else gl
    t0 = wf.t0
    span = max(((max((r.end for r in rows), default=t0) - t0) * 1000.0), 1.0)
    min_w = span / 800.0  # bars shorter than this are widened to stay visible (hover shows the real time)
    fig = go.Figure()

    for ph in PHASES:
        sel = [(r, a, b) for r in rows for (n_, a, b) in r.phases if n_ == ph]
        if not sel:
            continue
        base = [(a - t0) * 1000.0 for _, a, _b in sel]
        dur = [max((b - a) * 1000.0, min_w) for _, a, b in sel]
        ys = [r.index for r, _, _ in sel]
        colors = [r.colors[ph] for r, _, _ in sel]
        hover = ["<br>".join([PHASE_LABELS[ph] + f": {(b - a) * 1000:.1f} ms"] + [html_text(h) for h in r.hover]) for r, a, b in sel]
        if not use_gl:
            fig.add_trace(go.Bar(
                orientation="h", base=base, x=dur, y=ys, name=PHASE_LABELS[ph],
                marker=dict(color=colors, line=dict(width=0), opacity=[0.35 if r.background else 1.0 for r, _, _ in sel]),
                hovertext=hover, hoverinfo="text", width=0.72, legendgroup=ph,
                customdata=[r.exchange for r, _, _ in sel],
            ))
        else:
            # one WebGL line trace per (phase, colour): segments separated by None
            by_color: dict[str, list] = {}
            for i, (r, a, b) in enumerate(sel):
                by_color.setdefault(colors[i], []).append(i)
            for k, (col, idxs) in enumerate(by_color.items()):
                xs, yv, tx = [], [], []
                for i in idxs:
                    xs += [base[i], base[i] + dur[i], None]
                    yv += [ys[i], ys[i], None]
                    tx += [hover[i], hover[i], None]
                fig.add_trace(go.Scattergl(
                    x=xs, y=yv, mode="lines", line=dict(color=col, width=max(2, min(12, int(ROW_PX * 0.6)))),
                    name=PHASE_LABELS[ph], legendgroup=ph, showlegend=k == 0, hovertext=tx, hoverinfo="text",
                ))

    # content-class legend entries (the waiting/receiving colours)
    if wf.color_by == "content":
        present = {r.content_class for r in rows}
        for cls in CONTENT_CLASSES:
            if cls in present:
                fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=cls,
                                         marker=dict(symbol="square", size=12, color=CONTENT_COLORS[cls][1]),
                                         legendgroup="class", showlegend=True, hoverinfo="skip"))

    if markers:
        by_kind: dict[str, list] = {}
        for r in rows:
            for m in r.markers:
                by_kind.setdefault(m.kind, []).append((r, m))
        for kind, items in by_kind.items():
            sym, col = MARKER_SYMBOLS.get(kind, ("circle", "#333"))
            tr = go.Scattergl if use_gl else go.Scatter
            fig.add_trace(tr(
                x=[(m.time - t0) * 1000.0 for _, m in items], y=[r.index for r, _ in items], mode="markers", name=kind,
                marker=dict(symbol=sym, size=9, color=col, line=dict(width=1.5, color=col)),
                hovertext=[html_text(m.label) + (f" (packet {m.packet})" if m.packet else "") for _, m in items], hoverinfo="text",
            ))
        # push arrows: from the pushing stream's row to the pushed row
        arrows = [(r, next((m for m in r.markers if m.kind == "push"), None)) for r in rows if r.pushed and r.push_parent_row is not None]
        for r, m in arrows[:300]:
            x = ((m.time if m else r.start) - t0) * 1000.0
            fig.add_annotation(x=x, y=r.index, ax=x, ay=r.push_parent_row, xref="x", yref="y", axref="x", ayref="y",
                               showarrow=True, arrowhead=2, arrowsize=1, arrowwidth=1.2, arrowcolor=MARKER_SYMBOLS["push"][1], text="")

    for k, ms in enumerate(wf.milestones):
        x = (ms.time - t0) * 1000.0
        fig.add_shape(type="line", x0=x, x1=x, y0=0, y1=1, xref="x", yref="paper",
                      line=dict(color=MILESTONE_COLORS.get(ms.name, "#444"), width=1.5, dash="dot"))
        fig.add_annotation(x=x, y=1.0, xref="x", yref="paper", yanchor="bottom", showarrow=False, textangle=-30, yshift=(k % 2) * 22,
                           text=f"{html_text(ms.label)} {x:.0f} ms", font=dict(size=10, color=MILESTONE_COLORS.get(ms.name, "#444")))

    # bands per connection when grouped
    if wf.group_by == "connection" and n:
        bands = []
        cur, start = rows[0].connection, 0
        for r in rows[1:] + [None]:
            if r is None or r.connection != cur:
                end = (r.index if r is not None else n) - 1
                bands.append((cur, start, end))
                if r is not None:
                    cur, start = r.connection, r.index
        if len(bands) <= 200:
            for k, (cid, a, b) in enumerate(bands):
                if k % 2:
                    fig.add_shape(type="rect", x0=0, x1=1, xref="paper", y0=a - 0.5, y1=b + 0.5, yref="y",
                                  fillcolor="rgba(0,0,0,0.05)", line=dict(width=0), layer="below")

    show_labels = n <= max_labels
    height = max(360, min(60 + 140 + ROW_PX * n, 16000))
    head = dict(text=html_text(title if title is not None else (wf.title or "waterfall")), x=0.01)
    if wf.completeness:  # what the capture does not show, under the title (analyzer.completeness)
        col = "#2ca02c" if wf.completeness.startswith("Complete") else "#d62728"
        n_bg = sum(1 for r in rows if r.background)
        extra = f" · {n_bg} background request{'s' * (n_bg != 1)} (faded) not in the page load" if n_bg else ""
        head["subtitle"] = dict(text=html_text(wf.completeness + extra), font=dict(size=12, color=col))
    fig.update_layout(
        title=head,
        barmode="overlay", bargap=0.25, width=width, height=height, template="plotly_white",
        hovermode="closest", margin=dict(l=10, r=10, t=130 if wf.completeness else 110, b=40),
        legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0.0, xanchor="left", font=dict(size=10), bgcolor="rgba(255,255,255,0.7)"),
        xaxis=dict(title="ms from the first packet", rangemode="tozero", side="top" if n > 40 else "bottom", zeroline=False),
        yaxis=dict(autorange="reversed", tickmode="array" if show_labels else "auto",
                   tickvals=[r.index for r in rows] if show_labels else None,
                   ticktext=[row_label(r) for r in rows] if show_labels else None,
                   tickfont=dict(size=10, family="monospace"), automargin=True, showgrid=False, zeroline=False,
                   range=[n - 0.5, -0.5] if n else None),
    )
    return fig


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
from ui.figures import _render
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
    from analyzer.export import write_atomic

    write_atomic(path, data, force=True)

