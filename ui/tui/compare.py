"""The TUI's compare view: two captures of the same page side by side (issue 10).

``CompareScreen`` loads both captures in a worker thread (progress bar), then shows
``analyzer.compare.compare(A, B)``:

- above both tabs' contents, the verdict (``analyzer.compare.verdict``: which side won, where
  each side's time went, how alike the loads are; the Waterfalls tab its winner lines);
- *Table* tab: the page-level table in the SPDY whitepaper's form (``PAGE_ROWS``: A, B,
  B − A and the speedup (A − B) / A) with what its rows mean under it (``PAGE_NOTES``: the
  labels and definitions `wirefall compare` prints, one home), the matched requests with both sides' start, time to
  first byte, duration and bytes and the differences, the only-A / only-B rows, the match
  mode and the warnings.
- *Waterfalls* tab: one row per matched URL (then the only-A / only-B rows), A's bar on the
  left and B's on the right, drawn with the TUI waterfall's eighth-block cells
  (``widgets.bar_cells``).  Each side is on its own time axis from its page's start (as
  ``compare`` times it); both use the same window of offsets, hence the same ms per column, so
  bars compare directly.  + / - zoom (around the selected row), ← / → pan, 0 resets, as in the
  Waterfall tab; Enter opens both requests' views.

``CompareDialog`` asks for capture B (and an optional key log) from inside the TUI (key C).
"""
from __future__ import annotations

import math
import os
import time
from functools import partial

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.strip import Strip
from textual.widgets import Button, DataTable, Footer, Header, Input, ProgressBar, Static, TabbedContent, TabPane

from wirefall.analyzer.safetext import printable

from .widgets import (CURSOR_STYLE, DEFAULT_STYLE, ZOOM_BINDINGS, LineList, _cell, bar_cells, cell_segments, nice_step, tick_label,
                      waterfall_legend)

NONE = "–"


# ---------------------------------------------------------------- formatting
def fmt_ms1(v) -> str:
    """Seconds → ms with 0.1 ms resolution."""
    return NONE if v is None else f"{1000 * v:.1f}"


def fmt_dms(v) -> str:
    return NONE if v is None else f"{1000 * v:+.1f}"


def fmt_bytes(v) -> str:
    return NONE if v is None else f"{v:,}"


def fmt_dbytes(v) -> str:
    return NONE if v is None else f"{v:+,}"


def page_rows(res: dict) -> list[tuple[str, str, str, str, str, str]]:
    """The page table: (key, label, A, B, B − A, speedup) per ``PAGE_ROWS`` entry, each cell the
    CLI's (``analyzer.compare.page_cells``: "≥ 0.098" for an incomplete side's lower bound,
    "withheld: B incomplete" where the difference and saving are withheld).  The rows the CLI
    and the web page leave out when neither side has a value (``OPTIONAL_ROWS``: the browser's
    page events, a HAR page's own figures) are left out here too: a row of "–" said nothing."""
    from wirefall.analyzer.compare import OPTIONAL_ROWS, PAGE_ROWS, page_cells

    out = []
    for key, label in PAGE_ROWS:
        p = res["page"].get(key) or {"a": None, "b": None}
        if key in OPTIONAL_ROWS and p["a"] is None and p["b"] is None:
            continue
        a, b, d, sp = page_cells(res, key)
        out.append((key, label, a, b, d, sp))
    return out


def withheld_text(res: dict) -> Text:
    """Why no difference or saving is given (``analyzer.compare.withheld_lines``, the lines
    `wirefall compare` prints under its page table); empty when the sides are comparable."""
    from wirefall.analyzer.compare import withheld_lines

    return Text("\n".join(printable(w) for w in withheld_lines(res)), style="bold")


def side_title(side: dict) -> str:
    """"; its page INCOMPLETE: …" after a side's title line when its page is incomplete
    (``analyzer.compare.side_incomplete``, the CLI's side line's words), else ""."""
    from wirefall.analyzer.compare import side_incomplete

    inc = side_incomplete(side)
    return f"; {inc}" if inc else ""


def verdict_text(res: dict, kinds: tuple[str, ...] | None = None) -> Text:
    """What the comparison says at a glance (``analyzer.compare.verdict``, the lines `wirefall
    compare` prints above its table): the faster side — bold — or why none is named, where each
    side's time went, how alike the loads are; ``kinds``: only those lines."""
    from wirefall.analyzer.compare import verdict

    t = Text()
    for kind, line in verdict(res):
        if kinds is not None and kind not in kinds:
            continue
        if t:
            t.append("\n")
        t.append(printable(line), style="bold" if kind in ("winner", "load_event") else
                 "#d7af5f" if kind == "caveats" and line.startswith("not like") else "")
    return t


def page_caption() -> str:
    """The page table's caption: what its last column is (``PAGE_NOTES``' first line)."""
    from wirefall.analyzer.compare import PAGE_NOTES

    return f"Page ({PAGE_NOTES[0]})"


def page_notes() -> Text:
    """What the page table's rows mean: ``analyzer.compare.PAGE_NOTES``, the lines `wirefall
    compare` prints under its table (the same row labels, ``PAGE_ROWS``, and definitions)."""
    from wirefall.analyzer.compare import PAGE_NOTES

    return Text("\n".join(PAGE_NOTES[1:]))  # (the first, the speedup's, is the table's caption)


REQUEST_COLUMNS = ("url", "proto A", "proto B", "start A", "start B", "Δ start", "ttfb A", "ttfb B", "Δ ttfb",
                   "dur A", "dur B", "Δ dur", "bytes A", "bytes B", "Δ bytes", "why apart")
WHY_COLUMN = len(REQUEST_COLUMNS) - 1  # (an unmatched or background row's reason: compare()'s, as the CLI's notes)
URL_WIDTH = 40


ONLY_PREFIXES = ("A only: ", "B only: ", "A background: ", "B background: ")


def _short(url: str, width: int = URL_WIDTH) -> str:
    """``url`` in ``width`` characters, cut from the left (the path is what tells requests
    apart); an "A only: " / "B only: " prefix is kept whole, the URL after it is cut."""
    prefix = next((p for p in ONLY_PREFIXES if url.startswith(p)), "")
    rest = url[len(prefix):]
    room = max(width - len(prefix), 2)
    return prefix + (rest if len(rest) <= room else "…" + rest[-(room - 1):])


def request_rows(res: dict) -> list[tuple[str, ...]]:
    """Matched requests (times in ms from each page's start: ``compare``'s), then only-A and
    only-B rows (the other side's cells empty), then each side's background requests (not the
    page's: never matched, listed with their reason).  A response cut by the capture's end has
    its bytes "≥ N" (``analyzer.compare.bytes_cell``, as the CLI) and no duration ("–"); the last
    column, "why apart", is an unmatched or background row's reason (``compare``'s, the CLI's
    "why the unmatched and background rows are apart"), empty for a matched row."""
    from wirefall.analyzer.compare import bytes_cell, normalise_url

    def nb(e: dict) -> str:
        return bytes_cell(e, fmt_bytes)

    def why(e: dict) -> str:
        return e.get("reason") or ""

    rows: list[tuple[str, ...]] = []
    for m in res["matched"]:
        a, b, d = m["a"], m["b"], m["diff"]
        rows.append((_short(m["url"]), a["protocol"] or "", b["protocol"] or "", fmt_ms1(a["start"]), fmt_ms1(b["start"]),
                     fmt_dms(d["start"]), fmt_ms1(a["ttfb"]), fmt_ms1(b["ttfb"]), fmt_dms(d["ttfb"]), fmt_ms1(a["duration"]),
                     fmt_ms1(b["duration"]), fmt_dms(d["duration"]), nb(a), nb(b), fmt_dbytes(d["bytes"]), ""))
    for e in res["only_a"]:
        rows.append((_short("A only: " + normalise_url(e["url"])), e["protocol"] or "", "", fmt_ms1(e["start"]), "", "",
                     fmt_ms1(e["ttfb"]), "", "", fmt_ms1(e["duration"]), "", "", nb(e), "", "", why(e)))
    for e in res["only_b"]:
        rows.append((_short("B only: " + normalise_url(e["url"])), "", e["protocol"] or "", "", fmt_ms1(e["start"]), "",
                     "", fmt_ms1(e["ttfb"]), "", "", fmt_ms1(e["duration"]), "", "", nb(e), "", why(e)))
    for e in res.get("background_a", ()):
        rows.append((_short("A background: " + normalise_url(e["url"])), e["protocol"] or "", "", fmt_ms1(e["start"]), "", "",
                     fmt_ms1(e["ttfb"]), "", "", fmt_ms1(e["duration"]), "", "", nb(e), "", "", why(e)))
    for e in res.get("background_b", ()):
        rows.append((_short("B background: " + normalise_url(e["url"])), "", e["protocol"] or "", "", fmt_ms1(e["start"]), "",
                     "", fmt_ms1(e["ttfb"]), "", "", fmt_ms1(e["duration"]), "", "", nb(e), "", why(e)))
    return rows


def _side_packets(side: dict, an) -> str:
    """``140 packets``; a browser log's side, as `wirefall compare` says it: ``a browser log
    (har), no packets`` (it has none to count: "0 packets" read as an empty capture)."""
    lf = side.get("browser_log")
    if isinstance(lf, dict) and lf.get("kind") not in (None, "capture"):
        return f"a browser log ({lf['kind']}), no packets" + (f", page {lf['page_number']}" if lf.get("page_number") else "")
    return f"{an.packets:,} packets"


def match_line(res: dict) -> str:
    how = "URL (scheme, host, port, path and query)" if res["match_mode"] == "url" else "path and query"
    bg = ""
    if res.get("background_a") or res.get("background_b"):
        bg = f", background (not the page's, not compared): {len(res.get('background_a', ()))} in A, {len(res.get('background_b', ()))} in B"
    return (f"{len(res['matched'])} requests matched by {how} ({100 * res['match_share']:.0f} %), "
            f"{len(res['only_a'])} only in A, {len(res['only_b'])} only in B{bg}")


def _page_t0(wf, an) -> float:
    """Where a side's times count from: its page's start (``compare``'s), else its start."""
    return wf.page_start if wf is not None and wf.page_info is not None and wf.page_info.start is not None else an.start_time


# ---------------------------------------------------------------- side-by-side waterfall
class CompareRow:
    __slots__ = ("label", "a", "b", "kind")

    def __init__(self, label: str, a, b, kind: str) -> None:
        self.label = label
        self.a = a  # analyzer.waterfall.Row of capture A (or None)
        self.b = b
        self.kind = kind  # matched | only_a | only_b


def compare_rows(res: dict, wf_a, wf_b) -> list[CompareRow]:
    """One row per matched pair (in A's start order, as ``compare`` lists them), then the
    only-A and only-B requests, then each side's background requests."""
    from wirefall.analyzer.compare import normalise_url

    by_a = {r.exchange: r for r in wf_a.rows} if wf_a is not None else {}
    by_b = {r.exchange: r for r in wf_b.rows} if wf_b is not None else {}
    rows = [CompareRow(m["url"], by_a.get(m["a"]["exchange"]), by_b.get(m["b"]["exchange"]), "matched") for m in res["matched"]]
    rows += [CompareRow("A only: " + normalise_url(e["url"]), by_a.get(e["exchange"]), None, "only_a") for e in res["only_a"]]
    rows += [CompareRow("B only: " + normalise_url(e["url"]), None, by_b.get(e["exchange"]), "only_b") for e in res["only_b"]]
    rows += [CompareRow("A background: " + normalise_url(e["url"]), by_a.get(e["exchange"]), None, "only_a")
             for e in res.get("background_a", ())]
    rows += [CompareRow("B background: " + normalise_url(e["url"]), None, by_b.get(e["exchange"]), "only_b")
             for e in res.get("background_b", ())]
    return rows


class CompareWaterfall(LineList):
    """Rows of two waterfalls side by side.  The view window ``[v0, v1]`` is in seconds from
    each page's start (``ta0`` / ``tb0``), the same for both halves, so one
    column is the same number of ms on both sides."""

    BINDINGS = [*LineList.BINDINGS, *ZOOM_BINDINGS]
    LABEL = 36  # "nnn " + URL

    class Zoomed(Message):
        pass

    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self.rows: list[CompareRow] = []
        self.ta0 = 0.0
        self.tb0 = 0.0
        self.full = 1.0
        self.v0 = 0.0
        self.v1 = 1.0

    def set_rows(self, rows: list[CompareRow], ta0: float, tb0: float) -> None:
        self.rows = rows
        self.ta0, self.tb0 = ta0, tb0
        ends = [r.a.end - ta0 for r in rows if r.a is not None] + [r.b.end - tb0 for r in rows if r.b is not None]
        self.full = max(ends + [1e-3])
        self.v0, self.v1 = 0.0, self.full
        self.content_width = 0
        self.set_count(len(rows))
        self.post_message(self.Zoomed())

    # geometry -------------------------------------------------------------
    @property
    def side_width(self) -> int:
        """Cells of each side's bar area."""
        w = self.size.width or 160
        return max((w - self.LABEL - 3) // 2, 5)

    def label_text(self, i: int) -> str:
        r = self.rows[i]
        return f"{i + 1:>3} {_cell(_short(printable(r.label), self.LABEL - 4), self.LABEL - 4, False)}"

    def column(self, rel: float) -> int:
        """The bar cell (0-based, within a side) where ``rel`` seconds from that side's page
        start falls in the current window."""
        return int((rel - self.v0) / ((self.v1 - self.v0) or 1e-9) * self.side_width)

    def side_cells(self, row, t0: float):
        """Row ``row``'s bar in the window; a request outside it (zoomed or panned away) is an
        arrow at the edge it lies beyond, one at the window's very edge (an instant request
        at the end) a thin mark — a request is never simply not drawn."""
        bw = self.side_width
        if row is None:
            return [(" ", None)] * bw
        cells = bar_cells(row.phases, row.colors, t0 + self.v0, t0 + self.v1, bw)
        if any(c != " " for c, _ in cells) or not row.phases:
            return cells
        lo = min(a for _, a, _ in row.phases) - t0
        hi = max(b for _, _, b in row.phases) - t0
        color = next((row.colors.get(n) for n, _, _ in row.phases if row.colors.get(n)), None)
        if lo > self.v1:
            cells[-1] = (self.BEYOND[1], color)
        elif hi < self.v0:
            cells[0] = (self.BEYOND[0], color)
        else:
            cells[min(max(self.column(lo), 0), bw - 1)] = ("▏", color)
        return cells

    BEYOND = ("◂", "▸")  # a side's request before / after the window

    def bar_texts(self, i: int) -> tuple[str, str]:
        """The characters of row i's A and B bars as drawn now (for tests)."""
        r = self.rows[i]
        return ("".join(c for c, _ in self.side_cells(r.a, self.ta0)), "".join(c for c, _ in self.side_cells(r.b, self.tb0)))

    def line(self, i: int):
        a, b = self.bar_texts(i)
        return f"{self.label_text(i)}│{a}│{b}│", DEFAULT_STYLE

    def render_line(self, y: int) -> Strip:
        i = self.scroll_offset.y + y
        width = self.size.width
        if i >= self.count:
            return Strip.blank(width)
        r = self.rows[i]
        base = Style(color="#d0d0d0") if r.kind == "matched" else Style(color="#d7af5f", italic=True)
        if i == self.cursor:
            base = base + (CURSOR_STYLE if self.has_focus else Style(bgcolor="#3a3a3a"))
        bg = base.bgcolor if i == self.cursor else None
        sep = Style(color="#606060")
        segs = [Segment(self.label_text(i), base), Segment("│", sep)]
        for row, t0 in ((r.a, self.ta0), (r.b, self.tb0)):
            segs += cell_segments(self.side_cells(row, t0), bg)
            segs.append(Segment("│", sep))
        return Strip(segs).crop_extend(0, width, None)

    def axis_text(self) -> str:
        """Tick labels (ms from each page's start) above both halves."""
        bw = self.side_width
        step = nice_step(self.v1 - self.v0, bw)
        axis = [" "] * bw
        k = math.ceil(self.v0 / step - 1e-9)
        while (t := k * step) <= self.v1 + 1e-12:
            x = self.column(t)
            s = "┊" + tick_label(t, step)
            if 0 <= x and x + len(s) <= bw:
                axis[x : x + len(s)] = list(s)
            k += 1
        half = "".join(axis)
        return "  # request".ljust(self.LABEL) + " " + half + " " + half

    def head_text(self, name_a: str, name_b: str) -> Text:
        bw = self.side_width
        t = Text(" " * (self.LABEL + 1))
        t.append(_cell(printable(name_a), bw, False), style="bold #87d7ff")
        t.append(" ")
        t.append(_cell(printable(name_b), bw, False), style="bold #ffd787")
        return t

    # zoom / pan (as WaterfallView) -------------------------------------------
    REQUEST_PHASES = ("send", "wait", "receive")

    def _request_spans(self, i: int) -> list[tuple[float, float]]:
        """Row i's request phases (request sent to last byte) per side, in seconds from that
        side's page start (the connection set-up drawn on a row is left out)."""
        r = self.rows[i]
        out = []
        for row, t0 in ((r.a, self.ta0), (r.b, self.tb0)):
            if row is None:
                continue
            ph = [(a, b) for name, a, b in row.phases if name in self.REQUEST_PHASES] or [(row.start, row.end)]
            out.append((min(a for a, _ in ph) - t0, max(b for _, b in ph) - t0))
        return out

    def action_zoom(self, factor: float) -> None:
        """Zoom in around the selected row: both sides' requests when they fit in the new
        window, else A's (B's on a B-only row); zoom out around the window's centre."""
        span = min(max((self.v1 - self.v0) * factor, 1e-6), self.full)
        c = (self.v0 + self.v1) / 2
        if factor < 1 and self.rows:
            spans = self._request_spans(self.cursor)
            if spans:
                lo, hi = min(a for a, _ in spans), max(b for _, b in spans)
                if hi - lo > span:
                    lo, hi = spans[0]
                c = (lo + hi) / 2
        self.v0 = max(0.0, c - span / 2)
        self.v1 = self.v0 + span
        if self.v1 > self.full:
            self.v1 = self.full
            self.v0 = self.v1 - span
        self._changed()

    def action_pan(self, frac: float) -> None:
        d = (self.v1 - self.v0) * frac
        d = max(-self.v0, min(d, self.full - self.v1))
        self.v0 += d
        self.v1 += d
        self._changed()

    def action_reset_zoom(self) -> None:
        self.v0, self.v1 = 0.0, self.full
        self._changed()

    def _changed(self) -> None:
        self.invalidate()
        self.post_message(self.Zoomed())

    def on_resize(self) -> None:
        self.invalidate()
        self.post_message(self.Zoomed())


# ---------------------------------------------------------------- dialog
class CompareDialog(ModalScreen):
    """Asks for capture B and an optional key log; dismisses with ``(path, [keylog])``."""

    DEFAULT_CSS = """
    CompareDialog { align: center middle; }
    #cmp-dialog { width: 100; height: auto; border: round $accent; background: $surface; padding: 0 1; }
    #cmp-dialog Input { margin: 0 0 1 0; }
    #cmp-dialog-error { color: $error; height: auto; }
    #cmp-dialog-buttons { height: 3; align: right middle; }
    """
    BINDINGS = [Binding("escape", "dismiss", "Cancel")]

    def __init__(self, path_a: str) -> None:
        super().__init__()
        self.path_a = path_a

    def compose(self) -> ComposeResult:
        with Vertical(id="cmp-dialog"):
            yield Static(Text(f"Compare {printable(self.path_a)} (A) with capture B", style="bold"))
            yield Static("capture B (pcap / pcapng, optionally compressed):")
            yield Input(placeholder="path of capture B", id="cmp-path")
            yield Static("key log for B (optional; A's key logs are used too):")
            yield Input(placeholder="path of an SSLKEYLOGFILE", id="cmp-keylog")
            yield Static("", id="cmp-dialog-error")
            with Horizontal(id="cmp-dialog-buttons"):
                yield Button("Compare", variant="primary", id="cmp-ok")
                yield Button("Cancel", id="cmp-cancel")

    def on_mount(self) -> None:
        self.query_one("#cmp-path", Input).focus()

    @on(Input.Submitted, "#cmp-path")
    def _path_entered(self) -> None:
        self.query_one("#cmp-keylog", Input).focus()

    @on(Input.Submitted, "#cmp-keylog")
    @on(Button.Pressed, "#cmp-ok")
    def _submit(self) -> None:
        path = os.path.expanduser(self.query_one("#cmp-path", Input).value.strip())
        keylog = os.path.expanduser(self.query_one("#cmp-keylog", Input).value.strip())
        err = self.query_one("#cmp-dialog-error", Static)
        if not path:
            err.update("enter the path of capture B")
            self.query_one("#cmp-path", Input).focus()
            return
        if not os.path.isfile(path):
            err.update(Text(f"no such file: {printable(path)}"))
            self.query_one("#cmp-path", Input).focus()
            return
        if keylog and not os.path.isfile(keylog):
            err.update(Text(f"no such key log: {printable(keylog)}"))
            self.query_one("#cmp-keylog", Input).focus()
            return
        self.dismiss((path, [keylog] if keylog else []))

    @on(Button.Pressed, "#cmp-cancel")
    def _cancel(self) -> None:
        self.dismiss(None)


# ---------------------------------------------------------------- the screen
class CompareScreen(Screen):
    """Capture A against capture B.  ``analysis_a`` / ``analysis_b``: analyses already made
    (the app's own capture, tests); the others are read in a worker thread.  ``on_a``: called
    on the UI thread with A's analysis (or an error message) once read, so the app behind
    can show A without reading it again."""

    DEFAULT_CSS = """
    CompareScreen { layout: vertical; }
    #cmp-title { height: auto; background: $panel; padding: 0 1; }
    #cmp-progress { height: 1; }
    #cmp-progress.-done { display: none; }
    #cmp-tabs { height: 1fr; }
    #cmp-scroll { height: 1fr; }
    #cmp-page, #cmp-requests { height: auto; width: auto; margin: 0 0 1 0; }
    .cmp-caption { height: auto; text-style: bold; padding: 0 1; }  /* (wrapped: the page table's caption ran past 160 columns) */
    #cmp-warnings { height: auto; color: $warning; padding: 0 1; }
    #cmp-withheld { height: auto; color: $warning; padding: 0 1; }
    #cmp-withheld.-none { display: none; }
    #cmp-page-notes { height: auto; color: $text-muted; padding: 0 1; margin: 0 0 1 0; }
    #cmp-verdict { height: auto; padding: 0 1; margin: 0 0 1 0; }
    #cmp-wf-verdict { height: auto; padding: 0 1; }
    #cmp-wf-head, #cmp-wf-axis { height: 1; background: #303030; color: #c0c0c0; }
    #cmp-wf { height: 1fr; overflow-x: hidden; }
    #cmp-wf-legend { height: auto; max-height: 4; color: #a0a0a0; }
    #cmp-status { height: auto; max-height: 3; background: $panel; color: $text-muted; padding: 0 1; }  /* (the warnings after the match line) */
    """
    BINDINGS = [
        Binding("escape", "close", "Back"),
        Binding("1", "show('cmp-table-tab')", "Table"),
        Binding("2", "show('cmp-wf-tab')", "Waterfalls"),
        # the main view's keys have no meaning here (they would act on the screen below)
        # (5 and L too: L opened the colour key over this view, which has no packet list to colour)
        Binding("F,f,ctrl+f,slash,n,N,d,b,x,C,3,4,5,L", "nothing", show=False),
    ]

    def __init__(self, path_a: str, keylogs_a: list[str] | None, path_b: str, keylogs_b: list[str] | None,
                 analysis_a=None, analysis_b=None, on_a=None, overlays_a: list[tuple[str, str]] | None = None,
                 overlays_b: list[tuple[str, str]] | None = None) -> None:
        super().__init__()
        self.path_a, self.path_b = path_a, path_b
        # browser logs laid over each side once read (--har/--netlog/--qlog over A, --har-b/… over B);
        # an analysis handed in (analysis_a, analysis_b) has its logs laid over already
        self.overlays_a, self.overlays_b = list(overlays_a or []), list(overlays_b or [])
        self.keylogs_a = list(keylogs_a or [])
        self.keylogs_b = list(keylogs_b or [])
        self.an_a, self.an_b = analysis_a, analysis_b
        self.on_a = on_a
        self.res: dict | None = None
        self.loaded = False
        self.error: str | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(Text(f"A: {printable(self.path_a)}\nB: {printable(self.path_b)}"), id="cmp-title")
        yield ProgressBar(total=200, show_eta=False, id="cmp-progress")
        with TabbedContent(initial="cmp-table-tab", id="cmp-tabs"):
            with TabPane("Table", id="cmp-table-tab"):
                with VerticalScroll(id="cmp-scroll"):
                    # (at a glance, first: which side won and why — a reader had to find it in the table's
                    # first row and "other clients" at the foot of the requests)
                    yield Static("", id="cmp-verdict")
                    yield Static(page_caption(), classes="cmp-caption")
                    yield DataTable(id="cmp-page", cursor_type="row", zebra_stripes=True)
                    yield Static("", id="cmp-withheld")
                    yield Static(page_notes(), id="cmp-page-notes")
                    yield Static("Requests (ms from each page's start)", id="cmp-req-caption", classes="cmp-caption")
                    yield DataTable(id="cmp-requests", cursor_type="row", zebra_stripes=True)
                    yield Static("", id="cmp-warnings")
            with TabPane("Waterfalls", id="cmp-wf-tab"):
                yield Static("", id="cmp-wf-verdict")
                yield Static("", id="cmp-wf-head")
                yield Static("", id="cmp-wf-axis")
                yield CompareWaterfall(id="cmp-wf")
                yield Static(self._legend(), id="cmp-wf-legend")
        yield Static("loading…", id="cmp-status")
        yield Footer()

    @staticmethod
    def _legend() -> Text:
        return waterfall_legend("one scale for both sides  enter: both requests")

    def on_mount(self) -> None:
        self.sub_title = f"compare {self.path_a} | {self.path_b}"
        self.load()

    # loading ----------------------------------------------------------------
    @work(thread=True, exclusive=True, group="compare")
    def load(self) -> None:
        from wirefall.analyzer.compare import compare
        from wirefall.analyzer.pipeline import analyze
        from wirefall.analyzer.waterfall import build

        t = time.monotonic()

        def progress(side: int, name: str, packets: int, done: int, total: int) -> None:
            self.app.call_from_thread(self._progress, side, name, packets, done, total)

        def lay(an, logs) -> None:
            if logs:
                from wirefall.analyzer.browserlog import overlay

                for kind, log in logs:
                    overlay(an, log, kind=kind)

        an_a = self.an_a
        if an_a is None:
            try:
                an_a = analyze(self.path_a, self.keylogs_a, progress=partial(progress, 0, "A"))
                lay(an_a, self.overlays_a)
            except Exception as e:  # CaptureError and anything else: a notice, never a crash
                self.app.call_from_thread(self._failed, "A", self.path_a, str(e) or e.__class__.__name__)
                return
            self.app.call_from_thread(self._a_ready, an_a)
        an_b = self.an_b
        if an_b is None:
            try:
                an_b = analyze(self.path_b, self.keylogs_a + self.keylogs_b, progress=partial(progress, 1, "B"))
                lay(an_b, self.overlays_b)
            except Exception as e:
                self.app.call_from_thread(self._failed, "B", self.path_b, str(e) or e.__class__.__name__)
                return
        self.app.call_from_thread(self._set_status, "comparing…")
        try:
            res = compare(an_a, an_b)
            wf_a, wf_b = build(an_a), build(an_b)
        except Exception as e:  # a bug there must not take the TUI down
            self.app.call_from_thread(self._failed, "", "", f"compare: {e.__class__.__name__}: {e}")
            return
        self.app.call_from_thread(self._loaded, an_a, an_b, res, wf_a, wf_b, time.monotonic() - t)

    def _progress(self, side: int, name: str, packets: int, done: int, total: int) -> None:
        if self.loaded:
            return
        if total:
            self.query_one("#cmp-progress", ProgressBar).update(total=200, progress=100 * side + min(100.0, 100 * done / total))
        self._set_status(f"loading {name}: {self.path_a if side == 0 else self.path_b}: {packets:,} packets…")

    def _a_ready(self, an) -> None:
        self.an_a = an
        if self.on_a is not None:
            self.on_a(an)

    def _set_status(self, msg) -> None:
        # a str is shown as it is (Static would read it as markup), captured text as escapes
        self.query_one("#cmp-status", Static).update(Text(printable(msg)) if isinstance(msg, str) else msg)

    def _failed(self, side: str, path: str, msg: str) -> None:
        self.error = f"cannot open {side} ({path}): {msg}" if side else msg
        self.query_one("#cmp-progress").add_class("-done")
        self._set_status(Text(f"error: {printable(self.error)}", style="bold red"))
        self.notify(printable(self.error), title="Compare", severity="error", timeout=30, markup=False)
        if side == "A" and self.on_a is not None:
            self.on_a(msg)

    def _loaded(self, an_a, an_b, res, wf_a, wf_b, seconds: float) -> None:
        self.an_a, self.an_b, self.res = an_a, an_b, res
        self.loaded = True
        self.query_one("#cmp-progress").add_class("-done")
        pa = ", ".join(res["a"]["protocols"]) or "-"
        pb = ", ".join(res["b"]["protocols"]) or "-"
        self.name_a = f"A: {os.path.basename(self.path_a)} ({pa})"
        self.name_b = f"B: {os.path.basename(self.path_b)} ({pb})"
        title = Text()
        title.append("A: ", style="bold #87d7ff")
        title.append(printable(f"{self.path_a} ({pa}, {_side_packets(res['a'], an_a)})"))
        title.append(side_title(res["a"]), style="bold #ffaf5f")
        title.append("\nB: ", style="bold #ffd787")
        title.append(printable(f"{self.path_b} ({pb}, {_side_packets(res['b'], an_b)})"))
        title.append(side_title(res["b"]), style="bold #ffaf5f")
        title.append("\n")
        title.append(match_line(res))
        self.query_one("#cmp-title", Static).update(title)
        self.query_one("#cmp-verdict", Static).update(verdict_text(res))
        self.query_one("#cmp-wf-verdict", Static).update(verdict_text(res, ("winner", "load_event")))

        dt = self.query_one("#cmp-page", DataTable)
        dt.clear(columns=True)
        dt.add_column("", key="label")
        for k in ("A", "B", "B − A", "(A − B) / A"):
            dt.add_column(Text(k, justify="right"), key=k)
        for key, label, *cells in page_rows(res):
            dt.add_row(Text(printable(label)), *(Text(printable(v), justify="right") for v in cells), key=key)
        wh = self.query_one("#cmp-withheld", Static)
        wh.update(withheld_text(res))
        wh.set_class(not res.get("withheld") and res.get("comparable", True), "-none")

        rq = self.query_one("#cmp-requests", DataTable)
        rq.clear(columns=True)
        for i, c in enumerate(REQUEST_COLUMNS):
            rq.add_column(Text(c, justify="left" if i < 3 or i == WHY_COLUMN else "right"), key=c)
        for req_row in request_rows(res):
            style = ("dim italic" if req_row[0].startswith(("A background: ", "B background: ")) else
                     "italic #d7af5f" if req_row[0].startswith(("A only: ", "B only: ")) else "")
            rq.add_row(*(Text(printable(v), style=style, justify="left" if i < 3 or i == WHY_COLUMN else "right")
                         for i, v in enumerate(req_row)))
        self.query_one("#cmp-req-caption", Static).update(
            Text(f"Requests — {match_line(res)} (ms from each page's start — its first row's DNS lookup or connection set-up; Δ = B − A)"))
        warn = "\n".join(f"⚠ {printable(w)}" for w in res["warnings"]) or "no warnings"
        self.query_one("#cmp-warnings", Static).update(Text(f"match mode: {res['match_mode']}\n{warn}"))

        wv = self.query_one(CompareWaterfall)
        # each side from its page's start, as compare() counts (background traffic before the
        # page left the page a sliver at the right; a browser log has no packets: its first
        # connection — 0.0 put its requests 1.8e9 s along the axis)
        wv.set_rows(compare_rows(res, wf_a, wf_b), _page_t0(wf_a, an_a), _page_t0(wf_b, an_b))
        self.seconds = seconds
        # (the warnings themselves are under the Table tab's tables: pw-h1 against pw-h2's ran to 7
        # lines at 160 columns, cut after the first in a one-line status)
        nw = len(res["warnings"])
        self._set_status(f"{match_line(res)}" + (f" · ⚠ {nw} warning{'s' if nw != 1 else ''} (the Table tab lists them)" if nw else "")
                         + " · 1 table  2 waterfalls  esc back")
        if self.query_one(TabbedContent).active == "cmp-wf-tab":
            wv.focus()
        else:
            dt.focus()

    # keys -------------------------------------------------------------------
    def action_close(self) -> None:
        self.dismiss()

    def action_nothing(self) -> None:
        pass

    def action_show(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab
        self._focus_tab(tab)

    @on(TabbedContent.TabActivated, "#cmp-tabs")
    def _tab_activated(self, ev) -> None:
        self._focus_tab(ev.pane.id)

    def _focus_tab(self, tab: str) -> None:
        if tab == "cmp-wf-tab":
            self.query_one(CompareWaterfall).focus()
            self.call_after_refresh(self._zoomed)
        else:
            self.query_one("#cmp-page").focus()

    @on(CompareWaterfall.Zoomed)
    def _zoomed(self) -> None:
        wv = self.query_one(CompareWaterfall)
        if not self.loaded:
            return
        self.query_one("#cmp-wf-head", Static).update(wv.head_text(self.name_a, self.name_b))
        self.query_one("#cmp-wf-axis", Static).update(wv.axis_text())

    @on(LineList.Chosen, "#cmp-wf")
    def _row_chosen(self, ev: LineList.Chosen) -> None:
        from .app import TextScreen, request_text

        wv = ev.widget
        if not isinstance(wv, CompareWaterfall):  # "#cmp-wf" is the CompareWaterfall
            return
        r = wv.rows[ev.index]
        body = Text()
        for name, an, row in (("A", self.an_a, r.a), ("B", self.an_b, r.b)):
            body.append(f"━━ {name}: {printable(an.path)} ━━\n", style="bold reverse")
            e = next((x for x in an.exchanges if row is not None and x.id == row.exchange), None)
            if e is None:
                body.append("(no matching request in this capture)\n\n")
                continue
            body.append_text(request_text(an, e, row))
            body.append("\n")
        self.app.push_screen(TextScreen(f"Compare row {ev.index + 1}: {r.label}", body))
