"""Line-API widgets of the TUI: they render only the lines on screen, so a list of a
million packets paints as fast as a list of ten (Textual's DataTable builds every row
up front: ~30 s for 100 k rows)."""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Static

from wirefall.analyzer.safetext import printable

# Protocol column colours (foreground; Wireshark's colouring rules adapted to a terminal)
PROTO_STYLES = {
    "TCP": Style(color="#b0a8e0"),
    "UDP": Style(color="#7fb2ff"),
    "DNS": Style(color="#5fafff"),
    "TLS": Style(color="#d7a0ff"),
    "HTTP": Style(color="#8ae234", bold=True),
    "HTTP2": Style(color="#4ec94e", bold=True),
    "SPDY": Style(color="#f0c040", bold=True),
    "QUIC": Style(color="#4dd0e1"),
    "GQUIC": Style(color="#26a69a"),
    "HTTP3": Style(color="#00e5ff", bold=True),
    "ICMP": Style(color="#ff8787"),
}
DEFAULT_STYLE = Style(color="#c0c0c0")
ERROR_STYLE = Style(color="#ff5f5f", bold=True)
CURSOR_STYLE = Style(bgcolor="#264f78", color="#ffffff", bold=True)
HEADER_STYLE = Style(bold=True, color="#ffffff", bgcolor="#303030")


def proto_style(proto: str) -> Style:
    if proto.startswith("TLS"):
        return PROTO_STYLES["TLS"]
    return PROTO_STYLES.get(proto.split("/", 1)[0], DEFAULT_STYLE)  # (HTTP/JSON as HTTP)


PACKET_COLUMNS = (("No.", 7, True), ("Time", 11, True), ("Source", 24, False), ("Destination", 24, False),
                  ("Protocol", 10, False), ("Length", 6, True))  # (Protocol: "HTTP2/JSON", as tshark names it, whole)
# the record field each column sorts by (analyzer.packet_record.COLUMNS), in column order, Info last
SORT_KEYS = ("no", "time", "source", "destination", "protocol", "length", "info")
SORT_NAMES = dict(zip(SORT_KEYS, ("No.", "Time", "Source", "Destination", "Protocol", "Length", "Info")))
TIME_WIDTH = {"absolute": 26}  # the Time column's width per format (11 otherwise)
MARKED_STYLE = Style(color="#ffffff", bgcolor="#000000")  # Wireshark's marked packets: white on black


def _cell(text: str, width: int, right: bool) -> str:
    if len(text) > width:
        text = text[: width - 1] + "…"
    return text.rjust(width) if right else text.ljust(width)


ADDR_WIDTH = 24  # Source / Destination columns; 39 (a full IPv6 address) when the capture has one longer


PROTO_NARROW = 8  # the Protocol column where the addresses are squeezed to ADDR_MIN ("HTTP2/J…"): Info keeps 2 more


def _columns(addr_width: int | None, time_width: int | None = None):
    if (not addr_width or addr_width == ADDR_WIDTH) and not time_width:
        return PACKET_COLUMNS
    aw = addr_width or ADDR_WIDTH
    pw = PROTO_NARROW if aw <= ADDR_MIN else None
    return tuple((n, aw if n in ("Source", "Destination") else (time_width or w) if n == "Time" else (pw or w) if n == "Protocol" else w, r)
                 for n, w, r in PACKET_COLUMNS)


def address_width(an) -> int:
    """The Source/Destination column width that shows every connection's address whole
    (24, up to 39 for IPv6)."""
    longest = 0
    for c in getattr(an, "connections", ()) or ():
        for ep in (c.client, c.server):
            longest = max(longest, len(str(ep[0])))
    return min(max(ADDR_WIDTH, longest), 39)


INFO_MIN = 30  # columns of Info the address columns leave on a narrow terminal
ADDR_MIN = 15  # an IPv4 address whole


def fit_address_width(want: int, width: int, time_format: str = "relative") -> int:
    """The Source/Destination width on a list ``width`` columns wide: ``want`` (every address
    whole) where Protocol, Length and ``INFO_MIN`` columns of Info still fit, else narrower
    (down to ``ADDR_MIN``; the addresses elided in the middle), as Wireshark narrows its
    columns rather than push Info out of the window."""
    if width <= 0:
        return want
    fixed = sum(w for n, w, _ in _columns(None, TIME_WIDTH.get(time_format)) if n not in ("Source", "Destination"))
    fixed += len(PACKET_COLUMNS)  # the spaces between the columns and before Info
    return max(min(want, (width - fixed - INFO_MIN) // 2), min(want, ADDR_MIN))  # (at ADDR_MIN the Protocol column narrows too: _columns)


def _address_cell(text: str, width: int) -> str:
    """An address in its column, elided in the middle where it is wider.  (Not
    ``waterfall_layout.elide``: importing it loads the waterfall model, ~20 ms on the packet
    list's first row, which the TUI's first screen is timed by.)"""
    if len(text) <= width:
        return text.ljust(width)
    a = (width - 1) // 2
    return text[:a] + "…" + text[len(text) - (width - 1 - a):]


TIME_TITLES = {"relative": "Time", "absolute": "Time (UTC)", "delta": "Delta time", "reference": "Ref time"}


def packet_header_text(addr_width: int | None = None, time_format: str = "relative", sort: tuple[str, bool] | None = None) -> str:
    """The column titles, each in its column: the Time column names its format when it is
    not the default (``Delta time``: since the previous displayed packet); the sorted column
    carries ▲ (ascending) or ▼ — beside its title where it fits, else in the space before it."""
    cols = _columns(addr_width, TIME_WIDTH.get(time_format))
    arrow = ("▼" if sort[1] else "▲") if sort is not None else ""
    out = ""
    for k, ((name, w, right), key) in enumerate(zip(cols, SORT_KEYS)):
        if key == "time":
            name = TIME_TITLES.get(time_format, name)
        sep = " " if k else ""
        if sort is not None and sort[0] == key:
            if len(name) + 2 <= w:
                name = f"{arrow} {name}" if right else f"{name} {arrow}"
            elif k:
                sep = arrow
        out += sep + _cell(name, w, right)
    return out + (f" Info {arrow}" if sort is not None and sort[0] == "info" else " Info")


def header_column_at(x: int, addr_width: int | None = None, time_format: str = "relative") -> str | None:
    """The sort key of the column under column ``x`` of the header (a click on it)."""
    pos = 0
    for (_, w, _), key in zip(_columns(addr_width, TIME_WIDTH.get(time_format)), SORT_KEYS):
        if pos <= x < pos + w + 1:
            return key
        pos += w + 1
    return "info" if x >= pos else None


def format_packet_row(row, addr_width: int | None = None, time: str | None = None, time_format: str = "relative") -> str:
    """A packet-list line from a ``PacketRecord`` (or its ``row()`` tuple); ``time``: the
    Time column's text in the chosen format (default: seconds since the first packet)."""
    no, tm, src, dst, proto, length, info = row.row() if hasattr(row, "row") else row
    vals = (str(no), time if time is not None else f"{tm:.6f}", src, dst, proto, str(length))
    return " ".join(_address_cell(v, w) if n in ("Source", "Destination") else _cell(v, w, r)
                    for v, (n, w, r) in zip(vals, _columns(addr_width, TIME_WIDTH.get(time_format)))) + " " + info


# The Info of a row drawn from the packet index before the analysis's frames are at hand
# (``index_record``): what the packet carries is not known yet, so the row says so
INFO_PENDING = "[Info pending: reading the frames…]"


def index_record(an, source, n: int):
    """Packet ``n``'s row from what a reopened analysis has at once, its packet index, with the
    packet's own IP header read from ``source`` (``analyzer.packet_record.PacketRecord``, no
    colouring rule): number, times, length and connection from the index; the addresses from
    the IP header (none for a packet that is not IP, as its final row); the protocol the index
    names (the highest layer the analysis saw in the packet: TLS where the list later names its
    version); and the Info ``INFO_PENDING``: it and the list's final protocol need the frames on
    the packet and the TCP analysis, which a capture reopened from the cache unpacks after its
    first screen.  It reads ``analyzer.packet``'s header walk alone: ``analyzer.detail`` (0.1 s of
    imports) is not needed before the first screen."""
    from wirefall.analyzer.model import PROTO_NAMES
    from wirefall.analyzer.packet import LINKTYPE_NAMES, addr_str, layers
    from wirefall.analyzer.packet_record import PacketRecord

    idx = an.index
    i = n - 1
    try:
        L = layers(idx.linktype[i], source.read(idx.offset[i], idx.caplen[i]))
    except OSError:
        L = None
    src = dst = ""
    if L is not None and L.transport >= 0 and L.ipver in (4, 6):  # (as analyzer.detail's row: addresses of a whole IP header)
        src, dst = addr_str(L.src), addr_str(L.dst)
    code = idx.proto[i]
    proto = PROTO_NAMES[code] if code or src else LINKTYPE_NAMES.get(idx.linktype[i], "?")
    ts = idx.ts
    t = ts[i]
    c = idx.conn[i]
    return PacketRecord(n, t, t - ts[0], t - ts[i - 1] if i > 0 else 0.0, src, dst, proto, idx.origlen[i], INFO_PENDING,
                        c if c >= 0 else None)


def packet_search_text(row) -> str:
    """Every column of a packet row, untruncated (what search looks in)."""
    no, tm, src, dst, proto, length, info = row.row() if hasattr(row, "row") else row
    return f"{no} {tm:.6f} {src} {dst} {proto} {length} {info}"


class LineList(ScrollView, can_focus=True):
    """A cursor over ``count`` lines, each rendered on demand by ``line_text(i)`` and
    cached (bounded).  Subclasses give the text and style of a line."""

    BINDINGS = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown,space", "page(1)", "Page down", show=False),
        Binding("home,g", "first", "First", show=False),
        Binding("end,G", "last", "Last", show=False),
        Binding("enter", "choose", "Open", show=False),
    ]

    class Moved(Message):
        def __init__(self, widget: LineList, index: int) -> None:
            super().__init__()
            self.widget = widget
            self.index = index

        @property
        def control(self) -> LineList:
            return self.widget

    class Chosen(Message):
        def __init__(self, widget: LineList, index: int) -> None:
            super().__init__()
            self.widget = widget
            self.index = index

        @property
        def control(self) -> LineList:
            return self.widget

    CACHE = 4096

    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self.count = 0
        self.cursor = 0
        self.content_width = 200
        self._cache: OrderedDict[int, tuple[str, Style]] = OrderedDict()

    # -- to override
    def line(self, i: int) -> tuple[str, Style]:
        return (str(i), DEFAULT_STYLE)

    # -- data
    def set_count(self, count: int, keep_cursor: bool = False) -> None:
        self.count = count
        self._cache.clear()
        if not keep_cursor or self.cursor >= count:
            self.cursor = 0
        self.virtual_size = Size(self.content_width, count)
        self.refresh()

    def invalidate(self) -> None:
        self._cache.clear()
        self.refresh()

    def cached_line(self, i: int) -> tuple[str, Style]:
        v = self._cache.get(i)
        if v is None:
            try:
                v = self.line(i)
            except Exception as e:  # a bad packet never breaks the list
                v = (f"[cannot render line {i}: {e.__class__.__name__}: {e}]", ERROR_STYLE)
            # every list line reaches the terminal from here: captured text as escapes, never raw controls
            v = (printable(v[0]), v[1])
            self._cache[i] = v
            if len(self._cache) > self.CACHE:
                self._cache.popitem(last=False)
        return v

    def render_line(self, y: int) -> Strip:
        sx, sy = self.scroll_offset
        i = sy + y
        width = self.size.width
        if i >= self.count:
            return Strip.blank(width)
        text, style = self.cached_line(i)
        if i == self.cursor:
            # (a row coloured by a colouring rule keeps readable text under the unfocused cursor)
            style = style + CURSOR_STYLE if self.has_focus else style + Style(bgcolor="#3a3a3a", color="#e0e0e0" if style.bgcolor else None)
        seg = text[sx : sx + width]
        return Strip([Segment(seg.ljust(width), style)], width)

    # -- cursor
    def move_to(self, index: int, notify: bool = True) -> None:
        if not self.count:
            return
        index = max(0, min(self.count - 1, index))
        old = self.cursor
        self.cursor = index
        self._scroll_to_cursor()
        if not self.scrollable_content_region.height:
            self.call_after_refresh(self._scroll_to_cursor)  # not laid out yet
        self.refresh_row(old)
        self.refresh_row(index)
        if notify:
            self.post_message(self.Moved(self, index))

    def _scroll_to_cursor(self) -> None:
        h = self.scrollable_content_region.height
        if h <= 0:
            return
        index = self.cursor
        if index < self.scroll_offset.y:
            self.scroll_to(y=index, animate=False)
        elif index >= self.scroll_offset.y + h:
            self.scroll_to(y=index - h + 1, animate=False)

    def refresh_row(self, i: int) -> None:  # (not ScrollView.refresh_lines, whose signature differs)
        y = i - self.scroll_offset.y
        if 0 <= y < self.size.height:
            self.refresh(self.size.region.__class__(0, y, self.size.width, 1))

    def action_cursor(self, delta: int) -> None:
        self.move_to(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self.move_to(self.cursor + direction * max(self.scrollable_content_region.height - 1, 1))

    def action_first(self) -> None:
        self.move_to(0)

    def action_last(self) -> None:
        self.move_to(self.count - 1)

    def action_choose(self) -> None:
        if self.count:
            self.post_message(self.Chosen(self, self.cursor))

    def on_click(self, event) -> None:
        i = self.scroll_offset.y + event.y
        if 0 <= i < self.count:
            self.move_to(i)
            if event.chain >= 2:
                self.action_choose()

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    def visible_lines(self) -> list[str]:
        """The text of the lines on screen (for tests and the tmux check)."""
        y0 = self.scroll_offset.y
        return [self.cached_line(i)[0] for i in range(y0, min(self.count, y0 + self.scrollable_content_region.height))]


class PacketList(LineList):
    """The packet list.  ``displayed`` is what the display filter keeps, in capture order
    (all packets, or the filtered ones); ``packets`` the same packets in the order shown
    (sorted by a column, or capture order).  Rows come from ``row_fn(n)``
    (``analyzer.packet_record.packet_record``: the record the CLI and the web app show);
    the Time column is drawn in ``time_format`` with the time references ``refs``;
    ``marks`` are the marked packets (drawn white on black, as in Wireshark)."""

    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self.packets: Sequence[int] = range(0)
        self.displayed: Sequence[int] = range(0)
        self.row_fn: Callable[[int], Any] | None = None
        self.wanted_addr_width = ADDR_WIDTH  # every address whole (address_width); addr_width: as drawn
        # packet -> (colouring rule, fg, bg) or None (ui/tui/expert.packet_colours); None: protocol colours
        self.colour_fn: Callable[[int], tuple[str, str, str] | None] | None = None
        self.analysis: Any = None  # for the Time column's other formats (analyzer.packet_record.time_text)
        self.time_format = "relative"
        self.refs: list[int] = []  # time references, sorted
        self.marks: set[int] = set()
        self.sort: tuple[str, bool] | None = None  # (column key, descending) the list is sorted by; None: capture order
        self._pos: dict[int, int] | None = None  # packet -> line, when sorted

    class ColumnsChanged(Message):
        """The address columns' width changed with the list's: the header is redrawn."""

    @property
    def addr_width(self) -> int:
        return fit_address_width(self.wanted_addr_width, self.size.width, self.time_format)

    @addr_width.setter
    def addr_width(self, width: int) -> None:
        self.wanted_addr_width = width

    def on_resize(self) -> None:
        self.post_message(self.ColumnsChanged())
        self.call_after_refresh(self._scroll_to_cursor)  # (a shorter list keeps the selected packet in view)

    def search_text(self, i: int) -> str:
        try:
            return printable(packet_search_text(self.record(i)))
        except Exception:  # noqa: BLE001
            return self.cached_line(i)[0]

    def set_packets(self, packets: Sequence[int], row_fn: Callable[[int], Any], keep: int | None = None) -> None:
        """Show ``packets`` (capture order) in capture order; a sort is applied after with
        ``set_order``."""
        self.packets = packets
        self.displayed = packets
        self._pos = None
        self.row_fn = row_fn
        self.content_width = 240
        self.set_count(len(packets))
        if keep is not None:
            self.select_packet(keep, notify=False)

    def set_order(self, order: Sequence[int], sort: tuple[str, bool] | None, keep: int | None = None) -> None:
        """Show the displayed packets in ``order`` (sorted by ``sort``), the cursor kept on ``keep``."""
        self.packets = order
        self.sort = sort
        self._pos = None if order is self.displayed else {n: i for i, n in enumerate(order)}
        self.set_count(len(order), keep_cursor=True)
        if keep is not None:
            self.select_packet(keep, notify=False)

    def grow(self, n: int) -> None:
        """While loading: the list now holds packets 1..n; the cursor stays, rows on screen
        are drawn again (a packet's frames may have been decoded since)."""
        self.packets = range(1, n + 1)
        self.displayed = self.packets
        self.count = n
        self.virtual_size = Size(self.content_width, n)
        self.invalidate()

    def packet_at(self, i: int) -> int | None:
        return self.packets[i] if 0 <= i < len(self.packets) else None

    @property
    def current_packet(self) -> int | None:
        return self.packet_at(self.cursor)

    def index_of(self, n: int) -> int | None:
        """The line packet ``n`` is on (None: not shown)."""
        from bisect import bisect_left

        if self._pos is not None:
            return self._pos.get(n)
        pk = self.packets
        if isinstance(pk, range):
            return n - pk.start if pk.start <= n < pk.stop else None
        i = bisect_left(pk, n)
        return i if i < len(pk) and pk[i] == n else None

    def select_packet(self, n: int, notify: bool = True) -> bool:
        i = self.index_of(n)
        if i is None:
            return False
        self.move_to(i, notify)
        return True

    def record(self, i: int):
        """The packet record of line ``i`` (``analyzer.packet_record.PacketRecord``)."""
        return self.row_fn(self.packets[i])  # type: ignore[misc]

    def row(self, i: int) -> tuple:
        """Line ``i`` as ``analyzer.detail.packet_row``'s tuple."""
        r = self.record(i)
        return r.row() if hasattr(r, "row") else r

    def time_text(self, rec) -> str:
        """The Time column of a record in the chosen format (``analyzer.packet_record.time_text``)."""
        no, rel = (rec.number, rec.relative) if hasattr(rec, "relative") else (rec[0], rec[1])
        if self.time_format == "relative" or self.analysis is None:
            return f"{rel:.6f}"
        from wirefall.analyzer.packet_record import time_text

        return time_text(self.analysis, no, self.time_format, None if isinstance(self.displayed, range) else self.displayed, self.refs)

    def line(self, i: int) -> tuple[str, Style]:
        rec = self.record(i)
        no, _, _, _, proto, _, info = rec.row() if hasattr(rec, "row") else rec
        st = proto_style(proto)
        err = "[error]" in info or "Malformed" in info
        col = getattr(rec, "colour", None)
        if col is None and self.colour_fn is not None:
            col = self.colour_fn(no)
        if no in self.marks:
            st = MARKED_STYLE + Style(bold=err)
        elif col is not None:
            st = Style(color=col[1], bgcolor=col[2], bold=err)
        elif err:
            st = ERROR_STYLE
        return format_packet_row(rec, self.addr_width, self.time_text(rec), self.time_format), st


class PacketHeader(Static):
    """The packet list's column titles; a click on one sorts the list by it (again: the
    other way, a third time: capture order), as Wireshark's column header does."""

    class Clicked(Message):
        def __init__(self, column: str) -> None:
            super().__init__()
            self.column = column

    def on_click(self, event) -> None:
        pl = self.app.query_one(PacketList)
        col = header_column_at(event.x, pl.addr_width, pl.time_format)
        if col is not None:
            self.post_message(self.Clicked(col))


class HexView(ScrollView, can_focus=True):
    """Hex + ASCII dump (tshark -x layout) with one highlighted byte range, over several
    byte sources as Wireshark's tabs below its bytes pane: the packet ("Frame"), then one
    "Decrypted TLS" source per decrypted record completing on it.  ``x`` (or a click on the
    tab line above) shows the next source."""

    WIDTH = 16

    class SourceChanged(Message):
        def __init__(self, view: HexView) -> None:
            super().__init__()
            self.view = view

    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self.data = b""
        self.hl = (-1, -1)
        self.title_text = ""
        self.sources: list[tuple[str, bytes, str | None]] = [("Frame (0 bytes)", b"", None)]
        self.current = 0

    def show(self, data: bytes, hl: tuple[int, int] = (-1, -1)) -> None:
        """One source: the packet's bytes."""
        self.show_sources([(f"Frame ({len(data)} bytes)", data, None)], hl=hl)

    def show_sources(self, sources: list[tuple[str, bytes, str | None]], current: int = 0, hl: tuple[int, int] = (-1, -1)) -> None:
        """``sources``: (title, bytes, error or None); the first is the packet."""
        self.sources = sources or [("Frame (0 bytes)", b"", None)]
        self.current = -1
        self.select_source(current, hl)

    def select_source(self, k: int, hl: tuple[int, int] = (-1, -1)) -> None:
        k = max(0, min(k, len(self.sources) - 1))
        changed = k != self.current
        self.current = k
        self.data = self.sources[k][1]
        self.hl = hl
        if changed:
            self._size_lines()
            self.scroll_to(y=0, animate=False)
            self.post_message(self.SourceChanged(self))
        self.refresh()

    def _size_lines(self) -> None:
        self.virtual_size = Size(6 + self.WIDTH * 4 + 2, max((len(self.data) + self.WIDTH - 1) // self.WIDTH, 1))

    def on_resize(self, event) -> None:
        # 16 bytes a line (tshark -x) where they fit (72 columns), 8 in a narrow pane
        w = 16 if event.size.width >= 72 else 8
        if w != self.WIDTH:
            self.WIDTH = w
            self._size_lines()
            self.refresh()

    def next_source(self) -> None:
        self.select_source((self.current + 1) % len(self.sources))

    def tabs_text(self, width: int | None = None) -> Text:
        """The source titles; when they do not fit in ``width``, only the current one with
        its position ("Decrypted TLS 2/5 (16384 bytes)")."""
        full = self._tabs_full()
        if width is None or len(full.plain) <= width:
            self.compact = False
            return full
        self.compact = True
        title, _, err = self.sources[self.current]
        name, _, rest = title.partition(" (")
        t = Text()
        t.append(printable(f" {name} {self.current + 1}/{len(self.sources)}" + (f" ({rest}" if rest else "") + (" [!]" if err else "") + " "),
                 style="bold #000000 on #87afd7")
        t.append("   x / click: next", style="#808080")
        return t

    def _tabs_full(self) -> Text:
        t = Text()
        for i, (title, _, err) in enumerate(self.sources):
            if i:
                t.append(" │ ", style="#606060")
            st = "bold #000000 on #87afd7" if i == self.current else ("#ff8787" if err else "#c0c0c0")
            t.append(printable(f" {title}{' [!]' if err else ''} "), style=st)
        if len(self.sources) > 1:
            t.append("   x: next", style="#808080")
        return t

    def tab_at(self, x: int) -> int | None:
        """The source whose title is at column x of ``tabs_text()`` (compact: the next one)."""
        if getattr(self, "compact", False):
            return (self.current + 1) % len(self.sources)
        pos = 0
        for i, (title, _, err) in enumerate(self.sources):
            if i:
                pos += 3
            w = len(title) + 2 + (4 if err else 0)
            if pos <= x < pos + w:
                return i
            pos += w
        return None

    def highlight(self, start: int, end: int) -> None:
        self.hl = (start, end)
        if start >= 0:
            line = start // self.WIDTH
            if not (self.scroll_offset.y <= line < self.scroll_offset.y + self.size.height):
                self.scroll_to(y=max(line - 1, 0), animate=False)
        self.refresh()

    def line_text(self, li: int) -> Text:
        from wirefall.analyzer.detail import _printable

        off = li * self.WIDTH
        chunk = self.data[off : off + self.WIDTH]
        t = Text(f"{off:04x}  ", style="#808080")
        a, b = self.hl
        hl_style = "bold #000000 on #e5c07b"
        for j, byte in enumerate(chunk):
            st = hl_style if a <= off + j < b else "#d0d0d0"
            t.append(f"{byte:02x}", style=st)
            t.append(" ", style=hl_style if a <= off + j < b - 1 and j < len(chunk) - 1 else "")
        t.append("   " * (self.WIDTH - len(chunk)) + "  ")
        for j, byte in enumerate(chunk):
            t.append(_printable(byte), style=hl_style if a <= off + j < b else "#a0a0a0")
        return t

    def render_line(self, y: int) -> Strip:
        li = self.scroll_offset.y + y
        width = self.size.width
        err = self.sources[self.current][2] if self.sources else None
        if err and li == 0:
            return Strip([Segment(printable(f"cannot show: {err}")[:width].ljust(width), ERROR_STYLE)], width)
        if li * self.WIDTH >= len(self.data):
            return Strip.blank(width)
        segs = list(self.line_text(li).render(self.app.console))
        return Strip(segs).crop_extend(self.scroll_offset.x, self.scroll_offset.x + width, None)

    def lines(self) -> list[str]:
        """The hex dump of the current source (as ``tshark -x`` prints it)."""
        return [self.line_text(i).plain for i in range((len(self.data) + self.WIDTH - 1) // self.WIDTH)]


class TabLine(Static):
    """The titles of the bytes pane's sources; a click selects one."""

    def __init__(self, view_id: str, **kw) -> None:
        super().__init__("", **kw)
        self.view_id = view_id

    def on_click(self, event) -> None:
        hv = self.app.query_one(f"#{self.view_id}", HexView)
        k = hv.tab_at(event.x)
        if k is not None:
            hv.select_source(k)


# ---------------------------------------------------------------- waterfall

EIGHTHS = " ▏▎▍▌▋▊▉█"


def cell_segments(cells, bg) -> list[Segment]:
    """``bar_cells`` output as Segments, one per run of the same colours; a cell may carry
    its own background as a third item (the browser's bar, ``browser_cells``), else ``bg``."""
    segs: list[Segment] = []
    run: tuple[str | None, str | None] | None = None
    run_t: list[str] = []
    for cell in cells:
        key = (cell[1], cell[2] if len(cell) > 2 and cell[2] is not None else bg)
        if key != run and run_t:
            segs.append(Segment("".join(run_t), Style(color=run[0], bgcolor=run[1])))  # type: ignore[index]
            run_t = []
        run = key
        run_t.append(cell[0])
    if run_t and run is not None:
        segs.append(Segment("".join(run_t), Style(color=run[0], bgcolor=run[1])))
    return segs


def waterfall_legend(keys: str, browser: list[str] | None = None, milestones: list | None = None,
                     alone: bool = False, rows: list | None = None) -> Text:
    """The phase and content-class colours of the waterfall, the marker glyphs, then the
    view's keys (the same palette and glyphs as the figures: ui/waterfall_layout.py).
    ``browser``: the sources of a browser log laid over the capture (e.g. ``["netlog"]``),
    named first: its thin bar is the lower half of each row (``browser_cells``);
    ``milestones`` (``Waterfall.milestones``): each line's name, then.  ``alone``: a browser log
    opened alone (no packets): every bar is the log's own, there is no wire bar above its half.
    ``rows``: the waterfall's rows — a row that began before the capture (``←`` and ``≥``), or
    whose method the capture does not give (``?``), has its marks explained after the milestones."""
    from wirefall.analyzer.model import not_sent_of
    from wirefall.ui import waterfall_layout as L
    from wirefall.ui.figures_marks import UNKNOWN_METHOD, failed, method_unknown

    t = Text(" ")
    if browser and alone:
        t.append(f"bars: the browser log's own times ({', '.join(browser)}; no packets, no wire bar)  ")
    elif browser:
        t.append(BROWSER_GLYPH + BROWSER_GLYPH, style=L.BLOCKED_COLOR)
        t.append(f" lower half: browser's view ({', '.join(browser)}), same colours  ")
    seen = set()
    for m in milestones or ():
        if m.name in L.MILESTONE_SHORT and m.name not in seen:
            seen.add(m.name)
            t.append("┊ ", style=L.MILESTONE_COLORS[m.name])
            t.append(L.MILESTONE_SHORT[m.name] + "  ")
    if any(L.start_unknown(r) for r in rows or ()):
        t.append(f"{L.START_UNKNOWN} ≥ began before the capture (start unknown, duration at least)  ")
    if any(method_unknown(r) for r in rows or ()):
        t.append(f"{UNKNOWN_METHOD} method unknown  ")
    if any(getattr(r, "background", False) for r in rows or ()):  # (the label's "bg", its row grey: said nowhere)
        t.append("bg", style="#808080")
        t.append(" background traffic, not the page's  ")
    # a browser log's requests that never reached the network: their status column's words (the
    # figures' "disk cache" and red "failed" rows; "(c)" was explained nowhere)
    ns = {not_sent_of(getattr(r, "browser", None)) for r in rows or ()}
    if any(n and "cache" in n for n in ns):
        t.append("(c) from the browser's cache  ")
    if any(failed(r) for r in rows or ()):
        t.append("fail", style="#ff8787")
        t.append(" failed before the network (its error beside it)  ")
    for k, c in (("blocked", L.BLOCKED_COLOR), *L.PHASE_COLORS.items(), ("send", L.SEND_COLOR), ("wait", L.WAIT_COLOR)):
        t.append("█ ", style=c)
        t.append(L.PHASE_LABELS[k] + "  ")
    t.append(IDLE_CHAR + " ", style=IDLE_TUI_COLOR)
    t.append("connection idle  ")
    for k, (light, dark) in L.CONTENT_COLORS.items():
        t.append("█", style=light)
        t.append("█ ", style=dark)
        t.append(k + "  ")
    t.append("(dark: packets arriving)  ")
    for k in L.GLYPH_KINDS:
        t.append(f"{L.GLYPHS[k]} {L.GLYPH_MEANING[k]}  ")
    for k in L.TICK_KINDS:
        t.append(TICK_GLYPH, style=tick_colors()[k])
        t.append(f" {TICK_LABELS[k]}  ")
    t.append(keys)
    return t


# The bar's ticks (``TICK_KINDS``): one glyph, told apart by colour alone, so the legend and the
# rows read these same colours.  The figures' loss tick is black (on their white paper); a tick
# cell here is drawn on the terminal's own background, dark or light (or the cursor's blue), so
# loss takes the Okabe–Ito bluish green: ≥ 3.4 : 1 on white and on the TUI's #121212, far in
# hue from the retransmission's red and the out-of-order orange (for red–green colour blindness
# too), and from every phase and content colour (CIEDE2000 ≥ 15; the CSS download's is closest).
TICK_GLYPH = "┃"
LOSS_TICK_COLOR = "#009e73"
TICK_LABELS = {"retransmission": "retransmission", "out_of_order": "out-of-order", "gap": "loss"}
_TICK_COLORS: dict[str, str] = {}


def tick_colors() -> dict[str, str]:
    """Each tick kind's colour in the TUI, legend and rows alike: the figures' own
    (``waterfall_layout.TICK_COLORS``, read when first asked: that module is not imported at
    start) but the loss tick's, ``LOSS_TICK_COLOR``."""
    if not _TICK_COLORS:
        from wirefall.ui.waterfall_layout import TICK_COLORS

        _TICK_COLORS.update(TICK_COLORS, gap=LOSS_TICK_COLOR)
    return _TICK_COLORS


def tick_cells(cells, markers, v0: float, v1: float) -> None:
    """Retransmissions and gaps (``TICK_KINDS``) ticked on the bar cells, in place, in the
    legend's colours (``tick_colors``)."""
    from wirefall.ui.waterfall_layout import TICK_KINDS

    colors = tick_colors()
    width = len(cells)
    span = (v1 - v0) or 1e-9
    for m in markers:
        if m.kind in TICK_KINDS:
            c = int((m.time - v0) / span * width)
            if 0 <= c < width:
                cells[c] = (TICK_GLYPH, colors[m.kind])


def duration_cells(cells, text: str, *shorter: str) -> None:
    """The row's duration written right of its bar (left of it when no room), in place; where
    neither side has room for ``text``, the first of ``shorter`` that fits (``25.3 ms`` for
    ``25.3 ms (+253 ms preconnect)``: at 100 columns the row had no duration at all)."""
    if not text:
        return
    filled = [i for i, cell in enumerate(cells) if cell[0] != " "]
    if not filled:
        return
    a, b = filled[0], filled[-1]
    for cand in (text, *shorter):
        t = " " + cand
        if b + 1 + len(t) <= len(cells):
            at = b + 1
            break
        if a - len(t) - 1 >= 0:
            at, t = a - len(t) - 1, cand + " "
            break
    else:
        return
    for k, ch in enumerate(t):
        cells[at + k] = (ch, "#a8a8a8")


def start_cells(cells, r, v0: float, v1: float) -> None:
    """A row whose start is not in the capture (``waterfall_layout.start_unknown``): ``←`` at its
    bar's left end, in place — in the cell before the bar where it is blank, else on the bar's
    first cell (dark on the bar's colour)."""
    from wirefall.ui.waterfall_layout import START_UNKNOWN, start_unknown

    if not start_unknown(r) or not cells or r.end < v0 or r.start > v1:
        return
    c = max(int((r.start - v0) / ((v1 - v0) or 1e-9) * len(cells)), 0)
    c = min(c, len(cells) - 1)
    if c > 0 and cells[c - 1][0] == " ":
        cells[c - 1] = (START_UNKNOWN, "#e0e0e0")
    else:
        cell = cells[c]
        cells[c] = (START_UNKNOWN, "#000000", cell[1] or "#a8a8a8") if cell[0] != " " else (START_UNKNOWN, "#e0e0e0")


IDLE_CHAR, IDLE_TUI_COLOR = "─", "#7a7a7a"  # the idle phase (waterfall.PHASES): WebPageTest leaves it blank


def bar_cells(phases, colors: dict, v0: float, v1: float, width: int) -> list[tuple[str, str | None]]:
    """Cells of one waterfall bar: (character, colour) per cell, phases scaled from the
    time window [v0, v1] to ``width`` cells; a phase shorter than a cell still shows as a
    partial block (left eighths), so nothing that happened disappears when zoomed out."""
    cells: list[tuple[str, str | None]] = [(" ", None)] * width
    span = (v1 - v0) or 1e-9
    for name, a, b in phases:
        x0 = (a - v0) / span * width
        x1 = (b - v0) / span * width
        if x1 < 0 or x0 >= width:
            continue
        c0 = max(int(x0), 0)
        c1 = min(int(x1) + 1, width)
        color = colors.get(name)
        if name == "idle":  # (a connection ready before its request: a faint line, where nothing else is drawn)
            for c in range(c0, c1):
                if cells[c][0] == " ":
                    cells[c] = (IDLE_CHAR, IDLE_TUI_COLOR)
            continue
        for c in range(c0, c1):
            cov = min(x1, c + 1) - max(x0, c)
            if cov <= 0 and not (c == c0 and x1 - x0 < 1e-9 + 1 / 8):
                continue
            k = max(1, min(8, int(cov * 8 + 0.999)))
            old = cells[c]
            if old[0] == "█" and k < 8:
                continue  # do not thin a cell another phase fills
            cells[c] = (EIGHTHS[k], color)
    return cells


def nice_step(span: float, cells: int, min_cells: int = 12) -> float:
    """A 1-2-5 tick step (seconds) giving labels at least ``min_cells`` apart."""
    if span <= 0 or cells <= 0:
        return 1.0
    raw = span * min_cells / cells
    import math

    e = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if m * e >= raw:
            return m * e
    return 10 * e


def fmt_ms(t: float) -> str:
    ms = t * 1000
    if abs(ms) >= 10000:
        return f"{ms / 1000:.1f}s"
    if abs(ms) >= 100 or ms == int(ms):
        return f"{ms:.0f}ms"
    return f"{ms:.1f}ms"


def tick_label(t: float, step: float) -> str:
    """A time-axis label: every tick of one axis in one unit with the decimals its step needs
    (0ms 50ms 100ms 150ms, 0.5ms 1.0ms 1.5ms, 0s 2s … 12s), so that the labels read alike."""
    import math

    if step >= 1:
        return f"{t:.{max(0, -math.floor(math.log10(step) + 1e-9))}f}s"
    ms, sms = t * 1000, step * 1000
    return f"{ms:.{max(0, -math.floor(math.log10(sms) + 1e-9))}f}ms"


# the time-axis keys of the waterfall and of the compare view's side-by-side waterfalls
ZOOM_BINDINGS = [
    Binding("plus,equals_sign", "zoom(0.5)", "Zoom in"),
    Binding("minus,underscore", "zoom(2)", "Zoom out"),
    Binding("left,h", "pan(-0.2)", "Pan left"),
    Binding("right,l", "pan(0.2)", "Pan right"),
    Binding("0", "reset_zoom", "Reset zoom"),
]


# the browser's thin bar (a browser log laid over the capture): the lower half of the row's
# cells -- a lower half block where the wire draws nothing, the cell's background under a
# wire cell (a full wire block becomes its upper half), as the figures draw it under the row
BROWSER_GLYPH, WIRE_OVER_BROWSER = "▄", "▀"


def browser_span_cells(r, v0: float, v1: float, width: int) -> list[str | None]:
    """Per cell, the colour of the browser's view of row ``r`` (``Row.browser_phases``: its
    log's request start → response end, scaled from [v0, v1] like the wire's bar, the same
    phase colours as the figures' browser bar), None where it has none."""
    from wirefall.ui.waterfall_layout import BLOCKED_COLOR, phase_colors

    if not getattr(r, "browser_phases", None):
        return [None] * width
    cols = phase_colors(r)
    bcols = {ph: BLOCKED_COLOR if ph == "blocked" else cols.get("chunk" if ph == "receive" else ph, "#999999")
             for ph, _a, _b in r.browser_phases}
    return [c if ch != " " else None for ch, c in bar_cells(r.browser_phases, bcols, v0, v1, width)]


def browser_cells(cells, r, v0: float, v1: float) -> None:
    """The browser's view of row ``r`` in the lower half of its cells, in place (see
    ``BROWSER_GLYPH``): nothing for a row without a browser log's record."""
    span = browser_span_cells(r, v0, v1, len(cells))
    for k, bc in enumerate(span):
        if bc is None:
            continue
        ch, fg = cells[k][0], cells[k][1]
        if ch == " ":
            cells[k] = (BROWSER_GLYPH, bc)
        elif ch == "█":
            cells[k] = (WIRE_OVER_BROWSER, fg, bc)
        else:  # (a partial wire cell or a tick: kept, the browser's colour behind it)
            cells[k] = (ch, fg, bc)


def chunk_overlay(cells: list, chunks, color, v0: float, v1: float) -> None:
    """The download's bursts of packets, dark on the light download, in place: a cell is
    dark where bursts cover at least half of it — all the bursts in it summed (a continuous
    download is many short bursts: each drawn alone, the last one's thin eighth replaced the
    cell and a steady download read as broken ticks on an empty bar, review 26) — in the
    shape the phase gives the cell; on no phase (a burst outside the row's phases) as the
    eighths it covers.  Less than half a cell of bursts leaves the light download."""
    width = len(cells)
    span = (v1 - v0) or 1e-9
    cover = [0.0] * width
    for a, b, _k in chunks:
        x0 = (a - v0) / span * width
        x1 = (b - v0) / span * width
        if x1 < 0 or x0 >= width:
            continue
        c0, c1 = max(int(x0), 0), min(int(x1) + 1, width)
        for c in range(c0, c1):
            cover[c] += max(min(x1, c + 1) - max(x0, c), 0.0)
        if x1 - x0 < 1 / 8 and 0 <= c0 < width:  # (a burst of one instant still shows where nothing else is drawn)
            cover[c0] = max(cover[c0], 1 / 8)
    for c, cov in enumerate(cover):
        if cov <= 0:
            continue
        ch = cells[c][0]
        if ch == " ":
            cells[c] = (EIGHTHS[max(1, min(8, int(min(cov, 1.0) * 8 + 0.999)))], color)
        elif cov >= 0.5 and ch in EIGHTHS:
            cells[c] = (ch, color)


def row_cells(r, v0: float, v1: float, width: int) -> list[tuple]:
    """The cells of one row as the figures draw it (ui/waterfall_layout.py): its phases, the
    bursts of packets of its download dark on the light download, retransmission ticks, the
    browser's view in the lower half (with a browser log) and the duration right of the bar."""
    from wirefall.ui.waterfall_layout import phase_colors, row_duration_text, short_duration_text

    from wirefall.ui.figures_marks import NO_RESPONSE_COLOR, failed, no_response

    cols = phase_colors(r)
    cells: list[tuple] = list(bar_cells(r.phases, cols, v0, v1, width))
    if r.chunks:
        chunk_overlay(cells, r.chunks, cols.get("chunk"), v0, v1)
    tick_cells(cells, r.markers, v0, v1)
    browser_cells(cells, r, v0, v1)
    nr = no_response(r)
    why = failed(r)  # (a browser log's request that failed before the network: its error, as the figures say
    # it — "0.00 ms" beside its instant read as a request that took no time; review 29)
    if (r.end < v0 or r.start > v1) and width > 12:  # the row is out of the view: said at the edge it lies beyond
        # (a failed row too: "← 0.00 ms" read as a request that took no time, where in view it said its error)
        text = ("no response" if nr else "failed" if why else short_duration_text(r))
        text = f"← {text}" if r.end < v0 else f"{text} →"
        at = 0 if r.end < v0 else max(width - len(text), 0)
        for k, ch in enumerate(text[:width]):
            cells[at + k] = (ch, NO_RESPONSE_COLOR if nr else "#ff8787" if why else "#a0a0a0")
        return cells
    if nr:  # (as the figures: open to the capture's end, not the request's own microseconds)
        span = (v1 - v0) or 1e-9
        c0 = max(int((r.end - v0) / span * width), 0) if r.end <= v1 else width
        for k in range(c0, width):
            if cells[k][0] == " ":
                cells[k] = ("┄", NO_RESPONSE_COLOR)
        text = "no response"
        at = next((k for k in range(width - 1, -1, -1) if cells[k][0] not in (" ", "┄")), -1) + 2
        if at + len(text) <= width:
            for k, ch in enumerate(text):
                cells[at + k] = (ch, NO_RESPONSE_COLOR)
        return cells
    start_cells(cells, r, v0, v1)
    duration_cells(cells, why or row_duration_text(r), *(("failed",) if why else (short_duration_text(r),)))
    return cells


def narrow_url(url: str | None, n: int) -> str:
    """A narrow terminal's host…path in ``n`` characters: ``short_url``'s where it keeps the
    file (the path's last segment) whole, else the host's start alone (``HOST_START``
    characters, its first label where that is shorter, more where the file leaves room), ``…``
    and the file in the rest, its start and end (``images…/csm-captcha-i…min.js``): at 80 columns
    ``short_url`` gave the amazon load's images-na host 14 of 29 characters
    (``imag…amazon.com/…/csm-cap….js``) and its files 10."""
    from wirefall.ui.waterfall_layout import HOST_START, short_path, short_url

    s = short_url(url or "", n)
    u = (url or "").split("://", 1)[-1]
    host, _, path = u.partition("/")
    path, q, _ = path.partition("?")
    seg = path.rstrip("/").rsplit("/", 1)[-1]
    if not seg:  # (no file: the host names the request)
        return s
    seg += path[len(path.rstrip("/")):][:1] + ("?…" if q else "")  # ("OE/", "inputs?…": as short_url ends them)
    if s.endswith("/" + seg) or s.endswith("…" + seg):
        return s
    first = min(len(host.split(".", 1)[0]), HOST_START)
    m = min(len(seg), n - 2 - first)  # (the file's characters: whole where the host's start leaves room for it)
    start = host[:max(n - 2 - m, 1)].rstrip(".")
    return start + "…" + short_path("/" + seg, n - len(start) - 1)


WIDE = 140  # terminal columns past which the waterfall's label widens (WaterfallView.url_room)


class WaterfallView(LineList):
    """One row per request: index, marker glyphs, host…path, protocol, status, then the phase
    bar scaled to the visible time window with the row's duration; + / - zoom around the
    cursor's request, ← / → pan, 0 resets, c groups by connection, H by host, s changes the
    sort (start, duration, size, host)."""

    BINDINGS = LineList.BINDINGS + ZOOM_BINDINGS + [Binding("c", "group", "Group by connection"),
                                                    Binding("H", "group('host')", "Group by host"),
                                                    Binding("s", "sort", "Sort")]
    LABEL = 44

    class Zoomed(Message):
        pass

    class GroupToggled(Message):
        """``c`` / ``H``: the app rebuilds the rows grouped by connection / host (or not)."""

        def __init__(self, group: str = "connection") -> None:
            super().__init__()
            self.group = group

    class SortCycled(Message):
        """``s``: the app rebuilds the rows in the next sort order (analyzer.waterfall.SORTS)."""

    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self.rows: list = []
        self.t0 = 0.0
        self.t1 = 1.0
        self.v0 = 0.0
        self.v1 = 1.0
        self.group_by: str | None = None
        self.glyph: dict[int, str] = {}  # exchange -> connection bracket when grouped
        self.badge_w = 8  # the protocol badge column: as wide as the widest badge shown (set_rows)
        self.milestones: list[tuple[float, str]] = []  # (time, colour): ┊ down every row where no bar is (set_rows)

    def set_rows(self, rows: list, t0: float, t1: float, group_by: str | None = None, keep_view: bool = False,
                 milestones: list | None = None, wf=None) -> None:
        """``group_by="connection"``: rows come ordered by connection (analyzer.waterfall.build);
        each row then starts with a bracket and the connection id.  ``milestones``: the
        waterfall's (``Waterfall.milestones``), drawn as the figures draw them, a dotted line
        down the rows (not the first packet's and the page start's: the axis' origin)."""
        from wirefall.ui.figures_marks import page_view
        from wirefall.ui.waterfall_layout import MILESTONE_COLORS, MILESTONE_SHORT

        old = (self.v0, self.v1)
        self.rows = rows
        self.milestones = [(m.time, MILESTONE_COLORS[m.name]) for m in milestones or () if m.name in MILESTONE_SHORT]
        if t1 <= t0:
            t1 = t0 + 1e-3
        self.t0, self.t1 = t0, t1
        # the page's span when background rows reach beyond it (the figures' rule,
        # figures_marks.page_view; ``wf``: the waterfall the rows are of); 0 toggles to all of it
        self.page_view = page_view(wf, t0, t1, rows) if wf is not None else None
        self.v0, self.v1 = self.page_view or (t0, t1)
        if keep_view and t0 <= old[0] < old[1] <= t1:
            self.v0, self.v1 = old
        self.group_by = group_by
        self.badge_w = min(max([len(r.badge) for r in rows] + [2]), 8)  # (the widest protocol badge shown: "h2" needs 2, not 8)
        self.glyph = {}
        if group_by in ("connection", "host"):
            key = (lambda r: r.connection) if group_by == "connection" else (lambda r: r.host)
            for i, r in enumerate(rows):
                first = i == 0 or key(rows[i - 1]) != key(r)
                last = i == len(rows) - 1 or key(rows[i + 1]) != key(r)
                self.glyph[r.exchange] = "─" if first and last else "┌" if first else "└" if last else "│"
        self.content_width = 0  # the bars scale to the width: no horizontal scrolling
        self.set_count(len(rows))
        self.post_message(self.Zoomed())

    def on_resize(self) -> None:
        # the axis above is drawn by the app from this view's width: redrawn once it is known
        # (the app's own resize handler ran before the new layout gave this view its width)
        self.post_message(self.Zoomed())

    def action_group(self, group: str = "connection") -> None:
        self.post_message(self.GroupToggled(group))

    def action_sort(self) -> None:
        self.post_message(self.SortCycled())

    BAR_SHARE = 0.4  # of a narrow terminal's columns the bars keep (the URL gives way, down to URL_MIN): 32 of 80
    BAR_MIN = 20  # columns the bars keep at the least (on a terminal under 50 columns)
    URL_MIN = 14

    def url_room(self, grouped: bool) -> tuple[int, bool]:
        """The method and host…path width — 34 (29 grouped) and what a narrow badge column
        leaves — and whether the terminal is too narrow for it (the width then less, so the bars
        keep BAR_SHARE of the columns: at 80, 32 of them; they had 20 beside a 58-column label)."""
        from wirefall.ui.waterfall_layout import GLYPH_KINDS

        bw = self.badge_w
        n = self.LABEL - (15 if grouped else 10) + 8 - bw
        width = self.size.width
        if width > WIDE:  # a wide terminal: the URL takes a third of the columns past WIDE (up to 40 more): at 200
            # columns its 34 characters cut every file name on a real page ("…/cs…in.js"; review 26)
            n += min((width - WIDE) // 3, 40)
        if not width:
            return n, False
        bars = max(self.BAR_MIN, int(width * self.BAR_SHARE))
        # (the rest of the label: number, glyphs, badge, status and their spaces; "│" either side of the bars)
        fits = width - (4 + 1 + len(GLYPH_KINDS) + 1 + 1 + bw + 4 + 1 + (5 if grouped else 0)) - bars - 2
        return max(min(n, fits), self.URL_MIN), fits < n

    def label_text(self, r) -> str:
        """The request's id (as Wireshark's No., it stays with the request when the rows are
        grouped or sorted; `wirefall requests --detail N` takes it), marker glyphs and
        host…path as the figures elide it (ui/waterfall_layout.py), then badge and status.
        On a narrow terminal (``url_room``) the label keeps what names the request: no "GET"
        (only other methods are shown; WebPageTest and DevTools show none) and a file that
        would be cut keeps its room before the host (``narrow_url``; the request view has all)."""
        from wirefall.ui.waterfall_layout import glyphs, short_url

        from wirefall.analyzer.model import not_sent_of
        from wirefall.ui.figures_marks import UNKNOWN_METHOD, failed, no_response

        # (the status; "<?>" where a response came whose status the capture does not give — a
        # QPACK entry inserted before it —, "-" where none came)
        # ("fail": a browser log's request that failed before the network, its row red — it read "-")
        ns = not_sent_of(getattr(r, "browser", None))
        st = (str(r.status) if r.status is not None else "-" if r.pushed or no_response(r) else
              "(c)" if ns and "cache" in ns else "fail" if failed(r) else "-" if ns else "<?>")
        g = self.glyph.get(r.exchange) if self.group_by else None
        n, narrow = self.url_room(g is not None)
        meth = (r.method or ("PUSH" if r.pushed else UNKNOWN_METHOD))[:7]  # ("?": its request is not in the capture)
        if narrow and meth == "GET":
            meth = ""
        if r.background:  # (as the figures' "bg" mark: not the page's; the label is dimmed too)
            meth = ("bg " + meth).rstrip()
        bw = self.badge_w
        room = max(n - len(meth) - 1, 8) if meth else n
        what = printable((meth + " " if meth else "") + (narrow_url(r.url, room) if narrow else short_url(r.url, room)))
        if g is not None:  # grouped: bracket and connection id in front, the URL 5 shorter
            return f"{g}{r.connection:>3} {r.exchange:>4} {glyphs(r)} {_cell(what, n, False)} {_cell(r.badge, bw, False)}{st:>4} "
        return f"{r.exchange:>4} {glyphs(r)} {_cell(what, n, False)} {_cell(r.badge, bw, False)}{st:>4} "

    def line(self, i: int):
        r = self.rows[i]
        return self.label_text(r), DEFAULT_STYLE

    def render_line(self, y: int) -> Strip:
        i = self.scroll_offset.y + y
        width = self.size.width
        if i >= self.count:
            return Strip.blank(width)
        from wirefall.ui.figures_marks import failed

        r = self.rows[i]
        label = self.label_text(r)
        base = Style(color="#d0d0d0")
        if r.background:
            base = Style(color="#808080")
        if (r.status is not None and r.status >= 400 or getattr(r, "markers", None) and any(m.kind == "reset" for m in r.markers)
                or failed(r)):  # (red as the figures' tint: an error, or a request that failed before the network)
            base = Style(color="#ff8787")
        if i == self.cursor:
            base = base + (CURSOR_STYLE if self.has_focus else Style(bgcolor="#3a3a3a"))
        segs = [Segment(label, base), Segment("│", Style(color="#606060"))]
        bw = max(width - len(label) - 2, 1)
        cells = row_cells(r, self.v0, self.v1, bw)
        span = (self.v1 - self.v0) or 1e-9
        for t, col in self.milestones:  # (where no bar is: a bar is what the row is about)
            c = min(int((t - self.v0) / span * bw), bw - 1) if self.v0 <= t <= self.v1 else -1  # (the window's end: its last cell)
            if c >= 0 and cells[c] == (" ", None):  # (not a space of the duration's text either)
                cells[c] = ("┊", col)
        segs += cell_segments(cells, base.bgcolor if i == self.cursor else None)
        segs.append(Segment("│", Style(color="#606060")))
        return Strip(segs).crop_extend(0, width, None)

    def axis_text(self) -> str:
        """The time axis above the bars: tick labels in ms since the first packet."""
        width = self.size.width or 120
        n = len(self.label_text(self.rows[0])) if self.rows else self.LABEL + 14
        head = "conn    # request" if self.group_by else "   # request"  # (grouped by host too: the number is the connection)
        label = head[:n].ljust(n)
        if not self.rows:  # (no row, or none yet: ticks of the default 0 … 1 s read as a time axis of nothing)
            return label
        bw = max(width - len(label) - 2, 1)
        step = nice_step(self.v1 - self.v0, bw)
        axis = [" "] * bw
        import math

        k = math.ceil((self.v0 - self.t0) / step - 1e-9)
        while (t := k * step + self.t0) <= self.v1 + 1e-12:  # (k * step: no drift from a sum)
            x = max(int((t - self.v0) / (self.v1 - self.v0) * bw), 0)
            s = "┊" + tick_label(t - self.t0, step)
            if x + len(s) <= bw:
                axis[x : x + len(s)] = list(s)
            k += 1
        return label + " " + "".join(axis)

    def action_zoom(self, factor: float) -> None:
        span = (self.v1 - self.v0) * factor
        full = self.t1 - self.t0
        span = min(max(span, 1e-6), full)
        if self.rows:
            r = self.rows[self.cursor]
            c = (r.start + r.end) / 2 if factor < 1 else (self.v0 + self.v1) / 2
        else:
            c = (self.v0 + self.v1) / 2
        self.v0 = max(self.t0, c - span / 2)
        self.v1 = self.v0 + span
        if self.v1 > self.t1:
            self.v1 = self.t1
            self.v0 = self.v1 - span
        self.refresh()
        self.post_message(self.Zoomed())

    def action_pan(self, frac: float) -> None:
        span = self.v1 - self.v0
        d = span * frac
        d = max(self.t0 - self.v0, min(d, self.t1 - self.v1))
        self.v0 += d
        self.v1 += d
        self.refresh()
        self.post_message(self.Zoomed())

    def action_reset_zoom(self) -> None:
        """The default view (the page's span, where background rows reach beyond it); pressed
        there, the whole capture (and back)."""
        pv = getattr(self, "page_view", None)
        self.v0, self.v1 = pv if pv is not None and (self.v0, self.v1) != pv else (self.t0, self.t1)
        self.refresh()
        self.post_message(self.Zoomed())

    def bar_text(self, i: int) -> str:
        """The characters of row i's bar as drawn now (for tests)."""
        return "".join(c[0] for c in row_cells(self.rows[i], self.v0, self.v1,
                                                 max(self.size.width - len(self.label_text(self.rows[i])) - 2, 1)))


class TextList(LineList):
    """A list of precomputed (text, style) lines with an optional value per line."""

    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self.items: list[tuple[str, Style, object]] = []

    def set_items(self, items: list[tuple[str, Style, object]]) -> None:
        self.items = items
        self.content_width = max((len(t) for t, _, _ in items[:5000]), default=80) + 2
        self.set_count(len(items))

    def line(self, i: int) -> tuple[str, Style]:
        t, s, _ = self.items[i]
        return t, s

    def value(self, i: int):
        return self.items[i][2] if 0 <= i < len(self.items) else None
