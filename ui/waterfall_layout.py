"""Layout decisions of the waterfall shared by every view that draws it — the Plotly figure
(web app, PNG/SVG/HTML exports: ui/figures.py) and the TUI's text waterfall
(ui/tui/widgets.py) — so that they cannot drift: the row label (the host whole —
cut in its middle only when very long —, the path's start, the query elided first), the
duration text, the marker glyphs of the label column, which markers are
ticked on the bar, and the placement of the milestone labels.  Colours, sort and group
orders are data of the model (analyzer/waterfall.py: ``PHASE_COLORS``, ``CONTENT_COLORS``,
``SORTS``, ``GROUPS``).  No plotly, no Textual here.  docs/WATERFALL.md describes it all.
"""
from __future__ import annotations

from wirefall.analyzer.waterfall import (BLOCKED_COLOR, CONTENT_CLASSES, CONTENT_COLORS, GROUPS, IDLE_COLOR, PHASE_COLORS,
                                PHASE_LABELS, PHASES, SEND_COLOR, SORTS, WAIT_COLOR, Row, preconnected)

__all__ = ["BLOCKED_COLOR", "IDLE_COLOR", "CONTENT_CLASSES", "CONTENT_COLORS", "GROUPS", "PHASE_COLORS", "PHASE_LABELS", "PHASES",
           "SEND_COLOR", "SORTS", "WAIT_COLOR", "GLYPHS", "GLYPH_KINDS", "TICK_KINDS", "TICK_COLORS", "elide",
           "short_url", "short_host", "short_path", "registrable", "subset", "glyphs", "duration_text", "row_label", "LABEL_CHARS", "stagger", "phase_colors"]

# Markers drawn as glyphs in the label column, one fixed column each (never on the bars).
GLYPH_KINDS = ("push", "priority", "reset", "stall")
GLYPHS = {"push": "↑", "priority": "◆", "reset": "✕", "stall": "‖"}
GLYPH_MEANING = {"push": "server push", "priority": "priority signal",
                 "reset": "stream reset / cancelled", "stall": "flow-control stall"}
# Markers ticked on the bar at their time (a thin vertical line, the bar still shows under it).
TICK_KINDS = ("retransmission", "out_of_order", "gap")
TICK_COLORS = {"retransmission": "#e31a1c", "out_of_order": "#ff7f00", "gap": "#000000"}
TICK_MEANING = {"retransmission": "TCP retransmission", "out_of_order": "TCP out-of-order segment (a hole filled: quick resend or reordering)",
                "gap": "bytes missing from the capture (lost segment)"}
# the milestones' vertical lines (the figures' dotted lines, the TUI's ┊ columns)
MILESTONE_COLORS = {"first_packet": "#555555", "page_start": "#555555", "html_first_byte": "#2d6fd1", "page_load": "#d62728",
                    "dom_content_loaded": "#8e44ad", "load_event": "#c2185b"}  # (the browser's events: a HAR laid over)
MILESTONE_SHORT = {"html_first_byte": "HTML first byte", "page_load": "last byte", "dom_content_loaded": "DOMContentLoaded",
                   "load_event": "load event"}  # (the TUI's legend; first packet and page start are the axis' origin)
LABEL_CHARS = 44  # host…path text of a row label (the whole label adds the number and glyphs)
SORT_LABELS = {"start": "start time", "duration": "duration", "size": "response size", "host": "host"}
GROUP_LABELS = {None: "no grouping", "connection": "connection", "host": "host"}


def elide(text: str, n: int, keep_start: int) -> str:
    """``text`` cut to ``n`` characters with ``…`` in the middle: ``keep_start`` characters
    of its start kept (fewer if the end needs them), the rest from its end."""
    if len(text) <= n:
        return text
    if n <= 1:
        return "…"[:n]
    a = max(min(keep_start, n - 1), 0)
    b = n - 1 - a
    return text[:a] + "…" + (text[-b:] if b > 0 else "")


def elide_flow(label: str, n: int, keep_start: int) -> str:
    """A connection's ``client → server`` label in ``n`` characters: the client's address
    goes first (its port kept: ``…:40494 → [2600:9000:…]:443``), then the server's middle
    (``elide``).  One ``elide`` of the whole label joined the start of the client's address to
    the end of the server's — with two IPv6 addresses, one address that exists nowhere, the
    arrow gone."""
    if len(label) <= n:
        return label
    client, sep, server = label.partition(" → ")
    if not sep:
        return elide(label, n, keep_start)
    head = f"…:{client.rsplit(':', 1)[-1]}{sep}"
    if len(head) + len(server) <= n:
        return head + server
    if n - len(head) >= 12:  # the client's port and the arrow kept, the server's address cut in its middle
        return head + elide(server, n - len(head), min(keep_start, (n - len(head)) // 2))
    return "→ " + elide(server, max(n - 2, 1), keep_start) if n > 4 else elide(server, n, keep_start)


# second-level labels under which a country's registrable names sit (``example.co.uk``): the
# registrable domain is then three labels (a heuristic, not the Public Suffix List)
_SECOND_LEVEL = frozenset({"co", "com", "net", "org", "gov", "edu", "ac", "ne", "or", "go", "gob", "mil", "nic", "ltd", "plc"})
PATH_SHARE = 4  # a label keeps at least 1/PATH_SHARE of its characters (and 4) for the path, however long the host


def registrable(host: str) -> str:
    """The end of ``host`` that names who owns it (its registrable domain: ``amazon.com`` of
    ``images-na.ssl-images-amazon.com``, ``bbc.co.uk``), with the port when the host has one;
    an address is its own."""
    name, port = host, ""
    if host.startswith("["):  # [v6]:port
        return host
    if host.count(":") == 1 and host.rsplit(":", 1)[1].isdigit():
        name, port = host.rsplit(":", 1)
        port = ":" + port
    labels = name.split(".")
    if len(labels) <= 2 or all(p.isdigit() for p in labels) or ":" in name:
        return host
    k = 3 if len(labels[-1]) == 2 and labels[-2] in _SECOND_LEVEL and len(labels) > 3 else 2
    return ".".join(labels[-k:]) + port


def short_host(host: str, n: int) -> str:
    """``host`` in ``n`` characters: whole when it fits, else cut in its middle keeping both
    ends — its registrable domain (``registrable``) at the end where it fits with a quarter of
    the room left for the start (the distinctive part: ``images-na``, ``1c5c1ecf7303``), else
    half and half; the end begins at a label (``amazon.com``, not ``azon.com``) when one is
    within 3 characters."""
    if len(host) <= n:
        return host
    if n <= 4:
        return elide(host, n, n // 2)
    reg = registrable(host)
    end = len(reg) if len(reg) <= n - 1 - max(3, n // 4) else (n - 1) // 2
    dots = [len(host) - i - 1 for i, ch in enumerate(host) if ch == "."]  # the lengths of the ends that begin at a label
    near = [k for k in dots if abs(k - end) <= 3 and 3 <= n - 1 - k]
    if near and len(reg) > n - 1 - max(3, n // 4):
        end = max(near)
    return elide(host, n, n - 1 - end)


def short_path(path: str, n: int) -> str:
    """``path`` in ``n`` characters, its file kept first (WebPageTest labels a row by host and
    file: the leading directories of a site's assets are the same on every row): the path's
    start, ``…`` and its last segment whole where it fits (``/images/…/csm-captcha.min.js``),
    else ``/…/`` and the segment's start and extension (``/…/csm-captc….min.js``)."""
    if len(path) <= n:
        return path
    if n <= 0:
        return ""
    q = path.endswith("?…")
    bare = path[:-2] if q else path
    cut = bare.rstrip("/")
    at = cut.rfind("/")
    tail = bare[at:] + ("?…" if q else "")  # "/file", "/dir/" or "/file?…"
    if n < 10:  # little room: the file's start and extension (the directories are the same on every row), else the path's
        return "/…" + _short_file(tail[1:], n - 2) if at > 0 and n >= 5 else path[:n - 1] + "…"
    if at <= 0:  # one segment: its start and end
        return elide(path, n, n // 2 + 1)
    if len(tail) + 2 <= n:  # the file whole, the path's start before it (whole directories where one fits)
        head = path[:n - len(tail) - 1]
        k = head.rfind("/")
        return (head[:k + 1] if k > 0 else head) + "…" + tail
    if len(tail) + 1 <= n:  # the file whole, "…" for the directories
        return "…" + tail
    return "/…/" + _short_file(tail[1:], n - 3)  # the segment: its start, "…", its extension


def _short_file(seg: str, m: int) -> str:
    """A path's last segment in ``m`` characters: its start, ``…`` and its end — its extension
    (up to 8 characters) and the two characters before it where there is room (what tells
    ``photo-1.jpg`` from ``photo-2.jpg``), else its last third."""
    dot = seg.rfind(".", 1)
    ext = len(seg) - dot if 0 < dot else 0
    keep_end = min(ext + 2, m - 2) if 0 < ext <= min(8, m - 2) else m // 3
    return elide(seg, m, m - 1 - keep_end)


def short_url(url: str, n: int = LABEL_CHARS) -> str:
    """Host and path in ``n`` characters, WebPageTest-style: the host whole (cut in its middle,
    its registrable domain kept, only when it would leave the path less than a quarter of the
    room: ``short_host``), then the path's start (and its end where there is room:
    ``short_path``); the scheme dropped, and the query first (``?…``: the full URL is in the
    hover and the request view).  ``images-na.ssl-images-amazon.com/images/…_V1_.css``."""
    u = url or "(no URL)"
    if "://" in u:
        u = u.split("://", 1)[1]
    host, slash, path = u.partition("/")
    path = slash + path
    if len(host) + len(path) <= n:
        return host + path
    if "?" in path:
        path = path.split("?", 1)[0] + "?…"
        if len(host) + len(path) <= n:
            return host + path
    path_min = min(len(path), max(4, n // PATH_SHARE))
    if len(host) > n - path_min:  # (a host that must be cut gives more room to the path: 3/5 of it, its registrable end kept)
        host = short_host(host, max(min(n - path_min, max(n * 3 // 5, len(registrable(host)) + 4)), 1))
    return host + short_path(path, n - len(host))


def subset(wf, rows):
    """A waterfall of some of ``wf``'s rows (a filtered view), re-indexed from 0 in their
    order, push arrows kept where both ends are, the connection view of those rows; ``wf``
    itself when every row is kept.  Its figure takes ``wf`` as ``unfiltered`` to keep the
    rows' own numbers (``figures.waterfall_figure``)."""
    import dataclasses

    if len(rows) == len(wf.rows):
        return wf
    new_index = {r.index: i for i, r in enumerate(rows)}
    out = [dataclasses.replace(r, index=i, push_parent_row=new_index.get(r.push_parent_row) if r.push_parent_row is not None else None)
           for i, r in enumerate(rows)]
    shown = {r.connection for r in out}
    conn_rows = []
    for c in wf.connection_rows:
        reqs = [(new_index[i], a, b) for i, a, b in c.requests if i in new_index]
        if reqs:
            conn_rows.append(dataclasses.replace(c, requests=reqs))
    return dataclasses.replace(wf, rows=out, connections={k: v for k, v in wf.connections.items() if k in shown},
                               connection_rows=conn_rows)


def glyphs(r: Row) -> str:
    """The marker column of a row: one character per ``GLYPH_KINDS`` (space when absent)."""
    kinds = {m.kind for m in r.markers}
    return "".join(GLYPHS[k] if k in kinds else " " for k in GLYPH_KINDS)


def duration_text(seconds: float | None) -> str:
    """A row's total time: whole ms from 100 ms, one decimal from 1 ms, two below."""
    if seconds is None:
        return ""
    ms = seconds * 1000.0
    if ms >= 100:
        return f"{ms:.0f} ms"
    if ms >= 1:
        return f"{ms:.1f} ms"
    return f"{ms:.2f} ms"


def row_duration_text(r) -> str:
    """The text beside a row's bar: its total (``duration_text``), but for a request sent on a
    connection set up ``PRECONNECT_IDLE`` or more before it (a preconnect, or a connection raced
    for another request) the request's own time first and the connection's lead after it —
    ``25.3 ms (+253 ms preconnect)`` —, as its HAR entry and WebPageTest give it: the total
    was what a reader quoted of the document (a review: 278 ms where the request took 25)."""
    own = preconnected(r.phases) if r.start is not None and r.end is not None else None
    if own is None:
        return duration_text(r.duration)
    t = r.phases[own][1]
    mine = (round(r.end * 1e6) - round(t * 1e6)) / 1e6
    lead = (round(t * 1e6) - round(r.start * 1e6)) / 1e6
    return f"{duration_text(mine)} (+{duration_text(lead)} preconnect)"


def row_label(r: Row, n: int = LABEL_CHARS, number_width: int = 4, number: int | None = None) -> str:
    """``  12 ◆  h2   host/path…``: row number (``number``, else the row's place + 1: a
    filtered view's rows keep the numbers of the unfiltered one), the glyph column, the badge,
    the short URL (plain text: the figure escapes it, the TUI makes it printable)."""
    return f"{r.index + 1 if number is None else number:>{number_width}} {glyphs(r)} {r.badge[:8]:<8} {short_url(r.url, n):<{n}}"


def phase_colors(r: Row) -> dict[str, str]:
    """The colours a row is drawn in; ``receive`` is the light download colour where the row
    has chunks (their bursts are drawn dark on top), else the dark one."""
    c = dict(r.colors)
    if r.chunks and "light" in c:
        c["receive"] = c["light"]
    c["chunk"] = r.colors.get("receive", "#8c8c8c")
    return c


def stagger(items: list[tuple[float, float]], left: float, right: float, pad: float = 8.0) -> list[tuple[int, str]]:
    """Rows and anchors of labels so that none overlaps another: ``items`` are (x, width) in
    pixels, the label to start at x (``"left"`` anchor), or to end at x (``"right"``) where
    it would pass ``right``; each label goes into the first row where it clashes with no
    label already placed.  Returns (row, anchor) per item."""
    placed: list[list[tuple[float, float]]] = []
    out: list[tuple[int, str]] = []
    for x, w in items:
        anchor = "left"
        a, b = x, x + w
        if b > right:
            anchor, a, b = "right", x - w, x
        if a < left:
            anchor, a, b = "left", max(x, left), max(x, left) + w
        row = 0
        while True:
            if row == len(placed):
                placed.append([])
            if all(b + pad <= pa or a >= pb + pad for pa, pb in placed[row]):
                placed[row].append((a, b))
                break
            row += 1
        out.append((row, anchor))
    return out
