"""Why a view is empty or partial, in the words every UI shows (TUI status line and
waterfall header, web status line and waterfall banner).  Nothing here finds a reason of
its own: it groups ``analyzer.completeness.compute(an).issues`` (kind, next step) so that
"2 connections not decrypted: no key for this client random" is one line with its next
step, not one per connection, and says first what explains an empty waterfall.

``reasons(an)`` -> ``[Reason]`` most telling first; ``empty_text(an, shown, total)`` the
line that replaces "no requests"; ``banner(an)`` one line for a status bar.
Captured text (an SNI inside an issue's detail) is escaped by the caller
(``analyzer.safetext.printable`` / ``html_text``)."""
from __future__ import annotations

from dataclasses import dataclass

from wirefall.analyzer.safetext import plural

# which issues explain missing requests first: nothing decrypted > damaged file > budgets > the rest
# (a key log's own problem first: it is why connections were not decrypted)
_ORDER = {"keylog_unreadable": -1, "keylog_no_secrets": -1, "keylog_damaged": -1, "not_decrypted": 0, "record_not_decrypted": 0,
          "capture_damaged": 1, "budget": 2,
          "bytes_lost": 3, "joined_midway": 4, "unknown_fields": 5}


@dataclass(slots=True)
class Reason:
    kind: str
    count: int  # issues of this kind and next step (connections, warnings, budgets)
    what: str  # what is missing, in words (the reason shared by these issues)
    next_step: str
    connections: list[int]


def _what(i) -> str:
    d = i.detail
    if i.kind == "not_decrypted":
        # "connection 3 (sni) not decrypted: REASON" -> REASON (the reason is the model's)
        return d.split(" not decrypted: ", 1)[-1]
    return d


def reasons(an) -> list[Reason]:
    """The completeness issues of ``an`` grouped by (kind, reason, next step), most telling first."""
    from wirefall.analyzer.completeness import compute

    try:
        c = compute(an)
    except Exception as e:  # noqa: BLE001 - a status line never takes the UI down
        return [Reason("error", 1, f"completeness unavailable: {e.__class__.__name__}: {e}", "", [])]
    groups: dict[tuple, Reason] = {}
    for i in c.issues:
        what = _what(i)
        key = (i.kind, what if i.kind in ("not_decrypted", "capture_damaged") else "", i.next_step)
        r = groups.get(key)
        if r is None:
            r = groups[key] = Reason(i.kind, 0, what, i.next_step, [])
        r.count += 1
        if i.connection is not None:
            r.connections.append(i.connection)
    return sorted(groups.values(), key=lambda r: (_ORDER.get(r.kind, 9), -r.count))


def background_line(an) -> str | None:
    """One short line where the page is complete and only background traffic (not the page's)
    or a connection joined mid-way with no request seen, whose it is unknown, is partial: "Page
    complete · 1 background connection partial", "Page complete · 1 connection of unknown owner";
    None otherwise.  A status area that told the background connection's whole story (four
    lines at 80 columns for amazon's QUIC connection joined mid-way, no request on it) left the
    packet list five rows; the whole story is in the Completeness section."""
    from wirefall.analyzer.completeness import compute

    try:
        c = compute(an)
    except Exception:  # noqa: BLE001 - a status line never takes the UI down
        return None
    if c.complete or not c.page_complete:
        return None
    bg = {i.connection for i in c.issues if i.background and i.connection is not None}
    said = [f"{plural(len(bg), 'background connection')} partial"] if bg else []
    if c.owner_unknown_connections:  # (joined mid-way, no request seen: never called background, whose it is unknown)
        n = len(c.owner_unknown_connections)
        said.append(f"{plural(n, 'connection')} of unknown owner")  # (one line at 80 columns with the notice's tail)
    return "Page complete · " + (" · ".join(said) or "background traffic partial")


def reason_text(r: Reason, with_next: bool = True) -> str:
    if r.kind == "not_decrypted":
        s = f"{plural(len(r.connections) or r.count, 'connection')} not decrypted ({r.what})"
    elif r.kind in ("joined_midway", "unknown_fields", "bytes_lost", "budget") and r.count > 1:
        s = f"{r.what} (and {r.count - 1} more like it)"
    else:
        s = r.what
    return f"{s} — next: {r.next_step}" if with_next and r.next_step else s


def empty_text(an, shown: int, total: int) -> str:
    """What to say where the waterfall has no row: why, and what to do."""
    if total and not shown:
        return f"no request matches the filter ({plural(total, 'request')} in the capture)"
    rs = reasons(an)
    if not rs:
        conns = len(getattr(an, "connections", ()) or ())
        if not conns:
            return "no requests: the capture holds no TCP or UDP connection wirefall follows"
        return (f"no requests: {plural(conns, 'connection')}, none carrying HTTP, SPDY or HTTP/3 that wirefall decodes "
                "(see the Connections tab)")
    return "no requests: " + reason_text(rs[0]) + (f"; also: {'; '.join(reason_text(r, False) for r in rs[1:3])}" if len(rs) > 1 else "")


def banner(an, limit: int = 2) -> str | None:
    """One line for a status bar: the completeness headline and the most telling reasons
    with their next step; None when the capture is complete."""
    from wirefall.analyzer.completeness import headline

    rs = reasons(an)
    if not rs:
        return None
    try:
        head = headline(an)
    except Exception:  # noqa: BLE001
        head = "Incomplete"
    texts = [reason_text(r, i == 0) for i, r in enumerate(rs[:limit])]
    word, _, said = head.partition(": ")
    if said and texts[0].startswith(said):  # (the headline's reason is the first one's start: said once)
        head = word
    return head + " · " + " · ".join(texts)
