"""Wireshark's packet-list habits in the TUI: sort by a column (``s`` / ``S``, or a click on
the column header), go to packet (Ctrl+G), the Time column's display formats (``t``: View →
Time Display Format), time references (Ctrl+T), marks (``m``, or Ctrl+M where the terminal
tells it from Enter) and exporting the marked (``E``) or displayed (``W``) packets to pcapng
with their keys in a Decryption Secrets Block (``analyzer.pcapng_write``).

``PacketHabits`` is a mixin of ``WirefallApp`` (ui/tui/app.py): it needs ``self.an``,
``self.source``, ``self.path``, ``self.loaded`` and the ``PacketList`` and ``#packet-header``
widgets.  What each habit means (which delta, which reference) is
``analyzer.packet_record``'s, the same as the web app's packet list.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import ComposeResult, ScreenStackError
from textual.binding import Binding
from textual.containers import Vertical
from textual.css.query import NoMatches
from textual.screen import ModalScreen
from textual.widgets import Input, Static, TabbedContent

from wirefall.analyzer.safetext import printable

from .widgets import SORT_KEYS, SORT_NAMES, PacketList, packet_header_text

SYNC_SORT = 50_000  # packets shown: sorted on the UI thread below this (numeric columns: ~50 ms), in a worker above

BINDINGS = [
    Binding("ctrl+g", "goto_packet", "Go to packet", show=False),
    Binding("s", "sort_next", "Sort", show=False),
    Binding("S", "sort_reverse", "Reverse sort", show=False),
    Binding("t", "time_format", "Time format", show=False),
    Binding("ctrl+t", "time_reference", "Time reference", show=False),
    Binding("m,ctrl+m", "mark_packet", "Mark", show=False),
    Binding("W", "export_packets('displayed')", "Write shown packets", show=False),
    Binding("E", "export_packets('marked')", "Write marked packets", show=False),
]

# The actions above, and the app's keys for the Packets tab's panes (d b x < > [ ] in
# ui/tui/app.py), mean something only while the Packets tab is shown: elsewhere they changed the
# hidden list unseen (t: its time format, m: its marks), jumped to it (d, b) and over the compare
# view wrote files (W, E).  ``WirefallApp.check_action`` disables them there, as Wireshark's and
# DevTools' keys act on what is shown.
PACKETS_TAB_ACTIONS = frozenset({"goto_packet", "sort_next", "sort_reverse", "time_format", "time_reference",
                                 "mark_packet", "export_packets", "focus_detail", "focus_bytes", "bytes_tab", "resize"})

HELP = """\
[b]Packet list (as in Wireshark)[/b]
  s / S             sort by the next column (No. Time Source Destination Protocol Length Info,
                    then capture order) / the other way; a click on a column title sorts by it
                    (again: the other way, a third time: capture order)
  ctrl+g            go to packet (its number; Enter goes)
  t                 time display format: seconds since the first packet (tshark -t r) → UTC
                    date and time (-t ud) → since the previous displayed packet (-t dd) → since
                    the time reference (*REF*)
  ctrl+t            set / unset a time reference on the selected packet (shows the reference format)
  m (ctrl+m)        mark / unmark the selected packet (white on black; most terminals send
                    ctrl+m as Enter, so m)
  E                 write the marked packets to CAPTURE-marked.pcapng, keys in a DSB
  W                 write the packets shown (filtered or all) to CAPTURE-displayed.pcapng, keys in a DSB
"""


class GotoScreen(ModalScreen):
    """Ctrl+G: "Go to packet" — a packet number; Enter goes, Esc cancels."""

    BINDINGS = [Binding("escape", "dismiss", "Cancel")]
    DEFAULT_CSS = """
    GotoScreen { align: center top; }
    #goto-box { width: 50; height: auto; border: round $accent; background: $surface; padding: 0 1; margin-top: 4; }
    """

    def __init__(self, count: int) -> None:
        super().__init__()
        self.total = count

    def compose(self) -> ComposeResult:
        with Vertical(id="goto-box"):
            yield Static(f"Go to packet (1 – {self.total:,}):")
            yield Input(placeholder="packet number, Enter goes", id="goto-input", type="integer")

    def on_mount(self) -> None:
        self.query_one("#goto-input", Input).focus()

    def on_input_submitted(self, ev: Input.Submitted) -> None:
        ev.stop()
        try:
            self.dismiss(int(ev.value.strip()))
        except ValueError:
            self.dismiss(None)


def export_name(path: str, what: str) -> str:
    """``<capture>-<what>[-N].pcapng`` in the working directory, never an existing file."""
    stem = os.path.splitext(os.path.basename(path))[0] or "capture"
    if stem.endswith(".pcap"):
        stem = stem[:-5]
    for i in range(1000):
        out = f"{stem}-{what}{'-' + str(i) if i else ''}.pcapng"
        if not os.path.exists(out):
            return out
    return f"{stem}-{what}-{os.getpid()}.pcapng"


if TYPE_CHECKING:
    from textual.app import App

    class _AppBase(App):
        an: Any
        source: Any
        path: str
        loaded: bool

        def _status(self, extra: str = "") -> None: ...
else:
    _AppBase = object


class PacketHabits(_AppBase):
    """Packet-list actions of ``WirefallApp`` (module docstring)."""

    last_export: str | None = None

    # ---------------------------------------------------------------- helpers
    def packets_tab_shown(self) -> bool:
        """The main view is on screen (not the compare view or a dialog) with its Packets tab."""
        try:
            return self.screen.query_one("#tabs", TabbedContent).active == "packets"
        except (NoMatches, ScreenStackError):  # another screen, or none yet
            return False

    def main_view_shown(self) -> bool:
        """The main view (its tabs) is the screen on top."""
        try:
            self.screen.query_one("#tabs", TabbedContent)
        except (NoMatches, ScreenStackError):
            return False
        return True

    def _packet_list_ready(self) -> PacketList | None:
        """The packet list when the Packets tab is shown and the capture is read."""
        if not self.loaded or self.an is None:
            self.notify("the capture is still loading", severity="warning")
            return None
        if not self.packets_tab_shown():  # (keys are disabled there: check_action; this is for other callers)
            self.notify("packet-list keys work on the Packets tab (1)", severity="warning")
            return None
        return self.query_one(PacketList)

    def _redraw_packets(self, pl: PacketList) -> None:
        self.query_one("#packet-header", Static).update(packet_header_text(pl.addr_width, pl.time_format, pl.sort))
        pl.invalidate()

    def _say(self, msg: str) -> None:
        self._status(msg)

    # ---------------------------------------------------------------- go to packet
    def action_goto_packet(self) -> None:
        pl = self._packet_list_ready()
        if pl is None:
            return
        self.push_screen(GotoScreen(self.an.packets), self.go_to_packet)

    def go_to_packet(self, n: int | None) -> None:
        """Select packet ``n`` (Wireshark's Go to packet); one hidden by the filter or out of
        range is said, and the cursor stays."""
        if n is None:
            return
        pl = self.query_one(PacketList)
        total = self.an.packets
        if not 1 <= n <= total:
            self.notify(f"there is no packet {n} (the capture has {total:,})", severity="warning")
        elif not pl.select_packet(n):
            self.notify(f"packet {n} is hidden by the filter", severity="warning")
        else:
            self._say(f"packet {n}")
        pl.focus()

    # ---------------------------------------------------------------- sort
    def action_sort_next(self) -> None:
        pl = self._packet_list_ready()
        if pl is None:
            return
        cur = pl.sort[0] if pl.sort is not None else None
        if cur is None:
            self.sort_packets(SORT_KEYS[1], False)  # capture order → Time
        elif cur == SORT_KEYS[-1]:
            self.sort_packets(None, False)
        else:
            self.sort_packets(SORT_KEYS[SORT_KEYS.index(cur) + 1], False)

    def action_sort_reverse(self) -> None:
        pl = self._packet_list_ready()
        if pl is None:
            return
        col, desc = pl.sort if pl.sort is not None else ("no", False)
        self.sort_packets(col, not desc)

    def on_packet_header_clicked(self, ev) -> None:
        pl = self._packet_list_ready()
        if pl is None:
            return
        if pl.sort is None or pl.sort[0] != ev.column:
            self.sort_packets(ev.column, False)
        elif not pl.sort[1]:
            self.sort_packets(ev.column, True)
        else:
            self.sort_packets(None, False)

    def sort_packets(self, column: str | None, descending: bool) -> None:
        """Order the packets shown by ``column`` (None: capture order), stably."""
        pl = self.query_one(PacketList)
        keep = pl.current_packet
        if column is None or (column == "no" and not descending):  # capture order (No. ascending)
            pl.set_order(pl.displayed, None if column is None else ("no", False), keep)
            self._redraw_packets(pl)
            self._say("capture order" if column is None else "sorted by No. ascending (capture order)")
            return
        if len(pl.displayed) <= SYNC_SORT or column in ("no", "length"):
            self._sorted(self._order(pl, column, descending), column, descending, keep)
        else:
            self._say(f"sorting {len(pl.displayed):,} packets by {SORT_NAMES[column]}…")
            self.run_worker(lambda: self._sort_worker(pl, column, descending, keep), thread=True, group="sort", exclusive=True)

    def _order(self, pl: PacketList, column: str, descending: bool):
        from wirefall.analyzer.packet_record import sort_packets

        try:
            return sort_packets(self.an, self.source, pl.displayed, column, descending, pl.time_format, pl.refs,
                                record=pl.row_fn)
        except ValueError as e:
            return str(e)

    def _sort_worker(self, pl: PacketList, column: str, descending: bool, keep) -> None:
        order = self._order(pl, column, descending)
        self.call_from_thread(self._sorted, order, column, descending, keep)

    def _sorted(self, order, column: str, descending: bool, keep) -> None:
        pl = self.query_one(PacketList)
        if isinstance(order, str):
            self.notify(printable(order), title="Not sorted", severity="warning")
            return
        if len(order) != len(pl.displayed):  # the filter changed meanwhile
            return
        pl.set_order(order, (column, descending), keep)
        self._redraw_packets(pl)
        self._say(f"sorted by {SORT_NAMES[column]} {'descending' if descending else 'ascending'} (s next column, S reverse)")

    def resort_packets(self) -> None:
        """After the filter changed the packets shown: the same sort again."""
        pl = self.query_one(PacketList)
        if pl.sort is not None:
            self.sort_packets(*pl.sort)

    # ---------------------------------------------------------------- time
    def action_time_format(self) -> None:
        from wirefall.analyzer.packet_record import TIME_FORMATS, next_time_format

        pl = self._packet_list_ready()
        if pl is None:
            return
        pl.time_format = next_time_format(pl.time_format)
        self._redraw_packets(pl)
        if pl.sort is not None and pl.sort[0] == "time":
            self.resort_packets()
        extra = " (none set: ctrl+t sets one)" if pl.time_format == "reference" and not pl.refs else ""
        self._say(f"Time: {TIME_FORMATS[pl.time_format]}{extra} (t next format)")

    def action_time_reference(self) -> None:
        from bisect import insort

        pl = self._packet_list_ready()
        n = pl.current_packet if pl is not None else None
        if pl is None or n is None:
            return
        if n in pl.refs:
            pl.refs.remove(n)
            msg = f"packet {n}: time reference removed"
        else:
            insort(pl.refs, n)
            pl.time_format = "reference"
            msg = f"packet {n}: time reference set (Time: since the time reference; t other formats)"
        self._redraw_packets(pl)
        self._say(msg)

    # ---------------------------------------------------------------- marks and export
    def action_mark_packet(self) -> None:
        pl = self._packet_list_ready()
        n = pl.current_packet if pl is not None else None
        if pl is None or n is None:
            return
        if n in pl.marks:
            pl.marks.discard(n)
        else:
            pl.marks.add(n)
        pl.invalidate()
        self._say(f"packet {n} {'marked' if n in pl.marks else 'unmarked'} ({len(pl.marks)} marked; E writes them)")

    def action_export_packets(self, what: str) -> None:
        from wirefall.analyzer.pcapng_write import write_pcapng

        pl = self._packet_list_ready()
        if pl is None:
            return
        nums = sorted(pl.marks) if what == "marked" else list(pl.displayed)
        if not nums:
            self.notify("no packet is marked (m marks the selected one)" if what == "marked" else "no packet is shown",
                        severity="warning")
            return
        out = export_name(self.path, what)
        try:
            r = write_pcapng(self.an, nums, out, keys=True, source=self.source)
        except (OSError, ValueError) as e:
            self.notify(printable(f"not written: {e}"), severity="error")
            return
        self.last_export = os.path.abspath(out)
        msg = f"wrote {r.packets} {what} packets to {self.last_export}" + (f" with {r.secrets} key-log lines" if r.secrets else "")
        self.notify(printable(msg))
        self.query_one("#status", Static).update(Text(printable(msg)))
