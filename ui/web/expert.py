"""The web app's Expert tab: Wireshark's Expert Information of the open capture.

A line of counts per severity and a ``dash_ag_grid.AgGrid`` of the items
(``analyzer.expert.compute``: packet, connection, severity, group, protocol, summary),
coloured by severity, sortable and filterable; a click on a row with a packet opens that
packet in the Packets tab (through the tab's "go to packet" box).  ``tab()`` is the layout,
``register(app, state, ready)`` binds the callbacks; ``cb_expert`` and ``cb_expert_go`` are
plain functions the tests call.
"""
from __future__ import annotations

from dash import Input, Output, State, dcc, html, no_update

from wirefall.analyzer.safetext import printable

MAX_ROWS = 50_000  # rows sent to the browser (the CLI's `wirefall expert FILE --json` lists all)


def header_width(name: str) -> int:
    """The width (px) that shows the header ``name`` whole: about 10 px a character of the
    theme's bold header font, and 72 px of padding, filter button and sort arrow (narrower,
    the headers read "pac…", "seve…", or "severi…" once sorted)."""
    return 10 * len(name) + 72


def _col(field: str, header: str, **kw) -> dict:
    """A column no narrower than its header (``header_width``)."""
    w = header_width(header)
    return {"field": field, "headerName": header, "width": w, **kw, "minWidth": max(kw.get("minWidth", 0), w)}


COLUMNS = [
    _col("packet", "packet", type="numericColumn"),
    _col("connection", "conn", type="numericColumn"),
    _col("severity", "severity"),
    _col("group", "group"),
    _col("protocol", "protocol"),
    _col("summary", "summary", flex=1, minWidth=400),
]
SEVERITY_COLOURS = {"error": "#ffcdd2", "warning": "#fff3c4", "note": "#e1f5fe", "chat": "#f5f5f5", "comment": "#e8f5e9"}
ROW_STYLE = {"styleConditions": [{"condition": f"params.data.severity === '{s}'", "style": {"backgroundColor": c}}
                                 for s, c in SEVERITY_COLOURS.items()]}


def tab() -> dcc.Tab:
    import dash_ag_grid as dag

    return dcc.Tab(label="Expert", value="expert", children=html.Div([
        html.Div(id="expert-counts", className="bar"),
        dag.AgGrid(id="expert-grid", columnDefs=COLUMNS, rowData=[], getRowStyle=ROW_STYLE,
                   defaultColDef={"sortable": True, "filter": True, "resizable": True},
                   dashGridOptions={"rowSelection": "single", "animateRows": False},
                   style={"height": "70vh", "width": "100%"}, className="ag-theme-alpine"),
    ], className="tabpane"))


def expert_items(entry) -> list:
    """The analysis's items (computed once per capture: the entry's memo)."""
    from wirefall.analyzer import expert

    return entry.memo(("expert",), lambda: expert.compute(entry.analysis))


def rows(items: list) -> list[dict]:
    from wirefall.analyzer import expert

    out = []
    for it in items[:MAX_ROWS]:
        d = expert.item_dict(it)
        d["summary"] = printable(d["summary"])
        d["protocol"] = printable(d["protocol"])
        out.append(d)
    return out


def counts_view(items: list) -> list:
    from wirefall.analyzer import expert

    parts: list = []
    for sev, n in expert.counts(items).items():
        parts.append(html.Span(f"{expert.SECTION[sev]}: {n:,}", className="status",
                               style={"background": SEVERITY_COLOURS.get(sev.label.lower(), "#fff"), "padding": "2px 8px"}))
    if len(items) > MAX_ROWS:
        parts.append(html.Span(f"the first {MAX_ROWS:,} of {len(items):,} items are listed (wirefall expert FILE --json lists all)",
                               className="hint"))
    parts.append(html.Span("click an item to open its packet", className="hint"))
    return parts


def cb_expert(entry, tab):
    """(counts, rows) of the Expert tab for ``entry`` (a finished analysis, or None)."""
    if tab != "expert":
        return no_update, no_update
    if entry is None:
        return [html.Span("no capture analysed", className="hint")], []
    try:
        items = expert_items(entry)
    except Exception as ex:  # noqa: BLE001 - an error line, never a broken page
        return [html.Span(printable(f"expert information failed: {ex.__class__.__name__}: {ex}"), className="error")], []
    return counts_view(items), rows(items)


def cb_expert_go(cell):
    """A clicked item: (tab, packet to go to), or no change for an item of no packet."""
    data = (cell or {}).get("data") or {}
    pkt = data.get("packet")
    if not isinstance(pkt, int) or pkt <= 0:
        return no_update, no_update
    return "packets", pkt


def register(app, state, ready) -> None:
    """Bind the tab's callbacks (``ready(state, cid)``: the finished entry or None)."""
    def cb_expert_tab(cid, _version, tab):
        return cb_expert(ready(state, cid), tab)

    def cb_expert_click(cell, _cid):
        return cb_expert_go(cell)

    from .app import _named, tab_key_js

    app.clientside_callback(tab_key_js("expert"), Output("expert-key", "data"), Input("capture", "value"), Input("version", "data"),
                            Input("tabs", "value"), State("expert-key", "data"))  # (the tab shown only: ui.web.app.tab_key_js)
    app.callback(Output("expert-counts", "children"), Output("expert-grid", "rowData"),
                 Input("expert-key", "data"), prevent_initial_call=True)(
        _named("cb_expert_tab", lambda k: cb_expert_tab((k or {}).get("capture"), (k or {}).get("version"), "expert")))
    app.callback(Output("tabs", "value", allow_duplicate=True), Output("packet-goto", "value", allow_duplicate=True),
                 Input("expert-grid", "cellClicked"), State("capture", "value"), prevent_initial_call=True)(cb_expert_click)
