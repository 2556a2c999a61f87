"""What the waterfall figure (ui/figures.py) writes and tints beside its bars, as plain
functions of the model's rows (no plotly here): the marks of the label column (background,
method and status, no response), the rows tinted as WebPageTest tints them (errors red,
redirects yellow), the pale colour of a download's bytes-not-yet-arriving part, the time
axis' ticks in seconds, the view of the page's span apart from background traffic, the
connection view's labels (number, host and port), the colour of the completeness line under
the title, and the rows' texts a milestone's line crosses.  docs/WATERFALL.md, "The image".
"""
from __future__ import annotations

import math
from typing import Any

from wirefall.analyzer.model import not_sent_of

UNKNOWN_METHOD = "?"  # the mark of a row whose method the capture does not give (figures and TUI)
MUTED = "#8a8a8a"  # the label of a background row (and its "bg" mark)
ERROR_TINT = "rgba(214,39,40,0.16)"  # a row whose response is 4xx/5xx (WebPageTest: red row)
REDIRECT_TINT = "rgba(255,193,7,0.22)"  # a 3xx (WebPageTest: yellow row)
NO_RESPONSE_COLOR = "#d62728"  # the open end of a request the capture holds no response to
PALE = 0.65  # a download's part where no byte arrived: its light colour this far towards white
# the completeness line under the title (analyzer.completeness.headline), by whose part is missing
COMPLETE_COLOR = "#2ca02c"  # "Complete: …"
PAGE_COMPLETE_COLOR = "#9c6500"  # "Page complete: …; background traffic (not the page's): …" — amber, never the red
INCOMPLETE_COLOR = "#d62728"  # "Incomplete: …" (something of the page is missing)


def pale(color: str, k: float = PALE) -> str:
    """``#rrggbb`` mixed ``k`` of the way to white (the part of a download where no byte arrived:
    lighter than the waiting green, the packet bursts dark on it)."""
    h = color.lstrip("#")
    if len(h) != 6:
        return color
    rgb = [int(h[i:i + 2], 16) for i in (0, 2, 4)]
    return "#" + "".join(f"{round(c + (255 - c) * k):02x}" for c in rgb)


def headline_color(headline: str) -> str:
    """The colour of the completeness line: green when nothing is missing, amber when only
    background traffic is partial (the page's rows are whole: red would say the page is
    not — amazon1, Chrome's idle QUIC connection to Google begun before the capture), red when
    something of the page is missing."""
    if headline.startswith("Complete"):
        return COMPLETE_COLOR
    if headline.startswith("Page complete"):
        return PAGE_COMPLETE_COLOR
    return INCOMPLETE_COLOR


def no_response(r) -> bool:
    """The capture holds a request and no byte of its response (not a push): drawn open to the
    capture's end and marked so, not as the request's own few microseconds.  Not a browser
    log's request that never reached the network (``not_sent_of``: served from the disk cache,
    failed at once): it was not open — the amazon NetLog's favicon.ico from the disk cache (its
    7 ms read) and its refused checkin were drawn as "no response (open ≥ 2.7 s)"."""
    return (not r.pushed and r.status is None and (r.packets or {}).get("response_start") is None
            and not_sent_of(getattr(r, "browser", None)) is None)


FAILED_NOT_SENT = ("failed", "cancelled")  # a browser log's not-sent reasons that are an error (the row red, as WebPageTest)


def failed(r) -> str | None:
    """A browser log's request that failed (or was cancelled) before it reached the network:
    the text beside its bar, "failed: ERR_CONNECTION_REFUSED" (the log's own error name), else None."""
    ns = not_sent_of(getattr(r, "browser", None))
    if ns not in FAILED_NOT_SENT:
        return None
    err = (r.browser or {}).get("error")
    return f"{ns}: {err}" if isinstance(err, str) and err else str(ns)


def method_unknown(r) -> bool:
    """The row's method is not in the capture (its request came before it; a push has none)."""
    return not r.method and not r.pushed


def mark(r) -> str:
    """A row's mark in the label column (plain text, "" for a GET answered 200 by the page):
    ``bg`` for background traffic, the method when not GET (``?`` when the capture does not give
    it: its request came before the capture), the status when not 200, ``no
    response`` when the capture holds none, ``status <unknown>`` when it holds a response whose
    status it does not give."""
    parts = []
    if r.background:
        parts.append("bg")
    if r.method and r.method.upper() not in ("GET",) and not r.pushed:
        parts.append(r.method.upper()[:7])
    elif method_unknown(r):  # (a response whose request is not in the capture: a blank said GET)
        parts.append(UNKNOWN_METHOD)
    ns = not_sent_of(getattr(r, "browser", None))
    if ns and r.status is None:  # (a browser log's request that never reached the network: "disk cache", "failed" …)
        parts.append(ns)
    elif no_response(r):
        parts.append("no response")
    elif r.status is not None and r.status != 200:
        parts.append(str(r.status))
    elif r.status is None and not r.pushed:  # a response came, its status not in the capture (a QPACK entry before it)
        parts.append("status <unknown>")
    return " ".join(parts)


def tint(r) -> str | None:
    """The row's shading: red for an error (4xx, 5xx), yellow for a redirect (3xx), as WebPageTest."""
    s = r.status
    if isinstance(s, int) and s >= 400 or failed(r):
        return ERROR_TINT
    if isinstance(s, int) and 300 <= s < 400:
        return REDIRECT_TINT
    return None


MILESTONE_LAYER = "between"  # the milestones' lines: above the grid, under the rows' bars and texts (plotly shape layer)
TEXT_BOX_PAD_PX = 6.0  # a row text's box over a milestone's line: this much wider than its characters
ZEBRA_SHADE = 0.045  # the figures' every-other-row shading: black at this opacity (ui/figures.py _zebra)


def _rgba(color: str) -> tuple[float, float, float, float]:
    if color.startswith("rgba("):
        r, g, b, a = (float(v) for v in color[5:-1].split(","))
        return r, g, b, a
    h = color.lstrip("#")
    return float(int(h[0:2], 16)), float(int(h[2:4], 16)), float(int(h[4:6], 16)), 1.0


def row_background(zebra: bool, tint: str | None = None) -> str:
    """The colour a row's background shows (white, its zebra shading, its tint over them), as
    ``#rrggbb``: the box under a row's text that a milestone's line passes (``crossed_texts``)."""
    rgb = [255.0, 255.0, 255.0]
    layers = ([(0.0, 0.0, 0.0, ZEBRA_SHADE)] if zebra else []) + ([_rgba(tint)] if tint else [])
    for r, g, b, a in layers:
        rgb = [c + (v - c) * a for c, v in zip(rgb, (r, g, b))]
    return "#" + "".join(f"{round(c):02x}" for c in rgb)


def crossed_texts(texts, lines: list[float], ms_per_px: float, char_px: float, pad_px: float = 2.0) -> list[int]:
    """Which of the rows' texts a milestone's vertical line crosses: ``texts`` are (x in ms,
    text, plotly textposition — "middle right": the text starts at x, "middle left": it ends
    there), ``lines`` the milestones' x (ms), ``ms_per_px`` the axis' scale, ``char_px`` the
    width of a character of the (monospace) text; a line within ``pad_px`` of it counts.  The
    figures draw the lines under the rows' bars and texts (``MILESTONE_LAYER``) and each such
    text on a box of its row's colour over its line (bg-mixed: the page view's left edge held
    row 1's "← 3004 ms (ended 3.00 s)", and the first-packet and HTML lines went through it)."""
    out = []
    for i, (x, text, pos) in enumerate(texts):
        if not text or x is None:
            continue
        w, p = (len(text) * char_px + 2 * pad_px) * ms_per_px, pad_px * ms_per_px  # (a line at its very start, too)
        a, b = (x - w, x + p) if pos == "middle left" else (x - p, x + w)
        if any(a < m < b for m in lines):
            out.append(i)
    return out


def page_span(wf, rows=None) -> tuple[float, float] | None:
    """The page's span (seconds, capture clock): from its start (the first packet that is not
    background traffic's) to the latest of its rows' ends and milestones; None without page rows.
    ``rows``: the rows shown (a filtered view's), else the waterfall's."""
    page = [r for r in (wf.rows if rows is None else rows) if not r.background]
    if not page:
        return None
    lo = min([wf.page_start] + [r.start for r in page])
    hi = max([r.end for r in page] + [m.time for m in wf.milestones if m.name not in ("first_packet", "page_start")]
             + [r.browser_phases[-1][2] for r in page if r.browser_phases])
    return lo, max(hi, lo)


def page_view(wf, t0: float, t1: float, rows=None) -> tuple[float, float] | None:
    """The view the waterfall opens on (seconds, capture clock), the one rule of the figures and
    the TUI: the page's span (``page_span``) with a 3 % margin (0.5 ms at least) within
    ``t0``..``t1``, when background rows reach beyond it (or are open: no response) and the
    view cuts more than a tenth off the axis; None: the whole axis is the page's (bg-mixed's
    metadata long-polls made the page's rows a sliver of 9.9 s)."""
    rows = wf.rows if rows is None else rows
    ps = page_span(wf, rows)
    if ps is None:
        return None
    pad = max((ps[1] - ps[0]) * 0.03, 0.5e-3)
    a, b = max(ps[0] - pad, t0), min(ps[1] + pad, t1)
    if b <= a:
        return None
    out = [r for r in rows if r.background and (r.start < a or r.end > b or no_response(r))]
    # (a view that would cut a tenth or less off the axis is not worth a note)
    return (a, b) if out and (b - a) < 0.9 * (t1 - t0) else None


def time_ticks(lo: float, hi: float, plot_px: float) -> tuple[list[float], list[str]] | None:
    """Ticks of a time axis in ms (``lo``..``hi``) written in seconds ("1 s", "1.5 s") where
    the view is 2 s or longer (plotly's own read "1k ms … 9k ms"); None: plotly's ms ticks."""
    span = hi - lo
    if not (span >= 2000.0 and math.isfinite(span)):
        return None
    want = max(plot_px / 80.0, 2.0)  # a tick per 80 px or more
    step = next((s for s in (0.1, 0.2, 0.25, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600)
                 if span / 1000.0 / s <= want), 3600.0 * math.ceil(span / 1000.0 / 3600.0 / want))
    k0 = math.ceil(lo / 1000.0 / step - 1e-9)
    vals: list[float] = []
    texts: list[str] = []
    k = k0
    while k * step * 1000.0 <= hi + 1e-6 and len(vals) < 200:
        v = k * step
        vals.append(v * 1000.0)
        texts.append(f"{v:.2f}".rstrip("0").rstrip(".") + " s")
        k += 1
    return vals, texts


def connection_label(conn_id: int, cn, rows) -> str:
    """The connection view's label: the model's connection id (``#17``: what the request detail,
    the Connections tab, the statistics and the JSON call it), the host its requests named and
    the server's port; the addresses when no request named a host."""
    host = next((r.host for r in rows if r.connection == cn.connection and r.host), "")
    server = cn.label.partition(" → ")[2] or cn.label
    port = server.rsplit(":", 1)[-1] if ":" in server and server.rsplit(":", 1)[-1].isdigit() else ""
    if host and ":" in host and not host.endswith("]") and host.rsplit(":", 1)[-1].isdigit():
        host, port = host.rsplit(":", 1)
    where = f"{host}:{port}" if host and port else (host or cn.label)
    return f"#{conn_id} {where}"


# Milestones that are one request's moment.  A filtered figure that does not show that request
# draws the first one not at all (a request's marker: DevTools and WebPageTest draw no marker for
# a request their filter hides) and keeps the page's last byte (a page-level milestone, as
# DevTools keeps DOMContentLoaded and Load whatever the filter), saying its request is not shown.
REQUEST_MILESTONES = ("html_first_byte",)
PAGE_ROW_MILESTONES = ("page_load",)
FILTER_COLOR = "#9c4a00"  # "6 of 15 requests shown — filter: …" in the title


def milestone_rows(ms, rows, document: int | None = None) -> list:
    """The rows whose time a milestone is: the first byte of the HTML's response (its packet,
    or the page's document), the last byte of the page's last response (its packet); without
    packets (a browser log alone), the rows with a phase boundary, or an end, at its time.
    [] for the page's own milestones (first packet, page start, the browser's events)."""
    if ms.name not in REQUEST_MILESTONES + PAGE_ROW_MILESTONES:
        return []
    key = "response_start" if ms.name == "html_first_byte" else "response_end"
    if ms.packet is not None:
        out = [r for r in rows if (r.packets or {}).get(key) == ms.packet]
        if out:
            return out
    if ms.name == "html_first_byte":
        out = [r for r in rows if document is not None and r.exchange == document]
        if out:
            return out
        return [r for r in rows if any(abs(b - ms.time) < 1e-9 for n, _a, b in r.phases if n == "wait")]
    return [r for r in rows if abs(r.end - ms.time) < 1e-9]


def shown_milestones(wf, numbers: dict[int, int] | None = None, unfiltered=None) -> list[tuple[Any, str]]:
    """(milestone, label) of the milestones a figure of ``wf``'s rows draws: a request's
    milestone (``REQUEST_MILESTONES``) only when its row is one of them; the page's last byte
    always, ``(request 3, not shown)`` after its label when its row is not (``numbers``: the
    rows' own numbers by exchange, ``unfiltered``: the waterfall before the filter)."""
    doc = wf.page_info.document if wf.page_info is not None else None
    out = []
    for ms in wf.milestones:
        label = ms.label
        if ms.name in REQUEST_MILESTONES + PAGE_ROW_MILESTONES and not milestone_rows(ms, wf.rows, doc):
            if ms.name in REQUEST_MILESTONES:
                continue
            hidden = milestone_rows(ms, unfiltered.rows, doc) if unfiltered is not None else []
            nums = sorted((numbers or {}).get(r.exchange, r.index + 1) for r in hidden)
            label += f" (request {nums[-1]}, not shown)" if nums else " (its request not shown)"
        out.append((ms, label))
    return out


def filter_note(shown: int, total: int | None, filter_text: str | None, n: int = 160) -> str:
    """What a filtered figure says in its title (plain text, the figure escapes it): ``6 of 15
    requests shown — filter: protocol == "h3"`` (the filter cut in its middle past ``n``
    characters); "" when nothing is left out and no filter is named."""
    ft = " ".join((filter_text or "").split())
    if not ft and (total is None or total == shown):
        return ""
    what = f"{shown} of {total} requests shown" if total is not None else f"{shown} request{'s' * (shown != 1)} shown"
    if ft:
        from .waterfall_layout import elide

        what += " — filter: " + elide(ft, n, n * 2 // 3)
    return what
