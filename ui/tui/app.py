"""The wirefall terminal UI (Textual): Packets, Waterfall, Connections, Statistics,
Follow stream, a display-filter bar and search.  See ``HELP`` for every key."""
from __future__ import annotations

import sys
import time
from functools import partial
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Header, Input, ProgressBar, Static, TabbedContent, TabPane, Tree

from wirefall.analyzer.model import endpoint_text
from wirefall.analyzer.safetext import printable, printable_lines

if TYPE_CHECKING:
    from wirefall.analyzer.capture import PacketSource
    from wirefall.analyzer.tcp_analysis import ChildRun

from .expert import ExpertPane, legend_text
from .packets import BINDINGS as PACKET_BINDINGS
from .packets import PACKETS_TAB_ACTIONS
from .packets import HELP as PACKET_HELP
from .packets import PacketHabits
from .widgets import (waterfall_legend, DEFAULT_STYLE, HexView, LineList, PacketHeader, PacketList, TabLine, TextList,
                      WaterfallView, fmt_ms, address_width, packet_header_text, proto_style)

HELP = """\
[b]wirefall — keys[/b]

[b]Everywhere[/b]
  q / ctrl+c        quit
  ?                 this help
  1 2 3 4 5         Packets / Waterfall / Connections / Statistics / Expert tab
  L                 the packet colours' key (Wireshark's default colouring rules)
  ctrl+f or f       focus the display-filter bar; it filters the current tab, as its label
                    says (Enter applies, Esc leaves, empty clears this tab's filter)
  /                 search the current list (Enter finds; n next, N previous)
  tab / shift+tab   move between panes
  < >               Packets: narrow / widen the bytes pane (the detail tree gets the rest)
  [ ]               Packets: shorten / lengthen the packet list (the panes below get the rest)
  escape            close a dialog, leave the filter or search bar
  C                 compare with a second capture (asks for its path and key log;
                    `wirefall tui A --compare B` opens it directly): page table, matched
                    requests, side-by-side waterfalls (1 / 2 switch, + - ← → 0 zoom and pan)

[b]Lists (packets, waterfall, connections, follow)[/b]
  ↑ ↓ / k j         previous / next line        mouse click: select, double-click: open
  PgUp PgDn space   page up / down              mouse wheel: scroll
  Home End / g G    first / last line
  enter             open (packet → detail tree; request → request view; connection → follow)

[b]Packets[/b]
  F                 follow the stream (frames of the selected packet's stream, or its connection)
  d / b             focus the detail tree / the bytes pane
  x                 bytes pane: next source (Frame, then each Decrypted TLS record / QUIC packet on the packet)
  in the tree       ↑ ↓ select a field (its bytes are highlighted), → expand, ← collapse (or go to
                    the parent), space toggle

{packet_help}
[b]Waterfall[/b]
  + / -             zoom in (around the selected request) / out
  ← → / h l         pan the time axis
  0                 the page's span (background rows may reach beyond it); again: the whole capture
  c / H             group the rows by connection / by host (bracket and connection id in front);
                    the same key again: ungrouped
  s                 sort the rows (within a group): start time → duration → response size → host
  (# column)        the request's id, whatever the order (`wirefall requests --detail N`)
  (row colours)     grey with "bg": background traffic, not the page's; red: status ≥ 400, a reset
                    stream, or a browser log's request that failed before the network
  (browser log)     with --har/--netlog/--qlog, a row's lower half (▄, or ▀ under the wire's bar) is the
                    browser's view of the request: its log's request start → response end
  enter             request view: headers both ways, timing, sizes, frames of the stream
  F                 follow the request's stream

[b]Statistics[/b]
  p                 the protocol hierarchy (Wireshark's Statistics → Protocol Hierarchy): computed
                    when asked, its packets and bytes per layer and their % of the capture's

[b]Display filter[/b] (same language as the CLI)
  stream == 1 && type == "HEADERS"     url contains "css"     status >= 400
  protocol == "h2"     method in {"GET", "HEAD"}    connection == 3     packet > 100
  Packets: Wireshark's fields (tcp.port == 443, http2.streamid == 1, dns …, docs/FILTERS.md) \
and the fields of the frames on a packet, plus source, destination, info, length.
  Waterfall: fields of requests.  Connections: fields of connections.

[b]Search[/b] (/) looks in every column of the current tab's list: packets: number, time, \
addresses, protocol, length, info; waterfall: method, URL, status, content type, protocol, \
connection; connections: every cell; expert: every item.

[b]An empty or partial view[/b]: the line above the status bar says what the capture does not \
show (no key log, a key log without these connections' secrets, a truncated file, a budget hit …) \
and what to do next; `wirefall summary FILE` lists every such issue.
""".replace("{packet_help}", PACKET_HELP)

HINT = "1 Packets 2 Waterfall · ? help · f filter · s sort · t time · m mark · ^G go"  # fits 80 columns


class DetailTree(Tree):
    """The packet-detail tree: → expands a field, ← collapses it (or moves to its parent)."""

    BINDINGS = [Binding("right,l", "expand_node", "Expand", show=False), Binding("left,h", "collapse_node", "Collapse", show=False)]

    def action_expand_node(self) -> None:
        node = self.cursor_node
        if node is None:
            return
        if node.allow_expand and not node.is_expanded:
            node.expand()
        elif node.children:
            self.move_cursor(node.children[0])

    def action_collapse_node(self) -> None:
        node = self.cursor_node
        if node is None:
            return
        if node.allow_expand and node.is_expanded:
            node.collapse()
        elif node.parent is not None and node.parent is not self.root:
            self.move_cursor(node.parent)


# From this many packets or requests the waterfall and the statistics are built when their tab
# is first opened, off the UI thread, not before the packet list is shown (1.2 M packets: ~6 s
# and ~13 s of CPU the first screen no longer waits for; built in the background instead, they
# held the GIL so that a key took seconds); the tab says so while it is built
DEFER_VIEWS_PACKETS = 200_000
DEFER_VIEWS_REQUESTS = 5_000
LOAD_SWITCH_INTERVAL = 0.001  # seconds (Python's default 0.005) while the loader thread runs

# The filter bar filters the active tab: (label, placeholder) per tab
FILTER_SCOPES = {
    "packets": ("Filter packets:", 'e.g. stream == 1 && type == "HEADERS"   (f to focus, Enter applies to the packet list)'),
    "waterfall": ("Filter requests:", 'e.g. status >= 400 || url contains "css"   (Enter applies to the waterfall)'),
    "connections-tab": ("Filter connections:", 'e.g. protocol == "h2"   (Enter applies to the connections)'),
    "statistics": ("Filter: —", "the statistics cover the whole capture (no filter on this tab)"),
    "expert": ("Filter: —", "every expert item of the capture (wirefall expert FILE -Y EXPR filters them)"),
}
# what the filter of each tab applies to (analyzer.filter.compile_filter's scope)
FILTER_KIND = {"packets": "packets", "waterfall": "exchanges", "connections-tab": "connections"}


NOTICE_LINES = 4  # #notice's max-height
# a terminal of fewer lines than this gives the waterfall's rows the lines of its notes: the
# waterfall's note 1, its legend 2 (at 80x24 the rows had 3 lines of 24; review 26) — not the notice,
# whose reason and next step a newcomer must read whole (tests/test_ui_newcomer.py)
SHORT_TERMINAL = 32


def _fit_notice(text: str, width: int, lines: int = NOTICE_LINES) -> str:
    """The notice as it fits ``lines`` lines of ``width`` (word-wrapped): cut with where the
    rest is, not in the middle of a sentence without a word (the Statistics tab's Completeness
    section has all of it)."""
    import textwrap

    if width < 20 or not text:
        return text
    wrapped = textwrap.wrap(text, width)
    if len(wrapped) <= lines:
        return text
    more = " … (all of it: 4 Statistics, Completeness)"
    head = wrapped[:lines]
    last = head[-1]
    if len(last) + len(more) > width:
        last = last[: max(width - len(more), 0)].rsplit(" ", 1)[0]
    return " ".join(head[:-1] + [last + more])


HELP_KEY_COLUMN = 20  # where a key's description starts in HELP (and in packets.HELP)


def help_text(width: int, text: str = HELP) -> str:
    """``HELP`` wrapped to ``width`` columns: a key's description (from ``HELP_KEY_COLUMN``, its
    continuation lines indented as far) wrapped under itself, other lines under their own
    indent.  HELP is laid out for 112 columns; at 80 Textual wrapped its lines to column 0,
    "Expert tab" under the keys and "as its label / says" split mid-sentence (review 32)."""
    import textwrap

    k = HELP_KEY_COLUMN
    entries: list[list[str]] = []  # [line] or [key part, description, …continuations]
    for line in text.split("\n"):
        if entries and len(entries[-1]) > 1 and line.startswith(" " * k) and line.strip():
            entries[-1].append(line.strip())  # (a description's next line)
        elif len(line) > k and line.startswith("  ") and line[2] != " " and line[k - 2:k] == "  " and line[k] != " ":
            entries.append([line[:k], line[k:]])
        else:
            entries.append([line])
    out: list[str] = []
    for e in entries:
        if len(e) > 1:
            out += textwrap.wrap(" ".join(e[1:]), max(width, k + 20), initial_indent=e[0], subsequent_indent=" " * k,
                                 break_on_hyphens=False)
        elif len(e[0]) > width:
            lead = " " * (len(e[0]) - len(e[0].lstrip()))
            out += textwrap.wrap(e[0], width, subsequent_indent=lead + "  ", break_on_hyphens=False)
        else:
            out.append(e[0])
    return "\n".join(out)


class HelpScreen(ModalScreen):
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static(help_text(self._width()), id="help-text")

    def _width(self) -> int:
        # #help-box: 112 columns at most, less its border, padding and the scroll bar (2 each)
        return min(112, self.app.size.width or 112) - 6

    def on_resize(self) -> None:
        self.query_one("#help-text", Static).update(help_text(self._width()))


class TextScreen(ModalScreen):
    """A scrollable page of text (the request view)."""

    BINDINGS = [Binding("escape,q", "dismiss", "Close"), Binding("F", "follow", "Follow stream")]

    def __init__(self, title: str, body: Text, follow=None) -> None:
        super().__init__()
        self.title_text = title
        self.body = body
        self.follow = follow

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text(printable(self.title_text), style="bold"), id="dialog-title")
            with VerticalScroll(id="dialog-body"):
                yield Static(self.body, id="dialog-text")

    def on_mount(self) -> None:
        self.query_one("#dialog-body").focus()

    def action_follow(self) -> None:
        if self.follow is not None:
            self.dismiss()
            self.follow()


class FollowScreen(ModalScreen):
    """The decoded frames of one stream (or connection) in order; Enter jumps to the packet."""

    BINDINGS = [Binding("escape,q", "dismiss", "Close")]

    def __init__(self, title: str, items: list) -> None:
        super().__init__()
        self.title_text = title
        self.items = items

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text(printable(self.title_text), style="bold"), id="dialog-title")
            yield TextList(id="follow-list")

    def on_mount(self) -> None:
        lst = self.query_one(TextList)
        lst.set_items(self.items)
        lst.focus()

    @on(LineList.Chosen, "#follow-list")
    def _jump(self, ev: LineList.Chosen) -> None:
        lst = ev.widget
        pkt = lst.value(ev.index) if isinstance(lst, TextList) else None  # "#follow-list" is the TextList
        if isinstance(pkt, int):
            self.dismiss(pkt)


class WirefallApp(PacketHabits, App):
    TITLE = "wirefall"
    CSS = """
    Screen { layout: vertical; }
    #filter-bar { height: 3; }
    #filter-label { width: auto; height: 3; padding: 1 1 0 1; background: $panel; text-style: bold; }
    #filter { width: 1fr; height: 3; }
    #filter.-invalid { border: tall $error; }
    #filter.-valid { border: tall $success; }
    #search { height: 3; display: none; }
    #search.-shown { display: block; }
    #status { height: 1; background: $panel; color: $text-muted; padding: 0 1; }
    #progress { height: 1; }
    #progress.-done { display: none; }
    TabbedContent { height: 1fr; }
    TabPane { padding: 0; }
    #packets-pane { height: 1fr; }
    #packet-header { height: 1; background: #303030; color: #ffffff; text-style: bold; }
    #packet-list { height: 1fr; min-height: 5; }
    #lower { height: 45%; }
    #detail { width: 1fr; min-width: 16; border-top: solid #404040; }
    #bytes-pane { width: 45%; max-width: 80; min-width: 41; border-top: solid #404040; border-left: solid #404040; }
    #notice { height: auto; max-height: 4; background: #3a3000; color: #ffd787; padding: 0 1; }
    #notice.-none { display: none; }
    #hint { height: 1; background: #1c3040; color: #d0e8ff; padding: 0 1; }
    #hint.-hidden { display: none; }
    #wf-note { height: auto; max-height: 3; color: #ffd787; padding: 0 1; }
    #wf-note.-none { display: none; }
    #bytes-tabs { height: 1; background: #262626; }
    #bytes { height: 1fr; }
    #wf-axis { height: 1; background: #303030; color: #c0c0c0; }
    #wf-list { height: 1fr; overflow-x: hidden; }
    #wf-legend { height: auto; max-height: 5; color: #a0a0a0; }  /* wrapped: one line hid the glyphs' meanings; 5: a HAR's milestones at 100 columns */
    #connections { height: 1fr; }
    #stats-scroll { height: 1fr; overflow-x: auto; overflow-y: auto; }
    #stats { width: auto; }
    #phs { width: auto; margin: 0 0 1 0; }
    #dialog { width: 92%; height: 90%; border: round $accent; background: $surface; }
    #dialog-title { height: 1; background: $accent; padding: 0 1; }
    #dialog-body { height: 1fr; }
    #follow-list { height: 1fr; }
    HelpScreen, TextScreen, FollowScreen { align: center middle; }
    #help-box { width: 112; max-width: 100%; height: 90%; border: round $accent; background: $surface; padding: 0 1;
                overflow-x: hidden; }
    #help-text { width: 100%; }
    """
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help"),
        Binding("ctrl+f,f", "focus_filter", "Filter"),
        Binding("slash", "search", "Search"),
        Binding("n", "search_next(1)", "Next", show=False),
        Binding("N", "search_next(-1)", "Prev", show=False),
        Binding("F", "follow", "Follow"),
        Binding("1", "tab('packets')", "Packets", show=False),
        Binding("2", "tab('waterfall')", "Waterfall", show=False),
        Binding("3", "tab('connections')", "Connections", show=False),
        Binding("4", "tab('statistics')", "Statistics", show=False),
        Binding("5", "tab('expert')", "Expert", show=False),
        Binding("p", "protocol_hierarchy", "Protocol hierarchy", show=False),
        Binding("L", "colour_legend", "Colours", show=False),
        Binding("d", "focus_detail", "Detail", show=False),
        Binding("b", "focus_bytes", "Bytes", show=False),
        Binding("x", "bytes_tab", "Bytes tab", show=False),
        Binding("C", "compare", "Compare", show=False),
        *PACKET_BINDINGS,  # s S t m ctrl+g ctrl+t W E (ui/tui/packets.py)
        Binding("escape", "escape", "Back", show=False),
        Binding("less_than_sign", "resize('bytes', -4)", "Narrow bytes", show=False),
        Binding("greater_than_sign", "resize('bytes', 4)", "Widen bytes", show=False),
        Binding("left_square_bracket", "resize('list', -2)", "Shorter list", show=False),
        Binding("right_square_bracket", "resize('list', 2)", "Longer list", show=False),
    ]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Textual's dynamic bindings: the Packets tab's keys (``PACKETS_TAB_ACTIONS``) only
        while it is shown, the tab keys only on the main view (over the compare view 5 switched
        the hidden one's tab); False: disabled and out of the footer, the key does nothing."""
        if action in PACKETS_TAB_ACTIONS:
            return self.packets_tab_shown()
        if action == "tab":
            return self.main_view_shown()
        if action == "protocol_hierarchy":
            return self.main_view_shown() and self.screen.query_one("#tabs", TabbedContent).active == "statistics"
        return True

    def __init__(self, path: str, keylogs: list[str] | None = None, analysis=None, compare: str | None = None,
                 keylogs_b: list[str] | None = None, use_cache: bool = False, limits: dict | None = None,
                 overlays: list[tuple[str, str]] | None = None, overlays_b: list[tuple[str, str]] | None = None) -> None:
        super().__init__()
        self.path = path
        self.overlays = list(overlays or [])  # --har/--netlog/--qlog: (kind, path) laid over the capture once read
        self.overlays_b = list(overlays_b or [])  # --har-b/--netlog-b/--qlog-b: laid over B in the compare view
        self.limits = dict(limits) if limits else None  # --limit NAME=N: analyze(limits=...)
        self.use_cache = use_cache  # --cache: reopen the analysis from wirefall.analyzer.cache, store it after a miss
        self.keylogs = list(keylogs or [])
        self.compare_b = compare  # capture B of `wirefall tui A --compare B`
        self.keylogs_b = list(keylogs_b or [])
        self.an = analysis
        self.source: PacketSource | None = None
        self._tcp_child: ChildRun | None = None  # (the child of _tcp_in_child, ended on quitting)
        self._shown_packet: tuple[int, int] | None = None  # (packet, frames on it) last shown in the detail
        self._frames_pending = False  # a reopened capture's rows drawn from its index, its frames still unpacked (_index_rows)
        self.current_nodes: list = []  # the detail tree's nodes (analyzer.detail.Node) of the packet shown
        self.wf = None
        self.loaded = False
        self.load_error: str | None = None
        self.search_text = ""
        self.filters: dict[str, str] = {}  # active filter per tab (the bar filters the current tab)
        self.wf_keep: set[int] | None = None  # requests kept by the waterfall's filter
        self.wf_group: str | None = None  # waterfall grouping: None (by start), "connection" or "host"
        self.wf_sort: str = "start"  # waterfall sort (analyzer.waterfall.SORTS)
        self.wf_by: dict = {}  # group_by -> built Waterfall
        self.stats_text: Text | None = None
        # the Statistics tab's protocol hierarchy (key p): computed when asked, in a thread (it reads every
        # packet's headers: ~70 µs a packet); (analysis, tree or None, error or None) once computed
        self.phs: tuple | None = None
        self._phs_open = False
        self._phs_computing = None  # the analysis whose hierarchy the thread is computing
        self.views_pending: set[str] = set()  # views built when their tab is opened (DEFER_VIEWS_PACKETS)
        self._warned = 0  # warnings of the analysis notified so far (_later_warnings)
        self._views_building: set[str] = set()
        self.sub_title = printable(path)
        # --cache: the entry is read (its head and packet index: no frame) while the window is
        # built, in a thread of its own (mostly file reads and decompression, which let the UI
        # thread run); the loader takes it from there (_read_cache_early)
        self._cache_read: tuple | None = None
        if use_cache and analysis is None and not compare:
            self._read_cache_early()

    # ------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="filter-bar"):
            yield Static(FILTER_SCOPES["packets"][0], id="filter-label")
            yield Input(placeholder=FILTER_SCOPES["packets"][1], id="filter")
        yield Input(placeholder="search every column (Enter finds, n / N next / previous)", id="search")
        yield Static(HINT, id="hint")
        yield ProgressBar(total=100, show_eta=False, id="progress")
        with TabbedContent(initial="packets", id="tabs"):
            with TabPane("Packets", id="packets"):
                with Vertical(id="packets-pane"):
                    yield PacketHeader(packet_header_text(), id="packet-header")
                    yield PacketList(id="packet-list")
                    with Horizontal(id="lower"):
                        yield DetailTree("Packet", id="detail")
                        with Vertical(id="bytes-pane"):
                            yield TabLine("bytes", id="bytes-tabs")
                            yield HexView(id="bytes")
            with TabPane("Waterfall", id="waterfall"):
                yield Static("", id="wf-note", classes="-none")
                yield Static("", id="wf-axis")
                yield WaterfallView(id="wf-list")
                yield Static(self._legend(), id="wf-legend")
            with TabPane("Connections", id="connections-tab"):
                yield DataTable(id="connections", cursor_type="row", zebra_stripes=True)
            with TabPane("Statistics", id="statistics"):
                with VerticalScroll(id="stats-scroll"):
                    yield Static(PHS_PROMPT, id="phs")
                    yield Static("", id="stats")
            with TabPane("Expert", id="expert"):
                yield ExpertPane(id="expert-pane")
        yield Static("", id="notice", classes="-none")
        yield Static("loading…", id="status")
        yield Footer()

    @staticmethod
    def _legend(browser: list[str] | None = None, milestones: list | None = None, alone: bool = False, rows: list | None = None) -> Text:
        return waterfall_legend("+/- zoom  ←/→ pan  0 reset  c/H group by conn/host  s sort  enter open", browser, milestones,
                                alone, rows)

    def on_mount(self) -> None:
        self.query_one("#detail", Tree).show_root = False
        self.query_one("#packet-list").focus()
        if self.an is not None:
            self._loaded(self.an, 0.0)
        elif self.compare_b:
            self.query_one("#status", Static).update(Text(f"loading {printable(self.path)} in the compare view…"))
        else:
            self.load()
        if self.compare_b:
            self.open_compare(self.compare_b, self.keylogs_b)

    # ------------------------------------------------------------ compare (ui/tui/compare.py)
    def action_compare(self) -> None:
        from .compare import CompareDialog

        def chosen(r: tuple[str, list[str]] | None) -> None:
            if r:
                self.open_compare(*r)

        self.push_screen(CompareDialog(self.path), chosen)

    def open_compare(self, path_b: str, keylogs_b: list[str]) -> None:
        """The compare screen of this capture (A) against ``path_b``; A is read there unless
        it is loaded already, and handed back to this view once read."""
        from .compare import CompareScreen

        mine = self.an if self.loaded else None
        self.push_screen(CompareScreen(self.path, self.keylogs, path_b, keylogs_b, analysis_a=mine,
                                       on_a=None if mine is not None or self.an is not None else self._compare_read_a,
                                       overlays_a=self.overlays, overlays_b=self.overlays_b if path_b == self.compare_b else []))

    def _compare_read_a(self, an) -> None:
        if isinstance(an, str):
            self._load_failed(an)
        elif not self.loaded and self.an is None:
            self.load(an)

    # ------------------------------------------------------------ loading
    def _read_cache_early(self) -> None:
        import threading

        got: list = []

        def read() -> None:
            try:
                from wirefall.analyzer.cache import open_cached

                got.append(open_cached(self.path, self.keylogs, self.limits))
            except Exception:  # noqa: BLE001 - the loader reads it again (analyze_cached), and says what is wrong
                pass

        th = threading.Thread(target=read, name="wirefall-cache-read", daemon=True)
        th.start()
        self._cache_read = (th, got)

    def _cached_early(self):
        """(Loader thread.)  The analysis ``_read_cache_early`` read from the cache, or None."""
        if self._cache_read is None:
            return None
        th, got = self._cache_read
        self._cache_read = None
        th.join()
        return got[0] if got else None

    @work(thread=True, exclusive=True, group="load")
    def load(self, an=None) -> None:
        """Read the capture (``an``: already read, by the compare view: only the views are built)."""
        t = time.monotonic()

        def analyze(*a, **kw):  # (the pipeline imported on a cache miss only: ~0.1 s of a reopened first screen)
            from wirefall.analyzer.pipeline import analyze

            return analyze(*a, **kw)

        def progress(packets: int, done: int, total: int) -> None:
            self.call_from_thread(self._progress, packets, done, total)

        def started(an) -> None:
            # the Analysis before its first packet: the packet list shows rows as they are
            # read (a compressed capture is decompressed for random access here, off the UI thread)
            from wirefall.analyzer.capture import PacketSource

            src = PacketSource(self.path)
            try:
                src.read(0, 1)
            except OSError:
                return
            self.call_from_thread(self._started, an, src)

        # The loader holds the GIL between bytecode switches; a shorter switch interval lets
        # the UI thread in sooner, so keys answer while the capture is read (measured with
        # scripts/tui/bench_tui.py --loading)
        switch = sys.getswitchinterval()
        if LOAD_SWITCH_INTERVAL:
            sys.setswitchinterval(LOAD_SWITCH_INTERVAL)
        try:
            if an is None and self.use_cache:
                from wirefall.analyzer.cache import analyze_cached

                # (no progress on a hit: the bar's last step would wait for the UI thread)
                an = self._cached_early()
                hit = an is not None
                if an is None:
                    an, hit = analyze_cached(self.path, self.keylogs, limits=self.limits,
                                              analyze=lambda p, keylogs, limits=None, **_: analyze(p, keylogs, progress=progress,
                                                                                                   on_start=started, limits=limits))
                if hit:
                    # the rows at once from the packet index (Info pending), the frames unpacked after
                    self._index_rows_first(an)
            elif an is None:
                an = analyze(self.path, self.keylogs, progress=progress, on_start=started, limits=self.limits)
                hit = False
            else:
                hit = False
            if self.overlays:
                from wirefall.analyzer.browserlog import overlay

                laid = {s.get("file") for s in ((an.browser or {}).get("logs") or ()) if "matched" in s}
                for kind, log in self.overlays:
                    if log not in laid:  # (the compare view hands in an analysis it may have laid it over)
                        overlay(an, log, kind=kind, limits=self.limits)
        except Exception as e:  # CaptureError and anything else: a notice, never a crash
            msg = str(e) or e.__class__.__name__
            self.call_from_thread(self._load_failed, msg)
            return
        finally:
            sys.setswitchinterval(switch)
        # the heavy derived views are built here, off the UI thread
        if not hit:
            self.call_from_thread(self.query_one("#status", Static).update, f"{an.packets:,} packets read; building views…")
        from wirefall.analyzer.detail import _frame_index

        _frame_index(an)  # (a hit: the frames unpacked here, while its rows from the index are on screen)
        rows = self._warm_rows(an) if hit else None
        defer = an.packets >= DEFER_VIEWS_PACKETS or an.count("exchanges") >= DEFER_VIEWS_REQUESTS
        if not defer:
            self._build_views(an)
        # The analysis lives as long as the app: keep the cyclic garbage collector from
        # walking its millions of objects on every collection (pauses of hundreds of ms
        # between key presses on a 1 M-packet capture otherwise).
        # A model reopened from the cache was unpickled and holds no garbage: the collection
        # before the freeze would only walk it (0.76 s on 1 M packets, 413 k frames); its frames
        # unpacked later join the frozen model (analyzer.cache.FrameChunks).
        import gc

        from wirefall.analyzer.gcpause import freeze_model

        if not hit:
            gc.collect()
        freeze_model()
        self.views_pending = {"waterfall", "statistics"} if defer else set()
        from .overlay import summary_notes  # noqa: F401 (what _loaded imports, imported here: not on the UI thread)

        self.call_from_thread(self._loaded, an, time.monotonic() - t, rows)

    # a reopened capture's rows drawn from the packet index: the loader waits this long at most
    # for them to be on screen before it unpacks the frames (unpickling holds the GIL throughout)
    INDEX_ROWS_PAINT_WAIT = 1.0
    WARM_ROWS_TCP = 20_000  # the loader runs the TCP analysis this far for the rows on screen, no further

    def _index_rows_first(self, an) -> None:
        """(Loader thread, a cache hit.)  Show the packet list's rows from the packet index at
        once (``widgets.index_record``: Info pending), before the frames and their index are
        unpacked; return once they are on screen."""
        import threading

        from wirefall.analyzer.capture import PacketSource

        src = PacketSource(self.path)
        try:
            src.read(0, 1)
        except OSError:
            src.close()
            return  # (the rows come with the whole load, as before; the load says what is wrong)
        painted = threading.Event()
        self.call_from_thread(self._index_rows, an, src, painted)
        painted.wait(self.INDEX_ROWS_PAINT_WAIT)

    def _index_rows(self, an, source, painted) -> None:
        """The rows of a reopened capture from its packet index, Info pending (the frames are
        unpacked by the loader; ``_loaded`` draws the rows again whole).  ``painted`` is set once
        they are on screen."""
        from .widgets import index_record

        if self.loaded or self.an is not None:
            source.close()
            painted.set()
            return
        self.an = an
        self.source = source
        self._frames_pending = True
        pl = self.query_one(PacketList)
        pl.addr_width = address_width(an)
        self.query_one("#packet-header", Static).update(packet_header_text(pl.addr_width, pl.time_format, pl.sort))
        self.row_fn = lambda n: index_record(an, source, n)
        pl.set_packets(range(1, an.packets + 1), self.row_fn)
        self.query_one("#progress").add_class("-done")
        self.query_one("#status", Static).update(Text(
            f"{an.packets:,} packets (from the analysis cache) · reading the frames: Info and the packet detail follow…"))
        if an.packets:
            pl.move_to(0, notify=False)  # (the detail after the rows: painted first)
            self.call_after_refresh(self._show_cursor_packet)
        self.call_after_refresh(painted.set)

    def _show_cursor_packet(self) -> None:
        n = self.query_one(PacketList).current_packet
        if n is not None:
            self.show_packet(n)

    def _show_packet_pending(self, n: int) -> None:
        """The detail of packet ``n`` while the frames are unpacked (``_frames_pending``): its
        bytes, and a line that says the tree follows (``_loaded`` shows it whole)."""
        self._shown_packet = None
        tree = self.query_one("#detail", Tree)
        tree.clear()
        tree.root.add_leaf(Text(f"Packet {n}: its detail follows once the frames are read from the analysis cache…", style="italic"))
        self.current_nodes = []
        idx = self.an.index
        try:  # (analyzer.detail.packet_bytes without importing analyzer.detail on the UI thread yet)
            data = self.source.read(idx.offset[n - 1], idx.caplen[n - 1]) if self.source is not None and 0 < n <= len(idx) else b""
        except OSError:
            data = b""
        self.query_one(HexView).show_sources([(f"Frame ({len(data)} bytes)", data, None)])

    def _warm_rows(self, an) -> dict | None:
        """(Loader thread, a cache hit, frames unpacked.)  The records of the rows on screen
        (packet → ``PacketRecord``, for ``_loaded`` to draw at once), made with what they and the
        selected packet's detail need, which the UI thread then finds made: the colouring rules,
        the frames' chunks, the TCP analysis up to them and the detail's modules.  Rows further
        than ``WARM_ROWS_TCP`` packets into a big capture (keys took the list there while the
        frames were read) wait for the whole TCP analysis, made by a child process (as
        ``_tcp_in_child``'s): run here up to them it would take seconds, and drawn without it the
        UI thread would."""
        from wirefall.analyzer.packet_record import packet_record

        src = self.source
        if src is None or self.an is not an:
            return None
        made = {}
        try:
            pl = self.query_one(PacketList)
            top, h = pl.scroll_offset.y, max(pl.scrollable_content_region.height, 1)
            packets = pl.packets
            rows = [packets[i] for i in range(top, min(top + h, len(packets)))]
            cur = pl.current_packet
            if an.packets >= DEFER_VIEWS_PACKETS and max(rows + [cur or 0]) > self.WARM_ROWS_TCP:
                from wirefall.analyzer.tcp_analysis import ChildRun, tcp_analysis_in_child

                self.call_from_thread(self.query_one("#status", Static).update, Text(
                    f"{an.packets:,} packets (from the analysis cache) · the TCP analysis up to packet {max(rows):,}: Info follows…"))
                run = self._tcp_child = ChildRun()
                tcp_analysis_in_child(an, self.path, run)
            ta = an.__dict__.get("_wf_tcp_analysis")
            reach = max(self.WARM_ROWS_TCP, ta.packets if ta is not None else 0)
            colourer = packet_colourer(an, src)  # (kept by the analysis: _loaded's is this one)
            for n in rows:
                if n <= reach:
                    made[n] = packet_record(an, src, n, colourer)
            if cur is not None and cur <= reach:
                from wirefall.analyzer.detail import decrypted_tls, packet_detail

                packet_detail(an, src, cur)
                decrypted_tls(an, src, cur)
        except Exception:  # noqa: BLE001 - only a head start: _loaded draws the rows all the same
            pass
        return made

    def _build_views(self, an) -> None:
        wf, err = build_waterfall(an)
        if err:
            self.call_from_thread(self.notify, printable(f"waterfall: {err}"), severity="error", markup=False)
        self.wf = wf
        self.stats_text = stats_text(an)

    def _want_view(self, view: str) -> None:
        """Build the deferred ``view`` ("waterfall" or "statistics", see ``DEFER_VIEWS_PACKETS``)
        once, off the UI thread."""
        if view in self.views_pending and view not in self._views_building and self.an is not None:
            self._views_building.add(view)
            self._build_deferred(view, self.an)

    @work(thread=True, group="views")
    def _build_deferred(self, view: str, an) -> None:
        if view == "waterfall":
            wf, err = build_waterfall(an, self.wf_group, self.wf_sort)
            self.call_from_thread(self._deferred_built, view, an, wf, err)
        else:
            self.call_from_thread(self._deferred_built, view, an, stats_text(an), None)

    def _deferred_built(self, view: str, an, value, err) -> None:
        self._views_building.discard(view)
        if self.an is not an:
            return
        self.views_pending.discard(view)
        if view == "waterfall":
            if err:
                self.notify(printable(f"waterfall: {err}"), severity="error", markup=False)
            self.wf = value
            self._fill_waterfall(self.wf_keep)
        else:
            self.stats_text = value
            self._fill_stats()
        self._later_warnings()

    def _progress(self, packets: int, done: int, total: int) -> None:
        if self.loaded:
            return
        bar = self.query_one("#progress", ProgressBar)
        if total:
            bar.update(total=total, progress=min(done, total))
        self.query_one("#status", Static).update(Text(f"loading {printable(self.path)}: {packets:,} packets… (the list grows as they are read)"))

    # rows while loading ------------------------------------------------------
    GROW_EVERY = 0.25  # seconds between packet-list updates while loading
    FIRST_GROW = 0.03  # seconds from the start of the reading to the first rows (then every GROW_EVERY)

    def _started(self, an, source) -> None:
        """The analysis has begun: show its packets as they arrive (the index arrays only
        grow; a row is shown once its packet is fully indexed)."""
        from wirefall.analyzer.packet_record import packet_record

        if self.loaded:
            source.close()
            return
        self.an = an
        self.source = source
        self.row_fn = lambda n: packet_record(an, source, n)
        pl = self.query_one(PacketList)
        pl.set_packets(range(1, 1), self.row_fn)
        self._grow_timer = self.set_interval(self.GROW_EVERY, self._grow)
        self.set_timer(self.FIRST_GROW, self._grow)  # (the first rows need not wait a whole interval)

    def _ready_packets(self) -> int:
        """Packets whose index entries are all written (lengths snapshot: the loader appends
        ``ts`` first and ``proto`` last, and may still be adding frames to the newest one)."""
        idx = self.an.index
        return max(min(len(idx.proto), len(idx.conn), len(idx.ts)) - 1, 0)

    def _grow(self) -> None:
        if self.loaded or self.an is None or self.load_error is not None:
            return
        try:
            pl = self.query_one(PacketList)
        except NoMatches:  # (a tick queued as the load's error screen replaced the list: CI, review 26)
            return
        if pl.packets is not None and not isinstance(pl.packets, range):
            return  # a filtered list stays as it is until loading ends
        n = self._ready_packets()
        was = pl.count
        if n == was:
            return
        pl.grow(n)
        if not was and n:
            pl.move_to(0, notify=False)
            self.call_after_refresh(self._show_cursor_packet)  # (the rows painted first, then the packet's detail)
        elif pl.current_packet is not None:
            self.show_packet_if_changed(pl.current_packet)

    def _load_failed(self, msg: str) -> None:
        self.load_error = msg
        self.query_one("#progress").add_class("-done")
        self.query_one("#status", Static).update(Text(f"error: {printable(msg)}", style="bold red"))
        self.notify(printable(msg), title="Cannot open capture", severity="error", timeout=30, markup=False)

    def _loaded(self, an, seconds: float, rows: dict | None = None) -> None:
        """The capture is read: every tab filled, the packet list's rows drawn whole (``rows``:
        records made by the loader, packet → ``PacketRecord``, each used once)."""
        from wirefall.analyzer.capture import PacketSource
        from wirefall.analyzer.packet_record import packet_record

        timer = getattr(self, "_grow_timer", None)
        if timer is not None:
            timer.stop()
        self._frames_pending = False
        pl = self.query_one(PacketList)
        keep = pl.current_packet if self.an is an and pl.count else None
        if self.source is None or self.an is not an:
            if self.source is not None:
                self.source.close()
            self.source = PacketSource(self.path)
        self.an = an
        self.query_one("#progress").add_class("-done")
        self.loaded = True
        pl.addr_width = address_width(an)
        self.query_one("#packet-header", Static).update(packet_header_text(pl.addr_width, pl.time_format, pl.sort))
        # the one packet record (analyzer.packet_record) with its colouring rule, per row drawn
        src = self.source
        colourer = packet_colourer(an, src)
        made = rows or {}
        self.row_fn = lambda n: made.pop(n, None) or packet_record(an, src, n, colourer)
        pl.analysis = an
        pl.set_packets(range(1, an.packets + 1), self.row_fn)  # rows drawn while loading are drawn again
        if self.query_one(TabbedContent).active == "expert":
            self.query_one(ExpertPane).refill()
        self._fill_waterfall()
        self._fill_connections()
        self._fill_stats()
        self._status()
        self._notice()
        self._warned = 0
        self._notify_warnings(an)
        from .overlay import summary_notes

        for line in summary_notes(an):
            self.notify(line, title="Browser log", timeout=10, markup=False)
        self._har_page_note(an)
        if an.packets and (keep is None or not pl.select_packet(keep, notify=False)):
            pl.move_to(0)
        elif keep is not None:
            self._shown_packet = None
            self.show_packet(keep)  # frames decoded since it was first shown (once: the move above did not notify)
        if an.packets >= DEFER_VIEWS_PACKETS:
            self._tcp_in_child(an)

    @work(thread=True, exclusive=True, group="tcp")
    def _tcp_in_child(self, an) -> None:
        """The TCP analysis that the rows' colouring and Info prefixes need up to the rows drawn,
        made to the capture's end by a child process while the list is in use: it is sequential,
        so a first jump to the end of 1.2 M packets ran all of it then (End: 5 s).  (In a thread
        here it held the GIL so that keys took 2-3 s.)"""
        from wirefall.analyzer.tcp_analysis import ChildRun, tcp_analysis_in_child

        if self.an is an:
            if self._tcp_child is not None:  # (a capture loaded again: its thread would wait for the child)
                self._tcp_child.cancel()
            run = self._tcp_child = ChildRun()
            tcp_analysis_in_child(an, self.path, run)

    def _status(self, extra: str = "") -> None:
        an = self.an
        if an is None:
            return
        pl = self.query_one(PacketList)
        shown = f"{pl.count:,} of {an.packets:,} packets shown" if pl.count != an.packets else f"{an.packets:,} packets"
        dec = sum(1 for c in an.connections if (c.quic or c.tls) is not None and (c.quic or c.tls).decrypted)
        msg = f"{shown} · {_n(len(an.connections), 'connection')} ({dec:,} decrypted) · {_n(an.count('exchanges'), 'request')} · {an.count('frames'):,} frames"
        if extra:
            msg += " · " + extra
        elif self.loaded:
            from wirefall.analyzer.completeness import headline

            try:
                # its word alone ("Complete", "Page complete", "Incomplete"): the notice line right above
                # says the headline whole with why and what next (both, and the waterfall's header,
                # said it three times over on the Waterfall tab)
                msg += " · " + headline(an).split(":", 1)[0]
            except Exception:  # noqa: BLE001
                pass
        self.query_one("#status", Static).update(Text(printable(msg)))

    def _har_page_note(self, an) -> None:
        """A HAR of several pages opened alone shows one (analyzer/browserlog/pages.py): say which,
        as the CLI's note and the web app's status line do -- the TUI said nothing, and WebPageTest's
        run 2 was hidden without a word.  The header's subtitle keeps "HAR page 1 of 2"; the note,
        with how to see the others (--har-page N), is notified."""
        from wirefall.analyzer.browserlog.comparison import page_notices

        try:
            notes = page_notices(an)
        except Exception:  # noqa: BLE001 (a note must not take the view down)
            return
        if not notes:
            return
        shown: list[dict] = [s["page_shown"] for s in (an.browser or {}).get("logs") or ()
                             if isinstance(s, dict) and isinstance(s.get("page_shown"), dict) and "matched" not in s]
        if shown:
            self.sub_title = printable(f"{self.path} · HAR page {shown[0].get('number')} of {shown[0].get('of')}")
        for line in notes:
            self.notify(printable(line), title="HAR page", timeout=20, markup=False)

    def _notice(self) -> None:
        """The line above the status bar: why the capture shows less than it holds, and the
        next step (analyzer.completeness through ui.explain); hidden when it is complete."""
        from wirefall.ui import explain

        note = self.query_one("#notice", Static)
        b = explain.banner(self.an) if self.an is not None else None
        note.set_class(not b, "-none")
        width = (note.size.width or self.size.width) - 2
        self._compact()
        short = explain.background_line(self.an) if b and self.an is not None else None
        if short is not None:  # (the page whole: one line, not the background connection's story)
            b = short + " — 4 Statistics, Completeness"
        elif b and self.an is not None and _fit_notice(printable(b), width) != printable(b):
            # too long for its lines: the reasons and their next step before the headline's counts
            # (the Statistics tab's Completeness has those), then the first reason alone
            # led by the banner's own word: "Page complete" stays so (a fixed "Incomplete" here said the
            # amazon load's page was incomplete, its status bar and the web page "Page complete"; review 29)
            word = b.split(" · ", 1)[0].split(":", 1)[0]
            rs = explain.reasons(self.an)
            for k in (2, 1):
                b = word + " · " + " · ".join(explain.reason_text(r, i == 0) for i, r in enumerate(rs[:k]))
                if _fit_notice(printable(b), width) == printable(b):
                    break
        note.update(Text(_fit_notice(printable(b or ""), width)))
        self._wf_note()

    def _compact(self) -> None:
        """The waterfall's note and legend as high as the terminal allows (``SHORT_TERMINAL``)."""
        short = 0 < self.size.height < SHORT_TERMINAL
        for sel, tall, low in (("#wf-note", 3, 1), ("#wf-legend", 5, 2)):
            try:
                self.query_one(sel).styles.max_height = low if short else tall
            except NoMatches:
                pass

    def _wf_note(self) -> None:
        """The waterfall's header line: why there is no row (or fewer than requests)."""
        from wirefall.ui import explain

        if self.an is None or not self.loaded or (self.wf is None and "waterfall" in self.views_pending):
            return  # (while it is built, the line says so: _fill_waterfall)
        wv = self.query_one(WaterfallView)
        total = self.an.count("exchanges")
        n = wv.count
        text = None
        if not n:
            rs = explain.reasons(self.an)
            # the reason; its next step is on the notice line above the status bar
            text = ("no requests: " + explain.reason_text(rs[0], False) + " (next step: the line above the status bar)"
                    if rs and not total else explain.empty_text(self.an, n, total))
        # rows, but not all the capture held: the notice line above the status bar says so, on
        # every tab (the headline here too was the screen's second, with the status bar's third)
        note = self.query_one("#wf-note", Static)
        note.set_class(not text, "-none")
        note.update(Text(printable(text or ""), style="bold"))

    # ------------------------------------------------------------ packets tab
    @on(LineList.Moved, "#packet-list")
    def _packet_moved(self, ev: LineList.Moved) -> None:
        pl = ev.widget
        n = pl.packet_at(ev.index) if isinstance(pl, PacketList) else None  # "#packet-list" is the PacketList
        if n is not None:
            try:
                self.show_packet(n)
            except NoMatches:  # a move still queued while the app shuts down: nothing to show it in
                pass

    @on(LineList.Chosen, "#packet-list")
    def _packet_chosen(self, ev: LineList.Chosen) -> None:
        self.action_focus_detail()

    def _later_warnings(self) -> None:
        """Warnings that came after the first screen — a part of a cache entry found damaged
        when a view first read it (its requests, a chunk of frames) — shown as the load's were,
        with the status line and the notice made again: the status line's request count was the
        entry's, which the damaged part no longer holds."""
        an = self.an
        if an is None or not self.loaded or len(an.warnings) <= self._warned:
            return
        self._notify_warnings(an)
        self._status()
        self._notice()

    def _notify_warnings(self, an) -> None:
        """The analysis's warnings not notified yet (five at the most) as notifications."""
        for w in an.warnings[self._warned : self._warned + 5]:
            self.notify(printable(w), title="Capture warning", severity="warning", timeout=10, markup=False)
        self._warned = len(an.warnings)

    def show_packet_if_changed(self, n: int) -> None:
        """While loading: show the packet again if frames were added on it since."""
        from wirefall.analyzer.detail import frames_on_packet

        k = len(frames_on_packet(self.an, n))
        if getattr(self, "_shown_packet", None) != (n, k):
            self.show_packet(n)

    def show_packet(self, n: int) -> None:
        if self._frames_pending:  # (the loader unpacks them: not the UI thread, nor its imports of analyzer.detail)
            self._show_packet_pending(n)
            return
        from wirefall.analyzer.detail import frames_on_packet, packet_bytes, packet_detail

        try:
            self._shown_packet = (n, len(frames_on_packet(self.an, n)))
        except Exception:  # noqa: BLE001
            self._shown_packet = None
        self._later_warnings()  # (a chunk of frames read for this packet may have been damaged)

        an, src = self.an, self.source
        tree = self.query_one("#detail", Tree)
        tree.clear()
        try:
            nodes = packet_detail(an, src, n)
            data = packet_bytes(src, an, n)
        except Exception as e:  # never crash on a packet
            tree.root.add_leaf(Text(printable(f"cannot decode packet {n}: {e}")))
            return
        last_layers = len(nodes)

        def add(parent, node, expand: bool) -> None:
            # a Text, not a str: Tree reads a str label as markup ("[link=…]" from a header would be live)
            label = Text(printable(node.label))
            if node.children:
                t = parent.add(label, data=node, expand=expand)
                for c in node.children:
                    add(t, c, False)
            else:
                parent.add_leaf(label, data=node)

        for i, node in enumerate(nodes):
            # expand the protocol layers above TCP/UDP, as one usually wants to see them
            add(tree.root, node, expand=i >= 4 and i == last_layers - 1 or i > 4)
        sources: list[tuple[str, bytes, str | None]] = [(f"Frame ({len(data)} bytes)", data, None)]
        try:
            from wirefall.analyzer.detail import decrypted_tls

            sources += [(r.title, r.data, r.error) for r in decrypted_tls(an, src, n)]
        except Exception as e:  # noqa: BLE001 - the packet's own bytes still show
            sources.append(("Decrypted TLS", b"", f"{e.__class__.__name__}: {e}"))
        try:  # one tab per decrypted QUIC packet of the datagram (after the TLS tabs: none on UDP)
            from wirefall.analyzer.detail import decrypted_quic

            sources += [(r.title, r.data, r.error) for r in decrypted_quic(an, src, n)]
        except Exception as e:  # noqa: BLE001
            sources.append(("Decrypted QUIC", b"", f"{e.__class__.__name__}: {e}"))
        self.query_one(HexView).show_sources(sources)
        self.current_nodes = nodes

    @on(Tree.NodeHighlighted, "#detail")
    def _node_highlighted(self, ev: Tree.NodeHighlighted) -> None:
        # a field without bytes of its own highlights those of the nearest enclosing node
        # that has some (a header of a decrypted HTTP/2 frame: the frame)
        # (not up to a top-level layer: "[TCP Segment Len]" does not light up the TCP header)
        tnode = ev.node
        node = tnode.data
        up = tnode.parent
        while node is not None and node.start < 0 and up is not None and up.data is not None and up.parent is not None \
                and up.parent.data is not None:
            if up.data.start >= 0:
                node = up.data
                break
            up = up.parent
        try:
            hv = self.query_one(HexView)
        except NoMatches:  # (a highlight still queued as the app shuts down, as _packet_moved's)
            return
        if node is not None and node.start >= 0:
            if node.source != hv.current:
                hv.select_source(node.source)
            hv.highlight(node.start, node.end)
        else:
            hv.highlight(-1, -1)

    @on(HexView.SourceChanged)
    def _bytes_source_changed(self, ev: HexView.SourceChanged) -> None:
        try:
            tl = self.query_one("#bytes-tabs", TabLine)
        except NoMatches:  # (posted by a packet shown as the app shuts down: run_test's exit saw it under load)
            return
        tl.update(ev.view.tabs_text(tl.size.width or 78))

    def action_bytes_tab(self) -> None:
        self.query_one(HexView).next_source()

    def action_focus_detail(self) -> None:
        tree = self.query_one("#detail", Tree)
        tree.focus()
        if tree.cursor_node is None and tree.root.children:
            tree.move_cursor(tree.root.children[0])

    def action_focus_bytes(self) -> None:
        self.query_one(HexView).focus()

    # ------------------------------------------------------------ waterfall tab
    def _fill_waterfall(self, keep: set[int] | None = None, keep_view: bool = False) -> None:
        if self.wf is None and "waterfall" in self.views_pending:
            if self.query_one(TabbedContent).active == "waterfall":
                self._want_view("waterfall")
            note = self.query_one("#wf-note", Static)
            note.set_class(False, "-none")
            note.update(Text(f"building the waterfall of {self.an.count('exchanges'):,} requests…", style="bold"))
            return
        if self.wf is None:
            self.wf, err = build_waterfall(self.an, self.wf_group, self.wf_sort)
            if err:
                self.notify(printable(f"waterfall: {err}"), severity="error", markup=False)
        if self.wf is None:
            return
        self.wf_by[(self.wf_group, self.wf_sort)] = self.wf
        rows = self.wf.rows if keep is None else [r for r in self.wf.rows if r.exchange in keep]
        t0 = self.wf.t0
        # the axis ends where the rows do (as the figures'), not at the capture's last packet: a page's
        # trailing ACKs and closes left pw-h2's 13 requests in the first fifth of the width
        ends = [r.end for r in rows if r.end is not None]
        t1 = max(ends) if ends else self.wf.t_end
        t1 = max([t1] + [r.browser_phases[-1][2] for r in rows if r.browser_phases])  # (a browser bar may end later)
        t1 = max([t1] + [m.time for m in self.wf.milestones])  # (a browser's load event may come after the last byte)
        sources = sorted({str((r.browser or {}).get("source") or "log") for r in self.wf.rows if r.browser_phases})
        # the legend names a browser log's bar first (one laid over the capture), then the milestones' lines
        # (a log opened alone: its bars are the log's; "lower half: browser's view" spoke of a wire bar there is not)
        alone = not self.an.packets and getattr(self.an, "source", "capture") != "capture"
        self.query_one("#wf-legend", Static).update(self._legend(sources, self.wf.milestones, alone, self.wf.rows))
        self.query_one(WaterfallView).set_rows(rows, t0, t1, group_by=self.wf_group, keep_view=keep_view,
                                               milestones=self.wf.milestones, wf=self.wf)
        self._wf_note()

    @on(WaterfallView.GroupToggled)
    def _group_toggled(self, ev: WaterfallView.GroupToggled) -> None:
        if not self.loaded or "waterfall" in self.views_pending:
            return
        self._regroup(None if self.wf_group == ev.group else ev.group, self.wf_sort)

    @on(WaterfallView.SortCycled)
    def _sort_cycled(self) -> None:
        if not self.loaded or "waterfall" in self.views_pending:
            return
        from wirefall.analyzer.waterfall import SORTS

        self._regroup(self.wf_group, SORTS[(SORTS.index(self.wf_sort) + 1) % len(SORTS)])

    def _regroup(self, group, sort) -> None:
        if (group, sort) in self.wf_by:
            self._set_group(group, self.wf_by[(group, sort)], None, sort)
        else:
            self.query_one("#status", Static).update("ordering the waterfall…")
            self._build_grouped(group, sort)

    @work(thread=True, exclusive=True, group="waterfall")
    def _build_grouped(self, group, sort="start") -> None:
        wf, err = build_waterfall(self.an, group, sort)
        self.call_from_thread(self._set_group, group, wf, err, sort)

    def _set_group(self, group, wf, err, sort="start") -> None:
        if wf is None:
            self.notify(printable(f"waterfall: {err}"), severity="error", markup=False)
            return
        wv = self.query_one(WaterfallView)
        cur = wv.rows[wv.cursor].exchange if wv.count else None
        self.wf_group, self.wf, self.wf_sort = group, wf, sort
        self._fill_waterfall(self.wf_keep, keep_view=True)
        if cur is not None:
            for i, r in enumerate(wv.rows):
                if r.exchange == cur:
                    wv.move_to(i)
                    break
        from wirefall.ui.waterfall_layout import GROUP_LABELS, SORT_LABELS

        self._status(f"waterfall: {'grouped by ' + GROUP_LABELS[group] + ', ' if group else ''}sorted by {SORT_LABELS[sort]}"
                     " (c/H: group by connection/host, s: sort)")

    @on(WaterfallView.Zoomed)
    def _zoomed(self) -> None:
        try:
            wv = self.query_one(WaterfallView)
        except NoMatches:  # (queued by a resize or a tab switch while the app shuts down)
            return
        self.query_one("#wf-axis", Static).update(wv.axis_text())

    @on(PacketList.ColumnsChanged)
    def _packet_columns(self) -> None:
        if self.an is None:
            return
        try:
            pl = self.query_one(PacketList)
        except NoMatches:  # (queued by a resize while the load's error screen replaced the list, or at shutdown)
            return
        self._redraw_packets(pl)

    def on_resize(self) -> None:
        if self.wf is not None:
            self.call_after_refresh(self._zoomed)
        if self.an is not None:
            self.call_after_refresh(self._notice)  # (the notice is cut to its lines at this width)

    @on(LineList.Chosen, "#wf-list")
    def _request_chosen(self, ev: LineList.Chosen) -> None:
        wv = ev.widget
        if isinstance(wv, WaterfallView):  # "#wf-list" is the WaterfallView
            self.open_request(wv.rows[ev.index])

    def exchange(self, ex_id: int):
        for e in self.an.exchanges:
            if e.id == ex_id:
                return e
        return None

    def open_request(self, r) -> None:
        e = self.exchange(r.exchange)
        if e is None:
            return
        self.push_screen(TextScreen(f"Request {r.exchange}: {r.method or ''} {r.url}", request_text(self.an, e, r, self.wf),
                                    follow=partial(self.follow_stream, e.connection, e.stream_id, e)))

    # ------------------------------------------------------------ connections / statistics
    def _fill_connections(self, keep: set[int] | None = None) -> None:
        dt = self.query_one("#connections", DataTable)
        dt.clear(columns=True)
        dt.add_columns("id", "transport", "client", "server", "protocol", "packets c/s", "bytes c/s", "start", "duration",
                       "SNI", "TLS / QUIC", "requests", "notes")
        an = self.an
        # s from the first packet; a browser log opened alone has none: from its page's start (as the
        # waterfall and the request view count), not from 1970 (the start read 1774569362.550 s)
        t0 = an.index.ts[0] if an.packets else an.start_time
        wire = bool(an.packets) or getattr(an, "source", "capture") == "capture"  # (a log alone: no packet or byte known: –, never 0)
        nreq = an.requests_per_connection()
        from wirefall.analyzer.model import no_network_connections

        # the "connection" of a browser log's requests that never reached the network (the amazon
        # NetLog's refused checkin and disk-cache favicon.ico): none — it read "tcp ? ? 0/0 … 1655ms",
        # a TCP connection open 1.7 s that no packet and no NetLog socket shows (review 29)
        none = no_network_connections(an)
        try:
            from wirefall.analyzer.completeness import compute

            comp = compute(an)
        except Exception:  # noqa: BLE001
            comp = None
        for c in an.connections:
            if keep is not None and c.id not in keep:
                continue
            # QUIC first: a QUIC connection's TLS handshake info has no decryption reason of its own
            sec = c.quic if c.quic is not None else c.tls
            if sec is None:
                dec = ""
            else:
                ver = getattr(sec, "version", None) or (getattr(c.tls, "version", None) if c.tls else None) or ""
                why = comp.not_decrypted.get(c.id) if comp is not None else None
                if sec.decrypted:
                    dec = f"{ver} decrypted"
                else:
                    dec = f"{ver} not decrypted: {why or sec.reason or 'no protected data'}"
            sni = (c.tls.sni if c.tls else None) or (c.quic.sni if c.quic else None) or ""
            cells = (str(c.id), c.transport, endpoint_text(c.client), endpoint_text(c.server), c.protocol or "",
                     f"{c.stats[0].packets}/{c.stats[1].packets}" if wire else "–",
                     f"{c.stats[0].bytes}/{c.stats[1].bytes}" if wire else "–",
                     f"{c.start - t0:.3f}", fmt_ms(c.end - c.start), sni, dec.strip(), str(nreq.get(c.id, 0)), str(len(c.notes)))
            # Text cells: DataTable reads a str cell as markup; captured text (SNI, reasons) is shown as it is
            if c.id in none:
                cells = (str(c.id), "–", NO_NETWORK_CLIENT, "–", "", "–", "–", f"{c.start - t0:.3f}", "–", "", "",
                         str(nreq.get(c.id, 0)), str(len(c.notes)))
            dt.add_row(*(Text(printable(v)) for v in cells), key=str(c.id))

    @on(DataTable.RowSelected, "#connections")
    def _connection_chosen(self, ev: DataTable.RowSelected) -> None:
        if ev.row_key.value is None:  # every row is added with key=str(connection id)
            return
        self.follow_stream(int(ev.row_key.value), None, None, whole_connection=True)

    def _fill_stats(self) -> None:
        if self.phs is not None and self.phs[0] is not self.an:  # (another capture read: its own, when asked)
            self.phs, self._phs_open = None, False
        self._fill_phs()
        if self.stats_text is None and "statistics" in self.views_pending:
            if self.query_one(TabbedContent).active == "statistics":
                self._want_view("statistics")
            self.query_one("#stats", Static).update(Text("computing the statistics…", style="bold"))
            return
        if self.stats_text is None:
            self.stats_text = stats_text(self.an)
        self.query_one("#stats", Static).update(self.stats_text)

    # ------------------------------------------------------------ protocol hierarchy (Statistics tab, key p)
    def action_protocol_hierarchy(self) -> None:
        """Show (or hide again) Wireshark's Protocol Hierarchy of the capture, computed the first
        time it is asked for, off the UI thread."""
        if not self.loaded or self.an is None:
            self.query_one("#phs", Static).update(Text("protocol hierarchy: the capture is still being read; p again once it is",
                                                       style="bold"))
            return
        self._phs_open = not self._phs_open
        if self._phs_open and self.phs is None and self._phs_computing is not self.an:
            self._phs_computing = self.an
            self._compute_phs(self.an)
        self._fill_phs()

    @work(thread=True, group="phs")
    def _compute_phs(self, an) -> None:
        from wirefall.analyzer.stats import protocol_hierarchy

        try:  # (no source handed in: its own file handle, the packet list reads self.source meanwhile)
            tree, err = protocol_hierarchy(an), None
        except Exception as e:  # noqa: BLE001 - a bug there must not take the TUI down
            tree, err = None, f"{e.__class__.__name__}: {e}"
        self.call_from_thread(self._phs_done, an, tree, err)

    def _phs_done(self, an, tree, err) -> None:
        if self._phs_computing is an:
            self._phs_computing = None
        if an is not self.an:
            return
        self.phs = (an, tree, err)
        self._fill_phs()

    def _fill_phs(self) -> None:
        w = self.query_one("#phs", Static)
        if not self._phs_open or self.an is None:
            w.update(PHS_PROMPT)
        elif self.phs is None:
            w.update(Text(f"{PHS_TITLE}\ncomputing the protocol hierarchy… (it reads the headers of every packet: "
                          f"{self.an.packets:,})", style="bold"))
        else:
            w.update(phs_text(*self.phs))

    # ------------------------------------------------------------ follow stream
    def action_follow(self) -> None:
        if not self.loaded:
            return
        tab = self.query_one(TabbedContent).active
        if tab == "waterfall":
            wv = self.query_one(WaterfallView)
            if wv.count:
                e = self.exchange(wv.rows[wv.cursor].exchange)
                if e is not None:
                    self.follow_stream(e.connection, e.stream_id, e)
            return
        if tab == "connections-tab":
            dt = self.query_one("#connections", DataTable)
            if dt.row_count:
                key = dt.coordinate_to_cell_key(dt.cursor_coordinate).row_key.value
                if key is not None:  # every row is added with key=str(connection id)
                    self.follow_stream(int(key), None, None, whole_connection=True)
            return
        n = self.query_one(PacketList).current_packet
        if n is None:
            return
        from wirefall.analyzer.detail import frames_on_packet

        frs = frames_on_packet(self.an, n)
        with_stream = [f for f in frs if f.stream_id is not None and f.protocol not in ("tls", "quic")]
        if with_stream:
            f = with_stream[-1]
            self.follow_stream(f.connection, f.stream_id, None)
        else:
            cid = self.an.index.conn[n - 1]
            if cid >= 0:
                self.follow_stream(cid, None, None, whole_connection=True)
            else:
                self.notify("this packet belongs to no connection", severity="warning")

    def follow_stream(self, cid: int, stream_id, ex, whole_connection: bool = False) -> None:
        frs = follow_frames(self.an, cid, stream_id, ex, whole_connection)
        items = follow_items(self.an, cid, stream_id, ex, whole_connection, frames=frs)
        self.push_screen(FollowScreen(follow_title(self.an, cid, stream_id, ex, frs, whole_connection), items), self._jump_to_packet)

    def _jump_to_packet(self, pkt) -> None:
        if isinstance(pkt, int):
            self.query_one(TabbedContent).active = "packets"
            pl = self.query_one(PacketList)
            if not pl.select_packet(pkt):
                self.notify(f"packet {pkt} is hidden by the filter", severity="warning")
            pl.focus()
            # the list was hidden behind the dialog (or another tab): scroll once it is laid out again
            self.call_after_refresh(pl._scroll_to_cursor)

    # ------------------------------------------------------------ filter
    @on(Input.Changed, "#filter")
    def _filter_changed(self, ev: Input.Changed) -> None:
        from wirefall.analyzer.filter import FilterError, compile_filter

        inp = ev.input
        inp.remove_class("-invalid", "-valid")
        if not ev.value.strip():
            return
        try:
            # (the text as Enter applies it, stripped: the same column either way, counted in the box)
            lead = len(ev.value) - len(ev.value.lstrip())
            try:
                compile_filter(ev.value.strip(), FILTER_KIND.get(self.query_one(TabbedContent).active))
            except FilterError as e:
                e.column += lead
                raise
            inp.add_class("-valid")
            self._status()
        except FilterError as e:
            inp.add_class("-invalid")
            self.query_one("#status", Static).update(Text(f"filter: column {e.column}: {e.message}", style="bold red"))

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self, ev: Input.Submitted) -> None:
        if not self.loaded:
            return
        self.apply_filter(ev.value)

    def apply_filter(self, expr: str) -> None:
        """Filter the active tab (only it: each tab keeps its own filter)."""
        from wirefall.analyzer.filter import FilterError, compile_filter

        lead = len(expr) - len(expr.lstrip())  # (an error's column is counted in the text as typed)
        expr = expr.strip()
        tab = self.query_one(TabbedContent).active
        if tab == "statistics":
            self.notify("the statistics tab has no filter", severity="warning")
            return
        if not expr:
            self.filters.pop(tab, None)
            if tab == "waterfall":
                self.wf_keep = None
                self._fill_waterfall()
                self.query_one(WaterfallView).focus()
            elif tab == "connections-tab":
                self._fill_connections()
                self.query_one("#connections").focus()
            else:
                pl = self.query_one(PacketList)
                pl.set_packets(range(1, self.an.packets + 1), self.row_fn, keep=pl.current_packet)
                self.resort_packets()
                pl.focus()
            self._status(f"{FILTER_SCOPES[tab][0].split()[1].rstrip(':')}: filter cleared")
            return
        try:
            pred = compile_filter(expr, FILTER_KIND.get(tab))
        except FilterError as e:
            self.notify(f"column {e.column + lead}: {e.message}", title="Bad filter", severity="error")
            return
        self.filters[tab] = expr
        if tab == "waterfall":
            keep = {e.id for e in self.an.exchanges if _safe(pred, e)}
            self.wf_keep = keep
            self._fill_waterfall(keep)
            self._status(f"waterfall: {len(keep)} requests match {expr}")
            self.query_one(WaterfallView).focus()
        elif tab == "connections-tab":
            from wirefall.analyzer.jsonout import connection_dict

            keep = {c.id for c in self.an.connections if _safe(pred, c) or _safe(pred, connection_dict(c))}
            self._fill_connections(keep)
            self._status(f"connections: {len(keep)} match {expr}")
            self.query_one("#connections").focus()
        else:
            self.query_one("#status", Static).update(f"filtering {self.an.packets:,} packets…")
            self._filter_packets(expr)

    @work(thread=True, exclusive=True, group="filter")
    def _filter_packets(self, expr: str) -> None:
        from wirefall.analyzer.filter import compile_filter

        pred = compile_filter(expr, "packets")
        matches = filter_packets(self.an, self.source, pred, expr)
        self.call_from_thread(self._packets_filtered, matches, expr)

    def _packets_filtered(self, matches, expr: str) -> None:
        pl = self.query_one(PacketList)
        cur = pl.current_packet
        pl.set_packets(matches, self.row_fn)
        self.resort_packets()
        if cur is not None and not pl.select_packet(cur):
            if pl.count:
                pl.move_to(0)
        elif pl.count and cur is None:
            pl.move_to(0)
        if not pl.count:
            self.query_one("#detail", Tree).clear()
            self.query_one(HexView).show(b"")
        self._status(f"filter: {expr}")
        pl.focus()

    def action_focus_filter(self) -> None:
        self.query_one("#filter", Input).focus()

    # ------------------------------------------------------------ search
    def action_search(self) -> None:
        if self._search_list() is None:  # (the Statistics tab: a page of text, no line to go to)
            self.notify("this tab has no list to search (1 Packets, 2 Waterfall, 3 Connections, 5 Expert have)", severity="warning")
            return
        s = self.query_one("#search", Input)
        s.add_class("-shown")
        s.focus()

    @on(Input.Submitted, "#search")
    def _search_submitted(self, ev: Input.Submitted) -> None:
        self.search_text = ev.value
        ev.input.remove_class("-shown")
        self._tab_widget().focus()
        self.action_search_next(1, from_current=True)

    def _search_text(self, lst, i: int) -> str:
        """What search looks in: every column of the line, untruncated."""
        if isinstance(lst, WaterfallView):
            r = lst.rows[i]
            e = self.exchange(r.exchange)
            parts = [lst.label_text(r)]
            if e is not None:
                parts += [e.method or "", e.url or e.path or "", str(e.status or ""), e.content_type or "", e.protocol or "",
                          f"connection {e.connection}"]
            return printable(" ".join(parts))
        if isinstance(lst, PacketList):
            return lst.search_text(i)
        if isinstance(lst, DataTable):  # (the connections: every cell, as shown)
            return " ".join(str(c) for c in lst.get_row_at(i))
        return lst.cached_line(i)[0]

    # the widget that takes the keys on each tab (action_tab's); Esc and search go back to it
    TAB_FOCUS = {"packets": "#packet-list", "waterfall": "#wf-list", "connections-tab": "#connections",
                 "statistics": "#stats-scroll", "expert": "#expert-list"}

    def _tab_widget(self):
        return self.query_one(self.TAB_FOCUS.get(self.query_one(TabbedContent).active, "#packet-list"))

    def _search_list(self):
        """The list search walks on the current tab (a LineList, or the connections' DataTable);
        None on the Statistics tab.  (Search and Esc went to the packet list whatever the tab:
        "/" on Connections searched the packets and switched to the Packets tab; review 32.)"""
        w = self._tab_widget()
        return w if isinstance(w, (LineList, DataTable)) else None

    def action_search_next(self, direction: int = 1, from_current: bool = False) -> None:
        if not self.search_text or not self.loaded:
            return
        lst = self._search_list()
        if lst is None:
            return
        if isinstance(lst, DataTable):
            count, cursor = lst.row_count, lst.cursor_row

            def move(i: int) -> None:
                lst.move_cursor(row=i)
        else:
            count, cursor, move = lst.count, lst.cursor, lst.move_to
        needle = self.search_text.lower()
        start = cursor + (0 if from_current else direction)
        deadline = time.monotonic() + 2.0
        i = start
        while 0 <= i < count:
            if needle in self._search_text(lst, i).lower():
                move(i)
                self._status(f"found {self.search_text!r}")
                return
            i += direction
            if time.monotonic() > deadline:
                move(i)
                self.notify("search: still not found after 2 s; press n to continue from here", severity="warning")
                return
        if from_current:
            self.notify(f"{self.search_text!r} not found from here down (N searches up)", severity="warning")
        else:  # (n / N after a match: the others are the other way, or there is none)
            self.notify(f"no more matches for {self.search_text!r} {'below' if direction > 0 else 'above'}", severity="warning")

    # ------------------------------------------------------------ misc
    def action_help(self) -> None:
        self._hide_hint()
        self.push_screen(HelpScreen())

    def _hide_hint(self) -> None:
        self.query_one("#hint").add_class("-hidden")

    def action_resize(self, pane: str, delta: int) -> None:
        """Grow or shrink a pane of the Packets tab (< > the bytes pane, [ ] the packet list)."""
        # the size asked for last (several presses before a refresh add up)
        if pane == "bytes":
            bp = self.query_one("#bytes-pane")
            total = self.query_one("#lower").size.width or self.size.width
            w = getattr(self, "_bytes_w", None) or bp.outer_size.width or 41
            new = max(24, min(total - 16, w + delta))
            self._bytes_w = new
            bp.styles.max_width = None
            bp.styles.min_width = None
            bp.styles.width = new
            self._status(f"bytes pane {new} columns (< > resize)")
        else:
            lower = self.query_one("#lower")
            pane_h = self.query_one("#packets-pane").size.height or self.size.height
            h = getattr(self, "_lower_h", None) or lower.outer_size.height or pane_h // 2
            new = max(4, min(pane_h - 4, h - delta))
            self._lower_h = new
            lower.styles.height = new
            self._status(f"packet list {max(pane_h - 1 - new, 0)} rows ([ ] resize)")

    def action_tab(self, name: str) -> None:
        self._hide_hint()
        tc = self.query_one(TabbedContent)
        tc.active = {"connections": "connections-tab"}.get(name, name)
        target = {"packets": "#packet-list", "waterfall": "#wf-list", "connections": "#connections", "statistics": "#stats-scroll",
                  "expert": "#expert-list"}[name]
        self.query_one(target).focus()
        if name == "waterfall":
            self.call_after_refresh(self._zoomed)

    @on(TabbedContent.TabActivated)
    def _tab_activated(self, ev) -> None:
        if ev.pane.id in self.views_pending:
            self._want_view(ev.pane.id)
        if ev.pane.id == "waterfall":
            self.call_after_refresh(self._zoomed)
        self._filter_scope(ev.pane.id)

    def _filter_scope(self, tab: str) -> None:
        """Label the filter bar with what it filters, and show that tab's filter."""
        label, placeholder = FILTER_SCOPES.get(tab, FILTER_SCOPES["packets"])
        self.query_one("#filter-label", Static).update(label)
        inp = self.query_one("#filter", Input)
        inp.placeholder = placeholder
        inp.disabled = tab in ("statistics", "expert")
        inp.value = self.filters.get(tab, "")

    @on(ExpertPane.GoTo)
    def _expert_go_to(self, ev: ExpertPane.GoTo) -> None:
        self._jump_to_packet(ev.packet)

    def action_colour_legend(self) -> None:
        self.push_screen(TextScreen("Packet colours", legend_text()))

    def action_escape(self) -> None:
        f = self.focused
        if isinstance(f, Input):
            f.remove_class("-shown") if f.id == "search" else None
            self._tab_widget().focus()  # (not the packet list: that switched the tab to Packets)

    def on_unmount(self) -> None:
        if self._tcp_child is not None:  # (quitting: not the seconds the child would take to finish)
            self._tcp_child.cancel()
        if self.source is not None:
            self.source.close()


def packet_colourer(an, source):
    """Wireshark's colouring rules on this analysis (``analyzer.colouring.Colourer``), or
    None when they cannot be evaluated (uncoloured rows rather than no packet list)."""
    from wirefall.analyzer.colouring import colourer

    try:
        return colourer(an, source)
    except Exception:  # noqa: BLE001
        return None


def build_waterfall(an, group_by: str | None = None, sort: str = "start"):
    """``(Waterfall or None, error message or None)``."""
    try:
        from wirefall.analyzer.waterfall import build

        return build(an, group_by=group_by, sort=sort), None
    except Exception as e:  # a bug there must not take the packet list down
        return None, f"{e.__class__.__name__}: {e}"


def stats_text(an) -> Text:
    try:
        from wirefall.analyzer.stats import compute, render_text

        st = compute(an, tcp_analysis=True)
        text = Text(printable_lines(render_text(st)))
        text.append("\n\n")
        text.append_text(stats_bars(st))
        return text
    except Exception as e:
        return Text(printable(f"statistics unavailable: {e.__class__.__name__}: {e}"), style="red")


PHS_TITLE = "Protocol Hierarchy (as Wireshark's; tshark -z io,phs)"
PHS_PROMPT = Text.assemble((PHS_TITLE, "bold"), ": press p to compute it")  # (in 80 columns)


def phs_text(an, tree, err: str | None) -> Text:
    """``analyzer.stats.protocol_hierarchy``'s tree as Wireshark's window shows it: a row per
    node, indented two spaces a level under the whole capture's "frame" row, with its packets
    and bytes (``frame.len``) and their percentages of the capture's packets and bytes ("Percent
    Packets", "Percent Bytes"); or why there is none."""
    t = Text()
    t.append(PHS_TITLE, style="bold underline")
    t.append(" — p hides it\n")
    if err is not None:
        t.append(printable(f"protocol hierarchy unavailable: {err}"), style="red")
        return t
    if tree is None:
        t.append("no packets to count: " + ("a browser log opened alone (HAR, NetLog, qlog) has none" if an.source != "capture" else
                                            f"the capture file cannot be read ({printable(an.path or '?')})"), style="#ffd787")
        return t
    packets = len(an.index)
    total = sum(an.index.origlen)
    from wirefall.analyzer.stats import phs_rows

    rows = [("frame", packets, total)] + [("  " * (depth + 1) + printable(nd["protocol"]), nd["frames"], nd["bytes"])
                                          for depth, nd in phs_rows(tree)]
    w = max(len(r[0]) for r in rows) + 2

    def pct(k: int, of: int) -> str:
        return f"{100 * k / of:.1f}" if of else "–"

    t.append(f"{'Protocol':<{w}}{'Percent Packets':>16}{'Packets':>12}{'Percent Bytes':>16}{'Bytes':>16}\n", style="bold")
    for name, k, b in rows:
        t.append(f"{name:<{w}}{pct(k, packets):>16}{k:>12,}{pct(b, total):>16}{b:>16,}\n")
    t.append("a packet counts once in each layer of its path (frame.protocols); the rows under a layer need not add\n"
             "up to it (TCP ACKs, segments of a PDU reassembled in another packet); below the first application layer\n"
             "tshark's tree repeats a layer per PDU and names items wirefall does not decode (its body types, data)",
             style="#a0a0a0")
    return t


def _safe(pred, obj) -> bool:
    try:
        return bool(pred(obj))
    except Exception:
        return False


def filter_packets(an, source, pred, expr: str):
    """Packet numbers matching ``expr`` (``analyzer.filter.filter_packets``: Wireshark's
    fields with tshark's semantics, and wirefall's names for the frames on a packet)."""
    from wirefall.analyzer.filter import filter_packets as matching

    return matching(an, source, pred if getattr(pred, "scope", None) == "packets" else expr)


def follow_frames(an, cid: int, stream_id, ex, whole_connection: bool) -> list:
    """The frames the Follow view lists, in order.  Following one request (``ex``): the frames
    of that exchange (``analyzer.request_detail.exchange_frames``, the request view's rule);
    following a stream or a connection, every frame on it."""
    if ex is not None and not whole_connection:
        from wirefall.analyzer.request_detail import exchange_frames

        return list(exchange_frames(an, ex))
    frs = [f for f in an.frames if f.connection == cid and (whole_connection or stream_id is None or f.stream_id == stream_id)]
    frs.sort(key=lambda f: (f.packet, f.offset))
    return frs


def _n(k: int, what: str) -> str:
    return f"{k:,} {what}{'' if k == 1 else 's'}"


def follow_title(an, cid: int, stream_id, ex, frames: list, whole_connection: bool) -> str:
    """The Follow view's title: what is followed, then its frames (one line each in the view,
    whatever header lines follow them) and the packets they complete in — tshark's
    ``-Y "http2.streamid == N && tcp.stream == S"`` frames and packets — and, as Wireshark's
    Follow dialog, the bytes each way: of the frames' payloads when following a stream or a
    request, of the transport's payload (``tcp.len``/``udp.length`` summed) for a connection.
    The counts come before the addresses: the title is one line."""
    from wirefall.ui.waterfall_layout import elide_flow

    c = an.connections[cid]
    whole = whole_connection or (stream_id is None and ex is None)
    what = (f"connection {cid}" if whole else f"stream {stream_id} of connection {cid}" if stream_id is not None
            else f"one request on connection {cid}")  # (an HTTP/1 request: its own messages)
    count = f"{_n(len(frames), 'frame')} in {_n(len({f.packet for f in frames}), 'packet')}"
    if whole:
        size = f"{c.transport.upper()} payload: client {c.stats[0].payload:,} B, server {c.stats[1].payload:,} B"
    else:
        b = [sum(f.length for f in frames if f.direction == d) for d in (0, 1)]
        size = f"frame payload: client {b[0]:,} B, server {b[1]:,} B"
    flow = elide_flow(c.label, 44, 20)  # (two IPv6 addresses took 90 columns)
    from wirefall.analyzer.model import no_network_connections

    if cid in no_network_connections(an):  # (a browser log's requests served from a cache or failed before sending:
        # the connection the wire never had — "0 frames in 0 packets … ? → ?" read as a stream the capture lost)
        return f"Follow {what}: never reached the network (a browser log's request from a cache, or failed before sending): no frames, no packets"
    if _log_alone(an):  # (no frame, packet or payload byte to count: "0 frames in 0 packets; client 0 B" read as an empty stream)
        return f"Follow {what} ({c.protocol or c.transport}): a browser log opened alone, no packets — {flow}"
    return f"Follow {what} ({c.protocol or c.transport}): {count}; {size} — {flow}; enter jumps to the packet"


def _log_alone(an) -> bool:
    """A browser log (HAR, NetLog, qlog) opened alone: no packet, so no frame (``model.log_alone``)."""
    from wirefall.analyzer.model import log_alone

    return log_alone(an)


def follow_items(an, cid: int, stream_id, ex, whole_connection: bool, bodies: bool = True, frames: list | None = None) -> list:
    """Lines of the Follow view: one per frame (value = its packet) with its headers and
    fields indented below (``follow_frames``, unless ``frames`` gives them)."""
    t0 = an.index.ts[0] if an.packets else 0.0
    frs = follow_frames(an, cid, stream_id, ex, whole_connection) if frames is None else frames
    from wirefall.analyzer.model import no_network_connections

    from .request_view import NO_FRAMES, NO_FRAMES_LOG, NO_FRAMES_UNSENT, frame_items

    items = frame_items(frs, t0)
    if not items:  # (why none: the title's reason again — a request that never reached the network was
        # said "not decrypted, or a protocol wirefall does not decode" under "never reached the network")
        items.append((NO_FRAMES_UNSENT if cid in no_network_connections(an) else NO_FRAMES_LOG if _log_alone(an) else NO_FRAMES,
                      DEFAULT_STYLE, None))
    from .body import with_bodies  # each message's content after its last frame (ui/tui/body.py)

    return with_bodies(an, items, cid, stream_id, ex, whole_connection) if bodies else items


def request_text(an, e, r, wf=None) -> Text:
    """The request view: ``analyzer.request_detail.request_detail`` of ``e`` (its waterfall
    row ``r``, of waterfall ``wf``: the DNS lookups whose packets bound the DNS phase) as
    text — request and response headers, timing breakdown, sizes, bodies, markers, frames."""
    from wirefall.analyzer.request_detail import request_detail

    from .request_view import detail_text  # (Textual-free: `wirefall requests --detail` prints it too)

    return detail_text(request_detail(an, e, row=r, waterfall=wf))


NO_NETWORK_CLIENT = "none: never on the network (a browser log's requests from a cache or failed before sending)"


def stats_bars(st) -> Text:
    """Small bar charts: wire bytes per protocol, header bytes saved per connection."""
    t = Text()
    t.append("Wire bytes per protocol\n", style="bold underline")
    if st.packets_total == 0 and st.capture.requests > 0:
        # a browser log opened alone: its bytes on the wire are unknown, not 0 (WebPageTest's HAR says
        # 573,908 bytes came in; the bars said "h2 0", where the tables above and the web page say "–")
        t.append("  – (a browser log has no packets: its bytes on the wire are unknown)\n")
        blocks = []
    else:
        blocks = sorted(st.protocols.values(), key=lambda b: -(b.bytes[0] + b.bytes[1]))
    top = max([b.bytes[0] + b.bytes[1] for b in blocks] + [1])
    for b in blocks:
        tot = b.bytes[0] + b.bytes[1]
        n = round(tot / top * 50)
        t.append(f"  {printable(b.name):<10}")
        t.append("█" * n, style=proto_style(b.name.upper() if b.name != "h2" else "HTTP2"))
        t.append(f" {tot:,}\n")
    rows = [b for b in st.connections if b.req_headers[1] or b.resp_headers[1]]
    if rows:
        t.append("\nHeader compression per connection", style="bold underline")
        t.append(" (saved = 1 − wire/decoded; ")
        t.append("▇ request", style="#87d7ff")
        t.append(", ")
        t.append("▇ response", style="#ffd787")
        t.append(")\n")
        for b in rows:
            t.append(f"  {printable(b.name.split()[-1]):>4} {printable(b.protocol or ''):<9}")
            for pair, color in ((b.req_headers, "#87d7ff"), (b.resp_headers, "#ffd787")):
                w, d = pair
                saved = (1 - w / d) if d else 0.0
                n = max(0, round(saved * 25))
                t.append("▇" * n + " " * (25 - n), style=color)
                t.append(f" {saved * 100:5.1f}%  ")
            t.append("\n")
    return t
