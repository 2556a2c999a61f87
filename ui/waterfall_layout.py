"""Layout decisions of the waterfall shared by every view that draws it — the Plotly figure
(web app, PNG/SVG/HTML exports: ui/figures.py) and the TUI's text waterfall
(ui/tui/widgets.py) — so that they cannot drift: the row label (host and file, the file
kept before the host, the query and the directories elided first: ``short_url``), the
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
           "short_url", "short_host", "short_path", "registrable", "subset", "glyphs", "duration_text", "row_duration_text", "short_duration_text",
           "start_unknown", "START_UNKNOWN", "row_label", "row_label_fixed", "badge_width", "BADGE_CHARS",
           "host_floor", "url_chars_needed", "LABEL_CHARS", "stagger", "phase_colors"]

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
# (the browser's events, a HAR laid over, in WebPageTest's hues — DOMContentLoaded magenta, load blue: the load event was
# crimson beside the last byte's red, DOMContentLoaded purple beside the TLS phase's — and apart from the HTML's blue)
MILESTONE_COLORS = {"first_packet": "#555555", "page_start": "#555555", "html_first_byte": "#2d6fd1", "page_load": "#d62728",
                    "dom_content_loaded": "#cc3399", "load_event": "#0b8fb3", "start_render": "#28a745"}  # (Start Render: WPT's green)
MILESTONE_SHORT = {"html_first_byte": "HTML first byte", "page_load": "last byte", "dom_content_loaded": "DOMContentLoaded",
                   "load_event": "load event", "start_render": "Start Render"}  # (the TUI's legend; first packet and page start are the axis' origin)
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
    half and half; the end begins at a label or a word of one (``amazon.com``, not ``azon.com``)
    when one is within 3 characters, and the start does not end in a dot (``images-na…``)."""
    if len(host) <= n:
        return host
    if n <= 4:
        return elide(host, n, n // 2)
    reg = registrable(host)
    end = len(reg) if len(reg) <= n - 1 - max(3, n // 4) else (n - 1) // 2
    # the lengths of the ends that begin at a label, or at a word of one (``amazon.com`` of ``ssl-images-amazon.com``)
    dots = [len(host) - i - 1 for i, ch in enumerate(host) if ch in ".-"]
    near = [k for k in dots if abs(k - end) <= 3 and 3 <= n - 1 - k]
    if near and len(reg) > n - 1 - max(3, n // 4):
        end = max(near)
    start = host[:n - 1 - end]
    return (start[:-1] if start.endswith(".") else start) + "…" + host[len(host) - end:]  # (``images-na…``, not ``images-na.…``)


def short_path(path: str, n: int) -> str:
    """``path`` in ``n`` characters, its file kept first (WebPageTest labels a row by host and
    file: the leading directories of a site's assets are the same on every row): the path's
    start, ``…`` and its last segment whole where it fits (``/images/…/csm-captcha.min.js``),
    else ``/…/`` and the segment's start and extension (``/…/csm-captc….min.js``)."""
    if len(path) <= n:
        return path
    if n <= 0:
        return ""
    at, tail = _tail(path)
    if n < 10:  # little room: the file's start and extension (the directories are the same on every row), else the path's
        return "/…" + _short_file(tail[1:], n - 2) if at > 0 and n >= 5 else path[:n - 1] + "…"
    if at <= 0:  # one segment: its start and end
        return "/" + _short_file(path[1:], n - 1) if path.startswith("/") else elide(path, n, n // 2 + 1)
    if len(tail) + 2 <= n:  # the file whole, the path's whole directories before it where one fits (``/images/…/x.js``, not ``/im…/x.js``)
        head = path[:n - len(tail) - 1]
        k = head.rfind("/")
        return (head[:k + 1] if k > 0 else "/") + "…" + tail
    if len(tail) + 1 <= n:  # the file whole, "…" for the directories
        return "…" + tail
    return "/…/" + _short_file(tail[1:], n - 3)  # the segment: its start, "…", its extension


def _tail(path: str) -> tuple[int, str]:
    """Where ``path``'s last segment begins (its ``/``; 0 or -1: the path is one segment) and
    that segment with its ``/`` (``/file``, ``/dir/``, ``/file?…``)."""
    q = path.endswith("?…")
    bare = path[:-2] if q else path
    at = bare.rstrip("/").rfind("/")
    return at, bare[at:] + ("?…" if q else "")


FILE_START = 6  # a shortened file name keeps at least this much of its start (what tells rows apart) before its end


def _short_file(seg: str, m: int) -> str:
    """A path's last segment in ``m`` characters: its start, ``…`` and its end — its extension
    (up to 8 characters) and the two characters before it where that leaves ``FILE_START`` of its
    start — 2 of a short numbered name's (what tells ``photo-1.jpg`` from ``photo-2.jpg``) —, more
    of its end in more room (a third of it, up to 6 before the extension, from a ``.``, ``-`` or
    ``_``: ``csm-captcha-inst….min.js``), the extension alone where it leaves 4 (``csm-ca….js``:
    the start tells the rows apart, ``cs…in.js`` did not), else its last third; the query's ``?…``
    is its end, when it has one."""
    if len(seg) <= m:
        return seg
    if m <= 1:
        return "…"[:m]
    if seg.endswith("?…") and m >= 6:  # (the name's start, then "…": the query is the least of it)
        return seg[:m - 1] + "…"
    dot = seg.rfind(".", 1)
    ext = len(seg) - dot if 0 < dot else 0
    numbered = 0 < dot <= 8 and seg[dot - 1].isdigit()  # (photo-1.jpg, icon-2.png: told apart by their end)
    if 0 < ext <= 8 and m - 1 - (ext + 2) >= (2 if numbered else FILE_START):
        more = min((m - 1) // 3, ext + 6, m - 1 - FILE_START)
        keep_end = ext + 2
        if more > keep_end:  # (from a separator where one is within 2 characters: ".min.js", "._V2_.js", not "n.min.js")
            cut = next((j for j in range(len(seg) - more, len(seg) - more + 3) if seg[j] in "._-"), None)
            keep_end = len(seg) - cut if cut is not None and len(seg) - cut > keep_end else more
    elif 0 < ext <= 8 and m - 1 - ext >= min(4, len(seg) - ext):
        keep_end = ext
    else:
        keep_end = m // 3
    return elide(seg, m, m - 1 - keep_end)


FILE_WHOLE = 12  # a file name this short is kept whole before the host is (``favicon.ico``, ``photo-1.jpg``)
FILE_MIN = 11  # characters of a long file name a label keeps at least before its host (10 of the name and its "…")
HOST_BOTH_ENDS = 9  # a host given fewer characters keeps its start alone (``images…/csm-capt….js``), not both ends
HOST_START = 6  # a host cut to its floor keeps this much of its start (``1c5c1e…awswaf.com``: what tells a domain's hosts apart)


def _cut_host(host: str, room: int, n: int) -> str:
    """``host`` cut (``short_host``) to at most ``room`` characters of an ``n``-character label:
    3/5 of the label, or its registrable domain and 4 more where that is longer."""
    return short_host(host, max(min(room, max(n * 3 // 5, len(registrable(host)) + 4)), 1))


def host_floor(host: str) -> str:
    """The least a label with room cuts ``host`` to: its start (``HOST_START`` characters, its
    first label where that is shorter), ``…`` and its registrable domain whole
    (``1c5c1e…awswaf.com``) — the whole host where that would save fewer than 4 characters
    (``images-na.ssl-images-amazon.com``: its registrable domain is ``ssl-images-amazon.com``)."""
    reg = registrable(host)
    start = host[:min(len(host.split(".", 1)[0]), HOST_START)]
    cut = start + "…" + reg
    return host if reg == host or len(cut) > len(host) - 4 else cut


def _host_in(host: str, m: int) -> str:
    """``host`` in ``m`` characters, ``m`` at least its floor's (``host_floor``): its start, ``…``
    and its registrable domain whole (the start not ending in the label's dot)."""
    if len(host) <= m:
        return host
    reg = registrable(host)
    start = host[:m - 1 - len(reg)].rstrip(".")
    return start + "…" + reg


def short_url(url: str, n: int = LABEL_CHARS) -> str:
    """Host and path in ``n`` characters, WebPageTest-style (it labels a row ``host - file``):
    the scheme dropped, the query first (``?…``: the full URL is in the hover and the request
    view), then the directories (``/…/``), then the file before the host: the host is cut so
    that the file is whole — to its start and registrable domain (``host_floor``:
    ``1c5c1e…awswaf.com``) at the least while there is room —, else the file takes what its
    host's floor leaves and at least half the label, its start and end kept (``_short_file``:
    ``csm-captcha-inst….min.js``), and the host is cut in its middle to what is left
    (``short_host``), in few characters to its start alone (``images…/csm-ca…in.js``).  On the
    amazon load at 54 characters ``images-na.ssl-im…amazon.com/…/csm-captcha-inst….min.js``,
    where the host kept whole left the file 10 (``…/csm-ca….js``); a host kept whole and the
    path's start between where the file fits (``fls-na.amazon.com/1/oc-csi/1/…/requestId=…``)."""
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
    at, tail = _tail(path)
    if not path or path == "/" or n < 12:  # (no file to keep: the host, then what of the path fits)
        path_min = min(len(path), max(4, n // PATH_SHARE))
        if len(host) > n - path_min:
            host = _cut_host(host, n - path_min, n)
        return host + short_path(path, n - len(host))
    fname = tail[1:]
    lead = 1 if at <= 0 else 3  # ("/" before a one-segment path's file, "/…/" for the directories between)
    need = min(len(path), lead + len(fname))  # (the file whole)
    if len(host) + need <= n:  # the host and the file whole, the path's start between them where there is room
        return host + short_path(path, n - len(host))
    # the file before the host: its whole name where the host's floor (its start and registrable
    # domain: ``host_floor``) leaves room for it, else at least half the room and FILE_MIN of its name
    # (FILE_WHOLE or fewer: whole), the host cut to what is left — to its start and registrable
    # domain down to its floor, below that in its middle (``short_host``), and with fewer than
    # HOST_BOTH_ENDS its start alone
    least = lead + (len(fname) if len(fname) <= FILE_WHOLE else FILE_MIN)
    room = n - min(need, max(least, n - len(host_floor(host)), n // 2))
    if room >= len(host_floor(host)):
        host = _host_in(host, room)
        return host + short_path(path, n - len(host))
    if room >= HOST_BOTH_ENDS:
        host = short_host(host, room)
        return host + short_path(path, n - len(host))
    # little room: the host's start (its distinctive part) and the file, "…/" between them
    m = min(len(fname), n - 2 - min(FILE_START, len(host)))
    start = host[:max(n - 2 - m, 1)]
    return start + "…/" + _short_file(fname, n - len(start) - 2)


def url_chars_needed(url: str) -> int:
    """The characters ``short_url`` gives ``url`` whole (its query elided: ``?…``) — a label
    column wider than the longest of them would only be blank."""
    u = url or "(no URL)"
    if "://" in u:
        u = u.split("://", 1)[1]
    q = u.find("?", max(u.find("/"), 0))
    return len(u) if q < 0 else min(len(u), q + 2)


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


START_UNKNOWN = "←"  # the mark at the left end of a row whose start the capture does not hold (its duration then "≥…")
LOWER_BOUND = "≥"


def start_unknown(r) -> bool:
    """The row's start is not in the capture: a request the capture holds no first byte of
    (``packets["request_start"]`` None: its stream was joined mid-way, on a connection the
    capture joined mid-way, or its first bytes were lost), not a push, with packets of its own
    in the capture (a browser log's row alone has its log's times), and no browser log's record
    giving its start (its thin bar then shows it).  Its bar begins at its first byte in the
    capture, so its duration is only a lower bound: ``≥615 ms`` and ``←`` at the bar's left end
    (cut200's challenge.js: 615 ms in the cut, 983 ms in the whole capture)."""
    p = getattr(r, "packets", None) or {}
    if r.pushed or p.get("request_start") is not None or not any(v is not None for v in p.values()):
        return False
    return not getattr(r, "browser_phases", None)


def row_duration_text(r, with_lead: bool = True) -> str:
    """The text beside a row's bar: its total (``duration_text``), but for a request sent on a
    connection set up ``PRECONNECT_IDLE`` or more before it (a preconnect, or a connection raced
    for another request) the request's own time first and the connection's lead after it —
    ``25.3 ms (+253 ms preconnect)`` —, as its HAR entry and WebPageTest give it: the total
    was what a reader quoted of the document (a review: 278 ms where the request took 25).  A row
    whose start is not in the capture (``start_unknown``): ``≥615 ms``, a lower bound.  Without
    ``with_lead`` the preconnect's lead is left out (``25.3 ms``: where the whole text has no room)."""
    if start_unknown(r):  # (its start is not in the capture: at least this long)
        return LOWER_BOUND + duration_text(r.duration)
    own = preconnected(r.phases) if r.start is not None and r.end is not None else None
    if own is None:
        return duration_text(r.duration)
    t = r.phases[own][1]
    mine = (round(r.end * 1e6) - round(t * 1e6)) / 1e6
    if not with_lead:
        return duration_text(mine)
    lead = (round(t * 1e6) - round(r.start * 1e6)) / 1e6
    return f"{duration_text(mine)} (+{duration_text(lead)} preconnect)"


def short_duration_text(r) -> str:
    """``row_duration_text`` without its preconnect lead (``25.3 ms``): where the whole text has
    no room beside the bar (the TUI at 100 columns dropped it)."""
    return row_duration_text(r, with_lead=False)


BADGE_CHARS = 8  # the widest protocol badge column


def badge_width(rows) -> int:
    """The badge column's width over ``rows``: their widest badge (``h2``: 2, not ``BADGE_CHARS``:
    six blank columns the URL did not get), 2 at least, ``BADGE_CHARS`` at most."""
    return min(max([len(r.badge) for r in rows] + [2]), BADGE_CHARS)


def row_label_fixed(badge_chars: int = BADGE_CHARS, number_width: int = 4) -> int:
    """The characters of ``row_label`` before its URL: number, glyph column, badge and the spaces between."""
    return number_width + 1 + len(GLYPH_KINDS) + 1 + badge_chars + 1


def row_label(r: Row, n: int = LABEL_CHARS, number_width: int = 4, number: int | None = None, badge_chars: int = BADGE_CHARS) -> str:
    """``  12 ◆  h2 host/path…``: row number (``number``, else the row's place + 1: a
    filtered view's rows keep the numbers of the unfiltered one), the glyph column, the badge
    (in ``badge_chars``: ``badge_width`` of the rows drawn), the short URL (plain text: the
    figure escapes it, the TUI makes it printable)."""
    return (f"{r.index + 1 if number is None else number:>{number_width}} {glyphs(r)} {r.badge[:badge_chars]:<{badge_chars}} "
            f"{short_url(r.url, n):<{n}}")


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
