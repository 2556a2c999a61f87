"""A HAR of several pages, one page at a time.

A HAR's ``log.pages`` may name several page loads — WebPageTest writes one per run ("Run 1,
First View", "Run 2, First View", 17 s apart), DevTools with "preserve log" one per
navigation — and each entry names its page (``pageref``).  Drawn together they read as one
load as long as all of them (amazon's two runs: a 21 s "page load" of two 2.7 s loads).  So a
HAR of several pages shows one: opened alone, the first (of those with an entry), or the one
asked for (``--har-page N``, ``limits["har_page"]``; 0: every page); laid over a capture,
the page whose requests the capture holds (``matching.apply``), or the one asked for.

Pages are numbered from 1 in the order ``log.pages`` lists them.  An entry without a
``pageref`` (or naming no page of the log) is kept with the page in whose time it started:
from the page's ``startedDateTime`` to the next page's (one before every page's start: with
the first page to start).

- ``split(log)``: each page (numbered) with its requests.
- ``select(log, number, how)``: the log cut to that page (a new ``BrowserLog``: its requests,
  their connections, that page alone) with ``page_shown`` saying which, of how many.
- ``notice(shown)``: the line that says so ("HAR has 2 pages; showing page 1 …").
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field, replace

from .detect import BrowserLogError
from .records import BrowserLog, LogRequest

ALL = 0  # ``limits["har_page"]``: every page (the log as it is)
TITLE_CHARS = 80  # of a page's title in the notice


@dataclass
class Page:
    number: int  # 1-based, in ``log.pages`` order
    info: dict  # the log's page: {"id", "title", "start", "on_content_load", "on_load"}
    requests: list[LogRequest] = field(default_factory=list)
    unpaged: int = 0  # of ``requests``: entries without a pageref, placed here by time


def split(log: BrowserLog) -> list[Page]:
    """The log's pages, each with its requests (in the log's order); [] when it names fewer
    than two pages (nothing to choose)."""
    if len(log.pages) < 2:
        return []
    pages = [Page(n, p) for n, p in enumerate(log.pages, 1)]
    by_id: dict[str, Page] = {}
    for pg in pages:
        if pg.info.get("id") is not None:
            by_id.setdefault(pg.info["id"], pg)
    timed = sorted((pg.info["start"], pg.number) for pg in pages if pg.info.get("start") is not None)
    starts = [t for t, _ in timed]
    for r in log.requests:
        named = by_id.get(r.page) if r.page is not None else None
        if named is None:  # no pageref (or one naming no page): the page in whose time it started
            t = r.start if r.start is not None else r.send_start
            if timed and t is not None:
                named = pages[timed[max(0, bisect_right(starts, t) - 1)][1] - 1]
            else:
                named = pages[timed[0][1] - 1] if timed else pages[0]
            named.unpaged += 1
        named.requests.append(r)
    return pages


def select(log: BrowserLog, number: int, how: str, pages: list[Page] | None = None) -> BrowserLog:
    """``log`` cut to its page ``number`` (1-based): a new ``BrowserLog`` with that page's
    requests, the connections they used and that page alone, ``page_shown`` saying which
    (``how``: "first", "asked", "matched").  ``log`` itself when it names fewer than two
    pages and ``number`` is 1, or ``number`` is ``ALL``.  Raises ``BrowserLogError`` for a
    page it does not have."""
    pages = split(log) if pages is None else pages
    n_pages = len(log.pages)
    if number == ALL or (not pages and number == 1):
        return log
    if not 1 <= number <= max(n_pages, 1):
        have = f"{n_pages} page{'s' * (n_pages != 1)}" if n_pages else "no pages"
        raise BrowserLogError(f"{log.path}: the HAR has {have}: there is no page {number} (--har-page 1 to {max(n_pages, 1)}, or all)")
    pg = pages[number - 1]
    keep = {id(r) for r in pg.requests}
    used = {r.connection for r in pg.requests if r.connection is not None}
    others = len(log.requests) - len(pg.requests)
    shown = {"number": number, "of": n_pages, "id": pg.info.get("id"), "title": pg.info.get("title"), "how": how,
             "entries": len(pg.requests), "unpaged_entries": pg.unpaged, "other_pages_entries": others,
             "other_pages": [{"number": o.number, "id": o.info.get("id"), "title": o.info.get("title"), "entries": len(o.requests)}
                             for o in pages if o.number != number]}
    return replace(log, requests=[r for r in log.requests if id(r) in keep], pages=[pg.info],
                   connections={k: c for k, c in log.connections.items() if k in used}, warnings=list(log.warnings),
                   page_shown=shown)


def first_with_entries(pages: list[Page]) -> int:
    """The number of the first page with an entry (1 when none has: DevTools names the
    about:blank a window opened on as a page of its own)."""
    return next((pg.number for pg in pages if pg.requests), 1)


def page_of(pages: list[Page]) -> dict[int, int]:
    """``id(request)`` -> its page's number."""
    return {id(r): pg.number for pg in pages for r in pg.requests}


def _title(title: str) -> str:
    return title if len(title) <= TITLE_CHARS else title[: TITLE_CHARS - 1] + "…"


def page_name(number: int, title: str | None) -> str:
    return f"page {number} '{_title(title)}'" if title else f"page {number}"


def _entries(n: int) -> str:
    return f"{n} entr{'y' if n == 1 else 'ies'}"


WHY = {"first": "the first", "asked": "as asked", "matched": "the one the capture holds"}


def notice(shown: dict | None) -> str | None:
    """One line saying which page of the HAR is shown and how to see the others (None: the
    whole log is shown): ``HAR has 2 pages; showing page 1 'Run 1, First View for
    https://www.amazon.com' (15 entries), the first; --har-page 2 for 'Run 2, First View for
    https://www.amazon.com', --har-page all for every page``."""
    if not shown:
        return None
    unpaged = shown.get("unpaged_entries") or 0
    what = _entries(shown["entries"]) + (f", {unpaged} without pageref placed by time" if unpaged else "")
    line = f"HAR has {shown['of']} pages; showing {page_name(shown['number'], shown.get('title'))} ({what})"
    if shown.get("how") in WHY:
        line += ", " + WHY[shown["how"]] + (" with entries" if shown["how"] == "first" and shown["number"] != 1 else "")
    others = shown.get("other_pages") or []
    alt = [f"--har-page {o['number']}" + (f" for '{_title(o['title'])}'" if o.get("title") else "") for o in others[:3]]
    if len(others) > 3:
        alt.append(f"… --har-page {shown['of']}")
    return "; ".join([line, ", ".join(alt + ["--har-page all for every page"])])


def other_pages_text(shown: dict) -> str:
    """``page 2 'Run 2, First View …'`` (the pages not shown, for a summary line)."""
    others = shown.get("other_pages") or []
    names = [page_name(o["number"], o.get("title")) for o in others[:3]]
    return ", ".join(names) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
