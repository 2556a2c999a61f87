"""The TUI's Expert tab (Wireshark's Expert Information) and the packet list's colouring rules.

``ExpertPane`` lists ``analyzer.expert.compute``'s items — one line each, coloured by
severity, drawn only when on screen — under a line of counts per severity; the first time the
tab is shown it computes them in a worker thread.  Enter (or a double click) on an item posts
``ExpertPane.GoTo(packet)``, which the app answers by showing that packet in the Packets tab.

``packet_colours(an, source)`` gives the packet list its row colours (``analyzer.colouring``:
Wireshark's default rules, one packet at a time, as rows are drawn); ``legend_text()`` is the
key the ``L`` binding shows.
"""
from __future__ import annotations

from collections.abc import Callable

from rich.style import Style
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Static

from wirefall.analyzer.safetext import printable

from .widgets import LineList

SEVERITY_STYLES = {"Error": Style(color="#ff5f5f", bold=True), "Warning": Style(color="#ffd75f"),
                   "Note": Style(color="#87d7ff"), "Chat": Style(color="#a8a8a8"), "Comment": Style(color="#87d787")}


def item_line(it) -> str:
    pkt = "" if it.packet is None else str(it.packet)
    conn = "" if it.connection is None else f"c{it.connection}"
    return f"{pkt:>8} {conn:>5}  {it.severity.label:<7}  {it.group.label:<10}  {it.protocol:<8}  {it.summary}"


HEADER = f"{'packet':>8} {'conn':>5}  {'severity':<7}  {'group':<10}  {'protocol':<8}  summary"


class ExpertList(LineList):
    """The items, one line each (``items``: ``analyzer.expert.ExpertItem``)."""

    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self.items: list = []

    def set_items(self, items: list) -> None:
        self.items = items
        self.content_width = 240
        self.set_count(len(items))

    def line(self, i: int) -> tuple[str, Style]:
        it = self.items[i]
        return item_line(it), SEVERITY_STYLES.get(it.severity.label, Style())


class ExpertPane(Vertical):
    DEFAULT_CSS = """
    ExpertPane { height: 1fr; }
    ExpertPane #expert-counts { height: 1; background: $panel; padding: 0 1; }
    ExpertPane #expert-header { height: 1; background: #303030; color: #ffffff; text-style: bold; }
    ExpertPane #expert-list { height: 1fr; }
    """

    class GoTo(Message):
        """Show packet ``packet`` in the Packets tab."""

        def __init__(self, packet: int) -> None:
            super().__init__()
            self.packet = packet

    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self.started = False

    def compose(self) -> ComposeResult:
        yield Static("Expert information: shown once the capture is read", id="expert-counts")
        yield Static(HEADER, id="expert-header")
        yield ExpertList(id="expert-list")

    def on_show(self) -> None:
        self.refill()

    def refill(self, force: bool = False) -> None:
        """Compute the items (once per analysis) if the capture is read."""
        app = self.app
        an = getattr(app, "an", None)
        if an is None or not getattr(app, "loaded", False) or (self.started and not force):
            return
        self.started = True
        self.query_one("#expert-counts", Static).update("computing expert information…")
        self._compute(an)

    @work(thread=True, exclusive=True, group="expert")
    def _compute(self, an) -> None:
        from wirefall.analyzer import expert

        try:
            items = expert.compute(an)
        except Exception as e:  # noqa: BLE001 - a notice, never a crash
            self.app.call_from_thread(self.query_one("#expert-counts", Static).update,
                                      Text(printable(f"expert information not computed: {e.__class__.__name__}: {e}"), style="red"))
            return
        self.app.call_from_thread(self._show, items)

    def _show(self, items: list) -> None:
        from wirefall.analyzer import expert

        t = Text()
        for sev, n in expert.counts(items).items():
            t.append(f"{expert.SECTION[sev]} {n}", style=SEVERITY_STYLES.get(sev.label, ""))
            t.append("  ")
        t.append("· enter: go to the packet", style="#808080")
        self.query_one("#expert-counts", Static).update(t)
        lst = self.query_one(ExpertList)
        lst.set_items(items)
        lst.focus()

    def on_line_list_chosen(self, ev: LineList.Chosen) -> None:
        lst = self.query_one(ExpertList)
        if ev.widget is lst and 0 <= ev.index < len(lst.items):
            ev.stop()
            pkt = lst.items[ev.index].packet
            if pkt is None:
                self.app.notify("this item is about the capture or a connection, not one packet", severity="information")
            else:
                self.post_message(self.GoTo(pkt))


def packet_colours(an, source) -> Callable[[int], tuple[str, str, str] | None] | None:
    """Packet number -> (rule, foreground, background) by Wireshark's default colouring rules,
    or None when they cannot be evaluated on this analysis."""
    from wirefall.analyzer.colouring import colourer

    try:
        return colourer(an, source).colour
    except Exception:  # noqa: BLE001 - uncoloured rows rather than no packet list
        return None


def legend_text() -> Text:
    """Each colouring rule wirefall evaluates, in its own colours, with Wireshark's filter."""
    from wirefall.analyzer.colouring import RULES

    t = Text()
    t.append("Packet colours: Wireshark's default colouring rules, the first that matches wins\n\n", style="bold")
    for r in RULES:
        if not r.evaluated:
            continue
        t.append(f" {r.name:<24}", style=Style(color=r.fg, bgcolor=r.bg))
        t.append(f"  {r.wireshark}\n")
        if r.note:
            t.append(f" {'':<24}  wirefall: {r.note}\n", style="#808080")
    t.append("\nNot evaluated (wirefall decodes none of their protocols): ", style="#808080")
    t.append(", ".join(r.name for r in RULES if not r.evaluated), style="#808080")
    return t
