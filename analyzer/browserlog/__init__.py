"""Browser logs as inputs and overlays: HAR 1.2, Chrome NetLog and qlog.

- ``open_any(path, keylogs, limits, progress)``: an ``Analysis`` for any input — a capture
  through ``analyzer.pipeline.analyze``, a browser log (chosen by content, compressed or
  not: ``detect.kind_of``) through its reader and ``build.to_analysis`` (no packets;
  ``Analysis.source`` names the log).
- ``read_log(path, kind=None, limits=None) -> BrowserLog``: one log, read.
- ``overlay(analysis, path, kind=None, limits=None)``: lay a log over a capture's analysis
  (``matching.apply``): each request the browser sent matched to its wire exchange, what
  the wire cannot know filled in and marked, the browser's own times and the
  browser-minus-wire offsets per phase added (``Exchange.browser``, ``Exchange.sources``,
  ``Analysis.browser``).

A HAR of several pages shows one (``pages``): alone the first, or ``limits["har_page"]``
(1-based; 0: every page; the CLI's ``--har-page N|all``); over a capture the page whose
requests the capture holds, or the one asked for.

Every failure to read a log is a ``BrowserLogError`` (a ``CaptureError``: the CLI reports
it in one line, exit code 2).
"""
from __future__ import annotations

from collections.abc import Callable

from .detect import BrowserLogError, kind_of
from .records import to_microseconds

__all__ = ["BrowserLogError", "kind_of", "open_any", "open_log", "overlay", "page_asked", "read_log", "KINDS"]

KINDS = ("har", "netlog", "qlog")


def read_log(path: str, kind: str | None = None, limits: dict | None = None):
    """The ``BrowserLog`` at ``path``; ``kind`` (har, netlog, qlog) must match its content."""
    found = kind_of(path)
    if found is None:
        what = f"a {kind}" if kind else "a browser log"
        raise BrowserLogError(f"{path}: not {what} (HAR 1.2, Chrome NetLog or qlog; optionally gzip/xz/bzip2/zstd compressed)")
    if kind is not None and found != kind:
        raise BrowserLogError(f"{path}: given as a {kind} but it is a {found}")
    if found == "har":
        from . import har as mod
    elif found == "netlog":
        from . import netlog as mod  # type: ignore[no-redef]
    else:
        from . import qlog as mod  # type: ignore[no-redef]
    try:
        return to_microseconds(mod.read(path, limits))  # (every log's times to the µs, as a capture's)
    except MemoryError:
        raise BrowserLogError(f"{path}: {found} too large to read in memory") from None


def page_asked(limits: dict | None) -> int | None:
    """``limits["har_page"]``: the HAR page to show (1-based; 0: all), None when not asked."""
    v = (limits or {}).get("har_page")
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def open_log(path: str, keylogs=None, limits: dict | None = None, progress: Callable | None = None, **_kw):
    """A browser log opened alone, as an ``Analysis`` with zero packets (a HAR of several
    pages: one of them, ``pages.select``)."""
    from .build import to_analysis
    from .pages import first_with_entries, select, split

    log = read_log(path, limits=limits)
    if log.kind == "har":
        asked = page_asked(limits)
        pgs = split(log)
        log = select(log, first_with_entries(pgs) if asked is None else asked, "first" if asked is None else "asked", pgs)
    an = to_analysis(log)
    if progress is not None:
        import os

        size = os.path.getsize(path)
        progress(0, size, size)
    return an


def open_any(path: str, keylogs=None, limits: dict | None = None, progress: Callable | None = None, **kw):
    """An ``Analysis`` of whatever ``path`` holds: a capture or a browser log."""
    if kind_of(path) is not None:
        return open_log(path, limits=limits, progress=progress)
    from ..pipeline import analyze

    return analyze(path, keylogs=keylogs, limits=limits, progress=progress, **kw)


def overlay(an, path: str, kind: str | None = None, limits: dict | None = None) -> dict:
    """Lay the browser log at ``path`` over ``an`` (in place); returns the overlay's summary."""
    from .matching import apply

    return apply(an, read_log(path, kind=kind, limits=limits), page=page_asked(limits))
