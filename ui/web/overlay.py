"""Browser logs laid over a capture in the web app (``wirefall web CAP --netlog F``, or a
HAR / NetLog / qlog uploaded beside the open capture), and the request detail's section
that lists, per phase, the wire's time, the browser's and their difference, and each
field with its source — the typed rows of ``analyzer.browserlog.comparison``, formatted
here as the TUI formats them (``ui.tui.overlay``).

Hooks in the rest of the app (one or two lines each): ``state.WebState._run`` calls
``apply_overlays``; ``views.detail_layout`` appends ``browser_section``; ``app.layout``
puts ``upload_controls()`` in its upload bar and ``app.create_app`` calls ``register``.

An uploaded browser log is staged through the capture upload route (which already takes a
HAR, NetLog or qlog: one opened that way stands alone); "Lay over the open capture" then
opens the open capture again (from the analysis cache) with the log laid over it, as a new
entry, as adding a key log does.
"""
from __future__ import annotations

import os

from dash import Input, Output, State, dcc, html, no_update

from wirefall.analyzer.browserlog import comparison as cmp
from wirefall.analyzer.safetext import printable

SOURCE_COLORS = {"wire": "#2e7d32", "browser": "#1565c0", "inferred": "#e65100"}


# --------------------------------------------------------------------------- analysis


def apply_overlays(an, entry, limits: dict | None = None) -> None:
    """Lay ``entry.overlays`` — ``(kind, path, shown name)`` — over ``an`` (in place); a log
    that cannot be read raises ``BrowserLogError`` naming it by its shown name."""
    from wirefall.analyzer.browserlog import BrowserLogError, overlay

    for kind, path, name in entry.overlays:
        try:
            overlay(an, path, kind=kind, limits=limits)
        except BrowserLogError as ex:
            raise BrowserLogError(str(ex).replace(path, name)) from None
    names = {path: name for _k, path, name in entry.overlays}  # the page shows the names it was given, never upload paths
    for s in cmp.overlays(an):
        s["file"] = names.get(s.get("file"), s.get("file"))
    for e in an.exchanges:
        b = e.browser
        if isinstance(b, dict) and b.get("file") in names:
            b["file"] = names[b["file"]]
    for i, w in enumerate(an.warnings):
        for path, name in names.items():
            if path in w:
                an.warnings[i] = w = w.replace(path, name)


def lay_over(state, eid: str | None, token: str | None):
    """The open capture ``eid`` opened again with the staged browser log ``token`` laid over
    it: the new entry.  Raises ``UploadError`` with a message for the page."""
    from wirefall.analyzer.browserlog import kind_of

    from .state import UploadError

    e = state.get(eid)
    if e is None:
        raise UploadError("open a capture first (the browser log is laid over the open capture)")
    st = state._staged.get(token or "")
    if st is None or st[0] != "capture":
        raise UploadError("the browser log upload was not found; upload it again")
    _kind, path, name, _size = st
    kind = kind_of(path)
    if kind is None:
        raise UploadError(f"{name} is not a browser log (HAR, Chrome NetLog or qlog)")
    if e.analysis is not None and e.analysis.source != "capture":
        raise UploadError(f"{e.name} is a browser log itself: lay {name} over a capture")
    with state._lock:
        state._opened.add(token)
    n = state.add_file(e.path, keylogs=list(e.keylogs), name=f"{e.name} + {name}", origin=e.origin,
                       keylog_names=list(e.keylog_names), overlays=[*e.overlays, (kind, path, name)])
    n.tokens = [*e.tokens, token]
    if e.origin == "upload":
        with state._lock:
            state._opened.update(e.tokens)
    return n, kind


# ------------------------------------------------------------------------ request detail


def _src(source: str):
    return html.Span(cmp.SOURCE_LABELS[source], className=f"src src-{source}",
                     style={"color": SOURCE_COLORS[source], "fontWeight": 600})


def browser_section(b, t0: float, from_packets: bool) -> list:
    """Components for ``RequestDetail.browser`` (analyzer/request_detail.py): the phases of the
    exchange on the wire and in the browser log, and its fields by source (nothing when no
    browser log speaks of it).  ``t0``: where times count from (``from_packets``: the first
    packet, else the log's start)."""
    if b is None:
        return []
    rows = []
    for r in b.phases:
        w, br, d = cmp.cells(r, t0)
        rows.append(html.Tr([html.Td(r.label), html.Td(w, className="src-wire" if r.wire is not None else ""),
                             html.Td(br, className="src-browser" if r.browser is not None else ""), html.Td(d),
                             html.Td("" if r.wire_packet is None else str(r.wire_packet))]))
    fields = [html.Tr([html.Td(f.label, className="k"), html.Td(_src(f.source)), html.Td(printable(cmp.field_cell(f)), className="v")])
              for f in b.fields]
    what = "Browser log" if b.alone or b.not_sent is not None else "Wire and browser log"
    if b.not_sent is not None:  # (alone or over a capture: no capture has wire times of it)
        note = [html.P(printable(f"No wire times in any capture: the request never reached the network ({b.not_sent.label})."),
                       className="hint", id="detail-browser-note")]
    elif b.alone:
        note = [html.P("No packets: a browser log opened alone. Lay it over a capture of the same load for the wire's times.",
                       className="hint", id="detail-browser-note")]
    else:
        note = []
    return [
        html.H4(f"{what} ({printable(b.label)}; ms from {'the first packet' if from_packets else 'the log start'})"),
        html.Table([html.Thead(html.Tr([html.Th(h) for h in ("phase", "wire", "browser log", "browser − wire", "packet")])),
                    html.Tbody(rows)], className="grid", id="detail-browser"),
        *note,
        html.H4("Fields by source"),
        html.Table([html.Thead(html.Tr([html.Th(h) for h in ("field", "source", "value")])), html.Tbody(fields)],
                   className="headers", id="detail-sources"),
    ]


def summary_lines(an) -> list[str]:
    return [printable(cmp.summary_line(s)) for s in cmp.overlays(an)]


# ---------------------------------------------------------------------------- uploads


def upload_controls() -> list:
    """The upload bar's controls for a browser log (app.layout)."""
    return [
        dcc.Upload(id="up-browserlog", children=html.Div("Upload a browser log to lay over it (HAR, NetLog, qlog; optional)"),
                   className="upload", multiple=False),
        html.Span(id="up-browserlog-msg"),
        html.Button("Lay over the open capture", id="btn-overlay",
                    title="open the capture shown again with the uploaded HAR, Chrome NetLog or qlog laid over it: each request "
                          "matched to the wire's, both timings per phase in the request detail"),
        html.Span(id="overlay-msg"),
        dcc.Store(id="up-browserlog-ok"), dcc.Store(id="staged-browserlog"),
    ]


def cb_stage_log(state, data, limits, previous):
    """The browser log's upload staged (through the capture route) → (staged, message, reset)."""
    from wirefall.analyzer.browserlog import kind_of

    from .app import cb_stage

    st, msg, reset = cb_stage(state, "capture", data, limits, previous)
    if not isinstance(st, dict) or not st.get("token"):
        return st, msg, reset
    staged = state._staged.get(st["token"])
    kind = kind_of(staged[1]) if staged is not None else None
    if kind is None:
        state.discard_staged(st["token"], "capture")
        return None, html.Span(f"{printable(st['name'])} is not a browser log (HAR, Chrome NetLog or qlog); "
                               "a capture is uploaded on the left", className="error"), None
    label = cmp.KIND_LABELS.get(kind, kind)
    return st, html.Span(f"{label}: {printable(st['name'])}", className="status"), None


def cb_lay_over(state, n_clicks, staged, cid):
    if not n_clicks:
        return no_update, no_update
    from .state import UploadError

    try:
        n, kind = lay_over(state, cid, (staged or {}).get("token"))
    except UploadError as ex:
        return no_update, html.Span(str(ex), className="error")
    return n.id, html.Span(f"{cmp.KIND_LABELS.get(kind, kind)} {printable(os.path.basename(n.overlays[-1][2]))} laid over "
                           f"{printable(state.get(cid).name)} as {n.id}", className="status", id="overlay-done")


def register(app, state) -> None:
    """The browser log upload's callbacks (app.create_app)."""
    from .app import SIZE_CHECK_JS

    app.clientside_callback(
        SIZE_CHECK_JS.replace("__KIND__", "capture"),
        Output("up-browserlog-ok", "data"), Input("up-browserlog", "contents"), State("up-browserlog", "filename"),
        State("limits", "data"), State("staged-browserlog", "data"), prevent_initial_call=True,
    )
    app.callback(
        Output("staged-browserlog", "data"), Output("up-browserlog-msg", "children"),
        Output("up-browserlog-ok", "data", allow_duplicate=True),
        Input("up-browserlog-ok", "data"), State("limits", "data"), State("staged-browserlog", "data"), prevent_initial_call=True,
    )(_named("cb_stage_browserlog", lambda d, lim, prev: cb_stage_log(state, d, lim, prev)))
    app.callback(
        Output("capture", "value", allow_duplicate=True), Output("overlay-msg", "children"),
        Input("btn-overlay", "n_clicks"), State("staged-browserlog", "data"), State("capture", "value"), prevent_initial_call=True,
    )(_named("cb_lay_over", lambda n, st, cid: cb_lay_over(state, n, st, cid)))


def _named(name: str, f):
    f.__name__ = f.__qualname__ = name
    return f
