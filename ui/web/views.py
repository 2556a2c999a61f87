"""What the dashboard shows, as plain functions of an analysed capture (no Dash app, no
request context): the filtered waterfall and its figure, the selected request, the
connection table, statistics figures, packet pages and detail trees, comparison and
exports.  The callbacks in ``ui.web.app`` only route to these; tests call them directly.

The waterfall figure comes from ``ui.figures.waterfall_figure`` (the shared builder) and
is only adapted to the page (responsive width, zoom on the time axis only).
"""
from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import json
import math
import re
from typing import Any

from dash import dcc, html

from wirefall.analyzer.model import DIRECTION_NAMES, Analysis, no_network_connections, not_sent_of
from wirefall.analyzer.request_detail import cache_bytes, no_response_text, size_text
from wirefall.analyzer.safetext import html_text, plural, printable
from wirefall.analyzer.waterfall import Waterfall
from wirefall.ui import waterfall_layout as L
from wirefall.ui.figures_marks import no_response

from .state import Entry

STATUS_BUCKETS = ("1xx", "2xx", "3xx", "4xx", "5xx", "unknown", "none")
EXPORT_FORMATS = ("png", "svg", "html", "har", "json", "qlog")  # (qlog: the capture's QUIC connections, for qvis)
MAX_FRAMES_SHOWN = 400
MAX_HEX_BYTES = 65535


# ------------------------------------------------------------------------- waterfall


# the waterfall's order dropdown: value -> (group_by, sort) of analyzer.waterfall.build
ORDER_OPTIONS = {
    "start": (None, "start"), "duration": (None, "duration"), "size": (None, "size"), "host": (None, "host"),
    "connection": ("connection", "start"), "by-host": ("host", "start"),
}
ORDER_LABELS = {"start": "sort: start", "duration": "sort: duration", "size": "sort: size", "host": "sort: host",
                "connection": "group: connection", "by-host": "group: host"}


def order_of(order: str | None) -> tuple[str | None, str]:
    """``(group_by, sort)`` of an order dropdown value (unknown values: by start)."""
    return ORDER_OPTIONS.get(order or "start", (None, "start"))


def waterfall_of(entry: Entry, order: str | None = None) -> Waterfall:
    """The capture's waterfall model in an order of the dropdown, built once per capture: the
    other orders are its rows sorted again (``reordered``), not a new build."""
    from wirefall.analyzer.waterfall import build

    group, sort = order_of(order)
    base = entry.memo(("waterfall",), lambda: gc_paused(build, entry.analysis))
    if (group, sort) == (None, "start"):
        return base
    return entry.memo(("waterfall", group, sort), lambda: gc_paused(reordered, base, group, sort))


def gc_paused(f, *args):
    """``f(*args)`` with Python's cyclic garbage collector paused (``analyzer.gcpause``):
    building a 10 000-request model allocates about a million objects, and the collections
    this set off (each walking every object of the capture's analysis again) were 45 % of its
    CPU (0.6 → 0.33 s).  (A pause, not ``gc.freeze`` as the CLI and the TUI do: the server
    drops the analyses of the captures it lets go.)"""
    from wirefall.analyzer.gcpause import gc_paused as paused

    with paused():
        return f(*args)


def reordered(wf: Waterfall, group: str | None, sort: str) -> Waterfall:
    """``wf`` (built in start order) with its rows in another order — what
    ``build(an, group_by=group, sort=sort)`` returns, without building the model again (the
    rows are copied: ``wf`` is a memo of its own and stays as it is)."""
    from wirefall.analyzer import waterfall as W

    copies = [dataclasses.replace(r) for r in wf.rows]  # in the build's order (start)
    pos = {id(r): i for i, r in enumerate(copies)}
    rows = W._order(copies, sort, group)  # (re-indexes the copies, push rows follow)
    by_start = sorted(rows, key=lambda r: pos[id(r)])
    return dataclasses.replace(wf, rows=rows, group_by=group, sort=sort, connection_rows=W._connection_rows(by_start))


def filter_options(entry: Entry) -> dict[str, list[dict]]:
    """Options of the protocol / connection / content / status filters of a capture (built once
    per capture, from the waterfall model the waterfall draws)."""
    return entry.memo(("filter-options",), lambda: _filter_options(entry))


def _filter_options(entry: Entry) -> dict[str, list[dict]]:
    wf = waterfall_of(entry)
    protos = sorted({r.protocol for r in wf.rows})
    conns = sorted({r.connection for r in wf.rows})
    classes = sorted({r.content_class for r in wf.rows})
    buckets = sorted({row_status_bucket(r) for r in wf.rows}, key=STATUS_BUCKETS.index)
    return {
        "protocol": [{"label": p, "value": p} for p in protos],
        "connection": [{"label": f"{c}: {wf.connections.get(c, '')}", "value": c} for c in conns],
        "content": [{"label": c, "value": c} for c in classes],
        "status": [{"label": STATUS_BUCKET_LABELS.get(b, b), "value": b} for b in buckets],
    }


STATUS_BUCKET_LABELS = {"none": "no response", "unknown": "status <unknown>"}


def status_bucket(status: int | None) -> str:
    if status is None:
        return "none"
    b = f"{status // 100}xx"
    return b if b in STATUS_BUCKETS else "none"


def row_status_bucket(r) -> str:
    """A row's status filter bucket: its status class, ``unknown`` where a response came whose
    status the capture does not give (a QPACK entry inserted before it), ``none`` where none came."""
    if r.status is None and not r.pushed and not not_sent_of(getattr(r, "browser", None)) and not no_response(r):
        return "unknown"
    return status_bucket(r.status)


@dataclasses.dataclass
class View:
    waterfall: Waterfall  # the rows shown, re-indexed 0..n-1
    total: int  # rows before filtering
    error: str | None = None  # filter expression error (shown next to the input)
    error_column: int | None = None
    expr: str = ""
    # the waterfall before the filters, where they left out rows: the figure numbers the rows
    # shown as it does (#8-13 for images-na's six, as the TUI and `wirefall requests`; they read 1-6)
    unfiltered: Waterfall | None = None

    @property
    def exchange_ids(self) -> list[int]:
        return [r.exchange for r in self.waterfall.rows]


def _norm(v) -> tuple:
    if v is None or v == "":
        return ()
    if isinstance(v, (list, tuple)):
        return tuple(v)
    return (v,)


def filtered_view(entry: Entry, protocols=None, connections=None, contents=None, statuses=None, expr: str | None = None,
                  order: str | None = None) -> View:
    key = ("view", _norm(protocols), _norm(connections), _norm(contents), _norm(statuses), (expr or "").strip(),
           order if order in ORDER_OPTIONS else "start")
    return entry.memo(key, lambda: _filtered_view(entry, *key[1:]))


def _filtered_view(entry: Entry, protocols, connections, contents, statuses, expr, order="start") -> View:
    from wirefall.analyzer.filter import FilterError, compile_filter

    wf = waterfall_of(entry, order)
    an: Analysis = entry.analysis
    rows = wf.rows
    if protocols:
        rows = [r for r in rows if r.protocol in protocols]
    if connections:
        cs = {int(c) for c in connections}
        rows = [r for r in rows if r.connection in cs]
    if contents:
        rows = [r for r in rows if r.content_class in contents]
    if statuses:
        rows = [r for r in rows if row_status_bucket(r) in statuses]
    err, col = None, None
    if expr:
        try:
            pred = compile_filter(expr, "exchanges")
        except FilterError as e:
            err, col = f"{e.message} at column {e.column}", e.column
        else:
            exs = {e.id: e for e in an.exchanges}
            rows = [r for r in rows if _safe(pred, exs.get(r.exchange))]
    return View(L.subset(wf, rows), total=len(wf.rows), error=err, error_column=col, expr=expr,
                unfiltered=wf if len(rows) != len(wf.rows) else None)


def _safe(pred, obj) -> bool:
    if obj is None:
        return False
    try:
        return bool(pred(obj))
    except Exception:  # noqa: BLE001 - a predicate that cannot evaluate a row does not match it
        return False


WINDOW_THRESHOLD = 300  # the page draws a window of rows of a view with more rows than this (the exports: all)
WINDOW_ROWS = 100  # rows in a window (2000 px: two screens; measured against 200 in docs/WATERFALL.md)


def row_window(view: View, start: int | None = None) -> tuple[int, int] | None:
    """The rows (first, end) the page draws of ``view`` from row ``start`` (0-based; cut to the
    view), or None where it draws them all (up to ``WINDOW_THRESHOLD`` rows)."""
    n = len(view.waterfall.rows)
    if n <= WINDOW_THRESHOLD:
        return None
    a = int(start) if isinstance(start, (int, float)) and math.isfinite(start) else 0
    a = max(min(a, n - WINDOW_ROWS), 0)
    return a, min(a + WINDOW_ROWS, n)


def window_start_of(view: View, row: int, start: int | None = None) -> int:
    """The first row of the window that shows ``row``: the window of ``start`` if it does,
    else the one in the grid of ``WINDOW_ROWS`` that holds it."""
    w = row_window(view, start)
    if w is None or w[0] <= row < w[1]:
        return w[0] if w else 0
    return row // WINDOW_ROWS * WINDOW_ROWS


# The figure's layout (legend rows, milestone labels' stagger, the room right of the last bar) is
# made for the narrowest graph the page shows: the whole width of a 1200 px page, or, with the
# request detail open beside it (.wf-split: the detail min(36 %, 560 px), only on a window of
# app.DETAIL_BESIDE_MIN px or more; narrower it is a sheet over the window's bottom and the graph
# keeps the whole width), about 676 px at 1100 px.  Made for 1200 px only, the open detail panel
# cut off the legend's last rows and laid the milestone labels over each other; made for 570 px
# (the graph beside a 38 % panel on a 1024 px page), the time axis was stretched to 5.1 s for a
# 3.7 s page at any width.
NARROWEST_PAGE, NARROWEST_WITH_DETAIL = 1200, 670


def narrowest_for(selected: bool, beside=None) -> int:
    """The width the page's figure is laid out for: the page's, unless a request's detail is
    open beside the graph — ``beside`` (the page's ``wf-beside``, app.BESIDE_JS): the graph's
    width then (px), false where the detail is not beside it, None where the page did not say."""
    if not selected or beside is False:
        return NARROWEST_PAGE
    if isinstance(beside, (int, float)) and not isinstance(beside, bool) and math.isfinite(beside):
        return int(min(max(beside, NARROWEST_WITH_DETAIL), NARROWEST_PAGE))
    return NARROWEST_WITH_DETAIL
LABEL_ROOM_MAX = 2400  # (a page's graph wider than this gives its labels no more)


def label_room_for(narrowest: int, graph_px=None) -> int:
    """The width (px) whose share a row label's host…path takes (``figures.url_chars_for``): the
    graph's own width where the page says it (``graph_px``, in steps of 100 px: a 1500 px page's
    graph is ~1470 px wide, though its figure is laid out for 1200), else the width the figure is
    laid out for (``narrowest``: beside the request detail, 670-1200).  The label had 44
    characters at any width (38 before): the amazon load's CDN files read ``csm-ca….js`` on a
    1920 px page."""
    if isinstance(graph_px, (int, float)) and not isinstance(graph_px, bool) and math.isfinite(graph_px) and graph_px > 0:
        return int(min(max(graph_px // 100 * 100, NARROWEST_WITH_DETAIL), LABEL_ROOM_MAX))
    return int(narrowest)


def reasons_of(entry: Entry) -> list:
    """``ui.explain.reasons`` of the entry's analysis, kept in its memo (the status line, the box
    and the figure each ask)."""
    from wirefall.ui import explain

    an = entry.analysis
    return [] if an is None else entry.memo(("explain-reasons",), lambda: explain.reasons(an))


def box_reasons(entry: Entry, shown: int, total: int) -> list:
    """The reasons the waterfall tab's box lists under its headline: all of them, but when no
    request is in the capture the first is the empty view's own line already."""
    rs = reasons_of(entry)
    return rs[1:] if shown == 0 and not total else rs


def box_headline(entry: Entry, shown: int, total: int) -> str | None:
    """The completeness headline the waterfall tab's box leads with (None: no box, or no
    headline in it) — the page's one statement of it, next to its reasons and next steps: the
    status line says only its word, the figure's subtitle leaves it out (``figure(headline=...)``;
    the status line, the box and the subtitle said it three times over).  "Incomplete" alone
    when the first reason says the rest ("Incomplete: no packets: from a HAR" over "no packets:
    from a HAR, the browser's own log …"), as ``explain.banner`` does."""
    from wirefall.analyzer.completeness import headline
    from wirefall.ui import explain

    rest = box_reasons(entry, shown, total)
    if not rest or entry.analysis is None:
        return None
    head = headline(entry.analysis)
    word, _, said = head.partition(": ")
    if said and explain.reason_text(rest[0], False).startswith(said):
        head = word
    return head


def figure(view: View, title: str | None = None, x_range: list | None = None, for_export: bool = False, fmt_html: bool = True,
           revision: str | None = None, start: int | None = None, narrowest: int = NARROWEST_PAGE, headline: bool = True,
           graph_px: int | None = None):
    """The shared waterfall figure, adapted to the page: responsive width, box zoom on the
    time axis only (the request axis is fixed), ``uirevision`` (``revision``: the capture's
    id) so that a re-render of the same capture keeps the zoom and another capture's does not.
    A view of more than ``WINDOW_THRESHOLD`` rows: the page gets the ``WINDOW_ROWS`` rows
    from ``start`` (``row_window``; the exports draw every row).  ``headline``: the completeness
    headline in the subtitle (the page leaves it to its box: ``box_headline``; an export keeps it).
    ``graph_px``: the graph's width on the page, when it says it — the row labels' room (``label_room_for``)."""
    from wirefall.ui.figures import waterfall_figure

    # the legend and the milestone labels are laid out for the narrowest graph (``narrowest`` px): a wider one only spreads them
    xr = (float(x_range[0]), float(x_range[1])) if x_range and len(x_range) == 2 and all(
        isinstance(v, (int, float)) for v in x_range) else None
    fig = waterfall_figure(view.waterfall, title=title, narrowest=narrowest, hover=not for_export or fmt_html,
                           window=None if for_export else row_window(view, start), x_view=xr,
                           label_room=None if for_export else label_room_for(narrowest, graph_px), unfiltered=view.unfiltered,
                           headline=headline or for_export)
    if not view.waterfall.rows:
        fig.add_annotation(text="no request matches the filters" if view.total else "no requests in this capture",
                           x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False, font=dict(size=16))
    if x_range and len(x_range) == 2 and all(isinstance(v, (int, float)) for v in x_range):
        fig.update_xaxes(range=list(x_range), autorange=False)
    if not for_export:
        fig.update_layout(width=None, autosize=True, dragmode="zoom", uirevision=html_text(revision or title or "waterfall"),
                          clickmode="event", hoverlabel=dict(align="left", font=dict(family="monospace", size=11)))
        fig.update_yaxes(fixedrange=True)
    return fig


def page_figure(entry: Entry, view: View, filters: tuple = (), title: str | None = None, x_range: list | None = None,
                revision: str | None = None, start: int | None = None, narrowest: int = NARROWEST_PAGE, graph_px: int | None = None):
    """``figure`` for the page.  The figure of the unfiltered view's first window, unzoomed
    (what a page opened on the capture draws first), is kept in the capture's memo as its
    plotly JSON, made by the warm-up (``WebState._warm``) while the page is still fetching its
    scripts: the page's first figure is then a copy of it (plotly's validation skipped: the
    JSON is a figure it validated), 10-20 ms where building it took 0.2-0.5 s.  ``filters``:
    filtered_view's arguments (protocols, connections, contents, statuses, expr, order)."""
    protocols, connections, contents, statuses, expr, order = (*filters, None, None, None, None, None, None)[:6]
    plain = not any(_norm(f) for f in (protocols, connections, contents, statuses)) and not (expr or "").strip()
    # (the headline in the subtitle unless the box over the figure says it)
    head = box_headline(entry, len(view.waterfall.rows), view.total) is None
    if not plain or x_range or start not in (None, 0) or entry.live is not None:
        return figure(view, title=title, x_range=x_range, revision=revision, start=start, narrowest=narrowest, headline=head,
                      graph_px=graph_px)
    import plotly.graph_objects as go

    room = label_room_for(narrowest, graph_px)
    key = ("page-figure", order if order in ORDER_OPTIONS else "start", title, revision, narrowest, head) \
        + ((room,) if room != narrowest else ())  # (the warm-up's key when the page did not say its width)
    made = entry.memo(key, lambda: figure(view, title=title, revision=revision, start=start, narrowest=narrowest,
                                          headline=head, graph_px=graph_px).to_plotly_json())
    return go.Figure(made, _validate=False)  # (copied: the memo's JSON stays as it is)


def clamp_x_range(x_range: list | None, wf: Waterfall) -> list | None:
    """A stored zoom (ms from the first packet) kept where it shows some of this capture's
    time, cut to it (a range from a hand-edited address or an older capture: none)."""
    if not x_range or len(x_range) != 2 or not all(isinstance(v, (int, float)) and math.isfinite(v) for v in x_range):
        return None
    a, b = float(x_range[0]), float(x_range[1])
    end = max((wf.t_end - wf.t0) * 1000, max(((r.end - wf.t0) * 1000 for r in wf.rows), default=0.0), 1.0)
    lo, hi = max(a, -0.05 * end), min(b, 1.05 * end)
    return [lo, hi] if hi > lo else None


def exchange_from_click(view: View, click: dict | None) -> int | None:
    """The exchange id of the clicked bar or marker (``y`` is the row index; bars also
    carry the exchange id as ``customdata``)."""
    if not click or not click.get("points"):
        return None
    p = click["points"][0]
    cd = p.get("customdata")
    ids = set(view.exchange_ids)
    if isinstance(cd, (int, float)) and int(cd) in ids:
        return int(cd)
    y = p.get("y")
    if isinstance(y, (int, float)):
        i = int(round(y))
        if 0 <= i < len(view.waterfall.rows):
            return view.waterfall.rows[i].exchange
    return None


# ------------------------------------------------------------------- selected request


def _ms(t: float | None, t0: float) -> str:
    return "" if t is None else f"{(t - t0) * 1000:.3f}"


def _kv_table(rows, cls="kv", header=None, id=None):
    # Dash renders text, never markup; printable() shows control and bidi characters as escapes
    body = [html.Tr([html.Td(printable(k), className="k"), html.Td("" if v is None else printable(v), className="v")]) for k, v in rows]
    head = [html.Thead(html.Tr([html.Th(h) for h in header]))] if header else []
    kw = {"id": id} if id else {}
    return html.Table(head + [html.Tbody(body)], className=cls, **kw)


def _pkt_link(n):
    """A packet number that opens the packet in the Packets tab (app.cb_packet_link)."""
    if not isinstance(n, int) or n <= 0:
        return "" if n is None else str(n)
    return html.Button(str(n), id={"type": "pkt", "n": n}, className="pktlink", title=f"show packet {n} in the Packets tab")


_MOMENT_CELLS = {"request_start": ("request", "first byte"), "request_end": ("request", "last byte"),
                 "response_start": ("response", "first byte"), "response_headers_end": ("response", "headers complete"),
                 "response_end": ("response", "last byte")}
FRAME_COLUMNS = ("packet", "from packet", "ms", "dir", "type", "flags", "length", "protocol", "error")


def request_detail(entry: Entry, exchange_id: int | None):
    """The request detail of one exchange: ``analyzer.request_detail.request_detail``
    (headers both ways, timing breakdown, frames and packets, bodies, browser log) as
    components."""
    from wirefall.analyzer.request_detail import request_detail as detail_of

    an: Analysis = entry.analysis
    e = next((x for x in an.exchanges if x.id == exchange_id), None) if an is not None else None
    if e is None:
        return html.Div("Click a bar of the waterfall to see its request and response.", className="hint")
    wf = waterfall_of(entry)
    row = next((r for r in wf.rows if r.exchange == e.id), None)
    d = detail_of(an, e, row=row, waterfall=wf)
    return detail_layout(d)


def _unsent_sizes(d) -> list[tuple[str, Any]]:
    """The sizes of a request that never reached the network: none on the wire (not "0 bytes on
    the wire"), the body the log says it read from a cache, or no response."""
    s, ns = d.sizes, d.unsent
    out: list[tuple[str, Any]] = [("on the wire", "none: the request never reached the network")]
    if ns.reason == "cache":
        out.append(("response body", f"{cache_bytes(s)} bytes read from the browser's {ns.label} (the log's count)"))
    else:
        out.append(("response body", no_response_text(ns)))
    if s.request_body:
        out.append(("request body", f"{s.request_body} bytes (the log's count; never sent)"))
    return out


# The waterfall's TLS phase and the Connections tab's TLS handshake are two lengths of one
# handshake (amazon's connection 8: 43.6 ms and 27.9 ms): each says which it is.
TLS_WATERFALL_LABEL = "TLS (from TCP connected, as WebPageTest/DevTools)"
TLS_CONNECTION_LABEL = "TLS handshake (ClientHello → Finished)"
PHASE_DETAIL_LABELS = {"tls": TLS_WATERFALL_LABEL}


def _with_clock_note(section: list, b) -> list:
    """``section`` (ui/web/overlay.browser_section) with, under its heading, the line saying the
    log's times in its table were moved onto the capture's clock and by how much
    (``RequestDetail.browser.clock_offset``, as the waterfall moves its bars)."""
    if b is None or b.clock_offset is None or not section:
        return section
    from wirefall.analyzer.browserlog import comparison as cmp

    note = html.P(printable(cmp.clock_note(b.source, b.clock_offset)), className="hint", id="detail-browser-clock")
    return [section[0], note, *section[1:]]


def _content_encoding_text(d) -> str:
    """The response's Content-Encoding; "none" where its headers were read and have none (a blank
    cell said neither that nor that they were not known); "<unknown>" where they were not read (no
    response header block, or a header name that could not be decoded might have been it)."""
    from wirefall.analyzer.completeness import UNKNOWN

    if d.sizes.content_encoding:
        return d.sizes.content_encoding
    hs = d.response_headers
    if hs and not any(k == UNKNOWN for k, _v in hs):
        return "none"
    return UNKNOWN


def detail_layout(d) -> html.Div:
    """A ``RequestDetail`` (analyzer/request_detail.py) as the web app's components."""
    t0 = d.t0
    c = d.conn
    s = d.sizes
    title = printable(f"{d.title_method} {d.url or ''}".strip())
    facts: list[tuple[str, Any]] = [
        ("status", d.status if d.status is not None else ("reset " + d.reset if d.reset else d.status_text)),
        ("protocol", d.protocol),
        # (a request that never reached the network: its connection had no endpoints, "? → ?")
        ("connection", f"{d.connection} (none: never on the network)" if d.unsent is not None else f"{d.connection} ({c.label})" if c else d.connection),
        ("stream", d.stream_id),
        ("content type", s.content_type),
        ("content encoding", _content_encoding_text(d)),
        *(_unsent_sizes(d) if d.unsent is not None else [
            ("response body", f"{size_text(s.response_body, s.response_body_lower_bound)} bytes on the wire"
             + (f", {s.response_body_decoded} decoded" if s.response_body_decoded is not None else "")),
            ("request body", f"{size_text(s.request_body, s.request_body_lower_bound)}"
                             f"{' bytes' if s.request_body is not None else ' (the browser log gives no size)'}"),
            ("request headers", f"{s.request_headers_wire} bytes on the wire, {s.request_headers_decoded} decoded"),
            ("response headers", f"{s.response_headers_wire} bytes on the wire, {s.response_headers_decoded} decoded")]),
    ]
    if d.pushed:
        facts.append(("pushed by stream", d.push_parent))
    if d.priority:
        facts.append(("priority", d.priority_text))  # (as DevTools and Wireshark say it: request_detail.priority_label)
    if d.error:
        facts.append(("error", d.error))
    if d.unknown:
        facts.append(("not in the capture", ", ".join(d.unknown)))
    timing = [html.Tr([html.Td(PHASE_DETAIL_LABELS.get(p.name, p.label)), html.Td(f"{(p.start - t0) * 1000:.3f}"), html.Td(f"{p.duration * 1000:.3f}"),
                       html.Td([_pkt_link(p.start_packet), *([" → ", _pkt_link(p.end_packet)] if p.end_packet != p.start_packet else [])])])
              for p in d.phases]
    if d.start is not None and d.end is not None and d.phases:
        timing.append(html.Tr([html.Td("total", className="k"), html.Td(f"{(d.start - t0) * 1000:.3f}"),
                               html.Td(f"{d.duration * 1000:.3f}"), html.Td("")]))
    moments = [html.Tr([html.Td(_MOMENT_CELLS[m.name][0]), html.Td(_MOMENT_CELLS[m.name][1]), html.Td(_pkt_link(m.packet)),
                        html.Td(_ms(m.time, t0))]) for m in d.moments]
    frames = d.frames
    errors = any(f.error for f in frames[:MAX_FRAMES_SHOWN])  # (an error column only where a frame has one: room in the panel)
    frame_rows = [html.Tr([html.Td(_pkt_link(f.packet)), html.Td(_pkt_link(f.first_packet) if f.first_packet != f.packet else ""),
                           html.Td(_ms(f.time, t0)), html.Td(DIRECTION_NAMES[f.direction]), html.Td(f.type),
                           html.Td(f"0x{f.flags:02x}" if f.flags else ""), html.Td(f.length), html.Td(f.protocol),
                           *([html.Td(printable(f.error) if f.error else "")] if errors else [])])
                  for f in frames[:MAX_FRAMES_SHOWN]]
    more = [html.P(f"… {len(frames) - MAX_FRAMES_SHOWN} more frames")] if len(frames) > MAX_FRAMES_SHOWN else []
    markers = []
    if d.markers:
        markers = [html.H4("Events"), html.Ul([html.Li(printable(d.marker_text(m)) + (f" (packet {m.packet})" if m.packet else ""))
                                               for m in d.markers[:50]])]
    from .body import bodies_section  # request and response bodies (ui/web/body.py)
    from .overlay import browser_section  # wire and browser log per phase, fields by source (ui/web/overlay.py)

    packets = [html.P([f"Packets of this {'stream' if d.stream_id is not None else 'exchange'} ({len(d.packets)}, where its frames "
                       "complete): ", *[x for p in d.packets[:MAX_FRAMES_SHOWN] for x in (_pkt_link(p), " ")],
                       f"… {len(d.packets) - MAX_FRAMES_SHOWN} more" if len(d.packets) > MAX_FRAMES_SHOWN else ""],
                      id="detail-exchange-packets")] if d.packets else []
    unsent = [html.P(printable(d.unsent_text), className="hint", id="detail-not-sent")] if d.unsent_text else []
    if d.unsent is not None:
        timing_title = ("Timing (ms from the first packet; the browser log's times on the capture's clock: it never reached the network)"
                        if d.t0_is_first_packet else "Timing (ms from the page's start: the browser log's times, it never reached the network)")
    else:
        timing_title = ("Timing (ms from the first packet)" if d.t0_is_first_packet
                        else "Timing (ms from the page's start: a browser log opened alone, no packets)")
    no_frames = [html.P("No frames: the request never reached the network.", className="hint", id="detail-no-frames")] if d.unsent and not frames else []
    return html.Div([
        html.H3(title, id="detail-title"),
        *unsent,
        _kv_table(facts, id="detail-facts"),
        html.Div([
            html.Div([html.H4("Request headers"), _kv_table(d.request_headers, "headers", ["name", "value"], id="detail-request-headers")],
                     className="col"),
            html.Div([html.H4("Response headers"), _kv_table(d.response_headers, "headers", ["name", "value"], id="detail-response-headers")],
                     className="col"),
        ], className="cols"),
        html.Div([
            html.Div([html.H4(timing_title),
                      html.Table([html.Thead(html.Tr([html.Th("phase"), html.Th("start"), html.Th("duration"), html.Th("packets")])),
                                  html.Tbody(timing)],
                                 className="grid", id="detail-timing")], className="col"),
            html.Div([html.H4("Packets"),
                      html.Table([html.Thead(html.Tr([html.Th("message"), html.Th("byte"), html.Th("packet"), html.Th("ms")])),
                                  html.Tbody(moments)], className="grid", id="detail-packets")], className="col"),
        ], className="cols"),
        *markers,
        *bodies_section(d.bodies, d.url),
        *_with_clock_note(browser_section(d.browser, t0, d.t0_is_first_packet), d.browser),
        html.H4(f"Frames ({len(frames)})"),
        html.Div(html.Table([html.Thead(html.Tr([html.Th(h) for h in FRAME_COLUMNS[:None if errors else -1]])), html.Tbody(frame_rows)],
                            className="grid", id="detail-frames"), className="hscroll"),
        *no_frames,
        *more,
        *packets,
    ], className="detail")


# ------------------------------------------------------------------------ connections


# The "connection" a browser log's requests that never reached the network are put on (served
# from a cache, failed before sending: ``model.no_network_connections``) is none: the amazon
# NetLog's refused checkin and disk-cache favicon.ico read "tcp ? → ?", open 1655 ms, in the
# table and as a grey bar in the figure — a connection no packet and no NetLog socket shows.
NO_NETWORK = ("none: never on the network", "a browser log's requests from a cache or failed before sending")


def connection_rows(entry: Entry) -> list[dict]:
    an: Analysis = entry.analysis
    # from the first packet; a browser log opened alone, from its page's start (Analysis.start_time)
    t0 = an.index.ts[0] if len(an.index) else an.start_time
    wire = bool(len(an.index)) or not an.exchanges  # (a log alone: packets and bytes unknown, –)
    exs: dict[int, int] = {}
    for e in an.exchanges:
        exs[e.connection] = exs.get(e.connection, 0) + 1
    none = no_network_connections(an)
    out = []
    for c in an.connections:
        t, q = c.tls, c.quic
        dur = lambda a, b: round((b - a) * 1000, 3) if a is not None and b is not None else None  # noqa: E731
        if c.id in none:  # (see NO_NETWORK)
            out.append({"id": c.id, "protocol": "", "transport": "–", "client": NO_NETWORK[0], "server": NO_NETWORK[1],
                        "start_ms": round((c.start - t0) * 1000, 3), "duration_ms": None, "packets": "–", "bytes": "–",
                        "requests": exs.get(c.id, 0), "notes": len(c.notes)})
            continue
        out.append({
            "id": c.id, "protocol": c.protocol or "", "transport": c.transport,
            "client": c.label.split(" → ")[0], "server": c.label.split(" → ")[1],
            "start_ms": round((c.start - t0) * 1000, 3), "duration_ms": round((c.end - c.start) * 1000, 3),
            "connect_ms": dur(c.connect_start, c.connect_end), "tls_ms": dur(c.tls_start, c.tls_end),
            "rtt_ms": round(c.rtt * 1000, 3) if c.rtt is not None else None,
            "version": (t.version if t else None) or (q.version if q else None) or "",
            "cipher": t.cipher_suite if t and t.cipher_suite else "",
            "sni": (t.sni if t else None) or (q.sni if q else None) or "",
            "alpn": (t.alpn if t else None) or (q.alpn if q else None) or "",
            "alpn_offered": ", ".join(t.alpn_offered) if t else "",
            "resumed": "yes" if t and t.resumed else "",
            "decrypted": ("yes" if (t and t.decrypted) or (q and q.decrypted) else
                          ("no: " + ((t.reason if t else None) or (q.reason if q else None) or "no key")) if (t or q) else ""),
            "packets": f"{c.stats[0].packets} / {c.stats[1].packets}" if wire else "–",
            "bytes": f"{c.stats[0].bytes} / {c.stats[1].bytes}" if wire else "–",
            "requests": exs.get(c.id, 0),
            "closed": c.closed or "",
            "notes": len(c.notes),
        })
        out[-1] = {k: printable(v) if isinstance(v, str) else v for k, v in out[-1].items()}  # SNI, ALPN, reasons from the capture
    return out


CONNECTION_COLUMNS = [
    ("id", "id"), ("protocol", "protocol"), ("transport", "transport"), ("client", "client"), ("server", "server"),
    ("start_ms", "start ms"), ("duration_ms", "duration ms"), ("connect_ms", "connect / QUIC handshake ms"),
    ("tls_ms", "TLS handshake ms"),  # (which one: CONNECTION_TIPS, the header's tooltip; the whole name widened the column past the table's view)
    ("rtt_ms", "RTT ms"), ("version", "TLS/QUIC version"), ("cipher", "cipher suite"), ("sni", "SNI"), ("alpn", "ALPN"),
    ("alpn_offered", "ALPN offered"), ("resumed", "resumed"), ("decrypted", "decrypted"), ("packets", "packets c→s / s→c"),
    ("bytes", "bytes c→s / s→c"), ("requests", "requests"), ("closed", "closed"), ("notes", "notes"),
]
CONNECTION_NUMERIC = ("id", "start_ms", "duration_ms", "connect_ms", "tls_ms", "rtt_ms", "requests", "notes")
# (a column's header tooltip, for app._grid: what the number measures where two definitions exist)
CONNECTION_TIPS = {"tls_ms": "the client's ClientHello to its Finished, as the packets show them; the waterfall's TLS phase "
                             "starts earlier, when the TCP handshake ends, as WebPageTest and DevTools count it"}


def connections_figure(entry: Entry):
    """Handshake phases per connection: the TCP connect or the QUIC handshake, the TLS
    handshake (in QUIC, inside it), then the rest of the connection's life."""
    import plotly.graph_objects as go

    an: Analysis = entry.analysis
    t0 = an.index.ts[0] if len(an.index) else an.start_time  # (a browser log alone: from its page's start)
    none = no_network_connections(an)
    conns = [c for c in an.connections if c.protocol != "dns" and c.id not in none][:300]
    fig = go.Figure()
    from wirefall.dissectors.registry import over_quic

    spans: dict[str, list] = {"connection": [], "connect": [], "quic": [], "tls": []}
    for c in conns:
        y = html_text(f"{c.id}: {c.protocol or c.transport} {c.label}")  # a Plotly label: no markup from the capture
        spans["connection"].append((y, c.start, c.end))
        if c.connect_start is not None and c.connect_end is not None:  # (a QUIC connection's is its handshake: no TCP)
            spans["quic" if c.quic is not None or over_quic(c.protocol) else "connect"].append((y, c.connect_start, c.connect_end))
        if c.tls_start is not None and c.tls_end is not None:  # (in QUIC: ClientHello to Finished, in CRYPTO frames)
            spans["tls"].append((y, c.tls_start, c.tls_end))
    # (the waterfall's colours: its "Initial connection" is the TCP connect or the QUIC handshake)
    # (the QUIC handshake a darker orange: the two side by side in one legend were one swatch, review 26)
    colors = {"connection": "#c4c4c4", "connect": "#ff9d42", "quic": "#b35c00", "tls": "#d566df"}
    names = {"connection": "connection open", "connect": "TCP connect", "quic": "QUIC handshake", "tls": "TLS handshake"}
    tips = {"tls": TLS_CONNECTION_LABEL}  # (the hover says which TLS length: the waterfall's starts at TCP connected)
    for k, items in spans.items():
        if not items:
            continue
        fig.add_trace(go.Bar(orientation="h", y=[y for y, _, _ in items], base=[(a - t0) * 1000 for _, a, _ in items],
                             x=[max((b - a) * 1000, 0.05) for _, a, b in items], name=names[k], marker_color=colors[k],
                             width=0.6 if k == "connection" else 0.4,
                             hovertemplate=tips.get(k, names[k]) + ": %{x:.3f} ms from %{base:.3f} ms<extra>%{y}</extra>"))
    fig.update_layout(barmode="overlay", template="plotly_white", height=max(220, 80 + 26 * len(conns)),
                      margin=dict(l=10, r=10, t=80, b=40), xaxis_title=x_title(an),
                      yaxis=dict(autorange="reversed", automargin=True, tickfont=dict(family="monospace", size=10)),
                      # the title at the top of the margin, the legend under it above the plot (the legend, at the
                      # plot's top, was drawn over the title: "Connections and ha", review 26)
                      legend=dict(orientation="h", x=0, y=1.0, yanchor="bottom"),
                      title=dict(text="Connections and handshakes" + (
                          f" · not drawn: {plural(len(none), 'connection')} of requests that never reached the network"
                          if none else ""), x=0.01, xanchor="left", y=1, yref="container",
                                 yanchor="top", pad=dict(t=10)))
    if not conns:
        fig.add_annotation(text="no TCP or QUIC connection", x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False)
    return fig


def connection_notes(entry: Entry) -> list:
    an: Analysis = entry.analysis
    items = []
    for c in an.connections:
        for n in c.notes[:50]:
            items.append(html.Li(f"connection {c.id}: {printable(entry_text(entry, n))}"))
    for w in an.warnings[:100]:
        items.append(html.Li(f"capture: {printable(entry_text(entry, w))}"))
    return items or [html.Li("none: no connection has a note, the capture no warning")]  # (not an empty heading)


# The analyzer's advice names the CLI's option; in the page a key log is given by uploading it
# (alone, it re-analyses the open capture with it: cb_open).
CLI_KEYLOG, WEB_KEYLOG = "pass --keylog FILE", "upload the key log (“Upload its key log”, then “Analyse upload”)"


def entry_text(entry: Entry, text: str) -> str:
    """A message with the private upload paths replaced by the uploaded file names, and the
    CLI's "pass --keylog FILE" said as the page does it (``WEB_KEYLOG``)."""
    if entry.live is None:
        text = text.replace(CLI_KEYLOG, WEB_KEYLOG)
    if entry.origin == "upload":
        text = text.replace(entry.path, entry.name)
    for p, n in zip(entry.keylogs, entry.keylog_names):  # (a key log uploaded beside a capture opened from disk too)
        if p != n:
            text = text.replace(p, n)
    return text


# -------------------------------------------------------------------------- statistics


def stats_of(entry: Entry):
    from wirefall.analyzer import stats

    return entry.memo(("stats",), lambda: stats.compute(entry.analysis, tcp_analysis=True))


def _empty_fig(title: str, text: str):
    import plotly.graph_objects as go

    fig = go.Figure()
    fig.add_annotation(text=html_text(text), x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False)
    fig.update_layout(title=html_text(title), template="plotly_white", height=300, xaxis_visible=False, yaxis_visible=False)
    return fig


def bytes_by_protocol_figure(entry: Entry):
    import plotly.graph_objects as go

    st = stats_of(entry)
    names = sorted(st.protocols)
    if not names:
        return _empty_fig("Bytes by protocol", "no connections")
    if _log_alone(st):
        return _empty_fig("Bytes on the wire by protocol", "a browser log has no packets: its bytes on the wire are unknown")
    labels = [html_text(n) for n in names]
    fig = go.Figure([
        go.Bar(x=labels, y=[st.protocols[n].bytes[0] for n in names], name="client → server"),
        go.Bar(x=labels, y=[st.protocols[n].bytes[1] for n in names], name="server → client"),
    ])
    fig.update_layout(barmode="group", title="Bytes on the wire by protocol", template="plotly_white", height=340,
                      yaxis_title="bytes", margin=dict(l=10, r=10, t=50, b=40))
    return fig


def content_bytes(entry: Entry) -> dict[str, list[int]]:
    """content class -> [responses, body bytes on the wire, decoded body bytes]: the page's
    requests that reached the network, as `stats` counts them (``stats.content_breakdown``)."""
    return stats_of(entry).content or {}


CONTENT_HEAD = ("type", "requests", "bytes (as transferred)", "decoded")


def content_table(entry: Entry):
    """The page's requests by type as a table (the TUI's Statistics "Content" section, WebPageTest's
    "Content Breakdown": requests, bytes, uncompressed): the chart beside it gave the request counts
    only on hover, and a type of a few kB (the amazon load's html, 3,833 bytes) no visible bar."""
    cb = content_bytes(entry)
    from wirefall.analyzer.stats import content_left_out_text

    left = content_left_out_text(stats_of(entry))
    title = html.Div("Content, as WebPageTest's breakdown", style={"fontWeight": 600, "fontSize": "13px"})
    what = html.Div("the page's requests by type (MIME type, else the URL's extension); response bodies as transferred "
                    "and decoded" + (f"; {left}" if left else ""), className="status", style={"fontSize": "12px", "maxWidth": "380px"})
    if not cb:
        return html.Div([title, html.Div("no responses", className="status")], id="st-content-table")
    num = {"textAlign": "right"}
    body = [html.Tr([html.Td(printable(k)), *(html.Td(f"{v:,}", style=num) for v in vals[:3])]) for k, vals in cb.items()]
    head = html.Thead(html.Tr([html.Th(h, style=None if i == 0 else num) for i, h in enumerate(CONTENT_HEAD)]))
    return html.Div([title, html.Table([head, html.Tbody(body)], className="grid"), what], id="st-content-table")


# ------------------------------------------------------------------ protocol hierarchy

# Wireshark's Statistics → Protocol Hierarchy window (its first five columns), computed only when
# the person asks (it reads every packet's headers again: ~10-70 µs a packet) in the analysis
# workers (WebState.start_job): the Statistics tab shows "computing…" meanwhile.
PHS_KEY = ("protocol-hierarchy",)
PHS_HEAD = ("Protocol", "Percent Packets", "Packets", "Percent Bytes", "Bytes")


def protocol_hierarchy_of(entry: Entry) -> dict[str, Any]:
    """``{"tree", "packets", "bytes", "why"}``: analyzer.stats.protocol_hierarchy's tree (None
    without packets: ``why`` says so) and the packets and bytes of the capture it counted (the
    percentages' 100 %, as Wireshark's).  Read through the entry's open PacketSource: a file
    deleted once it was open is still read; one gone before, never opened, is not."""
    import os

    from wirefall.analyzer.stats import protocol_hierarchy

    an = entry.analysis
    if an.source != "capture":
        return {"tree": None, "packets": 0, "bytes": 0, "why": phs_none_text(entry)}
    if entry._source is None and not os.path.isfile(entry.path):
        return {"tree": None, "packets": 0, "bytes": 0, "why": "the capture file cannot be read any more (moved or deleted)"}
    idx = an.index
    n = len(idx)
    tree = protocol_hierarchy(an, entry.source)
    if tree is None:
        return {"tree": None, "packets": 0, "bytes": 0, "why": "the capture file cannot be read"}
    # (each packet is in exactly one top node; a live capture may have grown since n was read)
    frames = max(n, sum(r["frames"] for r in tree))
    size = sum(r["bytes"] for r in tree) if frames > n else sum(idx.origlen[:n])
    return {"tree": tree, "packets": frames, "bytes": size, "why": None}


def phs_none_text(entry: Entry) -> str | None:
    """Why there is no hierarchy to compute for ``entry`` at all (a browser log alone), else None."""
    an = entry.analysis
    if an is not None and an.source != "capture":
        return (f"the input is a browser log ({printable(an.source)}) without a capture: it has no packets to count "
                "(open it with its capture for the packets' protocols)")
    return None


def _pct_cell(part: int, whole: int):
    """A percentage with one decimal, as Wireshark's window shows it, drawn as a bar too (as its
    percent columns are)."""
    pct = 100.0 * part / whole if whole else 0.0
    bar = f"linear-gradient(to right, #c5e1a5 {min(pct, 100):.1f}%, transparent {min(pct, 100):.1f}%)"
    return html.Td(f"{pct:.1f}%", className="num pct", style={"background": bar, "textAlign": "right", "minWidth": "90px"})


def phs_table(res: dict[str, Any]):
    """The tree as Wireshark's window lists it: one row per node in tree order, the protocol
    indented by its depth (``data-depth``), packets and bytes with their share of the capture's."""
    total_f, total_b = res["packets"], res["bytes"]
    num = {"textAlign": "right"}
    from wirefall.analyzer.stats import phs_rows

    def depth_attr(depth: int) -> dict[str, Any]:  # (a data-* attribute: what a test reads the tree from)
        return {"data-depth": str(depth)}

    rows = [html.Tr([
        html.Td(printable(nd["protocol"]), className="proto", style={"paddingLeft": f"{6 + 18 * depth}px"}, **depth_attr(depth)),
        _pct_cell(nd["frames"], total_f), html.Td(f"{nd['frames']:,}", className="num", style=num),
        _pct_cell(nd["bytes"], total_b), html.Td(f"{nd['bytes']:,}", className="num", style=num),
    ]) for depth, nd in phs_rows(res["tree"])]
    head = html.Thead(html.Tr([html.Th(h, style=None if i == 0 else num) for i, h in enumerate(PHS_HEAD)]))
    return html.Table([head, html.Tbody(rows)], className="grid", id="phs-table")


PHS_NOTE = ("As tshark -q -z io,phs counts: each packet once in every protocol of its path (its layers, by tshark's names; "
            "QUIC once per QUIC packet coalesced in the datagram), with its length on the wire; percentages are of all "
            "{packets} packets ({bytes} bytes) of the capture. A protocol's packets need not add up to its parent's (a TCP "
            "segment carrying no TLS record stops at tcp). Below the first application layer tshark's tree can differ: it "
            "repeats a layer once per PDU (http2 under http2) and names items wirefall does not decode (tcp.segments, "
            "data, body types such as png).")


def phs_view(entry: Entry | None, job) -> tuple[Any, bool, bool, str]:
    """The Statistics tab's protocol hierarchy section for ``entry`` and its job (state.Job, or
    None: not asked for yet): ``(children, polling, button disabled, button label)``."""
    label = "Compute protocol hierarchy"
    if entry is None:
        return html.Div("no capture analysed", className="hint", id="phs-state"), False, True, label
    why = phs_none_text(entry)
    if why is not None:
        return html.Div("No protocol hierarchy: " + why, className="hint", id="phs-none"), False, True, label
    n = packet_count(entry)
    if job is None:
        return (html.Div(f"Not computed yet: press the button to count the protocols of the {n:,} packets (it reads every "
                         "packet's headers again, as tshark -z io,phs does).", className="hint", id="phs-state"),
                False, False, label)
    if job.status in ("queued", "running"):
        what = (f"computing… reading the headers of {n:,} packets" if job.status == "running" else
                "computing… waiting for a worker (captures being analysed go first)")
        return html.Div(what, className="status", id="phs-computing"), True, True, label
    if job.status == "error":
        return (html.Div(printable(f"protocol hierarchy failed: {job.error}"), className="error", id="phs-error"),
                False, False, "Compute again")
    res = job.value
    if res["tree"] is None:
        return html.Div("No protocol hierarchy: " + printable(res["why"]), className="hint", id="phs-none"), False, False, "Compute again"
    note = PHS_NOTE.format(packets=f"{res['packets']:,}", bytes=f"{res['bytes']:,}")
    parts: list = []
    if not res["tree"]:
        parts.append(html.Div("the capture has no packets", className="hint", id="phs-none"))
    else:
        parts.append(phs_table(res))
    if n > res["packets"]:  # (a live capture grown since)
        parts.append(html.Div(f"counted the first {res['packets']:,} packets; the capture has {n:,} now: compute again for "
                              "all of them", className="explain", id="phs-grown"))
    parts.append(html.Div(note + f" (computed in {job.seconds:.2f} s)", className="status", style={"maxWidth": "900px"},
                          id="phs-note"))
    return html.Div(parts, id="phs-done"), False, False, "Compute again"


def bytes_by_content_figure(entry: Entry):
    import plotly.graph_objects as go

    from wirefall.analyzer.waterfall import CONTENT_COLORS

    cb = content_bytes(entry)
    if not cb:
        return _empty_fig("Bytes by content type", "no responses")
    names = list(cb)  # (WebPageTest's order: stats.CONTENT_CLASSES)
    labels = [html_text(n) for n in names]
    fig = go.Figure([
        go.Bar(x=labels, y=[cb[n][1] for n in names], name="body on the wire", marker_color=[CONTENT_COLORS.get(n, ("", "#888"))[1] for n in names],
               customdata=[cb[n][0] for n in names], hovertemplate="%{x}: %{y} bytes in %{customdata} responses<extra>wire</extra>"),
        go.Bar(x=labels, y=[cb[n][2] for n in names], name="decoded", marker_color=[CONTENT_COLORS.get(n, ("#ccc", ""))[0] for n in names]),
    ])
    fig.update_layout(barmode="group", title="Response bytes by content type", template="plotly_white", height=340,
                      yaxis_title="bytes", margin=dict(l=10, r=10, t=50, b=40))
    return fig


HEADER_COLUMNS = [("connection", "connection"), ("protocol", "protocol"), ("endpoints", "endpoints"), ("req_wire", "req. wire"),
                  ("req_decoded", "req. decoded"), ("req_reduction", "req. reduction"), ("resp_wire", "resp. wire"),
                  ("resp_decoded", "resp. decoded"), ("resp_reduction", "resp. reduction"),
                  ("rest_reduction", "reduction after the first block")]
HEADER_NUMERIC = ("req_wire", "req_decoded", "resp_wire", "resp_decoded")


def header_compression_rows(entry: Entry) -> list[dict]:
    st = stats_of(entry)
    rows = []
    for b in st.connections:
        if not (b.req_headers[1] or b.resp_headers[1]):
            continue
        red = lambda p: f"{100 * (1 - p[0] / p[1]):.1f}%" if p[1] else ""  # noqa: E731
        rows.append({"connection": b.name.replace("connection ", ""), "protocol": b.protocol or "", "endpoints": b.endpoints or "",
                     "req_wire": b.req_headers[0], "req_decoded": b.req_headers[1], "req_reduction": red(b.req_headers),
                     "resp_wire": b.resp_headers[0], "resp_decoded": b.resp_headers[1], "resp_reduction": red(b.resp_headers),
                     "rest_reduction": red([b.req_headers_rest[0] + b.resp_headers_rest[0], b.req_headers_rest[1] + b.resp_headers_rest[1]])})
    return rows


def header_compression_figure(entry: Entry):
    import plotly.graph_objects as go

    rows = header_compression_rows(entry)
    if not rows:
        return _empty_fig("Header compression per connection", "no header blocks")
    x = [html_text(f"{r['connection']} ({r['protocol']})") for r in rows]
    fig = go.Figure([
        go.Bar(x=x, y=[r["req_decoded"] for r in rows], name="request headers decoded", marker_color="#9ecae1"),
        go.Bar(x=x, y=[r["req_wire"] for r in rows], name="request headers on the wire", marker_color="#3182bd",
               customdata=[r["req_reduction"] for r in rows], hovertemplate="%{y} bytes (reduction %{customdata})<extra></extra>"),
        go.Bar(x=x, y=[r["resp_decoded"] for r in rows], name="response headers decoded", marker_color="#fdae6b"),
        go.Bar(x=x, y=[r["resp_wire"] for r in rows], name="response headers on the wire", marker_color="#e6550d",
               customdata=[r["resp_reduction"] for r in rows], hovertemplate="%{y} bytes (reduction %{customdata})<extra></extra>"),
    ])
    fig.update_layout(barmode="group", title="Header compression per connection", template="plotly_white", height=360,
                      yaxis_title="bytes", xaxis_title="connection", margin=dict(l=10, r=10, t=50, b=40))
    return fig


def traffic_series(an: Analysis, bins: int = 200) -> tuple[list[float], list[int], list[int], float]:
    """Packets and bytes per time bin: (bin starts in ms, packets, bytes, bin width in ms)."""
    ts = an.index.ts
    if not len(ts):
        return [], [], [], 0.0
    t0, t1 = ts[0], max(ts)
    span = max(t1 - t0, 1e-6)
    width = span / bins
    # round the bin width to 1/2/5 × 10^k seconds
    e = 10 ** math.floor(math.log10(width))
    width = next(m * e for m in (1, 2, 5, 10) if m * e >= width)
    n = int(span / width) + 1
    pk, by = [0] * n, [0] * n
    orig = an.index.origlen
    for i, t in enumerate(ts):
        k = min(max(int((t - t0) / width), 0), n - 1)
        pk[k] += 1
        by[k] += orig[i]
    return [k * width * 1000 for k in range(n)], pk, by, width * 1000


def traffic_figure(entry: Entry):
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    xs, pk, by, w = traffic_series(entry.analysis)
    if not xs:
        return _empty_fig("Packets and bytes over time", "no packets")
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_trace(go.Bar(x=[x + w / 2 for x in xs], y=by, width=w, name=f"bytes per {w:g} ms", marker_color="#6baed6"), secondary_y=False)
    fig.add_trace(go.Scatter(x=[x + w / 2 for x in xs], y=pk, name=f"packets per {w:g} ms", mode="lines", line=dict(color="#d94801", shape="hv")),
                  secondary_y=True)
    fig.update_layout(title="Packets and bytes over time", template="plotly_white", height=340, margin=dict(l=10, r=10, t=50, b=40),
                      xaxis_title="ms from the first packet", bargap=0)
    # each axis its own round ticks from 0 (Plotly syncs a secondary axis's ticks to the first: −1.17, 5.01, 11.2)
    fig.update_yaxes(title_text="bytes", secondary_y=False, rangemode="tozero", tickmode="auto")
    fig.update_yaxes(title_text="packets", secondary_y=True, rangemode="tozero", tickmode="auto", showgrid=False)
    fig.update_xaxes(rangemode="tozero")
    return fig


def x_title(an: Analysis) -> str:
    """The time axis' title of a figure of ``an``: from the first packet, or for a browser log
    opened alone (no packet) from its page's start (``Analysis.start_time``)."""
    return "ms from the first packet" if len(an.index) else "ms from the page's start (a browser log: no packets)"


def in_flight_series(an: Analysis) -> tuple[list[float], list[int]]:
    """Streams (exchanges) in flight over time as a step function: (ms, count) after each
    change.  An exchange is in flight from its first request byte to its last response
    byte."""
    t0 = an.index.ts[0] if len(an.index) else an.start_time  # (a browser log alone: from its page's start)
    ev = []
    for e in an.exchanges:
        a = e.request_start if e.request_start is not None else e.response_start
        if a is None:
            continue
        b = e.response_end if e.response_end is not None else (e.request_end or a)
        ev.append((a, 1))
        ev.append((max(b, a), -1))
    ev.sort(key=lambda x: (x[0], -x[1]))
    xs, ys, cur = [0.0], [0], 0
    for t, d in ev:
        cur += d
        ms = (t - t0) * 1000
        if xs and xs[-1] == ms:
            ys[-1] = cur
        else:
            xs.append(ms)
            ys.append(cur)
    return xs, ys


def in_flight_figure(entry: Entry):
    import plotly.graph_objects as go

    an = entry.analysis
    fig = go.Figure()
    xs, ys = in_flight_series(an)
    if len(xs) <= 1:
        return _empty_fig("Streams in flight", "no requests")
    fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line=dict(shape="hv", color="#31a354"), fill="tozeroy", name="all"))
    fig.update_layout(title=f"Streams in flight over time (max {max(ys)})", template="plotly_white", height=320,
                      xaxis_title=x_title(an), yaxis_title="requests in flight", margin=dict(l=10, r=10, t=50, b=40))
    fig.update_yaxes(rangemode="tozero", dtick=max(1, math.ceil(max(ys) / 8)))
    fig.update_xaxes(rangemode="tozero")
    return fig


def _log_alone(st) -> bool:
    """A browser log opened alone (no packet): what only the wire gives is unknown, not 0
    (``stats.render_text`` says "–" too)."""
    return st.packets_total == 0 and st.capture.requests > 0


def stats_summary(entry: Entry) -> list[tuple[str, Any]]:
    from wirefall.analyzer.stats import webpagetest_ttfb_apart

    st = stats_of(entry)
    cap = st.capture
    ms = lambda t: f"{t * 1000:.1f} ms" if t is not None else ""  # noqa: E731
    alone = _log_alone(st)
    unknown = "– (a browser log: no packets)"
    start = "the page's start in the browser log" if alone else "the page's first packet"
    return [
        ("packets", unknown if alone else f"{st.packets_total:,}"), ("bytes", unknown if alone else f"{st.bytes_total:,}"),
        ("duration", unknown if alone else ms(st.duration)),
        ("connections", cap.connections), ("requests", cap.requests), ("pushes", cap.pushes), ("resets", cap.resets),
        ("max streams in flight", cap.max_streams_in_flight), (f"TTFB (first response byte, from {start})", ms(cap.ttfb)),
        # (where it differs — a 202 or a redirect first —: WebPageTest's TTFB, stats.webpagetest_ttfb_apart)
        # (the rule is WebPageTest's, the moment the wire's — or, a log alone, the log's: amazon's 320.4 ms on the
        # wire where WebPageTest, from the browser, says 355)
        *(((f"TTFB by WebPageTest's rule, {'in the browser log' if alone else 'on the wire'} (its first 200 or 304 response, "
            f"request {w[1]})", ms(w[0])),)
          if (w := webpagetest_ttfb_apart(st)) is not None else ()),
        # (the last response byte is not the browser's load event: `wirefall stats` names it so)
        (f"last response byte (from {start}; not the browser's load event)", ms(cap.page_load_time)),
        # a HAR laid over the capture: the browser's events, from the same start (stats.browser_events)
        *((label, ms(t)) for label, t in (st.browser_events or {}).values()),
        # (tshark's count when the TCP analysis ran: a segment that filled a hole counts)
        *((("retransmissions c→s / s→c", unknown if alone else "{} / {}".format(*(cap.tcp_retransmissions or cap.retransmissions))),)
          if alone or not cap.quic_connections else _quic_rows(cap)),
    ]


def _quic_rows(cap) -> list[tuple[str, Any]]:
    """A capture with QUIC: its TCP retransmissions said to be TCP's (an HTTP/3 load read "0 / 0"
    as if nothing had been sent twice), then what the capture shows of QUIC's (stats' QUIC
    figures, the text tables' "QUIC again" and "PN gaps"), and what it cannot."""
    from wirefall.analyzer.stats import _quic_pair

    tcp = cap.connections - cap.quic_connections
    return [("TCP retransmissions c→s / s→c",
             "{} / {}".format(*(cap.tcp_retransmissions or cap.retransmissions)) if tcp > 0 else "– (no TCP connection)"),
            ("QUIC data carried again c→s / s→c (bytes)", _quic_pair(cap, cap.quic_data_again)),
            ("QUIC packet numbers missing c→s / s→c (lost before the capture point, or skipped)",
             _quic_pair(cap, cap.quic_packets_missing))]


# ----------------------------------------------------------------------------- packets


PACKET_COLUMNS = [("no", "No."), ("time", "Time"), ("source", "Source"), ("destination", "Destination"),
                  ("protocol", "Protocol"), ("length", "Length"), ("info", "Info")]


def packet_numbers(entry: Entry, expr: str | None) -> tuple[list[int] | None, str | None]:
    """The packets a display filter keeps (None: no filter) and the filter's error
    (analyzer.filter: Wireshark's fields, as the CLI and the TUI)."""
    expr = (expr or "").strip()
    if not expr:
        return None, None
    from wirefall.analyzer.filter import FilterError, compile_filter, filter_packets

    try:
        pred = compile_filter(expr, "packets")
    except FilterError as e:
        return None, f"column {e.column}: {e.message}"
    nums = entry.memo(("packet-filter", expr), lambda: list(filter_packets(entry.analysis, entry.source, pred)), keep=48)
    return nums, None


def packet_count(entry: Entry) -> int:
    """Packets in the list: a live capture's whose index row is complete (ui.web.live)."""
    return entry.live.packets() if entry.live is not None else entry.analysis.packets


def packet_position(entry: Entry, numbers: list[int] | None, n: int) -> int | None:
    """Where packet ``n`` is in the list shown (None: not in it)."""
    if numbers is None:
        return n - 1 if 1 <= n <= packet_count(entry) else None
    from bisect import bisect_left

    i = bisect_left(numbers, n)
    return i if i < len(numbers) and numbers[i] == n else None


# the Time column's formats (Wireshark's View → Time Display Format)
TIME_FORMATS = {
    "relative": "seconds since the first packet",
    "absolute": "UTC date and time of day",
    "delta": "seconds since the previous displayed packet",
    "reference": "seconds since the time reference",
}
SORT_TEXT_LIMIT = 30_000  # packets shown: sorting by Source/Destination/Protocol/Info decodes each (≈ 5–30 k/s)
ROW_CACHE = 4096  # packet rows kept per capture (a block is fetched again after a mark or a new time format)
BLOCK_MAX = 1000  # rows in one answer to the grid (it asks for cacheBlockSize at a time)


def _sort_keys(sort_model) -> list[tuple[str, bool]]:
    """``[(column, descending)]`` of AG Grid's sort model (known columns only)."""
    cols = {c for c, _ in PACKET_COLUMNS}
    out = []
    for m in sort_model or ():
        if isinstance(m, dict) and m.get("colId") in cols and m.get("sort") in ("asc", "desc"):
            out.append((m["colId"], m["sort"] == "desc"))
    return out


def time_value(entry: Entry, n: int, fmt: str, numbers: list[int] | None, refs: list[int]) -> float:
    """Packet ``n``'s Time column as a number (seconds; absolute: since the epoch): the
    TUI's and the CLI's (analyzer.packet_record)."""
    from wirefall.analyzer.packet_record import time_value as tv

    return tv(entry.analysis, n, fmt, numbers, refs)


def time_text(entry: Entry, n: int, fmt: str, numbers: list[int] | None, refs: list[int]) -> str:
    from wirefall.analyzer.packet_record import time_text as tt

    return tt(entry.analysis, n, fmt, numbers, refs)


def packet_order(entry: Entry, numbers: list[int] | None, sort_model=None, time_format: str = "relative",
                 refs: list[int] | None = None, expr: str = "") -> tuple[Any, str | None]:
    """The packets shown (``numbers``: what the filter keeps, None: all) in the order of AG
    Grid's sort model, and why a sort was not applied (None if it was).  Numeric columns
    sort from the packet index; text columns decode every packet shown, up to
    ``SORT_TEXT_LIMIT`` of them."""
    an = entry.analysis
    base = range(1, packet_count(entry) + 1) if numbers is None else numbers
    keys = _sort_keys(sort_model)
    if not keys:
        return base, None
    refs = sorted(refs or [])
    tkey = (time_format, tuple(refs) if time_format == "reference" else ()) if any(c == "time" for c, _ in keys) else ()
    memo_key = ("packet-order", (expr or "").strip(), tuple(keys), tkey)
    note: list[str] = []

    def make():
        order = list(base)
        idx = an.index
        for col, desc in reversed(keys):  # stable sorts, last key first
            if col == "no":
                order.sort(reverse=desc)
            elif col == "length":
                order.sort(key=lambda k: idx.origlen[k - 1], reverse=desc)
            elif col == "time":
                order.sort(key=lambda k: time_value(entry, k, time_format, numbers, refs), reverse=desc)
            else:
                if len(order) > SORT_TEXT_LIMIT:
                    note.append(f"not sorted by {dict(PACKET_COLUMNS)[col]}: that reads every packet shown, and {len(order):,} "
                                f"are shown (at most {SORT_TEXT_LIMIT:,}); filter first")
                    continue
                text = _text_column(entry, col, base, expr)
                order.sort(key=text.__getitem__, reverse=desc)
        return order, ("; ".join(note) or None)

    return entry.memo(memo_key, make, keep=48)


def _text_column(entry: Entry, col: str, base, expr: str) -> dict[int, str]:
    """packet -> its ``col`` text, for the packets shown (kept for the next sort)."""
    from wirefall.analyzer.detail import packet_row

    pos = [c for c, _ in PACKET_COLUMNS].index(col)
    an, src = entry.analysis, entry.source
    return entry.memo(("packet-text", (expr or "").strip(), col), lambda: {k: str(packet_row(an, src, k)[pos]) for k in base}, keep=48)


def _row_tuple(entry: Entry, n: int) -> tuple:
    """analyzer.packet_record's record of packet ``n`` (as a row tuple), from a bounded per-capture cache."""
    from wirefall.analyzer.packet_record import packet_record

    cache = entry.memo(("packet-rows",), dict, keep=48)
    r = cache.get(n)
    if r is None:
        r = packet_record(entry.analysis, entry.source, n).row()
        with entry.lock:
            cache[n] = r
            while len(cache) > ROW_CACHE:
                cache.pop(next(iter(cache)))
    return r


def colours_available() -> bool:
    try:
        return importlib.util.find_spec("wirefall.analyzer.colouring") is not None
    except (ImportError, ValueError):
        return False


def _colours(entry: Entry, nums: list[int]) -> list | None:
    """Wireshark-style colouring rules (analyzer.colouring, when this version has it):
    ``(rule name, fg, bg)`` per packet."""
    if not colours_available():
        return None
    try:
        mod = importlib.import_module("wirefall.analyzer.colouring")
        out = list(mod.colours_for(entry.analysis, nums))
    except Exception:  # noqa: BLE001 - rows without colours rather than no rows
        return None
    return out if len(out) == len(nums) else None


_COLOUR = re.compile(r"^#[0-9a-fA-F]{6}$")


def packet_block(entry: Entry, order, start: int, end: int, numbers: list[int] | None = None, time_format: str = "relative",
                 refs: list[int] | None = None, marked: list[int] | None = None, goto: int | None = None) -> list[dict]:
    """Rows ``start`` .. ``end - 1`` of the packet list in ``order`` (what AG Grid's
    infinite row model asks for): the columns, the Time in ``time_format``, and the
    row's state — ``marked``, ``ref`` (a time reference), ``goto`` (the packet gone to),
    ``bg``/``fg``/``colour`` (the colouring rule, when analyzer.colouring exists)."""
    start = max(int(start or 0), 0)
    end = min(max(int(end or 0), start), start + BLOCK_MAX, len(order))
    nums = list(order[start:end])
    refs = sorted(refs or [])
    mk = set(marked or ())
    P = printable
    rows = []
    for k in nums:
        r = _row_tuple(entry, k)
        rows.append({"no": r[0], "time": time_text(entry, k, time_format, numbers, refs), "source": P(r[2]), "destination": P(r[3]),
                     "protocol": P(r[4]), "length": r[5], "info": P(r[6]), "marked": k in mk, "ref": k in refs, "goto": k == goto})
    cols = _colours(entry, nums)
    for row, c in zip(rows, cols or ()):
        if isinstance(c, (tuple, list)) and len(c) == 3 and all(isinstance(x, str) for x in c) and _COLOUR.match(c[1]) and _COLOUR.match(c[2]):
            row["colour"], row["fg"], row["bg"] = printable(c[0]), c[1], c[2]
    return rows


def export_available() -> bool:
    try:
        return importlib.util.find_spec("wirefall.analyzer.pcapng_write") is not None
    except (ImportError, ValueError):
        return False


def export_packets(entry: Entry, numbers: list[int], what: str) -> tuple[bytes, str]:
    """The packets ``numbers`` as a pcapng file (with the key log's secrets in a Decryption
    Secrets Block) through analyzer.pcapng_write, and its file name."""
    import os
    import tempfile

    mod = importlib.import_module("wirefall.analyzer.pcapng_write")
    fd, path = tempfile.mkstemp(prefix="wirefall-export-", suffix=".pcapng")
    os.close(fd)
    try:
        mod.write_pcapng(entry.analysis, list(numbers), path, keys=True)
        with open(path, "rb") as f:
            data = f.read()
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass
    return data, f"{safe_stem(entry.name)}-{what}.pcapng"


def _tree(nodes, depth: int = 0):
    """The detail tree as nested <details>; the top level open, like Wireshark's pane."""
    out: list = []
    for nd in nodes:
        if nd.children:
            out.append(html.Details([html.Summary(printable(nd.label)), html.Div(_tree(nd.children, depth + 1), className="tree-children")],
                                    open=depth == 0, title=nd.abbrev or ""))
        else:
            out.append(html.Div(printable(nd.label), className="tree-leaf", title=nd.abbrev or ""))
    return out


def packet_detail_view(entry: Entry, number: int | None):
    from wirefall.analyzer.detail import hexdump, packet_bytes, packet_detail

    an = entry.analysis
    if not number:
        return html.Div("Select a packet to see its detail.", className="hint")
    number = int(number)
    if not 1 <= number <= an.packets:
        return html.Div(f"There is no packet {number} (the capture has {an.packets}).", className="error")
    nodes = packet_detail(an, entry.source, number)
    data = packet_bytes(entry.source, an, number)[:MAX_HEX_BYTES]
    return html.Div([
        html.H4(f"Packet {number}", id="packet-detail-title"),
        html.Div(_tree(nodes), className="tree"),
        html.Pre("\n".join(hexdump(data)), className="hex"),
    ])


# ----------------------------------------------------------------------------- compare


def compare_available() -> bool:
    try:
        return importlib.util.find_spec("wirefall.analyzer.compare") is not None
    except (ImportError, ValueError):
        return False


def compare_view(a: Entry | None, b: Entry | None):
    """The comparison of two captures (analyzer.compare): the page table in the SPDY
    whitepaper's form, the side-by-side waterfall (ui.compare_figure) when it exists, and
    the matched / unmatched requests."""
    if not compare_available():
        return html.Div("Comparison is not available in this version of wirefall (analyzer.compare is missing).",
                        className="error", id="compare-unavailable")
    if a is None or b is None or a.analysis is None or b.analysis is None:
        return html.Div("Pick two analysed captures.", className="error")
    try:
        mod = importlib.import_module("wirefall.analyzer.compare")
        res = mod.compare(a.analysis, b.analysis)
    except Exception as ex:  # noqa: BLE001 - shown in the page
        return html.Div(f"comparison failed: {ex.__class__.__name__}: {ex}", className="error")
    if not isinstance(res, dict):
        return html.Pre(str(res)[:20000])
    parts: list = [html.H3(f"A = {a.name}    B = {b.name}")]
    # each side as `wirefall compare` heads it: its page's requests, and "its page INCOMPLETE: …"
    # when a capture cut before the load ended (analyzer.compare.side_line / side_incomplete)
    for s in ("a", "b"):
        f = res.get(s)
        if isinstance(f, dict):
            parts.append(html.Div(printable(mod.side_line(s.upper(), f)), id=f"compare-side-{s}",
                                  className="error" if mod.side_incomplete(f) else "hint"))
    # the verdict, as `wirefall compare` and the TUI print it above the page table (analyzer.compare.verdict):
    # who got its last response byte sooner and by how much, where each side's time went, how alike the loads are
    verdict = getattr(mod, "verdict", None)
    if verdict is not None:
        parts.append(html.Div([html.P(printable(text), className=f"verdict-{kind}",
                                      style={"fontWeight": "bold"} if kind in ("winner", "load_event") else None)
                               for kind, text in verdict(res)], id="compare-verdict"))
    for w in res.get("warnings") or ():
        parts.append(html.Div("warning: " + printable(w), className="error"))
    table = page_table(mod, res)
    if table:
        head, rows = table[0], table[1:]
        notes = getattr(mod, "PAGE_NOTES", None) or ["(A − B) / A: the load time's speedup, as the SPDY whitepaper defines it; "
                                                     "a count's or a size's saving"]
        parts += [html.H4("Page"),
                  html.Table([html.Thead(html.Tr([html.Th(h) for h in head])),
                              html.Tbody([html.Tr([html.Td(printable(r[0].strip()), className="k",
                                                           style={"paddingLeft": f"{6 + 8 * _indent(r[0])}px"} if _indent(r[0]) else None),
                                                   *[html.Td(printable(c.strip()), style={"textAlign": "right"}) for c in r[1:]]])
                                          for r in rows])], className="grid", id="compare-page"),
                  html.Div([html.P(printable(n), className="note") for n in notes], id="compare-page-notes")]
        lines = mod.withheld_lines(res)
        if lines:  # why the difference and saving cells say "withheld": the CLI's lines under its table
            parts.append(html.Div([html.P(printable(w)) for w in lines], className="error", id="compare-withheld"))
    try:
        from wirefall.ui.compare_figure import compare_figure

        fig = compare_figure(a.analysis, b.analysis, res)
        fig.update_layout(width=None, autosize=True)
        parts.append(dcc.Graph(id="compare-fig", figure=fig, config={"displaylogo": False}))
    except Exception:  # noqa: BLE001 - the tables alone still compare
        pass
    ms = lambda v: "–" if v is None else f"{1000 * v:.1f}"  # noqa: E731
    # a response cut by the capture's end: its bytes "≥ N", as the CLI (analyzer.compare.bytes_cell)
    nb = mod.bytes_cell
    matched = res.get("matched")
    if isinstance(matched, list):
        mode = "URL" if res.get("match_mode") == "url" else "path and query"
        head = ["url", "status A", "status B", "start A ms", "start B ms", "TTFB A ms", "TTFB B ms", "duration A ms", "duration B ms",
                "bytes A", "bytes B"]
        body = []
        for m in matched[:2000]:
            x, y = m.get("a", {}), m.get("b", {})
            body.append(html.Tr([html.Td(printable(m.get("url")))] + [html.Td(v) for v in (
                x.get("status"), y.get("status"), ms(x.get("start")), ms(y.get("start")), ms(x.get("ttfb")), ms(y.get("ttfb")),
                ms(x.get("duration")), ms(y.get("duration")), nb(x), nb(y))]))
        parts += [html.H4(f"Matched requests ({len(matched)}, by {mode})"),
                  html.Table([html.Thead(html.Tr([html.Th(h) for h in head])), html.Tbody(body)], className="grid", id="compare-matched")]
    for key, title in (("only_a", "Only in A"), ("only_b", "Only in B"),
                       ("background_a", "Background in A (not the page's: not compared)"),
                       ("background_b", "Background in B (not the page's: not compared)")):
        items = res.get(key)
        if isinstance(items, list):
            parts.append(html.H4(f"{title} ({len(items)})"))
            if items:
                parts.append(_records_table(items, id=f"compare-{key}"))
    return html.Div(parts, id="compare-result")


def _indent(label: str) -> int:
    """A page-table label's level (the text table indents a row under its row by two spaces)."""
    return (len(label) - len(label.lstrip(" "))) // 2


def page_table(mod, res: dict) -> list[list[str]]:
    """The whitepaper page table of the comparison ``res`` as ``wirefall compare`` prints it
    (``analyzer.compare.page_table``): the header, then one row per quantity — label, A, B,
    B − A, (A − B) / A — each cell the CLI's text (``+96.5 pt``, ``+3,724``, ``≥ 0.098``, ``–``):
    one formatter, never a second (the page showed a difference of two percentages as "96.5 %",
    and unsigned, where the CLI says "+96.5 pt")."""
    return [list(map(str, r)) for r in mod.page_table(res)]


_SECONDS_KEYS = ("start", "end", "ttfb", "duration", "time", "connect", "wait", "receive")


def _plainstr(v, key: str = "") -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        last = key.rsplit(".", 1)[-1]
        if any(last == k or last.endswith("_" + k) or last.startswith(k) for k in _SECONDS_KEYS):
            return f"{1000 * v:.1f}"  # seconds → ms, as the matched table
        return f"{v:.6g}"
    if isinstance(v, (dict, list)):
        return printable(json.dumps(v, default=str))
    return "" if v is None else printable(v)


def _col_title(k: str) -> str:
    last = k.rsplit(".", 1)[-1]
    return f"{k} ms" if any(last == s or last.endswith("_" + s) or last.startswith(s) for s in _SECONDS_KEYS) else k


def _flatten(d: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(d, dict):
        return {prefix or "value": d}
    out: dict[str, Any] = {}
    for k, v in d.items():
        kk = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, dict):
            out.update(_flatten(v, kk))
        else:
            out[kk] = v
    return out


def _records_table(items: list, id: str):
    recs = [_flatten(x) for x in items[:2000]]
    cols: list[str] = []
    for r in recs:
        for k in r:
            if k not in cols:
                cols.append(k)
    return html.Table([html.Thead(html.Tr([html.Th(_col_title(c)) for c in cols])),
                       html.Tbody([html.Tr([html.Td(_plainstr(r.get(c), c)) for c in cols]) for r in recs])], className="grid", id=id)


# ------------------------------------------------------------------------------ export


def safe_stem(name: str) -> str:
    stem = name.replace("\\", "/").rsplit("/", 1)[-1]
    for ext in (".gz", ".xz", ".bz2", ".zst"):
        if stem.endswith(ext):
            stem = stem[: -len(ext)]
    stem = re.sub(r"\.(pcapng|pcap|cap)$", "", stem)
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", stem).strip("._")
    return stem or "capture"


def export_bytes(entry: Entry, view: View, fmt: str, x_range: list | None = None) -> tuple[bytes, str]:
    """The bytes and file name of an export of what is shown: the filtered (and zoomed)
    waterfall as png/svg/html, or the filtered requests as HAR / wirefall JSON; qlog: the
    capture's QUIC connections (what qvis reads)."""
    from wirefall.analyzer import export as ex
    from wirefall.ui import figures

    if fmt not in EXPORT_FORMATS:
        raise ValueError(f"unknown export format {fmt!r}")
    stem = safe_stem(entry.name)
    shown = set(view.exchange_ids)
    if fmt in ("png", "svg", "html"):
        fig = figure(view, title=entry.name, x_range=x_range, for_export=True, fmt_html=fmt == "html")
        if fmt == "html":
            data = figures.html_document(fig, entry.name)  # (offline, titled "wirefall — NAME")
        else:
            data = figures.to_image(fig, fmt)
        return data, f"{stem}-waterfall.{fmt}"
    an = entry.analysis
    if fmt == "qlog":  # per QUIC connection, not per request: every QUIC connection, as `wirefall export -o X.qlog`
        doc = ex.qlog(an)
        doc["title"] = f"wirefall {entry.name}"
        if view.expr or len(shown) != view.total:
            doc["description"] += "; every QUIC connection of the capture (the waterfall's filter does not apply to a qlog)"
    elif fmt == "har":
        doc = ex.har(an)
        log = doc["log"]
        log["entries"] = [e for e in log["entries"] if e.get("_exchange") in shown]
        for p in log.get("pages", []):
            p["title"] = entry.name
        if view.expr or len(shown) != view.total:
            log["comment"] = log.get("comment", "") + f"; {len(shown)} of {view.total} requests shown" + (f", filter: {view.expr}" if view.expr else "")
    else:
        doc = ex.model_json(an)
        doc["summary"]["file"] = entry.name
        conn_streams = {(e.connection, e.stream_id) for e in an.exchanges if e.id in shown}
        conns = {c for c, _ in conn_streams}
        doc["exchanges"] = [e for e in doc["exchanges"] if e["id"] in shown]
        doc["frames"] = [f for f in doc["frames"] if f["connection"] in conns and
                         (f["stream_id"] in (None, 0) or (f["connection"], f["stream_id"]) in conn_streams)]
        doc["waterfall"] = view.waterfall.to_dict()
        doc["view"] = {"filter": view.expr or None, "exchanges": sorted(shown), "shown": len(shown), "total": view.total}
    return json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False, default=str).encode("utf-8"), f"{stem}.{fmt}"
