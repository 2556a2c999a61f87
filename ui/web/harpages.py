"""A HAR of several pages in the web app: which page is shown, and a menu to show another.

A HAR opened alone shows one of its pages (``analyzer.browserlog.pages``: the first with an
entry, or the one asked for — the CLI's ``--har-page N|all``).  The page says so in its
status line (``notice_lines``: the CLI's note, ``comparison.page_notices``) and the header
has a "HAR page" menu (``controls``) when the HAR names two pages or more.  Choosing a page
opens the same file again with that page (``Entry.har_page``, passed to the analysis as
``limits["har_page"]``, as ``--har-page`` is) as an entry of its own, or goes back to the
entry that shows it already — as adding a key log or a browser log does.

Hooks in the rest of the app: ``app.cb_poll`` appends ``notice_lines``, ``app.layout`` puts
``controls()`` in the header and ``app.create_app`` calls ``register``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from dash import Input, Output, State, dcc, html, no_update

from wirefall.analyzer.safetext import printable

ALL = 0  # the menu's value for every page (analyzer.browserlog.pages.ALL)


@dataclass
class HarPages:
    shown: int  # the page shown (1-based), ALL for every page
    pages: list[dict] = field(default_factory=list)  # {"number", "title", "entries" (None: not known)}


def _har_log(an) -> dict | None:
    """The browser log a HAR opened alone was read from (its ``an.browser["logs"]`` record)."""
    if an is None or getattr(an, "source", None) != "har":
        return None
    b = getattr(an, "browser", None)
    logs = b.get("logs") if isinstance(b, dict) else None
    return next((s for s in logs or () if isinstance(s, dict) and s.get("kind") == "har" and "matched" not in s), None)


def pages_of(an) -> HarPages | None:
    """The pages of the HAR ``an`` was opened from and the one shown; None unless it is a HAR
    opened alone that names two pages or more."""
    s = _har_log(an)
    if s is None:
        return None
    shown = s.get("page_shown")
    if isinstance(shown, dict) and isinstance(shown.get("number"), int):
        pages = [{"number": shown["number"], "title": shown.get("title"), "entries": shown.get("entries")}]
        pages += [{"number": o.get("number"), "title": o.get("title"), "entries": o.get("entries")}
                  for o in shown.get("other_pages") or () if isinstance(o, dict) and isinstance(o.get("number"), int)]
        return HarPages(shown["number"], sorted(pages, key=lambda p: p["number"]))
    n = s.get("pages_in_log")
    if not isinstance(n, int) or n < 2:
        return None
    b = an.browser if isinstance(an.browser, dict) else {}
    titles = [p.get("title") if isinstance(p, dict) else None for p in b.get("pages") or ()]
    return HarPages(ALL, [{"number": k, "title": titles[k - 1] if k <= len(titles) else None, "entries": None} for k in range(1, n + 1)])


def notice_lines(an) -> list[str]:
    """What the status line says of a HAR of several pages: the CLI's note ("HAR has 2 pages;
    showing page 1 …", ``comparison.page_notices``), or, every page shown, that it is."""
    from wirefall.analyzer.browserlog.comparison import page_notices

    lines = [printable(n) for n in page_notices(an)]
    hp = pages_of(an)
    if not lines and hp is not None and hp.shown == ALL:
        s = _har_log(an) or {}
        lines.append(f"HAR has {len(hp.pages)} pages; showing every page ({s.get('sent', len(an.exchanges))} entries)")
    return lines


def _option(p: dict) -> dict:
    from wirefall.analyzer.browserlog.pages import page_name

    n = p.get("entries")
    what = f" ({n} entr{'y' if n == 1 else 'ies'})" if isinstance(n, int) else ""
    return {"label": printable(page_name(p["number"], p.get("title")) + what), "value": p["number"]}


def options_of(hp: HarPages) -> list[dict]:
    return [_option(p) for p in hp.pages] + [{"label": "every page", "value": ALL}]


def controls():
    """The header's "HAR page" menu (shown for a HAR of several pages only)."""
    return [html.Div([html.Span("HAR page", className="status"),
                      dcc.Dropdown(id="har-page", options=[], value=None, clearable=False,
                                   style={"minWidth": "420px", "color": "#222"})],
                     id="har-page-bar", style={"display": "none"}, className="har-page-bar",
                     title="a HAR of several pages (WebPageTest's runs, DevTools' preserved log) shows one; "
                           "choose another (as the command line's --har-page N|all)"),
            html.Span(id="har-page-msg", className="status")]


def cb_har_menu(state, cid, _version):
    """The menu's options, its value (the page shown) and its style, for capture ``cid``."""
    e = state.get(cid)
    hp = pages_of(e.analysis) if e is not None and e.status == "done" else None
    if hp is None:
        return [], None, {"display": "none"}
    return options_of(hp), hp.shown, {"display": "flex", "gap": "8px", "alignItems": "center"}


def _shows(e) -> int | None:
    """The HAR page entry ``e`` shows (asked for, or the one its analysis shows)."""
    if e.har_page is not None:
        return e.har_page
    hp = pages_of(e.analysis) if e.status == "done" else None
    return hp.shown if hp is not None else None


def choose(state, page, cid):
    """Page ``page`` of capture ``cid``'s HAR chosen: the entry that shows it (made and
    analysed when there is none yet) and a message; no change when ``cid`` shows it."""
    e = state.get(cid)
    if e is None or e.status != "done" or not isinstance(page, int) or isinstance(page, bool) or page < 0:
        return no_update, no_update
    hp = pages_of(e.analysis)
    if hp is None or page == hp.shown:
        return no_update, no_update
    if page != ALL and page not in {p["number"] for p in hp.pages}:
        return no_update, html.Span(f"the HAR has no page {page}", className="error")
    what = "every page" if page == ALL else f"page {page}"
    for x in state.list():
        if (x is not e and x.path == e.path and x.keylogs == e.keylogs and x.overlays == e.overlays and x.status != "error"
                and _shows(x) == page):
            return x.id, html.Span(f"{printable(x.name)}: {what} is open as {x.id}", className="status", id="har-page-done")
    n = state.add_file(e.path, keylogs=list(e.keylogs), name=e.name, origin=e.origin, keylog_names=list(e.keylog_names),
                       overlays=list(e.overlays), har_page=page)
    n.tokens = list(e.tokens)
    if e.origin == "upload" and e.tokens:
        with state._lock:
            state._opened.update(e.tokens)
    return n.id, html.Span(f"{printable(e.name)}: {what} opened as {n.id}", className="status", id="har-page-done")


def register(app, state) -> None:
    """The menu's callbacks (app.create_app)."""
    from .overlay import _named

    app.callback(Output("har-page", "options"), Output("har-page", "value"), Output("har-page-bar", "style"),
                 Input("capture", "value"), Input("version", "data"))(
        _named("cb_har_menu", lambda cid, ver: cb_har_menu(state, cid, ver)))
    app.callback(Output("capture", "value", allow_duplicate=True), Output("har-page-msg", "children"),
                 Input("har-page", "value"), State("capture", "value"), prevent_initial_call=True)(
        _named("cb_har_page", lambda page, cid: choose(state, page, cid)))
